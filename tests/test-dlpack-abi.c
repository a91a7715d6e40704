/* Our own DLPack declarations (lib/dlpack_abi.h) against the distribution's
 * <dlpack/dlpack.h>: sizes, offsets and enum values of the legacy structs,
 * which every DLPack header has; the versioned struct against a 1.x header
 * when that is what is installed, and always against its documented LP64
 * layout (Debian's DLPack 0.6 lacks it).  Built only when configure finds
 * the header. */
#include <stddef.h>

#include <dlpack/dlpack.h>

#include "dlpack_abi.h"
#include "tap.h"

#define SAME_SIZE(ours, theirs) \
    is_int(sizeof(ours), sizeof(theirs), "sizeof(" #ours ") == sizeof(" #theirs ")")
#define SAME_OFFSET(ours, theirs, field) \
    is_int(offsetof(ours, field), offsetof(theirs, field), #theirs "." #field " at the same offset")
#define SAME_VALUE(ours, theirs) is_int(ours, theirs, #ours " == " #theirs)

int main(void)
{
    diag("dlpack.h: %s",
#ifdef DLPACK_MAJOR_VERSION
         "1.x"
#else
         "0.x"
#endif
    );

    SAME_VALUE(GM_DL_CPU, kDLCPU);
    SAME_VALUE(GM_DL_CUDA, kDLCUDA);
    SAME_VALUE(GM_DL_CUDA_HOST, kDLCUDAHost);
    SAME_VALUE(GM_DL_OPENCL, kDLOpenCL);
    SAME_VALUE(GM_DL_VULKAN, kDLVulkan);
    SAME_VALUE(GM_DL_METAL, kDLMetal);
    SAME_VALUE(GM_DL_VPI, kDLVPI);
    SAME_VALUE(GM_DL_ROCM, kDLROCM);
    SAME_VALUE(GM_DL_ROCM_HOST, kDLROCMHost);
    SAME_VALUE(GM_DL_EXT_DEV, kDLExtDev);
    SAME_VALUE(GM_DL_CUDA_MANAGED, kDLCUDAManaged);
    SAME_VALUE(GM_DL_INT, kDLInt);
    SAME_VALUE(GM_DL_UINT, kDLUInt);
    SAME_VALUE(GM_DL_FLOAT, kDLFloat);
    SAME_VALUE(GM_DL_OPAQUE_HANDLE, kDLOpaqueHandle);
    SAME_VALUE(GM_DL_BFLOAT, kDLBfloat);
    SAME_VALUE(GM_DL_COMPLEX, kDLComplex);

    SAME_SIZE(((gm_dl_device *)0)->device_type, ((DLDevice *)0)->device_type);
    SAME_SIZE(gm_dl_device, DLDevice);
    SAME_OFFSET(gm_dl_device, DLDevice, device_id);
    SAME_SIZE(gm_dl_data_type, DLDataType);
    SAME_OFFSET(gm_dl_data_type, DLDataType, code);
    SAME_OFFSET(gm_dl_data_type, DLDataType, bits);
    SAME_OFFSET(gm_dl_data_type, DLDataType, lanes);
    SAME_SIZE(gm_dl_tensor, DLTensor);
    SAME_OFFSET(gm_dl_tensor, DLTensor, data);
    SAME_OFFSET(gm_dl_tensor, DLTensor, device);
    SAME_OFFSET(gm_dl_tensor, DLTensor, ndim);
    SAME_OFFSET(gm_dl_tensor, DLTensor, dtype);
    SAME_OFFSET(gm_dl_tensor, DLTensor, shape);
    SAME_OFFSET(gm_dl_tensor, DLTensor, strides);
    SAME_OFFSET(gm_dl_tensor, DLTensor, byte_offset);
    SAME_SIZE(gm_dl_managed_tensor, DLManagedTensor);
    SAME_OFFSET(gm_dl_managed_tensor, DLManagedTensor, dl_tensor);
    SAME_OFFSET(gm_dl_managed_tensor, DLManagedTensor, manager_ctx);
    SAME_OFFSET(gm_dl_managed_tensor, DLManagedTensor, deleter);

#ifdef DLPACK_MAJOR_VERSION
    SAME_VALUE(GM_DLPACK_MAJOR_VERSION, DLPACK_MAJOR_VERSION);
    SAME_VALUE(GM_DL_BOOL, kDLBool);
    SAME_VALUE(GM_DLPACK_FLAG_BITMASK_READ_ONLY, DLPACK_FLAG_BITMASK_READ_ONLY);
    SAME_VALUE(GM_DLPACK_FLAG_BITMASK_IS_COPIED, DLPACK_FLAG_BITMASK_IS_COPIED);
    SAME_SIZE(gm_dl_pack_version, DLPackVersion);
    SAME_OFFSET(gm_dl_pack_version, DLPackVersion, minor);
    SAME_SIZE(gm_dl_managed_tensor_versioned, DLManagedTensorVersioned);
    SAME_OFFSET(gm_dl_managed_tensor_versioned, DLManagedTensorVersioned, version);
    SAME_OFFSET(gm_dl_managed_tensor_versioned, DLManagedTensorVersioned, manager_ctx);
    SAME_OFFSET(gm_dl_managed_tensor_versioned, DLManagedTensorVersioned, deleter);
    SAME_OFFSET(gm_dl_managed_tensor_versioned, DLManagedTensorVersioned, flags);
    SAME_OFFSET(gm_dl_managed_tensor_versioned, DLManagedTensorVersioned, dl_tensor);
#else
    skip(11, "the installed dlpack.h is 0.x: no versioned struct to compare with");
#endif

    /* DLPack 1.x's documented layout, by hand, for LP64. */
    if (sizeof(void *) == 8 && sizeof(long) == 8) {
        is_int(sizeof(gm_dl_pack_version), 8, "LP64: DLPackVersion is 8 bytes");
        is_int(offsetof(gm_dl_pack_version, minor), 4, "LP64: DLPackVersion.minor at 4");
        is_int(sizeof(gm_dl_tensor), 48, "LP64: DLTensor is 48 bytes");
        is_int(offsetof(gm_dl_tensor, byte_offset), 40, "LP64: DLTensor.byte_offset at 40");
        is_int(sizeof(gm_dl_managed_tensor_versioned), 80, "LP64: DLManagedTensorVersioned is 80 bytes");
        is_int(offsetof(gm_dl_managed_tensor_versioned, version), 0, "LP64: .version at 0");
        is_int(offsetof(gm_dl_managed_tensor_versioned, manager_ctx), 8, "LP64: .manager_ctx at 8");
        is_int(offsetof(gm_dl_managed_tensor_versioned, deleter), 16, "LP64: .deleter at 16");
        is_int(offsetof(gm_dl_managed_tensor_versioned, flags), 24, "LP64: .flags at 24");
        is_int(offsetof(gm_dl_managed_tensor_versioned, dl_tensor), 32, "LP64: .dl_tensor at 32");
        is_int(GM_DL_BOOL, 6, "kDLBool is 6 (DLPack 0.8 and later)");
        is_int(GM_DLPACK_FLAG_BITMASK_READ_ONLY, 1, "DLPACK_FLAG_BITMASK_READ_ONLY is 1 << 0");
        is_int(GM_DLPACK_FLAG_BITMASK_IS_COPIED, 2, "DLPACK_FLAG_BITMASK_IS_COPIED is 1 << 1");
        is_int(GM_DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED, 4,
               "DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED is 1 << 2");
    } else {
        skip(14, "not an LP64 target");
    }
    done_testing();
    return exit_status();
}
