/* The promises of pool.h, module.h, occupancy.h, peer.h, trace.h,
 * testing.h and version.h, checked as an outside user reads them: every
 * documented status for bad arguments and ended handles, the message that
 * names the public function and the argument, the record of the last
 * failure, and out-parameters left alone on failure.
 * This file: main and pool.h's arguments; promises-pool-headers.c: module.h,
 * occupancy.h, peer.h, trace.h, testing.h and version.h;
 * promises-pool-behaviour.c: the behaviour the headers promise. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <pthread.h>

#include <gpumem.h>
#include <gpumem/testing.h>

#include "tap.h"
#include "child.h"
#include "arrays.h"
#include "promises.h"
#include "promises-pool.h"

gpumem_context *ctx, *ctx2;
const gpumem_dtype *i32;


/* ---- pool.h ---------------------------------------------------------------------------- */

static void test_pool_args(void)
{
    gpumem_pool *p = NULL, *sentinel = (gpumem_pool *)&ctx;
    gpumem_host_pool *hp = NULL;
    gpumem_allocation *a = NULL, *asent = (gpumem_allocation *)&ctx;
    uint64_t count = 77, ptr = 77;
    size_t bs = 77;
    gpumem_context *c = NULL;

    BAD(gpumem_pool_create(ctx, 0, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "pool");
    p = sentinel;
    BAD(gpumem_pool_create(ctx, 0x1, &p), GPUMEM_ERROR_INVALID_VALUE, "flags");
    ok(p == sentinel, "a failed gpumem_pool_create leaves *pool alone");
    BAD(gpumem_pool_create(ctx, GPUMEM_HOST_ALLOC_PORTABLE, &p), GPUMEM_ERROR_INVALID_VALUE, "flags");
    gpumem_host_pool *hsent = (gpumem_host_pool *)&ctx;
    hp = hsent;
    BAD(gpumem_host_pool_create(ctx, 0x8, &hp), GPUMEM_ERROR_INVALID_VALUE, "flags");
    ok(hp == hsent, "a failed gpumem_host_pool_create leaves *pool alone");
    BAD(gpumem_host_pool_create(ctx, 0, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "pool");
    MUST(gpumem_pool_create(ctx, 0, &p));
    MUST(gpumem_host_pool_create(ctx, 0, &hp));
    gpumem_pool *hp_as_dev = (gpumem_pool *)(void *)hp;
    gpumem_host_pool *p_as_host = (gpumem_host_pool *)(void *)p;

    /* block sizes */
    BAD(gpumem_pool_block_size(1, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "block_size");
    GOOD(gpumem_pool_block_size(0, &bs));
    is_int(bs, 0, "block size of 0 is 0");
    GOOD(gpumem_pool_block_size(1, &bs));
    is_int(bs, 256, "block size of 1 is 256");
    GOOD(gpumem_pool_block_size(8192, &bs));
    is_int(bs, 8192, "block size of 8 KiB is 8 KiB");
    GOOD(gpumem_pool_block_size(8193, &bs));
    is_int(bs, 8192 + 512, "block size of 8 KiB + 1 is 8 KiB + 512 (2^13 / 16)");
    GOOD(gpumem_pool_block_size(1000000, &bs));
    ok(bs >= 1000000 && bs - 1000000 < 1000000 / 16 && bs % (1u << 15) == 0, "block size of 10^6: %zu", bs);
    bs = 77;
    BAD(gpumem_pool_block_size(SIZE_MAX, &bs), GPUMEM_ERROR_OVERFLOW, "size");
    ok(bs == 77, "a failed gpumem_pool_block_size leaves *block_size alone");
    if (sizeof(size_t) == 8) {
        BAD(gpumem_pool_block_size(((size_t)1 << 63) + 1, &bs), GPUMEM_ERROR_OVERFLOW, "size");
        GOOD(gpumem_pool_block_size((size_t)1 << 63, &bs));
    }

    /* allocate */
    BAD(gpumem_pool_allocate(p, 16, NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "alloc");
    a = asent;
    BAD(gpumem_pool_allocate(NULL, 16, NULL, &a), GPUMEM_ERROR_NULL_ARGUMENT, "pool");
    ok(a == asent, "a failed gpumem_pool_allocate leaves *alloc alone");
    BAD(gpumem_pool_allocate(hp_as_dev, 16, NULL, &a), GPUMEM_ERROR_INVALID_VALUE, "pool");
    BAD(gpumem_pool_allocate(p, SIZE_MAX, NULL, &a), GPUMEM_ERROR_OVERFLOW, "size");
    ok(a == asent, "an overflowing gpumem_pool_allocate leaves *alloc alone");
    gpumem_stream *s2 = NULL;
    MUST(gpumem_stream_create(ctx2, 0, &s2));
    BAD(gpumem_pool_allocate(p, 16, s2, &a), GPUMEM_ERROR_CONTEXT_MISMATCH, "stream");
    ok(a == asent, "a mismatched gpumem_pool_allocate leaves *alloc alone");
    BAD(gpumem_host_pool_allocate_bytes(hp, 16, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "alloc");
    BAD(gpumem_host_pool_allocate_bytes(NULL, 16, &a), GPUMEM_ERROR_NULL_ARGUMENT, "pool");
    BAD(gpumem_host_pool_allocate_bytes(p_as_host, 16, &a), GPUMEM_ERROR_INVALID_VALUE, "pool");
    BAD(gpumem_host_pool_allocate_bytes(hp, SIZE_MAX, &a), GPUMEM_ERROR_OVERFLOW, "size");
    ok(a == asent, "failed host allocations leave *alloc alone");

    /* zero size */
    gpumem_allocation *z = NULL;
    GOOD(gpumem_pool_allocate(p, 0, NULL, &z));
    ptr = 77;
    GOOD(gpumem_allocation_pointer(z, &ptr));
    is_int(ptr, 0, "an empty allocation's pointer is 0");
    GOOD(gpumem_allocation_size(z, &bs));
    is_int(bs, 0, "an empty allocation's size is 0");
    GOOD(gpumem_pool_active_blocks(p, &count));
    is_int(count, 0, "empty allocations are not active blocks");
    void *hptr = (void *)&ctx;
    BAD(gpumem_allocation_host_pointer(z, &hptr), GPUMEM_ERROR_INVALID_VALUE, "alloc");
    ok(hptr == (void *)&ctx, "a failed gpumem_allocation_host_pointer leaves *pointer alone");
    GOOD(gpumem_allocation_free(z, NULL));
    BAD(gpumem_allocation_free(z, NULL), GPUMEM_ERROR_INVALID_STATE, "alloc");
    gpumem_allocation *hz = NULL;
    GOOD(gpumem_host_pool_allocate_bytes(hp, 0, &hz));
    hptr = (void *)&ctx;
    GOOD(gpumem_allocation_host_pointer(hz, &hptr));
    ok(hptr == NULL, "an empty host allocation's host pointer is NULL");
    GOOD(gpumem_allocation_free(hz, NULL));

    /* a live allocation: values */
    GOOD(gpumem_pool_allocate(p, 1000, NULL, &a));
    GOOD(gpumem_allocation_size(a, &bs));
    is_int(bs, 1000, "gpumem_allocation_size gives the size asked for");
    GOOD(gpumem_allocation_pointer(a, &ptr));
    ok(ptr != 0, "a pool allocation has a device address");
    hptr = (void *)&ctx;
    BAD(gpumem_allocation_host_pointer(a, &hptr), GPUMEM_ERROR_INVALID_VALUE, "alloc");
    ok(hptr == (void *)&ctx, "device memory: *pointer untouched");
    BAD(gpumem_allocation_pointer(a, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "pointer");
    BAD(gpumem_allocation_pointer(NULL, &ptr), GPUMEM_ERROR_NULL_ARGUMENT, "alloc");
    BAD(gpumem_allocation_size(a, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "size");
    BAD(gpumem_allocation_size(NULL, &bs), GPUMEM_ERROR_NULL_ARGUMENT, "alloc");
    BAD(gpumem_allocation_host_pointer(a, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "pointer");
    BAD(gpumem_allocation_free(NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "alloc");
    BAD(gpumem_allocation_free(a, s2), GPUMEM_ERROR_CONTEXT_MISMATCH, "stream");
    /* the mismatch did not end it */
    GOOD(gpumem_allocation_size(a, &bs));
    GOOD(gpumem_pool_active_blocks(p, &count));
    is_int(count, 1, "one active block");
    /* not an allocation handle: a pool, a stream */
    BAD(gpumem_allocation_size((gpumem_allocation *)(void *)s2, &bs), GPUMEM_ERROR_INVALID_VALUE, "alloc");
    BAD(gpumem_allocation_free((gpumem_allocation *)(void *)p, NULL), GPUMEM_ERROR_INVALID_VALUE, "alloc");
    GOOD(gpumem_allocation_free(a, NULL));
    GOOD(gpumem_pool_active_blocks(p, &count));
    is_int(count, 0, "no active block after the free");
    GOOD(gpumem_pool_held_blocks(p, &count));
    is_int(count, 1, "one held block after the free");
    ptr = 77;
    bs = 77;
    BAD(gpumem_allocation_pointer(a, &ptr), GPUMEM_ERROR_INVALID_STATE, "alloc");
    BAD(gpumem_allocation_size(a, &bs), GPUMEM_ERROR_INVALID_STATE, "alloc");
    BAD(gpumem_allocation_host_pointer(a, &hptr), GPUMEM_ERROR_INVALID_STATE, "alloc");
    ok(ptr == 77 && bs == 77, "a freed handle leaves the outputs alone");
    BAD(gpumem_allocation_free(a, NULL), GPUMEM_ERROR_INVALID_STATE, "alloc");
    /* handed out again: the old handle stays dead */
    gpumem_allocation *b = NULL;
    GOOD(gpumem_pool_allocate(p, 1000, NULL, &b));
    BAD(gpumem_allocation_free(a, NULL), GPUMEM_ERROR_INVALID_STATE, "alloc");
    GOOD(gpumem_allocation_size(b, &bs));
    is_int(bs, 1000, "the new handle is live");
    GOOD(gpumem_allocation_free(b, NULL));

    /* host pool allocation */
    gpumem_allocation *h = NULL;
    GOOD(gpumem_host_pool_allocate_bytes(hp, 300, &h));
    hptr = NULL;
    GOOD(gpumem_allocation_host_pointer(h, &hptr));
    GOOD(gpumem_allocation_pointer(h, &ptr));
    ok(hptr != NULL && ptr == (uint64_t)(uintptr_t)hptr, "a host allocation: pointer is its host address");
    memset(hptr, 0x5a, 300);
    ok(((unsigned char *)hptr)[299] == 0x5a, "the host block is writable");
    GOOD(gpumem_allocation_free(h, NULL));

    /* queries: NULL, other kind */
    BAD(gpumem_pool_context(p, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "ctx");
    BAD(gpumem_pool_context(NULL, &c), GPUMEM_ERROR_NULL_ARGUMENT, "pool");
    BAD(gpumem_pool_context(hp_as_dev, &c), GPUMEM_ERROR_INVALID_VALUE, "pool");
    GOOD(gpumem_pool_context(p, &c));
    ok(c == ctx, "gpumem_pool_context gives the pool's context");
    BAD(gpumem_host_pool_context(hp, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "ctx");
    BAD(gpumem_host_pool_context(p_as_host, &c), GPUMEM_ERROR_INVALID_VALUE, "pool");
    BAD(gpumem_pool_held_blocks(NULL, &count), GPUMEM_ERROR_NULL_ARGUMENT, "pool");
    BAD(gpumem_pool_held_blocks(p, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "count");
    BAD(gpumem_pool_held_blocks(hp_as_dev, &count), GPUMEM_ERROR_INVALID_VALUE, "pool");
    BAD(gpumem_pool_active_blocks(hp_as_dev, &count), GPUMEM_ERROR_INVALID_VALUE, "pool");
    BAD(gpumem_pool_active_blocks(p, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "count");
    BAD(gpumem_host_pool_held_blocks(p_as_host, &count), GPUMEM_ERROR_INVALID_VALUE, "pool");
    BAD(gpumem_host_pool_held_blocks(hp, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "count");
    BAD(gpumem_host_pool_active_blocks(p_as_host, &count), GPUMEM_ERROR_INVALID_VALUE, "pool");
    BAD(gpumem_pool_free_held(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "pool");
    BAD(gpumem_pool_free_held(hp_as_dev), GPUMEM_ERROR_INVALID_VALUE, "pool");
    BAD(gpumem_pool_stop_holding(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "pool");
    BAD(gpumem_pool_stop_holding(hp_as_dev), GPUMEM_ERROR_INVALID_VALUE, "pool");
    BAD(gpumem_host_pool_free_held(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "pool");
    BAD(gpumem_host_pool_free_held(p_as_host), GPUMEM_ERROR_INVALID_VALUE, "pool");
    BAD(gpumem_host_pool_stop_holding(p_as_host), GPUMEM_ERROR_INVALID_VALUE, "pool");
    struct gpumem_pool_stats stats;
    memset(&stats, 0xab, sizeof stats);
    stats.size = 4;
    BAD(gpumem_pool_stats(p, &stats), GPUMEM_ERROR_INVALID_VALUE, "size");
    ok(stats.held_blocks == 0xababababababababULL, "a too small stats->size leaves the record alone");
    stats.size = sizeof stats;
    BAD(gpumem_pool_stats(p, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "stats");
    BAD(gpumem_pool_stats(NULL, &stats), GPUMEM_ERROR_NULL_ARGUMENT, "pool");
    BAD(gpumem_pool_stats(hp_as_dev, &stats), GPUMEM_ERROR_INVALID_VALUE, "pool");
    BAD(gpumem_host_pool_stats(p_as_host, &stats), GPUMEM_ERROR_INVALID_VALUE, "pool");
    stats.size = 4;
    BAD(gpumem_host_pool_stats(hp, &stats), GPUMEM_ERROR_INVALID_VALUE, "size");
    /* a shorter record of an older version: only its fields */
    struct { size_t size; uint64_t held_blocks, held_bytes; uint64_t guard; } old;
    memset(&old, 0xab, sizeof old);
    old.size = offsetof(struct gpumem_pool_stats, active_blocks);
    GOOD(gpumem_pool_stats(p, (struct gpumem_pool_stats *)(void *)&old));
    ok(old.held_blocks == 1 && old.guard == 0xababababababababULL, "an older, shorter record: only its fields filled");
    stats.size = sizeof stats;
    GOOD(gpumem_pool_stats(p, &stats));
    ok(stats.held_blocks == 1 && stats.active_blocks == 0 && stats.misses == 1 && stats.hits == 1,
       "stats: 1 held, 0 active, 1 miss, 1 hit (%llu %llu %llu %llu)", (unsigned long long)stats.held_blocks,
       (unsigned long long)stats.active_blocks, (unsigned long long)stats.misses, (unsigned long long)stats.hits);
    GOOD(gpumem_pool_free_held(p));
    GOOD(gpumem_pool_held_blocks(p, &count));
    is_int(count, 0, "free_held: no held block");

    /* set_pool */
    BAD(gpumem_context_set_pool(ctx, hp_as_dev), GPUMEM_ERROR_INVALID_VALUE, "pool");
    BAD(gpumem_context_set_pool(ctx2, p), GPUMEM_ERROR_CONTEXT_MISMATCH, "pool");

    /* pool arrays: arguments */
    int64_t shape[1] = {10};
    gpumem_array *arr = (gpumem_array *)&ctx;
    BAD(gpumem_pool_device_array(NULL, 1, shape, i32, 'C', NULL, &arr), GPUMEM_ERROR_NULL_ARGUMENT, "pool");
    BAD(gpumem_pool_device_array(p, 1, shape, i32, 'C', NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "array");
    BAD(gpumem_pool_device_array(hp_as_dev, 1, shape, i32, 'C', NULL, &arr), GPUMEM_ERROR_INVALID_VALUE, "pool");
    BAD(gpumem_pool_device_array(p, 1, shape, i32, 'C', s2, &arr), GPUMEM_ERROR_CONTEXT_MISMATCH, "stream");
    BAD(gpumem_pool_device_array(p, 1, shape, i32, 'X', NULL, &arr), GPUMEM_ERROR_INVALID_ORDER, "order");
    BAD(gpumem_pool_device_array(p, -1, shape, i32, 'C', NULL, &arr), GPUMEM_ERROR_INVALID_VALUE, "ndim");
    BAD(gpumem_pool_device_array(p, 1, shape, NULL, 'C', NULL, &arr), GPUMEM_ERROR_NULL_ARGUMENT, "dtype");
    ok(arr == (gpumem_array *)&ctx, "failed gpumem_pool_device_array calls leave *array alone");
    BAD(gpumem_host_pool_allocate(NULL, 1, shape, i32, 'C', &arr), GPUMEM_ERROR_NULL_ARGUMENT, "pool");
    BAD(gpumem_host_pool_allocate(hp, 1, shape, i32, 'C', NULL), GPUMEM_ERROR_NULL_ARGUMENT, "array");
    BAD(gpumem_host_pool_allocate(p_as_host, 1, shape, i32, 'C', &arr), GPUMEM_ERROR_INVALID_VALUE, "pool");
    BAD(gpumem_host_pool_allocate(hp, 1, shape, i32, 'Q', &arr), GPUMEM_ERROR_INVALID_ORDER, "order");
    ok(arr == (gpumem_array *)&ctx, "failed gpumem_host_pool_allocate calls leave *array alone");
    /* a working pool array: values */
    GOOD(gpumem_pool_device_array(p, 1, shape, i32, 'C', NULL, &arr));
    gpumem_array *src = device_iota(ctx, 1, shape, 5);
    GOOD(gpumem_array_copy(arr, src, NULL));
    int32_t back[10];
    ok(read_all(arr, back) && back[0] == 5 && back[9] == 14, "a pool array holds what was copied in");
    gpumem_array_release(src);
    GOOD(gpumem_pool_active_blocks(p, &count));
    is_int(count, 1, "the pool array is an active block of the pool");
    gpumem_array_release(arr);
    GOOD(gpumem_pool_active_blocks(p, &count));
    is_int(count, 0, "its release gives the block back");
    GOOD(gpumem_host_pool_allocate(hp, 1, shape, i32, 'C', &arr));
    GOOD(gpumem_host_pool_active_blocks(hp, &count));
    is_int(count, 1, "the host pool array is an active block");
    gpumem_array_release(arr);

    /* destroy: other kind, twice, afterwards */
    BAD(gpumem_pool_destroy(hp_as_dev), GPUMEM_ERROR_INVALID_VALUE, "pool");
    BAD(gpumem_host_pool_destroy(p_as_host), GPUMEM_ERROR_INVALID_VALUE, "pool");
    GOOD(gpumem_pool_destroy(NULL));
    GOOD(gpumem_host_pool_destroy(NULL));
    gpumem_allocation *live = NULL;
    GOOD(gpumem_pool_allocate(p, 64, NULL, &live));
    GOOD(gpumem_pool_destroy(p));
    BAD(gpumem_pool_destroy(p), GPUMEM_ERROR_INVALID_STATE, "pool");
    count = 77;
    BAD(gpumem_pool_held_blocks(p, &count), GPUMEM_ERROR_INVALID_STATE, "pool");
    BAD(gpumem_pool_active_blocks(p, &count), GPUMEM_ERROR_INVALID_STATE, "pool");
    ok(count == 77, "a destroyed pool leaves *count alone");
    BAD(gpumem_pool_allocate(p, 16, NULL, &a), GPUMEM_ERROR_INVALID_STATE, "pool");
    BAD(gpumem_pool_context(p, &c), GPUMEM_ERROR_INVALID_STATE, "pool");
    BAD(gpumem_pool_free_held(p), GPUMEM_ERROR_INVALID_STATE, "pool");
    BAD(gpumem_pool_stop_holding(p), GPUMEM_ERROR_INVALID_STATE, "pool");
    BAD(gpumem_pool_stats(p, &stats), GPUMEM_ERROR_INVALID_STATE, "pool");
    BAD(gpumem_context_set_pool(ctx, p), GPUMEM_ERROR_INVALID_STATE, "pool");
    BAD(gpumem_pool_device_array(p, 1, shape, i32, 'C', NULL, &arr), GPUMEM_ERROR_INVALID_STATE, "pool");
    /* the live allocation stays valid */
    GOOD(gpumem_allocation_size(live, &bs));
    is_int(bs, 64, "an allocation outlives its destroyed pool");
    GOOD(gpumem_allocation_free(live, NULL));
    GOOD(gpumem_host_pool_destroy(hp));
    BAD(gpumem_host_pool_destroy(hp), GPUMEM_ERROR_INVALID_STATE, "pool");
    BAD(gpumem_host_pool_allocate_bytes(hp, 16, &a), GPUMEM_ERROR_INVALID_STATE, "pool");
    BAD(gpumem_host_pool_held_blocks(hp, &count), GPUMEM_ERROR_INVALID_STATE, "pool");
    BAD(gpumem_host_pool_stats(hp, &stats), GPUMEM_ERROR_INVALID_STATE, "pool");
    BAD(gpumem_host_pool_allocate(hp, 1, shape, i32, 'C', &arr), GPUMEM_ERROR_INVALID_STATE, "pool");
    BAD(gpumem_host_pool_context(hp, &c), GPUMEM_ERROR_INVALID_STATE, "pool");

    /* a context's pool destroyed: its allocations are INVALID_STATE */
    gpumem_pool *cp = NULL;
    MUST(gpumem_pool_create(ctx, 0, &cp));
    MUST(gpumem_context_set_pool(ctx, cp));
    MUST(gpumem_pool_destroy(cp));
    arr = (gpumem_array *)&ctx;
    BAD(gpumem_device_array(ctx, 1, shape, NULL, i32, 'C', NULL, &arr), GPUMEM_ERROR_INVALID_STATE, "pool");
    ok(arr == (gpumem_array *)&ctx, "failed device_array leaves *array alone");
    GOOD(gpumem_context_set_pool(ctx, NULL));
    GOOD(gpumem_device_array(ctx, 1, shape, NULL, i32, 'C', NULL, &arr));
    gpumem_array_release(arr);

    /* set_pool: gpumem_to_device and reshape copies take the pool's blocks, which return to it */
    {
        gpumem_pool *sp = NULL;
        MUST(gpumem_pool_create(ctx, 0, &sp));
        MUST(gpumem_context_set_pool(ctx, sp));
        int32_t hv[12];
        for (int i = 0; i < 12; i++)
            hv[i] = i;
        int64_t hs[2] = {3, 4}, flat = 12;
        gpumem_array *hw = NULL, *dv = NULL, *tv = NULL, *rv = NULL;
        MUST(gpumem_host_array_wrap(hv, 2, hs, NULL, i32, &hw));
        MUST(gpumem_to_device(ctx, hw, NULL, 0, &dv));
        uint64_t act = 0;
        MUST(gpumem_pool_active_blocks(sp, &act));
        is_int(act, 1, "set_pool: gpumem_to_device takes a block of the pool");
        int axes[2] = {1, 0};
        MUST(gpumem_array_transpose(dv, axes, &tv));
        MUST(gpumem_array_reshape(tv, 1, &flat, 'C', 0, NULL, &rv));
        MUST(gpumem_pool_active_blocks(sp, &act));
        is_int(act, 2, "set_pool: a reshape copy takes a block of the pool");
        int32_t rb[12] = {0};
        ok(read_all(rv, rb) && rb[0] == 0 && rb[1] == 4 && rb[2] == 8 && rb[3] == 1 && rb[11] == 11,
           "the reshape copy holds the transposed values");
        gpumem_array_release(rv);
        gpumem_array_release(tv);
        gpumem_array_release(dv);
        gpumem_array_release(hw);
        uint64_t hb = 0;
        MUST(gpumem_pool_active_blocks(sp, &act));
        MUST(gpumem_pool_held_blocks(sp, &hb));
        ok(act == 0 && hb == 2, "released, both blocks are back in the pool");
        GOOD(gpumem_context_set_pool(ctx, NULL));
        GOOD(gpumem_pool_destroy(sp));
    }

    /* stop_holding: frees go to the driver */
    MUST(gpumem_pool_create(ctx, GPUMEM_POOL_NO_THREAD_CACHE, &p));
    GOOD(gpumem_pool_allocate(p, 4096, NULL, &a));
    GOOD(gpumem_pool_stop_holding(p));
    GOOD(gpumem_allocation_free(a, NULL));
    GOOD(gpumem_pool_held_blocks(p, &count));
    is_int(count, 0, "after stop_holding a free is not held");
    GOOD(gpumem_pool_destroy(p));
    gpumem_stream_destroy(s2);
}

int main(void)
{
    const char *backend = getenv("GPUMEM_BACKEND");
    if (backend == NULL || strcmp(backend, "sim") == 0) {
        setenv("GPUMEM_BACKEND", "sim", 1);
        setenv("GPUMEM_SIM_DEVICES", "2", 1);
        setenv("GPUMEM_SIM_MEMORY", "256M", 1);
    } else {
        plan_skip_all("the promises are checked on the simulator (two devices)");
    }
    unsetenv("CUDA_DEVICE");
    unsetenv("GPUMEM_PEER");
    unsetenv("GPUMEM_TRACE");
    unsetenv("GPUMEM_TRACE_STACKS");
    unsetenv("GPUMEM_ALLOCATOR");
    /* children first: fork before the library starts threads */
    peer_env_checks();
    trace_env_checks();
    testing_env_checks();
    allocator_env_checks();
    arch_checks();
    stream_checks();
    if (gpumem_context_create(0, &ctx) != GPUMEM_OK || gpumem_context_create(1, &ctx2) != GPUMEM_OK)
        bail_out("two simulated devices: %s", gpumem_last_error());
    i32 = gpumem_dtype_builtin(GPUMEM_INT32);
    test_version();
    test_pool_args();
    test_module();
    test_occupancy();
    test_peer();
    test_trace();
    test_testing();
    test_pool_behaviour();
    test_pool_threads();
    gpumem_context_release(ctx2);
    gpumem_context_release(ctx);
    done_testing();
    return exit_status();
}
