/*
 * context.h - the context object behind gpumem_context (private).
 */
#ifndef GM_CONTEXT_H
#define GM_CONTEXT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "driver.h"
#include "gpumem/context.h"
#include "handles.h"

struct gpumem_stream;
struct gpumem_pool;
struct gm_dealloc;
struct gm_memo;
struct gm_memstats;
struct gm_staging;

struct gpumem_context {
    gm_handle h;       /* first: the lifecycle check (handles.h) */
    atomic_int refs;
    int device;
    gpumem_selection selection;
    gm_dctx *dctx;     /* the device's primary context, retained once by us */
    size_t max_pitch;  /* CU_DEVICE_ATTRIBUTE_MAX_PITCH, for the copy planner */

    pthread_mutex_t lock;                  /* guards the stream list */
    struct gpumem_stream *default_stream;  /* made on first use, owned here */
    struct gpumem_stream *streams;         /* every live stream (linked by next) */

    /* State of the layers above, made and ended by their hooks (below);
     * the context only carries it. */
    struct gm_memstats *memstats;          /* the memory layer's books (memstats.c), made first, ended last */
    struct gm_dealloc *dealloc;            /* deferred frees (dealloc.c) */
    _Atomic(struct gpumem_pool *) pool;    /* arrays allocate here when set (gpumem_context_set_pool) */
    struct gpumem_pool *own_pool;          /* the context's own pool (GPUMEM_ALLOCATOR=pool), alloc.c's */
    _Atomic(struct gm_memo *) memo;        /* memoized values and kernel cache (memo.c), made on first use */
    _Atomic(struct gm_staging *) staging;  /* pinned bounce buffers of pageable copies (staging.c), made on first use */
};

/* ---- hooks of the layers above ------------------------------------------------------ */

/* A layer above the context keeps per-context state through a hook, as
 * libuv's handles get close callbacks.  context.c calls no layer above it
 * by name: it runs the hooks, and each hook makes and ends its own layer's
 * state.  That state does live in the struct above, in the six fields
 * under "State of the layers above" (memstats, dealloc, pool, own_pool,
 * memo, staging), typed by structs that are only declared here, so that each
 * layer finds its state without a lookup; context.c only sets them to
 * NULL.  create runs when a context is made and may fail, failing the
 * creation; teardown runs at the final release, while the context still
 * works.  Either function may be NULL.  A layer defines its hook and
 * declares it in its header; lib/wiring.c lists every hook in one table. */
typedef struct gm_context_hook {
    gpumem_status (*create)(gpumem_context *ctx, const char *what);
    gpumem_status (*teardown)(gpumem_context *ctx, const char *what); /* what: the public call that ended it */
} gm_context_hook;

/* Sets the hooks of every context made after the call: hooks[0..n-1] in
 * teardown order.  A final release runs the teardowns from hooks[0] on; a
 * creation runs the creates from hooks[n-1] back to hooks[0] and, when one
 * fails, the teardowns of those it already ran.  So a layer is torn down
 * before the layers it uses and made after them.  Called once, by
 * lib/wiring.c when the library loads (before any thread can make a
 * context); the table must stay valid.  Until it is called, making a context
 * fails with GPUMEM_ERROR_INTERNAL (the wiring was not linked). */
void gm_context_set_hooks(const gm_context_hook *const *hooks, size_t n);

/* Drops one reference of ctx (NULL: nothing), as gpumem_context_release
 * does, for a handle that held it: the final one runs the teardowns, whose
 * failures name `what`, the public call that dropped it. */
gpumem_status gm_context_release_as(gpumem_context *ctx, const char *what);

/* ctx, or the autoinit context when ctx is NULL; NULL and a set last error
 * when there is none ("<what>: the autoinit context: <why>"), or when ctx is
 * not a live context (handles.h: the message names `what` and its argument
 * 'ctx').  No reference is added. */
gpumem_context *gm_context_use(gpumem_context *ctx, const char *what, gpumem_status *st);

/* gm_context_use in a public function whose argument is 'ctx': the message
 * names the function (__func__). */
#define gm_context_or_default(ctx, st) gm_context_use((ctx), __func__, (st))

/* gpumem_device_count, gpumem_device_compute_capability and
 * gpumem_context_create for a public call `what` that uses them on the way
 * (an import, an IPC open, device data): failures are named after `what`. */
gpumem_status gm_device_count(const char *what, int *count);
gpumem_status gm_device_compute_capability(const char *what, int device, int *major, int *minor);
gpumem_status gm_context_create(const char *what, int device, gpumem_context **ctx);

/* True once the process has started to exit (our atexit handler ran): final
 * releases then leave driver objects to the operating system instead of
 * calling a driver that may be tearing itself down. */
bool gm_process_exiting(void);

/* The autoinit context's process-lifetime hook (lifecycle.h): released at exit. */
extern const struct gm_life_hook gm_autoinit_life;

#endif /* GM_CONTEXT_H */
