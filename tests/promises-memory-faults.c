/* Peaks and registrations in pointer queries, defer_cleanup scopes, a
 * failing call that changes nothing (every driver call failed in turn),
 * write-backs and their synchronizations, and IPC handles opened by another
 * process (part of tests/test-promises-memory). */
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

/* ---- batch 7: peaks, registrations in pointer queries ------------------------------------------ */

void test_peaks(void)
{
    gpumem_context *c = NULL;
    GOOD(gpumem_context_create(1, &c));
    const int64_t n = (1 << 20) / 4;
    gpumem_array *a = NULL, *b = NULL;
    GOOD(gpumem_device_array(c, 1, &n, NULL, i32, 'C', NULL, &a));
    GOOD(gpumem_device_array(c, 1, &n, NULL, i32, 'C', NULL, &b));
    gpumem_array_release(b);
    GOOD(gpumem_context_flush_deallocations(c));
    struct gpumem_memory_report r = {.size = sizeof r};
    GOOD(gpumem_memory_report(c, 0, &r));
    ok(r.device.bytes == 1u << 20 && r.device.count == 1 && r.device.peak_bytes == 2u << 20 &&
           r.device.peak_count == 2 && r.peak_device_reserved_bytes == 2u << 20 && r.device_reserved_bytes == 1u << 20,
       "live 1 MiB, peak 2 MiB (%llu, %llu, reserved %llu peak %llu)", (unsigned long long)r.device.bytes,
       (unsigned long long)r.device.peak_bytes, (unsigned long long)r.device_reserved_bytes,
       (unsigned long long)r.peak_device_reserved_bytes);
    GOOD(gpumem_memory_reset_peaks(c, 0));
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    GOOD(gpumem_memory_report(c, 0, &r));
    ok(r.device.peak_bytes == 1u << 20 && r.device.peak_count == 1 && r.peak_device_reserved_bytes == 1u << 20,
       "after a reset the peaks are what is live");
    GOOD(gpumem_memory_reset_peaks(c, GPUMEM_MEMORY_WHOLE_DEVICE));
    gpumem_array_release(a);
    gpumem_context_release(c);

    /* a registered range in a pointer query */
    const long page = sysconf(_SC_PAGESIZE);
    char *buf = NULL;
    if (posix_memalign((void **)&buf, (size_t)page, (size_t)page * 4) != 0)
        bail_out("posix_memalign");
    const int64_t m = page; /* int32: 4 pages */
    gpumem_array *h = NULL;
    gpumem_registration *reg = NULL;
    GOOD(gpumem_host_array_wrap(buf, 1, &m, NULL, i32, &h));
    gpumem_pointer_info info = {.size = sizeof info};
    int res = -1;
    GOOD(gpumem_is_cuda_array((uint64_t)(uintptr_t)(buf + 100), &res, &info));
    ok(res == 0 && info.kind == GPUMEM_POINTER_UNKNOWN, "pageable memory before registration");
    GOOD(gpumem_pinned(ctx, &h, 1, &reg));
    GOOD(gpumem_is_cuda_array((uint64_t)(uintptr_t)(buf + 100), &res, &info));
    ok(res == 1 && info.kind == GPUMEM_POINTER_MAPPED && info.host_pointer == buf + 100 &&
           info.range_start == (uint64_t)(uintptr_t)buf && info.range_size == (uint64_t)page * 4 && info.device == 0,
       "a registered range: mapped, its start and size (kind %d, start %llx, size %llu)", (int)info.kind,
       (unsigned long long)info.range_start, (unsigned long long)info.range_size);
    GOOD(gpumem_unpinned(&reg));
    GOOD(gpumem_is_cuda_array((uint64_t)(uintptr_t)(buf + 100), &res, &info));
    ok(res == 0 && info.kind == GPUMEM_POINTER_UNKNOWN, "pageable again after the scope ends");
    gpumem_array_release(h);
    free(buf);
}


/* ---- batch 9: defer_cleanup scopes (cleanup.h) ------------------------------------------------- */

void test_defer(void)
{
    gpumem_context *c = NULL;
    GOOD(gpumem_context_create(1, &c));
    GOOD(gpumem_context_set_dealloc_limits(c, 2, 1.0));
    const int64_t n = 256;
    gpumem_array *a[4] = {NULL};
    size_t count = 0;
    for (int i = 0; i < 4; i++)
        GOOD(gpumem_device_array(c, 1, &n, NULL, i32, 'C', NULL, &a[i]));
    GOOD(gpumem_defer_cleanup_begin(c));
    GOOD(gpumem_defer_cleanup_begin(c));
    for (int i = 0; i < 4; i++)
        gpumem_array_release(a[i]);
    GOOD(gpumem_context_set_dealloc_limits(c, 1, 1.0));
    GOOD(gpumem_context_pending_deallocations(c, &count, NULL));
    is_int((int)count, 4, "new limits inside a scope flush nothing");
    GOOD(gpumem_defer_cleanup_end(c));
    GOOD(gpumem_context_pending_deallocations(c, &count, NULL));
    is_int((int)count, 4, "an inner end flushes nothing");
    GOOD(gpumem_context_flush_deallocations(c));
    GOOD(gpumem_context_pending_deallocations(c, &count, NULL));
    is_int((int)count, 0, "an explicit flush inside a scope flushes");

    /* an allocation that fails inside a scope: out of memory, without a flush */
    const int64_t big = (int64_t)(150u << 20) / 4;
    gpumem_array *b = NULL, *b2 = (gpumem_array *)&count;
    GOOD(gpumem_device_array(c, 1, &big, NULL, i32, 'C', NULL, &b));
    gpumem_array_release(b);
    uint64_t bytes = 0;
    GOOD(gpumem_context_pending_deallocations(c, &count, &bytes));
    ok(count == 1 && bytes == 150u << 20, "150 MiB queued");
    gpumem_status st = gpumem_device_array(c, 1, &big, NULL, i32, 'C', NULL, &b2);
    GOOD(gpumem_context_pending_deallocations(c, &count, &bytes));
    ok(st == GPUMEM_ERROR_OUT_OF_MEMORY && count == 1 && b2 == (gpumem_array *)&count,
       "inside a scope an allocation fails without a flush (%s, %zu queued)", gpumem_status_string(st), count);
    GOOD(gpumem_context_set_dealloc_limits(c, 0, 1.0)); /* 1 queued free is now over the count limit */
    GOOD(gpumem_context_pending_deallocations(c, &count, NULL));
    is_int((int)count, 1, "still queued: the scope is open");
    GOOD(gpumem_defer_cleanup_end(c));
    GOOD(gpumem_context_pending_deallocations(c, &count, NULL));
    is_int((int)count, 0, "the outermost end flushes a queue over the limits");
    GOOD(gpumem_device_array(c, 1, &big, NULL, i32, 'C', NULL, &b2));
    gpumem_array_release(b2);
    BAD(gpumem_defer_cleanup_end(c), GPUMEM_ERROR_INVALID_STATE, "defer_cleanup");
    gpumem_context_release(c);
}


/* ---- batch 10: a failing call changes nothing (gpumem(7)), every driver call failed in turn ---- */

typedef struct {
    gpumem_context *c;
    gpumem_array *h[2];
    gpumem_array *views[2];
    gpumem_registration *reg;
    gpumem_array *arr;
    gpumem_stream *stream;
    gpumem_event *event;
    struct gpumem_memory_report rep;
    gpumem_ipc_handle ih;
    gpumem_array *dev;
    char *buf;
} fault_state;

static gpumem_status call_case(int which, fault_state *f)
{
    const int64_t n = 1024;
    switch (which) {
    case 0: return gpumem_mapped(f->c, f->h, 2, NULL, &f->reg, f->views);
    case 1: return gpumem_pinned(f->c, f->h, 2, &f->reg);
    case 2: return gpumem_pinned_array(f->c, 1, &n, NULL, i32, 'C', &f->arr);
    case 3: return gpumem_mapped_array(f->c, 1, &n, NULL, i32, 'C', NULL, 0, &f->arr);
    case 4: return gpumem_managed_array(f->c, 1, &n, NULL, i32, 'C', GPUMEM_MANAGED_ATTACH_GLOBAL, &f->arr);
    case 5: return gpumem_stream_create(f->c, 0, &f->stream);
    case 6: return gpumem_event_create(f->c, 0, &f->event);
    case 7: return gpumem_memory_report(f->c, GPUMEM_MEMORY_DEVICE_INFO, &f->rep);
    case 8: return gpumem_ipc_get_handle(f->dev, &f->ih);
    default: return gpumem_register(f->c, f->h, 2, &f->reg);
    }
}

static const char *const case_names[] = {"gpumem_mapped",       "gpumem_pinned",        "gpumem_pinned_array",
                                         "gpumem_mapped_array", "gpumem_managed_array", "gpumem_stream_create",
                                         "gpumem_event_create", "gpumem_memory_report", "gpumem_ipc_get_handle",
                                         "gpumem_register"};

static void undo_case(int which, fault_state *f)
{
    switch (which) {
    case 0:
        gpumem_array_release(f->views[0]);
        gpumem_array_release(f->views[1]);
        gpumem_unmapped(&f->reg);
        break;
    case 1: gpumem_unpinned(&f->reg); break;
    case 9: gpumem_deregister(&f->reg); break;
    case 5: gpumem_stream_destroy(f->stream); break;
    case 6: gpumem_event_destroy(f->event); break;
    case 2:
    case 3:
    case 4: gpumem_array_release(f->arr); break;
    default: break;
    }
}

void test_fault_walk(void)
{
    fault_state f;
    memset(&f, 0, sizeof f);
    GOOD(gpumem_context_create(0, &f.c));
    const long page = sysconf(_SC_PAGESIZE);
    if (posix_memalign((void **)&f.buf, (size_t)page, (size_t)page * 8) != 0)
        bail_out("posix_memalign");
    const int64_t m = page; /* int32: 4 pages each */
    GOOD(gpumem_host_array_wrap(f.buf, 1, &m, NULL, i32, &f.h[0]));
    GOOD(gpumem_host_array_wrap(f.buf + page * 4, 1, &m, NULL, i32, &f.h[1]));
    GOOD(gpumem_device_array(f.c, 1, &m, NULL, i32, 'C', NULL, &f.dev));
    for (int which = 0; which < 10; which++) {
        int failures = 0, clean = 1, named = 1;
        for (uint64_t k = 1; k < 40; k++) {
            int refs0 = 0, refs1 = 0, pinned = 1;
            gpumem_context_refcount(f.c, &refs0);
            memset(&f.rep, 0x5A, sizeof f.rep);
            f.rep.size = sizeof f.rep;
            struct gpumem_memory_report rep0 = f.rep;
            memset(&f.ih, 0x5A, sizeof f.ih);
            f.reg = NULL;
            f.views[0] = f.views[1] = NULL;
            f.arr = NULL;
            f.stream = NULL;
            f.event = NULL;
            gpumem_debug_fail_call(k, 999);
            gpumem_status st = call_case(which, &f);
            gpumem_debug_fail_call(0, 0);
            if (st == GPUMEM_OK) {
                undo_case(which, &f);
                break; /* k is past the call's last driver call */
            }
            failures++;
            gpumem_context_refcount(f.c, &refs1);
            gpumem_host_is_pinned(f.buf, (size_t)page * 8, &pinned);
            char fn[64];
            snprintf(fn, sizeof fn, "%s: ", case_names[which]);
            named &= strncmp(gpumem_last_error(), fn, strlen(fn)) == 0;
            int same = f.reg == NULL && f.views[0] == NULL && f.views[1] == NULL && f.arr == NULL &&
                       f.stream == NULL && f.event == NULL && refs1 == refs0 && pinned == 0 &&
                       memcmp(&f.rep, &rep0, sizeof rep0) == 0;
            for (size_t b = 0; b < sizeof f.ih.bytes; b++)
                same &= f.ih.bytes[b] == 0x5A;
            if (!same)
                diag("  %s failing at driver call %llu: reg %p views %p %p arr %p refs %d -> %d pinned %d", case_names[which],
                     (unsigned long long)k, (void *)f.reg, (void *)f.views[0], (void *)f.views[1], (void *)f.arr,
                     refs0, refs1, pinned);
            clean &= same;
        }
        ok(failures > 0 && clean && named, "%s: each of its %d driver calls failed in turn changes nothing, named",
           case_names[which], failures);
    }
    gpumem_array_release(f.h[0]);
    gpumem_array_release(f.h[1]);
    gpumem_array_release(f.dev);
    gpumem_context_release(f.c);
    free(f.buf);
}


/* Calls with plain out-parameters: each driver call failed in turn leaves them as they were. */
void test_fault_outputs(void)
{
    gpumem_event *e1 = NULL, *e2 = NULL;
    GOOD(gpumem_event_create(ctx, 0, &e1));
    GOOD(gpumem_event_create(ctx, 0, &e2));
    GOOD(gpumem_event_record(e1, NULL));
    GOOD(gpumem_event_record(e2, NULL));
    GOOD(gpumem_event_synchronize(e2));
    static const char *const names[] = {"gpumem_device_compute_capability", "gpumem_device_name",
                                        "gpumem_device_total_memory",       "gpumem_device_attribute",
                                        "gpumem_memory_info",               "gpumem_driver_version",
                                        "gpumem_device_count",              "gpumem_context_create",
                                        "gpumem_event_elapsed_time",        "gpumem_get_default_device"};
    for (int which = 0; which < 10; which++) {
        int failures = 0, clean = 1;
        for (uint64_t k = 1; k < 20; k++) {
            int a = -7, b = -7;
            uint64_t u = 77, w = 77;
            char name[32];
            memset(name, 'x', sizeof name);
            gpumem_context *c = (gpumem_context *)&a;
            float ms = -1;
            gpumem_status st;
            gpumem_debug_fail_call(k, 999);
            switch (which) {
            case 0: st = gpumem_device_compute_capability(1, &a, &b); break;
            case 1: st = gpumem_device_name(1, name, sizeof name); break;
            case 2: st = gpumem_device_total_memory(1, &u); break;
            case 3: st = gpumem_device_attribute(1, GPUMEM_DEVICE_WARP_SIZE, &a); break;
            case 4: st = gpumem_memory_info(ctx, &u, &w); break;
            case 5: st = gpumem_driver_version(&a); break;
            case 6: st = gpumem_device_count(&a); break;
            case 7: st = gpumem_context_create(1, &c); break;
            case 8: st = gpumem_event_elapsed_time(e1, e2, &ms); break;
            default: st = gpumem_get_default_device(1, &a); break;
            }
            gpumem_debug_fail_call(0, 0);
            if (st == GPUMEM_OK) {
                if (which == 7)
                    gpumem_context_release(c);
                break;
            }
            failures++;
            int same = a == -7 && b == -7 && u == 77 && w == 77 && c == (gpumem_context *)&a && ms == -1;
            for (size_t i = 0; i < sizeof name; i++)
                same &= name[i] == 'x';
            char fn[64];
            snprintf(fn, sizeof fn, "%s: ", names[which]);
            same &= strncmp(gpumem_last_error(), fn, strlen(fn)) == 0 && gpumem_last_driver_result() == 999;
            if (!same)
                diag("  %s failing at driver call %llu: a %d b %d u %llu w %llu ms %g: %s", names[which],
                     (unsigned long long)k, a, b, (unsigned long long)u, (unsigned long long)w, (double)ms,
                     gpumem_last_error());
            clean &= same;
        }
        ok(failures > 0 && clean, "%s: each of its %d driver calls failed in turn writes no output, named",
           names[which], failures);
    }
    gpumem_event_destroy(e1);
    gpumem_event_destroy(e2);
}


/* Ends that fail still end (host.h, stream.h, event.h): each driver call failed in turn. */
void test_fault_ends(void)
{
    const long page = sysconf(_SC_PAGESIZE);
    char *buf = NULL;
    if (posix_memalign((void **)&buf, (size_t)page, (size_t)page * 4) != 0)
        bail_out("posix_memalign");
    const int64_t m = page;
    gpumem_array *h = NULL;
    GOOD(gpumem_host_array_wrap(buf, 1, &m, NULL, i32, &h));
    static const char *const names[] = {"gpumem_unpinned", "gpumem_unmapped", "gpumem_stream_destroy",
                                        "gpumem_event_destroy"};
    char *old[96];
    size_t nold = 0;
    for (int which = 0; which < 4; which++) {
        int failures = 0, clean = 1;
        for (uint64_t k = 1; k < 20; k++) {
            /* a fresh range each time: one whose unregistration failed stays the driver's */
            gpumem_array_release(h);
            h = NULL;
            if (nold < sizeof old / sizeof *old)
                old[nold++] = buf; /* freed at the end, so that no new buffer takes its address */
            else
                free(buf);
            buf = NULL;
            if (posix_memalign((void **)&buf, (size_t)page, (size_t)page * 4) != 0)
                bail_out("posix_memalign");
            GOOD(gpumem_host_array_wrap(buf, 1, &m, NULL, i32, &h));
            gpumem_registration *reg = NULL, *stale = NULL;
            gpumem_array *view = NULL;
            gpumem_stream *s = NULL;
            gpumem_event *e = NULL;
            if (which == 0)
                GOOD(gpumem_pinned(ctx, &h, 1, &reg));
            else if (which == 1)
                GOOD(gpumem_mapped(ctx, &h, 1, NULL, &reg, &view));
            else if (which == 2)
                GOOD(gpumem_stream_create(ctx, 0, &s));
            else
                GOOD(gpumem_event_create(ctx, 0, &e));
            stale = reg;
            gpumem_array_release(view);
            gpumem_debug_fail_call(k, 999);
            gpumem_status st = which == 0   ? gpumem_unpinned(&reg)
                               : which == 1 ? gpumem_unmapped(&reg)
                               : which == 2 ? gpumem_stream_destroy(s)
                                            : gpumem_event_destroy(e);
            gpumem_debug_fail_call(0, 0);
            if (st == GPUMEM_OK)
                break;
            failures++;
            int pinned = 1;
            gpumem_host_is_pinned(buf, (size_t)page * 4, &pinned);
            gpumem_status again = which == 0   ? gpumem_unpinned(&stale)
                                  : which == 1 ? gpumem_unmapped(&stale)
                                  : which == 2 ? gpumem_stream_destroy(s)
                                               : gpumem_event_destroy(e);
            int same = reg == NULL && again == GPUMEM_ERROR_INVALID_STATE && (which > 1 || pinned == 0);
            if (!same)
                diag("  %s failing at driver call %llu (%s): handle %p, again %s, pinned %d", names[which],
                     (unsigned long long)k, gpumem_status_string(st), (void *)reg, gpumem_status_string(again),
                     pinned);
            clean &= same;
        }
        ok(failures > 0 && clean, "%s: a failure of each of its %d driver calls still ends it", names[which],
           failures);
    }
    gpumem_array_release(h);
    free(buf);
    for (size_t i = 0; i < nold; i++)
        free(old[i]);
}


/* ---- batch 11: write-backs and their synchronizations (stream.h) ------------------------------ */

void test_writebacks(void)
{
    int32_t host[4] = {1, 2, 3, 4};
    const int64_t n = 4, i0 = 0;
    const int32_t nine = 9;
    gpumem_array *h = NULL, *d = NULL;
    gpumem_stream *s = NULL;
    GOOD(gpumem_host_array_wrap(host, 1, &n, NULL, i32, &h));
    GOOD(gpumem_stream_create(ctx, 0, &s));

    /* a wait that fails commits nothing; the next one does */
    GOOD(gpumem_to_device(ctx, h, s, GPUMEM_TO_DEVICE_WRITEBACK, &d));
    GOOD(gpumem_array_fill(d, &nine, s));
    GOOD(gpumem_debug_fail_call(1, 999));
    gpumem_status st = gpumem_stream_synchronize(s);
    gpumem_debug_fail_call(0, 0);
    ok(st == GPUMEM_ERROR_DRIVER && host[0] == 1 && strncmp(gpumem_last_error(), "gpumem_stream_synchronize: ", 27) == 0,
       "a failed wait commits no write-back (%s, host[0] %d)", gpumem_status_string(st), host[0]);
    GOOD(gpumem_stream_synchronize(s));
    ok(host[0] == 9 && host[3] == 9, "the next synchronization commits it (%d %d)", host[0], host[3]);
    host[0] = 1;
    GOOD(gpumem_stream_synchronize(s));
    is_int(host[0], 1, "a write-back is committed once");
    gpumem_array_release(d);

    /* the outermost auto_synchronize end commits */
    GOOD(gpumem_stream_auto_synchronize_begin(s));
    GOOD(gpumem_stream_auto_synchronize_begin(s));
    GOOD(gpumem_to_device(ctx, h, s, GPUMEM_TO_DEVICE_WRITEBACK, &d));
    GOOD(gpumem_array_set_item(d, &i0, &nine, s));
    GOOD(gpumem_stream_auto_synchronize_end(s));
    is_int(host[0], 1, "an inner end commits nothing");
    GOOD(gpumem_stream_auto_synchronize_end(s));
    is_int(host[0], 9, "the outermost end commits");
    gpumem_array_release(d);
    host[0] = 1;

    /* gpumem_context_synchronize commits every stream's; destroy commits its own */
    gpumem_stream *s2 = NULL;
    GOOD(gpumem_stream_create(ctx, 0, &s2));
    GOOD(gpumem_to_device(ctx, h, s2, GPUMEM_TO_DEVICE_WRITEBACK, &d));
    GOOD(gpumem_array_set_item(d, &i0, &nine, s2));
    GOOD(gpumem_context_synchronize(ctx));
    is_int(host[0], 9, "gpumem_context_synchronize commits the streams' write-backs");
    gpumem_array_release(d);
    host[0] = 1;
    GOOD(gpumem_to_device(ctx, h, s2, GPUMEM_TO_DEVICE_WRITEBACK, &d));
    GOOD(gpumem_array_set_item(d, &i0, &nine, s2));
    gpumem_array_release(d); /* the write-back keeps it alive */
    GOOD(gpumem_stream_destroy(s2));
    is_int(host[0], 9, "gpumem_stream_destroy commits its write-backs");
    host[0] = 1;

    /* NULL stream: the default stream's next synchronization */
    gpumem_stream *def = NULL;
    GOOD(gpumem_stream_default(ctx, &def));
    GOOD(gpumem_to_device(ctx, h, NULL, GPUMEM_TO_DEVICE_WRITEBACK, &d));
    GOOD(gpumem_array_set_item(d, &i0, &nine, NULL));
    is_int(host[0], 1, "not before a synchronization");
    GOOD(gpumem_stream_synchronize(def));
    is_int(host[0], 9, "the default stream's synchronization commits a NULL stream's write-back");
    gpumem_array_release(d);

    /* events do not commit write-backs */
    host[0] = 1;
    gpumem_event *ev = NULL;
    GOOD(gpumem_event_create(ctx, 0, &ev));
    GOOD(gpumem_to_device(ctx, h, s, GPUMEM_TO_DEVICE_WRITEBACK, &d));
    GOOD(gpumem_array_set_item(d, &i0, &nine, s));
    GOOD(gpumem_event_record(ev, s));
    GOOD(gpumem_event_synchronize(ev));
    is_int(host[0], 1, "gpumem_event_synchronize commits no write-back");
    GOOD(gpumem_stream_synchronize(s));
    is_int(host[0], 9, "the stream's synchronization does");
    gpumem_array_release(d);
    gpumem_event_destroy(ev);
    gpumem_stream_destroy(s);
    gpumem_array_release(h);
}


/* ---- batch 12: IPC handles opened by another process (ipc.h) ---------------------------------- */

/* The other process: this program run again as "ipc-child FILE DEVICES"; it
 * opens the handle in FILE, reads element 3, writes 77 into element 5, and
 * prints "status value message". */
int ipc_child(const char *file)
{
    gpumem_ipc_handle h;
    FILE *f = fopen(file, "rb");
    if (f == NULL || fread(&h, sizeof h, 1, f) != 1)
        return 3;
    fclose(f);
    gpumem_array *a = (gpumem_array *)&h;
    gpumem_status st = gpumem_ipc_open(NULL, &h, &a);
    int32_t v = -1;
    if (st == GPUMEM_OK) {
        const int64_t i3 = 3, i5 = 5;
        const int32_t w = 77;
        gpumem_array_get_item(a, &i3, &v, NULL);
        gpumem_array_set_item(a, &i5, &w, NULL);
        gpumem_array_release(a);
    } else if (a != (gpumem_array *)&h) {
        v = -2; /* a failed open wrote its output */
    }
    printf("%d %d %s\n", (int)st, (int)v, st == GPUMEM_OK ? "" : gpumem_last_error());
    return 0;
}

/* Runs the child on the handle with GPUMEM_SIM_DEVICES=devices; its line in out. */
static int run_ipc_child(const gpumem_ipc_handle *h, const char *devices, char *out, size_t size)
{
    char file[] = "/tmp/gpumem-ipc-XXXXXX";
    int fd = mkstemp(file);
    if (fd < 0 || write(fd, h, sizeof *h) != (ssize_t)sizeof *h)
        return -1;
    close(fd);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "GPUMEM_SIM_DEVICES=%s /proc/%ld/exe ipc-child %s", devices, (long)getpid(), file);
    fflush(stdout);
    FILE *p = popen(cmd, "r");
    out[0] = '\0';
    if (p == NULL)
        return -1;
    if (fgets(out, (int)size, p) == NULL)
        out[0] = '\0';
    int rc = pclose(p);
    unlink(file);
    return rc;
}

void test_ipc_processes(void)
{
    const int64_t n = 16, i3 = 3, i5 = 5;
    const int32_t seven = 7;
    gpumem_array *d = NULL;
    GOOD(gpumem_device_array(ctx2, 1, &n, NULL, i32, 'C', NULL, &d));
    GOOD(gpumem_array_set_item(d, &i3, &seven, NULL));
    gpumem_ipc_handle h;
    GOOD(gpumem_ipc_get_handle(d, &h));
    char line[1100];
    int st = -1, v = 0, used = 0;
    int rc = run_ipc_child(&h, "2", line, sizeof line);
    ok(rc == 0 && sscanf(line, "%d %d%n", &st, &v, &used) >= 2 && st == GPUMEM_OK && v == 7,
       "another process opens the handle and reads the array (%s)", line);
    int32_t w = 0;
    GOOD(gpumem_array_get_item(d, &i5, &w, NULL));
    is_int(w, 77, "and its writes are seen here");
    rc = run_ipc_child(&h, "1", line, sizeof line);
    st = -1;
    v = 0;
    ok(rc == 0 && sscanf(line, "%d %d", &st, &v) == 2 && st == GPUMEM_ERROR_INVALID_DEVICE && v == -1 &&
           strstr(line, "gpumem_ipc_open: ") != NULL,
       "a process that does not see the handle's device: INVALID_DEVICE, no array (%s)", line);
    gpumem_context *c = NULL;
    gpumem_array_context(d, &c);
    gpumem_array_release(d);
    GOOD(gpumem_context_flush_deallocations(c));
    rc = run_ipc_child(&h, "2", line, sizeof line);
    st = -1;
    v = 0;
    ok(rc == 0 && sscanf(line, "%d %d", &st, &v) == 2 && st == GPUMEM_ERROR_DRIVER && v == -1 &&
           strstr(line, "CUDA_ERROR_INVALID_VALUE") != NULL,
       "the simulator refuses a handle of freed memory: GPUMEM_ERROR_DRIVER naming CUDA_ERROR_INVALID_VALUE (%s)",
       line);
}
