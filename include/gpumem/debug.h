/**
 * @file gpumem/debug.h
 * @brief Driver instrumentation for tests: call counters and fault injection.
 *
 * Every call into the driver backend goes through one dispatcher that counts
 * it and can make it fail.  Tests count driver calls to prove that a copy was
 * planned as one call, and fail the k-th call to walk every error path.
 *
 * @par Fault injection from the environment
 * With the simulator backend, @c GPUMEM_SIM_FAIL=k[:ERROR] makes the k-th
 * driver call of the process (counting from 1) fail with ERROR, a CUDA driver
 * error name such as CUDA_ERROR_OUT_OF_MEMORY or its number (default:
 * CUDA_ERROR_UNKNOWN).  gpumem_debug_fail_call() arms the same knob from code,
 * on either backend.
 */
#ifndef GPUMEM_DEBUG_H
#define GPUMEM_DEBUG_H

#include <stdint.h>
#include <gpumem/export.h>
#include <gpumem/status.h>

GPUMEM_BEGIN_DECLS

/**
 * The number of driver calls made so far in this process: all of them when
 * @p op is NULL, else those of one operation, named as the CUDA driver names
 * it ("cuMemAlloc", "cuMemcpy2D", "cuStreamSynchronize", ...).  An unknown
 * name is ::GPUMEM_ERROR_NOT_FOUND.
 */
GPUMEM_API gpumem_status gpumem_debug_driver_calls(const char *op, uint64_t *count);

/**
 * Makes the @p nth driver call from now (1 is the very next) fail with the
 * driver error @p driver_error (a CUresult value, such as 2 for
 * CUDA_ERROR_OUT_OF_MEMORY) without reaching the driver.  Only that one call
 * fails.  @p nth 0 disarms.  Replaces any earlier arming.
 */
GPUMEM_API gpumem_status gpumem_debug_fail_call(uint64_t nth, int driver_error);

/**
 * The name of a CUDA driver error code, such as "CUDA_ERROR_OUT_OF_MEMORY";
 * NULL for a code the library does not know.
 */
GPUMEM_API const char *gpumem_debug_driver_error_name(int driver_error);

GPUMEM_END_DECLS

#endif /* GPUMEM_DEBUG_H */
