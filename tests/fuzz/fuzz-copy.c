/* gpumem_array_copy between random views of random memory kinds on the
 * simulator.  The destination's base is read back whole afterwards: every
 * element of the destination view holds its source element, and every
 * other byte (the gaps) is what it was. */
#include "config.h"

#include <gpumem.h>

#include "fuzz.h"

#define MAXE 600

static gpumem_context *ctx;
static gpumem_stream *stream;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    setenv("GPUMEM_BACKEND", "sim", 1);
    setenv("GPUMEM_SIM_STREAM_DELAY_US", "0", 1);
    if (gpumem_context_create(0, &ctx) != GPUMEM_OK || gpumem_stream_create(ctx, 0, &stream) != GPUMEM_OK) {
        fprintf(stderr, "fuzz-copy: setup: %s\n", gpumem_last_error());
        abort();
    }
    return 0;
}

typedef struct base {
    gpumem_array *a;   /* 1-D, n elements */
    uint8_t *host;     /* host memory of a host base (malloc'd), else NULL */
    int64_t n;
} base;

static const gpumem_dtype *dtype_of(size_t itemsize)
{
    switch (itemsize) {
    case 1: return gpumem_dtype_builtin(GPUMEM_UINT8);
    case 2: return gpumem_dtype_builtin(GPUMEM_UINT16);
    case 4: return gpumem_dtype_builtin(GPUMEM_UINT32);
    case 8: return gpumem_dtype_builtin(GPUMEM_UINT64);
    default: return gpumem_dtype_builtin(GPUMEM_COMPLEX128);
    }
}

static void make_base(base *b, unsigned kind, int64_t n, size_t itemsize)
{
    const gpumem_dtype *dt = dtype_of(itemsize);
    gpumem_status st;
    b->n = n;
    b->host = NULL;
    switch (kind % 5) {
    case 0:
        b->host = malloc((size_t)n * itemsize + 1);
        st = gpumem_host_array_wrap(b->host, 1, &n, NULL, dt, &b->a);
        break;
    case 1: st = gpumem_device_array(ctx, 1, &n, NULL, dt, 'C', NULL, &b->a); break;
    case 2: st = gpumem_pinned_array(ctx, 1, &n, NULL, dt, 'C', &b->a); break;
    case 3: st = gpumem_managed_array(ctx, 1, &n, NULL, dt, 'C', GPUMEM_MANAGED_ATTACH_GLOBAL, &b->a); break;
    default: st = gpumem_mapped_array(ctx, 1, &n, NULL, dt, 'C', NULL, 0, &b->a); break;
    }
    FUZZ_CHECK(st == GPUMEM_OK, "base of kind %u: %s", kind % 5, gpumem_last_error());
}

/* The base's bytes through a contiguous copy (or set them). */
static void base_io(base *b, uint8_t *bytes, size_t itemsize, int write)
{
    gpumem_array *h = NULL;
    gpumem_status st = gpumem_host_array_wrap(bytes, 1, &b->n, NULL, dtype_of(itemsize), &h);
    if (st == GPUMEM_OK)
        st = write ? gpumem_array_copy(b->a, h, NULL) : gpumem_array_copy(h, b->a, NULL);
    FUZZ_CHECK(st == GPUMEM_OK, "base %s: %s", write ? "write" : "read", gpumem_last_error());
    gpumem_array_release(h);
}

static uint64_t addr_of(const gpumem_array *a)
{
    uint64_t p = 0;
    void *hp = NULL;
    if (gpumem_array_device_pointer(a, &p) == GPUMEM_OK)
        return p;
    gpumem_array_host_pointer(a, &hp);
    return (uint64_t)(uintptr_t)hp;
}

/* Byte offsets from the base's start of the view's elements, in C order. */
static void offsets(const gpumem_array *view, const base *b, int64_t *out, int64_t *count)
{
    int ndim = 0;
    int64_t shape[GPUMEM_MAX_NDIM], strides[GPUMEM_MAX_NDIM], idx[GPUMEM_MAX_NDIM] = {0}, size = 0;
    gpumem_array_ndim(view, &ndim);
    gpumem_array_shape(view, shape);
    gpumem_array_strides(view, strides);
    gpumem_array_size(view, &size);
    *count = size;
    if (size == 0)
        return;
    int64_t start = (int64_t)(addr_of(view) - addr_of(b->a));
    for (int64_t k = 0; k < size; k++) {
        int64_t off = start;
        for (int i = 0; i < ndim; i++)
            off += idx[i] * strides[i];
        out[k] = off;
        for (int i = ndim - 1; i >= 0; i--) {
            if (++idx[i] < shape[i])
                break;
            idx[i] = 0;
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_reader r = {data, size};
    static const size_t sizes[] = {1, 2, 4, 8, 16};
    size_t itemsize = sizes[fuzz_u8(&r) % 5];
    unsigned skind = fuzz_u8(&r), dkind = fuzz_u8(&r);
    /* the view's shape */
    int ndim = (int)fuzz_range(&r, 1, 4);
    int64_t shape[4], total = 1;
    for (int i = 0; i < ndim; i++) {
        shape[i] = fuzz_range(&r, 0, 6);
        total *= shape[i];
    }
    /* each side: a base of shape B[j] = shape[perm[j]] * m[j] + extra[j],
     * sliced with step +-m[j] from an offset, then transposed back */
    base bases[2];
    gpumem_array *views[2] = {NULL, NULL};
    for (int side = 0; side < 2; side++) {
        int perm[4], inv[4];
        for (int i = 0; i < ndim; i++)
            perm[i] = i;
        for (int i = ndim - 1; i > 0; i--) {
            int j = (int)fuzz_range(&r, 0, i), t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        int64_t bshape[4], n = 1;
        gpumem_slice sl[4];
        for (int j = 0; j < ndim; j++) {
            int64_t ext = shape[perm[j]], m = fuzz_range(&r, 1, 3), extra = fuzz_range(&r, 0, 2);
            bshape[j] = ext * m + extra;
            int rev = fuzz_u8(&r) & 1;
            int64_t off = extra > 0 ? fuzz_range(&r, 0, extra) : 0;
            if (ext == 0)
                sl[j] = (gpumem_slice){0, 0, 1};
            else if (!rev)
                sl[j] = (gpumem_slice){off, off + (ext - 1) * m + 1, m};
            else /* the same elements, backwards */
                sl[j] = (gpumem_slice){off + (ext - 1) * m, off == 0 ? GPUMEM_SLICE_DEFAULT : off - 1, -m};
            n *= bshape[j];
            inv[perm[j]] = j;
        }
        if (n > MAXE) {
            for (int s = 0; s < side; s++) {
                gpumem_array_release(views[s]);
                gpumem_array_release(bases[s].a);
                free(bases[s].host);
            }
            return 0;
        }
        make_base(&bases[side], side == 0 ? skind : dkind, n, itemsize);
        gpumem_array *shaped = NULL, *sliced = NULL;
        gpumem_status st = gpumem_array_reshape(bases[side].a, ndim, bshape, 'C', GPUMEM_NO_COPY, NULL, &shaped);
        if (st == GPUMEM_OK)
            st = gpumem_array_slice(shaped, sl, ndim, &sliced);
        if (st == GPUMEM_OK)
            st = gpumem_array_transpose(sliced, inv, &views[side]);
        FUZZ_CHECK(st == GPUMEM_OK, "view: %s", gpumem_last_error());
        gpumem_array_release(sliced);
        gpumem_array_release(shaped);
        int64_t got[4];
        gpumem_array_shape(views[side], got);
        for (int i = 0; i < ndim; i++)
            FUZZ_CHECK(got[i] == shape[i], "side %d: shape[%d] %lld, want %lld", side, i, (long long)got[i],
                       (long long)shape[i]);
    }
    /* contents: source bytes from the input's hash, destination a pattern */
    size_t sb = (size_t)bases[0].n * itemsize, db = (size_t)bases[1].n * itemsize;
    uint8_t *src = malloc(sb + 1), *before = malloc(db + 1), *after = malloc(db + 1);
    for (size_t i = 0; i < sb; i++)
        src[i] = (uint8_t)(i * 131 + 7 + skind);
    for (size_t i = 0; i < db; i++)
        before[i] = (uint8_t)(0xC3 ^ (i * 29));
    base_io(&bases[0], src, itemsize, 1);
    base_io(&bases[1], before, itemsize, 1);
    int use_stream = fuzz_u8(&r) & 1;
    gpumem_status st = gpumem_array_copy(views[1], views[0], use_stream ? stream : NULL);
    if (st == GPUMEM_OK && use_stream)
        st = gpumem_stream_synchronize(stream);
    base_io(&bases[1], after, itemsize, 0);
    if (st != GPUMEM_OK) {
        /* an asynchronous copy into pageable memory is refused, touching nothing */
        FUZZ_CHECK(use_stream && st == GPUMEM_ERROR_INVALID_VALUE && strstr(gpumem_last_error(), "pageable"),
                   "copy: %s", gpumem_last_error());
        FUZZ_CHECK(memcmp(before, after, db) == 0, "a refused copy changed the destination");
    } else {
        static int64_t so[1 << 12], dso[1 << 12];
        int64_t ns = 0, nd = 0;
        offsets(views[0], &bases[0], so, &ns);
        offsets(views[1], &bases[1], dso, &nd);
        FUZZ_CHECK(ns == total && nd == total, "element counts");
        uint8_t *expect = malloc(db + 1);
        memcpy(expect, before, db);
        for (int64_t k = 0; k < total; k++)
            memcpy(expect + dso[k], src + so[k], itemsize);
        for (size_t i = 0; i < db; i++)
            FUZZ_CHECK(after[i] == expect[i], "byte %zu of the destination base is %u, want %u (%s)", i, after[i],
                       expect[i], expect[i] == before[i] ? "a gap" : "an element");
        free(expect);
    }
    free(src);
    free(before);
    free(after);
    for (int s = 0; s < 2; s++) {
        gpumem_array_release(views[s]);
        gpumem_array_release(bases[s].a);
        free(bases[s].host);
    }
    return 0;
}
