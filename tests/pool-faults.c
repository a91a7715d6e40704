/* Pools under fault injection (part of tests/test-pool): a walk over a
 * pool workload failing each driver call in turn, the context's end with
 * pools alive, and the sections run in a child of their own. */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "child.h"
#include "context.h"
#include "driver.h"
#include "gpumem.h"
#include "gpumem/pool.h"
#include "pool.h"
#include "sim.h"
#include "stream.h"
#include "tap.h"
#include "pool-test.h"

/* ---- fault injection ------------------------------------------------------------------ */

/* Every pool path that calls the driver: misses, a free recorded on a
 * stream, hits on the same and another stream (event queries), the shared
 * store, free_held (event synchronize, event and memory frees), stop_holding,
 * destroy with a live allocation, and its free afterwards. */
static gpumem_status workload(void)
{
    gpumem_status st = GPUMEM_OK;
    gpumem_pool *pool = NULL;
    gpumem_stream *s = NULL, *t = NULL;
    gpumem_allocation *a = NULL, *b = NULL, *c = NULL, *d = NULL, *e = NULL;
    fault_msg[0] = '\0';
    FAULT_FIRST(gpumem_stream_create(ctx, GPUMEM_STREAM_NON_BLOCKING, &s));
    FAULT_FIRST(gpumem_stream_create(ctx, GPUMEM_STREAM_NON_BLOCKING, &t));
    FAULT_FIRST(gpumem_pool_create(ctx, 0, &pool));
    if (pool == NULL)
        goto done;
    FAULT_FIRST(gpumem_pool_allocate(pool, 4000, s, &a));
    FAULT_FIRST(gpumem_pool_allocate(pool, 2 << 20, s, &b));
    if (a != NULL) {
        unsigned char buf[64] = {1};
        FAULT_FIRST(gm_drv_check(dev_write(ptr_of(a), buf, sizeof buf), GM_OP_memcpy, "write"));
        FAULT_FIRST(gpumem_allocation_free(a, s));
        a = NULL;
    }
    if (b != NULL) {
        FAULT_FIRST(gpumem_allocation_free(b, s));
        b = NULL;
    }
    FAULT_FIRST(gpumem_pool_allocate(pool, 4000, t, &c)); /* queries a's event */
    FAULT_FIRST(gpumem_pool_allocate(pool, 2 << 20, t, &d)); /* queries b's event in the store */
    FAULT_FIRST(gpumem_pool_allocate(pool, 4000, s, &a)); /* a again */
    FAULT_FIRST(gpumem_pool_allocate(pool, 0, NULL, &e));
    if (a != NULL) {
        FAULT_FIRST(gpumem_allocation_free(a, NULL));
        a = NULL;
    }
    if (d != NULL) {
        FAULT_FIRST(gpumem_allocation_free(d, t));
        d = NULL;
    }
    FAULT_FIRST(gpumem_pool_free_held(pool));
    /* The out-of-memory ladder on the 64 MiB device: 48 MiB held (one block
     * pending on s), then 32 MiB more. */
    gpumem_allocation *m[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3; i++)
        FAULT_FIRST(gpumem_pool_allocate(pool, 16 << 20, NULL, &m[i]));
    for (int i = 0; i < 3; i++)
        if (m[i] != NULL)
            FAULT_FIRST(gpumem_allocation_free(m[i], i == 0 ? s : NULL));
    FAULT_FIRST(gpumem_pool_allocate(pool, 32 << 20, NULL, &a));
    if (a != NULL) {
        FAULT_FIRST(gpumem_allocation_free(a, NULL));
        a = NULL;
    }
    FAULT_FIRST(gpumem_pool_allocate(pool, 300000, NULL, &a));
    FAULT_FIRST(gpumem_pool_stop_holding(pool));
    if (a != NULL) {
        FAULT_FIRST(gpumem_allocation_free(a, s)); /* straight to the driver, after s */
        a = NULL;
    }
    FAULT_FIRST(gpumem_pool_destroy(pool)); /* c and e are live */
    pool = NULL;
    if (c != NULL) {
        FAULT_FIRST(gpumem_allocation_free(c, t));
        c = NULL;
    }
done:
    if (e != NULL)
        FAULT_FIRST(gpumem_allocation_free(e, NULL));
    if (c != NULL)
        FAULT_FIRST(gpumem_allocation_free(c, NULL));
    if (pool != NULL)
        FAULT_FIRST(gpumem_pool_destroy(pool));
    FAULT_FIRST(gpumem_stream_destroy(s));
    FAULT_FIRST(gpumem_stream_destroy(t));
    return st;
}

static void fault_child(const void *arg, child_result *out)
{
    long k = *(const long *)arg;
    setenv("GPUMEM_SIM_STREAM_DELAY_US", "200000", 1); /* event queries: deterministically not ready */
    setenv("GPUMEM_SIM_MEMORY", "64M", 1);
    if (gpumem_context_create(0, &ctx) != GPUMEM_OK) {
        out->status = -1;
        return;
    }
    uint64_t u0 = used(), calls0 = fault_arm(k);
    out->status = workload();
    out->value[0] = fault_disarm(calls0);
    snprintf(out->text, sizeof out->text, "%s", fault_msg);
    out->value[1] = (long)(used() - u0);
    gpumem_context_release(ctx);
}

void test_faults(void)
{
    fault_walk_all(fault_child, "the pool workload", 21, "device", "cuMemFree");
}

/* A context's final release ends everything the context made for itself
 * (the staging engine's pinned slots and events, a queued download's bounce
 * block, the copy engine's device scratch, its events and side stream, the
 * default stream), whether its memory came from the driver or from a pool
 * plugged in with gpumem_context_set_pool.  The copy engine's scratch once
 * came from that pool and stayed cached with the context: the destroyed
 * pool waited for the block, holding its reference to the context, so the
 * context's release never reached its end.  arg: 0 no pool; 1 a pool set,
 * then unset and destroyed before the release; 2 a pool destroyed while
 * still set.  value[0]: the context's references just before its release,
 * then, once it is released, more than before it: value[1] page-locked
 * bytes, value[2] simulator stream workers, value[3] device bytes. */
static void context_end_child(const void *arg, child_result *out)
{
    int how = *(const int *)arg;
    /* another handle on the device's context, to read its memory after the release */
    if (gpumem_context_create(0, &ctx) != GPUMEM_OK) {
        out->status = -1;
        return;
    }
    uint64_t locked0 = gm_sim_host_locked_bytes(), dev0 = used();
    long workers0 = (long)gm_sim_live_workers();
    enum { N = 25600, Q = 3 << 17 }; /* 200 KiB of doubles; 3 MiB */
    static double src[N], back[N], wide[2 * N], qback[Q];
    for (int i = 0; i < N; i++)
        src[i] = i;
    for (int i = 0; i < 2 * N; i++)
        wide[i] = -1;
    const gpumem_dtype *f64 = gpumem_dtype_builtin(GPUMEM_FLOAT64);
    gpumem_staging_settings saved = {.size = sizeof saved}, s = {sizeof s, 2, 1u << 20, 2, 0};
    gpumem_staging_get(&saved);
    gpumem_status st = gpumem_staging_set(&s);
    gpumem_context *c = NULL;
    gpumem_pool *pool = NULL;
    gpumem_array *h = NULL, *hb = NULL, *hw = NULL, *hwv = NULL, *d = NULL, *d2 = NULL, *d2v = NULL, *dq = NULL,
                 *hq = NULL;
    gpumem_stream *qs = NULL;
    gpumem_slice even = {0, 2 * N, 2};
    int64_t n = N, n2 = 2 * N, q = Q;
    double two = 2.5;
#define DO(call) \
    do { \
        if (st == GPUMEM_OK) \
            st = (call); \
    } while (0)
    DO(gpumem_context_create(0, &c));
    if (how > 0) {
        DO(gpumem_pool_create(c, 0, &pool));
        DO(gpumem_context_set_pool(c, pool));
    }
    DO(gpumem_host_array_wrap(src, 1, &n, NULL, f64, &h));
    DO(gpumem_host_array_wrap(back, 1, &n, NULL, f64, &hb));
    DO(gpumem_host_array_wrap(wide, 1, &n2, NULL, f64, &hw));
    DO(gpumem_array_slice(hw, &even, 1, &hwv));
    DO(gpumem_to_device(c, h, NULL, 0, &d));                      /* staged upload */
    DO(gpumem_array_copy(hwv, d, NULL));                          /* unpacked out of the slots */
    DO(gpumem_device_array(c, 1, &n2, NULL, f64, 'C', NULL, &d2));
    DO(gpumem_array_slice(d2, &even, 1, &d2v));
    DO(gpumem_array_copy(d2v, hwv, NULL));                        /* unpacked on the device: scratch */
    DO(gpumem_device_array(c, 1, &q, NULL, f64, 'C', NULL, &dq));
    DO(gpumem_array_fill(dq, &two, NULL));
    DO(gpumem_host_array_wrap(qback, 1, &q, NULL, f64, &hq));
    DO(gpumem_stream_create(c, 0, &qs));
    DO(gpumem_array_copy(hq, dq, qs));                            /* queued: a bounce block */
    DO(gpumem_array_copy(hb, d2v, qs));                           /* packed on the device: scratch */
    DO(gpumem_stream_synchronize(qs));
#undef DO
    int good = st == GPUMEM_OK;
    for (int i = 0; good && i < N; i++)
        good = back[i] == i && wide[2 * i] == i && wide[2 * i + 1] == -1;
    for (int i = 0; good && i < Q; i++)
        good = qback[i] == 2.5;
    gpumem_array *all[] = {h, hb, hwv, hw, d2v, d2, d, dq, hq};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        gpumem_array_release(all[i]);
    gpumem_stream_destroy(qs);
    gpumem_staging_set(&saved);
    if (how == 1)
        gpumem_context_set_pool(c, NULL);
    gpumem_pool_destroy(pool);
    int refs = 0;
    gpumem_context_refcount(c, &refs);
    out->value[0] = refs;
    gpumem_status rst = gpumem_context_release(c);
    out->status = st != GPUMEM_OK ? (int)st : rst != GPUMEM_OK ? (int)rst : good ? GPUMEM_OK : -2;
    snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
    gpumem_context_flush_deallocations(ctx);
    out->value[1] = (long)(gm_sim_host_locked_bytes() - locked0);
    out->value[2] = (long)gm_sim_live_workers() - workers0;
    out->value[3] = (long)(used() - dev0);
    gpumem_context_release(ctx);
}

void test_context_end(void)
{
    static const char *const how[3] = {"without a pool", "with a pool unset and destroyed before the release",
                                       "with a pool destroyed while still set"};
    for (int i = 0; i < 3; i++) {
        child_result r;
        run_child(context_end_child, &i, &r);
        ok(r.exited && r.exit_code == 0 && r.status == GPUMEM_OK, "staged, packed and queued copies %s: right "
           "values", how[i]);
        if (r.status != GPUMEM_OK)
            diag("  status %d: %s", r.status, r.text);
        is_int(r.value[0], 1, "  the caller's is the context's last reference");
        is_int(r.value[1], 0, "  its release gives back every page-locked byte (slots, bounce block)");
        is_int(r.value[2], 0, "  and ends every simulator stream it made");
        is_int(r.value[3], 0, "  and every device byte (the copy engine's scratch)");
    }
}

/* Runs a TAP section in a child with its own environment; its results
 * continue this process's numbering. */
static void tap_child(const void *arg, child_result *out)
{
    void (*section)(void) = *(void (*const *)(void))arg;
    if (gpumem_context_create(0, &ctx) != GPUMEM_OK)
        bail_out("no context: %s", gpumem_last_error());
    section();
    gpumem_context_release(ctx);
    out->value[0] = tap_run;
    out->value[1] = tap_failed;
}

void run_tap_child(void (*section)(void))
{
    child_result r;
    if (run_child(tap_child, &section, &r) != 0 || !r.exited || r.exit_code != 0)
        bail_out("the child running a section died (exit %d)", r.exit_code);
    tap_run = (int)r.value[0];
    tap_failed = (int)r.value[1];
}
