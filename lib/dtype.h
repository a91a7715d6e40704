/*
 * dtype.h - the body of gpumem_dtype and the fast accessors that the other
 * modules (arrays, copies, interop) use instead of the status-returning API.
 *
 * Three kinds of object share one struct:
 *   - builtins (b1 ... c16) in each byte order: static, read-only objects;
 *     retain and release never touch them, so they may sit in .rodata;
 *   - raw bytes |Vn: allocated, reference-counted, no fields;
 *   - records: allocated, reference-counted, with their fields in the order
 *     they were given; a record holds a reference to every non-static dtype
 *     its fields use, so a field dtype outlives the caller's release of it.
 * Every dtype is immutable after creation, so it may be shared between
 * threads; only the reference count changes (atomically).
 */
#ifndef GM_DTYPE_H
#define GM_DTYPE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpumem/dtype.h"
#include "handles.h"

/* The most dimensions of a sub-array field (GPUMEM_MAX_NDIM). */
#define GM_DTYPE_MAX_NDIM 32
/* The deepest nesting of records: recursive walks (equal, descr) stay
 * bounded, and a hostile descr cannot exhaust the stack. */
#define GM_DTYPE_MAX_DEPTH 64

/* One named field of a record.  Gaps and padding are not fields: they are
 * the bytes no field covers. */
typedef struct gm_field {
    const char *name;           /* NUL-terminated, non-empty, owned by the record */
    const gpumem_dtype *dtype;  /* the element type; the record holds a reference */
    int64_t offset;             /* byte offset in the record */
    int64_t size;               /* bytes: dtype's itemsize times the sub-array's element count */
    int ndim;                   /* 0 for a scalar field */
    const int64_t *shape;       /* ndim extents (NULL when ndim is 0) */
} gm_field;

struct gpumem_dtype {
    gm_handle h;             /* first: the lifecycle check (handles.h); static for the builtins */
    gpumem_type type;        /* a builtin, GPUMEM_RECORD or GPUMEM_VOID */
    gpumem_byteorder order;  /* never "native": '=' is resolved when parsed */
    bool is_static;          /* the builtins: never freed, never counted */
    char kind;               /* NumPy's kind: 'b' 'i' 'u' 'f' 'c' 'V' (records too) */
    int depth;               /* 0, or 1 + the deepest field's depth for records */
    size_t itemsize;
    size_t alignment;        /* records: the largest field's (ALIGNED) or 1 (PACKED) */
    size_t nfields;          /* named fields (records only) */
    const gm_field *fields;
    atomic_long refs;        /* unused (0) for static objects */
};

static inline size_t gm_dtype_size(const gpumem_dtype *d)
{
    return d->itemsize;
}

static inline size_t gm_dtype_alignment(const gpumem_dtype *d)
{
    return d->alignment;
}

/* Builtins are static: no allocation, retain and release are no-ops. */
static inline bool gm_dtype_is_static(const gpumem_dtype *d)
{
    return d->is_static;
}

static inline bool gm_dtype_is_record(const gpumem_dtype *d)
{
    return d->type == GPUMEM_RECORD;
}

/* The byte order of this machine (GPUMEM_BYTEORDER_LITTLE or _BIG). */
static inline gpumem_byteorder gm_dtype_native_order(void)
{
    const union {
        uint16_t u;
        unsigned char c[2];
    } probe = {1};
    return probe.c[0] == 1 ? GPUMEM_BYTEORDER_LITTLE : GPUMEM_BYTEORDER_BIG;
}

/* True when the scalars need no byte swap on this machine: native order,
 * or no order at all (one-byte types, raw bytes, records). */
static inline bool gm_dtype_is_native(const gpumem_dtype *d)
{
    return d->order == GPUMEM_BYTEORDER_NA || d->order == gm_dtype_native_order();
}

/* Takes a reference for an internal holder (an array, a record) and returns
 * d, so that holders read: a->dtype = gm_dtype_ref(dtype).  NULL-safe. */
const gpumem_dtype *gm_dtype_ref(const gpumem_dtype *d);

/* Drops a reference taken with gm_dtype_ref() or given by a constructor;
 * frees the dtype (and drops its fields' references) at zero.  NULL-safe. */
void gm_dtype_unref(const gpumem_dtype *d);

/* gpumem_dtype_from_typestr and gpumem_dtype_from_descr (arguments not
 * NULL) for a public call `what` that reads one on the way (a CUDA Array
 * Interface description, an IPC handle): a failure is named after `what`. */
gpumem_status gm_dtype_from_typestr(const char *what, const char *typestr, gpumem_dtype **dtype);
gpumem_status gm_dtype_from_descr(const char *what, const char *descr, gpumem_dtype **dtype);

/* gpumem_dtype_descr (a live dtype, buf not NULL) for a public call `what`
 * that writes one on the way (an array's CUDA Array Interface). */
gpumem_status gm_dtype_descr(const char *what, const gpumem_dtype *dtype, char *buf, size_t size);

#endif /* GM_DTYPE_H */
