/*
 * cai.c - the CUDA Array Interface, version 3: an array's
 * __cuda_array_interface__ (gpumem_array_interface) and numba's
 * as_cuda_array (gpumem_as_cuda_array).
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "array.h"
#include "cai.h"
#include "dtype.h"
#include "error.h"
#include "gpumem/interop.h"
#include "layout.h"
#include "stream.h"

/* ---- gpumem_array_interface ---------------------------------------------------------------- */

static gpumem_status check_desc_size(const char *what, size_t size)
{
    if (size < sizeof(gpumem_cuda_array_interface))
        return gm_error(GPUMEM_ERROR_INVALID_VALUE,
                        "%s: desc->size is %zu, less than sizeof(gpumem_cuda_array_interface), %zu: set it first",
                        what, size, sizeof(gpumem_cuda_array_interface));
    return GPUMEM_OK;
}

/* The specification's rule for leaving strides out: C-contiguous, and not
 * broadcast (no stride 0), which numba gets wrong. */
static bool strides_needed(const gpumem_array *a)
{
    for (int i = 0; i < a->ndim; i++)
        if (a->strides[i] == 0)
            return true;
    return !gm_layout_is_c_contiguous(a->ndim, a->shape, a->strides, a->itemsize);
}

GPUMEM_API gpumem_status gpumem_array_interface(const gpumem_array *array, gpumem_stream *stream,
                                                gpumem_cuda_array_interface *desc)
{
    GM_CHECK_HANDLE(array);
    GM_CHECK_NULL(desc);
    return gm_array_interface("gpumem_array_interface", array, stream, desc);
}

gpumem_status gm_array_interface(const char *what, const gpumem_array *array, gpumem_stream *stream,
                                 gpumem_cuda_array_interface *desc)
{
    gpumem_status st = check_desc_size(what, desc->size);
    if (st != GPUMEM_OK)
        return st;
    if (array->kind == GPUMEM_MEMORY_HOST || array->kind == GPUMEM_MEMORY_PINNED)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE,
                        "%s: 'array' is %s memory, not device memory: the CUDA Array Interface describes "
                        "device memory (map it with gpumem_mapped, or copy it with gpumem_to_device)",
                        what, gpumem_memory_kind_name(array->kind));
    st = gm_stream_check(stream, array->ctx, what, "array");
    if (st != GPUMEM_OK)
        return st;

    gpumem_cuda_array_interface d;
    memset(&d, 0, sizeof d);
    d.size = desc->size;
    d.descr_buffer = desc->descr_buffer;
    d.descr_buffer_size = desc->descr_buffer_size;
    d.version = GPUMEM_CAI_VERSION;
    d.ndim = array->ndim;
    for (int i = 0; i < array->ndim; i++)
        d.shape[i] = array->shape[i];
    if (strides_needed(array)) {
        d.has_strides = 1;
        for (int i = 0; i < array->ndim; i++)
            d.strides[i] = array->strides[i];
    }
    st = gpumem_dtype_typestr(array->dtype, d.typestr, sizeof d.typestr);
    if (st != GPUMEM_OK)
        return gm_error_prefix(st, what);
    if (gm_dtype_is_record(array->dtype)) {
        char none = '\0';
        bool have = desc->descr_buffer != NULL;
        char where[200];
        snprintf(where, sizeof where, "%s: %s", what,
                 have ? "desc->descr_buffer" : "the dtype is a record, and desc->descr_buffer is NULL");
        st = gm_dtype_descr(where, array->dtype, have ? desc->descr_buffer : &none, have ? desc->descr_buffer_size : 0);
        if (st != GPUMEM_OK)
            return st;
        d.descr = desc->descr_buffer;
    }
    /* The specification asks for 0 as the pointer of an empty array. */
    d.data = gm_array_size(array) > 0 ? array->dev : 0;
    d.readonly = array->readonly;
    d.has_mask = 0;
    if (stream != NULL) {
        gm_dstream *ds = gm_stream_ds(stream);
        d.has_stream = 1;
        d.stream = ds == NULL ? GPUMEM_CAI_STREAM_LEGACY : (intptr_t)(uintptr_t)ds;
    }
    memcpy(desc, &d, sizeof d);
    return GPUMEM_OK;
}

/* ---- gpumem_as_cuda_array ------------------------------------------------------------------ */

/* The dtype of a description: typestr's, or descr's record for raw bytes. */
static gpumem_status desc_dtype(const char *what, const gpumem_cuda_array_interface *desc, gpumem_dtype **out)
{
    if (memchr(desc->typestr, '\0', sizeof desc->typestr) == NULL)
        return gm_error(GPUMEM_ERROR_INVALID_DTYPE, "%s: desc->typestr is not NUL-terminated within %zu bytes", what,
                        sizeof desc->typestr);
    char where[160];
    snprintf(where, sizeof where, "%s: desc->typestr", what);
    gpumem_dtype *dt = NULL;
    gpumem_status st = gm_dtype_from_typestr(where, desc->typestr, &dt);
    if (st != GPUMEM_OK)
        return st;
    if (desc->descr == NULL || desc->descr[0] == '\0') {
        *out = dt;
        return GPUMEM_OK;
    }
    snprintf(where, sizeof where, "%s: desc->descr", what);
    gpumem_dtype *rec = NULL;
    st = gm_dtype_from_descr(where, desc->descr, &rec);
    if (st != GPUMEM_OK) {
        gpumem_dtype_release(dt);
        return st;
    }
    if (dt->type == GPUMEM_VOID ? rec->itemsize != dt->itemsize : !gpumem_dtype_equal(rec, dt)) {
        st = gm_error(GPUMEM_ERROR_INVALID_DTYPE,
                      "%s: desc->descr (%zu bytes) disagrees with desc->typestr '%s' (%zu bytes)%s", what,
                      rec->itemsize, desc->typestr, dt->itemsize,
                      dt->type == GPUMEM_VOID ? "" : ": a descr describes the typestr's dtype or raw bytes");
        gpumem_dtype_release(rec);
        gpumem_dtype_release(dt);
        return st;
    }
    gpumem_dtype_release(dt);
    *out = rec;
    return GPUMEM_OK;
}

/* Waits for the description's stream (1 legacy, 2 per-thread, else a
 * handle) in ctx. */
static gpumem_status sync_stream(const char *what, gpumem_context *ctx, intptr_t stream)
{
    char where[160];
    int rc, op;
    if (stream == GPUMEM_CAI_STREAM_LEGACY) {
        snprintf(where, sizeof where, "%s: desc->stream 1 (the legacy default stream)", what);
        op = GM_OP_stream_synchronize;
        rc = GM_DRV(stream_synchronize, ctx->dctx, NULL);
    } else if (stream == GPUMEM_CAI_STREAM_PER_THREAD) {
        /* The driver table has no per-thread stream handle: the context's
         * synchronization waits for every stream of it, the calling
         * thread's default stream included. */
        snprintf(where, sizeof where, "%s: desc->stream 2 (the per-thread default stream)", what);
        op = GM_OP_ctx_synchronize;
        rc = GM_DRV(ctx_synchronize, ctx->dctx);
    } else {
        /* A foreign handle: what can be checked without undefined behaviour
         * in the driver (gpumem/interop.h): an address outside the null page
         * and user space, then one the driver knows in this context. */
        if (stream < 0 || stream < 4096)
            return gm_error(GPUMEM_ERROR_INVALID_VALUE,
                            "%s: desc->stream %" PRIdPTR " is not a stream: 1 and 2 are the default streams, and a "
                            "CUstream is the address of a driver object (not in the first page, not negative)",
                            what, stream);
        rc = GM_DRV(stream_query, ctx->dctx, (gm_dstream *)(uintptr_t)stream);
        if (rc == GM_CUDA_ERROR_INVALID_HANDLE || rc == GM_CUDA_ERROR_INVALID_CONTEXT ||
            rc == GM_CUDA_ERROR_INVALID_VALUE)
            return gm_error(GPUMEM_ERROR_INVALID_VALUE,
                            "%s: desc->stream 0x%" PRIxPTR " is not a stream of device %d's context that the driver "
                            "knows (cuStreamQuery: %s)", what, (uintptr_t)stream, ctx->device,
                            gm_cu_error_name(rc));
        snprintf(where, sizeof where, "%s: desc->stream 0x%" PRIxPTR, what, (uintptr_t)stream);
        op = GM_OP_stream_synchronize;
        rc = GM_DRV(stream_synchronize, ctx->dctx, (gm_dstream *)(uintptr_t)stream);
    }
    return gm_drv_check(rc, op, where);
}

GPUMEM_API gpumem_status gpumem_as_cuda_array(gpumem_context *ctx, const gpumem_cuda_array_interface *desc,
                                              unsigned flags, void (*release)(void *owner), void *owner,
                                              gpumem_array **array)
{
    GM_CHECK_HANDLE_OR_NULL(ctx); /* before the description is read (gpumem/status.h) */
    GM_CHECK_NULL(desc);
    GM_CHECK_NULL(array);
    return gm_as_cuda_array("gpumem_as_cuda_array", ctx, desc, flags, release, owner, array);
}

gpumem_status gm_as_cuda_array(const char *what, gpumem_context *ctx, const gpumem_cuda_array_interface *desc,
                               unsigned flags, void (*release)(void *owner), void *owner, gpumem_array **array)
{
    gpumem_status st = check_desc_size(what, desc->size);
    if (st != GPUMEM_OK)
        return st;
    if (flags & ~(unsigned)(GPUMEM_CAI_NO_SYNCHRONIZE | GPUMEM_CAI_READ_ONLY))
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: unknown flags 0x%x", what, flags);
    if (desc->version != 2 && desc->version != 3)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE,
                        "%s: desc->version %d is not supported: versions 2 and 3 are (versions 0 and 1 left "
                        "the strides of C-contiguous and empty arrays undefined)",
                        what, desc->version);
    if (desc->has_mask)
        return gm_error(GPUMEM_ERROR_NOT_SUPPORTED, "%s: desc->has_mask: masked arrays are not supported (numba "
                        "refuses them too)", what);
    if (desc->readonly && !(flags & GPUMEM_CAI_READ_ONLY))
        return gm_error(GPUMEM_ERROR_INVALID_VALUE,
                        "%s: desc->readonly: the data is read-only and arrays are writable; pass "
                        "GPUMEM_CAI_READ_ONLY to promise not to write it",
                        what);
    if (desc->has_stream && desc->version < 3)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: desc->stream is given, but version %d has no stream entry",
                        what, desc->version);
    if (desc->has_stream && desc->stream == 0)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE,
                        "%s: desc->stream is 0, which the specification forbids: 1 is the legacy default stream, "
                        "2 the per-thread default stream, and an absent stream (has_stream 0) means no "
                        "synchronization",
                        what);
    if (desc->ndim < 0)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: desc->ndim %d is negative", what, desc->ndim);
    gpumem_dtype *dt = NULL;
    st = desc_dtype(what, desc, &dt);
    if (st != GPUMEM_OK)
        return st;
    const int64_t *strides = desc->has_strides ? desc->strides : NULL;
    st = gm_layout_check_memory(what, "desc->data", desc->ndim, desc->shape, strides, dt->itemsize, desc->data);
    if (st == GPUMEM_OK)
        ctx = gm_context_use(ctx, what, &st);
    if (st == GPUMEM_OK && desc->has_stream && !(flags & GPUMEM_CAI_NO_SYNCHRONIZE))
        st = sync_stream(what, ctx, desc->stream);
    if (st == GPUMEM_OK)
        st = gm_array_wrap(what, ctx, GPUMEM_MEMORY_FOREIGN, desc->data, desc->ndim, desc->shape, strides, dt,
                             release, owner, array);
    if (st == GPUMEM_OK && desc->readonly)
        (*array)->readonly = (*array)->readonly_locked = true; /* the producer's memory stays read-only */
    gpumem_dtype_release(dt);
    return st;
}
