/* fault-walk.h - what the scenarios of make check-faults
 * (fault-walk-scenarios.c) share with the walk (fault-walk.c): a
 * scenario's result, CHECKED, TRY and KEEP, which hold every call to the
 * rule of gpumem/status.h, the dtypes and the pooled variant the walk
 * sets before each run, and the list of scenarios. */
#ifndef GPUMEM_TEST_FAULT_WALK_H
#define GPUMEM_TEST_FAULT_WALK_H

#include <stddef.h>

#include <gpumem.h>

/* A scenario's result: a status, or WRONG when it succeeded with wrong values. */
#define WRONG (-2)
#define RESULT(st, good) ((st) == GPUMEM_OK && !(good) ? WRONG : (int)(st))

/* Every call below goes through CHECKED, which holds the library to the
 * rule of gpumem/status.h: after a call fails with status S,
 *  - gpumem_last_status() is S;
 *  - gpumem_last_driver_result() R is a result the walk injected, or 0;
 *    a GPUMEM_ERROR_DRIVER has one;
 *  - when R is not 0, S is the status that R maps to (or one of the
 *    re-statuses status.h lists), and the message names R as
 *    "CUDA_ERROR_X (R)" before any other driver result; a message that
 *    names one has R;
 *  - a status the message names ("GPUMEM_ERROR_X") is S.
 * Apart, and held to as well (see `misnamed`): the message begins with the
 * name of the function called ("gpumem_to_device: ..."), and names no
 * other public function as what failed ("gpumem_array_copy: " within it:
 * the library's own use of a public call, or a hard-coded name).
 * In the runs where every call after the k-th fails too, with another
 * result of another status (a lost device), the message or the result of a
 * later failure breaks it.  A call that breaks it counts one mismatch; the
 * first is described.  A call that succeeds leaves all three alone. */
void snapshot(void);
gpumem_status checked(const char *call, gpumem_status st);

#define CHECKED(call) (snapshot(), checked(#call, (call)))

#define TRY(call) \
    do { \
        if (st == GPUMEM_OK) { \
            snapshot(); \
            st = checked(#call, (call)); \
        } \
    } while (0)

/* Keeps the first failure of a cleanup call. */
#define KEEP(call) \
    do { \
        snapshot(); \
        gpumem_status kst_ = checked(#call, (call)); \
        if (st == GPUMEM_OK) \
            st = kst_; \
    } while (0)

/* Whether the run injected a failure into a free or a release, after
 * which the driver keeps that memory (fault-walk.c). */
int failed_free(void);

/* Set by the walk before each run (fault-walk.c). */
extern const gpumem_dtype *f64, *i32;
extern int pooled; /* arrays come from a device pool plugged into the context */

typedef struct scenario {
    const char *name;
    int (*run)(gpumem_context *ctx);
    int devices; /* simulated devices (GPUMEM_SIM_DEVICES); 0: one */
} scenario;

/* Every scenario (fault-walk-scenarios.c). */
extern const scenario scenarios[];
extern const size_t n_scenarios;

#endif
