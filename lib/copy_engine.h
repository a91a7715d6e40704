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

/* Copies src into dst (arguments checked: equal shape and dtype, dst
 * writable, stream in ctx or, between two devices, of either device), on
 * stream (NULL: synchronously).  ctx is the context of the device side
 * (NULL when both are host memory; the destination's between two
 * devices).  An empty copy moves nothing.  The decision of a copy the
 * caller made (not one made inside another copy) is what
 * gpumem_debug_last_copy_path reports. */
gpumem_status gm_copy_run(const char *what, gpumem_array *dst, const gpumem_array *src, gpumem_stream *stream,
                          gpumem_context *ctx);

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

/* copy_temp.c: a copy between two host-addressable arrays by the CPU,
 * synchronously (overlapping views through a temporary: via_temp). */
gpumem_status gm_copy_host(const char *what, gpumem_array *dst, const gpumem_array *src, gpumem_stream *stream,
                           bool via_temp);

/* copy_temp.c: overlapping device views, through a device temporary: two
 * copies; the temporary goes once the stream is done with it (its next
 * synchronization), or at once without a stream. */
gpumem_status gm_copy_temp(const char *what, gpumem_array *dst, const gpumem_array *src, gpumem_stream *stream,
                           gpumem_context *ctx);

/* A copy from device array src into pageable host array dst on stream (not
 * NULL), queued: into a pinned bounce block on the stream, then a host
 * function on the stream writes dst (copy_queued.c).  Returns at once. */
gpumem_status gm_copy_queued_download(const char *what, gpumem_array *dst, const gpumem_array *src,
                                      gpumem_stream *stream, gpumem_context *ctx);

/* The decision of the calling thread's last copy (the one
 * gpumem_debug_last_copy_path reports), for tests. */
void gm_copy_last_decision(gm_copy_decision *out);

/* Whether the calling thread's last copy (a gm_copy_run of the caller's,
 * not one made inside a copy) returned only once it had landed in its
 * destination, rather than queued on its stream: what GPUMEM_DEBUG=copies
 * reports as sync (copy_debug.h); kept only while copies is on.  gm_copy_note_synced says so for the
 * copy running now, from a way that had to wait for its stream after all. */
bool gm_copy_last_synced(void);
void gm_copy_note_synced(void);

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

/* copy.c: the trace's event of a copy that started at t0, with the path
 * gpumem_debug_last_copy_path reports (call under GM_TRACE_IF). */
void gm_copy_trace(uint64_t t0, const gpumem_array *dst, const gpumem_array *src, gpumem_stream *stream,
                   gpumem_context *ctx);

#endif /* GM_COPY_ENGINE_H */
