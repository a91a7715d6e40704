/* batch-test.h - what the files of tests/test-batch share: the context,
 * stream and dtype main makes, the helpers that make fields, views and
 * pinned buffers of known values, and the sections main runs in order. */
#ifndef GPUMEM_TEST_BATCH_TEST_H
#define GPUMEM_TEST_BATCH_TEST_H

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <gpumem.h>

#include "child.h"

/* The halo's field: R rows, C columns. */
enum { R = 64, C = 48 };

extern gpumem_context *ctx;
extern gpumem_stream *stream;
extern const gpumem_dtype *i32;
int32_t val(int tag, int64_t i, int64_t j);
gpumem_array *field(int tag, int64_t rows, int64_t cols);
gpumem_array *col(gpumem_array *a, int64_t j);
gpumem_array *row(gpumem_array *a, int64_t i);
gpumem_array *pinned(int64_t n, int32_t fill);
int32_t *host_of(gpumem_array *a);
int32_t *read_field(gpumem_array *d, int64_t rows, int64_t cols);
void test_bad_pair(void);
void test_collisions(void);
void test_collisions_random(void);
void test_collisions_first(void);
void test_collisions_order(void);
void test_collisions_large(void);
void test_empty(void);
void fault_injection(void);
void test_copies_lines(void);

#endif
