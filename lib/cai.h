/*
 * cai.h - the CUDA Array Interface calls of cai.c for the library's own use
 * (private; top layer, see doc/design.md).
 */
#ifndef GM_CAI_H
#define GM_CAI_H

#include "gpumem/interop.h"

/* gpumem_array_interface and gpumem_as_cuda_array (handle and NULL
 * arguments checked) for a public call `what` that uses them on the way (an
 * IPC handle, an IPC open): every failure is named after `what`. */
gpumem_status gm_array_interface(const char *what, const gpumem_array *array, gpumem_stream *stream,
                                 gpumem_cuda_array_interface *desc);
gpumem_status gm_as_cuda_array(const char *what, gpumem_context *ctx, const gpumem_cuda_array_interface *desc,
                               unsigned flags, void (*release)(void *owner), void *owner, gpumem_array **array);

#endif /* GM_CAI_H */
