/*
 * memo.h - the per-context caches behind gpumem_memoize (private).
 *
 * Each context gets its own table on first use (ctx->memo); the final
 * gpumem_context_release drops it through memo.c's context hook.  The
 * kernel cache of module.c is one more user of it.
 */
#ifndef GM_MEMO_H
#define GM_MEMO_H

#include <stddef.h>

#include "context.h"
#include "gpumem/memo.h"

/* gpumem_memoize, with `what` naming the caller in messages and an acquire
 * hook: acquire(value), when not NULL, runs while the entry cannot be
 * dropped (under its table's lock), on a hit and for the creator, so a
 * reference-counted value can be retained before a concurrent
 * gpumem_clear_context_caches destroys the cache's reference.  ctx must not
 * be NULL. */
gpumem_status gm_memo_get(const char *what, gpumem_context *ctx, const void *key, size_t key_size,
                          gpumem_memo_create_fn create, gpumem_memo_destroy_fn destroy, void *user,
                          void (*acquire)(void *value), void **value);

/* The context hook (lib/wiring.c): drops the context's values. */
extern const gm_context_hook gm_memo_hook;

#endif /* GM_MEMO_H */
