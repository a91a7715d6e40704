/*
 * array.c - array handles: making them (device, host, page-locked, pooled,
 * wrapped, and numba's to_device with its write-back) and their lifetime
 * (retain, release, the free of an owner's memory).  Views and properties
 * are in array_view.c, copies and element access in copy.c, layout
 * arithmetic in layout.c.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stddef.h>

#include "array.h"
#include "copy_debug.h"
#include "copy_engine.h"
#include "dtype.h"
#include "error.h"
#include "gpumem/dtype.h"
#include "handles.h"
#include "hostreg.h"
#include "memstats.h"
#include "pool.h"
#include "stream.h"

#define HOST_ALIGNMENT 64

int64_t gm_array_size(const gpumem_array *a)
{
    int64_t n = 1;
    for (int i = 0; i < a->ndim; i++)
        n *= a->shape[i];
    return n;
}

gpumem_status gm_array_check_dtype(const char *what, const gpumem_dtype *dtype, size_t *itemsize)
{
    gpumem_status st = gm_handle_check(dtype, GM_HANDLE_DTYPE, what, "dtype");
    if (st == GPUMEM_OK)
        st = gpumem_dtype_itemsize(dtype, itemsize);
    if (st == GPUMEM_OK && *itemsize == 0)
        st = gm_error(GPUMEM_ERROR_INVALID_DTYPE, "%s: dtype has item size 0", what);
    return st;
}

/* A dtype and a shape fit for an array: item size and byte count (nbytes may be NULL). */
static gpumem_status check_layout(const char *what, int ndim, const int64_t *shape, const gpumem_dtype *dtype,
                                  size_t *itemsize, int64_t *nbytes)
{
    gpumem_status st = gm_array_check_dtype(what, dtype, itemsize);
    return st != GPUMEM_OK ? st : gm_layout_check_shape(what, ndim, shape, *itemsize, NULL, nbytes);
}

/* A handle with no memory yet: shape, strides, dtype and context filled and
 * retained. */
static gpumem_array *array_alloc(gpumem_memory_kind kind, gpumem_context *ctx, int ndim, const int64_t *shape,
                                 const int64_t *strides, const gpumem_dtype *dtype, size_t itemsize)
{
    /* Only the header is cleared: shape and strides beyond ndim are never
     * read, and clearing all GM_MAX_NDIM of them costs the fast path. */
    gpumem_array *a = gm_handle_new(GM_HANDLE_ARRAY, sizeof *a);
    if (a == NULL)
        return NULL;
    memset((char *)a + sizeof a->h, 0, offsetof(gpumem_array, shape) - sizeof a->h);
    atomic_init(&a->refs, 1);
    a->kind = kind;
    a->ndim = ndim;
    a->itemsize = itemsize;
    if (ndim > 0) {
        memcpy(a->shape, shape, (size_t)ndim * sizeof *shape);
        memcpy(a->strides, strides, (size_t)ndim * sizeof *strides);
    }
    a->dtype = gm_dtype_ref(dtype);
    a->ctx = ctx;
    if (ctx != NULL)
        gpumem_context_retain(ctx);
    return a;
}

/* The handle goes back to the store, dead. */
static void handle_free(gpumem_array *a)
{
    gm_handle_free(a);
}

/* Frees an array whose last reference went; the status is the driver's
 * answer to freeing its memory (the handle is gone either way), whose
 * failure names `what`, the public call that dropped the reference. */
static gpumem_status array_free(gpumem_array *a, const char *what)
{
    gpumem_status st = GPUMEM_OK;
    gpumem_array *base = a->base;
    gpumem_context *ctx = a->ctx;
    gm_dtype_unref(a->dtype);
    if (a->owned == GM_OWNED_HOST) {
        free(a->alloc_host);
    } else if (a->owned == GM_OWNED_BLOCK) {
        if (gm_leaks_enabled() && ctx != NULL) /* before the handle can be reused */
            gm_leak_forget(ctx, (uintptr_t)a);
        /* A borrowed context lives while the block does: nothing of ctx is
         * used after the block went back. */
        gm_block b = a->block;
        bool borrowed = a->ctx_borrowed;
        handle_free(a);
        st = gm_alloc_free(ctx, &b, what);
        if (!borrowed)
            st = gm_keep_first(st, gm_context_release_as(ctx, what));
        return gm_keep_first(st, gm_array_release_as(base, what));
    } else if (a->owned == GM_OWNED_FOREIGN && a->owner_release != NULL) {
        a->owner_release(a->owner);
    }
    handle_free(a);
    st = gm_keep_first(st, gm_context_release_as(ctx, what));
    return gm_keep_first(st, gm_array_release_as(base, what));
}

static gpumem_status out_of_host_memory(const char *what)
{
    return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", what);
}

/* A device array of a checked layout of nbytes. */
static gpumem_status new_device(const char *what, gpumem_context *ctx, int ndim, const int64_t *shape,
                                const int64_t *strides, const gpumem_dtype *dtype, size_t itemsize, int64_t nbytes,
                                gpumem_stream *stream, gpumem_array **out)
{
    gpumem_status st;
    gpumem_array *a = array_alloc(GPUMEM_MEMORY_DEVICE, NULL, ndim, shape, strides, dtype, itemsize);
    if (a == NULL)
        return out_of_host_memory(what);
    a->ctx = ctx;
    st = gm_alloc_device(ctx, (size_t)nbytes, stream, what, &a->block);
    /* A block of the context's own pool lends the array the pool's
     * reference to ctx (kept until the block is back, even by a destroyed
     * pool): the fast path then touches no counter that threads share. */
    a->ctx_borrowed = st == GPUMEM_OK && a->block.mem == GM_MEM_POOL && a->block.pool_ctx == ctx;
    if (!a->ctx_borrowed)
        gpumem_context_retain(ctx);
    if (st != GPUMEM_OK)
        return gm_keep_first(st, array_free(a, what));
    a->owned = GM_OWNED_BLOCK;
    /* Contiguous strides are never negative, so element 0 is the allocation's start. */
    a->dev = a->block.addr;
    if (gm_leaks_enabled())
        gm_leak_add(ctx, GM_LEAK_ARRAY, (uintptr_t)a, GPUMEM_MEMORY_DEVICE, (uint64_t)nbytes, what);
    *out = a;
    return GPUMEM_OK;
}

gpumem_status gm_array_new_device(const char *what, gpumem_context *ctx, int ndim, const int64_t *shape,
                                  const int64_t *strides, const gpumem_dtype *dtype, gpumem_stream *stream,
                                  gpumem_array **out)
{
    size_t itemsize;
    int64_t nbytes;
    gpumem_status st = check_layout(what, ndim, shape, dtype, &itemsize, &nbytes);
    if (st != GPUMEM_OK)
        return st;
    return new_device(what, ctx, ndim, shape, strides, dtype, itemsize, nbytes, stream, out);
}

gpumem_status gm_array_new_host(const char *what, int ndim, const int64_t *shape, const int64_t *strides,
                              const gpumem_dtype *dtype, gpumem_array **out)
{
    size_t itemsize;
    int64_t nbytes;
    gpumem_status st = check_layout(what, ndim, shape, dtype, &itemsize, &nbytes);
    if (st != GPUMEM_OK)
        return st;
    gpumem_array *a = array_alloc(GPUMEM_MEMORY_HOST, NULL, ndim, shape, strides, dtype, itemsize);
    if (a == NULL)
        return out_of_host_memory(what);
    size_t bytes = ((size_t)nbytes + HOST_ALIGNMENT - 1) / HOST_ALIGNMENT * HOST_ALIGNMENT;
    a->alloc_host = aligned_alloc(HOST_ALIGNMENT, bytes > 0 ? bytes : HOST_ALIGNMENT);
    if (a->alloc_host == NULL) {
        array_free(a, what);
        return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: cannot allocate %lld bytes of host memory", what,
                        (long long)nbytes);
    }
    a->owned = GM_OWNED_HOST;
    a->host = a->alloc_host;
    *out = a;
    return GPUMEM_OK;
}

gpumem_status gm_array_new_locked(const char *what, gpumem_memory_kind kind, gpumem_context *ctx, int ndim,
                                  const int64_t *shape, const int64_t *strides, const gpumem_dtype *dtype,
                                  unsigned flags, gpumem_array **out)
{
    size_t itemsize;
    int64_t nbytes;
    gpumem_status st = check_layout(what, ndim, shape, dtype, &itemsize, &nbytes);
    if (st != GPUMEM_OK)
        return st;
    gpumem_array *a = array_alloc(kind, ctx, ndim, shape, strides, dtype, itemsize);
    if (a == NULL)
        return out_of_host_memory(what);
    if (kind == GPUMEM_MEMORY_MANAGED)
        st = gm_alloc_managed(ctx, (size_t)nbytes, flags, what, &a->block);
    else
        st = gm_alloc_locked(ctx, (size_t)nbytes, flags, what, &a->block);
    a->owned = GM_OWNED_BLOCK;
    /* Managed memory is addressed alike on both sides; a mapped array's
     * device address comes from the driver. */
    a->host = (char *)(uintptr_t)a->block.addr;
    if (st == GPUMEM_OK && kind == GPUMEM_MEMORY_MANAGED)
        a->dev = a->block.addr;
    if (st == GPUMEM_OK && kind == GPUMEM_MEMORY_MAPPED && nbytes > 0)
        st = gm_drv_check(GM_DRV(mem_host_get_device_pointer, ctx->dctx, &a->dev, a->host),
                          GM_OP_mem_host_get_device_pointer, what);
    if (st != GPUMEM_OK)
        return gm_keep_first(st, array_free(a, what));
    if (gm_leaks_enabled())
        gm_leak_add(ctx, GM_LEAK_ARRAY, (uintptr_t)a, a->kind, (uint64_t)nbytes, what);
    *out = a;
    return GPUMEM_OK;
}

gpumem_status gm_array_wrap(const char *what, gpumem_context *ctx, gpumem_memory_kind kind,
                                   gm_cu_deviceptr ptr, int ndim, const int64_t *shape, const int64_t *strides,
                                   const gpumem_dtype *dtype, void (*release)(void *), void *owner,
                                   gpumem_array **out)
{
    size_t itemsize;
    gpumem_status st = check_layout(what, ndim, shape, dtype, &itemsize, NULL);
    if (st != GPUMEM_OK)
        return st;
    int64_t c_strides[GM_MAX_NDIM];
    if (strides == NULL) {
        gm_layout_contiguous_strides(what, ndim, shape, itemsize, 'C', c_strides);
        strides = c_strides;
    }
    gpumem_array *a = array_alloc(kind, ctx, ndim, shape, strides, dtype, itemsize);
    if (a == NULL)
        return out_of_host_memory(what);
    if (kind != GPUMEM_MEMORY_HOST && kind != GPUMEM_MEMORY_PINNED)
        a->dev = ptr;
    if (kind != GPUMEM_MEMORY_DEVICE && kind != GPUMEM_MEMORY_FOREIGN)
        a->host = (char *)(uintptr_t)ptr;
    a->owned = GM_OWNED_FOREIGN;
    a->owner_release = release;
    a->owner = owner;
    *out = a;
    return GPUMEM_OK;
}

gpumem_status gm_array_mapped_view(const char *what, gpumem_context *ctx, gpumem_array *a, gpumem_array **out)
{
    if (a->kind != GPUMEM_MEMORY_HOST && a->kind != GPUMEM_MEMORY_PINNED) {
        gpumem_array_retain(a);
        *out = a;
        return GPUMEM_OK;
    }
    gpumem_array *v = array_alloc(GPUMEM_MEMORY_MAPPED, ctx, a->ndim, a->shape, a->strides, a->dtype, a->itemsize);
    if (v == NULL)
        return out_of_host_memory(what);
    v->host = a->host;
    if (gm_array_size(a) > 0) {
        gpumem_status st = gm_drv_check(GM_DRV(mem_host_get_device_pointer, ctx->dctx, &v->dev, a->host),
                                        GM_OP_mem_host_get_device_pointer, what);
        if (st != GPUMEM_OK)
            return gm_keep_first(st, array_free(v, what));
    }
    v->base = a->base != NULL ? a->base : a;
    gpumem_array_retain(v->base);
    *out = v;
    return GPUMEM_OK;
}

gpumem_status gm_array_new_pooled_host(const char *what, gpumem_host_pool *pool, int ndim, const int64_t *shape,
                                       const int64_t *strides, const gpumem_dtype *dtype, gpumem_array **out)
{
    size_t itemsize;
    int64_t nbytes;
    gpumem_status st = check_layout(what, ndim, shape, dtype, &itemsize, &nbytes);
    if (st != GPUMEM_OK)
        return st;
    bool mapped = (gm_pool_alloc_flags(gm_pool_of_host(pool)) & GM_CU_MEMHOSTALLOC_DEVICEMAP) != 0;
    gpumem_context *ctx = gm_pool_context(gm_pool_of_host(pool));
    gpumem_array *a = array_alloc(mapped ? GPUMEM_MEMORY_MAPPED : GPUMEM_MEMORY_PINNED, ctx, ndim, shape, strides,
                                  dtype, itemsize);
    if (a == NULL)
        return out_of_host_memory(what);
    st = gm_alloc_host_pool(pool, (size_t)nbytes, what, &a->block);
    if (st == GPUMEM_OK) {
        a->owned = GM_OWNED_BLOCK;
        a->host = (char *)(uintptr_t)a->block.addr;
        /* Under unified addressing a mapped block's device address is its host address. */
        if (mapped && nbytes > 0)
            st = gm_drv_check(GM_DRV(mem_host_get_device_pointer, ctx->dctx, &a->dev, a->host),
                              GM_OP_mem_host_get_device_pointer, what);
    }
    if (st != GPUMEM_OK)
        return gm_keep_first(st, array_free(a, what));
    if (gm_leaks_enabled())
        gm_leak_add(ctx, GM_LEAK_ARRAY, (uintptr_t)a, a->kind, (uint64_t)nbytes, what);
    *out = a;
    return GPUMEM_OK;
}

gpumem_status gm_array_new_pooled_device(const char *what, gpumem_pool *pool, gpumem_context *ctx, int ndim,
                                         const int64_t *shape, const int64_t *strides, const gpumem_dtype *dtype,
                                         gpumem_stream *stream, gpumem_array **out)
{
    size_t itemsize;
    int64_t nbytes;
    gpumem_status st = check_layout(what, ndim, shape, dtype, &itemsize, &nbytes);
    if (st != GPUMEM_OK)
        return st;
    gpumem_array *a = array_alloc(GPUMEM_MEMORY_DEVICE, ctx, ndim, shape, strides, dtype, itemsize);
    if (a == NULL)
        return out_of_host_memory(what);
    /* A block of the pool, through the context allocator's ladder; it goes
     * back to the pool with the array, in the order of `stream`. */
    st = gm_alloc_device_pool(pool, (size_t)nbytes, stream, what, &a->block);
    if (st != GPUMEM_OK)
        return gm_keep_first(st, array_free(a, what));
    a->owned = GM_OWNED_BLOCK;
    a->dev = a->block.addr; /* contiguous strides: element 0 is the block's start */
    if (gm_leaks_enabled())
        gm_leak_add(ctx, GM_LEAK_ARRAY, (uintptr_t)a, GPUMEM_MEMORY_DEVICE, (uint64_t)nbytes, what);
    *out = a;
    return GPUMEM_OK;
}

gm_host_lock gm_array_lock_state(const gpumem_array *a)
{
    if (a->kind != GPUMEM_MEMORY_HOST)
        return GM_HOST_LOCKED;
    /* the registry's answer, kept until the registry changes: a copy of
     * pageable memory takes no lock */
    _Atomic uint64_t *memo = (_Atomic uint64_t *)&a->locked_memo;
    uint64_t m = atomic_load_explicit(memo, memory_order_relaxed);
    if (m >> 2 == gm_host_generation())
        return (gm_host_lock)(m & 3);
    int64_t lo, hi;
    gm_layout_extent(a->ndim, a->shape, a->strides, a->itemsize, &lo, &hi);
    if (hi == lo)
        return GM_HOST_LOCKED;
    uint64_t gen;
    gm_host_lock st = gm_host_lock_state_at(a->host + lo, (size_t)(hi - lo), &gen);
    atomic_store_explicit(memo, gen << 2 | (uint64_t)st, memory_order_relaxed);
    return st;
}

bool gm_array_is_locked(const gpumem_array *a)
{
    return gm_array_lock_state(a) == GM_HOST_LOCKED;
}

static gpumem_status check_order(const char *what, char order)
{
    if (order == 'C' || order == 'F')
        return GPUMEM_OK;
    return gm_error(GPUMEM_ERROR_INVALID_ORDER, "%s: order '%c' (0x%02x): must be 'C' or 'F'", what,
                    order >= 0x20 && order < 0x7f ? order : '?', (unsigned char)order);
}

gpumem_status gm_array_new_like(const char *what, const gpumem_array *a, int ndim, const int64_t *shape,
                                char order, gpumem_stream *stream, gpumem_array **out)
{
    int64_t strides[GM_MAX_NDIM];
    if (order == 0)
        gm_layout_strides_like(ndim, shape, a->strides, a->itemsize, strides);
    else
        gm_layout_contiguous_strides(what, ndim, shape, a->itemsize, order, strides);
    if (gm_array_on_device(a))
        return gm_array_new_device(what, a->ctx, ndim, shape, strides, a->dtype, stream, out);
    return gm_array_new_host(what, ndim, shape, strides, a->dtype, out);
}

GPUMEM_API gpumem_status gpumem_host_array_wrap(void *data, int ndim, const int64_t *shape,
                                                const int64_t *strides, const gpumem_dtype *dtype,
                                                gpumem_array **array)
{
    const char *what = "gpumem_host_array_wrap";
    GM_CHECK_NULL(array);
    if (ndim > 0)
        GM_CHECK_NULL(shape);
    /* A caller's buffer is foreign memory of kind HOST: the same checks and
     * wrapping as CAI and DLPack imports, with no owner to tell. */
    size_t itemsize;
    gpumem_status st = gm_array_check_dtype(what, dtype, &itemsize);
    if (st == GPUMEM_OK)
        st = gm_layout_check_memory(what, "argument 'data'", ndim, shape, strides, itemsize,
                                     (uint64_t)(uintptr_t)data);
    if (st != GPUMEM_OK)
        return st;
    return gm_array_wrap(what, NULL, GPUMEM_MEMORY_HOST, (uint64_t)(uintptr_t)data, ndim, shape, strides, dtype,
                         NULL, NULL, array);
}

GPUMEM_API gpumem_status gpumem_host_array(int ndim, const int64_t *shape, const gpumem_dtype *dtype, char order,
                                           gpumem_array **array)
{
    const char *what = "gpumem_host_array";
    GM_CHECK_NULL(array);
    if (ndim > 0)
        GM_CHECK_NULL(shape);
    size_t itemsize;
    gpumem_status st = gm_array_check_dtype(what, dtype, &itemsize);
    if (st == GPUMEM_OK)
        st = check_order(what, order);
    if (st == GPUMEM_OK)
        st = gm_layout_check_shape(what, ndim, shape, itemsize, NULL, NULL);
    if (st != GPUMEM_OK)
        return st;
    int64_t strides[GM_MAX_NDIM];
    gm_layout_contiguous_strides(what, ndim, shape, itemsize, order, strides);
    return gm_poison_new_array(what, gm_array_new_host(what, ndim, shape, strides, dtype, array), NULL, array);
}

/* gm_array_prepare, giving the item size and byte count too. */
static gpumem_status prepare(const char *what, gpumem_context **ctx, int ndim, const int64_t *shape,
                             const int64_t *strides, const gpumem_dtype *dtype, char order, gpumem_stream *stream,
                             int64_t *cstrides, size_t *itemsize_out, int64_t *nbytes)
{
    if (ndim > 0 && shape == NULL)
        return gm_error(GPUMEM_ERROR_NULL_ARGUMENT, "%s: argument 'shape' is NULL", what);
    size_t itemsize;
    gpumem_status st = gm_array_check_dtype(what, dtype, &itemsize);
    if (st == GPUMEM_OK && strides == NULL)
        st = check_order(what, order);
    if (st == GPUMEM_OK)
        st = gm_layout_check_shape(what, ndim, shape, itemsize, NULL, nbytes);
    if (st != GPUMEM_OK)
        return st;
    *ctx = gm_context_use(*ctx, what, &st);
    if (st == GPUMEM_OK)
        st = gm_stream_check(stream, *ctx, what, "ctx");
    if (st != GPUMEM_OK)
        return st;
    /* Strides choose the axis order only: gaps cannot be allocated. */
    if (strides != NULL)
        gm_layout_strides_like(ndim, shape, strides, itemsize, cstrides);
    else
        gm_layout_contiguous_strides(what, ndim, shape, itemsize, order, cstrides);
    *itemsize_out = itemsize;
    return GPUMEM_OK;
}

gpumem_status gm_array_prepare(const char *what, gpumem_context **ctx, int ndim, const int64_t *shape,
                               const int64_t *strides, const gpumem_dtype *dtype, char order, gpumem_stream *stream,
                               int64_t *cstrides)
{
    size_t itemsize;
    int64_t nbytes;
    return prepare(what, ctx, ndim, shape, strides, dtype, order, stream, cstrides, &itemsize, &nbytes);
}

/* gpumem_device_array for the call `what`. */
static gpumem_status device_array(const char *what, gpumem_context *ctx, int ndim, const int64_t *shape,
                                  const int64_t *strides, const gpumem_dtype *dtype, char order, gpumem_stream *stream,
                                  gpumem_array **array)
{
    if (array == NULL) /* named by the public call, not by this helper */
        return gm_error(GPUMEM_ERROR_NULL_ARGUMENT, "%s: argument 'array' is NULL", what);
    int64_t cstrides[GM_MAX_NDIM];
    size_t itemsize;
    int64_t nbytes;
    gpumem_status st = prepare(what, &ctx, ndim, shape, strides, dtype, order, stream, cstrides, &itemsize, &nbytes);
    if (st != GPUMEM_OK)
        return st;
    return gm_poison_new_array(what, new_device(what, ctx, ndim, shape, cstrides, dtype, itemsize, nbytes, stream, array),
                               stream, array);
}

GPUMEM_API gpumem_status gpumem_device_array(gpumem_context *ctx, int ndim, const int64_t *shape,
                                             const int64_t *strides, const gpumem_dtype *dtype, char order,
                                             gpumem_stream *stream, gpumem_array **array)
{
    return device_array("gpumem_device_array", ctx, ndim, shape, strides, dtype, order, stream, array);
}

GPUMEM_API gpumem_status gpumem_device_array_like(gpumem_context *ctx, const gpumem_array *like,
                                                  gpumem_stream *stream, gpumem_array **array)
{
    GM_CHECK_HANDLE(like);
    return device_array("gpumem_device_array_like", ctx != NULL ? ctx : like->ctx, like->ndim, like->shape,
                        like->strides, like->dtype, 'C', stream, array);
}

GPUMEM_API gpumem_status gpumem_device_record(gpumem_context *ctx, const gpumem_dtype *dtype,
                                              gpumem_stream *stream, gpumem_array **array)
{
    const char *what = "gpumem_device_record";
    GM_RETURN_ERROR_IF(array == NULL, GPUMEM_ERROR_NULL_ARGUMENT, "%s: argument 'array' is NULL", what);
    GM_FORWARD_IF_ERROR(gm_handle_check(dtype, GM_HANDLE_DTYPE, what, "dtype"));
    gpumem_type type = GPUMEM_RECORD;
    gpumem_dtype_type(dtype, &type, NULL);
    if (type != GPUMEM_RECORD) {
        char ts[32] = "?";
        gpumem_dtype_typestr(dtype, ts, sizeof ts);
        return gm_error(GPUMEM_ERROR_INVALID_DTYPE, "%s: 'dtype' (%s) is not a record (gpumem_dtype_record_create, "
                        "gpumem_dtype_from_descr); gpumem_device_array with ndim 0 makes a 0-d array of any dtype",
                        what, ts);
    }
    return device_array("gpumem_device_record", ctx, 0, NULL, NULL, dtype, 'C', stream, array);
}

/* A write-back queued on a stream: copy device into host when a wait for
 * the stream succeeds.  Both arrays are retained until then. */
typedef struct writeback {
    gpumem_array *device, *host;
} writeback;

static gpumem_status writeback_run(void *arg, bool run, const char *what)
{
    writeback *w = arg;
    gpumem_status st = run ? gm_array_copy(what, w->host, w->device, NULL) : GPUMEM_OK;
    st = gm_keep_first(st, gm_array_release_as(w->device, what));
    st = gm_keep_first(st, gm_array_release_as(w->host, what));
    free(w);
    return st;
}

static gpumem_status add_writeback(const char *what, gpumem_stream *stream, gpumem_context *ctx,
                                   gpumem_array *device, gpumem_array *host)
{
    writeback *w = malloc(sizeof *w);
    if (w == NULL)
        return out_of_host_memory(what);
    gpumem_array_retain(device);
    gpumem_array_retain(host);
    *w = (writeback){device, host};
    gpumem_status st = gm_stream_add_writeback(stream, ctx, writeback_run, w, what);
    if (st != GPUMEM_OK)
        gm_error_quietly(writeback_run(w, false, what)); /* drops a reference of each: frees nothing */
    return st;
}

GPUMEM_API gpumem_status gpumem_to_device(gpumem_context *ctx, gpumem_array *host, gpumem_stream *stream,
                                          unsigned flags, gpumem_array **array)
{
    const char *what = "gpumem_to_device";
    GM_CHECK_HANDLE(host);
    GM_CHECK_NULL(array);
    if (flags & ~(unsigned)(GPUMEM_TO_DEVICE_NO_COPY | GPUMEM_TO_DEVICE_WRITEBACK))
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: unknown flags 0x%x", what, flags);
    if (flags & GPUMEM_TO_DEVICE_WRITEBACK) /* the write-back copies into it */
        GM_FORWARD_IF_ERROR(gm_array_check_destination(what, host, "host"));
    gpumem_status st;
    ctx = gm_context_or_default(ctx != NULL ? ctx : host->ctx, &st);
    if (st == GPUMEM_OK)
        st = gm_stream_check(stream, ctx, what, "ctx");
    if (st != GPUMEM_OK)
        return st;
    gpumem_array *dev = NULL;
    st = device_array(what, ctx, host->ndim, host->shape, host->strides, host->dtype, 'C', stream, &dev);
    if (st == GPUMEM_OK && !(flags & GPUMEM_TO_DEVICE_NO_COPY))
        st = gm_array_copy(what, dev, host, stream);
    if (st == GPUMEM_OK && (flags & GPUMEM_TO_DEVICE_WRITEBACK))
        st = add_writeback(what, stream, ctx, dev, host);
    if (st != GPUMEM_OK)
        return gm_keep_first(st, gm_array_release_as(dev, what));
    *array = dev;
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_array_retain(gpumem_array *array)
{
    GM_CHECK_HANDLE(array);
    atomic_fetch_add_explicit(&array->refs, 1, memory_order_relaxed);
    return GPUMEM_OK;
}

gpumem_status gm_array_release_as(gpumem_array *array, const char *what)
{
    if (array == NULL)
        return GPUMEM_OK;
    GM_FORWARD_IF_ERROR(gm_handle_check(array, GM_HANDLE_ARRAY, what, "array"));
    int before = atomic_fetch_sub_explicit(&array->refs, 1, memory_order_acq_rel);
    if (before == 1)
        return array_free(array, what);
    if (before < 1) { /* two threads raced to release the last reference twice */
        atomic_fetch_add_explicit(&array->refs, 1, memory_order_relaxed);
        return gm_error(GPUMEM_ERROR_INVALID_STATE, "%s: 'array' was released (its last reference) already, by "
                        "another thread at the same time", what);
    }
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_array_release(gpumem_array *array)
{
    return gm_array_release_as(array, "gpumem_array_release");
}

GPUMEM_API gpumem_status gpumem_array_release_n(size_t count, gpumem_array *const *arrays)
{
    if (count > 0)
        GM_CHECK_NULL(arrays);
    gpumem_status first = GPUMEM_OK;
    for (size_t i = 0; i < count; i++) {
        char where[64];
        snprintf(where, sizeof where, "gpumem_array_release_n: arrays[%zu]", i);
        first = gm_keep_first(first, gm_array_release_as(arrays[i], where)); /* later failures: the first stays */
    }
    return first;
}

/* ---- views ------------------------------------------------------------------------------ */

/* A view of a with new shape/strides, its element 0 `offset` bytes from a's. */
gpumem_status gm_array_make_view(const char *what, gpumem_array *a, int ndim, const int64_t *shape,
                                 const int64_t *strides, int64_t offset, const gpumem_dtype *dtype,
                                 gpumem_array **out)
{
    size_t itemsize = a->itemsize;
    if (dtype != a->dtype)
        gpumem_dtype_itemsize(dtype, &itemsize);
    gpumem_array *v = array_alloc(a->kind, a->ctx, ndim, shape, strides, dtype, itemsize);
    if (v == NULL)
        return out_of_host_memory(what);
    v->host = a->host != NULL ? a->host + offset : NULL;
    v->dev = a->dev != 0 ? a->dev + (gm_cu_deviceptr)offset : 0;
    v->base = a->base != NULL ? a->base : a;
    gpumem_array_retain(v->base);
    v->readonly = a->readonly;
    v->readonly_locked = a->readonly_locked;
    *out = v;
    return GPUMEM_OK;
}
