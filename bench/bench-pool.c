/* bench-pool: nanoseconds per allocate+free pair, from a device pool (hits
 * in the thread cache, the shared store alone, frees recorded on a stream)
 * and from the driver itself (cuMemAlloc + cuMemFree through the driver
 * table), on one thread and on several.
 *
 *   GPUMEM_BACKEND=sim bench/bench-pool [threads [seconds-per-case]]
 *   GPUMEM_BACKEND=cuda bench/bench-pool      (or auto, the library's default)
 *
 * Each thread warms up, waits for the others, then repeats pairs for the
 * given time; ns/pair is per thread (wall time / its pairs, averaged), and
 * Mpairs/s is the total rate of all threads.
 *
 * Rows: pool pairs; arrays on a pool (gpumem_device_array +
 * gpumem_array_release with the context's pool set: at most 4x a pool
 * pair, issue 10); memoize hits (one call, not a pair); and the driver's
 * own allocators as the baseline.  The driver rows call the backend table
 * directly (private headers: no public call allocates without the library's
 * bookkeeping), so this program links the internal library. */
#include "config.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "context.h"
#include "driver.h"
#include "gpumem.h"
#include "gpumem/pool.h"
#include "stream.h"

typedef enum { POOL, POOL_STREAM, ARRAY, MEMO, DRIVER, DRIVER_ASYNC } bench_kind;

typedef struct bench_case {
    const char *name;
    bench_kind kind;
    unsigned flags;
    size_t size;
} bench_case;

static const bench_case cases[] = {
    {"pool, 4 KiB, thread cache", POOL, 0, 4096},
    {"pool, 64 KiB, thread cache", POOL, 0, 65536},
    {"pool, 4 KiB, shared store only (NO_THREAD_CACHE)", POOL, GPUMEM_POOL_NO_THREAD_CACHE, 4096},
    {"pool, 4 MiB (shared store)", POOL, 0, 4u << 20},
    {"pool, 4 KiB, freed on a stream (cuEventRecord)", POOL_STREAM, 0, 4096},
    {"array 4 KiB on the context's pool (create+release)", ARRAY, 0, 4096},
    {"array 4 KiB on a NO_THREAD_CACHE pool", ARRAY, GPUMEM_POOL_NO_THREAD_CACHE, 4096},
    {"memoize hit (one call)", MEMO, 0, 0},
    {"driver cuMemAlloc+cuMemFree, 4 KiB", DRIVER, 0, 4096},
    {"driver cuMemAlloc+cuMemFree, 4 MiB", DRIVER, 0, 4u << 20},
    {"driver cuMemAllocAsync+cuMemFreeAsync, 4 KiB", DRIVER_ASYNC, 0, 4096},
    {"driver cuMemAllocAsync+cuMemFreeAsync, 4 MiB", DRIVER_ASYNC, 0, 4u << 20},
};

static gpumem_context *ctx;

typedef struct worker {
    const bench_case *c;
    gpumem_pool *pool;
    pthread_barrier_t *bar;
    double seconds;
    uint64_t pairs;
    double elapsed;
    gpumem_status st;
    char error[256];
} worker;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static gpumem_status memo_create(gpumem_context *c, const void *key, size_t key_size, void *user, void **value)
{
    (void)c, (void)key, (void)key_size, (void)user;
    *value = &memo_create; /* any non-NULL value */
    return GPUMEM_OK;
}

static gpumem_status pair(worker *w, gpumem_stream *s)
{
    if (w->c->kind == ARRAY) {
        int64_t n = (int64_t)(w->c->size / 4);
        gpumem_array *a = NULL;
        gpumem_status st = gpumem_device_array(ctx, 1, &n, NULL, gpumem_dtype_builtin(GPUMEM_FLOAT32), 'C', NULL, &a);
        return st != GPUMEM_OK ? st : gpumem_array_release(a);
    }
    if (w->c->kind == MEMO) {
        static const uint64_t key = 42;
        void *v = NULL;
        return gpumem_memoize(ctx, &key, sizeof key, memo_create, NULL, NULL, &v);
    }
    if (w->c->kind == DRIVER) {
        gm_cu_deviceptr d = 0;
        gpumem_status st = gm_drv_check(GM_DRV(mem_alloc, ctx->dctx, &d, w->c->size), GM_OP_mem_alloc, "bench");
        if (st == GPUMEM_OK)
            st = gm_drv_check(GM_DRV(mem_free, ctx->dctx, d), GM_OP_mem_free, "bench");
        return st;
    }
    if (w->c->kind == DRIVER_ASYNC) {
        /* The driver's stream-ordered pool, on the worker's own stream. */
        gm_cu_deviceptr d = 0;
        gm_dstream *ds = gm_stream_ds(s);
        gpumem_status st = gm_drv_check(GM_DRV(mem_alloc_async, ctx->dctx, &d, w->c->size, ds),
                                        GM_OP_mem_alloc_async, "bench");
        if (st == GPUMEM_OK)
            st = gm_drv_check(GM_DRV(mem_free_async, ctx->dctx, d, ds), GM_OP_mem_free_async, "bench");
        return st;
    }
    gpumem_allocation *a = NULL;
    gpumem_status st = gpumem_pool_allocate(w->pool, w->c->size, s, &a);
    if (st == GPUMEM_OK)
        st = gpumem_allocation_free(a, s);
    return st;
}

static void *run(void *v)
{
    worker *w = v;
    gpumem_stream *s = NULL;
    if (w->c->kind == POOL_STREAM || w->c->kind == DRIVER_ASYNC)
        w->st = gpumem_stream_create(ctx, GPUMEM_STREAM_NON_BLOCKING, &s);
    for (int i = 0; i < 100 && w->st == GPUMEM_OK; i++)
        w->st = pair(w, s);
    pthread_barrier_wait(w->bar);
    int batch = w->c->kind == POOL || w->c->kind == ARRAY || w->c->kind == MEMO ? 1000 : 20;
    uint64_t n = 0;
    double t0 = now(), t = t0;
    while (w->st == GPUMEM_OK && t - t0 < w->seconds) {
        for (int i = 0; i < batch && w->st == GPUMEM_OK; i++)
            w->st = pair(w, s);
        n += (uint64_t)batch;
        t = now();
    }
    w->pairs = n;
    w->elapsed = t - t0;
    if (w->st != GPUMEM_OK)
        snprintf(w->error, sizeof w->error, "%s", gpumem_last_error());
    gpumem_stream_destroy(s);
    return NULL;
}

/* Runs one case on `threads` threads; prints its row.  0 on success. */
static int measure(const bench_case *c, int threads, double seconds)
{
    gpumem_pool *pool = NULL;
    bool needs_pool = c->kind == POOL || c->kind == POOL_STREAM || c->kind == ARRAY;
    if (needs_pool && gpumem_pool_create(ctx, c->flags, &pool) != GPUMEM_OK) {
        fprintf(stderr, "bench-pool: %s\n", gpumem_last_error());
        return 1;
    }
    if (c->kind == ARRAY)
        gpumem_context_set_pool(ctx, pool);
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, (unsigned)threads);
    worker *w = calloc((size_t)threads, sizeof *w);
    pthread_t *th = calloc((size_t)threads, sizeof *th);
    if (w == NULL || th == NULL) {
        fprintf(stderr, "bench-pool: out of memory\n");
        return 1;
    }
    for (int i = 0; i < threads; i++) {
        w[i] = (worker){.c = c, .pool = pool, .bar = &bar, .seconds = seconds};
        pthread_create(&th[i], NULL, run, &w[i]);
    }
    double ns = 0, longest = 0;
    uint64_t total = 0;
    int bad = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(th[i], NULL);
        if (w[i].st != GPUMEM_OK) {
            fprintf(stderr, "bench-pool: %s: %s\n", c->name, w[i].error);
            bad = 1;
        }
        ns += w[i].pairs ? w[i].elapsed * 1e9 / (double)w[i].pairs : 0;
        total += w[i].pairs;
        if (w[i].elapsed > longest)
            longest = w[i].elapsed;
    }
    if (!bad)
        printf("%-50s %7d %10.1f %10.3g\n", c->name, threads, ns / threads,
               longest > 0 ? (double)total / longest / 1e6 : 0.0);
    fflush(stdout);
    pthread_barrier_destroy(&bar);
    free(w);
    free(th);
    if (c->kind == ARRAY)
        gpumem_context_set_pool(ctx, NULL);
    gpumem_pool_destroy(pool);
    return bad;
}

int main(int argc, char **argv)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = argc > 1 ? atoi(argv[1]) : (int)(cpus > 8 ? 8 : cpus < 2 ? 2 : cpus);
    double seconds = argc > 2 ? atof(argv[2]) : 0.3;
    if (threads < 1 || threads > 256 || !(seconds > 0)) {
        fprintf(stderr, "usage: bench-pool [threads (1-256) [seconds per case]]\n");
        return 2;
    }
    if (gpumem_context_create(0, &ctx) != GPUMEM_OK) {
        fprintf(stderr, "bench-pool: %s\n", gpumem_last_error());
        return 1;
    }
    const char *backend = "?";
    char name[256] = "?";
    gpumem_backend(&backend);
    gpumem_device_name(0, name, sizeof name);
    printf("bench-pool: backend %s, device 0 (%s), %.2f s per case, %ld CPUs online\n", backend, name, seconds,
           cpus);
    printf("%-50s %7s %10s %10s\n", "allocate+free pair", "threads", "ns/pair", "Mpairs/s");
    int bad = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bad |= measure(&cases[i], 1, seconds);
        if (threads > 1)
            bad |= measure(&cases[i], threads, seconds);
    }
    gpumem_context_release(ctx);
    return bad;
}
