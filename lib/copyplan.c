/*
 * copyplan.c - the copy planner (see copyplan.h for the steps and the plans
 * they give).  Needs only layout.h's constants, none of its functions.
 */
#include "config.h"

#include <stdbool.h>
#include <string.h>

#include "copyplan.h"
#include "error.h"

/* One axis as both sides see it: extent, source and destination strides. */
typedef struct cp_axis {
    int64_t n, s, d;
} cp_axis;

/* size_t may be narrower than int64_t (32-bit hosts); a plan field must
 * hold the value exactly.  The #if avoids an always-true comparison. */
static bool fits_size(int64_t v)
{
#if SIZE_MAX < INT64_MAX
    return v >= 0 && (uint64_t)v <= SIZE_MAX;
#else
    return v >= 0;
#endif
}

/* The bytes one side spans, [lo, hi + itemsize), must fit in int64_t: then
 * every partial sum of index * stride that planning, flipping and visiting
 * form lies inside it and cannot overflow. */
static bool span_fits(int n, const cp_axis *ax, bool src, int64_t itemsize)
{
    int64_t lo = 0, hi = 0, t, span;
    for (int i = 0; i < n; i++) {
        if (__builtin_mul_overflow(ax[i].n - 1, src ? ax[i].s : ax[i].d, &t))
            return false;
        if (t < 0 ? __builtin_add_overflow(lo, t, &lo) : __builtin_add_overflow(hi, t, &hi))
            return false;
    }
    return !__builtin_sub_overflow(hi, lo, &span) && !__builtin_add_overflow(span, itemsize, &span);
}

static bool pitch_ok(int64_t stride, int64_t width, size_t max_pitch)
{
    return stride >= width && fits_size(stride) && (size_t)stride <= max_pitch;
}

static bool level2_ok(const cp_axis *a, int64_t width, size_t max_pitch)
{
    return fits_size(a->n) && pitch_ok(a->s, width, max_pitch) && pitch_ok(a->d, width, max_pitch);
}

/* stride = pitch * rows with rows >= height; pitch > 0 (a 2-D level's). */
static bool slice_ok(int64_t stride, int64_t pitch, int64_t height)
{
    return stride > 0 && stride % pitch == 0 && stride / pitch >= height && fits_size(stride / pitch);
}

static bool level3_ok(const cp_axis *a3, const cp_axis *a2)
{
    return fits_size(a3->n) && slice_ok(a3->s, a2->s, a2->n) && slice_ok(a3->d, a2->d, a2->n);
}

gpumem_status gm_copy_plan_make(int ndim, const int64_t *shape, const int64_t *src_strides,
                                const int64_t *dst_strides, size_t itemsize, size_t max_pitch,
                                gm_copy_plan *plan)
{
    GM_CHECK_NULL(plan);
    if (ndim < 0)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "ndim %d is negative", ndim);
    if (ndim > GM_MAX_NDIM)
        return gm_error(GPUMEM_ERROR_TOO_MANY_DIMENSIONS, "ndim %d exceeds the maximum %d", ndim, GM_MAX_NDIM);
    if (ndim > 0) {
        GM_CHECK_NULL(shape);
        GM_CHECK_NULL(src_strides);
        GM_CHECK_NULL(dst_strides);
    }
    if (itemsize > INT64_MAX)
        return gm_error(GPUMEM_ERROR_OVERFLOW, "item size %zu does not fit in int64_t", itemsize);

    gm_copy_plan p;
    memset(&p, 0, sizeof p);
    bool empty = itemsize == 0, too_many = false;
    int64_t size = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            return gm_error(GPUMEM_ERROR_NEGATIVE_DIMENSION, "axis %d has extent %lld", i, (long long)shape[i]);
        empty |= shape[i] == 0;
        too_many |= __builtin_mul_overflow(size, shape[i], &size);
    }
    /* A checked shape never trips this; it keeps every product of extents
     * below (merged extents, height * depth, the count) in range. */
    if (too_many && !empty)
        return gm_error(GPUMEM_ERROR_OVERFLOW, "the element count does not fit in int64_t");
    if (empty) {
        *plan = p;
        return GPUMEM_OK;
    }

    /* 1. Extent-1 axes add nothing to any offset. */
    cp_axis ax[GM_MAX_NDIM];
    int n = 0;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] == 1)
            continue;
        if (dst_strides[i] == 0)
            return gm_error(GPUMEM_ERROR_INVALID_VALUE,
                            "destination axis %d has stride 0 and extent %lld: a broadcast cannot be written", i,
                            (long long)shape[i]);
        ax[n++] = (cp_axis){shape[i], src_strides[i], dst_strides[i]};
    }
    const int64_t isz = (int64_t)itemsize;
    if (!span_fits(n, ax, true, isz) || !span_fits(n, ax, false, isz))
        return gm_error(GPUMEM_ERROR_OVERFLOW, "the bytes an array spans do not fit in int64_t");

    /* 2. Flip destination-reversed axes; span_fits bounds every product and
     * negation here (|stride| <= span, so a stride is never INT64_MIN). */
    for (int i = 0; i < n; i++) {
        if (ax[i].d < 0) {
            p.src_offset += (ax[i].n - 1) * ax[i].s;
            p.dst_offset += (ax[i].n - 1) * ax[i].d;
            ax[i].s = -ax[i].s;
            ax[i].d = -ax[i].d;
        }
    }

    /* 3. Stable insertion sort by decreasing destination stride. */
    for (int i = 1; i < n; i++) {
        cp_axis a = ax[i];
        int j = i;
        for (; j > 0 && ax[j - 1].d < a.d; j--)
            ax[j] = ax[j - 1];
        ax[j] = a;
    }

    /* 4. Merge an axis into the one outside it when both sides agree that
     * they are one run; the merged axis keeps the inner strides, so a chain
     * merges further. */
    int m = 0;
    for (int i = 0; i < n; i++) {
        int64_t ms, md;
        if (m > 0 && !__builtin_mul_overflow(ax[i].s, ax[i].n, &ms) &&
            !__builtin_mul_overflow(ax[i].d, ax[i].n, &md) && ax[m - 1].s == ms && ax[m - 1].d == md) {
            ax[m - 1] = (cp_axis){ax[m - 1].n * ax[i].n, ax[i].s, ax[i].d};
        } else {
            ax[m++] = ax[i];
        }
    }

    /* 5. The row; its width is at most the array's bytes, so it fits. */
    int64_t width = isz;
    if (m > 0 && ax[m - 1].s == isz && ax[m - 1].d == isz && fits_size(ax[m - 1].n * isz)) {
        width = ax[m - 1].n * isz;
        m--;
    }
    if (!fits_size(width))
        return gm_error(GPUMEM_ERROR_OVERFLOW, "item size %zu does not fit in size_t", itemsize);

    /* 6. The levels: height * depth is a product of extents, at most the
     * element count, so it cannot overflow.  Scanning inner to outer and
     * keeping only strict improvements makes ties go to the innermost. */
    int l2 = -1, l3 = -1;
    int64_t best = 1;
    for (int j = m - 1; j >= 0; j--) {
        if (!level2_ok(&ax[j], width, max_pitch))
            continue;
        if (ax[j].n > best) {
            best = ax[j].n;
            l2 = j;
            l3 = -1;
        }
        for (int k = j - 1; k >= 0; k--) {
            if (level3_ok(&ax[k], &ax[j]) && ax[j].n * ax[k].n > best) {
                best = ax[j].n * ax[k].n;
                l2 = j;
                l3 = k;
            }
        }
    }

    p.dims = l2 < 0 ? 1 : l3 < 0 ? 2 : 3;
    p.width = (size_t)width;
    p.height = l2 < 0 ? 1 : (size_t)ax[l2].n;
    p.depth = l3 < 0 ? 1 : (size_t)ax[l3].n;
    p.src_pitch = l2 < 0 ? p.width : (size_t)ax[l2].s;
    p.dst_pitch = l2 < 0 ? p.width : (size_t)ax[l2].d;
    p.src_height = l3 < 0 ? p.height : (size_t)(ax[l3].s / ax[l2].s);
    p.dst_height = l3 < 0 ? p.height : (size_t)(ax[l3].d / ax[l2].d);

    /* 7. The loops, in destination order. */
    for (int i = 0; i < m; i++) {
        if (i == l2 || i == l3)
            continue;
        p.loop_extent[p.nloops] = ax[i].n;
        p.loop_src_stride[p.nloops] = ax[i].s;
        p.loop_dst_stride[p.nloops] = ax[i].d;
        p.nloops++;
    }
    *plan = p;
    return GPUMEM_OK;
}

uint64_t gm_copy_plan_count(const gm_copy_plan *plan)
{
    if (plan == NULL || plan->dims == 0)
        return 0;
    uint64_t count = 1;
    for (int i = 0; i < plan->nloops; i++)
        count *= (uint64_t)plan->loop_extent[i];
    return count;
}

gpumem_status gm_copy_plan_visit(const gm_copy_plan *plan, gm_copy_visit_fn fn, void *arg)
{
    GM_CHECK_NULL(plan);
    GM_CHECK_NULL(fn);
    if (plan->dims == 0)
        return GPUMEM_OK;
    int64_t idx[GM_MAX_NDIM] = {0};
    int64_t so = plan->src_offset, dof = plan->dst_offset;
    for (;;) {
        gpumem_status st = fn(arg, plan, so, dof);
        if (st != GPUMEM_OK)
            return st;
        /* Advance the odometer; a wrapping digit steps back by (extent - 1)
         * strides, so no offset outside the arrays is ever formed. */
        int k = plan->nloops - 1;
        for (; k >= 0; k--) {
            if (idx[k] + 1 < plan->loop_extent[k]) {
                idx[k]++;
                so += plan->loop_src_stride[k];
                dof += plan->loop_dst_stride[k];
                break;
            }
            so -= idx[k] * plan->loop_src_stride[k];
            dof -= idx[k] * plan->loop_dst_stride[k];
            idx[k] = 0;
        }
        if (k < 0)
            return GPUMEM_OK;
    }
}

typedef struct host_run {
    const unsigned char *src;
    unsigned char *dst;
} host_run;

static gpumem_status host_copy(void *arg, const gm_copy_plan *p, int64_t src_offset, int64_t dst_offset)
{
    const host_run *h = arg;
    const unsigned char *s = h->src + (ptrdiff_t)src_offset;
    unsigned char *d = h->dst + (ptrdiff_t)dst_offset;
    for (size_t z = 0; z < p->depth; z++) {
        const unsigned char *sz = s + z * p->src_pitch * p->src_height;
        unsigned char *dz = d + z * p->dst_pitch * p->dst_height;
        for (size_t y = 0; y < p->height; y++)
            memcpy(dz + y * p->dst_pitch, sz + y * p->src_pitch, p->width);
    }
    return GPUMEM_OK;
}

void gm_copy_plan_run_host(const gm_copy_plan *plan, const void *src, void *dst)
{
    host_run h = {src, dst};
    if (plan != NULL && src != NULL && dst != NULL)
        (void)gm_copy_plan_visit(plan, host_copy, &h);
}

/* ---- packing ------------------------------------------------------------------------------ */

/* One axis of a pack: extent, strided side's stride, packed side's stride. */
typedef struct pk_axis {
    int64_t n, s, p;
} pk_axis;

gpumem_status gm_pack_plan_make(int ndim, const int64_t *shape, const int64_t *strided, const int64_t *packed,
                                size_t itemsize, uint64_t strided_addr, uint64_t packed_addr, bool unpack,
                                gm_pack_plan *plan)
{
    GM_CHECK_NULL(plan);
    if (ndim < 0 || ndim > GM_MAX_NDIM)
        return gm_error(ndim < 0 ? GPUMEM_ERROR_INVALID_VALUE : GPUMEM_ERROR_TOO_MANY_DIMENSIONS,
                        "ndim %d is out of range 0..%d", ndim, GM_MAX_NDIM);
    if (ndim > 0) {
        GM_CHECK_NULL(shape);
        GM_CHECK_NULL(strided);
        GM_CHECK_NULL(packed);
    }
    if (itemsize > INT32_MAX)
        return gm_error(GPUMEM_ERROR_OVERFLOW, "item size %zu is too large to pack", itemsize);
    gm_pack_plan p;
    memset(&p, 0, sizeof p);
    const int64_t isz = (int64_t)itemsize;
    bool empty = itemsize == 0;
    for (int i = 0; i < ndim; i++)
        empty |= shape[i] == 0;
    if (empty) {
        *plan = p;
        return GPUMEM_OK;
    }

    /* 1. Extent-1 axes; span_fits bounds every product formed below. */
    cp_axis ax3[GM_MAX_NDIM];
    pk_axis ax[GM_MAX_NDIM + 1];
    int n = 0;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            return gm_error(GPUMEM_ERROR_NEGATIVE_DIMENSION, "axis %d has extent %lld", i, (long long)shape[i]);
        if (shape[i] == 1)
            continue;
        if (unpack && strided[i] == 0)
            return gm_error(GPUMEM_ERROR_INVALID_VALUE,
                            "axis %d has stride 0 and extent %lld: a broadcast cannot be written", i,
                            (long long)shape[i]);
        ax3[n] = (cp_axis){shape[i], strided[i], packed[i]};
        ax[n++] = (pk_axis){shape[i], strided[i], packed[i]};
    }
    if (!span_fits(n, ax3, true, isz) || !span_fits(n, ax3, false, isz))
        return gm_error(GPUMEM_ERROR_OVERFLOW, "the bytes an array spans do not fit in int64_t");

    /* 2. Flip the axes the packed side runs backwards. */
    int64_t soff = 0, poff = 0;
    for (int i = 0; i < n; i++) {
        if (ax[i].p < 0) {
            soff += (ax[i].n - 1) * ax[i].s;
            poff += (ax[i].n - 1) * ax[i].p;
            ax[i].s = -ax[i].s;
            ax[i].p = -ax[i].p;
        }
    }
    /* 3. Sort by decreasing packed stride (stable), 4. check contiguity. */
    for (int i = 1; i < n; i++) {
        pk_axis a = ax[i];
        int j = i;
        for (; j > 0 && ax[j - 1].p < a.p; j--)
            ax[j] = ax[j - 1];
        ax[j] = a;
    }
    int64_t expect = isz;
    for (int i = n - 1; i >= 0; i--) {
        if (ax[i].p != expect)
            return gm_error(GPUMEM_ERROR_INVALID_VALUE, "the packed side is not contiguous");
        expect *= ax[i].n;
    }
    p.bytes = (uint64_t)expect;

    /* 5. The unit: the widest power of two up to 16 that the item, every
     * strided stride and both first addresses are multiples of. */
    uint64_t m = (uint64_t)isz | 16 | (strided_addr + (uint64_t)soff) | (packed_addr + (uint64_t)poff);
    for (int i = 0; i < n; i++)
        m |= (uint64_t)ax[i].s;
    int64_t unit = (int64_t)(m & (~m + 1));
    if (isz > unit)
        ax[n++] = (pk_axis){isz / unit, unit, unit};

    /* 6. Merge runs of the strided side (the packed side is one run). */
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (k > 0 && ax[k - 1].s == ax[i].s * ax[i].n)
            ax[k - 1] = (pk_axis){ax[k - 1].n * ax[i].n, ax[i].s, ax[i].p};
        else
            ax[k++] = ax[i];
    }
    n = k;

    /* 7. Widen the unit over an inner run. */
    if (n > 0 && ax[n - 1].s == unit) {
        int64_t run = ax[n - 1].n * unit;
        for (int64_t w = 16; w > unit; w /= 2) {
            bool ok = run % w == 0 && (strided_addr + (uint64_t)soff) % (uint64_t)w == 0 &&
                      (packed_addr + (uint64_t)poff) % (uint64_t)w == 0;
            for (int i = 0; i < n - 1 && ok; i++)
                ok = ax[i].s % w == 0;
            if (ok) {
                unit = w;
                ax[n - 1] = (pk_axis){run / w, w, w};
                break;
            }
        }
    }

    /* 8. Columns and rows. */
    gm_pack_params *q = &p.params;
    q->unit = (int)unit;
    q->cols = n > 0 ? (uint64_t)ax[n - 1].n : 1;
    q->col_stride = n > 0 ? ax[n - 1].s : unit;
    q->nouter = n > 0 ? n - 1 : 0;
    q->rows = 1;
    for (int i = 0; i + 1 < n; i++) {
        q->outer_shape[i] = ax[i].n;
        q->outer_stride[i] = ax[i].s;
        q->rows *= (uint64_t)ax[i].n;
    }
    q->strided = (unsigned long long)soff;
    q->packed = (unsigned long long)poff;
    int64_t lo, hi;
    gm_pack_strided_span(q, &lo, &hi);
    p.wide = q->rows > INT32_MAX || q->cols > INT32_MAX || lo < INT32_MIN || hi > INT32_MAX;
    /* 9. A transpose: the strided side runs along the rows (the innermost
     * outer axis), not along the columns. */
    int64_t lo_stride = q->nouter > 0 ? q->outer_stride[q->nouter - 1] : 0;
    p.tiled = q->nouter > 0 && (lo_stride == unit || lo_stride == -unit) && q->col_stride != unit &&
              q->col_stride != -unit && q->outer_shape[q->nouter - 1] >= GM_PACK_TILED_MIN &&
              q->cols >= GM_PACK_TILED_MIN;
    p.kernel = p.tiled ? gm_pack_kernel_tiled_index((int)unit, p.wide, unpack)
                       : gm_pack_kernel_index((int)unit, p.wide, unpack);
    *plan = p;
    return GPUMEM_OK;
}
