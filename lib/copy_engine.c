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
#include "copy_engine_impl.h"
#include "copy_peer.h"
#include "copyplan.h"
#include "error.h"
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

gm_copy_addr gm_copy_addr_of(const gpumem_array *a)
{
    gm_copy_addr s = {GM_CU_MEMORYTYPE_HOST, a->host, 0};
    if (gm_array_on_device(a)) {
        s.memtype = GM_CU_MEMORYTYPE_DEVICE;
        s.dev = a->dev;
    } else if (a->kind == GPUMEM_MEMORY_MANAGED) {
        s.memtype = GM_CU_MEMORYTYPE_UNIFIED;
        s.dev = a->dev;
    }
    return s;
}

static gm_cu_deviceptr side_addr(const gm_copy_addr *s, int64_t offset)
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

/* A copy's job, holding nothing yet: field by field (a zeroing initializer's
 * `rep stos` was a tenth of a small copy's own time); src and dst are set in
 * gm_copy_job_rect, peer only between two devices (cross). */
static void job_start(gm_copy_job *j, const char *what, gpumem_context *ctx, gpumem_stream *stream, bool *synced)
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
    gm_copy_job *r = arg;
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
gpumem_status gm_copy_job_rect(gm_copy_job *j, const gpumem_array *a, const int64_t *sstrides, gm_copy_addr src,
                               const int64_t *dstrides, gm_copy_addr dst)
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
gpumem_status gm_copy_job_transfer(gm_copy_job *j, gm_dstream *ds, gm_cu_deviceptr dst, gm_cu_deviceptr src,
                                   size_t bytes, int dir, int async)
{
    if (bytes == 0)
        return GPUMEM_OK;
    if (j->stage != NULL)
        return dir > 0 ? gm_staging_upload(j->stage, dst, (const void *)(uintptr_t)src, bytes, ds, async == 1, j->what)
                       : gm_staging_download(j->stage, (void *)(uintptr_t)dst, src, bytes, ds, j->what);
    return gm_drv_check(GM_DRV(memcpy, j->ctx->dctx, dst, src, bytes, ds, async), GM_OP_memcpy, j->what);
}

/* ---- what a copy holds -------------------------------------------------------------------------- */

/* gm_copy_probe's acquire (copy_decide.h): what the decision asks for,
 * held by the job until finish().  The kernels: *have false when the
 * driver cannot load them.  Device scratch (and a side stream when two):
 * *have false when the device has no room; the copy's stream waits for its
 * last use.  The staging engine. */
static gpumem_status acquire(void *arg, gm_copy_need need, int which, uint64_t bytes, bool two, bool *have)
{
    gm_copy_job *j = arg;
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

/* Gives back the scratch: after the work queued on it (an event on the
 * copy's stream that the next user waits for), or, after a failure, once
 * both streams are done with it. */
static void put_scratch(gm_copy_job *j, gpumem_status st)
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
static gpumem_status finish(gm_copy_job *j, gpumem_status st)
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

/* ---- the executors (a packed run's: copy_packed.c) -------------------------------------------------- */

/* Device to device by one kernel (GM_HOW_KERNEL). */
static gpumem_status run_kernel(gm_copy_job *j, const gm_copy_step *s, gpumem_array *dst, const gpumem_array *src)
{
    if (s->kind == GM_STEP_PACK) /* the dense destination gathered from the source */
        return gm_copy_device_pack(j, dst->ndim, dst->shape, dst->itemsize, src->strides, src->dev, dst->strides,
                                   dst->dev, false);
    return gm_copy_device_pack(j, dst->ndim, dst->shape, dst->itemsize, dst->strides, dst->dev, src->strides, src->dev,
                               true);
}

/* One step between two device arrays of the job's device: the planner's
 * rectangular copies, or one kernel. */
static gpumem_status run_step(gm_copy_job *j, const gm_copy_step *s, gpumem_array *dst, const gpumem_array *src)
{
    if (s->kind == GM_STEP_RECT)
        return gm_copy_job_rect(j, dst, src->strides, gm_copy_addr_of(src), dst->strides, gm_copy_addr_of(dst));
    return run_kernel(j, s, dst, src); /* GM_STEP_PACK, GM_STEP_UNPACK */
}

/* One contiguous transfer (GM_HOW_TRANSFER). */
static gpumem_status run_transfer(gm_copy_job *j, const gm_copy_decision *d, gpumem_array *dst, const gpumem_array *src)
{
    gm_copy_addr s = gm_copy_addr_of(src), t = gm_copy_addr_of(dst);
    j->pending |= j->async != 0;
    /* the driver's synchronous call completes a download, and an upload from page-locked memory */
    bool done = j->ds == NULL && (dst->kind == GPUMEM_MEMORY_HOST || gm_array_pinned(dst) ||
                                  (gm_array_pinned(src) && gm_array_on_device(dst)));
    return gm_copy_job_transfer(j, j->ds, side_addr(&t, d->dst_offset), side_addr(&s, d->src_offset), (size_t)d->width,
                    gm_array_on_device(dst) ? 1 : -1, j->async ? 1 : done ? GM_DRV_SYNC_DONE : 0);
}

/* Carries out d with what the job holds (its decision acquired it); the
 * ways made of copies inside it (queued, through a temporary) say in o the
 * last one's decision (inner) and whether they waited for the stream. */
static gpumem_status execute(gm_copy_job *j, const gm_copy_decision *d, gpumem_array *dst, const gpumem_array *src,
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
    if (d->nsteps > 1) /* a packed run: its steps fused, in turns chunk by chunk (copy_packed.c) */
        return gm_copy_run_packed(j, d, dst, src);
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
static gpumem_status take(gm_copy_job *j, const gm_copy_decision *pre, bool *took)
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
    gm_copy_job j;
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
    gm_copy_job j = {.what = what, .ctx = ctx, .kernels = k};
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
