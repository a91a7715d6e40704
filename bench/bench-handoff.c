/*
 * bench-handoff.c - the tail of staged copies (issue 29): many pageable
 * copies of one size, each timed alone, and their median, p95, p99 and
 * maximum.  A copy that stalls on the hand-off between the caller and the
 * staging workers (a thread parked for a scheduler tick) shows as a
 * maximum or p95 far above the median.
 *
 *     bench/bench-handoff [MiB [copies [threads ...]]]
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
 *
 * On the simulator (GPUMEM_BACKEND=sim) the staging is host memcpy, so it
 * shows the hand-off itself (wakes, joins) with no link behind it.
 */
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

int main(int argc, char **argv)
{
    double mib = argc > 1 ? atof(argv[1]) : 4;
    int n = argc > 2 ? atoi(argv[2]) : 1000;
    if (mib <= 0 || mib > 4096 || n < 1 || n > 1000000) {
        fprintf(stderr, "usage: bench-handoff [MiB [copies [threads ...]]]\n");
        return 2;
    }
    for (int a = 3; a < argc; a++) {
        int th = atoi(argv[a]);
        if (th < 1 || th > 64) {
            fprintf(stderr, "bench-handoff: threads %s: not 1 to 64\n", argv[a]);
            return 2;
        }
    }
    int64_t bytes = (int64_t)(mib * (1 << 20));
    gpumem_context *ctx = NULL;
    CHECK(gpumem_context_create_default(&ctx));
    const gpumem_dtype *u8 = gpumem_dtype_builtin(GPUMEM_UINT8);
    gpumem_array *d = NULL, *h = NULL;
    CHECK(gpumem_device_array(ctx, 1, &bytes, NULL, u8, 'C', NULL, &d));
    char *mem = malloc((size_t)bytes);
    double *t = malloc((size_t)n * sizeof *t);
    if (mem == NULL || t == NULL) {
        fprintf(stderr, "bench-handoff: out of host memory\n");
        return 1;
    }
    memset(mem, 1, (size_t)bytes);
    CHECK(gpumem_host_array_wrap(mem, 1, &bytes, NULL, u8, &h));
    for (int a = argc > 3 ? 3 : 2; a < (argc > 3 ? argc : 3); a++) {
        gpumem_staging_settings s = {.size = sizeof s};
        CHECK(gpumem_staging_get(&s));
        if (argc > 3) {
            s.threads = (unsigned)atoi(argv[a]);
            CHECK(gpumem_staging_set(&s));
        }
        printf("staging threads %u, chunk %zu, depth %u\n", s.threads, s.chunk_bytes, s.depth);
        for (int way = 0; way < 2; way++) {
            for (int i = 0; i < 5; i++) /* warm: workers, lanes */
                CHECK(way == 0 ? gpumem_array_copy(d, h, NULL) : gpumem_array_copy(h, d, NULL));
            long v0, i0, v1, i1;
            switches(&v0, &i0);
            for (int i = 0; i < n; i++) {
                double t0 = now_us();
                CHECK(way == 0 ? gpumem_array_copy(d, h, NULL) : gpumem_array_copy(h, d, NULL));
                t[i] = now_us() - t0;
            }
            switches(&v1, &i1);
            report(way == 0 ? "h2d" : "d2h", t, n, mib, v1 - v0, i1 - i0);
        }
    }
    gpumem_array_release(h);
    gpumem_array_release(d);
    gpumem_context_release(ctx);
    free(mem);
    free(t);
    return 0;
}
