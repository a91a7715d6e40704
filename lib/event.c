/*
 * event.c - events (gpumem/event.h): a driver event with its context, and
 * streams waiting for events.
 *
 * An event holds a reference on its context, so the context's driver
 * context outlives the driver event.  The library remembers whether an event
 * was ever recorded and whether it keeps time, so that
 * gpumem_event_elapsed_time can say which event is wrong and why, where the
 * driver answers CUDA_ERROR_INVALID_HANDLE for both.
 */
#include "config.h"

#include <stdatomic.h>
#include <stdbool.h>

#include "context.h"
#include "driver.h"
#include "error.h"
#include "gpumem/event.h"
#include "handles.h"
#include "stream.h"

struct gpumem_event {
    gm_handle h;          /* first: the lifecycle check (handles.h); dead once destroyed */
    gpumem_context *ctx;  /* retained */
    gm_devent *ev;        /* the driver event */
    unsigned flags;       /* GPUMEM_EVENT_* */
    atomic_bool recorded; /* a gpumem_event_record succeeded */
};

#define EVENT_FLAGS ((unsigned)(GPUMEM_EVENT_BLOCKING_SYNC | GPUMEM_EVENT_DISABLE_TIMING))

GPUMEM_API gpumem_status gpumem_event_create(gpumem_context *ctx, unsigned flags, gpumem_event **event)
{
    GM_CHECK_NULL(event);
    gpumem_status st;
    ctx = gm_context_or_default(ctx, &st);
    if (st != GPUMEM_OK)
        return st;
    if (flags & ~EVENT_FLAGS)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "gpumem_event_create: unknown flags 0x%x (known: "
                        "GPUMEM_EVENT_BLOCKING_SYNC 0x1, GPUMEM_EVENT_DISABLE_TIMING 0x2)", flags & ~EVENT_FLAGS);
    unsigned cu_flags = (flags & GPUMEM_EVENT_BLOCKING_SYNC ? GM_CU_EVENT_BLOCKING_SYNC : 0) |
                        (flags & GPUMEM_EVENT_DISABLE_TIMING ? GM_CU_EVENT_DISABLE_TIMING : 0);
    gm_devent *ev = NULL;
    st = gm_drv_check(GM_DRV(event_create, ctx->dctx, &ev, cu_flags), GM_OP_event_create, "gpumem_event_create");
    if (st != GPUMEM_OK)
        return st;
    gpumem_event *e = gm_handle_new_zeroed(GM_HANDLE_EVENT, sizeof *e);
    if (e == NULL) {
        GM_DRV(event_destroy, ctx->dctx, ev);
        return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "gpumem_event_create: out of host memory");
    }
    e->ctx = ctx;
    e->ev = ev;
    e->flags = flags;
    atomic_init(&e->recorded, false);
    gpumem_context_retain(ctx);
    *event = e;
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_event_destroy(gpumem_event *event)
{
    if (event == NULL)
        return GPUMEM_OK;
    GM_END_HANDLE(event);
    gpumem_context *ctx = event->ctx;
    gpumem_status st = GPUMEM_OK;
    /* at process exit the driver may be going: its objects go with the process */
    if (!gm_process_exiting())
        st = gm_drv_check(GM_DRV(event_destroy, ctx->dctx, event->ev), GM_OP_event_destroy, "gpumem_event_destroy");
    gm_handle_free(event);
    return gm_keep_first(st, gm_context_release_as(ctx, "gpumem_event_destroy"));
}

GPUMEM_API gpumem_status gpumem_event_record(gpumem_event *event, gpumem_stream *stream)
{
    GM_CHECK_HANDLE(event);
    gpumem_status st = gm_stream_check(stream, event->ctx, "gpumem_event_record", "event");
    if (st != GPUMEM_OK)
        return st;
    st = gm_drv_check(GM_DRV(event_record, event->ctx->dctx, event->ev, gm_stream_ds(stream)), GM_OP_event_record,
                      "gpumem_event_record");
    if (st == GPUMEM_OK)
        atomic_store_explicit(&event->recorded, true, memory_order_release);
    return st;
}

GPUMEM_API gpumem_status gpumem_event_query(gpumem_event *event)
{
    GM_CHECK_HANDLE(event);
    int rc = GM_DRV(event_query, event->ctx->dctx, event->ev);
    if (rc == GM_CUDA_ERROR_NOT_READY)
        return GPUMEM_ERROR_NOT_READY; /* an answer, not a failure: the last error stays */
    return gm_drv_check(rc, GM_OP_event_query, "gpumem_event_query");
}

GPUMEM_API gpumem_status gpumem_event_synchronize(gpumem_event *event)
{
    GM_CHECK_HANDLE(event);
    return gm_drv_check(GM_DRV(event_synchronize, event->ctx->dctx, event->ev), GM_OP_event_synchronize,
                        "gpumem_event_synchronize");
}

/* Why event (the argument named arg) has no time to give, or GPUMEM_OK. */
static gpumem_status timed(const gpumem_event *event, const char *arg)
{
    if (event->flags & GPUMEM_EVENT_DISABLE_TIMING)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "gpumem_event_elapsed_time: '%s' was created with "
                        "GPUMEM_EVENT_DISABLE_TIMING and keeps no time", arg);
    if (!atomic_load_explicit(&event->recorded, memory_order_acquire))
        return gm_error(GPUMEM_ERROR_INVALID_STATE, "gpumem_event_elapsed_time: '%s' was never recorded "
                        "(gpumem_event_record)", arg);
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_event_elapsed_time(gpumem_event *start, gpumem_event *end, float *ms)
{
    GM_CHECK_HANDLE(start);
    GM_CHECK_HANDLE(end);
    GM_CHECK_NULL(ms);
    if (start->ctx->dctx != end->ctx->dctx)
        return gm_error(GPUMEM_ERROR_CONTEXT_MISMATCH, "gpumem_event_elapsed_time: 'start' belongs to the context "
                        "of device %d, 'end' to that of device %d", start->ctx->device, end->ctx->device);
    gpumem_status st = timed(start, "start");
    if (st == GPUMEM_OK)
        st = timed(end, "end");
    if (st != GPUMEM_OK)
        return st;
    float v = 0;
    int rc = GM_DRV(event_elapsed_time, start->ctx->dctx, &v, start->ev, end->ev);
    if (rc == GM_CUDA_ERROR_NOT_READY) {
        /* the message names the event that has not completed (gpumem/event.h) */
        const char *which = GM_DRV(event_query, start->ctx->dctx, start->ev) == GM_CUDA_ERROR_NOT_READY ? "start"
                                                                                                      : "end";
        return gm_error(GPUMEM_ERROR_NOT_READY, "gpumem_event_elapsed_time: the work before '%s' has not "
                        "completed yet (cuEventElapsedTime: CUDA_ERROR_NOT_READY); wait for it first, "
                        "with gpumem_event_synchronize(end)", which);
    }
    st = gm_drv_check(rc, GM_OP_event_elapsed_time, "gpumem_event_elapsed_time");
    if (st == GPUMEM_OK)
        *ms = v;
    return st;
}

GPUMEM_API gpumem_status gpumem_stream_wait_event(gpumem_stream *stream, gpumem_event *event)
{
    GM_CHECK_HANDLE_OR_NULL(stream);
    GM_CHECK_HANDLE(event);
    /* A stream of any context may wait; the driver call goes to the stream's
     * own (NULL: the event's context's legacy default stream). */
    gm_dctx *dctx = stream != NULL ? stream->ctx->dctx : event->ctx->dctx;
    return gm_drv_check(GM_DRV(stream_wait_event, dctx, gm_stream_ds(stream), event->ev),
                        GM_OP_stream_wait_event, "gpumem_stream_wait_event");
}

GPUMEM_API gpumem_status gpumem_event_context(const gpumem_event *event, gpumem_context **ctx)
{
    GM_CHECK_HANDLE(event);
    GM_CHECK_NULL(ctx);
    *ctx = event->ctx;
    return GPUMEM_OK;
}
