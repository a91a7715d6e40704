/* The promises of gpumem/array.h, gpumem/batch.h and gpumem/dtype.h, checked
 * as an outside user reads them: each documented status for NULL or bad
 * arguments and released handles, what gpumem_last_error() names (the
 * public function and the argument), that a failing call leaves its
 * outputs and destinations alone, and the documented edge cases (size 0,
 * ndim 0, negative steps, GPUMEM_SLICE_ALL, bounds off an axis, colliding
 * destinations of a batch, read-only arrays).  Values are read back and
 * compared.
 * This file: main, the helpers, making arrays, lifetime, copies and items;
 * promises-array-views.c: slices, views, 0-d arrays, properties, broadcast
 * destinations; promises-array-batch-dtype.c: batches, dtypes, NULL
 * contexts. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gpumem.h>

#include "arrays.h"
#include "tap.h"
#include "promises-array.h"

gpumem_context *ctx;
const gpumem_dtype *i32, *f32, *u8;


/* A failing call: its status, and a message that holds each needle. */
void fails(gpumem_status got, gpumem_status want, const char *name, const char *n1, const char *n2)
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

/* n int32 of a device or host array of n elements, C order. */
void read_i32(gpumem_array *a, int32_t *out, int64_t n)
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
