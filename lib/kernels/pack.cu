/*
 * pack.cu - the library's pack (gather) and unpack (scatter) kernels:
 * a strided or permuted device view to and from contiguous scratch, so that
 * a strided copy moves over the link in one contiguous transfer
 * (pack_params.h describes the parameter block and the names).
 *
 * The packed side is indexed row-major, threads of a warp on consecutive
 * columns, so its accesses coalesce; the strided side's row offset is
 * decomposed once per row (a multiply for a 2-D copy, the only division is
 * per row for more axes).  The 32-bit variants keep every index and offset
 * in 32 bits; the 64-bit ones are for copies that need them.
 *
 * The tiled variants (gm_pack_t_*, gm_unpack_t_*) are for permuted views,
 * where the strided side runs contiguously along the rows, not the columns
 * (a transpose): a block moves a 32 x 32 tile of rows x columns through
 * shared memory, reading the strided side along the rows and the packed
 * side along the columns, so that both coalesce.  The rows are split as
 * (hi, lo): lo the innermost outer axis (the tile's rows), hi the others.
 * Blocks are 32 x 8 threads; grid x over column tiles, y over row tiles, z
 * over hi, all grid-stride loops.
 *
 * The batched kernels (gm_pack_batch_32, gm_pack_batch_64) run up to
 * GM_PACK_BATCH_MAX pieces of a batch of copies in one launch: a block
 * finds its piece by its index (a scan of at most 32 block ranges), and
 * runs the generic loops above over the piece's share of the grid, with
 * the piece's unit and direction.
 *
 * Generated into lib/kernels/pack_ptx.c (PTX for compute_75, the lowest
 * architecture CUDA 13 compiles for) by tools/ptx-embed.sh; the library
 * builds without a CUDA toolkit from that file.
 */
#include "pack_params.h"

struct __align__(16) gm_unit16 {
    unsigned long long lo, hi;
};

template <typename U, typename S>
__device__ __forceinline__ S row_offset(const gm_pack_params &p, U row)
{
    if (p.nouter == 1)
        return (S)row * (S)p.outer_stride[0];
    S off = 0;
#pragma unroll 1
    for (int k = p.nouter - 1; k > 0; k--) {
        U n = (U)p.outer_shape[k];
        U q = row / n;
        off += (S)(row - q * n) * (S)p.outer_stride[k];
        row = q;
    }
    if (p.nouter > 0)
        off += (S)row * (S)p.outer_stride[0];
    return off;
}

template <typename T, typename U, typename S, bool UNPACK>
__device__ __forceinline__ void run(const gm_pack_params &p)
{
    char *strided = (char *)p.strided;
    T *packed = (T *)p.packed;
    const U rows = (U)p.rows, cols = (U)p.cols;
    const S cs = (S)p.col_stride;
    const U ystep = (U)gridDim.y * blockDim.y, xstep = (U)gridDim.x * blockDim.x;
    for (U r = (U)blockIdx.y * blockDim.y + threadIdx.y; r < rows; r += ystep) {
        char *srow = strided + row_offset<U, S>(p, r);
        T *prow = packed + (unsigned long long)r * (unsigned long long)cols;
        for (U c = (U)blockIdx.x * blockDim.x + threadIdx.x; c < cols; c += xstep) {
            T *s = (T *)(srow + (S)c * cs);
            if (UNPACK)
                *s = prow[c];
            else
                prow[c] = *s;
        }
    }
}

/* The offset of row hi * nlo of a tiled copy: hi decomposed over the outer
 * axes but the innermost. */
template <typename U, typename S>
__device__ __forceinline__ S hi_offset(const gm_pack_params &p, U h)
{
    S off = 0;
#pragma unroll 1
    for (int k = p.nouter - 2; k > 0; k--) {
        U n = (U)p.outer_shape[k];
        U q = h / n;
        off += (S)(h - q * n) * (S)p.outer_stride[k];
        h = q;
    }
    if (p.nouter >= 2)
        off += (S)h * (S)p.outer_stride[0];
    return off;
}

template <typename T, typename U, typename S, bool UNPACK>
__device__ __forceinline__ void run_tiled(const gm_pack_params &p)
{
    __shared__ T tile[GM_PACK_TILE][GM_PACK_TILE + 1]; /* [column][row] of the tile; +1: no bank conflicts */
    char *strided = (char *)p.strided;
    T *packed = (T *)p.packed;
    const U cols = (U)p.cols;
    const S cs = (S)p.col_stride;
    const U nlo = p.nouter > 0 ? (U)p.outer_shape[p.nouter - 1] : (U)1;
    const S slo = p.nouter > 0 ? (S)p.outer_stride[p.nouter - 1] : (S)0;
    const U nhi = (U)p.rows / nlo;
    const unsigned tx = threadIdx.x, ty = threadIdx.y;
    for (U h = blockIdx.z; h < nhi; h += gridDim.z) {
        const S hoff = hi_offset<U, S>(p, h);
        const unsigned long long prow = (unsigned long long)h * nlo;
        for (U r0 = (U)blockIdx.y * GM_PACK_TILE; r0 < nlo; r0 += (U)gridDim.y * GM_PACK_TILE) {
            for (U c0 = (U)blockIdx.x * GM_PACK_TILE; c0 < cols; c0 += (U)gridDim.x * GM_PACK_TILE) {
                if (!UNPACK) {
                    const U r = r0 + tx; /* along the strided side's rows */
                    for (unsigned j = ty; j < GM_PACK_TILE; j += GM_PACK_TILE_ROWS) {
                        const U c = c0 + j;
                        if (r < nlo && c < cols)
                            tile[j][tx] = *(const T *)(strided + hoff + (S)r * slo + (S)c * cs);
                    }
                    __syncthreads();
                    const U c = c0 + tx; /* along the packed side's columns */
                    for (unsigned j = ty; j < GM_PACK_TILE; j += GM_PACK_TILE_ROWS) {
                        const U rr = r0 + j;
                        if (rr < nlo && c < cols)
                            packed[(prow + rr) * cols + c] = tile[tx][j];
                    }
                } else {
                    const U c = c0 + tx;
                    for (unsigned j = ty; j < GM_PACK_TILE; j += GM_PACK_TILE_ROWS) {
                        const U rr = r0 + j;
                        if (rr < nlo && c < cols)
                            tile[tx][j] = packed[(prow + rr) * cols + c];
                    }
                    __syncthreads();
                    const U r = r0 + tx;
                    for (unsigned j = ty; j < GM_PACK_TILE; j += GM_PACK_TILE_ROWS) {
                        const U cc = c0 + j;
                        if (r < nlo && cc < cols)
                            *(T *)(strided + hoff + (S)r * slo + (S)cc * cs) = tile[j][tx];
                    }
                }
                __syncthreads(); /* the tile is free again */
            }
        }
    }
}

#define GM_PACK_KERNELS(T, E)                                                                           \
    extern "C" __global__ void __launch_bounds__(GM_PACK_THREADS) gm_pack_##E##_32(const gm_pack_params p)   \
    {                                                                                                   \
        run<T, unsigned, int, false>(p);                                                                \
    }                                                                                                   \
    extern "C" __global__ void __launch_bounds__(GM_PACK_THREADS) gm_pack_##E##_64(const gm_pack_params p)   \
    {                                                                                                   \
        run<T, unsigned long long, long long, false>(p);                                                \
    }                                                                                                   \
    extern "C" __global__ void __launch_bounds__(GM_PACK_THREADS) gm_unpack_##E##_32(const gm_pack_params p) \
    {                                                                                                   \
        run<T, unsigned, int, true>(p);                                                                 \
    }                                                                                                   \
    extern "C" __global__ void __launch_bounds__(GM_PACK_THREADS) gm_unpack_##E##_64(const gm_pack_params p) \
    {                                                                                                   \
        run<T, unsigned long long, long long, true>(p);                                                 \
    }

GM_PACK_KERNELS(unsigned char, 1)
GM_PACK_KERNELS(unsigned short, 2)
GM_PACK_KERNELS(unsigned int, 4)
GM_PACK_KERNELS(unsigned long long, 8)
GM_PACK_KERNELS(gm_unit16, 16)

#define GM_PACK_TILED_KERNELS(T, E)                                                                          \
    extern "C" __global__ void __launch_bounds__(GM_PACK_THREADS) gm_pack_t_##E##_32(const gm_pack_params p)   \
    {                                                                                                        \
        run_tiled<T, unsigned, int, false>(p);                                                               \
    }                                                                                                        \
    extern "C" __global__ void __launch_bounds__(GM_PACK_THREADS) gm_pack_t_##E##_64(const gm_pack_params p)   \
    {                                                                                                        \
        run_tiled<T, unsigned long long, long long, false>(p);                                               \
    }                                                                                                        \
    extern "C" __global__ void __launch_bounds__(GM_PACK_THREADS) gm_unpack_t_##E##_32(const gm_pack_params p) \
    {                                                                                                        \
        run_tiled<T, unsigned, int, true>(p);                                                                \
    }                                                                                                        \
    extern "C" __global__ void __launch_bounds__(GM_PACK_THREADS) gm_unpack_t_##E##_64(const gm_pack_params p) \
    {                                                                                                        \
        run_tiled<T, unsigned long long, long long, true>(p);                                                \
    }

GM_PACK_TILED_KERNELS(unsigned char, 1)
GM_PACK_TILED_KERNELS(unsigned short, 2)
GM_PACK_TILED_KERNELS(unsigned int, 4)
GM_PACK_TILED_KERNELS(unsigned long long, 8)
GM_PACK_TILED_KERNELS(gm_unit16, 16)

/* ---- the batched kernels ------------------------------------------------------------------------ */

template <typename U, typename S>
__device__ __forceinline__ S batch_row_offset(const gm_pack_batch_piece &p, U row)
{
    if (p.nouter == 0)
        return 0;
    if (p.nouter == 1)
        return (S)row * (S)p.outer_stride[0];
    U n = (U)p.outer_shape[1];
    U q = row / n;
    return (S)q * (S)p.outer_stride[0] + (S)(row - q * n) * (S)p.outer_stride[1];
}

template <typename T, typename U, typename S>
__device__ __forceinline__ void run_piece(const gm_pack_batch_piece &p, unsigned b)
{
    char *strided = (char *)p.strided;
    T *packed = (T *)p.packed;
    const U rows = (U)p.rows, cols = (U)p.cols;
    const S cs = (S)p.col_stride;
    const unsigned bx = p.bx, by = GM_PACK_THREADS / bx, gx = p.gx, gy = p.blocks / p.gx;
    const unsigned tx = threadIdx.x & (bx - 1), ty = threadIdx.x / bx;
    const U ystep = (U)gy * by, xstep = (U)gx * bx;
    const bool unpack = p.unpack != 0;
    for (U r = (U)(b / gx) * by + ty; r < rows; r += ystep) {
        char *srow = strided + batch_row_offset<U, S>(p, r);
        T *prow = packed + (unsigned long long)r * (unsigned long long)cols;
        for (U c = (U)(b % gx) * bx + tx; c < cols; c += xstep) {
            T *s = (T *)(srow + (S)c * cs);
            if (unpack)
                *s = prow[c];
            else
                prow[c] = *s;
        }
    }
}

template <typename U, typename S>
__device__ __forceinline__ void run_batch(const gm_pack_batch_params &p)
{
    int k = 0;
    while (k + 1 < p.count && blockIdx.x >= p.piece[k + 1].block_begin)
        k++;
    const gm_pack_batch_piece &q = p.piece[k];
    const unsigned b = blockIdx.x - q.block_begin;
    switch (q.unit) {
    case 1: run_piece<unsigned char, U, S>(q, b); break;
    case 2: run_piece<unsigned short, U, S>(q, b); break;
    case 4: run_piece<unsigned int, U, S>(q, b); break;
    case 8: run_piece<unsigned long long, U, S>(q, b); break;
    default: run_piece<gm_unit16, U, S>(q, b); break;
    }
}

extern "C" __global__ void __launch_bounds__(GM_PACK_THREADS) gm_pack_batch_32(const gm_pack_batch_params p)
{
    run_batch<unsigned, int>(p);
}

extern "C" __global__ void __launch_bounds__(GM_PACK_THREADS) gm_pack_batch_64(const gm_pack_batch_params p)
{
    run_batch<unsigned long long, long long>(p);
}
