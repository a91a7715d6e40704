/* sim-test.h - what the files of tests/test-sim share: the simulated
 * devices' sizes, the stream delay, the helpers that copy and compare, and
 * the sections main runs in order. */
#ifndef GPUMEM_TEST_SIM_TEST_H
#define GPUMEM_TEST_SIM_TEST_H

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "driver.h"
#include "gpumem.h"

#define MiB ((size_t)1 << 20)
#define CAPACITY (64 * MiB)
#define HOST_LIMIT (16 * MiB)
/* GPUMEM_SIM_STREAM_DELAY_US (set by main, test-sim.c), in ms: long enough
 * that a loaded machine still checks "not done yet" before it passes, short
 * enough to poll. */
#define DELAY_MS 300

gm_cu_deviceptr H(const void *p);
double now_ms(void);
int all_bytes(const void *p, int v, size_t n);
void pattern(void *p, size_t n, unsigned seed);
int h2d(gm_dctx *c, gm_cu_deviceptr d, const void *h, size_t n);
int d2h(gm_dctx *c, void *h, gm_cu_deviceptr d, size_t n);
size_t free_of(gm_dctx *c);
void test_ipc_own_thread(gm_dctx *c);
void test_address_range(gm_dctx *c);
void test_capacity(gm_dctx *c);
void test_copies(gm_dctx *c);
void test_copies_2d(gm_dctx *c);
void test_copies_3d(gm_dctx *c);
void test_pinned(gm_dctx *c);
void test_register(gm_dctx *c);
void test_managed(gm_dctx *c);
void test_streams(gm_dctx *c);
void test_events(gm_dctx *c, gm_dctx *c1);
void test_host_funcs(gm_dctx *c);
void test_release(gm_dctx **c1p);
void test_stress(gm_dctx *c0, gm_dctx *c1);

#endif
