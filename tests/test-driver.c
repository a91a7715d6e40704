/* The dispatcher: backend choice, call counting, and fault injection through
 * the one knob (GPUMEM_SIM_FAIL / gpumem_debug_fail_call). */
#include "config.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "child.h"
#include "context.h"
#include "driver.h"
#include "gpumem.h"
#include "tap.h"

/* ---- fault injection from several threads ---------------------------------- */

#define CODE_FIRES GM_CUDA_ERROR_OUT_OF_MEMORY /* armed for the next call */
#define CODE_NEVER GM_CUDA_ERROR_NOT_READY     /* armed for a call that never comes */

static atomic_int stop_callers;
static atomic_long fired, wrong, calls_made;

/* Makes driver calls until told to stop, counting the injected failures. */
static void *caller(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop_callers)) {
        int n = 0;
        int rc = GM_DRV(device_get_count, &n);
        atomic_fetch_add(&calls_made, 1);
        if (rc == CODE_FIRES)
            atomic_fetch_add(&fired, 1);
        else if (rc != GM_CUDA_SUCCESS)
            atomic_fetch_add(&wrong, 1);
    }
    return NULL;
}

/* gpumem_debug_fail_call re-armed by one thread while three others make
 * driver calls.  Each round arms the next call (CODE_FIRES), replaces that
 * at once by an arming for a call 2^62 calls away (CODE_NEVER), arms the
 * next call again and waits until a caller's call has failed with it.  A
 * call that fails must fail with the code of the arming that chose it,
 * never with the replacing one's.  (The armed code was a plain int read by
 * the calling threads: a data race under TSan, and a firing call could see
 * the next arming's code.) */
static void test_fail_call_threads(void)
{
    enum { THREADS = 3, ROUNDS = 1000 };
    pthread_t t[THREADS];
    atomic_store(&stop_callers, 0);
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, caller, NULL);
    long armed = 0;
    for (int i = 0; i < ROUNDS; i++) {
        long before = atomic_load(&fired);
        gpumem_debug_fail_call(1, CODE_FIRES);
        gpumem_debug_fail_call(UINT64_C(1) << 62, CODE_NEVER);
        armed++;
        /* "the next call" is the one numbered after the count the arming
         * read; a caller may have taken that number meanwhile, so arm again
         * until one fires */
        while (atomic_load(&fired) == before) {
            gpumem_debug_fail_call(1, CODE_FIRES);
            armed++;
            sched_yield();
        }
    }
    atomic_store(&stop_callers, 1);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    gpumem_debug_fail_call(0, 0);
    is_int(atomic_load(&wrong), 0, "no call failed with another arming's code");
    long f = atomic_load(&fired);
    ok(f >= ROUNDS && f <= armed, "%ld of %ld armings fired, each at most once (%ld calls)", f, armed,
       atomic_load(&calls_made));
    int n = 0;
    is_int(GM_DRV(device_get_count, &n), GM_CUDA_SUCCESS, "disarmed: the next call reaches the simulator");
}

static void choose(const void *arg, child_result *out)
{
    const char *const *env = arg; /* name, value pairs, NULL-terminated */
    for (; env[0] != NULL; env += 2) {
        if (env[1])
            setenv(env[0], env[1], 1);
        else
            unsetenv(env[0]);
    }
    const char *name = NULL;
    out->status = gpumem_backend(&name);
    snprintf(out->text, sizeof out->text, "%s", out->status == GPUMEM_OK ? name : gpumem_last_error());
    /* The failure is remembered and reported again. */
    const char *again = NULL;
    out->value[0] = (int)gpumem_backend(&again) == out->status;
}

/* Runs "create the default context, query memory, release" with the k-th
 * driver call failing; reports how far it got. */
static void walk(const void *arg, child_result *out)
{
    long k = *(const long *)arg;
    char spec[64];
    snprintf(spec, sizeof spec, "%ld:CUDA_ERROR_OUT_OF_MEMORY", k);
    setenv("GPUMEM_SIM_FAIL", spec, 1);
    setenv("GPUMEM_BACKEND", "sim", 1);
    unsetenv("CUDA_DEVICE");
    setenv("HOME", "/nonexistent", 1);
    gpumem_context *ctx = NULL;
    uint64_t f, t;
    gpumem_status st = gpumem_context_create_default(&ctx);
    if (st == GPUMEM_OK)
        st = gpumem_memory_info(ctx, &f, &t);
    gpumem_status rel = gpumem_context_release(ctx);
    if (st == GPUMEM_OK)
        st = rel;
    out->status = st;
    snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
    uint64_t n = 0;
    gpumem_debug_driver_calls(NULL, &n);
    out->value[0] = (long)n;
}

int main(void)
{
    plan(32);
    child_result r;

    static const char *const bogus[] = {"GPUMEM_BACKEND", "opencl", NULL};
    run_child(choose, bogus, &r);
    is_int(r.status, GPUMEM_ERROR_INVALID_ENVIRONMENT, "an unknown GPUMEM_BACKEND is an error");
    like(r.text, "GPUMEM_BACKEND='opencl'", "naming the variable and value");
    ok(r.value[0], "the failure is remembered");

    static const char *const nodrv[] = {"GPUMEM_BACKEND", "cuda", "GPUMEM_CUDA_LIBRARY",
                                        "/nonexistent/libcuda.so.1", NULL};
    run_child(choose, nodrv, &r);
    is_int(r.status, GPUMEM_ERROR_DRIVER_NOT_FOUND, "GPUMEM_BACKEND=cuda without a driver: driver not found");
    like(r.text, "/nonexistent/libcuda.so.1", "the message names the file it tried");

    static const char *const autonodrv[] = {"GPUMEM_BACKEND", NULL, "GPUMEM_CUDA_LIBRARY",
                                            "/nonexistent/libcuda.so.1", NULL};
    run_child(choose, autonodrv, &r);
    ok(r.status == GPUMEM_ERROR_DRIVER_NOT_FOUND || r.status == GPUMEM_ERROR_NO_DEVICE,
       "auto without a driver fails (%s)", gpumem_status_string((gpumem_status)r.status));
    like(r.text, "GPUMEM_BACKEND=sim", "and names GPUMEM_BACKEND=sim");

    static const char *const sim[] = {"GPUMEM_BACKEND", "sim", NULL};
    run_child(choose, sim, &r);
    is_str(r.text, "sim", "GPUMEM_BACKEND=sim gives the simulator");

    static const char *const badfail[] = {"GPUMEM_BACKEND", "sim", "GPUMEM_SIM_FAIL", "3:CUDA_ERROR_BOGUS", NULL};
    run_child(choose, badfail, &r);
    is_int(r.status, GPUMEM_ERROR_INVALID_ENVIRONMENT, "GPUMEM_SIM_FAIL with an unknown error name");
    like(r.text, "CUDA_ERROR_BOGUS", "is an error naming it");
    static const char *const zerofail[] = {"GPUMEM_BACKEND", "sim", "GPUMEM_SIM_FAIL", "0", NULL};
    run_child(choose, zerofail, &r);
    is_int(r.status, GPUMEM_ERROR_INVALID_ENVIRONMENT, "GPUMEM_SIM_FAIL=0 is an error");

    /* Walk every driver call of a create/query/release sequence. */
    long clean_calls;
    {
        long k = 1000000;
        run_child(walk, &k, &r);
        is_int(r.status, GPUMEM_OK, "the sequence succeeds without injection");
        clean_calls = r.value[0];
        ok(clean_calls >= 4, "it makes %ld driver calls", clean_calls);
    }
    int all_fail = 1, all_named = 1;
    for (long k = 1; k <= clean_calls; k++) {
        run_child(walk, &k, &r);
        if (!r.exited || r.exit_code != 0 || r.status == GPUMEM_OK)
            all_fail = 0;
        if (strstr(r.text, "CUDA_ERROR_OUT_OF_MEMORY") == NULL && strstr(r.text, "tried") == NULL)
            all_named = 0;
        if (r.status == GPUMEM_OK || !r.exited)
            diag("call %ld: %s %s", k, gpumem_status_string((gpumem_status)r.status), r.text);
    }
    ok(all_fail, "failing any one of the %ld calls fails the sequence cleanly", clean_calls);
    ok(all_named, "and the message carries the injected driver error");

    /* In-process: the same knob from code, and the counters. */
    setenv("GPUMEM_BACKEND", "sim", 1);
    setenv("GPUMEM_SIM_DEVICES", "1", 1);
    is_int(gm_driver_ready(), GPUMEM_OK, "the simulator loads");
    uint64_t before = 0, after = 0, count_before = 0, count_after = 0;
    gpumem_debug_driver_calls(NULL, &before);
    gpumem_debug_driver_calls("cuDeviceGetCount", &count_before);
    int n = 0;
    gpumem_device_count(&n);
    gpumem_debug_driver_calls(NULL, &after);
    gpumem_debug_driver_calls("cuDeviceGetCount", &count_after);
    ok(after - before == 1 && count_after - count_before == 1, "one query is one counted driver call");
    uint64_t dummy;
    is_int(gpumem_debug_driver_calls("cuBogus", &dummy), GPUMEM_ERROR_NOT_FOUND, "an unknown op name");
    is_int(gpumem_debug_driver_calls(NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "a NULL count");

    is_int(gpumem_debug_fail_call(2, GM_CUDA_ERROR_NOT_SUPPORTED), GPUMEM_OK, "arm the second call from now");
    is_int(gpumem_device_count(&n), GPUMEM_OK, "the first still succeeds");
    is_int(gpumem_device_count(&n), GPUMEM_ERROR_NOT_SUPPORTED, "the second fails with the status of its error");
    like(gpumem_last_error(), "cuDeviceGetCount failed: CUDA_ERROR_NOT_SUPPORTED (801)",
         "the message names the driver function and error");
    is_int(gpumem_device_count(&n), GPUMEM_OK, "only that one call fails");
    is_int(gpumem_debug_fail_call(1, 0), GPUMEM_ERROR_INVALID_VALUE, "success is not an error to inject");
    is_str(gpumem_debug_driver_error_name(GM_CUDA_ERROR_DEVICE_UNAVAILABLE), "CUDA_ERROR_DEVICE_UNAVAILABLE",
           "driver error names");
    test_fail_call_threads();

    /* Stream-ordered allocation (the driver's pool, which benchmarks compare with ours). */
    gpumem_context *c = NULL;
    gpumem_context_create(0, &c);
    uint64_t f0 = 0, f1 = 0, f2 = 0, t = 0;
    gpumem_memory_info(c, &f0, &t);
    gm_cu_deviceptr p = 0;
    is_int(GM_DRV(mem_alloc_async, c->dctx, &p, 1 << 20, NULL), 0, "cuMemAllocAsync on the default stream");
    gpumem_memory_info(c, &f1, &t);
    is_int(f0 - f1, 1 << 20, "takes its bytes");
    GM_DRV(mem_free_async, c->dctx, p, NULL);
    gpumem_memory_info(c, &f2, &t);
    is_int(f2, f0, "cuMemFreeAsync gives them back");
    gpumem_context_release(c);
    return exit_status();
}
