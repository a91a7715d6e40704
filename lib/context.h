/*
 * context.h - the context object behind gpumem_context (private).
 */
#ifndef GM_CONTEXT_H
#define GM_CONTEXT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "dealloc.h"
#include "driver.h"
#include "gpumem/context.h"

struct gpumem_stream;

struct gpumem_context {
    atomic_int refs;
    int device;
    gpumem_selection selection;
    gm_dctx *dctx;     /* the device's primary context, retained once by us */
    size_t max_pitch;  /* CU_DEVICE_ATTRIBUTE_MAX_PITCH, for the copy planner */

    pthread_mutex_t lock;                  /* guards the stream list */
    struct gpumem_stream *default_stream;  /* made on first use, owned here */
    struct gpumem_stream *streams;         /* every live stream (linked by next) */

    gm_dealloc dealloc;                    /* deferred frees (dealloc.c) */
    _Atomic(struct gpumem_pool *) pool;    /* arrays allocate here when set (gpumem_context_set_pool) */
    _Atomic(void *) memo;                  /* memoized values and kernel cache (memo.c), made on first use */
};

/* ctx, or the autoinit context when ctx is NULL; NULL and a set last error
 * when there is none.  No reference is added. */
gpumem_context *gm_context_or_default(gpumem_context *ctx, gpumem_status *st);

/* Drops the context's memoized values and cached modules (memo.c): the
 * final release calls it first, while the context still works. */
void gm_memo_context_release(gpumem_context *ctx);

/* True once the process has started to exit (our atexit handler ran): final
 * releases then leave driver objects to the operating system instead of
 * calling a driver that may be tearing itself down. */
bool gm_process_exiting(void);

#endif /* GM_CONTEXT_H */
