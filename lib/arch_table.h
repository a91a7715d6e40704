/*
 * arch_table.h - per-compute-capability limits and allocation rules, for
 * device data and occupancy (occupancy.c).
 *
 * One row per compute capability from 5.0 to 12.1; arch_table.c says where
 * every number comes from.  The limits that the driver also reports as
 * device attributes (threads, blocks, registers and shared memory per
 * multiprocessor and per block, the reserved shared memory) are only used
 * where an old driver lacks the attribute; the allocation rules (units,
 * partitions, banks) exist nowhere else.
 */
#ifndef GM_ARCH_TABLE_H
#define GM_ARCH_TABLE_H

/* The most shared-memory carveouts an architecture offers. */
#define GM_ARCH_MAX_CARVEOUTS 10

typedef struct gm_arch {
    int major, minor;
    int max_threads_per_sm;       /* resident threads per SM (warps * 32) */
    int max_blocks_per_sm;        /* resident blocks per SM */
    int registers_per_sm;         /* 32-bit registers per SM */
    int max_registers_per_block;  /* 32-bit registers per block */
    int max_registers_per_thread; /* 255 */
    int register_unit;            /* registers are allocated per warp in units of this many */
    int register_partitions;      /* register-file partitions (SM sub-partitions) per SM */
    int smem_per_block;           /* bytes per block without opt-in (48 KB) */
    int smem_per_block_optin;     /* bytes per block with opt-in */
    int smem_unit;                /* shared memory allocation unit, bytes */
    int smem_reserved;            /* bytes the driver reserves per block */
    int smem_banks;               /* shared memory banks (pycuda's smem_granularity) */
    /* The shared-memory sizes per SM (KB) the L1/shared split can be set to,
     * ascending; the last is the SM's shared memory (the driver's occupancy
     * default).  One entry where shared memory is not configurable. */
    int carveouts_kb[GM_ARCH_MAX_CARVEOUTS];
    int ncarveouts;
} gm_arch;

/* The SM's shared memory in bytes: the largest carveout. */
static inline int gm_arch_smem_per_sm(const gm_arch *a)
{
    return a->carveouts_kb[a->ncarveouts - 1] * 1024;
}

/* The row of compute capability major.minor: the exact one, else the
 * closest one below it (*exact says which); NULL below 5.0. */
const gm_arch *gm_arch_lookup(int major, int minor, int *exact);

#endif /* GM_ARCH_TABLE_H */
