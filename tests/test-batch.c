/* Batched copies and packed views (gpumem/batch.h): the four faces of a
 * halo out of and into a device field (strided columns, contiguous rows)
 * with one kernel launch each way; batches mixing directions, strided and
 * contiguous pairs, pageable and host-only pairs and empty ones; more
 * pieces than one launch takes; a bad pair in the middle, which leaves
 * every destination untouched; destinations that collide (refused) and
 * disjoint columns of one array (taken); empty batches; pack and unpack
 * round trips through pinned and device buffers, byte for byte; and every
 * driver call of a batch workload failed in turn (a clean failure, nothing
 * leaked).  Every value is read back and compared with the test's own
 * model. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gpumem.h>

#include "arrays.h"
#include "child.h"
#include "rng.h"
#include "tap.h"

static gpumem_context *ctx;
static gpumem_stream *stream;
static const gpumem_dtype *i32;


/* The value the tests put at (i, j) of field `tag`. */
static int32_t val(int tag, int64_t i, int64_t j)
{
    return (int32_t)(tag * 1000000 + i * 1000 + j);
}

/* A device field of rows x cols int32, (i, j) = val(tag, i, j). */
static gpumem_array *field(int tag, int64_t rows, int64_t cols)
{
    int32_t *h = malloc((size_t)(rows * cols) * sizeof *h);
    if (h == NULL)
        bail_out("out of memory");
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            h[i * cols + j] = val(tag, i, j);
    gpumem_array *w = NULL, *d = NULL;
    MUST(gpumem_host_array_wrap(h, 2, (int64_t[]){rows, cols}, NULL, i32, &w));
    MUST(gpumem_to_device(ctx, w, NULL, 0, &d));
    gpumem_array_release(w);
    free(h);
    return d;
}

static gpumem_array *col(gpumem_array *a, int64_t j)
{
    gpumem_array *v = NULL;
    const gpumem_slice s[2] = {GPUMEM_SLICE_ALL, GPUMEM_INDEX(j)};
    MUST(gpumem_array_slice(a, s, 2, &v));
    return v;
}

static gpumem_array *row(gpumem_array *a, int64_t i)
{
    gpumem_array *v = NULL;
    const gpumem_slice s[1] = {GPUMEM_INDEX(i)};
    MUST(gpumem_array_slice(a, s, 1, &v));
    return v;
}

static gpumem_array *pinned(int64_t n, int32_t fill)
{
    gpumem_array *p = NULL;
    MUST(gpumem_pinned_array(ctx, 1, &n, NULL, i32, 'C', &p));
    int32_t *h = NULL;
    MUST(gpumem_array_host_pointer(p, (void **)&h));
    for (int64_t k = 0; k < n; k++)
        h[k] = fill + (int32_t)k;
    return p;
}

static int32_t *host_of(gpumem_array *a)
{
    void *h = NULL;
    MUST(gpumem_array_host_pointer(a, &h));
    return h;
}

/* Reads a whole rows x cols int32 device field. */
static int32_t *read_field(gpumem_array *d, int64_t rows, int64_t cols)
{
    int32_t *h = malloc((size_t)(rows * cols) * sizeof *h);
    if (h == NULL || !read_all(d, h))
        bail_out("read back: %s", gpumem_last_error());
    return h;
}

static int64_t launches(void)
{
    return calls("cuLaunchKernel");
}

/* ---- the halo faces ----------------------------------------------------------------------------- */

enum { R = 64, C = 48 };

static void test_faces_out(void)
{
    gpumem_array *f = field(1, R, C);
    gpumem_array *src[4] = {row(f, 0), row(f, R - 1), col(f, 0), col(f, C - 1)};
    gpumem_array *dst[4] = {pinned(C, -1), pinned(C, -1), pinned(R, -1), pinned(R, -1)};
    int64_t l0 = launches();
    MUST(gpumem_array_copy_batch(4, dst, src, stream));
    MUST(gpumem_stream_synchronize(stream));
    is_int(launches() - l0, 1, "the four faces of a 64x48 field out to pinned memory: one kernel launch");
    int good = 1;
    for (int j = 0; j < C; j++)
        good &= host_of(dst[0])[j] == val(1, 0, j) && host_of(dst[1])[j] == val(1, R - 1, j);
    for (int i = 0; i < R; i++)
        good &= host_of(dst[2])[i] == val(1, i, 0) && host_of(dst[3])[i] == val(1, i, C - 1);
    ok(good, "rows 0 and 63, columns 0 and 47, exact");
    gpumem_copy_path path = GPUMEM_COPY_PATH_NONE;
    gpumem_debug_last_copy_path(&path);
    is_str(gpumem_copy_path_name(path), "device-pack", "the last pair's path is reported (a column: device-pack)");
    GPUMEM_ARRAY_RELEASE_ALL(src[0], src[1], src[2], src[3], dst[0], dst[1], dst[2], dst[3], f);
}

/* The column j of rows [1, R - 1): a halo's side face, between its rows. */
static gpumem_array *side(gpumem_array *a, int64_t rows, int64_t j)
{
    gpumem_array *v = NULL;
    const gpumem_slice s[2] = {{1, rows - 1, 1}, GPUMEM_INDEX(j)};
    MUST(gpumem_array_slice(a, s, 2, &v));
    return v;
}

static void test_faces_in(void)
{
    gpumem_array *f = field(2, R, C);
    gpumem_array *dst[4] = {row(f, 0), row(f, R - 1), side(f, R, 0), side(f, R, C - 1)};
    gpumem_array *src[4] = {pinned(C, 100000), pinned(C, 200000), pinned(R - 2, 300000), pinned(R - 2, 400000)};
    int64_t l0 = launches();
    MUST(gpumem_array_copy_batch(4, dst, src, stream));
    MUST(gpumem_stream_synchronize(stream));
    is_int(launches() - l0, 1, "the four faces of a halo in from pinned memory: one kernel launch");
    int32_t *h = read_field(f, R, C);
    int good = 1;
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) {
            int32_t want = i == 0 ? 100000 + j : i == R - 1 ? 200000 + j : j == 0 ? 300000 + i - 1
                           : j == C - 1 ? 400000 + i - 1 : val(2, i, j);
            good &= h[i * C + j] == want;
        }
    free(h);
    ok(good, "the faces hold the pinned buffers, the interior is untouched");
    GPUMEM_ARRAY_RELEASE_ALL(dst[0], dst[1], dst[2], dst[3], src[0], src[1], src[2], src[3], f);
}

/* The same faces, synchronously (NULL stream): complete on return. */
static void test_faces_sync(void)
{
    gpumem_array *f = field(3, R, C);
    gpumem_array *src[4] = {row(f, 1), row(f, R - 2), side(f, R, 1), side(f, R, C - 2)};
    gpumem_array *dst[4] = {pinned(C, -1), pinned(C, -1), pinned(R - 2, -1), pinned(R - 2, -1)};
    MUST(gpumem_array_copy_batch(4, dst, src, NULL));
    int good = 1;
    for (int j = 0; j < C; j++)
        good &= host_of(dst[0])[j] == val(3, 1, j) && host_of(dst[1])[j] == val(3, R - 2, j);
    for (int i = 1; i < R - 1; i++)
        good &= host_of(dst[2])[i - 1] == val(3, i, 1) && host_of(dst[3])[i - 1] == val(3, i, C - 2);
    ok(good, "a synchronous batch (NULL stream) has copied every face when it returns");
    GPUMEM_ARRAY_RELEASE_ALL(src[0], src[1], src[2], src[3], dst[0], dst[1], dst[2], dst[3], f);
}

/* Two columns into adjacent halves of one pinned buffer: one transfer when
 * both halves are views of the one array; two when each half is an array of
 * its own, which might be an allocation of its own (one cuMemcpy across two
 * adjacent pinned allocations is refused by the driver: found on an H200). */
static void test_adjacent(void)
{
    gpumem_array *f = field(9, R, C), *buf = pinned(2 * R, -1);
    int32_t *h = host_of(buf);
    gpumem_array *halves[2] = {NULL, NULL}, *wrapped[2] = {NULL, NULL};
    const gpumem_slice lo[1] = {{0, R, 1}}, hi[1] = {{R, 2 * R, 1}};
    MUST(gpumem_array_slice(buf, lo, 1, &halves[0]));
    MUST(gpumem_array_slice(buf, hi, 1, &halves[1]));
    MUST(gpumem_host_array_wrap(h, 1, (int64_t[]){R}, NULL, i32, &wrapped[0]));
    MUST(gpumem_host_array_wrap(h + R, 1, (int64_t[]){R}, NULL, i32, &wrapped[1]));
    gpumem_array *src[2] = {col(f, 0), col(f, 1)};
    int64_t m0 = calls("cuMemcpy");
    MUST(gpumem_array_copy_batch(2, halves, src, stream));
    MUST(gpumem_stream_synchronize(stream));
    int64_t one = calls("cuMemcpy") - m0;
    int good = 1;
    for (int i = 0; i < R; i++)
        good &= h[i] == val(9, i, 0) && h[R + i] == val(9, i, 1);
    memset(h, 0, 2 * R * sizeof *h);
    m0 = calls("cuMemcpy");
    MUST(gpumem_array_copy_batch(2, wrapped, src, stream));
    MUST(gpumem_stream_synchronize(stream));
    int64_t two = calls("cuMemcpy") - m0;
    for (int i = 0; i < R; i++)
        good &= h[i] == val(9, i, 0) && h[R + i] == val(9, i, 1);
    ok(one == 1 && two == 2 && good,
       "adjacent halves of one array: one transfer; adjacent arrays of their own: one each (got %lld and %lld), "
       "exact", (long long)one, (long long)two);
    GPUMEM_ARRAY_RELEASE_ALL(src[0], src[1], halves[0], halves[1], wrapped[0], wrapped[1], buf, f);
}

/* ---- mixed batches ------------------------------------------------------------------------------- */

static void test_mixed(void)
{
    gpumem_array *f = field(4, R, C), *g = field(5, R, C);
    int32_t pageable_out[R - 2], host_in[C], host_out[C];
    for (int j = 0; j < C; j++)
        host_in[j] = 700000 + j;
    memset(pageable_out, 0, sizeof pageable_out);
    memset(host_out, 0, sizeof host_out);
    gpumem_array *pgo = NULL, *hin = NULL, *hout = NULL, *empty_d = NULL, *empty_h = NULL;
    MUST(gpumem_host_array_wrap(pageable_out, 1, (int64_t[]){R - 2}, NULL, i32, &pgo));
    MUST(gpumem_host_array_wrap(host_in, 1, (int64_t[]){C}, NULL, i32, &hin));
    MUST(gpumem_host_array_wrap(host_out, 1, (int64_t[]){C}, NULL, i32, &hout));
    MUST(gpumem_device_array(ctx, 2, (int64_t[]){0, 5}, NULL, i32, 'C', NULL, &empty_d));
    MUST(gpumem_host_array(2, (int64_t[]){0, 5}, i32, 'C', &empty_h));
    gpumem_array *dense = NULL; /* a contiguous device vector, into a strided column of g */
    MUST(gpumem_device_array(ctx, 1, (int64_t[]){R - 2}, NULL, i32, 'C', NULL, &dense));
    int32_t seven = 7;
    MUST(gpumem_array_fill(dense, &seven, NULL));
    gpumem_array *down = pinned(R - 2, -1), *up = pinned(R - 2, 500000);
    gpumem_array *dst[9] = {down, side(g, R, 3), side(g, R, 4), side(g, R, 5), row(g, 0), pgo, hout, empty_h,
                            row(g, R - 1)};
    gpumem_array *src[9] = {side(f, R, 1), up, side(f, R, 2), dense, row(f, 3), side(f, R, 6), hin, empty_d,
                            row(f, 8)};
    /* 0: D2H strided -> pinned;   1: pinned -> D strided;   2: D strided -> D strided (through scratch);
     * 3: D dense -> D strided (one kernel);   4: D row -> D row (contiguous);   5: D strided -> pageable (queued);
     * 6: host -> host;   7: empty;   8: D row -> D row */
    int64_t l0 = launches();
    MUST(gpumem_array_copy_batch(9, dst, src, stream));
    MUST(gpumem_stream_synchronize(stream));
    int64_t nl = launches() - l0;
    ok(nl >= 2 && nl <= 3, "nine pairs of every kind: %lld launches (gathers, scatters, the queued download's own)",
       (long long)nl);
    int32_t *h = read_field(g, R, C);
    int good = 1;
    for (int i = 1; i < R - 1; i++) {
        good &= host_of(down)[i - 1] == val(4, i, 1);
        good &= pageable_out[i - 1] == val(4, i, 6);
    }
    for (int i = 0; i < R; i++) {
        for (int j = 0; j < C; j++) {
            int32_t want = val(5, i, j);
            if (i == 0)
                want = val(4, 3, j);
            else if (i == R - 1)
                want = val(4, 8, j);
            else if (j == 3)
                want = 500000 + i - 1;
            else if (j == 4)
                want = val(4, i, 2);
            else if (j == 5)
                want = 7;
            if (h[i * C + j] != want) {
                if (good)
                    diag("g[%d][%d] = %d, want %d", i, j, h[i * C + j], want);
                good = 0;
            }
        }
    }
    for (int j = 0; j < C; j++)
        good &= host_out[j] == 700000 + j;
    free(h);
    ok(good, "every destination holds its source: pinned, pageable and host ones, strided and contiguous "
             "device ones; the rest of the field untouched");
    GPUMEM_ARRAY_RELEASE_ALL(dst[1], dst[2], dst[3], dst[4], dst[8], src[0], src[2], src[4], src[5], src[8]);
    GPUMEM_ARRAY_RELEASE_ALL(down, up, dense, pgo, hin, hout, empty_d, empty_h, f, g);
}

/* More strided pieces than one launch takes (32): two launches. */
static void test_many(void)
{
    enum { N = 40, M = 20 };
    gpumem_array *f = field(6, M, N), *dst[N], *src[N];
    for (int j = 0; j < N; j++) {
        src[j] = col(f, j);
        dst[j] = pinned(M, -1);
    }
    int64_t l0 = launches();
    MUST(gpumem_array_copy_batch(N, dst, src, stream));
    MUST(gpumem_stream_synchronize(stream));
    is_int(launches() - l0, 2, "40 columns out: two launches (32 pieces, then 8)");
    int good = 1;
    for (int j = 0; j < N; j++)
        for (int i = 0; i < M; i++)
            good &= host_of(dst[j])[i] == val(6, i, j);
    ok(good, "every column of a 20x40 field, exact");
    for (int j = 0; j < N; j++)
        GPUMEM_ARRAY_RELEASE_ALL(dst[j], src[j]);
    gpumem_array_release(f);
}

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

static void test_bad_pair(void)
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

static void test_collisions(void)
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
static void test_collisions_random(void)
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
static void test_collisions_first(void)
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
static void test_collisions_order(void)
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
static void test_collisions_large(void)
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

static void test_empty(void)
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

/* ---- pack and unpack ----------------------------------------------------------------------------- */

static void test_pack_round_trip(int device_buffer)
{
    const char *where = device_buffer ? "a device buffer" : "a pinned buffer";
    gpumem_array *f = field(11, R, C), *g = field(12, R, C);
    const gpumem_dtype *i16 = gpumem_dtype_builtin(GPUMEM_INT16);
    int16_t small[3][5];
    for (int i = 0; i < 15; i++)
        small[i / 5][i % 5] = (int16_t)(-i * 3);
    gpumem_array *hs = NULL, *ds = NULL, *ds2 = NULL, *dsv = NULL, *ds2v = NULL;
    MUST(gpumem_host_array_wrap(small, 2, (int64_t[]){3, 5}, NULL, i16, &hs));
    MUST(gpumem_to_device(ctx, hs, NULL, 0, &ds));
    MUST(gpumem_device_array(ctx, 2, (int64_t[]){3, 5}, NULL, i16, 'C', NULL, &ds2));
    int16_t zero16 = 0;
    MUST(gpumem_array_fill(ds2, &zero16, NULL));
    const gpumem_slice rev[2] = {{GPUMEM_SLICE_DEFAULT, GPUMEM_SLICE_DEFAULT, -1}, {0, 5, 2}};
    MUST(gpumem_array_slice(ds, rev, 2, &dsv));   /* small[::-1, 0:5:2]: 3x3 int16, negative stride */
    MUST(gpumem_array_slice(ds2, rev, 2, &ds2v));
    gpumem_array *block = NULL, *block2 = NULL;
    const gpumem_slice bl[2] = {{5, 9, 1}, {10, 16, 2}};
    MUST(gpumem_array_slice(f, bl, 2, &block));  /* f[5:9, 10:16:2]: 4x3 */
    MUST(gpumem_array_slice(g, bl, 2, &block2));
    gpumem_array *views[5] = {row(f, 0), side(f, R, 0), side(f, R, C - 1), block, dsv};
    gpumem_array *back[5] = {row(g, 0), side(g, R, 0), side(g, R, C - 1), block2, ds2v};
    const int64_t total = C * 4 + 2 * (R - 2) * 4 + 12 * 4 + 9 * 2;
    gpumem_array *buf = NULL;
    const gpumem_dtype *u8 = gpumem_dtype_builtin(GPUMEM_UINT8);
    if (device_buffer)
        MUST(gpumem_device_array(ctx, 1, (int64_t[]){total + 8}, NULL, u8, 'C', NULL, &buf));
    else
        MUST(gpumem_pinned_array(ctx, 1, (int64_t[]){total + 8}, NULL, u8, 'C', &buf));
    uint8_t ff = 0xff;
    MUST(gpumem_array_fill(buf, &ff, NULL));
    int64_t l0 = launches();
    MUST(gpumem_array_pack(5, views, buf, stream));
    MUST(gpumem_stream_synchronize(stream));
    int64_t nl = launches() - l0;
    ok(nl == 1, "five views (a row, two strided columns, a strided block, a reversed int16 block) into %s: "
                "%lld launch", where, (long long)nl);
    /* the model: each view's elements in C order, one after the other */
    uint8_t *want = malloc((size_t)total + 8), *got = malloc((size_t)total + 8);
    if (want == NULL || got == NULL)
        bail_out("out of memory");
    size_t o = 0;
    for (int j = 0; j < C; j++, o += 4)
        memcpy(want + o, &(int32_t){val(11, 0, j)}, 4);
    for (int i = 1; i < R - 1; i++, o += 4)
        memcpy(want + o, &(int32_t){val(11, i, 0)}, 4);
    for (int i = 1; i < R - 1; i++, o += 4)
        memcpy(want + o, &(int32_t){val(11, i, C - 1)}, 4);
    for (int i = 5; i < 9; i++)
        for (int j = 10; j < 16; j += 2, o += 4)
            memcpy(want + o, &(int32_t){val(11, i, j)}, 4);
    for (int i = 2; i >= 0; i--)
        for (int j = 0; j < 5; j += 2, o += 2)
            memcpy(want + o, &small[i][j], 2);
    memset(want + o, 0xff, 8);
    if (!read_all(buf, got))
        bail_out("read back: %s", gpumem_last_error());
    ok(memcmp(got, want, (size_t)total + 8) == 0, "the buffer holds each view in C order, no padding, and its 8 "
                                                  "bytes beyond the views are untouched");
    MUST(gpumem_array_unpack(5, back, buf, stream));
    MUST(gpumem_stream_synchronize(stream));
    int32_t *h = read_field(g, R, C);
    int good = 1;
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) {
            int inblock = i >= 5 && i < 9 && j >= 10 && j < 16 && j % 2 == 0;
            int copied = i == 0 || j == 0 || j == C - 1 || inblock;
            if (i == R - 1 && (j == 0 || j == C - 1))
                copied = 0; /* the side faces stop at row R - 2 */
            good &= h[i * C + j] == (copied ? val(11, i, j) : val(12, i, j));
        }
    free(h);
    int16_t small2[3][5];
    if (!read_all(ds2, small2))
        bail_out("read back: %s", gpumem_last_error());
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 5; j++)
            good &= small2[i][j] == (j % 2 == 0 ? small[i][j] : 0);
    ok(good, "unpacked from %s into views of another field: each element in place, the gaps untouched", where);
    free(want);
    free(got);
    GPUMEM_ARRAY_RELEASE_ALL(views[0], views[1], views[2], back[0], back[1], back[2], block, block2, dsv, ds2v);
    GPUMEM_ARRAY_RELEASE_ALL(ds, ds2, hs, buf, f, g);
}

static void test_pack_refusals(void)
{
    gpumem_array *f = field(13, R, C);
    gpumem_array *views[2] = {side(f, R, 0), side(f, R, 1)};
    gpumem_array *small = pinned(2 * (R - 2) - 1, 5), *right = pinned(2 * (R - 2), 5), *two = NULL, *tv = NULL;
    is_int(gpumem_array_pack(2, views, small, stream), GPUMEM_ERROR_INVALID_VALUE, "a buffer one element short");
    like(gpumem_last_error(), "'buffer' holds 492 bytes, but the 2 views take 496", "the message gives both sizes");
    MUST(gpumem_pinned_array(ctx, 2, (int64_t[]){2, R - 2}, NULL, i32, 'F', &two));
    is_int(gpumem_array_pack(2, views, two, stream), GPUMEM_ERROR_INVALID_VALUE, "an F-ordered 2-D buffer");
    like(gpumem_last_error(), "'buffer' is not C-contiguous", "the message says why");
    MUST(gpumem_array_set_readonly(right, 1));
    is_int(gpumem_array_pack(2, views, right, stream), GPUMEM_ERROR_INVALID_VALUE, "a read-only buffer");
    MUST(gpumem_array_set_readonly(right, 0));
    is_int(gpumem_array_pack(2, NULL, right, stream), GPUMEM_ERROR_NULL_ARGUMENT, "views NULL");
    gpumem_array *with_null[2] = {views[0], NULL};
    is_int(gpumem_array_pack(2, with_null, right, stream), GPUMEM_ERROR_NULL_ARGUMENT, "views[1] NULL");
    like(gpumem_last_error(), "'views[1]'", "the message names views[1]");
    is_int(gpumem_array_unpack(2, views, NULL, stream), GPUMEM_ERROR_NULL_ARGUMENT, "buffer NULL");
    /* the buffer is a view of the field the views are in */
    gpumem_array *f2 = field(14, R, C), *frow = row(f, 5), *fcols[1] = {side(f2, R, 7)};
    MUST(gpumem_array_slice(f2, (gpumem_slice[2]){{0, 2, 1}, GPUMEM_SLICE_ALL}, 2, &tv)); /* f2[0:2]: contiguous */
    is_int(gpumem_array_unpack(1, fcols, tv, stream), GPUMEM_OK,
           "unpacking f2[0:2] into f2[1:-1, 7], which overlaps the bytes it reads: one pair, taken");
    MUST(gpumem_stream_synchronize(stream));
    int32_t *h = read_field(f2, R, C);
    int good = 1;
    for (int i = 1; i < R - 1; i++)
        good &= h[i * C + 7] == val(14, (i - 1) / C, (i - 1) % C) && h[i * C + 6] == val(14, i, 6);
    free(h);
    ok(good, "f2[1:-1, 7] holds the first 62 elements of f2[0:2] as they were, exact");
    gpumem_array *cross[2] = {row(f2, 1), row(f2, 0)};
    is_int(gpumem_array_pack(2, cross, tv, stream), GPUMEM_ERROR_INVALID_VALUE,
           "packing f2[1], f2[0] into f2[0:2]: the bytes for views[0] are views[1]: refused");
    like(gpumem_last_error(), "'buffer' (the bytes of views[0]) shares memory with views[1]", "the message says so");
    gpumem_array *twice[2] = {frow, frow};
    is_int(gpumem_array_unpack(2, twice, right, stream), GPUMEM_ERROR_INVALID_VALUE,
           "unpacking into one view twice: refused");
    like(gpumem_last_error(), "views[0] shares memory with views[1]", "the message names both");
    is_int(gpumem_array_pack(2, twice, right, stream), GPUMEM_OK, "packing one view twice is fine (sources)");
    MUST(gpumem_stream_synchronize(stream));
    good = 1;
    for (int k = 0; k < 2 * (R - 2); k++)
        good &= host_of(right)[k] == (k < C ? val(13, 5, k) : k >= C && k < 2 * C ? val(13, 5, k - C) : 5 + k);
    ok(good, "and gives the row twice");
    is_int(gpumem_array_pack(0, NULL, right, stream), GPUMEM_OK, "packing no view");
    GPUMEM_ARRAY_RELEASE_ALL(views[0], views[1], small, right, two, tv, frow, fcols[0], cross[0], cross[1], f, f2);
}

/* ---- every driver call failed in turn -------------------------------------------------------- */

#define TRY(call)                 \
    do {                          \
        if (st == GPUMEM_OK)      \
            st = (call);          \
    } while (0)

/* The faces of a 16 x 12 field out into pinned buffers and back in (a
 * batch each way), then two columns packed and unpacked: the status, or -2
 * when it succeeded with a wrong value. */
static int workload(gpumem_context *c)
{
    enum { H = 16, W = 12 };
    gpumem_status st = GPUMEM_OK;
    gpumem_stream *s = NULL;
    gpumem_array *f = NULL, *h = NULL, *v[4] = {NULL, NULL, NULL, NULL}, *p[4] = {NULL, NULL, NULL, NULL};
    gpumem_array *buf = NULL;
    int32_t host[H][W], back[H][W];
    for (int i = 0; i < H * W; i++)
        host[i / W][i % W] = i;
    const gpumem_slice sl[4][2] = {{GPUMEM_INDEX(0), GPUMEM_SLICE_ALL}, {GPUMEM_INDEX(H - 1), GPUMEM_SLICE_ALL},
                                   {{1, H - 1, 1}, GPUMEM_INDEX(0)}, {{1, H - 1, 1}, GPUMEM_INDEX(W - 1)}};
    const int64_t len[4] = {W, W, H - 2, H - 2};
    TRY(gpumem_stream_create(c, 0, &s));
    TRY(gpumem_host_array_wrap(host, 2, (int64_t[]){H, W}, NULL, i32, &h));
    TRY(gpumem_to_device(c, h, NULL, 0, &f));
    for (int k = 0; k < 4; k++) {
        TRY(gpumem_array_slice(f, sl[k], 2, &v[k]));
        TRY(gpumem_pinned_array(c, 1, &len[k], NULL, i32, 'C', &p[k]));
    }
    TRY(gpumem_pinned_array(c, 1, (int64_t[]){2 * (H - 2)}, NULL, i32, 'C', &buf));
    TRY(gpumem_array_copy_batch(4, p, v, s));                          /* faces out */
    TRY(gpumem_array_copy_batch(2, (gpumem_array *[]){v[3], v[2]}, (gpumem_array *[]){p[2], p[3]}, s)); /* swapped */
    TRY(gpumem_array_pack(2, &v[2], buf, s));
    TRY(gpumem_array_unpack(2, (gpumem_array *[]){v[3], v[2]}, buf, s)); /* swapped back */
    TRY(gpumem_stream_synchronize(s));
    TRY(gpumem_copy_to_host(f, h, NULL));
    int good = 0;
    if (st == GPUMEM_OK) {
        memcpy(back, host, sizeof back);
        good = 1;
        for (int i = 0; i < H * W; i++)
            good &= back[i / W][i % W] == i;
    }
    gpumem_array *all[11] = {buf, p[0], p[1], p[2], p[3], v[0], v[1], v[2], v[3], f, h};
    for (int k = 0; k < 11; k++) { /* all of them, the first failure kept */
        gpumem_status rst = gpumem_array_release(all[k]);
        if (st == GPUMEM_OK)
            st = rst;
    }
    if (s != NULL) {
        gpumem_status rst = gpumem_stream_destroy(s);
        if (st == GPUMEM_OK)
            st = rst;
    }
    return st == GPUMEM_OK && !good ? -2 : (int)st;
}

static void run(const void *arg, child_result *out)
{
    long k = *(const long *)arg;
    i32 = gpumem_dtype_builtin(GPUMEM_INT32);
    gpumem_context *c = NULL;
    if (gpumem_context_create(0, &c) != GPUMEM_OK) {
        out->status = -1;
        return;
    }
    uint64_t f0 = 0, f1 = 0, total = 0;
    gpumem_context_set_dealloc_limits(c, 0, 0.0); /* every free at its release */
    gpumem_memory_info(c, &f0, &total);
    uint64_t calls0 = fault_arm(k);
    out->status = workload(c);
    snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
    out->value[0] = fault_disarm(calls0);
    gpumem_clear_context_caches(); /* the pack kernels' scratch */
    gpumem_context_flush_deallocations(c);
    gpumem_memory_info(c, &f1, &total);
    out->value[1] = (long)(f0 - f1); /* device bytes not given back */
    gpumem_context_release(c);
}

static void fault_injection(void)
{
    child_result r;
    long k = 0;
    run_child(run, &k, &r);
    is_int(r.status, GPUMEM_OK, "the batch workload succeeds without injection (and its values are right)");
    long n = r.value[0];
    ok(n >= 20, "it makes %ld driver calls", n);
    is_int(r.value[1], 0, "and gives all device memory back");
    /* fault_walk, but a batch that gives its scratch back replaces a failed record of the scratch's event by
     * a wait for its stream (as the copy engine does): those failures complete the workload, exactly */
    int clean = 1, named = 1, absorbed = 0;
    for (long c = 1; c <= n; c++) {
        run_child(run, &c, &r);
        int exited = r.exited && r.exit_code == 0 && r.status != -1 && r.status != -2;
        if (exited && r.status == 0 && r.value[1] == 0) {
            absorbed++;
            continue;
        }
        if (!exited || r.status == 0 || (r.value[1] != 0 && strstr(r.text, "cuMemFree") == NULL)) {
            clean = 0;
            diag("call %ld: exit %d, status %d, %ld bytes kept: %s", c, r.exit_code, r.status, r.value[1], r.text);
        }
        if (strstr(r.text, "CUDA_ERROR_UNKNOWN") == NULL) {
            named = 0;
            diag("call %ld: message without the driver error: %s", c, r.text);
        }
    }
    ok(clean && absorbed <= 4, "failing any one of the %ld calls fails the workload cleanly, without leaks, or "
                               "(%d calls, at most the 4 batches' scratch records) completes it with the right values",
       n, absorbed);
    ok(named, "every failure's message names the injected driver error");
}

/* GPUMEM_DEBUG=copies (doc/environment.md): one line for each batched
 * call that got past its checks, succeeded or not, and none for a refused
 * one.  In a child (the variable is read once): value[0] the lines, value[1]
 * the lines as expected (text: the first that was not), value[2] lines that
 * are no copy's. */
static void copies_lines(const void *arg, child_result *out)
{
    (void)arg;
    char path[] = "/tmp/gpumem-batch-copies-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) {
        out->status = -1;
        return;
    }
    setenv("GPUMEM_DEBUG", "copies", 1);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    enum { H = 16, W = 12 };
    i32 = gpumem_dtype_builtin(GPUMEM_INT32);
    gpumem_context *c = NULL;
    gpumem_stream *s = NULL;
    gpumem_array *f = NULL, *v[4] = {NULL, NULL, NULL, NULL}, *p[4] = {NULL, NULL, NULL, NULL}, *buf = NULL;
    const gpumem_slice sl[4][2] = {{GPUMEM_INDEX(0), GPUMEM_SLICE_ALL}, {GPUMEM_INDEX(H - 1), GPUMEM_SLICE_ALL},
                                   {{1, H - 1, 1}, GPUMEM_INDEX(0)}, {{1, H - 1, 1}, GPUMEM_INDEX(W - 1)}};
    const int64_t len[4] = {W, W, H - 2, H - 2};
    gpumem_status st = gpumem_context_create(0, &c);
    if (st == GPUMEM_OK)
        st = gpumem_stream_create(c, 0, &s);
    if (st == GPUMEM_OK)
        st = gpumem_device_array(c, 2, (int64_t[]){H, W}, NULL, i32, 'C', NULL, &f);
    for (int k = 0; k < 4 && st == GPUMEM_OK; k++)
        if ((st = gpumem_array_slice(f, sl[k], 2, &v[k])) == GPUMEM_OK)
            st = gpumem_pinned_array(c, 1, &len[k], NULL, i32, 'C', &p[k]);
    if (st == GPUMEM_OK)
        st = gpumem_pinned_array(c, 1, (int64_t[]){2 * (H - 2)}, NULL, i32, 'C', &buf);
    if (st != GPUMEM_OK) {
        dup2(saved, 2);
        out->status = st;
        snprintf(out->text, sizeof out->text, "setup: %s", gpumem_last_error());
        return;
    }
    /* what each line must say: the call, the direction, sync, status, pairs, bytes */
    struct {
        const char *what, *dir, *sync, *status;
        int pairs;
        unsigned long long bytes;
    } want[5];
    int nwant = 0;
    const unsigned long long faces = 4ull * (2 * W + 2 * (H - 2)), sides = 4ull * 2 * (H - 2);
    st = gpumem_array_copy_batch(4, p, v, s); /* faces out, on the stream */
    want[nwant++] = (typeof(want[0])){"gpumem_array_copy_batch", "d2h", "no", gpumem_status_string(st), 4, faces};
    gpumem_stream_synchronize(s);
    /* both ways in one batch, without a stream */
    st = gpumem_array_copy_batch(2, (gpumem_array *[]){v[0], p[2]}, (gpumem_array *[]){p[0], v[2]}, NULL);
    want[nwant++] = (typeof(want[0])){"gpumem_array_copy_batch", "mixed", "yes", gpumem_status_string(st), 2,
                                      4ull * (W + H - 2)};
    st = gpumem_array_pack(2, &v[2], buf, s);
    want[nwant++] = (typeof(want[0])){"gpumem_array_pack", "d2h", "no", gpumem_status_string(st), 2, sides};
    st = gpumem_array_unpack(2, (gpumem_array *[]){v[3], v[2]}, buf, s);
    want[nwant++] = (typeof(want[0])){"gpumem_array_unpack", "h2d", "no", gpumem_status_string(st), 2, sides};
    gpumem_stream_synchronize(s);
    /* one that fails past its checks (its first driver call): a line with its status */
    gpumem_debug_fail_call(1, 999);
    st = gpumem_array_copy_batch(4, p, v, NULL);
    gpumem_debug_fail_call(0, 0);
    want[nwant++] = (typeof(want[0])){"gpumem_array_copy_batch", "d2h", "yes", gpumem_status_string(st), 4, faces};
    out->value[3] = st != GPUMEM_OK;
    /* refused by their checks, or empty: no line */
    gpumem_array_copy_batch(2, (gpumem_array *[]){p[0], p[0]}, (gpumem_array *[]){v[0], v[1]}, s);
    gpumem_array_copy_batch(0, NULL, NULL, s);
    gpumem_array_unpack(2, v, NULL, s);
    gpumem_stream_synchronize(s);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    FILE *fp = fdopen(fd, "r");
    rewind(fp);
    char line[512];
    while (fgets(line, sizeof line, fp) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        char what[64], dir[8], pth[32], sync[8], status[64];
        unsigned long long b = 0;
        double us = -1;
        int pairs = -1;
        if (sscanf(line, "gpumem: copy %63[^:]: %7s path=%31s bytes=%llu us=%lf sync=%7s status=%63s pairs=%d",
                   what, dir, pth, &b, &us, sync, status, &pairs) != 8) {
            if (out->value[2]++ == 0)
                snprintf(out->note, sizeof out->note, "%.200s", line);
            continue;
        }
        int k = (int)out->value[0]++;
        int good = k < nwant && strcmp(what, want[k].what) == 0 && strcmp(dir, want[k].dir) == 0 &&
                   b == want[k].bytes && us >= 0 && strcmp(sync, want[k].sync) == 0 &&
                   strcmp(status, want[k].status) == 0 && pairs == want[k].pairs &&
                   strcmp(pth, "?") != 0;
        if (good)
            out->value[1]++;
        else if (out->text[0] == '\0')
            snprintf(out->text, sizeof out->text, "line %d: %.400s (want %s %s bytes=%llu sync=%s status=%s pairs=%d)",
                     k, line, k < nwant ? want[k].what : "none", k < nwant ? want[k].dir : "",
                     k < nwant ? want[k].bytes : 0, k < nwant ? want[k].sync : "", k < nwant ? want[k].status : "",
                     k < nwant ? want[k].pairs : 0);
    }
    fclose(fp);
    unlink(path);
    out->value[4] = nwant;
    gpumem_array *all[9] = {buf, p[0], p[1], p[2], p[3], v[0], v[1], v[2], v[3]};
    for (int k = 0; k < 9; k++)
        gpumem_array_release(all[k]);
    gpumem_array_release(f);
    gpumem_stream_destroy(s);
    gpumem_context_release(c);
}

static void test_copies_lines(void)
{
    child_result r;
    run_child(copies_lines, NULL, &r);
    ok(r.exited && r.exit_code == 0 && r.status == GPUMEM_OK && r.value[3], "GPUMEM_DEBUG=copies: the batches ran");
    if (r.status != GPUMEM_OK)
        diag("  %s", r.text);
    ok(r.value[0] == r.value[4] && r.value[1] == r.value[4] && r.value[2] == 0,
       "GPUMEM_DEBUG=copies: one line for each of the %ld batch, pack and unpack calls past their checks (its "
       "direction, bytes, sync, status and pairs), none for refused or empty ones (%ld lines, %ld right, %ld "
       "others)", r.value[4], r.value[0], r.value[1], r.value[2]);
    if (r.text[0] != '\0' || r.value[2] != 0)
        diag("  %s %s", r.text, r.note);
}

int main(void)
{
    if (test_on_sim())
        fault_injection(); /* children first: before this process starts the simulator's threads */
    else
        skip(5, "fault injection runs on the simulator");
    test_copies_lines(); /* a child, before this process uses the library */
    char reason[256];
    if (gpumem_test_context(&ctx, reason, sizeof reason) != GPUMEM_OK)
        plan_skip_all(reason);
    i32 = gpumem_dtype_builtin(GPUMEM_INT32);
    MUST(gpumem_stream_create(ctx, 0, &stream));
    test_faces_out();
    test_faces_in();
    test_faces_sync();
    test_adjacent();
    test_mixed();
    test_many();
    test_bad_pair();
    test_collisions();
    test_collisions_random();
    test_collisions_first();
    test_collisions_order();
    test_collisions_large();
    test_empty();
    test_pack_round_trip(0);
    test_pack_round_trip(1);
    test_pack_refusals();
    gpumem_stream_destroy(stream);
    gpumem_context_release(ctx);
    done_testing();
    return exit_status();
}
