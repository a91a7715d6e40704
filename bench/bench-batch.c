/*
 * bench-batch.c - a halo's four faces (two rows, two strided columns of an
 * (N+2) x (N+2) float64 field) out to pinned buffers and into the halo
 * across the field (periodic), on one
 * stream: four gpumem_array_copy calls each way against one
 * gpumem_array_copy_batch each way.  Prints, per exchange (out and in),
 * the host time (queueing and one synchronization), the GPU time between
 * two events, and the kernel launches; checks that both ways give the
 * same bytes first.
 *
 *     GPUMEM_BACKEND=cuda bench/bench-batch [N [reps]]      (default 4096 200)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gpumem.h>

#define BENCH_NAME "bench-batch"
#include "bench.h"

static uint64_t launches(void)
{
    uint64_t n = 0;
    gpumem_debug_driver_calls("cuLaunchKernel", &n);
    return n;
}

static gpumem_array *view(gpumem_array *a, gpumem_slice s0, gpumem_slice s1)
{
    gpumem_array *v = NULL;
    CHECK(gpumem_array_slice(a, (gpumem_slice[2]){s0, s1}, 2, &v));
    return v;
}

/* One exchange: the edges of the interior out, then the buffers into the halo; batched or one call per face. */
static void exchange(int batched, gpumem_array **out, gpumem_array **in, gpumem_array **bufs, gpumem_stream *s)
{
    if (batched) {
        CHECK(gpumem_array_copy_batch(4, bufs, out, s));
        CHECK(gpumem_array_copy_batch(4, in, bufs, s));
        return;
    }
    for (int k = 0; k < 4; k++)
        CHECK(gpumem_array_copy(bufs[k], out[k], s));
    for (int k = 0; k < 4; k++)
        CHECK(gpumem_array_copy(in[k], bufs[k], s));
}

int main(int argc, char **argv)
{
    const int64_t n = argc > 1 ? atoll(argv[1]) : 4096, reps = argc > 2 ? atoll(argv[2]) : 200, m = n + 2;
    if (n < 2 || reps < 1)
        return fprintf(stderr, "usage: bench-batch [N >= 2 [reps >= 1]]\n"), EXIT_FAILURE;
    const gpumem_dtype *f64 = gpumem_dtype_builtin(GPUMEM_FLOAT64);
    gpumem_stream *s = NULL;
    gpumem_event *e0 = NULL, *e1 = NULL;
    gpumem_array *u = NULL, *bufs[2][4];
    CHECK(gpumem_stream_create(NULL, GPUMEM_STREAM_NON_BLOCKING, &s));
    CHECK(gpumem_event_create(NULL, 0, &e0));
    CHECK(gpumem_event_create(NULL, 0, &e1));
    double *field = malloc((size_t)(m * m) * sizeof *field);
    if (field == NULL)
        return fprintf(stderr, "bench-batch: out of host memory\n"), EXIT_FAILURE;
    for (int64_t i = 0; i < m; i++) /* u[i, j] = i + j / 1e4 */
        for (int64_t j = 0; j < m; j++)
            field[i * m + j] = (double)i + (double)j / 1e4;
    gpumem_array *h = NULL;
    CHECK(gpumem_host_array_wrap(field, 2, (int64_t[]){m, m}, NULL, f64, &h));
    CHECK(gpumem_to_device(NULL, h, NULL, 0, &u));
    gpumem_array_release(h);
    free(field);
    const gpumem_slice mid = {1, n + 1, 1};
    const gpumem_slice at[4] = {GPUMEM_INDEX(0), GPUMEM_INDEX(1), GPUMEM_INDEX(n), GPUMEM_INDEX(n + 1)};
    gpumem_array *faces[4] = {view(u, at[1], mid), view(u, at[2], mid), view(u, mid, at[1]), view(u, mid, at[2])};
    gpumem_array *halo[4] = {view(u, at[3], mid), view(u, at[0], mid), view(u, mid, at[3]), view(u, mid, at[0])};
    for (int b = 0; b < 2; b++)
        for (int k = 0; k < 4; k++)
            CHECK(gpumem_pinned_array(NULL, 1, &n, NULL, f64, 'C', &bufs[b][k]));

    /* the same bytes both ways */
    for (int b = 0; b < 2; b++) {
        if (b)
            CHECK(gpumem_array_copy_batch(4, bufs[b], faces, s));
        else
            for (int k = 0; k < 4; k++)
                CHECK(gpumem_array_copy(bufs[b][k], faces[k], s));
    }
    CHECK(gpumem_stream_synchronize(s));
    for (int k = 0; k < 4; k++) {
        double *p0 = NULL, *p1 = NULL;
        CHECK(gpumem_array_host_pointer(bufs[0][k], (void **)&p0));
        CHECK(gpumem_array_host_pointer(bufs[1][k], (void **)&p1));
        double want = k == 0 ? 1.0 + 2e-4 : k == 1 ? (double)n + 2e-4 : k == 2 ? 2.0 + 1e-4 : 2.0 + (double)n / 1e4;
        if (memcmp(p0, p1, (size_t)n * sizeof *p0) != 0 || p0[1] != want) {
            fprintf(stderr, "bench-batch: face %d differs (%g, want %g)\n", k, p0[1], want);
            return EXIT_FAILURE;
        }
    }

    printf("%lld x %lld float64 field, the 4 faces of its halo out and in, %lld exchanges per case\n",
           (long long)n, (long long)n, (long long)reps);
    printf("%-26s %12s %12s %10s\n", "case", "host us/exch", "GPU us/exch", "launches");
    for (int round = 0; round < 2; round++) { /* round 0 warms up */
        for (int batched = 0; batched < 2; batched++) {
            exchange(batched, faces, halo, bufs[batched], s);
            CHECK(gpumem_stream_synchronize(s));
            uint64_t l0 = launches();
            double t0 = now_us();
            CHECK(gpumem_event_record(e0, s));
            for (int64_t r = 0; r < reps; r++)
                exchange(batched, faces, halo, bufs[batched], s);
            CHECK(gpumem_event_record(e1, s));
            CHECK(gpumem_stream_synchronize(s));
            double host = (now_us() - t0) / (double)reps;
            float ms = 0;
            CHECK(gpumem_event_elapsed_time(e0, e1, &ms));
            if (round == 1)
                printf("%-26s %12.1f %12.1f %10.1f\n", batched ? "gpumem_array_copy_batch" : "gpumem_array_copy x 4",
                       host, (double)ms * 1e3 / (double)reps, (double)(launches() - l0) / (double)reps);
        }
    }
    for (int b = 0; b < 2; b++)
        for (int k = 0; k < 4; k++)
            gpumem_array_release(bufs[b][k]);
    GPUMEM_ARRAY_RELEASE_ALL(faces[0], faces[1], faces[2], faces[3], halo[0], halo[1], halo[2], halo[3], u);
    gpumem_event_destroy(e0);
    gpumem_event_destroy(e1);
    gpumem_stream_destroy(s);
    return EXIT_SUCCESS;
}
