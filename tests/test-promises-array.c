/* The promises of gpumem/array.h, gpumem/batch.h and gpumem/dtype.h, checked
 * as an outside user reads them: each documented status for NULL or bad
 * arguments and released handles, what gpumem_last_error() names (the
 * public function and the argument), that a failing call leaves its
 * outputs and destinations alone, and the documented edge cases (size 0,
 * ndim 0, negative steps, GPUMEM_SLICE_ALL, bounds off an axis, colliding
 * destinations of a batch, read-only arrays).  Values are read back and
 * compared. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gpumem.h>

#include "arrays.h"
#include "tap.h"

static gpumem_context *ctx;
static const gpumem_dtype *i32, *f32, *u8;


/* A failing call: its status, and a message that holds each needle. */
static void fails(gpumem_status got, gpumem_status want, const char *name, const char *n1, const char *n2)
{
    const char *msg = gpumem_last_error();
    int r = ok(got == want, "%s: %s", name, gpumem_status_string(want));
    if (!r)
        diag("  got %s: %s", gpumem_status_string(got), msg);
    if (n1 != NULL)
        like(msg, n1, name);
    if (n2 != NULL)
        like(msg, n2, name);
}

/* A sentinel handle pointer an output must keep. */
#define SENTINEL ((gpumem_array *)(uintptr_t)0x5a5a5a5a)

/* n int32 of a device or host array of n elements, C order. */
static void read_i32(gpumem_array *a, int32_t *out, int64_t n)
{
    int ndim;
    int64_t shape[GPUMEM_MAX_NDIM];
    MUST(gpumem_array_ndim(a, &ndim));
    MUST(gpumem_array_shape(a, shape));
    gpumem_array *h = NULL;
    memset(out, 0, (size_t)n * sizeof *out);
    MUST(gpumem_host_array_wrap(out, ndim, shape, NULL, i32, &h));
    MUST(gpumem_array_copy(h, a, NULL));
    gpumem_array_release(h);
}

/* ---- making arrays ------------------------------------------------------------------------------- */

static void test_making(void)
{
    const int64_t shape[2] = {2, 3};
    gpumem_array *a = SENTINEL;
    /* the message names the public function, whichever made the array */
    fails(gpumem_device_array(ctx, 2, shape, NULL, i32, 'C', NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT,
          "gpumem_device_array: NULL array", "gpumem_device_array:", "'array'");
    fails(gpumem_device_record(ctx, i32, NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT,
          "gpumem_device_record: NULL array", "gpumem_device_record:", "'array'");
    a = SENTINEL;
    fails(gpumem_device_record(ctx, f32, NULL, &a), GPUMEM_ERROR_INVALID_DTYPE,
          "gpumem_device_record: a dtype that is not a record", "gpumem_device_record", "'dtype'");
    ok(a == SENTINEL, "... made no array");
    gpumem_field xf = {"x", f32, -1, 0, NULL};
    gpumem_dtype *rec = NULL;
    MUST(gpumem_dtype_record_create(&xf, 1, GPUMEM_RECORD_PACKED, 0, &rec));
    MUST(gpumem_device_record(ctx, rec, NULL, &a));
    int rnd = -1;
    MUST(gpumem_array_ndim(a, &rnd));
    is_int(rnd, 0, "gpumem_device_record of a record: a 0-d array");
    gpumem_array_release(a);
    gpumem_dtype_release(rec);
    a = SENTINEL;
    gpumem_array *like = device_iota(ctx, 2, shape, 0);
    fails(gpumem_device_array_like(ctx, like, NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT,
          "gpumem_device_array_like: NULL array", "gpumem_device_array_like:", "'array'");

    fails(gpumem_host_array_wrap(NULL, 33, shape, NULL, i32, &a), GPUMEM_ERROR_TOO_MANY_DIMENSIONS,
          "gpumem_host_array_wrap: ndim 33", "gpumem_host_array_wrap", "33");
    fails(gpumem_host_array_wrap(NULL, 2, (int64_t[]){2, -1}, NULL, i32, &a), GPUMEM_ERROR_NEGATIVE_DIMENSION,
          "gpumem_host_array_wrap: a negative extent", "gpumem_host_array_wrap", "shape[1]");
    fails(gpumem_host_array(2, shape, i32, 'X', &a), GPUMEM_ERROR_INVALID_ORDER, "gpumem_host_array: order 'X'",
          "gpumem_host_array", "order");
    fails(gpumem_device_array(ctx, 2, shape, NULL, i32, 'Z', NULL, &a), GPUMEM_ERROR_INVALID_ORDER,
          "gpumem_device_array: order 'Z'", "gpumem_device_array", "order");
    ok(a == SENTINEL, "failing makers leave 'array' alone");

    /* strides choose the axis order only: the result is contiguous */
    gpumem_array *f = NULL;
    MUST(gpumem_device_array(ctx, 2, shape, (int64_t[]){4, 16}, i32, 'C', NULL, &f));
    int64_t st[2] = {0, 0};
    MUST(gpumem_array_strides(f, st));
    ok(st[0] == 4 && st[1] == 8, "gpumem_device_array: gapped F-order strides give contiguous F strides (%lld, %lld)",
       (long long)st[0], (long long)st[1]);
    gpumem_array_release(f);

    /* device_array_like keeps a transposed source's axis order */
    gpumem_array *t = NULL, *lt = NULL;
    MUST(gpumem_array_transpose(like, NULL, &t));
    MUST(gpumem_device_array_like(ctx, t, NULL, &lt));
    MUST(gpumem_array_strides(lt, st));
    ok(st[0] == 4 && st[1] == 12, "gpumem_device_array_like: a transpose keeps its stride order");
    gpumem_array_release(lt);
    gpumem_array_release(t);

    /* ndim 0 with a NULL shape */
    gpumem_array *z = NULL;
    int32_t one = 42, back = 0;
    MUST(gpumem_host_array_wrap(&one, 0, NULL, NULL, i32, &z));
    int64_t size = -1;
    MUST(gpumem_array_size(z, &size));
    is_int(size, 1, "a 0-d array has one element");
    MUST(gpumem_array_get_item(z, NULL, &back, NULL));
    is_int(back, 42, "get_item of a 0-d array with a NULL index");
    gpumem_array_release(z);

    /* to_device's flags */
    int32_t *hv;
    gpumem_array *h = host_iota(2, shape, 0, &hv);
    a = SENTINEL;
    fails(gpumem_to_device(ctx, h, NULL, 0x80, &a), GPUMEM_ERROR_INVALID_VALUE, "gpumem_to_device: unknown flags",
          "gpumem_to_device", "flags");
    MUST(gpumem_array_set_readonly(h, 1));
    fails(gpumem_to_device(ctx, h, NULL, GPUMEM_TO_DEVICE_WRITEBACK, &a), GPUMEM_ERROR_INVALID_VALUE,
          "gpumem_to_device: a write-back into a read-only host array", "gpumem_to_device", "read-only");
    ok(a == SENTINEL, "failing to_device leaves 'array' alone");
    gpumem_array_release(h);
    free(hv);
    /* to_device of a device array: a new array holding a copy */
    gpumem_array *copy = NULL;
    int32_t lv[6];
    MUST(gpumem_to_device(ctx, like, NULL, 0, &copy));
    read_i32(copy, lv, 6);
    ok(copy != like && lv[0] == 0 && lv[5] == 5, "gpumem_to_device of a device array gives a new copy");
    gpumem_array_release(copy);
    gpumem_array_release(like);
}

/* ---- lifetime ------------------------------------------------------------------------------------ */

static void test_lifetime(void)
{
    gpumem_array *a = device_iota(ctx, 1, (int64_t[]){4}, 0);
    MUST(gpumem_array_release(a));
    int nd = -7;
    fails(gpumem_array_release(a), GPUMEM_ERROR_INVALID_STATE, "gpumem_array_release twice", "gpumem_array_release",
          NULL);
    fails(gpumem_array_retain(a), GPUMEM_ERROR_INVALID_STATE, "gpumem_array_retain after the last release",
          "gpumem_array_retain", NULL);
    fails(gpumem_array_ndim(a, &nd), GPUMEM_ERROR_INVALID_STATE, "gpumem_array_ndim of a released array",
          "gpumem_array_ndim", "'array'");
    is_int(nd, -7, "... and writes nothing");
    ok(gpumem_array_release(NULL) == GPUMEM_OK, "gpumem_array_release(NULL) is a no-op");
    gpumem_array *live = device_iota(ctx, 1, (int64_t[]){4}, 7), *out = SENTINEL;
    int32_t vals[4];
    fails(gpumem_array_copy(live, a, NULL), GPUMEM_ERROR_INVALID_STATE, "gpumem_array_copy from a released array",
          "gpumem_array_copy", "'src'");
    read_i32(live, vals, 4);
    ok(vals[0] == 7 && vals[3] == 10, "... the destination is unchanged");
    fails(gpumem_array_slice(a, NULL, 0, &out), GPUMEM_ERROR_INVALID_STATE, "gpumem_array_slice of a released array",
          "gpumem_array_slice", "'array'");
    fails(gpumem_device_array_like(ctx, a, NULL, &out), GPUMEM_ERROR_INVALID_STATE,
          "gpumem_device_array_like of a released array", "gpumem_device_array_like", "'like'");
    ok(out == SENTINEL, "... no array came out");
    gpumem_array_release(live);

    fails(gpumem_array_release_n(2, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "gpumem_array_release_n: NULL arrays",
          "gpumem_array_release_n", "'arrays'");
    ok(gpumem_array_release_n(0, NULL) == GPUMEM_OK, "gpumem_array_release_n(0, NULL)");
    gpumem_array *b = device_iota(ctx, 1, (int64_t[]){4}, 0), *c = device_iota(ctx, 1, (int64_t[]){4}, 0);
    gpumem_array *list[4] = {b, NULL, a, c};
    fails(gpumem_array_release_n(4, list), GPUMEM_ERROR_INVALID_STATE, "gpumem_array_release_n: a released entry",
          "gpumem_array_release_n: arrays[2]:", NULL);
    fails(gpumem_array_retain(c), GPUMEM_ERROR_INVALID_STATE, "... entries after the failure are released too",
          NULL, NULL);
}

/* ---- copies ------------------------------------------------------------------------------------ */

static void test_copies(void)
{
    const int64_t shape[2] = {2, 3};
    gpumem_array *d = device_iota(ctx, 2, shape, 100), *e = device_iota(ctx, 2, shape, 0);
    int32_t *hv;
    gpumem_array *h = host_iota(2, shape, 0, &hv);
    int32_t out[6];

    gpumem_array *w = device_iota(ctx, 1, (int64_t[]){6}, 0);
    fails(gpumem_array_copy(w, d, NULL), GPUMEM_ERROR_SHAPE_MISMATCH, "gpumem_array_copy: shapes",
          "gpumem_array_copy", "(2, 3)");
    read_i32(w, out, 6);
    ok(out[0] == 0 && out[5] == 5, "... the destination is unchanged");
    gpumem_array *v = NULL;
    MUST(gpumem_array_view(e, u8, &v));
    gpumem_array *v2 = NULL;
    MUST(gpumem_array_view(e, f32, &v2));
    fails(gpumem_array_copy(v2, d, NULL), GPUMEM_ERROR_DTYPE_MISMATCH, "gpumem_array_copy: dtypes",
          "gpumem_array_copy", "dtype");
    gpumem_array_release(v2);
    gpumem_array_release(v);

    MUST(gpumem_array_set_readonly(e, 1));
    fails(gpumem_array_copy(e, d, NULL), GPUMEM_ERROR_INVALID_VALUE, "gpumem_array_copy: a read-only dst",
          "gpumem_array_copy", "'dst'");
    read_i32(e, out, 6);
    ok(out[0] == 0 && out[5] == 5, "... the destination is unchanged");
    MUST(gpumem_array_set_readonly(e, 0));

    fails(gpumem_copy_to_host(h, d, NULL), GPUMEM_ERROR_INVALID_VALUE, "gpumem_copy_to_host: swapped",
          "gpumem_copy_to_host", "arguments swapped?");
    fails(gpumem_copy_to_device(h, d, NULL), GPUMEM_ERROR_INVALID_VALUE, "gpumem_copy_to_device: swapped",
          "gpumem_copy_to_device", "arguments swapped?");
    fails(gpumem_array_copy(NULL, d, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "gpumem_array_copy: NULL dst",
          "gpumem_array_copy", "'dst'");

    /* overlapping host views: a[1:] = a[:-1] */
    int32_t buf[6] = {0, 1, 2, 3, 4, 5};
    gpumem_array *hb = NULL, *lo = NULL, *hi = NULL;
    MUST(gpumem_host_array_wrap(buf, 1, (int64_t[]){6}, NULL, i32, &hb));
    MUST(gpumem_array_slice(hb, (gpumem_slice[]){{1, GPUMEM_SLICE_DEFAULT, 1}}, 1, &hi));
    MUST(gpumem_array_slice(hb, (gpumem_slice[]){{0, -1, 1}}, 1, &lo));
    MUST(gpumem_array_copy(hi, lo, NULL));
    ok(buf[0] == 0 && buf[1] == 0 && buf[2] == 1 && buf[5] == 4, "overlapping host views copy as through a temporary");
    GPUMEM_ARRAY_RELEASE_ALL(lo, hi, hb);

    /* overlapping device views, reversed: a[::-1] = a, then a[1:] = a[:-1] */
    gpumem_array *dv = device_iota(ctx, 1, (int64_t[]){6}, 0), *rv = NULL, *dlo = NULL, *dhi = NULL;
    MUST(gpumem_array_slice(dv, (gpumem_slice[]){{GPUMEM_SLICE_DEFAULT, GPUMEM_SLICE_DEFAULT, -1}}, 1, &rv));
    MUST(gpumem_array_copy(rv, dv, NULL));
    read_i32(dv, out, 6);
    ok(out[0] == 5 && out[1] == 4 && out[5] == 0, "a[::-1] = a on the device reverses it");
    MUST(gpumem_array_slice(dv, (gpumem_slice[]){{1, GPUMEM_SLICE_DEFAULT, 1}}, 1, &dhi));
    MUST(gpumem_array_slice(dv, (gpumem_slice[]){{0, -1, 1}}, 1, &dlo));
    MUST(gpumem_array_copy(dhi, dlo, NULL));
    read_i32(dv, out, 6);
    ok(out[0] == 5 && out[1] == 5 && out[2] == 4 && out[5] == 1, "a[1:] = a[:-1] on the device");
    GPUMEM_ARRAY_RELEASE_ALL(dlo, dhi, rv, dv);

    /* negative strides: d[::-1, ::-1] into a host array */
    gpumem_array *r = NULL;
    MUST(gpumem_array_slice(d, (gpumem_slice[]){{GPUMEM_SLICE_DEFAULT, GPUMEM_SLICE_DEFAULT, -1},
                                                 {GPUMEM_SLICE_DEFAULT, GPUMEM_SLICE_DEFAULT, -1}},
                             2, &r));
    read_i32(r, out, 6);
    ok(out[0] == 105 && out[5] == 100 && out[2] == 103, "a reversed device view reads back reversed");
    gpumem_array_release(r);

    /* empty copy */
    gpumem_array *e0 = NULL, *e1 = NULL;
    MUST(gpumem_device_array(ctx, 2, (int64_t[]){0, 3}, NULL, i32, 'C', NULL, &e0));
    MUST(gpumem_host_array(2, (int64_t[]){0, 3}, i32, 'C', &e1));
    ok(gpumem_array_copy(e1, e0, NULL) == GPUMEM_OK, "an empty copy");
    gpumem_copy_path path = (gpumem_copy_path)-1;
    gpumem_debug_last_copy_path(&path);
    is_int(path, GPUMEM_COPY_PATH_NONE, "... reports GPUMEM_COPY_PATH_NONE");
    GPUMEM_ARRAY_RELEASE_ALL(e0, e1);

    GPUMEM_ARRAY_RELEASE_ALL(w, h, e, d);
    free(hv);
}

/* ---- fill, get_item, set_item ------------------------------------------------------------------ */

static void test_items(void)
{
    const int64_t shape[2] = {2, 3};
    gpumem_array *d = device_iota(ctx, 2, shape, 0);
    int32_t out[6], v = -1, seven = 7;
    fails(gpumem_array_get_item(d, (int64_t[]){0, 3}, &v, NULL), GPUMEM_ERROR_INDEX_OUT_OF_RANGE,
          "gpumem_array_get_item: an index off its axis", "gpumem_array_get_item", "axis 1");
    like(gpumem_last_error(), "index[1]", "... the message names the argument");
    is_int(v, -1, "... writes nothing");
    MUST(gpumem_array_get_item(d, (int64_t[]){-1, -1}, &v, NULL));
    is_int(v, 5, "get_item: negative indices count from the end");
    fails(gpumem_array_get_item_n(d, 1, (int64_t[]){0}, &v, NULL), GPUMEM_ERROR_INVALID_VALUE,
          "gpumem_array_get_item_n: nindex 1 of a 2-D array", "nindex 1", "2 dimensions");
    fails(gpumem_array_set_item_n(d, 3, (int64_t[]){0, 0, 0}, &seven, NULL), GPUMEM_ERROR_INVALID_VALUE,
          "gpumem_array_set_item_n: nindex 3 of a 2-D array", "gpumem_array_set_item_n", "nindex 3");
    fails(gpumem_array_set_item(d, NULL, &seven, NULL), GPUMEM_ERROR_NULL_ARGUMENT,
          "gpumem_array_set_item: NULL index", "gpumem_array_set_item", "'index'");
    fails(gpumem_array_get_item(d, (int64_t[]){0, 0}, NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT,
          "gpumem_array_get_item: NULL value", "gpumem_array_get_item", "'value'");
    MUST(gpumem_array_set_readonly(d, 1));
    fails(gpumem_array_set_item(d, (int64_t[]){0, 0}, &seven, NULL), GPUMEM_ERROR_INVALID_VALUE,
          "gpumem_array_set_item: read-only", "gpumem_array_set_item", "read-only");
    fails(gpumem_array_fill(d, &seven, NULL), GPUMEM_ERROR_INVALID_VALUE, "gpumem_array_fill: read-only",
          "gpumem_array_fill", "read-only");
    read_i32(d, out, 6);
    ok(out[0] == 0 && out[1] == 1 && out[5] == 5, "... the read-only array is unchanged");
    MUST(gpumem_array_set_readonly(d, 0));

    /* fill a strided view: the gaps keep their values */
    gpumem_array *c = NULL;
    MUST(gpumem_array_slice(d, (gpumem_slice[]){GPUMEM_SLICE_ALL, {0, GPUMEM_SLICE_DEFAULT, 2}}, 2, &c));
    MUST(gpumem_array_fill(c, &seven, NULL));
    read_i32(d, out, 6);
    ok(out[0] == 7 && out[1] == 1 && out[2] == 7 && out[3] == 7 && out[4] == 4 && out[5] == 7,
       "fill of d[:, ::2] writes only its elements");
    gpumem_array_release(c);

    /* fill of raw 3-byte elements on the device */
    gpumem_dtype *v3 = NULL;
    MUST(gpumem_dtype_from_typestr("|V3", &v3));
    gpumem_array *r = NULL;
    MUST(gpumem_device_array(ctx, 1, (int64_t[]){5}, NULL, v3, 'C', NULL, &r));
    const unsigned char pat[3] = {1, 2, 3};
    MUST(gpumem_array_fill(r, pat, NULL));
    unsigned char rb[15];
    gpumem_array *rh = NULL;
    MUST(gpumem_host_array_wrap(rb, 1, (int64_t[]){5}, NULL, v3, &rh));
    MUST(gpumem_array_copy(rh, r, NULL));
    int good = 1;
    for (int i = 0; i < 15; i++)
        good &= rb[i] == pat[i % 3];
    ok(good, "fill of |V3 elements");
    GPUMEM_ARRAY_RELEASE_ALL(rh, r);
    gpumem_dtype_release(v3);

    /* an empty array fills with nothing */
    gpumem_array *e = NULL;
    MUST(gpumem_device_array(ctx, 1, (int64_t[]){0}, NULL, i32, 'C', NULL, &e));
    ok(gpumem_array_fill(e, &seven, NULL) == GPUMEM_OK, "fill of an empty array");
    gpumem_array_release(e);
    gpumem_array_release(d);
}

/* ---- slices ------------------------------------------------------------------------------------ */

/* The 1-D slice s of iota(n) on the device, read back; its length, or -1 with the status in *st. */
static int64_t slice1(int64_t n, gpumem_slice s, int32_t *out, gpumem_status *st)
{
    gpumem_array *d = device_iota(ctx, 1, &n, 0), *v = NULL;
    *st = gpumem_array_slice(d, &s, 1, &v);
    int64_t len = -1;
    if (*st == GPUMEM_OK) {
        MUST(gpumem_array_size(v, &len));
        if (len > 0)
            read_i32(v, out, len);
        gpumem_array_release(v);
    }
    gpumem_array_release(d);
    return len;
}

static void test_slices(void)
{
    int32_t out[16];
    gpumem_status st;
    const int64_t D = GPUMEM_SLICE_DEFAULT;
    int64_t len = slice1(8, (gpumem_slice){.start = 1, .stop = 7}, out, &st);
    ok(len == 6 && out[0] == 1 && out[5] == 6, "{1, 7} is 1:7 (a step of 0 reads as 1)");
    len = slice1(6, (gpumem_slice){0, 6, 2}, out, &st);
    ok(len == 3 && out[0] == 0 && out[1] == 2 && out[2] == 4, "{0, 6, 2} is 0:6:2");
    len = slice1(5, (gpumem_slice){D, D, -1}, out, &st);
    ok(len == 5 && out[0] == 4 && out[4] == 0, "{DEFAULT, DEFAULT, -1} is ::-1");
    len = slice1(5, (gpumem_slice)GPUMEM_SLICE_ALL, out, &st);
    ok(len == 5 && out[0] == 0 && out[4] == 4, "GPUMEM_SLICE_ALL is :");
    len = slice1(5, (gpumem_slice){D, D, D}, out, &st);
    ok(len == 5 && out[4] == 4, "a step of GPUMEM_SLICE_DEFAULT is 1");
    len = slice1(5, (gpumem_slice){5, D, 1}, out, &st);
    ok(st == GPUMEM_OK && len == 0, "n: is empty");
    len = slice1(5, (gpumem_slice){D, 5, 1}, out, &st);
    ok(len == 5, ":n is the whole axis");
    len = slice1(5, (gpumem_slice){3, 1, 1}, out, &st);
    ok(st == GPUMEM_OK && len == 0, "3:1 is empty");
    len = slice1(6, (gpumem_slice){-2, D, 1}, out, &st);
    ok(len == 2 && out[0] == 4, "-2: counts from the end");
    len = slice1(6, (gpumem_slice){-1, 0, -2}, out, &st);
    ok(len == 3 && out[0] == 5 && out[1] == 3 && out[2] == 1, "-1:0:-2");
    len = slice1(6, (gpumem_slice){D, D, INT64_MIN + 1}, out, &st);
    ok(len == 1 && out[0] == 5, "a step of INT64_MIN + 1 selects the last element alone");
    len = slice1(0, (gpumem_slice){0, D, -1}, out, &st);
    ok(st == GPUMEM_OK && len == 0, "step < 0 on an empty axis allows start 0");

    slice1(6, (gpumem_slice){0, 7, 1}, out, &st);
    fails(st, GPUMEM_ERROR_INDEX_OUT_OF_RANGE, "gpumem_array_slice: stop 7 of extent 6", "gpumem_array_slice",
          "stop 7");
    like(gpumem_last_error(), "slices[0]", "... the message names the argument");
    slice1(6, (gpumem_slice){-7, D, 1}, out, &st);
    fails(st, GPUMEM_ERROR_INDEX_OUT_OF_RANGE, "gpumem_array_slice: start -7 of extent 6", "axis 0", "start -7");
    slice1(6, (gpumem_slice){6, D, -1}, out, &st);
    fails(st, GPUMEM_ERROR_INDEX_OUT_OF_RANGE, "gpumem_array_slice: start 6 with step -1", "axis 0", "start 6");
    slice1(6, (gpumem_slice){0, 6, -1}, out, &st);
    fails(st, GPUMEM_ERROR_INDEX_OUT_OF_RANGE, "gpumem_array_slice: stop 6 with step -1", "axis 0", "stop 6");
    slice1(6, (gpumem_slice){2, GPUMEM_SLICE_INDEX, 2}, out, &st);
    fails(st, GPUMEM_ERROR_INVALID_VALUE, "gpumem_array_slice: an index with step 2", "gpumem_array_slice", NULL);
    slice1(6, (gpumem_slice){D, GPUMEM_SLICE_INDEX, 1}, out, &st);
    fails(st, GPUMEM_ERROR_INVALID_VALUE, "gpumem_array_slice: an index without a position", "gpumem_array_slice",
          NULL);
    slice1(6, (gpumem_slice)GPUMEM_INDEX(6), out, &st);
    fails(st, GPUMEM_ERROR_INDEX_OUT_OF_RANGE, "gpumem_array_slice: index 6 of extent 6", "axis 0", "index 6");

    /* indices drop axes; every axis indexed is a 0-d view */
    const int64_t shape[2] = {3, 4};
    gpumem_array *d = device_iota(ctx, 2, shape, 0), *v = SENTINEL;
    const gpumem_slice row[2] = {GPUMEM_INDEX(1), {.start = 1, .stop = -1}};
    MUST(gpumem_array_slice(d, row, 2, &v));
    int nd = -1;
    int64_t n = 0;
    MUST(gpumem_array_ndim(v, &nd));
    MUST(gpumem_array_size(v, &n));
    read_i32(v, out, 2);
    ok(nd == 1 && n == 2 && out[0] == 5 && out[1] == 6, "d[1, 1:-1] is 1-D: 5 6");
    gpumem_array_release(v);
    MUST(gpumem_array_slice(d, (gpumem_slice[]){GPUMEM_INDEX(-1), GPUMEM_INDEX(-2)}, 2, &v));
    int32_t x = -1;
    MUST(gpumem_array_ndim(v, &nd));
    MUST(gpumem_array_get_item(v, NULL, &x, NULL));
    ok(nd == 0 && x == 10, "d[-1, -2] is a 0-d view of 10");
    gpumem_array_release(v);

    v = SENTINEL;
    fails(gpumem_array_slice(d, row, 3, &v), GPUMEM_ERROR_INVALID_VALUE, "gpumem_array_slice: nslices 3 of 2-D",
          "gpumem_array_slice", "nslices");
    fails(gpumem_array_slice(d, row, -1, &v), GPUMEM_ERROR_INVALID_VALUE, "gpumem_array_slice: nslices -1",
          "gpumem_array_slice", "nslices");
    fails(gpumem_array_slice(d, (gpumem_slice[]){GPUMEM_SLICE_ALL, {.start = 0, .stop = 5}}, 2, &v),
          GPUMEM_ERROR_INDEX_OUT_OF_RANGE, "gpumem_array_slice: a bound off axis 1", "axis 1", "stop 5");
    like(gpumem_last_error(), "slices[1]", "... the message names the argument");
    ok(v == SENTINEL, "failing slices leave 'view' alone");
    MUST(gpumem_array_slice(d, NULL, 0, &v));
    MUST(gpumem_array_size(v, &n));
    is_int(n, 12, "nslices 0 with NULL slices: the whole array");
    gpumem_array_release(v);

    /* views of a read-only array are read-only, and stay so */
    MUST(gpumem_array_set_readonly(d, 1));
    MUST(gpumem_array_slice(d, row, 2, &v));
    int ro = 0;
    MUST(gpumem_array_is_readonly(v, &ro));
    is_int(ro, 1, "a view of a read-only array is read-only");
    fails(gpumem_array_set_readonly(v, 0), GPUMEM_ERROR_INVALID_VALUE, "gpumem_array_set_readonly(0) of such a view",
          "gpumem_array_set_readonly", NULL);
    gpumem_array_release(v);
    /* a view of a view: the base decides */
    MUST(gpumem_array_set_readonly(d, 0));
    gpumem_array *v1 = NULL, *v2 = NULL;
    MUST(gpumem_array_slice(d, row, 2, &v1));
    MUST(gpumem_array_set_readonly(v1, 1));
    MUST(gpumem_array_slice(v1, NULL, 0, &v2));
    MUST(gpumem_array_is_readonly(v2, &ro));
    is_int(ro, 1, "a view of a read-only view is read-only");
    ok(gpumem_array_set_readonly(v2, 0) == GPUMEM_OK, "... and may be made writable while the base is writable");
    GPUMEM_ARRAY_RELEASE_ALL(v2, v1);
    gpumem_array_release(d);
}

/* ---- transpose, view, reshape, ravel, split ------------------------------------------------------- */

static void test_views(void)
{
    const int64_t shape[2] = {2, 3};
    gpumem_array *d = device_iota(ctx, 2, shape, 0), *v = SENTINEL;
    int32_t out[6];
    int64_t s[4];

    fails(gpumem_array_transpose(d, (int[]){0, 0}, &v), GPUMEM_ERROR_INVALID_VALUE,
          "gpumem_array_transpose: not a permutation", "gpumem_array_transpose", "axes[1]");
    fails(gpumem_array_transpose(d, (int[]){0, 2}, &v), GPUMEM_ERROR_INVALID_VALUE,
          "gpumem_array_transpose: axis 2 of 2-D", "gpumem_array_transpose", "axes[1]");
    ok(v == SENTINEL, "failing transposes leave 'view' alone");
    MUST(gpumem_array_transpose(d, NULL, &v));
    read_i32(v, out, 6);
    ok(out[0] == 0 && out[1] == 3 && out[2] == 1, "NULL axes reverse them (.T)");
    gpumem_array_release(v);

    v = SENTINEL;
    gpumem_dtype *v3 = NULL;
    MUST(gpumem_dtype_from_typestr("|V5", &v3));
    fails(gpumem_array_view(d, v3, &v), GPUMEM_ERROR_INVALID_VALUE, "gpumem_array_view: 12 bytes by 5",
          "gpumem_array_view", NULL);
    gpumem_dtype_release(v3);
    ok(v == SENTINEL, "a failing view leaves 'view' alone");
    MUST(gpumem_array_view(d, u8, &v));
    MUST(gpumem_array_shape(v, s));
    ok(s[0] == 2 && s[1] == 12, "int32 (2, 3) seen as uint8 is (2, 12)");
    gpumem_array_release(v);
    gpumem_array *col = NULL, *z0 = NULL;
    v = SENTINEL;
    MUST(gpumem_array_slice(d, (gpumem_slice[]){GPUMEM_SLICE_ALL, {0, 3, 2}}, 2, &col));
    fails(gpumem_array_view(col, u8, &v), GPUMEM_ERROR_INVALID_VALUE, "gpumem_array_view: a strided last axis",
          "gpumem_array_view", "contiguous");
    MUST(gpumem_array_slice(d, (gpumem_slice[]){GPUMEM_INDEX(0), GPUMEM_INDEX(0)}, 2, &z0));
    fails(gpumem_array_view(z0, u8, &v), GPUMEM_ERROR_INVALID_VALUE, "gpumem_array_view: a 0-d array of 4 bytes as 1",
          "gpumem_array_view", "0-d");
    ok(v == SENTINEL, "... no view came out");
    MUST(gpumem_array_view(z0, f32, &v));
    gpumem_array_release(v);
    GPUMEM_ARRAY_RELEASE_ALL(z0, col);

    /* reshape */
    v = SENTINEL;
    fails(gpumem_array_reshape(d, 2, (int64_t[]){-1, -1}, 'C', 0, NULL, &v), GPUMEM_ERROR_INVALID_RESHAPE,
          "gpumem_array_reshape: two -1", "gpumem_array_reshape", NULL);
    fails(gpumem_array_reshape(d, 2, (int64_t[]){4, 2}, 'C', 0, NULL, &v), GPUMEM_ERROR_INVALID_RESHAPE,
          "gpumem_array_reshape: size 6 into (4, 2)", "gpumem_array_reshape", "(4, 2)");
    fails(gpumem_array_reshape(d, 1, (int64_t[]){6}, 'X', 0, NULL, &v), GPUMEM_ERROR_INVALID_ORDER,
          "gpumem_array_reshape: order 'X'", "gpumem_array_reshape", "order");
    fails(gpumem_array_reshape(d, 1, (int64_t[]){6}, 'C', 4, NULL, &v), GPUMEM_ERROR_INVALID_VALUE,
          "gpumem_array_reshape: unknown flags", "gpumem_array_reshape", "flags");
    fails(gpumem_array_reshape(d, 33, (int64_t[33]){0}, 'C', 0, NULL, &v), GPUMEM_ERROR_TOO_MANY_DIMENSIONS,
          "gpumem_array_reshape: 33 dimensions", "gpumem_array_reshape", "33");
    fails(gpumem_array_reshape(d, 2, (int64_t[]){-2, -3}, 'C', 0, NULL, &v), GPUMEM_ERROR_INVALID_RESHAPE,
          "gpumem_array_reshape: a negative extent names the argument", "gpumem_array_reshape: shape[0] = -2", NULL);
    fails(gpumem_array_reshape(d, 2, NULL, 'C', 0, NULL, &v), GPUMEM_ERROR_NULL_ARGUMENT,
          "gpumem_array_reshape: NULL shape", "gpumem_array_reshape", "'shape'");
    MUST(gpumem_array_transpose(d, (int[]){-1, -2}, &v));
    MUST(gpumem_array_shape(v, s));
    ok(s[0] == 3 && s[1] == 2, "transpose: negative axes count from the end");
    gpumem_array_release(v);
    v = SENTINEL;
    gpumem_array *t = NULL;
    MUST(gpumem_array_transpose(d, NULL, &t));
    fails(gpumem_array_reshape(t, 1, (int64_t[]){-1}, 'C', GPUMEM_NO_COPY, NULL, &v), GPUMEM_ERROR_COPY_REQUIRED,
          "gpumem_array_reshape: NO_COPY of a transpose", "gpumem_array_reshape", NULL);
    ok(v == SENTINEL, "failing reshapes leave 'result' alone");
    MUST(gpumem_array_reshape(t, 1, (int64_t[]){-1}, 'C', 0, NULL, &v));
    read_i32(v, out, 6);
    ok(out[0] == 0 && out[1] == 3 && out[2] == 1 && out[5] == 5, "reshape of a transpose copies in C order");
    gpumem_array_release(v);

    /* ravel names itself */
    v = SENTINEL;
    fails(gpumem_array_ravel(d, 'Q', 0, NULL, &v), GPUMEM_ERROR_INVALID_ORDER, "gpumem_array_ravel: order 'Q'",
          "gpumem_array_ravel", NULL);
    fails(gpumem_array_ravel(t, 'C', GPUMEM_NO_COPY, NULL, &v), GPUMEM_ERROR_COPY_REQUIRED,
          "gpumem_array_ravel: NO_COPY of a transpose", "gpumem_array_ravel", NULL);
    fails(gpumem_array_ravel(d, 'C', 0, NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "gpumem_array_ravel: NULL result",
          "gpumem_array_ravel", "'result'");
    ok(v == SENTINEL, "failing ravels leave 'result' alone");
    MUST(gpumem_array_ravel(t, 'F', GPUMEM_NO_COPY, NULL, &v));
    read_i32(v, out, 6);
    ok(out[0] == 0 && out[1] == 1 && out[5] == 5, "ravel 'F' of a transpose is a view");
    gpumem_array_release(v);
    gpumem_array_release(t);

    /* split */
    gpumem_array *line = device_iota(ctx, 1, (int64_t[]){10}, 0), *pieces[4] = {SENTINEL, SENTINEL, SENTINEL, SENTINEL};
    size_t count = 99;
    fails(gpumem_array_split(line, 0, pieces, 4, &count), GPUMEM_ERROR_INVALID_SECTION, "gpumem_array_split: section 0",
          "gpumem_array_split", "section");
    is_int(count, 99, "... writes no count");
    fails(gpumem_array_split(d, 2, pieces, 4, &count), GPUMEM_ERROR_INVALID_VALUE, "gpumem_array_split: 2-D",
          "gpumem_array_split", "'array'");
    fails(gpumem_array_split(line, 3, pieces, 3, &count), GPUMEM_ERROR_INVALID_VALUE,
          "gpumem_array_split: capacity 3 for 4 pieces", "gpumem_array_split", "capacity");
    is_int(count, 4, "... *count gets the number of pieces");
    ok(pieces[0] == SENTINEL && pieces[2] == SENTINEL, "... and no views are made");
    count = 99;
    fails(gpumem_array_split(line, 3, NULL, 4, &count), GPUMEM_ERROR_NULL_ARGUMENT, "gpumem_array_split: NULL pieces",
          "gpumem_array_split", "'pieces'");
    is_int(count, 99, "... writes no count (only a small capacity does)");
    MUST(gpumem_array_split(line, 3, pieces, 4, &count));
    int64_t lens[4];
    int32_t first[4];
    for (int i = 0; i < 4; i++) {
        MUST(gpumem_array_size(pieces[i], &lens[i]));
        MUST(gpumem_array_get_item(pieces[i], (int64_t[]){0}, &first[i], NULL));
    }
    ok(count == 4 && lens[0] == 3 && lens[3] == 1 && first[1] == 3 && first[3] == 9, "split(10, 3): 3 3 3 1");
    GPUMEM_ARRAY_RELEASE_ALL(pieces[0], pieces[1], pieces[2], pieces[3]);
    gpumem_array *e = NULL;
    MUST(gpumem_device_array(ctx, 1, (int64_t[]){0}, NULL, i32, 'C', NULL, &e));
    count = 99;
    MUST(gpumem_array_split(e, 3, NULL, 0, &count));
    is_int(count, 0, "split of an empty array: no pieces");
    gpumem_array_release(e);
    gpumem_array_release(line);
    gpumem_array_release(d);
}

/* ---- 0-d arrays ----------------------------------------------------------------------------------- */

static void test_zero_d(void)
{
    gpumem_array *z = NULL, *v = NULL;
    const int32_t seven = 7;
    MUST(gpumem_device_array(ctx, 0, NULL, NULL, i32, 'C', NULL, &z));
    MUST(gpumem_array_fill(z, &seven, NULL));
    int nd = -1;
    int64_t n = -1, s1 = -1;
    int32_t x = 0;
    MUST(gpumem_array_slice(z, NULL, 0, &v));
    MUST(gpumem_array_ndim(v, &nd));
    ok(nd == 0, "slice of a 0-d array with no slices is 0-d");
    gpumem_array_release(v);
    MUST(gpumem_array_transpose(z, NULL, &v));
    MUST(gpumem_array_ndim(v, &nd));
    ok(nd == 0, "transpose of a 0-d array is 0-d");
    gpumem_array_release(v);
    MUST(gpumem_array_ravel(z, 'C', GPUMEM_NO_COPY, NULL, &v));
    MUST(gpumem_array_ndim(v, &nd));
    MUST(gpumem_array_shape(v, &s1));
    MUST(gpumem_array_get_item(v, (int64_t[]){0}, &x, NULL));
    ok(nd == 1 && s1 == 1 && x == 7, "ravel of a 0-d array is a (1,) view of its element");
    gpumem_array *back = NULL;
    MUST(gpumem_array_reshape(v, 0, NULL, 'C', GPUMEM_NO_COPY, NULL, &back));
    MUST(gpumem_array_ndim(back, &nd));
    MUST(gpumem_array_size(back, &n));
    ok(nd == 0 && n == 1, "reshape of (1,) to ndim 0 with a NULL shape");
    GPUMEM_ARRAY_RELEASE_ALL(back, v);
    x = 0;
    MUST(gpumem_array_get_item_n(z, 0, NULL, &x, NULL));
    is_int(x, 7, "get_item_n(0, NULL) of a 0-d array");
    fails(gpumem_array_get_item_n(z, 1, (int64_t[]){0}, &x, NULL), GPUMEM_ERROR_INVALID_VALUE,
          "gpumem_array_get_item_n: one index of a 0-d array", "gpumem_array_get_item_n", "nindex 1");
    gpumem_array_release(z);
}

/* ---- properties ---------------------------------------------------------------------------------- */

static void test_properties(void)
{
    gpumem_array *d = device_iota(ctx, 1, (int64_t[]){4}, 0), *h = NULL, *e = NULL;
    MUST(gpumem_host_array(1, (int64_t[]){4}, i32, 'C', &h));
    uint64_t dp = 77;
    void *hp = (void *)&dp;
    fails(gpumem_array_device_pointer(h, &dp), GPUMEM_ERROR_INVALID_VALUE, "gpumem_array_device_pointer of a host array",
          "gpumem_array_device_pointer", NULL);
    is_int(dp, 77, "... writes nothing");
    fails(gpumem_array_host_pointer(d, &hp), GPUMEM_ERROR_INVALID_VALUE, "gpumem_array_host_pointer of a device array",
          "gpumem_array_host_pointer", NULL);
    ok(hp == (void *)&dp, "... writes nothing");
    is_str(gpumem_memory_kind_name((gpumem_memory_kind)99), "unknown", "gpumem_memory_kind_name(99)");
    is_str(gpumem_memory_kind_name(GPUMEM_MEMORY_MAPPED), "mapped", "gpumem_memory_kind_name(MAPPED)");
    MUST(gpumem_device_array(ctx, 2, (int64_t[]){0, 3}, NULL, i32, 'C', NULL, &e));
    int c = 0, f = 0;
    MUST(gpumem_array_is_c_contiguous(e, &c));
    MUST(gpumem_array_is_f_contiguous(e, &f));
    ok(c == 1 && f == 1, "an empty array is C and F contiguous");
    int64_t nb = -1;
    MUST(gpumem_array_nbytes(e, &nb));
    is_int(nb, 0, "an empty array has 0 bytes");
    gpumem_context *cx = (gpumem_context *)(uintptr_t)1;
    MUST(gpumem_array_context(h, &cx));
    ok(cx == NULL, "a host array has no context");
    fails(gpumem_array_shape(d, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "gpumem_array_shape: NULL shape",
          "gpumem_array_shape", "'shape'");
    int ro = -1;
    MUST(gpumem_array_set_readonly(h, 2));
    MUST(gpumem_array_is_readonly(h, &ro));
    is_int(ro, 1, "set_readonly(2) makes it read-only (any nonzero value)");
    GPUMEM_ARRAY_RELEASE_ALL(e, h, d);
    gpumem_array *gone = device_iota(ctx, 1, (int64_t[]){4}, 0);
    gpumem_array_release(gone);
    fails(gpumem_array_set_readonly(gone, 1), GPUMEM_ERROR_INVALID_STATE, "gpumem_array_set_readonly of a released array",
          "gpumem_array_set_readonly", NULL);
}

/* ---- broadcast destinations (stride 0 on an axis of more than one element) ------------------------------ */

static void test_broadcast(void)
{
    int32_t one = 9, src[4] = {1, 2, 3, 4}, a[4] = {0, 0, 0, 0};
    gpumem_array *bc = NULL, *s = NULL, *ha = NULL, *d = NULL;
    MUST(gpumem_host_array_wrap(&one, 1, (int64_t[]){4}, (int64_t[]){0}, i32, &bc));
    MUST(gpumem_host_array_wrap(src, 1, (int64_t[]){4}, NULL, i32, &s));
    MUST(gpumem_host_array_wrap(a, 1, (int64_t[]){4}, NULL, i32, &ha));
    MUST(gpumem_to_device(ctx, s, NULL, 0, &d));
    /* a broadcast source is fine */
    MUST(gpumem_array_copy(ha, bc, NULL));
    ok(a[0] == 9 && a[3] == 9, "a broadcast source copies");
    memset(a, 0, sizeof a);
    fails(gpumem_array_copy(bc, s, NULL), GPUMEM_ERROR_INVALID_VALUE, "gpumem_array_copy: a broadcast dst",
          "gpumem_array_copy", "'dst'");
    fails(gpumem_array_fill(bc, &src[1], NULL), GPUMEM_ERROR_INVALID_VALUE, "gpumem_array_fill: a broadcast array",
          "gpumem_array_fill", "'array'");
    is_int(one, 9, "... neither wrote it");
    fails(gpumem_array_copy_batch(2, (gpumem_array *[]){ha, bc}, (gpumem_array *[]){d, s}, NULL),
          GPUMEM_ERROR_INVALID_VALUE, "gpumem_array_copy_batch: a broadcast destination in pair 1",
          "gpumem_array_copy_batch: pair 1:", "'dst'");
    ok(a[0] == 0 && a[3] == 0 && one == 9, "... found before pair 0 was copied: nothing written");
    gpumem_array *buf = NULL;
    MUST(gpumem_device_array(ctx, 1, (int64_t[]){8}, NULL, i32, 'C', NULL, &buf));
    MUST(gpumem_array_fill(buf, &src[3], NULL));
    fails(gpumem_array_unpack(2, (gpumem_array *[]){ha, bc}, buf, NULL), GPUMEM_ERROR_INVALID_VALUE,
          "gpumem_array_unpack: a broadcast view", "gpumem_array_unpack", "views[1]");
    ok(a[0] == 0 && a[3] == 0 && one == 9, "... nothing written");
    gpumem_array *out = SENTINEL;
    fails(gpumem_to_device(ctx, bc, NULL, GPUMEM_TO_DEVICE_WRITEBACK, &out), GPUMEM_ERROR_INVALID_VALUE,
          "gpumem_to_device: a write-back into a broadcast host array", "gpumem_to_device", "'host'");
    ok(out == SENTINEL, "... made no array");
    /* an empty broadcast writes nothing and is fine */
    gpumem_array *ebc = NULL, *es = NULL;
    MUST(gpumem_host_array_wrap(&one, 2, (int64_t[]){4, 0}, (int64_t[]){0, 4}, i32, &ebc));
    MUST(gpumem_host_array(2, (int64_t[]){4, 0}, i32, 'C', &es));
    ok(gpumem_array_copy(ebc, es, NULL) == GPUMEM_OK, "an empty array with a stride 0 is written (nothing)");
    GPUMEM_ARRAY_RELEASE_ALL(ebc, es, buf, d, ha, s, bc);
}

/* ---- batches ------------------------------------------------------------------------------------- */

static void test_batch(void)
{
    const int64_t n4 = 4;
    gpumem_array *a = device_iota(ctx, 1, &n4, 0), *b = device_iota(ctx, 1, &n4, 10), *c = device_iota(ctx, 1, &n4, 20);
    gpumem_array *x = device_iota(ctx, 1, &n4, 100), *y = device_iota(ctx, 1, &n4, 200);
    int32_t out[8];
    ok(gpumem_array_copy_batch(0, NULL, NULL, NULL) == GPUMEM_OK, "copy_batch of 0 pairs with NULL lists");

    fails(gpumem_array_copy_batch(2, (gpumem_array *[]){a, NULL}, (gpumem_array *[]){x, y}, NULL),
          GPUMEM_ERROR_NULL_ARGUMENT, "gpumem_array_copy_batch: dst[1] NULL", "gpumem_array_copy_batch", "dst[1]");
    gpumem_array *w = device_iota(ctx, 1, (int64_t[]){5}, 0);
    fails(gpumem_array_copy_batch(2, (gpumem_array *[]){a, w}, (gpumem_array *[]){x, y}, NULL),
          GPUMEM_ERROR_SHAPE_MISMATCH, "gpumem_array_copy_batch: a shape mismatch in pair 1",
          "gpumem_array_copy_batch: pair 1:", NULL);
    read_i32(a, out, 4);
    ok(out[0] == 0 && out[3] == 3, "... pair 0's destination is untouched");
    gpumem_array_release(w);

    gpumem_array *gone = device_iota(ctx, 1, &n4, 0);
    gpumem_array_release(gone);
    fails(gpumem_array_copy_batch(2, (gpumem_array *[]){a, b}, (gpumem_array *[]){x, gone}, NULL),
          GPUMEM_ERROR_INVALID_STATE, "gpumem_array_copy_batch: a released source in pair 1",
          "gpumem_array_copy_batch: pair 1:", "src[1]");
    read_i32(a, out, 4);
    ok(out[0] == 0 && out[3] == 3, "... pair 0's destination is untouched");

    MUST(gpumem_array_set_readonly(b, 1));
    fails(gpumem_array_copy_batch(2, (gpumem_array *[]){a, b}, (gpumem_array *[]){x, y}, NULL),
          GPUMEM_ERROR_INVALID_VALUE, "gpumem_array_copy_batch: a read-only destination in pair 1",
          "gpumem_array_copy_batch: pair 1:", "read-only");
    MUST(gpumem_array_set_readonly(b, 0));

    fails(gpumem_array_copy_batch(2, (gpumem_array *[]){a, a}, (gpumem_array *[]){x, y}, NULL),
          GPUMEM_ERROR_INVALID_VALUE, "gpumem_array_copy_batch: one destination twice", "dst[0]", "dst[1]");
    fails(gpumem_array_copy_batch(2, (gpumem_array *[]){a, b}, (gpumem_array *[]){x, a}, NULL),
          GPUMEM_ERROR_INVALID_VALUE, "gpumem_array_copy_batch: a destination that is another pair's source", "dst[0]",
          "src[1]");
    read_i32(a, out, 4);
    ok(out[0] == 0 && out[3] == 3, "... no destination is written");

    /* a pair may overlap its own source; sources may overlap each other */
    gpumem_array *big = device_iota(ctx, 1, (int64_t[]){8}, 0), *hi = NULL, *lo = NULL;
    MUST(gpumem_array_slice(big, (gpumem_slice[]){{1, GPUMEM_SLICE_DEFAULT, 1}}, 1, &hi));
    MUST(gpumem_array_slice(big, (gpumem_slice[]){{0, -1, 1}}, 1, &lo));
    MUST(gpumem_array_copy_batch(2, (gpumem_array *[]){hi, c}, (gpumem_array *[]){lo, x}, NULL));
    read_i32(big, out, 8);
    int32_t cc[4];
    read_i32(c, cc, 4);
    ok(out[0] == 0 && out[1] == 0 && out[2] == 1 && out[7] == 6 && cc[0] == 100 && cc[3] == 103,
       "a pair that overlaps its own source copies as through a temporary");
    GPUMEM_ARRAY_RELEASE_ALL(lo, hi, big);

    /* with a stream, host-to-host pairs are done by the CPU before the call returns */
    gpumem_stream *st1 = NULL;
    MUST(gpumem_stream_create(ctx, 0, &st1));
    int32_t hs[4] = {1, 2, 3, 4}, hd[4] = {0, 0, 0, 0};
    gpumem_array *hsa = NULL, *hda = NULL;
    MUST(gpumem_host_array_wrap(hs, 1, &n4, NULL, i32, &hsa));
    MUST(gpumem_host_array_wrap(hd, 1, &n4, NULL, i32, &hda));
    MUST(gpumem_array_copy_batch(1, &hda, &hsa, st1));
    ok(hd[0] == 1 && hd[3] == 4, "a host-to-host pair on a stream is copied when the call returns");
    gpumem_copy_path lp = (gpumem_copy_path)-1;
    MUST(gpumem_array_copy_batch(2, (gpumem_array *[]){c, hda}, (gpumem_array *[]){x, hsa}, NULL));
    gpumem_debug_last_copy_path(&lp);
    is_int(lp, GPUMEM_COPY_PATH_HOST, "gpumem_debug_last_copy_path reports the last pair's way (host to host)");
    MUST(gpumem_array_copy_batch(2, (gpumem_array *[]){hda, c}, (gpumem_array *[]){hsa, x}, NULL));
    gpumem_debug_last_copy_path(&lp);
    is_int(lp, GPUMEM_COPY_PATH_CONTIGUOUS, "... (device to device, one run)");
    MUST(gpumem_stream_synchronize(st1));
    GPUMEM_ARRAY_RELEASE_ALL(hda, hsa);
    gpumem_stream_destroy(st1);

    /* two disjoint columns of one array do not collide */
    gpumem_array *m = device_iota(ctx, 2, (int64_t[]){4, 2}, 0), *c0 = NULL, *c1 = NULL;
    MUST(gpumem_array_slice(m, (gpumem_slice[]){GPUMEM_SLICE_ALL, GPUMEM_INDEX(0)}, 2, &c0));
    MUST(gpumem_array_slice(m, (gpumem_slice[]){GPUMEM_SLICE_ALL, GPUMEM_INDEX(1)}, 2, &c1));
    MUST(gpumem_array_copy_batch(2, (gpumem_array *[]){c0, c1}, (gpumem_array *[]){x, y}, NULL));
    read_i32(m, out, 8);
    ok(out[0] == 100 && out[1] == 200 && out[6] == 103 && out[7] == 203, "two columns of one array, one batch");
    GPUMEM_ARRAY_RELEASE_ALL(c1, c0, m);

    /* disjoint views whose strides do not line up: told exactly while small, refused as "may share" when
     * telling takes too long (batch.h) */
    for (int huge_x = 0; huge_x < 2; huge_x++) {
        const int64_t nx = huge_x ? INT64_C(36000000) : 12000;
        unsigned char *xb = calloc((size_t)nx, 1);
        gpumem_array *X = NULL, *s6 = NULL, *s4 = NULL, *t6 = NULL, *t4 = NULL;
        int64_t m6 = 0, m4 = 0;
        MUST(gpumem_host_array_wrap(xb, 1, &nx, NULL, u8, &X));
        MUST(gpumem_array_slice(X, (gpumem_slice[]){{0, GPUMEM_SLICE_DEFAULT, 6}}, 1, &s6));
        MUST(gpumem_array_slice(X, (gpumem_slice[]){{1, GPUMEM_SLICE_DEFAULT, 4}}, 1, &s4));
        MUST(gpumem_array_size(s6, &m6));
        MUST(gpumem_array_size(s4, &m4));
        MUST(gpumem_host_array(1, &m6, u8, 'C', &t6));
        MUST(gpumem_host_array(1, &m4, u8, 'C', &t4));
        gpumem_status st = gpumem_array_copy_batch(2, (gpumem_array *[]){s6, s4}, (gpumem_array *[]){t6, t4}, NULL);
        if (huge_x)
            fails(st, GPUMEM_ERROR_INVALID_VALUE, "x[::6] and x[1::4] of 36 MB: too many elements to tell",
                  "may share memory", "too many elements to tell");
        else
            ok(st == GPUMEM_OK, "x[::6] and x[1::4] of 12 kB as destinations: disjoint, taken");
        GPUMEM_ARRAY_RELEASE_ALL(t4, t6, s4, s6, X);
        free(xb);
    }

    /* pack and unpack */
    gpumem_array *buf = NULL;
    MUST(gpumem_pinned_array(ctx, 1, (int64_t[]){10}, NULL, i32, 'C', &buf));
    const int32_t minus = -1;
    MUST(gpumem_array_fill(buf, &minus, NULL));
    MUST(gpumem_array_pack(2, (gpumem_array *[]){x, y}, buf, NULL));
    int32_t pb[10];
    read_i32(buf, pb, 10);
    ok(pb[0] == 100 && pb[3] == 103 && pb[4] == 200 && pb[7] == 203 && pb[8] == -1 && pb[9] == -1,
       "pack: views one after the other, the bytes beyond not written");
    gpumem_array *small = NULL;
    MUST(gpumem_pinned_array(ctx, 1, (int64_t[]){7}, NULL, i32, 'C', &small));
    fails(gpumem_array_pack(2, (gpumem_array *[]){x, y}, small, NULL), GPUMEM_ERROR_INVALID_VALUE,
          "gpumem_array_pack: a buffer too small", "gpumem_array_pack", "'buffer'");
    fails(gpumem_array_pack(2, (gpumem_array *[]){x, NULL}, buf, NULL), GPUMEM_ERROR_NULL_ARGUMENT,
          "gpumem_array_pack: views[1] NULL", "gpumem_array_pack", "views[1]");
    MUST(gpumem_array_set_readonly(buf, 1));
    fails(gpumem_array_pack(1, (gpumem_array *[]){x}, buf, NULL), GPUMEM_ERROR_INVALID_VALUE,
          "gpumem_array_pack: a read-only buffer", "gpumem_array_pack", "read-only");
    MUST(gpumem_array_set_readonly(buf, 0));
    gpumem_array *strided = NULL;
    MUST(gpumem_array_slice(buf, (gpumem_slice[]){{0, 10, 2}}, 1, &strided));
    fails(gpumem_array_pack(1, (gpumem_array *[]){x}, strided, NULL), GPUMEM_ERROR_INVALID_VALUE,
          "gpumem_array_pack: a strided buffer", "gpumem_array_pack", "C-contiguous");
    MUST(gpumem_array_set_readonly(b, 1));
    fails(gpumem_array_unpack(2, (gpumem_array *[]){a, b}, buf, NULL), GPUMEM_ERROR_INVALID_VALUE,
          "gpumem_array_unpack: a read-only view", "gpumem_array_unpack", "views[1]");
    MUST(gpumem_array_set_readonly(b, 0));
    fails(gpumem_array_unpack(2, (gpumem_array *[]){a, a}, buf, NULL), GPUMEM_ERROR_INVALID_VALUE,
          "gpumem_array_unpack: two views sharing memory", "views[0]", "views[1]");
    read_i32(a, out, 4);
    ok(out[0] == 0 && out[3] == 3, "... no view is written");
    MUST(gpumem_array_unpack(2, (gpumem_array *[]){b, a}, buf, NULL));
    int32_t ob[4];
    read_i32(a, out, 4);
    read_i32(b, ob, 4);
    ok(ob[0] == 100 && ob[3] == 103 && out[0] == 200 && out[3] == 203, "unpack: the views in buffer order");
    MUST(gpumem_array_set_readonly(buf, 1));
    MUST(gpumem_array_set_readonly(x, 1));
    ok(gpumem_array_unpack(1, (gpumem_array *[]){a}, buf, NULL) == GPUMEM_OK,
       "unpack from a read-only buffer (only read)");
    MUST(gpumem_array_set_readonly(buf, 0));
    ok(gpumem_array_pack(1, (gpumem_array *[]){x}, buf, NULL) == GPUMEM_OK, "pack of a read-only view (only read)");
    MUST(gpumem_array_set_readonly(x, 0));
    ok(gpumem_array_pack(0, NULL, buf, NULL) == GPUMEM_OK, "pack of 0 views");
    int32_t word = 0;
    gpumem_array *huge = NULL; /* 2^60 int32 elements, all one word: 2^62 bytes */
    MUST(gpumem_host_array_wrap(&word, 1, (int64_t[]){INT64_C(1) << 60}, (int64_t[]){0}, i32, &huge));
    fails(gpumem_array_pack(2, (gpumem_array *[]){huge, huge}, buf, NULL), GPUMEM_ERROR_OVERFLOW,
          "gpumem_array_pack: views whose bytes do not fit in int64_t", "gpumem_array_pack", "views[1]");
    gpumem_array_release(huge);
    GPUMEM_ARRAY_RELEASE_ALL(strided, small, buf);

    /* pack views of different item sizes: a 3-byte view, then an int32 view, into a byte buffer */
    gpumem_array *bytes = NULL, *ub = NULL, *dbuf = NULL;
    unsigned char raw[3] = {7, 8, 9};
    MUST(gpumem_host_array_wrap(raw, 1, (int64_t[]){3}, NULL, u8, &ub));
    MUST(gpumem_device_array(ctx, 1, (int64_t[]){19}, NULL, u8, 'C', NULL, &dbuf));
    MUST(gpumem_array_pack(2, (gpumem_array *[]){ub, x}, dbuf, NULL));
    unsigned char got[19];
    MUST(gpumem_host_array_wrap(got, 1, (int64_t[]){19}, NULL, u8, &bytes));
    MUST(gpumem_array_copy(bytes, dbuf, NULL));
    int32_t x0, x3;
    memcpy(&x0, got + 3, 4);
    memcpy(&x3, got + 15, 4);
    ok(got[0] == 7 && got[2] == 9 && x0 == 100 && x3 == 103, "pack at an unaligned offset (3 bytes, then int32)");
    GPUMEM_ARRAY_RELEASE_ALL(bytes, ub, dbuf);

    GPUMEM_ARRAY_RELEASE_ALL(a, b, c, x, y);
}

/* ---- dtypes -------------------------------------------------------------------------------------- */

static void test_dtypes(void)
{
    ok(gpumem_dtype_builtin(GPUMEM_RECORD) == NULL, "gpumem_dtype_builtin(GPUMEM_RECORD) is NULL");
    is_int(gpumem_last_status(), GPUMEM_ERROR_INVALID_VALUE, "... with INVALID_VALUE as the last status");
    like(gpumem_last_error(), "gpumem_dtype_builtin", "... named");
    ok(gpumem_dtype_builtin((gpumem_type)99) == NULL, "gpumem_dtype_builtin(99) is NULL");

    static const char *const good[] = {"<f4", ">i8", "|b1", "|u1", "<c16", "|V16", "=i4", "<b1", ">u1", "<V4", "|i1"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        gpumem_dtype *d = NULL;
        gpumem_status st = gpumem_dtype_from_typestr(good[i], &d);
        ok(st == GPUMEM_OK, "typestr \"%s\" parses", good[i]);
        if (st != GPUMEM_OK)
            diag("  %s", gpumem_last_error());
        ok(gpumem_dtype_release(d) == GPUMEM_OK, "... and releases");
    }
    static const char *const bad[] = {"", "f4", "<x4", "<f4x", "|i4", "<f16", "<V0", "<i3", "<c4", "<b2", "<"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        gpumem_dtype *d = (gpumem_dtype *)SENTINEL;
        gpumem_status st = gpumem_dtype_from_typestr(bad[i], &d);
        ok(st == GPUMEM_ERROR_INVALID_DTYPE && d == (gpumem_dtype *)SENTINEL, "typestr \"%s\" is refused", bad[i]);
        like(gpumem_last_error(), "gpumem_dtype_from_typestr", "... named");
    }
    gpumem_dtype *ne = NULL;
    MUST(gpumem_dtype_from_typestr("=f8", &ne));
    gpumem_byteorder order = GPUMEM_BYTEORDER_NA;
    MUST(gpumem_dtype_type(ne, NULL, &order));
    ok(order != GPUMEM_BYTEORDER_NA, "'=' is resolved to the machine's order");
    ok(ne == (gpumem_dtype *)gpumem_dtype_builtin(GPUMEM_FLOAT64), "'=f8' is the static float64");
    gpumem_byteorder o8 = GPUMEM_BYTEORDER_BIG, o4 = GPUMEM_BYTEORDER_NA, ov = GPUMEM_BYTEORDER_BIG;
    MUST(gpumem_dtype_type(gpumem_dtype_builtin(GPUMEM_INT8), NULL, &o8));
    MUST(gpumem_dtype_type(f32, NULL, &o4));
    const uint16_t probe = 1;
    gpumem_byteorder native = *(const unsigned char *)&probe ? GPUMEM_BYTEORDER_LITTLE : GPUMEM_BYTEORDER_BIG;
    ok(o8 == GPUMEM_BYTEORDER_NA && o4 == native, "builtins: one-byte types have no order, others the machine's");
    gpumem_dtype *lv = NULL;
    MUST(gpumem_dtype_from_typestr("<V4", &lv));
    MUST(gpumem_dtype_type(lv, NULL, &ov));
    is_int(ov, GPUMEM_BYTEORDER_NA, "'<V4' is raw bytes with no order");
    gpumem_dtype_release(lv);

    /* typestr and descr writers */
    char buf[64];
    memset(buf, 'x', sizeof buf);
    fails(gpumem_dtype_typestr(f32, buf, 3), GPUMEM_ERROR_INVALID_VALUE, "gpumem_dtype_typestr: 3 bytes",
          "gpumem_dtype_typestr", "needs 4 bytes");
    ok(buf[0] == '\0', "... the buffer holds \"\"");
    memset(buf, 'x', sizeof buf);
    fails(gpumem_dtype_typestr(f32, buf, 0), GPUMEM_ERROR_INVALID_VALUE, "gpumem_dtype_typestr: 0 bytes",
          "gpumem_dtype_typestr", NULL);
    ok(buf[0] == 'x', "... a buffer of 0 bytes is not written");
    fails(gpumem_dtype_typestr(f32, NULL, 0), GPUMEM_ERROR_INVALID_VALUE,
          "gpumem_dtype_typestr(NULL, 0) asks for the size, as snprintf", "gpumem_dtype_typestr", "needs 4 bytes");
    fails(gpumem_dtype_descr(f32, NULL, 0), GPUMEM_ERROR_INVALID_VALUE,
          "gpumem_dtype_descr(NULL, 0) asks for the size, as snprintf", "gpumem_dtype_descr", "needs 14 bytes");
    fails(gpumem_dtype_typestr(f32, NULL, 8), GPUMEM_ERROR_NULL_ARGUMENT, "gpumem_dtype_typestr: NULL buf of 8 bytes",
          "gpumem_dtype_typestr", "'buf'");
    MUST(gpumem_dtype_typestr(f32, buf, 4));
    ok(buf[1] == 'f' && buf[2] == '4' && buf[3] == '\0', "typestr of float32 in 4 bytes");
    memset(buf, 'x', sizeof buf);
    fails(gpumem_dtype_descr(f32, buf, 5), GPUMEM_ERROR_INVALID_VALUE, "gpumem_dtype_descr: 5 bytes",
          "gpumem_dtype_descr", "needs");
    ok(buf[0] == '\0', "... the buffer holds \"\"");

    /* GPUMEM_TYPE_OF: the type of an expression, not evaluated */
    int k = 0;
    ok(GPUMEM_TYPE_OF(k++) == GPUMEM_INT32 && k == 0, "GPUMEM_TYPE_OF(int) is INT32, its argument not evaluated");
    ok(GPUMEM_TYPE_OF((_Bool)1) == GPUMEM_BOOL && GPUMEM_TYPE_OF((unsigned short)1) == GPUMEM_UINT16 &&
           GPUMEM_TYPE_OF(1LL) == GPUMEM_INT64 && GPUMEM_TYPE_OF(1.0f) == GPUMEM_FLOAT32 &&
           GPUMEM_TYPE_OF((int8_t)1) == GPUMEM_INT8 && GPUMEM_TYPE_OF((uint64_t)1) == GPUMEM_UINT64,
       "GPUMEM_TYPE_OF of _Bool, unsigned short, long long, float, int8_t, uint64_t");
    ok(GPUMEM_DTYPE_OF(1.0) == gpumem_dtype_builtin(GPUMEM_FLOAT64), "GPUMEM_DTYPE_OF(double) is the float64 dtype");

    /* records */
    gpumem_field fs[2] = {{"x", f32, -1, 0, NULL}, {"x", i32, -1, 0, NULL}};
    gpumem_dtype *r = (gpumem_dtype *)SENTINEL;
    fails(gpumem_dtype_record_create(fs, 2, GPUMEM_RECORD_PACKED, 0, &r), GPUMEM_ERROR_INVALID_DTYPE,
          "gpumem_dtype_record_create: duplicate names", "gpumem_dtype_record_create", "'x'");
    fs[1].name = "y";
    fs[1].offset = 2;
    fails(gpumem_dtype_record_create(fs, 2, GPUMEM_RECORD_PACKED, 0, &r), GPUMEM_ERROR_INVALID_DTYPE,
          "gpumem_dtype_record_create: overlapping fields", "'y'", "overlaps");
    fs[1].offset = -2;
    fails(gpumem_dtype_record_create(fs, 2, GPUMEM_RECORD_PACKED, 0, &r), GPUMEM_ERROR_INVALID_DTYPE,
          "gpumem_dtype_record_create: offset -2", "'y'", "-2");
    fs[1].offset = -1;
    fails(gpumem_dtype_record_create(fs, 2, GPUMEM_RECORD_PACKED, 6, &r), GPUMEM_ERROR_INVALID_DTYPE,
          "gpumem_dtype_record_create: a field past itemsize", "'y'", "itemsize");
    fails(gpumem_dtype_record_create(fs, 2, (gpumem_record_layout)7, 0, &r), GPUMEM_ERROR_INVALID_VALUE,
          "gpumem_dtype_record_create: layout 7", "gpumem_dtype_record_create", "layout");
    fs[1].offset = 5;
    fails(gpumem_dtype_record_create(fs, 2, GPUMEM_RECORD_ALIGNED, 0, &r), GPUMEM_ERROR_INVALID_DTYPE,
          "gpumem_dtype_record_create: an unaligned explicit offset", "'y'", "alignment");
    fs[1].offset = -1;
    fails(gpumem_dtype_record_create(fs, 2, GPUMEM_RECORD_ALIGNED, 10, &r), GPUMEM_ERROR_INVALID_DTYPE,
          "gpumem_dtype_record_create: an aligned itemsize not a multiple", "gpumem_dtype_record_create", "10");
    fs[1].ndim = 33;
    fs[1].shape = (int64_t[33]){0};
    fails(gpumem_dtype_record_create(fs, 2, GPUMEM_RECORD_PACKED, 0, &r), GPUMEM_ERROR_INVALID_DTYPE,
          "gpumem_dtype_record_create: 33 dimensions", "'y'", "33");
    fs[1].ndim = 1;
    fs[1].shape = (int64_t[]){-3};
    fails(gpumem_dtype_record_create(fs, 2, GPUMEM_RECORD_PACKED, 0, &r), GPUMEM_ERROR_INVALID_DTYPE,
          "gpumem_dtype_record_create: a negative extent", "'y'", "-3");
    fs[1].dtype = NULL;
    fs[1].ndim = 0;
    fails(gpumem_dtype_record_create(fs, 2, GPUMEM_RECORD_PACKED, 0, &r), GPUMEM_ERROR_INVALID_DTYPE,
          "gpumem_dtype_record_create: a NULL dtype", "'y'", "NULL");
    ok(r == (gpumem_dtype *)SENTINEL, "failing record_create leaves 'dtype' alone");
    fs[1].dtype = i32;
    fs[1].ndim = 1;
    fs[1].shape = (int64_t[]){2};
    MUST(gpumem_dtype_record_create(fs, 2, GPUMEM_RECORD_ALIGNED, 0, &r));
    size_t isz = 0, al = 0;
    MUST(gpumem_dtype_itemsize(r, &isz));
    MUST(gpumem_dtype_alignment(r, &al));
    ok(isz == 12 && al == 4, "aligned {f4, (2,)i4}: 12 bytes, alignment 4");
    int64_t off = -1, shp[32];
    int fnd = -1;
    const char *fname = NULL;
    MUST(gpumem_dtype_field(r, 1, &fname, NULL, &off, &fnd, shp));
    ok(strcmp(fname, "y") == 0 && off == 4 && fnd == 1 && shp[0] == 2, "field 1: 'y' at 4, shape (2,)");
    off = 55;
    fails(gpumem_dtype_field(r, 2, NULL, NULL, &off, NULL, NULL), GPUMEM_ERROR_INDEX_OUT_OF_RANGE,
          "gpumem_dtype_field: index 2 of 2", "gpumem_dtype_field", "2");
    is_int(off, 55, "... writes nothing");
    fails(gpumem_dtype_field(f32, 0, NULL, NULL, NULL, NULL, NULL), GPUMEM_ERROR_INDEX_OUT_OF_RANGE,
          "gpumem_dtype_field: a non-record", "gpumem_dtype_field", "not a record");
    size_t idx = 99;
    fails(gpumem_dtype_field_index(r, "zz", &idx), GPUMEM_ERROR_NOT_FOUND, "gpumem_dtype_field_index: 'zz'",
          "gpumem_dtype_field_index", "'zz'");
    is_int(idx, 99, "... writes nothing");
    MUST(gpumem_dtype_field_index(r, "y", &idx));
    is_int(idx, 1, "field_index('y')");

    /* descr round trip, and equality */
    char d1[256];
    MUST(gpumem_dtype_descr(r, d1, sizeof d1));
    gpumem_dtype *back = NULL;
    MUST(gpumem_dtype_from_descr(d1, &back));
    ok(gpumem_dtype_equal(back, r) == 1, "from_descr(descr(r)) equals r");
    gpumem_dtype_release(back);
    /* trailing padding and gaps are written as ('', '|Vn'); out-of-order fields have no descr */
    gpumem_field one[2] = {{"b", f32, 8, 0, NULL}, {"a", f32, 0, 0, NULL}};
    gpumem_dtype *pad = NULL, *ooo = NULL;
    MUST(gpumem_dtype_record_create(one, 1, GPUMEM_RECORD_PACKED, 16, &pad));
    MUST(gpumem_dtype_descr(pad, d1, sizeof d1));
    ok(strstr(d1, "('', '|V8'), ('b', '") == d1 + 1 && strstr(d1, "('', '|V4')]") != NULL,
       "descr writes the gap before a field and the trailing padding: %s", d1);
    MUST(gpumem_dtype_record_create(one, 2, GPUMEM_RECORD_PACKED, 0, &ooo));
    memset(d1, 'x', sizeof d1);
    fails(gpumem_dtype_descr(ooo, d1, sizeof d1), GPUMEM_ERROR_INVALID_DTYPE,
          "gpumem_dtype_descr: fields out of offset order", "gpumem_dtype_descr", "'a'");
    gpumem_dtype_release(ooo);
    gpumem_dtype_release(pad);
    gpumem_dtype *f4a = NULL, *f4b = NULL;
    MUST(gpumem_dtype_from_descr("[('', '<f4')]", &f4a));
    MUST(gpumem_dtype_from_descr("'<f4'", &f4b));
    gpumem_dtype *sur = (gpumem_dtype *)SENTINEL;
    fails(gpumem_dtype_from_descr("[('\\uD800', '<f4')]", &sur), GPUMEM_ERROR_INVALID_DTYPE,
          "gpumem_dtype_from_descr: a surrogate escape is refused", "gpumem_dtype_from_descr", "not a Unicode character");
    fails(gpumem_dtype_from_descr("[('\\N{DASH}', '<f4')]", &sur), GPUMEM_ERROR_INVALID_DTYPE,
          "gpumem_dtype_from_descr: the named escape is refused", "gpumem_dtype_from_descr", "named escape");
    ok(sur == (gpumem_dtype *)SENTINEL, "... no dtype came out");
    MUST(gpumem_dtype_from_descr("[('\\101\\x41\\u0041', '<f4')]", &sur));
    const char *sname = NULL;
    MUST(gpumem_dtype_field(sur, 0, &sname, NULL, NULL, NULL, NULL));
    is_str(sname, "AAA", "octal, \\x and \\u escapes as Python reads them");
    gpumem_dtype_release(sur);
    gpumem_dtype *f4c = NULL;
    MUST(gpumem_dtype_from_typestr("<f4", &f4c));
    gpumem_type ft = GPUMEM_RECORD;
    MUST(gpumem_dtype_type(f4a, &ft, NULL));
    ok(ft == GPUMEM_FLOAT32 && f4a == f4c && f4b == f4c, "descr [('', '<f4')] and a quoted '<f4' are the builtin");
    gpumem_dtype_release(f4c);
    gpumem_dtype_release(f4b);
    gpumem_dtype_release(f4a);
    gpumem_dtype *empty = NULL, *v12 = NULL;
    MUST(gpumem_dtype_record_create(NULL, 0, GPUMEM_RECORD_PACKED, 12, &empty));
    MUST(gpumem_dtype_from_typestr("|V12", &v12));
    ok(gpumem_dtype_equal(empty, v12) == 1, "a record without fields equals raw bytes of its size");
    ok(gpumem_dtype_equal(r, NULL) == 0 && gpumem_dtype_equal(NULL, NULL) == 0, "equal with NULL is 0");
    gpumem_dtype *be = NULL;
    MUST(gpumem_dtype_from_typestr(">i4", &be));
    ok(gpumem_dtype_equal(be, gpumem_dtype_builtin(GPUMEM_INT32)) == (gpumem_dtype_builtin(GPUMEM_INT32) == be),
       "byte order is compared");
    size_t alc = 0;
    MUST(gpumem_dtype_alignment(gpumem_dtype_builtin(GPUMEM_COMPLEX128), &alc));
    is_int(alc, 8, "complex128's alignment is its component's");
    MUST(gpumem_dtype_alignment(v12, &alc));
    is_int(alc, 1, "raw bytes align to 1");
    gpumem_dtype_release(v12);
    gpumem_dtype_release(empty);

    /* lifetime */
    MUST(gpumem_dtype_release(r));
    fails(gpumem_dtype_release(r), GPUMEM_ERROR_INVALID_STATE, "gpumem_dtype_release twice", "gpumem_dtype_release",
          NULL);
    fails(gpumem_dtype_retain(r), GPUMEM_ERROR_INVALID_STATE, "gpumem_dtype_retain after its last release",
          "gpumem_dtype_retain", NULL);
    gpumem_array *a = device_iota(ctx, 1, (int64_t[]){2}, 0);
    fails(gpumem_dtype_release((const gpumem_dtype *)(void *)a), GPUMEM_ERROR_INVALID_VALUE,
          "gpumem_dtype_release of an array handle", "gpumem_dtype_release", NULL);
    gpumem_array_release(a);
    ok(gpumem_dtype_release(NULL) == GPUMEM_OK && gpumem_dtype_release(f32) == GPUMEM_OK,
       "release of NULL and of a builtin are no-ops");
}

/* ---- NULL contexts: the array's own, when it has one ---------------------------------------------- */

static int device_of(gpumem_array *a)
{
    gpumem_context *c = NULL;
    int dev = -1;
    MUST(gpumem_array_context(a, &c));
    if (c != NULL)
        MUST(gpumem_context_get_device(c, &dev));
    return dev;
}

static void test_null_context(void)
{
    int count = 0;
    gpumem_device_count(&count);
    if (count < 2) {
        skip(3, "the NULL-context checks need two devices (the simulator has two here)");
        return;
    }
    gpumem_context *c1 = NULL;
    MUST(gpumem_context_create(1, &c1));
    const int64_t n = 4;
    gpumem_array *d1 = NULL, *p1 = NULL, *like = NULL, *up = NULL, *h = NULL, *hu = NULL;
    MUST(gpumem_device_array(c1, 1, &n, NULL, i32, 'C', NULL, &d1));
    MUST(gpumem_device_array_like(NULL, d1, NULL, &like));
    is_int(device_of(like), 1, "gpumem_device_array_like(NULL, a device-1 array) is on device 1 (like's context)");
    MUST(gpumem_pinned_array(c1, 1, &n, NULL, i32, 'C', &p1));
    MUST(gpumem_to_device(NULL, p1, NULL, 0, &up));
    is_int(device_of(up), 1, "gpumem_to_device(NULL, a pinned array of device 1) is on device 1 (its context)");
    MUST(gpumem_host_array(1, &n, i32, 'C', &h));
    MUST(gpumem_to_device(NULL, h, NULL, 0, &hu));
    gpumem_context *auto_ctx = NULL;
    int adev = -1;
    MUST(gpumem_autoinit(&auto_ctx));
    MUST(gpumem_context_get_device(auto_ctx, &adev));
    is_int(device_of(hu), adev, "gpumem_to_device(NULL, a pageable array): the autoinit context's device");
    GPUMEM_ARRAY_RELEASE_ALL(hu, h, up, p1, like, d1);
    gpumem_context_release(c1);
}

int main(void)
{
    if (test_on_sim())
        setenv("GPUMEM_SIM_DEVICES", "2", 1); /* before the simulator starts */
    char reason[256];
    if (gpumem_test_context(&ctx, reason, sizeof reason) != GPUMEM_OK)
        plan_skip_all(reason);
    i32 = gpumem_dtype_builtin(GPUMEM_INT32);
    f32 = gpumem_dtype_builtin(GPUMEM_FLOAT32);
    u8 = gpumem_dtype_builtin(GPUMEM_UINT8);
    test_making();
    test_lifetime();
    test_copies();
    test_items();
    test_slices();
    test_views();
    test_zero_d();
    test_properties();
    test_broadcast();
    test_batch();
    test_dtypes();
    test_null_context();
    gpumem_context_release(ctx);
    done_testing();
    return exit_status();
}
