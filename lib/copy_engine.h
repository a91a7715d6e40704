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

/* A copy from device array src into pageable host array dst on stream (not
 * NULL), queued: into a pinned bounce block on the stream, then a host
 * function on the stream writes dst (copy_queued.c).  Returns at once. */
gpumem_status gm_copy_queued_download(const char *what, gpumem_array *dst, const gpumem_array *src,
                                      gpumem_stream *stream, gpumem_context *ctx);

/* The decision of the calling thread's last copy (the one
 * gpumem_debug_last_copy_path reports), for tests. */
void gm_copy_last_decision(gm_copy_decision *out);

#endif /* GM_COPY_ENGINE_H */
