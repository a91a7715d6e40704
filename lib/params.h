/*
 * params.h - every GPUMEM_* environment variable of the library, declared
 * once in one table (params.c), as NCCL's NCCL_PARAM declares its own:
 * its name, type, range, default, when the library reads it and one line
 * of documentation.  Every read of a GPUMEM_* variable goes through the
 * table; doc/environment.md documents the same variables
 * (tests/test-params.c checks the two against each other).
 *
 * Two kinds of reads:
 *   - GM_READ_ONCE: the first read parses the variable; every later read
 *     gives the same value, or replays the same error (status and
 *     message), without looking at the environment again (one acquire
 *     load; the first read takes a lock);
 *   - GM_READ_EACH: every read looks at the environment again; the caller
 *     reads it at the moment its `when` names (each context creation, each
 *     trace start, the simulator's load, ...).
 * A bad value is GPUMEM_ERROR_INVALID_ENVIRONMENT naming the variable and
 * the value (env.h's grammar), never a silent default; unset or empty is
 * the default.
 */
#ifndef GM_PARAMS_H
#define GM_PARAMS_H

#include <stdbool.h>
#include <stdint.h>

#include "gpumem/status.h"

typedef enum gm_param_id {
    GM_P_BACKEND,
    GM_P_CUDA_LIBRARY,
    GM_P_DEBUG,
    GM_P_TRACE,
    GM_P_TRACE_STACKS,
    GM_P_SIM_DEVICES,
    GM_P_SIM_MEMORY,
    GM_P_SIM_ARCH,
    GM_P_SIM_BUSY,
    GM_P_SIM_PEERS,
    GM_P_SIM_OTHER_MEMORY,
    GM_P_SIM_FIRST_FIT,
    GM_P_SIM_HOST_MEMORY,
    GM_P_SIM_STREAM_DELAY_US,
    GM_P_SIM_FAIL,
    GM_P_SIM_NUMA,
    GM_P_ALLOCATOR,
    GM_P_MAX_PENDING_DEALLOCS_COUNT,
    GM_P_MAX_PENDING_DEALLOCS_RATIO,
    GM_P_COPY_MIN_ROW_BYTES,
    GM_P_COPY_SCRATCH_CHUNK,
    GM_P_PEER,
    GM_P_STAGING_THREADS,
    GM_P_STAGING_CHUNK,
    GM_P_STAGING_DEPTH,
    GM_P_STAGING_MIN_BYTES,
    GM_P_COUNT
} gm_param_id;

typedef enum gm_param_type {
    GM_PT_TEXT,   /* a string its reader parses (a word, a list, a path) */
    GM_PT_LONG,   /* a decimal integer in [lmin, lmax] */
    GM_PT_SIZE,   /* a size in bytes in [umin, umax] */
    GM_PT_DOUBLE  /* a decimal number in [dmin, dmax] */
} gm_param_type;

typedef enum gm_param_read { GM_READ_ONCE, GM_READ_EACH } gm_param_read;

typedef struct gm_param_def {
    const char *name;
    gm_param_type type;
    long lmin, lmax, ldflt;       /* GM_PT_LONG */
    uint64_t umin, umax, udflt;   /* GM_PT_SIZE */
    double dmin, dmax, ddflt;     /* GM_PT_DOUBLE */
    const char *dflt;             /* the default as doc/environment.md writes it */
    gm_param_read read;
    const char *when;             /* when the library reads it */
    const char *doc;              /* one line */
} gm_param_def;

/* The table, indexed by gm_param_id. */
extern const gm_param_def gm_params[GM_P_COUNT];

/* The value of a GM_PT_TEXT variable, or NULL when unset or empty (a
 * GM_READ_ONCE one: the value of the first read, kept); of a variable of
 * another type, its text as the environment has it now (for a message). */
const char *gm_param_text(gm_param_id id);

/* The value of a GM_PT_LONG variable in its range, its default when unset;
 * *is_set (may be NULL) tells whether it was set. */
gpumem_status gm_param_long(gm_param_id id, long *out, bool *is_set);

/* The value of a GM_PT_SIZE variable in its range, its default when unset. */
gpumem_status gm_param_size(gm_param_id id, uint64_t *out);

/* The value of a GM_PT_DOUBLE variable in its range, its default when unset. */
gpumem_status gm_param_double(gm_param_id id, double *out);

#endif /* GM_PARAMS_H */
