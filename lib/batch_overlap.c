/*
 * batch_overlap.c - whether the pairs of a batched copy (copy_batch.c) may
 * run at once: no destination may share a byte with another pair's
 * destination or source.
 *
 * Each side's bytes are a normalized layout (span); two layouts are
 * compared byte for byte (span_meet), within a bounded number of steps,
 * and only when their byte ranges meet: every side's range goes into a
 * search tree sorted by its lowest byte, and each destination asks it for
 * the ranges that meet its own.  So a batch of n pairs costs O(n log n),
 * plus the byte-for-byte comparisons of the pairs whose ranges meet.
 */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "batch_overlap.h"
#include "error.h"

/* ---- which bytes an array touches ------------------------------------------------------------- */

/* An array's bytes as a normalized layout: its address space (device or
 * host), the address of its lowest byte, and the axes of extent > 1 with
 * a nonzero stride, made positive. */
typedef struct span {
    int space;      /* 0: none (no bytes); 1: device addresses; 2: host addresses */
    uint64_t addr;  /* the lowest element's address */
    int n;
    int64_t ext[GM_MAX_NDIM];
    int64_t str[GM_MAX_NDIM];
    uint64_t isz;
    uint64_t hi;    /* one past the highest byte */
} span;

static void span_of(const gpumem_array *a, span *s)
{
    memset(s, 0, sizeof *s);
    if (gm_array_size(a) == 0 || a->itemsize == 0)
        return;
    s->space = gm_array_on_device(a) ? 1 : 2;
    uint64_t addr = s->space == 1 ? (uint64_t)a->dev : (uint64_t)(uintptr_t)a->host;
    uint64_t reach = a->itemsize;
    for (int i = 0; i < a->ndim; i++) {
        int64_t n = a->shape[i], st = a->strides[i];
        if (n <= 1 || st == 0)
            continue;
        if (st < 0) { /* the same bytes, walked the other way */
            addr -= (uint64_t)((n - 1) * -st);
            st = -st;
        }
        s->ext[s->n] = n;
        s->str[s->n] = st;
        s->n++;
        reach += (uint64_t)((n - 1) * st);
    }
    s->addr = addr;
    s->isz = a->itemsize;
    s->hi = addr + reach;
}

/* Whether a layout's bytes fill [addr, hi) with no gap. */
static bool span_dense(const span *s)
{
    uint64_t covered = s->isz; /* elements x itemsize <= hi - addr, equal only without gaps or overlap */
    for (int i = 0; i < s->n; i++)
        if (__builtin_mul_overflow(covered, (uint64_t)s->ext[i], &covered))
            return false;
    if (covered != s->hi - s->addr)
        return false;
    /* equal counts: dense unless two elements share bytes, which a layout
     * of sorted strides each at least the span of the ones below it rules out */
    int64_t order[GM_MAX_NDIM];
    for (int i = 0; i < s->n; i++)
        order[i] = s->str[i];
    for (int i = 1; i < s->n; i++) /* insertion sort, descending */
        for (int j = i; j > 0 && order[j - 1] < order[j]; j--) {
            int64_t t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    uint64_t below = s->isz;
    for (int i = s->n - 1; i >= 0; i--) {
        if ((uint64_t)order[i] < below)
            return false;
        below = (uint64_t)order[i]; /* the next one up must step over this whole axis */
        int64_t e = 1;
        for (int k = 0; k < s->n; k++)
            if (s->str[k] == order[i])
                e = s->ext[k];
        below *= (uint64_t)e;
    }
    return true;
}

static int span_meet(const span *a, const span *b, long *budget);

/* s without its axis k, its element 0 moved by `shift` bytes. */
static void span_drop(const span *s, int k, uint64_t shift, span *out)
{
    *out = *s;
    out->n = 0;
    for (int i = 0; i < s->n; i++)
        if (i != k) {
            out->ext[out->n] = s->ext[i];
            out->str[out->n] = s->str[i];
            out->n++;
        }
    out->addr = s->addr + shift;
    out->hi = out->addr + (s->hi - s->addr - (uint64_t)((s->ext[k] - 1) * s->str[k]));
}

/* Two views of one array (two columns, two blocks): both have an axis of
 * the largest stride S of either, and without it each spans at most S
 * bytes.  Index i of a's axis meets index j of b's only where the two
 * sub-views, S * (i - j) apart, meet: at most two values of i - j are that
 * close, so the question is asked of the sub-views at those shifts (no
 * walk over the indices).  false when the views are not of that shape. */
static bool span_lattice(const span *a, const span *b, long *budget, int *r)
{
    int ia = -1, ib = -1;
    int64_t S = 0;
    for (int i = 0; i < a->n; i++)
        S = a->str[i] > S ? a->str[i] : S;
    for (int i = 0; i < b->n; i++)
        S = b->str[i] > S ? b->str[i] : S;
    for (int i = 0; i < a->n && ia < 0; i++)
        ia = a->str[i] == S ? i : -1;
    for (int i = 0; i < b->n && ib < 0; i++)
        ib = b->str[i] == S ? i : -1;
    if (ia < 0 || ib < 0)
        return false;
    uint64_t sa = a->hi - a->addr - (uint64_t)((a->ext[ia] - 1) * S);
    uint64_t sb = b->hi - b->addr - (uint64_t)((b->ext[ib] - 1) * S);
    if (sa > (uint64_t)S || sb > (uint64_t)S)
        return false;
    /* the extents meet, so the two addresses are less than the larger span apart */
    int64_t diff = b->addr >= a->addr ? (int64_t)(b->addr - a->addr) : -(int64_t)(a->addr - b->addr);
    int64_t k0 = diff / S - (diff % S < 0 ? 1 : 0); /* floor(diff / S) */
    *r = 0;
    for (int64_t k = k0 - 1; k <= k0 + 1 && *r == 0; k++) {
        /* a's index i = j + k meets b's index j only when diff - S < k * S < diff + S */
        if (k * S <= diff - S || k * S >= diff + S || k > a->ext[ia] - 1 || -k > b->ext[ib] - 1)
            continue;
        span x, y; /* a's sub-view k strides on, b's at its index 0 (shifted up instead when k < 0) */
        span_drop(a, ia, k > 0 ? (uint64_t)(k * S) : 0, &x);
        span_drop(b, ib, k < 0 ? (uint64_t)(-k * S) : 0, &y);
        *r = span_meet(&x, &y, budget);
    }
    return true;
}

/* Whether two layouts of one address space share a byte: 1 yes, 0 no, -1
 * when that takes more than *budget steps to tell.  Splits the axis with
 * the largest stride of either side into its indices, keeping only those
 * whose bytes reach the other side's extent, until both are one element
 * (a dense side meets any side whose first or last byte falls in it). */
static int span_meet(const span *a, const span *b, long *budget)
{
    if (--*budget < 0)
        return -1;
    if (a->hi <= b->addr || b->hi <= a->addr)
        return 0;
    if (a->n == 0 && b->n == 0)
        return 1;
    bool ad = span_dense(a), bd = span_dense(b);
    if ((ad && (b->addr >= a->addr || b->hi <= a->hi)) || (bd && (a->addr >= b->addr || a->hi <= b->hi)))
        return 1; /* an end of one lies inside the other, which has no gap */
    int r;
    if (span_lattice(a, b, budget, &r))
        return r;
    const span *x = a, *y = b;
    int axis = -1;
    int64_t best = 0;
    for (int i = 0; i < a->n; i++)
        if (a->str[i] > best) {
            best = a->str[i];
            x = a, y = b, axis = i;
        }
    for (int i = 0; i < b->n; i++)
        if (b->str[i] > best) {
            best = b->str[i];
            x = b, y = a, axis = i;
        }
    /* x without the axis: its bytes from x->addr + k * best to that + inner */
    span sub = *x;
    sub.n = 0;
    for (int i = 0; i < x->n; i++)
        if (i != axis) {
            sub.ext[sub.n] = x->ext[i];
            sub.str[sub.n] = x->str[i];
            sub.n++;
        }
    uint64_t inner = x->hi - x->addr - (uint64_t)((x->ext[axis] - 1) * best);
    /* index k reaches y when x->addr + k*best < y->hi and x->addr + k*best + inner > y->addr */
    int64_t first = 0, last = x->ext[axis] - 1;
    if (y->addr + 1 > x->addr + inner) {
        uint64_t need = y->addr + 1 - (x->addr + inner); /* k*best >= need */
        int64_t k = (int64_t)((need + (uint64_t)best - 1) / (uint64_t)best);
        if (k > first)
            first = k;
    }
    if (y->hi <= x->addr)
        return 0;
    int64_t k = (int64_t)((y->hi - 1 - x->addr) / (uint64_t)best);
    if (k < last)
        last = k;
    for (int64_t i = first; i <= last; i++) {
        sub.addr = x->addr + (uint64_t)(i * best);
        sub.hi = sub.addr + inner;
        r = span_meet(&sub, y, budget);
        if (r != 0)
            return r;
    }
    return 0;
}

/* The steps span_meet may take for one check of two pairs. */
#define MEET_BUDGET (1L << 22)

/* The byte range [lo, hi) of one side of a pair, in the order the ranges
 * are searched: by address space, then lowest byte. */
typedef struct side_range {
    int space;
    uint64_t lo, hi;
    size_t pair;
    int other; /* 0: the pair's destination, 1: its source */
} side_range;

static int range_cmp(const void *a, const void *b)
{
    const side_range *x = a, *y = b;
    if (x->space != y->space)
        return x->space < y->space ? -1 : 1;
    return x->lo < y->lo ? -1 : x->lo > y->lo ? 1 : 0;
}

/* The ranges r[lo, hi) sorted by their lowest byte, as an implicit search
 * tree: the node of a subrange is its middle, and top[middle] the highest
 * byte (hi) of the subrange, so a search skips the subranges that end
 * before it. */
static uint64_t tree_build(const side_range *r, uint64_t *top, size_t lo, size_t hi)
{
    if (lo >= hi)
        return 0;
    size_t mid = lo + (hi - lo) / 2;
    uint64_t t = r[mid].hi, l = tree_build(r, top, lo, mid), h = tree_build(r, top, mid + 1, hi);
    t = l > t ? l : t;
    t = h > t ? h : t;
    top[mid] = t;
    return t;
}

/* A candidate: a side of another pair whose range meets a destination's. */
typedef struct candidate {
    size_t pair;
    int other;
} candidate;

static int candidate_cmp(const void *a, const void *b)
{
    const candidate *x = a, *y = b;
    if (x->pair != y->pair)
        return x->pair < y->pair ? -1 : 1;
    return x->other - y->other;
}

typedef struct candidates {
    candidate *c;
    size_t n, cap;
    bool oom;
} candidates;

/* Adds to out every range of r[lo, hi) that meets [a, b), but for pair i's
 * own sides and the destinations of pairs before i (checked from theirs). */
static void tree_find(const side_range *r, const uint64_t *top, size_t lo, size_t hi, uint64_t a, uint64_t b,
                      size_t i, candidates *out)
{
    while (lo < hi && top[lo + (hi - lo) / 2] > a) {
        size_t mid = lo + (hi - lo) / 2;
        tree_find(r, top, lo, mid, a, b, i, out); /* lower starts: some may reach a */
        if (r[mid].lo >= b)
            return; /* this one and every later one start at or after b */
        if (r[mid].hi > a && r[mid].pair != i && (r[mid].other == 1 || r[mid].pair > i)) {
            if (out->n == out->cap) {
                size_t cap = out->cap ? 2 * out->cap : 16;
                candidate *c = realloc(out->c, cap * sizeof *c);
                if (c == NULL) {
                    out->oom = true;
                    return;
                }
                out->c = c;
                out->cap = cap;
            }
            out->c[out->n++] = (candidate){r[mid].pair, r[mid].other};
        }
        lo = mid + 1;
    }
}

/* GPUMEM_ERROR_INVALID_VALUE when a destination shares memory with
 * another pair's destination or source.  The pairs are judged in the order
 * of a walk over destination i, then pair j != i, then j's destination
 * (once per two destinations) before its source, and the first that
 * shares memory (or may) is the one reported; but only the sides whose
 * byte ranges meet (found in a search tree of every side's range, sorted)
 * are looked at byte for byte: O(n log n) and the pairs whose ranges meet. */
gpumem_status gm_batch_check_collisions(const batch_names *nm, size_t n, gpumem_array *const *dst,
                                      gpumem_array *const *src)
{
    if (n < 2)
        return GPUMEM_OK;
    span *d = malloc(n * sizeof *d), *s = malloc(n * sizeof *s);
    side_range *r = malloc(2 * n * sizeof *r);
    uint64_t *top = malloc(2 * n * sizeof *top);
    candidates found = {NULL, 0, 0, false};
    gpumem_status st = GPUMEM_OK;
    if (d == NULL || s == NULL || r == NULL || top == NULL)
        goto oom;
    size_t nr = 0;
    for (size_t i = 0; i < n; i++) {
        span_of(dst[i], &d[i]);
        span_of(src[i], &s[i]);
        if (d[i].space != 0)
            r[nr++] = (side_range){d[i].space, d[i].addr, d[i].hi, i, 0};
        if (s[i].space != 0)
            r[nr++] = (side_range){s[i].space, s[i].addr, s[i].hi, i, 1};
    }
    qsort(r, nr, sizeof *r, range_cmp);
    size_t first[3] = {nr, nr, nr}, last[3] = {0, 0, 0}; /* each space's ranges: r[first, last) */
    for (size_t k = nr; k-- > 0;)
        first[r[k].space] = k;
    for (size_t k = 0; k < nr; k++)
        last[r[k].space] = k + 1;
    for (int sp = 1; sp <= 2; sp++)
        if (first[sp] < last[sp])
            tree_build(r, top, first[sp], last[sp]);
    for (size_t i = 0; i < n && st == GPUMEM_OK; i++) {
        const span *di = &d[i];
        if (di->space == 0 || first[di->space] >= last[di->space])
            continue;
        found.n = 0;
        tree_find(r, top, first[di->space], last[di->space], di->addr, di->hi, i, &found);
        if (found.oom)
            goto oom;
        if (found.n > 1)
            qsort(found.c, found.n, sizeof *found.c, candidate_cmp); /* the walk's order */
        for (size_t c = 0; c < found.n && st == GPUMEM_OK; c++) {
            size_t j = found.c[c].pair;
            int other = found.c[c].other;
            long budget = MEET_BUDGET;
            int m = span_meet(di, other == 0 ? &d[j] : &s[j], &budget);
            if (m == 0)
                continue;
            char a[64], b[64];
            nm->name(a, sizeof a, i, true);
            nm->name(b, sizeof b, j, other == 0);
            st = gm_error(GPUMEM_ERROR_INVALID_VALUE,
                          m > 0 ? "%s: %s shares memory with %s: the pairs of a batch may run at once, so a "
                                  "destination may overlap only its own source"
                                : "%s: %s may share memory with %s (too many elements to tell): the pairs of a "
                                  "batch may run at once, so a destination may overlap only its own source",
                          nm->what, a, b);
        }
    }
    goto done;
oom:
    st = gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", nm->what);
done:
    free(found.c);
    free(top);
    free(r);
    free(d);
    free(s);
    return st;
}

