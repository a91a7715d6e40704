/* Fault injection through the one knob: every driver call of an array
 * workload is failed in turn (in a child process each).  Each run must fail
 * cleanly: an error status, the injected driver error in the message, no
 * crash, and no device memory left behind by the failed call. */
#include <stdlib.h>
#include <string.h>

#include <gpumem.h>

#include "child.h"
#include "tap.h"

/* A workload touching every array path: allocation, a pinned() scope,
 * upload, views, strided and packed copies, fill by memset and by doubling, element access, a
 * stream with a write-back, reshape copies. */
static gpumem_status workload(gpumem_context *ctx)
{
    const gpumem_dtype *f64 = gpumem_dtype_builtin(GPUMEM_FLOAT64);
    static double host[6][8], out[6][8];
    for (int i = 0; i < 48; i++)
        host[i / 8][i % 8] = i;
    gpumem_array *h = NULL, *o = NULL, *d = NULL, *v = NULL, *r = NULL, *t = NULL;
    gpumem_stream *s = NULL;
    gpumem_slice sl[2] = {{GPUMEM_SLICE_DEFAULT, GPUMEM_SLICE_DEFAULT, -1}, {1, 7, 3}};
    double x = 2.5, y = 0;
    gpumem_status st;
    gpumem_registration *reg = NULL;
    if ((st = gpumem_host_array_wrap(host, 2, (int64_t[]){6, 8}, NULL, f64, &h)) != GPUMEM_OK ||
        (st = gpumem_host_array_wrap(out, 2, (int64_t[]){6, 8}, NULL, f64, &o)) != GPUMEM_OK ||
        (st = gpumem_pinned(ctx, &o, 1, &reg)) != GPUMEM_OK ||
        (st = gpumem_stream_create(ctx, 0, &s)) != GPUMEM_OK ||
        (st = gpumem_to_device(ctx, h, s, GPUMEM_TO_DEVICE_WRITEBACK, &d)) != GPUMEM_OK ||
        (st = gpumem_array_slice(d, sl, 2, &v)) != GPUMEM_OK ||
        (st = gpumem_array_fill(v, &x, s)) != GPUMEM_OK ||
        (st = gpumem_array_set_item(v, (int64_t[]){0, 0}, &x, NULL)) != GPUMEM_OK ||
        (st = gpumem_array_get_item(v, (int64_t[]){1, 1}, &y, NULL)) != GPUMEM_OK ||
        (st = gpumem_array_transpose(d, NULL, &t)) != GPUMEM_OK ||
        (st = gpumem_array_ravel(t, 'C', 0, s, &r)) != GPUMEM_OK ||
        (st = gpumem_copy_to_host(d, o, s)) != GPUMEM_OK)
        goto done;
    st = gpumem_stream_synchronize(s);
done:
    if (s != NULL) {
        gpumem_status dst = gpumem_stream_destroy(s);
        if (st == GPUMEM_OK)
            st = dst;
    }
    if (reg != NULL) {
        gpumem_status ust = gpumem_unpinned(&reg);
        if (st == GPUMEM_OK)
            st = ust;
    }
    /* Releases report a failure to free the memory they own. */
    gpumem_array *all[] = {r, t, v, d, o, h};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        gpumem_status rst = gpumem_array_release(all[i]);
        if (st == GPUMEM_OK)
            st = rst;
    }
    return st;
}

static void run(const void *arg, child_result *out)
{
    long k = *(const long *)arg;
    gpumem_context *ctx = NULL;
    if (gpumem_context_create(0, &ctx) != GPUMEM_OK) {
        out->status = -1;
        return;
    }
    uint64_t f0 = 0, f1 = 0, total = 0;
    gpumem_memory_info(ctx, &f0, &total);
    /* Free at every release, so each free is a call of the workload. */
    gpumem_context_set_dealloc_limits(ctx, 0, 0.0);
    uint64_t calls0 = fault_arm(k);
    out->status = workload(ctx);
    snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
    out->value[0] = fault_disarm(calls0);
    gpumem_context_flush_deallocations(ctx); /* deferred frees, not counted as the workload's */
    gpumem_memory_info(ctx, &f1, &total);
    out->value[1] = (long)(f0 - f1); /* device bytes not given back */
    gpumem_context_release(ctx);
}

int main(void)
{
    if (!test_on_sim())
        plan_skip_all("fault injection walks run on the simulator (GPUMEM_BACKEND=sim)");
    plan(5);
    fault_walk_all(run, "the workload", 21, "device", "cuMemFree");
    return exit_status();
}
