/*
 * interop.h - what the CUDA Array Interface (cai.c) and DLPack (dlpack.c)
 * share (private): checking a layout that another library describes, and
 * wrapping its memory as an array that tells the owner when it is gone.
 */
#ifndef GM_INTEROP_H
#define GM_INTEROP_H

#include <stdint.h>

#include "gpumem/array.h"

/* Checks a foreign layout: the shape (gm_layout_check_shape: ndim, negative
 * extents, overflow), strides (NULL: C order) whose extent fits in int64_t,
 * a data address that is not 0 for a non-empty array (`data_name` names the
 * field in the message), and [data + lo, data + hi) inside the 64-bit
 * address space. */
gpumem_status gm_interop_check_layout(const char *what, const char *data_name, int ndim, const int64_t *shape,
                                      const int64_t *strides, size_t itemsize, uint64_t data);

#endif /* GM_INTEROP_H */
