/*
 * promises.h - the check of the promise tests (header-only): a call's
 * status, a message that begins with the public function called and names
 * the argument, and gpumem_last_status() equal to the status.
 */
#ifndef GPUMEM_TEST_PROMISES_H
#define GPUMEM_TEST_PROMISES_H

#include <string.h>

#include <gpumem.h>

#include "tap.h"

/* One failing call: the status, a message that begins with the function's
 * name and contains the needle, the last status equal to the status, and
 * no driver result for an argument failure. */
static void check(gpumem_status got, gpumem_status want, const char *needle, const char *expr)
    __attribute__((unused));
static void check(gpumem_status got, gpumem_status want, const char *needle, const char *expr)
{
    char fn[128];
    size_t n = strcspn(expr, "(");
    if (n >= sizeof fn - 3)
        n = sizeof fn - 3;
    memcpy(fn, expr, n);
    memcpy(fn + n, ": ", 3);
    const char *msg = gpumem_last_error();
    int st = got == want;
    int begins = want == GPUMEM_OK || strncmp(msg, fn, strlen(fn)) == 0;
    int named = want == GPUMEM_OK || needle == NULL || strstr(msg, needle) != NULL;
    int last = want == GPUMEM_OK || gpumem_last_status() == want;
    ok(st && begins && named && last, "%s -> %s", expr, gpumem_status_string(want));
    if (!st)
        diag("  got %s: %s", gpumem_status_string(got), msg);
    else if (!begins || !named)
        diag("  message '%s' should begin with '%s' and name '%s'", msg, fn, needle ? needle : "");
    else if (!last)
        diag("  gpumem_last_status() is %s", gpumem_status_string(gpumem_last_status()));
}

#define BAD(call, want, needle) check((call), (want), (needle), #call)
#define GOOD(call) check((call), GPUMEM_OK, NULL, #call)

#endif /* GPUMEM_TEST_PROMISES_H */
