/*
 * device_pool.c - pycuda's DeviceMemoryPool: every gpumem_pool_* call, over
 * the pool core (pool.h) and the context allocator (alloc.h), and
 * gpumem_context_set_pool (numba's memory-manager plug-in).
 */
#include "config.h"

#include <stdatomic.h>

#include "alloc.h"
#include "array.h"
#include "copy_debug.h"
#include "error.h"
#include "memstats.h"
#include "pool.h"
#include "stream.h"

/* ---- device pools ------------------------------------------------------------------ */

GPUMEM_API gpumem_status gpumem_pool_create(gpumem_context *ctx, unsigned flags, gpumem_pool **pool)
{
    GM_CHECK_NULL(pool);
    if (flags & ~(unsigned)GPUMEM_POOL_NO_THREAD_CACHE)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "gpumem_pool_create: unknown flags 0x%x", flags);
    gm_pool *p = NULL;
    const gm_source_config src = {.kind = GM_SOURCE_DEVICE};
    gpumem_status st = gm_pool_core_create(GM_POOL_DEVICE, ctx, flags, &src, "gpumem_pool_create", &p);
    if (st == GPUMEM_OK)
        *pool = (gpumem_pool *)(void *)p;
    return st;
}

GPUMEM_API gpumem_status gpumem_pool_create_with_props(gpumem_context *ctx, const struct gpumem_pool_props *props,
                                                       gpumem_pool **pool)
{
    GM_CHECK_NULL(props);
    GM_CHECK_NULL(pool);
    gm_pool *p = NULL;
    gpumem_status st = gm_pool_core_create_props(GM_POOL_DEVICE, ctx, props, "gpumem_pool_create_with_props", &p);
    if (st == GPUMEM_OK)
        *pool = (gpumem_pool *)(void *)p;
    return st;
}

GPUMEM_API gpumem_status gpumem_pool_trim(gpumem_pool *pool, uint64_t keep_bytes)
{
    gm_pool *p = gm_pool_of_device(pool);
    gpumem_status st = gm_pool_core_check(p, GM_POOL_DEVICE, "gpumem_pool_trim", "pool");
    return st != GPUMEM_OK ? st : gm_pool_core_trim(p, keep_bytes, "gpumem_pool_trim");
}

GPUMEM_API gpumem_status gpumem_pool_destroy(gpumem_pool *pool)
{
    if (pool == NULL)
        return GPUMEM_OK;
    GM_END_HANDLE(pool);
    return gm_pool_core_destroy(gm_pool_of_device(pool), "gpumem_pool_destroy");
}

GPUMEM_API gpumem_status gpumem_pool_allocate(gpumem_pool *pool, size_t size, gpumem_stream *stream,
                                              gpumem_allocation **alloc)
{
    GM_CHECK_NULL(alloc);
    const char *what = "gpumem_pool_allocate";
    gm_block b;
    gpumem_status st = gm_alloc_device_pool(pool, size, stream, what, &b);
    if (st == GPUMEM_OK) {
        gm_stream_unhold(b.stream); /* the caller frees it with its own stream */
        *alloc = b.token;
        if (gm_leaks_enabled())
            gm_leak_add(gm_pool_context(gm_pool_of_device(pool)), GM_LEAK_ALLOCATION, (uintptr_t)b.token,
                        GPUMEM_MEMORY_DEVICE, size, what);
    }
    return st;
}

GPUMEM_API gpumem_status gpumem_pool_device_array(gpumem_pool *pool, int ndim, const int64_t *shape,
                                                  const gpumem_dtype *dtype, char order, gpumem_stream *stream,
                                                  gpumem_array **array)
{
    const char *what = "gpumem_pool_device_array";
    GM_CHECK_HANDLE(pool);
    GM_CHECK_NULL(array);
    gpumem_context *ctx = gm_pool_context(gm_pool_of_device(pool));
    gpumem_status st = gm_stream_check(stream, ctx, what, "pool");
    int64_t cstrides[GM_MAX_NDIM];
    if (st == GPUMEM_OK)
        st = gm_array_prepare(what, &ctx, ndim, shape, NULL, dtype, order, stream, cstrides);
    if (st != GPUMEM_OK)
        return st;
    return gm_poison_new_array(what, gm_array_new_pooled_device(what, pool, ctx, ndim, shape, cstrides, dtype, stream,
                                                                array),
                               stream, array);
}

GPUMEM_API gpumem_status gpumem_pool_block_size(size_t size, size_t *block_size)
{
    GM_CHECK_NULL(block_size);
    if (size > GM_POOL_MAX_SIZE)
        return gm_error(GPUMEM_ERROR_OVERFLOW, "gpumem_pool_block_size: size %zu is larger than a pool's "
                        "largest block (%zu bytes)", size, (size_t)GM_POOL_MAX_SIZE);
    *block_size = size == 0 ? 0 : gm_pool_class_bytes(gm_pool_class_of(size));
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_pool_context(const gpumem_pool *pool, gpumem_context **ctx)
{
    GM_CHECK_NULL(ctx);
    gm_pool *p = gm_pool_of_device(pool);
    gpumem_status st = gm_pool_core_check(p, GM_POOL_DEVICE, "gpumem_pool_context", "pool");
    if (st == GPUMEM_OK)
        *ctx = gm_pool_context(p);
    return st;
}

static gpumem_status device_stats(gpumem_pool *pool, struct gpumem_pool_stats *s, const char *what)
{
    gm_pool *p = gm_pool_of_device(pool);
    gpumem_status st = gm_pool_core_check(p, GM_POOL_DEVICE, what, "pool");
    if (st == GPUMEM_OK)
        gm_pool_core_stats(p, s);
    return st;
}

GPUMEM_API gpumem_status gpumem_pool_held_blocks(gpumem_pool *pool, uint64_t *count)
{
    GM_CHECK_NULL(count);
    struct gpumem_pool_stats s;
    gpumem_status st = device_stats(pool, &s, "gpumem_pool_held_blocks");
    if (st == GPUMEM_OK)
        *count = s.held_blocks;
    return st;
}

GPUMEM_API gpumem_status gpumem_pool_active_blocks(gpumem_pool *pool, uint64_t *count)
{
    GM_CHECK_NULL(count);
    struct gpumem_pool_stats s;
    gpumem_status st = device_stats(pool, &s, "gpumem_pool_active_blocks");
    if (st == GPUMEM_OK)
        *count = s.active_blocks;
    return st;
}

GPUMEM_API gpumem_status gpumem_pool_free_held(gpumem_pool *pool)
{
    gm_pool *p = gm_pool_of_device(pool);
    gpumem_status st = gm_pool_core_check(p, GM_POOL_DEVICE, "gpumem_pool_free_held", "pool");
    return st != GPUMEM_OK ? st : gm_pool_core_free_held(p, false, "gpumem_pool_free_held");
}

GPUMEM_API gpumem_status gpumem_pool_stop_holding(gpumem_pool *pool)
{
    gm_pool *p = gm_pool_of_device(pool);
    gpumem_status st = gm_pool_core_check(p, GM_POOL_DEVICE, "gpumem_pool_stop_holding", "pool");
    return st != GPUMEM_OK ? st : gm_pool_core_free_held(p, true, "gpumem_pool_stop_holding");
}

GPUMEM_API gpumem_status gpumem_pool_stats(gpumem_pool *pool, struct gpumem_pool_stats *stats)
{
    GM_CHECK_NULL(stats);
    gm_pool *p = gm_pool_of_device(pool);
    gpumem_status st = gm_pool_core_check(p, GM_POOL_DEVICE, "gpumem_pool_stats", "pool");
    return st != GPUMEM_OK ? st : gm_pool_stats_out(p, stats, "gpumem_pool_stats");
}

GPUMEM_API gpumem_status gpumem_context_set_pool(gpumem_context *ctx, gpumem_pool *pool)
{
    gpumem_status st;
    ctx = gm_context_or_default(ctx, &st);
    if (st != GPUMEM_OK)
        return st;
    if (pool != NULL) {
        st = gm_pool_core_check(gm_pool_of_device(pool), GM_POOL_DEVICE, "gpumem_context_set_pool", "pool");
        if (st != GPUMEM_OK)
            return st;
        gpumem_context *owner = gm_pool_context(gm_pool_of_device(pool));
        if (owner->dctx != ctx->dctx)
            return gm_error(GPUMEM_ERROR_CONTEXT_MISMATCH, "gpumem_context_set_pool: the pool belongs to "
                            "device %d, the context to device %d", owner->device, ctx->device);
    }
    atomic_store_explicit(&ctx->pool, pool, memory_order_release);
    return GPUMEM_OK;
}
