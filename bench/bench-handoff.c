/*
 * bench-handoff.c - the tail of staged copies (issue 29): many pageable
 * copies of one size, each timed alone, and their median, p95, p99 and
 * maximum.  A copy that stalls on the hand-off between the caller and the
 * staging workers (a thread parked for a scheduler tick) shows as a
 * maximum or p95 far above the median.
 *
 *     bench/bench-handoff [MiB [copies [threads ...]]]
 *     bench/bench-handoff strided [MiB [copies [threads ...]]]
 *
 * (default 4 MiB, 1000 copies, the default threads).  For each thread
 * count in turn (gpumem_staging_set, in one process: the pool grows to the
 * largest, as in an application that changed its setting), uploads (h2d)
 * then downloads (d2h), with the median, p95, p99 and maximum, the ratios
 * p95/median and max/median, the copies slower than twice the median, and
 * the process's context switches per copy: voluntary ones are threads
 * that slept (a wait or a lock of the hand-off, or the driver's), each a
 * wake-up that may cost a scheduler tick on a busy machine.
 * On the GPU machine:
 *
 *     GPUMEM_BACKEND=cuda bench/bench-handoff 4 1000 4 8 12 16
 *     GPUMEM_BACKEND=cuda bench/bench-handoff 6 1000 12 16
 *     GPUMEM_BACKEND=cuda bench/bench-handoff 64 200 12 16
 *     GPUMEM_BACKEND=cuda bench/bench-handoff strided 64 200 12 16
 *     GPUMEM_BACKEND=cuda bench/bench-handoff strided 6 1000 12
 *
 * With "strided" (default 64 MiB, 200 copies), the three strided pageable
 * downloads of gpumem bench's strided rows (tools/cmd-bench-strided.c), of
 * MiB useful bytes of float32 in rows of 32 KiB (MiB a multiple of 1/32),
 * each reported as above:
 * - "d2h h[:, ::2]": a dense device array (rows, 8192) into every other
 *   column of a pageable host array (rows, 16384): the staging threads
 *   scatter each chunk from their pinned slots (lib/cpu_pack.c);
 * - "d2h d[::2]": every other element of a 1-D device array into a
 *   pageable host array: packed by a kernel into device scratch, staged;
 * - "d2h 3-D slab": the inner 32 x 32 of every 48 x 48 plane of a 3-D
 *   device array into a pageable host array: packed by a kernel, staged.
 * Before each case its path (gpumem_debug_last_copy_path) is printed.
 *
 * On the simulator (GPUMEM_BACKEND=sim) the staging is host memcpy, so it
 * shows the hand-off itself (wakes, joins) with no link behind it.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <gpumem.h>

#define BENCH_NAME "bench-handoff"
#include "bench.h"

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Context switches of the process so far (all its threads): voluntary
 * (a thread slept: a wait, a lock) and involuntary (preempted). */
static void switches(long *vol, long *invol)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    *vol = u.ru_nvcsw;
    *invol = u.ru_nivcsw;
}

static void report(const char *way, double *t, int n, double mib, long vol, long invol)
{
    qsort(t, (size_t)n, sizeof *t, cmp);
    double med = t[n / 2];
    int slow = 0;
    for (int i = 0; i < n; i++)
        slow += t[i] > 2 * med;
    double p95 = t[(n * 95) / 100];
    printf("%s %g MiB x %d: median %.1f us, p95 %.1f us, p99 %.1f us, max %.1f us, %d over 2x median"
           " (p95/median %.2f, max/median %.2f, %.2f GB/s at the median)\n",
           way, mib, n, med, p95, t[(n * 99) / 100], t[n - 1], slow, p95 / med, t[n - 1] / med,
           mib * 1048576 / med / 1e3);
    printf("    per copy: %.1f sleeps (voluntary context switches of all threads), %.1f preemptions\n",
           (double)vol / n, (double)invol / n);
}

/* Sets the staging threads to th (0: the setting as it is) and prints the settings. */
static void set_threads(unsigned th)
{
    gpumem_staging_settings s = {.size = sizeof s};
    CHECK(gpumem_staging_get(&s));
    if (th > 0) {
        s.threads = th;
        CHECK(gpumem_staging_set(&s));
    }
    printf("staging threads %u, chunk %zu, depth %u\n", s.threads, s.chunk_bytes, s.depth);
}

/* n copies of src into dst, each timed alone (after 5 to warm the workers,
 * lanes and caches), reported as way. */
static void timed(const char *way, gpumem_array *dst, gpumem_array *src, double *t, int n, double mib)
{
    for (int i = 0; i < 5; i++)
        CHECK(gpumem_array_copy(dst, src, NULL));
    long v0, i0, v1, i1;
    switches(&v0, &i0);
    for (int i = 0; i < n; i++) {
        double t0 = now_us();
        CHECK(gpumem_array_copy(dst, src, NULL));
        t[i] = now_us() - t0;
    }
    switches(&v1, &i1);
    report(way, t, n, mib, v1 - v0, i1 - i0);
}

/* The contiguous pageable upload and download of mib MiB at each thread
 * count of th[0 .. nth) (none: the default). */
static void contiguous(gpumem_context *ctx, double mib, int n, int nth, char **th, double *t)
{
    int64_t bytes = (int64_t)(mib * (1 << 20));
    const gpumem_dtype *u8 = gpumem_dtype_builtin(GPUMEM_UINT8);
    gpumem_array *d = NULL, *h = NULL;
    CHECK(gpumem_device_array(ctx, 1, &bytes, NULL, u8, 'C', NULL, &d));
    char *mem = malloc((size_t)bytes);
    if (mem == NULL) {
        fprintf(stderr, "bench-handoff: out of host memory\n");
        exit(1);
    }
    memset(mem, 1, (size_t)bytes);
    CHECK(gpumem_host_array_wrap(mem, 1, &bytes, NULL, u8, &h));
    for (int a = 0; a < (nth > 0 ? nth : 1); a++) {
        set_threads(nth > 0 ? (unsigned)atoi(th[a]) : 0);
        timed("h2d", d, h, t, n, mib);
        timed("d2h", h, d, t, n, mib);
    }
    gpumem_array_release(h);
    gpumem_array_release(d);
    free(mem);
}

/* The three strided pageable downloads of gpumem bench (see the top), of
 * mib MiB of useful float32 bytes, at each thread count. */
static void strided(gpumem_context *ctx, double mib, int n, int nth, char **th, double *t)
{
    const int64_t cols = 8192, rowb = cols * 4, e = 32;
    int64_t useful = (int64_t)(mib * (1 << 20)), rows = useful / rowb, count = rows * cols, n0 = count / (e * e);
    const gpumem_dtype *f32 = gpumem_dtype_builtin(GPUMEM_FLOAT32);
    gpumem_array *dc = NULL, *d1 = NULL, *d1v = NULL, *d3 = NULL, *d3v = NULL, *h1 = NULL, *h3 = NULL,
                 *hwv = NULL;
    char *mem = malloc((size_t)useful), *wmem = malloc(2 * (size_t)useful);
    if (mem == NULL || wmem == NULL) {
        fprintf(stderr, "bench-handoff: out of host memory\n");
        exit(1);
    }
    memset(mem, 1, (size_t)useful); /* pageable memory the application has touched */
    memset(wmem, 1, 2 * (size_t)useful);
    /* the device sides: dense (rows, cols); 1-D of 2 count, every other; (n0, 48, 48), the inner 32 x 32 */
    CHECK(gpumem_device_array(ctx, 2, (int64_t[]){rows, cols}, NULL, f32, 'C', NULL, &dc));
    CHECK(gpumem_device_array(ctx, 1, (int64_t[]){2 * count}, NULL, f32, 'C', NULL, &d1));
    CHECK(gpumem_array_slice(d1, (gpumem_slice[]){{0, GPUMEM_SLICE_DEFAULT, 2}}, 1, &d1v));
    CHECK(gpumem_device_array(ctx, 3, (int64_t[]){n0, e + 16, e + 16}, NULL, f32, 'C', NULL, &d3));
    CHECK(gpumem_array_slice(d3, (gpumem_slice[]){GPUMEM_SLICE_ALL, {8, 8 + e, 1}, {8, 8 + e, 1}}, 3, &d3v));
    /* the host sides: dense 1-D and 3-D views of mem; every other column of (rows, 2 cols) in wmem */
    CHECK(gpumem_host_array_wrap(mem, 1, &count, NULL, f32, &h1));
    CHECK(gpumem_host_array_wrap(mem, 3, (int64_t[]){n0, e, e}, NULL, f32, &h3));
    CHECK(gpumem_host_array_wrap(wmem, 2, (int64_t[]){rows, cols}, (int64_t[]){2 * rowb, 8}, f32, &hwv));
    struct {
        const char *way;
        gpumem_array *dst, *src;
    } c[] = {{"d2h h[:, ::2]", hwv, dc}, {"d2h d[::2]", h1, d1v}, {"d2h 3-D slab", h3, d3v}};
    for (int a = 0; a < (nth > 0 ? nth : 1); a++) {
        set_threads(nth > 0 ? (unsigned)atoi(th[a]) : 0);
        for (size_t k = 0; k < sizeof c / sizeof *c; k++) {
            gpumem_copy_path path = GPUMEM_COPY_PATH_NONE;
            CHECK(gpumem_array_copy(c[k].dst, c[k].src, NULL));
            CHECK(gpumem_debug_last_copy_path(&path));
            const char *name = gpumem_copy_path_name(path);
            printf("%s: path %s\n", c[k].way, name != NULL ? name : "?");
            timed(c[k].way, c[k].dst, c[k].src, t, n, mib);
        }
    }
    gpumem_array *all[] = {dc, d1, d1v, d3, d3v, h1, h3, hwv};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        gpumem_array_release(all[k]);
    free(mem);
    free(wmem);
}

static int usage(void)
{
    fprintf(stderr, "usage: bench-handoff [MiB [copies [threads ...]]]\n"
                    "       bench-handoff strided [MiB [copies [threads ...]]]\n"
                    "  (default 4 MiB and 1000 copies; strided: 64 MiB and 200 copies, MiB a multiple of 1/32;\n"
                    "   threads: staging threads 1 to 64, each in turn; none: the default)\n");
    return 2;
}

int main(int argc, char **argv)
{
    bool str = argc > 1 && strcmp(argv[1], "strided") == 0;
    if (str) {
        argc--;
        argv++;
    }
    double mib = argc > 1 ? atof(argv[1]) : str ? 64 : 4;
    int n = argc > 2 ? atoi(argv[2]) : str ? 200 : 1000;
    if (mib <= 0 || mib > 4096 || n < 1 || n > 1000000)
        return usage();
    if (str && (double)(int64_t)(mib * 32) != mib * 32) {
        fprintf(stderr, "bench-handoff: strided: %g MiB: not a multiple of 1/32 (rows of 32 KiB)\n", mib);
        return usage();
    }
    for (int a = 3; a < argc; a++) {
        int th = atoi(argv[a]);
        if (th < 1 || th > 64) {
            fprintf(stderr, "bench-handoff: threads %s: not 1 to 64\n", argv[a]);
            return 2;
        }
    }
    double *t = malloc((size_t)n * sizeof *t);
    if (t == NULL) {
        fprintf(stderr, "bench-handoff: out of host memory\n");
        return 1;
    }
    gpumem_context *ctx = NULL;
    CHECK(gpumem_context_create_default(&ctx));
    if (str)
        strided(ctx, mib, n, argc - 3 > 0 ? argc - 3 : 0, argv + 3, t);
    else
        contiguous(ctx, mib, n, argc - 3 > 0 ? argc - 3 : 0, argv + 3, t);
    gpumem_context_release(ctx);
    free(t);
    return 0;
}
