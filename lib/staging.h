/*
 * staging.h - the staging engine of transfers with a host side that is
 * pageable or strided (private; the copy engine's executor).
 * gpumem/staging.h describes it and its settings.
 *
 * A transfer moves one run of device bytes from or to a host side that is
 * either one run of bytes (pageable memory the driver would stage slowly)
 * or a strided view, packed or unpacked on the fly.  The work is cut into
 * chunks; the threads of the worker pool (workers.h) and the calling
 * thread each take chunks one at a time, each through its own pinned slots
 * (a "lane" per thread and context): fill the slot (memcpy or pack), queue
 * its transfer on the stream, record the slot's event, and take the next
 * chunk; a slot is refilled once its event completed.  Downloads run the
 * other way round (queue into the slot, wait for its event, drain or
 * unpack).  There is no barrier per chunk, only one join per transfer, and
 * any number of transfers, in one context or several, run at once on the
 * same workers.  The first and the last chunks of a transfer are small and
 * grow to a slot (a ramp), so that the link starts early and the threads
 * do not move in step (staging_xfer.c says why).
 *
 * A transfer through device scratch that the pack kernels fill or empty
 * buffer by buffer (copy_packed.c) is one transfer cut into segments
 * (gm_stage_segs): the calling thread opens each segment (queues what the
 * segment's device bytes wait for) and closes it once its chunks are all
 * queued (queues what waits for them), while every thread, the caller
 * included, moves the chunks of the open segments.
 */
#ifndef GM_STAGING_H
#define GM_STAGING_H

#include <stdbool.h>
#include <stddef.h>

#include "gpumem/staging.h"
#include "context.h"
#include "alloc.h"
#include "driver.h"
#include "kernels/pack_params.h"
#include "workers.h"

typedef struct gm_staging gm_staging;

/* The settings' min_bytes (read from the environment once; lock-free). */
gpumem_status gm_staging_min_bytes(size_t *out);

/* The current settings (lock-free after the first read); the status of the
 * environment's, with its message set again. */
gpumem_status gm_staging_settings_now(gpumem_staging_settings *out);

/* The context's engine, made on first use, with a reference for the caller
 * (give it back with gm_staging_release).  Several copies use it at once:
 * *out is never NULL on success. */
gpumem_status gm_staging_acquire(gpumem_context *ctx, gm_staging **out);
void gm_staging_release(gm_staging *e);

/* One transfer for the engine.  The device side is `bytes` at dev, one run.
 * The host side is either one run at host (pack NULL), or a part of the
 * packed run of *pack, whose strided side is the host's (pack->strided: the
 * host address of element (0, 0); pack->packed is ignored): the device
 * byte at offset o is packed byte pack_offset + o, of packed element
 * (pack_offset + o) / pack->unit.  A whole pack is pack_offset 0 and bytes
 * rows * cols * unit; a chunk of one (a device scratch buffer's worth)
 * starts and ends on a unit.  threads (0: the settings') caps the threads
 * that work on it, the caller included; chunk (0: the engine's choice) the
 * bytes per chunk, at most the settings' chunk_bytes. */
typedef struct gm_stage_segs gm_stage_segs;

typedef struct gm_stage_op {
    int dir;                    /* 1: host to device, -1: device to host */
    gm_cu_deviceptr dev;        /* (ignored with segs) */
    char *host;
    const gm_pack_params *pack;
    uint64_t pack_offset;
    uint64_t bytes;
    unsigned threads;
    size_t chunk;
    const gm_stage_segs *segs;  /* NULL: the device side is one run at dev */
} gm_stage_op;

/* The device side of a transfer in segments: `count` runs that tile the
 * transfer's bytes in order, each somewhere on the device.  The calling
 * thread of gm_staging_run, and only it, calls open for k = 0, 1, ... in
 * order, with at most `ahead` (1 .. 3) segments open (opened, not closed)
 * at once, and close for each open one in order once every chunk of it is
 * queued on the stream.  open returns segment k's bytes of the transfer,
 * [*offset, *offset + *bytes) (starting where segment k - 1 ended), and
 * their device address; from then on the engine queues their transfers on
 * the stream.  A failing call fails the transfer with its status. */
struct gm_stage_segs {
    uint64_t count;
    unsigned ahead;
    gpumem_status (*open)(void *arg, uint64_t k, uint64_t *offset, uint64_t *bytes, gm_cu_deviceptr *dev);
    gpumem_status (*close)(void *arg, uint64_t k);
    void *arg;
};

/* Runs op on ds (NULL: the legacy default stream).  An upload returns once
 * every host byte was read and every chunk is queued on ds, in order before
 * anything queued on ds later (async), or once they arrived (!async).  A
 * download returns once the bytes are in host memory (it follows what was
 * queued on ds before it).  A failure returns the first error; chunks
 * already moved stay moved (the destination may be partly written). */
gpumem_status gm_staging_run(gm_staging *e, const gm_stage_op *op, gm_dstream *ds, int async, const char *what);

/* A test hook: how many times this thread, as the caller of a transfer in
 * segments, advanced them (opened and closed what it could) while it
 * polled its slot or between the pieces of its chunks (staging_xfer.c). */
unsigned long gm_staging_caller_advances(void);

/* A test hook: how many segments this thread, as the caller of a transfer
 * in segments, opened while the one before still had chunks to take (none
 * where the threads poll: staging_xfer.c's in_order). */
unsigned long gm_staging_early_opens(void);

/* bytes from pageable src to device dst, on ds: gm_staging_run of one run. */
gpumem_status gm_staging_upload(gm_staging *e, gm_cu_deviceptr dst, const void *src, size_t bytes, gm_dstream *ds,
                                int async, const char *what);

/* bytes from device src to pageable dst, on ds: gm_staging_run of one run. */
gpumem_status gm_staging_download(gm_staging *e, void *dst, gm_cu_deviceptr src, size_t bytes, gm_dstream *ds,
                                  const char *what);

/* ---- copies between two devices staged through host memory (copy_peer.c) ---- */

#define GM_STAGE_RING_MAX 64 /* GPUMEM_STAGING_DEPTH's largest value */

/* The pinned slots a copy between two devices moves its bytes through, with
 * the events that order them: after the download of a chunk into slot i
 * (on a stream of the source's context) the copy records down[i], the
 * destination's stream waits for it and uploads, records up[i], and the
 * source's stream waits for up[i] before slot i is written again.  The
 * slots and down[] are those of one lane of the source context's engine;
 * up[] the events of a caller lane of the destination context's engine
 * (its slots stay unused).  Nothing is pending on any of them when fn is
 * called. */
typedef struct gm_stage_ring {
    unsigned n;                         /* slots: the settings' depth */
    size_t bytes;                       /* per slot: the settings' chunk_bytes, rounded up to a page */
    char *slot[GM_STAGE_RING_MAX];
    gm_devent *down[GM_STAGE_RING_MAX]; /* the source context's */
    gm_devent *up[GM_STAGE_RING_MAX];   /* the destination context's */
} gm_stage_ring;

/* What a copy does with the ring: it must leave nothing pending on the
 * slots or events when it returns (it waits for both streams), failing or
 * not. */
typedef gpumem_status (*gm_stage_ring_fn)(void *arg, const gm_stage_ring *ring);

/* Runs fn(arg, ring) for a copy from src's context to dst's (two engines
 * of two contexts).  When src's engine placed its slots on a NUMA node
 * (gm_staging_node: the source device's, which is the one between the
 * two devices when they share a node) fn runs on a worker of that node's
 * pool, with that worker's lane, so the slots are the node's memory; else
 * on the calling thread with a caller lane.  Returns fn's status (its
 * message carried over to the calling thread), or the failure to get the
 * lanes (out of memory, a bad staging setting). */
gpumem_status gm_staging_peer_run(gm_staging *src, gm_staging *dst, gm_stage_ring_fn fn, void *arg,
                                  const char *what);

/* A pinned block of at least bytes for a download queued on a stream
 * (copy_queued.c): one the engine kept, else a new one from the allocator.
 * It goes back through gm_staging_bounce_put once the stream is done with
 * it. */
gpumem_status gm_staging_bounce_get(gpumem_context *ctx, size_t bytes, const char *what, gm_block *out);

/* Gives b back: kept for reuse (a few blocks per context, freed with the
 * engine), or freed.  b is cleared.  The status is the allocator's free's. */
gpumem_status gm_staging_bounce_put(gpumem_context *ctx, gm_block *b, const char *what);

/* The context hook (lib/wiring.c): ends the context's staging engine. */
extern const gm_context_hook gm_staging_hook;
/* Frees, in every context, the pinned slots no transfer is using and the
 * kept bounce blocks (gpumem_clear_context_caches).  Their page-locked
 * memory goes to the context's deferred frees, as every free does. */
void gm_staging_clear_all(void);

/* The NUMA node the engine of ctx placed its workers and slots on (-1:
 * none: one node, or unknown): the node of the copies' worker pool
 * (copy_workers.h), and for tests. */
int gm_staging_node(gpumem_context *ctx);

#endif /* GM_STAGING_H */
