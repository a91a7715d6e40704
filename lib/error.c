/*
 * error.c - status names and the per-thread last error.
 */
#include "config.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "env.h"
#include "gpumem/status.h"

/* The thread's last failure (error.h). */
static _Thread_local gm_error_record last;
static _Thread_local unsigned long serials; /* the last serial given */

/* Failures kept by gm_keep_first while a step runs after them: a stack, as
 * steps nest (a cleanup whose own cleanup fails).  Deeper than the stack,
 * a step's failures are not recorded at all, which keeps the first too. */
#define GM_KEPT_MAX 4
static _Thread_local gm_error_record kept[GM_KEPT_MAX];
static _Thread_local int kept_depth;

static const struct {
    const char *name;
    const char *description;
} status_table[GPUMEM_STATUS_COUNT] = {
    [GPUMEM_OK] = {"GPUMEM_OK", "success"},
    [GPUMEM_ERROR_NULL_ARGUMENT] = {"GPUMEM_ERROR_NULL_ARGUMENT", "a required argument is NULL"},
    [GPUMEM_ERROR_INVALID_VALUE] = {"GPUMEM_ERROR_INVALID_VALUE", "invalid argument value"},
    [GPUMEM_ERROR_INVALID_ENVIRONMENT] = {"GPUMEM_ERROR_INVALID_ENVIRONMENT",
                                          "invalid value in the environment or ~/.cuda-device"},
    [GPUMEM_ERROR_OUT_OF_MEMORY] = {"GPUMEM_ERROR_OUT_OF_MEMORY", "out of device memory"},
    [GPUMEM_ERROR_HOST_OUT_OF_MEMORY] = {"GPUMEM_ERROR_HOST_OUT_OF_MEMORY", "out of host memory"},
    [GPUMEM_ERROR_DRIVER_NOT_FOUND] = {"GPUMEM_ERROR_DRIVER_NOT_FOUND",
                                       "the CUDA driver could not be loaded"},
    [GPUMEM_ERROR_NO_DEVICE] = {"GPUMEM_ERROR_NO_DEVICE", "no usable device"},
    [GPUMEM_ERROR_INVALID_DEVICE] = {"GPUMEM_ERROR_INVALID_DEVICE", "no such device"},
    [GPUMEM_ERROR_DEVICE_UNAVAILABLE] = {"GPUMEM_ERROR_DEVICE_UNAVAILABLE",
                                         "the device is busy or unavailable"},
    [GPUMEM_ERROR_DRIVER] = {"GPUMEM_ERROR_DRIVER", "driver error"},
    [GPUMEM_ERROR_NOT_SUPPORTED] = {"GPUMEM_ERROR_NOT_SUPPORTED", "not supported by the device or driver"},
    [GPUMEM_ERROR_NOT_SIMULATED] = {"GPUMEM_ERROR_NOT_SIMULATED", "not available on the simulator backend"},
    [GPUMEM_ERROR_NOT_READY] = {"GPUMEM_ERROR_NOT_READY", "asynchronous work is not complete"},
    [GPUMEM_ERROR_INVALID_STATE] = {"GPUMEM_ERROR_INVALID_STATE", "object in the wrong state"},
    [GPUMEM_ERROR_CONTEXT_MISMATCH] = {"GPUMEM_ERROR_CONTEXT_MISMATCH", "objects of different contexts"},
    [GPUMEM_ERROR_OVERFLOW] = {"GPUMEM_ERROR_OVERFLOW", "size overflow"},
    [GPUMEM_ERROR_NEGATIVE_DIMENSION] = {"GPUMEM_ERROR_NEGATIVE_DIMENSION", "negative dimension"},
    [GPUMEM_ERROR_TOO_MANY_DIMENSIONS] = {"GPUMEM_ERROR_TOO_MANY_DIMENSIONS", "too many dimensions"},
    [GPUMEM_ERROR_SHAPE_MISMATCH] = {"GPUMEM_ERROR_SHAPE_MISMATCH", "shapes differ"},
    [GPUMEM_ERROR_DTYPE_MISMATCH] = {"GPUMEM_ERROR_DTYPE_MISMATCH", "dtypes differ"},
    [GPUMEM_ERROR_INVALID_RESHAPE] = {"GPUMEM_ERROR_INVALID_RESHAPE", "invalid new shape"},
    [GPUMEM_ERROR_COPY_REQUIRED] = {"GPUMEM_ERROR_COPY_REQUIRED", "no view exists; a copy is required"},
    [GPUMEM_ERROR_INVALID_SECTION] = {"GPUMEM_ERROR_INVALID_SECTION", "split section must be positive"},
    [GPUMEM_ERROR_INDEX_OUT_OF_RANGE] = {"GPUMEM_ERROR_INDEX_OUT_OF_RANGE", "index out of range"},
    [GPUMEM_ERROR_ZERO_STEP] = {"GPUMEM_ERROR_ZERO_STEP", "slice step is zero"},
    [GPUMEM_ERROR_INVALID_ORDER] = {"GPUMEM_ERROR_INVALID_ORDER", "order must be 'C', 'F' or 'A'"},
    [GPUMEM_ERROR_INVALID_DTYPE] = {"GPUMEM_ERROR_INVALID_DTYPE", "invalid dtype"},
    [GPUMEM_ERROR_NOT_FOUND] = {"GPUMEM_ERROR_NOT_FOUND", "not found"},
    [GPUMEM_ERROR_LAUNCH_FAILED] = {"GPUMEM_ERROR_LAUNCH_FAILED", "kernel launch failed"},
    [GPUMEM_ERROR_INTERNAL] = {"GPUMEM_ERROR_INTERNAL", "internal error in libgpumem"},
};

GPUMEM_API const char *gpumem_status_string(gpumem_status status)
{
    if ((unsigned)status < GPUMEM_STATUS_COUNT)
        return status_table[status].name;
    return "GPUMEM_STATUS_UNKNOWN";
}

GPUMEM_API const char *gpumem_status_description(gpumem_status status)
{
    if ((unsigned)status < GPUMEM_STATUS_COUNT)
        return status_table[status].description;
    return "unknown status code";
}

GPUMEM_API const char *gpumem_last_error(void)
{
    return last.message;
}

GPUMEM_API gpumem_status gpumem_last_status(void)
{
    return last.status;
}

GPUMEM_API int gpumem_last_driver_result(void)
{
    return last.result;
}

const char *gm_error_message(void)
{
    return last.message;
}

int gm_error_result(void)
{
    return last.result;
}

unsigned long gm_error_serial(void)
{
    return last.serial;
}

/* Sets the record; fmt's arguments may point into last.message itself (a
 * message that wraps the previous one), so it is formatted aside first. */
static gpumem_status set(gpumem_status st, int result, const char *fmt, va_list ap)
{
    if (kept_depth > GM_KEPT_MAX)
        return st;
    char buf[GM_MESSAGE_MAX];
    vsnprintf(buf, sizeof buf, fmt, ap);
    memcpy(last.message, buf, sizeof buf);
    last.status = st;
    last.result = result;
    last.serial = ++serials;
    gm_debug("error %s: %s", gpumem_status_string(st), buf);
    return st;
}

gpumem_status gm_error(gpumem_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set(st, 0, fmt, ap);
    va_end(ap);
    return st;
}

gpumem_status gm_error_driver(gpumem_status st, int result, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set(st, result, fmt, ap);
    va_end(ap);
    return st;
}

gpumem_status gm_error_reword(gpumem_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set(st, last.result, fmt, ap);
    va_end(ap);
    return st;
}

gpumem_status gm_error_prefix(gpumem_status st, const char *prefix)
{
    return gm_error_reword(st, "%s: %s", prefix, last.message);
}

void gm_error_suspend(void)
{
    if (kept_depth < GM_KEPT_MAX)
        kept[kept_depth] = last;
    kept_depth++;
}

gpumem_status gm_error_resume(gpumem_status st)
{
    kept_depth--;
    if (kept_depth < GM_KEPT_MAX)
        last = kept[kept_depth];
    return st;
}

void gm_error_save(gm_error_record *r)
{
    *r = last;
}

gpumem_status gm_error_restore(const gm_error_record *r)
{
    if (kept_depth <= GM_KEPT_MAX && r != &last) {
        last = *r;
        last.serial = ++serials;
    }
    return r->status;
}

void gm_debug(const char *fmt, ...)
{
    if (!(gm_debug_flags() & GM_DEBUG_MESSAGES)) /* the list's other words: env.h */
        return;
    va_list ap;
    va_start(ap, fmt);
    fputs("gpumem: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}
