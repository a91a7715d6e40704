/* The copy engine's cost model: which path each copy takes
 * (gpumem_debug_last_copy_path) with the default DMA row threshold, the
 * values and gaps after each, a failing copy that changes nothing, the CPU
 * packing on several threads, random layouts of every kind, and
 * GPUMEM_COPY_MIN_ROW_BYTES, and what a thread reports (its own copies,
 * none for an empty one).  On the simulator the pack kernels run
 * natively, so every path runs here. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gpumem.h>

#include "arrays.h"
#include "child.h"
#include "rng.h"
#include "tap.h"

static gpumem_context *ctx;
static const gpumem_dtype *f32;

#define R 6
#define C 8

static gpumem_array *device_of(float *host, int64_t r, int64_t c)
{
    gpumem_array *h = wrap_f32(host, r, c), *d = NULL;
    gpumem_to_device(ctx, h, NULL, 0, &d);
    gpumem_array_release(h);
    return d;
}

static int same(const float *a, const float *b, size_t n)
{
    return memcmp(a, b, n * sizeof(float)) == 0;
}

static void check_path(gpumem_status st, gpumem_copy_path want, const char *name)
{
    gpumem_copy_path got = last_path();
    ok(st == GPUMEM_OK && got == want, "%s: path %s (got %s%s%s)", name, gpumem_copy_path_name(want),
       gpumem_copy_path_name(got) ? gpumem_copy_path_name(got) : "?", st == GPUMEM_OK ? "" : "; ",
       st == GPUMEM_OK ? "" : gpumem_last_error());
}

static void test_paths(void)
{
    float a[R][C], z[R][C], out[R][C], half[R][C / 2], want[R][C];
    for (int i = 0; i < R * C; i++) {
        a[i / C][i % C] = (float)i;
        z[i / C][i % C] = -1.0f - (float)i;
    }
    gpumem_array *d = device_of(&a[0][0], R, C), *dz = device_of(&z[0][0], R, C);
    gpumem_array *dcols = cols_view(d, 0, 2), *zcols = cols_view(dz, 1, 2);
    gpumem_array *hhalf = wrap_f32(half, R, C / 2), *hout = wrap_f32(out, R, C), *ha = wrap_f32(a, R, C);
    gpumem_array *ocols = cols_view(hout, 1, 2), *acols = cols_view(ha, 0, 2);

    /* contiguous, and host to host */
    gpumem_status st = gpumem_copy_to_host(d, hout, NULL);
    check_path(st, GPUMEM_COPY_PATH_CONTIGUOUS, "contiguous D2H");
    ok(same(&out[0][0], &a[0][0], R * C), "its values");
    st = gpumem_array_copy(hout, ha, NULL);
    check_path(st, GPUMEM_COPY_PATH_HOST, "host to host");

    /* d[:, ::2] -> contiguous host: packed on the device, one transfer */
    memset(half, 0, sizeof half);
    st = gpumem_copy_to_host(dcols, hhalf, NULL);
    check_path(st, GPUMEM_COPY_PATH_DEVICE_PACK, "d[:, ::2] to a contiguous host array");
    int good = holds_cols(&half[0][0], &a[0][0], R, C, 0, 2);
    ok(good, "its values");

    /* contiguous host -> dz[:, 1::2]: one transfer, unpacked on the device */
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C / 2; j++)
            half[i][j] = 100.0f + (float)(i * C + j);
    st = gpumem_array_copy(zcols, hhalf, NULL);
    check_path(st, GPUMEM_COPY_PATH_DEVICE_PACK, "a contiguous host array to dz[:, 1::2]");
    memcpy(want, z, sizeof want);
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C / 2; j++)
            want[i][2 * j + 1] = half[i][j];
    ok(read_all(dz, out) && same(&out[0][0], &want[0][0], R * C), "its values, and the gaps untouched");

    /* h[:, ::2] -> contiguous device: packed by the CPU */
    gpumem_array *dh = NULL;
    gpumem_device_array(ctx, 2, (int64_t[]){R, C / 2}, NULL, f32, 'C', NULL, &dh);
    st = gpumem_array_copy(dh, acols, NULL);
    check_path(st, GPUMEM_COPY_PATH_CPU_PACK, "h[:, ::2] to a contiguous device array");
    good = read_all(dh, half) && holds_cols(&half[0][0], &a[0][0], R, C, 0, 2);
    ok(good, "its values");

    /* h[:, ::2] -> dz[:, 1::2]: CPU packs, the kernel unpacks */
    st = gpumem_array_copy(zcols, acols, NULL);
    check_path(st, GPUMEM_COPY_PATH_CPU_DEVICE_PACK, "h[:, ::2] to dz[:, 1::2]");
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C / 2; j++)
            want[i][2 * j + 1] = a[i][2 * j];
    ok(read_all(dz, out) && same(&out[0][0], &want[0][0], R * C), "its values, and the gaps untouched");

    /* contiguous device -> hout[:, 1::2]: one transfer, the CPU unpacks */
    memcpy(out, z, sizeof out);
    st = gpumem_copy_to_host(dh, ocols, NULL);
    check_path(st, GPUMEM_COPY_PATH_CPU_PACK, "a contiguous device array to h[:, 1::2]");
    memcpy(want, z, sizeof want);
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C / 2; j++)
            want[i][2 * j + 1] = a[i][2 * j];
    ok(same(&out[0][0], &want[0][0], R * C), "its values, and the host gaps untouched");

    /* d[:, ::2] -> hout[:, 1::2]: the kernel packs, the CPU unpacks */
    memcpy(out, z, sizeof out);
    st = gpumem_copy_to_host(dcols, ocols, NULL);
    check_path(st, GPUMEM_COPY_PATH_CPU_DEVICE_PACK, "d[:, ::2] to h[:, 1::2]");
    ok(same(&out[0][0], &want[0][0], R * C), "its values, and the host gaps untouched");

    /* device to device: one kernel, or two through scratch */
    gpumem_array *d2 = NULL;
    gpumem_device_array(ctx, 2, (int64_t[]){R, C / 2}, NULL, f32, 'C', NULL, &d2);
    st = gpumem_array_copy(d2, dcols, NULL);
    check_path(st, GPUMEM_COPY_PATH_DEVICE_PACK, "d[:, ::2] to a contiguous device array");
    good = read_all(d2, half) && holds_cols(&half[0][0], &a[0][0], R, C, 0, 2);
    ok(good, "its values");
    gpumem_array *dz2 = device_of(&z[0][0], R, C), *z2cols = cols_view(dz2, 1, 2);
    st = gpumem_array_copy(z2cols, dcols, NULL);
    check_path(st, GPUMEM_COPY_PATH_DEVICE_PACK, "d[:, ::2] to dz[:, 1::2]");
    ok(read_all(dz2, out) && same(&out[0][0], &want[0][0], R * C), "its values, and the gaps untouched");

    /* wide rows: one 2-D copy */
    static float wide[8][256], wout[8][200];
    for (int i = 0; i < 8 * 256; i++)
        wide[i / 256][i % 256] = (float)i;
    gpumem_array *dw = device_of(&wide[0][0], 8, 256), *wv = NULL, *hw = wrap_f32(wout, 8, 200);
    gpumem_array_slice(dw, (gpumem_slice[]){{0, 8, 1}, {0, 200, 1}}, 2, &wv);
    st = gpumem_copy_to_host(wv, hw, NULL);
    check_path(st, GPUMEM_COPY_PATH_DMA, "rows of 800 bytes: one 2-D copy");
    good = 1;
    for (int i = 0; i < 8; i++)
        good &= memcmp(wout[i], wide[i], sizeof wout[i]) == 0;
    ok(good, "its values");

    /* a transposing upload: C host into an F device array */
    gpumem_array *df = NULL;
    gpumem_device_array(ctx, 2, (int64_t[]){R, C}, NULL, f32, 'F', NULL, &df);
    st = gpumem_array_copy(df, ha, NULL);
    check_path(st, GPUMEM_COPY_PATH_DEVICE_PACK, "C host into an F device array");
    memset(out, 0, sizeof out);
    st = gpumem_copy_to_host(df, hout, NULL);
    check_path(st, GPUMEM_COPY_PATH_DEVICE_PACK, "and back into C");
    ok(same(&out[0][0], &a[0][0], R * C), "the same values");

    gpumem_array *all[] = {d, dz, dcols, zcols, hhalf, hout, ha, ocols, acols, dh, d2, dz2, z2cols, dw, wv, hw, df};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        gpumem_array_release(all[i]);
}

static void *host_copy_thread(void *arg)
{
    gpumem_array **ab = arg;
    gpumem_array_copy(ab[0], ab[1], NULL);
    gpumem_copy_path *p = malloc(sizeof *p);
    gpumem_debug_last_copy_path(p);
    return p;
}

/* What a thread reports is its own last copy's; an empty copy reports none. */
static void test_reporting(void)
{
    float a[R][C], out[R][C / 2];
    for (int i = 0; i < R * C; i++)
        a[i / C][i % C] = (float)i;
    gpumem_array *d = device_of(&a[0][0], R, C), *dcols = cols_view(d, 0, 2), *h = wrap_f32(out, R, C / 2);
    gpumem_array *ha = wrap_f32(a, R, C), *ha2 = wrap_f32(a, R, C);
    check_path(gpumem_copy_to_host(dcols, h, NULL), GPUMEM_COPY_PATH_DEVICE_PACK, "d[:, ::2] to host");
    gpumem_array *pair[2] = {ha2, ha};
    pthread_t t;
    gpumem_copy_path *other = NULL;
    if (pthread_create(&t, NULL, host_copy_thread, pair) == 0)
        pthread_join(t, (void **)&other);
    ok(other != NULL && *other == GPUMEM_COPY_PATH_HOST, "another thread's host copy reports host");
    is_int(last_path(), GPUMEM_COPY_PATH_DEVICE_PACK, "this thread still reports its own copy");
    free(other);

    /* copies the engine makes inside a copy: the outer copy's way is reported */
    gpumem_stream *st = NULL;
    gpumem_stream_create(ctx, 0, &st);
    memset(out, 0, sizeof out);
    check_path(gpumem_copy_to_host(dcols, h, st), GPUMEM_COPY_PATH_DEVICE_PACK,
               "d[:, ::2] into pageable memory on a stream: queued, packed on the device");
    int good = gpumem_stream_synchronize(st) == GPUMEM_OK && holds_cols(&out[0][0], &a[0][0], R, C, 0, 2);
    ok(good, "its values land");
    gpumem_stream_destroy(st);
    gpumem_array *odd = cols_view(d, 1, 2);
    check_path(gpumem_array_copy(odd, dcols, NULL), GPUMEM_COPY_PATH_DEVICE_PACK,
               "d[:, ::2] into d[:, 1::2] of the same array: through a temporary, unpacked last");
    float now[R][C];
    good = read_all(d, now);
    for (int i = 0; good && i < R * C; i++)
        good = now[i / C][i % C] == a[i / C][i % C - i % 2];
    ok(good, "its values");
    gpumem_array_release(odd);

    gpumem_array *e1 = NULL, *e2 = NULL, *e3 = NULL;
    gpumem_device_array(ctx, 2, (int64_t[]){0, 3}, NULL, f32, 'C', NULL, &e1);
    gpumem_device_array(ctx, 2, (int64_t[]){0, 3}, NULL, f32, 'C', NULL, &e2);
    gpumem_host_array_wrap(out, 2, (int64_t[]){0, 3}, NULL, f32, &e3);
    check_path(gpumem_array_copy(e2, e1, NULL), GPUMEM_COPY_PATH_NONE, "then an empty device copy: none");
    check_path(gpumem_copy_to_host(dcols, h, NULL), GPUMEM_COPY_PATH_DEVICE_PACK, "d[:, ::2] to host again");
    check_path(gpumem_copy_to_host(e1, e3, NULL), GPUMEM_COPY_PATH_NONE, "then an empty download: none");
    check_path(gpumem_array_copy(ha2, ha, NULL), GPUMEM_COPY_PATH_HOST, "a host copy");
    check_path(gpumem_array_copy(e3, e3, NULL), GPUMEM_COPY_PATH_NONE, "then an empty host copy: none");
    gpumem_array *rel[] = {d, dcols, h, ha, ha2, e1, e2, e3};
    for (size_t i = 0; i < sizeof rel / sizeof *rel; i++)
        gpumem_array_release(rel[i]);
}

/* Transposes large enough for the tiled kernels, tiles cut at the edges:
 * C host into an F device array, back into C host memory, and F to C on
 * the device. */
static void test_transpose(void)
{
    enum { TR = 100, TC = 70 };
    static float a[TR][TC], back[TR][TC];
    for (int i = 0; i < TR * TC; i++)
        a[i / TC][i % TC] = (float)i * 0.5f;
    gpumem_array *ha = wrap_f32(a, TR, TC), *hb = wrap_f32(back, TR, TC), *df = NULL, *dc = NULL;
    gpumem_device_array(ctx, 2, (int64_t[]){TR, TC}, NULL, f32, 'F', NULL, &df);
    gpumem_device_array(ctx, 2, (int64_t[]){TR, TC}, NULL, f32, 'C', NULL, &dc);
    check_path(gpumem_array_copy(df, ha, NULL), GPUMEM_COPY_PATH_DEVICE_PACK, "100 x 70 C host into an F device array");
    check_path(gpumem_copy_to_host(df, hb, NULL), GPUMEM_COPY_PATH_DEVICE_PACK, "and back into C host memory");
    ok(same(&back[0][0], &a[0][0], TR * TC), "the same values");
    check_path(gpumem_array_copy(dc, df, NULL), GPUMEM_COPY_PATH_DEVICE_PACK, "F to C on the device");
    memset(back, 0, sizeof back);
    ok(read_all(dc, back) && same(&back[0][0], &a[0][0], TR * TC), "the same values");
    gpumem_array *rel[] = {ha, hb, df, dc};
    for (size_t i = 0; i < sizeof rel / sizeof *rel; i++)
        gpumem_array_release(rel[i]);
}

/* Every driver call of a packed copy fails in turn: the copy fails, and the
 * destination is as it was. */
static void test_failures(void)
{
    float a[R][C], z[R][C], out[R][C];
    for (int i = 0; i < R * C; i++) {
        a[i / C][i % C] = (float)i;
        z[i / C][i % C] = -1.0f;
    }
    gpumem_array *d = device_of(&a[0][0], R, C), *dcols = cols_view(d, 0, 2);
    for (int which = 0; which < 4; which++) {
        int clean = 1, failed = 0;
        const char *name = which == 0 ? "d[:, ::2] -> host[:, 1::2]"
                           : which == 1 ? "host[:, ::2] -> d2[:, 1::2]"
                           : which == 2 ? "d[:, ::2] -> d2[:, 1::2]" : "host -> d2[:, 1::2]";
        for (uint64_t k = 1; k <= 12; k++) {
            float host[R][C];
            memcpy(host, z, sizeof host);
            gpumem_array *hz = wrap_f32(host, R, C), *hcols = cols_view(hz, 1, 2), *hsrc = cols_view(hz, 0, 2);
            gpumem_array *d2 = device_of(&z[0][0], R, C), *d2cols = cols_view(d2, 1, 2), *hhalf = NULL;
            float half[R][C / 2] = {{0}};
            gpumem_host_array_wrap(half, 2, (int64_t[]){R, C / 2}, NULL, f32, &hhalf);
            gpumem_debug_fail_call(k, 999);
            gpumem_status st = which == 0 ? gpumem_copy_to_host(dcols, hcols, NULL)
                               : which == 1 ? gpumem_array_copy(d2cols, hsrc, NULL)
                               : which == 2 ? gpumem_array_copy(d2cols, dcols, NULL)
                                            : gpumem_array_copy(d2cols, hhalf, NULL);
            gpumem_debug_fail_call(0, 0);
            if (st != GPUMEM_OK) {
                failed++;
                float now[R][C];
                if (which == 0)
                    memcpy(now, host, sizeof now);
                else
                    read_all(d2, now);
                /* allowed: a failure of the last step's wait, or of freeing after it completed */
                const char *msg = gpumem_last_error();
                int after = strstr(msg, "was issued") != NULL || strstr(msg, "the copy completed") != NULL;
                if (memcmp(now, z, sizeof now) != 0 && !after) {
                    clean = 0;
                    diag("%s, call %llu failing: the destination changed: %s", name, (unsigned long long)k, gpumem_last_error());
                }
            }
            gpumem_array *rel[] = {hz, hcols, hsrc, d2, d2cols, hhalf};
            for (size_t i = 0; i < 6; i++)
                gpumem_array_release(rel[i]);
        }
        ok(clean && failed > 0, "%s: each of its failing calls (%d) leaves the destination as it was", name,
           failed);
    }
    gpumem_array_release(dcols);
    gpumem_array_release(d);
    (void)out;
}

/* A big strided host side: packed by several threads. */
static void test_big_cpu_pack(void)
{
    const int64_t r = 1024, c = 2048;
    float *h = malloc((size_t)(r * c) * sizeof *h), *back = malloc((size_t)(r * c / 2) * sizeof *back);
    for (int64_t i = 0; i < r * c; i++)
        h[i] = (float)i;
    gpumem_array *ha = wrap_f32(h, r, c), *hv = cols_view(ha, 1, 2), *d = NULL, *hb = wrap_f32(back, r, c / 2);
    gpumem_device_array(ctx, 2, (int64_t[]){r, c / 2}, NULL, f32, 'C', NULL, &d);
    gpumem_status st = gpumem_array_copy(d, hv, NULL);
    check_path(st, GPUMEM_COPY_PATH_CPU_PACK, "8 MiB h[:, 1::2] into a device array");
    st = gpumem_copy_to_host(d, hb, NULL);
    int good = st == GPUMEM_OK && holds_cols(back, h, r, c, 1, 2);
    ok(good, "its 1 Mi values");
    /* and back into the strided host view */
    memset(h, 0, (size_t)(r * c) * sizeof *h);
    st = gpumem_copy_to_host(d, hv, NULL);
    check_path(st, GPUMEM_COPY_PATH_CPU_PACK, "a device array into 8 MiB h[:, 1::2]");
    good = 1;
    for (int64_t i = 0; good && i < r * c; i++)
        good = h[i] == (i % 2 ? (float)i : 0.0f);
    ok(good, "its values, and the gaps untouched");
    gpumem_array_release(ha);
    gpumem_array_release(hv);
    gpumem_array_release(hb);
    gpumem_array_release(d);
    free(h);
    free(back);
}

/* ---- random layouts of every kind ---- */

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(uint64_t n)
{
    return xorshift64(&rng) % n;
}

static void test_random(void)
{
    int bad = 0;
    int paths[9] = {0};
    for (int iter = 0; iter < 150 && bad < 5; iter++) {
        int64_t n[3] = {1 + (int64_t)rnd(4), 1 + (int64_t)rnd(5), 1 + (int64_t)rnd(6)};
        int sk = (int)rnd(3), dk = (int)rnd(3);
        random_copy c;
        random_copy_make(&c, ctx, &rng, sk, dk, n, 10000.0f);
        gpumem_status st = gpumem_array_copy(c.dv, c.sv, NULL);
        gpumem_copy_path p = last_path();
        if (p >= 0 && p < 9)
            paths[p]++;
        /* dst's base with the view's elements replaced, in order; its gaps untouched */
        int good = st == GPUMEM_OK && random_copy_exact(&c);
        if (!good) {
            bad++;
            ok(0, "random copy %d (kinds %d -> %d, shape %lldx%lldx%lld, path %s): %s", iter, sk, dk,
               (long long)n[0], (long long)n[1], (long long)n[2], gpumem_copy_path_name(p),
               st == GPUMEM_OK ? "wrong values" : gpumem_last_error());
        }
        random_copy_release(&c);
    }
    ok(bad == 0, "150 random copies between host, pinned and device views are exact, gaps untouched");
    diag("paths taken: host %d, contiguous %d, dma %d, device-pack %d, cpu-pack %d, cpu-device-pack %d", paths[1],
         paths[2], paths[3], paths[4], paths[5], paths[6]);
    ok(paths[GPUMEM_COPY_PATH_DEVICE_PACK] > 0 && paths[GPUMEM_COPY_PATH_CPU_PACK] > 0 &&
           paths[GPUMEM_COPY_PATH_CPU_DEVICE_PACK] > 0 && paths[GPUMEM_COPY_PATH_HOST] > 0,
       "they went through every packing path");
}

/* ---- GPUMEM_COPY_MIN_ROW_BYTES, in children ---- */

static void row_case(const void *arg, child_result *out)
{
    setenv("GPUMEM_COPY_MIN_ROW_BYTES", (const char *)arg, 1);
    gpumem_context *c = NULL;
    out->status = gpumem_context_create_default(&c);
    if (out->status != GPUMEM_OK)
        return;
    float a[R][C] = {{0}}, half[R][C / 2];
    f32 = gpumem_dtype_builtin(GPUMEM_FLOAT32);
    gpumem_array *h = wrap_f32(a, R, C), *d = NULL, *v, *o = wrap_f32(half, R, C / 2);
    out->status = gpumem_to_device(c, h, NULL, 0, &d);
    if (out->status != GPUMEM_OK) {
        snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
        gpumem_array_release(h);
        gpumem_array_release(o);
        gpumem_context_release(c);
        return;
    }
    v = cols_view(d, 0, 2);
    out->status = gpumem_copy_to_host(v, o, NULL);
    out->value[0] = last_path();
    snprintf(out->text, sizeof out->text, "%s", out->status ? gpumem_last_error() : "");
    gpumem_array_release(h);
    gpumem_array_release(d);
    gpumem_array_release(v);
    gpumem_array_release(o);
    gpumem_context_release(c);
}

static void test_env(void)
{
    child_result r;
    run_child(row_case, "0", &r);
    ok(r.status == GPUMEM_OK && r.value[0] == GPUMEM_COPY_PATH_DMA,
       "GPUMEM_COPY_MIN_ROW_BYTES=0: d[:, ::2] is one 2-D copy of 4-byte rows");
    run_child(row_case, "4096", &r);
    ok(r.status == GPUMEM_OK && r.value[0] == GPUMEM_COPY_PATH_DEVICE_PACK, "4096: packed on the device");
    run_child(row_case, "wide", &r);
    is_int(r.status, GPUMEM_ERROR_INVALID_ENVIRONMENT, "a bad value fails the copies");
    like(r.text, "GPUMEM_COPY_MIN_ROW_BYTES", "naming the variable");
}

int main(void)
{
    test_env(); /* forks: before this process touches the library */
    if (gpumem_context_create_default(&ctx) != GPUMEM_OK)
        bail_out("no context: %s", gpumem_last_error());
    f32 = gpumem_dtype_builtin(GPUMEM_FLOAT32);
    gpumem_copy_path p = (gpumem_copy_path)-1;
    is_int(gpumem_debug_last_copy_path(&p), GPUMEM_OK, "the path query");
    is_int(p, GPUMEM_COPY_PATH_NONE, "no copy yet: none");
    is_int(gpumem_debug_last_copy_path(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "NULL is refused");
    ok(gpumem_copy_path_name((gpumem_copy_path)99) == NULL, "an unknown path has no name");
    test_paths();
    test_reporting();
    test_transpose();
    test_failures();
    test_big_cpu_pack();
    test_random();
    gpumem_context_release(ctx);
    done_testing();
    return exit_status();
}
