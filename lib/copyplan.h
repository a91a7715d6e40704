/*
 * copyplan.h - the copy planner: turns a copy between two equally shaped
 * arrays with arbitrary byte strides into the fewest rectangular copies
 * (1-D, 2-D, 3-D), looped over where more levels remain.
 *
 * Pure arithmetic, no driver calls: the copy engine (copy_engine.c) executes
 * a plan with the driver (cuMemcpy, cuMemcpy2D, cuMemcpy3D) or on the CPU
 * (gm_copy_plan_run_host, which copy.c's fill and copy_queued.c's landings
 * use too).  Only the bytes of the elements are ever written: the gaps of a
 * strided destination stay untouched (numba#3553).
 *
 * Planning, in order:
 *  1. drop axes of extent 1 (whatever their strides); an empty array (some
 *     extent 0) or an item size of 0 plans no copies (dims 0, count 0);
 *  2. flip every axis whose destination stride is negative, on both sides
 *     (the first element moves to the axis' last index), so destination
 *     strides are >= 0;
 *  3. sort axes by decreasing destination stride, both sides permuted alike;
 *     the sort is stable (equal strides keep the callers' axis order), so a
 *     plan is a function of its arguments.  A destination stride of 0 on an
 *     axis of extent > 1 - writing one element many times - is
 *     GPUMEM_ERROR_INVALID_VALUE (only checked for a non-empty array);
 *  4. merge adjacent axes that are contiguous with each other on BOTH sides
 *     (outer stride == inner stride * inner extent, any sign, 0 included);
 *  5. the innermost axis becomes the row when its stride equals the item size
 *     on both sides: width = extent * itemsize; otherwise width = itemsize
 *     and that axis is a strided level like any other;
 *  6. of the remaining axes, one becomes the 2-D level (height = its extent,
 *     pitches = its strides) and one further out the 3-D level (depth), when
 *     expressible.  A 2-D level needs, on each side, a stride >= width (CUDA
 *     wants pitch >= WidthInBytes: a broadcast, stride 0, or a reversed
 *     source, stride < 0, cannot be one) and <= max_pitch.  A 3-D level
 *     needs, on each side, a stride that is k times the 2-D pitch with
 *     k >= height (CUDA's slice stride is pitch * srcHeight/dstHeight, the
 *     rows of the allocation, and needs at least the rows copied).  Of the
 *     expressible choices the planner takes the one with the largest
 *     height * depth - the fewest copies; ties go to the innermost 2-D level,
 *     then the innermost 3-D level.  So the levels need not be the axes
 *     next to the row: a broadcast or reversed axis in between becomes a
 *     loop while an outer axis still becomes a level;
 *  7. every other axis becomes an outer loop (outermost first in destination
 *     order): each index of the loops issues the rectangular copy once.
 * A copy whose two sides overlap in memory is the caller's business (the
 * copy engine, copy_engine.c, stages it through a temporary), as is a destination whose elements share
 * bytes through non-zero strides (the order of the writes is unspecified).
 *
 * The plans users can rely on (float32 = 4 bytes; "C (4,6)" is a C-ordered
 * 4x6 array, strides in bytes, shown as src -> dst):
 *  - one 1-D copy, width = size * itemsize, when both sides are contiguous in
 *    the same element order: C -> C, F -> F, both reversed alike (a[::-1]
 *    -> b[::-1] of 5 floats: offsets -16 and -16, the lowest addresses,
 *    width 20), extent-1 axes with any strides, and a 0-d array (dims 1,
 *    width = itemsize);
 *  - one 2-D copy for two strided levels, where rows merge first:
 *    a[:, ::2] of C (4,6) -> C (4,3): strides (24,8) -> (12,4) merge into
 *    12 elements of stride 8 -> 4: width 4, height 12, pitches 8 and 4;
 *    a column a[:, 1] of C (4,6) -> 4 floats: width 4, height 4, pitches 24
 *    and 4; a[:, :4] of C (4,6) -> C (4,4): width 16, height 4, pitches 24
 *    and 16;
 *  - one 3-D copy for three levels when the slice strides are multiples:
 *    a[:, :2, :3] of C (4,5,6) -> C (4,2,3): width 12, height 2, depth 4,
 *    pitches 24 and 12, heights 5 and 2; a[:, ::2, ::2] of C (4,6,8) ->
 *    C (4,3,4): the two outer levels merge, width 4, height 4, depth 12,
 *    pitches 8 and 4, heights 8 and 4;
 *  - a C <-> F transposing copy of an R x C array cannot be one 3-D copy (the
 *    slice stride on one side is smaller than the pitch): it is a loop of
 *    min(R, C) 2-D copies of width itemsize and height max(R, C); C (3,5) ->
 *    F (3,5): height 5, pitches 4 and 12, a loop of 3 (strides 20 and 4);
 *    a square one, C (4,4) -> F (4,4), takes the inner level (the tie):
 *    height 4, pitches 16 and 4, a loop of 4 (strides 4 and 16);
 *  - a broadcast source axis (stride 0) is a loop: a row of 3 floats into
 *    C (4,3) is 4 1-D copies of width 12 (loop strides 0 and 12); a column
 *    (src strides (4,0)) is 3 2-D copies of height 4 (pitches 4 and 12); a
 *    scalar into C (4,3) is 12 copies of width 4;
 *  - a source reversed where the destination is not is a loop: a[::-1] of 5
 *    floats -> 5 floats is 5 copies of width 4 (loop strides -4 and 4);
 *    a[::-1, :] of C (4,6) -> C (4,6) is 4 rows of width 24 (loop strides
 *    -24 and 24); 5 floats -> b[::-1] is flipped into the same loop of 5
 *    that starts at index 4 on both sides (offsets 16 and -16);
 *  - more levels than three, or a pitch above max_pitch, are loops: every
 *    axis of a[::2, ::2, ::2, ::2] of C (4,6,8,10) int16 -> C (2,3,4,5) is
 *    strided; the planner takes a 3-D copy of height 5 and depth 4 and
 *    loops 2 x 3 times; a column a[:, 1] of C (4,6) with max_pitch 16 is 4
 *    1-D copies of width 4.
 */
#ifndef GM_COPYPLAN_H
#define GM_COPYPLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpumem/status.h"
#include "kernels/pack.h"
#include "layout.h"

/* The fields map onto CUDA_MEMCPY3D directly (and, for dims <= 2, onto
 * CUDA_MEMCPY2D, or cuMemcpy with `width` bytes for dims == 1): the offsets
 * (plan's, plus the loops') are added to the base addresses.  The unused
 * fields of a lower kind hold the values that make the 3-D reading of the
 * plan the same copy: height and depth 1, pitches = width (dims == 1),
 * src_height = dst_height = height (dims <= 2).  dims == 0 zeroes them all. */
typedef struct gm_copy_plan {
    int dims;           /* 0: nothing to copy; 1, 2 or 3: the rectangular copy's kind */
    int64_t src_offset; /* bytes from the source's data pointer to the first element copied */
    int64_t dst_offset; /* likewise for the destination */
    size_t width;       /* bytes per row */
    size_t height;      /* rows (1 when dims == 1) */
    size_t depth;       /* slices (1 when dims < 3) */
    size_t src_pitch, dst_pitch;   /* bytes between rows (dims >= 2) */
    size_t src_height, dst_height; /* rows between slices: slice stride = pitch * height (dims == 3) */
    int nloops;                    /* outer loop axes, outermost first */
    int64_t loop_extent[GM_MAX_NDIM];
    int64_t loop_src_stride[GM_MAX_NDIM]; /* bytes; may be negative or zero */
    int64_t loop_dst_stride[GM_MAX_NDIM];
} gm_copy_plan;

/* Plans a copy of ndim-dimensional arrays of `shape` with the given byte
 * strides and item size.  max_pitch bounds the 2-D/3-D pitches (the device's
 * CU_DEVICE_ATTRIBUTE_MAX_PITCH; SIZE_MAX for none).  shape and the strides
 * may be NULL when ndim == 0.  *plan is written only on success.  Errors:
 * GPUMEM_ERROR_INVALID_VALUE for a destination with a zero stride on an axis
 * of extent > 1 (a broadcast cannot be written) or ndim < 0,
 * GPUMEM_ERROR_TOO_MANY_DIMENSIONS (ndim > GM_MAX_NDIM),
 * GPUMEM_ERROR_NEGATIVE_DIMENSION, GPUMEM_ERROR_OVERFLOW when the bytes
 * either side spans do not fit in int64_t (so no offset a plan produces can
 * overflow), GPUMEM_ERROR_NULL_ARGUMENT.  The messages name the axis or
 * value but no function: callers prefix them (gm_error_prefix). */
gpumem_status gm_copy_plan_make(int ndim, const int64_t *shape, const int64_t *src_strides,
                                const int64_t *dst_strides, size_t itemsize, size_t max_pitch,
                                gm_copy_plan *plan);

/* The number of rectangular copies the plan issues (the product of the loop
 * extents, or 0 when dims == 0). */
uint64_t gm_copy_plan_count(const gm_copy_plan *plan);

/* Calls fn once per rectangular copy, in order (an odometer over the loops,
 * the last loop fastest), with the byte offsets of its first element on each
 * side.  Stops at and returns fn's first non-OK status. */
typedef gpumem_status (*gm_copy_visit_fn)(void *arg, const gm_copy_plan *plan, int64_t src_offset,
                                          int64_t dst_offset);
gpumem_status gm_copy_plan_visit(const gm_copy_plan *plan, gm_copy_visit_fn fn, void *arg);

/* Executes a plan on the CPU between two host pointers (the arrays' data
 * pointers): per copy, depth slices at pitch * height, height rows at pitch,
 * one memcpy of width bytes per row - the reference for how copy_engine.c
 * (run_one) fills CUDA_MEMCPY2D/3D. */
void gm_copy_plan_run_host(const gm_copy_plan *plan, const void *src, void *dst);

/* ---- packing ------------------------------------------------------------------------------ */

/* A pack (gather of a strided side into a packed buffer) or unpack (the
 * scatter back), collapsed for the kernels of kernels/pack.h and their C
 * twin.  params.strided and params.packed hold the offsets to add to the two
 * sides' element-0 addresses (they may be negative, as two's complement):
 * the caller adds the base addresses. */
typedef struct gm_pack_plan {
    gm_pack_params params;
    uint64_t bytes; /* the packed bytes: element count x item size */
    bool wide;      /* needs the 64-bit kernels */
    bool tiled;     /* a transpose: the tiled kernels */
    int kernel;     /* gm_pack_kernel_index(unit, wide, unpack), or its tiled index */
} gm_pack_plan;

/* A transpose takes the tiled kernels when its rows and columns both have
 * at least this many elements. */
#define GM_PACK_TILED_MIN 16

/* Plans moving ndim-dimensional elements of `itemsize` bytes between a side
 * with byte strides `strided` at address strided_addr and a packed side
 * with strides `packed` at packed_addr; the packed side must be contiguous
 * in some axis order, any axes reversed (its bytes are one run of
 * size x itemsize).  The addresses only choose the widest unit (1, 2, 4, 8
 * or 16 bytes) that every element's address is aligned to.  Planning: drop
 * extent-1 axes; flip the axes the packed side runs backwards; sort by the
 * packed strides; split an item that is no unit into units (a record of 12
 * bytes is 3 units of 4); merge axes that are one run on the strided side
 * too; widen the unit over an inner run (a row of 8 contiguous float32 is 2
 * units of 16); the innermost axis becomes the columns, the rest the rows;
 * when the strided side runs contiguously along the innermost of the rows'
 * axes (stride +-unit) but not along the columns - a transpose - and both
 * have at least GM_PACK_TILED_MIN elements, the tiled kernels move it
 * (tiled: C (64,48) float32 packed as F is 64 columns of stride 192 by 48
 * rows of stride 4).
 * An empty copy (an extent 0, itemsize 0) gives bytes 0.  Errors:
 * GPUMEM_ERROR_INVALID_VALUE when `packed` is not contiguous, or when
 * unpack and a strided axis of extent > 1 has stride 0;
 * GPUMEM_ERROR_TOO_MANY_DIMENSIONS; GPUMEM_ERROR_OVERFLOW. */
gpumem_status gm_pack_plan_make(int ndim, const int64_t *shape, const int64_t *strided, const int64_t *packed,
                                size_t itemsize, uint64_t strided_addr, uint64_t packed_addr, bool unpack,
                                gm_pack_plan *plan);

#endif /* GM_COPYPLAN_H */
