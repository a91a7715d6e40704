/*
 * layout.c - the pure layout arithmetic of arrays (see layout.h): NumPy's
 * rules for shapes, byte strides, contiguity, slices, transposes, reshapes
 * and dtype views, on plain numbers.
 *
 * Every function computes into local arrays and writes its outputs last, so
 * a failure leaves them untouched and outputs may alias inputs.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "layout.h"

#define WHAT(w) ((w) != NULL ? (w) : "gpumem")

/* Room for a 32-axis shape of 20-digit extents in a message. */
#define SHAPE_TEXT_MAX (GM_MAX_NDIM * 22 + 4)

/* "(2, 3)", "(5,)" or "()", as Python prints a shape tuple. */
static const char *shape_text(char *buf, int ndim, const int64_t *shape)
{
    size_t len = 0;
    buf[len++] = '(';
    for (int i = 0; i < ndim && len < SHAPE_TEXT_MAX - 24; i++)
        len += (size_t)snprintf(buf + len, SHAPE_TEXT_MAX - len, i == 0 ? "%" PRId64 : ", %" PRId64, shape[i]);
    snprintf(buf + len, SHAPE_TEXT_MAX - len, ndim == 1 ? ",)" : ")");
    return buf;
}

static gpumem_status check_ndim(const char *what, const char *name, int ndim)
{
    if (ndim < 0)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: %s %d is negative", what, name, ndim);
    if (ndim > GM_MAX_NDIM)
        return gm_error(GPUMEM_ERROR_TOO_MANY_DIMENSIONS, "%s: %s %d exceeds the maximum of %d dimensions", what,
                        name, ndim, GM_MAX_NDIM);
    return GPUMEM_OK;
}

/* A pointer to `count` items may be NULL only when count is 0. */
#define NEED(ptr, count) \
    do { \
        if ((ptr) == NULL && (count) > 0) \
            return gm_error(GPUMEM_ERROR_NULL_ARGUMENT, "%s: argument '%s' is NULL", what, #ptr); \
    } while (0)

/* memcpy of n int64_t, where NULL is fine for n == 0 (memcpy's isn't). */
static void copy64(int64_t *dst, const int64_t *src, int n)
{
    if (n > 0)
        memcpy(dst, src, (size_t)n * sizeof *src);
}

static bool valid_order(char order)
{
    return order == 'C' || order == 'F' || order == 'A';
}

static gpumem_status order_error(const char *what, char order)
{
    return gm_error(GPUMEM_ERROR_INVALID_ORDER, "%s: order 0x%02x ('%c') is not 'C', 'F' or 'A'", what,
                    (unsigned)(unsigned char)order, order >= 0x20 && order < 0x7f ? order : '?');
}

static bool is_empty(int ndim, const int64_t *shape)
{
    for (int i = 0; i < ndim; i++)
        if (shape[i] == 0)
            return true;
    return false;
}

/* NumPy's _array_fill_strides: contiguous strides where an extent of 0
 * counts as 1, so that every stride of an empty array is still a plausible
 * one (np.empty((2, 0, 3), 'i4').strides == (12, 12, 4)).  False if a
 * stride that is needed overflows (never for a checked shape). */
static bool fill_strides(int ndim, const int64_t *shape, int64_t itemsize, bool fortran, int64_t *out)
{
    int64_t s = itemsize;
    bool overflow = false;
    for (int k = 0; k < ndim; k++) {
        int axis = fortran ? k : ndim - 1 - k;
        if (overflow)
            return false;
        out[axis] = s;
        if (shape[axis] > 1)
            overflow = __builtin_mul_overflow(s, shape[axis], &s);
    }
    return true;
}

gpumem_status gm_layout_check_shape(const char *what, int ndim, const int64_t *shape, size_t itemsize,
                                    int64_t *size, int64_t *nbytes)
{
    what = WHAT(what);
    gpumem_status st = check_ndim(what, "ndim", ndim);
    if (st != GPUMEM_OK)
        return st;
    NEED(shape, ndim);
    for (int i = 0; i < ndim; i++)
        if (shape[i] < 0)
            return gm_error(GPUMEM_ERROR_NEGATIVE_DIMENSION, "%s: shape[%d] (axis %d) is %" PRId64
                            ": an extent cannot be negative", what, i, i, shape[i]);
    if (itemsize > (size_t)INT64_MAX)
        return gm_error(GPUMEM_ERROR_OVERFLOW, "%s: item size %zu exceeds INT64_MAX", what, itemsize);
    /* As NumPy, the non-zero extents must fit even when another is 0: the
     * strides are computed from them. */
    int64_t count = 1, bytes = (int64_t)itemsize;
    bool empty = false;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] == 0) {
            empty = true;
            continue;
        }
        if (__builtin_mul_overflow(count, shape[i], &count) || __builtin_mul_overflow(bytes, shape[i], &bytes)) {
            char text[SHAPE_TEXT_MAX];
            return gm_error(GPUMEM_ERROR_OVERFLOW,
                            "%s: shape %s with item size %zu overflows at axis %d: more than INT64_MAX bytes",
                            what, shape_text(text, ndim, shape), itemsize, i);
        }
    }
    if (size != NULL)
        *size = empty ? 0 : count;
    if (nbytes != NULL)
        *nbytes = empty ? 0 : bytes;
    return GPUMEM_OK;
}

gpumem_status gm_layout_contiguous_strides(const char *what, int ndim, const int64_t *shape, size_t itemsize,
                                           char order, int64_t *strides)
{
    what = WHAT(what);
    gpumem_status st = check_ndim(what, "ndim", ndim);
    if (st != GPUMEM_OK)
        return st;
    NEED(shape, ndim);
    NEED(strides, ndim);
    if (!valid_order(order))
        return order_error(what, order);
    int64_t out[GM_MAX_NDIM];
    if (itemsize > (size_t)INT64_MAX || !fill_strides(ndim, shape, (int64_t)itemsize, order == 'F', out))
        return gm_error(GPUMEM_ERROR_OVERFLOW, "%s: the contiguous strides overflow int64_t", what);
    copy64(strides, out, ndim);
    return GPUMEM_OK;
}

static uint64_t magnitude(int64_t v)
{
    return v < 0 ? -(uint64_t)v : (uint64_t)v;
}

void gm_layout_strides_like(int ndim, const int64_t *shape, const int64_t *like_strides, size_t itemsize,
                            int64_t *strides)
{
    if (ndim <= 0 || ndim > GM_MAX_NDIM)
        return;
    int64_t out[GM_MAX_NDIM];
    if (gm_layout_is_c_contiguous(ndim, shape, like_strides, itemsize)) {
        fill_strides(ndim, shape, (int64_t)itemsize, false, out);
    } else if (gm_layout_is_f_contiguous(ndim, shape, like_strides, itemsize)) {
        fill_strides(ndim, shape, (int64_t)itemsize, true, out);
    } else {
        /* Stable insertion sort of the axes of extent != 1 by decreasing
         * |stride|; extent-1 axes keep their own places in the order. */
        int moving[GM_MAX_NDIM], nmoving = 0;
        for (int i = 0; i < ndim; i++) {
            if (shape[i] == 1)
                continue;
            int j = nmoving++;
            while (j > 0 && magnitude(like_strides[moving[j - 1]]) < magnitude(like_strides[i])) {
                moving[j] = moving[j - 1];
                j--;
            }
            moving[j] = i;
        }
        int perm[GM_MAX_NDIM]; /* outermost first */
        for (int i = 0, k = 0; i < ndim; i++)
            perm[i] = shape[i] == 1 ? i : moving[k++];
        int64_t s = (int64_t)itemsize;
        for (int i = ndim - 1; i >= 0; i--) {
            out[perm[i]] = s;
            if (shape[perm[i]] > 1)
                s *= shape[perm[i]];
        }
    }
    copy64(strides, out, ndim);
}

/* NumPy's _UpdateContiguousFlags: extent-1 axes are skipped, any extent 0
 * makes the array both C and F contiguous. */
static bool is_contiguous(int ndim, const int64_t *shape, const int64_t *strides, size_t itemsize, bool fortran)
{
    if (is_empty(ndim, shape))
        return true;
    int64_t expect = (int64_t)itemsize;
    bool overflow = false;
    for (int k = 0; k < ndim; k++) {
        int axis = fortran ? k : ndim - 1 - k;
        if (shape[axis] == 1)
            continue;
        if (overflow || strides[axis] != expect)
            return false;
        overflow = __builtin_mul_overflow(expect, shape[axis], &expect);
    }
    return true;
}

bool gm_layout_is_c_contiguous(int ndim, const int64_t *shape, const int64_t *strides, size_t itemsize)
{
    return is_contiguous(ndim, shape, strides, itemsize, false);
}

bool gm_layout_is_f_contiguous(int ndim, const int64_t *shape, const int64_t *strides, size_t itemsize)
{
    return is_contiguous(ndim, shape, strides, itemsize, true);
}

bool gm_layout_extent(int ndim, const int64_t *shape, const int64_t *strides, size_t itemsize, int64_t *lo,
                      int64_t *hi)
{
    if (is_empty(ndim, shape)) {
        *lo = *hi = 0;
        return true;
    }
    int64_t l = 0, h = 0, span;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] == 1)
            continue; /* its stride never moves the pointer */
        if (__builtin_mul_overflow(shape[i] - 1, strides[i], &span))
            return false;
        if (span < 0 ? __builtin_add_overflow(l, span, &l) : __builtin_add_overflow(h, span, &h))
            return false;
    }
    if (itemsize > (size_t)INT64_MAX || __builtin_add_overflow(h, (int64_t)itemsize, &h))
        return false;
    *lo = l;
    *hi = h;
    return true;
}

/* A slice bound after adding n to a negative value: for step > 0 it may be
 * n (one past the end); for step < 0 it must be an element, or 0 on an empty
 * axis. */
static bool bound_ok(int64_t v, int64_t n, int64_t step)
{
    if (step > 0)
        return v >= 0 && v <= n;
    return (v >= 0 && v < n) || (n == 0 && v == 0);
}

static gpumem_status bound_error(const char *what, int axis, bool is_stop, int64_t given, int64_t n, int64_t step)
{
    const char *name = is_stop ? "stop" : "start";
    if (step > 0)
        return gm_error(GPUMEM_ERROR_INDEX_OUT_OF_RANGE,
                        "%s: axis %d: %s %" PRId64 " is out of range for extent %" PRId64 " (slices[%d].%s)", what,
                        axis, name, given, n, axis, name);
    return gm_error(GPUMEM_ERROR_INDEX_OUT_OF_RANGE,
                    "%s: axis %d: %s %" PRId64 " is out of range for extent %" PRId64 " with step %" PRId64
                    "%s (slices[%d].%s)",
                    what, axis, name, given, n, step,
                    is_stop ? " (a stop of GPUMEM_SLICE_DEFAULT runs past the first element)" : "", axis, name);
}

gpumem_status gm_layout_slice(const char *what, int ndim, const int64_t *shape, const int64_t *strides,
                              const gm_slice *slices, int nslices, int *out_ndim, int64_t *out_shape,
                              int64_t *out_strides, int64_t *offset)
{
    what = WHAT(what);
    gpumem_status st = check_ndim(what, "ndim", ndim);
    if (st != GPUMEM_OK)
        return st;
    if (nslices < 0 || nslices > ndim)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: nslices %d is out of range for %d dimensions", what,
                        nslices, ndim);
    NEED(shape, ndim);
    NEED(strides, ndim);
    NEED(slices, nslices);
    NEED(out_ndim, 1);
    NEED(out_shape, ndim);
    NEED(out_strides, ndim);
    NEED(offset, 1);

    int64_t nshape[GM_MAX_NDIM], nstrides[GM_MAX_NDIM], start[GM_MAX_NDIM];
    bool dropped[GM_MAX_NDIM];
    for (int i = 0; i < ndim; i++) {
        nshape[i] = shape[i];
        nstrides[i] = strides[i];
        start[i] = 0;
        dropped[i] = false;
    }
    for (int i = 0; i < nslices; i++) {
        const gm_slice *s = &slices[i];
        int64_t n = shape[i];
        if (s->stop == GM_SLICE_INDEX) {
            /* NumPy's integer index: one position, the axis dropped. */
            if (s->step != 0 && s->step != 1 && s->step != GM_SLICE_DEFAULT)
                return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: axis %d: an index (stop GPUMEM_SLICE_INDEX) "
                                "takes step 1, 0 or GPUMEM_SLICE_DEFAULT, not %" PRId64 " (slices[%d].step)", what, i,
                                s->step, i);
            if (s->start == GM_SLICE_DEFAULT)
                return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: axis %d: an index (stop GPUMEM_SLICE_INDEX) "
                                "needs a position in start, not GPUMEM_SLICE_DEFAULT (slices[%d].start)", what, i, i);
            int64_t k = s->start < 0 ? s->start + n : s->start;
            if (k < 0 || k >= n)
                return gm_error(GPUMEM_ERROR_INDEX_OUT_OF_RANGE,
                                "%s: axis %d: index %" PRId64 " is out of range for extent %" PRId64
                                " (slices[%d].start)", what, i, s->start, n, i);
            dropped[i] = true;
            start[i] = k;
            continue;
        }
        /* A zero step reads as 1 (the C initializer {1, 7} leaves it 0). */
        int64_t step = s->step == GM_SLICE_DEFAULT || s->step == 0 ? 1 : s->step;
        /* Python's defaults; -1 stands for "before the first element". */
        int64_t b = step > 0 ? 0 : n - 1, e = step > 0 ? n : -1;
        if (s->start != GM_SLICE_DEFAULT) {
            b = s->start < 0 ? s->start + n : s->start;
            if (!bound_ok(b, n, step))
                return bound_error(what, i, false, s->start, n, step);
            if (step < 0 && n == 0)
                b = -1; /* as Python clamps it: no element to start from */
        }
        if (s->stop != GM_SLICE_DEFAULT) {
            e = s->stop < 0 ? s->stop + n : s->stop;
            if (!bound_ok(e, n, step))
                return bound_error(what, i, true, s->stop, n, step);
        }
        /* ceil((e - b) / step) clamped at 0; step != INT64_MIN here */
        int64_t len;
        if (step > 0)
            len = e > b ? (e - b - 1) / step + 1 : 0;
        else
            len = b > e ? (b - e - 1) / -step + 1 : 0;
        /* NumPy's stride * step; an axis of 0 or 1 elements never steps, so
         * where that overflows it keeps its stride (a huge step such as
         * INT64_MIN + 1 takes one element, as x[::-2**63] in NumPy). */
        if (__builtin_mul_overflow(strides[i], step, &nstrides[i]) && len <= 1)
            nstrides[i] = strides[i];
        else if (__builtin_mul_overflow(strides[i], step, &nstrides[i]))
            return gm_error(GPUMEM_ERROR_OVERFLOW, "%s: axis %d: stride %" PRId64 " times step %" PRId64
                            " overflows (slices[%d].step)", what, i, strides[i], step, i);
        nshape[i] = len;
        start[i] = b;
    }
    /* NumPy's offset is the sum of start * stride; a start that is not an
     * element (start == n, an empty axis) adds 0 instead, and an empty array
     * keeps offset 0, so even an empty result points inside the array. */
    int64_t off = 0, term;
    if (!is_empty(ndim, shape)) {
        for (int i = 0; i < nslices; i++) {
            if (start[i] < 0 || start[i] >= shape[i])
                continue;
            if (__builtin_mul_overflow(start[i], strides[i], &term) || __builtin_add_overflow(off, term, &off))
                return gm_error(GPUMEM_ERROR_OVERFLOW, "%s: axis %d: the offset of %s %" PRId64
                                " overflows (slices[%d].start)", what, i, dropped[i] ? "index" : "start", start[i], i);
        }
    }
    /* The axes an index dropped go; the others keep their order. */
    int nd = 0;
    for (int i = 0; i < ndim; i++) {
        if (dropped[i])
            continue;
        nshape[nd] = nshape[i];
        nstrides[nd] = nstrides[i];
        nd++;
    }
    copy64(out_shape, nshape, nd);
    copy64(out_strides, nstrides, nd);
    *out_ndim = nd;
    *offset = off;
    return GPUMEM_OK;
}

gpumem_status gm_layout_transpose(const char *what, int ndim, const int64_t *shape, const int64_t *strides,
                                  const int *axes, int64_t *out_shape, int64_t *out_strides)
{
    what = WHAT(what);
    gpumem_status st = check_ndim(what, "ndim", ndim);
    if (st != GPUMEM_OK)
        return st;
    NEED(shape, ndim);
    NEED(strides, ndim);
    NEED(out_shape, ndim);
    NEED(out_strides, ndim);
    int64_t nshape[GM_MAX_NDIM], nstrides[GM_MAX_NDIM];
    int taken_by[GM_MAX_NDIM];
    for (int i = 0; i < ndim; i++)
        taken_by[i] = -1;
    for (int i = 0; i < ndim; i++) {
        int a = axes != NULL ? axes[i] : ndim - 1 - i;
        if (a < -ndim || a >= ndim)
            return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: axes[%d] = %d is out of range for %d dimensions",
                            what, i, a, ndim);
        if (a < 0)
            a += ndim;
        if (taken_by[a] >= 0)
            return gm_error(GPUMEM_ERROR_INVALID_VALUE,
                            "%s: axes[%d] = %d repeats axis %d (axes[%d]): not a permutation", what, i, axes[i],
                            a, taken_by[a]);
        taken_by[a] = i;
        nshape[i] = shape[a];
        nstrides[i] = strides[a];
    }
    copy64(out_shape, nshape, ndim);
    copy64(out_strides, nstrides, ndim);
    return GPUMEM_OK;
}

/* NumPy's _attempt_nocopy_reshape (numpy/core/src/multiarray/shape.c), for
 * a non-empty array that is not contiguous in the reading order: drop the
 * old extent-1 axes, split both shapes into the shortest runs of axes with
 * equal products, require each run of old axes to be contiguous among
 * itself in the reading order, and give each run of new axes strides
 * contiguous among themselves starting from the old run's innermost
 * stride.  New extent-1 axes left at the end get the stride just past the
 * last run. */
static bool nocopy_reshape(int ndim, const int64_t *shape, const int64_t *strides, int newnd,
                           const int64_t *newdims, bool fortran, int64_t *newstrides)
{
    int64_t olddims[GM_MAX_NDIM], oldstrides[GM_MAX_NDIM];
    int oldnd = 0;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] != 1) {
            olddims[oldnd] = shape[i];
            oldstrides[oldnd] = strides[i];
            oldnd++;
        }
    }
    int oi = 0, oj = 1, ni = 0, nj = 1;
    while (ni < newnd && oi < oldnd) {
        int64_t np = newdims[ni], op = olddims[oi];
        while (np != op) {
            /* Equal sizes guarantee the runs close before either shape ends;
             * the bounds only guard against a caller's unequal sizes. */
            if (np < op) {
                if (nj >= newnd)
                    return false;
                np *= newdims[nj++];
            } else {
                if (oj >= oldnd)
                    return false;
                op *= olddims[oj++];
            }
        }
        /* Overflowing products (strides no allocation can have) mean no
         * view, never undefined behaviour. */
        int64_t p;
        for (int ok = oi; ok < oj - 1; ok++) {
            if (fortran ? __builtin_mul_overflow(olddims[ok], oldstrides[ok], &p) || oldstrides[ok + 1] != p
                        : __builtin_mul_overflow(olddims[ok + 1], oldstrides[ok + 1], &p) || oldstrides[ok] != p)
                return false;
        }
        if (fortran) {
            newstrides[ni] = oldstrides[oi];
            for (int nk = ni + 1; nk < nj; nk++)
                if (__builtin_mul_overflow(newstrides[nk - 1], newdims[nk - 1], &newstrides[nk]))
                    return false;
        } else {
            newstrides[nj - 1] = oldstrides[oj - 1];
            for (int nk = nj - 1; nk > ni; nk--)
                if (__builtin_mul_overflow(newstrides[nk], newdims[nk], &newstrides[nk - 1]))
                    return false;
        }
        ni = nj++;
        oi = oj++;
    }
    if (ni == 0)
        return false; /* only a size-1 array, which is contiguous and never comes here */
    int64_t last = newstrides[ni - 1];
    if (fortran && __builtin_mul_overflow(last, newdims[ni - 1], &last))
        return false;
    for (int nk = ni; nk < newnd; nk++)
        newstrides[nk] = last;
    return true;
}

/* NumPy's _fix_unknown_dimension, except that only -1 means "unknown". */
static gpumem_status resolve_shape(const char *what, int ndim, const int64_t *shape, int new_ndim,
                                   const int64_t *new_shape, int64_t *dims)
{
    int64_t size = 1;
    for (int i = 0; i < ndim; i++)
        if (__builtin_mul_overflow(size, shape[i], &size))
            return gm_error(GPUMEM_ERROR_OVERFLOW, "%s: the array's size overflows at axis %d", what, i);
    char text[SHAPE_TEXT_MAX];
    int unknown = -1;
    int64_t known = 1;
    bool overflow = false;
    for (int i = 0; i < new_ndim; i++) {
        dims[i] = new_shape[i];
        if (new_shape[i] == -1) {
            if (unknown >= 0)
                return gm_error(GPUMEM_ERROR_INVALID_RESHAPE,
                                "%s: shape[%d] and shape[%d] are both -1: only one extent can be inferred",
                                what, unknown, i);
            unknown = i;
        } else if (new_shape[i] < 0) {
            return gm_error(GPUMEM_ERROR_INVALID_RESHAPE,
                            "%s: shape[%d] = %" PRId64 " is negative (only one -1 is allowed)", what, i,
                            new_shape[i]);
        } else if (!overflow) {
            /* as NumPy, an overflowing product is a size mismatch, even
             * when a later extent is 0 */
            overflow = __builtin_mul_overflow(known, new_shape[i], &known);
        }
    }
    if (unknown >= 0 && !overflow && known == 0)
        return gm_error(GPUMEM_ERROR_INVALID_RESHAPE,
                        "%s: cannot infer shape[%d] = -1 in shape %s: the other extents multiply to 0", what,
                        unknown, shape_text(text, new_ndim, new_shape));
    if (unknown >= 0 && !overflow && size % known == 0) {
        dims[unknown] = size / known;
        known = size;
    }
    if (overflow || known != size)
        return gm_error(GPUMEM_ERROR_INVALID_RESHAPE, "%s: cannot reshape an array of size %" PRId64 " into shape %s",
                        what, size, shape_text(text, new_ndim, new_shape));
    return GPUMEM_OK;
}

gpumem_status gm_layout_reshape(const char *what, int ndim, const int64_t *shape, const int64_t *strides,
                                size_t itemsize, int new_ndim, const int64_t *new_shape, char order,
                                int64_t *out_shape, int64_t *out_strides, bool *is_view)
{
    what = WHAT(what);
    gpumem_status st = check_ndim(what, "ndim", ndim);
    if (st == GPUMEM_OK)
        st = check_ndim(what, "ndim", new_ndim); /* the public calls' name of it */
    if (st != GPUMEM_OK)
        return st;
    NEED(shape, ndim);
    NEED(strides, ndim);
    NEED(new_shape, new_ndim);
    NEED(out_shape, new_ndim);
    NEED(out_strides, new_ndim);
    NEED(is_view, 1);
    if (!valid_order(order))
        return order_error(what, order);

    int64_t dims[GM_MAX_NDIM], nstrides[GM_MAX_NDIM];
    bool view = true;
    if (new_ndim == ndim && (ndim == 0 || memcmp(new_shape, shape, (size_t)ndim * sizeof *shape) == 0)) {
        /* NumPy returns a plain view for an unchanged shape, keeping every
         * stride (even those of extent-1 axes), whatever the order. */
        copy64(dims, shape, ndim);
        copy64(nstrides, strides, ndim);
    } else {
        st = resolve_shape(what, ndim, shape, new_ndim, new_shape, dims);
        if (st == GPUMEM_OK)
            st = gm_layout_check_shape(what, new_ndim, dims, itemsize, NULL, NULL);
        if (st != GPUMEM_OK)
            return st;
        bool c = gm_layout_is_c_contiguous(ndim, shape, strides, itemsize);
        bool f = gm_layout_is_f_contiguous(ndim, shape, strides, itemsize);
        bool fortran = order == 'F' || (order == 'A' && f && !c);
        /* Contiguous in the order (every empty or size-1 array is): the
         * contiguous strides of the new shape, as NumPy.  Otherwise a view
         * only if the axes regroup. */
        if (fortran ? f : c)
            fill_strides(new_ndim, dims, (int64_t)itemsize, fortran, nstrides);
        else if (!nocopy_reshape(ndim, shape, strides, new_ndim, dims, fortran, nstrides)) {
            view = false;
            fill_strides(new_ndim, dims, (int64_t)itemsize, fortran, nstrides);
        }
    }
    copy64(out_shape, dims, new_ndim);
    copy64(out_strides, nstrides, new_ndim);
    *is_view = view;
    return GPUMEM_OK;
}

gpumem_status gm_layout_view(const char *what, int ndim, const int64_t *shape, const int64_t *strides,
                             size_t old_itemsize, size_t new_itemsize, int64_t *out_shape, int64_t *out_strides)
{
    what = WHAT(what);
    gpumem_status st = check_ndim(what, "ndim", ndim);
    if (st != GPUMEM_OK)
        return st;
    NEED(shape, ndim);
    NEED(strides, ndim);
    NEED(out_shape, ndim);
    NEED(out_strides, ndim);
    int64_t nshape[GM_MAX_NDIM], nstrides[GM_MAX_NDIM];
    copy64(nshape, shape, ndim);
    copy64(nstrides, strides, ndim);
    if (new_itemsize != old_itemsize) {
        /* NumPy's array_descr_set (numpy/core/src/multiarray/getset.c) */
        if (ndim == 0)
            return gm_error(GPUMEM_ERROR_INVALID_VALUE,
                            "%s: a 0-d array cannot change its item size (%zu to %zu bytes)", what, old_itemsize,
                            new_itemsize);
        if (old_itemsize > (size_t)INT64_MAX || new_itemsize > (size_t)INT64_MAX)
            return gm_error(GPUMEM_ERROR_OVERFLOW, "%s: item size exceeds INT64_MAX", what);
        int axis = ndim - 1;
        int64_t n = shape[axis], olds = (int64_t)old_itemsize, news = (int64_t)new_itemsize;
        if (n != 1 && !is_empty(ndim, shape) && strides[axis] != olds)
            return gm_error(GPUMEM_ERROR_INVALID_VALUE,
                            "%s: axis %d: the last axis must be contiguous (its stride %" PRId64
                            " is not the item size %zu) to change the item size to %zu",
                            what, axis, strides[axis], old_itemsize, new_itemsize);
        if (news < olds) {
            if (news == 0 || olds % news != 0)
                return gm_error(GPUMEM_ERROR_INVALID_VALUE,
                                "%s: the smaller item size %zu must divide the item size %zu", what, new_itemsize,
                                old_itemsize);
            if (__builtin_mul_overflow(n, olds / news, &nshape[axis]))
                return gm_error(GPUMEM_ERROR_OVERFLOW, "%s: axis %d: extent %" PRId64 " overflows", what, axis, n);
        } else {
            int64_t bytes;
            if (__builtin_mul_overflow(n, olds, &bytes))
                return gm_error(GPUMEM_ERROR_OVERFLOW, "%s: axis %d: extent %" PRId64 " overflows", what, axis, n);
            if (bytes % news != 0)
                return gm_error(GPUMEM_ERROR_INVALID_VALUE,
                                "%s: axis %d: its %" PRId64 " bytes are not a multiple of the larger item size %zu",
                                what, axis, bytes, new_itemsize);
            nshape[axis] = bytes / news;
        }
        nstrides[axis] = news;
    }
    copy64(out_shape, nshape, ndim);
    copy64(out_strides, nstrides, ndim);
    return GPUMEM_OK;
}

gpumem_status gm_layout_index(const char *what, int ndim, const int64_t *shape, const int64_t *strides,
                              const int64_t *index, int64_t *offset)
{
    what = WHAT(what);
    gpumem_status st = check_ndim(what, "ndim", ndim);
    if (st != GPUMEM_OK)
        return st;
    NEED(shape, ndim);
    NEED(strides, ndim);
    NEED(index, ndim);
    NEED(offset, 1);
    int64_t off = 0, term;
    for (int i = 0; i < ndim; i++) {
        int64_t n = shape[i], j = index[i] < 0 ? index[i] + n : index[i];
        if (j < 0 || j >= n)
            return gm_error(GPUMEM_ERROR_INDEX_OUT_OF_RANGE,
                            "%s: axis %d: index %" PRId64 " is out of range for extent %" PRId64 " (index[%d])", what,
                            i, index[i], n, i);
        if (__builtin_mul_overflow(j, strides[i], &term) || __builtin_add_overflow(off, term, &off))
            return gm_error(GPUMEM_ERROR_OVERFLOW, "%s: axis %d: the offset of index %" PRId64 " overflows (index[%d])",
                            what, i, index[i], i);
    }
    *offset = off;
    return GPUMEM_OK;
}

gpumem_status gm_layout_check_memory(const char *what, const char *data_name, int ndim, const int64_t *shape,
                                     const int64_t *strides, size_t itemsize, uint64_t data)
{
    int64_t size, nbytes;
    gpumem_status st = gm_layout_check_shape(what, ndim, shape, itemsize, &size, &nbytes);
    if (st != GPUMEM_OK || size == 0)
        return st; /* an empty array touches no memory: any address and strides do */
    if (data == 0)
        return gm_error(GPUMEM_ERROR_NULL_ARGUMENT, "%s: %s is NULL for a non-empty array of %" PRId64 " elements",
                        what, data_name, size);
    int64_t lo = 0, hi = nbytes;
    if (strides != NULL && !gm_layout_extent(ndim, shape, strides, itemsize, &lo, &hi))
        return gm_error(GPUMEM_ERROR_OVERFLOW, "%s: the strides reach beyond the address space", what);
    /* lo <= 0 < hi: the elements lie in [data + lo, data + hi). */
    uint64_t below = (uint64_t)0 - (uint64_t)lo, above = (uint64_t)hi;
    if (below > data || above > UINT64_MAX - data)
        return gm_error(GPUMEM_ERROR_OVERFLOW,
                        "%s: the elements reach from %" PRId64 " to %" PRId64 " bytes around %s 0x%" PRIx64
                        ", beyond the address space",
                        what, lo, hi, data_name, data);
    return GPUMEM_OK;
}
