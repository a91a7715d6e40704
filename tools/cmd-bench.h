/*
 * cmd-bench.h - the parts of gpumem bench in other files, and how they
 * report (cmd-bench.c prints every row, as a table, JSON or CSV).
 */
#ifndef GPUMEM_TOOLS_CMD_BENCH_H
#define GPUMEM_TOOLS_CMD_BENCH_H

#include <gpumem.h>

typedef struct bench_io bench_io;
struct bench_io {
    /* A progress line, on a terminal. */
    void (*progress)(bench_io *io, const char *what);
    /* One allocation row: seconds per pair per thread, and the pairs per
     * second of all threads together. */
    void (*alloc_result)(bench_io *io, const char *name, const char *path, int threads, double seconds,
                         double pairs_per_s);
};

/* The allocation rows (cmd-bench-alloc.c).  0 on success. */
int bench_alloc(bench_io *io, gpumem_context *ctx, int quick);

#endif /* GPUMEM_TOOLS_CMD_BENCH_H */
