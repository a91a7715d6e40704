/*
 * cuda_impl.h - the cuda backend's shared state (private to cuda.c and
 * cuda_ops.c).
 *
 * The backend is two files:
 *   - cuda.c: libcuda loaded with dlopen, the entry points below resolved
 *     with cuGetProcAddress into gm_cu, cuInit, and the errors of loading;
 *   - cuda_ops.c: the driver table's operations (driver.h), each one or a
 *     few calls of gm_cu's entry points in the caller's context.
 */
#ifndef GM_CUDA_IMPL_H
#define GM_CUDA_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "cuda_abi.h"
#include "driver.h"

/* X(name, parameters): the driver functions the table calls, with the C
 * signatures of their GM_CUDA_API_VERSION variants in cuda.h. */
#define GM_CU_ENTRY_POINTS(X)                                                              \
    X(cuInit, (unsigned flags))                                                            \
    X(cuDriverGetVersion, (int *version))                                                  \
    X(cuDeviceGetCount, (int *count))                                                      \
    X(cuDeviceGet, (gm_cu_device *dev, int ordinal))                                       \
    X(cuDeviceGetName, (char *name, int len, gm_cu_device dev))                            \
    X(cuDeviceGetAttribute, (int *value, int attrib, gm_cu_device dev))                    \
    X(cuDeviceTotalMem, (size_t *bytes, gm_cu_device dev))                                 \
    X(cuDevicePrimaryCtxRetain, (gm_cu_context *ctx, gm_cu_device dev))                    \
    X(cuDevicePrimaryCtxRelease, (gm_cu_device dev))                                       \
    X(cuCtxGetCurrent, (gm_cu_context *ctx))                                               \
    X(cuCtxSetCurrent, (gm_cu_context ctx))                                                \
    X(cuCtxSynchronize, (void))                                                            \
    X(cuMemGetInfo, (size_t *free_bytes, size_t *total_bytes))                             \
    X(cuMemAlloc, (gm_cu_deviceptr *dptr, size_t bytes))                                   \
    X(cuMemFree, (gm_cu_deviceptr dptr))                                                   \
    X(cuMemAllocAsync, (gm_cu_deviceptr *dptr, size_t bytes, gm_cu_stream stream))         \
    X(cuMemFreeAsync, (gm_cu_deviceptr dptr, gm_cu_stream stream))                         \
    X(cuMemAllocManaged, (gm_cu_deviceptr *dptr, size_t bytes, unsigned flags))            \
    X(cuMemHostAlloc, (void **pp, size_t bytes, unsigned flags))                           \
    X(cuMemFreeHost, (void *p))                                                            \
    X(cuMemHostRegister, (void *p, size_t bytes, unsigned flags))                          \
    X(cuMemHostUnregister, (void *p))                                                      \
    X(cuMemHostGetDevicePointer, (gm_cu_deviceptr *dptr, void *p, unsigned flags))         \
    X(cuMemcpy, (gm_cu_deviceptr dst, gm_cu_deviceptr src, size_t bytes))                  \
    X(cuMemcpyAsync, (gm_cu_deviceptr dst, gm_cu_deviceptr src, size_t bytes,              \
                      gm_cu_stream stream))                                                \
    X(cuMemcpy2DUnaligned, (const gm_cu_memcpy2d *copy))                                   \
    X(cuMemcpy2DAsync, (const gm_cu_memcpy2d *copy, gm_cu_stream stream))                  \
    X(cuMemcpy3D, (const gm_cu_memcpy3d *copy))                                            \
    X(cuMemcpy3DAsync, (const gm_cu_memcpy3d *copy, gm_cu_stream stream))                  \
    X(cuMemsetD8, (gm_cu_deviceptr dst, unsigned char value, size_t count))                \
    X(cuMemsetD16, (gm_cu_deviceptr dst, unsigned short value, size_t count))              \
    X(cuMemsetD32, (gm_cu_deviceptr dst, unsigned value, size_t count))                    \
    X(cuMemsetD8Async, (gm_cu_deviceptr dst, unsigned char value, size_t count,            \
                        gm_cu_stream stream))                                              \
    X(cuMemsetD16Async, (gm_cu_deviceptr dst, unsigned short value, size_t count,          \
                         gm_cu_stream stream))                                             \
    X(cuMemsetD32Async, (gm_cu_deviceptr dst, unsigned value, size_t count,                \
                         gm_cu_stream stream))                                             \
    X(cuStreamCreate, (gm_cu_stream *stream, unsigned flags))                              \
    X(cuStreamDestroy, (gm_cu_stream stream))                                              \
    X(cuStreamSynchronize, (gm_cu_stream stream))                                          \
    X(cuStreamQuery, (gm_cu_stream stream))                                                \
    X(cuStreamWaitEvent, (gm_cu_stream stream, gm_cu_event event, unsigned flags))         \
    X(cuLaunchHostFunc, (gm_cu_stream stream, gm_cu_host_fn fn, void *data))              \
    X(cuEventCreate, (gm_cu_event *event, unsigned flags))                                 \
    X(cuEventDestroy, (gm_cu_event event))                                                 \
    X(cuEventRecord, (gm_cu_event event, gm_cu_stream stream))                             \
    X(cuEventQuery, (gm_cu_event event))                                                   \
    X(cuEventSynchronize, (gm_cu_event event))                                             \
    X(cuEventElapsedTime, (float *ms, gm_cu_event start, gm_cu_event end))                 \
    X(cuModuleLoadDataEx, (gm_cu_module *module, const void *image, unsigned num_options,  \
                           int *options, void **option_values))                            \
    X(cuModuleUnload, (gm_cu_module module))                                               \
    X(cuModuleGetFunction, (gm_cu_function *func, gm_cu_module module, const char *name))  \
    X(cuModuleGetGlobal, (gm_cu_deviceptr *dptr, size_t *bytes, gm_cu_module module,       \
                          const char *name))                                               \
    X(cuFuncGetAttribute, (int *value, int attrib, gm_cu_function func))                   \
    X(cuFuncSetAttribute, (gm_cu_function func, int attrib, int value))                    \
    X(cuOccupancyMaxActiveBlocksPerMultiprocessor, (int *blocks, gm_cu_function func,      \
                                                    int block_size, size_t dynamic_smem))  \
    X(cuLaunchKernel, (gm_cu_function func, unsigned grid_x, unsigned grid_y,              \
                       unsigned grid_z, unsigned block_x, unsigned block_y,                \
                       unsigned block_z, unsigned shared_bytes, gm_cu_stream stream,       \
                       void **params, void **extra))                                      \
    X(cuPointerGetAttributes, (unsigned count, int *attrs, void **data, gm_cu_deviceptr ptr)) \
    X(cuMemGetAddressRange, (gm_cu_deviceptr *base, size_t *size, gm_cu_deviceptr dptr))    \
    X(cuIpcGetMemHandle, (gm_cu_ipc_mem_handle *handle, gm_cu_deviceptr dptr))            \
    X(cuIpcOpenMemHandle, (gm_cu_deviceptr *dptr, gm_cu_ipc_mem_handle handle,             \
                           unsigned flags))                                                \
    X(cuIpcCloseMemHandle, (gm_cu_deviceptr dptr))                                         \
    X(cuDeviceCanAccessPeer, (int *can, gm_cu_device dev, gm_cu_device peer))              \
    X(cuCtxEnablePeerAccess, (gm_cu_context peer, unsigned flags))                         \
    X(cuMemcpyPeer, (gm_cu_deviceptr dst, gm_cu_context dst_ctx, gm_cu_deviceptr src,        \
                     gm_cu_context src_ctx, size_t bytes))                                  \
    X(cuMemcpyPeerAsync, (gm_cu_deviceptr dst, gm_cu_context dst_ctx, gm_cu_deviceptr src,   \
                          gm_cu_context src_ctx, size_t bytes, gm_cu_stream stream))

/* Used only for messages, or by the virtual-memory source and the driver's
 * stream-ordered pools: a driver without them still works (the operations
 * answer CUDA_ERROR_NOT_SUPPORTED).  Prototypes from CUDA 13's cuda.h. */
#define GM_CU_OPTIONAL_ENTRY_POINTS(X)                                                       \
    X(cuGetErrorName, (gm_cu_result error, const char **name))                               \
    X(cuGetErrorString, (gm_cu_result error, const char **description))                      \
    X(cuMemGetAllocationGranularity, (size_t *granularity, const gm_cu_mem_alloc_prop *prop, \
                                      int option))                                           \
    X(cuMemAddressReserve, (gm_cu_deviceptr *ptr, size_t size, size_t alignment,             \
                            gm_cu_deviceptr addr, unsigned long long flags))                 \
    X(cuMemAddressFree, (gm_cu_deviceptr ptr, size_t size))                                  \
    X(cuMemCreate, (gm_cu_mem_handle *handle, size_t size, const gm_cu_mem_alloc_prop *prop, \
                    unsigned long long flags))                                               \
    X(cuMemRelease, (gm_cu_mem_handle handle))                                               \
    X(cuMemMap, (gm_cu_deviceptr ptr, size_t size, size_t offset, gm_cu_mem_handle handle,   \
                 unsigned long long flags))                                                  \
    X(cuMemUnmap, (gm_cu_deviceptr ptr, size_t size))                                        \
    X(cuMemSetAccess, (gm_cu_deviceptr ptr, size_t size, const gm_cu_mem_access_desc *desc,  \
                       size_t count))                                                        \
    X(cuMemExportToShareableHandle, (void *shareable, gm_cu_mem_handle handle, int type,     \
                                     unsigned long long flags))                              \
    X(cuMemImportFromShareableHandle, (gm_cu_mem_handle *handle, void *os_handle, int type)) \
    X(cuMemPoolCreate, (gm_cu_mempool *pool, const gm_cu_mem_pool_props *props))             \
    X(cuMemPoolDestroy, (gm_cu_mempool pool))                                                \
    X(cuMemPoolSetAttribute, (gm_cu_mempool pool, int attr, void *value))                    \
    X(cuMemPoolGetAttribute, (gm_cu_mempool pool, int attr, void *value))                    \
    X(cuMemPoolTrimTo, (gm_cu_mempool pool, size_t keep))                                    \
    X(cuMemAllocFromPoolAsync, (gm_cu_deviceptr *ptr, size_t bytes, gm_cu_mempool pool,      \
                                gm_cu_stream stream))                                        \
    X(cuMemPoolSetAccess, (gm_cu_mempool pool, const gm_cu_mem_access_desc *map, size_t count)) \
    X(cuMemPoolExportToShareableHandle, (void *handle, gm_cu_mempool pool, int type,           \
                                         unsigned long long flags))                          \
    X(cuMemPoolImportFromShareableHandle, (gm_cu_mempool *pool, void *handle, int type,       \
                                           unsigned long long flags))                        \
    X(cuMemPoolExportPointer, (gm_cu_mem_pool_ptr_export_data *data, gm_cu_deviceptr ptr))   \
    X(cuMemPoolImportPointer, (gm_cu_deviceptr *ptr, gm_cu_mempool pool, gm_cu_mem_pool_ptr_export_data *data))

#define GM_CU_PFN_(name, params) typedef gm_cu_result (*gm_pfn_##name) params;
GM_CU_ENTRY_POINTS(GM_CU_PFN_)
GM_CU_OPTIONAL_ENTRY_POINTS(GM_CU_PFN_)
#undef GM_CU_PFN_

/* cuGetProcAddress_v2 (CUDA 12.0) and its 11.3 predecessor; the status is a
 * CUdriverProcAddressQueryResult, an int-sized enum. */
typedef gm_cu_result (*gm_pfn_get_proc_address_v2)(const char *symbol, void **pfn,
                                                   int cuda_version, uint64_t flags,
                                                   int *symbol_status);
typedef gm_cu_result (*gm_pfn_get_proc_address_v1)(const char *symbol, void **pfn,
                                                   int cuda_version, uint64_t flags);

/* The entry points of the driver, and cuGetProcAddress's to find them. */
typedef struct gm_cu_entry_points {
#define GM_CU_FIELD_(name, params) gm_pfn_##name name;
    GM_CU_ENTRY_POINTS(GM_CU_FIELD_)
    GM_CU_OPTIONAL_ENTRY_POINTS(GM_CU_FIELD_)
#undef GM_CU_FIELD_
    gm_pfn_get_proc_address_v2 get_proc_v2;
    gm_pfn_get_proc_address_v1 get_proc_v1;
} gm_cu_entry_points;

/* cuda.c: the entry points, written by gm_cuda_load before gm_driver_ready publishes the table, then read-only. */
extern gm_cu_entry_points gm_cu;

/* cuda_ops.c: the backend's driver table, whose operations call gm_cu (what gm_cuda_load hands out). */
extern const gm_driver gm_cuda_driver;

#endif
