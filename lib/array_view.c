/*
 * array_view.c - what is made of an existing array, and what can be asked
 * of it: views (slices, transposes, dtype views, splits; reshapes and
 * ravels, which copy where no view has the new shape), the properties of an
 * array (shape, strides, dtype, kind, context, pointers, contiguity), and
 * its read-only flag.  Arrays are made and released in array.c.
 */
#include "config.h"

#include <stddef.h>
#include <string.h>

#include "array.h"
#include "copy_engine.h"
#include "error.h"
#include "gpumem/dtype.h"
#include "handles.h"
#include "stream.h"

/* ---- views ------------------------------------------------------------------------------ */

/* gpumem_slice is gm_slice: the layout code reads the caller's array as is. */
_Static_assert(sizeof(gpumem_slice) == sizeof(gm_slice) && offsetof(gpumem_slice, stop) == offsetof(gm_slice, stop) &&
                   offsetof(gpumem_slice, step) == offsetof(gm_slice, step),
               "gpumem_slice and gm_slice differ");
_Static_assert(GPUMEM_SLICE_DEFAULT == GM_SLICE_DEFAULT && GPUMEM_SLICE_INDEX == GM_SLICE_INDEX,
               "slice sentinels differ");

GPUMEM_API gpumem_status gpumem_array_slice(gpumem_array *array, const gpumem_slice *slices, int nslices,
                                            gpumem_array **view)
{
    const char *what = "gpumem_array_slice";
    GM_CHECK_HANDLE(array);
    GM_CHECK_NULL(view);
    if (nslices > 0)
        GM_CHECK_NULL(slices);
    int64_t shape[GM_MAX_NDIM], strides[GM_MAX_NDIM], offset;
    int ndim;
    gpumem_status st = gm_layout_slice(what, array->ndim, array->shape, array->strides,
                                       (const gm_slice *)slices, nslices, &ndim, shape, strides, &offset);
    if (st != GPUMEM_OK)
        return st;
    return gm_array_make_view(what, array, ndim, shape, strides, offset, array->dtype, view);
}

GPUMEM_API gpumem_status gpumem_array_transpose(gpumem_array *array, const int *axes, gpumem_array **view)
{
    const char *what = "gpumem_array_transpose";
    GM_CHECK_HANDLE(array);
    GM_CHECK_NULL(view);
    int64_t shape[GM_MAX_NDIM], strides[GM_MAX_NDIM];
    gpumem_status st = gm_layout_transpose(what, array->ndim, array->shape, array->strides, axes, shape, strides);
    if (st != GPUMEM_OK)
        return st;
    return gm_array_make_view(what, array, array->ndim, shape, strides, 0, array->dtype, view);
}

GPUMEM_API gpumem_status gpumem_array_view(gpumem_array *array, const gpumem_dtype *dtype, gpumem_array **view)
{
    const char *what = "gpumem_array_view";
    GM_CHECK_HANDLE(array);
    GM_CHECK_NULL(view);
    size_t itemsize;
    gpumem_status st = gm_array_check_dtype(what, dtype, &itemsize);
    int64_t shape[GM_MAX_NDIM], strides[GM_MAX_NDIM];
    if (st == GPUMEM_OK)
        st = gm_layout_view(what, array->ndim, array->shape, array->strides, array->itemsize, itemsize, shape,
                            strides);
    if (st != GPUMEM_OK)
        return st;
    return gm_array_make_view(what, array, array->ndim, shape, strides, 0, dtype, view);
}

/* A contiguous array of a's kind (pinned, mapped and managed included) with
 * a new shape in `order`: the copy of a reshape. */
static gpumem_status new_same_kind(const char *what, const gpumem_array *a, int ndim, const int64_t *shape,
                                   char order, gpumem_stream *stream, gpumem_array **out)
{
    unsigned flags;
    switch (a->kind) {
    case GPUMEM_MEMORY_PINNED: flags = GM_CU_MEMHOSTALLOC_PORTABLE; break;
    case GPUMEM_MEMORY_MAPPED: flags = GM_CU_MEMHOSTALLOC_PORTABLE | GM_CU_MEMHOSTALLOC_DEVICEMAP; break;
    case GPUMEM_MEMORY_MANAGED: flags = GM_CU_MEM_ATTACH_GLOBAL; break;
    default: return gm_array_new_like(what, a, ndim, shape, order, stream, out);
    }
    int64_t strides[GM_MAX_NDIM];
    gm_layout_contiguous_strides(what, ndim, shape, a->itemsize, order, strides);
    return gm_array_new_locked(what, a->kind, a->ctx, ndim, shape, strides, a->dtype, flags, out);
}

/* gpumem_array_reshape for the public call `what` (reshape or ravel). */
static gpumem_status reshape(const char *what, gpumem_array *array, int ndim, const int64_t *shape, char order,
                             unsigned flags, gpumem_stream *stream, gpumem_array **result)
{
    GM_FORWARD_IF_ERROR(gm_handle_check(array, GM_HANDLE_ARRAY, what, "array"));
    GM_RETURN_ERROR_IF(result == NULL, GPUMEM_ERROR_NULL_ARGUMENT, "%s: argument 'result' is NULL", what);
    GM_RETURN_ERROR_IF(ndim > 0 && shape == NULL, GPUMEM_ERROR_NULL_ARGUMENT, "%s: argument 'shape' is NULL", what);
    if (flags & ~(unsigned)GPUMEM_NO_COPY)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: unknown flags 0x%x", what, flags);
    int64_t nshape[GM_MAX_NDIM], nstrides[GM_MAX_NDIM];
    bool is_view;
    gpumem_status st = gm_layout_reshape(what, array->ndim, array->shape, array->strides, array->itemsize, ndim,
                                         shape, order, nshape, nstrides, &is_view);
    if (st != GPUMEM_OK)
        return st;
    if (is_view)
        return gm_array_make_view(what, array, ndim, nshape, nstrides, 0, array->dtype, result);
    if (flags & GPUMEM_NO_COPY)
        return gm_error(GPUMEM_ERROR_COPY_REQUIRED, "%s: no view of this array has the new shape in order "
                        "'%c'; a copy is required", what, order);
    st = gm_stream_check(stream, array->ctx, what, "array");
    if (st != GPUMEM_OK)
        return st;
    /* The copy: a contiguous array in the reading order, filled through a
     * view of it with the old shape read in that same order. */
    char rorder = order;
    if (rorder == 'A')
        rorder = gm_layout_is_f_contiguous(array->ndim, array->shape, array->strides, array->itemsize) &&
                         !gm_layout_is_c_contiguous(array->ndim, array->shape, array->strides, array->itemsize)
                     ? 'F'
                     : 'C';
    gpumem_array *copy = NULL, *as_old = NULL;
    st = new_same_kind(what, array, ndim, nshape, rorder, stream, &copy);
    if (st == GPUMEM_OK) {
        int64_t ostrides[GM_MAX_NDIM];
        gm_layout_contiguous_strides(what, array->ndim, array->shape, array->itemsize, rorder, ostrides);
        st = gm_array_make_view(what, copy, array->ndim, array->shape, ostrides, 0, array->dtype, &as_old);
    }
    if (st == GPUMEM_OK)
        st = gm_array_copy(what, as_old, array, stream);
    st = gm_keep_first(st, gm_array_release_as(as_old, what)); /* a view: gives back nothing */
    if (st != GPUMEM_OK)
        return gm_keep_first(st, gm_array_release_as(copy, what));
    *result = copy;
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_array_reshape(gpumem_array *array, int ndim, const int64_t *shape, char order,
                                              unsigned flags, gpumem_stream *stream, gpumem_array **result)
{
    return reshape("gpumem_array_reshape", array, ndim, shape, order, flags, stream, result);
}

GPUMEM_API gpumem_status gpumem_array_ravel(gpumem_array *array, char order, unsigned flags,
                                            gpumem_stream *stream, gpumem_array **result)
{
    int64_t flat = -1;
    return reshape("gpumem_array_ravel", array, 1, &flat, order, flags, stream, result);
}

GPUMEM_API gpumem_status gpumem_array_split(gpumem_array *array, int64_t section, gpumem_array **pieces,
                                            size_t capacity, size_t *count)
{
    const char *what = "gpumem_array_split";
    GM_CHECK_HANDLE(array);
    GM_CHECK_NULL(count);
    if (array->ndim != 1)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: 'array' has %d dimensions; split needs 1", what,
                        array->ndim);
    if (section <= 0)
        return gm_error(GPUMEM_ERROR_INVALID_SECTION, "%s: section %lld must be positive", what,
                        (long long)section);
    int64_t n = array->shape[0];
    size_t need = (size_t)(n / section + (n % section != 0)); /* no n + section overflow */
    /* only a capacity too small tells the count of a failing call */
    GM_RETURN_ERROR_IF(need > 0 && need <= capacity && pieces == NULL, GPUMEM_ERROR_NULL_ARGUMENT,
                       "%s: argument 'pieces' is NULL", what);
    *count = need;
    if (need > capacity)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: %zu pieces do not fit in capacity %zu", what, need,
                        capacity);
    for (size_t i = 0; i < need; i++) {
        int64_t begin = (int64_t)i * section;
        int64_t len = n - begin < section ? n - begin : section;
        gpumem_status st = gm_array_make_view(what, array, 1, &len, array->strides, begin * array->strides[0],
                                              array->dtype, &pieces[i]);
        if (st != GPUMEM_OK) {
            while (i > 0) /* views: they give back nothing */
                gm_error_quietly(gm_array_release_as(pieces[--i], what));
            return st;
        }
    }
    return GPUMEM_OK;
}

/* ---- properties -------------------------------------------------------------------------- */

GPUMEM_API gpumem_status gpumem_array_ndim(const gpumem_array *array, int *ndim)
{
    GM_CHECK_HANDLE(array);
    GM_CHECK_NULL(ndim);
    *ndim = array->ndim;
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_array_shape(const gpumem_array *array, int64_t *shape)
{
    GM_CHECK_HANDLE(array);
    if (array->ndim > 0) {
        GM_CHECK_NULL(shape);
        memcpy(shape, array->shape, (size_t)array->ndim * sizeof *shape);
    }
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_array_strides(const gpumem_array *array, int64_t *strides)
{
    GM_CHECK_HANDLE(array);
    if (array->ndim > 0) {
        GM_CHECK_NULL(strides);
        memcpy(strides, array->strides, (size_t)array->ndim * sizeof *strides);
    }
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_array_dtype(const gpumem_array *array, const gpumem_dtype **dtype)
{
    GM_CHECK_HANDLE(array);
    GM_CHECK_NULL(dtype);
    *dtype = array->dtype;
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_array_size(const gpumem_array *array, int64_t *size)
{
    GM_CHECK_HANDLE(array);
    GM_CHECK_NULL(size);
    *size = gm_array_size(array);
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_array_nbytes(const gpumem_array *array, int64_t *nbytes)
{
    GM_CHECK_HANDLE(array);
    GM_CHECK_NULL(nbytes);
    *nbytes = gm_array_size(array) * (int64_t)array->itemsize;
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_array_kind(const gpumem_array *array, gpumem_memory_kind *kind)
{
    GM_CHECK_HANDLE(array);
    GM_CHECK_NULL(kind);
    *kind = array->kind;
    return GPUMEM_OK;
}

GPUMEM_API const char *gpumem_memory_kind_name(gpumem_memory_kind kind)
{
    switch (kind) {
    case GPUMEM_MEMORY_DEVICE: return "device";
    case GPUMEM_MEMORY_HOST: return "host";
    case GPUMEM_MEMORY_PINNED: return "pinned";
    case GPUMEM_MEMORY_MAPPED: return "mapped";
    case GPUMEM_MEMORY_MANAGED: return "managed";
    case GPUMEM_MEMORY_FOREIGN: return "foreign";
    }
    return "unknown";
}

GPUMEM_API gpumem_status gpumem_array_context(const gpumem_array *array, gpumem_context **ctx)
{
    GM_CHECK_HANDLE(array);
    GM_CHECK_NULL(ctx);
    *ctx = array->ctx;
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_array_device_pointer(const gpumem_array *array, uint64_t *pointer)
{
    GM_CHECK_HANDLE(array);
    GM_CHECK_NULL(pointer);
    if (array->kind == GPUMEM_MEMORY_HOST || array->kind == GPUMEM_MEMORY_PINNED)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "gpumem_array_device_pointer: a host array has no device "
                        "address (map it with gpumem_mapped)");
    *pointer = array->dev;
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_array_host_pointer(const gpumem_array *array, void **pointer)
{
    GM_CHECK_HANDLE(array);
    GM_CHECK_NULL(pointer);
    if (gm_array_on_device(array))
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "gpumem_array_host_pointer: a device array has no host "
                        "address (copy it with gpumem_copy_to_host)");
    *pointer = array->host;
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_array_is_c_contiguous(const gpumem_array *array, int *result)
{
    GM_CHECK_HANDLE(array);
    GM_CHECK_NULL(result);
    *result = gm_layout_is_c_contiguous(array->ndim, array->shape, array->strides, array->itemsize);
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_array_is_f_contiguous(const gpumem_array *array, int *result)
{
    GM_CHECK_HANDLE(array);
    GM_CHECK_NULL(result);
    *result = gm_layout_is_f_contiguous(array->ndim, array->shape, array->strides, array->itemsize);
    return GPUMEM_OK;
}

/* ---- read-only arrays ---------------------------------------------------------------------- */

gpumem_status gm_array_check_writable(const char *what, const gpumem_array *a, const char *arg)
{
    if (!a->readonly)
        return GPUMEM_OK;
    return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: '%s' is read-only", what, arg);
}

gpumem_status gm_array_check_destination(const char *what, const gpumem_array *a, const char *arg)
{
    GM_FORWARD_IF_ERROR(gm_array_check_writable(what, a, arg));
    if (gm_array_size(a) == 0)
        return GPUMEM_OK; /* nothing is written */
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] > 1 && a->strides[i] == 0)
            return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: '%s' has stride 0 on axis %d of extent %lld: its "
                            "elements share memory (a broadcast), which cannot be written", what, arg, i,
                            (long long)a->shape[i]);
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_array_is_readonly(const gpumem_array *array, int *readonly)
{
    GM_CHECK_HANDLE(array);
    GM_CHECK_NULL(readonly);
    *readonly = array->readonly;
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_array_set_readonly(gpumem_array *array, int readonly)
{
    GM_CHECK_HANDLE(array);
    if (!readonly) {
        const gpumem_array *owner = array->base != NULL ? array->base : array;
        if (array->readonly_locked)
            return gm_error(GPUMEM_ERROR_INVALID_VALUE, "gpumem_array_set_readonly: the array's memory was "
                            "imported read-only and cannot be made writable");
        if (owner != array && owner->readonly)
            return gm_error(GPUMEM_ERROR_INVALID_VALUE, "gpumem_array_set_readonly: the array is a view of a "
                            "read-only array");
    }
    array->readonly = readonly != 0;
    return GPUMEM_OK;
}
