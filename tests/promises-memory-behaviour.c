/* The behaviour behind the statuses, the lifecycle check of every handle
 * argument, and memo, IPC fields, CAI records, streams and the deferred
 * queue's failures (part of tests/test-promises-memory). */
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

/* ---- batch 2: behaviour behind the statuses ----------------------------------------- */

static int oom_calls, oom_last_attempt, oom_info_ok;
static gpumem_array *oom_victim;

static int oom_cb(gpumem_context *c, const struct gpumem_oom_info *info, void *user)
{
    oom_calls++;
    oom_last_attempt = (int)info->attempt;
    oom_info_ok = c == user && info->size >= sizeof *info && info->kind == GPUMEM_MEMORY_DEVICE &&
                  info->call != NULL && strcmp(info->call, "gpumem_device_array") == 0 && info->message != NULL &&
                  strstr(info->message, "gpumem_device_array") != NULL && info->bytes == (size_t)200 << 20;
    if (oom_victim != NULL) {
        gpumem_array_release(oom_victim);
        oom_victim = NULL;
        return 1;
    }
    return 1; /* asks again every time: the calls still end */
}

static int nested_calls;
static gpumem_status nested_inner;

static int oom_nested(gpumem_context *c, const struct gpumem_oom_info *info, void *user)
{
    (void)info;
    (void)user;
    nested_calls++;
    const int64_t huge = (int64_t)(300u << 20) / 4;
    gpumem_array *x = NULL;
    nested_inner = gpumem_device_array(c, 1, &huge, NULL, gpumem_dtype_builtin(GPUMEM_INT32), 'C', NULL, &x);
    gpumem_array_release(x);
    return 0;
}

void test_oom_nested(void)
{
    gpumem_context *c = NULL;
    GOOD(gpumem_context_create(1, &c));
    GOOD(gpumem_context_set_oom_callback(c, oom_nested, NULL));
    const int64_t huge = (int64_t)(300u << 20) / 4;
    gpumem_array *x = NULL;
    nested_calls = 0;
    gpumem_status st = gpumem_device_array(c, 1, &huge, NULL, i32, 'C', NULL, &x);
    ok(st == GPUMEM_ERROR_OUT_OF_MEMORY && nested_calls == 1 && nested_inner == GPUMEM_ERROR_OUT_OF_MEMORY,
       "an allocation inside the callback fails without calling it again (%d calls)", nested_calls);
    like(gpumem_last_error(), "declined", "the message says the callback declined");
    /* 300 MiB on a 256 MiB device that this process does not use: not this process's data */
    like(gpumem_last_error(), "cause: larger than the device (more than its total memory)",
         "a request larger than the device names that cause (memory.h)");
    ok(strstr(gpumem_last_error(), "this process's live data") == NULL, "and not this process's live data");
    gpumem_context_release(c);
}

void test_behaviour(void)
{
    /* NOT_READY is an answer: the last failure is left alone */
    gpumem_stream *s = NULL;
    gpumem_event *ev = NULL;
    gpumem_array *a = NULL;
    const int64_t n = 1 << 16;
    int32_t seven = 7;
    GOOD(gpumem_stream_create(ctx, GPUMEM_STREAM_NON_BLOCKING, &s));
    GOOD(gpumem_event_create(ctx, 0, &ev));
    GOOD(gpumem_device_array(ctx, 1, &n, NULL, i32, 'C', NULL, &a));
    gpumem_device_count(NULL);
    GOOD(gpumem_array_fill(a, &seven, s));
    GOOD(gpumem_event_record(ev, s));
    gpumem_status q = gpumem_event_query(ev);
    gpumem_status sq = gpumem_stream_query(s);
    ok(q == GPUMEM_ERROR_NOT_READY && sq == GPUMEM_ERROR_NOT_READY, "queries of queued work: NOT_READY (%s, %s)",
       gpumem_status_string(q), gpumem_status_string(sq));
    ok(strncmp(gpumem_last_error(), "gpumem_device_count: ", 21) == 0 &&
           gpumem_last_status() == GPUMEM_ERROR_NULL_ARGUMENT,
       "NOT_READY leaves the last failure alone (%s)", gpumem_last_error());
    gpumem_event *done = NULL;
    GOOD(gpumem_event_create(ctx, 0, &done));
    GOOD(gpumem_event_record(done, NULL));
    GOOD(gpumem_event_synchronize(done));
    float ms = -1;
    gpumem_status et = gpumem_event_elapsed_time(done, ev, &ms);
    ok(et == GPUMEM_ERROR_NOT_READY && ms == -1 && gpumem_last_status() == GPUMEM_ERROR_NOT_READY &&
           strstr(gpumem_last_error(), "gpumem_event_elapsed_time: ") == gpumem_last_error() &&
           strstr(gpumem_last_error(), "'end'") != NULL && strstr(gpumem_last_error(), "'start'") == NULL,
       "elapsed_time of an event still running: NOT_READY naming it, ms unchanged (%s: %s)",
       gpumem_status_string(et), gpumem_last_error());
    GOOD(gpumem_stream_synchronize(s));
    GOOD(gpumem_event_query(ev));
    GOOD(gpumem_event_elapsed_time(done, ev, &ms));
    ok(ms >= 0, "elapsed time of a later record is not negative (%g)", (double)ms);
    int32_t v = 0;
    const int64_t last = n - 1;
    GOOD(gpumem_array_get_item(a, &last, &v, NULL));
    is_int(v, 7, "the fill landed");
    gpumem_event_destroy(done);
    gpumem_event_destroy(ev);
    gpumem_array_release(a);
    gpumem_stream_destroy(s);

    /* reports of an older, smaller struct: only the fields that fit are written */
    gpumem_context *c = NULL;
    GOOD(gpumem_context_create(1, &c));
    struct gpumem_memory_report r;
    memset(&r, 0x5A, sizeof r);
    r.size = offsetof(struct gpumem_memory_report, oom_failures);
    GOOD(gpumem_memory_report(c, 0, &r));
    uint64_t canary;
    memset(&canary, 0x5A, sizeof canary);
    ok(r.oom_failures == canary && r.contexts == 1, "a report of a smaller size leaves the fields past it alone");
    gpumem_pointer_info info;
    memset(&info, 0x5A, sizeof info);
    info.size = sizeof info;
    int res = -1;
    gpumem_array *p = NULL, *m = NULL, *mm = NULL;
    GOOD(gpumem_pinned_array(c, 1, &n, NULL, i32, 'C', &p));
    GOOD(gpumem_mapped_array(c, 1, &n, NULL, i32, 'C', NULL, 0, &m));
    GOOD(gpumem_managed_array(c, 1, &n, NULL, i32, 'C', GPUMEM_MANAGED_ATTACH_GLOBAL, &mm));
    void *hp = NULL;
    gpumem_array_host_pointer(p, &hp);
    GOOD(gpumem_is_cuda_array((uint64_t)(uintptr_t)hp, &res, &info));
    ok(res == 1 && info.kind == GPUMEM_POINTER_MAPPED && info.host_pointer == hp && info.device == 1 &&
           info.ipc_capable == 0,
       "pinned memory with unified addressing: MAPPED, host pointer, device 1 (kind %d)", (int)info.kind);
    void *mp = NULL, *mgp = NULL;
    gpumem_array_host_pointer(m, &mp);
    gpumem_array_host_pointer(mm, &mgp);
    int r1 = 0, r2 = 0;
    GOOD(gpumem_host_is_pinned(mp, (size_t)n * 4, &r1));
    GOOD(gpumem_host_is_pinned(mgp, (size_t)n * 4, &r2));
    ok(r1 == 1 && r2 == 1, "mapped and managed arrays are page-locked as far as the library knows");

    /* every kind counts its real size in the deferred queue */
    size_t count = 0;
    uint64_t bytes = 0;
    GOOD(gpumem_context_set_dealloc_limits(c, 100, 1.0));
    GOOD(gpumem_defer_cleanup_begin(c));
    gpumem_array_release(p);
    gpumem_array_release(m);
    gpumem_array_release(mm);
    GOOD(gpumem_context_pending_deallocations(c, &count, &bytes));
    ok(count == 3 && bytes == 3 * (uint64_t)n * 4, "pinned, mapped and managed frees count their bytes (%zu, %llu)",
       count, (unsigned long long)bytes);
    GOOD(gpumem_defer_cleanup_end(c));
    GOOD(gpumem_context_flush_deallocations(c));
    GOOD(gpumem_context_pending_deallocations(c, &count, &bytes));
    ok(count == 0 && bytes == 0, "a flush empties the queue");

    /* the ratio limit: more than 1%% of the device's 256 MiB queued flushes */
    GOOD(gpumem_context_set_dealloc_limits(c, 100, 0.01));
    const int64_t big = (int64_t)(2u << 20) / 4; /* 2 MiB: under 2.56 MiB */
    gpumem_array *b1 = NULL, *b2 = NULL;
    GOOD(gpumem_device_array(c, 1, &big, NULL, i32, 'C', NULL, &b1));
    GOOD(gpumem_device_array(c, 1, &big, NULL, i32, 'C', NULL, &b2));
    gpumem_array_release(b1);
    GOOD(gpumem_context_pending_deallocations(c, &count, NULL));
    is_int((int)count, 1, "2 MiB queued stays under 1% of 256 MiB");
    gpumem_array_release(b2);
    GOOD(gpumem_context_pending_deallocations(c, &count, NULL));
    is_int((int)count, 0, "4 MiB queued is over 1% of 256 MiB: flushed");

    /* out of memory: the ladder, the callback, the message */
    GOOD(gpumem_context_set_dealloc_limits(c, 10, 0.2));
    const int64_t huge = (int64_t)(200u << 20) / 4, mid = (int64_t)(100u << 20) / 4;
    gpumem_array *x = NULL, *y = NULL;
    GOOD(gpumem_device_array(c, 1, &mid, NULL, i32, 'C', NULL, &oom_victim));
    GOOD(gpumem_context_set_oom_callback(c, oom_cb, c));
    oom_calls = 0;
    GOOD(gpumem_device_array(c, 1, &huge, NULL, i32, 'C', NULL, &x));
    ok(oom_calls == 1 && oom_info_ok && oom_last_attempt == 1,
       "the callback frees memory and the retry succeeds (calls %d, info %d)", oom_calls, oom_info_ok);
    oom_calls = 0;
    y = (gpumem_array *)&r;
    gpumem_status st = gpumem_device_array(c, 1, &huge, NULL, i32, 'C', NULL, &y);
    ok(st == GPUMEM_ERROR_OUT_OF_MEMORY && oom_calls == GPUMEM_OOM_CALLBACK_MAX_CALLS &&
           oom_last_attempt == GPUMEM_OOM_CALLBACK_MAX_CALLS,
       "a callback that always asks again is called %d times (%d, %s)", GPUMEM_OOM_CALLBACK_MAX_CALLS, oom_calls,
       gpumem_status_string(st));
    ok(y == (gpumem_array *)&r, "a failed allocation leaves *array alone");
    like(gpumem_last_error(), "gpumem_device_array: ", "the out-of-memory message names the call");
    like(gpumem_last_error(), "this process's live data", "the out-of-memory message names the cause");
    is_int(gpumem_last_driver_result(), 2, "the out-of-memory failure keeps CUDA_ERROR_OUT_OF_MEMORY");
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    GOOD(gpumem_memory_report(c, 0, &r));
    /* the ladder ran for each refused allocation (2) and each refused retry the callback asked for (4) */
    ok(r.oom_callback_calls == 5 && r.oom_callback_successes == 1 && r.oom_failures == 1 &&
           r.oom_ladder_runs == 6 && r.oom_ladder_successes == 0,
       "the report counts the ladder and the callback (calls %llu, successes %llu, failures %llu, runs %llu)",
       (unsigned long long)r.oom_callback_calls, (unsigned long long)r.oom_callback_successes,
       (unsigned long long)r.oom_failures, (unsigned long long)r.oom_ladder_runs);
    GOOD(gpumem_context_set_oom_callback(c, NULL, NULL));
    oom_calls = 0;
    st = gpumem_device_array(c, 1, &huge, NULL, i32, 'C', NULL, &y);
    ok(st == GPUMEM_ERROR_OUT_OF_MEMORY && oom_calls == 0, "a removed callback is not called");
    gpumem_array_release(x);

    /* whole device */
    gpumem_context *c2 = NULL;
    GOOD(gpumem_context_create(1, &c2));
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    GOOD(gpumem_memory_report(c2, GPUMEM_MEMORY_WHOLE_DEVICE, &r));
    ok(r.contexts >= 2 && r.ordinal == 1, "WHOLE_DEVICE counts every context of the device (%llu)",
       (unsigned long long)r.contexts);
    gpumem_context_release(c2);
    gpumem_context_release(c);

    /* an injected failure fails that one call only */
    gpumem_stream *s1 = NULL, *s2 = NULL;
    GOOD(gpumem_debug_fail_call(2, 999));
    gpumem_status first = gpumem_stream_create(ctx, 0, &s1);
    gpumem_status second = gpumem_stream_create(ctx, 0, &s2);
    gpumem_status third = gpumem_stream_create(ctx, 0, &s);
    ok(first == GPUMEM_OK || second == GPUMEM_OK || third == GPUMEM_OK, "only the armed call fails");
    ok((first != GPUMEM_OK) + (second != GPUMEM_OK) + (third != GPUMEM_OK) <= 1,
       "at most one of three calls fails (%s %s %s)", gpumem_status_string(first), gpumem_status_string(second),
       gpumem_status_string(third));
    gpumem_stream_destroy(first == GPUMEM_OK ? s1 : NULL);
    gpumem_stream_destroy(second == GPUMEM_OK ? s2 : NULL);
    gpumem_stream_destroy(third == GPUMEM_OK ? s : NULL);
}


/* ---- batch 4: the lifecycle check of every handle argument (status.h) ------------------------ */

void test_handles(void)
{
    gpumem_context *dead = NULL;
    gpumem_stream *st = NULL, *deads = NULL;
    gpumem_event *ev = NULL;
    gpumem_array *h = NULL, *d = NULL;
    const int64_t n = 16;
    gpumem_context_create(0, &dead);
    gpumem_context_release(dead);
    GOOD(gpumem_stream_create(ctx, 0, &st));
    GOOD(gpumem_stream_create(ctx, 0, &deads));
    GOOD(gpumem_stream_destroy(deads));
    GOOD(gpumem_event_create(ctx, 0, &ev));
    GOOD(gpumem_host_array(1, &n, i32, 'C', &h));
    GOOD(gpumem_device_array(ctx, 1, &n, NULL, i32, 'C', NULL, &d));
    gpumem_context *wrong = (gpumem_context *)(void *)st; /* a stream passed as a context */
    gpumem_stream *wrongs = (gpumem_stream *)(void *)ev;  /* an event passed as a stream */
    size_t cnt = 0;
    double ratio = 0;
    uint64_t u = 0;
    int iv = 0;
    void *v = NULL;
    gpumem_selection rule;
    gpumem_registration *reg = NULL;
    gpumem_array *out = NULL;
    gpumem_event *eout = NULL;
    gpumem_stream *sout = NULL;
    struct gpumem_memory_report rep = {.size = sizeof rep};
    gpumem_ipc_handle ih;
    memset(&ih, 0, sizeof ih);
    gpumem_cuda_array_interface cai = {.size = sizeof cai};

#define BOTH(call_with_ctx)                                                                                       \
    do {                                                                                                          \
        gpumem_context *c_ = dead;                                                                                \
        BAD(call_with_ctx, GPUMEM_ERROR_INVALID_STATE, "ctx");                                                    \
        c_ = wrong;                                                                                               \
        BAD(call_with_ctx, GPUMEM_ERROR_INVALID_VALUE, "ctx");                                                    \
    } while (0)
    BOTH(gpumem_context_get_device(c_, &iv));
    BOTH(gpumem_context_selection(c_, &rule));
    BOTH(gpumem_context_refcount(c_, &iv));
    BOTH(gpumem_context_retain(c_));
    BOTH(gpumem_context_release(c_));
    BOTH(gpumem_memory_info(c_, &u, &u));
    BOTH(gpumem_context_synchronize(c_));
    BOTH(gpumem_context_set_dealloc_limits(c_, 1, 0.5));
    BOTH(gpumem_context_get_dealloc_limits(c_, &cnt, &ratio));
    BOTH(gpumem_context_flush_deallocations(c_));
    BOTH(gpumem_context_pending_deallocations(c_, &cnt, &u));
    BOTH(gpumem_defer_cleanup_begin(c_));
    BOTH(gpumem_defer_cleanup_end(c_));
    BOTH(gpumem_memoize(c_, NULL, 0, memo_create, NULL, NULL, &v));
    BOTH(gpumem_memory_report(c_, 0, &rep));
    BOTH(gpumem_memory_reset_peaks(c_, 0));
    BOTH(gpumem_memory_pools(c_, 0, NULL, 0, &cnt));
    BOTH(gpumem_context_set_oom_callback(c_, NULL, NULL));
    BOTH(gpumem_stream_create(c_, 0, &sout));
    BOTH(gpumem_stream_default(c_, &sout));
    BOTH(gpumem_event_create(c_, 0, &eout));
    BOTH(gpumem_pinned_array(c_, 1, &n, NULL, i32, 'C', &out));
    BOTH(gpumem_mapped_array(c_, 1, &n, NULL, i32, 'C', NULL, 0, &out));
    BOTH(gpumem_managed_array(c_, 1, &n, NULL, i32, 'C', GPUMEM_MANAGED_ATTACH_GLOBAL, &out));
    BOTH(gpumem_pinned(c_, &h, 1, &reg));
    BOTH(gpumem_register(c_, &h, 1, &reg));
    BOTH(gpumem_mapped(c_, &h, 1, NULL, &reg, &out));
    BOTH(gpumem_as_cuda_array(c_, &cai, 0, NULL, NULL, &out));
    ok(out == NULL && sout == NULL && eout == NULL && reg == NULL, "no output written by refused calls");

#define BOTHS(call_with_stream)                                                                                   \
    do {                                                                                                          \
        gpumem_stream *s_ = deads;                                                                                \
        BAD(call_with_stream, GPUMEM_ERROR_INVALID_STATE, "stream");                                              \
        s_ = wrongs;                                                                                              \
        BAD(call_with_stream, GPUMEM_ERROR_INVALID_VALUE, "stream");                                              \
    } while (0)
    BOTHS(gpumem_stream_destroy(s_));
    BOTHS(gpumem_stream_synchronize(s_));
    BOTHS(gpumem_stream_query(s_));
    BOTHS(gpumem_stream_context(s_, &dead));
    BOTHS(gpumem_stream_auto_synchronize_begin(s_));
    BOTHS(gpumem_stream_auto_synchronize_end(s_));
    BOTHS(gpumem_event_record(ev, s_));
    BOTHS(gpumem_stream_wait_event(s_, ev));
    BOTHS(gpumem_mapped_array(ctx, 1, &n, NULL, i32, 'C', s_, 0, &out));
    BOTHS(gpumem_mapped(ctx, &h, 1, s_, &reg, &out));
    BOTHS(gpumem_array_interface(d, s_, &cai));

    gpumem_event *wronge = (gpumem_event *)(void *)st;
    float ms = 0;
    BAD(gpumem_event_destroy(wronge), GPUMEM_ERROR_INVALID_VALUE, "event");
    BAD(gpumem_event_record(wronge, NULL), GPUMEM_ERROR_INVALID_VALUE, "event");
    BAD(gpumem_event_query(wronge), GPUMEM_ERROR_INVALID_VALUE, "event");
    BAD(gpumem_event_synchronize(wronge), GPUMEM_ERROR_INVALID_VALUE, "event");
    BAD(gpumem_event_elapsed_time(wronge, ev, &ms), GPUMEM_ERROR_INVALID_VALUE, "start");
    BAD(gpumem_event_elapsed_time(ev, wronge, &ms), GPUMEM_ERROR_INVALID_VALUE, "end");
    BAD(gpumem_stream_wait_event(st, wronge), GPUMEM_ERROR_INVALID_VALUE, "event");
    BAD(gpumem_event_context(wronge, &dead), GPUMEM_ERROR_INVALID_VALUE, "event");

    gpumem_registration *wrongr = (gpumem_registration *)(void *)st;
    BAD(gpumem_unpinned(&wrongr), GPUMEM_ERROR_INVALID_VALUE, "registration");
    BAD(gpumem_unmapped(&wrongr), GPUMEM_ERROR_INVALID_VALUE, "registration");
    BAD(gpumem_deregister(&wrongr), GPUMEM_ERROR_INVALID_VALUE, "registration");
    ok(wrongr == (gpumem_registration *)(void *)st, "a refused end leaves *registration alone");

    gpumem_array *wronga = (gpumem_array *)(void *)st, *deada = NULL;
    GOOD(gpumem_host_array(1, &n, i32, 'C', &deada));
    GOOD(gpumem_array_release(deada));
    gpumem_array *list[1] = {wronga};
    BAD(gpumem_pinned(ctx, list, 1, &reg), GPUMEM_ERROR_INVALID_VALUE, "arrays[0]");
    list[0] = deada;
    BAD(gpumem_pinned(ctx, list, 1, &reg), GPUMEM_ERROR_INVALID_STATE, "arrays[0]");
    BAD(gpumem_ipc_get_handle(wronga, &ih), GPUMEM_ERROR_INVALID_VALUE, "array");
    BAD(gpumem_ipc_get_handle(deada, &ih), GPUMEM_ERROR_INVALID_STATE, "array");
    BAD(gpumem_array_interface(wronga, NULL, &cai), GPUMEM_ERROR_INVALID_VALUE, "array");
    BAD(gpumem_array_interface(deada, NULL, &cai), GPUMEM_ERROR_INVALID_STATE, "array");
    BAD(gpumem_array_to_dlpack(wronga, 0, &v), GPUMEM_ERROR_INVALID_VALUE, "array");
    BAD(gpumem_array_to_dlpack(deada, 0, &v), GPUMEM_ERROR_INVALID_STATE, "array");
    BOTH(gpumem_ipc_open(c_, &ih, &out));
    /* the handle is checked before the structs it is given are read */
    struct gpumem_memory_report small = {.size = 4};
    struct gpumem_memory_pool_report prs[1] = {{.size = 4}};
    BOTH(gpumem_memory_report(c_, 0, &small));
    BOTH(gpumem_memory_pools(c_, 0, prs, 1, &cnt));
    dl_managed lt = {{NULL, {1, 0}, -1, {0, 32, 1}, NULL, NULL, 0}, NULL, NULL};
    BOTH(gpumem_array_from_dlpack(c_, &lt, 0, &out));

    gpumem_event_destroy(ev);
    gpumem_stream_destroy(st);
    gpumem_array_release(h);
    gpumem_array_release(d);
}


/* ---- batch 5: memo, IPC fields, CAI records and streams, the deferred queue's failures --------- */

static int fail_then_ok;

static gpumem_status memo_flaky(gpumem_context *c, const void *key, size_t key_size, void *user, void **value)
{
    (void)c;
    (void)key;
    (void)key_size;
    (void)user;
    if (fail_then_ok++ == 0)
        return GPUMEM_ERROR_NOT_FOUND; /* no library call: a status of the callback's own */
    *value = (void *)&fail_then_ok;
    return GPUMEM_OK;
}

void test_more(void)
{
    /* memo: a failure is never cached; destroy never runs for it */
    void *v = (void *)&v;
    GOOD(gpumem_clear_context_caches()); /* the entries of test_memo go first */
    created = destroyed = 0;
    fail_then_ok = 0;
    gpumem_status st = gpumem_memoize(ctx, "flaky", 5, memo_flaky, memo_destroy, NULL, &v);
    ok(st == GPUMEM_ERROR_NOT_FOUND && v == (void *)&v && gpumem_last_status() == GPUMEM_ERROR_NOT_FOUND &&
           strncmp(gpumem_last_error(), "gpumem_memoize: ", 16) == 0,
       "a create callback's own failure status is returned, with a message of gpumem_memoize (%s: %s)",
       gpumem_status_string(st), gpumem_last_error());
    GOOD(gpumem_memoize(ctx, "flaky", 5, memo_flaky, memo_destroy, NULL, &v));
    ok(v == (void *)&fail_then_ok && fail_then_ok == 2, "the next call runs create again and caches its value");
    GOOD(gpumem_clear_context_caches());
    is_int(destroyed, 1, "destroy ran once, for the value only");

    /* IPC: every field is checked; the message names it */
    const int64_t n = 64;
    gpumem_array *d = NULL, *out = (gpumem_array *)&v;
    GOOD(gpumem_device_array(ctx, 1, &n, NULL, i32, 'C', NULL, &d));
    gpumem_ipc_handle good, bad;
    GOOD(gpumem_ipc_get_handle(d, &good));
    struct {
        size_t off;
        int64_t value;
        int width;
        gpumem_status want;
        const char *needle;
    } fields[] = {
        {12, 4096, 4, GPUMEM_ERROR_INVALID_VALUE, "size"},
        {128, 33, 4, GPUMEM_ERROR_INVALID_VALUE, "ndim"},
        {128, -1, 4, GPUMEM_ERROR_INVALID_VALUE, "ndim"},
        {136, -5, 8, GPUMEM_ERROR_INVALID_VALUE, "shape"},
        {132, 8, 4, GPUMEM_ERROR_INVALID_VALUE, "item"},
        {112, 1 << 20, 8, GPUMEM_ERROR_INVALID_VALUE, "offset"},
        {136, 1 << 20, 8, GPUMEM_ERROR_INVALID_VALUE, "allocation"},
        {672, 5000, 4, GPUMEM_ERROR_INVALID_VALUE, "descr"},
    };
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
        bad = good;
        if (fields[i].width == 4) {
            int32_t x = (int32_t)fields[i].value;
            memcpy(bad.bytes + fields[i].off, &x, 4);
        } else {
            memcpy(bad.bytes + fields[i].off, &fields[i].value, 8);
        }
        st = gpumem_ipc_open(ctx, &bad, &out);
        ok(st == fields[i].want && strncmp(gpumem_last_error(), "gpumem_ipc_open: ", 17) == 0 &&
               strstr(gpumem_last_error(), fields[i].needle) != NULL,
           "an IPC handle with field at %zu = %lld: %s naming '%s' (%s: %s)", fields[i].off,
           (long long)fields[i].value, gpumem_status_string(fields[i].want), fields[i].needle,
           gpumem_status_string(st), gpumem_last_error());
    }
    bad = good;
    memset(bad.bytes + 648, 'f', 24);
    BAD(gpumem_ipc_open(ctx, &bad, &out), GPUMEM_ERROR_INVALID_VALUE, "typestr");
    bad = good;
    memcpy(bad.bytes + 648, "<q9\0", 4);
    BAD(gpumem_ipc_open(ctx, &bad, &out), GPUMEM_ERROR_INVALID_DTYPE, "typestr");
    ok(out == (gpumem_array *)&v, "refused handles make no array");

    /* a record whose descr does not fit in a handle, or that has none: INVALID_DTYPE (ipc.h) */
    gpumem_field lf[40];
    char names[40][48];
    for (int i = 0; i < 40; i++) {
        snprintf(names[i], sizeof names[i], "field_with_a_rather_long_name_number_%02d", i);
        lf[i] = (gpumem_field){names[i], i32, -1, 0, NULL};
    }
    gpumem_field of[2] = {{"b", i32, 4, 0, NULL}, {"a", i32, 0, 0, NULL}};
    gpumem_dtype *lrec = NULL, *orec = NULL;
    gpumem_array *la = NULL, *oa = NULL;
    GOOD(gpumem_dtype_record_create(lf, 40, GPUMEM_RECORD_PACKED, 0, &lrec));
    GOOD(gpumem_dtype_record_create(of, 2, GPUMEM_RECORD_PACKED, 0, &orec));
    GOOD(gpumem_device_array(ctx, 1, &n, NULL, lrec, 'C', NULL, &la));
    GOOD(gpumem_device_array(ctx, 1, &n, NULL, orec, 'C', NULL, &oa));
    memset(&bad, 0x5A, sizeof bad);
    gpumem_ipc_handle before = bad;
    BAD(gpumem_ipc_get_handle(la, &bad), GPUMEM_ERROR_INVALID_DTYPE, "1371");
    BAD(gpumem_ipc_get_handle(oa, &bad), GPUMEM_ERROR_INVALID_DTYPE, "dtype");
    ok(memcmp(&bad, &before, sizeof bad) == 0, "a refused gpumem_ipc_get_handle writes nothing");
    gpumem_array_release(la);
    gpumem_array_release(oa);
    gpumem_dtype_release(lrec);
    gpumem_dtype_release(orec);

    /* CAI: a record's descr buffer */
    gpumem_field f[2] = {{"a", gpumem_dtype_builtin(GPUMEM_INT32), 0, 0, NULL},
                         {"b", gpumem_dtype_builtin(GPUMEM_FLOAT64), 8, 0, NULL}};
    gpumem_dtype *rec = NULL;
    gpumem_array *r = NULL;
    GOOD(gpumem_dtype_record_create(f, 2, GPUMEM_RECORD_PACKED, 16, &rec));
    GOOD(gpumem_device_array(ctx, 1, &n, NULL, rec, 'C', NULL, &r));
    gpumem_cuda_array_interface desc, keep;
    char small[4], big[256];
    memset(&desc, 0x5A, sizeof desc);
    desc.size = sizeof desc;
    desc.descr_buffer = small;
    desc.descr_buffer_size = sizeof small;
    keep = desc;
    BAD(gpumem_array_interface(r, NULL, &desc), GPUMEM_ERROR_INVALID_VALUE, "descr_buffer");
    ok(memcmp(&desc, &keep, sizeof desc) == 0, "a small descr buffer leaves desc unchanged");
    desc.descr_buffer = NULL;
    desc.descr_buffer_size = 0;
    BAD(gpumem_array_interface(r, NULL, &desc), GPUMEM_ERROR_INVALID_VALUE, "descr_buffer");
    desc.descr_buffer = big;
    desc.descr_buffer_size = sizeof big;
    GOOD(gpumem_array_interface(r, NULL, &desc));
    ok(desc.descr == big && strstr(big, "'a'") != NULL && strcmp(desc.typestr, "|V16") == 0,
       "a record's descr is written into the buffer (%s, %s)", desc.typestr, big);
    gpumem_array *back = NULL;
    GOOD(gpumem_as_cuda_array(ctx, &desc, 0, NULL, NULL, &back));
    const gpumem_dtype *bt = NULL;
    gpumem_array_dtype(back, &bt);
    ok(bt != NULL && gpumem_dtype_equal(bt, rec), "the record comes back through its descr");
    gpumem_array_release(back);
    gpumem_array_release(r);
    gpumem_dtype_release(rec);

    /* CAI import streams */
    gpumem_stream *s = NULL, *s2 = NULL;
    GOOD(gpumem_stream_create(ctx, 0, &s));
    GOOD(gpumem_stream_create(ctx2, 0, &s2));
    gpumem_cuda_array_interface di = {.size = sizeof di};
    GOOD(gpumem_array_interface(d, s, &di));
    ok(di.has_stream == 1 && di.stream > 4095, "a stream of the array's context gives its handle");
    GOOD(gpumem_as_cuda_array(ctx, &di, 0, NULL, NULL, &back));
    gpumem_array_release(back);
    gpumem_cuda_array_interface o = {.size = sizeof o};
    GOOD(gpumem_array_interface(d, NULL, &o));
    gpumem_cuda_array_interface s2desc = {.size = sizeof s2desc};
    gpumem_array *d2 = NULL;
    GOOD(gpumem_device_array(ctx2, 1, &n, NULL, i32, 'C', NULL, &d2));
    GOOD(gpumem_array_interface(d2, s2, &s2desc));
    o.has_stream = 1;
    o.stream = s2desc.stream;
    back = (gpumem_array *)&v;
    BAD(gpumem_as_cuda_array(ctx, &o, 0, NULL, NULL, &back), GPUMEM_ERROR_INVALID_VALUE, "stream");
    o.stream = 2;
    GOOD(gpumem_as_cuda_array(ctx, &o, 0, NULL, NULL, &back));
    gpumem_array_release(back);
    o.stream = 1;
    GOOD(gpumem_as_cuda_array(ctx, &o, 0, NULL, NULL, &back));
    gpumem_array_release(back);
    gpumem_array_release(d2);
    gpumem_stream_destroy(s);
    gpumem_stream_destroy(s2);

    /* DLPack: a read-only array needs a versioned tensor; an empty array's data is NULL */
    gpumem_array *ro = NULL, *e = NULL;
    const int64_t zero = 0;
    GOOD(gpumem_device_array(ctx, 1, &n, NULL, i32, 'C', NULL, &ro));
    GOOD(gpumem_array_set_readonly(ro, 1));
    void *t = (void *)&v;
    BAD(gpumem_array_to_dlpack(ro, 0, &t), GPUMEM_ERROR_INVALID_VALUE, "read-only");
    GOOD(gpumem_array_to_dlpack(ro, GPUMEM_DLPACK_VERSIONED, &t));
    dl_versioned *tv = t;
    ok((tv->flags & 1) == 1 && tv->dl_tensor.device.device_type == 2, "a read-only array exports a read-only tensor");
    tv->deleter(tv);
    GOOD(gpumem_device_array(ctx, 1, &zero, NULL, i32, 'C', NULL, &e));
    GOOD(gpumem_array_to_dlpack(e, 0, &t));
    dl_managed *tm = t;
    ok(tm->dl_tensor.data == NULL, "an empty array exports a NULL data pointer");
    tm->deleter(tm);
    gpumem_array_release(ro);
    gpumem_array_release(e);

    /* the deferred queue: a free the driver refuses stays queued */
    gpumem_context *c = NULL;
    GOOD(gpumem_context_create(0, &c));
    GOOD(gpumem_context_set_dealloc_limits(c, 100, 1.0));
    gpumem_array *q = NULL;
    GOOD(gpumem_device_array(c, 1, &n, NULL, i32, 'C', NULL, &q));
    gpumem_array_release(q);
    size_t count = 0;
    uint64_t bytes = 0;
    GOOD(gpumem_context_pending_deallocations(c, &count, &bytes));
    ok(count == 1 && bytes == 256, "one free queued (%zu, %llu)", count, (unsigned long long)bytes);
    uint64_t frees0 = 0, calls0 = 0, calls1 = 0;
    gpumem_debug_driver_calls("cuMemFree", &frees0);
    gpumem_debug_driver_calls(NULL, &calls0);
    /* fail every call of the flush: arm call 1, 2, ... until the flush fails */
    GOOD(gpumem_debug_fail_call(1, 999));
    st = gpumem_context_flush_deallocations(c);
    gpumem_debug_driver_calls(NULL, &calls1);
    gpumem_debug_fail_call(0, 0);
    GOOD(gpumem_context_pending_deallocations(c, &count, &bytes));
    ok(st == GPUMEM_ERROR_DRIVER && gpumem_last_driver_result() == 999 && count == 1 && bytes == 256 &&
           strncmp(gpumem_last_error(), "gpumem_context_flush_deallocations: ", 36) == 0,
       "a refused free: the flush returns the error and the free stays queued (%s, %zu: %s)",
       gpumem_status_string(st), count, gpumem_last_error());
    GOOD(gpumem_context_flush_deallocations(c));
    GOOD(gpumem_context_pending_deallocations(c, &count, &bytes));
    ok(count == 0 && bytes == 0, "the next flush does it");
    gpumem_context_release(c);

    /* mapped(): a device array is its own device view */
    gpumem_registration *reg = NULL;
    gpumem_array *view = NULL;
    GOOD(gpumem_mapped(ctx, &d, 1, NULL, &reg, &view));
    uint64_t p1 = 0, p2 = 0;
    gpumem_array_device_pointer(d, &p1);
    gpumem_array_device_pointer(view, &p2);
    ok(view != NULL && p1 == p2, "gpumem_mapped gives a device array as its own view");
    gpumem_array_release(view);
    GOOD(gpumem_unmapped(&reg));
    gpumem_array_release(d);
}
