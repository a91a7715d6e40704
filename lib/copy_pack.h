/*
 * copy_pack.h - the device pack and unpack kernels, loaded once per
 * context through the kernel cache, and their launches (private; the copy
 * engine's).
 */
#ifndef GM_COPY_PACK_H
#define GM_COPY_PACK_H

#include "context.h"
#include "copyplan.h"
#include "gpumem/stream.h"

typedef struct gm_pack_kernels gm_pack_kernels;

/* The kernels live in the kernel cache, a layer above the copy engine:
 * pack_kernels.c provides these functions and lib/wiring.c hands them to the
 * engine when the library loads, so the engine names nothing above it.  The
 * calls below go through them. */
typedef struct gm_pack_provider {
    gpumem_status (*get)(gpumem_context *ctx, gm_pack_kernels **out);
    void (*put)(gm_pack_kernels *k);
    gpumem_status (*launch)(gm_pack_kernels *k, const gm_pack_plan *plan, uint64_t strided, uint64_t packed,
                            gpumem_stream *stream, const char *what);
} gm_pack_provider;

/* Sets the provider (lib/wiring.c, once, when the library loads). */
void gm_pack_provider_set(const gm_pack_provider *p);

/* The context's pack kernels, with a reference for the caller (give it back
 * with gm_pack_kernels_put once the launches are complete).  The first call
 * in a context loads lib/kernels/pack.cu's PTX through the kernel cache
 * (gpumem_module_load) and looks the kernels up; later calls are a cache
 * hit.  When the driver cannot use the PTX (CUDA_ERROR_UNSUPPORTED_PTX_VERSION
 * from a driver older than it, INVALID_PTX, NO_BINARY_FOR_GPU,
 * INVALID_IMAGE), *out is NULL and the status GPUMEM_OK: the copy engine
 * does without, and that is remembered for the context (not retried until
 * gpumem_clear_context_caches).  Other failures are returned.  Without a
 * provider, *out is NULL too. */
gpumem_status gm_pack_kernels_get(gpumem_context *ctx, gm_pack_kernels **out);
void gm_pack_kernels_put(gm_pack_kernels *k);

/* Launches the plan's kernel on stream (NULL: the legacy default stream)
 * between the strided side's element 0 at strided and the packed side's at
 * packed (device addresses); queued, not waited for. */
gpumem_status gm_pack_launch(gm_pack_kernels *k, const gm_pack_plan *plan, uint64_t strided, uint64_t packed,
                             gpumem_stream *stream, const char *what);

#endif /* GM_COPY_PACK_H */
