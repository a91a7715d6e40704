/*
 * pack_calls.h - the caller's side of the device pack and unpack kernels
 * (private; the copy engine's, arrays layer): the calls the copy engine
 * makes to get the kernels, launch them and take device scratch, and the
 * provider they go through.  The kernels themselves are loaded and
 * launched by the kernel cache's side, pack_provider.c, a layer above.
 */
#ifndef GM_PACK_CALLS_H
#define GM_PACK_CALLS_H

#include "alloc.h"
#include "context.h"
#include "copyplan.h"
#include "driver.h"
#include "gpumem/stream.h"

typedef struct gm_pack_kernels gm_pack_kernels;

/* Device scratch of the copy engine: a buffer kept with the context's pack
 * kernels and reused by later copies, so that a copy neither allocates nor
 * frees device memory, and never waits for its stream because of its
 * scratch.  A copy takes one (gm_pack_scratch_get), uses it on its stream,
 * records ev[GM_SCRATCH_DONE] on that stream after its last use and sets
 * `used`, and gives it back (gm_pack_scratch_put); the next copy to take it
 * makes its own stream wait for that event (cuStreamWaitEvent: on the
 * device, the host does not wait).  `side` is a second stream
 * (non-blocking) on which a copy of several chunks runs its transfers while
 * its kernels run on the copy's stream; the other events order the two.
 * The buffers are freed when the kernels are (gpumem_clear_context_caches,
 * the context's final release), once their last use is done. */
enum {
    GM_SCRATCH_DONE = 0, /* after the last use: the next user waits for it */
    GM_SCRATCH_START,    /* the side stream waits for the copy's stream */
    GM_SCRATCH_FILL,     /* two: buffer 0 and 1 written */
    GM_SCRATCH_DRAIN = GM_SCRATCH_FILL + 2, /* two: buffer 0 and 1 read */
    GM_SCRATCH_NEVENTS = GM_SCRATCH_DRAIN + 2
};

typedef struct gm_scratch {
    uint64_t addr;       /* device address */
    size_t bytes;
    gm_dstream *side;    /* the second stream, made when a copy first asks for it */
    gm_devent *ev[GM_SCRATCH_NEVENTS];
    bool used;           /* ev[GM_SCRATCH_DONE] was recorded after the last use */
    gm_block blk;        /* the allocation (the context allocator's) */
    struct gm_scratch *next;
} gm_scratch;

/* The kernels live in the kernel cache, a layer above the copy engine:
 * pack_provider.c provides these functions and lib/wiring.c hands them to the
 * engine when the library loads, so the engine names nothing above it.  The
 * calls below go through them. */
typedef struct gm_pack_provider {
    gpumem_status (*get)(gpumem_context *ctx, const char *what, gm_pack_kernels **out);
    void (*put)(gm_pack_kernels *k);
    gpumem_status (*launch)(gm_pack_kernels *k, const gm_pack_plan *plan, uint64_t strided, uint64_t packed,
                            gpumem_stream *stream, const char *what);
    gpumem_status (*scratch_get)(gm_pack_kernels *k, size_t bytes, bool side, const char *what, gm_scratch **out);
    void (*scratch_put)(gm_pack_kernels *k, gm_scratch *s);
    gpumem_status (*launch_ds)(gm_pack_kernels *k, const gm_pack_plan *plan, uint64_t strided, uint64_t packed,
                               gm_dstream *ds, const char *what);
    gpumem_status (*launch_batch)(gm_pack_kernels *k, int kernel, const gm_pack_batch_params *p,
                                  gpumem_stream *stream, const char *what);
} gm_pack_provider;

/* Sets the provider (lib/wiring.c, once, when the library loads). */
void gm_pack_provider_set(const gm_pack_provider *p);

/* The context's pack kernels, with a reference for the caller (give it back
 * with gm_pack_kernels_put once the launches are complete).  The first call
 * in a context loads lib/kernels/pack.cu's PTX through the kernel cache
 * (as gpumem_module_load does) and looks the kernels up; later calls are a cache
 * hit.  When the driver cannot use the PTX (CUDA_ERROR_UNSUPPORTED_PTX_VERSION
 * from a driver older than it, INVALID_PTX, NO_BINARY_FOR_GPU,
 * INVALID_IMAGE), *out is NULL and the status GPUMEM_OK: the copy engine
 * does without, and that is remembered for the context (not retried until
 * gpumem_clear_context_caches).  Other failures are returned.  Without a
 * provider, *out is NULL too.  `what`, the public call that copies, names a
 * failure. */
gpumem_status gm_pack_kernels_get(gpumem_context *ctx, const char *what, gm_pack_kernels **out);
void gm_pack_kernels_put(gm_pack_kernels *k);

/* Launches the plan's kernel on stream (NULL: the legacy default stream)
 * between the strided side's element 0 at strided and the packed side's at
 * packed (device addresses); queued, not waited for. */
gpumem_status gm_pack_launch(gm_pack_kernels *k, const gm_pack_plan *plan, uint64_t strided, uint64_t packed,
                             gpumem_stream *stream, const char *what);

/* The same on a driver stream of the kernels' context (NULL: its legacy
 * stream), such as a scratch buffer's side stream.  Either address may be
 * another device's memory that the context has peer access to. */
gpumem_status gm_pack_launch_on(gm_pack_kernels *k, const gm_pack_plan *plan, uint64_t strided, uint64_t packed,
                                gm_dstream *ds, const char *what);

/* Launches batched kernel `kernel` (GM_PACK_BATCH_32 or _64) with the
 * block p, its addresses device addresses, on stream (NULL: the legacy
 * default stream); queued, not waited for (copy_batch.c). */
gpumem_status gm_pack_launch_batch(gm_pack_kernels *k, int kernel, const gm_pack_batch_params *p,
                                   gpumem_stream *stream, const char *what);

/* Device scratch of at least bytes from k's cache (the smallest idle
 * buffer that fits), else a new one of bytes rounded up to a power of two
 * (at least 64 KiB) from the context allocator, with its events, and its
 * side stream when `side`.  GPUMEM_ERROR_OUT_OF_MEMORY when the device has
 * no room (the allocator's ladder ran): the engine then copies without
 * scratch.  The caller owns *out until gm_pack_scratch_put. */
gpumem_status gm_pack_scratch_get(gm_pack_kernels *k, size_t bytes, bool side, const char *what, gm_scratch **out);

/* Gives s back to k's cache (s->used and ev[GM_SCRATCH_DONE] say when its
 * last use ends).  The cache keeps a few idle buffers; beyond them it frees
 * the smallest whose last use has ended. */
void gm_pack_scratch_put(gm_pack_kernels *k, gm_scratch *s);

#endif /* GM_PACK_CALLS_H */
