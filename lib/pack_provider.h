/*
 * pack_provider.h - the kernels' side of the pack kernels: loaded through
 * the kernel cache and launched, as the copy engine's provider (private;
 * top layer, see doc/design.md).  The caller's side is pack_calls.h.
 */
#ifndef GM_PACK_PROVIDER_H
#define GM_PACK_PROVIDER_H

#include "pack_calls.h"

/* The provider of pack_provider.c: the context's pack kernels, loaded once
 * through the kernel cache and memoized, and their launches.  lib/wiring.c
 * hands it to the copy engine (gm_pack_provider_set). */
const gm_pack_provider *gm_pack_kernels_provider(void);

/* Frees the idle device scratch of every context's kernels that
 * gm_alloc_keepable says no cache may keep (blocks of a destroyed pool), so
 * that the pool, and its reference to its context, can end; scratch in use
 * is freed when its copy gives it back.  lib/wiring.c makes it the pools'
 * destroy hook (gm_pool_set_destroy_hook). */
void gm_pack_scratch_drop_unkept(void);

#endif /* GM_PACK_PROVIDER_H */
