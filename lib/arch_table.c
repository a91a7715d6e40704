/*
 * arch_table.c - per-compute-capability limits and allocation rules.
 *
 * Sources, by column (the references are NVIDIA's):
 *
 *  [PG]   CUDA C++ Programming Guide, "Compute Capabilities", table
 *         "Technical Specifications per Compute Capability": resident
 *         threads, warps and blocks per SM, 32-bit registers per SM, per
 *         block and per thread, shared memory per SM and per block; and the
 *         per-architecture sections ("Compute Capability 7.x", "8.x", "9.0",
 *         "10.0", "12.0"), which list the shared memory capacities (the
 *         carveouts) the unified L1/shared memory can be configured to, and
 *         the 1 KB of shared memory the system reserves per block from 8.0.
 *  [OCC]  cuda_occupancy.h, the CUDA Occupancy Calculator of the toolkit
 *         (cudaOccMaxActiveBlocksPerMultiprocessor), and the CUDA Occupancy
 *         Calculator spreadsheet it replaced: register allocation unit 256,
 *         allocated per warp (cudaOccRegAllocationGranularity); register
 *         file sub-partitions per SM, 4, and 2 on 6.0
 *         (cudaOccSubPartitionsPerMultiprocessor, the spreadsheet's "warp
 *         allocation granularity"); shared memory allocation unit 256 bytes
 *         up to 7.x and 128 from 8.0 (cudaOccSMemAllocationGranularity);
 *         the carveout sizes it rounds a preference up to
 *         (cudaOccAlignUpShmemSizeVoltaPlus).
 *  [CCCL] libcu++'s cuda/__device/arch_traits.h (NVIDIA CCCL), which
 *         encodes [PG] per architecture: the rows for 10.3 (as 10.0), 11.0
 *         (10.0's shared memory with 1536 threads and 24 blocks per SM) and
 *         12.x (1536 threads, 24 blocks, 100 KB per SM, 99 KB per block).
 *  [ATTR] the device attributes of the driver API (cuDeviceGetAttribute)
 *         report the same limits on real devices; where one exists it wins
 *         over this table (occupancy.c).
 *
 * Common to every row: 64 K registers per SM [PG]; 64 K registers per block
 * except 32 K on 5.3 and 6.2 [PG]; 255 registers per thread [PG] (the
 * compiler never assigns more); 48 KB of shared memory per block without
 * opt-in [PG]; 32 shared memory banks [PG "Shared Memory" of 5.x and
 * later].  The opt-in maximum per block is the SM's shared memory less the
 * reserved kilobyte from 8.0 [PG, CCCL], and 48 KB (no opt-in) before 7.0.
 */
#include "config.h"

#include <stddef.h>

#include "arch_table.h"

#define KB 1024

/* Shared-memory carveouts per SM in KB [PG, OCC]. */
#define CARVE_FIXED(kb) {kb}, 1                                          /* not configurable: 5.x, 6.x */
#define CARVE_VOLTA {0, 8, 16, 32, 64, 96}, 6                            /* 7.0, 7.2 */
#define CARVE_TURING {32, 64}, 2                                         /* 7.5 */
#define CARVE_GA100 {0, 8, 16, 32, 64, 100, 132, 164}, 8                 /* 8.0, 8.7 */
#define CARVE_GA10X {0, 8, 16, 32, 64, 100}, 6                           /* 8.6, 8.9, 12.x */
#define CARVE_GH100 {0, 8, 16, 32, 64, 100, 132, 164, 196, 228}, 10      /* 9.0, 10.x, 11.0 */

static const gm_arch rows[] = {
    /* cc     thr/SM blk/SM regs/SM regs/blk r/thr runit parts smem/blk  opt-in     sunit rsv   banks carveouts */
    {5, 0,    2048,  32,    65536,  65536,  255,  256,  4,    48 * KB,  48 * KB,   256,  0,    32,   CARVE_FIXED(64)},
    {5, 2,    2048,  32,    65536,  65536,  255,  256,  4,    48 * KB,  48 * KB,   256,  0,    32,   CARVE_FIXED(96)},
    {5, 3,    2048,  32,    65536,  32768,  255,  256,  4,    48 * KB,  48 * KB,   256,  0,    32,   CARVE_FIXED(64)},
    {6, 0,    2048,  32,    65536,  65536,  255,  256,  2,    48 * KB,  48 * KB,   256,  0,    32,   CARVE_FIXED(64)},
    {6, 1,    2048,  32,    65536,  65536,  255,  256,  4,    48 * KB,  48 * KB,   256,  0,    32,   CARVE_FIXED(96)},
    {6, 2,    2048,  32,    65536,  32768,  255,  256,  4,    48 * KB,  48 * KB,   256,  0,    32,   CARVE_FIXED(64)},
    {7, 0,    2048,  32,    65536,  65536,  255,  256,  4,    48 * KB,  96 * KB,   256,  0,    32,   CARVE_VOLTA},
    {7, 2,    2048,  32,    65536,  65536,  255,  256,  4,    48 * KB,  96 * KB,   256,  0,    32,   CARVE_VOLTA},
    {7, 5,    1024,  16,    65536,  65536,  255,  256,  4,    48 * KB,  64 * KB,   256,  0,    32,   CARVE_TURING},
    {8, 0,    2048,  32,    65536,  65536,  255,  256,  4,    48 * KB,  163 * KB,  128,  1 * KB, 32, CARVE_GA100},
    {8, 6,    1536,  16,    65536,  65536,  255,  256,  4,    48 * KB,  99 * KB,   128,  1 * KB, 32, CARVE_GA10X},
    {8, 7,    1536,  16,    65536,  65536,  255,  256,  4,    48 * KB,  163 * KB,  128,  1 * KB, 32, CARVE_GA100},
    {8, 9,    1536,  24,    65536,  65536,  255,  256,  4,    48 * KB,  99 * KB,   128,  1 * KB, 32, CARVE_GA10X},
    {9, 0,    2048,  32,    65536,  65536,  255,  256,  4,    48 * KB,  227 * KB,  128,  1 * KB, 32, CARVE_GH100},
    {10, 0,   2048,  32,    65536,  65536,  255,  256,  4,    48 * KB,  227 * KB,  128,  1 * KB, 32, CARVE_GH100},
    {10, 3,   2048,  32,    65536,  65536,  255,  256,  4,    48 * KB,  227 * KB,  128,  1 * KB, 32, CARVE_GH100},
    {11, 0,   1536,  24,    65536,  65536,  255,  256,  4,    48 * KB,  227 * KB,  128,  1 * KB, 32, CARVE_GH100},
    {12, 0,   1536,  24,    65536,  65536,  255,  256,  4,    48 * KB,  99 * KB,   128,  1 * KB, 32, CARVE_GA10X},
    {12, 1,   1536,  24,    65536,  65536,  255,  256,  4,    48 * KB,  99 * KB,   128,  1 * KB, 32, CARVE_GA10X},
};

#define ROW_COUNT ((int)(sizeof rows / sizeof rows[0]))

const gm_arch *gm_arch_lookup(int major, int minor, int *exact)
{
    const gm_arch *best = NULL;
    int want = major * 10 + minor, found = 0;
    for (int i = 0; i < ROW_COUNT; i++) {
        int cc = rows[i].major * 10 + rows[i].minor;
        if (cc > want)
            break;
        best = &rows[i];
        found = cc == want;
    }
    if (exact != NULL)
        *exact = found;
    return best;
}
