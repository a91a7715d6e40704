/*
 * testing.c - pycuda's mark_cuda_test: a context for a test, or why a test
 * should skip.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "error.h"
#include "gpumem/testing.h"

GPUMEM_API gpumem_status gpumem_test_context(gpumem_context **ctx, char *reason, size_t size)
{
    if (reason == NULL && size > 0)
        return gm_error(GPUMEM_ERROR_NULL_ARGUMENT, "gpumem_test_context: argument 'reason' is NULL but size "
                        "is %zu", size);
    gpumem_context *c = NULL;
    gpumem_status st;
    if (ctx == NULL) /* the reason says so too: a failure always fills it */
        st = gm_error(GPUMEM_ERROR_NULL_ARGUMENT, "gpumem_test_context: argument 'ctx' is NULL");
    else
        st = gpumem_context_create_default(&c);
    if (st == GPUMEM_OK) {
        if (size > 0)
            reason[0] = '\0';
        *ctx = c;
        return GPUMEM_OK;
    }
    if (size > 0) {
        const char *kind;
        switch (st) {
        case GPUMEM_ERROR_DRIVER_NOT_FOUND: kind = "no CUDA driver"; break;
        case GPUMEM_ERROR_NO_DEVICE: kind = "no CUDA device"; break;
        case GPUMEM_ERROR_DEVICE_UNAVAILABLE: kind = "no CUDA device available"; break;
        default: kind = "no test context"; break;
        }
        snprintf(reason, size, "%s: %s", kind, gpumem_last_error());
        /* one line: "1..0 # SKIP <reason>" must stay a single TAP line */
        for (char *p = reason; *p != '\0'; p++)
            if (*p == '\n' || *p == '\r')
                *p = ' ';
    }
    return st;
}
