/**
 * @file gpumem/cleanup.h
 * @brief Deferred deallocation: numba.cuda's pending-deallocation queue and
 *        defer_cleanup().
 *
 * When the last reference to memory an array owns goes, the memory is not
 * freed at once: its free is queued on the array's context.  Freeing
 * synchronizes the device, so batching frees keeps the GPU busy.  The queue
 * is flushed (every queued free done):
 *  - when it holds more than the count limit of frees
 *    (GPUMEM_MAX_PENDING_DEALLOCS_COUNT, default 10), or more than the ratio
 *    limit of the device's total memory in bytes
 *    (GPUMEM_MAX_PENDING_DEALLOCS_RATIO, default 0.2).  Every kind of memory
 *    counts its real size: device, managed, pinned and mapped (numba counts
 *    pinned memory as 0 bytes, so it never triggers a flush);
 *  - when an allocation fails for lack of memory: the queue is flushed and
 *    the allocation retried once;
 *  - by gpumem_context_flush_deallocations(), and when the context is released.
 * A free that the driver refuses makes the flush return its error, and stays
 * queued (counted by gpumem_context_pending_deallocations()) to be retried
 * at the next flush; the context's final release tries twice, then leaves
 * such memory to the driver.
 * Between gpumem_defer_cleanup_begin() and the matching end, nothing is
 * freed (scopes nest); an allocation that fails there is reported as out of
 * memory without a flush.  The outermost end flushes if the limits are
 * exceeded.
 *
 * The variables are read when a context is created; a bad value makes the
 * creation fail with ::GPUMEM_ERROR_INVALID_ENVIRONMENT.
 */
#ifndef GPUMEM_CLEANUP_H
#define GPUMEM_CLEANUP_H

#include <stddef.h>
#include <stdint.h>
#include <gpumem/export.h>
#include <gpumem/status.h>
#include <gpumem/context.h>

GPUMEM_BEGIN_DECLS

/**
 * Sets the context's flush limits: more than @p max_count queued frees, or
 * more than @p max_ratio (0 to 1) of the device's total memory in queued
 * bytes, flushes the queue.  0 and 0.0 flush at every free.  If the queue is
 * over the new limits (and no defer_cleanup scope is open), it is flushed.
 * @param ctx the context, or NULL for the autoinit context.
 * @param max_count the most queued frees.
 * @param max_ratio the most queued bytes, as a fraction of the device's memory, 0 to 1.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_INVALID_VALUE (@p max_ratio), an autoinit failure, or a driver failure
 *        of the flush.
 */
GPUMEM_API gpumem_status gpumem_context_set_dealloc_limits(gpumem_context *ctx, size_t max_count,
                                                           double max_ratio);

/**
 * The context's flush limits.
 * @param ctx the context, or NULL for the autoinit context.
 * @param[out] max_count the most queued frees.
 * @param[out] max_ratio the most queued bytes, as a fraction.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, or an autoinit failure.
 */
GPUMEM_API gpumem_status gpumem_context_get_dealloc_limits(gpumem_context *ctx, size_t *max_count,
                                                           double *max_ratio);

/**
 * Does every queued free now (also inside a defer_cleanup scope: an explicit request).
 * @param ctx the context, or NULL for the autoinit context.
 * @return ::GPUMEM_OK; an autoinit failure, or a driver failure (the frees it refused stay queued).
 */
GPUMEM_API gpumem_status gpumem_context_flush_deallocations(gpumem_context *ctx);

/**
 * The frees queued now and their bytes (either pointer may be NULL).
 * @param ctx the context, or NULL for the autoinit context.
 * @param[out] count the queued frees, or NULL.
 * @param[out] bytes their bytes, or NULL.
 * @return ::GPUMEM_OK, or an autoinit failure.
 */
GPUMEM_API gpumem_status gpumem_context_pending_deallocations(gpumem_context *ctx, size_t *count,
                                                              uint64_t *bytes);

/**
 * numba's `with defer_cleanup():` begins: no memory of @p ctx is freed until the matching end.
 * @param ctx the context, or NULL for the autoinit context.
 * @return ::GPUMEM_OK, or an autoinit failure.
 */
GPUMEM_API gpumem_status gpumem_defer_cleanup_begin(gpumem_context *ctx);

/**
 * Ends a defer_cleanup scope; the outermost end flushes the queue if it is
 * over the limits.  An end without a begin is ::GPUMEM_ERROR_INVALID_STATE.
 * @param ctx the context, or NULL for the autoinit context.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_INVALID_STATE, an autoinit failure, or a driver failure of the flush.
 */
GPUMEM_API gpumem_status gpumem_defer_cleanup_end(gpumem_context *ctx);

GPUMEM_END_DECLS

#endif /* GPUMEM_CLEANUP_H */
