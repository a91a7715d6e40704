/*
 * layout.h - the pure layout arithmetic of arrays: shapes, byte strides,
 * contiguity, slices, transposes, reshapes, views and element offsets.
 *
 * No driver calls and no allocation: every function works on plain numbers,
 * so it is tested and fuzzed on its own.  Strides are in bytes and may be
 * negative or zero (NumPy's rules).  Offsets are byte offsets relative to the
 * array's data pointer (the address of element [0, 0, ...]).
 *
 * Every function that returns a gpumem_status returns GPUMEM_OK or an error
 * status with gm_error() set: the message names `what` (the public function,
 * e.g. "gpumem_array_slice"), the argument, the axis and the bound.  A NULL
 * pointer to a non-empty array is GPUMEM_ERROR_NULL_ARGUMENT, ndim < 0
 * GPUMEM_ERROR_INVALID_VALUE and ndim > GM_MAX_NDIM
 * GPUMEM_ERROR_TOO_MANY_DIMENSIONS; a size, stride or offset that int64_t
 * cannot hold is GPUMEM_ERROR_OVERFLOW (a checked shape with strides inside
 * its allocation never causes one).  Outputs are written only on success,
 * last, so output arrays may alias the inputs (out_strides == strides).
 */
#ifndef GM_LAYOUT_H
#define GM_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpumem/status.h"

#define GM_MAX_NDIM 32 /* GPUMEM_MAX_NDIM */

/* A slice of one axis.  GM_SLICE_DEFAULT (INT64_MIN) means "omitted", as None
 * in Python: for start or stop the axis' beginning or end by the step's sign,
 * for step 1.  Negative values count from the end (-1 is the last element).
 * Unlike Python, explicit bounds outside the axis are errors, not clamped:
 * after adding n to a negative value, start and stop must lie in [0, n] for
 * step > 0; for step < 0 they must lie in [0, n-1], or be 0 when n == 0 - an
 * explicit stop cannot reach "before the first element" with a negative
 * step: use GM_SLICE_DEFAULT.  step 0 reads as 1 (C's {1, 7} leaves it 0).
 * stop GM_SLICE_INDEX (INT64_MIN + 1) makes it NumPy's integer index: start
 * is the position (negative from the end; 0 <= position < n after adding n,
 * else GPUMEM_ERROR_INDEX_OUT_OF_RANGE), step must be 1, 0 or
 * GM_SLICE_DEFAULT, and the axis is dropped.  The layout matches
 * gpumem_slice's (gpumem/array.h). */
#define GM_SLICE_DEFAULT INT64_MIN
#define GM_SLICE_INDEX (INT64_MIN + 1)
typedef struct gm_slice {
    int64_t start, stop, step;
} gm_slice;

/* Validates a shape: 0 <= ndim <= GM_MAX_NDIM (else
 * GPUMEM_ERROR_TOO_MANY_DIMENSIONS, or GPUMEM_ERROR_INVALID_VALUE if
 * negative), no negative extent (GPUMEM_ERROR_NEGATIVE_DIMENSION), and
 * size * itemsize fits in int64_t (else GPUMEM_ERROR_OVERFLOW) - as in NumPy,
 * the product of the non-zero extents times itemsize must fit even when
 * another extent is 0, since strides are computed from them.  Gives the
 * element count (1 for ndim 0, 0 if an extent is 0) and byte count (either
 * may be NULL).  `what` names the function for messages. */
gpumem_status gm_layout_check_shape(const char *what, int ndim, const int64_t *shape, size_t itemsize,
                                    int64_t *size, int64_t *nbytes);

/* Contiguous strides for shape in order 'C' (last axis fastest) or 'F'
 * (first axis fastest); 'A' counts as 'C'.  As NumPy, an extent of 0 counts
 * as 1 (np.empty((2, 0, 3), 'i4').strides == (12, 12, 4)).  Other characters
 * (lower case included) are GPUMEM_ERROR_INVALID_ORDER.  Assumes a checked
 * shape. */
gpumem_status gm_layout_contiguous_strides(const char *what, int ndim, const int64_t *shape,
                                           size_t itemsize, char order, int64_t *strides);

/* Contiguous strides with the same axis order as `like_strides` (numba's
 * device_array_like keeps the source's stride order; NumPy's empty_like with
 * order 'K' likewise):
 *  - if shape/like_strides is C-contiguous (gm_layout_is_c_contiguous: every
 *    empty array, every array of ndim <= 1) the C strides, else if it is
 *    F-contiguous the F strides, as gm_layout_contiguous_strides gives;
 *  - otherwise the axes of extent != 1 are sorted by decreasing
 *    |like_strides| (a stable sort: ties keep axis order) and fill, in that
 *    order, the places of the outermost-to-innermost order that the extent-1
 *    axes leave free (an extent-1 axis keeps its own place, as in C order,
 *    since its stride says nothing); the innermost gets itemsize and each
 *    outer one the stride times the extent of the next inner one.
 * Assumes a checked shape. */
void gm_layout_strides_like(int ndim, const int64_t *shape, const int64_t *like_strides, size_t itemsize,
                            int64_t *strides);

/* NumPy's contiguity flags: axes of extent 1 are ignored, and an empty array
 * (some extent 0) and a 0-d array are both. */
bool gm_layout_is_c_contiguous(int ndim, const int64_t *shape, const int64_t *strides, size_t itemsize);
bool gm_layout_is_f_contiguous(int ndim, const int64_t *shape, const int64_t *strides, size_t itemsize);

/* The bytes an array touches, relative to its data pointer: [*lo, *hi).
 * Both 0 for an empty array.  Assumes a checked shape; strides are
 * arbitrary (the caller checks bounds with it).  Returns false if the
 * extent overflows int64_t. */
bool gm_layout_extent(int ndim, const int64_t *shape, const int64_t *strides, size_t itemsize, int64_t *lo,
                      int64_t *hi);

/* Slices the first nslices axes (0 <= nslices <= ndim; the rest are kept
 * whole), as NumPy's a[s0, s1, ...].  Gives the new number of axes
 * (*out_ndim: ndim less one per index), shape and strides, and the byte
 * offset of the new first element.  Each sliced axis gets extent
 * ceil((stop - start) / step) clamped at 0 (an empty axis stays empty: as in
 * Python, start 0 there means -1 for step < 0) and stride stride * step; an
 * indexed axis (stop GM_SLICE_INDEX) is dropped, its position times its
 * stride added to the offset.  The offset is NumPy's sum of start * stride,
 * except that an axis whose start is no element (start == n, or n == 0)
 * adds 0, and an empty array's offset is 0: an empty result still points
 * inside the array's extent.  Errors: GPUMEM_ERROR_INDEX_OUT_OF_RANGE
 * (naming the axis and bound or index), GPUMEM_ERROR_INVALID_VALUE (nslices
 * out of range; an index with a step other than 1, or no position). */
gpumem_status gm_layout_slice(const char *what, int ndim, const int64_t *shape, const int64_t *strides,
                              const gm_slice *slices, int nslices, int *out_ndim, int64_t *out_shape,
                              int64_t *out_strides, int64_t *offset);

/* Permutes axes: out axis i is input axis axes[i]; as in NumPy, a negative
 * entry counts from the end (-1 is the last axis).  axes NULL reverses them
 * (NumPy's .T).  A non-permutation is GPUMEM_ERROR_INVALID_VALUE. */
gpumem_status gm_layout_transpose(const char *what, int ndim, const int64_t *shape, const int64_t *strides,
                                  const int *axes, int64_t *out_shape, int64_t *out_strides);

/* Reshapes to new_shape (at most one -1, resolved from the size) reading
 * elements in `order` ('C', 'F', or 'A': 'F' if the array is F-contiguous and
 * not C-contiguous, else 'C').  If a view with the same elements exists,
 * *is_view is true and out_strides are its strides (NumPy's no-copy reshape
 * rules: it must work for every array NumPy reshapes without a copy,
 * including non-contiguous ones where the reshaped axes are contiguous among
 * themselves); else *is_view is false and out_strides are contiguous strides
 * in `order` for a copy.  As NumPy (PyArray_Newshape): an unchanged shape is
 * a view keeping every stride; an array contiguous in `order` (every empty
 * or size-1 array is) is a view with the new shape's contiguous strides in
 * `order`; any other is a view only if _attempt_nocopy_reshape's regrouping
 * succeeds, with its strides.  Errors: GPUMEM_ERROR_INVALID_RESHAPE (size
 * differs, two -1, another negative extent, -1 with a zero-size remainder),
 * GPUMEM_ERROR_INVALID_ORDER, GPUMEM_ERROR_TOO_MANY_DIMENSIONS (new_ndim),
 * GPUMEM_ERROR_OVERFLOW (the new shape fails gm_layout_check_shape's rule). */
gpumem_status gm_layout_reshape(const char *what, int ndim, const int64_t *shape, const int64_t *strides,
                                size_t itemsize, int new_ndim, const int64_t *new_shape, char order,
                                int64_t *out_shape, int64_t *out_strides, bool *is_view);

/* NumPy's view(dtype) with another item size (array_descr_set, NumPy >=
 * 1.23): the same itemsize keeps the layout; a 0-d array cannot change it;
 * otherwise the last axis must be contiguous - stride == old_itemsize, unless
 * its extent is 1 or the array is empty - and it alone changes: a smaller
 * new_itemsize must divide old_itemsize (extent * old/new), a larger one must
 * divide the axis' byte length (extent * old_itemsize / new_itemsize); its
 * stride becomes new_itemsize.  Gives the new shape and strides.  Errors:
 * GPUMEM_ERROR_INVALID_VALUE with the reason (a new item size of 0 included). */
gpumem_status gm_layout_view(const char *what, int ndim, const int64_t *shape, const int64_t *strides,
                             size_t old_itemsize, size_t new_itemsize, int64_t *out_shape,
                             int64_t *out_strides);

/* The byte offset of element `index` (ndim indices; negative ones count from
 * the end).  Out of range is GPUMEM_ERROR_INDEX_OUT_OF_RANGE naming the axis. */
gpumem_status gm_layout_index(const char *what, int ndim, const int64_t *shape, const int64_t *strides,
                              const int64_t *index, int64_t *offset);

/* Checks memory another party describes (a caller's buffer, a CAI or
 * DLPack import): the shape (gm_layout_check_shape), strides (NULL: C
 * order) whose extent fits in int64_t, a data address that is not 0 for a
 * non-empty array (`data_name` names it in the message), and
 * [data + lo, data + hi) inside the 64-bit address space. */
gpumem_status gm_layout_check_memory(const char *what, const char *data_name, int ndim, const int64_t *shape,
                                     const int64_t *strides, size_t itemsize, uint64_t data);

#endif /* GM_LAYOUT_H */
