/* The property tests of tests/test-layout, continued: transposes,
 * reshapes, views with another item size, chains of them with copies, and
 * run_family, which runs one family. */
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

/* ---- transposes ---- */

void prop_transpose(int c)
{
    arr a;
    random_array(&a, 5, true);
    int nd = a.ndim, axes[GM_MAX_NDIM], perm[GM_MAX_NDIM];
    bool null_axes = chance(1, 6);
    random_perm(perm, nd);
    for (int i = 0; i < nd; i++) {
        if (null_axes)
            perm[i] = nd - 1 - i;
        axes[i] = chance(1, 4) ? perm[i] - nd : perm[i];
    }
    if (!null_axes && nd > 0 && chance(1, 8)) {
        int i = (int)rnd(0, nd - 1);
        if (chance(1, 2))
            axes[i] = axes[(int)rnd(0, nd - 1)]; /* maybe a repeat */
        else
            axes[i] = chance(1, 2) ? nd + (int)rnd(0, 2) : -nd - 1 - (int)rnd(0, 2);
    }
    /* the reference's verdict: in range and each axis once */
    bool valid = true, used[GM_MAX_NDIM] = {false};
    for (int i = 0; i < nd && valid; i++) {
        int p = axes[i] < 0 ? axes[i] + nd : axes[i];
        valid = p >= 0 && p < nd && !used[p];
        if (valid) {
            used[p] = true;
            perm[i] = p;
        }
    }
    arr b = a;
    const arr *in = chance(1, 2) ? &b : &a; /* in place now and then */
    gpumem_status st = gm_layout_transpose("gpumem_array_transpose", nd, in->shape, in->strides,
                                           null_axes ? NULL : axes, b.shape, b.strides);
    if (!valid) {
        if (st != GPUMEM_ERROR_INVALID_VALUE || strstr(gpumem_last_error(), "gpumem_array_transpose: axes[") == NULL)
            fail("case %d: %s: a non-permutation gave %s '%s'", c, arr_text(&a), gpumem_status_string(st),
                 gpumem_last_error());
        return;
    }
    bool shape_ok = st == GPUMEM_OK;
    for (int k = 0; k < nd && shape_ok; k++)
        shape_ok = b.shape[k] == a.shape[perm[k]];
    if (!shape_ok) {
        fail("case %d: %s: transpose gave %s shape %s", c, arr_text(&a), gpumem_status_string(st), vec(b.shape, nd));
        return;
    }
    int64_t n = ref_count(nd, b.shape), idx[GM_MAX_NDIM], src[GM_MAX_NDIM];
    for (int64_t f = 0; f < n; f++) {
        ref_unravel(f, nd, b.shape, false, idx);
        for (int k = 0; k < nd; k++)
            src[perm[k]] = idx[k];
        if (ref_offset(nd, b.strides, idx) != ref_offset(nd, a.strides, src)) {
            fail("case %d: %s: transposed element %s is at %" PRId64 ", expected %" PRId64, c, arr_text(&a),
                 vec(idx, nd), ref_offset(nd, b.strides, idx), ref_offset(nd, a.strides, src));
            return;
        }
    }
}

/* ---- reshapes ---- */

/* A random shape of `size` elements: a random factorization (extent-1 axes
 * and all), or the old shape with axes merged, split, added or removed so
 * that views are likely. */
static int random_new_shape(const arr *a, int64_t size, int64_t *dims)
{
    int nd;
    if (chance(1, 2)) {
        nd = a->ndim;
        for (int i = 0; i < nd; i++)
            dims[i] = a->shape[i];
        for (int ops = (int)rnd(1, 3); ops > 0; ops--) {
            int kind = (int)rnd(0, 3);
            if (kind == 0 && nd >= 2) { /* merge axes i and i + 1 */
                int i = (int)rnd(0, nd - 2);
                dims[i] *= dims[i + 1];
                memmove(dims + i + 1, dims + i + 2, (size_t)(nd - i - 2) * sizeof *dims);
                nd--;
            } else if (kind == 1 && nd >= 1 && nd < 6) { /* split axis i */
                int i = (int)rnd(0, nd - 1);
                int64_t e = dims[i], d = 1;
                if (e == 0)
                    d = chance(1, 2) ? 0 : rnd(1, 3);
                else
                    for (int tries = 0; tries < 8 && (d == 1 || e % d != 0); tries++)
                        d = rnd(1, e);
                if (d != 0 && e % d != 0)
                    d = 1;
                memmove(dims + i + 1, dims + i, (size_t)(nd - i) * sizeof *dims);
                dims[i] = d;
                dims[i + 1] = e == 0 ? (d == 0 ? rnd(0, 3) : 0) : e / d;
                nd++;
            } else if (kind == 2 && nd < 6) { /* insert a 1 */
                int i = (int)rnd(0, nd);
                memmove(dims + i + 1, dims + i, (size_t)(nd - i) * sizeof *dims);
                dims[i] = 1;
                nd++;
            } else if (kind == 3) { /* remove a 1 */
                for (int i = 0; i < nd; i++) {
                    if (dims[i] == 1) {
                        memmove(dims + i, dims + i + 1, (size_t)(nd - i - 1) * sizeof *dims);
                        nd--;
                        break;
                    }
                }
            }
        }
        return nd;
    }
    if (size == 0) {
        nd = (int)rnd(1, 6);
        for (int i = 0; i < nd; i++)
            dims[i] = rnd(0, 5);
        dims[rnd(0, nd - 1)] = 0;
        return nd;
    }
    nd = (int)rnd(size == 1 ? 0 : 1, 6);
    int64_t rest = size;
    for (int i = 0; i < nd - 1; i++) {
        int64_t divs[96];
        int nd_ = 0;
        for (int64_t d = 1; d <= rest && nd_ < 96; d++)
            if (rest % d == 0)
                divs[nd_++] = d;
        dims[i] = divs[rnd(0, nd_ - 1)];
        rest /= dims[i];
    }
    if (nd > 0)
        dims[nd - 1] = rest;
    return nd;
}

/* A non-trivial source now and then: a random slice and transpose of a. */
static void random_view_of(arr *a)
{
    for (int tries = 0; tries < 4; tries++) {
        gm_slice sl[GM_MAX_NDIM];
        for (int i = 0; i < a->ndim; i++) {
            sl[i] = random_slice(a->shape[i]);
            if (sl[i].stop == IX)
                sl[i].stop = D; /* keep every axis */
        }
        arr b;
        int64_t off;
        if (do_slice(a, sl, a->ndim, &b, &off) == GPUMEM_OK) {
            *a = b;
            break;
        }
    }
    int perm[GM_MAX_NDIM];
    random_perm(perm, a->ndim);
    gm_layout_transpose("t", a->ndim, a->shape, a->strides, perm, a->shape, a->strides);
}

/* Whether some strides make the new shape read the old array's elements in
 * `order`: the stride of each new axis of extent > 1 is forced (the offset
 * of its unit index), so try those on every element. */
static bool ref_view_exists(const arr *a, int nd, const int64_t *dims, bool fo)
{
    int64_t n = ref_count(nd, dims), cand[GM_MAX_NDIM], e[GM_MAX_NDIM], oidx[GM_MAX_NDIM];
    if (n == 0)
        return true;
    for (int k = 0; k < nd; k++) {
        cand[k] = 0;
        if (dims[k] < 2)
            continue;
        memset(e, 0, sizeof e);
        e[k] = 1;
        ref_unravel(ref_ravel(nd, dims, fo, e), a->ndim, a->shape, fo, oidx);
        cand[k] = ref_offset(a->ndim, a->strides, oidx);
    }
    for (int64_t f = 0; f < n; f++) {
        ref_unravel(f, nd, dims, fo, e);
        ref_unravel(f, a->ndim, a->shape, fo, oidx);
        if (ref_offset(nd, cand, e) != ref_offset(a->ndim, a->strides, oidx))
            return false;
    }
    return true;
}

void prop_reshape(int c)
{
    arr a;
    random_array(&a, 5, true);
    if (chance(1, 2))
        random_view_of(&a);
    int64_t size = ref_count(a.ndim, a.shape), dims[GM_MAX_NDIM + 2];
    int nd = random_new_shape(&a, size, dims);
    if (nd > 0 && chance(1, 4))
        dims[rnd(0, nd - 1)] = -1;
    if (nd > 0 && chance(1, 12))
        dims[rnd(0, nd - 1)] += 1;
    if (nd > 1 && chance(1, 30))
        dims[0] = dims[nd - 1] = -1;
    if (nd > 0 && chance(1, 30))
        dims[rnd(0, nd - 1)] = -rnd(2, 5);
    static const char orders[] = "CFA";
    char order = orders[rnd(0, 2)];

    /* the reference's verdict and resolved shape */
    bool same = nd == a.ndim && eq(dims, a.shape, nd), valid = true;
    int unknown = -1;
    int64_t known = 1, want[GM_MAX_NDIM];
    for (int i = 0; i < nd; i++) {
        want[i] = dims[i];
        if (dims[i] == -1) {
            valid = valid && unknown < 0;
            unknown = i;
        } else if (dims[i] < 0) {
            valid = false;
        } else {
            known *= dims[i];
        }
    }
    if (valid && !same) {
        if (unknown >= 0 && known != 0 && size % known == 0)
            want[unknown] = size / known;
        else if (unknown >= 0 || known != size)
            valid = false;
    }

    arr b = a;
    bool view = false;
    b.ndim = nd;
    gpumem_status st = gm_layout_reshape("gpumem_array_reshape", a.ndim, a.shape, a.strides, a.itemsize, nd, dims,
                                         order, b.shape, b.strides, &view);
    if (!valid) {
        if (st != GPUMEM_ERROR_INVALID_RESHAPE || strstr(gpumem_last_error(), "gpumem_array_reshape: ") == NULL)
            fail("case %d: %s to %s gave %s '%s', expected GPUMEM_ERROR_INVALID_RESHAPE", c, arr_text(&a),
                 vec(dims, nd), gpumem_status_string(st), gpumem_last_error());
        return;
    }
    if (st != GPUMEM_OK || !eq(b.shape, want, nd)) {
        fail("case %d: %s to %s order %c gave %s '%s' shape %s", c, arr_text(&a), vec(dims, nd), order,
             gpumem_status_string(st), st != GPUMEM_OK ? gpumem_last_error() : "", vec(b.shape, nd));
        return;
    }
    bool rc = ref_contiguous(&a, false), rf = ref_contiguous(&a, true);
    bool fo = order == 'F' || (order == 'A' && rf && !rc);
    bool exists = ref_view_exists(&a, nd, want, fo);
    int64_t contig[GM_MAX_NDIM];
    ref_fill(nd, want, a.itemsize, fo, contig);
    const char *why = NULL;
    if (view != exists)
        why = exists ? "copies where a view exists" : "claims a view that cannot exist";
    else if (same && !eq(b.strides, a.strides, nd))
        why = "an unchanged shape must keep every stride";
    else if (!same && (fo ? rf : rc) && !eq(b.strides, contig, nd))
        why = "a contiguous array must get the contiguous strides";
    else if (!view && !eq(b.strides, contig, nd))
        why = "a copy must get the contiguous strides";
    int64_t n = view ? size : 0, nidx[GM_MAX_NDIM], oidx[GM_MAX_NDIM];
    for (int64_t f = 0; f < n && why == NULL; f++) {
        ref_unravel(f, nd, want, fo, nidx);
        ref_unravel(f, a.ndim, a.shape, fo, oidx);
        if (ref_offset(nd, b.strides, nidx) != ref_offset(a.ndim, a.strides, oidx))
            why = "the view reads another element";
    }
    if (why != NULL)
        fail("case %d: %s to %s order %c: %s (got %s strides %s)", c, arr_text(&a), vec(dims, nd), order, why,
             view ? "view" : "copy", vec(b.strides, nd));
}

/* ---- views with another item size ---- */

void prop_view(int c)
{
    static const size_t sizes[] = {0, 1, 2, 3, 4, 6, 8, 12, 16, 24};
    arr a;
    random_array(&a, 5, true);
    int nd = a.ndim, last = nd - 1;
    if (nd > 0 && chance(1, 2))
        a.strides[last] = (int64_t)a.itemsize;
    size_t news = chance(1, 5) ? a.itemsize : sizes[rnd(0, 9)];
    int64_t os = (int64_t)a.itemsize, ns = (int64_t)news, size = ref_count(nd, a.shape);

    /* NumPy's rule, in the reference's words: only the last axis changes,
     * and only if each of its rows is one run of bytes */
    bool valid = true;
    int64_t want_last = 0;
    if (ns != os) {
        if (nd == 0 || ns == 0) {
            valid = false;
        } else {
            int64_t e = a.shape[last];
            bool rows_are_runs = size == 0 || e == 1 || a.strides[last] == os;
            valid = rows_are_runs && (ns < os ? os % ns == 0 : (e * os) % ns == 0);
            want_last = e * os / ns;
        }
    }
    arr b = a;
    gpumem_status st =
        gm_layout_view("gpumem_array_view", nd, a.shape, a.strides, a.itemsize, news, b.shape, b.strides);
    if (!valid) {
        if (st != GPUMEM_ERROR_INVALID_VALUE || strstr(gpumem_last_error(), "gpumem_array_view: ") == NULL)
            fail("case %d: %s as item size %zu gave %s, expected GPUMEM_ERROR_INVALID_VALUE", c, arr_text(&a), news,
                 gpumem_status_string(st));
        return;
    }
    if (st != GPUMEM_OK) {
        fail("case %d: %s as item size %zu gave %s '%s'", c, arr_text(&a), news, gpumem_status_string(st),
             gpumem_last_error());
        return;
    }
    if (ns == os) {
        if (!eq(b.shape, a.shape, nd) || !eq(b.strides, a.strides, nd))
            fail("case %d: %s: the same item size changed the layout", c, arr_text(&a));
        return;
    }
    bool layout_ok = b.shape[last] == want_last && b.strides[last] == ns;
    for (int i = 0; i < last; i++)
        layout_ok = layout_ok && b.shape[i] == a.shape[i] && b.strides[i] == a.strides[i];
    if (!layout_ok) {
        fail("case %d: %s as item size %zu: shape %s strides %s", c, arr_text(&a), news, vec(b.shape, nd),
             vec(b.strides, nd));
        return;
    }
    /* element j of a row starts j * new bytes into the old row's bytes */
    int64_t n = ref_count(nd, b.shape), idx[GM_MAX_NDIM];
    for (int64_t f = 0; f < n; f++) {
        ref_unravel(f, nd, b.shape, false, idx);
        int64_t j = idx[last];
        idx[last] = 0;
        int64_t row = ref_offset(nd, a.strides, idx);
        idx[last] = j;
        if (ref_offset(nd, b.strides, idx) != row + j * ns || (j + 1) * ns > a.shape[last] * os) {
            fail("case %d: %s as item size %zu: element %s", c, arr_text(&a), news, vec(idx, nd));
            return;
        }
    }
}

/* ---- chains: fill, take views and copies, read back, compare ---- */

/* The current array of a chain: its layout, its data pointer (bytes from
 * the start of its buffer), the buffer's values by slot (byte offset /
 * itemsize), and the value each element must read, in C order. */
typedef struct chain {
    arr a;
    int64_t off, nslots;
    int64_t *buf, *table;
} chain;

static void *xmalloc(size_t n)
{
    void *p = malloc(n > 0 ? n : 1);
    if (p == NULL)
        bail_out("out of memory");
    return p;
}

/* Every element reads its value from inside the buffer; an empty array
 * still points inside it. */
static bool chain_check(const chain *ch, int c, int step, const char *op)
{
    const arr *a = &ch->a;
    int64_t is = (int64_t)a->itemsize, n = ref_count(a->ndim, a->shape), idx[GM_MAX_NDIM];
    for (int64_t f = 0; f < n; f++) {
        ref_unravel(f, a->ndim, a->shape, false, idx);
        int64_t pos = ch->off + ref_offset(a->ndim, a->strides, idx);
        if (pos % is != 0 || pos < 0 || pos / is >= ch->nslots) {
            fail("case %d step %d (%s): %s: element %s at byte %" PRId64 " is outside the buffer of %" PRId64
                 " bytes", c, step, op, arr_text(a), vec(idx, a->ndim), pos, ch->nslots * is);
            return false;
        }
        if (ch->buf[pos / is] != ch->table[f]) {
            fail("case %d step %d (%s): %s: element %s reads %" PRId64 ", expected %" PRId64, c, step, op,
                 arr_text(a), vec(idx, a->ndim), ch->buf[pos / is], ch->table[f]);
            return false;
        }
    }
    if (n == 0 && (ch->nslots == 0 ? ch->off != 0 : ch->off < 0 || ch->off >= ch->nslots * is)) {
        fail("case %d step %d (%s): %s: an empty array points at byte %" PRId64 " of %" PRId64, c, step, op,
             arr_text(a), ch->off, ch->nslots * is);
        return false;
    }
    return true;
}

void prop_chain(int c)
{
    chain ch;
    random_array(&ch.a, 4, true);
    arr *a = &ch.a;
    int64_t is = (int64_t)a->itemsize, n = ref_count(a->ndim, a->shape), idx[GM_MAX_NDIM], src[GM_MAX_NDIM];
    /* the buffer spans the elements' offsets; every slot has its own value */
    int64_t lo = 0, hi = 0;
    for (int64_t f = 0; f < n; f++) {
        ref_unravel(f, a->ndim, a->shape, false, idx);
        int64_t o = ref_offset(a->ndim, a->strides, idx);
        lo = f == 0 || o < lo ? o : lo;
        hi = f == 0 || o + is > hi ? o + is : hi;
    }
    ch.off = -lo;
    ch.nslots = (hi - lo) / is;
    ch.buf = xmalloc((size_t)ch.nslots * sizeof *ch.buf);
    for (int64_t s = 0; s < ch.nslots; s++)
        ch.buf[s] = 1000000 + s;
    ch.table = xmalloc((size_t)n * sizeof *ch.table);
    for (int64_t f = 0; f < n; f++) {
        ref_unravel(f, a->ndim, a->shape, false, idx);
        ch.table[f] = ch.buf[(ch.off + ref_offset(a->ndim, a->strides, idx)) / is];
    }

    for (int step = 0, steps = (int)rnd(3, 6); step < steps; step++) {
        arr b = *a;
        int64_t *table = NULL;
        const char *op;
        int kind = (int)rnd(0, 3);
        if (kind == 0) {
            op = "slice";
            gm_slice sl[GM_MAX_NDIM];
            int64_t *list[GM_MAX_NDIM], len[GM_MAX_NDIM], start[GM_MAX_NDIM], off = 0, room = 0;
            bool dropped[GM_MAX_NDIM] = {false};
            int ns = (int)rnd(0, a->ndim), bad = 0;
            for (int i = 0; i < ns; i++)
                room += a->shape[i] + 1;
            int64_t *lists = xmalloc((size_t)room * sizeof *lists);
            for (int i = 0, at = 0; i < ns; at += (int)a->shape[i] + 1, i++) {
                sl[i] = random_slice(a->shape[i]);
                list[i] = lists + at;
                bad |= ref_slice_axis(a->shape[i], sl[i], list[i], &len[i], &start[i], &dropped[i]);
            }
            if (bad != 0 || do_slice(a, sl, ns, &b, &off) != GPUMEM_OK) {
                free(lists);
                continue; /* prop_slice checks the errors */
            }
            table = xmalloc((size_t)ref_count(b.ndim, b.shape) * sizeof *table);
            for (int64_t f = 0; f < ref_count(b.ndim, b.shape); f++) {
                ref_unravel(f, b.ndim, b.shape, false, idx);
                for (int i = 0, k = 0; i < a->ndim; i++)
                    src[i] = i >= ns ? idx[k++] : dropped[i] ? list[i][0] : list[i][idx[k++]];
                table[f] = ch.table[ref_ravel(a->ndim, a->shape, false, src)];
            }
            free(lists);
            ch.off += off;
        } else if (kind == 1) {
            op = "transpose";
            int perm[GM_MAX_NDIM];
            random_perm(perm, a->ndim);
            if (gm_layout_transpose("t", a->ndim, a->shape, a->strides, perm, b.shape, b.strides) != GPUMEM_OK) {
                fail("case %d step %d: transpose of %s failed", c, step, arr_text(a));
                break;
            }
            table = xmalloc((size_t)n * sizeof *table);
            for (int64_t f = 0; f < n; f++) {
                ref_unravel(f, b.ndim, b.shape, false, idx);
                for (int k = 0; k < b.ndim; k++)
                    src[perm[k]] = idx[k];
                table[f] = ch.table[ref_ravel(a->ndim, a->shape, false, src)];
            }
        } else {
            op = "reshape";
            static const char orders[] = "CFA";
            char order = orders[rnd(0, 2)];
            int64_t dims[GM_MAX_NDIM + 2];
            b.ndim = random_new_shape(a, n, dims);
            bool view = false;
            if (gm_layout_reshape("t", a->ndim, a->shape, a->strides, a->itemsize, b.ndim, dims, order, b.shape,
                                  b.strides, &view) != GPUMEM_OK) {
                fail("case %d step %d: reshape of %s to %s failed: %s", c, step, arr_text(a), vec(dims, b.ndim),
                     gpumem_last_error());
                break;
            }
            bool fo = order == 'F' || (order == 'A' && ref_contiguous(a, true) && !ref_contiguous(a, false));
            table = xmalloc((size_t)n * sizeof *table);
            for (int64_t f = 0; f < n; f++) {
                ref_unravel(f, b.ndim, b.shape, fo, idx);
                ref_unravel(f, a->ndim, a->shape, fo, src);
                table[ref_ravel(b.ndim, b.shape, false, idx)] = ch.table[ref_ravel(a->ndim, a->shape, false, src)];
            }
            if (!view) {
                /* a copy: a new buffer, written through the new strides,
                 * each slot exactly once */
                op = "reshape (copy)";
                free(ch.buf);
                ch.buf = xmalloc((size_t)n * sizeof *ch.buf);
                for (int64_t s = 0; s < n; s++)
                    ch.buf[s] = -1;
                ch.nslots = n;
                ch.off = 0;
                for (int64_t f = 0; f < n; f++) {
                    ref_unravel(f, b.ndim, b.shape, false, idx);
                    int64_t pos = ref_offset(b.ndim, b.strides, idx);
                    if (pos % is != 0 || pos < 0 || pos / is >= n || ch.buf[pos / is] != -1) {
                        fail("case %d step %d: the copy's strides %s of shape %s are not dense", c, step,
                             vec(b.strides, b.ndim), vec(b.shape, b.ndim));
                        break;
                    }
                    ch.buf[pos / is] = table[f];
                }
            }
        }
        free(ch.table);
        ch.table = table;
        *a = b;
        n = ref_count(a->ndim, a->shape);
        if (!chain_check(&ch, c, step, op))
            break;
    }
    free(ch.buf);
    free(ch.table);
}

void run_family(const char *name, unsigned id, void (*fn)(int), int results, int per_result, uint64_t seed)
{
    rng_state = seed ^ (id * UINT64_C(0xd1b54a32d192ed03));
    for (int r = 0; r < results; r++) {
        failures = 0;
        for (int c = r * per_result; c < (r + 1) * per_result; c++)
            fn(c);
        if (!ok(failures == 0, "%s: cases %d-%d", name, r * per_result, (r + 1) * per_result - 1))
            diag("  %d failing (seed %#" PRIx64 "); the first: %s", failures, seed, first_failure);
    }
}
