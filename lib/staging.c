/*
 * staging.c - the staging engine (gpumem/staging.h): per context, a ring of
 * pinned buffers with one event each and a pool of host threads, made on
 * first use (ctx->staging), reused by every copy, and ended by a context
 * hook at the context's final release.  The buffers come from the context
 * allocator (alloc.c), so its out-of-memory ladder covers them.
 *
 * An upload: for chunk i, buffer i % depth waits for its event (its last
 * transfer is done), the threads fill it, an asynchronous copy moves it and
 * the event is recorded after it.  A download: transfers of the first depth
 * chunks are queued, then for chunk i the buffer's event is waited for, the
 * threads drain it, and the transfer of chunk i + depth is queued into it.
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "copy_tuning.h"
#include "error.h"
#include "gpumem/staging.h"
#include "alloc.h"
#include "staging.h"

#define MAX_THREADS 64
#define MAX_DEPTH 64
#define BOUNCE_KEEP 4 /* pinned blocks of queued downloads kept for reuse */
#define BOUNCE_KEEP_BYTES ((size_t)1 << 30) /* ...holding at most this much page-locked memory */

/* ---- settings ------------------------------------------------------------------------------------ */

static pthread_mutex_t settings_mu = PTHREAD_MUTEX_INITIALIZER;
static bool settings_set; /* gpumem_staging_set ran: the environment no longer counts */
static gpumem_staging_settings settings;
static uint64_t settings_gen = 1;

/* The settings (settings_mu held): gpumem_staging_set's, else the
 * environment's, whose cached parameters (copy_tuning.c) replay a bad
 * value's error. */
static gpumem_status settings_load(void)
{
    if (settings_set)
        return GPUMEM_OK;
    long threads, depth;
    uint64_t chunk, min;
    gpumem_status st;
    if ((st = gm_param_staging_threads(&threads)) != GPUMEM_OK || (st = gm_param_staging_chunk(&chunk)) != GPUMEM_OK ||
        (st = gm_param_staging_depth(&depth)) != GPUMEM_OK || (st = gm_param_staging_min_bytes(&min)) != GPUMEM_OK)
        return st;
    unsigned cpus = gm_copy_cpu_count();
    if (threads == 0)
        threads = cpus > 8 ? 8 : cpus;
    settings = (gpumem_staging_settings){sizeof settings, (unsigned)threads, (size_t)chunk, (unsigned)depth,
                                         (size_t)min};
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_staging_get(gpumem_staging_settings *out)
{
    GM_CHECK_NULL(out);
    if (out->size != sizeof *out)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "gpumem_staging_get: settings->size is %zu, not %zu",
                        out->size, sizeof *out);
    pthread_mutex_lock(&settings_mu);
    gpumem_status st = settings_load();
    if (st == GPUMEM_OK)
        *out = settings;
    pthread_mutex_unlock(&settings_mu);
    return st;
}

GPUMEM_API gpumem_status gpumem_staging_set(const gpumem_staging_settings *in)
{
    const char *what = "gpumem_staging_set";
    GM_CHECK_NULL(in);
    if (in->size != sizeof *in)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: settings->size is %zu, not %zu", what, in->size, sizeof *in);
    if (in->threads < 1 || in->threads > MAX_THREADS)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: threads %u is not in 1..%d", what, in->threads, MAX_THREADS);
    if (in->chunk_bytes < (64u << 10) || in->chunk_bytes > (1u << 30))
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: chunk_bytes %zu is not in 64 KiB..1 GiB", what,
                        in->chunk_bytes);
    if (in->depth < 2 || in->depth > MAX_DEPTH)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: depth %u is not in 2..%d", what, in->depth, MAX_DEPTH);
    pthread_mutex_lock(&settings_mu);
    settings = *in; /* a bad environment is overridden */
    settings_set = true;
    settings_gen++;
    pthread_mutex_unlock(&settings_mu);
    gm_copy_tuning_publish();
    return GPUMEM_OK;
}

gpumem_status gm_staging_min_bytes(size_t *out)
{
    pthread_mutex_lock(&settings_mu);
    gpumem_status st = settings_load();
    *out = settings.min_bytes;
    pthread_mutex_unlock(&settings_mu);
    return st;
}

/* ---- the thread pool ------------------------------------------------------------------------------ */

/* Threads that each copy their share of one memcpy, then wait for the next. */
typedef struct pool {
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    unsigned n;          /* threads, the caller included */
    pthread_t tid[MAX_THREADS];
    unsigned started;
    uint64_t gen;        /* task number */
    unsigned pending;    /* shares not done */
    bool stop;
    char *dst;
    const char *src;
    size_t bytes;
} pool;

static void share(pool *p, unsigned i, char **d, const char **s, size_t *n)
{
    size_t a = p->bytes * i / p->n, b = p->bytes * (i + 1) / p->n;
    *d = p->dst + a;
    *s = p->src + a;
    *n = b - a;
}

static void *pool_main(void *arg)
{
    pool *p = ((void **)arg)[0];
    unsigned index = (unsigned)(uintptr_t)((void **)arg)[1];
    free(arg);
    uint64_t seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && p->gen == seen)
            pthread_cond_wait(&p->go, &p->mu);
        if (p->stop)
            break;
        seen = p->gen;
        char *d;
        const char *s;
        size_t n;
        share(p, index, &d, &s, &n);
        pthread_mutex_unlock(&p->mu);
        memcpy(d, s, n);
        pthread_mutex_lock(&p->mu);
        if (--p->pending == 0)
            pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static void pool_stop(pool *p)
{
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    for (unsigned i = 0; i < p->started; i++)
        pthread_join(p->tid[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->go);
    pthread_cond_destroy(&p->done);
}

/* n threads: the caller and n - 1 workers (fewer when some do not start). */
static void pool_start(pool *p, unsigned n)
{
    memset(p, 0, sizeof *p);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->go, NULL);
    pthread_cond_init(&p->done, NULL);
    for (unsigned i = 1; i < n; i++) {
        void **arg = malloc(2 * sizeof *arg);
        if (arg == NULL)
            break;
        arg[0] = p;
        arg[1] = (void *)(uintptr_t)i;
        if (pthread_create(&p->tid[p->started], NULL, pool_main, arg) != 0) {
            free(arg);
            break;
        }
        p->started++;
    }
    p->n = p->started + 1;
}

/* memcpy on every thread of the pool. */
static void pool_copy(pool *p, char *dst, const char *src, size_t bytes)
{
    if (p->n < 2 || bytes < (256u << 10)) {
        memcpy(dst, src, bytes);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->dst = dst;
    p->src = src;
    p->bytes = bytes;
    p->pending = p->n - 1;
    p->gen++;
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    char *d;
    const char *s;
    size_t n;
    share(p, 0, &d, &s, &n);
    memcpy(d, s, n);
    pthread_mutex_lock(&p->mu);
    while (p->pending > 0)
        pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

/* ---- the engine --------------------------------------------------------------------------------------- */

struct gm_staging {
    pthread_mutex_t mu;   /* one copy at a time */
    atomic_int refs;      /* the context's + users' */
    gpumem_context *ctx;  /* not retained: the engine ends with it */
    gm_dctx *dctx;
    gm_block blk[MAX_DEPTH]; /* the buffers' blocks */
    uint64_t gen;         /* the settings it was built with; 0: not built */
    gpumem_staging_settings cfg;
    void *buf[MAX_DEPTH];
    gm_devent *ev[MAX_DEPTH];
    bool used[MAX_DEPTH]; /* an event was recorded */
    pool threads;
    bool have_threads;
    pthread_mutex_t bmu;  /* guards the bounce cache */
    gm_block bounce[BOUNCE_KEEP]; /* pinned blocks of queued downloads, kept for reuse */
    unsigned nbounce;
};

/* Frees the ring and the threads (mu held or the last reference). */
static void ring_free(gm_staging *e)
{
    for (unsigned i = 0; i < MAX_DEPTH; i++) {
        if (e->ev[i] != NULL) {
            if (e->used[i])
                (void)GM_DRV(event_synchronize, e->dctx, e->ev[i]);
            (void)GM_DRV(event_destroy, e->dctx, e->ev[i]);
        }
        if (e->buf[i] != NULL)
            (void)gm_alloc_free(e->ctx, &e->blk[i]);
        e->ev[i] = NULL;
        e->buf[i] = NULL;
        e->used[i] = false;
    }
    if (e->have_threads)
        pool_stop(&e->threads);
    e->have_threads = false;
    e->gen = 0;
}

/* Builds the ring for the current settings, if it was built for others. */
static gpumem_status ring_ready(gm_staging *e, const char *what)
{
    pthread_mutex_lock(&settings_mu);
    gpumem_status st = settings_load();
    gpumem_staging_settings cfg = settings;
    uint64_t gen = settings_gen;
    pthread_mutex_unlock(&settings_mu);
    if (st != GPUMEM_OK || e->gen == gen)
        return st;
    ring_free(e);
    e->cfg = cfg;
    for (unsigned i = 0; i < cfg.depth && st == GPUMEM_OK; i++) {
        st = gm_alloc_locked(e->ctx, cfg.chunk_bytes, 0, what, &e->blk[i]);
        e->buf[i] = (void *)(uintptr_t)e->blk[i].addr;
        if (st == GPUMEM_OK)
            st = gm_drv_check(GM_DRV(event_create, e->dctx, &e->ev[i], GM_CU_EVENT_DISABLE_TIMING),
                              GM_OP_event_create, what);
    }
    if (st != GPUMEM_OK) {
        ring_free(e);
        return st;
    }
    pool_start(&e->threads, cfg.threads);
    e->have_threads = true;
    e->gen = gen;
    return GPUMEM_OK;
}

/* Frees the kept bounce blocks (the last reference). */
static void bounce_free(gm_staging *e)
{
    for (unsigned i = 0; i < e->nbounce; i++)
        (void)gm_alloc_free(e->ctx, &e->bounce[i]);
    e->nbounce = 0;
}

static void engine_unref(gm_staging *e)
{
    if (atomic_fetch_sub_explicit(&e->refs, 1, memory_order_acq_rel) == 1) {
        ring_free(e);
        bounce_free(e);
        pthread_mutex_destroy(&e->bmu);
        pthread_mutex_destroy(&e->mu);
        free(e);
    }
}

static pthread_mutex_t make_mu = PTHREAD_MUTEX_INITIALIZER;

/* ctx's engine, made on first use (a reference for the caller). */
static gpumem_status engine_of(gpumem_context *ctx, gm_staging **out)
{
    gm_staging *e = atomic_load_explicit(&ctx->staging, memory_order_acquire);
    if (e == NULL) {
        pthread_mutex_lock(&make_mu);
        e = atomic_load_explicit(&ctx->staging, memory_order_relaxed);
        if (e == NULL && (e = calloc(1, sizeof *e)) != NULL) {
            pthread_mutex_init(&e->mu, NULL);
            pthread_mutex_init(&e->bmu, NULL);
            atomic_init(&e->refs, 1); /* the context's */
            e->ctx = ctx;
            e->dctx = ctx->dctx;
            atomic_store_explicit(&ctx->staging, e, memory_order_release);
        }
        pthread_mutex_unlock(&make_mu);
        if (e == NULL)
            return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "the staging engine: out of host memory");
    }
    atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
    *out = e;
    return GPUMEM_OK;
}

/* The context hook: the engine ends with its context (users hold the
 * context, so there are none left). */
static gpumem_status staging_teardown(gpumem_context *ctx)
{
    gm_staging *e = atomic_exchange_explicit(&ctx->staging, NULL, memory_order_acq_rel);
    if (e != NULL)
        engine_unref(e);
    return GPUMEM_OK;
}

static gm_context_hook hook = {GM_HOOK_STAGING, NULL, staging_teardown, NULL};
GM_CONTEXT_HOOK(staging, hook)

gpumem_status gm_staging_acquire(gpumem_context *ctx, gm_staging **out)
{
    gm_staging *e = NULL;
    gpumem_status st = engine_of(ctx, &e);
    if (st != GPUMEM_OK)
        return st;
    if (pthread_mutex_trylock(&e->mu) != 0) { /* busy: the caller uses the driver's call */
        engine_unref(e);
        e = NULL;
    }
    *out = e;
    return GPUMEM_OK;
}

void gm_staging_release(gm_staging *e)
{
    if (e != NULL) {
        pthread_mutex_unlock(&e->mu);
        engine_unref(e);
    }
}

/* Waits until buffer b is free. */
static gpumem_status buffer_free(gm_staging *e, unsigned b, const char *what)
{
    if (!e->used[b])
        return GPUMEM_OK;
    e->used[b] = false;
    return gm_drv_check(GM_DRV(event_synchronize, e->dctx, e->ev[b]), GM_OP_event_synchronize, what);
}

static gpumem_status chunk_copy(gm_staging *e, unsigned b, gm_cu_deviceptr dst, gm_cu_deviceptr src, size_t n,
                                gm_dstream *ds, const char *what)
{
    gpumem_status st = gm_drv_check(GM_DRV(memcpy, e->dctx, dst, src, n, ds, 1), GM_OP_memcpy, what);
    if (st == GPUMEM_OK)
        st = gm_drv_check(GM_DRV(event_record, e->dctx, e->ev[b], ds), GM_OP_event_record, what);
    e->used[b] = st == GPUMEM_OK;
    return st;
}

/* The chunk of one transfer: the configured one, or smaller for a transfer
 * that would not fill the ring, so that the threads' copying of one chunk
 * overlaps the link's moving of the one before (a single 8 MiB chunk of a
 * 4 MiB transfer does one after the other).  Never below 256 KiB, where
 * the per-chunk cost of waking the threads dominates. */
static size_t chunk_for(const gm_staging *e, size_t bytes)
{
    size_t c = e->cfg.chunk_bytes, want = bytes / e->cfg.depth;
    if (want >= c)
        return c;
    want = (want + 4095) & ~(size_t)4095;
    if (want < (256u << 10))
        want = 256u << 10;
    return want < c ? want : c;
}

gpumem_status gm_staging_upload(gm_staging *e, gm_cu_deviceptr dst, const void *src, size_t bytes, gm_dstream *ds,
                                int async, const char *what)
{
    gpumem_status st = ring_ready(e, what);
    size_t chunk = st == GPUMEM_OK ? chunk_for(e, bytes) : 1;
    for (size_t off = 0, i = 0; st == GPUMEM_OK && off < bytes; off += chunk, i++) {
        unsigned b = (unsigned)(i % e->cfg.depth);
        size_t n = bytes - off < chunk ? bytes - off : chunk;
        if ((st = buffer_free(e, b, what)) != GPUMEM_OK)
            break;
        pool_copy(&e->threads, e->buf[b], (const char *)src + off, n);
        st = chunk_copy(e, b, dst + off, (gm_cu_deviceptr)(uintptr_t)e->buf[b], n, ds, what);
    }
    if (st == GPUMEM_OK && !async)
        st = gm_drv_check(GM_DRV(stream_synchronize, e->dctx, ds), GM_OP_stream_synchronize, what);
    return st;
}

gpumem_status gm_staging_download(gm_staging *e, void *dst, gm_cu_deviceptr src, size_t bytes, gm_dstream *ds,
                                  const char *what)
{
    gpumem_status st = ring_ready(e, what);
    if (st != GPUMEM_OK)
        return st;
    size_t chunk = chunk_for(e, bytes), nchunks = (bytes + chunk - 1) / chunk;
    unsigned depth = e->cfg.depth;
    /* the first transfers, one per buffer */
    for (size_t i = 0; st == GPUMEM_OK && i < nchunks && i < depth; i++) {
        size_t off = i * chunk, n = bytes - off < chunk ? bytes - off : chunk;
        if ((st = buffer_free(e, (unsigned)i, what)) == GPUMEM_OK)
            st = chunk_copy(e, (unsigned)i, (gm_cu_deviceptr)(uintptr_t)e->buf[i], src + off, n, ds, what);
    }
    for (size_t i = 0; st == GPUMEM_OK && i < nchunks; i++) {
        unsigned b = (unsigned)(i % depth);
        size_t off = i * chunk, n = bytes - off < chunk ? bytes - off : chunk;
        if ((st = buffer_free(e, b, what)) != GPUMEM_OK)
            break;
        pool_copy(&e->threads, (char *)dst + off, e->buf[b], n);
        size_t next = i + depth;
        if (next < nchunks) {
            size_t noff = next * chunk, nn = bytes - noff < chunk ? bytes - noff : chunk;
            st = chunk_copy(e, b, (gm_cu_deviceptr)(uintptr_t)e->buf[b], src + noff, nn, ds, what);
        }
    }
    return st;
}

/* ---- bounce blocks of queued downloads -------------------------------------------------------------- */

gpumem_status gm_staging_bounce_get(gpumem_context *ctx, size_t bytes, const char *what, gm_block *out)
{
    gm_staging *e = NULL;
    gpumem_status st = engine_of(ctx, &e);
    if (st != GPUMEM_OK)
        return st;
    /* the smallest kept block that fits, unless it is more than twice too big */
    pthread_mutex_lock(&e->bmu);
    unsigned best = e->nbounce;
    for (unsigned i = 0; i < e->nbounce; i++)
        if (e->bounce[i].bytes >= bytes && e->bounce[i].bytes / 2 <= bytes &&
            (best == e->nbounce || e->bounce[i].bytes < e->bounce[best].bytes))
            best = i;
    bool hit = best < e->nbounce;
    if (hit) {
        *out = e->bounce[best];
        e->bounce[best] = e->bounce[--e->nbounce];
    }
    pthread_mutex_unlock(&e->bmu);
    if (!hit)
        st = gm_alloc_locked(ctx, bytes, 0, what, out);
    engine_unref(e);
    return st;
}

gpumem_status gm_staging_bounce_put(gpumem_context *ctx, gm_block *b)
{
    gm_staging *e = atomic_load_explicit(&ctx->staging, memory_order_acquire);
    if (e != NULL) {
        atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
        pthread_mutex_lock(&e->bmu);
        size_t kept = b->bytes;
        for (unsigned i = 0; i < e->nbounce; i++)
            kept += e->bounce[i].bytes;
        if (kept > BOUNCE_KEEP_BYTES) {
            /* too much page-locked memory would stay: b is freed */
        } else if (e->nbounce == BOUNCE_KEEP) { /* full: the smallest kept block makes room */
            unsigned small = 0;
            for (unsigned i = 1; i < e->nbounce; i++)
                if (e->bounce[i].bytes < e->bounce[small].bytes)
                    small = i;
            gm_block old = e->bounce[small];
            e->bounce[small] = *b;
            *b = old;
        } else {
            e->bounce[e->nbounce++] = *b;
            *b = (gm_block){0};
        }
        pthread_mutex_unlock(&e->bmu);
        engine_unref(e);
    }
    return b->bytes != 0 || b->addr != 0 ? gm_alloc_free(ctx, b) : GPUMEM_OK;
}
