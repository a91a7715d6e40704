/* Random sequences of view operations (slice with integer indices,
 * transpose, reshape, ravel, split, view) on a host array, each checked
 * element by element against an independent model: the list of the
 * elements' values in C order. */
#include "config.h"

#include <gpumem.h>

#include "fuzz.h"

#define MAXN 4096

typedef struct model {
    int ndim;
    int64_t shape[GPUMEM_MAX_NDIM];
    int64_t size;
    int32_t vals[MAXN];
} model;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    setenv("GPUMEM_BACKEND", "sim", 1);
    return 0;
}

/* C-order position of the multi-index idx in shape. */
static int64_t c_pos(int ndim, const int64_t *shape, const int64_t *idx)
{
    int64_t p = 0;
    for (int i = 0; i < ndim; i++)
        p = p * shape[i] + idx[i];
    return p;
}

/* Steps idx through shape in C order; 0 at the end. */
static int next_c(int ndim, const int64_t *shape, int64_t *idx)
{
    for (int i = ndim - 1; i >= 0; i--) {
        if (++idx[i] < shape[i])
            return 1;
        idx[i] = 0;
    }
    return 0;
}

static int next_f(int ndim, const int64_t *shape, int64_t *idx)
{
    for (int i = 0; i < ndim; i++) {
        if (++idx[i] < shape[i])
            return 1;
        idx[i] = 0;
    }
    return 0;
}

/* The array against the model: ndim, shape, and every element's bits. */
static void check(const gpumem_array *a, const model *m, const char *after)
{
    int ndim = -1;
    int64_t shape[GPUMEM_MAX_NDIM], strides[GPUMEM_MAX_NDIM], size = -1;
    FUZZ_CHECK(gpumem_array_ndim(a, &ndim) == GPUMEM_OK && ndim == m->ndim, "%s: ndim %d, model %d", after, ndim,
               m->ndim);
    gpumem_array_shape(a, shape);
    gpumem_array_strides(a, strides);
    gpumem_array_size(a, &size);
    FUZZ_CHECK(size == m->size, "%s: size %lld, model %lld", after, (long long)size, (long long)m->size);
    for (int i = 0; i < ndim; i++)
        FUZZ_CHECK(shape[i] == m->shape[i], "%s: shape[%d] %lld, model %lld", after, i, (long long)shape[i],
                   (long long)m->shape[i]);
    if (size == 0)
        return;
    void *p = NULL;
    FUZZ_CHECK(gpumem_array_host_pointer(a, &p) == GPUMEM_OK, "%s: host pointer: %s", after, gpumem_last_error());
    int64_t idx[GPUMEM_MAX_NDIM] = {0};
    int64_t k = 0;
    do {
        int64_t off = 0;
        for (int i = 0; i < ndim; i++)
            off += idx[i] * strides[i];
        int32_t v;
        memcpy(&v, (const char *)p + off, sizeof v);
        FUZZ_CHECK(v == m->vals[k], "%s: element %lld is %d, model %d", after, (long long)k, v, m->vals[k]);
        k++;
    } while (next_c(ndim, shape, idx));
}

/* A shape of `size` elements in ndim dimensions, from the input. */
static void random_shape(fuzz_reader *r, int64_t size, int ndim, int64_t *shape)
{
    if (size == 0) {
        for (int i = 0; i < ndim; i++)
            shape[i] = fuzz_range(r, 0, 4);
        shape[fuzz_range(r, 0, ndim - 1)] = 0;
        return;
    }
    int64_t left = size;
    for (int i = 0; i < ndim - 1; i++) {
        int64_t c = fuzz_range(r, 1, 8);
        while (left % c != 0)
            c--;
        shape[i] = c;
        left /= c;
    }
    shape[ndim - 1] = left;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_reader r = {data, size};
    static model m, next;
    static int32_t base[MAXN];
    int64_t n = fuzz_range(&r, 0, 240);
    for (int64_t i = 0; i < n; i++)
        base[i] = (int32_t)(i * 7 + 1);
    gpumem_array *a = NULL;
    FUZZ_CHECK(gpumem_host_array_wrap(base, 1, &n, NULL, gpumem_dtype_builtin(GPUMEM_INT32), &a) == GPUMEM_OK,
               "wrap: %s", gpumem_last_error());
    m.ndim = 1, m.shape[0] = n, m.size = n;
    memcpy(m.vals, base, (size_t)n * sizeof *base);
    check(a, &m, "wrap");
    int ops = (int)fuzz_range(&r, 1, 12);
    for (int op = 0; op < ops && r.n > 0; op++) {
        gpumem_array *b = NULL;
        gpumem_status st;
        const char *what;
        next = m;
        switch (fuzz_u8(&r) % 6) {
        case 0: { /* slice, with integer indices now and then */
            what = "slice";
            gpumem_slice sl[GPUMEM_MAX_NDIM];
            int ns = m.ndim == 0 ? 0 : (int)fuzz_range(&r, 0, m.ndim);
            int bad = 0;
            gpumem_status want_bad = GPUMEM_ERROR_INDEX_OUT_OF_RANGE;
            for (int i = 0; i < ns; i++) {
                int64_t ext = m.shape[i];
                int64_t step = fuzz_range(&r, -4, 4);
                if (step == 0)
                    step = fuzz_u8(&r) % 8 == 0 ? 0 : 1; /* 0 reads as 1 */
                unsigned form = fuzz_u8(&r);
                if (form & 0x80) { /* an index: GPUMEM_INDEX(k), k from either end */
                    int64_t k = ext > 0 ? fuzz_range(&r, 0, ext - 1) : 0;
                    if (form & 4)
                        k -= ext;
                    int bad_pos = ext == 0 || (form & 0x70) == 0x70;
                    if (bad_pos)
                        k = (form & 8) ? -ext - 1 - fuzz_range(&r, 0, 3) : ext + fuzz_range(&r, 0, 3);
                    int64_t istep = (step == 2 || step == -2) && (form & 0x40) ? step : step == 0 ? 0 : 1;
                    int bad_step = istep != 0 && istep != 1; /* an index takes step 1 (or 0) only */
                    /* the first bad axis decides; an index's step is checked before its position */
                    if ((bad_pos || bad_step) && !bad)
                        want_bad = bad_step ? GPUMEM_ERROR_INVALID_VALUE : GPUMEM_ERROR_INDEX_OUT_OF_RANGE;
                    bad |= bad_pos || bad_step;
                    sl[i] = (gpumem_slice){k, GPUMEM_SLICE_INDEX, istep};
                    continue;
                }
                int64_t b0 = GPUMEM_SLICE_DEFAULT, e0 = GPUMEM_SLICE_DEFAULT;
                if (ext > 0 && (form & 1))
                    b0 = fuzz_range(&r, 0, ext - 1);
                if (form & 2)
                    e0 = step >= 0 ? fuzz_range(&r, 0, ext) : (ext > 0 ? fuzz_range(&r, 0, ext - 1) : GPUMEM_SLICE_DEFAULT);
                if ((form & 4) && b0 != GPUMEM_SLICE_DEFAULT)
                    b0 -= ext; /* counted from the end */
                if ((form & 8) && e0 != GPUMEM_SLICE_DEFAULT && e0 < ext)
                    e0 -= ext;
                if ((form & 0x70) == 0x70) {
                    b0 = ext + 1 + fuzz_range(&r, 0, 5); /* out of range */
                    if (!bad)
                        want_bad = GPUMEM_ERROR_INDEX_OUT_OF_RANGE;
                    bad = 1;
                }
                sl[i] = (gpumem_slice){b0, e0, step};
            }
            st = gpumem_array_slice(a, sl, ns, &b);
            if (bad) {
                FUZZ_CHECK(st == want_bad, "a bad slice: status %d, expected %d: %s", st, want_bad,
                           gpumem_last_error());
                FUZZ_CHECK(b == NULL, "a failed slice made a view");
                continue;
            }
            FUZZ_CHECK(st == GPUMEM_OK, "slice: %s", gpumem_last_error());
            /* the model: per axis, the chosen indices; an indexed axis goes */
            int64_t pick[GPUMEM_MAX_NDIM][256], cnt_of[GPUMEM_MAX_NDIM];
            int dropped[GPUMEM_MAX_NDIM] = {0};
            for (int i = 0; i < m.ndim; i++) {
                int64_t ext = m.shape[i], cnt = 0;
                if (i >= ns) {
                    for (int64_t j = 0; j < ext; j++)
                        pick[i][cnt++] = j;
                } else if (sl[i].stop == GPUMEM_SLICE_INDEX) {
                    pick[i][cnt++] = sl[i].start < 0 ? sl[i].start + ext : sl[i].start;
                    dropped[i] = 1;
                } else {
                    int64_t step = sl[i].step == 0 ? 1 : sl[i].step;
                    int64_t bb = sl[i].start == GPUMEM_SLICE_DEFAULT ? (step > 0 ? 0 : ext - 1)
                                 : sl[i].start < 0                  ? sl[i].start + ext
                                                                    : sl[i].start;
                    int64_t ee = sl[i].stop == GPUMEM_SLICE_DEFAULT ? (step > 0 ? ext : -1)
                                 : sl[i].stop < 0                  ? sl[i].stop + ext
                                                                   : sl[i].stop;
                    for (int64_t j = bb; step > 0 ? j < ee : j > ee; j += step)
                        pick[i][cnt++] = j;
                }
                cnt_of[i] = cnt;
            }
            next.ndim = 0;
            for (int i = 0; i < m.ndim; i++)
                if (!dropped[i])
                    next.shape[next.ndim++] = cnt_of[i];
            next.size = 1;
            for (int i = 0; i < next.ndim; i++)
                next.size *= next.shape[i];
            int64_t idx[GPUMEM_MAX_NDIM] = {0}, src[GPUMEM_MAX_NDIM], k = 0;
            if (next.size > 0)
                do {
                    for (int i = 0, j = 0; i < m.ndim; i++)
                        src[i] = dropped[i] ? pick[i][0] : pick[i][idx[j++]];
                    next.vals[k++] = m.vals[c_pos(m.ndim, m.shape, src)];
                } while (next_c(next.ndim, next.shape, idx));
            break;
        }
        case 1: { /* transpose */
            what = "transpose";
            int axes[GPUMEM_MAX_NDIM];
            for (int i = 0; i < m.ndim; i++)
                axes[i] = i;
            for (int i = m.ndim - 1; i > 0; i--) {
                int j = (int)fuzz_range(&r, 0, i);
                int t = axes[i];
                axes[i] = axes[j];
                axes[j] = t;
            }
            int reverse = fuzz_u8(&r) & 1;
            if (reverse)
                for (int i = 0; i < m.ndim; i++)
                    axes[i] = m.ndim - 1 - i;
            st = gpumem_array_transpose(a, reverse ? NULL : axes, &b);
            FUZZ_CHECK(st == GPUMEM_OK, "transpose: %s", gpumem_last_error());
            for (int i = 0; i < m.ndim; i++)
                next.shape[i] = m.shape[axes[i]];
            int64_t idx[GPUMEM_MAX_NDIM] = {0}, src[GPUMEM_MAX_NDIM], k = 0;
            if (m.size > 0)
                do {
                    for (int i = 0; i < m.ndim; i++)
                        src[axes[i]] = idx[i];
                    next.vals[k++] = m.vals[c_pos(m.ndim, m.shape, src)];
                } while (next_c(m.ndim, next.shape, idx));
            break;
        }
        case 2:   /* reshape */
        case 3: { /* ravel */
            int is_ravel = 0;
            char order = fuzz_u8(&r) & 1 ? 'F' : 'C';
            int nd;
            if (r.n > 0 && (r.p[0] & 1)) {
                is_ravel = 1;
                fuzz_u8(&r);
                nd = 1;
                next.shape[0] = m.size;
            } else {
                nd = (int)fuzz_range(&r, 0, 4);
                if (nd == 0 && m.size != 1)
                    nd = 1;
                if (nd > 0)
                    random_shape(&r, m.size, nd, next.shape);
            }
            what = is_ravel ? "ravel" : "reshape";
            st = is_ravel ? gpumem_array_ravel(a, order, 0, NULL, &b)
                          : gpumem_array_reshape(a, nd, next.shape, order, 0, NULL, &b);
            FUZZ_CHECK(st == GPUMEM_OK, "%s: %s", what, gpumem_last_error());
            next.ndim = nd;
            /* the elements in `order` of the old shape fill the new one in `order` */
            int64_t k = 0;
            static int32_t flat[MAXN];
            int64_t idx[GPUMEM_MAX_NDIM] = {0};
            if (m.size > 0) {
                do
                    flat[k++] = m.vals[c_pos(m.ndim, m.shape, idx)];
                while (order == 'C' ? next_c(m.ndim, m.shape, idx) : next_f(m.ndim, m.shape, idx));
                memset(idx, 0, sizeof idx);
                k = 0;
                do
                    next.vals[c_pos(nd, next.shape, idx)] = flat[k++];
                while (order == 'C' ? next_c(nd, next.shape, idx) : next_f(nd, next.shape, idx));
            }
            break;
        }
        case 4: { /* split one piece */
            what = "split";
            if (m.ndim != 1) {
                size_t cnt = 7;
                gpumem_array *pieces[1];
                st = gpumem_array_split(a, 1, pieces, 1, &cnt);
                FUZZ_CHECK(st == GPUMEM_ERROR_INVALID_VALUE && cnt == 7, "split of %d dimensions", m.ndim);
                continue;
            }
            int64_t section = fuzz_u8(&r) & 0x80 ? INT64_MAX - fuzz_range(&r, 0, 3) : fuzz_range(&r, 1, 40);
            static gpumem_array *pieces[MAXN];
            size_t cnt = 0;
            st = gpumem_array_split(a, section, pieces, MAXN, &cnt);
            FUZZ_CHECK(st == GPUMEM_OK, "split: %s", gpumem_last_error());
            size_t want = (size_t)(m.size / section + (m.size % section != 0));
            FUZZ_CHECK(cnt == want, "split %lld by %lld: %zu pieces", (long long)m.size, (long long)section, cnt);
            if (cnt == 0)
                continue;
            size_t keep = (size_t)fuzz_range(&r, 0, (int64_t)cnt - 1);
            for (size_t i = 0; i < cnt; i++)
                if (i != keep)
                    gpumem_array_release(pieces[i]);
            b = pieces[keep];
            int64_t begin = (int64_t)keep * section;
            next.shape[0] = m.size - begin < section ? m.size - begin : section;
            next.size = next.shape[0];
            memmove(next.vals, m.vals + begin, (size_t)next.size * sizeof *next.vals);
            break;
        }
        default: { /* view as another 4-byte dtype */
            what = "view";
            static const gpumem_type same[] = {GPUMEM_INT32, GPUMEM_UINT32, GPUMEM_FLOAT32};
            st = gpumem_array_view(a, gpumem_dtype_builtin(same[fuzz_u8(&r) % 3]), &b);
            FUZZ_CHECK(st == GPUMEM_OK, "view: %s", gpumem_last_error());
            break;
        }
        }
        next.size = 1;
        for (int i = 0; i < next.ndim; i++)
            next.size *= next.shape[i];
        check(b, &next, what);
        gpumem_array_release(a);
        a = b;
        m = next;
    }
    gpumem_array_release(a);
    return 0;
}
