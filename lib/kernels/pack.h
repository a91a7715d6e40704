/*
 * pack.h - the library's pack and unpack kernels (private): their PTX
 * (pack_ptx.c, generated from pack.cu), their names, the launch shape, and
 * the same kernels in C (pack_host.c), which the simulator runs for a
 * launch of them and the CPU packing of a strided host side uses.
 */
#ifndef GM_KERNELS_PACK_H
#define GM_KERNELS_PACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/pack_params.h"

/* The PTX of pack.cu, NUL-terminated; its size counts the NUL. */
extern const char gm_pack_ptx[];
extern const size_t gm_pack_ptx_size;

/* Kernels: pack and unpack, 32- and 64-bit, for units 1, 2, 4, 8, 16. */
#define GM_PACK_NKERNELS 20

/* The index (0 .. GM_PACK_NKERNELS - 1) of a kernel, or -1 for a unit that
 * is not 1, 2, 4, 8 or 16. */
int gm_pack_kernel_index(int unit, bool wide, bool unpack);

/* The name of kernel index i ("gm_pack_4_32"), or NULL. */
const char *gm_pack_kernel_name(int i);

/* Kernel index i's properties, the inverse of gm_pack_kernel_index. */
void gm_pack_kernel_info(int i, int *unit, bool *wide, bool *unpack);

/* The block and grid a launch of p uses (2-D; z extents 1). */
void gm_pack_launch_dims(const gm_pack_params *p, unsigned grid[3], unsigned block[3]);

/* Runs rows [row_begin, row_end) of a pack (or unpack) on the CPU, the
 * addresses of p read as host addresses.  The whole copy is rows 0 to
 * p->rows.  Disjoint row ranges may run on different threads at once. */
void gm_pack_run_host(const gm_pack_params *p, bool unpack, uint64_t row_begin, uint64_t row_end);

/* The byte span [*lo, *hi) of the strided side of p, relative to p->strided
 * (lo <= 0 < hi), assuming p is well formed (rows, cols >= 1). */
void gm_pack_strided_span(const gm_pack_params *p, int64_t *lo, int64_t *hi);

#endif /* GM_KERNELS_PACK_H */
