/* Copies between devices (gpumem/peer.h): the peer path and the staged
 * path, contiguous and strided on either side, checked by value; which way
 * each strided copy takes, told by its driver calls (one kernel writing
 * through the peer mapping, chunks through the destination's scratch,
 * staged chunks); streams of either device; every kind between three
 * devices of which two are peers; each driver call failing in turn, in
 * several chunks too; the switches (GPUMEM_PEER, gpumem_peer_set_enabled,
 * GPUMEM_SIM_PEERS) and their bad values.  On the simulator it runs with
 * three devices; on a GPU it needs two. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gpumem.h>

#include "child.h"
#include "tap.h"

enum { N = 1000 };

static const gpumem_dtype *i32(void)
{
    return gpumem_dtype_builtin(GPUMEM_INT32);
}

static uint64_t peer_calls(void)
{
    uint64_t n = 0;
    gpumem_debug_driver_calls("cuMemcpyPeer", &n);
    return n;
}

static uint64_t launches(void)
{
    uint64_t n = 0;
    gpumem_debug_driver_calls("cuLaunchKernel", &n);
    return n;
}

static gpumem_copy_path last_path(void)
{
    gpumem_copy_path p = GPUMEM_COPY_PATH_NONE;
    gpumem_debug_last_copy_path(&p);
    return p;
}

/* A device array of n int32 on ctx holding base + i. */
static gpumem_array *filled(gpumem_context *ctx, int64_t n, int32_t base)
{
    int32_t *v = malloc((size_t)n * sizeof *v);
    gpumem_array *h = NULL, *d = NULL;
    for (int64_t i = 0; i < n; i++)
        v[i] = base + (int32_t)i;
    if (gpumem_host_array_wrap(v, 1, &n, NULL, i32(), &h) != GPUMEM_OK ||
        gpumem_to_device(ctx, h, NULL, 0, &d) != GPUMEM_OK)
        bail_out("making a device array: %s", gpumem_last_error());
    gpumem_array_release(h);
    free(v);
    return d;
}

/* The int32 values of a (any layout, any device), in C order, into out. */
static void values(gpumem_array *a, int32_t *out, int64_t n)
{
    int ndim = 0;
    int64_t shape[8];
    gpumem_array *h = NULL;
    gpumem_array_ndim(a, &ndim);
    gpumem_array_shape(a, shape);
    (void)n;
    if (gpumem_host_array_wrap(out, ndim, shape, NULL, i32(), &h) != GPUMEM_OK ||
        gpumem_array_copy(h, a, NULL) != GPUMEM_OK)
        bail_out("reading back: %s", gpumem_last_error());
    gpumem_array_release(h);
}

static gpumem_array *sliced(gpumem_array *a, int64_t start, int64_t stop, int64_t step)
{
    gpumem_array *v = NULL;
    gpumem_slice s = {start, stop, step};
    if (gpumem_array_slice(a, &s, 1, &v) != GPUMEM_OK)
        bail_out("slice: %s", gpumem_last_error());
    return v;
}

/* ---- children: settings read once per process ---- */

typedef struct env_case {
    const char *name, *value;
} env_case;

/* Copies 4 MiB + 12 bytes contiguous and a [::2] view from device 0 to 1;
 * value[0] the paths (10 * contiguous + strided), value[1] whether the
 * values are right, value[2] the cuMemcpyPeer calls. */
static void copy_case(const void *arg, child_result *out)
{
    const env_case *e = arg;
    setenv("GPUMEM_SIM_DEVICES", "2", 1);
    if (e->name != NULL)
        setenv(e->name, e->value, 1);
    gpumem_context *c0 = NULL, *c1 = NULL;
    out->status = gpumem_context_create(0, &c0);
    if (out->status == GPUMEM_OK)
        out->status = gpumem_context_create(1, &c1);
    if (out->status != GPUMEM_OK) {
        snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
        return;
    }
    int64_t n = (4 << 20) / 4 + 3 + (int64_t)(9u << 20) / 4; /* three staging chunks and a bit */
    gpumem_array *a = filled(c0, n, 5), *b = NULL, *b2 = NULL;
    gpumem_device_array(c1, 1, &n, NULL, i32(), 'C', NULL, &b);
    out->status = gpumem_array_copy(b, a, NULL);
    snprintf(out->text, sizeof out->text, "%s", out->status ? gpumem_last_error() : "");
    out->value[0] = 10 * last_path();
    int32_t *v = malloc((size_t)n * 4);
    long good = out->status == GPUMEM_OK;
    if (good) {
        values(b, v, n);
        for (int64_t i = 0; i < n; i++)
            good &= v[i] == 5 + i;
    }
    gpumem_array *sa = sliced(a, 0, GPUMEM_SLICE_DEFAULT, 2);
    int64_t half = (n + 1) / 2;
    gpumem_device_array(c1, 1, &half, NULL, i32(), 'C', NULL, &b2);
    gpumem_status st = gpumem_array_copy(b2, sa, NULL);
    out->value[0] += last_path();
    if (out->status == GPUMEM_OK)
        out->status = st;
    if (st == GPUMEM_OK) {
        values(b2, v, half);
        for (int64_t i = 0; i < half; i++)
            good &= v[i] == 5 + 2 * i;
    }
    out->value[1] = good;
    out->value[2] = (long)peer_calls();
    free(v);
    gpumem_array_release(sa);
    gpumem_array_release(a);
    gpumem_array_release(b);
    gpumem_array_release(b2);
    gpumem_context_release(c0);
    gpumem_context_release(c1);
}

/* The out-of-memory ladder of device 0 releases device 0's held pool
 * blocks only: value[1] and value[2] the blocks pools of devices 0 and 1
 * still hold after device 0 ran out. */
static void ladder_case(const void *arg, child_result *out)
{
    (void)arg;
    setenv("GPUMEM_SIM_DEVICES", "2", 1);
    setenv("GPUMEM_SIM_MEMORY", "8M", 1);
    gpumem_context *c[2] = {NULL, NULL};
    gpumem_pool *p[2] = {NULL, NULL};
    for (int d = 0; d < 2; d++) {
        gpumem_allocation *a = NULL;
        if ((out->status = gpumem_context_create(d, &c[d])) != GPUMEM_OK ||
            (out->status = gpumem_pool_create(c[d], 0, &p[d])) != GPUMEM_OK ||
            (out->status = gpumem_pool_allocate(p[d], 4u << 20, NULL, &a)) != GPUMEM_OK ||
            (out->status = gpumem_allocation_free(a, NULL)) != GPUMEM_OK) {
            snprintf(out->text, sizeof out->text, "setup: %s", gpumem_last_error());
            return;
        }
    }
    uint64_t h0 = 0, h1 = 0;
    gpumem_pool_held_blocks(p[0], &h0);
    gpumem_pool_held_blocks(p[1], &h1);
    out->value[0] = (long)(h0 * 10 + h1);
    int64_t n = (6 << 20) / 4;
    gpumem_array *big = NULL;
    out->status = gpumem_device_array(c[0], 1, &n, NULL, i32(), 'C', NULL, &big);
    snprintf(out->text, sizeof out->text, "%s", out->status ? gpumem_last_error() : "");
    gpumem_pool_held_blocks(p[0], &h0);
    gpumem_pool_held_blocks(p[1], &h1);
    out->value[1] = (long)h0;
    out->value[2] = (long)h1;
    gpumem_array_release(big);
    for (int d = 0; d < 2; d++) {
        gpumem_pool_destroy(p[d]);
        gpumem_context_release(c[d]);
    }
}

/* Frees of a strided cross-device copy's temporaries failing (every free
 * reaches the driver at once: GPUMEM_MAX_PENDING_DEALLOCS_COUNT=0; the
 * destination's device too full for scratch, so that the copy goes through
 * temporaries), each driver call in turn, on both paths: a failure that names a free
 * (cuMemFree, cuMemFreeHost) comes after the copy completed, so its
 * message says so and the destination holds the whole copy.  value[0]:
 * such failures, value[1]: those without "the copy completed", value[2]:
 * those with a wrong destination. */
static void free_fails_case(const void *arg, child_result *out)
{
    (void)arg;
    setenv("GPUMEM_SIM_DEVICES", "2", 1);
    setenv("GPUMEM_SIM_MEMORY", "8M", 1);
    setenv("GPUMEM_MAX_PENDING_DEALLOCS_COUNT", "0", 1);
    gpumem_context *c0 = NULL, *c1 = NULL;
    if ((out->status = gpumem_context_create(0, &c0)) != GPUMEM_OK ||
        (out->status = gpumem_context_create(1, &c1)) != GPUMEM_OK)
        return;
    gpumem_array *a = filled(c0, 2 * N, 9), *b = filled(c1, 2 * N, 0), *filler = NULL;
    /* device 1 keeps room for a temporary like the destination (8 KB), not
     * for scratch (64 KiB at least): the copies go through temporaries */
    size_t free1 = 0, total1 = 0;
    gpumem_memory_info(c1, &free1, &total1);
    int64_t fill = (int64_t)free1 - (32 << 10);
    if ((out->status = gpumem_device_array(c1, 1, &fill, NULL, gpumem_dtype_builtin(GPUMEM_UINT8), 'C', NULL,
                                           &filler)) != GPUMEM_OK)
        return;
    gpumem_array *sa = sliced(a, 0, GPUMEM_SLICE_DEFAULT, 2);
    gpumem_array *sb = sliced(b, GPUMEM_SLICE_DEFAULT, GPUMEM_SLICE_DEFAULT, -2);
    int32_t zero[2 * N] = {0}, v[2 * N];
    int64_t n2 = 2 * N;
    gpumem_array *hz = NULL;
    gpumem_host_array_wrap(zero, 1, &n2, NULL, i32(), &hz);
    for (int staged = 0; staged < 2; staged++) {
        gpumem_peer_set_enabled(!staged);
        for (int k = 1; k < 200; k++) {
            gpumem_array_copy(b, hz, NULL);
            gpumem_debug_fail_call((uint64_t)k, 999);
            gpumem_status st = gpumem_array_copy(sb, sa, NULL);
            gpumem_debug_fail_call(0, 0);
            if (st == GPUMEM_OK)
                break;
            const char *msg = gpumem_last_error();
            if (strstr(msg, "cuMemFree") == NULL)
                continue;
            out->value[0]++;
            if (strstr(msg, "the copy completed") == NULL) {
                if (out->value[1]++ == 0)
                    snprintf(out->text, sizeof out->text, "%s", msg);
            }
            values(b, v, 2 * N);
            int good = 1;
            for (int i = 0; i < 2 * N; i++) /* b[::-2] = a[::2]: b[2N-1-2j] = a[2j] */
                good &= v[i] == (i % 2 ? 9 + (2 * N - 1 - i) : 0);
            out->value[2] += !good;
        }
    }
    gpumem_array *rel[] = {a, b, sa, sb, hz, filler};
    for (size_t i = 0; i < sizeof rel / sizeof *rel; i++)
        gpumem_array_release(rel[i]);
    gpumem_context_release(c1);
    gpumem_context_release(c0);
}

/* With 64 KiB scratch chunks (and 64 KiB staging slots, two per lane):
 * strided copies of 512 KiB between devices, by peer access (arg NULL) or
 * staged.  value[0]: copies with wrong values, value[1]: cuMemcpyPeer
 * calls, value[3]: the kernel launches of each copy (two decimal digits
 * each, in order). */
static void chunks_case(const void *arg, child_result *out)
{
    setenv("GPUMEM_SIM_DEVICES", "2", 1);
    setenv("GPUMEM_COPY_SCRATCH_CHUNK", "64K", 1);
    setenv("GPUMEM_STAGING_CHUNK", "64K", 1);
    setenv("GPUMEM_STAGING_DEPTH", "2", 1);
    if (arg != NULL)
        setenv("GPUMEM_PEER", "0", 1);
    gpumem_context *c0 = NULL, *c1 = NULL;
    if ((out->status = gpumem_context_create(0, &c0)) != GPUMEM_OK ||
        (out->status = gpumem_context_create(1, &c1)) != GPUMEM_OK)
        return;
    enum { M = 512 };
    int64_t n = M * M;
    gpumem_array *a = filled(c0, n, 7), *b = filled(c1, n, -1), *a2 = NULL, *b2 = NULL;
    gpumem_array_reshape(a, 2, (int64_t[]){M, M}, 'C', GPUMEM_NO_COPY, NULL, &a2);
    gpumem_array_reshape(b, 2, (int64_t[]){M, M}, 'C', GPUMEM_NO_COPY, NULL, &b2);
    gpumem_slice cols_even[2] = {{GPUMEM_SLICE_DEFAULT, GPUMEM_SLICE_DEFAULT, 1}, {0, GPUMEM_SLICE_DEFAULT, 2}};
    gpumem_slice cols_odd_rev[2] = {{GPUMEM_SLICE_DEFAULT, GPUMEM_SLICE_DEFAULT, -1}, {1, GPUMEM_SLICE_DEFAULT, 2}};
    gpumem_array *sa = NULL, *sb = NULL, *tb = NULL, *c = NULL;
    gpumem_array_slice(a2, cols_even, 2, &sa);
    gpumem_array_slice(b2, cols_odd_rev, 2, &sb);
    gpumem_array_transpose(b2, NULL, &tb); /* F-ordered view of device 1's memory */
    gpumem_device_array(c1, 2, (int64_t[]){M, M / 2}, NULL, i32(), 'C', NULL, &c);
    static int32_t v[M * M];
    uint64_t before = peer_calls(), mark = launches();
    long each[4] = {0, 0, 0, 0};
    /* strided to contiguous: gathered on device 0 */
    gpumem_status st = gpumem_array_copy(c, sa, NULL);
    each[0] = (long)(launches() - mark);
    mark = launches();
    values(c, v, n / 2);
    for (int64_t i = 0; st == GPUMEM_OK && i < n / 2; i++)
        if (v[i] != 7 + (i / (M / 2)) * M + 2 * (i % (M / 2))) {
            out->value[0]++;
            break;
        }
    /* strided into strided, rows reversed: packed on 0, unpacked on 1 */
    if (st == GPUMEM_OK)
        st = gpumem_array_copy(sb, sa, NULL);
    each[1] = (long)(launches() - mark);
    mark = launches();
    values(b2, v, n);
    for (int64_t i = 0; st == GPUMEM_OK && i < n; i++) {
        int64_t r = i / M, col = i % M;
        int32_t want = col % 2 ? 7 + (M - 1 - r) * M + (col - 1) : -1 + (int32_t)i;
        if (v[i] != want) {
            out->value[0]++;
            break;
        }
    }
    /* contiguous into strided: pulled by device 1's kernel (e, on device 0, holds sa's values) */
    gpumem_array *e = NULL;
    if (st == GPUMEM_OK && (st = gpumem_device_array(c0, 2, (int64_t[]){M, M / 2}, NULL, i32(), 'C', NULL, &e)) ==
                               GPUMEM_OK)
        st = gpumem_array_copy(e, sa, NULL);
    mark = launches();
    if (st == GPUMEM_OK)
        st = gpumem_array_copy(sb, e, NULL);
    each[2] = (long)(launches() - mark);
    mark = launches();
    values(b2, v, n);
    for (int64_t i = 0; st == GPUMEM_OK && i < n; i++) {
        int64_t r = i / M, col = i % M;
        int32_t want = col % 2 ? 7 + (M - 1 - r) * M + (col - 1) : -1 + (int32_t)i;
        if (v[i] != want) {
            out->value[0]++;
            break;
        }
    }
    /* a transpose: C on device 0 into an F view on device 1 */
    if (st == GPUMEM_OK)
        st = gpumem_array_copy(tb, a2, NULL);
    each[3] = (long)(launches() - mark);
    mark = launches();
    values(b2, v, n);
    for (int64_t i = 0; st == GPUMEM_OK && i < n; i++)
        if (v[i] != 7 + (i % M) * M + i / M) {
            out->value[0]++;
            break;
        }
    out->value[1] = (long)(peer_calls() - before);
    out->value[3] = each[0] * 1000000 + each[1] * 10000 + each[2] * 100 + each[3];
    if (st != GPUMEM_OK) {
        out->status = st;
        snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
    }
    gpumem_array *rel[] = {a, b, a2, b2, sa, sb, tb, c, e};
    for (size_t i = 0; i < sizeof rel / sizeof *rel; i++)
        gpumem_array_release(rel[i]);
    gpumem_context_release(c1);
    gpumem_context_release(c0);
}

/* ---- strided copies of every kind, between every pair ---- */

enum { M3 = 256 }; /* 256 x 256 int32: 256 KiB, four 64 KiB chunks */

static gpumem_copy_path kind_path; /* of kind_copy's copy */

/* The kinds of strided copies between two devices: a[:, ::2] into a dense
 * array, a dense array into b[::-1, 1::2], a[:, ::2] into b[:, 1::2], a
 * into the transposed view of b.  Copies kind k from device s's a (values
 * base + i) into device t's b (values -1 + i); the dense source is a copy of
 * a[:, ::2] on s.  fail_at > 0: that driver call of the copy fails
 * (gpumem_debug_fail_call).  1 when the copy succeeded and the destination
 * holds what it must, its gaps untouched. */
static int kind_copy(gpumem_context *cs, gpumem_context *ct, int k, int32_t base, uint64_t fail_at, gpumem_status *st)
{
    int64_t n = M3 * M3, sh[2] = {M3, M3}, half[2] = {M3, M3 / 2};
    gpumem_array *a = filled(cs, n, base), *b = filled(ct, n, -1), *a2 = NULL, *b2 = NULL, *from = NULL, *to = NULL;
    gpumem_array_reshape(a, 2, sh, 'C', GPUMEM_NO_COPY, NULL, &a2);
    gpumem_array_reshape(b, 2, sh, 'C', GPUMEM_NO_COPY, NULL, &b2);
    gpumem_slice even[2] = {{GPUMEM_SLICE_DEFAULT, GPUMEM_SLICE_DEFAULT, 1}, {0, GPUMEM_SLICE_DEFAULT, 2}};
    gpumem_slice odd_rev[2] = {{GPUMEM_SLICE_DEFAULT, GPUMEM_SLICE_DEFAULT, -1}, {1, GPUMEM_SLICE_DEFAULT, 2}};
    gpumem_slice odd[2] = {{GPUMEM_SLICE_DEFAULT, GPUMEM_SLICE_DEFAULT, 1}, {1, GPUMEM_SLICE_DEFAULT, 2}};
    gpumem_array *sa = NULL;
    gpumem_array_slice(a2, even, 2, &sa);
    switch (k) {
    case 0:
        gpumem_device_array(ct, 2, half, NULL, i32(), 'C', NULL, &to);
        from = sa;
        gpumem_array_retain(from);
        break;
    case 1:
        gpumem_device_array(cs, 2, half, NULL, i32(), 'C', NULL, &from);
        gpumem_array_copy(from, sa, NULL); /* on one device */
        gpumem_array_slice(b2, odd_rev, 2, &to);
        break;
    case 2:
        from = sa;
        gpumem_array_retain(from);
        gpumem_array_slice(b2, odd, 2, &to);
        break;
    default:
        from = a2;
        gpumem_array_retain(from);
        gpumem_array_transpose(b2, NULL, &to);
        break;
    }
    if (fail_at > 0)
        gpumem_debug_fail_call(fail_at, 999);
    *st = gpumem_array_copy(to, from, NULL);
    gpumem_debug_fail_call(0, 0);
    kind_path = last_path();
    int good = *st == GPUMEM_OK;
    int32_t *v = malloc((size_t)n * sizeof *v);
    if (good)
        values(k == 0 ? to : b2, v, k == 0 ? n / 2 : n);
    for (int64_t i = 0; good && i < (k == 0 ? n / 2 : n); i++) {
        int64_t r = k == 0 ? i / (M3 / 2) : i / M3, c = k == 0 ? i % (M3 / 2) : i % M3;
        int32_t want;
        if (k == 0)
            want = base + (int32_t)(r * M3 + 2 * c);
        else if (k == 1)
            want = c % 2 ? base + (int32_t)((M3 - 1 - r) * M3 + c - 1) : -1 + (int32_t)i;
        else if (k == 2)
            want = c % 2 ? base + (int32_t)(r * M3 + c - 1) : -1 + (int32_t)i;
        else
            want = base + (int32_t)(c * M3 + r);
        good = v[i] == want;
    }
    free(v);
    gpumem_array *rel[] = {a, b, a2, b2, sa, from, to};
    for (size_t i = 0; i < sizeof rel / sizeof *rel; i++)
        gpumem_array_release(rel[i]);
    return good;
}

static const char *const kind_name[4] = {"a[:, ::2] -> dense", "dense -> b[::-1, 1::2]", "a[:, ::2] -> b[:, 1::2]",
                                         "a -> b.T"};

/* Three devices, peer access between 0 and 1 only, 64 KiB scratch chunks
 * and slots: every kind between 0 and 1 both ways (peer) and 0 -> 2, 2 ->
 * 1 (staged).  value[0]: wrong copies (bits: pair * 4 + kind), value[1]:
 * copies on another path than their pair's. */
static void three_case(const void *arg, child_result *out)
{
    (void)arg;
    setenv("GPUMEM_SIM_DEVICES", "3", 1);
    setenv("GPUMEM_SIM_PEERS", "0-1", 1);
    setenv("GPUMEM_COPY_SCRATCH_CHUNK", "64K", 1);
    setenv("GPUMEM_STAGING_CHUNK", "64K", 1);
    gpumem_context *c[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3; i++)
        if ((out->status = gpumem_context_create(i, &c[i])) != GPUMEM_OK) {
            snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
            return;
        }
    static const int pair[4][2] = {{0, 1}, {1, 0}, {0, 2}, {2, 1}};
    for (int p = 0; p < 4; p++)
        for (int k = 0; k < 4; k++) {
            gpumem_status st;
            if (!kind_copy(c[pair[p][0]], c[pair[p][1]], k, 1000 * (p + 1), 0, &st)) {
                out->value[0] |= 1L << (p * 4 + k);
                if (out->text[0] == '\0')
                    snprintf(out->text, sizeof out->text, "%d -> %d, %s: %s", pair[p][0], pair[p][1], kind_name[k],
                             st == GPUMEM_OK ? "wrong values" : gpumem_last_error());
            }
            out->value[1] += kind_path != (p < 2 ? GPUMEM_COPY_PATH_PEER : GPUMEM_COPY_PATH_PEER_STAGED);
        }
    for (int i = 2; i >= 0; i--)
        gpumem_context_release(c[i]);
}

/* Each driver call of every kind of copy failing in turn, in 64 KiB chunks
 * (several per copy), with peer access (arg NULL) or staged: value[0]
 * failures without the driver's error in their message, value[1] copies
 * that then failed or were wrong, value[2] the failures seen. */
static void chunk_faults_case(const void *arg, child_result *out)
{
    setenv("GPUMEM_SIM_DEVICES", "2", 1);
    setenv("GPUMEM_COPY_SCRATCH_CHUNK", "64K", 1);
    setenv("GPUMEM_STAGING_CHUNK", "64K", 1);
    if (arg != NULL)
        setenv("GPUMEM_PEER", "0", 1);
    gpumem_context *c0 = NULL, *c1 = NULL;
    if ((out->status = gpumem_context_create(0, &c0)) != GPUMEM_OK ||
        (out->status = gpumem_context_create(1, &c1)) != GPUMEM_OK)
        return;
    for (int k = 0; k < 4; k++) {
        for (uint64_t nth = 1; nth < 400; nth++) {
            gpumem_status st;
            int good = kind_copy(c0, c1, k, 77, nth, &st);
            if (st == GPUMEM_OK) {
                out->value[1] += !good;
                break;
            }
            out->value[2]++;
            if (strstr(gpumem_last_error(), "CUDA_ERROR_UNKNOWN") == NULL && out->value[0]++ == 0 &&
                out->text[0] == '\0')
                snprintf(out->text, sizeof out->text, "%s: %s", kind_name[k], gpumem_last_error());
            char msg[256];
            snprintf(msg, sizeof msg, "%s", gpumem_last_error());
            gpumem_status st2;
            if (!kind_copy(c0, c1, k, 5, 0, &st2) && out->value[1]++ == 0)
                snprintf(out->text, sizeof out->text, "%s after '%s': %s", kind_name[k], msg,
                         st2 ? gpumem_last_error() : "wrong values");
        }
    }
    gpumem_context_release(c1);
    gpumem_context_release(c0);
}

static void env_cases(void)
{
    child_result r;
    const long peer2 = 10 * GPUMEM_COPY_PATH_PEER + GPUMEM_COPY_PATH_PEER;
    const long staged2 = 10 * GPUMEM_COPY_PATH_PEER_STAGED + GPUMEM_COPY_PATH_PEER_STAGED;

    run_child(copy_case, &(env_case){NULL, NULL}, &r);
    is_int(r.status, GPUMEM_OK, "default: both copies succeed");
    is_int(r.value[0], peer2, "default: both copies take the peer path");
    ok(r.value[1] == 1, "default: values arrive");
    is_int(r.value[2], 1, "default: one cuMemcpyPeer for the contiguous copy, none for the strided one (one kernel "
                          "writes the destination through the peer mapping)");

    run_child(copy_case, &(env_case){"GPUMEM_PEER", "0"}, &r);
    is_int(r.status, GPUMEM_OK, "GPUMEM_PEER=0: both copies succeed");
    is_int(r.value[0], staged2, "GPUMEM_PEER=0: staged path");
    ok(r.value[1] == 1, "GPUMEM_PEER=0: values arrive through pinned host memory");
    is_int(r.value[2], 0, "GPUMEM_PEER=0: no cuMemcpyPeer");

    run_child(copy_case, &(env_case){"GPUMEM_SIM_PEERS", "none"}, &r);
    is_int(r.value[0], staged2, "GPUMEM_SIM_PEERS=none: staged path");
    ok(r.status == GPUMEM_OK && r.value[1] == 1, "GPUMEM_SIM_PEERS=none: values arrive");

    run_child(copy_case, &(env_case){"GPUMEM_SIM_PEERS", "0-1"}, &r);
    is_int(r.value[0], peer2, "GPUMEM_SIM_PEERS=0-1: peer path");

    run_child(copy_case, &(env_case){"GPUMEM_PEER", "yes"}, &r);
    is_int(r.status, GPUMEM_ERROR_INVALID_ENVIRONMENT, "GPUMEM_PEER=yes is refused");
    like(r.text, "GPUMEM_PEER", "the message names GPUMEM_PEER");

    run_child(chunks_case, NULL, &r);
    ok(r.status == GPUMEM_OK && r.value[0] == 0,
       "64 KiB scratch chunks, peer access: strided, reversed and transposed copies between devices are exact%s%s",
       r.text[0] ? ": " : "", r.text);
    is_int(r.value[3], 1 * 1000000 + 16 * 10000 + 1 * 100 + 1,
           "kernels: one gathers a strided source into a dense destination (and one the transpose); 8 chunks of a "
           "strided source into a strided destination, each packed into the destination's scratch and unpacked; one "
           "on the destination's device scatters a contiguous source, read through the peer mapping");
    is_int(r.value[1], 0, "no cuMemcpyPeer: every strided copy is a kernel's");
    run_child(chunks_case, "", &r);
    ok(r.status == GPUMEM_OK && r.value[0] == 0, "the same through pinned host memory%s%s", r.text[0] ? ": " : "",
       r.text);
    is_int(r.value[3], 8 * 1000000 + 16 * 10000 + 8 * 100 + 16,
           "kernels: each chunk packed on device 0 and / or unpacked on device 1, the transpose in 16 chunks");
    is_int(r.value[1], 0, "without cuMemcpyPeer");

    run_child(three_case, NULL, &r);
    ok(r.exited && r.exit_code == 0 && r.status == GPUMEM_OK && r.value[0] == 0,
       "three devices, peers 0-1 only: every kind of strided copy, in chunks, between 0 and 1 both ways and 0 -> 2, "
       "2 -> 1 is exact, the gaps untouched%s%s", r.text[0] ? ": " : "", r.text);
    is_int(r.value[1], 0, "peer access between 0 and 1, staged with 2");
    for (int staged = 0; staged < 2; staged++) {
        run_child(chunk_faults_case, staged ? "" : NULL, &r);
        ok(r.exited && r.exit_code == 0 && r.status == GPUMEM_OK && r.value[2] > 20,
           "%s: each driver call of every kind of strided copy in chunks failing in turn (%ld failures): no crash "
           "or hang", staged ? "staged" : "peer access", r.value[2]);
        ok(r.value[0] == 0, "...each with the driver's error in its message%s%s", r.value[0] ? ": " : "",
           r.value[0] ? r.text : "");
        ok(r.value[1] == 0, "...and the next copy is exact%s%s", r.value[1] ? ": " : "", r.value[1] ? r.text : "");
    }

    run_child(free_fails_case, NULL, &r);
    is_int(r.status, GPUMEM_OK, "strided copies between devices, each driver call failing in turn");
    ok(r.value[0] >= 1, "%ld failures were frees of temporaries, after the copy", r.value[0]);
    ok(r.value[1] == 0, "each says the copy completed%s%s", r.text[0] ? ": " : "", r.text);
    ok(r.value[2] == 0, "and the destination holds the whole copy");

    run_child(ladder_case, NULL, &r);
    is_int(r.value[0], 11, "each device's pool holds one block");
    is_int(r.status, GPUMEM_OK, "device 0 out of memory: its ladder makes room");
    is_int(r.value[1], 0, "device 0's pool gave its block back");
    is_int(r.value[2], 1, "device 1's pool still holds its block");

    static const char *bad[] = {"0-0", "0-2", "0-1,1-0", "0:1", "some", ""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        run_child(copy_case, &(env_case){"GPUMEM_SIM_PEERS", bad[i]}, &r);
        if (bad[i][0] == '\0') { /* empty is unset: the default */
            is_int(r.value[0], peer2, "GPUMEM_SIM_PEERS='' is the default");
            continue;
        }
        char name[96];
        snprintf(name, sizeof name, "GPUMEM_SIM_PEERS='%s' is refused, naming the variable", bad[i]);
        ok(r.status == GPUMEM_ERROR_INVALID_ENVIRONMENT && strstr(r.text, "GPUMEM_SIM_PEERS") != NULL, "%s", name);
    }
}

/* ---- in this process ---- */

static void peer_access(int count)
{
    int can = -1;
    is_int(gpumem_peer_can_access(0, 1, &can), GPUMEM_OK, "gpumem_peer_can_access(0, 1)");
    if (test_on_sim())
        is_int(can, 1, "simulated devices 0 and 1 are peers");
    else
        ok(can == 0 || can == 1, "0 or 1");
    gpumem_peer_can_access(0, 0, &can);
    is_int(can, 0, "a device is no peer of itself");
    is_int(gpumem_peer_can_access(0, count, &can), GPUMEM_ERROR_INVALID_DEVICE, "peer out of range");
    is_int(gpumem_peer_can_access(-1, 0, &can), GPUMEM_ERROR_INVALID_DEVICE, "device out of range");
    is_int(gpumem_peer_can_access(0, 1, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "NULL can");
}

static void strided_copies(gpumem_context *c0, gpumem_context *c1, int want_path)
{
    int32_t v[2 * N];
    /* src [::2] -> dst [::-3] view of a bigger array; the gaps stay */
    gpumem_array *a = filled(c0, 2 * N, 0), *b = filled(c1, 3 * N, -1000000);
    gpumem_array *sa = sliced(a, 0, GPUMEM_SLICE_DEFAULT, 2), *sb = sliced(b, GPUMEM_SLICE_DEFAULT, GPUMEM_SLICE_DEFAULT, -3);
    is_int(gpumem_array_copy(sb, sa, NULL), GPUMEM_OK, "[::2] -> [::-3] between devices");
    is_int(last_path(), want_path, "its path");
    int32_t *w = malloc(3 * N * sizeof *w);
    values(b, w, 3 * N);
    int good = 1;
    for (int j = 0; j < 3 * N; j++) {
        int32_t want = -1000000 + j;
        if (j % 3 == 2) /* b[::-3] element k is b[3N-1-3k], gets a[2k] */
            want = 2 * ((3 * N - 1 - j) / 3);
        good &= w[j] == want;
    }
    ok(good, "values land in the strided destination, its gaps untouched");
    free(w);
    gpumem_array_release(sa);
    gpumem_array_release(sb);

    /* reversed contiguous source -> contiguous destination */
    gpumem_array *ra = sliced(a, GPUMEM_SLICE_DEFAULT, GPUMEM_SLICE_DEFAULT, -1), *d = NULL;
    int64_t n2 = 2 * N;
    gpumem_device_array(c1, 1, &n2, NULL, i32(), 'C', NULL, &d);
    is_int(gpumem_array_copy(d, ra, NULL), GPUMEM_OK, "[::-1] -> contiguous between devices");
    values(d, v, n2);
    good = 1;
    for (int j = 0; j < 2 * N; j++)
        good &= v[j] == 2 * N - 1 - j;
    ok(good, "reversed values arrive");
    gpumem_array_release(ra);
    gpumem_array_release(d);
    gpumem_array_release(a);
    gpumem_array_release(b);

    /* transposed: a C-order 20x50 on device 1 into the .T of a C-order 50x20 on device 0 */
    int64_t sh[2] = {20, 50}, sh2[2] = {50, 20};
    int32_t host[1000];
    for (int j = 0; j < 1000; j++)
        host[j] = 7 * j;
    gpumem_array *h = NULL, *m = NULL, *t = NULL, *tv = NULL;
    gpumem_host_array_wrap(host, 2, sh, NULL, i32(), &h);
    gpumem_to_device(c1, h, NULL, 0, &m);
    gpumem_device_array(c0, 2, sh2, NULL, i32(), 'C', NULL, &t);
    gpumem_array_transpose(t, NULL, &tv);
    is_int(gpumem_array_copy(tv, m, NULL), GPUMEM_OK, "C-order -> transposed view between devices");
    is_int(last_path(), want_path, "its path");
    values(t, v, 1000);
    good = 1;
    for (int r = 0; r < 50; r++)
        for (int c = 0; c < 20; c++)
            good &= v[r * 20 + c] == 7 * (c * 50 + r);
    ok(good, "the transpose arrives");
    gpumem_array_release(h);
    gpumem_array_release(m);
    gpumem_array_release(t);
    gpumem_array_release(tv);
}

static void streams(gpumem_context *c0, gpumem_context *c1, gpumem_context *c2)
{
    gpumem_stream *s0 = NULL, *s1 = NULL, *s2 = NULL;
    gpumem_stream_create(c0, 0, &s0);
    gpumem_stream_create(c1, 0, &s1);
    int64_t n = N;
    int32_t v[N];
    gpumem_array *a = filled(c0, n, 3), *b = NULL;
    gpumem_device_array(c1, 1, &n, NULL, i32(), 'C', NULL, &b);
    is_int(gpumem_array_copy(b, a, s0), GPUMEM_OK, "a stream of the source's device is accepted");
    gpumem_stream_synchronize(s0);
    values(b, v, n);
    ok(v[0] == 3 && v[N - 1] == 3 + N - 1, "its values arrive");
    gpumem_array *a2 = filled(c0, n, 11);
    is_int(gpumem_array_copy(b, a2, s1), GPUMEM_OK, "a stream of the destination's device is accepted");
    gpumem_stream_synchronize(s1);
    values(b, v, n);
    ok(v[0] == 11 && v[N - 1] == 11 + N - 1, "its values arrive");
    gpumem_array *sa = sliced(a, 0, GPUMEM_SLICE_DEFAULT, 2), *sb = sliced(b, 0, GPUMEM_SLICE_DEFAULT, 2);
    is_int(gpumem_array_copy(sb, sa, s1), GPUMEM_OK, "a strided copy with the destination's stream");
    values(b, v, n);
    ok(v[0] == 3 && v[2] == 5 && v[1] == 12, "complete on return (strided paths wait)");
    if (c2 != NULL) {
        gpumem_stream_create(c2, 0, &s2);
        is_int(gpumem_array_copy(b, a, s2), GPUMEM_ERROR_CONTEXT_MISMATCH, "a third device's stream is refused");
        like(gpumem_last_error(), "either device", "the message says which streams it takes");
        gpumem_stream_destroy(s2);
    } else {
        skip(2, "a third device's stream: needs three devices");
    }
    /* everything else takes only the array's device's stream */
    gpumem_array *other = NULL;
    is_int(gpumem_device_array(c1, 1, &n, NULL, i32(), 'C', s0, &other), GPUMEM_ERROR_CONTEXT_MISMATCH,
           "a device array of device 1 allocated on device 0's stream is refused");
    int32_t item = 0;
    is_int(gpumem_array_get_item(b, (int64_t[]){0}, &item, s0), GPUMEM_ERROR_CONTEXT_MISMATCH,
           "get_item with another device's stream is refused");
    is_int(gpumem_array_set_item(b, (int64_t[]){0}, &item, s0), GPUMEM_ERROR_CONTEXT_MISMATCH,
           "set_item with another device's stream is refused");
    is_int(gpumem_array_get_item(b, (int64_t[]){1}, &item, s1), GPUMEM_OK, "get_item with its own device's stream");
    int32_t hv[N];
    gpumem_array *h = NULL;
    gpumem_host_array_wrap(hv, 1, &n, NULL, i32(), &h);
    is_int(gpumem_array_copy(b, h, s0), GPUMEM_ERROR_CONTEXT_MISMATCH, "host -> device 1 with device 0's stream is refused");
    is_int(gpumem_array_fill(b, &(int32_t){1}, s0), GPUMEM_ERROR_CONTEXT_MISMATCH, "fill with another device's stream is refused");
    gpumem_array_release(h);
    gpumem_array_release(sa);
    gpumem_array_release(sb);
    gpumem_array_release(a);
    gpumem_array_release(a2);
    gpumem_array_release(b);
    gpumem_stream_destroy(s0);
    gpumem_stream_destroy(s1);
}

static void switch_and_edges(gpumem_context *c0, gpumem_context *c1)
{
    int en = -1;
    is_int(gpumem_peer_set_enabled(2), GPUMEM_ERROR_INVALID_VALUE, "gpumem_peer_set_enabled(2) is refused");
    is_int(gpumem_peer_enabled(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "gpumem_peer_enabled(NULL)");
    is_int(gpumem_peer_set_enabled(0), GPUMEM_OK, "switch peer access off");
    gpumem_peer_enabled(&en);
    is_int(en, 0, "gpumem_peer_enabled says so");
    int64_t n = N;
    int32_t v[N];
    gpumem_array *a = filled(c1, n, 42), *b = NULL;
    gpumem_device_array(c0, 1, &n, NULL, i32(), 'C', NULL, &b);
    uint64_t before = peer_calls();
    is_int(gpumem_array_copy(b, a, NULL), GPUMEM_OK, "device 1 -> 0 with the switch off");
    is_int(last_path(), GPUMEM_COPY_PATH_PEER_STAGED, "staged");
    is_int(peer_calls() - before, 0, "no cuMemcpyPeer");
    values(b, v, n);
    ok(v[0] == 42 && v[N - 1] == 42 + N - 1, "values arrive");
    strided_copies(c0, c1, GPUMEM_COPY_PATH_PEER_STAGED);
    gpumem_peer_set_enabled(1);
    gpumem_peer_enabled(&en);
    is_int(en, 1, "switched on again");

    /* zero size: nothing moves */
    int64_t z = 0;
    gpumem_array *za = NULL, *zb = NULL;
    gpumem_device_array(c0, 1, &z, NULL, i32(), 'C', NULL, &za);
    gpumem_device_array(c1, 1, &z, NULL, i32(), 'C', NULL, &zb);
    before = peer_calls();
    is_int(gpumem_array_copy(b, a, NULL), GPUMEM_OK, "a copy between devices");
    is_int(gpumem_array_copy(zb, za, NULL), GPUMEM_OK, "then an empty copy between devices");
    is_int(peer_calls() - before, 1, "moves nothing");
    is_int(last_path(), GPUMEM_COPY_PATH_NONE, "and reports the path none");
    /* shapes still checked first */
    is_int(gpumem_array_copy(zb, a, NULL), GPUMEM_ERROR_SHAPE_MISMATCH, "shape mismatch between devices");
    gpumem_array_release(za);
    gpumem_array_release(zb);
    gpumem_array_release(a);
    gpumem_array_release(b);
}

/* Every driver call of a strided cross-device copy failing in turn, on
 * both paths: a clear error or success, never a crash or a hang, and the
 * next copy works. */
static void peer_faults(gpumem_context *c0, gpumem_context *c1)
{
    gpumem_array *a = filled(c0, 2 * N, 9), *b = filled(c1, 2 * N, 0);
    gpumem_array *sa = sliced(a, 0, GPUMEM_SLICE_DEFAULT, 2), *sb = sliced(b, GPUMEM_SLICE_DEFAULT, GPUMEM_SLICE_DEFAULT, -2);
    for (int staged = 0; staged < 2; staged++) {
        gpumem_peer_set_enabled(!staged);
        int failed = 0, bad = 0, k = 1;
        for (; k < 200; k++) {
            gpumem_debug_fail_call((uint64_t)k, 999);
            gpumem_status st = gpumem_array_copy(sb, sa, NULL);
            gpumem_debug_fail_call(0, 0);
            if (st == GPUMEM_OK)
                break;
            failed++;
            bad |= strstr(gpumem_last_error(), "CUDA_ERROR_UNKNOWN") == NULL;
        }
        ok(failed > 3 && k < 200, "%s: each of the first %d driver calls failing fails the copy",
           staged ? "staged" : "peer", failed);
        ok(!bad, "...with the driver's error in the message");
        int32_t v[2 * N];
        is_int(gpumem_array_copy(sb, sa, NULL), GPUMEM_OK, "and the next copy works");
        values(b, v, 2 * N);
        ok(v[2 * N - 1] == 9 && v[2 * N - 3] == 11 && v[1] == 9 + 2 * (N - 1) && v[0] == 0, "with its values");
    }
    gpumem_peer_set_enabled(1);
    gpumem_array_release(sa);
    gpumem_array_release(sb);
    gpumem_array_release(a);
    gpumem_array_release(b);
}

static void pools(gpumem_context *c0, gpumem_context *c1)
{
    gpumem_pool *p1 = NULL;
    if (gpumem_pool_create(c1, 0, &p1) != GPUMEM_OK)
        bail_out("pool: %s", gpumem_last_error());
    is_int(gpumem_context_set_pool(c0, p1), GPUMEM_ERROR_CONTEXT_MISMATCH, "a pool of device 1 for device 0 is refused");
    is_int(gpumem_context_set_pool(c1, p1), GPUMEM_OK, "a pool of its own device");
    gpumem_array *a = filled(c0, N, 1), *b = NULL;
    int64_t n = N;
    int32_t v[N];
    gpumem_device_array(c1, 1, &n, NULL, i32(), 'C', NULL, &b);
    gpumem_array_kind(b, &(gpumem_memory_kind){0});
    is_int(gpumem_array_copy(b, a, NULL), GPUMEM_OK, "a copy into a pooled array of the other device");
    values(b, v, n);
    ok(v[5] == 6, "values arrive");
    gpumem_array_release(a);
    gpumem_array_release(b);
    gpumem_context_set_pool(c1, NULL);
    gpumem_pool_destroy(p1);
}

int main(void)
{
    if (test_on_sim()) {
        env_cases();
        setenv("GPUMEM_SIM_DEVICES", "3", 1);
    }
    int count = 0;
    if (gpumem_device_count(&count) != GPUMEM_OK || count < 2) {
        if (test_on_sim())
            bail_out("the simulator has %d devices", count);
        plan_skip_all("needs two devices (nvidia-h200-x2)");
    }
    gpumem_context *c0 = NULL, *c1 = NULL, *c2 = NULL;
    gpumem_context_create(0, &c0);
    gpumem_context_create(1, &c1);
    if (count >= 3)
        gpumem_context_create(2, &c2);
    int can = 0;
    gpumem_peer_can_access(0, 1, &can);
    peer_access(count);
    strided_copies(c0, c1, can ? GPUMEM_COPY_PATH_PEER : GPUMEM_COPY_PATH_PEER_STAGED);
    streams(c0, c1, c2);
    switch_and_edges(c0, c1);
    peer_faults(c0, c1);
    pools(c0, c1);
    gpumem_context_release(c2);
    gpumem_context_release(c1);
    gpumem_context_release(c0);
    done_testing();
    return exit_status();
}
