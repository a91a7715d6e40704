/*
 * staging.c - the staging engine (staging.h, gpumem/staging.h): its
 * settings, the engine of each context and its lanes, the bounce blocks of
 * queued downloads, and the clearing; the transfers are staging_xfer.c's
 * (staging_impl.h says how the two share the engine).
 *
 * Per context, an engine (ctx->staging, made on first use, ended by a
 * context hook) holds the lanes of that context: a lane is one thread's
 * pinned slots (`depth` slots of `chunk_bytes`, one block from the context
 * allocator, so its out-of-memory ladder covers them) with one event per
 * slot.  Worker w of the pool always uses lane w of a context, which it
 * builds itself (on the device's NUMA node, where it runs), so its slots
 * stay in its cache, and takes without a lock (a compare-and-swap of its
 * busy flag, which gpumem_clear_context_caches takes too to empty it); a
 * calling thread borrows a free caller lane (under the engine's mu).  A
 * transfer (xfer) is a task of the pool (workers.h): every thread in it
 * takes the next chunk from the transfer's cursor and runs it through its
 * own lane, with no barrier between chunks (staging_xfer.c says how chunks
 * ramp and how segments of device scratch open and close).
 *
 * Settings are one immutable snapshot behind an atomic pointer: a copy
 * reads them without a lock.  gpumem_staging_set publishes a new one
 * (older ones are kept: a reader may hold one), and lanes built for an
 * older generation are rebuilt at their next use.
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "copy_tuning.h"
#include "env.h"
#include "error.h"
#include "params.h"
#include "gpumem/staging.h"
#include "alloc.h"
#include "staging.h"
#include "staging_impl.h"

#define MAX_THREADS 64
#define DEFAULT_THREADS 16          /* three quarters of the CPUs, at most this many (defaults()) */
#define DEFAULT_CHUNK (2u << 20)    /* a slot: stays in a core's cache (issue 19's probe) */
#define DEFAULT_DEPTH 2
#define DEFAULT_MIN (4u << 20)
#define BOUNCE_KEEP_BYTES ((size_t)1 << 30) /* the kept bounce blocks hold at most this much page-locked memory */

/* ---- settings ------------------------------------------------------------------------------------ */

/* The environment's settings are params.h's GM_P_STAGING_* (read once;
 * threads 0: unset); their ranges and defaults there are these. */
_Static_assert(MAX_THREADS == 64 && MAX_DEPTH == 64 && DEFAULT_CHUNK == 2u << 20 && DEFAULT_DEPTH == 2 &&
                   DEFAULT_MIN == 4u << 20,
               "params.c's GM_P_STAGING_* rows");

static pthread_mutex_t settings_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(snapshot *) current;
static uint64_t last_gen;
static snapshot no_memory = {.status = GPUMEM_ERROR_HOST_OUT_OF_MEMORY,
                             .error = "the staging engine's settings: out of host memory"};

/* The threads of a transfer: three quarters of the CPUs (at least 1, at
 * most DEFAULT_THREADS).  With as many threads as CPUs the workers and the
 * driver's own threads (which spin while they wait) oversubscribe them:
 * on a 16-CPU H100 VM a 4 MiB upload on 16 threads took 4.2 ms instead of
 * 0.34 ms on 12, and 12 threads moved 64 MiB to 1 GiB faster than 8 or 16
 * (bench/RESULTS.md, 2026-11-25). */
static void defaults(gpumem_staging_settings *s)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    long t = n * 3 / 4;
    *s = (gpumem_staging_settings){sizeof *s, t < 1 ? 1u : t > DEFAULT_THREADS ? DEFAULT_THREADS : (unsigned)t,
                                   DEFAULT_CHUNK, DEFAULT_DEPTH, DEFAULT_MIN};
}

/* Publishes s (settings_mu held). */
static snapshot *publish(const gpumem_staging_settings *s, gpumem_status status, const char *error)
{
    snapshot *n = calloc(1, sizeof *n);
    if (n == NULL)
        return NULL;
    n->s = *s;
    n->gen = ++last_gen;
    n->status = status;
    snprintf(n->error, sizeof n->error, "%s", error);
    n->older = atomic_load_explicit(&current, memory_order_relaxed);
    atomic_store_explicit(&current, n, memory_order_release);
    return n;
}

/* The settings now: the environment's at the first call. */
const snapshot *gm_staging_snapshot(void)
{
    snapshot *s = atomic_load_explicit(&current, memory_order_acquire);
    if (s != NULL)
        return s;
    pthread_mutex_lock(&settings_mu);
    if ((s = atomic_load_explicit(&current, memory_order_relaxed)) == NULL) {
        /* A bad variable is kept in the snapshot, and recorded by the calls
         * that report it (gm_staging_snapshot_status), not by this read,
         * which a successful call (gpumem_staging_set) makes too. */
        gm_error_suspend();
        gpumem_staging_settings d;
        defaults(&d);
        long threads, depth;
        uint64_t chunk, min;
        gpumem_status st;
        if ((st = gm_param_long(GM_P_STAGING_THREADS, &threads, NULL)) == GPUMEM_OK &&
            (st = gm_param_size(GM_P_STAGING_CHUNK, &chunk)) == GPUMEM_OK &&
            (st = gm_param_long(GM_P_STAGING_DEPTH, &depth, NULL)) == GPUMEM_OK &&
            (st = gm_param_size(GM_P_STAGING_MIN_BYTES, &min)) == GPUMEM_OK && threads == 0)
            threads = d.threads; /* unset: defaults()' */
        if (st == GPUMEM_OK)
            d = (gpumem_staging_settings){sizeof d, (unsigned)threads, (size_t)chunk, (unsigned)depth, (size_t)min};
        s = publish(&d, st, st == GPUMEM_OK ? "" : gpumem_last_error());
        gm_error_resume(GPUMEM_OK);
    }
    pthread_mutex_unlock(&settings_mu);
    return s != NULL ? s : &no_memory;
}

/* The settings for a copy: those of the snapshot even when the environment
 * was bad (the defaults), with the environment's status. */
gpumem_status gm_staging_snapshot_status(const snapshot *s)
{
    return s->status == GPUMEM_OK ? GPUMEM_OK : gm_error(s->status, "%s", s->error);
}

GPUMEM_API gpumem_status gpumem_staging_get(gpumem_staging_settings *settings)
{
    GM_CHECK_NULL(settings);
    if (settings->size != sizeof *settings)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "gpumem_staging_get: settings->size is %zu, not %zu",
                        settings->size, sizeof *settings);
    const snapshot *s = gm_staging_snapshot();
    gpumem_status st = gm_staging_snapshot_status(s);
    if (st != GPUMEM_OK)
        return gm_error_prefix(st, "gpumem_staging_get");
    *settings = s->s;
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_staging_set(const gpumem_staging_settings *settings)
{
    const char *what = "gpumem_staging_set";
    GM_CHECK_NULL(settings);
    if (settings->size != sizeof *settings)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: settings->size is %zu, not %zu", what, settings->size,
                        sizeof *settings);
    if (settings->threads < 1 || settings->threads > MAX_THREADS)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: threads %u is not in 1..%d", what, settings->threads,
                        MAX_THREADS);
    if (settings->chunk_bytes < (64u << 10) || settings->chunk_bytes > (1u << 30))
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: chunk_bytes %zu is not in 64 KiB..1 GiB", what,
                        settings->chunk_bytes);
    if (settings->depth < 2 || settings->depth > MAX_DEPTH)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: depth %u is not in 2..%d", what, settings->depth,
                        MAX_DEPTH);
    (void)gm_staging_snapshot(); /* the environment is read first, then overridden (a bad one too) */
    pthread_mutex_lock(&settings_mu);
    snapshot *n = publish(settings, GPUMEM_OK, "");
    pthread_mutex_unlock(&settings_mu);
    gm_copy_tuning_publish(); /* the copy engine's decisions read them from its snapshot */
    return n != NULL ? GPUMEM_OK : gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", what);
}

gpumem_status gm_staging_min_bytes(size_t *out)
{
    const snapshot *s = gm_staging_snapshot();
    *out = s->status == GPUMEM_OK ? s->s.min_bytes : DEFAULT_MIN;
    return gm_staging_snapshot_status(s);
}

gpumem_status gm_staging_settings_now(gpumem_staging_settings *out)
{
    const snapshot *s = gm_staging_snapshot();
    *out = s->s;
    if (s->status != GPUMEM_OK)
        defaults(out);
    return gm_staging_snapshot_status(s);
}

/* ---- lanes ------------------------------------------------------------------------------------------- */


static pthread_mutex_t engines_mu = PTHREAD_MUTEX_INITIALIZER;
static gm_staging *engines;

/* Empties a lane: waits for its slots' transfers, frees events and slots
 * (no one else uses it). */
static void lane_empty(gm_staging *e, lane *l)
{
    if (l->dirty)
        (void)GM_DRV(ctx_synchronize, e->dctx);
    for (unsigned i = 0; i < MAX_DEPTH; i++) {
        if (l->ev[i] != NULL) {
            if (l->used[i] && !l->dirty)
                (void)GM_DRV(event_synchronize, e->dctx, l->ev[i]);
            (void)GM_DRV(event_destroy, e->dctx, l->ev[i]);
        }
        l->ev[i] = NULL;
        l->slot[i] = NULL;
        l->used[i] = false;
    }
    if (l->blk.addr != 0 || l->blk.bytes != 0)
        gm_error_quietly(gm_alloc_free(e->ctx, &l->blk, "the staging slots")); /* nobody reports it */
    l->dirty = false;
    l->gen = 0;
    l->nslots = 0;
    l->next = 0;
}

static void lane_free(gm_staging *e, lane *l)
{
    if (l != NULL) {
        lane_empty(e, l);
        free(l);
    }
}

/* Builds l for snapshot s (it was built for another, or not at all). */
gpumem_status gm_staging_lane_build(gm_staging *e, lane *l, const gpumem_staging_settings *s, uint64_t gen,
                                    const char *what)
{
    lane_empty(e, l);
    size_t slot = (s->chunk_bytes + 4095) & ~(size_t)4095;
    gm_owner was = gm_alloc_owner_begin(GM_OWNER_STAGING); /* the library's own, in a trace */
    gpumem_status st = gm_alloc_locked(e->ctx, slot * s->depth, 0, what, &l->blk);
    gm_alloc_owner_end(was);
    for (unsigned i = 0; i < s->depth && st == GPUMEM_OK; i++) {
        l->slot[i] = (char *)(uintptr_t)l->blk.addr + (size_t)i * slot;
        st = gm_drv_check(GM_DRV(event_create, e->dctx, &l->ev[i], GM_CU_EVENT_DISABLE_TIMING), GM_OP_event_create,
                          what);
    }
    if (st != GPUMEM_OK) {
        gm_error_quietly(lane_empty(e, l));
        return st;
    }
    l->nslots = s->depth;
    l->slot_bytes = slot;
    l->gen = gen;
    return GPUMEM_OK;
}

/* ---- the engine --------------------------------------------------------------------------------------- */

/* The NUMA node nearest the device, on a machine with several (engines_mu
 * held); -1 when there is one, or it is unknown. */
static int device_node(gpumem_context *ctx)
{
    const char *root = gm_sysfs_root();
    if (gm_numa_nodes(root) < 2)
        return -1;
    int v = -1, domain = 0, bus = 0, slot = 0;
    if (GM_DRV(device_get_attribute, ctx->device, GM_CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, &v) == 0 && v >= 0)
        return v;
    if (GM_DRV(device_get_attribute, ctx->device, GM_CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, &domain) != 0 ||
        GM_DRV(device_get_attribute, ctx->device, GM_CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, &bus) != 0 ||
        GM_DRV(device_get_attribute, ctx->device, GM_CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, &slot) != 0)
        return -1;
    char id[32];
    snprintf(id, sizeof id, "%04x:%02x:%02x.0", (unsigned)domain & 0xffffu, (unsigned)bus & 0xffu,
             (unsigned)slot & 0xffu);
    return gm_numa_pci_node(root, id);
}

static void engine_unref(gm_staging *e)
{
    if (atomic_fetch_sub_explicit(&e->refs, 1, memory_order_acq_rel) == 1) {
        pthread_mutex_lock(&engines_mu);
        if (e->prev != NULL)
            e->prev->next = e->next;
        else if (engines == e)
            engines = e->next;
        if (e->next != NULL)
            e->next->prev = e->prev;
        pthread_mutex_unlock(&engines_mu);
        for (unsigned i = 0; i < GM_WORKERS_MAX; i++)
            lane_free(e, atomic_load_explicit(&e->wlane[i], memory_order_relaxed));
        for (unsigned i = 0; i < e->nclane; i++)
            lane_free(e, e->clane[i]);
        for (unsigned i = 0; i < e->nbounce; i++)
            gm_error_quietly(gm_alloc_free(e->ctx, &e->bounce[i], "the bounce blocks")); /* nobody reports it */
        pthread_mutex_destroy(&e->bmu);
        pthread_cond_destroy(&e->lane_back);
        pthread_mutex_destroy(&e->mu);
        free(e);
    }
}

/* ctx's engine, made on first use (a reference for the caller). */
static gpumem_status engine_of(gpumem_context *ctx, gm_staging **out)
{
    gm_staging *e = atomic_load_explicit(&ctx->staging, memory_order_acquire);
    if (e == NULL) {
        pthread_mutex_lock(&engines_mu);
        e = atomic_load_explicit(&ctx->staging, memory_order_relaxed);
        if (e == NULL && (e = calloc(1, sizeof *e)) != NULL) {
            pthread_mutex_init(&e->mu, NULL);
            pthread_cond_init(&e->lane_back, NULL);
            pthread_mutex_init(&e->bmu, NULL);
            atomic_init(&e->refs, 1); /* the context's */
            e->ctx = ctx;
            e->dctx = ctx->dctx;
            e->node = device_node(ctx);
            e->callers_fill = e->node < 0;
            e->workers = gm_workers_get(e->node);
            if (e->workers == NULL) {
                pthread_mutex_destroy(&e->bmu);
                pthread_cond_destroy(&e->lane_back);
                pthread_mutex_destroy(&e->mu);
                free(e);
                e = NULL;
            } else {
                e->next = engines;
                if (engines != NULL)
                    engines->prev = e;
                engines = e;
                atomic_store_explicit(&ctx->staging, e, memory_order_release);
            }
        }
        pthread_mutex_unlock(&engines_mu);
        if (e == NULL)
            return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "the staging engine: out of host memory");
    }
    atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
    *out = e;
    return GPUMEM_OK;
}

/* The context hook: the engine ends with its context (users hold the
 * context, so there are none left). */
static gpumem_status staging_teardown(gpumem_context *ctx, const char *what)
{
    (void)what;
    gm_staging *e = atomic_exchange_explicit(&ctx->staging, NULL, memory_order_acq_rel);
    if (e != NULL)
        engine_unref(e);
    return GPUMEM_OK;
}

const gm_context_hook gm_staging_hook = {NULL, staging_teardown};

gpumem_status gm_staging_acquire(gpumem_context *ctx, gm_staging **out)
{
    return engine_of(ctx, out);
}

void gm_staging_release(gm_staging *e)
{
    if (e != NULL)
        engine_unref(e);
}

int gm_staging_node(gpumem_context *ctx)
{
    gm_staging *e = NULL;
    if (engine_of(ctx, &e) != GPUMEM_OK)
        return -1;
    int node = e->node;
    engine_unref(e);
    return node;
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
    if (!hit) {
        gm_owner was = gm_alloc_owner_begin(GM_OWNER_BOUNCE); /* the library's own, in a trace */
        st = gm_alloc_locked(ctx, bytes, 0, what, out);
        gm_alloc_owner_end(was);
    }
    engine_unref(e);
    return st;
}

gpumem_status gm_staging_bounce_put(gpumem_context *ctx, gm_block *b, const char *what)
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
    return b->bytes != 0 || b->addr != 0 ? gm_alloc_free(ctx, b, what) : GPUMEM_OK;
}

/* ---- clearing ------------------------------------------------------------------------------------------ */

/* Frees e's lanes that no thread uses and its kept bounce blocks. */
static void engine_clear(gm_staging *e)
{
    lane *drop[CALLER_LANES];
    unsigned n = 0;
    /* a worker's lane stays (its worker reads it without a lock): emptied
     * when no transfer uses it, built again at its next use */
    for (unsigned i = 0; i < GM_WORKERS_MAX; i++) {
        lane *l = atomic_load_explicit(&e->wlane[i], memory_order_acquire);
        bool idle = false;
        if (l != NULL && atomic_compare_exchange_strong_explicit(&l->busy, &idle, true, memory_order_acq_rel,
                                                                 memory_order_relaxed)) {
            lane_empty(e, l);
            atomic_store_explicit(&l->busy, false, memory_order_release);
        }
    }
    pthread_mutex_lock(&e->mu);
    unsigned keep = 0;
    for (unsigned i = 0; i < e->nclane; i++) {
        bool idle = false;
        if (atomic_compare_exchange_strong_explicit(&e->clane[i]->busy, &idle, true, memory_order_acq_rel,
                                                    memory_order_relaxed))
            drop[n++] = e->clane[i];
        else
            e->clane[keep++] = e->clane[i];
    }
    e->nclane = keep;
    pthread_mutex_unlock(&e->mu);
    for (unsigned i = 0; i < n; i++)
        lane_free(e, drop[i]);
    gm_block b[BOUNCE_KEEP];
    pthread_mutex_lock(&e->bmu);
    unsigned nb = e->nbounce;
    memcpy(b, e->bounce, sizeof b);
    e->nbounce = 0;
    pthread_mutex_unlock(&e->bmu);
    for (unsigned i = 0; i < nb; i++)
        gm_error_quietly(gm_alloc_free(e->ctx, &b[i], "gpumem_clear_context_caches")); /* nobody reports it */
}

void gm_staging_clear_all(void)
{
    /* each engine is held while it is cleared, without engines_mu (the
     * frees may call the driver, and a final release takes engines_mu) */
    pthread_mutex_lock(&engines_mu);
    unsigned n = 0;
    for (gm_staging *e = engines; e != NULL; e = e->next)
        n++;
    gm_staging **all = n > 0 ? malloc(n * sizeof *all) : NULL;
    unsigned k = 0;
    for (gm_staging *e = engines; all != NULL && e != NULL; e = e->next) {
        /* one whose last reference went is being destroyed (it waits for
         * engines_mu to leave the list): not taken */
        int r = atomic_load_explicit(&e->refs, memory_order_relaxed);
        while (r > 0 && !atomic_compare_exchange_weak_explicit(&e->refs, &r, r + 1, memory_order_acq_rel,
                                                               memory_order_relaxed))
            ;
        if (r > 0)
            all[k++] = e;
    }
    pthread_mutex_unlock(&engines_mu);
    for (unsigned i = 0; i < k; i++) {
        engine_clear(all[i]);
        engine_unref(all[i]);
    }
    free(all);
}
