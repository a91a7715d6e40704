/**
 * @file gpumem/staging.h
 * @brief The staging engine: transfers of pageable host memory through
 *        pinned bounce buffers, filled and drained by several host threads.
 *
 * The driver moves pageable host memory through its own small staging
 * buffers, one thread, one chunk at a time, at a fraction of the link's
 * speed.  A contiguous transfer between pageable host memory (not pinned,
 * mapped, managed or registered) and device memory of at least
 * `min_bytes` goes through the context's staging engine instead: a ring of
 * `depth` pinned buffers of `chunk_bytes` each, made on first use and
 * reused by every later copy in the context, while `threads` host threads
 * copy chunks between the pageable memory and the buffers and the copy
 * engine moves earlier chunks over the link.  gpumem_debug_last_copy_path()
 * reports ::GPUMEM_COPY_PATH_STAGED.  Smaller transfers, and transfers of a
 * page-locked host side, are one driver call.  One copy at a time uses a
 * context's ring; a copy that finds it busy uses the driver's call.
 *
 * @par Asynchronous copies
 * An upload on a stream returns once every byte has left the source (the
 * source may be reused at once, as with the driver's own pageable copies);
 * the last chunks may still be on their way to the device, in stream order.
 * A download into pageable memory on a stream does not use the ring: it is
 * queued through a pinned bounce block and a host function on the stream
 * (numba#5130; gpumem_array_copy()).  The engine keeps up to four such
 * blocks per context for reuse (at most 1 GiB in all), freed with the ring.
 *
 * The ring is freed with the context's other cached values: at the
 * context's final release or at gpumem_clear_context_caches().
 *
 * Settings are process-wide, read from the environment at the first use
 * (`GPUMEM_STAGING_THREADS`, `GPUMEM_STAGING_CHUNK`, `GPUMEM_STAGING_DEPTH`,
 * `GPUMEM_STAGING_MIN_BYTES`: doc/environment.md) and changed by
 * gpumem_staging_set(); a context's ring takes new settings at its next
 * use.  Added in GPUMEM_1.1.
 */
#ifndef GPUMEM_STAGING_H
#define GPUMEM_STAGING_H

#include <stddef.h>
#include <gpumem/export.h>
#include <gpumem/status.h>

GPUMEM_BEGIN_DECLS

/** The staging engine's settings. */
typedef struct gpumem_staging_settings {
    size_t size;          /**< sizeof(gpumem_staging_settings): set it before a call */
    unsigned threads;     /**< host threads copying chunks, 1 to 64 (default: the CPUs, at most 8) */
    size_t chunk_bytes;   /**< bytes per pinned buffer, 64 KiB to 1 GiB (default 8 MiB); a transfer of less than
                               depth chunks moves in depth smaller chunks (at least 256 KiB), so copying and
                               moving overlap */
    unsigned depth;       /**< pinned buffers per context, 2 to 64 (default 4) */
    size_t min_bytes;     /**< transfers of at least this many bytes are staged (default 4 MiB: measured, bench/RESULTS.md) */
} gpumem_staging_settings;

/**
 * The current settings.  ::GPUMEM_ERROR_INVALID_ENVIRONMENT when a
 * `GPUMEM_STAGING_*` variable has a bad value (the message names it);
 * ::GPUMEM_ERROR_INVALID_VALUE when @p settings->size is not the size of
 * the struct.
 * @param[in,out] settings the settings; its @c size set by the caller.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE,
 *        ::GPUMEM_ERROR_INVALID_ENVIRONMENT.
 */
GPUMEM_API gpumem_status gpumem_staging_get(gpumem_staging_settings *settings);

/**
 * Replaces the settings.  A value out of its range is
 * ::GPUMEM_ERROR_INVALID_VALUE naming the field, and nothing changes.
 * @param[in] settings the new settings; its @c size set by the caller.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE.
 */
GPUMEM_API gpumem_status gpumem_staging_set(const gpumem_staging_settings *settings);

GPUMEM_END_DECLS

#endif /* GPUMEM_STAGING_H */
