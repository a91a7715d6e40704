/*
 * pool_cache.c - the pool core's thread caches (pool.h: per thread and
 * pool, up to 8 held blocks per class up to 1 MiB, entered with an
 * asymmetric handshake), and the allocation and free paths, which try the
 * calling thread's cache first and fall back to the shared store
 * (pool_store.c).
 */
#include "config.h"

#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "lifecycle.h"
#include "pool_impl.h"
#include "trace.h"
#include "workers.h"

#define TC_MAX_BYTES ((int64_t)16 << 20) /* held bytes per thread cache */
#define TLS_SLOTS 4                      /* pools a thread caches for at once */

/* Bumped by every thread that lets go of a cache (tc_let_go): a pool whose
 * harvested count differs has an orphan to take back, maybe.  One counter
 * for the process, because a thread that lets go must not touch the pool
 * (it may have ended); threads let go rarely (exit, slot eviction). */
static _Atomic uint64_t orphan_epoch;

/* Stripe indices, handed out round robin, once per thread. */
static _Atomic unsigned next_stripe;

uint64_t gm_tc_orphan_epoch(void)
{
    return atomic_load_explicit(&orphan_epoch, memory_order_acquire);
}

/* ---- entering a thread cache ---- */

/* The owner's entry must be cheap (it is on every hit) and others' entries
 * are rare, so the cost goes to the others: an asymmetric Dekker handshake.
 * The owner stores busy, then loads steal; another thread stores steal,
 * then loads busy.  Each side's store must be visible before its load.
 * With membarrier(2) the owner needs only a compiler barrier: the other
 * side's membarrier makes every running thread of the process execute a
 * full barrier (the technique of liburcu and folly).  Without it, both
 * sides use sequentially consistent operations. */

#define MB_CMD_QUERY 0
#define MB_CMD_GLOBAL 1
#define MB_CMD_PRIVATE_EXPEDITED (1 << 3)
#define MB_CMD_REGISTER_PRIVATE_EXPEDITED (1 << 4)

/* The registration for MEMBARRIER_CMD_PRIVATE_EXPEDITED waits for an RCU
 * grace period when the process has several threads: 8 to 13 ms measured
 * (issue 19: the first pair after gpumem_context_set_pool took it, 623 ns
 * on average over 20 000 pairs against 208).  It runs once per process, on
 * a worker of the pool (workers.h), while thread caches work in the
 * symmetric mode; `registered` is set first, then `asym`.  A thief that
 * reads registered (sequentially consistent, after its steal store) makes
 * the barrier; an owner that reads asym (acquire) uses the asymmetric
 * entry only then, so a thief that missed registered finds its busy store
 * (the registration's stores are ordered before the owner's load of
 * steal). */
static atomic_bool asym;       /* owners may enter with a plain store */
static atomic_bool registered; /* thieves must make the barrier */

static void asym_register(gm_task *t, int worker)
{
    (void)t;
    (void)worker;
#if defined(__linux__) && defined(SYS_membarrier)
    long cmds = syscall(SYS_membarrier, MB_CMD_QUERY, 0, 0);
    if (cmds > 0 && (cmds & MB_CMD_PRIVATE_EXPEDITED) && (cmds & MB_CMD_GLOBAL) &&
        syscall(SYS_membarrier, MB_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0) {
        atomic_store(&registered, true);
        atomic_store(&asym, true);
    }
#endif
}

static gm_task asym_task = {.fn = asym_register};

/* At the first thread cache: the registration, on a worker (the caller's
 * when there is none). */
static void asym_init(void)
{
    gm_workers *w = gm_workers_get(-1);
    if (w != NULL && gm_workers_grow(w, 1) > 0)
        gm_task_post(w, &asym_task, 1); /* never joined: it is static */
    else
        asym_register(&asym_task, -1);
}

static void asym_barrier(void)
{
#if defined(__linux__) && defined(SYS_membarrier)
    if (syscall(SYS_membarrier, MB_CMD_PRIVATE_EXPEDITED, 0, 0) == 0)
        return;
    /* The registration is inherited by fork but not by exec; the global
     * command needs none (and was found supported). */
    syscall(SYS_membarrier, MB_CMD_GLOBAL, 0, 0);
#endif
}

static inline void tc_enter(gm_tcache *tc)
{
    for (;;) {
        if (atomic_load_explicit(&asym, memory_order_acquire)) {
            atomic_store_explicit(&tc->busy, 1, memory_order_relaxed);
            atomic_signal_fence(memory_order_seq_cst);
        } else {
            atomic_exchange_explicit(&tc->busy, 1, memory_order_seq_cst);
        }
        if (__builtin_expect(atomic_load_explicit(&tc->steal, memory_order_seq_cst) == 0, 1))
            return;
        atomic_store_explicit(&tc->busy, 0, memory_order_release); /* step aside */
        while (atomic_load_explicit(&tc->steal, memory_order_acquire) != 0)
            sched_yield();
    }
}

static inline void tc_exit(gm_tcache *tc)
{
    atomic_store_explicit(&tc->busy, 0, memory_order_release);
}

/* Enters every attached cache of p (pool->lock held), with one barrier. */
void gm_tc_enter_all(gm_pool *p)
{
    for (gm_tcache *tc = p->tcaches; tc != NULL; tc = tc->next)
        atomic_store_explicit(&tc->steal, 1, memory_order_seq_cst);
    if (p->tcaches != NULL && atomic_load_explicit(&registered, memory_order_seq_cst))
        asym_barrier();
    for (gm_tcache *tc = p->tcaches; tc != NULL; tc = tc->next)
        while (atomic_load_explicit(&tc->busy, memory_order_seq_cst) != 0)
            sched_yield();
}

void gm_tc_exit_all(gm_pool *p)
{
    for (gm_tcache *tc = p->tcaches; tc != NULL; tc = tc->next)
        atomic_store_explicit(&tc->steal, 0, memory_order_release);
}

/* ---- thread caches ---- */

/* The thread's pool slots and its stripe number. */
typedef struct gm_tls {
    uint64_t id[TLS_SLOTS];
    gm_tcache *tc[TLS_SLOTS];
    unsigned evict;
    unsigned stripe; /* 0: none yet; else given round robin, odd */
    bool keyed;
} gm_tls;

static _Thread_local gm_tls tls;

/* The calling thread's stripe of p. */
unsigned gm_pool_my_stripe(const gm_pool *p)
{
    unsigned s = tls.stripe;
    if (__builtin_expect(s == 0, 0))
        tls.stripe = s = atomic_fetch_add_explicit(&next_stripe, 1, memory_order_relaxed) << 1 | 1u;
    return (s >> 1) & p->stripe_mask;
}

static atomic_uintptr_t next_thread_key = 2; /* keys 2n+1: 5, 7, 9, ... */
static _Thread_local uintptr_t thread_key;

uintptr_t gm_pool_per_thread_key(void)
{
    uintptr_t k = thread_key;
    if (__builtin_expect(k == 0, 0))
        thread_key = k = atomic_fetch_add_explicit(&next_thread_key, 1, memory_order_relaxed) << 1 | 1u;
    return k;
}

static pthread_key_t tls_key;
static bool tls_key_ok;
static pthread_once_t tls_once = PTHREAD_ONCE_INIT;

static void tc_unref(gm_tcache *tc)
{
    if (atomic_fetch_sub_explicit(&tc->refs, 1, memory_order_acq_rel) == 1)
        free(tc);
}

/* The thread lets go of its cache (it exits, or needs the slot): the pool
 * takes the blocks back at its next slow path, or has ended already. */
static void tc_let_go(gm_tcache *tc)
{
    int attached = TC_ATTACHED;
    if (atomic_compare_exchange_strong_explicit(&tc->state, &attached, TC_ORPHANED, memory_order_acq_rel,
                                                memory_order_acquire))
        atomic_fetch_add_explicit(&orphan_epoch, 1, memory_order_release); /* after the CAS: gm_tc_harvest_orphans */
    tc_unref(tc);
}

static void tls_exit(void *arg)
{
    (void)arg;
    for (unsigned i = 0; i < TLS_SLOTS; i++) {
        if (tls.tc[i] != NULL)
            tc_let_go(tls.tc[i]);
        tls.tc[i] = NULL;
        tls.id[i] = 0;
    }
    tls.keyed = false; /* a later destructor that uses a pool registers again */
}

const gm_life_hook gm_pool_cache_life = {.what = "the pools' thread caches", .key = &tls_key,
                                         .thread_exit = tls_exit};

static void tls_init(void)
{
    asym_init();
    tls_key_ok = gm_life_arm(&gm_pool_cache_life) == 0;
}

static inline gm_tcache *tc_find(const gm_pool *p)
{
    for (unsigned i = 0; i < TLS_SLOTS; i++)
        if (tls.id[i] == p->id)
            return tls.tc[i];
    return NULL;
}

/* Makes the calling thread's cache for p; NULL when that cannot be done
 * (no memory, no thread key, or the pool no longer holds): the caller then
 * takes the shared path. */
static gm_tcache *tc_attach(gm_pool *p)
{
    pthread_once(&tls_once, tls_init);
    if (!tls_key_ok)
        return NULL;
    if (!tls.keyed) {
        if (pthread_setspecific(tls_key, &tls) != 0)
            return NULL;
        tls.keyed = true;
    }
    void *mem = NULL;
    if (posix_memalign(&mem, 64, sizeof(gm_tcache)) != 0)
        return NULL;
    gm_tcache *tc = memset(mem, 0, sizeof(gm_tcache));
    atomic_init(&tc->refs, 2);
    pthread_mutex_lock(&p->lock);
    bool holding = atomic_load_explicit(&p->holding, memory_order_relaxed);
    if (holding) {
        tc->next = p->tcaches;
        p->tcaches = tc;
    }
    pthread_mutex_unlock(&p->lock);
    if (!holding) {
        free(tc);
        return NULL;
    }
    unsigned slot = TLS_SLOTS;
    for (unsigned i = 0; i < TLS_SLOTS && slot == TLS_SLOTS; i++)
        if (tls.tc[i] == NULL)
            slot = i;
    if (slot == TLS_SLOTS) {
        slot = tls.evict++ % TLS_SLOTS;
        tc_let_go(tls.tc[slot]);
    }
    tls.tc[slot] = tc;
    tls.id[slot] = p->id;
    return tc;
}

/* Moves every block of a cache to the list *out (through next).  The
 * caller is inside the cache. */
void gm_tc_empty(gm_tcache *tc, gm_rec **out)
{
    for (unsigned c = 0; c < TC_CLASSES; c++) {
        for (unsigned i = 0, n = TC_N(tc, c); i < n; i++) {
            gm_rec *r = tc->bin[c][i];
            r->next = *out;
            *out = r;
        }
        TC_SET_N(tc, c, 0);
    }
    atomic_store_explicit(&tc->held_blocks, 0, memory_order_relaxed);
    atomic_store_explicit(&tc->held_bytes, 0, memory_order_relaxed);
}

/* Takes the blocks and counts of orphaned caches into the calling thread's
 * stripe and drops the caches.  pool->lock held.  A thread lets go with an
 * acq_rel CAS after its last operation and then bumps orphan_epoch; the
 * epoch is read (acquire) before the walk, so every cache counted in it is
 * seen orphaned, and one orphaned later bumps the epoch past the value
 * stored here, so that gm_tc_maybe_harvest comes back. */
void gm_tc_harvest_orphans(gm_pool *p)
{
    uint64_t epoch = atomic_load_explicit(&orphan_epoch, memory_order_acquire);
    gm_stripe *s = &p->stripes[gm_pool_my_stripe(p)];
    for (gm_tcache **pp = &p->tcaches; *pp != NULL;) {
        gm_tcache *tc = *pp;
        if (atomic_load_explicit(&tc->state, memory_order_acquire) != TC_ORPHANED) {
            pp = &tc->next;
            continue;
        }
        gm_rec *list = NULL;
        gm_tc_empty(tc, &list);
        if (list != NULL) {
            pthread_mutex_lock(&s->lock);
            while (list != NULL) {
                gm_rec *next = list->next;
                gm_store_put(s, list);
                list = next;
            }
            pthread_mutex_unlock(&s->lock);
        }
        p->act_req += GET(tc->act_req);
        p->hits += GET(tc->hits);
        *pp = tc->next;
        tc_unref(tc);
    }
    atomic_store_explicit(&p->harvested, epoch, memory_order_relaxed);
}

/* Harvests when some thread let go of a cache since this pool last looked
 * (two relaxed loads; the counter changes only when threads let go).
 * Whether it did. */
bool gm_tc_maybe_harvest(gm_pool *p)
{
    if (__builtin_expect(atomic_load_explicit(&orphan_epoch, memory_order_relaxed) ==
                             atomic_load_explicit(&p->harvested, memory_order_relaxed),
                         1))
        return false;
    pthread_mutex_lock(&p->lock);
    gm_tc_harvest_orphans(p);
    pthread_mutex_unlock(&p->lock);
    return true;
}

/* A block of class cls in the thread's cache usable on key, or NULL (with
 * *st set when an event query failed).  The caller is inside the cache. */
static inline gm_rec *tc_take(gm_pool *p, gm_tcache *tc, unsigned cls, uintptr_t key, const char *what,
                              gpumem_status *st)
{
    unsigned n = TC_N(tc, cls);
    gm_rec **b = tc->bin[cls];
    gm_rec *top = b[n - 1];
    if (__builtin_expect(gm_key_fits(top->key, key), 1)) { /* the common hit */
        TC_SET_N(tc, cls, n - 1);
        return top;
    }
    int at = -1;
    for (int i = (int)n - 2; i >= 0 && at < 0; i--)
        if (gm_key_fits(b[i]->key, key))
            at = i;
    for (int i = 0, q = 0; at < 0 && i < (int)n && q < TC_QUERIES; i++, q++) {
        int done = gm_pool_pending_done(p, b[i], what, st);
        if (done < 0)
            return NULL;
        if (done)
            at = i;
    }
    if (at < 0)
        return NULL;
    gm_rec *r = b[at];
    for (unsigned i = (unsigned)at; i + 1 < n; i++)
        b[i] = b[i + 1];
    TC_SET_N(tc, cls, n - 1);
    return r;
}

/* Puts freed block r (bytes, its class's) on top of its bin, which holds n
 * blocks and has room.  The caller is inside the cache. */
static inline void tc_push(gm_tcache *tc, unsigned n, gm_rec *r, int64_t bytes)
{
    tc->bin[r->cls][n] = r;
    TC_SET_N(tc, r->cls, n + 1);
    ADD(tc->held_blocks, 1);
    ADD(tc->held_bytes, bytes);
    ADD(tc->act_req, -(int64_t)r->requested);
}

/* Threads whose slots still name a cache of the ended pool never match
 * its id again; they only drop their reference to it. */
void gm_tc_end_all(gm_pool *p)
{
    while (p->tcaches != NULL) {
        gm_tcache *tc = p->tcaches;
        p->tcaches = tc->next;
        atomic_store_explicit(&tc->state, TC_DEAD, memory_order_release);
        tc_unref(tc);
    }
}

/* ---- allocation ---- */

gpumem_status gm_pool_core_alloc(gm_pool *p, size_t size, gpumem_stream *stream, const char *what,
                                 uint64_t *addr, gpumem_allocation **token, bool *oom)
{
    *oom = false;
    if (stream != NULL) {
        gpumem_status st = gm_stream_check(stream, p->ctx, what, "pool");
        if (st != GPUMEM_OK)
            return st;
    }
    if (size == 0)
        return gm_pool_empty_alloc(p, what, addr, token);
    if (size > GM_POOL_MAX_SIZE)
        return gm_error(GPUMEM_ERROR_OVERFLOW, "%s: size %zu is larger than a pool's largest block (%zu bytes)",
                        what, size, (size_t)GM_POOL_MAX_SIZE);
    uintptr_t key = gm_stream_key(stream);
    unsigned cls = gm_pool_class_of(size);
    gm_rec *r = NULL;
    gm_tcache *tc;
    if (cls < TC_CLASSES && !(p->flags & GPUMEM_POOL_NO_THREAD_CACHE) && (tc = tc_find(p)) != NULL) {
        gpumem_status st = GPUMEM_OK;
        tc_enter(tc);
        if (TC_N(tc, cls) != 0 && (r = tc_take(p, tc, cls, key, what, &st)) != NULL) {
            ADD(tc->held_blocks, -1);
            ADD(tc->held_bytes, -(int64_t)gm_pool_class_bytes(cls));
            ADD(tc->act_req, (int64_t)size);
            ADD(tc->hits, 1);
        }
        tc_exit(tc);
        if (st != GPUMEM_OK)
            return st;
    }
    if (r == NULL) {
        gpumem_status st = GPUMEM_OK;
        if ((r = gm_pool_alloc_slow(p, cls, size, key, what, &st, oom)) == NULL)
            return st;
    }
    /* A block taken pending on this stream is ordered for the new owner;
     * its event stays with it, to be recorded again at the next free. */
    r->key = 0;
    r->requested = size;
    uint32_t tag = atomic_load_explicit(&r->tag, memory_order_relaxed) | 1u;
    atomic_store_explicit(&r->tag, tag, memory_order_release);
    *addr = r->addr;
    *token = gm_rec_handle(r, tag);
    return GPUMEM_OK;
}

/* ---- free ---- */

/* The block goes to its home stripe (or, when the pool does not hold, to
 * the driver).  A full thread-cache bin first sends its older half
 * to the stripe, so the cache keeps the most recently freed blocks.
 * Whether the pool holds is read inside the cache or under the stripe's
 * lock: a thread that stops the pool clears holding, then enters every cache
 * and locks every stripe, so no block is left behind. */
static gpumem_status free_slow(gm_pool *p, gm_tcache *tc, gm_rec *r, gpumem_stream *stream, const char *what)
{
    int64_t bytes = (int64_t)gm_pool_block_bytes(r->cls);
    gm_tc_maybe_harvest(p);
    gm_stripe *s = &p->stripes[r->stripe];
    if (tc != NULL && r->cls < TC_CLASSES) {
        tc_enter(tc);
        if (!atomic_load_explicit(&p->holding, memory_order_relaxed)) {
            tc_exit(tc);
            return gm_pool_free_direct(p, r, stream, what);
        }
        unsigned cls = r->cls, half = TC_DEPTH / 2;
        gm_rec **b = tc->bin[cls];
        if (GET(tc->held_bytes) + bytes <= TC_MAX_BYTES) {
            if (TC_N(tc, cls) == TC_DEPTH) {
                pthread_mutex_lock(&s->lock); /* inside the cache: see the lock order in pool.h */
                for (unsigned i = 0; i < half; i++)
                    gm_store_put(s, b[i]);
                pthread_mutex_unlock(&s->lock);
                for (unsigned i = 0; i + half < TC_DEPTH; i++)
                    b[i] = b[i + half];
                TC_SET_N(tc, cls, TC_DEPTH - half);
                ADD(tc->held_blocks, -(int64_t)half);
                ADD(tc->held_bytes, -(int64_t)half * bytes);
            }
            tc_push(tc, TC_N(tc, cls), r, bytes);
            tc_exit(tc);
            return GPUMEM_OK;
        }
        tc_exit(tc);
    }
    pthread_mutex_lock(&s->lock);
    if (!atomic_load_explicit(&p->holding, memory_order_relaxed)) {
        pthread_mutex_unlock(&s->lock);
        return gm_pool_free_direct(p, r, stream, what);
    }
    gm_store_put(s, r);
    ADD(s->act_req, -(int64_t)r->requested);
    pthread_mutex_unlock(&s->lock);
    return GPUMEM_OK;
}

gpumem_status gm_pool_release_as(gpumem_allocation *a, gpumem_stream *stream, bool legacy_only, const char *what)
{
    if (a == NULL)
        return gm_error(GPUMEM_ERROR_NULL_ARGUMENT, "%s: argument 'alloc' is NULL", what);
    uint32_t htag;
    gm_rec *r = gm_rec_of(a, &htag);
    if (r == NULL)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: 'alloc' is not an allocation handle", what);
    uint32_t tag = atomic_load_explicit(&r->tag, memory_order_relaxed);
    /* One CAS claims the record: a stale handle, or the loser of two
     * concurrent frees, fails here without touching anything else. */
    if ((tag & HANDLE_TAG_MASK) != htag ||
        !atomic_compare_exchange_strong_explicit(&r->tag, &tag, tag + 1u, memory_order_acq_rel,
                                                 memory_order_relaxed))
        return gm_error(GPUMEM_ERROR_INVALID_STATE, "%s: 'alloc' was freed already", what);
    gm_pool *p = r->pool;
    /* Only the context: the library's own frees (alloc.c) pass a stream
     * whose destroy may be under way; gpumem_allocation_free checked that
     * the caller's is live. */
    if (stream != NULL && stream->ctx->dctx != p->ctx->dctx) {
        atomic_store_explicit(&r->tag, tag, memory_order_release); /* still live */
        return gm_error(GPUMEM_ERROR_CONTEXT_MISMATCH, "%s: 'alloc' belongs to the context of device %d, but the "
                        "stream to device %d", what, p->ctx->device, stream->ctx->device);
    }
    if (r->cls == REC_EMPTY)
        return gm_pool_empty_free(p, r, what);
    GM_TRACE(gm_trace_free(p->ctx, p->ctx->device, stream, GM_TRACE_KIND_UNKNOWN, p, r->requested, r->addr));
    if (!atomic_load_explicit(&p->holding, memory_order_relaxed))
        return gm_pool_free_direct(p, r, stream, what);
    if (stream != NULL && legacy_only && gm_stream_ds(stream) == NULL) {
        r->key = GM_KEY_LEGACY_UNRECORDED; /* its event is recorded when another stream asks */
    } else if (stream != NULL) {
        gpumem_status st = gm_pool_record_free(p, r, stream, what);
        if (st != GPUMEM_OK) {
            /* The block cannot be told apart from its pending work: it goes
             * to the driver after the stream's work. */
            return gm_keep_first(st, gm_pool_free_direct(p, r, stream, what));
        }
    }
    gm_tcache *tc = NULL;
    if (r->cls < TC_CLASSES && !(p->flags & GPUMEM_POOL_NO_THREAD_CACHE) &&
        ((tc = tc_find(p)) != NULL || (tc = tc_attach(p)) != NULL)) {
        unsigned cls = r->cls;
        int64_t bytes = (int64_t)gm_pool_class_bytes(cls);
        tc_enter(tc);
        /* Checked inside the cache: a thread that stops the pool enters every
         * cache after clearing holding, so no block is left behind here. */
        unsigned n = TC_N(tc, cls);
        if (__builtin_expect(atomic_load_explicit(&p->holding, memory_order_relaxed) && n < TC_DEPTH &&
                                 GET(tc->held_bytes) + bytes <= TC_MAX_BYTES,
                             1)) {
            tc_push(tc, n, r, bytes);
            tc_exit(tc);
            return GPUMEM_OK;
        }
        tc_exit(tc);
    }
    return free_slow(p, tc, r, stream, what);
}
