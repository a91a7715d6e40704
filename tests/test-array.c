/* Array handles: making them, properties, views (slice, transpose, view,
 * reshape, ravel, split), element access, fill, lifetime and bad input. */
#include <stdlib.h>
#include <string.h>

#include <gpumem.h>

#include "arrays.h"
#include "tap.h"

static gpumem_context *ctx;
static const gpumem_dtype *f32, *i32, *f64, *u8;

int main(void)
{
    if (test_on_sim())
        setenv("GPUMEM_SIM_MEMORY", "64M", 1);
    if (gpumem_context_create_default(&ctx) != GPUMEM_OK)
        bail_out("no context: %s", gpumem_last_error());
    f32 = gpumem_dtype_builtin(GPUMEM_FLOAT32);
    i32 = gpumem_dtype_builtin(GPUMEM_INT32);
    f64 = gpumem_dtype_builtin(GPUMEM_FLOAT64);
    u8 = gpumem_dtype_builtin(GPUMEM_UINT8);

    /* ---- device_array and its properties */
    gpumem_array *d = NULL;
    int64_t shape[3] = {4, 5, 6};
    is_int(gpumem_device_array(ctx, 3, shape, NULL, f32, 'C', NULL, &d), GPUMEM_OK, "device_array 4x5x6 float32");
    int ndim = 0, c = 0, f = 0;
    int64_t got[3], strides[3], size = 0, nbytes = 0;
    gpumem_memory_kind kind = GPUMEM_MEMORY_HOST;
    gpumem_array_ndim(d, &ndim);
    gpumem_array_shape(d, got);
    gpumem_array_strides(d, strides);
    gpumem_array_size(d, &size);
    gpumem_array_nbytes(d, &nbytes);
    gpumem_array_kind(d, &kind);
    ok(ndim == 3 && got[0] == 4 && got[1] == 5 && got[2] == 6, "shape (4, 5, 6)");
    ok(strides[0] == 120 && strides[1] == 24 && strides[2] == 4, "C strides (120, 24, 4)");
    ok(size == 120 && nbytes == 480, "size 120, nbytes 480");
    ok(kind == GPUMEM_MEMORY_DEVICE, "a device array");
    gpumem_array_is_c_contiguous(d, &c);
    gpumem_array_is_f_contiguous(d, &f);
    ok(c && !f, "C- but not F-contiguous");
    uint64_t ptr = 0;
    void *hp = NULL;
    ok(gpumem_array_device_pointer(d, &ptr) == GPUMEM_OK && ptr != 0, "it has a device pointer");
    is_int(gpumem_array_host_pointer(d, &hp), GPUMEM_ERROR_INVALID_VALUE, "but no host pointer");
    gpumem_context *actx = NULL;
    gpumem_array_context(d, &actx);
    ok(actx == ctx, "it belongs to its context");

    gpumem_array *fa = NULL;
    is_int(gpumem_device_array(ctx, 3, shape, NULL, f32, 'F', NULL, &fa), GPUMEM_OK, "an F-ordered one");
    gpumem_array_strides(fa, strides);
    ok(strides[0] == 4 && strides[1] == 16 && strides[2] == 80, "F strides (4, 16, 80)");

    /* device_array_like keeps the stride order of a transposed source and is contiguous. */
    gpumem_array *t = NULL, *alike = NULL;
    int axes[3] = {2, 0, 1};
    is_int(gpumem_array_transpose(d, axes, &t), GPUMEM_OK, "transpose (2, 0, 1)");
    gpumem_array_shape(t, got);
    gpumem_array_strides(t, strides);
    ok(got[0] == 6 && got[1] == 4 && got[2] == 5 && strides[0] == 4 && strides[1] == 120 && strides[2] == 24,
       "the view's shape (6, 4, 5) and strides (4, 120, 24)");
    is_int(gpumem_device_array_like(NULL, t, NULL, &alike), GPUMEM_OK, "device_array_like of it");
    gpumem_array_strides(alike, strides);
    ok(strides[0] == 4 && strides[1] == 120 && strides[2] == 24, "keeps the stride order, contiguous");
    gpumem_array_release(alike);
    gpumem_array_release(t);

    /* ---- values through views */
    int32_t host[4][6];
    for (int i = 0; i < 24; i++)
        host[i / 6][i % 6] = i;
    gpumem_array *h = NULL, *dv = NULL;
    gpumem_host_array_wrap(host, 2, (int64_t[]){4, 6}, NULL, i32, &h);
    is_int(gpumem_to_device(ctx, h, NULL, 0, &dv), GPUMEM_OK, "to_device a 4x6 int32 array");
    int32_t back[24];
    ok(read_all(dv, back) && memcmp(back, host, sizeof host) == 0, "it reads back equal");

    gpumem_array *cols = NULL;
    gpumem_slice sl[2] = {GPUMEM_SLICE_ALL, {GPUMEM_SLICE_DEFAULT, GPUMEM_SLICE_DEFAULT, 2}};
    is_int(gpumem_array_slice(dv, sl, 2, &cols), GPUMEM_OK, "d[:, ::2]");
    int32_t cv[12];
    int good = read_all(cols, cv);
    for (int i = 0; i < 12; i++)
        good = good && cv[i] == host[i / 3][(i % 3) * 2];
    ok(good, "d[:, ::2] has the even columns");

    gpumem_array *rev = NULL;
    gpumem_slice rs[2] = {{GPUMEM_SLICE_DEFAULT, GPUMEM_SLICE_DEFAULT, -1}, {-1, 0, -2}};
    is_int(gpumem_array_slice(dv, rs, 2, &rev), GPUMEM_OK, "d[::-1, -1:0:-2]");
    int32_t rv[12];
    good = read_all(rev, rv);
    for (int i = 0; i < 12; i++)
        good = good && rv[i] == host[3 - i / 3][5 - (i % 3) * 2];
    ok(good, "negative steps read the right elements");

    int64_t idx[2] = {-1, 1};
    int32_t item = 0;
    is_int(gpumem_array_get_item(rev, idx, &item, NULL), GPUMEM_OK, "get_item with a negative index");
    is_int(item, host[0][3], "rev[-1, 1] == d[0, 3]");
    int32_t seven = 777;
    is_int(gpumem_array_set_item(cols, (int64_t[]){2, 1}, &seven, NULL), GPUMEM_OK, "set_item through a view");
    good = read_all(dv, back) && back[2 * 6 + 2] == 777;
    for (int i = 0; i < 24; i++)
        good = good && (i == 14 || back[i] == i);
    ok(good, "it wrote exactly d[2, 2]");

    /* ---- reshape and ravel */
    gpumem_array *r = NULL;
    int64_t ns[3] = {2, -1, 3};
    int64_t before = calls("cuMemAlloc");
    is_int(gpumem_array_reshape(dv, 3, ns, 'C', GPUMEM_NO_COPY, NULL, &r), GPUMEM_OK,
           "reshape (2, -1, 3) of a contiguous array");
    gpumem_array_shape(r, got);
    ok(got[1] == 4 && calls("cuMemAlloc") == before, "is a view of shape (2, 4, 3)");
    gpumem_array_release(r);
    /* d[:, ::2] flattens to one stride (8 bytes): NumPy gives a view. */
    is_int(gpumem_array_ravel(cols, 'C', GPUMEM_NO_COPY, NULL, &r), GPUMEM_OK, "ravel of d[:, ::2] is a view");
    gpumem_array_strides(r, strides);
    is_int(strides[0], 8, "...with stride 8");
    gpumem_array_release(r);
    gpumem_array *dT = NULL;
    gpumem_array_transpose(dv, NULL, &dT);
    is_int(gpumem_array_ravel(dT, 'C', GPUMEM_NO_COPY, NULL, &r), GPUMEM_ERROR_COPY_REQUIRED,
           "ravel of d.T with NO_COPY: a copy is required");
    is_int(gpumem_array_ravel(dT, 'C', 0, NULL, &r), GPUMEM_OK, "ravel of d.T otherwise copies");
    int32_t flat[24];
    good = read_all(r, flat);
    for (int i = 0; i < 24; i++)
        good = good && flat[i] == back[(i % 4) * 6 + i / 4];
    ok(good, "the copy has d.T's elements in C order");
    gpumem_array_release(r);
    gpumem_array_release(dT);
    is_int(gpumem_array_ravel(dv, 'F', 0, NULL, &r), GPUMEM_OK, "ravel('F') of a C array");
    int32_t fflat[24];
    good = read_all(r, fflat);
    for (int i = 0; i < 24; i++)
        good = good && fflat[i] == back[(i % 4) * 6 + i / 4];
    ok(good, "reads columns first");
    gpumem_array_release(r);
    is_int(gpumem_array_reshape(dv, 3, (int64_t[]){-1, -1, 2}, 'C', 0, NULL, &r), GPUMEM_ERROR_INVALID_RESHAPE,
           "two -1s are refused");
    is_int(gpumem_array_reshape(dv, 2, (int64_t[]){5, 5}, 'C', 0, NULL, &r), GPUMEM_ERROR_INVALID_RESHAPE,
           "a size change is refused");
    is_int(gpumem_array_reshape(dv, 2, (int64_t[]){6, 4}, 'Q', 0, NULL, &r), GPUMEM_ERROR_INVALID_ORDER,
           "a bad order character is refused");

    /* ---- split */
    gpumem_array *line = NULL, *pieces[4] = {NULL};
    size_t count = 0;
    gpumem_array_ravel(dv, 'C', 0, NULL, &line);
    is_int(gpumem_array_split(line, 10, pieces, 4, &count), GPUMEM_OK, "split 24 elements by 10");
    int64_t s0 = 0, s2 = 0;
    gpumem_array_size(pieces[0], &s0);
    gpumem_array_size(pieces[2], &s2);
    int32_t last[4];
    ok(count == 3 && s0 == 10 && s2 == 4 && read_all(pieces[2], last) && last[0] == 20 && last[3] == 23,
       "three pieces, the last of 4 elements holding 20..23");
    for (size_t i = 0; i < count; i++)
        gpumem_array_release(pieces[i]);
    is_int(gpumem_array_split(line, 0, pieces, 4, &count), GPUMEM_ERROR_INVALID_SECTION, "section 0 is refused");
    is_int(gpumem_array_split(line, -3, pieces, 4, &count), GPUMEM_ERROR_INVALID_SECTION,
           "a negative section is refused");
    is_int(gpumem_array_split(line, 5, pieces, 4, &count), GPUMEM_ERROR_INVALID_VALUE,
           "too little room for the pieces");
    is_int(count, 5, "...and the count says how many are needed");
    count = 0;
    is_int(gpumem_array_split(line, INT64_MAX, pieces, 4, &count), GPUMEM_OK,
           "split(INT64_MAX) of 24 elements: no overflow");
    int64_t whole = 0;
    ok(count == 1 && gpumem_array_size(pieces[0], &whole) == GPUMEM_OK && whole == 24,
       "one piece of all 24 elements");
    gpumem_array_release(pieces[0]);
    gpumem_array *two = NULL;
    gpumem_array_slice(line, (gpumem_slice[]){{0, 2, 1}}, 1, &two);
    count = 0;
    is_int(gpumem_array_split(two, INT64_MAX - 1, pieces, 1, &count), GPUMEM_OK,
           "split(INT64_MAX - 1) of 2 elements");
    ok(count == 1, "is one piece");
    gpumem_array_release(pieces[0]);
    gpumem_array_release(two);

    /* ---- steps at the ends of int64 */
    gpumem_array *last_only = NULL, *all24 = NULL;
    int64_t n1 = 0, n24 = 0;
    int32_t lastv[24];
    is_int(gpumem_array_slice(line, (gpumem_slice[]){{GPUMEM_SLICE_DEFAULT, GPUMEM_SLICE_DEFAULT, INT64_MIN + 1}},
                              1, &last_only), GPUMEM_OK, "step INT64_MIN + 1");
    ok(gpumem_array_size(last_only, &n1) == GPUMEM_OK && n1 == 1 && read_all(last_only, lastv) && lastv[0] == 23,
       "is the last element alone, as NumPy's x[::-2**63]");
    is_int(gpumem_array_slice(line, (gpumem_slice[]){{GPUMEM_SLICE_DEFAULT, GPUMEM_SLICE_DEFAULT, INT64_MIN}}, 1,
                              &all24), GPUMEM_OK, "step INT64_MIN (GPUMEM_SLICE_DEFAULT)");
    ok(gpumem_array_size(all24, &n24) == GPUMEM_OK && n24 == 24 && read_all(all24, lastv) && lastv[23] == 23,
       "is the omitted step, 1: the whole axis, as array.h documents");
    gpumem_array_release(last_only);
    gpumem_array_release(all24);

    /* ---- integer indices: d[1, 1:-1] drops axis 0, as NumPy's */
    {
        gpumem_array *dx = NULL, *row = NULL, *col = NULL, *one = NULL, *hrow = NULL;
        is_int(gpumem_to_device(ctx, h, NULL, 0, &dx), GPUMEM_OK, "a fresh 4x6 int32 device array");
        const gpumem_slice row_sl[2] = {GPUMEM_INDEX(1), {.start = 1, .stop = -1}};
        is_int(gpumem_array_slice(dx, row_sl, 2, &row), GPUMEM_OK, "d[1, 1:-1] with GPUMEM_INDEX(1)");
        int64_t rshape[GPUMEM_MAX_NDIM] = {0};
        gpumem_array_ndim(row, &ndim);
        gpumem_array_shape(row, rshape);
        ok(ndim == 1 && rshape[0] == 4, "is 1-D, of 4 elements");
        int32_t rowbuf[4] = {0}, newrow[4] = {-1, -2, -3, -4};
        gpumem_host_array_wrap(rowbuf, 1, (int64_t[]){4}, NULL, i32, &hrow);
        is_int(gpumem_copy_to_host(row, hrow, NULL), GPUMEM_OK, "copied into a 1-D buffer of 4");
        ok(rowbuf[0] == 7 && rowbuf[1] == 8 && rowbuf[2] == 9 && rowbuf[3] == 10, "which holds d[1, 1..4]: 7 8 9 10");
        memcpy(rowbuf, newrow, sizeof rowbuf);
        is_int(gpumem_copy_to_device(row, hrow, NULL), GPUMEM_OK, "a 1-D buffer copied into the row");
        int32_t all[24];
        good = read_all(dx, all);
        for (int i = 0; i < 24; i++)
            good = good && all[i] == (i >= 7 && i <= 10 ? -(i - 6) : i);
        ok(good, "wrote d[1, 1..4] and nothing else");
        const gpumem_slice col_sl[2] = {GPUMEM_SLICE_ALL, GPUMEM_INDEX(-1)};
        int32_t colv[4];
        is_int(gpumem_array_slice(dx, col_sl, 2, &col), GPUMEM_OK, "d[:, -1], the last column");
        ok(read_all(col, colv) && colv[0] == 5 && colv[1] == 11 && colv[2] == 17 && colv[3] == 23,
           "reads 5 11 17 23");
        const gpumem_slice elem_sl[2] = {GPUMEM_INDEX(2), GPUMEM_INDEX(3)};
        int32_t ev = 0;
        is_int(gpumem_array_slice(dx, elem_sl, 2, &one), GPUMEM_OK, "d[2, 3]");
        gpumem_array_ndim(one, &ndim);
        ok(ndim == 0 && gpumem_array_get_item(one, NULL, &ev, NULL) == GPUMEM_OK && ev == 15,
           "is a 0-d view of d[2, 3] == 15");
        gpumem_array *bad_ix = (gpumem_array *)&bad_ix;
        const gpumem_slice past_ix[1] = {GPUMEM_INDEX(4)};
        is_int(gpumem_array_slice(dx, past_ix, 1, &bad_ix), GPUMEM_ERROR_INDEX_OUT_OF_RANGE, "d[4] is out of range");
        like(gpumem_last_error(), "axis 0: index 4 is out of range for extent 4", "naming the axis and the index");
        ok(bad_ix == (gpumem_array *)&bad_ix, "and made no view");
        gpumem_array *zs = NULL;
        int64_t zn = 0;
        is_int(gpumem_array_slice(line, (gpumem_slice[]){{.start = 2, .stop = 6}}, 1, &zs), GPUMEM_OK,
               "a slice whose step is left 0");
        ok(gpumem_array_size(zs, &zn) == GPUMEM_OK && zn == 4, "reads the step as 1: 4 elements");
        gpumem_array_release(zs);
        gpumem_array_release(one);
        gpumem_array_release(col);
        gpumem_array_release(hrow);
        gpumem_array_release(row);
        gpumem_array_release(dx);
    }

    /* ---- view(dtype) */
    gpumem_array *bytes = NULL;
    is_int(gpumem_array_view(line, u8, &bytes), GPUMEM_OK, "view as uint8");
    int64_t bs = 0;
    gpumem_array_size(bytes, &bs);
    is_int(bs, 96, "24 int32 are 96 bytes");
    gpumem_array_release(bytes);
    is_int(gpumem_array_view(cols, f64, &bytes), GPUMEM_ERROR_INVALID_VALUE,
           "a strided last axis cannot change item size");

    /* ---- fill */
    gpumem_array *big = NULL;
    gpumem_device_array(ctx, 1, (int64_t[]){1000}, NULL, f64, 'C', NULL, &big);
    double pi = 3.25;
    int64_t memsets = calls("cuMemsetD8"), copies = calls("cuMemcpy");
    is_int(gpumem_array_fill(big, &pi, NULL), GPUMEM_OK, "fill 1000 doubles");
    double dbl[1000];
    good = read_all(big, dbl);
    for (int i = 0; i < 1000; i++)
        good = good && dbl[i] == 3.25;
    ok(good, "every element is 3.25");
    ok(calls("cuMemsetD8") == memsets && calls("cuMemcpy") - copies <= 12,
       "an 8-byte value fills by doubling copies (%lld calls)", (long long)(calls("cuMemcpy") - copies - 1));
    int32_t zero = 0;
    memsets = calls("cuMemsetD8");
    is_int(gpumem_array_fill(cols, &zero, NULL), GPUMEM_OK, "fill a strided view with 0");
    good = read_all(dv, back);
    for (int i = 0; i < 24; i++)
        good = good && back[i] == ((i % 6) % 2 == 0 ? 0 : i);
    ok(good, "only the view's elements are zero");
    gpumem_array_release(big);

    /* ---- records */
    gpumem_dtype *rec = NULL;
    gpumem_dtype_from_descr("[('x', '<f4'), ('n', '<i4'), ('w', '<f8')]", &rec);
    gpumem_array *dr = NULL;
    is_int(gpumem_device_record(ctx, rec, NULL, &dr), GPUMEM_OK, "a DeviceRecord");
    gpumem_array_ndim(dr, &ndim);
    gpumem_array_nbytes(dr, &nbytes);
    ok(ndim == 0 && nbytes == 16, "0-d, 16 bytes");
    struct __attribute__((packed)) { float x; int32_t n; double w; } val = {1.5f, -3, 2.25}, out = {0, 0, 0};
    gpumem_array *hv = NULL, *dr2 = NULL;
    gpumem_host_array_wrap(&val, 0, NULL, NULL, rec, &hv);
    is_int(gpumem_to_device(ctx, hv, NULL, 0, &dr2), GPUMEM_OK, "to_device of a structured scalar");
    gpumem_array_ndim(dr2, &ndim);
    is_int(ndim, 0, "gives a 0-d record");
    gpumem_array_get_item(dr2, NULL, &out, NULL);
    ok(out.x == 1.5f && out.n == -3 && out.w == 2.25, "holding the scalar's fields");
    gpumem_array_release(hv);
    gpumem_array_release(dr2);
    gpumem_array_release(dr);
    gpumem_dtype_release(rec);

    /* ---- counted element access: nindex must be ndim */
    {
        int32_t v = -1, w = 4242;
        int64_t ix35[2] = {3, 5}, one_ix[1] = {0};
        is_int(gpumem_array_get_item_n(dv, 2, ix35, &v, NULL), GPUMEM_OK, "get_item_n with 2 indices of a 2-D array");
        is_int(v, 23, "reads d[3, 5]");
        v = -1;
        is_int(gpumem_array_get_item_n(dv, 1, one_ix, &v, NULL), GPUMEM_ERROR_INVALID_VALUE,
               "get_item_n with 1 index of a 2-D array is refused");
        like(gpumem_last_error(), "gpumem_array_get_item_n: nindex 1: the array has 2 dimensions",
             "naming the count and the dimensions");
        is_int(v, -1, "and writes no value");
        is_int(gpumem_array_get_item_n(dv, 3, (int64_t[]){0, 0, 0}, &v, NULL), GPUMEM_ERROR_INVALID_VALUE,
               "so is one with 3");
        is_int(gpumem_array_set_item_n(dv, 1, one_ix, &w, NULL), GPUMEM_ERROR_INVALID_VALUE,
               "set_item_n with 1 index of a 2-D array is refused");
        int32_t now[24];
        good = read_all(dv, now) && memcmp(now, back, sizeof now) == 0;
        ok(good, "and writes nothing");
        is_int(gpumem_array_set_item_n(dv, 2, (int64_t[]){-1, -1}, &w, NULL), GPUMEM_OK, "set_item_n d[-1, -1]");
        ok(gpumem_array_get_item(dv, ix35, &v, NULL) == GPUMEM_OK && v == 4242, "wrote d[3, 5]");
        int32_t orig = 23;
        gpumem_array_set_item(dv, ix35, &orig, NULL);
        is_int(gpumem_array_get_item_n(dv, 2, (int64_t[]){4, 0}, &v, NULL), GPUMEM_ERROR_INDEX_OUT_OF_RANGE,
               "get_item_n checks the indices too");
        is_int(gpumem_array_get_item_n(dv, 2, NULL, &v, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "a NULL index");
        gpumem_array *zero_d = NULL;
        gpumem_array_slice(dv, (gpumem_slice[]){GPUMEM_INDEX(1), GPUMEM_INDEX(3)}, 2, &zero_d);
        ok(gpumem_array_get_item_n(zero_d, 0, NULL, &v, NULL) == GPUMEM_OK && v == 9,
           "a 0-d array takes nindex 0 and a NULL index");
        gpumem_array_release(zero_d);
    }

    /* ---- memory kind names */
    ok(strcmp(gpumem_memory_kind_name(GPUMEM_MEMORY_DEVICE), "device") == 0 &&
           strcmp(gpumem_memory_kind_name(GPUMEM_MEMORY_HOST), "host") == 0 &&
           strcmp(gpumem_memory_kind_name(GPUMEM_MEMORY_PINNED), "pinned") == 0 &&
           strcmp(gpumem_memory_kind_name(GPUMEM_MEMORY_MAPPED), "mapped") == 0 &&
           strcmp(gpumem_memory_kind_name(GPUMEM_MEMORY_MANAGED), "managed") == 0 &&
           strcmp(gpumem_memory_kind_name(GPUMEM_MEMORY_FOREIGN), "foreign") == 0,
       "gpumem_memory_kind_name names each kind");
    is_str(gpumem_memory_kind_name((gpumem_memory_kind)99), "unknown", "and says unknown for another value");

    /* ---- the argument-order trap: copy_to_host(src, dst), copy_to_device(dst, src) */
    {
        int32_t dbefore[24], dafter[24];
        read_all(dv, dbefore);
        is_int(gpumem_copy_to_host(h, dv, NULL), GPUMEM_ERROR_INVALID_VALUE,
               "copy_to_host(host, device): arguments swapped");
        like(gpumem_last_error(), "gpumem_copy_to_host: 'dst' is a device array and 'src' a host one (arguments "
             "swapped?): gpumem_copy_to_host takes (src, dst)", "the message asks whether they were swapped");
        ok(read_all(dv, dafter) && memcmp(dbefore, dafter, sizeof dafter) == 0, "and the device array is unchanged");
        int32_t hostcopy[24];
        memcpy(hostcopy, host, sizeof hostcopy);
        is_int(gpumem_copy_to_device(h, dv, NULL), GPUMEM_ERROR_INVALID_VALUE,
               "copy_to_device(host, device): arguments swapped");
        like(gpumem_last_error(), "'dst' is a host array and 'src' a device one (arguments swapped?): "
             "gpumem_copy_to_device takes (dst, src)", "the message asks whether they were swapped");
        ok(memcmp(hostcopy, host, sizeof hostcopy) == 0, "and the host buffer is unchanged");
        gpumem_array *d2 = NULL;
        gpumem_device_array_like(ctx, dv, NULL, &d2);
        is_int(gpumem_copy_to_host(dv, d2, NULL), GPUMEM_ERROR_INVALID_VALUE, "copy_to_host between two device arrays");
        ok(strstr(gpumem_last_error(), "swapped") == NULL && strstr(gpumem_last_error(), "'dst' is a device array") != NULL,
           "is refused without the swap hint (gpumem_array_copy copies those)");
        gpumem_array_release(d2);
    }

    /* ---- releasing many arrays */
    {
        gpumem_array *r1 = NULL, *r2 = NULL, *r3 = NULL;
        int64_t n8 = 8;
        gpumem_host_array(1, &n8, u8, 'C', &r1);
        gpumem_device_array(ctx, 1, &n8, NULL, f32, 'C', NULL, &r2);
        gpumem_host_array(1, &n8, u8, 'C', &r3);
        gpumem_array *list[4] = {r1, NULL, r2, r3};
        is_int(gpumem_array_release_n(4, list), GPUMEM_OK, "release_n of three arrays and a NULL");
        int nd = 0;
        ok(gpumem_array_ndim(r1, &nd) == GPUMEM_ERROR_INVALID_STATE && gpumem_array_ndim(r2, &nd) == GPUMEM_ERROR_INVALID_STATE &&
               gpumem_array_ndim(r3, &nd) == GPUMEM_ERROR_INVALID_STATE,
           "released all three");
        gpumem_host_array(1, &n8, u8, 'C', &r2);
        gpumem_host_array(1, &n8, u8, 'C', &r3);
        gpumem_array *again[3] = {r1, r2, r3}; /* r1 is gone already */
        is_int(gpumem_array_release_n(3, again), GPUMEM_ERROR_INVALID_STATE, "a dead entry fails release_n");
        like(gpumem_last_error(), "gpumem_array_release_n: arrays[0]: ", "naming its place");
        ok(gpumem_array_ndim(r2, &nd) == GPUMEM_ERROR_INVALID_STATE && gpumem_array_ndim(r3, &nd) == GPUMEM_ERROR_INVALID_STATE,
           "but releases the others");
        is_int(gpumem_array_release_n(0, NULL), GPUMEM_OK, "release_n of none");
        is_int(gpumem_array_release_n(2, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "a NULL list of two");
        gpumem_host_array(1, &n8, u8, 'C', &r1);
        gpumem_device_array(ctx, 1, &n8, NULL, f32, 'C', NULL, &r2);
        is_int(GPUMEM_ARRAY_RELEASE_ALL(r1, NULL, r2), GPUMEM_OK, "GPUMEM_ARRAY_RELEASE_ALL(r1, NULL, r2)");
        ok(gpumem_array_ndim(r1, &nd) == GPUMEM_ERROR_INVALID_STATE && gpumem_array_ndim(r2, &nd) == GPUMEM_ERROR_INVALID_STATE,
           "released both");
    }

    /* ---- bad input: distinct statuses naming the argument; nothing made */
    gpumem_array *bad = (gpumem_array *)&bad;
    is_int(gpumem_device_array(ctx, 2, (int64_t[]){3, -1}, NULL, f32, 'C', NULL, &bad),
           GPUMEM_ERROR_NEGATIVE_DIMENSION, "a negative dimension");
    like(gpumem_last_error(), "axis 1", "names the axis");
    is_int(gpumem_device_array(ctx, 2, (int64_t[]){INT64_MAX / 2, 3}, NULL, f32, 'C', NULL, &bad),
           GPUMEM_ERROR_OVERFLOW, "a byte size that overflows");
    int64_t many[33];
    for (int i = 0; i < 33; i++)
        many[i] = 1;
    is_int(gpumem_device_array(ctx, 33, many, NULL, f32, 'C', NULL, &bad), GPUMEM_ERROR_TOO_MANY_DIMENSIONS,
           "33 dimensions");
    is_int(gpumem_device_array(ctx, 1, (int64_t[]){3}, NULL, f32, 'X', NULL, &bad), GPUMEM_ERROR_INVALID_ORDER,
           "order 'X'");
    is_int(gpumem_device_array(ctx, 1, (int64_t[]){3}, NULL, NULL, 'C', NULL, &bad), GPUMEM_ERROR_NULL_ARGUMENT,
           "a NULL dtype");
    like(gpumem_last_error(), "'dtype'", "names it");
    ok(bad == (gpumem_array *)&bad, "no array came out of the failures");
    gpumem_slice past = {0, 9, 1};
    is_int(gpumem_array_slice(dv, &past, 1, &bad), GPUMEM_ERROR_INDEX_OUT_OF_RANGE, "a stop past the end");
    is_int(gpumem_array_get_item(dv, (int64_t[]){4, 0}, &item, NULL), GPUMEM_ERROR_INDEX_OUT_OF_RANGE,
           "an index past the end");
    uint64_t free0 = 0, free1 = 0, total = 0;
    gpumem_context_flush_deallocations(ctx);
    gpumem_memory_info(ctx, &free0, &total);
    is_int(gpumem_device_array(ctx, 1, (int64_t[]){(int64_t)total}, NULL, f32, 'C', NULL, &bad),
           GPUMEM_ERROR_OUT_OF_MEMORY, "more than the device has");
    like(gpumem_last_error(), "cuMemAlloc", "names the driver call");
    gpumem_memory_info(ctx, &free1, &total);
    if (test_on_sim())
        is_int(free1, free0, "and leaks nothing");
    else
        skip(1, "free memory of a real GPU moves with other processes and tests");

    /* ---- read-only arrays: writes through the library are refused */
    int ro = -1;
    gpumem_array_is_readonly(dv, &ro);
    is_int(ro, 0, "arrays are writable by default");
    is_int(gpumem_array_set_readonly(dv, 1), GPUMEM_OK, "make one read-only");
    int32_t before_ro[24], after_ro[24];
    read_all(dv, before_ro);
    int32_t minus = -5;
    is_int(gpumem_array_fill(dv, &minus, NULL), GPUMEM_ERROR_INVALID_VALUE, "fill is refused");
    like(gpumem_last_error(), "read-only", "saying why");
    is_int(gpumem_array_set_item(dv, (int64_t[]){0, 0}, &minus, NULL), GPUMEM_ERROR_INVALID_VALUE,
           "set_item is refused");
    is_int(gpumem_copy_to_device(dv, h, NULL), GPUMEM_ERROR_INVALID_VALUE, "a copy into it is refused");
    ok(read_all(dv, after_ro) && memcmp(before_ro, after_ro, sizeof after_ro) == 0, "and nothing changed");
    gpumem_array *rov = NULL;
    gpumem_array_slice(dv, sl, 2, &rov);
    gpumem_array_is_readonly(rov, &ro);
    is_int(ro, 1, "a view of it is read-only too");
    is_int(gpumem_array_set_readonly(rov, 0), GPUMEM_ERROR_INVALID_VALUE,
           "and cannot be made writable while its base is read-only");
    gpumem_array_release(rov);
    is_int(gpumem_array_set_readonly(dv, 0), GPUMEM_OK, "the owner can be made writable again");
    is_int(gpumem_array_fill(dv, &minus, NULL), GPUMEM_OK, "then fill works");
    gpumem_copy_to_device(dv, h, NULL);

    /* ---- lifetime: a view keeps its base alive */
    gpumem_array *keep = NULL;
    gpumem_array_slice(dv, sl, 1, &keep);
    gpumem_array_release(cols);
    gpumem_array_release(rev);
    gpumem_array_release(line);
    gpumem_array_release(dv);
    int32_t k[24];
    ok(read_all(keep, k) && k[0] == 0 && k[23] == 23, "a view still reads after its base was released");
    gpumem_array_release(keep);
    gpumem_array_release(h);
    gpumem_array_release(fa);
    gpumem_array_release(d);
    /* the copy engine keeps device scratch with the context's pack kernels */
    gpumem_clear_context_caches();
    gpumem_context_flush_deallocations(ctx);
    gpumem_memory_info(ctx, &free1, &total);
    if (test_on_sim())
        is_int(free1, total, "every byte is back once the arrays are gone and the caches cleared");
    else
        skip(1, "other processes may hold memory of a real GPU");
    gpumem_context_release(ctx);
    /* A handle released twice is refused, not a use after free (array.h). */
    {
        gpumem_array *twice = NULL;
        int64_t n = 8;
        gpumem_host_array(1, &n, gpumem_dtype_builtin(GPUMEM_INT8), 'C', &twice);
        is_int(gpumem_array_release(twice), GPUMEM_OK, "release an array");
        is_int(gpumem_array_release(twice), GPUMEM_ERROR_INVALID_STATE, "releasing it again is INVALID_STATE");
        like(gpumem_last_error(), "released already", "saying it was released already");
        is_int(gpumem_array_retain(twice), GPUMEM_ERROR_INVALID_STATE, "and so is retaining it");
    }
    done_testing();
    return exit_status();
}
