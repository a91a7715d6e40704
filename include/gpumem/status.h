/**
 * @file gpumem/status.h
 * @brief Status codes and error messages.
 *
 * Every function of the library returns a ::gpumem_status; results come back
 * through out-parameters.  On failure the calling thread's detailed message
 * (which argument, which limit, the driver's own error name) is available from
 * gpumem_last_error() until the thread's next failing call.
 *
 * @par The last failure: status, message and driver result
 * A failing call leaves one record of its failure for the calling thread:
 * gpumem_last_status(), gpumem_last_error() and gpumem_last_driver_result()
 * read its three parts, which always belong together (sqlite3's rule):
 * - gpumem_last_status() is the status the call returned;
 * - gpumem_last_error() describes that failure, and no other.  Where a call
 *   meets several failures (a copy whose wait fails and whose cleanup fails
 *   too), the first is returned and described; the later ones change
 *   nothing.  It begins with the name of the public function called
 *   ("gpumem_to_device: "), also when the failure happened in a call the
 *   library made on the way, and a failure of a driver call names the driver
 *   function and its result, such as "cuMemAlloc failed:
 *   CUDA_ERROR_OUT_OF_MEMORY (2): out of memory";
 * - gpumem_last_driver_result() is that driver result (the CUresult), or 0
 *   when the failure did not come from the driver.  The status is then the
 *   one the result maps to (a driver failure, below), except where a
 *   function's documentation says it reports the failure otherwise (for
 *   example ::GPUMEM_ERROR_NO_DEVICE when no device gives a context).
 * `make check-faults` fails every driver call of scenarios over the whole
 * API in turn, and then every call after it too, and checks these rules at
 * each failing call, the name of the function called included.
 *
 * The numeric values are part of the ABI: they never change, and new codes are
 * only ever appended.
 *
 * @par Statuses that many calls share
 * The functions' @return lists name these groups rather than repeat them:
 * - a backend failure: no backend can be used (gpumem_backend()):
 *   ::GPUMEM_ERROR_DRIVER_NOT_FOUND, ::GPUMEM_ERROR_NO_DEVICE, or
 *   ::GPUMEM_ERROR_INVALID_ENVIRONMENT for a bad GPUMEM_BACKEND;
 * - an autoinit failure: a NULL context means the autoinit context, and
 *   gpumem_autoinit() fails: the status of gpumem_context_create_default()
 *   (a backend failure, ::GPUMEM_ERROR_INVALID_ENVIRONMENT,
 *   ::GPUMEM_ERROR_INVALID_DEVICE, ::GPUMEM_ERROR_DEVICE_UNAVAILABLE,
 *   ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY, a driver failure), every time, with
 *   the message "<the call>: the autoinit context: <why>";
 * - a driver failure: a driver call failed; its CUresult maps to
 *   ::GPUMEM_ERROR_OUT_OF_MEMORY, ::GPUMEM_ERROR_NO_DEVICE,
 *   ::GPUMEM_ERROR_INVALID_DEVICE, ::GPUMEM_ERROR_DEVICE_UNAVAILABLE,
 *   ::GPUMEM_ERROR_NOT_READY, ::GPUMEM_ERROR_NOT_SUPPORTED,
 *   ::GPUMEM_ERROR_NOT_FOUND, ::GPUMEM_ERROR_LAUNCH_FAILED,
 *   ::GPUMEM_ERROR_DRIVER_NOT_FOUND (a driver too old for the device),
 *   ::GPUMEM_ERROR_NOT_SIMULATED (the simulator), or else
 *   ::GPUMEM_ERROR_DRIVER; the message names the driver function and error.
 *
 * @par Handles: one lifecycle check for every type
 * Every function checks each handle it is given, the same way for every
 * handle type (::gpumem_context, ::gpumem_array, ::gpumem_stream,
 * ::gpumem_pool, ::gpumem_host_pool, ::gpumem_registration,
 * ::gpumem_module, ::gpumem_function, ::gpumem_device_data,
 * ::gpumem_dtype, ::gpumem_event), before it reads or changes anything:
 * - NULL, where a handle is required: ::GPUMEM_ERROR_NULL_ARGUMENT
 *   (release and destroy functions take NULL as a no-op; NULL contexts and
 *   streams mean the default ones);
 * - a handle that was ended (released by its last reference, destroyed, a
 *   scope ended, a function whose module was freed), whether it is ended
 *   again or used: ::GPUMEM_ERROR_INVALID_STATE.  The call changes nothing:
 *   in particular it writes no memory that a newer handle now owns;
 * - a pointer to a handle of another type (a stream cast to a pool, a host
 *   pool passed as a device pool), or to memory that holds no handle of
 *   the library: ::GPUMEM_ERROR_INVALID_VALUE.
 *
 * The message names the function and the argument, and says what the
 * handle was: "gpumem_pool_destroy: 'pool' was destroyed already (a dead
 * device pool handle)".  Of two threads that end one handle at once,
 * exactly one succeeds and the other gets ::GPUMEM_ERROR_INVALID_STATE.
 *
 * How far this reaches: an ended handle's memory stays the library's (it
 * is quarantined, not given back to the system), so the check reads no
 * freed memory, for AddressSanitizer either, and is exact while fewer than
 * 64 handles of a similar size have been ended since by the thread that
 * ended it (by any thread, once that thread has exited), and, for pools,
 * host pools and records of many fields (objects over 1 KiB), while fewer
 * than 16 such objects have been freed since in the process.  Past that the check is best-effort: the memory may
 * belong to a newer handle (then the call acts on that handle, or reports
 * the newer handle's type) or, for large objects, be freed.
 * A handle's end is its last reference for reference-counted types: a
 * release while other references remain (a view's on its base, a pool
 * block's on its context, the kernel cache's on a module) is a rightful
 * release, and the handle stays live until the last one goes; a context or
 * a module released more often than the caller retained it while the
 * library still holds it is ::GPUMEM_ERROR_INVALID_STATE where the count
 * shows it (gpumem_context_release(), gpumem_module_release()).
 * ::gpumem_allocation handles are checked exactly, without a limit: see
 * gpumem/pool.h.  A pointer to memory the process cannot read is not
 * detected (it crashes, as any pointer does).
 */
#ifndef GPUMEM_STATUS_H
#define GPUMEM_STATUS_H

#include <gpumem/export.h>

GPUMEM_BEGIN_DECLS

/** Result of every libgpumem call. */
typedef enum gpumem_status {
    GPUMEM_OK = 0,                          /**< success */
    GPUMEM_ERROR_NULL_ARGUMENT = 1,         /**< a required pointer argument was NULL */
    GPUMEM_ERROR_INVALID_VALUE = 2,         /**< an argument is out of its domain (or a handle of another type) */
    GPUMEM_ERROR_INVALID_ENVIRONMENT = 3,   /**< an environment variable or ~/.cuda-device holds a bad value */
    GPUMEM_ERROR_OUT_OF_MEMORY = 4,         /**< device memory is exhausted */
    GPUMEM_ERROR_HOST_OUT_OF_MEMORY = 5,    /**< host (or page-locked host) memory is exhausted */
    GPUMEM_ERROR_DRIVER_NOT_FOUND = 6,      /**< the CUDA driver library could not be loaded or is too old */
    GPUMEM_ERROR_NO_DEVICE = 7,             /**< no usable device: none exists, or none gives a context */
    GPUMEM_ERROR_INVALID_DEVICE = 8,        /**< a device ordinal is out of range */
    GPUMEM_ERROR_DEVICE_UNAVAILABLE = 9,    /**< the device refuses a context (exclusive-process mode, in use) */
    GPUMEM_ERROR_DRIVER = 10,               /**< any other driver error; the message names it */
    GPUMEM_ERROR_NOT_SUPPORTED = 11,        /**< the device or driver cannot do this */
    GPUMEM_ERROR_NOT_SIMULATED = 12,        /**< the simulator backend cannot do this (kernel launches) */
    GPUMEM_ERROR_NOT_READY = 13,            /**< asynchronous work has not completed yet (a query, not a failure) */
    /**
     * The object is in the wrong state: a handle released, destroyed or
     * ended already, ended again or used (see "Handles" above for what is
     * detected), a pool allocation freed twice, a defer_cleanup or
     * auto_synchronize scope ended without a begin.
     */
    GPUMEM_ERROR_INVALID_STATE = 14,
    GPUMEM_ERROR_CONTEXT_MISMATCH = 15,     /**< objects of different contexts were used together */
    GPUMEM_ERROR_OVERFLOW = 16,             /**< a size computation overflows */
    GPUMEM_ERROR_NEGATIVE_DIMENSION = 17,   /**< a shape has a negative extent */
    GPUMEM_ERROR_TOO_MANY_DIMENSIONS = 18,  /**< more than ::GPUMEM_MAX_NDIM dimensions */
    GPUMEM_ERROR_SHAPE_MISMATCH = 19,       /**< two arrays' shapes differ where they must agree */
    GPUMEM_ERROR_DTYPE_MISMATCH = 20,       /**< two arrays' dtypes differ where they must agree */
    GPUMEM_ERROR_INVALID_RESHAPE = 21,      /**< a reshape changes the size or has more than one -1 */
    GPUMEM_ERROR_COPY_REQUIRED = 22,        /**< a view was asked for where only a copy is possible */
    GPUMEM_ERROR_INVALID_SECTION = 23,      /**< a split section is zero or negative */
    GPUMEM_ERROR_INDEX_OUT_OF_RANGE = 24,   /**< an index or slice bound is out of range */
    GPUMEM_ERROR_ZERO_STEP = 25,            /**< a slice step is zero */
    GPUMEM_ERROR_INVALID_ORDER = 26,        /**< an order character is not 'C', 'F' or 'A' */
    GPUMEM_ERROR_INVALID_DTYPE = 27,        /**< a malformed dtype, typestr or record description */
    GPUMEM_ERROR_NOT_FOUND = 28,            /**< a named symbol, key or mapping does not exist */
    GPUMEM_ERROR_LAUNCH_FAILED = 29,        /**< a kernel launch or its execution failed */
    GPUMEM_ERROR_INTERNAL = 30              /**< a bug in libgpumem: please report it */
} gpumem_status;

/** The number of status codes of this version of the headers. */
#define GPUMEM_STATUS_COUNT 31

/**
 * The name of a status code, such as "GPUMEM_ERROR_OUT_OF_MEMORY", or
 * "GPUMEM_STATUS_UNKNOWN" for a value this version does not know.
 * The string is static; never NULL.
 * @param status any value, known or not.
 * @return the status' name; never NULL.
 */
GPUMEM_API const char *gpumem_status_string(gpumem_status status);

/**
 * A one-line description of a status code, such as "out of device memory".
 * The string is static; never NULL.
 * @param status any value, known or not.
 * @return the description; never NULL.
 */
GPUMEM_API const char *gpumem_status_description(gpumem_status status);

/**
 * The calling thread's message for its last failed call: which argument,
 * which limit, the driver's own error name.  Empty ("") if this thread has
 * seen no failure.  Successful calls leave it alone (like errno); the string
 * stays valid until the thread's next failing call.  Never NULL.
 * @return the message, or ""; never NULL.
 */
GPUMEM_API const char *gpumem_last_error(void);

/**
 * The status of the calling thread's last failed call (GPUMEM_OK if none).
 * @return the last failed call's status, or ::GPUMEM_OK.
 */
GPUMEM_API gpumem_status gpumem_last_status(void);

/**
 * The driver's own result (a CUresult, such as 2 for
 * CUDA_ERROR_OUT_OF_MEMORY) behind the calling thread's last failed call,
 * the counterpart of sqlite3's extended result codes.  0 when that failure
 * did not come from a driver call (a bad argument, an exhausted host, a
 * state error), and when the thread has seen no failure.  It belongs to the
 * same failure as gpumem_last_status() and gpumem_last_error(), and changes
 * with them only.  gpumem_debug_driver_error_name() names it.  Added in
 * GPUMEM_1.1.
 * @return the last failure's CUresult, or 0.
 */
GPUMEM_API int gpumem_last_driver_result(void);

GPUMEM_END_DECLS

#endif /* GPUMEM_STATUS_H */
