/*
 * fuzz.h - shared by the libFuzzer targets of tests/fuzz/.
 *
 * Each target defines LLVMFuzzerTestOneInput (and may define
 * fuzz_init, run once before the first input).  Built with clang's
 * -fsanitize=fuzzer by `make fuzz`; built with replay.c's main by the
 * normal `make check`, which runs every committed input of
 * tests/fuzz/corpus/<target>/ (seeds and crash regressions) through it.
 * A broken oracle aborts, which both report as a failure.
 */
#ifndef GPUMEM_FUZZ_H
#define GPUMEM_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpumem.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define FUZZ_CHECK(cond, ...) \
    do { \
        if (!(cond)) { \
            fprintf(stderr, "%s:%d: oracle failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__); \
            fputc('\n', stderr); \
            abort(); \
        } \
    } while (0)

/* Reads the input as a stream of small numbers; past its end, zeros. */
typedef struct fuzz_reader {
    const uint8_t *p;
    size_t n;
} fuzz_reader;

static inline unsigned fuzz_u8(fuzz_reader *r)
{
    if (r->n == 0)
        return 0;
    r->n--;
    return *r->p++;
}

static inline uint64_t fuzz_u64(fuzz_reader *r)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | fuzz_u8(r);
    return v;
}

/* A value in [lo, hi] (hi - lo < 2^16). */
static inline int64_t fuzz_range(fuzz_reader *r, int64_t lo, int64_t hi)
{
    unsigned v = fuzz_u8(r) << 8 | fuzz_u8(r);
    return lo + (int64_t)(v % (unsigned)(hi - lo + 1));
}

/* The rest of the input as a NUL-terminated string (malloc'd). */
static inline char *fuzz_rest_string(fuzz_reader *r)
{
    char *s = malloc(r->n + 1);
    if (s == NULL)
        abort();
    memcpy(s, r->p, r->n);
    s[r->n] = '\0';
    r->p += r->n;
    r->n = 0;
    return s;
}

/* ---- arrays over memory of known bytes (fuzz-interop.c, fuzz-ipc.c) ---- */

/* The byte at offset i of such memory. */
#define FUZZ_PATTERN(i) ((uint8_t)((i) * 13 + 5))

static inline void fuzz_fill_pattern(uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = FUZZ_PATTERN(i);
}

/* An array's layout, and the bytes its elements span: [lo, hi) from the
 * start of element 0 (lo <= 0 for negative strides). */
typedef struct fuzz_layout {
    int ndim;
    int64_t shape[GPUMEM_MAX_NDIM], strides[GPUMEM_MAX_NDIM], size;
    size_t itemsize;
    const gpumem_dtype *dtype;
    __int128 lo, hi;
} fuzz_layout;

static inline fuzz_layout fuzz_layout_of(gpumem_array *a)
{
    fuzz_layout l = {0};
    gpumem_array_ndim(a, &l.ndim);
    gpumem_array_shape(a, l.shape);
    gpumem_array_strides(a, l.strides);
    gpumem_array_size(a, &l.size);
    gpumem_array_dtype(a, &l.dtype);
    gpumem_dtype_itemsize(l.dtype, &l.itemsize);
    l.hi = (__int128)l.itemsize;
    for (int i = 0; i < l.ndim; i++) {
        __int128 span = (__int128)(l.shape[i] - 1) * l.strides[i];
        if (span < 0)
            l.lo += span;
        else
            l.hi += span;
    }
    return l;
}

/* Reads the bytes of every element of a (layout l, size > 0) in C order
 * into got (size * itemsize bytes), through a C-ordered device copy in ctx
 * viewed as bytes; a failure fails the oracle, naming `what`. */
static inline void fuzz_read_elements(gpumem_context *ctx, gpumem_array *a, const fuzz_layout *l, uint8_t *got,
                                      const char *what)
{
    const gpumem_dtype *u8 = gpumem_dtype_builtin(GPUMEM_UINT8);
    gpumem_array *copy = NULL, *flat = NULL, *bytes = NULL, *h = NULL;
    int64_t nb = l->size * (int64_t)l->itemsize;
    gpumem_status st = gpumem_device_array(ctx, l->ndim, l->shape, NULL, l->dtype, 'C', NULL, &copy);
    if (st == GPUMEM_OK)
        st = gpumem_array_copy(copy, a, NULL);
    if (st == GPUMEM_OK)
        st = gpumem_array_reshape(copy, 1, &l->size, 'C', GPUMEM_NO_COPY, NULL, &flat);
    if (st == GPUMEM_OK)
        st = gpumem_array_view(flat, u8, &bytes);
    if (st == GPUMEM_OK)
        st = gpumem_host_array_wrap(got, 1, &nb, NULL, u8, &h);
    if (st == GPUMEM_OK)
        st = gpumem_copy_to_host(bytes, h, NULL);
    FUZZ_CHECK(st == GPUMEM_OK, "reading %s: %s", what, gpumem_last_error());
    gpumem_array_release(h);
    gpumem_array_release(bytes);
    gpumem_array_release(flat);
    gpumem_array_release(copy);
}

/* Checks that got (fuzz_read_elements of layout l) holds, for every
 * element, the FUZZ_PATTERN bytes of its place: element 0 at offset off0. */
static inline void fuzz_check_pattern(const uint8_t *got, const fuzz_layout *l, int64_t off0)
{
    int64_t idx[GPUMEM_MAX_NDIM] = {0};
    for (int64_t k = 0; k < l->size; k++) {
        int64_t off = off0;
        for (int i = 0; i < l->ndim; i++)
            off += idx[i] * l->strides[i];
        for (size_t b = 0; b < l->itemsize; b++)
            FUZZ_CHECK(got[(size_t)k * l->itemsize + b] == FUZZ_PATTERN(off + (int64_t)b), "element %lld byte %zu",
                       (long long)k, b);
        for (int i = l->ndim - 1; i >= 0; i--) {
            if (++idx[i] < l->shape[i])
                break;
            idx[i] = 0;
        }
    }
}

#endif /* GPUMEM_FUZZ_H */
