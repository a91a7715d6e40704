/*
 * bench-kernel.cu - the plain kernel `gpumem bench --peer` measures beside
 * the library's copies between devices (tools/cmd-bench-peer.c): one
 * thread per element of a 2-D float32 view, reading the source view and
 * writing the destination view, either of which may be the other device's
 * memory through the peer mapping.  No tiling, no packing: what a user
 * would write first, the baseline of the strided peer rows.
 *
 *   gm_bench_copy_f32(dst, src, rows, cols, ds0, ds1, ss0, ss1)
 *     dst[r * ds0 + c * ds1] = src[r * ss0 + c * ss1], strides in elements;
 *     blocks of 256 threads along c, grid y along r, grid-stride loops.
 *
 * Generated into tools/bench-kernel-ptx.c (PTX for compute_75) by
 * tools/ptx-embed.sh, like the library's pack kernels.
 */
extern "C" __global__ void __launch_bounds__(256)
gm_bench_copy_f32(float *dst, const float *src, long long rows, long long cols, long long ds0, long long ds1,
                  long long ss0, long long ss1)
{
    for (long long r = blockIdx.y; r < rows; r += gridDim.y)
        for (long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x; c < cols;
             c += (long long)gridDim.x * blockDim.x)
            dst[r * ds0 + c * ds1] = src[r * ss0 + c * ss1];
}
