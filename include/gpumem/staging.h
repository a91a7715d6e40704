/**
 * @file gpumem/staging.h
 * @brief The staging engine: transfers of pageable or strided host memory
 *        through pinned slots, filled and drained by the library's worker
 *        threads.
 *
 * The driver moves pageable host memory through its own small staging
 * buffers, one thread, one chunk at a time, at a fraction of the link's
 * speed.  These transfers go through the staging engine instead:
 *  - a contiguous transfer between pageable host memory (not pinned,
 *    mapped, managed or registered) and device memory of at least
 *    `min_bytes` (gpumem_debug_last_copy_path() reports
 *    ::GPUMEM_COPY_PATH_STAGED);
 *  - every copy whose host side is strided, pageable or page-locked
 *    (::GPUMEM_COPY_PATH_CPU_PACK, ::GPUMEM_COPY_PATH_CPU_DEVICE_PACK): the
 *    threads pack the host elements straight into the pinned slots, or
 *    unpack them out of the slots, in the same pass as the transfer; when
 *    the device side is strided too, the slots move a packed run into
 *    device memory that the pack kernels unpack (or the other way);
 *  - a copy of at least `min_bytes` between a contiguous pageable host side
 *    and a strided device side (::GPUMEM_COPY_PATH_DEVICE_PACK).
 * With a strided device side the packed run goes through two buffers of
 * device scratch that the pack kernels fill or empty in turns, while the
 * engine's threads move the open buffers' bytes, as one transfer (the
 * kernels of the next buffer run while this one crosses).  Each buffer
 * holds the staging window, `threads` x `chunk_bytes` (at most 32 MiB; at
 * least the copy engine's scratch chunk, GPUMEM_COPY_SCRATCH_CHUNK), so
 * that every thread finds a slot's worth to move; when the device has no
 * room for that, the buffers are the scratch chunk.
 *  - a copy between device arrays of two devices without peer access
 *    (::GPUMEM_COPY_PATH_PEER_STAGED, gpumem/peer.h): one thread moves it
 *    through one lane's slots (a worker's of the source device's node, or
 *    the caller's), each slot downloaded from the source's device and
 *    uploaded to the destination's, one slot's download overlapping
 *    another's upload, ordered by events on the two devices' streams.
 * Smaller contiguous transfers, and transfers of a contiguous page-locked
 * host side, are one driver call.
 *
 * @par How it works
 * The library has one pool of worker threads (made on first use, up to
 * `threads` - 1 of them, never one per call; on a machine with several
 * NUMA nodes, one pool per node, whose threads run on the node's CPUs),
 * named `gpumem-work<N>`, with the asynchronous signals blocked so that
 * they reach the program's own threads.
 * Each worker owns, per context, `depth` pinned slots of `chunk_bytes`
 * (made on its first staged transfer in that context, from the context's
 * allocator, on its NUMA node), small enough to stay in the core's cache.
 * A transfer is cut into chunks; the calling thread and up to `threads` - 1
 * workers each take the next chunk, fill a slot with it (a memcpy or a
 * pack), queue the slot's transfer on the copy's stream, record the slot's
 * event, and take the next chunk, refilling a slot once its event has
 * completed (a download queues the transfer into the slot first, then
 * drains it).  There is no barrier between chunks, only one wait for the
 * whole transfer.  The first and the last chunks of a transfer are small
 * (`chunk_bytes` / `threads`, at least 64 KiB) and they grow to
 * `chunk_bytes` (linearly in their index): the link starts after a small
 * fill and the threads fall out of step, so that the link is fed from the
 * first chunk to the last.  A worker that finishes a task polls for the
 * next for about 100 us before it sleeps (on machines of 4 CPUs or more),
 * and so does a caller waiting for the workers, so that copies that
 * follow each other do not wait for threads to wake up.
 * Any number of copies, from any threads and in any contexts, use the
 * engine at once, sharing the workers: a copy never falls back to the
 * driver's call because another one is running.  On a machine with several
 * NUMA nodes the device's node comes from CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID
 * (CUDA 12.2), else from the PCI device's numa_node in sysfs; there only
 * the node's workers touch the slots, and the calling thread waits.
 *
 * @par Asynchronous copies
 * An upload on a stream returns once every byte has left the source (the
 * source may be reused at once, as with the driver's own pageable copies);
 * the last chunks may still be on their way to the device, in stream order.
 * A download into pageable memory on a stream does not wait: it is queued
 * through a pinned bounce block, in slabs of 1 to 8 MiB, each followed by
 * a host function that hands its bytes to the workers, who land them in
 * the destination while later slabs are still on the link; a last host
 * function waits until every byte has landed, so work queued later on the
 * stream, and a synchronization of it, see them (numba#5130;
 * gpumem_array_copy()).  The engine keeps up to four bounce blocks per
 * context for reuse (at most 1 GiB in all).
 *
 * @par Memory it holds
 * Up to `threads` x `depth` x `chunk_bytes` of page-locked memory per
 * context that staged a copy (with the defaults on a 16-CPU machine, 48
 * MiB), and the kept bounce blocks.  gpumem_clear_context_caches() frees
 * the slots no copy is using and the kept bounce blocks of every context;
 * the context's final release frees them all.  Their page-locked memory
 * goes through the context's deferred frees, like every free.  A copy
 * that cannot have its slots fails with ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY.
 *
 * @par Failure
 * A staged transfer that fails returns the first error of any of its
 * threads (with its message); chunks that arrived stay written, so a
 * failing staged copy can leave its destination partly written.
 *
 * Settings are process-wide, read from the environment at the first use
 * (`GPUMEM_STAGING_THREADS`, `GPUMEM_STAGING_CHUNK`, `GPUMEM_STAGING_DEPTH`,
 * `GPUMEM_STAGING_MIN_BYTES`: doc/environment.md) and changed by
 * gpumem_staging_set(); slots made for other settings are made again at
 * their next use, and the pool grows (never shrinks) to new `threads`.
 * Added in GPUMEM_1.1.  The struct keeps its layout; since the engine has
 * one pool of workers with slots per thread (NEWS), `threads` counts the
 * threads of one transfer, `chunk_bytes` is a slot and `depth` the slots
 * per thread, where they were the threads, buffer size and buffers of one
 * ring per context.
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
    unsigned threads;     /**< threads that work on one transfer, the calling thread included, 1 to 64 (default:
                               three quarters of the CPUs, at least 1, at most 16: with as many threads as CPUs the
                               driver's own threads find none, measured, bench/RESULTS.md); the worker pool has
                               threads - 1 */
    size_t chunk_bytes;   /**< bytes per pinned slot, the largest chunk, 64 KiB to 1 GiB (default 2 MiB: a slot
                               stays in a core's cache); the first and last chunks of a transfer are smaller */
    unsigned depth;       /**< pinned slots per thread and context, 2 to 64 (default 2) */
    size_t min_bytes;     /**< contiguous pageable transfers of at least this many bytes are staged (default
                               4 MiB: measured, bench/RESULTS.md); strided host sides always are */
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
