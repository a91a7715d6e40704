/*
 * copy.c - copies between arrays: the public calls check their arguments
 * and hand the copy to the engine (copy_engine.c), which chooses how to move
 * it.  fill, get_item and set_item live here too, since they are copies of
 * one value.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "copy_debug.h"
#include "copy_engine.h"
#include "copy_peer.h"
#include "copyplan.h"
#include "error.h"
#include "gpumem/dtype.h"
#include "stream.h"
#include "trace.h"

static bool same_shape(const gpumem_array *a, const gpumem_array *b)
{
    if (a->ndim != b->ndim)
        return false;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i])
            return false;
    return true;
}

static void format_shape(const gpumem_array *a, char *buf, size_t size)
{
    size_t used = (size_t)snprintf(buf, size, "(");
    for (int i = 0; i < a->ndim && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%lld", i ? ", " : "", (long long)a->shape[i]);
    if (used < size)
        snprintf(buf + used, size - used, a->ndim == 1 ? ",)" : ")");
}

/* A contiguous scratch array like `like` (same space, its axis order). */
static gpumem_status scratch_like(const char *what, const gpumem_array *like, gpumem_stream *stream,
                                  gpumem_array **out)
{
    gm_owner was = gm_alloc_owner_begin(GM_OWNER_TEMPORARY); /* the library's own, in a trace */
    gpumem_status st = gm_array_new_like(what, like, like->ndim, like->shape, 0, stream, out);
    gm_alloc_owner_end(was);
    return st;
}

/* Releases a scratch array once the work queued on it is done: freeing device
 * memory under queued copies is not safe on every backend. */
static gpumem_status release_scratch(gpumem_array *scratch, gpumem_context *ctx, gm_dstream *ds, int async,
                                     gpumem_status st, const char *what)
{
    if (scratch == NULL)
        return st;
    if (async && gm_array_on_device(scratch))
        st = gm_keep_first(st, gm_drv_check(GM_DRV(stream_synchronize, ctx->dctx, ds), GM_OP_stream_synchronize,
                                            what));
    return gm_keep_first(st, gm_array_release_as(scratch, what));
}

/* Checks a copy's arguments; gives the context that does the copy (NULL for
 * two host-side arrays). */
gpumem_status gm_copy_check(const char *what, gpumem_array *dst, const gpumem_array *src, gpumem_stream *stream,
                            gpumem_context **ctx)
{
    GM_FORWARD_IF_ERROR(gm_handle_check(dst, GM_HANDLE_ARRAY, what, "dst"));
    GM_FORWARD_IF_ERROR(gm_handle_check(src, GM_HANDLE_ARRAY, what, "src"));
    if (stream != NULL)
        GM_FORWARD_IF_ERROR(gm_handle_check(stream, GM_HANDLE_STREAM, what, "stream"));
    if (!same_shape(dst, src)) {
        char a[256], b[256];
        format_shape(dst, a, sizeof a);
        format_shape(src, b, sizeof b);
        return gm_error(GPUMEM_ERROR_SHAPE_MISMATCH, "%s: 'dst' has shape %s but 'src' has shape %s", what, a, b);
    }
    if (!gpumem_dtype_equal(dst->dtype, src->dtype)) {
        char a[64] = "?", b[64] = "?";
        gpumem_dtype_typestr(dst->dtype, a, sizeof a);
        gpumem_dtype_typestr(src->dtype, b, sizeof b);
        return gm_error(GPUMEM_ERROR_DTYPE_MISMATCH, "%s: 'dst' has dtype %s but 'src' has dtype %s", what, a, b);
    }
    GM_FORWARD_IF_ERROR(gm_array_check_destination(what, dst, "dst"));
    if (gm_copy_is_cross_device(dst, src)) {
        /* between two devices: a stream of either will do */
        GM_RETURN_ERROR_IF(stream != NULL && stream->ctx->dctx != dst->ctx->dctx &&
                               stream->ctx->dctx != src->ctx->dctx,
                           GPUMEM_ERROR_CONTEXT_MISMATCH,
                           "%s: a copy from device %d to device %d takes a stream of either device, but the "
                           "stream belongs to device %d", what, src->ctx->device, dst->ctx->device,
                           stream->ctx->device);
        *ctx = dst->ctx;
        return GPUMEM_OK;
    }
    GM_FORWARD_IF_ERROR(gm_stream_check(stream, dst->ctx, what, "dst"));
    GM_FORWARD_IF_ERROR(gm_stream_check(stream, src->ctx, what, "src"));
    *ctx = gm_array_on_device(dst) ? dst->ctx : gm_array_on_device(src) ? src->ctx : NULL;
    return GPUMEM_OK;
}

/* The trace's event of a copy that started at t0 (lib/trace.h). */
void gm_copy_trace(uint64_t t0, const gpumem_array *dst, const gpumem_array *src, gpumem_stream *stream,
                   gpumem_context *ctx, gpumem_copy_path path)
{
    bool sd = gm_array_on_device(src), dd = gm_array_on_device(dst);
    int dir = sd && dd ? (src->ctx->device != dst->ctx->device ? GM_TRACE_PEER : GM_TRACE_D2D)
              : sd     ? GM_TRACE_D2H
              : dd     ? GM_TRACE_H2D
                       : GM_TRACE_H2H;
    gm_trace_copy(t0, ctx, sd ? src->ctx->device : dd ? dst->ctx->device : -1,
                  dir == GM_TRACE_PEER ? dst->ctx->device : -1, stream, src->kind, dst->kind, dir,
                  (uint64_t)gm_array_size(dst) * dst->itemsize, gpumem_copy_path_name(path));
}

gpumem_status gm_array_copy(const char *what, gpumem_array *dst, const gpumem_array *src, gpumem_stream *stream)
{
    gpumem_context *ctx = NULL;
    gpumem_status st = gm_copy_check(what, dst, src, stream, &ctx);
    if (st != GPUMEM_OK)
        return st;
    /* every copy, empty or between devices, is decided and reported alike */
    uint64_t t0 = GM_TRACE_TICKS();
    bool lines = gm_copies_on(); /* GPUMEM_DEBUG=copies */
    uint64_t c0 = lines ? gm_copies_clock() : 0;
    gm_copy_outcome o;
    st = gm_copy_run(what, dst, src, stream, ctx, &o);
    GM_TRACE_IF(st == GPUMEM_OK && gm_array_size(dst) != 0, gm_copy_trace(t0, dst, src, stream, ctx, o.d.path));
    if (lines)
        gm_copies_line(what, c0, st, dst, src, o.d.path, o.synced);
    return st;
}

GPUMEM_API gpumem_status gpumem_array_copy(gpumem_array *dst, const gpumem_array *src, gpumem_stream *stream)
{
    return gm_array_copy("gpumem_array_copy", dst, src, stream);
}

/* The error of a copy_to_host or copy_to_device whose dst is on the wrong
 * side; when src is on dst's side, the caller most likely swapped them. */
static gpumem_status wrong_side(const char *what, const gpumem_array *dst, const gpumem_array *src, bool to_host)
{
    const char *want = to_host ? "host-side" : "device";
    const char *order = to_host ? "(src, dst), numba's order" : "(dst, src)";
    bool swapped = src != NULL && gm_handle_live(src, GM_HANDLE_ARRAY) && gm_array_on_device(src) != to_host;
    if (swapped)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: 'dst' is a %s array and 'src' a %s one (arguments "
                        "swapped?): %s takes %s, and copies into a %s array", what,
                        gpumem_memory_kind_name(dst->kind), gpumem_memory_kind_name(src->kind), what, order, want);
    return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: 'dst' is a %s array; %s copies into a %s array "
                    "(gpumem_array_copy copies between any two)", what, gpumem_memory_kind_name(dst->kind), what,
                    want);
}

GPUMEM_API gpumem_status gpumem_copy_to_host(const gpumem_array *src, gpumem_array *dst, gpumem_stream *stream)
{
    const char *what = "gpumem_copy_to_host";
    GM_CHECK_HANDLE(dst);
    if (gm_array_on_device(dst))
        return wrong_side(what, dst, src, true);
    return gm_array_copy(what, dst, src, stream);
}

GPUMEM_API gpumem_status gpumem_copy_to_device(gpumem_array *dst, const gpumem_array *src,
                                               gpumem_stream *stream)
{
    const char *what = "gpumem_copy_to_device";
    GM_CHECK_HANDLE(dst);
    if (!gm_array_on_device(dst))
        return wrong_side(what, dst, src, false);
    return gm_array_copy(what, dst, src, stream);
}

/* ---- one value ------------------------------------------------------------------------------ */

static gpumem_status item_offset(const char *what, const gpumem_array *a, const int64_t *index,
                                 int64_t *offset)
{
    if (a->ndim > 0 && index == NULL)
        return gm_error(GPUMEM_ERROR_NULL_ARGUMENT, "%s: argument 'index' is NULL", what);
    return gm_layout_index(what, a->ndim, a->shape, a->strides, index, offset);
}

/* Counted forms: nindex must be the array's ndim (checked before index is read). */
static gpumem_status check_nindex(const char *what, const gpumem_array *a, int nindex)
{
    if (nindex == a->ndim)
        return GPUMEM_OK;
    return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: nindex %d: the array has %d dimension%s, and takes one index "
                    "per dimension", what, nindex, a->ndim, a->ndim == 1 ? "" : "s");
}

static gpumem_status get_item(const char *what, const gpumem_array *array, const int64_t *index, void *value,
                              gpumem_stream *stream)
{
    int64_t off;
    GM_FORWARD_IF_ERROR(item_offset(what, array, index, &off));
    GM_FORWARD_IF_ERROR(gm_stream_check(stream, array->ctx, what, "array"));
    if (!gm_array_on_device(array)) { /* after the stream's queued downloads into it */
        GM_FORWARD_IF_ERROR(gm_stream_wait(stream, what));
        memcpy(value, array->host + off, array->itemsize);
        return GPUMEM_OK;
    }
    /* Ordered on the stream, and waited for: the caller reads the value next. */
    return gm_drv_check(GM_DRV(memcpy, array->ctx->dctx, (gm_cu_deviceptr)(uintptr_t)value,
                               array->dev + (gm_cu_deviceptr)off, array->itemsize, gm_stream_ds(stream), 0),
                        GM_OP_memcpy, what);
}

static gpumem_status set_item(const char *what, gpumem_array *array, const int64_t *index, const void *value,
                              gpumem_stream *stream)
{
    int64_t off;
    GM_FORWARD_IF_ERROR(gm_array_check_writable(what, array, "array"));
    GM_FORWARD_IF_ERROR(item_offset(what, array, index, &off));
    GM_FORWARD_IF_ERROR(gm_stream_check(stream, array->ctx, what, "array"));
    if (!gm_array_on_device(array)) { /* after the stream's queued downloads into it */
        GM_FORWARD_IF_ERROR(gm_stream_wait(stream, what));
        memcpy(array->host + off, value, array->itemsize);
        return GPUMEM_OK;
    }
    return gm_drv_check(GM_DRV(memcpy, array->ctx->dctx, array->dev + (gm_cu_deviceptr)off,
                               (gm_cu_deviceptr)(uintptr_t)value, array->itemsize, gm_stream_ds(stream),
                               stream != NULL),
                        GM_OP_memcpy, what);
}

GPUMEM_API gpumem_status gpumem_array_get_item(const gpumem_array *array, const int64_t *index, void *value,
                                               gpumem_stream *stream)
{
    GM_CHECK_HANDLE(array);
    GM_CHECK_NULL(value);
    return get_item("gpumem_array_get_item", array, index, value, stream);
}

GPUMEM_API gpumem_status gpumem_array_get_item_n(const gpumem_array *array, int nindex, const int64_t *index,
                                                 void *value, gpumem_stream *stream)
{
    const char *what = "gpumem_array_get_item_n";
    GM_CHECK_HANDLE(array);
    GM_CHECK_NULL(value);
    gpumem_status st = check_nindex(what, array, nindex);
    return st != GPUMEM_OK ? st : get_item(what, array, index, value, stream);
}

GPUMEM_API gpumem_status gpumem_array_set_item(gpumem_array *array, const int64_t *index, const void *value,
                                               gpumem_stream *stream)
{
    GM_CHECK_HANDLE(array);
    GM_CHECK_NULL(value);
    return set_item("gpumem_array_set_item", array, index, value, stream);
}

GPUMEM_API gpumem_status gpumem_array_set_item_n(gpumem_array *array, int nindex, const int64_t *index,
                                                 const void *value, gpumem_stream *stream)
{
    const char *what = "gpumem_array_set_item_n";
    GM_CHECK_HANDLE(array);
    GM_CHECK_NULL(value);
    gpumem_status st = check_nindex(what, array, nindex);
    return st != GPUMEM_OK ? st : set_item(what, array, index, value, stream);
}

/* Fills n contiguous elements at dev with value: one memset when the value
 * is a 1-, 2- or 4-byte pattern, else one upload and log2(n) doubling
 * device-to-device copies. */
static gpumem_status fill_contiguous(const char *what, gpumem_context *ctx, gm_cu_deviceptr dev, int64_t n,
                                     size_t itemsize, const unsigned char *value, gm_dstream *ds, int async)
{
    size_t pattern = itemsize;
    for (size_t p = 1; p < itemsize && p <= 4; p *= 2) {
        /* The smallest power-of-two period (<= 4) the value repeats with. */
        if (itemsize % p == 0) {
            bool periodic = true;
            for (size_t i = p; i < itemsize && periodic; i++)
                periodic = value[i] == value[i % p];
            if (periodic) {
                pattern = p;
                break;
            }
        }
    }
    if (pattern <= 4 && pattern != 3) {
        unsigned v = 0;
        memcpy(&v, value, pattern); /* the driver takes the pattern in host byte order */
        size_t count = (size_t)n * itemsize / pattern;
        return gm_drv_check(GM_DRV(memset, ctx->dctx, dev, v, (unsigned)pattern, count, ds, async),
                            GM_OP_memset, what);
    }
    gpumem_status st = gm_drv_check(GM_DRV(memcpy, ctx->dctx, dev, (gm_cu_deviceptr)(uintptr_t)value, itemsize,
                                           ds, async),
                                    GM_OP_memcpy, what);
    for (int64_t done = 1; st == GPUMEM_OK && done < n;) {
        int64_t chunk = done < n - done ? done : n - done;
        st = gm_drv_check(GM_DRV(memcpy, ctx->dctx, dev + (gm_cu_deviceptr)(done * (int64_t)itemsize), dev,
                                 (size_t)chunk * itemsize, ds, async),
                          GM_OP_memcpy, what);
        done += chunk;
    }
    return st;
}

GPUMEM_API gpumem_status gpumem_array_fill(gpumem_array *array, const void *value, gpumem_stream *stream)
{
    const char *what = "gpumem_array_fill";
    GM_CHECK_HANDLE(array);
    GM_CHECK_NULL(value);
    GM_FORWARD_IF_ERROR(gm_array_check_destination(what, array, "array"));
    GM_FORWARD_IF_ERROR(gm_stream_check(stream, array->ctx, what, "array"));
    int64_t n = gm_array_size(array);
    if (n == 0)
        return GPUMEM_OK;
    gpumem_status st;
    if (!gm_array_on_device(array)) {
        /* A copy from a broadcast source: the value with all strides 0,
         * after the stream's queued downloads into the array. */
        int64_t zeros[GM_MAX_NDIM] = {0};
        gm_copy_plan plan;
        st = gm_copy_plan_make(array->ndim, array->shape, zeros, array->strides, array->itemsize, SIZE_MAX, &plan);
        if (st != GPUMEM_OK)
            return gm_error_prefix(st, what);
        GM_FORWARD_IF_ERROR(gm_stream_wait(stream, what));
        gm_copy_plan_run_host(&plan, value, array->host);
        return GPUMEM_OK;
    }
    gm_dstream *ds = gm_stream_ds(stream);
    if (gm_layout_is_c_contiguous(array->ndim, array->shape, array->strides, array->itemsize) ||
        gm_layout_is_f_contiguous(array->ndim, array->shape, array->strides, array->itemsize))
        return fill_contiguous(what, array->ctx, array->dev, n, array->itemsize, value, ds, stream != NULL);
    /* Strided: fill a contiguous scratch array, then one planned copy. */
    gpumem_array *tmp = NULL;
    st = scratch_like(what, array, stream, &tmp);
    if (st == GPUMEM_OK)
        st = fill_contiguous(what, array->ctx, tmp->dev, n, array->itemsize, value, ds, stream != NULL);
    if (st == GPUMEM_OK)
        st = gm_copy_run(what, array, tmp, stream, array->ctx, NULL);
    return release_scratch(tmp, array->ctx, ds, stream != NULL, st, what);
}
