/* The pure layout arithmetic (lib/layout.c): cases worked out from NumPy's
 * behaviour (the NumPy expression is in each comment), every error class,
 * and seeded property tests that check each result element by element
 * against references written apart from layout.c.
 * This file: main and the hand-written cases; the property tests are in
 * layout-props.c (flags, strides, slices) and layout-props-views.c
 * (transposes, reshapes, views, chains). */
#include "config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpumem/status.h"
#include "layout.h"
#include "rng.h"
#include "tap.h"
#include "layout-test.h"

/* 191 hand-written results and 36 property results */
#define PLANNED 227

/* ------------------------------------------------------------ helpers ---- */

/* "(2, 3)" in one of a few rotating buffers, so several fit in one printf. */
const char *vec(const int64_t *v, int n)
{
    static char bufs[8][1024];
    static int next;
    char *b = bufs[next++ % 8];
    size_t len = 1;
    b[0] = '(';
    for (int i = 0; i < n && len < 1000; i++)
        len += (size_t)snprintf(b + len, sizeof bufs[0] - len, i ? ", %" PRId64 : "%" PRId64, v[i]);
    snprintf(b + len, sizeof bufs[0] - len, n == 1 ? ",)" : ")");
    return b;
}

bool eq(const int64_t *a, const int64_t *b, int n)
{
    for (int i = 0; i < n; i++)
        if (a[i] != b[i])
            return false;
    return true;
}

static int is_vec(const int64_t *got, const int64_t *want, int n, const char *name)
{
    int r = ok(eq(got, want, n), "%s", name);
    if (!r)
        diag("  got: %s, expected: %s", vec(got, n), vec(want, n));
    return r;
}

/* One result: the status and a piece of the thread's message. */
static int is_err(gpumem_status st, gpumem_status want, const char *needle, const char *name)
{
    const char *msg = gpumem_last_error();
    int r = ok(st == want && strstr(msg, needle) != NULL, "%s", name);
    if (!r)
        diag("  got %s '%s'; expected %s with '%s'", gpumem_status_string(st), msg, gpumem_status_string(want),
             needle);
    return r;
}

/* A slice whose result has wndim axes (fewer than ndim when it indexes). */
static void slice_case_nd(const char *name, int ndim, const int64_t *shape, const int64_t *strides,
                          const gm_slice *s, int ns, int wndim, const int64_t *wshape, const int64_t *wstrides,
                          int64_t woff)
{
    int64_t sh[GM_MAX_NDIM], st[GM_MAX_NDIM], off = -1;
    int nd = -1;
    gpumem_status r = gm_layout_slice("gpumem_array_slice", ndim, shape, strides, s, ns, &nd, sh, st, &off);
    if (!ok(r == GPUMEM_OK && nd == wndim && eq(sh, wshape, wndim) && eq(st, wstrides, wndim) && off == woff, "%s",
            name))
        diag("  got %s ndim %d shape %s strides %s offset %" PRId64 "; expected ndim %d shape %s strides %s "
             "offset %" PRId64,
             gpumem_status_string(r), nd, vec(sh, nd < 0 ? 0 : nd), vec(st, nd < 0 ? 0 : nd), off, wndim,
             vec(wshape, wndim), vec(wstrides, wndim), woff);
}

static void slice_case(const char *name, int ndim, const int64_t *shape, const int64_t *strides,
                       const gm_slice *s, int ns, const int64_t *wshape, const int64_t *wstrides, int64_t woff)
{
    slice_case_nd(name, ndim, shape, strides, s, ns, ndim, wshape, wstrides, woff);
}

static void reshape_case(const char *name, int ndim, const int64_t *shape, const int64_t *strides, size_t itemsize,
                         int nd, const int64_t *new_shape, char order, const int64_t *wshape,
                         const int64_t *wstrides, bool wview)
{
    int64_t sh[GM_MAX_NDIM], st[GM_MAX_NDIM];
    bool view = !wview;
    gpumem_status r = gm_layout_reshape("gpumem_array_reshape", ndim, shape, strides, itemsize, nd, new_shape, order,
                                        sh, st, &view);
    if (!ok(r == GPUMEM_OK && eq(sh, wshape, nd) && eq(st, wstrides, nd) && view == wview, "%s", name))
        diag("  got %s shape %s strides %s %s; expected shape %s strides %s %s", gpumem_status_string(r),
             vec(sh, nd), vec(st, nd), view ? "view" : "copy", vec(wshape, nd), vec(wstrides, nd),
             wview ? "view" : "copy");
}

static void view_case(const char *name, int ndim, const int64_t *shape, const int64_t *strides, size_t olds,
                      size_t news, const int64_t *wshape, const int64_t *wstrides)
{
    int64_t sh[GM_MAX_NDIM], st[GM_MAX_NDIM];
    gpumem_status r = gm_layout_view("gpumem_array_view", ndim, shape, strides, olds, news, sh, st);
    if (!ok(r == GPUMEM_OK && eq(sh, wshape, ndim) && eq(st, wstrides, ndim), "%s", name))
        diag("  got %s shape %s strides %s; expected shape %s strides %s", gpumem_status_string(r), vec(sh, ndim),
             vec(st, ndim), vec(wshape, ndim), vec(wstrides, ndim));
}

/* ------------------------------------------------------ hand-written ---- */

static void test_check_shape(void)
{
    int64_t size = -7, nbytes = -7;
    /* np.empty((2, 3, 4), 'f8'): size 24, nbytes 192 */
    ok(gm_layout_check_shape("t", 3, V(2, 3, 4), 8, &size, &nbytes) == GPUMEM_OK && size == 24 && nbytes == 192,
       "check_shape: (2, 3, 4) f8 has 24 elements, 192 bytes");
    /* np.empty((), 'i2'): size 1, nbytes 2 */
    ok(gm_layout_check_shape("t", 0, NULL, 2, &size, &nbytes) == GPUMEM_OK && size == 1 && nbytes == 2,
       "check_shape: a 0-d array has one element");
    /* np.empty((2, 0, 3), 'f8'): size 0, nbytes 0 */
    ok(gm_layout_check_shape("t", 3, V(2, 0, 3), 8, &size, &nbytes) == GPUMEM_OK && size == 0 && nbytes == 0,
       "check_shape: an empty shape has no elements");
    int64_t ones[GM_MAX_NDIM + 1];
    for (int i = 0; i <= GM_MAX_NDIM; i++)
        ones[i] = 1;
    ok(gm_layout_check_shape("t", GM_MAX_NDIM, ones, 4, NULL, NULL) == GPUMEM_OK,
       "check_shape: %d dimensions, NULL outputs", GM_MAX_NDIM);
    /* np.empty((2**31, 2**31), 'i1').nbytes == 2**62 (numbers only: it fits) */
    ok(gm_layout_check_shape("t", 2, V(INT64_C(1) << 31, INT64_C(1) << 31), 1, &size, &nbytes) == GPUMEM_OK &&
           nbytes == INT64_C(1) << 62,
       "check_shape: 2**62 bytes fit");
    ok(gm_layout_check_shape("t", 1, V(INT64_MAX), 1, &size, &nbytes) == GPUMEM_OK && nbytes == INT64_MAX,
       "check_shape: INT64_MAX bytes fit");

    size = -7;
    is_err(gm_layout_check_shape("gpumem_device_array", GM_MAX_NDIM + 1, ones, 4, &size, NULL),
           GPUMEM_ERROR_TOO_MANY_DIMENSIONS, "gpumem_device_array: ndim 33 exceeds the maximum of 32",
           "check_shape: 33 dimensions");
    ok(size == -7, "check_shape: a failure leaves the outputs alone");
    is_err(gm_layout_check_shape("t", -1, ones, 4, NULL, NULL), GPUMEM_ERROR_INVALID_VALUE, "t: ndim -1 is negative",
           "check_shape: negative ndim");
    /* np.empty((2, -3, 4)): ValueError: negative dimensions are not allowed */
    is_err(gm_layout_check_shape("gpumem_device_array", 3, V(2, -3, 4), 4, NULL, NULL),
           GPUMEM_ERROR_NEGATIVE_DIMENSION, "gpumem_device_array: shape[1] (axis 1) is -3: an extent cannot be negative",
           "check_shape: negative extent names the axis");
    /* np.empty((2**32, 2**31), 'i2'): ValueError: array is too big */
    is_err(gm_layout_check_shape("t", 2, V(INT64_C(1) << 32, INT64_C(1) << 31), 2, NULL, NULL),
           GPUMEM_ERROR_OVERFLOW, "t: shape (4294967296, 2147483648) with item size 2 overflows at axis 1",
           "check_shape: 2**64 bytes overflow");
    /* np.empty(2**62, 'i2'): the count fits, the bytes do not */
    is_err(gm_layout_check_shape("t", 1, V(INT64_C(1) << 62), 2, NULL, NULL), GPUMEM_ERROR_OVERFLOW, "overflows",
           "check_shape: the byte count overflows");
    /* np.empty((0, 2**62, 2**62), 'i1'): ValueError: array is too big, though empty */
    is_err(gm_layout_check_shape("t", 3, V(0, INT64_C(1) << 62, INT64_C(1) << 62), 1, NULL, NULL),
           GPUMEM_ERROR_OVERFLOW, "overflows at axis 2", "check_shape: an extent 0 does not excuse the others");
    is_err(gm_layout_check_shape("t", 1, V(2), (size_t)INT64_MAX + 1, NULL, NULL), GPUMEM_ERROR_OVERFLOW,
           "item size", "check_shape: an item size past INT64_MAX");
    is_err(gm_layout_check_shape("t", 2, NULL, 4, NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT,
           "t: argument 'shape' is NULL", "check_shape: NULL shape");
    is_err(gm_layout_check_shape(NULL, -2, NULL, 4, NULL, NULL), GPUMEM_ERROR_INVALID_VALUE, "gpumem: ndim -2",
           "check_shape: NULL what still gives a message");
}

static void test_contiguous_strides(void)
{
    int64_t st[4] = {-1, -1, -1, -1};
    /* np.empty((2, 3, 4), 'i4').strides == (48, 16, 4) */
    ok(gm_layout_contiguous_strides("t", 3, V(2, 3, 4), 4, 'C', st) == GPUMEM_OK, "contiguous: C");
    is_vec(st, V(48, 16, 4), 3, "contiguous: C strides of (2, 3, 4) i4");
    /* np.empty((2, 3, 4), 'i4', order='F').strides == (4, 8, 24) */
    gm_layout_contiguous_strides("t", 3, V(2, 3, 4), 4, 'F', st);
    is_vec(st, V(4, 8, 24), 3, "contiguous: F strides of (2, 3, 4) i4");
    gm_layout_contiguous_strides("t", 3, V(2, 3, 4), 4, 'A', st);
    is_vec(st, V(48, 16, 4), 3, "contiguous: A is C");
    /* np.empty((2, 0, 3), 'i4').strides == (12, 12, 4); order='F': (4, 8, 8) */
    gm_layout_contiguous_strides("t", 3, V(2, 0, 3), 4, 'C', st);
    is_vec(st, V(12, 12, 4), 3, "contiguous: an extent 0 counts as 1 (C)");
    gm_layout_contiguous_strides("t", 3, V(2, 0, 3), 4, 'F', st);
    is_vec(st, V(4, 8, 8), 3, "contiguous: an extent 0 counts as 1 (F)");
    /* np.empty((1, 1), 'c16').strides == (16, 16) */
    gm_layout_contiguous_strides("t", 2, V(1, 1), 16, 'C', st);
    is_vec(st, V(16, 16), 2, "contiguous: extent-1 axes");
    ok(gm_layout_contiguous_strides("t", 0, NULL, 8, 'F', NULL) == GPUMEM_OK, "contiguous: 0-d");
    st[0] = -9;
    is_err(gm_layout_contiguous_strides("gpumem_device_array", 1, V(5), 4, 'c', st), GPUMEM_ERROR_INVALID_ORDER,
           "gpumem_device_array: order 0x63 ('c') is not 'C', 'F' or 'A'", "contiguous: order 'c' is refused");
    ok(st[0] == -9, "contiguous: a failure leaves the strides alone");
    is_err(gm_layout_contiguous_strides("t", 1, V(5), 4, '\0', st), GPUMEM_ERROR_INVALID_ORDER, "order 0x00",
           "contiguous: order NUL is refused");
    is_err(gm_layout_contiguous_strides("t", 1, V(5), 4, 'C', NULL), GPUMEM_ERROR_NULL_ARGUMENT,
           "argument 'strides' is NULL", "contiguous: NULL strides");
    /* an unchecked shape: the outermost product is never needed, the F one is */
    ok(gm_layout_contiguous_strides("t", 2, V(INT64_C(1) << 62, 4), 4, 'C', st) == GPUMEM_OK && st[0] == 16,
       "contiguous: only strides that are used must fit");
    is_err(gm_layout_contiguous_strides("t", 2, V(INT64_C(1) << 62, 4), 4, 'F', st), GPUMEM_ERROR_OVERFLOW,
           "t: the contiguous strides overflow", "contiguous: an overflowing stride");
}

static void test_strides_like(void)
{
    int64_t st[4];
    /* x = np.empty((4, 5, 6), 'f8')[:, ::2, :].transpose(2, 0, 1): shape (6, 4, 3),
     * strides (8, 240, 96); np.empty_like(x).strides == (8, 144, 48) */
    gm_layout_strides_like(3, V(6, 4, 3), V(8, 240, 96), 8, st);
    is_vec(st, V(8, 144, 48), 3, "strides_like: keeps a transposed slice's axis order");
    /* x = np.empty((3, 4), 'i4')[::-1, ::2]: strides (-16, 8); empty_like: (8, 4) */
    gm_layout_strides_like(2, V(3, 2), V(-16, 8), 4, st);
    is_vec(st, V(8, 4), 2, "strides_like: orders by |stride|");
    /* a C-contiguous source with an odd extent-1 stride: its C strides */
    gm_layout_strides_like(3, V(2, 1, 3), V(12, 99, 4), 4, st);
    is_vec(st, V(12, 12, 4), 3, "strides_like: C-contiguous gives C strides");
    /* np.asfortranarray(np.empty((1, 3, 4), 'i4')).strides == (4, 4, 12): F strides */
    gm_layout_strides_like(3, V(1, 3, 4), V(4, 4, 12), 4, st);
    is_vec(st, V(4, 4, 12), 3, "strides_like: F-contiguous gives F strides");
    /* x = np.empty((4, 3), 'f8').T[:, None, ::2]: shape (3, 1, 2), strides
     * (8, 0, 64).  The extent-1 axis keeps its C place: (8, 24, 24).
     * (NumPy's empty_like sorts its stride 0 innermost: (8, 8, 24).) */
    gm_layout_strides_like(3, V(3, 1, 2), V(8, 0, 64), 8, st);
    is_vec(st, V(8, 24, 24), 3, "strides_like: extent-1 axes keep their C place");
    /* np.broadcast_to(np.int32(0), (2, 3)): strides (0, 0) - ties in C order */
    gm_layout_strides_like(2, V(2, 3), V(0, 0), 4, st);
    is_vec(st, V(12, 4), 2, "strides_like: equal strides keep axis order");
    /* an empty source is C-contiguous, whatever its strides */
    gm_layout_strides_like(3, V(2, 0, 3), V(-8, 100, 4), 4, st);
    is_vec(st, V(12, 12, 4), 3, "strides_like: empty gives C strides");
}

static void test_flags(void)
{
    struct {
        const char *name;
        int ndim;
        const int64_t *shape, *strides;
        size_t itemsize;
        bool c, f;
    } cases[] = {
        /* np.empty((2, 3), 'i4').flags: C True, F False */
        {"C array", 2, V(2, 3), V(12, 4), 4, true, false},
        /* np.empty((2, 3), 'i4').T.flags: C False, F True */
        {"its transpose", 2, V(3, 2), V(4, 12), 4, false, true},
        /* np.empty((1, 3), 'i4')[:, None, :] ... extent-1 strides are ignored */
        {"extent-1 axes ignored", 3, V(1, 1, 3), V(99, -5, 4), 4, true, true},
        /* np.empty((2, 0, 3))[:, :, ::-1]: both (empty) */
        {"empty with any strides", 3, V(2, 0, 3), V(7, -9, -4), 4, true, true},
        /* np.empty((), 'f8'): both */
        {"0-d", 0, NULL, NULL, 8, true, true},
        /* np.arange(3, dtype='i4')[::-1]: neither */
        {"reversed", 1, V(3), V(-4), 4, false, false},
        /* np.broadcast_to(np.int32(0), (3,)): neither */
        {"broadcast", 1, V(3), V(0), 4, false, false},
        /* np.empty((4, 6), 'i4')[:, :3]: neither */
        {"column slice", 2, V(4, 3), V(24, 4), 4, false, false},
        /* the same numbers with another item size */
        {"strides (8, 4) as i4", 2, V(2, 2), V(8, 4), 4, true, false},
        {"strides (8, 4) as f8", 2, V(2, 2), V(8, 4), 8, false, false},
        /* np.empty(5, 'i4'): both */
        {"1-d", 1, V(5), V(4), 4, true, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bool c = gm_layout_is_c_contiguous(cases[i].ndim, cases[i].shape, cases[i].strides, cases[i].itemsize);
        bool f = gm_layout_is_f_contiguous(cases[i].ndim, cases[i].shape, cases[i].strides, cases[i].itemsize);
        if (!ok(c == cases[i].c && f == cases[i].f, "flags: %s", cases[i].name))
            diag("  got C %d F %d, expected C %d F %d", c, f, cases[i].c, cases[i].f);
    }
}

static void test_extent(void)
{
    int64_t lo = 1, hi = 1;
    ok(gm_layout_extent(2, V(2, 3), V(12, 4), 4, &lo, &hi) && lo == 0 && hi == 24, "extent: C array [0, 24)");
    /* np.arange(3, dtype='i4')[::-1] touches the 12 bytes before and at its pointer */
    ok(gm_layout_extent(1, V(3), V(-4), 4, &lo, &hi) && lo == -8 && hi == 4, "extent: reversed [-8, 4)");
    ok(gm_layout_extent(1, V(5), V(0), 4, &lo, &hi) && lo == 0 && hi == 4, "extent: broadcast [0, 4)");
    ok(gm_layout_extent(2, V(2, 3), V(-12, 4), 4, &lo, &hi) && lo == -12 && hi == 12, "extent: mixed signs");
    ok(gm_layout_extent(2, V(3, 0), V(4, 4), 4, &lo, &hi) && lo == 0 && hi == 0, "extent: empty [0, 0)");
    ok(gm_layout_extent(0, NULL, NULL, 8, &lo, &hi) && lo == 0 && hi == 8, "extent: 0-d [0, 8)");
    ok(gm_layout_extent(2, V(1, 2), V(INT64_MAX, 4), 4, &lo, &hi) && lo == 0 && hi == 8,
       "extent: an extent-1 axis' stride is never used");
    ok(!gm_layout_extent(1, V(3), V(INT64_MAX / 2 + 1), 1, &lo, &hi), "extent: overflow is reported");
    ok(!gm_layout_extent(2, V(3, 2), V(INT64_MIN / 2, INT64_MIN / 2), 1, &lo, &hi), "extent: negative overflow");
}

static void test_slice(void)
{
    /* a = np.empty((4, 6), 'i4'): strides (24, 4) */
    const int64_t *sh = V(4, 6), *st = V(24, 4);
    /* a[1:3, ::2]: shape (2, 3), strides (24, 8), offset 24 */
    slice_case("slice: a[1:3, ::2]", 2, sh, st, SL({1, 3, 1}, {D, D, 2}), 2, V(2, 3), V(24, 8), 24);
    /* a[::-1]: shape (4, 6), strides (-24, 4), offset 72 */
    slice_case("slice: a[::-1]", 2, sh, st, SL({D, D, -1}), 1, V(4, 6), V(-24, 4), 72);
    /* a[:, -1:-4:-1]: columns 5, 4, 3 */
    slice_case("slice: a[:, -1:-4:-1]", 2, sh, st, SL({D, D, 1}, {-1, -4, -1}), 2, V(4, 3), V(24, -4), 20);
    /* a[:, 5:0:-2]: columns 5, 3, 1 */
    slice_case("slice: a[:, 5:0:-2]", 2, sh, st, SL({D, D, D}, {5, 0, -2}), 2, V(4, 3), V(24, -8), 20);
    /* a[:, ::-4]: columns 5, 1 */
    slice_case("slice: a[:, ::-4]", 2, sh, st, SL({D, D, D}, {D, D, -4}), 2, V(4, 2), V(24, -16), 20);
    /* a[-1:]: the last row */
    slice_case("slice: a[-1:]", 2, sh, st, SL({-1, D, 1}), 1, V(1, 6), V(24, 4), 72);
    /* a[1::100]: one row, NumPy's stride 24 * 100 */
    slice_case("slice: a[1::100]", 2, sh, st, SL({1, D, 100}), 1, V(1, 6), V(2400, 4), 24);
    /* a[:, -6:]: -6 is column 0 */
    slice_case("slice: a[:, -6:]", 2, sh, st, SL({D, D, D}, {-6, D, 1}), 2, V(4, 6), V(24, 4), 0);
    /* a[3:1]: empty, NumPy's offset 72 is an element */
    slice_case("slice: a[3:1]", 2, sh, st, SL({3, 1, 1}), 1, V(0, 6), V(24, 4), 72);
    /* a[4:]: empty; NumPy's offset 96 is past the end, the contract gives 0 */
    slice_case("slice: a[4:] stays inside", 2, sh, st, SL({4, D, 1}), 1, V(0, 6), V(24, 4), 0);
    /* a[1:, 6:]: empty; row 1 still counts */
    slice_case("slice: a[1:, 6:]", 2, sh, st, SL({1, D, 1}, {6, D, 1}), 2, V(3, 0), V(24, 4), 24);
    /* a[0:-4:-1]: stop -4 is row 0, so nothing */
    slice_case("slice: a[0:-4:-1]", 2, sh, st, SL({0, -4, -1}), 1, V(0, 6), V(-24, 4), 0);
    /* a[3:-4:-1]: rows 3, 2, 1 */
    slice_case("slice: a[3:-4:-1]", 2, sh, st, SL({3, -4, -1}), 1, V(3, 6), V(-24, 4), 72);
    /* b = np.empty((0, 3), 'i4'): b[::-1], b[0:0:-1], b[0:0] are empty views at offset 0 */
    slice_case("slice: empty axis reversed", 2, V(0, 3), V(12, 4), SL({D, D, -1}), 1, V(0, 3), V(-12, 4), 0);
    slice_case("slice: empty axis 0:0:-1", 2, V(0, 3), V(12, 4), SL({0, 0, -1}), 1, V(0, 3), V(-12, 4), 0);
    /* b[0::-1]: Python clamps start 0 to -1 on an empty axis, so nothing */
    slice_case("slice: empty axis 0::-1", 2, V(0, 3), V(12, 4), SL({0, D, -1}), 1, V(0, 3), V(-12, 4), 0);
    slice_case("slice: empty array keeps offset 0", 2, V(0, 3), V(12, 4), SL({0, 0, 1}, {2, 3, 1}), 2, V(0, 1),
               V(12, 4), 0);
    /* a[...] with all defaults, step omitted too */
    slice_case("slice: step GM_SLICE_DEFAULT is 1", 2, sh, st, SL({D, D, D}, {D, D, D}), 2, sh, st, 0);
    slice_case("slice: no slices", 2, sh, st, NULL, 0, sh, st, 0);
    /* 0-d: nothing to slice */
    int64_t off = -1;
    int ond = -1;
    ok(gm_layout_slice("t", 0, NULL, NULL, NULL, 0, &ond, NULL, NULL, &off) == GPUMEM_OK && off == 0 && ond == 0, "slice: 0-d");

    int64_t osh[2] = {-1, -1}, ost[2] = {-1, -1};
    off = -1;
    is_err(gm_layout_slice("gpumem_array_slice", 2, sh, st, SL({D, D, 1}, {0, 9, 1}), 2, &ond, osh, ost, &off),
           GPUMEM_ERROR_INDEX_OUT_OF_RANGE, "gpumem_array_slice: axis 1: stop 9 is out of range for extent 6",
           "slice: stop past the end");
    ok(osh[0] == -1 && ost[0] == -1 && off == -1, "slice: a failure leaves the outputs alone");
    /* a[-5:] would clamp to a[0:] in Python */
    is_err(gm_layout_slice("gpumem_array_slice", 2, sh, st, SL({-5, D, 1}), 1, &ond, osh, ost, &off),
           GPUMEM_ERROR_INDEX_OUT_OF_RANGE, "gpumem_array_slice: axis 0: start -5 is out of range for extent 4",
           "slice: start before the beginning");
    /* a[4::-1] would clamp to a[3::-1] in Python */
    is_err(gm_layout_slice("gpumem_array_slice", 2, sh, st, SL({4, D, -1}), 1, &ond, osh, ost, &off),
           GPUMEM_ERROR_INDEX_OUT_OF_RANGE, "axis 0: start 4 is out of range for extent 4 with step -1",
           "slice: negative step from one past the end");
    /* a[2:-5:-1] would mean "down to the first row" in Python */
    is_err(gm_layout_slice("gpumem_array_slice", 2, sh, st, SL({2, -5, -1}), 1, &ond, osh, ost, &off),
           GPUMEM_ERROR_INDEX_OUT_OF_RANGE,
           "stop -5 is out of range for extent 4 with step -1 (a stop of GPUMEM_SLICE_DEFAULT runs past",
           "slice: negative step past the first element names the remedy");
    is_err(gm_layout_slice("gpumem_array_slice", 2, sh, st, SL({D, D, 1}, {D, D, 1}, {D, D, 1}), 3, &ond, osh, ost, &off),
           GPUMEM_ERROR_INVALID_VALUE, "nslices 3 is out of range for 2 dimensions", "slice: too many slices");
    is_err(gm_layout_slice("t", 2, sh, st, NULL, -1, &ond, osh, ost, &off), GPUMEM_ERROR_INVALID_VALUE, "nslices -1",
           "slice: negative nslices");
    is_err(gm_layout_slice("t", 1, V(4), V(INT64_MAX / 2), SL({D, D, 3}), 1, &ond, osh, ost, &off), GPUMEM_ERROR_OVERFLOW,
           "axis 0: stride", "slice: stride * step overflow");
    ok(gm_layout_slice("t", 1, V(3), V(INT64_MAX / 2), SL({D, D, 3}), 1, &ond, osh, ost, &off) == GPUMEM_OK &&
       osh[0] == 1 && ost[0] == INT64_MAX / 2 && off == 0,
       "slice: one element taken by a step whose stride * step overflows keeps the stride");
    is_err(gm_layout_slice("t", 1, V(3), V(INT64_MAX / 2 + 1), SL({2, D, 1}), 1, &ond, osh, ost, &off),
           GPUMEM_ERROR_OVERFLOW, "axis 0: the offset of start 2 overflows", "slice: offset overflow");
    is_err(gm_layout_slice("t", 2, sh, st, NULL, 1, &ond, osh, ost, &off), GPUMEM_ERROR_NULL_ARGUMENT,
           "argument 'slices' is NULL", "slice: NULL slices");
    is_err(gm_layout_slice("gpumem_array_slice", GM_MAX_NDIM + 1, sh, st, NULL, 0, &ond, osh, ost, &off),
           GPUMEM_ERROR_TOO_MANY_DIMENSIONS, "ndim 33 exceeds", "slice: 33 dimensions");

    /* in place: the outputs may be the inputs */
    int64_t ish[2] = {4, 6}, ist[2] = {24, 4};
    ok(gm_layout_slice("t", 2, ish, ist, SL({D, D, -2}, {1, 4, 2}), 2, &ond, ish, ist, &off) == GPUMEM_OK &&
           eq(ish, V(2, 2), 2) && eq(ist, V(-48, 8), 2) && off == 76,
       "slice: in place, a[::-2, 1:4:2]");
}

/* Integer indices (stop GM_SLICE_INDEX) drop their axis, as NumPy's a[1, 1:-1];
 * a zero step reads as 1. */
static void test_slice_index(void)
{
    /* a = np.empty((4, 6), 'i4'): strides (24, 4) */
    const int64_t *sh = V(4, 6), *st = V(24, 4);
    /* a[1, 1:-1]: row 1 without its ends, 1-D */
    slice_case_nd("index: a[1, 1:-1]", 2, sh, st, SL({1, IX, 1}, {1, -1, 1}), 2, 1, V(4), V(4), 28);
    /* a[:, -1]: the last column */
    slice_case_nd("index: a[:, -1]", 2, sh, st, SL({D, D, D}, {-1, IX, 1}), 2, 1, V(4), V(24), 20);
    /* a[-1]: the last row, the trailing axis kept */
    slice_case_nd("index: a[-1]", 2, sh, st, SL({-1, IX, 1}), 1, 1, V(6), V(4), 72);
    /* a[2, 3]: one element, 0-d */
    slice_case_nd("index: a[2, 3] is 0-d", 2, sh, st, SL({2, IX, 1}, {3, IX, 1}), 2, 0, NULL, NULL, 60);
    /* an index's step may be 1, 0 or GM_SLICE_DEFAULT */
    slice_case_nd("index: step 0 and GM_SLICE_DEFAULT", 2, sh, st, SL({2, IX, 0}, {3, IX, D}), 2, 0, NULL, NULL, 60);
    /* a[1:3, 5], the slice written {1, 3} (step 0) */
    slice_case_nd("index: a[1:3, 5] with {.start = 1, .stop = 3}", 2, sh, st, SL({.start = 1, .stop = 3}, {5, IX, 1}),
                  2, 1, V(2), V(24), 44);
    /* a zero step reads as 1: a[1:3, 0:6:0] is a[1:3, 0:6] */
    slice_case("slice: a zero step reads as 1", 2, sh, st, SL({1, 3, 0}, {0, 6, 0}), 2, V(2, 6), V(24, 4), 24);
    slice_case("slice: {.start = 1, .stop = 5} is 1:5", 2, sh, st, SL({D, D, D}, {.start = 1, .stop = 5}), 2,
               V(4, 4), V(24, 4), 4);
    /* b = np.empty((2, 3, 4), 'i4'): strides (48, 16, 4) */
    slice_case_nd("index: b[:, 1]", 3, V(2, 3, 4), V(48, 16, 4), SL({D, D, D}, {1, IX, 1}), 2, 2, V(2, 4),
                  V(48, 4), 16);
    slice_case_nd("index: b[1, :, -2]", 3, V(2, 3, 4), V(48, 16, 4), SL({1, IX, 1}, {D, D, D}, {-2, IX, 1}), 3, 1,
                  V(3), V(16), 56);
    slice_case_nd("index: b[1, ::-1, -2]", 3, V(2, 3, 4), V(48, 16, 4), SL({1, IX, 1}, {D, D, -1}, {-2, IX, 1}), 3,
                  1, V(3), V(-16), 88);
    /* e = np.empty((0, 3), 'i4'): e[:, 1] is empty, offset 0 */
    slice_case_nd("index: e[:, 1] of an empty array", 2, V(0, 3), V(12, 4), SL({D, D, D}, {1, IX, 1}), 2, 1, V(0),
                  V(12), 0);
    /* f = np.empty((3, 0), 'i4'): f[1] is empty, and an empty array keeps offset 0 */
    slice_case_nd("index: f[1] of an empty array keeps offset 0", 2, V(3, 0), V(4, 4), SL({1, IX, 1}), 1, 1, V(0),
                  V(4), 0);

    int64_t osh[2] = {-1, -1}, ost[2] = {-1, -1}, off = -1;
    int ond = -1;
    is_err(gm_layout_slice("gpumem_array_slice", 2, sh, st, SL({4, IX, 1}), 1, &ond, osh, ost, &off),
           GPUMEM_ERROR_INDEX_OUT_OF_RANGE, "gpumem_array_slice: axis 0: index 4 is out of range for extent 4",
           "index: a[4] is out of range");
    is_err(gm_layout_slice("gpumem_array_slice", 2, sh, st, SL({D, D, D}, {-7, IX, 1}), 2, &ond, osh, ost, &off),
           GPUMEM_ERROR_INDEX_OUT_OF_RANGE, "axis 1: index -7 is out of range for extent 6",
           "index: a[:, -7] is out of range");
    is_err(gm_layout_slice("gpumem_array_slice", 2, V(0, 3), V(12, 4), SL({0, IX, 1}), 1, &ond, osh, ost, &off),
           GPUMEM_ERROR_INDEX_OUT_OF_RANGE, "axis 0: index 0 is out of range for extent 0",
           "index: an empty axis has no index 0");
    is_err(gm_layout_slice("gpumem_array_slice", 2, sh, st, SL({1, IX, 2}), 1, &ond, osh, ost, &off),
           GPUMEM_ERROR_INVALID_VALUE, "axis 0: an index (stop GPUMEM_SLICE_INDEX) takes step 1, 0 or "
           "GPUMEM_SLICE_DEFAULT, not 2", "index: a step of 2 is refused");
    is_err(gm_layout_slice("gpumem_array_slice", 2, sh, st, SL({D, D, D}, {D, IX, 1}), 2, &ond, osh, ost, &off),
           GPUMEM_ERROR_INVALID_VALUE, "axis 1: an index (stop GPUMEM_SLICE_INDEX) needs a position",
           "index: no position is refused");
    ok(osh[0] == -1 && ost[0] == -1 && off == -1 && ond == -1, "index: a failure leaves the outputs alone");
    is_err(gm_layout_slice("t", 1, V(3), V(INT64_MAX / 2 + 1), SL({2, IX, 1}), 1, &ond, osh, ost, &off),
           GPUMEM_ERROR_OVERFLOW, "axis 0: the offset of index 2 overflows", "index: offset overflow");
    /* in place: a[::-1, 2] */
    int64_t ish[2] = {4, 6}, ist[2] = {24, 4};
    ok(gm_layout_slice("t", 2, ish, ist, SL({D, D, -1}, {2, IX, 1}), 2, &ond, ish, ist, &off) == GPUMEM_OK &&
           ond == 1 && ish[0] == 4 && ist[0] == -24 && off == 80,
       "index: in place, a[::-1, 2]");
}

static void test_transpose(void)
{
    /* a = np.empty((2, 3, 4), 'i4'): strides (48, 16, 4) */
    const int64_t *sh = V(2, 3, 4), *st = V(48, 16, 4);
    int64_t osh[3] = {-1, -1, -1}, ost[3] = {-1, -1, -1};
    /* a.T: shape (4, 3, 2), strides (4, 16, 48) */
    ok(gm_layout_transpose("t", 3, sh, st, NULL, osh, ost) == GPUMEM_OK && eq(osh, V(4, 3, 2), 3) &&
           eq(ost, V(4, 16, 48), 3),
       "transpose: a.T");
    /* a.transpose(1, 0, 2): shape (3, 2, 4), strides (16, 48, 4) */
    ok(gm_layout_transpose("t", 3, sh, st, (const int[]){1, 0, 2}, osh, ost) == GPUMEM_OK &&
           eq(osh, V(3, 2, 4), 3) && eq(ost, V(16, 48, 4), 3),
       "transpose: a.transpose(1, 0, 2)");
    /* a.transpose(-1, 0, 1): shape (4, 2, 3), strides (4, 48, 16) */
    ok(gm_layout_transpose("t", 3, sh, st, (const int[]){-1, 0, 1}, osh, ost) == GPUMEM_OK &&
           eq(osh, V(4, 2, 3), 3) && eq(ost, V(4, 48, 16), 3),
       "transpose: negative axes count from the end");
    ok(gm_layout_transpose("t", 0, NULL, NULL, NULL, NULL, NULL) == GPUMEM_OK, "transpose: 0-d");
    /* a.transpose(0, 0, 1): ValueError: repeated axis in transpose */
    is_err(gm_layout_transpose("gpumem_array_transpose", 3, sh, st, (const int[]){0, 0, 1}, osh, ost),
           GPUMEM_ERROR_INVALID_VALUE, "gpumem_array_transpose: axes[1] = 0 repeats axis 0 (axes[0])",
           "transpose: a repeated axis");
    is_err(gm_layout_transpose("gpumem_array_transpose", 3, sh, st, (const int[]){0, -3, 2}, osh, ost),
           GPUMEM_ERROR_INVALID_VALUE, "axes[1] = -3 repeats axis 0",
           "transpose: a repeated axis, counted from the end");
    /* a.transpose(0, 1, 3): AxisError: axis 3 is out of bounds for array of dimension 3 */
    is_err(gm_layout_transpose("gpumem_array_transpose", 3, sh, st, (const int[]){0, 1, 3}, osh, ost),
           GPUMEM_ERROR_INVALID_VALUE, "axes[2] = 3 is out of range for 3 dimensions", "transpose: axis too large");
    is_err(gm_layout_transpose("gpumem_array_transpose", 3, sh, st, (const int[]){-4, 1, 2}, osh, ost),
           GPUMEM_ERROR_INVALID_VALUE, "axes[0] = -4 is out of range", "transpose: axis too negative");
    is_err(gm_layout_transpose("t", 3, NULL, st, NULL, osh, ost), GPUMEM_ERROR_NULL_ARGUMENT,
           "argument 'shape' is NULL", "transpose: NULL shape");
    int64_t ish[3] = {2, 3, 4}, ist[3] = {48, 16, 4};
    ok(gm_layout_transpose("t", 3, ish, ist, (const int[]){2, 0, 1}, ish, ist) == GPUMEM_OK &&
           eq(ish, V(4, 2, 3), 3) && eq(ist, V(4, 48, 16), 3),
       "transpose: in place");
}

static void test_reshape(void)
{
    /* np.arange(24, dtype='i4').reshape(2, 3, 4): strides (48, 16, 4) */
    reshape_case("reshape: 1-d to (2, 3, 4)", 1, V(24), V(4), 4, 3, V(2, 3, 4), 'C', V(2, 3, 4), V(48, 16, 4),
                 true);
    /* .reshape(6, -1): (6, 4), strides (16, 4) */
    reshape_case("reshape: -1 is inferred", 3, V(2, 3, 4), V(48, 16, 4), 4, 2, V(6, -1), 'C', V(6, 4), V(16, 4),
                 true);
    /* np.arange(24, dtype='i4').reshape((2, 3, 4), order='F').strides == (4, 8, 24) */
    reshape_case("reshape: order F", 1, V(24), V(4), 4, 3, V(2, 3, 4), 'F', V(2, 3, 4), V(4, 8, 24), true);
    /* t = np.empty((2, 3), 'i4').T: shape (3, 2), strides (4, 12) */
    /* t.reshape(6) copies (np.shares_memory(t.reshape(6), t) is False) */
    reshape_case("reshape: a transpose read in C order copies", 2, V(3, 2), V(4, 12), 4, 1, V(6), 'C', V(6), V(4),
                 false);
    /* t.reshape(2, 3) copies too; the copy's strides are (12, 4) */
    reshape_case("reshape: a transpose to (2, 3) copies", 2, V(3, 2), V(4, 12), 4, 2, V(2, 3), 'C', V(2, 3),
                 V(12, 4), false);
    /* t.reshape(6, order='F') and order='A' are views */
    reshape_case("reshape: a transpose read in F order", 2, V(3, 2), V(4, 12), 4, 1, V(6), 'F', V(6), V(4), true);
    reshape_case("reshape: order A follows an F array", 2, V(3, 2), V(4, 12), 4, 1, V(6), 'A', V(6), V(4), true);
    /* order A of a C array: C */
    reshape_case("reshape: order A of a C array", 1, V(6), V(4), 4, 2, V(2, 3), 'A', V(2, 3), V(12, 4), true);
    /* b = np.empty((4, 6), 'i4')[:, :4]: shape (4, 4), strides (24, 4) */
    reshape_case("reshape: b.reshape(4, 2, 2) splits a contiguous axis", 2, V(4, 4), V(24, 4), 4, 3, V(4, 2, 2),
                 'C', V(4, 2, 2), V(24, 8, 4), true);
    reshape_case("reshape: b.reshape(2, 2, 4) splits the outer axis", 2, V(4, 4), V(24, 4), 4, 3, V(2, 2, 4), 'C',
                 V(2, 2, 4), V(48, 24, 4), true);
    reshape_case("reshape: b.reshape(16) copies", 2, V(4, 4), V(24, 4), 4, 1, V(16), 'C', V(16), V(4), false);
    /* b.reshape((-1, 4), order='F'): the same shape after all, a view */
    reshape_case("reshape: b.reshape((-1, 4), order='F')", 2, V(4, 4), V(24, 4), 4, 2, V(-1, 4), 'F', V(4, 4),
                 V(24, 4), true);
    /* x = np.empty((3, 8), 'f8')[:, None, ::2]: shape (3, 1, 4), strides (64, 0, 16) */
    const int64_t *xs = V(3, 1, 4), *xt = V(64, 0, 16);
    reshape_case("reshape: x.reshape(3, 4) drops the extent-1 axis", 3, xs, xt, 8, 2, V(3, 4), 'C', V(3, 4),
                 V(64, 16), true);
    reshape_case("reshape: x.reshape(3, 4, 1): trailing 1", 3, xs, xt, 8, 3, V(3, 4, 1), 'C', V(3, 4, 1),
                 V(64, 16, 16), true);
    /* x.reshape((3, 4, 1), order='F').strides == (64, 16, 64): past the last run */
    reshape_case("reshape: x.reshape((3, 4, 1), order='F'): trailing 1", 3, xs, xt, 8, 3, V(3, 4, 1), 'F',
                 V(3, 4, 1), V(64, 16, 64), true);
    reshape_case("reshape: x.reshape(1, 3, 4): leading 1", 3, xs, xt, 8, 3, V(1, 3, 4), 'C', V(1, 3, 4),
                 V(192, 64, 16), true);
    reshape_case("reshape: x.reshape(3, 1, 4) keeps every stride", 3, xs, xt, 8, 3, V(3, 1, 4), 'F', xs, xt,
                 true);
    /* x.reshape(12): rows of 4 * 16 bytes, 64 apart: one run of stride 16 */
    reshape_case("reshape: x.reshape(12) is a view", 3, xs, xt, 8, 1, V(12), 'C', V(12), V(16), true);
    /* y = np.empty((3, 8), 'f8')[:, :4:2]: rows of 2 * 8 bytes, 64 apart: y.reshape(6) copies */
    reshape_case("reshape: y.reshape(6) copies", 2, V(3, 2), V(64, 8), 8, 1, V(6), 'C', V(6), V(8), false);
    /* x.reshape((3, 2, 2), order='F'): F reading order, axes regroup as 3 | 2 2 */
    reshape_case("reshape: x.reshape((3, 2, 2), order='F')", 3, xs, xt, 8, 3, V(3, 2, 2), 'F', V(3, 2, 2),
                 V(64, 16, 32), true);
    /* c = np.empty((6, 4), 'i4', order='F')[:4, :]: shape (4, 4), strides (4, 24) */
    reshape_case("reshape: c.reshape((2, 2, 4), order='F')", 2, V(4, 4), V(4, 24), 4, 3, V(2, 2, 4), 'F',
                 V(2, 2, 4), V(4, 8, 24), true);
    reshape_case("reshape: c.reshape((2, 2, 4)) (C order) is a view too", 2, V(4, 4), V(4, 24), 4, 3, V(2, 2, 4),
                 'C', V(2, 2, 4), V(8, 4, 24), true);
    reshape_case("reshape: c.reshape(16, order='F') copies", 2, V(4, 4), V(4, 24), 4, 1, V(16), 'F', V(16), V(4),
                 false);
    /* e = np.empty((2, 0, 3), 'i4') with any strides: reshapes are views with contiguous strides */
    const int64_t *es = V(2, 0, 3), *et = V(99, -5, 4);
    reshape_case("reshape: empty e.reshape(0, 6)", 3, es, et, 4, 2, V(0, 6), 'C', V(0, 6), V(24, 4), true);
    reshape_case("reshape: empty e.reshape((3, 0, 2), order='F')", 3, es, et, 4, 3, V(3, 0, 2), 'F', V(3, 0, 2),
                 V(4, 12, 12), true);
    reshape_case("reshape: empty e.reshape(-1, 3)", 3, es, et, 4, 2, V(-1, 3), 'C', V(0, 3), V(12, 4), true);
    /* np.empty((), 'i4').reshape(1, 1, 1).strides == (4, 4, 4); and back */
    reshape_case("reshape: 0-d to (1, 1, 1)", 0, NULL, NULL, 4, 3, V(1, 1, 1), 'C', V(1, 1, 1), V(4, 4, 4), true);
    reshape_case("reshape: (-1,) of 0-d", 0, NULL, NULL, 4, 1, V(-1), 'C', V(1), V(4), true);
    bool view = false;
    ok(gm_layout_reshape("t", 2, V(1, 1), V(7, 9), 4, 0, NULL, 'C', NULL, NULL, &view) == GPUMEM_OK && view,
       "reshape: (1, 1) to 0-d");
    int64_t ish[2] = {3, 2}, ist[2] = {4, 12};
    ok(gm_layout_reshape("t", 2, ish, ist, 4, 2, ish, 'C', ish, ist, &view) == GPUMEM_OK && view &&
           eq(ist, V(4, 12), 2),
       "reshape: in place");

    int64_t osh[4] = {-1, -1, -1, -1}, ost[4] = {-1, -1, -1, -1};
    view = false;
    /* np.arange(24).reshape(-1, 2, -1): ValueError: can only specify one unknown dimension */
    is_err(gm_layout_reshape("gpumem_array_reshape", 1, V(24), V(4), 4, 3, V(-1, 2, -1), 'C', osh, ost, &view),
           GPUMEM_ERROR_INVALID_RESHAPE,
           "gpumem_array_reshape: shape[0] and shape[2] are both -1: only one extent can be inferred",
           "reshape: two -1");
    ok(osh[0] == -1 && ost[0] == -1 && !view, "reshape: a failure leaves the outputs alone");
    is_err(gm_layout_reshape("gpumem_array_reshape", 1, V(24), V(4), 4, 2, V(-2, 12), 'C', osh, ost, &view),
           GPUMEM_ERROR_INVALID_RESHAPE, "shape[0] = -2 is negative", "reshape: another negative extent");
    /* np.arange(24).reshape(5, 5): ValueError: cannot reshape array of size 24 into shape (5,5) */
    is_err(gm_layout_reshape("gpumem_array_reshape", 1, V(24), V(4), 4, 2, V(5, 5), 'C', osh, ost, &view),
           GPUMEM_ERROR_INVALID_RESHAPE, "cannot reshape an array of size 24 into shape (5, 5)",
           "reshape: size mismatch");
    is_err(gm_layout_reshape("gpumem_array_reshape", 1, V(24), V(4), 4, 2, V(5, -1), 'C', osh, ost, &view),
           GPUMEM_ERROR_INVALID_RESHAPE, "cannot reshape an array of size 24 into shape (5, -1)",
           "reshape: -1 that does not divide");
    /* np.empty((0, 3)).reshape(0, -1): ValueError: cannot reshape array of size 0 into shape (0,newaxis) */
    is_err(gm_layout_reshape("gpumem_array_reshape", 2, V(0, 3), V(12, 4), 4, 2, V(0, -1), 'C', osh, ost, &view),
           GPUMEM_ERROR_INVALID_RESHAPE, "cannot infer shape[1] = -1 in shape (0, -1)",
           "reshape: -1 beside a 0");
    is_err(gm_layout_reshape("gpumem_array_reshape", 1, V(24), V(4), 4, 4,
                             V(INT64_C(1) << 40, INT64_C(1) << 40, 0, -1), 'C', osh, ost, &view),
           GPUMEM_ERROR_INVALID_RESHAPE, "cannot reshape", "reshape: an overflowing product is a mismatch");
    /* a.reshape(6, order='K'): ValueError: order 'K' is not permitted for reshaping */
    is_err(gm_layout_reshape("gpumem_array_reshape", 1, V(6), V(4), 4, 1, V(6), 'K', osh, ost, &view),
           GPUMEM_ERROR_INVALID_ORDER, "order 0x4b ('K')", "reshape: order K");
    int64_t ones[GM_MAX_NDIM + 1];
    for (int i = 0; i <= GM_MAX_NDIM; i++)
        ones[i] = 1;
    is_err(gm_layout_reshape("gpumem_array_reshape", 0, NULL, NULL, 4, GM_MAX_NDIM + 1, ones, 'C', NULL, NULL, &view),
           GPUMEM_ERROR_TOO_MANY_DIMENSIONS, "ndim 33 exceeds", "reshape: 33 dimensions");
    /* np.empty(0, 'i1').reshape(0, 2**62, 2**62): ValueError: array is too big */
    is_err(gm_layout_reshape("gpumem_array_reshape", 1, V(0), V(1), 1, 3, V(0, INT64_C(1) << 62, INT64_C(1) << 62),
                             'C', osh, ost, &view),
           GPUMEM_ERROR_OVERFLOW, "overflows", "reshape: the new shape must fit too");
    is_err(gm_layout_reshape("gpumem_array_reshape", 1, V(6), V(4), 4, 1, V(6), 'C', osh, ost, NULL),
           GPUMEM_ERROR_NULL_ARGUMENT, "argument 'is_view' is NULL", "reshape: NULL is_view");
    is_err(gm_layout_reshape("gpumem_array_reshape", 2, V(INT64_C(1) << 40, INT64_C(1) << 40), V(1, 1), 1, 1,
                             V(-1), 'C', osh, ost, &view),
           GPUMEM_ERROR_OVERFLOW, "the array's size overflows at axis 1", "reshape: an unchecked old shape");
}

static void test_view(void)
{
    /* a = np.zeros((2, 4), 'i4'): strides (16, 4) */
    const int64_t *sh = V(2, 4), *st = V(16, 4);
    /* a.view('i8'): shape (2, 2), strides (16, 8); a.view('i2'): (2, 8), (16, 2) */
    view_case("view: i4 as i8", 2, sh, st, 4, 8, V(2, 2), V(16, 8));
    view_case("view: i4 as i2", 2, sh, st, 4, 2, V(2, 8), V(16, 2));
    /* a[:, ::2].view('f4'): the same item size keeps any layout */
    view_case("view: the same item size", 2, V(2, 2), V(16, 8), 4, 4, V(2, 2), V(16, 8));
    /* np.zeros((3, 4), 'i4').T[:, :1].view('i2'): shape (4, 2), strides (4, 2) */
    view_case("view: a last axis of extent 1 may have any stride", 2, V(4, 1), V(4, 16), 4, 2, V(4, 2), V(4, 2));
    /* np.zeros((3, 0), 'i4').view('i8'): shape (3, 0), strides (4, 8) */
    view_case("view: an empty last axis", 2, V(3, 0), V(4, 4), 4, 8, V(3, 0), V(4, 8));
    /* np.zeros((0, 4), 'i4') with a non-contiguous last stride: empty, so allowed */
    view_case("view: an empty array with any strides", 2, V(0, 4), V(16, 12), 4, 8, V(0, 2), V(16, 8));
    /* np.zeros((2, 6), 'i2').view('V12'): shape (2, 1), strides (12, 12) */
    view_case("view: i2 as V12", 2, V(2, 6), V(12, 2), 2, 12, V(2, 1), V(12, 12));
    /* np.zeros((), 'i4').view('f4'): the same size is fine for 0-d */
    int64_t osh[2] = {-1, -1}, ost[2] = {-1, -1};
    ok(gm_layout_view("t", 0, NULL, NULL, 4, 4, NULL, NULL) == GPUMEM_OK, "view: 0-d, same item size");

    /* a.view('V12'): ValueError: ... must be a divisor of the total size in bytes of the last axis */
    is_err(gm_layout_view("gpumem_array_view", 2, sh, st, 4, 12, osh, ost), GPUMEM_ERROR_INVALID_VALUE,
           "gpumem_array_view: axis 1: its 16 bytes are not a multiple of the larger item size 12",
           "view: the last axis' bytes must divide");
    ok(osh[0] == -1 && ost[0] == -1, "view: a failure leaves the outputs alone");
    /* np.zeros((), 'i4').view('i2'): ValueError: Changing the dtype of a 0d array ... */
    is_err(gm_layout_view("gpumem_array_view", 0, NULL, NULL, 4, 2, NULL, NULL), GPUMEM_ERROR_INVALID_VALUE,
           "a 0-d array cannot change its item size (4 to 2 bytes)", "view: 0-d");
    /* a[:, ::2].view('i2'): ValueError: ... the last axis must be contiguous */
    is_err(gm_layout_view("gpumem_array_view", 2, V(2, 2), V(16, 8), 4, 2, osh, ost), GPUMEM_ERROR_INVALID_VALUE,
           "axis 1: the last axis must be contiguous (its stride 8 is not the item size 4)",
           "view: a strided last axis");
    /* a[:, ::-1].view('i2'): the same */
    is_err(gm_layout_view("gpumem_array_view", 2, V(2, 4), V(16, -4), 4, 2, osh, ost), GPUMEM_ERROR_INVALID_VALUE,
           "must be contiguous", "view: a reversed last axis");
    /* np.zeros(2, 'V6').view('i4'): ValueError: ... must be a divisor of the size of original dtype */
    is_err(gm_layout_view("gpumem_array_view", 1, V(2), V(6), 6, 4, osh, ost), GPUMEM_ERROR_INVALID_VALUE,
           "the smaller item size 4 must divide the item size 6", "view: a smaller size must divide the old one");
    is_err(gm_layout_view("gpumem_array_view", 1, V(2), V(4), 4, 0, osh, ost), GPUMEM_ERROR_INVALID_VALUE,
           "the smaller item size 0", "view: item size 0");
    is_err(gm_layout_view("gpumem_array_view", -1, NULL, NULL, 4, 2, NULL, NULL), GPUMEM_ERROR_INVALID_VALUE,
           "ndim -1 is negative", "view: negative ndim");
    is_err(gm_layout_view("gpumem_array_view", 1, V(2), V(4), 4, (size_t)INT64_MAX + 1, osh, ost),
           GPUMEM_ERROR_OVERFLOW, "item size exceeds INT64_MAX", "view: an item size past INT64_MAX");
    /* np.zeros((2, 3), 'i2').view('i4'): 6 bytes */
    is_err(gm_layout_view("gpumem_array_view", 2, V(2, 3), V(6, 2), 2, 4, osh, ost), GPUMEM_ERROR_INVALID_VALUE,
           "its 6 bytes", "view: an odd row");
}

static void test_index(void)
{
    /* a = np.empty((4, 6), 'i4'): strides (24, 4) */
    const int64_t *sh = V(4, 6), *st = V(24, 4);
    int64_t off = -1;
    ok(gm_layout_index("t", 2, sh, st, V(1, 2), &off) == GPUMEM_OK && off == 32, "index: a[1, 2] at byte 32");
    ok(gm_layout_index("t", 2, sh, st, V(-1, -1), &off) == GPUMEM_OK && off == 92, "index: a[-1, -1] at byte 92");
    /* b = a[::-1]: strides (-24, 4); b[1, 1] is 24 bytes before b's first element, plus 4 */
    ok(gm_layout_index("t", 2, sh, V(-24, 4), V(1, 1), &off) == GPUMEM_OK && off == -20,
       "index: negative strides give negative offsets");
    ok(gm_layout_index("t", 0, NULL, NULL, NULL, &off) == GPUMEM_OK && off == 0, "index: 0-d");
    off = -1;
    /* a[4, 0]: IndexError: index 4 is out of bounds for axis 0 with size 4 */
    is_err(gm_layout_index("gpumem_array_get_item", 2, sh, st, V(4, 0), &off), GPUMEM_ERROR_INDEX_OUT_OF_RANGE,
           "gpumem_array_get_item: axis 0: index 4 is out of range for extent 4", "index: past the end");
    ok(off == -1, "index: a failure leaves the offset alone");
    is_err(gm_layout_index("gpumem_array_get_item", 2, sh, st, V(0, -7), &off), GPUMEM_ERROR_INDEX_OUT_OF_RANGE,
           "axis 1: index -7 is out of range for extent 6", "index: before the beginning");
    is_err(gm_layout_index("gpumem_array_get_item", 2, V(3, 0), st, V(0, 0), &off),
           GPUMEM_ERROR_INDEX_OUT_OF_RANGE, "axis 1: index 0 is out of range for extent 0", "index: an empty axis");
    is_err(gm_layout_index("t", 1, V(3), V(INT64_MAX), V(2), &off), GPUMEM_ERROR_OVERFLOW, "overflows",
           "index: offset overflow");
    is_err(gm_layout_index("t", 1, V(3), V(4), NULL, &off), GPUMEM_ERROR_NULL_ARGUMENT, "argument 'index' is NULL",
           "index: NULL index");
}

int main(void)
{
    uint64_t seed = UINT64_C(0x6c61796f7574); /* "layout" */
    const char *s = getenv("GPUMEM_TEST_SEED");
    if (s != NULL && *s != '\0')
        seed = strtoull(s, NULL, 0);

    plan(PLANNED);
    test_check_shape();
    test_contiguous_strides();
    test_strides_like();
    test_flags();
    test_extent();
    test_slice();
    test_slice_index();
    test_transpose();
    test_reshape();
    test_view();
    test_index();

    diag("property tests: seed %#" PRIx64 " (GPUMEM_TEST_SEED=%#" PRIx64 " repeats them)", seed, seed);
    run_family("property: contiguity flags, extent, index, size", 1, prop_flags, 4, 500, seed);
    run_family("property: contiguous and like strides", 2, prop_strides, 4, 500, seed);
    run_family("property: slices", 3, prop_slice, 6, 500, seed);
    run_family("property: transposes", 4, prop_transpose, 4, 500, seed);
    run_family("property: reshapes", 5, prop_reshape, 8, 500, seed);
    run_family("property: views with another item size", 6, prop_view, 4, 500, seed);
    run_family("property: chains of slices, transposes, reshapes and copies", 7, prop_chain, 6, 300, seed);
    return exit_status();
}
