/* The pieces of copies between devices below the public calls:
 *  - gm_staging_peer_run (staging.h): the ring of pinned slots and events of
 *    two contexts' engines, run on the calling thread when the engine has
 *    no NUMA node and on a worker of the node (on its CPUs) when it has
 *    one (a fake sysfs tree puts the simulator's device 0 on node 1); a
 *    failing run's status and message come back to the caller, and the
 *    next run works;
 *  - the simulator's rule that a kernel may touch another device's memory
 *    only once its context has peer access to that device (as on a GPU,
 *    where the access faults).
 * Internal test; on a GPU the ring runs, the simulator's rules are skipped. */
#include "config.h"

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gpumem.h>

#include "arrays.h"
#include "child.h"
#include "context.h"
#include "pack_calls.h"
#include "copy_peer.h"
#include "copyplan.h"
#include "error.h"
#include "staging.h"
#include "sysfs.h"
#include "tap.h"
#include "workers.h"

enum { N = 3000 }; /* int32: 12000 bytes, in 64 KiB slots */

static const gpumem_dtype *i32(void)
{
    return gpumem_dtype_builtin(GPUMEM_INT32);
}

static uint64_t dev_ptr(gpumem_array *a)
{
    uint64_t p = 0;
    gpumem_array_device_pointer(a, &p);
    return p;
}

/* What a run saw, and what it did: N int32 from src to dst through slot 0. */
typedef struct ring_run {
    gpumem_context *c0, *c1;
    gpumem_array *src, *dst;
    pthread_t caller;
    bool fail;          /* return an error instead */
    bool on_caller;     /* ran on the calling thread */
    int cpu;
    unsigned n;
    size_t bytes;
    bool events;        /* every event there, slots distinct and page-aligned */
} ring_run;

static gpumem_status ring_fn(void *arg, const gm_stage_ring *r)
{
    ring_run *x = arg;
    x->on_caller = pthread_equal(pthread_self(), x->caller);
    x->cpu = sched_getcpu();
    x->n = r->n;
    x->bytes = r->bytes;
    x->events = r->n >= 2;
    for (unsigned i = 0; i < r->n; i++)
        x->events &= r->down[i] != NULL && r->up[i] != NULL && ((uintptr_t)r->slot[i] & 4095) == 0 &&
                     (i == 0 || r->slot[i] != r->slot[i - 1]);
    if (x->fail)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "ring_fn: failing as asked");
    gm_cu_deviceptr slot = (gm_cu_deviceptr)(uintptr_t)r->slot[0];
    gm_dctx *a = x->c0->dctx, *b = x->c1->dctx;
    const char *what = "ring_fn";
    gpumem_status st = gm_drv_check(GM_DRV(memcpy, a, slot, dev_ptr(x->src), N * 4, NULL, 1), GM_OP_memcpy, what);
    if (st == GPUMEM_OK)
        st = gm_drv_check(GM_DRV(event_record, a, r->down[0], NULL), GM_OP_event_record, what);
    if (st == GPUMEM_OK)
        st = gm_drv_check(GM_DRV(stream_wait_event, b, NULL, r->down[0]), GM_OP_stream_wait_event, what);
    if (st == GPUMEM_OK)
        st = gm_drv_check(GM_DRV(memcpy, b, dev_ptr(x->dst), slot, N * 4, NULL, 1), GM_OP_memcpy, what);
    if (st == GPUMEM_OK)
        st = gm_drv_check(GM_DRV(event_record, b, r->up[0], NULL), GM_OP_event_record, what);
    gpumem_status s1 = gm_drv_check(GM_DRV(stream_synchronize, a, NULL), GM_OP_stream_synchronize, what);
    gpumem_status s2 = gm_drv_check(GM_DRV(stream_synchronize, b, NULL), GM_OP_stream_synchronize, what);
    return st != GPUMEM_OK ? st : s1 != GPUMEM_OK ? s1 : s2;
}

/* A device array of N int32 holding base + i. */
static gpumem_array *filled(gpumem_context *ctx, int32_t base)
{
    return device_iota(ctx, 1, (int64_t[]){N}, base);
}

static bool holds(gpumem_array *d, int32_t base)
{
    int32_t v[N];
    int64_t n = N;
    gpumem_array *h = NULL;
    bool good = gpumem_host_array_wrap(v, 1, &n, NULL, i32(), &h) == GPUMEM_OK && gpumem_array_copy(h, d, NULL) ==
                                                                                  GPUMEM_OK;
    for (int i = 0; good && i < N; i++)
        good = v[i] == base + i;
    gpumem_array_release(h);
    return good;
}

/* One ring run from device 0 to 1 (fail: fn fails): value[0] bit 0 ran on
 * the caller, bit 1 the values arrived, bit 2 the ring's shape (2 slots of
 * 64 KiB, events); value[1] its CPU; value[2] the node of device 0's
 * engine; the status and message of the run (of the second, good, run
 * after a failing one: value[3] 1 when that one worked). */
static void ring_case(const void *arg, child_result *out)
{
    const char *root = arg;
    if (root != NULL)
        gm_sysfs_root_set(root);
    setenv("GPUMEM_SIM_DEVICES", "2", 1);
    gpumem_staging_settings s = {sizeof s, 3, 64u << 10, 2, 0};
    gpumem_staging_set(&s);
    ring_run x = {.caller = pthread_self()};
    if ((out->status = gpumem_context_create(0, &x.c0)) != GPUMEM_OK ||
        (out->status = gpumem_context_create(1, &x.c1)) != GPUMEM_OK) {
        snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
        return;
    }
    x.src = filled(x.c0, 100);
    x.dst = filled(x.c1, -5000);
    gm_staging *e0 = NULL, *e1 = NULL;
    gm_staging_acquire(x.c0, &e0);
    gm_staging_acquire(x.c1, &e1);
    x.fail = true;
    gpumem_status st = gm_staging_peer_run(e0, e1, ring_fn, &x, "ring");
    out->status = st;
    snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
    x.fail = false;
    st = gm_staging_peer_run(e0, e1, ring_fn, &x, "ring");
    out->value[3] = st == GPUMEM_OK;
    if (st != GPUMEM_OK)
        snprintf(out->text, sizeof out->text, "the run after: %s", gpumem_last_error());
    out->value[0] = (x.on_caller ? 1 : 0) | (st == GPUMEM_OK && holds(x.dst, 100) ? 2 : 0) |
                    (x.n == 2 && x.bytes == (64u << 10) && x.events ? 4 : 0);
    out->value[1] = x.cpu;
    out->value[2] = gm_staging_node(x.c0);
    gm_staging_release(e0);
    gm_staging_release(e1);
    gpumem_array_release(x.src);
    gpumem_array_release(x.dst);
    gpumem_context_release(x.c1);
    gpumem_context_release(x.c0);
}

/* A pack kernel of device 0's context writing device 1's memory (and
 * device 2's): value[0] the launch's status before peer access, value[1]
 * after the library enabled it for 0 and 1 (a copy's check), value[2] the
 * values written, value[3] device 2's launch, still without access. */
static void kernel_case(const void *arg, child_result *out)
{
    (void)arg;
    setenv("GPUMEM_SIM_DEVICES", "3", 1);
    gpumem_context *c[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3; i++)
        if ((out->status = gpumem_context_create(i, &c[i])) != GPUMEM_OK)
            return;
    gpumem_array *a = filled(c[0], 7), *b = filled(c[1], 0), *z = filled(c[2], 0);
    gm_pack_kernels *k = NULL;
    gm_pack_plan plan;
    int64_t shape[1] = {N}, st4[1] = {4};
    if ((out->status = gm_pack_kernels_get(c[0], "test-peer-staging", &k)) != GPUMEM_OK || k == NULL ||
        (out->status = gm_pack_plan_make(1, shape, st4, st4, 4, dev_ptr(a), dev_ptr(b), false, &plan)) != GPUMEM_OK) {
        snprintf(out->text, sizeof out->text, "setting up: %s", gpumem_last_error());
        return;
    }
    out->value[0] = gm_pack_launch_on(k, &plan, dev_ptr(a), dev_ptr(b), NULL, "before");
    snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
    bool ready = false;
    gm_copy_peer_ready("test", b, a, &ready);
    out->value[1] = ready ? (long)gm_pack_launch_on(k, &plan, dev_ptr(a), dev_ptr(b), NULL, "after") : -1;
    gpumem_context_synchronize(c[0]);
    out->value[2] = holds(b, 7);
    out->value[3] = gm_pack_launch_on(k, &plan, dev_ptr(a), dev_ptr(z), NULL, "device 2");
    gm_pack_kernels_put(k);
    gpumem_array_release(a);
    gpumem_array_release(b);
    gpumem_array_release(z);
    for (int i = 2; i >= 0; i--)
        gpumem_context_release(c[i]);
}

int main(void)
{
    child_result r;
    if (!test_on_sim()) {
        if (child_device_count() < 2)
            plan_skip_all("needs two devices");
    }

    run_child(ring_case, NULL, &r);
    ok(r.exited && r.exit_code == 0 && r.value[3] == 1, "a ring run from device 0 to device 1 works (%s)", r.text);
    is_int(r.status, GPUMEM_ERROR_INVALID_VALUE, "a failing one gives its status");
    like(r.text, "failing as asked", "and its message");
    ok(r.value[0] & 2, "the bytes arrive through slot 0, ordered by its events");
    ok(r.value[0] & 4, "two slots of 64 KiB, page-aligned, each with an event of each context");
    if (r.value[2] < 0)
        ok(r.value[0] & 1, "no NUMA node: on the calling thread");
    else
        skip(1, "this machine's device 0 has a NUMA node");

    if (test_on_sim()) {
        char root[] = "/tmp/gpumem-sysfs-XXXXXX";
        if (mkdtemp(root) == NULL)
            bail_out("mkdtemp");
        int the_cpu = sysfs_two_nodes(root);
        run_child(ring_case, root, &r);
        ok(r.exited && r.exit_code == 0 && r.value[3] == 1 && (r.value[0] & 2), "with device 0 on node 1: works (%s)",
           r.text);
        is_int(r.value[2], 1, "device 0's engine is on node 1");
        ok(!(r.value[0] & 1) && r.value[1] == the_cpu, "the run is a worker's of node 1, on its CPU");
        like(r.text, "failing as asked", "a failing run's message comes back from the worker");
        sysfs_remove(root);

        run_child(kernel_case, NULL, &r);
        ok(r.exited && r.exit_code == 0, "kernels and other devices' memory: ran (%s)", r.text);
        is_int(r.value[0], GPUMEM_ERROR_DRIVER, "a kernel of device 0 writing device 1's memory without peer access "
                                                "is refused");
        like(r.text, "CUDA_ERROR_ILLEGAL_ADDRESS", "as an illegal address");
        is_int(r.value[1], GPUMEM_OK, "once peer access is on, it runs");
        ok(r.value[2] == 1, "and writes device 1's memory");
        is_int(r.value[3], GPUMEM_ERROR_DRIVER, "device 2's memory, without access, is still refused");
    } else {
        skip(10, "the fake NUMA tree and the kernel rules are the simulator's");
    }
    done_testing();
    return exit_status();
}
