/*
 * trace.h - the trace recorder (private): the events that the context
 * allocator (alloc.c, pool.c) and the copies (copy.c) record while a trace
 * records (gpumem/trace.h), in the format of doc/trace-format.md.
 *
 * Every place that records is one line,
 *     GM_TRACE(gm_trace_alloc(...));
 * or GM_TRACE_IF(condition, gm_trace_...(...));
 * whose condition and arguments are evaluated only while a trace records:
 * off, the line costs one relaxed load of gm_trace_on.
 *
 * Design: each thread writes its events into its own buffer (a chunk of
 * 64-byte records) with no lock and no atomic read-modify-write: it marks
 * itself busy with a plain store (the asymmetric handshake of pool.h's
 * thread caches: the rare stopper pays with membarrier(2)), checks that the
 * trace still records, writes the record and clears busy.  A full chunk
 * goes to a queue that one writer thread empties into the file; the thread
 * takes a fresh chunk.  gpumem_trace_stop clears gm_trace_on, waits until
 * no thread is busy, takes every thread's partial chunk and lets the writer
 * finish.  Strings (marker and region names, copy paths, out-of-memory
 * messages, module files) and call sites are interned under one mutex into
 * per-trace ids, and written before any chunk that names them.
 * Lock order: ctl_mu (start, stop), then the registry's, then the
 * writer's queue lock; the string table's lock is a leaf.
 * Files: trace.c records (the threads' buffers, the strings, the events),
 * trace_writer.c writes (the queue, the writer thread, start and stop);
 * trace_impl.h is what they share.
 *
 * Layering: the pure layer (no driver call); called from every layer above.
 */
#ifndef GM_TRACE_H
#define GM_TRACE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "gpumem/status.h"

/* Nonzero while a trace records. */
extern atomic_uint gm_trace_on;

#define GM_TRACE_ACTIVE() __builtin_expect(atomic_load_explicit(&gm_trace_on, memory_order_relaxed) != 0, 0)
#define GM_TRACE_IF(cond, call) \
    do { \
        if (GM_TRACE_ACTIVE() && (cond)) \
            call; \
    } while (0)
/* The events' functions are cold for their callers: the compiler moves each
 * call, and the evaluation of its arguments, out of the caller's hot code. */
#define GM_TRACE_COLD __attribute__((cold))
#define GM_TRACE(call) GM_TRACE_IF(1, call)

/* The clock of the events, read at the start of something timed (a copy):
 * 0 while no trace records. */
#define GM_TRACE_TICKS() (GM_TRACE_ACTIVE() ? gm_trace_ticks() : 0)
uint64_t gm_trace_ticks(void);

/* A memory kind that an event does not know (a free: its allocation's). */
#define GM_TRACE_KIND_UNKNOWN 0xff

/* Directions of a copy. */
enum { GM_TRACE_H2D = 1, GM_TRACE_D2H = 2, GM_TRACE_D2D = 3, GM_TRACE_H2H = 4, GM_TRACE_PEER = 5 };

/* The events.  ctx, stream and pool identify objects (NULL: none; pool
 * NULL is driver memory); kind is a gpumem_memory_kind value or
 * GM_TRACE_KIND_UNKNOWN; device -1 is none; an allocation's owner is a
 * GM_TO_* of trace_format.h (GM_TO_PROGRAM, or the library's own memory). */
GM_TRACE_COLD void gm_trace_alloc(const void *ctx, int device, const void *stream, int kind, const void *pool,
                                  uint64_t bytes, uint64_t addr, unsigned owner);
GM_TRACE_COLD void gm_trace_free(const void *ctx, int device, const void *stream, int kind, const void *pool,
                                 uint64_t bytes, uint64_t addr);
/* A copy that started at t0 (GM_TRACE_TICKS) and ends now; path is the
 * engine's name for it; device2 is the destination's device of a copy
 * between devices, else -1. */
GM_TRACE_COLD void gm_trace_copy(uint64_t t0, const void *ctx, int device, int device2, const void *stream,
                                 int src_kind, int dst_kind, int direction, uint64_t bytes, const char *path);
/* One run of the out-of-memory ladder for an allocation of bytes: what it
 * gave back, and whether the retry succeeded. */
GM_TRACE_COLD void gm_trace_ladder(const void *ctx, int device, int kind, const void *pool, uint64_t bytes,
                                   uint64_t released_bytes, uint64_t released_blocks, bool retry_ok);
/* An allocation of bytes that failed for want of memory, after the ladder:
 * its status and message. */
GM_TRACE_COLD void gm_trace_oom(const void *ctx, int device, int kind, const void *pool, uint64_t bytes,
                                gpumem_status st, const char *message);
/* A pool gave its held blocks back (gpumem_pool_free_held). */
GM_TRACE_COLD void gm_trace_trim(const void *ctx, int device, int kind, const void *pool, uint64_t released_bytes,
                                 uint64_t released_blocks);

/* GPUMEM_TRACE: the first call starts the trace it names, if set; every
 * call returns the status of that start (what names the calling function
 * in the message). */
gpumem_status gm_trace_env_start(const char *what);

/* The trace's process-lifetime hooks (lifecycle.h): the writer's (exit:
 * stop; fork), and the recording threads' buffers (thread exit). */
extern const struct gm_life_hook gm_trace_life;
extern const struct gm_life_hook gm_trace_threads_life;

#endif /* GM_TRACE_H */
