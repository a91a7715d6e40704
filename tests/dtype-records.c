/* Record dtypes (part of tests/test-dtype): NumPy's layouts, accessors,
 * record errors, descr parsing and writing, and round trips of many random
 * records.  The NumPy answers are those of NumPy 1.24 (see test-dtype.c). */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include <gpumem.h>
#include <gpumem/dtype.h>

#include "dtype.h" /* lib/dtype.h: the reference count, for the thread test */
#include "rng.h"
#include "tap.h"
#include "dtype-test.h"

/* ---- records: NumPy's layouts ---------------------------------------------------------- */

gpumem_dtype *keep[64];
size_t nkeep;

static const gpumem_dtype *kept(gpumem_dtype *d)
{
    if (d != NULL && nkeep < NF(keep))
        keep[nkeep++] = d;
    return d;
}

void test_layouts(void)
{
    const gpumem_dtype *u1 = T("|u1"), *b1 = T("|b1"), *i2 = T("<i2"), *i4 = T("<i4"), *i8 = T("<i8"),
                       *f2 = T("<f2"), *f4 = T("<f4"), *f8 = T("<f8"), *bf4 = T(">f4"), *c8 = T("<c8"),
                       *c16 = T("<c16"), *u8 = T("<u8");

    /* np.dtype([('a','u1'),('b','<f8')], align=True) */
    gpumem_field ab[] = {F("a", u1), F("b", f8)};
    check_record("[a u1, b f8] aligned", kept(record(ab, 2, GPUMEM_RECORD_ALIGNED, 0)), 2, (int64_t[]){0, 8}, 16,
                 8, "[('a', '|u1'), ('', '|V7'), ('b', '<f8')]");
    /* np.dtype([('a','u1'),('b','<f8')]) */
    check_record("[a u1, b f8] packed", kept(record(ab, 2, GPUMEM_RECORD_PACKED, 0)), 2, (int64_t[]){0, 1}, 9, 1,
                 "[('a', '|u1'), ('b', '<f8')]");
    /* np.dtype([('x','<f8'),('y','u1')], align=True): trailing padding */
    gpumem_field xy[] = {F("x", f8), F("y", u1)};
    check_record("[x f8, y u1] aligned", kept(record(xy, 2, GPUMEM_RECORD_ALIGNED, 0)), 2, (int64_t[]){0, 8}, 16,
                 8, "[('x', '<f8'), ('y', '|u1'), ('', '|V7')]");
    /* np.dtype([('a','u1'),('b','<i8'),('c','u1')], align=True) */
    gpumem_field abc[] = {F("a", u1), F("b", i8), F("c", u1)};
    check_record("[a u1, b i8, c u1] aligned", kept(record(abc, 3, GPUMEM_RECORD_ALIGNED, 0)), 3,
                 (int64_t[]){0, 8, 16}, 24, 8, "[('a', '|u1'), ('', '|V7'), ('b', '<i8'), ('c', '|u1'), ('', '|V7')]");
    /* np.dtype([('b','?'),('s','<i2'),('l','<u8')], align=True) */
    gpumem_field bsl[] = {F("b", b1), F("s", i2), F("l", u8)};
    check_record("[b b1, s i2, l u8] aligned", kept(record(bsl, 3, GPUMEM_RECORD_ALIGNED, 0)), 3,
                 (int64_t[]){0, 2, 8}, 16, 8, "[('b', '|b1'), ('', '|V1'), ('s', '<i2'), ('', '|V4'), ('l', '<u8')]");
    /* np.dtype([('a','u1'),('z','<c16')], align=True): a complex aligns as its component */
    gpumem_field az16[] = {F("a", u1), F("z", c16)};
    check_record("[a u1, z c16] aligned", kept(record(az16, 2, GPUMEM_RECORD_ALIGNED, 0)), 2, (int64_t[]){0, 8},
                 24, 8, "[('a', '|u1'), ('', '|V7'), ('z', '<c16')]");
    gpumem_field az8[] = {F("a", u1), F("z", c8)};
    check_record("[a u1, z c8] aligned", kept(record(az8, 2, GPUMEM_RECORD_ALIGNED, 0)), 2, (int64_t[]){0, 4}, 12,
                 4, "[('a', '|u1'), ('', '|V3'), ('z', '<c8')]");
    gpumem_field ah[] = {F("a", u1), F("h", f2)};
    check_record("[a u1, h f2] aligned", kept(record(ah, 2, GPUMEM_RECORD_ALIGNED, 0)), 2, (int64_t[]){0, 2}, 4, 2,
                 "[('a', '|u1'), ('', '|V1'), ('h', '<f2')]");

    /* inner = np.dtype([('a','u1'),('b','<i2')], align=True): 0, 2; 4 bytes; alignment 2
     * np.dtype([('c','u1'),('inner',inner),('d','<f4')], align=True) */
    gpumem_field in[] = {F("a", u1), F("b", i2)};
    const gpumem_dtype *inner = kept(record(in, 2, GPUMEM_RECORD_ALIGNED, 0));
    check_record("inner [a u1, b i2] aligned", inner, 2, (int64_t[]){0, 2}, 4, 2,
                 "[('a', '|u1'), ('', '|V1'), ('b', '<i2')]");
    gpumem_field out[] = {F("c", u1), F("inner", inner), F("d", f4)};
    check_record("nested aligned", kept(record(out, 3, GPUMEM_RECORD_ALIGNED, 0)), 3, (int64_t[]){0, 2, 8}, 12, 4,
                 "[('c', '|u1'), ('', '|V1'), ('inner', [('a', '|u1'), ('', '|V1'), ('b', '<i2')]), "
                 "('', '|V2'), ('d', '<f4')]");
    /* innerp = np.dtype([('a','u1'),('b','<i2')]) has alignment 1, so in an
     * aligned record it follows 'c' directly: 0, 1, 4; 8 bytes. */
    const gpumem_dtype *innerp = kept(record(in, 2, GPUMEM_RECORD_PACKED, 0));
    gpumem_field outp[] = {F("c", u1), F("inner", innerp), F("d", f4)};
    check_record("aligned around a packed record", kept(record(outp, 3, GPUMEM_RECORD_ALIGNED, 0)), 3,
                 (int64_t[]){0, 1, 4}, 8, 4, "[('c', '|u1'), ('inner', [('a', '|u1'), ('b', '<i2')]), ('d', '<f4')]");
    check_record("packed nested", kept(record(outp, 3, GPUMEM_RECORD_PACKED, 0)), 3, (int64_t[]){0, 1, 4}, 8, 1,
                 "[('c', '|u1'), ('inner', [('a', '|u1'), ('b', '<i2')]), ('d', '<f4')]");

    /* np.dtype([('id','<i4'),('pos','<f8',(3,))], align=True) */
    gpumem_field ip[] = {F("id", i4), FS("pos", f8, 1, 3)};
    check_record("sub-array aligned", kept(record(ip, 2, GPUMEM_RECORD_ALIGNED, 0)), 2, (int64_t[]){0, 8}, 32, 8,
                 "[('id', '<i4'), ('', '|V4'), ('pos', '<f8', (3,))]");
    /* np.dtype([('id','<i4'),('pos','<f8',(3,)),('m','>f4',(2,3))]) */
    gpumem_field ipm[] = {F("id", i4), FS("pos", f8, 1, 3), FS("m", bf4, 2, 2, 3)};
    check_record("sub-arrays packed, 2-d, big-endian", kept(record(ipm, 3, GPUMEM_RECORD_PACKED, 0)), 3,
                 (int64_t[]){0, 4, 28}, 52, 1, "[('id', '<i4'), ('pos', '<f8', (3,)), ('m', '>f4', (2, 3))]");
    /* np.dtype([('a','u1'),('pts',inner,(2,))], align=True) */
    gpumem_field pts[] = {F("a", u1), FS("pts", inner, 1, 2)};
    check_record("sub-array of records aligned", kept(record(pts, 2, GPUMEM_RECORD_ALIGNED, 0)), 2,
                 (int64_t[]){0, 2}, 10, 2,
                 "[('a', '|u1'), ('', '|V1'), ('pts', [('a', '|u1'), ('', '|V1'), ('b', '<i2')], (2,))]");
    /* np.dtype({'names':['a','b'],'formats':['<i4','<f8'],'offsets':[4,16],'itemsize':32}) */
    gpumem_field gaps[] = {FO("a", i4, 4), FO("b", f8, 16)};
    check_record("explicit offsets and itemsize", kept(record(gaps, 2, GPUMEM_RECORD_PACKED, 32)), 2,
                 (int64_t[]){4, 16}, 32, 1, "[('', '|V4'), ('a', '<i4'), ('', '|V8'), ('b', '<f8'), ('', '|V8')]");
    /* np.dtype([('e','<f8',(0,)),('b','u1')]): an empty sub-array takes no bytes */
    gpumem_field e0[] = {FS("e", f8, 1, 0), F("b", u1)};
    check_record("a (0,) sub-array", kept(record(e0, 2, GPUMEM_RECORD_PACKED, 0)), 2, (int64_t[]){0, 0}, 1, 1,
                 "[('e', '<f8', (0,)), ('b', '|u1')]");
    /* np.dtype([]) */
    const gpumem_dtype *empty = kept(record(NULL, 0, GPUMEM_RECORD_ALIGNED, 0));
    check_record("the empty record", empty, 0, NULL, 0, 1, "[]");
    is_str(typestr_of(empty), "|V0", "the empty record's typestr is |V0, as NumPy's dtype([]).str");
    /* np.dtype([("it's",'<f4'),('q"','<i2')]): Python's repr picks the quotes */
    gpumem_field quotes[] = {F("it's", f4), F("q\"", i2)};
    check_record("names with quotes", kept(record(quotes, 2, GPUMEM_RECORD_PACKED, 0)), 2, (int64_t[]){0, 4}, 6, 1,
                 "[(\"it's\", '<f4'), ('q\"', '<i2')]");
    /* np.dtype({'names':['x','y','z'],'formats':['<f8','<i2','u1'],'offsets':[16,24,0],
     *           'itemsize':32}, align=True): the fields keep their order, so
     * NumPy's .descr raises ValueError, and gpumem_dtype_descr() fails. */
    gpumem_field ex[] = {FO("x", f8, 16), F("y", i2), FO("z", u1, 0)};
    const gpumem_dtype *exd = kept(record(ex, 3, GPUMEM_RECORD_ALIGNED, 32));
    int64_t o[3] = {-1, -1, -1};
    size_t size = 0, align = 0;
    for (size_t i = 0; i < 3; i++)
        gpumem_dtype_field(exd, i, NULL, NULL, &o[i], NULL, NULL);
    gpumem_dtype_itemsize(exd, &size);
    gpumem_dtype_alignment(exd, &align);
    ok(o[0] == 16 && o[1] == 24 && o[2] == 0 && size == 32 && align == 8,
       "aligned with explicit offsets: 16, 24 (after x), 0; 32 bytes; alignment 8");
    is_str(descr_of(exd), "(error: gpumem_dtype_descr: field 'z' at offset 0 starts before the end of the fields "
                          "before it (byte 26): a descr cannot describe out-of-order fields)",
           "... and it has no descr, as in NumPy");
}

/* ---- accessors --------------------------------------------------------------------- */

void test_accessors(void)
{
    const gpumem_dtype *f8 = T("<f8"), *u1 = T("|u1");
    char name_buf[8] = "pos";
    gpumem_field fs[] = {F("a", u1), {name_buf, f8, -1, 2, (const int64_t[]){2, 3}}};
    gpumem_dtype *r = record(fs, 2, GPUMEM_RECORD_ALIGNED, 0);
    name_buf[0] = 'X'; /* the record has its own copy */
    size_t count = 0;
    ok(gpumem_dtype_field_count(r, &count) == GPUMEM_OK && count == 2, "field_count is 2");
    const char *name = NULL;
    const gpumem_dtype *fd = NULL;
    int64_t off = -1, shape[32] = {0};
    int ndim = -1;
    ok(gpumem_dtype_field(r, 1, &name, &fd, &off, &ndim, shape) == GPUMEM_OK && strcmp(name, "pos") == 0 &&
           fd == f8 && off == 8 && ndim == 2 && shape[0] == 2 && shape[1] == 3,
       "field 1 is 'pos', <f8 at 8, shape (2, 3); the name was copied");
    ok(gpumem_dtype_field(r, 0, NULL, NULL, NULL, NULL, NULL) == GPUMEM_OK, "every out-parameter may be NULL");
    ndim = -1;
    ok(gpumem_dtype_field(r, 0, &name, NULL, NULL, &ndim, shape) == GPUMEM_OK && ndim == 0 && strcmp(name, "a") == 0,
       "field 0 is 'a', a scalar");
    size_t index = 99;
    ok(gpumem_dtype_field_index(r, "pos", &index) == GPUMEM_OK && index == 1, "field_index('pos') is 1");
    fails(gpumem_dtype_field_index(r, "Xos", &index), GPUMEM_ERROR_NOT_FOUND, "'Xos'", "2 fields",
          "an unknown field name is GPUMEM_ERROR_NOT_FOUND naming it");
    fails(gpumem_dtype_field_index(T("<f4"), "a", &index), GPUMEM_ERROR_NOT_FOUND, "'a'", "not a record",
          "a builtin has no fields");
    fails(gpumem_dtype_field(r, 2, NULL, NULL, NULL, NULL, NULL), GPUMEM_ERROR_INDEX_OUT_OF_RANGE, "index 2",
          "2 fields", "field index 2 of 2 is out of range");
    ok(gpumem_dtype_field_count(T("<f4"), &count) == GPUMEM_OK && count == 0, "a builtin has 0 fields");
    gpumem_type type;
    gpumem_byteorder order;
    ok(gpumem_dtype_type(r, &type, &order) == GPUMEM_OK && type == GPUMEM_RECORD && order == GPUMEM_BYTEORDER_NA,
       "a record is GPUMEM_RECORD with no byte order");
    ok(gpumem_dtype_type(r, NULL, &order) == GPUMEM_OK && gpumem_dtype_type(r, &type, NULL) == GPUMEM_OK,
       "either out-parameter of gpumem_dtype_type may be NULL");
    is_str(typestr_of(r), "|V56", "a record's typestr is |V<itemsize>");

    /* Equality: names, offsets, dtypes, shapes, size. */
    gpumem_field same[] = {F("a", u1), FS("pos", f8, 2, 2, 3)};
    gpumem_field other_shape[] = {F("a", u1), FS("pos", f8, 2, 3, 2)};
    gpumem_field other_name[] = {F("b", u1), FS("pos", f8, 2, 2, 3)};
    gpumem_field other_type[] = {F("a", T("|i1")), FS("pos", f8, 2, 2, 3)};
    gpumem_dtype *s = record(same, 2, GPUMEM_RECORD_ALIGNED, 0), *o1 = record(other_shape, 2, GPUMEM_RECORD_ALIGNED, 0),
                 *o2 = record(other_name, 2, GPUMEM_RECORD_ALIGNED, 0),
                 *o3 = record(other_type, 2, GPUMEM_RECORD_ALIGNED, 0),
                 *o4 = record(same, 2, GPUMEM_RECORD_ALIGNED, 64), *o5 = record(same, 2, GPUMEM_RECORD_PACKED, 0);
    ok(gpumem_dtype_equal(r, s) == 1, "records with the same fields are equal");
    ok(!gpumem_dtype_equal(r, o1) && !gpumem_dtype_equal(r, o2) && !gpumem_dtype_equal(r, o3) &&
           !gpumem_dtype_equal(r, o4) && !gpumem_dtype_equal(r, o5),
       "another shape, name, field type, itemsize or offset makes records differ");
    ok(!gpumem_dtype_equal(r, NULL) && !gpumem_dtype_equal(NULL, NULL), "NULL equals nothing");
    /* A record without fields is the same 16 bytes as |V16: same descr. */
    gpumem_dtype *pad = record(NULL, 0, GPUMEM_RECORD_PACKED, 16), *v16 = NULL;
    gpumem_dtype_from_typestr("|V16", &v16);
    ok(gpumem_dtype_equal(pad, v16) && strcmp(descr_of(pad), "[('', '|V16')]") == 0 && round_trips(pad),
       "a record of 16 bytes without fields equals |V16 and round-trips");
    gpumem_dtype *list[] = {r, s, o1, o2, o3, o4, o5, pad, v16};
    for (size_t i = 0; i < NF(list); i++)
        gpumem_dtype_release(list[i]);
}

/* ---- record errors ----------------------------------------------------------------- */

void test_record_errors(void)
{
    const gpumem_dtype *f8 = T("<f8"), *i4 = T("<i4"), *u1 = T("|u1");
    gpumem_dtype *d = (gpumem_dtype *)(uintptr_t)1;
#define REC(fs, layout, size) gpumem_dtype_record_create((fs), NF(fs), (layout), (size), &d)
    gpumem_field empty_name[] = {F("a", f8), F("", i4)};
    fails(REC(empty_name, GPUMEM_RECORD_PACKED, 0), GPUMEM_ERROR_INVALID_DTYPE, "field 1", "empty name",
          "an empty field name is refused");
    gpumem_field null_name[] = {F(NULL, f8)};
    fails(REC(null_name, GPUMEM_RECORD_PACKED, 0), GPUMEM_ERROR_INVALID_DTYPE, "field 0", "NULL name",
          "a NULL field name is refused");
    gpumem_field dup[] = {F("a", f8), F("b", i4), F("a", i4)};
    fails(REC(dup, GPUMEM_RECORD_PACKED, 0), GPUMEM_ERROR_INVALID_DTYPE, "field 'a'", "duplicate",
          "a duplicate field name is refused, naming it");
    gpumem_field null_dtype[] = {F("a", f8), F("x", NULL)};
    fails(REC(null_dtype, GPUMEM_RECORD_PACKED, 0), GPUMEM_ERROR_INVALID_DTYPE, "field 'x'", "NULL dtype",
          "a NULL field dtype is refused, naming the field");
    gpumem_field overlap[] = {FO("a", f8, 0), FO("b", i4, 4)};
    fails(REC(overlap, GPUMEM_RECORD_PACKED, 0), GPUMEM_ERROR_INVALID_DTYPE, "field 'b' (bytes 4 to 8) overlaps",
          "field 'a' (bytes 0 to 8)", "overlapping fields are refused, naming both");
    gpumem_field overlap2[] = {FO("late", i4, 20), FO("a", f8, 0), FO("b", i4, 8), FO("c", f8, 14)};
    fails(REC(overlap2, GPUMEM_RECORD_PACKED, 0), GPUMEM_ERROR_INVALID_DTYPE, "field 'late' (bytes 20 to 24) overlaps",
          "field 'c' (bytes 14 to 22)", "an overlap found among fields given out of order");
    gpumem_field inside[] = {FO("a", f8, 0), FS("z", f8, 1, 0)};
    inside[1].offset = 4;
    fails(REC(inside, GPUMEM_RECORD_PACKED, 0), GPUMEM_ERROR_INVALID_DTYPE, "field 'z'", "overlaps field 'a'",
          "an empty field inside another field overlaps it");
    gpumem_field touching[] = {FS("z0", f8, 1, 0), FO("a", f8, 0), FS("z1", f8, 1, 0), FS("z2", f8, 1, 0)};
    touching[2].offset = 8;
    touching[3].offset = 8;
    ok(REC(touching, GPUMEM_RECORD_PACKED, 0) == GPUMEM_OK, "empty fields at the edges of another field are fine");
    if (d != (gpumem_dtype *)(uintptr_t)1)
        gpumem_dtype_release(d);
    d = (gpumem_dtype *)(uintptr_t)1;
    gpumem_field neg[] = {FO("a", f8, -5)};
    fails(REC(neg, GPUMEM_RECORD_PACKED, 0), GPUMEM_ERROR_INVALID_DTYPE, "field 'a'", "negative offset -5",
          "a negative offset is refused");
    gpumem_field past[] = {FO("a", f8, 4)};
    fails(REC(past, GPUMEM_RECORD_PACKED, 8), GPUMEM_ERROR_INVALID_DTYPE, "field 'a' ends at byte 12",
          "past the itemsize 8", "a field past the itemsize is refused");
    gpumem_field big[] = {FS("huge", f8, 2, INT64_MAX / 4, 4)};
    fails(REC(big, GPUMEM_RECORD_PACKED, 0), GPUMEM_ERROR_INVALID_DTYPE, "field 'huge'", "overflows",
          "a sub-array whose size overflows is refused");
    gpumem_field far[] = {FO("far", f8, INT64_MAX - 4)};
    fails(REC(far, GPUMEM_RECORD_PACKED, 0), GPUMEM_ERROR_INVALID_DTYPE, "field 'far'", "overflows",
          "an offset whose end overflows is refused");
    gpumem_field negext[] = {FS("m", f8, 2, 2, -1)};
    fails(REC(negext, GPUMEM_RECORD_PACKED, 0), GPUMEM_ERROR_INVALID_DTYPE, "field 'm'", "negative",
          "a negative sub-array extent is refused");
    gpumem_field many[] = {{"m", f8, -1, 33, (const int64_t[33]){0}}};
    fails(REC(many, GPUMEM_RECORD_PACKED, 0), GPUMEM_ERROR_INVALID_DTYPE, "field 'm'", "0 to 32 dimensions",
          "a sub-array of 33 dimensions is refused");
    gpumem_field noshape[] = {{"m", f8, -1, 2, NULL}};
    fails(REC(noshape, GPUMEM_RECORD_PACKED, 0), GPUMEM_ERROR_INVALID_DTYPE, "field 'm'", "NULL shape",
          "a sub-array without a shape is refused");
    gpumem_field misaligned[] = {F("a", u1), FO("b", f8, 4)};
    fails(REC(misaligned, GPUMEM_RECORD_ALIGNED, 0), GPUMEM_ERROR_INVALID_DTYPE, "field 'b'", "not a multiple",
          "an explicit offset that breaks GPUMEM_RECORD_ALIGNED is refused (NumPy's rule)");
    gpumem_field ok_fields[] = {F("a", u1), F("b", f8)};
    fails(REC(ok_fields, GPUMEM_RECORD_ALIGNED, 20), GPUMEM_ERROR_INVALID_DTYPE, "itemsize 20",
          "alignment 8", "an aligned itemsize must be a multiple of the alignment (NumPy's rule)");
    fails(REC(ok_fields, (gpumem_record_layout)7, 0), GPUMEM_ERROR_INVALID_VALUE, "layout 7", NULL,
          "an unknown layout is refused");
    fails(gpumem_dtype_record_create(NULL, 2, GPUMEM_RECORD_PACKED, 0, &d), GPUMEM_ERROR_NULL_ARGUMENT, "'fields'",
          NULL, "NULL fields with nfields 2 is refused");
    fails(gpumem_dtype_record_create(ok_fields, 2, GPUMEM_RECORD_PACKED, 0, NULL), GPUMEM_ERROR_NULL_ARGUMENT,
          "'dtype'", NULL, "a NULL output is refused");
    ok(d == (gpumem_dtype *)(uintptr_t)1, "failures leave the output alone");

    /* Nesting is bounded: a record 64 levels deep is fine, 65 is refused. */
    const gpumem_dtype *level = u1;
    gpumem_status st = GPUMEM_OK;
    int depth = 0;
    gpumem_dtype *chain[70] = {0};
    while (st == GPUMEM_OK && depth < 70) {
        gpumem_field f = F("n", level);
        st = gpumem_dtype_record_create(&f, 1, GPUMEM_RECORD_PACKED, 0, &chain[depth]);
        if (st == GPUMEM_OK)
            level = chain[depth++];
    }
    ok(depth == 64 && st == GPUMEM_ERROR_INVALID_DTYPE && strstr(gpumem_last_error(), "64 levels") != NULL,
       "records nest 64 levels deep, not 65");
    ok(round_trips(chain[63]), "a record nested 64 deep round-trips through its descr");
    for (int i = depth - 1; i >= 0; i--)
        gpumem_dtype_release(chain[i]);
#undef REC
}

/* ---- descr parsing ------------------------------------------------------------------- */

void test_descr_parse(void)
{
    gpumem_dtype *d = NULL;
    /* NumPy's descr of an aligned record: the gap becomes padding. */
    ok(gpumem_dtype_from_descr("[('a', '|u1'), ('', '|V7'), ('b', '<f8')]", &d) == GPUMEM_OK, "NumPy's descr parses");
    int64_t off = -1;
    size_t count = 0, size = 0;
    gpumem_dtype_field_count(d, &count);
    gpumem_dtype_itemsize(d, &size);
    gpumem_dtype_field(d, 1, NULL, NULL, &off, NULL, NULL);
    ok(count == 2 && off == 8 && size == 16, "the gap is padding, not a field: 2 fields, 'b' at 8, 16 bytes");
    gpumem_dtype_release(d);

    /* Whitespace, double quotes, trailing commas, shapes as int, (n), (n,), (). */
    const char *messy = "  [ ( \"a\" ,'<f4' ) ,\n\t('pos', \"<f8\", (2 ,3 ,) ), ('n', '<i2', 3),"
                        " ('p', '<i2', (2)), ('s', '|u1', ()), ('in', [('x','|u1',)],), ]  ";
    d = NULL;
    ok(gpumem_dtype_from_descr(messy, &d) == GPUMEM_OK, "a whitespace-tolerant descr with both quotes parses");
    is_str(descr_of(d),
           "[('a', '<f4'), ('pos', '<f8', (2, 3)), ('n', '<i2', (3,)), ('p', '<i2', (2,)), ('s', '|u1'), "
           "('in', [('x', '|u1')])]",
           "and is written back in NumPy's style");
    gpumem_dtype_itemsize(d, &size);
    is_int(size, 4 + 48 + 6 + 4 + 1 + 1, "its size adds up: 64 bytes");
    gpumem_dtype_release(d);

    /* Bare and quoted typestrs, and [('', typestr)]. */
    d = NULL;
    ok(gpumem_dtype_from_descr(" >i8 ", &d) == GPUMEM_OK && d == T(">i8"), "a bare typestr is a descr");
    ok(gpumem_dtype_from_descr("'<c8'", &d) == GPUMEM_OK && d == T("<c8"), "a quoted typestr is a descr");
    ok(gpumem_dtype_from_descr("[('', '<f4')]", &d) == GPUMEM_OK && d == T("<f4"),
       "[('', '<f4')] is the builtin <f4");
    d = NULL;
    count = 9;
    size = 9;
    ok(gpumem_dtype_from_descr("[]", &d) == GPUMEM_OK && strcmp(descr_of(d), "[]") == 0 &&
           gpumem_dtype_field_count(d, &count) == GPUMEM_OK && count == 0 &&
           gpumem_dtype_itemsize(d, &size) == GPUMEM_OK && size == 0,
       "[] is the empty record");
    gpumem_dtype_release(d);

    /* Python escapes in names. */
    d = NULL;
    ok(gpumem_dtype_from_descr("[('a\\'b', '<f4'), ('t\\tx', '<i2'), ('\\x41\\u00e9\\\\', '|u1'), ('q\"', '|u1')]",
                               &d) == GPUMEM_OK,
       "names with escapes parse");
    const char *n0 = NULL, *n1 = NULL, *n2 = NULL;
    gpumem_dtype_field(d, 0, &n0, NULL, NULL, NULL, NULL);
    gpumem_dtype_field(d, 1, &n1, NULL, NULL, NULL, NULL);
    gpumem_dtype_field(d, 2, &n2, NULL, NULL, NULL, NULL);
    ok(n0 && n1 && n2 && strcmp(n0, "a'b") == 0 && strcmp(n1, "t\tx") == 0 && strcmp(n2, "A\xc3\xa9\\") == 0,
       "escapes are decoded (\\' \\t \\x41 \\u00e9 as UTF-8, \\\\)");
    is_str(descr_of(d), "[(\"a'b\", '<f4'), ('t\\tx', '<i2'), ('A\xc3\xa9\\\\', '|u1'), ('q\"', '|u1')]",
           "and written back as Python's repr writes them");
    ok(round_trips(d), "names with escapes round-trip");
    gpumem_dtype_release(d);
    d = NULL;
    is_int(gpumem_dtype_from_descr("[('\\N{x}', '<f4')]", &d), GPUMEM_ERROR_INVALID_DTYPE,
           "a named escape \\N{x} is refused, not kept as text");
    like(gpumem_last_error(), "named escape", "the message says why");
    ok(d == NULL, "and makes no dtype");
    is_int(gpumem_dtype_from_descr("[('\\N{LATIN SMALL LETTER E WITH ACUTE}', '<f4')]", &d),
           GPUMEM_ERROR_INVALID_DTYPE, "so is a valid Unicode name");

    /* Names with characters str.isprintable() rejects: written as repr()
     * writes them (expected strings from Python 3.11's repr). */
    static const struct {
        const char *name, *descr;
    } unprintable[] = {
        {"\xc2\xa0", "[('\x5cxa0', '<f4')]"},
        {"\xe2\x80\x8b", "[('\x5cu200b', '<f4')]"},
        {"\xe2\x80\xa8", "[('\x5cu2028', '<f4')]"},
        {"\xc2\xad", "[('\x5cxad', '<f4')]"},
        {"\xee\x80\x80", "[('\x5cue000', '<f4')]"},
        {"a\xc2\xa0" "b", "[('a\x5cxa0b', '<f4')]"},
        {"\xf4\x8f\xbf\xbf", "[('\x5cU0010ffff', '<f4')]"},
        {"\xf0\x9f\x98\x80", "[('\xf0\x9f\x98\x80', '<f4')]"},
        {"\xc2\x85", "[('\x5cx85', '<f4')]"},
        {"\xe3\x80\x80", "[('\x5cu3000', '<f4')]"},
        {"\xc3\xa9t\xc3\xa9", "[('\xc3\xa9t\xc3\xa9', '<f4')]"},
        {"\xf3\xa0\x80\x81", "[('\x5cU000e0001', '<f4')]"},
        {"x\xe2\x80\xa9'", "[(\x22x\x5cu2029'\x22, '<f4')]"},        /* An encoded surrogate is no character: its bytes stay as they are
         * (the reader refuses the escape \udbad); the fuzzer found it. */
        {"\xed\xae\xad", "[('\xed\xae\xad', '<f4')]"},
        /* A byte F5..FF starts no sequence: it and what follows stay bytes
         * (once read as the start of three, \uf28a; the fuzzer found it). */
        {"\xff\x8a\x8a", "[('\xff\x8a\x8a', '<f4')]"},
        {"\xf5\x80\x80\x80", "[('\xf5\x80\x80\x80', '<f4')]"},
    };
    for (size_t i = 0; i < sizeof unprintable / sizeof unprintable[0]; i++) {
        gpumem_field f = {unprintable[i].name, gpumem_dtype_builtin(GPUMEM_FLOAT32), -1, 0, NULL};
        gpumem_dtype *r = NULL;
        char what[96];
        snprintf(what, sizeof what, "name %zu: the descr is what repr() writes", i);
        if (gpumem_dtype_record_create(&f, 1, GPUMEM_RECORD_PACKED, 0, &r) != GPUMEM_OK) {
            ok(0, "%s (%s)", what, gpumem_last_error());
            continue;
        }
        is_str(descr_of(r), unprintable[i].descr, what);
        ok(round_trips(r), "name %zu: and it parses back to the same name", i);
        gpumem_dtype_release(r);
    }

    /* Gaps of any type are padding; a record of only padding is |Vn. */
    d = NULL;
    ok(gpumem_dtype_from_descr("[('', '|V4'), ('', '<f8')]", &d) == GPUMEM_OK &&
           strcmp(descr_of(d), "[('', '|V12')]") == 0,
       "unnamed entries are padding, merged when written");
    gpumem_dtype_release(d);

    static const struct {
        const char *s, *why;
    } bad[] = {
        {"", "empty"},
        {"   ", "empty"},
        {"[", "expected '(' to start a field"},
        {"[(", "expected a quoted string"},
        {"[('a')]", "expected ',' after the field name"},
        {"[('a', '<f4'", "expected ',' or ')'"},
        {"[('a', '<f4') ('b', '<f4')]", "expected ',' or ']'"},
        {"[('a', 'f4')]", "field 'a': typestr \"f4\""},
        {"[('a', '<q4')]", "unknown kind 'q'"},
        {"[('a', '<f4', (-1,))]", "cannot be negative"},
        {"[('a', '<f4', (2 3))]", "expected ',' or ')' in a sub-array shape"},
        {"[('a', '<f4', (1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1))]", "at most 32"},
        {"[('a', '<f4', (99999999999999999999,))]", "too large"},
        {"[('a', '<f4', x)]", "expected a sub-array extent"},
        {"[('a', '<f4')] x", "trailing characters"},
        {"[('a', '<f4')]]", "trailing characters"},
        {"[('a, '<f4')]", "expected ',' after the field name"},
        {"[('a', '<f4), ('b', '<f4')]", "typestr \"<f4), (\": trailing characters"},
        {"[('abc", "unterminated string"},
        {"[('a', '<f4'), ('a', '<i4')]", "duplicate"},
        {"[(1, '<f4')]", "expected a quoted string"},
        {"[('a', 4)]", "expected a typestr or a list"},
        {"[('a\\x00', '<f4')]", "NUL"},
        {"[('a\\x4', '<f4')]", "hexadecimal"},
        {"[('a\\ud800', '<f4')]", "not a Unicode character"},
        {"[('a', '<f4', (3,), 1)]", "expected ')' to end the field"},
        {"<f4 x", "trailing characters"},
        {"{'a': '<f4'}", "byte-order character"},
    };
    for (size_t i = 0; i < NF(bad); i++) {
        gpumem_dtype *out = (gpumem_dtype *)(uintptr_t)1;
        char name[200];
        snprintf(name, sizeof name, "descr #%zu is refused: %s", i, bad[i].why);
        fails(gpumem_dtype_from_descr(bad[i].s, &out), GPUMEM_ERROR_INVALID_DTYPE, bad[i].why, NULL, name);
        if (out != (gpumem_dtype *)(uintptr_t)1)
            diag("the output was written on failure");
    }
    like(gpumem_last_error(), "\"{'a': '<f4'}\"", "the message quotes the descr");
    gpumem_dtype_from_descr("[('a', '<f4'), ('b' '<f4')]", &d);
    like(gpumem_last_error(), "at character 20", "the message says where");

    /* A hostile descr nested deeper than the limit fails cleanly. */
    char deep[2048] = "";
    for (int i = 0; i < 70; i++)
        strcat(deep, "[('n', ");
    strcat(deep, "'|u1'");
    for (int i = 0; i < 70; i++)
        strcat(deep, ")]");
    fails(gpumem_dtype_from_descr(deep, &d), GPUMEM_ERROR_INVALID_DTYPE, "64 levels", NULL,
          "a descr nested 70 deep is refused");
}

/* ---- descr writing: buffers, out-of-order fields -------------------------------------- */

void test_descr_buffers(void)
{
    const gpumem_dtype *r = keep[0]; /* [('a', '|u1'), ('', '|V7'), ('b', '<f8')]: 42 bytes */
    char buf[64];
    memset(buf, 'z', sizeof buf);
    ok(gpumem_dtype_descr(r, buf, 42) == GPUMEM_OK && strcmp(buf, "[('a', '|u1'), ('', '|V7'), ('b', '<f8')]") == 0,
       "the descr fits exactly in 42 bytes");
    memset(buf, 'z', sizeof buf);
    fails(gpumem_dtype_descr(r, buf, 41), GPUMEM_ERROR_INVALID_VALUE, "needs 42 bytes", NULL,
          "41 bytes are too few: the message says 42 are needed");
    ok(buf[0] == '\0' && buf[41] == 'z', "the short buffer holds \"\" and nothing is written past it");
    memset(buf, 'z', sizeof buf);
    fails(gpumem_dtype_descr(T("<f4"), buf, 10), GPUMEM_ERROR_INVALID_VALUE, "needs 14 bytes", NULL,
          "a builtin's descr needs 14 bytes");

    /* NumPy gives no descr for fields out of offset order; neither do we. */
    const gpumem_dtype *f4 = T("<f4");
    gpumem_field rev[] = {FO("b", f4, 4), FO("a", f4, 0)};
    gpumem_dtype *d = record(rev, 2, GPUMEM_RECORD_PACKED, 0);
    const char *name = NULL;
    gpumem_dtype_field(d, 0, &name, NULL, NULL, NULL, NULL);
    ok(name != NULL && strcmp(name, "b") == 0, "fields keep the order they were given in");
    memset(buf, 'z', sizeof buf);
    fails(gpumem_dtype_descr(d, buf, sizeof buf), GPUMEM_ERROR_INVALID_DTYPE, "field 'a'", "out-of-order",
          "a record with out-of-order fields has no descr (as in NumPy)");
    ok(buf[0] == '\0', "and the buffer holds \"\"");
    gpumem_dtype_release(d);
}

/* ---- round trips of many records -------------------------------------------------------- */

static uint64_t rng = 0x9e3779b97f4a7c15u;

static unsigned rnd(unsigned n)
{
    return (unsigned)(xorshift64(&rng) % n);
}

/* A random record: any builtin in either order, raw bytes, nested records,
 * sub-arrays, gaps from explicit offsets, trailing padding. */
static gpumem_dtype *random_record(int depth)
{
    static const char *const ts[] = {"|b1", "|i1", "<i2", ">i2", "<i4", ">i4", "<i8", ">i8", "|u1", "<u2",
                                     ">u4", "<u8", "<f2", ">f2", "<f4", ">f4", "<f8", ">f8", "<c8", ">c16"};
    gpumem_field f[6];
    gpumem_dtype *owned[6] = {0};
    char names[6][24]; /* room for any size_t: -Wformat-truncation */
    int64_t shapes[6][3];
    size_t n = rnd(6);
    gpumem_record_layout layout = rnd(2) ? GPUMEM_RECORD_ALIGNED : GPUMEM_RECORD_PACKED;
    int64_t at = 0;
    for (size_t i = 0; i < n; i++) {
        snprintf(names[i], sizeof names[i], "f%zu", i);
        const gpumem_dtype *dt;
        unsigned pick = rnd(10);
        if (pick == 0 && depth < 3) {
            dt = owned[i] = random_record(depth + 1);
        } else if (pick == 1) {
            char v[16];
            snprintf(v, sizeof v, "|V%u", 1 + rnd(5));
            gpumem_dtype_from_typestr(v, &owned[i]);
            dt = owned[i];
        } else {
            dt = T(ts[rnd(NF(ts))]);
        }
        int ndim = rnd(4) == 0 ? (int)(1 + rnd(3)) : 0;
        for (int k = 0; k < ndim; k++)
            shapes[i][k] = rnd(4);
        f[i] = (gpumem_field){names[i], dt, -1, ndim, shapes[i]};
        size_t size = 0, align = 1;
        gpumem_dtype_itemsize(dt, &size);
        gpumem_dtype_alignment(dt, &align);
        for (int k = 0; k < ndim; k++)
            size *= (size_t)shapes[i][k];
        if (rnd(3) == 0) { /* an explicit offset with a gap */
            int64_t off = at + rnd(9);
            if (layout == GPUMEM_RECORD_ALIGNED)
                off = (off + (int64_t)align - 1) / (int64_t)align * (int64_t)align;
            f[i].offset = off;
            at = off + (int64_t)size;
        } else {
            if (layout == GPUMEM_RECORD_ALIGNED)
                at = (at + (int64_t)align - 1) / (int64_t)align * (int64_t)align;
            at += (int64_t)size;
        }
    }
    size_t itemsize = 0;
    if (rnd(3) == 0)
        itemsize = (size_t)at + rnd(5) * 8 + 8;
    gpumem_dtype *r = NULL;
    if (gpumem_dtype_record_create(f, n, layout, itemsize, &r) != GPUMEM_OK && itemsize != 0) {
        /* An aligned itemsize that is no multiple of the alignment: let it be computed. */
        gpumem_dtype_record_create(f, n, layout, 0, &r);
    }
    for (size_t i = 0; i < n; i++)
        gpumem_dtype_release(owned[i]); /* the record holds its own references */
    return r;
}

void test_round_trips(void)
{
    int all = 1, made = 0;
    for (int i = 0; i < 400; i++) {
        gpumem_dtype *r = random_record(0);
        if (r == NULL) {
            diag("random record %d: %s", i, gpumem_last_error());
            all = 0;
            continue;
        }
        made++;
        if (!round_trips(r)) {
            all = 0;
            diag("random record %d does not round-trip", i);
        }
        gpumem_dtype_release(r);
    }
    ok(all && made == 400, "400 random records (nested, aligned, sub-arrays, gaps, padding) round-trip");

    int kept_ok = 1;
    for (size_t i = 0; i < nkeep; i++) {
        char buf[8192];
        /* The one with out-of-order fields has no descr. */
        if (gpumem_dtype_descr(keep[i], buf, sizeof buf) == GPUMEM_OK && !round_trips(keep[i]))
            kept_ok = 0;
    }
    ok(kept_ok, "every NumPy example record round-trips");
}
