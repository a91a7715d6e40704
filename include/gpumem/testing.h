/**
 * @file gpumem/testing.h
 * @brief Test support: pycuda's mark_cuda_test for TAP tests.
 *
 * A downstream test that needs a GPU asks for its context here, and skips
 * with the reason when the machine has none (the start of its main()):
 * @code{.c}
 * char why[256];
 * gpumem_context *ctx;
 * gpumem_status st = gpumem_test_context(&ctx, why, sizeof why);
 * if (st != GPUMEM_OK) {
 *     if (gpumem_test_should_skip(st)) {
 *         printf("1..0 # SKIP %s\n", why);
 *         return 0;
 *     }
 *     printf("Bail out! %s\n", why);
 *     return 1;
 * }
 * // ... the tests ...
 * gpumem_context_release(ctx);
 * return 0;
 * @endcode
 * The context follows the usual rules (GPUMEM_BACKEND, CUDA_DEVICE,
 * ~/.cuda-device, then the first device that gives one; see
 * gpumem/context.h), so `GPUMEM_BACKEND=sim` runs such a test on the
 * simulator, where gpumem_backend() says "sim" and tests skip what the
 * simulator cannot do (kernel launches) with their own reasons.
 */
#ifndef GPUMEM_TESTING_H
#define GPUMEM_TESTING_H

#include <stddef.h>
#include <gpumem/export.h>
#include <gpumem/status.h>
#include <gpumem/context.h>

GPUMEM_BEGIN_DECLS

/**
 * pycuda's mark_cuda_test: a new context for a test (as
 * gpumem_context_create_default() chooses it; release it with
 * gpumem_context_release()), or the reason there is none.  On failure
 * @p reason (@p size bytes, may be NULL when @p size is 0) holds one line
 * without a newline, ready for `1..0 # SKIP <reason>`, such as "no CUDA
 * device: gpumem_context_create_default: ... the cuda backend sees no
 * device", and the status says whether to skip: see
 * gpumem_test_should_skip().  On success @p reason is "".
 * @param[out] ctx the new context.
 * @param[out] reason room for @p size bytes, or NULL.
 * @param size the size of @p reason.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, or the failure of gpumem_context_create_default().
 */
GPUMEM_API gpumem_status gpumem_test_context(gpumem_context **ctx, char *reason, size_t size);

/**
 * Whether a failure of gpumem_test_context() means that this machine has
 * no usable GPU (no driver, no device, every device busy): the test should
 * skip.  Other failures (a bad CUDA_DEVICE or GPUMEM_BACKEND value, a
 * driver error of the chosen device) are misconfigurations that a test
 * should report as failures rather than hide as skips.  Without CUDA_DEVICE
 * and ~/.cuda-device, every device is tried in turn, and a scan in which no
 * device gave a context is ::GPUMEM_ERROR_NO_DEVICE, a skip, whatever each
 * device's error was: the reason names the devices tried and the driver's
 * error of the first (gpumem_last_driver_result() gives it).
 */
static inline int gpumem_test_should_skip(gpumem_status status)
{
    return status == GPUMEM_ERROR_DRIVER_NOT_FOUND || status == GPUMEM_ERROR_NO_DEVICE ||
           status == GPUMEM_ERROR_DEVICE_UNAVAILABLE;
}

GPUMEM_END_DECLS

#endif /* GPUMEM_TESTING_H */
