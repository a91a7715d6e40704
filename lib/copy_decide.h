/*
 * copy_decide.h - the copy engine's decision (private): how one copy moves,
 * chosen once, before anything runs, by one pure function.
 *
 * gm_copy_decide takes both layouts (shape, strides, item size), both
 * memory kinds and addresses, the capabilities of the device side (its
 * largest pitch; whether the pack kernels, device scratch, the staging
 * engine and peer access are there) and one tuning snapshot
 * (copy_tuning.h), and returns a gm_copy_decision: the path that
 * gpumem_debug_last_copy_path reports, the plan (a short fixed list of
 * steps, gm_copy_step: a driver copy or the planner's rectangular copies, a
 * device pack or unpack kernel, a CPU pack into the staging slots or a
 * host buffer, a staged transfer, a move between devices, a copy of its
 * own into or out of a temporary or a bounce, a queued download's
 * landing, each with the buffers it reads and writes, chunked ones taking
 * the decision's chunks in turns), whether transfers are staged, how many
 * CPU threads pack, and how device scratch is cut into chunks.  It makes
 * no driver call (its probe's aside), takes no lock and reads no
 * environment: tests/test-copy-decide.c checks it against a table.
 *
 * A copy is decided once.  The capabilities are had before anything runs:
 * the decision asks the caller's probe (caps->probe, gm_copy_probe) for
 * each one as its rules reach it (the pack kernels of a device, device
 * scratch of the size its chunks take, the staging engine), the probe
 * acquires it for the copy, and a capability that cannot be had sends the
 * rules on to the next way, the decision recording why (gm_copy_reason).
 * Without a probe the caps' flags say what can be had (the tests' tables).
 * The executors (copy_engine.c, copy_peer.c, copy_temp.c, copy_queued.c)
 * run the plan's steps, with what was acquired; they never decide.  The
 * chunked steps of a packed run are fused: they run in turns, chunk by
 * chunk, on one or two streams.  A step that is a copy of its own
 * (GM_STEP_NESTED: a queued download's slabs into its bounce) runs
 * through gm_copy_inner (copy_engine.h): when the copy into the bounce is
 * one contiguous driver copy, each slab runs it on its own bytes,
 * undecided (the queued download is decided once); any other way is
 * decided once per extent of slab, two at most (copy_queued.c), and each
 * slab runs its extent's decision; the copies into and out of a temporary (overlapping device views,
 * a copy between devices without kernels or scratch) are plain steps,
 * decided with the rest of the plan.  A batch decides its pairs without a
 * probe; a pair that goes one by one runs that decision
 * (gm_copy_run_decided, copy_engine.h), the engine acquiring what its plan
 * takes and deciding it only when one of those cannot be had (or it is
 * between devices).  gm_copy_decide_count counts a thread's decisions.
 *
 * The rules, in order (a "dense" side fills one run of bytes: contiguous in
 * some axis order, axes possibly reversed):
 *  1. nothing to move (an extent 0, an item size 0): GPUMEM_COPY_PATH_NONE;
 *  2. device memory of two devices: copy_peer.c (PEER with peer access,
 *     else PEER_STAGED), the bytes crossing as one dense run (the crossing
 *     layout, gm_copy_crossing_layout):
 *     - both sides have its layout: one copy of the run (GM_PEER_COPY);
 *     - with peer access, a strided source into a destination that has it:
 *       one pack kernel on the source's device gathers the source and
 *       writes the destination through the peer mapping (GM_PEER_KERNEL,
 *       no scratch, peer_write);
 *     - with peer access, a source that has it into a strided destination:
 *       one unpack kernel on the destination's device reads the source
 *       through the peer mapping (GM_PEER_KERNEL, no scratch, peer_read);
 *     - with peer access, both strided: chunk by chunk through two scratch
 *       buffers on the destination's device, which the source's pack kernel
 *       fills through the peer mapping on two streams while the
 *       destination's device unpacks the other buffer (GM_PEER_PIPELINE,
 *       nbufs 2);
 *     - staged, through the pinned slots of the staging engine (the
 *       download of one slot overlapping the upload of another), a strided
 *       side packed or unpacked chunk by chunk through one scratch buffer
 *       on its own device (GM_PEER_PIPELINE, nbufs 1; GM_PEER_COPY when
 *       neither side is strided);
 *     - without the kernels (or, where scratch is needed, without scratch):
 *       temporaries as large as the copy (GM_PEER_TEMPS, the reason set),
 *       laid out as the run; the copies into and out of them are steps of
 *       the plan on each side's device (rectangular copies, or one kernel
 *       where that device's kernels can be had);
 *  3. both sides host-addressable: the CPU copies (HOST), through a
 *     temporary when the bytes overlap;
 *  4. a download into pageable memory on a stream: queued into a pinned
 *     bounce block laid out like the destination (copy_queued.c); the rest
 *     of the decision is that of the copy into the bounce;
 *  5. overlapping device views: through a temporary like the source, two
 *     copies, each decided here and one step of the plan (the planner's
 *     rectangular copies, or one kernel: the temporary is dense); the path
 *     is the second's;
 *  6. one rectangular copy of the planner (copyplan.h): a contiguous
 *     transfer between host and device (STAGED through the staging engine
 *     when the host side is pageable and at least staging.min_bytes, or
 *     split at any size, else CONTIGUOUS), or one driver copy (CONTIGUOUS,
 *     DMA) when its rows are at least min_row_bytes wide and, with a
 *     pageable host side, the copy is below staging.min_bytes and not split
 *     (the driver's own staging of a 2-D copy is slow, and it refuses split
 *     bytes);
 *  7. otherwise the strided sides are packed so that one run crosses:
 *     - device to device: one pack kernel into a dense destination, one
 *       unpack kernel from a dense source, else pack and unpack through
 *       device scratch (DEVICE_PACK);
 *     - a dense host side crosses as it is, into or out of device scratch
 *       that the kernels unpack or pack (DEVICE_PACK);
 *     - a strided host side is packed or unpacked by the staging engine's
 *       threads straight into or out of its pinned slots (staging.h), in
 *       the same pass as the transfer; the dense device side is the
 *       transfer's other end (CPU_PACK), else device scratch is
 *       (CPU_DEVICE_PACK);
 *     the run is laid out like the dense side that ends it, else
 *     contiguously in the destination's axis order;
 *  8. without the kernels or without scratch, what the planner's
 *     rectangular copies can do they do (DMA, DMA_LOOP), a strided host
 *     side still packed by the CPU, through a host buffer (CPU_PACK when
 *     one rectangular copy then remains).
 * Device scratch is at most two buffers of tuning.scratch_chunk bytes (unset:
 * GM_COPY_SCRATCH_CHUNK, or between devices with peer access a quarter of
 * the copy up to GM_COPY_PEER_CHUNK_MAX): the
 * run is cut into chunks along its outermost axes (a range of indices of
 * one axis, one index of each axis outside it, all of each inside), which
 * the kernels and the transfers take in turns, on two streams when a
 * transfer is involved so that they overlap.  A staged copy's transfers
 * are one transfer of the staging engine whose threads take chunks of the
 * two buffers that are open (staging.h's segments), so its buffers are at
 * least the staging window, staging.threads x staging.chunk_bytes, at
 * most GM_COPY_SCRATCH_STAGED_MAX (or the copy's bytes): every thread finds
 * a slot's worth to move; when that much scratch cannot be had
 * (caps->small_scratch) they are tuning.scratch_chunk (GM_REASON_SMALL_SCRATCH).
 */
#ifndef GM_COPY_DECIDE_H
#define GM_COPY_DECIDE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "copy_tuning.h"
#include "gpumem/debug.h"
#include "gpumem/status.h"
#include "layout.h"

/* How one side of a copy is held. */
typedef enum gm_copy_mem {
    GM_COPY_MEM_DEVICE = 0, /* device memory: only the driver moves it */
    GM_COPY_MEM_PAGEABLE,   /* host memory the driver does not know */
    GM_COPY_MEM_LOCKED,     /* page-locked host memory: pinned, mapped, registered */
    GM_COPY_MEM_MANAGED     /* managed memory (the CPU may address it) */
} gm_copy_mem;

typedef struct gm_copy_side {
    gm_copy_mem mem;
    int device;             /* the device of device memory; -1 otherwise */
    uint64_t addr;          /* element 0's address (device or host) */
    const int64_t *strides; /* bytes per axis */
    bool split;             /* PAGEABLE bytes partly page-locked, not in one range (hostreg.h's
                             * GM_HOST_SPLIT): the driver refuses them, so the copy is staged */
} gm_copy_side;

/* What a copy may hold while it runs, that the decision asks for as its
 * rules reach it (gm_copy_probe). */
typedef enum gm_copy_need {
    GM_NEED_KERNELS = 0,   /* the pack kernels of a device */
    GM_NEED_SCRATCH,       /* device scratch of `bytes` there (two: with a side stream) */
    GM_NEED_WINDOW,        /* the same, a staged copy's window of it (smaller buffers may replace it) */
    GM_NEED_STAGING        /* the staging engine of the device side's context */
} gm_copy_need;

/* The caller's side of the capabilities: acquire gets what the decision
 * needs, for the copy, and keeps it until the copy is done: *have false when
 * it cannot be had (the kernels cannot be loaded, the device has no room,
 * another copy is using the staging engine), and the decision takes another
 * way; a failure (its message set, naming the call) makes the decision
 * GM_HOW_FAIL with that status and probe_failed.  `side` is the device
 * asked about between two devices (0: the source's, 1: the destination's).
 * A need may be asked again (scratch: a window, then smaller buffers; the
 * kernels by both copies through a temporary): the probe answers from what
 * it holds. */
typedef struct gm_copy_probe {
    gpumem_status (*acquire)(void *arg, gm_copy_need need, int side, uint64_t bytes, bool two, bool *have);
    void *arg;
} gm_copy_probe;

/* What is known of the machine for this copy. */
typedef struct gm_copy_caps {
    const gm_copy_probe *probe; /* NULL: the flags below say what can be had */
    size_t max_pitch;  /* the largest 2-D/3-D pitch (CU_DEVICE_ATTRIBUTE_MAX_PITCH); 0: no limit */
    bool on_stream;    /* queued on a stream (else synchronous) */
    bool peer;         /* two devices: peer access is on for the pair */
    bool no_kernels;   /* the pack kernels cannot be loaded */
    bool no_scratch;   /* device scratch cannot be had */
    bool small_scratch; /* the staged window of scratch cannot be had: buffers of tuning.scratch_chunk */
    bool staging_busy; /* the staging engine is busy */
} gm_copy_caps;

/* What the executor does. */
typedef enum gm_copy_how {
    GM_HOW_NONE = 0, /* nothing */
    GM_HOW_FAIL,     /* the copy cannot run: status (and bad, for a setting) */
    GM_HOW_HOST,     /* the CPU copies the plan (via_temp: through a temporary) */
    GM_HOW_PEER,     /* between two devices (copy_peer.c) */
    GM_HOW_TEMP,     /* through a device temporary like the source: two copies */
    GM_HOW_TRANSFER, /* one contiguous transfer between host and device (staged or not) */
    GM_HOW_RECT,     /* the plan's rectangular driver copies (one, or a loop) */
    GM_HOW_KERNEL,   /* device to device: one pack kernel (dst dense) or unpack kernel (src dense) */
    GM_HOW_PACKED    /* through one packed run (src_op, dst_op, run) */
} gm_copy_how;

/* GM_HOW_PACKED: how each side meets the run. */
typedef enum gm_copy_op {
    GM_OP_DIRECT = 0, /* the side is dense: it is the run (its end of the transfer) */
    GM_OP_KERNEL,     /* a device side: the pack kernels, into or out of device scratch */
    GM_OP_CPU,        /* a host side: the staging engine's threads, into or out of its pinned slots as
                       * they cross (or, with GM_OP_RECT, the worker pool's into or out of a host buffer) */
    GM_OP_RECT        /* a device side without kernels or scratch: the planner's driver copies to or from the run's host buffer (host_run) */
} gm_copy_op;

/* GM_HOW_PACKED: the layout of the run. */
typedef enum gm_copy_run_layout {
    GM_RUN_SRC = 0, /* the source's strides */
    GM_RUN_DST,     /* the destination's strides */
    GM_RUN_LIKE_DST, /* contiguous in the destination's axis order (gm_layout_strides_like) */
    GM_RUN_LIKE_SRC, /* contiguous in the source's axis order */
    GM_RUN_CROSSING  /* between two devices: gm_copy_crossing_layout */
} gm_copy_run_layout;

/* GM_HOW_PEER: how the bytes cross between the two devices. */
typedef enum gm_peer_way {
    GM_PEER_COPY = 0, /* both sides dense alike: one run (cuMemcpyPeer, or through the pinned slots) */
    GM_PEER_KERNEL,   /* one kernel on the strided side's device, the other side through peer access */
    GM_PEER_PIPELINE, /* chunks through scratch, the two devices overlapping */
    GM_PEER_TEMPS     /* without the kernels or scratch: temporaries as large as the copy */
} gm_peer_way;

/* Why a cheaper way was not taken. */
typedef enum gm_copy_reason {
    GM_REASON_NONE = 0,
    GM_REASON_NO_KERNELS,  /* the driver cannot load the pack kernels */
    GM_REASON_NO_SCRATCH,  /* device scratch could not be allocated */
    GM_REASON_STAGING_BUSY, /* another copy was using the staging engine */
    GM_REASON_SMALL_SCRATCH /* a staged copy's window of scratch could not be had: smaller buffers */
} gm_copy_reason;

/* The plan: what the executors run, step by step. */
typedef enum gm_step_kind {
    GM_STEP_HOST = 1,   /* the CPU copies (through a host temporary: via_temp) */
    GM_STEP_COPY,       /* one driver copy of one run */
    GM_STEP_RECT,       /* the planner's rectangular driver copies (copyplan.h) */
    GM_STEP_STAGED,     /* a transfer through the staging engine's pinned slots */
    GM_STEP_PACK,       /* a device pack kernel: a strided side gathered into a dense one */
    GM_STEP_UNPACK,     /* a device unpack kernel: a dense side scattered into a strided one */
    GM_STEP_CPU_PACK,   /* the CPU packs a strided host side (into the slots as they cross, or a host buffer) */
    GM_STEP_CPU_UNPACK, /* the CPU unpacks into a strided host side */
    GM_STEP_PEER,       /* a move between two devices (peer_way says how, copy_peer.c) */
    GM_STEP_NESTED,     /* a queued download's slabs into the bounce (gm_copy_inner: the decision's one
                         * driver copy on each slab's bytes, else one decision per slab extent) */
    GM_STEP_LAND        /* a queued download's landing: the bounce into the destination, by the workers */
} gm_step_kind;

/* The buffers a step reads and writes. */
typedef enum gm_step_buf {
    GM_BUF_SRC = 1,  /* the source */
    GM_BUF_DST,      /* the destination */
    GM_BUF_SCRATCH,  /* device scratch (pack_calls.h), chunk by chunk */
    GM_BUF_SLOTS,    /* the staging engine's pinned slots */
    GM_BUF_HOST_RUN, /* a pageable host buffer that holds the run (host_run) */
    GM_BUF_TEMP,     /* a device temporary as large as the copy */
    GM_BUF_BOUNCE    /* a queued download's pinned bounce block */
} gm_step_buf;

typedef struct gm_copy_step {
    gm_step_kind kind;
    gm_step_buf from, to;
    bool chunked; /* chunk by chunk, in turns with the other chunked steps (the decision's chunks) */
} gm_copy_step;

#define GM_COPY_STEPS_MAX 4

typedef struct gm_copy_decision {
    gpumem_copy_path path; /* what gpumem_debug_last_copy_path reports */
    int nsteps;            /* the plan: its steps, in order (0: nothing runs) */
    gm_copy_step steps[GM_COPY_STEPS_MAX];
    gm_copy_how how;
    gm_copy_reason reason;
    gpumem_status status;  /* GM_HOW_FAIL: the status */
    unsigned bad;          /* GM_HOW_FAIL: the GM_TUNE_BAD_* settings at fault (0: the planner's error) */
    bool queued;           /* a download into pageable memory queued on the stream through a bounce */
    /* GM_HOW_TRANSFER: the run's offsets from each side's element 0, and its bytes */
    int64_t src_offset, dst_offset;
    uint64_t width;
    bool via_temp;         /* GM_HOW_HOST: the sides overlap */
    /* GM_HOW_PACKED */
    gm_copy_op src_op, dst_op;
    gm_copy_run_layout run;
    bool host_run;         /* a pageable host buffer holds the run (src_op or dst_op GM_OP_RECT) */
    bool staged;           /* the transfers go through the staging engine (a pageable or strided host end) */
    unsigned cpu_threads;  /* threads that pack or unpack a strided host side (GM_OP_CPU) */
    bool transpose;        /* the kernels of the whole copy are the tiled transpose */
    /* device scratch, GM_HOW_PACKED with a GM_OP_KERNEL side (nchunks 0: none) */
    uint64_t nchunks;      /* chunks of the run */
    uint64_t chunk_bytes;  /* bytes of one scratch buffer: the largest chunk */
    int nbufs;             /* scratch buffers taking turns: 1 or 2 */
    bool overlap;          /* the kernels and the transfers on two streams */
    int nrun;              /* axes of extent > 1, in the run's order (outermost first) */
    int8_t run_order[GM_MAX_NDIM];
    int chunk_level;       /* a chunk: a range of run_order[chunk_level], one index of each axis outside */
    int64_t chunk_extent;  /* indices of that axis per chunk (the last chunk of a range may have fewer) */
    /* GM_HOW_PEER (run GM_RUN_CROSSING): how the run crosses (rule 2); the
     * chunks of GM_PEER_PIPELINE are those above (nbufs scratch buffers of
     * chunk_bytes on the destination's device with peer access, one on each
     * strided side's device staged) */
    gm_peer_way peer_way;
    bool peer_pack_src;    /* the source is packed on its device */
    bool peer_unpack_dst;  /* the destination is unpacked on its device */
    bool peer_write;       /* the source's pack kernel writes the other device's memory (peer mapping) */
    bool peer_read;        /* the destination's unpack kernel reads the other device's memory (peer mapping) */
    bool probe_failed;     /* GM_HOW_FAIL: caps->probe's acquire failed (its message is complete) */
} gm_copy_decision;

/* Decides how to copy src into dst, equally shaped arrays of ndim axes of
 * `shape` with elements of itemsize bytes.  Never fails: a copy that
 * cannot run is GM_HOW_FAIL with its status (a planner error also sets the
 * thread's message, naming no function: the caller prefixes it; a bad
 * setting is replayed by gm_copy_tuning_error). */
void gm_copy_decide(int ndim, const int64_t *shape, size_t itemsize, const gm_copy_side *src,
                    const gm_copy_side *dst, const gm_copy_caps *caps, const gm_copy_tuning *tuning,
                    gm_copy_decision *out);

/* How many times the calling thread called gm_copy_decide (for tests:
 * a copy is decided once). */
unsigned long gm_copy_decide_count(void);

/* Whether strides make a dense layout of shape (axes of extent 1 aside). */
bool gm_copy_dense(int ndim, const int64_t *shape, const int64_t *strides, size_t itemsize);

/* The strides of a packed run: the strides of its side (GM_RUN_SRC,
 * GM_RUN_DST) or the contiguous ones in that side's axis order. */
void gm_copy_run_strides(const gm_copy_decision *d, int ndim, const int64_t *shape, size_t itemsize,
                         const int64_t *src_strides, const int64_t *dst_strides, int64_t *out);

/* Chunk c (0 .. d->nchunks - 1) of a decision's run: per axis the first
 * index and the extent (start, extent: a sub-view of both sides), and the
 * chunk's bytes in the run, [*offset, *offset + *bytes) from the run's
 * lowest byte (they are one run: the chunks tile the run in order). */
void gm_copy_chunk(const gm_copy_decision *d, int ndim, const int64_t *shape, size_t itemsize,
                   const int64_t *run_strides, uint64_t c, int64_t *start, int64_t *extent, uint64_t *offset,
                   uint64_t *bytes);

/* The layout of the run that crosses between two devices (copy_peer.c):
 * both sides' own when they share a dense one, else the destination's when
 * it is dense with positive strides, else the source's, else contiguous in
 * the destination's axis order. */
void gm_copy_crossing_layout(int ndim, const int64_t *shape, size_t itemsize, const int64_t *src_strides,
                             const int64_t *dst_strides, int64_t *out);

/* Whether a side has exactly the dense layout s (axes of extent 1 aside). */
bool gm_copy_has_layout(int ndim, const int64_t *shape, const int64_t *strides, size_t itemsize, const int64_t *s);

#endif /* GM_COPY_DECIDE_H */
