/* Batches refused (part of tests/test-batch): a bad pair in the middle,
 * destinations that collide (hand-made, random, the first of several, in
 * any order, large), disjoint columns of one array, and empty batches. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gpumem.h>

#include "arrays.h"
#include "child.h"
#include "rng.h"
#include "tap.h"
#include "batch-test.h"

/* ---- refusals ------------------------------------------------------------------------------------ */

/* Whether device field d still holds val(tag, ...) everywhere. */
static int untouched(gpumem_array *d, int tag, int64_t rows, int64_t cols)
{
    int32_t *h = read_field(d, rows, cols);
    int good = 1;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            good &= h[i * cols + j] == val(tag, i, j);
    free(h);
    return good;
}

static int all_equal(gpumem_array *p, int64_t n, int32_t first)
{
    int good = 1;
    for (int64_t k = 0; k < n; k++)
        good &= host_of(p)[k] == first + (int32_t)k;
    return good;
}

void test_bad_pair(void)
{
    gpumem_array *f = field(7, R, C), *g = field(8, R, C);
    gpumem_array *out = pinned(R, -50), *in = pinned(R, 900000), *short_in = pinned(R - 1, 800000);
    gpumem_array *ro = col(g, 9);
    MUST(gpumem_array_set_readonly(ro, 1));
    gpumem_array *dst[4] = {out, col(g, 1), col(g, 2), col(g, 3)};
    gpumem_array *src[4] = {col(f, 0), in, short_in, in};
    gpumem_status st = gpumem_array_copy_batch(4, dst, src, stream);
    MUST(gpumem_stream_synchronize(stream));
    is_int(st, GPUMEM_ERROR_SHAPE_MISMATCH, "pair 2 of 4 has the wrong shape: GPUMEM_ERROR_SHAPE_MISMATCH");
    like(gpumem_last_error(), "gpumem_array_copy_batch: pair 2: 'dst' has shape (64,) but 'src' has shape (63,)",
         "the message names the pair and the arguments");
    ok(all_equal(out, R, -50) && untouched(g, 8, R, C), "no destination was written, before or after pair 2");

    gpumem_array *dst2[3] = {out, ro, col(g, 4)};
    gpumem_array *src2[3] = {col(f, 0), in, in};
    is_int(gpumem_array_copy_batch(3, dst2, src2, stream), GPUMEM_ERROR_INVALID_VALUE, "a read-only dst[1]");
    like(gpumem_last_error(), "pair 1", "its message names pair 1");
    gpumem_array *dst3[3] = {out, NULL, col(g, 5)};
    is_int(gpumem_array_copy_batch(3, dst3, src2, stream), GPUMEM_ERROR_NULL_ARGUMENT, "dst[1] NULL");
    like(gpumem_last_error(), "'dst[1]'", "its message names dst[1]");
    MUST(gpumem_stream_synchronize(stream));
    ok(all_equal(out, R, -50) && untouched(g, 8, R, C), "still nothing written");
    is_int(gpumem_array_copy_batch(2, NULL, src2, stream), GPUMEM_ERROR_NULL_ARGUMENT, "dst NULL with count 2");
    GPUMEM_ARRAY_RELEASE_ALL(dst[1], dst[2], dst[3], src[0], dst2[2], src2[0], dst3[2], ro, out, in, short_in, f, g);
}

void test_collisions(void)
{
    gpumem_array *f = field(9, R, C);
    gpumem_array *a = pinned(C, 10), *b = pinned(R, 20), *c = pinned(R, 30);
    /* row 0 and the full column 0 share the corner (0, 0) */
    gpumem_array *dst[2] = {row(f, 0), col(f, 0)};
    gpumem_array *src[2] = {a, b};
    is_int(gpumem_array_copy_batch(2, dst, src, stream), GPUMEM_ERROR_INVALID_VALUE,
           "row 0 and column 0 as destinations (their corner is one element): refused");
    like(gpumem_last_error(), "dst[0] shares memory with dst[1]", "the message names both");
    /* a destination that another pair reads */
    gpumem_array *out = pinned(R, 0);
    gpumem_array *dst2[2] = {col(f, 2), out};
    gpumem_array *src2[2] = {b, col(f, 2)};
    is_int(gpumem_array_copy_batch(2, dst2, src2, stream), GPUMEM_ERROR_INVALID_VALUE,
           "a destination that another pair reads: refused");
    like(gpumem_last_error(), "dst[0] shares memory with src[1]", "the message names dst[0] and src[1]");
    MUST(gpumem_stream_synchronize(stream));
    ok(untouched(f, 9, R, C) && all_equal(out, R, 0), "nothing written");
    /* columns 0 and 47 interleave in their extents, and share no byte */
    gpumem_array *dst3[2] = {col(f, 0), col(f, C - 1)};
    gpumem_array *src3[2] = {b, c};
    MUST(gpumem_array_copy_batch(2, dst3, src3, stream));
    MUST(gpumem_stream_synchronize(stream));
    int32_t *h = read_field(f, R, C);
    int good = 1;
    for (int i = 0; i < R; i++)
        good &= h[i * C] == 20 + i && h[i * C + C - 1] == 30 + i && h[i * C + 1] == val(9, i, 1);
    free(h);
    ok(good, "two columns of one array as destinations: taken (byte for byte, not by extent), exact");
    /* a pair whose destination overlaps its own source: copied as gpumem_array_copy copies it */
    gpumem_array *g = field(10, 4, 6), *gd = NULL, *gs = NULL;
    const gpumem_slice sd[2] = {GPUMEM_SLICE_ALL, {0, 4, 1}}, ss[2] = {GPUMEM_SLICE_ALL, {2, 6, 1}};
    MUST(gpumem_array_slice(g, sd, 2, &gd));
    MUST(gpumem_array_slice(g, ss, 2, &gs));
    gpumem_array *dst4[1] = {gd}, *src4[1] = {gs};
    MUST(gpumem_array_copy_batch(1, dst4, src4, stream));
    MUST(gpumem_stream_synchronize(stream));
    h = read_field(g, 4, 6);
    good = 1;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 6; j++)
            good &= h[i * 6 + j] == (j < 4 ? val(10, i, j + 2) : val(10, i, j));
    free(h);
    ok(good, "g[:, 0:4] = g[:, 2:6], a pair overlapping itself, is taken: exact");
    GPUMEM_ARRAY_RELEASE_ALL(dst[0], dst[1], dst2[0], src2[1], dst3[0], dst3[1], gd, gs, g, a, b, c, out, f);
}

/* splitmix64, seeded and printed, so that a failure reproduces */
static uint64_t rng;
static uint64_t rnd(void)
{
    return splitmix64(&rng);
}

/* A random view of the 3-D base: per axis a random start, stop and step (either sign), an axis maybe indexed
 * away, the axes maybe permuted. */
static gpumem_array *random_view(gpumem_array *base, const int64_t *shape)
{
    gpumem_slice sl[3];
    for (int a = 0; a < 3; a++) {
        int64_t n = shape[a], step = (int64_t)(rnd() % 3) + 1, i = (int64_t)(rnd() % (uint64_t)n);
        if (rnd() % 5 == 0) {
            sl[a] = (gpumem_slice)GPUMEM_INDEX(i);
            continue;
        }
        int64_t j = (int64_t)(rnd() % (uint64_t)n);
        if (rnd() % 2) /* forward, i..j */
            sl[a] = (gpumem_slice){i < j ? i : j, (i < j ? j : i) + 1, step};
        else
            sl[a] = (gpumem_slice){i > j ? i : j, i > j ? j - 1 : i - 1, -step};
        if (sl[a].stop < 0)
            sl[a].stop = GPUMEM_SLICE_DEFAULT;
    }
    gpumem_array *v = NULL, *t = NULL;
    MUST(gpumem_array_slice(base, sl, 3, &v));
    int nd = 0;
    MUST(gpumem_array_ndim(v, &nd));
    if (nd < 2 || rnd() % 2)
        return v;
    MUST(gpumem_array_transpose(v, NULL, &t));
    gpumem_array_release(v);
    return t;
}

/* The bytes of device view v, marked in map (offsets from base). */
static void mark(gpumem_array *v, uint64_t base, unsigned char *map, size_t isz)
{
    int nd = 0;
    int64_t shape[GPUMEM_MAX_NDIM], strides[GPUMEM_MAX_NDIM], idx[GPUMEM_MAX_NDIM] = {0}, size = 0;
    uint64_t p = 0;
    gpumem_array_ndim(v, &nd);
    gpumem_array_shape(v, shape);
    gpumem_array_strides(v, strides);
    gpumem_array_size(v, &size);
    gpumem_array_device_pointer(v, &p);
    for (int64_t e = 0; e < size; e++) {
        int64_t off = (int64_t)(p - base);
        for (int a = 0; a < nd; a++)
            off += idx[a] * strides[a];
        memset(map + off, 1, isz);
        for (int a = nd - 1; a >= 0 && ++idx[a] == shape[a]; a--)
            idx[a] = 0;
    }
}

/* Two random views of one array as two destinations: refused exactly when a byte of one is a byte of the
 * other (the test's own map of their bytes), copied otherwise. */
void test_collisions_random(void)
{
    const int64_t shape[3] = {6, 7, 9};
    const size_t isz = 2, nbytes = 6 * 7 * 9 * 2;
    const gpumem_dtype *i16 = gpumem_dtype_builtin(GPUMEM_INT16);
    rng = (uint64_t)time(NULL);
    diag("seed %llu", (unsigned long long)rng);
    uint64_t seed = rng;
    gpumem_array *base = NULL;
    MUST(gpumem_device_array(ctx, 3, shape, NULL, i16, 'C', NULL, &base));
    uint64_t b0 = 0;
    MUST(gpumem_array_device_pointer(base, &b0));
    int right = 1, refused = 0, taken = 0;
    for (int round = 0; round < 300 && right; round++) {
        gpumem_array *v[2] = {random_view(base, shape), random_view(base, shape)}, *src[2] = {NULL, NULL};
        unsigned char m0[6 * 7 * 9 * 2] = {0}, m1[6 * 7 * 9 * 2] = {0};
        mark(v[0], b0, m0, isz);
        mark(v[1], b0, m1, isz);
        int meet = 0;
        for (size_t k = 0; k < nbytes; k++)
            meet |= m0[k] & m1[k];
        for (int k = 0; k < 2; k++) {
            int nd = 0;
            int64_t vs[GPUMEM_MAX_NDIM];
            MUST(gpumem_array_ndim(v[k], &nd));
            MUST(gpumem_array_shape(v[k], vs));
            MUST(gpumem_device_array(ctx, nd, vs, NULL, i16, 'C', NULL, &src[k]));
        }
        gpumem_status st = gpumem_array_copy_batch(2, v, src, stream);
        if (st != (meet ? GPUMEM_ERROR_INVALID_VALUE : GPUMEM_OK)) {
            right = 0;
            diag("round %d (seed %llu): views %s, the call says %s: %s", round, (unsigned long long)seed,
                 meet ? "collide" : "are disjoint", gpumem_status_string(st), gpumem_last_error());
        }
        refused += meet, taken += !meet;
        GPUMEM_ARRAY_RELEASE_ALL(v[0], v[1], src[0], src[1]);
    }
    MUST(gpumem_stream_synchronize(stream));
    ok(right, "300 pairs of random views of one 6x7x9 array (steps of either sign, indexed axes, transposes) as "
              "destinations: refused exactly when their bytes meet (%d refused, %d taken)", refused, taken);
    gpumem_array_release(base);
}

/* Several random views of one array, as destinations and as sources: the
 * call refuses exactly the first colliding pair of the walk gpumem/batch.h
 * describes (destination i, then pair j != i, j's destination before its
 * source, two destinations once), found here by the test's own byte maps,
 * and names it. */
void test_collisions_first(void)
{
    enum { P = 6 };
    const int64_t shape[3] = {6, 7, 9};
    const size_t isz = 2, nbytes = 6 * 7 * 9 * 2;
    const gpumem_dtype *i16 = gpumem_dtype_builtin(GPUMEM_INT16);
    uint64_t seed = rng = (uint64_t)time(NULL) ^ 0x5bd1e995u;
    diag("seed %llu", (unsigned long long)seed);
    gpumem_array *base = NULL;
    MUST(gpumem_device_array(ctx, 3, shape, NULL, i16, 'C', NULL, &base));
    uint64_t b0 = 0;
    MUST(gpumem_array_device_pointer(base, &b0));
    int right = 1, refused = 0;
    static unsigned char m[2][P][6 * 7 * 9 * 2];
    for (int round = 0; round < 200 && right; round++) {
        gpumem_array *dst[P], *src[P];
        memset(m, 0, sizeof m);
        for (int k = 0; k < P; k++) {
            dst[k] = random_view(base, shape);
            int nd = 0;
            int64_t vs[GPUMEM_MAX_NDIM];
            MUST(gpumem_array_ndim(dst[k], &nd));
            MUST(gpumem_array_shape(dst[k], vs));
            if (rnd() % 3 == 0) { /* a source of the same shape elsewhere */
                MUST(gpumem_device_array(ctx, nd, vs, NULL, i16, 'C', NULL, &src[k]));
            } else { /* or a view of the base, made of the destination's shape */
                gpumem_array *t = NULL;
                src[k] = NULL;
                for (int tries = 0; tries < 50 && src[k] == NULL; tries++) {
                    t = random_view(base, shape);
                    int tn = 0;
                    int64_t ts[GPUMEM_MAX_NDIM];
                    MUST(gpumem_array_ndim(t, &tn));
                    MUST(gpumem_array_shape(t, ts));
                    if (tn == nd && memcmp(ts, vs, (size_t)nd * sizeof *vs) == 0)
                        src[k] = t;
                    else
                        gpumem_array_release(t);
                }
                if (src[k] == NULL)
                    MUST(gpumem_device_array(ctx, nd, vs, NULL, i16, 'C', NULL, &src[k]));
                else
                    mark(src[k], b0, m[1][k], isz);
            }
            mark(dst[k], b0, m[0][k], isz);
        }
        /* the walk's first colliding pair */
        char want[128] = "";
        for (int i = 0; i < P && want[0] == '\0'; i++)
            for (int j = 0; j < P && want[0] == '\0'; j++)
                for (int o = 0; o < 2 && want[0] == '\0' && j != i; o++) {
                    if (o == 0 && j < i)
                        continue;
                    int meet = 0;
                    for (size_t b = 0; b < nbytes; b++)
                        meet |= m[0][i][b] & m[o][j][b];
                    if (meet)
                        snprintf(want, sizeof want, "dst[%d] shares memory with %s[%d]:", i, o ? "src" : "dst", j);
                }
        gpumem_status st = gpumem_array_copy_batch(P, dst, src, stream);
        int good = want[0] ? st == GPUMEM_ERROR_INVALID_VALUE && strstr(gpumem_last_error(), want) != NULL
                           : st == GPUMEM_OK;
        if (!good) {
            right = 0;
            diag("round %d (seed %llu): want %s, the call says %s: %s", round, (unsigned long long)seed,
                 want[0] ? want : "no collision", gpumem_status_string(st), gpumem_last_error());
        }
        refused += want[0] != '\0';
        for (int k = 0; k < P; k++)
            GPUMEM_ARRAY_RELEASE_ALL(dst[k], src[k]);
    }
    MUST(gpumem_stream_synchronize(stream));
    ok(right, "200 batches of %d random views of one array as destinations and sources: the first colliding pair "
              "of the walk is the one refused and named (%d refused)", P, refused);
    gpumem_array_release(base);
}

/* Collisions far apart in a batch, several in one: the message names the
 * first of the walk's order. */
void test_collisions_order(void)
{
    enum { N = 64 };
    int64_t n = N;
    gpumem_array *x = NULL, *y = NULL;
    MUST(gpumem_device_array(ctx, 1, &n, NULL, i32, 'C', NULL, &x));
    MUST(gpumem_device_array(ctx, 1, &n, NULL, i32, 'C', NULL, &y));
    gpumem_array *dst[10], *src[10];
    /* ten one-element pairs, x[k] <- y[k]; then changes */
    for (int k = 0; k < 10; k++) {
        gpumem_slice s = {k, k + 1, 1};
        MUST(gpumem_array_slice(x, &s, 1, &dst[k]));
        MUST(gpumem_array_slice(y, &s, 1, &src[k]));
    }
    MUST(gpumem_array_copy_batch(10, dst, src, stream));
    ok(1, "ten disjoint one-element pairs are taken");
    struct {
        int i, j;     /* pair j's side replaced with a view of x[i]'s element */
        int src_side; /* 1: src[j], 0: dst[j] */
    } swaps[3][2] = {
        {{1, 7, 0}, {-1, 0, 0}},  /* dst[7] on x[1]: dst[1] and dst[7], far apart */
        {{3, 8, 1}, {5, 9, 0}},   /* src[8] on x[3], dst[9] on x[5]: dst[3]'s first */
        {{2, 6, 0}, {2, 4, 1}},   /* dst[6] and src[4] on x[2]: src[4] first (pair 4 before pair 6) */
    };
    const char *want[3] = {"dst[1] shares memory with dst[7]:", "dst[3] shares memory with src[8]:",
                           "dst[2] shares memory with src[4]:"};
    for (int c = 0; c < 3; c++) {
        gpumem_array *d2[10], *s2[10];
        memcpy(d2, dst, sizeof d2);
        memcpy(s2, src, sizeof s2);
        gpumem_array *made[2] = {NULL, NULL};
        for (int w = 0; w < 2 && swaps[c][w].i >= 0; w++) {
            gpumem_slice s = {swaps[c][w].i, swaps[c][w].i + 1, 1};
            MUST(gpumem_array_slice(x, &s, 1, &made[w]));
            if (swaps[c][w].src_side)
                s2[swaps[c][w].j] = made[w];
            else
                d2[swaps[c][w].j] = made[w];
        }
        gpumem_status st = gpumem_array_copy_batch(10, d2, s2, stream);
        ok(st == GPUMEM_ERROR_INVALID_VALUE, "collision case %d refused", c);
        like(gpumem_last_error(), want[c], "it names the walk's first pair");
        GPUMEM_ARRAY_RELEASE_ALL(made[0], made[1]);
    }
    /* a long destination over many one-element ones: the first it meets */
    gpumem_slice mid = {4, 8, 1};
    gpumem_array *wide = NULL, *wsrc = NULL;
    MUST(gpumem_array_slice(x, &mid, 1, &wide));
    MUST(gpumem_array_slice(y, &(gpumem_slice){20, 24, 1}, 1, &wsrc));
    gpumem_array *d3[11], *s3[11];
    memcpy(d3, dst, sizeof dst);
    memcpy(s3, src, sizeof src);
    d3[10] = wide;
    s3[10] = wsrc;
    is_int(gpumem_array_copy_batch(11, d3, s3, stream), GPUMEM_ERROR_INVALID_VALUE, "x[4:8] over x[4] .. x[7]");
    like(gpumem_last_error(), "dst[4] shares memory with dst[10]:", "it names dst[4] and dst[10]");
    /* ranges that touch and do not meet, and interleaved strided views */
    gpumem_array *a0 = NULL, *a1 = NULL, *e[8], *ys[8];
    MUST(gpumem_array_slice(x, &(gpumem_slice){0, 32, 1}, 1, &a0));
    MUST(gpumem_array_slice(x, &(gpumem_slice){32, 64, 1}, 1, &a1));
    MUST(gpumem_array_slice(y, &(gpumem_slice){0, 32, 1}, 1, &ys[0]));
    MUST(gpumem_array_slice(y, &(gpumem_slice){32, 64, 1}, 1, &ys[1]));
    gpumem_array *d4[2] = {a1, a0}, *s4[2] = {ys[0], ys[1]};
    MUST(gpumem_array_copy_batch(2, d4, s4, stream));
    ok(1, "x[32:64] and x[0:32], which touch, are taken");
    GPUMEM_ARRAY_RELEASE_ALL(a0, a1, ys[0], ys[1]);
    for (int k = 0; k < 8; k++) {
        MUST(gpumem_array_slice(x, &(gpumem_slice){k, N, 8}, 1, &e[k]));        /* x[k::8] */
        MUST(gpumem_array_slice(y, &(gpumem_slice){8 * k, 8 * k + 8, 1}, 1, &ys[k]));
    }
    gpumem_array *d5[8] = {e[0], e[5], e[2], e[7], e[4], e[1], e[6], e[3]};
    gpumem_array *s5[8] = {ys[0], ys[5], ys[2], ys[7], ys[4], ys[1], ys[6], ys[3]};
    int32_t yv[N], xv[N];
    for (int k = 0; k < N; k++)
        yv[k] = 100 + k;
    gpumem_array *hy = NULL;
    MUST(gpumem_host_array_wrap(yv, 1, &n, NULL, i32, &hy));
    MUST(gpumem_array_copy(y, hy, stream));
    is_int(gpumem_array_copy_batch(8, d5, s5, stream), GPUMEM_OK,
           "x[k::8] for every k as destinations, their ranges all meeting, no byte shared: taken");
    MUST(gpumem_stream_synchronize(stream));
    int good = read_all(x, xv);
    for (int k = 0; good && k < N; k++)
        good = xv[k] == 100 + 8 * (k % 8) + k / 8; /* x[k::8] = y[8k:8k+8] */
    ok(good, "and each gets its values");
    gpumem_array *x9 = NULL;
    MUST(gpumem_array_slice(x, &(gpumem_slice){9, N, 16}, 1, &x9)); /* x[9::16]: elements of x[1::8] */
    gpumem_array *y4 = NULL;
    MUST(gpumem_array_slice(y, &(gpumem_slice){0, 4, 1}, 1, &y4));
    gpumem_array *d6[9], *s6[9];
    memcpy(d6, d5, sizeof d5);
    memcpy(s6, s5, sizeof s5);
    d6[8] = x9;
    s6[8] = y4;
    is_int(gpumem_array_copy_batch(9, d6, s6, stream), GPUMEM_ERROR_INVALID_VALUE,
           "x[9::16] among them: refused");
    like(gpumem_last_error(), "dst[5] shares memory with dst[8]:", "it names x[1::8] (dst[5]) and dst[8]");
    MUST(gpumem_stream_synchronize(stream));
    for (int k = 0; k < 8; k++)
        GPUMEM_ARRAY_RELEASE_ALL(e[k], ys[k]);
    for (int k = 0; k < 10; k++)
        GPUMEM_ARRAY_RELEASE_ALL(dst[k], src[k]);
    GPUMEM_ARRAY_RELEASE_ALL(x9, y4, hy, wide, wsrc, x, y);
}

/* 50 000 one-element pairs (the collision check was quadratic: 16 000
 * took 4.8 s): each element arrives. */
void test_collisions_large(void)
{
    enum { N = 50000 };
    int64_t n = N;
    gpumem_array *h = NULL, *d = NULL, **dst = calloc(N, sizeof *dst), **src = calloc(N, sizeof *src);
    int32_t *in = malloc(N * sizeof *in), *out = malloc(N * sizeof *out);
    if (dst == NULL || src == NULL || in == NULL || out == NULL)
        bail_out("out of memory");
    for (int k = 0; k < N; k++)
        in[k] = 7 * k + 1;
    MUST(gpumem_host_array_wrap(in, 1, &n, NULL, i32, &h));
    MUST(gpumem_device_array(ctx, 1, &n, NULL, i32, 'C', NULL, &d));
    for (int k = 0; k < N; k++) { /* d[k] <- in[N - 1 - k] */
        MUST(gpumem_array_slice(d, &(gpumem_slice){k, k + 1, 1}, 1, &dst[k]));
        MUST(gpumem_array_slice(h, &(gpumem_slice){N - 1 - k, N - k, 1}, 1, &src[k]));
    }
    gpumem_status st = gpumem_array_copy_batch(N, dst, src, NULL);
    ok(st == GPUMEM_OK, "%d one-element pairs", N);
    if (st != GPUMEM_OK)
        diag("  %s", gpumem_last_error());
    int good = read_all(d, out);
    for (int k = 0; good && k < N; k++)
        good = out[k] == 7 * (N - 1 - k) + 1;
    ok(good, "every element arrives");
    MUST(gpumem_array_slice(h, &(gpumem_slice){5, 6, 1}, 1, &src[N - 1])); /* reads in[5]: no collision */
    gpumem_array *last = dst[N - 1];
    MUST(gpumem_array_slice(d, &(gpumem_slice){3, 4, 1}, 1, &dst[N - 1])); /* d[3] twice */
    is_int(gpumem_array_copy_batch(N, dst, src, NULL), GPUMEM_ERROR_INVALID_VALUE,
           "the last pair writing d[3] again: refused");
    like(gpumem_last_error(), "dst[3] shares memory with dst[49999]:", "naming dst[3] and dst[49999]");
    gpumem_array_release(last);
    for (int k = 0; k < N; k++)
        GPUMEM_ARRAY_RELEASE_ALL(dst[k], src[k]);
    GPUMEM_ARRAY_RELEASE_ALL(h, d);
    free(dst);
    free(src);
    free(in);
    free(out);
}

void test_empty(void)
{
    is_int(gpumem_array_copy_batch(0, NULL, NULL, stream), GPUMEM_OK, "an empty batch on a stream");
    is_int(gpumem_array_copy_batch(0, NULL, NULL, NULL), GPUMEM_OK, "an empty synchronous batch");
    gpumem_copy_path path = GPUMEM_COPY_PATH_DMA;
    gpumem_array *e1 = NULL, *e2 = NULL;
    MUST(gpumem_device_array(ctx, 1, (int64_t[]){0}, NULL, i32, 'C', NULL, &e1));
    MUST(gpumem_host_array(1, (int64_t[]){0}, i32, 'C', &e2));
    MUST(gpumem_array_copy_batch(1, &e2, &e1, stream));
    gpumem_debug_last_copy_path(&path);
    is_str(gpumem_copy_path_name(path), "none", "a batch of one empty pair: nothing, path none");
    GPUMEM_ARRAY_RELEASE_ALL(e1, e2);
}
