/**
 * @file gpumem/host.h
 * @brief Host memory the driver knows: numba's pinned_array, mapped_array
 *        (MappedNDArray), managed arrays, the pinned() and mapped() scopes,
 *        and numba.roc's register and deregister.
 *
 * Page-locked ("pinned") host memory is what the GPU's copy engines read and
 * write directly: copies from and to it take the fast path, with no staging
 * and no driver-side bounce buffer.  Mapped memory is pinned memory that
 * device code can also address (gpumem_array_device_pointer()).
 *
 * @par Registration scopes
 * gpumem_pinned() page-locks existing host arrays (numba's
 * `with pinned(*arrays):`) and gives a ::gpumem_registration that
 * gpumem_unpinned() ends; gpumem_mapped() also maps them and gives device
 * views.  Ranges are page-granular and reference-counted across scopes:
 * overlapping or repeated arrays work.  The driver registers and unregisters
 * whole ranges only, so a scope that covers part of a range an earlier
 * scope registered holds that whole range: the range (every page of it) is
 * unregistered when the last scope that holds it ends.  Pin A, then B
 * overlapping A, then end A: A's pages outside B stay page-locked until B
 * ends too.  Memory that is already page-locked (pinned,
 * mapped or managed arrays, or memory another library registered) needs
 * nothing and is left alone; device arrays are already device memory and
 * are skipped (gpumem_mapped() gives the array itself as its device view).
 * Ending a scope sets the caller's handle to NULL; ending it again, or
 * ending a stale copy of its handle, is ::GPUMEM_ERROR_INVALID_STATE, not a
 * crash (gpumem/status.h says how far that is detected); ending a mapped
 * scope with gpumem_unpinned() or gpumem_deregister(), or a pinned one with
 * gpumem_unmapped(), is ::GPUMEM_ERROR_INVALID_STATE too.
 *
 * @par Asynchronous copies and pageable memory (numba#5130)
 * A copy given a stream from pageable host memory returns once the source
 * was read, so the source may be reused at once.  A copy given a stream INTO
 * pageable host memory, which the driver would silently run synchronously,
 * is queued instead: through a pinned bounce block and a host function on
 * the stream, which writes the destination in stream order (see
 * gpumem_array_copy()).  Page-locked destinations (gpumem_pinned(),
 * gpumem_pinned_array()) need no bounce block: the transfer lands in them.
 */
#ifndef GPUMEM_HOST_H
#define GPUMEM_HOST_H

#include <stddef.h>
#include <stdint.h>
#include <gpumem/export.h>
#include <gpumem/status.h>
#include <gpumem/context.h>
#include <gpumem/dtype.h>
#include <gpumem/stream.h>
#include <gpumem/array.h>

GPUMEM_BEGIN_DECLS

/** Flag of gpumem_mapped_array(): usable from every context (numba's portable=True). */
#define GPUMEM_HOST_PORTABLE 0x1
/** Flag of gpumem_mapped_array(): write-combined: fast host writes and device reads, slow host reads (wc=True). */
#define GPUMEM_HOST_WRITECOMBINED 0x4

/** Flag of gpumem_managed_array(): accessible from any stream of any device (cudaMemAttachGlobal). */
#define GPUMEM_MANAGED_ATTACH_GLOBAL 0x1
/** Flag of gpumem_managed_array(): host-attached until a stream attaches it (cudaMemAttachHost). */
#define GPUMEM_MANAGED_ATTACH_HOST 0x2

/** A registration scope of gpumem_pinned(), gpumem_mapped() or gpumem_register(). */
typedef struct gpumem_registration gpumem_registration;

/**
 * numba's pinned_array: a host array in page-locked memory, contiguous in
 * the axis order of @p strides (NULL: @p order, 'C' or 'F').  Its memory goes
 * back to the driver when the last reference goes.
 *
 * @par Example
 * A page-locked buffer, written by the CPU and uploaded asynchronously:
 * @code{.c}
 * #include <stdio.h>
 * #include <gpumem.h>
 *
 * int main(void)
 * {
 *     const int64_t n = 1 << 20;
 *     const gpumem_dtype *f32 = gpumem_dtype_builtin(GPUMEM_FLOAT32);
 *     gpumem_stream *s = NULL;
 *     gpumem_array *p = NULL, *d = NULL;
 *     void *ptr = NULL;
 *     float last = 0;
 *     const int64_t index = n - 1;
 *     gpumem_status st = gpumem_stream_create(NULL, 0, &s);
 *     if (st == GPUMEM_OK)
 *         st = gpumem_pinned_array(NULL, 1, &n, NULL, f32, 'C', &p);
 *     if (st == GPUMEM_OK)
 *         st = gpumem_array_host_pointer(p, &ptr);
 *     if (st == GPUMEM_OK) {
 *         float *x = ptr;
 *         for (int64_t i = 0; i < n; i++)
 *             x[i] = (float)i;
 *         st = gpumem_device_array(NULL, 1, &n, NULL, f32, 'C', s, &d);
 *     }
 *     if (st == GPUMEM_OK)
 *         st = gpumem_array_copy(d, p, s); // queued: the driver reads p while the CPU goes on
 *     if (st == GPUMEM_OK)
 *         st = gpumem_stream_synchronize(s); // only now may p be written again
 *     if (st == GPUMEM_OK)
 *         st = gpumem_array_get_item(d, &index, &last, NULL);
 *     if (st == GPUMEM_OK)
 *         printf("%g\n", last); // prints: 1.04858e+06
 *     else
 *         fprintf(stderr, "gpumem: %s\n", gpumem_last_error());
 *     gpumem_array_release(d);
 *     gpumem_array_release(p);
 *     gpumem_stream_destroy(s);
 *     return st == GPUMEM_OK ? 0 : 1;
 * }
 * @endcode
 * @param ctx the context, or NULL for the autoinit context.
 * @param ndim the number of dimensions.
 * @param[in] shape @p ndim extents.
 * @param[in] strides byte strides giving the axis order, or NULL.
 * @param dtype the element type.
 * @param order 'C' or 'F', when @p strides is NULL.
 * @param[out] array the new array.
 * @return ::GPUMEM_OK; the argument statuses of gpumem_device_array(), ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY, an
 *        autoinit failure or a driver failure.
 */
GPUMEM_API gpumem_status gpumem_pinned_array(gpumem_context *ctx, int ndim, const int64_t *shape,
                                             const int64_t *strides, const gpumem_dtype *dtype, char order,
                                             gpumem_array **array);

/**
 * numba's mapped_array (MappedNDArray): page-locked host memory mapped into
 * the device, with both a host and a device pointer.  @p flags:
 * ::GPUMEM_HOST_PORTABLE and ::GPUMEM_HOST_WRITECOMBINED, passed to the
 * driver (numba accepts and drops them).  Devices that cannot map host
 * memory give ::GPUMEM_ERROR_NOT_SUPPORTED.  @p stream orders nothing (the
 * memory is ready at once); it is checked to belong to @p ctx, as numba's
 * argument.
 * @param ctx the context, or NULL for the autoinit context.
 * @param ndim the number of dimensions.
 * @param[in] shape @p ndim extents.
 * @param[in] strides byte strides giving the axis order, or NULL.
 * @param dtype the element type.
 * @param order 'C' or 'F', when @p strides is NULL.
 * @param stream a stream of @p ctx, or NULL.
 * @param flags 0, ::GPUMEM_HOST_PORTABLE, ::GPUMEM_HOST_WRITECOMBINED.
 * @param[out] array the new array.
 * @return ::GPUMEM_OK; as gpumem_pinned_array(), also ::GPUMEM_ERROR_INVALID_VALUE (unknown flags),
 *        ::GPUMEM_ERROR_CONTEXT_MISMATCH (@p stream), ::GPUMEM_ERROR_NOT_SUPPORTED.
 */
GPUMEM_API gpumem_status gpumem_mapped_array(gpumem_context *ctx, int ndim, const int64_t *shape,
                                             const int64_t *strides, const gpumem_dtype *dtype, char order,
                                             gpumem_stream *stream, unsigned flags, gpumem_array **array);

/**
 * A managed (unified) array: one pointer valid on the host and the device.
 * @p flags: ::GPUMEM_MANAGED_ATTACH_GLOBAL or ::GPUMEM_MANAGED_ATTACH_HOST.
 * Devices without managed memory give ::GPUMEM_ERROR_NOT_SUPPORTED.
 * @param ctx the context, or NULL for the autoinit context.
 * @param ndim the number of dimensions.
 * @param[in] shape @p ndim extents.
 * @param[in] strides byte strides giving the axis order, or NULL.
 * @param dtype the element type.
 * @param order 'C' or 'F', when @p strides is NULL.
 * @param flags ::GPUMEM_MANAGED_ATTACH_GLOBAL or ::GPUMEM_MANAGED_ATTACH_HOST.
 * @param[out] array the new array.
 * @return ::GPUMEM_OK; as gpumem_pinned_array(), also ::GPUMEM_ERROR_INVALID_VALUE (@p flags),
 *        ::GPUMEM_ERROR_OUT_OF_MEMORY, ::GPUMEM_ERROR_NOT_SUPPORTED.
 */
GPUMEM_API gpumem_status gpumem_managed_array(gpumem_context *ctx, int ndim, const int64_t *shape,
                                              const int64_t *strides, const gpumem_dtype *dtype, char order,
                                              unsigned flags, gpumem_array **array);

/**
 * numba's `with pinned(*arrays):` begins: page-locks the host memory of
 * @p count arrays and gives the scope.  The arrays are retained until the
 * scope ends.  On failure nothing stays registered.
 * @param ctx the context, or NULL for the autoinit context.
 * @param[in] arrays @p count arrays (only pageable host memory needs page-locking).
 * @param count the number of arrays.
 * @param[out] registration the scope.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT (@p registration, @p arrays or an element),
 *        ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY, an autoinit failure or a driver failure.
 */
GPUMEM_API gpumem_status gpumem_pinned(gpumem_context *ctx, gpumem_array *const *arrays, size_t count,
                                       gpumem_registration **registration);

/**
 * Ends a gpumem_pinned() scope and sets *registration to NULL.
 * @param[in,out] registration the scope; set to NULL.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_STATE (ended twice), or a driver
 *        failure (the scope ends either way).
 */
GPUMEM_API gpumem_status gpumem_unpinned(gpumem_registration **registration);

/**
 * numba's `with mapped(*arrays, stream=...):` begins: page-locks and maps
 * the arrays, and gives in @p device_views[i] a new reference to a mapped
 * array over arrays[i]'s memory that device code can use (valid until the
 * scope ends; release each view).
 * @param ctx the context, or NULL for the autoinit context.
 * @param[in] arrays @p count arrays (only pageable host memory needs page-locking).
 * @param count the number of arrays.
 * @param stream a stream of @p ctx, or NULL.
 * @param[out] registration the scope.
 * @param[out] device_views room for @p count views.
 * @return ::GPUMEM_OK; as gpumem_pinned(), also ::GPUMEM_ERROR_NULL_ARGUMENT (@p device_views),
 *        ::GPUMEM_ERROR_CONTEXT_MISMATCH (@p stream), ::GPUMEM_ERROR_NOT_SUPPORTED (the device cannot map host
 *        memory).
 */
GPUMEM_API gpumem_status gpumem_mapped(gpumem_context *ctx, gpumem_array *const *arrays, size_t count,
                                       gpumem_stream *stream, gpumem_registration **registration,
                                       gpumem_array **device_views);

/**
 * Ends a gpumem_mapped() scope and sets *registration to NULL.
 * @param[in,out] registration the scope; set to NULL.
 * @return as gpumem_unpinned().
 */
GPUMEM_API gpumem_status gpumem_unmapped(gpumem_registration **registration);

/**
 * numba.roc's register(*arrays): the same page-locking as gpumem_pinned().
 * @param ctx the context, or NULL for the autoinit context.
 * @param[in] arrays @p count arrays (only pageable host memory needs page-locking).
 * @param count the number of arrays.
 * @param[out] registration the scope.
 * @return as gpumem_pinned().
 */
GPUMEM_API gpumem_status gpumem_register(gpumem_context *ctx, gpumem_array *const *arrays, size_t count,
                                         gpumem_registration **registration);

/**
 * numba.roc's deregister(*arrays): ends a gpumem_register() scope and sets *registration to NULL.
 * @param[in,out] registration the scope; set to NULL.
 * @return as gpumem_unpinned().
 */
GPUMEM_API gpumem_status gpumem_deregister(gpumem_registration **registration);

/**
 * Whether @p bytes of host memory at @p pointer are page-locked as far as
 * libgpumem knows (its pinned, mapped and managed allocations and its
 * registrations): *result 1 or 0.  Every byte must be: a range that is
 * only partly page-locked gives 0.  An empty range (@p bytes 0) gives 1,
 * whatever @p pointer is.
 * @param pointer the host address.
 * @param bytes the length.
 * @param[out] result 1 or 0.
 * @return ::GPUMEM_OK, or ::GPUMEM_ERROR_NULL_ARGUMENT (@p result).
 */
GPUMEM_API gpumem_status gpumem_host_is_pinned(const void *pointer, size_t bytes, int *result);

GPUMEM_END_DECLS

#endif /* GPUMEM_HOST_H */
