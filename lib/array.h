/*
 * array.h - the array object behind gpumem_array (private).
 */
#ifndef GM_ARRAY_H
#define GM_ARRAY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "context.h"
#include "driver.h"
#include "gpumem/array.h"
#include "layout.h"

/* Memory an owner array frees when its last reference goes. */
typedef enum gm_owned {
    GM_OWNED_NONE = 0,   /* a view, or a wrapped caller buffer */
    GM_OWNED_DEVICE,     /* cuMemAlloc */
    GM_OWNED_HOST        /* malloc */
} gm_owned;

struct gpumem_array {
    atomic_int refs;
    gpumem_memory_kind kind;
    int ndim;
    size_t itemsize;
    const gpumem_dtype *dtype;   /* retained */
    gpumem_context *ctx;         /* retained; NULL for host arrays */
    gpumem_array *base;          /* retained by views; NULL for owners */
    char *host;                  /* host address of element 0 (host-side kinds), else NULL */
    gm_cu_deviceptr dev;         /* device address of element 0 (device-side kinds), else 0 */
    gm_owned owned;
    void *alloc_host;            /* what an owner frees */
    gm_cu_deviceptr alloc_dev;
    int64_t shape[GM_MAX_NDIM];
    int64_t strides[GM_MAX_NDIM];
};

/* Whether the driver must move this array's bytes: device-side memory. */
static inline bool gm_array_on_device(const gpumem_array *a)
{
    return a->kind == GPUMEM_MEMORY_DEVICE || a->kind == GPUMEM_MEMORY_FOREIGN;
}

/* Element count (assumes a checked shape). */
int64_t gm_array_size(const gpumem_array *a);

/* A new device array of shape/strides (contiguous strides required) in ctx. */
gpumem_status gm_array_new_device(const char *what, gpumem_context *ctx, int ndim, const int64_t *shape,
                                  const int64_t *strides, const gpumem_dtype *dtype, gpumem_array **out);

/* A new host array (memory the library owns) with the given strides, which
 * must be contiguous in some axis order. */
gpumem_status gm_array_new_host(const char *what, int ndim, const int64_t *shape, const int64_t *strides,
                                const gpumem_dtype *dtype, gpumem_array **out);

/* A new array of a's kind (device, or host for host-side kinds) with a's
 * shape and contiguous strides in `order` ('C'/'F'), or like a's strides when
 * order is 0. */
gpumem_status gm_array_new_like(const char *what, const gpumem_array *a, int ndim, const int64_t *shape,
                                char order, gpumem_array **out);

#endif /* GM_ARRAY_H */
