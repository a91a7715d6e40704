/* The copy engine: every direction, any strides, exactly the elements (never
 * the gaps: numba#3553), broadcast sources (numba#3550), negative strides
 * (numba#3723), overlapping views, and the fewest driver calls.  The DMA
 * row threshold is 0 here (GPUMEM_COPY_MIN_ROW_BYTES), so the planner's
 * rectangular copies run as planned; test-copy-paths checks the cost model
 * with the default threshold. */
#include <stdlib.h>
#include <string.h>

#include <gpumem.h>

#include "arrays.h"
#include "rng.h"
#include "tap.h"

static gpumem_context *ctx;
static const gpumem_dtype *i32;

typedef struct counts {
    int64_t c1, c2, c3;
} counts;

static counts snap(void)
{
    counts c = {calls("cuMemcpy"), calls("cuMemcpy2D"), calls("cuMemcpy3D")};
    return c;
}

static counts since(counts a)
{
    counts b = snap();
    counts d = {b.c1 - a.c1, b.c2 - a.c2, b.c3 - a.c3};
    return d;
}

/* splitmix64: a small PRNG with a printed seed, so failures reproduce. */
static uint64_t rng_state;
static uint64_t rnd(void)
{
    return splitmix64(&rng_state);
}
static int64_t rnd_in(int64_t lo, int64_t hi) { return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1)); }

/* The test's own model of a view of a C-ordered base of shape bshape:
 * view axis i walks base axis perm[i] from start[i] by step[i].  Written apart
 * from the library's view code: element values are computed from it. */
typedef struct model {
    int ndim;
    int64_t bshape[4];
    int64_t shape[4];
    int perm[4];
    int64_t start[4], step[4];
} model;

static int64_t base_flat(const model *m, const int64_t *vidx)
{
    int64_t bidx[4] = {0, 0, 0, 0};
    for (int i = 0; i < m->ndim; i++)
        bidx[m->perm[i]] = m->start[i] + vidx[i] * m->step[i];
    int64_t flat = 0;
    for (int a = 0; a < m->ndim; a++)
        flat = flat * m->bshape[a] + bidx[a];
    return flat;
}

/* A random model: a random permutation and per view axis a random step
 * (possibly negative) and start; the view's extents are `shape` when given,
 * else random; the base is made just large enough, plus random slack. */
static void random_model(model *m, int ndim, const int64_t *shape)
{
    m->ndim = ndim;
    for (int a = 0; a < ndim; a++)
        m->perm[a] = a;
    for (int a = ndim - 1; a > 0; a--) {
        int j = (int)rnd_in(0, a);
        int t = m->perm[a];
        m->perm[a] = m->perm[j];
        m->perm[j] = t;
    }
    for (int i = 0; i < ndim; i++) {
        int64_t len = shape ? shape[i] : rnd_in(1, 5);
        int64_t step = rnd_in(1, 3), slack = rnd_in(0, 2);
        int64_t span = (len - 1) * step + 1;
        m->shape[i] = len;
        m->bshape[m->perm[i]] = span + slack;
        if (rnd() % 3 == 0) { /* reversed: walk down from near the end */
            m->step[i] = -step;
            m->start[i] = span - 1 + rnd_in(0, slack);
        } else {
            m->step[i] = step;
            m->start[i] = rnd_in(0, slack);
        }
    }
}

/* Builds the modelled view of `base` with the library: transpose then slice. */
static gpumem_array *make_view(gpumem_array *base, const model *m)
{
    gpumem_array *t = NULL, *v = NULL;
    if (gpumem_array_transpose(base, m->perm, &t) != GPUMEM_OK)
        return NULL;
    gpumem_slice sl[4];
    for (int i = 0; i < m->ndim; i++) {
        /* stop just past the last element: slice bounds must lie inside the axis */
        int64_t last = m->start[i] + (m->shape[i] - 1) * m->step[i];
        sl[i].start = m->start[i];
        sl[i].stop = last + (m->step[i] > 0 ? 1 : -1);
        if (sl[i].stop < 0)
            sl[i].stop = GPUMEM_SLICE_DEFAULT; /* runs to before the first element */
        sl[i].step = m->step[i];
    }
    gpumem_status st = gpumem_array_slice(t, sl, m->ndim, &v);
    gpumem_array_release(t);
    return st == GPUMEM_OK ? v : NULL;
}

static int64_t model_size(const model *m, int64_t *bsize)
{
    int64_t n = 1, b = 1;
    for (int i = 0; i < m->ndim; i++) {
        n *= m->shape[i];
        b *= m->bshape[i];
    }
    *bsize = b;
    return n;
}

static void next_index(const model *m, int64_t *idx)
{
    for (int i = m->ndim - 1; i >= 0; i--) {
        if (++idx[i] < m->shape[i])
            return;
        idx[i] = 0;
    }
}

#define SENTINEL (-7)

/* One property case: a strided host view -> device (to_device), a device
 * view <- contiguous host, and device view -> strided host view; every
 * element checked against the model and every gap against the sentinel. */
static int property_case(int ndim, char *why, size_t whylen)
{
    model hm, dm;
    random_model(&hm, ndim, NULL);
    random_model(&dm, ndim, hm.shape);
    int64_t hb, db;
    int64_t n = model_size(&hm, &hb);
    model_size(&dm, &db);
    int32_t *hbase = malloc((size_t)hb * 4), *dhost = malloc((size_t)db * 4), *out = malloc((size_t)hb * 4);
    for (int64_t i = 0; i < hb; i++)
        hbase[i] = (int32_t)i;
    for (int64_t i = 0; i < db; i++)
        dhost[i] = SENTINEL;
    gpumem_array *H = NULL, *D = NULL, *hv = NULL, *dv = NULL, *dev = NULL, *O = NULL, *ov = NULL;
    int good = 0;
    gpumem_host_array_wrap(hbase, ndim, hm.bshape, NULL, i32, &H);
    gpumem_host_array_wrap(dhost, ndim, dm.bshape, NULL, i32, &D);
    hv = make_view(H, &hm);
    gpumem_array *Dd = NULL;
    gpumem_to_device(ctx, D, NULL, 0, &Dd); /* a device base full of sentinels */
    dv = Dd ? make_view(Dd, &dm) : NULL;
    if (!hv || !dv) {
        snprintf(why, whylen, "views: %s", gpumem_last_error());
        goto done;
    }
    /* 1. strided host -> contiguous device (to_device), read back */
    if (gpumem_to_device(ctx, hv, NULL, 0, &dev) != GPUMEM_OK) {
        snprintf(why, whylen, "to_device: %s", gpumem_last_error());
        goto done;
    }
    /* 2. device (contiguous) -> strided device view */
    if (gpumem_array_copy(dv, dev, NULL) != GPUMEM_OK) {
        snprintf(why, whylen, "D2D: %s", gpumem_last_error());
        goto done;
    }
    /* 3. the whole device base -> host, checked element by element and gap by gap */
    if (gpumem_copy_to_host(Dd, D, NULL) != GPUMEM_OK) {
        snprintf(why, whylen, "D2H: %s", gpumem_last_error());
        goto done;
    }
    char *written = calloc((size_t)db, 1);
    int64_t idx[4] = {0, 0, 0, 0};
    good = 1;
    for (int64_t k = 0; k < n && good; k++, next_index(&hm, idx)) {
        int64_t want = base_flat(&hm, idx), at = base_flat(&dm, idx);
        written[at] = 1;
        if (dhost[at] != want) {
            snprintf(why, whylen, "element %lld: %d, expected %lld", (long long)k, dhost[at], (long long)want);
            good = 0;
        }
    }
    for (int64_t i = 0; i < db && good; i++)
        if (!written[i] && dhost[i] != SENTINEL) {
            snprintf(why, whylen, "gap at %lld was written (%d)", (long long)i, dhost[i]);
            good = 0;
        }
    free(written);
    /* 4. strided device view -> strided host view of another buffer */
    if (good) {
        for (int64_t i = 0; i < hb; i++)
            out[i] = SENTINEL;
        gpumem_host_array_wrap(out, ndim, hm.bshape, NULL, i32, &O);
        ov = make_view(O, &hm);
        if (!ov || gpumem_copy_to_host(dv, ov, NULL) != GPUMEM_OK) {
            snprintf(why, whylen, "strided D2H: %s", gpumem_last_error());
            good = 0;
        }
        char *w2 = calloc((size_t)hb, 1);
        memset(idx, 0, sizeof idx);
        for (int64_t k = 0; k < n && good; k++, next_index(&hm, idx)) {
            int64_t at = base_flat(&hm, idx);
            w2[at] = 1;
            if (out[at] != hbase[at]) {
                snprintf(why, whylen, "back element %lld: %d, expected %d", (long long)k, out[at], hbase[at]);
                good = 0;
            }
        }
        for (int64_t i = 0; i < hb && good; i++)
            if (!w2[i] && out[i] != SENTINEL) {
                snprintf(why, whylen, "host gap at %lld was written", (long long)i);
                good = 0;
            }
        free(w2);
    }
    /* 5. reshapes of the device view: ravel in C and F order (a view or a
     * copy, as the layout allows), read back and compared in that order */
    for (int o = 0; o < 2 && good; o++) {
        char order = o ? 'F' : 'C';
        gpumem_array *flat = NULL, *hf = NULL;
        if (gpumem_array_ravel(dv, order, 0, NULL, &flat) != GPUMEM_OK ||
            gpumem_host_array_wrap(out, 1, (int64_t[]){n}, NULL, i32, &hf) != GPUMEM_OK ||
            gpumem_copy_to_host(flat, hf, NULL) != GPUMEM_OK) {
            snprintf(why, whylen, "ravel('%c'): %s", order, gpumem_last_error());
            good = 0;
        }
        int64_t fidx[4] = {0, 0, 0, 0};
        for (int64_t k = 0; k < n && good; k++) {
            if (out[k] != base_flat(&hm, fidx)) {
                snprintf(why, whylen, "ravel('%c')[%lld]: %d, expected %lld", order, (long long)k, out[k],
                         (long long)base_flat(&hm, fidx));
                good = 0;
            }
            if (o == 0) {
                next_index(&hm, fidx);
            } else { /* F order: the first axis runs fastest */
                for (int i = 0; i < ndim; i++) {
                    if (++fidx[i] < hm.shape[i])
                        break;
                    fidx[i] = 0;
                }
            }
        }
        gpumem_array_release(hf);
        gpumem_array_release(flat);
    }
done:
    gpumem_array_release(ov);
    gpumem_array_release(O);
    gpumem_array_release(dev);
    gpumem_array_release(dv);
    gpumem_array_release(Dd);
    gpumem_array_release(hv);
    gpumem_array_release(D);
    gpumem_array_release(H);
    free(hbase);
    free(dhost);
    free(out);
    return good;
}

int main(void)
{
    setenv("GPUMEM_COPY_MIN_ROW_BYTES", "0", 1);
    if (gpumem_context_create_default(&ctx) != GPUMEM_OK)
        bail_out("no context: %s", gpumem_last_error());
    i32 = gpumem_dtype_builtin(GPUMEM_INT32);
    const gpumem_dtype *f32 = gpumem_dtype_builtin(GPUMEM_FLOAT32);

    /* ---- call counts of the planner's cases */
    float a[4][6], b[4][6], c3[4][3];
    for (int i = 0; i < 24; i++)
        a[i / 6][i % 6] = (float)i;
    gpumem_array *ha = NULL, *hb = NULL, *hc = NULL, *d = NULL, *cols = NULL, *rows = NULL;
    gpumem_host_array_wrap(a, 2, (int64_t[]){4, 6}, NULL, f32, &ha);
    gpumem_host_array_wrap(b, 2, (int64_t[]){4, 6}, NULL, f32, &hb);
    counts c0 = snap();
    is_int(gpumem_to_device(ctx, ha, NULL, 0, &d), GPUMEM_OK, "to_device 4x6");
    counts dc = since(c0);
    ok(dc.c1 == 1 && dc.c2 == 0 && dc.c3 == 0, "contiguous to contiguous: one 1-D copy");
    c0 = snap();
    gpumem_copy_to_host(d, hb, NULL);
    dc = since(c0);
    ok(dc.c1 == 1 && dc.c2 == 0 && dc.c3 == 0 && memcmp(a, b, sizeof a) == 0, "and back: one 1-D copy, equal");

    gpumem_slice every_other_row[1] = {{GPUMEM_SLICE_DEFAULT, GPUMEM_SLICE_DEFAULT, 2}};
    gpumem_array_slice(d, every_other_row, 1, &rows);
    float r2[2][6];
    gpumem_array *hr = NULL;
    gpumem_host_array_wrap(r2, 2, (int64_t[]){2, 6}, NULL, f32, &hr);
    c0 = snap();
    gpumem_copy_to_host(rows, hr, NULL);
    dc = since(c0);
    ok(dc.c1 == 0 && dc.c2 == 1 && dc.c3 == 0, "d[::2] (rows at a pitch): one 2-D copy");
    ok(memcmp(r2[0], a[0], sizeof r2[0]) == 0 && memcmp(r2[1], a[2], sizeof r2[1]) == 0, "holding rows 0 and 2");

    gpumem_slice col_slice[2] = {GPUMEM_SLICE_ALL, {GPUMEM_SLICE_DEFAULT, GPUMEM_SLICE_DEFAULT, 2}};
    gpumem_array_slice(d, col_slice, 2, &cols);
    gpumem_host_array_wrap(c3, 2, (int64_t[]){4, 3}, NULL, f32, &hc);
    c0 = snap();
    is_int(gpumem_copy_to_host(cols, hc, NULL), GPUMEM_OK, "copy_to_host of d[:, ::2]");
    dc = since(c0);
    ok(dc.c1 + dc.c2 + dc.c3 == 1, "is one strided driver copy (%lld 1-D, %lld 2-D, %lld 3-D)", (long long)dc.c1,
       (long long)dc.c2, (long long)dc.c3);
    int good = 1;
    for (int i = 0; i < 12; i++)
        good = good && c3[i / 3][i % 3] == a[i / 3][(i % 3) * 2];
    ok(good, "with the even columns");

    /* numba#3553: writing into a strided destination never touches the gaps. */
    float ones[4][3];
    for (int i = 0; i < 12; i++)
        ones[i / 3][i % 3] = -1.0f;
    gpumem_array *h1 = NULL;
    gpumem_host_array_wrap(ones, 2, (int64_t[]){4, 3}, NULL, f32, &h1);
    is_int(gpumem_copy_to_device(cols, h1, NULL), GPUMEM_OK, "copy_to_device into d[:, ::2]");
    gpumem_copy_to_host(d, hb, NULL);
    good = 1;
    for (int i = 0; i < 24; i++)
        good = good && b[i / 6][i % 6] == ((i % 6) % 2 == 0 ? -1.0f : a[i / 6][i % 6]);
    ok(good, "the odd columns (the gaps) are untouched (numba#3553)");

    /* numba#3550: a broadcast source (stride 0). */
    float row[6] = {10, 11, 12, 13, 14, 15};
    gpumem_array *bc = NULL;
    gpumem_host_array_wrap(row, 2, (int64_t[]){4, 6}, (int64_t[]){0, 4}, f32, &bc);
    c0 = snap();
    is_int(gpumem_copy_to_device(d, bc, NULL), GPUMEM_OK, "copy a broadcast row into 4x6");
    dc = since(c0);
    gpumem_copy_to_host(d, hb, NULL);
    good = 1;
    for (int i = 0; i < 24; i++)
        good = good && b[i / 6][i % 6] == row[i % 6];
    ok(good, "every row equals the broadcast row (numba#3550)");
    ok(dc.c1 + dc.c2 + dc.c3 == 1, "packed on the host: one driver copy");

    /* numba#3723: negative strides on the host side. */
    gpumem_array *revh = NULL;
    gpumem_slice rev[2] = {{GPUMEM_SLICE_DEFAULT, GPUMEM_SLICE_DEFAULT, -1},
                           {GPUMEM_SLICE_DEFAULT, GPUMEM_SLICE_DEFAULT, -1}};
    gpumem_array_slice(ha, rev, 2, &revh);
    is_int(gpumem_copy_to_device(d, revh, NULL), GPUMEM_OK, "copy a[::-1, ::-1] to the device");
    gpumem_copy_to_host(d, hb, NULL);
    good = 1;
    for (int i = 0; i < 24; i++)
        good = good && b[i / 6][i % 6] == a[3 - i / 6][5 - i % 6];
    ok(good, "reversed on both axes (numba#3723)");
    gpumem_array_release(revh);

    /* Overlapping views of one device array: as if through a temporary. */
    gpumem_copy_to_device(d, ha, NULL);
    gpumem_array *lo = NULL, *hi = NULL, *flat = NULL;
    gpumem_array_ravel(d, 'C', GPUMEM_NO_COPY, NULL, &flat);
    gpumem_slice s_lo = {0, 20, 1}, s_hi = {4, 24, 1};
    gpumem_array_slice(flat, &s_lo, 1, &lo);
    gpumem_array_slice(flat, &s_hi, 1, &hi);
    is_int(gpumem_array_copy(hi, lo, NULL), GPUMEM_OK, "copy flat[0:20] into flat[4:24] (overlapping)");
    gpumem_copy_to_host(d, hb, NULL);
    good = 1;
    for (int i = 0; i < 24; i++)
        good = good && b[i / 6][i % 6] == (i < 4 ? (float)i : (float)(i - 4));
    ok(good, "the result is as if through a temporary");
    gpumem_array_release(lo);
    gpumem_array_release(hi);
    gpumem_array_release(flat);

    /* Host to host, transposed. */
    float t[6][4];
    gpumem_array *ht = NULL, *aT = NULL;
    gpumem_host_array_wrap(t, 2, (int64_t[]){6, 4}, NULL, f32, &ht);
    gpumem_array_transpose(ha, NULL, &aT);
    c0 = snap();
    is_int(gpumem_array_copy(ht, aT, NULL), GPUMEM_OK, "host to host: a.T into a 6x4 buffer");
    dc = since(c0);
    good = dc.c1 + dc.c2 + dc.c3 == 0;
    for (int i = 0; i < 24; i++)
        good = good && t[i / 4][i % 4] == a[i % 4][i / 4];
    ok(good, "transposed by the CPU, no driver call");
    gpumem_array_release(aT);
    gpumem_array_release(ht);

    /* Mismatches: distinct statuses, destination unchanged. */
    float keep[4][3];
    memcpy(keep, c3, sizeof c3);
    is_int(gpumem_copy_to_host(d, hc, NULL), GPUMEM_ERROR_SHAPE_MISMATCH, "shape mismatch");
    like(gpumem_last_error(), "(4, 3)", "the message gives the shapes");
    gpumem_array *hi32 = NULL;
    int32_t ib[4][6];
    gpumem_host_array_wrap(ib, 2, (int64_t[]){4, 6}, NULL, i32, &hi32);
    is_int(gpumem_copy_to_host(d, hi32, NULL), GPUMEM_ERROR_DTYPE_MISMATCH, "dtype mismatch");
    like(gpumem_last_error(), "<f4", "the message gives the dtypes");
    ok(memcmp(keep, c3, sizeof c3) == 0, "the destination is unchanged");
    is_int(gpumem_array_copy(NULL, d, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "a NULL destination");
    like(gpumem_last_error(), "'dst'", "names it");

    gpumem_array_release(hi32);
    gpumem_array_release(h1);
    gpumem_array_release(bc);
    gpumem_array_release(hr);
    gpumem_array_release(rows);
    gpumem_array_release(cols);
    gpumem_array_release(hc);
    gpumem_array_release(d);
    gpumem_array_release(ha);
    gpumem_array_release(hb);

    /* ---- property tests against the independent model */
    const char *seed_env = getenv("GPUMEM_TEST_SEED");
    rng_state = seed_env ? strtoull(seed_env, NULL, 0) : 20261121u;
    diag("property seed %llu (set GPUMEM_TEST_SEED to repeat)", (unsigned long long)rng_state);
    for (int ndim = 1; ndim <= 4; ndim++) {
        char why[512] = "";
        int all = 1, cases = 0;
        for (int k = 0; k < 60 && all; k++, cases++)
            all = property_case(ndim, why, sizeof why);
        ok(all, "%d-D random transposed/sliced views: both directions, D2D, ravel C and F (%d cases)%s%s", ndim, cases,
           all ? "" : ": ", why);
    }
    gpumem_context_release(ctx);
    done_testing();
    return exit_status();
}
