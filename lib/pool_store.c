/*
 * pool_store.c - the pool core's shared store (pool.h: stripes of
 * size-class lists, idle blocks LIFO and blocks pending on a stream's event
 * FIFO, each stripe under its own mutex) and the calls to the pool's memory
 * source (source.h) for blocks: an allocation that no thread cache served
 * is taken from the store, or from the source.  A source that merges the
 * extents given back (virtual memory) first gets the store's idle blocks
 * back before it maps more (gm_pool_reclaim).
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "error.h"
#include "memstats.h"
#include "pool_impl.h"

#define STORE_SCAN 8 /* same-stream candidates looked at in the store */

/* ---- the source's blocks ---- */

/* Gives a block to its source: waits for the work its free recorded (or,
 * with sync, for all of that stream's), then frees its event and gives the
 * memory back.  The first failure is returned; the memory is given back
 * whatever failed before.  The record is left to the caller. */
gpumem_status gm_pool_release_block(gm_pool *p, gm_rec *r, gpumem_stream *sync, const char *what)
{
    if (gm_process_exiting())
        return GPUMEM_OK; /* the driver may be gone; the system reclaims it all */
    gm_dctx *dctx = p->ctx->dctx;
    gpumem_status st = GPUMEM_OK;
    if (r->key == GM_KEY_LEGACY_UNRECORDED) /* its work was queued on the legacy stream only */
        st = gm_drv_check(GM_DRV(stream_synchronize, dctx, NULL), GM_OP_stream_synchronize, what);
    else if (r->key != 0)
        st = gm_drv_check(GM_DRV(event_synchronize, dctx, r->event), GM_OP_event_synchronize, what);
    else if (sync != NULL)
        st = gm_drv_check(GM_DRV(stream_synchronize, dctx, gm_stream_ds(sync)), GM_OP_stream_synchronize, what);
    if (r->event != NULL) {
        st = gm_keep_first(st, gm_drv_check(GM_DRV(event_destroy, dctx, r->event), GM_OP_event_destroy, what));
        r->event = NULL;
    }
    r->key = 0;
    return gm_keep_first(st, p->src->ops->free(p->src, r->addr, gm_pool_block_bytes(r->cls), what));
}

/* Records the block's event on driver stream ds (NULL: the legacy default
 * stream), making the event the first time; the block's key is then key. */
static gpumem_status record_on(gm_pool *p, gm_rec *r, gm_dstream *ds, uintptr_t key, const char *what)
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
    gpumem_status st = gm_drv_check(GM_DRV(event_record, dctx, r->event, ds), GM_OP_event_record, what);
    if (st == GPUMEM_OK)
        r->key = key;
    return st;
}

/* Records the block's event on stream, making the event the first time. */
gpumem_status gm_pool_record_free(gm_pool *p, gm_rec *r, gpumem_stream *stream, const char *what)
{
    return record_on(p, r, gm_stream_ds(stream), gm_stream_key(stream), what);
}

/* Whether a pending block's event has completed: 1 yes (the block is made
 * idle), 0 not yet, -1 the query failed (status in *st). */
int gm_pool_pending_done(gm_pool *p, gm_rec *r, const char *what, gpumem_status *st)
{
    if (r->key == GM_KEY_LEGACY_UNRECORDED) {
        /* Recorded now, after the block's work on the legacy stream (and
         * perhaps later work): its completion is enough, if late. */
        *st = record_on(p, r, NULL, 1, what);
        if (*st != GPUMEM_OK)
            return -1;
    }
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

/* The stripe's lock held. */
void gm_store_put(gm_stripe *s, gm_rec *r)
{
    gm_class_store *cs = &s->store[gm_pool_list_of(r->cls)];
    ADD(s->held_blocks, 1);
    ADD(s->held_bytes, (int64_t)gm_pool_block_bytes(r->cls));
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
static gm_rec *store_take(gm_pool *p, gm_stripe *s, unsigned cls, size_t size, uintptr_t key, int *queries,
                          const char *what, gpumem_status *st)
{
    gm_class_store *cs = &s->store[cls];
    gm_rec *prev = NULL, *r = cs->pending_head, *found = NULL;
    if (queries == NULL) {
        for (int i = 0; key != 0 && r != NULL && i < STORE_SCAN && found == NULL; i++) {
            if (gm_key_fits(r->key, key) && gm_pool_block_bytes(r->cls) >= size)
                found = r;
            else
                prev = r, r = r->next;
        }
        if (found != NULL) {
            pending_unlink(cs, prev, found);
        } else {
            /* The newest idle block that is large enough (exact blocks of
             * one list differ in size; class blocks all fit). */
            gm_rec **link = &cs->idle;
            for (int i = 0; *link != NULL && i < STORE_SCAN && found == NULL; i++)
                if (gm_pool_block_bytes((*link)->cls) >= size)
                    found = *link;
                else
                    link = &(*link)->next;
            if (found != NULL) {
                *link = found->next;
                found->next = NULL;
            }
        }
    } else {
        for (; r != NULL && *queries > 0 && found == NULL; --*queries) {
            if (gm_pool_block_bytes(r->cls) < size) {
                prev = r, r = r->next;
                continue;
            }
            int done = gm_pool_pending_done(p, r, what, st);
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
        ADD(s->held_bytes, -(int64_t)gm_pool_block_bytes(found->cls));
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
            gm_rec *r = store_take(p, s, cls, size, key, round ? &queries : NULL, what, st);
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

/* Moves every block of a stripe to the list *out (through next); the
 * stripe's lock held. */
void gm_store_empty(gm_stripe *s, gm_rec **out)
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

/* ---- from the store or the driver ---- */

/* A block from the shared store, or a new one from the driver; NULL with
 * *stp set on failure (and *oom when the driver is out of memory). */
gm_rec *gm_pool_alloc_slow(gm_pool *p, unsigned cls, size_t size, uintptr_t key, const char *what,
                           gpumem_status *stp, bool *oom)
{
    gpumem_status st = GPUMEM_OK;
    /* A source that merges takes large blocks at their size (pool.h). */
    bool exact = p->grows && cls >= TC_CLASSES && size <= GM_POOL_EXACT_MAX;
    size_t bytes = exact ? (size + GM_POOL_EXACT_UNIT - 1) / GM_POOL_EXACT_UNIT * GM_POOL_EXACT_UNIT
                         : gm_pool_class_bytes(cls);
    unsigned own = gm_pool_my_stripe(p);
    gm_rec *r;
    /* Before asking the driver, once: blocks that exited threads left behind. */
    for (bool again = true;; again = false)
        if ((r = stripes_take(p, own, cls, size, key, what, &st)) != NULL || st != GPUMEM_OK || !again ||
            !gm_tc_maybe_harvest(p))
            break;
    if (st != GPUMEM_OK || r != NULL) {
        if (r != NULL)
            r->stripe = own;
        *stp = st;
        return r;
    }

    r = gm_rec_get();
    if (r == NULL) {
        *stp = gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory for the allocation record", what);
        return NULL;
    }
    uint64_t addr = 0;
    bool src_oom = false;
    if (p->grows) {
        /* A source that merges: from the memory it holds first; else the
         * pool's held blocks of every class go back to it (they merge), and
         * only then does it map more. */
        st = p->src->ops->alloc(p->src, bytes, false, what, &addr, &src_oom);
        if (st == GPUMEM_ERROR_OUT_OF_MEMORY && !src_oom) {
            st = gm_pool_reclaim(p, what);
            if (st == GPUMEM_OK)
                st = p->src->ops->alloc(p->src, bytes, true, what, &addr, &src_oom);
            /* Idle chunks past the release threshold go now.  When that
             * fails, so does the allocation, which gives its extent back. */
            if (st == GPUMEM_OK && (st = gm_source_settle(p->src, what)) != GPUMEM_OK)
                st = gm_keep_first(st, p->src->ops->free(p->src, addr, bytes, what));
        }
    } else {
        st = p->src->ops->alloc(p->src, bytes, true, what, &addr, &src_oom);
    }
    if (st != GPUMEM_OK) {
        /* Out of memory: the allocator's ladder (alloc.c) releases and retries. */
        gm_rec_put(r);
        *stp = st;
        *oom = src_oom;
        return NULL;
    }
    r->pool = p;
    r->cls = exact ? GM_POOL_EXACT + (uint32_t)(bytes / GM_POOL_EXACT_UNIT) : cls;
    r->stripe = own;
    r->addr = addr;
    pthread_mutex_lock(&p->lock);
    p->misses++;
    p->blocks++;
    p->bytes += (int64_t)bytes;
    p->act_req += (int64_t)size;
    gm_pool_sample_peak_locked(p); /* a new block: the one moment active bytes can pass the last driver peak */
    pthread_mutex_unlock(&p->lock);
    /* The same moment for the context's books: a sample with no pool lock
     * held (it reads every pool of the device). */
    gm_memstats_sample(p->ctx);
    return r;
}

/* ---- giving held blocks back to a source that merges them ---- */

/* Takes the idle blocks of stripe s, and its pending ones whose event has
 * completed, to the list *out (the stripe's lock held).  A failed event
 * query leaves its block where it is; the first failure is returned. */
static gpumem_status store_take_done(gm_pool *p, gm_stripe *s, gm_rec **out, const char *what)
{
    gpumem_status first = GPUMEM_OK;
    for (unsigned c = 0; c < GM_POOL_CLASSES && GET(s->held_blocks) != 0; c++) {
        gm_class_store *cs = &s->store[c];
        int64_t n = 0, bytes = 0;
        while (cs->idle != NULL) {
            gm_rec *r = cs->idle;
            cs->idle = r->next;
            r->next = *out;
            *out = r;
            n++;
            bytes += (int64_t)gm_pool_block_bytes(r->cls);
        }
        for (gm_rec *prev = NULL, *r = cs->pending_head; r != NULL;) {
            gm_rec *next = r->next;
            gpumem_status st = GPUMEM_OK;
            int done = gm_pool_pending_done(p, r, what, &st);
            first = gm_keep_first(first, st);
            if (done > 0) {
                pending_unlink(cs, prev, r);
                r->next = *out;
                *out = r;
                n++;
                bytes += (int64_t)gm_pool_block_bytes(r->cls);
            } else {
                prev = r;
            }
            r = next;
        }
        ADD(s->held_blocks, -n);
        ADD(s->held_bytes, -bytes);
    }
    return first;
}

gpumem_status gm_pool_reclaim(gm_pool *p, const char *what)
{
    gm_rec *list = NULL;
    gpumem_status st = GPUMEM_OK;
    for (unsigned i = 0; i <= p->stripe_mask; i++) {
        gm_stripe *s = &p->stripes[i];
        if (GET(s->held_blocks) == 0)
            continue;
        pthread_mutex_lock(&s->lock);
        st = gm_keep_first(st, store_take_done(p, s, &list, what));
        pthread_mutex_unlock(&s->lock);
    }
    if (list == NULL)
        return st;
    int64_t n = 0, b = 0;
    for (gm_rec *r = list; r != NULL; r = r->next) {
        n++;
        b += (int64_t)gm_pool_block_bytes(r->cls);
    }
    pthread_mutex_lock(&p->lock);
    p->blocks -= n;
    p->bytes -= b;
    pthread_mutex_unlock(&p->lock);
    while (list != NULL) {
        gm_rec *next = list->next;
        st = gm_keep_first(st, gm_pool_release_block(p, list, NULL, what)); /* their events completed */
        gm_rec_put(list);
        list = next;
    }
    return st;
}
