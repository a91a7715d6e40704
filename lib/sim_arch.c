/*
 * sim_arch.c - the simulator's architectures: real attribute values.
 *
 * Per-SM limits (threads, blocks, shared memory, its opt-in maximum and the
 * 1 KB reserved per block since Ampere) follow NVIDIA's "Technical
 * specifications per compute capability" table, as the CUDA C++ Core
 * Libraries encode it (cuda/__device/arch_traits.h).  SM count, clocks, L2,
 * bus width, copy engines and ECC are those deviceQuery reports for the
 * product each row imitates; the B200's memory clock is derived from its
 * published 8 TB/s over an 8192-bit bus.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "cuda_abi.h"
#include "env.h"
#include "sim.h"

static const gm_sim_arch arch_table[] = {
    /* name      model              cc      SMs  thr/SM blk/SM smem/SM  opt-in  rsv   L2         clock    memclock  bus  CE ECC */
    {"sm_75", "T4-like",            7, 5,   40,  1024, 16,  65536,  65536,  0,    4194304,   1590000, 5001000,  256,  3, 1},
    {"sm_80", "A100-like",          8, 0,   108, 2048, 32,  167936, 166912, 1024, 41943040,  1410000, 1215000,  5120, 3, 1},
    {"sm_86", "RTX 3090-like",      8, 6,   82,  1536, 16,  102400, 101376, 1024, 6291456,   1695000, 9751000,  384,  2, 0},
    {"sm_89", "RTX 4090-like",      8, 9,   128, 1536, 24,  102400, 101376, 1024, 75497472,  2520000, 10501000, 384,  2, 0},
    {"sm_90", "H100-like",          9, 0,   132, 2048, 32,  233472, 232448, 1024, 52428800,  1980000, 2619000,  5120, 3, 1},
    {"sm_100", "B200-like",         10, 0,  148, 2048, 32,  233472, 232448, 1024, 132644864, 1965000, 3906000,  8192, 3, 1},
    /* sm_120: 24 resident blocks per SM, as an RTX 5090 reports and the Programming Guide lists */
    {"sm_120", "RTX 5090-like",     12, 0,  170, 1536, 24,  102400, 101376, 1024, 100663296, 2407000, 14001000, 512,  2, 0},
};

#define ARCH_COUNT (sizeof arch_table / sizeof arch_table[0])

const gm_sim_arch *gm_sim_arch_find(const char *name)
{
    for (size_t i = 0; i < ARCH_COUNT; i++)
        if (gm_word_is(name, arch_table[i].name))
            return &arch_table[i];
    return NULL;
}

void gm_sim_arch_names(char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < ARCH_COUNT && used < len; i++) {
        int n = snprintf(buf + used, len - used, "%s%s", i ? ", " : "", arch_table[i].name);
        if (n < 0)
            break;
        used += (size_t)n;
    }
}

int gm_sim_arch_attribute(const gm_sim_arch *a, int ordinal, int busy, int attr, int *value)
{
    int v;
    switch (attr) {
    case GM_CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: v = 1024; break;
    case GM_CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: v = 1024; break;
    case GM_CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: v = 1024; break;
    case GM_CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: v = 64; break;
    case GM_CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: v = 2147483647; break;
    case GM_CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: v = 65535; break;
    case GM_CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: v = 65535; break;
    case GM_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: v = 49152; break;
    case GM_CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: v = 65536; break;
    case GM_CU_DEVICE_ATTRIBUTE_WARP_SIZE: v = 32; break;
    case GM_CU_DEVICE_ATTRIBUTE_MAX_PITCH: v = 2147483647; break;
    case GM_CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: v = 65536; break;
    case GM_CU_DEVICE_ATTRIBUTE_CLOCK_RATE: v = a->clock_khz; break;
    case GM_CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: v = 512; break;
    case GM_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: v = a->sm_count; break;
    case GM_CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT: v = 0; break; /* no display attached */
    case GM_CU_DEVICE_ATTRIBUTE_INTEGRATED: v = 0; break;
    case GM_CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: v = 1; break;
    case GM_CU_DEVICE_ATTRIBUTE_COMPUTE_MODE:
        v = busy ? GM_CU_COMPUTEMODE_EXCLUSIVE_PROCESS : GM_CU_COMPUTEMODE_DEFAULT;
        break;
    case GM_CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: v = 1; break;
    case GM_CU_DEVICE_ATTRIBUTE_ECC_ENABLED: v = a->ecc; break;
    case GM_CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: v = 0x10 + ordinal; break; /* one slot per device */
    case GM_CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: v = 0; break;
    case GM_CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: v = a->memory_clock_khz; break;
    case GM_CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: v = a->bus_width; break;
    case GM_CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: v = a->l2_bytes; break;
    case GM_CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: v = a->threads_per_sm; break;
    case GM_CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: v = a->copy_engines; break;
    case GM_CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: v = 1; break;
    case GM_CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: v = 0; break;
    case GM_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: v = a->major; break;
    case GM_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: v = a->minor; break;
    case GM_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: v = a->smem_per_sm; break;
    case GM_CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: v = 65536; break;
    case GM_CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: v = 1; break;
    case GM_CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD: v = 0; break;
    case GM_CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: v = 1; break;
    case GM_CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: v = 1; break;
    case GM_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: v = a->smem_optin; break;
    /* x86 hosts without ATS: the GPU does not walk the host page tables */
    case GM_CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES: v = 0; break;
    case GM_CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: v = a->blocks_per_sm; break;
    case GM_CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK: v = a->smem_reserved; break;
    case GM_CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED: v = 1; break;
    case GM_CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: v = 1; break;
    default: return GM_CUDA_ERROR_INVALID_VALUE;
    }
    *value = v;
    return GM_CUDA_SUCCESS;
}
