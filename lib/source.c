/*
 * source.c - the memory sources of one driver allocation per extent
 * (source.h): device memory (cuMemAlloc), managed memory
 * (cuMemAllocManaged) and page-locked host memory (cuMemHostAlloc), the
 * last two recorded in the host registry, the driver's stream-ordered
 * pool, and gm_source_create,
 * which makes a source of any kind.
 */
#include "config.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "hostreg.h"
#include "memstats.h"
#include "source.h"

/* Counted extents, for the books (relaxed: read by statistics). */
typedef struct gm_simple_source {
    gm_source s;
    _Atomic uint64_t extents, bytes;
} gm_simple_source;

static void count(gm_source *s, int64_t n, int64_t bytes)
{
    gm_simple_source *ss = (gm_simple_source *)s;
    atomic_fetch_add_explicit(&ss->extents, (uint64_t)n, memory_order_relaxed);
    atomic_fetch_add_explicit(&ss->bytes, (uint64_t)bytes, memory_order_relaxed);
}

static gpumem_status simple_alloc(gm_source *s, size_t bytes, bool grow, const char *what, uint64_t *addr,
                                  bool *oom)
{
    (void)grow;
    gm_dctx *dctx = s->ctx->dctx;
    gpumem_status st = GPUMEM_OK;
    int rc;
    if (s->cfg.kind == GM_SOURCE_DEVICE) {
        gm_cu_deviceptr d = 0;
        rc = GM_DRV(mem_alloc, dctx, &d, bytes);
        *addr = d;
    } else if (s->cfg.kind == GM_SOURCE_MANAGED) {
        gm_cu_deviceptr d = 0;
        rc = GM_DRV(mem_alloc_managed, dctx, &d, bytes, GM_CU_MEM_ATTACH_GLOBAL);
        /* Known as page-locked while it lives, as the allocator's managed memory is (alloc.c). */
        if (rc == 0 && (st = gm_host_track_allocation((void *)(uintptr_t)d, bytes)) != GPUMEM_OK) {
            gm_error_quietly(GM_DRV(mem_free, dctx, d));
            return gm_error_prefix(st, what);
        }
        *addr = d;
    } else {
        void *h = NULL;
        rc = gm_host_alloc_locked(dctx, bytes, s->cfg.host_flags, what, &h, &st);
        *addr = (uint64_t)(uintptr_t)h;
    }
    if (rc == 0) {
        gm_memstats_driver_alloc(s->ctx);
        count(s, 1, (int64_t)bytes);
        return GPUMEM_OK;
    }
    bool host = s->cfg.kind == GM_SOURCE_PINNED;
    if (rc == GM_CUDA_ERROR_OUT_OF_MEMORY) {
        *oom = true;
        return host ? GPUMEM_ERROR_HOST_OUT_OF_MEMORY : GPUMEM_ERROR_OUT_OF_MEMORY;
    }
    if (rc < 0)
        return st; /* gm_host_alloc_locked's own failure, with its message */
    char where[200];
    snprintf(where, sizeof where, "%s: a block of %zu bytes", what, bytes);
    return gm_drv_check(rc, host                                ? GM_OP_mem_host_alloc
                            : s->cfg.kind == GM_SOURCE_MANAGED ? GM_OP_mem_alloc_managed
                                                                : GM_OP_mem_alloc,
                        where);
}

static gpumem_status simple_free(gm_source *s, uint64_t addr, size_t bytes, const char *what)
{
    gm_dctx *dctx = s->ctx->dctx;
    count(s, -1, -(int64_t)bytes);
    if (s->cfg.kind == GM_SOURCE_MANAGED)
        gm_host_untrack_allocation((void *)(uintptr_t)addr);
    if (s->cfg.kind != GM_SOURCE_PINNED)
        return gm_drv_check(GM_DRV(mem_free, dctx, addr), GM_OP_mem_free, what);
    return gm_drv_check(gm_host_free_locked(dctx, (void *)(uintptr_t)addr), GM_OP_mem_free_host, what);
}

static void simple_location(const gm_source *s, gm_source_location *loc)
{
    if (s->cfg.kind != GM_SOURCE_PINNED) /* managed memory: the device is its home */
        *loc = (gm_source_location){GM_CU_MEM_LOCATION_TYPE_DEVICE, s->ctx->device};
    else
        *loc = (gm_source_location){GM_CU_MEM_LOCATION_TYPE_HOST, -1};
}

static void simple_usage(gm_source *s, gm_source_usage *u)
{
    gm_simple_source *ss = (gm_simple_source *)s;
    *u = (gm_source_usage){.extents = atomic_load_explicit(&ss->extents, memory_order_relaxed),
                           .extent_bytes = atomic_load_explicit(&ss->bytes, memory_order_relaxed)};
    u->mapped = u->extent_bytes;
}

static gpumem_status simple_destroy(gm_source *s, const char *what)
{
    (void)what;
    free(s);
    return GPUMEM_OK;
}

/* ---- the driver's stream-ordered pool ---- */

typedef struct gm_async_source {
    gm_simple_source ss; /* first: counted as the others */
    gm_dmempool *pool;
    uint64_t export_id; /* exportable: a random number naming the pool to importers (pool_ipc.c) */
} gm_async_source;

static gpumem_status async_alloc(gm_source *s, size_t bytes, bool grow, const char *what, uint64_t *addr,
                                 bool *oom)
{
    (void)grow;
    gm_async_source *as = (gm_async_source *)s;
    gm_dctx *dctx = s->ctx->dctx;
    gm_cu_deviceptr d = 0;
    int rc = GM_DRV(mem_alloc_from_pool_async, dctx, &d, bytes, as->pool, NULL);
    if (rc == GM_CUDA_ERROR_OUT_OF_MEMORY) {
        *oom = true;
        return GPUMEM_ERROR_OUT_OF_MEMORY;
    }
    char where[200];
    snprintf(where, sizeof where, "%s: a block of %zu bytes", what, bytes);
    gpumem_status st = gm_drv_check(rc, GM_OP_mem_alloc_from_pool_async, where);
    if (st != GPUMEM_OK)
        return st;
    /* Ready for any stream, as every pool block is. */
    st = gm_drv_check(GM_DRV(stream_synchronize, dctx, NULL), GM_OP_stream_synchronize, where);
    if (st != GPUMEM_OK) {
        gm_error_quietly(GM_DRV(mem_free_async, dctx, d, NULL));
        return st;
    }
    gm_memstats_driver_alloc(s->ctx);
    count(s, 1, (int64_t)bytes);
    *addr = d;
    return GPUMEM_OK;
}

static gpumem_status async_free(gm_source *s, uint64_t addr, size_t bytes, const char *what)
{
    count(s, -1, -(int64_t)bytes);
    return gm_drv_check(GM_DRV(mem_free_async, s->ctx->dctx, addr, NULL), GM_OP_mem_free_async, what);
}

static gpumem_status async_trim(gm_source *s, uint64_t keep, const char *what)
{
    gm_async_source *as = (gm_async_source *)s;
    gm_dctx *dctx = s->ctx->dctx;
    gpumem_status st = gm_drv_check(GM_DRV(ctx_synchronize, dctx), GM_OP_ctx_synchronize, what);
    if (st == GPUMEM_OK)
        st = gm_drv_check(GM_DRV(mem_pool_trim_to, dctx, as->pool, (size_t)(keep > SIZE_MAX ? SIZE_MAX : keep)),
                          GM_OP_mem_pool_trim_to, what);
    return st;
}

static void async_usage(gm_source *s, gm_source_usage *u)
{
    gm_async_source *as = (gm_async_source *)s;
    simple_usage(s, u);
    uint64_t reserved = 0;
    if (GM_DRV(mem_pool_get_attribute, s->ctx->dctx, as->pool, GM_CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT,
               &reserved) == 0)
        u->mapped = reserved;
}

static gpumem_status async_destroy(gm_source *s, const char *what)
{
    gm_async_source *as = (gm_async_source *)s;
    gpumem_status st = GPUMEM_OK;
    if (!gm_process_exiting())
        st = gm_drv_check(GM_DRV(mem_pool_destroy, s->ctx->dctx, as->pool), GM_OP_mem_pool_destroy, what);
    free(as);
    return st;
}

static void async_location(const gm_source *s, gm_source_location *loc)
{
    *loc = (gm_source_location){GM_CU_MEM_LOCATION_TYPE_DEVICE, s->ctx->device};
}

static const gm_source_ops async_ops = {
    .name = "the driver's stream-ordered pool", .caps = 0, .alloc = async_alloc, .free = async_free,
    .trim = async_trim, .location = async_location, .usage = async_usage, .destroy = async_destroy,
};

static gpumem_status async_create(gpumem_context *ctx, const gm_source_config *cfg, const char *what,
                                  gm_source **out)
{
    gm_cu_mem_pool_props props;
    memset(&props, 0, sizeof props);
    props.allocType = GM_CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes = cfg->exportable ? GM_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR : GM_CU_MEM_HANDLE_TYPE_NONE;
    props.location = (gm_cu_mem_location){GM_CU_MEM_LOCATION_TYPE_DEVICE, ctx->device};
    props.maxSize = (size_t)cfg->maximum;
    gm_dmempool *pool = NULL;
    int rc = GM_DRV(mem_pool_create, ctx->dctx, &pool, &props);
    if (rc == GM_CUDA_ERROR_NOT_SUPPORTED)
        return gm_error_driver(GPUMEM_ERROR_NOT_SUPPORTED, rc, "%s: the driver has no stream-ordered pools for "
                               "device %d (cuMemPoolCreate: CUDA_ERROR_NOT_SUPPORTED)", what, ctx->device);
    gpumem_status st = gm_drv_check(rc, GM_OP_mem_pool_create, what);
    if (st != GPUMEM_OK)
        return st;
    uint64_t threshold = cfg->release_threshold;
    st = gm_drv_check(GM_DRV(mem_pool_set_attribute, ctx->dctx, pool, GM_CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                             &threshold),
                      GM_OP_mem_pool_set_attribute, what);
    gm_async_source *as = NULL;
    if (st == GPUMEM_OK && (as = calloc(1, sizeof *as)) == NULL)
        st = gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", what);
    if (as == NULL) {
        gm_error_quietly(GM_DRV(mem_pool_destroy, ctx->dctx, pool));
        return st;
    }
    as->ss.s = (gm_source){.ops = &async_ops, .ctx = ctx, .cfg = *cfg};
    as->pool = pool;
    if (cfg->exportable)
        as->export_id = gm_source_export_id(as);
    *out = &as->ss.s;
    return GPUMEM_OK;
}

/* ---- export of the driver's stream-ordered pool (pool_ipc.c) ---- */

static gpumem_status async_not_exportable(const gm_source *s, const char *what)
{
    if (s->cfg.kind == GM_SOURCE_ASYNC && s->cfg.exportable)
        return GPUMEM_OK;
    return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: the pool was not made with handle_type "
                    "GPUMEM_POOL_HANDLE_POSIX_FD", what);
}

gpumem_status gm_source_async_export_pool(gm_source *s, const char *what, int *fd, uint64_t *id)
{
    gpumem_status st = async_not_exportable(s, what);
    if (st != GPUMEM_OK)
        return st;
    gm_async_source *as = (gm_async_source *)s;
    int out = -1;
    st = gm_drv_check(GM_DRV(mem_pool_export_to_shareable_handle, s->ctx->dctx, &out, as->pool,
                             GM_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
                      GM_OP_mem_pool_export_to_shareable_handle, what);
    if (st != GPUMEM_OK)
        return st;
    *fd = out;
    *id = as->export_id;
    return GPUMEM_OK;
}

gpumem_status gm_source_async_export_block(gm_source *s, uint64_t addr, uint64_t bytes, const char *what,
                                           gm_source_async_block *out)
{
    gpumem_status st = async_not_exportable(s, what);
    if (st != GPUMEM_OK)
        return st;
    gm_dctx *dctx = s->ctx->dctx;
    gm_cu_deviceptr base = 0;
    size_t size = 0;
    st = gm_drv_check(GM_DRV(mem_get_address_range, dctx, &base, &size, addr), GM_OP_mem_get_address_range, what);
    if (st != GPUMEM_OK)
        return st;
    if (addr < base || bytes > size || addr - base > size - bytes)
        return gm_error(GPUMEM_ERROR_INTERNAL, "%s: the block does not lie in one allocation of the driver's pool",
                        what);
    memset(out, 0, sizeof *out);
    st = gm_drv_check(GM_DRV(mem_pool_export_pointer, dctx, &out->data, base), GM_OP_mem_pool_export_pointer, what);
    if (st != GPUMEM_OK)
        return st;
    out->id = ((gm_async_source *)s)->export_id;
    out->off = addr - base;
    out->extent = size;
    return GPUMEM_OK;
}

static const gm_source_ops device_ops = {
    .name = "device", .caps = 0, .alloc = simple_alloc, .free = simple_free,
    .location = simple_location, .usage = simple_usage, .destroy = simple_destroy,
};

static const gm_source_ops managed_ops = {
    .name = "managed", .caps = 0, .alloc = simple_alloc, .free = simple_free,
    .location = simple_location, .usage = simple_usage, .destroy = simple_destroy,
};

static const gm_source_ops pinned_ops = {
    .name = "pinned", .caps = GM_SOURCE_CAP_HOST, .alloc = simple_alloc, .free = simple_free,
    .location = simple_location, .usage = simple_usage, .destroy = simple_destroy,
};

gpumem_status gm_source_create(gpumem_context *ctx, const gm_source_config *cfg, const char *what,
                               gm_source **out)
{
    if (cfg->kind == GM_SOURCE_VMM)
        return gm_source_vmm_create(ctx, cfg, what, out);
    if (cfg->kind == GM_SOURCE_ASYNC)
        return async_create(ctx, cfg, what, out);
    if (cfg->kind == GM_SOURCE_REGISTERED)
        return gm_source_host_create(ctx, cfg, what, out);
    gm_simple_source *ss = calloc(1, sizeof *ss);
    if (ss == NULL)
        return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", what);
    const gm_source_ops *ops = cfg->kind == GM_SOURCE_DEVICE    ? &device_ops
                               : cfg->kind == GM_SOURCE_MANAGED ? &managed_ops
                                                                : &pinned_ops;
    ss->s = (gm_source){.ops = ops, .ctx = ctx, .cfg = *cfg};
    *out = &ss->s;
    return GPUMEM_OK;
}

gpumem_status gm_source_settle(gm_source *s, const char *what)
{
    if (!(s->ops->caps & GM_SOURCE_CAP_GROW))
        return GPUMEM_OK;
    return s->ops->trim(s, s->cfg.release_threshold, what);
}
