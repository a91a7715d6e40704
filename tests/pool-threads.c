/* Pools across threads (part of tests/test-pool): thread caches of
 * threads that exit or outlive the pool, the striped shared store, and the
 * 8-thread stress tests with and without thread caches. */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "child.h"
#include "context.h"
#include "driver.h"
#include "gpumem.h"
#include "gpumem/pool.h"
#include "pool.h"
#include "sim.h"
#include "stream.h"
#include "tap.h"
#include "pool-test.h"

/* ---- thread caches of other threads ----------------------------------------------------- */

typedef struct cache_arg {
    gpumem_pool *pool;
    pthread_barrier_t *bar;
    uint64_t ptr;
    int ok;
} cache_arg;

/* Leaves one block in its cache, then waits while the main thread destroys
 * the pool; then uses a new pool. */
static void *outlive(void *v)
{
    cache_arg *c = v;
    gpumem_allocation *a = NULL;
    c->ok = gpumem_pool_allocate(c->pool, 6000, NULL, &a) == GPUMEM_OK &&
            gpumem_allocation_free(a, NULL) == GPUMEM_OK;
    pthread_barrier_wait(c->bar); /* the block sits in this thread's cache */
    pthread_barrier_wait(c->bar); /* the pool is destroyed */
    gpumem_pool *p2 = NULL;
    for (int i = 0; i < 6 && c->ok; i++) { /* more pools than cache slots */
        c->ok &= gpumem_pool_create(ctx, 0, &p2) == GPUMEM_OK &&
                 gpumem_pool_allocate(p2, 6000, NULL, &a) == GPUMEM_OK &&
                 gpumem_allocation_free(a, NULL) == GPUMEM_OK &&
                 gpumem_pool_allocate(p2, 6000, NULL, &a) == GPUMEM_OK &&
                 gpumem_allocation_free(a, NULL) == GPUMEM_OK && gpumem_pool_destroy(p2) == GPUMEM_OK;
    }
    return NULL;
}

static void *leave_block(void *v)
{
    cache_arg *c = v;
    gpumem_allocation *a = NULL;
    c->ok = gpumem_pool_allocate(c->pool, 6000, NULL, &a) == GPUMEM_OK;
    c->ptr = ptr_of(a);
    c->ok &= gpumem_allocation_free(a, NULL) == GPUMEM_OK;
    return NULL; /* exits with the block in its cache */
}

void test_thread_caches(void)
{
    uint64_t base = used();
    gpumem_pool *pool = NULL;
    gpumem_pool_create(ctx, 0, &pool);
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, 2);
    cache_arg c = {pool, &bar, 0, 0};
    pthread_t th;
    pthread_create(&th, NULL, outlive, &c);
    pthread_barrier_wait(&bar);
    uint64_t held = 0;
    gpumem_pool_held_blocks(pool, &held);
    is_int(held, 1, "a block held in another thread's cache is counted");
    is_int(gpumem_pool_free_held(pool), GPUMEM_OK, "free_held");
    gpumem_pool_held_blocks(pool, &held);
    is_int(held, 0, "empties the other thread's cache too");
    mem_ok(used() == base, "its memory is back");
    gpumem_allocation *a = NULL;
    gpumem_pool_allocate(pool, 6000, NULL, &a);
    gpumem_allocation_free(a, NULL);
    is_int(gpumem_pool_destroy(pool), GPUMEM_OK, "destroy the pool while the other thread still caches for it");
    pthread_barrier_wait(&bar);
    pthread_join(th, NULL);
    ok(c.ok, "that thread goes on with new pools (more than its cache slots)");
    mem_ok(used() == base, "no memory is left behind");
    pthread_barrier_destroy(&bar);

    /* A thread that exits hands its cache back. */
    gpumem_pool_create(ctx, 0, &pool);
    cache_arg d = {pool, NULL, 0, 0};
    pthread_create(&th, NULL, leave_block, &d);
    pthread_join(th, NULL);
    gpumem_pool_held_blocks(pool, &held);
    ok(d.ok && held == 1, "an exited thread's block is still held");
    gpumem_pool_allocate(pool, 6000, NULL, &a);
    ok(ptr_of(a) == d.ptr, "and is reused by another thread");
    gpumem_allocation_free(a, NULL);
    gpumem_pool_destroy(pool);
    mem_ok(used() == base, "no memory is left behind");
}

/* ---- the striped shared store -------------------------------------------------------- */

/* Allocates a block of size on stream (or takes the one given) and frees it
 * on stream; with a barrier, waits there between the two. */
typedef struct store_arg {
    gpumem_pool *pool;
    size_t size;
    gpumem_stream *stream;
    gpumem_allocation *given;
    pthread_barrier_t *bar;
    uint64_t ptr;
    int ok;
} store_arg;

static void *store_worker(void *v)
{
    store_arg *a = v;
    gpumem_allocation *x = a->given;
    a->ok = x != NULL || gpumem_pool_allocate(a->pool, a->size, a->stream, &x) == GPUMEM_OK;
    a->ptr = ptr_of(x);
    if (a->bar != NULL)
        pthread_barrier_wait(a->bar);
    a->ok &= gpumem_allocation_free(x, a->stream) == GPUMEM_OK;
    return NULL;
}

/* Runs store_worker on n threads at once (a barrier between allocate and
 * free when bar is set), or one after another.  Whether all went well. */
static int run_workers(store_arg *args, int n, int at_once)
{
    pthread_t th[16];
    int good = 1;
    for (int i = 0; i < n; i++) {
        pthread_create(&th[i], NULL, store_worker, &args[i]);
        if (!at_once)
            pthread_join(th[i], NULL);
    }
    for (int i = 0; i < n; i++) {
        if (at_once)
            pthread_join(th[i], NULL);
        good &= args[i].ok;
    }
    return good;
}

enum { W = 8 }; /* worker threads: consecutive stripe numbers, so at least 7 stripes not the main thread's,
                   or every stripe */

static size_t class_size(int i)
{
    return (size_t)(i + 1) * 1024; /* W distinct classes */
}

void test_stripes(void)
{
    uint64_t base = used();
    gpumem_pool *pool = NULL;
    gpumem_pool_create(ctx, GPUMEM_POOL_NO_THREAD_CACHE, &pool);
    store_arg args[W];

    /* Blocks that other threads freed into their stripes are found. */
    for (int i = 0; i < W; i++)
        args[i] = (store_arg){.pool = pool, .size = class_size(i)};
    ok(run_workers(args, W, 0), "%d threads, one after another, each allocate and free a block", W);
    struct gpumem_pool_stats s = stats_of(pool);
    ok(s.held_blocks == W && s.misses == W && s.hits == 0, "the pool holds their %d blocks", W);
    int same = 0;
    gpumem_allocation *a[W], *y[W], *z[W];
    for (int i = 0; i < W; i++) {
        gpumem_pool_allocate(pool, class_size(i), NULL, &a[i]);
        same += ptr_of(a[i]) == args[i].ptr;
    }
    is_int(same, W, "this thread gets every one of them back, whichever stripe holds it");
    s = stats_of(pool);
    ok(s.held_blocks == 0 && s.misses == W && s.hits == W && s.active_blocks == W,
       "%d hits, no new block from the driver", W);

    /* A block freed by another thread goes back to the stripe of the thread that allocated it. */
    store_arg fr = {.pool = pool, .given = a[0]};
    ok(run_workers(&fr, 1, 0), "another thread frees one of them");
    gpumem_allocation *b = NULL;
    gpumem_pool_allocate(pool, class_size(0), NULL, &b);
    ok(ptr_of(b) == args[0].ptr, "and the allocating thread gets it back");
    a[0] = b;
    for (int i = 0; i < W; i++)
        gpumem_allocation_free(a[i], NULL);

    /* Streams: pending blocks in other threads' stripes keep their rules. */
    gpumem_stream *S = NULL, *T = NULL;
    gpumem_stream_create(ctx, GPUMEM_STREAM_NON_BLOCKING, &S);
    gpumem_stream_create(ctx, GPUMEM_STREAM_NON_BLOCKING, &T);
    gpumem_pool_free_held(pool);
    struct gpumem_pool_stats s0 = stats_of(pool);
    atomic_store(&gate, 0);
    GM_DRV(launch_host_func, ctx->dctx, gm_stream_ds(S), gate_fn, NULL);
    for (int i = 0; i < W; i++)
        args[i] = (store_arg){.pool = pool, .size = class_size(i), .stream = S};
    ok(run_workers(args, W, 0), "%d threads allocate and free a block each on stream S, its work held back", W);
    int on_t = 0, on_null = 0, on_s = 0, later_t = 0;
    for (int i = 0; i < W; i++) {
        gpumem_pool_allocate(pool, class_size(i), T, &y[i]);
        on_t += ptr_of(y[i]) == args[i].ptr;
        gpumem_pool_allocate(pool, class_size(i), NULL, &z[i]);
        on_null += ptr_of(z[i]) == args[i].ptr;
        gpumem_pool_allocate(pool, class_size(i), S, &a[i]);
        on_s += ptr_of(a[i]) == args[i].ptr;
    }
    is_int(on_t, 0, "stream T gets none of them while S's work is pending");
    is_int(on_null, 0, "nor does a synchronous allocation");
    is_int(on_s, W, "stream S gets all of them at once, from whichever stripe");
    for (int i = 0; i < W; i++)
        gpumem_allocation_free(a[i], S);
    atomic_store(&gate, 1);
    gpumem_stream_synchronize(S);
    for (int i = 0; i < W; i++) {
        gpumem_pool_allocate(pool, class_size(i), T, &a[i]);
        later_t += ptr_of(a[i]) == args[i].ptr;
    }
    is_int(later_t, W, "once S's events have completed, T gets them");
    for (int i = 0; i < W; i++) {
        gpumem_allocation_free(a[i], NULL);
        gpumem_allocation_free(y[i], NULL);
        gpumem_allocation_free(z[i], NULL);
    }
    s = stats_of(pool);
    ok(s.misses - s0.misses == 3 * W && s.hits - s0.hits == 2 * W && s.held_blocks == 3 * W && s.active_blocks == 0,
       "%d new blocks, %d reused, all held at the end", 3 * W, 2 * W);
    gpumem_stream_destroy(S);
    gpumem_stream_destroy(T);

    /* free_held, stop_holding and destroy reach every stripe, also while other threads free. */
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, W);
    for (int i = 0; i < W; i++)
        args[i] = (store_arg){.pool = pool, .size = 5u << 20, .bar = &bar};
    ok(run_workers(args, W, 1), "%d threads hold a 5 MiB block each at once, then free them", W);
    s = stats_of(pool);
    is_int(s.held_blocks, 3 * W + W, "the pool holds them all");
    uint64_t f0 = s.driver_frees;
    is_int(gpumem_pool_free_held(pool), GPUMEM_OK, "free_held");
    s = stats_of(pool);
    ok(s.held_blocks == 0 && s.held_bytes == 0 && s.driver_frees == f0 + 4 * W, "gives back every stripe's blocks");
    mem_ok(used() == base, "all the memory is back");
    pthread_barrier_destroy(&bar);

    pthread_barrier_t bar2;
    pthread_barrier_init(&bar2, NULL, W + 1);
    pthread_t th[W];
    for (int i = 0; i < W; i++) {
        args[i] = (store_arg){.pool = pool, .size = (size_t)(i + 1) << 20, .bar = &bar2};
        pthread_create(&th[i], NULL, store_worker, &args[i]);
    }
    pthread_barrier_wait(&bar2); /* every thread holds a block */
    gpumem_status st = gpumem_pool_stop_holding(pool);
    int good = st == GPUMEM_OK;
    for (int i = 0; i < W; i++) {
        pthread_join(th[i], NULL);
        good &= args[i].ok;
    }
    ok(good, "stop_holding while %d threads free", W);
    s = stats_of(pool);
    ok(s.held_blocks == 0 && s.active_blocks == 0, "no block is left held or active");
    mem_ok(used() == base, "every block went to the driver");
    gpumem_pool_destroy(pool);

    int r0 = 0, r1 = 0;
    gpumem_context_refcount(ctx, &r0);
    gpumem_pool_create(ctx, GPUMEM_POOL_NO_THREAD_CACHE, &pool);
    for (int i = 0; i < W; i++) {
        args[i] = (store_arg){.pool = pool, .size = (size_t)(i + 1) << 20, .bar = &bar2};
        pthread_create(&th[i], NULL, store_worker, &args[i]);
    }
    pthread_barrier_wait(&bar2);
    st = gpumem_pool_destroy(pool);
    good = st == GPUMEM_OK;
    for (int i = 0; i < W; i++) {
        pthread_join(th[i], NULL);
        good &= args[i].ok;
    }
    ok(good, "destroy while %d threads free", W);
    gpumem_context_refcount(ctx, &r1);
    is_int(r1, r0, "the last free ended the pool");
    mem_ok(used() == base, "and all its memory is back");
    pthread_barrier_destroy(&bar2);

    /* The peak is sampled when a block comes from the driver and at every stats call. */
    gpumem_pool_create(ctx, 0, &pool);
    gpumem_allocation *p1 = NULL, *p2 = NULL, *p3 = NULL;
    gpumem_pool_allocate(pool, 1024, NULL, &p1);
    gpumem_pool_allocate(pool, 1024, NULL, &p2);
    gpumem_allocation_free(p1, NULL);
    gpumem_pool_allocate(pool, 3072, NULL, &p3); /* a miss: 4096 active of 5120 */
    gpumem_pool_allocate(pool, 1024, NULL, &p1); /* a hit: 5120 active */
    s = stats_of(pool);
    is_int(s.peak_active_bytes, 5120, "the peak counts blocks reused since the last miss");
    gpumem_allocation_free(p1, NULL);
    gpumem_allocation_free(p2, NULL);
    gpumem_allocation_free(p3, NULL);
    is_int(stats_of(pool).peak_active_bytes, 5120, "and stays when they are freed");
    gpumem_pool_destroy(pool);
}

/* ---- stress ------------------------------------------------------------------------------ */

typedef struct live_t {
    uint64_t lo, hi;
} live_t;

static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static live_t live_set[THREADS * LIVE + 64];
static int live_n;
static atomic_int overlaps, failures;
static char first_failure[1024];

static void fail(void)
{
    if (atomic_fetch_add(&failures, 1) == 0)
        snprintf(first_failure, sizeof first_failure, "%s", gpumem_last_error());
}
static _Atomic uint64_t allocs_total, empties_total;
static gpumem_allocation *_Atomic exchange_slot[THREADS];

static void live_add(uint64_t p, size_t block)
{
    pthread_mutex_lock(&live_lock);
    for (int i = 0; i < live_n; i++)
        if (p < live_set[i].hi && live_set[i].lo < p + block)
            atomic_fetch_add(&overlaps, 1);
    live_set[live_n++] = (live_t){p, p + block};
    pthread_mutex_unlock(&live_lock);
}

static void live_del(uint64_t p)
{
    pthread_mutex_lock(&live_lock);
    for (int i = 0; i < live_n; i++) {
        if (live_set[i].lo == p) {
            live_set[i] = live_set[--live_n];
            break;
        }
    }
    pthread_mutex_unlock(&live_lock);
}

typedef struct stress_arg {
    gpumem_pool *pool;
    int id, iters;
} stress_arg;

static void drop(gpumem_allocation *a, gpumem_stream *s)
{
    uint64_t p = ptr_of(a);
    if (p != 0)
        live_del(p);
    if (gpumem_allocation_free(a, s) != GPUMEM_OK)
        fail();
}

static void *stress(void *v)
{
    stress_arg *arg = v;
    unsigned seed = 1234u + (unsigned)arg->id * 77u;
    gpumem_stream *st = NULL;
    if (gpumem_stream_create(ctx, GPUMEM_STREAM_NON_BLOCKING, &st) != GPUMEM_OK)
        fail();
    gpumem_allocation *mine[LIVE] = {0};
    for (int it = 0; it < arg->iters; it++) {
        if (it % 64 == 63 && gpumem_stream_synchronize(st) != GPUMEM_OK) /* its events complete */
            fail();
        int k = rand_r(&seed) % LIVE;
        int r = rand_r(&seed) % 100;
        gpumem_stream *use = r < 20 ? st : NULL;
        if (mine[k] != NULL) {
            gpumem_allocation *a = mine[k];
            mine[k] = NULL;
            if (r >= 95) { /* hand it to the next thread, which frees it */
                a = atomic_exchange(&exchange_slot[(arg->id + 1) % THREADS], a);
                if (a != NULL) /* not taken yet: ours again */
                    drop(a, NULL);
            } else {
                drop(a, use);
            }
            continue;
        }
        /* Programs reuse a few sizes: mostly those, some at random. */
        static const size_t common[8] = {64, 1000, 4096, 12000, 40000, 65536, 250000, 1 << 20};
        size_t size;
        if (r < 2)
            size = 0;
        else if (r < 4)
            size = (size_t)(rand_r(&seed) % (3 << 20)) + 1; /* shared-store sizes */
        else if (r < 30)
            size = (size_t)(rand_r(&seed) % 65536) + 1;
        else
            size = common[rand_r(&seed) % 8] - (size_t)(rand_r(&seed) % 64);
        gpumem_allocation *theirs = atomic_exchange(&exchange_slot[arg->id], NULL);
        if (theirs != NULL)
            drop(theirs, NULL); /* allocated by the previous thread */
        gpumem_allocation *a = NULL;
        if (gpumem_pool_allocate(arg->pool, size, use, &a) != GPUMEM_OK) {
            fail();
            continue;
        }
        atomic_fetch_add(size ? &allocs_total : &empties_total, 1);
        uint64_t p = ptr_of(a);
        size_t len = 0, block = 0;
        gpumem_allocation_size(a, &len);
        gpumem_pool_block_size(size, &block);
        if (len != size || (size != 0) != (p != 0))
            fail();
        if (p != 0)
            live_add(p, block);
        mine[k] = a;
    }
    for (int k = 0; k < LIVE; k++)
        if (mine[k] != NULL)
            drop(mine[k], NULL);
    if (gpumem_stream_destroy(st) != GPUMEM_OK)
        fail();
    return NULL;
}

static atomic_int stress_done;
static _Atomic uint64_t drains;

/* Empties every thread's cache while the owners use them. */
static void *drainer(void *v)
{
    gpumem_pool *pool = v;
    while (!atomic_load(&stress_done)) {
        struct gpumem_pool_stats s;
        s.size = sizeof s;
        if (gpumem_pool_free_held(pool) != GPUMEM_OK || gpumem_pool_stats(pool, &s) != GPUMEM_OK)
            fail();
        atomic_fetch_add(&drains, 1);
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

/* flags: the pool's (with GPUMEM_POOL_NO_THREAD_CACHE, everything goes
 * through the striped store). */
void test_stress(unsigned flags, int iters)
{
    uint64_t base = used();
    const char *how = flags & GPUMEM_POOL_NO_THREAD_CACHE ? "no thread caches: " : "";
    atomic_store(&overlaps, 0);
    atomic_store(&failures, 0);
    atomic_store(&allocs_total, 0);
    atomic_store(&empties_total, 0);
    atomic_store(&stress_done, 0);
    atomic_store(&drains, 0);
    gpumem_pool *pool = NULL;
    gpumem_pool_create(ctx, flags, &pool);
    pthread_t th[THREADS], dr;
    stress_arg args[THREADS];
    for (int i = 0; i < THREADS; i++) {
        args[i] = (stress_arg){pool, i, iters};
        pthread_create(&th[i], NULL, stress, &args[i]);
    }
    pthread_create(&dr, NULL, drainer, pool);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    atomic_store(&stress_done, 1);
    pthread_join(dr, NULL);
    for (int i = 0; i < THREADS; i++) {
        gpumem_allocation *a = atomic_exchange(&exchange_slot[i], NULL);
        if (a != NULL)
            drop(a, NULL);
    }
    if (!ok(atomic_load(&failures) == 0,
            "%s8 threads, random sizes and streams, cross-thread frees, a 9th emptying the pool: no call failed",
            how))
        diag("first failure: %s", first_failure);
    is_int(atomic_load(&overlaps), 0, "no two live allocations ever overlapped");
    struct gpumem_pool_stats s = stats_of(pool);
    diag("%llu allocations (%llu empty): %llu hits, %llu misses, %llu held, %llu given back by %llu drains, "
         "%llu oom retries, peak %llu bytes",
         (unsigned long long)allocs_total, (unsigned long long)empties_total, (unsigned long long)s.hits,
         (unsigned long long)s.misses, (unsigned long long)s.held_blocks, (unsigned long long)s.driver_frees,
         (unsigned long long)drains, (unsigned long long)s.oom_retries, (unsigned long long)s.peak_active_bytes);
    ok(drains > 0 && s.driver_frees > 0, "the drains gave blocks back while the threads ran");
    ok(s.active_blocks == 0 && s.active_bytes == 0 && s.active_requested_bytes == 0,
       "at the end nothing is active");
    is_int(s.hits + s.misses, allocs_total, "hits + misses = allocations");
    is_int(s.held_blocks, s.misses - s.driver_frees, "held = blocks obtained - blocks given back");
    mem_ok(s.held_bytes == used() - base, "held bytes = the device memory the pool has");
    ok(s.hits > 0 && s.misses > 0, "blocks were reused between the drains (%llu hits)", (unsigned long long)s.hits);
    ok(s.oom_retries == 0, "the device never ran out of memory");
    ok(s.peak_active_bytes > 0 && s.peak_active_bytes <= (uint64_t)THREADS * LIVE * (3 << 20),
       "the peak is at most what the threads can hold");
    is_int(gpumem_pool_destroy(pool), GPUMEM_OK, "destroy");
    mem_ok(used() == base, "all memory is back");
}
