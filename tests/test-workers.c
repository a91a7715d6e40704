/* The worker pool (lib/workers.c): every item of a task runs exactly once
 * whoever takes it, with the caller taking part or only waiting, from many
 * posting threads at once; a pool in a fork child starts over; the NUMA
 * helpers against a fake sysfs tree; and the staging engine on a machine
 * that the fake tree says has two nodes (workers on the device's node's
 * CPUs, callers leaving the slots to them), copies exact. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gpumem.h>

#include "child.h"
#include "sim.h"
#include "staging.h"
#include "sysfs.h"
#include "tap.h"
#include "lifecycle.h"
#include "workers.h"

#define ITEMS 20000

typedef struct count_task {
    gm_task task;
    atomic_uint next;
    atomic_uchar done[ITEMS];
    atomic_uint by_workers;
} count_task;

static void count_run(gm_task *t, int worker)
{
    count_task *c = (count_task *)t;
    for (;;) {
        unsigned i = atomic_fetch_add(&c->next, 1);
        if (i >= ITEMS)
            return;
        atomic_fetch_add(&c->done[i], 1);
        if (worker >= 0)
            atomic_fetch_add(&c->by_workers, 1);
    }
}

/* What each worker that runs it finds of its own thread: its name, and
 * which signals it blocks. */
typedef struct mask_task {
    gm_task task;
    atomic_int seen, named, blocks_async, takes_faults;
} mask_task;

static void mask_run(gm_task *t, int worker)
{
    mask_task *m = (mask_task *)t;
    if (worker < 0)
        return;
    sigset_t cur;
    char name[16] = "";
    pthread_sigmask(SIG_BLOCK, NULL, &cur);
    pthread_getname_np(pthread_self(), name, sizeof name);
    atomic_fetch_add(&m->seen, 1);
    atomic_fetch_add(&m->named, strncmp(name, "gpumem-work", 11) == 0);
    atomic_fetch_add(&m->blocks_async, sigismember(&cur, SIGINT) == 1 && sigismember(&cur, SIGTERM) == 1 &&
                                           sigismember(&cur, SIGCHLD) == 1 && sigismember(&cur, SIGUSR1) == 1);
    atomic_fetch_add(&m->takes_faults, sigismember(&cur, SIGSEGV) == 0 && sigismember(&cur, SIGBUS) == 0 &&
                                           sigismember(&cur, SIGFPE) == 0 && sigismember(&cur, SIGABRT) == 0);
}

static void *own_main(void *arg)
{
    mask_run(arg, 0);
    return NULL;
}

static count_task *count_new(void)
{
    count_task *c = calloc(1, sizeof *c);
    c->task = GM_TASK_INIT(count_run);
    return c;
}

static int each_once(count_task *c)
{
    for (unsigned i = 0; i < ITEMS; i++)
        if (atomic_load(&c->done[i]) != 1)
            return 0;
    return 1;
}

/* post, take part, join: every item once */
/* A task that n workers must enter together: each waits in it until all
 * n are in (the test's posts wake exactly n). */
typedef struct meet_task {
    gm_task task;
    unsigned n;
    atomic_uint in;
} meet_task;

static void meet_run(gm_task *t, int worker)
{
    meet_task *m = (meet_task *)t;
    if (worker < 0)
        return;
    atomic_fetch_add(&m->in, 1);
    while (atomic_load(&m->in) < m->n)
        sched_yield();
}

/* Waits (no time limit: a hang is a failure) until the pool's parked and
 * polling workers add up to n; the counts. */
static void settle(gm_workers *w, unsigned n, unsigned *parked, unsigned *spinning, unsigned long *futile)
{
    for (;;) {
        gm_workers_counts(w, parked, spinning, futile);
        if (*parked + *spinning == n)
            return;
        usleep(1000);
    }
}

/* Issue 29: a post wakes the workers it wants, not all; only a few idle
 * workers poll. */
static void wakes(void)
{
    gm_workers *w = gm_workers_get(7); /* a pool of its own (no such node: any CPU) */
    unsigned parked, spinning;
    unsigned long futile, before;
    gm_workers_set_spin(0);
    is_int(gm_workers_grow(w, 6), 6, "a pool of 6 workers");
    settle(w, 6, &parked, &spinning, &before);
    is_int(parked, 6, "not polling: all 6 park");
    int good = 1;
    for (int round = 0; round < 20; round++) {
        meet_task m = {.task = GM_TASK_INIT(meet_run), .n = 2};
        gm_task_post(w, &m.task, 2);
        gm_task_wait(w, &m.task);
        good &= atomic_load(&m.in) == 2;
        settle(w, 6, &parked, &spinning, &futile);
    }
    ok(good, "20 tasks for 2 workers each: 2 workers ran each");
    is_int((long)(futile - before), 0, "and no worker was woken for nothing (a post of 2 wakes 2 of the 6)");
    gm_workers_set_spin(300000000L); /* 0.3 s: the pollers are seen */
    meet_task m = {.task = GM_TASK_INIT(meet_run), .n = 6};
    gm_task_post(w, &m.task, 6);
    gm_task_wait(w, &m.task);
    is_int(atomic_load(&m.in), 6, "a task for all 6");
    settle(w, 6, &parked, &spinning, &futile);
    ok(spinning == GM_WORKERS_IDLE_SPINNERS && parked == 6 - GM_WORKERS_IDLE_SPINNERS,
       "afterwards %u poll the queue and %u park (at most %d poll)", spinning, parked, GM_WORKERS_IDLE_SPINNERS);
    gm_workers_set_spin(0);
    for (;;) { /* the pollers give up within 0.3 s */
        gm_workers_counts(w, &parked, &spinning, &futile);
        if (parked == 6)
            break;
        usleep(10000);
    }
    gm_workers_set_spin(-1);
}

static int run_joined(gm_workers *w, unsigned helpers)
{
    count_task *c = count_new();
    gm_task_post(w, &c->task, helpers);
    count_run(&c->task, -1);
    gm_task_join(w, &c->task);
    int good = each_once(c);
    free(c);
    return good;
}

static void *poster(void *arg)
{
    gm_workers *w = arg;
    long good = 1;
    for (int i = 0; i < 40; i++)
        good &= run_joined(w, 1 + (unsigned)(i % 4));
    return (void *)good;
}

static void fork_case(const void *arg, child_result *out)
{
    (void)arg;
    gm_workers *w = gm_workers_get(-1);
    out->value[0] = (long)gm_workers_grow(w, 3);
    count_task *c = count_new();
    gm_task_post(w, &c->task, 3);
    gm_task_wait(w, &c->task); /* the child's workers must do it: they exist */
    out->value[1] = each_once(c);
    out->value[2] = (long)atomic_load(&c->by_workers);
    free(c);
}

/* ---- NUMA ---- */

static int the_cpu; /* one this process may run on: the fake nodes' CPU */

typedef struct cpu_task {
    gm_task task;
    atomic_int workers_seen, elsewhere;
} cpu_task;

static void cpu_run(gm_task *t, int worker)
{
    cpu_task *c = (cpu_task *)t;
    if (worker >= 0) {
        atomic_fetch_add(&c->workers_seen, 1);
        if (sched_getcpu() != the_cpu)
            atomic_fetch_add(&c->elsewhere, 1);
    }
}

/* The fake tree says: nodes 0 and 1, with the_cpu on both, the device (PCI
 * 0000:10:00.0, the simulator's first) on node 1. */
static void numa_case(const void *arg, child_result *out)
{
    const char *root = arg;
    gm_sysfs_root_set(root);
    gpumem_staging_settings s = {sizeof s, 3, 64u << 10, 2, 0};
    gpumem_staging_set(&s);
    gpumem_context *ctx = NULL;
    if ((out->status = gpumem_context_create(0, &ctx)) != GPUMEM_OK) {
        snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
        return;
    }
    out->value[0] = gm_staging_node(ctx);
    /* node 1's workers run on its CPUs */
    gm_workers *w = gm_workers_get(1);
    gm_workers_grow(w, 2);
    cpu_task c = {.task = GM_TASK_INIT(cpu_run)};
    gm_task_post(w, &c.task, 2);
    gm_task_wait(w, &c.task);
    out->value[1] = atomic_load(&c.workers_seen) > 0 && atomic_load(&c.elsewhere) == 0;
    /* copies through the node's workers, exact */
    size_t n = (1u << 20) + 77;
    unsigned char *a = malloc(n), *b = calloc(1, n);
    for (size_t i = 0; i < n; i++)
        a[i] = (unsigned char)(i * 13 + 5);
    int64_t len = (int64_t)n;
    gpumem_array *ha = NULL, *hb = NULL, *d = NULL;
    const gpumem_dtype *u8 = gpumem_dtype_builtin(GPUMEM_UINT8);
    gpumem_host_array_wrap(a, 1, &len, NULL, u8, &ha);
    gpumem_host_array_wrap(b, 1, &len, NULL, u8, &hb);
    out->status = gpumem_to_device(ctx, ha, NULL, 0, &d);
    gpumem_copy_path up = GPUMEM_COPY_PATH_NONE, down = GPUMEM_COPY_PATH_NONE;
    gpumem_debug_last_copy_path(&up);
    if (out->status == GPUMEM_OK)
        out->status = gpumem_copy_to_host(d, hb, NULL);
    gpumem_debug_last_copy_path(&down);
    out->value[2] = out->status == GPUMEM_OK && memcmp(a, b, n) == 0;
    out->value[3] = up == GPUMEM_COPY_PATH_STAGED && down == GPUMEM_COPY_PATH_STAGED;
    snprintf(out->text, sizeof out->text, "%s", out->status ? gpumem_last_error() : "");
    gpumem_array_release(ha);
    gpumem_array_release(hb);
    gpumem_array_release(d);
    gpumem_context_release(ctx);
    free(a);
    free(b);
}

/* ---- failures at any driver call, several threads per copy ---- */

/* With GPUMEM_SIM_FAIL=k: staged copies of many chunks on 3 threads, a
 * strided host side through the slots, a queued download in slabs.
 * value[0]: the k-th call was reached; [1]: right values (or a failure);
 * [2]: page-locked bytes kept after the context's release. */
typedef struct fault_arg {
    long k;
    long spin; /* gm_workers_set_spin's, -1: the default */
} fault_arg;

static void fault_case(const void *arg, child_result *out)
{
    long k = ((const fault_arg *)arg)->k;
    gm_workers_set_spin(((const fault_arg *)arg)->spin);
    char v[32];
    snprintf(v, sizeof v, "%ld", k);
    if (k > 0) /* 0: none fails */
        setenv("GPUMEM_SIM_FAIL", v, 1);
    gpumem_staging_settings s = {sizeof s, 3, 64u << 10, 2, 0};
    gpumem_staging_set(&s);
    gpumem_context *ctx = NULL;
    gpumem_status st = gpumem_context_create(0, &ctx);
    size_t n = (1u << 20) + 24;
    int64_t len = (int64_t)n, half = len / 2;
    unsigned char *a = malloc(n), *b = calloc(1, n), *c = calloc(1, n);
    for (size_t i = 0; i < n; i++)
        a[i] = (unsigned char)(i * 5 + 1);
    const gpumem_dtype *u8 = gpumem_dtype_builtin(GPUMEM_UINT8);
    gpumem_array *ha = NULL, *hb = NULL, *hc = NULL, *hcv = NULL, *d = NULL, *dh = NULL;
    gpumem_stream *qs = NULL;
    gpumem_slice even = {0, 2 * half, 2};
    if (st == GPUMEM_OK) {
        gpumem_context_set_dealloc_limits(ctx, 0, 0.0);
        gpumem_host_array_wrap(a, 1, &len, NULL, u8, &ha);
        gpumem_host_array_wrap(b, 1, &len, NULL, u8, &hb);
        gpumem_host_array_wrap(c, 1, &len, NULL, u8, &hc);
        gpumem_array_slice(hc, &even, 1, &hcv);
        st = gpumem_to_device(ctx, ha, NULL, 0, &d);
        if (st == GPUMEM_OK)
            st = gpumem_array_copy(hb, d, NULL);
        if (st == GPUMEM_OK)
            st = gpumem_device_array(ctx, 1, &half, NULL, u8, 'C', NULL, &dh);
        if (st == GPUMEM_OK)
            st = gpumem_array_copy(dh, hcv, NULL); /* packed into the slots */
        if (st == GPUMEM_OK)
            st = gpumem_stream_create(ctx, 0, &qs);
        if (st == GPUMEM_OK)
            st = gpumem_array_copy(hc, d, qs); /* queued */
        if (st == GPUMEM_OK)
            st = gpumem_stream_synchronize(qs);
    }
    out->status = st;
    out->value[1] = st != GPUMEM_OK || (memcmp(a, b, n) == 0 && memcmp(a, c, n) == 0);
    snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
    uint64_t calls = 0;
    gpumem_debug_driver_calls(NULL, &calls);
    gpumem_debug_fail_call(0, 0);
    out->value[0] = calls >= (uint64_t)k;
    gpumem_array *all[] = {ha, hb, hcv, hc, d, dh};
    for (size_t i = 0; i < 6; i++)
        gpumem_array_release(all[i]);
    if (qs != NULL)
        gpumem_stream_destroy(qs);
    if (ctx != NULL) {
        gpumem_context_flush_deallocations(ctx);
        gpumem_context_release(ctx);
    }
    out->value[2] = (long)gm_sim_host_locked_bytes();
    free(a);
    free(b);
    free(c);
}

static int failed_free(const char *text)
{
    return strstr(text, "cuMemFreeHost failed") != NULL || strstr(text, "cuEventDestroy failed") != NULL ||
           strstr(text, "cuStreamDestroy failed") != NULL;
}

int main(void)
{
    /* the cases in child processes first, while this process has no threads
     * (ThreadSanitizer follows no fork of a process with threads) */
    child_result r;
    run_child(fork_case, NULL, &r);
    ok(r.exited && r.exit_code == 0 && r.value[0] == 3 && r.value[1] == 1 && r.value[2] == ITEMS,
       "a pool made in a fresh process: 3 workers, every item once, by the workers alone");

    /* CPU lists */
    cpu_set_t set;
    ok(gm_cpulist_parse("0-3,8,10-11\n", &set) && CPU_COUNT(&set) == 7 && CPU_ISSET(3, &set) &&
           CPU_ISSET(8, &set) && CPU_ISSET(11, &set) && !CPU_ISSET(9, &set),
       "cpulist 0-3,8,10-11");
    ok(!gm_cpulist_parse("3-1", &set) && !gm_cpulist_parse("a", &set) && !gm_cpulist_parse("", &set) &&
           !gm_cpulist_parse("1,,2", &set) && !gm_cpulist_parse("1-", &set),
       "malformed or empty lists are refused");

    char root[] = "/tmp/gpumem-sysfs-XXXXXX";
    if (mkdtemp(root) == NULL)
        bail_out("mkdtemp");
    is_int(gm_numa_nodes(root), 0, "an empty tree: no nodes");
    the_cpu = sysfs_two_nodes(root);
    sysfs_put(root, "bus/pci/devices/0000:11:00.0", "numa_node", "-1\n");
    is_int(gm_numa_nodes(root), 2, "two nodes");
    ok(gm_numa_node_cpus(root, 1, &set) && CPU_COUNT(&set) == 1 && CPU_ISSET(the_cpu, &set), "node 1: CPU %d",
       the_cpu);
    is_int(gm_numa_pci_node(root, "0000:10:00.0"), 1, "the device's node");
    is_int(gm_numa_pci_node(root, "0000:11:00.0"), -1, "a device of no node");
    is_int(gm_numa_pci_node(root, "0000:12:00.0"), -1, "an unknown device");

    run_child(numa_case, root, &r);
    ok(r.exited && r.exit_code == 0 && r.status == GPUMEM_OK, "two nodes: the engine works (%s)", r.text);
    if (test_on_sim()) /* a GPU's bus id is not in the fake sysfs tree */
        is_int(r.value[0], 1, "its workers and slots are on the device's node");
    else
        skip(1, "the fake sysfs tree names the simulator's bus id, not this GPU's");
    ok(r.value[1] == 1, "the node's workers run on its CPUs only");
    ok(r.value[2] == 1 && r.value[3] == 1, "1 MiB + 77 bytes up and down through the node's workers: staged, exact");
    if (test_on_sim()) {
        int clean = 1;
        long k;
        for (k = 1; k < 2000; k++) {
            fault_arg fa = {k, 0}; /* no polling: the same calls in every run */
            run_child(fault_case, &fa, &r);
            if (!r.exited || r.exit_code != 0 || !r.value[1] || (r.value[2] != 0 && !failed_free(r.text))) {
                clean = 0;
                diag("k=%ld: exit %d, status %d, right %ld, %ld locked bytes kept: %s", k, r.exit_code, r.status,
                     r.value[1], r.value[2], r.text);
            }
            if (!r.value[0])
                break;
        }
        ok(clean && k > 20, "each of the %ld driver calls of threaded staged, strided and queued copies failed in "
                            "turn: no crash or hang, an error or the right bytes, no page-locked memory kept", k - 1);
        /* the threads polling: the waits for slots and streams query the
         * driver before they wait (not while a call is armed to fail: the
         * queries' number depends on timing), the workers poll for tasks */
        fault_arg none = {0, 200000};
        run_child(fault_case, &none, &r);
        ok(r.exited && r.exit_code == 0 && r.status == GPUMEM_OK && r.value[1] == 1 && r.value[2] == 0,
           "polling for 200 us (slots and streams queried before the driver's waits): the same copies, exact (%s)",
           r.status != GPUMEM_OK ? r.text : "");
        clean = 1;
        for (k = 1; k < 2000; k++) {
            fault_arg fa = {k, 200000};
            run_child(fault_case, &fa, &r);
            if (!r.exited || r.exit_code != 0 || !r.value[1] || (r.value[2] != 0 && !failed_free(r.text))) {
                clean = 0;
                diag("polling, k=%ld: exit %d, status %d, right %ld, %ld locked bytes kept: %s", k, r.exit_code,
                     r.status, r.value[1], r.value[2], r.text);
            }
            if (!r.value[0])
                break;
        }
        ok(clean && k > 20, "polling for 200 us: each of the %ld driver calls failed in turn: no crash or hang, an "
                            "error or the right bytes, no page-locked memory kept", k - 1);
    } else {
        skip(3, "fault injection runs on the simulator");
    }
    gm_workers *w = gm_workers_get(-1);
    ok(w != NULL && gm_workers_get(-1) == w, "one pool per node, made once");
    is_int(gm_workers_node(w), -1, "the pool of no node");
    unsigned have = gm_workers_grow(w, 3);
    is_int(have, 3, "grown to 3 workers");
    is_int(gm_workers_grow(w, 2), 3, "asking for fewer keeps them");
    ok(gm_workers_grow(w, 1000) <= GM_WORKERS_MAX, "at most %d", GM_WORKERS_MAX);
    ok(run_joined(w, 0), "a task the caller runs alone: every item once");
    ok(run_joined(w, 3), "the caller and 3 workers: every item once");
    count_task *c = count_new();
    gm_task_post(w, &c->task, 2);
    gm_task_wait(w, &c->task);
    ok(each_once(c) && atomic_load(&c->by_workers) == ITEMS, "a task left to 2 workers: every item once, by them");
    free(c);
    mask_task m = {.task = GM_TASK_INIT(mask_run)};
    sigset_t none, before, after;
    sigemptyset(&none);
    pthread_sigmask(SIG_SETMASK, &none, &before); /* the workers' mask is not the poster's */
    gm_task_post(w, &m.task, 3);
    gm_task_wait(w, &m.task);
    pthread_sigmask(SIG_SETMASK, &before, NULL);
    ok(atomic_load(&m.seen) == 3 && atomic_load(&m.named) == 3, "the workers are named gpumem-work<N>");
    ok(atomic_load(&m.blocks_async) == 3 && atomic_load(&m.takes_faults) == 3,
       "they block SIGINT, SIGTERM, SIGCHLD and SIGUSR1, which reach the program's threads, and take faults");
    /* a thread of its own (the trace's writer starts so) */
    pthread_sigmask(SIG_SETMASK, &none, &before);
    pthread_t own;
    mask_task m2 = {.task = GM_TASK_INIT(mask_run)};
    int rc = gm_thread_start(&own, "gpumem-work-t", own_main, &m2);
    pthread_sigmask(SIG_BLOCK, NULL, &after);
    pthread_sigmask(SIG_SETMASK, &before, NULL);
    if (rc == 0)
        pthread_join(own, NULL);
    ok(rc == 0 && atomic_load(&m2.seen) == 1 && atomic_load(&m2.named) == 1 && atomic_load(&m2.blocks_async) == 1 &&
           atomic_load(&m2.takes_faults) == 1,
       "gm_thread_start: the thread is named, blocks the asynchronous signals and takes faults");
    ok(!sigismember(&after, SIGINT) && !sigismember(&after, SIGTERM), "and the caller's own mask is as it was");

    pthread_t tid[8];
    for (int i = 0; i < 8; i++)
        pthread_create(&tid[i], NULL, poster, w);
    long all = 1;
    for (int i = 0; i < 8; i++) {
        void *g = NULL;
        pthread_join(tid[i], &g);
        all &= (long)g;
    }
    ok(all, "8 threads posting 40 tasks each at once: every item of every task once");

    /* the same with the workers and the joiners polling before they sleep
     * (the default on machines of 4 CPUs or more, workers.h) */
    wakes();
    /* the process-lifetime hooks go through lib/wiring.c's table */
    static const gm_life_hook stray = {.what = "not in the table"};
    is_int(gm_life_arm(&stray), ENOENT, "a hook that lib/wiring.c's table does not list is not armed");
    is_int(gm_life_arm(&gm_workers_life), 0, "the pools' hook is armed (again: the first result)");
    long spin = gm_workers_spin();
    gm_workers_set_spin(200000);
    is_int(gm_workers_spin(), 200000, "polling for 200 us before sleeping");
    ok(run_joined(w, 3), "the caller and 3 polling workers: every item once");
    c = count_new();
    gm_task_post(w, &c->task, 2);
    gm_task_wait(w, &c->task);
    ok(each_once(c) && atomic_load(&c->by_workers) == ITEMS, "a task left to 2 polling workers: every item once");
    free(c);
    for (int i = 0; i < 8; i++)
        pthread_create(&tid[i], NULL, poster, w);
    all = 1;
    for (int i = 0; i < 8; i++) {
        void *g = NULL;
        pthread_join(tid[i], &g);
        all &= (long)g;
    }
    ok(all, "8 threads posting 40 tasks each at once to polling workers: every item of every task once");
    gm_workers_set_spin(0);
    ok(run_joined(w, 3), "no polling: every item once");
    gm_workers_set_spin(-1);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    ok(gm_workers_spin() == spin && spin == (cpus >= GM_WORKERS_SPIN_CPUS ? GM_WORKERS_SPIN_NS : 0),
       "-1 restores the default: %ld ns with %ld CPUs", spin, cpus);

    const char *san = getenv("GPUMEM_TEST_SANITIZER");
    if (san != NULL && strcmp(san, "tsan") == 0) {
        skip(1, "fork of a process with threads: ThreadSanitizer does not follow it");
    } else {
        run_child(fork_case, NULL, &r);
        ok(r.exited && r.exit_code == 0 && r.value[0] == 3 && r.value[1] == 1 && r.value[2] == ITEMS,
           "in a fork child of a process with workers: new workers, every item once");
    }

    sysfs_remove(root);
    done_testing();
    return exit_status();
}
