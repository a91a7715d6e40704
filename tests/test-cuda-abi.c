/*
 * test-cuda-abi.c - checks lib/cuda_abi.h, libgpumem's own declarations of
 * the CUDA driver ABI, against the real cuda.h: every value, every struct
 * size and field offset.  Built only where configure finds cuda.h; it needs
 * neither a GPU nor a driver, since everything it checks is compile-time.
 */
#include "config.h"

#include <elf.h>
#include <stddef.h>

#include <cuda.h>
#include <fatbinary_section.h>

#include "cuda_abi.h"
#include "tap.h"

/* X(field) lists of the copy structs' fields, in declaration order. */
#define MEMCPY2D_FIELDS(X)                                                           \
    X(srcXInBytes) X(srcY) X(srcMemoryType) X(srcHost) X(srcDevice) X(srcArray)      \
    X(srcPitch) X(dstXInBytes) X(dstY) X(dstMemoryType) X(dstHost) X(dstDevice)      \
    X(dstArray) X(dstPitch) X(WidthInBytes) X(Height)

#define MEMCPY3D_FIELDS(X)                                                           \
    X(srcXInBytes) X(srcY) X(srcZ) X(srcLOD) X(srcMemoryType) X(srcHost)             \
    X(srcDevice) X(srcArray) X(reserved0) X(srcPitch) X(srcHeight) X(dstXInBytes)    \
    X(dstY) X(dstZ) X(dstLOD) X(dstMemoryType) X(dstHost) X(dstDevice) X(dstArray)   \
    X(reserved1) X(dstPitch) X(dstHeight) X(WidthInBytes) X(Height) X(Depth)

/* Both the value our list gives and the enum it names must equal cuda.h's. */
#define CHECK_VALUE(name, value) \
    is_int(GM_##name, name, #name); \
    is_int(value, name, #name " (list value)");

#define CHECK_CONSTANT(name) is_int(GM_##name, name, #name);

#define CHECK_SIZE(ours, theirs) is_int(sizeof(ours), sizeof(theirs), "sizeof " #theirs);

#define CHECK_FIELD(ours, theirs, field)                                                  \
    is_int(offsetof(ours, field), offsetof(theirs, field), "offsetof(" #theirs ", " #field ")"); \
    is_int(sizeof(((ours *)0)->field), sizeof(((theirs *)0)->field),                     \
           "sizeof " #theirs "." #field);

#define WRAPPER_FIELDS(X) X(magic) X(version) X(data) X(filename_or_fatbins)

#define CHECK_FIELD_2D(field) CHECK_FIELD(gm_cu_memcpy2d, CUDA_MEMCPY2D, field)
#define CHECK_FIELD_3D(field) CHECK_FIELD(gm_cu_memcpy3d, CUDA_MEMCPY3D, field)
#define CHECK_FIELD_WRAPPER(field) CHECK_FIELD(gm_cu_fatbin_wrapper, __fatBinC_Wrapper_t, field)

int main(void)
{
    diag("cuda.h of CUDA %d.%d", CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10);
    ok(GM_CUDA_API_VERSION <= CUDA_VERSION, "GM_CUDA_API_VERSION %d <= CUDA_VERSION %d",
       GM_CUDA_API_VERSION, CUDA_VERSION);

    GM_CU_RESULTS(CHECK_VALUE)
    GM_CU_DEVICE_ATTRS(CHECK_VALUE)
    GM_CU_FUNC_ATTRS(CHECK_VALUE)
    GM_CU_JIT_OPTIONS(CHECK_VALUE)
    GM_CU_POINTER_ATTRS(CHECK_VALUE)

    CHECK_CONSTANT(CU_MEMORYTYPE_HOST)
    CHECK_CONSTANT(CU_MEMORYTYPE_DEVICE)
    CHECK_CONSTANT(CU_MEMORYTYPE_ARRAY)
    CHECK_CONSTANT(CU_MEMORYTYPE_UNIFIED)
    CHECK_CONSTANT(CU_COMPUTEMODE_DEFAULT)
    CHECK_CONSTANT(CU_COMPUTEMODE_PROHIBITED)
    CHECK_CONSTANT(CU_COMPUTEMODE_EXCLUSIVE_PROCESS)

    CHECK_CONSTANT(CU_MEMHOSTALLOC_PORTABLE)
    CHECK_CONSTANT(CU_MEMHOSTALLOC_DEVICEMAP)
    CHECK_CONSTANT(CU_MEMHOSTALLOC_WRITECOMBINED)
    CHECK_CONSTANT(CU_MEMHOSTREGISTER_PORTABLE)
    CHECK_CONSTANT(CU_MEMHOSTREGISTER_DEVICEMAP)
    CHECK_CONSTANT(CU_MEMHOSTREGISTER_IOMEMORY)
    CHECK_CONSTANT(CU_MEMHOSTREGISTER_READ_ONLY)
    CHECK_CONSTANT(CU_MEM_ATTACH_GLOBAL)
    CHECK_CONSTANT(CU_MEM_ATTACH_HOST)
    CHECK_CONSTANT(CU_STREAM_DEFAULT)
    CHECK_CONSTANT(CU_STREAM_NON_BLOCKING)
    CHECK_CONSTANT(CU_EVENT_DEFAULT)
    CHECK_CONSTANT(CU_EVENT_BLOCKING_SYNC)
    CHECK_CONSTANT(CU_EVENT_DISABLE_TIMING)
    CHECK_CONSTANT(CU_GET_PROC_ADDRESS_DEFAULT)
    CHECK_CONSTANT(CU_GET_PROC_ADDRESS_LEGACY_STREAM)
    CHECK_CONSTANT(CU_GET_PROC_ADDRESS_SUCCESS)
    CHECK_CONSTANT(CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND)
    CHECK_CONSTANT(CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT)
    CHECK_CONSTANT(CU_IPC_HANDLE_SIZE)
    CHECK_CONSTANT(CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)

    CHECK_SIZE(gm_cu_result, CUresult)
    CHECK_SIZE(gm_cu_device, CUdevice)
    CHECK_SIZE(gm_cu_deviceptr, CUdeviceptr)
    CHECK_SIZE(gm_cu_context, CUcontext)
    CHECK_SIZE(gm_cu_stream, CUstream)
    CHECK_SIZE(gm_cu_event, CUevent)
    CHECK_SIZE(gm_cu_array, CUarray)
    CHECK_SIZE(gm_cu_function, CUfunction)
    CHECK_SIZE(gm_cu_module, CUmodule)
    CHECK_SIZE(gm_cu_host_fn, CUhostFn)
    CHECK_SIZE(uint64_t, cuuint64_t)
    /* The int fields and parameters that stand for these enums. */
    CHECK_SIZE(int, CUdevice_attribute)
    CHECK_SIZE(int, CUmemorytype)
    CHECK_SIZE(int, CUdriverProcAddressQueryResult)
    CHECK_SIZE(int, CUfunction_attribute)
    CHECK_SIZE(int, CUjit_option)
    CHECK_SIZE(int, CUpointer_attribute)
    CHECK_SIZE(unsigned, CUmemorytype)
    CHECK_SIZE(gm_cu_ipc_mem_handle, CUipcMemHandle)
    CHECK_FIELD(gm_cu_ipc_mem_handle, CUipcMemHandle, reserved)
    is_int((gm_cu_deviceptr)-1 > 0, (CUdeviceptr)-1 > 0, "CUdeviceptr is unsigned");

    CHECK_SIZE(gm_cu_memcpy2d, CUDA_MEMCPY2D)
    MEMCPY2D_FIELDS(CHECK_FIELD_2D)
    CHECK_SIZE(gm_cu_memcpy3d, CUDA_MEMCPY3D)
    MEMCPY3D_FIELDS(CHECK_FIELD_3D)

    /* virtual memory management and stream-ordered pools */
    CHECK_CONSTANT(CU_MEM_ALLOCATION_TYPE_INVALID)
    CHECK_CONSTANT(CU_MEM_ALLOCATION_TYPE_PINNED)
    CHECK_CONSTANT(CU_MEM_LOCATION_TYPE_INVALID)
    CHECK_CONSTANT(CU_MEM_LOCATION_TYPE_DEVICE)
    CHECK_CONSTANT(CU_MEM_LOCATION_TYPE_HOST)
    CHECK_CONSTANT(CU_MEM_LOCATION_TYPE_HOST_NUMA)
    CHECK_CONSTANT(CU_MEM_HANDLE_TYPE_NONE)
    CHECK_CONSTANT(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
    CHECK_CONSTANT(CU_MEM_ACCESS_FLAGS_PROT_NONE)
    CHECK_CONSTANT(CU_MEM_ACCESS_FLAGS_PROT_READ)
    CHECK_CONSTANT(CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
    CHECK_CONSTANT(CU_MEM_ALLOC_GRANULARITY_MINIMUM)
    CHECK_CONSTANT(CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)
    CHECK_CONSTANT(CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
    CHECK_CONSTANT(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)
    CHECK_CONSTANT(CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH)
    CHECK_CONSTANT(CU_MEMPOOL_ATTR_USED_MEM_CURRENT)
    CHECK_CONSTANT(CU_MEMPOOL_ATTR_USED_MEM_HIGH)
    CHECK_SIZE(int, CUmemAllocationType)
    CHECK_SIZE(int, CUmemLocationType)
    CHECK_SIZE(int, CUmemAllocationHandleType)
    CHECK_SIZE(int, CUmemAccess_flags)
    CHECK_SIZE(int, CUmemAllocationGranularity_flags)
    CHECK_SIZE(int, CUmemPool_attribute)
    CHECK_SIZE(gm_cu_mem_handle, CUmemGenericAllocationHandle)
    CHECK_SIZE(gm_cu_mempool, CUmemoryPool)
    CHECK_SIZE(gm_cu_mem_location, CUmemLocation)
    CHECK_FIELD(gm_cu_mem_location, CUmemLocation, type)
    CHECK_FIELD(gm_cu_mem_location, CUmemLocation, id)
    CHECK_SIZE(gm_cu_mem_alloc_prop, CUmemAllocationProp)
    CHECK_FIELD(gm_cu_mem_alloc_prop, CUmemAllocationProp, type)
    CHECK_FIELD(gm_cu_mem_alloc_prop, CUmemAllocationProp, requestedHandleTypes)
    CHECK_FIELD(gm_cu_mem_alloc_prop, CUmemAllocationProp, location)
    CHECK_FIELD(gm_cu_mem_alloc_prop, CUmemAllocationProp, win32HandleMetaData)
    CHECK_FIELD(gm_cu_mem_alloc_prop, CUmemAllocationProp, allocFlags)
    CHECK_FIELD(gm_cu_mem_alloc_prop, CUmemAllocationProp, allocFlags.compressionType)
    CHECK_FIELD(gm_cu_mem_alloc_prop, CUmemAllocationProp, allocFlags.gpuDirectRDMACapable)
    CHECK_FIELD(gm_cu_mem_alloc_prop, CUmemAllocationProp, allocFlags.usage)
    CHECK_FIELD(gm_cu_mem_alloc_prop, CUmemAllocationProp, allocFlags.reserved)
    CHECK_SIZE(gm_cu_mem_access_desc, CUmemAccessDesc)
    CHECK_FIELD(gm_cu_mem_access_desc, CUmemAccessDesc, location)
    CHECK_FIELD(gm_cu_mem_access_desc, CUmemAccessDesc, flags)
    CHECK_SIZE(gm_cu_mem_pool_props, CUmemPoolProps)
    CHECK_SIZE(gm_cu_mem_pool_ptr_export_data, CUmemPoolPtrExportData)
    CHECK_FIELD(gm_cu_mem_pool_props, CUmemPoolProps, allocType)
    CHECK_FIELD(gm_cu_mem_pool_props, CUmemPoolProps, handleTypes)
    CHECK_FIELD(gm_cu_mem_pool_props, CUmemPoolProps, location)
    CHECK_FIELD(gm_cu_mem_pool_props, CUmemPoolProps, win32SecurityAttributes)
    CHECK_FIELD(gm_cu_mem_pool_props, CUmemPoolProps, maxSize)
    CHECK_FIELD(gm_cu_mem_pool_props, CUmemPoolProps, usage)
    CHECK_FIELD(gm_cu_mem_pool_props, CUmemPoolProps, reserved)
    /* The prototypes cuda_impl.h declares for cuGetProcAddress's pointers (types
     * only: this program links no driver). */
#define SAME_TYPE(f, T) __builtin_types_compatible_p(__typeof__(&f), T)
    ok(SAME_TYPE(cuMemAddressReserve, CUresult (*)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long)) &&
           SAME_TYPE(cuMemCreate, CUresult (*)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                                               unsigned long long)) &&
           SAME_TYPE(cuMemMap, CUresult (*)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                                            unsigned long long)) &&
           SAME_TYPE(cuMemSetAccess, CUresult (*)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t)) &&
           SAME_TYPE(cuMemGetAllocationGranularity,
                     CUresult (*)(size_t *, const CUmemAllocationProp *, CUmemAllocationGranularity_flags)) &&
           SAME_TYPE(cuMemExportToShareableHandle,
                     CUresult (*)(void *, CUmemGenericAllocationHandle, CUmemAllocationHandleType, unsigned long long)) &&
           SAME_TYPE(cuMemAllocFromPoolAsync, CUresult (*)(CUdeviceptr *, size_t, CUmemoryPool, CUstream)),
       "the virtual memory entry points have the prototypes cuda_impl.h gives them");

    /* module images */
    is_int(GM_FATBINC_WRAPPER_MAGIC, FATBINC_MAGIC, "FATBINC_MAGIC");
    is_int(GM_ELF_EM_CUDA, EM_CUDA, "EM_CUDA");
    CHECK_SIZE(gm_cu_fatbin_wrapper, __fatBinC_Wrapper_t)
    WRAPPER_FIELDS(CHECK_FIELD_WRAPPER)

    done_testing();
    return exit_status();
}
