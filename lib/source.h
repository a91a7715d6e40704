/*
 * source.h - memory sources: where a pool's bytes come from, as one table of
 * operations (the way NCCL describes its transports).  The pool core
 * (pool.h) is one suballocator over extents that a source gives; it calls
 * nothing else to get or give back memory, so device and page-locked pools
 * are the same code over different sources.
 *
 * Sources (source.c, source_host.c, source_vmm.c):
 *  - device: one cuMemAlloc per extent, cuMemFree back;
 *  - pinned: one cuMemHostAlloc per extent (through gm_host_alloc_locked,
 *    which records the range in the host registry), cuMemFreeHost back;
 *  - managed: one cuMemAllocManaged (CU_MEM_ATTACH_GLOBAL) per extent,
 *    recorded in the host registry as the allocator's managed memory is,
 *    cuMemFree back;
 *  - registered (source_host.c): one anonymous mmap per extent, bound to a
 *    NUMA node (mbind) before its first touch, touched in parallel on the
 *    node's workers, then one cuMemHostRegister of the whole extent,
 *    recorded in the host registry; cuMemHostUnregister and munmap back;
 *  - the driver's stream-ordered pool: a cuMemPoolCreate pool of the
 *    device, whose release threshold is the source's; one
 *    cuMemAllocFromPoolAsync per extent on the legacy stream, waited for
 *    (the pool core hands blocks out ready for any stream), cuMemFreeAsync
 *    back; what it holds is the driver pool's reserved memory.  The
 *    simulator does not simulate it;
 *  - virtual memory: one address reservation (cuMemAddressReserve) per
 *    source, whose extents are ranges of it.  Physical memory is mapped on
 *    demand, at the allocation granularity (cuMemGetAllocationGranularity):
 *    each granule is one chunk, one cuMemCreate, one cuMemMap and one
 *    cuMemSetAccess.  Extents given back merge with their free neighbours,
 *    whichever chunk they came from; chunks that no extent touches are idle:
 *    before the source maps more it unmaps as many idle ones elsewhere, and
 *    idle ones are unmapped and released (cuMemUnmap, cuMemRelease) when the
 *    idle mapped bytes pass the release threshold at a settle, or on a
 *    trim.  Small
 *    extents (up to GM_SOURCE_SMALL bytes) come from the reservation's
 *    upper part, so that long-lived small blocks do not pin the large ones'
 *    free ranges apart.
 *
 * Capabilities say which optional operations a source has: GROW (extents
 * merge, memory maps and unmaps in chunks: map, unmap, settle, trim),
 * EXPORT (chunks export as POSIX file descriptors).
 *
 * Locking: a source's own mutex is a leaf, taken with no pool lock held;
 * the virtual-memory source makes its map and unmap calls under it (one
 * source grows or shrinks at a time, as the out-of-memory ladder does).
 */
#ifndef GM_SOURCE_H
#define GM_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "context.h"
#include "driver.h"
#include "gpumem/status.h"

typedef enum gm_source_kind {
    GM_SOURCE_DEVICE,
    GM_SOURCE_PINNED,
    GM_SOURCE_VMM,
    GM_SOURCE_ASYNC,
    GM_SOURCE_MANAGED,   /* one cuMemAllocManaged per extent (source.c) */
    GM_SOURCE_REGISTERED /* mmap, mbind to a node, touched on the workers, cuMemHostRegister (source_host.c) */
} gm_source_kind;

#define GM_SOURCE_CAP_GROW 0x1u   /* extents merge; map, unmap, settle and trim */
#define GM_SOURCE_CAP_EXPORT 0x2u /* chunks export as POSIX file descriptors */
#define GM_SOURCE_CAP_HOST 0x4u   /* host memory (addresses are host addresses) */

/* Extents up to this size come from the small part of a reservation. */
#define GM_SOURCE_SMALL ((size_t)1 << 20)

/* Where a source's memory lives: CUmemLocation's types. */
typedef struct gm_source_location {
    int type; /* GM_CU_MEM_LOCATION_TYPE_DEVICE, _HOST or _HOST_NUMA */
    int id;   /* the device ordinal, or the NUMA node (-1: any) */
} gm_source_location;

/* A source's books. */
typedef struct gm_source_usage {
    uint64_t extents, extent_bytes; /* extents handed out and their bytes */
    uint64_t mapped;                /* bytes held from the driver (mapped chunks, or the extents) */
    uint64_t reserved;              /* address space reserved (0 but for virtual memory) */
    uint64_t chunks;                /* mapped chunks (virtual memory) */
} gm_source_usage;

/* What a source is made with. */
typedef struct gm_source_config {
    gm_source_kind kind;
    unsigned host_flags;        /* pinned: cuMemHostAlloc's flags */
    uint64_t growth_step;       /* virtual memory: bytes mapped at least per growth; 0: the granularity */
    uint64_t maximum;           /* virtual memory: bytes reserved, the most that can be mapped; 0: the device's */
    uint64_t release_threshold; /* virtual memory: idle mapped bytes kept at a settle */
    bool exportable;            /* virtual memory: chunks exportable as POSIX file descriptors */
    int numa_node;              /* registered: the node pages are bound to; -1: not placed */
} gm_source_config;

typedef struct gm_source gm_source;

typedef struct gm_source_ops {
    const char *name;
    unsigned caps;
    /* An extent of bytes at *addr.  grow false: only from memory the
     * source holds already (GROW sources; others ignore it).  Out of memory:
     * *oom set, GPUMEM_ERROR_(HOST_)OUT_OF_MEMORY with no message (the
     * allocator's ladder words it); any other failure has its message. */
    gpumem_status (*alloc)(gm_source *s, size_t bytes, bool grow, const char *what, uint64_t *addr, bool *oom);
    /* Gives an extent back (for GROW sources: it merges; nothing is unmapped until a settle). */
    gpumem_status (*free)(gm_source *s, uint64_t addr, size_t bytes, const char *what);
    /* GROW: maps physical memory under [addr, addr + bytes), a granule-aligned
     * range of the reservation, one chunk per run of unmapped granules. */
    gpumem_status (*map)(gm_source *s, uint64_t addr, size_t bytes, const char *what);
    /* GROW: unmaps and releases the chunks that lie wholly in [addr, addr + bytes) and are idle. */
    gpumem_status (*unmap)(gm_source *s, uint64_t addr, size_t bytes, const char *what);
    /* GROW: unmaps idle chunks until at most keep idle mapped bytes remain. */
    gpumem_status (*trim)(gm_source *s, uint64_t keep, const char *what);
    /* EXPORT: the chunk holding addr as a new POSIX file descriptor *fd
     * (the caller closes it), and the chunk's range. */
    gpumem_status (*export_fd)(gm_source *s, uint64_t addr, int *fd, uint64_t *chunk, size_t *chunk_bytes,
                               const char *what);
    void (*location)(const gm_source *s, gm_source_location *loc);
    void (*usage)(gm_source *s, gm_source_usage *u);
    /* Frees the source; every extent was given back. */
    gpumem_status (*destroy)(gm_source *s, const char *what);
} gm_source_ops;

struct gm_source {
    const gm_source_ops *ops;
    gpumem_context *ctx; /* not retained: the pool holds it */
    gm_source_config cfg;
};

/* Makes a source of cfg.kind for ctx's device.  Virtual memory that the
 * driver cannot do (no entry points, or a device without virtual memory
 * management) is GPUMEM_ERROR_NOT_SUPPORTED. */
gpumem_status gm_source_create(gpumem_context *ctx, const gm_source_config *cfg, const char *what,
                               gm_source **out);

/* Releases the idle chunks beyond the release threshold (GROW sources; a
 * no-op for the others). */
gpumem_status gm_source_settle(gm_source *s, const char *what);

/* ---- host memory placed on a NUMA node (source_host.c) ---- */

/* The registered source (GM_SOURCE_REGISTERED): cfg.host_flags are
 * cuMemHostRegister's (PORTABLE, DEVICEMAP), cfg.numa_node the node (-1:
 * none).  A node is checked here, with one page bound to it: a node the
 * machine has no memory on is GPUMEM_ERROR_INVALID_VALUE naming
 * props->numa_node, mbind refused (EPERM, ENOSYS: seccomp, no NUMA in the
 * kernel) GPUMEM_ERROR_NOT_SUPPORTED saying so. */
gpumem_status gm_source_host_create(gpumem_context *ctx, const gm_source_config *cfg, const char *what,
                                    gm_source **out);

/* The NUMA node nearest ctx's device: CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID (the
 * simulator's from GPUMEM_SIM_NUMA), or, from a driver without that
 * attribute, the device's <sysfs>/bus/pci/devices/<PCI id>/numa_node; -1 in
 * *node when the machine has no NUMA.  A driver failure is its status. */
gpumem_status gm_source_device_node(gpumem_context *ctx, const char *what, int *node);

/* Whether node (0 or more) can take pages: in <sysfs>/devices/system/node/
 * has_memory where that can be read, and one page bound to it (mbind).
 * asked is props->numa_node as the message writes it.  No such node:
 * GPUMEM_ERROR_INVALID_VALUE naming props->numa_node; mbind refused (EPERM
 * under a container's seccomp filter, ENOSYS): GPUMEM_ERROR_NOT_SUPPORTED
 * saying so. */
gpumem_status gm_numa_node_check(int node, const char *asked, const char *what);

/* Binds [p, p + bytes) (page-aligned, not yet touched) to node
 * (mbind(MPOL_BIND)); 0 or the errno. */
int gm_numa_bind(void *p, size_t bytes, int node);

/* The node of each of the n pages at pages[] into nodes[] (move_pages(2)
 * with no target: a query; a negative errno for a page not present); 0 or
 * the errno of the call. */
int gm_numa_page_nodes(void *const *pages, size_t n, int *nodes);
/* ---- export (virtual memory with GM_SOURCE_CAP_EXPORT; pool_ipc.c) ---- */

/* What an importer needs to know of an exporting source. */
typedef struct gm_source_export_info {
    uint64_t id;          /* random, never 0: names the source to importers */
    uint64_t reserved;    /* bytes of the reservation */
    uint64_t granularity; /* of the chunks */
    int device;           /* the device ordinal */
} gm_source_export_info;

/* One mapped chunk, exported. */
typedef struct gm_source_chunk {
    uint64_t off, len; /* in the reservation */
    uint64_t serial;   /* chunks mapped by the source up to this one: a later chunk at the same offset differs */
    int fd;            /* a new POSIX file descriptor (the caller closes it) */
} gm_source_chunk;

void gm_source_vmm_describe(gm_source *s, gm_source_export_info *info);
/* Every chunk mapped now, exported (*out malloc'd, the caller frees it and
 * closes the fds); a source that is not exportable is
 * GPUMEM_ERROR_INVALID_VALUE, a failed export the driver's failure. */
gpumem_status gm_source_vmm_export_all(gm_source *s, const char *what, gm_source_chunk **out, size_t *count);
/* Where the extent [addr, addr + bytes) lies: its offset in the
 * reservation, and the serials of the chunks under its first and last byte. */
gpumem_status gm_source_vmm_locate(gm_source *s, uint64_t addr, uint64_t bytes, const char *what, uint64_t *off,
                                   uint64_t *first_serial, uint64_t *last_serial);

/* ---- export of the driver's stream-ordered pool (source.c; pool_ipc.c) ---- */

/* The pool as a new POSIX file descriptor *fd (the caller closes it), and
 * its id; a source not ASYNC and exportable is GPUMEM_ERROR_INVALID_VALUE. */
gpumem_status gm_source_async_export_pool(gm_source *s, const char *what, int *fd, uint64_t *id);

/* A block [addr, addr + bytes) of the pool: the driver's allocation (the
 * source's extent) that holds it, exported (cuMemPoolExportPointer). */
typedef struct gm_source_async_block {
    uint64_t id;     /* the pool's */
    uint64_t off;    /* the block's offset in the extent */
    uint64_t extent; /* the extent's bytes */
    gm_cu_mem_pool_ptr_export_data data;
} gm_source_async_block;
gpumem_status gm_source_async_export_block(gm_source *s, uint64_t addr, uint64_t bytes, const char *what,
                                           gm_source_async_block *out);

/* A random number, never 0, naming an exportable source to importers
 * (salt: the source's address, mixed in when there is no entropy yet). */
uint64_t gm_source_export_id(const void *salt);

/* source_vmm.c */
gpumem_status gm_source_vmm_create(gpumem_context *ctx, const gm_source_config *cfg, const char *what,
                                   gm_source **out);

#endif /* GM_SOURCE_H */
