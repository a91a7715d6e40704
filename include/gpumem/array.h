/**
 * @file gpumem/array.h
 * @brief Arrays: numba's DeviceNDArray and DeviceRecord, host arrays, views,
 *        and copies in every direction with any strides.
 *
 * A ::gpumem_array is an N-dimensional view of memory: a data pointer, a
 * shape, strides in bytes (negative and zero allowed, as in NumPy) and a
 * dtype.  Arrays are reference-counted (gpumem_array_retain(),
 * gpumem_array_release()); a view keeps its base alive, and an array holds a
 * reference to its context and dtype.
 *
 * @par Kinds
 * - device: memory on the GPU (gpumem_device_array, gpumem_to_device);
 * - host: a caller's host buffer described as an array (gpumem_host_array_wrap),
 *   or host memory the library allocated (gpumem_host_array);
 * - pinned, mapped, managed: host memory the driver knows (gpumem/host.h);
 * - foreign: device memory of another library (gpumem/interop.h).
 *
 * @par Argument order
 * gpumem_array_copy(dst, src) is `dst[:] = src`, memcpy's order.  numba's
 * methods keep numba's, the receiver first: gpumem_copy_to_host(src, dst)
 * is `src.copy_to_host(dst)`, gpumem_copy_to_device(dst, src) is
 * `dst.copy_to_device(src)`.  Each function's first line says its order;
 * copy_to_host and copy_to_device refuse a destination of the wrong side,
 * and say "arguments swapped?" when the source is of the destination's.
 * gpumem.hpp's members are named by direction (copy_from, copy_to,
 * copy_to_host, copy_from_host).
 *
 * @par Streams
 * Functions that move data take a ::gpumem_stream.  NULL means synchronous:
 * the call returns when the data has arrived.  With a stream the work is
 * queued on it and the call returns at once; gpumem_stream_synchronize()
 * waits for it.
 *
 * @par Failure
 * A failing call changes nothing: no partial copy into a destination that
 * the call validated, no leaked handle, and the thread's gpumem_last_error()
 * names the argument and the limit.  For copies this holds exactly as
 * follows.  A copy writes its destination once, with its last step (one
 * driver transfer, one 2-D or 3-D copy, one unpack kernel, or the CPU's
 * unpacking after the data arrived in host staging memory); everything
 * before that step writes only temporary memory.  So a failure before the
 * last step (argument checks, allocating temporaries, packing, transfers
 * into temporaries) leaves the destination unchanged.  A failure of the last
 * step itself, or of waiting for it ("the write into the destination was
 * issued" in the message), can leave it partly written, as any failing
 * driver copy can (a staged download's last step is its chunked transfer,
 * so its failure can leave the destination partly written too); so can a
 * copy of the one kind that needs several driver
 * copies (::GPUMEM_COPY_PATH_DMA_LOOP: only when the driver cannot load the
 * library's pack kernels or the device has no room for their scratch).  A
 * strided copy through device scratch larger than one scratch buffer
 * (`GPUMEM_COPY_SCRATCH_CHUNK`, 4 MiB; a staged copy's are larger,
 * gpumem/staging.h, and so are those between devices, gpumem/peer.h) writes its destination chunk by chunk, so a failure of
 * a later chunk can leave it partly written too.  A
 * failure to free a copy's temporaries after it completed ("the copy
 * completed" in the message) leaves the destination holding the copy.  A
 * copy between two devices says the same of every failure after its first
 * write into the destination (gpumem/peer.h): "the write into the
 * destination was issued", or "the copy completed" once the destination's
 * device was seen done with it.
 */
#ifndef GPUMEM_ARRAY_H
#define GPUMEM_ARRAY_H

#include <stddef.h>
#include <stdint.h>
#include <gpumem/export.h>
#include <gpumem/status.h>
#include <gpumem/context.h>
#include <gpumem/dtype.h>
#include <gpumem/stream.h>

GPUMEM_BEGIN_DECLS

/** The most dimensions an array may have. */
#define GPUMEM_MAX_NDIM 32

/** An N-dimensional array (reference-counted). */
typedef struct gpumem_array gpumem_array;

/** What memory an array lives in.  Values are ABI. */
typedef enum gpumem_memory_kind {
    GPUMEM_MEMORY_DEVICE = 0,  /**< device memory */
    GPUMEM_MEMORY_HOST = 1,    /**< pageable host memory */
    GPUMEM_MEMORY_PINNED = 2,  /**< page-locked host memory */
    GPUMEM_MEMORY_MAPPED = 3,  /**< page-locked host memory mapped into the device (both pointers) */
    GPUMEM_MEMORY_MANAGED = 4, /**< managed (unified) memory */
    GPUMEM_MEMORY_FOREIGN = 5  /**< device memory owned by another library */
} gpumem_memory_kind;

/**
 * A slice of one axis for gpumem_array_slice(), as Python's
 * start:stop:step, or an integer index.  The fields, in initializer order:
 * {0, 6, 2} is `0:6:2`, {1, 7} is `1:7` (an omitted step is 0, which reads
 * as 1; -Wextra warns of the missing initializer there, which
 * {.start = 1, .stop = 7} avoids), {::GPUMEM_SLICE_DEFAULT,
 * ::GPUMEM_SLICE_DEFAULT, -1} is `::-1`,
 * ::GPUMEM_SLICE_ALL is `:`, and GPUMEM_INDEX(i) is the index `i`, which
 * selects one position and drops the axis.  So NumPy's `d[1, 1:-1]` is
 * `{GPUMEM_INDEX(1), {1, -1}}`: a 1-D view of row 1 without its ends.
 *
 * ::GPUMEM_SLICE_DEFAULT in a field means omitted, as Python's None: start
 * is then the axis' first element (step > 0) or its last (step < 0), stop
 * runs past its last element (step > 0) or past its first (step < 0), and
 * step is 1.
 *
 * A negative start or stop counts from the end: the axis' extent n is added
 * to it once.  The bound must then lie on the axis, or the call fails with
 * ::GPUMEM_ERROR_INDEX_OUT_OF_RANGE, naming the axis and the bound:
 *  - step > 0: 0 <= start <= n and 0 <= stop <= n (n is one past the last
 *    element, so `n:` is empty and `:n` the whole axis);
 *  - step < 0: 0 <= start < n and 0 <= stop < n, except that an empty axis
 *    allows 0; so -1 is the last element, and only a stop of
 *    ::GPUMEM_SLICE_DEFAULT runs past the first one.
 * Unlike Python and NumPy, which clamp such bounds (`x[2:100]` is `x[2:]`
 * there), libgpumem refuses them, so that an index mistake shows where it is
 * made.  Bounds on the axis that select nothing (`3:1`) give an empty axis,
 * as in Python: the view's extent is ceil((stop - start) / step), or 0 when
 * that is negative.
 *
 * A step of 0 reads as 1, so that the C initializer {start, stop}, which
 * leaves step 0, is `start:stop`.  (Until GPUMEM_1.1 a zero step was
 * ::GPUMEM_ERROR_ZERO_STEP, which no call returns now; no program that
 * worked changes meaning.)  A step of ::GPUMEM_SLICE_DEFAULT (INT64_MIN)
 * means omitted too, which is 1, so NumPy's `x[::-2**63]` cannot be asked
 * for: write INT64_MIN + 1 instead; it selects the same elements (the last
 * one alone) on every axis, whose extents never reach 2^62.
 *
 * @par Indices
 * A stop of ::GPUMEM_SLICE_INDEX (INT64_MIN + 1) makes the slice an integer
 * index, NumPy's `a[i]`: start is the position i, negative counting from
 * the end (-1 is the last element), and step must be 1, 0 or
 * ::GPUMEM_SLICE_DEFAULT (another step, or a start of
 * ::GPUMEM_SLICE_DEFAULT, is ::GPUMEM_ERROR_INVALID_VALUE).  The position
 * must be an element, 0 <= i < n after adding n to a negative i, or the call
 * fails with ::GPUMEM_ERROR_INDEX_OUT_OF_RANGE naming the axis and the
 * index.  The view has no such axis: each index takes one dimension away
 * (indexing every axis of an array gives a 0-d view of one element).
 * GPUMEM_INDEX(i) writes it as an initializer.  Before GPUMEM_1.1, that stop
 * was an error on every axis (an extent would have to be 2^63 - 1 for it to
 * be a bound), so no program that worked changes meaning.  Added in
 * GPUMEM_1.1.
 */
typedef struct gpumem_slice {
    int64_t start; /**< first index, or ::GPUMEM_SLICE_DEFAULT; negative counts from the end; for an index, the position */
    int64_t stop;  /**< the index the slice stops before, or ::GPUMEM_SLICE_DEFAULT; negative counts from the end; ::GPUMEM_SLICE_INDEX: an index */
    int64_t step;  /**< distance between indices, or ::GPUMEM_SLICE_DEFAULT (1); negative walks back; 0 reads as 1 */
} gpumem_slice;

/** Omitted slice bound or step (Python's None); a step so given is 1. */
#define GPUMEM_SLICE_DEFAULT INT64_MIN
/** The whole axis, `:`, as an initializer:
 * `gpumem_slice s[2] = {GPUMEM_SLICE_ALL, {0, 6, 2}};` is `[:, 0:6:2]`. */
#define GPUMEM_SLICE_ALL {GPUMEM_SLICE_DEFAULT, GPUMEM_SLICE_DEFAULT, 1}
/** The stop of a ::gpumem_slice that is an integer index (see Indices there).  Added in GPUMEM_1.1. */
#define GPUMEM_SLICE_INDEX (INT64_MIN + 1)
/** The integer index @p i (negative: from the end) as a ::gpumem_slice initializer; it drops its axis:
 * `gpumem_slice s[2] = {GPUMEM_INDEX(1), {1, -1}};` is `[1, 1:-1]`.  Added in GPUMEM_1.1. */
#define GPUMEM_INDEX(i) {(i), GPUMEM_SLICE_INDEX, 1}

/** Flags of gpumem_to_device(). */
#define GPUMEM_TO_DEVICE_NO_COPY 0x1   /**< allocate only (numba's copy=False) */
#define GPUMEM_TO_DEVICE_WRITEBACK 0x2 /**< copy back into the host array when the stream is synchronized */

/** Flag of gpumem_array_ravel() and gpumem_array_reshape(): fail rather than copy. */
#define GPUMEM_NO_COPY 0x1

/* ---- making arrays ---------------------------------------------------------------- */

/**
 * Describes a caller's host buffer as an array (what gpumem_to_device takes).
 * @p strides in bytes, or NULL for C order.  The buffer is borrowed: it must
 * outlive the array and every copy queued from or into it.
 * @param[in] data the caller's buffer (borrowed).
 * @param ndim the number of dimensions, 0 to ::GPUMEM_MAX_NDIM.
 * @param[in] shape @p ndim extents (may be NULL when @p ndim is 0).
 * @param[in] strides @p ndim byte strides, or NULL for C order.
 * @param dtype the element type (the array holds a reference).
 * @param[out] array the new array.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_TOO_MANY_DIMENSIONS,
 *        ::GPUMEM_ERROR_NEGATIVE_DIMENSION, ::GPUMEM_ERROR_OVERFLOW, ::GPUMEM_ERROR_INVALID_VALUE,
 *        ::GPUMEM_ERROR_INVALID_DTYPE, ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY.
 */
GPUMEM_API gpumem_status gpumem_host_array_wrap(void *data, int ndim, const int64_t *shape,
                                                const int64_t *strides, const gpumem_dtype *dtype,
                                                gpumem_array **array);

/**
 * A new host array in memory the library owns (numpy.empty), contiguous in @p order ('C' or 'F').
 * @param ndim the number of dimensions, 0 to ::GPUMEM_MAX_NDIM.
 * @param[in] shape @p ndim extents.
 * @param dtype the element type.
 * @param order 'C' or 'F'.
 * @param[out] array the new array.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_TOO_MANY_DIMENSIONS,
 *        ::GPUMEM_ERROR_NEGATIVE_DIMENSION, ::GPUMEM_ERROR_OVERFLOW, ::GPUMEM_ERROR_INVALID_ORDER,
 *        ::GPUMEM_ERROR_INVALID_DTYPE, ::GPUMEM_ERROR_INVALID_VALUE, ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY.
 */
GPUMEM_API gpumem_status gpumem_host_array(int ndim, const int64_t *shape, const gpumem_dtype *dtype,
                                           char order, gpumem_array **array);

/**
 * numba's device_array: an uninitialized device array.  @p strides, when
 * not NULL, choose the axis order only: the result is always contiguous
 * (strides with gaps cannot be allocated); NULL uses @p order ('C' or 'F').
 * The allocation is ordered on @p stream (NULL: none), a stream of @p ctx's
 * device (another device's is ::GPUMEM_ERROR_CONTEXT_MISMATCH).
 *
 * @par Example
 * A 2x3 float32 device array, filled on the device and read back:
 * @code{.c}
 * #include <stdio.h>
 * #include <gpumem.h>
 *
 * int main(void)
 * {
 *     const int64_t shape[2] = {2, 3};
 *     const gpumem_dtype *f32 = gpumem_dtype_builtin(GPUMEM_FLOAT32);
 *     const float value = 1.5f;
 *     float out[2][3] = {{0}};
 *     gpumem_array *d = NULL, *h = NULL;
 *     // NULL context: the autoinit context; NULL strides: the order 'C'
 *     gpumem_status st = gpumem_device_array(NULL, 2, shape, NULL, f32, 'C', NULL, &d);
 *     if (st == GPUMEM_OK)
 *         st = gpumem_array_fill(d, &value, NULL);
 *     if (st == GPUMEM_OK)
 *         st = gpumem_host_array_wrap(out, 2, shape, NULL, f32, &h);
 *     if (st == GPUMEM_OK)
 *         st = gpumem_copy_to_host(d, h, NULL);
 *     if (st == GPUMEM_OK)
 *         printf("%g %g\n", out[0][0], out[1][2]); // prints: 1.5 1.5
 *     else
 *         fprintf(stderr, "gpumem: %s\n", gpumem_last_error());
 *     gpumem_array_release(h);
 *     gpumem_array_release(d);
 *     return st == GPUMEM_OK ? 0 : 1;
 * }
 * @endcode
 * @param ctx the context, or NULL for the autoinit context.
 * @param ndim the number of dimensions, 0 to ::GPUMEM_MAX_NDIM.
 * @param[in] shape @p ndim extents.
 * @param[in] strides byte strides giving the axis order, or NULL.
 * @param dtype the element type.
 * @param order 'C' or 'F', when @p strides is NULL.
 * @param stream the stream the allocation is ordered on, or NULL.
 * @param[out] array the new array.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_TOO_MANY_DIMENSIONS,
 *        ::GPUMEM_ERROR_NEGATIVE_DIMENSION, ::GPUMEM_ERROR_OVERFLOW, ::GPUMEM_ERROR_INVALID_ORDER,
 *        ::GPUMEM_ERROR_INVALID_DTYPE, ::GPUMEM_ERROR_INVALID_VALUE, ::GPUMEM_ERROR_CONTEXT_MISMATCH (@p
 *        stream), ::GPUMEM_ERROR_OUT_OF_MEMORY, ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY, an autoinit failure or a
 *        driver failure.
 */
GPUMEM_API gpumem_status gpumem_device_array(gpumem_context *ctx, int ndim, const int64_t *shape,
                                             const int64_t *strides, const gpumem_dtype *dtype, char order,
                                             gpumem_stream *stream, gpumem_array **array);

/**
 * numba's device_array_like: a contiguous device array with @p like's shape,
 * dtype and axis order (a transposed or sliced source keeps its stride
 * order; its gaps are not copied).
 * @param ctx the context, or NULL: @p like's context when it has one (a
 *        device, pinned, mapped or managed array), else the autoinit context.
 * @param like the array whose shape, dtype and axis order are taken.
 * @param stream the stream the allocation is ordered on, or NULL.
 * @param[out] array the new array.
 * @return as gpumem_device_array().
 */
GPUMEM_API gpumem_status gpumem_device_array_like(gpumem_context *ctx, const gpumem_array *like,
                                                  gpumem_stream *stream, gpumem_array **array);

/**
 * numba's DeviceRecord: a 0-d device array of a record dtype.  A dtype
 * that is not a record (::GPUMEM_RECORD: gpumem_dtype_record_create(),
 * gpumem_dtype_from_descr()) is ::GPUMEM_ERROR_INVALID_DTYPE;
 * gpumem_device_array() with ndim 0 makes a 0-d array of any dtype.
 * @param ctx the context, or NULL for the autoinit context.
 * @param dtype a record dtype.
 * @param stream the stream the allocation is ordered on, or NULL.
 * @param[out] array the new 0-d array.
 * @return as gpumem_device_array(); also ::GPUMEM_ERROR_INVALID_DTYPE when @p dtype is not a record.
 */
GPUMEM_API gpumem_status gpumem_device_record(gpumem_context *ctx, const gpumem_dtype *dtype,
                                              gpumem_stream *stream, gpumem_array **array);

/**
 * numba's to_device: a new device array like @p host (gpumem_device_array_like),
 * with the data of @p host copied in unless ::GPUMEM_TO_DEVICE_NO_COPY is given.
 * A 0-d host array of a record dtype (a structured scalar) gives a
 * DeviceRecord.  With ::GPUMEM_TO_DEVICE_WRITEBACK the device data is copied
 * back into @p host at the next synchronization of @p stream (or of the
 * context's default stream when @p stream is NULL) whose wait succeeds:
 * gpumem_stream_synchronize(), gpumem_stream_auto_synchronize_end(),
 * gpumem_context_synchronize(), or the stream's destruction; a
 * synchronization whose wait fails leaves it queued, since the device data
 * may not be complete (gpumem/stream.h).  The array and @p host stay alive
 * until then.
 *
 * @par Example
 * numba's `d = cuda.to_device(host)` and `d.copy_to_host(back)`:
 * @code{.c}
 * #include <stdio.h>
 * #include <gpumem.h>
 *
 * int main(void)
 * {
 *     double host[4] = {1, 2, 3, 4}, back[4] = {0};
 *     const int64_t n = 4;
 *     const gpumem_dtype *f64 = gpumem_dtype_builtin(GPUMEM_FLOAT64);
 *     gpumem_array *h = NULL, *b = NULL, *d = NULL;
 *     gpumem_status st = gpumem_host_array_wrap(host, 1, &n, NULL, f64, &h); // no copy: a view of host
 *     if (st == GPUMEM_OK)
 *         st = gpumem_to_device(NULL, h, NULL, 0, &d);
 *     if (st == GPUMEM_OK)
 *         st = gpumem_host_array_wrap(back, 1, &n, NULL, f64, &b);
 *     if (st == GPUMEM_OK)
 *         st = gpumem_copy_to_host(d, b, NULL);
 *     if (st == GPUMEM_OK)
 *         printf("%g %g\n", back[0], back[3]); // prints: 1 4
 *     else
 *         fprintf(stderr, "gpumem: %s\n", gpumem_last_error());
 *     gpumem_array_release(d);
 *     gpumem_array_release(b);
 *     gpumem_array_release(h);
 *     return st == GPUMEM_OK ? 0 : 1;
 * }
 * @endcode
 * @param ctx the context, or NULL: @p host's context when it has one (a
 *        pinned, mapped or managed array), else the autoinit context.
 * @param host the source, a host-side array (a device array is taken too: the new array is a copy of it,
 *        where numba's to_device would return it as it is).
 * @param stream the stream of the copy, or NULL (synchronous).
 * @param flags 0, ::GPUMEM_TO_DEVICE_NO_COPY, ::GPUMEM_TO_DEVICE_WRITEBACK.
 * @param[out] array the new device array.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE (unknown flags; with
 *        ::GPUMEM_TO_DEVICE_WRITEBACK, a read-only @p host or one with stride 0 on an axis of more than one
 *        element, which the write-back could not write), the statuses of gpumem_device_array() and of
 *        gpumem_array_copy().
 */
GPUMEM_API gpumem_status gpumem_to_device(gpumem_context *ctx, gpumem_array *host, gpumem_stream *stream,
                                          unsigned flags, gpumem_array **array);

/**
 * Adds a reference.  A handle whose last reference went is
 * ::GPUMEM_ERROR_INVALID_STATE (see gpumem_array_release()).
 * @param array the array.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_STATE (its last reference went).
 */
GPUMEM_API gpumem_status gpumem_array_retain(gpumem_array *array);

/**
 * Drops a reference; the last one frees the memory the array owns (and
 * returns the driver's failure to free it, if any: the handle is gone
 * either way).  NULL is a no-op.
 *
 * Releasing more often than retaining is a bug of the caller, as free()
 * twice is.  The library detects it where it can: releasing, retaining or
 * using (in any function) a handle whose last reference went is
 * ::GPUMEM_ERROR_INVALID_STATE, changes nothing and touches no freed
 * memory, unless the calling thread has released 64 more handles of a
 * similar size since and the memory was handed out again for a new one
 * (gpumem/status.h, "Handles").  An extra release while other references
 * remain (a view's on its base, a stream's) cannot be told from a rightful
 * one.
 * @param array the array, or NULL.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_INVALID_STATE (released after its last release), or a driver failure
 *        freeing the memory.
 */
GPUMEM_API gpumem_status gpumem_array_release(gpumem_array *array);

/**
 * Releases @p count arrays (NULLs skipped) and returns the first failure.
 * Each is released as by gpumem_array_release(), in turn, all of them, also
 * after one fails.  The status and gpumem_last_error() are the first
 * failure's, its message prefixed with its place
 * ("gpumem_array_release_n: arrays[2]: ...").  Each entry is released once
 * per appearance, so an array listed twice loses two references.
 * GPUMEM_ARRAY_RELEASE_ALL(a, b, ...) calls it over its arguments.  Added in
 * GPUMEM_1.1.
 * @param count the number of entries.
 * @param[in] arrays @p count arrays or NULLs (may be NULL when @p count is 0).
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT (@p arrays NULL with @p count > 0), or the first failure
 *        of gpumem_array_release().
 */
GPUMEM_API gpumem_status gpumem_array_release_n(size_t count, gpumem_array *const *arrays);

/* ---- copies --------------------------------------------------------------------------- */

/**
 * dst[:] = src, arguments (dst, src) as memcpy's: copies every element of
 * @p src into @p dst.  (gpumem_copy_to_host() takes (src, dst), numba's
 * receiver first.)  Equal shapes and dtypes, any
 * kinds (device, host, pinned, mapped, managed), any strides on either side
 * (negative, zero in the source).  A destination with stride 0 on an axis
 * of more than one element (a broadcast: its elements share bytes) cannot
 * be written: ::GPUMEM_ERROR_INVALID_VALUE.  Only the elements are written, never the
 * gaps of a strided destination.  The copy engine chooses, per copy, the
 * cheapest way by bytes per DMA row and memory kind (gpumem/debug.h's
 * gpumem_debug_last_copy_path() tells which it took):
 * - one contiguous transfer when both sides are one run in the same order;
 * - one 2-D or 3-D driver copy when that does it and its rows are at least
 *   GPUMEM_COPY_MIN_ROW_BYTES wide (doc/environment.md; narrower rows run
 *   far below the link's speed);
 * - otherwise the strided sides are packed and one contiguous run crosses
 *   the link: a device side by the library's pack and unpack kernels
 *   through device scratch (device to device: one kernel when a side is one
 *   run, else two through scratch, no transfer), a host side by CPU threads
 *   into host staging memory.  The packed layout is the other side's when
 *   that side is one run, so the transfer lands in it directly.  Device
 *   scratch is at most two buffers of `GPUMEM_COPY_SCRATCH_CHUNK` bytes
 *   (4 MiB; between devices, gpumem/peer.h): a larger copy goes chunk by chunk along its outermost axes, the
 *   kernels of one chunk running while the transfer of the other does, so
 *   a strided view larger than the device's free memory copies too.  A copy
 *   whose transfer goes through the staging engine (a pageable or strided
 *   host side) takes buffers of the staging window instead, the staging
 *   threads x their slot, at most 32 MiB, and the scratch chunk when the
 *   device has no room for those (gpumem/staging.h).  When
 *   the device has no room even for that (or the driver cannot load the
 *   kernels), the copy runs without scratch, as the driver's 2-D or 3-D
 *   copies (::GPUMEM_COPY_PATH_DMA, ::GPUMEM_COPY_PATH_DMA_LOOP), a
 *   strided host side still packed by the CPU.
 * Overlapping source and destination are staged through a temporary.  A
 * contiguous transfer of pageable host memory of at least the staging
 * threshold goes through the context's staging engine (gpumem/staging.h).
 * An empty copy (an extent 0) moves nothing and reports
 * ::GPUMEM_COPY_PATH_NONE.
 *
 * @p stream NULL: synchronous.  With a stream, in stream order:
 * - copies between device and page-locked memory, and device to device
 *   without temporaries, are queued and return at once;
 * - an upload from pageable memory returns once the source was read (it may
 *   be reused at once); the data reaches the device in stream order;
 * - device scratch never makes a copy wait for its stream: it comes from a
 *   cache kept per context with the library's pack kernels, and a later
 *   copy's use of it is ordered after this copy's work on the device (an
 *   event its stream waits for), whether memory comes from the driver or
 *   from a pool (gpumem_context_set_pool()).  The cache holds a few buffers
 *   of at most two scratch chunks each, and is freed by
 *   gpumem_clear_context_caches() and at the context's final release
 *   (buffers of a pool go back to it when it is destroyed);
 * - a copy into a strided host destination that is not pageable (pinned,
 *   mapped, managed) waits for its stream, since the CPU unpacks the data
 *   once it has arrived; overlapping device views go through a temporary
 *   that is freed at the stream's next synchronization
 *   (gpumem_stream_synchronize(), gpumem_context_synchronize(),
 *   gpumem_stream_destroy());
 * - a download into pageable memory is queued too, where the driver would
 *   run it synchronously (numba#5130): the bytes go into a pinned bounce
 *   block on the stream, and a host function queued after them writes the
 *   destination when the stream gets there.  The call returns at once; the
 *   destination must stay valid and untouched until the stream is
 *   synchronized.  The bounce block is reused or freed at the first
 *   gpumem_stream_synchronize(), gpumem_context_synchronize() or
 *   gpumem_stream_destroy() that begins after the call returned (one
 *   already waiting, in another thread, leaves it to the next);
 * - a later copy on the same stream that reads or writes host memory with
 *   the CPU (from pageable memory, or through host packing) first waits for
 *   the downloads queued before it, so stream order holds for it too.
 *
 * Device arrays of two different devices: a cross-device copy (peer access
 * or pinned host staging, gpumem/peer.h says how and how it is ordered);
 * @p stream may then belong to either device.  Otherwise @p stream must
 * belong to the device side's context: a stream of another device is
 * ::GPUMEM_ERROR_CONTEXT_MISMATCH.
 *
 * @par Example
 * A transposed view made contiguous on the device, then read back:
 * @code{.c}
 * #include <stdio.h>
 * #include <gpumem.h>
 *
 * int main(void)
 * {
 *     float host[2][3] = {{0, 1, 2}, {3, 4, 5}}, out[3][2];
 *     const int64_t shape[2] = {2, 3}, tshape[2] = {3, 2};
 *     const gpumem_dtype *f32 = gpumem_dtype_builtin(GPUMEM_FLOAT32);
 *     gpumem_array *h = NULL, *a = NULL, *at = NULL, *b = NULL, *o = NULL;
 *     gpumem_status st = gpumem_host_array_wrap(host, 2, shape, NULL, f32, &h);
 *     if (st == GPUMEM_OK)
 *         st = gpumem_to_device(NULL, h, NULL, 0, &a);
 *     if (st == GPUMEM_OK)
 *         st = gpumem_array_transpose(a, NULL, &at); // a.T: a view, strides swapped
 *     if (st == GPUMEM_OK)
 *         st = gpumem_device_array(NULL, 2, tshape, NULL, f32, 'C', NULL, &b);
 *     if (st == GPUMEM_OK)
 *         st = gpumem_array_copy(b, at, NULL); // device to device, any strides
 *     if (st == GPUMEM_OK)
 *         st = gpumem_host_array_wrap(out, 2, tshape, NULL, f32, &o);
 *     if (st == GPUMEM_OK)
 *         st = gpumem_array_copy(o, b, NULL); // device to host
 *     if (st == GPUMEM_OK)
 *         printf("%g %g %g\n", out[0][1], out[1][1], out[2][1]); // prints: 3 4 5
 *     else
 *         fprintf(stderr, "gpumem: %s\n", gpumem_last_error());
 *     gpumem_array_release(o);
 *     gpumem_array_release(b);
 *     gpumem_array_release(at);
 *     gpumem_array_release(a);
 *     gpumem_array_release(h);
 *     return st == GPUMEM_OK ? 0 : 1;
 * }
 * @endcode
 * @param dst the destination (writable).
 * @param src the source, of the same shape and dtype.
 * @param stream the stream, or NULL (synchronous).
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_SHAPE_MISMATCH,
 *        ::GPUMEM_ERROR_DTYPE_MISMATCH, ::GPUMEM_ERROR_CONTEXT_MISMATCH, ::GPUMEM_ERROR_INVALID_VALUE
 *        (read-only or broadcast @p dst), ::GPUMEM_ERROR_OVERFLOW, ::GPUMEM_ERROR_OUT_OF_MEMORY,
 *        ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY, ::GPUMEM_ERROR_INVALID_ENVIRONMENT (a bad staging variable), or a
 *        driver failure.
 */
GPUMEM_API gpumem_status gpumem_array_copy(gpumem_array *dst, const gpumem_array *src, gpumem_stream *stream);

/**
 * numba's d.copy_to_host(ary, stream), arguments (src, dst), numba's
 * receiver first: copies @p src (device) into @p dst (a host-side array),
 * as gpumem_array_copy(dst, src).  A device @p dst is
 * ::GPUMEM_ERROR_INVALID_VALUE, whose message asks "arguments swapped?"
 * when @p src is host-side.  With a stream the copy is queued whatever
 * @p dst's memory: into pageable memory through a pinned bounce block and a
 * host function on the stream (numba#5130; see gpumem_array_copy()).
 *
 * @par Example
 * A download queued on a stream into ordinary (pageable) memory:
 * @code{.c}
 * #include <stdio.h>
 * #include <gpumem.h>
 *
 * int main(void)
 * {
 *     static float out[1000];
 *     const int64_t n = 1000;
 *     const gpumem_dtype *f32 = gpumem_dtype_builtin(GPUMEM_FLOAT32);
 *     const float seven = 7.0f;
 *     gpumem_stream *s = NULL;
 *     gpumem_array *d = NULL, *h = NULL;
 *     gpumem_status st = gpumem_stream_create(NULL, 0, &s);
 *     if (st == GPUMEM_OK)
 *         st = gpumem_device_array(NULL, 1, &n, NULL, f32, 'C', s, &d);
 *     if (st == GPUMEM_OK)
 *         st = gpumem_array_fill(d, &seven, s);
 *     if (st == GPUMEM_OK)
 *         st = gpumem_host_array_wrap(out, 1, &n, NULL, f32, &h);
 *     if (st == GPUMEM_OK)
 *         st = gpumem_copy_to_host(d, h, s); // returns at once; out is written in stream order
 *     if (st == GPUMEM_OK)
 *         st = gpumem_stream_synchronize(s); // from here on, out holds the data
 *     if (st == GPUMEM_OK)
 *         printf("%g %g\n", out[0], out[999]); // prints: 7 7
 *     else
 *         fprintf(stderr, "gpumem: %s\n", gpumem_last_error());
 *     gpumem_array_release(h);
 *     gpumem_array_release(d);
 *     gpumem_stream_destroy(s);
 *     return st == GPUMEM_OK ? 0 : 1;
 * }
 * @endcode
 * @param src the source, a device-side array (only @p dst's side is checked: a host-side @p src is
 *        copied as gpumem_array_copy() copies it).
 * @param dst the destination, a host-side array.
 * @param stream the stream, or NULL (synchronous).
 * @return as gpumem_array_copy(); also ::GPUMEM_ERROR_INVALID_VALUE when @p dst is not on the host side (the
 *        message says "arguments swapped?" when @p src is).
 */
GPUMEM_API gpumem_status gpumem_copy_to_host(const gpumem_array *src, gpumem_array *dst, gpumem_stream *stream);

/**
 * numba's d.copy_to_device(ary, stream), arguments (dst, src), numba's
 * receiver first: copies @p src (host or device) into @p dst (device), as
 * gpumem_array_copy(dst, src); a @p src of another device is a cross-device
 * copy.  A host-side @p dst is ::GPUMEM_ERROR_INVALID_VALUE, whose message
 * asks "arguments swapped?" when @p src is on the device.
 * @param dst the destination, a device-side array.
 * @param src the source.
 * @param stream the stream, or NULL (synchronous).
 * @return as gpumem_array_copy(); also ::GPUMEM_ERROR_INVALID_VALUE when @p dst is not on the device side (the
 *        message says "arguments swapped?" when @p src is).
 */
GPUMEM_API gpumem_status gpumem_copy_to_device(gpumem_array *dst, const gpumem_array *src,
                                               gpumem_stream *stream);

/**
 * Sets every element to the @p value of one element (itemsize bytes).  A @p stream of another
 * device than the array's is ::GPUMEM_ERROR_CONTEXT_MISMATCH; an array with stride 0 on an axis
 * of more than one element (a broadcast) is ::GPUMEM_ERROR_INVALID_VALUE.  For a host-side array the CPU
 * writes the elements; with a stream it first waits for the work queued on the stream (a
 * queued download into the array lands before the fill, not over it).
 * @param array the destination (writable).
 * @param[in] value one element, itemsize bytes.
 * @param stream the stream, or NULL (synchronous).
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE (read-only, broadcast),
 *        ::GPUMEM_ERROR_CONTEXT_MISMATCH, ::GPUMEM_ERROR_OUT_OF_MEMORY, ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY, a
 *        driver failure, or (a strided array, filled through a copy) the statuses of gpumem_array_copy().
 */
GPUMEM_API gpumem_status gpumem_array_fill(gpumem_array *array, const void *value, gpumem_stream *stream);

/**
 * Reads one element (itemsize bytes) at @p index (ndim indices; negative
 * count from the end).  The call reads ndim values from @p index, however
 * many the caller has: gpumem_array_get_item_n() takes the count and checks
 * it.  With a stream the read is ordered after the stream's
 * earlier work and waited for, as the value is needed at once: for a
 * host-side array the call waits for the stream's queued work (a download
 * into it), then reads host memory.  A @p stream
 * of another device than the array's is ::GPUMEM_ERROR_CONTEXT_MISMATCH (so
 * for gpumem_array_set_item()).
 * @param array the array.
 * @param[in] index ndim indices (NULL for a 0-d array).
 * @param[out] value itemsize bytes.
 * @param stream the stream, or NULL.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INDEX_OUT_OF_RANGE,
 *        ::GPUMEM_ERROR_CONTEXT_MISMATCH, or a driver failure.
 */
GPUMEM_API gpumem_status gpumem_array_get_item(const gpumem_array *array, const int64_t *index, void *value,
                                               gpumem_stream *stream);

/**
 * gpumem_array_get_item() with the number of indices, which must be the
 * array's ndim.  Another @p nindex fails with ::GPUMEM_ERROR_INVALID_VALUE,
 * naming both, before the call reads @p index (so a C caller cannot read past its index
 * array, and `get_item_n(a, 1, ...)` of a 2-D array is an error, not an
 * element).  Added in GPUMEM_1.1.
 * @param array the array.
 * @param nindex the number of indices in @p index: the array's ndim.
 * @param[in] index @p nindex indices, negative from the end (may be NULL when @p nindex is 0).
 * @param[out] value itemsize bytes.
 * @param stream the stream, or NULL.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_INVALID_VALUE (@p nindex is not ndim), or the statuses of
 *        gpumem_array_get_item().
 */
GPUMEM_API gpumem_status gpumem_array_get_item_n(const gpumem_array *array, int nindex, const int64_t *index,
                                                 void *value, gpumem_stream *stream);

/**
 * Writes one element at @p index (ndim indices, read without a count:
 * gpumem_array_set_item_n() checks one).  With a stream the write is ordered after
 * the stream's earlier work: for a host-side array the call first waits for
 * the stream's queued work (a download into it lands before the write, not
 * over it), then writes host memory.
 * @param array the array (writable).
 * @param[in] index ndim indices (NULL for a 0-d array).
 * @param[in] value itemsize bytes.
 * @param stream the stream, or NULL (synchronous).
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INDEX_OUT_OF_RANGE,
 *        ::GPUMEM_ERROR_INVALID_VALUE (read-only), ::GPUMEM_ERROR_CONTEXT_MISMATCH, or a driver failure.
 */
GPUMEM_API gpumem_status gpumem_array_set_item(gpumem_array *array, const int64_t *index, const void *value,
                                               gpumem_stream *stream);

/**
 * gpumem_array_set_item() with the number of indices, which must be the
 * array's ndim.  Another @p nindex fails with ::GPUMEM_ERROR_INVALID_VALUE
 * before the call reads @p index, and writes nothing.  Added in GPUMEM_1.1.
 * @param array the array (writable).
 * @param nindex the number of indices in @p index: the array's ndim.
 * @param[in] index @p nindex indices, negative from the end (may be NULL when @p nindex is 0).
 * @param[in] value itemsize bytes.
 * @param stream the stream, or NULL (synchronous).
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_INVALID_VALUE (@p nindex is not ndim), or the statuses of
 *        gpumem_array_set_item().
 */
GPUMEM_API gpumem_status gpumem_array_set_item_n(gpumem_array *array, int nindex, const int64_t *index,
                                                 const void *value, gpumem_stream *stream);

/* ---- views ------------------------------------------------------------------------------- */

/**
 * A view of the first @p nslices axes sliced or indexed (the rest whole),
 * as NumPy's `a[s0, s1, ...]` with slices and integers: it shares
 * @p array's memory (no copy) and keeps it alive.  Each sliced axis has
 * extent ceil((stop - start) / step) and its stride times step; each
 * indexed axis (GPUMEM_INDEX(i)) is gone, so the view has ndim less one per
 * index (`d[1, 1:-1]` of a 2-D array is 1-D, and copies to and from a 1-D
 * array of its length).  Bounds and indices outside an axis are errors, not
 * clamped (::gpumem_slice says exactly which).
 *
 * @par Example
 * Every other column of a 4x6 device array, `d[:, ::2]`, copied to the host:
 * @code{.c}
 * #include <stdio.h>
 * #include <gpumem.h>
 *
 * int main(void)
 * {
 *     float host[4][6], out[4][3];
 *     for (int i = 0; i < 24; i++)
 *         host[i / 6][i % 6] = (float)i;
 *     const int64_t shape[2] = {4, 6}, out_shape[2] = {4, 3};
 *     const gpumem_dtype *f32 = gpumem_dtype_builtin(GPUMEM_FLOAT32);
 *     gpumem_array *h = NULL, *d = NULL, *cols = NULL, *o = NULL;
 *     const gpumem_slice every_other[2] = {GPUMEM_SLICE_ALL, {0, GPUMEM_SLICE_DEFAULT, 2}};
 *     gpumem_status st = gpumem_host_array_wrap(host, 2, shape, NULL, f32, &h);
 *     if (st == GPUMEM_OK)
 *         st = gpumem_to_device(NULL, h, NULL, 0, &d); // NULL: the autoinit context
 *     if (st == GPUMEM_OK)
 *         st = gpumem_array_slice(d, every_other, 2, &cols); // a view: no copy
 *     if (st == GPUMEM_OK)
 *         st = gpumem_host_array_wrap(out, 2, out_shape, NULL, f32, &o);
 *     if (st == GPUMEM_OK)
 *         st = gpumem_copy_to_host(cols, o, NULL);
 *     if (st == GPUMEM_OK)
 *         printf("%g %g %g\n", out[1][0], out[1][1], out[1][2]); // prints: 6 8 10
 *     else
 *         fprintf(stderr, "gpumem: %s\n", gpumem_last_error());
 *     gpumem_array_release(o);
 *     gpumem_array_release(cols); // the view kept d alive until now
 *     gpumem_array_release(d);
 *     gpumem_array_release(h);
 *     return st == GPUMEM_OK ? 0 : 1;
 * }
 * @endcode
 * @param array the array.
 * @param[in] slices @p nslices slices (may be NULL when @p nslices is 0).
 * @param nslices 0 to ndim.
 * @param[out] view the new view.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE (@p nslices; an index
 *        with a step other than 1 or without a position), ::GPUMEM_ERROR_INDEX_OUT_OF_RANGE (a bound or an
 *        index off its axis; the message names the axis and the bound), ::GPUMEM_ERROR_OVERFLOW (a stride
 *        times a step that overflows),
 *        ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY, ::GPUMEM_ERROR_INVALID_STATE (a released array).
 */
GPUMEM_API gpumem_status gpumem_array_slice(gpumem_array *array, const gpumem_slice *slices, int nslices,
                                            gpumem_array **view);

/**
 * A view with permuted axes: axis i of the view is axis axes[i]; NULL reverses (NumPy's .T).
 * As in NumPy, a negative entry counts from the end (-1 is the last axis).
 * @param array the array.
 * @param[in] axes ndim entries, a permutation of 0..ndim-1 (or of their negative forms -ndim..-1), or NULL.
 * @param[out] view the new view.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE (not a permutation),
 *        ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY, ::GPUMEM_ERROR_INVALID_STATE.
 */
GPUMEM_API gpumem_status gpumem_array_transpose(gpumem_array *array, const int *axes, gpumem_array **view);

/**
 * A view of the same bytes as another dtype (NumPy's view(dtype)).  An
 * item size that changes rescales the last axis, as in NumPy: that axis
 * must be contiguous (stride the old item size, unless its extent is 1 or
 * the array is empty) and its bytes a multiple of the new item size; a 0-d
 * array keeps its item size.
 * @param array the array.
 * @param dtype the new element type.
 * @param[out] view the new view.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE (the bytes do not divide,
 *        a strided last axis, a 0-d array of another item size),
 *        ::GPUMEM_ERROR_INVALID_DTYPE, ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY, ::GPUMEM_ERROR_INVALID_STATE.
 */
GPUMEM_API gpumem_status gpumem_array_view(gpumem_array *array, const gpumem_dtype *dtype, gpumem_array **view);

/**
 * numba's reshape: @p ndim extents, at most one -1, read in @p order ('C',
 * 'F' or 'A').  A view when one exists; otherwise a contiguous copy (of the
 * same kind, in the array's context), or ::GPUMEM_ERROR_COPY_REQUIRED with
 * ::GPUMEM_NO_COPY.
 * @param array the array.
 * @param ndim the new number of dimensions, 0 to ::GPUMEM_MAX_NDIM.
 * @param[in] shape @p ndim extents, at most one -1 (may be NULL when @p ndim is 0).
 * @param order 'C', 'F' or 'A'.
 * @param flags 0 or ::GPUMEM_NO_COPY.
 * @param stream the stream of a copy, or NULL.
 * @param[out] result the view or copy.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE,
 *        ::GPUMEM_ERROR_TOO_MANY_DIMENSIONS, ::GPUMEM_ERROR_INVALID_RESHAPE, ::GPUMEM_ERROR_INVALID_ORDER,
 *        ::GPUMEM_ERROR_COPY_REQUIRED, or the statuses of a copy (gpumem_array_copy()).
 */
GPUMEM_API gpumem_status gpumem_array_reshape(gpumem_array *array, int ndim, const int64_t *shape, char order,
                                              unsigned flags, gpumem_stream *stream, gpumem_array **result);

/**
 * numba's ravel: reshape to one dimension.
 * @param array the array.
 * @param order 'C', 'F' or 'A'.
 * @param flags 0 or ::GPUMEM_NO_COPY.
 * @param stream the stream of a copy, or NULL.
 * @param[out] result the view or copy.
 * @return as gpumem_array_reshape().
 */
GPUMEM_API gpumem_status gpumem_array_ravel(gpumem_array *array, char order, unsigned flags,
                                            gpumem_stream *stream, gpumem_array **result);

/**
 * numba's split(section): views of consecutive pieces of @p section elements
 * of a 1-D array; the last may be shorter.  @p pieces has room for
 * @p capacity handles; *count gets the number of pieces (also when
 * @p capacity is too small, which is ::GPUMEM_ERROR_INVALID_VALUE and makes
 * no views).
 * @param array a 1-D array.
 * @param section the elements per piece, at least 1.
 * @param[out] pieces room for @p capacity views.
 * @param capacity the room in @p pieces.
 * @param[out] count the number of pieces.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_SECTION,
 *        ::GPUMEM_ERROR_INVALID_VALUE (not 1-D, @p capacity too small), ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY.
 */
GPUMEM_API gpumem_status gpumem_array_split(gpumem_array *array, int64_t section, gpumem_array **pieces,
                                            size_t capacity, size_t *count);

/* ---- properties ---------------------------------------------------------------------------- */

/**
 * The number of dimensions (0 for a DeviceRecord or a 0-d array).
 * @param array the array.
 * @param[out] ndim the number of dimensions.
 * @return ::GPUMEM_OK, or ::GPUMEM_ERROR_NULL_ARGUMENT.
 */
GPUMEM_API gpumem_status gpumem_array_ndim(const gpumem_array *array, int *ndim);
/**
 * Copies ndim extents into @p shape.
 * @param array the array.
 * @param[out] shape room for ndim extents.
 * @return ::GPUMEM_OK, or ::GPUMEM_ERROR_NULL_ARGUMENT.
 */
GPUMEM_API gpumem_status gpumem_array_shape(const gpumem_array *array, int64_t *shape);
/**
 * Copies ndim byte strides into @p strides.
 * @param array the array.
 * @param[out] strides room for ndim strides.
 * @return ::GPUMEM_OK, or ::GPUMEM_ERROR_NULL_ARGUMENT.
 */
GPUMEM_API gpumem_status gpumem_array_strides(const gpumem_array *array, int64_t *strides);
/**
 * The dtype (borrowed: valid while the array lives).
 * @param array the array.
 * @param[out] dtype the dtype.
 * @return ::GPUMEM_OK, or ::GPUMEM_ERROR_NULL_ARGUMENT.
 */
GPUMEM_API gpumem_status gpumem_array_dtype(const gpumem_array *array, const gpumem_dtype **dtype);
/**
 * The number of elements.
 * @param array the array.
 * @param[out] size the number of elements.
 * @return ::GPUMEM_OK, or ::GPUMEM_ERROR_NULL_ARGUMENT.
 */
GPUMEM_API gpumem_status gpumem_array_size(const gpumem_array *array, int64_t *size);
/**
 * The bytes of its elements (size * itemsize).
 * @param array the array.
 * @param[out] nbytes the bytes.
 * @return ::GPUMEM_OK, or ::GPUMEM_ERROR_NULL_ARGUMENT.
 */
GPUMEM_API gpumem_status gpumem_array_nbytes(const gpumem_array *array, int64_t *nbytes);
/**
 * What memory the array lives in (device, host, pinned, mapped, managed or foreign).
 * @param array the array.
 * @param[out] kind the memory kind.
 * @return ::GPUMEM_OK, or ::GPUMEM_ERROR_NULL_ARGUMENT.
 */
GPUMEM_API gpumem_status gpumem_array_kind(const gpumem_array *array, gpumem_memory_kind *kind);
/**
 * The name of a memory kind: "device", "host", "pinned", "mapped",
 * "managed" or "foreign"; "unknown" for another value.  Static; never NULL.
 * Added in GPUMEM_1.1.
 * @param kind a memory kind.
 * @return the name; never NULL.
 */
GPUMEM_API const char *gpumem_memory_kind_name(gpumem_memory_kind kind);
/**
 * The context (borrowed; NULL for host arrays).
 * @param array the array.
 * @param[out] ctx the context, or NULL.
 * @return ::GPUMEM_OK, or ::GPUMEM_ERROR_NULL_ARGUMENT.
 */
GPUMEM_API gpumem_status gpumem_array_context(const gpumem_array *array, gpumem_context **ctx);
/**
 * The device address of element [0, ...] (device, mapped, managed, foreign; else GPUMEM_ERROR_INVALID_VALUE).
 * @param array the array.
 * @param[out] pointer the device address.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE (no device address).
 */
GPUMEM_API gpumem_status gpumem_array_device_pointer(const gpumem_array *array, uint64_t *pointer);
/**
 * The host address of element [0, ...] (host, pinned, mapped, managed; else GPUMEM_ERROR_INVALID_VALUE).
 * @param array the array.
 * @param[out] pointer the host address.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE (no host address).
 */
GPUMEM_API gpumem_status gpumem_array_host_pointer(const gpumem_array *array, void **pointer);
/**
 * NumPy's C_CONTIGUOUS flag: *result 1 or 0.
 * @param array the array.
 * @param[out] result 1 or 0.
 * @return ::GPUMEM_OK, or ::GPUMEM_ERROR_NULL_ARGUMENT.
 */
GPUMEM_API gpumem_status gpumem_array_is_c_contiguous(const gpumem_array *array, int *result);
/**
 * NumPy's F_CONTIGUOUS flag.
 * @param array the array.
 * @param[out] result 1 or 0.
 * @return ::GPUMEM_OK, or ::GPUMEM_ERROR_NULL_ARGUMENT.
 */
GPUMEM_API gpumem_status gpumem_array_is_f_contiguous(const gpumem_array *array, int *result);

/**
 * NumPy's WRITEABLE flag, inverted: *readonly 1 when writes through the
 * library (copies into it, fill, set_item, write-backs) are refused.  Arrays
 * imported read-only (CUDA Array Interface `readonly`, DLPack's read-only
 * flag) are read-only; views inherit it.
 * @param array the array.
 * @param[out] readonly 1 or 0.
 * @return ::GPUMEM_OK, or ::GPUMEM_ERROR_NULL_ARGUMENT.
 */
GPUMEM_API gpumem_status gpumem_array_is_readonly(const gpumem_array *array, int *readonly);

/**
 * Makes an array read-only (@p readonly 1) or writable again (0).  An array
 * whose memory was imported read-only, or a view whose base is read-only,
 * cannot be made writable (::GPUMEM_ERROR_INVALID_VALUE), as in NumPy.  The
 * base is the array that owns the memory: a view of a view has the first
 * one's base (NumPy collapses them alike), so a view made of a view that
 * was made read-only by itself is read-only too (views inherit the flag)
 * and may be made writable while its base is writable.
 * @param array the array.
 * @param readonly 1 (read-only; any other nonzero value too) or 0 (writable).
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE (cannot be made writable).
 */
GPUMEM_API gpumem_status gpumem_array_set_readonly(gpumem_array *array, int readonly);

GPUMEM_END_DECLS

/**
 * @def GPUMEM_ARRAY_RELEASE_ALL(...)
 * gpumem_array_release_n() over its arguments, one or more arrays (NULLs
 * skipped): `GPUMEM_ARRAY_RELEASE_ALL(o, cols, d, h);` releases all four
 * and gives the first failure.  C99 and later, and C++11 and later (where a
 * null entry is written nullptr, not NULL).  Added in GPUMEM_1.1.
 */
#ifdef __cplusplus
/// @cond
extern "C++" {
template <class... A>
inline gpumem_status gpumem_array_release_all_(A... arrays)
{
    gpumem_array *const list[] = {arrays...};
    return gpumem_array_release_n(sizeof...(A), list);
}
}
/// @endcond
#define GPUMEM_ARRAY_RELEASE_ALL(...) gpumem_array_release_all_(__VA_ARGS__)
#else
#define GPUMEM_ARRAY_RELEASE_ALL(...) \
    gpumem_array_release_n(sizeof((gpumem_array *[]){__VA_ARGS__}) / sizeof(gpumem_array *), \
                           (gpumem_array *[]){__VA_ARGS__})
#endif

#endif /* GPUMEM_ARRAY_H */
