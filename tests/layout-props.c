/* The property tests of tests/test-layout: their random draws, failure
 * record and references, then the families of contiguity flags, extent,
 * index and sizes, contiguous and like strides, and slices. */
#include "config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpumem/status.h"
#include "layout.h"
#include "rng.h"
#include "tap.h"
#include "layout-test.h"

/* --------------------------------------------------------- properties ---- */

/* splitmix64.  The seed is fixed (GPUMEM_TEST_SEED overrides it), so every
 * run draws the same cases and a failure names its family and case. */
uint64_t rng_state;

static uint64_t rng_next(void)
{
    return splitmix64(&rng_state);
}

/* uniform in [lo, hi], lo <= hi */
int64_t rnd(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rng_next() % (uint64_t)(hi - lo + 1));
}

bool chance(int num, int den)
{
    return rnd(0, den - 1) < num;
}

int failures;
char first_failure[4096];

void fail(const char *fmt, ...)
{
    if (failures++ > 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(first_failure, sizeof first_failure, fmt, ap);
    va_end(ap);
}

const char *arr_text(const arr *a)
{
    static char bufs[4][2200];
    static int next;
    char *b = bufs[next++ % 4];
    snprintf(b, sizeof bufs[0], "shape %s strides %s itemsize %zu", vec(a->shape, a->ndim), vec(a->strides, a->ndim),
             a->itemsize);
    return b;
}

static const char *slices_text(const gm_slice *s, int n)
{
    static char buf[1024];
    size_t len = 1;
    buf[0] = '[';
    for (int i = 0; i < n && len < 900; i++) {
        char p[3][24];
        const int64_t v[3] = {s[i].start, s[i].stop, s[i].step};
        for (int k = 0; k < 3; k++) {
            if (v[k] == D)
                p[k][0] = '\0';
            else
                snprintf(p[k], sizeof p[k], "%" PRId64, v[k]);
        }
        if (s[i].stop == GM_SLICE_INDEX)
            len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s (index, step %s)", i ? ", " : "", p[0], p[2]);
        else
            len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s:%s:%s", i ? ", " : "", p[0], p[1], p[2]);
    }
    snprintf(buf + len, sizeof buf - len, "]");
    return buf;
}

void random_perm(int *perm, int n)
{
    for (int i = 0; i < n; i++)
        perm[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)rnd(0, i), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

/* Up to 6 axes of extents 0..maxext (0 now and then): a dense layout with
 * the axes in C, F or a random order, sometimes padded between axes; `wild`
 * adds negative strides, broadcasts (stride 0) and arbitrary strides on
 * extent-1 axes. */
void random_array(arr *a, int64_t maxext, bool wild)
{
    static const size_t sizes[] = {1, 2, 4, 8, 12, 16};
    a->ndim = (int)rnd(0, 6);
    a->itemsize = sizes[rnd(0, 5)];
    for (int i = 0; i < a->ndim; i++)
        a->shape[i] = chance(1, 12) ? 0 : rnd(1, maxext);
    int perm[GM_MAX_NDIM], style = (int)rnd(0, 3);
    random_perm(perm, a->ndim);
    if (style < 2)
        for (int i = 0; i < a->ndim; i++)
            perm[i] = style == 0 ? i : a->ndim - 1 - i;
    bool padded = chance(1, 3);
    int64_t s = (int64_t)a->itemsize * (padded && chance(1, 2) ? 2 : 1);
    for (int k = a->ndim - 1; k >= 0; k--) {
        int ax = perm[k];
        a->strides[ax] = s;
        s *= (a->shape[ax] > 0 ? a->shape[ax] : 1) + (padded ? rnd(0, 2) : 0);
    }
    if (!wild)
        return;
    for (int i = 0; i < a->ndim; i++) {
        if (chance(1, 5))
            a->strides[i] = -a->strides[i];
        if (chance(1, 12))
            a->strides[i] = 0;
        if (a->shape[i] == 1 && chance(1, 2))
            a->strides[i] = rnd(-100, 100);
    }
}

/* ---- the references: plain index arithmetic, nothing from layout.c ---- */

int64_t ref_count(int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++)
        n *= shape[i];
    return n;
}

int64_t ref_offset(int ndim, const int64_t *strides, const int64_t *idx)
{
    int64_t off = 0;
    for (int i = 0; i < ndim; i++)
        off += idx[i] * strides[i];
    return off;
}

/* The multi-index of position f in reading order: the last axis fastest, or
 * the first (fortran).  Only for non-empty shapes. */
void ref_unravel(int64_t f, int ndim, const int64_t *shape, bool fortran, int64_t *idx)
{
    for (int k = 0; k < ndim; k++) {
        int ax = fortran ? k : ndim - 1 - k;
        idx[ax] = f % shape[ax];
        f /= shape[ax];
    }
}

int64_t ref_ravel(int ndim, const int64_t *shape, bool fortran, const int64_t *idx)
{
    int64_t f = 0;
    for (int k = 0; k < ndim; k++) {
        int ax = fortran ? ndim - 1 - k : k;
        f = f * shape[ax] + idx[ax];
    }
    return f;
}

/* What NumPy's flag means: every element sits where a C (or F) array of
 * this shape and item size puts it. */
bool ref_contiguous(const arr *a, bool fortran)
{
    int64_t n = ref_count(a->ndim, a->shape), idx[GM_MAX_NDIM];
    for (int64_t f = 0; f < n; f++) {
        ref_unravel(f, a->ndim, a->shape, fortran, idx);
        if (ref_offset(a->ndim, a->strides, idx) != f * (int64_t)a->itemsize)
            return false;
    }
    return true;
}

/* NumPy's contiguous strides, an extent 0 counting as 1. */
void ref_fill(int ndim, const int64_t *shape, size_t itemsize, bool fortran, int64_t *strides)
{
    int64_t s = (int64_t)itemsize;
    for (int k = 0; k < ndim; k++) {
        int ax = fortran ? k : ndim - 1 - k;
        strides[ax] = s;
        s *= shape[ax] == 0 ? 1 : shape[ax];
    }
}

static int64_t mag(int64_t v)
{
    return v < 0 ? -v : v;
}

/* ---- flags, extent, index and sizes ---- */

void prop_flags(int c)
{
    arr a;
    random_array(&a, 5, true);
    int nd = a.ndim;
    int64_t is = (int64_t)a.itemsize;
    bool rc = ref_contiguous(&a, false), rf = ref_contiguous(&a, true);
    bool gc = gm_layout_is_c_contiguous(nd, a.shape, a.strides, a.itemsize);
    bool gf = gm_layout_is_f_contiguous(nd, a.shape, a.strides, a.itemsize);
    if (gc != rc || gf != rf)
        fail("case %d: %s: C %d F %d, expected C %d F %d", c, arr_text(&a), gc, gf, rc, rf);

    int64_t n = ref_count(nd, a.shape), idx[GM_MAX_NDIM], rlo = 0, rhi = 0;
    for (int64_t f = 0; f < n; f++) {
        ref_unravel(f, nd, a.shape, false, idx);
        int64_t o = ref_offset(nd, a.strides, idx);
        if (f == 0 || o < rlo)
            rlo = o;
        if (f == 0 || o + is > rhi)
            rhi = o + is;
    }
    int64_t lo = 1, hi = -1;
    if (!gm_layout_extent(nd, a.shape, a.strides, a.itemsize, &lo, &hi) || lo != rlo || hi != rhi)
        fail("case %d: %s: extent [%" PRId64 ", %" PRId64 "), expected [%" PRId64 ", %" PRId64 ")", c, arr_text(&a),
             lo, hi, rlo, rhi);

    int64_t index[GM_MAX_NDIM], roff = 0, off = -1;
    int bad = -1;
    for (int i = 0; i < nd; i++) {
        int64_t e = a.shape[i];
        index[i] = e == 0 || chance(1, 8) ? rnd(-e - 2, e + 1) : rnd(-e, e - 1);
        int64_t j = index[i] < 0 ? index[i] + e : index[i];
        if ((j < 0 || j >= e) && bad < 0)
            bad = i;
        roff += j * a.strides[i];
    }
    gpumem_status st = gm_layout_index("gpumem_array_get_item", nd, a.shape, a.strides, index, &off);
    if (bad >= 0) {
        char needle[64];
        snprintf(needle, sizeof needle, "axis %d: index %" PRId64 " is out of range", bad, index[bad]);
        if (st != GPUMEM_ERROR_INDEX_OUT_OF_RANGE || strstr(gpumem_last_error(), needle) == NULL)
            fail("case %d: %s: index %s gave %s '%s', expected '%s'", c, arr_text(&a), vec(index, nd),
                 gpumem_status_string(st), gpumem_last_error(), needle);
    } else if (st != GPUMEM_OK || off != roff) {
        fail("case %d: %s: index %s gave %s offset %" PRId64 ", expected %" PRId64, c, arr_text(&a), vec(index, nd),
             gpumem_status_string(st), off, roff);
    }

    int64_t size = -1, nbytes = -1;
    if (gm_layout_check_shape("t", nd, a.shape, a.itemsize, &size, &nbytes) != GPUMEM_OK || size != n ||
        nbytes != n * is)
        fail("case %d: %s: size %" PRId64 " nbytes %" PRId64 ", expected %" PRId64, c, arr_text(&a), size, nbytes, n);
}

/* ---- contiguous strides and strides_like ---- */

void prop_strides(int c)
{
    arr a;
    random_array(&a, 5, true);
    int nd = a.ndim;
    int64_t is = (int64_t)a.itemsize, cs[GM_MAX_NDIM], fs[GM_MAX_NDIM];
    ref_fill(nd, a.shape, a.itemsize, false, cs);
    ref_fill(nd, a.shape, a.itemsize, true, fs);
    for (int fo = 0; fo < 2; fo++) {
        arr b = a;
        gpumem_status st = gm_layout_contiguous_strides("t", nd, a.shape, a.itemsize, fo ? 'F' : 'C', b.strides);
        if (st != GPUMEM_OK || !eq(b.strides, fo ? fs : cs, nd) || !ref_contiguous(&b, fo))
            fail("case %d: %s: %c strides %s", c, arr_text(&a), fo ? 'F' : 'C', vec(b.strides, nd));
    }

    arr l = a;
    gm_layout_strides_like(nd, a.shape, a.strides, a.itemsize, l.strides);
    if (ref_contiguous(&a, false) || ref_contiguous(&a, true)) {
        const int64_t *want = ref_contiguous(&a, false) ? cs : fs;
        if (!eq(l.strides, want, nd))
            fail("case %d: like %s: %s, expected %s", c, arr_text(&a), vec(l.strides, nd), vec(want, nd));
        return;
    }
    /* dense: each element in its own slot of the first size * itemsize bytes */
    int64_t n = ref_count(nd, a.shape), idx[GM_MAX_NDIM];
    bool *seen = calloc((size_t)n, 1);
    if (seen == NULL)
        bail_out("out of memory");
    for (int64_t f = 0; f < n; f++) {
        ref_unravel(f, nd, a.shape, false, idx);
        int64_t o = ref_offset(nd, l.strides, idx);
        if (o % is != 0 || o < 0 || o / is >= n || seen[o / is]) {
            fail("case %d: like %s: %s is not dense", c, arr_text(&a), vec(l.strides, nd));
            break;
        }
        seen[o / is] = true;
    }
    free(seen);
    /* axes of extent != 1 ordered by decreasing |like stride|, ties by axis */
    int moving[GM_MAX_NDIM], nm = 0;
    for (int i = 0; i < nd; i++) {
        if (a.shape[i] == 1)
            continue;
        for (int k = 0; k < nm; k++) {
            int j = moving[k]; /* j < i */
            if ((mag(a.strides[j]) >= mag(a.strides[i])) != (l.strides[j] > l.strides[i]))
                fail("case %d: like %s: axes %d and %d out of order in %s", c, arr_text(&a), j, i,
                     vec(l.strides, nd));
        }
        moving[nm++] = i;
    }
    /* an extent-1 axis keeps its C place: the m axes of extent != 1 after it
     * are the m innermost ones */
    for (int i = 0; i < nd; i++) {
        if (a.shape[i] != 1)
            continue;
        int m = 0;
        for (int k = 0; k < nm; k++)
            m += moving[k] > i;
        int64_t want = is;
        for (int k = 0; k < nm; k++) {
            int inner = 0; /* how many moving axes have a smaller new stride */
            for (int q = 0; q < nm; q++)
                inner += l.strides[moving[q]] < l.strides[moving[k]];
            if (inner < m)
                want *= a.shape[moving[k]];
        }
        if (l.strides[i] != want)
            fail("case %d: like %s: extent-1 axis %d has stride %" PRId64 ", expected %" PRId64, c, arr_text(&a), i,
                 l.strides[i], want);
    }
}

/* ---- slices ---- */

/* The indices a slice picks from an axis of n (at most n of them), by
 * Python's loop with layout.h's strict bounds; an index (stop
 * GM_SLICE_INDEX) picks its one position, and *dropped says so.  0 if
 * valid, else 2 (start), 3 (stop), 4 (the index's position) or 5 (an
 * index's step or missing position). */
int ref_slice_axis(int64_t n, gm_slice s, int64_t *list, int64_t *len, int64_t *start, bool *dropped)
{
    *dropped = false;
    if (s.stop == IX) {
        if ((s.step != 0 && s.step != 1 && s.step != D) || s.start == D)
            return 5;
        int64_t k = s.start < 0 ? s.start + n : s.start;
        if (k < 0 || k >= n)
            return 4;
        *dropped = true;
        *len = 1;
        list[0] = k;
        *start = k;
        return 0;
    }
    int64_t step = s.step == D || s.step == 0 ? 1 : s.step; /* 0 reads as 1 */
    int64_t b = step > 0 ? 0 : n - 1, e = step > 0 ? n : -1;
    if (s.start != D) {
        b = s.start < 0 ? s.start + n : s.start;
        if (!(step > 0 ? b >= 0 && b <= n : (b >= 0 && b <= n - 1) || (n == 0 && b == 0)))
            return 2;
        if (n == 0)
            b = step > 0 ? 0 : -1; /* Python clamps into the empty axis */
    }
    if (s.stop != D) {
        e = s.stop < 0 ? s.stop + n : s.stop;
        if (!(step > 0 ? e >= 0 && e <= n : (e >= 0 && e <= n - 1) || (n == 0 && e == 0)))
            return 3;
    }
    *len = 0;
    for (int64_t i = b; step > 0 ? i < e : i > e; i += step)
        list[(*len)++] = i;
    *start = b;
    return 0;
}

gm_slice random_slice(int64_t n)
{
    gm_slice s;
    if (chance(1, 6)) { /* an index, now and then a bad one */
        s.start = chance(1, 30) ? D : rnd(-n - 1, n);
        s.stop = IX;
        s.step = chance(1, 30) ? rnd(2, 3) : chance(1, 3) ? 0 : chance(1, 2) ? D : 1;
        return s;
    }
    if (chance(1, 8))
        s.step = D;
    else if (chance(1, 20))
        s.step = 0;
    else
        s.step = (chance(1, 2) ? -1 : 1) * (chance(1, 6) ? rnd(4, 9) : rnd(1, 3));
    s.start = chance(1, 4) ? D : rnd(-n - 2, n + 1);
    s.stop = chance(1, 4) ? D : rnd(-n - 2, n + 1);
    return s;
}

/* Slices a into b, now and then in place (b as both input and output). */
gpumem_status do_slice(arr *a, const gm_slice *sl, int ns, arr *b, int64_t *off)
{
    *b = *a;
    if (chance(1, 2))
        return gm_layout_slice("gpumem_array_slice", b->ndim, b->shape, b->strides, sl, ns, &b->ndim, b->shape,
                               b->strides, off);
    return gm_layout_slice("gpumem_array_slice", a->ndim, a->shape, a->strides, sl, ns, &b->ndim, b->shape,
                           b->strides, off);
}

void prop_slice(int c)
{
    arr a, b;
    random_array(&a, 5, true);
    int nd = a.ndim, ns = (int)rnd(0, nd), err = 0, err_axis = -1;
    gm_slice sl[GM_MAX_NDIM];
    int64_t list[GM_MAX_NDIM][8], len[GM_MAX_NDIM], start[GM_MAX_NDIM];
    bool dropped[GM_MAX_NDIM];
    for (int i = 0; i < nd; i++) {
        if (i < ns) {
            sl[i] = random_slice(a.shape[i]);
            int e = ref_slice_axis(a.shape[i], sl[i], list[i], &len[i], &start[i], &dropped[i]);
            if (e != 0 && err == 0) {
                err = e;
                err_axis = i;
            }
        } else {
            len[i] = a.shape[i];
            start[i] = 0;
            dropped[i] = false;
            for (int j = 0; j < len[i]; j++)
                list[i][j] = j;
        }
    }
    /* the kept axes: their extents, and where each comes from */
    int kept = 0, from[GM_MAX_NDIM];
    int64_t wlen[GM_MAX_NDIM];
    for (int i = 0; i < nd; i++)
        if (!dropped[i]) {
            from[kept] = i;
            wlen[kept++] = len[i];
        }
    int64_t off = -1;
    gpumem_status st = do_slice(&a, sl, ns, &b, &off);
    if (err != 0) {
        static const gpumem_status want[] = {GPUMEM_OK, GPUMEM_OK, GPUMEM_ERROR_INDEX_OUT_OF_RANGE,
                                             GPUMEM_ERROR_INDEX_OUT_OF_RANGE, GPUMEM_ERROR_INDEX_OUT_OF_RANGE,
                                             GPUMEM_ERROR_INVALID_VALUE};
        static const char *const bound[] = {"", "", "start", "stop", "index", "an index"};
        char needle[64];
        snprintf(needle, sizeof needle, "gpumem_array_slice: axis %d: %s", err_axis, bound[err]);
        if (st != want[err] || strstr(gpumem_last_error(), needle) == NULL || b.ndim != nd ||
            !eq(b.shape, a.shape, nd))
            fail("case %d: %s %s gave %s '%s', expected %s with '%s'", c, arr_text(&a), slices_text(sl, ns),
                 gpumem_status_string(st), gpumem_last_error(), gpumem_status_string(want[err]), needle);
        return;
    }
    if (st != GPUMEM_OK || b.ndim != kept || !eq(b.shape, wlen, kept)) {
        fail("case %d: %s %s gave %s ndim %d shape %s, expected %d %s", c, arr_text(&a), slices_text(sl, ns),
             gpumem_status_string(st), b.ndim, vec(b.shape, b.ndim), kept, vec(wlen, kept));
        return;
    }
    int64_t n = ref_count(kept, b.shape), idx[GM_MAX_NDIM], src[GM_MAX_NDIM];
    for (int64_t f = 0; f < n; f++) {
        ref_unravel(f, kept, b.shape, false, idx);
        for (int i = 0; i < nd; i++)
            src[i] = list[i][0]; /* a dropped axis: its one position */
        for (int k = 0; k < kept; k++)
            src[from[k]] = list[from[k]][idx[k]];
        if (off + ref_offset(kept, b.strides, idx) != ref_offset(nd, a.strides, src)) {
            fail("case %d: %s %s: element %s at %" PRId64 " (strides %s offset %" PRId64 "), expected %" PRId64, c,
                 arr_text(&a), slices_text(sl, ns), vec(idx, kept), off + ref_offset(kept, b.strides, idx),
                 vec(b.strides, kept), off, ref_offset(nd, a.strides, src));
            return;
        }
    }
    if (n > 0)
        return;
    /* empty: offset 0 for an empty source, else the offset of one of its
     * elements - the valid starts' (NumPy's terms, the rest 0) */
    int64_t want = 0, m = ref_count(nd, a.shape);
    bool inside = m == 0;
    if (m > 0) {
        for (int i = 0; i < ns; i++)
            if (start[i] >= 0 && start[i] < a.shape[i])
                want += start[i] * a.strides[i];
        for (int64_t f = 0; f < m && !inside; f++) {
            ref_unravel(f, nd, a.shape, false, idx);
            inside = ref_offset(nd, a.strides, idx) == off;
        }
    }
    if (off != want || !inside)
        fail("case %d: %s %s: empty result at offset %" PRId64 ", expected %" PRId64 " inside the array", c,
             arr_text(&a), slices_text(sl, ns), off, want);
}
