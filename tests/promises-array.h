/* promises-array.h - what the files of tests/test-promises-array share:
 * the context and dtypes main makes, the check of a failing call, reading
 * an int32 array back, and the sections main runs in order. */
#ifndef GPUMEM_TEST_PROMISES_ARRAY_H
#define GPUMEM_TEST_PROMISES_ARRAY_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <gpumem.h>

/* A sentinel handle pointer an output must keep. */
#define SENTINEL ((gpumem_array *)(uintptr_t)0x5a5a5a5a)

extern gpumem_context *ctx;
extern const gpumem_dtype *i32, *f32, *u8;
void fails(gpumem_status got, gpumem_status want, const char *name, const char *n1, const char *n2);
void read_i32(gpumem_array *a, int32_t *out, int64_t n);
void test_slices(void);
void test_views(void);
void test_zero_d(void);
void test_properties(void);
void test_broadcast(void);
void test_batch(void);
void test_dtypes(void);
void test_null_context(void);

#endif
