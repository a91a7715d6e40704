/*
 * copy_engine.h - the copy engine behind every copy between two arrays
 * (private; copy.c checks the arguments, the engine chooses the path and
 * runs it).
 */
#ifndef GM_COPY_ENGINE_H
#define GM_COPY_ENGINE_H

#include <stddef.h>

#include "array.h"
#include "gpumem/debug.h"

/* DMA rows narrower than this many bytes run far below the link's speed
 * (the copy engine moves each row as a separate burst): the engine packs
 * such copies instead of issuing a 2-D or 3-D copy.  Measured with
 * `gpumem bench --rows` on an H100 (PCIe gen5, 64 MiB, 2026-11-24): 2-D DMA
 * moves 128-byte rows at 51-52 GB/s, as fast as packing (50.7), 64-byte rows
 * at 43-45 GB/s against packing's 49-50, and 8-byte rows at 3.6-6.3 GB/s
 * against 47-48 (bench/RESULTS.md); GPUMEM_COPY_MIN_ROW_BYTES overrides it. */
#define GM_COPY_MIN_ROW_BYTES 128

/* A host side at least this big is packed by several CPU threads. */
#define GM_COPY_CPU_THREAD_BYTES (4u << 20)

/* At most this many threads pack on the CPU. */
#define GM_COPY_CPU_MAX_THREADS 8

/* Copies src into dst (arguments checked: equal shape and dtype, dst
 * writable, stream in ctx), on stream (NULL: synchronously).  ctx is the
 * context of the device side (NULL when both are host memory).  Records the
 * path for gpumem_debug_last_copy_path. */
gpumem_status gm_copy_run(const char *what, gpumem_array *dst, const gpumem_array *src, gpumem_stream *stream,
                          gpumem_context *ctx);

/* A copy from device array src into pageable host array dst on stream (not
 * NULL), queued: into a pinned bounce block on the stream, then a host
 * function on the stream writes dst (copy_queued.c).  Returns at once. */
gpumem_status gm_copy_queued_download(const char *what, gpumem_array *dst, const gpumem_array *src,
                                      gpumem_stream *stream, gpumem_context *ctx);

/* Records path as the calling thread's last copy path (for copies that run
 * outside the engine, copy_peer.c's). */
void gm_copy_set_last_path(gpumem_copy_path path);

/* The row width below which DMA is avoided: GPUMEM_COPY_MIN_ROW_BYTES, read
 * once, else GM_COPY_MIN_ROW_BYTES. */
gpumem_status gm_copy_min_row_bytes(size_t *out);

#endif /* GM_COPY_ENGINE_H */
