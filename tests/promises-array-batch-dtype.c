/* The promises of gpumem/batch.h and gpumem/dtype.h, and calls given a
 * NULL context (part of tests/test-promises-array). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gpumem.h>

#include "arrays.h"
#include "tap.h"
#include "promises-array.h"

/* ---- batches ------------------------------------------------------------------------------------- */

void test_batch(void)
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

void test_dtypes(void)
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

void test_null_context(void)
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
