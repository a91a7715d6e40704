/*
 * pool.h - device and page-locked memory pools (private): the internal API
 * that arrays use to allocate from a pool, and the core that pool.c,
 * pool_cache.c, pool_store.c and allocation.c implement for both kinds of
 * pool (pool_impl.h says which file does what; device_pool.c and
 * host_pool.c are the pools' public faces).
 *
 * Design (the public header says what users see):
 *  - Blocks and handles.  Every block is described by a record (one cache
 *    line) in one process-wide table whose records are never freed, only
 *    recycled; a handle encodes (record index, record tag), where the tag
 *    is generation << 1 | live.  A free claims the record with one
 *    compare-and-swap of the tag, so stale and concurrent double frees are
 *    caught without touching freed memory.
 *  - Size classes (gm_pool_class_of): 256-byte steps up to 8 KiB, then 16
 *    classes per power of two; padding < max(256 bytes, size/16).
 *  - Thread caches.  Each thread has, per pool it uses, a cache of up to 8
 *    held blocks per class for classes up to 1 MiB (16 MiB in all).  Its
 *    owner enters it on every operation with a plain store and a load (no
 *    atomic read-modify-write): an asymmetric Dekker handshake in which the
 *    rare other side (free_held, stop_holding, the OOM ladder, destroy)
 *    pays with one membarrier(2) for all caches; without membarrier both
 *    sides use sequentially consistent operations.  The process registers
 *    for membarrier once, at its first thread cache, on a worker thread
 *    (workers.h): the registration waits for an RCU grace period, 8 to 13
 *    ms, which the first allocation used to pay (issue 19); caches work in
 *    the symmetric mode until it is done.  The caches' counters
 *    are single-writer relaxed atomics, so statistics never enter a cache.
 *    The pool and the thread own a cache jointly (a reference count): a
 *    thread that exits (or evicts the pool from its 4 slots) marks its cache
 *    orphaned with one CAS and bumps a process-wide counter, without
 *    touching the pool (it may have ended).  A pool whose last harvest saw
 *    an older count takes orphaned caches' blocks back (gm_tc_harvest_orphans)
 *    before it asks the driver for a block, and on a slow-path free; an
 *    unchanged count costs two loads.  Pool ids are never reused, so a
 *    thread's stale slot never matches a new pool.
 *  - Shared store: blocks above 1 MiB, cache overflow, orphaned caches, and
 *    everything with GPUMEM_POOL_NO_THREAD_CACHE.  It is split into stripes
 *    (a power of two, one per core, 4 to 16), each on its own cache lines
 *    with its own mutex and, per class, a LIFO of idle blocks and a FIFO of
 *    blocks whose free recorded an event, plus its held, requested and hit
 *    counters.  Each thread gets a stripe number once, round robin, so that
 *    as many threads as there are stripes never share one.  An allocation
 *    looks in the thread's stripe first, then in the others (a stripe whose
 *    held count reads 0 is skipped without locking it): first for a block
 *    freed on the same stream or an idle one, then querying at most 2
 *    pending events, oldest first; only then does it ask the driver.  A block freed goes to its home stripe,
 *    that of the thread that last took it from the store or the driver
 *    (kept in its record): a free needs no thread-local lookup, and a thread
 *    that allocates for others to free gets its blocks back in its own
 *    stripe.  Why stripes: a single mutex, taken by every store operation,
 *    collapsed under contention (8 threads did 0.13x one thread's work);
 *    per-class locks would not help threads that use one size, and lock-free
 *    lists need a safe-reclamation scheme for the pending FIFO's scans.
 *    With a stripe per thread, the store's hits and frees touch no line that
 *    another thread writes.  The pool-wide books that change only with the
 *    driver (blocks, bytes, misses, driver frees, the peak) stay under the
 *    pool's mutex.
 *  - Peak.  The highest active bytes is sampled when the pool gets a block
 *    from the driver and at every statistics call (each sample sums every
 *    stripe and cache), not at hits: a hit would have to read every other
 *    thread's counters.  Active bytes rise above their last sample at a
 *    miss only if hits took held blocks in between, so a peak made of hits
 *    alone between two samples can be missed.
 *  - Streams.  A block freed on a stream carries that stream's key (the
 *    driver stream, or 1 for the legacy default stream) and an event
 *    recorded at the free.  Reuse on the same key is immediate; on another
 *    key, or for a NULL-stream or host allocation, only once the event's
 *    query says it completed (at most 2 queries per allocation).  Blocks
 *    given back to the driver wait for their event first.  Events are
 *    pooled with their blocks: a block's event is made at its first free on
 *    a stream, recorded again at each later one, and destroyed with it.
 *  - Lifetime.  A destroyed pool with live allocations becomes a zombie:
 *    it holds nothing, frees go to the driver, the last one frees the pool.
 *  - Sources.  Every block comes from the pool's memory source (source.h)
 *    and goes back to it: cuMemAlloc, cuMemHostAlloc, the driver's
 *    stream-ordered pool, or a virtual-memory reservation whose extents
 *    merge.  For a source that merges, blocks above the thread caches'
 *    classes are exact (GM_POOL_EXACT below), and a miss that the source
 *    cannot serve without mapping first gives the store's idle blocks back
 *    to it (gm_pool_reclaim, pool_store.c).
 *
 * Lock order: the live-pool list, then pool->lock, then entering a thread
 * cache (others enter only while holding pool->lock), then one stripe's
 * mutex (never two at once); the record table's lock is a leaf.  So:
 * release_all (free_held, stop_holding, destroy, the OOM ladder) holds
 * pool->lock, enters every cache, then locks each stripe in turn; an owner
 * inside its cache may lock a stripe (to spill half a full bin) but never
 * takes pool->lock there; a thread holding a stripe takes no other lock of
 * the pool and enters no cache; gm_tc_harvest_orphans locks a stripe under
 * pool->lock.
 * Whether the pool holds is read inside a cache or under a stripe's mutex:
 * stop_holding and destroy clear it before release_all, which enters every
 * cache and locks every stripe, so no block is put where it would be missed.
 * Driver calls for blocks are made with no lock held, except event records
 * and queries (inside a cache or under a stripe's mutex, both short).
 */
#ifndef GM_POOL_H
#define GM_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "context.h"
#include "driver.h"
#include "source.h"
#include "gpumem/pool.h"
#include "gpumem/stream.h"

/* ---- for the rest of the library -------------------------------------------------- */

/* Gives a device or host block back, as gpumem_allocation_free: stream is
 * the stream whose queued work may still use it (NULL: none).  With
 * legacy_only, and stream the legacy default stream (its driver stream
 * NULL), the caller says that the block's work was queued on that stream
 * only: the free queues nothing, an allocation on the legacy stream reuses
 * the block at once, and one on another stream first records the block's
 * event on the legacy stream (then: it covers at least the block's work)
 * and takes it once that has completed. */
gpumem_status gm_pool_release_as(gpumem_allocation *token, gpumem_stream *stream, bool legacy_only,
                                 const char *what);

static inline gpumem_status gm_pool_release(gpumem_allocation *token, gpumem_stream *stream, const char *what)
{
    return gm_pool_release_as(token, stream, false, what);
}

/* Whether the pool of token, a live allocation, is live: false once it was
 * destroyed, when its end, and with it its reference to its context, waits
 * for the block to come back. */
bool gm_pool_token_pool_live(const gpumem_allocation *token);

/* Sets what a pool's destroy calls once its handle is dead, before it
 * gives its held blocks back: the caches of the layers above give back the
 * blocks of destroyed pools that they keep (gm_alloc_keepable), so that the
 * pool, and its reference to its context, can end.  lib/wiring.c sets it
 * when the library loads. */
void gm_pool_set_destroy_hook(void (*hook)(void));

/* ---- for the out-of-memory ladder ---- */

typedef enum gm_pool_kind { GM_POOL_DEVICE, GM_POOL_HOST } gm_pool_kind;
typedef struct gm_pool gm_pool;

/* Gives every block held by the live pools of one kind on dctx's device
 * back to the driver; *blocks and *bytes get how many. */
gpumem_status gm_pools_release_held(const gm_dctx *dctx, gm_pool_kind kind, const char *what, uint64_t *blocks,
                                    uint64_t *bytes);

/* Counts a retry of the ladder in p's statistics. */
void gm_pool_core_count_retry(gm_pool *p);

/* ---- for the memory report (memstats.c) ---- */

/* A pool's books at one moment.  Bytes are block bytes but active_requested. */
typedef struct gm_pool_usage {
    gpumem_context *ctx;
    const void *handle;     /* its public handle: a gpumem_pool or a gpumem_host_pool */
    gm_pool_kind kind;
    bool mapped;            /* a page-locked pool of DEVICEMAP blocks */
    bool own;               /* the context's own pool (GPUMEM_ALLOCATOR=pool) */
    uint64_t bytes;         /* from the driver, in use or held (a virtual-memory pool: mapped) */
    uint64_t held_blocks, held_bytes, largest_held;
    uint64_t active_blocks, active_bytes, active_requested;
    bool destroyed;         /* a destroyed pool whose allocations still live (a zombie): not a pool of the
                             * reports, but its live blocks are memory the process holds */
} gm_pool_usage;

/* Calls fn for every live pool (not destroyed) of device `device` (every
 * device when negative), then for every destroyed pool whose allocations
 * still live (destroyed set), under the live-pool list's lock: fn must not
 * call into pools.  largest: find each pool's largest held block too (every
 * stripe is locked in turn), else largest_held is 0. */
void gm_pools_usage(int device, bool largest, void (*fn)(const gm_pool_usage *u, void *arg), void *arg);

/* ---- size classes ---------------------------------------------------------------- */

#define GM_POOL_GRANULE 256u
/* Largest size with a class: half the address space. */
#define GM_POOL_MAX_SIZE ((SIZE_MAX >> 1) + 1)
/* 32 granule classes up to 8 KiB, then 16 per power of two up to GM_POOL_MAX_SIZE. */
#define GM_POOL_CLASSES (32u + (unsigned)(sizeof(size_t) * 8 - 14) * 16u)

/* The class of size, 1 <= size <= GM_POOL_MAX_SIZE. */
static inline unsigned gm_pool_class_of(size_t size)
{
    if (size <= 8192)
        return (unsigned)((size - 1) >> 8);
    size_t s = size - 1; /* 2^k <= s < 2^(k+1), k >= 13 */
    unsigned k = (unsigned)(sizeof(unsigned long long) * 8 - 1) - (unsigned)__builtin_clzll(s);
    unsigned shift = k - 4;
    unsigned m = (unsigned)(s >> shift) + 1; /* 17..32 */
    return 32u + (k - 13u) * 16u + (m - 17u);
}

/* The block bytes of class c. */
static inline size_t gm_pool_class_bytes(unsigned c)
{
    if (c < 32)
        return (size_t)(c + 1) << 8;
    unsigned k = 13u + (c - 32u) / 16u;
    size_t m = 17u + (c - 32u) % 16u;
    return m << (k - 4u);
}

/* Exact blocks: a pool whose source merges what it gets back (virtual
 * memory) takes blocks above the thread caches' classes at their size,
 * rounded up to GM_POOL_EXACT_UNIT bytes, not their class's: a record's
 * cls is then GM_POOL_EXACT plus the units, and the block is kept in the
 * store list of its size's class (gm_pool_list_of), where a request takes
 * it only if it is large enough.  Up to 2^31 - 2 units (1 TiB). */
#define GM_POOL_EXACT 0x80000000u
#define GM_POOL_EXACT_UNIT 512u
#define GM_POOL_EXACT_MAX ((size_t)(0x7ffffffeu) * GM_POOL_EXACT_UNIT)

/* The bytes of a block whose record's cls is cls (a class, or exact). */
static inline size_t gm_pool_block_bytes(uint32_t cls)
{
    return cls >= GM_POOL_EXACT ? (size_t)(cls - GM_POOL_EXACT) * GM_POOL_EXACT_UNIT : gm_pool_class_bytes(cls);
}

/* The store list of a block whose record's cls is cls. */
static inline unsigned gm_pool_list_of(uint32_t cls)
{
    return cls >= GM_POOL_EXACT ? gm_pool_class_of(gm_pool_block_bytes(cls)) : cls;
}

/* ---- the core, for the pools' public faces and the allocator --------------------- */

/* Public handles are the core object. */
static inline gm_pool *gm_pool_of_device(const gpumem_pool *p) { return (gm_pool *)(uintptr_t)p; }
static inline gm_pool *gm_pool_of_host(const gpumem_host_pool *p) { return (gm_pool *)(uintptr_t)p; }

/* An internal flag: the pool is its context's own (GPUMEM_ALLOCATOR=pool),
 * made and destroyed with the context, and holds no reference to it. */
#define GM_POOL_CONTEXT_OWNED 0x80000000u

/* The pool's context, not retained again: the one accessor, for either
 * kind of pool (gm_pool_of_device, gm_pool_of_host). */
gpumem_context *gm_pool_context(const gm_pool *p);
/* Whether the pool holds a reference to its context (all but the
 * context's own). */
bool gm_pool_holds_context(const gm_pool *p);
/* The GPUMEM_HOST_ALLOC_* flags that a page-locked pool's blocks are
 * allocated with (0 for a device pool). */
unsigned gm_pool_alloc_flags(const gm_pool *p);
/* Every GPUMEM_HOST_ALLOC_* flag a page-locked pool takes. */
#define GM_POOL_HOST_ALLOC_FLAGS \
    (GPUMEM_HOST_ALLOC_PORTABLE | GPUMEM_HOST_ALLOC_DEVICEMAP | GPUMEM_HOST_ALLOC_WRITECOMBINED)

/* flags: GPUMEM_POOL_NO_THREAD_CACHE, GM_POOL_CONTEXT_OWNED; src: the
 * memory source the pool's blocks come from (source.h; a device pool's is
 * device memory, a host pool's page-locked memory). */
gpumem_status gm_pool_core_create(gm_pool_kind kind, gpumem_context *ctx, unsigned flags,
                                  const gm_source_config *src, const char *what, gm_pool **out);
/* A pool of either kind made from the properties a caller gave
 * (pool_props.c checks every field; gpumem/pool.h says what each may hold). */
gpumem_status gm_pool_core_create_props(gm_pool_kind kind, gpumem_context *ctx, const struct gpumem_pool_props *props,
                                        const char *what, gm_pool **out);
/* Gives every held block back (as free_held), then, for a source that
 * grows and shrinks, unmaps idle chunks until at most keep bytes of them
 * remain. */
gpumem_status gm_pool_core_trim(gm_pool *p, uint64_t keep, const char *what);
/* The pool's memory source. */
gm_source *gm_pool_source(const gm_pool *p);
/* The block bytes an allocation of size > 0 bytes takes from p (its class's,
 * or exact, see GM_POOL_EXACT), and the driver call that gets the pool its
 * memory ("cuMemAlloc", "cuMemHostAlloc", "cuMemCreate",
 * "cuMemAllocFromPoolAsync"): for out-of-memory messages. */
size_t gm_pool_block_for(const gm_pool *p, size_t size);
const char *gm_pool_alloc_call(const gm_pool *p);
gpumem_status gm_pool_core_destroy(gm_pool *p, const char *what);
/* size bytes for use on stream (NULL: synchronous use; host pools pass
 * NULL); *addr: device address or host address.  size 0 gives address 0
 * and a valid token.  When the driver is out of memory: *oom is set and
 * the status is GPUMEM_ERROR_(HOST_)OUT_OF_MEMORY with no message, and
 * nothing was released: the allocator's ladder (alloc.c) releases, retries
 * and words the error (gm_mem_oom_error, memstats.h). */
gpumem_status gm_pool_core_alloc(gm_pool *p, size_t size, gpumem_stream *stream, const char *what,
                                 uint64_t *addr, gpumem_allocation **token, bool *oom);
gpumem_status gm_pool_core_free_held(gm_pool *p, bool stop, const char *what);
void gm_pool_core_stats(gm_pool *p, struct gpumem_pool_stats *s); /* fills every field but size */
gpumem_status gm_pool_core_check(const gm_pool *p, gm_pool_kind kind, const char *what, const char *arg);
/* For pool IPC (pool_ipc.c): a pool's source, and the pool, address and
 * requested bytes of a live allocation (else a status naming 'alloc'). */
gm_source *gm_pool_core_source(gm_pool *p);
gpumem_status gm_pool_token_block(const gpumem_allocation *a, const char *what, gm_pool **pool, uint64_t *addr,
                                  size_t *requested);
gpumem_status gm_pool_stats_out(gm_pool *p, struct gpumem_pool_stats *out, const char *what);

/* The thread caches' process-lifetime hook (lifecycle.h): thread exit. */
extern const struct gm_life_hook gm_pool_cache_life;

#endif /* GM_POOL_H */
