/*
 * stream.h - the stream object behind gpumem_stream (private), and its
 * pending write-backs.
 */
#ifndef GM_STREAM_H
#define GM_STREAM_H

#include <pthread.h>
#include <stdbool.h>

#include "context.h"
#include "driver.h"
#include "gpumem/array.h"
#include "gpumem/stream.h"

/* A write-back: copy `device` into `host` when the stream is synchronized.
 * Both are retained until then. */
typedef struct gm_writeback {
    gpumem_array *device;
    gpumem_array *host;
    struct gm_writeback *next;
} gm_writeback;

struct gpumem_stream {
    gpumem_context *ctx;  /* retained, except by the default stream, which the context owns */
    gm_dstream *ds;       /* the driver stream; NULL: the legacy default stream */
    bool is_default;
    pthread_mutex_t lock; /* guards the fields below */
    gm_writeback *writebacks; /* in the order they were added */
    gm_writeback **writebacks_tail;
    int auto_depth;       /* open auto_synchronize scopes */
    struct gpumem_stream *next; /* in ctx->streams */
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

/* Queues a write-back of device into host on stream (NULL: ctx's default
 * stream).  Retains both. */
gpumem_status gm_stream_add_writeback(gpumem_stream *stream, gpumem_context *ctx, gpumem_array *device,
                                      gpumem_array *host);

/* stream if it is still a live stream of ctx (or its default stream), else
 * NULL: a destroyed stream was synchronized, so nothing of it is pending. */
gpumem_stream *gm_stream_if_alive(gpumem_context *ctx, gpumem_stream *stream);

/* Synchronizes, commits and destroys the context's streams' state at the
 * context's final release (no driver calls once the process is exiting). */
void gm_context_streams_release(gpumem_context *ctx);

#endif /* GM_STREAM_H */
