/**
 * @file gpumem/ipc.h
 * @brief Pointer queries (numba's `is_cuda_array`) and CUDA IPC: sharing a
 *        device array with another process.
 *
 * @par Pointer queries
 * gpumem_is_cuda_array() asks the driver (cuPointerGetAttributes) what an
 * address is: device, page-locked host, mapped or managed memory, and which
 * device and driver context it belongs to.  It answers for any address,
 * also one the library did not allocate (another library's buffer).  Memory
 * the driver does not know (pageable host memory, freed memory, an address
 * of nothing) is no error: the driver answers it with null values, and the
 * kind is ::GPUMEM_POINTER_UNKNOWN.
 *
 * With unified addressing (every 64-bit platform CUDA supports) all
 * page-locked host memory has a device address, so it is reported as
 * ::GPUMEM_POINTER_MAPPED; ::GPUMEM_POINTER_PINNED is page-locked memory
 * that the driver gives no device address.
 *
 * @par IPC handles
 * gpumem_ipc_get_handle() describes a device array in a
 * ::gpumem_ipc_handle: ::GPUMEM_IPC_HANDLE_SIZE plain bytes, without
 * pointers, that can travel through a pipe, a file, a socket or MPI, and
 * gpumem_ipc_open() makes an array over the same device memory in another
 * process.  The layout of the bytes (integers little-endian, texts
 * NUL-terminated) is part of the ABI:
 * | offset | bytes | field |
 * |---|---|---|
 * | 0 | 8 | magic "GPUMEMIP" |
 * | 8 | 4 | version ::GPUMEM_IPC_VERSION |
 * | 12 | 4 | ::GPUMEM_IPC_HANDLE_SIZE |
 * | 16 | 8 | the exporting process's id |
 * | 24 | 8 | a random number of the exporting process |
 * | 32 | 64 | the driver's CUipcMemHandle of the allocation |
 * | 96 | 12 | the device's PCI domain, bus and device ids (int32 each) |
 * | 108 | 4 | the device's ordinal in the exporting process (informative) |
 * | 112 | 8 | byte offset of element [0, ...] from the allocation's start |
 * | 120 | 8 | the allocation's size in bytes |
 * | 128 | 4 | ndim, 0 to ::GPUMEM_MAX_NDIM |
 * | 132 | 4 | the item size in bytes |
 * | 136 | 256 | shape, ::GPUMEM_MAX_NDIM int64 (ndim used, the rest 0) |
 * | 392 | 256 | strides in bytes, ::GPUMEM_MAX_NDIM int64 |
 * | 648 | 24 | the dtype's NumPy typestr ("<f4", "|V24") |
 * | 672 | 4 | length of the record description, 0 for other dtypes |
 * | 676 | 1372 | the record description (NumPy's descr notation) |
 * gpumem_ipc_open() checks every field before it calls the driver: a wrong
 * magic, version or size, ndim out of range, a negative extent, an
 * unterminated text, a dtype whose size is not the item size, an element
 * outside the allocation the handle declares (offset and allocation size),
 * a shape whose bytes overflow int64 is ::GPUMEM_ERROR_INVALID_VALUE, and a
 * malformed typestr or record description, or a description that disagrees
 * with the typestr, is ::GPUMEM_ERROR_INVALID_DTYPE; the message names the
 * field.
 *
 * The bytes cannot prove the offset and allocation size they declare, so
 * once the driver has mapped the memory (cuIpcOpenMemHandle),
 * gpumem_ipc_open() asks it for the mapped range (cuMemGetAddressRange of
 * the mapped base) and refuses, with ::GPUMEM_ERROR_INVALID_VALUE and a
 * message naming the field, a handle whose offset lies outside that range,
 * whose elements (offset, shape and strides) reach outside it, or whose
 * allocation size exceeds it; every address is computed without wrapping
 * around.  The refused mapping is closed again (cuIpcCloseMemHandle), and
 * no array is made.  An allocation size smaller than the mapped range is
 * accepted (the driver may map more than was allocated).
 *
 * @par Devices
 * The handle names its device by PCI id, not by ordinal, since the other
 * process may see the devices in another order (CUDA_VISIBLE_DEVICES).
 * gpumem_ipc_open() maps the memory:
 *  - on the array's own device when @p ctx is NULL or a context of that
 *    device: an array over the other process's memory, no copy;
 *  - on another device that can address the array's device
 *    (cuDeviceCanAccessPeer): the memory is mapped into @p ctx with peer
 *    access enabled (cuCtxEnablePeerAccess), still no copy;
 *  - on another device without peer access: staged.  The memory is mapped
 *    on its own device, copied into a new C-ordered device array of @p ctx,
 *    and unmapped again; the array is then a copy taken at the time of the
 *    call, whose writes the other process does not see.  That is numba's
 *    behaviour for IPC handles opened on another device.
 * A handle whose device is not visible in the process is
 * ::GPUMEM_ERROR_INVALID_DEVICE.
 *
 * @par The exporting process
 * The driver refuses to open an IPC handle in the process that made it, and
 * so does gpumem_ipc_open(): such a handle is ::GPUMEM_ERROR_INVALID_STATE,
 * before any driver call.  That process has the array itself; a view of it
 * (gpumem_array_slice(), gpumem_array_retain()) is what it wants.
 *
 * @par Lifetime and synchronization
 * An opened array (kind ::GPUMEM_MEMORY_FOREIGN) closes its mapping
 * (cuIpcCloseMemHandle) when its last reference goes, views included.  The
 * mapping does not keep the memory alive: the exporting process must keep
 * its array until every importer has released its array.
 *
 * CUDA's documentation makes using exported memory after the exporter
 * freed it undefined, and documents no error for opening such a handle, nor
 * for a handle whose exporting process has exited.  gpumem_ipc_open() cannot
 * tell: on a GPU the driver may fail with its error, or may open the handle
 * (an H100 opens the handle of a freed allocation) and give an array over
 * device memory that is no longer the exporter's.  Do not rely on an error;
 * the simulator's answer is in its paragraph below.  A handle carries
 * no stream: the exporting process finishes its work on the array (a
 * synchronous call, or gpumem_stream_synchronize()) before the other process
 * reads it, and the two processes agree on writes by their own means (the
 * pipe that carried the handle, a barrier).
 *
 * @par Which memory
 * Only memory from cuMemAlloc has IPC handles: ::GPUMEM_MEMORY_DEVICE arrays
 * (also those allocated from a pool: the handle names the pool's block) and
 * ::GPUMEM_MEMORY_FOREIGN arrays over such memory.  Host-side and managed
 * arrays, and empty arrays, are ::GPUMEM_ERROR_INVALID_VALUE.
 *
 * @par The simulator
 * The simulator (GPUMEM_BACKEND=sim) opens handles in another process of
 * the same machine and user: an exported allocation moves into shared
 * memory, which the other process maps, so both see each other's writes as
 * on a GPU.  Unlike a GPU, it always refuses a handle whose exporting
 * process has exited or freed the memory: ::GPUMEM_ERROR_DRIVER, the
 * message naming CUDA_ERROR_INVALID_VALUE.  Its mapped range is exactly the
 * exported allocation.
 */
#ifndef GPUMEM_IPC_H
#define GPUMEM_IPC_H

#include <stddef.h>
#include <stdint.h>
#include <gpumem/export.h>
#include <gpumem/status.h>
#include <gpumem/context.h>
#include <gpumem/array.h>

GPUMEM_BEGIN_DECLS

/* ---- pointer queries ----------------------------------------------------------------- */

/** What an address is, to the driver. */
typedef enum gpumem_pointer_kind {
    GPUMEM_POINTER_UNKNOWN = 0, /**< memory the driver does not know: pageable host memory, freed memory, nothing */
    GPUMEM_POINTER_DEVICE = 1,  /**< device memory (cuMemAlloc, a module's global, a pool's block) */
    GPUMEM_POINTER_PINNED = 2,  /**< page-locked host memory without a device address */
    GPUMEM_POINTER_MAPPED = 3,  /**< page-locked host memory with a device address */
    GPUMEM_POINTER_MANAGED = 4  /**< managed (unified) memory */
} gpumem_pointer_kind;

/**
 * What gpumem_is_cuda_array() found.  Set @c size to
 * sizeof(gpumem_pointer_info) first: later versions append fields and fill
 * only those a caller's size covers.
 */
typedef struct gpumem_pointer_info {
    size_t size;                /**< set by the caller: sizeof(gpumem_pointer_info) */
    gpumem_pointer_kind kind;   /**< what the memory is */
    int device;                 /**< ordinal of the device whose context owns it; -1 for unknown memory */
    uint64_t driver_context;    /**< that context, the driver's CUcontext as an integer; 0 for unknown memory */
    uint64_t device_pointer;    /**< the address device code uses; 0 when it has none */
    void *host_pointer;         /**< the address host code uses (pinned, mapped, managed memory); else NULL */
    uint64_t range_start;       /**< the start of the allocation (or registration) holding the address; 0 for unknown memory */
    uint64_t range_size;        /**< its size in bytes; 0 for unknown memory */
    int ipc_capable;            /**< 1 when the memory has an IPC handle (gpumem_ipc_get_handle() can export it) */
} gpumem_pointer_info;

/**
 * numba's is_cuda_array, for an address: @p *result is 1 when @p pointer
 * is memory that device code can address (::GPUMEM_POINTER_DEVICE,
 * ::GPUMEM_POINTER_MAPPED, ::GPUMEM_POINTER_MANAGED), 0 otherwise (also for
 * pageable host memory and addresses of nothing, which are no error).
 * @p info (may be NULL; set its @c size first) receives the details.
 * Initializes the backend if needed; needs no context.
 *
 * Errors: ::GPUMEM_ERROR_NULL_ARGUMENT (@p result),
 * ::GPUMEM_ERROR_INVALID_VALUE (@p info->size too small), the backend's
 * load errors, and the driver's error when the query fails.
 * @param pointer the address.
 * @param[out] result 1 or 0.
 * @param[out] info the details, or NULL.
 * @return ::GPUMEM_OK, or one of the errors above.
 */
GPUMEM_API gpumem_status gpumem_is_cuda_array(uint64_t pointer, int *result, gpumem_pointer_info *info);

/* ---- IPC ------------------------------------------------------------------------------- */

/** The bytes of a ::gpumem_ipc_handle. */
#define GPUMEM_IPC_HANDLE_SIZE 2048
/** The version of the handle layout gpumem_ipc_get_handle() writes and gpumem_ipc_open() reads. */
#define GPUMEM_IPC_VERSION 1

/** An IPC handle: plain bytes (see the file's notes for their layout), safe to copy and send. */
typedef struct gpumem_ipc_handle {
    unsigned char bytes[GPUMEM_IPC_HANDLE_SIZE]; /**< the encoded handle */
} gpumem_ipc_handle;

/**
 * numba's get_ipc_handle: writes into @p handle the IPC handle of the
 * device memory of @p array with its offset, shape, strides and dtype.
 *
 * Errors: ::GPUMEM_ERROR_NULL_ARGUMENT; ::GPUMEM_ERROR_INVALID_VALUE for
 * a host-side, managed or empty array, or memory that is not from
 * cuMemAlloc (the message says what the driver reports it to be);
 * ::GPUMEM_ERROR_INVALID_DTYPE for a record whose description does not fit
 * in the handle (more than 1371 characters) or has none; the driver's error
 * (cuIpcGetMemHandle), e.g. ::GPUMEM_ERROR_NOT_SUPPORTED where the platform
 * has no CUDA IPC.
 * @param array a device array.
 * @param[out] handle the handle.
 * @return ::GPUMEM_OK, or one of the errors above.
 */
GPUMEM_API gpumem_status gpumem_ipc_get_handle(const gpumem_array *array, gpumem_ipc_handle *handle);

/**
 * numba's open_ipc_array: an array over the memory a handle of another
 * process describes, in @p ctx (NULL: a context on the handle's device).
 * See the file's notes for devices (peer access, staging), the exporting
 * process (::GPUMEM_ERROR_INVALID_STATE) and the array's lifetime.
 *
 * Errors: ::GPUMEM_ERROR_NULL_ARGUMENT; ::GPUMEM_ERROR_INVALID_VALUE and
 * ::GPUMEM_ERROR_INVALID_DTYPE for a malformed handle (the message names the
 * field), ::GPUMEM_ERROR_INVALID_VALUE also for an offset, elements or an
 * allocation size beyond the range the driver mapped;
 * ::GPUMEM_ERROR_INVALID_STATE in the exporting process;
 * ::GPUMEM_ERROR_INVALID_DEVICE when the handle's device is not visible;
 * the driver's error (cuIpcOpenMemHandle, cuMemGetAddressRange), e.g. for
 * bytes that are no handle of the driver's (for a handle whose exporter
 * freed the memory or exited, see the file's notes: on a GPU an error is
 * not guaranteed).
 * @param ctx the context, or NULL (see above).
 * @param[in] handle the handle from gpumem_ipc_get_handle().
 * @param[out] array the new array.
 * @return ::GPUMEM_OK, one of the errors above, ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY, or an autoinit failure.
 */
GPUMEM_API gpumem_status gpumem_ipc_open(gpumem_context *ctx, const gpumem_ipc_handle *handle, gpumem_array **array);

GPUMEM_END_DECLS

#endif /* GPUMEM_IPC_H */
