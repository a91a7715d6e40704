/*
 * pool.c - the pool core (records, thread caches, the striped shared
 * store, streams, lifetime) and the allocation handles' public API; the
 * pools' public faces are device_pool.c and host_pool.c.  pool.h
 * explains the design, why the shared store is striped, and the lock order;
 * the out-of-memory ladder is the allocator's (alloc.c).
 */
#include "config.h"

#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "hostreg.h"
#include "memstats.h"
#include "pool.h"
#include "stream.h"
#include "trace.h"
#include "workers.h"

/* ---- records and handles ------------------------------------------------------------ */

#define REC_EMPTY UINT32_MAX /* cls of a zero-size allocation */

/* One cache line each: threads that use neighbouring records do not
 * share lines (every hit writes tag, requested and key). */
typedef struct gm_rec {
    _Alignas(64) _Atomic uint32_t tag; /* generation << 1 | live */
    uint32_t index;
    uint32_t cls;
    uint32_t stripe;       /* the stripe its free goes to: the allocating thread's (see pool.h) */
    gm_pool *pool;
    uint64_t addr;         /* device address, or host address */
    size_t requested;      /* what the live allocation asked for */
    uintptr_t key;         /* stream key of the free whose event may be pending; 0: idle */
    gm_devent *event;      /* the block's event, once it was freed on a stream */
    struct gm_rec *next;   /* in a store list, or the free list */
} gm_rec;

_Static_assert(sizeof(gm_rec) == 64 || sizeof(void *) < 8, "a record is one cache line");

#define REC_CHUNK_BITS 12
#define REC_CHUNK (1u << REC_CHUNK_BITS)
#if UINTPTR_MAX > 0xffffffffu
#define HANDLE_INDEX_BITS 32
#define HANDLE_TAG_MASK UINT32_MAX
#define REC_MAX_CHUNKS (1u << 16) /* 2^28 records */
#else
#define HANDLE_INDEX_BITS 22
#define HANDLE_TAG_MASK ((1u << (32 - HANDLE_INDEX_BITS)) - 1u)
#define REC_MAX_CHUNKS ((1u << (HANDLE_INDEX_BITS - REC_CHUNK_BITS)) - 1u)
#endif
#define HANDLE_INDEX_MASK ((((uintptr_t)1) << HANDLE_INDEX_BITS) - 1u)

/* Chunks are published once and never freed: a stale handle always points
 * at a record, whose tag then tells it is stale. */
static _Atomic(gm_rec *) rec_chunks[REC_MAX_CHUNKS];
static pthread_mutex_t rec_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t rec_used;
static gm_rec *rec_free_list;

static gm_rec *rec_get(void)
{
    gm_rec *r = NULL;
    pthread_mutex_lock(&rec_lock);
    if (rec_free_list != NULL) {
        r = rec_free_list;
        rec_free_list = r->next;
    } else if (rec_used < REC_MAX_CHUNKS * REC_CHUNK) {
        uint32_t chunk = rec_used >> REC_CHUNK_BITS;
        gm_rec *c = atomic_load_explicit(&rec_chunks[chunk], memory_order_relaxed);
        void *mem = NULL;
        if (c == NULL && posix_memalign(&mem, _Alignof(gm_rec), REC_CHUNK * sizeof *c) == 0) {
            c = mem;
            memset(c, 0, REC_CHUNK * sizeof *c);
            for (uint32_t i = 0; i < REC_CHUNK; i++)
                c[i].index = (chunk << REC_CHUNK_BITS) | i;
            atomic_store_explicit(&rec_chunks[chunk], c, memory_order_release);
        }
        if (c != NULL)
            r = &c[rec_used++ & (REC_CHUNK - 1)];
    }
    pthread_mutex_unlock(&rec_lock);
    if (r != NULL) {
        r->next = NULL;
        r->key = 0;
        r->event = NULL;
    }
    return r;
}

static void rec_put(gm_rec *r)
{
    pthread_mutex_lock(&rec_lock);
    r->pool = NULL;
    r->next = rec_free_list;
    rec_free_list = r;
    pthread_mutex_unlock(&rec_lock);
}

static gpumem_allocation *handle_of(const gm_rec *r, uint32_t tag)
{
    uintptr_t h = ((uintptr_t)(tag & HANDLE_TAG_MASK) << HANDLE_INDEX_BITS) | ((uintptr_t)r->index + 1u);
    return (gpumem_allocation *)h;
}

/* The record a handle names, or NULL for a value that was never a handle.
 * *htag gets the handle's tag bits. */
static inline gm_rec *rec_of(const gpumem_allocation *a, uint32_t *htag)
{
    uintptr_t h = (uintptr_t)a;
    uintptr_t low = h & HANDLE_INDEX_MASK;
    *htag = (uint32_t)(h >> HANDLE_INDEX_BITS);
    if (low == 0 || !(*htag & 1u))
        return NULL;
    uintptr_t idx = low - 1u;
    if ((idx >> REC_CHUNK_BITS) >= REC_MAX_CHUNKS)
        return NULL;
    gm_rec *c = atomic_load_explicit(&rec_chunks[idx >> REC_CHUNK_BITS], memory_order_acquire);
    return c != NULL ? &c[idx & (REC_CHUNK - 1u)] : NULL;
}

/* The live record of a handle (for reading its fields), or NULL with *st
 * set. */
static gm_rec *rec_live(const gpumem_allocation *a, const char *what, gpumem_status *st)
{
    if (a == NULL) {
        *st = gm_error(GPUMEM_ERROR_NULL_ARGUMENT, "%s: argument 'alloc' is NULL", what);
        return NULL;
    }
    uint32_t htag;
    gm_rec *r = rec_of(a, &htag);
    if (r == NULL) {
        *st = gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: 'alloc' is not an allocation handle", what);
        return NULL;
    }
    if ((atomic_load_explicit(&r->tag, memory_order_acquire) & HANDLE_TAG_MASK) != htag) {
        *st = gm_error(GPUMEM_ERROR_INVALID_STATE, "%s: 'alloc' was freed already", what);
        return NULL;
    }
    return r;
}

/* ---- the pool --------------------------------------------------------------------- */

#define TC_CLASSES 144u                  /* classes up to 1 MiB: gm_pool_class_of(1 << 20) == 143 */
#define TC_DEPTH 8u                      /* blocks per class */
#define TC_MAX_BYTES ((int64_t)16 << 20) /* held bytes per thread cache */
#define TC_QUERIES 2                     /* event queries per allocation, at most */
#define STORE_SCAN 8                     /* same-stream candidates looked at in the store */
#define TLS_SLOTS 4                      /* pools a thread caches for at once */

enum { TC_ATTACHED, TC_ORPHANED, TC_DEAD };

/* A thread's cache for one pool.  Its owner enters it (tc_enter) for every
 * operation; others enter it only to take its blocks (steal_all), holding
 * pool->lock.  Its counters are single-writer (whoever is inside) relaxed
 * atomics, so that statistics read them without entering. */
typedef struct gm_tcache {
    atomic_int busy;  /* the owner is inside */
    atomic_int steal; /* another thread wants in */
    atomic_int state; /* TC_ATTACHED; TC_ORPHANED: the thread let go; TC_DEAD: the pool ended */
    atomic_int refs;  /* the thread's slot and the pool's list */
    struct gm_tcache *next; /* in pool->tcaches, under pool->lock */
    _Atomic int64_t held_blocks, held_bytes, act_req;
    _Atomic uint64_t hits;
    _Atomic uint8_t n[TC_CLASSES]; /* blocks per bin: single-writer relaxed, read by the report (TC_N) */
    gm_rec *bin[TC_CLASSES][TC_DEPTH]; /* oldest first */
} gm_tcache;

/* A bin's count: plain loads and stores for its one writer (whoever is
 * inside the cache), atomic so that the report may read it from outside. */
#define TC_N(tc, c) atomic_load_explicit(&(tc)->n[c], memory_order_relaxed)
#define TC_SET_N(tc, c, v) atomic_store_explicit(&(tc)->n[c], (uint8_t)(v), memory_order_relaxed)

typedef struct gm_class_store {
    gm_rec *idle;                        /* LIFO through next */
    gm_rec *pending_head, *pending_tail; /* FIFO through next: oldest first */
} gm_class_store;

/* One stripe of the shared store (see pool.h): its own lock and lists, on
 * its own cache lines.  The counters are written under the stripe's lock and
 * read without it (statistics, and held_blocks as the hint that lets the
 * search skip an empty stripe without locking it). */
typedef struct gm_stripe {
    _Alignas(64) pthread_mutex_t lock;
    _Atomic int64_t held_blocks, held_bytes, act_req;
    _Atomic uint64_t hits;
    gm_class_store store[GM_POOL_CLASSES];
} gm_stripe;

#define STRIPES_MIN 4u /* threads outnumber small machines' cores; a preempted lock holder then stalls fewer */
#define STRIPES_MAX 16u

struct gm_pool {
    gm_handle h; /* first: the lifecycle check (handles.h): a gpumem_pool or gpumem_host_pool */
    gm_pool_kind kind;
    uint64_t id; /* never reused: thread slots match on it */
    unsigned flags;
    unsigned alloc_flags;
    unsigned stripe_mask; /* stripes - 1, a power of two less one */
    gpumem_context *ctx;
    atomic_bool holding;
    _Atomic uint64_t harvested; /* orphan_epoch when this pool last harvested (written under lock) */
    /* On its own cache lines: the fields above are read by every operation. */
    _Alignas(64) pthread_mutex_t lock; /* guards everything below but the stripes */
    bool destroyed;
    int64_t zombie_live;  /* live allocations left once destroyed */
    gm_pool *live_next, *live_prev; /* in live_pools, until destroyed (live_lock) */
    gm_tcache *tcaches;
    /* Blocks and bytes obtained from the driver and not given back; the
     * requested bytes and hits of misses, direct frees and harvested caches
     * (the stripes and thread caches keep their own held, requested and hit
     * counts); the rest of the books. */
    int64_t blocks, bytes, act_req, empty_live;
    uint64_t hits, misses, oom_retries, driver_frees, peak;
    gm_stripe stripes[]; /* stripe_mask + 1 */
};

/* Bumped by every thread that lets go of a cache (tc_let_go): a pool whose
 * harvested count differs has an orphan to take back, maybe.  One counter
 * for the process, because a thread that lets go must not touch the pool
 * (it may have ended); threads let go rarely (exit, slot eviction). */
static _Atomic uint64_t orphan_epoch;

/* Stripe indices, handed out round robin, once per thread. */
static _Atomic unsigned next_stripe;

static _Atomic uint64_t next_pool_id = 1;

/* Every pool that is not destroyed, for the out-of-memory ladder
 * (gm_pools_release_held).  Lock order: live_lock, then a pool's locks. */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static gm_pool *live_pools;

static inline uintptr_t stream_key(const gpumem_stream *s)
{
    if (s == NULL)
        return 0;
    gm_dstream *ds = gm_stream_ds(s);
    return ds != NULL ? (uintptr_t)ds : 1u; /* 1: the legacy default stream */
}

#define ADD(field, d) \
    atomic_store_explicit(&(field), atomic_load_explicit(&(field), memory_order_relaxed) + (d), memory_order_relaxed)
#define GET(field) atomic_load_explicit(&(field), memory_order_relaxed)

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
static void steal_all(gm_pool *p)
{
    for (gm_tcache *tc = p->tcaches; tc != NULL; tc = tc->next)
        atomic_store_explicit(&tc->steal, 1, memory_order_seq_cst);
    if (p->tcaches != NULL && atomic_load_explicit(&registered, memory_order_seq_cst))
        asym_barrier();
    for (gm_tcache *tc = p->tcaches; tc != NULL; tc = tc->next)
        while (atomic_load_explicit(&tc->busy, memory_order_seq_cst) != 0)
            sched_yield();
}

static void unsteal_all(gm_pool *p)
{
    for (gm_tcache *tc = p->tcaches; tc != NULL; tc = tc->next)
        atomic_store_explicit(&tc->steal, 0, memory_order_release);
}

/* ---- driver calls for blocks ---- */

/* The driver's result, or -1 with *st set (gm_host_alloc_locked). */
static int drv_alloc(gm_pool *p, size_t bytes, const char *what, uint64_t *addr, gpumem_status *st)
{
    if (p->kind == GM_POOL_DEVICE) {
        gm_cu_deviceptr d = 0;
        int rc = GM_DRV(mem_alloc, p->ctx->dctx, &d, bytes);
        *addr = d;
        if (rc == 0)
            gm_memstats_driver_alloc(p->ctx);
        return rc;
    }
    void *h = NULL;
    int rc = gm_host_alloc_locked(p->ctx->dctx, bytes, p->alloc_flags, what, &h, st);
    if (rc == 0)
        gm_memstats_driver_alloc(p->ctx);
    *addr = (uint64_t)(uintptr_t)h;
    return rc;
}

/* Gives a block to the driver: waits for the work its free recorded (or,
 * with sync, for all of that stream's), then frees its event and its
 * memory.  The first failure is returned; the memory is freed whatever
 * failed before.  The record is left to the caller. */
static gpumem_status release_block(gm_pool *p, gm_rec *r, gpumem_stream *sync, const char *what)
{
    if (gm_process_exiting())
        return GPUMEM_OK; /* the driver may be gone; the system reclaims it all */
    gm_dctx *dctx = p->ctx->dctx;
    gpumem_status st = GPUMEM_OK;
    if (r->key != 0)
        st = gm_drv_check(GM_DRV(event_synchronize, dctx, r->event), GM_OP_event_synchronize, what);
    else if (sync != NULL)
        st = gm_drv_check(GM_DRV(stream_synchronize, dctx, gm_stream_ds(sync)), GM_OP_stream_synchronize, what);
    if (r->event != NULL) {
        st = gm_keep_first(st, gm_drv_check(GM_DRV(event_destroy, dctx, r->event), GM_OP_event_destroy, what));
        r->event = NULL;
    }
    r->key = 0;
    if (p->kind == GM_POOL_DEVICE)
        st = gm_keep_first(st, gm_drv_check(GM_DRV(mem_free, dctx, r->addr), GM_OP_mem_free, what));
    else
        st = gm_keep_first(st, gm_drv_check(gm_host_free_locked(dctx, (void *)(uintptr_t)r->addr),
                                            GM_OP_mem_free_host, what));
    return st;
}

/* Records the block's event on stream, making the event the first time. */
static gpumem_status record_free(gm_pool *p, gm_rec *r, gpumem_stream *stream, const char *what)
{
    gm_dctx *dctx = p->ctx->dctx;
    if (r->event == NULL) {
        gm_devent *ev = NULL;
        gpumem_status st = gm_drv_check(GM_DRV(event_create, dctx, &ev, GM_CU_EVENT_DISABLE_TIMING),
                                        GM_OP_event_create, what);
        if (st != GPUMEM_OK)
            return st;
        r->event = ev;
    }
    gpumem_status st = gm_drv_check(GM_DRV(event_record, dctx, r->event, gm_stream_ds(stream)),
                                    GM_OP_event_record, what);
    if (st == GPUMEM_OK)
        r->key = stream_key(stream);
    return st;
}

/* Whether a pending block's event has completed: 1 yes (the block is made
 * idle), 0 not yet, -1 the query failed (status in *st). */
static int pending_done(gm_pool *p, gm_rec *r, const char *what, gpumem_status *st)
{
    int rc = GM_DRV(event_query, p->ctx->dctx, r->event);
    if (rc == 0) {
        r->key = 0;
        return 1;
    }
    if (rc == GM_CUDA_ERROR_NOT_READY)
        return 0;
    *st = gm_drv_check(rc, GM_OP_event_query, what);
    return -1;
}

/* ---- the shared store: stripes ---- */

/* The thread's pool slots (thread caches below) and its stripe number. */
typedef struct gm_tls {
    uint64_t id[TLS_SLOTS];
    gm_tcache *tc[TLS_SLOTS];
    unsigned evict;
    unsigned stripe; /* 0: none yet; else given round robin, odd */
    bool keyed;
} gm_tls;

static _Thread_local gm_tls tls;

/* The calling thread's stripe of p. */
static inline unsigned my_stripe(const gm_pool *p)
{
    unsigned s = tls.stripe;
    if (__builtin_expect(s == 0, 0))
        tls.stripe = s = atomic_fetch_add_explicit(&next_stripe, 1, memory_order_relaxed) << 1 | 1u;
    return (s >> 1) & p->stripe_mask;
}

/* The stripe's lock held. */
static void store_put(gm_stripe *s, gm_rec *r)
{
    gm_class_store *cs = &s->store[r->cls];
    ADD(s->held_blocks, 1);
    ADD(s->held_bytes, (int64_t)gm_pool_class_bytes(r->cls));
    if (r->key == 0) {
        r->next = cs->idle;
        cs->idle = r;
    } else {
        r->next = NULL;
        if (cs->pending_tail != NULL)
            cs->pending_tail->next = r;
        else
            cs->pending_head = r;
        cs->pending_tail = r;
    }
}

/* Unlinks r, whose predecessor is prev (NULL: r is the head). */
static void pending_unlink(gm_class_store *cs, gm_rec *prev, gm_rec *r)
{
    if (prev != NULL)
        prev->next = r->next;
    else
        cs->pending_head = r->next;
    if (cs->pending_tail == r)
        cs->pending_tail = prev;
    r->next = NULL;
}

/* A held block of class cls in stripe s usable on stream key (0: by
 * anyone), or NULL; the stripe's lock held.  With queries NULL: a pending
 * block freed on the same stream (among the first STORE_SCAN), else an idle
 * one.  Otherwise: a pending block whose event has completed, querying the
 * oldest ones while *queries lasts. */
static gm_rec *store_take(gm_pool *p, gm_stripe *s, unsigned cls, uintptr_t key, int *queries, const char *what,
                          gpumem_status *st)
{
    gm_class_store *cs = &s->store[cls];
    gm_rec *prev = NULL, *r = cs->pending_head, *found = NULL;
    if (queries == NULL) {
        for (int i = 0; key != 0 && r != NULL && i < STORE_SCAN && found == NULL; i++) {
            if (r->key == key)
                found = r;
            else
                prev = r, r = r->next;
        }
        if (found != NULL) {
            pending_unlink(cs, prev, found);
        } else if ((found = cs->idle) != NULL) {
            cs->idle = found->next;
            found->next = NULL;
        }
    } else {
        for (; r != NULL && *queries > 0 && found == NULL; --*queries) {
            int done = pending_done(p, r, what, st);
            if (done < 0)
                return NULL;
            if (done)
                found = r;
            else
                prev = r, r = r->next;
        }
        if (found != NULL)
            pending_unlink(cs, prev, found);
    }
    if (found != NULL) {
        ADD(s->held_blocks, -1);
        ADD(s->held_bytes, -(int64_t)gm_pool_class_bytes(cls));
    }
    return found;
}

/* A held block of class cls for an allocation of size bytes on stream key,
 * from stripe own first, then from the others; NULL (with
 * *st set when an event query failed) when none will do.  A first round
 * looks for same-stream and idle blocks, a second queries at most
 * TC_QUERIES events, oldest first.  Stripes that hold nothing are skipped
 * without locking them. */
static gm_rec *stripes_take(gm_pool *p, unsigned own, unsigned cls, size_t size, uintptr_t key,
                            const char *what, gpumem_status *st)
{
    int queries = TC_QUERIES;
    for (int round = 0; round < 2; round++) {
        for (unsigned i = 0; i <= p->stripe_mask; i++) {
            gm_stripe *s = &p->stripes[(own + i) & p->stripe_mask];
            if (GET(s->held_blocks) == 0)
                continue;
            pthread_mutex_lock(&s->lock);
            gm_rec *r = store_take(p, s, cls, key, round ? &queries : NULL, what, st);
            if (r != NULL) {
                ADD(s->hits, 1);
                ADD(s->act_req, (int64_t)size);
            }
            pthread_mutex_unlock(&s->lock);
            if (r != NULL || *st != GPUMEM_OK || queries == 0)
                return r;
        }
    }
    return NULL;
}

/* ---- thread caches ---- */

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
        atomic_fetch_add_explicit(&orphan_epoch, 1, memory_order_release); /* after the CAS: see harvest_orphans */
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

static void tls_init(void)
{
    asym_init();
    tls_key_ok = pthread_key_create(&tls_key, tls_exit) == 0;
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
static void tc_empty(gm_tcache *tc, gm_rec **out)
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
 * stored here, so that maybe_harvest comes back. */
static void harvest_orphans(gm_pool *p)
{
    uint64_t epoch = atomic_load_explicit(&orphan_epoch, memory_order_acquire);
    gm_stripe *s = &p->stripes[my_stripe(p)];
    for (gm_tcache **pp = &p->tcaches; *pp != NULL;) {
        gm_tcache *tc = *pp;
        if (atomic_load_explicit(&tc->state, memory_order_acquire) != TC_ORPHANED) {
            pp = &tc->next;
            continue;
        }
        gm_rec *list = NULL;
        tc_empty(tc, &list);
        if (list != NULL) {
            pthread_mutex_lock(&s->lock);
            while (list != NULL) {
                gm_rec *next = list->next;
                store_put(s, list);
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
static inline bool maybe_harvest(gm_pool *p)
{
    if (__builtin_expect(atomic_load_explicit(&orphan_epoch, memory_order_relaxed) ==
                             atomic_load_explicit(&p->harvested, memory_order_relaxed),
                         1))
        return false;
    pthread_mutex_lock(&p->lock);
    harvest_orphans(p);
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
    if (__builtin_expect(top->key == 0 || top->key == key, 1)) { /* the common hit */
        TC_SET_N(tc, cls, n - 1);
        return top;
    }
    int at = -1;
    for (int i = (int)n - 2; i >= 0 && at < 0; i--)
        if (b[i]->key == 0 || b[i]->key == key)
            at = i;
    for (int i = 0, q = 0; at < 0 && i < (int)n && q < TC_QUERIES; i++, q++) {
        int done = pending_done(p, b[i], what, st);
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

/* ---- accounting ---- */

typedef struct gm_sums {
    int64_t held_blocks, held_bytes, act_req;
    uint64_t hits;
} gm_sums;

/* The pool's books with every stripe's and thread cache's (pool->lock
 * held).  Their counters are read without their locks or entering them:
 * exact when the pool is quiet. */
static gm_sums sum_locked(gm_pool *p)
{
    gm_sums s = {0, 0, p->act_req, p->hits};
    for (unsigned i = 0; i <= p->stripe_mask; i++) {
        gm_stripe *st = &p->stripes[i];
        s.held_blocks += GET(st->held_blocks);
        s.held_bytes += GET(st->held_bytes);
        s.act_req += GET(st->act_req);
        s.hits += GET(st->hits);
    }
    for (gm_tcache *tc = p->tcaches; tc != NULL; tc = tc->next) {
        s.held_blocks += GET(tc->held_blocks);
        s.held_bytes += GET(tc->held_bytes);
        s.act_req += GET(tc->act_req);
        s.hits += GET(tc->hits);
    }
    return s;
}

static void sample_peak_locked(gm_pool *p)
{
    gm_sums s = sum_locked(p);
    int64_t active = p->bytes - s.held_bytes;
    if (active > 0 && (uint64_t)active > p->peak)
        p->peak = (uint64_t)active;
}

/* ---- giving held blocks back ---- */

/* Moves every block of a stripe to the list *out (through next); the
 * stripe's lock held. */
static void stripe_empty(gm_stripe *s, gm_rec **out)
{
    if (GET(s->held_blocks) == 0)
        return;
    for (unsigned c = 0; c < GM_POOL_CLASSES; c++) {
        gm_class_store *cs = &s->store[c];
        while (cs->idle != NULL) {
            gm_rec *r = cs->idle;
            cs->idle = r->next;
            r->next = *out;
            *out = r;
        }
        while (cs->pending_head != NULL) {
            gm_rec *r = cs->pending_head;
            pending_unlink(cs, NULL, r);
            r->next = *out;
            *out = r;
        }
    }
    atomic_store_explicit(&s->held_blocks, 0, memory_order_relaxed);
    atomic_store_explicit(&s->held_bytes, 0, memory_order_relaxed);
}

/* Gives every held block back to the driver: from orphaned caches, every
 * thread's cache and every stripe, taken while every cache is entered (see
 * the lock order in pool.h).  The blocks leave the pool's books under its
 * lock; the driver calls are made after.  *blocks and *bytes (optional) get
 * what was given back. */
static gpumem_status release_all(gm_pool *p, const char *what, uint64_t *blocks, uint64_t *bytes)
{
    gm_rec *list = NULL;
    pthread_mutex_lock(&p->lock);
    harvest_orphans(p);
    steal_all(p);
    for (gm_tcache *tc = p->tcaches; tc != NULL; tc = tc->next)
        tc_empty(tc, &list);
    for (unsigned i = 0; i <= p->stripe_mask; i++) {
        gm_stripe *s = &p->stripes[i];
        pthread_mutex_lock(&s->lock);
        stripe_empty(s, &list);
        pthread_mutex_unlock(&s->lock);
    }
    unsteal_all(p);
    uint64_t n = 0, b = 0;
    for (gm_rec *r = list; r != NULL; r = r->next) {
        n++;
        b += gm_pool_class_bytes(r->cls);
    }
    p->blocks -= (int64_t)n;
    p->bytes -= (int64_t)b;
    p->driver_frees += n;
    pthread_mutex_unlock(&p->lock);

    gpumem_status st = GPUMEM_OK;
    while (list != NULL) {
        gm_rec *next = list->next;
        st = gm_keep_first(st, release_block(p, list, NULL, what));
        rec_put(list);
        list = next;
    }
    if (blocks != NULL)
        *blocks = n;
    if (bytes != NULL)
        *bytes = b;
    return st;
}

/* ---- creation and the end ---- */

/* Stripes per pool: enough for every core to have its own (a power of two
 * from STRIPES_MIN to STRIPES_MAX). */
static unsigned stripe_count(void)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned n = STRIPES_MIN;
    while (n < STRIPES_MAX && (long)n < cpus)
        n <<= 1;
    return n;
}

gpumem_status gm_pool_core_create(gm_pool_kind kind, gpumem_context *ctx, unsigned flags, unsigned alloc_flags,
                                  const char *what, gm_pool **out)
{
    gpumem_status st;
    ctx = gm_context_use(ctx, what, &st);
    if (st != GPUMEM_OK)
        return st;
    unsigned n = stripe_count();
    /* Zeroed by calloc (handles.c's large objects, 64-byte aligned): large,
     * and mostly untouched (a stripe's lists of unused classes stay zero
     * pages). */
    _Static_assert(_Alignof(gm_pool) <= 64, "handles are aligned to 64 bytes");
    size_t size = sizeof(gm_pool) + n * sizeof(gm_stripe);
    gm_pool *p = gm_handle_new_zeroed(kind == GM_POOL_DEVICE ? GM_HANDLE_POOL : GM_HANDLE_HOST_POOL, size);
    if (p == NULL)
        return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", what);
    p->stripe_mask = n - 1;
    for (unsigned i = 0; i < n; i++)
        pthread_mutex_init(&p->stripes[i].lock, NULL);
    atomic_init(&p->harvested, atomic_load_explicit(&orphan_epoch, memory_order_acquire));
    p->kind = kind;
    p->id = atomic_fetch_add(&next_pool_id, 1);
    p->flags = flags;
    p->alloc_flags = alloc_flags;
    p->ctx = ctx;
    atomic_init(&p->holding, true);
    pthread_mutex_init(&p->lock, NULL);
    if (!(flags & GM_POOL_CONTEXT_OWNED))
        gpumem_context_retain(ctx);
    pthread_mutex_lock(&live_lock);
    p->live_next = live_pools;
    if (live_pools != NULL)
        live_pools->live_prev = p;
    live_pools = p;
    pthread_mutex_unlock(&live_lock);
    *out = p;
    return GPUMEM_OK;
}

/* Frees what is left of a pool that holds nothing and has no live
 * allocation.  Threads whose slots still name a cache never match the
 * pool's id again; they only drop their reference to it. */
static void pool_end(gm_pool *p)
{
    while (p->tcaches != NULL) {
        gm_tcache *tc = p->tcaches;
        p->tcaches = tc->next;
        atomic_store_explicit(&tc->state, TC_DEAD, memory_order_release);
        tc_unref(tc);
    }
    for (unsigned i = 0; i <= p->stripe_mask; i++)
        pthread_mutex_destroy(&p->stripes[i].lock);
    pthread_mutex_destroy(&p->lock);
    if (!(p->flags & GM_POOL_CONTEXT_OWNED))
        gpumem_context_release(p->ctx);
    gm_handle_free(p);
}

static void (*_Atomic destroy_hook)(void);

void gm_pool_set_destroy_hook(void (*hook)(void))
{
    atomic_store_explicit(&destroy_hook, hook, memory_order_release);
}

bool gm_pool_token_pool_live(const gpumem_allocation *token)
{
    uint32_t htag;
    gm_rec *r = rec_of(token, &htag);
    return r != NULL && gm_handle_live(r->pool, r->pool->kind == GM_POOL_DEVICE ? GM_HANDLE_POOL : GM_HANDLE_HOST_POOL);
}

gpumem_status gm_pool_core_destroy(gm_pool *p, const char *what)
{
    /* Dead for its users (the public destroy did this already). */
    (void)gm_handle_kill(p, p->kind == GM_POOL_DEVICE ? GM_HANDLE_POOL : GM_HANDLE_HOST_POOL);
    /* The blocks that the caches above keep come back now: one kept by a
     * context's cache (the copy engine's device scratch) would keep this
     * pool from ending, and its reference from ever letting the context end
     * (gm_pool_set_destroy_hook). */
    void (*hook)(void) = atomic_load_explicit(&destroy_hook, memory_order_acquire);
    if (hook != NULL)
        hook();
    /* Frees racing with this see holding false inside their cache or under
     * their stripe's lock (the release below enters every cache and locks
     * every stripe after this store), and go to the driver; the zombie
     * count below includes them. */
    pthread_mutex_lock(&live_lock);
    if (p->live_prev != NULL)
        p->live_prev->live_next = p->live_next;
    else
        live_pools = p->live_next;
    if (p->live_next != NULL)
        p->live_next->live_prev = p->live_prev;
    pthread_mutex_unlock(&live_lock);
    atomic_store(&p->holding, false);
    gpumem_status st = release_all(p, what, NULL, NULL);
    pthread_mutex_lock(&p->lock);
    harvest_orphans(p);
    gm_sums s = sum_locked(p);
    p->destroyed = true;
    p->zombie_live = p->blocks - s.held_blocks + p->empty_live;
    bool end = p->zombie_live <= 0;
    pthread_mutex_unlock(&p->lock);
    if (end)
        pool_end(p);
    return st;
}

gpumem_status gm_pool_core_free_held(gm_pool *p, bool stop, const char *what)
{
    if (stop)
        atomic_store(&p->holding, false);
    uint64_t blocks = 0, bytes = 0;
    gpumem_status st = release_all(p, what, &blocks, &bytes);
    GM_TRACE(gm_trace_trim(p->ctx, p->ctx->device,
                           p->kind == GM_POOL_DEVICE ? GPUMEM_MEMORY_DEVICE : GPUMEM_MEMORY_PINNED, p, bytes, blocks));
    return st;
}

/* ---- allocation ---- */

static gpumem_status empty_alloc(gm_pool *p, const char *what, uint64_t *addr, gpumem_allocation **token)
{
    gm_rec *r = rec_get();
    if (r == NULL)
        return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory for the allocation record", what);
    r->pool = p;
    r->cls = REC_EMPTY;
    r->addr = 0;
    r->requested = 0;
    pthread_mutex_lock(&p->lock);
    p->empty_live++;
    pthread_mutex_unlock(&p->lock);
    uint32_t tag = atomic_load_explicit(&r->tag, memory_order_relaxed) | 1u;
    atomic_store_explicit(&r->tag, tag, memory_order_release);
    *addr = 0;
    *token = handle_of(r, tag);
    return GPUMEM_OK;
}

void gm_pool_core_count_retry(gm_pool *p)
{
    pthread_mutex_lock(&p->lock);
    p->oom_retries++;
    pthread_mutex_unlock(&p->lock);
}

gpumem_status gm_pools_release_held(const gm_dctx *dctx, gm_pool_kind kind, const char *what, uint64_t *blocks,
                                    uint64_t *bytes)
{
    gpumem_status st = GPUMEM_OK;
    *blocks = *bytes = 0;
    pthread_mutex_lock(&live_lock);
    for (gm_pool *p = live_pools; p != NULL; p = p->live_next) {
        if (p->kind != kind || p->ctx->dctx != dctx)
            continue;
        uint64_t n = 0, b = 0;
        st = gm_keep_first(st, release_all(p, what, &n, &b));
        *blocks += n;
        *bytes += b;
    }
    pthread_mutex_unlock(&live_lock);
    return st;
}

/* A block from the shared store, or a new one from the driver; NULL with
 * *stp set on failure (and *oom when the driver is out of memory). */
static gm_rec *alloc_slow(gm_pool *p, unsigned cls, size_t size, uintptr_t key, const char *what,
                          gpumem_status *stp, bool *oom)
{
    gpumem_status st = GPUMEM_OK;
    size_t bytes = gm_pool_class_bytes(cls);
    unsigned own = my_stripe(p);
    gm_rec *r;
    /* Before asking the driver, once: blocks that exited threads left behind. */
    for (bool again = true;; again = false)
        if ((r = stripes_take(p, own, cls, size, key, what, &st)) != NULL || st != GPUMEM_OK || !again ||
            !maybe_harvest(p))
            break;
    if (st != GPUMEM_OK || r != NULL) {
        if (r != NULL)
            r->stripe = own;
        *stp = st;
        return r;
    }

    r = rec_get();
    if (r == NULL) {
        *stp = gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory for the allocation record", what);
        return NULL;
    }
    uint64_t addr = 0;
    int rc = drv_alloc(p, bytes, what, &addr, stp);
    if (rc == GM_CUDA_ERROR_OUT_OF_MEMORY) {
        /* The allocator's ladder (alloc.c) releases and retries. */
        rec_put(r);
        *stp = p->kind == GM_POOL_DEVICE ? GPUMEM_ERROR_OUT_OF_MEMORY : GPUMEM_ERROR_HOST_OUT_OF_MEMORY;
        *oom = true;
        return NULL;
    }
    if (rc != 0) {
        rec_put(r);
        if (rc > 0) {
            char where[200];
            snprintf(where, sizeof where, "%s: a block of %zu bytes", what, bytes);
            *stp = gm_drv_check(rc, p->kind == GM_POOL_DEVICE ? GM_OP_mem_alloc : GM_OP_mem_host_alloc, where);
        }
        return NULL;
    }
    r->pool = p;
    r->cls = cls;
    r->stripe = own;
    r->addr = addr;
    pthread_mutex_lock(&p->lock);
    p->misses++;
    p->blocks++;
    p->bytes += (int64_t)bytes;
    p->act_req += (int64_t)size;
    sample_peak_locked(p); /* a new block: the one moment active bytes can pass the last driver peak */
    pthread_mutex_unlock(&p->lock);
    /* The same moment for the context's books: a sample with no pool lock
     * held (it reads every pool of the device). */
    gm_memstats_sample(p->ctx);
    return r;
}

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
        return empty_alloc(p, what, addr, token);
    if (size > GM_POOL_MAX_SIZE)
        return gm_error(GPUMEM_ERROR_OVERFLOW, "%s: size %zu is larger than a pool's largest block (%zu bytes)",
                        what, size, (size_t)GM_POOL_MAX_SIZE);
    uintptr_t key = stream_key(stream);
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
        if ((r = alloc_slow(p, cls, size, key, what, &st, oom)) == NULL)
            return st;
    }
    /* A block taken pending on this stream is ordered for the new owner;
     * its event stays with it, to be recorded again at the next free. */
    r->key = 0;
    r->requested = size;
    uint32_t tag = atomic_load_explicit(&r->tag, memory_order_relaxed) | 1u;
    atomic_store_explicit(&r->tag, tag, memory_order_release);
    *addr = r->addr;
    *token = handle_of(r, tag);
    return GPUMEM_OK;
}

/* ---- free ---- */

/* Counts the end of a live allocation of a destroyed pool (pool->lock
 * held); the pool ends with the last one. */
static void count_end_locked(gm_pool *p, bool *end)
{
    if (p->destroyed && --p->zombie_live <= 0)
        *end = true;
}

static gpumem_status empty_free(gm_pool *p, gm_rec *r)
{
    bool end = false;
    pthread_mutex_lock(&p->lock);
    p->empty_live--;
    count_end_locked(p, &end);
    pthread_mutex_unlock(&p->lock);
    rec_put(r);
    if (end)
        pool_end(p);
    return GPUMEM_OK;
}

/* Gives a freed block to the driver, as a pool that does not hold (or
 * whose free could not record its event) does.  sync: the stream to wait
 * for when the block has no event recorded. */
static gpumem_status free_direct(gm_pool *p, gm_rec *r, gpumem_stream *sync, const char *what)
{
    /* The block goes to the driver before it leaves the books: until then a
     * concurrent destroy counts it live, so the pool cannot end while this
     * thread still reads it (TSan found the other order). */
    gpumem_status st = release_block(p, r, sync, what);
    bool end = false;
    pthread_mutex_lock(&p->lock);
    p->blocks--;
    p->bytes -= (int64_t)gm_pool_class_bytes(r->cls);
    p->act_req -= (int64_t)r->requested;
    p->driver_frees++;
    count_end_locked(p, &end);
    pthread_mutex_unlock(&p->lock);
    rec_put(r);
    if (end)
        pool_end(p);
    return st;
}

/* The block goes to its home stripe (or, when the pool does not hold, to
 * the driver).  A full thread-cache bin first sends its older half
 * to the stripe, so the cache keeps the most recently freed blocks.
 * Whether the pool holds is read inside the cache or under the stripe's
 * lock: a thread that stops the pool clears holding, then enters every cache
 * and locks every stripe, so no block is left behind. */
static gpumem_status free_slow(gm_pool *p, gm_tcache *tc, gm_rec *r, gpumem_stream *stream, const char *what)
{
    int64_t bytes = (int64_t)gm_pool_class_bytes(r->cls);
    maybe_harvest(p);
    gm_stripe *s = &p->stripes[r->stripe];
    if (tc != NULL && r->cls < TC_CLASSES) {
        tc_enter(tc);
        if (!atomic_load_explicit(&p->holding, memory_order_relaxed)) {
            tc_exit(tc);
            return free_direct(p, r, stream, what);
        }
        unsigned cls = r->cls, half = TC_DEPTH / 2;
        gm_rec **b = tc->bin[cls];
        if (GET(tc->held_bytes) + bytes <= TC_MAX_BYTES) {
            if (TC_N(tc, cls) == TC_DEPTH) {
                pthread_mutex_lock(&s->lock); /* inside the cache: see the lock order in pool.h */
                for (unsigned i = 0; i < half; i++)
                    store_put(s, b[i]);
                pthread_mutex_unlock(&s->lock);
                for (unsigned i = 0; i + half < TC_DEPTH; i++)
                    b[i] = b[i + half];
                TC_SET_N(tc, cls, TC_DEPTH - half);
                ADD(tc->held_blocks, -(int64_t)half);
                ADD(tc->held_bytes, -(int64_t)half * bytes);
            }
            unsigned n = TC_N(tc, cls);
            b[n] = r;
            TC_SET_N(tc, cls, n + 1);
            ADD(tc->held_blocks, 1);
            ADD(tc->held_bytes, bytes);
            ADD(tc->act_req, -(int64_t)r->requested);
            tc_exit(tc);
            return GPUMEM_OK;
        }
        tc_exit(tc);
    }
    pthread_mutex_lock(&s->lock);
    if (!atomic_load_explicit(&p->holding, memory_order_relaxed)) {
        pthread_mutex_unlock(&s->lock);
        return free_direct(p, r, stream, what);
    }
    store_put(s, r);
    ADD(s->act_req, -(int64_t)r->requested);
    pthread_mutex_unlock(&s->lock);
    return GPUMEM_OK;
}

gpumem_status gm_pool_release(gpumem_allocation *a, gpumem_stream *stream, const char *what)
{
    if (a == NULL)
        return gm_error(GPUMEM_ERROR_NULL_ARGUMENT, "%s: argument 'alloc' is NULL", what);
    uint32_t htag;
    gm_rec *r = rec_of(a, &htag);
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
        return empty_free(p, r);
    GM_TRACE(gm_trace_free(p->ctx, p->ctx->device, stream, GM_TRACE_KIND_UNKNOWN, p, r->requested, r->addr));
    if (!atomic_load_explicit(&p->holding, memory_order_relaxed))
        return free_direct(p, r, stream, what);
    if (stream != NULL) {
        gpumem_status st = record_free(p, r, stream, what);
        if (st != GPUMEM_OK) {
            /* The block cannot be told apart from its pending work: it goes
             * to the driver after the stream's work. */
            return gm_keep_first(st, free_direct(p, r, stream, what));
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
            tc->bin[cls][n] = r;
            TC_SET_N(tc, cls, n + 1);
            ADD(tc->held_blocks, 1);
            ADD(tc->held_bytes, bytes);
            ADD(tc->act_req, -(int64_t)r->requested);
            tc_exit(tc);
            return GPUMEM_OK;
        }
        tc_exit(tc);
    }
    return free_slow(p, tc, r, stream, what);
}

/* ---- queries ---- */

void gm_pool_core_stats(gm_pool *p, struct gpumem_pool_stats *s)
{
    pthread_mutex_lock(&p->lock);
    sample_peak_locked(p);
    gm_sums sum = sum_locked(p);
    s->held_blocks = (uint64_t)sum.held_blocks;
    s->held_bytes = (uint64_t)sum.held_bytes;
    s->active_blocks = (uint64_t)(p->blocks - sum.held_blocks);
    s->active_bytes = (uint64_t)(p->bytes - sum.held_bytes);
    s->active_requested_bytes = (uint64_t)sum.act_req;
    s->peak_active_bytes = p->peak;
    s->hits = sum.hits;
    s->misses = p->misses;
    s->oom_retries = p->oom_retries;
    s->driver_frees = p->driver_frees;
    pthread_mutex_unlock(&p->lock);
}

/* The largest held block of p (pool->lock held): the highest class with a
 * block in a stripe (under its lock; empty stripes skipped) or in a thread
 * cache (its bins' counts, read from outside: exact when the pool is
 * quiet). */
static uint64_t largest_held_locked(gm_pool *p)
{
    unsigned top = 0; /* the highest class seen, plus one */
    for (gm_tcache *tc = p->tcaches; tc != NULL; tc = tc->next)
        for (unsigned c = TC_CLASSES; c > top; c--)
            if (TC_N(tc, c - 1) != 0) {
                top = c;
                break;
            }
    for (unsigned i = 0; i <= p->stripe_mask; i++) {
        gm_stripe *st = &p->stripes[i];
        if (GET(st->held_blocks) == 0)
            continue;
        pthread_mutex_lock(&st->lock);
        for (unsigned c = GM_POOL_CLASSES; c > top; c--)
            if (st->store[c - 1].idle != NULL || st->store[c - 1].pending_head != NULL) {
                top = c;
                break;
            }
        pthread_mutex_unlock(&st->lock);
    }
    return top == 0 ? 0 : (uint64_t)gm_pool_class_bytes(top - 1);
}

void gm_pools_usage(int device, bool largest, void (*fn)(const gm_pool_usage *u, void *arg), void *arg)
{
    pthread_mutex_lock(&live_lock);
    for (gm_pool *p = live_pools; p != NULL; p = p->live_next) {
        if (device >= 0 && p->ctx->device != device)
            continue;
        gm_pool_usage u = {.ctx = p->ctx, .handle = p, .kind = p->kind,
                           .mapped = p->kind == GM_POOL_HOST && (p->alloc_flags & GM_CU_MEMHOSTALLOC_DEVICEMAP) != 0,
                           .own = (p->flags & GM_POOL_CONTEXT_OWNED) != 0};
        pthread_mutex_lock(&p->lock);
        gm_sums sum = sum_locked(p);
        u.bytes = (uint64_t)p->bytes;
        u.held_blocks = (uint64_t)sum.held_blocks;
        u.held_bytes = (uint64_t)sum.held_bytes;
        u.active_blocks = (uint64_t)(p->blocks - sum.held_blocks);
        u.active_bytes = (uint64_t)(p->bytes - sum.held_bytes);
        u.active_requested = (uint64_t)sum.act_req;
        if (largest)
            u.largest_held = largest_held_locked(p);
        pthread_mutex_unlock(&p->lock);
        fn(&u, arg);
    }
    pthread_mutex_unlock(&live_lock);
}

gpumem_status gm_pool_stats_out(gm_pool *p, struct gpumem_pool_stats *out, const char *what)
{
    const size_t first = offsetof(struct gpumem_pool_stats, held_blocks);
    if (out->size < first + sizeof out->held_blocks)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: stats->size is %zu; set it to "
                        "sizeof(struct gpumem_pool_stats) (%zu)", what, out->size, sizeof(struct gpumem_pool_stats));
    struct gpumem_pool_stats s;
    memset(&s, 0, sizeof s);
    gm_pool_core_stats(p, &s);
    size_t n = out->size < sizeof s ? out->size : sizeof s;
    memcpy((char *)out + first, (const char *)&s + first, n - first);
    if (out->size > sizeof s)
        memset((char *)out + sizeof s, 0, out->size - sizeof s); /* fields of later versions */
    return GPUMEM_OK;
}

gpumem_status gm_pool_core_check(const gm_pool *p, gm_pool_kind kind, const char *what, const char *arg)
{
    return gm_handle_check(p, kind == GM_POOL_DEVICE ? GM_HANDLE_POOL : GM_HANDLE_HOST_POOL, what, arg);
}

gpumem_context *gm_pool_core_context(const gm_pool *p)
{
    return p->ctx;
}

bool gm_pool_core_holds_context(const gm_pool *p)
{
    return !(p->flags & GM_POOL_CONTEXT_OWNED);
}

unsigned gm_pool_core_alloc_flags(const gm_pool *p)
{
    return p->alloc_flags;
}

/* ---- allocations ------------------------------------------------------------------- */

GPUMEM_API gpumem_status gpumem_allocation_free(gpumem_allocation *alloc, gpumem_stream *stream)
{
    GM_CHECK_HANDLE_OR_NULL(stream);
    gpumem_context *ctx = NULL;
    if (gm_leaks_enabled()) { /* the record names the pool, which the free may end */
        gpumem_status st = GPUMEM_OK;
        gm_rec *r = rec_live(alloc, "gpumem_allocation_free", &st);
        ctx = r != NULL ? r->pool->ctx : NULL;
    }
    gpumem_status st = gm_pool_release(alloc, stream, "gpumem_allocation_free");
    if (st == GPUMEM_OK && ctx != NULL)
        gm_leak_forget(ctx, (uintptr_t)alloc);
    return st;
}

GPUMEM_API gpumem_status gpumem_allocation_pointer(const gpumem_allocation *alloc, uint64_t *pointer)
{
    GM_CHECK_NULL(pointer);
    gpumem_status st = GPUMEM_OK;
    gm_rec *r = rec_live(alloc, "gpumem_allocation_pointer", &st);
    if (r != NULL)
        *pointer = r->addr;
    return st;
}

GPUMEM_API gpumem_status gpumem_allocation_host_pointer(const gpumem_allocation *alloc, void **pointer)
{
    GM_CHECK_NULL(pointer);
    gpumem_status st = GPUMEM_OK;
    gm_rec *r = rec_live(alloc, "gpumem_allocation_host_pointer", &st);
    if (r == NULL)
        return st;
    if (r->pool->kind != GM_POOL_HOST)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "gpumem_allocation_host_pointer: 'alloc' is device memory "
                        "(use gpumem_allocation_pointer)");
    *pointer = (void *)(uintptr_t)r->addr;
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_allocation_size(const gpumem_allocation *alloc, size_t *size)
{
    GM_CHECK_NULL(size);
    gpumem_status st = GPUMEM_OK;
    gm_rec *r = rec_live(alloc, "gpumem_allocation_size", &st);
    if (r != NULL)
        *size = r->requested;
    return st;
}
