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

/* Kernels: pack and unpack, 32- and 64-bit, for units 1, 2, 4, 8, 16
 * (indices 0..19), and the same tiled for transposes (20..39). */
#define GM_PACK_NKERNELS 40
#define GM_PACK_TILED_BASE 20

/* The batched kernels (pack_params.h), after those: gm_pack_batch_32 and
 * gm_pack_batch_64, whose parameter block is a gm_pack_batch_params.  The
 * module holds GM_PACK_ALL_KERNELS kernels, gm_pack_kernel_name names them
 * all. */
#define GM_PACK_BATCH_32 40
#define GM_PACK_BATCH_64 41
#define GM_PACK_ALL_KERNELS 42

/* The index (0 .. GM_PACK_NKERNELS - 1) of a kernel, or -1 for a unit that
 * is not 1, 2, 4, 8 or 16. */
int gm_pack_kernel_index(int unit, bool wide, bool unpack);
int gm_pack_kernel_tiled_index(int unit, bool wide, bool unpack);

/* The name of kernel index i ("gm_pack_4_32", "gm_unpack_t_8_64",
 * "gm_pack_batch_32"), or NULL. */
const char *gm_pack_kernel_name(int i);

/* Kernel index i's properties, the inverse of gm_pack_kernel_index (and of
 * gm_pack_kernel_tiled_index; gm_pack_kernel_tiled tells which), for i
 * below GM_PACK_NKERNELS. */
void gm_pack_kernel_info(int i, int *unit, bool *wide, bool *unpack);
bool gm_pack_kernel_tiled(int i);

/* The block and grid a launch of p by kernel index i uses: 2-D for the
 * generic kernels (z extents 1), tiles for the tiled ones (pack_params.h). */
void gm_pack_launch_dims(int i, const gm_pack_params *p, unsigned grid[3], unsigned block[3]);

/* Runs rows [row_begin, row_end) of a pack (or unpack) on the CPU, the
 * addresses of p read as host addresses, with the library's one CPU packer
 * (cpu_pack.h's gm_cpu_pack_range).  The whole copy is rows 0 to
 * p->rows.  Disjoint row ranges may run on different threads at once. */
void gm_pack_run_host(const gm_pack_params *p, bool unpack, uint64_t row_begin, uint64_t row_end);

/* Runs kernel index i on the CPU as the GPU would (the simulator's twin of
 * a launch): the generic kernels as gm_pack_run_host, the tiled ones tile
 * by tile through a tile buffer, with pack.cu's index arithmetic. */
void gm_pack_run_kernel_host(int i, const gm_pack_params *p);

/* The byte span [*lo, *hi) of the strided side of p, relative to p->strided
 * (lo <= 0 < hi), assuming p is well formed (rows, cols >= 1). */
void gm_pack_strided_span(const gm_pack_params *p, int64_t *lo, int64_t *hi);

/* The launch shape of one batch piece of rows x cols elements (the other
 * fields of *p are not read): its bx, gx and blocks (at least 1; at most
 * 65536, the grid-stride loops do the rest). */
void gm_pack_batch_piece_dims(gm_pack_batch_piece *p);

/* Piece p as the parameter block of the single kernels (for the C twin). */
void gm_pack_batch_piece_params(const gm_pack_batch_piece *p, gm_pack_params *out);

/* Runs a batched launch on the CPU, the addresses read as host addresses:
 * each piece as gm_pack_run_host would run it alone (the pieces of one
 * launch touch disjoint bytes, so their order does not matter). */
void gm_pack_run_batch_host(const gm_pack_batch_params *p);

#endif /* GM_KERNELS_PACK_H */
