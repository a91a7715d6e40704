/*
 * cmd-bench.c - gpumem bench: transfer bandwidth of each copy path of the
 * library beside the plain driver call that is its baseline.
 *
 *   gpumem bench [--quick] [--rows | --alloc | --peer] [--json | --csv] [--reps N]
 *
 * Cases (each the median of N timed runs after one warm-up, with their 95th
 * percentile and maximum, N 21 by default; every run is complete when
 * timed: synchronous copies, and a context synchronization for the
 * baseline):
 *   h2d/d2h pinned and pageable, 4 KiB to 1 GiB (--quick: to 1 MiB);
 *   strided and transposed copies of 64 MiB of useful bytes (--quick:
 *   256 KiB) against the contiguous copy of the same bytes and host kind:
 *   d[:, ::2] -> host, host -> d[:, ::2], d[::2] -> host (1-D), a 3-D slab
 *   d[:, 8:-8, 8:-8] -> host, and a C host array into an F device array;
 *   --rows: a 2-D copy of 64 MiB (--quick: 1 MiB) of rows of 4 B to 64 KiB
 *   at a pitch of twice the row, pinned, both ways: where it reaches the
 *   contiguous figure is GPUMEM_COPY_MIN_ROW_BYTES for this machine;
 *   overlap: a pageable copy on one stream (a download queued through a
 *   bounce block, an upload through the staging engine) beside a pinned
 *   copy the other way on a second stream, 256 MiB each (--quick: 1 MiB):
 *   each alone, then both at once.
 *   --peer: device 0 to device 1 and back, 256 MiB (--quick: 1 MiB) of
 *   float32, contiguous, [::2], [:, ::2] and transposed, with peer access
 *   (against cuMemcpyPeer and a plain peer-access kernel) and staged
 *   (against pinned D2H and H2D): cmd-bench-peer.c.
 * The baseline ("driver") is the CUDA driver called directly, through
 * libcuda.so.1: cuMemcpy for contiguous copies, cuMemcpy2D with the
 * element as the row for strided ones (what a planner minimizing calls
 * issues).  On the simulator there is no driver to call: the baseline
 * column is empty and the figures mean nothing (make check runs --quick as a
 * smoke test).  After "strided" come the allocation rows
 * (cmd-bench-alloc.c: pools, arrays on a pool, memoize, against cuMemAlloc
 * and cuMemAllocAsync, at 1, 2, 4 and 8 threads; --alloc: those alone).
 *
 * The host's ceilings come first (cmd-bench-host.c), the output of every
 * row is cmd-bench-out.c's, the strided and --rows cases are
 * cmd-bench-strided.c's, the overlap and the targets cmd-bench-targets.c's.
 *
 * Output: a table; --json one object {"machine": {...}, "results": [...],
 * "notes": [...]}, with "error" (the first failure's message) when one
 * failed, or {"error": ...} alone when there is no default device;
 * --csv one line per result (bench/bandwidth.gp plots it), RFC 4180: a field
 * with a comma, a quote or a line break is quoted.  A progress line goes to
 * stderr when it is a terminal.  --rows, --alloc and --peer exclude each
 * other, as do --json and --csv; --reps takes a decimal 1 to 64.  Exit
 * status: 0 (also for -h, --help), 1 a library failure, 2 a usage error.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gpumem.h>

#include "cmd-bench-run.h"
#include "json-string.h"

int cmd_bench(int argc, char **argv);

/* ---- the driver, for the baselines ------------------------------------------------------------- */

bench_drv_api bench_drv;

/* Loads the driver when the library runs on it; the baseline then runs in
 * the device's primary context, the one the library uses. */
static void driver_open(int device)
{
    void *h = bench_driver();
    if (h == NULL)
        return;
    *(void **)&bench_drv.ctx_set_current = dlsym(h, "cuCtxSetCurrent");
    *(void **)&bench_drv.memcpy = dlsym(h, "cuMemcpy");
    *(void **)&bench_drv.memcpy2d = dlsym(h, "cuMemcpy2D_v2");
    *(void **)&bench_drv.ctx_synchronize = dlsym(h, "cuCtxSynchronize");
    void *ctx = NULL;
    bench_drv.ok = bench_drv.ctx_set_current && bench_drv.memcpy && bench_drv.memcpy2d &&
                   bench_drv.ctx_synchronize && bench_driver_primary(h, device, &ctx) == 0 &&
                   bench_drv.ctx_set_current(ctx) == 0;
}

/* ---- timing a case ------------------------------------------------------------------------------------ */

int bench_med(bench *b, bench_run_fn fn, void *arg, bench_times *t)
{
    return bench_time(b->reps, fn, arg, t);
}

int bench_run_drv(void *arg)
{
    drv_case *c = arg;
    int rc = c->two_d ? bench_drv.memcpy2d(&c->m) : bench_drv.memcpy(c->dst, c->src, c->bytes);
    return rc != 0 || bench_drv.ctx_synchronize() != 0;
}

uint64_t bench_addr(gpumem_array *a, int device)
{
    uint64_t p = 0;
    void *h = NULL;
    if (device)
        gpumem_array_device_pointer(a, &p);
    else if (gpumem_array_host_pointer(a, &h) == GPUMEM_OK)
        p = (uint64_t)(uintptr_t)h;
    return p;
}

int bench_measure_vs(bench *b, const char *group, const char *name, gpumem_array *dst, gpumem_array *src,
                     uint64_t bytes, drv_case *base, double pinned_gbs, int which, double *gbs, double contig_gbs)
{
    bench_times t, td;
    const char *path = NULL;
    /* the driver's call of the case timed in turns with the library's (bench_time_vs) */
    bench_run_fn drv = base != NULL && bench_drv.ok ? bench_run_drv : NULL;
    int rc = bench_copy_vs(&b->io, b->reps, name, dst, src, &t, &path, drv, base, &td);
    if (rc != 0)
        return rc > 0;
    double s = t.median;
    if (gbs != NULL)
        *gbs = bench_gbs(bytes, s);
    bench_row(b, group, name, path, bytes, &t, 0, pinned_gbs >= 0 ? bench_pct(bytes, s, pinned_gbs) : -1,
              pinned_gbs >= 0 && which >= 0 ? bench_pct(bytes, s, b->ceiling[which]) : -1,
              bench_pct(bytes, s, contig_gbs));
    if (td.median >= 0)
        bench_result(b, group, name, "driver", bytes, &td);
    return 0;
}

int bench_measure(bench *b, const char *group, const char *name, gpumem_array *dst, gpumem_array *src,
                  uint64_t bytes, drv_case *base)
{
    return bench_measure_vs(b, group, name, dst, src, bytes, base, -1, -1, NULL, 0);
}

/* n bytes of host memory, pinned or pageable (every page touched): a
 * status, an out-of-memory one for a size that does not fit. */
gpumem_status bench_host_alloc(bench *b, int pinned, int64_t n, void **mem, gpumem_array **a)
{
    const gpumem_dtype *u8 = gpumem_dtype_builtin(GPUMEM_UINT8);
    *mem = NULL;
    *a = NULL;
    if (pinned)
        return gpumem_pinned_array(b->ctx, 1, &n, NULL, u8, 'C', a);
    if ((*mem = malloc((size_t)n)) == NULL)
        return GPUMEM_ERROR_HOST_OUT_OF_MEMORY;
    memset(*mem, 1, (size_t)n); /* touch every page */
    gpumem_status st = gpumem_host_array_wrap(*mem, 1, &n, NULL, u8, a);
    if (st != GPUMEM_OK) {
        free(*mem);
        *mem = NULL;
    }
    return st;
}

gpumem_array *bench_host_bytes(bench *b, int pinned, int64_t n, void **mem)
{
    gpumem_array *a = NULL;
    bench_host_alloc(b, pinned, n, mem, &a);
    return a;
}

/* The largest size from *n down (halving, at least `least`) that
 * host_alloc (host) or a device array (host < 0) can have; a note for
 * what did not fit.  0, or 1 on a failure other than out of memory. */
static int fit(bench *b, const char *what, int host, int64_t least, int64_t *n, void **mem, gpumem_array **a)
{
    const gpumem_dtype *u8 = gpumem_dtype_builtin(GPUMEM_UINT8);
    int64_t want = *n;
    for (;;) {
        gpumem_status st = host < 0 ? gpumem_device_array(b->ctx, 1, n, NULL, u8, 'C', NULL, a)
                                    : bench_host_alloc(b, host, *n, mem, a);
        if (st == GPUMEM_OK)
            break;
        if (!bench_oom(st) || *n / 2 < least) {
            bench_error("", "%s: %s", what, gpumem_last_error());
            return 1;
        }
        *n /= 2;
    }
    if (*n < want)
        bench_note(&b->io, "skipped: %s above %lld MiB: out of %s memory", what, (long long)(*n >> 20),
                   host < 0 ? "device" : host ? "page-locked" : "host");
    return 0;
}

/* Pinned first, so that each pageable figure is judged against the
 * pinned one of its size and direction, and against the host's ceiling. */
static int bench_contiguous(bench *b)
{
    int64_t top = b->quick ? (1 << 20) : (INT64_C(1) << 30);
    gpumem_array *d = NULL;
    if (fit(b, "transfer rows", -1, 4096, &top, NULL, &d))
        return 1;
    double ref[2][32] = {{0}};
    for (int pinned = 1; pinned >= 0; pinned--) {
        void *mem = NULL;
        gpumem_array *h = NULL;
        int64_t htop = top;
        if (fit(b, pinned ? "transfer rows, pinned" : "transfer rows, pageable", pinned, 4096, &htop, &mem, &h)) {
            gpumem_array_release(d);
            return 1;
        }
        /* x4 steps, x2 from 1 to 64 MiB, where staging overtakes the driver */
        int i = 0;
        for (int64_t n = 4096; n <= htop && i < 32; n *= n >= (1 << 20) && n < (64 << 20) ? 2 : 4, i++) {
            gpumem_array *hv = NULL, *dv = NULL;
            gpumem_slice s = {0, n, 1};
            gpumem_array_slice(h, &s, 1, &hv);
            gpumem_array_slice(d, &s, 1, &dv);
            char name[64];
            drv_case up = {bench_addr(dv, 1), bench_addr(hv, 0), (size_t)n, {0}, 0};
            drv_case down = {bench_addr(hv, 0), bench_addr(dv, 1), (size_t)n, {0}, 0};
            snprintf(name, sizeof name, "h2d %s", pinned ? "pinned" : "pageable");
            int rc = bench_measure_vs(b, "transfer", name, dv, hv, (uint64_t)n, &up, pinned ? -1 : ref[0][i], BENCH_H2D,
                                      pinned ? &ref[0][i] : NULL, 0);
            snprintf(name, sizeof name, "d2h %s", pinned ? "pinned" : "pageable");
            rc |= bench_measure_vs(b, "transfer", name, hv, dv, (uint64_t)n, &down, pinned ? -1 : ref[1][i], BENCH_D2H,
                                   pinned ? &ref[1][i] : NULL, 0);
            gpumem_array_release(hv);
            gpumem_array_release(dv);
            if (rc) {
                gpumem_array_release(h);
                gpumem_array_release(d);
                free(mem);
                return 1;
            }
        }
        gpumem_array_release(h);
        free(mem);
    }
    gpumem_array_release(d);
    return 0;
}

#define BENCH_SYNOPSIS "Usage: gpumem bench [--quick] [--rows | --alloc | --peer] [--json | --csv] [--reps N]\n"

static void bench_usage(FILE *out)
{
    fputs(BENCH_SYNOPSIS
          "\n"
          "Transfer bandwidth of each copy path beside the plain driver call, strided\n"
          "copies, allocation rows and overlapped copies (see gpumem(1)).\n"
          "\n"
          "Options:\n"
          "  --quick      small sizes only (a smoke test)\n"
          "  --rows       2-D copy bandwidth against the row width, alone\n"
          "  --alloc      the allocation rows alone\n"
          "  --peer       device 0 to 1 and back, peer and staged (two devices)\n"
          "  --json       one JSON object\n"
          "  --csv        one CSV line per result (RFC 4180)\n"
          "  --reps N     timed repetitions per figure, 1 to 64 (default 9, 3 with --quick)\n"
          "  -h, --help   show this help\n"
          "\n"
          "--rows, --alloc and --peer exclude each other, as do --json and --csv.\n"
          "Exit status: 0 success, 1 a library failure, 2 a usage error.\n",
          out);
}

/* A usage error: the message and the synopsis on stderr; returns 2. */
static int bench_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bench_usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("gpumem bench: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\n" BENCH_SYNOPSIS, stderr);
    va_end(ap);
    return 2;
}

/* --reps's value: a decimal number in [1, BENCH_MAX_REPS]; 0 on success. */
static int parse_reps(const char *text, int *reps)
{
    if (text == NULL)
        return bench_usage_error("--reps needs a number");
    if (*text == '\0' || strspn(text, "0123456789") != strlen(text))
        return bench_usage_error("--reps '%s' is not a decimal number", text);
    errno = 0;
    unsigned long long v = strtoull(text, NULL, 10);
    if (errno != ERANGE && v == 0)
        return bench_usage_error("--reps %s: at least one repetition is needed", text);
    if (errno == ERANGE || v > BENCH_MAX_REPS)
        return bench_usage_error("--reps %s is too large (at most %d)", text, BENCH_MAX_REPS);
    *reps = (int)v;
    return 0;
}

int cmd_bench(int argc, char **argv)
{
    bench b = {.reps = 0};
    bench_io_init(&b);
    const char *only = NULL, *format = NULL; /* the --rows/--alloc/--peer and --json/--csv given */
    int rows = 0, alloc = 0, peer = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            bench_usage(stdout);
            return 0;
        } else if (strcmp(a, "--quick") == 0) {
            b.quick = 1;
        } else if (strcmp(a, "--rows") == 0 || strcmp(a, "--alloc") == 0 || strcmp(a, "--peer") == 0) {
            if (only != NULL && strcmp(only, a) != 0)
                return bench_usage_error("%s and %s exclude each other", only, a);
            only = a;
            rows |= strcmp(a, "--rows") == 0;
            alloc |= strcmp(a, "--alloc") == 0;
            peer |= strcmp(a, "--peer") == 0;
        } else if (strcmp(a, "--json") == 0 || strcmp(a, "--csv") == 0) {
            if (format != NULL && strcmp(format, a) != 0)
                return bench_usage_error("%s and %s exclude each other", format, a);
            format = a;
            b.json |= strcmp(a, "--json") == 0;
            b.csv |= strcmp(a, "--csv") == 0;
        } else if (strcmp(a, "--reps") == 0) {
            if (parse_reps(i + 1 < argc ? argv[++i] : NULL, &b.reps) != 0)
                return 2;
        } else {
            return bench_usage_error("unknown argument '%s'", a);
        }
    }
    if (b.reps == 0)
        b.reps = b.quick ? 3 : BENCH_REPS;
    b.progress = isatty(2) && !b.quick;
    if (gpumem_context_create_default(&b.ctx) != GPUMEM_OK) {
        bench_error("", "%s", gpumem_last_error());
        if (b.json) { /* one object whatever fails, as info and occupancy print */
            printf("{\"error\": ");
            json_string(bench_first_error());
            printf("}\n");
        }
        return 1;
    }
    int dev = 0;
    gpumem_context_get_device(b.ctx, &dev);
    driver_open(dev);
    bench_machine(&b);
    int rc = peer    ? bench_peer(&b.io, b.ctx, b.quick, b.reps)
             : rows  ? bench_rows(&b)
             : alloc ? bench_alloc(&b.io, b.ctx, b.quick)
                     : bench_host(&b.io, b.ctx, b.quick, b.reps, b.ceiling) ||
                           bench_contiguous(&b) || bench_strided(&b) || bench_alloc(&b.io, b.ctx, b.quick) ||
                           bench_overlap(&b) ||
                           bench_concurrent(&b.io, b.ctx, b.quick, b.reps, b.ceiling[BENCH_H2D], b.ceiling[BENCH_D2H]) ||
                           bench_targets(&b);
    if (b.progress)
        fprintf(stderr, "\r\033[K");
    if (b.json) {
        printf("\n  ],\n  \"notes\": [");
        for (size_t at = 0; at < b.notes_len; at += strlen(b.notes + at) + 1) {
            printf("%s\n    ", at ? "," : "");
            json_string(b.notes + at);
        }
        printf("\n  ]");
        if (rc && bench_first_error() != NULL) {
            printf(",\n  \"error\": ");
            json_string(bench_first_error());
        }
        printf("\n}\n");
    }
    free(b.notes);
    gpumem_context_release(b.ctx);
    return rc ? 1 : 0;
}
