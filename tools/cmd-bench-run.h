/*
 * cmd-bench-run.h - what the files of gpumem bench's own rows share
 * (private to cmd-bench.c, cmd-bench-out.c, cmd-bench-strided.c and
 * cmd-bench-targets.c): the run's state, the driver of the baselines, and
 * the helpers that time a case and print its row.
 */
#ifndef GPUMEM_TOOLS_CMD_BENCH_RUN_H
#define GPUMEM_TOOLS_CMD_BENCH_RUN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <gpumem.h>

#include "cmd-bench.h"

/* ---- the driver, for the baselines (cmd-bench.c) ---- */

/* CUDA_MEMCPY2D as cuda.h lays it out (the tool uses only public headers of
 * the library, so it declares the few driver types it needs itself). */
typedef struct drv_memcpy2d {
    size_t srcXInBytes, srcY;
    int srcMemoryType;
    const void *srcHost;
    unsigned long long srcDevice;
    void *srcArray;
    size_t srcPitch;
    size_t dstXInBytes, dstY;
    int dstMemoryType;
    void *dstHost;
    unsigned long long dstDevice;
    void *dstArray;
    size_t dstPitch;
    size_t WidthInBytes, Height;
} drv_memcpy2d;

/* The driver's calls; ok: loaded, on the cuda backend. */
typedef struct bench_drv_api {
    int ok;
    int (*ctx_set_current)(void *);
    int (*memcpy)(unsigned long long, unsigned long long, size_t);
    int (*memcpy2d)(const drv_memcpy2d *);
    int (*ctx_synchronize)(void);
} bench_drv_api;

extern bench_drv_api bench_drv;

/* A baseline: cuMemcpy of bytes, or cuMemcpy2D m (two_d). */
typedef struct drv_case {
    unsigned long long dst, src;
    size_t bytes;
    drv_memcpy2d m;
    int two_d;
} drv_case;

/* Runs a drv_case and synchronizes the context: 0 on success. */
int bench_run_drv(void *arg);

/* ---- the run ---- */

typedef struct bench {
    bench_io io; /* first: the callbacks get the bench */
    gpumem_context *ctx;
    int reps, json, csv, progress, quick, nresults;
    FILE *out;
    double ceiling[BENCH_CEILINGS]; /* the host's (bench_host), GB/s; 0 unknown */
    char *notes;        /* --json: the notes, each ended by a NUL, printed after the results */
    size_t notes_len;
} bench;

typedef struct copy_case {
    gpumem_array *dst, *src;
} copy_case;

/* ---- output (cmd-bench-out.c) ---- */

/* Sets b's io callbacks. */
void bench_io_init(bench *b);

/* The first lines: the machine (a table's comment, the CSV header, the
 * start of the JSON object). */
void bench_machine(bench *b);

/* A row; threads > 0 for rows of several threads, the percentages >= 0
 * for pageable rows judged against pinned, the host's ceiling and the
 * contiguous copy; the figures from t's median, with its p95 and maximum. */
void bench_row(bench *b, const char *group, const char *name, const char *path, uint64_t bytes,
               const bench_times *t, int threads, double pct_pinned, double pct_host, double pct_contig);

/* A row of no judgement. */
void bench_result(bench *b, const char *group, const char *name, const char *path, uint64_t bytes,
                  const bench_times *t);

/* A comment: "# text" in the table, on stderr with --csv, in "notes" with --json. */
void bench_comment(bench *b, const char *text);

/* The percentage a figure (bytes in s seconds) is of a reference in GB/s
 * (< 0: none). */
double bench_pct(uint64_t bytes, double s, double ref_gbs);

/* A progress line, on a terminal. */
void bench_progress(bench *b, const char *what);

/* ---- cases (cmd-bench.c) ---- */

/* Times fn b->reps times (bench_time): 0, or -1 on failure. */
int bench_med(bench *b, bench_run_fn fn, void *arg, bench_times *t);

/* The device (device) or host address of a's element 0. */
uint64_t bench_addr(gpumem_array *a, int device);

/* One gpumem copy (and its path) and, when given, its driver baseline.
 * A pageable copy (pinned_gbs >= 0: the pinned figure of the same case, 0
 * when unknown) is judged against it and against the host's ceiling
 * ceiling[which] (which < 0: none); *gbs (may be NULL) gets the figure. */
int bench_measure_vs(bench *b, const char *group, const char *name, gpumem_array *dst, gpumem_array *src,
                     uint64_t bytes, drv_case *base, double pinned_gbs, int which, double *gbs, double contig_gbs);

/* bench_measure_vs judged against nothing. */
int bench_measure(bench *b, const char *group, const char *name, gpumem_array *dst, gpumem_array *src,
                  uint64_t bytes, drv_case *base);

/* n bytes of host memory, pinned or pageable (every page touched; *mem
 * the pageable block to free): a status, an out-of-memory one for a size
 * that does not fit. */
gpumem_status bench_host_alloc(bench *b, int pinned, int64_t n, void **mem, gpumem_array **a);

/* bench_host_alloc's array, NULL on failure. */
gpumem_array *bench_host_bytes(bench *b, int pinned, int64_t n, void **mem);

/* ---- the row groups ---- */

int bench_strided(bench *b);  /* cmd-bench-strided.c */
int bench_rows(bench *b);     /* cmd-bench-strided.c */
int bench_overlap(bench *b);  /* cmd-bench-targets.c */
int bench_targets(bench *b);  /* cmd-bench-targets.c */

#endif /* GPUMEM_TOOLS_CMD_BENCH_RUN_H */
