/* pool-test.h - what the files of tests/test-pool share: the context
 * main makes, whether it runs on the simulator, the helpers that read and
 * write pooled blocks, and the sections main runs in order. */
#ifndef GPUMEM_TEST_POOL_TEST_H
#define GPUMEM_TEST_POOL_TEST_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "child.h"
#include "gpumem.h"
#include "gpumem/pool.h"

/* The stress tests' threads, rounds and live allocations per thread. */
enum { THREADS = 8, ITERS = 20000, LIVE = 24 };

extern gpumem_context *ctx;
void mem_ok(int cond, const char *name);
int dev_write(uint64_t d, const void *src, size_t n);
uint64_t used(void);
struct gpumem_pool_stats stats_of(gpumem_pool *p);
uint64_t ptr_of(const gpumem_allocation *a);
extern atomic_int gate;
void gate_fn(void *arg);
void test_thread_caches(void);
void test_stripes(void);
void test_stress(unsigned flags, int iters);
void test_faults(void);
void test_context_end(void);
void run_tap_child(void (*section)(void));

#endif
