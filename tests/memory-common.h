/*
 * memory-common.h - helpers of the memory-report tests (test-memory.c,
 * test-memory-oom.c; header-only): the report of a context, a simulated
 * device of a given size for the child about to make its context, and
 * CHECK, which names the first failed check of a child case in its text.
 */
#ifndef GPUMEM_TEST_MEMORY_COMMON_H
#define GPUMEM_TEST_MEMORY_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpumem.h>

#include "tap.h"

#define KiB ((int64_t)1 << 10)
#define MiB ((int64_t)1 << 20)

static struct gpumem_memory_report report(gpumem_context *ctx, unsigned flags) __attribute__((unused));
static struct gpumem_memory_report report(gpumem_context *ctx, unsigned flags)
{
    struct gpumem_memory_report r;
    memset(&r, 0xab, sizeof r);
    r.size = sizeof r;
    if (gpumem_memory_report(ctx, flags, &r) != GPUMEM_OK)
        diag("gpumem_memory_report: %s", gpumem_last_error());
    return r;
}

static void new_context(const char *memory) __attribute__((unused));
static void new_context(const char *memory)
{
    if (memory != NULL)
        setenv("GPUMEM_SIM_MEMORY", memory, 1);
}

/* value[] and text carry the numbers back: 0 when each check passed, else
 * the first that failed is named in text. */
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond) && out->text[0] == '\0')                                                       \
            snprintf(out->text, sizeof out->text, __VA_ARGS__);                                    \
    } while (0)

#endif
