/*
 * lifecycle.h - the process-lifetime hooks of the layers (private; layer
 * 0): what runs at process exit, around fork(), when a thread ends and
 * when the library is unloaded.
 *
 * A layer defines its hook (a gm_life_hook) and arms it, when it first
 * needs it, with gm_life_arm; nothing calls atexit, pthread_atfork,
 * pthread_key_create or a destructor itself.  The wiring (lib/wiring.c,
 * top layer) installs the registrar at load and lists every hook in one
 * ordered table (doc/design.md, "Wiring"): the registrar runs the armed
 * hooks' exit and fork functions in the table's order, whatever order they
 * were armed in, and makes their thread keys.
 */
#ifndef GM_LIFECYCLE_H
#define GM_LIFECYCLE_H

#include <pthread.h>

typedef struct gm_life_hook {
    const char *what;
    /* At process exit (once armed): the armed hooks' at_exit in table
     * order, from one exit handler registered by the first arm of a hook
     * that has one. */
    void (*at_exit)(void);
    /* Around fork() (once armed): fork_prepare in table order before it,
     * fork_parent and fork_child in the reverse order after it. */
    void (*fork_prepare)(void);
    void (*fork_parent)(void);
    void (*fork_child)(void);
    /* When the library is unloaded (process exit, dlclose), after the exit
     * functions: in table order, armed or not (it must do nothing when the
     * layer never ran). */
    void (*at_unload)(void);
    /* A thread-specific key made by the first arm, whose destructor
     * thread_exit runs when a thread that set a value ends (the system's
     * order between keys). */
    pthread_key_t *key;
    void (*thread_exit)(void *);
} gm_life_hook;

/* What the wiring gives: arms h (its functions registered, its key made),
 * once per hook; 0, or an errno value (ENOENT: h is not in the table). */
typedef int (*gm_life_registrar)(const gm_life_hook *h);

/* Installs the registrar (the wiring does, at load). */
void gm_life_set_registrar(gm_life_registrar r);

/* Arms h through the registrar, once per hook (later calls return the
 * first one's result); ENOSYS when the wiring is not linked (a static link
 * of the internal library without it). */
int gm_life_arm(const gm_life_hook *h);

/* Each layer declares its hook in its own header (workers.h, context.h,
 * memstats.h, trace.h, pool.h, handles.h); lib/wiring.c orders them. */

#endif /* GM_LIFECYCLE_H */
