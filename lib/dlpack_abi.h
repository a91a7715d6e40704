/*
 * dlpack_abi.h - our own declarations of the DLPack ABI subset we use
 * (private), so that building needs no DLPack header.
 *
 * The names carry a gm_ prefix so that a test can include this header beside
 * the real <dlpack/dlpack.h> and compare the two: tests/test-dlpack-abi.c
 * checks every size, offset and enum value below against the distribution's
 * header (Debian ships DLPack 0.6, which has the legacy structs only) and,
 * when that header is 1.x, the versioned struct too.
 *
 * The layouts, from DLPack's dlpack.h:
 *  - DLTensor and the legacy DLManagedTensor are unchanged from 0.x to 1.x
 *    (only the comments and enum values grew);
 *  - DLManagedTensorVersioned is DLPack 1.0's (1.1 only added enum values
 *    and a flag bit); DLPack promises that its fields up to `flags` keep
 *    their places in every future major version, so that the deleter of a
 *    tensor of an unknown version can still be called.
 * On LP64 (x86-64, aarch64, ppc64le): DLTensor is 48 bytes (data 0, device
 * 8, ndim 16, dtype 20, shape 24, strides 32, byte_offset 40),
 * DLManagedTensor 64 (dl_tensor 0, manager_ctx 48, deleter 56) and
 * DLManagedTensorVersioned 80 (version 0, manager_ctx 8, deleter 16, flags
 * 24, dl_tensor 32); dlpack.c asserts these at compile time.
 */
#ifndef GM_DLPACK_ABI_H
#define GM_DLPACK_ABI_H

#include <stdint.h>

/* DLDeviceType (an enum of int size in C; `enum : int32_t` in 1.x C++). */
enum {
    GM_DL_CPU = 1,          /* kDLCPU */
    GM_DL_CUDA = 2,         /* kDLCUDA */
    GM_DL_CUDA_HOST = 3,    /* kDLCUDAHost: pinned host memory (cudaMallocHost) */
    GM_DL_OPENCL = 4,       /* kDLOpenCL */
    GM_DL_VULKAN = 7,       /* kDLVulkan */
    GM_DL_METAL = 8,        /* kDLMetal */
    GM_DL_VPI = 9,          /* kDLVPI */
    GM_DL_ROCM = 10,        /* kDLROCM */
    GM_DL_ROCM_HOST = 11,   /* kDLROCMHost */
    GM_DL_EXT_DEV = 12,     /* kDLExtDev */
    GM_DL_CUDA_MANAGED = 13 /* kDLCUDAManaged: cudaMallocManaged */
};

/* DLDataTypeCode. */
enum {
    GM_DL_INT = 0,           /* kDLInt */
    GM_DL_UINT = 1,          /* kDLUInt */
    GM_DL_FLOAT = 2,         /* kDLFloat */
    GM_DL_OPAQUE_HANDLE = 3, /* kDLOpaqueHandle */
    GM_DL_BFLOAT = 4,        /* kDLBfloat */
    GM_DL_COMPLEX = 5,       /* kDLComplex */
    GM_DL_BOOL = 6           /* kDLBool (DLPack 0.8 and later) */
};

/* DLManagedTensorVersioned's flags. */
#define GM_DLPACK_FLAG_BITMASK_READ_ONLY (UINT64_C(1) << 0)
#define GM_DLPACK_FLAG_BITMASK_IS_COPIED (UINT64_C(1) << 1)
#define GM_DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED (UINT64_C(1) << 2)

/* DLPACK_MAJOR_VERSION of the versioned struct below. */
#define GM_DLPACK_MAJOR_VERSION 1

/* DLPackVersion (1.x). */
typedef struct gm_dl_pack_version {
    uint32_t major;
    uint32_t minor;
} gm_dl_pack_version;

/* DLDevice. */
typedef struct gm_dl_device {
    int32_t device_type; /* a GM_DL_ device type */
    int32_t device_id;
} gm_dl_device;

/* DLDataType. */
typedef struct gm_dl_data_type {
    uint8_t code;   /* a GM_DL_ type code */
    uint8_t bits;
    uint16_t lanes;
} gm_dl_data_type;

/* DLTensor. */
typedef struct gm_dl_tensor {
    void *data;
    gm_dl_device device;
    int32_t ndim;
    gm_dl_data_type dtype;
    int64_t *shape;
    int64_t *strides;     /* in elements; NULL: C order (0.x; 1.x producers always give them) */
    uint64_t byte_offset;
} gm_dl_tensor;

/* DLManagedTensor (the legacy struct). */
typedef struct gm_dl_managed_tensor {
    gm_dl_tensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct gm_dl_managed_tensor *self);
} gm_dl_managed_tensor;

/* DLManagedTensorVersioned (1.x). */
typedef struct gm_dl_managed_tensor_versioned {
    gm_dl_pack_version version;
    void *manager_ctx;
    void (*deleter)(struct gm_dl_managed_tensor_versioned *self);
    uint64_t flags;
    gm_dl_tensor dl_tensor;
} gm_dl_managed_tensor_versioned;

#endif /* GM_DLPACK_ABI_H */
