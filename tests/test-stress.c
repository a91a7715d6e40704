/* Many threads on one context, through the public API only: array creation,
 * views and copies on several streams, pool allocation and free, memoize and
 * kernel-cache lookups, registration scopes, context retain and release,
 * shared arrays read by every thread.  Every value is checked.
 *
 * GPUMEM_STRESS_THREADS (default 16) threads run for GPUMEM_STRESS_SECONDS
 * (default 2; make check-tsan runs 10 under ThreadSanitizer).  The duration
 * only bounds the loop: nothing asserts on time. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gpumem.h>

#include "tap.h"

#define MAX_THREADS 64
#define N 96 /* elements of each thread's arrays */
#define SHARED 256

enum { OP_COPIES, OP_POOL, OP_MEMO, OP_MODULE, OP_PIN, OP_CONTEXT, OP_SHARED, OP_COUNT };
static const char *const op_names[OP_COUNT] = {"copies on streams", "pool allocate and free", "memoize",
                                               "kernel cache", "registration scopes", "context retain/release",
                                               "shared-array views"};

static gpumem_context *ctx;
static gpumem_pool *pool;
static gpumem_array *shared; /* int64 [SHARED], element i = 3 * i + 1, read by everyone */
static const gpumem_dtype *i64;
static double deadline;
static atomic_long failures;
static atomic_long done[OP_COUNT];
static char first_failure[512];
static pthread_mutex_t failure_mu = PTHREAD_MUTEX_INITIALIZER;

static const char ptx[] =
    ".version 7.0\n"
    ".target sm_50\n"
    ".address_size 64\n"
    ".visible .global .align 4 .u32 answer = 42;\n"
    ".visible .entry stress_nothing()\n"
    "{\n"
    "    ret;\n"
    "}\n";

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void fail(int thread, const char *what, gpumem_status st)
{
    if (atomic_fetch_add(&failures, 1) == 0) {
        pthread_mutex_lock(&failure_mu);
        snprintf(first_failure, sizeof first_failure, "thread %d: %s: %s (%s)", thread, what,
                 gpumem_status_string(st), st != GPUMEM_OK ? gpumem_last_error() : "wrong value");
        pthread_mutex_unlock(&failure_mu);
    }
}

#define CHECK(call, what) \
    do { \
        gpumem_status st_ = (call); \
        if (st_ != GPUMEM_OK) { \
            fail(id, what, st_); \
            goto out; \
        } \
    } while (0)
#define EXPECT(cond, what) \
    do { \
        if (!(cond)) { \
            fail(id, what, GPUMEM_OK); \
            goto out; \
        } \
    } while (0)

/* to_device on one stream, a strided view copied on a second stream into a
 * new array, copied back synchronously: host[i] = seed + i, the view is
 * every other element backwards. */
static void op_copies(int id, long seed, gpumem_stream *s1, gpumem_stream *s2)
{
    int64_t host[N], back[N / 2];
    for (int i = 0; i < N; i++)
        host[i] = seed + i;
    memset(back, 0, sizeof back);
    gpumem_array *h = NULL, *b = NULL, *d = NULL, *v = NULL, *d2 = NULL;
    gpumem_slice sl = {GPUMEM_SLICE_DEFAULT, GPUMEM_SLICE_DEFAULT, -2};
    CHECK(gpumem_host_array_wrap(host, 1, (int64_t[]){N}, NULL, i64, &h), "wrap");
    CHECK(gpumem_host_array_wrap(back, 1, (int64_t[]){N / 2}, NULL, i64, &b), "wrap");
    CHECK(gpumem_to_device(ctx, h, s1, 0, &d), "to_device on a stream");
    CHECK(gpumem_array_slice(d, &sl, 1, &v), "slice");
    CHECK(gpumem_device_array(ctx, 1, (int64_t[]){N / 2}, NULL, i64, 'C', s2, &d2), "device_array");
    CHECK(gpumem_stream_synchronize(s1), "synchronize");
    CHECK(gpumem_array_copy(d2, v, s2), "copy on a second stream");
    CHECK(gpumem_stream_synchronize(s2), "synchronize");
    CHECK(gpumem_copy_to_host(d2, b, NULL), "copy_to_host");
    for (int i = 0; i < N / 2; i++)
        EXPECT(back[i] == seed + (N - 1 - 2 * i), "copied values");
    atomic_fetch_add(&done[OP_COPIES], 1);
out:
    gpumem_array_release(d2);
    gpumem_array_release(v);
    gpumem_array_release(d);
    gpumem_array_release(b);
    gpumem_array_release(h);
}

static void op_pool(int id, long seed)
{
    gpumem_allocation *a[4] = {NULL};
    int64_t put = seed, got = 0;
    for (int i = 0; i < 4; i++) {
        size_t bytes = 64u << ((seed + i) % 8);
        size_t size = 0;
        CHECK(gpumem_pool_allocate(pool, bytes, NULL, &a[i]), "pool_allocate");
        CHECK(gpumem_allocation_size(a[i], &size), "allocation_size");
        EXPECT(size == bytes, "allocation size");
    }
    /* write into one block through a foreign array over it and read it back */
    uint64_t p = 0;
    CHECK(gpumem_allocation_pointer(a[0], &p), "allocation_pointer");
    gpumem_cuda_array_interface desc = {.size = sizeof desc, .version = 3, .ndim = 1, .shape = {1},
                                        .typestr = "<i8", .data = p};
    gpumem_array *f = NULL;
    CHECK(gpumem_as_cuda_array(ctx, &desc, 0, NULL, NULL, &f), "as_cuda_array");
    gpumem_status st = gpumem_array_set_item(f, (int64_t[]){0}, &put, NULL);
    if (st == GPUMEM_OK)
        st = gpumem_array_get_item(f, (int64_t[]){0}, &got, NULL);
    gpumem_array_release(f);
    CHECK(st, "item through a pooled block");
    EXPECT(got == put, "pooled block value");
    atomic_fetch_add(&done[OP_POOL], 1);
out:
    for (int i = 0; i < 4; i++)
        if (a[i] != NULL)
            gpumem_allocation_free(a[i], NULL);
}

static gpumem_status make_value(gpumem_context *c, const void *key, size_t key_size, void *user, void **value)
{
    (void)c, (void)key_size, (void)user;
    long *v = malloc(sizeof *v);
    if (v == NULL)
        return GPUMEM_ERROR_HOST_OUT_OF_MEMORY;
    *v = *(const long *)key * 10 + 7;
    *value = v;
    return GPUMEM_OK;
}

static void free_value(void *value, void *user)
{
    (void)user;
    free(value);
}

static void op_memo(int id, long seed)
{
    for (long k = 0; k < 8; k++) {
        long key = (seed + k) % 16;
        void *value = NULL;
        CHECK(gpumem_memoize(ctx, &key, sizeof key, make_value, free_value, NULL, &value), "memoize");
        EXPECT(value != NULL && *(long *)value == key * 10 + 7, "memoized value");
    }
    atomic_fetch_add(&done[OP_MEMO], 1);
out:;
}

static void op_module(int id)
{
    gpumem_module *m = NULL;
    gpumem_function *fn = NULL;
    const char *name = NULL;
    uint64_t p = 0;
    size_t bytes = 0;
    uint32_t answer = 0;
    gpumem_array *g = NULL, *h = NULL;
    CHECK(gpumem_module_load(ctx, ptx, sizeof ptx, &m), "module_load");
    CHECK(gpumem_module_get_function(m, "stress_nothing", &fn), "get_function");
    CHECK(gpumem_function_name(fn, &name), "function_name");
    EXPECT(strcmp(name, "stress_nothing") == 0, "function name");
    CHECK(gpumem_module_get_global(m, "answer", &p, &bytes), "get_global");
    EXPECT(bytes == 4, "global size");
    gpumem_cuda_array_interface desc = {.size = sizeof desc, .version = 3, .ndim = 1, .shape = {1},
                                        .typestr = "<u4", .data = p};
    CHECK(gpumem_as_cuda_array(ctx, &desc, 0, NULL, NULL, &g), "as_cuda_array");
    CHECK(gpumem_host_array_wrap(&answer, 1, (int64_t[]){1}, NULL, gpumem_dtype_builtin(GPUMEM_UINT32), &h),
          "wrap");
    CHECK(gpumem_copy_to_host(g, h, NULL), "read the global");
    EXPECT(answer == 42, "global value");
    atomic_fetch_add(&done[OP_MODULE], 1);
out:
    gpumem_array_release(h);
    gpumem_array_release(g);
    if (m != NULL)
        gpumem_module_release(m);
}

static void op_pin(int id, long seed, int64_t *buf)
{
    gpumem_array *w = NULL, *d = NULL;
    gpumem_registration *reg = NULL;
    int pinned = 0;
    for (int i = 0; i < N; i++)
        buf[i] = seed - i;
    CHECK(gpumem_host_array_wrap(buf, 1, (int64_t[]){N}, NULL, i64, &w), "wrap");
    CHECK(gpumem_pinned(ctx, &w, 1, &reg), "pinned");
    CHECK(gpumem_host_is_pinned(buf, N * sizeof *buf, &pinned), "host_is_pinned");
    EXPECT(pinned == 1, "pinned while the scope lasts");
    CHECK(gpumem_to_device(ctx, w, NULL, 0, &d), "to_device from pinned");
    int64_t last = 0;
    CHECK(gpumem_array_get_item(d, (int64_t[]){N - 1}, &last, NULL), "get_item");
    EXPECT(last == seed - (N - 1), "uploaded value");
    atomic_fetch_add(&done[OP_PIN], 1);
out:
    gpumem_array_release(d);
    if (reg != NULL)
        gpumem_unpinned(&reg);
    gpumem_array_release(w);
}

static void op_context(int id)
{
    gpumem_context *c = NULL;
    int dev = -1, refs = 0;
    CHECK(gpumem_context_retain(ctx), "context_retain");
    CHECK(gpumem_context_refcount(ctx, &refs), "context_refcount");
    gpumem_context_release(ctx);
    EXPECT(refs >= 2, "a retained context has two references or more");
    CHECK(gpumem_context_create(0, &c), "context_create");
    CHECK(gpumem_context_get_device(c, &dev), "context_get_device");
    EXPECT(dev == 0, "device 0");
    atomic_fetch_add(&done[OP_CONTEXT], 1);
out:
    if (c != NULL)
        gpumem_context_release(c);
}

static void op_shared(int id, long seed)
{
    int64_t start = seed % (SHARED / 2), step = 1 + seed % 5;
    gpumem_slice sl = {start, GPUMEM_SLICE_DEFAULT, step};
    gpumem_array *v = NULL, *t = NULL;
    CHECK(gpumem_array_slice(shared, &sl, 1, &v), "slice of the shared array");
    CHECK(gpumem_array_transpose(v, NULL, &t), "transpose");
    int64_t n = 0, x = 0;
    CHECK(gpumem_array_size(t, &n), "size");
    EXPECT(n == (SHARED - start + step - 1) / step, "view size");
    CHECK(gpumem_array_get_item(t, (int64_t[]){n - 1}, &x, NULL), "get_item");
    EXPECT(x == 3 * (start + (n - 1) * step) + 1, "shared value");
    atomic_fetch_add(&done[OP_SHARED], 1);
out:
    gpumem_array_release(t);
    gpumem_array_release(v);
}

static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    gpumem_stream *s1 = NULL, *s2 = NULL;
    int64_t *pin_buf = calloc(N, sizeof *pin_buf);
    if (pin_buf == NULL || gpumem_stream_create(ctx, 0, &s1) != GPUMEM_OK ||
        gpumem_stream_create(ctx, 0, &s2) != GPUMEM_OK) {
        fail(id, "setup", gpumem_last_status());
        goto out;
    }
    for (long it = 0; now() < deadline || it < OP_COUNT; it++) {
        long seed = id * 100000L + it;
        switch ((it + id) % OP_COUNT) {
        case OP_COPIES: op_copies(id, seed, s1, s2); break;
        case OP_POOL: op_pool(id, seed); break;
        case OP_MEMO: op_memo(id, seed); break;
        case OP_MODULE: op_module(id); break;
        case OP_PIN: op_pin(id, seed, pin_buf); break;
        case OP_CONTEXT: op_context(id); break;
        default: op_shared(id, seed); break;
        }
    }
out:
    if (s2 != NULL)
        gpumem_stream_destroy(s2);
    if (s1 != NULL)
        gpumem_stream_destroy(s1);
    free(pin_buf);
    return NULL;
}

static long env_long(const char *name, long dflt, long lo, long hi)
{
    const char *s = getenv(name);
    if (s == NULL || *s == '\0')
        return dflt;
    char *end;
    long v = strtol(s, &end, 10);
    if (*end != '\0' || v < lo || v > hi)
        bail_out("%s='%s': expected %ld to %ld", name, s, lo, hi);
    return v;
}

int main(void)
{
    long nthreads = env_long("GPUMEM_STRESS_THREADS", 16, 1, MAX_THREADS);
    long seconds = env_long("GPUMEM_STRESS_SECONDS", 2, 0, 3600);
    if (test_on_sim())
        setenv("GPUMEM_SIM_STREAM_DELAY_US", "200", 1);
    if (gpumem_context_create_default(&ctx) != GPUMEM_OK)
        bail_out("no context: %s", gpumem_last_error());
    plan(5 + OP_COUNT);
    i64 = gpumem_dtype_builtin(GPUMEM_INT64);
    is_int(gpumem_pool_create(ctx, 0, &pool), GPUMEM_OK, "a shared device pool");
    int64_t init[SHARED];
    for (int i = 0; i < SHARED; i++)
        init[i] = 3 * i + 1;
    gpumem_array *h = NULL;
    gpumem_host_array_wrap(init, 1, (int64_t[]){SHARED}, NULL, i64, &h);
    is_int(gpumem_to_device(ctx, h, NULL, 0, &shared), GPUMEM_OK, "a shared device array");
    gpumem_array_release(h);

    deadline = now() + (double)seconds;
    pthread_t threads[MAX_THREADS];
    for (long i = 0; i < nthreads; i++)
        if (pthread_create(&threads[i], NULL, worker, (void *)(intptr_t)i) != 0)
            bail_out("pthread_create failed");
    for (long i = 0; i < nthreads; i++)
        pthread_join(threads[i], NULL);

    is_int(atomic_load(&failures), 0, "no call failed and every value was right");
    if (atomic_load(&failures) != 0)
        diag("first failure: %s", first_failure);
    for (int op = 0; op < OP_COUNT; op++)
        ok(atomic_load(&done[op]) >= nthreads / OP_COUNT, "%s: %ld rounds in %ld threads", op_names[op],
           atomic_load(&done[op]), nthreads);
    gpumem_array_release(shared);
    is_int(gpumem_pool_destroy(pool), GPUMEM_OK, "the pool is destroyed with nothing outstanding");
    gpumem_clear_context_caches();
    is_int(gpumem_context_release(ctx), GPUMEM_OK, "the context is released");
    return exit_status();
}
