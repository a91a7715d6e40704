/*
 * occupancy.c - device data (pycuda.tools.DeviceData) and the occupancy
 * calculator (pycuda.tools.OccupancyRecord).
 *
 * The calculator reproduces cuOccupancyMaxActiveBlocksPerMultiprocessor,
 * whose rules NVIDIA publishes as the CUDA Occupancy Calculator in the
 * toolkit header cuda_occupancy.h (cudaOccMaxActiveBlocksPerMultiprocessor).
 * Each rule below names the function of that header it follows ([OCC]
 * fn); arch_table.c lists the other sources.
 */
#include "config.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpumem/context.h"
#include "gpumem/occupancy.h"

#include "arch_table.h"
#include "context.h"
#include "cuda_abi.h"
#include "driver.h"
#include "error.h"
#include "handles.h"

struct gpumem_device_data {
    gm_handle h; /* first: the lifecycle check (handles.h) */
    int device, major, minor;
    const gm_arch *arch;
    int value[GPUMEM_DEVICE_DATA_FIELD_COUNT];
};

static const char *const field_names[GPUMEM_DEVICE_DATA_FIELD_COUNT] = {
    [GPUMEM_DEVICE_DATA_MAX_THREADS] = "max_threads",
    [GPUMEM_DEVICE_DATA_WARP_SIZE] = "warp_size",
    [GPUMEM_DEVICE_DATA_WARPS_PER_MP] = "warps_per_mp",
    [GPUMEM_DEVICE_DATA_THREAD_BLOCKS_PER_MP] = "thread_blocks_per_mp",
    [GPUMEM_DEVICE_DATA_REGISTERS] = "registers",
    [GPUMEM_DEVICE_DATA_SHARED_MEMORY] = "shared_memory",
    [GPUMEM_DEVICE_DATA_SMEM_GRANULARITY] = "smem_granularity",
    [GPUMEM_DEVICE_DATA_SMEM_ALLOC_GRANULARITY] = "smem_alloc_granularity",
    [GPUMEM_DEVICE_DATA_REGISTERS_PER_MP] = "registers_per_mp",
    [GPUMEM_DEVICE_DATA_SHARED_MEMORY_PER_MP] = "shared_memory_per_mp",
    [GPUMEM_DEVICE_DATA_SHARED_MEMORY_OPTIN] = "shared_memory_optin",
    [GPUMEM_DEVICE_DATA_RESERVED_SHARED_MEMORY] = "reserved_shared_memory",
    [GPUMEM_DEVICE_DATA_REGISTER_ALLOCATION_UNIT] = "register_allocation_unit",
    [GPUMEM_DEVICE_DATA_MAX_REGISTERS_PER_THREAD] = "max_registers_per_thread",
    [GPUMEM_DEVICE_DATA_REGISTER_PARTITIONS] = "register_partitions",
    [GPUMEM_DEVICE_DATA_MULTIPROCESSORS] = "multiprocessors",
    [GPUMEM_DEVICE_DATA_COMPUTE_CAPABILITY] = "compute_capability",
    [GPUMEM_DEVICE_DATA_DEVICE] = "device",
};

/* ---- device data --------------------------------------------------------------- */

/* One attribute.  An attribute the driver does not know (an older driver:
 * CUDA_ERROR_INVALID_VALUE) takes the table's value when there is one
 * (fallback >= 0); a known one that disagrees with the table is noted under
 * GPUMEM_DEBUG, and the driver's value wins: it is what the driver's own
 * occupancy calculation uses. */
static gpumem_status attr(int device, int id, const char *name, int fallback, int *value)
{
    int v = 0;
    int rc = GM_DRV(device_get_attribute, device, id, &v);
    if (rc == GM_CUDA_ERROR_INVALID_VALUE && fallback >= 0) {
        gm_debug("device data: device %d has no attribute %s; using the table's %d", device, name, fallback);
        *value = fallback;
        return GPUMEM_OK;
    }
    gpumem_status st = gm_drv_check(rc, GM_OP_device_get_attribute, "gpumem_device_data_create");
    if (st != GPUMEM_OK)
        return st;
    if (fallback >= 0 && v != fallback)
        gm_debug("device data: device %d reports %s = %d; the architecture table says %d", device, name, v,
                 fallback);
    *value = v;
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_device_data_create(int device, gpumem_device_data **dd)
{
    GM_CHECK_NULL(dd);
    gpumem_status st;
    if (device == GPUMEM_DEVICE_DATA_DEFAULT) {
        /* pycuda's DeviceData(dev=None): the current context's device. */
        gpumem_context *ctx = gm_context_use(NULL, "gpumem_device_data_create", &st);
        if (st != GPUMEM_OK)
            return st;
        device = ctx->device;
    }
    int count, major, minor;
    if ((st = gm_device_count("gpumem_device_data_create", &count)) != GPUMEM_OK)
        return st;
    if (device < 0 || device >= count)
        return gm_error(GPUMEM_ERROR_INVALID_DEVICE,
                        "gpumem_device_data_create: no device %d: the %s backend sees %d device%s", device,
                        gm_drv->name, count, count == 1 ? "" : "s");
    if ((st = gm_device_compute_capability("gpumem_device_data_create", device, &major, &minor)) != GPUMEM_OK)
        return st;
    int exact = 0;
    const gm_arch *a = gm_arch_lookup(major, minor, &exact);
    if (a == NULL)
        return gm_error(GPUMEM_ERROR_NOT_SUPPORTED,
                        "gpumem_device_data_create: device %d has compute capability %d.%d; the occupancy "
                        "model covers 5.0 and later", device, major, minor);
    if (!exact)
        gm_debug("device data: compute capability %d.%d is not in the architecture table; using %d.%d's "
                 "allocation rules", major, minor, a->major, a->minor);

    gpumem_device_data *d = gm_handle_new_zeroed(GM_HANDLE_DEVICE_DATA, sizeof *d);
    if (d == NULL)
        return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "gpumem_device_data_create: out of host memory");
    d->device = device;
    d->major = major;
    d->minor = minor;
    d->arch = a;
    int *v = d->value;
    int threads_per_sm = 0;
    /* The limits: the device's attributes ([ATTR] in arch_table.c); the
     * multiprocessor count has no table value. */
    if ((st = attr(device, GM_CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "MAX_THREADS_PER_BLOCK", 1024,
                   &v[GPUMEM_DEVICE_DATA_MAX_THREADS])) != GPUMEM_OK ||
        (st = attr(device, GM_CU_DEVICE_ATTRIBUTE_WARP_SIZE, "WARP_SIZE", 32, &v[GPUMEM_DEVICE_DATA_WARP_SIZE])) !=
            GPUMEM_OK ||
        (st = attr(device, GM_CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, "MAX_THREADS_PER_MULTIPROCESSOR",
                   a->max_threads_per_sm, &threads_per_sm)) != GPUMEM_OK ||
        (st = attr(device, GM_CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, "MAX_BLOCKS_PER_MULTIPROCESSOR",
                   a->max_blocks_per_sm, &v[GPUMEM_DEVICE_DATA_THREAD_BLOCKS_PER_MP])) != GPUMEM_OK ||
        (st = attr(device, GM_CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, "MAX_REGISTERS_PER_BLOCK",
                   a->max_registers_per_block, &v[GPUMEM_DEVICE_DATA_REGISTERS])) != GPUMEM_OK ||
        (st = attr(device, GM_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, "MAX_SHARED_MEMORY_PER_BLOCK",
                   a->smem_per_block, &v[GPUMEM_DEVICE_DATA_SHARED_MEMORY])) != GPUMEM_OK ||
        (st = attr(device, GM_CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR,
                   "MAX_REGISTERS_PER_MULTIPROCESSOR", a->registers_per_sm,
                   &v[GPUMEM_DEVICE_DATA_REGISTERS_PER_MP])) != GPUMEM_OK ||
        (st = attr(device, GM_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
                   "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR", gm_arch_smem_per_sm(a),
                   &v[GPUMEM_DEVICE_DATA_SHARED_MEMORY_PER_MP])) != GPUMEM_OK ||
        (st = attr(device, GM_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                   "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", a->smem_per_block_optin,
                   &v[GPUMEM_DEVICE_DATA_SHARED_MEMORY_OPTIN])) != GPUMEM_OK ||
        (st = attr(device, GM_CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK,
                   "RESERVED_SHARED_MEMORY_PER_BLOCK", a->smem_reserved,
                   &v[GPUMEM_DEVICE_DATA_RESERVED_SHARED_MEMORY])) != GPUMEM_OK ||
        (st = attr(device, GM_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "MULTIPROCESSOR_COUNT", -1,
                   &v[GPUMEM_DEVICE_DATA_MULTIPROCESSORS])) != GPUMEM_OK) {
        gm_handle_free(d);
        return st;
    }
    /* The allocation rules: the table only. */
    v[GPUMEM_DEVICE_DATA_SMEM_GRANULARITY] = a->smem_banks;
    v[GPUMEM_DEVICE_DATA_SMEM_ALLOC_GRANULARITY] = a->smem_unit;
    v[GPUMEM_DEVICE_DATA_REGISTER_ALLOCATION_UNIT] = a->register_unit;
    v[GPUMEM_DEVICE_DATA_MAX_REGISTERS_PER_THREAD] = a->max_registers_per_thread;
    v[GPUMEM_DEVICE_DATA_REGISTER_PARTITIONS] = a->register_partitions;
    v[GPUMEM_DEVICE_DATA_COMPUTE_CAPABILITY] = major * 10 + minor;
    v[GPUMEM_DEVICE_DATA_DEVICE] = device;
    int warp = v[GPUMEM_DEVICE_DATA_WARP_SIZE];
    if (warp <= 0 || threads_per_sm < warp || v[GPUMEM_DEVICE_DATA_MAX_THREADS] <= 0 ||
        v[GPUMEM_DEVICE_DATA_THREAD_BLOCKS_PER_MP] <= 0 || v[GPUMEM_DEVICE_DATA_REGISTERS] <= 0 ||
        v[GPUMEM_DEVICE_DATA_REGISTERS_PER_MP] <= 0 || v[GPUMEM_DEVICE_DATA_SHARED_MEMORY] <= 0 ||
        v[GPUMEM_DEVICE_DATA_SHARED_MEMORY_PER_MP] <= 0 || v[GPUMEM_DEVICE_DATA_SHARED_MEMORY_OPTIN] < 0 ||
        v[GPUMEM_DEVICE_DATA_RESERVED_SHARED_MEMORY] < 0) {
        st = gm_error(GPUMEM_ERROR_DRIVER,
                      "gpumem_device_data_create: device %d reports implausible limits (warp size %d, "
                      "%d threads per multiprocessor, %d blocks per multiprocessor)",
                      device, warp, threads_per_sm, v[GPUMEM_DEVICE_DATA_THREAD_BLOCKS_PER_MP]);
        gm_handle_free(d);
        return st;
    }
    /* pycuda hard-codes 64 from 3.0; the device's resident threads decide. */
    v[GPUMEM_DEVICE_DATA_WARPS_PER_MP] = threads_per_sm / warp;
    *dd = d;
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_device_data_destroy(gpumem_device_data *dd)
{
    if (dd == NULL)
        return GPUMEM_OK;
    GM_END_HANDLE(dd);
    gm_handle_free(dd);
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_device_data_get(const gpumem_device_data *dd, gpumem_device_data_field field,
                                                int *value)
{
    GM_CHECK_HANDLE(dd);
    GM_CHECK_NULL(value);
    if ((unsigned)field >= GPUMEM_DEVICE_DATA_FIELD_COUNT)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE,
                        "gpumem_device_data_get: field %d is not a gpumem_device_data_field (0 to %d)", (int)field,
                        GPUMEM_DEVICE_DATA_FIELD_COUNT - 1);
    *value = dd->value[field];
    return GPUMEM_OK;
}

GPUMEM_API const char *gpumem_device_data_field_name(gpumem_device_data_field field)
{
    return (unsigned)field < GPUMEM_DEVICE_DATA_FIELD_COUNT ? field_names[field] : NULL;
}

/* ---- alignment (pycuda's DeviceData.align*) -------------------------------------- */

/* pycuda's align_bytes: 16 words of 4 bytes, and 128 bytes for 8 and 16 (a
 * half-warp's coalesced access, capped at a 128-byte line). */
static gpumem_status align_bytes(size_t word_size, size_t *bytes, const char *what, const char *arg)
{
    switch (word_size) {
    case 4: *bytes = 64; return GPUMEM_OK;
    case 8:
    case 16: *bytes = 128; return GPUMEM_OK;
    default:
        return gm_error(GPUMEM_ERROR_INVALID_VALUE,
                        "%s: %s %zu: no alignment possible for fetches of that size (only 4, 8 and 16 have one)",
                        what, arg, word_size);
    }
}

/* x rounded up to a multiple of unit (> 0), or GPUMEM_ERROR_OVERFLOW. */
static gpumem_status round_up_size(size_t x, size_t unit, size_t *out, const char *what, const char *arg)
{
    size_t r = x % unit;
    if (r == 0) {
        *out = x;
        return GPUMEM_OK;
    }
    if (x > SIZE_MAX - (unit - r))
        return gm_error(GPUMEM_ERROR_OVERFLOW, "%s: %s %zu rounded up to a multiple of %zu does not fit in a size_t",
                        what, arg, x, unit);
    *out = x + (unit - r);
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_device_data_align_bytes(const gpumem_device_data *dd, size_t word_size,
                                                        size_t *bytes)
{
    GM_CHECK_HANDLE(dd);
    GM_CHECK_NULL(bytes);
    return align_bytes(word_size, bytes, "gpumem_device_data_align_bytes", "word_size");
}

GPUMEM_API gpumem_status gpumem_device_data_align(const gpumem_device_data *dd, size_t bytes, size_t word_size,
                                                  size_t *aligned)
{
    GM_CHECK_HANDLE(dd);
    GM_CHECK_NULL(aligned);
    size_t unit = 1;
    gpumem_status st = align_bytes(word_size, &unit, "gpumem_device_data_align", "word_size");
    if (st == GPUMEM_OK)
        st = round_up_size(bytes, unit, aligned, "gpumem_device_data_align", "bytes");
    return st;
}

static gpumem_status align_words(size_t word_size, size_t *words, const char *what, const char *arg)
{
    size_t bytes;
    gpumem_status st = align_bytes(word_size, &bytes, what, arg);
    if (st != GPUMEM_OK)
        return st;
    /* pycuda checks that the division leaves no remainder. */
    if (bytes % word_size != 0)
        return gm_error(GPUMEM_ERROR_INTERNAL, "%s: an alignment of %zu bytes is not a whole number of %zu-byte words",
                        what, bytes, word_size);
    *words = bytes / word_size;
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_device_data_align_words(const gpumem_device_data *dd, size_t word_size,
                                                        size_t *words)
{
    GM_CHECK_HANDLE(dd);
    GM_CHECK_NULL(words);
    return align_words(word_size, words, "gpumem_device_data_align_words", "word_size");
}

GPUMEM_API gpumem_status gpumem_device_data_align_dtype(const gpumem_device_data *dd, size_t elements,
                                                        const gpumem_dtype *dtype, size_t *aligned)
{
    GM_CHECK_HANDLE(dd);
    GM_CHECK_HANDLE(dtype);
    GM_CHECK_NULL(aligned);
    size_t itemsize = 0, words = 1;
    gpumem_status st = gpumem_dtype_itemsize(dtype, &itemsize);
    if (st == GPUMEM_OK)
        st = align_words(itemsize, &words, "gpumem_device_data_align_dtype", "the dtype's item size");
    if (st == GPUMEM_OK)
        st = round_up_size(elements, words, aligned, "gpumem_device_data_align_dtype", "elements");
    return st;
}

GPUMEM_API gpumem_status gpumem_make_valid_tex_channel_count(int size, int *count)
{
    GM_CHECK_NULL(count);
    static const int valid[] = {1, 2, 4};
    if (size < 1)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE,
                        "gpumem_make_valid_tex_channel_count: size %d is not a channel count (1 or more)", size);
    for (size_t i = 0; i < sizeof valid / sizeof valid[0]; i++) {
        if (size <= valid[i]) {
            *count = valid[i];
            return GPUMEM_OK;
        }
    }
    return gm_error(GPUMEM_ERROR_INVALID_VALUE,
                    "gpumem_make_valid_tex_channel_count: could not enlarge size %d to a valid channel count (1, 2 or 4)",
                    size);
}

/* ---- occupancy --------------------------------------------------------------------- */

static int64_t div_up(int64_t x, int64_t y)
{
    return (x + y - 1) / y;
}

static int64_t round_up(int64_t x, int64_t unit)
{
    return div_up(x, unit) * unit;
}

static int saturate(int64_t x)
{
    return x > INT_MAX ? INT_MAX : (int)x;
}

/* Blocks the registers allow, with `partitions` register-file partitions
 * ([OCC] cudaOccMaxBlocksPerSMRegsLimit, partitioned global caching off):
 *  - each warp gets registers * warp size registers, rounded up to the
 *    allocation unit (256): registers are allocated per warp
 *    (cudaOccRegAllocationGranularity);
 *  - the hardware checks a block against the per-block limit as if every
 *    partition got the same number of its warps, so the warps are rounded up
 *    to a multiple of the partitions for that check ("hardware check");
 *    the plain product must fit too ("software check");
 *  - more registers per thread than the maximum never fit;
 *  - the register file is split evenly among the partitions and a warp's
 *    registers lie in one, so each partition holds
 *    floor(registers per SM / partitions / per-warp allocation) warps, and
 *    the blocks are floor(that * partitions / warps per block). */
static int64_t register_limit(const gpumem_device_data *dd, int64_t warps, int registers, int partitions,
                              int64_t *per_block, int *too_many_per_block)
{
    const int *v = dd->value;
    *too_many_per_block = 0;
    *per_block = 0;
    if (registers == 0)
        return GPUMEM_OCCUPANCY_NO_LIMIT; /* unknown: not limiting, as in pycuda */
    if (registers > v[GPUMEM_DEVICE_DATA_MAX_REGISTERS_PER_THREAD])
        return 0;
    int64_t per_warp = round_up((int64_t)registers * v[GPUMEM_DEVICE_DATA_WARP_SIZE],
                                v[GPUMEM_DEVICE_DATA_REGISTER_ALLOCATION_UNIT]);
    int64_t allocated = per_warp * warps;
    int64_t assumed = per_warp * round_up(warps, partitions);
    *per_block = allocated;
    if (assumed > v[GPUMEM_DEVICE_DATA_REGISTERS] || allocated > v[GPUMEM_DEVICE_DATA_REGISTERS]) {
        *too_many_per_block = 1;
        return 0;
    }
    int64_t warps_per_partition = v[GPUMEM_DEVICE_DATA_REGISTERS_PER_MP] / partitions / per_warp;
    return warps_per_partition * partitions / warps;
}

/* The first factor, in `order`, whose limit equals tb. */
static gpumem_occupancy_limit first_at(const int64_t limit[4], int64_t tb, const gpumem_occupancy_limit order[4])
{
    for (int i = 0; i < 4; i++)
        if (limit[order[i]] == tb)
            return order[i];
    return order[0];
}

GPUMEM_API gpumem_status gpumem_occupancy(const gpumem_device_data *dd, int threads, size_t shared_mem,
                                          int registers, gpumem_occupancy_record *record)
{
    GM_CHECK_HANDLE(dd);
    GM_CHECK_NULL(record);
    if (record->size < sizeof(gpumem_occupancy_record))
        return gm_error(GPUMEM_ERROR_INVALID_VALUE,
                        "gpumem_occupancy: record->size is %zu, less than sizeof(gpumem_occupancy_record), %zu: "
                        "set it before the call",
                        record->size, sizeof(gpumem_occupancy_record));
    if (threads < 1)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "gpumem_occupancy: threads is %d; a block has at least 1",
                        threads);
    if (registers < 0)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE,
                        "gpumem_occupancy: registers is %d; give 0 when the count is unknown", registers);

    const int *v = dd->value;
    const int warp = v[GPUMEM_DEVICE_DATA_WARP_SIZE];
    const int64_t warps = div_up(threads, warp);
    int64_t limit[4];

    /* Device: the resident blocks per SM ([OCC] cudaOccMaxBlocksPerMultiprocessor;
     * here the device's attribute). */
    limit[GPUMEM_LIMITED_BY_DEVICE] = v[GPUMEM_DEVICE_DATA_THREAD_BLOCKS_PER_MP];

    /* Warps: none past the threads per block, else floor(warps per SM /
     * warps per block) ([OCC] cudaOccMaxBlocksPerSMWarpsLimit). */
    const int too_many_threads = threads > v[GPUMEM_DEVICE_DATA_MAX_THREADS];
    limit[GPUMEM_LIMITED_BY_WARPS] = too_many_threads ? 0 : v[GPUMEM_DEVICE_DATA_WARPS_PER_MP] / warps;

    /* Registers (see register_limit).  On 6.0 (GP100, 2 partitions) the
     * calculator also requires that the block fit a 4-partition Pascal, so
     * that a kernel runs on every 6.x or on none ([OCC]
     * cudaOccMaxActiveBlocksPerMultiprocessor). */
    int64_t regs_per_block;
    int too_many_per_block;
    limit[GPUMEM_LIMITED_BY_REGISTERS] = register_limit(dd, warps, registers, v[GPUMEM_DEVICE_DATA_REGISTER_PARTITIONS],
                                                        &regs_per_block, &too_many_per_block);
    if (dd->major == 6 && dd->minor == 0 && limit[GPUMEM_LIMITED_BY_REGISTERS] > 0) {
        int64_t unused;
        int too_many_gp10x;
        if (register_limit(dd, warps, registers, 4, &unused, &too_many_gp10x) == 0) {
            limit[GPUMEM_LIMITED_BY_REGISTERS] = 0;
            too_many_per_block = too_many_gp10x;
        }
    }

    /* Shared memory ([OCC] cudaOccMaxBlocksPerSMSmemLimit, cudaOccSMemPerBlock,
     * cudaOccSMemPreferenceVoltaPlus): a block gets its bytes plus the
     * driver's reserved per-block bytes (1 KB from 8.0), rounded up to the
     * allocation unit.  A block may use the default per-block maximum, or,
     * having opted in, the opt-in maximum, plus the reserved bytes.  With no
     * carveout preference the SM's whole shared memory is available, so the
     * blocks are floor(shared memory per SM / per-block allocation). */
    const size_t reserved = (size_t)v[GPUMEM_DEVICE_DATA_RESERVED_SHARED_MEMORY];
    const size_t unit = (size_t)v[GPUMEM_DEVICE_DATA_SMEM_ALLOC_GRANULARITY];
    const size_t default_max = (size_t)v[GPUMEM_DEVICE_DATA_SHARED_MEMORY];
    const size_t optin_max = (size_t)v[GPUMEM_DEVICE_DATA_SHARED_MEMORY_OPTIN];
    size_t per_block_max = (shared_mem > default_max && optin_max > default_max ? optin_max : default_max) + reserved;
    size_t smem_per_block = SIZE_MAX;
    if (shared_mem <= SIZE_MAX - reserved - unit)
        smem_per_block = (shared_mem + reserved + unit - 1) / unit * unit;
    const int too_much_smem = smem_per_block > per_block_max;
    if (too_much_smem)
        limit[GPUMEM_LIMITED_BY_SHARED_MEMORY] = 0;
    else if (smem_per_block == 0)
        limit[GPUMEM_LIMITED_BY_SHARED_MEMORY] = GPUMEM_OCCUPANCY_NO_LIMIT;
    else
        limit[GPUMEM_LIMITED_BY_SHARED_MEMORY] = (int64_t)((size_t)v[GPUMEM_DEVICE_DATA_SHARED_MEMORY_PER_MP] /
                                                           smem_per_block);

    /* The least limit wins ([OCC] cudaOccMaxActiveBlocksPerMultiprocessor). */
    int64_t tb = limit[0];
    for (int i = 1; i < 4; i++)
        if (limit[i] < tb)
            tb = limit[i];
    unsigned factors = 0;
    for (int i = 0; i < 4; i++)
        if (limit[i] == tb)
            factors |= 1u << i;

    gpumem_occupancy_record r;
    memset(&r, 0, sizeof r);
    r.size = record->size;
    r.tb_per_mp = saturate(tb);
    r.warps_per_mp = saturate(tb * warps);
    r.occupancy = (double)r.warps_per_mp / v[GPUMEM_DEVICE_DATA_WARPS_PER_MP];
    r.limiting_factors = factors;
    r.tb_limit_device = saturate(limit[GPUMEM_LIMITED_BY_DEVICE]);
    r.tb_limit_warps = saturate(limit[GPUMEM_LIMITED_BY_WARPS]);
    r.tb_limit_registers = saturate(limit[GPUMEM_LIMITED_BY_REGISTERS]);
    r.tb_limit_shared_memory = saturate(limit[GPUMEM_LIMITED_BY_SHARED_MEMORY]);
    r.warps_per_block = saturate(warps);
    r.registers_per_block = saturate(regs_per_block);
    r.shared_memory_per_block = smem_per_block;

    gpumem_status st = GPUMEM_OK;
    if (tb == 0) {
        /* A workload that cannot run: pycuda raises ValueError for the first
         * of these it finds, in this order. */
        static const gpumem_occupancy_limit error_order[4] = {GPUMEM_LIMITED_BY_WARPS, GPUMEM_LIMITED_BY_REGISTERS,
                                                              GPUMEM_LIMITED_BY_SHARED_MEMORY,
                                                              GPUMEM_LIMITED_BY_DEVICE};
        r.limited_by = first_at(limit, 0, error_order);
        if (too_many_threads)
            st = gm_error(GPUMEM_ERROR_INVALID_VALUE,
                          "gpumem_occupancy: too many threads: %d per block, the device allows %d", threads,
                          v[GPUMEM_DEVICE_DATA_MAX_THREADS]);
        else if (r.limited_by == GPUMEM_LIMITED_BY_REGISTERS && !too_many_per_block)
            st = gm_error(GPUMEM_ERROR_INVALID_VALUE,
                          "gpumem_occupancy: too many registers: %d per thread, the device allows %d", registers,
                          v[GPUMEM_DEVICE_DATA_MAX_REGISTERS_PER_THREAD]);
        else if (r.limited_by == GPUMEM_LIMITED_BY_REGISTERS)
            st = gm_error(GPUMEM_ERROR_INVALID_VALUE,
                          "gpumem_occupancy: too many registers: %d threads of %d registers need %lld per block "
                          "(%lld warps, counted in multiples of %d for the hardware's check), the device "
                          "allows %d",
                          threads, registers, (long long)regs_per_block, (long long)warps,
                          v[GPUMEM_DEVICE_DATA_REGISTER_PARTITIONS], v[GPUMEM_DEVICE_DATA_REGISTERS]);
        else if (r.limited_by == GPUMEM_LIMITED_BY_SHARED_MEMORY)
            st = gm_error(GPUMEM_ERROR_INVALID_VALUE,
                          "gpumem_occupancy: too much shared memory: %zu bytes per block (%zu allocated with the "
                          "%zu the driver reserves), the device allows %zu with opt-in",
                          shared_mem, smem_per_block, reserved, optin_max > default_max ? optin_max : default_max);
        else
            st = gm_error(GPUMEM_ERROR_INTERNAL, "gpumem_occupancy: no block fits, for no known reason");
    } else {
        /* pycuda takes the least (count, name) pair, so a tie goes to the
         * first name in alphabetical order. */
        static const gpumem_occupancy_limit tie_order[4] = {GPUMEM_LIMITED_BY_DEVICE, GPUMEM_LIMITED_BY_REGISTERS,
                                                            GPUMEM_LIMITED_BY_SHARED_MEMORY, GPUMEM_LIMITED_BY_WARPS};
        r.limited_by = first_at(limit, tb, tie_order);
    }
    memcpy(record, &r, sizeof r);
    return st;
}

GPUMEM_API const char *gpumem_occupancy_limit_name(gpumem_occupancy_limit limit)
{
    switch (limit) {
    case GPUMEM_LIMITED_BY_DEVICE: return "device";
    case GPUMEM_LIMITED_BY_WARPS: return "warps";
    case GPUMEM_LIMITED_BY_REGISTERS: return "regs";
    case GPUMEM_LIMITED_BY_SHARED_MEMORY: return "smem";
    }
    return NULL;
}
