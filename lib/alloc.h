/*
 * alloc.h - the context allocator (private): every allocation and free of
 * device, page-locked (pinned, mapped) and managed memory that arrays,
 * scratch space and staging buffers use goes through here.
 *
 * It owns, in one place:
 *  - the choice between the context's pool (gpumem_context_set_pool) and the
 *    driver;
 *  - the one out-of-memory ladder: on the driver's CUDA_ERROR_OUT_OF_MEMORY,
 *    give the context's pool's held blocks back to the driver, flush the
 *    context's deferred frees, and retry once;
 *  - where a free goes: driver memory into the deferred-deallocation queue
 *    (dealloc.c, numba's semantics), pool blocks back to their pool, ordered
 *    after the stream that may still use them.
 *
 * Layering: alloc calls pools, the deferred queue, the host registry and the
 * driver; nothing below it calls up.  Arrays, copies and staging call it.
 */
#ifndef GM_ALLOC_H
#define GM_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "context.h"
#include "driver.h"
#include "gpumem/pool.h"
#include "gpumem/stream.h"

/* What a block is, and so how it is freed. */
typedef enum gm_mem {
    GM_MEM_NONE = 0,  /* nothing (a zero-byte request): freeing it does nothing */
    GM_MEM_DEVICE,    /* cuMemAlloc */
    GM_MEM_LOCKED,    /* cuMemHostAlloc: pinned, or mapped with DEVICEMAP */
    GM_MEM_MANAGED,   /* cuMemAllocManaged */
    GM_MEM_POOL       /* a block of a device or page-locked pool (token) */
} gm_mem;

/* An allocation.  A plain value: the caller keeps it and hands it back to
 * gm_alloc_free exactly once. */
typedef struct gm_block {
    uint64_t addr;                /* device address (DEVICE, MANAGED, device POOL) or host address */
    size_t bytes;                 /* bytes asked for */
    gm_mem mem;
    bool mapped;                  /* GM_MEM_LOCKED with DEVICEMAP: counted as mapped memory */
    bool legacy_only;             /* GM_MEM_POOL freed on the legacy stream: its work was queued there only
                                   * (gm_pool_release_as) */
    struct gpumem_allocation *token; /* GM_MEM_POOL: the pool's token */
    gpumem_stream *stream;        /* the stream a pool block was allocated on (held), or NULL */
    gpumem_context *pool_ctx;     /* GM_MEM_POOL: the pool's context, which lives while the block does */
} gm_block;

/* bytes of device memory for use on stream (NULL: synchronous use), from the
 * context's pool when one is set, else from the driver.  0 bytes gives a
 * GM_MEM_NONE block at address 0.  `what` prefixes error messages. */
gpumem_status gm_alloc_device(gpumem_context *ctx, size_t bytes, gpumem_stream *stream, const char *what,
                              gm_block *out);

/* As gm_alloc_device, for memory the caller can do without (copy scratch,
 * which has a slower way): the ladder runs, but not the context's
 * out-of-memory callback, and a failure's message is short, makes no
 * driver call of its own and is not counted as an out-of-memory failure
 * (memstats.h): the call goes on without. */
gpumem_status gm_alloc_device_spare(gpumem_context *ctx, size_t bytes, gpumem_stream *stream, const char *what,
                                    gm_block *out);

/* bytes of page-locked host memory (cuMemHostAlloc flags: GM_CU_MEMHOSTALLOC_*),
 * tracked in the host registry while it lives.  Errors are the host's:
 * GPUMEM_ERROR_HOST_OUT_OF_MEMORY when the driver has no memory. */
gpumem_status gm_alloc_locked(gpumem_context *ctx, size_t bytes, unsigned flags, const char *what, gm_block *out);

/* bytes of managed memory (cuMemAllocManaged flags), tracked in the host
 * registry while it lives. */
gpumem_status gm_alloc_managed(gpumem_context *ctx, size_t bytes, unsigned flags, const char *what, gm_block *out);

/* A block of device pool `pool` for use on stream (NULL: synchronous use),
 * with the ladder, as the context's own pool's (the pool is checked: a dead
 * handle names `what`).  The block holds the stream. */
gpumem_status gm_alloc_device_pool(gpumem_pool *pool, size_t bytes, gpumem_stream *stream, const char *what,
                                   gm_block *out);

/* A block of a page-locked pool. */
gpumem_status gm_alloc_host_pool(gpumem_host_pool *pool, size_t bytes, const char *what, gm_block *out);

/* Who holds the memory that this thread allocates, for the trace
 * (doc/trace-format.md: an allocation's owner): the program, the default,
 * or the library's own memory.  The library's callers that allocate for
 * themselves (copy scratch, staging slots, bounce blocks, temporary arrays)
 * set it around the allocation:
 *     gm_owner was = gm_alloc_owner_begin(GM_OWNER_STAGING);
 *     st = gm_alloc_locked(...);
 *     gm_alloc_owner_end(was);
 * It changes nothing but what a trace records (a thread-local store); the
 * out-of-memory callback runs as the program's. */
typedef enum gm_owner {
    GM_OWNER_PROGRAM = 0,
    GM_OWNER_SCRATCH = 1,  /* a copy's device scratch */
    GM_OWNER_STAGING = 2,  /* the staging engine's pinned slots */
    GM_OWNER_BOUNCE = 3,   /* a queued download's bounce block */
    GM_OWNER_TEMPORARY = 4 /* a copy's temporary array */
} gm_owner;

/* Sets this thread's owner; returns the one it replaces, for
 * gm_alloc_owner_end. */
gm_owner gm_alloc_owner_begin(gm_owner owner);
/* Puts back the owner that gm_alloc_owner_begin returned. */
void gm_alloc_owner_end(gm_owner was);

/* Frees b (allocated in ctx): driver memory through the deferred queue, a
 * pool block back to its pool, ordered after the work queued on the stream it
 * was allocated on.  The status is that of any flush it caused; the block is
 * gone either way.  b is cleared.  `what`, the public call that frees it,
 * names a failure. */
gpumem_status gm_alloc_free(gpumem_context *ctx, gm_block *b, const char *what);

/* Whether a cache may keep b for later use: not when b is a block of a
 * destroyed pool, whose end, and its reference to its context, wait for the
 * block (a context's cache that kept it would keep the context alive). */
bool gm_alloc_keepable(const gm_block *b);

/* The context hook (lib/wiring.c): makes and ends the context's own pool
 * (GPUMEM_ALLOCATOR=pool). */
extern const gm_context_hook gm_allocator_hook;

#endif /* GM_ALLOC_H */
