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
 *  - the bounce block is a ring of RING slabs (the whole copy when it has
 *    fewer), so that what the workers read is still in the cache, as the
 *    staging engine's slots are, instead of a copy-sized block in memory;
 *  - each slab is queued on the stream (gm_copy_run, into its slot of the
 *    ring), followed by a host function that says "these bytes arrived"
 *    and wakes the workers, then makes sure that the slot the next slab
 *    takes was landed, landing what is left of it itself if need be: host
 *    functions may not call the driver, and this one waits only for plain
 *    memory copies and creates no threads;
 *  - the workers land pieces of the arrived bytes (a memcpy with
 *    non-temporal stores, or an unpack into a strided destination), each
 *    piece by whichever thread takes it;
 *  - after the last slab a final host function lands what is left itself
 *    and waits for the pieces the workers hold (plain memory copies, which
 *    wait for nothing): the stream goes on only once every byte landed, so
 *    work queued later on the stream, and a synchronization of it, see the
 *    bytes.
 * The call returns at once.  A failing download may have landed the slabs
 * that arrived before the failure.  When a host function cannot be queued,
 * the call waits for the stream, lands what it moved, and copies the slabs
 * it did not queue synchronously.
 *
 * Host functions may not call the driver, so the bounce block goes back by
 * a stream write-back, at the stream's next synchronization
 * (gpumem_stream_synchronize, gpumem_context_synchronize, or its
 * destruction); the staging engine keeps a few such blocks for reuse.
 *
 * The stream counts its landings not yet run: a later copy on it that
 * reads or writes host memory on the CPU (a pageable upload, a host-side
 * pack) waits for them first (gm_copy_run), so stream order holds for it
 * too.  The stream handle outlives its landings: the write-back holds it.
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "copy_engine.h"
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
#define RING 4                /* slabs in the bounce block at once */
#define PIECE (512u << 10)    /* the bytes a worker lands at a time */

/* One landing: the bounce's packed bytes into dst, piece by piece as they
 * arrive. */
typedef struct landing landing;

typedef struct slab_mark {
    landing *l;
    uint64_t s; /* slabs [0, s] have arrived */
} slab_mark;

struct landing {
    gm_task task;          /* first: the pool's task */
    gm_workers *workers;
    unsigned threads;      /* that may land, the host functions' included */
    atomic_int refs;       /* the caller's and each queued host function's */
    gpumem_stream *stream;
    gm_pack_params pack;   /* dst as the strided side (host addresses) */
    char *ring;            /* the bounce block: slab s in slot s % ring_slots */
    uint64_t slot;         /* bytes of a slot: the largest slab */
    uint64_t ring_slots;
    int64_t ext, nslabs;   /* slab s: indices ext * s / nslabs .. of the slab axis */
    uint64_t row;          /* bytes per index of that axis (the whole copy when there is none) */
    uint64_t bytes;
    uint64_t per;          /* pieces per slab */
    uint64_t npieces;
    atomic_uint_fast64_t next;    /* the next piece to land */
    atomic_uint_fast64_t arrived; /* slabs arrived in the bounce */
    atomic_uint_fast64_t total;   /* bytes landed */
    pthread_mutex_t mu;    /* for the waits below */
    pthread_cond_t cv;     /* a slab was landed */
    atomic_uint_fast64_t *landed; /* per ring slot: bytes of its slab landed */
    slab_mark marks[];     /* one per slab but the last */
};

/* Slab s's bytes of the bounce layout, [*a, *b). */
static void slab_bytes(const landing *l, int64_t s, uint64_t *a, uint64_t *b)
{
    *a = (uint64_t)(l->ext * s / l->nslabs) * l->row;
    *b = s + 1 == l->nslabs ? l->bytes : (uint64_t)(l->ext * (s + 1) / l->nslabs) * l->row;
}

/* Piece i: its bytes [*a, *b) of the bounce layout (maybe empty) and its slab. */
static int64_t piece_of(const landing *l, uint64_t i, uint64_t *a, uint64_t *b)
{
    int64_t s = (int64_t)(i / l->per);
    uint64_t j = i % l->per, sa, sb, unit = (uint64_t)l->pack.unit;
    slab_bytes(l, s, &sa, &sb);
    uint64_t q = ((sb - sa + l->per - 1) / l->per + unit - 1) / unit * unit;
    *a = sa + j * q < sb ? sa + j * q : sb;
    *b = sa + (j + 1) * q < sb ? sa + (j + 1) * q : sb;
    return s;
}

/* Lands piece i, taken. */
static void land_one(landing *l, uint64_t i)
{
    uint64_t a, b, sa, sb, unit = (uint64_t)l->pack.unit;
    int64_t s = piece_of(l, i, &a, &b);
    slab_bytes(l, s, &sa, &sb);
    uint64_t k = (uint64_t)s % l->ring_slots;
    if (b > a)
        gm_cpu_pack_range(&l->pack, true, a / unit, b / unit, l->ring + k * l->slot + (a - sa));
    uint64_t got = atomic_fetch_add_explicit(&l->landed[k], b - a, memory_order_acq_rel) + (b - a);
    atomic_fetch_add_explicit(&l->total, b - a, memory_order_acq_rel);
    if (got == sb - sa) { /* the slab landed: its slot may take the next */
        pthread_mutex_lock(&l->mu);
        pthread_cond_broadcast(&l->cv);
        pthread_mutex_unlock(&l->mu);
    }
}

/* Takes and lands the next piece if it arrived: false when none did. */
static bool land_next(landing *l)
{
    for (;;) {
        uint64_t i = atomic_load_explicit(&l->next, memory_order_relaxed);
        if (i >= l->npieces || i / l->per >= atomic_load_explicit(&l->arrived, memory_order_acquire))
            return false;
        if (atomic_compare_exchange_weak_explicit(&l->next, &i, i + 1, memory_order_relaxed, memory_order_relaxed)) {
            land_one(l, i);
            return true;
        }
    }
}

/* The task: lands arrived pieces until none is left that has arrived. */
static void land_pieces(gm_task *t, int worker)
{
    landing *l = (landing *)t;
    while (!(worker >= 0 && gm_workers_stopping()) && land_next(l))
        ;
}

/* Waits (a host function) until *v reaches want, landing pieces meanwhile:
 * plain memory copies, which wait for nothing. */
static void land_until(landing *l, atomic_uint_fast64_t *v, uint64_t want)
{
    while (atomic_load_explicit(v, memory_order_acquire) < want) {
        if (land_next(l))
            continue;
        pthread_mutex_lock(&l->mu); /* the rest is in workers' hands */
        while (atomic_load_explicit(v, memory_order_acquire) < want)
            pthread_cond_wait(&l->cv, &l->mu);
        pthread_mutex_unlock(&l->mu);
    }
}

static void landing_unref(landing *l)
{
    if (atomic_fetch_sub_explicit(&l->refs, 1, memory_order_acq_rel) == 1) {
        gm_task_join(l->workers, &l->task);
        pthread_cond_destroy(&l->cv);
        pthread_mutex_destroy(&l->mu);
        free(l->landed);
        free(l);
    }
}

/* The host function after slab s: its bytes arrived, the workers land
 * them; and the slot the next slab takes is free once the slab before it
 * there landed (helped here if need be). */
static void slab_arrived(void *arg)
{
    slab_mark *m = arg;
    landing *l = m->l;
    atomic_store_explicit(&l->arrived, m->s + 1, memory_order_release);
    gm_task_post(l->workers, &l->task, (unsigned)(l->per < l->threads ? l->per : l->threads));
    uint64_t next = m->s + 1;
    if (next >= l->ring_slots && next < (uint64_t)l->nslabs) {
        uint64_t k = next % l->ring_slots, a, b;
        slab_bytes(l, (int64_t)(next - l->ring_slots), &a, &b);
        land_until(l, &l->landed[k], b - a);
        atomic_store_explicit(&l->landed[k], 0, memory_order_relaxed); /* for slab next */
    }
    landing_unref(l);
}

/* The final host function: the rest lands here, and the stream goes on
 * once every byte has. */
static void land_all(void *arg)
{
    landing *l = arg;
    atomic_store_explicit(&l->arrived, (uint64_t)l->nslabs, memory_order_release);
    land_until(l, &l->total, l->bytes);
    gm_task_join(l->workers, &l->task);
    atomic_fetch_sub_explicit(&l->stream->landings, 1, memory_order_release);
    landing_unref(l);
}

/* The write-back that gives the bounce block back. */
typedef struct giveback {
    gpumem_context *ctx;
    gpumem_stream *stream; /* held: the landing counts on it */
    gm_block block;
} giveback;

static gpumem_status give_back(void *arg, bool run)
{
    giveback *g = arg;
    gpumem_status st = run ? gm_staging_bounce_put(g->ctx, &g->block) : gm_alloc_free(g->ctx, &g->block);
    gm_stream_unhold(g->stream);
    free(g);
    return st;
}

/* Queues the copy of indices [a, b) of axis k (k < 0: all of it) of src into
 * the bounce, laid out as like with its element 0 at bounce0. */
static gpumem_status slab_copy(const char *what, gpumem_context *ctx, const gpumem_array *src,
                               const gpumem_array *dst, const int64_t *like, uint64_t bounce0, int k, int64_t a,
                               int64_t b, gpumem_stream *stream)
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
    if (st == GPUMEM_OK)
        st = gm_copy_run(what, bv, sv, stream, ctx); /* the path it reports is this copy's */
    gpumem_status rst = gpumem_array_release(sv);
    st = gm_keep_first(st, rst);
    rst = gpumem_array_release(bv);
    return gm_keep_first(st, rst);
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

/* Copies indices [a, ext) of axis k of src into dst now, synchronously
 * (the stream is drained): what a ring's queued download could not queue. */
static gpumem_status copy_rest(const char *what, gpumem_context *ctx, gpumem_array *dst, const gpumem_array *src,
                               int k, int64_t a)
{
    int64_t shape[GM_MAX_NDIM];
    memcpy(shape, dst->shape, sizeof shape);
    shape[k] -= a;
    gpumem_array *dv = NULL, *sv = NULL;
    gpumem_status st = gm_array_wrap(what, ctx, dst->kind, (uint64_t)(uintptr_t)(dst->host + a * dst->strides[k]),
                                     dst->ndim, shape, dst->strides, dst->dtype, NULL, NULL, &dv);
    if (st == GPUMEM_OK)
        st = gm_array_wrap(what, ctx, src->kind, src->dev + (uint64_t)(a * src->strides[k]), src->ndim, shape,
                           src->strides, src->dtype, NULL, NULL, &sv);
    if (st == GPUMEM_OK)
        st = gm_copy_run(what, dv, sv, NULL, ctx);
    st = gm_keep_first(st, gpumem_array_release(sv));
    return gm_keep_first(st, gpumem_array_release(dv));
}

gpumem_status gm_copy_queued_download(const char *what, gpumem_array *dst, const gpumem_array *src,
                                      gpumem_stream *stream, gpumem_context *ctx)
{
    int64_t like[GM_MAX_NDIM], lo = 0, hi = 0;
    gm_layout_strides_like(dst->ndim, dst->shape, dst->strides, dst->itemsize, like);
    gm_layout_extent(dst->ndim, dst->shape, like, dst->itemsize, &lo, &hi);
    uint64_t bytes = (uint64_t)(hi - lo);
    if (bytes == 0)
        return GPUMEM_OK;
    unsigned threads = 1;
    gm_workers *workers = gm_staging_workers(ctx, &threads);
    /* dst as the strided side of a pack whose packed side is the bounce
     * layout, like (ascending: element 0 is its lowest byte) */
    gm_pack_plan plan;
    gpumem_status st = gm_pack_plan_make(dst->ndim, dst->shape, dst->strides, like, dst->itemsize,
                                         (uint64_t)(uintptr_t)dst->host, 0, true, &plan);
    if (st != GPUMEM_OK)
        return gm_error_prefix(st, what);
    uint64_t unit = (uint64_t)plan.params.unit;
    /* the slabs: ranges of the outermost axis of like (its largest stride),
     * each starting on a pack unit */
    int k = -1;
    for (int i = 0; i < dst->ndim; i++)
        if (dst->shape[i] > 1 && (k < 0 || like[i] > like[k]))
            k = i;
    int64_t ext = k >= 0 ? dst->shape[k] : 1, step = 1;
    uint64_t row = k >= 0 ? (uint64_t)like[k] : bytes;
    while (((uint64_t)step * row) % unit != 0)
        step *= 2;
    uint64_t slab = bytes / SLABS;
    slab = slab < SLAB_MIN ? SLAB_MIN : slab > SLAB_MAX ? SLAB_MAX : slab;
    int64_t nslabs = k < 0 ? 1 : (int64_t)((bytes + slab - 1) / slab);
    if (nslabs > ext / step)
        nslabs = ext / step;
    if (nslabs < 1)
        nslabs = 1;
    landing *l = calloc(1, sizeof *l + (size_t)nslabs * sizeof(slab_mark));
    giveback *g = malloc(sizeof *g);
    if (l == NULL || g == NULL || workers == NULL) {
        free(l);
        free(g);
        return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", what);
    }
    l->ext = ext / step; /* in steps of `step` indices: slab s is steps ext * s / nslabs .. */
    l->row = row * (uint64_t)step;
    l->nslabs = nslabs;
    l->bytes = bytes;
    l->slot = 0;
    for (int64_t s = 0; s < nslabs; s++) {
        uint64_t a, b;
        slab_bytes(l, s, &a, &b); /* the last takes the indices a step leaves */
        if (b - a > l->slot)
            l->slot = b - a;
    }
    l->slot = (l->slot + 4095) & ~(uint64_t)4095; /* every slot starts as aligned as the first */
    l->ring_slots = nslabs <= RING ? (uint64_t)nslabs : RING;
    l->landed = calloc(l->ring_slots, sizeof *l->landed);
    if (l->landed == NULL) {
        free(l);
        free(g);
        return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", what);
    }
    g->ctx = ctx;
    g->block = (gm_block){0};
    g->stream = gm_stream_hold(stream);
    l->task = GM_TASK_INIT(land_pieces);
    l->workers = workers;
    l->threads = threads;
    atomic_init(&l->refs, 1);
    atomic_init(&l->next, 0);
    atomic_init(&l->arrived, 0);
    atomic_init(&l->total, 0);
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
    l->stream = stream;
    l->pack = plan.params;
    l->pack.strided += (uint64_t)(uintptr_t)dst->host;
    l->per = (l->slot + PIECE - 1) / PIECE;
    l->npieces = (uint64_t)nslabs * l->per;
    st = gm_staging_bounce_get(ctx, (size_t)(l->slot * l->ring_slots), what, &g->block);
    l->ring = (char *)(uintptr_t)g->block.addr;
    /* each slab on the stream into its slot, then a host function that lets
     * the workers land it and frees the slot of the next */
    bool ran = false, queued_land = false;
    int64_t issued = 0; /* slabs queued */
    bool marks = true;
    for (int64_t s = 0; st == GPUMEM_OK && s < nslabs && marks; s++) {
        int64_t a = nslabs > 1 ? (l->ext * s / nslabs) * step : 0;
        int64_t b = nslabs > 1 ? (s + 1 == nslabs ? ext : (l->ext * (s + 1) / nslabs) * step) : ext;
        uint64_t slot0 = g->block.addr + ((uint64_t)s % l->ring_slots) * l->slot;
        ran = true;
        st = slab_copy(what, ctx, src, dst, like, slot0 - (uint64_t)a * row, nslabs > 1 ? k : -1, a, b, stream);
        if (st != GPUMEM_OK)
            break;
        issued = s + 1;
        if (s + 1 == nslabs)
            break;
        slab_mark *m = &l->marks[s];
        *m = (slab_mark){l, (uint64_t)s};
        atomic_fetch_add_explicit(&l->refs, 1, memory_order_relaxed);
        if (GM_DRV(launch_host_func, ctx->dctx, gm_stream_ds(stream), slab_arrived, m) != GM_CUDA_SUCCESS) {
            atomic_fetch_sub_explicit(&l->refs, 1, memory_order_relaxed);
            marks = false; /* no more slabs queued: the rest is copied below */
        }
    }
    if (st == GPUMEM_OK && issued == nslabs) {
        atomic_fetch_add_explicit(&stream->landings, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&l->refs, 1, memory_order_relaxed);
        queued_land = GM_DRV(launch_host_func, ctx->dctx, gm_stream_ds(stream), land_all, l) == GM_CUDA_SUCCESS;
        if (!queued_land) {
            atomic_fetch_sub_explicit(&l->refs, 1, memory_order_relaxed);
            atomic_fetch_sub_explicit(&stream->landings, 1, memory_order_relaxed);
        }
    }
    if (st == GPUMEM_OK && !queued_land) {
        /* a host function could not be queued: wait for the stream, land
         * what it moved here, and copy what was not queued now */
        st = gm_drv_check(GM_DRV(stream_synchronize, ctx->dctx, gm_stream_ds(stream)), GM_OP_stream_synchronize,
                          what);
        if (st == GPUMEM_OK) {
            uint64_t a = 0, b = 0;
            slab_bytes(l, issued - 1, &a, &b);
            atomic_store_explicit(&l->arrived, (uint64_t)issued, memory_order_release);
            gm_task_post(workers, &l->task, threads - 1);
            land_until(l, &l->total, b);
            gm_task_join(workers, &l->task);
        }
        if (st == GPUMEM_OK && issued < nslabs)
            st = copy_rest(what, ctx, dst, src, k, (l->ext * issued / nslabs) * step);
    }
    if (queued_land && gm_stream_add_writeback(stream, ctx, give_back, g) == GPUMEM_OK) {
        g = NULL;
    } else if (ran) { /* no write-back: the block may go only once the stream is done with it */
        gm_error_hold();
        (void)drain(ctx, stream, what);
        gm_error_unhold();
        gm_task_join(workers, &l->task); /* no worker reads the block any more */
    }
    if (g != NULL) {
        if (g->block.bytes != 0 || g->block.addr != 0) {
            gpumem_status rst = gm_staging_bounce_put(ctx, &g->block);
            st = gm_keep_first(st, rst);
        }
        gm_stream_unhold(g->stream);
        free(g);
    }
    landing_unref(l);
    return st;
}
