/* Out-of-memory errors that name their cause and the out-of-memory
 * callback (gpumem/memory.h): each cause produced on purpose on the
 * simulator and named with the numbers in the message, the callback
 * freeing memory for its retry, a callback that always asks again stopped,
 * scratch a copy can do without, and a real GPU filled (GPUMEM_TEST_GPU_OOM=1).
 * The report's numbers and leaks: test-memory.c.  Each case that needs its
 * own simulated device runs in a child process. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gpumem.h>

#include "arrays.h"
#include "child.h"
#include "memory-common.h"
#include "tap.h"

/* ---- out-of-memory causes --------------------------------------------------------------- */

typedef struct oom_case {
    const char *memory, *other, *first_fit, *host_memory;
    int scenario;
} oom_case;

enum { LIVE, OTHERS, FRAGMENTED, LADDER, PINNED, TO_DEVICE, ODD };

static void case_oom(const void *arg, child_result *out)
{
    const oom_case *c = arg;
    new_context(c->memory);
    if (c->other != NULL)
        setenv("GPUMEM_SIM_OTHER_MEMORY", c->other, 1);
    if (c->first_fit != NULL)
        setenv("GPUMEM_SIM_FIRST_FIT", c->first_fit, 1);
    if (c->host_memory != NULL)
        setenv("GPUMEM_SIM_HOST_MEMORY", c->host_memory, 1);
    gpumem_context *ctx = NULL;
    if ((out->status = gpumem_context_create(0, &ctx)) != GPUMEM_OK) {
        snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
        return;
    }
    gpumem_array *keep[4] = {NULL, NULL, NULL, NULL}, *fail = NULL;
    gpumem_pool *pool = NULL;
    const gpumem_dtype *u8 = gpumem_dtype_builtin(GPUMEM_UINT8);
    int64_t ask = 32 * MiB;
    switch (c->scenario) {
    case LIVE:
    case TO_DEVICE:
        for (int i = 0; i < 3; i++)
            keep[i] = device_bytes(ctx, 16 * MiB);
        break;
    case OTHERS:
        keep[0] = device_bytes(ctx, 8 * MiB);
        break;
    case ODD: /* sizes that are not whole MiB: the message must not round them into looking exact */
        for (int i = 0; i < 3; i++)
            keep[i] = device_bytes(ctx, 16 * MiB);
        keep[3] = device_bytes(ctx, 1000);
        ask = 16 * MiB;
        break;
    case FRAGMENTED:
        for (int i = 0; i < 4; i++)
            keep[i] = device_bytes(ctx, 16 * MiB);
        gpumem_array_release(keep[0]);
        gpumem_array_release(keep[2]);
        keep[0] = keep[2] = NULL;
        gpumem_context_flush_deallocations(ctx);
        break;
    case LADDER: {
        gpumem_context_set_dealloc_limits(ctx, 100, 1.0);
        keep[0] = device_bytes(ctx, 16 * MiB);
        keep[1] = device_bytes(ctx, 16 * MiB);
        gpumem_pool_create(ctx, 0, &pool);
        gpumem_allocation *b = NULL;
        gpumem_pool_allocate(pool, 8 * MiB, NULL, &b);
        gpumem_allocation_free(b, NULL);          /* 8 MiB held by the pool */
        gpumem_array_release(device_bytes(ctx, 8 * MiB)); /* 8 MiB in the deferred queue */
        ask = 40 * MiB;
        break;
    }
    case PINNED:
        gpumem_pinned_array(ctx, 1, (int64_t[]){12 * MiB}, NULL, u8, 'C', &keep[0]);
        ask = 8 * MiB;
        break;
    }
    if (c->scenario == PINNED) {
        out->status = gpumem_pinned_array(ctx, 1, &ask, NULL, u8, 'C', &fail);
    } else if (c->scenario == TO_DEVICE) {
        /* a call that allocates inside: the message is still the allocator's */
        gpumem_array *h = NULL;
        gpumem_host_array(1, &ask, u8, 'C', &h);
        out->status = gpumem_to_device(ctx, h, NULL, 0, &fail);
        snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
        gpumem_array_release(h);
    } else {
        out->status = gpumem_device_array(ctx, 1, &ask, NULL, u8, 'C', NULL, &fail);
    }
    if (c->scenario != TO_DEVICE)
        snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
    out->value[0] = fail == NULL;
    struct gpumem_memory_report r = report(ctx, 0);
    out->value[1] = (long)r.oom_failures;
    out->value[2] = (long)r.oom_ladder_runs;
    for (int i = 0; i < 4; i++)
        gpumem_array_release(keep[i]);
    gpumem_pool_destroy(pool);
    gpumem_context_release(ctx);
}

/* ---- the callback ---------------------------------------------------------------------- */

typedef struct cb_state {
    int mode; /* 0: free one array and retry; 1: ask again forever; 2: decline; 3: allocate inside, decline;
                 4: destroy the pool, retry */
    int calls;
    unsigned attempts[8];
    size_t bytes;
    gpumem_memory_kind kind;
    char call[64], message[1024];
    gpumem_array *arrays[3];
    gpumem_pool *pool;
    gpumem_status inner;
} cb_state;

static int on_oom(gpumem_context *ctx, const struct gpumem_oom_info *info, void *user)
{
    cb_state *s = user;
    if (s->calls < 8)
        s->attempts[s->calls] = info->attempt;
    s->calls++;
    s->bytes = info->bytes;
    s->kind = info->kind;
    snprintf(s->call, sizeof s->call, "%s", info->size >= sizeof *info ? info->call : "?");
    snprintf(s->message, sizeof s->message, "%s", info->message);
    switch (s->mode) {
    case 0:
        gpumem_array_release(s->arrays[0]);
        s->arrays[0] = NULL;
        return 1;
    case 1:
        return 1;
    case 3: {
        gpumem_array *inner = NULL;
        int64_t n = 48 * MiB;
        s->inner = gpumem_device_array(ctx, 1, &n, NULL, gpumem_dtype_builtin(GPUMEM_UINT8), 'C', NULL, &inner);
        gpumem_array_release(inner);
        return 0;
    }
    case 4:
        gpumem_pool_destroy(s->pool);
        return 1;
    default:
        return 0;
    }
}

static void case_callback(const void *arg, child_result *out)
{
    int mode = *(const int *)arg;
    new_context("64M");
    gpumem_context *ctx = NULL;
    if ((out->status = gpumem_context_create(0, &ctx)) != GPUMEM_OK) {
        snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
        return;
    }
    cb_state s = {.mode = mode};
    for (int i = 0; i < 3; i++)
        s.arrays[i] = device_bytes(ctx, 16 * MiB);
    gpumem_context_set_oom_callback(ctx, on_oom, &s);
    gpumem_array *a = NULL;
    gpumem_allocation *pa = NULL;
    if (mode == 4) {
        gpumem_pool_create(ctx, 0, &s.pool);
        out->status = gpumem_pool_allocate(s.pool, 32 * MiB, NULL, &pa);
    } else {
        int64_t n = 32 * MiB;
        out->status = gpumem_device_array(ctx, 1, &n, NULL, gpumem_dtype_builtin(GPUMEM_UINT8), 'C', NULL, &a);
    }
    snprintf(out->text, sizeof out->text, "%s", out->status == GPUMEM_OK ? s.message : gpumem_last_error());
    struct gpumem_memory_report r = report(ctx, 0);
    out->value[0] = s.calls;
    out->value[1] = (long)(r.oom_callback_calls * 100 + r.oom_callback_successes * 10 + r.oom_failures);
    out->value[2] = (long)s.bytes;
    out->value[3] = (long)(s.kind * 1000 + (strcmp(s.call, mode == 4 ? "gpumem_pool_allocate" : "gpumem_device_array") == 0) * 100 +
                           (s.calls > 0 ? (long)s.attempts[s.calls > 8 ? 7 : s.calls - 1] : 0) +
                           (mode == 3 ? (s.inner == GPUMEM_ERROR_OUT_OF_MEMORY) * 10 : 0));
    /* removing it: the next failure calls nothing */
    gpumem_context_set_oom_callback(ctx, NULL, NULL);
    gpumem_array_release(a);
    int calls = s.calls;
    int64_t huge = 60 * MiB;
    gpumem_array *h = NULL;
    gpumem_device_array(ctx, 1, &huge, NULL, gpumem_dtype_builtin(GPUMEM_UINT8), 'C', NULL, &h);
    if (s.calls != calls)
        out->value[0] = -1;
    for (int i = 0; i < 3; i++)
        gpumem_array_release(s.arrays[i]);
    gpumem_context_release(ctx);
}

/* Scratch that a copy can do without: a strided copy on a device with no
 * room for its scratch takes its slower way; the callback is not asked to
 * free memory for it, and no failure is counted. */
static void case_spare(const void *arg, child_result *out)
{
    (void)arg;
    new_context("8M");
    gpumem_context *ctx = NULL;
    if ((out->status = gpumem_context_create(0, &ctx)) != GPUMEM_OK) {
        snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
        return;
    }
    cb_state s = {.mode = 1}; /* would ask again forever */
    gpumem_context_set_oom_callback(ctx, on_oom, &s);
    enum { N = 1024 };
    int32_t src[2 * N], got[N];
    for (int i = 0; i < 2 * N; i++)
        src[i] = i * 3;
    int64_t n2 = 2 * N, n1 = N;
    gpumem_array *h = NULL, *d = NULL, *o = NULL, *filler = NULL, *view = NULL;
    gpumem_host_array_wrap(src, 1, &n2, NULL, gpumem_dtype_builtin(GPUMEM_INT32), &h);
    gpumem_to_device(ctx, h, NULL, 0, &d);
    uint64_t f = 0, t = 0;
    gpumem_memory_info(ctx, &f, &t);
    filler = device_bytes(ctx, (int64_t)f - 32 * KiB); /* room for a temporary, not for 64 KiB of scratch */
    gpumem_slice every2 = {0, GPUMEM_SLICE_DEFAULT, 2};
    gpumem_array_slice(d, &every2, 1, &view);
    gpumem_host_array_wrap(got, 1, &n1, NULL, gpumem_dtype_builtin(GPUMEM_INT32), &o);
    out->status = gpumem_copy_to_host(view, o, NULL);
    int good = out->status == GPUMEM_OK;
    for (int i = 0; i < N && good; i++)
        good = got[i] == src[2 * i];
    struct gpumem_memory_report r = report(ctx, 0);
    out->value[0] = good;
    out->value[1] = s.calls;
    out->value[2] = (long)r.oom_failures;
    out->value[3] = (long)r.oom_ladder_runs;
    snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
    gpumem_array_release(o);
    gpumem_array_release(view);
    gpumem_array_release(filler);
    gpumem_array_release(d);
    gpumem_array_release(h);
    gpumem_context_release(ctx);
}

/* Every case that needs a simulated device of its own. */
static void sim_cases(void)
{
    child_result res;
    /* Each cause, on purpose. */
    oom_case live = {"64M", NULL, NULL, NULL, LIVE};
    run_child(case_oom, &live, &res);
    is_int(res.status, GPUMEM_ERROR_OUT_OF_MEMORY, "live data: out of memory");
    like(res.text, "gpumem_device_array: out of device memory: asked for 33554432 bytes (32 MiB) of device "
         "memory on device 0;", "what was asked for, by which call");
    like(res.text, "memory of device 0 (1 context): 16 MiB free of 64 MiB, others about 0 B;",
         "the memory report's line: the device's free and total memory, the estimate of others");
    like(res.text, "; this process holds 48 MiB of the device (peak 48 MiB); live: device 48 MiB in 3 (peak 48 MiB "
         "in 3); no pools; driver allocations 3; out of memory: 1 ladder run (0 succeeded), 1 failure",
         "what this process holds, live by kind, no pools nor deferred frees, the ladder run and this failure");
    like(res.text, "the ladder gave back 0 B (0 pool blocks of 0 B, 0 deferred frees of 0 B)", "what the ladder gave back");
    like(res.text, "on device 0; cause: this process's live data (cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY); ",
         "the cause, after the request");
    like(res.text, "; to see what holds it, run with GPUMEM_DEBUG=leaks (what is alive at exit, and where it was "
         "made) or GPUMEM_TRACE=FILE (every allocation: gpumem trace summary FILE); ", "what to try next");
    ok(strchr(res.text, '\n') == NULL, "one line");
    ok(res.value[0] == 1 && res.value[1] == 1 && res.value[2] == 1, "no array; counted as a failure after one ladder run");

    oom_case others = {"64M", "40M", NULL, NULL, OTHERS};
    run_child(case_oom, &others, &res);
    is_int(res.status, GPUMEM_ERROR_OUT_OF_MEMORY, "others: out of memory");
    like(res.text, ": 16 MiB free of 64 MiB, others about 40 MiB; this process holds 8 MiB of the device",
         "the numbers; the estimate: GPUMEM_SIM_OTHER_MEMORY");
    like(res.text, "cause: held by other processes (", "the cause");

    oom_case frag = {"64M", NULL, "1", NULL, FRAGMENTED};
    run_child(case_oom, &frag, &res);
    is_int(res.status, GPUMEM_ERROR_OUT_OF_MEMORY, "fragmented: out of memory");
    like(res.text, "asked for 33554432 bytes (32 MiB)", "32 MiB asked");
    like(res.text, ": 32 MiB free of 64 MiB, others about 0 B; this process holds 32 MiB of the device (peak 64 "
         "MiB); live: device 32 MiB in 2 (peak 64 MiB in 4)", "with 32 MiB free in two pieces");
    like(res.text, "cause: fragmented (enough free in total, no block large enough)", "the cause");

    oom_case ladder = {"64M", NULL, NULL, NULL, LADDER};
    run_child(case_oom, &ladder, &res);
    is_int(res.status, GPUMEM_ERROR_OUT_OF_MEMORY, "after the ladder: out of memory");
    like(res.text, "the ladder gave back 16 MiB (1 pool blocks of 8 MiB, 1 deferred frees of 8 MiB)",
         "the ladder's pool block and deferred free");
    like(res.text, ": 32 MiB free of 64 MiB, others about 0 B; this process holds 32 MiB", "the numbers after it");
    like(res.text, "cause: this process's live data", "the cause");

    oom_case pinned = {"64M", NULL, NULL, "16M", PINNED};
    run_child(case_oom, &pinned, &res);
    is_int(res.status, GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "page-locked: the host's shortage");
    like(res.text, "gpumem_pinned_array: out of page-locked host memory: asked for 8388608 bytes (8 MiB) of "
         "pinned memory;", "what was asked");
    like(res.text, "memory of device 0 (1 context); this process holds 0 B of the device (peak 0 B); live: "
         "pinned 12 MiB in 1 (peak 12 MiB in 1); no pools;", "what the process holds, no device figures");
    like(res.text, "cause: the host refused more page-locked memory (cuMemHostAlloc: CUDA_ERROR_OUT_OF_MEMORY)",
         "the cause");

    oom_case odd = {"64M", NULL, NULL, NULL, ODD};
    run_child(case_oom, &odd, &res);
    is_int(res.status, GPUMEM_ERROR_OUT_OF_MEMORY, "sizes that are not whole MiB: out of memory");
    like(res.text, ": 15.999 MiB free of 64 MiB, others about 24 B; this process holds 48.001 MiB of the device "
         "(peak 48.001 MiB); live: device 48.001 MiB in 4", "figures that are not exact do not read as exact; the "
         "estimate keeps the driver's rounding (1000 bytes take 1024)");
    like(res.text, "cause: this process's live data", "and the cause is still this process's");

    oom_case to_device = {"64M", NULL, NULL, NULL, TO_DEVICE};
    run_child(case_oom, &to_device, &res);
    is_int(res.status, GPUMEM_ERROR_OUT_OF_MEMORY, "gpumem_to_device: out of memory");
    like(res.text, "cause: this process's live data", "its message is the allocator's, not a later cleanup's");
    like(res.text, "asked for 33554432 bytes", "with its numbers");

    oom_case bad_other = {"64M", "64M", NULL, NULL, LIVE};
    run_child(case_oom, &bad_other, &res);
    is_int(res.status, GPUMEM_ERROR_INVALID_ENVIRONMENT, "GPUMEM_SIM_OTHER_MEMORY as large as the device");
    like(res.text, "GPUMEM_SIM_OTHER_MEMORY='64M'", "names the variable");
    oom_case bad_ff = {"64M", NULL, "yes", NULL, LIVE};
    run_child(case_oom, &bad_ff, &res);
    is_int(res.status, GPUMEM_ERROR_INVALID_ENVIRONMENT, "GPUMEM_SIM_FIRST_FIT=yes");
    like(res.text, "GPUMEM_SIM_FIRST_FIT", "names the variable");

    /* The callback. */
    int mode = 0;
    run_child(case_callback, &mode, &res);
    is_int(res.status, GPUMEM_OK, "a callback that frees an array: the retry succeeds");
    is_int(res.value[0], 1, "it ran once");
    is_int(res.value[1], 110, "the report: 1 call, 1 success, no failure");
    is_int(res.value[2], 32 * MiB, "it was told the bytes");
    is_int(res.value[3], GPUMEM_MEMORY_DEVICE * 1000 + 100 + 1, "the kind, the call, attempt 1");
    like(res.text, "cause: this process's live data", "and the message the allocation would have failed with");
    mode = 1;
    run_child(case_callback, &mode, &res);
    is_int(res.status, GPUMEM_ERROR_OUT_OF_MEMORY, "a callback that always asks again: the allocation fails");
    is_int(res.value[0], GPUMEM_OOM_CALLBACK_MAX_CALLS, "after GPUMEM_OOM_CALLBACK_MAX_CALLS calls");
    is_int(res.value[1], GPUMEM_OOM_CALLBACK_MAX_CALLS * 100 + 1, "counted; one failure");
    is_int(res.value[3] % 1000, 100 + GPUMEM_OOM_CALLBACK_MAX_CALLS, "the last call was attempt 4");
    like(res.text, "the out-of-memory callback ran 4 times, the most for one allocation", "the message says so");
    mode = 2;
    run_child(case_callback, &mode, &res);
    is_int(res.status, GPUMEM_ERROR_OUT_OF_MEMORY, "a callback that declines");
    is_int(res.value[0], 1, "runs once");
    like(res.text, "the out-of-memory callback ran 1 time and then declined", "the message says so");
    mode = 3;
    run_child(case_callback, &mode, &res);
    is_int(res.value[0], 1, "an allocation inside the callback does not call it again");
    is_int(res.value[3] % 100, 11, "and fails for memory itself (attempt 1)");
    mode = 4;
    run_child(case_callback, &mode, &res);
    is_int(res.status, GPUMEM_ERROR_INVALID_STATE, "a callback that destroys the pool being allocated from");
    like(res.text, "gpumem_pool_allocate: the out-of-memory callback destroyed the pool", "says so");
    run_child(case_spare, NULL, &res);
    ok(res.status == GPUMEM_OK && res.value[0] == 1, "a strided copy with no room for its scratch takes its slower "
       "way, exactly%s%s", res.status ? ": " : "", res.status ? res.text : "");
    ok(res.value[3] >= 1 && res.value[1] == 0 && res.value[2] == 0, "the ladder ran (%ld), but the callback was not "
       "asked (%ld calls) and no failure was counted (%ld): scratch is memory the copy can do without",
       res.value[3], res.value[1], res.value[2]);

}

/* ---- a real GPU: out of memory for this process's live data ---- */

/* Fills the device with arrays of 256 MiB until the driver refuses one,
 * then asks for one more: value[0] the arrays, text the message. */
static void case_gpu_oom(const void *arg, child_result *out)
{
    (void)arg;
    gpumem_context *ctx = NULL;
    if ((out->status = gpumem_context_create_default(&ctx)) != GPUMEM_OK) {
        snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
        return;
    }
    enum { MAX = 4096 };
    static gpumem_array *a[MAX];
    int n = 0;
    int64_t size = 256 * MiB;
    while (n < MAX && gpumem_device_array(ctx, 1, &size, NULL, gpumem_dtype_builtin(GPUMEM_UINT8), 'C', NULL,
                                          &a[n]) == GPUMEM_OK)
        n++;
    gpumem_array *more = NULL;
    out->status = gpumem_device_array(ctx, 1, &size, NULL, gpumem_dtype_builtin(GPUMEM_UINT8), 'C', NULL, &more);
    snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
    struct gpumem_memory_report r = report(ctx, 0);
    out->value[0] = n;
    out->value[1] = (long)r.device.count;
    out->value[2] = (long)(r.device.bytes >> 20);
    out->value[3] = (long)r.oom_failures;
    gpumem_array_release(more);
    for (int i = 0; i < n; i++)
        gpumem_array_release(a[i]);
    gpumem_context_release(ctx);
}

static void gpu_oom(void)
{
    const char *want = getenv("GPUMEM_TEST_GPU_OOM");
    if (want == NULL || strcmp(want, "1") != 0) {
        skip(1, "filling the GPU would starve the tests running beside this one: run alone with "
             "GPUMEM_TEST_GPU_OOM=1");
        return;
    }
    child_result res;
    run_child(case_gpu_oom, NULL, &res);
    is_int(res.status, GPUMEM_ERROR_OUT_OF_MEMORY, "a full GPU: out of memory");
    ok(res.value[0] > 0 && res.value[1] == res.value[0] && res.value[2] == res.value[0] * 256 && res.value[3] >= 1,
       "the report counted the %ld arrays of 256 MiB (%ld, %ld MiB) and the failures (%ld)", res.value[0],
       res.value[1], res.value[2], res.value[3]);
    like(res.text, "gpumem_device_array: out of device memory: asked for 268435456 bytes (256 MiB)", "the request");
    like(res.text, "cause: this process's live data", "named as this process's own (the GPU is not shared)");
    diag("%s", res.text);
}

int main(void)
{
    if (test_on_sim()) {
        sim_cases();
    } else {
        skip(1, "the report's numbers and each cause are checked against simulated devices of known sizes "
             "(GPUMEM_SIM_MEMORY, GPUMEM_SIM_OTHER_MEMORY, GPUMEM_SIM_FIRST_FIT): run with GPUMEM_BACKEND=sim");
        gpu_oom();
    }
    done_testing();
    return exit_status();
}
