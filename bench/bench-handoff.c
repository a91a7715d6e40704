/*
 * bench-handoff.c - the tail of staged copies (issue 29): many pageable
 * copies of one size, each timed alone, and their median, p95, p99 and
 * maximum.  A copy that stalls on the hand-off between the caller and the
 * staging workers (a thread parked for a scheduler tick) shows as a
 * maximum or p95 far above the median.
 *
 *     bench/bench-handoff [MiB [copies [threads]]]     (default 4 1000, the default threads)
 *
 * Uploads (h2d) then downloads (d2h); threads sets GPUMEM_STAGING_THREADS
 * for the run.  Also prints the copies slower than twice the median.  On
 * the GPU machine:
 *
 *     for t in 4 8 12 16; do GPUMEM_BACKEND=cuda bench/bench-handoff 4 1000 $t; done
 *     GPUMEM_BACKEND=cuda bench/bench-handoff 6 1000 16
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gpumem.h>

#define BENCH_NAME "bench-handoff"
#include "bench.h"

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void report(const char *way, double *t, int n, double mib)
{
    qsort(t, (size_t)n, sizeof *t, cmp);
    double med = t[n / 2];
    int slow = 0;
    for (int i = 0; i < n; i++)
        slow += t[i] > 2 * med;
    printf("%s %g MiB x %d: median %.1f us, p95 %.1f us, p99 %.1f us, max %.1f us, %d over 2x median"
           " (p95/median %.2f)\n",
           way, mib, n, med, t[(n * 95) / 100], t[(n * 99) / 100], t[n - 1], slow, t[(n * 95) / 100] / med);
}

int main(int argc, char **argv)
{
    double mib = argc > 1 ? atof(argv[1]) : 4;
    int n = argc > 2 ? atoi(argv[2]) : 1000;
    if (argc > 3)
        setenv("GPUMEM_STAGING_THREADS", argv[3], 1);
    if (mib <= 0 || mib > 4096 || n < 1 || n > 1000000) {
        fprintf(stderr, "usage: bench-handoff [MiB [copies [threads]]]\n");
        return 2;
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
    gpumem_staging_settings s = {.size = sizeof s};
    CHECK(gpumem_staging_get(&s));
    printf("staging threads %u, chunk %zu, depth %u\n", s.threads, s.chunk_bytes, s.depth);
    for (int way = 0; way < 2; way++) {
        for (int i = 0; i < 5; i++) /* warm: workers, lanes */
            CHECK(way == 0 ? gpumem_array_copy(d, h, NULL) : gpumem_array_copy(h, d, NULL));
        for (int i = 0; i < n; i++) {
            double t0 = now_us();
            CHECK(way == 0 ? gpumem_array_copy(d, h, NULL) : gpumem_array_copy(h, d, NULL));
            t[i] = now_us() - t0;
        }
        report(way == 0 ? "h2d" : "d2h", t, n, mib);
    }
    gpumem_array_release(h);
    gpumem_array_release(d);
    gpumem_context_release(ctx);
    free(mem);
    free(t);
    return 0;
}
