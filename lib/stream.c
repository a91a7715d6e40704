/*
 * stream.c - streams, synchronization, auto_synchronize scopes and
 * write-backs.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "stream.h"

gpumem_status gm_stream_check(const gpumem_stream *stream, const gpumem_context *ctx, const char *what,
                              const char *arg)
{
    if (stream != NULL && !gm_handle_live(stream, GM_HANDLE_STREAM))
        return gm_handle_error(stream, GM_HANDLE_STREAM, what, "stream");
    if (stream == NULL || ctx == NULL || stream->ctx->dctx == ctx->dctx)
        return GPUMEM_OK;
    return gm_error(GPUMEM_ERROR_CONTEXT_MISMATCH,
                    "%s: '%s' belongs to the context of device %d, but the stream to device %d", what, arg,
                    ctx->device, stream->ctx->device);
}

static gpumem_stream *stream_new(gpumem_context *ctx, gm_dstream *ds, bool is_default)
{
    gpumem_stream *s = gm_handle_new_zeroed(GM_HANDLE_STREAM, sizeof *s);
    if (s == NULL)
        return NULL;
    s->ctx = ctx;
    s->ds = ds;
    s->is_default = is_default;
    atomic_init(&s->refs, 1);
    atomic_init(&s->destroyed, false);
    atomic_init(&s->landings, 0);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->idle, NULL);
    s->writebacks_tail = &s->writebacks;
    return s;
}

gpumem_stream *gm_stream_foreign(gpumem_context *ctx, gm_dstream *ds)
{
    return stream_new(ctx, ds, false);
}

void gm_stream_unhold(gpumem_stream *s)
{
    if (s != NULL && atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) == 1) {
        pthread_mutex_destroy(&s->lock);
        pthread_cond_destroy(&s->idle);
        gm_handle_free(s);
    }
}

GPUMEM_API gpumem_status gpumem_stream_create(gpumem_context *ctx, unsigned flags, gpumem_stream **stream)
{
    GM_CHECK_NULL(stream);
    gpumem_status st;
    ctx = gm_context_or_default(ctx, &st);
    if (st != GPUMEM_OK)
        return st;
    if (flags & ~(unsigned)GPUMEM_STREAM_NON_BLOCKING)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "gpumem_stream_create: unknown flags 0x%x", flags);
    gm_dstream *ds = NULL;
    st = gm_drv_check(GM_DRV(stream_create, ctx->dctx, &ds,
                             flags & GPUMEM_STREAM_NON_BLOCKING ? GM_CU_STREAM_NON_BLOCKING : 0),
                      GM_OP_stream_create, "gpumem_stream_create");
    if (st != GPUMEM_OK)
        return st;
    gpumem_stream *s = stream_new(ctx, ds, false);
    if (s == NULL) {
        GM_DRV(stream_destroy, ctx->dctx, ds);
        return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "gpumem_stream_create: out of host memory");
    }
    gpumem_context_retain(ctx);
    pthread_mutex_lock(&ctx->lock);
    s->next = ctx->streams;
    ctx->streams = s;
    pthread_mutex_unlock(&ctx->lock);
    *stream = s;
    return GPUMEM_OK;
}

/* ctx's default stream, made the first time. */
static gpumem_status default_stream(gpumem_context *ctx, const char *what, gpumem_stream **stream)
{
    pthread_mutex_lock(&ctx->lock);
    if (ctx->default_stream == NULL)
        ctx->default_stream = stream_new(ctx, NULL, true);
    gpumem_stream *s = ctx->default_stream;
    pthread_mutex_unlock(&ctx->lock);
    GM_RETURN_ERROR_IF(s == NULL, GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", what);
    *stream = s;
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_stream_default(gpumem_context *ctx, gpumem_stream **stream)
{
    GM_CHECK_NULL(stream);
    gpumem_status st;
    ctx = gm_context_or_default(ctx, &st);
    GM_FORWARD_IF_ERROR(st);
    return default_stream(ctx, "gpumem_stream_default", stream);
}

GPUMEM_API gpumem_status gpumem_stream_context(const gpumem_stream *stream, gpumem_context **ctx)
{
    GM_CHECK_HANDLE(stream);
    GM_CHECK_NULL(ctx);
    *ctx = stream->ctx;
    return GPUMEM_OK;
}

gpumem_status gm_stream_add_writeback(gpumem_stream *stream, gpumem_context *ctx, gm_writeback_fn fn, void *arg,
                                      const char *what)
{
    if (stream == NULL)
        GM_FORWARD_IF_ERROR(default_stream(ctx, what, &stream));
    gm_writeback *wb = malloc(sizeof *wb);
    GM_RETURN_ERROR_IF(wb == NULL, GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory (a write-back)",
                       what);
    wb->fn = fn;
    wb->arg = arg;
    wb->next = NULL;
    snprintf(wb->queued_by, sizeof wb->queued_by, "%.*s", (int)strcspn(what, ":"), what); /* the call's name */
    pthread_mutex_lock(&stream->lock);
    wb->seq = ++stream->writebacks_added;
    *stream->writebacks_tail = wb;
    stream->writebacks_tail = &wb->next;
    pthread_mutex_unlock(&stream->lock);
    return GPUMEM_OK;
}

/* Takes the write-backs added up to number `upto` off the stream's list
 * (its head: they are in the order added). */
static gm_writeback *take_writebacks(gpumem_stream *s, uint64_t upto)
{
    gm_writeback *wb = NULL, **cut = &s->writebacks;
    pthread_mutex_lock(&s->lock);
    while (*cut != NULL && (*cut)->seq <= upto)
        cut = &(*cut)->next;
    if (cut != &s->writebacks) { /* detach the head of the list */
        wb = s->writebacks;
        s->writebacks = *cut;
        *cut = NULL;
        if (s->writebacks == NULL)
            s->writebacks_tail = &s->writebacks;
    }
    pthread_mutex_unlock(&s->lock);
    return wb;
}

/* Runs the write-backs of the list wb in order (run false: drops them
 * unrun), each named after `what` and the call that queued it; every one
 * is attempted, and the first failure, st's if st is one, is returned. */
static gpumem_status run_writebacks(gm_writeback *wb, bool run, gpumem_status st, const char *what)
{
    while (wb != NULL) {
        gm_writeback *next = wb->next;
        char where[256];
        snprintf(where, sizeof where, "%s: the write-back that %s queued", what, wb->queued_by);
        st = gm_keep_first(st, wb->fn(wb->arg, run, where));
        free(wb);
        wb = next;
    }
    return st;
}

/* Waits for the stream's work; then runs the write-backs that the wait
 * covered, in the order they were queued.  A write-back is added after the
 * work it finishes was queued, so those added before the wait began are
 * covered; one added meanwhile by another thread (its work perhaps still
 * queued) stays for a later synchronization.  They are taken off the list
 * first, so none runs twice, and every one is attempted even after a
 * failure; the first failure is returned.
 *
 * A failed wait says nothing of how far the work got: a download may not
 * have reached its bounce block, whose landing host function is still
 * queued, and a write-back's device array may not hold its data yet.  So
 * after a failed wait every write-back stays queued, unrun, for a later
 * synchronization whose wait succeeds.  Unless the stream ends (`final`:
 * its destruction, its context's): then the wait is made once more, as
 * before any free of memory that queued work may still use (the second
 * wait's failure is not reported: the first one is), and every write-back
 * runs if it succeeded, or is dropped unrun if not (the work is lost: a
 * lost device). */
static gpumem_status stream_sync(gpumem_stream *s, const char *what, bool final)
{
    gpumem_context *ctx = s->ctx;
    pthread_mutex_lock(&s->lock);
    uint64_t covered = final ? UINT64_MAX : s->writebacks_added;
    pthread_mutex_unlock(&s->lock);
    gpumem_status st = gm_drv_check(GM_DRV(stream_synchronize, ctx->dctx, s->ds), GM_OP_stream_synchronize,
                                    what);
    bool waited = st == GPUMEM_OK;
    if (!waited && !final)
        return st;
    if (!waited)
        waited = GM_DRV(stream_synchronize, ctx->dctx, s->ds) == GM_CUDA_SUCCESS;
    return run_writebacks(take_writebacks(s, covered), waited, st, what);
}

GPUMEM_API gpumem_status gpumem_stream_synchronize(gpumem_stream *stream)
{
    GM_CHECK_HANDLE(stream);
    return stream_sync(stream, "gpumem_stream_synchronize", false);
}

GPUMEM_API gpumem_status gpumem_stream_query(gpumem_stream *stream)
{
    GM_CHECK_HANDLE(stream);
    int rc = GM_DRV(stream_query, stream->ctx->dctx, stream->ds);
    if (rc == GM_CUDA_ERROR_NOT_READY)
        return GPUMEM_ERROR_NOT_READY; /* an answer, not a failure: the last error stays */
    return gm_drv_check(rc, GM_OP_stream_query, "gpumem_stream_query");
}

GPUMEM_API gpumem_status gpumem_stream_destroy(gpumem_stream *stream)
{
    if (stream == NULL)
        return GPUMEM_OK;
    GM_CHECK_HANDLE(stream);
    if (stream->is_default)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "gpumem_stream_destroy: the default stream belongs to "
                        "its context and cannot be destroyed");
    GM_END_HANDLE(stream);
    gpumem_context *ctx = stream->ctx;
    /* Out of the context's list first, once no gpumem_context_synchronize
     * is synchronizing it: none can then use the driver stream destroyed
     * below.  Its write-backs are committed here. */
    pthread_mutex_lock(&ctx->lock);
    stream->dying = true;
    while (stream->committing > 0)
        pthread_cond_wait(&stream->idle, &ctx->lock);
    for (gpumem_stream **p = &ctx->streams; *p != NULL; p = &(*p)->next) {
        if (*p == stream) {
            *p = stream->next;
            break;
        }
    }
    pthread_mutex_unlock(&ctx->lock);
    gpumem_status st = stream_sync(stream, "gpumem_stream_destroy", true);
    st = gm_keep_first(st, gm_drv_check(GM_DRV(stream_destroy, ctx->dctx, stream->ds), GM_OP_stream_destroy,
                                        "gpumem_stream_destroy"));
    atomic_store_explicit(&stream->destroyed, true, memory_order_release);
    gm_stream_unhold(stream);
    return gm_keep_first(st, gm_context_release_as(ctx, "gpumem_stream_destroy"));
}

GPUMEM_API gpumem_status gpumem_stream_auto_synchronize_begin(gpumem_stream *stream)
{
    GM_CHECK_HANDLE(stream);
    pthread_mutex_lock(&stream->lock);
    stream->auto_depth++;
    pthread_mutex_unlock(&stream->lock);
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_stream_auto_synchronize_end(gpumem_stream *stream)
{
    GM_CHECK_HANDLE(stream);
    pthread_mutex_lock(&stream->lock);
    int depth = stream->auto_depth;
    if (depth > 0)
        stream->auto_depth--;
    pthread_mutex_unlock(&stream->lock);
    if (depth <= 0)
        return gm_error(GPUMEM_ERROR_INVALID_STATE, "gpumem_stream_auto_synchronize_end: no "
                        "auto_synchronize scope of this stream is open");
    if (depth > 1)
        return GPUMEM_OK; /* an inner scope: the outermost end synchronizes */
    return stream_sync(stream, "gpumem_stream_auto_synchronize_end", false);
}

gpumem_status gm_stream_wait(gpumem_stream *stream, const char *what)
{
    if (stream == NULL)
        return GPUMEM_OK;
    return gm_drv_check(GM_DRV(stream_synchronize, stream->ctx->dctx, stream->ds), GM_OP_stream_synchronize,
                        what);
}

/* Lock order: a context's lock, then a stream's. */
static bool has_writebacks(gpumem_stream *s)
{
    if (s == NULL)
        return false;
    pthread_mutex_lock(&s->lock);
    bool any = s->writebacks != NULL;
    pthread_mutex_unlock(&s->lock);
    return any;
}

/* The first stream from s on (in ctx->streams) with write-backs that no
 * destroyer owns, marked as being committed; ctx->lock held. */
static gpumem_stream *take_next(gpumem_stream *s)
{
    for (; s != NULL; s = s->next) {
        if (!s->dying && has_writebacks(s)) {
            s->committing++;
            return s;
        }
    }
    return NULL;
}

gpumem_status gm_streams_commit(gpumem_context *ctx, const char *what)
{
    /* The default stream (the context's own: never destroyed before it),
     * then each other stream once.  A stream is synchronized after the
     * context's lock is dropped (its write-backs call back into the
     * library); while it is, gpumem_stream_destroy waits (committing) and it
     * stays in the list, so its successor is still its successor after. */
    gpumem_status st = GPUMEM_OK;
    pthread_mutex_lock(&ctx->lock);
    gpumem_stream *dflt = has_writebacks(ctx->default_stream) ? ctx->default_stream : NULL;
    pthread_mutex_unlock(&ctx->lock);
    if (dflt != NULL)
        st = stream_sync(dflt, what, false);
    pthread_mutex_lock(&ctx->lock);
    gpumem_stream *s = take_next(ctx->streams);
    while (s != NULL) {
        pthread_mutex_unlock(&ctx->lock);
        st = gm_keep_first(st, stream_sync(s, what, false));
        pthread_mutex_lock(&ctx->lock);
        if (--s->committing == 0)
            pthread_cond_broadcast(&s->idle);
        s = take_next(s->next);
    }
    pthread_mutex_unlock(&ctx->lock);
    return st;
}

/* The context hook: the default stream ends with its context.  Every other
 * stream holds a reference on ctx, so only the default stream can be left;
 * its pending write-backs are committed (arrays in them hold ctx references
 * too, so there are none here in practice). */
static gpumem_status streams_teardown(gpumem_context *ctx, const char *what)
{
    gpumem_stream *s = ctx->default_stream;
    ctx->default_stream = NULL;
    if (s == NULL)
        return GPUMEM_OK;
    gpumem_status st = GPUMEM_OK;
    if (!gm_process_exiting())
        st = stream_sync(s, what, true);
    else
        gm_error_quietly(run_writebacks(take_writebacks(s, UINT64_MAX), false, GPUMEM_OK, what));
    atomic_store_explicit(&s->destroyed, true, memory_order_release);
    gm_stream_unhold(s);
    return st;
}

const gm_context_hook gm_streams_hook = {NULL, streams_teardown};
