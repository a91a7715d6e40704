/*
 * hostreg.c - the registry of page-locked host memory (hostreg.h).
 *
 * Registration is page-granular and reference-counted.  A scope's ranges are
 * rounded out to whole pages and cut into pieces: pieces already registered
 * by an earlier scope gain a reference; pieces in no known range are
 * registered with the driver as new ranges; pieces inside libgpumem's own
 * page-locked allocations need nothing.  A range is unregistered when its
 * last reference goes.  So overlapping and repeated arrays work, though the
 * driver refuses overlapping registrations.
 *
 * The driver is called with no lock held: a range is inserted as RANGE_BUSY
 * under the lock, registered (or, at its end, unregistered) without it, and
 * published or removed under it again; `changed` is broadcast after each
 * such step, and a scope that meets a busy range waits on it.
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "gpumem/host.h"
#include "hostreg.h"
#include "memstats.h"

typedef enum range_kind {
    RANGE_ALLOCATION,   /* our own page-locked allocation: not a registration */
    RANGE_REGISTERED,   /* registered by us; unregistered at its last reference */
    RANGE_FOREIGN,      /* the driver said another party registered it: never unregistered */
    RANGE_BUSY          /* a driver call (register or unregister) is under way */
} range_kind;

typedef struct range {
    uintptr_t start, end;
    range_kind kind;
    int refs;               /* scopes covering it (registrations) */
    gpumem_context *ctx;    /* retained by registrations: the context that unregisters */
} range;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static range *ranges;       /* sorted by start, disjoint */
static size_t nranges, cap;
_Atomic uint64_t gm_host_gen_ = 1; /* gm_host_generation: moved on by every change below (lock held) */

/* A range came, went or changed kind: gm_host_lock_state_at may answer otherwise. */
static void moved_on(void)
{
    atomic_fetch_add_explicit(&gm_host_gen_, 1, memory_order_relaxed);
}

/* Index of the first range that ends after p. */
static size_t first_after(uintptr_t p)
{
    size_t lo = 0, hi = nranges;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (ranges[mid].end <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static bool insert_at(size_t i, range r)
{
    if (nranges == cap) {
        size_t ncap = cap ? cap * 2 : 16;
        range *n = realloc(ranges, ncap * sizeof *n);
        if (n == NULL)
            return false;
        ranges = n;
        cap = ncap;
    }
    memmove(&ranges[i + 1], &ranges[i], (nranges - i) * sizeof *ranges);
    ranges[i] = r;
    nranges++;
    moved_on();
    return true;
}

static void remove_at(size_t i)
{
    memmove(&ranges[i], &ranges[i + 1], (nranges - i - 1) * sizeof *ranges);
    nranges--;
    moved_on();
}

static size_t find_start(uintptr_t start)
{
    size_t i = first_after(start);
    return i < nranges && ranges[i].start == start ? i : (size_t)-1;
}

gpumem_status gm_host_track_allocation(const void *start, size_t bytes)
{
    uintptr_t s = (uintptr_t)start;
    range r = {s, s + bytes, RANGE_ALLOCATION, 0, NULL};
    pthread_mutex_lock(&lock);
    bool ok = insert_at(first_after(s), r);
    pthread_mutex_unlock(&lock);
    return ok ? GPUMEM_OK : gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "out of host memory");
}

void gm_host_untrack_allocation(const void *start)
{
    pthread_mutex_lock(&lock);
    size_t i = find_start((uintptr_t)start);
    if (i != (size_t)-1 && ranges[i].kind == RANGE_ALLOCATION)
        remove_at(i);
    pthread_mutex_unlock(&lock);
}

int gm_host_alloc_locked(gm_dctx *dctx, size_t bytes, unsigned flags, const char *what, void **out,
                         gpumem_status *st)
{
    void *h = NULL;
    int rc = GM_DRV(mem_host_alloc, dctx, &h, bytes, flags);
    if (rc == 0 && (*st = gm_host_track_allocation(h, bytes)) != GPUMEM_OK) {
        GM_DRV(mem_free_host, dctx, h);
        *st = gm_error_prefix(*st, what);
        *out = NULL;
        return -1;
    }
    *out = h;
    return rc;
}

int gm_host_free_locked(gm_dctx *dctx, void *p)
{
    gm_host_untrack_allocation(p);
    return GM_DRV(mem_free_host, dctx, p);
}

gm_host_lock gm_host_lock_state_at(const void *p, size_t bytes, uint64_t *gen)
{
    uintptr_t a = (uintptr_t)p, b = a + bytes;
    pthread_mutex_lock(&lock);
    size_t i = first_after(a);
    gm_host_lock st = GM_HOST_PAGEABLE;
    if (i < nranges && ranges[i].start < b) /* a range holds some of the bytes */
        st = ranges[i].start <= a && ranges[i].end >= b && ranges[i].kind != RANGE_BUSY ? GM_HOST_LOCKED
                                                                                       : GM_HOST_SPLIT;
    *gen = atomic_load_explicit(&gm_host_gen_, memory_order_relaxed);
    pthread_mutex_unlock(&lock);
    return st;
}

bool gm_host_is_locked(const void *p, size_t bytes)
{
    uintptr_t a = (uintptr_t)p, b = a + bytes;
    pthread_mutex_lock(&lock);
    bool covered = true;
    for (size_t i = first_after(a); a < b; i++) {
        if (i >= nranges || ranges[i].start > a || ranges[i].kind == RANGE_BUSY) {
            covered = false;
            break;
        }
        a = ranges[i].end;
    }
    pthread_mutex_unlock(&lock);
    return covered;
}

GPUMEM_API gpumem_status gpumem_host_is_pinned(const void *pointer, size_t bytes, int *result)
{
    GM_CHECK_NULL(result);
    *result = pointer != NULL && gm_host_is_locked(pointer, bytes);
    return GPUMEM_OK;
}

/* ---- registration ---------------------------------------------------------------------- */

static gpumem_status add_piece(gm_pin_set *set, uintptr_t start)
{
    if (set->count == set->room) {
        size_t n = set->room ? set->room * 2 : 8;
        uintptr_t *p = realloc(set->pieces, n * sizeof *p);
        if (p == NULL)
            return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "out of host memory");
        set->pieces = p;
        set->room = n;
    }
    set->pieces[set->count++] = start;
    return GPUMEM_OK;
}

/* Drops a reference on the range starting at start (lock held); at the last
 * one, unregisters it without the lock (the range is busy meanwhile). */
static gpumem_status unref_range(uintptr_t start, const char *what)
{
    size_t i = find_start(start);
    if (i == (size_t)-1)
        return gm_error(GPUMEM_ERROR_INTERNAL, "%s: a registered range is missing", what);
    if (--ranges[i].refs > 0)
        return GPUMEM_OK;
    range r = ranges[i];
    gpumem_status st = GPUMEM_OK;
    if (r.kind == RANGE_REGISTERED) { /* the books: its memory is no longer registered by us */
        gm_memstats_live(r.ctx, GM_MK_REGISTERED, r.end - r.start, -1);
        if (gm_leaks_enabled())
            gm_leak_forget(r.ctx, r.start);
    }
    if (r.kind == RANGE_REGISTERED && !gm_process_exiting()) {
        ranges[i].kind = RANGE_BUSY;
        moved_on();
        pthread_mutex_unlock(&lock);
        st = gm_drv_check(GM_DRV(mem_host_unregister, r.ctx->dctx, (void *)r.start), GM_OP_mem_host_unregister,
                          what);
        pthread_mutex_lock(&lock);
        i = find_start(start);
    }
    remove_at(i);
    pthread_cond_broadcast(&changed);
    return gm_keep_first(st, gm_context_release_as(r.ctx, what));
}

gpumem_status gm_host_pin_pages(gpumem_context *ctx, gm_pin_set *set, uintptr_t a, uintptr_t b, unsigned flags,
                                const char *what)
{
    gpumem_status st = GPUMEM_OK;
    bool registered = false; /* something new: the peaks are sampled, after the lock */
    pthread_mutex_lock(&lock);
    while (a < b && st == GPUMEM_OK) {
        size_t i = first_after(a);
        if (i < nranges && ranges[i].start <= a) {
            /* inside a known range */
            if (ranges[i].kind == RANGE_BUSY) {
                pthread_cond_wait(&changed, &lock);
                continue; /* look again: it was published or removed */
            }
            if (ranges[i].kind != RANGE_ALLOCATION) {
                st = add_piece(set, ranges[i].start);
                if (st == GPUMEM_OK)
                    ranges[i].refs++;
            }
            a = ranges[i].end;
            continue;
        }
        /* pages in no range: registered by us, without the lock */
        uintptr_t end = i < nranges && ranges[i].start < b ? ranges[i].start : b;
        if (!insert_at(i, (range){a, end, RANGE_BUSY, 1, ctx})) {
            st = gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", what);
            break;
        }
        pthread_mutex_unlock(&lock);
        int rc = GM_DRV(mem_host_register, ctx->dctx, (void *)a, end - a, flags);
        pthread_mutex_lock(&lock);
        i = find_start(a);
        if (rc == 0 || rc == GM_CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED) {
            /* already registered: another library pinned it; use it, never unregister it */
            ranges[i].kind = rc == 0 ? RANGE_REGISTERED : RANGE_FOREIGN;
            moved_on();
            gpumem_context_retain(ctx);
            if (rc == 0) {
                gm_memstats_live(ctx, GM_MK_REGISTERED, end - a, +1);
                if (gm_leaks_enabled())
                    gm_leak_add(ctx, GM_LEAK_REGISTRATION, a, GPUMEM_MEMORY_HOST, end - a, what);
                registered = true;
            }
            st = add_piece(set, a);
            if (st != GPUMEM_OK)
                unref_range(a, what);
        } else {
            remove_at(i);
            st = gm_drv_check(rc, GM_OP_mem_host_register, what);
        }
        pthread_cond_broadcast(&changed);
        a = end;
    }
    pthread_mutex_unlock(&lock);
    if (registered)
        gm_memstats_sample(ctx);
    return st;
}

gpumem_status gm_host_unpin_set(gm_pin_set *set, const char *what)
{
    gpumem_status st = GPUMEM_OK;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < set->count; i++)
        st = gm_keep_first(st, unref_range(set->pieces[i], what));
    pthread_mutex_unlock(&lock);
    free(set->pieces);
    *set = (gm_pin_set){0};
    return st;
}
