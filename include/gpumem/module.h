/**
 * @file gpumem/module.h
 * @brief The kernel cache: module images loaded once per context, their
 *        kernels and globals, launches, and numba's const.array_like.
 *
 * gpumem_module_load() is pycuda's kernel cache (context_dependent_memoize
 * around a module load): the first call for an image in a context loads it
 * with the driver; later calls with the same bytes, from any thread, give
 * the same ::gpumem_module without a driver call.  The cache is keyed by the
 * context and the image's content (a 64-bit FNV-1a hash and the length pick
 * the entry, a full comparison of the bytes confirms it), so an image built
 * at run time and a static one with the same bytes share one module.
 *
 * @par Images
 * What cuModuleLoadData takes: PTX text, a cubin (CUDA ELF) or a fat
 * binary (nvcc's .fatbin, magic 0xBA55ED50; the __fatBinC_Wrapper_t that
 * nvcc's host code registers, magic 0x466243B1, is followed to the fat
 * binary it points to).  A PTX that does not compile fails with the JIT's
 * error log in gpumem_last_error().  Tests and small programs can embed
 * hand-written PTX as a string and need no compiler.
 *
 * @par Lifetime
 * Modules are reference-counted.  The cache holds one reference that holds
 * no reference on the context (the cache never keeps a context alive); each
 * gpumem_module_load() and gpumem_module_retain() gives the caller one more,
 * which does hold the context, and gpumem_module_release() drops it.  The
 * module is unloaded when the cache's reference is gone too: at
 * gpumem_clear_context_caches() or at the context's final release.  A
 * ::gpumem_function belongs to its module (no release of its own) and is
 * valid while the module is.  Kernels launched asynchronously must finish
 * before their module is unloaded: keep a reference until the stream is
 * synchronized.
 *
 * @par The simulator
 * The simulator backend loads modules (PTX text, cubins, and fat binaries
 * that hold an uncompressed cubin or PTX for its architecture), caches
 * them, looks kernels and globals up, and gives globals device memory
 * (initialized from the image), so gpumem_module_get_global() and
 * gpumem_const_array_like() work there.  It reads a PTX's declarations but
 * compiles nothing: a PTX whose instructions the JIT would refuse loads
 * there, and kernel attributes are plausible values (32 registers).  It does not run kernels:
 * gpumem_launch() and gpumem_function_max_active_blocks() return
 * ::GPUMEM_ERROR_NOT_SIMULATED there.  The one exception is the library's
 * own pack kernels, which the copy engine loads through this cache and
 * which the simulator runs natively, so that every copy path runs there.
 */
#ifndef GPUMEM_MODULE_H
#define GPUMEM_MODULE_H

#include <stddef.h>
#include <stdint.h>
#include <gpumem/export.h>
#include <gpumem/status.h>
#include <gpumem/context.h>
#include <gpumem/stream.h>
#include <gpumem/array.h>

GPUMEM_BEGIN_DECLS

/** A module loaded in a context (reference-counted; see Lifetime). */
typedef struct gpumem_module gpumem_module;

/** A kernel of a module: valid as long as its module. */
typedef struct gpumem_function gpumem_function;

/**
 * Kernel attributes (cuFuncGetAttribute's CUfunction_attribute, same
 * values).  Values are part of the ABI.
 */
typedef enum gpumem_function_attr {
    GPUMEM_FUNCTION_MAX_THREADS_PER_BLOCK = 0,  /**< the most threads a block of this kernel may have */
    GPUMEM_FUNCTION_SHARED_SIZE_BYTES = 1,      /**< static shared memory per block, bytes */
    GPUMEM_FUNCTION_CONST_SIZE_BYTES = 2,       /**< user constant memory, bytes */
    GPUMEM_FUNCTION_LOCAL_SIZE_BYTES = 3,       /**< local memory per thread, bytes */
    GPUMEM_FUNCTION_NUM_REGS = 4,               /**< registers per thread */
    GPUMEM_FUNCTION_PTX_VERSION = 5,            /**< virtual architecture it was compiled for (major * 10 + minor) */
    GPUMEM_FUNCTION_BINARY_VERSION = 6,         /**< architecture of its binary (major * 10 + minor) */
    GPUMEM_FUNCTION_CACHE_MODE_CA = 7,          /**< 1 when compiled with -Xptxas --dlcm=ca */
    GPUMEM_FUNCTION_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8, /**< dynamic shared memory a launch may ask for (settable) */
    GPUMEM_FUNCTION_PREFERRED_SHARED_MEMORY_CARVEOUT = 9 /**< shared memory carveout hint, percent, -1 none (settable) */
} gpumem_function_attr;

/**
 * Loads @p image in @p ctx (NULL: the autoinit context), once per context
 * and image content, and gives a new reference to the cached module.
 * @p size is the image's length in bytes; 0 means the image says it itself:
 * NUL-terminated PTX text, a cubin (from its ELF headers) or a fat binary
 * (from its header).  PTX text given with a size needs no NUL terminator;
 * a trailing NUL is not part of the key, so the same text with and without
 * one is one module.  A malformed image is ::GPUMEM_ERROR_DRIVER (the
 * driver's CUDA_ERROR_INVALID_PTX or CUDA_ERROR_INVALID_IMAGE) with the
 * JIT's or loader's log in the message; an empty one is
 * ::GPUMEM_ERROR_INVALID_VALUE.
 * @param ctx the context, or NULL for the autoinit context.
 * @param[in] image PTX, cubin or fat binary.
 * @param size its length in bytes, or 0.
 * @param[out] module a new reference.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE (an empty image, or one whose
 *        size cannot be read), ::GPUMEM_ERROR_DRIVER (a malformed image), ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY,
 *        an autoinit failure or another driver failure.
 */
GPUMEM_API gpumem_status gpumem_module_load(gpumem_context *ctx, const void *image, size_t size,
                                            gpumem_module **module);

/**
 * Adds a reference (which holds the module's context).
 * @param module the module.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_STATE (the module was freed).
 */
GPUMEM_API gpumem_status gpumem_module_retain(gpumem_module *module);

/**
 * Drops a reference of gpumem_module_load() or gpumem_module_retain(); NULL is a no-op.
 * Releasing more often than loading and retaining is ::GPUMEM_ERROR_INVALID_STATE: the callers'
 * references are counted apart from the kernel cache's, so this holds while the cache keeps the module.
 * Once the module is freed (its last reference went and the cache dropped it: gpumem_clear_context_caches(),
 * or the context's end), it and its functions are dead handles (gpumem/status.h).
 * @param module the module, or NULL.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_INVALID_STATE (released too often), or a driver failure unloading it.
 */
GPUMEM_API gpumem_status gpumem_module_release(gpumem_module *module);

/**
 * The module's context (borrowed).
 * @param module the module.
 * @param[out] ctx its context.
 * @return ::GPUMEM_OK, or ::GPUMEM_ERROR_NULL_ARGUMENT.
 */
GPUMEM_API gpumem_status gpumem_module_context(const gpumem_module *module, gpumem_context **ctx);

/**
 * The kernel (a PTX .entry, a `__global__` function; C++ names are
 * mangled unless declared `extern "C"`) named @p name.  The driver is asked
 * once per module and name; later calls give the same handle.  An unknown
 * name is ::GPUMEM_ERROR_NOT_FOUND.
 * @param module the module.
 * @param name the kernel's name.
 * @param[out] function the kernel (valid as long as the module).
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_NOT_FOUND,
 *        ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY, or a driver failure.
 */
GPUMEM_API gpumem_status gpumem_module_get_function(gpumem_module *module, const char *name,
                                                    gpumem_function **function);

/**
 * The device address and size of the module's `__device__` (.global) or
 * `__constant__` (.const) variable @p name, looked up once per module and
 * name.  @p pointer or @p bytes may be NULL.  An unknown name is
 * ::GPUMEM_ERROR_NOT_FOUND.
 * @param module the module.
 * @param name the variable's name.
 * @param[out] pointer its device address, or NULL.
 * @param[out] bytes its size, or NULL.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_NOT_FOUND,
 *        ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY, or a driver failure.
 */
GPUMEM_API gpumem_status gpumem_module_get_global(gpumem_module *module, const char *name, uint64_t *pointer,
                                                  size_t *bytes);

/**
 * The function's name (valid as long as the module).
 * @param function the function.
 * @param[out] name its name.
 * @return ::GPUMEM_OK, or ::GPUMEM_ERROR_NULL_ARGUMENT.
 */
GPUMEM_API gpumem_status gpumem_function_name(const gpumem_function *function, const char **name);

/**
 * The function's module (borrowed).
 * @param function the function.
 * @param[out] module its module.
 * @return ::GPUMEM_OK, or ::GPUMEM_ERROR_NULL_ARGUMENT.
 */
GPUMEM_API gpumem_status gpumem_function_module(const gpumem_function *function, gpumem_module **module);

/**
 * A kernel attribute: registers, shared, constant and local memory, ...
 * @param function the function.
 * @param attr the attribute.
 * @param[out] value its value.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE (unknown @p attr), or a
 *        driver failure.
 */
GPUMEM_API gpumem_status gpumem_function_attribute(const gpumem_function *function, gpumem_function_attr attr,
                                                   int *value);

/**
 * Sets a settable attribute: ::GPUMEM_FUNCTION_MAX_DYNAMIC_SHARED_SIZE_BYTES
 * (opting in to more than 48 KiB of shared memory per block) or
 * ::GPUMEM_FUNCTION_PREFERRED_SHARED_MEMORY_CARVEOUT.  Other attributes and
 * values the device refuses are ::GPUMEM_ERROR_INVALID_VALUE.
 * @param function the function.
 * @param attr a settable attribute.
 * @param value its new value.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE, or a driver failure.
 */
GPUMEM_API gpumem_status gpumem_function_set_attribute(gpumem_function *function, gpumem_function_attr attr,
                                                       int value);

/**
 * The driver's occupancy: how many blocks of @p block_threads threads using
 * @p shared_bytes of dynamic shared memory each fit on one multiprocessor
 * at once (cuOccupancyMaxActiveBlocksPerMultiprocessor).
 * ::GPUMEM_ERROR_NOT_SIMULATED on the simulator.
 * @param function the kernel.
 * @param block_threads threads per block, at least 1.
 * @param shared_bytes dynamic shared memory per block.
 * @param[out] blocks blocks per multiprocessor.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE (@p block_threads),
 *        ::GPUMEM_ERROR_NOT_SIMULATED, or a driver failure.
 */
GPUMEM_API gpumem_status gpumem_function_max_active_blocks(const gpumem_function *function, int block_threads,
                                                           size_t shared_bytes, int *blocks);

/**
 * Launches @p function on @p stream (NULL: the context's default stream)
 * with a grid of @p grid blocks of @p block threads (every extent at least
 * 1) and @p shared_bytes of dynamic shared memory.  @p params is
 * cuLaunchKernel's kernelParams: an array with one pointer per kernel
 * parameter, pointing at its value (NULL for a kernel without parameters).
 * The stream must belong to the function's context.  Returns once the
 * launch is queued; a failed launch is ::GPUMEM_ERROR_LAUNCH_FAILED or the
 * driver's error, and errors of the running kernel surface at the next
 * synchronization.  ::GPUMEM_ERROR_NOT_SIMULATED on the simulator.
 * @param function the kernel.
 * @param grid blocks in x, y, z.
 * @param block threads per block in x, y, z.
 * @param shared_bytes dynamic shared memory per block.
 * @param stream a stream of the function's context, or NULL.
 * @param params the kernel parameters, or NULL.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE (an extent 0),
 *        ::GPUMEM_ERROR_CONTEXT_MISMATCH, ::GPUMEM_ERROR_LAUNCH_FAILED, ::GPUMEM_ERROR_NOT_SIMULATED, or
 *        another driver failure.
 */
GPUMEM_API gpumem_status gpumem_launch(const gpumem_function *function, const unsigned grid[3],
                                       const unsigned block[3], unsigned shared_bytes, gpumem_stream *stream,
                                       void **params);

/**
 * numba's cuda.const.array_like: copies @p array (any kind and strides,
 * host or device) into the module's `__constant__` (or `__device__`)
 * variable @p symbol and gives a device array over the variable's memory,
 * with @p array's shape and dtype in C order, that kernels of the module
 * read as constant memory.  The array's bytes must fit in the symbol's
 * (fewer fill its beginning); more is ::GPUMEM_ERROR_INVALID_VALUE.  The
 * copy is queued on @p stream (NULL: done on return).  The new array holds a
 * reference on the module, so the symbol's memory stays valid while the
 * array lives; writing into it changes what the kernels read.
 * @param module the module.
 * @param symbol the variable's name.
 * @param array the data to copy in.
 * @param stream the stream of the copy, or NULL.
 * @param[out] device_array the new array over the variable.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_NOT_FOUND, ::GPUMEM_ERROR_INVALID_VALUE
 *        (too big), ::GPUMEM_ERROR_CONTEXT_MISMATCH, or the statuses of the copy (gpumem_array_copy()).
 */
GPUMEM_API gpumem_status gpumem_const_array_like(gpumem_module *module, const char *symbol,
                                                 const gpumem_array *array, gpumem_stream *stream,
                                                 gpumem_array **device_array);

GPUMEM_END_DECLS

#endif /* GPUMEM_MODULE_H */
