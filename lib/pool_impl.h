/*
 * pool_impl.h - the pool core's own header (private to it): the records,
 * the thread caches, the stripes of the shared store and the pool object,
 * and the calls between the core's files.  pool.h explains the design and
 * the lock order; the core is four files:
 *  - pool.c: a pool's lifecycle (creation, destroy, the end of a zombie),
 *    giving held blocks back, its books and statistics, the live-pool list;
 *  - pool_cache.c: the thread caches, and the allocation and free paths,
 *    which try the calling thread's cache first;
 *  - pool_store.c: the shared store (the stripes' size-class lists) and the
 *    driver calls for blocks;
 *  - allocation.c: the record table behind gpumem_allocation handles, and
 *    the gpumem_allocation_* calls.
 */
#ifndef GM_POOL_IMPL_H
#define GM_POOL_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "pool.h"
#include "stream.h"

/* ---- records and handles (allocation.c) ------------------------------------------- */

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
extern _Atomic(gm_rec *) gm_rec_chunks[REC_MAX_CHUNKS];

/* A record from the table's free list (or a new one), its links and event
 * cleared; NULL when out of host memory or records.  Its tag is kept: the
 * caller sets the live bit. */
gm_rec *gm_rec_get(void);
/* Puts a record whose allocation ended back on the free list. */
void gm_rec_put(gm_rec *r);

static inline gpumem_allocation *gm_rec_handle(const gm_rec *r, uint32_t tag)
{
    uintptr_t h = ((uintptr_t)(tag & HANDLE_TAG_MASK) << HANDLE_INDEX_BITS) | ((uintptr_t)r->index + 1u);
    return (gpumem_allocation *)h;
}

/* The record a handle names, or NULL for a value that was never a handle.
 * *htag gets the handle's tag bits. */
static inline gm_rec *gm_rec_of(const gpumem_allocation *a, uint32_t *htag)
{
    uintptr_t h = (uintptr_t)a;
    uintptr_t low = h & HANDLE_INDEX_MASK;
    *htag = (uint32_t)(h >> HANDLE_INDEX_BITS);
    if (low == 0 || !(*htag & 1u))
        return NULL;
    uintptr_t idx = low - 1u;
    if ((idx >> REC_CHUNK_BITS) >= REC_MAX_CHUNKS)
        return NULL;
    gm_rec *c = atomic_load_explicit(&gm_rec_chunks[idx >> REC_CHUNK_BITS], memory_order_acquire);
    return c != NULL ? &c[idx & (REC_CHUNK - 1u)] : NULL;
}

/* ---- the pool --------------------------------------------------------------------- */

#define TC_CLASSES 144u                  /* classes up to 1 MiB: gm_pool_class_of(1 << 20) == 143 */
#define TC_DEPTH 8u                      /* blocks per class */
#define TC_QUERIES 2                     /* event queries per allocation, at most */

enum { TC_ATTACHED, TC_ORPHANED, TC_DEAD };

/* A thread's cache for one pool.  Its owner enters it (tc_enter) for every
 * operation; others enter it only to take its blocks (gm_tc_enter_all),
 * holding pool->lock.  Its counters are single-writer (whoever is inside)
 * relaxed atomics, so that statistics read them without entering. */
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

struct gm_pool {
    gm_handle h; /* first: the lifecycle check (handles.h): a gpumem_pool or gpumem_host_pool */
    gm_pool_kind kind;
    uint64_t id; /* never reused: thread slots match on it */
    unsigned flags;
    unsigned alloc_flags;
    gm_source *src; /* where blocks come from (source.h); GROW sources merge given-back blocks */
    bool grows;     /* src has GM_SOURCE_CAP_GROW */
    unsigned stripe_mask; /* stripes - 1, a power of two less one */
    gpumem_context *ctx;
    atomic_bool holding;
    _Atomic uint64_t harvested; /* the orphan epoch when this pool last harvested (written under lock) */
    /* On its own cache lines: the fields above are read by every operation. */
    _Alignas(64) pthread_mutex_t lock; /* guards everything below but the stripes */
    bool destroyed;
    int64_t zombie_live;  /* live allocations left once destroyed */
    gm_pool *live_next, *live_prev; /* in the live-pool list until destroyed, then in the zombie
                                     * list until its end when it holds its context (pool.c) */
    bool in_zombies;                /* in the zombie list (live_lock) */
    gm_tcache *tcaches;
    /* Blocks and bytes obtained from the driver and not given back; the
     * requested bytes and hits of misses, direct frees and harvested caches
     * (the stripes and thread caches keep their own held, requested and hit
     * counts); the rest of the books. */
    int64_t blocks, bytes, act_req, empty_live;
    uint64_t hits, misses, oom_retries, driver_frees, peak;
    gm_stripe stripes[]; /* stripe_mask + 1 */
};

/* The calling thread's key for the per-thread default stream
 * (CU_STREAM_PER_THREAD): odd, at least 5 and never reused in the process,
 * so that it is no driver stream's address (aligned), no key of the legacy
 * stream (1, GM_KEY_LEGACY_UNRECORDED) and no key of an exited thread,
 * whose per-thread stream may still have work queued (pool_cache.c). */
uintptr_t gm_pool_per_thread_key(void);

/* The handle of the per-thread default stream, CU_STREAM_PER_THREAD. */
#define GM_DSTREAM_PER_THREAD ((gm_dstream *)(uintptr_t)2)

/* The key a block freed on s is pending under: its driver stream, 1 for
 * the legacy default stream, and for the per-thread default stream a key
 * of the calling thread (each thread's per-thread stream is its own
 * stream, though every thread names it 2). */
static inline uintptr_t gm_stream_key(const gpumem_stream *s)
{
    if (s == NULL)
        return 0;
    gm_dstream *ds = gm_stream_ds(s);
    if (__builtin_expect(ds == GM_DSTREAM_PER_THREAD, 0))
        return gm_pool_per_thread_key();
    return ds != NULL ? (uintptr_t)ds : 1u; /* 1: the legacy default stream */
}

/* The key of a block freed on the legacy default stream with legacy_only
 * (gm_pool_release_as) whose event is not recorded yet: an allocation on
 * the legacy stream (key 1) reuses it at once; anyone else first records
 * its event on the legacy stream (gm_pool_pending_done), and giving it
 * back to the source waits for the legacy stream. */
#define GM_KEY_LEGACY_UNRECORDED ((uintptr_t)3)

/* Whether a held block of key block_key may serve an allocation on stream
 * key at once: it is idle, or freed on that very stream. */
static inline bool gm_key_fits(uintptr_t block_key, uintptr_t key)
{
    return block_key == 0 || block_key == key || (block_key == GM_KEY_LEGACY_UNRECORDED && key == 1);
}

#define ADD(field, d) \
    atomic_store_explicit(&(field), atomic_load_explicit(&(field), memory_order_relaxed) + (d), memory_order_relaxed)
#define GET(field) atomic_load_explicit(&(field), memory_order_relaxed)

/* ---- pool.c: lifecycle and books ---- */

/* Samples the peak of active bytes (pool->lock held). */
void gm_pool_sample_peak_locked(gm_pool *p);
/* A zero-size allocation: a record with no block; its free (the last
 * live allocation of a destroyed pool ends it, and a context's end that
 * this runs fails under what). */
gpumem_status gm_pool_empty_alloc(gm_pool *p, const char *what, uint64_t *addr, gpumem_allocation **token);
gpumem_status gm_pool_empty_free(gm_pool *p, gm_rec *r, const char *what);
/* Gives a freed block to the driver, as a pool that does not hold (or
 * whose free could not record its event) does, and takes it off the books;
 * the last live block of a destroyed pool ends it.  sync: the stream to
 * wait for when the block has no event recorded. */
gpumem_status gm_pool_free_direct(gm_pool *p, gm_rec *r, gpumem_stream *sync, const char *what);

/* ---- pool_cache.c: thread caches ---- */

/* The orphan epoch, for a new pool's harvested count. */
uint64_t gm_tc_orphan_epoch(void);
/* The calling thread's stripe of p. */
unsigned gm_pool_my_stripe(const gm_pool *p);
/* Enters every attached cache of p, with one barrier, and lets them go
 * again (pool->lock held). */
void gm_tc_enter_all(gm_pool *p);
void gm_tc_exit_all(gm_pool *p);
/* Moves every block of a cache to the list *out (through next).  The
 * caller is inside the cache. */
void gm_tc_empty(gm_tcache *tc, gm_rec **out);
/* Takes orphaned caches' blocks and books back (pool->lock held). */
void gm_tc_harvest_orphans(gm_pool *p);
/* Harvests when some thread let go of a cache since p last looked;
 * whether it did. */
bool gm_tc_maybe_harvest(gm_pool *p);
/* The pool ends: drops its references to every cache. */
void gm_tc_end_all(gm_pool *p);

/* ---- pool_store.c: the shared store and the driver's blocks ---- */

/* Puts r in stripe s (its lock held). */
void gm_store_put(gm_stripe *s, gm_rec *r);
/* Moves every block of a stripe to the list *out (through next); the
 * stripe's lock held. */
void gm_store_empty(gm_stripe *s, gm_rec **out);
/* A block from the shared store, or a new one from the driver; NULL with
 * *stp set on failure (and *oom when the driver is out of memory). */
gm_rec *gm_pool_alloc_slow(gm_pool *p, unsigned cls, size_t size, uintptr_t key, const char *what,
                           gpumem_status *stp, bool *oom);
/* Gives a block to its source: waits for the work its free recorded (or,
 * with sync, for all of that stream's), then frees its event and gives the
 * memory back.  The record is left to the caller. */
gpumem_status gm_pool_release_block(gm_pool *p, gm_rec *r, gpumem_stream *sync, const char *what);
/* Records the block's event on stream, making the event the first time. */
gpumem_status gm_pool_record_free(gm_pool *p, gm_rec *r, gpumem_stream *stream, const char *what);
/* Whether a pending block's event has completed: 1 yes (the block is made
 * idle), 0 not yet, -1 the query failed (status in *st). */
int gm_pool_pending_done(gm_pool *p, gm_rec *r, const char *what, gpumem_status *st);
/* A pool whose source merges (p->grows): gives the stripes' idle blocks,
 * and their pending ones whose event has completed, back to the source,
 * where they merge with their neighbours.  The thread caches keep theirs
 * (small blocks).  No lock held; stripes are locked one at a time.  The
 * first driver failure (an event query or destroy) is returned; the other
 * blocks go back all the same. */
gpumem_status gm_pool_reclaim(gm_pool *p, const char *what);

#endif /* GM_POOL_IMPL_H */
