/*
 * trace-workload - a program with a known memory history, traced for the
 * tests of `gpumem trace` (tests/test-trace-tool.sh, test-trace-plot.sh) and
 * for doc/memory-debugging.md's picture.
 *
 *   trace-workload FILE     records into FILE (gpumem_trace_start, once its
 *                           context and stream are made), or, with
 *   trace-workload -        "-", into what GPUMEM_TRACE names (from the
 *                           context's creation to the exit)
 *
 * What it does, in order (the tests check these numbers):
 *  1. region "setup": a device array of 1 MiB (driver memory), then a pool
 *     of the context and two device arrays on it, 256 KiB and 512 KiB, one
 *     on a stream; a pinned array of 64 KiB; marker "step 0";
 *  2. region "solver" with nested region "exchange": 3 time steps, each a
 *     device array of 128 KiB on the pool, a synchronous upload of 64 KiB
 *     from the pinned array and a download on the stream, then its release;
 *     markers "step 1" to "step 3";
 *  3. leak_some(): two device arrays of 4096 bytes that it never releases;
 *  4. the 512 KiB array released, then gpumem_pool_free_held (a trim);
 *  5. a device array larger than the device (an out-of-memory error after
 *     the ladder), marker "after oom";
 *  6. everything else released, the trace stopped.
 * So the peak in use is 1 MiB + 256 KiB + 512 KiB + 64 KiB + 128 KiB
 * (2031616 bytes: 1966080 of device memory, 65536 pinned), during each time
 * step.  Exit status 0, or 1 with a
 * message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpumem.h>

#define CHECK(call) \
    do { \
        gpumem_status st_ = (call); \
        if (st_ != GPUMEM_OK) { \
            fprintf(stderr, "trace-workload: %s: %s\n", #call, gpumem_last_error()); \
            exit(1); \
        } \
    } while (0)

static gpumem_array *device_bytes(gpumem_context *ctx, int64_t n, gpumem_stream *s)
{
    gpumem_array *a = NULL;
    CHECK(gpumem_device_array(ctx, 1, &n, NULL, gpumem_dtype_builtin(GPUMEM_UINT8), 'C', s, &a));
    return a;
}

/* Never released: the summary names this function. */
void leak_some(gpumem_context *ctx, gpumem_array **keep);
__attribute__((noinline)) void leak_some(gpumem_context *ctx, gpumem_array **keep)
{
    keep[0] = device_bytes(ctx, 4096, NULL);
    keep[1] = device_bytes(ctx, 4096, NULL);
    __asm__ __volatile__("" ::: "memory");
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: trace-workload FILE|-\n");
        return 2;
    }
    gpumem_context *ctx = NULL;
    CHECK(gpumem_context_create(0, &ctx));
    gpumem_stream *stream = NULL;
    CHECK(gpumem_stream_create(ctx, 0, &stream));
    if (strcmp(argv[1], "-") != 0) /* after the context: the timeline starts with the work */
        CHECK(gpumem_trace_start(argv[1], 0));
    const gpumem_dtype *u8 = gpumem_dtype_builtin(GPUMEM_UINT8);

    CHECK(gpumem_trace_push("setup"));
    gpumem_array *big = device_bytes(ctx, 1 << 20, NULL);
    gpumem_pool *pool = NULL;
    CHECK(gpumem_pool_create(ctx, 0, &pool));
    CHECK(gpumem_context_set_pool(ctx, pool));
    gpumem_array *a256 = device_bytes(ctx, 256 << 10, NULL);
    gpumem_array *a512 = device_bytes(ctx, 512 << 10, stream);
    gpumem_array *pinned = NULL;
    int64_t n64 = 64 << 10;
    CHECK(gpumem_pinned_array(ctx, 1, &n64, NULL, u8, 'C', &pinned));
    CHECK(gpumem_trace_mark("step 0"));
    CHECK(gpumem_trace_pop());

    CHECK(gpumem_trace_push("solver"));
    for (int step = 1; step <= 3; step++) {
        CHECK(gpumem_trace_push("exchange"));
        gpumem_array *tmp = device_bytes(ctx, 128 << 10, NULL);
        gpumem_array *view = NULL;
        gpumem_slice sl = {0, 64 << 10, 1};
        CHECK(gpumem_array_slice(tmp, &sl, 1, &view));
        CHECK(gpumem_array_copy(view, pinned, NULL));
        CHECK(gpumem_array_copy(pinned, view, stream));
        CHECK(gpumem_stream_synchronize(stream));
        CHECK(gpumem_array_release(view));
        CHECK(gpumem_array_release(tmp));
        CHECK(gpumem_trace_pop());
        char name[32];
        snprintf(name, sizeof name, "step %d", step);
        CHECK(gpumem_trace_mark(name));
    }
    CHECK(gpumem_trace_pop());

    gpumem_array *leaked[2];
    leak_some(ctx, leaked);

    CHECK(gpumem_array_release(a512));
    CHECK(gpumem_stream_synchronize(stream));
    CHECK(gpumem_pool_free_held(pool));

    uint64_t total = 0;
    CHECK(gpumem_device_total_memory(0, &total));
    gpumem_array *huge = NULL;
    int64_t nh = (int64_t)total + (1 << 20);
    gpumem_status st = gpumem_device_array(ctx, 1, &nh, NULL, u8, 'C', NULL, &huge);
    if (st != GPUMEM_ERROR_OUT_OF_MEMORY) {
        fprintf(stderr, "trace-workload: an array larger than the device gave %s, not out of memory\n",
                gpumem_status_string(st));
        return 1;
    }
    CHECK(gpumem_trace_mark("after oom"));

    CHECK(gpumem_array_release(a256));
    CHECK(gpumem_array_release(big));
    CHECK(gpumem_array_release(pinned));
    if (strcmp(argv[1], "-") == 0)
        return 0; /* the trace ends at exit, with the leaked arrays alive */
    CHECK(gpumem_trace_stop());
    /* the leaked arrays go after the trace, so it records them as never freed */
    CHECK(gpumem_array_release(leaked[0]));
    CHECK(gpumem_array_release(leaked[1]));
    CHECK(gpumem_context_set_pool(ctx, NULL));
    CHECK(gpumem_pool_destroy(pool));
    CHECK(gpumem_stream_destroy(stream));
    CHECK(gpumem_context_release(ctx));
    return 0;
}
