/* dtype-test.h - what the files of tests/test-dtype share: field
 * shorthands, the helpers that make records and read their descr and
 * typestr back, the dtypes kept until the end, and the sections main runs
 * in order. */
#ifndef GPUMEM_TEST_DTYPE_TEST_H
#define GPUMEM_TEST_DTYPE_TEST_H

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <gpumem.h>
#include <gpumem/dtype.h>

/* Fields: plain, at an offset, and a sub-array of n dimensions. */
#define F(name, dt) ((gpumem_field){(name), (dt), -1, 0, NULL})
#define FO(name, dt, off) ((gpumem_field){(name), (dt), (off), 0, NULL})
#define FS(name, dt, n, ...) ((gpumem_field){(name), (dt), -1, (n), (const int64_t[]){__VA_ARGS__}})
#define NF(a) (sizeof(a) / sizeof((a)[0]))

const gpumem_dtype *T(const char *typestr);
gpumem_dtype *record(const gpumem_field *fields, size_t n, gpumem_record_layout layout, size_t itemsize);
const char *descr_of(const gpumem_dtype *d);
const char *typestr_of(const gpumem_dtype *d);
int round_trips(const gpumem_dtype *d);
void check_record(const char *what, const gpumem_dtype *d, size_t n, const int64_t *offsets, size_t itemsize,
                  size_t alignment, const char *descr);
void fails(gpumem_status got, gpumem_status want, const char *needle1, const char *needle2, const char *what);
extern gpumem_dtype *keep[64];
extern size_t nkeep;
void test_layouts(void);
void test_accessors(void);
void test_record_errors(void);
void test_descr_parse(void);
void test_descr_buffers(void);
void test_round_trips(void);

#endif
