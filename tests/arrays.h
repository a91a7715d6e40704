/*
 * arrays.h - helpers of the array and copy tests (header-only): driver-call
 * counts, the last copy's path, arrays of known values, reading a whole
 * array back, column views, and random strided views with the check of a
 * copy between them.
 */
#ifndef GPUMEM_TEST_ARRAYS_H
#define GPUMEM_TEST_ARRAYS_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gpumem.h>

#include "rng.h"
#include "tap.h"

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

/* The path of the calling thread's last copy; -1 when the query fails. */
static gpumem_copy_path last_path(void) __attribute__((unused));
static gpumem_copy_path last_path(void)
{
    gpumem_copy_path p = (gpumem_copy_path)-1;
    gpumem_debug_last_copy_path(&p);
    return p;
}

/* A 1-D uint8 device array of n bytes in ctx; NULL (said as a diag) when
 * it cannot be had. */
static gpumem_array *device_bytes(gpumem_context *ctx, int64_t n) __attribute__((unused));
static gpumem_array *device_bytes(gpumem_context *ctx, int64_t n)
{
    gpumem_array *a = NULL;
    if (gpumem_device_array(ctx, 1, &n, NULL, gpumem_dtype_builtin(GPUMEM_UINT8), 'C', NULL, &a) != GPUMEM_OK)
        diag("a device array of %lld bytes: %s", (long long)n, gpumem_last_error());
    return a;
}

/* Bails out of the test when a setup call fails, naming the call, its place
 * and the library's message. */
#define MUST(call)                                                                      \
    do {                                                                                \
        gpumem_status st_ = (call);                                                     \
        if (st_ != GPUMEM_OK)                                                           \
            bail_out("%s:%d: %s: %s", __FILE__, __LINE__, #call, gpumem_last_error()); \
    } while (0)

/* A C-ordered int32 host array of the given shape over a new buffer (*data,
 * the caller's to free after the array's release) holding base, base + 1,
 * ... in C order; bails out when it cannot be made. */
static gpumem_array *host_iota(int ndim, const int64_t *shape, int32_t base, int32_t **data) __attribute__((unused));
static gpumem_array *host_iota(int ndim, const int64_t *shape, int32_t base, int32_t **data)
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++)
        n *= shape[i];
    int32_t *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    if (v == NULL)
        bail_out("out of host memory");
    for (int64_t i = 0; i < n; i++)
        v[i] = base + (int32_t)i;
    gpumem_array *h = NULL;
    MUST(gpumem_host_array_wrap(v, ndim, shape, NULL, gpumem_dtype_builtin(GPUMEM_INT32), &h));
    *data = v;
    return h;
}

/* The same values in a C-ordered int32 device array in ctx. */
static gpumem_array *device_iota(gpumem_context *ctx, int ndim, const int64_t *shape, int32_t base)
    __attribute__((unused));
static gpumem_array *device_iota(gpumem_context *ctx, int ndim, const int64_t *shape, int32_t base)
{
    int32_t *v = NULL;
    gpumem_array *h = host_iota(ndim, shape, base, &v), *d = NULL;
    MUST(gpumem_to_device(ctx, h, NULL, 0, &d));
    gpumem_array_release(h);
    free(v);
    return d;
}

/* ---- float32 matrices and their columns ---- */

/* A C-ordered r x c float32 host array over p. */
static gpumem_array *wrap_f32(void *p, int64_t r, int64_t c) __attribute__((unused));
static gpumem_array *wrap_f32(void *p, int64_t r, int64_t c)
{
    gpumem_array *a = NULL;
    gpumem_host_array_wrap(p, 2, (int64_t[]){r, c}, NULL, gpumem_dtype_builtin(GPUMEM_FLOAT32), &a);
    return a;
}

/* a[:, start::step] of a 2-D array. */
static gpumem_array *cols_view(gpumem_array *a, int64_t start, int64_t step) __attribute__((unused));
static gpumem_array *cols_view(gpumem_array *a, int64_t start, int64_t step)
{
    gpumem_array *v = NULL;
    gpumem_slice s[2] = {{GPUMEM_SLICE_DEFAULT, GPUMEM_SLICE_DEFAULT, 1}, {start, GPUMEM_SLICE_DEFAULT, step}};
    gpumem_array_slice(a, s, 2, &v);
    return v;
}

/* Whether out, a C-ordered r x (c / step) matrix, holds m[:, start::step]
 * of the C-ordered r x c matrix m (c a multiple of step). */
static int holds_cols(const float *out, const float *m, int64_t r, int64_t c, int64_t start, int64_t step)
    __attribute__((unused));
static int holds_cols(const float *out, const float *m, int64_t r, int64_t c, int64_t start, int64_t step)
{
    int64_t w = c / step;
    for (int64_t i = 0; i < r * w; i++)
        if (out[i] != m[(i / w) * c + start + step * (i % w)])
            return 0;
    return 1;
}

/* ---- random strided views, and the check of a copy between two ---- */

/* A 3-D float32 base array in ctx of kind 0 host (pageable), 1 pinned or
 * 2 device, holding v0, v0 + 1, ..., and a random view of it of shape n:
 * axes permuted, each with a step of 1 or 2 and reversed one time in four,
 * drawn from *rng (xorshift64).  *base gets the base and bshape its shape;
 * *own the memory a kind 0 base wraps (free it after the base's release),
 * NULL for the others. */
static gpumem_array *random_permuted_view(gpumem_context *ctx, uint64_t *rng, int kind, const int64_t *n, float v0,
                                 gpumem_array **base, int64_t *bshape, float **own) __attribute__((unused));
static gpumem_array *random_permuted_view(gpumem_context *ctx, uint64_t *rng, int kind, const int64_t *n, float v0,
                                 gpumem_array **base, int64_t *bshape, float **own)
{
    const gpumem_dtype *f32 = gpumem_dtype_builtin(GPUMEM_FLOAT32);
    int perm[3] = {0, 1, 2};
    for (int i = 2; i > 0; i--) {
        int j = (int)(xorshift64(rng) % (uint64_t)(i + 1)), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    int64_t m[3], step[3], total = 1;
    for (int i = 0; i < 3; i++) {
        m[i] = n[perm[i]];
        step[i] = 1 + (int64_t)(xorshift64(rng) % 2);
        bshape[i] = m[i] * step[i] + (int64_t)(xorshift64(rng) % 2);
        total *= bshape[i];
    }
    float *vals = malloc((size_t)total * sizeof *vals);
    for (int64_t i = 0; i < total; i++)
        vals[i] = v0 + (float)i;
    gpumem_array *h = NULL, *b = NULL;
    gpumem_host_array_wrap(vals, 3, bshape, NULL, f32, &h);
    *own = NULL;
    if (kind == 2) {
        gpumem_to_device(ctx, h, NULL, 0, &b);
    } else if (kind == 1) {
        gpumem_pinned_array(ctx, 3, bshape, NULL, f32, 'C', &b);
        gpumem_array_copy(b, h, NULL);
    } else {
        *own = vals;
        vals = NULL;
        gpumem_host_array_wrap(*own, 3, bshape, NULL, f32, &b);
    }
    gpumem_array_release(h);
    free(vals);
    gpumem_slice s[3];
    for (int i = 0; i < 3; i++)
        s[i] = xorshift64(rng) % 4 == 0 ? (gpumem_slice){(m[i] - 1) * step[i], GPUMEM_SLICE_DEFAULT, -step[i]}
                                        : (gpumem_slice){0, m[i] * step[i], step[i]};
    gpumem_array *v = NULL, *t = NULL;
    gpumem_array_slice(b, s, 3, &v);
    int inv[3];
    for (int i = 0; i < 3; i++)
        inv[perm[i]] = i;
    gpumem_array_transpose(v, inv, &t);
    gpumem_array_release(v);
    *base = b;
    return t;
}

/* The float32 values of a whole array (read_all), n of them, in a new
 * buffer (free it). */
static float *read_new(gpumem_array *a, int64_t n) __attribute__((unused));
static float *read_new(gpumem_array *a, int64_t n)
{
    float *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    read_all(a, v);
    return v;
}

/* After a copy into dv, a view of count elements of the base db of dtotal
 * elements: whether dv holds want, in C order, and no more than count
 * elements of db differ from before (its values before the copy): the
 * gaps of the view are untouched. */
static int copied_exactly(gpumem_array *dv, gpumem_array *db, const float *want, int64_t count,
                          const float *before, int64_t dtotal) __attribute__((unused));
static int copied_exactly(gpumem_array *dv, gpumem_array *db, const float *want, int64_t count,
                          const float *before, int64_t dtotal)
{
    float *got = malloc((size_t)(count > 0 ? count : 1) * sizeof *got);
    float *after = malloc((size_t)(dtotal > 0 ? dtotal : 1) * sizeof *after);
    int good = read_all(dv, got) && read_all(db, after) && memcmp(got, want, (size_t)count * sizeof *got) == 0;
    int64_t changed = 0;
    for (int64_t i = 0; good && i < dtotal; i++)
        changed += after[i] != before[i];
    free(got);
    free(after);
    return good && changed <= count;
}

/* A copy case between two random views of shape n (random_permuted_view,
 * in that order from *rng): a source of kind sk holding 0, 1, ... and a
 * destination of kind dk holding dv0, dv0 + 1, ..., with the source's
 * values (want) and the destination base's (before) read first. */
typedef struct random_copy {
    gpumem_array *sv, *dv, *sb, *db; /* the views and their bases */
    float *sown, *down, *want, *before;
    int64_t count, dtotal; /* the elements of a view, and of the destination's base */
} random_copy;

static void random_copy_make(random_copy *c, gpumem_context *ctx, uint64_t *rng, int sk, int dk, const int64_t *n,
                             float dv0) __attribute__((unused));
static void random_copy_make(random_copy *c, gpumem_context *ctx, uint64_t *rng, int sk, int dk, const int64_t *n,
                             float dv0)
{
    int64_t sshape[3], dshape[3];
    c->count = n[0] * n[1] * n[2];
    c->sv = random_permuted_view(ctx, rng, sk, n, 0.0f, &c->sb, sshape, &c->sown);
    c->dv = random_permuted_view(ctx, rng, dk, n, dv0, &c->db, dshape, &c->down);
    c->dtotal = dshape[0] * dshape[1] * dshape[2];
    c->before = read_new(c->db, c->dtotal);
    c->want = read_new(c->sv, c->count);
}

/* After a copy of c->sv into c->dv: whether it was exact (copied_exactly). */
static int random_copy_exact(const random_copy *c) __attribute__((unused));
static int random_copy_exact(const random_copy *c)
{
    return copied_exactly(c->dv, c->db, c->want, c->count, c->before, c->dtotal);
}

static void random_copy_release(random_copy *c) __attribute__((unused));
static void random_copy_release(random_copy *c)
{
    gpumem_array *rel[] = {c->sv, c->dv, c->sb, c->db};
    for (int i = 0; i < 4; i++)
        gpumem_array_release(rel[i]);
    free(c->sown);
    free(c->down);
    free(c->before);
    free(c->want);
}

#endif /* GPUMEM_TEST_ARRAYS_H */
