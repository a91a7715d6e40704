/**
 * @file gpumem/debug.h
 * @brief Driver instrumentation for tests: call counters, fault injection,
 *        and the path each copy took.
 *
 * Every call into the driver backend goes through one dispatcher that counts
 * it and can make it fail.  Tests count driver calls to prove that a copy was
 * planned as one call, and fail the k-th call to walk every error path.
 *
 * @par Fault injection from the environment
 * With the simulator backend, @c GPUMEM_SIM_FAIL=k[:ERROR] makes the k-th
 * driver call of the process (counting from 1) fail with ERROR, a CUDA driver
 * error name such as CUDA_ERROR_OUT_OF_MEMORY or its number (default:
 * CUDA_ERROR_UNKNOWN).  gpumem_debug_fail_call() arms the same knob from code,
 * on either backend.
 */
#ifndef GPUMEM_DEBUG_H
#define GPUMEM_DEBUG_H

#include <stdint.h>
#include <gpumem/export.h>
#include <gpumem/status.h>

GPUMEM_BEGIN_DECLS

/**
 * The number of driver calls made so far in this process: all of them when
 * @p op is NULL, else those of one operation, named as the CUDA driver names
 * it ("cuMemAlloc", "cuMemcpy2D", "cuStreamSynchronize", ...).  An unknown
 * name is ::GPUMEM_ERROR_NOT_FOUND.
 * @param op a driver function name, or NULL for all.
 * @param[out] count the number of calls.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT (@p count), ::GPUMEM_ERROR_NOT_FOUND (@p op).
 */
GPUMEM_API gpumem_status gpumem_debug_driver_calls(const char *op, uint64_t *count);

/**
 * Makes the @p nth driver call from now (1 is the very next) fail with the
 * driver error @p driver_error (a CUresult value, such as 2 for
 * CUDA_ERROR_OUT_OF_MEMORY) without reaching the driver.  Only that one call
 * fails.  @p nth 0 disarms.  Replaces any earlier arming.  Calls of every
 * thread count, and any thread may arm: the call number and the error are
 * set together, so the call that fails gets the error of the arming that
 * chose it, never that of an arming made later.
 * @param nth which call fails, counted from 1; 0 disarms.
 * @param driver_error the CUresult to fail with (not 0).
 * @return ::GPUMEM_OK, or ::GPUMEM_ERROR_INVALID_VALUE (@p driver_error 0 with @p nth set).
 */
GPUMEM_API gpumem_status gpumem_debug_fail_call(uint64_t nth, int driver_error);

/**
 * The name of a CUDA driver error code, such as "CUDA_ERROR_OUT_OF_MEMORY";
 * NULL for a code the library does not know.
 * @param driver_error a CUresult value.
 * @return the name (static), or NULL.
 */
GPUMEM_API const char *gpumem_debug_driver_error_name(int driver_error);

/**
 * How the copy engine moved a copy (gpumem/array.h says when each is
 * chosen).  Values are part of the ABI.
 */
typedef enum gpumem_copy_path {
    /** No copy on this thread yet, or the last one had nothing to move. */
    GPUMEM_COPY_PATH_NONE = 0,
    /** Both sides in host memory: the CPU copied. */
    GPUMEM_COPY_PATH_HOST = 1,
    /** One contiguous driver transfer. */
    GPUMEM_COPY_PATH_CONTIGUOUS = 2,
    /** One 2-D or 3-D driver copy (rows wide enough, or no kernels or
     *  scratch for anything better). */
    GPUMEM_COPY_PATH_DMA = 3,
    /** The library's pack or unpack kernels on the device side, and at
     *  most one contiguous transfer. */
    GPUMEM_COPY_PATH_DEVICE_PACK = 4,
    /** The CPU packed (or unpacked) the strided host side through a staging
     *  buffer, and one contiguous transfer moved it. */
    GPUMEM_COPY_PATH_CPU_PACK = 5,
    /** Both: the CPU on the host side, the kernels on the device side,
     *  one contiguous transfer between them. */
    GPUMEM_COPY_PATH_CPU_DEVICE_PACK = 6,
    /** A contiguous transfer of pageable host memory through the staging
     *  engine's pinned buffers. */
    GPUMEM_COPY_PATH_STAGED = 7,
    /** Several rectangular driver copies: the pack kernels are unavailable
     *  (the driver could not load them) or the device has no room for their
     *  scratch, and no one operation does it. */
    GPUMEM_COPY_PATH_DMA_LOOP = 8,
    /** Between two devices, through peer access: one cuMemcpyPeer of two
     *  arrays dense alike, else kernels that read or write the other
     *  device's memory through the peer mapping (a kernel runs on the
     *  device of the strided side; both sides strided, chunk by chunk
     *  through the destination's scratch) (gpumem/peer.h).
     *  Added in GPUMEM_1.1. */
    GPUMEM_COPY_PATH_PEER = 9,
    /** Between two devices without peer access (none, or switched off):
     *  through the staging engine's pinned slots, strided sides packed and
     *  unpacked on their own devices chunk by chunk (gpumem/peer.h).  Added
     *  in GPUMEM_1.1. */
    GPUMEM_COPY_PATH_PEER_STAGED = 10
} gpumem_copy_path;

/**
 * The path that the calling thread's last copy took: the last
 * gpumem_array_copy(), gpumem_copy_to_host(), gpumem_copy_to_device() or
 * copy made inside another call (gpumem_to_device(), a strided
 * gpumem_array_fill(), a reshape or ravel copy) that got past its argument
 * checks, whether it then succeeded or failed.  It is the copy engine's
 * decision for that copy, made before it ran (and made again, without
 * what was missing, when the pack kernels could not be loaded, device
 * scratch could not be had or the staging engine was busy).  Copies the
 * engine makes inside a copy (packing a side on its own device for a copy
 * between devices, the copy into a queued download's bounce block, the two
 * steps through a temporary) do not change it: a copy through a temporary
 * (overlapping views) reports its last step, a queued download the copy
 * into its bounce block.  An empty copy reports ::GPUMEM_COPY_PATH_NONE.
 * Each thread has its own.  Added in GPUMEM_1.1.
 * @param[out] path the path.
 * @return ::GPUMEM_OK, or ::GPUMEM_ERROR_NULL_ARGUMENT.
 */
GPUMEM_API gpumem_status gpumem_debug_last_copy_path(gpumem_copy_path *path);

/**
 * The name of a path, such as "device-pack"; NULL for an unknown value.  Added in GPUMEM_1.1.
 * @param path a path.
 * @return the name (static), or NULL.
 */
GPUMEM_API const char *gpumem_copy_path_name(gpumem_copy_path path);

GPUMEM_END_DECLS

#endif /* GPUMEM_DEBUG_H */
