/*
 * halo.c - 2-D heat diffusion with a halo exchange, as an MPI code does it:
 * an N x N field on the device inside one halo cell; each step the halo
 * rows and the strided halo columns are exchanged on two streams through
 * pinned buffers from a page-locked pool (gpumem_array_pack gathers both
 * columns with one kernel, gpumem_array_unpack scatters them back), then
 * events order the stencil after both streams.  One process, periodic
 * boundaries: what it sends to one neighbour it receives from the other.
 * The stencil stands in for the kernel a GPU code launches (gpumem_launch;
 * the simulator runs no kernels of yours): the CPU updates a pinned copy of
 * the field and puts it back.  The result must equal, bit for bit, the same
 * arithmetic on a periodic host array.
 *
 *     cc $(pkg-config --cflags gpumem) -o halo halo.c $(pkg-config --libs gpumem)
 *     GPUMEM_BACKEND=sim ./halo [N [steps]]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpumem.h>

#define K 0.1 /* the diffusion number (stable below 0.25) */
#define CHECK(call)                                                                  \
    do {                                                                             \
        if ((call) != GPUMEM_OK) {                                                   \
            fprintf(stderr, "halo: %s: %s\n", #call, gpumem_last_error());          \
            exit(EXIT_FAILURE);                                                      \
        }                                                                            \
    } while (0)

static gpumem_array *view(gpumem_array *a, gpumem_slice s0, gpumem_slice s1)
{
    gpumem_array *v = NULL;
    CHECK(gpumem_array_slice(a, (gpumem_slice[2]){s0, s1}, 2, &v));
    return v;
}

int main(int argc, char **argv)
{
    const int64_t n = argc > 1 ? atoll(argv[1]) : 1024, steps = argc > 2 ? atoll(argv[2]) : 10, m = n + 2;
    double *ref = malloc((size_t)(n * n) * sizeof *ref), *next = malloc((size_t)(n * n) * sizeof *next);
    double *init = calloc((size_t)(m * m), sizeof *init);
    if (n < 2 || steps < 0 || ref == NULL || next == NULL || init == NULL)
        return fprintf(stderr, "usage: halo [N >= 2 [steps >= 0]]\n"), EXIT_FAILURE;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++)
            ref[i * n + j] = init[(i + 1) * m + j + 1] = (double)((i * 7 + j * 13) % 17);
    const gpumem_dtype *f64 = GPUMEM_DTYPE_OF(ref[0]);

    gpumem_stream *rows = NULL, *cols = NULL, *compute = NULL;
    gpumem_event *rows_done = NULL, *cols_done = NULL;
    gpumem_host_pool *pool = NULL;
    gpumem_array *h = NULL, *u = NULL, *out = NULL;
    CHECK(gpumem_stream_create(NULL, GPUMEM_STREAM_NON_BLOCKING, &rows));
    CHECK(gpumem_stream_create(NULL, GPUMEM_STREAM_NON_BLOCKING, &cols));
    CHECK(gpumem_stream_create(NULL, GPUMEM_STREAM_NON_BLOCKING, &compute));
    CHECK(gpumem_event_create(NULL, GPUMEM_EVENT_DISABLE_TIMING, &rows_done));
    CHECK(gpumem_event_create(NULL, GPUMEM_EVENT_DISABLE_TIMING, &cols_done));
    CHECK(gpumem_host_pool_create(NULL, 0, &pool));
    CHECK(gpumem_host_array_wrap(init, 2, (int64_t[]){m, m}, NULL, f64, &h));
    CHECK(gpumem_to_device(NULL, h, NULL, 0, &u)); /* the field, halo included */

    /* what goes out (the edges of the interior), and where it comes in (the halo across the field) */
    const gpumem_slice mid = {1, n + 1, 1}, first = GPUMEM_INDEX(1), last = GPUMEM_INDEX(n);
    const gpumem_slice low = GPUMEM_INDEX(0), high = GPUMEM_INDEX(n + 1);
    gpumem_array *row_out[2] = {view(u, first, mid), view(u, last, mid)};
    gpumem_array *row_in[2] = {view(u, high, mid), view(u, low, mid)};
    gpumem_array *col_out[2] = {view(u, mid, first), view(u, mid, last)};
    gpumem_array *col_in[2] = {view(u, mid, high), view(u, mid, low)};
    gpumem_array *inner = view(u, mid, mid);

    for (int64_t step = 0; step < steps; step++) {
        gpumem_array *rbuf = NULL, *cbuf = NULL, *a = NULL, *b = NULL;
        CHECK(gpumem_host_pool_allocate(pool, 1, (int64_t[]){2 * n}, f64, 'C', &rbuf));
        CHECK(gpumem_host_pool_allocate(pool, 1, (int64_t[]){2 * n}, f64, 'C', &cbuf));
        CHECK(gpumem_array_pack(2, row_out, rbuf, rows)); /* two contiguous rows: two transfers */
        CHECK(gpumem_array_pack(2, col_out, cbuf, cols)); /* two strided columns: one kernel, one transfer */
        CHECK(gpumem_stream_synchronize(rows));           /* MPI reads the buffers: they must be there */
        CHECK(gpumem_stream_synchronize(cols));
        /* here MPI_Isend(rbuf, cbuf) to the neighbours, MPI_Irecv from them, MPI_Waitall */
        CHECK(gpumem_array_unpack(2, row_in, rbuf, rows));
        CHECK(gpumem_array_unpack(2, col_in, cbuf, cols));
        CHECK(gpumem_event_record(rows_done, rows));
        CHECK(gpumem_event_record(cols_done, cols));
        CHECK(gpumem_stream_wait_event(compute, rows_done)); /* the stencil after both halos, */
        CHECK(gpumem_stream_wait_event(compute, cols_done)); /* without the host waiting */

        /* the stencil (a kernel on compute, on a GPU), through two pinned temporaries of the pool */
        CHECK(gpumem_host_pool_allocate(pool, 2, (int64_t[]){m, m}, f64, 'C', &a));
        CHECK(gpumem_host_pool_allocate(pool, 2, (int64_t[]){n, n}, f64, 'C', &b));
        CHECK(gpumem_copy_to_host(u, a, compute));
        CHECK(gpumem_stream_synchronize(compute));
        double *pa = NULL, *pb = NULL;
        CHECK(gpumem_array_host_pointer(a, (void **)&pa));
        CHECK(gpumem_array_host_pointer(b, (void **)&pb));
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) {
                const double *c = &pa[(i + 1) * m + j + 1];
                pb[i * n + j] = *c + K * (c[-m] + c[m] + c[-1] + c[1] - 4 * *c);
            }
        CHECK(gpumem_copy_to_device(inner, b, compute));
        CHECK(gpumem_stream_synchronize(compute)); /* the temporaries go back to the pool once read */
        CHECK(gpumem_array_release_n(4, (gpumem_array *[]){a, b, rbuf, cbuf}));

        for (int64_t i = 0; i < n; i++) /* the reference: a periodic host array */
            for (int64_t j = 0; j < n; j++) {
                const double c = ref[i * n + j];
                next[i * n + j] = c + K * (ref[(i + n - 1) % n * n + j] + ref[(i + 1) % n * n + j] +
                                           ref[i * n + (j + n - 1) % n] + ref[i * n + (j + 1) % n] - 4 * c);
            }
        memcpy(ref, next, (size_t)(n * n) * sizeof *ref);
    }

    CHECK(gpumem_host_array_wrap(next, 2, (int64_t[]){n, n}, NULL, f64, &out));
    CHECK(gpumem_copy_to_host(inner, out, NULL));
    double heat = 0, err = 0;
    for (int64_t k = 0; k < n * n; k++) {
        double d = next[k] > ref[k] ? next[k] - ref[k] : ref[k] - next[k];
        heat += next[k], err = d > err ? d : err;
    }
    printf("%lld x %lld, %lld steps: total heat %.6f, largest difference from the host reference %g: %s\n",
           (long long)n, (long long)n, (long long)steps, heat, err, err == 0 ? "ok" : "WRONG");
    GPUMEM_ARRAY_RELEASE_ALL(out, inner, col_in[0], col_in[1], col_out[0], col_out[1], row_in[0], row_in[1],
                             row_out[0], row_out[1], u, h);
    CHECK(gpumem_host_pool_destroy(pool));
    CHECK(gpumem_event_destroy(rows_done));
    CHECK(gpumem_event_destroy(cols_done));
    CHECK(gpumem_stream_destroy(compute));
    CHECK(gpumem_stream_destroy(cols));
    CHECK(gpumem_stream_destroy(rows));
    free(init), free(next), free(ref);
    return err == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
