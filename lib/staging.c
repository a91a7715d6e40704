/*
 * staging.c - the staging engine (staging.h, gpumem/staging.h).
 *
 * Per context, an engine (ctx->staging, made on first use, ended by a
 * context hook) holds the lanes of that context: a lane is one thread's
 * pinned slots (`depth` slots of `chunk_bytes`, one block from the context
 * allocator, so its out-of-memory ladder covers them) with one event per
 * slot.  Worker w of the pool always uses lane w of a context, which it
 * builds itself (on the device's NUMA node, where it runs), so its slots
 * stay in its cache; a calling thread borrows a free caller lane.  A
 * transfer (xfer) is a task of the pool (workers.h): every thread in it
 * takes the next chunk from the transfer's counter and runs it through
 * its own lane, with no barrier between chunks.
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
#include "cpu_pack.h"
#include "env.h"
#include "error.h"
#include "gpumem/staging.h"
#include "alloc.h"
#include "staging.h"

#define MAX_THREADS 64
#define MAX_DEPTH 64
#define DEFAULT_THREADS 16          /* the CPUs, at most this many */
#define DEFAULT_CHUNK (2u << 20)    /* a slot: stays in a core's cache (issue 19's probe) */
#define DEFAULT_DEPTH 2
#define DEFAULT_MIN (4u << 20)
#define MIN_AUTO_CHUNK (256u << 10) /* a transfer below threads x chunk splits into chunks of at least this */
#define CALLER_LANES 64             /* lanes of calling threads, per context */
#define BOUNCE_KEEP 4 /* pinned blocks of queued downloads kept for reuse */
#define BOUNCE_KEEP_BYTES ((size_t)1 << 30) /* ...holding at most this much page-locked memory */

/* ---- settings ------------------------------------------------------------------------------------ */

/* The environment's settings, cached parameters (env.h); threads 0: unset. */
static GM_PARAM_LONG(param_threads, "GPUMEM_STAGING_THREADS", 1, MAX_THREADS, 0)
static GM_PARAM_SIZE(param_chunk, "GPUMEM_STAGING_CHUNK", 64u << 10, 1u << 30, DEFAULT_CHUNK)
static GM_PARAM_LONG(param_depth, "GPUMEM_STAGING_DEPTH", 2, MAX_DEPTH, DEFAULT_DEPTH)
static GM_PARAM_SIZE(param_min_bytes, "GPUMEM_STAGING_MIN_BYTES", 0, UINT64_MAX, DEFAULT_MIN)

typedef struct snapshot {
    gpumem_staging_settings s;
    uint64_t gen;
    gpumem_status status; /* of the environment, kept for every read */
    char error[256];
    struct snapshot *older; /* kept: a reader may still hold one */
} snapshot;

static pthread_mutex_t settings_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(snapshot *) current;
static uint64_t last_gen;
static snapshot no_memory = {.status = GPUMEM_ERROR_HOST_OUT_OF_MEMORY,
                             .error = "the staging engine's settings: out of host memory"};

static void defaults(gpumem_staging_settings *s)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    *s = (gpumem_staging_settings){sizeof *s, n < 1 ? 1u : n > DEFAULT_THREADS ? DEFAULT_THREADS : (unsigned)n,
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
static const snapshot *settings(void)
{
    snapshot *s = atomic_load_explicit(&current, memory_order_acquire);
    if (s != NULL)
        return s;
    pthread_mutex_lock(&settings_mu);
    if ((s = atomic_load_explicit(&current, memory_order_relaxed)) == NULL) {
        gpumem_staging_settings d;
        defaults(&d);
        long threads, depth;
        uint64_t chunk, min;
        gpumem_status st;
        if ((st = param_threads(&threads)) == GPUMEM_OK && (st = param_chunk(&chunk)) == GPUMEM_OK &&
            (st = param_depth(&depth)) == GPUMEM_OK && (st = param_min_bytes(&min)) == GPUMEM_OK && threads == 0)
            threads = d.threads; /* unset: the CPUs, at most DEFAULT_THREADS */
        if (st == GPUMEM_OK)
            d = (gpumem_staging_settings){sizeof d, (unsigned)threads, (size_t)chunk, (unsigned)depth, (size_t)min};
        s = publish(&d, st, st == GPUMEM_OK ? "" : gpumem_last_error());
    }
    pthread_mutex_unlock(&settings_mu);
    return s != NULL ? s : &no_memory;
}

/* The settings for a copy: those of the snapshot even when the environment
 * was bad (the defaults), with the environment's status. */
static gpumem_status settings_status(const snapshot *s)
{
    return s->status == GPUMEM_OK ? GPUMEM_OK : gm_error(s->status, "%s", s->error);
}

GPUMEM_API gpumem_status gpumem_staging_get(gpumem_staging_settings *out)
{
    GM_CHECK_NULL(out);
    if (out->size != sizeof *out)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "gpumem_staging_get: settings->size is %zu, not %zu",
                        out->size, sizeof *out);
    const snapshot *s = settings();
    gpumem_status st = settings_status(s);
    if (st == GPUMEM_OK)
        *out = s->s;
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
    (void)settings(); /* the environment is read first, then overridden (a bad one too) */
    pthread_mutex_lock(&settings_mu);
    snapshot *n = publish(in, GPUMEM_OK, "");
    pthread_mutex_unlock(&settings_mu);
    gm_copy_tuning_publish(); /* the copy engine's decisions read them from its snapshot */
    return n != NULL ? GPUMEM_OK : gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", what);
}

gpumem_status gm_staging_min_bytes(size_t *out)
{
    const snapshot *s = settings();
    *out = s->status == GPUMEM_OK ? s->s.min_bytes : DEFAULT_MIN;
    return settings_status(s);
}

gpumem_status gm_staging_settings_now(gpumem_staging_settings *out)
{
    const snapshot *s = settings();
    *out = s->s;
    if (s->status != GPUMEM_OK)
        defaults(out);
    return settings_status(s);
}

/* ---- lanes ------------------------------------------------------------------------------------------- */

/* One thread's pinned slots in one context. */
typedef struct lane {
    bool busy;           /* a thread uses it (engine mu) */
    bool dirty;          /* an operation on it failed: a transfer into a slot may still run */
    uint64_t gen;        /* the settings it was built for; 0: not built */
    unsigned nslots;
    size_t slot_bytes;
    gm_block blk;        /* the slots, one block */
    char *slot[MAX_DEPTH];
    gm_devent *ev[MAX_DEPTH];
    bool used[MAX_DEPTH]; /* an event was recorded after the slot's last transfer */
    unsigned next;       /* the slot the next chunk takes */
} lane;

struct gm_staging {
    atomic_int refs;      /* the context's + users' */
    gpumem_context *ctx;  /* not retained: the engine ends with it */
    gm_dctx *dctx;
    int node;             /* the device's NUMA node, -1: none or unknown */
    bool callers_fill;    /* calling threads take chunks too (off a NUMA node only the node's workers do) */
    gm_workers *workers;
    pthread_mutex_t mu;   /* the lane tables */
    pthread_cond_t lane_back; /* a caller lane was given back */
    lane *wlane[GM_WORKERS_MAX]; /* worker w's */
    lane *clane[CALLER_LANES];
    unsigned nclane;
    pthread_mutex_t bmu;  /* guards the bounce cache */
    gm_block bounce[BOUNCE_KEEP]; /* pinned blocks of queued downloads, kept for reuse */
    unsigned nbounce;
    struct gm_staging *next, *prev; /* in engines (engines_mu) */
};

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
        (void)gm_alloc_free(e->ctx, &l->blk);
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
static gpumem_status lane_build(gm_staging *e, lane *l, const gpumem_staging_settings *s, uint64_t gen,
                                const char *what)
{
    lane_empty(e, l);
    size_t slot = (s->chunk_bytes + 4095) & ~(size_t)4095;
    gpumem_status st = gm_alloc_locked(e->ctx, slot * s->depth, 0, what, &l->blk);
    for (unsigned i = 0; i < s->depth && st == GPUMEM_OK; i++) {
        l->slot[i] = (char *)(uintptr_t)l->blk.addr + (size_t)i * slot;
        st = gm_drv_check(GM_DRV(event_create, e->dctx, &l->ev[i], GM_CU_EVENT_DISABLE_TIMING), GM_OP_event_create,
                          what);
    }
    if (st != GPUMEM_OK) {
        gm_error_hold();
        lane_empty(e, l);
        gm_error_unhold();
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
            lane_free(e, e->wlane[i]);
        for (unsigned i = 0; i < e->nclane; i++)
            lane_free(e, e->clane[i]);
        for (unsigned i = 0; i < e->nbounce; i++)
            (void)gm_alloc_free(e->ctx, &e->bounce[i]);
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
static gpumem_status staging_teardown(gpumem_context *ctx)
{
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

/* The threads a task may use (the caller included), with the pool grown to
 * them. */
static unsigned engine_threads(gm_staging *e, unsigned threads)
{
    unsigned want = e->callers_fill ? threads - 1 : threads;
    unsigned have = gm_workers_grow(e->workers, want);
    if (have > want)
        have = want;
    return e->callers_fill ? have + 1 : have > 0 ? have : 1;
}

gm_workers *gm_staging_workers(gpumem_context *ctx, unsigned *threads)
{
    gpumem_staging_settings s;
    (void)gm_staging_settings_now(&s);
    gm_staging *e = NULL;
    if (ctx == NULL || engine_of(ctx, &e) != GPUMEM_OK) {
        gm_workers *w = gm_workers_get(-1);
        unsigned have = w != NULL ? gm_workers_grow(w, s.threads - 1) : 0;
        *threads = (have < s.threads - 1 ? have : s.threads - 1) + 1;
        return w;
    }
    gm_workers *w = e->workers;
    /* callers always take part in these tasks (no pinned memory is touched) */
    unsigned have = gm_workers_grow(w, s.threads - 1);
    *threads = (have < s.threads - 1 ? have : s.threads - 1) + 1;
    engine_unref(e);
    return w;
}

/* ---- transfers ------------------------------------------------------------------------------------------ */

typedef struct xfer {
    gm_task task;         /* first: the pool's task is the transfer */
    gm_staging *e;
    gm_stage_op op;
    gm_pack_params pack;  /* op.pack's copy */
    gm_dstream *ds;
    const char *what;
    uint64_t gen;         /* the settings' generation */
    gpumem_staging_settings cfg;
    size_t chunk;
    uint64_t nchunks;
    atomic_uint_fast64_t next; /* the next chunk to take (may run past nchunks) */
    atomic_bool failed;
    bool caller_waits;    /* a caller waits for a lane (else it leaves the chunks to the workers) */
    pthread_mutex_t mu;   /* the errors below */
    gpumem_status st;     /* the first failure of a chunk */
    char msg[512];
    gpumem_status lane_st; /* the first failure to get a lane */
    char lane_msg[512];
} xfer;

static void fail(xfer *x, gpumem_status st)
{
    pthread_mutex_lock(&x->mu);
    if (x->st == GPUMEM_OK) {
        x->st = st;
        snprintf(x->msg, sizeof x->msg, "%s", gpumem_last_error());
    }
    pthread_mutex_unlock(&x->mu);
    atomic_store_explicit(&x->failed, true, memory_order_release);
}

/* A lane for a thread of x: worker w's own, or a free caller lane (-1),
 * ready for x's settings.  NULL when there is none (*st OK: no caller lane
 * free and the caller need not wait) or it could not be built (*st). */
static lane *lane_take(xfer *x, int worker, bool wait, gpumem_status *st)
{
    gm_staging *e = x->e;
    lane *l = NULL;
    *st = GPUMEM_OK;
    pthread_mutex_lock(&e->mu);
    if (worker >= 0) {
        if ((l = e->wlane[worker]) == NULL && (l = calloc(1, sizeof *l)) != NULL)
            e->wlane[worker] = l;
    } else {
        for (;;) {
            for (unsigned i = 0; i < e->nclane && l == NULL; i++)
                if (!e->clane[i]->busy)
                    l = e->clane[i];
            if (l == NULL && e->nclane < CALLER_LANES && (l = calloc(1, sizeof *l)) != NULL)
                e->clane[e->nclane++] = l;
            if (l != NULL || !wait)
                break;
            pthread_cond_wait(&e->lane_back, &e->mu);
        }
    }
    if (l != NULL)
        l->busy = true;
    pthread_mutex_unlock(&e->mu);
    if (l == NULL) {
        if (worker >= 0 || wait)
            *st = gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", x->what);
        return NULL;
    }
    if (l->dirty || l->gen != x->gen) {
        if (l->dirty && l->gen == x->gen) { /* a failed transfer may still use a slot: wait for it */
            (void)GM_DRV(ctx_synchronize, e->dctx);
            memset(l->used, 0, sizeof l->used);
            l->dirty = false;
        } else {
            *st = lane_build(e, l, &x->cfg, x->gen, x->what);
        }
    }
    if (*st != GPUMEM_OK) {
        pthread_mutex_lock(&e->mu);
        l->busy = false;
        pthread_cond_broadcast(&e->lane_back);
        pthread_mutex_unlock(&e->mu);
        return NULL;
    }
    return l;
}

static void lane_give(gm_staging *e, lane *l)
{
    pthread_mutex_lock(&e->mu);
    l->busy = false;
    pthread_cond_broadcast(&e->lane_back);
    pthread_mutex_unlock(&e->mu);
}

/* Waits until slot b's last transfer is done. */
static gpumem_status slot_wait(xfer *x, lane *l, unsigned b)
{
    if (!l->used[b])
        return GPUMEM_OK;
    l->used[b] = false;
    return gm_drv_check(GM_DRV(event_synchronize, x->e->dctx, l->ev[b]), GM_OP_event_synchronize, x->what);
}

/* Queues the transfer of chunk [off, off + n) between slot b and the
 * device, and the slot's event after it. */
static gpumem_status slot_queue(xfer *x, lane *l, unsigned b, uint64_t off, size_t n)
{
    gm_cu_deviceptr s = (gm_cu_deviceptr)(uintptr_t)l->slot[b], d = x->op.dev + off;
    if (x->op.dir < 0) {
        gm_cu_deviceptr t = s;
        s = d;
        d = t;
    }
    gpumem_status st = gm_drv_check(GM_DRV(memcpy, x->e->dctx, d, s, n, x->ds, 1), GM_OP_memcpy, x->what);
    if (st == GPUMEM_OK)
        st = gm_drv_check(GM_DRV(event_record, x->e->dctx, l->ev[b], x->ds), GM_OP_event_record, x->what);
    l->used[b] = st == GPUMEM_OK;
    return st;
}

/* Chunk [off, off + n) between the host side and buf (a slot): the fill of
 * an upload, the drain of a download. */
static void host_side(xfer *x, char *buf, uint64_t off, size_t n)
{
    bool up = x->op.dir > 0;
    if (x->op.pack != NULL) {
        uint64_t u = (uint64_t)x->pack.unit, p = x->op.pack_offset + off;
        gm_cpu_pack_range(&x->pack, !up, p / u, (p + n) / u, buf);
    } else if (up) {
        memcpy(buf, x->op.host + off, n);
    } else {
        memcpy(x->op.host + off, buf, n);
    }
}

static bool stop_taking(xfer *x, int worker)
{
    return atomic_load_explicit(&x->failed, memory_order_acquire) || (worker >= 0 && gm_workers_stopping());
}

/* Takes chunk i of x: false when none is left. */
static bool take(xfer *x, uint64_t *i, uint64_t *off, size_t *n)
{
    *i = atomic_fetch_add_explicit(&x->next, 1, memory_order_relaxed);
    if (*i >= x->nchunks)
        return false;
    *off = *i * x->chunk;
    *n = x->op.bytes - *off < x->chunk ? (size_t)(x->op.bytes - *off) : x->chunk;
    return true;
}

/* An upload's chunks through lane l: fill a slot, queue it, take the next. */
static void upload(xfer *x, lane *l, int worker)
{
    uint64_t i, off;
    size_t n;
    while (!stop_taking(x, worker) && take(x, &i, &off, &n)) {
        unsigned b = l->next;
        l->next = (b + 1) % l->nslots;
        gpumem_status st = slot_wait(x, l, b);
        if (st == GPUMEM_OK) {
            host_side(x, l->slot[b], off, n);
            st = slot_queue(x, l, b, off, n);
        }
        if (st != GPUMEM_OK) {
            l->dirty = true;
            fail(x, st);
            return;
        }
    }
}

/* A download's chunks through lane l: up to one per slot queued ahead; the
 * oldest drained once its event completed. */
static void download(xfer *x, lane *l, int worker)
{
    uint64_t ring_off[MAX_DEPTH];
    size_t ring_n[MAX_DEPTH];
    unsigned ring_b[MAX_DEPTH], head = 0, count = 0;
    for (;;) {
        uint64_t i, off;
        size_t n;
        while (count < l->nslots && !stop_taking(x, worker) && take(x, &i, &off, &n)) {
            unsigned b = l->next;
            l->next = (b + 1) % l->nslots;
            gpumem_status st = slot_wait(x, l, b);
            if (st == GPUMEM_OK)
                st = slot_queue(x, l, b, off, n);
            if (st != GPUMEM_OK) {
                l->dirty = true;
                fail(x, st);
                return;
            }
            unsigned k = (head + count++) % l->nslots;
            ring_off[k] = off;
            ring_n[k] = n;
            ring_b[k] = b;
        }
        if (count == 0)
            return;
        unsigned k = head;
        head = (head + 1) % l->nslots;
        count--;
        gpumem_status st = slot_wait(x, l, ring_b[k]);
        if (st != GPUMEM_OK) {
            l->dirty = true;
            fail(x, st);
            return;
        }
        if (!atomic_load_explicit(&x->failed, memory_order_acquire))
            host_side(x, l->slot[ring_b[k]], ring_off[k], ring_n[k]);
    }
}

/* The task: a thread's share of x, through its lane. */
static void xfer_run(gm_task *t, int worker)
{
    xfer *x = (xfer *)t;
    if (atomic_load_explicit(&x->next, memory_order_relaxed) >= x->nchunks || stop_taking(x, worker))
        return;
    gpumem_status st;
    lane *l = lane_take(x, worker, worker < 0 && x->caller_waits, &st);
    if (l == NULL) {
        if (st != GPUMEM_OK) {
            pthread_mutex_lock(&x->mu);
            if (x->lane_st == GPUMEM_OK) {
                x->lane_st = st;
                snprintf(x->lane_msg, sizeof x->lane_msg, "%s", gpumem_last_error());
            }
            pthread_mutex_unlock(&x->mu);
        }
        return;
    }
    if (x->op.dir > 0)
        upload(x, l, worker);
    else
        download(x, l, worker);
    lane_give(x->e, l);
}

/* The chunk of a transfer: the slot, or less when the transfer would not
 * give each thread one, so that they all work and the transfers of earlier
 * chunks overlap the copying of later ones.  A multiple of 16 bytes (of any
 * pack unit). */
static size_t chunk_for(const gm_stage_op *op, const gpumem_staging_settings *s, unsigned threads)
{
    size_t c = s->chunk_bytes;
    if (op->chunk != 0 && op->chunk < c)
        c = op->chunk;
    else if (op->bytes < (uint64_t)c * threads) {
        uint64_t want = (op->bytes / threads + 4095) & ~(uint64_t)4095;
        if (want < MIN_AUTO_CHUNK)
            want = MIN_AUTO_CHUNK;
        if (want < c)
            c = (size_t)want;
    }
    c &= ~(size_t)15;
    return c < 16 ? 16 : c;
}

gpumem_status gm_staging_run(gm_staging *e, const gm_stage_op *op, gm_dstream *ds, int async, const char *what)
{
    if (op->bytes == 0)
        return GPUMEM_OK;
    if (op->pack != NULL && ((op->pack_offset | op->bytes) % (uint64_t)op->pack->unit != 0 ||
                             op->pack_offset + op->bytes > op->pack->rows * op->pack->cols * (uint64_t)op->pack->unit))
        return gm_error(GPUMEM_ERROR_INTERNAL, "%s: a staged pack of %llu bytes from %llu is not whole units of %d",
                        what, (unsigned long long)op->bytes, (unsigned long long)op->pack_offset, op->pack->unit);
    const snapshot *snap = settings();
    gpumem_status st = settings_status(snap);
    if (st != GPUMEM_OK)
        return gm_error_prefix(st, what);
    xfer x = {.task = GM_TASK_INIT(xfer_run), .e = e, .op = *op, .ds = ds, .what = what, .gen = snap->gen,
              .cfg = snap->s};
    if (op->pack != NULL)
        x.pack = *op->pack;
    unsigned threads = op->threads != 0 && op->threads < x.cfg.threads ? op->threads : x.cfg.threads;
    threads = engine_threads(e, threads);
    x.chunk = chunk_for(op, &x.cfg, threads);
    x.nchunks = (op->bytes + x.chunk - 1) / x.chunk;
    atomic_init(&x.next, 0);
    atomic_init(&x.failed, false);
    pthread_mutex_init(&x.mu, NULL);
    /* workers: one per chunk beyond the caller's, at most threads in all */
    uint64_t helpers = x.nchunks - (e->callers_fill ? 1 : 0);
    unsigned cap = e->callers_fill ? threads - 1 : threads;
    if (helpers > cap)
        helpers = cap;
    x.caller_waits = helpers == 0;
    gm_task_post(e->workers, &x.task, (unsigned)helpers);
    if (e->callers_fill)
        xfer_run(&x.task, -1);
    if (atomic_load_explicit(&x.next, memory_order_relaxed) >= x.nchunks || x.failed)
        gm_task_join(e->workers, &x.task);
    else
        gm_task_wait(e->workers, &x.task);
    /* chunks nobody could take (no worker had a lane, or they stopped):
     * the caller's, waiting for a lane if it must */
    if (!x.failed && atomic_load_explicit(&x.next, memory_order_relaxed) < x.nchunks) {
        x.caller_waits = true;
        xfer_run(&x.task, -1);
    }
    if (x.st != GPUMEM_OK)
        st = gm_error(x.st, "%s", x.msg);
    else if (atomic_load_explicit(&x.next, memory_order_relaxed) < x.nchunks)
        st = x.lane_st != GPUMEM_OK ? gm_error(x.lane_st, "%s", x.lane_msg)
                                    : gm_error(GPUMEM_ERROR_INTERNAL, "%s: the staging engine left chunks", what);
    pthread_mutex_destroy(&x.mu);
    if (st == GPUMEM_OK && op->dir > 0 && !async)
        st = gm_drv_check(GM_DRV(stream_synchronize, e->dctx, ds), GM_OP_stream_synchronize, what);
    return st;
}

gpumem_status gm_staging_upload(gm_staging *e, gm_cu_deviceptr dst, const void *src, size_t bytes, gm_dstream *ds,
                                int async, const char *what)
{
    gm_stage_op op = {.dir = 1, .dev = dst, .host = (char *)(uintptr_t)src, .bytes = bytes};
    return gm_staging_run(e, &op, ds, async, what);
}

gpumem_status gm_staging_download(gm_staging *e, void *dst, gm_cu_deviceptr src, size_t bytes, gm_dstream *ds,
                                  const char *what)
{
    gm_stage_op op = {.dir = -1, .dev = src, .host = dst, .bytes = bytes};
    return gm_staging_run(e, &op, ds, 0, what);
}

/* ---- copies between two devices (staging.h) ------------------------------------------------------- */

typedef struct peer_task {
    gm_task task;       /* first: the pool's task */
    xfer src, dst;      /* for lane_take: each side's engine, the settings, what */
    gm_stage_ring_fn fn;
    void *arg;
    bool ran;
    gpumem_status st;
    char msg[512];
} peer_task;

/* The slots' and events' last uses done: they may be used again. */
static gpumem_status lane_idle(xfer *x, lane *l)
{
    gpumem_status st = GPUMEM_OK;
    for (unsigned i = 0; i < l->nslots && st == GPUMEM_OK; i++)
        st = slot_wait(x, l, i);
    return st;
}

static void peer_task_run(gm_task *t, int worker)
{
    peer_task *p = (peer_task *)t;
    if (p->ran)
        return;
    p->ran = true;
    gpumem_status st;
    lane *ls = lane_take(&p->src, worker, true, &st), *ld = NULL;
    if (ls != NULL && (ld = lane_take(&p->dst, -1, true, &st)) != NULL && (st = lane_idle(&p->src, ls)) == GPUMEM_OK)
        st = lane_idle(&p->dst, ld);
    if (ls != NULL && ld != NULL && st == GPUMEM_OK) {
        _Static_assert(MAX_DEPTH <= GM_STAGE_RING_MAX, "a ring holds a lane's slots");
        gm_stage_ring r = {.n = ls->nslots < ld->nslots ? ls->nslots : ld->nslots, .bytes = ls->slot_bytes};
        for (unsigned i = 0; i < r.n; i++) {
            r.slot[i] = ls->slot[i];
            r.down[i] = ls->ev[i];
            r.up[i] = ld->ev[i];
        }
        st = p->fn(p->arg, &r);
    }
    if (st != GPUMEM_OK)
        snprintf(p->msg, sizeof p->msg, "%s", gpumem_last_error());
    if (st != GPUMEM_OK && ld != NULL) {
        /* fn waited for what it queued, but a wait may have failed: both
         * contexts finish before the slots and events are used again */
        (void)GM_DRV(ctx_synchronize, p->src.e->dctx);
        (void)GM_DRV(ctx_synchronize, p->dst.e->dctx);
        memset(ls->used, 0, sizeof ls->used);
        memset(ld->used, 0, sizeof ld->used);
    }
    p->st = st;
    if (ld != NULL)
        lane_give(p->dst.e, ld);
    if (ls != NULL)
        lane_give(p->src.e, ls);
}

gpumem_status gm_staging_peer_run(gm_staging *src, gm_staging *dst, gm_stage_ring_fn fn, void *arg,
                                  const char *what)
{
    const snapshot *snap = settings();
    gpumem_status st = settings_status(snap);
    if (st != GPUMEM_OK)
        return gm_error_prefix(st, what);
    peer_task p = {.task = GM_TASK_INIT(peer_task_run), .fn = fn, .arg = arg};
    p.src = (xfer){.e = src, .what = what, .gen = snap->gen, .cfg = snap->s};
    p.dst = (xfer){.e = dst, .what = what, .gen = snap->gen, .cfg = snap->s};
    if (!src->callers_fill && gm_workers_grow(src->workers, 1) > 0) { /* on a worker of the node */
        gm_task_post(src->workers, &p.task, 1);
        gm_task_wait(src->workers, &p.task);
    }
    if (!p.ran) /* no node, no worker, or the pool stopped */
        peer_task_run(&p.task, -1);
    return p.st == GPUMEM_OK ? GPUMEM_OK : gm_error(p.st, "%s", p.msg);
}

/* ---- CPU packs ---------------------------------------------------------------------------------------- */

typedef struct cpu_pack_task {
    gm_task task;
    const gm_pack_params *p;
    bool unpack;
    uint64_t per, count; /* elements per part, elements */
    atomic_uint_fast64_t next;
} cpu_pack_task;

static void cpu_pack_run(gm_task *t, int worker)
{
    cpu_pack_task *c = (cpu_pack_task *)t;
    for (;;) {
        if (worker >= 0 && gm_workers_stopping())
            return;
        uint64_t i = atomic_fetch_add_explicit(&c->next, 1, memory_order_relaxed);
        uint64_t e0 = i * c->per;
        if (e0 >= c->count)
            return;
        uint64_t e1 = c->count - e0 < c->per ? c->count : e0 + c->per;
        gm_cpu_pack_range(c->p, c->unpack, e0, e1,
                          (char *)(uintptr_t)c->p->packed + e0 * (uint64_t)c->p->unit);
    }
}

void gm_staging_cpu_pack(gpumem_context *ctx, const gm_pack_params *p, bool unpack, uint64_t bytes)
{
    uint64_t count = p->rows * p->cols;
    if (count == 0)
        return;
    unsigned threads = 1;
    gm_workers *w = bytes >= (4u << 20) ? gm_staging_workers(ctx, &threads) : NULL;
    /* parts of 1 MiB, or fewer bigger ones */
    uint64_t per = (1u << 20) / (uint64_t)p->unit;
    cpu_pack_task c = {.task = GM_TASK_INIT(cpu_pack_run), .p = p, .unpack = unpack, .per = per ? per : 1,
                       .count = count};
    atomic_init(&c.next, 0);
    uint64_t parts = (count + c.per - 1) / c.per;
    if (w != NULL && threads > 1 && parts > 1)
        gm_task_post(w, &c.task, (unsigned)(parts - 1 < threads - 1 ? parts - 1 : threads - 1));
    cpu_pack_run(&c.task, -1);
    if (w != NULL)
        gm_task_join(w, &c.task);
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

/* ---- clearing ------------------------------------------------------------------------------------------ */

/* Frees e's lanes that no thread uses and its kept bounce blocks. */
static void engine_clear(gm_staging *e)
{
    lane *drop[GM_WORKERS_MAX + CALLER_LANES];
    unsigned n = 0;
    pthread_mutex_lock(&e->mu);
    for (unsigned i = 0; i < GM_WORKERS_MAX; i++)
        if (e->wlane[i] != NULL && !e->wlane[i]->busy) {
            drop[n++] = e->wlane[i];
            e->wlane[i] = NULL;
        }
    unsigned keep = 0;
    for (unsigned i = 0; i < e->nclane; i++) {
        if (!e->clane[i]->busy)
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
        (void)gm_alloc_free(e->ctx, &b[i]);
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
