/* Device memory pools: size classes and their padding bound, reuse with the
 * data still there, hits without driver calls, empty allocations, double
 * frees, bad arguments, stream-safe reuse, the out-of-memory ladder,
 * free_held and stop_holding, destroy with live allocations, thread caches
 * of threads that exit or outlive the pool, the striped shared store (other
 * threads' stripes, streams, free_held, stop_holding and destroy while
 * threads free), 8-thread stress tests with and without thread caches, and a
 * fault-injection walk over a pool workload.
 * This file: main, the helpers and the single-threaded sections;
 * pool-threads.c: thread caches, the striped store and the stress tests;
 * pool-faults.c: fault injection and the context's end.
 *
 * Internal: it writes into pooled blocks and queues work on streams through
 * the driver table. */
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

gpumem_context *ctx;
static int sim;

/* Device memory accounting (mem_get_info) is exact on the simulator only. */
void mem_ok(int cond, const char *name)
{
    if (sim)
        ok(cond, "%s", name);
    else
        skip(1, "device memory accounting is exact on the simulator only");
}

int dev_write(uint64_t d, const void *src, size_t n)
{
    return GM_DRV(memcpy, ctx->dctx, d, (uintptr_t)src, n, NULL, 0);
}

static int dev_read(void *dst, uint64_t d, size_t n)
{
    return GM_DRV(memcpy, ctx->dctx, (uintptr_t)dst, d, n, NULL, 0);
}

uint64_t used(void)
{
    size_t f = 0, t = 0;
    GM_DRV(mem_get_info, ctx->dctx, &f, &t);
    return t - f;
}

struct gpumem_pool_stats stats_of(gpumem_pool *p)
{
    struct gpumem_pool_stats s;
    memset(&s, 0xff, sizeof s);
    s.size = sizeof s;
    if (gpumem_pool_stats(p, &s) != GPUMEM_OK)
        bail_out("gpumem_pool_stats: %s", gpumem_last_error());
    return s;
}

uint64_t ptr_of(const gpumem_allocation *a)
{
    uint64_t p = 0;
    return gpumem_allocation_pointer(a, &p) == GPUMEM_OK ? p : 0;
}

/* A host function that holds its stream until released: pending work that
 * is deterministic on the simulator and on a GPU. */
atomic_int gate;
void gate_fn(void *arg)
{
    (void)arg;
    while (!atomic_load(&gate))
        ;
}

/* ---- size classes ------------------------------------------------------------------- */

static int class_ok(size_t size, size_t *worst_small, double *worst_ratio)
{
    size_t b = 0;
    if (gpumem_pool_block_size(size, &b) != GPUMEM_OK || b < size || b % 256 != 0)
        return 0;
    size_t pad = b - size;
    if (size <= 4096) {
        if (pad > 255)
            return 0;
        if (pad > *worst_small)
            *worst_small = pad;
    } else {
        if (pad * 16 >= size) /* strictly below 6.25% */
            return 0;
        double r = (double)pad / (double)size;
        if (r > *worst_ratio)
            *worst_ratio = r;
    }
    return 1;
}

static void test_classes(void)
{
    size_t worst_small = 0, prev = 0, b = 0;
    double worst = 0;
    int good = 1, mono = 1;
    for (size_t s = 1; s <= (1u << 20); s++) {
        good &= class_ok(s, &worst_small, &worst);
        gpumem_pool_block_size(s, &b);
        mono &= b >= prev;
        prev = b;
    }
    ok(good, "sizes 1 B..1 MiB: blocks are multiples of 256, padding <= 255 B up to 4 KiB, < 6.25%% above");
    ok(mono, "block sizes grow with the size");
    srand(7);
    for (unsigned k = 20; k < 63; k++) {
        size_t p2 = (size_t)1 << k;
        good &= class_ok(p2 - 1, &worst_small, &worst) && class_ok(p2, &worst_small, &worst) &&
                class_ok(p2 + 1, &worst_small, &worst);
        for (int i = 0; i < 200; i++) {
            size_t r = p2 + ((((size_t)rand() << 31) ^ (size_t)rand()) & (p2 - 1));
            good &= class_ok(r, &worst_small, &worst);
        }
    }
    good &= class_ok(GM_POOL_MAX_SIZE, &worst_small, &worst);
    ok(good, "around every power of two up to 2^63, and at random, the bound holds");
    diag("worst padding: %zu bytes up to 4 KiB, %.4f%% above", worst_small, worst * 100);
    ok(worst > 0.062, "and it is tight: the worst padding approaches 6.25%%");
    gpumem_pool_block_size(4096, &b);
    is_int(b, 4096, "powers of two are exact (4096)");
    gpumem_pool_block_size((size_t)1 << 40, &b);
    is_int(b, (size_t)1 << 40, "powers of two are exact (2^40)");
    gpumem_pool_block_size(8193, &b);
    is_int(b, 8704, "8193 takes a block of 8704 (16 classes per power of two above 8 KiB)");
    gpumem_pool_block_size(0, &b);
    is_int(b, 0, "size 0 takes no block");
    is_int(gpumem_pool_block_size(GM_POOL_MAX_SIZE + 1, &b), GPUMEM_ERROR_OVERFLOW,
           "a size above half the address space overflows the class computation");
    is_int(gpumem_pool_block_size(SIZE_MAX, &b), GPUMEM_ERROR_OVERFLOW, "SIZE_MAX too");
    is_int(gpumem_pool_block_size(1, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "NULL block_size");
}

/* ---- basics ---------------------------------------------------------------------------- */

static void test_basics(void)
{
    gpumem_pool *pool = NULL;
    is_int(gpumem_pool_create(ctx, 0x4, &pool), GPUMEM_ERROR_INVALID_VALUE, "unknown flags are refused");
    like(gpumem_last_error(), "flags", "the message names the flags");
    is_int(gpumem_pool_create(ctx, 0, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "NULL pool out-parameter");
    is_int(gpumem_pool_create(ctx, 0, &pool), GPUMEM_OK, "create a pool");
    gpumem_context *pc = NULL;
    gpumem_pool_context(pool, &pc);
    ok(pc == ctx, "it belongs to its context");

    gpumem_allocation *a = NULL, *b = NULL;
    is_int(gpumem_pool_allocate(pool, 1000, NULL, &a), GPUMEM_OK, "allocate 1000 bytes");
    uint64_t pa = ptr_of(a);
    size_t len = 0;
    gpumem_allocation_size(a, &len);
    ok(pa != 0 && len == 1000, "int() is a device address and len() the size asked for");
    struct gpumem_pool_stats s = stats_of(pool);
    ok(s.active_blocks == 1 && s.active_bytes == 1024 && s.active_requested_bytes == 1000 && s.misses == 1 &&
           s.held_blocks == 0,
       "stats: 1 active block of 1024 bytes for 1000 asked, 1 miss");
    unsigned char in[1000], out[1000];
    for (int i = 0; i < 1000; i++)
        in[i] = (unsigned char)(i * 7 + 3);
    dev_write(pa, in, sizeof in);
    memset(out, 0, sizeof out);
    dev_read(out, pa, sizeof out);
    ok(memcmp(in, out, sizeof in) == 0, "data written into the block reads back");
    void *hp = NULL;
    is_int(gpumem_allocation_host_pointer(a, &hp), GPUMEM_ERROR_INVALID_VALUE,
           "a device allocation has no host pointer");

    is_int(gpumem_allocation_free(a, NULL), GPUMEM_OK, "free it");
    uint64_t held = 0, active = 9;
    gpumem_pool_held_blocks(pool, &held);
    gpumem_pool_active_blocks(pool, &active);
    ok(held == 1 && active == 0, "held_blocks 1, active_blocks 0");
    is_int(gpumem_pool_allocate(pool, 900, NULL, &b), GPUMEM_OK, "allocate 900 bytes (the same class)");
    ok(ptr_of(b) == pa, "the held block is reused");
    memset(out, 0, sizeof out);
    dev_read(out, ptr_of(b), 900);
    ok(memcmp(in, out, 900) == 0, "with its data (a pool does not clear memory)");
    s = stats_of(pool);
    ok(s.hits == 1 && s.misses == 1 && s.active_requested_bytes == 900 && s.peak_active_bytes == 1024,
       "1 hit, 1 miss, peak 1024 bytes");
    is_int(gpumem_allocation_free(b, NULL), GPUMEM_OK, "free it again (compute-sanitizer found it leaked)");

    /* Hits make no driver calls. */
    uint64_t c0 = 0, c1 = 0;
    gpumem_allocation *t[8];
    for (size_t size = 3000; size <= 4096; size += 256) { /* one block of each class used below */
        gpumem_pool_allocate(pool, size, NULL, &t[0]);
        gpumem_allocation_free(t[0], NULL);
    }
    gpumem_debug_driver_calls(NULL, &c0);
    int good = 1;
    for (int i = 0; i < 10000; i++) {
        good &= gpumem_pool_allocate(pool, 3000 + (size_t)(i % 1000), NULL, &t[0]) == GPUMEM_OK;
        good &= gpumem_allocation_free(t[0], NULL) == GPUMEM_OK;
    }
    gpumem_debug_driver_calls(NULL, &c1);
    ok(good && c1 == c0, "10000 allocate+free pairs on held blocks make no driver call (%llu)",
       (unsigned long long)(c1 - c0));

    /* Empty allocations: pointer 0, no block, freed once. */
    gpumem_allocation *e = NULL;
    uint64_t n0 = 0;
    gpumem_debug_driver_calls(NULL, &n0);
    is_int(gpumem_pool_allocate(pool, 0, NULL, &e), GPUMEM_OK, "size 0 is a valid empty allocation");
    len = 9;
    gpumem_allocation_size(e, &len);
    ok(e != NULL && ptr_of(e) == 0 && len == 0, "its pointer is 0 and its size 0");
    gpumem_pool_active_blocks(pool, &active);
    is_int(active, 0, "it is not an active block");
    is_int(gpumem_allocation_free(e, NULL), GPUMEM_OK, "free it");
    uint64_t n1 = 0;
    gpumem_debug_driver_calls(NULL, &n1);
    ok(n1 == n0, "without any driver call");
    is_int(gpumem_allocation_free(e, NULL), GPUMEM_ERROR_INVALID_STATE, "freeing it again is an error");

    /* Double frees: a dead handle stays dead, also once its block is reused. */
    gpumem_allocation *x = NULL, *y = NULL;
    gpumem_pool_allocate(pool, 5000, NULL, &x);
    uint64_t px = ptr_of(x);
    is_int(gpumem_allocation_free(x, NULL), GPUMEM_OK, "free an allocation");
    is_int(gpumem_allocation_free(x, NULL), GPUMEM_ERROR_INVALID_STATE, "a second free is INVALID_STATE");
    like(gpumem_last_error(), "freed already", "the message says so");
    uint64_t v = 0;
    is_int(gpumem_allocation_pointer(x, &v), GPUMEM_ERROR_INVALID_STATE, "a dead handle has no pointer");
    is_int(gpumem_allocation_size(x, &len), GPUMEM_ERROR_INVALID_STATE, "nor a size");
    gpumem_pool_allocate(pool, 5000, NULL, &y);
    ok(ptr_of(y) == px && y != x, "the block is handed out again, under a new handle");
    is_int(gpumem_allocation_free(x, NULL), GPUMEM_ERROR_INVALID_STATE,
           "the old handle still cannot free it");
    ok(ptr_of(y) == px, "and the new allocation is untouched");
    is_int(gpumem_allocation_free(y, NULL), GPUMEM_OK, "the new handle frees it");
    is_int(gpumem_allocation_free((gpumem_allocation *)(uintptr_t)0x12345, NULL), GPUMEM_ERROR_INVALID_VALUE,
           "a value that was never a handle is INVALID_VALUE");
    is_int(gpumem_allocation_free(NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "NULL allocation");

    /* Bad arguments. */
    is_int(gpumem_pool_allocate(NULL, 10, NULL, &x), GPUMEM_ERROR_NULL_ARGUMENT, "NULL pool");
    like(gpumem_last_error(), "'pool'", "names the argument");
    is_int(gpumem_pool_allocate(pool, 10, NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "NULL out-parameter");
    is_int(gpumem_pool_allocate(pool, SIZE_MAX, NULL, &x), GPUMEM_ERROR_OVERFLOW,
           "SIZE_MAX overflows the class computation");
    is_int(gpumem_pool_allocate(pool, GM_POOL_MAX_SIZE + 1, NULL, &x), GPUMEM_ERROR_OVERFLOW,
           "so does 2^63 + 1");
    is_int(gpumem_pool_allocate(pool, GM_POOL_MAX_SIZE, NULL, &x), GPUMEM_ERROR_OUT_OF_MEMORY,
           "2^63 has a class, but no device has the memory");
    like(gpumem_last_error(), "asked for 9223372036854775808 bytes", "the message says how much was asked for");
    struct gpumem_pool_stats small;
    small.size = 4;
    is_int(gpumem_pool_stats(pool, &small), GPUMEM_ERROR_INVALID_VALUE, "stats with a too small size field");
    like(gpumem_last_error(), "sizeof(struct gpumem_pool_stats)", "the message says what to set");
    gpumem_pool_allocate(pool, 5000, NULL, &x);
    gpumem_allocation_free(x, NULL);
    struct gpumem_pool_stats now = stats_of(pool);
    struct {
        struct gpumem_pool_stats s;
        uint64_t later[2];
    } big;
    memset(&big, 0xff, sizeof big);
    big.s.size = sizeof big;
    is_int(gpumem_pool_stats(pool, &big.s), GPUMEM_OK, "stats from a caller of a later version");
    ok(big.later[0] == 0 && big.later[1] == 0 && big.s.size == sizeof big && big.s.hits == now.hits &&
           big.s.held_blocks == 1,
       "fields this version does not know are zeroed; size is left alone");
    struct gpumem_pool_stats old;
    memset(&old, 0xff, sizeof old);
    old.size = offsetof(struct gpumem_pool_stats, active_blocks);
    gpumem_pool_stats(pool, &old);
    ok(old.held_blocks == 1 && old.held_bytes == 5120 && old.active_blocks == UINT64_MAX,
       "a caller of an older version gets only the fields it knows");
    is_int(gpumem_pool_stats(pool, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "NULL stats");
    is_int(gpumem_pool_held_blocks(pool, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "NULL count");
    is_int(gpumem_pool_free_held(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "free_held(NULL)");
    is_int(gpumem_pool_destroy(NULL), GPUMEM_OK, "destroy(NULL) is a no-op");

    is_int(gpumem_pool_destroy(pool), GPUMEM_OK, "destroy the pool");
}

/* ---- streams ------------------------------------------------------------------------- */

static void test_streams(void)
{
    gpumem_pool *pool = NULL;
    gpumem_stream *s = NULL, *t = NULL, *dflt = NULL;
    gpumem_pool_create(ctx, 0, &pool);
    gpumem_stream_create(ctx, GPUMEM_STREAM_NON_BLOCKING, &s);
    gpumem_stream_create(ctx, GPUMEM_STREAM_NON_BLOCKING, &t);
    gpumem_stream_default(ctx, &dflt);
    enum { N = 4096 };

    /* X gets work queued on S (held back by the gate), then is freed on S. */
    gpumem_allocation *x = NULL, *y = NULL, *z = NULL, *x2 = NULL;
    is_int(gpumem_pool_allocate(pool, N, s, &x), GPUMEM_OK, "allocate X on stream S");
    uint64_t px = ptr_of(x);
    atomic_store(&gate, 0);
    GM_DRV(launch_host_func, ctx->dctx, gm_stream_ds(s), gate_fn, NULL);
    is_int(GM_DRV(memset, ctx->dctx, px, 0x5A, 1, N, gm_stream_ds(s), 1), 0, "queue a memset of X on S");
    uint64_t ev0 = 0, ev1 = 0;
    gpumem_debug_driver_calls("cuEventRecord", &ev0);
    is_int(gpumem_allocation_free(x, s), GPUMEM_OK, "free X on S with the work pending");
    gpumem_debug_driver_calls("cuEventRecord", &ev1);
    is_int(ev1 - ev0, 1, "the free recorded one event on S");
    is_int(gpumem_pool_allocate(pool, N, t, &y), GPUMEM_OK, "allocate on stream T");
    ok(ptr_of(y) != px, "T does not get X while S's work is pending");
    is_int(gpumem_pool_allocate(pool, N, NULL, &z), GPUMEM_OK, "allocate for synchronous use");
    ok(ptr_of(z) != px, "nor does a synchronous allocation");
    is_int(gpumem_pool_allocate(pool, N, s, &x2), GPUMEM_OK, "allocate on S");
    ok(ptr_of(x2) == px, "S gets X at once: its work is ordered after the pending memset");
    atomic_store(&gate, 1);
    is_int(gpumem_stream_synchronize(s), GPUMEM_OK, "release and synchronize S");
    unsigned char out[N];
    dev_read(out, px, N);
    int all = 1;
    for (int i = 0; i < N; i++)
        all &= out[i] == 0x5A;
    ok(all, "the memset landed in X");

    /* Freed on S again; reused on T once the event has completed. */
    atomic_store(&gate, 0);
    GM_DRV(launch_host_func, ctx->dctx, gm_stream_ds(s), gate_fn, NULL);
    gpumem_allocation_free(x2, s);
    gpumem_allocation *w = NULL;
    gpumem_pool_allocate(pool, N, t, &w);
    ok(ptr_of(w) != px, "while S is held back, T still gets another block");
    atomic_store(&gate, 1);
    gpumem_stream_synchronize(s);
    gpumem_allocation *u = NULL;
    gpumem_pool_allocate(pool, N, t, &u);
    ok(ptr_of(u) == px, "once S's event has completed, T gets X");
    gpumem_allocation_free(u, NULL);
    gpumem_allocation_free(w, NULL);

    /* The legacy default stream is a stream like the others. */
    gpumem_allocation *d1 = NULL, *d2 = NULL;
    gpumem_pool_allocate(pool, 70000, dflt, &d1);
    uint64_t pd = ptr_of(d1);
    atomic_store(&gate, 0);
    GM_DRV(launch_host_func, ctx->dctx, NULL, gate_fn, NULL);
    gpumem_allocation_free(d1, dflt);
    gpumem_pool_allocate(pool, 70000, dflt, &d2);
    ok(ptr_of(d2) == pd, "a block freed on the default stream is reused at once on it");
    gpumem_allocation_free(d2, dflt);

    /* Held blocks with pending work are given back after it. */
    struct gpumem_pool_stats st = stats_of(pool);
    ok(st.held_blocks >= 2, "the pool holds %llu blocks", (unsigned long long)st.held_blocks);
    atomic_store(&gate, 1);
    is_int(gpumem_pool_free_held(pool), GPUMEM_OK, "free_held waits for their events and frees them");
    st = stats_of(pool);
    ok(st.held_blocks == 0 && st.held_bytes == 0, "nothing is held");

    /* Streams of another context. */
    gpumem_context *other = NULL;
    int count = 0;
    gpumem_device_count(&count);
    if (count >= 2 && gpumem_context_create(1, &other) == GPUMEM_OK) {
        gpumem_stream *o = NULL;
        gpumem_stream_create(other, 0, &o);
        gpumem_allocation *q = NULL;
        is_int(gpumem_pool_allocate(pool, 100, o, &q), GPUMEM_ERROR_CONTEXT_MISMATCH,
               "allocating on a stream of another context");
        gpumem_pool_allocate(pool, 100, NULL, &q);
        is_int(gpumem_allocation_free(q, o), GPUMEM_ERROR_CONTEXT_MISMATCH, "freeing on one");
        like(gpumem_last_error(), "'alloc'", "names the allocation");
        is_int(gpumem_allocation_free(q, NULL), GPUMEM_OK, "the allocation stayed live and frees");
        gpumem_stream_destroy(o);
        gpumem_context_release(other);
    } else {
        skip(4, "needs two devices");
    }

    gpumem_allocation_free(y, NULL);
    gpumem_allocation_free(z, NULL);
    gpumem_stream_destroy(s);
    gpumem_stream_destroy(t);
    is_int(gpumem_pool_destroy(pool), GPUMEM_OK, "destroy the pool");
}

/* ---- out of memory ------------------------------------------------------------------ */

static void test_oom(void)
{
    const size_t M = (size_t)1 << 20;
    gpumem_pool *pool = NULL;
    gpumem_pool_create(ctx, 0, &pool);
    uint64_t base = used();
    gpumem_allocation *a[3], *big = NULL, *huge = NULL;
    for (int i = 0; i < 3; i++)
        gpumem_pool_allocate(pool, 16 * M, NULL, &a[i]);
    for (int i = 0; i < 3; i++)
        gpumem_allocation_free(a[i], NULL);
    struct gpumem_pool_stats s = stats_of(pool);
    ok(s.held_bytes == 48 * M && used() - base == 48 * M, "the pool holds 48 MiB of 64 in freed blocks");
    is_int(gpumem_pool_allocate(pool, 32 * M, NULL, &big), GPUMEM_OK,
           "32 MiB more: the driver refuses, the pool releases what it holds and retries");
    s = stats_of(pool);
    ok(s.oom_retries == 1 && s.held_blocks == 0 && s.driver_frees == 3,
       "one retry, all 3 held blocks released at once");
    is_int(used() - base, 32 * M, "only the new block is in use");
    is_int(gpumem_pool_allocate(pool, 100 * M, NULL, &huge), GPUMEM_ERROR_OUT_OF_MEMORY,
           "100 MiB fails after the ladder");
    const char *msg = gpumem_last_error();
    like(msg, "asked for 104857600 bytes", "the message says how much was asked for");
    like(msg, "the ladder gave back 0 B (0 pool blocks of 0 B, 0 deferred frees of 0 B)",
         "what the ladder gave back (it had nothing left to give)");
    like(msg, "live: device 32 MiB in 1 (", "what is in use");
    like(msg, ": 32 MiB free of 64 MiB, others about 0 B;", "what the device has free");
    like(msg, "cause: larger than the device (more than its total memory)", "and why: 100 MiB of a 64 MiB device");
    like(msg, "CUDA_ERROR_OUT_OF_MEMORY", "and the driver's error");
    is_int(stats_of(pool).oom_retries, 2, "the retry is counted");

    /* The ladder flushes the context's deferred frees between releasing
     * and retrying. */
    gpumem_allocation_free(big, NULL);
    gpumem_context_set_dealloc_limits(ctx, 100, 1.0);
    int64_t n24 = (int64_t)(24 * M);
    gpumem_array *dv = NULL;
    gpumem_device_array(ctx, 1, &n24, NULL, gpumem_dtype_builtin(GPUMEM_UINT8), 'C', NULL, &dv);
    gpumem_array_release(dv); /* 24 MiB waiting in the deferred-free queue */
    size_t pending = 0;
    gpumem_context_pending_deallocations(ctx, &pending, NULL);
    is_int(pending, 1, "a 24 MiB array's free is deferred");
    gpumem_allocation *c = NULL;
    is_int(gpumem_pool_allocate(pool, 48 * M, NULL, &c), GPUMEM_OK,
           "48 MiB with 32 held and 24 waiting to be freed: succeeds after the flush");
    gpumem_context_pending_deallocations(ctx, &pending, NULL);
    is_int(pending, 0, "the ladder flushed the deferred frees");
    gpumem_allocation_free(c, NULL);
    gpumem_context_set_dealloc_limits(ctx, 10, 0.2);
    gpumem_pool_destroy(pool);
    is_int(used(), base, "all memory is back");
}

/* ---- free_held, stop_holding, lifetime ----------------------------------------------- */

static void test_holding(void)
{
    gpumem_pool *pool = NULL;
    gpumem_pool_create(ctx, 0, &pool);
    uint64_t base = used();
    gpumem_allocation *a[4];
    size_t sizes[4] = {100, 5000, 300000, 3 << 20};
    for (int i = 0; i < 4; i++)
        gpumem_pool_allocate(pool, sizes[i], NULL, &a[i]);
    for (int i = 0; i < 4; i++)
        gpumem_allocation_free(a[i], NULL);
    uint64_t held = 0;
    gpumem_pool_held_blocks(pool, &held);
    is_int(held, 4, "4 blocks held (thread cache and shared store)");
    is_int(gpumem_pool_free_held(pool), GPUMEM_OK, "free_held");
    gpumem_pool_held_blocks(pool, &held);
    is_int(held, 0, "nothing is held");
    mem_ok(used() == base, "the memory is back with the driver");
    gpumem_pool_allocate(pool, 100, NULL, &a[0]);
    gpumem_allocation_free(a[0], NULL);
    gpumem_pool_held_blocks(pool, &held);
    is_int(held, 1, "after free_held the pool holds again");

    is_int(gpumem_pool_stop_holding(pool), GPUMEM_OK, "stop_holding");
    gpumem_pool_held_blocks(pool, &held);
    is_int(held, 0, "it released what it held");
    mem_ok(used() == base, "to the driver");
    uint64_t f0 = stats_of(pool).driver_frees;
    int good = 1;
    for (int i = 0; i < 4; i++)
        good &= gpumem_pool_allocate(pool, sizes[i], NULL, &a[i]) == GPUMEM_OK;
    ok(good, "it still allocates");
    for (int i = 0; i < 4; i++)
        gpumem_allocation_free(a[i], NULL);
    gpumem_pool_held_blocks(pool, &held);
    struct gpumem_pool_stats s = stats_of(pool);
    ok(held == 0 && s.driver_frees == f0 + 4, "frees go straight to the driver");
    mem_ok(used() == base, "and the memory with them");
    gpumem_pool_destroy(pool);

    /* Destroy with live allocations: they stay valid; the last free ends the pool. */
    int r0 = 0, r1 = 0, r2 = 0;
    gpumem_context_refcount(ctx, &r0);
    gpumem_pool_create(ctx, 0, &pool);
    gpumem_context_refcount(ctx, &r1);
    is_int(r1, r0 + 1, "a pool holds a context reference");
    gpumem_allocation *live1 = NULL, *live2 = NULL, *e = NULL, *h = NULL;
    gpumem_pool_allocate(pool, 2048, NULL, &live1);
    gpumem_pool_allocate(pool, 5 << 20, NULL, &live2);
    gpumem_pool_allocate(pool, 0, NULL, &e);
    gpumem_pool_allocate(pool, 2048, NULL, &h);
    gpumem_allocation_free(h, NULL);
    uint64_t before = used();
    is_int(gpumem_pool_destroy(pool), GPUMEM_OK, "destroy a pool with 3 live allocations");
    mem_ok(used() == before - 2048, "the held block went back at once");
    unsigned char in[2048], out[2048];
    memset(in, 0x3C, sizeof in);
    uint64_t p1 = ptr_of(live1);
    ok(p1 != 0, "a live allocation still has its pointer");
    dev_write(p1, in, sizeof in);
    dev_read(out, p1, sizeof out);
    ok(memcmp(in, out, sizeof in) == 0, "and its memory works");
    is_int(gpumem_allocation_free(live1, NULL), GPUMEM_OK, "free it");
    mem_ok(used() == before - 4096, "its block goes straight to the driver");
    is_int(gpumem_allocation_free(e, NULL), GPUMEM_OK, "free the empty one");
    gpumem_context_refcount(ctx, &r2);
    is_int(r2, r0 + 1, "the pool lives on while an allocation does");
    is_int(gpumem_allocation_free(live2, NULL), GPUMEM_OK, "free the last one");
    gpumem_context_refcount(ctx, &r2);
    is_int(r2, r0, "the pool ended: its context reference is back");
    mem_ok(used() == base, "and all its memory");
    is_int(gpumem_allocation_free(live2, NULL), GPUMEM_ERROR_INVALID_STATE,
           "a handle of the ended pool is still recognized as freed");
}

int main(void)
{
    sim = test_on_sim();
    /* These fork: before this process touches the library. */
    if (sim) {
        test_context_end();
        test_faults();
        setenv("GPUMEM_SIM_MEMORY", "64M", 1); /* the OOM ladder on a small device */
        run_tap_child(test_oom);
        unsetenv("GPUMEM_SIM_MEMORY");
    } else {
        skip(15, "page-locked bytes and stream workers are counted by the simulator");
        skip(5, "fault injection walks run on the simulator");
        skip(13, "the out-of-memory ladder runs on the simulator's 64 MiB device");
    }
    if (sim) {
        setenv("GPUMEM_SIM_DEVICES", "2", 1);
        setenv("GPUMEM_SIM_STREAM_DELAY_US", "200000", 1);
    }
    if (gpumem_context_create(0, &ctx) != GPUMEM_OK)
        bail_out("no context: %s", gpumem_last_error());
    test_classes();
    test_basics();
    test_streams();
    test_holding();
    test_thread_caches();
    test_stripes();
    /* Under a sanitizer (make check-asan, check-tsan) each operation costs
     * tens of times more: fewer rounds, the same interleavings. */
    int iters = getenv("GPUMEM_TEST_SANITIZER") != NULL ? ITERS / 5 : ITERS;
    test_stress(0, iters);
    test_stress(GPUMEM_POOL_NO_THREAD_CACHE, iters / 2);
    gpumem_context_release(ctx);
    done_testing();
    return exit_status();
}
