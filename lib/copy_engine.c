/*
 * copy_engine.c - the copy engine: every copy between two arrays is decided
 * once (copy_decide.c, which says the rules) and carried out here.  The
 * decision acquires what it takes through the job's probe (acquire below:
 * the pack kernels, device scratch, the staging engine), or takes another
 * way; the executors run its plan's steps with what it acquired (execute():
 * one step, a packed run's steps fused chunk by chunk, two steps through a
 * temporary; copy_peer.c between devices, copy_queued.c a queued download).
 *
 * A copy that fits one scratch chunk (the decision's nchunks <= 1) changes
 * nothing in the destination when it fails before its last step: the
 * destination is written once, by the final operation (a transfer, a
 * kernel, or the CPU's unpacking after the transfer completed), and
 * everything before it writes scratch or staging memory only.  A copy of
 * several chunks writes the destination chunk by chunk.  The destination's
 * gaps are never written.
 *
 * Device scratch comes from a cache kept with the context's pack kernels
 * (pack_calls.h): a copy on a stream orders its scratch with events on the
 * device and never waits for its stream because of it.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "copy_debug.h"
#include "copy_decide.h"
#include "copy_engine.h"
#include "copy_peer.h"
#include "copy_workers.h"
#include "copyplan.h"
#include "error.h"
#include "gpumem/dtype.h"
#include "pack_calls.h"
#include "staging.h"
#include "stream.h"

/* Whether the executor of d finishes the copy before it returns (on a
 * stream; without one every copy does): the CPU's copies, a download
 * unpacked by the CPU (it waits for the bytes), the staging engine's
 * downloads, a copy between devices other than one queued peer copy (those
 * wait for both devices' streams). */
static bool lands_before_return(const gm_copy_decision *d, const gpumem_array *dst, const gpumem_stream *stream)
{
    if (stream == NULL || d->how == GM_HOW_NONE || d->how == GM_HOW_FAIL || d->how == GM_HOW_HOST)
        return true;
    if (d->queued)
        return false;
    if (d->how == GM_HOW_PEER)
        return !(d->path == GPUMEM_COPY_PATH_PEER && d->peer_way == GM_PEER_COPY);
    bool to_host = !gm_array_on_device(dst);
    return to_host && ((d->how == GM_HOW_PACKED && d->dst_op == GM_OP_CPU) || (d->how == GM_HOW_TRANSFER && d->staged));
}

/* GPUMEM_DEBUG=poison: a download from the device whose destination the
 * device's transfers write (page-locked host memory) after the call
 * returned, queued on a stream.  (A queued download into pageable memory
 * poisons its destination itself, copy_queued.c; a download the CPU
 * unpacks, or one without a stream, has landed when the call returns.) */
static bool poisons_destination(const gm_copy_decision *d, const gpumem_array *dst, const gpumem_array *src,
                                const gm_copy_side *dside, const gpumem_stream *stream)
{
    return stream != NULL && gm_array_on_device(src) && dside->mem == GM_COPY_MEM_LOCKED && !d->queued &&
           !lands_before_return(d, dst, stream) && gm_array_size(dst) > 0;
}

/* ---- sides and driver copies --------------------------------------------------------------------- */

/* How the driver addresses one side of a copy. */
typedef struct side {
    int memtype;         /* GM_CU_MEMORYTYPE_HOST, _DEVICE or _UNIFIED */
    char *host;          /* element 0, for HOST */
    gm_cu_deviceptr dev; /* element 0, for DEVICE and UNIFIED */
} side;

static side side_of(const gpumem_array *a)
{
    side s = {GM_CU_MEMORYTYPE_HOST, a->host, 0};
    if (gm_array_on_device(a)) {
        s.memtype = GM_CU_MEMORYTYPE_DEVICE;
        s.dev = a->dev;
    } else if (a->kind == GPUMEM_MEMORY_MANAGED) {
        s.memtype = GM_CU_MEMORYTYPE_UNIFIED;
        s.dev = a->dev;
    }
    return s;
}

static gm_cu_deviceptr side_addr(const side *s, int64_t offset)
{
    return s->memtype == GM_CU_MEMORYTYPE_HOST ? (gm_cu_deviceptr)(uintptr_t)(s->host + offset)
                                               : s->dev + (gm_cu_deviceptr)offset;
}

gm_copy_side gm_copy_decide_side(const gpumem_array *a)
{
    gm_copy_side s = {GM_COPY_MEM_LOCKED, -1, (uint64_t)(uintptr_t)a->host, a->strides, false};
    gm_host_lock lock = gm_array_lock_state(a);
    if (gm_array_on_device(a)) {
        s = (gm_copy_side){GM_COPY_MEM_DEVICE, a->ctx != NULL ? a->ctx->device : -1, a->dev, a->strides, false};
    } else if (a->kind == GPUMEM_MEMORY_MANAGED) {
        s.mem = GM_COPY_MEM_MANAGED;
    } else if (lock != GM_HOST_LOCKED) {
        s.mem = GM_COPY_MEM_PAGEABLE;
        s.split = lock == GM_HOST_SPLIT;
    }
    return s;
}

/* One copy's state: where it runs, and what it holds and queued. */
typedef struct job {
    const char *what;
    gpumem_context *ctx;
    gpumem_stream *stream;
    gm_dstream *ds;
    int async;
    side src, dst;            /* for plan visits */
    gm_pack_kernels *kernels; /* held for the copy */
    gm_scratch *scratch;      /* device scratch, held for the copy */
    gm_staging *stage;        /* the staging engine, held when the decision stages */
    gpumem_array *run_buf;    /* the pageable host array that holds the run (the decision's host_run) */
    bool pending;             /* work is queued on ds that a synchronous copy must wait for */
    bool side_pending;        /* work is queued on the scratch's side stream that ds does not wait for */
    gpumem_array *temp;       /* the device temporary of a copy through one (GM_HOW_TEMP) */
    bool *synced;             /* set when the copy waited for its stream after all */
    bool cross;               /* between two devices: what the copy holds is in peer */
    gm_peer_hold peer;
} job;

/* A copy's job, holding nothing yet: field by field (a zeroing initializer's
 * `rep stos` was a tenth of a small copy's own time); src and dst are set in
 * run_rect, peer only between two devices (cross). */
static void job_start(job *j, const char *what, gpumem_context *ctx, gpumem_stream *stream, bool *synced)
{
    j->what = what;
    j->ctx = ctx;
    j->stream = stream;
    j->ds = gm_stream_ds(stream);
    j->async = stream != NULL;
    j->kernels = NULL;
    j->scratch = NULL;
    j->stage = NULL;
    j->run_buf = NULL;
    j->pending = j->side_pending = false;
    j->temp = NULL;
    j->synced = synced;
    j->cross = false;
}

/* One rectangular copy of a plan, with the driver. */
static gpumem_status run_one(void *arg, const gm_copy_plan *p, int64_t src_off, int64_t dst_off)
{
    job *r = arg;
    gm_dctx *dctx = r->ctx->dctx;
    r->pending |= r->async != 0;
    if (p->dims == 1)
        return gm_drv_check(GM_DRV(memcpy, dctx, side_addr(&r->dst, dst_off), side_addr(&r->src, src_off),
                                   p->width, r->ds, r->async),
                            GM_OP_memcpy, r->what);
/* CUDA_MEMCPY2D and CUDA_MEMCPY3D name their common fields alike. */
#define SET_COMMON(c)                                                   \
    do {                                                                \
        memset(&(c), 0, sizeof(c));                                     \
        (c).srcMemoryType = r->src.memtype;                             \
        (c).dstMemoryType = r->dst.memtype;                             \
        if (r->src.memtype == GM_CU_MEMORYTYPE_HOST)                    \
            (c).srcHost = r->src.host + src_off;                        \
        else                                                            \
            (c).srcDevice = r->src.dev + (gm_cu_deviceptr)src_off;      \
        if (r->dst.memtype == GM_CU_MEMORYTYPE_HOST)                    \
            (c).dstHost = r->dst.host + dst_off;                        \
        else                                                            \
            (c).dstDevice = r->dst.dev + (gm_cu_deviceptr)dst_off;      \
        (c).srcPitch = p->src_pitch;                                    \
        (c).dstPitch = p->dst_pitch;                                    \
        (c).WidthInBytes = p->width;                                    \
        (c).Height = p->height;                                         \
    } while (0)
    if (p->dims == 2) {
        gm_cu_memcpy2d c;
        SET_COMMON(c);
        return gm_drv_check(GM_DRV(memcpy_2d, dctx, &c, r->ds, r->async), GM_OP_memcpy_2d, r->what);
    }
    gm_cu_memcpy3d c;
    SET_COMMON(c);
    c.srcHeight = p->src_height;
    c.dstHeight = p->dst_height;
    c.Depth = p->depth;
#undef SET_COMMON
    return gm_drv_check(GM_DRV(memcpy_3d, dctx, &c, r->ds, r->async), GM_OP_memcpy_3d, r->what);
}

/* The planner's rectangular copies between two layouts of the copy. */
static gpumem_status run_rect(job *j, const gpumem_array *a, const int64_t *sstrides, side src,
                              const int64_t *dstrides, side dst)
{
    gm_copy_plan plan;
    size_t max_pitch = j->ctx->max_pitch > 0 ? j->ctx->max_pitch : SIZE_MAX;
    gpumem_status st = gm_copy_plan_make(a->ndim, a->shape, sstrides, dstrides, a->itemsize, max_pitch, &plan);
    if (st != GPUMEM_OK)
        return gm_error_prefix(st, j->what);
    j->src = src;
    j->dst = dst;
    return gm_copy_plan_visit(&plan, run_one, j);
}

/* One contiguous transfer of bytes on ds, lowest address to lowest address;
 * dir 1 uploads, -1 downloads.  Through the staging engine when the
 * decision staged the copy (its host end is pageable). */
static gpumem_status transfer(job *j, gm_dstream *ds, gm_cu_deviceptr dst, gm_cu_deviceptr src, size_t bytes, int dir,
                              int async)
{
    if (bytes == 0)
        return GPUMEM_OK;
    if (j->stage != NULL)
        return dir > 0 ? gm_staging_upload(j->stage, dst, (const void *)(uintptr_t)src, bytes, ds, async == 1, j->what)
                       : gm_staging_download(j->stage, (void *)(uintptr_t)dst, src, bytes, ds, j->what);
    return gm_drv_check(GM_DRV(memcpy, j->ctx->dctx, dst, src, bytes, ds, async), GM_OP_memcpy, j->what);
}

/* ---- layouts --------------------------------------------------------------------------------------- */

/* The offset of the lowest byte of a layout from its element 0 (<= 0). */
static int64_t low_of(int ndim, const int64_t *shape, const int64_t *strides, size_t itemsize)
{
    int64_t lo = 0, hi = 0;
    gm_layout_extent(ndim, shape, strides, itemsize, &lo, &hi);
    return lo;
}

static uint64_t nbytes_of(const gpumem_array *a)
{
    return (uint64_t)gm_array_size(a) * a->itemsize;
}

static int64_t dot(int ndim, const int64_t *a, const int64_t *b)
{
    int64_t s = 0;
    for (int i = 0; i < ndim; i++)
        s += a[i] * b[i];
    return s;
}

/* ---- what a copy holds -------------------------------------------------------------------------- */

/* gm_copy_probe's acquire (copy_decide.h): what the decision asks for,
 * held by the job until finish().  The kernels: *have false when the
 * driver cannot load them.  Device scratch (and a side stream when two):
 * *have false when the device has no room; the copy's stream waits for its
 * last use.  The staging engine. */
static gpumem_status acquire(void *arg, gm_copy_need need, int which, uint64_t bytes, bool two, bool *have)
{
    job *j = arg;
    gpumem_status st = GPUMEM_OK;
    *have = false;
    if (j->cross)
        return gm_copy_peer_acquire(j->what, &j->peer, need, which, bytes, two, have);
    switch (need) {
    case GM_NEED_KERNELS:
        if (j->kernels == NULL)
            st = gm_pack_kernels_get(j->ctx, j->what, &j->kernels);
        *have = j->kernels != NULL;
        return st;
    case GM_NEED_STAGING:
        if (j->stage == NULL)
            st = gm_staging_acquire(j->ctx, &j->stage);
        *have = j->stage != NULL;
        return st;
    default: break;
    }
    if (j->kernels == NULL || j->scratch != NULL) /* asked after the kernels, once had */
        return GPUMEM_OK;
    st = gm_pack_scratch_get(j->kernels, (size_t)bytes, two, j->what, &j->scratch);
    if (st == GPUMEM_ERROR_OUT_OF_MEMORY)
        return GPUMEM_OK;
    if (st != GPUMEM_OK)
        return st;
    *have = true;
    if (j->scratch->used) {
        j->pending = true;
        st = gm_drv_check(GM_DRV(stream_wait_event, j->ctx->dctx, j->ds, j->scratch->ev[GM_SCRATCH_DONE]),
                          GM_OP_stream_wait_event, j->what);
    }
    return st;
}

/* The run's host buffer of bytes (the decision's host_run): a pageable host
 * array, not the staging engine's pinned slots. */
static gpumem_status run_buffer(job *j, uint64_t bytes, char **addr)
{
    int64_t n = (int64_t)bytes, one = 1;
    gpumem_status st = gm_array_new_host(j->what, 1, &n, &one, gpumem_dtype_builtin(GPUMEM_UINT8), &j->run_buf);
    if (st == GPUMEM_OK)
        *addr = j->run_buf->host;
    return st;
}

/* Gives back the scratch: after the work queued on it (an event on the
 * copy's stream that the next user waits for), or, after a failure, once
 * both streams are done with it. */
static void put_scratch(job *j, gpumem_status st)
{
    gm_scratch *s = j->scratch;
    if (s == NULL)
        return;
    gm_dctx *dctx = j->ctx->dctx;
    bool recorded = false; /* raw driver calls: the thread's last failure stays */
    if (st == GPUMEM_OK && !j->side_pending)
        recorded = GM_DRV(event_record, dctx, s->ev[GM_SCRATCH_DONE], j->ds) == GM_CUDA_SUCCESS;
    if (!recorded) {
        if (s->side != NULL)
            (void)GM_DRV(stream_synchronize, dctx, s->side);
        (void)GM_DRV(stream_synchronize, dctx, j->ds);
    }
    s->used = recorded;
    gm_pack_scratch_put(j->kernels, s);
    j->scratch = NULL;
}

/* Waits for what the copy queued where it must (a synchronous copy is
 * complete on return), then gives back what it held.  Keeps the first
 * error. */
static gpumem_status finish(job *j, gpumem_status st)
{
    if (j->pending && !j->async) {
        gpumem_status sst = gm_keep_first(st, gm_drv_check(GM_DRV(stream_synchronize, j->ctx->dctx, j->ds),
                                                           GM_OP_stream_synchronize, j->what));
        if (sst != GPUMEM_OK && st == GPUMEM_OK)
            st = gm_error_reword(sst, "%s (waiting for the copy: the write into the destination was issued)",
                                 gm_error_message());
    }
    put_scratch(j, st);
    gm_staging_release(j->stage);
    j->stage = NULL;
    if (j->run_buf != NULL)
        st = gm_keep_first(st, gm_copy_release_temp(j->what, j->run_buf));
    j->run_buf = NULL;
    gm_pack_kernels_put(j->kernels);
    j->kernels = NULL;
    if (j->cross)
        gm_copy_peer_release(&j->peer);
    if (j->temp != NULL) /* once the steps through it are done (their stream's write-back), or now */
        st = gm_copy_temp_end(j->what, j->temp, j->stream, j->ctx, st, j->synced);
    j->temp = NULL;
    return st;
}

/* ---- packing ----------------------------------------------------------------------------------------- */

/* A pack (unpack: false) or unpack (true) between a strided side with
 * strides ss, element 0 at saddr, and a packed side with strides ps,
 * element 0 at paddr, of shape (ndim, shape), on the device. */
static gpumem_status device_pack(job *j, int ndim, const int64_t *shape, size_t itemsize, const int64_t *ss,
                                 uint64_t saddr, const int64_t *ps, uint64_t paddr, bool unpack)
{
    gm_pack_plan plan;
    gpumem_status st = gm_pack_plan_make(ndim, shape, ss, ps, itemsize, saddr, paddr, unpack, &plan);
    if (st != GPUMEM_OK)
        return gm_error_prefix(st, j->what);
    if (plan.bytes == 0)
        return GPUMEM_OK;
    j->pending = true;
    return gm_pack_launch(j->kernels, &plan, saddr, paddr, j->stream, j->what);
}

/* A CPU pack or unpack of array a between host addresses, on the worker
 * pool (copy_workers.h). */
static gpumem_status cpu_pack(job *j, const gpumem_array *a, const int64_t *ss, const char *sbase, const int64_t *ps,
                              const char *pbase, bool unpack)
{
    gm_pack_plan plan;
    uint64_t saddr = (uint64_t)(uintptr_t)sbase, paddr = (uint64_t)(uintptr_t)pbase;
    gpumem_status st = gm_pack_plan_make(a->ndim, a->shape, ss, ps, a->itemsize, saddr, paddr, unpack, &plan);
    if (st != GPUMEM_OK)
        return gm_error_prefix(st, j->what);
    if (plan.bytes > 0) {
        plan.params.strided += saddr;
        plan.params.packed += paddr;
        gm_copy_cpu_pack(j->ctx, &plan.params, unpack, plan.bytes);
    }
    return GPUMEM_OK;
}

/* A transfer between a strided host side (a view of shape ext with
 * strides hs, element 0 at host) and a packed run on the device (strides
 * ps, element 0 at dev), on ds, through the staging engine: its threads
 * pack (dir 1) or unpack (-1) each chunk straight into or out of their
 * pinned slots, in the same pass as the transfer. */
static gpumem_status staged_pack(job *j, int ndim, const int64_t *ext, size_t itemsize, const int64_t *hs, char *host,
                                 const int64_t *ps, uint64_t dev, int dir, gm_dstream *ds, int async, unsigned threads)
{
    gm_pack_plan plan;
    uint64_t haddr = (uint64_t)(uintptr_t)host;
    gpumem_status st = gm_pack_plan_make(ndim, ext, hs, ps, itemsize, haddr, dev, dir < 0, &plan);
    if (st != GPUMEM_OK)
        return gm_error_prefix(st, j->what);
    if (plan.bytes == 0)
        return GPUMEM_OK;
    plan.params.strided += haddr;
    gm_stage_op op = {.dir = dir, .dev = dev + plan.params.packed, .pack = &plan.params, .bytes = plan.bytes,
                      .threads = threads};
    return gm_staging_run(j->stage, &op, ds, async, j->what);
}

/* ---- the executors ---------------------------------------------------------------------------------- */

static gpumem_status wait_event(job *j, gm_dstream *ds, int ev)
{
    return gm_drv_check(GM_DRV(stream_wait_event, j->ctx->dctx, ds, j->scratch->ev[ev]), GM_OP_stream_wait_event,
                        j->what);
}

static gpumem_status record(job *j, gm_dstream *ds, int ev)
{
    return gm_drv_check(GM_DRV(event_record, j->ctx->dctx, j->scratch->ev[ev], ds), GM_OP_event_record, j->what);
}

/* The chunks of a packed run through device scratch.  rs: the run's
 * strides, rlo: its lowest byte's offset from its element 0; host: the
 * run's lowest byte in host memory (the dense host side or the staging
 * buffer), NULL device to device.  Kernels run on the copy's stream;
 * transfers too, or, when overlapping, on the scratch's side stream, the
 * two taking turns on the two buffers through events. */
static gpumem_status run_chunks(job *j, const gm_copy_decision *d, gpumem_array *dst, const gpumem_array *src,
                                const int64_t *rs, int64_t rlo, char *host)
{
    const int nd = dst->ndim;
    const int64_t *shape = dst->shape;
    const size_t isz = dst->itemsize;
    gm_scratch *s = j->scratch;
    const uint64_t buf[2] = {s->addr, s->addr + d->chunk_bytes};
    gm_dstream *S = j->ds, *X = d->overlap ? s->side : j->ds;
    const int xasync = d->overlap ? 1 : j->async;
    const bool down = d->src_op == GM_OP_KERNEL; /* the kernels fill the buffers (D2D, D2H) */
    gpumem_status st = GPUMEM_OK;
    if (d->overlap) {
        j->side_pending = true;
        if ((st = record(j, S, GM_SCRATCH_START)) == GPUMEM_OK)
            st = wait_event(j, X, GM_SCRATCH_START);
    }
    int last = 0;
    for (uint64_t c = 0; st == GPUMEM_OK && c < d->nchunks; c++) {
        const int h = (int)(c % (uint64_t)d->nbufs);
        int64_t start[GM_MAX_NDIM], ext[GM_MAX_NDIM];
        uint64_t off = 0, n = 0;
        gm_copy_chunk(d, nd, shape, isz, rs, c, start, ext, &off, &n);
        /* element 0 of the chunk on each side; in the buffer, the run's layout from its lowest byte */
        uint64_t saddr = src->dev + (uint64_t)dot(nd, start, src->strides);
        uint64_t daddr = dst->dev + (uint64_t)dot(nd, start, dst->strides);
        uint64_t baddr = buf[h] + (uint64_t)(dot(nd, start, rs) - rlo) - off;
        last = h;
        if (down) {
            if (d->overlap && c >= 2)
                st = wait_event(j, S, GM_SCRATCH_DRAIN + h);
            if (st == GPUMEM_OK)
                st = device_pack(j, nd, ext, isz, src->strides, saddr, rs, baddr, false);
            if (st != GPUMEM_OK)
                break;
            if (d->dst_op == GM_OP_KERNEL) {
                st = device_pack(j, nd, ext, isz, dst->strides, daddr, rs, baddr, true);
                continue;
            }
            if (d->overlap && (st = record(j, S, GM_SCRATCH_FILL + h)) == GPUMEM_OK)
                st = wait_event(j, X, GM_SCRATCH_FILL + h);
            if (st == GPUMEM_OK && d->dst_op == GM_OP_CPU) /* unpacked from the slots into the host view */
                st = staged_pack(j, nd, ext, isz, dst->strides, dst->host + dot(nd, start, dst->strides), rs, baddr,
                                 -1, X, xasync, d->cpu_threads);
            else if (st == GPUMEM_OK)
                st = transfer(j, X, (gm_cu_deviceptr)(uintptr_t)(host + off), buf[h], n, -1, xasync);
            if (st == GPUMEM_OK && d->overlap)
                st = record(j, X, GM_SCRATCH_DRAIN + h);
        } else {
            if (d->overlap && c >= 2)
                st = wait_event(j, X, GM_SCRATCH_DRAIN + h);
            if (st == GPUMEM_OK && d->src_op == GM_OP_CPU) /* packed from the host view into the slots */
                st = staged_pack(j, nd, ext, isz, src->strides, src->host + dot(nd, start, src->strides), rs, baddr, 1,
                                 X, xasync, d->cpu_threads);
            else if (st == GPUMEM_OK)
                st = transfer(j, X, buf[h], (gm_cu_deviceptr)(uintptr_t)(host + off), n, 1, xasync);
            if (st == GPUMEM_OK && d->overlap && (st = record(j, X, GM_SCRATCH_FILL + h)) == GPUMEM_OK)
                st = wait_event(j, S, GM_SCRATCH_FILL + h);
            if (st == GPUMEM_OK)
                st = device_pack(j, nd, ext, isz, dst->strides, daddr, rs, baddr, true);
            if (st == GPUMEM_OK && d->overlap)
                st = record(j, S, GM_SCRATCH_DRAIN + h);
        }
        j->pending |= xasync != 0;
    }
    /* the copy's stream waits for the side stream's last transfer (uploads:
     * it waited for every one already) */
    if (st == GPUMEM_OK && d->overlap && down)
        st = wait_event(j, S, GM_SCRATCH_DRAIN + last);
    if (st == GPUMEM_OK)
        j->side_pending = false;
    return st;
}

/* A packed run through device scratch whose transfers are staged (a
 * pageable or strided host side): one staged transfer of the whole run,
 * cut into segments that are the scratch chunks (staging.h).  The caller
 * opens chunk k by packing it into its buffer (a download) or by making
 * the transfers wait until the buffer is free (an upload), and closes it
 * once the staging engine has queued all its transfers: then the buffer
 * may be refilled (a download) or unpacked into the destination (an
 * upload).  With two streams the kernels run on the copy's stream and the
 * transfers on the scratch's side stream, ordered by the buffers' events;
 * with one, stream order does it. */
typedef struct staged_run {
    job *j;
    const gm_copy_decision *d;
    gpumem_array *dst;
    const gpumem_array *src;
    const int64_t *rs;
    int64_t rlo;
    uint64_t buf[2];
    gm_dstream *S, *X;
    bool down, two;
    int last;       /* the buffer of the last segment opened */
    int64_t start[GM_MAX_NDIM], ext[GM_MAX_NDIM]; /* the geometry of the segment opened last */
} staged_run;

/* Segment k's geometry into g (start, ext) and its bytes of the run. */
static void staged_chunk(staged_run *g, uint64_t k, uint64_t *off, uint64_t *n)
{
    gm_copy_chunk(g->d, g->dst->ndim, g->dst->shape, g->dst->itemsize, g->rs, k, g->start, g->ext, off, n);
}

/* Element 0 of segment k in buffer h (its geometry in g). */
static uint64_t staged_baddr(staged_run *g, int h, uint64_t off)
{
    return g->buf[h] + (uint64_t)(dot(g->dst->ndim, g->start, g->rs) - g->rlo) - off;
}

static gpumem_status staged_open(void *arg, uint64_t k, uint64_t *offset, uint64_t *bytes, gm_cu_deviceptr *dev)
{
    staged_run *g = arg;
    job *j = g->j;
    const int h = (int)(k % (uint64_t)g->d->nbufs), nd = g->dst->ndim;
    gpumem_status st = GPUMEM_OK;
    staged_chunk(g, k, offset, bytes);
    g->last = h;
    if (g->down) { /* pack the chunk into its buffer, once its last transfers are done */
        if (g->two && k >= 2)
            st = wait_event(j, g->S, GM_SCRATCH_DRAIN + h);
        uint64_t saddr = g->src->dev + (uint64_t)dot(nd, g->start, g->src->strides);
        if (st == GPUMEM_OK)
            st = device_pack(j, nd, g->ext, g->dst->itemsize, g->src->strides, saddr, g->rs,
                             staged_baddr(g, h, *offset), false);
        if (st == GPUMEM_OK && g->two && (st = record(j, g->S, GM_SCRATCH_FILL + h)) == GPUMEM_OK)
            st = wait_event(j, g->X, GM_SCRATCH_FILL + h);
    } else if (g->two && k >= 2) { /* the transfers into the buffer wait until its last unpack is done */
        st = wait_event(j, g->X, GM_SCRATCH_DRAIN + h);
    }
    *dev = g->buf[h];
    return st;
}

static gpumem_status staged_close(void *arg, uint64_t k)
{
    staged_run *g = arg;
    job *j = g->j;
    const int h = (int)(k % (uint64_t)g->d->nbufs), nd = g->dst->ndim;
    if (g->down) /* the buffer's transfers are queued: it may be packed again after them */
        return g->two ? record(j, g->X, GM_SCRATCH_DRAIN + h) : GPUMEM_OK;
    gpumem_status st = GPUMEM_OK;
    uint64_t off = 0, n = 0;
    staged_chunk(g, k, &off, &n);
    if (g->two && (st = record(j, g->X, GM_SCRATCH_FILL + h)) == GPUMEM_OK)
        st = wait_event(j, g->S, GM_SCRATCH_FILL + h);
    uint64_t daddr = g->dst->dev + (uint64_t)dot(nd, g->start, g->dst->strides);
    if (st == GPUMEM_OK)
        st = device_pack(j, nd, g->ext, g->dst->itemsize, g->dst->strides, daddr, g->rs, staged_baddr(g, h, off), true);
    if (st == GPUMEM_OK && g->two)
        st = record(j, g->S, GM_SCRATCH_DRAIN + h);
    return st;
}

/* Runs the chunks of d through one staged transfer (see above); *ran
 * false (and nothing queued) when it cannot: a strided host side whose
 * pack unit does not divide every chunk takes run_chunks' way. */
static gpumem_status run_staged(job *j, const gm_copy_decision *d, gpumem_array *dst, const gpumem_array *src,
                                const int64_t *rs, int64_t rlo, char *host, bool *ran)
{
    const int nd = dst->ndim;
    const size_t isz = dst->itemsize;
    const bool down = d->src_op == GM_OP_KERNEL;
    gm_scratch *s = j->scratch;
    staged_run g = {.j = j, .d = d, .dst = dst, .src = src, .rs = rs, .rlo = rlo,
                    .buf = {s->addr, s->addr + d->chunk_bytes}, .S = j->ds, .X = d->overlap ? s->side : j->ds,
                    .down = down, .two = d->overlap};
    gm_stage_op op = {.dir = down ? -1 : 1, .host = host, .threads = d->cpu_threads};
    gm_pack_plan plan;
    const gpumem_array *h = down ? dst : src; /* the host side */
    bool cpu = (down ? d->dst_op : d->src_op) == GM_OP_CPU;
    *ran = false;
    if (cpu) { /* the whole host view against the run: packed byte o is run byte o from its lowest */
        uint64_t haddr = (uint64_t)(uintptr_t)h->host;
        gpumem_status st = gm_pack_plan_make(nd, dst->shape, h->strides, rs, isz, haddr, 0, down, &plan);
        if (st != GPUMEM_OK)
            return gm_error_prefix(st, j->what);
        if (plan.params.packed != (unsigned long long)rlo)
            return GPUMEM_OK;
        for (uint64_t k = 0; k < d->nchunks; k++) {
            int64_t start[GM_MAX_NDIM], ext[GM_MAX_NDIM];
            uint64_t off = 0, n = 0;
            gm_copy_chunk(d, nd, dst->shape, isz, rs, k, start, ext, &off, &n);
            if ((off | n) % (uint64_t)plan.params.unit != 0)
                return GPUMEM_OK;
        }
        plan.params.strided += haddr;
        op.pack = &plan.params;
        op.bytes = plan.bytes;
        op.host = NULL;
    } else {
        op.bytes = nbytes_of(dst);
    }
    *ran = true;
    gpumem_status st = GPUMEM_OK;
    if (g.two) { /* the side stream follows what the copy's stream holds before the copy */
        j->side_pending = true;
        if ((st = record(j, g.S, GM_SCRATCH_START)) == GPUMEM_OK)
            st = wait_event(j, g.X, GM_SCRATCH_START);
    }
    gm_stage_segs segs = {.count = d->nchunks, .ahead = (unsigned)d->nbufs, .open = staged_open,
                          .close = staged_close, .arg = &g};
    op.segs = &segs;
    if (st == GPUMEM_OK)
        st = gm_staging_run(j->stage, &op, g.X, g.two ? 1 : j->async, j->what);
    j->pending |= g.two || j->async;
    /* the copy's stream waits for the side stream's last transfers (uploads:
     * its kernels waited for every one already) */
    if (st == GPUMEM_OK && g.two && down)
        st = wait_event(j, g.S, GM_SCRATCH_DRAIN + g.last);
    if (st == GPUMEM_OK)
        j->side_pending = false;
    return st;
}

/* Through one packed run (GM_HOW_PACKED). */
static gpumem_status run_packed(job *j, const gm_copy_decision *d, gpumem_array *dst, const gpumem_array *src)
{
    const int nd = dst->ndim;
    const int64_t *shape = dst->shape;
    const size_t isz = dst->itemsize;
    const uint64_t bytes = nbytes_of(dst);
    const bool ddev = gm_array_on_device(dst);
    gpumem_status st = GPUMEM_OK; /* the kernels, scratch and staging engine are held (acquire) */

    int64_t rs[GM_MAX_NDIM];
    gm_copy_run_strides(d, nd, shape, isz, src->strides, dst->strides, rs);
    const int64_t rlo = low_of(nd, shape, rs, isz);
    char *host = NULL; /* the run's lowest byte in host memory */
    if (d->host_run)
        st = run_buffer(j, bytes, &host);
    else if (d->src_op == GM_OP_DIRECT && !gm_array_on_device(src))
        host = src->host + low_of(nd, shape, src->strides, isz);
    else if (d->dst_op == GM_OP_DIRECT && !ddev)
        host = dst->host + low_of(nd, shape, dst->strides, isz);
    if (st != GPUMEM_OK)
        return st;

    /* without the kernels or scratch: the CPU packs the host source into the buffer */
    if (d->host_run && d->src_op == GM_OP_CPU &&
        (st = cpu_pack(j, src, src->strides, src->host, rs, host - rlo, false)) != GPUMEM_OK)
        return st;
    /* the run crosses */
    side hrun = {GM_CU_MEMORYTYPE_HOST, host != NULL ? host - rlo : NULL, 0};
    bool ran = false;
    if (d->nchunks > 0 && j->stage != NULL)
        st = run_staged(j, d, dst, src, rs, rlo, host, &ran);
    if (ran || st != GPUMEM_OK) {
        /* done (or failed) */
    } else if (d->nchunks > 0)
        st = run_chunks(j, d, dst, src, rs, rlo, host);
    else if (d->src_op == GM_OP_RECT)
        st = run_rect(j, dst, src->strides, side_of(src), rs, hrun);
    else if (d->dst_op == GM_OP_RECT)
        st = run_rect(j, dst, rs, hrun, dst->strides, side_of(dst));
    else if (ddev) /* the strided host source packed into the slots, into the dense device destination */
        st = staged_pack(j, nd, shape, isz, src->strides, src->host, dst->strides, dst->dev, 1, j->ds, j->async,
                         d->cpu_threads);
    else /* the dense device source unpacked from the slots into the strided host destination */
        st = staged_pack(j, nd, shape, isz, dst->strides, dst->host, src->strides, src->dev, -1, j->ds, j->async,
                         d->cpu_threads);
    if (st == GPUMEM_OK && d->nchunks == 0)
        j->pending |= j->async != 0;
    /* without the kernels or scratch: the CPU unpacks the buffer into the host destination, once it is there */
    if (st == GPUMEM_OK && d->host_run && d->dst_op == GM_OP_CPU) {
        if (j->pending)
            st = gm_drv_check(GM_DRV(stream_synchronize, j->ctx->dctx, j->ds), GM_OP_stream_synchronize, j->what);
        if (st == GPUMEM_OK) {
            j->pending = false; /* all of it is done */
            st = cpu_pack(j, dst, dst->strides, dst->host, rs, host - rlo, true);
        }
    }
    return st;
}

/* Device to device by one kernel (GM_HOW_KERNEL). */
static gpumem_status run_kernel(job *j, const gm_copy_step *s, gpumem_array *dst, const gpumem_array *src)
{
    if (s->kind == GM_STEP_PACK) /* the dense destination gathered from the source */
        return device_pack(j, dst->ndim, dst->shape, dst->itemsize, src->strides, src->dev, dst->strides, dst->dev,
                           false);
    return device_pack(j, dst->ndim, dst->shape, dst->itemsize, dst->strides, dst->dev, src->strides, src->dev, true);
}

/* One step between two device arrays of the job's device: the planner's
 * rectangular copies, or one kernel. */
static gpumem_status run_step(job *j, const gm_copy_step *s, gpumem_array *dst, const gpumem_array *src)
{
    if (s->kind == GM_STEP_RECT)
        return run_rect(j, dst, src->strides, side_of(src), dst->strides, side_of(dst));
    return run_kernel(j, s, dst, src); /* GM_STEP_PACK, GM_STEP_UNPACK */
}

/* One contiguous transfer (GM_HOW_TRANSFER). */
static gpumem_status run_transfer(job *j, const gm_copy_decision *d, gpumem_array *dst, const gpumem_array *src)
{
    side s = side_of(src), t = side_of(dst);
    j->pending |= j->async != 0;
    /* the driver's synchronous call completes a download, and an upload from page-locked memory */
    bool done = j->ds == NULL && (dst->kind == GPUMEM_MEMORY_HOST || gm_array_pinned(dst) ||
                                  (gm_array_pinned(src) && gm_array_on_device(dst)));
    return transfer(j, j->ds, side_addr(&t, d->dst_offset), side_addr(&s, d->src_offset), (size_t)d->width,
                    gm_array_on_device(dst) ? 1 : -1, j->async ? 1 : done ? GM_DRV_SYNC_DONE : 0);
}

/* Carries out d with what the job holds (its decision acquired it); the
 * ways made of copies inside it (queued, through a temporary) say in o the
 * last one's decision (inner) and whether they waited for the stream. */
static gpumem_status execute(job *j, const gm_copy_decision *d, gpumem_array *dst, const gpumem_array *src,
                             gm_copy_outcome *o, gm_copy_decision *inner)
{
    const char *what = j->what;
    if (d->how == GM_HOW_FAIL && !d->queued) /* (a queued one fails in its slabs' copies) */
        return d->probe_failed ? d->status
               : d->bad != 0   ? gm_copy_tuning_error(d->bad, what)
                               : gm_error_prefix(d->status, what);
    if (d->nsteps == 0)
        return GPUMEM_OK;
    if (d->how == GM_HOW_PEER) /* its steps on both devices (copy_peer.c) */
        return gm_copy_peer(what, dst, src, j->stream, d, &j->peer);
    const gm_copy_step *s = &d->steps[0];
    if (s->kind == GM_STEP_NESTED) /* the slabs' copies into the bounce, then the landing */
        return gm_copy_queued_download(what, dst, src, j->stream, j->ctx, d, inner, &o->synced);
    if (s->kind == GM_STEP_HOST)
        return gm_copy_host(what, dst, src, j->stream, d->via_temp);
    if (d->how == GM_HOW_TEMP) { /* into the temporary, out of it: one step each */
        gpumem_status st = gm_copy_temp_new(what, src, j->stream, &j->temp);
        if (st == GPUMEM_OK)
            st = run_step(j, &d->steps[0], j->temp, src);
        return st == GPUMEM_OK ? run_step(j, &d->steps[1], dst, j->temp) : st;
    }
    if (d->nsteps > 1) /* a packed run: its steps fused, in turns chunk by chunk */
        return run_packed(j, d, dst, src);
    if (s->kind == GM_STEP_COPY || s->kind == GM_STEP_STAGED)
        return run_transfer(j, d, dst, src);
    return run_step(j, s, dst, src);
}

/* Acquires what the plan of pre (decided without a probe, every capability
 * taken as had) runs with: its kernels, its scratch, the staging engine (a
 * queued download's copies into the bounce acquire for themselves).  *took
 * false when one cannot be had, or pre is a way whose capabilities are not
 * the job's alone (between devices) or a failure: the copy is then decided
 * with the probe.  A failure is the acquisition's, as the probe's would be. */
static gpumem_status take(job *j, const gm_copy_decision *pre, bool *took)
{
    bool kernels = false, have = true;
    gpumem_status st = GPUMEM_OK;
    *took = false;
    if (j->cross || pre->how == GM_HOW_FAIL || pre->how == GM_HOW_PEER)
        return GPUMEM_OK;
    for (int i = 0; i < pre->nsteps; i++)
        kernels |= pre->steps[i].kind == GM_STEP_PACK || pre->steps[i].kind == GM_STEP_UNPACK;
    if (!pre->queued && kernels)
        st = acquire(j, GM_NEED_KERNELS, 0, 0, false, &have);
    if (!pre->queued && st == GPUMEM_OK && have && pre->nchunks > 0)
        st = acquire(j, GM_NEED_SCRATCH, 0, pre->chunk_bytes * (uint64_t)pre->nbufs, pre->overlap, &have);
    if (!pre->queued && st == GPUMEM_OK && have && pre->staged)
        st = acquire(j, GM_NEED_STAGING, 0, 0, false, &have);
    *took = st == GPUMEM_OK && have;
    return st;
}

/* A copy that ends before it is decided: it did nothing. */
static gpumem_status undecided(gm_copy_outcome *o, gpumem_status st)
{
    memset(&o->d, 0, sizeof o->d);
    return st;
}

static gpumem_status copy_run(const char *what, gpumem_array *dst, const gpumem_array *src, gpumem_stream *stream,
                              gpumem_context *ctx, bool caller, const gm_copy_decision *pre, gm_copy_outcome *o)
{
    o->synced = false; /* o->d: set by the decision, or by undecided() */
    gm_copy_decision *d = &o->d;
    bool src_dev = gm_array_on_device(src), dst_dev = gm_array_on_device(dst);
    /* downloads queued on the stream write host memory when the stream gets
     * there: a copy that touches host memory from the CPU now waits for them */
    if (stream != NULL && (!src_dev || !dst_dev) &&
        atomic_load_explicit(&stream->landings, memory_order_acquire) > 0) {
        gpumem_status sst = gm_drv_check(GM_DRV(stream_synchronize, ctx != NULL ? ctx->dctx : stream->ctx->dctx,
                                                gm_stream_ds(stream)),
                                         GM_OP_stream_synchronize, what);
        if (sst != GPUMEM_OK)
            return undecided(o, sst);
    }
    gm_copy_tuning t;
    gm_copy_tuning_get(&t);
    job j;
    job_start(&j, what, ctx, stream, &o->synced);
    gm_copy_probe probe = {acquire, &j};
    gm_copy_caps caps = {.probe = &probe, .max_pitch = ctx != NULL ? ctx->max_pitch : 0, .on_stream = stream != NULL};
    gm_copy_side s = gm_copy_decide_side(src), ds = gm_copy_decide_side(dst);
    if (gm_copy_is_cross_device(dst, src) && gm_array_size(dst) > 0) {
        j.cross = true;
        j.peer = (gm_peer_hold){.ctx = {src->ctx, dst->ctx}};
        if (!(t.bad & GM_TUNE_BAD_PEER)) {
            gpumem_status st = gm_copy_peer_ready(what, dst, src, &caps.peer);
            if (st != GPUMEM_OK)
                return undecided(o, st);
        }
    }
    /* decided once: the decision acquires what it takes as its rules reach it
     * (or was made, and what it takes is acquired now) */
    bool took = false;
    gpumem_status tst = pre != NULL ? take(&j, pre, &took) : GPUMEM_OK;
    if (tst != GPUMEM_OK)
        return undecided(o, finish(&j, tst));
    if (took) {
        *d = *pre;
    } else {
        if (pre != NULL) { /* what was had goes back: the decision asks again */
            gm_error_quietly(finish(&j, GPUMEM_OK));
            j.pending = false;
        }
        gm_copy_decide(dst->ndim, dst->shape, dst->itemsize, &s, &ds, &caps, &t, d);
    }
    if (!d->staged && j.stage != NULL) { /* asked for by a way not taken */
        gm_staging_release(j.stage);
        j.stage = NULL;
    }
    if (caller && gm_poison_on() && poisons_destination(d, dst, src, &ds, stream))
        gm_poison_before_download(dst, stream, ctx);
    bool nested = d->queued;
    gm_copy_decision inner; /* a queued download's last copy inside (what is reported if none runs) */
    if (nested)
        inner = *d;
    gpumem_status st = finish(&j, execute(&j, d, dst, src, o, &inner));
    if (caller && gm_copies_on() && lands_before_return(d, dst, stream))
        o->synced = true;
    if (nested) { /* copies inside it did it: the last one's way is this copy's */
        bool queued = d->queued;
        *d = inner;
        d->queued = queued;
    }
    return st;
}

gpumem_status gm_copy_run(const char *what, gpumem_array *dst, const gpumem_array *src, gpumem_stream *stream,
                          gpumem_context *ctx, gm_copy_outcome *out)
{
    gm_copy_outcome o;
    gpumem_status st = copy_run(what, dst, src, stream, ctx, true, NULL, out != NULL ? out : &o);
    gm_copy_report(&(out != NULL ? out : &o)->d);
    return st;
}

gpumem_status gm_copy_run_decided(const char *what, gpumem_array *dst, const gpumem_array *src,
                                  gpumem_stream *stream, gpumem_context *ctx, const gm_copy_decision *pre,
                                  gm_copy_outcome *out)
{
    gpumem_status st = copy_run(what, dst, src, stream, ctx, true, pre, out);
    gm_copy_report(&out->d);
    return st;
}

gpumem_status gm_copy_step_run(const char *what, gpumem_context *ctx, gm_pack_kernels *k, const gm_copy_step *s,
                               gpumem_array *dst, const gpumem_array *src)
{
    job j = {.what = what, .ctx = ctx, .kernels = k};
    gpumem_status st = run_step(&j, s, dst, src);
    j.kernels = NULL; /* the caller's */
    return finish(&j, st);
}

gpumem_status gm_copy_inner(const char *what, gpumem_array *dst, const gpumem_array *src, gpumem_stream *stream,
                            gpumem_context *ctx, const gm_copy_decision *pre, gm_copy_decision *out)
{
    gm_copy_outcome o;
    gpumem_status st = copy_run(what, dst, src, stream, ctx, false, pre, &o);
    if (out != NULL)
        *out = o.d;
    return st;
}
