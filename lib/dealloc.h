/*
 * dealloc.h - the per-context queue of deferred frees (private): numba's
 * pending-deallocation queue.  Made with each context (a context hook, which
 * reads the limits from the environment) and flushed at its final release.
 */
#ifndef GM_DEALLOC_H
#define GM_DEALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "context.h"
#include "driver.h"
#include "gpumem/status.h"

struct gpumem_context;

typedef enum gm_free_kind {
    GM_FREE_DEVICE,  /* cuMemFree: device and managed memory */
    GM_FREE_HOST     /* cuMemFreeHost: pinned and mapped memory */
} gm_free_kind;

/* The queue (dealloc.c); ctx->dealloc. */
typedef struct gm_dealloc gm_dealloc;

/* Queues a free of memory the library allocated; flushes if over the limits
 * and no defer_cleanup scope is open.  The status is the flush's, its
 * failure named by `what`, the public call that frees. */
gpumem_status gm_dealloc_free(struct gpumem_context *ctx, gm_free_kind kind, uint64_t ptr, size_t bytes,
                              const char *what);

/* For an allocation that failed for lack of memory: flushes the queue if
 * that is allowed and frees something.  True when a retry may succeed;
 * *frees and *bytes get what the flush freed. */
bool gm_dealloc_flush_for_retry(struct gpumem_context *ctx, uint64_t *frees, uint64_t *bytes);

/* The context hook (lib/wiring.c): makes the queue with the context and
 * flushes it at the final release. */
extern const gm_context_hook gm_dealloc_hook;

#endif /* GM_DEALLOC_H */
