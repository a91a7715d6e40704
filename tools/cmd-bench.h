/*
 * cmd-bench.h - the parts of gpumem bench in other files, and how they
 * report (cmd-bench.c prints every row, as a table, JSON or CSV).
 */
#ifndef GPUMEM_TOOLS_CMD_BENCH_H
#define GPUMEM_TOOLS_CMD_BENCH_H

#include <stdint.h>

#include <gpumem.h>

/* The times of the runs behind one figure, in seconds: the median, the
 * 95th percentile (nearest rank: the ceil(0.95 n)-th fastest) and the
 * slowest; p95 and max < 0 when unknown (a figure derived from others). */
typedef struct bench_times {
    double median, p95, max;
} bench_times;

typedef struct bench_io bench_io;
struct bench_io {
    /* A progress line, on a terminal. */
    void (*progress)(bench_io *io, const char *what);
    /* One allocation row: seconds per pair per thread, and the pairs per
     * second of all threads together. */
    void (*alloc_result)(bench_io *io, const char *name, const char *path, int threads, double seconds,
                         double pairs_per_s);
    /* A transfer row with the figures it is judged against (< 0: none):
     * threads copying at once (0: one copy), its bandwidth as a percentage
     * of the pinned figure of the same case and of the host's ceiling. */
    void (*row)(bench_io *io, const char *group, const char *name, const char *path, uint64_t bytes,
                const bench_times *t, int threads, double pct_pinned, double pct_host);
    /* A line of the table's comments (a skipped size, a target): "# text"
     * in the table and CSV, and in JSON a row {"group": "note", ...}. */
    void (*note)(bench_io *io, const char *text);
};

/* A failure (cmd-bench-util.c): "gpumem bench: " and the message on
 * stderr, after lead ("\n" ends a progress line, or ""); the first one is
 * kept for --json's "error" (bench_first_error(), NULL when none). */
void bench_error(const char *lead, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *bench_first_error(void);

/* The allocation rows (cmd-bench-alloc.c).  0 on success. */
int bench_alloc(bench_io *io, gpumem_context *ctx, int quick);

/* The host's ceilings, in GB/s (0 when not measured): of a pageable copy
 * each way, and of a strided host side h[:, ::2] each way in useful bytes. */
enum { BENCH_H2D, BENCH_D2H, BENCH_H2D_STRIDED, BENCH_D2H_STRIDED, BENCH_CEILINGS };

/* The host's ceiling (cmd-bench-host.c): group "host", rows at 1 to N
 * threads (N the CPUs) of pageable read, memcpy, memcpy into (h2d) and
 * out of (d2h) a 2 MiB pinned slot per thread, and the gather of every
 * other float32 (h[:, ::2]) into a slot and its scatter back (bytes: the
 * useful half), the slot rows while the copy engine moves a pinned buffer;
 * ceiling[] gets the best slot figure of each (BENCH_H2D ...).  0 on
 * success. */
int bench_host(bench_io *io, gpumem_context *ctx, int quick, int reps, double ceiling[BENCH_CEILINGS]);

/* Several threads copying at once (cmd-bench-host.c): group "concurrent",
 * 2, 4 and 8 threads, each with its own arrays (64 MiB, --quick 1 MiB),
 * pinned then pageable, both ways; pageable rows as a percentage of pinned
 * at the same thread count and of the host ceiling.  0 on success. */
int bench_concurrent(bench_io *io, gpumem_context *ctx, int quick, int reps, double h2d_ceiling,
                     double d2h_ceiling);

/* Copies between devices 0 and 1 (cmd-bench-peer.c): group "peer", with
 * peer access against cuMemcpyPeer and a plain peer-access kernel, and
 * staged against pinned D2H and H2D; targets as notes.  0 on success, 1
 * for fewer than two devices or a library failure. */
int bench_peer(bench_io *io, gpumem_context *ctx, int quick, int reps);

/* ---- shared by the parts (cmd-bench-util.c) ---- */

#define BENCH_MAX_REPS 64 /* bench_time keeps at most this many times */
#define BENCH_REPS 21     /* the default: a p95 that is not the maximum */

typedef int (*bench_run_fn)(void *arg); /* one complete run; 0 on success */

/* Seconds on the monotonic clock. */
double bench_now_s(void);

/* The median of the n times t (n >= 1), which it sorts. */
double bench_median_of(double *t, int n);

/* The median, p95 and maximum of the n times t (n >= 1), which it sorts. */
bench_times bench_times_of(double *t, int n);

/* Each time of t multiplied by f (a figure per item of a loop). */
void bench_times_scale(bench_times *t, double f);

/* A figure of one time s: its median; p95 and maximum unknown. */
bench_times bench_times_one(double s);

/* Times reps runs of fn (1 to BENCH_MAX_REPS) after one warm-up run, into
 * *out: 0, or -1 when a run fails. */
int bench_time(int reps, bench_run_fn fn, void *arg, bench_times *out);

/* bench_time of fn and, interleaved with it, of base (NULL: none), the
 * baseline of the same case: one warm-up run of each, then reps rounds
 * that each time one run of both, taking turns at going first, so that
 * drift (clocks, caches, the device's power state) and order favour
 * neither.  *t: fn's times, *tb: base's (its median < 0 when base is NULL
 * or one of its runs failed; fn's rounds go on without it).  0, or -1 when
 * a run of fn fails. */
int bench_time_vs(int reps, bench_run_fn fn, void *arg, bench_run_fn base, void *barg, bench_times *t,
                  bench_times *tb);

/* The median seconds of reps runs of fn (bench_time's); < 0 when a run
 * fails. */
double bench_median(int reps, bench_run_fn fn, void *arg);

/* GB/s of bytes moved in s seconds; 0 for s <= 0. */
double bench_gbs(uint64_t bytes, double s);

/* Whether st is an out-of-memory status (device or host): such a case is
 * skipped with a note, not failed. */
int bench_oom(gpumem_status st);

/* A note (see bench_io), formatted as printf does, at most 511 bytes. */
void bench_note(bench_io *io, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The library's copy of src into dst, as case `name` (a progress line):
 * the times of reps runs in *t and the path it took in *path, and
 * 0; -1 when it ran out of memory (noted "skipped: name: why"); 1 on
 * another failure (said on stderr). */
int bench_copy(bench_io *io, int reps, const char *name, gpumem_array *dst, gpumem_array *src, bench_times *t,
               const char **path);

/* bench_copy, its runs interleaved with those of base (bench_time_vs),
 * whose times go into *tb. */
int bench_copy_vs(bench_io *io, int reps, const char *name, gpumem_array *dst, gpumem_array *src, bench_times *t,
                  const char **path, bench_run_fn base, void *barg, bench_times *tb);

/* The CUDA driver of the baselines: libcuda.so.1's dlopen handle when the
 * library runs on the cuda backend, else NULL. */
void *bench_driver(void);

/* cuInit, then device ordinal `device`'s primary context through h
 * (bench_driver's), retained for the rest of the run (the library holds it
 * as well): 0 on success. */
int bench_driver_primary(void *h, int device, void **ctx);

#endif /* GPUMEM_TOOLS_CMD_BENCH_H */
