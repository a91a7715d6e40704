/*
 * host_pool.c - pycuda's PageLockedMemoryPool: every gpumem_host_pool_*
 * call, over the pool core (pool.h, blocks from cuMemHostAlloc), the
 * context allocator (alloc.h) and, for its arrays, array.h.
 */
#include "config.h"

#include "alloc.h"
#include "array.h"
#include "copy_debug.h"
#include "error.h"
#include "memstats.h"
#include "pool.h"

#define HOST_ALLOC_FLAGS GM_POOL_HOST_ALLOC_FLAGS

/* The public flags are the driver's CU_MEMHOSTALLOC_* values. */
_Static_assert(GPUMEM_HOST_ALLOC_PORTABLE == GM_CU_MEMHOSTALLOC_PORTABLE &&
                   GPUMEM_HOST_ALLOC_DEVICEMAP == GM_CU_MEMHOSTALLOC_DEVICEMAP &&
                   GPUMEM_HOST_ALLOC_WRITECOMBINED == GM_CU_MEMHOSTALLOC_WRITECOMBINED,
               "host allocation flags");
_Static_assert((HOST_ALLOC_FLAGS & GPUMEM_POOL_NO_THREAD_CACHE) == 0, "pool flags overlap");

static gpumem_status host_check(const gpumem_host_pool *pool, const char *what, gm_pool **out)
{
    gm_pool *p = gm_pool_of_host(pool);
    gpumem_status st = gm_pool_core_check(p, GM_POOL_HOST, what, "pool");
    if (st == GPUMEM_OK)
        *out = p;
    return st;
}

GPUMEM_API gpumem_status gpumem_host_pool_create(gpumem_context *ctx, unsigned flags, gpumem_host_pool **pool)
{
    GM_CHECK_NULL(pool);
    if (flags & ~(unsigned)(HOST_ALLOC_FLAGS | GPUMEM_POOL_NO_THREAD_CACHE))
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "gpumem_host_pool_create: unknown flags 0x%x", flags);
    gm_pool *p = NULL;
    const gm_source_config src = {.kind = GM_SOURCE_PINNED, .host_flags = flags & HOST_ALLOC_FLAGS};
    gpumem_status st = gm_pool_core_create(GM_POOL_HOST, ctx, flags & GPUMEM_POOL_NO_THREAD_CACHE, &src,
                                           "gpumem_host_pool_create", &p);
    if (st == GPUMEM_OK)
        *pool = (gpumem_host_pool *)(void *)p;
    return st;
}

GPUMEM_API gpumem_status gpumem_host_pool_create_with_props(gpumem_context *ctx,
                                                            const struct gpumem_pool_props *props,
                                                            gpumem_host_pool **pool)
{
    GM_CHECK_NULL(props);
    GM_CHECK_NULL(pool);
    gm_pool *p = NULL;
    gpumem_status st = gm_pool_core_create_props(GM_POOL_HOST, ctx, props, "gpumem_host_pool_create_with_props", &p);
    if (st == GPUMEM_OK)
        *pool = (gpumem_host_pool *)(void *)p;
    return st;
}

GPUMEM_API gpumem_status gpumem_host_pool_trim(gpumem_host_pool *pool, uint64_t keep_bytes)
{
    gm_pool *p = NULL;
    gpumem_status st = host_check(pool, "gpumem_host_pool_trim", &p);
    return st != GPUMEM_OK ? st : gm_pool_core_trim(p, keep_bytes, "gpumem_host_pool_trim");
}

GPUMEM_API gpumem_status gpumem_host_pool_destroy(gpumem_host_pool *pool)
{
    if (pool == NULL)
        return GPUMEM_OK;
    GM_END_HANDLE(pool);
    return gm_pool_core_destroy(gm_pool_of_host(pool), "gpumem_host_pool_destroy");
}

GPUMEM_API gpumem_status gpumem_host_pool_context(const gpumem_host_pool *pool, gpumem_context **ctx)
{
    GM_CHECK_NULL(ctx);
    gm_pool *p = NULL;
    gpumem_status st = host_check(pool, "gpumem_host_pool_context", &p);
    if (st == GPUMEM_OK)
        *ctx = gm_pool_context(p);
    return st;
}

GPUMEM_API gpumem_status gpumem_host_pool_allocate_bytes(gpumem_host_pool *pool, size_t size,
                                                         gpumem_allocation **alloc)
{
    GM_CHECK_NULL(alloc);
    gm_block b;
    gpumem_status st = gm_alloc_host_pool(pool, size, "gpumem_host_pool_allocate_bytes", &b);
    if (st == GPUMEM_OK) {
        *alloc = b.token;
        if (gm_leaks_enabled()) {
            gm_pool *p = gm_pool_of_host(pool);
            gm_leak_add(gm_pool_context(p), GM_LEAK_ALLOCATION, (uintptr_t)b.token,
                        gm_pool_alloc_flags(p) & GM_CU_MEMHOSTALLOC_DEVICEMAP ? GPUMEM_MEMORY_MAPPED
                                                                              : GPUMEM_MEMORY_PINNED,
                        size, "gpumem_host_pool_allocate_bytes");
        }
    }
    return st;
}

GPUMEM_API gpumem_status gpumem_host_pool_allocate(gpumem_host_pool *pool, int ndim, const int64_t *shape,
                                                   const gpumem_dtype *dtype, char order, gpumem_array **array)
{
    const char *what = "gpumem_host_pool_allocate";
    GM_CHECK_HANDLE(pool);
    GM_CHECK_NULL(array);
    int64_t cstrides[GM_MAX_NDIM];
    gpumem_context *ctx = gm_pool_context(gm_pool_of_host(pool));
    gpumem_status st = gm_array_prepare(what, &ctx, ndim, shape, NULL, dtype, order, NULL, cstrides);
    if (st != GPUMEM_OK)
        return st;
    return gm_poison_new_array(what, gm_array_new_pooled_host(what, pool, ndim, shape, cstrides, dtype, array), NULL,
                               array);
}

GPUMEM_API gpumem_status gpumem_host_pool_held_blocks(gpumem_host_pool *pool, uint64_t *count)
{
    GM_CHECK_NULL(count);
    gm_pool *p = NULL;
    gpumem_status st = host_check(pool, "gpumem_host_pool_held_blocks", &p);
    if (st != GPUMEM_OK)
        return st;
    struct gpumem_pool_stats s;
    gm_pool_core_stats(p, &s);
    *count = s.held_blocks;
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_host_pool_active_blocks(gpumem_host_pool *pool, uint64_t *count)
{
    GM_CHECK_NULL(count);
    gm_pool *p = NULL;
    gpumem_status st = host_check(pool, "gpumem_host_pool_active_blocks", &p);
    if (st != GPUMEM_OK)
        return st;
    struct gpumem_pool_stats s;
    gm_pool_core_stats(p, &s);
    *count = s.active_blocks;
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_host_pool_free_held(gpumem_host_pool *pool)
{
    gm_pool *p = NULL;
    gpumem_status st = host_check(pool, "gpumem_host_pool_free_held", &p);
    return st != GPUMEM_OK ? st : gm_pool_core_free_held(p, false, "gpumem_host_pool_free_held");
}

GPUMEM_API gpumem_status gpumem_host_pool_stop_holding(gpumem_host_pool *pool)
{
    gm_pool *p = NULL;
    gpumem_status st = host_check(pool, "gpumem_host_pool_stop_holding", &p);
    return st != GPUMEM_OK ? st : gm_pool_core_free_held(p, true, "gpumem_host_pool_stop_holding");
}

GPUMEM_API gpumem_status gpumem_host_pool_stats(gpumem_host_pool *pool, struct gpumem_pool_stats *stats)
{
    GM_CHECK_NULL(stats);
    gm_pool *p = NULL;
    gpumem_status st = host_check(pool, "gpumem_host_pool_stats", &p);
    return st != GPUMEM_OK ? st : gm_pool_stats_out(p, stats, "gpumem_host_pool_stats");
}
