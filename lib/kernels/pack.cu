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
