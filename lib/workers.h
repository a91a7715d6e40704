/*
 * workers.h - the library's one pool of worker threads (private).
 *
 * All CPU fan-out of the library runs here: the staging engine's fill and
 * drain of pinned slots (with the packing and unpacking of strided host
 * sides in the same pass), CPU packs, and the landing of downloads queued
 * on a stream.  No thread is created per call, and every thread of lib/
 * starts through gm_thread_start (the simulator's stream workers aside):
 * the workers, and the trace's writer, which waits on file writes rather
 * than doing CPU work, so it has a thread of its own while a trace records.
 *
 * A pool belongs to a NUMA node (or to none: node -1); it is made on first
 * use and grows, never per call, to the number of workers asked for
 * (gm_workers_grow, at most GM_WORKERS_MAX).  The workers of a node's pool
 * run on that node's CPUs (sched affinity read from sysfs), so what they
 * allocate first-touch lives there.
 *
 * A task is a function that several threads may run at once, each taking
 * items of the work (chunks, pieces) from the task's own counter until none
 * is left, then returning: there is no barrier per item, only one join per
 * task.  The poster usually runs the function itself too, between
 * gm_task_post and gm_task_join:
 *
 *     gm_task_post(w, &t, n);   up to n workers join in
 *     t.fn(&t, -1);             the caller's share
 *     gm_task_join(w, &t);      no more workers start it; those in it finish
 *
 * A worker that finds no item left returns at once.  Items must never wait
 * for something only a later gm_task_join would allow (a join waits for the
 * workers inside fn).
 *
 * Process life (gm_workers_life, run by lib/wiring.c's table): the workers
 * are stopped and joined when the library is unloaded (process exit,
 * dlclose): a worker leaves its task between two items when
 * gm_workers_stopping() says so, and the task's caller does the rest.  In
 * the child of fork() the pools start empty: tasks queued in the parent do
 * not exist there, and workers are made again on first use.
 */
#ifndef GM_WORKERS_H
#define GM_WORKERS_H

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#define GM_WORKERS_MAX 63 /* workers per pool: with the caller, 64 threads */

typedef struct gm_workers gm_workers;
typedef struct gm_task gm_task;

/* Runs a task's items.  worker: the worker's index in its pool (0 ..
 * GM_WORKERS_MAX - 1, stable for the pool's life), or -1 for a caller. */
typedef void (*gm_task_fn)(gm_task *t, int worker);

struct gm_task {
    gm_task_fn fn;
    /* the pool's, under its lock: zero them (or use GM_TASK_INIT) */
    unsigned want;    /* more workers that may start it */
    _Atomic unsigned active; /* workers inside fn (changed under the lock; a joiner polls it while it spins) */
    bool queued;
    gm_task *next;
};

#define GM_TASK_INIT(f) ((gm_task){.fn = (f)})

/* The pool of NUMA node `node` (-1: no node, any CPU), made on first use
 * (no threads yet).  NULL only when out of host memory. */
gm_workers *gm_workers_get(int node);

/* Grows the pool to n workers (at most GM_WORKERS_MAX); fewer when threads
 * cannot be made.  Returns the number it has. */
unsigned gm_workers_grow(gm_workers *w, unsigned n);

/* Its node (-1 for none). */
int gm_workers_node(const gm_workers *w);

/* Starts a thread of the library's, named name (at most 15 characters: in
 * top, gdb and perf), running fn(arg).  Asynchronous signals (SIGINT,
 * SIGTERM, SIGCHLD, ...) are blocked in it, so that they reach the
 * program's own threads; a fault it raises (SIGSEGV, SIGBUS, SIGFPE,
 * SIGILL, SIGTRAP, SIGABRT, SIGSYS) is delivered as usual.  Returns 0 or
 * pthread_create's error. */
int gm_thread_start(pthread_t *tid, const char *name, void *(*fn)(void *), void *arg);

/* Initializes mu as a mutex that spins a little before it sleeps (glibc's
 * adaptive mutex; a plain one elsewhere): for locks held for a few
 * instructions by threads of one copy, whose holder is running, so that a
 * waiter seldom sleeps and then waits to be scheduled again. */
void gm_spin_mutex_init(pthread_mutex_t *mu);

/* Lets up to n more workers start t (the pool has fewer: those it has). */
void gm_task_post(gm_workers *w, gm_task *t, unsigned n);

/* No more workers start t; returns once the workers inside t->fn left it.
 * Afterwards the pool holds no reference to t. */
void gm_task_join(gm_workers *w, gm_task *t);

/* Waits until every worker t was posted to has run t->fn and left it (or
 * the pool stops: then no more start).  Afterwards the pool holds no
 * reference to t.  For a caller that leaves the items to the workers. */
void gm_task_wait(gm_workers *w, gm_task *t);

/* The pools' process-lifetime hook (lifecycle.h, lib/wiring.c's table):
 * fork: the child's pools start empty; unload: the workers stop, joined. */
extern const struct gm_life_hook gm_workers_life;

/* Whether the pools are stopping (process exit): workers should leave their
 * task between items. */
bool gm_workers_stopping(void);

/* Spinning.  Waking a sleeping thread costs tens of microseconds (more in a
 * virtual machine), which a copy of a few MiB pays at its start (the
 * workers) and at its end (the joining caller).  So at most
 * GM_WORKERS_IDLE_SPINNERS workers of a pool that find no task poll the
 * queue for a while before they sleep, and gm_task_join and gm_task_wait
 * poll for the workers to leave before they sleep (the time counts again
 * from each worker that leaves: the last items end one after the other):
 * copies that follow each other find workers awake.  The time is GM_WORKERS_SPIN_NS on a machine
 * with at least GM_WORKERS_SPIN_CPUS CPUs, else 0 (a small machine has no
 * CPU to spare); gm_workers_set_spin changes it (tests: -1 restores the
 * default).
 *
 * Nothing here may hold a CPU that a thread of the copy needs, or give it
 * away for long (issue 29: one 4 MiB copy in twenty took a scheduler tick,
 * 4 ms, instead of 0.3 ms, with 12 or 16 threads on 16 CPUs):
 *   - a poll never calls sched_yield: the yielder waits behind whatever
 *     runs next on its CPU until that blocks or its slice ends (a tick,
 *     when it is the driver's own busy wait in cuEventSynchronize, which
 *     never yields), and a poller is a thread the copy waits for (the
 *     caller joining, a worker about to take the next task);
 *   - only a few workers poll while idle: every poller keeps a CPU busy,
 *     and with all CPUs busy a thread preempted in the middle of a chunk
 *     finds no idle CPU to move to (the kernel balances onto CPUs that go
 *     idle) and waits for the next tick;
 *   - a post wakes as many parked workers as it wants, less the workers
 *     polling the queue when its task is the only one queued, not all of
 *     them (each worker parks on its own condition variable), and signals
 *     them once the pool's lock is free: a worker woken for nothing takes
 *     a CPU from those that have work, and one woken while its waker holds
 *     the lock sleeps again on it at once.
 * staging_xfer.c lists every place a thread of a copy may sleep. */
#define GM_WORKERS_SPIN_NS 100000L
#define GM_WORKERS_SPIN_CPUS 4
#define GM_WORKERS_IDLE_SPINNERS 2
void gm_workers_set_spin(long ns);
long gm_workers_spin(void);

/* Polls until *v != old, for at most ns (no sched_yield, see above);
 * whether it saw the change. */
bool gm_workers_poll(const atomic_uint *v, unsigned old, long ns);

/* Polls until done(arg), for at most ns, pausing a little (a few dozen
 * CPU_RELAX) between calls, never yielding; whether done said so.  For a
 * wait the driver would do with sched_yield in its loop (a context's
 * default scheduling): the yielder may wait a tick behind a thread that
 * runs on its CPU. */
bool gm_workers_poll_until(bool (*done)(void *arg), void *arg, long ns);

/* The pool's workers parked now, polling the queue now, and the wakes so
 * far that found no task (tests, benchmarks). */
void gm_workers_counts(gm_workers *w, unsigned *parked, unsigned *spinning, unsigned long *futile);

/* ---- NUMA (pure: sysfs) ------------------------------------------------------------------ */

/* The sysfs root the library reads ("/sys"), and its setter for tests,
 * which point it at a fake tree (pools and engines made later use it). */
#define GM_SYSFS_ROOT "/sys"
const char *gm_sysfs_root(void);
void gm_sysfs_root_set(const char *root);

/* The number of NUMA nodes with CPUs under root/devices/system/node (0 when
 * it cannot be read). */
int gm_numa_nodes(const char *root);

/* The CPUs of node (root/devices/system/node/node<N>/cpulist) into *set;
 * false when the list cannot be read or is empty. */
bool gm_numa_node_cpus(const char *root, int node, cpu_set_t *set);

/* The node of PCI device "DDDD:BB:DD.F" (root/bus/pci/devices/<id>/numa_node),
 * -1 when unknown. */
int gm_numa_pci_node(const char *root, const char *pci_id);

/* Parses a kernel CPU list ("0-3,8,10-11") into *set; false when malformed. */
bool gm_cpulist_parse(const char *s, cpu_set_t *set);

#endif /* GM_WORKERS_H */
