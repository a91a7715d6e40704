/* One lifecycle check for every handle type (gpumem/status.h, "Handles"):
 * for each type, a second release or destroy is GPUMEM_ERROR_INVALID_STATE
 * with a message that names the call and the argument; every kind of entry
 * point given an ended handle returns GPUMEM_ERROR_INVALID_STATE and changes
 * nothing (with a pool: the live array that reused the dead one's block
 * keeps its bytes); a pointer of another type is GPUMEM_ERROR_INVALID_VALUE;
 * of two threads that end one handle at once, one succeeds.
 *
 * Each scenario runs in a child process (a library that aborts on a double
 * free fails its scenario, not the whole program); the child prints its own
 * TAP lines and hands its counts back.  Everything a scenario reads through
 * an ended handle is still the library's memory (the quarantine), so the
 * test is clean under AddressSanitizer (make check-asan). */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gpumem.h>

#include "arrays.h"
#include "child.h"
#include "tap.h"

#define N 256

static const gpumem_dtype *i32(void)
{
    return gpumem_dtype_builtin(GPUMEM_INT32);
}

/* One result: status st is `want`, and the message names `call` and 'arg'. */
static void expect(gpumem_status st, gpumem_status want, const char *call, const char *arg, const char *name)
{
    const char *msg = gpumem_last_error();
    char quoted[96];
    snprintf(quoted, sizeof quoted, "'%s'", arg);
    int good = st == want && strstr(msg, call) != NULL && strstr(msg, quoted) != NULL;
    ok(good, "%s: %s", name, gpumem_status_string(want));
    if (!good)
        diag("got %s: \"%s\" (want the message to name %s and %s)", gpumem_status_string(st), msg, call, quoted);
}

#define DEAD(call, fn, arg, name) expect((call), GPUMEM_ERROR_INVALID_STATE, fn, arg, name)
#define FOREIGN(call, fn, arg, name) expect((call), GPUMEM_ERROR_INVALID_VALUE, fn, arg, name)

static gpumem_array *device_ints(gpumem_context *ctx, int32_t value)
{
    int64_t n = N;
    gpumem_array *a = NULL;
    if (gpumem_device_array(ctx, 1, &n, NULL, i32(), 'C', NULL, &a) != GPUMEM_OK ||
        gpumem_array_fill(a, &value, NULL) != GPUMEM_OK)
        bail_out("a device array: %s", gpumem_last_error());
    return a;
}

/* Whether every element of a (N int32) is v. */
static int all_equal(gpumem_array *a, int32_t v)
{
    int32_t got[N];
    if (!read_all(a, got))
        return 0;
    for (int i = 0; i < N; i++)
        if (got[i] != v)
            return 0;
    return 1;
}

static gpumem_context *new_context(void)
{
    gpumem_context *ctx = NULL;
    if (gpumem_context_create(0, &ctx) != GPUMEM_OK)
        bail_out("a context: %s", gpumem_last_error());
    return ctx;
}

/* ---- contexts ---- */

static void contexts(void)
{
    gpumem_context *ctx = new_context();
    is_int(gpumem_context_release(ctx), GPUMEM_OK, "context: the last release");
    DEAD(gpumem_context_release(ctx), "gpumem_context_release", "ctx", "context: released again");
    DEAD(gpumem_context_retain(ctx), "gpumem_context_retain", "ctx", "context: retained after its end");
    int device = -7;
    DEAD(gpumem_context_get_device(ctx, &device), "gpumem_context_get_device", "ctx", "context: a query");
    is_int(device, -7, "context: the query wrote nothing");
    uint64_t f = 1, t = 2;
    DEAD(gpumem_memory_info(ctx, &f, &t), "gpumem_memory_info", "ctx", "context: memory_info");
    ok(f == 1 && t == 2, "context: memory_info wrote nothing");
    int64_t n = 4;
    gpumem_array *a = (gpumem_array *)&n;
    DEAD(gpumem_device_array(ctx, 1, &n, NULL, i32(), 'C', NULL, &a), "gpumem_device_array", "ctx",
         "context: an array made in it");
    ok(a == (gpumem_array *)&n, "context: no array came back");
    gpumem_stream *s = NULL;
    DEAD(gpumem_stream_create(ctx, 0, &s), "gpumem_stream_create", "ctx", "context: a stream made in it");
    gpumem_pool *p = NULL;
    DEAD(gpumem_pool_create(ctx, 0, &p), "gpumem_pool_create", "ctx", "context: a pool made in it");
    ok(s == NULL && p == NULL, "context: nothing came back");
    DEAD(gpumem_context_synchronize(ctx), "gpumem_context_synchronize", "ctx", "context: synchronize");
    DEAD(gpumem_defer_cleanup_begin(ctx), "gpumem_defer_cleanup_begin", "ctx", "context: a cleanup scope");
}

/* ---- arrays ---- */

static void arrays(void)
{
    gpumem_context *ctx = new_context();
    gpumem_array *a = device_ints(ctx, 7);
    gpumem_array *h = NULL;
    int64_t n = N;
    gpumem_host_array(1, &n, i32(), 'C', &h);
    int32_t five = 5;
    gpumem_array_fill(h, &five, NULL);
    is_int(gpumem_array_release(a), GPUMEM_OK, "array: the last release");
    DEAD(gpumem_array_release(a), "gpumem_array_release", "array", "array: released again");
    DEAD(gpumem_array_retain(a), "gpumem_array_retain", "array", "array: retained after its end");
    int64_t size = -1, shape[1] = {-1};
    DEAD(gpumem_array_size(a, &size), "gpumem_array_size", "array", "array: size");
    DEAD(gpumem_array_shape(a, shape), "gpumem_array_shape", "array", "array: shape");
    ok(size == -1 && shape[0] == -1, "array: the queries wrote nothing");
    int32_t nine = 9;
    DEAD(gpumem_array_fill(a, &nine, NULL), "gpumem_array_fill", "array", "array: fill");
    int64_t idx = 3;
    int32_t item = -1;
    DEAD(gpumem_array_get_item(a, &idx, &item, NULL), "gpumem_array_get_item", "array", "array: get_item");
    is_int(item, -1, "array: get_item wrote nothing");
    DEAD(gpumem_array_set_item(a, &idx, &nine, NULL), "gpumem_array_set_item", "array", "array: set_item");
    DEAD(gpumem_array_copy(h, a, NULL), "gpumem_array_copy", "src", "array: a copy from it");
    ok(all_equal(h, 5), "array: the copy's destination is unchanged");
    DEAD(gpumem_array_copy(a, h, NULL), "gpumem_array_copy", "dst", "array: a copy into it");
    DEAD(gpumem_copy_to_host(a, h, NULL), "gpumem_copy_to_host", "src", "array: copy_to_host from it");
    DEAD(gpumem_copy_to_device(a, h, NULL), "gpumem_copy_to_device", "dst", "array: copy_to_device into it");
    gpumem_slice all = GPUMEM_SLICE_ALL;
    gpumem_array *v = NULL;
    DEAD(gpumem_array_slice(a, &all, 1, &v), "gpumem_array_slice", "array", "array: a view of it");
    DEAD(gpumem_array_reshape(a, 1, &n, 'C', 0, NULL, &v), "gpumem_array_reshape", "array", "array: reshape");
    ok(v == NULL, "array: no view came back");
    gpumem_registration *r = NULL;
    DEAD(gpumem_pinned(ctx, &a, 1, &r), "gpumem_pinned", "arrays[0]", "array: pinned()");
    gpumem_cuda_array_interface desc;
    memset(&desc, 0, sizeof desc);
    desc.size = sizeof desc;
    DEAD(gpumem_array_interface(a, NULL, &desc), "gpumem_array_interface", "array", "array: its interface");
    gpumem_array *d = NULL;
    DEAD(gpumem_to_device(ctx, a, NULL, 0, &d), "gpumem_to_device", "host", "array: to_device of it");
    ok(r == NULL && d == NULL, "array: nothing came back");
    gpumem_array_release(h);
    gpumem_context_release(ctx);
}

/* The case: a dead handle whose block a live array reuses. */
static void arrays_on_pool(void)
{
    gpumem_context *ctx = new_context();
    gpumem_pool *pool = NULL;
    gpumem_pool_create(ctx, 0, &pool);
    gpumem_context_set_pool(ctx, pool);
    gpumem_array *a = device_ints(ctx, 1);
    uint64_t pa = 0, pb = 1;
    gpumem_array_device_pointer(a, &pa);
    gpumem_array_release(a);
    gpumem_array *b = device_ints(ctx, 2);
    gpumem_array_device_pointer(b, &pb);
    ok(pa == pb, "pool: the new array reuses the released array's block");
    ok(a != b, "pool: under a new handle");
    int32_t three = 3;
    DEAD(gpumem_array_fill(a, &three, NULL), "gpumem_array_fill", "array", "pool: fill through the dead handle");
    int64_t idx = 0;
    DEAD(gpumem_array_set_item(a, &idx, &three, NULL), "gpumem_array_set_item", "array",
         "pool: set_item through the dead handle");
    gpumem_array *h = NULL;
    int64_t n = N;
    gpumem_host_array(1, &n, i32(), 'C', &h);
    gpumem_array_fill(h, &three, NULL);
    DEAD(gpumem_array_copy(a, h, NULL), "gpumem_array_copy", "dst", "pool: a copy into the dead handle");
    ok(all_equal(b, 2), "pool: the live array keeps its bytes");
    gpumem_array_release(h);
    gpumem_array_release(b);
    gpumem_context_set_pool(ctx, NULL);
    gpumem_pool_destroy(pool);
    gpumem_context_release(ctx);
}

/* A handle stays detected while fewer than 64 handles of its size were
 * ended since by the thread (status.h). */
static void quarantine(void)
{
    gpumem_context *ctx = new_context();
    gpumem_array *stale = device_ints(ctx, 1);
    gpumem_array_release(stale);
    for (int i = 0; i < 63; i++)
        gpumem_array_release(device_ints(ctx, 2));
    int64_t size = -1;
    DEAD(gpumem_array_size(stale, &size), "gpumem_array_size", "array",
         "quarantine: still detected after 63 more arrays were made and released");
    is_int(size, -1, "quarantine: nothing written");
    gpumem_context_release(ctx);
}

/* ---- streams ---- */

static void streams(void)
{
    gpumem_context *ctx = new_context();
    gpumem_stream *s = NULL;
    gpumem_stream_create(ctx, 0, &s);
    is_int(gpumem_stream_destroy(s), GPUMEM_OK, "stream: destroy");
    DEAD(gpumem_stream_destroy(s), "gpumem_stream_destroy", "stream", "stream: destroyed again");
    DEAD(gpumem_stream_synchronize(s), "gpumem_stream_synchronize", "stream", "stream: synchronize");
    DEAD(gpumem_stream_query(s), "gpumem_stream_query", "stream", "stream: query");
    gpumem_context *c = NULL;
    DEAD(gpumem_stream_context(s, &c), "gpumem_stream_context", "stream", "stream: its context");
    ok(c == NULL, "stream: nothing came back");
    DEAD(gpumem_stream_auto_synchronize_begin(s), "gpumem_stream_auto_synchronize_begin", "stream",
         "stream: an auto_synchronize scope");
    gpumem_array *a = device_ints(ctx, 4);
    int32_t six = 6;
    DEAD(gpumem_array_fill(a, &six, s), "gpumem_array_fill", "stream", "stream: as the stream of a fill");
    ok(all_equal(a, 4), "stream: the array is unchanged");
    gpumem_array *h = NULL;
    int64_t n = N;
    gpumem_host_array(1, &n, i32(), 'C', &h);
    gpumem_array_fill(h, &six, NULL);
    DEAD(gpumem_array_copy(a, h, s), "gpumem_array_copy", "stream", "stream: as the stream of a copy");
    ok(all_equal(a, 4), "stream: the copy wrote nothing");
    gpumem_array *b = NULL;
    DEAD(gpumem_device_array(ctx, 1, &n, NULL, i32(), 'C', s, &b), "gpumem_device_array", "stream",
         "stream: as the stream of a new array");
    gpumem_pool *pool = NULL;
    gpumem_pool_create(ctx, 0, &pool);
    gpumem_allocation *al = NULL, *live = NULL;
    DEAD(gpumem_pool_allocate(pool, 64, s, &al), "gpumem_pool_allocate", "stream",
         "stream: as the stream of a pool allocation");
    ok(b == NULL && al == NULL, "stream: nothing came back");
    gpumem_pool_allocate(pool, 64, NULL, &live);
    DEAD(gpumem_allocation_free(live, s), "gpumem_allocation_free", "stream", "stream: as the stream of a free");
    size_t bytes = 0;
    ok(gpumem_allocation_size(live, &bytes) == GPUMEM_OK && bytes == 64, "stream: the allocation is still live");
    is_int(gpumem_allocation_free(live, NULL), GPUMEM_OK, "stream: and frees");
    gpumem_stream *dflt = NULL;
    gpumem_stream_default(ctx, &dflt);
    is_int(gpumem_stream_destroy(dflt), GPUMEM_ERROR_INVALID_VALUE, "stream: the default one is not destroyed");
    is_int(gpumem_stream_synchronize(dflt), GPUMEM_OK, "stream: and still works");
    gpumem_pool_destroy(pool);
    gpumem_array_release(a);
    gpumem_array_release(h);
    gpumem_context_release(ctx);
}

/* ---- events ---- */

static void events(void)
{
    gpumem_context *ctx = new_context();
    gpumem_stream *s = NULL;
    gpumem_event *e = NULL, *live = NULL;
    gpumem_stream_create(ctx, 0, &s);
    gpumem_event_create(ctx, 0, &e);
    gpumem_event_create(ctx, 0, &live);
    gpumem_event_record(live, s);
    is_int(gpumem_event_destroy(e), GPUMEM_OK, "event: destroy");
    DEAD(gpumem_event_destroy(e), "gpumem_event_destroy", "event", "event: destroyed again");
    DEAD(gpumem_event_record(e, s), "gpumem_event_record", "event", "event: record");
    DEAD(gpumem_event_query(e), "gpumem_event_query", "event", "event: query");
    DEAD(gpumem_event_synchronize(e), "gpumem_event_synchronize", "event", "event: synchronize");
    float ms = 3;
    DEAD(gpumem_event_elapsed_time(live, e, &ms), "gpumem_event_elapsed_time", "end", "event: as the end of a time");
    ok(ms == 3, "event: nothing came back");
    DEAD(gpumem_stream_wait_event(s, e), "gpumem_stream_wait_event", "event", "event: waited for");
    gpumem_context *c = NULL;
    DEAD(gpumem_event_context(e, &c), "gpumem_event_context", "event", "event: its context");
    ok(c == NULL, "event: nothing came back");
    FOREIGN(gpumem_stream_synchronize((gpumem_stream *)(void *)live), "gpumem_stream_synchronize", "stream",
            "event: passed as a stream");
    like(gpumem_last_error(), "is an event (gpumem_event), not a stream", "event: the message says what it is");
    FOREIGN(gpumem_event_query((gpumem_event *)(void *)s), "gpumem_event_query", "event", "stream: passed as an event");
    is_int(gpumem_event_synchronize(live), GPUMEM_OK, "event: another one still works");
    gpumem_event_destroy(live);
    gpumem_stream_destroy(s);
    gpumem_context_release(ctx);
}

/* ---- pools ---- */

static void pools(void)
{
    gpumem_context *ctx = new_context();
    gpumem_pool *p = NULL;
    gpumem_pool_create(ctx, 0, &p);
    gpumem_allocation *kept = NULL;
    gpumem_pool_allocate(p, 1000, NULL, &kept);
    uint64_t ptr = 0;
    gpumem_allocation_pointer(kept, &ptr);
    is_int(gpumem_pool_destroy(p), GPUMEM_OK, "pool: destroy (one allocation still live)");
    DEAD(gpumem_pool_destroy(p), "gpumem_pool_destroy", "pool", "pool: destroyed again");
    gpumem_allocation *al = NULL;
    DEAD(gpumem_pool_allocate(p, 64, NULL, &al), "gpumem_pool_allocate", "pool", "pool: allocate");
    ok(al == NULL, "pool: nothing came back");
    uint64_t count = 99;
    DEAD(gpumem_pool_held_blocks(p, &count), "gpumem_pool_held_blocks", "pool", "pool: held_blocks");
    is_int((long long)count, 99, "pool: held_blocks wrote nothing");
    struct gpumem_pool_stats st;
    memset(&st, 0, sizeof st);
    st.size = sizeof st;
    DEAD(gpumem_pool_stats(p, &st), "gpumem_pool_stats", "pool", "pool: stats");
    DEAD(gpumem_pool_free_held(p), "gpumem_pool_free_held", "pool", "pool: free_held");
    DEAD(gpumem_pool_stop_holding(p), "gpumem_pool_stop_holding", "pool", "pool: stop_holding");
    gpumem_context *c = NULL;
    DEAD(gpumem_pool_context(p, &c), "gpumem_pool_context", "pool", "pool: its context");
    DEAD(gpumem_context_set_pool(ctx, p), "gpumem_context_set_pool", "pool", "pool: set on a context");
    uint64_t again = 0;
    ok(gpumem_allocation_pointer(kept, &again) == GPUMEM_OK && again == ptr,
       "pool: its live allocation is still valid");
    is_int(gpumem_allocation_free(kept, NULL), GPUMEM_OK, "pool: and frees (the pool's memory goes then)");

    /* A pool destroyed while a context allocates from it. */
    gpumem_pool *q = NULL;
    gpumem_pool_create(ctx, 0, &q);
    gpumem_context_set_pool(ctx, q);
    gpumem_pool_destroy(q);
    int64_t n = N;
    gpumem_array *a = NULL;
    is_int(gpumem_device_array(ctx, 1, &n, NULL, i32(), 'C', NULL, &a), GPUMEM_ERROR_INVALID_STATE,
           "pool: a context whose pool was destroyed allocates no array");
    like(gpumem_last_error(), "gpumem_context_set_pool", "pool: the message says what to do");
    gpumem_context_set_pool(ctx, NULL);
    is_int(gpumem_device_array(ctx, 1, &n, NULL, i32(), 'C', NULL, &a), GPUMEM_OK,
           "pool: with the pool unset it does");
    gpumem_array_release(a);

    /* Allocations: generation-checked handles. */
    gpumem_pool *r = NULL;
    gpumem_pool_create(ctx, 0, &r);
    gpumem_pool_allocate(r, 64, NULL, &al);
    is_int(gpumem_allocation_free(al, NULL), GPUMEM_OK, "allocation: free");
    DEAD(gpumem_allocation_free(al, NULL), "gpumem_allocation_free", "alloc", "allocation: freed again");
    size_t bytes = 7;
    DEAD(gpumem_allocation_size(al, &bytes), "gpumem_allocation_size", "alloc", "allocation: size");
    is_int((long long)bytes, 7, "allocation: size wrote nothing");
    gpumem_pool_destroy(r);
    gpumem_context_release(ctx);
}

static void host_pools(void)
{
    gpumem_context *ctx = new_context();
    gpumem_host_pool *p = NULL;
    gpumem_host_pool_create(ctx, 0, &p);
    is_int(gpumem_host_pool_destroy(p), GPUMEM_OK, "host pool: destroy");
    DEAD(gpumem_host_pool_destroy(p), "gpumem_host_pool_destroy", "pool", "host pool: destroyed again");
    gpumem_allocation *al = NULL;
    DEAD(gpumem_host_pool_allocate_bytes(p, 64, &al), "gpumem_host_pool_allocate_bytes", "pool",
         "host pool: allocate_bytes");
    int64_t n = N;
    gpumem_array *a = NULL;
    DEAD(gpumem_host_pool_allocate(p, 1, &n, i32(), 'C', &a), "gpumem_host_pool_allocate", "pool",
         "host pool: an array from it");
    ok(al == NULL && a == NULL, "host pool: nothing came back");
    uint64_t count = 99;
    DEAD(gpumem_host_pool_active_blocks(p, &count), "gpumem_host_pool_active_blocks", "pool",
         "host pool: active_blocks");
    is_int((long long)count, 99, "host pool: active_blocks wrote nothing");
    DEAD(gpumem_host_pool_free_held(p), "gpumem_host_pool_free_held", "pool", "host pool: free_held");
    gpumem_context *c = NULL;
    DEAD(gpumem_host_pool_context(p, &c), "gpumem_host_pool_context", "pool", "host pool: its context");
    gpumem_context_release(ctx);
}

/* ---- registrations ---- */

static void registrations(void)
{
    gpumem_context *ctx = new_context();
    gpumem_array *h = NULL;
    int64_t n = 4096;
    gpumem_host_array(1, &n, i32(), 'C', &h);
    gpumem_registration *r = NULL;
    gpumem_pinned(ctx, &h, 1, &r);
    gpumem_registration *copy = r;
    is_int(gpumem_unpinned(&r), GPUMEM_OK, "registration: end the scope");
    DEAD(gpumem_unpinned(&copy), "gpumem_unpinned", "*registration", "registration: a stale copy ended again");
    ok(copy != NULL, "registration: the stale copy is left alone");
    DEAD(gpumem_deregister(&copy), "gpumem_deregister", "*registration", "registration: by deregister()");
    void *host = NULL;
    gpumem_array_host_pointer(h, &host);
    int pinned = -1;
    gpumem_host_is_pinned(host, (size_t)n * 4, &pinned);
    is_int(pinned, 0, "registration: the pages stay unpinned");
    gpumem_array_release(h);
    gpumem_context_release(ctx);
}

/* ---- modules and functions ---- */

static const char noop_ptx[] = ".version 7.0\n.target sm_50\n.address_size 64\n"
                               ".visible .entry noop()\n{\n    ret;\n}\n";

static void modules(void)
{
    gpumem_context *ctx = new_context();
    gpumem_module *m = NULL;
    if (gpumem_module_load(ctx, noop_ptx, sizeof noop_ptx, &m) != GPUMEM_OK)
        bail_out("a module: %s", gpumem_last_error());
    gpumem_function *f = NULL;
    gpumem_module_get_function(m, "noop", &f);
    is_int(gpumem_module_release(m), GPUMEM_OK, "module: the caller's release (the cache keeps it)");
    DEAD(gpumem_module_release(m), "gpumem_module_release", "module", "module: released again");
    is_int(gpumem_clear_context_caches(), GPUMEM_OK, "module: the cache lets it go");
    DEAD(gpumem_module_release(m), "gpumem_module_release", "module", "module: released once it is freed");
    DEAD(gpumem_module_retain(m), "gpumem_module_retain", "module", "module: retained once it is freed");
    gpumem_function *g = NULL;
    DEAD(gpumem_module_get_function(m, "noop", &g), "gpumem_module_get_function", "module",
         "module: a function of it");
    ok(g == NULL, "module: nothing came back");
    const char *name = NULL;
    DEAD(gpumem_function_name(f, &name), "gpumem_function_name", "function", "function: dead with its module");
    ok(name == NULL, "function: nothing came back");
    int value = -3;
    DEAD(gpumem_function_attribute(f, GPUMEM_FUNCTION_MAX_THREADS_PER_BLOCK, &value), "gpumem_function_attribute",
         "function", "function: an attribute");
    is_int(value, -3, "function: nothing written");
    gpumem_context_release(ctx);
}

/* ---- device data ---- */

static void device_data(void)
{
    gpumem_device_data *dd = NULL;
    if (gpumem_device_data_create(0, &dd) != GPUMEM_OK)
        bail_out("device data: %s", gpumem_last_error());
    is_int(gpumem_device_data_destroy(dd), GPUMEM_OK, "device data: destroy");
    DEAD(gpumem_device_data_destroy(dd), "gpumem_device_data_destroy", "dd", "device data: destroyed again");
    int v = -5;
    DEAD(gpumem_device_data_get(dd, GPUMEM_DEVICE_DATA_WARP_SIZE, &v), "gpumem_device_data_get", "dd",
         "device data: get");
    is_int(v, -5, "device data: nothing written");
    gpumem_occupancy_record rec;
    memset(&rec, 0, sizeof rec);
    rec.size = sizeof rec;
    DEAD(gpumem_occupancy(dd, 128, 0, 16, &rec), "gpumem_occupancy", "dd", "device data: occupancy");
}

/* ---- dtypes ---- */

static void dtypes(void)
{
    gpumem_field fields[] = {{"x", i32(), -1, 0, NULL}, {"y", gpumem_dtype_builtin(GPUMEM_FLOAT64), -1, 0, NULL}};
    gpumem_dtype *d = NULL;
    gpumem_dtype_record_create(fields, 2, GPUMEM_RECORD_ALIGNED, 0, &d);
    is_int(gpumem_dtype_retain(d), GPUMEM_OK, "dtype: retain");
    is_int(gpumem_dtype_release(d), GPUMEM_OK, "dtype: release");
    is_int(gpumem_dtype_release(d), GPUMEM_OK, "dtype: the last release");
    DEAD(gpumem_dtype_release(d), "gpumem_dtype_release", "dtype", "dtype: released again");
    size_t size = 3;
    DEAD(gpumem_dtype_itemsize(d, &size), "gpumem_dtype_itemsize", "dtype", "dtype: itemsize");
    is_int((long long)size, 3, "dtype: nothing written");
    gpumem_context *ctx = new_context();
    int64_t n = 4;
    gpumem_array *a = NULL;
    DEAD(gpumem_device_array(ctx, 1, &n, NULL, d, 'C', NULL, &a), "gpumem_device_array", "dtype",
         "dtype: an array of it");
    ok(a == NULL, "dtype: no array came back");
    gpumem_field nested[] = {{"r", d, -1, 0, NULL}};
    gpumem_dtype *e = NULL;
    DEAD(gpumem_dtype_record_create(nested, 1, GPUMEM_RECORD_PACKED, 0, &e), "gpumem_dtype_record_create",
         "fields[0].dtype", "dtype: a field of it");
    ok(e == NULL, "dtype: no record came back");
    ok(!gpumem_dtype_equal(d, d), "dtype: a dead dtype equals nothing");
    const gpumem_dtype *b = i32();
    for (int i = 0; i < 3; i++)
        gpumem_dtype_release(b);
    size = 0;
    ok(gpumem_dtype_itemsize(b, &size) == GPUMEM_OK && size == 4, "dtype: releasing a builtin is a no-op");
    gpumem_context_release(ctx);
}

/* ---- pointers of another type ---- */

static void foreign(void)
{
    gpumem_context *ctx = new_context();
    gpumem_stream *s = NULL;
    gpumem_stream_create(ctx, 0, &s);
    gpumem_pool *p = NULL;
    gpumem_pool_create(ctx, 0, &p);
    gpumem_host_pool *hp = NULL;
    gpumem_host_pool_create(ctx, 0, &hp);
    gpumem_array *a = device_ints(ctx, 8);

    FOREIGN(gpumem_pool_destroy((gpumem_pool *)(void *)s), "gpumem_pool_destroy", "pool",
            "foreign: a stream destroyed as a pool");
    like(gpumem_last_error(), "is a stream", "foreign: the message says what it is");
    is_int(gpumem_stream_synchronize(s), GPUMEM_OK, "foreign: the stream still works");
    FOREIGN(gpumem_stream_destroy((gpumem_stream *)(void *)p), "gpumem_stream_destroy", "stream",
            "foreign: a pool destroyed as a stream");
    uint64_t held = 99;
    is_int(gpumem_pool_held_blocks(p, &held), GPUMEM_OK, "foreign: the pool still works");
    FOREIGN(gpumem_host_pool_destroy((gpumem_host_pool *)(void *)p), "gpumem_host_pool_destroy", "pool",
            "foreign: a device pool destroyed as a host pool");
    FOREIGN(gpumem_pool_free_held((gpumem_pool *)(void *)hp), "gpumem_pool_free_held", "pool",
            "foreign: a host pool used as a device pool");
    int refs = 0;
    FOREIGN(gpumem_array_release((gpumem_array *)(void *)ctx), "gpumem_array_release", "array",
            "foreign: a context released as an array");
    ok(gpumem_context_refcount(ctx, &refs) == GPUMEM_OK && refs >= 1, "foreign: the context is untouched");
    FOREIGN(gpumem_context_release((gpumem_context *)(void *)a), "gpumem_context_release", "ctx",
            "foreign: an array released as a context");
    ok(all_equal(a, 8), "foreign: the array is untouched");
    int32_t nine = 9;
    FOREIGN(gpumem_array_fill(a, &nine, (gpumem_stream *)(void *)p), "gpumem_array_fill", "stream",
            "foreign: a pool as a fill's stream");
    ok(all_equal(a, 8), "foreign: nothing filled");
    FOREIGN(gpumem_array_fill((gpumem_array *)(void *)i32(), &nine, NULL), "gpumem_array_fill", "array",
            "foreign: a dtype used as an array");
    /* Memory that holds no handle at all. */
    void *junk = calloc(1, 1024);
    int64_t size = -1;
    FOREIGN(gpumem_array_size((gpumem_array *)junk, &size), "gpumem_array_size", "array",
            "foreign: zeroed memory used as an array");
    like(gpumem_last_error(), "is not an array", "foreign: the message says so");
    is_int(size, -1, "foreign: nothing written");
    memset(junk, 0xa5, 1024);
    FOREIGN(gpumem_pool_destroy((gpumem_pool *)junk), "gpumem_pool_destroy", "pool",
            "foreign: patterned memory destroyed as a pool");
    free(junk);
    /* A destroyed handle of another type is still of another type. */
    gpumem_stream_destroy(s);
    FOREIGN(gpumem_pool_destroy((gpumem_pool *)(void *)s), "gpumem_pool_destroy", "pool",
            "foreign: a destroyed stream given as a pool");
    like(gpumem_last_error(), "destroyed already", "foreign: the message says it was destroyed");

    gpumem_array_release(a);
    gpumem_host_pool_destroy(hp);
    gpumem_pool_destroy(p);
    gpumem_context_release(ctx);
}

/* ---- two threads end one handle at once ---- */

#define ROUNDS 100

typedef struct race {
    pthread_barrier_t start, done;
    int kind; /* 0: pool, 1: stream, 2: array, 3: context */
    void *h;
    gpumem_status st[2];
    int stop;
} race;

static gpumem_status end_one(race *r)
{
    switch (r->kind) {
    case 0: return gpumem_pool_destroy(r->h);
    case 1: return gpumem_stream_destroy(r->h);
    case 2: return gpumem_array_release(r->h);
    default: return gpumem_context_release(r->h);
    }
}

static void *racer(void *arg)
{
    race *r = arg;
    for (;;) {
        pthread_barrier_wait(&r->start);
        if (r->stop)
            return NULL;
        r->st[1] = end_one(r);
        pthread_barrier_wait(&r->done);
    }
}

static void races(void)
{
    static const char *const names[] = {"pool destroy", "stream destroy", "array release", "context release"};
    gpumem_context *ctx = new_context();
    race r;
    memset(&r, 0, sizeof r);
    pthread_barrier_init(&r.start, NULL, 2);
    pthread_barrier_init(&r.done, NULL, 2);
    pthread_t t;
    pthread_create(&t, NULL, racer, &r);
    for (int kind = 0; kind < 4; kind++) {
        int good = 0;
        for (int i = 0; i < ROUNDS; i++) {
            int64_t n = 16;
            r.kind = kind;
            r.h = NULL;
            if (kind == 0)
                gpumem_pool_create(ctx, 0, (gpumem_pool **)&r.h);
            else if (kind == 1)
                gpumem_stream_create(ctx, 0, (gpumem_stream **)&r.h);
            else if (kind == 2)
                gpumem_device_array(ctx, 1, &n, NULL, i32(), 'C', NULL, (gpumem_array **)&r.h);
            else
                gpumem_context_create(0, (gpumem_context **)&r.h);
            pthread_barrier_wait(&r.start);
            r.st[0] = end_one(&r);
            pthread_barrier_wait(&r.done);
            int oks = (r.st[0] == GPUMEM_OK) + (r.st[1] == GPUMEM_OK);
            int states = (r.st[0] == GPUMEM_ERROR_INVALID_STATE) + (r.st[1] == GPUMEM_ERROR_INVALID_STATE);
            good += oks == 1 && states == 1;
        }
        is_int(good, ROUNDS, names[kind]);
    }
    r.stop = 1;
    pthread_barrier_wait(&r.start);
    pthread_join(t, NULL);
    pthread_barrier_destroy(&r.start);
    pthread_barrier_destroy(&r.done);
    gpumem_context_release(ctx);
}

/* ---- the last reference of a context ---- */

/* A stream, an event, an array or a pool (its destroy, or the free of its
 * last allocation after the destroy) that holds a context's last reference
 * ends the context when it goes: a failure there is that call's, named by
 * it (it was dropped unseen, or named gpumem_context_release).  The driver
 * calls of one such end are counted, then the last of them (the primary
 * context's release) is made to fail. */
typedef enum { LAST_STREAM, LAST_EVENT, LAST_ARRAY, LAST_POOL, LAST_POOL_ALLOCATION } last_kind;

static gpumem_status make_and_end(last_kind k, uint64_t fail_at, uint64_t *calls)
{
    gpumem_context *ctx = new_context();
    gpumem_stream *s = NULL;
    gpumem_event *e = NULL;
    gpumem_array *a = NULL;
    gpumem_pool *p = NULL;
    gpumem_allocation *pa = NULL;
    int64_t n = 16;
    if (k == LAST_STREAM)
        gpumem_stream_create(ctx, 0, &s);
    else if (k == LAST_EVENT)
        gpumem_event_create(ctx, 0, &e);
    else if (k == LAST_ARRAY)
        gpumem_device_array(ctx, 1, &n, NULL, gpumem_dtype_builtin(GPUMEM_UINT8), 'C', NULL, &a);
    else
        gpumem_pool_create(ctx, 0, &p);
    if (k == LAST_POOL_ALLOCATION) {
        gpumem_pool_allocate(p, 4096, NULL, &pa);
        gpumem_pool_destroy(p); /* the allocation keeps the pool, and the pool the context */
    }
    gpumem_context_release(ctx); /* the handle holds the last reference */
    uint64_t before = 0, after = 0;
    gpumem_debug_driver_calls(NULL, &before);
    if (fail_at > 0)
        gpumem_debug_fail_call(fail_at, 999); /* CUDA_ERROR_UNKNOWN */
    gpumem_status st = k == LAST_STREAM          ? gpumem_stream_destroy(s)
                       : k == LAST_EVENT         ? gpumem_event_destroy(e)
                       : k == LAST_ARRAY         ? gpumem_array_release(a)
                       : k == LAST_POOL          ? gpumem_pool_destroy(p)
                                                 : gpumem_allocation_free(pa, NULL);
    gpumem_debug_fail_call(0, 0);
    gpumem_debug_driver_calls(NULL, &after);
    *calls = after - before;
    return st;
}

static void last_references(void)
{
    static const char *const names[] = {"gpumem_stream_destroy", "gpumem_event_destroy", "gpumem_array_release",
                                        "gpumem_pool_destroy", "gpumem_allocation_free"};
    for (int k = LAST_STREAM; k <= LAST_POOL_ALLOCATION; k++) {
        uint64_t n = 0, m = 0;
        gpumem_status st = make_and_end((last_kind)k, 0, &n);
        ok(st == GPUMEM_OK && n > 0, "%s of a context's last holder ends it (%llu driver calls)", names[k],
           (unsigned long long)n);
        st = make_and_end((last_kind)k, n, &m);
        char start[64];
        snprintf(start, sizeof start, "%s: ", names[k]);
        ok(st != GPUMEM_OK && strncmp(gpumem_last_error(), start, strlen(start)) == 0 &&
               strstr(gpumem_last_error(), "cuDevicePrimaryCtxRelease") != NULL,
           "a failure of the context's end is %s's: %s", names[k], gpumem_last_error());
    }
}

/* ---- the driver ---- */

typedef void (*scenario)(void);

static void run(const void *arg, child_result *out)
{
    scenario fn;
    memcpy(&fn, arg, sizeof fn);
    fn();
    out->value[0] = tap_run;
    out->value[1] = tap_failed;
}

static void scenario_in_child(const char *name, scenario fn)
{
    child_result r;
    int rc = run_child(run, &fn, &r);
    if (rc != 0 || !r.exited || r.exit_code != 0) {
        ok(0, "%s: the scenario ran to its end", name);
        diag("the child %s with %d", r.exited ? "exited" : "died", r.exit_code);
        return;
    }
    tap_run = (int)r.value[0];
    tap_failed = (int)r.value[1];
}

int main(void)
{
    static const struct {
        const char *name;
        scenario fn;
    } all[] = {
        {"contexts", contexts},   {"arrays", arrays}, {"arrays on a pool", arrays_on_pool},
        {"quarantine", quarantine}, {"streams", streams}, {"events", events}, {"pools", pools},
        {"host pools", host_pools}, {"registrations", registrations}, {"modules", modules},
        {"device data", device_data}, {"dtypes", dtypes}, {"foreign pointers", foreign},
        {"races", races}, {"last references", last_references},
    };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        diag("%s", all[i].name);
        scenario_in_child(all[i].name, all[i].fn);
    }
    done_testing();
    return exit_status();
}
