/* Events (gpumem/event.h): work on one stream ordered after work on another
 * by an event, proved by the data it reads (and, on the simulator, the
 * stale data it reads without the wait); queries before and after the work;
 * elapsed times from the events' stamps (at least the simulator's delay
 * between the records; more than 0 for a large copy on a GPU); the refusals
 * (no timing, never recorded, not complete, another context, ended handles);
 * and every driver call of an event workload failed in turn. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gpumem.h>

#include "child.h"
#include "tap.h"

/* The simulator's delay of queued work: 200 ms, so that a missing wait
 * reliably reads stale data. */
#define DELAY_US 200000L

enum { N = 1 << 20 };            /* elements of the ordering tests (4 MiB of int32) */
enum { BIG = 1 << 24 };          /* elements of the timed copy (64 MiB of int32) */

static const gpumem_dtype *i32;
static int32_t pattern[N], back[N];

static gpumem_array *device_array(gpumem_context *ctx, int64_t n)
{
    gpumem_array *a = NULL;
    if (gpumem_device_array(ctx, 1, &n, NULL, i32, 'C', NULL, &a) != GPUMEM_OK)
        bail_out("a device array: %s", gpumem_last_error());
    return a;
}

static void set(gpumem_array *a, int32_t v)
{
    if (gpumem_array_fill(a, &v, NULL) != GPUMEM_OK)
        bail_out("fill: %s", gpumem_last_error());
}

/* Whether device array d (N elements) holds the pattern (want 1) or only
 * zeros (want 0); read synchronously on the default stream. */
static int holds(gpumem_array *d, int want)
{
    gpumem_array *h = NULL;
    memset(back, 0x55, sizeof back);
    if (gpumem_host_array_wrap(back, 1, (int64_t[]){N}, NULL, i32, &h) != GPUMEM_OK ||
        gpumem_copy_to_host(d, h, NULL) != GPUMEM_OK)
        bail_out("a download: %s", gpumem_last_error());
    gpumem_array_release(h);
    if (want)
        return memcmp(back, pattern, sizeof back) == 0;
    for (int i = 0; i < N; i++)
        if (back[i] != 0)
            return 0;
    return 1;
}

static void sleep_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* ---- every driver call failed in turn -------------------------------------------------------- */

#define TRY(call) \
    do { \
        if (st == GPUMEM_OK) \
            st = (call); \
    } while (0)
#define KEEP(call) \
    do { \
        gpumem_status kst_ = (call); \
        if (st == GPUMEM_OK) \
            st = kst_; \
    } while (0)

/* Two streams ordered by an event, timed by two: the status, or -2 when it
 * succeeded with a wrong value. */
static int workload(gpumem_context *ctx)
{
    gpumem_status st = GPUMEM_OK;
    gpumem_stream *a = NULL, *b = NULL;
    gpumem_event *e0 = NULL, *e1 = NULL;
    gpumem_array *x = NULL, *y = NULL;
    int64_t n = 1024, last = 1023;
    int32_t five = 5, got = 0;
    float ms = -1;
    TRY(gpumem_stream_create(ctx, GPUMEM_STREAM_NON_BLOCKING, &a));
    TRY(gpumem_stream_create(ctx, GPUMEM_STREAM_NON_BLOCKING, &b));
    TRY(gpumem_event_create(ctx, 0, &e0));
    TRY(gpumem_event_create(ctx, GPUMEM_EVENT_BLOCKING_SYNC, &e1));
    TRY(gpumem_device_array(ctx, 1, &n, NULL, i32, 'C', NULL, &x));
    TRY(gpumem_device_array(ctx, 1, &n, NULL, i32, 'C', NULL, &y));
    TRY(gpumem_event_record(e0, a));
    TRY(gpumem_array_fill(x, &five, a));
    TRY(gpumem_event_record(e1, a));
    TRY(gpumem_stream_wait_event(b, e1));
    TRY(gpumem_array_copy(y, x, b));
    if (st == GPUMEM_OK) {
        gpumem_status q = gpumem_event_query(e1);
        if (q != GPUMEM_ERROR_NOT_READY)
            st = q;
    }
    TRY(gpumem_event_synchronize(e1));
    TRY(gpumem_event_elapsed_time(e0, e1, &ms));
    TRY(gpumem_stream_synchronize(b));
    TRY(gpumem_array_get_item(y, &last, &got, NULL));
    int good = got == 5 && ms >= 0;
    KEEP(gpumem_array_release(y));
    KEEP(gpumem_array_release(x));
    if (e1 != NULL)
        KEEP(gpumem_event_destroy(e1));
    if (e0 != NULL)
        KEEP(gpumem_event_destroy(e0));
    if (b != NULL)
        KEEP(gpumem_stream_destroy(b));
    if (a != NULL)
        KEEP(gpumem_stream_destroy(a));
    return st == GPUMEM_OK && !good ? -2 : (int)st;
}

static void run(const void *arg, child_result *out)
{
    long k = *(const long *)arg;
    i32 = gpumem_dtype_builtin(GPUMEM_INT32);
    gpumem_context *ctx = NULL;
    if (gpumem_context_create(0, &ctx) != GPUMEM_OK) {
        out->status = -1;
        return;
    }
    uint64_t f0 = 0, f1 = 0, total = 0;
    gpumem_context_set_dealloc_limits(ctx, 0, 0.0); /* every free at its release */
    gpumem_memory_info(ctx, &f0, &total);
    uint64_t calls0 = fault_arm(k);
    out->status = workload(ctx);
    snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
    out->value[0] = fault_disarm(calls0);
    gpumem_context_flush_deallocations(ctx);
    gpumem_memory_info(ctx, &f1, &total);
    out->value[1] = (long)(f0 - f1); /* device bytes not given back */
    gpumem_context_release(ctx);
}

static void fault_injection(void)
{
    fault_walk_all(run, "the event workload", 14, "device", "cuMemFree");
}

/* ---- the public API ---------------------------------------------------------------------------- */

/* A copy on stream a, an event recorded behind it, stream b waiting for the
 * event, then a copy onward on b: the data b reads is the new data.  Without
 * the wait (simulator), b reads the stale data. */
static void ordering(gpumem_context *ctx, int sim)
{
    gpumem_stream *a = NULL, *b = NULL;
    gpumem_event *ev = NULL;
    gpumem_stream_create(ctx, GPUMEM_STREAM_NON_BLOCKING, &a);
    gpumem_stream_create(ctx, GPUMEM_STREAM_NON_BLOCKING, &b);
    is_int(gpumem_event_create(ctx, 0, &ev), GPUMEM_OK, "create an event");
    gpumem_array *src = device_array(ctx, N), *mid = device_array(ctx, N), *dst = device_array(ctx, N);
    gpumem_array *h = NULL;
    gpumem_host_array_wrap(pattern, 1, (int64_t[]){N}, NULL, i32, &h);
    gpumem_copy_to_device(src, h, NULL);
    set(mid, 0);
    set(dst, 0);

    is_int(gpumem_array_copy(mid, src, a), GPUMEM_OK, "a copy queued on stream a");
    is_int(gpumem_event_record(ev, a), GPUMEM_OK, "the event recorded behind it");
    if (sim)
        is_int(gpumem_event_query(ev), GPUMEM_ERROR_NOT_READY, "query: not ready while the copy waits");
    else
        skip(1, "the GPU's timing is not deterministic; the simulator delays queued work");
    is_int(gpumem_stream_wait_event(b, ev), GPUMEM_OK, "stream b waits for the event");
    is_int(gpumem_array_copy(dst, mid, b), GPUMEM_OK, "the copy onward queued on b");
    is_int(gpumem_stream_synchronize(b), GPUMEM_OK, "synchronize b (only b)");
    ok(holds(dst, 1), "b's copy read the data a's copy wrote: the new data");
    is_int(gpumem_event_query(ev), GPUMEM_OK, "query: the event has completed");

    if (sim) {
        set(mid, 0);
        set(dst, 0);
        gpumem_array_copy(mid, src, a);
        gpumem_array_copy(dst, mid, b);
        gpumem_stream_synchronize(b);
        ok(holds(dst, 0), "without the wait b's copy read the stale data");
        gpumem_stream_synchronize(a);
        ok(holds(mid, 1), "...while a's copy was still waiting");
    } else {
        skip(2, "the GPU's timing is not deterministic; the simulator delays queued work");
    }

    /* NULL: the context's default stream, for the record and for the wait */
    gpumem_stream *dflt = NULL;
    gpumem_stream_default(ctx, &dflt);
    set(mid, 0);
    set(dst, 0);
    gpumem_array_copy(mid, src, dflt);
    is_int(gpumem_event_record(ev, NULL), GPUMEM_OK, "record on NULL: the default stream");
    gpumem_stream_wait_event(b, ev);
    gpumem_array_copy(dst, mid, b);
    gpumem_stream_synchronize(b);
    ok(holds(dst, 1), "b waited for the default stream's copy");
    set(mid, 0);
    set(dst, 0);
    gpumem_array_copy(mid, src, a);
    gpumem_event_record(ev, a);
    is_int(gpumem_stream_wait_event(NULL, ev), GPUMEM_OK, "wait on NULL: the default stream waits");
    gpumem_array_copy(dst, mid, dflt);
    gpumem_stream_synchronize(dflt);
    ok(holds(dst, 1), "the default stream's copy read a's data");

    gpumem_context *c = NULL;
    is_int(gpumem_event_context(ev, &c), GPUMEM_OK, "the event's context");
    ok(c == ctx, "is the one it was made in");

    gpumem_array_release(h);
    gpumem_array_release(src);
    gpumem_array_release(mid);
    gpumem_array_release(dst);
    is_int(gpumem_event_destroy(ev), GPUMEM_OK, "destroy the event");
    gpumem_stream_destroy(b);
    gpumem_stream_destroy(a);
}

/* Elapsed times come from the events' stamps. */
static void timing(gpumem_context *ctx, int sim)
{
    gpumem_stream *a = NULL;
    gpumem_event *e0 = NULL, *e1 = NULL, *nt = NULL, *fresh = NULL;
    gpumem_stream_create(ctx, GPUMEM_STREAM_NON_BLOCKING, &a);
    gpumem_event_create(ctx, 0, &e0);
    gpumem_event_create(ctx, GPUMEM_EVENT_BLOCKING_SYNC, &e1);
    is_int(gpumem_event_create(ctx, GPUMEM_EVENT_DISABLE_TIMING, &nt), GPUMEM_OK, "an event without timing");
    gpumem_event_create(ctx, 0, &fresh);
    float ms = -1;

    is_int(gpumem_event_query(fresh), GPUMEM_OK, "an event never recorded is complete");
    is_int(gpumem_event_synchronize(fresh), GPUMEM_OK, "and synchronizes at once");
    is_int(gpumem_event_elapsed_time(fresh, e1, &ms), GPUMEM_ERROR_INVALID_STATE, "elapsed: never recorded");
    like(gpumem_last_error(), "'start' was never recorded", "the message names the event");

    /* a known large copy: more than 0 ms between the records around it */
    gpumem_array *big = device_array(ctx, BIG), *big2 = device_array(ctx, BIG);
    set(big, 3);
    is_int(gpumem_event_record(e0, a), GPUMEM_OK, "record before a 64 MiB copy");
    gpumem_array_copy(big2, big, a);
    is_int(gpumem_event_record(e1, a), GPUMEM_OK, "record after it");
    is_int(gpumem_event_synchronize(e1), GPUMEM_OK, "synchronize the second");
    is_int(gpumem_event_query(e0), GPUMEM_OK, "the first completed before it (stream order)");
    is_int(gpumem_event_elapsed_time(e0, e1, &ms), GPUMEM_OK, "elapsed time");
    ok(ms > 0, "the copy took more than 0 ms (%.3f ms)", (double)ms);
    float back_ms = 0;
    if (sim) {
        gpumem_event_elapsed_time(e1, e0, &back_ms);
        ok(back_ms == -ms, "the other way round it is negative (%.3f ms)", (double)back_ms);
    } else {
        skip(1, "the driver does not document the time from a later event to an earlier one");
    }
    int32_t v = 0;
    gpumem_array_get_item(big2, (int64_t[]){BIG - 1}, &v, NULL);
    is_int(v, 3, "and the copy arrived");

    if (sim) {
        /* the first record completes (synchronized at once: no delay), then
         * the second is queued, and waits the delay: its stamp is at least
         * DELAY_US later.  Waiting by queries does not hurry it. */
        gpumem_event_record(e0, a);
        gpumem_event_synchronize(e0);
        gpumem_array_copy(big2, big, a);
        gpumem_event_record(e1, a);
        float was = ms;
        is_int(gpumem_event_elapsed_time(e0, e1, &ms), GPUMEM_ERROR_NOT_READY, "elapsed: not complete yet");
        like(gpumem_last_error(), "has not completed yet", "the message says so");
        ok(ms == was, "ms is left alone");
        int polls = 0;
        while (gpumem_event_query(e1) == GPUMEM_ERROR_NOT_READY && polls < 100000) {
            sleep_ms(1);
            polls++;
        }
        is_int(gpumem_event_query(e1), GPUMEM_OK, "it completes by itself");
        is_int(gpumem_event_elapsed_time(e0, e1, &ms), GPUMEM_OK, "elapsed time");
        ok(ms >= DELAY_US / 1000.0f, "at least the simulator's delay between the records (%.3f >= %.0f ms)",
           (double)ms, DELAY_US / 1000.0);
    } else {
        skip(6, "the simulator's delay gives the lower bound");
    }

    /* without timing */
    gpumem_event_record(nt, a);
    gpumem_event_synchronize(nt);
    ms = 12;
    is_int(gpumem_event_elapsed_time(e0, nt, &ms), GPUMEM_ERROR_INVALID_VALUE, "elapsed: 'end' keeps no time");
    like(gpumem_last_error(), "'end' was created with GPUMEM_EVENT_DISABLE_TIMING", "the message says why");
    is_int(gpumem_event_elapsed_time(nt, e1, &ms), GPUMEM_ERROR_INVALID_VALUE, "elapsed: nor as 'start'");
    like(gpumem_last_error(), "'start'", "naming it");
    ok(ms == 12, "ms is left alone");
    is_int(gpumem_event_elapsed_time(e0, e1, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "elapsed: ms NULL");

    gpumem_array_release(big);
    gpumem_array_release(big2);
    gpumem_event_destroy(fresh);
    gpumem_event_destroy(nt);
    gpumem_event_destroy(e1);
    gpumem_event_destroy(e0);
    gpumem_stream_destroy(a);
}

/* Refusals: flags, NULLs, ended handles, handles of another type. */
static void handles(gpumem_context *ctx)
{
    gpumem_event *ev = NULL;
    is_int(gpumem_event_create(ctx, 0x40, &ev), GPUMEM_ERROR_INVALID_VALUE, "create: an unknown flag");
    like(gpumem_last_error(), "unknown flags 0x40", "the message names it");
    ok(ev == NULL, "nothing came back");
    is_int(gpumem_event_create(ctx, 0, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "create: event NULL");
    is_int(gpumem_event_record(NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "record: event NULL");
    is_int(gpumem_event_query(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "query: event NULL");
    is_int(gpumem_stream_wait_event(NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "wait: event NULL");
    is_int(gpumem_event_destroy(NULL), GPUMEM_OK, "destroy: NULL is a no-op");

    gpumem_stream *s = NULL, *gone = NULL;
    gpumem_stream_create(ctx, 0, &s);
    gpumem_stream_create(ctx, 0, &gone);
    gpumem_stream_destroy(gone);
    gpumem_event_create(ctx, 0, &ev);
    is_int(gpumem_event_record(ev, gone), GPUMEM_ERROR_INVALID_STATE, "record on a destroyed stream");
    like(gpumem_last_error(), "'stream'", "names the stream");
    is_int(gpumem_stream_wait_event(gone, ev), GPUMEM_ERROR_INVALID_STATE, "a destroyed stream waits");
    is_int(gpumem_event_record((gpumem_event *)s, s), GPUMEM_ERROR_INVALID_VALUE, "a stream is no event");
    like(gpumem_last_error(), "is a stream (gpumem_stream), not an event (gpumem_event)", "the message says so");

    gpumem_event *other = NULL;
    gpumem_event_create(ctx, 0, &other);
    gpumem_event_record(other, s);
    is_int(gpumem_event_destroy(ev), GPUMEM_OK, "destroy");
    is_int(gpumem_event_destroy(ev), GPUMEM_ERROR_INVALID_STATE, "destroy again");
    like(gpumem_last_error(), "gpumem_event_destroy: 'event' was destroyed already", "names the call and the event");
    is_int(gpumem_event_record(ev, s), GPUMEM_ERROR_INVALID_STATE, "record a destroyed event");
    is_int(gpumem_event_query(ev), GPUMEM_ERROR_INVALID_STATE, "query it");
    is_int(gpumem_event_synchronize(ev), GPUMEM_ERROR_INVALID_STATE, "synchronize it");
    float ms = 5;
    is_int(gpumem_event_elapsed_time(ev, other, &ms), GPUMEM_ERROR_INVALID_STATE, "as the start of elapsed");
    like(gpumem_last_error(), "'start'", "naming it");
    is_int(gpumem_event_elapsed_time(other, ev, &ms), GPUMEM_ERROR_INVALID_STATE, "as the end");
    ok(ms == 5, "ms is left alone");
    is_int(gpumem_stream_wait_event(s, ev), GPUMEM_ERROR_INVALID_STATE, "wait for it");
    like(gpumem_last_error(), "gpumem_stream_wait_event: 'event'", "names the call and the event");
    gpumem_context *c = NULL;
    is_int(gpumem_event_context(ev, &c), GPUMEM_ERROR_INVALID_STATE, "its context");
    ok(c == NULL, "nothing came back");
    is_int(gpumem_event_synchronize(other), GPUMEM_OK, "another event still works");
    gpumem_event_destroy(other);
    gpumem_stream_destroy(s);
}

/* Events and streams of two contexts. */
static void contexts(gpumem_context *ctx, int sim)
{
    gpumem_context *c1 = NULL;
    int count = 0;
    gpumem_device_count(&count);
    if (count < 2 || gpumem_context_create(1, &c1) != GPUMEM_OK) {
        skip(8, "needs two devices");
        return;
    }
    gpumem_stream *a = NULL, *s1 = NULL;
    gpumem_event *ev = NULL, *ev1 = NULL;
    gpumem_stream_create(ctx, GPUMEM_STREAM_NON_BLOCKING, &a);
    gpumem_stream_create(c1, GPUMEM_STREAM_NON_BLOCKING, &s1);
    gpumem_event_create(ctx, 0, &ev);
    gpumem_event_create(c1, 0, &ev1);
    is_int(gpumem_event_record(ev, s1), GPUMEM_ERROR_CONTEXT_MISMATCH, "record on a stream of another context");
    like(gpumem_last_error(), "'event' belongs to the context of device 0, but the stream to device 1",
         "the message names both devices");
    is_int(gpumem_event_query(ev), GPUMEM_OK, "the event was not recorded");
    gpumem_event_record(ev, a);
    gpumem_event_record(ev1, s1);
    gpumem_event_synchronize(ev);
    gpumem_event_synchronize(ev1);
    float ms = 0;
    is_int(gpumem_event_elapsed_time(ev, ev1, &ms), GPUMEM_ERROR_CONTEXT_MISMATCH, "elapsed between two contexts");

    /* device 1 waits for device 0's copy: a peer copy queued on device 1's stream */
    gpumem_array *src = device_array(ctx, N), *mid = device_array(ctx, N), *dst = device_array(c1, N);
    gpumem_array *h = NULL;
    gpumem_host_array_wrap(pattern, 1, (int64_t[]){N}, NULL, i32, &h);
    gpumem_copy_to_device(src, h, NULL);
    set(mid, 0);
    set(dst, 0);
    gpumem_array_copy(mid, src, a);
    gpumem_event_record(ev, a);
    is_int(gpumem_stream_wait_event(s1, ev), GPUMEM_OK, "a stream of device 1 waits for device 0's event");
    is_int(gpumem_array_copy(dst, mid, s1), GPUMEM_OK, "a copy from device 0 queued on it");
    gpumem_stream_synchronize(s1);
    ok(holds(dst, 1), "it read the data device 0's copy wrote");
    if (sim) {
        set(mid, 0);
        set(dst, 0);
        gpumem_array_copy(mid, src, a);
        gpumem_array_copy(dst, mid, s1);
        gpumem_stream_synchronize(s1);
        ok(holds(dst, 0), "without the wait, stale data");
        gpumem_stream_synchronize(a);
    } else {
        skip(1, "the GPU's timing is not deterministic; the simulator delays queued work");
    }
    gpumem_array_release(h);
    gpumem_array_release(src);
    gpumem_array_release(mid);
    gpumem_array_release(dst);
    gpumem_event_destroy(ev1);
    gpumem_event_destroy(ev);
    gpumem_stream_destroy(s1);
    gpumem_stream_destroy(a);
    gpumem_context_release(c1);
}

int main(void)
{
    int sim = test_on_sim();
    if (sim) {
        setenv("GPUMEM_SIM_DEVICES", "2", 1);
        char d[32];
        snprintf(d, sizeof d, "%ld", DELAY_US);
        setenv("GPUMEM_SIM_STREAM_DELAY_US", d, 1);
    }
    for (int i = 0; i < N; i++)
        pattern[i] = i * 3 + 1;
    plan(84);
    if (sim)
        fault_injection(); /* children first: before this process starts the simulator's threads */
    else
        skip(5, "fault injection walks run on the simulator");
    i32 = gpumem_dtype_builtin(GPUMEM_INT32);
    gpumem_context *ctx = NULL;
    if (gpumem_context_create(0, &ctx) != GPUMEM_OK)
        bail_out("no context: %s", gpumem_last_error());
    ordering(ctx, sim);
    timing(ctx, sim);
    handles(ctx);
    contexts(ctx, sim);
    gpumem_context_release(ctx);
    return exit_status();
}
