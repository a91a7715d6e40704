/*
 * setup.h - the context of a test program that needs a device
 * (header-only): gpumem_test_context(), as gpumem/testing.h shows it.
 */
#ifndef GPUMEM_TEST_SETUP_H
#define GPUMEM_TEST_SETUP_H

#include <gpumem.h>

#include "tap.h"

/* A new reference to a context for the test; on a machine where
 * gpumem_test_context() says the test cannot run, the whole plan is
 * skipped with its reason; on any other failure the test bails out. */
static gpumem_context *test_context_or_skip_all(void) __attribute__((unused));
static gpumem_context *test_context_or_skip_all(void)
{
    char why[512];
    gpumem_context *ctx = NULL;
    gpumem_status st = gpumem_test_context(&ctx, why, sizeof why);
    if (st != GPUMEM_OK) {
        if (gpumem_test_should_skip(st))
            plan_skip_all(why);
        bail_out("%s", why);
    }
    return ctx;
}

#endif /* GPUMEM_TEST_SETUP_H */
