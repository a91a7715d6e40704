/*
 * pack_params.h - the parameter block of the library's pack and unpack
 * kernels (pack.cu), shared by the CUDA source, the host code that plans
 * and launches them (the copy engine, copy_packed.c, through the launcher
 * in pack_provider.c) and the C implementation the simulator and the CPU
 * packing run (pack_host.c).  Plain C that nvcc and a C11 compiler read alike.
 *
 * A pack kernel gathers a strided view into a packed (contiguous) buffer;
 * an unpack kernel scatters a packed buffer into a strided view.  The host
 * collapses the copy first (copyplan.c, gm_pack_plan_make) into
 *   rows x cols elements of `unit` bytes (1, 2, 4, 8 or 16),
 * packed in row-major order at `packed`; element (r, c) of the strided side
 * is at strided + row_offset(r) + c * col_stride, where row_offset(r)
 * decomposes r over outer_shape (outermost first) and sums index x
 * outer_stride.  Strides are bytes, of any sign, zero included (a pack may
 * read one element many times; an unpack's planner refuses zero).
 *
 * Kernel names: gm_pack_<unit>_<bits> and gm_unpack_<unit>_<bits>, and the
 * tiled ones for transposes, gm_pack_t_<unit>_<bits> and
 * gm_unpack_t_<unit>_<bits> (same parameter block, same result), with
 * bits 32 when rows and cols are below 2^31 and every byte offset of the
 * strided side fits in int32 (32-bit index arithmetic), else 64.  Each
 * takes one parameter, the block by value.  Blocks are 2-D (x over the
 * columns, y over rows), grids 2-D; both loops are grid-stride loops, so
 * any grid covers the copy.  The tiled kernels take 2-D blocks of
 * GM_PACK_TILE x GM_PACK_TILE_ROWS threads and 3-D grids (x over tiles of
 * columns, y over tiles of the innermost outer axis, z over the other outer
 * axes), grid-stride loops too.
 */
#ifndef GM_PACK_PARAMS_H
#define GM_PACK_PARAMS_H

#define GM_PACK_MAX_OUTER 32 /* GPUMEM_MAX_NDIM, plus the axis that splits an item into units, less the inner */
#define GM_PACK_THREADS 256  /* threads per block (blockDim.x * blockDim.y) */
#define GM_PACK_TILE 32      /* the tiled kernels: a tile is GM_PACK_TILE x GM_PACK_TILE elements */
#define GM_PACK_TILE_ROWS 8  /* ... moved by blocks of GM_PACK_TILE x GM_PACK_TILE_ROWS threads */

typedef struct gm_pack_params {
    unsigned long long strided;    /* device address of the strided side's element (0, 0) */
    unsigned long long packed;     /* device address of the packed buffer */
    unsigned long long rows;       /* product of outer_shape (1 when nouter == 0) */
    unsigned long long cols;       /* elements per row */
    long long col_stride;          /* strided side's bytes between columns */
    int nouter;                    /* 0 .. GM_PACK_MAX_OUTER */
    int unit;                      /* bytes per element: 1, 2, 4, 8 or 16 */
    long long outer_shape[GM_PACK_MAX_OUTER];
    long long outer_stride[GM_PACK_MAX_OUTER];
} gm_pack_params;

/*
 * The batched kernels, gm_pack_batch_32 and gm_pack_batch_64, move up to
 * GM_PACK_BATCH_MAX pieces in one launch, each a pack or an unpack of its
 * own unit, collapsed as above but with at most GM_PACK_BATCH_OUTER outer
 * axes (the faces of a halo: a row, a column, a plane of a 3-D block).  The
 * pieces are passed by value, so a launch needs no descriptor table in
 * device memory (the block stays under the 4 KiB that every driver takes).
 * Blocks are 1-D, GM_PACK_THREADS threads; the grid is 1-D: piece k owns
 * blocks [block_begin, block_begin + blocks), seen as gx blocks over the
 * columns by blocks / gx over the rows, and its threads as bx over the
 * columns by GM_PACK_THREADS / bx over the rows (bx a power of two); both
 * loops are grid-stride loops over the piece's blocks.  The 32-bit kernel
 * needs what the 32-bit single kernels need, for every piece.
 */
#define GM_PACK_BATCH_MAX 32  /* pieces per launch */
#define GM_PACK_BATCH_OUTER 2 /* outer axes per piece */

typedef struct gm_pack_batch_piece {
    unsigned long long strided;    /* device address of the strided side's element (0, 0) */
    unsigned long long packed;     /* device address of the packed bytes */
    unsigned long long rows;       /* product of outer_shape (1 when nouter == 0) */
    unsigned long long cols;       /* elements per row */
    long long col_stride;          /* strided side's bytes between columns */
    long long outer_shape[GM_PACK_BATCH_OUTER];
    long long outer_stride[GM_PACK_BATCH_OUTER];
    unsigned block_begin;          /* the piece's first block */
    unsigned blocks;               /* its blocks: gx x (blocks / gx) */
    unsigned gx;                   /* blocks over the columns */
    unsigned bx;                   /* threads over the columns: 1, 2, 4 .. GM_PACK_THREADS */
    int nouter;                    /* 0 .. GM_PACK_BATCH_OUTER */
    int unit;                      /* bytes per element: 1, 2, 4, 8 or 16 */
    int unpack;                    /* 0: strided -> packed; 1: packed -> strided */
    int pad_;                      /* 0 */
} gm_pack_batch_piece;

typedef struct gm_pack_batch_params {
    int count;                     /* pieces: 1 .. GM_PACK_BATCH_MAX */
    unsigned nblocks;              /* the grid: the last piece's block_begin + blocks */
    gm_pack_batch_piece piece[GM_PACK_BATCH_MAX];
} gm_pack_batch_params;

#endif /* GM_PACK_PARAMS_H */
