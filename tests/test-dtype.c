/* Dtypes: the builtins in both byte orders, raw bytes, records (packed and
 * aligned, nested, sub-arrays, gaps), typestr and descr against NumPy's own
 * answers, errors, lifetimes and threads.
 * This file: main, the helpers, builtins, typestr, lifetime, threads and
 * NULL arguments; dtype-records.c: records (NumPy's layouts, accessors,
 * errors, descr parsing and writing, round trips).
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
#include "dtype-test.h"

static char little(void)
{
    const uint16_t one = 1;
    return *(const unsigned char *)&one == 1;
}

/* A builtin from its typestr (static: never released). */
const gpumem_dtype *T(const char *typestr)
{
    gpumem_dtype *d = NULL;
    if (gpumem_dtype_from_typestr(typestr, &d) != GPUMEM_OK)
        bail_out("typestr %s: %s", typestr, gpumem_last_error());
    return d;
}

gpumem_dtype *record(const gpumem_field *fields, size_t n, gpumem_record_layout layout, size_t itemsize)
{
    gpumem_dtype *d = NULL;
    if (gpumem_dtype_record_create(fields, n, layout, itemsize, &d) != GPUMEM_OK)
        diag("record_create failed: %s", gpumem_last_error());
    return d;
}

static char descr_buf[8192];

const char *descr_of(const gpumem_dtype *d)
{
    if (d == NULL || gpumem_dtype_descr(d, descr_buf, sizeof descr_buf) != GPUMEM_OK)
        snprintf(descr_buf, sizeof descr_buf, "(error: %s)", gpumem_last_error());
    return descr_buf;
}

const char *typestr_of(const gpumem_dtype *d)
{
    static char buf[32];
    if (d == NULL || gpumem_dtype_typestr(d, buf, sizeof buf) != GPUMEM_OK)
        snprintf(buf, sizeof buf, "(error)");
    return buf;
}

/* parse(format(d)) is equal to d, and formats to the same string. */
int round_trips(const gpumem_dtype *d)
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
void check_record(const char *what, const gpumem_dtype *d, size_t n, const int64_t *offsets,
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
void fails(gpumem_status got, gpumem_status want, const char *needle1, const char *needle2,
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
