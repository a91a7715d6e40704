/* Deferred deallocation: the queue flushes at exactly the documented points
 * (more than the count limit, more than the ratio of device memory, pinned
 * memory counted at its real size), defer_cleanup nests, an allocation that
 * fails flushes and retries once, and bad settings are errors. */
#include <stdlib.h>
#include <string.h>

#include <gpumem.h>

#include "arrays.h"
#include "child.h"
#include "tap.h"

static gpumem_context *ctx;

static size_t pending(uint64_t *bytes)
{
    size_t n = 0;
    gpumem_context_pending_deallocations(ctx, &n, bytes);
    return n;
}

static void bad_env(const void *arg, child_result *out)
{
    const char *const *kv = arg;
    setenv(kv[0], kv[1], 1);
    gpumem_context *c = NULL;
    out->status = gpumem_context_create(0, &c);
    snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
}

int main(void)
{
    if (!test_on_sim())
        plan_skip_all("the flush points are measured against a simulated device of known size "
                      "(GPUMEM_SIM_MEMORY); run with GPUMEM_BACKEND=sim");
    plan(34);
    child_result r;
    static const char *const bad_count[] = {"GPUMEM_MAX_PENDING_DEALLOCS_COUNT", "ten"};
    run_child(bad_env, bad_count, &r);
    is_int(r.status, GPUMEM_ERROR_INVALID_ENVIRONMENT, "a bad GPUMEM_MAX_PENDING_DEALLOCS_COUNT is an error");
    like(r.text, "GPUMEM_MAX_PENDING_DEALLOCS_COUNT='ten'", "naming the variable and value");
    static const char *const bad_ratio[] = {"GPUMEM_MAX_PENDING_DEALLOCS_RATIO", "1.5"};
    run_child(bad_env, bad_ratio, &r);
    is_int(r.status, GPUMEM_ERROR_INVALID_ENVIRONMENT, "a ratio above 1 is an error, not a default");
    static const char *const neg_count[] = {"GPUMEM_MAX_PENDING_DEALLOCS_COUNT", "-1"};
    run_child(bad_env, neg_count, &r);
    is_int(r.status, GPUMEM_ERROR_INVALID_ENVIRONMENT, "a negative count is an error");

    setenv("GPUMEM_SIM_MEMORY", "100M", 1);
    setenv("GPUMEM_SIM_HOST_MEMORY", "100M", 1);
    if (gpumem_context_create(0, &ctx) != GPUMEM_OK)
        bail_out("no context: %s", gpumem_last_error());
    size_t count = 0;
    double ratio = 0;
    gpumem_context_get_dealloc_limits(ctx, &count, &ratio);
    ok(count == 10 && ratio == 0.2, "the defaults are 10 frees and 0.2 of device memory");

    /* The count limit: the 11th queued free flushes. */
    gpumem_array *a[11];
    for (int i = 0; i < 11; i++)
        a[i] = device_bytes(ctx, 1024);
    for (int i = 0; i < 10; i++)
        gpumem_array_release(a[i]);
    uint64_t bytes = 0;
    is_int(pending(&bytes), 10, "ten released arrays wait in the queue");
    is_int(bytes, 10 * 1024, "with their bytes");
    uint64_t free_now = 0, total = 0, free_after = 0;
    gpumem_memory_info(ctx, &free_now, &total);
    gpumem_array_release(a[10]);
    is_int(pending(NULL), 0, "the eleventh flushes the queue");
    gpumem_memory_info(ctx, &free_after, &total);
    ok(free_after > free_now, "and the memory is back");

    /* The ratio limit: more than 0.2 of 100M = 20M. */
    gpumem_array *big1 = device_bytes(ctx, 10 << 20), *big2 = device_bytes(ctx, 10 << 20), *one = device_bytes(ctx, 1);
    gpumem_array_release(big1);
    gpumem_array_release(big2);
    is_int(pending(&bytes), 2, "20 MiB pending is not more than 0.2 of 100 MiB... ");
    ok(bytes == 20u << 20, "...exactly at the limit, so it waits");
    gpumem_array_release(one);
    is_int(pending(NULL), 0, "one byte more flushes");

    /* Pinned memory counts its real size (numba counts it as 0). */
    gpumem_array *pin = NULL;
    gpumem_pinned_array(ctx, 1, (int64_t[]){21 << 20}, NULL, gpumem_dtype_builtin(GPUMEM_UINT8), 'C', &pin);
    gpumem_array_release(pin);
    is_int(pending(NULL), 0, "a 21 MiB pinned array flushes at once by its size");

    /* defer_cleanup: nothing is freed inside, scopes nest. */
    gpumem_defer_cleanup_begin(ctx);
    gpumem_defer_cleanup_begin(ctx);
    for (int i = 0; i < 11; i++)
        gpumem_array_release(device_bytes(ctx, 512));
    is_int(pending(NULL), 11, "inside defer_cleanup nothing is freed past the limit");
    is_int(gpumem_defer_cleanup_end(ctx), GPUMEM_OK, "the inner end");
    is_int(pending(NULL), 11, "does not flush");
    is_int(gpumem_defer_cleanup_end(ctx), GPUMEM_OK, "the outer end");
    is_int(pending(NULL), 0, "flushes, the queue being over its limit");
    is_int(gpumem_defer_cleanup_end(ctx), GPUMEM_ERROR_INVALID_STATE, "an end without a begin is an error");

    /* Out of memory: flush the queue and retry once. */
    gpumem_context_set_dealloc_limits(ctx, 100, 1.0);
    gpumem_array *fill = device_bytes(ctx, 60 << 20);
    gpumem_array_release(fill);
    is_int(pending(&bytes), 1, "60 MiB wait in the queue (limits raised)");
    int64_t before_calls = 0;
    {
        uint64_t n = 0;
        gpumem_debug_driver_calls("cuMemAlloc", &n);
        before_calls = (int64_t)n;
    }
    gpumem_array *needs = device_bytes(ctx, 70 << 20);
    uint64_t n2 = 0;
    gpumem_debug_driver_calls("cuMemAlloc", &n2);
    ok(needs != NULL && pending(NULL) == 0, "70 MiB succeed after the queue was flushed");
    is_int((int64_t)n2 - before_calls, 2, "by one failed attempt and one retry");
    gpumem_array_release(needs);
    gpumem_context_flush_deallocations(ctx);

    gpumem_array *fill2 = device_bytes(ctx, 60 << 20);
    gpumem_defer_cleanup_begin(ctx);
    gpumem_array_release(fill2);
    gpumem_array *none = NULL;
    is_int(gpumem_device_array(ctx, 1, (int64_t[]){70 << 20}, NULL, gpumem_dtype_builtin(GPUMEM_UINT8), 'C', NULL,
                               &none),
           GPUMEM_ERROR_OUT_OF_MEMORY, "inside defer_cleanup the same allocation is out of memory");
    is_int(pending(NULL), 1, "and nothing was flushed");
    gpumem_defer_cleanup_end(ctx);
    is_int(gpumem_context_flush_deallocations(ctx), GPUMEM_OK, "an explicit flush");
    is_int(pending(NULL), 0, "empties the queue");

    /* Limits. */
    is_int(gpumem_context_set_dealloc_limits(ctx, 5, 2.0), GPUMEM_ERROR_INVALID_VALUE, "a ratio above 1 is refused");
    gpumem_context_set_dealloc_limits(ctx, 3, 1.0);
    for (int i = 0; i < 3; i++)
        gpumem_array_release(device_bytes(ctx, 64));
    is_int(pending(NULL), 3, "three frees wait under a limit of 3");
    gpumem_context_set_dealloc_limits(ctx, 2, 1.0);
    is_int(pending(NULL), 0, "lowering the limit below the queue flushes it");

    /* A free the driver refuses stays queued and is retried (cleanup.h). */
    gpumem_context_set_dealloc_limits(ctx, 10, 1.0);
    gpumem_array_release(device_bytes(ctx, 4096));
    gpumem_debug_fail_call(1, 1); /* the next driver call: the flush's cuMemFree */
    is_int(gpumem_context_flush_deallocations(ctx), GPUMEM_ERROR_DRIVER, "a refused free fails the flush");
    is_int(pending(NULL), 1, "and stays queued");
    is_int(gpumem_context_flush_deallocations(ctx), GPUMEM_OK, "the next flush frees it");
    is_int(pending(NULL), 0, "and nothing is left");

    uint64_t f = 0, t = 0;
    gpumem_context_flush_deallocations(ctx);
    gpumem_memory_info(ctx, &f, &t);
    is_int(f, t, "every byte is back");
    gpumem_context_release(ctx);
    return exit_status();
}
