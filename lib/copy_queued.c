/*
 * copy_queued.c - downloads into pageable host memory queued on a stream.
 *
 * The driver runs an asynchronous copy into pageable memory synchronously
 * and says nothing (numba#5130).  Here the copy engine moves the bytes, on
 * the stream, into a pinned bounce block laid out like the destination, and
 * the worker pool (workers.h) lands them in the destination chunk by chunk
 * while later chunks are still on the link:
 *
 *  - the copy is cut into slabs along the destination's outermost axis (a
 *    range of its indices, every inner axis whole: one run of bounce
 *    bytes), each about a 32nd of the copy, 1 to 8 MiB;
 *  - each slab is queued on the stream (gm_copy_inner, into its part of the
 *    bounce block), followed by an event.  A slab runs a decision, it does
 *    not make its own: the download's when that is one contiguous driver
 *    copy (the slab's bytes of it), else the one made for slabs of its
 *    extent along the cut axis, when the first of them is queued
 *    (slab_decision; the slabs take two extents at most, so a download is
 *    decided three times at most, itself included; a slab whose kernels or
 *    scratch cannot be had is decided again, as gm_copy_run_decided does).
 *    One worker (the watcher) waits for the events in turn and says "these
 *    bytes arrived", waking the others.  Events, not a host function per
 *    slab: a host function stalls the stream until the driver's thread has
 *    run it, and 32 of them cost a 256 MiB download about 1.9 ms beside its
 *    4.9 ms on the link (the queued download took 1.31x the synchronous
 *    one, two H200s);
 *  - the workers land pieces of the arrived bytes (a memcpy, or an unpack
 *    into a strided destination), each piece by whichever thread takes it;
 *  - after the last slab a final host function lands what is left itself
 *    and waits for the pieces the workers hold (plain memory copies, which
 *    wait for nothing): the stream goes on only once every byte landed, so
 *    work queued later on the stream, and a synchronization of it, see the
 *    bytes.
 * The call returns at once.  A failing download may have landed the slabs
 * that arrived before the failure.
 *
 * Host functions may not call the driver, so the bounce block goes back by
 * a stream write-back, at the stream's next synchronization whose wait
 * succeeds (gpumem_stream_synchronize, gpumem_context_synchronize, or its
 * destruction): a failed wait leaves the block with the stream, since the
 * landing may still read it.  The staging engine keeps a few such blocks
 * for reuse.
 *
 * The stream counts its landings not yet run: a later copy on it that
 * reads or writes host memory on the CPU (a pageable upload, a host-side
 * pack) waits for them first (gm_copy_run), so stream order holds for it
 * too.  The stream handle outlives its landings: the write-back holds it.
 */
#include "config.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "copy_debug.h"
#include "copy_decide.h"
#include "copy_engine.h"
#include "copy_workers.h"
#include "copy_tuning.h"
#include "copyplan.h"
#include "cpu_pack.h"
#include "error.h"
#include "layout.h"
#include "staging.h"
#include "stream.h"
#include "workers.h"

#define SLAB_MIN (1u << 20)   /* a slab (one host function) is at least this... */
#define SLAB_MAX (8u << 20)   /* ...and at most this, about a 32nd of the copy between */
#define SLABS 32
#define PIECE (512u << 10)    /* the bytes a worker lands at a time */

/* One landing: the bounce's packed bytes into dst, piece by piece as they
 * arrive. */
typedef struct landing landing;

typedef struct slab_mark {
    gm_devent *ev; /* recorded after the slab */
    uint64_t end;  /* the bounce bytes [0, end) have arrived once ev has */
} slab_mark;

struct landing {
    gm_task task;          /* first: the pool's task */
    gm_task watch;         /* the watcher: waits for the slabs' events */
    gm_workers *workers;
    gpumem_context *ctx;
    unsigned threads;      /* that may land, the final host function's included */
    atomic_int refs;       /* the caller's and each queued host function's */
    gpumem_stream *stream;
    gm_pack_params pack;   /* dst as the strided side (host addresses) */
    const char *from;      /* the bounce's first byte: packed element 0 */
    uint64_t bytes;
    uint64_t piece;        /* bytes per piece, a multiple of the unit */
    uint64_t npieces;
    atomic_uint_fast64_t next;  /* the next piece to land */
    atomic_uint_fast64_t ready; /* bytes arrived in the bounce, from its start */
    int nmarks;            /* slabs with an event: the first nmarks (all but the last at most) */
    slab_mark marks[];
};

/* The task: lands arrived pieces until none is left that has arrived. */
static void land_pieces(gm_task *t, int worker)
{
    landing *l = (landing *)t;
    uint64_t unit = (uint64_t)l->pack.unit;
    for (;;) {
        if (worker >= 0 && gm_workers_stopping())
            return;
        uint64_t i = atomic_load_explicit(&l->next, memory_order_relaxed);
        uint64_t ready = atomic_load_explicit(&l->ready, memory_order_acquire);
        if (i >= l->npieces)
            return;
        uint64_t a = i * l->piece, b = a + l->piece < l->bytes ? a + l->piece : l->bytes;
        if (b > ready)
            return; /* not arrived: the host function after it posts it */
        if (!atomic_compare_exchange_weak_explicit(&l->next, &i, i + 1, memory_order_relaxed, memory_order_relaxed))
            continue;
        gm_cpu_pack_range(&l->pack, true, a / unit, b / unit, (void *)(uintptr_t)(l->from + a));
    }
}

static void landing_unref(landing *l)
{
    if (atomic_fetch_sub_explicit(&l->refs, 1, memory_order_acq_rel) == 1) {
        gm_task_join(l->workers, &l->task);
        free(l);
    }
}

/* The watcher (one worker): as each slab's event completes, its bytes
 * have arrived and the other workers land them.  A failed wait stops it:
 * the final host function lands the rest. */
static void watch_slabs(gm_task *t, int worker)
{
    landing *l = (landing *)((char *)t - offsetof(landing, watch));
    for (int s = 0; s < l->nmarks; s++) {
        if (worker >= 0 && gm_workers_stopping())
            return;
        if (GM_DRV(event_synchronize, l->ctx->dctx, l->marks[s].ev) != GM_CUDA_SUCCESS)
            return;
        uint64_t end = l->marks[s].end;
        atomic_store_explicit(&l->ready, end, memory_order_release);
        uint64_t next = atomic_load_explicit(&l->next, memory_order_relaxed), have = end / l->piece;
        uint64_t waiting = have > next ? have - next : 0;
        unsigned others = l->threads > 1 ? l->threads - 1 : 1;
        gm_task_post(l->workers, &l->task, (unsigned)(waiting < others ? waiting : others));
    }
}

/* The final host function: the rest lands here, and the stream goes on
 * once every byte has.  Every slab's event completed before it runs (stream
 * order), so joining the watcher waits for no device work. */
static void land_all(void *arg)
{
    landing *l = arg;
    gm_task_join(l->workers, &l->watch); /* no more posts of the landing task */
    atomic_store_explicit(&l->ready, l->bytes, memory_order_release);
    land_pieces(&l->task, -1);
    gm_task_join(l->workers, &l->task);
    atomic_fetch_sub_explicit(&l->stream->landings, 1, memory_order_release);
    landing_unref(l);
}

/* The write-back that gives the bounce block back, and destroys the
 * slabs' events (host functions may not call the driver): the block goes
 * to the staging engine for reuse once a wait for the stream succeeded (the
 * landing is done), or is freed when the stream ends and its work could
 * not be waited for (the block is then never used again). */
typedef struct giveback {
    gpumem_context *ctx;
    gpumem_stream *stream; /* held: the landing counts on it */
    gm_block block;
    int nev;
    gm_devent *ev[];
} giveback;

static void events_destroy(giveback *g)
{
    for (int i = 0; i < g->nev; i++)
        (void)GM_DRV(event_destroy, g->ctx->dctx, g->ev[i]); /* nothing of the copy depends on it */
    g->nev = 0;
}

static gpumem_status give_back(void *arg, bool run, const char *what)
{
    giveback *g = arg;
    events_destroy(g);
    gpumem_status st = run ? gm_staging_bounce_put(g->ctx, &g->block, what) : gm_alloc_free(g->ctx, &g->block, what);
    gm_stream_unhold(g->stream);
    free(g);
    return st;
}

/* The decisions of the slabs' copies into the bounce, when the copy into
 * the bounce is not one contiguous driver copy: one per slab extent along
 * axis k (the slabs' extents differ by one at most: two at most), made
 * the first time a slab of that extent runs, as gm_copy_run_decided takes
 * it (no probe: every capability taken as had, each slab's copy acquiring
 * what its plan takes).  Slabs of one extent differ only in their
 * addresses, which no rule of a copy from device memory into pinned
 * memory reads (the tiled kernels aside, which the kernels find again
 * from each slab's addresses). */
typedef struct slab_decisions {
    const gm_copy_tuning *t;
    int n;
    int64_t extent[2];
    gm_copy_decision d[2];
} slab_decisions;

/* The decision for the slab copy of sv into bv, of extent e along axis k:
 * decided once per extent. */
static const gm_copy_decision *slab_decision(slab_decisions *sd, gpumem_context *ctx, const gpumem_array *bv,
                                             const gpumem_array *sv, int64_t e)
{
    for (int i = 0; i < sd->n; i++)
        if (sd->extent[i] == e)
            return &sd->d[i];
    int i = sd->n < 2 ? sd->n++ : 1; /* (a third extent, which the cut never makes, replaces the second) */
    gm_copy_caps caps = {.max_pitch = ctx->max_pitch, .on_stream = true};
    gm_copy_side s = gm_copy_decide_side(sv), b = gm_copy_decide_side(bv);
    sd->extent[i] = e;
    gm_copy_decide(sv->ndim, sv->shape, sv->itemsize, &s, &b, &caps, sd->t, &sd->d[i]);
    return &sd->d[i];
}

/* Queues the copy of indices [a, b) of axis k (k < 0: all of it) of src into
 * the bounce, laid out as like with its element 0 at bounce0.  With whole
 * (the copy's decision: one contiguous driver copy of src, laid out as
 * like), the slab is that copy of its own bytes, undecided; else the slab
 * runs the decision of its extent (slab_decision). */
static gpumem_status slab_copy(const char *what, gpumem_context *ctx, const gpumem_array *src,
                               const gpumem_array *dst, const int64_t *like, uint64_t bounce0, int k, int64_t a,
                               int64_t b, gpumem_stream *stream, const gm_copy_decision *whole,
                               slab_decisions *decided, gm_copy_decision *last)
{
    int64_t shape[GM_MAX_NDIM];
    memcpy(shape, dst->shape, sizeof shape);
    uint64_t boff = 0, soff = 0;
    if (k >= 0) {
        shape[k] = b - a;
        boff = (uint64_t)(a * like[k]);
        soff = (uint64_t)(a * src->strides[k]);
    }
    gpumem_array *bv = NULL, *sv = NULL;
    gpumem_status st = gm_array_wrap(what, ctx, GPUMEM_MEMORY_PINNED, bounce0 + boff, dst->ndim, shape, like,
                                     dst->dtype, NULL, NULL, &bv);
    if (st == GPUMEM_OK)
        st = gm_array_wrap(what, ctx, src->kind, src->dev + soff, src->ndim, shape, src->strides, src->dtype, NULL,
                           NULL, &sv);
    gm_copy_decision sd = {.nsteps = 0};
    const gm_copy_decision *pre = NULL;
    if (st == GPUMEM_OK && whole != NULL) { /* the slab's run: its bytes from element 0 on both sides (like ascends) */
        sd = *whole;
        sd.queued = false;
        sd.nsteps = 1;
        sd.steps[0] = (gm_copy_step){GM_STEP_COPY, GM_BUF_SRC, GM_BUF_DST, false};
        sd.src_offset = sd.dst_offset = 0;
        sd.width = (uint64_t)gm_array_size(sv) * sv->itemsize;
        pre = &sd;
    } else if (st == GPUMEM_OK) {
        pre = slab_decision(decided, ctx, bv, sv, k >= 0 ? b - a : -1);
    }
    if (st == GPUMEM_OK) /* its way is this copy's */
        st = gm_copy_inner(what, bv, sv, stream, ctx, pre, last);
    st = gm_keep_first(st, gm_array_release_as(sv, what)); /* wrappers: they free nothing */
    return gm_keep_first(st, gm_array_release_as(bv, what));
}

/* Waits for the stream before something it may still use goes: a failed
 * synchronization (injected) is tried once more. */
static gpumem_status drain(gpumem_context *ctx, gpumem_stream *stream, const char *what)
{
    gm_dstream *ds = gm_stream_ds(stream);
    if (GM_DRV(stream_synchronize, ctx->dctx, ds) == 0)
        return GPUMEM_OK;
    return gm_drv_check(GM_DRV(stream_synchronize, ctx->dctx, ds), GM_OP_stream_synchronize, what);
}

gpumem_status gm_copy_queued_download(const char *what, gpumem_array *dst, const gpumem_array *src,
                                      gpumem_stream *stream, gpumem_context *ctx, const gm_copy_decision *d,
                                      gm_copy_decision *last, bool *synced)
{
    /* the bounce block and the landing threads are the staging engine's: a
     * bad staging setting fails this download as it fails an unqueued one
     * (doc/environment.md), before anything is queued or poisoned */
    gm_copy_tuning t;
    gm_copy_tuning_get(&t);
    if (t.bad & GM_TUNE_BAD_STAGING)
        return gm_copy_tuning_error(GM_TUNE_BAD_STAGING, what);
    int64_t like[GM_MAX_NDIM], lo = 0, hi = 0;
    gm_layout_strides_like(dst->ndim, dst->shape, dst->strides, dst->itemsize, like);
    gm_layout_extent(dst->ndim, dst->shape, like, dst->itemsize, &lo, &hi);
    uint64_t bytes = (uint64_t)(hi - lo);
    if (bytes == 0)
        return GPUMEM_OK;
    unsigned threads = 1;
    gm_workers *workers = gm_copy_workers(ctx, &threads);
    /* the slabs: along the outermost axis of like (its largest stride) */
    int k = -1;
    for (int i = 0; i < dst->ndim; i++)
        if (dst->shape[i] > 1 && (k < 0 || like[i] > like[k]))
            k = i;
    int64_t ext = k >= 0 ? dst->shape[k] : 1;
    /* one contiguous driver copy into the bounce: every slab is one of its bytes, decided once */
    bool one = d->how == GM_HOW_TRANSFER && !d->staged && d->src_offset == 0 && d->dst_offset == 0 &&
               gm_copy_has_layout(dst->ndim, dst->shape, src->strides, dst->itemsize, like);
    uint64_t slab = bytes / SLABS;
    slab = slab < SLAB_MIN ? SLAB_MIN : slab > SLAB_MAX ? SLAB_MAX : slab;
    int64_t nslabs = k < 0 || threads < 2 ? 1 : (int64_t)((bytes + slab - 1) / slab);
    if (nslabs > ext)
        nslabs = ext;
    if (nslabs < 1)
        nslabs = 1;
    landing *l = calloc(1, sizeof *l + (size_t)nslabs * sizeof(slab_mark));
    giveback *g = calloc(1, sizeof *g + (size_t)nslabs * sizeof(gm_devent *));
    if (l == NULL || g == NULL || workers == NULL) {
        free(l);
        free(g);
        return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", what);
    }
    g->ctx = ctx;
    g->block = (gm_block){0};
    g->stream = gm_stream_hold(stream);
    l->task = GM_TASK_INIT(land_pieces);
    l->watch = GM_TASK_INIT(watch_slabs);
    l->workers = workers;
    l->ctx = ctx;
    l->threads = threads;
    atomic_init(&l->refs, 1);
    atomic_init(&l->next, 0);
    atomic_init(&l->ready, 0);
    l->stream = stream;
    l->bytes = bytes;
    gpumem_status st = gm_staging_bounce_get(ctx, (size_t)bytes, what, &g->block);
    uint64_t bounce0 = g->block.addr - (uint64_t)lo; /* the bounce's element 0 */
    gm_pack_plan plan;
    if (st == GPUMEM_OK && (st = gm_pack_plan_make(dst->ndim, dst->shape, dst->strides, like, dst->itemsize,
                                                   (uint64_t)(uintptr_t)dst->host, bounce0, true, &plan)) != GPUMEM_OK)
        st = gm_error_prefix(st, what);
    if (st == GPUMEM_OK) {
        l->pack = plan.params;
        l->pack.strided += (uint64_t)(uintptr_t)dst->host;
        l->from = (const char *)(uintptr_t)(bounce0 + plan.params.packed); /* = the block: like is ascending */
        uint64_t unit = (uint64_t)plan.params.unit;
        l->piece = PIECE / unit * unit;
        l->npieces = (bytes + l->piece - 1) / l->piece;
        if (gm_poison_on()) /* GPUMEM_DEBUG=poison: what has not landed reads as the pattern */
            gm_poison_host(dst);
    }
    /* each slab on the stream, then an event the watcher waits for */
    bool ran = false, marks = true, queued_land = false;
    slab_decisions decided = {.t = &t, .n = 0};
    for (int64_t s = 0; st == GPUMEM_OK && s < nslabs; s++) {
        int64_t a = ext * s / nslabs, b = ext * (s + 1) / nslabs;
        ran = true;
        if ((st = slab_copy(what, ctx, src, dst, like, bounce0, nslabs > 1 ? k : -1, a, b, stream,
                             one ? d : NULL, &decided, last)) != GPUMEM_OK ||
            s + 1 == nslabs || !marks)
            continue;
        gm_devent *ev = NULL;
        if (GM_DRV(event_create, ctx->dctx, &ev, GM_CU_EVENT_DISABLE_TIMING | GM_CU_EVENT_BLOCKING_SYNC) !=
            GM_CUDA_SUCCESS) {
            marks = false; /* the final host function lands the rest */
            continue;
        }
        g->ev[g->nev++] = ev;
        if (GM_DRV(event_record, ctx->dctx, ev, gm_stream_ds(stream)) != GM_CUDA_SUCCESS) {
            marks = false;
            continue;
        }
        l->marks[l->nmarks++] = (slab_mark){ev, (uint64_t)(b * like[k])};
    }
    /* every event is recorded (the watcher reads nmarks and marks only now);
     * the first slab is still on the link */
    if (st == GPUMEM_OK && l->nmarks > 0)
        gm_task_post(workers, &l->watch, 1);
    if (st == GPUMEM_OK) {
        atomic_fetch_add_explicit(&stream->landings, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&l->refs, 1, memory_order_relaxed);
        queued_land = GM_DRV(launch_host_func, ctx->dctx, gm_stream_ds(stream), land_all, l) == GM_CUDA_SUCCESS;
        if (!queued_land) { /* the stream cannot run it: wait, and land the bytes here */
            *synced = true;
            atomic_fetch_sub_explicit(&l->refs, 1, memory_order_relaxed);
            atomic_fetch_sub_explicit(&stream->landings, 1, memory_order_relaxed);
            st = gm_drv_check(GM_DRV(stream_synchronize, ctx->dctx, gm_stream_ds(stream)), GM_OP_stream_synchronize,
                              what);
            gm_task_join(workers, &l->watch);
            if (st == GPUMEM_OK) {
                atomic_store_explicit(&l->ready, bytes, memory_order_release);
                gm_task_post(workers, &l->task, threads - 1);
                land_pieces(&l->task, -1);
                gm_task_join(workers, &l->task);
            }
        }
    }
    if (queued_land && gm_stream_add_writeback(stream, ctx, give_back, g, what) == GPUMEM_OK) {
        g = NULL;
    } else if (ran) { /* no write-back: the block may go only once the stream is done with it */
        gm_error_quietly(drain(ctx, stream, what));
        gm_task_join(workers, &l->watch);
        gm_task_join(workers, &l->task); /* no worker reads the block any more */
    } else {
        gm_task_join(workers, &l->watch);
    }
    if (g != NULL) {
        events_destroy(g);
        if (g->block.bytes != 0 || g->block.addr != 0)
            st = gm_keep_first(st, gm_staging_bounce_put(ctx, &g->block, what));
        gm_stream_unhold(g->stream);
        free(g);
    }
    landing_unref(l);
    return st;
}
