/* The promises of pool.h, module.h, occupancy.h, peer.h, trace.h,
 * testing.h and version.h, checked as an outside user reads them: every
 * documented status for bad arguments and ended handles, the message that
 * names the public function and the argument, the record of the last
 * failure, and out-parameters left alone on failure. */
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

static gpumem_context *ctx, *ctx2;
static const gpumem_dtype *i32;
static void case_trace_pct(const void *arg, child_result *out);


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

/* ---- module.h --------------------------------------------------------------------------- */

static const char k_ptx[] =
    ".version 7.0\n"
    ".target sm_50\n"
    ".address_size 64\n"
    ".visible .const .align 4 .b8 coeffs[64];\n"
    ".visible .global .align 4 .u32 table[4] = {1, 2, 3, 4};\n"
    ".visible .entry k(.param .u64 y)\n"
    "{\n"
    "    ret;\n"
    "}\n";

static void test_module(void)
{
    gpumem_module *m = NULL, *msent = (gpumem_module *)&ctx;
    gpumem_function *f = NULL, *fsent = (gpumem_function *)&ctx;
    gpumem_context *c = NULL;
    const char *name = NULL;
    int v = 77;
    BAD(gpumem_module_load(ctx, k_ptx, 0, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "module");
    m = msent;
    BAD(gpumem_module_load(ctx, NULL, 0, &m), GPUMEM_ERROR_NULL_ARGUMENT, "image");
    BAD(gpumem_module_load(ctx, "", 0, &m), GPUMEM_ERROR_INVALID_VALUE, "'image'");
    BAD(gpumem_module_load(ctx, "", 1, &m), GPUMEM_ERROR_INVALID_VALUE, "'image'");
    {
        /* nvcc's __fatBinC_Wrapper_t (magic 0x466243B1) with no fat binary behind it */
        struct { uint32_t magic, version; const void *data, *filename; } wrap = {0x466243B1u, 1, NULL, NULL};
        BAD(gpumem_module_load(ctx, &wrap, sizeof wrap, &m), GPUMEM_ERROR_INVALID_VALUE, "'image'");
        /* a 32-bit ELF: its size cannot be read */
        unsigned char elf32[64] = {0x7f, 'E', 'L', 'F', 1, 1, 1};
        BAD(gpumem_module_load(ctx, elf32, 0, &m), GPUMEM_ERROR_INVALID_VALUE, "'size'");
        ok(m == msent, "failed loads leave *module alone");
    }
    MUST(gpumem_module_load(ctx, k_ptx, 0, &m));
    gpumem_module *m2 = NULL;
    GOOD(gpumem_module_load(ctx, k_ptx, sizeof k_ptx - 1, &m2));
    ok(m2 == m, "the same text with and without size is one module");
    GOOD(gpumem_module_release(m2));
    BAD(gpumem_module_retain(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "module");
    GOOD(gpumem_module_release(NULL));
    BAD(gpumem_module_context(NULL, &c), GPUMEM_ERROR_NULL_ARGUMENT, "module");
    BAD(gpumem_module_context(m, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "ctx");
    GOOD(gpumem_module_context(m, &c));
    ok(c == ctx, "the module's context");
    f = fsent;
    BAD(gpumem_module_get_function(m, "nope", &f), GPUMEM_ERROR_NOT_FOUND, "nope");
    ok(f == fsent, "an unknown kernel leaves *function alone");
    BAD(gpumem_module_get_function(m, NULL, &f), GPUMEM_ERROR_NULL_ARGUMENT, "name");
    BAD(gpumem_module_get_function(m, "k", NULL), GPUMEM_ERROR_NULL_ARGUMENT, "function");
    BAD(gpumem_module_get_function(NULL, "k", &f), GPUMEM_ERROR_NULL_ARGUMENT, "module");
    GOOD(gpumem_module_get_function(m, "k", &f));
    gpumem_function *f2 = NULL;
    GOOD(gpumem_module_get_function(m, "k", &f2));
    ok(f2 == f, "the same name gives the same handle");
    uint64_t gp = 77;
    size_t gb = 77;
    BAD(gpumem_module_get_global(m, "nope", &gp, &gb), GPUMEM_ERROR_NOT_FOUND, "nope");
    ok(gp == 77 && gb == 77, "an unknown global leaves the outputs alone");
    BAD(gpumem_module_get_global(m, NULL, &gp, &gb), GPUMEM_ERROR_NULL_ARGUMENT, "name");
    BAD(gpumem_module_get_global(NULL, "table", &gp, &gb), GPUMEM_ERROR_NULL_ARGUMENT, "module");
    GOOD(gpumem_module_get_global(m, "table", NULL, &gb));
    is_int(gb, 16, "table is 16 bytes");
    GOOD(gpumem_module_get_global(m, "coeffs", &gp, NULL));
    ok(gp != 0, "coeffs has an address");
    BAD(gpumem_function_name(NULL, &name), GPUMEM_ERROR_NULL_ARGUMENT, "function");
    BAD(gpumem_function_name(f, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "name");
    GOOD(gpumem_function_name(f, &name));
    is_str(name, "k", "the function's name");
    gpumem_module *fm = NULL;
    BAD(gpumem_function_module(NULL, &fm), GPUMEM_ERROR_NULL_ARGUMENT, "function");
    BAD(gpumem_function_module(f, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "module");
    GOOD(gpumem_function_module(f, &fm));
    ok(fm == m, "the function's module");
    BAD(gpumem_function_attribute(f, (gpumem_function_attr)10, &v), GPUMEM_ERROR_INVALID_VALUE, "attr");
    BAD(gpumem_function_attribute(f, (gpumem_function_attr)-1, &v), GPUMEM_ERROR_INVALID_VALUE, "attr");
    ok(v == 77, "an unknown attribute leaves *value alone");
    BAD(gpumem_function_attribute(f, GPUMEM_FUNCTION_NUM_REGS, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "value");
    BAD(gpumem_function_attribute(NULL, GPUMEM_FUNCTION_NUM_REGS, &v), GPUMEM_ERROR_NULL_ARGUMENT, "function");
    GOOD(gpumem_function_attribute(f, GPUMEM_FUNCTION_MAX_THREADS_PER_BLOCK, &v));
    ok(v > 0, "max threads per block %d", v);
    BAD(gpumem_function_set_attribute(f, GPUMEM_FUNCTION_NUM_REGS, 3), GPUMEM_ERROR_INVALID_VALUE, "attr");
    BAD(gpumem_function_set_attribute(f, (gpumem_function_attr)42, 3), GPUMEM_ERROR_INVALID_VALUE, "attr");
    BAD(gpumem_function_set_attribute(NULL, GPUMEM_FUNCTION_MAX_DYNAMIC_SHARED_SIZE_BYTES, 3),
        GPUMEM_ERROR_NULL_ARGUMENT, "function");
    int blocks = 77;
    BAD(gpumem_function_max_active_blocks(f, 0, 0, &blocks), GPUMEM_ERROR_INVALID_VALUE, "block_threads");
    BAD(gpumem_function_max_active_blocks(f, 32, 0, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "blocks");
    BAD(gpumem_function_max_active_blocks(NULL, 32, 0, &blocks), GPUMEM_ERROR_NULL_ARGUMENT, "function");
    BAD(gpumem_function_max_active_blocks(f, 32, 0, &blocks), GPUMEM_ERROR_NOT_SIMULATED, NULL);
    ok(blocks == 77, "failed max_active_blocks leaves *blocks alone");
    unsigned g1[3] = {1, 1, 1}, g0[3] = {1, 0, 1};
    BAD(gpumem_launch(f, g0, g1, 0, NULL, NULL), GPUMEM_ERROR_INVALID_VALUE, "grid");
    BAD(gpumem_launch(f, g1, g0, 0, NULL, NULL), GPUMEM_ERROR_INVALID_VALUE, "block");
    BAD(gpumem_launch(NULL, g1, g1, 0, NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "function");
    BAD(gpumem_launch(f, NULL, g1, 0, NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "grid");
    BAD(gpumem_launch(f, g1, NULL, 0, NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "block");
    gpumem_stream *s2 = NULL;
    MUST(gpumem_stream_create(ctx2, 0, &s2));
    BAD(gpumem_launch(f, g1, g1, 0, s2, NULL), GPUMEM_ERROR_CONTEXT_MISMATCH, "stream");
    BAD(gpumem_launch(f, g1, g1, 0, NULL, NULL), GPUMEM_ERROR_NOT_SIMULATED, NULL);
    /* const_array_like */
    int64_t shape[1] = {4};
    gpumem_array *src = device_iota(ctx, 1, shape, 7), *out = (gpumem_array *)&ctx;
    int64_t big[1] = {100};
    gpumem_array *bigsrc = device_iota(ctx, 1, big, 0);
    BAD(gpumem_const_array_like(m, "coeffs", bigsrc, NULL, &out), GPUMEM_ERROR_INVALID_VALUE, "array");
    BAD(gpumem_const_array_like(m, "nope", src, NULL, &out), GPUMEM_ERROR_NOT_FOUND, "nope");
    BAD(gpumem_const_array_like(m, NULL, src, NULL, &out), GPUMEM_ERROR_NULL_ARGUMENT, "symbol");
    BAD(gpumem_const_array_like(m, "coeffs", NULL, NULL, &out), GPUMEM_ERROR_NULL_ARGUMENT, "array");
    BAD(gpumem_const_array_like(m, "coeffs", src, NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "device_array");
    BAD(gpumem_const_array_like(NULL, "coeffs", src, NULL, &out), GPUMEM_ERROR_NULL_ARGUMENT, "module");
    BAD(gpumem_const_array_like(m, "coeffs", src, s2, &out), GPUMEM_ERROR_CONTEXT_MISMATCH, "stream");
    ok(out == (gpumem_array *)&ctx, "failed const_array_like calls leave *device_array alone");
    GOOD(gpumem_const_array_like(m, "coeffs", src, NULL, &out));
    int32_t got[4] = {0};
    ok(read_all(out, got) && got[0] == 7 && got[3] == 10, "const_array_like holds the data");
    GOOD(gpumem_module_get_global(m, "coeffs", &gp, NULL));
    uint64_t outp = 0;
    GOOD(gpumem_array_device_pointer(out, &outp));
    ok(outp == gp, "const_array_like's array lies over the symbol");
    gpumem_array_release(out);
    gpumem_array_release(src);
    gpumem_array_release(bigsrc);
    gpumem_stream_destroy(s2);
    /* release too often */
    GOOD(gpumem_module_release(m));
    BAD(gpumem_module_release(m), GPUMEM_ERROR_INVALID_STATE, "module");
    /* a module freed: dead */
    gpumem_context *own = NULL;
    MUST(gpumem_context_create(0, &own));
    gpumem_module *om = NULL;
    MUST(gpumem_module_load(own, k_ptx, 0, &om));
    gpumem_function *of = NULL;
    MUST(gpumem_module_get_function(om, "k", &of));
    MUST(gpumem_module_release(om));

    MUST(gpumem_clear_context_caches());

    c = (gpumem_context *)&v;
    BAD(gpumem_module_context(om, &c), GPUMEM_ERROR_INVALID_STATE, "module");
    BAD(gpumem_module_get_function(om, "k", &f), GPUMEM_ERROR_INVALID_STATE, "module");
    BAD(gpumem_module_get_global(om, "table", &gp, &gb), GPUMEM_ERROR_INVALID_STATE, "module");
    BAD(gpumem_module_release(om), GPUMEM_ERROR_INVALID_STATE, "module");
    BAD(gpumem_function_name(of, &name), GPUMEM_ERROR_INVALID_STATE, "function");
    BAD(gpumem_function_module(of, &fm), GPUMEM_ERROR_INVALID_STATE, "function");
    BAD(gpumem_function_attribute(of, GPUMEM_FUNCTION_NUM_REGS, &v), GPUMEM_ERROR_INVALID_STATE, "function");
    BAD(gpumem_launch(of, g1, g1, 0, NULL, NULL), GPUMEM_ERROR_INVALID_STATE, "function");
    ok(c == (gpumem_context *)&v, "a dead module leaves *ctx alone");
    /* not a module */
    BAD(gpumem_module_retain((gpumem_module *)(void *)own), GPUMEM_ERROR_INVALID_VALUE, "module");
    BAD(gpumem_function_name((gpumem_function *)(void *)own, &name), GPUMEM_ERROR_INVALID_VALUE, "function");
    gpumem_context_release(own);
}

/* ---- occupancy.h ------------------------------------------------------------------------ */

static void test_occupancy(void)
{
    gpumem_device_data *dd = NULL, *ddsent = (gpumem_device_data *)&ctx;
    int v = 77;
    size_t sz = 77;
    BAD(gpumem_device_data_create(0, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "dd");
    dd = ddsent;
    BAD(gpumem_device_data_create(5, &dd), GPUMEM_ERROR_INVALID_DEVICE, "device");
    BAD(gpumem_device_data_create(-2, &dd), GPUMEM_ERROR_INVALID_DEVICE, "device");
    ok(dd == ddsent, "failed device_data_create leaves *dd alone");
    GOOD(gpumem_device_data_create(GPUMEM_DEVICE_DATA_DEFAULT, &dd));
    GOOD(gpumem_device_data_get(dd, GPUMEM_DEVICE_DATA_DEVICE, &v));
    is_int(v, 0, "the default device data is device 0's");
    BAD(gpumem_device_data_get(dd, (gpumem_device_data_field)GPUMEM_DEVICE_DATA_FIELD_COUNT, &v),
        GPUMEM_ERROR_INVALID_VALUE, "field");
    BAD(gpumem_device_data_get(dd, (gpumem_device_data_field)-1, &v), GPUMEM_ERROR_INVALID_VALUE, "field");
    ok(v == 0, "an unknown field leaves *value alone");
    BAD(gpumem_device_data_get(NULL, GPUMEM_DEVICE_DATA_WARP_SIZE, &v), GPUMEM_ERROR_NULL_ARGUMENT, "dd");
    BAD(gpumem_device_data_get(dd, GPUMEM_DEVICE_DATA_WARP_SIZE, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "value");
    GOOD(gpumem_device_data_get(dd, GPUMEM_DEVICE_DATA_WARP_SIZE, &v));
    is_int(v, 32, "warp size");
    ok(gpumem_device_data_field_name((gpumem_device_data_field)GPUMEM_DEVICE_DATA_FIELD_COUNT) == NULL &&
           gpumem_device_data_field_name((gpumem_device_data_field)-1) == NULL,
       "field_name of an unknown field is NULL");
    is_str(gpumem_device_data_field_name(GPUMEM_DEVICE_DATA_SMEM_ALLOC_GRANULARITY), "smem_alloc_granularity",
           "field 7's name");
    is_str(gpumem_device_data_field_name(GPUMEM_DEVICE_DATA_SHARED_MEMORY_PER_MP), "shared_memory_per_mp",
           "field 9's name");
    is_str(gpumem_device_data_field_name(GPUMEM_DEVICE_DATA_DEVICE), "device", "field 17's name");
    int allnamed = 1;
    for (int i = 0; i < GPUMEM_DEVICE_DATA_FIELD_COUNT; i++)
        allnamed &= gpumem_device_data_field_name((gpumem_device_data_field)i) != NULL;
    ok(allnamed, "every field has a name");
    BAD(gpumem_device_data_align_bytes(dd, 4, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "bytes");
    BAD(gpumem_device_data_align_bytes(NULL, 4, &sz), GPUMEM_ERROR_NULL_ARGUMENT, "dd");
    BAD(gpumem_device_data_align_bytes(dd, 2, &sz), GPUMEM_ERROR_INVALID_VALUE, "word_size");
    BAD(gpumem_device_data_align_bytes(dd, 0, &sz), GPUMEM_ERROR_INVALID_VALUE, "word_size");
    ok(sz == 77, "failed align_bytes leaves *bytes alone");
    GOOD(gpumem_device_data_align_bytes(dd, 4, &sz));
    is_int(sz, 64, "align_bytes(4)");
    GOOD(gpumem_device_data_align_bytes(dd, 16, &sz));
    is_int(sz, 128, "align_bytes(16)");
    GOOD(gpumem_device_data_align(dd, 65, 4, &sz));
    is_int(sz, 128, "align(65, 4)");
    GOOD(gpumem_device_data_align(dd, 0, 8, &sz));
    is_int(sz, 0, "align(0, 8)");
    sz = 77;
    BAD(gpumem_device_data_align(dd, SIZE_MAX - 3, 4, &sz), GPUMEM_ERROR_OVERFLOW, "bytes");
    BAD(gpumem_device_data_align(dd, 5, 3, &sz), GPUMEM_ERROR_INVALID_VALUE, "word_size");
    BAD(gpumem_device_data_align(dd, 5, 4, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "aligned");
    ok(sz == 77, "failed align leaves *aligned alone");
    GOOD(gpumem_device_data_align_words(dd, 4, &sz));
    is_int(sz, 16, "align_words(4)");
    GOOD(gpumem_device_data_align_words(dd, 16, &sz));
    is_int(sz, 8, "align_words(16)");
    BAD(gpumem_device_data_align_words(dd, 5, &sz), GPUMEM_ERROR_INVALID_VALUE, "word_size");
    BAD(gpumem_device_data_align_words(dd, 4, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "words");
    GOOD(gpumem_device_data_align_dtype(dd, 17, i32, &sz));
    is_int(sz, 32, "align_dtype(17, int32)");
    GOOD(gpumem_device_data_align_dtype(dd, 17, gpumem_dtype_builtin(GPUMEM_FLOAT64), &sz));
    is_int(sz, 32, "align_dtype(17, float64)");
    sz = 77;
    BAD(gpumem_device_data_align_dtype(dd, 17, gpumem_dtype_builtin(GPUMEM_INT16), &sz), GPUMEM_ERROR_INVALID_VALUE,
        "dtype");
    BAD(gpumem_device_data_align_dtype(dd, 17, NULL, &sz), GPUMEM_ERROR_NULL_ARGUMENT, "dtype");
    BAD(gpumem_device_data_align_dtype(dd, SIZE_MAX - 1, i32, &sz), GPUMEM_ERROR_OVERFLOW, "elements");
    BAD(gpumem_device_data_align_dtype(dd, 17, i32, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "aligned");
    ok(sz == 77, "failed align_dtype leaves *aligned alone");
    int cnt = 77;
    BAD(gpumem_make_valid_tex_channel_count(0, &cnt), GPUMEM_ERROR_INVALID_VALUE, "size");
    BAD(gpumem_make_valid_tex_channel_count(5, &cnt), GPUMEM_ERROR_INVALID_VALUE, "size");
    BAD(gpumem_make_valid_tex_channel_count(2, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "count");
    ok(cnt == 77, "failed tex_channel_count leaves *count alone");
    int want[5] = {0, 1, 2, 4, 4};
    int allc = 1;
    for (int i = 1; i <= 4; i++)
        allc &= gpumem_make_valid_tex_channel_count(i, &cnt) == GPUMEM_OK && cnt == want[i];
    ok(allc, "tex channel counts 1, 2, 4, 4");

    gpumem_occupancy_record r;
    memset(&r, 0xab, sizeof r);
    r.size = sizeof r - 1;
    BAD(gpumem_occupancy(dd, 128, 0, 32, &r), GPUMEM_ERROR_INVALID_VALUE, "size");
    ok(r.tb_per_mp == (int)0xabababab, "a too small record is untouched");
    r.size = sizeof r;
    BAD(gpumem_occupancy(dd, 0, 0, 32, &r), GPUMEM_ERROR_INVALID_VALUE, "threads");
    BAD(gpumem_occupancy(dd, 128, 0, -1, &r), GPUMEM_ERROR_INVALID_VALUE, "registers");
    BAD(gpumem_occupancy(NULL, 128, 0, 32, &r), GPUMEM_ERROR_NULL_ARGUMENT, "dd");
    BAD(gpumem_occupancy(dd, 128, 0, 32, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "record");
    ok(r.tb_per_mp == (int)0xabababab, "argument errors leave the record untouched");
    BAD(gpumem_occupancy(dd, 4096, 0, 32, &r), GPUMEM_ERROR_INVALID_VALUE, "thread");
    ok(r.tb_per_mp == 0 && r.occupancy == 0 && r.limited_by == GPUMEM_LIMITED_BY_WARPS,
       "too many threads: tb_per_mp 0, limited by warps (%d, %d)", r.tb_per_mp, (int)r.limited_by);
    BAD(gpumem_occupancy(dd, 128, 0, 256, &r), GPUMEM_ERROR_INVALID_VALUE, "register");
    ok(r.tb_per_mp == 0 && r.limited_by == GPUMEM_LIMITED_BY_REGISTERS, "too many registers: limited by registers");
    BAD(gpumem_occupancy(dd, 128, (size_t)1 << 30, 0, &r), GPUMEM_ERROR_INVALID_VALUE, "shared");
    ok(r.tb_per_mp == 0 && r.limited_by == GPUMEM_LIMITED_BY_SHARED_MEMORY, "too much shared memory");
    GOOD(gpumem_occupancy(dd, 128, 0, 0, &r));
    ok(r.tb_per_mp > 0 && r.occupancy > 0 && r.occupancy <= 1 && r.warps_per_block == 4 &&
           r.warps_per_mp == r.tb_per_mp * 4 && r.tb_limit_registers == GPUMEM_OCCUPANCY_NO_LIMIT &&
           (r.limiting_factors & (1u << r.limited_by)),
       "a plain workload: %d blocks, occupancy %g", r.tb_per_mp, r.occupancy);
    /* an older, shorter record: only its fields */
    struct { size_t size; int tb; int lim; int w; double occ; unsigned lf; int guard; } oldr;
    memset(&oldr, 0xab, sizeof oldr);
    oldr.size = offsetof(gpumem_occupancy_record, tb_limit_device);
    BAD(gpumem_occupancy(dd, 128, 0, 0, (gpumem_occupancy_record *)(void *)&oldr), GPUMEM_ERROR_INVALID_VALUE,
        "size");
    is_str(gpumem_occupancy_limit_name(GPUMEM_LIMITED_BY_DEVICE), "device", "limit name device");
    is_str(gpumem_occupancy_limit_name(GPUMEM_LIMITED_BY_WARPS), "warps", "limit name warps");
    is_str(gpumem_occupancy_limit_name(GPUMEM_LIMITED_BY_REGISTERS), "regs", "limit name regs");
    is_str(gpumem_occupancy_limit_name(GPUMEM_LIMITED_BY_SHARED_MEMORY), "smem", "limit name smem");
    ok(gpumem_occupancy_limit_name((gpumem_occupancy_limit)4) == NULL &&
           gpumem_occupancy_limit_name((gpumem_occupancy_limit)-1) == NULL, "unknown limit names are NULL");
    GOOD(gpumem_device_data_destroy(dd));
    BAD(gpumem_device_data_destroy(dd), GPUMEM_ERROR_INVALID_STATE, "dd");
    v = 77;
    BAD(gpumem_device_data_get(dd, GPUMEM_DEVICE_DATA_WARP_SIZE, &v), GPUMEM_ERROR_INVALID_STATE, "dd");
    ok(v == 77, "a destroyed device data leaves *value alone");
    BAD(gpumem_device_data_align_bytes(dd, 4, &sz), GPUMEM_ERROR_INVALID_STATE, "dd");
    BAD(gpumem_occupancy(dd, 128, 0, 0, &r), GPUMEM_ERROR_INVALID_STATE, "dd");
    GOOD(gpumem_device_data_destroy(NULL));
    gpumem_stream *s = NULL;
    MUST(gpumem_stream_create(ctx, 0, &s));
    BAD(gpumem_device_data_destroy((gpumem_device_data *)(void *)s), GPUMEM_ERROR_INVALID_VALUE, "dd");
    BAD(gpumem_device_data_get((gpumem_device_data *)(void *)s, GPUMEM_DEVICE_DATA_WARP_SIZE, &v),
        GPUMEM_ERROR_INVALID_VALUE, "dd");
    gpumem_stream_destroy(s);
}

/* ---- peer.h ----------------------------------------------------------------------------- */

static void test_peer(void)
{
    int can = 77, en = 77;
    BAD(gpumem_peer_can_access(0, 1, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "can");
    BAD(gpumem_peer_can_access(-1, 1, &can), GPUMEM_ERROR_INVALID_DEVICE, "device");
    BAD(gpumem_peer_can_access(0, 2, &can), GPUMEM_ERROR_INVALID_DEVICE, "peer");
    ok(can == 77, "failed can_access leaves *can alone");
    GOOD(gpumem_peer_can_access(0, 0, &can));
    is_int(can, 0, "a device is no peer of itself");
    BAD(gpumem_peer_set_enabled(2), GPUMEM_ERROR_INVALID_VALUE, "enabled");
    BAD(gpumem_peer_set_enabled(-1), GPUMEM_ERROR_INVALID_VALUE, "enabled");
    BAD(gpumem_peer_enabled(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "enabled");
    GOOD(gpumem_peer_enabled(&en));
    is_int(en, 1, "peer access on by default");
    GOOD(gpumem_peer_set_enabled(0));
    GOOD(gpumem_peer_enabled(&en));
    is_int(en, 0, "switched off");
    GOOD(gpumem_peer_set_enabled(1));
    GOOD(gpumem_peer_enabled(&en));
    is_int(en, 1, "switched on");
}

static void case_peer_env(const void *arg, child_result *out)
{
    setenv("GPUMEM_PEER", (const char *)arg, 1);
    int en = 77;
    out->status = gpumem_peer_enabled(&en);
    out->value[0] = en;
    snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
    out->value[1] = gpumem_peer_set_enabled(1);
    en = 77;
    out->value[2] = gpumem_peer_enabled(&en);
    out->value[3] = en;
}

static void peer_env_checks(void)
{
    child_result r;
    run_child(case_peer_env, "0", &r);
    ok(r.status == GPUMEM_OK && r.value[0] == 0, "GPUMEM_PEER=0: peer access off");
    run_child(case_peer_env, "2", &r);
    ok(r.status == GPUMEM_ERROR_INVALID_ENVIRONMENT && r.value[0] == 77 && strstr(r.text, "GPUMEM_PEER") &&
           strncmp(r.text, "gpumem_peer_enabled: ", 21) == 0,
       "GPUMEM_PEER=2: INVALID_ENVIRONMENT naming the variable, *enabled alone (%s)", r.text);
    ok(r.value[1] == GPUMEM_OK && r.value[2] == GPUMEM_ERROR_INVALID_ENVIRONMENT && r.value[3] == 77,
       "GPUMEM_PEER=2: gpumem_peer_set_enabled succeeds, the bad variable stays an error (peer.h)");
}

/* ---- trace.h ---------------------------------------------------------------------------- */

static void test_trace(void)
{
    char path[256];
    snprintf(path, sizeof path, "/tmp/gpumem-promises-pool-%ld.trace", (long)getpid());
    unlink(path);
    BAD(gpumem_trace_start(NULL, 0), GPUMEM_ERROR_NULL_ARGUMENT, "path");
    BAD(gpumem_trace_start("", 0), GPUMEM_ERROR_INVALID_VALUE, "path");
    BAD(gpumem_trace_start(path, 0x2), GPUMEM_ERROR_INVALID_VALUE, "flags");
    struct stat sb;
    ok(stat(path, &sb) != 0, "a refused start leaves no file");
    BAD(gpumem_trace_start("/nonexistent-dir/x.trace", 0), GPUMEM_ERROR_INVALID_VALUE, "/nonexistent-dir/x.trace");
    BAD(gpumem_trace_stop(), GPUMEM_ERROR_INVALID_STATE, NULL);
    if (access("/dev/full", W_OK) == 0) {
        BAD(gpumem_trace_start("/dev/full", 0), GPUMEM_ERROR_INVALID_VALUE, "/dev/full");
        like(gpumem_last_error(), "No space left", "a file that cannot be written: the system's reason");
        BAD(gpumem_trace_stop(), GPUMEM_ERROR_INVALID_STATE, NULL);
    } else {
        skip(3, "no /dev/full");
    }
    BAD(gpumem_trace_mark(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "name");
    GOOD(gpumem_trace_mark("not recording"));
    BAD(gpumem_trace_push(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "name");
    BAD(gpumem_trace_pop(), GPUMEM_ERROR_INVALID_STATE, NULL);
    GOOD(gpumem_trace_push("outside"));
    GOOD(gpumem_trace_start(path, GPUMEM_TRACE_CALL_SITES));
    BAD(gpumem_trace_start(path, 0), GPUMEM_ERROR_INVALID_STATE, NULL);
    GOOD(gpumem_trace_pop()); /* the region pushed before the trace */
    BAD(gpumem_trace_pop(), GPUMEM_ERROR_INVALID_STATE, NULL);
    GOOD(gpumem_trace_mark("step 1"));
    GOOD(gpumem_trace_push("solver"));
    gpumem_array *a = NULL;
    int64_t n = 1000;
    MUST(gpumem_device_array(ctx, 1, &n, NULL, i32, 'C', NULL, &a));
    gpumem_array_release(a);
    GOOD(gpumem_trace_pop());
    GOOD(gpumem_trace_stop());
    BAD(gpumem_trace_stop(), GPUMEM_ERROR_INVALID_STATE, NULL);
    ok(stat(path, &sb) == 0 && sb.st_size > 0, "the trace file was written (%lld bytes)", (long long)sb.st_size);
    unlink(path);
}

static void case_trace_env_bad(const void *arg, child_result *out)
{
    (void)arg;
    setenv("GPUMEM_TRACE", "/nonexistent-dir/t.trace", 1);
    gpumem_context *c = (gpumem_context *)out;
    out->status = gpumem_context_create(0, &c);
    snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
    out->value[0] = c == (gpumem_context *)out;
    c = (gpumem_context *)out;
    out->value[1] = gpumem_context_create(0, &c);
}

static void case_trace_stacks_bad(const void *arg, child_result *out)
{
    setenv("GPUMEM_TRACE_STACKS", (const char *)arg, 1);
    out->status = gpumem_trace_start((const char *)arg + 8, 0);
    snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
    struct stat sb;
    out->value[0] = stat((const char *)arg + 8, &sb) == 0;
}

static void case_trace_env_pid(const void *arg, child_result *out)
{
    const char *dir = arg;
    char pat[256], want[256];
    snprintf(pat, sizeof pat, "%s/t-%%p-%%%%.trace", dir);
    snprintf(want, sizeof want, "%s/t-%ld-%%.trace", dir, (long)getpid());
    setenv("GPUMEM_TRACE", pat, 1);
    gpumem_context *c = NULL;
    out->status = gpumem_context_create(0, &c);
    gpumem_context_release(c);
    gpumem_trace_stop();
    struct stat sb;
    out->value[0] = stat(want, &sb) == 0 && sb.st_size > 0;
    snprintf(out->note, sizeof out->note, "%s", want);
    unlink(want);
}

static void trace_env_checks(void)
{
    child_result r;
    run_child(case_trace_env_bad, NULL, &r);
    ok(r.status == GPUMEM_ERROR_INVALID_ENVIRONMENT && strstr(r.text, "GPUMEM_TRACE") && r.value[0] == 1 &&
           r.value[1] == GPUMEM_ERROR_INVALID_ENVIRONMENT,
       "GPUMEM_TRACE in a missing directory: every context creation fails naming it (%s)", r.text);
    char arg[256];
    snprintf(arg, sizeof arg, "yes%c%c%c%c%c/tmp/gpumem-promises-stacks-%ld.trace", 0, 0, 0, 0, 0, (long)getpid());
    /* arg: "yes" then the path at offset 8 */
    run_child(case_trace_stacks_bad, arg, &r);
    ok(r.status == GPUMEM_ERROR_INVALID_ENVIRONMENT && strstr(r.text, "GPUMEM_TRACE_STACKS") && r.value[0] == 0,
       "GPUMEM_TRACE_STACKS=yes: INVALID_ENVIRONMENT naming it, no file left (%s)", r.text);
    run_child(case_trace_pct, "/tmp/gpumem-promises-%q.trace", &r);
    ok(r.status == GPUMEM_ERROR_INVALID_ENVIRONMENT && strstr(r.text, "GPUMEM_TRACE") && r.value[0] == 1 &&
           r.value[1] == GPUMEM_ERROR_INVALID_ENVIRONMENT,
       "GPUMEM_TRACE with %%q: INVALID_ENVIRONMENT naming the variable, and again for a later context (%s)", r.text);
    run_child(case_trace_pct, "", &r);
    ok(r.status == GPUMEM_OK, "an empty GPUMEM_TRACE means no trace");
    char dir[] = "/tmp/gpumem-promises-XXXXXX";
    if (mkdtemp(dir) != NULL) {
        run_child(case_trace_env_pid, dir, &r);
        ok(r.status == GPUMEM_OK && r.value[0] == 1, "GPUMEM_TRACE: %%p is the process id, %%%% one %% (%s)", r.note);
        rmdir(dir);
    }
}


/* ---- behaviour the headers promise -------------------------------------------------------- */

static gpumem_allocation *race_alloc;
static gpumem_status race_res[2];

static void *race_free(void *arg)
{
    int i = *(int *)arg;
    race_res[i] = gpumem_allocation_free(race_alloc, NULL);
    return NULL;
}

static void test_pool_behaviour(void)
{
    gpumem_pool *p = NULL;
    gpumem_stream *s1 = NULL, *s2 = NULL;
    MUST(gpumem_pool_create(ctx, 0, &p));
    MUST(gpumem_stream_create(ctx, 0, &s1));
    MUST(gpumem_stream_create(ctx, 0, &s2));
    gpumem_allocation *a = NULL, *b = NULL;
    uint64_t pa = 0, pb = 0;
    /* pool.h: while the pool holds, frees with NULL and hits make no driver call */
    MUST(gpumem_pool_allocate(p, 5000, NULL, &a));
    MUST(gpumem_allocation_pointer(a, &pa));
    MUST(gpumem_allocation_free(a, NULL));
    int64_t c0 = calls(NULL);
    MUST(gpumem_pool_allocate(p, 5000, NULL, &b));
    MUST(gpumem_allocation_pointer(b, &pb));
    MUST(gpumem_allocation_free(b, NULL));
    ok(pa == pb && calls(NULL) == c0, "a held block reused and freed with NULL: the same block, no driver call");
    /* a free with a stream records one event; the same stream reuses the block at once */
    MUST(gpumem_pool_allocate(p, 5000, s1, &a));
    MUST(gpumem_allocation_pointer(a, &pa));
    int64_t ev0 = calls("cuEventCreate") + calls("cuEventRecord");
    MUST(gpumem_allocation_free(a, s1));
    ok(calls("cuEventCreate") + calls("cuEventRecord") - ev0 <= 2 && calls("cuEventRecord") > 0,
       "a free with a stream records one event");
    MUST(gpumem_pool_allocate(p, 5000, s1, &b));
    MUST(gpumem_allocation_pointer(b, &pb));
    ok(pa == pb, "the same stream reuses the block at once");
    MUST(gpumem_allocation_free(b, s1));
    MUST(gpumem_stream_synchronize(s1));
    MUST(gpumem_pool_allocate(p, 5000, s2, &b));
    MUST(gpumem_allocation_pointer(b, &pb));
    ok(pa == pb, "another stream reuses it once its event completed");
    MUST(gpumem_allocation_free(b, NULL));
    /* the events are pooled: later frees on a stream record, create none;
     * free_held destroys them */
    {
        int exact = 1;
        for (int round = 0; round < 3; round++) {
            int64_t e0 = calls("cuEventCreate"), r0 = calls("cuEventRecord");
            MUST(gpumem_pool_allocate(p, 5000, s1, &a));
            MUST(gpumem_allocation_free(a, s1));
            MUST(gpumem_stream_synchronize(s1));
            exact &= calls("cuEventRecord") - r0 == 1 && calls("cuEventCreate") - e0 == 0;
        }
        ok(exact, "later frees on a stream record one pooled event each and create none");
        int64_t d0 = calls("cuEventDestroy");
        MUST(gpumem_pool_free_held(p));
        ok(calls("cuEventDestroy") > d0, "free_held destroys the pooled events");
    }
    /* of two threads that free one handle at once, exactly one succeeds */
    int exactly_one = 1;
    for (int it = 0; it < 100; it++) {
        MUST(gpumem_pool_allocate(p, 1024, NULL, &race_alloc));
        pthread_t t[2];
        int ids[2] = {0, 1};
        for (int i = 0; i < 2; i++)
            pthread_create(&t[i], NULL, race_free, &ids[i]);
        for (int i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
        exactly_one &= (race_res[0] == GPUMEM_OK) + (race_res[1] == GPUMEM_OK) == 1 &&
                       (race_res[0] == GPUMEM_ERROR_INVALID_STATE || race_res[1] == GPUMEM_ERROR_INVALID_STATE);
    }
    ok(exactly_one, "two threads free one handle at once: exactly one succeeds, the other INVALID_STATE");
    /* every driver call of a pool call failed in turn: a status naming the call,
     * outputs untouched, and a free that fails still ends its handle */
    static const char *const names[] = {"gpumem_pool_allocate", "gpumem_allocation_free", "gpumem_pool_device_array",
                                        "gpumem_pool_free_held"};
    int64_t n100 = 100;
    for (int w = 0; w < 4; w++) {
        int failures = 0, clean = 1;
        for (uint64_t k = 1; k < 20; k++) {
            void *sent = &failures, *out = sent;
            gpumem_allocation *x = NULL;
            if (w == 1)
                MUST(gpumem_pool_allocate(p, 4096, s1, &x));
            if (w == 3) {
                MUST(gpumem_pool_allocate(p, 4096, s1, &x));
                MUST(gpumem_allocation_free(x, s1));
            }
            gpumem_status st;
            gpumem_debug_fail_call(k, 999);
            switch (w) {
            case 0: st = gpumem_pool_allocate(p, 8192, s1, (gpumem_allocation **)&out); break;
            case 1: st = gpumem_allocation_free(x, s1); break;
            case 2: st = gpumem_pool_device_array(p, 1, &n100, i32, 'C', s1, (gpumem_array **)&out); break;
            default: st = gpumem_pool_free_held(p); break;
            }
            gpumem_debug_fail_call(0, 0);
            if (st == GPUMEM_OK) {
                if (w == 0)
                    gpumem_allocation_free(out, s1);
                if (w == 2)
                    gpumem_array_release(out);
                break;
            }
            failures++;
            char fn[64];
            snprintf(fn, sizeof fn, "%s: ", names[w]);
            int good = out == sent && strncmp(gpumem_last_error(), fn, strlen(fn)) == 0 &&
                       gpumem_last_status() == st && gpumem_last_driver_result() == 999;
            if (w == 1)
                good &= gpumem_allocation_free(x, s1) == GPUMEM_ERROR_INVALID_STATE;
            if (!good)
                diag("  %s failing at driver call %llu: %s", names[w], (unsigned long long)k, gpumem_last_error());
            clean &= good;
        }
        ok(failures > 0 && clean, "%s: each of its %d driver calls failed in turn: named, outputs untouched%s",
           names[w], failures, w == 1 ? ", the handle ended" : "");
    }
    uint64_t count = 77;
    MUST(gpumem_pool_active_blocks(p, &count));
    is_int(count, 0, "after the failures no block is left active");
    /* the out-of-memory ladder gives back held blocks and retries once */
    gpumem_allocation *big = NULL;
    MUST(gpumem_pool_allocate(p, (size_t)150 << 20, NULL, &big));
    MUST(gpumem_allocation_free(big, NULL));
    GOOD(gpumem_pool_allocate(p, (size_t)200 << 20, NULL, &big));
    struct gpumem_pool_stats st = {.size = sizeof st};
    MUST(gpumem_pool_stats(p, &st));
    ok(st.oom_retries == 1 && st.held_blocks == 0 && st.active_blocks == 1,
       "the ladder: held blocks given back, one retry counted (%llu retries, %llu held)",
       (unsigned long long)st.oom_retries, (unsigned long long)st.held_blocks);
    MUST(gpumem_allocation_free(big, NULL));
    MUST(gpumem_pool_destroy(p));
    gpumem_stream_destroy(s1);
    gpumem_stream_destroy(s2);

    /* pool.h Lifetime: allocations of a destroyed pool stay valid, and
     * memory.h counts them as live until they are freed (a destroyed pool
     * itself is neither counted nor listed) */
    {
        struct gpumem_memory_report r0, r1, r2;
        memset(&r0, 0, sizeof r0);
        r0.size = sizeof r0;
        r1 = r2 = r0;
        MUST(gpumem_memory_report(ctx2, 0, &r0));
        gpumem_pool *zp = NULL;
        gpumem_allocation *za = NULL;
        gpumem_array *zarr = NULL;
        int64_t zn = 1 << 18;
        MUST(gpumem_pool_create(ctx2, 0, &zp));
        MUST(gpumem_pool_allocate(zp, 1 << 20, NULL, &za));
        MUST(gpumem_pool_device_array(zp, 1, &zn, i32, 'C', NULL, &zarr));
        MUST(gpumem_pool_destroy(zp));
        MUST(gpumem_memory_report(ctx2, 0, &r1));
        size_t npools = 77;
        MUST(gpumem_memory_pools(ctx2, 0, NULL, 0, &npools));
        ok(r1.device.bytes - r0.device.bytes == (2u << 20) && r1.device.count - r0.device.count == 2 &&
               r1.device_reserved_bytes - r0.device_reserved_bytes == (2u << 20) && r1.pools == r0.pools &&
               npools == r0.pools,
           "a destroyed pool's live allocations still count in the memory report (%llu bytes, %llu reserved), "
           "the pool not (%llu pools, %zu listed)",
           (unsigned long long)(r1.device.bytes - r0.device.bytes),
           (unsigned long long)(r1.device_reserved_bytes - r0.device_reserved_bytes), (unsigned long long)r1.pools,
           npools);
        int32_t v7 = 7, got7 = 0;
        GOOD(gpumem_array_fill(zarr, &v7, NULL));
        GOOD(gpumem_array_get_item_n(zarr, 1, (const int64_t[]){(1 << 18) - 1}, &got7, NULL));
        is_int(got7, 7, "an array of a destroyed pool is usable");
        GOOD(gpumem_allocation_free(za, NULL));
        GOOD(gpumem_array_release(zarr));
        MUST(gpumem_memory_report(ctx2, 0, &r2));
        ok(r2.device.bytes == r0.device.bytes && r2.device_reserved_bytes == r0.device_reserved_bytes,
           "freed, they leave the report");
    }

    /* module.h: a cached module, a known kernel: no driver call */
    gpumem_module *m1 = NULL, *m2 = NULL;
    gpumem_function *f1 = NULL, *f2 = NULL;
    MUST(gpumem_module_load(ctx, k_ptx, 0, &m1));
    MUST(gpumem_module_get_function(m1, "k", &f1));
    c0 = calls(NULL);
    MUST(gpumem_module_load(ctx, k_ptx, 0, &m2));
    MUST(gpumem_module_get_function(m2, "k", &f2));
    ok(m1 == m2 && f1 == f2 && calls(NULL) == c0, "a second load and lookup: the same handles, no driver call");
    gpumem_module_release(m2);
    gpumem_module_release(m1);

    /* occupancy.h: the functions that take a device data call no driver */
    gpumem_device_data *dd = NULL;
    MUST(gpumem_device_data_create(0, &dd));
    gpumem_occupancy_record r = {.size = sizeof r};
    int v = 0;
    size_t z = 0;
    gpumem_debug_fail_call(1, 999);
    gpumem_status s_occ = gpumem_occupancy(dd, 96, 1000, 40, &r);
    gpumem_status s_get = gpumem_device_data_get(dd, GPUMEM_DEVICE_DATA_WARPS_PER_MP, &v);
    gpumem_status s_al = gpumem_device_data_align(dd, 5, 4, &z);
    gpumem_debug_fail_call(0, 0);
    ok(s_occ == GPUMEM_OK && s_get == GPUMEM_OK && s_al == GPUMEM_OK, "occupancy, get and align call no driver");
    /* sm_90: 3 warps of 40 registers: 1280 a warp, 12 warps a partition, 16 blocks; 1000 + 1024 B -> 2048 */
    ok(r.tb_per_mp == 16 && r.limited_by == GPUMEM_LIMITED_BY_REGISTERS && r.registers_per_block == 3840 &&
           r.shared_memory_per_block == 2048 && r.tb_limit_shared_memory == 233472 / 2048 && r.tb_limit_warps == 21 &&
           r.warps_per_mp == 48 && r.occupancy == 0.75 && r.limiting_factors == (1u << GPUMEM_LIMITED_BY_REGISTERS),
       "96 threads, 1000 B, 40 registers: 16 blocks, limited by registers, occupancy 0.75");
    /* a tie: 64 threads: the device's 32 blocks and the warps' 32 */
    MUST(gpumem_occupancy(dd, 64, 0, 0, &r));
    ok(r.tb_per_mp == 32 && r.limited_by == GPUMEM_LIMITED_BY_DEVICE &&
           r.limiting_factors == ((1u << GPUMEM_LIMITED_BY_DEVICE) | (1u << GPUMEM_LIMITED_BY_WARPS)),
       "a tie of device and warps: limited by device, both factors listed");
    /* several limits exceeded: the first of warps, registers, shared memory */
    gpumem_occupancy(dd, 4096, (size_t)1 << 30, 256, &r);
    ok(r.tb_per_mp == 0 && r.limited_by == GPUMEM_LIMITED_BY_WARPS, "threads, registers and smem exceeded: warps");
    gpumem_occupancy(dd, 128, (size_t)1 << 30, 256, &r);
    ok(r.tb_per_mp == 0 && r.limited_by == GPUMEM_LIMITED_BY_REGISTERS, "registers and smem exceeded: registers");
    BAD(gpumem_occupancy(dd, 1024, 0, 255, &r), GPUMEM_ERROR_INVALID_VALUE, "registers");
    ok(r.tb_per_mp == 0 && r.limited_by == GPUMEM_LIMITED_BY_REGISTERS,
       "1024 threads of 255 registers: more registers per block than the device allows");
    gpumem_device_data_destroy(dd);
}

/* pool.h Threads: the caches belong to the pool */
static gpumem_pool *cache_pool;
static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cache_cv = PTHREAD_COND_INITIALIZER;
static int cache_step;

static void *cache_keeper(void *arg)
{
    (void)arg;
    gpumem_allocation *a = NULL;
    MUST(gpumem_pool_allocate(cache_pool, 4096, NULL, &a));
    MUST(gpumem_allocation_free(a, NULL)); /* into this thread's cache */
    pthread_mutex_lock(&cache_mu);
    cache_step = 1;
    pthread_cond_broadcast(&cache_cv);
    while (cache_step != 2)
        pthread_cond_wait(&cache_cv, &cache_mu);
    pthread_mutex_unlock(&cache_mu);
    return NULL;
}

static void *cache_exiter(void *arg)
{
    (void)arg;
    gpumem_allocation *a = NULL;
    MUST(gpumem_pool_allocate(cache_pool, 8192, NULL, &a));
    MUST(gpumem_allocation_free(a, NULL));
    return NULL;
}

static void test_pool_threads(void)
{
    MUST(gpumem_pool_create(ctx, 0, &cache_pool));
    pthread_t t;
    pthread_create(&t, NULL, cache_keeper, NULL);
    pthread_mutex_lock(&cache_mu);
    while (cache_step != 1)
        pthread_cond_wait(&cache_cv, &cache_mu);
    pthread_mutex_unlock(&cache_mu);
    uint64_t held = 77;
    GOOD(gpumem_pool_held_blocks(cache_pool, &held));
    is_int(held, 1, "held_blocks counts a block in another thread's cache");
    GOOD(gpumem_pool_free_held(cache_pool));
    struct gpumem_pool_stats st = {.size = sizeof st};
    GOOD(gpumem_pool_stats(cache_pool, &st));
    ok(st.held_blocks == 0 && st.driver_frees == 1, "free_held empties another (live) thread's cache too");
    pthread_mutex_lock(&cache_mu);
    cache_step = 2;
    pthread_cond_broadcast(&cache_cv);
    pthread_mutex_unlock(&cache_mu);
    pthread_join(t, NULL);
    pthread_create(&t, NULL, cache_exiter, NULL);
    pthread_join(t, NULL);
    gpumem_allocation *a = NULL;
    GOOD(gpumem_pool_allocate(cache_pool, 8192, NULL, &a));
    GOOD(gpumem_pool_stats(cache_pool, &st));
    ok(st.hits == 1 && st.misses == 2, "a thread that exits hands its cache back: its block is reused here");
    GOOD(gpumem_allocation_free(a, NULL));
    /* peak_active_bytes: sampled at each new block */
    gpumem_allocation *x = NULL, *y = NULL;
    MUST(gpumem_pool_allocate(cache_pool, 1 << 20, NULL, &x));
    MUST(gpumem_pool_allocate(cache_pool, 1 << 20, NULL, &y));
    MUST(gpumem_allocation_free(x, NULL));
    MUST(gpumem_allocation_free(y, NULL));
    GOOD(gpumem_pool_stats(cache_pool, &st));
    ok(st.peak_active_bytes == (2u << 20) && st.active_bytes == 0 && st.active_requested_bytes == 0,
       "peak_active_bytes keeps the 2 MiB of two live blocks");
    GOOD(gpumem_pool_destroy(cache_pool));
    /* GPUMEM_POOL_NO_THREAD_CACHE still reuses, through the shared store */
    gpumem_pool *q = NULL;
    MUST(gpumem_pool_create(ctx, GPUMEM_POOL_NO_THREAD_CACHE, &q));
    MUST(gpumem_pool_allocate(q, 100, NULL, &x));
    MUST(gpumem_allocation_free(x, NULL));
    MUST(gpumem_pool_allocate(q, 100, NULL, &x));
    GOOD(gpumem_pool_stats(q, &st));
    ok(st.hits == 1 && st.misses == 1, "without thread caches a freed block is still reused");
    MUST(gpumem_allocation_free(x, NULL));
    GOOD(gpumem_pool_destroy(q));
}

/* occupancy.h's table: the values it gives for some architectures */
static void case_arch(const void *arg, child_result *out)
{
    setenv("GPUMEM_SIM_ARCH", (const char *)arg, 1);
    gpumem_device_data *dd = NULL;
    out->status = gpumem_device_data_create(0, &dd);
    static const gpumem_device_data_field f[] = {
        GPUMEM_DEVICE_DATA_WARPS_PER_MP, GPUMEM_DEVICE_DATA_THREAD_BLOCKS_PER_MP,
        GPUMEM_DEVICE_DATA_SMEM_ALLOC_GRANULARITY, GPUMEM_DEVICE_DATA_RESERVED_SHARED_MEMORY,
        GPUMEM_DEVICE_DATA_REGISTER_PARTITIONS, GPUMEM_DEVICE_DATA_COMPUTE_CAPABILITY,
        GPUMEM_DEVICE_DATA_SHARED_MEMORY, GPUMEM_DEVICE_DATA_MAX_REGISTERS_PER_THREAD};
    for (int i = 0; i < 8 && out->status == GPUMEM_OK; i++) {
        int v = -1;
        gpumem_device_data_get(dd, f[i], &v);
        out->value[i] = v;
    }
    gpumem_device_data_destroy(dd);
}

static void arch_checks(void)
{
    static const struct {
        const char *arch;
        long want[8];
    } rows[] = {
        {"sm_75", {32, 16, 256, 0, 4, 75, 49152, 255}},
        {"sm_80", {64, 32, 128, 1024, 4, 80, 49152, 255}},
        {"sm_86", {48, 16, 128, 1024, 4, 86, 49152, 255}},
        {"sm_89", {48, 24, 128, 1024, 4, 89, 49152, 255}},
        {"sm_90", {64, 32, 128, 1024, 4, 90, 49152, 255}},
        {"sm_120", {48, 24, 128, 1024, 4, 120, 49152, 255}},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        child_result r;
        run_child(case_arch, rows[i].arch, &r);
        int same = r.status == GPUMEM_OK;
        for (int j = 0; j < 8; j++)
            same &= r.value[j] == rows[i].want[j];
        ok(same, "%s: warps/mp %ld, blocks/mp %ld, smem unit %ld, reserved %ld, partitions %ld, cc %ld (occupancy.h)",
           rows[i].arch, r.value[0], r.value[1], r.value[2], r.value[3], r.value[4], r.value[5]);
    }
}

/* pool.h Streams, with queued work that waits until something synchronizes
 * (GPUMEM_SIM_STREAM_DELAY_US): a block freed on s1 with work pending is
 * reused at once on s1, and on another stream, with NULL, or (a host block)
 * at all, only once s1's work is done. */
static void case_streams(const void *arg, child_result *out)
{
    (void)arg;
    setenv("GPUMEM_SIM_STREAM_DELAY_US", "10000000", 1);
    gpumem_context *c = NULL;
    if ((out->status = gpumem_context_create(0, &c)) != GPUMEM_OK)
        return;
    const gpumem_dtype *t = gpumem_dtype_builtin(GPUMEM_INT32);
    int64_t n = 1 << 16;
    int32_t v = 3;
    int i = 0;
    for (int other = 0; other < 3; other++)
        for (int sync = 0; sync < 2; sync++) {
            gpumem_stream *s1 = NULL, *s2 = NULL;
            gpumem_pool *p = NULL;
            gpumem_array *a = NULL, *b = NULL;
            gpumem_stream_create(c, 0, &s1);
            gpumem_stream_create(c, 0, &s2);
            gpumem_pool_create(c, 0, &p);
            gpumem_pool_device_array(p, 1, &n, t, 'C', s1, &a);
            gpumem_array_fill(a, &v, s1);
            gpumem_array_release(a); /* back to the pool, ordered on s1 */
            if (sync)
                gpumem_stream_synchronize(s1);
            gpumem_pool_device_array(p, 1, &n, t, 'C', other == 0 ? s1 : other == 1 ? s2 : NULL, &b);
            struct gpumem_pool_stats st = {.size = sizeof st};
            gpumem_pool_stats(p, &st);
            out->value[i++] = (long)st.hits;
            gpumem_array_release(b);
            gpumem_pool_destroy(p);
            gpumem_stream_destroy(s1);
            gpumem_stream_destroy(s2);
        }
    for (int sync = 0; sync < 2; sync++) {
        gpumem_stream *s1 = NULL;
        gpumem_host_pool *hp = NULL;
        gpumem_array *d = NULL;
        gpumem_allocation *h1 = NULL, *h2 = NULL;
        gpumem_stream_create(c, 0, &s1);
        gpumem_host_pool_create(c, 0, &hp);
        gpumem_device_array(c, 1, &n, NULL, t, 'C', NULL, &d);
        gpumem_host_pool_allocate_bytes(hp, 4096, &h1);
        gpumem_array_fill(d, &v, s1);
        gpumem_allocation_free(h1, s1);
        if (sync)
            gpumem_stream_synchronize(s1);
        gpumem_host_pool_allocate_bytes(hp, 4096, &h2);
        struct gpumem_pool_stats st = {.size = sizeof st};
        gpumem_host_pool_stats(hp, &st);
        out->value[i++] = (long)st.hits;
        gpumem_allocation_free(h2, NULL);
        gpumem_host_pool_destroy(hp);
        gpumem_array_release(d);
        gpumem_stream_destroy(s1);
    }
    gpumem_context_release(c);
}

static void stream_checks(void)
{
    child_result r;
    run_child(case_streams, NULL, &r);
    ok(r.status == GPUMEM_OK && r.value[0] == 1 && r.value[1] == 1, "the same stream reuses a pending block at once");
    ok(r.value[2] == 0 && r.value[3] == 1, "another stream: a fresh block while s1's work is pending, reuse after");
    ok(r.value[4] == 0 && r.value[5] == 1, "a NULL stream: a fresh block while pending, reuse after");
    ok(r.value[6] == 0 && r.value[7] == 1, "a host block freed on a stream: reused only once its work is done");
}

/* GPUMEM_ALLOCATOR (doc/environment.md) */
static void case_allocator(const void *arg, child_result *out)
{
    setenv("GPUMEM_ALLOCATOR", (const char *)arg, 1);
    gpumem_context *c = (gpumem_context *)out;
    out->status = gpumem_context_create(0, &c);
    snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
    if (out->status != GPUMEM_OK) {
        out->value[2] = c == (gpumem_context *)out;
        c = NULL;
        out->value[3] = gpumem_context_create(0, &c);
        return;
    }
    int64_t n = 1000;
    gpumem_array *a = NULL;
    gpumem_device_array(c, 1, &n, NULL, gpumem_dtype_builtin(GPUMEM_INT32), 'C', NULL, &a);
    gpumem_array_release(a);
    struct gpumem_memory_report rep;
    memset(&rep, 0, sizeof rep);
    rep.size = sizeof rep;
    gpumem_memory_report(c, 0, &rep);
    out->value[0] = (long)rep.pools;
    out->value[1] = (long)rep.pool_held_blocks;
    gpumem_context_release(c);
}

static void allocator_env_checks(void)
{
    child_result r;
    run_child(case_allocator, "pool", &r);
    ok(r.status == GPUMEM_OK && r.value[0] == 1 && r.value[1] == 1,
       "GPUMEM_ALLOCATOR=pool: the context's own pool holds the released array's block");
    run_child(case_allocator, " Pool ", &r);
    ok(r.status == GPUMEM_OK && r.value[0] == 1, "GPUMEM_ALLOCATOR=' Pool ': a word in any case, blanks around");
    run_child(case_allocator, "driver", &r);
    ok(r.status == GPUMEM_OK && r.value[0] == 0 && r.value[1] == 0, "GPUMEM_ALLOCATOR=driver: no pool");
    run_child(case_allocator, "caching", &r);
    ok(r.status == GPUMEM_ERROR_INVALID_ENVIRONMENT && strstr(r.text, "GPUMEM_ALLOCATOR") &&
           strstr(r.text, "caching") && r.value[2] == 1 && r.value[3] == GPUMEM_ERROR_INVALID_ENVIRONMENT,
       "GPUMEM_ALLOCATOR=caching: INVALID_ENVIRONMENT naming the variable and value, *ctx alone (%s)", r.text);
}

static void case_trace_pct(const void *arg, child_result *out)
{
    setenv("GPUMEM_TRACE", (const char *)arg, 1);
    gpumem_context *c = (gpumem_context *)out;
    out->status = gpumem_context_create(0, &c);
    snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
    if (out->status == GPUMEM_OK) {
        gpumem_context_release(c);
        return;
    }
    out->value[0] = c == (gpumem_context *)out;
    out->value[1] = gpumem_context_create(0, &c); /* every later creation fails too */
}

/* ---- testing.h, version.h --------------------------------------------------------------- */

static void test_testing(void)
{
    char why[128];
    gpumem_context *c = NULL;
    memset(why, 'x', sizeof why);
    BAD(gpumem_test_context(NULL, why, sizeof why), GPUMEM_ERROR_NULL_ARGUMENT, "ctx");
    ok(memchr(why, 0, sizeof why) != NULL && strstr(why, "ctx") != NULL && strchr(why, '\n') == NULL,
       "a NULL ctx: the reason is filled too, one line naming the argument (%.40s)", why);
    GOOD(gpumem_test_context(&c, why, sizeof why));
    is_str(why, "", "on success the reason is empty");
    gpumem_context_release(c);
    GOOD(gpumem_test_context(&c, NULL, 0));
    gpumem_context_release(c);
    BAD(gpumem_test_context(&c, NULL, 16), GPUMEM_ERROR_NULL_ARGUMENT, "reason");
    ok(gpumem_test_should_skip(GPUMEM_ERROR_NO_DEVICE) && gpumem_test_should_skip(GPUMEM_ERROR_DRIVER_NOT_FOUND) &&
           gpumem_test_should_skip(GPUMEM_ERROR_DEVICE_UNAVAILABLE) &&
           !gpumem_test_should_skip(GPUMEM_ERROR_INVALID_ENVIRONMENT) && !gpumem_test_should_skip(GPUMEM_OK),
       "gpumem_test_should_skip");
}

static void case_test_ctx_bad(const void *arg, child_result *out)
{
    setenv("CUDA_DEVICE", (const char *)arg, 1);
    char why[64];
    memset(why, 'x', sizeof why);
    gpumem_context *c = (gpumem_context *)out;
    out->status = gpumem_test_context(&c, why, sizeof why);
    out->value[0] = c == (gpumem_context *)out;
    out->value[1] = memchr(why, 0, sizeof why) != NULL;
    out->value[2] = strchr(why, '\n') == NULL;
    snprintf(out->text, sizeof out->text, "%.*s", (int)sizeof why, why);
    out->value[3] = gpumem_test_should_skip(out->status);
}

/* arg: "VAR=value;VAR=value": the environment of one gpumem_test_context call */
static void case_test_ctx_env(const void *arg, child_result *out)
{
    char env[256];
    snprintf(env, sizeof env, "%s", (const char *)arg);
    for (char *save = NULL, *kv = strtok_r(env, ";", &save); kv != NULL; kv = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(kv, '=');
        *eq = '\0';
        setenv(kv, eq + 1, 1);
    }
    char why[512];
    gpumem_context *c = (gpumem_context *)out;
    out->status = gpumem_test_context(&c, why, sizeof why);
    out->value[0] = gpumem_test_should_skip(out->status);
    out->value[1] = c == (gpumem_context *)out;
    snprintf(out->text, sizeof out->text, "%s", why);
}

/* One device whose context creation fails with a driver error: the scan
 * finds no device; testing.h says that is NO_DEVICE, a skip, with the
 * driver's error in the reason. */
static void case_test_ctx_scan(const void *arg, child_result *out)
{
    (void)arg;
    setenv("GPUMEM_SIM_DEVICES", "1", 1);
    setenv("HOME", "/nonexistent", 1);
    for (uint64_t k = 1; k < 8; k++) {
        char why[256];
        gpumem_context *c = (gpumem_context *)out;
        memset(why, 'x', sizeof why);
        gpumem_debug_fail_call(k, 999);
        gpumem_status st = gpumem_test_context(&c, why, sizeof why);
        gpumem_debug_fail_call(0, 0);
        if (st == GPUMEM_OK) {
            gpumem_context_release(c);
            continue;
        }
        if (st != GPUMEM_ERROR_NO_DEVICE)
            continue;
        out->value[0]++;
        int good = gpumem_test_should_skip(st) && strstr(why, "CUDA_ERROR_UNKNOWN") != NULL &&
                   strncmp(why, "no CUDA device: ", 16) == 0 && gpumem_last_driver_result() == 999 &&
                   c == (gpumem_context *)out;
        if (!good)
            snprintf(out->text, sizeof out->text, "%.*s", (int)sizeof why, why);
        out->value[1] += !good;
    }
}

static void testing_env_checks(void)
{
    child_result r;
    run_child(case_test_ctx_env, "GPUMEM_BACKEND=cuda;GPUMEM_CUDA_LIBRARY=/nonexistent/libcuda.so.1", &r);
    ok(r.status == GPUMEM_ERROR_DRIVER_NOT_FOUND && r.value[0] == 1 && r.value[1] == 1 &&
           strncmp(r.text, "no CUDA driver: ", 16) == 0,
       "no driver: DRIVER_NOT_FOUND, a skip, 'no CUDA driver: ...' (%.60s)", r.text);
    run_child(case_test_ctx_env, "GPUMEM_SIM_DEVICES=2;GPUMEM_SIM_BUSY=0,1;HOME=/nonexistent", &r);
    ok(r.status == GPUMEM_ERROR_NO_DEVICE && r.value[0] == 1 && strncmp(r.text, "no CUDA device: ", 16) == 0 &&
           strstr(r.text, "CUDA_ERROR_DEVICE_UNAVAILABLE") != NULL,
       "every device busy: NO_DEVICE, a skip, naming the devices' error (%.60s)", r.text);
    run_child(case_test_ctx_env, "GPUMEM_SIM_BUSY=0;CUDA_DEVICE=0", &r);
    ok(r.status == GPUMEM_ERROR_DEVICE_UNAVAILABLE && r.value[0] == 1 &&
           strncmp(r.text, "no CUDA device available: ", 26) == 0,
       "CUDA_DEVICE names a busy device: DEVICE_UNAVAILABLE, a skip (%.60s)", r.text);
    run_child(case_test_ctx_env, "GPUMEM_BACKEND=bogus", &r);
    ok(r.status == GPUMEM_ERROR_INVALID_ENVIRONMENT && r.value[0] == 0 && strncmp(r.text, "no test context: ", 17) == 0 &&
           strstr(r.text, "GPUMEM_BACKEND") != NULL,
       "a bad GPUMEM_BACKEND: a failure, not a skip (%.60s)", r.text);
    run_child(case_test_ctx_scan, NULL, &r);
    ok(r.value[0] > 0 && r.value[1] == 0,
       "a scan in which the only device fails: NO_DEVICE, a skip, naming the driver's error (%ld times) %s",
       r.value[0], r.text);
    run_child(case_test_ctx_bad, "7", &r);
    ok(r.status == GPUMEM_ERROR_INVALID_DEVICE || r.status == GPUMEM_ERROR_INVALID_ENVIRONMENT,
       "CUDA_DEVICE=7 on two devices: a failure (%s)", gpumem_status_string(r.status));
    ok(r.value[0] == 1 && r.value[1] == 1 && r.value[2] == 1 && r.value[3] == 0,
       "the reason is one terminated line, *ctx alone, not a skip (%s)", r.text);
}

static void test_version(void)
{
    is_int(gpumem_version(), GPUMEM_VERSION_NUMBER, "gpumem_version() == GPUMEM_VERSION_NUMBER");
    is_str(gpumem_version_string(), GPUMEM_VERSION_STRING, "gpumem_version_string() == GPUMEM_VERSION_STRING");
    char buf[32];
    snprintf(buf, sizeof buf, "%d.%d.%d", GPUMEM_VERSION_MAJOR, GPUMEM_VERSION_MINOR, GPUMEM_VERSION_PATCH);
    is_str(GPUMEM_VERSION_STRING, buf, "the string macro matches the numbers");
    ok(gpumem_version_string() == gpumem_version_string(), "the version string is static");
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
