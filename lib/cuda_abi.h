/*
 * cuda_abi.h - libgpumem's own declarations of the subset of the CUDA driver
 * ABI it uses, so that building needs no CUDA headers.  Every name carries a
 * GM_/gm_ prefix so that tests/test-cuda-abi.c can include this file beside
 * the real cuda.h and check sizes, offsets and values against it.
 *
 * Values come from the driver API reference; they are ABI and never change.
 * Both backends speak this ABI: the simulator returns these result codes and
 * takes these structs, so error handling is the same code for both.
 */
#ifndef GM_CUDA_ABI_H
#define GM_CUDA_ABI_H

#include <stddef.h>
#include <stdint.h>

/* The CUDA version whose entry points (and their _v2/_v3 ABI) we request from
 * cuGetProcAddress.  Drivers from 11.3 (the first with cuGetProcAddress) hand
 * out these same versions, so they load too. */
#define GM_CUDA_API_VERSION 12000

typedef int gm_cu_result;
typedef int gm_cu_device;
typedef uint64_t gm_cu_deviceptr; /* CUdeviceptr is unsigned long long */
typedef struct gm_cu_ctx_st *gm_cu_context;
typedef struct gm_cu_stream_st *gm_cu_stream;
typedef struct gm_cu_event_st *gm_cu_event;
typedef struct gm_cu_array_st *gm_cu_array;
typedef struct gm_cu_func_st *gm_cu_function;
typedef struct gm_cu_mod_st *gm_cu_module;
typedef void (*gm_cu_host_fn)(void *user_data);

/* CUresult: X(name, value).  Every code the library names. */
#define GM_CU_RESULTS(X)                                   \
    X(CUDA_SUCCESS, 0)                                     \
    X(CUDA_ERROR_INVALID_VALUE, 1)                         \
    X(CUDA_ERROR_OUT_OF_MEMORY, 2)                         \
    X(CUDA_ERROR_NOT_INITIALIZED, 3)                       \
    X(CUDA_ERROR_DEINITIALIZED, 4)                         \
    X(CUDA_ERROR_PROFILER_DISABLED, 5)                     \
    X(CUDA_ERROR_STUB_LIBRARY, 34)                         \
    X(CUDA_ERROR_DEVICE_UNAVAILABLE, 46)                   \
    X(CUDA_ERROR_NO_DEVICE, 100)                           \
    X(CUDA_ERROR_INVALID_DEVICE, 101)                      \
    X(CUDA_ERROR_DEVICE_NOT_LICENSED, 102)                 \
    X(CUDA_ERROR_INVALID_IMAGE, 200)                       \
    X(CUDA_ERROR_INVALID_CONTEXT, 201)                     \
    X(CUDA_ERROR_MAP_FAILED, 205)                          \
    X(CUDA_ERROR_UNMAP_FAILED, 206)                        \
    X(CUDA_ERROR_ALREADY_MAPPED, 208)                      \
    X(CUDA_ERROR_NO_BINARY_FOR_GPU, 209)                   \
    X(CUDA_ERROR_NOT_MAPPED, 211)                          \
    X(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, 222)             \
    X(CUDA_ERROR_INVALID_PTX, 218)                         \
    X(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, 217)             \
    X(CUDA_ERROR_INVALID_SOURCE, 300)                      \
    X(CUDA_ERROR_FILE_NOT_FOUND, 301)                      \
    X(CUDA_ERROR_SHARED_OBJECT_INIT_FAILED, 303)           \
    X(CUDA_ERROR_OPERATING_SYSTEM, 304)                    \
    X(CUDA_ERROR_INVALID_HANDLE, 400)                      \
    X(CUDA_ERROR_ILLEGAL_STATE, 401)                       \
    X(CUDA_ERROR_NOT_FOUND, 500)                           \
    X(CUDA_ERROR_NOT_READY, 600)                           \
    X(CUDA_ERROR_ILLEGAL_ADDRESS, 700)                     \
    X(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, 701)             \
    X(CUDA_ERROR_LAUNCH_TIMEOUT, 702)                      \
    X(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, 704)         \
    X(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, 705)             \
    X(CUDA_ERROR_TOO_MANY_PEERS, 711)                      \
    X(CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE, 708)              \
    X(CUDA_ERROR_CONTEXT_IS_DESTROYED, 709)                \
    X(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, 712)      \
    X(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, 713)          \
    X(CUDA_ERROR_LAUNCH_FAILED, 719)                       \
    X(CUDA_ERROR_NOT_PERMITTED, 800)                       \
    X(CUDA_ERROR_NOT_SUPPORTED, 801)                       \
    X(CUDA_ERROR_SYSTEM_NOT_READY, 802)                    \
    X(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, 803)              \
    X(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, 804)      \
    X(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, 900)          \
    X(CUDA_ERROR_UNKNOWN, 999)

#define GM_CU_ENUM_(name, value) GM_##name = value,
enum { GM_CU_RESULTS(GM_CU_ENUM_) GM_CU_RESULT_END_ };

/* Not a CUDA code: what the simulator answers for what it cannot simulate
 * (kernel launches).  Far outside CUresult's range. */
#define GM_SIM_ERROR_NOT_SIMULATED 0x53494d00 /* "SIM\0" */

/* CUdevice_attribute: X(name, value).  The ones the library reads. */
#define GM_CU_DEVICE_ATTRS(X)                                          \
    X(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1)                    \
    X(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 2)                          \
    X(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, 3)                          \
    X(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 4)                          \
    X(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 5)                           \
    X(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, 6)                           \
    X(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, 7)                           \
    X(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 8)              \
    X(CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY, 9)                    \
    X(CU_DEVICE_ATTRIBUTE_WARP_SIZE, 10)                               \
    X(CU_DEVICE_ATTRIBUTE_MAX_PITCH, 11)                               \
    X(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, 12)                 \
    X(CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 13)                              \
    X(CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, 14)                       \
    X(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 16)                    \
    X(CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT, 17)                     \
    X(CU_DEVICE_ATTRIBUTE_INTEGRATED, 18)                              \
    X(CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, 19)                     \
    X(CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, 20)                            \
    X(CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS, 31)                      \
    X(CU_DEVICE_ATTRIBUTE_ECC_ENABLED, 32)                             \
    X(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 33)                              \
    X(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, 34)                           \
    X(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, 36)                       \
    X(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, 37)                 \
    X(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 38)                           \
    X(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 39)          \
    X(CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, 40)                      \
    X(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 41)                      \
    X(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, 50)                           \
    X(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 75)                \
    X(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 76)                \
    X(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, 81)    \
    X(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, 82)        \
    X(CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 83)                          \
    X(CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD, 84)                         \
    X(CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, 89)               \
    X(CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM, 91) \
    X(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 97)       \
    X(CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES, 100) \
    X(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, 106)          \
    X(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, 111)       \
    X(CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED, 113)      \
    X(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 115)                 \
    X(CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, 134) /* CUDA 12.2 */

#define GM_CU_ATTR_ENUM_(name, value) GM_##name = value,
enum { GM_CU_DEVICE_ATTRS(GM_CU_ATTR_ENUM_) GM_CU_DEVICE_ATTR_END_ };

/* CUfunction_attribute: X(name, value).  The ones the library reads or sets. */
#define GM_CU_FUNC_ATTRS(X)                                          \
    X(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 0)                    \
    X(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, 1)                        \
    X(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES, 2)                         \
    X(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, 3)                         \
    X(CU_FUNC_ATTRIBUTE_NUM_REGS, 4)                                 \
    X(CU_FUNC_ATTRIBUTE_PTX_VERSION, 5)                              \
    X(CU_FUNC_ATTRIBUTE_BINARY_VERSION, 6)                           \
    X(CU_FUNC_ATTRIBUTE_CACHE_MODE_CA, 7)                            \
    X(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 8)            \
    X(CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 9)

#define GM_CU_FUNC_ATTR_ENUM_(name, value) GM_##name = value,
enum { GM_CU_FUNC_ATTRS(GM_CU_FUNC_ATTR_ENUM_) GM_CU_FUNC_ATTR_END_ };

/* CUjit_option: X(name, value).  The options cuModuleLoadDataEx is given. */
#define GM_CU_JIT_OPTIONS(X)                                         \
    X(CU_JIT_INFO_LOG_BUFFER, 3)                                     \
    X(CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, 4)                          \
    X(CU_JIT_ERROR_LOG_BUFFER, 5)                                    \
    X(CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, 6)

#define GM_CU_JIT_ENUM_(name, value) GM_##name = value,
enum { GM_CU_JIT_OPTIONS(GM_CU_JIT_ENUM_) GM_CU_JIT_OPTION_END_ };

/* Module images: magic numbers that tell cuModuleLoadData's formats apart
 * (fatbinary_section.h, and the fatbin header nvcc writes; the ELF ident of
 * a cubin, whose e_machine is EM_CUDA). */
#define GM_FATBIN_MAGIC 0xBA55ED50u          /* a fat binary: 16-byte header, then entries */
#define GM_FATBINC_WRAPPER_MAGIC 0x466243B1u /* __fatBinC_Wrapper_t, pointing at a fat binary */
#define GM_ELF_EM_CUDA 190

/* __fatBinC_Wrapper_t of fatbinary_section.h: what nvcc's host code
 * registers; its data points at the fat binary. */
typedef struct gm_cu_fatbin_wrapper {
    int magic;
    int version;
    const unsigned long long *data;
    void *filename_or_fatbins;
} gm_cu_fatbin_wrapper;

/* CUmemorytype */
enum {
    GM_CU_MEMORYTYPE_HOST = 1,
    GM_CU_MEMORYTYPE_DEVICE = 2,
    GM_CU_MEMORYTYPE_ARRAY = 3,
    GM_CU_MEMORYTYPE_UNIFIED = 4
};

/* CUpointer_attribute: X(name, value).  The ones cuPointerGetAttributes is
 * asked for.  The data each one writes: CONTEXT a CUcontext; MEMORY_TYPE an
 * unsigned CUmemorytype (0: memory the driver does not know); DEVICE_POINTER,
 * RANGE_START_ADDR a CUdeviceptr; HOST_POINTER a void *; IS_MANAGED, MAPPED,
 * IS_LEGACY_CUDA_IPC_CAPABLE a boolean; DEVICE_ORDINAL an int; RANGE_SIZE a
 * size_t. */
#define GM_CU_POINTER_ATTRS(X)                                       \
    X(CU_POINTER_ATTRIBUTE_CONTEXT, 1)                               \
    X(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, 2)                           \
    X(CU_POINTER_ATTRIBUTE_DEVICE_POINTER, 3)                        \
    X(CU_POINTER_ATTRIBUTE_HOST_POINTER, 4)                          \
    X(CU_POINTER_ATTRIBUTE_IS_MANAGED, 8)                            \
    X(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, 9)                        \
    X(CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, 10)           \
    X(CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, 11)                     \
    X(CU_POINTER_ATTRIBUTE_RANGE_SIZE, 12)                           \
    X(CU_POINTER_ATTRIBUTE_MAPPED, 13)

#define GM_CU_POINTER_ATTR_ENUM_(name, value) GM_##name = value,
enum { GM_CU_POINTER_ATTRS(GM_CU_POINTER_ATTR_ENUM_) GM_CU_POINTER_ATTR_END_ };

/* CUipcMemHandle: the opaque bytes cuIpcGetMemHandle gives, passed by value
 * to cuIpcOpenMemHandle; and cuIpcOpenMemHandle's flag. */
#define GM_CU_IPC_HANDLE_SIZE 64
typedef struct gm_cu_ipc_mem_handle {
    char reserved[GM_CU_IPC_HANDLE_SIZE];
} gm_cu_ipc_mem_handle;
#define GM_CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS 0x1

/* CUcomputemode */
enum {
    GM_CU_COMPUTEMODE_DEFAULT = 0,
    GM_CU_COMPUTEMODE_PROHIBITED = 2,
    GM_CU_COMPUTEMODE_EXCLUSIVE_PROCESS = 3
};

/* Flags of cuMemHostAlloc, cuMemHostRegister, cuMemAllocManaged,
 * cuStreamCreate and cuEventCreate. */
#define GM_CU_MEMHOSTALLOC_PORTABLE 0x01
#define GM_CU_MEMHOSTALLOC_DEVICEMAP 0x02
#define GM_CU_MEMHOSTALLOC_WRITECOMBINED 0x04
#define GM_CU_MEMHOSTREGISTER_PORTABLE 0x01
#define GM_CU_MEMHOSTREGISTER_DEVICEMAP 0x02
#define GM_CU_MEMHOSTREGISTER_IOMEMORY 0x04
#define GM_CU_MEMHOSTREGISTER_READ_ONLY 0x08
#define GM_CU_MEM_ATTACH_GLOBAL 0x1
#define GM_CU_MEM_ATTACH_HOST 0x2
#define GM_CU_STREAM_DEFAULT 0x0
#define GM_CU_STREAM_NON_BLOCKING 0x1
#define GM_CU_EVENT_DEFAULT 0x0
#define GM_CU_EVENT_BLOCKING_SYNC 0x1
#define GM_CU_EVENT_DISABLE_TIMING 0x2
#define GM_CU_GET_PROC_ADDRESS_DEFAULT 0
#define GM_CU_GET_PROC_ADDRESS_LEGACY_STREAM 0x1

/* CUdriverProcAddressQueryResult: why cuGetProcAddress gave no pointer. */
enum {
    GM_CU_GET_PROC_ADDRESS_SUCCESS = 0,
    GM_CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1,
    GM_CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2
};

/* CUDA_MEMCPY2D */
typedef struct gm_cu_memcpy2d {
    size_t srcXInBytes;
    size_t srcY;
    int srcMemoryType;
    const void *srcHost;
    gm_cu_deviceptr srcDevice;
    gm_cu_array srcArray;
    size_t srcPitch;
    size_t dstXInBytes;
    size_t dstY;
    int dstMemoryType;
    void *dstHost;
    gm_cu_deviceptr dstDevice;
    gm_cu_array dstArray;
    size_t dstPitch;
    size_t WidthInBytes;
    size_t Height;
} gm_cu_memcpy2d;

/* CUDA_MEMCPY3D */
typedef struct gm_cu_memcpy3d {
    size_t srcXInBytes;
    size_t srcY;
    size_t srcZ;
    size_t srcLOD;
    int srcMemoryType;
    const void *srcHost;
    gm_cu_deviceptr srcDevice;
    gm_cu_array srcArray;
    void *reserved0;
    size_t srcPitch;
    size_t srcHeight;
    size_t dstXInBytes;
    size_t dstY;
    size_t dstZ;
    size_t dstLOD;
    int dstMemoryType;
    void *dstHost;
    gm_cu_deviceptr dstDevice;
    gm_cu_array dstArray;
    void *reserved1;
    size_t dstPitch;
    size_t dstHeight;
    size_t WidthInBytes;
    size_t Height;
    size_t Depth;
} gm_cu_memcpy3d;

/* ---- virtual memory management (cuMemCreate and friends, CUDA 10.2) and the
 * driver's stream-ordered pools (cuMemPoolCreate, CUDA 11.2): CUDA 13's ABI. */

/* CUmemGenericAllocationHandle: unsigned long long. */
typedef uint64_t gm_cu_mem_handle;
/* CUmemoryPool */
typedef struct gm_cu_mempool_st *gm_cu_mempool;

/* CUmemAllocationType, CUmemLocationType, CUmemAllocationHandleType,
 * CUmemAccess_flags, CUmemAllocationGranularity_flags (int-sized enums). */
#define GM_CU_MEM_ALLOCATION_TYPE_INVALID 0x0
#define GM_CU_MEM_ALLOCATION_TYPE_PINNED 0x1
#define GM_CU_MEM_LOCATION_TYPE_INVALID 0x0
#define GM_CU_MEM_LOCATION_TYPE_DEVICE 0x1
#define GM_CU_MEM_LOCATION_TYPE_HOST 0x2
#define GM_CU_MEM_LOCATION_TYPE_HOST_NUMA 0x3
#define GM_CU_MEM_HANDLE_TYPE_NONE 0x0
#define GM_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR 0x1
#define GM_CU_MEM_ACCESS_FLAGS_PROT_NONE 0x0
#define GM_CU_MEM_ACCESS_FLAGS_PROT_READ 0x1
#define GM_CU_MEM_ACCESS_FLAGS_PROT_READWRITE 0x3
#define GM_CU_MEM_ALLOC_GRANULARITY_MINIMUM 0x0
#define GM_CU_MEM_ALLOC_GRANULARITY_RECOMMENDED 0x1

/* CUmempool_attribute: the ones the library sets or reads (cuuint64_t values). */
#define GM_CU_MEMPOOL_ATTR_RELEASE_THRESHOLD 4
#define GM_CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT 5
#define GM_CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH 6
#define GM_CU_MEMPOOL_ATTR_USED_MEM_CURRENT 7
#define GM_CU_MEMPOOL_ATTR_USED_MEM_HIGH 8

/* CUmemLocation */
typedef struct gm_cu_mem_location {
    int type; /* CUmemLocationType */
    int id;   /* a device ordinal, or a host NUMA node */
} gm_cu_mem_location;

/* CUmemAllocationProp (CUmemAllocationProp_v1) */
typedef struct gm_cu_mem_alloc_prop {
    int type;                 /* CUmemAllocationType */
    int requestedHandleTypes; /* CUmemAllocationHandleType */
    gm_cu_mem_location location;
    void *win32HandleMetaData;
    struct {
        unsigned char compressionType;
        unsigned char gpuDirectRDMACapable;
        unsigned short usage;
        unsigned char reserved[4];
    } allocFlags;
} gm_cu_mem_alloc_prop;

/* CUmemAccessDesc */
typedef struct gm_cu_mem_access_desc {
    gm_cu_mem_location location;
    int flags; /* CUmemAccess_flags */
} gm_cu_mem_access_desc;

/* CUmemPoolProps (CUmemPoolProps_v1) */
typedef struct gm_cu_mem_pool_props {
    int allocType;   /* CUmemAllocationType */
    int handleTypes; /* CUmemAllocationHandleType */
    gm_cu_mem_location location;
    void *win32SecurityAttributes;
    size_t maxSize;
    unsigned short usage;
    unsigned char reserved[54];
} gm_cu_mem_pool_props;

/* CUmemPoolPtrExportData (CUmemPoolPtrExportData_v1): opaque bytes. */
typedef struct gm_cu_mem_pool_ptr_export_data {
    unsigned char reserved[64];
} gm_cu_mem_pool_ptr_export_data;

#endif /* GM_CUDA_ABI_H */
