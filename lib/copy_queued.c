/*
 * copy_queued.c - downloads into pageable host memory queued on a stream.
 *
 * The driver runs an asynchronous copy into pageable memory synchronously
 * and says nothing (numba#5130).  Here the copy engine moves the bytes, on
 * the stream, into a pinned bounce block laid out like the destination;
 * then a host function queued after them copies them into the destination
 * when the stream reaches it.  The call returns at once, and the
 * destination is written in stream order: work queued later on the stream,
 * and a synchronization of it, see the bytes.
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
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "copy_engine.h"
#include "copyplan.h"
#include "error.h"
#include "layout.h"
#include "staging.h"
#include "stream.h"

/* A landing of at least two of these is shared by several threads, at
 * most LAND_MAX_THREADS. */
#define LAND_SHARE_BYTES (4u << 20)
#define LAND_MAX_THREADS 8

/* What the host function does: the plan from the bounce into dst. */
typedef struct landing {
    gm_copy_plan plan;
    gpumem_stream *stream; /* held until the write-back: its landings count */
    const char *from; /* the bounce's element 0 */
    char *to;         /* dst's element 0 */
} landing;

/* One thread's share of a landing's memcpy. */
typedef struct share {
    char *to;
    const char *from;
    size_t n;
} share;

static void *share_run(void *arg)
{
    share *p = arg;
    memcpy(p->to, p->from, p->n);
    return NULL;
}

/* A big memcpy on several threads: one thread moves pinned into pageable
 * memory at about 10 GB/s, a quarter of the link (H100, 256 MiB). */
static void parallel_memcpy(char *to, const char *from, size_t n)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    size_t k = n / LAND_SHARE_BYTES;
    if (k > LAND_MAX_THREADS)
        k = LAND_MAX_THREADS;
    if (cpus > 0 && k > (size_t)cpus)
        k = (size_t)cpus;
    if (k < 2) {
        memcpy(to, from, n);
        return;
    }
    share parts[LAND_MAX_THREADS];
    pthread_t tid[LAND_MAX_THREADS];
    bool started[LAND_MAX_THREADS] = {false};
    for (size_t i = 0; i < k; i++) {
        size_t a = n * i / k, b = n * (i + 1) / k;
        parts[i] = (share){to + a, from + a, b - a};
        if (i > 0)
            started[i] = pthread_create(&tid[i], NULL, share_run, &parts[i]) == 0;
    }
    for (size_t i = 0; i < k; i++)
        if (!started[i]) /* the caller's share, and any thread that did not start */
            share_run(&parts[i]);
    for (size_t i = 1; i < k; i++)
        if (started[i])
            pthread_join(tid[i], NULL);
}

/* The host function: the driver's thread runs it, in stream order. */
static void land(void *arg)
{
    landing *l = arg;
    const gm_copy_plan *p = &l->plan;
    if (p->dims == 1 && gm_copy_plan_count(p) == 1)
        parallel_memcpy(l->to + p->dst_offset, l->from + p->src_offset, p->width);
    else
        gm_copy_plan_run_host(p, l->from, l->to);
    atomic_fetch_sub_explicit(&l->stream->landings, 1, memory_order_release);
    free(l);
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

gpumem_status gm_copy_queued_download(const char *what, gpumem_array *dst, const gpumem_array *src,
                                      gpumem_stream *stream, gpumem_context *ctx)
{
    int64_t like[GM_MAX_NDIM], lo = 0, hi = 0;
    gm_layout_strides_like(dst->ndim, dst->shape, dst->strides, dst->itemsize, like);
    gm_layout_extent(dst->ndim, dst->shape, like, dst->itemsize, &lo, &hi);
    landing *l = malloc(sizeof *l);
    giveback *g = malloc(sizeof *g);
    if (l == NULL || g == NULL) {
        free(l);
        free(g);
        return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", what);
    }
    gpumem_status st = gm_copy_plan_make(dst->ndim, dst->shape, like, dst->strides, dst->itemsize, SIZE_MAX,
                                         &l->plan);
    if (st != GPUMEM_OK)
        st = gm_error_prefix(st, what);
    g->ctx = ctx;
    g->block = (gm_block){0};
    if (st == GPUMEM_OK)
        st = gm_staging_bounce_get(ctx, (size_t)(hi - lo), what, &g->block);
    gpumem_array *bounce = NULL;
    if (st == GPUMEM_OK)
        st = gm_array_wrap(what, ctx, GPUMEM_MEMORY_PINNED, g->block.addr - (uint64_t)lo, dst->ndim, dst->shape,
                           like, dst->dtype, NULL, NULL, &bounce);
    /* the device side into the bounce, queued (pinned memory) */
    if (st == GPUMEM_OK)
        st = gm_copy_run(what, bounce, src, stream, ctx); /* the path it reports is this copy's */
    bool ran = bounce != NULL, queued_land = false;
    if (st == GPUMEM_OK) {
        l->from = bounce->host;
        l->to = dst->host;
        l->stream = stream;
        atomic_fetch_add_explicit(&stream->landings, 1, memory_order_relaxed);
        int rc = GM_DRV(launch_host_func, ctx->dctx, gm_stream_ds(stream), land, l);
        queued_land = rc == GM_CUDA_SUCCESS;
        if (!queued_land)
            atomic_fetch_sub_explicit(&stream->landings, 1, memory_order_relaxed);
        if (!queued_land) { /* the stream cannot run it: wait, and land the bytes here */
            st = gm_drv_check(GM_DRV(stream_synchronize, ctx->dctx, gm_stream_ds(stream)), GM_OP_stream_synchronize,
                              what);
            if (st == GPUMEM_OK)
                gm_copy_plan_run_host(&l->plan, bounce->host, dst->host);
        }
    }
    gpumem_status rst = gpumem_array_release(bounce);
    if (st == GPUMEM_OK)
        st = rst;
    if (!queued_land)
        free(l);
    g->stream = gm_stream_hold(stream);
    if (queued_land && gm_stream_add_writeback(stream, ctx, give_back, g) == GPUMEM_OK)
        g = NULL;
    else if (ran) /* no write-back: the block may go only once the stream is done with it */
        (void)GM_DRV(stream_synchronize, ctx->dctx, gm_stream_ds(stream));
    if (g != NULL) {
        if (g->block.bytes != 0 || g->block.addr != 0) {
            rst = gm_staging_bounce_put(ctx, &g->block);
            if (st == GPUMEM_OK)
                st = rst;
        }
        gm_stream_unhold(g->stream);
        free(g);
    }
    return st;
}
