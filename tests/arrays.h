/*
 * arrays.h - helpers of the array tests (header-only): driver-call counts
 * and reading a whole array back.
 */
#ifndef GPUMEM_TEST_ARRAYS_H
#define GPUMEM_TEST_ARRAYS_H

#include <gpumem.h>

/* Driver calls of one operation ("cuMemcpy2D") so far; NULL: all of them. */
static int64_t calls(const char *op) __attribute__((unused));
static int64_t calls(const char *op)
{
    uint64_t n = 0;
    gpumem_debug_driver_calls(op, &n);
    return (int64_t)n;
}

/* Reads a whole array (any kind) into a C-ordered host buffer; 1 on success. */
static int read_all(gpumem_array *a, void *out) __attribute__((unused));
static int read_all(gpumem_array *a, void *out)
{
    int ndim;
    int64_t shape[GPUMEM_MAX_NDIM];
    const gpumem_dtype *dt;
    gpumem_array_ndim(a, &ndim);
    gpumem_array_shape(a, shape);
    gpumem_array_dtype(a, &dt);
    gpumem_array *h = NULL;
    int rc = gpumem_host_array_wrap(out, ndim, shape, NULL, dt, &h) == GPUMEM_OK &&
             gpumem_array_copy(h, a, NULL) == GPUMEM_OK;
    gpumem_array_release(h);
    return rc;
}

#endif /* GPUMEM_TEST_ARRAYS_H */
