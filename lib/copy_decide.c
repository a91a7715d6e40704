/*
 * copy_decide.c - the copy engine's decision (copy_decide.h says the rules).
 * Pure: layouts, kinds, capabilities and tuning in, a decision out.
 */
#include "config.h"

#include <string.h>

#include "copy_decide.h"
#include "copyplan.h"
#include "error.h"

/* ---- layouts ------------------------------------------------------------------------------------- */

bool gm_copy_dense(int ndim, const int64_t *shape, const int64_t *strides, size_t itemsize)
{
    int64_t like[GM_MAX_NDIM];
    gm_layout_strides_like(ndim, shape, strides, itemsize, like);
    for (int i = 0; i < ndim; i++)
        if (shape[i] > 1 && strides[i] != like[i] && strides[i] != -like[i])
            return false;
    return true;
}

bool gm_copy_has_layout(int ndim, const int64_t *shape, const int64_t *strides, size_t itemsize, const int64_t *s)
{
    int64_t like[GM_MAX_NDIM];
    gm_layout_strides_like(ndim, shape, strides, itemsize, like);
    for (int i = 0; i < ndim; i++) {
        if (shape[i] <= 1)
            continue;
        if (strides[i] != s[i] || (s[i] != like[i] && s[i] != -like[i]))
            return false;
    }
    return true;
}

/* Dense with positive strides. */
static bool dense_forward(int ndim, const int64_t *shape, const int64_t *strides, size_t itemsize)
{
    for (int i = 0; i < ndim; i++)
        if (shape[i] > 1 && strides[i] < 0)
            return false;
    return gm_copy_has_layout(ndim, shape, strides, itemsize, strides);
}

void gm_copy_crossing_layout(int ndim, const int64_t *shape, size_t itemsize, const int64_t *src_strides,
                             const int64_t *dst_strides, int64_t *out)
{
    if (gm_copy_has_layout(ndim, shape, dst_strides, itemsize, dst_strides) &&
        gm_copy_has_layout(ndim, shape, src_strides, itemsize, dst_strides))
        memcpy(out, dst_strides, sizeof(int64_t) * (size_t)ndim);
    else if (dense_forward(ndim, shape, dst_strides, itemsize))
        memcpy(out, dst_strides, sizeof(int64_t) * (size_t)ndim);
    else if (dense_forward(ndim, shape, src_strides, itemsize))
        memcpy(out, src_strides, sizeof(int64_t) * (size_t)ndim);
    else
        gm_layout_strides_like(ndim, shape, dst_strides, itemsize, out);
    for (int i = 0; i < ndim; i++) /* extent-1 axes: any stride; scratch wants a contiguous one */
        if (shape[i] <= 1)
            out[i] = 0;
    int64_t like[GM_MAX_NDIM];
    gm_layout_strides_like(ndim, shape, out, itemsize, like);
    for (int i = 0; i < ndim; i++)
        if (shape[i] <= 1)
            out[i] = like[i];
}

/* Whether the bytes of two sides in one address space overlap. */
static bool overlap(int ndim, const int64_t *shape, size_t itemsize, const gm_copy_side *a, const gm_copy_side *b)
{
    int64_t alo = 0, ahi = 0, blo = 0, bhi = 0;
    gm_layout_extent(ndim, shape, a->strides, itemsize, &alo, &ahi);
    gm_layout_extent(ndim, shape, b->strides, itemsize, &blo, &bhi);
    return a->addr + (uint64_t)alo < b->addr + (uint64_t)bhi && b->addr + (uint64_t)blo < a->addr + (uint64_t)ahi;
}

void gm_copy_run_strides(const gm_copy_decision *d, int ndim, const int64_t *shape, size_t itemsize,
                         const int64_t *src_strides, const int64_t *dst_strides, int64_t *out)
{
    switch (d->run) {
    case GM_RUN_SRC: memcpy(out, src_strides, sizeof(int64_t) * (size_t)ndim); break;
    case GM_RUN_DST: memcpy(out, dst_strides, sizeof(int64_t) * (size_t)ndim); break;
    case GM_RUN_LIKE_SRC: gm_layout_strides_like(ndim, shape, src_strides, itemsize, out); break;
    case GM_RUN_CROSSING: gm_copy_crossing_layout(ndim, shape, itemsize, src_strides, dst_strides, out); break;
    default: gm_layout_strides_like(ndim, shape, dst_strides, itemsize, out); break;
    }
}

/* ---- chunks -------------------------------------------------------------------------------------- */

static int64_t abs64(int64_t v)
{
    return v < 0 ? -v : v;
}

/* Cuts a run of `bytes` with strides rs into chunks of at most limit bytes
 * (at least one element each) along its outermost axes. */
static void chunk_plan(gm_copy_decision *d, int ndim, const int64_t *shape, const int64_t *rs, uint64_t bytes,
                       uint64_t limit)
{
    /* the axes of extent > 1, by decreasing |stride| (stable): the run's order */
    int n = 0;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] <= 1)
            continue;
        int j = n++;
        for (; j > 0 && abs64(rs[d->run_order[j - 1]]) < abs64(rs[i]); j--)
            d->run_order[j] = d->run_order[j - 1];
        d->run_order[j] = (int8_t)i;
    }
    d->nrun = n;
    if (bytes <= limit || n == 0) {
        d->nchunks = 1;
        d->chunk_bytes = bytes;
        d->chunk_level = 0;
        d->chunk_extent = n > 0 ? shape[d->run_order[0]] : 1;
        d->nbufs = 1;
        return;
    }
    /* the outermost level whose inner bytes (one index of it) fit */
    uint64_t inner = bytes, outer = 1;
    int k = 0;
    for (; k < n; k++) {
        inner /= (uint64_t)shape[d->run_order[k]];
        if (inner <= limit || k == n - 1)
            break;
        outer *= (uint64_t)shape[d->run_order[k]];
    }
    int64_t ext = shape[d->run_order[k]];
    int64_t per = inner <= limit ? (int64_t)(limit / inner) : 1;
    if (per > ext)
        per = ext;
    d->chunk_level = k;
    d->chunk_extent = per;
    d->nchunks = outer * (uint64_t)((ext + per - 1) / per);
    d->chunk_bytes = (uint64_t)per * inner;
    d->nbufs = d->nchunks > 1 ? 2 : 1;
}

void gm_copy_chunk(const gm_copy_decision *d, int ndim, const int64_t *shape, size_t itemsize,
                   const int64_t *run_strides, uint64_t c, int64_t *start, int64_t *extent, uint64_t *offset,
                   uint64_t *bytes)
{
    for (int i = 0; i < ndim; i++) {
        start[i] = 0;
        extent[i] = shape[i];
    }
    uint64_t off = 0, b = itemsize;
    int k = d->chunk_level;
    if (d->nrun > 0) {
        const int8_t *o = d->run_order;
        int64_t ext = shape[o[k]], per = d->chunk_extent;
        uint64_t nk = (uint64_t)((ext + per - 1) / per), outer = c / nk;
        int64_t j0 = (int64_t)(c % nk) * per, cnt = ext - j0 < per ? ext - j0 : per;
        /* positions are in memory order: an axis the run has reversed counts from its end */
        for (int l = k - 1; l >= 0; l--) {
            int a = o[l];
            int64_t pos = (int64_t)(outer % (uint64_t)shape[a]);
            outer /= (uint64_t)shape[a];
            start[a] = run_strides[a] < 0 ? shape[a] - 1 - pos : pos;
            extent[a] = 1;
            off += (uint64_t)pos * (uint64_t)abs64(run_strides[a]);
        }
        start[o[k]] = run_strides[o[k]] < 0 ? ext - j0 - cnt : j0;
        extent[o[k]] = cnt;
        off += (uint64_t)j0 * (uint64_t)abs64(run_strides[o[k]]);
        for (int l = k; l < d->nrun; l++)
            b *= (uint64_t)extent[o[l]];
    }
    *offset = off;
    *bytes = b;
}

/* ---- the decision -------------------------------------------------------------------------------- */

static void fail(gm_copy_decision *d, gpumem_status st, unsigned bad)
{
    d->how = GM_HOW_FAIL;
    d->path = GPUMEM_COPY_PATH_NONE;
    d->status = st;
    d->bad = bad;
}


typedef struct input {
    int ndim;
    const int64_t *shape;
    size_t itemsize;
    const gm_copy_side *src, *dst;
    const gm_copy_caps *caps;
    const gm_copy_tuning *t;
    uint64_t bytes;
    int side; /* the device the probe is asked about (gm_copy_probe); -1: the device side's */
} input;

/* Whether both sides of a copy are C-contiguous (axes of extent 1 aside):
 * the planner's plan is then one 1-D copy of every byte, from element 0. */
static bool both_c_contiguous(const input *in)
{
    uint64_t want = in->itemsize;
    for (int i = in->ndim - 1; i >= 0; i--) {
        if (in->shape[i] <= 1)
            continue;
        if (in->src->strides[i] != (int64_t)want || in->dst->strides[i] != (int64_t)want)
            return false;
        want *= (uint64_t)in->shape[i];
    }
    return true;
}

/* Whether a capability can be had for the copy: the caller's probe gets it
 * (gm_copy_probe), else the caps' flags say.  False with d failed when the
 * probe fails. */
static bool have(const input *in, gm_copy_decision *d, gm_copy_need need, int side, uint64_t bytes, bool two)
{
    const gm_copy_caps *c = in->caps;
    if (c->probe == NULL) {
        switch (need) {
        case GM_NEED_KERNELS: return !c->no_kernels;
        case GM_NEED_STAGING: return !c->staging_busy;
        case GM_NEED_WINDOW: return !c->no_scratch && !c->small_scratch;
        default: return !c->no_scratch;
        }
    }
    bool h = false;
    gpumem_status st = c->probe->acquire(c->probe->arg, need, side, bytes, two, &h);
    if (st != GPUMEM_OK) {
        fail(d, st, 0);
        d->probe_failed = true;
        return false;
    }
    return h;
}

/* The device side asked about in a copy of one device (gm_copy_probe's side). */
static int device_side(const input *in)
{
    return in->side >= 0 ? in->side : in->dst->mem == GM_COPY_MEM_DEVICE ? 1 : 0;
}

/* Whether a transfer with a pageable host end of the copy is staged; false
 * with d failed when the staging settings are bad (or the probe failed). */
static bool staged_transfer(const input *in, gm_copy_decision *d)
{
    if (in->t->bad & GM_TUNE_BAD_STAGING) {
        fail(d, GPUMEM_ERROR_INVALID_ENVIRONMENT, GM_TUNE_BAD_STAGING);
        return false;
    }
    bool split = (in->src->mem == GM_COPY_MEM_PAGEABLE && in->src->split) ||
                 (in->dst->mem == GM_COPY_MEM_PAGEABLE && in->dst->split);
    if (in->bytes < in->t->staging.min_bytes && !split) /* the driver refuses split bytes at any size */
        return false;
    if (!have(in, d, GM_NEED_STAGING, device_side(in), 0, false)) {
        if (d->how != GM_HOW_FAIL)
            d->reason = GM_REASON_STAGING_BUSY;
        return false;
    }
    return true;
}

/* A way without what a packed run needed: d says only how, path and why. */
static void instead(gm_copy_decision *d, gm_copy_how how, gpumem_copy_path path, gm_copy_reason why)
{
    memset(d, 0, sizeof *d);
    d->how = how;
    d->path = path;
    d->reason = why;
}

/* The path of the planner's rectangular copies between two layouts. */
static gpumem_copy_path rect_path(const input *in, const int64_t *ss, const int64_t *ds, gpumem_copy_path one,
                                  gm_copy_decision *d)
{
    gm_copy_plan p;
    size_t max_pitch = in->caps->max_pitch > 0 ? in->caps->max_pitch : SIZE_MAX;
    gpumem_status st = gm_copy_plan_make(in->ndim, in->shape, ss, ds, in->itemsize, max_pitch, &p);
    if (st != GPUMEM_OK) {
        fail(d, st, 0);
        return GPUMEM_COPY_PATH_NONE;
    }
    return gm_copy_plan_count(&p) > 1 ? GPUMEM_COPY_PATH_DMA_LOOP : one;
}

/* Whether the pack plan of the whole copy between a strided side and a
 * packed one takes the tiled (transpose) kernels. */
static bool tiled(const input *in, const int64_t *strided, uint64_t saddr, const int64_t *packed, uint64_t paddr,
                  bool unpack)
{
    gm_pack_plan p;
    return gm_pack_plan_make(in->ndim, in->shape, strided, packed, in->itemsize, saddr, paddr, unpack, &p) ==
               GPUMEM_OK &&
           p.tiled;
}

/* A packed run: sets the ops, the run and its scratch chunks, the scratch
 * had (a staged copy's window, else buffers of tuning.scratch_chunk).
 * False when the scratch cannot be had (the caller takes another way);
 * true with d failed on a failure. */
static bool packed(const input *in, gm_copy_decision *d, gm_copy_op src_op, gm_copy_op dst_op, gm_copy_run_layout run,
                   gpumem_copy_path path)
{
    d->how = GM_HOW_PACKED;
    d->path = path;
    d->src_op = src_op;
    d->dst_op = dst_op;
    d->run = run;
    bool sdev = in->src->mem == GM_COPY_MEM_DEVICE, ddev = in->dst->mem == GM_COPY_MEM_DEVICE;
    bool cpu = src_op == GM_OP_CPU || dst_op == GM_OP_CPU;
    /* a pageable host buffer holds the run only where the driver's rectangular copies meet the CPU's packing */
    d->host_run = src_op == GM_OP_RECT || dst_op == GM_OP_RECT;
    bool transfer = !(sdev && ddev) && !d->host_run;
    bool pageable_end = (src_op == GM_OP_DIRECT && in->src->mem == GM_COPY_MEM_PAGEABLE) ||
                        (dst_op == GM_OP_DIRECT && in->dst->mem == GM_COPY_MEM_PAGEABLE);
    if (cpu) /* the staging engine's threads (settings), or the worker pool's for a big CPU pack */
        d->cpu_threads = transfer || in->bytes >= in->t->cpu_thread_bytes ? in->t->staging.threads : 1;
    if (transfer && cpu) {
        /* a strided host side is packed or unpacked by the staging engine's
         * threads straight into or out of its pinned slots */
        if (in->t->bad & GM_TUNE_BAD_STAGING) {
            fail(d, GPUMEM_ERROR_INVALID_ENVIRONMENT, GM_TUNE_BAD_STAGING);
            return true;
        }
        /* the engine serves several copies at once (staging.h): it is had */
        (void)have(in, d, GM_NEED_STAGING, device_side(in), 0, false);
        if (d->how == GM_HOW_FAIL)
            return true;
        d->staged = true;
    } else if (transfer && pageable_end) {
        d->staged = staged_transfer(in, d);
        if (d->how == GM_HOW_FAIL)
            return true;
    }
    if (src_op != GM_OP_KERNEL && dst_op != GM_OP_KERNEL)
        return true;
    if (in->t->bad & GM_TUNE_BAD_SCRATCH) {
        fail(d, GPUMEM_ERROR_INVALID_ENVIRONMENT, GM_TUNE_BAD_SCRATCH);
        return true;
    }
    int64_t rs[GM_MAX_NDIM];
    gm_copy_run_strides(d, in->ndim, in->shape, in->itemsize, in->src->strides, in->dst->strides, rs);
    uint64_t limit = in->t->scratch_chunk > 0 ? in->t->scratch_chunk : GM_COPY_SCRATCH_CHUNK;
    const int side = device_side(in);
    bool got = false;
    if (d->staged) { /* the staging window: a slot for every thread in each of the two open buffers */
        uint64_t window = (uint64_t)in->t->staging.threads * in->t->staging.chunk_bytes;
        if (window > GM_COPY_SCRATCH_STAGED_MAX)
            window = GM_COPY_SCRATCH_STAGED_MAX;
        chunk_plan(d, in->ndim, in->shape, rs, in->bytes, window > limit ? window : limit);
        d->overlap = d->nchunks > 1 && transfer;
        got = have(in, d, GM_NEED_WINDOW, side, d->chunk_bytes * (uint64_t)d->nbufs, d->overlap);
        if (d->how == GM_HOW_FAIL)
            return true;
        if (!got)
            d->reason = GM_REASON_SMALL_SCRATCH;
    }
    if (!got) {
        chunk_plan(d, in->ndim, in->shape, rs, in->bytes, limit);
        d->overlap = d->nchunks > 1 && transfer;
        got = have(in, d, GM_NEED_SCRATCH, side, d->chunk_bytes * (uint64_t)d->nbufs, d->overlap);
        if (d->how == GM_HOW_FAIL)
            return true;
        if (!got)
            return false;
    }
    d->transpose = (src_op == GM_OP_KERNEL && tiled(in, in->src->strides, in->src->addr, rs, 0, false)) ||
                   (dst_op == GM_OP_KERNEL && tiled(in, in->dst->strides, in->dst->addr, rs, 0, true));
    return true;
}

/* Without the kernels or scratch (why): the CPU packs the strided host
 * side into a host buffer laid out like the device side's axis order, and
 * the planner's rectangular copies take it to or from the device side. */
static void cpu_and_rect(const input *in, gm_copy_decision *d, bool upload, gm_copy_reason why)
{
    const gm_copy_side *dv = upload ? in->dst : in->src;
    int64_t like[GM_MAX_NDIM];
    instead(d, GM_HOW_NONE, GPUMEM_COPY_PATH_NONE, why);
    gm_layout_strides_like(in->ndim, in->shape, dv->strides, in->itemsize, like);
    gpumem_copy_path p = upload ? rect_path(in, like, dv->strides, GPUMEM_COPY_PATH_CPU_PACK, d)
                                : rect_path(in, dv->strides, like, GPUMEM_COPY_PATH_CPU_PACK, d);
    if (d->how == GM_HOW_FAIL)
        return;
    if (upload)
        packed(in, d, GM_OP_CPU, GM_OP_RECT, GM_RUN_LIKE_DST, p);
    else
        packed(in, d, GM_OP_RECT, GM_OP_CPU, GM_RUN_LIKE_SRC, p);
    d->reason = why;
}

static void decide(const input *in, bool check_overlap, gm_copy_decision *d);
static void plan(const input *in, gm_copy_decision *d);

/* ---- the plan ------------------------------------------------------------------------------------ */

static void step(gm_copy_decision *d, gm_step_kind kind, gm_step_buf from, gm_step_buf to, bool chunked)
{
    d->steps[d->nsteps++] = (gm_copy_step){kind, from, to, chunked};
}

/* Where a packed run meets a side (op) on the crossing. */
static gm_step_buf run_end(gm_copy_op op, gm_step_buf side)
{
    return op == GM_OP_DIRECT ? side : op == GM_OP_CPU ? GM_BUF_SLOTS : GM_BUF_SCRATCH;
}

/* The steps of a packed run (GM_HOW_PACKED): the source's side, the
 * crossing between host and device, the destination's side. */
static void plan_packed(const input *in, gm_copy_decision *d)
{
    const bool chunked = d->nchunks > 0;
    const bool sdev = in->src->mem == GM_COPY_MEM_DEVICE, ddev = in->dst->mem == GM_COPY_MEM_DEVICE;
    if (d->src_op == GM_OP_KERNEL)
        step(d, GM_STEP_PACK, GM_BUF_SRC, GM_BUF_SCRATCH, chunked);
    else if (d->src_op == GM_OP_CPU)
        step(d, GM_STEP_CPU_PACK, GM_BUF_SRC, d->host_run ? GM_BUF_HOST_RUN : GM_BUF_SLOTS, chunked);
    else if (d->src_op == GM_OP_RECT)
        step(d, GM_STEP_RECT, GM_BUF_SRC, GM_BUF_HOST_RUN, false);
    if (sdev != ddev && !d->host_run)
        step(d, d->staged ? GM_STEP_STAGED : GM_STEP_COPY, run_end(d->src_op, GM_BUF_SRC),
             run_end(d->dst_op, GM_BUF_DST), chunked);
    if (d->dst_op == GM_OP_KERNEL)
        step(d, GM_STEP_UNPACK, GM_BUF_SCRATCH, GM_BUF_DST, chunked);
    else if (d->dst_op == GM_OP_CPU)
        step(d, GM_STEP_CPU_UNPACK, d->host_run ? GM_BUF_HOST_RUN : GM_BUF_SLOTS, GM_BUF_DST, chunked);
    else if (d->dst_op == GM_OP_RECT)
        step(d, GM_STEP_RECT, GM_BUF_HOST_RUN, GM_BUF_DST, false);
}

/* The steps of a decision (copy_decide.h's gm_copy_step; a copy through a
 * temporary has them already). */
static void plan(const input *in, gm_copy_decision *d)
{
    if (d->nsteps > 0)
        return;
    if (d->queued) { /* the slabs into the bounce, each a copy of its own, then the landing */
        step(d, GM_STEP_NESTED, GM_BUF_SRC, GM_BUF_BOUNCE, false);
        step(d, GM_STEP_LAND, GM_BUF_BOUNCE, GM_BUF_DST, false);
        return;
    }
    switch (d->how) {
    case GM_HOW_HOST: step(d, GM_STEP_HOST, GM_BUF_SRC, GM_BUF_DST, false); break;
    case GM_HOW_TRANSFER: step(d, d->staged ? GM_STEP_STAGED : GM_STEP_COPY, GM_BUF_SRC, GM_BUF_DST, false); break;
    case GM_HOW_RECT: step(d, GM_STEP_RECT, GM_BUF_SRC, GM_BUF_DST, false); break;
    case GM_HOW_KERNEL:
        step(d, gm_copy_dense(in->ndim, in->shape, in->dst->strides, in->itemsize) ? GM_STEP_PACK : GM_STEP_UNPACK,
             GM_BUF_SRC, GM_BUF_DST, false);
        break;
    case GM_HOW_PEER: /* (through temporaries: peer_temps planned it) */
        step(d, GM_STEP_PEER, GM_BUF_SRC, GM_BUF_DST, d->peer_way == GM_PEER_PIPELINE);
        break;
    case GM_HOW_PACKED: plan_packed(in, d); break;
    default: break; /* nothing runs */
    }
}

/* The calling thread's decisions so far (gm_copy_decide_count). */
static _Thread_local unsigned long decisions;

unsigned long gm_copy_decide_count(void)
{
    return decisions;
}

void gm_copy_decide(int ndim, const int64_t *shape, size_t itemsize, const gm_copy_side *src,
                    const gm_copy_side *dst, const gm_copy_caps *caps, const gm_copy_tuning *tuning,
                    gm_copy_decision *out)
{
    input in = {ndim, shape, itemsize, src, dst, caps, tuning, itemsize, -1};
    /* cleared by copying a cleared one: gcc clears a constant 240 bytes with
     * `rep stos`, whose start-up was a sixth of a small copy's own time */
    static const gm_copy_decision cleared;
    decisions++;
    *out = cleared;
    for (int i = 0; i < ndim; i++)
        in.bytes *= (uint64_t)(shape[i] > 0 ? shape[i] : 0);
    decide(&in, true, out);
    plan(&in, out);
}

/* GM_PEER_TEMPS: temporaries laid out as the crossing run on each strided
 * side's device; the copies into and out of them are steps of the plan,
 * each decided here as one step on its device (the planner's rectangular
 * copies, or one kernel where that device's kernels can be had). */
static void peer_temps(const input *in, gm_copy_decision *d, const int64_t *layout)
{
    d->peer_way = GM_PEER_TEMPS;
    gm_copy_step sub[2];
    for (int i = 0; i < 2; i++) {
        if (!(i == 0 ? d->peer_pack_src : d->peer_unpack_dst))
            continue;
        gm_copy_side tmp = {GM_COPY_MEM_DEVICE, (i == 0 ? in->src : in->dst)->device, 0, layout, false};
        input one = *in;
        one.side = i;
        if (i == 0)
            one.dst = &tmp;
        else
            one.src = &tmp;
        gm_copy_decision s;
        memset(&s, 0, sizeof s);
        decide(&one, false, &s);
        if (s.how == GM_HOW_FAIL) {
            *d = s;
            return;
        }
        plan(&one, &s);
        if (s.nsteps != 1) { /* not by the rules: the temporary is dense */
            fail(d, GPUMEM_ERROR_INTERNAL, 0);
            return;
        }
        sub[i] = s.steps[0];
    }
    if (d->peer_pack_src) {
        sub[0].to = GM_BUF_TEMP;
        d->steps[d->nsteps++] = sub[0];
    }
    step(d, GM_STEP_PEER, d->peer_pack_src ? GM_BUF_TEMP : GM_BUF_SRC, d->peer_unpack_dst ? GM_BUF_TEMP : GM_BUF_DST,
         false);
    if (d->peer_unpack_dst) {
        sub[1].from = GM_BUF_TEMP;
        d->steps[d->nsteps++] = sub[1];
    }
}

static void decide(const input *in, bool check_overlap, gm_copy_decision *d)
{
    const gm_copy_side *src = in->src, *dst = in->dst;
    const gm_copy_caps *caps = in->caps;
    const gm_copy_tuning *t = in->t;
    int ndim = in->ndim;
    const int64_t *shape = in->shape;
    size_t isz = in->itemsize;

    /* 1. nothing to move */
    if (in->bytes == 0) {
        d->how = GM_HOW_NONE;
        d->path = GPUMEM_COPY_PATH_NONE;
        return;
    }
    bool sdev = src->mem == GM_COPY_MEM_DEVICE, ddev = dst->mem == GM_COPY_MEM_DEVICE;

    /* 2. two devices */
    if (sdev && ddev && src->device != dst->device) {
        if (t->bad & GM_TUNE_BAD_PEER) {
            fail(d, GPUMEM_ERROR_INVALID_ENVIRONMENT, GM_TUNE_BAD_PEER);
            return;
        }
        if (!caps->peer && (t->bad & GM_TUNE_BAD_STAGING)) { /* staged through the engine's slots */
            fail(d, GPUMEM_ERROR_INVALID_ENVIRONMENT, GM_TUNE_BAD_STAGING);
            return;
        }
        int64_t layout[GM_MAX_NDIM];
        gm_copy_crossing_layout(ndim, shape, isz, src->strides, dst->strides, layout);
        d->how = GM_HOW_PEER;
        d->path = caps->peer ? GPUMEM_COPY_PATH_PEER : GPUMEM_COPY_PATH_PEER_STAGED;
        d->peer_pack_src = !gm_copy_has_layout(ndim, shape, src->strides, isz, layout);
        d->peer_unpack_dst = !gm_copy_has_layout(ndim, shape, dst->strides, isz, layout);
        d->run = GM_RUN_CROSSING;
        if (!d->peer_pack_src && !d->peer_unpack_dst) {
            d->peer_way = GM_PEER_COPY;
            return;
        }
        /* one pass over the link with peer access: a dense destination is
         * written by the source's kernel, gathering as it goes (push); a
         * dense source is read by the destination's kernel, scattering as
         * it goes (pull).  The strided side stays local to the kernel: a
         * strided access across the link wastes most of each transaction
         * (C -> [:, ::2] pushed ran at 167 GB/s, pulled at 365, two H200s). */
        bool push = caps->peer && !d->peer_unpack_dst;
        bool pull = caps->peer && !push && !d->peer_pack_src;
        /* the kernels of each device that runs one: the strided sides' */
        bool kernels = push ? have(in, d, GM_NEED_KERNELS, 0, 0, false)
                       : pull ? have(in, d, GM_NEED_KERNELS, 1, 0, false)
                              : (!d->peer_pack_src || have(in, d, GM_NEED_KERNELS, 0, 0, false)) &&
                                    (!d->peer_unpack_dst || have(in, d, GM_NEED_KERNELS, 1, 0, false));
        if (d->how == GM_HOW_FAIL)
            return;
        if (!kernels) {
            d->reason = GM_REASON_NO_KERNELS;
            peer_temps(in, d, layout);
            return;
        }
        if (push || pull) {
            d->peer_way = GM_PEER_KERNEL;
            d->peer_write = push;
            d->peer_read = pull;
            return;
        }
        if (t->bad & GM_TUNE_BAD_SCRATCH) {
            fail(d, GPUMEM_ERROR_INVALID_ENVIRONMENT, GM_TUNE_BAD_SCRATCH);
            return;
        }
        d->peer_way = GM_PEER_PIPELINE;
        d->peer_write = caps->peer && d->peer_pack_src;
        uint64_t limit = t->scratch_chunk;
        if (limit == 0 && caps->peer) { /* fewer waits across the devices (copy_tuning.h) */
            limit = in->bytes / 4;
            limit = limit < GM_COPY_SCRATCH_CHUNK ? GM_COPY_SCRATCH_CHUNK
                    : limit > GM_COPY_PEER_CHUNK_MAX ? GM_COPY_PEER_CHUNK_MAX : limit;
        } else if (limit == 0) {
            limit = GM_COPY_SCRATCH_CHUNK;
        }
        chunk_plan(d, ndim, shape, layout, in->bytes, limit);
        /* with peer access the source's device fills one buffer of the
         * destination's while the destination's unpacks the other; staged,
         * each device packs (unpacks) a chunk on the stream that moves it */
        if (!caps->peer)
            d->nbufs = 1;
        d->overlap = d->nchunks > 1 || !caps->peer;
        /* scratch: with peer access the destination's buffers (and the
         * source's side stream, its buffer unused); staged, one buffer on
         * each strided side's device */
        bool scratch = caps->peer ? have(in, d, GM_NEED_SCRATCH, 0, 1, d->nbufs > 1) &&
                                        have(in, d, GM_NEED_SCRATCH, 1, d->chunk_bytes * (uint64_t)d->nbufs, false)
                                  : (!d->peer_pack_src || have(in, d, GM_NEED_SCRATCH, 0, d->chunk_bytes, false)) &&
                                        (!d->peer_unpack_dst ||
                                         have(in, d, GM_NEED_SCRATCH, 1, d->chunk_bytes, false));
        if (d->how == GM_HOW_FAIL || scratch)
            return;
        bool pack_src = d->peer_pack_src, unpack_dst = d->peer_unpack_dst;
        instead(d, GM_HOW_PEER, caps->peer ? GPUMEM_COPY_PATH_PEER : GPUMEM_COPY_PATH_PEER_STAGED,
                GM_REASON_NO_SCRATCH);
        d->run = GM_RUN_CROSSING;
        d->peer_pack_src = pack_src;
        d->peer_unpack_dst = unpack_dst;
        peer_temps(in, d, layout);
        return;
    }

    /* 3. the CPU */
    if (!sdev && !ddev) {
        d->how = GM_HOW_HOST;
        d->path = GPUMEM_COPY_PATH_HOST;
        d->via_temp = overlap(ndim, shape, isz, src, dst);
        return;
    }
    if (t->bad & GM_TUNE_BAD_MIN_ROW) {
        fail(d, GPUMEM_ERROR_INVALID_ENVIRONMENT, GM_TUNE_BAD_MIN_ROW);
        return;
    }

    /* 4. a queued download into pageable memory: the copy into the bounce */
    if (caps->on_stream && sdev && dst->mem == GM_COPY_MEM_PAGEABLE) {
        int64_t like[GM_MAX_NDIM];
        gm_layout_strides_like(ndim, shape, dst->strides, isz, like);
        gm_copy_side bounce = {GM_COPY_MEM_LOCKED, -1, 0, like, false};
        gm_copy_caps nested = *caps; /* the copy into the bounce decides and acquires for itself */
        nested.probe = NULL;
        input b = *in;
        b.dst = &bounce;
        b.caps = &nested;
        decide(&b, false, d);
        d->queued = true;
        return;
    }

    /* 5. overlapping device views: into a temporary laid out like src, out
     * of it; each copy is one step (a driver copy or one kernel: the
     * temporary is dense), the path the second's */
    if (sdev && ddev && check_overlap && overlap(ndim, shape, isz, src, dst)) {
        int64_t like[GM_MAX_NDIM];
        gm_layout_strides_like(ndim, shape, src->strides, isz, like);
        gm_copy_side tmp = {GM_COPY_MEM_DEVICE, src->device, 0, like, false};
        input first = *in, second = *in;
        first.dst = &tmp;
        second.src = &tmp;
        gm_copy_decision a, b;
        memset(&a, 0, sizeof a);
        memset(&b, 0, sizeof b);
        decide(&first, false, &a);
        if (a.how != GM_HOW_FAIL)
            decide(&second, false, &b);
        if (a.how == GM_HOW_FAIL || b.how == GM_HOW_FAIL) {
            *d = a.how == GM_HOW_FAIL ? a : b;
            return;
        }
        plan(&first, &a);
        plan(&second, &b);
        if (a.nsteps != 1 || b.nsteps != 1) { /* not by the rules: a dense side is one step */
            fail(d, GPUMEM_ERROR_INTERNAL, 0);
            return;
        }
        d->how = GM_HOW_TEMP;
        d->path = b.path;
        d->reason = a.reason != GM_REASON_NONE ? a.reason : b.reason;
        d->steps[0] = a.steps[0];
        d->steps[0].to = GM_BUF_TEMP;
        d->steps[1] = b.steps[0];
        d->steps[1].from = GM_BUF_TEMP;
        d->nsteps = 2;
        return;
    }

    /* 6. one rectangular copy (two C-contiguous sides between host and
     * device, the commonest copy, are the planner's one 1-D copy of all the
     * bytes from element 0: known without planning) */
    const gm_copy_side *host = sdev ? dst : src;
    bool cross = sdev != ddev, paged = cross && host->mem == GM_COPY_MEM_PAGEABLE;
    gm_copy_plan plan;
    uint64_t count = 1;
    if (cross && both_c_contiguous(in)) {
        plan.dims = 1;
        plan.src_offset = plan.dst_offset = 0;
        plan.width = in->bytes;
    } else {
        size_t max_pitch = caps->max_pitch > 0 ? caps->max_pitch : SIZE_MAX;
        gpumem_status st = gm_copy_plan_make(ndim, shape, src->strides, dst->strides, isz, max_pitch, &plan);
        if (st != GPUMEM_OK) {
            fail(d, st, 0);
            return;
        }
        count = gm_copy_plan_count(&plan);
    }
    bool slow2d = plan.dims >= 2 && paged && !(t->bad & GM_TUNE_BAD_STAGING) &&
                  (in->bytes >= t->staging.min_bytes || host->split);
    bool narrow = plan.dims >= 2 && (plan.width < t->min_row_bytes || slow2d);
    if (count == 1 && plan.dims == 1 && cross) {
        d->how = GM_HOW_TRANSFER;
        d->path = GPUMEM_COPY_PATH_CONTIGUOUS;
        d->src_offset = plan.src_offset;
        d->dst_offset = plan.dst_offset;
        d->width = plan.width;
        if (paged && staged_transfer(in, d)) {
            d->staged = true;
            d->path = GPUMEM_COPY_PATH_STAGED;
        }
        return;
    }
    if (count == 1 && !narrow) {
        d->how = GM_HOW_RECT;
        d->path = plan.dims == 1 ? GPUMEM_COPY_PATH_CONTIGUOUS : GPUMEM_COPY_PATH_DMA;
        return;
    }

    /* 7 and 8. packing */
    bool sdense = gm_copy_dense(ndim, shape, src->strides, isz), ddense = gm_copy_dense(ndim, shape, dst->strides, isz);
    gpumem_copy_path rect = count == 1 ? GPUMEM_COPY_PATH_DMA : GPUMEM_COPY_PATH_DMA_LOOP;
    /* the strided host side packed by the CPU against the dense device side: no kernels */
    if (ddev && !sdev && ddense && !sdense) {
        packed(in, d, GM_OP_CPU, GM_OP_DIRECT, GM_RUN_DST, GPUMEM_COPY_PATH_CPU_PACK);
        return;
    }
    if (sdev && !ddev && sdense && !ddense) {
        packed(in, d, GM_OP_DIRECT, GM_OP_CPU, GM_RUN_SRC, GPUMEM_COPY_PATH_CPU_PACK);
        return;
    }
    bool kernels = have(in, d, GM_NEED_KERNELS, device_side(in), 0, false);
    if (d->how == GM_HOW_FAIL)
        return;
    gm_copy_reason why = !kernels ? GM_REASON_NO_KERNELS : GM_REASON_NO_SCRATCH;
    if (sdev && ddev) {
        if (kernels && (ddense || sdense)) {
            d->how = GM_HOW_KERNEL;
            d->path = GPUMEM_COPY_PATH_DEVICE_PACK;
            d->transpose = ddense ? tiled(in, src->strides, src->addr, dst->strides, dst->addr, false)
                                  : tiled(in, dst->strides, dst->addr, src->strides, src->addr, true);
        } else if (!kernels || !packed(in, d, GM_OP_KERNEL, GM_OP_KERNEL, GM_RUN_LIKE_DST, GPUMEM_COPY_PATH_DEVICE_PACK)) {
            instead(d, GM_HOW_RECT, rect, why);
        }
        return;
    }
    /* host to device (up) or device to host: a dense host side crosses as it is */
    const bool up = ddev;
    if (up ? sdense : ddense) {
        if (!kernels || !packed(in, d, up ? GM_OP_DIRECT : GM_OP_KERNEL, up ? GM_OP_KERNEL : GM_OP_DIRECT,
                                up ? GM_RUN_SRC : GM_RUN_DST, GPUMEM_COPY_PATH_DEVICE_PACK))
            instead(d, GM_HOW_RECT, rect, why);
        return;
    }
    if (kernels && packed(in, d, up ? GM_OP_CPU : GM_OP_KERNEL, up ? GM_OP_KERNEL : GM_OP_CPU, GM_RUN_LIKE_DST,
                          GPUMEM_COPY_PATH_CPU_DEVICE_PACK))
        return;
    cpu_and_rect(in, d, up, why);
}
