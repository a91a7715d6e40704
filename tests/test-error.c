/* The thread's last failure (lib/error.h): status, driver result and message
 * set together; gm_keep_first keeps the first of several failures whatever
 * the later steps record; gm_error_quietly undoes a step's record; saved
 * failures come back whole; zstd's two shorthands. */
#include "config.h"

#include <string.h>

#include <gpumem.h>

#include "error.h"
#include "tap.h"

static int runs; /* how often a step ran */

static gpumem_status fail_driver(int result, const char *name)
{
    runs++;
    return gm_error_driver(GPUMEM_ERROR_DRIVER, result, "%s: cuSomething failed: CUresult %d", name, result);
}

static gpumem_status fail_plain(const char *name)
{
    runs++;
    return gm_error(GPUMEM_ERROR_INVALID_STATE, "%s: not now", name);
}

static gpumem_status succeed(void)
{
    runs++;
    return GPUMEM_OK;
}

/* A step that fails, then (as a cleanup would) runs `depth` more failing
 * steps each inside the one before, and reports what it saw of its own
 * failure while it ran. */
static int inner_saw_own;
static gpumem_status nested(int depth)
{
    char name[32];
    snprintf(name, sizeof name, "level %d", depth);
    gpumem_status st = fail_driver(100 + depth, name);
    if (gm_error_result() != 100 + depth)
        inner_saw_own = 0;
    if (depth > 0)
        st = gm_keep_first(st, nested(depth - 1));
    return st;
}

static gpumem_status forward(gpumem_status inner, int *reached)
{
    GM_FORWARD_IF_ERROR(inner);
    *reached = 1;
    return GPUMEM_OK;
}

static gpumem_status refuse(int n)
{
    GM_RETURN_ERROR_IF(n < 0, GPUMEM_ERROR_INVALID_VALUE, "refuse: n is %d", n);
    return GPUMEM_OK;
}

int main(void)
{
    plan(21);

    /* A new failure sets the three parts together. */
    is_int(fail_driver(719, "first"), GPUMEM_ERROR_DRIVER, "gm_error_driver returns its status");
    ok(gpumem_last_status() == GPUMEM_ERROR_DRIVER && gpumem_last_driver_result() == 719 &&
           strcmp(gpumem_last_error(), "first: cuSomething failed: CUresult 719") == 0,
       "status, driver result and message are the failure's");
    fail_plain("plain");
    ok(gpumem_last_status() == GPUMEM_ERROR_INVALID_STATE && gpumem_last_driver_result() == 0,
       "gm_error: a failure that is not the driver's has driver result 0");

    /* Rewording keeps the driver result; the words may quote the message. */
    fail_driver(2, "alloc");
    gm_error_prefix(GPUMEM_ERROR_OUT_OF_MEMORY, "outer");
    ok(gpumem_last_status() == GPUMEM_ERROR_OUT_OF_MEMORY && gpumem_last_driver_result() == 2 &&
           strcmp(gpumem_last_error(), "outer: alloc: cuSomething failed: CUresult 2") == 0,
       "gm_error_prefix: the same failure, said more fully");
    gm_error_reword(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s (page-locked)", gm_error_message());
    ok(gpumem_last_status() == GPUMEM_ERROR_HOST_OUT_OF_MEMORY && gpumem_last_driver_result() == 2 &&
           strcmp(gpumem_last_error(), "outer: alloc: cuSomething failed: CUresult 2 (page-locked)") == 0,
       "gm_error_reword: new words and status, its driver result kept");

    /* gm_keep_first: the first failure's record stays whole. */
    gpumem_status st = fail_driver(999, "copy");
    runs = 0;
    st = gm_keep_first(st, fail_plain("free"));
    is_int(st, GPUMEM_ERROR_DRIVER, "gm_keep_first after a failure returns the first status");
    is_int(runs, 1, "the later step ran, once");
    ok(gpumem_last_status() == GPUMEM_ERROR_DRIVER && gpumem_last_driver_result() == 999 &&
           strcmp(gpumem_last_error(), "copy: cuSomething failed: CUresult 999") == 0,
       "the later step's failure left no trace: status, result and message are the first's");
    st = gm_keep_first(st, fail_driver(1, "free again"));
    ok(st == GPUMEM_ERROR_DRIVER && gpumem_last_driver_result() == 999, "a later driver failure neither");

    st = GPUMEM_OK;
    runs = 0;
    st = gm_keep_first(st, succeed());
    st = gm_keep_first(st, fail_plain("second step"));
    st = gm_keep_first(st, fail_driver(3, "third step"));
    ok(st == GPUMEM_ERROR_INVALID_STATE && runs == 3 && strcmp(gpumem_last_error(), "second step: not now") == 0 &&
           gpumem_last_driver_result() == 0,
       "without an earlier failure, the first step that fails is the record");

    /* Nested cleanups, deeper than the saved stack. */
    for (int depth = 1; depth <= 8; depth += 7) {
        inner_saw_own = 1;
        st = nested(depth);
        char want[64];
        snprintf(want, sizeof want, "level %d: cuSomething failed: CUresult %d", depth, 100 + depth);
        ok(st == GPUMEM_ERROR_DRIVER && gpumem_last_driver_result() == 100 + depth &&
               strcmp(gpumem_last_error(), want) == 0,
           "%d nested cleanups that fail: the outermost failure is the record", depth);
    }
    inner_saw_own = 1;
    nested(3);
    ok(inner_saw_own, "a step run after a failure sees its own failure while it runs");

    /* gm_error_quietly: a step nobody reports. */
    fail_plain("before");
    unsigned long serial = gm_error_serial();
    runs = 0;
    gm_error_quietly(fail_driver(5, "destructor"));
    ok(runs == 1 && gpumem_last_status() == GPUMEM_ERROR_INVALID_STATE && gpumem_last_driver_result() == 0 &&
           strcmp(gpumem_last_error(), "before: not now") == 0 && gm_error_serial() == serial,
       "gm_error_quietly runs the step and leaves the record as it was");
    fail_plain("after");
    ok(gm_error_serial() != serial, "a new failure changes the serial");

    /* A failure saved and given again. */
    gm_error_record saved;
    fail_driver(46, "selection");
    gm_error_save(&saved);
    fail_plain("in between");
    serial = gm_error_serial();
    is_int(gm_error_restore(&saved), GPUMEM_ERROR_DRIVER, "gm_error_restore returns the saved status");
    ok(gpumem_last_driver_result() == 46 && strcmp(gpumem_last_error(), "selection: cuSomething failed: CUresult 46") == 0,
       "and makes it the record again, driver result included");
    ok(gm_error_serial() != serial, "a restored failure is a new one to a watcher");

    /* zstd's shorthands. */
    int reached = 0;
    fail_plain("inner");
    ok(forward(GPUMEM_ERROR_INVALID_STATE, &reached) == GPUMEM_ERROR_INVALID_STATE && !reached,
       "GM_FORWARD_IF_ERROR returns a failure");
    ok(forward(GPUMEM_OK, &reached) == GPUMEM_OK && reached, "and goes on after success");
    ok(refuse(-3) == GPUMEM_ERROR_INVALID_VALUE && strcmp(gpumem_last_error(), "refuse: n is -3") == 0 &&
           refuse(1) == GPUMEM_OK,
       "GM_RETURN_ERROR_IF records and returns its failure when its condition holds");
    return exit_status();
}
