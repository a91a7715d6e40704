/* The promises of status.h, context.h, stream.h, event.h, host.h,
 * staging.h and cleanup.h (part of tests/test-promises-memory). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

#include <gpumem.h>

#include "promises.h"
#include "tap.h"
#include "child.h"
#include "promises-memory.h"

/* ---- status.h ------------------------------------------------------------------------ */

static void *fresh_thread(void *arg)
{
    int *r = arg;
    gpumem_copy_path path = (gpumem_copy_path)77;
    r[0] = strcmp(gpumem_last_error(), "") == 0;
    r[1] = gpumem_last_status() == GPUMEM_OK;
    r[2] = gpumem_last_driver_result() == 0;
    r[3] = gpumem_debug_last_copy_path(&path) == GPUMEM_OK && path == GPUMEM_COPY_PATH_NONE;
    return NULL;
}

void test_status(void)
{
    int r[4] = {0, 0, 0, 0};
    pthread_t t;
    pthread_create(&t, NULL, fresh_thread, r);
    pthread_join(t, NULL);
    ok(r[0] && r[1] && r[2], "a fresh thread: no last error, status OK, driver result 0");
    ok(r[3], "a fresh thread: last copy path NONE");
    is_str(gpumem_status_string(GPUMEM_STATUS_COUNT), "GPUMEM_STATUS_UNKNOWN", "status_string of an unknown code");
    is_str(gpumem_status_string((gpumem_status)-1), "GPUMEM_STATUS_UNKNOWN", "status_string of -1");
    is_str(gpumem_status_string(GPUMEM_ERROR_INTERNAL), "GPUMEM_ERROR_INTERNAL", "status_string of the last code");
    int all = 1;
    for (int i = -2; i < GPUMEM_STATUS_COUNT + 3; i++)
        all &= gpumem_status_description((gpumem_status)i) != NULL && gpumem_status_string((gpumem_status)i) != NULL;
    ok(all, "status string and description are never NULL");

    /* a success leaves the record alone */
    int count = 0;
    BAD(gpumem_device_count(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "count");
    char before[256];
    snprintf(before, sizeof before, "%s", gpumem_last_error());
    GOOD(gpumem_device_count(&count));
    ok(strcmp(gpumem_last_error(), before) == 0 && gpumem_last_status() == GPUMEM_ERROR_NULL_ARGUMENT,
       "a successful call leaves the last error alone");

    /* a driver failure: status, message, driver result together */
    gpumem_stream *s = (gpumem_stream *)&count;
    gpumem_debug_fail_call(1, 999);
    gpumem_status st = gpumem_stream_create(ctx, 0, &s);
    gpumem_debug_fail_call(0, 0);
    ok(st == GPUMEM_ERROR_DRIVER && gpumem_last_status() == st && gpumem_last_driver_result() == 999,
       "an injected CUDA_ERROR_UNKNOWN: GPUMEM_ERROR_DRIVER, driver result 999 (%s, %d)", gpumem_status_string(st),
       gpumem_last_driver_result());
    like(gpumem_last_error(), "gpumem_stream_create: ", "the driver failure's message names the call");
    like(gpumem_last_error(), "CUDA_ERROR_UNKNOWN", "the driver failure's message names the error");
    ok(s == (gpumem_stream *)&count, "a failed gpumem_stream_create leaves *stream alone");
    /* an argument failure afterwards has no driver result */
    BAD(gpumem_device_count(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "count");
    is_int(gpumem_last_driver_result(), 0, "an argument failure has driver result 0");
    /* a mapped driver result */
    gpumem_debug_fail_call(1, 2);
    st = gpumem_stream_create(ctx, 0, &s);
    gpumem_debug_fail_call(0, 0);
    ok(st == GPUMEM_ERROR_OUT_OF_MEMORY && gpumem_last_driver_result() == 2,
       "CUDA_ERROR_OUT_OF_MEMORY maps to GPUMEM_ERROR_OUT_OF_MEMORY (%s)", gpumem_status_string(st));
}

/* ---- context.h ----------------------------------------------------------------------- */

void test_context(void)
{
    const char *name = NULL;
    char buf[64];
    int v = -7, major = -7, minor = -7, count = 0;
    uint64_t bytes = 0;
    BAD(gpumem_backend(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "name");
    GOOD(gpumem_backend(&name));
    BAD(gpumem_driver_version(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "version");
    BAD(gpumem_device_name(0, NULL, 8), GPUMEM_ERROR_NULL_ARGUMENT, "name");
    BAD(gpumem_device_name(0, buf, 0), GPUMEM_ERROR_INVALID_VALUE, "size");
    BAD(gpumem_device_name(-1, buf, sizeof buf), GPUMEM_ERROR_INVALID_DEVICE, "device");
    gpumem_device_count(&count);
    BAD(gpumem_device_name(count, buf, sizeof buf), GPUMEM_ERROR_INVALID_DEVICE, "device");
    char full[256], small[4];
    memset(small, 'x', sizeof small);
    GOOD(gpumem_device_name(0, full, sizeof full));
    GOOD(gpumem_device_name(0, small, sizeof small));
    ok(strlen(small) == 3 && strncmp(small, full, 3) == 0, "gpumem_device_name truncates to size - 1 and ends it");
    BAD(gpumem_device_compute_capability(0, NULL, &minor), GPUMEM_ERROR_NULL_ARGUMENT, "major");
    BAD(gpumem_device_compute_capability(0, &major, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "minor");
    BAD(gpumem_device_compute_capability(count, &major, &minor), GPUMEM_ERROR_INVALID_DEVICE, "device");
    BAD(gpumem_device_total_memory(0, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "bytes");
    BAD(gpumem_device_total_memory(-1, &bytes), GPUMEM_ERROR_INVALID_DEVICE, "device");
    BAD(gpumem_device_attribute(0, (gpumem_device_attr)27, &v), GPUMEM_ERROR_INVALID_VALUE, "attr");
    BAD(gpumem_device_attribute(0, (gpumem_device_attr)-1, &v), GPUMEM_ERROR_INVALID_VALUE, "attr");
    BAD(gpumem_device_attribute(0, GPUMEM_DEVICE_WARP_SIZE, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "value");
    BAD(gpumem_device_attribute(count, GPUMEM_DEVICE_WARP_SIZE, &v), GPUMEM_ERROR_INVALID_DEVICE, "device");
    BAD(gpumem_get_default_device(0, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "device");

    gpumem_context *c = (gpumem_context *)&v;
    BAD(gpumem_context_create(0, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "ctx");
    BAD(gpumem_context_create(count, &c), GPUMEM_ERROR_INVALID_DEVICE, "device");
    BAD(gpumem_context_create(-1, &c), GPUMEM_ERROR_INVALID_DEVICE, "device");
    BAD(gpumem_context_create_default(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "ctx");
    BAD(gpumem_context_retain(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "ctx");
    GOOD(gpumem_context_release(NULL));
    BAD(gpumem_context_get_device(NULL, &v), GPUMEM_ERROR_NULL_ARGUMENT, "ctx");
    BAD(gpumem_context_get_device(ctx, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "device");
    gpumem_selection rule;
    BAD(gpumem_context_selection(NULL, &rule), GPUMEM_ERROR_NULL_ARGUMENT, "ctx");
    BAD(gpumem_context_selection(ctx, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "rule");
    BAD(gpumem_context_refcount(NULL, &v), GPUMEM_ERROR_NULL_ARGUMENT, "ctx");
    BAD(gpumem_context_refcount(ctx, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "count");
    BAD(gpumem_memory_info(ctx, NULL, &bytes), GPUMEM_ERROR_NULL_ARGUMENT, "free_bytes");
    BAD(gpumem_memory_info(ctx, &bytes, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "total_bytes");
    BAD(gpumem_autoinit(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "ctx");
    is_str(gpumem_selection_name((gpumem_selection)9), "unknown", "selection_name of an unknown rule");
    is_str(gpumem_selection_name(GPUMEM_SELECTION_DEVICE_FILE), "~/.cuda-device", "selection_name of the file rule");

    /* a context's end */
    gpumem_context *e = NULL;
    GOOD(gpumem_context_create(0, &e));
    int refs = 0;
    GOOD(gpumem_context_refcount(e, &refs));
    is_int(refs, 1, "a new context has one reference");
    GOOD(gpumem_context_retain(e));
    GOOD(gpumem_context_refcount(e, &refs));
    is_int(refs, 2, "a retain adds one");
    GOOD(gpumem_context_release(e));
    GOOD(gpumem_context_release(e));
    BAD(gpumem_context_release(e), GPUMEM_ERROR_INVALID_STATE, "ctx");
    BAD(gpumem_context_retain(e), GPUMEM_ERROR_INVALID_STATE, "ctx");
    v = -7;
    BAD(gpumem_context_get_device(e, &v), GPUMEM_ERROR_INVALID_STATE, "ctx");
    is_int(v, -7, "gpumem_context_get_device of an ended context writes nothing");
    BAD(gpumem_context_selection(e, &rule), GPUMEM_ERROR_INVALID_STATE, "ctx");
    BAD(gpumem_context_refcount(e, &v), GPUMEM_ERROR_INVALID_STATE, "ctx");
    BAD(gpumem_memory_info(e, &bytes, &bytes), GPUMEM_ERROR_INVALID_STATE, "ctx");
    gpumem_stream *s = NULL;
    BAD(gpumem_stream_create(e, 0, &s), GPUMEM_ERROR_INVALID_STATE, "ctx");
    BAD(gpumem_context_synchronize(e), GPUMEM_ERROR_INVALID_STATE, "ctx");
    BAD(gpumem_context_flush_deallocations(e), GPUMEM_ERROR_INVALID_STATE, "ctx");
    BAD(gpumem_defer_cleanup_begin(e), GPUMEM_ERROR_INVALID_STATE, "ctx");
    BAD(gpumem_context_set_oom_callback(e, NULL, NULL), GPUMEM_ERROR_INVALID_STATE, "ctx");
    struct gpumem_memory_report rep = {.size = sizeof rep};
    BAD(gpumem_memory_report(e, 0, &rep), GPUMEM_ERROR_INVALID_STATE, "ctx");
    BAD(gpumem_memory_reset_peaks(e, 0), GPUMEM_ERROR_INVALID_STATE, "ctx");
    size_t n = 0;
    BAD(gpumem_memory_pools(e, 0, NULL, 0, &n), GPUMEM_ERROR_INVALID_STATE, "ctx");
    /* another type's handle */
    BAD(gpumem_context_release((gpumem_context *)(void *)f32), GPUMEM_ERROR_INVALID_VALUE, "ctx");

    /* sizes */
    uint64_t b = 0;
    GOOD(gpumem_size_parse("4096", &b));
    ok(b == 4096, "size_parse 4096");
    GOOD(gpumem_size_parse("48K", &b));
    ok(b == 48 * 1024, "size_parse 48K");
    GOOD(gpumem_size_parse(" 512m\t", &b));
    ok(b == (uint64_t)512 << 20, "size_parse ' 512m<tab>'");
    GOOD(gpumem_size_parse("2GiB", &b));
    ok(b == (uint64_t)2 << 30, "size_parse 2GiB");
    GOOD(gpumem_size_parse("3tb", &b));
    ok(b == (uint64_t)3 << 40, "size_parse 3tb");
    GOOD(gpumem_size_parse("18446744073709551615", &b));
    ok(b == UINT64_MAX, "size_parse 2^64 - 1");
    static const char *bad[] = {"", " ", "-1", "+1", "1.5G", "0x10", "12Q", "1 K", "K", "18446744073709551616",
                                "16777216T", "4GiBB", "4Gi"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        b = 77;
        gpumem_status st = gpumem_size_parse(bad[i], &b);
        ok(st == GPUMEM_ERROR_INVALID_VALUE && b == 77 && strstr(gpumem_last_error(), "gpumem_size_parse: ") &&
               strstr(gpumem_last_error(), bad[i]),
           "size_parse '%s' is INVALID_VALUE, quoted, bytes unchanged (%s: %s)", bad[i], gpumem_status_string(st),
           gpumem_last_error());
    }
    BAD(gpumem_size_parse(NULL, &b), GPUMEM_ERROR_NULL_ARGUMENT, "text");
    BAD(gpumem_size_parse("1", NULL), GPUMEM_ERROR_NULL_ARGUMENT, "bytes");
}

/* ---- stream.h ------------------------------------------------------------------------ */

void test_stream(void)
{
    gpumem_stream *s = NULL, *def = NULL, *stale = NULL;
    gpumem_context *c = NULL;
    BAD(gpumem_stream_create(ctx, 0, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "stream");
    s = (gpumem_stream *)&c;
    BAD(gpumem_stream_create(ctx, 2, &s), GPUMEM_ERROR_INVALID_VALUE, "flags");
    ok(s == (gpumem_stream *)&c, "a failed gpumem_stream_create leaves *stream alone");
    GOOD(gpumem_stream_destroy(NULL));
    GOOD(gpumem_stream_default(ctx, &def));
    BAD(gpumem_stream_default(ctx, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "stream");
    BAD(gpumem_stream_destroy(def), GPUMEM_ERROR_INVALID_VALUE, "stream");
    GOOD(gpumem_stream_synchronize(def));
    BAD(gpumem_stream_synchronize(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "stream");
    BAD(gpumem_stream_query(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "stream");
    BAD(gpumem_stream_context(NULL, &c), GPUMEM_ERROR_NULL_ARGUMENT, "stream");
    BAD(gpumem_stream_context(def, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "ctx");
    BAD(gpumem_stream_auto_synchronize_begin(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "stream");
    BAD(gpumem_stream_auto_synchronize_end(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "stream");
    GOOD(gpumem_stream_create(ctx, GPUMEM_STREAM_NON_BLOCKING, &s));
    GOOD(gpumem_stream_context(s, &c));
    ok(c == ctx, "gpumem_stream_context gives the stream's context");
    BAD(gpumem_stream_auto_synchronize_end(s), GPUMEM_ERROR_INVALID_STATE, "stream");
    GOOD(gpumem_stream_auto_synchronize_begin(s));
    GOOD(gpumem_stream_auto_synchronize_begin(s));
    GOOD(gpumem_stream_auto_synchronize_end(s));
    GOOD(gpumem_stream_auto_synchronize_end(s));
    BAD(gpumem_stream_auto_synchronize_end(s), GPUMEM_ERROR_INVALID_STATE, "stream");
    GOOD(gpumem_stream_query(s));
    stale = s;
    GOOD(gpumem_stream_destroy(s));
    BAD(gpumem_stream_destroy(stale), GPUMEM_ERROR_INVALID_STATE, "stream");
    BAD(gpumem_stream_synchronize(stale), GPUMEM_ERROR_INVALID_STATE, "stream");
    BAD(gpumem_stream_query(stale), GPUMEM_ERROR_INVALID_STATE, "stream");
    c = (gpumem_context *)&s;
    BAD(gpumem_stream_context(stale, &c), GPUMEM_ERROR_INVALID_STATE, "stream");
    ok(c == (gpumem_context *)&s, "gpumem_stream_context of a destroyed stream writes nothing");
    BAD(gpumem_stream_auto_synchronize_begin(stale), GPUMEM_ERROR_INVALID_STATE, "stream");
    BAD(gpumem_stream_destroy((gpumem_stream *)(void *)ctx), GPUMEM_ERROR_INVALID_VALUE, "stream");
    BAD(gpumem_stream_synchronize((gpumem_stream *)(void *)ctx), GPUMEM_ERROR_INVALID_VALUE, "stream");
    GOOD(gpumem_context_synchronize(ctx));
}

/* ---- event.h ------------------------------------------------------------------------- */

void test_event(void)
{
    gpumem_event *ev = NULL, *ev2 = NULL, *nt = NULL, *other = NULL, *stale = NULL;
    gpumem_stream *s = NULL, *s2 = NULL, *dead = NULL;
    float ms = -1;
    BAD(gpumem_event_create(ctx, 0, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "event");
    ev = (gpumem_event *)&ms;
    BAD(gpumem_event_create(ctx, 4, &ev), GPUMEM_ERROR_INVALID_VALUE, "flags");
    ok(ev == (gpumem_event *)&ms, "a failed gpumem_event_create leaves *event alone");
    GOOD(gpumem_event_destroy(NULL));
    GOOD(gpumem_event_create(ctx, 0, &ev));
    GOOD(gpumem_event_create(ctx, GPUMEM_EVENT_BLOCKING_SYNC, &ev2));
    GOOD(gpumem_event_create(ctx, GPUMEM_EVENT_DISABLE_TIMING, &nt));
    GOOD(gpumem_event_create(ctx2, 0, &other));
    GOOD(gpumem_stream_create(ctx, 0, &s));
    GOOD(gpumem_stream_create(ctx2, 0, &s2));
    GOOD(gpumem_stream_create(ctx, 0, &dead));
    GOOD(gpumem_stream_destroy(dead));
    GOOD(gpumem_event_query(ev));
    GOOD(gpumem_event_synchronize(ev));
    BAD(gpumem_event_record(NULL, s), GPUMEM_ERROR_NULL_ARGUMENT, "event");
    BAD(gpumem_event_record(ev, s2), GPUMEM_ERROR_CONTEXT_MISMATCH, "stream");
    BAD(gpumem_event_record(ev, dead), GPUMEM_ERROR_INVALID_STATE, "stream");
    BAD(gpumem_event_query(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "event");
    BAD(gpumem_event_synchronize(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "event");
    ms = -1;
    BAD(gpumem_event_elapsed_time(ev, ev2, &ms), GPUMEM_ERROR_INVALID_STATE, "start");
    ok(ms == -1, "elapsed_time leaves ms alone on failure");
    BAD(gpumem_event_elapsed_time(NULL, ev2, &ms), GPUMEM_ERROR_NULL_ARGUMENT, "start");
    BAD(gpumem_event_elapsed_time(ev, NULL, &ms), GPUMEM_ERROR_NULL_ARGUMENT, "end");
    BAD(gpumem_event_elapsed_time(ev, ev2, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "ms");
    GOOD(gpumem_event_record(ev, s));
    GOOD(gpumem_event_record(ev2, NULL));
    GOOD(gpumem_event_record(nt, s));
    GOOD(gpumem_event_record(other, s2));
    GOOD(gpumem_event_synchronize(ev));
    GOOD(gpumem_event_synchronize(ev2));
    GOOD(gpumem_event_synchronize(nt));
    GOOD(gpumem_event_synchronize(other));
    ms = -1;
    BAD(gpumem_event_elapsed_time(ev, nt, &ms), GPUMEM_ERROR_INVALID_VALUE, "end");
    BAD(gpumem_event_elapsed_time(nt, ev, &ms), GPUMEM_ERROR_INVALID_VALUE, "start");
    BAD(gpumem_event_elapsed_time(ev, other, &ms), GPUMEM_ERROR_CONTEXT_MISMATCH, "end");
    ok(ms == -1, "elapsed_time leaves ms alone on failure");
    GOOD(gpumem_event_elapsed_time(ev, ev2, &ms));
    ok(ms != -1 && !isnan(ms), "elapsed_time gives a time");
    BAD(gpumem_stream_wait_event(s, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "event");
    GOOD(gpumem_stream_wait_event(NULL, ev));
    GOOD(gpumem_stream_wait_event(s2, ev));
    BAD(gpumem_stream_wait_event(dead, ev), GPUMEM_ERROR_INVALID_STATE, "stream");
    gpumem_context *c = NULL;
    GOOD(gpumem_event_context(other, &c));
    ok(c == ctx2, "gpumem_event_context gives the event's context");
    BAD(gpumem_event_context(NULL, &c), GPUMEM_ERROR_NULL_ARGUMENT, "event");
    BAD(gpumem_event_context(ev, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "ctx");
    stale = ev2;
    GOOD(gpumem_event_destroy(ev2));
    BAD(gpumem_event_destroy(stale), GPUMEM_ERROR_INVALID_STATE, "event");
    BAD(gpumem_event_record(stale, s), GPUMEM_ERROR_INVALID_STATE, "event");
    BAD(gpumem_event_query(stale), GPUMEM_ERROR_INVALID_STATE, "event");
    BAD(gpumem_event_synchronize(stale), GPUMEM_ERROR_INVALID_STATE, "event");
    BAD(gpumem_event_elapsed_time(ev, stale, &ms), GPUMEM_ERROR_INVALID_STATE, "end");
    BAD(gpumem_stream_wait_event(s, stale), GPUMEM_ERROR_INVALID_STATE, "event");
    c = (gpumem_context *)&ms;
    BAD(gpumem_event_context(stale, &c), GPUMEM_ERROR_INVALID_STATE, "event");
    ok(c == (gpumem_context *)&ms, "gpumem_event_context of a destroyed event writes nothing");
    BAD(gpumem_event_destroy((gpumem_event *)(void *)s), GPUMEM_ERROR_INVALID_VALUE, "event");
    gpumem_event_destroy(ev);
    gpumem_event_destroy(nt);
    gpumem_event_destroy(other);
    gpumem_stream_destroy(s);
    gpumem_stream_destroy(s2);
}

/* ---- host.h -------------------------------------------------------------------------- */

void test_host(void)
{
    const int64_t n = 4096;
    gpumem_array *a = NULL, *h = NULL, *h2 = NULL, *views[2] = {NULL, NULL};
    gpumem_stream *s2 = NULL;
    gpumem_registration *reg = NULL, *reg2 = NULL, *stale = NULL;
    int r = -1;
    GOOD(gpumem_stream_create(ctx2, 0, &s2));
    a = (gpumem_array *)&r;
    BAD(gpumem_mapped_array(ctx, 1, &n, NULL, i32, 'C', NULL, 2, &a), GPUMEM_ERROR_INVALID_VALUE, "flags");
    BAD(gpumem_mapped_array(ctx, 1, &n, NULL, i32, 'C', NULL, 0x8, &a), GPUMEM_ERROR_INVALID_VALUE, "flags");
    BAD(gpumem_mapped_array(ctx, 1, &n, NULL, i32, 'C', s2, 0, &a), GPUMEM_ERROR_CONTEXT_MISMATCH, "stream");
    BAD(gpumem_managed_array(ctx, 1, &n, NULL, i32, 'C', 0, &a), GPUMEM_ERROR_INVALID_VALUE, "flags");
    BAD(gpumem_managed_array(ctx, 1, &n, NULL, i32, 'C', 3, &a), GPUMEM_ERROR_INVALID_VALUE, "flags");
    BAD(gpumem_managed_array(ctx, 1, &n, NULL, i32, 'C', 4, &a), GPUMEM_ERROR_INVALID_VALUE, "flags");
    BAD(gpumem_pinned_array(ctx, 1, &n, NULL, i32, 'C', NULL), GPUMEM_ERROR_NULL_ARGUMENT, "array");
    BAD(gpumem_pinned_array(ctx, 1, &n, NULL, i32, 'Q', &a), GPUMEM_ERROR_INVALID_ORDER, "order");
    ok(a == (gpumem_array *)&r, "failed array constructors leave *array alone");

    GOOD(gpumem_pinned_array(ctx, 1, &n, NULL, i32, 'C', &a));
    void *p = NULL;
    gpumem_array_host_pointer(a, &p);
    GOOD(gpumem_host_is_pinned(p, 4096 * 4, &r));
    is_int(r, 1, "a pinned array is pinned");
    gpumem_array_release(a);
    BAD(gpumem_host_is_pinned(p, 1, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "result");
    char pageable[16];
    r = -1;
    GOOD(gpumem_host_is_pinned(pageable, 0, &r));
    is_int(r, 1, "an empty range is page-locked (host.h)");

    /* scopes */
    const long page = sysconf(_SC_PAGESIZE);
    char *buf = NULL;
    if (posix_memalign((void **)&buf, (size_t)page, (size_t)page * 8) != 0)
        bail_out("posix_memalign");
    const int64_t half = page * 5 / 4; /* int32 elements: pages 0..4 */
    GOOD(gpumem_host_array_wrap(buf, 1, &half, NULL, i32, &h));
    GOOD(gpumem_host_array_wrap(buf + page * 4, 1, &half, NULL, i32, &h2)); /* pages 4..8 */
    GOOD(gpumem_host_is_pinned(buf, (size_t)page, &r));
    is_int(r, 0, "pageable memory is not pinned");
    BAD(gpumem_pinned(ctx, &h, 1, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "registration");
    BAD(gpumem_pinned(ctx, NULL, 1, &reg), GPUMEM_ERROR_NULL_ARGUMENT, "arrays");
    gpumem_array *withnull[2] = {h, NULL};
    BAD(gpumem_pinned(ctx, withnull, 2, &reg), GPUMEM_ERROR_NULL_ARGUMENT, "arrays");
    ok(reg == NULL, "failed gpumem_pinned leaves *registration alone");
    GOOD(gpumem_host_is_pinned(buf, (size_t)page, &r));
    is_int(r, 0, "a failed gpumem_pinned leaves nothing registered");
    GOOD(gpumem_pinned(ctx, &h, 1, &reg));
    GOOD(gpumem_host_is_pinned(buf, (size_t)page * 5, &r));
    is_int(r, 1, "gpumem_pinned page-locks the array");
    GOOD(gpumem_host_is_pinned(buf, (size_t)page * 6, &r));
    is_int(r, 0, "a range only partly page-locked is not");
    GOOD(gpumem_pinned(ctx, &h2, 1, &reg2));
    BAD(gpumem_unmapped(&reg), GPUMEM_ERROR_INVALID_STATE, "registration");
    ok(reg != NULL, "gpumem_unmapped of a pinned scope leaves *registration alone");
    stale = reg;
    GOOD(gpumem_unpinned(&reg));
    ok(reg == NULL, "gpumem_unpinned sets *registration to NULL");
    GOOD(gpumem_host_is_pinned(buf, (size_t)page, &r));
    is_int(r, 1, "pin A, pin B overlapping, end A: A's pages stay page-locked");
    BAD(gpumem_unpinned(&stale), GPUMEM_ERROR_INVALID_STATE, "registration");
    BAD(gpumem_unpinned(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "registration");
    GOOD(gpumem_unpinned(&reg2));
    GOOD(gpumem_host_is_pinned(buf, (size_t)page, &r));
    is_int(r, 0, "the range goes when the last scope ends");

    /* mapped scopes */
    BAD(gpumem_mapped(ctx, &h, 1, NULL, &reg, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "device_views");
    BAD(gpumem_mapped(ctx, &h, 1, s2, &reg, views), GPUMEM_ERROR_CONTEXT_MISMATCH, "stream");
    ok(views[0] == NULL && reg == NULL, "failed gpumem_mapped writes no view and no registration");
    GOOD(gpumem_mapped(ctx, &h, 1, NULL, &reg, views));
    BAD(gpumem_unpinned(&reg), GPUMEM_ERROR_INVALID_STATE, "registration");
    BAD(gpumem_deregister(&reg), GPUMEM_ERROR_INVALID_STATE, "registration");
    ok(reg != NULL, "a scope ended the wrong way is left alone");
    gpumem_array_release(views[0]);
    stale = reg;
    GOOD(gpumem_unmapped(&reg));
    BAD(gpumem_unmapped(&stale), GPUMEM_ERROR_INVALID_STATE, "registration");
    GOOD(gpumem_register(ctx, &h, 1, &reg));
    GOOD(gpumem_deregister(&reg));
    ok(reg == NULL, "gpumem_deregister sets *registration to NULL");

    gpumem_array_release(h);
    gpumem_array_release(h2);
    free(buf);
    gpumem_stream_destroy(s2);
}

/* ---- staging.h ----------------------------------------------------------------------- */

void test_staging(void)
{
    gpumem_staging_settings cur = {.size = sizeof cur}, bad, now = {.size = sizeof now};
    BAD(gpumem_staging_get(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "settings");
    BAD(gpumem_staging_set(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "settings");
    gpumem_staging_settings small = {.size = sizeof small - 1};
    BAD(gpumem_staging_get(&small), GPUMEM_ERROR_INVALID_VALUE, "size");
    GOOD(gpumem_staging_get(&cur));
    ok(cur.threads >= 1 && cur.threads <= 16 && cur.depth == 2 && cur.chunk_bytes == 2u << 20 &&
           cur.min_bytes == 4u << 20,
       "staging defaults (threads %u, chunk %zu, depth %u, min %zu)", cur.threads, cur.chunk_bytes, cur.depth,
       cur.min_bytes);
    static const struct {
        const char *field;
        unsigned threads, depth;
        size_t chunk;
    } cases[] = {
        {"threads", 0, 2, 2u << 20},     {"threads", 65, 2, 2u << 20},
        {"chunk_bytes", 2, 2, 65535},    {"chunk_bytes", 2, 2, ((size_t)1 << 30) + 1},
        {"depth", 2, 1, 2u << 20},       {"depth", 2, 65, 2u << 20},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        bad = cur;
        bad.threads = cases[i].threads;
        bad.depth = cases[i].depth;
        bad.chunk_bytes = cases[i].chunk;
        BAD(gpumem_staging_set(&bad), GPUMEM_ERROR_INVALID_VALUE, cases[i].field);
        GOOD(gpumem_staging_get(&now));
        ok(memcmp(&now, &cur, sizeof now) == 0, "a refused gpumem_staging_set changes nothing (%s)", cases[i].field);
    }
    bad = cur;
    bad.size = sizeof bad + 8;
    BAD(gpumem_staging_set(&bad), GPUMEM_ERROR_INVALID_VALUE, "size");
    bad = cur;
    bad.threads = 64;
    bad.depth = 64;
    bad.chunk_bytes = 64 * 1024;
    bad.min_bytes = 0;
    GOOD(gpumem_staging_set(&bad));
    GOOD(gpumem_staging_get(&now));
    ok(now.threads == 64 && now.depth == 64 && now.chunk_bytes == 65536 && now.min_bytes == 0,
       "gpumem_staging_set takes the limits of the ranges");
    GOOD(gpumem_staging_set(&cur));
}

/* ---- cleanup.h ----------------------------------------------------------------------- */

void test_cleanup(void)
{
    size_t count = 99;
    double ratio = -5;
    uint64_t bytes = 0;
    gpumem_context *c = NULL;
    GOOD(gpumem_context_create(0, &c));
    GOOD(gpumem_context_get_dealloc_limits(c, &count, &ratio));
    ok(count == 10 && ratio == 0.2, "default limits 10 and 0.2 (%zu, %g)", count, ratio);
    BAD(gpumem_context_set_dealloc_limits(c, 5, -0.1), GPUMEM_ERROR_INVALID_VALUE, "max_ratio");
    BAD(gpumem_context_set_dealloc_limits(c, 5, 1.5), GPUMEM_ERROR_INVALID_VALUE, "max_ratio");
    BAD(gpumem_context_set_dealloc_limits(c, 5, NAN), GPUMEM_ERROR_INVALID_VALUE, "max_ratio");
    GOOD(gpumem_context_get_dealloc_limits(c, &count, &ratio));
    ok(count == 10 && ratio == 0.2, "refused limits change nothing (%zu, %g)", count, ratio);
    BAD(gpumem_context_get_dealloc_limits(c, NULL, &ratio), GPUMEM_ERROR_NULL_ARGUMENT, "max_count");
    BAD(gpumem_context_get_dealloc_limits(c, &count, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "max_ratio");
    GOOD(gpumem_context_pending_deallocations(c, NULL, NULL));
    BAD(gpumem_defer_cleanup_end(c), GPUMEM_ERROR_INVALID_STATE, "defer_cleanup scope");

    /* the count limit: more than 3 queued frees flush */
    GOOD(gpumem_context_set_dealloc_limits(c, 3, 1.0));
    const int64_t n = 256;
    gpumem_array *a[5] = {NULL};
    for (int i = 0; i < 5; i++)
        gpumem_device_array(c, 1, &n, NULL, i32, 'C', NULL, &a[i]);
    GOOD(gpumem_defer_cleanup_begin(c));
    for (int i = 0; i < 5; i++)
        gpumem_array_release(a[i]);
    GOOD(gpumem_context_pending_deallocations(c, &count, &bytes));
    ok(count == 5 && bytes == 5 * 1024, "inside defer_cleanup nothing is freed (%zu, %llu)", count,
       (unsigned long long)bytes);
    GOOD(gpumem_defer_cleanup_end(c));
    GOOD(gpumem_context_pending_deallocations(c, &count, &bytes));
    ok(count == 0 && bytes == 0, "the outermost end flushes a queue over the limits (%zu)", count);
    for (int i = 0; i < 3; i++)
        gpumem_device_array(c, 1, &n, NULL, i32, 'C', NULL, &a[i]);
    for (int i = 0; i < 3; i++)
        gpumem_array_release(a[i]);
    GOOD(gpumem_context_pending_deallocations(c, &count, NULL));
    is_int((int)count, 3, "3 frees stay queued under a limit of 3");
    GOOD(gpumem_context_set_dealloc_limits(c, 2, 1.0));
    GOOD(gpumem_context_pending_deallocations(c, &count, NULL));
    is_int((int)count, 0, "new limits below the queue flush it");
    GOOD(gpumem_context_set_dealloc_limits(c, 0, 0.0));
    gpumem_device_array(c, 1, &n, NULL, i32, 'C', NULL, &a[0]);
    gpumem_array_release(a[0]);
    GOOD(gpumem_context_pending_deallocations(c, &count, NULL));
    is_int((int)count, 0, "limits 0 and 0.0 flush at every free");
    gpumem_context_release(c);
}
