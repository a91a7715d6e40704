/*
 * dealloc.c - deferred deallocation (numba.cuda's pending-deallocation queue
 * and defer_cleanup).  See gpumem/cleanup.h for the rules.
 */
#include "config.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>

#include "context.h"
#include "dealloc.h"
#include "env.h"
#include "params.h"
#include "error.h"
#include "gpumem/cleanup.h"
#include "memstats.h"

#define DEFAULT_MAX_COUNT 10
#define DEFAULT_MAX_RATIO 0.2

typedef struct gm_pending_free {
    gm_free_kind kind;
    uint64_t ptr;
    size_t bytes;
} gm_pending_free;

struct gm_dealloc {
    pthread_mutex_t lock;
    gm_pending_free *items;
    size_t count, cap;
    uint64_t bytes;
    uint64_t device_bytes; /* of them, device and managed memory (GM_FREE_DEVICE) */
    size_t max_count;
    double max_ratio;
    uint64_t total_memory; /* the device's, for the ratio */
    int defer_depth;
};

/* The context hook: the queue is made with the context. */
static gpumem_status dealloc_create(gpumem_context *ctx, const char *what)
{
    size_t total_memory = 0;
    int rc = GM_DRV(device_total_mem, ctx->device, &total_memory);
    if (rc != 0)
        return gm_drv_check(rc, GM_OP_device_total_mem, what);
    long count;
    double ratio;
    gpumem_status st = gm_param_long(GM_P_MAX_PENDING_DEALLOCS_COUNT, &count, NULL); /* default DEFAULT_MAX_COUNT */
    if (st == GPUMEM_OK)
        st = gm_param_double(GM_P_MAX_PENDING_DEALLOCS_RATIO, &ratio); /* default DEFAULT_MAX_RATIO */
    if (st != GPUMEM_OK)
        return gm_error_prefix(st, what);
    gm_dealloc *q = malloc(sizeof *q);
    if (q == NULL)
        return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", what);
    pthread_mutex_init(&q->lock, NULL);
    q->items = NULL;
    q->count = q->cap = 0;
    q->bytes = q->device_bytes = 0;
    q->max_count = (size_t)count;
    q->max_ratio = ratio;
    q->total_memory = total_memory;
    q->defer_depth = 0;
    ctx->dealloc = q;
    return GPUMEM_OK;
}

/* Copies the queue's totals to the context's books (q->lock held), where
 * the memory report reads them without the queue. */
static void mirror(gpumem_context *ctx, const gm_dealloc *q)
{
    struct gm_memstats *m = ctx->memstats;
    if (m == NULL)
        return;
    atomic_store_explicit(&m->pending_count, (uint64_t)q->count, memory_order_relaxed);
    atomic_store_explicit(&m->pending_bytes, q->bytes, memory_order_relaxed);
    atomic_store_explicit(&m->pending_device_bytes, q->device_bytes, memory_order_relaxed);
}

static bool over_limits(const gm_dealloc *q)
{
    return q->count > q->max_count || (double)q->bytes > q->max_ratio * (double)q->total_memory;
}

/* Does the queued frees (taken out under the lock, freed without it: the
 * driver synchronizes).  Every free is attempted; the first failure is
 * returned.  *done and *done_bytes (optional) get the frees done. */
static gpumem_status flush_counted(gpumem_context *ctx, const char *what, uint64_t *done, uint64_t *done_bytes)
{
    gm_dealloc *q = ctx->dealloc;
    pthread_mutex_lock(&q->lock);
    gm_pending_free *items = q->items;
    size_t n = q->count;
    uint64_t total = q->bytes;
    q->items = NULL;
    q->count = q->cap = 0;
    q->bytes = q->device_bytes = 0;
    /* The books say nothing is pending while the frees run: the memory is
     * on its way back. */
    mirror(ctx, q);
    pthread_mutex_unlock(&q->lock);
    gpumem_status st = GPUMEM_OK;
    size_t kept = 0; /* frees the driver refused: queued again, retried at the next flush */
    uint64_t kept_bytes = 0;
    for (size_t i = 0; i < n && !gm_process_exiting(); i++) {
        bool device = items[i].kind == GM_FREE_DEVICE;
        int rc = device ? GM_DRV(mem_free, ctx->dctx, items[i].ptr)
                        : GM_DRV(mem_free_host, ctx->dctx, (void *)(uintptr_t)items[i].ptr);
        if (rc == 0)
            continue;
        kept_bytes += items[i].bytes;
        items[kept++] = items[i];
        if (st == GPUMEM_OK) /* the first failure is the message */
            st = gm_drv_check(rc, device ? GM_OP_mem_free : GM_OP_mem_free_host, what);
    }
    if (done != NULL)
        *done = n - kept;
    if (done_bytes != NULL)
        *done_bytes = total - kept_bytes;
    if (kept > 0) {
        pthread_mutex_lock(&q->lock);
        for (size_t i = 0; i < kept; i++) {
            if (q->count == q->cap) {
                size_t ncap = q->cap ? q->cap * 2 : 16;
                gm_pending_free *m = realloc(q->items, ncap * sizeof *m);
                if (m == NULL)
                    break; /* no room: those are lost, as a failed free would be */
                q->items = m;
                q->cap = ncap;
            }
            q->items[q->count++] = items[i];
            q->bytes += items[i].bytes;
            if (items[i].kind == GM_FREE_DEVICE)
                q->device_bytes += items[i].bytes;
        }
        mirror(ctx, q);
        pthread_mutex_unlock(&q->lock);
    }
    free(items);
    return st;
}

static gpumem_status flush(gpumem_context *ctx, const char *what)
{
    return flush_counted(ctx, what, NULL, NULL);
}

static gpumem_status dealloc_teardown(gpumem_context *ctx, const char *what)
{
    gpumem_status st = flush(ctx, what);
    if (ctx->dealloc->count > 0) /* refused frees: one more try, then they are the driver's; the first */
        gm_error_quietly(flush(ctx, what)); /* failure is the one returned, and described */
    pthread_mutex_destroy(&ctx->dealloc->lock);
    free(ctx->dealloc->items);
    free(ctx->dealloc);
    ctx->dealloc = NULL;
    return st;
}

const gm_context_hook gm_dealloc_hook = {dealloc_create, dealloc_teardown};

gpumem_status gm_dealloc_free(gpumem_context *ctx, gm_free_kind kind, uint64_t ptr, size_t bytes, const char *what)
{
    gm_dealloc *q = ctx->dealloc;
    pthread_mutex_lock(&q->lock);
    if (q->count == q->cap) {
        size_t ncap = q->cap ? q->cap * 2 : 16;
        gm_pending_free *n = realloc(q->items, ncap * sizeof *n);
        if (n == NULL) {
            /* No room to queue it: free it now rather than leak it. */
            pthread_mutex_unlock(&q->lock);
            return kind == GM_FREE_DEVICE
                       ? gm_drv_check(GM_DRV(mem_free, ctx->dctx, ptr), GM_OP_mem_free, what)
                       : gm_drv_check(GM_DRV(mem_free_host, ctx->dctx, (void *)(uintptr_t)ptr), GM_OP_mem_free_host,
                                      what);
        }
        q->items = n;
        q->cap = ncap;
    }
    q->items[q->count++] = (gm_pending_free){kind, ptr, bytes};
    q->bytes += bytes;
    if (kind == GM_FREE_DEVICE)
        q->device_bytes += bytes;
    mirror(ctx, q);
    bool now = q->defer_depth == 0 && over_limits(q);
    pthread_mutex_unlock(&q->lock);
    return now ? flush(ctx, what) : GPUMEM_OK;
}

bool gm_dealloc_flush_for_retry(gpumem_context *ctx, uint64_t *frees, uint64_t *bytes)
{
    gm_dealloc *q = ctx->dealloc;
    *frees = *bytes = 0;
    pthread_mutex_lock(&q->lock);
    bool can = q->defer_depth == 0 && q->count > 0;
    pthread_mutex_unlock(&q->lock);
    return can && flush_counted(ctx, "flushing deferred frees before a retry", frees, bytes) == GPUMEM_OK;
}

/* ---- the public API ------------------------------------------------------------------------ */

GPUMEM_API gpumem_status gpumem_context_set_dealloc_limits(gpumem_context *ctx, size_t max_count,
                                                           double max_ratio)
{
    gpumem_status st;
    ctx = gm_context_or_default(ctx, &st);
    if (st != GPUMEM_OK)
        return st;
    if (!(max_ratio >= 0.0 && max_ratio <= 1.0))
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "gpumem_context_set_dealloc_limits: max_ratio %g must be "
                        "between 0 and 1", max_ratio);
    gm_dealloc *q = ctx->dealloc;
    pthread_mutex_lock(&q->lock);
    q->max_count = max_count;
    q->max_ratio = max_ratio;
    bool now = q->defer_depth == 0 && over_limits(q);
    pthread_mutex_unlock(&q->lock);
    return now ? flush(ctx, "gpumem_context_set_dealloc_limits") : GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_context_get_dealloc_limits(gpumem_context *ctx, size_t *max_count,
                                                           double *max_ratio)
{
    GM_CHECK_NULL(max_count);
    GM_CHECK_NULL(max_ratio);
    gpumem_status st;
    ctx = gm_context_or_default(ctx, &st);
    if (st != GPUMEM_OK)
        return st;
    pthread_mutex_lock(&ctx->dealloc->lock);
    *max_count = ctx->dealloc->max_count;
    *max_ratio = ctx->dealloc->max_ratio;
    pthread_mutex_unlock(&ctx->dealloc->lock);
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_context_flush_deallocations(gpumem_context *ctx)
{
    gpumem_status st;
    ctx = gm_context_or_default(ctx, &st);
    if (st != GPUMEM_OK)
        return st;
    return flush(ctx, "gpumem_context_flush_deallocations");
}

GPUMEM_API gpumem_status gpumem_context_pending_deallocations(gpumem_context *ctx, size_t *count,
                                                              uint64_t *bytes)
{
    gpumem_status st;
    ctx = gm_context_or_default(ctx, &st);
    if (st != GPUMEM_OK)
        return st;
    pthread_mutex_lock(&ctx->dealloc->lock);
    if (count != NULL)
        *count = ctx->dealloc->count;
    if (bytes != NULL)
        *bytes = ctx->dealloc->bytes;
    pthread_mutex_unlock(&ctx->dealloc->lock);
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_defer_cleanup_begin(gpumem_context *ctx)
{
    gpumem_status st;
    ctx = gm_context_or_default(ctx, &st);
    if (st != GPUMEM_OK)
        return st;
    pthread_mutex_lock(&ctx->dealloc->lock);
    ctx->dealloc->defer_depth++;
    pthread_mutex_unlock(&ctx->dealloc->lock);
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_defer_cleanup_end(gpumem_context *ctx)
{
    gpumem_status st;
    ctx = gm_context_or_default(ctx, &st);
    if (st != GPUMEM_OK)
        return st;
    gm_dealloc *q = ctx->dealloc;
    pthread_mutex_lock(&q->lock);
    if (q->defer_depth == 0) {
        pthread_mutex_unlock(&q->lock);
        return gm_error(GPUMEM_ERROR_INVALID_STATE, "gpumem_defer_cleanup_end: no defer_cleanup scope is open");
    }
    bool now = --q->defer_depth == 0 && over_limits(q);
    pthread_mutex_unlock(&q->lock);
    return now ? flush(ctx, "gpumem_defer_cleanup_end") : GPUMEM_OK;
}
