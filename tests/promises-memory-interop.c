/* The promises of memo.h, memory.h, ipc.h, interop.h and debug.h (part
 * of tests/test-promises-memory). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

#include <gpumem.h>

#include "promises.h"
#include "tap.h"
#include "child.h"
#include "promises-memory.h"

/* ---- memo.h -------------------------------------------------------------------------- */

int created, destroyed;

gpumem_status memo_create(gpumem_context *c, const void *key, size_t key_size, void *user, void **value)
{
    (void)c;
    (void)key;
    (void)key_size;
    created++;
    *value = user;
    return GPUMEM_OK;
}

void memo_destroy(void *value, void *user)
{
    (void)value;
    (void)user;
    destroyed++;
}

static gpumem_status memo_fail(gpumem_context *c, const void *key, size_t key_size, void *user, void **value)
{
    (void)c;
    (void)key;
    (void)key_size;
    (void)user;
    *value = (void *)0x1;
    return gpumem_device_count(NULL);
}

static gpumem_status memo_self(gpumem_context *c, const void *key, size_t key_size, void *user, void **value)
{
    void *v = NULL;
    gpumem_status st = gpumem_memoize(c, key, key_size, memo_self, NULL, user, &v);
    *(gpumem_status *)user = st;
    *value = v;
    return st == GPUMEM_OK ? GPUMEM_OK : st;
}

void test_memo(void)
{
    void *v = (void *)&v;
    int key = 42;
    BAD(gpumem_memoize(ctx, &key, sizeof key, NULL, NULL, NULL, &v), GPUMEM_ERROR_NULL_ARGUMENT, "create");
    BAD(gpumem_memoize(ctx, &key, sizeof key, memo_create, NULL, NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "value");
    BAD(gpumem_memoize(ctx, NULL, 4, memo_create, NULL, NULL, &v), GPUMEM_ERROR_NULL_ARGUMENT, "key");
    ok(v == (void *)&v, "failed gpumem_memoize leaves *value alone");
    ok(gpumem_memoize(ctx, &key, sizeof key, memo_fail, NULL, NULL, &v) == GPUMEM_ERROR_NULL_ARGUMENT &&
           gpumem_last_status() == GPUMEM_ERROR_NULL_ARGUMENT,
       "gpumem_memoize returns the create callback's failure");
    like(gpumem_last_error(), "gpumem_device_count: ", "the create callback's own failure message is kept");
    ok(v == (void *)&v, "a failing create leaves *value alone");
    gpumem_context *c = NULL;
    GOOD(gpumem_context_create(0, &c));
    created = destroyed = 0;
    int u1, u2;
    GOOD(gpumem_memoize(c, NULL, 0, memo_create, memo_destroy, &u1, &v));
    ok(v == &u1, "memoize gives the created value");
    GOOD(gpumem_memoize(c, NULL, 0, memo_create, memo_destroy, &u2, &v));
    ok(v == &u1 && created == 1, "a hit does not create again");
    GOOD(gpumem_memoize(c, &key, sizeof key, memo_create, memo_destroy, &u2, &v));
    ok(v == &u2 && created == 2, "another key is another entry");
    GOOD(gpumem_context_release(c));
    is_int(destroyed, 2, "the context's last release drops its entries");
    gpumem_status inner = GPUMEM_OK;
    BAD(gpumem_memoize(ctx, &key, sizeof key, memo_self, NULL, &inner, &v), GPUMEM_ERROR_INVALID_STATE, NULL);
    is_int(inner, GPUMEM_ERROR_INVALID_STATE, "asking for its own key from create is INVALID_STATE");
    created = destroyed = 0;
    GOOD(gpumem_memoize(ctx, "k", 1, memo_create, memo_destroy, &u1, &v));
    GOOD(gpumem_clear_context_caches());
    ok(destroyed == 1, "gpumem_clear_context_caches runs destroy once");
    GOOD(gpumem_memoize(ctx, "k", 1, memo_create, memo_destroy, &u1, &v));
    is_int(created, 2, "after a clear the value is created again");
}

/* ---- memory.h ------------------------------------------------------------------------ */

void test_memory(void)
{
    gpumem_context *c = NULL;
    GOOD(gpumem_context_create(1, &c));
    struct gpumem_memory_report r, keep;
    memset(&r, 0x5A, sizeof r);
    r.size = sizeof r;
    keep = r;
    BAD(gpumem_memory_report(c, 0, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "report");
    BAD(gpumem_memory_report(c, 4, &r), GPUMEM_ERROR_INVALID_VALUE, "flags");
    ok(memcmp(&r, &keep, sizeof r) == 0, "a refused report is unchanged");
    r.size = 4;
    keep.size = 4;
    BAD(gpumem_memory_report(c, 0, &r), GPUMEM_ERROR_INVALID_VALUE, "size");
    ok(memcmp(&r, &keep, sizeof r) == 0, "a report whose size is too small is unchanged");
    BAD(gpumem_memory_reset_peaks(c, 4), GPUMEM_ERROR_INVALID_VALUE, "flags");
    BAD(gpumem_memory_reset_peaks(c, GPUMEM_MEMORY_DEVICE_INFO), GPUMEM_ERROR_INVALID_VALUE, "flags");

    const int64_t n = 1 << 20;
    gpumem_array *a = NULL;
    GOOD(gpumem_device_array(c, 1, &n, NULL, f32, 'C', NULL, &a));
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    GOOD(gpumem_memory_report(c, GPUMEM_MEMORY_DEVICE_INFO, &r));
    uint64_t fr = 0, tot = 0;
    gpumem_memory_info(c, &fr, &tot);
    ok(r.device.bytes == 4u << 20 && r.device.count == 1 && r.ordinal == 1 && r.contexts == 1 &&
           r.flags == GPUMEM_MEMORY_DEVICE_INFO,
       "the report after one allocation (%llu bytes, %llu)", (unsigned long long)r.device.bytes,
       (unsigned long long)r.device.count);
    ok(r.device_total_bytes == tot && r.device_total_bytes > 0, "DEVICE_INFO gives the total memory");
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    GOOD(gpumem_memory_report(c, 0, &r));
    ok(r.device_total_bytes == 0 && r.device_free_bytes == 0 && r.others_bytes == 0,
       "without DEVICE_INFO the device's memory is 0");
    gpumem_array_release(a);

    size_t count = 77;
    struct gpumem_memory_pool_report pr[2];
    memset(pr, 0, sizeof pr);
    BAD(gpumem_memory_pools(c, 0, NULL, 0, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "count");
    BAD(gpumem_memory_pools(c, 0, NULL, 2, &count), GPUMEM_ERROR_NULL_ARGUMENT, "pools");
    BAD(gpumem_memory_pools(c, 4, pr, 2, &count), GPUMEM_ERROR_INVALID_VALUE, "flags");
    BAD(gpumem_memory_pools(c, GPUMEM_MEMORY_DEVICE_INFO, NULL, 0, &count), GPUMEM_ERROR_INVALID_VALUE, "flags");
    pr[0].size = sizeof pr[0];
    pr[1].size = sizeof pr[1] - 8;
    BAD(gpumem_memory_pools(c, 0, pr, 2, &count), GPUMEM_ERROR_INVALID_VALUE, "size");
    pr[0].size = 4;
    pr[1].size = 4;
    BAD(gpumem_memory_pools(c, 0, pr, 2, &count), GPUMEM_ERROR_INVALID_VALUE, "size");
    is_int((int)count, 77, "a refused gpumem_memory_pools writes no count");
    GOOD(gpumem_memory_pools(c, 0, NULL, 0, &count));
    is_int((int)count, 0, "a new context has no pools");
    GOOD(gpumem_context_set_oom_callback(c, NULL, NULL));
    gpumem_context_release(c);
}

/* ---- ipc.h --------------------------------------------------------------------------- */

void test_ipc(void)
{
    int r = -1;
    gpumem_pointer_info info;
    memset(&info, 0x5A, sizeof info);
    info.size = sizeof info;
    BAD(gpumem_is_cuda_array(0, NULL, &info), GPUMEM_ERROR_NULL_ARGUMENT, "result");
    info.size = 4;
    BAD(gpumem_is_cuda_array(0, &r, &info), GPUMEM_ERROR_INVALID_VALUE, "size");
    is_int(r, -1, "a refused query writes no result");
    char local[64];
    info.size = sizeof info;
    GOOD(gpumem_is_cuda_array((uint64_t)(uintptr_t)local, &r, &info));
    ok(r == 0 && info.kind == GPUMEM_POINTER_UNKNOWN && info.device == -1 && info.driver_context == 0 &&
           info.device_pointer == 0 && info.host_pointer == NULL && info.range_start == 0 && info.range_size == 0 &&
           info.ipc_capable == 0,
       "pageable memory: unknown, null values");
    GOOD(gpumem_is_cuda_array(0, &r, NULL));
    is_int(r, 0, "address 0 is no device memory");

    const int64_t n = 1000, zero = 0;
    gpumem_array *d = NULL, *h = NULL, *e = NULL, *m = NULL, *out = (gpumem_array *)&r;
    GOOD(gpumem_device_array(ctx, 1, &n, NULL, i32, 'C', NULL, &d));
    GOOD(gpumem_host_array(1, &n, i32, 'C', &h));
    GOOD(gpumem_device_array(ctx, 1, &zero, NULL, i32, 'C', NULL, &e));
    GOOD(gpumem_managed_array(ctx, 1, &n, NULL, i32, 'C', GPUMEM_MANAGED_ATTACH_GLOBAL, &m));
    uint64_t dp = 0;
    gpumem_array_device_pointer(d, &dp);
    GOOD(gpumem_is_cuda_array(dp + 8, &r, &info));
    ok(r == 1 && info.kind == GPUMEM_POINTER_DEVICE && info.device == 0 && info.device_pointer == dp + 8 &&
           info.range_start == dp && info.range_size >= 4000 && info.ipc_capable == 1,
       "device memory: kind, device, range, ipc");
    gpumem_ipc_handle hd;
    memset(&hd, 0, sizeof hd);
    BAD(gpumem_ipc_get_handle(NULL, &hd), GPUMEM_ERROR_NULL_ARGUMENT, "array");
    BAD(gpumem_ipc_get_handle(d, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "handle");
    BAD(gpumem_ipc_get_handle(h, &hd), GPUMEM_ERROR_INVALID_VALUE, "array");
    BAD(gpumem_ipc_get_handle(e, &hd), GPUMEM_ERROR_INVALID_VALUE, "array");
    BAD(gpumem_ipc_get_handle(m, &hd), GPUMEM_ERROR_INVALID_VALUE, "array");
    GOOD(gpumem_ipc_get_handle(d, &hd));
    ok(memcmp(hd.bytes, "GPUMEMIP", 8) == 0, "the handle begins with its magic");
    uint64_t calls0 = 0, calls1 = 0;
    gpumem_debug_driver_calls(NULL, &calls0);
    BAD(gpumem_ipc_open(ctx, &hd, &out), GPUMEM_ERROR_INVALID_STATE, NULL);
    gpumem_debug_driver_calls(NULL, &calls1);
    ok(calls1 == calls0, "opening a handle in its own process makes no driver call");
    BAD(gpumem_ipc_open(ctx, NULL, &out), GPUMEM_ERROR_NULL_ARGUMENT, "handle");
    BAD(gpumem_ipc_open(ctx, &hd, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "array");
    gpumem_ipc_handle bad = hd;
    bad.bytes[0] = 'X';
    BAD(gpumem_ipc_open(ctx, &bad, &out), GPUMEM_ERROR_INVALID_VALUE, "magic");
    bad = hd;
    bad.bytes[8] = 9;
    BAD(gpumem_ipc_open(ctx, &bad, &out), GPUMEM_ERROR_INVALID_VALUE, "version");
    ok(out == (gpumem_array *)&r, "a failed gpumem_ipc_open leaves *array alone");
    gpumem_array_release(d);
    gpumem_array_release(h);
    gpumem_array_release(e);
    gpumem_array_release(m);
}

/* ---- interop.h ----------------------------------------------------------------------- */

static int deleted, released;
static void count_deleter(dl_managed *self)
{
    (void)self;
    deleted++;
}
static void count_deleter_v(dl_versioned *self)
{
    (void)self;
    deleted++;
}
static void count_release(void *owner)
{
    (void)owner;
    released++;
}

void test_interop(void)
{
    const int64_t n = 64;
    gpumem_array *d = NULL, *h = NULL, *p = NULL, *out = NULL;
    gpumem_stream *s2 = NULL, *def = NULL;
    GOOD(gpumem_device_array(ctx, 1, &n, NULL, i32, 'C', NULL, &d));
    GOOD(gpumem_host_array(1, &n, i32, 'C', &h));
    GOOD(gpumem_pinned_array(ctx, 1, &n, NULL, i32, 'C', &p));
    GOOD(gpumem_stream_create(ctx2, 0, &s2));
    GOOD(gpumem_stream_default(ctx, &def));

    gpumem_cuda_array_interface desc, keep;
    memset(&desc, 0x5A, sizeof desc);
    desc.size = sizeof desc;
    desc.descr_buffer = NULL;
    desc.descr_buffer_size = 0;
    keep = desc;
    BAD(gpumem_array_interface(h, NULL, &desc), GPUMEM_ERROR_INVALID_VALUE, "array");
    BAD(gpumem_array_interface(p, NULL, &desc), GPUMEM_ERROR_INVALID_VALUE, "array");
    BAD(gpumem_array_interface(d, s2, &desc), GPUMEM_ERROR_CONTEXT_MISMATCH, "stream");
    BAD(gpumem_array_interface(NULL, NULL, &desc), GPUMEM_ERROR_NULL_ARGUMENT, "array");
    BAD(gpumem_array_interface(d, NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "desc");
    ok(memcmp(&desc, &keep, sizeof desc) == 0, "a refused gpumem_array_interface leaves desc unchanged");
    GOOD(gpumem_array_interface(d, def, &desc));
    ok(desc.version == 3 && desc.ndim == 1 && desc.shape[0] == 64 && desc.has_stream == 1 && desc.stream == 1 &&
           desc.has_mask == 0 && desc.readonly == 0 && desc.descr == NULL && strcmp(desc.typestr, "<i4") == 0,
       "the default stream gives stream 1");
    GOOD(gpumem_array_interface(d, NULL, &desc));
    ok(desc.has_stream == 0, "a NULL stream: no stream");

    gpumem_cuda_array_interface in = desc;
    released = 0;
    out = (gpumem_array *)&n;
#define CAI_BAD(field_set, flags, want, needle)                                                                  \
    do {                                                                                                         \
        in = desc;                                                                                               \
        field_set;                                                                                               \
        BAD(gpumem_as_cuda_array(ctx, &in, flags, count_release, NULL, &out), want, needle);                     \
    } while (0)
    CAI_BAD(in.version = 1, 0, GPUMEM_ERROR_INVALID_VALUE, "version");
    CAI_BAD((in.has_stream = 1, in.stream = 0), 0, GPUMEM_ERROR_INVALID_VALUE, "stream");
    CAI_BAD((in.has_stream = 1, in.stream = 5), 0, GPUMEM_ERROR_INVALID_VALUE, "stream");
    CAI_BAD((in.has_stream = 1, in.stream = -8), 0, GPUMEM_ERROR_INVALID_VALUE, "stream");
    CAI_BAD((in.version = 2, in.has_stream = 1, in.stream = 1), 0, GPUMEM_ERROR_INVALID_VALUE, "stream");
    CAI_BAD(in.readonly = 1, 0, GPUMEM_ERROR_INVALID_VALUE, "readonly");
    CAI_BAD((void)0, 4, GPUMEM_ERROR_INVALID_VALUE, "flags");
    CAI_BAD(in.ndim = -1, 0, GPUMEM_ERROR_INVALID_VALUE, "ndim");
    CAI_BAD(in.ndim = GPUMEM_MAX_NDIM + 1, 0, GPUMEM_ERROR_TOO_MANY_DIMENSIONS, "ndim");
    CAI_BAD(in.shape[0] = -1, 0, GPUMEM_ERROR_NEGATIVE_DIMENSION, "shape");
    CAI_BAD(in.has_mask = 1, 0, GPUMEM_ERROR_NOT_SUPPORTED, "mask");
    CAI_BAD(in.data = 0, 0, GPUMEM_ERROR_NULL_ARGUMENT, "data");
    CAI_BAD(strcpy(in.typestr, "<q9"), 0, GPUMEM_ERROR_INVALID_DTYPE, "typestr");
    CAI_BAD(memset(in.typestr, 'f', sizeof in.typestr), 0, GPUMEM_ERROR_INVALID_DTYPE, "typestr");
    CAI_BAD(in.size = 4, 0, GPUMEM_ERROR_INVALID_VALUE, "size");
    BAD(gpumem_as_cuda_array(ctx, NULL, 0, count_release, NULL, &out), GPUMEM_ERROR_NULL_ARGUMENT, "desc");
    BAD(gpumem_as_cuda_array(ctx, &desc, 0, count_release, NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "array");
    ok(released == 0 && out == (gpumem_array *)&n, "failed imports call no release and write no array");
    GOOD(gpumem_as_cuda_array(ctx, &desc, 0, count_release, NULL, &out));
    gpumem_array_release(out);
    is_int(released, 1, "a foreign array's last reference calls release once");

    /* DLPack export */
    void *t = (void *)&n;
    BAD(gpumem_array_to_dlpack(d, 4, &t), GPUMEM_ERROR_INVALID_VALUE, "flags");
    BAD(gpumem_array_to_dlpack(d, GPUMEM_DLPACK_READ_ONLY, &t), GPUMEM_ERROR_INVALID_VALUE, "GPUMEM_DLPACK_VERSIONED");
    BAD(gpumem_array_to_dlpack(d, 0, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "tensor");
    BAD(gpumem_array_to_dlpack(NULL, 0, &t), GPUMEM_ERROR_NULL_ARGUMENT, "array");
    ok(t == (void *)&n, "a refused export writes no tensor");
    GOOD(gpumem_array_to_dlpack(h, GPUMEM_DLPACK_VERSIONED, &t));
    dl_versioned *tv = t;
    ok(tv->version.major == 1 && tv->version.minor == 0 && tv->dl_tensor.device.device_type == 1 &&
           tv->dl_tensor.device.device_id == 0 && tv->flags == 0,
       "a host array exports kDLCPU, device 0, version 1.0");
    tv->deleter(tv);
    GOOD(gpumem_array_to_dlpack(p, 0, &t));
    dl_managed *tm = t;
    ok(tm->dl_tensor.device.device_type == 3 && tm->dl_tensor.device.device_id == 0 &&
           tm->dl_tensor.dtype.code == 0 && tm->dl_tensor.dtype.bits == 32 && tm->dl_tensor.dtype.lanes == 1,
       "a pinned array exports kDLCUDAHost, device 0");
    tm->deleter(tm);

    /* DLPack import */
    int64_t shape[1] = {64};
    int32_t hostbuf[64];
    uint64_t dptr = 0;
    gpumem_array_device_pointer(d, &dptr);
    dl_managed lt = {{hostbuf, {1, 0}, 1, {0, 32, 1}, shape, NULL, 0}, NULL, count_deleter};
    dl_versioned vt = {{1, 0}, NULL, count_deleter_v, 0, {hostbuf, {1, 0}, 1, {0, 32, 1}, shape, NULL, 0}};
    deleted = 0;
    out = (gpumem_array *)&n;
#define DL_BAD(tensor, flags, want, needle)                                                                      \
    BAD(gpumem_array_from_dlpack(ctx, tensor, flags, &out), want, needle)
    vt.version.major = 2;
    DL_BAD(&vt, GPUMEM_DLPACK_VERSIONED, GPUMEM_ERROR_NOT_SUPPORTED, "version");
    vt.version.major = 1;
    vt.flags = 1;
    DL_BAD(&vt, GPUMEM_DLPACK_VERSIONED, GPUMEM_ERROR_INVALID_VALUE, "read-only");
    vt.flags = 0;
    DL_BAD(&vt, GPUMEM_DLPACK_VERSIONED | 8, GPUMEM_ERROR_INVALID_VALUE, "flags");
    lt.dl_tensor.device.device_type = 7;
    DL_BAD(&lt, 0, GPUMEM_ERROR_NOT_SUPPORTED, "device");
    lt.dl_tensor.device.device_type = 1;
    lt.dl_tensor.dtype.code = 4;
    lt.dl_tensor.dtype.bits = 16;
    DL_BAD(&lt, 0, GPUMEM_ERROR_INVALID_DTYPE, "dtype");
    lt.dl_tensor.dtype.code = 0;
    lt.dl_tensor.dtype.bits = 32;
    lt.dl_tensor.dtype.lanes = 2;
    DL_BAD(&lt, 0, GPUMEM_ERROR_INVALID_DTYPE, "lanes");
    lt.dl_tensor.dtype.lanes = 1;
    lt.dl_tensor.ndim = -1;
    DL_BAD(&lt, 0, GPUMEM_ERROR_INVALID_VALUE, "ndim");
    lt.dl_tensor.ndim = GPUMEM_MAX_NDIM + 1;
    DL_BAD(&lt, 0, GPUMEM_ERROR_TOO_MANY_DIMENSIONS, "ndim");
    lt.dl_tensor.ndim = 1;
    lt.dl_tensor.shape = NULL;
    DL_BAD(&lt, 0, GPUMEM_ERROR_INVALID_VALUE, "shape");
    lt.dl_tensor.shape = shape;
    lt.dl_tensor.data = NULL;
    DL_BAD(&lt, 0, GPUMEM_ERROR_NULL_ARGUMENT, "data");
    lt.dl_tensor.data = (void *)(uintptr_t)dptr;
    DL_BAD(&lt, 0, GPUMEM_ERROR_INVALID_VALUE, "device");
    lt.dl_tensor.data = hostbuf;
    lt.dl_tensor.device.device_type = 3;
    DL_BAD(&lt, 0, GPUMEM_ERROR_INVALID_VALUE, "kDLCUDAHost");
    lt.dl_tensor.device.device_type = 2;
    lt.dl_tensor.device.device_id = 9;
    DL_BAD(&lt, 0, GPUMEM_ERROR_INVALID_DEVICE, "device_id");
    lt.dl_tensor.device.device_id = 1;
    lt.dl_tensor.data = (void *)(uintptr_t)dptr;
    DL_BAD(&lt, 0, GPUMEM_ERROR_CONTEXT_MISMATCH, "device");
    BAD(gpumem_array_from_dlpack(ctx, NULL, 0, &out), GPUMEM_ERROR_NULL_ARGUMENT, "tensor");
    BAD(gpumem_array_from_dlpack(ctx, &lt, 0, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "array");
    ok(deleted == 0 && out == (gpumem_array *)&n, "failed imports call no deleter and write no array");
    lt.dl_tensor.device.device_type = 1;
    lt.dl_tensor.device.device_id = 0;
    lt.dl_tensor.data = hostbuf;
    GOOD(gpumem_array_from_dlpack(ctx, &lt, 0, &out));
    gpumem_memory_kind kind = GPUMEM_MEMORY_DEVICE;
    gpumem_array_kind(out, &kind);
    is_int(kind, GPUMEM_MEMORY_HOST, "a kDLCPU import is a host array");
    gpumem_array_release(out);
    is_int(deleted, 1, "the import's deleter runs once at the last release");

    gpumem_array_release(d);
    gpumem_array_release(h);
    gpumem_array_release(p);
    gpumem_stream_destroy(s2);
}

/* ---- debug.h ------------------------------------------------------------------------- */

void test_debug(void)
{
    uint64_t count = 0, after = 0;
    BAD(gpumem_debug_driver_calls(NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "count");
    count = 5;
    BAD(gpumem_debug_driver_calls("cuNoSuchCall", &count), GPUMEM_ERROR_NOT_FOUND, "cuNoSuchCall");
    is_int((int)count, 5, "an unknown driver call name writes no count");
    GOOD(gpumem_debug_driver_calls("cuMemAlloc", &count));
    gpumem_array *a = NULL;
    const int64_t n = 1 << 16;
    GOOD(gpumem_device_array(ctx, 1, &n, NULL, i32, 'C', NULL, &a));
    GOOD(gpumem_debug_driver_calls("cuMemAlloc", &after));
    ok(after == count + 1, "an allocation counts one cuMemAlloc");
    gpumem_array_release(a);
    /* every name debug.h lists is counted; a queued form counts under its synchronous name */
    static const char *const listed[] = {
        "cuDriverGetVersion", "cuDeviceGetCount", "cuDeviceGetName", "cuDeviceGetAttribute", "cuDeviceTotalMem",
        "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease", "cuCtxSynchronize", "cuMemGetInfo", "cuMemAlloc",
        "cuMemFree", "cuMemAllocAsync", "cuMemFreeAsync", "cuMemAllocManaged", "cuMemHostAlloc", "cuMemFreeHost",
        "cuMemHostRegister", "cuMemHostUnregister", "cuMemHostGetDevicePointer", "cuMemcpy", "cuMemcpy2D",
        "cuMemcpy3D", "cuMemsetD8", "cuStreamCreate", "cuStreamDestroy", "cuStreamSynchronize", "cuStreamQuery",
        "cuStreamWaitEvent", "cuLaunchHostFunc", "cuEventCreate", "cuEventDestroy", "cuEventRecord",
        "cuEventQuery", "cuEventSynchronize", "cuEventElapsedTime", "cuModuleLoadDataEx", "cuModuleUnload",
        "cuModuleGetFunction", "cuModuleGetGlobal", "cuFuncGetAttribute", "cuFuncSetAttribute",
        "cuOccupancyMaxActiveBlocksPerMultiprocessor", "cuLaunchKernel", "cuPointerGetAttributes",
        "cuMemGetAddressRange", "cuIpcGetMemHandle", "cuIpcOpenMemHandle", "cuIpcCloseMemHandle",
        "cuDeviceCanAccessPeer", "cuCtxEnablePeerAccess", "cuMemcpyPeer"};
    int known = 1;
    for (size_t i = 0; i < sizeof listed / sizeof *listed; i++)
        known &= gpumem_debug_driver_calls(listed[i], &count) == GPUMEM_OK;
    ok(known, "every operation debug.h names is counted");
    count = 5;
    BAD(gpumem_debug_driver_calls("cuMemsetD32Async", &count), GPUMEM_ERROR_NOT_FOUND, "synchronous");
    is_int((int)count, 5, "a name that is not counted writes no count");
    uint64_t sets0 = 0, sets1 = 0;
    const int32_t seven = 7;
    gpumem_stream *fs = NULL;
    GOOD(gpumem_stream_create(ctx, 0, &fs));
    GOOD(gpumem_device_array(ctx, 1, &n, NULL, i32, 'C', NULL, &a));
    GOOD(gpumem_debug_driver_calls("cuMemsetD8", &sets0));
    GOOD(gpumem_array_fill(a, &seven, fs)); /* a 32-bit fill queued on a stream */
    GOOD(gpumem_stream_synchronize(fs));
    GOOD(gpumem_debug_driver_calls("cuMemsetD8", &sets1));
    ok(sets1 == sets0 + 1, "a queued 32-bit fill counts as one cuMemsetD8 (%llu)", (unsigned long long)(sets1 - sets0));
    gpumem_array_release(a);
    gpumem_stream_destroy(fs);
    BAD(gpumem_debug_fail_call(1, 0), GPUMEM_ERROR_INVALID_VALUE, "driver_error");
    GOOD(gpumem_debug_fail_call(0, 0));
    is_str(gpumem_debug_driver_error_name(2), "CUDA_ERROR_OUT_OF_MEMORY", "error name 2");
    ok(gpumem_debug_driver_error_name(123456) == NULL, "an unknown error code has no name");
    BAD(gpumem_debug_last_copy_path(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "path");
    ok(gpumem_copy_path_name((gpumem_copy_path)11) == NULL && gpumem_copy_path_name((gpumem_copy_path)-1) == NULL,
       "unknown copy paths have no name");
    is_str(gpumem_copy_path_name(GPUMEM_COPY_PATH_DEVICE_PACK), "device-pack", "copy path name");
    int all = 1;
    for (int i = 0; i <= 10; i++)
        all &= gpumem_copy_path_name((gpumem_copy_path)i) != NULL;
    ok(all, "every known copy path has a name");
}
