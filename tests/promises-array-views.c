/* The promises of gpumem/array.h's views (part of
 * tests/test-promises-array): slices, transpose, view, reshape, ravel,
 * split, 0-d arrays, properties, and broadcast destinations. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gpumem.h>

#include "arrays.h"
#include "tap.h"
#include "promises-array.h"

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

void test_slices(void)
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

void test_views(void)
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

void test_zero_d(void)
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

void test_properties(void)
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

void test_broadcast(void)
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
