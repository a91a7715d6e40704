/*
 * pool.c - the pool core's pools: creation, destroy and the end of a
 * destroyed pool's last allocation, giving held blocks back, the books and
 * statistics, and the list of live pools that the out-of-memory ladder and
 * the memory report walk.  pool.h explains the design, why the shared
 * store is striped, and the lock order; pool_impl.h lists the core's other
 * files.  The pools' public faces are device_pool.c and host_pool.c; the
 * out-of-memory ladder is the allocator's (alloc.c).
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "pool_impl.h"
#include "trace.h"

#define STRIPES_MIN 4u /* threads outnumber small machines' cores; a preempted lock holder then stalls fewer */
#define STRIPES_MAX 16u

static _Atomic uint64_t next_pool_id = 1;

/* Every pool that is not destroyed, for the out-of-memory ladder
 * (gm_pools_release_held).  Lock order: live_lock, then a pool's locks. */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static gm_pool *live_pools;
/* Destroyed pools whose allocations still live and that hold their context
 * (a context's own pool does not: its end may come first), for the memory
 * report, which counts those allocations (gm_pools_usage); the ladder does
 * not walk them (they hold no block). */
static gm_pool *zombie_pools;

/* Unlinks p from the list whose head is *head (live_lock held). */
static void unlink_locked(gm_pool **head, gm_pool *p)
{
    if (p->live_prev != NULL)
        p->live_prev->live_next = p->live_next;
    else
        *head = p->live_next;
    if (p->live_next != NULL)
        p->live_next->live_prev = p->live_prev;
    p->live_next = p->live_prev = NULL;
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

void gm_pool_sample_peak_locked(gm_pool *p)
{
    gm_sums s = sum_locked(p);
    int64_t active = p->bytes - s.held_bytes;
    if (active > 0 && (uint64_t)active > p->peak)
        p->peak = (uint64_t)active;
}

/* ---- giving held blocks back ---- */

/* Gives every held block back to the source: from orphaned caches, every
 * thread's cache and every stripe, taken while every cache is entered (see
 * the lock order in pool.h).  The blocks leave the pool's books under its
 * lock; the driver calls are made after.  A source that holds memory of
 * its own (virtual memory, the driver's pool) is then trimmed to keep idle
 * bytes (UINT64_MAX: not trimmed).  *blocks and *bytes (optional) get what
 * was given back: the blocks, and the bytes the driver got back (for a
 * source that merges, the mapped bytes that went). */
static gpumem_status release_all(gm_pool *p, uint64_t keep, const char *what, uint64_t *blocks, uint64_t *bytes)
{
    gm_rec *list = NULL;
    pthread_mutex_lock(&p->lock);
    gm_tc_harvest_orphans(p);
    gm_tc_enter_all(p);
    for (gm_tcache *tc = p->tcaches; tc != NULL; tc = tc->next)
        gm_tc_empty(tc, &list);
    for (unsigned i = 0; i <= p->stripe_mask; i++) {
        gm_stripe *s = &p->stripes[i];
        pthread_mutex_lock(&s->lock);
        gm_store_empty(s, &list);
        pthread_mutex_unlock(&s->lock);
    }
    gm_tc_exit_all(p);
    uint64_t n = 0, b = 0;
    for (gm_rec *r = list; r != NULL; r = r->next) {
        n++;
        b += gm_pool_block_bytes(r->cls);
    }
    p->blocks -= (int64_t)n;
    p->bytes -= (int64_t)b;
    p->driver_frees += n;
    pthread_mutex_unlock(&p->lock);

    gpumem_status st = GPUMEM_OK;
    gm_source_usage before = {0}, after = {0};
    if (p->grows)
        p->src->ops->usage(p->src, &before);
    while (list != NULL) {
        gm_rec *next = list->next;
        st = gm_keep_first(st, gm_pool_release_block(p, list, NULL, what));
        gm_rec_put(list);
        list = next;
    }
    if (keep != UINT64_MAX && p->src->ops->trim != NULL) /* sources that hold memory of their own */
        st = gm_keep_first(st, p->src->ops->trim(p->src, keep, what));
    if (p->grows) {
        p->src->ops->usage(p->src, &after);
        b = before.mapped > after.mapped ? before.mapped - after.mapped : 0;
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

gpumem_status gm_pool_core_create(gm_pool_kind kind, gpumem_context *ctx, unsigned flags,
                                  const gm_source_config *srcc, const char *what, gm_pool **out)
{
    gpumem_status st;
    ctx = gm_context_use(ctx, what, &st);
    if (st != GPUMEM_OK)
        return st;
    gm_source *src = NULL;
    st = gm_source_create(ctx, srcc, what, &src);
    if (st != GPUMEM_OK)
        return st;
    unsigned n = stripe_count();
    /* Zeroed by calloc (handles.c's large objects, 64-byte aligned): large,
     * and mostly untouched (a stripe's lists of unused classes stay zero
     * pages). */
    _Static_assert(_Alignof(gm_pool) <= 64, "handles are aligned to 64 bytes");
    size_t size = sizeof(gm_pool) + n * sizeof(gm_stripe);
    gm_pool *p = gm_handle_new_zeroed(kind == GM_POOL_DEVICE ? GM_HANDLE_POOL : GM_HANDLE_HOST_POOL, size);
    if (p == NULL) {
        gm_error_quietly(src->ops->destroy(src, what));
        return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", what);
    }
    p->src = src;
    p->grows = (src->ops->caps & GM_SOURCE_CAP_GROW) != 0;
    p->stripe_mask = n - 1;
    for (unsigned i = 0; i < n; i++)
        pthread_mutex_init(&p->stripes[i].lock, NULL);
    atomic_init(&p->harvested, gm_tc_orphan_epoch());
    p->kind = kind;
    p->id = atomic_fetch_add(&next_pool_id, 1);
    p->flags = flags;
    p->alloc_flags = srcc->host_flags;
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
 * pool's id again; they only drop their reference to it.  Its reference to
 * the context goes last: a context's end that it runs fails under what. */
static gpumem_status pool_end(gm_pool *p, const char *what)
{
    gpumem_context *ctx = p->flags & GM_POOL_CONTEXT_OWNED ? NULL : p->ctx;
    pthread_mutex_lock(&live_lock);
    if (p->in_zombies)
        unlink_locked(&zombie_pools, p);
    p->in_zombies = false;
    pthread_mutex_unlock(&live_lock);
    gm_tc_end_all(p);
    gpumem_status st = p->src->ops->destroy(p->src, what);
    for (unsigned i = 0; i <= p->stripe_mask; i++)
        pthread_mutex_destroy(&p->stripes[i].lock);
    pthread_mutex_destroy(&p->lock);
    gm_handle_free(p);
    return ctx != NULL ? gm_keep_first(st, gm_context_release_as(ctx, what)) : st;
}

static void (*_Atomic destroy_hook)(void);

void gm_pool_set_destroy_hook(void (*hook)(void))
{
    atomic_store_explicit(&destroy_hook, hook, memory_order_release);
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
    unlink_locked(&live_pools, p);
    if (!(p->flags & GM_POOL_CONTEXT_OWNED)) { /* its live allocations stay in the reports */
        p->live_next = zombie_pools;
        if (zombie_pools != NULL)
            zombie_pools->live_prev = p;
        zombie_pools = p;
        p->in_zombies = true;
    }
    pthread_mutex_unlock(&live_lock);
    atomic_store(&p->holding, false);
    gpumem_status st = release_all(p, UINT64_MAX, what, NULL, NULL); /* the source ends with the pool */
    pthread_mutex_lock(&p->lock);
    gm_tc_harvest_orphans(p);
    gm_sums s = sum_locked(p);
    p->destroyed = true;
    p->zombie_live = p->blocks - s.held_blocks + p->empty_live;
    bool end = p->zombie_live <= 0;
    pthread_mutex_unlock(&p->lock);
    if (end)
        st = gm_keep_first(st, pool_end(p, what));
    return st;
}

gpumem_status gm_pool_core_free_held(gm_pool *p, bool stop, const char *what)
{
    if (stop)
        atomic_store(&p->holding, false);
    uint64_t blocks = 0, bytes = 0;
    gpumem_status st = release_all(p, 0, what, &blocks, &bytes);
    GM_TRACE(gm_trace_trim(p->ctx, p->ctx->device,
                           p->kind == GM_POOL_DEVICE ? GPUMEM_MEMORY_DEVICE : GPUMEM_MEMORY_PINNED, p, bytes, blocks));
    return st;
}

gpumem_status gm_pool_core_trim(gm_pool *p, uint64_t keep, const char *what)
{
    uint64_t blocks = 0, bytes = 0;
    gpumem_status st = release_all(p, keep, what, &blocks, &bytes);
    GM_TRACE(gm_trace_trim(p->ctx, p->ctx->device,
                           p->kind == GM_POOL_DEVICE ? GPUMEM_MEMORY_DEVICE : GPUMEM_MEMORY_PINNED, p, bytes, blocks));
    return st;
}

/* ---- for the out-of-memory ladder ---- */

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
        st = gm_keep_first(st, release_all(p, 0, what, &n, &b));
        *blocks += n;
        *bytes += b;
    }
    pthread_mutex_unlock(&live_lock);
    return st;
}

/* ---- zero-size allocations, and blocks that leave the pool ---- */

gpumem_status gm_pool_empty_alloc(gm_pool *p, const char *what, uint64_t *addr, gpumem_allocation **token)
{
    gm_rec *r = gm_rec_get();
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
    *token = gm_rec_handle(r, tag);
    return GPUMEM_OK;
}

/* Counts the end of a live allocation of a destroyed pool (pool->lock
 * held); the pool ends with the last one. */
static void count_end_locked(gm_pool *p, bool *end)
{
    if (p->destroyed && --p->zombie_live <= 0)
        *end = true;
}

gpumem_status gm_pool_empty_free(gm_pool *p, gm_rec *r, const char *what)
{
    bool end = false;
    pthread_mutex_lock(&p->lock);
    p->empty_live--;
    count_end_locked(p, &end);
    pthread_mutex_unlock(&p->lock);
    gm_rec_put(r);
    return end ? pool_end(p, what) : GPUMEM_OK;
}

/* Gives a freed block to the driver, as a pool that does not hold (or
 * whose free could not record its event) does.  sync: the stream to wait
 * for when the block has no event recorded. */
gpumem_status gm_pool_free_direct(gm_pool *p, gm_rec *r, gpumem_stream *sync, const char *what)
{
    /* The block goes to the driver before it leaves the books: until then a
     * concurrent destroy counts it live, so the pool cannot end while this
     * thread still reads it (TSan found the other order). */
    gpumem_status st = gm_pool_release_block(p, r, sync, what);
    bool end = false;
    pthread_mutex_lock(&p->lock);
    p->blocks--;
    p->bytes -= (int64_t)gm_pool_block_bytes(r->cls);
    p->act_req -= (int64_t)r->requested;
    p->driver_frees++;
    count_end_locked(p, &end);
    pthread_mutex_unlock(&p->lock);
    gm_rec_put(r);
    if (end)
        st = gm_keep_first(st, pool_end(p, what));
    return st;
}

/* ---- queries ---- */

void gm_pool_core_stats(gm_pool *p, struct gpumem_pool_stats *s)
{
    pthread_mutex_lock(&p->lock);
    gm_pool_sample_peak_locked(p);
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
    gm_source_usage u;
    p->src->ops->usage(p->src, &u);
    s->source_bytes = p->grows ? u.mapped : s->active_bytes + s->held_bytes;
    s->reserved_bytes = u.reserved;
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

/* One pool's usage for gm_pools_usage (live_lock held). */
static void usage_of(gm_pool *p, bool largest, gm_pool_usage *u)
{
    *u = (gm_pool_usage){.ctx = p->ctx, .handle = p, .kind = p->kind,
                         .mapped = p->kind == GM_POOL_HOST && (p->alloc_flags & GM_CU_MEMHOSTALLOC_DEVICEMAP) != 0,
                         .own = (p->flags & GM_POOL_CONTEXT_OWNED) != 0, .destroyed = p->in_zombies};
    if (p->grows) {
        gm_source_usage su;
        p->src->ops->usage(p->src, &su);
        u->bytes = su.mapped;
    }
    pthread_mutex_lock(&p->lock);
    gm_sums sum = sum_locked(p);
    if (!p->grows)
        u->bytes = (uint64_t)p->bytes;
    u->held_blocks = (uint64_t)sum.held_blocks;
    u->held_bytes = (uint64_t)sum.held_bytes;
    u->active_blocks = (uint64_t)(p->blocks - sum.held_blocks);
    u->active_bytes = (uint64_t)(p->bytes - sum.held_bytes);
    u->active_requested = (uint64_t)sum.act_req;
    if (largest)
        u->largest_held = largest_held_locked(p);
    pthread_mutex_unlock(&p->lock);
}

void gm_pools_usage(int device, bool largest, void (*fn)(const gm_pool_usage *u, void *arg), void *arg)
{
    pthread_mutex_lock(&live_lock);
    gm_pool *const heads[2] = {live_pools, zombie_pools};
    for (int list = 0; list < 2; list++)
        for (gm_pool *p = heads[list]; p != NULL; p = p->live_next) {
            if (device >= 0 && p->ctx->device != device)
                continue;
            gm_pool_usage u;
            usage_of(p, largest, &u);
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

gm_source *gm_pool_core_source(gm_pool *p)
{
    return p->src;
}

gpumem_context *gm_pool_context(const gm_pool *p)
{
    return p->ctx;
}

bool gm_pool_holds_context(const gm_pool *p)
{
    return !(p->flags & GM_POOL_CONTEXT_OWNED);
}

gm_source *gm_pool_source(const gm_pool *p)
{
    return p->src;
}

size_t gm_pool_block_for(const gm_pool *p, size_t size)
{
    unsigned cls = gm_pool_class_of(size);
    if (p->grows && cls >= TC_CLASSES && size <= GM_POOL_EXACT_MAX)
        return (size + GM_POOL_EXACT_UNIT - 1) / GM_POOL_EXACT_UNIT * GM_POOL_EXACT_UNIT;
    return gm_pool_class_bytes(cls);
}

const char *gm_pool_alloc_call(const gm_pool *p)
{
    switch (p->src->cfg.kind) {
    case GM_SOURCE_VMM:
        return "cuMemCreate";
    case GM_SOURCE_ASYNC:
        return "cuMemAllocFromPoolAsync";
    case GM_SOURCE_PINNED:
        return "cuMemHostAlloc";
    default:
        return "cuMemAlloc";
    }
}

unsigned gm_pool_alloc_flags(const gm_pool *p)
{
    return p->alloc_flags;
}
