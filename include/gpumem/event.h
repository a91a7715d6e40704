/**
 * @file gpumem/event.h
 * @brief Events: numba's cuda.event(), record(), wait(), synchronize(),
 *        query() and event_elapsed_time(), the driver's cuEvent* calls.
 *
 * An event marks a point in a stream's work.  gpumem_event_record() puts
 * the mark behind the work queued on the stream so far; the event completes
 * when that work has completed.  Other work can then be ordered after it
 * without the host waiting: gpumem_stream_wait_event() makes a stream's
 * later work wait for the event (on the device, or the simulator's
 * workers), gpumem_event_synchronize() makes the host wait for it, and
 * gpumem_event_query() asks whether it has completed.  An event that was
 * created with timing (the default) also records when it completed, and
 * gpumem_event_elapsed_time() gives the milliseconds between two of them:
 * GPU time, measured where the work runs.
 *
 * An event belongs to the context it was created in (it holds a reference
 * on it) and is recorded only on streams of that context.  A stream of any
 * context may wait for it: that is how work on one device waits for work on
 * another.  Recording an event again moves its mark: waits, queries and
 * synchronizations from then on refer to the newest record, and those
 * already queued keep the mark they saw.
 *
 * Events order the device's work only.  They do not commit a stream's
 * pending write-backs (gpumem_to_device() with
 * ::GPUMEM_TO_DEVICE_WRITEBACK): those wait for gpumem_stream_synchronize()
 * of their stream.  A copy queued into pageable host memory has landed when
 * an event recorded after it on its stream has completed.
 *
 * @par The simulator
 * The simulator keeps events in stream order: a record is an item of the
 * stream's queue that completes, and takes its time stamp, once the items
 * before it have completed; a wait is an item that holds the waiting
 * stream's later items until the event's record has completed.  With
 * @c GPUMEM_SIM_STREAM_DELAY_US every queued item, records included, waits
 * that long before it runs (unless something synchronizes it), so a
 * missing wait shows up as stale data, and a record queued after an
 * earlier one has completed is stamped at least the delay later.
 *
 * gpumem_stream_wait_event() shows the calls in a whole program.
 */
#ifndef GPUMEM_EVENT_H
#define GPUMEM_EVENT_H

#include <gpumem/export.h>
#include <gpumem/status.h>
#include <gpumem/context.h>
#include <gpumem/stream.h>

GPUMEM_BEGIN_DECLS

/** An event of a context.  Added in GPUMEM_1.1. */
typedef struct gpumem_event gpumem_event;

/** Flag of gpumem_event_create(): gpumem_event_synchronize() blocks the thread instead of spinning
 *  (CU_EVENT_BLOCKING_SYNC).  Added in GPUMEM_1.1. */
#define GPUMEM_EVENT_BLOCKING_SYNC 0x1
/** Flag of gpumem_event_create(): no time stamp, so gpumem_event_elapsed_time() refuses the event; recording
 *  and waiting cost less (CU_EVENT_DISABLE_TIMING).  Added in GPUMEM_1.1. */
#define GPUMEM_EVENT_DISABLE_TIMING 0x2

/**
 * numba's cuda.event(timing): a new event of @p ctx, not yet recorded.
 * Added in GPUMEM_1.1.
 * @param ctx the context, or NULL for the autoinit context.
 * @param flags 0 (with timing), or ::GPUMEM_EVENT_DISABLE_TIMING and ::GPUMEM_EVENT_BLOCKING_SYNC or'ed.
 * @param[out] event the new event; destroy it with gpumem_event_destroy().
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT (@p event), ::GPUMEM_ERROR_INVALID_VALUE (unknown flags),
 *        ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY, an autoinit failure or a driver failure (see gpumem/status.h).
 */
GPUMEM_API gpumem_status gpumem_event_create(gpumem_context *ctx, unsigned flags, gpumem_event **event);

/**
 * Destroys the event and drops its reference on its context.  Work that
 * the event's last record is behind is not waited for, and waits already
 * queued on other streams still wait for it (the driver lets the event go
 * once they are done).  NULL is a no-op.  Destroying it again, or passing
 * it to any function afterwards, is ::GPUMEM_ERROR_INVALID_STATE
 * (gpumem/status.h says how far that is detected).  Added in GPUMEM_1.1.
 * @param event the event, or NULL.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_INVALID_STATE (destroyed already), ::GPUMEM_ERROR_INVALID_VALUE (not an
 *        event), or a driver failure of the destruction (the event is destroyed either way).
 */
GPUMEM_API gpumem_status gpumem_event_destroy(gpumem_event *event);

/**
 * numba's event.record(stream): marks the point behind the work queued on
 * @p stream so far.  The event completes when that work has completed (at
 * once if there is none).  Recording again moves the mark; see the file's
 * description.  Added in GPUMEM_1.1.
 * @param event the event.
 * @param stream a stream of the event's context, or NULL for that context's default stream.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT (@p event), ::GPUMEM_ERROR_CONTEXT_MISMATCH (a stream of
 *        another context), ::GPUMEM_ERROR_INVALID_STATE (a destroyed event or stream), or a driver failure.
 */
GPUMEM_API gpumem_status gpumem_event_record(gpumem_event *event, gpumem_stream *stream);

/**
 * numba's event.query(): whether the event has completed, without waiting:
 * ::GPUMEM_OK when the work before its last record has completed, or when
 * it was never recorded; ::GPUMEM_ERROR_NOT_READY while that work runs
 * (an answer, not a failure: the thread's last error is left alone, as by
 * gpumem_stream_query()).  Added in GPUMEM_1.1.
 * @param event the event.
 * @return ::GPUMEM_OK when complete; ::GPUMEM_ERROR_NOT_READY while not; ::GPUMEM_ERROR_NULL_ARGUMENT,
 *        ::GPUMEM_ERROR_INVALID_STATE (destroyed), or a driver failure.
 */
GPUMEM_API gpumem_status gpumem_event_query(gpumem_event *event);

/**
 * numba's event.synchronize(): waits until the event has completed (at
 * once if it was never recorded).  Write-backs of the stream it was
 * recorded on are not committed (gpumem_stream_synchronize() does that).
 * Added in GPUMEM_1.1.
 * @param event the event.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_STATE (destroyed), or a driver
 *        failure (the failure of the work it waited for).
 */
GPUMEM_API gpumem_status gpumem_event_synchronize(gpumem_event *event);

/**
 * numba's event_elapsed_time(start, end): the milliseconds from the
 * completion of @p start to that of @p end, both recorded and completed, as
 * the device measured them (the driver's resolution is about half a
 * microsecond).  On failure @p ms is left unchanged.  Added in
 * GPUMEM_1.1.
 * @param start the earlier event.
 * @param end the later event, of the same context.
 * @param[out] ms the elapsed time in milliseconds.
 * @return ::GPUMEM_OK;
 *        ::GPUMEM_ERROR_NULL_ARGUMENT (an argument is NULL);
 *        ::GPUMEM_ERROR_INVALID_VALUE (an event created with ::GPUMEM_EVENT_DISABLE_TIMING: it has no time);
 *        ::GPUMEM_ERROR_INVALID_STATE (an event never recorded, or destroyed);
 *        ::GPUMEM_ERROR_NOT_READY (an event's work has not completed yet: synchronize @p end first);
 *        ::GPUMEM_ERROR_CONTEXT_MISMATCH (events of two contexts);
 *        or a driver failure.
 *        The message names the event.
 */
GPUMEM_API gpumem_status gpumem_event_elapsed_time(gpumem_event *start, gpumem_event *end, float *ms);

/**
 * numba's event.wait(stream): the work queued on @p stream after this call
 * waits until @p event has completed (its record at the time of this call;
 * nothing if it was never recorded).  The host does not wait.  The stream
 * may be of another context than the event's (work on one device waiting
 * for work on another).  Added in GPUMEM_1.1.
 * @par Example
 * Work on one stream ordered after work on another, without the host
 * waiting between them:
 * @code{.c}
 * #include <stdio.h>
 * #include <gpumem.h>
 *
 * int main(void)
 * {
 *     const int64_t n = 1 << 20, last = (1 << 20) - 1;
 *     const gpumem_dtype *f32 = gpumem_dtype_builtin(GPUMEM_FLOAT32);
 *     gpumem_stream *a = NULL, *b = NULL;
 *     gpumem_event *filled = NULL;
 *     gpumem_array *x = NULL, *y = NULL;
 *     float seven = 7, v = 0;
 *     gpumem_status st = gpumem_stream_create(NULL, GPUMEM_STREAM_NON_BLOCKING, &a);
 *     if (st == GPUMEM_OK)
 *         st = gpumem_stream_create(NULL, GPUMEM_STREAM_NON_BLOCKING, &b);
 *     if (st == GPUMEM_OK)
 *         st = gpumem_event_create(NULL, GPUMEM_EVENT_DISABLE_TIMING, &filled);
 *     if (st == GPUMEM_OK)
 *         st = gpumem_device_array(NULL, 1, &n, NULL, f32, 'C', NULL, &x);
 *     if (st == GPUMEM_OK)
 *         st = gpumem_device_array(NULL, 1, &n, NULL, f32, 'C', NULL, &y);
 *     if (st == GPUMEM_OK)
 *         st = gpumem_array_fill(x, &seven, a); // queued on a
 *     if (st == GPUMEM_OK)
 *         st = gpumem_event_record(filled, a); // completes when the fill has
 *     if (st == GPUMEM_OK)
 *         st = gpumem_stream_wait_event(b, filled); // b's later work waits for it
 *     if (st == GPUMEM_OK)
 *         st = gpumem_array_copy(y, x, b); // so this copy reads the filled x
 *     if (st == GPUMEM_OK)
 *         st = gpumem_stream_synchronize(b);
 *     if (st == GPUMEM_OK)
 *         st = gpumem_array_get_item(y, &last, &v, NULL);
 *     if (st == GPUMEM_OK)
 *         printf("y[last] = %g\n", v); // prints: y[last] = 7
 *     else
 *         fprintf(stderr, "gpumem: %s\n", gpumem_last_error());
 *     gpumem_array_release(y);
 *     gpumem_array_release(x);
 *     gpumem_event_destroy(filled);
 *     gpumem_stream_destroy(b);
 *     gpumem_stream_destroy(a);
 *     return st == GPUMEM_OK ? 0 : 1;
 * }
 * @endcode
 * @param stream the stream that waits, or NULL for the default stream of the event's context.
 * @param event the event.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT (@p event), ::GPUMEM_ERROR_INVALID_STATE (a destroyed
 *        event or stream), or a driver failure.
 */
GPUMEM_API gpumem_status gpumem_stream_wait_event(gpumem_stream *stream, gpumem_event *event);

/**
 * The event's context (borrowed).  Added in GPUMEM_1.1.
 * @param event the event.
 * @param[out] ctx its context (borrowed).
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_STATE (destroyed).
 */
GPUMEM_API gpumem_status gpumem_event_context(const gpumem_event *event, gpumem_context **ctx);

GPUMEM_END_DECLS

#endif /* GPUMEM_EVENT_H */
