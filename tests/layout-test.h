/* layout-test.h - what the files of tests/test-layout share: the
 * shorthands of the cases, the printing and comparing helpers, and the
 * property tests' random draws, failure record, arrays and references
 * (written apart from lib/layout.c). */
#ifndef GPUMEM_TEST_LAYOUT_TEST_H
#define GPUMEM_TEST_LAYOUT_TEST_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpumem/status.h"
#include "layout.h"

#define D GM_SLICE_DEFAULT
#define V(...) ((const int64_t[]){__VA_ARGS__})
#define SL(...) ((const gm_slice[]){__VA_ARGS__})
#define IX GM_SLICE_INDEX

/* ---- helpers (test-layout.c) ---- */

const char *vec(const int64_t *v, int n);
bool eq(const int64_t *a, const int64_t *b, int n);

/* ---- the property tests' helpers and references (layout-props.c) ---- */

typedef struct arr {
    int ndim;
    size_t itemsize;
    int64_t shape[GM_MAX_NDIM], strides[GM_MAX_NDIM];
} arr;

extern uint64_t rng_state;
int64_t rnd(int64_t lo, int64_t hi);
bool chance(int num, int den);
extern int failures;
extern char first_failure[4096];
void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *arr_text(const arr *a);
void random_perm(int *perm, int n);
void random_array(arr *a, int64_t maxext, bool wild);
int64_t ref_count(int ndim, const int64_t *shape);
int64_t ref_offset(int ndim, const int64_t *strides, const int64_t *idx);
void ref_unravel(int64_t f, int ndim, const int64_t *shape, bool fortran, int64_t *idx);
int64_t ref_ravel(int ndim, const int64_t *shape, bool fortran, const int64_t *idx);
bool ref_contiguous(const arr *a, bool fortran);
void ref_fill(int ndim, const int64_t *shape, size_t itemsize, bool fortran, int64_t *strides);

/* ---- the families (layout-props.c, layout-props-views.c) ---- */

void prop_flags(int c);
void prop_strides(int c);
int ref_slice_axis(int64_t n, gm_slice s, int64_t *list, int64_t *len, int64_t *start, bool *dropped);
gm_slice random_slice(int64_t n);
gpumem_status do_slice(arr *a, const gm_slice *sl, int ns, arr *b, int64_t *off);
void prop_slice(int c);
void prop_transpose(int c);
void prop_reshape(int c);
void prop_view(int c);
void prop_chain(int c);
void run_family(const char *name, unsigned id, void (*fn)(int), int results, int per_result, uint64_t seed);

#endif
