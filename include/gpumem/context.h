/**
 * @file gpumem/context.h
 * @brief Backends, devices and contexts: pycuda's make_default_context,
 *        get_default_device and autoinit.
 *
 * A ::gpumem_context stands for one device's primary context, the one the
 * CUDA runtime, PyTorch, CuPy and numba use, so memory is shared with them.
 * Contexts are reference-counted: gpumem_context_retain() adds a reference,
 * gpumem_context_release() drops one, and the last drop releases the primary
 * context.  Every object made in a context (arrays, streams, events,
 * pools) holds a reference to it; when such an object holds the last one,
 * the call that ends the object (gpumem_array_release(),
 * gpumem_stream_destroy(), gpumem_event_destroy(), gpumem_pool_destroy(),
 * ...) ends the context too, and returns a failure of that end as its own,
 * named by it.
 * Wherever a function takes a context, NULL means the process-wide default
 * context of gpumem_autoinit().
 *
 * @par Choosing the default device (gpumem_context_create_default)
 * The rules of pycuda.tools.make_default_context, in order:
 *  1. the environment variable @c CUDA_DEVICE: a decimal device ordinal
 *     (`0` or digits not starting with `0`, no sign), spaces and tabs around
 *     it allowed, nothing else;
 *  2. else the first line of @c $HOME/.cuda-device, or, if that file does not
 *     exist, of @c $HOME/.cuda_device (the name pycuda's code actually reads):
 *     a regular file whose first line (64 bytes at most) is an ordinal as in
 *     @c CUDA_DEVICE (doc/environment.md has the exact rules);
 *  3. once 1 or 2 names a device there is no fallback: a bad value, a device
 *     out of range or a device that refuses a context is an error that names
 *     the variable or file and the value;
 *  4. else every device in turn, and the first that gives a context wins
 *     (a bad @c GPUMEM_* value stops the scan with
 *     ::GPUMEM_ERROR_INVALID_ENVIRONMENT);
 *  5. else ::GPUMEM_ERROR_NO_DEVICE, with a message listing what was tried.
 *
 * @par Backends
 * The environment variable @c GPUMEM_BACKEND chooses the driver backend once
 * per process: @c cuda (the NVIDIA driver, libcuda.so.1, loaded at run time;
 * @c GPUMEM_CUDA_LIBRARY may name another file), @c sim (a simulator on host
 * memory, see gpumem/debug.h and the README for its settings) or @c auto
 * (the default: cuda when the driver loads and has a device, else an error
 * that says so and names GPUMEM_BACKEND=sim).
 */
#ifndef GPUMEM_CONTEXT_H
#define GPUMEM_CONTEXT_H

#include <stddef.h>
#include <stdint.h>
#include <gpumem/export.h>
#include <gpumem/status.h>

GPUMEM_BEGIN_DECLS

/** A reference-counted handle on one device's primary context. */
typedef struct gpumem_context gpumem_context;

/** The rule that chose a context's device. Values are part of the ABI. */
typedef enum gpumem_selection {
    GPUMEM_SELECTION_EXPLICIT = 0,    /**< the caller named the device (gpumem_context_create) */
    GPUMEM_SELECTION_CUDA_DEVICE = 1, /**< the CUDA_DEVICE environment variable */
    GPUMEM_SELECTION_DEVICE_FILE = 2, /**< ~/.cuda-device (or ~/.cuda_device) */
    GPUMEM_SELECTION_SCAN = 3         /**< the first device, in order, that gave a context */
} gpumem_selection;

/** Device attributes that gpumem_device_attribute() reports. Values are part of the ABI. */
typedef enum gpumem_device_attr {
    GPUMEM_DEVICE_MULTIPROCESSORS = 0,           /**< streaming multiprocessors */
    GPUMEM_DEVICE_MAX_THREADS_PER_BLOCK = 1,
    GPUMEM_DEVICE_MAX_THREADS_PER_MULTIPROCESSOR = 2,
    GPUMEM_DEVICE_WARP_SIZE = 3,
    GPUMEM_DEVICE_MAX_SHARED_MEMORY_PER_BLOCK = 4,       /**< bytes, without opt-in */
    GPUMEM_DEVICE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 5, /**< bytes, with opt-in */
    GPUMEM_DEVICE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 6,
    GPUMEM_DEVICE_MAX_REGISTERS_PER_BLOCK = 7,
    GPUMEM_DEVICE_MAX_REGISTERS_PER_MULTIPROCESSOR = 8,
    GPUMEM_DEVICE_MAX_BLOCKS_PER_MULTIPROCESSOR = 9,
    GPUMEM_DEVICE_RESERVED_SHARED_MEMORY_PER_BLOCK = 10,
    GPUMEM_DEVICE_TOTAL_CONSTANT_MEMORY = 11,
    GPUMEM_DEVICE_CAN_MAP_HOST_MEMORY = 12,
    GPUMEM_DEVICE_MANAGED_MEMORY = 13,
    GPUMEM_DEVICE_CONCURRENT_MANAGED_ACCESS = 14,
    GPUMEM_DEVICE_UNIFIED_ADDRESSING = 15,
    GPUMEM_DEVICE_COMPUTE_MODE = 16,             /**< 0 default, 2 prohibited, 3 exclusive-process */
    GPUMEM_DEVICE_ASYNC_ENGINES = 17,
    GPUMEM_DEVICE_PCI_BUS_ID = 18,
    GPUMEM_DEVICE_PCI_DEVICE_ID = 19,
    GPUMEM_DEVICE_PCI_DOMAIN_ID = 20,
    GPUMEM_DEVICE_L2_CACHE_SIZE = 21,
    GPUMEM_DEVICE_CLOCK_RATE_KHZ = 22,
    GPUMEM_DEVICE_MEMORY_CLOCK_RATE_KHZ = 23,
    GPUMEM_DEVICE_MEMORY_BUS_WIDTH = 24,
    GPUMEM_DEVICE_TEXTURE_ALIGNMENT = 25,
    GPUMEM_DEVICE_INTEGRATED = 26
} gpumem_device_attr;

/* ---- backend ------------------------------------------------------------- */

/**
 * Chooses and loads the backend (see @c GPUMEM_BACKEND above) if that has not
 * happened yet, and gives its name, "cuda" or "sim" (a static string).
 * Fails with ::GPUMEM_ERROR_DRIVER_NOT_FOUND or ::GPUMEM_ERROR_NO_DEVICE when
 * no backend can be used; the message says why.  Every other function that
 * needs the driver does this first, and fails the same way.
 * @param[out] name "cuda" or "sim".
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, or a backend failure (::GPUMEM_ERROR_DRIVER_NOT_FOUND,
 *        ::GPUMEM_ERROR_NO_DEVICE, ::GPUMEM_ERROR_INVALID_ENVIRONMENT for a bad GPUMEM_BACKEND).
 */
GPUMEM_API gpumem_status gpumem_backend(const char **name);

/**
 * The driver's CUDA version, as cuDriverGetVersion gives it (13000 is 13.0).
 * @param[out] version the version, 1000 * major + 10 * minor.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, a backend failure or a driver failure.
 */
GPUMEM_API gpumem_status gpumem_driver_version(int *version);

/* ---- devices ------------------------------------------------------------- */

/**
 * The number of devices the backend sees.
 * @param[out] count the number of devices.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, a backend failure or a driver failure.
 */
GPUMEM_API gpumem_status gpumem_device_count(int *count);

/**
 * The device's name, NUL-terminated and truncated to fit @p size bytes.
 * @param device the device ordinal.
 * @param[out] name room for @p size bytes.
 * @param size at least 1.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE (@p size 0),
 *        ::GPUMEM_ERROR_INVALID_DEVICE, a backend failure or a driver failure.
 */
GPUMEM_API gpumem_status gpumem_device_name(int device, char *name, size_t size);

/**
 * The device's compute capability, such as 9.0.
 * @param device the device ordinal.
 * @param[out] major the major version.
 * @param[out] minor the minor version.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_DEVICE, a backend failure or a
 *        driver failure.
 */
GPUMEM_API gpumem_status gpumem_device_compute_capability(int device, int *major, int *minor);

/**
 * The device's total memory in bytes (no context is needed).
 * @param device the device ordinal.
 * @param[out] bytes the total memory.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_DEVICE, a backend failure or a
 *        driver failure.
 */
GPUMEM_API gpumem_status gpumem_device_total_memory(int device, uint64_t *bytes);

/**
 * One attribute of a device.
 * @param device the device ordinal.
 * @param attr the attribute.
 * @param[out] value its value.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE (unknown @p attr),
 *        ::GPUMEM_ERROR_INVALID_DEVICE, a backend failure or a driver failure.
 */
GPUMEM_API gpumem_status gpumem_device_attribute(int device, gpumem_device_attr attr, int *value);

/**
 * pycuda's deprecated get_default_device(default): the ordinal named by
 * CUDA_DEVICE or ~/.cuda-device (the same parsing and the same errors as
 * gpumem_context_create_default()), else @p fallback.  It checks that the
 * ordinal exists but creates no context.
 * @param fallback the ordinal when neither names one.
 * @param[out] device the ordinal.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_ENVIRONMENT,
 *        ::GPUMEM_ERROR_INVALID_DEVICE, a backend failure or a driver failure.
 */
GPUMEM_API gpumem_status gpumem_get_default_device(int fallback, int *device);

/* ---- contexts ------------------------------------------------------------ */

/**
 * A new reference on device @p device's primary context.
 * @param device the device ordinal.
 * @param[out] ctx the new reference.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_DEVICE,
 *        ::GPUMEM_ERROR_DEVICE_UNAVAILABLE, ::GPUMEM_ERROR_INVALID_ENVIRONMENT (a bad deferred-free
 *        variable), ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY, a backend failure or a driver failure.
 */
GPUMEM_API gpumem_status gpumem_context_create(int device, gpumem_context **ctx);

/**
 * pycuda's make_default_context(): a context on the device the rules above
 * choose.  gpumem_context_selection() tells which rule chose it.
 *
 * @par Example
 * Which device the rules chose, and by which rule:
 * @code{.c}
 * #include <stdio.h>
 * #include <gpumem.h>
 *
 * int main(void)
 * {
 *     gpumem_context *ctx = NULL;
 *     if (gpumem_context_create_default(&ctx) != GPUMEM_OK) {
 *         fprintf(stderr, "gpumem: %s\n", gpumem_last_error());
 *         return 1;
 *     }
 *     int device = -1;
 *     gpumem_selection rule = GPUMEM_SELECTION_SCAN;
 *     gpumem_context_get_device(ctx, &device);
 *     gpumem_context_selection(ctx, &rule);
 *     // without CUDA_DEVICE or ~/.cuda-device, on a machine whose device 0 is free:
 *     printf("device %d, chosen by %s\n", device, gpumem_selection_name(rule)); // prints: device 0, chosen by scan
 *     gpumem_context_release(ctx);
 *     return 0;
 * }
 * @endcode
 * @param[out] ctx the new reference.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_ENVIRONMENT,
 *        ::GPUMEM_ERROR_INVALID_DEVICE, ::GPUMEM_ERROR_NO_DEVICE (no device gives a context),
 *        ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY, a backend failure or a driver failure.
 */
GPUMEM_API gpumem_status gpumem_context_create_default(gpumem_context **ctx);

/**
 * Adds a reference.
 * @param ctx the context.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_STATE (its last reference went).
 */
GPUMEM_API gpumem_status gpumem_context_retain(gpumem_context *ctx);

/**
 * Drops a reference; the last one releases the primary context.  Releasing
 * NULL is a no-op that succeeds.  Releasing it again after the last
 * reference went, or passing it to any function afterwards, is
 * ::GPUMEM_ERROR_INVALID_STATE (gpumem/status.h says how far that is
 * detected); an extra release while the library's objects still hold
 * references (arrays, streams, pools of the context) cannot be told from a
 * rightful one.
 * @param ctx the context, or NULL.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_INVALID_STATE (released already), ::GPUMEM_ERROR_INVALID_VALUE (not a
 *        context), or a driver failure of the final release.
 */
GPUMEM_API gpumem_status gpumem_context_release(gpumem_context *ctx);

/**
 * The context's device ordinal (pycuda.autoinit.device).
 * @param ctx the context.
 * @param[out] device the ordinal.
 * @return ::GPUMEM_OK, or ::GPUMEM_ERROR_NULL_ARGUMENT.
 */
GPUMEM_API gpumem_status gpumem_context_get_device(const gpumem_context *ctx, int *device);

/**
 * The rule that chose the context's device.
 * @param ctx the context.
 * @param[out] rule the rule.
 * @return ::GPUMEM_OK, or ::GPUMEM_ERROR_NULL_ARGUMENT.
 */
GPUMEM_API gpumem_status gpumem_context_selection(const gpumem_context *ctx, gpumem_selection *rule);

/**
 * A short name for a selection rule: "explicit", "CUDA_DEVICE",
 * "~/.cuda-device" or "scan"; "unknown" otherwise.  Static; never NULL.
 * @param rule the rule.
 * @return the name; never NULL.
 */
GPUMEM_API const char *gpumem_selection_name(gpumem_selection rule);

/**
 * The number of references the context holds now (for tests and debugging).
 * @param ctx the context.
 * @param[out] count the references.
 * @return ::GPUMEM_OK, or ::GPUMEM_ERROR_NULL_ARGUMENT.
 */
GPUMEM_API gpumem_status gpumem_context_refcount(const gpumem_context *ctx, int *count);

/**
 * Free and total memory of the context's device, in bytes (get_memory_info).
 * NULL means the autoinit context.
 * @param ctx the context, or NULL for the autoinit context.
 * @param[out] free_bytes the free memory.
 * @param[out] total_bytes the total memory.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, an autoinit failure or a driver failure.
 */
GPUMEM_API gpumem_status gpumem_memory_info(gpumem_context *ctx, uint64_t *free_bytes,
                                            uint64_t *total_bytes);

/**
 * pycuda.autoinit: the process-wide default context, made by
 * gpumem_context_create_default() on the first call (once, also when many
 * threads call at once) and released when the process exits.  The pointer is
 * a borrowed reference: valid until exit; call gpumem_context_retain() to
 * keep it beyond that in objects of your own.  A failure is remembered and
 * reported again by every later call.
 * @param[out] ctx the autoinit context (borrowed).
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, or the remembered failure of
 *        gpumem_context_create_default().
 */
GPUMEM_API gpumem_status gpumem_autoinit(gpumem_context **ctx);

/**
 * Reads a size as the library reads its own size variables
 * (@c GPUMEM_SIM_MEMORY, @c GPUMEM_STAGING_CHUNK, ...; doc/environment.md):
 * a decimal number of bytes without sign, with an optional suffix @c K,
 * @c M, @c G or @c T (powers of 1024), optionally followed by @c B or
 * @c iB, in any case, and blanks (spaces and tabs) around it: "4096",
 * "48K", "512M", "2GiB".  Programs and the gpumem tool use it so that a
 * size reads the same on their command line as in the environment.
 * Added in GPUMEM_1.1.
 * @param text the size.
 * @param[out] bytes its value in bytes; unchanged on failure.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE (not a size, or more than
 *        2^64 - 1 bytes; the message quotes it).
 */
GPUMEM_API gpumem_status gpumem_size_parse(const char *text, uint64_t *bytes);

GPUMEM_END_DECLS

#endif /* GPUMEM_CONTEXT_H */
