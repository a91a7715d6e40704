/* Page-locked host pools: flags reach cuMemHostAlloc, blocks are reused
 * with their data, freeing really gives page-locked memory back (more than
 * the simulator's limit allocated in total), blocks freed with pending work
 * wait for it, the out-of-memory ladder, double frees, destroy with live
 * allocations, an 8-thread stress test, and a fault-injection walk.
 *
 * Internal: it asks the simulator what the driver saw and queues work on
 * streams through the driver table. */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "child.h"
#include "context.h"
#include "driver.h"
#include "gpumem.h"
#include "gpumem/pool.h"
#include "pool.h"
#include "sim.h"
#include "stream.h"
#include "tap.h"

#define M ((size_t)1 << 20)

static gpumem_context *ctx;
static int sim;

static void sim_ok(int cond, const char *name)
{
    if (sim)
        ok(cond, "%s", name);
    else
        skip(1, "page-locked memory accounting is the simulator's");
}

static struct gpumem_pool_stats stats_of(gpumem_host_pool *p)
{
    struct gpumem_pool_stats s;
    memset(&s, 0xff, sizeof s);
    s.size = sizeof s;
    if (gpumem_host_pool_stats(p, &s) != GPUMEM_OK)
        bail_out("gpumem_host_pool_stats: %s", gpumem_last_error());
    return s;
}

static void *host_of(const gpumem_allocation *a)
{
    void *p = NULL;
    return gpumem_allocation_host_pointer(a, &p) == GPUMEM_OK ? p : NULL;
}

static uint64_t locked(void)
{
    return sim ? gm_sim_host_locked_bytes() : 0;
}

static atomic_int gate;
static void gate_fn(void *arg)
{
    (void)arg;
    while (!atomic_load(&gate))
        ;
}

static void test_basics(void)
{
    gpumem_host_pool *pool = NULL;
    is_int(gpumem_host_pool_create(ctx, 0x8, &pool), GPUMEM_ERROR_INVALID_VALUE, "unknown flags are refused");
    is_int(gpumem_host_pool_create(ctx, 0, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "NULL pool out-parameter");
    is_int(gpumem_host_pool_create(ctx, GPUMEM_HOST_ALLOC_PORTABLE | GPUMEM_HOST_ALLOC_DEVICEMAP, &pool), GPUMEM_OK,
           "a portable, mapped pool (PageLockedAllocator(flags))");
    gpumem_context *pc = NULL;
    gpumem_host_pool_context(pool, &pc);
    ok(pc == ctx, "it belongs to its context");
    ok(gm_pool_alloc_flags(gm_pool_of_host(pool)) == (GPUMEM_HOST_ALLOC_PORTABLE | GPUMEM_HOST_ALLOC_DEVICEMAP),
       "it remembers its flags");

    gpumem_allocation *a = NULL, *b = NULL;
    is_int(gpumem_host_pool_allocate_bytes(pool, 10000, &a), GPUMEM_OK, "allocate 10000 bytes");
    unsigned char *p = host_of(a);
    uint64_t addr = 0;
    size_t len = 0;
    gpumem_allocation_pointer(a, &addr);
    gpumem_allocation_size(a, &len);
    ok(p != NULL && addr == (uint64_t)(uintptr_t)p && len == 10000, "host pointer, int() and len()");
    if (sim) {
        gm_sim_ptr_info info;
        gm_sim_pointer_info((uintptr_t)p, &info);
        ok(info.kind == GM_SIM_MEM_HOST_ALLOC &&
               info.flags == (GM_CU_MEMHOSTALLOC_PORTABLE | GM_CU_MEMHOSTALLOC_DEVICEMAP) && info.size == 10240,
           "the block came from cuMemHostAlloc with the flags, at its class size");
    } else {
        skip(1, "the simulator tells how a block was allocated");
    }
    for (int i = 0; i < 10000; i++)
        p[i] = (unsigned char)(i * 13);
    /* The device reads it through a copy. */
    gm_cu_deviceptr d = 0;
    unsigned char back[10000];
    GM_DRV(mem_alloc, ctx->dctx, &d, 10000);
    GM_DRV(memcpy, ctx->dctx, d, (uintptr_t)p, 10000, NULL, 0);
    GM_DRV(memcpy, ctx->dctx, (uintptr_t)back, d, 10000, NULL, 0);
    GM_DRV(mem_free, ctx->dctx, d);
    ok(memcmp(back, p, sizeof back) == 0, "data written by the CPU travels to the device and back");
    is_int(gpumem_allocation_free(a, NULL), GPUMEM_OK, "free it");
    uint64_t held = 0, active = 9;
    gpumem_host_pool_held_blocks(pool, &held);
    gpumem_host_pool_active_blocks(pool, &active);
    ok(held == 1 && active == 0, "held_blocks 1, active_blocks 0");
    is_int(gpumem_host_pool_allocate_bytes(pool, 9900, &b), GPUMEM_OK, "allocate 9900 bytes (the same class)");
    unsigned char *pb = host_of(b);
    ok(pb != NULL && pb == p && pb[5] == (unsigned char)65, "the block is reused, with its data");
    struct gpumem_pool_stats s = stats_of(pool);
    ok(s.hits == 1 && s.misses == 1 && s.active_blocks == 1 && s.active_bytes == 10240 &&
           s.active_requested_bytes == 9900,
       "stats: 1 hit, 1 miss, 1 active block");

    gpumem_allocation *e = NULL;
    is_int(gpumem_host_pool_allocate_bytes(pool, 0, &e), GPUMEM_OK, "size 0 is a valid empty allocation");
    ok(host_of(e) == NULL, "with a NULL pointer");
    is_int(gpumem_allocation_free(e, NULL), GPUMEM_OK, "free it");
    is_int(gpumem_allocation_free(b, NULL), GPUMEM_OK, "free the block");
    is_int(gpumem_allocation_free(b, NULL), GPUMEM_ERROR_INVALID_STATE, "a second free is INVALID_STATE");
    is_int(gpumem_allocation_size(b, &len), GPUMEM_ERROR_INVALID_STATE, "a dead handle has no size");
    is_int(gpumem_host_pool_allocate_bytes(pool, SIZE_MAX, &a), GPUMEM_ERROR_OVERFLOW, "SIZE_MAX overflows");
    is_int(gpumem_host_pool_allocate_bytes(NULL, 8, &a), GPUMEM_ERROR_NULL_ARGUMENT, "NULL pool");
    is_int(gpumem_host_pool_allocate_bytes(pool, 8, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "NULL out-parameter");
    is_int(gpumem_pool_free_held((gpumem_pool *)(void *)pool), GPUMEM_ERROR_INVALID_VALUE,
           "a host pool passed as a device pool is refused");
    like(gpumem_last_error(), "is a host pool", "the message says what it is");
    is_int(gpumem_host_pool_destroy(NULL), GPUMEM_OK, "destroy(NULL) is a no-op");
    is_int(gpumem_host_pool_destroy(pool), GPUMEM_OK, "destroy the pool");

    gpumem_host_pool *wc = NULL;
    gpumem_host_pool_create(ctx, GPUMEM_HOST_ALLOC_WRITECOMBINED | GPUMEM_POOL_NO_THREAD_CACHE, &wc);
    gpumem_host_pool_allocate_bytes(wc, 100, &a);
    if (sim) {
        gm_sim_ptr_info info;
        gm_sim_pointer_info((uintptr_t)host_of(a), &info);
        is_int(info.flags, GM_CU_MEMHOSTALLOC_WRITECOMBINED, "a write-combined pool's block");
    } else {
        skip(1, "the simulator tells how a block was allocated");
    }
    gpumem_allocation_free(a, NULL);
    gpumem_host_pool_allocate_bytes(wc, 200, &b);
    ok(host_of(b) != NULL && stats_of(wc).hits == 1, "without thread caches blocks are reused too");
    gpumem_allocation_free(b, NULL);
    gpumem_host_pool_destroy(wc);
}

/* Freeing gives page-locked memory back: more than the limit in total. */
static void test_returns_memory(void)
{
    gpumem_host_pool *pool = NULL;
    gpumem_host_pool_create(ctx, 0, &pool);
    uint64_t base = locked();
    gpumem_allocation *a = NULL;
    int good = 1;
    void *first = NULL;
    for (int i = 0; i < 10; i++) {
        good &= gpumem_host_pool_allocate_bytes(pool, 48 * M, &a) == GPUMEM_OK;
        if (i == 0)
            first = host_of(a);
        good &= host_of(a) == first;
        good &= gpumem_allocation_free(a, NULL) == GPUMEM_OK;
    }
    ok(good, "480 MiB allocated and freed in 48 MiB pieces: one block, reused");
    sim_ok(locked() - base == 48 * M, "the pool holds 48 MiB page-locked");
    is_int(gpumem_host_pool_free_held(pool), GPUMEM_OK, "free_held");
    sim_ok(locked() == base, "gives it back to the driver");
    is_int(gpumem_host_pool_stop_holding(pool), GPUMEM_OK, "stop_holding");
    size_t sizes[3] = {48 * M, 40 * M, 30 * M};
    good = 1;
    for (int i = 0; i < 9; i++) {
        good &= gpumem_host_pool_allocate_bytes(pool, sizes[i % 3], &a) == GPUMEM_OK;
        good &= gpumem_allocation_free(a, NULL) == GPUMEM_OK;
    }
    ok(good, "without holding, blocks of 3 sizes (354 MiB in total) come and go under a 64 MiB limit");
    struct gpumem_pool_stats s = stats_of(pool);
    ok(s.held_blocks == 0 && s.driver_frees == 10 && s.misses == 10, "every free went to the driver");
    sim_ok(locked() == base, "nothing stays page-locked");
    gpumem_host_pool_destroy(pool);
}

static void test_streams(void)
{
    gpumem_host_pool *pool = NULL;
    gpumem_stream *s = NULL;
    gpumem_host_pool_create(ctx, 0, &pool);
    gpumem_stream_create(ctx, GPUMEM_STREAM_NON_BLOCKING, &s);
    gm_cu_deviceptr d = 0;
    GM_DRV(mem_alloc, ctx->dctx, &d, 4096);
    gpumem_allocation *x = NULL, *y = NULL, *z = NULL;
    gpumem_host_pool_allocate_bytes(pool, 4096, &x);
    unsigned char *px = host_of(x);
    memset(px, 0x77, 4096);
    atomic_store(&gate, 0);
    GM_DRV(launch_host_func, ctx->dctx, gm_stream_ds(s), gate_fn, NULL);
    is_int(GM_DRV(memcpy, ctx->dctx, d, (uintptr_t)px, 4096, gm_stream_ds(s), 1), 0,
           "queue a copy from block X to the device on S (held back)");
    is_int(gpumem_allocation_free(x, s), GPUMEM_OK, "free X on S");
    gpumem_host_pool_allocate_bytes(pool, 4096, &y);
    ok(host_of(y) != px, "the CPU does not get X while the copy from it is pending");
    atomic_store(&gate, 1);
    gpumem_stream_synchronize(s);
    gpumem_host_pool_allocate_bytes(pool, 4096, &z);
    ok(host_of(z) == px, "once S's event has completed, it does");
    unsigned char out[4096];
    GM_DRV(memcpy, ctx->dctx, (uintptr_t)out, d, 4096, NULL, 0);
    ok(out[0] == 0x77 && out[4095] == 0x77, "and the copy read X's data, not a later owner's");
    gpumem_allocation_free(y, NULL);
    gpumem_allocation_free(z, NULL);
    GM_DRV(mem_free, ctx->dctx, d);
    gpumem_stream_destroy(s);
    gpumem_host_pool_destroy(pool);
}

static void test_oom(void)
{
    gpumem_host_pool *pool = NULL;
    gpumem_host_pool_create(ctx, 0, &pool);
    uint64_t base = locked();
    gpumem_allocation *a[3], *big = NULL;
    for (int i = 0; i < 3; i++)
        gpumem_host_pool_allocate_bytes(pool, 16 * M, &a[i]);
    for (int i = 0; i < 3; i++)
        gpumem_allocation_free(a[i], NULL);
    is_int(locked() - base, 48 * M, "48 MiB of the 64 MiB limit held");
    is_int(gpumem_host_pool_allocate_bytes(pool, 32 * M, &big), GPUMEM_OK,
           "32 MiB more succeeds after the pool releases what it holds");
    struct gpumem_pool_stats s = stats_of(pool);
    ok(s.oom_retries == 1 && s.held_blocks == 0, "one retry, nothing held");
    is_int(gpumem_host_pool_allocate_bytes(pool, 100 * M, &a[0]), GPUMEM_ERROR_HOST_OUT_OF_MEMORY,
           "100 MiB fails with HOST_OUT_OF_MEMORY");
    like(gpumem_last_error(), "out of page-locked host memory: asked for 104857600 bytes",
         "the message says what was asked for");
    like(gpumem_last_error(), "live: pinned 32 MiB in 1 (", "what is in use");
    like(gpumem_last_error(), "; pools: 1, 0 B unused in 0 blocks", "and what the pools hold");
    gpumem_allocation_free(big, NULL);
    gpumem_host_pool_destroy(pool);
    is_int(locked(), base, "all page-locked memory is back");
}

static void test_lifetime(void)
{
    int r0 = 0, r1 = 0;
    gpumem_context_refcount(ctx, &r0);
    gpumem_host_pool *pool = NULL;
    gpumem_host_pool_create(ctx, 0, &pool);
    uint64_t base = locked();
    gpumem_allocation *a = NULL, *h = NULL;
    gpumem_host_pool_allocate_bytes(pool, 3000, &a);
    gpumem_host_pool_allocate_bytes(pool, 3000, &h);
    gpumem_allocation_free(h, NULL);
    is_int(gpumem_host_pool_destroy(pool), GPUMEM_OK, "destroy a pool with a live allocation");
    sim_ok(locked() - base == 4096, "its held block went back at once");
    char *p = host_of(a);
    memset(p, 1, 3000);
    ok(p != NULL && p[2999] == 1, "the live block is still usable");
    gpumem_context_refcount(ctx, &r1);
    is_int(r1, r0 + 1, "the pool lives on");
    is_int(gpumem_allocation_free(a, NULL), GPUMEM_OK, "free the last allocation");
    gpumem_context_refcount(ctx, &r1);
    is_int(r1, r0, "the pool ended");
    sim_ok(locked() == base, "all its page-locked memory is back");
}

enum { THREADS = 8, ITERS = 5000, LIVE = 16 };
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static uintptr_t live_lo[THREADS * LIVE], live_hi[THREADS * LIVE];
static int live_n;
static atomic_int overlaps, failures;
static _Atomic uint64_t allocs_total;

static void *stress(void *v)
{
    gpumem_host_pool *pool = v;
    static atomic_uint next_seed = 99;
    unsigned seed = atomic_fetch_add(&next_seed, 1);
    gpumem_allocation *mine[LIVE] = {0};
    for (int it = 0; it < ITERS + LIVE; it++) {
        int k = it < ITERS ? rand_r(&seed) % LIVE : it - ITERS;
        if (mine[k] != NULL) {
            unsigned char *hp = host_of(mine[k]);
            uintptr_t p = (uintptr_t)hp;
            if (hp == NULL || hp[0] != (unsigned char)(p >> 8)) /* nobody else wrote into it */
                atomic_fetch_add(&overlaps, 1);
            pthread_mutex_lock(&live_lock);
            for (int i = 0; i < live_n; i++)
                if (live_lo[i] == p) {
                    live_n--;
                    live_lo[i] = live_lo[live_n];
                    live_hi[i] = live_hi[live_n];
                    break;
                }
            pthread_mutex_unlock(&live_lock);
            if (gpumem_allocation_free(mine[k], NULL) != GPUMEM_OK)
                atomic_fetch_add(&failures, 1);
            mine[k] = NULL;
            continue;
        }
        if (it >= ITERS)
            continue;
        size_t size = (size_t)(rand_r(&seed) % 20000) + 1, block = 0;
        gpumem_pool_block_size(size, &block);
        if (gpumem_host_pool_allocate_bytes(pool, size, &mine[k]) != GPUMEM_OK) {
            atomic_fetch_add(&failures, 1);
            continue;
        }
        atomic_fetch_add(&allocs_total, 1);
        unsigned char *hp = host_of(mine[k]);
        uintptr_t p = (uintptr_t)hp;
        if (hp != NULL)
            hp[0] = (unsigned char)(p >> 8);
        pthread_mutex_lock(&live_lock);
        for (int i = 0; i < live_n; i++)
            if (p < live_hi[i] && live_lo[i] < p + block)
                atomic_fetch_add(&overlaps, 1);
        live_lo[live_n] = p;
        live_hi[live_n++] = p + block;
        pthread_mutex_unlock(&live_lock);
    }
    return NULL;
}

static void test_stress(void)
{
    gpumem_host_pool *pool = NULL;
    gpumem_host_pool_create(ctx, 0, &pool);
    uint64_t base = locked();
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, stress, pool);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    is_int(atomic_load(&failures), 0, "8 threads allocate and free random sizes: no call failed");
    is_int(atomic_load(&overlaps), 0, "no two live blocks overlapped, nobody wrote into another's");
    struct gpumem_pool_stats s = stats_of(pool);
    ok(s.active_blocks == 0 && s.active_bytes == 0, "at the end nothing is active");
    is_int(s.hits + s.misses, allocs_total, "hits + misses = allocations");
    is_int(s.held_blocks, s.misses - s.driver_frees, "held = blocks obtained - blocks given back");
    sim_ok(locked() - base >= s.held_bytes && locked() - base < s.held_bytes + s.held_blocks * 4096,
           "held bytes = the page-locked memory the pool has (page-rounded)");
    gpumem_host_pool_destroy(pool);
    sim_ok(locked() == base, "destroy gives it all back");
}

/* Misses, a free recorded on a stream, a hit that queries its event, the
 * out-of-memory ladder, free_held, stop_holding, destroy with a live block. */
static gpumem_status workload(void)
{
    gpumem_status st = GPUMEM_OK;
    gpumem_host_pool *pool = NULL;
    gpumem_stream *s = NULL;
    gpumem_allocation *a = NULL, *b = NULL, *m[3] = {NULL, NULL, NULL};
    fault_msg[0] = '\0';
    FAULT_FIRST(gpumem_stream_create(ctx, 0, &s));
    FAULT_FIRST(gpumem_host_pool_create(ctx, GPUMEM_HOST_ALLOC_PORTABLE, &pool));
    if (pool == NULL)
        goto done;
    FAULT_FIRST(gpumem_host_pool_allocate_bytes(pool, 5000, &a));
    if (a != NULL) {
        FAULT_FIRST(gpumem_allocation_free(a, s));
        a = NULL;
    }
    FAULT_FIRST(gpumem_host_pool_allocate_bytes(pool, 5000, &b)); /* queries the event */
    for (int i = 0; i < 3; i++)
        FAULT_FIRST(gpumem_host_pool_allocate_bytes(pool, 16 * M, &m[i]));
    for (int i = 0; i < 3; i++)
        if (m[i] != NULL)
            FAULT_FIRST(gpumem_allocation_free(m[i], i == 0 ? s : NULL));
    FAULT_FIRST(gpumem_host_pool_allocate_bytes(pool, 32 * M, &a)); /* the ladder */
    if (a != NULL) {
        FAULT_FIRST(gpumem_allocation_free(a, NULL));
        a = NULL;
    }
    FAULT_FIRST(gpumem_host_pool_free_held(pool));
    FAULT_FIRST(gpumem_host_pool_stop_holding(pool));
    FAULT_FIRST(gpumem_host_pool_allocate_bytes(pool, 100, &a));
    if (a != NULL) {
        FAULT_FIRST(gpumem_allocation_free(a, s));
        a = NULL;
    }
    FAULT_FIRST(gpumem_host_pool_destroy(pool));
    pool = NULL;
done:
    if (b != NULL)
        FAULT_FIRST(gpumem_allocation_free(b, NULL));
    if (pool != NULL)
        FAULT_FIRST(gpumem_host_pool_destroy(pool));
    FAULT_FIRST(gpumem_stream_destroy(s));
    return st;
}

static void fault_child(const void *arg, child_result *out)
{
    long k = *(const long *)arg;
    setenv("GPUMEM_SIM_STREAM_DELAY_US", "200000", 1);
    setenv("GPUMEM_SIM_HOST_MEMORY", "64M", 1);
    if (gpumem_context_create(0, &ctx) != GPUMEM_OK) {
        out->status = -1;
        return;
    }
    sim = 1;
    uint64_t l0 = locked(), calls0 = fault_arm(k);
    out->status = workload();
    out->value[0] = fault_disarm(calls0);
    snprintf(out->text, sizeof out->text, "%s", fault_msg);
    out->value[1] = (long)(locked() - l0);
    gpumem_context_release(ctx);
}

static void test_faults(void)
{
    fault_walk_all(fault_child, "the host pool workload", 16, "page-locked", "cuMemFreeHost");
}

int main(void)
{
    sim = test_on_sim();
    if (sim)
        test_faults(); /* forks: before this process touches the library */
    else
        skip(5, "fault injection walks run on the simulator");
    if (sim) {
        setenv("GPUMEM_SIM_HOST_MEMORY", "64M", 1);
        setenv("GPUMEM_SIM_STREAM_DELAY_US", "200000", 1);
    }
    if (gpumem_context_create(0, &ctx) != GPUMEM_OK)
        bail_out("no context: %s", gpumem_last_error());
    test_basics();
    test_returns_memory();
    test_streams();
    if (sim)
        test_oom();
    else
        skip(7, "the out-of-memory ladder runs under the simulator's 64 MiB page-locked limit");
    test_lifetime();
    test_stress();
    gpumem_context_release(ctx);
    done_testing();
    return exit_status();
}
