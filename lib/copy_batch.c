/*
 * copy_batch.c - batched copies (gpumem/batch.h): gpumem_array_copy_batch,
 * gpumem_array_pack and gpumem_array_unpack.
 *
 * Every pair is checked first (as gpumem_array_copy checks its arguments,
 * then no destination may share a byte with another pair's destination or
 * source: batch_overlap.c), so that a bad argument leaves every
 * destination untouched.
 * Then every pair is decided (copy_decide.c, with the caps that
 * copy_engine.c would give it) and sorted by the steps of its plan:
 *  - pieces: pairs of the batch's context whose plan is one kernel step
 *    (pack or unpack, device to device), a kernel step into or out of one
 *    scratch chunk and a driver copy to or from a dense locked host side,
 *    two kernel steps through one scratch chunk, or one driver copy
 *    between a locked host side and the device;
 *  - the rest (a queued or staged copy, a host-side strided copy, peers,
 *    overlapping sides, a transposed or deep pack, pairs of another
 *    context): one copy each by the engine, first, with the batch's decision
 *    (gm_copy_run_decided acquires what its plan takes; a pair of another
 *    context, or whose plan's capabilities cannot be had, is decided by
 *    the engine instead).
 * The pieces' steps run fused, as three steps on the stream, behind one
 * device scratch buffer holding each packed run: one launch of the batched
 * kernel (pack.cu, up to GM_PACK_BATCH_MAX pieces per launch) for every
 * pack step (the sources of downloads and device-to-device copies, and the
 * single pack kernels), the driver copies in pair order (runs adjacent on
 * both sides merged into one), and one launch for every unpack step (the
 * destinations of uploads and of device-to-device copies through scratch,
 * and the single unpack kernels go with the packs).
 * With fewer than two kernel pieces, no kernels or no scratch, the pieces
 * are copied one by one so too: batching is only a faster way to the same
 * bytes.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "batch_overlap.h"
#include "copy_debug.h"
#include "copy_decide.h"
#include "copy_engine.h"
#include "pack_calls.h"
#include "copy_peer.h"
#include "copyplan.h"
#include "error.h"
#include "gpumem/batch.h"
#include "kernels/pack.h"
#include "stream.h"
#include "trace.h"

/* ---- names in messages ------------------------------------------------------------------------- */

static void copy_name(char *buf, size_t size, size_t i, bool dst)
{
    snprintf(buf, size, "%s[%zu]", dst ? "dst" : "src", i);
}

static void pack_name(char *buf, size_t size, size_t i, bool dst)
{
    if (dst)
        snprintf(buf, size, "'buffer' (the bytes of views[%zu])", i);
    else
        snprintf(buf, size, "views[%zu]", i);
}

static void unpack_name(char *buf, size_t size, size_t i, bool dst)
{
    pack_name(buf, size, i, !dst); /* the same two sides, the other way */
}

/* ---- the plan ------------------------------------------------------------------------------------ */

typedef enum piece_kind {
    P_SINGLE = 0, /* one gm_copy_run */
    P_NONE,       /* nothing to move */
    P_TRANSFER,   /* one contiguous transfer */
    P_KERNEL,     /* device to device: one pack or unpack kernel, no scratch */
    P_DOWN,       /* gather the device source into scratch, then the transfer to the dense host side */
    P_UP,         /* the transfer from the dense host side into scratch, then scatter into the device dst */
    P_D2D         /* gather into scratch, scatter out of it */
} piece_kind;

typedef struct piece {
    gpumem_array *dst;
    const gpumem_array *src;
    gpumem_context *ctx;  /* the pair's context (gm_copy_check's) */
    gm_copy_decision d;
    bool decided;         /* d is the batch's decision (the batch's context), else gm_copy_run decides */
    piece_kind kind;
    uint64_t bytes;       /* the run's bytes */
    int64_t rs[GM_MAX_NDIM]; /* the run's strides */
    int64_t rlo;          /* the run's lowest byte from its element 0 (<= 0) */
    uint64_t off;         /* the run's lowest byte in scratch */
    gm_pack_plan gather, scatter; /* offsets relative to the addresses below */
    uint64_t g_strided, g_packed, s_strided, s_packed; /* element-0 addresses (P_DOWN, P_UP, P_D2D: the packed
                                                         * ones relative to the scratch buffer) */
    uint64_t t_dst, t_src;     /* P_TRANSFER, P_DOWN, P_UP: the transfer's ends (scratch ones relative) */
    bool t_dst_scratch, t_src_scratch;
} piece;

static int64_t low_of(const gpumem_array *a, const int64_t *strides)
{
    int64_t lo = 0, hi = 0;
    gm_layout_extent(a->ndim, a->shape, strides, a->itemsize, &lo, &hi);
    return lo;
}

/* A host side the driver may move with the stream: pinned, mapped or registered. */
static bool host_locked(const gpumem_array *a)
{
    return !gm_array_on_device(a) && a->kind != GPUMEM_MEMORY_MANAGED && gm_array_is_locked(a);
}

/* A plan the batched kernel takes (a launch of its own otherwise). */
static bool batchable(const gm_pack_plan *p)
{
    return !p->tiled && p->params.nouter <= GM_PACK_BATCH_OUTER;
}

/* Plans a gather (unpack false) or scatter between a strided side and a
 * packed one; false when the batched kernel cannot take it. */
static bool plan_pack(const gpumem_array *a, const int64_t *ss, uint64_t saddr, const int64_t *ps, uint64_t paddr,
                      bool unpack, gm_pack_plan *out)
{
    gm_error_suspend(); /* a plan the batch cannot make is gm_copy_run's to make, or to report */
    gpumem_status st = gm_pack_plan_make(a->ndim, a->shape, ss, ps, a->itemsize, saddr, paddr, unpack, out);
    (void)gm_error_resume(GPUMEM_OK);
    return st == GPUMEM_OK && out->bytes > 0 && batchable(out);
}

/* Whether plan d is the n steps of want (kind, from, to). */
#define PLAN_IS(d, n, ...) plan_is((d), (n), (const gm_copy_step[]){__VA_ARGS__})
static bool plan_is(const gm_copy_decision *d, int n, const gm_copy_step *want)
{
    if (d->nsteps != n)
        return false;
    for (int i = 0; i < n; i++)
        if (d->steps[i].kind != want[i].kind || d->steps[i].from != want[i].from || d->steps[i].to != want[i].to)
            return false;
    return true;
}
#define S(kind, from, to) {GM_STEP_##kind, GM_BUF_##from, GM_BUF_##to, false}

/* Sorts pair p into a piece kind by the steps of its plan (decided once):
 * a driver copy between a locked host side and the device, one kernel, a
 * kernel into or out of scratch and a driver copy, or two kernels. */
static piece_kind classify(piece *p, gpumem_context *ctx)
{
    const gm_copy_decision *d = &p->d;
    gpumem_array *dst = p->dst;
    const gpumem_array *src = p->src;
    bool sdev = gm_array_on_device(src), ddev = gm_array_on_device(dst);
    if (d->nsteps == 0 && d->how != GM_HOW_FAIL)
        return P_NONE;
    if (p->ctx != ctx || gm_copy_is_cross_device(dst, src))
        return P_SINGLE;
    if ((!sdev && !ddev) || (!sdev && !host_locked(src)) || (!ddev && !host_locked(dst)))
        return P_SINGLE; /* the CPU's, or the staging engine's, or a queued download's */
    const uint64_t bytes = (uint64_t)gm_array_size(dst) * dst->itemsize;
    p->bytes = bytes;
    if (PLAN_IS(d, 1, S(COPY, SRC, DST))) {
        p->t_dst = (ddev ? dst->dev : (uint64_t)(uintptr_t)dst->host) + (uint64_t)d->dst_offset;
        p->t_src = (sdev ? src->dev : (uint64_t)(uintptr_t)src->host) + (uint64_t)d->src_offset;
        p->bytes = d->width;
        return P_TRANSFER;
    }
    if (PLAN_IS(d, 1, S(PACK, SRC, DST)) || PLAN_IS(d, 1, S(UNPACK, SRC, DST))) {
        if (d->steps[0].kind == GM_STEP_PACK) { /* the dense destination gathered */
            p->g_strided = src->dev;
            p->g_packed = dst->dev;
            return plan_pack(dst, src->strides, src->dev, dst->strides, dst->dev, false, &p->gather) ? P_KERNEL
                                                                                                  : P_SINGLE;
        }
        p->s_strided = dst->dev;
        p->s_packed = src->dev;
        return plan_pack(dst, dst->strides, dst->dev, src->strides, src->dev, true, &p->scatter) ? P_KERNEL
                                                                                                 : P_SINGLE;
    }
    bool down = PLAN_IS(d, 2, S(PACK, SRC, SCRATCH), S(COPY, SCRATCH, DST));
    bool up = PLAN_IS(d, 2, S(COPY, SRC, SCRATCH), S(UNPACK, SCRATCH, DST));
    bool d2d = PLAN_IS(d, 2, S(PACK, SRC, SCRATCH), S(UNPACK, SCRATCH, DST));
    if (!(down || up || d2d) || d->nchunks != 1 || d->transpose) /* one scratch chunk, the batched kernel's */
        return P_SINGLE;
    gm_copy_run_strides(d, dst->ndim, dst->shape, dst->itemsize, src->strides, dst->strides, p->rs);
    p->rlo = low_of(dst, p->rs);
    if (down && gm_copy_has_layout(dst->ndim, dst->shape, dst->strides, dst->itemsize, p->rs)) {
        p->t_dst = (uint64_t)(uintptr_t)dst->host + (uint64_t)low_of(dst, dst->strides);
        p->t_src_scratch = true;
        return P_DOWN;
    }
    if (up && gm_copy_has_layout(src->ndim, src->shape, src->strides, src->itemsize, p->rs)) {
        p->t_src = (uint64_t)(uintptr_t)src->host + (uint64_t)low_of(src, src->strides);
        p->t_dst_scratch = true;
        return P_UP;
    }
    return d2d ? P_D2D : P_SINGLE;
}

/* Plans the kernels of a piece whose run starts at scratch offset p->off,
 * as if scratch started at address 0 (its real start is 256-aligned, so
 * the units the plans choose hold); false when the batched kernel cannot
 * take them. */
static bool plan_scratch(piece *p)
{
    gpumem_array *dst = p->dst;
    const gpumem_array *src = p->src;
    uint64_t elem0 = p->off - (uint64_t)p->rlo; /* the run's element 0 */
    if (p->kind == P_DOWN || p->kind == P_D2D) {
        p->g_strided = src->dev;
        p->g_packed = elem0;
        if (!plan_pack(dst, src->strides, src->dev, p->rs, elem0, false, &p->gather))
            return false;
    }
    if (p->kind == P_UP || p->kind == P_D2D) {
        p->s_strided = dst->dev;
        p->s_packed = elem0;
        if (!plan_pack(dst, dst->strides, dst->dev, p->rs, elem0, true, &p->scatter))
            return false;
    }
    if (p->kind == P_DOWN)
        p->t_src = p->off;
    if (p->kind == P_UP)
        p->t_dst = p->off;
    return true;
}

/* ---- running it ---------------------------------------------------------------------------------- */

typedef struct batch {
    const char *what;
    gpumem_context *ctx;
    gpumem_stream *stream;
    gm_dstream *ds;
    int async;
    gm_pack_kernels *kernels;
    gm_scratch *scratch;
    bool pending; /* work queued on ds */
} batch;

/* One kernel launch: the pieces' gathers (scatter false) or scatters. */
typedef struct launch {
    gm_pack_batch_params p;
    bool wide;
    const gm_pack_plan *single; /* the only piece's plan, to launch alone */
    uint64_t single_strided, single_packed;
} launch;

static gpumem_status launch_flush(batch *b, launch *l)
{
    gpumem_status st = GPUMEM_OK;
    b->pending = true;
    if (l->p.count == 1)
        st = gm_pack_launch(b->kernels, l->single, l->single_strided, l->single_packed, b->stream, b->what);
    else if (l->p.count > 1)
        st = gm_pack_launch_batch(b->kernels, l->wide ? GM_PACK_BATCH_64 : GM_PACK_BATCH_32, &l->p, b->stream,
                                  b->what);
    memset(l, 0, sizeof *l);
    return st;
}

static gpumem_status launch_add(batch *b, launch *l, const gm_pack_plan *plan, uint64_t strided, uint64_t packed,
                                bool unpack)
{
    gpumem_status st = GPUMEM_OK;
    if (l->p.count == GM_PACK_BATCH_MAX && (st = launch_flush(b, l)) != GPUMEM_OK)
        return st;
    gm_pack_batch_piece *q = &l->p.piece[l->p.count];
    const gm_pack_params *pp = &plan->params;
    memset(q, 0, sizeof *q);
    q->strided = pp->strided + strided; /* the plan holds offsets */
    q->packed = pp->packed + packed;
    q->rows = pp->rows;
    q->cols = pp->cols;
    q->col_stride = pp->col_stride;
    q->nouter = pp->nouter;
    q->unit = pp->unit;
    q->unpack = unpack;
    for (int k = 0; k < pp->nouter; k++) {
        q->outer_shape[k] = pp->outer_shape[k];
        q->outer_stride[k] = pp->outer_stride[k];
    }
    gm_pack_batch_piece_dims(q);
    q->block_begin = l->p.nblocks;
    l->p.nblocks += q->blocks;
    l->p.count++;
    l->wide |= plan->wide;
    l->single = plan;
    l->single_strided = strided;
    l->single_packed = packed;
    return GPUMEM_OK;
}

/* Whether the transfers of a and b have each end in one allocation: the
 * scratch, or one array's memory.  Two arrays that happen to be adjacent
 * are two allocations, and one cuMemcpy across both is refused
 * (CUDA_ERROR_INVALID_VALUE: two adjacent pinned buffers of a halo's faces,
 * on an H200). */
static const gpumem_array *owner_of(const gpumem_array *a)
{
    return a->base != NULL ? a->base : a;
}

static bool same_allocations(const piece *a, const piece *b)
{
    return a->t_dst_scratch == b->t_dst_scratch && a->t_src_scratch == b->t_src_scratch &&
           (a->t_dst_scratch || owner_of(a->dst) == owner_of(b->dst)) &&
           (a->t_src_scratch || owner_of(a->src) == owner_of(b->src));
}

/* The pieces' transfers, in pair order, adjacent ones of the same
 * allocations merged. */
static gpumem_status transfers(batch *b, piece *ps, size_t n, uint64_t sbase)
{
    gpumem_status st = GPUMEM_OK;
    uint64_t to = 0, from = 0, len = 0;
    const piece *last = NULL;
    for (size_t i = 0; i <= n && st == GPUMEM_OK; i++) {
        piece *p = i < n ? &ps[i] : NULL;
        bool moves = p != NULL && (p->kind == P_TRANSFER || p->kind == P_DOWN || p->kind == P_UP);
        if (p != NULL && !moves)
            continue;
        uint64_t t = 0, f = 0;
        if (p != NULL) {
            t = p->t_dst + (p->t_dst_scratch ? sbase : 0);
            f = p->t_src + (p->t_src_scratch ? sbase : 0);
            if (len > 0 && t == to + len && f == from + len && same_allocations(last, p)) {
                len += p->bytes;
                continue;
            }
        }
        if (len > 0) {
            b->pending |= b->async != 0;
            st = gm_drv_check(GM_DRV(memcpy, b->ctx->dctx, (gm_cu_deviceptr)to, (gm_cu_deviceptr)from, (size_t)len,
                                     b->ds, b->async),
                              GM_OP_memcpy, b->what);
        }
        to = t, from = f, len = p != NULL ? p->bytes : 0;
        last = p;
    }
    return st;
}

/* Runs the pieces of kind P_TRANSFER .. P_D2D: gathers, transfers, scatters. */
static gpumem_status run_pieces(batch *b, piece *ps, size_t n)
{
    const uint64_t sbase = b->scratch != NULL ? b->scratch->addr : 0;
    gpumem_status st = GPUMEM_OK;
    launch l;
    memset(&l, 0, sizeof l);
    for (size_t i = 0; i < n && st == GPUMEM_OK; i++) {
        piece *p = &ps[i];
        if (p->kind == P_KERNEL && p->gather.bytes > 0)
            st = launch_add(b, &l, &p->gather, p->g_strided, p->g_packed, false);
        else if (p->kind == P_KERNEL)
            st = launch_add(b, &l, &p->scatter, p->s_strided, p->s_packed, true);
        else if (p->kind == P_DOWN || p->kind == P_D2D)
            st = launch_add(b, &l, &p->gather, p->g_strided, p->g_packed + sbase, false);
    }
    if (st == GPUMEM_OK)
        st = launch_flush(b, &l);
    if (st == GPUMEM_OK)
        st = transfers(b, ps, n, sbase);
    for (size_t i = 0; i < n && st == GPUMEM_OK; i++) {
        piece *p = &ps[i];
        if (p->kind == P_UP || p->kind == P_D2D)
            st = launch_add(b, &l, &p->scatter, p->s_strided, p->s_packed + sbase, true);
    }
    if (st == GPUMEM_OK)
        st = launch_flush(b, &l);
    return st;
}

/* Gives back the scratch after the work queued on it (an event the next
 * user waits for), or once the stream is done with it after a failure;
 * waits for a synchronous batch. */
static gpumem_status batch_finish(batch *b, gpumem_status st)
{
    gm_dctx *dctx = b->ctx->dctx;
    if (b->pending && !b->async)
        st = gm_keep_first(st, gm_drv_check(GM_DRV(stream_synchronize, dctx, b->ds), GM_OP_stream_synchronize,
                                            b->what));
    gm_scratch *s = b->scratch;
    if (s != NULL) {
        bool recorded = st == GPUMEM_OK &&
                        GM_DRV(event_record, dctx, s->ev[GM_SCRATCH_DONE], b->ds) == GM_CUDA_SUCCESS;
        if (!recorded)
            (void)GM_DRV(stream_synchronize, dctx, b->ds);
        s->used = recorded;
        gm_pack_scratch_put(b->kernels, s);
        b->scratch = NULL;
    }
    gm_pack_kernels_put(b->kernels);
    b->kernels = NULL;
    return st;
}

/* The kernel pieces: two or more make the batch pay. */
static size_t kernel_pieces(const piece *ps, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += ps[i].kind == P_D2D ? 2 : ps[i].kind >= P_KERNEL ? 1 : 0;
    return k;
}

/* Copies the checked pairs; *path: the last pair's way. */
static gpumem_status batch_run(const char *what, size_t n, gpumem_array *const *dst, gpumem_array *const *src,
                               gpumem_context *const *ctxs, gpumem_stream *stream, gpumem_copy_path *path)
{
    piece *ps = calloc(n > 0 ? n : 1, sizeof *ps);
    if (ps == NULL)
        return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", what);
    uint64_t t0 = GM_TRACE_TICKS();
    /* the batch's context: the stream's, else the first device-side pair's */
    gpumem_context *ctx = stream != NULL ? stream->ctx : NULL;
    for (size_t i = 0; i < n && ctx == NULL; i++)
        ctx = ctxs[i];
    gm_copy_tuning t;
    gm_copy_tuning_get(&t);
    gm_copy_caps caps = {.max_pitch = ctx != NULL ? ctx->max_pitch : 0, .on_stream = stream != NULL};
    for (size_t i = 0; i < n; i++) {
        piece *p = &ps[i];
        p->dst = dst[i];
        p->src = src[i];
        p->ctx = ctxs[i];
        if (ctx == NULL || p->ctx != ctx)
            continue; /* P_SINGLE */
        gm_copy_side s = gm_copy_decide_side(src[i]), d = gm_copy_decide_side(dst[i]);
        gm_copy_decide(dst[i]->ndim, dst[i]->shape, dst[i]->itemsize, &s, &d, &caps, &t, &p->d);
        p->decided = true;
        p->kind = classify(p, ctx);
    }
    /* the scratch runs, one after the other (adjacent where their host ends are), 256-aligned otherwise;
     * at most the engine's two chunks in all */
    uint64_t cap = 2 * (t.scratch_chunk > 0 ? t.scratch_chunk : GM_COPY_SCRATCH_CHUNK), used = 0;
    const piece *prev = NULL;
    for (size_t i = 0; i < n; i++) {
        piece *p = &ps[i];
        if (p->kind != P_DOWN && p->kind != P_UP && p->kind != P_D2D)
            continue;
        uint64_t off = (used + 255) & ~(uint64_t)255;
        if (prev != NULL && prev->kind == p->kind && p->kind != P_D2D &&
            (p->kind == P_DOWN ? p->t_dst == prev->t_dst + prev->bytes && owner_of(p->dst) == owner_of(prev->dst)
                               : p->t_src == prev->t_src + prev->bytes && owner_of(p->src) == owner_of(prev->src)))
            off = used; /* one transfer for both */
        p->off = off;
        if (off + p->bytes > cap || !plan_scratch(p)) {
            p->kind = P_SINGLE;
            continue;
        }
        used = off + p->bytes;
        prev = p;
    }
    batch b = {.what = what, .ctx = ctx, .stream = stream, .ds = gm_stream_ds(stream), .async = stream != NULL};
    bool batched = ctx != NULL && kernel_pieces(ps, n) >= 2;
    gpumem_status st = GPUMEM_OK;
    if (batched) {
        st = gm_pack_kernels_get(ctx, what, &b.kernels);
        batched = st == GPUMEM_OK && b.kernels != NULL;
    }
    if (batched && used > 0) {
        gpumem_status sst = gm_pack_scratch_get(b.kernels, (size_t)used, false, what, &b.scratch);
        if (sst == GPUMEM_OK && b.scratch->addr % 256 != 0) { /* planned for an aligned start */
            gm_pack_scratch_put(b.kernels, b.scratch);
            b.scratch = NULL;
            batched = false;
        } else if (sst == GPUMEM_ERROR_OUT_OF_MEMORY) {
            batched = false; /* the pairs go one by one, with the engine's smaller ways */
        } else if (sst != GPUMEM_OK) {
            st = sst;
        }
    }
    if (!batched) {
        gm_pack_kernels_put(b.kernels);
        b.kernels = NULL;
    }
    /* the pairs that go one by one, first */
    for (size_t i = 0; i < n && st == GPUMEM_OK; i++) {
        piece *p = &ps[i];
        if (p->kind == P_NONE || (batched && p->kind != P_SINGLE))
            continue;
        uint64_t t1 = GM_TRACE_TICKS();
        gm_copy_outcome o;
        st = p->decided ? gm_copy_run_decided(what, p->dst, p->src, stream, p->ctx, &p->d, &o) /* decided once */
                        : gm_copy_run(what, p->dst, p->src, stream, p->ctx, &o);
        p->d = o.d;
        GM_TRACE_IF(st == GPUMEM_OK, gm_copy_trace(t1, p->dst, p->src, stream, p->ctx, p->d.path));
    }
    if (batched) {
        if (st == GPUMEM_OK && b.scratch != NULL && b.scratch->used) {
            b.pending = true;
            st = gm_drv_check(GM_DRV(stream_wait_event, ctx->dctx, b.ds, b.scratch->ev[GM_SCRATCH_DONE]),
                              GM_OP_stream_wait_event, what);
        }
        if (st == GPUMEM_OK)
            st = run_pieces(&b, ps, n);
        st = batch_finish(&b, st);
        for (size_t i = 0; i < n && st == GPUMEM_OK; i++)
            if (ps[i].kind >= P_TRANSFER) {
                gm_copy_report(&ps[i].d);
                GM_TRACE_IF(1, gm_copy_trace(t0, ps[i].dst, ps[i].src, stream, ctx, ps[i].d.path));
            }
    }
    if (n > 0) {
        gm_copy_report(&ps[n - 1].d); /* what gpumem_debug_last_copy_path reports: the last pair's way */
        *path = ps[n - 1].d.path;
    }
    free(ps);
    return st;
}

/* ---- the calls ----------------------------------------------------------------------------------- */

/* Checks every pair (as gpumem_array_copy would, each message naming the
 * pair) and the collisions, then copies; ctxs is scratch for n contexts. */
static gpumem_status check_and_run(const batch_names *nm, size_t n, gpumem_array *const *dst,
                                   gpumem_array *const *src, gpumem_stream *stream)
{
    gpumem_context **ctxs = calloc(n > 0 ? n : 1, sizeof *ctxs);
    if (ctxs == NULL)
        return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", nm->what);
    gpumem_status st = GPUMEM_OK;
    for (size_t i = 0; i < n && st == GPUMEM_OK; i++) {
        char where[96];
        snprintf(where, sizeof where, "%s: pair %zu", nm->what, i);
        st = gm_copy_check(where, dst[i], src[i], stream, &ctxs[i]);
    }
    if (st == GPUMEM_OK)
        st = gm_batch_check_collisions(nm, n, dst, src);
    if (st == GPUMEM_OK) {
        bool lines = n > 0 && gm_copies_on(); /* GPUMEM_DEBUG=copies: one line for the call */
        uint64_t c0 = lines ? gm_copies_clock() : 0;
        gpumem_copy_path path = GPUMEM_COPY_PATH_NONE;
        st = batch_run(nm->what, n, dst, src, ctxs, stream, &path);
        if (lines)
            gm_copies_batch_line(nm->what, c0, st, n, dst, src, path, stream != NULL);
    }
    free(ctxs);
    return st;
}

GPUMEM_API gpumem_status gpumem_array_copy_batch(size_t count, gpumem_array *const *dst, gpumem_array *const *src,
                                                 gpumem_stream *stream)
{
    const char *what = "gpumem_array_copy_batch";
    if (count > 0) {
        GM_CHECK_NULL(dst);
        GM_CHECK_NULL(src);
    }
    if (stream != NULL)
        GM_FORWARD_IF_ERROR(gm_handle_check(stream, GM_HANDLE_STREAM, what, "stream"));
    for (size_t i = 0; i < count; i++) {
        char a[32], b[32], where[64];
        copy_name(a, sizeof a, i, true);
        copy_name(b, sizeof b, i, false);
        snprintf(where, sizeof where, "%s: pair %zu", what, i); /* as the pair's other errors */
        GM_FORWARD_IF_ERROR(gm_handle_check(dst[i], GM_HANDLE_ARRAY, where, a));
        GM_FORWARD_IF_ERROR(gm_handle_check(src[i], GM_HANDLE_ARRAY, where, b));
    }
    const batch_names nm = {what, copy_name};
    return check_and_run(&nm, count, dst, src, stream);
}

static void release_owner(void *owner)
{
    gm_error_quietly(gpumem_array_release(owner)); /* a view's release of its base: it cannot fail */
}

/* The bytes [offset, offset + nbytes(like)) of the contiguous buffer as an
 * array of like's shape and dtype, C order: a view that keeps the buffer
 * alive. */
static gpumem_status buffer_piece(const char *what, const gpumem_array *buffer, uint64_t offset,
                                  const gpumem_array *like, gpumem_array **out)
{
    gpumem_array *base = (gpumem_array *)(buffer->base != NULL ? buffer->base : buffer);
    gm_cu_deviceptr ptr = buffer->dev != 0 ? buffer->dev + offset : (gm_cu_deviceptr)(uintptr_t)(buffer->host + offset);
    gpumem_status st = gm_array_wrap(what, buffer->ctx, buffer->kind, ptr, like->ndim, like->shape, NULL, like->dtype,
                                     release_owner, base, out);
    if (st != GPUMEM_OK)
        return st;
    gpumem_array_retain(base);
    (*out)->host = buffer->host != NULL ? buffer->host + offset : NULL; /* mapped memory: both addresses */
    (*out)->dev = buffer->dev != 0 ? buffer->dev + offset : 0;
    (*out)->readonly = buffer->readonly;
    (*out)->readonly_locked = buffer->readonly_locked;
    return GPUMEM_OK;
}

static gpumem_status pack_call(const char *what, bool unpack, size_t count, gpumem_array *const *views,
                               const gpumem_array *buffer, gpumem_stream *stream)
{
    GM_FORWARD_IF_ERROR(gm_handle_check(buffer, GM_HANDLE_ARRAY, what, "buffer"));
    if (count > 0 && views == NULL)
        return gm_error(GPUMEM_ERROR_NULL_ARGUMENT, "%s: argument 'views' is NULL", what);
    if (stream != NULL)
        GM_FORWARD_IF_ERROR(gm_handle_check(stream, GM_HANDLE_STREAM, what, "stream"));
    uint64_t total = 0;
    for (size_t i = 0; i < count; i++) {
        char a[32];
        snprintf(a, sizeof a, "views[%zu]", i);
        GM_FORWARD_IF_ERROR(gm_handle_check(views[i], GM_HANDLE_ARRAY, what, a));
        if (unpack)
            GM_FORWARD_IF_ERROR(gm_array_check_destination(what, views[i], a));
        uint64_t nb = (uint64_t)gm_array_size(views[i]) * views[i]->itemsize;
        GM_RETURN_ERROR_IF(__builtin_add_overflow(total, nb, &total) || total > INT64_MAX, GPUMEM_ERROR_OVERFLOW,
                           "%s: the views' bytes do not fit in int64_t (views[%zu])", what, i);
    }
    if (!unpack) /* a broadcast buffer fails the C-contiguity check below */
        GM_FORWARD_IF_ERROR(gm_array_check_writable(what, buffer, "buffer"));
    /* the stream's device: the buffer's, and each view's (either of the two for a view on another device) */
    bool buffer_checked = false;
    for (size_t i = 0; i < count && stream != NULL; i++) {
        char a[32];
        snprintf(a, sizeof a, "views[%zu]", i);
        if (gm_copy_is_cross_device(views[i], buffer)) {
            GM_RETURN_ERROR_IF(stream->ctx->dctx != views[i]->ctx->dctx && stream->ctx->dctx != buffer->ctx->dctx,
                               GPUMEM_ERROR_CONTEXT_MISMATCH,
                               "%s: %s is on device %d and 'buffer' on device %d: the stream must be of either, "
                               "but it is of device %d", what, a, views[i]->ctx->device, buffer->ctx->device,
                               stream->ctx->device);
            continue;
        }
        GM_FORWARD_IF_ERROR(gm_stream_check(stream, views[i]->ctx, what, a));
        if (!buffer_checked)
            GM_FORWARD_IF_ERROR(gm_stream_check(stream, buffer->ctx, what, "buffer"));
        buffer_checked = true;
    }
    GM_RETURN_ERROR_IF(!gm_layout_is_c_contiguous(buffer->ndim, buffer->shape, buffer->strides, buffer->itemsize),
                       GPUMEM_ERROR_INVALID_VALUE,
                       "%s: 'buffer' is not C-contiguous: the views go into one run of bytes (make it with "
                       "'C' order, or copy it into a contiguous array)", what);
    uint64_t have = (uint64_t)gm_array_size(buffer) * buffer->itemsize;
    GM_RETURN_ERROR_IF(have < total, GPUMEM_ERROR_INVALID_VALUE,
                       "%s: 'buffer' holds %llu bytes, but the %zu views take %llu", what, (unsigned long long)have,
                       count, (unsigned long long)total);
    gpumem_array **pieces = calloc(count > 0 ? count : 1, sizeof *pieces);
    if (pieces == NULL)
        return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", what);
    gpumem_status st = GPUMEM_OK;
    uint64_t off = 0;
    for (size_t i = 0; i < count && st == GPUMEM_OK; i++) {
        st = buffer_piece(what, buffer, off, views[i], &pieces[i]);
        off += (uint64_t)gm_array_size(views[i]) * views[i]->itemsize;
    }
    if (st == GPUMEM_OK) {
        const batch_names nm = {what, unpack ? unpack_name : pack_name};
        st = unpack ? check_and_run(&nm, count, views, pieces, stream)
                    : check_and_run(&nm, count, pieces, views, stream);
    }
    for (size_t i = 0; i < count; i++)
        st = gm_keep_first(st, gpumem_array_release(pieces[i]));
    free(pieces);
    return st;
}

GPUMEM_API gpumem_status gpumem_array_pack(size_t count, gpumem_array *const *views, gpumem_array *buffer,
                                           gpumem_stream *stream)
{
    return pack_call("gpumem_array_pack", false, count, views, buffer, stream);
}

GPUMEM_API gpumem_status gpumem_array_unpack(size_t count, gpumem_array *const *views, const gpumem_array *buffer,
                                             gpumem_stream *stream)
{
    return pack_call("gpumem_array_unpack", true, count, views, buffer, stream);
}
