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
 * model.
 * This file: main, the helpers, the halo faces, mixed batches, pack and
 * unpack; batch-collisions.c: refusals and colliding destinations;
 * batch-faults.c: every driver call failed in turn, and the copies' lines
 * of GPUMEM_DEBUG=copies. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gpumem.h>

#include "arrays.h"
#include "child.h"
#include "rng.h"
#include "tap.h"
#include "batch-test.h"

gpumem_context *ctx;
gpumem_stream *stream;
const gpumem_dtype *i32;


/* The value the tests put at (i, j) of field `tag`. */
int32_t val(int tag, int64_t i, int64_t j)
{
    return (int32_t)(tag * 1000000 + i * 1000 + j);
}

/* A device field of rows x cols int32, (i, j) = val(tag, i, j). */
gpumem_array *field(int tag, int64_t rows, int64_t cols)
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

gpumem_array *col(gpumem_array *a, int64_t j)
{
    gpumem_array *v = NULL;
    const gpumem_slice s[2] = {GPUMEM_SLICE_ALL, GPUMEM_INDEX(j)};
    MUST(gpumem_array_slice(a, s, 2, &v));
    return v;
}

gpumem_array *row(gpumem_array *a, int64_t i)
{
    gpumem_array *v = NULL;
    const gpumem_slice s[1] = {GPUMEM_INDEX(i)};
    MUST(gpumem_array_slice(a, s, 1, &v));
    return v;
}

gpumem_array *pinned(int64_t n, int32_t fill)
{
    gpumem_array *p = NULL;
    MUST(gpumem_pinned_array(ctx, 1, &n, NULL, i32, 'C', &p));
    int32_t *h = NULL;
    MUST(gpumem_array_host_pointer(p, (void **)&h));
    for (int64_t k = 0; k < n; k++)
        h[k] = fill + (int32_t)k;
    return p;
}

int32_t *host_of(gpumem_array *a)
{
    void *h = NULL;
    MUST(gpumem_array_host_pointer(a, &h));
    return h;
}

/* Reads a whole rows x cols int32 device field. */
int32_t *read_field(gpumem_array *d, int64_t rows, int64_t cols)
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
