/* Device memory pools: size classes and their padding bound, reuse with the
 * data still there, hits without driver calls, empty allocations, double
 * frees, bad arguments, stream-safe reuse, the out-of-memory ladder,
 * free_held and stop_holding, destroy with live allocations, thread caches
 * of threads that exit or outlive the pool, the striped shared store (other
 * threads' stripes, streams, free_held, stop_holding and destroy while
 * threads free), 8-thread stress tests with and without thread caches, and a
 * fault-injection walk over a pool workload.
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

static gpumem_context *ctx;
static int sim;

/* Device memory accounting (mem_get_info) is exact on the simulator only. */
static void mem_ok(int cond, const char *name)
{
    if (sim)
        ok(cond, "%s", name);
    else
        skip(1, "device memory accounting is exact on the simulator only");
}

static int dev_write(uint64_t d, const void *src, size_t n)
{
    return GM_DRV(memcpy, ctx->dctx, d, (uintptr_t)src, n, NULL, 0);
}

static int dev_read(void *dst, uint64_t d, size_t n)
{
    return GM_DRV(memcpy, ctx->dctx, (uintptr_t)dst, d, n, NULL, 0);
}

static uint64_t used(void)
{
    size_t f = 0, t = 0;
    GM_DRV(mem_get_info, ctx->dctx, &f, &t);
    return t - f;
}

static struct gpumem_pool_stats stats_of(gpumem_pool *p)
{
    struct gpumem_pool_stats s;
    memset(&s, 0xff, sizeof s);
    s.size = sizeof s;
    if (gpumem_pool_stats(p, &s) != GPUMEM_OK)
        bail_out("gpumem_pool_stats: %s", gpumem_last_error());
    return s;
}

static uint64_t ptr_of(const gpumem_allocation *a)
{
    uint64_t p = 0;
    return gpumem_allocation_pointer(a, &p) == GPUMEM_OK ? p : 0;
}

/* A host function that holds its stream until released: pending work that
 * is deterministic on the simulator and on a GPU. */
static atomic_int gate;
static void gate_fn(void *arg)
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

static void test_thread_caches(void)
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

static void test_stripes(void)
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

enum { THREADS = 8, ITERS = 20000, LIVE = 24 };

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
static void test_stress(unsigned flags, int iters)
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

/* ---- fault injection ------------------------------------------------------------------ */

/* Every pool path that calls the driver: misses, a free recorded on a
 * stream, hits on the same and another stream (event queries), the shared
 * store, free_held (event synchronize, event and memory frees), stop_holding,
 * destroy with a live allocation, and its free afterwards. */
static gpumem_status workload(void)
{
    gpumem_status st = GPUMEM_OK;
    gpumem_pool *pool = NULL;
    gpumem_stream *s = NULL, *t = NULL;
    gpumem_allocation *a = NULL, *b = NULL, *c = NULL, *d = NULL, *e = NULL;
    fault_msg[0] = '\0';
    FAULT_FIRST(gpumem_stream_create(ctx, GPUMEM_STREAM_NON_BLOCKING, &s));
    FAULT_FIRST(gpumem_stream_create(ctx, GPUMEM_STREAM_NON_BLOCKING, &t));
    FAULT_FIRST(gpumem_pool_create(ctx, 0, &pool));
    if (pool == NULL)
        goto done;
    FAULT_FIRST(gpumem_pool_allocate(pool, 4000, s, &a));
    FAULT_FIRST(gpumem_pool_allocate(pool, 2 << 20, s, &b));
    if (a != NULL) {
        unsigned char buf[64] = {1};
        FAULT_FIRST(gm_drv_check(dev_write(ptr_of(a), buf, sizeof buf), GM_OP_memcpy, "write"));
        FAULT_FIRST(gpumem_allocation_free(a, s));
        a = NULL;
    }
    if (b != NULL) {
        FAULT_FIRST(gpumem_allocation_free(b, s));
        b = NULL;
    }
    FAULT_FIRST(gpumem_pool_allocate(pool, 4000, t, &c)); /* queries a's event */
    FAULT_FIRST(gpumem_pool_allocate(pool, 2 << 20, t, &d)); /* queries b's event in the store */
    FAULT_FIRST(gpumem_pool_allocate(pool, 4000, s, &a)); /* a again */
    FAULT_FIRST(gpumem_pool_allocate(pool, 0, NULL, &e));
    if (a != NULL) {
        FAULT_FIRST(gpumem_allocation_free(a, NULL));
        a = NULL;
    }
    if (d != NULL) {
        FAULT_FIRST(gpumem_allocation_free(d, t));
        d = NULL;
    }
    FAULT_FIRST(gpumem_pool_free_held(pool));
    /* The out-of-memory ladder on the 64 MiB device: 48 MiB held (one block
     * pending on s), then 32 MiB more. */
    gpumem_allocation *m[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3; i++)
        FAULT_FIRST(gpumem_pool_allocate(pool, 16 << 20, NULL, &m[i]));
    for (int i = 0; i < 3; i++)
        if (m[i] != NULL)
            FAULT_FIRST(gpumem_allocation_free(m[i], i == 0 ? s : NULL));
    FAULT_FIRST(gpumem_pool_allocate(pool, 32 << 20, NULL, &a));
    if (a != NULL) {
        FAULT_FIRST(gpumem_allocation_free(a, NULL));
        a = NULL;
    }
    FAULT_FIRST(gpumem_pool_allocate(pool, 300000, NULL, &a));
    FAULT_FIRST(gpumem_pool_stop_holding(pool));
    if (a != NULL) {
        FAULT_FIRST(gpumem_allocation_free(a, s)); /* straight to the driver, after s */
        a = NULL;
    }
    FAULT_FIRST(gpumem_pool_destroy(pool)); /* c and e are live */
    pool = NULL;
    if (c != NULL) {
        FAULT_FIRST(gpumem_allocation_free(c, t));
        c = NULL;
    }
done:
    if (e != NULL)
        FAULT_FIRST(gpumem_allocation_free(e, NULL));
    if (c != NULL)
        FAULT_FIRST(gpumem_allocation_free(c, NULL));
    if (pool != NULL)
        FAULT_FIRST(gpumem_pool_destroy(pool));
    FAULT_FIRST(gpumem_stream_destroy(s));
    FAULT_FIRST(gpumem_stream_destroy(t));
    return st;
}

static void fault_child(const void *arg, child_result *out)
{
    long k = *(const long *)arg;
    setenv("GPUMEM_SIM_STREAM_DELAY_US", "200000", 1); /* event queries: deterministically not ready */
    setenv("GPUMEM_SIM_MEMORY", "64M", 1);
    if (gpumem_context_create(0, &ctx) != GPUMEM_OK) {
        out->status = -1;
        return;
    }
    uint64_t u0 = used(), calls0 = fault_arm(k);
    out->status = workload();
    out->value[0] = fault_disarm(calls0);
    snprintf(out->text, sizeof out->text, "%s", fault_msg);
    out->value[1] = (long)(used() - u0);
    gpumem_context_release(ctx);
}

static void test_faults(void)
{
    fault_walk_all(fault_child, "the pool workload", 21, "device", "cuMemFree");
}

/* A context's final release ends everything the context made for itself
 * (the staging engine's pinned slots and events, a queued download's bounce
 * block, the copy engine's device scratch, its events and side stream, the
 * default stream), whether its memory came from the driver or from a pool
 * plugged in with gpumem_context_set_pool.  The copy engine's scratch once
 * came from that pool and stayed cached with the context: the destroyed
 * pool waited for the block, holding its reference to the context, so the
 * context's release never reached its end.  arg: 0 no pool; 1 a pool set,
 * then unset and destroyed before the release; 2 a pool destroyed while
 * still set.  value[0]: the context's references just before its release,
 * then, once it is released, more than before it: value[1] page-locked
 * bytes, value[2] simulator stream workers, value[3] device bytes. */
static void context_end_child(const void *arg, child_result *out)
{
    int how = *(const int *)arg;
    /* another handle on the device's context, to read its memory after the release */
    if (gpumem_context_create(0, &ctx) != GPUMEM_OK) {
        out->status = -1;
        return;
    }
    uint64_t locked0 = gm_sim_host_locked_bytes(), dev0 = used();
    long workers0 = (long)gm_sim_live_workers();
    enum { N = 25600, Q = 3 << 17 }; /* 200 KiB of doubles; 3 MiB */
    static double src[N], back[N], wide[2 * N], qback[Q];
    for (int i = 0; i < N; i++)
        src[i] = i;
    for (int i = 0; i < 2 * N; i++)
        wide[i] = -1;
    const gpumem_dtype *f64 = gpumem_dtype_builtin(GPUMEM_FLOAT64);
    gpumem_staging_settings saved = {.size = sizeof saved}, s = {sizeof s, 2, 1u << 20, 2, 0};
    gpumem_staging_get(&saved);
    gpumem_status st = gpumem_staging_set(&s);
    gpumem_context *c = NULL;
    gpumem_pool *pool = NULL;
    gpumem_array *h = NULL, *hb = NULL, *hw = NULL, *hwv = NULL, *d = NULL, *d2 = NULL, *d2v = NULL, *dq = NULL,
                 *hq = NULL;
    gpumem_stream *qs = NULL;
    gpumem_slice even = {0, 2 * N, 2};
    int64_t n = N, n2 = 2 * N, q = Q;
    double two = 2.5;
#define DO(call) \
    do { \
        if (st == GPUMEM_OK) \
            st = (call); \
    } while (0)
    DO(gpumem_context_create(0, &c));
    if (how > 0) {
        DO(gpumem_pool_create(c, 0, &pool));
        DO(gpumem_context_set_pool(c, pool));
    }
    DO(gpumem_host_array_wrap(src, 1, &n, NULL, f64, &h));
    DO(gpumem_host_array_wrap(back, 1, &n, NULL, f64, &hb));
    DO(gpumem_host_array_wrap(wide, 1, &n2, NULL, f64, &hw));
    DO(gpumem_array_slice(hw, &even, 1, &hwv));
    DO(gpumem_to_device(c, h, NULL, 0, &d));                      /* staged upload */
    DO(gpumem_array_copy(hwv, d, NULL));                          /* unpacked out of the slots */
    DO(gpumem_device_array(c, 1, &n2, NULL, f64, 'C', NULL, &d2));
    DO(gpumem_array_slice(d2, &even, 1, &d2v));
    DO(gpumem_array_copy(d2v, hwv, NULL));                        /* unpacked on the device: scratch */
    DO(gpumem_device_array(c, 1, &q, NULL, f64, 'C', NULL, &dq));
    DO(gpumem_array_fill(dq, &two, NULL));
    DO(gpumem_host_array_wrap(qback, 1, &q, NULL, f64, &hq));
    DO(gpumem_stream_create(c, 0, &qs));
    DO(gpumem_array_copy(hq, dq, qs));                            /* queued: a bounce block */
    DO(gpumem_array_copy(hb, d2v, qs));                           /* packed on the device: scratch */
    DO(gpumem_stream_synchronize(qs));
#undef DO
    int good = st == GPUMEM_OK;
    for (int i = 0; good && i < N; i++)
        good = back[i] == i && wide[2 * i] == i && wide[2 * i + 1] == -1;
    for (int i = 0; good && i < Q; i++)
        good = qback[i] == 2.5;
    gpumem_array *all[] = {h, hb, hwv, hw, d2v, d2, d, dq, hq};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        gpumem_array_release(all[i]);
    gpumem_stream_destroy(qs);
    gpumem_staging_set(&saved);
    if (how == 1)
        gpumem_context_set_pool(c, NULL);
    gpumem_pool_destroy(pool);
    int refs = 0;
    gpumem_context_refcount(c, &refs);
    out->value[0] = refs;
    gpumem_status rst = gpumem_context_release(c);
    out->status = st != GPUMEM_OK ? (int)st : rst != GPUMEM_OK ? (int)rst : good ? GPUMEM_OK : -2;
    snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
    gpumem_context_flush_deallocations(ctx);
    out->value[1] = (long)(gm_sim_host_locked_bytes() - locked0);
    out->value[2] = (long)gm_sim_live_workers() - workers0;
    out->value[3] = (long)(used() - dev0);
    gpumem_context_release(ctx);
}

static void test_context_end(void)
{
    static const char *const how[3] = {"without a pool", "with a pool unset and destroyed before the release",
                                       "with a pool destroyed while still set"};
    for (int i = 0; i < 3; i++) {
        child_result r;
        run_child(context_end_child, &i, &r);
        ok(r.exited && r.exit_code == 0 && r.status == GPUMEM_OK, "staged, packed and queued copies %s: right "
           "values", how[i]);
        if (r.status != GPUMEM_OK)
            diag("  status %d: %s", r.status, r.text);
        is_int(r.value[0], 1, "  the caller's is the context's last reference");
        is_int(r.value[1], 0, "  its release gives back every page-locked byte (slots, bounce block)");
        is_int(r.value[2], 0, "  and ends every simulator stream it made");
        is_int(r.value[3], 0, "  and every device byte (the copy engine's scratch)");
    }
}

/* Runs a TAP section in a child with its own environment; its results
 * continue this process's numbering. */
static void tap_child(const void *arg, child_result *out)
{
    void (*section)(void) = *(void (*const *)(void))arg;
    if (gpumem_context_create(0, &ctx) != GPUMEM_OK)
        bail_out("no context: %s", gpumem_last_error());
    section();
    gpumem_context_release(ctx);
    out->value[0] = tap_run;
    out->value[1] = tap_failed;
}

static void run_tap_child(void (*section)(void))
{
    child_result r;
    if (run_child(tap_child, &section, &r) != 0 || !r.exited || r.exit_code != 0)
        bail_out("the child running a section died (exit %d)", r.exit_code);
    tap_run = (int)r.value[0];
    tap_failed = (int)r.value[1];
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
