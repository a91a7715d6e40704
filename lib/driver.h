/*
 * driver.h - the one table of driver operations, and the dispatcher every
 * call into it goes through.
 *
 * Two backends fill the table: cuda.c and cuda_ops.c (the NVIDIA driver,
 * loaded with dlopen) and sim.c (a simulator on host memory).  Both speak the CUDA driver ABI of
 * cuda_abi.h: results are CUresult codes, copies take CUDA_MEMCPY2D/3D.
 *
 * Call the table only through GM_DRV(op, args...): it counts the call (per
 * operation, readable with gpumem_debug_driver_calls) and can make it fail
 * without reaching the backend (gpumem_debug_fail_call, GPUMEM_SIM_FAIL).
 * Turn a result into a status with gm_drv_check(rc, GM_OP_x, what), which names the driver
 * function and its error in the thread's last-error message.
 *
 * Conventions of the operations:
 *  - every operation that works in a context takes it first; the backend makes
 *    it current on the calling thread if it is not;
 *  - a NULL stream is the legacy default stream;
 *  - host and device addresses share one space (unified addressing), so 1-D
 *    copies take plain addresses and the backend infers the direction;
 *  - copies and memsets with async != 0 are queued on the stream; with
 *    async == 0 they are complete when the call returns, whatever the
 *    direction (the cuda backend waits for the stream after the driver's
 *    synchronous calls, which may return early for device-to-device copies
 *    and memsets); a 1-D copy on the NULL stream with async ==
 *    GM_DRV_SYNC_DONE is the driver's synchronous call alone, for a caller
 *    that knows it completes before returning (into host memory, or from
 *    page-locked memory to the device: the driver's "API synchronization
 *    behavior"), which saves the wait.
 */
#ifndef GM_DRIVER_H
#define GM_DRIVER_H

/* memcpy's async for a synchronous copy that the driver completes itself
 * (see the conventions above). */
#define GM_DRV_SYNC_DONE 2

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cuda_abi.h"
#include "gpumem/status.h"

typedef struct gm_dctx gm_dctx;       /* a backend context (CUcontext) */
typedef struct gm_dstream gm_dstream; /* a backend stream (CUstream) */
typedef struct gm_devent gm_devent;   /* a backend event (CUevent) */
typedef struct gm_dfunc gm_dfunc;     /* a backend kernel function (CUfunction) */
typedef struct gm_dmodule gm_dmodule; /* a backend loaded module (CUmodule) */
typedef struct gm_dmempool gm_dmempool; /* a backend stream-ordered memory pool (CUmemoryPool) */

/* X(op, "driver function name"): the table's operations, in one list that
 * makes the table's counters and their names. */
#define GM_DRIVER_OPS(X)                                  \
    X(driver_get_version, "cuDriverGetVersion")           \
    X(device_get_count, "cuDeviceGetCount")               \
    X(device_get_name, "cuDeviceGetName")                 \
    X(device_get_attribute, "cuDeviceGetAttribute")       \
    X(device_total_mem, "cuDeviceTotalMem")               \
    X(primary_ctx_retain, "cuDevicePrimaryCtxRetain")     \
    X(primary_ctx_release, "cuDevicePrimaryCtxRelease")   \
    X(ctx_synchronize, "cuCtxSynchronize")                \
    X(mem_get_info, "cuMemGetInfo")                       \
    X(mem_alloc, "cuMemAlloc")                            \
    X(mem_free, "cuMemFree")                              \
    X(mem_alloc_async, "cuMemAllocAsync")                 \
    X(mem_free_async, "cuMemFreeAsync")                   \
    X(mem_alloc_managed, "cuMemAllocManaged")             \
    X(mem_host_alloc, "cuMemHostAlloc")                   \
    X(mem_free_host, "cuMemFreeHost")                     \
    X(mem_host_register, "cuMemHostRegister")             \
    X(mem_host_unregister, "cuMemHostUnregister")         \
    X(mem_host_get_device_pointer, "cuMemHostGetDevicePointer") \
    X(memcpy, "cuMemcpy")                                 \
    X(memcpy_2d, "cuMemcpy2D")                            \
    X(memcpy_3d, "cuMemcpy3D")                            \
    X(memset, "cuMemsetD8")                               \
    X(stream_create, "cuStreamCreate")                    \
    X(stream_destroy, "cuStreamDestroy")                  \
    X(stream_synchronize, "cuStreamSynchronize")          \
    X(stream_query, "cuStreamQuery")                      \
    X(stream_wait_event, "cuStreamWaitEvent")             \
    X(launch_host_func, "cuLaunchHostFunc")               \
    X(event_create, "cuEventCreate")                      \
    X(event_destroy, "cuEventDestroy")                    \
    X(event_record, "cuEventRecord")                      \
    X(event_query, "cuEventQuery")                        \
    X(event_synchronize, "cuEventSynchronize")            \
    X(event_elapsed_time, "cuEventElapsedTime")           \
    X(module_load_data, "cuModuleLoadDataEx")             \
    X(module_unload, "cuModuleUnload")                    \
    X(module_get_function, "cuModuleGetFunction")         \
    X(module_get_global, "cuModuleGetGlobal")             \
    X(func_get_attribute, "cuFuncGetAttribute")           \
    X(func_set_attribute, "cuFuncSetAttribute")           \
    X(occupancy_max_active_blocks, "cuOccupancyMaxActiveBlocksPerMultiprocessor") \
    X(launch_kernel, "cuLaunchKernel")                    \
    X(pointer_get_attributes, "cuPointerGetAttributes")   \
    X(mem_get_address_range, "cuMemGetAddressRange")      \
    X(ipc_get_mem_handle, "cuIpcGetMemHandle")            \
    X(ipc_open_mem_handle, "cuIpcOpenMemHandle")          \
    X(ipc_close_mem_handle, "cuIpcCloseMemHandle")        \
    X(device_can_access_peer, "cuDeviceCanAccessPeer")    \
    X(ctx_enable_peer_access, "cuCtxEnablePeerAccess")   \
    X(memcpy_peer, "cuMemcpyPeer")                        \
    X(mem_get_allocation_granularity, "cuMemGetAllocationGranularity") \
    X(mem_address_reserve, "cuMemAddressReserve")         \
    X(mem_address_free, "cuMemAddressFree")               \
    X(mem_create, "cuMemCreate")                          \
    X(mem_release, "cuMemRelease")                        \
    X(mem_map, "cuMemMap")                                \
    X(mem_unmap, "cuMemUnmap")                            \
    X(mem_set_access, "cuMemSetAccess")                   \
    X(mem_export_to_shareable_handle, "cuMemExportToShareableHandle") \
    X(mem_import_from_shareable_handle, "cuMemImportFromShareableHandle") \
    X(mem_pool_create, "cuMemPoolCreate")                 \
    X(mem_pool_destroy, "cuMemPoolDestroy")               \
    X(mem_pool_set_attribute, "cuMemPoolSetAttribute")    \
    X(mem_pool_get_attribute, "cuMemPoolGetAttribute")    \
    X(mem_pool_trim_to, "cuMemPoolTrimTo")                \
    X(mem_alloc_from_pool_async, "cuMemAllocFromPoolAsync") \
    X(mem_pool_set_access, "cuMemPoolSetAccess")          \
    X(mem_pool_export_to_shareable_handle, "cuMemPoolExportToShareableHandle") \
    X(mem_pool_import_from_shareable_handle, "cuMemPoolImportFromShareableHandle") \
    X(mem_pool_export_pointer, "cuMemPoolExportPointer")  \
    X(mem_pool_import_pointer, "cuMemPoolImportPointer")

typedef struct gm_driver {
    const char *name; /* "cuda" or "sim" */

    int (*driver_get_version)(int *version);
    int (*device_get_count)(int *count);
    int (*device_get_name)(int dev, char *name, int len);
    int (*device_get_attribute)(int dev, int attr, int *value);
    int (*device_total_mem)(int dev, size_t *bytes);

    /* The device's primary context; retains nest, like the driver's. */
    int (*primary_ctx_retain)(int dev, gm_dctx **ctx);
    int (*primary_ctx_release)(int dev);
    int (*ctx_synchronize)(gm_dctx *ctx);

    int (*mem_get_info)(gm_dctx *ctx, size_t *free_bytes, size_t *total_bytes);
    int (*mem_alloc)(gm_dctx *ctx, gm_cu_deviceptr *ptr, size_t bytes);
    int (*mem_free)(gm_dctx *ctx, gm_cu_deviceptr ptr);
    /* Stream-ordered allocation from the device's default memory pool (the
     * driver's own; benchmarks compare our pool with it). */
    int (*mem_alloc_async)(gm_dctx *ctx, gm_cu_deviceptr *ptr, size_t bytes, gm_dstream *stream);
    int (*mem_free_async)(gm_dctx *ctx, gm_cu_deviceptr ptr, gm_dstream *stream);
    int (*mem_alloc_managed)(gm_dctx *ctx, gm_cu_deviceptr *ptr, size_t bytes, unsigned flags);
    int (*mem_host_alloc)(gm_dctx *ctx, void **ptr, size_t bytes, unsigned flags);
    int (*mem_free_host)(gm_dctx *ctx, void *ptr);
    int (*mem_host_register)(gm_dctx *ctx, void *ptr, size_t bytes, unsigned flags);
    int (*mem_host_unregister)(gm_dctx *ctx, void *ptr);
    int (*mem_host_get_device_pointer)(gm_dctx *ctx, gm_cu_deviceptr *dptr, void *ptr);

    int (*memcpy)(gm_dctx *ctx, gm_cu_deviceptr dst, gm_cu_deviceptr src, size_t bytes,
                  gm_dstream *stream, int async);
    int (*memcpy_2d)(gm_dctx *ctx, const gm_cu_memcpy2d *copy, gm_dstream *stream, int async);
    int (*memcpy_3d)(gm_dctx *ctx, const gm_cu_memcpy3d *copy, gm_dstream *stream, int async);
    /* Sets count elements of elem_size (1, 2 or 4) bytes to value. */
    int (*memset)(gm_dctx *ctx, gm_cu_deviceptr dst, unsigned value, unsigned elem_size,
                  size_t count, gm_dstream *stream, int async);

    int (*stream_create)(gm_dctx *ctx, gm_dstream **stream, unsigned flags);
    int (*stream_destroy)(gm_dctx *ctx, gm_dstream *stream);
    int (*stream_synchronize)(gm_dctx *ctx, gm_dstream *stream);
    /* CUDA_SUCCESS when all work is done, CUDA_ERROR_NOT_READY otherwise. */
    int (*stream_query)(gm_dctx *ctx, gm_dstream *stream);
    int (*stream_wait_event)(gm_dctx *ctx, gm_dstream *stream, gm_devent *event);
    /* Runs fn(data) on a backend thread once the stream's earlier work is done. */
    int (*launch_host_func)(gm_dctx *ctx, gm_dstream *stream, gm_cu_host_fn fn, void *data);

    int (*event_create)(gm_dctx *ctx, gm_devent **event, unsigned flags);
    int (*event_destroy)(gm_dctx *ctx, gm_devent *event);
    int (*event_record)(gm_dctx *ctx, gm_devent *event, gm_dstream *stream);
    int (*event_query)(gm_dctx *ctx, gm_devent *event);
    int (*event_synchronize)(gm_dctx *ctx, gm_devent *event);
    /* ctx: the events' context (the driver refuses events of two contexts). */
    int (*event_elapsed_time)(gm_dctx *ctx, float *ms, gm_devent *start, gm_devent *end);

    /* Loads a module image: NUL-terminated PTX text, a cubin (CUDA ELF) or a
     * fat binary, whose bytes are image[0, size) (the driver reads the size
     * from the image itself; the simulator checks against size).  A JIT or
     * loader error message goes into error_log (log_size bytes, always
     * NUL-terminated when log_size > 0; "" when there is none). */
    int (*module_load_data)(gm_dctx *ctx, gm_dmodule **module, const void *image, size_t size,
                            char *error_log, size_t log_size);
    int (*module_unload)(gm_dctx *ctx, gm_dmodule *module);
    /* CUDA_ERROR_NOT_FOUND when the module has no kernel (.entry) of that name. */
    int (*module_get_function)(gm_dctx *ctx, gm_dfunc **func, gm_dmodule *module, const char *name);
    /* A __device__ (.global) or __constant__ (.const) variable: its address and size. */
    int (*module_get_global)(gm_dctx *ctx, gm_cu_deviceptr *dptr, size_t *bytes, gm_dmodule *module,
                             const char *name);
    /* attr is a CUfunction_attribute. */
    int (*func_get_attribute)(gm_dctx *ctx, int *value, int attr, gm_dfunc *func);
    int (*func_set_attribute)(gm_dctx *ctx, gm_dfunc *func, int attr, int value);
    /* Resident blocks per multiprocessor of func at block_size threads and
     * dynamic_smem bytes; the simulator answers GM_SIM_ERROR_NOT_SIMULATED. */
    int (*occupancy_max_active_blocks)(gm_dctx *ctx, int *blocks, gm_dfunc *func, int block_size,
                                       size_t dynamic_smem);

    /* The simulator answers GM_SIM_ERROR_NOT_SIMULATED. */
    int (*launch_kernel)(gm_dctx *ctx, gm_dfunc *func, const unsigned grid[3],
                         const unsigned block[3], unsigned shared_bytes, gm_dstream *stream,
                         void **params);

    /* cuPointerGetAttributes: data[i] receives attribute attrs[i] (a
     * CUpointer_attribute; see cuda_abi.h for what each writes).  An address
     * the driver does not know is no error: its attributes get their null
     * values (memory type 0, context NULL, device ordinal -2, ranges 0) and
     * the result is CUDA_SUCCESS, as cuPointerGetAttributes documents.  Needs
     * no context. */
    int (*pointer_get_attributes)(unsigned count, const int *attrs, void **data, gm_cu_deviceptr ptr);
    /* cuMemGetAddressRange: the start and size of the device allocation
     * that holds ptr (cuMemAlloc or managed memory, or a mapping opened from
     * an IPC handle); either output may be NULL.  An address of no device
     * allocation is an error (the driver: CUDA_ERROR_NOT_FOUND or
     * CUDA_ERROR_INVALID_VALUE). */
    int (*mem_get_address_range)(gm_dctx *ctx, gm_cu_deviceptr *base, size_t *size, gm_cu_deviceptr ptr);
    /* The IPC handle of the device allocation (cuMemAlloc) that starts at ptr. */
    int (*ipc_get_mem_handle)(gm_dctx *ctx, gm_cu_ipc_mem_handle *handle, gm_cu_deviceptr ptr);
    /* Maps another process's allocation into ctx; flags 0 or
     * GM_CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS.  The driver refuses a handle of
     * the calling process (CUDA_ERROR_INVALID_CONTEXT). */
    int (*ipc_open_mem_handle)(gm_dctx *ctx, gm_cu_deviceptr *ptr, const gm_cu_ipc_mem_handle *handle,
                               unsigned flags);
    int (*ipc_close_mem_handle)(gm_dctx *ctx, gm_cu_deviceptr ptr);
    /* *can = 1 when device dev can address device peer's memory (0 for dev == peer). */
    int (*device_can_access_peer)(int dev, int peer, int *can);
    /* Lets ctx address peer's memory; CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED
     * the second time. */
    int (*ctx_enable_peer_access)(gm_dctx *ctx, gm_dctx *peer);
    /* bytes from src, device memory of src_ctx's device, to dst, device
     * memory of dst_ctx's device (cuMemcpyPeer; cuMemcpyPeerAsync with
     * async), issued in ctx, the context of stream (either of the two; any
     * of them when stream is NULL, the legacy stream).  Works without peer
     * access (the driver then stages it), only faster with it. */
    int (*memcpy_peer)(gm_dctx *ctx, gm_cu_deviceptr dst, gm_dctx *dst_ctx, gm_cu_deviceptr src,
                       gm_dctx *src_ctx, size_t bytes, gm_dstream *stream, int async);

    /* Virtual memory management (the virtual-memory source, source_vmm.c).
     * A driver without these entry points answers CUDA_ERROR_NOT_SUPPORTED.
     * option: GM_CU_MEM_ALLOC_GRANULARITY_MINIMUM or _RECOMMENDED. */
    int (*mem_get_allocation_granularity)(gm_dctx *ctx, size_t *granularity, const gm_cu_mem_alloc_prop *prop,
                                          int option);
    /* Reserves size bytes of address space (a multiple of the granularity),
     * aligned to alignment (0: the granularity), anywhere (no fixed address). */
    int (*mem_address_reserve)(gm_dctx *ctx, gm_cu_deviceptr *ptr, size_t size, size_t alignment);
    int (*mem_address_free)(gm_dctx *ctx, gm_cu_deviceptr ptr, size_t size);
    /* Physical memory of size bytes (a multiple of the granularity), as prop says. */
    int (*mem_create)(gm_dctx *ctx, gm_cu_mem_handle *handle, size_t size, const gm_cu_mem_alloc_prop *prop);
    int (*mem_release)(gm_dctx *ctx, gm_cu_mem_handle handle);
    /* Maps all of handle's size bytes at ptr, inside a reservation (offset 0, flags 0). */
    int (*mem_map)(gm_dctx *ctx, gm_cu_deviceptr ptr, size_t size, gm_cu_mem_handle handle);
    int (*mem_unmap)(gm_dctx *ctx, gm_cu_deviceptr ptr, size_t size);
    /* Grants the access desc[i] says to mapped [ptr, ptr + size). */
    int (*mem_set_access)(gm_dctx *ctx, gm_cu_deviceptr ptr, size_t size, const gm_cu_mem_access_desc *desc,
                          size_t count);
    /* Exports handle as a shareable handle of type type: for
     * GM_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, *(int *)shareable is a
     * new file descriptor the caller closes. */
    int (*mem_export_to_shareable_handle)(gm_dctx *ctx, void *shareable, gm_cu_mem_handle handle, int type);
    /* Imports physical memory from a shareable handle (for a file
     * descriptor: os_handle is the fd, cast to a pointer, as the driver takes it). */
    int (*mem_import_from_shareable_handle)(gm_dctx *ctx, gm_cu_mem_handle *handle, void *os_handle, int type);

    /* The driver's stream-ordered pools (`gpumem trace replay --allocator
     * async`); the simulator answers GM_SIM_ERROR_NOT_SIMULATED.  Freed with
     * mem_free_async. attr: a GM_CU_MEMPOOL_ATTR_*, its value a uint64_t. */
    int (*mem_pool_create)(gm_dctx *ctx, gm_dmempool **pool, const gm_cu_mem_pool_props *props);
    int (*mem_pool_destroy)(gm_dctx *ctx, gm_dmempool *pool);
    int (*mem_pool_set_attribute)(gm_dctx *ctx, gm_dmempool *pool, int attr, uint64_t *value);
    int (*mem_pool_get_attribute)(gm_dctx *ctx, gm_dmempool *pool, int attr, uint64_t *value);
    int (*mem_pool_trim_to)(gm_dctx *ctx, gm_dmempool *pool, size_t keep);
    int (*mem_alloc_from_pool_async)(gm_dctx *ctx, gm_cu_deviceptr *ptr, size_t bytes, gm_dmempool *pool,
                                     gm_dstream *stream);
    /* Sharing a stream-ordered pool between processes (pool_ipc.c; not
     * simulated either).  A pool made with handleTypes
     * GM_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR exports as a new file
     * descriptor, *(int *)shareable (the caller closes it); the importer
     * makes a pool of it (os_handle: the fd cast to a pointer, destroyed
     * with mem_pool_destroy) and grants its device access to it.  An
     * allocation of the pool exports as 64 opaque bytes, which the importer
     * turns into its own pointer to the same memory (freed with mem_free
     * or mem_free_async, before the exporter frees it). */
    int (*mem_pool_set_access)(gm_dctx *ctx, gm_dmempool *pool, const gm_cu_mem_access_desc *desc, size_t count);
    int (*mem_pool_export_to_shareable_handle)(gm_dctx *ctx, void *shareable, gm_dmempool *pool, int type);
    int (*mem_pool_import_from_shareable_handle)(gm_dctx *ctx, gm_dmempool **pool, void *os_handle, int type);
    int (*mem_pool_export_pointer)(gm_dctx *ctx, gm_cu_mem_pool_ptr_export_data *data, gm_cu_deviceptr ptr);
    int (*mem_pool_import_pointer)(gm_dctx *ctx, gm_cu_deviceptr *ptr, gm_dmempool *pool,
                                   gm_cu_mem_pool_ptr_export_data *data);
} gm_driver;

/* Operation indices, for the counters. */
#define GM_OP_ENUM_(op, fn) GM_OP_##op,
enum { GM_DRIVER_OPS(GM_OP_ENUM_) GM_OP_COUNT };

/* The backends' loaders, called once per process by gm_driver_ready().  Each
 * loads and initializes what it needs and gives its table, or fails with a
 * status and the thread's last-error message set (gm_error) saying why:
 * GPUMEM_ERROR_DRIVER_NOT_FOUND, GPUMEM_ERROR_NO_DEVICE,
 * GPUMEM_ERROR_INVALID_ENVIRONMENT (a bad GPUMEM_SIM_* value), ... */
gpumem_status gm_cuda_load(const gm_driver **table);
gpumem_status gm_sim_load(const gm_driver **table);

/* The chosen backend, after gm_driver_ready() succeeded. */
extern const gm_driver *gm_drv;

/* Chooses and loads the backend once per process (GPUMEM_BACKEND).  Returns
 * GPUMEM_OK, or the remembered failure with its message set again. */
gpumem_status gm_driver_ready(void);

/* gm_driver_ready() for the public call `what`: a failure's message begins
 * "what: " (gpumem/status.h). */
gpumem_status gm_driver_ready_for(const char *what);

/* Whether a backend is loaded, choosing it first if need be, without
 * recording a failure: for calls that do without one. */
bool gm_driver_usable(void);

/* The PCI ids (domain, bus, device) of device ordinal `device`: three
 * cuDeviceGetAttribute calls, a failure naming `what`.  What an IPC handle
 * carries to find the device in another process. */
gpumem_status gm_device_pci_ids(const char *what, int device, int32_t ids[3]);

/* Dispatcher state; use the macros below. */
extern _Atomic uint64_t gm_drv_calls[GM_OP_COUNT];
extern _Atomic uint64_t gm_drv_total_calls;
/* The total-call number to fail, 0: none.  Written only together with its
 * error code, under driver.c's lock (gm_drv_arm); read here without it. */
extern _Atomic uint64_t gm_drv_fail_at;
/* The error the calling thread's last failing call was given (gm_drv_fire_). */
extern _Thread_local int gm_drv_fault_code;

/* Arms the call numbered at (0: disarms) to fail with code, replacing any
 * earlier arming. */
void gm_drv_arm(uint64_t at, int code);

/* Call number n (of operation op) was counted at or after the armed one:
 * fires if n is that arming's number and the arming is still the current
 * one (each fires once), setting gm_drv_fault_code to its own code; an
 * arming made meanwhile replaced it, and nothing fires.  With
 * gm_drv_fail_then set, the arming stays and every later call fires too,
 * with that code. */
int gm_drv_fire_(uint64_t n, int op);

/* Set by tests/fault-walk.c before its first call: nonzero makes every call
 * after the armed one fail too, with this result (a lost device), until
 * disarmed; gm_drv_failed_op is the operation of the armed call that fired
 * (-1: none yet). */
extern int gm_drv_fail_then;
extern int gm_drv_failed_op;

/* Counts one call of op; nonzero when this call is one to fail (its error
 * is then in gm_drv_fault_code). */
static inline int gm_drv_enter(int op)
{
    atomic_fetch_add_explicit(&gm_drv_calls[op], 1, memory_order_relaxed);
    uint64_t n = atomic_fetch_add_explicit(&gm_drv_total_calls, 1, memory_order_relaxed) + 1;
    uint64_t at = atomic_load_explicit(&gm_drv_fail_at, memory_order_relaxed);
    if (__builtin_expect(at != 0, 0) && n >= at)
        return gm_drv_fire_(n, op);
    return 0;
}

/* Calls driver operation op: counted, injectable; evaluates to its result. */
#define GM_DRV(op, ...) \
    (gm_drv_enter(GM_OP_##op) ? gm_drv_fault_code : gm_drv->op(__VA_ARGS__))

/* Turns a driver result of op into a status; on failure sets the thread's
 * last error to "<what>: cuFoo failed: CUDA_ERROR_X (n): description". */
gpumem_status gm_drv_fail_(int result, int op, const char *what);
static inline gpumem_status gm_drv_check(int result, int op, const char *what)
{
    return result == 0 ? GPUMEM_OK : gm_drv_fail_(result, op, what);
}

/* The status a driver result maps to. */
gpumem_status gm_drv_status(int result);

/* The driver function name of an operation ("cuMemAlloc"). */
const char *gm_drv_op_name(int op);

/* Name and description of a CUresult (or the simulator's own code). */
const char *gm_cu_error_name(int result);
const char *gm_cu_error_description(int result);

/* GPUMEM_SIM_FAIL's value "k[:ERROR]" (pure; for the fuzzer too): k >= 1 an
 * integer (env.h's grammar), ERROR a CUresult name or a number in
 * [1, INT_MAX].  false when bad, with *bad the ERROR text when that is what
 * is wrong, else NULL. */
bool gm_parse_sim_fail(const char *s, long *k, int *code, const char **bad);

#endif /* GM_DRIVER_H */
