/*
 * cmd-bench.c - gpumem bench: transfer bandwidth of each copy path of the
 * library beside the plain driver call that is its baseline.
 *
 *   gpumem bench [--quick] [--rows | --alloc | --peer] [--json | --csv] [--reps N]
 *
 * Cases (each a median of N timed runs after one warm-up; every run is
 * complete when timed: synchronous copies, and a context synchronization
 * for the baseline):
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

#include "cmd-bench.h"
#include "json-string.h"

int cmd_bench(int argc, char **argv);

/* ---- the driver, for the baselines ------------------------------------------------------------- */

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

static struct {
    int ok;
    int (*ctx_set_current)(void *);
    int (*memcpy)(unsigned long long, unsigned long long, size_t);
    int (*memcpy2d)(const drv_memcpy2d *);
    int (*ctx_synchronize)(void);
} drv;

/* Loads the driver when the library runs on it; the baseline then runs in
 * the device's primary context, the one the library uses. */
static void driver_open(int device)
{
    void *h = bench_driver();
    if (h == NULL)
        return;
    *(void **)&drv.ctx_set_current = dlsym(h, "cuCtxSetCurrent");
    *(void **)&drv.memcpy = dlsym(h, "cuMemcpy");
    *(void **)&drv.memcpy2d = dlsym(h, "cuMemcpy2D_v2");
    *(void **)&drv.ctx_synchronize = dlsym(h, "cuCtxSynchronize");
    void *ctx = NULL;
    drv.ok = drv.ctx_set_current && drv.memcpy && drv.memcpy2d && drv.ctx_synchronize &&
             bench_driver_primary(h, device, &ctx) == 0 && drv.ctx_set_current(ctx) == 0;
}

/* ---- timing and output --------------------------------------------------------------------------- */

typedef struct bench {
    bench_io io; /* first: the callbacks get the bench */
    gpumem_context *ctx;
    int reps, json, csv, progress, quick, nresults;
    FILE *out;
    double ceiling[2];  /* the host's (bench_host): h2d, d2h GB/s; 0 unknown */
    char *notes;        /* --json: the notes, each ended by a NUL, printed after the results */
    size_t notes_len;
} bench;

/* The median seconds of b->reps runs after a warm-up; < 0 on failure. */
static double median(bench *b, bench_run_fn fn, void *arg)
{
    return bench_median(b->reps, fn, arg);
}

/* Writes s as one CSV field (RFC 4180): quoted, its quotes doubled, when it
 * holds a comma, a quote or a line break; as it is otherwise. */
static void csv_field(const char *s)
{
    if (strpbrk(s, ",\"\r\n") == NULL) {
        fputs(s, stdout);
        return;
    }
    putchar('"');
    for (; *s; s++) {
        if (*s == '"')
            putchar('"');
        putchar(*s);
    }
    putchar('"');
}

/* The first three fields of a CSV line: group, case, path. */
static void csv_names(const char *group, const char *name, const char *path)
{
    csv_field(group);
    putchar(',');
    csv_field(name);
    putchar(',');
    csv_field(path);
}

/* A row; threads > 0 for rows of several threads, the percentages >= 0
 * for pageable rows judged against pinned and the host's ceiling. */
static void row(bench *b, const char *group, const char *name, const char *path, uint64_t bytes, double s,
                int threads, double pct_pinned, double pct_host, double pct_contig)
{
    double gbs = bench_gbs(bytes, s);
    if (b->progress)
        fprintf(stderr, "\r\033[K");
    if (b->json) {
        printf("%s\n    {\"group\": ", b->nresults ? "," : "");
        json_string(group);
        printf(", \"case\": ");
        json_string(name);
        printf(", \"path\": ");
        json_string(path);
        printf(", \"bytes\": %llu, \"seconds\": %.9f, \"gb_per_s\": %.3f", (unsigned long long)bytes, s, gbs);
        if (threads > 0)
            printf(", \"threads\": %d", threads);
        if (pct_pinned >= 0)
            printf(", \"pct_of_pinned\": %.1f", pct_pinned);
        if (pct_host >= 0)
            printf(", \"pct_of_host\": %.1f", pct_host);
        if (pct_contig >= 0)
            printf(", \"pct_of_contiguous\": %.1f", pct_contig);
        printf("}");
    } else if (b->csv) {
        csv_names(group, name, path);
        printf(",%llu,%.9f,%.3f\n", (unsigned long long)bytes, s, gbs);
    } else {
        printf("%-9s %-34s %-16s %12llu %10.1f us %9.2f GB/s", group, name, path, (unsigned long long)bytes,
               s * 1e6, gbs);
        if (pct_pinned >= 0)
            printf("  %5.1f%% of pinned", pct_pinned);
        if (pct_host >= 0)
            printf("  %5.1f%% of host", pct_host);
        if (pct_contig >= 0)
            printf("  %5.1f%% of contiguous", pct_contig);
        printf("\n");
    }
    b->nresults++;
    fflush(stdout);
}

static void result(bench *b, const char *group, const char *name, const char *path, uint64_t bytes, double s)
{
    row(b, group, name, path, bytes, s, 0, -1, -1, -1);
}

/* A comment: "# text" in the table, on stderr with --csv, in "notes" with --json. */
static void note(bench *b, const char *text)
{
    if (b->progress)
        fprintf(stderr, "\r\033[K");
    if (b->json) {
        size_t n = strlen(text) + 1;
        char *p = realloc(b->notes, b->notes_len + n);
        if (p == NULL)
            return;
        memcpy(p + b->notes_len, text, n);
        b->notes = p;
        b->notes_len += n;
    } else {
        fprintf(b->csv ? stderr : stdout, "# %s\n", text);
        fflush(b->csv ? stderr : stdout);
    }
}

/* The percentage a pageable figure is of a reference (< 0: none). */
static double pct(uint64_t bytes, double s, double ref_gbs)
{
    return s > 0 && ref_gbs > 0 ? 100.0 * (double)bytes / s / 1e9 / ref_gbs : -1;
}

static void progress(bench *b, const char *what)
{
    if (b->progress)
        fprintf(stderr, "\r\033[Kgpumem bench: %s ...", what);
}

static void io_progress(bench_io *io, const char *what)
{
    progress((bench *)io, what);
}

static void io_row(bench_io *io, const char *group, const char *name, const char *path, uint64_t bytes, double s,
                   int threads, double pct_pinned, double pct_host)
{
    row((bench *)io, group, name, path, bytes, s, threads, pct_pinned, pct_host, -1);
}

static void io_note(bench_io *io, const char *text)
{
    note((bench *)io, text);
}

/* An allocation row: seconds per pair (per thread) and the total rate; in
 * JSON and CSV, bytes is the block size and gb_per_s is 0. */
static void io_alloc_result(bench_io *io, const char *name, const char *path, int threads, double s, double rate)
{
    bench *b = (bench *)io;
    if (b->progress)
        fprintf(stderr, "\r\033[K");
    if (b->json) {
        printf("%s\n    {\"group\": \"alloc\", \"case\": ", b->nresults ? "," : "");
        json_string(name);
        printf(", \"path\": ");
        json_string(path);
        printf(", \"bytes\": 4096, \"seconds\": %.12f, \"gb_per_s\": 0, \"threads\": %d, \"pairs_per_s\": %.1f}", s,
               threads, rate);
    } else if (b->csv) {
        csv_names("alloc", name, path);
        printf(",4096,%.12f,0\n", s);
    }
    else
        printf("%-9s %-50s %-8s %10.1f ns/pair %9.2f M pairs/s\n", "alloc", name, path, s * 1e9, rate / 1e6);
    b->nresults++;
    fflush(stdout);
}

/* ---- cases ---------------------------------------------------------------------------------------------- */

typedef struct copy_case {
    gpumem_array *dst, *src;
} copy_case;

typedef struct drv_case {
    unsigned long long dst, src;
    size_t bytes;
    drv_memcpy2d m;
    int two_d;
} drv_case;

static int run_drv(void *arg)
{
    drv_case *c = arg;
    int rc = c->two_d ? drv.memcpy2d(&c->m) : drv.memcpy(c->dst, c->src, c->bytes);
    return rc != 0 || drv.ctx_synchronize() != 0;
}

static uint64_t addr_of(gpumem_array *a, int device)
{
    uint64_t p = 0;
    void *h = NULL;
    if (device)
        gpumem_array_device_pointer(a, &p);
    else if (gpumem_array_host_pointer(a, &h) == GPUMEM_OK)
        p = (uint64_t)(uintptr_t)h;
    return p;
}

/* One gpumem copy (and its path) and, when given, its driver baseline.
 * A pageable copy (pinned_gbs >= 0: the pinned figure of the same case, 0
 * when unknown) is judged against it and against the host's ceiling of its
 * direction (dir 1 up, -1 down); *gbs (may be NULL) gets the figure. */
static int measure_vs(bench *b, const char *group, const char *name, gpumem_array *dst, gpumem_array *src,
                      uint64_t bytes, drv_case *base, double pinned_gbs, int dir, double *gbs, double contig_gbs)
{
    double s = 0;
    const char *path = NULL;
    int rc = bench_copy(&b->io, b->reps, name, dst, src, &s, &path);
    if (rc != 0)
        return rc > 0;
    if (gbs != NULL)
        *gbs = bench_gbs(bytes, s);
    row(b, group, name, path, bytes, s, 0, pinned_gbs >= 0 ? pct(bytes, s, pinned_gbs) : -1,
        pinned_gbs >= 0 && dir != 0 ? pct(bytes, s, b->ceiling[dir > 0 ? 0 : 1]) : -1, pct(bytes, s, contig_gbs));
    if (base != NULL && drv.ok) {
        double d = median(b, run_drv, base);
        if (d >= 0)
            result(b, group, name, "driver", bytes, d);
    }
    return 0;
}

static int measure(bench *b, const char *group, const char *name, gpumem_array *dst, gpumem_array *src,
                   uint64_t bytes, drv_case *base)
{
    return measure_vs(b, group, name, dst, src, bytes, base, -1, 0, NULL, 0);
}

/* n bytes of host memory, pinned or pageable (every page touched): a
 * status, an out-of-memory one for a size that does not fit. */
static gpumem_status host_alloc(bench *b, int pinned, int64_t n, void **mem, gpumem_array **a)
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

static gpumem_array *host_bytes(bench *b, int pinned, int64_t n, void **mem)
{
    gpumem_array *a = NULL;
    host_alloc(b, pinned, n, mem, &a);
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
                                    : host_alloc(b, host, *n, mem, a);
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
            drv_case up = {addr_of(dv, 1), addr_of(hv, 0), (size_t)n, {0}, 0};
            drv_case down = {addr_of(hv, 0), addr_of(dv, 1), (size_t)n, {0}, 0};
            snprintf(name, sizeof name, "h2d %s", pinned ? "pinned" : "pageable");
            int rc = measure_vs(b, "transfer", name, dv, hv, (uint64_t)n, &up, pinned ? -1 : ref[0][i], 1,
                                pinned ? &ref[0][i] : NULL, 0);
            snprintf(name, sizeof name, "d2h %s", pinned ? "pinned" : "pageable");
            rc |= measure_vs(b, "transfer", name, hv, dv, (uint64_t)n, &down, pinned ? -1 : ref[1][i], -1,
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

/* A 2-D driver baseline: rows of `width` bytes at the two pitches. */
static drv_case base2d(uint64_t dst, int dst_dev, size_t dpitch, uint64_t src, int src_dev, size_t spitch,
                       size_t width, size_t height)
{
    drv_case c = {0};
    c.two_d = 1;
    c.m.srcMemoryType = src_dev ? 2 : 1; /* CU_MEMORYTYPE_DEVICE, _HOST */
    c.m.dstMemoryType = dst_dev ? 2 : 1;
    if (src_dev)
        c.m.srcDevice = src;
    else
        c.m.srcHost = (const void *)(uintptr_t)src;
    if (dst_dev)
        c.m.dstDevice = dst;
    else
        c.m.dstHost = (void *)(uintptr_t)dst;
    c.m.srcPitch = spitch;
    c.m.dstPitch = dpitch;
    c.m.WidthInBytes = width;
    c.m.Height = height;
    return c;
}

/* The strided cases, each against the contiguous copy of the same memory
 * kind, direction and useful bytes (pct of contiguous), pinned first so
 * that a pageable case is judged against its pinned twin too. */
enum { S_D2H, S_D2H_D2, S_H2D, S_H2D_D2, S_D2H_1D, S_D2H_SLAB, S_H2D_T, S_H2D_HH, S_D2H_HH, S_H2D_H, S_D2H_H,
       S_CASES };

static int bench_strided(bench *b)
{
    const gpumem_dtype *f32 = gpumem_dtype_builtin(GPUMEM_FLOAT32);
    int64_t rows = b->quick ? 64 : 2048, cols = b->quick ? 1024 : 8192; /* useful: rows x cols float32 */
    uint64_t useful = (uint64_t)(rows * cols * 4);
    double ref[S_CASES] = {0};
    int rc = 0;
    for (int pinned = 1; pinned >= 0 && !rc; pinned--) {
        const char *kind = pinned ? "pinned" : "pageable";
        char name[96];
        void *mem = NULL, *wmem = NULL;
        gpumem_array *hb = NULL, *hw = NULL, *h = NULL, *d = NULL, *dc = NULL;
        gpumem_status st = host_alloc(b, pinned, (int64_t)useful, &mem, &hb);
        if (st == GPUMEM_OK)
            st = host_alloc(b, pinned, 2 * (int64_t)useful, &wmem, &hw);
        if (st != GPUMEM_OK) {
            gpumem_array_release(hb);
            free(mem);
            if (!bench_oom(st)) {
                bench_error("", "%s", gpumem_last_error());
                return 1;
            }
            snprintf(name, sizeof name, "skipped: the strided %s rows: %s", kind, gpumem_last_error());
            note(b, name);
            continue;
        }
        gpumem_array_view(hb, f32, &h);
        gpumem_array *h2 = NULL, *hwf = NULL, *hw2 = NULL, *hwv = NULL;
        gpumem_array_reshape(h, 2, (int64_t[]){rows, cols}, 'C', GPUMEM_NO_COPY, NULL, &h2);
        gpumem_array_view(hw, f32, &hwf);
        gpumem_array_reshape(hwf, 2, (int64_t[]){rows, 2 * cols}, 'C', GPUMEM_NO_COPY, NULL, &hw2);
        gpumem_device_array(b->ctx, 2, (int64_t[]){rows, 2 * cols}, NULL, f32, 'C', NULL, &d);
        gpumem_device_array(b->ctx, 2, (int64_t[]){rows, cols}, NULL, f32, 'C', NULL, &dc);
        gpumem_slice sl[2] = {GPUMEM_SLICE_ALL, {0, GPUMEM_SLICE_DEFAULT, 2}};
        gpumem_array *dv = NULL;
        gpumem_array_slice(d, sl, 2, &dv);
        gpumem_array_slice(hw2, sl, 2, &hwv);
        if (h2 == NULL || dv == NULL || dc == NULL || hwv == NULL) {
            bench_error("", "%s", gpumem_last_error());
            rc = 1;
        }
        double got[S_CASES] = {0};
#define CASE(c, dst, src, bytes, base, dir)                                                                      \
    (rc = rc || measure_vs(b, "strided", name, dst, src, bytes, base, pinned ? -1 : ref[c], dir, &got[c],      \
                           (c) == S_D2H || (c) == S_H2D ? 0 : got[(dir) > 0 ? S_H2D : S_D2H]))
        drv_case up = {addr_of(dc, 1), addr_of(h2, 0), (size_t)useful, {0}, 0};
        drv_case down = {addr_of(h2, 0), addr_of(dc, 1), (size_t)useful, {0}, 0};
        snprintf(name, sizeof name, "d2h contiguous %s", kind);
        CASE(S_D2H, h2, dc, useful, &down, -1);
        snprintf(name, sizeof name, "h2d contiguous %s", kind);
        CASE(S_H2D, dc, h2, useful, &up, 1);
        snprintf(name, sizeof name, "d2h d[:, ::2] %s", kind);
        drv_case s2 = base2d(addr_of(h2, 0), 0, 4, addr_of(dv, 1), 1, 8, 4, (size_t)(rows * cols));
        CASE(S_D2H_D2, h2, dv, useful, &s2, -1);
        snprintf(name, sizeof name, "h2d d[:, ::2] %s", kind);
        drv_case s3 = base2d(addr_of(dv, 1), 1, 8, addr_of(h2, 0), 0, 4, 4, (size_t)(rows * cols));
        CASE(S_H2D_D2, dv, h2, useful, &s3, 1);
        /* the host side strided: h[:, ::2], into a contiguous device array and into d[:, ::2] */
        snprintf(name, sizeof name, "h2d h[:, ::2] %s", kind);
        drv_case s4 = base2d(addr_of(dc, 1), 1, 4, addr_of(hwv, 0), 0, 8, 4, (size_t)(rows * cols));
        CASE(S_H2D_H, dc, hwv, useful, &s4, 1);
        snprintf(name, sizeof name, "d2h h[:, ::2] %s", kind);
        drv_case s5 = base2d(addr_of(hwv, 0), 0, 8, addr_of(dc, 1), 1, 4, 4, (size_t)(rows * cols));
        CASE(S_D2H_H, hwv, dc, useful, &s5, -1);
        snprintf(name, sizeof name, "h2d h[:, ::2] -> d[:, ::2] %s", kind);
        drv_case s6 = base2d(addr_of(dv, 1), 1, 8, addr_of(hwv, 0), 0, 8, 4, (size_t)(rows * cols));
        CASE(S_H2D_HH, dv, hwv, useful, &s6, 1);
        snprintf(name, sizeof name, "d2h d[:, ::2] -> h[:, ::2] %s", kind);
        drv_case s7 = base2d(addr_of(hwv, 0), 0, 8, addr_of(dv, 1), 1, 8, 4, (size_t)(rows * cols));
        CASE(S_D2H_HH, hwv, dv, useful, &s7, -1);
        /* [::2] of a 1-D array */
        gpumem_array *d1 = NULL, *d1v = NULL, *h1 = NULL;
        gpumem_array_reshape(d, 1, (int64_t[]){rows * 2 * cols}, 'C', GPUMEM_NO_COPY, NULL, &d1);
        gpumem_array_slice(d1, (gpumem_slice[]){{0, GPUMEM_SLICE_DEFAULT, 2}}, 1, &d1v);
        gpumem_array_reshape(h, 1, (int64_t[]){rows * cols}, 'C', GPUMEM_NO_COPY, NULL, &h1);
        snprintf(name, sizeof name, "d2h d[::2] %s", kind);
        CASE(S_D2H_1D, h1, d1v, useful, &s2, -1);
        /* a 3-D slab: the inner 16 of every 32 x 32 x 32 block... */
        int64_t n0 = rows * cols / 1024, e = 32;
        gpumem_array *d3 = NULL, *d3v = NULL, *h3 = NULL;
        gpumem_device_array(b->ctx, 3, (int64_t[]){n0, e + 16, e + 16}, NULL, f32, 'C', NULL, &d3);
        gpumem_slice s3d[3] = {GPUMEM_SLICE_ALL, {8, 8 + e, 1}, {8, 8 + e, 1}};
        gpumem_array_slice(d3, s3d, 3, &d3v);
        gpumem_array_reshape(h, 3, (int64_t[]){n0, e, e}, 'C', GPUMEM_NO_COPY, NULL, &h3);
        snprintf(name, sizeof name, "d2h 3-D slab %s", kind);
        if (d3v != NULL && h3 != NULL)
            CASE(S_D2H_SLAB, h3, d3v, (uint64_t)(n0 * e * e * 4), NULL, -1);
        /* transposed: a C host array into an F device array */
        gpumem_array *df = NULL;
        gpumem_device_array(b->ctx, 2, (int64_t[]){rows, cols}, NULL, f32, 'F', NULL, &df);
        snprintf(name, sizeof name, "h2d transposed %s", kind);
        if (df != NULL)
            CASE(S_H2D_T, df, h2, useful, NULL, 1);
#undef CASE
        if (pinned)
            memcpy(ref, got, sizeof ref);
        gpumem_array *all[] = {hb, h, h2, hw, hwf, hw2, hwv, d, dc, dv, d1, d1v, h1, d3, d3v, h3, df};
        for (size_t i = 0; i < sizeof all / sizeof *all; i++)
            gpumem_array_release(all[i]);
        free(mem);
        free(wmem);
    }
    return rc;
}

/* 2-D copies of rows of 4 B .. 64 KiB at a pitch of twice the row. */
static int bench_rows(bench *b)
{
    const gpumem_dtype *u8 = gpumem_dtype_builtin(GPUMEM_UINT8);
    int64_t total = b->quick ? (1 << 20) : (64 << 20);
    void *mem = NULL;
    gpumem_array *h = host_bytes(b, 1, total, &mem), *d = NULL;
    int64_t dn = 2 * total;
    if (h == NULL || gpumem_device_array(b->ctx, 1, &dn, NULL, u8, 'C', NULL, &d) != GPUMEM_OK) {
        bench_error("", "%s", gpumem_last_error());
        gpumem_array_release(h);
        return 1;
    }
    int rc = 0;
    for (int64_t w = 4; w <= 65536 && !rc; w *= 2) {
        int64_t height = total / w;
        gpumem_array *hv = NULL, *dv0 = NULL, *dv = NULL;
        gpumem_array_reshape(h, 2, (int64_t[]){height, w}, 'C', GPUMEM_NO_COPY, NULL, &hv);
        gpumem_array_reshape(d, 2, (int64_t[]){height, 2 * w}, 'C', GPUMEM_NO_COPY, NULL, &dv0);
        gpumem_array_slice(dv0, (gpumem_slice[]){GPUMEM_SLICE_ALL, {0, w, 1}}, 2, &dv);
        char name[64];
        drv_case down = base2d(addr_of(hv, 0), 0, (size_t)w, addr_of(dv, 1), 1, (size_t)(2 * w), (size_t)w,
                               (size_t)height);
        drv_case up = base2d(addr_of(dv, 1), 1, (size_t)(2 * w), addr_of(hv, 0), 0, (size_t)w, (size_t)w,
                             (size_t)height);
        snprintf(name, sizeof name, "d2h 2-D rows of %lld B", (long long)w);
        rc = measure(b, "rows", name, hv, dv, (uint64_t)total, &down);
        snprintf(name, sizeof name, "h2d 2-D rows of %lld B", (long long)w);
        rc = rc || measure(b, "rows", name, dv, hv, (uint64_t)total, &up);
        gpumem_array_release(hv);
        gpumem_array_release(dv0);
        gpumem_array_release(dv);
    }
    gpumem_array_release(h);
    gpumem_array_release(d);
    return rc;
}

/* ---- overlap: a pageable copy on one stream beside a pinned copy on another ----------------------------- */

typedef struct overlap_case {
    gpumem_array *pdst, *psrc; /* the pageable copy, on s1 */
    gpumem_array *qdst, *qsrc; /* the pinned copy the other way, on s2 */
    gpumem_stream *s1, *s2;
    int which;                 /* 1: the pageable alone, 2: the pinned alone, 3: both */
} overlap_case;

static int run_overlap(void *arg)
{
    overlap_case *c = arg;
    int rc = 0;
    if (c->which & 2) /* queued first: it runs while the pageable copy is issued */
        rc |= gpumem_array_copy(c->qdst, c->qsrc, c->s2) != GPUMEM_OK;
    if (c->which & 1)
        rc |= gpumem_array_copy(c->pdst, c->psrc, c->s1) != GPUMEM_OK;
    if (c->which & 1)
        rc |= gpumem_stream_synchronize(c->s1) != GPUMEM_OK;
    if (c->which & 2)
        rc |= gpumem_stream_synchronize(c->s2) != GPUMEM_OK;
    return rc;
}

/* Pageable D2H (queued on a stream) beside a pinned H2D on another stream,
 * and pageable H2D beside a pinned D2H: the time of each alone and of both
 * at once.  Both at once near the longer one alone shows the overlap. */
static int bench_overlap(bench *b)
{
    int64_t n = b->quick ? (1 << 20) : (256 << 20);
    const gpumem_dtype *u8 = gpumem_dtype_builtin(GPUMEM_UINT8);
    void *mem = NULL;
    void *unused = NULL;
    gpumem_array *page = host_bytes(b, 0, n, &mem), *pin = host_bytes(b, 1, n, &unused), *d1 = NULL, *d2 = NULL;
    gpumem_stream *s1 = NULL, *s2 = NULL;
    gpumem_status st = page == NULL || pin == NULL ? GPUMEM_ERROR_HOST_OUT_OF_MEMORY : GPUMEM_OK;
    if (st == GPUMEM_OK)
        st = gpumem_device_array(b->ctx, 1, &n, NULL, u8, 'C', NULL, &d1);
    if (st == GPUMEM_OK)
        st = gpumem_device_array(b->ctx, 1, &n, NULL, u8, 'C', NULL, &d2);
    if (st == GPUMEM_OK)
        st = gpumem_stream_create(b->ctx, GPUMEM_STREAM_NON_BLOCKING, &s1);
    if (st == GPUMEM_OK)
        st = gpumem_stream_create(b->ctx, GPUMEM_STREAM_NON_BLOCKING, &s2);
    int rc = st != GPUMEM_OK && !bench_oom(st);
    if (rc) {
        bench_error("", "%s", gpumem_last_error());
    } else if (st != GPUMEM_OK) { /* too big for this device or the page-locked limit */
        bench_note(&b->io, "skipped: the overlap rows (%lld MiB): %s", (long long)(n >> 20), gpumem_last_error());
        rc = -1;
    }
    static const char *const names[2][3] = {
        {"d2h pageable on s1 (queued)", "h2d pinned on s2", "both at once"},
        {"h2d pageable on s1", "d2h pinned on s2", "both at once"}};
    for (int dir = 0; dir < 2 && !rc; dir++) {
        overlap_case c = {dir == 0 ? page : d1, dir == 0 ? d1 : page, dir == 0 ? d2 : pin, dir == 0 ? pin : d2,
                          s1, s2, 0};
        for (int which = 1; which <= 3 && !rc; which++) {
            c.which = which;
            progress(b, names[dir][which - 1]);
            double t = median(b, run_overlap, &c);
            if (t < 0) {
                bench_error("\n", "%s: %s", names[dir][which - 1], gpumem_last_error());
                rc = 1;
                break;
            }
            result(b, "overlap", names[dir][which - 1], which == 3 ? "together" : "alone",
                   (uint64_t)n * (which == 3 ? 2 : 1), t);
        }
    }
    gpumem_stream_destroy(s1);
    gpumem_stream_destroy(s2);
    gpumem_array_release(d1);
    gpumem_array_release(d2);
    gpumem_array_release(page);
    gpumem_array_release(pin);
    free(mem);
    return rc > 0;
}

/* ---- the targets, read off one run ---------------------------------------------------- */

typedef struct queued_case {
    gpumem_array *host, *dev;
    gpumem_stream *stream; /* NULL: synchronous */
} queued_case;

static int run_download(void *arg)
{
    queued_case *c = arg;
    return gpumem_array_copy(c->host, c->dev, c->stream) != GPUMEM_OK ||
           (c->stream != NULL && gpumem_stream_synchronize(c->stream) != GPUMEM_OK);
}

#define SMALL_LOOP 200 /* 4 KiB copies per timed run */

static int run_small(void *arg)
{
    copy_case *c = arg;
    for (int i = 0; i < SMALL_LOOP; i++)
        if (gpumem_array_copy(c->dst, c->src, NULL) != GPUMEM_OK)
            return 1;
    return 0;
}

static int run_small_drv(void *arg)
{
    drv_case *c = arg;
    for (int i = 0; i < SMALL_LOOP; i++)
        if (drv.memcpy(c->dst, c->src, c->bytes) != 0 || drv.ctx_synchronize() != 0)
            return 1;
    return 0;
}

/* A pageable download queued on a stream against a synchronous one (256
 * MiB, --quick 1 MiB), and the cost of a 4 KiB pinned copy above the
 * driver's call: rows of group "targets" and notes with the ratios. */
static int bench_targets(bench *b)
{
    int64_t n = b->quick ? (1 << 20) : (256 << 20), small = 4096;
    const gpumem_dtype *u8 = gpumem_dtype_builtin(GPUMEM_UINT8);
    void *mem = NULL;
    gpumem_array *h = NULL, *d = NULL;
    gpumem_stream *s = NULL;
    gpumem_status st = host_alloc(b, 0, n, &mem, &h);
    if (st == GPUMEM_OK)
        st = gpumem_device_array(b->ctx, 1, &n, NULL, u8, 'C', NULL, &d);
    if (st == GPUMEM_OK)
        st = gpumem_stream_create(b->ctx, GPUMEM_STREAM_NON_BLOCKING, &s);
    int rc = 0;
    if (st != GPUMEM_OK) {
        if (!bench_oom(st)) {
            bench_error("", "%s", gpumem_last_error());
            rc = 1;
        } else {
            bench_note(&b->io, "skipped: the queued download target: %s", gpumem_last_error());
        }
    } else {
        queued_case sync = {h, d, NULL}, queued = {h, d, s};
        char name[96];
        snprintf(name, sizeof name, "d2h pageable %lld MiB, synchronous", (long long)(n >> 20));
        progress(b, name);
        double ts = median(b, run_download, &sync);
        if (ts >= 0)
            result(b, "targets", name, "synchronous", (uint64_t)n, ts);
        snprintf(name, sizeof name, "d2h pageable %lld MiB, queued on a stream", (long long)(n >> 20));
        progress(b, name);
        double tq = ts < 0 ? -1 : median(b, run_download, &queued);
        if (tq >= 0)
            result(b, "targets", name, "queued", (uint64_t)n, tq);
        if (ts <= 0 || tq < 0) {
            bench_error("\n", "%s: %s", name, gpumem_last_error());
            rc = 1;
        } else {
            bench_note(&b->io, "target: a queued pageable download takes %.2fx a synchronous one (at most 1.15x)",
                       tq / ts);
        }
    }
    gpumem_stream_destroy(s);
    gpumem_array_release(h);
    gpumem_array_release(d);
    free(mem);
    /* 4 KiB pinned, each way: the library's call against the driver's */
    void *unused = NULL;
    gpumem_array *p = NULL, *ds = NULL;
    st = rc ? GPUMEM_ERROR_INTERNAL : host_alloc(b, 1, small, &unused, &p);
    if (st == GPUMEM_OK)
        st = gpumem_device_array(b->ctx, 1, &small, NULL, u8, 'C', NULL, &ds);
    for (int dir = 0; dir < 2 && st == GPUMEM_OK && !rc; dir++) {
        copy_case c = {dir ? p : ds, dir ? ds : p};
        drv_case dc = {addr_of(c.dst, !dir), addr_of(c.src, dir), (size_t)small, {0}, 0};
        const char *name = dir ? "d2h pinned 4 KiB, per copy" : "h2d pinned 4 KiB, per copy";
        progress(b, name);
        double t = median(b, run_small, &c) / SMALL_LOOP;
        if (t < 0) {
            bench_error("\n", "%s: %s", name, gpumem_last_error());
            rc = 1;
            break;
        }
        result(b, "targets", name, "gpumem", (uint64_t)small, t);
        if (drv.ok) {
            double td = median(b, run_small_drv, &dc) / SMALL_LOOP;
            if (td >= 0) {
                result(b, "targets", name, "driver", (uint64_t)small, td);
                bench_note(&b->io, "target: %s: %.2f us above the driver's call (at most 1 us)", name,
                           (t - td) * 1e6);
            }
        }
    }
    if (st != GPUMEM_OK && !rc && bench_oom(st))
        note(b, "skipped: the 4 KiB pinned target: out of memory");
    gpumem_array_release(p);
    gpumem_array_release(ds);
    return rc;
}

static void machine(bench *b)
{
    const char *backend = "?";
    char name[256] = "?";
    int dev = 0, major = 0, minor = 0;
    gpumem_backend(&backend);
    gpumem_context_get_device(b->ctx, &dev);
    gpumem_device_name(dev, name, sizeof name);
    gpumem_device_compute_capability(dev, &major, &minor);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    gpumem_staging_settings st = {.size = sizeof st};
    gpumem_staging_get(&st);
    char host[256] = "?";
    gethostname(host, sizeof host - 1);
    if (b->json) {
        /* the host and device names are the system's and the driver's: escaped */
        printf("{\n  \"machine\": {\"host\": ");
        json_string(host);
        printf(", \"backend\": ");
        json_string(backend);
        printf(", \"device\": %d, \"name\": ", dev);
        json_string(name);
        printf(", \"compute_capability\": [%d, %d], \"cpus\": %ld, \"library\": \"%s\", \"staging\": {\"threads\": %u, "
               "\"chunk_bytes\": %zu, \"depth\": %u, \"min_bytes\": %zu}, \"reps\": %d, \"baseline\": %s},\n"
               "  \"results\": [",
               major, minor, cpus, gpumem_version_string(), st.threads, st.chunk_bytes, st.depth, st.min_bytes, b->reps,
               drv.ok ? "\"libcuda\"" : "null");
    } else if (b->csv) {
        printf("group,case,path,bytes,seconds,gb_per_s\n");
    } else {
        printf("# %s: %s device %d (%s, sm_%d%d), %ld CPUs, libgpumem %s, median of %d%s\n", host, backend, dev,
               name, major, minor, cpus, gpumem_version_string(), b->reps,
               drv.ok ? "" : "; no driver baseline (not the cuda backend)");
        if (strcmp(backend, "sim") == 0)
            printf("# the simulator: these figures mean nothing\n");
    }
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
    bench b = {.io = {io_progress, io_alloc_result, io_row, io_note}, .reps = 0};
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
        b.reps = b.quick ? 3 : 9;
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
    machine(&b);
    int rc = peer    ? bench_peer(&b.io, b.ctx, b.quick, b.reps)
             : rows  ? bench_rows(&b)
             : alloc ? bench_alloc(&b.io, b.ctx, b.quick)
                     : bench_host(&b.io, b.ctx, b.quick, b.reps, &b.ceiling[0], &b.ceiling[1]) ||
                           bench_contiguous(&b) || bench_strided(&b) || bench_alloc(&b.io, b.ctx, b.quick) ||
                           bench_overlap(&b) ||
                           bench_concurrent(&b.io, b.ctx, b.quick, b.reps, b.ceiling[0], b.ceiling[1]) ||
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
