/* Dtypes: the builtins in both byte orders, raw bytes, records (packed and
 * aligned, nested, sub-arrays, gaps), typestr and descr against NumPy's own
 * answers, errors, lifetimes and threads.
 *
 * The NumPy answers below are what NumPy 1.24 gives for the dtype written in
 * each comment (np.dtype(...).fields offsets, .itemsize, .alignment and
 * .descr): align=True places a field at the next multiple of its alignment
 * (a complex's is its component's, a packed record's is 1) and rounds the
 * size up to the largest; align=False packs fields and has alignment 1;
 * descr fills every gap and the trailing padding with ('', '|Vn'). */
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

static char little(void)
{
    const uint16_t one = 1;
    return *(const unsigned char *)&one == 1;
}

/* A builtin from its typestr (static: never released). */
static const gpumem_dtype *T(const char *typestr)
{
    gpumem_dtype *d = NULL;
    if (gpumem_dtype_from_typestr(typestr, &d) != GPUMEM_OK)
        bail_out("typestr %s: %s", typestr, gpumem_last_error());
    return d;
}

#define F(name, dt) ((gpumem_field){(name), (dt), -1, 0, NULL})
#define FO(name, dt, off) ((gpumem_field){(name), (dt), (off), 0, NULL})
#define FS(name, dt, n, ...) ((gpumem_field){(name), (dt), -1, (n), (const int64_t[]){__VA_ARGS__}})
#define NF(a) (sizeof(a) / sizeof((a)[0]))

static gpumem_dtype *record(const gpumem_field *fields, size_t n, gpumem_record_layout layout, size_t itemsize)
{
    gpumem_dtype *d = NULL;
    if (gpumem_dtype_record_create(fields, n, layout, itemsize, &d) != GPUMEM_OK)
        diag("record_create failed: %s", gpumem_last_error());
    return d;
}

static char descr_buf[8192];

static const char *descr_of(const gpumem_dtype *d)
{
    if (d == NULL || gpumem_dtype_descr(d, descr_buf, sizeof descr_buf) != GPUMEM_OK)
        snprintf(descr_buf, sizeof descr_buf, "(error: %s)", gpumem_last_error());
    return descr_buf;
}

static const char *typestr_of(const gpumem_dtype *d)
{
    static char buf[32];
    if (d == NULL || gpumem_dtype_typestr(d, buf, sizeof buf) != GPUMEM_OK)
        snprintf(buf, sizeof buf, "(error)");
    return buf;
}

/* parse(format(d)) is equal to d, and formats to the same string. */
static int round_trips(const gpumem_dtype *d)
{
    char first[8192];
    if (d == NULL || gpumem_dtype_descr(d, first, sizeof first) != GPUMEM_OK)
        return 0;
    gpumem_dtype *back = NULL;
    if (gpumem_dtype_from_descr(first, &back) != GPUMEM_OK) {
        diag("from_descr(%s): %s", first, gpumem_last_error());
        return 0;
    }
    int good = gpumem_dtype_equal(d, back) && strcmp(descr_of(back), first) == 0;
    if (!good)
        diag("%s came back as %s", first, descr_of(back));
    gpumem_dtype_release(back);
    return good;
}

/* A record's layout against NumPy's answer, its descr against NumPy's
 * string, and its round trip: three results. */
static void check_record(const char *what, const gpumem_dtype *d, size_t n, const int64_t *offsets,
                         size_t itemsize, size_t alignment, const char *descr)
{
    size_t count = 99, size = 0, align = 0;
    int good = d != NULL && gpumem_dtype_field_count(d, &count) == GPUMEM_OK && count == n &&
               gpumem_dtype_itemsize(d, &size) == GPUMEM_OK && size == itemsize &&
               gpumem_dtype_alignment(d, &align) == GPUMEM_OK && align == alignment;
    for (size_t i = 0; good && i < n; i++) {
        int64_t off = -7;
        good = gpumem_dtype_field(d, i, NULL, NULL, &off, NULL, NULL) == GPUMEM_OK && off == offsets[i];
        if (!good)
            diag("field %zu at %" PRId64 ", expected %" PRId64, i, off, offsets[i]);
    }
    if (!ok(good, "%s: offsets, itemsize %zu, alignment %zu as NumPy", what, itemsize, alignment))
        diag("got %zu fields, itemsize %zu, alignment %zu", count, size, align);
    char name[256];
    snprintf(name, sizeof name, "%s: descr as NumPy writes it", what);
    is_str(descr_of(d), descr, name);
    ok(round_trips(d), "%s: parse(descr) is equal and formats the same", what);
}

/* A call's status and message: one result. */
static void fails(gpumem_status got, gpumem_status want, const char *needle1, const char *needle2,
                  const char *what)
{
    const char *msg = gpumem_last_error();
    int good = got == want && strstr(msg, needle1) != NULL && (needle2 == NULL || strstr(msg, needle2) != NULL);
    if (!ok(good, "%s", what))
        diag("status %s (want %s), message: %s", gpumem_status_string(got), gpumem_status_string(want), msg);
}

/* ---- builtins ---------------------------------------------------------------------- */

static void test_builtins(void)
{
    static const struct {
        gpumem_type type;
        const char *ts; /* '.' stands for the native order */
        size_t size, align;
    } b[] = {
        {GPUMEM_BOOL, "|b1", 1, 1},       {GPUMEM_INT8, "|i1", 1, 1},        {GPUMEM_INT16, ".i2", 2, 2},
        {GPUMEM_INT32, ".i4", 4, 4},      {GPUMEM_INT64, ".i8", 8, 8},       {GPUMEM_UINT8, "|u1", 1, 1},
        {GPUMEM_UINT16, ".u2", 2, 2},     {GPUMEM_UINT32, ".u4", 4, 4},      {GPUMEM_UINT64, ".u8", 8, 8},
        {GPUMEM_FLOAT16, ".f2", 2, 2},    {GPUMEM_FLOAT32, ".f4", 4, 4},     {GPUMEM_FLOAT64, ".f8", 8, 8},
        {GPUMEM_COMPLEX64, ".c8", 8, 4},  {GPUMEM_COMPLEX128, ".c16", 16, 8},
    };
    char nat = little() ? '<' : '>';
    gpumem_byteorder native = little() ? GPUMEM_BYTEORDER_LITTLE : GPUMEM_BYTEORDER_BIG;
    int all_descr = 1, all_static = 1, all_swapped = 1;
    for (size_t i = 0; i < NF(b); i++) {
        const gpumem_dtype *d = gpumem_dtype_builtin(b[i].type);
        char want[8];
        snprintf(want, sizeof want, "%s", b[i].ts);
        if (want[0] == '.')
            want[0] = nat;
        char name[64];
        snprintf(name, sizeof name, "builtin %d has typestr %s", (int)b[i].type, want);
        is_str(typestr_of(d), want, name);
        size_t size = 0, align = 0;
        gpumem_type type = GPUMEM_VOID;
        gpumem_byteorder order = 99;
        gpumem_dtype_itemsize(d, &size);
        gpumem_dtype_alignment(d, &align);
        gpumem_dtype_type(d, &type, &order);
        ok(size == b[i].size && align == b[i].align && type == b[i].type &&
               order == (b[i].size == 1 ? GPUMEM_BYTEORDER_NA : native),
           "%s: itemsize %zu, alignment %zu, type and order", want, b[i].size, b[i].align);

        /* Its descr is [('', '<f4')], which parses back to the same object. */
        char dd[64];
        snprintf(dd, sizeof dd, "[('', '%s')]", want);
        gpumem_dtype *back = NULL;
        if (strcmp(descr_of(d), dd) != 0 || gpumem_dtype_from_descr(dd, &back) != GPUMEM_OK || back != d)
            all_descr = 0;
        /* Static: the same object every time, in the native and the other order. */
        gpumem_dtype *again = NULL;
        if (gpumem_dtype_from_typestr(want, &again) != GPUMEM_OK || again != d || gpumem_dtype_builtin(b[i].type) != d)
            all_static = 0;
        want[0] = b[i].size == 1 ? '|' : nat == '<' ? '>' : '<';
        gpumem_dtype *sw = NULL, *sw2 = NULL;
        gpumem_dtype_from_typestr(want, &sw);
        gpumem_dtype_from_typestr(want, &sw2);
        if (sw == NULL || sw != sw2 || strcmp(typestr_of(sw), want) != 0 ||
            gpumem_dtype_equal(sw, d) != (b[i].size == 1) || !round_trips(sw))
            all_swapped = 0;
    }
    ok(all_descr, "every builtin's descr is [('', typestr)] and parses back to the same static object");
    ok(all_static, "every builtin is one static object: gpumem_dtype_builtin() and its typestr give it");
    ok(all_swapped, "every builtin in the other byte order: static, formats, differs from native (except 1-byte)");

    ok(gpumem_dtype_builtin(GPUMEM_RECORD) == NULL && gpumem_dtype_builtin(GPUMEM_VOID) == NULL,
       "no builtin for GPUMEM_RECORD or GPUMEM_VOID");
    ok(gpumem_dtype_builtin((gpumem_type)99) == NULL, "no builtin for an unknown value");
    like(gpumem_last_error(), "99 is not a builtin type", "the message names the value");

    /* Retain and release are no-ops on statics: many releases later it works. */
    const gpumem_dtype *f4 = gpumem_dtype_builtin(GPUMEM_FLOAT32);
    int noop = gpumem_dtype_retain(f4) == GPUMEM_OK;
    for (int i = 0; i < 10; i++)
        noop &= gpumem_dtype_release(f4) == GPUMEM_OK;
    size_t size = 0;
    ok(noop && gpumem_dtype_itemsize(f4, &size) == GPUMEM_OK && size == 4 && gm_dtype_is_static(f4) &&
           gm_dtype_size(f4) == 4,
       "retain/release on a builtin are no-ops");
}

/* ---- typestr ------------------------------------------------------------------------ */

static void test_typestr(void)
{
    /* Parse then format: NumPy's __array_interface__ typestr. */
    static const char *const same[] = {"<f4", ">i8", "|b1", "|u1", "<c16", ">c8", "<f2", ">u2", "|i1", "<u8",
                                       ">f8", "|V16", "|V1"};
    int all = 1;
    for (size_t i = 0; i < NF(same); i++) {
        gpumem_dtype *d = NULL;
        if (gpumem_dtype_from_typestr(same[i], &d) != GPUMEM_OK || strcmp(typestr_of(d), same[i]) != 0) {
            diag("%s -> %s", same[i], typestr_of(d));
            all = 0;
        }
        gpumem_dtype_release(d);
    }
    ok(all, "typestrs round-trip: <f4 >i8 |b1 |u1 <c16 >c8 <f2 >u2 |i1 <u8 >f8 |V16 |V1");

    gpumem_dtype *d = NULL;
    gpumem_type type;
    gpumem_byteorder order;
    gpumem_dtype_from_typestr(">i8", &d);
    gpumem_dtype_type(d, &type, &order);
    ok(type == GPUMEM_INT64 && order == GPUMEM_BYTEORDER_BIG, ">i8 is a big-endian GPUMEM_INT64");
    gpumem_dtype_from_typestr("<f4", &d);
    gpumem_dtype_type(d, &type, &order);
    ok(type == GPUMEM_FLOAT32 && order == GPUMEM_BYTEORDER_LITTLE, "<f4 is a little-endian GPUMEM_FLOAT32");
    ok(!gpumem_dtype_equal(T("<f4"), T(">f4")), "<f4 and >f4 differ");
    ok(!gpumem_dtype_equal(T("<i4"), T("<u4")) && !gpumem_dtype_equal(T("<i4"), T("<f4")) &&
           !gpumem_dtype_equal(T("<i4"), T("<i8")),
       "i4, u4, f4 and i8 differ");

    gpumem_dtype_from_typestr("=f8", &d);
    is_str(typestr_of(d), little() ? "<f8" : ">f8", "=f8 is native and is written with an explicit order");
    ok(d == gpumem_dtype_builtin(GPUMEM_FLOAT64), "=f8 is the native builtin object");
    is_str(typestr_of(T("<u1")), "|u1", "<u1 is written |u1 (one byte has no order)");
    is_str(typestr_of(T(">b1")), "|b1", ">b1 is written |b1");
    is_str(typestr_of(T("=i1")), "|i1", "=i1 is written |i1");

    gpumem_dtype *v = NULL;
    size_t size = 0, align = 0;
    ok(gpumem_dtype_from_typestr("<V4", &v) == GPUMEM_OK && strcmp(typestr_of(v), "|V4") == 0,
       "<V4 is raw bytes, written |V4");
    gpumem_dtype_release(v);
    gpumem_dtype_from_typestr("|V16", &v);
    gpumem_dtype_type(v, &type, &order);
    gpumem_dtype_itemsize(v, &size);
    gpumem_dtype_alignment(v, &align);
    ok(type == GPUMEM_VOID && order == GPUMEM_BYTEORDER_NA && size == 16 && align == 1 && !gm_dtype_is_static(v),
       "|V16: GPUMEM_VOID, no order, 16 bytes, alignment 1, allocated");
    is_str(descr_of(v), "[('', '|V16')]", "|V16's descr, as NumPy's");
    gpumem_dtype *v2 = NULL, *v8 = NULL;
    gpumem_dtype_from_typestr("|V16", &v2);
    gpumem_dtype_from_typestr("|V8", &v8);
    ok(v2 != v && gpumem_dtype_equal(v, v2) && !gpumem_dtype_equal(v, v8), "|V16 equals |V16, not |V8");
    ok(gpumem_dtype_retain(v) == GPUMEM_OK && gpumem_dtype_release(v) == GPUMEM_OK &&
           strcmp(typestr_of(v), "|V16") == 0,
       "raw bytes are reference-counted: retain then release keeps them");
    gpumem_dtype_release(v);
    gpumem_dtype_release(v2);
    gpumem_dtype_release(v8);

    /* Every class of malformed typestr: the message quotes it and says why. */
    static const struct {
        const char *s, *quoted, *why;
    } bad[] = {
        {"", "\"\"", "empty"},
        {"f4", "\"f4\"", "byte-order character"},
        {" <f4", "\" <f4\"", "byte-order character"},
        {"<", "\"<\"", "no kind"},
        {"<x4", "\"<x4\"", "unknown kind 'x'"},
        {"<U4", "\"<U4\"", "unknown kind 'U'"},
        {"<f", "\"<f\"", "no item size"},
        {"<fx", "\"<fx\"", "decimal number"},
        {"<f-4", "\"<f-4\"", "decimal number"},
        {"<f3", "\"<f3\"", "no 3-byte type"},
        {"<f16", "\"<f16\"", "no 16-byte type"},
        {"|b2", "\"|b2\"", "no 2-byte type"},
        {"<c4", "\"<c4\"", "no 4-byte type"},
        {"<i16", "\"<i16\"", "sizes: 1, 2, 4 or 8"},
        {"<f4 ", "\"<f4 \"", "trailing characters"},
        {"<f4x", "\"<f4x\"", "trailing characters"},
        {"|i4", "\"|i4\"", "only for one-byte types"},
        {"|f8", "\"|f8\"", "only for one-byte types"},
        {"|V0", "\"|V0\"", "at least 1"},
        {"|V99999999999999999999999", "\"|V99999999999999999999999\"", "too large"},
        {"<\x01", "\"<\\x01\"", "unknown kind"},
    };
    for (size_t i = 0; i < NF(bad); i++) {
        gpumem_dtype *out = (gpumem_dtype *)(uintptr_t)1;
        char name[96];
        snprintf(name, sizeof name, "typestr %s is refused: %s", bad[i].quoted, bad[i].why);
        gpumem_status st = gpumem_dtype_from_typestr(bad[i].s, &out);
        fails(st, GPUMEM_ERROR_INVALID_DTYPE, bad[i].quoted, bad[i].why, name);
        if (out != (gpumem_dtype *)(uintptr_t)1)
            diag("the output was written on failure");
    }

    /* Buffers: exact fit, one short (needs 4 bytes, holds ""), size 0. */
    char buf[8] = "zzzzzzz";
    ok(gpumem_dtype_typestr(T("<f4"), buf, 4) == GPUMEM_OK && strcmp(buf, "<f4") == 0, "typestr fits in 4 bytes");
    memcpy(buf, "zzzzzzz", 8);
    fails(gpumem_dtype_typestr(T("<f4"), buf, 3), GPUMEM_ERROR_INVALID_VALUE, "needs 4 bytes", "3 bytes",
          "a 3-byte buffer is too small for <f4: the message says 4 bytes are needed");
    is_str(buf, "", "a buffer too small holds \"\"");
    memcpy(buf, "zzzzzzz", 8);
    fails(gpumem_dtype_typestr(T("<f4"), buf, 0), GPUMEM_ERROR_INVALID_VALUE, "needs 4 bytes", NULL,
          "a 0-byte buffer is refused");
    is_str(buf, "zzzzzzz", "a 0-byte buffer is left alone");
}

/* ---- records: NumPy's layouts ---------------------------------------------------------- */

static gpumem_dtype *keep[64];
static size_t nkeep;

static const gpumem_dtype *kept(gpumem_dtype *d)
{
    if (d != NULL && nkeep < NF(keep))
        keep[nkeep++] = d;
    return d;
}

static void test_layouts(void)
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

static void test_accessors(void)
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

static void test_record_errors(void)
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

static void test_descr_parse(void)
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

static void test_descr_buffers(void)
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

static void test_round_trips(void)
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

/* ---- lifetime -------------------------------------------------------------------------- */

static void test_lifetime(void)
{
    gpumem_dtype *inner = NULL, *outer = NULL;
    gpumem_dtype_from_descr("[('a', '|u1'), ('b', '>i2')]", &inner);
    gpumem_field f[] = {F("x", T("<f8")), FS("in", inner, 1, 2)};
    gpumem_dtype_record_create(f, 2, GPUMEM_RECORD_PACKED, 0, &outer);
    ok(atomic_load(&inner->refs) == 2, "a record holds a reference to a nested dtype");
    gpumem_dtype_release(inner); /* the caller's; the record's keeps it */
    const gpumem_dtype *fd = NULL;
    size_t size = 0;
    gpumem_dtype_field(outer, 1, NULL, &fd, NULL, NULL, NULL);
    gpumem_dtype_itemsize(fd, &size);
    ok(fd == inner && size == 3 && strcmp(descr_of(fd), "[('a', '|u1'), ('b', '>i2')]") == 0,
       "the nested dtype outlives the caller's release");
    is_str(descr_of(outer), "[('x', '<f8'), ('in', [('a', '|u1'), ('b', '>i2')], (2,))]",
           "the record still describes it");

    gpumem_dtype *v = NULL;
    gpumem_dtype_from_typestr("|V3", &v);
    gpumem_dtype_retain(v);
    gpumem_dtype_retain(v);
    ok(atomic_load(&v->refs) == 3, "retain counts");
    gpumem_dtype_release(v);
    gpumem_dtype_release(v);
    ok(atomic_load(&v->refs) == 1, "release counts down");
    gpumem_dtype_release(v);
    gpumem_dtype_release(outer); /* frees inner too: valgrind checks */
    ok(gpumem_dtype_release(NULL) == GPUMEM_OK, "releasing NULL is a no-op");
}

/* ---- threads --------------------------------------------------------------------------- */

#define THREADS 8
#define ROUNDS 20000

static void *hammer(void *arg)
{
    const gpumem_dtype *shared = arg;
    int good = 1;
    for (int i = 0; i < ROUNDS; i++) {
        gpumem_dtype_retain(shared);
        if (i % 1000 == 0) {
            /* Records that reference the shared one, made and dropped here. */
            gpumem_field f[] = {F("s", shared), F("t", gpumem_dtype_builtin(GPUMEM_INT32))};
            gpumem_dtype *r = NULL;
            if (gpumem_dtype_record_create(f, 2, GPUMEM_RECORD_ALIGNED, 0, &r) != GPUMEM_OK)
                good = 0;
            char buf[512];
            gpumem_dtype *back = NULL;
            if (gpumem_dtype_descr(r, buf, sizeof buf) != GPUMEM_OK || gpumem_dtype_from_descr(buf, &back) != GPUMEM_OK ||
                !gpumem_dtype_equal(r, back))
                good = 0;
            gpumem_dtype_release(back);
            gpumem_dtype_release(r);
        }
        gpumem_dtype_release(shared);
    }
    return good ? arg : NULL;
}

static void test_threads(void)
{
    gpumem_dtype *shared = NULL;
    gpumem_dtype_from_descr("[('p', '<f8', (3,)), ('id', '<i8')]", &shared);
    pthread_t t[THREADS];
    int started = 0;
    for (int i = 0; i < THREADS; i++)
        if (pthread_create(&t[i], NULL, hammer, shared) == 0)
            started++;
    int good = started == THREADS;
    for (int i = 0; i < started; i++) {
        void *r = NULL;
        pthread_join(t[i], &r);
        good &= r == shared;
    }
    ok(good, "%d threads retain, release and nest one dtype %d times each", THREADS, ROUNDS);
    ok(atomic_load(&shared->refs) == 1 && strcmp(descr_of(shared), "[('p', '<f8', (3,)), ('id', '<i8')]") == 0,
       "the count is back to 1 and the dtype is intact");
    gpumem_dtype_release(shared);
}

/* ---- NULL arguments -------------------------------------------------------------------- */

static void test_null(void)
{
    gpumem_dtype *d;
    const gpumem_dtype *f4 = T("<f4");
    char buf[16];
    size_t n;
    fails(gpumem_dtype_from_typestr(NULL, &d), GPUMEM_ERROR_NULL_ARGUMENT, "'typestr'", NULL, "from_typestr(NULL)");
    fails(gpumem_dtype_from_typestr("<f4", NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'dtype'", NULL,
          "from_typestr without an output");
    fails(gpumem_dtype_from_descr(NULL, &d), GPUMEM_ERROR_NULL_ARGUMENT, "'descr'", NULL, "from_descr(NULL)");
    fails(gpumem_dtype_from_descr("<f4", NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'dtype'", NULL,
          "from_descr without an output");
    fails(gpumem_dtype_typestr(NULL, buf, sizeof buf), GPUMEM_ERROR_NULL_ARGUMENT, "'dtype'", NULL, "typestr(NULL)");
    fails(gpumem_dtype_typestr(f4, NULL, 16), GPUMEM_ERROR_NULL_ARGUMENT, "'buf'", NULL, "typestr into NULL");
    fails(gpumem_dtype_descr(NULL, buf, sizeof buf), GPUMEM_ERROR_NULL_ARGUMENT, "'dtype'", NULL, "descr(NULL)");
    fails(gpumem_dtype_descr(f4, NULL, 16), GPUMEM_ERROR_NULL_ARGUMENT, "'buf'", NULL, "descr into NULL");
    fails(gpumem_dtype_itemsize(NULL, &n), GPUMEM_ERROR_NULL_ARGUMENT, "'dtype'", NULL, "itemsize(NULL)");
    fails(gpumem_dtype_itemsize(f4, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'itemsize'", NULL, "itemsize without output");
    fails(gpumem_dtype_alignment(NULL, &n), GPUMEM_ERROR_NULL_ARGUMENT, "'dtype'", NULL, "alignment(NULL)");
    fails(gpumem_dtype_alignment(f4, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'alignment'", NULL,
          "alignment without output");
    fails(gpumem_dtype_type(NULL, NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'dtype'", NULL, "type(NULL)");
    fails(gpumem_dtype_field_count(NULL, &n), GPUMEM_ERROR_NULL_ARGUMENT, "'dtype'", NULL, "field_count(NULL)");
    fails(gpumem_dtype_field_count(f4, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'count'", NULL,
          "field_count without output");
    fails(gpumem_dtype_field(NULL, 0, NULL, NULL, NULL, NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'dtype'", NULL,
          "field(NULL)");
    fails(gpumem_dtype_field_index(f4, NULL, &n), GPUMEM_ERROR_NULL_ARGUMENT, "'name'", NULL, "field_index(NULL name)");
    fails(gpumem_dtype_field_index(f4, "a", NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'index'", NULL,
          "field_index without output");
    fails(gpumem_dtype_retain(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'dtype'", NULL, "retain(NULL)");
}

/* GPUMEM_TYPE_OF / GPUMEM_DTYPE_OF: the builtin dtype of an expression's type (C11 _Generic). */
static void test_dtype_of(void)
{
    float f[4][6] = {{0}};
    double d = 0;
    int8_t i8 = 0;
    uint8_t u8 = 0;
    int16_t i16 = 0;
    uint16_t u16 = 0;
    int32_t i32 = 0;
    uint32_t u32 = 0;
    int64_t i64 = 0;
    uint64_t u64 = 0;
    long l = 0;
    unsigned long ul = 0;
    size_t z = 0;
    _Bool b = 0;
    float _Complex fc = 0;
    double _Complex dc = 0;
    signed char sc = 0;
    char c = 0;
    int n = 0;
    const float *p = &f[0][0];
    ok(GPUMEM_TYPE_OF(f[1][2]) == GPUMEM_FLOAT32 && GPUMEM_TYPE_OF(*p) == GPUMEM_FLOAT32 &&
           GPUMEM_TYPE_OF(d) == GPUMEM_FLOAT64 && GPUMEM_TYPE_OF(1.0) == GPUMEM_FLOAT64 &&
           GPUMEM_TYPE_OF(1.0f) == GPUMEM_FLOAT32,
       "GPUMEM_TYPE_OF: float and double, of an element, through a const pointer, of a literal");
    ok(GPUMEM_TYPE_OF(i8) == GPUMEM_INT8 && GPUMEM_TYPE_OF(u8) == GPUMEM_UINT8 && GPUMEM_TYPE_OF(i16) == GPUMEM_INT16 &&
           GPUMEM_TYPE_OF(u16) == GPUMEM_UINT16 && GPUMEM_TYPE_OF(i32) == GPUMEM_INT32 &&
           GPUMEM_TYPE_OF(u32) == GPUMEM_UINT32 && GPUMEM_TYPE_OF(i64) == GPUMEM_INT64 &&
           GPUMEM_TYPE_OF(u64) == GPUMEM_UINT64 && GPUMEM_TYPE_OF(sc) == GPUMEM_INT8 && GPUMEM_TYPE_OF(n) == GPUMEM_INT32,
       "GPUMEM_TYPE_OF: the <stdint.h> types and int");
    ok(GPUMEM_TYPE_OF(l) == (sizeof(long) == 8 ? GPUMEM_INT64 : GPUMEM_INT32) &&
           GPUMEM_TYPE_OF(ul) == (sizeof(long) == 8 ? GPUMEM_UINT64 : GPUMEM_UINT32) &&
           GPUMEM_TYPE_OF(z) == (sizeof(size_t) == 8 ? GPUMEM_UINT64 : GPUMEM_UINT32) &&
           GPUMEM_TYPE_OF(c) == ((char)-1 < 0 ? GPUMEM_INT8 : GPUMEM_UINT8),
       "GPUMEM_TYPE_OF: long, size_t and char by their size and sign");
    ok(GPUMEM_TYPE_OF(b) == GPUMEM_BOOL && GPUMEM_TYPE_OF(fc) == GPUMEM_COMPLEX64 &&
           GPUMEM_TYPE_OF(dc) == GPUMEM_COMPLEX128,
       "GPUMEM_TYPE_OF: _Bool and the complex types");
    int evaluated = 0;
    ok(GPUMEM_DTYPE_OF(f[0][0]) == gpumem_dtype_builtin(GPUMEM_FLOAT32) &&
           GPUMEM_DTYPE_OF(u16) == gpumem_dtype_builtin(GPUMEM_UINT16) &&
           GPUMEM_DTYPE_OF(evaluated++) == gpumem_dtype_builtin(GPUMEM_INT32) && evaluated == 0,
       "GPUMEM_DTYPE_OF gives the builtin dtype, without evaluating its argument");
    size_t itemsize = 0;
    ok(gpumem_dtype_itemsize(GPUMEM_DTYPE_OF(dc), &itemsize) == GPUMEM_OK && itemsize == sizeof dc,
       "its item size is the type's size");
}

int main(void)
{
    test_builtins();
    test_dtype_of();
    test_typestr();
    test_layouts();
    test_accessors();
    test_record_errors();
    test_descr_parse();
    test_descr_buffers();
    test_round_trips();
    test_lifetime();
    test_threads();
    test_null();
    for (size_t i = 0; i < nkeep; i++)
        gpumem_dtype_release(keep[i]);
    done_testing();
    return exit_status();
}
