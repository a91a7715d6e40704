/*
 * cuda_ops.c - the cuda backend's driver table (driver.h): each operation
 * makes the caller's context current when the driver wants one, calls the
 * entry points cuda.c resolved (gm_cu, cuda_impl.h) and answers the
 * driver's CUresult; the virtual-memory and stream-ordered pool operations
 * answer CUDA_ERROR_NOT_SUPPORTED when the driver lacks them.
 */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cuda_abi.h"
#include "cuda_impl.h"
#include "driver.h"

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
    CU_TRY(gm_cu.cuCtxGetCurrent(&cur));
    if (cur == CU_CTX(ctx))
        return GM_CUDA_SUCCESS;
    return gm_cu.cuCtxSetCurrent(CU_CTX(ctx));
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
    return gm_cu.cuStreamSynchronize(CU_STREAM(stream));
}

static int cuda_driver_get_version(int *version)
{
    return gm_cu.cuDriverGetVersion(version);
}

static int cuda_device_get_count(int *count)
{
    return gm_cu.cuDeviceGetCount(count);
}

static int cuda_device_get_name(int ordinal, char *name, int len)
{
    gm_cu_device dev;
    CU_TRY(gm_cu.cuDeviceGet(&dev, ordinal));
    return gm_cu.cuDeviceGetName(name, len, dev);
}

static int cuda_device_get_attribute(int ordinal, int attr, int *value)
{
    gm_cu_device dev;
    CU_TRY(gm_cu.cuDeviceGet(&dev, ordinal));
    return gm_cu.cuDeviceGetAttribute(value, attr, dev);
}

static int cuda_device_total_mem(int ordinal, size_t *bytes)
{
    gm_cu_device dev;
    CU_TRY(gm_cu.cuDeviceGet(&dev, ordinal));
    return gm_cu.cuDeviceTotalMem(bytes, dev);
}

static int cuda_primary_ctx_retain(int ordinal, gm_dctx **ctx)
{
    gm_cu_device dev;
    gm_cu_context c = NULL;
    CU_TRY(gm_cu.cuDeviceGet(&dev, ordinal));
    CU_TRY(gm_cu.cuDevicePrimaryCtxRetain(&c, dev));
    *ctx = (gm_dctx *)c;
    return GM_CUDA_SUCCESS;
}

static int cuda_primary_ctx_release(int ordinal)
{
    gm_cu_device dev;
    CU_TRY(gm_cu.cuDeviceGet(&dev, ordinal));
    return gm_cu.cuDevicePrimaryCtxRelease(dev);
}

static int cuda_ctx_synchronize(gm_dctx *ctx)
{
    CU_TRY(make_current(ctx));
    return gm_cu.cuCtxSynchronize();
}

static int cuda_mem_get_info(gm_dctx *ctx, size_t *free_bytes, size_t *total_bytes)
{
    CU_TRY(make_current(ctx));
    return gm_cu.cuMemGetInfo(free_bytes, total_bytes);
}

static int cuda_mem_alloc(gm_dctx *ctx, gm_cu_deviceptr *ptr, size_t bytes)
{
    CU_TRY(make_current(ctx));
    return gm_cu.cuMemAlloc(ptr, bytes);
}

static int cuda_mem_free(gm_dctx *ctx, gm_cu_deviceptr ptr)
{
    CU_TRY(make_current(ctx));
    return gm_cu.cuMemFree(ptr);
}

static int cuda_mem_alloc_async(gm_dctx *ctx, gm_cu_deviceptr *ptr, size_t bytes, gm_dstream *stream)
{
    CU_TRY(make_current(ctx));
    return gm_cu.cuMemAllocAsync(ptr, bytes, CU_STREAM(stream));
}

static int cuda_mem_free_async(gm_dctx *ctx, gm_cu_deviceptr ptr, gm_dstream *stream)
{
    CU_TRY(make_current(ctx));
    return gm_cu.cuMemFreeAsync(ptr, CU_STREAM(stream));
}

static int cuda_mem_alloc_managed(gm_dctx *ctx, gm_cu_deviceptr *ptr, size_t bytes, unsigned flags)
{
    CU_TRY(make_current(ctx));
    return gm_cu.cuMemAllocManaged(ptr, bytes, flags);
}

static int cuda_mem_host_alloc(gm_dctx *ctx, void **ptr, size_t bytes, unsigned flags)
{
    CU_TRY(make_current(ctx));
    return gm_cu.cuMemHostAlloc(ptr, bytes, flags);
}

static int cuda_mem_free_host(gm_dctx *ctx, void *ptr)
{
    CU_TRY(make_current(ctx));
    return gm_cu.cuMemFreeHost(ptr);
}

static int cuda_mem_host_register(gm_dctx *ctx, void *ptr, size_t bytes, unsigned flags)
{
    CU_TRY(make_current(ctx));
    return gm_cu.cuMemHostRegister(ptr, bytes, flags);
}

static int cuda_mem_host_unregister(gm_dctx *ctx, void *ptr)
{
    CU_TRY(make_current(ctx));
    return gm_cu.cuMemHostUnregister(ptr);
}

static int cuda_mem_host_get_device_pointer(gm_dctx *ctx, gm_cu_deviceptr *dptr, void *ptr)
{
    CU_TRY(make_current(ctx));
    return gm_cu.cuMemHostGetDevicePointer(dptr, ptr, 0);
}

static int cuda_memcpy(gm_dctx *ctx, gm_cu_deviceptr dst, gm_cu_deviceptr src, size_t bytes,
                       gm_dstream *stream, int async)
{
    CU_TRY(make_current(ctx));
    if (async != 1 && stream == NULL) /* synchronous; GM_DRV_SYNC_DONE needs no wait after */
        return async == GM_DRV_SYNC_DONE ? gm_cu.cuMemcpy(dst, src, bytes)
                                         : finish(gm_cu.cuMemcpy(dst, src, bytes), NULL, 0);
    return finish(gm_cu.cuMemcpyAsync(dst, src, bytes, CU_STREAM(stream)), stream, async == 1);
}

static int cuda_memcpy_2d(gm_dctx *ctx, const gm_cu_memcpy2d *copy, gm_dstream *stream, int async)
{
    CU_TRY(make_current(ctx));
    /* cuMemcpy2D limits pitches to CU_DEVICE_ATTRIBUTE_MAX_PITCH; the
     * unaligned variant has no limit, and the planner emits any pitch. */
    if (!async && stream == NULL)
        return finish(gm_cu.cuMemcpy2DUnaligned(copy), NULL, 0);
    return finish(gm_cu.cuMemcpy2DAsync(copy, CU_STREAM(stream)), stream, async);
}

static int cuda_memcpy_3d(gm_dctx *ctx, const gm_cu_memcpy3d *copy, gm_dstream *stream, int async)
{
    CU_TRY(make_current(ctx));
    if (!async && stream == NULL)
        return finish(gm_cu.cuMemcpy3D(copy), NULL, 0);
    return finish(gm_cu.cuMemcpy3DAsync(copy, CU_STREAM(stream)), stream, async);
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
        rc = queued ? gm_cu.cuMemsetD8Async(dst, (unsigned char)value, count, s)
                    : gm_cu.cuMemsetD8(dst, (unsigned char)value, count);
        break;
    case 2:
        rc = queued ? gm_cu.cuMemsetD16Async(dst, (unsigned short)value, count, s)
                    : gm_cu.cuMemsetD16(dst, (unsigned short)value, count);
        break;
    default:
        rc = queued ? gm_cu.cuMemsetD32Async(dst, value, count, s) : gm_cu.cuMemsetD32(dst, value, count);
        break;
    }
    return finish(rc, stream, async);
}

static int cuda_stream_create(gm_dctx *ctx, gm_dstream **stream, unsigned flags)
{
    gm_cu_stream s = NULL;
    CU_TRY(make_current(ctx));
    CU_TRY(gm_cu.cuStreamCreate(&s, flags));
    *stream = (gm_dstream *)s;
    return GM_CUDA_SUCCESS;
}

static int cuda_stream_destroy(gm_dctx *ctx, gm_dstream *stream)
{
    CU_TRY(make_current(ctx));
    return gm_cu.cuStreamDestroy(CU_STREAM(stream));
}

static int cuda_stream_synchronize(gm_dctx *ctx, gm_dstream *stream)
{
    CU_TRY(make_current(ctx));
    return gm_cu.cuStreamSynchronize(CU_STREAM(stream));
}

static int cuda_stream_query(gm_dctx *ctx, gm_dstream *stream)
{
    CU_TRY(make_current(ctx));
    return gm_cu.cuStreamQuery(CU_STREAM(stream));
}

static int cuda_stream_wait_event(gm_dctx *ctx, gm_dstream *stream, gm_devent *event)
{
    CU_TRY(make_current(ctx));
    return gm_cu.cuStreamWaitEvent(CU_STREAM(stream), CU_EVENT(event), 0);
}

static int cuda_launch_host_func(gm_dctx *ctx, gm_dstream *stream, gm_cu_host_fn fn, void *data)
{
    CU_TRY(make_current(ctx));
    return gm_cu.cuLaunchHostFunc(CU_STREAM(stream), fn, data);
}

static int cuda_event_create(gm_dctx *ctx, gm_devent **event, unsigned flags)
{
    gm_cu_event e = NULL;
    CU_TRY(make_current(ctx));
    CU_TRY(gm_cu.cuEventCreate(&e, flags));
    *event = (gm_devent *)e;
    return GM_CUDA_SUCCESS;
}

static int cuda_event_destroy(gm_dctx *ctx, gm_devent *event)
{
    CU_TRY(make_current(ctx));
    return gm_cu.cuEventDestroy(CU_EVENT(event));
}

static int cuda_event_record(gm_dctx *ctx, gm_devent *event, gm_dstream *stream)
{
    CU_TRY(make_current(ctx));
    return gm_cu.cuEventRecord(CU_EVENT(event), CU_STREAM(stream));
}

static int cuda_event_query(gm_dctx *ctx, gm_devent *event)
{
    CU_TRY(make_current(ctx));
    return gm_cu.cuEventQuery(CU_EVENT(event));
}

static int cuda_event_synchronize(gm_dctx *ctx, gm_devent *event)
{
    CU_TRY(make_current(ctx));
    return gm_cu.cuEventSynchronize(CU_EVENT(event));
}

static int cuda_event_elapsed_time(gm_dctx *ctx, float *ms, gm_devent *start, gm_devent *end)
{
    CU_TRY(make_current(ctx));
    return gm_cu.cuEventElapsedTime(ms, CU_EVENT(start), CU_EVENT(end));
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
    gm_cu_result rc = gm_cu.cuModuleLoadDataEx(&m, image, n, options, values);
    if (n != 0)
        error_log[log_bytes - 1] = '\0';
    if (rc == GM_CUDA_SUCCESS)
        *module = (gm_dmodule *)m;
    return rc;
}

static int cuda_module_unload(gm_dctx *ctx, gm_dmodule *module)
{
    CU_TRY(make_current(ctx));
    return gm_cu.cuModuleUnload(CU_MODULE(module));
}

static int cuda_module_get_function(gm_dctx *ctx, gm_dfunc **func, gm_dmodule *module, const char *name)
{
    gm_cu_function f = NULL;
    CU_TRY(make_current(ctx));
    CU_TRY(gm_cu.cuModuleGetFunction(&f, CU_MODULE(module), name));
    *func = (gm_dfunc *)f;
    return GM_CUDA_SUCCESS;
}

static int cuda_module_get_global(gm_dctx *ctx, gm_cu_deviceptr *dptr, size_t *bytes, gm_dmodule *module,
                                  const char *name)
{
    CU_TRY(make_current(ctx));
    return gm_cu.cuModuleGetGlobal(dptr, bytes, CU_MODULE(module), name);
}

static int cuda_func_get_attribute(gm_dctx *ctx, int *value, int attr, gm_dfunc *func)
{
    CU_TRY(make_current(ctx));
    return gm_cu.cuFuncGetAttribute(value, attr, CU_FUNC(func));
}

static int cuda_func_set_attribute(gm_dctx *ctx, gm_dfunc *func, int attr, int value)
{
    CU_TRY(make_current(ctx));
    return gm_cu.cuFuncSetAttribute(CU_FUNC(func), attr, value);
}

static int cuda_occupancy_max_active_blocks(gm_dctx *ctx, int *blocks, gm_dfunc *func, int block_size,
                                            size_t dynamic_smem)
{
    CU_TRY(make_current(ctx));
    return gm_cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(blocks, CU_FUNC(func), block_size, dynamic_smem);
}

static int cuda_launch_kernel(gm_dctx *ctx, gm_dfunc *func, const unsigned grid[3],
                              const unsigned block[3], unsigned shared_bytes, gm_dstream *stream,
                              void **params)
{
    CU_TRY(make_current(ctx));
    return gm_cu.cuLaunchKernel(CU_FUNC(func), grid[0], grid[1], grid[2], block[0], block[1],
                             block[2], shared_bytes, CU_STREAM(stream), params, NULL);
}

static int cuda_pointer_get_attributes(unsigned count, const int *attrs, void **data, gm_cu_deviceptr ptr)
{
    int copy[16];
    if (count > sizeof copy / sizeof copy[0])
        return GM_CUDA_ERROR_INVALID_VALUE;
    /* the driver's prototype takes a non-const array it does not write */
    memcpy(copy, attrs, count * sizeof *attrs);
    return gm_cu.cuPointerGetAttributes(count, copy, data, ptr);
}

static int cuda_mem_get_address_range(gm_dctx *ctx, gm_cu_deviceptr *base, size_t *size, gm_cu_deviceptr ptr)
{
    CU_TRY(make_current(ctx));
    return gm_cu.cuMemGetAddressRange(base, size, ptr);
}

static int cuda_ipc_get_mem_handle(gm_dctx *ctx, gm_cu_ipc_mem_handle *handle, gm_cu_deviceptr ptr)
{
    CU_TRY(make_current(ctx));
    return gm_cu.cuIpcGetMemHandle(handle, ptr);
}

static int cuda_ipc_open_mem_handle(gm_dctx *ctx, gm_cu_deviceptr *ptr, const gm_cu_ipc_mem_handle *handle,
                                    unsigned flags)
{
    CU_TRY(make_current(ctx));
    return gm_cu.cuIpcOpenMemHandle(ptr, *handle, flags);
}

static int cuda_ipc_close_mem_handle(gm_dctx *ctx, gm_cu_deviceptr ptr)
{
    CU_TRY(make_current(ctx));
    return gm_cu.cuIpcCloseMemHandle(ptr);
}

static int cuda_device_can_access_peer(int ordinal, int peer_ordinal, int *can)
{
    gm_cu_device dev, peer;
    CU_TRY(gm_cu.cuDeviceGet(&dev, ordinal));
    CU_TRY(gm_cu.cuDeviceGet(&peer, peer_ordinal));
    return gm_cu.cuDeviceCanAccessPeer(can, dev, peer);
}

static int cuda_ctx_enable_peer_access(gm_dctx *ctx, gm_dctx *peer)
{
    CU_TRY(make_current(ctx));
    return gm_cu.cuCtxEnablePeerAccess(CU_CTX(peer), 0);
}

/* cuMemcpyPeer returns before the copy ran (it is asynchronous with respect
 * to the host, serialized with the work of the current, source and
 * destination contexts): wait for the current one's legacy stream. */
static int cuda_memcpy_peer(gm_dctx *ctx, gm_cu_deviceptr dst, gm_dctx *dst_ctx, gm_cu_deviceptr src,
                            gm_dctx *src_ctx, size_t bytes, gm_dstream *stream, int async)
{
    CU_TRY(make_current(ctx));
    if (!async && stream == NULL)
        return finish(gm_cu.cuMemcpyPeer(dst, CU_CTX(dst_ctx), src, CU_CTX(src_ctx), bytes), NULL, 0);
    return finish(gm_cu.cuMemcpyPeerAsync(dst, CU_CTX(dst_ctx), src, CU_CTX(src_ctx), bytes, CU_STREAM(stream)),
                  stream, async);
}

/* ---- virtual memory and stream-ordered pools (optional entry points) ---- */

/* static int cuda_<op>(params): makes ctx current and calls fn(args), or
 * answers CUDA_ERROR_NOT_SUPPORTED when the driver lacks fn. */
#define CU_OPTIONAL_OP_(op, fn, params, args)       \
    static int cuda_##op params                     \
    {                                               \
        if (gm_cu.fn == NULL)                          \
            return GM_CUDA_ERROR_NOT_SUPPORTED;     \
        CU_TRY(make_current(ctx));                  \
        return gm_cu.fn args;                          \
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

const gm_driver gm_cuda_driver = {
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
