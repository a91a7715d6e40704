/* promises-pool.h - what the files of tests/test-promises-pool share:
 * the two contexts and the dtype main makes, and the checks of each part,
 * which main runs in order. */
#ifndef GPUMEM_TEST_PROMISES_POOL_H
#define GPUMEM_TEST_PROMISES_POOL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <pthread.h>
#include <gpumem.h>
#include <gpumem/testing.h>

#include "child.h"

extern gpumem_context *ctx, *ctx2;
extern const gpumem_dtype *i32;
extern const char k_ptx[]; /* a module of one kernel, PTX text (promises-pool-headers.c) */
void test_module(void);
void test_occupancy(void);
void test_peer(void);
void peer_env_checks(void);
void test_trace(void);
void trace_env_checks(void);
void test_testing(void);
void testing_env_checks(void);
void test_version(void);
void test_pool_behaviour(void);
void test_pool_threads(void);
void arch_checks(void);
void stream_checks(void);
void allocator_env_checks(void);
void case_trace_pct(const void *arg, child_result *out);

#endif
