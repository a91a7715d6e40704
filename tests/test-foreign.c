/*
 * test-foreign.c - the experimental tier for foreign runtimes
 * (gpumem/experimental/foreign.h): allocation and free by pointer on raw
 * CUstreams, bad input, double frees and pointers of other allocators,
 * stream-ordered reuse across foreign streams, one pool shared by the
 * runtimes, the context's pool, page-locked, mapped and managed memory,
 * IPC handles, PyTorch's two functions, the runtimes' counters, tracing,
 * and threads.
 *
 * An internal test: it holds streams back with a host function (the
 * driver table's launch_host_func), as test-pool does, so that pending
 * work is deterministic on the simulator and on a GPU.  First, before the
 * process touches the library, a fault walk: children run one scenario
 * of the tier with GPUMEM_SIM_FAIL=k for every k until the k-th driver
 * call is past the scenario's last (make check-faults' method, on this
 * tier alone, whose process-wide context the main walk's leak rules
 * cannot hold to).
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "child.h"
#include "context.h"
#include "driver.h"
#include "gpumem.h"
#define GPUMEM_EXPERIMENTAL
#include "gpumem/experimental/foreign.h"
#include "stream-gate.h"
#include "tap.h"

static gpumem_context *fctx; /* the context of device 0's foreign allocations */

/* Queues work on raw stream h that waits for the gate (stream-gate.h). */
static void hold_stream(void *h)
{
    hold_stream_of(fctx, h);
}

static void release_stream(void *h)
{
    release_stream_of(fctx, h);
}

static struct gpumem_foreign_stats stats_of(const char *rt)
{
    struct gpumem_foreign_stats s = {.size = sizeof s};
    gpumem_foreign_stats(rt, &s);
    return s;
}

/* ---- the fault walk ------------------------------------------------------------------- */

/* Records a failed call whose message does not begin with its name. */
static void misnamed(child_result *out, const char *name, gpumem_status st)
{
    if (st == GPUMEM_OK || strncmp(gpumem_last_error(), name, strlen(name)) == 0)
        return;
    if (out->value[1]++ == 0)
        snprintf(out->text, sizeof out->text, "%s returned %s: %s", name, gpumem_status_string(st),
                 gpumem_last_error());
}
#define CALL(out, name, expr) misnamed((out), #name, name expr)

/* Counts a pointer that is still in the table after its free ran. */
static void still_live(child_result *out, const void *p, const char *what)
{
    if (p != NULL && gpumem_foreign_lookup(p, NULL, NULL, NULL, NULL) == GPUMEM_OK && out->value[2]++ == 0)
        snprintf(out->note, sizeof out->note, "%s is still live after its free", what);
}

static void fault_scenario(const void *arg, child_result *out)
{
    char v[32];
    snprintf(v, sizeof v, "%d", *(const int *)arg);
    setenv("GPUMEM_SIM_FAIL", v, 1);
    gpumem_context *ctx = NULL;
    gpumem_stream *S = NULL;
    void *sh = NULL, *p = NULL, *q = NULL, *h = NULL, *m = NULL;
    unsigned char ipc[GPUMEM_FOREIGN_IPC_HANDLE_SIZE];
    size_t off = 0;
    uint64_t dp = 0;
    CALL(out, gpumem_foreign_context, (0, &ctx));
    if (ctx != NULL && gpumem_stream_create(ctx, GPUMEM_STREAM_NON_BLOCKING, &S) == GPUMEM_OK)
        gpumem_foreign_stream_handle(S, &sh);
    CALL(out, gpumem_foreign_alloc, ("c", 0, 4096, NULL, &p));
    CALL(out, gpumem_foreign_alloc, ("c", 0, 5000, sh, &q));
    if (q != NULL) {
        CALL(out, gpumem_foreign_ipc_handle, (q, ipc, &off));
        CALL(out, gpumem_foreign_ipc_handle, ((char *)q + 256, ipc, &off)); /* found by the driver */
    }
    void *pt = NULL;
    CALL(out, gpumem_foreign_alloc, ("c", 0, 3000, (void *)(uintptr_t)2, &pt)); /* the per-thread stream */
    CALL(out, gpumem_foreign_free, (pt, (void *)(uintptr_t)2));
    still_live(out, pt, "the allocation on the per-thread stream");
    CALL(out, gpumem_foreign_free, (q, sh));
    CALL(out, gpumem_foreign_free, (p, NULL));
    CALL(out, gpumem_foreign_alloc, ("c", 0, 4096, sh, &p)); /* from the held block, perhaps */
    CALL(out, gpumem_foreign_free, (p, NULL));
    CALL(out, gpumem_foreign_host_alloc, ("c", 0, 1000, GPUMEM_FOREIGN_HOST_MAPPED, &h));
    if (h != NULL)
        CALL(out, gpumem_foreign_device_pointer, (h, &dp));
    CALL(out, gpumem_foreign_host_free, (h));
    CALL(out, gpumem_foreign_managed_alloc, ("c", 0, 2048, 1, &m));
    CALL(out, gpumem_foreign_free, (m, NULL));
    CALL(out, gpumem_foreign_release_held, (0));
    still_live(out, p, "the device allocation");
    still_live(out, q, "the allocation on a foreign stream");
    still_live(out, h, "the mapped allocation");
    still_live(out, m, "the managed allocation");
    if (S != NULL)
        gpumem_stream_destroy(S);
    uint64_t calls = 0;
    gm_drv_fail_at = 0; /* counting the calls is no driver call, but be sure nothing fails now */
    gpumem_debug_driver_calls(NULL, &calls);
    out->value[0] = (long)calls;
}

static void test_faults(void)
{
    int k = 1, points = 0, crashed = 0, bad = 0, leaked = 0;
    child_result r;
    char first[1200] = "";
    for (; k <= 2000; k++) {
        if (run_child(fault_scenario, &k, &r) != 0 || !r.exited || r.exit_code != 0) {
            if (crashed++ == 0)
                snprintf(first, sizeof first, "k=%d: the child ended with %d", k, r.exit_code);
            continue;
        }
        if (r.value[1] && bad++ == 0)
            snprintf(first, sizeof first, "k=%d: %s", k, r.text);
        if (r.value[2] && leaked++ == 0)
            snprintf(first, sizeof first, "k=%d: %s", k, r.note);
        if (r.value[0] < k)
            break;
        points++;
    }
    ok(crashed == 0, "fault walk: no run crashed (%d injection points)", points);
    ok(bad == 0, "fault walk: every failure's message names the call that failed%s%s", *first ? ": " : "", first);
    ok(leaked == 0, "fault walk: every free ran, whatever failed");
    ok(points > 10 && k <= 2000, "fault walk: it reached past the scenario's last driver call (%d)", points);
}

static void test_bad_input(void)
{
    void *p = (void *)0x1;
    is_int(gpumem_foreign_alloc("t", 0, 64, NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "NULL ptr");
    like(gpumem_last_error(), "'ptr'", "the message names the argument");
    is_int(gpumem_foreign_alloc("", 0, 64, NULL, &p), GPUMEM_ERROR_INVALID_VALUE, "an empty runtime name");
    is_int(gpumem_foreign_alloc("Torch", 0, 64, NULL, &p), GPUMEM_ERROR_INVALID_VALUE, "an upper-case runtime name");
    like(gpumem_last_error(), "'Torch'", "the message quotes the name");
    is_int(gpumem_foreign_alloc("a234567890123456", 0, 64, NULL, &p), GPUMEM_ERROR_INVALID_VALUE,
           "a runtime name of 16 characters");
    is_int(gpumem_foreign_alloc("t", -1, 64, NULL, &p), GPUMEM_ERROR_INVALID_DEVICE, "device -1");
    is_int(gpumem_foreign_alloc("t", 64, 64, NULL, &p), GPUMEM_ERROR_INVALID_DEVICE, "device 64");
    int n = 0;
    gpumem_device_count(&n);
    is_int(gpumem_foreign_alloc("t", n, 64, NULL, &p), GPUMEM_ERROR_INVALID_DEVICE, "a device that does not exist");
    is_int(gpumem_foreign_alloc("t", 0, 64, (void *)(uintptr_t)5, &p), GPUMEM_ERROR_INVALID_VALUE,
           "stream 5 (the null page)");
    like(gpumem_last_error(), "not a stream", "the message says why");
    is_int(gpumem_foreign_alloc("t", 0, 64, (void *)(uintptr_t)-64, &p), GPUMEM_ERROR_INVALID_VALUE,
           "a negative stream value");
    static char not_a_stream[64];
    is_int(gpumem_foreign_alloc("t", 0, 64, not_a_stream, &p), GPUMEM_ERROR_INVALID_VALUE,
           "an address that is no stream");
    like(gpumem_last_error(), "cuStreamQuery", "the driver was asked");
    ok(p == (void *)0x1, "ptr unchanged by the failures");
    struct gpumem_foreign_stats s = stats_of("t");
    is_int(s.allocations, 0, "no allocation was counted");
    is_int(gpumem_foreign_alloc("t", 0, 0, NULL, &p), GPUMEM_OK, "size 0");
    ok(p == NULL, "gives NULL");
    is_int(gpumem_foreign_free(NULL, NULL), GPUMEM_OK, "freeing NULL is a no-op");
    is_int(gpumem_foreign_host_free(NULL), GPUMEM_OK, "so is freeing NULL host memory");
    is_int(gpumem_foreign_host_alloc("t", 0, 64, 0x8, &p), GPUMEM_ERROR_INVALID_VALUE, "unknown host flags");
    /* The three allocation entry points start alike (one helper): a NULL ptr
     * first, named with the call; the runtime, then the device; size 0. */
    is_int(gpumem_foreign_host_alloc("t", 0, 64, 0x8, NULL), GPUMEM_ERROR_NULL_ARGUMENT,
           "host: a NULL ptr is named before unknown flags");
    like(gpumem_last_error(), "gpumem_foreign_host_alloc: argument 'ptr' is NULL", "named with the call");
    is_int(gpumem_foreign_managed_alloc("t", 0, 64, 1, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "managed: NULL ptr");
    like(gpumem_last_error(), "gpumem_foreign_managed_alloc: argument 'ptr' is NULL", "named with the call");
    is_int(gpumem_foreign_alloc("t", 0, 64, NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "device: NULL ptr");
    like(gpumem_last_error(), "gpumem_foreign_alloc: argument 'ptr' is NULL", "named with the call");
    p = (void *)0x1;
    is_int(gpumem_foreign_host_alloc("Bad", 64, 64, 0, &p), GPUMEM_ERROR_INVALID_VALUE, "host: the name first");
    is_int(gpumem_foreign_managed_alloc("t", 64, 64, 1, &p), GPUMEM_ERROR_INVALID_DEVICE, "managed: device 64");
    like(gpumem_last_error(), "gpumem_foreign_managed_alloc: device 64", "named with the call");
    is_int(gpumem_foreign_host_alloc("t", -1, 0, 0, &p), GPUMEM_ERROR_INVALID_DEVICE, "host: a bad device, size 0");
    ok(p == (void *)0x1, "ptr unchanged by the failures");
    is_int(gpumem_foreign_host_alloc("t", 0, 0, 0, &p), GPUMEM_OK, "host: size 0");
    ok(p == NULL, "gives NULL");
    p = (void *)0x1;
    is_int(gpumem_foreign_managed_alloc("t", 0, 0, 1, &p), GPUMEM_OK, "managed: size 0");
    ok(p == NULL, "gives NULL");
    is_int(stats_of("t").allocations, 0, "none of them counted an allocation");
    is_int(gpumem_foreign_stats(NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "stats: NULL");
    struct gpumem_foreign_stats tiny = {.size = 4};
    is_int(gpumem_foreign_stats("t", &tiny), GPUMEM_ERROR_INVALID_VALUE, "stats: size too small");
    const char *name = NULL;
    is_int(gpumem_foreign_runtime(-1, &name), GPUMEM_ERROR_INVALID_VALUE, "runtime -1");
    is_int(gpumem_foreign_release_held(-2), GPUMEM_ERROR_INVALID_DEVICE, "release_held(-2)");
    is_int(gpumem_foreign_set_context(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "set_context(NULL)");
}

static void test_alloc_free(void)
{
    void *p = NULL;
    is_int(gpumem_foreign_alloc("numba", 0, 1000, NULL, &p), GPUMEM_OK, "allocate 1000 bytes for numba");
    ok(p != NULL, "a device pointer");
    int device = -1;
    void *base = NULL;
    size_t size = 0;
    gpumem_memory_kind kind = GPUMEM_MEMORY_HOST;
    is_int(gpumem_foreign_lookup(p, &device, &base, &size, &kind), GPUMEM_OK, "look it up");
    ok(device == 0 && base == p && size == 1000 && kind == GPUMEM_MEMORY_DEVICE,
       "device 0, its start, 1000 bytes, device memory");
    int is_dev = 0;
    gpumem_pointer_info info;
    memset(&info, 0, sizeof info);
    info.size = sizeof info;
    is_int(gpumem_is_cuda_array((uint64_t)(uintptr_t)p, &is_dev, &info), GPUMEM_OK, "ask the driver about it");
    ok(info.kind == GPUMEM_POINTER_DEVICE, "the driver knows it as device memory");
    struct gpumem_foreign_stats s = stats_of("numba");
    ok(s.device_bytes == 1000 && s.device_count == 1 && s.allocations == 1 && s.peak_device_bytes == 1000,
       "numba's counters: 1000 bytes in 1 allocation");
    struct gpumem_memory_report r = {.size = sizeof r};
    gpumem_memory_report(fctx, 0, &r);
    ok(r.device.bytes >= 1000 && r.device.count >= 1, "the memory report of the foreign context counts it");
    is_int(gpumem_foreign_free(p, NULL), GPUMEM_OK, "free it");
    s = stats_of("numba");
    ok(s.device_bytes == 0 && s.device_count == 0 && s.frees == 1, "numba's counters: nothing live, 1 free");
    is_int(gpumem_foreign_lookup(p, NULL, NULL, NULL, NULL), GPUMEM_ERROR_INVALID_VALUE, "a freed pointer is unknown");

    /* Double free, and pointers of other allocators. */
    is_int(gpumem_foreign_free(p, NULL), GPUMEM_ERROR_INVALID_VALUE, "a second free");
    like(gpumem_last_error(), "freed already", "the message says it may be freed already");
    s = stats_of("numba");
    is_int(s.frees, 1, "the second free counted nothing");
    gpumem_pool *pool = NULL;
    gpumem_allocation *a = NULL;
    uint64_t pa = 0;
    gpumem_pool_create(fctx, 0, &pool);
    gpumem_pool_allocate(pool, 4096, NULL, &a);
    gpumem_allocation_pointer(a, &pa);
    is_int(gpumem_foreign_free((void *)(uintptr_t)pa, NULL), GPUMEM_ERROR_INVALID_VALUE,
           "a block of another pool is not this tier's");
    like(gpumem_last_error(), "another allocator", "the message says so");
    is_int(gpumem_allocation_free(a, NULL), GPUMEM_OK, "its own free still works: nothing was touched");
    gpumem_pool_destroy(pool);
    char local[16];
    is_int(gpumem_foreign_free(local, NULL), GPUMEM_ERROR_INVALID_VALUE, "a stack address");
    is_int(gpumem_foreign_host_free(local), GPUMEM_ERROR_INVALID_VALUE, "a stack address as host memory");

    /* A bad stream at free time frees nothing. */
    is_int(gpumem_foreign_alloc("numba", 0, 256, NULL, &p), GPUMEM_OK, "allocate again");
    is_int(gpumem_foreign_free(p, (void *)(uintptr_t)7), GPUMEM_ERROR_INVALID_VALUE, "free with stream 7");
    is_int(gpumem_foreign_lookup(p, NULL, NULL, NULL, NULL), GPUMEM_OK, "the allocation is still live");
    is_int(gpumem_foreign_free(p, NULL), GPUMEM_OK, "then a good free");
}

static void test_streams(void)
{
    gpumem_stream *S = NULL, *T = NULL;
    void *s = NULL, *t = NULL;
    gpumem_stream_create(fctx, GPUMEM_STREAM_NON_BLOCKING, &S);
    gpumem_stream_create(fctx, GPUMEM_STREAM_NON_BLOCKING, &T);
    is_int(gpumem_foreign_stream_handle(S, &s), GPUMEM_OK, "the CUstream of a library stream");
    gpumem_foreign_stream_handle(T, &t);
    ok(s != NULL && t != NULL && s != t, "two distinct handles");
    gpumem_stream *dflt = NULL;
    void *d = (void *)0x1;
    gpumem_stream_default(fctx, &dflt);
    gpumem_foreign_stream_handle(dflt, &d);
    ok(d == NULL, "the default stream's handle is NULL");
    enum { N = 8192 };

    void *x = NULL, *y = NULL, *x2 = NULL, *w = NULL, *u = NULL;
    is_int(gpumem_foreign_alloc("cupy", 0, N, s, &x), GPUMEM_OK, "allocate X on foreign stream S");
    hold_stream(s);
    is_int(GM_DRV(memset, fctx->dctx, (uint64_t)(uintptr_t)x, 0x5A, 1, N, (gm_dstream *)s, 1), 0,
           "queue a memset of X on S, held back");
    is_int(gpumem_foreign_free(x, s), GPUMEM_OK, "free X on S with the work pending");
    is_int(gpumem_foreign_alloc("torch", 0, N, t, &y), GPUMEM_OK, "allocate the same size on stream T");
    ok(y != x, "T does not get X while S's work is pending");
    is_int(gpumem_foreign_alloc("numba", 0, N, s, &x2), GPUMEM_OK, "allocate on S");
    ok(x2 == x, "S gets X at once: its later work is ordered after the memset");
    release_stream(s);
    unsigned char out[N];
    GM_DRV(memcpy, fctx->dctx, (uint64_t)(uintptr_t)out, (uint64_t)(uintptr_t)x, N, NULL, 0);
    int all = 1;
    for (int i = 0; i < N; i++)
        all &= out[i] == 0x5A;
    ok(all, "the memset landed in X");

    hold_stream(s);
    gpumem_foreign_free(x2, s);
    gpumem_foreign_alloc("torch", 0, N, t, &w);
    ok(w != x, "while S is held back, T still gets another block");
    release_stream(s);
    gpumem_foreign_alloc("torch", 0, N, t, &u);
    ok(u == x, "once S's event has completed, T gets X");
    gpumem_foreign_free(u, t);
    gpumem_foreign_free(w, t);
    gpumem_foreign_free(y, t);

    /* The legacy default stream: 0 and 1 are the same stream. */
    void *a = NULL, *b = NULL;
    gpumem_foreign_alloc("numba", 0, 3 * N, NULL, &a);
    hold_stream(NULL);
    gpumem_foreign_free(a, NULL);
    is_int(gpumem_foreign_alloc("cupy", 0, 3 * N, (void *)(uintptr_t)1, &b), GPUMEM_OK,
           "allocate on CU_STREAM_LEGACY while the default stream is held");
    ok(b == a, "it is the default stream: the block is reused at once");
    release_stream(NULL);
    gpumem_foreign_free(b, (void *)(uintptr_t)1);

    /* GPUMEM_FOREIGN_STREAM_LEGACY_ONLY: the free records no event; the
     * legacy stream reuses the block at once, another stream only once the
     * legacy stream's work (queued before the free) is done. */
    is_int(gpumem_foreign_release_held(0), GPUMEM_OK, "the pools hold nothing (so no other block is at hand)");
    void *c = NULL, *c2 = NULL, *z = NULL, *z2 = NULL, *z3 = NULL;
    uint64_t rec0 = 0, rec1 = 0;
    is_int(gpumem_foreign_alloc("cupy", 0, N, GPUMEM_FOREIGN_STREAM_LEGACY_ONLY, &c), GPUMEM_OK,
           "allocate on GPUMEM_FOREIGN_STREAM_LEGACY_ONLY");
    hold_stream(NULL);
    is_int(GM_DRV(memset, fctx->dctx, (uint64_t)(uintptr_t)c, 0x3C, 1, N, NULL, 1), 0,
           "queue a memset of it on the legacy stream, held back");
    gpumem_debug_driver_calls("cuEventRecord", &rec0);
    is_int(gpumem_foreign_free(c, GPUMEM_FOREIGN_STREAM_LEGACY_ONLY), GPUMEM_OK, "free it, legacy only, work pending");
    gpumem_debug_driver_calls("cuEventRecord", &rec1);
    is_int((long long)(rec1 - rec0), 0, "the free recorded no event");
    is_int(gpumem_foreign_alloc("torch", 0, N, t, &z), GPUMEM_OK, "allocate the same size on non-blocking T");
    ok(z != NULL && z != c, "T does not get the block while the legacy stream's work is pending");
    is_int(gpumem_foreign_alloc("numba", 0, N, NULL, &c2), GPUMEM_OK, "allocate on the legacy stream");
    ok(c2 == c, "the legacy stream gets it at once: its later work is ordered after the memset");
    is_int(gpumem_foreign_free(c2, GPUMEM_FOREIGN_STREAM_LEGACY_ONLY), GPUMEM_OK, "free it again, legacy only");
    release_stream(NULL);
    GM_DRV(memcpy, fctx->dctx, (uint64_t)(uintptr_t)out, (uint64_t)(uintptr_t)c, N, NULL, 0);
    all = 1;
    for (int i = 0; i < N; i++)
        all &= out[i] == 0x3C;
    ok(all, "the memset landed in it");
    /* The first allocation on T records the block's event now (it may not
     * have completed yet); once the legacy stream is idle it has. */
    is_int(gpumem_foreign_alloc("torch", 0, N, t, &z2), GPUMEM_OK, "allocate on T, the legacy stream idle");
    GM_DRV(stream_synchronize, fctx->dctx, NULL);
    if (z2 != c)
        is_int(gpumem_foreign_alloc("torch", 0, N, t, &z3), GPUMEM_OK, "allocate on T again");
    ok(z2 == c || z3 == c, "T gets the block once the legacy stream's work is done");
    gpumem_foreign_free(z, t);
    gpumem_foreign_free(z2, t);
    gpumem_foreign_free(z3, t);
    is_int(gpumem_foreign_alloc("cupy", 0, N, (void *)(uintptr_t)4, &c), GPUMEM_ERROR_INVALID_VALUE,
           "stream 4 is no stream");
    gpumem_stream_destroy(S);
    gpumem_stream_destroy(T);
}

/* CU_STREAM_PER_THREAD (2): every thread names its own per-thread default
 * stream 2.  A block that thread A freed on its per-thread stream, with A's
 * work still queued, must not go to thread B's per-thread stream at once
 * (B's work is not ordered after A's): B takes it only once the event of
 * A's free has completed.  (The simulator runs stream 2 on the legacy
 * stream: A's held work holds it back.) */
#define PT ((void *)(uintptr_t)2)
enum { PT_SIZE = 40960 };

struct pt_arg {
    void *block;       /* A: the block it freed; B: the block it got */
    uint64_t records;  /* A: cuEventRecord calls its free made */
    gpumem_status st;
};

static void *pt_thread_a(void *arg)
{
    struct pt_arg *a = arg;
    uint64_t r0 = 0, r1 = 0;
    a->st = gpumem_foreign_alloc("numba", 0, PT_SIZE, PT, &a->block);
    if (a->st != GPUMEM_OK)
        return NULL;
    hold_stream(PT);
    GM_DRV(memset, fctx->dctx, (uint64_t)(uintptr_t)a->block, 0x6B, 1, PT_SIZE, (gm_dstream *)PT, 1);
    gpumem_debug_driver_calls("cuEventRecord", &r0);
    a->st = gpumem_foreign_free(a->block, PT);
    gpumem_debug_driver_calls("cuEventRecord", &r1);
    a->records = r1 - r0;
    return NULL; /* the thread exits: its cached blocks go to the pool's store */
}

static void *pt_thread_b(void *arg)
{
    struct pt_arg *b = arg;
    b->st = gpumem_foreign_alloc("numba", 0, PT_SIZE, PT, &b->block);
    return NULL;
}

static void test_per_thread_stream(void)
{
    is_int(gpumem_foreign_release_held(0), GPUMEM_OK, "the pools hold nothing");
    struct pt_arg a = {0}, b = {0}, c = {0};
    pthread_t th;
    pthread_create(&th, NULL, pt_thread_a, &a);
    pthread_join(th, NULL);
    is_int(a.st, GPUMEM_OK, "thread A allocates and frees a block on its per-thread stream, its memset held back");
    ok(a.records >= 1, "A's free recorded an event (%llu)", (unsigned long long)a.records);
    pthread_create(&th, NULL, pt_thread_b, &b);
    pthread_join(th, NULL);
    is_int(b.st, GPUMEM_OK, "thread B allocates the same size on its per-thread stream");
    ok(b.block != NULL && b.block != a.block,
       "B does not get A's block while A's work is pending (each thread's stream 2 is its own)");
    atomic_store(&stream_gate, 1); /* A's stream is A's own on a GPU: wait for the whole context */
    GM_DRV(ctx_synchronize, fctx->dctx);
    pthread_create(&th, NULL, pt_thread_b, &c);
    pthread_join(th, NULL);
    is_int(c.st, GPUMEM_OK, "thread C allocates the same size on its per-thread stream");
    ok(c.block == a.block, "once A's event has completed, C gets A's block");
    unsigned char out[64];
    GM_DRV(memcpy, fctx->dctx, (uint64_t)(uintptr_t)out, (uint64_t)(uintptr_t)c.block, sizeof out, NULL, 0);
    ok(out[0] == 0x6B && out[63] == 0x6B, "A's memset landed before C got the block");
    gpumem_foreign_free(b.block, PT);
    gpumem_foreign_free(c.block, PT);
}

static void test_shared_pool(void)
{
    enum { N = 40000 };
    void *a = NULL, *b = NULL, *c = NULL;
    gpumem_foreign_release_held(0);
    gpumem_foreign_alloc("numba", 0, N, NULL, &a);
    gpumem_foreign_free(a, NULL);
    gpumem_foreign_alloc("cupy", 0, N, NULL, &b);
    ok(b == a, "a block numba freed is reused by CuPy");
    gpumem_foreign_free(b, NULL);
    c = gpumem_torch_alloc(N, 0, NULL);
    ok(c == a, "and then by PyTorch (gpumem_torch_alloc)");
    gpumem_torch_free(c, N, 0, NULL);
    is_int(gpumem_foreign_lookup(c, NULL, NULL, NULL, NULL), GPUMEM_ERROR_INVALID_VALUE,
           "gpumem_torch_free freed it");
    gpumem_torch_free(c, N, 0, NULL);
    like(gpumem_last_error(), "freed already", "a second gpumem_torch_free leaves its message and frees nothing");
    /* PyTorch's frees on the legacy stream record no event: the legacy
     * stream reuses the block at once, another stream only after the
     * legacy stream's work. */
    gpumem_foreign_release_held(0);
    void *d = gpumem_torch_alloc(N, 0, NULL), *d2 = NULL, *e = NULL;
    gpumem_stream *T = NULL;
    void *t = NULL;
    gpumem_stream_create(fctx, GPUMEM_STREAM_NON_BLOCKING, &T);
    gpumem_foreign_stream_handle(T, &t);
    uint64_t rec0 = 0, rec1 = 0;
    hold_stream(NULL);
    GM_DRV(memset, fctx->dctx, (uint64_t)(uintptr_t)d, 0x2D, 1, N, NULL, 1);
    gpumem_debug_driver_calls("cuEventRecord", &rec0);
    gpumem_torch_free(d, N, 0, NULL);
    gpumem_debug_driver_calls("cuEventRecord", &rec1);
    is_int((long long)(rec1 - rec0), 0, "gpumem_torch_free on the legacy stream records no event");
    e = gpumem_torch_alloc(N, 0, t);
    ok(e != NULL && e != d, "another stream does not get the block while the legacy stream's work is pending");
    d2 = gpumem_torch_alloc(N, 0, (void *)(uintptr_t)1);
    ok(d2 == d, "the legacy stream gets it at once");
    release_stream(NULL);
    gpumem_torch_free(d2, N, 0, (void *)(uintptr_t)1);
    gpumem_torch_free(e, N, 0, t);
    GM_DRV(stream_synchronize, fctx->dctx, NULL);
    gpumem_stream_destroy(T);
    ok(gpumem_torch_alloc(64, 64, NULL) == NULL, "gpumem_torch_alloc on device 64 gives NULL");
    like(gpumem_last_error(), "device 64", "with its message");
    struct gpumem_foreign_stats s = stats_of("torch");
    ok(s.device_count == 0 && s.frees >= 1, "torch's counters are back to nothing live");

    /* held blocks go back to the driver */
    struct gpumem_memory_report r0 = {.size = sizeof r0}, r1 = {.size = sizeof r1};
    gpumem_memory_report(fctx, 0, &r0);
    is_int(gpumem_foreign_release_held(0), GPUMEM_OK, "release_held(0)");
    gpumem_memory_report(fctx, 0, &r1);
    ok(r0.pool_held_blocks > 0 && r1.pool_held_blocks == 0, "the held blocks went back (%llu, then %llu)",
       (unsigned long long)r0.pool_held_blocks, (unsigned long long)r1.pool_held_blocks);

    /* The context's pool, when it has one. */
    gpumem_pool *pool = NULL;
    gpumem_pool_create(fctx, 0, &pool);
    gpumem_context_set_pool(fctx, pool);
    void *p = NULL;
    is_int(gpumem_foreign_alloc("c", 0, 512, NULL, &p), GPUMEM_OK, "allocate with the context's pool set");
    uint64_t active = 0;
    gpumem_pool_active_blocks(pool, &active);
    is_int(active, 1, "the block is the context's pool's");
    gpumem_context_set_pool(fctx, NULL);
    is_int(gpumem_foreign_free(p, NULL), GPUMEM_OK, "freed after the context's pool was unset");
    gpumem_pool_active_blocks(pool, &active);
    is_int(active, 0, "it went back to that pool");
    gpumem_pool_destroy(pool);
}

static void test_host(void)
{
    void *p = NULL, *m = NULL;
    is_int(gpumem_foreign_host_alloc("numba", 0, 10000, 0, &p), GPUMEM_OK, "pinned host memory");
    memset(p, 0xAB, 10000);
    int pinned = 0;
    gpumem_host_is_pinned(p, 10000, &pinned);
    ok(pinned, "it is page-locked");
    gpumem_memory_kind kind = GPUMEM_MEMORY_DEVICE;
    gpumem_foreign_lookup(p, NULL, NULL, NULL, &kind);
    is_int(kind, GPUMEM_MEMORY_PINNED, "looked up as pinned");
    uint64_t dp = 0;
    is_int(gpumem_foreign_device_pointer(p, &dp), GPUMEM_ERROR_INVALID_VALUE, "no device pointer: not mapped");
    is_int(gpumem_foreign_free(p, NULL), GPUMEM_ERROR_INVALID_VALUE, "gpumem_foreign_free refuses host memory");
    like(gpumem_last_error(), "gpumem_foreign_host_free", "and names the right call");
    is_int(gpumem_foreign_host_alloc("numba", 0, 4096, GPUMEM_FOREIGN_HOST_MAPPED, &m), GPUMEM_OK,
           "mapped host memory");
    is_int(gpumem_foreign_device_pointer(m, &dp), GPUMEM_OK, "its device pointer");
    ok(dp != 0, "nonzero");
    gpumem_foreign_lookup(m, NULL, NULL, NULL, &kind);
    is_int(kind, GPUMEM_MEMORY_MAPPED, "looked up as mapped");
    struct gpumem_foreign_stats s = stats_of("numba");
    ok(s.host_bytes == 14096 && s.host_count == 2, "numba's host counters: 14096 bytes in 2");
    unsigned char h[16];
    is_int(gpumem_foreign_ipc_handle(p, h, &(size_t){0}), GPUMEM_ERROR_INVALID_VALUE, "no IPC handle of host memory");
    is_int(gpumem_foreign_host_free(p), GPUMEM_OK, "free the pinned memory");
    is_int(gpumem_foreign_host_free(p), GPUMEM_ERROR_INVALID_VALUE, "a second host free");
    is_int(gpumem_foreign_host_free(m), GPUMEM_OK, "free the mapped memory");
    void *p2 = NULL;
    gpumem_foreign_host_alloc("cupy", 0, 10000, 0, &p2);
    ok(p2 == p, "CuPy's next pinned allocation reuses numba's block");
    gpumem_foreign_host_free(p2);

    void *mm = NULL;
    is_int(gpumem_foreign_managed_alloc("numba", 0, 2048, 1, &mm), GPUMEM_OK, "managed memory");
    gpumem_foreign_lookup(mm, NULL, NULL, NULL, &kind);
    is_int(kind, GPUMEM_MEMORY_MANAGED, "looked up as managed");
    s = stats_of("numba");
    ok(s.managed_bytes == 2048 && s.managed_count == 1, "numba's managed counters");
    is_int(gpumem_foreign_host_free(mm), GPUMEM_ERROR_INVALID_VALUE, "managed memory is no host allocation");
    is_int(gpumem_foreign_free(mm, NULL), GPUMEM_OK, "free it with gpumem_foreign_free");
    s = stats_of("numba");
    is_int(s.managed_count, 0, "nothing managed is live");
}

static void test_ipc(void)
{
    void *p = NULL;
    gpumem_foreign_alloc("numba", 0, 5000, NULL, &p);
    unsigned char h[GPUMEM_FOREIGN_IPC_HANDLE_SIZE];
    memset(h, 0, sizeof h);
    size_t off = 99;
    is_int(gpumem_foreign_ipc_handle(p, h, &off), GPUMEM_OK, "the IPC handle of a foreign allocation");
    int nonzero = 0;
    for (size_t i = 0; i < sizeof h; i++)
        nonzero |= h[i];
    ok(nonzero, "64 bytes, not all zero");
    uint64_t base = 0;
    size_t range = 0;
    GM_DRV(mem_get_address_range, fctx->dctx, &base, &range, (uint64_t)(uintptr_t)p);
    is_int(off, (uint64_t)(uintptr_t)p - base, "the offset is the pointer's in its driver allocation");
    is_int(gpumem_foreign_ipc_handle(p, NULL, &off), GPUMEM_ERROR_NULL_ARGUMENT, "NULL handle");

    /* An address inside the allocation (a numba view): the same driver allocation, its own offset. */
    unsigned char h2[GPUMEM_FOREIGN_IPC_HANDLE_SIZE];
    size_t off2 = 0;
    is_int(gpumem_foreign_ipc_handle((char *)p + 1000, h2, &off2), GPUMEM_OK,
           "the IPC handle of an address inside a foreign allocation");
    ok(memcmp(h, h2, sizeof h) == 0, "the same handle as the allocation's start");
    is_int(off2, off + 1000, "the offset is the interior address's");

    /* Device memory no allocator of the library made (numba's foreign arrays). */
    uint64_t raw = 0;
    is_int(GM_DRV(mem_alloc, fctx->dctx, &raw, 8192), 0, "device memory straight from the driver");
    size_t off3 = 99;
    unsigned char h3[GPUMEM_FOREIGN_IPC_HANDLE_SIZE];
    memset(h3, 0, sizeof h3);
    is_int(gpumem_foreign_ipc_handle((void *)(uintptr_t)(raw + 512), h3, &off3), GPUMEM_OK,
           "the IPC handle of another allocator's device memory");
    is_int(off3, 512, "its offset from the driver allocation's start");
    nonzero = 0;
    for (size_t i = 0; i < sizeof h3; i++)
        nonzero |= h3[i];
    ok(nonzero && memcmp(h3, h, sizeof h) != 0, "a handle of its own");
    GM_DRV(mem_free, fctx->dctx, raw);
    off3 = 77;
    is_int(gpumem_foreign_ipc_handle((void *)(uintptr_t)(raw + 512), h3, &off3), GPUMEM_ERROR_INVALID_VALUE,
           "no handle once the driver freed it");
    is_int(off3, 77, "nothing written on failure");

    void *m = NULL;
    gpumem_foreign_managed_alloc("numba", 0, 4096, 1, &m);
    is_int(gpumem_foreign_ipc_handle(m, h3, &off3), GPUMEM_ERROR_INVALID_VALUE, "no handle of managed memory");
    is_int(gpumem_foreign_ipc_handle((char *)m + 64, h3, &off3), GPUMEM_ERROR_INVALID_VALUE,
           "nor of an address inside it");
    gpumem_foreign_free(m, NULL);
    unsigned char host[64];
    is_int(gpumem_foreign_ipc_handle(host, h3, &off3), GPUMEM_ERROR_INVALID_VALUE, "no handle of host memory");

    gpumem_foreign_free(p, NULL);
    is_int(gpumem_foreign_release_held(0), GPUMEM_OK, "the pool gives its held blocks back");
    is_int(gpumem_foreign_ipc_handle(p, h, &off), GPUMEM_ERROR_INVALID_VALUE,
           "no handle of a pointer freed and given back to the driver");
}

static void test_trace(void)
{
    char path[] = "/tmp/gpumem-foreign-trace.XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    unlink(path);
    is_int(gpumem_trace_start(path, 0), GPUMEM_OK, "start a trace");
    void *p = NULL;
    gpumem_foreign_alloc("cupy", 0, 700, NULL, &p);
    gpumem_foreign_free(p, NULL);
    is_int(gpumem_trace_stop(), GPUMEM_OK, "stop it");
    FILE *f = fopen(path, "rb");
    char buf[1 << 16];
    size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
    if (f)
        fclose(f);
    int found = 0;
    for (size_t i = 0; i + 4 <= n; i++)
        found |= memcmp(buf + i, "cupy", 4) == 0;
    ok(found, "the trace names the runtime (a region around the allocation)");
    unlink(path);
}

enum { THREADS = 4, ROUNDS = 2000 };

static void *worker(void *arg)
{
    static const char *names[THREADS] = {"numba", "cupy", "torch", "c"};
    int i = (int)(intptr_t)arg, bad = 0;
    void *mine[8] = {0};
    for (int r = 0; r < ROUNDS; r++) {
        int k = r % 8;
        if (mine[k] != NULL && gpumem_foreign_free(mine[k], NULL) != GPUMEM_OK)
            bad++;
        mine[k] = NULL;
        if (gpumem_foreign_alloc(names[i], 0, (size_t)(256 * (1 + (r + i) % 16)), NULL, &mine[k]) != GPUMEM_OK)
            bad++;
    }
    for (int k = 0; k < 8; k++)
        if (mine[k] != NULL && gpumem_foreign_free(mine[k], NULL) != GPUMEM_OK)
            bad++;
    return (void *)(intptr_t)bad;
}

static void test_threads(void)
{
    struct gpumem_foreign_stats before[THREADS];
    static const char *names[THREADS] = {"numba", "cupy", "torch", "c"};
    for (int i = 0; i < THREADS; i++)
        before[i] = stats_of(names[i]);
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
    intptr_t bad = 0;
    for (int i = 0; i < THREADS; i++) {
        void *r = NULL;
        pthread_join(th[i], &r);
        bad += (intptr_t)r;
    }
    ok(bad == 0, "%d threads allocate and free %d times each, every call succeeds (%d failed)", THREADS, ROUNDS,
       (int)bad);
    int good = 1;
    for (int i = 0; i < THREADS; i++) {
        struct gpumem_foreign_stats s = stats_of(names[i]);
        good &= s.device_count == 0 && s.allocations - before[i].allocations == ROUNDS &&
                s.frees - before[i].frees == ROUNDS;
    }
    ok(good, "each runtime counted its own allocations and frees, and nothing is live");
}

static void test_runtimes(void)
{
    int n = 0;
    const char *name = NULL;
    while (gpumem_foreign_runtime(n, &name) == GPUMEM_OK)
        n++;
    ok(n >= 4, "%d runtimes so far", n);
    gpumem_foreign_runtime(0, &name);
    is_str(name, "t", "the first is the first one used");
    gpumem_status st = GPUMEM_OK;
    int i = 0;
    for (; n < 16; n++, i++) {
        char rt[16];
        snprintf(rt, sizeof rt, "rt%d", i);
        void *p = NULL;
        st = gpumem_foreign_alloc(rt, 0, 64, NULL, &p);
        gpumem_foreign_free(p, NULL);
    }
    is_int(st, GPUMEM_OK, "up to 16 runtimes");
    void *p = NULL;
    is_int(gpumem_foreign_alloc("one-too-many", 0, 64, NULL, &p), GPUMEM_ERROR_INVALID_VALUE, "a 17th is refused");
    like(gpumem_last_error(), "at most 16", "the message says the limit");
    is_int(gpumem_foreign_alloc("numba", 0, 64, NULL, &p), GPUMEM_OK, "known runtimes still allocate");
    gpumem_foreign_free(p, NULL);
}

int main(void)
{
    test_faults(); /* first: its children must fork before this process touches the library */
    if (gpumem_foreign_context(0, &fctx) != GPUMEM_OK)
        bail_out("no foreign context: %s", gpumem_last_error());
    test_bad_input();
    test_alloc_free();
    test_streams();
    test_per_thread_stream();
    test_shared_pool();
    test_host();
    test_ipc();
    test_trace();
    test_threads();
    test_runtimes();
    done_testing();
    return exit_status();
}
