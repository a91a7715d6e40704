/*
 * dlpack.c - DLPack export (gpumem_array_to_dlpack) and import
 * (gpumem_array_from_dlpack) of the legacy DLManagedTensor and DLPack 1.x's
 * DLManagedTensorVersioned, through our own declarations of their layout
 * (dlpack_abi.h).
 */
#include "config.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "context.h"
#include "dlpack_abi.h"
#include "driver.h"
#include "dtype.h"
#include "error.h"
#include "gpumem/interop.h"
#include "pointer.h"
#include "gpumem/ipc.h"
#include "layout.h"

/* The documented LP64 layout (dlpack_abi.h); tests/test-dlpack-abi.c also
 * compares it with the distribution's header. */
#if UINTPTR_MAX == UINT64_MAX
_Static_assert(sizeof(gm_dl_device) == 8 && sizeof(gm_dl_data_type) == 4, "DLDevice, DLDataType");
_Static_assert(sizeof(gm_dl_tensor) == 48 && offsetof(gm_dl_tensor, device) == 8 &&
                   offsetof(gm_dl_tensor, ndim) == 16 && offsetof(gm_dl_tensor, dtype) == 20 &&
                   offsetof(gm_dl_tensor, shape) == 24 && offsetof(gm_dl_tensor, strides) == 32 &&
                   offsetof(gm_dl_tensor, byte_offset) == 40,
               "DLTensor");
_Static_assert(sizeof(gm_dl_managed_tensor) == 64 && offsetof(gm_dl_managed_tensor, manager_ctx) == 48 &&
                   offsetof(gm_dl_managed_tensor, deleter) == 56,
               "DLManagedTensor");
_Static_assert(sizeof(gm_dl_managed_tensor_versioned) == 80 &&
                   offsetof(gm_dl_managed_tensor_versioned, manager_ctx) == 8 &&
                   offsetof(gm_dl_managed_tensor_versioned, deleter) == 16 &&
                   offsetof(gm_dl_managed_tensor_versioned, flags) == 24 &&
                   offsetof(gm_dl_managed_tensor_versioned, dl_tensor) == 32,
               "DLManagedTensorVersioned");
#endif

/* ---- dtypes ------------------------------------------------------------------------------ */

static gpumem_status to_dl_dtype(const char *what, const gpumem_dtype *dt, gm_dl_data_type *out)
{
    char ts[24];
    gpumem_dtype_typestr(dt, ts, sizeof ts);
    uint8_t code;
    switch (dt->type) {
    case GPUMEM_BOOL:
        code = GM_DL_BOOL;
        break;
    case GPUMEM_INT8:
    case GPUMEM_INT16:
    case GPUMEM_INT32:
    case GPUMEM_INT64:
        code = GM_DL_INT;
        break;
    case GPUMEM_UINT8:
    case GPUMEM_UINT16:
    case GPUMEM_UINT32:
    case GPUMEM_UINT64:
        code = GM_DL_UINT;
        break;
    case GPUMEM_FLOAT16:
    case GPUMEM_FLOAT32:
    case GPUMEM_FLOAT64:
        code = GM_DL_FLOAT;
        break;
    case GPUMEM_COMPLEX64:
    case GPUMEM_COMPLEX128:
        code = GM_DL_COMPLEX;
        break;
    default:
        return gm_error(GPUMEM_ERROR_INVALID_DTYPE, "%s: the dtype '%s' (%s) has no DLPack type", what, ts,
                        dt->type == GPUMEM_RECORD ? "a record" : "raw bytes");
    }
    if (!gm_dtype_is_native(dt))
        return gm_error(GPUMEM_ERROR_INVALID_DTYPE,
                        "%s: the dtype '%s' is not in the native byte order, and DLPack types are native", what,
                        ts);
    out->code = code;
    out->bits = (uint8_t)(dt->itemsize * 8);
    out->lanes = 1;
    return GPUMEM_OK;
}

static const char *dl_code_name(unsigned code)
{
    static const char *const names[] = {"kDLInt", "kDLUInt", "kDLFloat", "kDLOpaqueHandle",
                                        "kDLBfloat", "kDLComplex", "kDLBool"};
    return code < sizeof names / sizeof names[0] ? names[code] : "unknown";
}

static gpumem_status from_dl_dtype(const char *what, gm_dl_data_type t, const gpumem_dtype **out)
{
    int type = -1;
    if (t.lanes == 1) {
        switch (t.code) {
        case GM_DL_BOOL:
            type = t.bits == 8 ? GPUMEM_BOOL : -1;
            break;
        case GM_DL_INT:
            type = t.bits == 8 ? GPUMEM_INT8 : t.bits == 16 ? GPUMEM_INT16 : t.bits == 32 ? GPUMEM_INT32
                 : t.bits == 64 ? GPUMEM_INT64 : -1;
            break;
        case GM_DL_UINT:
            type = t.bits == 8 ? GPUMEM_UINT8 : t.bits == 16 ? GPUMEM_UINT16 : t.bits == 32 ? GPUMEM_UINT32
                 : t.bits == 64 ? GPUMEM_UINT64 : -1;
            break;
        case GM_DL_FLOAT:
            type = t.bits == 16 ? GPUMEM_FLOAT16 : t.bits == 32 ? GPUMEM_FLOAT32 : t.bits == 64 ? GPUMEM_FLOAT64 : -1;
            break;
        case GM_DL_COMPLEX:
            type = t.bits == 64 ? GPUMEM_COMPLEX64 : t.bits == 128 ? GPUMEM_COMPLEX128 : -1;
            break;
        default:
            break;
        }
    }
    if (type < 0)
        return gm_error(GPUMEM_ERROR_INVALID_DTYPE,
                        "%s: the tensor's dtype (code %u %s, bits %u, lanes %u) has no gpumem dtype (bool, "
                        "int and uint of 8 to 64 bits, float of 16, 32 and 64 bits, complex of 64 and 128 bits; "
                        "one lane)",
                        what, (unsigned)t.code, dl_code_name(t.code), (unsigned)t.bits, (unsigned)t.lanes);
    *out = gpumem_dtype_builtin((gpumem_type)type);
    return GPUMEM_OK;
}

/* ---- export ------------------------------------------------------------------------------- */

/* A tensor and its shape and strides, in one allocation. */
typedef struct legacy_block {
    gm_dl_managed_tensor m;
    int64_t dims[];
} legacy_block;

typedef struct versioned_block {
    gm_dl_managed_tensor_versioned m;
    int64_t dims[];
} versioned_block;

static void legacy_deleter(gm_dl_managed_tensor *self)
{
    if (self == NULL)
        return;
    gm_error_quietly(gm_array_release_as(self->manager_ctx, "the DLPack deleter")); /* nobody reports it */
    free(self);
}

static void versioned_deleter(gm_dl_managed_tensor_versioned *self)
{
    if (self == NULL)
        return;
    gm_error_quietly(gm_array_release_as(self->manager_ctx, "the DLPack deleter")); /* nobody reports it */
    free(self);
}

/* Fills t for array a; dims has room for 2 * ndim values (shape, then
 * strides). */
static gpumem_status fill_tensor(const char *what, const gpumem_array *a, gm_dl_tensor *t, int64_t *dims)
{
    gm_dl_data_type dtype;
    gpumem_status st = to_dl_dtype(what, a->dtype, &dtype);
    if (st != GPUMEM_OK)
        return st;
    int64_t size = gm_array_size(a), item = (int64_t)a->itemsize;
    int64_t cstrides[GM_MAX_NDIM];
    gm_layout_contiguous_strides(what, a->ndim, a->shape, a->itemsize, 'C', cstrides);
    int64_t *shape = dims, *strides = dims + a->ndim;
    for (int i = 0; i < a->ndim; i++) {
        shape[i] = a->shape[i];
        if (a->strides[i] % item == 0) {
            strides[i] = a->strides[i] / item;
        } else if (a->shape[i] <= 1 || size == 0) {
            /* A stride that never moves the pointer says nothing: C's. */
            strides[i] = cstrides[i] / item;
        } else {
            return gm_error(GPUMEM_ERROR_INVALID_VALUE,
                            "%s: axis %d: the stride of %" PRId64 " bytes is not a multiple of the item size %"
                            PRId64 ", and DLPack strides count elements",
                            what, i, a->strides[i], item);
        }
    }
    gm_dl_device device = {GM_DL_CPU, 0};
    uint64_t ptr = (uint64_t)(uintptr_t)a->host;
    switch (a->kind) {
    case GPUMEM_MEMORY_DEVICE:
    case GPUMEM_MEMORY_FOREIGN:
        device.device_type = GM_DL_CUDA;
        device.device_id = a->ctx != NULL ? a->ctx->device : 0;
        ptr = a->dev;
        break;
    case GPUMEM_MEMORY_MANAGED:
        device.device_type = GM_DL_CUDA_MANAGED;
        ptr = a->dev;
        break;
    case GPUMEM_MEMORY_PINNED:
    case GPUMEM_MEMORY_MAPPED:
        device.device_type = GM_DL_CUDA_HOST;
        break;
    case GPUMEM_MEMORY_HOST:
        break;
    }
    /* DLPack asks for NULL as the data of an empty tensor. */
    t->data = size > 0 ? (void *)(uintptr_t)ptr : NULL;
    t->device = device;
    t->ndim = a->ndim;
    t->dtype = dtype;
    t->shape = shape;
    t->strides = strides;
    t->byte_offset = 0;
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_array_to_dlpack(gpumem_array *array, unsigned flags, void **tensor)
{
    const char *what = "gpumem_array_to_dlpack";
    GM_CHECK_HANDLE(array);
    GM_CHECK_NULL(tensor);
    if (flags & ~(unsigned)(GPUMEM_DLPACK_VERSIONED | GPUMEM_DLPACK_READ_ONLY))
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: unknown flags 0x%x", what, flags);
    bool versioned = (flags & GPUMEM_DLPACK_VERSIONED) != 0;
    if (array->readonly)
        flags |= GPUMEM_DLPACK_READ_ONLY; /* a read-only array is exported read-only */
    if ((flags & GPUMEM_DLPACK_READ_ONLY) && !versioned)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE,
                        "%s: GPUMEM_DLPACK_READ_ONLY needs GPUMEM_DLPACK_VERSIONED: a legacy DLManagedTensor "
                        "has no read-only flag",
                        what);
    size_t dims = 2 * (size_t)array->ndim * sizeof(int64_t);
    void *block = malloc((versioned ? sizeof(versioned_block) : sizeof(legacy_block)) + dims);
    if (block == NULL)
        return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", what);
    gpumem_status st;
    if (versioned) {
        versioned_block *b = block;
        memset(&b->m, 0, sizeof b->m);
        st = fill_tensor(what, array, &b->m.dl_tensor, b->dims);
        b->m.version.major = GPUMEM_DLPACK_MAJOR_VERSION;
        b->m.version.minor = GPUMEM_DLPACK_MINOR_VERSION;
        b->m.manager_ctx = array;
        b->m.deleter = versioned_deleter;
        b->m.flags = (flags & GPUMEM_DLPACK_READ_ONLY) ? GM_DLPACK_FLAG_BITMASK_READ_ONLY : 0;
    } else {
        legacy_block *b = block;
        memset(&b->m, 0, sizeof b->m);
        st = fill_tensor(what, array, &b->m.dl_tensor, b->dims);
        b->m.manager_ctx = array;
        b->m.deleter = legacy_deleter;
    }
    if (st != GPUMEM_OK) {
        free(block);
        return st;
    }
    gpumem_array_retain(array);
    *tensor = block;
    return GPUMEM_OK;
}

/* ---- import ------------------------------------------------------------------------------- */

/* The array's release callbacks: the owner is the tensor. */
static void release_legacy(void *owner)
{
    gm_dl_managed_tensor *m = owner;
    if (m->deleter != NULL)
        m->deleter(m);
}

static void release_versioned(void *owner)
{
    gm_dl_managed_tensor_versioned *m = owner;
    if (m->deleter != NULL)
        m->deleter(m);
}

static const char *dl_device_name(int32_t type)
{
    switch (type) {
    case GM_DL_CPU:
        return "kDLCPU";
    case GM_DL_CUDA:
        return "kDLCUDA";
    case GM_DL_CUDA_HOST:
        return "kDLCUDAHost";
    case GM_DL_OPENCL:
        return "kDLOpenCL";
    case GM_DL_VULKAN:
        return "kDLVulkan";
    case GM_DL_METAL:
        return "kDLMetal";
    case GM_DL_VPI:
        return "kDLVPI";
    case GM_DL_ROCM:
        return "kDLROCM";
    case GM_DL_ROCM_HOST:
        return "kDLROCMHost";
    case GM_DL_EXT_DEV:
        return "kDLExtDev";
    case GM_DL_CUDA_MANAGED:
        return "kDLCUDAManaged";
    default:
        return "unknown";
    }
}

/* The kind and context of an import of device dev: *own is a context this
 * call made (released by the caller after wrapping). */
static gpumem_status import_device(const char *what, gm_dl_device dev, gpumem_context **ctx,
                                   gpumem_memory_kind *kind, gpumem_context **own)
{
    gpumem_status st = GPUMEM_OK;
    *own = NULL;
    switch (dev.device_type) {
    case GM_DL_CUDA: {
        int count = 0;
        st = gm_device_count(what, &count);
        if (st != GPUMEM_OK)
            return st;
        if (dev.device_id < 0 || dev.device_id >= count)
            return gm_error(GPUMEM_ERROR_INVALID_DEVICE,
                            "%s: the tensor's device_id is kDLCUDA device %d, and the %s backend has %d device%s", what,
                            (int)dev.device_id, gm_drv->name, count, count == 1 ? "" : "s");
        if (*ctx == NULL) {
            st = gm_context_create(what, dev.device_id, own);
            *ctx = *own;
        } else if ((*ctx)->device != dev.device_id) {
            st = gm_error(GPUMEM_ERROR_CONTEXT_MISMATCH, "%s: the tensor is on device %d, but 'ctx' on device %d",
                          what, (int)dev.device_id, (*ctx)->device);
        }
        *kind = GPUMEM_MEMORY_FOREIGN;
        return st;
    }
    case GM_DL_CUDA_MANAGED:
    case GM_DL_CUDA_HOST:
        *ctx = gm_context_use(*ctx, what, &st);
        *kind = dev.device_type == GM_DL_CUDA_MANAGED ? GPUMEM_MEMORY_MANAGED : GPUMEM_MEMORY_PINNED;
        return st;
    case GM_DL_CPU:
        *ctx = NULL;
        *kind = GPUMEM_MEMORY_HOST;
        return GPUMEM_OK;
    default:
        return gm_error(GPUMEM_ERROR_NOT_SUPPORTED,
                        "%s: the tensor's device type %d (%s) is not supported: kDLCUDA, kDLCUDAManaged, "
                        "kDLCUDAHost and kDLCPU are",
                        what, (int)dev.device_type, dl_device_name(dev.device_type));
    }
}

/* A kDLCUDAManaged or kDLCUDAHost tensor is read and written by the CPU (host
 * packing, host copies), so its claim is checked with the driver: every
 * byte it touches must lie in one managed, or one page-locked, range.  A
 * device pointer sent as managed memory would otherwise be dereferenced on
 * the host. */
static gpumem_status check_host_side(const char *what, int32_t type, int ndim, const int64_t *shape,
                                     const int64_t *strides, size_t itemsize, uint64_t ptr)
{
    int64_t cs[GM_MAX_NDIM], lo = 0, hi = 0;
    if (strides == NULL) {
        gpumem_status st = gm_layout_contiguous_strides(what, ndim, shape, itemsize, 'C', cs);
        if (st != GPUMEM_OK)
            return st;
        strides = cs;
    }
    if (!gm_layout_extent(ndim, shape, strides, itemsize, &lo, &hi) || hi == lo)
        return GPUMEM_OK; /* empty (an overflow was refused by gm_layout_check_memory) */
    gpumem_pointer_info info = {.size = sizeof info};
    int is_cuda = 0;
    gpumem_status st = gm_pointer_query(what, ptr + (uint64_t)lo, &is_cuda, &info);
    if (st != GPUMEM_OK)
        return st;
    bool managed = type == GM_DL_CUDA_MANAGED;
    bool kind_ok = managed ? info.kind == GPUMEM_POINTER_MANAGED
                           : info.kind == GPUMEM_POINTER_PINNED || info.kind == GPUMEM_POINTER_MAPPED;
    uint64_t first = ptr + (uint64_t)lo, last = ptr + (uint64_t)hi; /* [first, last) */
    bool inside = info.range_size > 0 && first >= info.range_start && last - info.range_start <= info.range_size;
    if (!kind_ok || !inside)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE,
                        "%s: the tensor says %s, but its bytes [0x%" PRIx64 ", 0x%" PRIx64 ") are %s to the driver",
                        what, managed ? "kDLCUDAManaged" : "kDLCUDAHost", first, last,
                        !kind_ok ? (info.kind == GPUMEM_POINTER_DEVICE    ? "device memory"
                                    : info.kind == GPUMEM_POINTER_MANAGED ? "managed memory"
                                    : info.kind == GPUMEM_POINTER_UNKNOWN ? "unknown memory"
                                                                          : "page-locked memory")
                                 : "not inside one allocation");
    return GPUMEM_OK;
}

/* A kDLCPU tensor is read and written by the CPU as host memory, so its
 * claim is checked with the same driver query: element 0, the lowest and the
 * highest byte it touches must not be device memory (once one answer is a
 * host-side allocation that holds every byte, the others are not asked).
 * Device memory sent as kDLCPU would otherwise be dereferenced on the host.
 * Without a backend (no driver, a bad GPUMEM_BACKEND) this process has no
 * device memory to ask about, and the claim stands. */
static gpumem_status check_cpu(const char *what, int ndim, const int64_t *shape, const int64_t *strides,
                               size_t itemsize, uint64_t ptr)
{
    int64_t cs[GM_MAX_NDIM], lo = 0, hi = 0;
    if (strides == NULL) {
        gpumem_status st = gm_layout_contiguous_strides(what, ndim, shape, itemsize, 'C', cs);
        if (st != GPUMEM_OK)
            return st;
        strides = cs;
    }
    if (!gm_layout_extent(ndim, shape, strides, itemsize, &lo, &hi) || hi == lo)
        return GPUMEM_OK; /* empty (an overflow was refused by gm_layout_check_memory) */
    if (!gm_driver_usable())
        return GPUMEM_OK; /* trusted (the header says so), and the call's last failure left alone */
    uint64_t first = ptr + (uint64_t)lo, last = ptr + (uint64_t)hi; /* [first, last) */
    const uint64_t probe[3] = {ptr, first, last - 1};
    for (int i = 0; i < 3; i++) {
        if ((i > 0 && probe[i] == probe[0]) || (i > 1 && probe[i] == probe[1]))
            continue;
        gpumem_pointer_info info = {.size = sizeof info};
        int is_cuda = 0;
        gpumem_status st = gm_pointer_query(what, probe[i], &is_cuda, &info);
        if (st != GPUMEM_OK)
            return st;
        if (info.kind == GPUMEM_POINTER_DEVICE)
            return gm_error(GPUMEM_ERROR_INVALID_VALUE,
                            "%s: the tensor says kDLCPU, but its byte at 0x%" PRIx64 " (of [0x%" PRIx64 ", 0x%" PRIx64
                            ")) is device memory to the driver: such memory is kDLCUDA",
                            what, probe[i], first, last);
        if (info.kind != GPUMEM_POINTER_UNKNOWN && first >= info.range_start &&
            last - info.range_start <= info.range_size)
            break; /* one host-side allocation holds every byte */
    }
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_array_from_dlpack(gpumem_context *ctx, void *tensor, unsigned flags,
                                                  gpumem_array **array)
{
    const char *what = "gpumem_array_from_dlpack";
    GM_CHECK_HANDLE_OR_NULL(ctx);
    GM_CHECK_NULL(tensor);
    GM_CHECK_NULL(array);
    if (flags & ~(unsigned)(GPUMEM_DLPACK_VERSIONED | GPUMEM_DLPACK_READ_ONLY))
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: unknown flags 0x%x", what, flags);
    const gm_dl_tensor *t;
    void (*release)(void *);
    bool readonly = false;
    if (flags & GPUMEM_DLPACK_VERSIONED) {
        const gm_dl_managed_tensor_versioned *v = tensor;
        /* Only the fields up to flags are safe to read in another major version. */
        if (v->version.major != GM_DLPACK_MAJOR_VERSION)
            return gm_error(GPUMEM_ERROR_NOT_SUPPORTED,
                            "%s: the tensor's DLPack version is %" PRIu32 ".%" PRIu32 ", and only major version %d "
                            "is supported (the caller keeps the tensor and calls its deleter)",
                            what, v->version.major, v->version.minor, GM_DLPACK_MAJOR_VERSION);
        if ((v->flags & GM_DLPACK_FLAG_BITMASK_READ_ONLY) && !(flags & GPUMEM_DLPACK_READ_ONLY))
            return gm_error(GPUMEM_ERROR_INVALID_VALUE,
                            "%s: the tensor is read-only (DLPACK_FLAG_BITMASK_READ_ONLY) and arrays are writable; "
                            "pass GPUMEM_DLPACK_READ_ONLY to promise not to write it",
                            what);
        t = &v->dl_tensor;
        release = release_versioned;
        readonly = (v->flags & GM_DLPACK_FLAG_BITMASK_READ_ONLY) != 0;
    } else {
        const gm_dl_managed_tensor *m = tensor;
        t = &m->dl_tensor;
        release = release_legacy;
    }

    const gpumem_dtype *dt = NULL;
    gpumem_status st = from_dl_dtype(what, t->dtype, &dt);
    if (st != GPUMEM_OK)
        return st;
    int ndim = t->ndim;
    if (ndim < 0)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: the tensor's ndim %d is negative", what, ndim);
    if (ndim > GM_MAX_NDIM)
        return gm_error(GPUMEM_ERROR_TOO_MANY_DIMENSIONS, "%s: the tensor has %d dimensions (ndim), more than %d",
                        what, ndim, GM_MAX_NDIM);
    if (ndim > 0 && t->shape == NULL)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: the tensor's shape is NULL for %d dimensions", what, ndim);
    st = gm_layout_check_shape(what, ndim, t->shape, dt->itemsize, NULL, NULL);
    if (st != GPUMEM_OK)
        return st;
    int64_t strides[GM_MAX_NDIM];
    const int64_t *bstrides = NULL;
    if (t->strides != NULL) {
        for (int i = 0; i < ndim; i++)
            if (__builtin_mul_overflow(t->strides[i], (int64_t)dt->itemsize, &strides[i]))
                return gm_error(GPUMEM_ERROR_OVERFLOW,
                                "%s: axis %d: the stride of %" PRId64 " elements overflows in bytes", what, i,
                                t->strides[i]);
        bstrides = strides;
    }
    uint64_t base = (uint64_t)(uintptr_t)t->data, ptr;
    if (__builtin_add_overflow(base, t->byte_offset, &ptr))
        return gm_error(GPUMEM_ERROR_OVERFLOW, "%s: data %p plus byte_offset %" PRIu64 " leaves the address space",
                        what, t->data, t->byte_offset);
    int64_t size = 1;
    for (int i = 0; i < ndim; i++)
        size *= t->shape[i];
    if (base == 0 && size > 0)
        return gm_error(GPUMEM_ERROR_NULL_ARGUMENT, "%s: the tensor's data is NULL for %" PRId64 " elements", what,
                        size);
    st = gm_layout_check_memory(what, "data + byte_offset", ndim, t->shape, bstrides, dt->itemsize, ptr);
    if (st != GPUMEM_OK)
        return st;

    gpumem_memory_kind kind = GPUMEM_MEMORY_FOREIGN;
    gpumem_context *own = NULL;
    st = import_device(what, t->device, &ctx, &kind, &own);
    if (st == GPUMEM_OK && (kind == GPUMEM_MEMORY_MANAGED || kind == GPUMEM_MEMORY_PINNED))
        st = check_host_side(what, t->device.device_type, ndim, t->shape, bstrides, dt->itemsize, ptr);
    else if (st == GPUMEM_OK && kind == GPUMEM_MEMORY_HOST)
        st = check_cpu(what, ndim, t->shape, bstrides, dt->itemsize, ptr);
    if (st == GPUMEM_OK)
        st = gm_array_wrap(what, ctx, kind, ptr, ndim, t->shape, bstrides, dt, release, tensor, array);
    if (st == GPUMEM_OK && readonly)
        (*array)->readonly = (*array)->readonly_locked = true; /* the producer's memory stays read-only */
    return gm_keep_first(st, gm_context_release_as(own, what));
}
