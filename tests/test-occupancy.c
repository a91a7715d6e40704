/* Device data and occupancy (pycuda.tools.DeviceData, OccupancyRecord).
 *
 * The tables below are the expected results for the A100 (sm_80) and the
 * H100/H200 (sm_90), computed outside this library by a direct transcription
 * of NVIDIA's CUDA Occupancy Calculator (cuda_occupancy.h,
 * cudaOccMaxActiveBlocksPerMultiprocessor: default carveout, partitioned
 * caching off, dynamic shared memory opted in) fed with NVIDIA's published
 * limits for those architectures (Programming Guide, "Technical
 * Specifications per Compute Capability"):
 *
 *               threads/SM blocks/SM regs/SM regs/block smem/SM  opt-in   reserved unit
 *     sm_80     2048       32        65536   65536      167936   166912   1024     128
 *     sm_90     2048       32        65536   65536      233472   232448   1024     128
 *
 * with 256-register units per warp and 4 register-file partitions.  Worked
 * examples (sm_90; W = warps per block):
 *  - 96 threads, 40 registers: a warp takes ceil(40 * 32 / 256) * 256 = 1280
 *    registers; a partition (65536 / 4 = 16384) holds floor(16384 / 1280) =
 *    12 warps, the SM 48, so floor(48 / 3) = 16 blocks (not the 17 that
 *    65536 / (1280 * 3) would give).
 *  - 256 threads, 33 registers: 33 * 32 = 1056 rounds up to 1280 per warp,
 *    48 warps, floor(48 / 8) = 6 blocks (unrounded: 7).
 *  - 288 threads, 224 registers: 9 warps of 7168 registers are 64512, under
 *    65536, but the hardware counts 12 warps (a multiple of 4): 86016, so it
 *    cannot run.
 *  - 128 threads, 20000 bytes of shared memory: 20000 + 1024 reserved =
 *    21024, rounded to 128 is 21120, floor(233472 / 21120) = 11 blocks (a
 *    256-byte unit would give 21248 and 10).
 * pycuda's OccupancyRecord would answer 8 (its fixed blocks per SM) for
 * 32 threads where these GPUs run 32 blocks, and 1 block for 128 threads
 * with 48 KB of shared memory (it divides the 48 KB per block) where the
 * A100 runs 3 and the H100 4.
 *
 * On the simulator each table runs in a child process with GPUMEM_SIM_ARCH
 * set to its architecture; on a GPU (GPUMEM_BACKEND=cuda) a table runs when
 * device 0 has its compute capability, against the driver's attributes, and
 * is skipped with the reason otherwise. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpumem.h>

#include "child.h"
#include "tap.h"

#define NL GPUMEM_OCCUPANCY_NO_LIMIT
#define DEV GPUMEM_LIMITED_BY_DEVICE
#define WARPS GPUMEM_LIMITED_BY_WARPS
#define REGS GPUMEM_LIMITED_BY_REGISTERS
#define SMEM GPUMEM_LIMITED_BY_SHARED_MEMORY
#define OK GPUMEM_OK
#define ERR GPUMEM_ERROR_INVALID_VALUE

typedef struct occ_case {
    int threads;
    size_t smem;
    int regs;
    gpumem_status status;
    int tb;
    gpumem_occupancy_limit by;
    int lim_device, lim_warps, lim_regs, lim_smem;
} occ_case;

/* sm_90 (H100, H200): every limiting factor, ties, the rounding rules and
 * every kind of error. */
static const occ_case sm90_cases[] = {
    /* threads smem    regs  status tb  by    device warps regs smem */
    {1024, 0, 0, OK, 2, WARPS, 32, 2, NL, 228},        /* reserved 1 KB per block: 233472 / 1024 */
    {32, 0, 0, OK, 32, DEV, 32, 64, NL, 228},          /* pycuda: 8 */
    {64, 0, 0, OK, 32, DEV, 32, 32, NL, 228},          /* tie device/warps: "device" */
    {96, 0, 0, OK, 21, WARPS, 32, 21, NL, 228},
    {1, 0, 0, OK, 32, DEV, 32, 64, NL, 228},
    {33, 0, 0, OK, 32, DEV, 32, 32, NL, 228},          /* 2 warps */
    {256, 0, 32, OK, 8, REGS, 32, 8, 8, 228},          /* tie regs/warps: "regs" */
    {96, 0, 40, OK, 16, REGS, 32, 21, 16, 228},        /* partitions */
    {256, 0, 33, OK, 6, REGS, 32, 8, 6, 228},          /* allocation unit */
    {1024, 0, 64, OK, 1, REGS, 32, 2, 1, 228},
    {512, 0, 48, OK, 2, REGS, 32, 4, 2, 228},
    {160, 0, 24, OK, 12, WARPS, 32, 12, 16, 228},
    {256, 0, 255, OK, 1, REGS, 32, 8, 1, 228},
    {224, 0, 255, OK, 1, REGS, 32, 9, 1, 228},         /* 7 warps, checked as 8 */
    {128, 49152, 0, OK, 4, SMEM, 32, 16, NL, 4},       /* pycuda: 1 */
    {128, 100000, 0, OK, 2, SMEM, 32, 16, NL, 2},      /* opted in above 48 KB */
    {128, 20000, 0, OK, 11, SMEM, 32, 16, NL, 11},     /* 128-byte unit */
    {32, 232448, 0, OK, 1, SMEM, 32, 64, NL, 1},       /* the opt-in maximum */
    {64, 6144, 0, OK, 32, DEV, 32, 32, NL, 32},        /* three-way tie */
    {384, 3000, 16, OK, 5, WARPS, 32, 5, 10, 57},
    {256, 20000, 32, OK, 8, REGS, 32, 8, 8, 11},
    {32, 1, 0, OK, 32, DEV, 32, 64, NL, 202},
    {1025, 0, 0, ERR, 0, WARPS, 32, 0, NL, 228},       /* too many threads */
    {2048, 0, 32, ERR, 0, WARPS, 32, 0, 1, 228},
    {32, 0, 256, ERR, 0, REGS, 32, 64, 0, 228},        /* too many registers per thread */
    {1024, 0, 72, ERR, 0, REGS, 32, 2, 0, 228},        /* ... per block */
    {288, 0, 255, ERR, 0, REGS, 32, 7, 0, 228},
    {288, 0, 224, ERR, 0, REGS, 32, 7, 0, 228},        /* the hardware's check */
    {32, 232449, 0, ERR, 0, SMEM, 32, 64, NL, 0},      /* too much shared memory */
    {1024, 300000, 255, ERR, 0, REGS, 32, 2, 0, 0},    /* registers are reported first */
};

/* sm_80 (A100). */
static const occ_case sm80_cases[] = {
    {1024, 0, 0, OK, 2, WARPS, 32, 2, NL, 164},
    {32, 0, 0, OK, 32, DEV, 32, 64, NL, 164},
    {64, 0, 0, OK, 32, DEV, 32, 32, NL, 164},
    {192, 0, 0, OK, 10, WARPS, 32, 10, NL, 164},
    {256, 0, 32, OK, 8, REGS, 32, 8, 8, 164},
    {96, 0, 40, OK, 16, REGS, 32, 21, 16, 164},
    {256, 0, 33, OK, 6, REGS, 32, 8, 6, 164},
    {512, 0, 64, OK, 2, REGS, 32, 4, 2, 164},
    {128, 49152, 0, OK, 3, SMEM, 32, 16, NL, 3},       /* pycuda: 1 */
    {256, 40000, 0, OK, 4, SMEM, 32, 8, NL, 4},
    {128, 14208, 0, OK, 11, SMEM, 32, 16, NL, 11},     /* 15232 B: 128-byte unit (256: 10) */
    {64, 8000, 0, OK, 18, SMEM, 32, 32, NL, 18},
    {32, 166912, 0, OK, 1, SMEM, 32, 64, NL, 1},       /* the opt-in maximum */
    {1025, 0, 0, ERR, 0, WARPS, 32, 0, NL, 164},
    {1024, 0, 72, ERR, 0, REGS, 32, 2, 0, 164},
    {32, 166913, 0, ERR, 0, SMEM, 32, 64, NL, 0},
};

static double absd(double x)
{
    return x < 0 ? -x : x;
}

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

typedef struct arch_case {
    const char *arch; /* GPUMEM_SIM_ARCH */
    int major, minor;
    int smem_per_mp, smem_optin;
    const occ_case *cases;
    int ncases;
} arch_case;

static const arch_case arches[] = {
    {"sm_80", 8, 0, 167936, 166912, sm80_cases, COUNT(sm80_cases)},
    {"sm_90", 9, 0, 233472, 232448, sm90_cases, COUNT(sm90_cases)},
};

/* Results per architecture: the fields, then one per case. */
static int arch_tests(const arch_case *a)
{
    return 1 + a->ncases;
}

/* The table checks of one architecture, on device 0. */
static void check_arch(const arch_case *a)
{
    gpumem_device_data *dd = NULL;
    gpumem_status st = gpumem_device_data_create(0, &dd);
    if (st != GPUMEM_OK) {
        ok(0, "%s: device data: %s", a->arch, gpumem_last_error());
        skip(a->ncases, "no device data");
        return;
    }
    /* NVIDIA's published values for the architecture, under pycuda's names
     * and ours. */
    const int want[GPUMEM_DEVICE_DATA_FIELD_COUNT] = {
        [GPUMEM_DEVICE_DATA_MAX_THREADS] = 1024,
        [GPUMEM_DEVICE_DATA_WARP_SIZE] = 32,
        [GPUMEM_DEVICE_DATA_WARPS_PER_MP] = 64,
        [GPUMEM_DEVICE_DATA_THREAD_BLOCKS_PER_MP] = 32,
        [GPUMEM_DEVICE_DATA_REGISTERS] = 65536,
        [GPUMEM_DEVICE_DATA_SHARED_MEMORY] = 49152,
        [GPUMEM_DEVICE_DATA_SMEM_GRANULARITY] = 32,
        [GPUMEM_DEVICE_DATA_SMEM_ALLOC_GRANULARITY] = 128,
        [GPUMEM_DEVICE_DATA_REGISTERS_PER_MP] = 65536,
        [GPUMEM_DEVICE_DATA_SHARED_MEMORY_PER_MP] = a->smem_per_mp,
        [GPUMEM_DEVICE_DATA_SHARED_MEMORY_OPTIN] = a->smem_optin,
        [GPUMEM_DEVICE_DATA_RESERVED_SHARED_MEMORY] = 1024,
        [GPUMEM_DEVICE_DATA_REGISTER_ALLOCATION_UNIT] = 256,
        [GPUMEM_DEVICE_DATA_MAX_REGISTERS_PER_THREAD] = 255,
        [GPUMEM_DEVICE_DATA_REGISTER_PARTITIONS] = 4,
        [GPUMEM_DEVICE_DATA_MULTIPROCESSORS] = -1, /* the product's, not the architecture's */
        [GPUMEM_DEVICE_DATA_COMPUTE_CAPABILITY] = a->major * 10 + a->minor,
        [GPUMEM_DEVICE_DATA_DEVICE] = 0,
    };
    int bad = 0;
    for (int f = 0; f < GPUMEM_DEVICE_DATA_FIELD_COUNT; f++) {
        int v = -2;
        gpumem_device_data_get(dd, (gpumem_device_data_field)f, &v);
        if (want[f] >= 0 ? v != want[f] : v <= 0) {
            diag("  %s: %s is %d, expected %d", a->arch, gpumem_device_data_field_name((gpumem_device_data_field)f),
                 v, want[f]);
            bad++;
        }
    }
    ok(bad == 0, "%s: all %d device data fields have NVIDIA's published values", a->arch,
       GPUMEM_DEVICE_DATA_FIELD_COUNT);

    for (int i = 0; i < a->ncases; i++) {
        const occ_case *c = &a->cases[i];
        gpumem_occupancy_record r = {.size = sizeof r};
        st = gpumem_occupancy(dd, c->threads, c->smem, c->regs, &r);
        int warps = (c->threads + 31) / 32;
        int good = st == c->status && r.tb_per_mp == c->tb && r.limited_by == c->by &&
                   r.tb_limit_device == c->lim_device && r.tb_limit_warps == c->lim_warps &&
                   r.tb_limit_registers == c->lim_regs && r.tb_limit_shared_memory == c->lim_smem &&
                   r.warps_per_mp == c->tb * warps && absd(r.occupancy - c->tb * warps / 64.0) < 1e-12 &&
                   r.warps_per_block == warps && (r.limiting_factors & (1u << c->by)) != 0;
        ok(good, "%s: %d threads, %zu B shared, %d registers: %d blocks, limited by %s%s", a->arch, c->threads,
           c->smem, c->regs, c->tb, gpumem_occupancy_limit_name(c->by), c->status == OK ? "" : " (an error)");
        if (!good)
            diag("  got status %s, %d blocks by %s, limits device %d warps %d regs %d smem %d, %d warps, "
                 "occupancy %g (%s)",
                 gpumem_status_string(st), r.tb_per_mp, gpumem_occupancy_limit_name(r.limited_by),
                 r.tb_limit_device, r.tb_limit_warps, r.tb_limit_registers, r.tb_limit_shared_memory,
                 r.warps_per_mp, r.occupancy, st == GPUMEM_OK ? "" : gpumem_last_error());
    }
    gpumem_device_data_destroy(dd);
}

/* In a child: the simulator with the architecture's attributes.  The child
 * prints its results with the parent's numbering and sends back the count. */
static void arch_child(const void *arg, child_result *out)
{
    const arch_case *a = arg;
    setenv("GPUMEM_SIM_ARCH", a->arch, 1);
    check_arch(a);
    out->value[0] = tap_run;
    out->value[1] = tap_failed;
}

static void run_arch(const arch_case *a, int sim)
{
    if (sim) {
        child_result res;
        int start = tap_run;
        if (run_child(arch_child, a, &res) == 0 && res.exited && res.exit_code == 0 &&
            res.value[0] == start + arch_tests(a)) {
            tap_run = (int)res.value[0];
            tap_failed = (int)res.value[1];
        } else {
            tap_run = start + arch_tests(a) - 1;
            ok(0, "%s: the child process failed (exit %d)", a->arch, res.exit_code);
        }
        return;
    }
    int major = 0, minor = 0;
    if (gpumem_device_compute_capability(0, &major, &minor) != GPUMEM_OK) {
        ok(0, "%s: compute capability of device 0: %s", a->arch, gpumem_last_error());
        skip(arch_tests(a) - 1, "no device");
    } else if (major != a->major || minor != a->minor) {
        char why[128];
        snprintf(why, sizeof why, "the %s table needs a device of compute capability %d.%d; device 0 is %d.%d",
                 a->arch, a->major, a->minor, major, minor);
        skip(arch_tests(a), why);
    } else {
        check_arch(a);
    }
}

/* Invariants of every record on the device at hand, over a sweep like the
 * driver comparison's: threads 32 to 1024 by 32, registers 0 and 16 to 255,
 * shared memory 0 to the opt-in maximum in 12 steps. */
static void sweep(const gpumem_device_data *dd)
{
    int maxwarps, optin, reserved, blocks, smem_per_mp;
    gpumem_device_data_get(dd, GPUMEM_DEVICE_DATA_WARPS_PER_MP, &maxwarps);
    gpumem_device_data_get(dd, GPUMEM_DEVICE_DATA_SHARED_MEMORY_PER_MP, &smem_per_mp);
    gpumem_device_data_get(dd, GPUMEM_DEVICE_DATA_SHARED_MEMORY_OPTIN, &optin);
    gpumem_device_data_get(dd, GPUMEM_DEVICE_DATA_RESERVED_SHARED_MEMORY, &reserved);
    gpumem_device_data_get(dd, GPUMEM_DEVICE_DATA_THREAD_BLOCKS_PER_MP, &blocks);
    static const int regs[] = {0, 16, 48, 80, 112, 144, 176, 208, 255};
    long points = 0, bad = 0, runnable = 0;
    for (int t = 32; t <= 1024; t += 32) {
        for (size_t ri = 0; ri < sizeof regs / sizeof regs[0]; ri++) {
            for (int s = 0; s <= 12; s++) {
                size_t smem = (size_t)optin * (size_t)s / 12;
                gpumem_occupancy_record r = {.size = sizeof r};
                gpumem_status st = gpumem_occupancy(dd, t, smem, regs[ri], &r);
                points++;
                int least = r.tb_limit_device;
                if (r.tb_limit_warps < least)
                    least = r.tb_limit_warps;
                if (r.tb_limit_registers < least)
                    least = r.tb_limit_registers;
                if (r.tb_limit_shared_memory < least)
                    least = r.tb_limit_shared_memory;
                int w = (t + 31) / 32;
                int good = (st == GPUMEM_OK) == (r.tb_per_mp > 0) &&
                           (st == GPUMEM_OK || st == GPUMEM_ERROR_INVALID_VALUE) && r.tb_per_mp == least &&
                           r.tb_per_mp <= blocks && r.warps_per_mp == r.tb_per_mp * w &&
                           r.warps_per_mp <= maxwarps && r.occupancy >= 0.0 && r.occupancy <= 1.0 &&
                           absd(r.occupancy - (double)r.warps_per_mp / maxwarps) < 1e-12 &&
                           (r.limiting_factors & (1u << r.limited_by)) != 0 &&
                           r.shared_memory_per_block >= smem + (size_t)reserved &&
                           r.shared_memory_per_block * (size_t)r.tb_per_mp <= (size_t)smem_per_mp;
                if (st == GPUMEM_OK)
                    runnable++;
                if (!good && bad++ < 5)
                    diag("  %d threads, %zu B, %d regs: status %d, %d blocks (limits %d %d %d %d) by %s", t, smem,
                         regs[ri], (int)st, r.tb_per_mp, r.tb_limit_device, r.tb_limit_warps, r.tb_limit_registers,
                         r.tb_limit_shared_memory, gpumem_occupancy_limit_name(r.limited_by));
            }
        }
    }
    ok(bad == 0, "a sweep of %ld workloads: tb_per_mp is the least limit, warps and occupancy follow from it, "
                 "errors exactly where no block fits (%ld runnable)", points, runnable);
}

#define GENERAL_TESTS 67

int main(void)
{
    int sim = test_on_sim();
    plan(arch_tests(&arches[0]) + arch_tests(&arches[1]) + GENERAL_TESTS);

    /* The architecture tables first: on the simulator they fork, which must
     * happen before this process touches the library. */
    for (int i = 0; i < COUNT(arches); i++)
        run_arch(&arches[i], sim);

    if (sim) {
        setenv("GPUMEM_SIM_DEVICES", "2", 1);
        setenv("GPUMEM_SIM_ARCH", "sm_86", 1);
    }
    int count = 0;
    gpumem_device_count(&count);

    /* ---- device data ---- */
    gpumem_device_data *dd = NULL;
    is_int(gpumem_device_data_create(0, &dd), GPUMEM_OK, "device data of device 0");
    if (dd == NULL)
        bail_out("no device data: %s", gpumem_last_error());
    int v = 0, attr = 0, warp = 0, tpm = 0;
    gpumem_device_data_get(dd, GPUMEM_DEVICE_DATA_MAX_THREADS, &v);
    gpumem_device_attribute(0, GPUMEM_DEVICE_MAX_THREADS_PER_BLOCK, &attr);
    ok(v == attr && v >= 1024, "max_threads is the device's threads per block (%d)", v);
    gpumem_device_data_get(dd, GPUMEM_DEVICE_DATA_WARP_SIZE, &warp);
    is_int(warp, 32, "warp_size");
    gpumem_device_data_get(dd, GPUMEM_DEVICE_DATA_WARPS_PER_MP, &v);
    gpumem_device_attribute(0, GPUMEM_DEVICE_MAX_THREADS_PER_MULTIPROCESSOR, &tpm);
    ok(v == tpm / 32 && v >= 32 && v <= 64, "warps_per_mp is threads per multiprocessor / 32 (%d)", v);
    gpumem_device_data_get(dd, GPUMEM_DEVICE_DATA_THREAD_BLOCKS_PER_MP, &v);
    gpumem_device_attribute(0, GPUMEM_DEVICE_MAX_BLOCKS_PER_MULTIPROCESSOR, &attr);
    ok(v == attr && v >= 16, "thread_blocks_per_mp is the device's (%d), not pycuda's 8", v);
    gpumem_device_data_get(dd, GPUMEM_DEVICE_DATA_REGISTERS, &v);
    gpumem_device_attribute(0, GPUMEM_DEVICE_MAX_REGISTERS_PER_BLOCK, &attr);
    ok(v == attr && v > 0, "registers is the device's registers per block (%d)", v);
    gpumem_device_data_get(dd, GPUMEM_DEVICE_DATA_SHARED_MEMORY, &v);
    gpumem_device_attribute(0, GPUMEM_DEVICE_MAX_SHARED_MEMORY_PER_BLOCK, &attr);
    ok(v == attr && v == 49152, "shared_memory is the device's shared memory per block (%d)", v);
    gpumem_device_data_get(dd, GPUMEM_DEVICE_DATA_SMEM_GRANULARITY, &v);
    is_int(v, 32, "smem_granularity: 32 banks");
    int major = 0, minor = 0;
    gpumem_device_compute_capability(0, &major, &minor);
    gpumem_device_data_get(dd, GPUMEM_DEVICE_DATA_SMEM_ALLOC_GRANULARITY, &v);
    is_int(v, major >= 8 ? 128 : 256, "smem_alloc_granularity: 128 bytes from 8.0, 256 before");
    gpumem_device_data_get(dd, GPUMEM_DEVICE_DATA_COMPUTE_CAPABILITY, &v);
    is_int(v, major * 10 + minor, "compute_capability is 10 * major + minor");
    gpumem_device_data_get(dd, GPUMEM_DEVICE_DATA_SHARED_MEMORY_PER_MP, &v);
    gpumem_device_attribute(0, GPUMEM_DEVICE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, &attr);
    is_int(v, attr, "shared_memory_per_mp is the device's");
    gpumem_device_data_get(dd, GPUMEM_DEVICE_DATA_RESERVED_SHARED_MEMORY, &v);
    is_int(v, major >= 8 ? 1024 : 0, "reserved_shared_memory: 1 KB per block from 8.0");
    gpumem_device_data_get(dd, GPUMEM_DEVICE_DATA_MULTIPROCESSORS, &v);
    gpumem_device_attribute(0, GPUMEM_DEVICE_MULTIPROCESSORS, &attr);
    ok(v == attr && v > 0, "multiprocessors (%d)", v);
    if (sim) {
        /* sm_86: the 1536-thread SMs where pycuda's fixed 64 warps are wrong. */
        int w = 0, b = 0;
        gpumem_device_data_get(dd, GPUMEM_DEVICE_DATA_WARPS_PER_MP, &w);
        gpumem_device_data_get(dd, GPUMEM_DEVICE_DATA_THREAD_BLOCKS_PER_MP, &b);
        ok(w == 48 && b == 16, "sm_86: 48 warps and 16 blocks per multiprocessor (%d, %d)", w, b);
    } else {
        skip(1, "the sm_86 check runs on the simulator");
    }

    is_int(gpumem_device_data_get(dd, (gpumem_device_data_field)GPUMEM_DEVICE_DATA_FIELD_COUNT, &v),
           GPUMEM_ERROR_INVALID_VALUE, "an unknown field is refused");
    is_int(gpumem_device_data_get(dd, GPUMEM_DEVICE_DATA_WARP_SIZE, NULL), GPUMEM_ERROR_NULL_ARGUMENT,
           "a NULL value pointer is refused");
    is_str(gpumem_device_data_field_name(GPUMEM_DEVICE_DATA_THREAD_BLOCKS_PER_MP), "thread_blocks_per_mp",
           "fields have pycuda's names");
    is_str(gpumem_device_data_field_name(GPUMEM_DEVICE_DATA_SMEM_ALLOC_GRANULARITY), "smem_alloc_granularity",
           "...all of them");
    int named = 0;
    for (int f = 0; f < GPUMEM_DEVICE_DATA_FIELD_COUNT; f++)
        named += gpumem_device_data_field_name((gpumem_device_data_field)f) != NULL;
    ok(named == GPUMEM_DEVICE_DATA_FIELD_COUNT &&
           gpumem_device_data_field_name((gpumem_device_data_field)-1) == NULL,
       "every field has a name; unknown fields have none");

    gpumem_device_data *bad = NULL;
    is_int(gpumem_device_data_create(count, &bad), GPUMEM_ERROR_INVALID_DEVICE, "a device past the last is refused");
    like(gpumem_last_error(), "gpumem_device_data_create", "the message names the function");
    is_int(gpumem_device_data_create(-2, &bad), GPUMEM_ERROR_INVALID_DEVICE, "a negative device is refused");
    ok(bad == NULL, "and no device data comes back");
    is_int(gpumem_device_data_create(0, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "a NULL out-pointer is refused");
    gpumem_device_data *def = NULL;
    is_int(gpumem_device_data_create(GPUMEM_DEVICE_DATA_DEFAULT, &def), GPUMEM_OK,
           "GPUMEM_DEVICE_DATA_DEFAULT: the default context's device (pycuda's dev=None)");
    gpumem_context *ctx = NULL;
    int ctxdev = -1;
    gpumem_autoinit(&ctx);
    gpumem_context_get_device(ctx, &ctxdev);
    v = -1;
    gpumem_device_data_get(def, GPUMEM_DEVICE_DATA_DEVICE, &v);
    is_int(v, ctxdev, "...which is the autoinit context's device");
    is_int(gpumem_device_data_destroy(def), GPUMEM_OK, "destroy");
    is_int(gpumem_device_data_destroy(NULL), GPUMEM_OK, "destroying NULL is a no-op");

    /* ---- alignment ---- */
    size_t n = 0;
    gpumem_device_data_align_bytes(dd, 4, &n);
    is_int(n, 64, "align_bytes(4) = 64");
    gpumem_device_data_align_bytes(dd, 8, &n);
    is_int(n, 128, "align_bytes(8) = 128");
    gpumem_device_data_align_bytes(dd, 16, &n);
    is_int(n, 128, "align_bytes(16) = 128");
    is_int(gpumem_device_data_align_bytes(dd, 2, &n), GPUMEM_ERROR_INVALID_VALUE, "align_bytes(2) is refused");
    like(gpumem_last_error(), "word_size 2: no alignment possible for fetches of that size", "with pycuda's words");
    gpumem_device_data_align(dd, 100, 4, &n);
    is_int(n, 128, "align(100, 4) = 128");
    gpumem_device_data_align(dd, 128, 4, &n);
    is_int(n, 128, "align(128, 4) = 128");
    gpumem_device_data_align(dd, 0, 8, &n);
    is_int(n, 0, "align(0, 8) = 0");
    gpumem_device_data_align(dd, 129, 16, &n);
    is_int(n, 256, "align(129, 16) = 256");
    is_int(gpumem_device_data_align(dd, SIZE_MAX - 10, 4, &n), GPUMEM_ERROR_OVERFLOW,
           "align past SIZE_MAX overflows");
    gpumem_device_data_align_words(dd, 4, &n);
    is_int(n, 16, "align_words(4) = 16");
    gpumem_device_data_align_words(dd, 8, &n);
    is_int(n, 16, "align_words(8) = 16");
    gpumem_device_data_align_words(dd, 16, &n);
    is_int(n, 8, "align_words(16) = 8");
    gpumem_device_data_align_dtype(dd, 10, gpumem_dtype_builtin(GPUMEM_FLOAT32), &n);
    is_int(n, 16, "align_dtype(10, float32) = 16");
    gpumem_device_data_align_dtype(dd, 17, gpumem_dtype_builtin(GPUMEM_FLOAT64), &n);
    is_int(n, 32, "align_dtype(17, float64) = 32");
    gpumem_device_data_align_dtype(dd, 1, gpumem_dtype_builtin(GPUMEM_COMPLEX128), &n);
    is_int(n, 8, "align_dtype(1, complex128) = 8");
    is_int(gpumem_device_data_align_dtype(dd, 5, gpumem_dtype_builtin(GPUMEM_INT16), &n), GPUMEM_ERROR_INVALID_VALUE,
           "align_dtype of a 2-byte type is refused");
    int ch = 0, chok = 1;
    static const int tex[][2] = {{1, 1}, {2, 2}, {3, 4}, {4, 4}};
    for (int i = 0; i < 4; i++) {
        ch = 0;
        chok &= gpumem_make_valid_tex_channel_count(tex[i][0], &ch) == GPUMEM_OK && ch == tex[i][1];
    }
    ok(chok, "make_valid_tex_channel_count: 1, 2, 3, 4 -> 1, 2, 4, 4");
    is_int(gpumem_make_valid_tex_channel_count(5, &ch), GPUMEM_ERROR_INVALID_VALUE, "...5 is refused");
    is_int(gpumem_make_valid_tex_channel_count(0, &ch), GPUMEM_ERROR_INVALID_VALUE, "...0 is refused");

    /* ---- occupancy on this device ---- */
    gpumem_occupancy_record r = {.size = sizeof r};
    int maxw = 0, maxt = 0;
    gpumem_device_data_get(dd, GPUMEM_DEVICE_DATA_WARPS_PER_MP, &maxw);
    gpumem_device_data_get(dd, GPUMEM_DEVICE_DATA_MAX_THREADS, &maxt);
    is_int(gpumem_occupancy(dd, 32 * maxw / 2, 0, 0, &r), GPUMEM_OK, "an occupancy record");
    ok(r.tb_per_mp == 2 && r.limited_by == GPUMEM_LIMITED_BY_WARPS && r.warps_per_mp == maxw && r.occupancy == 1.0,
       "blocks of half the SM's threads: 2 per SM, limited by warps, occupancy 1 (%d, %s, %g)", r.tb_per_mp,
       gpumem_occupancy_limit_name(r.limited_by), r.occupancy);
    ok(r.size == sizeof r && r.tb_limit_registers == NL && r.registers_per_block == 0,
       "registers 0 do not limit; size is kept");
    is_int(gpumem_occupancy(dd, maxt + 1, 0, 0, &r), GPUMEM_ERROR_INVALID_VALUE, "too many threads are an error");
    like(gpumem_last_error(), "too many threads", "...which says so");
    ok(r.tb_per_mp == 0 && r.limited_by == GPUMEM_LIMITED_BY_WARPS && r.occupancy == 0.0,
       "...and fills the record with 0 blocks, limited by warps");
    is_int(gpumem_occupancy(dd, 64, 0, 300, &r), GPUMEM_ERROR_INVALID_VALUE, "300 registers are an error");
    like(gpumem_last_error(), "too many registers", "...which says so");
    is_int(gpumem_occupancy(dd, 64, (size_t)1 << 30, 0, &r), GPUMEM_ERROR_INVALID_VALUE,
           "1 GiB of shared memory is an error");
    ok(strstr(gpumem_last_error(), "too much shared memory") != NULL && r.limited_by == GPUMEM_LIMITED_BY_SHARED_MEMORY,
       "...which says so and names shared memory");
    is_int(gpumem_occupancy(dd, 64, SIZE_MAX, 0, &r), GPUMEM_ERROR_INVALID_VALUE,
           "SIZE_MAX bytes of shared memory are an error, without overflow");
    is_int(gpumem_occupancy(dd, INT_MAX, 0, INT_MAX, &r), GPUMEM_ERROR_INVALID_VALUE,
           "INT_MAX threads and registers are an error, without overflow");
    r.tb_per_mp = 77;
    is_int(gpumem_occupancy(dd, 0, 0, 0, &r), GPUMEM_ERROR_INVALID_VALUE, "0 threads are refused");
    is_int(gpumem_occupancy(dd, 32, 0, -1, &r), GPUMEM_ERROR_INVALID_VALUE, "negative registers are refused");
    ok(r.tb_per_mp == 77, "...and leave the record alone");
    gpumem_occupancy_record small = {.size = sizeof small - 1};
    is_int(gpumem_occupancy(dd, 32, 0, 0, &small), GPUMEM_ERROR_INVALID_VALUE, "a record size too small is refused");
    is_int(gpumem_occupancy(NULL, 32, 0, 0, &r), GPUMEM_ERROR_NULL_ARGUMENT, "NULL device data is refused");
    ok(strcmp(gpumem_occupancy_limit_name(GPUMEM_LIMITED_BY_DEVICE), "device") == 0 &&
           strcmp(gpumem_occupancy_limit_name(GPUMEM_LIMITED_BY_WARPS), "warps") == 0 &&
           strcmp(gpumem_occupancy_limit_name(GPUMEM_LIMITED_BY_REGISTERS), "regs") == 0 &&
           strcmp(gpumem_occupancy_limit_name(GPUMEM_LIMITED_BY_SHARED_MEMORY), "smem") == 0 &&
           gpumem_occupancy_limit_name((gpumem_occupancy_limit)4) == NULL,
       "limiting factors have pycuda's names");
    sweep(dd);
    gpumem_device_data_destroy(dd);
    return exit_status();
}
