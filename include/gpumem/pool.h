/**
 * @file gpumem/pool.h
 * @brief Memory pools: pycuda.tools' DeviceMemoryPool, PooledDeviceAllocation,
 *        PageLockedAllocator and PageLockedMemoryPool.
 *
 * A pool keeps the blocks its users free and hands them out again, so that
 * a program that allocates and frees the same sizes over and over pays the
 * driver (cuMemAlloc, cuMemHostAlloc) once per block instead of once per
 * allocation.  Where its memory comes from is its source
 * (::gpumem_pool_source, set through gpumem_pool_create_with_props()):
 * cuMemAlloc blocks by default, or a virtual-memory reservation whose freed
 * blocks merge, so that a program whose sizes drift does not strand memory.  A ::gpumem_pool holds device memory of one context; a
 * ::gpumem_host_pool holds page-locked host memory.  Both hand out
 * ::gpumem_allocation handles, freed with gpumem_allocation_free().
 *
 * @par Size classes
 * A request of @c size bytes takes a block of its size class, which
 * gpumem_pool_block_size() gives: sizes up to 8 KiB round up to a multiple
 * of 256 bytes; above that there are 16 classes per power of two (a block
 * for 2^k < size <= 2^(k+1) is a multiple of 2^(k-4)).  The padding is
 * therefore at most 255 bytes for sizes up to 4 KiB and less than 1/16
 * (6.25%) of the size above, pycuda's bound.  (A
 * ::GPUMEM_POOL_SOURCE_VIRTUAL pool takes blocks above 1 MiB at their size
 * rounded up to 512 bytes.)  gpumem_allocation_size() gives the size asked
 * for (pycuda's len()), not the block's.  A size of 0
 * is a valid empty allocation: pointer 0, no block, no driver call (like
 * CuPy; a zero-element array needs no memory).  Sizes above half the
 * address space (2^63 bytes on 64-bit systems) are ::GPUMEM_ERROR_OVERFLOW.
 *
 * @par Threads
 * Every function may be called from any thread.  Allocation and free are
 * O(1) on a hit: each thread keeps a small cache per pool (8 blocks per
 * size class up to 1 MiB, 16 MiB in all) in front of the pool's shared
 * store, so hits from different threads do not contend on a lock.  The
 * shared store, which holds larger blocks and the caches' overflow, is
 * split into stripes, as many as the machine has cores (4 to 16); each
 * thread is given one, round robin, and allocates from it first, so that
 * many threads allocating and freeing at once do not wait for each other
 * either.  A
 * block freed by one thread may be reused by another.  The caches belong to
 * the pool: gpumem_pool_free_held(), gpumem_pool_stop_holding(),
 * gpumem_pool_destroy() and the out-of-memory ladder empty every thread's
 * cache, not only the caller's; a thread that exits hands its cache back to
 * the pool.  ::GPUMEM_POOL_NO_THREAD_CACHE turns the caches off.
 *
 * @par Streams
 * gpumem_allocation_free() takes the stream on which work using the block
 * may still be queued (NULL: none; the caller has synchronized or used the
 * memory synchronously).  Such a block is reused at once by an allocation
 * on the same stream, whose later work is ordered after the pending work.
 * It is reused for an allocation on another stream, or with a NULL stream,
 * only once an event that the free recorded on its stream has completed;
 * the pool queries such events (it never waits for them) and allocates a
 * fresh block when none has.  Frees with a stream record one event (pooled,
 * timing disabled); while the pool holds, frees with NULL and allocations
 * served from held blocks make no driver call at all.  Host blocks are
 * written by the CPU, so a host block freed with a stream is reused only
 * once its event has completed, whatever the stream.
 *
 * @par Out of memory
 * When the driver refuses a block, the pool gives back every block it
 * holds (in every thread's cache), lets the library flush the context's
 * deferred deallocations (gpumem/cleanup.h), and retries once; only then
 * does the allocation fail, with ::GPUMEM_ERROR_OUT_OF_MEMORY (or
 * ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY for a host pool) and a message that
 * says how much was asked for, what the device and the process hold, what
 * the ladder released, and the cause (gpumem/memory.h).  The context's
 * out-of-memory callback, if set, runs first.  gpumem_pool_stats() counts
 * the retries.
 *
 * @par Handles
 * A ::gpumem_allocation is generation-checked: freeing it makes the handle
 * dead, and every later use of a dead handle (a second free, its pointer,
 * its size) is ::GPUMEM_ERROR_INVALID_STATE, even after its block has been
 * handed out again under a new handle.  Of two threads that free one
 * handle at once, exactly one succeeds.  (Handles are opaque values, not
 * addresses; the check is exact unless one block was handed out again 2^31
 * times between the two frees, 2^9 times on 32-bit systems.)
 *
 * @par Lifetime
 * A pool holds a reference to its context.  gpumem_pool_destroy() gives
 * back every held block at once; allocations that are still live stay
 * valid, and their frees go straight to the driver.  The pool's memory goes
 * when the last of them is freed, and with it the pool's reference to its
 * context.  Blocks that the library itself keeps for reuse (the copy
 * engine's device scratch of a context whose pool it was, gpumem/array.h)
 * are given back by gpumem_pool_destroy() or, when a copy is using one,
 * when that copy ends: they never keep a destroyed pool, or its context,
 * alive.  The pool handle itself is dead after
 * gpumem_pool_destroy(): every function given it afterwards, a second
 * destroy included, returns ::GPUMEM_ERROR_INVALID_STATE, and so does an
 * allocation of a context whose pool (gpumem_context_set_pool()) it was:
 * set another pool, or NULL, first.  (gpumem/status.h says how far the
 * check reaches.)
 *
 * @par Example
 * pycuda's `pool.allocate(n)`, used by work on a stream:
 * @code{.c}
 * #include <stdio.h>
 * #include <gpumem.h>
 *
 * int main(void)
 * {
 *     gpumem_stream *stream = NULL;
 *     gpumem_pool *pool = NULL;
 *     gpumem_allocation *a = NULL;
 *     uint64_t dptr = 0;
 *     gpumem_status st = gpumem_stream_create(NULL, 0, &stream);
 *     if (st == GPUMEM_OK)
 *         st = gpumem_pool_create(NULL, 0, &pool);
 *     if (st == GPUMEM_OK)
 *         st = gpumem_pool_allocate(pool, 1 << 20, stream, &a);
 *     if (st == GPUMEM_OK)
 *         st = gpumem_allocation_pointer(a, &dptr); // int(a) in pycuda
 *     // ... queue work on stream that uses the device address dptr ...
 *     if (a != NULL) {
 *         gpumem_status fst = gpumem_allocation_free(a, stream); // reusable at once by work on stream
 *         st = st != GPUMEM_OK ? st : fst;
 *     }
 *     if (st == GPUMEM_OK)
 *         printf("%s\n", dptr != 0 ? "allocated and freed" : "no address"); // prints: allocated and freed
 *     else
 *         fprintf(stderr, "gpumem: %s\n", gpumem_last_error());
 *     gpumem_pool_destroy(pool);
 *     gpumem_stream_destroy(stream);
 *     return st == GPUMEM_OK ? 0 : 1;
 * }
 * @endcode
 */
#ifndef GPUMEM_POOL_H
#define GPUMEM_POOL_H

#include <stddef.h>
#include <stdint.h>
#include <gpumem/export.h>
#include <gpumem/status.h>
#include <gpumem/context.h>
#include <gpumem/stream.h>
#include <gpumem/array.h>
#include <gpumem/dtype.h>

GPUMEM_BEGIN_DECLS

/** A pool of device memory of one context (pycuda's DeviceMemoryPool). */
typedef struct gpumem_pool gpumem_pool;

/** A pool of page-locked host memory (pycuda's PageLockedMemoryPool). */
typedef struct gpumem_host_pool gpumem_host_pool;

/** One allocation from a pool (pycuda's PooledDeviceAllocation, PooledHostAllocation). */
typedef struct gpumem_allocation gpumem_allocation;

/**
 * Flag of gpumem_pool_create() and gpumem_host_pool_create(): no per-thread
 * caches; every allocation and free goes through the shared store.
 */
#define GPUMEM_POOL_NO_THREAD_CACHE 0x100

/** Flag of gpumem_host_pool_create(): page-locked for every context (CU_MEMHOSTALLOC_PORTABLE). */
#define GPUMEM_HOST_ALLOC_PORTABLE 0x1
/** Flag of gpumem_host_pool_create(): mapped into the device's address space (CU_MEMHOSTALLOC_DEVICEMAP). */
#define GPUMEM_HOST_ALLOC_DEVICEMAP 0x2
/**
 * Flag of gpumem_host_pool_create(): write-combined memory: fast host writes
 * and device reads, slow host reads (CU_MEMHOSTALLOC_WRITECOMBINED).
 */
#define GPUMEM_HOST_ALLOC_WRITECOMBINED 0x4

/**
 * A pool's counters, filled by gpumem_pool_stats() and
 * gpumem_host_pool_stats().  Set @c size to sizeof(struct gpumem_pool_stats)
 * before the call: later versions only append fields, and fill only those
 * that fit in @c size bytes.
 *
 * Bytes are block bytes (size classes), except @c active_requested_bytes.
 * The counts are exact when no other thread uses the pool during the call.
 */
struct gpumem_pool_stats {
    size_t size;                     /**< set by the caller: sizeof(struct gpumem_pool_stats) */
    uint64_t held_blocks;            /**< free blocks the pool keeps for reuse (pycuda's held_blocks) */
    uint64_t held_bytes;             /**< their bytes */
    uint64_t active_blocks;          /**< blocks handed out and not yet freed (pycuda's active_blocks) */
    uint64_t active_bytes;           /**< their bytes */
    uint64_t active_requested_bytes; /**< the sizes asked for by the active allocations */
    /**
     * The highest active_bytes seen.  The pool samples it whenever it asks
     * the driver for a new block and at every stats call, so that
     * allocations served from held blocks, in any thread, stay free of
     * pool-wide counters; a peak reached by such allocations alone between
     * two samples can be missed, and while other threads allocate and free,
     * a sample may count a block in flight.
     */
    uint64_t peak_active_bytes;
    uint64_t hits;                   /**< allocations served from held blocks */
    uint64_t misses;                 /**< allocations that asked the driver for a new block */
    uint64_t oom_retries;            /**< times the driver ran out of memory, and the pool released its blocks and retried */
    uint64_t driver_frees;           /**< blocks given back to the driver */
    /**
     * The bytes the pool holds from the driver: for a pool of driver
     * allocations (cuMemAlloc, cuMemHostAlloc), active_bytes + held_bytes;
     * for a virtual-memory pool (::GPUMEM_POOL_SOURCE_VIRTUAL), its mapped
     * physical memory, under its blocks in use and held and between them.
     * Added in GPUMEM_1.1.
     */
    uint64_t source_bytes;
    /** The address space a virtual-memory pool reserved (0 for other pools).  Added in GPUMEM_1.1. */
    uint64_t reserved_bytes;
};

/* ---- pools from properties ------------------------------------------------------ */

/**
 * Where a pool's memory comes from: struct gpumem_pool_props' @c source.
 * Added in GPUMEM_1.1.
 */
typedef enum gpumem_pool_source {
    /** Device memory, one cuMemAlloc per block: the pool of gpumem_pool_create(). */
    GPUMEM_POOL_SOURCE_DEVICE = 0,
    /** Page-locked host memory, one cuMemHostAlloc per block: the pool of gpumem_host_pool_create(). */
    GPUMEM_POOL_SOURCE_PINNED = 1,
    /**
     * Device memory through the driver's virtual memory management: the
     * pool reserves one range of address space (cuMemAddressReserve) and
     * maps physical memory into it on demand (cuMemCreate, cuMemMap,
     * cuMemSetAccess), in chunks of the allocation granularity
     * (cuMemGetAllocationGranularity; 2 MiB on current GPUs).  Blocks are
     * ranges of the reservation: a block given back merges with its free
     * neighbours, whichever chunk they came from, so memory freed in one
     * size serves later requests of any other size, and what the pool holds
     * stays close to what is in use even when the sizes drift (PyTorch's
     * expandable segments).  Each granule is one chunk of physical memory,
     * mapped with one map call; before the pool maps more, it unmaps as
     * many idle granules elsewhere, so what it maps follows what its blocks
     * need.  Blocks above 1 MiB are taken at their size rounded up to 512
     * bytes, not at their size class's.  Blocks of 1 MiB and less come from a separate part of the
     * reservation, so that small long-lived blocks do not pin the large
     * ones' free ranges apart.  The thread caches and the stream-ordered
     * reuse (see Threads and Streams above) are the same as for the other
     * sources.  When no held block of the size class is free, the pool
     * first gives its held blocks back to the reservation, where they
     * merge, and maps more only if that does not make room.
     */
    GPUMEM_POOL_SOURCE_VIRTUAL = 2,
    /**
     * Device memory from the driver's own stream-ordered pool: the pool
     * makes one (cuMemPoolCreate, its release threshold the props' @c
     * release_threshold, its maximum @c maximum) and takes each block with
     * cuMemAllocFromPoolAsync on the legacy stream, waited for, and gives it
     * back with cuMemFreeAsync.  The pool's own caching works on top, as for
     * the other sources; after gpumem_pool_stop_holding() every free goes
     * to the driver's pool, which then does the caching (cudaMallocAsync's).
     * @c source_bytes of gpumem_pool_stats() is the driver pool's reserved
     * memory.  Not simulated: on the simulator the create call fails with
     * ::GPUMEM_ERROR_NOT_SIMULATED.
     */
    GPUMEM_POOL_SOURCE_ASYNC = 3
} gpumem_pool_source;

/** struct gpumem_pool_props' @c handle_type: the pool's memory cannot be exported.  Added in GPUMEM_1.1. */
#define GPUMEM_POOL_HANDLE_NONE 0
/**
 * struct gpumem_pool_props' @c handle_type: the physical chunks of a
 * ::GPUMEM_POOL_SOURCE_VIRTUAL pool, or the driver's pool of a
 * ::GPUMEM_POOL_SOURCE_ASYNC one (its @c handleTypes), are made exportable
 * as POSIX file descriptors (CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
 * which gpumem_pool_ipc_send() sends to another process (gpumem/pool_ipc.h).
 * Added in GPUMEM_1.1.
 */
#define GPUMEM_POOL_HANDLE_POSIX_FD 1

/**
 * A pool's properties, given to gpumem_pool_create_with_props() and
 * gpumem_host_pool_create_with_props().  Start from
 * ::GPUMEM_POOL_PROPS_INIT, which sets @c size and every default, then
 * change the fields you need.  Later versions only append fields; a
 * struct longer than this version's must hold zeros past its end.  Added
 * in GPUMEM_1.1.
 */
struct gpumem_pool_props {
    size_t size;     /**< sizeof(struct gpumem_pool_props) */
    int source;      /**< a ::gpumem_pool_source; default ::GPUMEM_POOL_SOURCE_DEVICE */
    int device;      /**< the device of the pool's memory: -1 (the default) for the context's, or the context's ordinal */
    int numa_node;   /**< the NUMA node of a host pool's pages: -1 (the default; any other value is not supported yet) */
    unsigned flags;  /**< ::GPUMEM_POOL_NO_THREAD_CACHE; for a host pool also the ::GPUMEM_HOST_ALLOC_PORTABLE flags */
    /**
     * ::GPUMEM_POOL_SOURCE_VIRTUAL: the fewest bytes one growth maps, when
     * the free range that grows is that long (rounded up to the
     * granularity); 0 (the default): the granularity.  Other sources: 0.
     */
    uint64_t growth_step;
    /**
     * ::GPUMEM_POOL_SOURCE_VIRTUAL: the most bytes the pool maps at once,
     * and so the largest block; the pool reserves this much address space,
     * and an eighth more for its small blocks.  0 (the default): the
     * device's total memory.  ::GPUMEM_POOL_SOURCE_ASYNC: the driver pool's
     * maxSize (0: the driver's default).  At most 2^50.  Other sources: 0.
     */
    uint64_t maximum;
    /**
     * ::GPUMEM_POOL_SOURCE_VIRTUAL: the idle mapped bytes (chunks under no
     * block in use or held) that the pool keeps when it gives held blocks
     * back to make room; past it, idle chunks are unmapped and released to
     * the driver.  UINT64_MAX (the default) keeps them until
     * gpumem_pool_trim(), gpumem_pool_free_held() or the out-of-memory
     * ladder; 0 releases every idle chunk.  ::GPUMEM_POOL_SOURCE_ASYNC:
     * the driver pool's CU_MEMPOOL_ATTR_RELEASE_THRESHOLD.  Other sources:
     * UINT64_MAX.
     */
    uint64_t release_threshold;
    /** ::GPUMEM_POOL_HANDLE_NONE (the default) or ::GPUMEM_POOL_HANDLE_POSIX_FD (virtual memory and the driver's pool). */
    int handle_type;
};

/**
 * The defaults of struct gpumem_pool_props: a device pool like
 * gpumem_pool_create()'s.  `struct gpumem_pool_props props = GPUMEM_POOL_PROPS_INIT;`
 * Added in GPUMEM_1.1.
 */
#define GPUMEM_POOL_PROPS_INIT \
    {sizeof(struct gpumem_pool_props), GPUMEM_POOL_SOURCE_DEVICE, -1, -1, 0u, 0u, 0u, UINT64_MAX, GPUMEM_POOL_HANDLE_NONE}

/**
 * A new, empty device pool of @p ctx (NULL: the autoinit context) with
 * the properties @p props: of cuMemAlloc blocks
 * (::GPUMEM_POOL_SOURCE_DEVICE, as gpumem_pool_create() makes it) or over
 * a virtual-memory reservation (::GPUMEM_POOL_SOURCE_VIRTUAL).  Every
 * other device pool call works on it as on any pool.  The pool holds a
 * reference to the context.  Added in GPUMEM_1.1.
 *
 * @par Example
 * Sizes that drift: a virtual-memory pool merges what was freed:
 * @code{.c}
 * #include <stdio.h>
 * #include <gpumem.h>
 *
 * int main(void)
 * {
 *     struct gpumem_pool_props props = GPUMEM_POOL_PROPS_INIT;
 *     props.source = GPUMEM_POOL_SOURCE_VIRTUAL;
 *     gpumem_pool *pool = NULL;
 *     gpumem_status st = gpumem_pool_create_with_props(NULL, &props, &pool);
 *     for (int round = 0; round < 4 && st == GPUMEM_OK; round++) {
 *         gpumem_allocation *a[4] = {NULL, NULL, NULL, NULL};
 *         for (int i = 0; i < 4 && st == GPUMEM_OK; i++)
 *             st = gpumem_pool_allocate(pool, (size_t)(16 + round) << 20, NULL, &a[i]); // (16 + round) MiB
 *         for (int i = 0; i < 4; i++)
 *             if (a[i] != NULL)
 *                 gpumem_allocation_free(a[i], NULL);
 *     }
 *     struct gpumem_pool_stats stats = {.size = sizeof stats};
 *     if (st == GPUMEM_OK)
 *         st = gpumem_pool_stats(pool, &stats);
 *     if (st == GPUMEM_OK)
 *         printf("%llu MiB mapped for 76 MiB at most in use\n",
 *                (unsigned long long)(stats.source_bytes >> 20)); // prints: 76 MiB mapped for 76 MiB at most in use
 *     else
 *         fprintf(stderr, "gpumem: %s\n", gpumem_last_error());
 *     gpumem_pool_destroy(pool);
 *     return st == GPUMEM_OK ? 0 : 1;
 * }
 * @endcode
 * @param ctx the context, or NULL for the autoinit context.
 * @param[in] props the properties (see struct gpumem_pool_props).
 * @param[out] pool the new pool.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT; ::GPUMEM_ERROR_INVALID_VALUE (@c size smaller than this
 *        version's struct, or nonzero bytes past it; an unknown @c source or one of host memory; unknown
 *        @c flags; @c numa_node not -1; @c growth_step set for a source other than virtual memory; @c maximum or
 *        @c release_threshold set for a source other than virtual memory and the driver's pool; an unknown
 *        @c handle_type, or ::GPUMEM_POOL_HANDLE_POSIX_FD for a source other than virtual memory and the driver's
 *        pool; @c maximum or
 *        @c growth_step above 2^50); ::GPUMEM_ERROR_CONTEXT_MISMATCH (@c device is not the context's);
 *        ::GPUMEM_ERROR_NOT_SUPPORTED (the driver has no virtual memory management, or no stream-ordered
 *        pools); ::GPUMEM_ERROR_NOT_SIMULATED (::GPUMEM_POOL_SOURCE_ASYNC on the simulator);
 *        ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY; an autoinit failure; or a driver failure (virtual memory: the
 *        granularity query, the device's memory size, the address reservation; the driver's pool: its creation
 *        and release threshold).
 */
GPUMEM_API gpumem_status gpumem_pool_create_with_props(gpumem_context *ctx, const struct gpumem_pool_props *props,
                                                       gpumem_pool **pool);

/**
 * Gives every held block back, as gpumem_pool_free_held() does; a
 * ::GPUMEM_POOL_SOURCE_VIRTUAL pool then unmaps and releases its idle
 * chunks (those under no block in use) until at most @p keep_bytes of
 * them stay mapped, the highest addresses first; a
 * ::GPUMEM_POOL_SOURCE_ASYNC pool waits for its context's work and trims
 * the driver's pool to @p keep_bytes (cuMemPoolTrimTo).  For other pools
 * @p keep_bytes is not used.  The pool
 * keeps holding what is freed afterwards.  Added in GPUMEM_1.1.
 * @param pool the pool.
 * @param keep_bytes the idle mapped bytes a virtual-memory pool may keep.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE (a pool of the other kind),
 *        ::GPUMEM_ERROR_INVALID_STATE (destroyed), or the first driver failure.
 */
GPUMEM_API gpumem_status gpumem_pool_trim(gpumem_pool *pool, uint64_t keep_bytes);

/* ---- device pools ---------------------------------------------------------------- */

/**
 * pycuda's DeviceMemoryPool(): a new, empty pool of device memory of
 * @p ctx (NULL: the autoinit context).  @p flags: 0 or
 * ::GPUMEM_POOL_NO_THREAD_CACHE.  The pool holds a reference to the context.
 *
 * @par Example
 * A context whose arrays come from a pool: three arrays made and released in turn share one block:
 * @code{.c}
 * #include <stdio.h>
 * #include <gpumem.h>
 *
 * int main(void)
 * {
 *     gpumem_context *ctx = NULL;
 *     gpumem_pool *pool = NULL;
 *     const int64_t n = 1 << 16;
 *     gpumem_status st = gpumem_context_create_default(&ctx);
 *     if (st == GPUMEM_OK)
 *         st = gpumem_pool_create(ctx, 0, &pool);
 *     if (st == GPUMEM_OK)
 *         st = gpumem_context_set_pool(ctx, pool); // the context's arrays now come from the pool
 *     for (int i = 0; i < 3 && st == GPUMEM_OK; i++) {
 *         gpumem_array *a = NULL;
 *         st = gpumem_device_array(ctx, 1, &n, NULL, gpumem_dtype_builtin(GPUMEM_FLOAT32), 'C', NULL, &a);
 *         if (st == GPUMEM_OK)
 *             st = gpumem_array_release(a); // its block goes back to the pool, not to the driver
 *     }
 *     struct gpumem_pool_stats stats = {.size = sizeof stats};
 *     if (st == GPUMEM_OK)
 *         st = gpumem_pool_stats(pool, &stats);
 *     if (st == GPUMEM_OK)
 *         printf("%llu from the driver, %llu reused\n", (unsigned long long)stats.misses,
 *                (unsigned long long)stats.hits); // prints: 1 from the driver, 2 reused
 *     else
 *         fprintf(stderr, "gpumem: %s\n", gpumem_last_error());
 *     gpumem_context_set_pool(ctx, NULL); // before the pool goes
 *     gpumem_pool_destroy(pool);
 *     gpumem_context_release(ctx);
 *     return st == GPUMEM_OK ? 0 : 1;
 * }
 * @endcode
 * @param ctx the context, or NULL for the autoinit context.
 * @param flags 0 or ::GPUMEM_POOL_NO_THREAD_CACHE.
 * @param[out] pool the new pool.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE (unknown flags),
 *        ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY, or an autoinit failure.
 */
GPUMEM_API gpumem_status gpumem_pool_create(gpumem_context *ctx, unsigned flags, gpumem_pool **pool);

/**
 * Gives back every held block, and the blocks of the pool that the library
 * kept for reuse (copy scratch), and ends the handle.  Allocations still live
 * stay valid; freeing them later gives their blocks to the driver, and the
 * last one ends the pool (see Lifetime above).  NULL is a no-op.  The status
 * is the first failure of giving blocks back, or of ending the context when
 * the pool held its last reference; the pool is destroyed either way.
 * Destroying it again is ::GPUMEM_ERROR_INVALID_STATE.
 * @param pool the pool, or NULL.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_INVALID_VALUE (a pool of the other kind, or not a pool),
 *        ::GPUMEM_ERROR_INVALID_STATE (destroyed already), or a driver failure giving blocks back.
 */
GPUMEM_API gpumem_status gpumem_pool_destroy(gpumem_pool *pool);

/**
 * pycuda's DeviceMemoryPool.allocate(size): a block of at least @p size
 * bytes, usable at once by work on @p stream (NULL: by synchronous use and
 * any stream).  A held block of the size class is reused when one is free
 * for that stream (see Streams above); otherwise the driver is asked, with
 * the out-of-memory ladder above.  @p size 0 gives an empty allocation.
 * @param pool the pool.
 * @param size the bytes.
 * @param stream the stream that uses the block, or NULL.
 * @param[out] alloc the allocation; free it with gpumem_allocation_free().
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE (a pool of the other kind),
 *        ::GPUMEM_ERROR_CONTEXT_MISMATCH (@p stream), ::GPUMEM_ERROR_OVERFLOW, ::GPUMEM_ERROR_OUT_OF_MEMORY,
 *        ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY, or a driver failure.
 */
GPUMEM_API gpumem_status gpumem_pool_allocate(gpumem_pool *pool, size_t size, gpumem_stream *stream,
                                              gpumem_allocation **alloc);

/**
 * The block size (size class) that an allocation of @p size bytes takes; 0 for @p size 0.
 * @param size the bytes.
 * @param[out] block_size the block size.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_OVERFLOW.
 */
GPUMEM_API gpumem_status gpumem_pool_block_size(size_t size, size_t *block_size);

/**
 * The pool's context (borrowed).
 * @param pool the pool.
 * @param[out] ctx its context.
 * @return ::GPUMEM_OK, or ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE (a pool of the other
 *        kind).
 */
GPUMEM_API gpumem_status gpumem_pool_context(const gpumem_pool *pool, gpumem_context **ctx);

/**
 * pycuda's held_blocks: free blocks the pool keeps, in every thread's cache and the shared store.
 * @param pool the pool.
 * @param[out] count the held blocks.
 * @return ::GPUMEM_OK, or ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE (a pool of the other
 *        kind).
 */
GPUMEM_API gpumem_status gpumem_pool_held_blocks(gpumem_pool *pool, uint64_t *count);

/**
 * pycuda's active_blocks: blocks handed out and not yet freed (empty allocations do not count).
 * @param pool the pool.
 * @param[out] count the active blocks.
 * @return ::GPUMEM_OK, or ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE (a pool of the other
 *        kind).
 */
GPUMEM_API gpumem_status gpumem_pool_active_blocks(gpumem_pool *pool, uint64_t *count);

/**
 * pycuda's free_held(): gives every held block back to the driver, from the
 * shared store and from every thread's cache, and destroys the pooled
 * events.  A held block whose free was recorded on a stream is given back
 * once that event has completed (this call waits for it).  The pool keeps
 * holding what is freed afterwards.
 * @param pool the pool.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE (a pool of the other kind),
 *        or the first driver failure.
 */
GPUMEM_API gpumem_status gpumem_pool_free_held(gpumem_pool *pool);

/**
 * pycuda's stop_holding(): gives back every held block (as
 * gpumem_pool_free_held()), and from now on every free goes straight to
 * the driver (after waiting for the work of the stream it names).  There is
 * no way back; create a new pool to pool again.
 * @param pool the pool.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE (a pool of the other kind),
 *        or the first driver failure.
 */
GPUMEM_API gpumem_status gpumem_pool_stop_holding(gpumem_pool *pool);

/**
 * Fills @p stats (whose @c size field the caller set) with the pool's counters.
 * @param pool the pool.
 * @param[in,out] stats the counters; its @c size set by the caller.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE (a pool of the other kind,
 *        @c size too small).
 */
GPUMEM_API gpumem_status gpumem_pool_stats(gpumem_pool *pool, struct gpumem_pool_stats *stats);

/* ---- allocations ----------------------------------------------------------------- */

/**
 * int(allocation): the address of the allocation's memory (a device
 * address; for a host pool, the host address as an integer); 0 for an
 * empty allocation.
 * @param alloc the allocation.
 * @param[out] pointer the address, or 0.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE (not an allocation handle),
 *        ::GPUMEM_ERROR_INVALID_STATE (freed).
 */
GPUMEM_API gpumem_status gpumem_allocation_pointer(const gpumem_allocation *alloc, uint64_t *pointer);

/**
 * The host address of an allocation of a host pool; ::GPUMEM_ERROR_INVALID_VALUE for device memory.
 * @param alloc the allocation.
 * @param[out] pointer the host address.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE (not an allocation handle,
 *        or device memory), ::GPUMEM_ERROR_INVALID_STATE (freed).
 */
GPUMEM_API gpumem_status gpumem_allocation_host_pointer(const gpumem_allocation *alloc, void **pointer);

/**
 * len(allocation): the size that was asked for (not the block's, see gpumem_pool_block_size()).
 * @param alloc the allocation.
 * @param[out] size the bytes asked for.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE (not an allocation handle),
 *        ::GPUMEM_ERROR_INVALID_STATE (freed).
 */
GPUMEM_API gpumem_status gpumem_allocation_size(const gpumem_allocation *alloc, size_t *size);

/**
 * allocation.free(): returns the block to its pool (or to the driver when
 * the pool does not hold, or was destroyed), and ends the handle.
 * @p stream: the stream on which work that uses the memory may still be
 * queued, or NULL when none is (see Streams above); it must belong to the
 * pool's context.  A second free of the same handle is
 * ::GPUMEM_ERROR_INVALID_STATE.  When recording the stream's event or giving
 * the block back fails, the status says so, and the handle is ended anyway
 * (the block goes to the driver rather than back into the pool).  The free
 * of a destroyed pool's last allocation ends the pool, and the context when
 * the pool held its last reference: a failure there is this call's.
 * @param alloc the allocation.
 * @param stream the stream still using it, or NULL.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE (not an allocation handle),
 *        ::GPUMEM_ERROR_INVALID_STATE, ::GPUMEM_ERROR_CONTEXT_MISMATCH, or a driver failure.
 */
GPUMEM_API gpumem_status gpumem_allocation_free(gpumem_allocation *alloc, gpumem_stream *stream);

/* ---- page-locked host pools ------------------------------------------------------ */

/**
 * pycuda's PageLockedMemoryPool(PageLockedAllocator(flags)): a new, empty
 * pool of page-locked host memory allocated by cuMemHostAlloc in @p ctx
 * (NULL: the autoinit context) with @p flags, any of
 * ::GPUMEM_HOST_ALLOC_PORTABLE, ::GPUMEM_HOST_ALLOC_DEVICEMAP and
 * ::GPUMEM_HOST_ALLOC_WRITECOMBINED, plus ::GPUMEM_POOL_NO_THREAD_CACHE.
 * @param ctx the context, or NULL for the autoinit context.
 * @param flags the allocation flags above.
 * @param[out] pool the new pool.
 * @return as gpumem_pool_create().
 */
GPUMEM_API gpumem_status gpumem_host_pool_create(gpumem_context *ctx, unsigned flags, gpumem_host_pool **pool);

/**
 * A new, empty page-locked host pool of @p ctx (NULL: the autoinit
 * context) with the properties @p props, whose @c source must be
 * ::GPUMEM_POOL_SOURCE_PINNED (@c flags may hold the
 * ::GPUMEM_HOST_ALLOC_PORTABLE flags too): the pool of
 * gpumem_host_pool_create(), made from the same struct as device pools.
 * Added in GPUMEM_1.1.
 * @param ctx the context, or NULL for the autoinit context.
 * @param[in] props the properties (see struct gpumem_pool_props).
 * @param[out] pool the new pool.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT; ::GPUMEM_ERROR_INVALID_VALUE (as
 *        gpumem_pool_create_with_props(), and a @c source other than ::GPUMEM_POOL_SOURCE_PINNED);
 *        ::GPUMEM_ERROR_NOT_SUPPORTED (@c numa_node not -1); ::GPUMEM_ERROR_CONTEXT_MISMATCH;
 *        ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY; or an autoinit failure.
 */
GPUMEM_API gpumem_status gpumem_host_pool_create_with_props(gpumem_context *ctx,
                                                            const struct gpumem_pool_props *props,
                                                            gpumem_host_pool **pool);

/**
 * As gpumem_pool_trim(), for a host pool: gives every held block back
 * (@p keep_bytes is not used by page-locked pools).  Added in GPUMEM_1.1.
 * @param pool the pool.
 * @param keep_bytes not used.
 * @return as gpumem_pool_trim().
 */
GPUMEM_API gpumem_status gpumem_host_pool_trim(gpumem_host_pool *pool, uint64_t keep_bytes);

/**
 * As gpumem_pool_destroy(), for a host pool.
 * @param pool the pool, or NULL.
 * @return as gpumem_pool_destroy().
 */
GPUMEM_API gpumem_status gpumem_host_pool_destroy(gpumem_host_pool *pool);

/**
 * A block of at least @p size bytes of page-locked host memory, ready for
 * the CPU (no work of any stream uses it).  gpumem_allocation_host_pointer()
 * gives its address; gpumem_allocation_free() returns it.  @p size 0 gives
 * an empty allocation.  (gpumem_host_pool_allocate() gives an array, as
 * gpumem_pool_device_array() does for a device pool.)
 * @param pool the pool.
 * @param size the bytes.
 * @param[out] alloc the allocation; free it with gpumem_allocation_free().
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE (a pool of the other kind),
 *        ::GPUMEM_ERROR_OVERFLOW, ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY, or a driver failure.
 */
GPUMEM_API gpumem_status gpumem_host_pool_allocate_bytes(gpumem_host_pool *pool, size_t size,
                                                         gpumem_allocation **alloc);

/**
 * The host pool's context (borrowed).
 * @param pool the pool.
 * @param[out] ctx its context.
 * @return ::GPUMEM_OK, or ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE (a pool of the other
 *        kind).
 */
GPUMEM_API gpumem_status gpumem_host_pool_context(const gpumem_host_pool *pool, gpumem_context **ctx);

/**
 * pycuda's PageLockedMemoryPool.held_blocks.
 * @param pool the pool.
 * @param[out] count the held blocks.
 * @return ::GPUMEM_OK, or ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE (a pool of the other
 *        kind).
 */
GPUMEM_API gpumem_status gpumem_host_pool_held_blocks(gpumem_host_pool *pool, uint64_t *count);

/**
 * pycuda's PageLockedMemoryPool.active_blocks.
 * @param pool the pool.
 * @param[out] count the active blocks.
 * @return ::GPUMEM_OK, or ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE (a pool of the other
 *        kind).
 */
GPUMEM_API gpumem_status gpumem_host_pool_active_blocks(gpumem_host_pool *pool, uint64_t *count);

/**
 * pycuda's PageLockedMemoryPool.free_held(), as gpumem_pool_free_held().
 * @param pool the pool.
 * @return as gpumem_pool_free_held().
 */
GPUMEM_API gpumem_status gpumem_host_pool_free_held(gpumem_host_pool *pool);

/**
 * pycuda's PageLockedMemoryPool.stop_holding(), as gpumem_pool_stop_holding().
 * @param pool the pool.
 * @return as gpumem_pool_stop_holding().
 */
GPUMEM_API gpumem_status gpumem_host_pool_stop_holding(gpumem_host_pool *pool);

/**
 * The host pool's counters, as gpumem_pool_stats().
 * @param pool the pool.
 * @param[in,out] stats the counters; its @c size set by the caller.
 * @return as gpumem_pool_stats().
 */
GPUMEM_API gpumem_status gpumem_host_pool_stats(gpumem_host_pool *pool, struct gpumem_pool_stats *stats);

/* ---- arrays on pools ----------------------------------------------------------------------- */

/*
 * The default allocator.  A context allocates its arrays from the driver,
 * with numba's deferred frees (gpumem/cleanup.h), unless a pool is set with
 * gpumem_context_set_pool() or the environment says GPUMEM_ALLOCATOR=pool,
 * which gives every new context its own caching pool (CuPy's and PyTorch's
 * default).  The driver is the default on purpose: HPC programs share the
 * GPU with other CUDA libraries (cuBLAS, cuFFT, MPI, NCCL) that allocate
 * from the driver too, and memory a pool holds is invisible to them; the
 * footprint of the driver path is what the program uses, as numba users
 * expect.  A program that allocates and frees arrays in a loop gains the
 * pool's speed with one call.  Either way, an allocation that the driver
 * refuses first makes every pool of the device give back what it holds and
 * the deferred frees run, then retries once: a pool never makes another
 * library of the process fail for memory it merely holds.
 */

/**
 * numba's memory-manager plug-in: from now on the device allocations of
 * @p ctx's arrays (gpumem_device_array, gpumem_to_device, reshape copies,
 * the scratch space of copies and fills) come from @p pool, a pool of the
 * same device; NULL goes back to the driver.  Arrays allocated before keep
 * their memory.  A pooled array's block goes back to the pool when its last
 * reference goes, ordered on the stream it was allocated on (work queued on
 * other streams must be synchronized first, as with PyTorch's caching
 * allocator).  The pool must outlive its use here: set NULL before
 * destroying it.  A pool of another device is ::GPUMEM_ERROR_CONTEXT_MISMATCH:
 * pools, like deferred frees and staging buffers, are per device (gpumem/peer.h).
 * @param ctx the context, or NULL for the autoinit context.
 * @param pool a pool of the same device, or NULL.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_INVALID_VALUE (a host pool), ::GPUMEM_ERROR_CONTEXT_MISMATCH (a pool of
 *        another device), or an autoinit failure.
 */
GPUMEM_API gpumem_status gpumem_context_set_pool(gpumem_context *ctx, gpumem_pool *pool);

/**
 * numba's device_array(shape, dtype, order, stream) from a chosen device
 * pool.  An uninitialized, contiguous device array whose memory is a block
 * of @p pool, as gpumem_pool_allocate() gives it (its reuse rules, its
 * out-of-memory ladder, its statistics), usable at once by work on
 * @p stream.  When the array's last reference goes (views keep it), the
 * block goes back to @p pool, ordered after the work queued on @p stream
 * as gpumem_allocation_free() with that stream orders it (work on other
 * streams must be synchronized first).  It is the device pool's
 * counterpart of gpumem_host_pool_allocate(), and unlike
 * gpumem_context_set_pool() it changes nothing else: the context's other
 * arrays and the scratch memory of copies come from where they did.  The
 * array belongs to the pool's context; the pool may be destroyed while the
 * array lives (its block then goes to the driver, see Lifetime above).
 * Added in GPUMEM_1.1.
 *
 * @par Example
 * Temporaries of a loop from a pool, on a stream:
 * @code{.c}
 * #include <stdio.h>
 * #include <gpumem.h>
 *
 * int main(void)
 * {
 *     const int64_t shape[2] = {256, 256};
 *     const gpumem_dtype *f64 = gpumem_dtype_builtin(GPUMEM_FLOAT64);
 *     gpumem_stream *s = NULL;
 *     gpumem_pool *pool = NULL;
 *     gpumem_status st = gpumem_stream_create(NULL, 0, &s);
 *     if (st == GPUMEM_OK)
 *         st = gpumem_pool_create(NULL, 0, &pool);
 *     double sum = 0;
 *     for (int step = 0; step < 3 && st == GPUMEM_OK; step++) {
 *         gpumem_array *tmp = NULL;
 *         const double v = step + 0.5;
 *         double got = 0;
 *         st = gpumem_pool_device_array(pool, 2, shape, f64, 'C', s, &tmp); // a block of the pool
 *         if (st == GPUMEM_OK)
 *             st = gpumem_array_fill(tmp, &v, s);
 *         if (st == GPUMEM_OK)
 *             st = gpumem_array_get_item_n(tmp, 2, (const int64_t[]){255, 255}, &got, s);
 *         sum += got;
 *         gpumem_status rst = gpumem_array_release(tmp); // the block goes back to the pool, after the work on s
 *         st = st != GPUMEM_OK ? st : rst;
 *     }
 *     struct gpumem_pool_stats stats = {.size = sizeof stats};
 *     if (st == GPUMEM_OK)
 *         st = gpumem_pool_stats(pool, &stats);
 *     if (st == GPUMEM_OK)
 *         printf("sum %g, %llu block from the driver, %llu reused\n", sum, (unsigned long long)stats.misses,
 *                (unsigned long long)stats.hits); // prints: sum 4.5, 1 block from the driver, 2 reused
 *     else
 *         fprintf(stderr, "gpumem: %s\n", gpumem_last_error());
 *     gpumem_pool_destroy(pool);
 *     gpumem_stream_destroy(s);
 *     return st == GPUMEM_OK ? 0 : 1;
 * }
 * @endcode
 * @param pool a device pool.
 * @param ndim the number of dimensions, 0 to ::GPUMEM_MAX_NDIM.
 * @param[in] shape @p ndim extents.
 * @param dtype the element type.
 * @param order 'C' or 'F'.
 * @param stream the stream that uses the array (and orders its block's return), or NULL.
 * @param[out] array the new device array.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE (a host pool, not a pool),
 *        ::GPUMEM_ERROR_INVALID_STATE (a destroyed pool), ::GPUMEM_ERROR_CONTEXT_MISMATCH (a @p stream of
 *        another device), the argument statuses of gpumem_device_array(), ::GPUMEM_ERROR_OUT_OF_MEMORY,
 *        ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY, or a driver failure.
 */
GPUMEM_API gpumem_status gpumem_pool_device_array(gpumem_pool *pool, int ndim, const int64_t *shape,
                                                  const gpumem_dtype *dtype, char order, gpumem_stream *stream,
                                                  gpumem_array **array);

/**
 * pycuda's PageLockedMemoryPool.allocate(shape, dtype, order): a pinned
 * host array (mapped, if the pool was made with
 * ::GPUMEM_HOST_ALLOC_DEVICEMAP) whose memory goes back to the pool when
 * the array's last reference goes.
 * @param pool the pool.
 * @param ndim the number of dimensions.
 * @param[in] shape @p ndim extents.
 * @param dtype the element type.
 * @param order 'C' or 'F'.
 * @param[out] array the new array.
 * @return ::GPUMEM_OK; the argument statuses of gpumem_host_array(), ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY, or a
 *        driver failure.
 */
GPUMEM_API gpumem_status gpumem_host_pool_allocate(gpumem_host_pool *pool, int ndim, const int64_t *shape,
                                                   const gpumem_dtype *dtype, char order, gpumem_array **array);

GPUMEM_END_DECLS

#endif /* GPUMEM_POOL_H */
