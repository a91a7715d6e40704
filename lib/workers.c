/*
 * workers.c - the library's one pool of worker threads (workers.h): per
 * NUMA node, made on first use, grown to what is asked, stopped at exit,
 * emptied in a fork child.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle.h"
#include "workers.h"

#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#elif defined(__aarch64__)
#define CPU_RELAX() __asm__ __volatile__("yield" ::: "memory")
#else
#define CPU_RELAX() ((void)0)
#endif

#define NODES_MAX 64 /* pools of nodes 0 .. NODES_MAX - 1, and one of no node */

struct gm_workers {
    int node;
    pthread_mutex_t mu;
    pthread_cond_t idle;  /* a worker left a task */
    gm_task *head, *tail; /* tasks with want > 0 */
    atomic_uint queued;   /* tasks between head and tail, polled by spinning workers */
    unsigned n;           /* workers made */
    /* parked workers: each sleeps on its own condition variable, and a
     * post wakes as many as it wants, the last parked first (the warmest) */
    pthread_cond_t wake[GM_WORKERS_MAX];
    bool parked[GM_WORKERS_MAX]; /* worker i sleeps until a post (or stop) clears it */
    unsigned park[GM_WORKERS_MAX]; /* the parked workers' indexes, a stack */
    unsigned nparked;
    atomic_uint spinning; /* workers polling the queue (at most GM_WORKERS_IDLE_SPINNERS) */
    atomic_ulong futile;  /* wakes that found no task */
    atomic_uint have;     /* n, read without the lock */
    pthread_t tid[GM_WORKERS_MAX];
    bool stop;
};

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;

void gm_spin_mutex_init(pthread_mutex_t *mu)
{
#ifdef PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP
    pthread_mutexattr_t a;
    if (pthread_mutexattr_init(&a) == 0) {
        bool ok = pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP) == 0 && pthread_mutex_init(mu, &a) == 0;
        pthread_mutexattr_destroy(&a);
        if (ok)
            return;
    }
#endif
    pthread_mutex_init(mu, NULL);
}
static _Atomic(gm_workers *) pools[NODES_MAX + 1];
static atomic_bool stopping;
static pthread_once_t arm_once = PTHREAD_ONCE_INIT;
static char sysfs_root[256] = GM_SYSFS_ROOT;
static pthread_mutex_t root_mu = PTHREAD_MUTEX_INITIALIZER;

bool gm_workers_stopping(void)
{
    return atomic_load_explicit(&stopping, memory_order_relaxed);
}

/* ---- spinning ------------------------------------------------------------------------------ */

static atomic_long spin_ns = -1; /* -1: the default, not yet known */

void gm_workers_set_spin(long ns)
{
    atomic_store_explicit(&spin_ns, ns < 0 ? -1 : ns, memory_order_relaxed);
}

long gm_workers_spin(void)
{
    long ns = atomic_load_explicit(&spin_ns, memory_order_relaxed);
    if (ns >= 0)
        return ns;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    ns = cpus >= GM_WORKERS_SPIN_CPUS ? GM_WORKERS_SPIN_NS : 0;
    long unset = -1; /* a concurrent gm_workers_set_spin wins */
    atomic_compare_exchange_strong_explicit(&spin_ns, &unset, ns, memory_order_relaxed, memory_order_relaxed);
    return atomic_load_explicit(&spin_ns, memory_order_relaxed);
}

static long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long)t.tv_sec * 1000000000L + t.tv_nsec;
}

/* Polls until *v != 0 (want_zero: == 0) or the pools stop, for at most ns;
 * whether it saw it. */
static bool spin_on(atomic_uint *v, bool want_zero, long ns)
{
    long until = 0;
    for (unsigned i = 0;; i++) {
        unsigned x = atomic_load_explicit(v, memory_order_acquire);
        if ((x == 0) == want_zero)
            return true;
        if (gm_workers_stopping())
            return false;
        CPU_RELAX();
        if ((i & 63) == 0) { /* the clock now and then (no sched_yield: workers.h) */
            long t = now_ns();
            if (until == 0)
                until = t + ns;
            else if (t >= until)
                return false;
        }
    }
}

bool gm_workers_poll(const atomic_uint *v, unsigned old, long ns)
{
    long until = 0;
    for (unsigned i = 0;; i++) {
        if (atomic_load_explicit(v, memory_order_acquire) != old)
            return true;
        CPU_RELAX();
        if ((i & 63) == 0) {
            long t = now_ns();
            if (until == 0)
                until = t + ns;
            else if (t >= until)
                return false;
        }
    }
}

bool gm_workers_poll_until(bool (*done)(void *arg), void *arg, long ns)
{
    long until = now_ns() + ns;
    for (;;) {
        if (done(arg))
            return true;
        for (int i = 0; i < 32; i++)
            CPU_RELAX();
        if (now_ns() >= until)
            return false;
    }
}

/* ---- fork and exit ------------------------------------------------------------------------ */

static void fork_prepare(void)
{
    pthread_mutex_lock(&reg_mu);
    for (int i = 0; i <= NODES_MAX; i++) {
        gm_workers *w = atomic_load_explicit(&pools[i], memory_order_relaxed);
        if (w != NULL)
            pthread_mutex_lock(&w->mu);
    }
}

static void fork_parent(void)
{
    for (int i = NODES_MAX; i >= 0; i--) {
        gm_workers *w = atomic_load_explicit(&pools[i], memory_order_relaxed);
        if (w != NULL)
            pthread_mutex_unlock(&w->mu);
    }
    pthread_mutex_unlock(&reg_mu);
}

/* The child has none of the parent's workers, nor the callers of its
 * tasks: every pool starts over, empty. */
static void fork_child(void)
{
    for (int i = NODES_MAX; i >= 0; i--) {
        gm_workers *w = atomic_load_explicit(&pools[i], memory_order_relaxed);
        if (w == NULL)
            continue;
        gm_spin_mutex_init(&w->mu);
        pthread_cond_init(&w->idle, NULL);
        for (int k = 0; k < GM_WORKERS_MAX; k++) {
            pthread_cond_init(&w->wake[k], NULL);
            w->parked[k] = false;
        }
        w->nparked = 0;
        atomic_store_explicit(&w->spinning, 0, memory_order_relaxed);
        w->head = w->tail = NULL;
        atomic_store_explicit(&w->queued, 0, memory_order_relaxed);
        w->n = 0;
        atomic_store_explicit(&w->have, 0, memory_order_relaxed);
        w->stop = false;
    }
    pthread_mutex_init(&reg_mu, NULL);
    pthread_mutex_init(&root_mu, NULL);
}

/* At exit (or dlclose): the workers leave, so that none runs the library's
 * code once it is gone. */
static void workers_fini(void)
{
    atomic_store_explicit(&stopping, true, memory_order_relaxed);
    pthread_mutex_lock(&reg_mu);
    for (int i = 0; i <= NODES_MAX; i++) {
        gm_workers *w = atomic_load_explicit(&pools[i], memory_order_relaxed);
        if (w == NULL)
            continue;
        pthread_mutex_lock(&w->mu);
        w->stop = true;
        while (w->nparked > 0) {
            unsigned k = w->park[--w->nparked];
            w->parked[k] = false;
            pthread_cond_signal(&w->wake[k]);
        }
        pthread_cond_broadcast(&w->idle);
        unsigned n = w->n;
        w->n = 0;
        atomic_store_explicit(&w->have, 0, memory_order_relaxed);
        pthread_mutex_unlock(&w->mu);
        for (unsigned k = 0; k < n; k++)
            pthread_join(w->tid[k], NULL);
    }
    pthread_mutex_unlock(&reg_mu);
}

/* The hooks (lifecycle.h), armed with the first pool; the unload runs armed or not. */
const gm_life_hook gm_workers_life = {
    .what = "the worker pools",
    .fork_prepare = fork_prepare,
    .fork_parent = fork_parent,
    .fork_child = fork_child,
    .at_unload = workers_fini,
};

static void arm(void)
{
    (void)gm_life_arm(&gm_workers_life);
}

/* ---- the pool ------------------------------------------------------------------------------- */

static void dequeue(gm_workers *w, gm_task *t)
{
    gm_task **p = &w->head, *prev = NULL;
    while (*p != NULL && *p != t) {
        prev = *p;
        p = &(*p)->next;
    }
    if (*p == t) {
        *p = t->next;
        if (w->tail == t)
            w->tail = prev;
    }
    t->next = NULL;
    if (t->queued)
        atomic_fetch_sub_explicit(&w->queued, 1, memory_order_relaxed);
    t->queued = false;
}

/* ---- threads ------------------------------------------------------------------------------- */

/* What a new thread takes from its creator, on the creator's stack: the
 * creator waits until the thread has taken it (a block in flight would be
 * lost to a fork that came before the thread ran: valgrind saw the child
 * of test-trace's fork lose one). */
typedef struct thread_start {
    void *(*fn)(void *);
    void *arg;
    char name[16];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool taken;
} thread_start;

static void *thread_main(void *arg)
{
    thread_start *s = arg;
    void *(*fn)(void *) = s->fn;
    void *fn_arg = s->arg;
    char name[16];
    memcpy(name, s->name, sizeof name);
    pthread_mutex_lock(&s->mu);
    s->taken = true;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu); /* s is the creator's again */
    (void)pthread_setname_np(pthread_self(), name);
    return fn(fn_arg);
}

int gm_thread_start(pthread_t *tid, const char *name, void *(*fn)(void *), void *arg)
{
    thread_start t = {.fn = fn, .arg = arg, .taken = false};
    snprintf(t.name, sizeof t.name, "%s", name);
    pthread_mutex_init(&t.mu, NULL);
    pthread_cond_init(&t.cv, NULL);
    /* the new thread inherits the mask in force at its creation */
    sigset_t block, old;
    sigfillset(&block);
    static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT, SIGSYS};
    for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++)
        sigdelset(&block, faults[i]);
    int masked = pthread_sigmask(SIG_BLOCK, &block, &old) == 0;
    int rc = pthread_create(tid, NULL, thread_main, &t);
    if (masked)
        (void)pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc == 0) {
        pthread_mutex_lock(&t.mu);
        while (!t.taken)
            pthread_cond_wait(&t.cv, &t.mu);
        pthread_mutex_unlock(&t.mu);
    }
    pthread_cond_destroy(&t.cv);
    pthread_mutex_destroy(&t.mu);
    return rc;
}

/* ---- the workers --------------------------------------------------------------------------- */

typedef struct start {
    gm_workers *w;
    int index;
} start;

static void *worker_main(void *arg)
{
    start s = *(start *)arg;
    free(arg);
    gm_workers *w = s.w;
    if (w->node >= 0) { /* on the node's CPUs: what it allocates first lives there */
        cpu_set_t set;
        if (gm_numa_node_cpus(gm_sysfs_root(), w->node, &set))
            (void)pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    }
    unsigned me = (unsigned)s.index;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        /* poll a while before sleeping, a few workers only (workers.h) */
        if (!w->stop && w->head == NULL &&
            atomic_load_explicit(&w->spinning, memory_order_relaxed) < GM_WORKERS_IDLE_SPINNERS) {
            long spin = gm_workers_spin();
            if (spin > 0) {
                atomic_fetch_add_explicit(&w->spinning, 1, memory_order_relaxed);
                pthread_mutex_unlock(&w->mu);
                (void)spin_on(&w->queued, false, spin);
                pthread_mutex_lock(&w->mu);
                atomic_fetch_sub_explicit(&w->spinning, 1, memory_order_relaxed);
            }
        }
        while (!w->stop && w->head == NULL) {
            w->parked[me] = true;
            w->park[w->nparked++] = me;
            while (w->parked[me])
                pthread_cond_wait(&w->wake[me], &w->mu);
            if (!w->stop && w->head == NULL)
                atomic_fetch_add_explicit(&w->futile, 1, memory_order_relaxed);
        }
        if (w->stop)
            break;
        gm_task *t = w->head;
        t->want--;
        atomic_fetch_add_explicit(&t->active, 1, memory_order_relaxed);
        if (t->want == 0)
            dequeue(w, t);
        pthread_mutex_unlock(&w->mu);
        t->fn(t, s.index);
        pthread_mutex_lock(&w->mu);
        /* t may be gone once this is 0 (a spinning joiner does not take the lock) */
        if (atomic_fetch_sub_explicit(&t->active, 1, memory_order_acq_rel) == 1)
            pthread_cond_broadcast(&w->idle);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

gm_workers *gm_workers_get(int node)
{
    if (node < -1 || node >= NODES_MAX)
        node = -1;
    gm_workers *w = atomic_load_explicit(&pools[node + 1], memory_order_acquire);
    if (w != NULL)
        return w;
    pthread_once(&arm_once, arm);
    pthread_mutex_lock(&reg_mu);
    w = atomic_load_explicit(&pools[node + 1], memory_order_relaxed);
    if (w == NULL && (w = calloc(1, sizeof *w)) != NULL) {
        w->node = node;
        gm_spin_mutex_init(&w->mu);
        pthread_cond_init(&w->idle, NULL);
        for (int k = 0; k < GM_WORKERS_MAX; k++)
            pthread_cond_init(&w->wake[k], NULL);
        atomic_store_explicit(&pools[node + 1], w, memory_order_release);
    }
    pthread_mutex_unlock(&reg_mu);
    return w;
}

int gm_workers_node(const gm_workers *w)
{
    return w->node;
}

void gm_workers_counts(gm_workers *w, unsigned *parked, unsigned *spinning, unsigned long *futile)
{
    pthread_mutex_lock(&w->mu);
    *parked = w->nparked;
    pthread_mutex_unlock(&w->mu);
    *spinning = atomic_load_explicit(&w->spinning, memory_order_relaxed);
    *futile = atomic_load_explicit(&w->futile, memory_order_relaxed);
}

unsigned gm_workers_grow(gm_workers *w, unsigned n)
{
    if (n > GM_WORKERS_MAX)
        n = GM_WORKERS_MAX;
    unsigned have = atomic_load_explicit(&w->have, memory_order_relaxed);
    if (have >= n)
        return have;
    pthread_mutex_lock(&w->mu);
    while (w->n < n && !w->stop) {
        start *s = malloc(sizeof *s);
        if (s == NULL)
            break;
        *s = (start){w, (int)w->n};
        char name[16];
        snprintf(name, sizeof name, "gpumem-work%u", w->n);
        if (gm_thread_start(&w->tid[w->n], name, worker_main, s) != 0) {
            free(s);
            break;
        }
        w->n++;
    }
    have = w->n;
    atomic_store_explicit(&w->have, have, memory_order_relaxed);
    pthread_mutex_unlock(&w->mu);
    return have;
}

void gm_task_post(gm_workers *w, gm_task *t, unsigned n)
{
    if (n == 0)
        return;
    unsigned wake[GM_WORKERS_MAX], nwake = 0;
    pthread_mutex_lock(&w->mu);
    if (n > w->n)
        n = w->n;
    if (n > 0 && !w->stop) {
        t->want += n;
        if (!t->queued) {
            t->queued = true;
            atomic_fetch_add_explicit(&w->queued, 1, memory_order_relaxed);
            t->next = NULL;
            if (w->tail != NULL)
                w->tail->next = t;
            else
                w->head = t;
            w->tail = t;
        }
        /* wake as many parked workers as the task wants beyond the
         * workers polling the queue (each of them looks at the queue
         * under the lock before it parks, so it takes the task), not all:
         * a worker woken for nothing takes a CPU from those that have
         * work (workers.h) */
        unsigned spinning = w->head == t && t->next == NULL ? atomic_load_explicit(&w->spinning, memory_order_relaxed) : 0;
        unsigned want = t->want > spinning ? t->want - spinning : 0;
        while (nwake < want && w->nparked > 0) {
            unsigned k = w->park[--w->nparked];
            w->parked[k] = false;
            wake[nwake++] = k;
        }
    }
    pthread_mutex_unlock(&w->mu);
    /* signalled out of the lock, so that a woken worker does not at once
     * sleep again on the lock its waker holds: parked[k] was cleared under
     * the lock, and worker k waits for that in pthread_cond_wait (it can
     * only have missed the signal by being awake already) */
    for (unsigned i = 0; i < nwake; i++)
        pthread_cond_signal(&w->wake[wake[i]]);
}

/* Waits (w->mu held) until no worker is inside t: polls without the lock
 * while workers keep leaving (the spin time from the last one that left:
 * the workers finish their last items one after the other), then sleeps
 * until the last one's broadcast. */
static void wait_idle(gm_workers *w, gm_task *t)
{
    unsigned a = atomic_load_explicit(&t->active, memory_order_acquire);
    if (a > 0) {
        long spin = gm_workers_spin();
        if (spin > 0) {
            pthread_mutex_unlock(&w->mu);
            while (a > 0 && gm_workers_poll(&t->active, a, spin) && !gm_workers_stopping())
                a = atomic_load_explicit(&t->active, memory_order_acquire);
            pthread_mutex_lock(&w->mu);
        }
    }
    while (atomic_load_explicit(&t->active, memory_order_acquire) > 0)
        pthread_cond_wait(&w->idle, &w->mu);
}

void gm_task_join(gm_workers *w, gm_task *t)
{
    pthread_mutex_lock(&w->mu);
    t->want = 0;
    if (t->queued)
        dequeue(w, t);
    wait_idle(w, t);
    pthread_mutex_unlock(&w->mu);
}

void gm_task_wait(gm_workers *w, gm_task *t)
{
    pthread_mutex_lock(&w->mu);
    for (;;) {
        if (t->want > 0 && !w->stop && w->n > 0) {
            pthread_cond_wait(&w->idle, &w->mu);
            continue;
        }
        if (atomic_load_explicit(&t->active, memory_order_acquire) == 0)
            break;
        wait_idle(w, t);
    }
    t->want = 0;
    if (t->queued)
        dequeue(w, t);
    pthread_mutex_unlock(&w->mu);
}

/* ---- NUMA ------------------------------------------------------------------------------------- */

const char *gm_sysfs_root(void)
{
    static _Thread_local char copy[sizeof sysfs_root];
    pthread_mutex_lock(&root_mu);
    memcpy(copy, sysfs_root, sizeof copy);
    pthread_mutex_unlock(&root_mu);
    return copy;
}

void gm_sysfs_root_set(const char *root)
{
    pthread_mutex_lock(&root_mu);
    snprintf(sysfs_root, sizeof sysfs_root, "%s", root != NULL ? root : GM_SYSFS_ROOT);
    pthread_mutex_unlock(&root_mu);
}

bool gm_cpulist_parse(const char *s, cpu_set_t *set)
{
    CPU_ZERO(set);
    bool any = false;
    const char *p = s;
    while (*p != '\0' && *p != '\n') {
        if (!isdigit((unsigned char)*p))
            return false;
        char *end;
        errno = 0;
        unsigned long a = strtoul(p, &end, 10), b = a;
        if (errno != 0)
            return false;
        p = end;
        if (*p == '-') {
            p++;
            if (!isdigit((unsigned char)*p))
                return false;
            b = strtoul(p, &end, 10);
            if (errno != 0 || b < a)
                return false;
            p = end;
        }
        for (unsigned long c = a; c <= b && c < CPU_SETSIZE; c++) {
            CPU_SET(c, set);
            any = true;
        }
        if (*p == ',')
            p++;
        else if (*p != '\0' && *p != '\n')
            return false;
    }
    return any;
}

/* The first line of a file, NUL-terminated; false when it cannot be read. */
static bool read_line(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return false;
    bool good = fgets(buf, (int)size, f) != NULL;
    fclose(f);
    return good;
}

bool gm_numa_node_cpus(const char *root, int node, cpu_set_t *set)
{
    char path[512], line[4096];
    snprintf(path, sizeof path, "%s/devices/system/node/node%d/cpulist", root, node);
    return node >= 0 && read_line(path, line, sizeof line) && gm_cpulist_parse(line, set);
}

int gm_numa_nodes(const char *root)
{
    int n = 0;
    cpu_set_t set;
    for (int i = 0; i < NODES_MAX; i++)
        n += gm_numa_node_cpus(root, i, &set);
    return n;
}

int gm_numa_pci_node(const char *root, const char *pci_id)
{
    char path[512], line[64];
    snprintf(path, sizeof path, "%s/bus/pci/devices/%s/numa_node", root, pci_id);
    if (!read_line(path, line, sizeof line))
        return -1;
    char *end;
    long v = strtol(line, &end, 10);
    return end != line && v >= 0 && v < NODES_MAX ? (int)v : -1;
}
