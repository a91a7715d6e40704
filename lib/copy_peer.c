/*
 * copy_peer.c - copies between device arrays of two devices, and the peer
 * settings of gpumem/peer.h.
 *
 * Every such copy moves one dense run of bytes (the crossing layout,
 * copy_decide.c) from the source device to the destination device, as the
 * decision says (copy_decide.h, rule 2):
 *  - GM_PEER_COPY: both sides have the run's layout; one cuMemcpyPeer with
 *    peer access (queued on the caller's stream), else the run goes through
 *    the staging engine's pinned slots;
 *  - GM_PEER_KERNEL: one kernel, on the device of the strided side: the
 *    source's pack kernel reads the strided source and writes the dense
 *    destination through the peer mapping (push), or the destination's
 *    unpack kernel reads the dense source through it and writes the
 *    strided destination (pull); unified addressing: once peer access is
 *    on, the other device's pointers are valid in the kernel;
 *  - GM_PEER_PIPELINE with peer access (both sides strided): chunk by
 *    chunk through two scratch buffers on the destination's device, filled
 *    by the source's pack kernel writing through the peer mapping on two
 *    streams of its own, taking turns, while the
 *    destination's device unpacks the other buffer; events order the
 *    buffers, the host waits only at the end;
 *  - GM_PEER_PIPELINE staged: chunk by chunk, a strided source packed into
 *    scratch on its device, the chunk downloaded into the staging engine's
 *    pinned slots and uploaded from them (the download of one slot
 *    overlapping the upload of another, ordered by events on each device's
 *    stream), a strided destination unpacked from scratch on its device;
 *  - GM_PEER_TEMPS: without the kernels or scratch, temporaries as large as
 *    the copy that the plan's first and last steps fill and empty (gm_copy_step_run, in each
 *    side's context), moved as one run.
 * Peer access is enabled once per pair, both ways, and remembered.
 *
 * What a failure says of the destination (gpumem/array.h, gpumem/peer.h):
 * each way notes, in a dst_truth, when it issued a write into the
 * destination, when it issued the last one, and when a wait for the stream
 * that runs the writes succeeded after that.  A failure before the first
 * write says nothing more (the destination is unchanged); after it, the
 * message says "the write into the destination was issued" (it may be
 * partly written), or, once the wait succeeded, "the copy completed" (it
 * holds the whole copy): a failure that comes later (a wait for the other
 * device, an event recorded after the last write) does not undo it.
 */

#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "context.h"
#include "copy_engine.h"
#include "pack_calls.h"
#include "copy_peer.h"
#include "copy_tuning.h"
#include "error.h"
#include "gpumem/dtype.h"
#include "gpumem/peer.h"
#include "layout.h"
#include "staging.h"
#include "stream.h"

/* ---- settings ------------------------------------------------------------------------------------ */

/* Whether copies between devices may use peer access: the tuning's
 * (gpumem_peer_set_enabled's value, else GPUMEM_PEER's). */
static gpumem_status peer_setting(const char *what, int *enabled)
{
    gm_copy_tuning t;
    gm_copy_tuning_get(&t);
    if (t.bad & GM_TUNE_BAD_PEER)
        return gm_copy_tuning_error(GM_TUNE_BAD_PEER, what);
    *enabled = t.peer;
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_peer_set_enabled(int enabled)
{
    if (enabled != 0 && enabled != 1)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "gpumem_peer_set_enabled: 'enabled' is %d; it must be 0 or 1",
                        enabled);
    gm_copy_tuning_set_peer(enabled);
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_peer_enabled(int *enabled)
{
    GM_CHECK_NULL(enabled);
    return peer_setting("gpumem_peer_enabled", enabled);
}

static gpumem_status check_ordinal(const char *what, const char *arg, int device, int count)
{
    if (device < 0 || device >= count)
        return gm_error(GPUMEM_ERROR_INVALID_DEVICE, "%s: '%s' is %d, but the backend has %d device%s", what, arg,
                        device, count, count == 1 ? "" : "s");
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_peer_can_access(int device, int peer, int *can)
{
    static const char what[] = "gpumem_peer_can_access";
    GM_CHECK_NULL(can);
    int count = 0, c = 0;
    gpumem_status st = gm_driver_ready_for(what);
    if (st == GPUMEM_OK)
        st = gm_drv_check(GM_DRV(device_get_count, &count), GM_OP_device_get_count, what);
    if (st == GPUMEM_OK)
        st = check_ordinal(what, "device", device, count);
    if (st == GPUMEM_OK)
        st = check_ordinal(what, "peer", peer, count);
    if (st == GPUMEM_OK && device != peer)
        st = gm_drv_check(GM_DRV(device_can_access_peer, device, peer, &c), GM_OP_device_can_access_peer, what);
    if (st == GPUMEM_OK)
        *can = c != 0;
    return st;
}

/* ---- peer access, once per pair ------------------------------------------------------------------ */

/* pairs[a][b]: whether copies between devices a and b use peer access
 * (enabled both ways): 0 not known yet, 1 yes, 2 no.  Forgotten when a
 * context of either device ends (its primary context may end with it, and
 * with it the access). */
#define MAX_PAIRED 64
static pthread_mutex_t pairs_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned char pairs[MAX_PAIRED][MAX_PAIRED];

static gpumem_status forget_device(gpumem_context *ctx, const char *what)
{
    (void)what;
    if (ctx->device >= 0 && ctx->device < MAX_PAIRED) {
        pthread_mutex_lock(&pairs_lock);
        for (int i = 0; i < MAX_PAIRED; i++)
            pairs[ctx->device][i] = pairs[i][ctx->device] = 0;
        pthread_mutex_unlock(&pairs_lock);
    }
    return GPUMEM_OK;
}

const gm_context_hook gm_copy_peer_hook = {NULL, forget_device};

/* Lets a address b's memory: true when done (or already done), false when
 * the driver says the pair cannot. */
static gpumem_status enable_one(const char *what, gpumem_context *a, gpumem_context *b, bool *ok)
{
    int rc = GM_DRV(ctx_enable_peer_access, a->dctx, b->dctx);
    *ok = rc == GM_CUDA_SUCCESS || rc == GM_CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
    if (*ok || rc == GM_CUDA_ERROR_PEER_ACCESS_UNSUPPORTED || rc == GM_CUDA_ERROR_TOO_MANY_PEERS)
        return GPUMEM_OK;
    return gm_drv_check(rc, GM_OP_ctx_enable_peer_access, what);
}

/* Whether a copy between a's and b's devices goes through peer access:
 * the setting allows it and the devices can, with access enabled both ways. */
static gpumem_status peer_ready(const char *what, gpumem_context *a, gpumem_context *b, bool *ready)
{
    int enabled = 0;
    gpumem_status st = peer_setting(what, &enabled);
    *ready = false;
    if (st != GPUMEM_OK || !enabled)
        return st;
    bool cached = a->device < MAX_PAIRED && b->device < MAX_PAIRED;
    pthread_mutex_lock(&pairs_lock);
    unsigned char known = cached ? pairs[a->device][b->device] : 0;
    if (known == 0) {
        int ab = 0, ba = 0;
        bool ok1 = false, ok2 = false;
        st = gm_drv_check(GM_DRV(device_can_access_peer, a->device, b->device, &ab), GM_OP_device_can_access_peer,
                          what);
        if (st == GPUMEM_OK)
            st = gm_drv_check(GM_DRV(device_can_access_peer, b->device, a->device, &ba),
                              GM_OP_device_can_access_peer, what);
        if (st == GPUMEM_OK && ab && ba && (st = enable_one(what, a, b, &ok1)) == GPUMEM_OK && ok1)
            st = enable_one(what, b, a, &ok2);
        if (st == GPUMEM_OK) {
            known = ok1 && ok2 ? 1 : 2;
            if (cached)
                pairs[a->device][b->device] = pairs[b->device][a->device] = known;
        }
    }
    pthread_mutex_unlock(&pairs_lock);
    *ready = known == 1;
    return st;
}

/* ---- layouts ------------------------------------------------------------------------------------- */

bool gm_copy_is_cross_device(const gpumem_array *a, const gpumem_array *b)
{
    return gm_array_on_device(a) && gm_array_on_device(b) && a->ctx != NULL && b->ctx != NULL &&
           a->ctx->device != b->ctx->device;
}

/* The address of a's lowest byte. */
static gm_cu_deviceptr low_addr(const gpumem_array *a)
{
    int64_t lo = 0, hi = 0;
    gm_layout_extent(a->ndim, a->shape, a->strides, a->itemsize, &lo, &hi);
    return a->dev + (gm_cu_deviceptr)lo;
}

/* ---- what the destination holds ------------------------------------------------------------------ */

typedef struct dst_truth {
    bool issued;  /* a write into the destination was queued */
    bool all;     /* its last write was queued */
    bool landed;  /* then a wait for the stream that runs the writes succeeded */
} dst_truth;

/* A write into the destination was queued; last: its last one. */
static void wrote(dst_truth *t, bool last)
{
    t->issued = true;
    t->all = t->all || last;
}

/* The failure st (the record just made) with what it left in the
 * destination said, unless a step below said it already. */
static gpumem_status tell(gpumem_status st, const dst_truth *t)
{
    const char *msg = gm_error_message();
    if (st == GPUMEM_OK || !t->issued || strstr(msg, "the copy completed") != NULL ||
        strstr(msg, "the write into the destination was issued") != NULL)
        return st;
    if (t->landed)
        return gm_error_reword(st, "%s (the copy completed: the destination holds it)", msg);
    return gm_error_reword(st, "%s (the write into the destination was issued: it may be partly written)", msg);
}

/* ---- scratch and kernels on each device ----------------------------------------------------------- */

typedef struct peer_side {
    gpumem_context *ctx;
    gm_pack_kernels *k;
    gm_scratch *s;
} peer_side;

gpumem_status gm_copy_peer_acquire(const char *what, gm_peer_hold *h, gm_copy_need need, int side, uint64_t bytes,
                                   bool two, bool *have)
{
    gpumem_context *ctx = h->ctx[side];
    *have = false;
    if (need == GM_NEED_KERNELS) {
        gpumem_status st = h->k[side] != NULL ? GPUMEM_OK : gm_pack_kernels_get(ctx, what, &h->k[side]);
        *have = h->k[side] != NULL;
        return st;
    }
    if (need == GM_NEED_STAGING || h->k[side] == NULL || h->s[side] != NULL) /* not the decision's questions */
        return GPUMEM_OK;
    gpumem_status st = gm_pack_scratch_get(h->k[side], (size_t)bytes, two, what, &h->s[side]);
    if (st == GPUMEM_ERROR_OUT_OF_MEMORY)
        return GPUMEM_OK;
    if (st != GPUMEM_OK)
        return st;
    *have = true;
    /* the legacy stream, where the copy starts, waits for its last use */
    if (h->s[side]->used)
        st = gm_drv_check(GM_DRV(stream_wait_event, ctx->dctx, NULL, h->s[side]->ev[GM_SCRATCH_DONE]),
                          GM_OP_stream_wait_event, what);
    return st;
}

void gm_copy_peer_release(gm_peer_hold *h)
{
    for (int i = 0; i < 2; i++) {
        gm_pack_scratch_put(h->k[i], h->s[i]);
        gm_pack_kernels_put(h->k[i]);
        h->s[i] = NULL;
        h->k[i] = NULL;
    }
}

/* One device's share of what the copy holds. */
static peer_side side_of(gm_peer_hold *h, int i)
{
    peer_side p = {h->ctx[i], h->k[i], h->s[i]};
    return p;
}

/* Marks the scratch idle: the copy waited for every stream that used it
 * (gm_copy_peer gives it back). */
static void side_put(peer_side *p)
{
    if (p->s != NULL)
        p->s->used = false;
}

static int64_t dot(int n, const int64_t *a, const int64_t *b)
{
    int64_t s = 0;
    for (int i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

/* A pack (unpack: false) of shape ext between strides ss at saddr and the
 * dense layout at paddr, by k's device on ds (NULL: its legacy stream);
 * queued.  Either address may be the other device's (peer access). */
static gpumem_status side_pack(const char *what, gm_pack_kernels *k, gm_dstream *ds, int ndim, const int64_t *ext,
                               size_t itemsize, const int64_t *ss, uint64_t saddr, const int64_t *layout,
                               uint64_t paddr, bool unpack)
{
    gm_pack_plan plan;
    gpumem_status st = gm_pack_plan_make(ndim, ext, ss, layout, itemsize, saddr, paddr, unpack, &plan);
    if (st != GPUMEM_OK)
        return gm_error_prefix(st, what);
    return plan.bytes > 0 ? gm_pack_launch_on(k, &plan, saddr, paddr, ds, what) : GPUMEM_OK;
}

static gpumem_status record(const char *what, gpumem_context *ctx, gm_devent *ev, gm_dstream *ds)
{
    return gm_drv_check(GM_DRV(event_record, ctx->dctx, ev, ds), GM_OP_event_record, what);
}

static gpumem_status wait_for(const char *what, gpumem_context *ctx, gm_dstream *ds, gm_devent *ev)
{
    return gm_drv_check(GM_DRV(stream_wait_event, ctx->dctx, ds, ev), GM_OP_stream_wait_event, what);
}

static gpumem_status sync_stream(const char *what, gpumem_context *ctx, gm_dstream *ds)
{
    return gm_drv_check(GM_DRV(stream_synchronize, ctx->dctx, ds), GM_OP_stream_synchronize, what);
}

/* Waits for every stream the copy used, keeping the first failure; the
 * first (ctx[0], ds[0]) is the one that runs the writes into the
 * destination: once they were all queued, its wait's success says they
 * landed (t). */
static gpumem_status drain(const char *what, gpumem_status st, gpumem_context *const *ctx, gm_dstream *const *ds,
                           int n, dst_truth *t)
{
    for (int i = 0; i < n; i++) {
        if (ctx[i] == NULL)
            continue;
        bool failed = st != GPUMEM_OK; /* as gm_keep_first: the first failure's record stays */
        if (failed)
            gm_error_suspend();
        gpumem_status w = sync_stream(what, ctx[i], ds[i]);
        st = failed ? gm_error_resume(st) : w;
        if (i == 0 && w == GPUMEM_OK && t->all)
            t->landed = true;
    }
    return st;
}

/* ---- one kernel (GM_PEER_KERNEL) ---------------------------------------------------------------------- */

/* One kernel through the peer mapping, on its device's legacy stream, after
 * the other device's legacy stream is done (push: the source's device
 * gathers src into the dense dst, which the other device may still write;
 * pull: the destination's device scatters the dense src into dst, which the
 * other device may still write). */
static gpumem_status one_kernel(const char *what, gpumem_array *dst, const gpumem_array *src, bool pull,
                                gm_peer_hold *h, dst_truth *t)
{
    gpumem_context *on = pull ? dst->ctx : src->ctx, *other = pull ? src->ctx : dst->ctx;
    peer_side ps = side_of(h, pull ? 1 : 0);
    gpumem_status st = sync_stream(what, other, NULL);
    if (st == GPUMEM_OK && pull)
        st = side_pack(what, ps.k, NULL, dst->ndim, dst->shape, dst->itemsize, dst->strides, dst->dev, src->strides,
                       src->dev, true);
    else if (st == GPUMEM_OK)
        st = side_pack(what, ps.k, NULL, dst->ndim, dst->shape, dst->itemsize, src->strides, src->dev, dst->strides,
                       dst->dev, false);
    if (st == GPUMEM_OK)
        wrote(t, true);
    gpumem_context *c[1] = {on};
    gm_dstream *ds[1] = {NULL};
    return drain(what, st, c, ds, 1, t);
}

/* ---- chunks with peer access (GM_PEER_PIPELINE) -------------------------------------------------- */

/* Chunk by chunk through nbufs scratch buffers of the destination's
 * device: buffer h is filled on the source's stream A[h] (its legacy
 * stream, and its scratch's side stream), by the pack kernel writing
 * through the peer mapping, then
 * FILL[h] (the source's event); the destination's legacy stream waits for
 * it, unpacks, records DRAIN[h] (the destination's), which A[h] waits for
 * before it fills the buffer again. */
static gpumem_status peer_pipeline(const char *what, gpumem_array *dst, const gpumem_array *src,
                                   const gm_copy_decision *d, const int64_t *layout, gm_peer_hold *hold,
                                   dst_truth *t)
{
    const int nd = dst->ndim;
    const size_t isz = dst->itemsize;
    const int nbufs = d->nbufs > 1 ? 2 : 1;
    /* the source's: its events and side stream (its buffer stays unused) */
    peer_side ps = side_of(hold, 0), pd = side_of(hold, 1);
    gpumem_status st = GPUMEM_OK;
    gpumem_context *c[3] = {NULL, NULL, NULL};
    gm_dstream *A[2] = {NULL, NULL};
    {
        c[0] = c[2] = src->ctx;
        c[1] = dst->ctx;
        A[1] = nbufs > 1 ? ps.s->side : NULL;
        /* the source's streams write the destination's scratch: after its last use */
        if (pd.s->used)
            st = wait_for(what, src->ctx, NULL, pd.s->ev[GM_SCRATCH_DONE]);
        if (st == GPUMEM_OK && nbufs > 1 && (st = record(what, src->ctx, ps.s->ev[GM_SCRATCH_START], NULL)) ==
                                                GPUMEM_OK)
            st = wait_for(what, src->ctx, A[1], ps.s->ev[GM_SCRATCH_START]);
    }
    int64_t lo = 0, hi = 0;
    gm_layout_extent(nd, dst->shape, layout, isz, &lo, &hi);
    for (uint64_t k = 0; st == GPUMEM_OK && k < d->nchunks; k++) {
        const int h = (int)(k % (uint64_t)nbufs);
        int64_t start[GM_MAX_NDIM], ext[GM_MAX_NDIM];
        uint64_t off = 0, n = 0;
        gm_copy_chunk(d, nd, dst->shape, isz, layout, k, start, ext, &off, &n);
        const uint64_t buf = pd.s->addr + (uint64_t)h * d->chunk_bytes;
        const uint64_t in_buf = buf + (uint64_t)(dot(nd, start, layout) - lo) - off; /* chunk element 0 */
        if (k >= (uint64_t)nbufs)
            st = wait_for(what, src->ctx, A[h], pd.s->ev[GM_SCRATCH_DRAIN + h]);
        if (st == GPUMEM_OK)
            st = side_pack(what, ps.k, A[h], nd, ext, isz, src->strides,
                           src->dev + (uint64_t)dot(nd, start, src->strides), layout, in_buf, false);
        if (st == GPUMEM_OK)
            st = record(what, src->ctx, ps.s->ev[GM_SCRATCH_FILL + h], A[h]);
        if (st == GPUMEM_OK)
            st = wait_for(what, dst->ctx, NULL, ps.s->ev[GM_SCRATCH_FILL + h]);
        if (st == GPUMEM_OK)
            st = side_pack(what, pd.k, NULL, nd, ext, isz, dst->strides,
                           dst->dev + (uint64_t)dot(nd, start, dst->strides), layout, in_buf, true);
        if (st == GPUMEM_OK)
            wrote(t, k + 1 == d->nchunks);
        if (st == GPUMEM_OK)
            st = record(what, dst->ctx, pd.s->ev[GM_SCRATCH_DRAIN + h], NULL);
    }
    /* the destination's legacy stream, which unpacks, first */
    gpumem_context *order[3] = {c[1], c[0], A[1] != NULL ? c[2] : NULL};
    gm_dstream *ds[3] = {NULL, NULL, A[1]};
    st = drain(what, st, order, ds, 3, t);
    side_put(&ps);
    side_put(&pd);
    return st;
}

/* ---- staged through the pinned slots ---------------------------------------------------------------- */

typedef struct staged {
    const char *what;
    gpumem_context *sctx, *dctx;
    uint64_t piece;                 /* slot-sized pieces queued so far: the next slot */
    /* one run (d NULL) */
    gm_cu_deviceptr from, to;
    uint64_t bytes;
    /* or the chunks of d */
    gpumem_array *dst;
    const gpumem_array *src;
    const gm_copy_decision *d;
    const int64_t *layout;
    peer_side ps, pd;
    dst_truth *t;                   /* of the destination */
    bool into_dst;                  /* the run being moved goes into the destination (not scratch) */
    bool last;                      /* and ends the copy: its last upload is the last write */
} staged;

/* n bytes from the source's device at from to the destination's at to,
 * piece by piece through the ring's slots, queued on both legacy streams:
 * the source's downloads a piece into a slot once the upload of its last
 * piece is done, the destination's uploads it once its download is. */
static gpumem_status ring_move(staged *g, const gm_stage_ring *r, gm_cu_deviceptr to, gm_cu_deviceptr from,
                               uint64_t n)
{
    gpumem_status st = GPUMEM_OK;
    for (uint64_t off = 0; st == GPUMEM_OK && off < n;) {
        size_t len = n - off < r->bytes ? (size_t)(n - off) : r->bytes;
        unsigned k = (unsigned)(g->piece % r->n);
        gm_cu_deviceptr slot = (gm_cu_deviceptr)(uintptr_t)r->slot[k];
        if (g->piece >= r->n)
            st = wait_for(g->what, g->sctx, NULL, r->up[k]);
        if (st == GPUMEM_OK)
            st = gm_drv_check(GM_DRV(memcpy, g->sctx->dctx, slot, from + off, len, NULL, 1), GM_OP_memcpy, g->what);
        if (st == GPUMEM_OK)
            st = record(g->what, g->sctx, r->down[k], NULL);
        if (st == GPUMEM_OK)
            st = wait_for(g->what, g->dctx, NULL, r->down[k]);
        if (st == GPUMEM_OK)
            st = gm_drv_check(GM_DRV(memcpy, g->dctx->dctx, to + off, slot, len, NULL, 1), GM_OP_memcpy, g->what);
        if (st == GPUMEM_OK && g->into_dst)
            wrote(g->t, g->last && off + len == n);
        if (st == GPUMEM_OK)
            st = record(g->what, g->dctx, r->up[k], NULL);
        g->piece++;
        off += len;
    }
    return st;
}

/* The staged copy (gm_stage_ring_fn): the run, or chunk by chunk packed
 * into scratch on the source's legacy stream before its pieces go down,
 * unpacked from scratch on the destination's after they came up (one
 * buffer each side: each device's stream takes its steps in turn, the two
 * devices overlap). */
static gpumem_status staged_run(void *arg, const gm_stage_ring *r)
{
    staged *g = arg;
    gpumem_status st = GPUMEM_OK;
    g->piece = 0;
    if (g->d == NULL) {
        g->last = true;
        st = ring_move(g, r, g->to, g->from, g->bytes);
    } else {
        const gm_copy_decision *d = g->d;
        const int nd = g->dst->ndim;
        const size_t isz = g->dst->itemsize;
        int64_t lo = 0, hi = 0;
        gm_layout_extent(nd, g->dst->shape, g->layout, isz, &lo, &hi);
        for (uint64_t c = 0; st == GPUMEM_OK && c < d->nchunks; c++) {
            int64_t start[GM_MAX_NDIM], ext[GM_MAX_NDIM];
            uint64_t off = 0, n = 0;
            gm_copy_chunk(d, nd, g->dst->shape, isz, g->layout, c, start, ext, &off, &n);
            uint64_t in_buf = (uint64_t)(dot(nd, start, g->layout) - lo) - off; /* chunk element 0 in a buffer */
            gm_cu_deviceptr from = low_addr(g->src) + off, to = low_addr(g->dst) + off;
            if (d->peer_pack_src) {
                from = g->ps.s->addr;
                st = side_pack(g->what, g->ps.k, NULL, nd, ext, isz, g->src->strides,
                               g->src->dev + (uint64_t)dot(nd, start, g->src->strides), g->layout, from + in_buf,
                               false);
            }
            if (d->peer_unpack_dst)
                to = g->pd.s->addr;
            g->into_dst = !d->peer_unpack_dst;
            g->last = c + 1 == d->nchunks;
            if (st == GPUMEM_OK)
                st = ring_move(g, r, to, from, n);
            if (st == GPUMEM_OK && d->peer_unpack_dst &&
                (st = side_pack(g->what, g->pd.k, NULL, nd, ext, isz, g->dst->strides,
                                g->dst->dev + (uint64_t)dot(nd, start, g->dst->strides), g->layout, to + in_buf,
                                true)) == GPUMEM_OK)
                wrote(g->t, g->last);
        }
    }
    /* the destination's legacy stream, which writes it, first */
    gpumem_context *c[2] = {g->dctx, g->sctx};
    gm_dstream *ds[2] = {NULL, NULL};
    return drain(g->what, st, c, ds, 2, g->t);
}

/* Runs g through the staging engines of both contexts. */
static gpumem_status staged_go(staged *g)
{
    gm_staging *es = NULL, *ed = NULL;
    gpumem_status st = gm_staging_acquire(g->sctx, &es);
    if (st == GPUMEM_OK)
        st = gm_staging_acquire(g->dctx, &ed);
    if (st == GPUMEM_OK)
        st = gm_staging_peer_run(es, ed, staged_run, g, g->what);
    gm_staging_release(ed);
    gm_staging_release(es);
    return st;
}

/* bytes from src's device at from to dst's at to, staged; complete on
 * return.  t: what the writes at to did (into the destination, or into a
 * temporary). */
static gpumem_status staged_move(const char *what, gpumem_context *dst_ctx, gm_cu_deviceptr to,
                                 gpumem_context *src_ctx, gm_cu_deviceptr from, uint64_t bytes, dst_truth *t)
{
    staged g = {.what = what, .sctx = src_ctx, .dctx = dst_ctx, .from = from, .to = to, .bytes = bytes, .t = t,
                .into_dst = true};
    return staged_go(&g);
}

/* The chunks of d staged, through one scratch buffer on each strided side's device. */
static gpumem_status staged_chunks(const char *what, gpumem_array *dst, const gpumem_array *src,
                                   const gm_copy_decision *d, const int64_t *layout, gm_peer_hold *h, dst_truth *t)
{
    staged g = {.what = what, .sctx = src->ctx, .dctx = dst->ctx, .dst = dst, .src = src, .d = d, .layout = layout,
                .t = t};
    peer_side none = {NULL, NULL, NULL};
    g.ps = d->peer_pack_src ? side_of(h, 0) : none;
    g.pd = d->peer_unpack_dst ? side_of(h, 1) : none;
    gpumem_status st = staged_go(&g);
    if (st != GPUMEM_OK && (g.ps.s != NULL || g.pd.s != NULL)) { /* nothing may still use the scratch */
        gpumem_context *c[2] = {g.pd.s != NULL ? dst->ctx : NULL, g.ps.s != NULL ? src->ctx : NULL};
        gm_dstream *ds[2] = {NULL, NULL};
        (void)drain(what, st, c, ds, 2, t);
    }
    side_put(&g.ps);
    side_put(&g.pd);
    return st;
}

/* ---- without the kernels or scratch (GM_PEER_TEMPS) ------------------------------------------------ */

/* Scratch on a's device (its context) with strides s. */
static gpumem_status scratch(const char *what, const gpumem_array *a, const int64_t *s, gpumem_array **out)
{
    gm_owner was = gm_alloc_owner_begin(GM_OWNER_TEMPORARY); /* the library's own, in a trace */
    gpumem_status st = gm_array_new_device(what, a->ctx, a->ndim, a->shape, s, a->dtype, NULL, out);
    gm_alloc_owner_end(was);
    return st;
}

static gpumem_status temps(const char *what, gpumem_array *dst, const gpumem_array *src, bool peer,
                           const gm_copy_decision *d, const int64_t *layout, gm_peer_hold *h, dst_truth *t)
{
    size_t bytes = (size_t)gm_array_size(dst) * dst->itemsize;
    gpumem_array *s = NULL, *tmp = NULL;
    const gpumem_array *from = src;
    gpumem_array *to = dst;
    gpumem_status st = GPUMEM_OK;
    if (d->peer_pack_src && (st = scratch(what, src, layout, &s)) == GPUMEM_OK) {
        st = gm_copy_step_run(what, src->ctx, h->k[0], &d->steps[0], s, src); /* the plan's first step */
        from = s;
    }
    if (st == GPUMEM_OK && d->peer_unpack_dst && (st = scratch(what, dst, layout, &tmp)) == GPUMEM_OK)
        to = tmp;
    /* the move writes the destination itself, or the temporary the engine then copies into it */
    dst_truth into_temp = {false, false, false}, *moved = tmp != NULL ? &into_temp : t;
    if (st == GPUMEM_OK && peer) {
        st = gm_drv_check(GM_DRV(memcpy_peer, to->ctx->dctx, low_addr(to), to->ctx->dctx, low_addr(from),
                                 from->ctx->dctx, bytes, NULL, 0),
                          GM_OP_memcpy_peer, what);
        if (st == GPUMEM_OK) /* synchronous: it landed */
            *moved = (dst_truth){true, true, true};
    } else if (st == GPUMEM_OK) {
        st = staged_move(what, to->ctx, low_addr(to), from->ctx, low_addr(from), bytes, moved);
    }
    if (st == GPUMEM_OK && tmp != NULL) /* the engine's copy says itself what a failure left */
        st = gm_copy_step_run(what, dst->ctx, h->k[1], &d->steps[d->nsteps - 1], dst, tmp); /* its last */
    /* once the destination holds the copy, a failure to free the temporaries says so */
    st = gm_keep_first(st, gm_copy_release_temp(what, s));
    return gm_keep_first(st, gm_copy_release_temp(what, tmp));
}

/* ---- the entry ------------------------------------------------------------------------------------- */

gpumem_status gm_copy_peer_ready(const char *what, const gpumem_array *dst, const gpumem_array *src, bool *ready)
{
    return peer_ready(what, dst->ctx, src->ctx, ready);
}

gpumem_status gm_copy_peer(const char *what, gpumem_array *dst, const gpumem_array *src, gpumem_stream *stream,
                           const gm_copy_decision *d, gm_peer_hold *h)
{
    bool peer = d->path == GPUMEM_COPY_PATH_PEER;
    int64_t layout[GM_MAX_NDIM];
    gm_copy_crossing_layout(dst->ndim, dst->shape, dst->itemsize, src->strides, dst->strides, layout);
    size_t bytes = (size_t)gm_array_size(dst) * dst->itemsize;
    gpumem_status st;
    if (peer && d->peer_way == GM_PEER_COPY) /* one run both sides: queued on the stream */
        return gm_drv_check(GM_DRV(memcpy_peer, stream != NULL ? stream->ctx->dctx : dst->ctx->dctx, low_addr(dst),
                                   dst->ctx->dctx, low_addr(src), src->ctx->dctx, bytes, gm_stream_ds(stream),
                                   stream != NULL),
                            GM_OP_memcpy_peer, what);

    /* Every other way runs on the legacy streams of both devices: wait for
     * the caller's stream first, finish before returning. */
    if (stream != NULL && (st = sync_stream(what, stream->ctx, gm_stream_ds(stream))) != GPUMEM_OK)
        return st;
    /* the kernels and scratch the decision acquired, given back below */
    dst_truth t = {false, false, false};
    switch (d->peer_way) {
    case GM_PEER_COPY: st = staged_move(what, dst->ctx, low_addr(dst), src->ctx, low_addr(src), bytes, &t); break;
    case GM_PEER_KERNEL: st = one_kernel(what, dst, src, d->peer_read, h, &t); break;
    case GM_PEER_PIPELINE:
        st = peer ? peer_pipeline(what, dst, src, d, layout, h, &t) : staged_chunks(what, dst, src, d, layout, h, &t);
        break;
    default: st = temps(what, dst, src, peer, d, layout, h, &t); break;
    }
    return tell(st, &t);
}
