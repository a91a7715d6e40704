/**
 * @file gpumem/stream.h
 * @brief Streams: numba's cuda.stream(), synchronize(), auto_synchronize(),
 *        and the write-backs of gpumem_to_device().
 *
 * A ::gpumem_stream belongs to one context; arrays of another context used
 * with it are ::GPUMEM_ERROR_CONTEXT_MISMATCH.  Work queued on a stream runs
 * in order, asynchronously to the host; gpumem_stream_synchronize() waits
 * for it and then commits the stream's pending write-backs.
 */
#ifndef GPUMEM_STREAM_H
#define GPUMEM_STREAM_H

#include <gpumem/export.h>
#include <gpumem/status.h>
#include <gpumem/context.h>

GPUMEM_BEGIN_DECLS

/** A stream of a context. */
typedef struct gpumem_stream gpumem_stream;

/** Flag of gpumem_stream_create(): no implicit ordering with the default stream. */
#define GPUMEM_STREAM_NON_BLOCKING 0x1

/**
 * numba's cuda.stream(): a new stream of @p ctx (NULL: the autoinit context).
 * @param ctx the context, or NULL for the autoinit context.
 * @param flags 0 or ::GPUMEM_STREAM_NON_BLOCKING.
 * @param[out] stream the new stream; destroy it with gpumem_stream_destroy().
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT (@p stream), ::GPUMEM_ERROR_INVALID_VALUE (unknown
 *        flags), ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY, an autoinit failure or a driver failure (see
 *        gpumem/status.h).
 */
GPUMEM_API gpumem_status gpumem_stream_create(gpumem_context *ctx, unsigned flags, gpumem_stream **stream);

/**
 * Synchronizes the stream (committing its write-backs), then destroys it.
 * If that wait fails, the stream is waited for once more, since its
 * write-backs cannot wait for a later synchronization: if the second wait
 * succeeds they are committed; if it fails too (a lost device), they are
 * dropped without running (no host array is written; their memory is
 * freed).  Either way the first failure is returned.
 * The context's default stream cannot be destroyed.  NULL is a no-op.
 * Destroying it again, or passing it to any function afterwards, is
 * ::GPUMEM_ERROR_INVALID_STATE (gpumem/status.h says how far that is
 * detected).
 * @param stream the stream, or NULL.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_INVALID_VALUE (the default stream, or not a stream),
 *        ::GPUMEM_ERROR_INVALID_STATE (destroyed already), or the first driver failure of the final
 *        synchronization or the destruction (the stream is destroyed either way).
 */
GPUMEM_API gpumem_status gpumem_stream_destroy(gpumem_stream *stream);

/**
 * The context's default stream (the legacy NULL stream: ordered with every
 * blocking stream).  Borrowed: it lives as long as the context.
 * @param ctx the context, or NULL for the autoinit context.
 * @param[out] stream the default stream (borrowed).
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT (@p stream), ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY, or an
 *        autoinit failure.
 */
GPUMEM_API gpumem_status gpumem_stream_default(gpumem_context *ctx, gpumem_stream **stream);

/**
 * Waits for all work queued on the stream, then commits its pending
 * write-backs (and waits for them): those queued before this call began.
 * A write-back that another thread queues while this call waits belongs to
 * work the wait may not cover; it stays for the next synchronization.  The
 * first failure is returned; once the wait succeeded, the write-backs taken
 * are dropped whether they succeed or fail, so none is committed twice.
 *
 * If the wait fails, no write-back is committed: a failed wait says nothing
 * of how far the stream's work got, so a host array is never written from
 * device data, or from the bounce block of a queued download, that may be
 * incomplete.  The write-backs all stay queued, with the memory they hold,
 * for the next synchronization of the stream whose wait succeeds (this
 * call, gpumem_stream_auto_synchronize_end(), gpumem_context_synchronize()
 * or gpumem_stream_destroy()).
 * @param stream the stream.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, or the first failure of the stream's work or write-backs
 *        (a driver failure).  A failure's message names this call and, for a write-back, the call that
 *        queued it ("gpumem_stream_synchronize: the write-back that gpumem_to_device queued: ...").
 */
GPUMEM_API gpumem_status gpumem_stream_synchronize(gpumem_stream *stream);

/**
 * GPUMEM_OK when the stream's work is done, ::GPUMEM_ERROR_NOT_READY while it runs.
 * @param stream the stream.
 * @return ::GPUMEM_OK when done; ::GPUMEM_ERROR_NOT_READY while work runs; ::GPUMEM_ERROR_NULL_ARGUMENT, or a
 *        driver failure.
 */
GPUMEM_API gpumem_status gpumem_stream_query(gpumem_stream *stream);

/**
 * The stream's context (borrowed).
 * @param stream the stream.
 * @param[out] ctx its context (borrowed).
 * @return ::GPUMEM_OK, or ::GPUMEM_ERROR_NULL_ARGUMENT.
 */
GPUMEM_API gpumem_status gpumem_stream_context(const gpumem_stream *stream, gpumem_context **ctx);

/**
 * numba's `with stream.auto_synchronize():` begins.  Scopes nest; the
 * outermost end synchronizes.
 * @param stream the stream.
 * @return ::GPUMEM_OK, or ::GPUMEM_ERROR_NULL_ARGUMENT.
 */
GPUMEM_API gpumem_status gpumem_stream_auto_synchronize_begin(gpumem_stream *stream);

/**
 * Ends an auto_synchronize scope: the outermost end synchronizes the stream
 * and commits its write-backs, as gpumem_stream_synchronize() does (a
 * failed wait commits none).  Call it on every path, also when the code in
 * the scope failed: it returns the synchronization's status, so
 *   st = work(stream); end = gpumem_stream_auto_synchronize_end(stream);
 *   if (st == GPUMEM_OK) st = end;
 * Ending a scope that was not begun is ::GPUMEM_ERROR_INVALID_STATE.
 * @param stream the stream.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_STATE (no scope open), or the
 *        synchronization's failure (a driver failure).
 */
GPUMEM_API gpumem_status gpumem_stream_auto_synchronize_end(gpumem_stream *stream);

/**
 * Waits for all work of the context's device and commits the write-backs of the context's streams: each
 * stream with write-backs is synchronized once, as by gpumem_stream_synchronize() (a stream whose wait fails
 * keeps its write-backs for its next synchronization).  It is safe beside other
 * threads that queue work, synchronize, or destroy their streams: a stream being destroyed meanwhile is
 * committed by its gpumem_stream_destroy(), and write-backs queued after a stream's wait began stay for its
 * next synchronization.
 * @param ctx the context, or NULL for the autoinit context.
 * @return ::GPUMEM_OK; an autoinit failure, or the first driver failure of the synchronization or a
 *        write-back.
 */
GPUMEM_API gpumem_status gpumem_context_synchronize(gpumem_context *ctx);

GPUMEM_END_DECLS

#endif /* GPUMEM_STREAM_H */
