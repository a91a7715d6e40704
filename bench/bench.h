/*
 * bench.h - what the benchmark programs of bench/ share (header-only):
 * CHECK, which ends the program with the library's message when a call
 * fails ("NAME: call: message" on standard error, NAME being BENCH_NAME,
 * which the program defines before including this), and now_us, the
 * monotonic clock in microseconds.
 */
#ifndef GPUMEM_BENCH_H
#define GPUMEM_BENCH_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <gpumem.h>

#ifndef BENCH_NAME
#error "define BENCH_NAME (the program's name, for CHECK's messages) before including bench.h"
#endif

#define CHECK(call)                                                                  \
    do {                                                                             \
        if ((call) != GPUMEM_OK) {                                                   \
            fprintf(stderr, BENCH_NAME ": %s: %s\n", #call, gpumem_last_error());    \
            exit(EXIT_FAILURE);                                                      \
        }                                                                            \
    } while (0)

static inline double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

#endif
