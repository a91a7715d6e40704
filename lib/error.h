/*
 * error.h - the calling thread's last failure, and the helpers that set it.
 *
 * The failure is one record: a status, the driver's own result (a CUresult;
 * 0 when the failure did not come from the driver) and a message.  They are
 * only ever set together, so the message always describes the status that
 * is returned (sqlite3's rule; gpumem/status.h states it for users):
 *  - gm_error() and gm_error_driver() start a new failure;
 *  - gm_error_prefix() and gm_error_reword() say more about the failure
 *    just recorded (the driver's result stays);
 *  - gm_keep_first() runs one more step after a failure (cleanup, the rest
 *    of a list of frees) and leaves the first failure's record in place
 *    whatever the step records; gm_error_quietly() runs a step whose
 *    failure nobody reports, and leaves the record as it was;
 *  - gm_error_save() and gm_error_restore() keep a failure to give it again
 *    later (a result computed once).
 */
#ifndef GM_ERROR_H
#define GM_ERROR_H

#include "gpumem/status.h"

#define GM_MESSAGE_MAX 1024

/* Sets the thread's last failure to st, with no driver result, and the
 * message (printf-style), and returns st, so that failures read:
 *     return gm_error(GPUMEM_ERROR_X, "name: why %d", v);
 * The arguments may point into the current message. */
gpumem_status gm_error(gpumem_status st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* gm_error() for a failure that the driver reported with result (its
 * CUresult, kept for gpumem_last_driver_result()). */
gpumem_status gm_error_driver(gpumem_status st, int result, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Says more about the failure just recorded: its message becomes
 * "prefix: <message>" and its status st; its driver result stays. */
gpumem_status gm_error_prefix(gpumem_status st, const char *prefix);

/* Says more about the failure just recorded: its message becomes the
 * formatted text (which may use gm_error_message()) and its status st; its
 * driver result stays. */
gpumem_status gm_error_reword(gpumem_status st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The current failure's message and driver result (0: not the driver's). */
const char *gm_error_message(void);
int gm_error_result(void);

/* A number that changes whenever a new failure is recorded (or a saved one
 * restored), and only then: whether a callback recorded a failure. */
unsigned long gm_error_serial(void);

/* The first failure of a sequence of steps that all run: after a failure
 * (st not GPUMEM_OK), the step still runs, but what it records is undone
 * and st is kept with its message; otherwise the step's own status is the
 * result:
 *     st = gm_keep_first(st, step());
 *     return gm_keep_first(st, cleanup());
 * st is a variable (it is read twice); step is evaluated exactly once. */
#define gm_keep_first(st, step) \
    ((st) != GPUMEM_OK ? (gm_error_suspend(), (void)(step), gm_error_resume(st)) : (step))

/* Runs a step whose failure is not the caller's to report (a void
 * destructor's free): whatever it records is undone, as by gm_keep_first. */
#define gm_error_quietly(step) (gm_error_suspend(), (void)(step), (void)gm_error_resume(GPUMEM_OK))

/* The pair behind both: gm_error_suspend() keeps the current failure aside
 * (they nest); failures after it are recorded as usual, and
 * gm_error_resume() puts the kept one back and returns st.  Between them,
 * code can keep a failure that may yet be worked around with
 * gm_error_save(), and give it with gm_error_restore() if it is not. */
void gm_error_suspend(void);
gpumem_status gm_error_resume(gpumem_status st);

/* A failure kept to be given again (by a call that computes its result
 * once, such as the backend's selection). */
typedef struct gm_error_record {
    gpumem_status status;
    int result;
    unsigned long serial;
    char message[GM_MESSAGE_MAX];
} gm_error_record;

/* Copies the thread's current failure into *r. */
void gm_error_save(gm_error_record *r);

/* Makes *r the thread's current failure again; returns its status. */
gpumem_status gm_error_restore(const gm_error_record *r);

/* NULL-argument check: returns GPUMEM_ERROR_NULL_ARGUMENT naming the
 * argument and the function. */
#define GM_CHECK_NULL(arg) \
    do { \
        if ((arg) == NULL) \
            return gm_error(GPUMEM_ERROR_NULL_ARGUMENT, "%s: argument '%s' is NULL", __func__, #arg); \
    } while (0)

/* zstd's two shorthands.  GM_FORWARD_IF_ERROR returns the status of expr
 * (whose failure is recorded already) when it is a failure:
 *     GM_FORWARD_IF_ERROR(check_shape(what, a));
 * GM_RETURN_ERROR_IF returns gm_error(st, fmt, ...) when cond holds:
 *     GM_RETURN_ERROR_IF(n < 0, GPUMEM_ERROR_INVALID_VALUE, "%s: n is %d", what, n); */
#define GM_FORWARD_IF_ERROR(expr) \
    do { \
        gpumem_status gm_fst_ = (expr); \
        if (gm_fst_ != GPUMEM_OK) \
            return gm_fst_; \
    } while (0)
#define GM_RETURN_ERROR_IF(cond, st, ...) \
    do { \
        if (cond) \
            return gm_error((st), __VA_ARGS__); \
    } while (0)

/* Debug printing to stderr, only when GPUMEM_DEBUG is set to a non-zero value. */
void gm_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* GM_ERROR_H */
