/*
 * pack_kernels.h - the pack kernels of the kernel cache, as the copy
 * engine's provider (private; top layer, see doc/design.md).
 */
#ifndef GM_PACK_KERNELS_H
#define GM_PACK_KERNELS_H

#include "copy_pack.h"

/* The provider of pack_kernels.c: the context's pack kernels, loaded once
 * through the kernel cache and memoized, and their launches.  pack_kernels.c
 * registers it when the library loads; it is named here for internal tests,
 * whose static link would otherwise leave it out. */
const gm_pack_provider *gm_pack_kernels_provider(void);

#endif /* GM_PACK_KERNELS_H */
