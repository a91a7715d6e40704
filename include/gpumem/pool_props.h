/**
 * @file gpumem/pool_props.h
 * @brief Pools from properties: where a pool's memory comes from (its
 *        source), its NUMA node, growth step, maximum, release threshold and
 *        exportable handle type; trimming what a pool holds.  Added in
 *        GPUMEM_1.1.
 *
 * These are the pools' advanced calls, kept apart from gpumem/pool.h's
 * stable ones as zstd keeps its advanced API apart.  gpumem/pool.h includes
 * this header and this header includes gpumem/pool.h, so either include
 * gives both.  The pools themselves (allocate, free, statistics, destroy)
 * are gpumem/pool.h's; IPC of a pool's memory is gpumem/pool_ipc.h.
 */
#ifndef GPUMEM_POOL_PROPS_H
#define GPUMEM_POOL_PROPS_H

#include <stdint.h>
#include <gpumem/export.h>
#include <gpumem/status.h>
#include <gpumem/context.h>
#include <gpumem/pool.h>

GPUMEM_BEGIN_DECLS

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
    GPUMEM_POOL_SOURCE_ASYNC = 3,
    /**
     * Managed (unified) memory, one cuMemAllocManaged (CU_MEM_ATTACH_GLOBAL)
     * per block, cuMemFree back: a device pool whose blocks' pointers are
     * valid on the host as well (gpumem_allocation_pointer() gives it; the
     * pool's arrays are ::GPUMEM_MEMORY_DEVICE arrays over it).  Device
     * pools only.
     */
    GPUMEM_POOL_SOURCE_MANAGED = 4,
    /**
     * Page-locked host memory that the library maps (anonymous mmap) and
     * registers (cuMemHostRegister), one mapping and one registration per
     * block, placed on a NUMA node (see @c numa_node) before its pages are
     * first touched.  The pages are touched in parallel, on the library's
     * workers of that node, before the one registration of the block.
     * ::GPUMEM_HOST_ALLOC_WRITECOMBINED is not available (registered
     * memory cannot be write-combined).  Host pools only.
     */
    GPUMEM_POOL_SOURCE_REGISTERED = 5
} gpumem_pool_source;

/**
 * struct gpumem_pool_props' @c numa_node: a host pool's pages go on the NUMA
 * node nearest the pool's device (the default).  That node is the driver's
 * CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID where the driver has it, else the
 * numa_node file of the device under /sys/bus/pci/devices; when the machine has no
 * NUMA (the node is -1 there), the pages are not placed.  Device pools
 * take this value only.  Added in GPUMEM_1.1.
 */
#define GPUMEM_NUMA_NODE_DEVICE (-1)
/**
 * struct gpumem_pool_props' @c numa_node: a host pool's pages are not
 * placed (the kernel's default policy: usually the node of the thread that
 * first touches them).  Added in GPUMEM_1.1.
 */
#define GPUMEM_NUMA_NODE_NONE (-2)

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
    /**
     * The NUMA node of a host pool's pages: ::GPUMEM_NUMA_NODE_DEVICE (-1,
     * the default: the device's own node), ::GPUMEM_NUMA_NODE_NONE (-2: not
     * placed), or a node number.  Pages on a node are bound there
     * (mbind(MPOL_BIND) before the first touch; like numactl --membind, a
     * node that runs out of free memory is the kernel's out-of-memory
     * case, not a fallback to another node).  The node must be one with
     * memory (/sys/devices/system/node/has_memory).  A
     * ::GPUMEM_POOL_SOURCE_PINNED pool whose node is a node is a
     * ::GPUMEM_POOL_SOURCE_REGISTERED pool (cuMemHostAlloc cannot place
     * pages), unless the node is the default and @c flags has
     * ::GPUMEM_HOST_ALLOC_WRITECOMBINED: then it is not placed.  Device
     * pools: ::GPUMEM_NUMA_NODE_DEVICE only.
     */
    int numa_node;
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
 * a virtual-memory reservation (::GPUMEM_POOL_SOURCE_VIRTUAL), of the
 * driver's stream-ordered pool (::GPUMEM_POOL_SOURCE_ASYNC) or of managed
 * memory (::GPUMEM_POOL_SOURCE_MANAGED).  Every
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
 *        version's struct, or nonzero bytes past it; an unknown @c source or one of host memory
 *        (::GPUMEM_POOL_SOURCE_PINNED, ::GPUMEM_POOL_SOURCE_REGISTERED); unknown @c flags; @c numa_node not
 *        ::GPUMEM_NUMA_NODE_DEVICE; @c growth_step set for a source other than virtual memory; @c maximum or
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

/* ---- page-locked host pools from properties ----------------------------------- */

/**
 * A new, empty page-locked host pool of @p ctx (NULL: the autoinit
 * context) with the properties @p props, whose @c source must be
 * ::GPUMEM_POOL_SOURCE_PINNED or ::GPUMEM_POOL_SOURCE_REGISTERED (@c flags
 * may hold the ::GPUMEM_HOST_ALLOC_PORTABLE flags too), made from the same
 * struct as device pools.  Its pages go on the NUMA node @c numa_node says:
 * by default the device's own node, so that copies between the device and
 * the pool's memory do not cross the link between sockets.  Without a node
 * to place them on (::GPUMEM_NUMA_NODE_NONE, or a machine without NUMA), a
 * ::GPUMEM_POOL_SOURCE_PINNED pool is the pool of gpumem_host_pool_create()
 * (cuMemHostAlloc blocks).  Added in GPUMEM_1.1.
 *
 * @par Example
 * Staging buffers on the GPU's own NUMA node (on a machine without NUMA,
 * and on the simulator unless GPUMEM_SIM_NUMA says otherwise, they are
 * simply page-locked):
 * @code{.c}
 * #include <stdio.h>
 * #include <string.h>
 * #include <gpumem.h>
 *
 * int main(void)
 * {
 *     struct gpumem_pool_props props = GPUMEM_POOL_PROPS_INIT;
 *     props.source = GPUMEM_POOL_SOURCE_PINNED; // numa_node: GPUMEM_NUMA_NODE_DEVICE
 *     gpumem_host_pool *pool = NULL;
 *     gpumem_allocation *a = NULL;
 *     void *p = NULL;
 *     int pinned = 0;
 *     gpumem_status st = gpumem_host_pool_create_with_props(NULL, &props, &pool);
 *     if (st == GPUMEM_OK)
 *         st = gpumem_host_pool_allocate_bytes(pool, (size_t)64 << 20, &a);
 *     if (st == GPUMEM_OK)
 *         st = gpumem_allocation_host_pointer(a, &p);
 *     if (st == GPUMEM_OK) {
 *         memset(p, 0, (size_t)64 << 20);
 *         st = gpumem_host_is_pinned(p, (size_t)64 << 20, &pinned);
 *     }
 *     if (st == GPUMEM_OK)
 *         printf("64 MiB, page-locked: %d\n", pinned); // prints: 64 MiB, page-locked: 1
 *     else
 *         fprintf(stderr, "gpumem: %s\n", gpumem_last_error());
 *     if (a != NULL)
 *         gpumem_allocation_free(a, NULL);
 *     gpumem_host_pool_destroy(pool);
 *     return st == GPUMEM_OK ? 0 : 1;
 * }
 * @endcode
 * @param ctx the context, or NULL for the autoinit context.
 * @param[in] props the properties (see struct gpumem_pool_props).
 * @param[out] pool the new pool.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT; ::GPUMEM_ERROR_INVALID_VALUE (as
 *        gpumem_pool_create_with_props(), and a @c source other than ::GPUMEM_POOL_SOURCE_PINNED and
 *        ::GPUMEM_POOL_SOURCE_REGISTERED; @c numa_node below
 *        ::GPUMEM_NUMA_NODE_NONE, or a node the machine has no memory on (the message names @c numa_node and the
 *        nodes there are; with ::GPUMEM_NUMA_NODE_DEVICE, the device's node); a node with
 *        ::GPUMEM_HOST_ALLOC_WRITECOMBINED, or ::GPUMEM_POOL_SOURCE_REGISTERED with it);
 *        ::GPUMEM_ERROR_NOT_SUPPORTED (the kernel refuses mbind, as a container's seccomp filter may: the message
 *        says so; or has no NUMA support); ::GPUMEM_ERROR_CONTEXT_MISMATCH; ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY; an
 *        autoinit failure; or a driver failure (the device's NUMA node).  A block of a
 *        ::GPUMEM_POOL_SOURCE_REGISTERED pool that cannot be mapped or registered is
 *        ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY at its allocate call.
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

GPUMEM_END_DECLS

#endif /* GPUMEM_POOL_PROPS_H */
