/*
 * wiring.c - what runs when a context is made and when it ends, and who
 * gives the copy engine its pack kernels: the layers below expose their
 * hooks and providers, and this file, in the top layer, connects them in
 * one visible order (doc/design.md, "Wiring"), the process-lifetime hooks
 * (exit, fork, thread exit, unload) too.  Nothing registers itself.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "alloc.h"
#include "context.h"
#include "pack_calls.h"
#include "copy_peer.h"
#include "dealloc.h"
#include "handles.h"
#include "lifecycle.h"
#include "memo.h"
#include "memstats.h"
#include "pack_provider.h"
#include "pool.h"
#include "staging.h"
#include "stream.h"
#include "trace.h"
#include "wiring.h"
#include "workers.h"

/* The context hooks in teardown order.  A context's final release runs their
 * teardowns from the first to the last; its creation runs their creates from
 * the last to the first, so each layer is made after the layers it uses and
 * ended before them. */
static const gm_context_hook *const context_hooks[] = {
    &gm_copy_peer_hook, /* arrays: forget the peer access of the context's device */
    &gm_memo_hook,      /* kernel cache: memoized values and cached modules (the pack kernels too) */
    &gm_staging_hook,   /* arrays: the staging engine's pinned buffers */
    &gm_streams_hook,   /* streams: the default stream, its write-backs committed */
    &gm_allocator_hook, /* memory: the context's own pool (GPUMEM_ALLOCATOR=pool) */
    &gm_dealloc_hook,   /* memory: the deferred frees, flushed last of the frees (the queue is made first) */
    &gm_memstats_hook,  /* memory: the books of every allocation and free above, and the leak list */
};

/* The process-lifetime hooks (lifecycle.h), in order.  At process exit the
 * armed ones' at_exit run from the first to the last (one exit handler,
 * registered by the first arm of a hook that has one); around fork() their
 * fork_prepare run from the first to the last, and fork_parent and
 * fork_child from the last to the first; when the library is unloaded every
 * at_unload runs, first to last, after the exit handlers.  A hook's thread
 * key is made by its first arm (thread exits run in the system's order). */
static const gm_life_hook *const life_hooks[] = {
    &gm_autoinit_life,      /* context: exit: release the autoinit context (its final release lists its leaks) */
    &gm_leaks_life,         /* memory: exit: list what the contexts never released hold (GPUMEM_DEBUG=leaks) */
    &gm_trace_life,         /* trace: exit: stop the trace, all of the above recorded; fork: the child forgets it */
    &gm_trace_threads_life, /* trace: thread exit: the thread's buffer goes to the writer */
    &gm_pool_cache_life,    /* memory: thread exit: the thread's pool caches go back to their pools */
    &gm_handles_life,       /* handles: thread exit: the thread's handle rings go to the shared lists */
    &gm_workers_life,       /* workers: fork: the child's pools start empty; unload: the workers stop, joined */
};
#define NLIFE (sizeof life_hooks / sizeof life_hooks[0])

static pthread_mutex_t life_mu = PTHREAD_MUTEX_INITIALIZER; /* arms (never taken by a fork handler) */
static atomic_bool armed[NLIFE];
static bool arm_done[NLIFE];
static int arm_rc[NLIFE];
static bool exit_registered, fork_registered;
static bool forking[NLIFE]; /* the hooks whose fork_prepare ran, for the fork under way */

static void life_at_exit(void)
{
    for (size_t i = 0; i < NLIFE; i++)
        if (atomic_load(&armed[i]) && life_hooks[i]->at_exit != NULL)
            life_hooks[i]->at_exit();
}

static void life_prepare(void)
{
    for (size_t i = 0; i < NLIFE; i++) {
        forking[i] = atomic_load(&armed[i]) && life_hooks[i]->fork_prepare != NULL;
        if (forking[i])
            life_hooks[i]->fork_prepare();
    }
}

static void life_parent(void)
{
    for (size_t i = NLIFE; i-- > 0;)
        if (forking[i] && life_hooks[i]->fork_parent != NULL)
            life_hooks[i]->fork_parent();
}

static void life_child(void)
{
    for (size_t i = NLIFE; i-- > 0;)
        if (forking[i] && life_hooks[i]->fork_child != NULL)
            life_hooks[i]->fork_child();
    pthread_mutex_init(&life_mu, NULL); /* another thread of the parent may have held it */
}

/* The registrar (lifecycle.h): arms hook h once. */
static int life_arm(const gm_life_hook *h)
{
    size_t i = 0;
    while (i < NLIFE && life_hooks[i] != h)
        i++;
    if (i == NLIFE)
        return ENOENT;
    pthread_mutex_lock(&life_mu);
    if (!arm_done[i]) {
        int rc = 0;
        if (h->key != NULL)
            rc = pthread_key_create(h->key, h->thread_exit);
        if (rc == 0 && h->at_exit != NULL && !exit_registered)
            rc = atexit(life_at_exit) != 0 ? ENOMEM : 0, exit_registered = rc == 0;
        if (rc == 0 && (h->fork_prepare != NULL || h->fork_parent != NULL || h->fork_child != NULL) &&
            !fork_registered)
            rc = pthread_atfork(life_prepare, life_parent, life_child), fork_registered = rc == 0;
        arm_rc[i] = rc;
        arm_done[i] = true;
        atomic_store(&armed[i], rc == 0);
    }
    int rc = arm_rc[i];
    pthread_mutex_unlock(&life_mu);
    return rc;
}

void gm_wiring_install(void)
{
    gm_context_set_hooks(context_hooks, sizeof context_hooks / sizeof context_hooks[0]);
    gm_life_set_registrar(life_arm);
    gm_pack_provider_set(gm_pack_kernels_provider()); /* device pack/unpack kernels for the copy engine */
    gm_pool_set_destroy_hook(gm_pack_scratch_drop_unkept); /* a destroyed pool's blocks leave the caches */
}

/* The library's only constructor. */
__attribute__((constructor)) static void wiring_at_load(void)
{
    gm_wiring_install();
}

/* And its only destructor: every hook's unload, in the table's order. */
__attribute__((destructor)) static void wiring_at_unload(void)
{
    for (size_t i = 0; i < NLIFE; i++)
        if (life_hooks[i]->at_unload != NULL)
            life_hooks[i]->at_unload();
}
