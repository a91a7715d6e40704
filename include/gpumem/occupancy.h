/**
 * @file gpumem/occupancy.h
 * @brief Device data and occupancy: pycuda.tools' DeviceData and
 *        OccupancyRecord.
 *
 * A ::gpumem_device_data holds what a kernel author needs to know about one
 * device beyond its raw attributes: pycuda's fields under pycuda's names
 * (gpumem_device_data_get()), its alignment helpers, and the per-architecture
 * rules (allocation units and granularities) that gpumem_occupancy() needs to
 * tell how many thread blocks of a kernel fit on one multiprocessor.
 *
 * @par Where the values come from
 * Every limit the driver reports is read from the device's attributes
 * (cuDeviceGetAttribute: threads, blocks, registers and shared memory per
 * multiprocessor and per block, the shared memory reserved per block).  What
 * the driver does not report comes from a table with one row per compute
 * capability, 5.0, 5.2, 5.3, 6.0, 6.1, 6.2, 7.0, 7.2, 7.5, 8.0, 8.6, 8.7, 8.9,
 * 9.0, 10.0, 10.3, 11.0, 12.0 and 12.1, built from NVIDIA's published limits
 * (the CUDA C++ Programming Guide's "Technical Specifications per Compute
 * Capability", the CUDA Occupancy Calculator and its header cuda_occupancy.h):
 * the register allocation unit (256 registers, allocated per warp), the
 * number of register-file partitions per multiprocessor (4; 2 on 6.0), the
 * shared memory allocation unit (256 bytes before 8.0, 128 from 8.0), the
 * maximum of 255 registers per thread and the 32 shared memory banks.  The
 * same table stands in for the limits of an old driver that lacks an
 * attribute.  A compute capability the table does not list uses the row of
 * the closest one below it; devices older than 5.0 are
 * ::GPUMEM_ERROR_NOT_SUPPORTED.
 *
 * @par The occupancy model
 * gpumem_occupancy() computes what cuOccupancyMaxActiveBlocksPerMultiprocessor
 * computes for a kernel with the given block size, shared memory and register
 * count (NVIDIA's calculator, cudaOccMaxActiveBlocksPerMultiprocessor), under
 * the driver's defaults: no shared-memory carveout preference (the whole
 * shared memory of a multiprocessor is available), partitioned global
 * caching off, and a kernel that has opted in (cuFuncSetAttribute with
 * CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) to whatever shared memory
 * above the default 48 KB per block it uses.  With W = ceil(threads / warp
 * size) warps per block, the blocks per multiprocessor are the least of:
 *  - device: the maximum resident blocks per multiprocessor;
 *  - warps: floor(maximum warps per multiprocessor / W);
 *  - registers: each warp gets ceil(registers * warp size / 256) * 256
 *    registers; the register file is split among the partitions, so each
 *    partition holds floor(registers per multiprocessor / partitions / that)
 *    warps, and the blocks are floor(that * partitions / W).  Registers 0
 *    means unknown and does not limit;
 *  - shared memory: each block gets ceil((shared_mem + reserved) / unit) *
 *    unit bytes, where reserved is the 1 KB the driver keeps per block from
 *    compute capability 8.0; the blocks are floor(shared memory per
 *    multiprocessor / that).  With shared_mem 0 this is only the reserved
 *    kilobyte, which never binds.
 *
 * A workload that cannot run at all is an error, as in pycuda, which raises
 * ValueError: more threads than the device allows per block, more than 255
 * registers per thread, more registers per block than the device allows
 * (counted as the hardware does: W rounded up to a multiple of the
 * partitions, each warp's allocation as above), or more shared memory than
 * the opt-in maximum per block.
 *
 * @par Where our values differ from pycuda's, and why
 * pycuda's DeviceData and OccupancyRecord were written for the GPUs of 2008
 * (compute capability 1.x) and patched since; libgpumem follows the
 * hardware:
 *  - @c thread_blocks_per_mp: pycuda says 8 for every device; current GPUs
 *    hold 16 to 32 (the device's attribute: 32 on an A100 or H100, 16 on a
 *    T4 or RTX 3090, 24 on an RTX 4090).
 *  - @c warps_per_mp: pycuda says 64 for every device from 3.0; 7.5 holds
 *    32, and 8.6, 8.7, 8.9, 11.0 and 12.x hold 48 (threads per
 *    multiprocessor / warp size).  Occupancy is warps over this value, so
 *    pycuda reports at most 0.5 or 0.75 on those GPUs where 1.0 is right.
 *  - @c smem_alloc_granularity: pycuda says 128 from 2.0; NVIDIA's
 *    calculator allocates shared memory in units of 256 bytes before 8.0.
 *  - @c registers and @c shared_memory keep pycuda's meaning (the per-block
 *    maxima), but pycuda also uses them as the multiprocessor's totals, and
 *    it checks shared memory against the default 48 KB per block.  The
 *    occupancy model here uses the multiprocessor's own registers and shared
 *    memory (::GPUMEM_DEVICE_DATA_REGISTERS_PER_MP,
 *    ::GPUMEM_DEVICE_DATA_SHARED_MEMORY_PER_MP) and the opt-in per-block
 *    maximum (::GPUMEM_DEVICE_DATA_SHARED_MEMORY_OPTIN).
 *  - Registers: pycuda allocates ceil(2 W / 4) * 16 * registers per block
 *    (the 1.x rule: pairs of warps, 512-register blocks); current GPUs
 *    allocate 256-register units per warp in each register-file partition,
 *    which is what the model above does.
 *  - Shared memory: pycuda rounds to 512 bytes and has no reserved
 *    kilobyte; the model rounds to the architecture's unit and adds it.
 *  - Ties: like pycuda (which takes the least (count, name) pair) the
 *    limiting factor of a tie is the first of "device", "regs", "smem",
 *    "warps" in that order; ::gpumem_occupancy_record's @c limiting_factors
 *    has every factor of the tie.
 *  - Errors: pycuda raises ValueError; gpumem_occupancy() returns
 *    ::GPUMEM_ERROR_INVALID_VALUE and still fills the record, with
 *    @c tb_per_mp 0 (what the driver's occupancy function answers).
 *  - gpumem_make_valid_tex_channel_count() refuses counts below 1, which
 *    pycuda rounds up to 1.
 *  - The align helpers keep pycuda's values: 64 bytes for 4-byte words and
 *    128 for 8- and 16-byte words, multiples of the 32-byte sectors and
 *    128-byte lines that current GPUs move.
 *
 * @par Sharing
 * A device data object never changes after it is made; any number of
 * threads may use one at once.  The functions here that take one do not call
 * the driver.
 */
#ifndef GPUMEM_OCCUPANCY_H
#define GPUMEM_OCCUPANCY_H

#include <stddef.h>
#include <gpumem/dtype.h>
#include <gpumem/export.h>
#include <gpumem/status.h>

GPUMEM_BEGIN_DECLS

/** pycuda's DeviceData: what one device allows, for occupancy and alignment. */
typedef struct gpumem_device_data gpumem_device_data;

/** For gpumem_device_data_create(): the device of the default (autoinit) context. */
#define GPUMEM_DEVICE_DATA_DEFAULT (-1)

/**
 * The fields of a device data object (gpumem_device_data_get()).  The first
 * eight are pycuda's DeviceData attributes, under its names; the rest are
 * what the occupancy model uses besides.  Values are part of the ABI.
 */
typedef enum gpumem_device_data_field {
    /** "max_threads": threads per block (the device attribute). */
    GPUMEM_DEVICE_DATA_MAX_THREADS = 0,
    /** "warp_size": threads per warp. */
    GPUMEM_DEVICE_DATA_WARP_SIZE = 1,
    /** "warps_per_mp": resident warps per multiprocessor (threads per multiprocessor / warp size). */
    GPUMEM_DEVICE_DATA_WARPS_PER_MP = 2,
    /** "thread_blocks_per_mp": resident blocks per multiprocessor (the device attribute). */
    GPUMEM_DEVICE_DATA_THREAD_BLOCKS_PER_MP = 3,
    /** "registers": 32-bit registers per block. */
    GPUMEM_DEVICE_DATA_REGISTERS = 4,
    /** "shared_memory": bytes of shared memory per block without opt-in (48 KB). */
    GPUMEM_DEVICE_DATA_SHARED_MEMORY = 5,
    /** "smem_granularity": threads that access shared memory at once (its banks: 32). */
    GPUMEM_DEVICE_DATA_SMEM_GRANULARITY = 6,
    /** "smem_alloc_granularity": bytes of the smallest non-empty shared memory allocation (256 before 8.0, then 128). */
    GPUMEM_DEVICE_DATA_SMEM_ALLOC_GRANULARITY = 7,
    /** "registers_per_mp": 32-bit registers per multiprocessor. */
    GPUMEM_DEVICE_DATA_REGISTERS_PER_MP = 8,
    /** "shared_memory_per_mp": bytes of shared memory per multiprocessor (the largest carveout). */
    GPUMEM_DEVICE_DATA_SHARED_MEMORY_PER_MP = 9,
    /** "shared_memory_optin": bytes of shared memory a block may opt in to. */
    GPUMEM_DEVICE_DATA_SHARED_MEMORY_OPTIN = 10,
    /** "reserved_shared_memory": bytes of shared memory the driver keeps per block (1024 from 8.0, else 0). */
    GPUMEM_DEVICE_DATA_RESERVED_SHARED_MEMORY = 11,
    /** "register_allocation_unit": registers are given to each warp in units of this many (256). */
    GPUMEM_DEVICE_DATA_REGISTER_ALLOCATION_UNIT = 12,
    /** "max_registers_per_thread": 255. */
    GPUMEM_DEVICE_DATA_MAX_REGISTERS_PER_THREAD = 13,
    /** "register_partitions": register-file partitions per multiprocessor (4; 2 on 6.0): a warp's registers lie in one. */
    GPUMEM_DEVICE_DATA_REGISTER_PARTITIONS = 14,
    /** "multiprocessors": multiprocessors of the device. */
    GPUMEM_DEVICE_DATA_MULTIPROCESSORS = 15,
    /** "compute_capability": 10 * major + minor (90 for 9.0, 121 for 12.1). */
    GPUMEM_DEVICE_DATA_COMPUTE_CAPABILITY = 16,
    /** "device": the device ordinal. */
    GPUMEM_DEVICE_DATA_DEVICE = 17
} gpumem_device_data_field;

/** The number of fields of this version of the header (they are 0 to this - 1). */
#define GPUMEM_DEVICE_DATA_FIELD_COUNT 18

/** What limits the number of blocks per multiprocessor.  Values are part of the ABI. */
typedef enum gpumem_occupancy_limit {
    GPUMEM_LIMITED_BY_DEVICE = 0,       /**< the device's maximum of resident blocks ("device") */
    GPUMEM_LIMITED_BY_WARPS = 1,        /**< resident warps, or threads per block ("warps") */
    GPUMEM_LIMITED_BY_REGISTERS = 2,    /**< the register file ("regs") */
    GPUMEM_LIMITED_BY_SHARED_MEMORY = 3 /**< shared memory ("smem") */
} gpumem_occupancy_limit;

/** A per-factor block limit that does not limit (registers 0, or no shared memory before 8.0). */
#define GPUMEM_OCCUPANCY_NO_LIMIT 0x7fffffff

/**
 * pycuda's OccupancyRecord, filled by gpumem_occupancy().  Set @c size to
 * sizeof(gpumem_occupancy_record) before the call (in C:
 * <tt>gpumem_occupancy_record r = {.size = sizeof r};</tt>): later versions
 * of the library append fields and fill only those a caller's size covers.
 */
typedef struct gpumem_occupancy_record {
    size_t size;                       /**< set by the caller: sizeof(gpumem_occupancy_record) */
    int tb_per_mp;                     /**< resident thread blocks per multiprocessor (0: it cannot run) */
    gpumem_occupancy_limit limited_by; /**< what limits tb_per_mp (ties: see the file's notes) */
    int warps_per_mp;                  /**< resident warps per multiprocessor: tb_per_mp * warps_per_block */
    double occupancy;                  /**< warps_per_mp / the device's warps_per_mp, in [0, 1] */
    unsigned limiting_factors;         /**< bit (1u << f) for every factor f whose limit equals tb_per_mp */
    int tb_limit_device;               /**< blocks per multiprocessor the device allows */
    int tb_limit_warps;                /**< blocks the warps allow (0: too many threads per block) */
    int tb_limit_registers;            /**< blocks the registers allow, or ::GPUMEM_OCCUPANCY_NO_LIMIT */
    int tb_limit_shared_memory;        /**< blocks the shared memory allows, or ::GPUMEM_OCCUPANCY_NO_LIMIT */
    int warps_per_block;               /**< ceil(threads / warp size) */
    int registers_per_block;           /**< registers allocated to a block (after rounding) */
    size_t shared_memory_per_block;    /**< shared memory allocated to a block (with the reserved part, after rounding) */
} gpumem_occupancy_record;

/**
 * pycuda's DeviceData(dev): reads device @p device's attributes and finds
 * its architecture's row (see the file's notes).  @p device
 * ::GPUMEM_DEVICE_DATA_DEFAULT means the default context's device (pycuda's
 * dev=None), which makes that context with gpumem_autoinit() if needed.
 * Errors: ::GPUMEM_ERROR_INVALID_DEVICE, ::GPUMEM_ERROR_NOT_SUPPORTED for
 * devices older than compute capability 5.0, the driver's errors, and
 * ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY.  Free it with
 * gpumem_device_data_destroy().
 * @param device a device ordinal, or ::GPUMEM_DEVICE_DATA_DEFAULT.
 * @param[out] dd the new object.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, one of the errors above, or an autoinit failure.
 */
GPUMEM_API gpumem_status gpumem_device_data_create(int device, gpumem_device_data **dd);

/**
 * Frees a device data object; NULL is a no-op that succeeds.  Destroying
 * it again, or using it afterwards, is ::GPUMEM_ERROR_INVALID_STATE
 * (gpumem/status.h says how far that is detected).
 * @param dd the object, or NULL.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_INVALID_STATE (destroyed already), ::GPUMEM_ERROR_INVALID_VALUE (not
 *        a device data object).
 */
GPUMEM_API gpumem_status gpumem_device_data_destroy(gpumem_device_data *dd);

/**
 * One field's value.  An unknown @p field is ::GPUMEM_ERROR_INVALID_VALUE.
 * @param dd the device data.
 * @param field the field.
 * @param[out] value its value.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE.
 */
GPUMEM_API gpumem_status gpumem_device_data_get(const gpumem_device_data *dd, gpumem_device_data_field field,
                                                int *value);

/**
 * A field's name: pycuda's attribute name for the first eight
 * ("max_threads", "warp_size", ...), the names in the enum's comments for
 * the others; NULL for an unknown field.  Static.
 * @param field the field.
 * @return the name, or NULL.
 */
GPUMEM_API const char *gpumem_device_data_field_name(gpumem_device_data_field field);

/**
 * pycuda's align_bytes(word_size): the distance between global memory base
 * addresses that lets accesses of @p word_size bytes coalesce: 64 for 4, 128
 * for 8 and 16 (pycuda's default word size is 4).  Other sizes are
 * ::GPUMEM_ERROR_INVALID_VALUE ("no alignment possible for fetches of size
 * n", as pycuda says).
 * @param dd the device data.
 * @param word_size 4, 8 or 16.
 * @param[out] bytes the alignment in bytes.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE.
 */
GPUMEM_API gpumem_status gpumem_device_data_align_bytes(const gpumem_device_data *dd, size_t word_size,
                                                        size_t *bytes);

/**
 * pycuda's align(bytes, word_size): @p bytes rounded up to the next
 * multiple of gpumem_device_data_align_bytes(@p word_size).
 * ::GPUMEM_ERROR_OVERFLOW if that does not fit in a size_t.
 * @param dd the device data.
 * @param bytes the size to round up.
 * @param word_size 4, 8 or 16.
 * @param[out] aligned the rounded size.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE, ::GPUMEM_ERROR_OVERFLOW.
 */
GPUMEM_API gpumem_status gpumem_device_data_align(const gpumem_device_data *dd, size_t bytes, size_t word_size,
                                                  size_t *aligned);

/**
 * pycuda's align_words(word_size): gpumem_device_data_align_bytes(@p
 * word_size) / @p word_size, in words (16, 16 and 8 for 4, 8 and 16).
 * @param dd the device data.
 * @param word_size 4, 8 or 16.
 * @param[out] words the alignment in words.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE.
 */
GPUMEM_API gpumem_status gpumem_device_data_align_words(const gpumem_device_data *dd, size_t word_size,
                                                        size_t *words);

/**
 * pycuda's align_dtype(elements, dtype_size): @p elements rounded up to the
 * next multiple of gpumem_device_data_align_words() of @p dtype's item size,
 * so that arrays of that many elements keep the next one aligned.  Item
 * sizes other than 4, 8 and 16 are ::GPUMEM_ERROR_INVALID_VALUE.
 * @param dd the device data.
 * @param elements the count to round up.
 * @param dtype a dtype of item size 4, 8 or 16.
 * @param[out] aligned the rounded count.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE, ::GPUMEM_ERROR_OVERFLOW.
 */
GPUMEM_API gpumem_status gpumem_device_data_align_dtype(const gpumem_device_data *dd, size_t elements,
                                                        const gpumem_dtype *dtype, size_t *aligned);

/**
 * pycuda's DeviceData.make_valid_tex_channel_count(size): @p size rounded
 * up to a valid texture channel count, 1, 2 or 4.  A size above 4 ("could
 * not enlarge argument to valid channel count") or below 1 is
 * ::GPUMEM_ERROR_INVALID_VALUE.
 * @param size 1 to 4.
 * @param[out] count 1, 2 or 4.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE.
 */
GPUMEM_API gpumem_status gpumem_make_valid_tex_channel_count(int size, int *count);

/**
 * pycuda's OccupancyRecord(devdata, threads, shared_mem, registers): how
 * many blocks of @p threads threads, each using @p shared_mem bytes of
 * shared memory (static plus dynamic) and @p registers registers per thread
 * (0: unknown, not limiting), are resident on one multiprocessor, what
 * limits them, and the occupancy (see the file's notes for the model).
 * Set @p record->size first.
 *
 * Errors: ::GPUMEM_ERROR_NULL_ARGUMENT; ::GPUMEM_ERROR_INVALID_VALUE for
 * @p threads below 1, @p registers below 0 or @p record->size smaller than
 * this version's record (the record is then untouched); and
 * ::GPUMEM_ERROR_INVALID_VALUE for a workload that cannot run (too many
 * threads, registers or shared memory; the message names the limit), which
 * fills the record with @c tb_per_mp 0, @c occupancy 0, @c limited_by the
 * first of warps, registers and shared memory that is exceeded, and the
 * per-factor limits.
 * @param dd the device data.
 * @param threads threads per block.
 * @param shared_mem shared memory per block in bytes.
 * @param registers registers per thread, or 0.
 * @param[in,out] record the result; its @c size set by the caller.
 * @return ::GPUMEM_OK, one of the errors above, or ::GPUMEM_ERROR_INTERNAL (no limit explains a workload
 *        that does not fit: a bug).
 */
GPUMEM_API gpumem_status gpumem_occupancy(const gpumem_device_data *dd, int threads, size_t shared_mem,
                                          int registers, gpumem_occupancy_record *record);

/**
 * pycuda's name of a limiting factor: "device", "warps", "regs" or "smem";
 * NULL for an unknown value.  Static.
 * @param limit the factor.
 * @return the name, or NULL.
 */
GPUMEM_API const char *gpumem_occupancy_limit_name(gpumem_occupancy_limit limit);

GPUMEM_END_DECLS

#endif /* GPUMEM_OCCUPANCY_H */
