/*
 * stream.h - the stream object behind gpumem_stream (private), and its
 * pending write-backs.
 *
 * A write-back is a callback that the array layer queues (numba's
 * to_device(..., copy back on synchronize)): the stream knows nothing of
 * arrays.  A stream handle is reference-counted inside the library, so
 * memory freed "after this stream's work" (pool blocks) can hold it without
 * a search of the context's streams; gpumem_stream_destroy drops the user's
 * reference and marks the stream destroyed (its work was synchronized).
 */
#ifndef GM_STREAM_H
#define GM_STREAM_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <stdatomic.h>

#include "context.h"
#include "driver.h"
#include "gpumem/stream.h"

/* A write-back: fn(arg, true, what) once a wait for the stream's work
 * succeeded, which does the work and frees arg; fn(arg, false, what) only
 * frees arg, doing none of the work (the stream ends and its work could not
 * be waited for, or the process exits).  `what` names a failure: the
 * public call that synchronizes, and the one that queued the write-back
 * ("gpumem_stream_synchronize: the write-back that gpumem_to_device queued").
 * The status of a run is the stream's. */
typedef gpumem_status (*gm_writeback_fn)(void *arg, bool run, const char *what);

#define GM_WRITEBACK_NAME_MAX 64

typedef struct gm_writeback {
    gm_writeback_fn fn;
    void *arg;
    uint64_t seq;         /* the stream's count of write-backs when it was added */
    struct gm_writeback *next;
    char queued_by[GM_WRITEBACK_NAME_MAX]; /* the public call that queued it */
} gm_writeback;

struct gpumem_stream {
    gm_handle h;          /* first: the lifecycle check (handles.h); dead once destroyed */
    gpumem_context *ctx;  /* retained, except by the default stream, which the context owns */
    gm_dstream *ds;       /* the driver stream; NULL: the legacy default stream */
    bool is_default;
    atomic_int refs;      /* the user's (or the context's, for the default) and gm_stream_hold's */
    atomic_bool destroyed; /* gpumem_stream_destroy ran: nothing of it is pending */
    atomic_int landings;  /* queued host functions that will write host memory (copy_queued.c), not yet run */
    pthread_mutex_t lock; /* guards the fields below, up to the context's */
    gm_writeback *writebacks; /* in the order they were added */
    gm_writeback **writebacks_tail;
    uint64_t writebacks_added; /* write-backs ever added: the last one's seq */
    int auto_depth;       /* open auto_synchronize scopes */
    /* guarded by ctx->lock: */
    struct gpumem_stream *next; /* in ctx->streams */
    int committing;       /* gm_streams_commit calls synchronizing it now */
    bool dying;           /* gpumem_stream_destroy runs: no commit takes it */
    pthread_cond_t idle;  /* signalled when committing drops to 0 */
};

/* The driver stream of s, NULL for none or the default stream. */
static inline gm_dstream *gm_stream_ds(const gpumem_stream *s)
{
    return s != NULL ? s->ds : NULL;
}

/* Checks that stream (may be NULL) belongs to the context of ctx (same
 * primary context); `what` and `arg` name the function and array argument. */
gpumem_status gm_stream_check(const gpumem_stream *stream, const gpumem_context *ctx, const char *what,
                              const char *arg);

/* Queues a write-back on stream (NULL: ctx's default stream); `what`, the
 * public call that adds it, names a failure to add it, and is kept (a copy
 * of the name, up to a colon) to name the write-back when it runs.  On
 * failure fn is not called: arg stays the caller's.  The write-back runs
 * after the first wait for the stream's work that begins after it was added
 * and succeeds (a failed wait leaves it queued), or is dropped unrun when
 * the stream ends and its work cannot be waited for. */
gpumem_status gm_stream_add_writeback(gpumem_stream *stream, gpumem_context *ctx, gm_writeback_fn fn, void *arg,
                                      const char *what);

/* Keeps the stream's handle valid (not its driver stream) until
 * gm_stream_unhold.  NULL-safe. */
static inline gpumem_stream *gm_stream_hold(gpumem_stream *s)
{
    if (s != NULL)
        atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
    return s;
}
void gm_stream_unhold(gpumem_stream *s);

/* A stream object over driver stream ds, which another runtime owns
 * (lib/foreign.c): in no list of ctx, never synchronized, committed or
 * destroyed by the library; its one reference goes with gm_stream_unhold.
 * NULL when out of host memory. */
gpumem_stream *gm_stream_foreign(gpumem_context *ctx, gm_dstream *ds);

/* The held stream s if its work may still be pending (not destroyed), else
 * NULL: a destroyed stream was synchronized.  NULL-safe. */
static inline gpumem_stream *gm_stream_if_alive(gpumem_stream *s)
{
    return s != NULL && !atomic_load_explicit(&s->destroyed, memory_order_acquire) ? s : NULL;
}

/* Waits for the work queued on stream so far, without committing its
 * write-backs: CPU-side work on host memory that the stream's queued
 * copies write (downloads into pinned memory, landings into pageable
 * memory) calls it first.  NULL-safe (nothing to wait for). */
gpumem_status gm_stream_wait(gpumem_stream *stream, const char *what);

/* Synchronizes every stream of ctx with write-backs pending and commits
 * them (gpumem_context_synchronize).  Each stream is synchronized once, and
 * only the write-backs added before its wait began are committed; a stream
 * being destroyed meanwhile is left to its destroyer, which commits them. */
gpumem_status gm_streams_commit(gpumem_context *ctx, const char *what);

/* The context hook (lib/wiring.c): ends the default stream, committing its
 * write-backs. */
extern const gm_context_hook gm_streams_hook;

#endif /* GM_STREAM_H */
