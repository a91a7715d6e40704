/*
 * error.h - the calling thread's last error, and the helpers that set it.
 */
#ifndef GM_ERROR_H
#define GM_ERROR_H

#include "gpumem/status.h"

/* Sets the thread's last status and message (printf-style) and returns st,
 * so that failures read: return gm_error(GPUMEM_ERROR_X, "name: why %d", v); */
gpumem_status gm_error(gpumem_status st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Cleanup after a failure: between gm_error_hold() and gm_error_unhold()
 * (they nest) failures of the cleanup leave the thread's first error, status
 * and message, as it was:
 *     gm_error_hold(); array_free(a); gm_error_unhold(); return st; */
void gm_error_hold(void);
void gm_error_unhold(void);

/* The first failure of a sequence of steps that all run (cleanup, a list of
 * frees): st = gm_keep_first(st, step()); */
static inline gpumem_status gm_keep_first(gpumem_status st, gpumem_status next)
{
    return st != GPUMEM_OK ? st : next;
}

/* Prefixes the thread's current message with "prefix: " (keeps the status). */
gpumem_status gm_error_prefix(gpumem_status st, const char *prefix);

/* NULL-argument check: returns GPUMEM_ERROR_NULL_ARGUMENT naming the
 * argument and the function. */
#define GM_CHECK_NULL(arg) \
    do { \
        if ((arg) == NULL) \
            return gm_error(GPUMEM_ERROR_NULL_ARGUMENT, "%s: argument '%s' is NULL", __func__, #arg); \
    } while (0)

/* Debug printing to stderr, only when GPUMEM_DEBUG is set to a non-zero value. */
void gm_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* GM_ERROR_H */
