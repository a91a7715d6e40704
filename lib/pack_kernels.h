/*
 * pack_kernels.h - the pack kernels of the kernel cache, as the copy
 * engine's provider (private; top layer, see doc/design.md).
 */
#ifndef GM_PACK_KERNELS_H
#define GM_PACK_KERNELS_H

#include "copy_pack.h"

/* The provider of pack_kernels.c: the context's pack kernels, loaded once
 * through the kernel cache and memoized, and their launches.  lib/wiring.c
 * hands it to the copy engine (gm_pack_provider_set). */
const gm_pack_provider *gm_pack_kernels_provider(void);

#endif /* GM_PACK_KERNELS_H */
