/*
 * cuda.c - the NVIDIA driver backend: libcuda loaded with dlopen at run time,
 * its entry points resolved with cuGetProcAddress at one CUDA version, so
 * that building needs no CUDA headers and a machine without a driver gets a
 * clear error instead of a failed link.
 *
 * Every symbol is requested by its base name ("cuMemAlloc") at
 * GM_CUDA_API_VERSION: the driver then hands out the ABI of that version
 * (cuMemAlloc_v2, cuStreamDestroy_v2, ...), which is what the declarations
 * below spell, whatever newer variants the installed driver also has.
 */
#include "config.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cuda_abi.h"
#include "driver.h"
#include "env.h"
#include "params.h"
#include "error.h"

#define GM_CUDA_DEFAULT_LIBRARY "libcuda.so.1"

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

/* Written once by gm_cuda_load before gm_driver_ready publishes the table,
 * read-only afterwards. */
static struct {
#define GM_CU_FIELD_(name, params) gm_pfn_##name name;
    GM_CU_ENTRY_POINTS(GM_CU_FIELD_)
    GM_CU_OPTIONAL_ENTRY_POINTS(GM_CU_FIELD_)
#undef GM_CU_FIELD_
    gm_pfn_get_proc_address_v2 get_proc_v2;
    gm_pfn_get_proc_address_v1 get_proc_v1;
} cu;

/* dlsym and cuGetProcAddress give object pointers; POSIX guarantees they
 * convert to function pointers, and copying the bytes says so without the
 * cast ISO C leaves undefined. */
_Static_assert(sizeof(void *) == sizeof(gm_pfn_cuInit), "function pointers must fit in void *");
#define GM_SET_PFN_(dst, p) memcpy(&(dst), &(p), sizeof(dst))

/* ---- error names ------------------------------------------------------------ */

/* The driver's own name for rc when it can say, else ours; never NULL. */
static const char *cu_error_name(gm_cu_result rc)
{
    const char *s = NULL;
    if (cu.cuGetErrorName != NULL && cu.cuGetErrorName(rc, &s) == GM_CUDA_SUCCESS && s != NULL)
        return s;
    s = gm_cu_error_name(rc);
    return s != NULL ? s : "unknown CUresult";
}

static const char *cu_error_description(gm_cu_result rc)
{
    const char *s = NULL;
    if (cu.cuGetErrorString != NULL && cu.cuGetErrorString(rc, &s) == GM_CUDA_SUCCESS && s != NULL)
        return s;
    return gm_cu_error_description(rc);
}

/* ---- the operations ------------------------------------------------------------ */

#define CU_TRY(call)                             \
    do {                                         \
        gm_cu_result rc_ = (call);               \
        if (rc_ != GM_CUDA_SUCCESS)              \
            return rc_;                          \
    } while (0)

#define CU_CTX(ctx) ((gm_cu_context)(ctx))
#define CU_STREAM(s) ((gm_cu_stream)(s))
#define CU_EVENT(e) ((gm_cu_event)(e))
#define CU_MODULE(m) ((gm_cu_module)(m))
#define CU_FUNC(f) ((gm_cu_function)(f))

/* Makes ctx current on this thread; the check first because the library
 * calls from threads that are already bound far more often than not, and a
 * redundant cuCtxSetCurrent is not free.  A NULL ctx is a caller's bug: it is
 * refused rather than unbinding whatever the application made current. */
static gm_cu_result make_current(gm_dctx *ctx)
{
    gm_cu_context cur = NULL;
    if (ctx == NULL)
        return GM_CUDA_ERROR_INVALID_CONTEXT;
    CU_TRY(cu.cuCtxGetCurrent(&cur));
    if (cur == CU_CTX(ctx))
        return GM_CUDA_SUCCESS;
    return cu.cuCtxSetCurrent(CU_CTX(ctx));
}

/* Ends a copy or memset: with async == 0 the caller wants it done.  The
 * driver's synchronous cuMemcpy and cuMemsetD* may return before a
 * device-to-device copy or a memset has run (they are only ordered before
 * later work on blocking streams, not on a caller's non-blocking stream), so
 * wait for the stream they went to. */
static gm_cu_result finish(gm_cu_result rc, gm_dstream *stream, int async)
{
    if (rc != GM_CUDA_SUCCESS || async)
        return rc;
    return cu.cuStreamSynchronize(CU_STREAM(stream));
}

static int cuda_driver_get_version(int *version)
{
    return cu.cuDriverGetVersion(version);
}

static int cuda_device_get_count(int *count)
{
    return cu.cuDeviceGetCount(count);
}

static int cuda_device_get_name(int ordinal, char *name, int len)
{
    gm_cu_device dev;
    CU_TRY(cu.cuDeviceGet(&dev, ordinal));
    return cu.cuDeviceGetName(name, len, dev);
}

static int cuda_device_get_attribute(int ordinal, int attr, int *value)
{
    gm_cu_device dev;
    CU_TRY(cu.cuDeviceGet(&dev, ordinal));
    return cu.cuDeviceGetAttribute(value, attr, dev);
}

static int cuda_device_total_mem(int ordinal, size_t *bytes)
{
    gm_cu_device dev;
    CU_TRY(cu.cuDeviceGet(&dev, ordinal));
    return cu.cuDeviceTotalMem(bytes, dev);
}

static int cuda_primary_ctx_retain(int ordinal, gm_dctx **ctx)
{
    gm_cu_device dev;
    gm_cu_context c = NULL;
    CU_TRY(cu.cuDeviceGet(&dev, ordinal));
    CU_TRY(cu.cuDevicePrimaryCtxRetain(&c, dev));
    *ctx = (gm_dctx *)c;
    return GM_CUDA_SUCCESS;
}

static int cuda_primary_ctx_release(int ordinal)
{
    gm_cu_device dev;
    CU_TRY(cu.cuDeviceGet(&dev, ordinal));
    return cu.cuDevicePrimaryCtxRelease(dev);
}

static int cuda_ctx_synchronize(gm_dctx *ctx)
{
    CU_TRY(make_current(ctx));
    return cu.cuCtxSynchronize();
}

static int cuda_mem_get_info(gm_dctx *ctx, size_t *free_bytes, size_t *total_bytes)
{
    CU_TRY(make_current(ctx));
    return cu.cuMemGetInfo(free_bytes, total_bytes);
}

static int cuda_mem_alloc(gm_dctx *ctx, gm_cu_deviceptr *ptr, size_t bytes)
{
    CU_TRY(make_current(ctx));
    return cu.cuMemAlloc(ptr, bytes);
}

static int cuda_mem_free(gm_dctx *ctx, gm_cu_deviceptr ptr)
{
    CU_TRY(make_current(ctx));
    return cu.cuMemFree(ptr);
}

static int cuda_mem_alloc_async(gm_dctx *ctx, gm_cu_deviceptr *ptr, size_t bytes, gm_dstream *stream)
{
    CU_TRY(make_current(ctx));
    return cu.cuMemAllocAsync(ptr, bytes, CU_STREAM(stream));
}

static int cuda_mem_free_async(gm_dctx *ctx, gm_cu_deviceptr ptr, gm_dstream *stream)
{
    CU_TRY(make_current(ctx));
    return cu.cuMemFreeAsync(ptr, CU_STREAM(stream));
}

static int cuda_mem_alloc_managed(gm_dctx *ctx, gm_cu_deviceptr *ptr, size_t bytes, unsigned flags)
{
    CU_TRY(make_current(ctx));
    return cu.cuMemAllocManaged(ptr, bytes, flags);
}

static int cuda_mem_host_alloc(gm_dctx *ctx, void **ptr, size_t bytes, unsigned flags)
{
    CU_TRY(make_current(ctx));
    return cu.cuMemHostAlloc(ptr, bytes, flags);
}

static int cuda_mem_free_host(gm_dctx *ctx, void *ptr)
{
    CU_TRY(make_current(ctx));
    return cu.cuMemFreeHost(ptr);
}

static int cuda_mem_host_register(gm_dctx *ctx, void *ptr, size_t bytes, unsigned flags)
{
    CU_TRY(make_current(ctx));
    return cu.cuMemHostRegister(ptr, bytes, flags);
}

static int cuda_mem_host_unregister(gm_dctx *ctx, void *ptr)
{
    CU_TRY(make_current(ctx));
    return cu.cuMemHostUnregister(ptr);
}

static int cuda_mem_host_get_device_pointer(gm_dctx *ctx, gm_cu_deviceptr *dptr, void *ptr)
{
    CU_TRY(make_current(ctx));
    return cu.cuMemHostGetDevicePointer(dptr, ptr, 0);
}

static int cuda_memcpy(gm_dctx *ctx, gm_cu_deviceptr dst, gm_cu_deviceptr src, size_t bytes,
                       gm_dstream *stream, int async)
{
    CU_TRY(make_current(ctx));
    if (async != 1 && stream == NULL) /* synchronous; GM_DRV_SYNC_DONE needs no wait after */
        return async == GM_DRV_SYNC_DONE ? cu.cuMemcpy(dst, src, bytes) : finish(cu.cuMemcpy(dst, src, bytes), NULL, 0);
    return finish(cu.cuMemcpyAsync(dst, src, bytes, CU_STREAM(stream)), stream, async == 1);
}

static int cuda_memcpy_2d(gm_dctx *ctx, const gm_cu_memcpy2d *copy, gm_dstream *stream, int async)
{
    CU_TRY(make_current(ctx));
    /* cuMemcpy2D limits pitches to CU_DEVICE_ATTRIBUTE_MAX_PITCH; the
     * unaligned variant has no limit, and the planner emits any pitch. */
    if (!async && stream == NULL)
        return finish(cu.cuMemcpy2DUnaligned(copy), NULL, 0);
    return finish(cu.cuMemcpy2DAsync(copy, CU_STREAM(stream)), stream, async);
}

static int cuda_memcpy_3d(gm_dctx *ctx, const gm_cu_memcpy3d *copy, gm_dstream *stream, int async)
{
    CU_TRY(make_current(ctx));
    if (!async && stream == NULL)
        return finish(cu.cuMemcpy3D(copy), NULL, 0);
    return finish(cu.cuMemcpy3DAsync(copy, CU_STREAM(stream)), stream, async);
}

static int cuda_memset(gm_dctx *ctx, gm_cu_deviceptr dst, unsigned value, unsigned elem_size,
                       size_t count, gm_dstream *stream, int async)
{
    gm_cu_stream s = CU_STREAM(stream);
    int queued = async || stream != NULL;
    gm_cu_result rc;
    if (elem_size != 1 && elem_size != 2 && elem_size != 4)
        return GM_CUDA_ERROR_INVALID_VALUE;
    CU_TRY(make_current(ctx));
    switch (elem_size) {
    case 1:
        rc = queued ? cu.cuMemsetD8Async(dst, (unsigned char)value, count, s)
                    : cu.cuMemsetD8(dst, (unsigned char)value, count);
        break;
    case 2:
        rc = queued ? cu.cuMemsetD16Async(dst, (unsigned short)value, count, s)
                    : cu.cuMemsetD16(dst, (unsigned short)value, count);
        break;
    default:
        rc = queued ? cu.cuMemsetD32Async(dst, value, count, s) : cu.cuMemsetD32(dst, value, count);
        break;
    }
    return finish(rc, stream, async);
}

static int cuda_stream_create(gm_dctx *ctx, gm_dstream **stream, unsigned flags)
{
    gm_cu_stream s = NULL;
    CU_TRY(make_current(ctx));
    CU_TRY(cu.cuStreamCreate(&s, flags));
    *stream = (gm_dstream *)s;
    return GM_CUDA_SUCCESS;
}

static int cuda_stream_destroy(gm_dctx *ctx, gm_dstream *stream)
{
    CU_TRY(make_current(ctx));
    return cu.cuStreamDestroy(CU_STREAM(stream));
}

static int cuda_stream_synchronize(gm_dctx *ctx, gm_dstream *stream)
{
    CU_TRY(make_current(ctx));
    return cu.cuStreamSynchronize(CU_STREAM(stream));
}

static int cuda_stream_query(gm_dctx *ctx, gm_dstream *stream)
{
    CU_TRY(make_current(ctx));
    return cu.cuStreamQuery(CU_STREAM(stream));
}

static int cuda_stream_wait_event(gm_dctx *ctx, gm_dstream *stream, gm_devent *event)
{
    CU_TRY(make_current(ctx));
    return cu.cuStreamWaitEvent(CU_STREAM(stream), CU_EVENT(event), 0);
}

static int cuda_launch_host_func(gm_dctx *ctx, gm_dstream *stream, gm_cu_host_fn fn, void *data)
{
    CU_TRY(make_current(ctx));
    return cu.cuLaunchHostFunc(CU_STREAM(stream), fn, data);
}

static int cuda_event_create(gm_dctx *ctx, gm_devent **event, unsigned flags)
{
    gm_cu_event e = NULL;
    CU_TRY(make_current(ctx));
    CU_TRY(cu.cuEventCreate(&e, flags));
    *event = (gm_devent *)e;
    return GM_CUDA_SUCCESS;
}

static int cuda_event_destroy(gm_dctx *ctx, gm_devent *event)
{
    CU_TRY(make_current(ctx));
    return cu.cuEventDestroy(CU_EVENT(event));
}

static int cuda_event_record(gm_dctx *ctx, gm_devent *event, gm_dstream *stream)
{
    CU_TRY(make_current(ctx));
    return cu.cuEventRecord(CU_EVENT(event), CU_STREAM(stream));
}

static int cuda_event_query(gm_dctx *ctx, gm_devent *event)
{
    CU_TRY(make_current(ctx));
    return cu.cuEventQuery(CU_EVENT(event));
}

static int cuda_event_synchronize(gm_dctx *ctx, gm_devent *event)
{
    CU_TRY(make_current(ctx));
    return cu.cuEventSynchronize(CU_EVENT(event));
}

static int cuda_event_elapsed_time(gm_dctx *ctx, float *ms, gm_devent *start, gm_devent *end)
{
    CU_TRY(make_current(ctx));
    return cu.cuEventElapsedTime(ms, CU_EVENT(start), CU_EVENT(end));
}

/* cuModuleLoadDataEx with the JIT's error log: a PTX that does not compile
 * then says why.  The driver finds the image's size in the image. */
static int cuda_module_load_data(gm_dctx *ctx, gm_dmodule **module, const void *image, size_t size,
                                 char *error_log, size_t log_size)
{
    (void)size;
    gm_cu_module m = NULL;
    int options[2] = {GM_CU_JIT_ERROR_LOG_BUFFER, GM_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    /* the size option is an unsigned int passed in the pointer's bits */
    unsigned log_bytes = log_size > 0xffffffffu ? 0xffffffffu : (unsigned)log_size;
    void *values[2] = {error_log, (void *)(uintptr_t)log_bytes};
    unsigned n = error_log != NULL && log_bytes > 0 ? 2 : 0;
    if (n != 0)
        error_log[0] = '\0';
    CU_TRY(make_current(ctx));
    gm_cu_result rc = cu.cuModuleLoadDataEx(&m, image, n, options, values);
    if (n != 0)
        error_log[log_bytes - 1] = '\0';
    if (rc == GM_CUDA_SUCCESS)
        *module = (gm_dmodule *)m;
    return rc;
}

static int cuda_module_unload(gm_dctx *ctx, gm_dmodule *module)
{
    CU_TRY(make_current(ctx));
    return cu.cuModuleUnload(CU_MODULE(module));
}

static int cuda_module_get_function(gm_dctx *ctx, gm_dfunc **func, gm_dmodule *module, const char *name)
{
    gm_cu_function f = NULL;
    CU_TRY(make_current(ctx));
    CU_TRY(cu.cuModuleGetFunction(&f, CU_MODULE(module), name));
    *func = (gm_dfunc *)f;
    return GM_CUDA_SUCCESS;
}

static int cuda_module_get_global(gm_dctx *ctx, gm_cu_deviceptr *dptr, size_t *bytes, gm_dmodule *module,
                                  const char *name)
{
    CU_TRY(make_current(ctx));
    return cu.cuModuleGetGlobal(dptr, bytes, CU_MODULE(module), name);
}

static int cuda_func_get_attribute(gm_dctx *ctx, int *value, int attr, gm_dfunc *func)
{
    CU_TRY(make_current(ctx));
    return cu.cuFuncGetAttribute(value, attr, CU_FUNC(func));
}

static int cuda_func_set_attribute(gm_dctx *ctx, gm_dfunc *func, int attr, int value)
{
    CU_TRY(make_current(ctx));
    return cu.cuFuncSetAttribute(CU_FUNC(func), attr, value);
}

static int cuda_occupancy_max_active_blocks(gm_dctx *ctx, int *blocks, gm_dfunc *func, int block_size,
                                            size_t dynamic_smem)
{
    CU_TRY(make_current(ctx));
    return cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(blocks, CU_FUNC(func), block_size, dynamic_smem);
}

static int cuda_launch_kernel(gm_dctx *ctx, gm_dfunc *func, const unsigned grid[3],
                              const unsigned block[3], unsigned shared_bytes, gm_dstream *stream,
                              void **params)
{
    CU_TRY(make_current(ctx));
    return cu.cuLaunchKernel(CU_FUNC(func), grid[0], grid[1], grid[2], block[0], block[1],
                             block[2], shared_bytes, CU_STREAM(stream), params, NULL);
}

static int cuda_pointer_get_attributes(unsigned count, const int *attrs, void **data, gm_cu_deviceptr ptr)
{
    int copy[16];
    if (count > sizeof copy / sizeof copy[0])
        return GM_CUDA_ERROR_INVALID_VALUE;
    /* the driver's prototype takes a non-const array it does not write */
    memcpy(copy, attrs, count * sizeof *attrs);
    return cu.cuPointerGetAttributes(count, copy, data, ptr);
}

static int cuda_mem_get_address_range(gm_dctx *ctx, gm_cu_deviceptr *base, size_t *size, gm_cu_deviceptr ptr)
{
    CU_TRY(make_current(ctx));
    return cu.cuMemGetAddressRange(base, size, ptr);
}

static int cuda_ipc_get_mem_handle(gm_dctx *ctx, gm_cu_ipc_mem_handle *handle, gm_cu_deviceptr ptr)
{
    CU_TRY(make_current(ctx));
    return cu.cuIpcGetMemHandle(handle, ptr);
}

static int cuda_ipc_open_mem_handle(gm_dctx *ctx, gm_cu_deviceptr *ptr, const gm_cu_ipc_mem_handle *handle,
                                    unsigned flags)
{
    CU_TRY(make_current(ctx));
    return cu.cuIpcOpenMemHandle(ptr, *handle, flags);
}

static int cuda_ipc_close_mem_handle(gm_dctx *ctx, gm_cu_deviceptr ptr)
{
    CU_TRY(make_current(ctx));
    return cu.cuIpcCloseMemHandle(ptr);
}

static int cuda_device_can_access_peer(int ordinal, int peer_ordinal, int *can)
{
    gm_cu_device dev, peer;
    CU_TRY(cu.cuDeviceGet(&dev, ordinal));
    CU_TRY(cu.cuDeviceGet(&peer, peer_ordinal));
    return cu.cuDeviceCanAccessPeer(can, dev, peer);
}

static int cuda_ctx_enable_peer_access(gm_dctx *ctx, gm_dctx *peer)
{
    CU_TRY(make_current(ctx));
    return cu.cuCtxEnablePeerAccess(CU_CTX(peer), 0);
}

/* cuMemcpyPeer returns before the copy ran (it is asynchronous with respect
 * to the host, serialized with the work of the current, source and
 * destination contexts): wait for the current one's legacy stream. */
static int cuda_memcpy_peer(gm_dctx *ctx, gm_cu_deviceptr dst, gm_dctx *dst_ctx, gm_cu_deviceptr src,
                            gm_dctx *src_ctx, size_t bytes, gm_dstream *stream, int async)
{
    CU_TRY(make_current(ctx));
    if (!async && stream == NULL)
        return finish(cu.cuMemcpyPeer(dst, CU_CTX(dst_ctx), src, CU_CTX(src_ctx), bytes), NULL, 0);
    return finish(cu.cuMemcpyPeerAsync(dst, CU_CTX(dst_ctx), src, CU_CTX(src_ctx), bytes, CU_STREAM(stream)),
                  stream, async);
}

/* ---- virtual memory and stream-ordered pools (optional entry points) ---- */

/* static int cuda_<op>(params): makes ctx current and calls fn(args), or
 * answers CUDA_ERROR_NOT_SUPPORTED when the driver lacks fn. */
#define CU_OPTIONAL_OP_(op, fn, params, args)       \
    static int cuda_##op params                     \
    {                                               \
        if (cu.fn == NULL)                          \
            return GM_CUDA_ERROR_NOT_SUPPORTED;     \
        CU_TRY(make_current(ctx));                  \
        return cu.fn args;                          \
    }
#define CU_POOL(p) ((gm_cu_mempool)(p))

CU_OPTIONAL_OP_(mem_get_allocation_granularity, cuMemGetAllocationGranularity,
                (gm_dctx *ctx, size_t *granularity, const gm_cu_mem_alloc_prop *prop, int option),
                (granularity, prop, option))
CU_OPTIONAL_OP_(mem_address_reserve, cuMemAddressReserve,
                (gm_dctx *ctx, gm_cu_deviceptr *ptr, size_t size, size_t alignment), (ptr, size, alignment, 0, 0))
CU_OPTIONAL_OP_(mem_address_free, cuMemAddressFree, (gm_dctx *ctx, gm_cu_deviceptr ptr, size_t size), (ptr, size))
CU_OPTIONAL_OP_(mem_create, cuMemCreate,
                (gm_dctx *ctx, gm_cu_mem_handle *handle, size_t size, const gm_cu_mem_alloc_prop *prop),
                (handle, size, prop, 0))
CU_OPTIONAL_OP_(mem_release, cuMemRelease, (gm_dctx *ctx, gm_cu_mem_handle handle), (handle))
CU_OPTIONAL_OP_(mem_map, cuMemMap, (gm_dctx *ctx, gm_cu_deviceptr ptr, size_t size, gm_cu_mem_handle handle),
                (ptr, size, 0, handle, 0))
CU_OPTIONAL_OP_(mem_unmap, cuMemUnmap, (gm_dctx *ctx, gm_cu_deviceptr ptr, size_t size), (ptr, size))
CU_OPTIONAL_OP_(mem_set_access, cuMemSetAccess,
                (gm_dctx *ctx, gm_cu_deviceptr ptr, size_t size, const gm_cu_mem_access_desc *desc, size_t count),
                (ptr, size, desc, count))
CU_OPTIONAL_OP_(mem_export_to_shareable_handle, cuMemExportToShareableHandle,
                (gm_dctx *ctx, void *shareable, gm_cu_mem_handle handle, int type), (shareable, handle, type, 0))
CU_OPTIONAL_OP_(mem_import_from_shareable_handle, cuMemImportFromShareableHandle,
                (gm_dctx *ctx, gm_cu_mem_handle *handle, void *os_handle, int type), (handle, os_handle, type))
CU_OPTIONAL_OP_(mem_pool_create, cuMemPoolCreate,
                (gm_dctx *ctx, gm_dmempool **pool, const gm_cu_mem_pool_props *props),
                ((gm_cu_mempool *)(void *)pool, props))
CU_OPTIONAL_OP_(mem_pool_destroy, cuMemPoolDestroy, (gm_dctx *ctx, gm_dmempool *pool), (CU_POOL(pool)))
CU_OPTIONAL_OP_(mem_pool_set_attribute, cuMemPoolSetAttribute,
                (gm_dctx *ctx, gm_dmempool *pool, int attr, uint64_t *value), (CU_POOL(pool), attr, value))
CU_OPTIONAL_OP_(mem_pool_get_attribute, cuMemPoolGetAttribute,
                (gm_dctx *ctx, gm_dmempool *pool, int attr, uint64_t *value), (CU_POOL(pool), attr, value))
CU_OPTIONAL_OP_(mem_pool_trim_to, cuMemPoolTrimTo, (gm_dctx *ctx, gm_dmempool *pool, size_t keep),
                (CU_POOL(pool), keep))
CU_OPTIONAL_OP_(mem_alloc_from_pool_async, cuMemAllocFromPoolAsync,
                (gm_dctx *ctx, gm_cu_deviceptr *ptr, size_t bytes, gm_dmempool *pool, gm_dstream *stream),
                (ptr, bytes, CU_POOL(pool), CU_STREAM(stream)))
CU_OPTIONAL_OP_(mem_pool_set_access, cuMemPoolSetAccess,
                (gm_dctx *ctx, gm_dmempool *pool, const gm_cu_mem_access_desc *desc, size_t count),
                (CU_POOL(pool), desc, count))
CU_OPTIONAL_OP_(mem_pool_export_to_shareable_handle, cuMemPoolExportToShareableHandle,
                (gm_dctx *ctx, void *shareable, gm_dmempool *pool, int type), (shareable, CU_POOL(pool), type, 0))
CU_OPTIONAL_OP_(mem_pool_import_from_shareable_handle, cuMemPoolImportFromShareableHandle,
                (gm_dctx *ctx, gm_dmempool **pool, void *os_handle, int type),
                ((gm_cu_mempool *)(void *)pool, os_handle, type, 0))
CU_OPTIONAL_OP_(mem_pool_export_pointer, cuMemPoolExportPointer, (gm_dctx *ctx, gm_cu_mem_pool_ptr_export_data *d,
                                                                  gm_cu_deviceptr ptr), (d, ptr))
CU_OPTIONAL_OP_(mem_pool_import_pointer, cuMemPoolImportPointer,
                (gm_dctx *ctx, gm_cu_deviceptr *ptr, gm_dmempool *pool, gm_cu_mem_pool_ptr_export_data *data),
                (ptr, CU_POOL(pool), data))

static const gm_driver cuda_driver = {
    .name = "cuda",
    .driver_get_version = cuda_driver_get_version,
    .device_get_count = cuda_device_get_count,
    .device_get_name = cuda_device_get_name,
    .device_get_attribute = cuda_device_get_attribute,
    .device_total_mem = cuda_device_total_mem,
    .primary_ctx_retain = cuda_primary_ctx_retain,
    .primary_ctx_release = cuda_primary_ctx_release,
    .ctx_synchronize = cuda_ctx_synchronize,
    .mem_get_info = cuda_mem_get_info,
    .mem_alloc = cuda_mem_alloc,
    .mem_free = cuda_mem_free,
    .mem_alloc_async = cuda_mem_alloc_async,
    .mem_free_async = cuda_mem_free_async,
    .mem_alloc_managed = cuda_mem_alloc_managed,
    .mem_host_alloc = cuda_mem_host_alloc,
    .mem_free_host = cuda_mem_free_host,
    .mem_host_register = cuda_mem_host_register,
    .mem_host_unregister = cuda_mem_host_unregister,
    .mem_host_get_device_pointer = cuda_mem_host_get_device_pointer,
    .memcpy = cuda_memcpy,
    .memcpy_2d = cuda_memcpy_2d,
    .memcpy_3d = cuda_memcpy_3d,
    .memset = cuda_memset,
    .stream_create = cuda_stream_create,
    .stream_destroy = cuda_stream_destroy,
    .stream_synchronize = cuda_stream_synchronize,
    .stream_query = cuda_stream_query,
    .stream_wait_event = cuda_stream_wait_event,
    .launch_host_func = cuda_launch_host_func,
    .event_create = cuda_event_create,
    .event_destroy = cuda_event_destroy,
    .event_record = cuda_event_record,
    .event_query = cuda_event_query,
    .event_synchronize = cuda_event_synchronize,
    .event_elapsed_time = cuda_event_elapsed_time,
    .module_load_data = cuda_module_load_data,
    .module_unload = cuda_module_unload,
    .module_get_function = cuda_module_get_function,
    .module_get_global = cuda_module_get_global,
    .func_get_attribute = cuda_func_get_attribute,
    .func_set_attribute = cuda_func_set_attribute,
    .occupancy_max_active_blocks = cuda_occupancy_max_active_blocks,
    .launch_kernel = cuda_launch_kernel,
    .pointer_get_attributes = cuda_pointer_get_attributes,
    .mem_get_address_range = cuda_mem_get_address_range,
    .ipc_get_mem_handle = cuda_ipc_get_mem_handle,
    .ipc_open_mem_handle = cuda_ipc_open_mem_handle,
    .ipc_close_mem_handle = cuda_ipc_close_mem_handle,
    .device_can_access_peer = cuda_device_can_access_peer,
    .ctx_enable_peer_access = cuda_ctx_enable_peer_access,
    .memcpy_peer = cuda_memcpy_peer,
#define CU_TABLE_(op) .op = cuda_##op,
    CU_TABLE_(mem_get_allocation_granularity) CU_TABLE_(mem_address_reserve) CU_TABLE_(mem_address_free)
    CU_TABLE_(mem_create) CU_TABLE_(mem_release) CU_TABLE_(mem_map) CU_TABLE_(mem_unmap) CU_TABLE_(mem_set_access)
    CU_TABLE_(mem_export_to_shareable_handle) CU_TABLE_(mem_import_from_shareable_handle)
    CU_TABLE_(mem_pool_create) CU_TABLE_(mem_pool_destroy) CU_TABLE_(mem_pool_set_attribute)
    CU_TABLE_(mem_pool_get_attribute) CU_TABLE_(mem_pool_trim_to) CU_TABLE_(mem_alloc_from_pool_async)
    CU_TABLE_(mem_pool_set_access) CU_TABLE_(mem_pool_export_to_shareable_handle) CU_TABLE_(mem_pool_export_pointer)
    CU_TABLE_(mem_pool_import_from_shareable_handle) CU_TABLE_(mem_pool_import_pointer)
#undef CU_TABLE_
};

/* ---- loading ------------------------------------------------------------------- */

#define GM_API_MAJOR (GM_CUDA_API_VERSION / 1000)
#define GM_API_MINOR (GM_CUDA_API_VERSION % 1000 / 10)

/* symbol's GM_CUDA_API_VERSION variant into *pfn; NULL when the driver has
 * none (optional symbols), else an error for required ones. */
static gpumem_status get_proc(const char *path, const char *symbol, void **pfn, int required)
{
    int status = GM_CU_GET_PROC_ADDRESS_SUCCESS;
    gm_cu_result rc;
    *pfn = NULL;
    /* LEGACY_STREAM: a NULL stream must mean the legacy default stream
     * (driver.h), never the per-thread one. */
    if (cu.get_proc_v2 != NULL)
        rc = cu.get_proc_v2(symbol, pfn, GM_CUDA_API_VERSION, GM_CU_GET_PROC_ADDRESS_LEGACY_STREAM,
                            &status);
    else
        rc = cu.get_proc_v1(symbol, pfn, GM_CUDA_API_VERSION, GM_CU_GET_PROC_ADDRESS_LEGACY_STREAM);
    if (rc != GM_CUDA_SUCCESS) {
        *pfn = NULL;
        if (!required)
            return GPUMEM_OK;
        return gm_error_driver(GPUMEM_ERROR_DRIVER_NOT_FOUND, rc,
                        "CUDA driver '%s': cuGetProcAddress(\"%s\") failed: %s (%d): %s%s", path, symbol,
                        cu_error_name(rc), rc, cu_error_description(rc),
                        rc == GM_CUDA_ERROR_STUB_LIBRARY
                            ? " (this is the toolkit's stub library, not the installed driver)"
                            : "");
    }
    if (*pfn == NULL && required)
        return gm_error(GPUMEM_ERROR_DRIVER_NOT_FOUND,
                        "CUDA driver '%s' too old: needs CUDA %d.%d or later (%s: %s)", path,
                        GM_API_MAJOR, GM_API_MINOR, symbol,
                        status == GM_CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                            ? "the driver has it only for newer CUDA versions"
                            : "not found");
    return GPUMEM_OK;
}

/* Finds cuGetProcAddress in the library; without it the driver predates
 * CUDA 11.3. */
static gpumem_status find_get_proc_address(void *lib, const char *path)
{
    void *p = dlsym(lib, "cuGetProcAddress_v2");
    if (p != NULL) {
        GM_SET_PFN_(cu.get_proc_v2, p);
        return GPUMEM_OK;
    }
    p = dlsym(lib, "cuGetProcAddress");
    if (p != NULL) {
        /* An 11.3 to 11.8 driver: it hands out the same ABI for every entry
         * point we use at our version, so it works. */
        gm_debug("cuda: %s has no cuGetProcAddress_v2; using the CUDA 11.3 cuGetProcAddress", path);
        GM_SET_PFN_(cu.get_proc_v1, p);
        return GPUMEM_OK;
    }
    int version = 0;
    gm_pfn_cuDriverGetVersion get_version = NULL;
    p = dlsym(lib, "cuDriverGetVersion");
    if (p != NULL) {
        GM_SET_PFN_(get_version, p);
        if (get_version(&version) != GM_CUDA_SUCCESS)
            version = 0;
    }
    if (version > 0)
        return gm_error(GPUMEM_ERROR_DRIVER_NOT_FOUND,
                        "CUDA driver '%s' too old: it is CUDA %d.%d and has no cuGetProcAddress; "
                        "needs CUDA %d.%d or later", path, version / 1000, version % 1000 / 10,
                        GM_API_MAJOR, GM_API_MINOR);
    return gm_error(GPUMEM_ERROR_DRIVER_NOT_FOUND,
                    "CUDA driver '%s' too old or not a CUDA driver: no cuGetProcAddress; "
                    "needs CUDA %d.%d or later", path, GM_API_MAJOR, GM_API_MINOR);
}

static gpumem_status resolve_all(const char *path)
{
    gpumem_status st;
    void *p;
    /* The optional names first, so that later failures are named by the driver. */
#define GM_CU_RESOLVE_(name, params, required)                             \
    if ((st = get_proc(path, #name, &p, required)) != GPUMEM_OK)           \
        return st;                                                         \
    GM_SET_PFN_(cu.name, p);
#define GM_CU_RESOLVE_OPTIONAL_(name, params) GM_CU_RESOLVE_(name, params, 0)
#define GM_CU_RESOLVE_REQUIRED_(name, params) GM_CU_RESOLVE_(name, params, 1)
    GM_CU_OPTIONAL_ENTRY_POINTS(GM_CU_RESOLVE_OPTIONAL_)
    GM_CU_ENTRY_POINTS(GM_CU_RESOLVE_REQUIRED_)
#undef GM_CU_RESOLVE_REQUIRED_
#undef GM_CU_RESOLVE_OPTIONAL_
#undef GM_CU_RESOLVE_
    return GPUMEM_OK;
}

static gpumem_status init_status(gm_cu_result rc)
{
    switch (rc) {
    case GM_CUDA_ERROR_NO_DEVICE:
        return GPUMEM_ERROR_NO_DEVICE;
    case GM_CUDA_ERROR_STUB_LIBRARY:
    case GM_CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
    case GM_CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
        /* The library loaded is not a driver that can run here: a stub, or a
         * forward-compatibility libcuda the kernel module or GPU rejects. */
        return GPUMEM_ERROR_DRIVER_NOT_FOUND;
    default:
        return GPUMEM_ERROR_DRIVER;
    }
}

gpumem_status gm_cuda_load(const gm_driver **table)
{
    GM_CHECK_NULL(table);
    const char *path = gm_param_text(GM_P_CUDA_LIBRARY);
    if (path == NULL)
        path = GM_CUDA_DEFAULT_LIBRARY;

    dlerror();
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        const char *why = dlerror();
        return gm_error(GPUMEM_ERROR_DRIVER_NOT_FOUND,
                        "cannot load the CUDA driver '%s': %s (is the NVIDIA driver installed? "
                        "GPUMEM_CUDA_LIBRARY may name its path; GPUMEM_BACKEND=sim needs no driver)",
                        path, why != NULL ? why : "unknown dlopen error");
    }

    gpumem_status st = find_get_proc_address(lib, path);
    if (st == GPUMEM_OK)
        st = resolve_all(path);
    if (st != GPUMEM_OK) {
        /* Before cuInit the driver has started nothing, so unloading it is safe. */
        memset(&cu, 0, sizeof cu);
        dlclose(lib);
        return st;
    }

    gm_cu_result rc = cu.cuInit(0);
    if (rc != GM_CUDA_SUCCESS) {
        st = gm_error_driver(init_status(rc), rc, "CUDA driver '%s': cuInit failed: %s (%d): %s", path,
                      cu_error_name(rc), rc, cu_error_description(rc));
        /* cuInit may have started threads or registered handlers that live
         * in the library: keep it mapped, and only forget the pointers. */
        memset(&cu, 0, sizeof cu);
        return st;
    }

    int version = 0;
    if (cu.cuDriverGetVersion(&version) == GM_CUDA_SUCCESS)
        gm_debug("cuda: loaded %s, driver CUDA %d.%d, entry points of CUDA %d.%d", path,
                 version / 1000, version % 1000 / 10, GM_API_MAJOR, GM_API_MINOR);
    *table = &cuda_driver;
    return GPUMEM_OK;
}
