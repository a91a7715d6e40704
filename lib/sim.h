/*
 * sim.h - the simulator backend: a GPU on host memory.
 *
 * gm_sim_load (declared in driver.h) fills the driver table with a simulator
 * that runs every code path of the library on a machine without a GPU, and
 * makes misuse show up the way it does on a real one.  It speaks the CUDA
 * driver ABI of cuda_abi.h: every operation answers a CUresult code.
 *
 * Settings, read once by gm_sim_load (a bad value fails the load with
 * GPUMEM_ERROR_INVALID_ENVIRONMENT naming the variable and the value):
 *   GPUMEM_SIM_DEVICES          number of devices, 1..64 (default 1)
 *   GPUMEM_SIM_MEMORY           device memory per device, a size such as
 *                               "512M", at least 1M (default 1G)
 *   GPUMEM_SIM_ARCH             sm_75 (T4-like), sm_80 (A100-like),
 *                               sm_86 (RTX 3090-like), sm_89 (RTX 4090-like),
 *                               sm_90 (H100-like, the default), sm_100
 *                               (B200-like), sm_120 (RTX 5090-like)
 *   GPUMEM_SIM_BUSY             comma-separated ordinals ("0,2") of devices
 *                               that refuse contexts, like exclusive-process
 *                               GPUs in use by another process
 *   GPUMEM_SIM_PEERS            which devices can access each other's memory:
 *                               "all" (default: every distinct pair), "none",
 *                               or symmetric pairs "0-1,2-3"
 *   GPUMEM_SIM_HOST_MEMORY      limit on page-locked host memory (allocated
 *                               plus registered), a size; 0 allows none
 *                               (default 1G)
 *   GPUMEM_SIM_STREAM_DELAY_US  0..10000000 (default 2000): how long queued
 *                               work waits before it runs unless something
 *                               synchronizes on it (see Streams)
 * (GPUMEM_SIM_FAIL, fault injection, is driver.c's.)
 *
 * Devices.  Attributes are the chosen architecture's real values (NVIDIA's
 * per-compute-capability limits; SM count, clocks and caches of the named
 * product).  A busy device reports compute mode 3 (exclusive process) and
 * its primary_ctx_retain answers CUDA_ERROR_DEVICE_UNAVAILABLE.  Every
 * device has its own PCI bus id.  The driver version is 13000.
 *
 * Contexts.  One primary context per device; retains nest.  Every operation
 * that takes a context checks that it is retained (else
 * CUDA_ERROR_INVALID_CONTEXT).  Releasing the last reference drains and
 * destroys the device's streams and events and frees its device and managed
 * allocations, as the driver does.  Page-locked host memory and host
 * registrations outlive it (they are portable here).
 *
 * Memory.  Device addresses are never host addresses: device d's allocations
 * lie at GM_SIM_DEVICE_BASE + (d << GM_SIM_DEVICE_SHIFT) + offset, bump
 * allocated and never reused, so dereferencing one on the host crashes as it
 * would with a GPU, and a stale pointer never aliases a new allocation.
 * A gap follows every allocation, so running off its end is an error too.
 * Each allocation is backed by host memory filled with GM_SIM_GARBAGE_BYTE
 * (device memory starts uninitialized).  Sizes round up to 256 bytes for the
 * capacity; mem_get_info gives capacity minus that use.  Managed memory is
 * host memory (host-accessible) counted against the device capacity.
 * Page-locked memory (mem_host_alloc, page aligned) and registered ranges
 * count, rounded out to whole pages, against GPUMEM_SIM_HOST_MEMORY and are
 * returned at once when freed.  With unified addressing every page-locked or
 * registered byte is mapped: its device pointer is its host address.
 * Copies and memsets check every device byte they touch against the live
 * allocations and answer CUDA_ERROR_INVALID_VALUE, touching nothing, when
 * one lies outside; memsets refuse pageable host memory.
 * Virtual memory (sim_vmm.c): address reservations in the same windows,
 * physical memory (cuMemCreate: a memfd, charged to the device until it is
 * released and unmapped), mappings and access rights at a granularity of
 * 2 MiB; only mapped bytes made accessible by cuMemSetAccess can be copied
 * or set; a physical handle exports as a real file descriptor that another
 * process can receive (SCM_RIGHTS) and import.  The driver's stream-ordered
 * pools (cuMemPoolCreate) answer GM_SIM_ERROR_NOT_SIMULATED.
 *
 * Streams.  Every stream, and every device's legacy default stream (NULL),
 * has a FIFO of operations run by its own worker thread.  A worker runs an
 * operation only once GPUMEM_SIM_STREAM_DELAY_US have passed since it was
 * enqueued, unless a synchronization covers it: stream_synchronize,
 * event_synchronize, ctx_synchronize, a synchronous copy or memset, and,
 * transitively, whatever the covered work waits for (an event waited for, or
 * the legacy default-stream ordering).  A synchronize therefore never waits
 * for the delay, while a missing one leaves the work undone and the data old,
 * deterministically.  stream_query and event_query never hurry work: polling
 * sees CUDA_ERROR_NOT_READY until the delay has passed.
 * Legacy default stream: work on a blocking stream waits for the work
 * enqueued before it on the device's default stream, and work on the
 * default stream waits for the work enqueued before it on every blocking
 * stream of the device; GM_CU_STREAM_NON_BLOCKING streams do neither.
 * CU_STREAM_PER_THREAD (handle 2) is the legacy default stream in the
 * simulator, for every thread: an ordering at least as strict as the
 * driver's per-thread default streams, each a blocking stream.
 * Copies and memsets with async == 0 are queued on the given stream and
 * waited for.  As on the driver, an async copy from pageable host memory
 * (not page-locked, registered or managed) copies the source into a staging
 * buffer before returning, and an async copy into pageable host memory
 * behaves synchronously.  stream_wait_event accepts events of any device.
 * Events: event_elapsed_time gives the milliseconds between the times the two
 * records ran; an event never recorded is complete.  stream_destroy drains
 * the stream, then joins its worker.  Host functions run on the worker, in
 * order; they must not call the driver (as with CUDA).
 *
 * Modules.  module_load_data reads the image (sim_image.c) without
 * compiling anything:
 *  - PTX text (NUL-terminated): it must begin with .version and have a
 *    .target sm_XX.  Kernels are the .entry definitions (.visible or not;
 *    .func device functions are not kernels, as with cuModuleGetFunction).
 *    Globals are the module-scope .global (__device__) and .const
 *    (__constant__) declarations that are not .extern, such as
 *    `.visible .const .align 4 .b8 coeffs[64];` or `.global .f32 t[4][4];`:
 *    size = type size x vector width x dimensions (a first dimension `[]`
 *    takes the initializer's length).  Literal initializers (integers,
 *    decimal floats, 0f and 0d hexadecimal float bits) are stored; what the
 *    reader cannot evaluate (addresses of symbols, generic(), .f16 and
 *    .b128 values) stays zero.  Malformed text (no .version or .target, an
 *    unknown type, unbalanced braces, a duplicate name, a statement that is
 *    not a directive) is CUDA_ERROR_INVALID_PTX, with the line in the log.
 *    Instructions are not checked: PTX the JIT would refuse for its code
 *    loads here.
 *  - a cubin (64-bit little-endian ELF, e_machine EM_CUDA): kernels are the
 *    global or weak STT_FUNC symbols of .symtab; globals are the STT_OBJECT
 *    symbols (local ones too, as nvcc writes them) of .nv.constant* and
 *    .nv.global* sections with their st_size, initialized from the section's
 *    bytes (zeros for NOBITS).  A kernel's static shared memory is its
 *    .nv.shared.<name> section, less the architecture's reserved bytes when
 *    the cubin has .nv.shared.reserved.* sections (as sm_80+ cubins do); its
 *    registers and frame size come from .nv.info (EIATTR_REGCOUNT,
 *    EIATTR_FRAME_SIZE).  The cubin's architecture is not checked against
 *    the device.
 *  - a fat binary (magic 0xBA55ED50): the simulator takes the uncompressed
 *    cubin entry of the highest architecture the device runs (same major,
 *    minor not above the device's), else the uncompressed PTX entry of the
 *    highest architecture not above the device's, and reads it as above.
 *    Compressed entries (nvcc compresses fat binaries by default) cannot be
 *    read: a fat binary with no usable uncompressed entry is
 *    CUDA_ERROR_INVALID_IMAGE saying so, or CUDA_ERROR_NO_BINARY_FOR_GPU
 *    when it has entries but none for the device.  The __fatBinC_Wrapper_t
 *    (magic 0x466243B1) is refused: pass the fat binary it points to.
 *  - anything malformed: CUDA_ERROR_INVALID_IMAGE (ELF, fat binary) or
 *    CUDA_ERROR_INVALID_PTX (text), with a one-line reason in the error log.
 * Every global gets device memory of its size in the device's window,
 * zero-filled then initialized, counted against the device capacity, and
 * freed by module_unload or the context's teardown (mem_free refuses it).
 * module_get_global gives its address and size, so copies to and from it
 * work; module_get_function gives a handle per kernel.  A module's handles
 * belong to the context it was loaded in (CUDA_ERROR_INVALID_CONTEXT
 * elsewhere; CUDA_ERROR_INVALID_HANDLE once unloaded).
 * func_get_attribute answers, for every kernel: MAX_THREADS_PER_BLOCK 1024;
 * SHARED_SIZE_BYTES the kernel's static .shared declarations (a cubin: its
 * .nv.shared.<name> section); CONST_SIZE_BYTES the module's .const bytes;
 * LOCAL_SIZE_BYTES its .local declarations (a cubin: its frame size);
 * NUM_REGS a cubin's register count, else 32 (simulated: PTX is not
 * register-allocated); PTX_VERSION the .target's
 * sm number (the device's for a cubin); BINARY_VERSION the device's compute
 * capability (major * 10 + minor); CACHE_MODE_CA 0;
 * MAX_DYNAMIC_SHARED_SIZE_BYTES 48 KiB minus the static shared bytes until
 * set (func_set_attribute: up to the architecture's opt-in limit minus the
 * static bytes); PREFERRED_SHARED_MEMORY_CARVEOUT -1 until set (-1..100).
 * Other attributes are CUDA_ERROR_INVALID_VALUE.
 *
 * Kernels are not simulated, except the library's own: a module whose image
 * is exactly the library's pack kernels' PTX (lib/kernels/pack_ptx.c) is
 * recognised at load, and launch_kernel of one of its kernels checks the
 * parameter block (kernels/pack_params.h; CUDA_ERROR_INVALID_VALUE when its
 * unit, shape or alignment does not fit the kernel, or a 32-bit kernel
 * gets a copy that needs 64 bits: CUDA_ERROR_ILLEGAL_ADDRESS, as the
 * kernel would go astray) and that every byte it touches lies in one live
 * allocation (device, managed or page-locked; another device's memory only
 * once the launching context enabled peer access to that device, as
 * unified addressing allows; else CUDA_ERROR_ILLEGAL_ADDRESS at the
 * launch, where a GPU would fault later),
 * then queues the kernel's C twin (pack_host.c) on the stream's worker, in
 * stream order like any other work.  Every other launch, and
 * occupancy_max_active_blocks of any kernel, answers
 * GM_SIM_ERROR_NOT_SIMULATED (a launch of no known kernel:
 * CUDA_ERROR_INVALID_HANDLE).
 *
 * Pointer attributes.  pointer_get_attributes answers from the allocation
 * registry, as cuPointerGetAttributes does: device and module memory have
 * memory type DEVICE; managed memory DEVICE with IS_MANAGED; page-locked
 * and registered memory HOST.  Every known byte is mapped (MAPPED 1, its
 * DEVICE_POINTER the address itself), HOST_POINTER is the address for
 * host-side memory and NULL for device memory, CONTEXT the primary context
 * of the device that made it, RANGE_START_ADDR and RANGE_SIZE the whole
 * allocation or registration.  An address the registry does not know
 * (pageable memory, freed memory, nothing) is no error, as with the driver:
 * CUDA_SUCCESS with memory type 0, CONTEXT NULL, DEVICE_ORDINAL -2 and the
 * other values 0.  Attributes other than those of cuda_abi.h's list are
 * CUDA_ERROR_INVALID_VALUE.
 *
 * Address ranges.  mem_get_address_range answers the base and size of the
 * device or managed allocation holding the address (an IPC mapping and a
 * module's global included), the same range as RANGE_START_ADDR and
 * RANGE_SIZE; any other address (host-side memory, freed memory, the gap
 * after an allocation, nothing) is CUDA_ERROR_NOT_FOUND.
 *
 * IPC.  ipc_get_mem_handle works for device allocations (not managed,
 * host or module memory, nor a mapping opened from a handle:
 * CUDA_ERROR_INVALID_VALUE).  The first export of an allocation moves its
 * bytes into a memfd mapped MAP_SHARED (after the ops queued on it ran);
 * the handle carries the process id, the memfd's number and inode, the
 * size and the device (an exported allocation holds its file descriptor
 * until it is freed).  ipc_open_mem_handle in another process opens
 * /proc/<pid>/fd/<n>, checks the inode and size, maps it and registers the
 * mapping as device memory of the calling context at a new address (not
 * charged to the device: the exporter's memory); each open makes its own
 * mapping.  A handle whose process exited or freed the allocation (the
 * number is closed, or names another file) is CUDA_ERROR_INVALID_VALUE, as
 * are bytes that are no simulator handle; in the exporting process the
 * handle is CUDA_ERROR_INVALID_CONTEXT, as with the driver.  The mapping
 * is no cuMemAlloc memory (mem_free: CUDA_ERROR_INVALID_VALUE);
 * ipc_close_mem_handle unmaps it (CUDA_ERROR_INVALID_VALUE for any other
 * address), and the context's last release drops those left open.  Like
 * CUDA's, the mapping does not keep the exporter's memory alive in the
 * exporter; its pages stay valid for the importer until it closes.
 *
 * Peers.  device_can_access_peer answers 1 for the pairs of
 * GPUMEM_SIM_PEERS (every distinct pair by default); ctx_enable_peer_access
 * records the pair (CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED the second time,
 * CUDA_ERROR_PEER_ACCESS_UNSUPPORTED for a pair that cannot,
 * CUDA_ERROR_INVALID_DEVICE for a context and itself) until the context's
 * last release.  memcpy_peer copies between device allocations of the two
 * contexts' devices (else CUDA_ERROR_INVALID_VALUE) whether or not peer
 * access is enabled, as the driver does (staging through the host); tests
 * tell the paths apart by the driver call counters (cuMemcpyPeer).
 */
#ifndef GM_SIM_H
#define GM_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "driver.h"

#define GM_SIM_MAX_DEVICES 64
#define GM_SIM_DEVICE_BASE UINT64_C(0xD000000000000000)
#define GM_SIM_DEVICE_SHIFT 48
#define GM_SIM_GARBAGE_BYTE 0xA5

/* One architecture: what differs between them (sim_arch.c). */
typedef struct gm_sim_arch {
    const char *name;  /* GPUMEM_SIM_ARCH value: "sm_90" */
    const char *model; /* "H100-like" */
    int major, minor;
    int sm_count;
    int threads_per_sm;
    int blocks_per_sm;
    int smem_per_sm;       /* bytes */
    int smem_optin;        /* per block, opted in */
    int smem_reserved;     /* per block, for the system */
    int l2_bytes;
    int clock_khz;
    int memory_clock_khz;
    int bus_width;         /* bits */
    int copy_engines;
    int ecc;
} gm_sim_arch;

/* The architecture named name (blanks around it, any ASCII case), or NULL. */
const gm_sim_arch *gm_sim_arch_find(const char *name);

/* Writes the known names, ", "-separated ("sm_75, sm_80, ..."), into buf. */
void gm_sim_arch_names(char *buf, size_t len);

/* Device ordinal's value of CUdevice_attribute attr: CUDA_SUCCESS, or
 * CUDA_ERROR_INVALID_VALUE for an attribute the simulator does not know. */
int gm_sim_arch_attribute(const gm_sim_arch *arch, int ordinal, int busy, int attr, int *value);

/* What a module image holds (sim_image.c). */
typedef struct gm_sim_image_func {
    char *name;
    size_t shared_bytes; /* static shared memory */
    size_t local_bytes;  /* .local per thread (a cubin: its frame size) */
    int num_regs;        /* a cubin's register count; 0: unknown */
} gm_sim_image_func;

typedef struct gm_sim_image_var {
    char *name;
    size_t size;
    int is_const;        /* .const (__constant__), else .global (__device__) */
    unsigned char *init; /* size bytes of initial value, or NULL for zeros */
} gm_sim_image_var;

enum { GM_SIM_IMAGE_PTX = 1, GM_SIM_IMAGE_CUBIN = 2 };

typedef struct gm_sim_image {
    int format;         /* what was read: GM_SIM_IMAGE_PTX or _CUBIN (a fat binary's choice) */
    int ptx_target;     /* the PTX's .target sm number; 0 for a cubin */
    size_t const_bytes; /* the .const variables' bytes together */
    gm_sim_image_func *funcs;
    size_t nfuncs;
    gm_sim_image_var *vars;
    size_t nvars;
} gm_sim_image;

/* Reads image[0, size) (PTX text, a cubin or a fat binary, for a device of
 * arch) into *out: CUDA_SUCCESS, or CUDA_ERROR_INVALID_PTX,
 * CUDA_ERROR_INVALID_IMAGE, CUDA_ERROR_NO_BINARY_FOR_GPU or
 * CUDA_ERROR_OUT_OF_MEMORY with a one-line reason in log (when log_size > 0)
 * and *out empty. */
int gm_sim_image_parse(const void *image, size_t size, const gm_sim_arch *arch, gm_sim_image *out,
                       char *log, size_t log_size);

/* Frees what gm_sim_image_parse filled in. */
void gm_sim_image_free(gm_sim_image *img);

/* What the allocation registry knows about an address (for pointer
 * attribute queries and tests). */
typedef enum gm_sim_mem_kind {
    GM_SIM_MEM_NONE = 0,       /* pageable host memory, or nothing */
    GM_SIM_MEM_DEVICE,         /* mem_alloc */
    GM_SIM_MEM_MANAGED,        /* mem_alloc_managed */
    GM_SIM_MEM_HOST_ALLOC,     /* mem_host_alloc */
    GM_SIM_MEM_HOST_REGISTERED /* mem_host_register */
} gm_sim_mem_kind;

typedef struct gm_sim_ptr_info {
    gm_sim_mem_kind kind;
    int device;    /* the device of the context that made it */
    uint64_t base; /* start of the allocation or registration */
    size_t size;   /* its bytes, as asked for */
    unsigned flags;
} gm_sim_ptr_info;

/* Fills info for the allocation or registration containing addr and answers
 * CUDA_SUCCESS; CUDA_ERROR_INVALID_VALUE (info->kind = GM_SIM_MEM_NONE) when
 * none does or the simulator is not loaded. */
int gm_sim_pointer_info(uint64_t addr, gm_sim_ptr_info *info);

/* Worker threads alive (streams, default streams included). */
unsigned gm_sim_live_workers(void);

/* Page-locked host bytes in use (allocated and registered, page-rounded). */
uint64_t gm_sim_host_locked_bytes(void);

#endif /* GM_SIM_H */
