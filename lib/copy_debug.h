/*
 * copy_debug.h - GPUMEM_DEBUG=poison and GPUMEM_DEBUG=copies (private; the
 * arrays-and-copies layer).
 *
 * poison: the bytes a program should not read yet are filled with a
 * pattern (GPUMEM_DEBUG_POISON_WORD, gpumem/debug.h), so that a read too
 * early sees garbage instead of a lucky stale value:
 *  - a new array of a public constructor (device, pinned, mapped, managed,
 *    host, pool arrays), filled before the constructor returns: host-side
 *    memory by the CPU, device memory by the driver's memset on the
 *    constructor's stream (without one, on a private non-blocking stream
 *    that the constructor waits for, so that nothing else is waited for);
 *  - the destination of a download queued on a stream: pageable memory
 *    (copy_queued.c) by the CPU when the download is queued; page-locked
 *    memory (pinned, mapped, registered) in the stream's order just before
 *    the copy (at once when the stream and the legacy default stream are
 *    idle, else by a host function on the stream), so that work queued
 *    before it (an upload from the same buffer) still reads the caller's
 *    bytes.
 * Each element gets the pattern's bytes from its own first byte.  Off, each
 * hook costs one relaxed load.
 *
 * copies: one line on stderr per copy between arrays (copy.c's array_copy,
 * the point the memory trace records copies at; one per batched call,
 * copy_batch.c's): the call, the direction,
 * the engine's path, the bytes, the time the call took, and whether it
 * returned only once the copy had landed (the engine's gm_copy_outcome).
 */
#ifndef GM_COPY_DEBUG_H
#define GM_COPY_DEBUG_H

#include <stdbool.h>
#include <stdint.h>

#include "array.h"
#include "env.h"
#include "gpumem/debug.h"
#include "stream.h"

static inline bool gm_poison_on(void)
{
    return (gm_debug_flags() & GM_DEBUG_POISON) != 0;
}

static inline bool gm_copies_on(void)
{
    return (gm_debug_flags() & GM_DEBUG_COPIES) != 0;
}

/* A public constructor's end: st is what it made *out with.  When st is
 * GPUMEM_OK and poison is on, fills the new array with the pattern, on
 * stream (NULL: see above); if that fails, releases the array, sets *out
 * to NULL and returns the failure, its message prefixed by what. */
gpumem_status gm_poison_new_array(const char *what, gpumem_status st, gpumem_stream *stream, gpumem_array **out);

/* Fills the elements of a, a host-side array whose memory the CPU may
 * write now, with the pattern (its gaps stay).  Out of host memory (for a
 * strided array's plan of more than 64-byte items), fills nothing. */
void gm_poison_host(const gpumem_array *a);

/* A download into a (page-locked host memory) is about to be queued on
 * stream (not NULL) of ctx: the pattern goes into a's elements first, in
 * the stream's order.  Best effort: when the driver refuses the host
 * function, nothing is filled and no failure is recorded. */
void gm_poison_before_download(const gpumem_array *a, gpumem_stream *stream, gpumem_context *ctx);

/* A clock for the copies' times: nanoseconds, monotonic. */
uint64_t gm_copies_clock(void);

/* The line of a copy between arrays that started at t0 (gm_copies_clock),
 * took path (its decision's) and ended with st; sync: it returned only
 * once the copy had landed. */
void gm_copies_line(const char *what, uint64_t t0, gpumem_status st, const gpumem_array *dst,
                    const gpumem_array *src, gpumem_copy_path path, bool sync);

/* The line of a batch of n pairs (gpumem_array_copy_batch, pack, unpack:
 * dst[i] <- src[i], the buffer's pieces on its side) that started at t0
 * and ended with st: one line for the call, its direction that of every
 * pair ("mixed" when they differ), path (the last pair's), the bytes of
 * every destination, and pairs=n at its end; on_stream: queued on a stream
 * (sync=no, unless every pair is between host arrays). */
void gm_copies_batch_line(const char *what, uint64_t t0, gpumem_status st, size_t n, gpumem_array *const *dst,
                          gpumem_array *const *src, gpumem_copy_path path, bool on_stream);

#endif /* GM_COPY_DEBUG_H */
