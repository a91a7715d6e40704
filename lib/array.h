/*
 * array.h - the array object behind gpumem_array (private).
 */
#ifndef GM_ARRAY_H
#define GM_ARRAY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "alloc.h"
#include "context.h"
#include "driver.h"
#include "gpumem/array.h"
#include "handles.h"
#include "hostreg.h"
#include "gpumem/pool.h"
#include "layout.h"

/* Memory an owner array frees when its last reference goes. */
typedef enum gm_owned {
    GM_OWNED_NONE = 0,   /* a view, or a wrapped caller buffer */
    GM_OWNED_HOST,       /* malloc (alloc_host) */
    GM_OWNED_BLOCK,      /* the context allocator's (block): device, page-locked, managed, pool */
    GM_OWNED_FOREIGN     /* memory of another owner: owner_release(owner) at the end */
} gm_owned;

struct gpumem_array {
    gm_handle h;                 /* first: the lifecycle check (handles.h) */
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
    bool readonly;               /* writes through the library are refused; views inherit it */
    bool readonly_locked;        /* the memory itself is read-only (an import): cannot be undone */
    bool ctx_borrowed;           /* ctx is not retained: the pool the block came from holds it */
    void *alloc_host;            /* GM_OWNED_HOST: what an owner frees */
    gm_block block;              /* GM_OWNED_BLOCK */
    void (*owner_release)(void *); /* GM_OWNED_FOREIGN: tells the owner the array is gone */
    void *owner;
    _Atomic uint64_t locked_memo; /* gm_array_lock_state's last answer: generation << 2 | state; 0: none */
    int64_t shape[GM_MAX_NDIM];
    int64_t strides[GM_MAX_NDIM];
};

/* Whether the driver must move this array's bytes: device-side memory. */
static inline bool gm_array_on_device(const gpumem_array *a)
{
    return a->kind == GPUMEM_MEMORY_DEVICE || a->kind == GPUMEM_MEMORY_FOREIGN;
}

/* Whether this array is page-locked host memory the library made (pinned or mapped). */
static inline bool gm_array_pinned(const gpumem_array *a)
{
    return a->kind == GPUMEM_MEMORY_PINNED || a->kind == GPUMEM_MEMORY_MAPPED;
}

/* Element count (assumes a checked shape). */
int64_t gm_array_size(const gpumem_array *a);

/* Drops a reference of array (NULL: nothing), as gpumem_array_release
 * does, for the public call `what` that drops it on the way (a copy's
 * temporary, a write-back's arrays): a failure (a dead handle, or freeing
 * the memory of the last reference) names `what`. */
gpumem_status gm_array_release_as(gpumem_array *array, const char *what);

/* dtype checked for an array: a live dtype handle of nonzero item size. */
gpumem_status gm_array_check_dtype(const char *what, const gpumem_dtype *dtype, size_t *itemsize);

/* A view of a (array_view.c's views) with new shape/strides and dtype (of
 * the same item size, or one the layout was checked for), its element 0
 * `offset` bytes from a's; it keeps a's base alive and inherits its
 * read-only flag. */
gpumem_status gm_array_make_view(const char *what, gpumem_array *a, int ndim, const int64_t *shape,
                                 const int64_t *strides, int64_t offset, const gpumem_dtype *dtype,
                                 gpumem_array **out);

/* Checks the arguments of an array allocation (dtype, order when strides is
 * NULL, shape, stream of *ctx), resolves *ctx (NULL: autoinit) and gives the
 * contiguous strides to allocate: in the axis order of strides, else in order. */
gpumem_status gm_array_prepare(const char *what, gpumem_context **ctx, int ndim, const int64_t *shape,
                               const int64_t *strides, const gpumem_dtype *dtype, char order, gpumem_stream *stream,
                               int64_t *cstrides);

/* A new device array of shape/strides (contiguous strides required) in ctx. */
gpumem_status gm_array_new_device(const char *what, gpumem_context *ctx, int ndim, const int64_t *shape,
                                  const int64_t *strides, const gpumem_dtype *dtype, gpumem_stream *stream,
                                  gpumem_array **out);

/* A new host array (memory the library owns) with the given strides, which
 * must be contiguous in some axis order. */
gpumem_status gm_array_new_host(const char *what, int ndim, const int64_t *shape, const int64_t *strides,
                                const gpumem_dtype *dtype, gpumem_array **out);

/* A new pinned, mapped or managed array (kind) with contiguous strides;
 * flags are the driver's cuMemHostAlloc or cuMemAllocManaged flags. */
gpumem_status gm_array_new_locked(const char *what, gpumem_memory_kind kind, gpumem_context *ctx, int ndim,
                                  const int64_t *shape, const int64_t *strides, const gpumem_dtype *dtype,
                                  unsigned flags, gpumem_array **out);

/* A view of host array a that device code can address (a mapped array over
 * the same memory), for gpumem_mapped; device-side and mapped arrays give
 * themselves (retained). */
gpumem_status gm_array_mapped_view(const char *what, gpumem_context *ctx, gpumem_array *a, gpumem_array **out);

/* A pinned (or mapped, for a DEVICEMAP pool) host array on a block of a
 * page-locked pool; the block goes back to the pool with the array. */
gpumem_status gm_array_new_pooled_host(const char *what, gpumem_host_pool *pool, int ndim, const int64_t *shape,
                                       const int64_t *strides, const gpumem_dtype *dtype, gpumem_array **out);

/* A device array on a block of device pool `pool` (its context ctx) for
 * use on stream (NULL: synchronous use); the block goes back to the pool
 * with the array, ordered after that stream's work. */
gpumem_status gm_array_new_pooled_device(const char *what, gpumem_pool *pool, gpumem_context *ctx, int ndim,
                                         const int64_t *shape, const int64_t *strides, const gpumem_dtype *dtype,
                                         gpumem_stream *stream, gpumem_array **out);

/* GPUMEM_ERROR_INVALID_VALUE naming `arg` when a is read-only. */
gpumem_status gm_array_check_writable(const char *what, const gpumem_array *a, const char *arg);

/* A whole destination (of a copy, a fill, an unpack, a write-back):
 * GPUMEM_ERROR_INVALID_VALUE, naming `arg` of `what`, when a is read-only,
 * or non-empty with stride 0 on an axis of extent > 1 (its elements share
 * bytes, a broadcast, so no copy or fill can write it). */
gpumem_status gm_array_check_destination(const char *what, const gpumem_array *a, const char *arg);

/* Whether a's memory is page-locked (pinned, mapped, managed, or registered). */
bool gm_array_is_locked(const gpumem_array *a);
/* The gm_host_lock of a host array's bytes: GM_HOST_LOCKED for the
 * library's own page-locked kinds and for no bytes. */
gm_host_lock gm_array_lock_state(const gpumem_array *a);

/* An array over memory that someone else owns (a module's global, another
 * library's buffer): release(owner) is called exactly once, when the
 * array's last reference goes (release may be NULL; it is not called when
 * this fails).  ptr is element 0's address: a device address for DEVICE and
 * FOREIGN, a host address for HOST and PINNED, both at once (unified) for
 * MAPPED and MANAGED.  strides NULL is C order.  The caller has checked that
 * the memory covers the layout. */
gpumem_status gm_array_wrap(const char *what, gpumem_context *ctx, gpumem_memory_kind kind,
                                   gm_cu_deviceptr ptr, int ndim, const int64_t *shape, const int64_t *strides,
                                   const gpumem_dtype *dtype, void (*release)(void *), void *owner,
                                   gpumem_array **out);

/* A new array of a's kind (device, or host for host-side kinds) with a's
 * shape and contiguous strides in `order` ('C'/'F'), or like a's strides when
 * order is 0. */
gpumem_status gm_array_new_like(const char *what, const gpumem_array *a, int ndim, const int64_t *shape,
                                char order, gpumem_stream *stream, gpumem_array **out);

#endif /* GM_ARRAY_H */
