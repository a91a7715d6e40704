/* The pack and unpack kernels: the planner that collapses a copy for them
 * (gm_pack_plan_make), their C twin, and the kernels themselves, loaded once
 * per context through the kernel cache and launched on random layouts (any
 * ndim, negative and zero strides, items of 1 to 32 bytes, misaligned
 * bases), checked element by element, gaps included.  On the simulator the
 * kernels run natively in C (other kernels stay "not simulated"); with
 * GPUMEM_BACKEND=cuda the real kernels run.  The batched kernels too:
 * their blocks and threads cover each piece once (their index arithmetic,
 * run thread by thread on the CPU), and random batches of 2 to 32 pieces
 * are exact.  Internal test. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pack_calls.h"
#include "copyplan.h"
#include "gpumem.h"
#include "kernels/pack.h"
#include "rng.h"
#include "tap.h"

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void)
{
    return xorshift64(&rng);
}
static int64_t pick(int64_t n)
{
    return (int64_t)(next() % (uint64_t)n);
}

static gm_pack_plan plan_of(int ndim, const int64_t *shape, const int64_t *s, const int64_t *p, size_t isz,
                            uint64_t sa, uint64_t pa, bool unpack, gpumem_status *st)
{
    gm_pack_plan pl;
    memset(&pl, 0, sizeof pl);
    *st = gm_pack_plan_make(ndim, shape, s, p, isz, sa, pa, unpack, &pl);
    return pl;
}

static void test_plans(void)
{
    gpumem_status st;
    /* a[:, ::2] of C (4,6) float32 -> C (4,3): one row of 12 at stride 8 */
    gm_pack_plan p = plan_of(2, (int64_t[]){4, 3}, (int64_t[]){24, 8}, (int64_t[]){12, 4}, 4, 0, 0, false, &st);
    is_int(st, GPUMEM_OK, "a[:, ::2] plans");
    ok(p.params.unit == 4 && p.params.cols == 12 && p.params.col_stride == 8 && p.params.nouter == 0 &&
           p.params.rows == 1 && p.bytes == 48 && !p.wide,
       "a[:, ::2]: the rows merge into 12 units of 4 at stride 8");
    is_str(gm_pack_kernel_name(p.kernel), "gm_pack_4_32", "its kernel");
    /* C (3,5) -> F (3,5): the transposing gather */
    p = plan_of(2, (int64_t[]){3, 5}, (int64_t[]){20, 4}, (int64_t[]){4, 12}, 4, 0, 0, false, &st);
    ok(st == GPUMEM_OK && p.params.cols == 3 && p.params.col_stride == 20 && p.params.nouter == 1 &&
           p.params.outer_shape[0] == 5 && p.params.outer_stride[0] == 4 && p.params.rows == 5,
       "a transpose: columns along the packed side's fastest axis");
    ok(!p.tiled, "too small to tile");
    /* C (64,48) -> F (64,48): large enough for the tiled kernels */
    p = plan_of(2, (int64_t[]){64, 48}, (int64_t[]){192, 4}, (int64_t[]){4, 256}, 4, 0, 0, false, &st);
    ok(st == GPUMEM_OK && p.tiled && p.params.cols == 64 && p.params.col_stride == 192 && p.params.nouter == 1 &&
           p.params.outer_shape[0] == 48 && p.params.outer_stride[0] == 4,
       "a transpose of 64 x 48: tiled");
    is_str(gm_pack_kernel_name(p.kernel), "gm_pack_t_4_32", "its kernel");
    p = plan_of(2, (int64_t[]){64, 48}, (int64_t[]){192, 4}, (int64_t[]){4, 256}, 4, 0, 0, true, &st);
    is_str(gm_pack_kernel_name(p.kernel), "gm_unpack_t_4_32", "and the unpack's");
    /* a[:, ::2] is no transpose: its columns are strided, its rows too */
    p = plan_of(2, (int64_t[]){64, 48}, (int64_t[]){384, 8}, (int64_t[]){192, 4}, 4, 0, 0, false, &st);
    ok(st == GPUMEM_OK && !p.tiled, "a[:, ::2] of 64 x 96 is not tiled");
    /* a[:, :8] of C (4,16) float32: rows of 32 bytes widen to units of 16 */
    p = plan_of(2, (int64_t[]){4, 8}, (int64_t[]){64, 4}, (int64_t[]){32, 4}, 4, 256, 512, true, &st);
    ok(st == GPUMEM_OK && p.params.unit == 16 && p.params.cols == 2 && p.params.outer_stride[0] == 64,
       "contiguous runs widen to units of 16");
    is_str(gm_pack_kernel_name(p.kernel), "gm_unpack_16_32", "an unpack's kernel");
    /* the same at an address aligned to 4 only */
    p = plan_of(2, (int64_t[]){4, 8}, (int64_t[]){64, 4}, (int64_t[]){32, 4}, 4, 260, 512, true, &st);
    ok(st == GPUMEM_OK && p.params.unit == 4 && p.params.cols == 8, "a misaligned base keeps units of 4");
    /* records of 12 bytes, every other one */
    p = plan_of(1, (int64_t[]){10}, (int64_t[]){24}, (int64_t[]){12}, 12, 0, 0, false, &st);
    ok(st == GPUMEM_OK && p.params.unit == 4 && p.params.cols == 3 && p.params.col_stride == 4 &&
           p.params.rows == 10 && p.params.outer_stride[0] == 24,
       "a 12-byte record is 3 units of 4");
    /* a[::-1]: the strided side runs backwards */
    p = plan_of(1, (int64_t[]){5}, (int64_t[]){-4}, (int64_t[]){4}, 4, 0, 0, false, &st);
    ok(st == GPUMEM_OK && p.params.cols == 5 && p.params.col_stride == -4 && p.params.strided == 0,
       "a reversed source: negative column stride");
    /* a reversed packed side flips both */
    p = plan_of(1, (int64_t[]){5}, (int64_t[]){8}, (int64_t[]){-4}, 4, 0, 0, false, &st);
    ok(st == GPUMEM_OK && p.params.col_stride == -8 && (int64_t)p.params.strided == 32 &&
           (int64_t)p.params.packed == -16,
       "a reversed packed side: offsets to its lowest byte");
    /* a broadcast source */
    p = plan_of(2, (int64_t[]){3, 4}, (int64_t[]){0, 4}, (int64_t[]){16, 4}, 4, 0, 0, false, &st);
    ok(st == GPUMEM_OK && p.params.rows == 3 && p.params.outer_stride[0] == 0, "a broadcast row packs");
    plan_of(2, (int64_t[]){3, 4}, (int64_t[]){0, 4}, (int64_t[]){16, 4}, 4, 0, 0, true, &st);
    is_int(st, GPUMEM_ERROR_INVALID_VALUE, "an unpack into a broadcast is refused");
    plan_of(2, (int64_t[]){3, 4}, (int64_t[]){16, 4}, (int64_t[]){32, 4}, 4, 0, 0, false, &st);
    is_int(st, GPUMEM_ERROR_INVALID_VALUE, "a packed side with gaps is refused");
    p = plan_of(2, (int64_t[]){3, 0}, (int64_t[]){16, 4}, (int64_t[]){32, 4}, 4, 0, 0, false, &st);
    ok(st == GPUMEM_OK && p.bytes == 0, "an empty copy packs nothing");
    /* wide: more than 2^31 columns of 1 byte at stride 2 */
    p = plan_of(1, (int64_t[]){INT64_C(3) << 30}, (int64_t[]){2}, (int64_t[]){1}, 1, 0, 0, false, &st);
    ok(st == GPUMEM_OK && p.wide && p.kernel == gm_pack_kernel_index(1, true, false), "big copies use 64 bits");
}

/* The layout of one side: strides, and the offset of element 0 in a buffer
 * spanning [0, span). */
typedef struct side {
    int64_t strides[4];
    int64_t off, span;
} side;

static void layout_span(int ndim, const int64_t *shape, side *s, size_t isz)
{
    int64_t lo = 0, hi = 0;
    for (int i = 0; i < ndim; i++) {
        int64_t t = (shape[i] - 1) * s->strides[i];
        if (t < 0)
            lo += t;
        else
            hi += t;
    }
    s->off = -lo;
    s->span = hi - lo + (int64_t)isz;
}

/* Element e (odometer order) of a layout: its byte offset. */
static int64_t elem_offset(int ndim, const int64_t *shape, const side *s, int64_t e)
{
    int64_t off = s->off;
    for (int i = ndim - 1; i >= 0; i--) {
        off += (e % shape[i]) * s->strides[i];
        e /= shape[i];
    }
    return off;
}

static gpumem_array *to_device(gpumem_context *ctx, unsigned char *bytes, int64_t n)
{
    gpumem_array *h = NULL, *d = NULL;
    gpumem_host_array_wrap(bytes, 1, &n, NULL, gpumem_dtype_builtin(GPUMEM_UINT8), &h);
    gpumem_to_device(ctx, h, NULL, 0, &d);
    gpumem_array_release(h);
    return d;
}

static int read_back(gpumem_array *d, unsigned char *bytes, int64_t n)
{
    gpumem_array *h = NULL;
    gpumem_host_array_wrap(bytes, 1, &n, NULL, gpumem_dtype_builtin(GPUMEM_UINT8), &h);
    gpumem_status st = gpumem_copy_to_host(d, h, NULL);
    gpumem_array_release(h);
    return st == GPUMEM_OK;
}

static int tiled_runs; /* fuzz_one's plans that took the tiled kernels */

/* One random pack or unpack through the kernels, checked byte for byte:
 * up to maxdim axes of up to maxext elements. */
static int fuzz_one(gpumem_context *ctx, gm_pack_kernels *k, bool unpack, int maxdim, int64_t maxext, bool transpose,
                    char *why, size_t whylen)
{
    static const size_t sizes[] = {1, 2, 4, 8, 16, 3, 12, 32};
    size_t isz = sizes[pick(transpose ? 5 : 8)];
    int ndim = transpose ? 2 + (int)pick(maxdim - 1) : 1 + (int)pick(maxdim);
    int64_t shape[4], n = 1;
    for (int i = 0; i < ndim; i++)
        n *= shape[i] = 1 + pick(maxext);
    /* strided: a permuted, stepped view of a C buffer */
    side s, p;
    int perm[4] = {0, 1, 2, 3};
    for (int i = ndim - 1; i > 0; i--) {
        int j = (int)pick(i + 1), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    int64_t acc = (int64_t)isz * (transpose ? 1 : 1 + pick(2));
    for (int i = ndim - 1; i >= 0; i--) {
        static const int steps[] = {1, 2, -1, -3, 1, 0};
        int step = transpose && i == ndim - 1 ? 1 : steps[pick(unpack ? 5 : 6)];
        s.strides[perm[i]] = acc * step;
        acc *= shape[perm[i]] * (step < 0 ? -step : step > 0 ? step : 1) + (int64_t)pick(2);
    }
    /* packed: contiguous in another order, maybe reversed on one axis (a
     * transpose: the strided side's contiguous axis is not the innermost) */
    int contiguous = perm[ndim - 1];
    for (int i = ndim - 1; i > 0; i--) {
        int j = (int)pick(i + 1), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (int i = 0; transpose && i < ndim; i++) { /* the contiguous axis second innermost */
        if (perm[i] == contiguous) {
            perm[i] = perm[ndim - 2];
            perm[ndim - 2] = contiguous;
            break;
        }
    }
    acc = (int64_t)isz;
    for (int i = ndim - 1; i >= 0; i--) {
        p.strides[perm[i]] = acc * (pick(5) == 0 ? -1 : 1);
        acc *= shape[perm[i]];
    }
    layout_span(ndim, shape, &s, isz);
    layout_span(ndim, shape, &p, isz);
    int64_t smis = pick(16), pmis = pick(16); /* misaligned bases (a transpose: aligned ones, mostly) */
    if (transpose && pick(4) != 0)
        smis = pmis = 0;
    int64_t sbytes = s.span + smis, pbytes = p.span + pmis;
    unsigned char *sh = malloc((size_t)sbytes), *ph = malloc((size_t)pbytes);
    unsigned char *sw = malloc((size_t)sbytes), *pw = malloc((size_t)pbytes);
    for (int64_t i = 0; i < sbytes; i++)
        sh[i] = (unsigned char)next();
    for (int64_t i = 0; i < pbytes; i++)
        ph[i] = (unsigned char)next();
    gpumem_array *sd = to_device(ctx, sh, sbytes), *pd = to_device(ctx, ph, pbytes);
    uint64_t sa = 0, pa = 0;
    gpumem_array_device_pointer(sd, &sa);
    gpumem_array_device_pointer(pd, &pa);
    sa += (uint64_t)(smis + s.off);
    pa += (uint64_t)(pmis + p.off);
    gm_pack_plan pl;
    gpumem_status st = gm_pack_plan_make(ndim, shape, s.strides, p.strides, isz, sa, pa, unpack, &pl);
    int good = st == GPUMEM_OK;
    if (good)
        st = gm_pack_launch(k, &pl, sa, pa, NULL, "test");
    tiled_runs += good && pl.tiled;
    good = st == GPUMEM_OK && read_back(sd, sw, sbytes) && read_back(pd, pw, pbytes);
    /* expected: the untouched side's bytes moved element by element */
    unsigned char *want_s = malloc((size_t)sbytes), *want_p = malloc((size_t)pbytes);
    memcpy(want_s, sh, (size_t)sbytes);
    memcpy(want_p, ph, (size_t)pbytes);
    for (int64_t e = 0; e < n; e++) {
        int64_t so = smis + elem_offset(ndim, shape, &s, e), po = pmis + elem_offset(ndim, shape, &p, e);
        if (unpack)
            memcpy(want_s + so, ph + po, isz);
        else
            memcpy(want_p + po, sh + so, isz);
    }
    if (good && (memcmp(want_s, sw, (size_t)sbytes) != 0 || memcmp(want_p, pw, (size_t)pbytes) != 0))
        good = 0;
    if (!good)
        snprintf(why, whylen, "%s of ndim %d item %zu shape (%lld,%lld,%lld,%lld) kernel %s: %s",
                 unpack ? "unpack" : "pack", ndim, isz, (long long)shape[0], (long long)(ndim > 1 ? shape[1] : 0),
                 (long long)(ndim > 2 ? shape[2] : 0), (long long)(ndim > 3 ? shape[3] : 0),
                 st == GPUMEM_OK ? gm_pack_kernel_name(pl.kernel) : "-",
                 st == GPUMEM_OK ? "wrong bytes" : gpumem_last_error());
    free(want_s);
    free(want_p);
    free(sh);
    free(ph);
    free(sw);
    free(pw);
    gpumem_array_release(sd);
    gpumem_array_release(pd);
    return good;
}

/* Every kernel once, 32- and 64-bit: a[::2] of n units (a 64-bit kernel is
 * launched on a small copy; it computes the same). */
static void test_each_kernel(gpumem_context *ctx, gm_pack_kernels *k)
{
    for (int i = 0; i < GM_PACK_NKERNELS; i++) {
        int unit;
        bool wide, unpack;
        gm_pack_kernel_info(i, &unit, &wide, &unpack);
        int64_t n = 1000, bytes = 2 * n * unit;
        unsigned char *a = malloc((size_t)bytes), *b = malloc((size_t)(n * unit)), *ra = malloc((size_t)bytes),
                      *rb = malloc((size_t)(n * unit));
        for (int64_t j = 0; j < bytes; j++)
            a[j] = (unsigned char)next();
        for (int64_t j = 0; j < n * unit; j++)
            b[j] = (unsigned char)next();
        gpumem_array *ad = to_device(ctx, a, bytes), *bd = to_device(ctx, b, n * unit);
        uint64_t aa, ba;
        gpumem_array_device_pointer(ad, &aa);
        gpumem_array_device_pointer(bd, &ba);
        gm_pack_plan pl;
        gpumem_status st = gm_pack_plan_make(1, &n, (int64_t[]){2 * unit}, (int64_t[]){unit}, (size_t)unit, aa,
                                             ba, unpack, &pl);
        pl.wide = wide;
        pl.kernel = i;
        if (st == GPUMEM_OK)
            st = gm_pack_launch(k, &pl, aa, ba, NULL, "test");
        int good = st == GPUMEM_OK && read_back(ad, ra, bytes) && read_back(bd, rb, n * unit);
        for (int64_t j = 0; good && j < n; j++) {
            const unsigned char *want = unpack ? b + j * unit : a + 2 * j * unit;
            good = memcmp(unpack ? ra + 2 * j * unit : rb + j * unit, want, (size_t)unit) == 0;
            if (unpack) /* the gaps stay */
                good = good && memcmp(ra + (2 * j + 1) * unit, a + (2 * j + 1) * unit, (size_t)unit) == 0;
        }
        ok(good, "%s moves a[::2] of %lld units (%s)", gm_pack_kernel_name(i), (long long)n,
           st == GPUMEM_OK ? "launched" : gpumem_last_error());
        gpumem_array_release(ad);
        gpumem_array_release(bd);
        free(a);
        free(b);
        free(ra);
        free(rb);
    }
}

/* ---- the batched kernels ---------------------------------------------------------------------- */

/* pack.cu's run_piece index arithmetic, thread by thread: every (row, column) of a piece of rows x cols is
 * visited exactly once by the blocks gm_pack_batch_piece_dims gives it. */
static int covers(uint64_t rows, uint64_t cols)
{
    gm_pack_batch_piece q;
    memset(&q, 0, sizeof q);
    q.rows = rows;
    q.cols = cols;
    gm_pack_batch_piece_dims(&q);
    unsigned char *seen = calloc((size_t)(rows * cols), 1);
    if (seen == NULL || q.blocks == 0 || q.blocks % q.gx != 0 || q.blocks > 65536 || (q.bx & (q.bx - 1)) != 0)
        return free(seen), 0;
    const unsigned bx = q.bx, by = GM_PACK_THREADS / bx, gx = q.gx, gy = q.blocks / q.gx;
    int good = 1;
    for (unsigned b = 0; b < q.blocks; b++)
        for (unsigned t = 0; t < GM_PACK_THREADS; t++) {
            unsigned tx = t & (bx - 1), ty = t / bx;
            for (uint64_t r = (uint64_t)(b / gx) * by + ty; r < rows; r += (uint64_t)gy * by)
                for (uint64_t c = (uint64_t)(b % gx) * bx + tx; c < cols; c += (uint64_t)gx * bx)
                    good &= seen[r * cols + c]++ == 0;
        }
    for (uint64_t i = 0; i < rows * cols; i++)
        good &= seen[i] == 1;
    free(seen);
    return good;
}

static void test_batch_dims(void)
{
    static const uint64_t cases[][2] = {{1, 1}, {1, 1000}, {4094, 1}, {3, 7}, {300, 5000}, {65, 3},
                                        {20000000, 1}, {1, 2000000}, {5000, 300}};
    int good = 1;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (!covers(cases[i][0], cases[i][1])) {
            good = 0;
            diag("a piece of %llu x %llu is not covered exactly once", (unsigned long long)cases[i][0],
                 (unsigned long long)cases[i][1]);
        }
    ok(good, "the batched kernels' blocks and threads visit every element of a piece once (1 x 1 to 2e7 x 1 and "
             "1 x 2e6, where the grid is capped)");
}

/* count random pieces, packs and unpacks of units 1 to 16 and up to 3 axes (at most 2 outer ones), each in
 * buffers of its own, through one launch of the batched kernel (the 64-bit one when wide), checked byte for
 * byte. */
static int batch_fuzz(gpumem_context *ctx, gm_pack_kernels *k, int count, bool wide, char *why, size_t whylen)
{
    gm_pack_batch_params bp;
    memset(&bp, 0, sizeof bp);
    struct piece_data {
        int ndim;
        int64_t shape[3];
        side s, p;
        size_t isz;
        bool unpack;
        unsigned char *sh, *ph;
        gpumem_array *sd, *pd;
    } pc[GM_PACK_BATCH_MAX];
    int good = 1;
    for (int i = 0; i < count; i++) {
        struct piece_data *q = &pc[i];
        static const size_t sizes[] = {1, 2, 4, 8, 16, 12};
        q->isz = sizes[pick(6)];
        q->unpack = pick(2) == 1;
        q->ndim = 1 + (int)pick(2);
        for (int a = 0; a < q->ndim; a++)
            q->shape[a] = 1 + pick(40);
        /* strided: a stepped view of a C buffer (steps of either sign); packed: C order */
        int64_t acc = (int64_t)q->isz * (1 + pick(2)), pacc = (int64_t)q->isz;
        for (int a = q->ndim - 1; a >= 0; a--) {
            static const int steps[] = {1, 2, -1, -3};
            int step = steps[pick(4)];
            q->s.strides[a] = acc * step;
            acc *= q->shape[a] * (step < 0 ? -step : step) + pick(2);
            q->p.strides[a] = pacc;
            pacc *= q->shape[a];
        }
        layout_span(q->ndim, q->shape, &q->s, q->isz);
        layout_span(q->ndim, q->shape, &q->p, q->isz);
        q->sh = malloc((size_t)q->s.span);
        q->ph = malloc((size_t)q->p.span);
        for (int64_t j = 0; j < q->s.span; j++)
            q->sh[j] = (unsigned char)next();
        for (int64_t j = 0; j < q->p.span; j++)
            q->ph[j] = (unsigned char)next();
        q->sd = to_device(ctx, q->sh, q->s.span);
        q->pd = to_device(ctx, q->ph, q->p.span);
        uint64_t sa = 0, pa = 0;
        gpumem_array_device_pointer(q->sd, &sa);
        gpumem_array_device_pointer(q->pd, &pa);
        sa += (uint64_t)q->s.off;
        pa += (uint64_t)q->p.off;
        gm_pack_plan pl;
        if (gm_pack_plan_make(q->ndim, q->shape, q->s.strides, q->p.strides, q->isz, sa, pa, q->unpack, &pl) !=
                GPUMEM_OK ||
            pl.tiled || pl.params.nouter > GM_PACK_BATCH_OUTER) {
            snprintf(why, whylen, "piece %d: no plan for the batched kernel (%s)", i, gpumem_last_error());
            good = 0;
        }
        gm_pack_batch_piece *b = &bp.piece[i];
        b->strided = pl.params.strided + sa;
        b->packed = pl.params.packed + pa;
        b->rows = pl.params.rows;
        b->cols = pl.params.cols;
        b->col_stride = pl.params.col_stride;
        b->nouter = pl.params.nouter;
        b->unit = pl.params.unit;
        b->unpack = q->unpack;
        for (int a = 0; a < pl.params.nouter && a < GM_PACK_BATCH_OUTER; a++) {
            b->outer_shape[a] = pl.params.outer_shape[a];
            b->outer_stride[a] = pl.params.outer_stride[a];
        }
        gm_pack_batch_piece_dims(b);
        b->block_begin = bp.nblocks;
        bp.nblocks += b->blocks;
        bp.count++;
    }
    gpumem_status st = GPUMEM_OK;
    if (good)
        st = gm_pack_launch_batch(k, wide ? GM_PACK_BATCH_64 : GM_PACK_BATCH_32, &bp, NULL, "test");
    if (good && st == GPUMEM_OK)
        st = gpumem_context_synchronize(ctx);
    if (good && st != GPUMEM_OK) {
        snprintf(why, whylen, "the launch: %s", gpumem_last_error());
        good = 0;
    }
    for (int i = 0; i < count; i++) {
        struct piece_data *q = &pc[i];
        unsigned char *ws = malloc((size_t)q->s.span), *wp = malloc((size_t)q->p.span);
        unsigned char *gs = malloc((size_t)q->s.span), *gp = malloc((size_t)q->p.span);
        memcpy(ws, q->sh, (size_t)q->s.span);
        memcpy(wp, q->ph, (size_t)q->p.span);
        int64_t n = 1;
        for (int a = 0; a < q->ndim; a++)
            n *= q->shape[a];
        for (int64_t e = 0; e < n; e++) {
            int64_t so = elem_offset(q->ndim, q->shape, &q->s, e), po = elem_offset(q->ndim, q->shape, &q->p, e);
            if (q->unpack)
                memcpy(ws + so, q->ph + po, q->isz);
            else
                memcpy(wp + po, q->sh + so, q->isz);
        }
        if (good && (!read_back(q->sd, gs, q->s.span) || !read_back(q->pd, gp, q->p.span) ||
                     memcmp(gs, ws, (size_t)q->s.span) != 0 || memcmp(gp, wp, (size_t)q->p.span) != 0)) {
            snprintf(why, whylen, "piece %d of %d (%s, item %zu, %d axes, unit %d): wrong bytes", i, count,
                     q->unpack ? "unpack" : "pack", q->isz, q->ndim, bp.piece[i].unit);
            good = 0;
        }
        free(ws), free(wp), free(gs), free(gp), free(q->sh), free(q->ph);
        gpumem_array_release(q->sd);
        gpumem_array_release(q->pd);
    }
    return good;
}

static void test_batch_kernels(gpumem_context *ctx, gm_pack_kernels *k)
{
    char why[256] = "";
    int bad = 0;
    static const int counts[] = {2, 5, 32};
    for (int i = 0; i < 30 && bad < 3; i++)
        if (!batch_fuzz(ctx, k, counts[i % 3], i % 2 == 1, why, sizeof why)) {
            diag("batch %d: %s", i, why);
            bad++;
        }
    ok(bad == 0, "30 launches of the batched kernels (32- and 64-bit), 2 to 32 random pieces each: packs and "
                 "unpacks of units 1 to 16, exact, the gaps untouched");
    if (!test_on_sim()) {
        skip(2, "the simulator's checks of a batched launch");
        return;
    }
    /* a block whose pieces leave a hole in the grid */
    gm_pack_batch_params bp;
    memset(&bp, 0, sizeof bp);
    gpumem_array *d = to_device(ctx, (unsigned char[64]){0}, 64);
    uint64_t a = 0;
    gpumem_array_device_pointer(d, &a);
    for (int i = 0; i < 2; i++) {
        gm_pack_batch_piece *q = &bp.piece[i];
        q->strided = a;
        q->packed = a + 32;
        q->rows = 1;
        q->cols = 8;
        q->col_stride = 4;
        q->unit = 4;
        gm_pack_batch_piece_dims(q);
        q->block_begin = bp.nblocks + (unsigned)i; /* piece 1 starts one block late */
        bp.nblocks = q->block_begin + q->blocks;
    }
    bp.count = 2;
    is_int(gm_pack_launch_batch(k, GM_PACK_BATCH_32, &bp, NULL, "test"), GPUMEM_ERROR_DRIVER,
           "the simulator refuses a batched block whose pieces leave a hole in the grid");
    like(gpumem_last_error(), "CUDA_ERROR_INVALID_VALUE", "as the driver's invalid value");
    gpumem_array_release(d);
}

int main(void)
{
    test_plans();
    test_batch_dims();
    gpumem_context *ctx = NULL;
    char why[256];
    gpumem_status st = gpumem_test_context(&ctx, why, sizeof why);
    if (st != GPUMEM_OK) {
        if (gpumem_test_should_skip(st)) {
            skip(1, why);
            return exit_status();
        }
        bail_out("%s", why);
    }
    uint64_t loads0 = 0, loads1 = 0, loads2 = 0;
    gpumem_debug_driver_calls("cuModuleLoadDataEx", &loads0);
    gm_pack_kernels *k = NULL, *k2 = NULL;
    is_int(gm_pack_kernels_get(ctx, "test-pack", &k), GPUMEM_OK, "the pack kernels load");
    gpumem_debug_driver_calls("cuModuleLoadDataEx", &loads1);
    is_int(gm_pack_kernels_get(ctx, "test-pack", &k2), GPUMEM_OK, "and again");
    gpumem_debug_driver_calls("cuModuleLoadDataEx", &loads2);
    ok(k != NULL && k == k2, "the same kernels, from the per-context cache");
    is_int(loads1 - loads0, 1, "one module load for the first call");
    is_int(loads2 - loads1, 0, "none for the second");
    gm_pack_kernels_put(k2);
    if (k == NULL)
        bail_out("the pack kernels are unavailable: %s", gpumem_last_error());
    test_each_kernel(ctx, k);
    int bad = 0;
    for (int i = 0; i < 400 && bad < 5; i++) {
        if (!fuzz_one(ctx, k, i % 2 == 1, 4, 6, false, why, sizeof why)) {
            ok(0, "random layout %d: %s", i, why);
            bad++;
        }
    }
    ok(bad == 0, "400 random packs and unpacks move every element and leave the gaps");
    /* larger extents, where transposes take the tiled kernels: edges of tiles, 2 and 3 axes */
    bad = 0;
    tiled_runs = 0;
    for (int i = 0; i < 300 && bad < 5; i++) {
        if (!fuzz_one(ctx, k, i % 2 == 1, i % 3 == 0 ? 3 : 2, i % 3 == 0 ? 24 : 70, i % 4 != 3, why, sizeof why)) {
            ok(0, "random layout %d of up to 70 elements per axis: %s", i, why);
            bad++;
        }
    }
    ok(bad == 0, "300 random packs and unpacks of up to 70 elements per axis, most of them permuted, are exact, "
                 "gaps untouched");
    ok(tiled_runs >= 30, "%d of them through the tiled kernels", tiled_runs);
    test_batch_kernels(ctx, k);

    /* a parameter block that does not fit its kernel */
    gm_pack_plan pl;
    int64_t n = 16;
    gpumem_array *d = to_device(ctx, (unsigned char[64]){0}, 64);
    uint64_t a = 0;
    gpumem_array_device_pointer(d, &a);
    gm_pack_plan_make(1, &n, (int64_t[]){4}, (int64_t[]){4}, 4, a, a, false, &pl);
    gm_pack_plan bad_unit = pl;
    bad_unit.kernel = gm_pack_kernel_index(8, false, false);
    if (test_on_sim()) {
        is_int(gm_pack_launch(k, &bad_unit, a, a, NULL, "test"), GPUMEM_ERROR_DRIVER,
               "the simulator refuses a block whose unit is not the kernel's");
        like(gpumem_last_error(), "CUDA_ERROR_INVALID_VALUE", "as the driver's invalid value");
        is_int(gm_pack_launch(k, &pl, a + 4096, a, NULL, "test"), GPUMEM_ERROR_DRIVER,
               "and a block that reaches outside device memory");
        like(gpumem_last_error(), "CUDA_ERROR_ILLEGAL_ADDRESS", "as an illegal address");
    } else {
        skip(4, "the simulator's checks of a launch");
    }
    gpumem_array_release(d);
    gm_pack_kernels_put(k);
    gpumem_context_release(ctx);
    done_testing();
    return exit_status();
}
