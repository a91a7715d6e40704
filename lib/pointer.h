/*
 * pointer.h - the pointer query of pointer.c for the library's own use
 * (private; top layer, see doc/design.md).
 */
#ifndef GM_POINTER_H
#define GM_POINTER_H

#include <stdint.h>

#include "gpumem/ipc.h"

/* gpumem_is_cuda_array (info, if not NULL, of a size the caller set) for a
 * public call `what` that asks on the way (an IPC handle, a DLPack import):
 * a failure is named after `what`. */
gpumem_status gm_pointer_query(const char *what, uint64_t pointer, int *result, gpumem_pointer_info *info);

#endif /* GM_POINTER_H */
