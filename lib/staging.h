/*
 * staging.h - the staging engine of pageable transfers (private; the copy
 * engine's).  gpumem/staging.h describes it and its settings.
 */
#ifndef GM_STAGING_H
#define GM_STAGING_H

#include <stddef.h>

#include "context.h"
#include "alloc.h"
#include "driver.h"

typedef struct gm_staging gm_staging;

/* The settings' min_bytes (read from the environment once). */
gpumem_status gm_staging_min_bytes(size_t *out);

/* The context's engine, made on first use, held for the caller alone until
 * gm_staging_release; *out NULL when another copy is using it. */
gpumem_status gm_staging_acquire(gpumem_context *ctx, gm_staging **out);
void gm_staging_release(gm_staging *e);

/* bytes from pageable src to device dst, on ds; returns once src was read
 * (async) or the bytes arrived (!async). */
gpumem_status gm_staging_upload(gm_staging *e, gm_cu_deviceptr dst, const void *src, size_t bytes, gm_dstream *ds,
                                int async, const char *what);

/* bytes from device src to pageable dst, on ds; returns once they arrived. */
gpumem_status gm_staging_download(gm_staging *e, void *dst, gm_cu_deviceptr src, size_t bytes, gm_dstream *ds,
                                  const char *what);

/* A pinned block of at least bytes for a download queued on a stream
 * (copy_queued.c): one the engine kept, else a new one from the allocator.
 * It goes back through gm_staging_bounce_put once the stream is done with
 * it. */
gpumem_status gm_staging_bounce_get(gpumem_context *ctx, size_t bytes, const char *what, gm_block *out);

/* Gives b back: kept for reuse (a few blocks per context, freed with the
 * engine), or freed.  b is cleared.  The status is the allocator's free's. */
gpumem_status gm_staging_bounce_put(gpumem_context *ctx, gm_block *b);

/* The context hook (lib/wiring.c): ends the context's staging engine. */
extern const gm_context_hook gm_staging_hook;

#endif /* GM_STAGING_H */
