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
 *
 * @par Catching a missing synchronization: GPUMEM_DEBUG=poison
 * With the word @c poison in @c GPUMEM_DEBUG (doc/environment.md), the
 * library fills the bytes a program must not read yet with a pattern, so
 * that a read made too early sees garbage rather than a stale value that
 * happens to look right:
 *  - every new array of gpumem_device_array(), gpumem_device_array_like(),
 *    gpumem_device_record(), gpumem_pool_device_array(),
 *    gpumem_host_array(), gpumem_pinned_array(), gpumem_mapped_array(),
 *    gpumem_managed_array() and gpumem_host_pool_allocate() (and so
 *    gpumem_to_device() with ::GPUMEM_TO_DEVICE_NO_COPY), until the program
 *    writes it: host-side memory by the CPU before the call returns;
 *    device memory by the driver's memset (cuMemsetD8/D16/D32Async) queued
 *    on the call's stream, or, without one, on a private non-blocking stream
 *    that the call waits for (it waits for nothing else);
 *  - the destination of a download from the device queued on a stream,
 *    until the copy lands: pageable memory (a queued download, see
 *    gpumem/array.h) by the CPU before the call returns; page-locked memory
 *    (pinned, mapped, registered) in the stream's order just before the
 *    copy: at once when the stream is idle (and, but for the default stream's
 *    own, the default stream too), else by a host function on the stream
 *    (work queued before the download, such as an upload from the same
 *    buffer, still reads the program's bytes).  Managed memory and
 *    copies without a stream (which return once they landed) are not
 *    poisoned.
 * Each element holds ::GPUMEM_DEBUG_POISON_WORD's bytes from its own first
 * byte (lowest byte first, again every 4 bytes): every float16, float32,
 * float64 and complex element reads NaN, every integer element one large
 * value (8 bits: 126, 16: 32382, 32: 2147384958, 64: 9222948168679718526,
 * signed or not) and a bool element neither 0 nor 1.  A download that fails may leave the pattern where
 * it did not land.  The cost: one pass of the CPU over each new host-side
 * array and each pageable destination; one memset per new device array
 * (without a stream, also a stream created, waited for and destroyed); up
 * to two stream queries, and when a stream is busy one host function, per
 * page-locked download on a stream.  Off, each place costs one relaxed load.
 *
 * @par Seeing every copy: GPUMEM_DEBUG=copies
 * With the word @c copies, every copy between two arrays
 * (gpumem_array_copy(), gpumem_copy_to_host(), gpumem_copy_to_device(), and
 * those made inside gpumem_to_device(), a reshape or ravel copy and a
 * write-back) that got past its argument checks prints one line to standard
 * error, whether it succeeded or not:
 * @code
 * gpumem: copy gpumem_copy_to_host: d2h path=contiguous bytes=4096 us=12.5 sync=no status=GPUMEM_OK
 * @endcode
 * the function, the direction (@c h2d, @c d2h, @c d2d, @c peer between two
 * devices, @c h2h), the path gpumem_debug_last_copy_path() reports, the
 * bytes of the destination's elements, the time the call took in
 * microseconds (with a stream, the time to queue it), whether it returned
 * only once the copy had landed (@c sync=yes: a copy without a stream, a
 * copy between host-side arrays, a download that the CPU unpacks, a copy
 * between devices other than one peer copy; @c sync=no: the copy was still
 * queued on its stream, which must be synchronized before the destination
 * is read), and the status it returned.  A queued download reports the path
 * of its copy into the bounce block.  A batched call
 * (gpumem_array_copy_batch(), gpumem_array_pack(), gpumem_array_unpack())
 * past its checks prints one line for the call: the direction of every pair
 * (@c mixed when they differ), the last pair's path, the bytes of every
 * destination, @c sync=no when it was given a stream (unless every pair is
 * between host arrays), and @c pairs=N at its end.  The cost: two clock reads and one
 * write to standard error per copy; off, one relaxed load.
 */
#ifndef GPUMEM_DEBUG_H
#define GPUMEM_DEBUG_H

#include <stdint.h>
#include <gpumem/export.h>
#include <gpumem/status.h>

GPUMEM_BEGIN_DECLS

/**
 * The 32-bit word that GPUMEM_DEBUG=poison fills with (see above): bytes
 * 7e 7e fe 7f in memory.  A quiet NaN as a float32, and two of them a quiet
 * NaN float64; its low 16 bits a quiet NaN float16.  Added in GPUMEM_1.1
 * (a macro: no symbol).
 */
#define GPUMEM_DEBUG_POISON_WORD 0x7FFE7E7Eu

/**
 * The number of driver calls made so far in this process: all of them when
 * @p op is NULL, else those of one operation, named as the CUDA driver names
 * it ("cuMemAlloc", "cuMemcpy2D", "cuStreamSynchronize", ...).  An
 * operation counts under the name of its synchronous driver function, its
 * queued forms included: "cuMemcpy" counts cuMemcpy and cuMemcpyAsync
 * (likewise "cuMemcpy2D" and "cuMemcpy3D"), and "cuMemsetD8" every memset
 * (cuMemsetD8, D16 and D32, and their Async forms).  The names are
 * cuDriverGetVersion, cuDeviceGetCount, cuDeviceGetName,
 * cuDeviceGetAttribute, cuDeviceTotalMem, cuDevicePrimaryCtxRetain,
 * cuDevicePrimaryCtxRelease, cuCtxSynchronize, cuMemGetInfo, cuMemAlloc,
 * cuMemFree, cuMemAllocAsync, cuMemFreeAsync, cuMemAllocManaged,
 * cuMemHostAlloc, cuMemFreeHost, cuMemHostRegister, cuMemHostUnregister,
 * cuMemHostGetDevicePointer, cuMemcpy, cuMemcpy2D, cuMemcpy3D, cuMemsetD8,
 * cuStreamCreate, cuStreamDestroy, cuStreamSynchronize, cuStreamQuery,
 * cuStreamWaitEvent, cuLaunchHostFunc, cuEventCreate, cuEventDestroy,
 * cuEventRecord, cuEventQuery, cuEventSynchronize, cuEventElapsedTime,
 * cuModuleLoadDataEx, cuModuleUnload, cuModuleGetFunction,
 * cuModuleGetGlobal, cuFuncGetAttribute, cuFuncSetAttribute,
 * cuOccupancyMaxActiveBlocksPerMultiprocessor, cuLaunchKernel,
 * cuPointerGetAttributes, cuMemGetAddressRange, cuIpcGetMemHandle,
 * cuIpcOpenMemHandle, cuIpcCloseMemHandle, cuDeviceCanAccessPeer,
 * cuCtxEnablePeerAccess and cuMemcpyPeer; any other name (cuMemcpyAsync,
 * cuMemsetD32Async) is ::GPUMEM_ERROR_NOT_FOUND, and @p count is then
 * unchanged.
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
