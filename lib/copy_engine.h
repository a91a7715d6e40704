/*
 * copy_engine.h - the copy engine behind every copy between two arrays
 * (private; copy.c checks the arguments, copy_decide.c decides how the copy
 * moves, the engine carries it out).
 */
#ifndef GM_COPY_ENGINE_H
#define GM_COPY_ENGINE_H

#include <stddef.h>

#include "array.h"
#include "copy_decide.h"
#include "gpumem/debug.h"

/* What one copy did: its decision (a queued download's, or a copy's
 * through a temporary, is the last copy's inside it, queued kept), and
 * whether it returned only once it had landed in its destination rather
 * than queued on its stream (what GPUMEM_DEBUG=copies reports as sync,
 * copy_debug.h; found only while copies is on). */
typedef struct gm_copy_outcome {
    gm_copy_decision d;
    bool synced;
} gm_copy_outcome;

/* Copies src into dst (arguments checked: equal shape and dtype, dst
 * writable, stream in ctx or, between two devices, of either device), on
 * stream (NULL: synchronously).  ctx is the context of the device side
 * (NULL when both are host memory; the destination's between two
 * devices).  An empty copy moves nothing.  The copy is decided once
 * (copy_decide.h).  *out (NULL: not wanted) says what it did; its decision
 * is what gpumem_debug_last_copy_path reports from now on. */
gpumem_status gm_copy_run(const char *what, gpumem_array *dst, const gpumem_array *src, gpumem_stream *stream,
                          gpumem_context *ctx, gm_copy_outcome *out);

/* gm_copy_run of a copy already decided: pre, made by gm_copy_decide
 * without a probe (caps' flags all false: every capability taken as had)
 * for these arrays with this context's max_pitch and stream, runs as it
 * is once what its plan takes is acquired (the kernels, its scratch, the
 * staging engine); when one of them cannot be had, or pre is a copy
 * between devices or a failure, the copy is decided as gm_copy_run decides
 * it.  *out is what it did (copy_batch.c: the pairs that go one by one). */
gpumem_status gm_copy_run_decided(const char *what, gpumem_array *dst, const gpumem_array *src,
                                  gpumem_stream *stream, gpumem_context *ctx, const gm_copy_decision *pre,
                                  gm_copy_outcome *out);

/* The same for a copy made inside another (a queued download's slab into
 * its bounce): no poisoning, nothing reported; with pre (NULL: decided
 * here) it runs pre as gm_copy_run_decided does; *out (NULL: not wanted)
 * is its decision, for the copy that made it. */
gpumem_status gm_copy_inner(const char *what, gpumem_array *dst, const gpumem_array *src, gpumem_stream *stream,
                            gpumem_context *ctx, const gm_copy_decision *pre, gm_copy_decision *out);

/* gpumem_array_copy for the library's own calls that copy on the way
 * (to_device, a reshape's copy, a write-back, const_array_like): the same
 * checks of the arguments, the copy and its trace, with every failure named
 * after `what`, the public call made (copy.c). */
gpumem_status gm_array_copy(const char *what, gpumem_array *dst, const gpumem_array *src, gpumem_stream *stream);

/* Releases a copy's temporary array (NULL: nothing) after the copy: a
 * failure to free it says that the copy completed ("<what>: the copy
 * completed, but freeing its temporary memory failed: ..."), as it did if
 * the copy itself did not fail (a caller that failed keeps its own failure
 * with gm_keep_first). */
gpumem_status gm_copy_release_temp(const char *what, gpumem_array *tmp);

/* Runs step s of a plan (GM_STEP_RECT, GM_STEP_PACK or GM_STEP_UNPACK)
 * between two device arrays of ctx's device, with its kernels k (the
 * caller's, held; NULL for GM_STEP_RECT), on its legacy stream; complete
 * on return (copy_peer.c: the copies into and out of temporaries). */
struct gm_pack_kernels;
gpumem_status gm_copy_step_run(const char *what, gpumem_context *ctx, struct gm_pack_kernels *k, const gm_copy_step *s,
                               gpumem_array *dst, const gpumem_array *src);

/* copy_temp.c: a copy between two host-addressable arrays by the CPU,
 * synchronously (overlapping views through a temporary: via_temp). */
gpumem_status gm_copy_host(const char *what, gpumem_array *dst, const gpumem_array *src, gpumem_stream *stream,
                           bool via_temp);

/* copy_temp.c: the device temporary of a copy between overlapping device
 * views (GM_HOW_TEMP), laid out like src, owned by the library in a trace.
 * gm_copy_temp_end, once the plan's two steps (into it, out of it) were
 * queued with status st: the temporary goes once the stream is done with
 * it (a write-back at its next synchronization), or at once without a
 * stream or when the copy failed, after a wait for the stream (*synced set
 * then).  Keeps the first failure. */
gpumem_status gm_copy_temp_new(const char *what, const gpumem_array *src, gpumem_stream *stream, gpumem_array **tmp);
gpumem_status gm_copy_temp_end(const char *what, gpumem_array *tmp, gpumem_stream *stream, gpumem_context *ctx,
                               gpumem_status st, bool *synced);

/* A copy from device array src into pageable host array dst on stream (not
 * NULL), queued: into a pinned bounce block on the stream, then a host
 * function on the stream writes dst (copy_queued.c).  Returns at once.
 * d: its decision (queued; the rest that of the copy into the bounce: one
 * contiguous driver copy is run slab by slab as it is, any other way is
 * decided once per extent of slab, two at most, and each slab runs its
 * extent's decision as gm_copy_inner runs pre).  *last: the decision of
 * the last slab's copy into the bounce (left as it was when none ran);
 * *synced set when it had to wait for the stream. */
gpumem_status gm_copy_queued_download(const char *what, gpumem_array *dst, const gpumem_array *src,
                                      gpumem_stream *stream, gpumem_context *ctx, const gm_copy_decision *d,
                                      gm_copy_decision *last, bool *synced);

/* The decision of the calling thread's last copy (the one
 * gpumem_debug_last_copy_path reports), for tests. */
void gm_copy_last_decision(gm_copy_decision *out);

/* The decision's view of an array: its memory kind, device and address
 * (copy_decide.h's gm_copy_side; the strides are the array's). */
gm_copy_side gm_copy_decide_side(const gpumem_array *a);

/* Makes d the calling thread's last copy's decision (a batch's copies that
 * did not run through gm_copy_run, copy_batch.c). */
void gm_copy_report(const gm_copy_decision *d);

/* copy.c: checks a copy's arguments as gpumem_array_copy does (handles,
 * shape, dtype, a writable dst, the stream's context) and gives the context
 * of the device side (NULL for two host-side arrays); the messages start
 * with what. */
gpumem_status gm_copy_check(const char *what, gpumem_array *dst, const gpumem_array *src, gpumem_stream *stream,
                            gpumem_context **ctx);

/* copy.c: the trace's event of a copy that started at t0 and took path
 * (its decision's; call under GM_TRACE_IF). */
void gm_copy_trace(uint64_t t0, const gpumem_array *dst, const gpumem_array *src, gpumem_stream *stream,
                   gpumem_context *ctx, gpumem_copy_path path);

#endif /* GM_COPY_ENGINE_H */
