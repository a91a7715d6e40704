/* The caller of a staged transfer in segments (lib/staging_xfer.c; issue
 * 29's strided pageable downloads): packed runs of device scratch staged
 * in segments of 1 MiB through slots of 1 MiB, so that the calling thread,
 * which opens and closes the segments, polls its slots and moves its
 * chunks in pieces, opening and closing segments meanwhile.  Every copy is
 * exact and leaves the gaps untouched: d[::2] and a 3-D slab into pageable
 * memory and back, h[:, ::2] to d[:, ::2] and back, synchronous and on a
 * stream, on one thread (the caller alone) and three; the caller advanced
 * the segments from inside its waits (gm_staging_caller_advances) when the
 * threads poll, and never when they do not (a machine of few CPUs); where
 * they poll, no segment opens before every chunk of the one before was
 * taken (gm_staging_early_opens). */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gpumem.h>

#include "arrays.h"
#include "staging.h"
#include "tap.h"
#include "workers.h"

static gpumem_context *ctx;
static gpumem_stream *stream;
static const gpumem_dtype *u32;

static uint32_t pat(int64_t i, unsigned seed)
{
    return (uint32_t)i * 2654435761u ^ (seed * 0x9E3779B9u);
}

/* A copy on the stream when on_stream (then waited for). */
static gpumem_status copy(gpumem_array *dst, gpumem_array *src, int on_stream)
{
    gpumem_status st = gpumem_array_copy(dst, src, on_stream ? stream : NULL);
    return st == GPUMEM_OK && on_stream ? gpumem_stream_synchronize(stream) : st;
}

/* A device array of n uint32 (ndim, shape) filled with pat(i, seed), from host. */
static gpumem_array *device_filled(int ndim, const int64_t *shape, int64_t n, unsigned seed, uint32_t *host)
{
    gpumem_array *d = NULL, *h = NULL;
    for (int64_t i = 0; i < n; i++)
        host[i] = pat(i, seed);
    int64_t flat = n;
    if (gpumem_device_array(ctx, ndim, shape, NULL, u32, 'C', NULL, &d) != GPUMEM_OK ||
        gpumem_host_array_wrap(host, 1, &flat, NULL, u32, &h) != GPUMEM_OK) {
        gpumem_array_release(d);
        gpumem_array_release(h);
        return NULL;
    }
    gpumem_array *d1 = NULL;
    gpumem_status st = gpumem_array_reshape(d, 1, &flat, 'C', GPUMEM_NO_COPY, NULL, &d1);
    if (st == GPUMEM_OK)
        st = gpumem_array_copy(d1, h, NULL);
    gpumem_array_release(d1);
    gpumem_array_release(h);
    if (st != GPUMEM_OK) {
        diag("filling: %s", gpumem_last_error());
        gpumem_array_release(d);
        return NULL;
    }
    return d;
}

/* Reads the whole device array d of n uint32 into host. */
static int read_back(gpumem_array *d, int64_t n, uint32_t *host)
{
    gpumem_array *d1 = NULL, *h = NULL;
    int good = gpumem_array_reshape(d, 1, &n, 'C', GPUMEM_NO_COPY, NULL, &d1) == GPUMEM_OK &&
               gpumem_host_array_wrap(host, 1, &n, NULL, u32, &h) == GPUMEM_OK &&
               gpumem_array_copy(h, d1, NULL) == GPUMEM_OK;
    gpumem_array_release(d1);
    gpumem_array_release(h);
    return good;
}

/* d[::2] of a 1-D device array of 2n into pageable memory, then pageable
 * memory (other values) into d[::2]: exact, the odd elements untouched. */
static int every_other(int64_t n, int on_stream, gpumem_copy_path *down, gpumem_copy_path *up)
{
    int64_t full = 2 * n;
    uint32_t *src = malloc((size_t)full * 4), *h = malloc((size_t)n * 4), *back = malloc((size_t)full * 4);
    gpumem_array *d = src != NULL ? device_filled(1, &full, full, 1, src) : NULL, *dv = NULL, *hv = NULL;
    int good = d != NULL && h != NULL && back != NULL &&
               gpumem_array_slice(d, (gpumem_slice[]){{0, GPUMEM_SLICE_DEFAULT, 2}}, 1, &dv) == GPUMEM_OK &&
               gpumem_host_array_wrap(h, 1, &n, NULL, u32, &hv) == GPUMEM_OK;
    if (good) {
        memset(h, 0xC3, (size_t)n * 4);
        good = copy(hv, dv, on_stream) == GPUMEM_OK;
        *down = last_path();
    }
    for (int64_t i = 0; i < n && good; i++)
        if (h[i] != pat(2 * i, 1)) {
            diag("d[::2] down: element %lld is %u, not %u", (long long)i, h[i], pat(2 * i, 1));
            good = 0;
        }
    if (good) {
        for (int64_t i = 0; i < n; i++)
            h[i] = pat(i, 2);
        good = copy(dv, hv, on_stream) == GPUMEM_OK;
        *up = last_path();
    }
    good = good && read_back(d, full, back);
    for (int64_t i = 0; i < full && good; i++) {
        uint32_t want = i % 2 == 0 ? pat(i / 2, 2) : pat(i, 1);
        if (back[i] != want) {
            diag("d[::2] up: element %lld is %u, not %u", (long long)i, back[i], want);
            good = 0;
        }
    }
    if (!good)
        diag("%s", gpumem_last_error());
    gpumem_array_release(hv);
    gpumem_array_release(dv);
    gpumem_array_release(d);
    free(src);
    free(h);
    free(back);
    return good;
}

/* The inner 32 x 32 of every 48 x 48 plane of n0 planes into pageable memory. */
static int slab(int64_t n0, int on_stream, gpumem_copy_path *down)
{
    const int64_t e = 32, f = 48, n = n0 * f * f;
    uint32_t *src = malloc((size_t)n * 4), *h = malloc((size_t)(n0 * e * e) * 4);
    gpumem_array *d = src != NULL ? device_filled(3, (int64_t[]){n0, f, f}, n, 3, src) : NULL, *dv = NULL, *hv = NULL;
    gpumem_slice s[3] = {GPUMEM_SLICE_ALL, {8, 8 + e, 1}, {8, 8 + e, 1}};
    int good = d != NULL && h != NULL && gpumem_array_slice(d, s, 3, &dv) == GPUMEM_OK &&
               gpumem_host_array_wrap(h, 3, (int64_t[]){n0, e, e}, NULL, u32, &hv) == GPUMEM_OK;
    if (good) {
        memset(h, 0xC3, (size_t)(n0 * e * e) * 4);
        good = copy(hv, dv, on_stream) == GPUMEM_OK;
        *down = last_path();
    }
    for (int64_t p = 0; p < n0 && good; p++)
        for (int64_t r = 0; r < e && good; r++)
            for (int64_t c = 0; c < e && good; c++) {
                uint32_t got = h[(p * e + r) * e + c], want = pat((p * f + r + 8) * f + c + 8, 3);
                if (got != want) {
                    diag("slab: (%lld, %lld, %lld) is %u, not %u", (long long)p, (long long)r, (long long)c, got,
                         want);
                    good = 0;
                }
            }
    if (!good)
        diag("%s", gpumem_last_error());
    gpumem_array_release(hv);
    gpumem_array_release(dv);
    gpumem_array_release(d);
    free(src);
    free(h);
    return good;
}

/* h[:, ::2] of pageable (rows, 2 cols) into d[:, ::2], then d[:, ::2] into
 * another h2[:, ::2]: exact, the host gaps untouched. */
static int both_strided(int64_t rows, int64_t cols, int on_stream, gpumem_copy_path *up, gpumem_copy_path *down)
{
    int64_t n = rows * 2 * cols, full[2] = {rows, 2 * cols};
    uint32_t *h = malloc((size_t)n * 4), *h2 = malloc((size_t)n * 4);
    gpumem_array *H = NULL, *H2 = NULL, *hv = NULL, *h2v = NULL, *D = NULL, *dv = NULL;
    gpumem_slice every_other[2] = {GPUMEM_SLICE_ALL, {0, GPUMEM_SLICE_DEFAULT, 2}};
    int good = h != NULL && h2 != NULL;
    for (int64_t i = 0; i < n && good; i++) {
        h[i] = pat(i, 4);
        h2[i] = 0xC3C3C3C3u;
    }
    good = good && gpumem_host_array_wrap(h, 2, full, NULL, u32, &H) == GPUMEM_OK &&
           gpumem_host_array_wrap(h2, 2, full, NULL, u32, &H2) == GPUMEM_OK &&
           gpumem_array_slice(H, every_other, 2, &hv) == GPUMEM_OK &&
           gpumem_array_slice(H2, every_other, 2, &h2v) == GPUMEM_OK &&
           gpumem_device_array(ctx, 2, full, NULL, u32, 'C', NULL, &D) == GPUMEM_OK &&
           gpumem_array_slice(D, every_other, 2, &dv) == GPUMEM_OK;
    if (good) {
        good = copy(dv, hv, on_stream) == GPUMEM_OK;
        *up = last_path();
    }
    if (good) {
        good = copy(h2v, dv, on_stream) == GPUMEM_OK;
        *down = last_path();
    }
    for (int64_t i = 0; i < n && good; i++) {
        uint32_t want = i % 2 == 0 ? h[i] : 0xC3C3C3C3u;
        if (h2[i] != want) {
            diag("h[:, ::2]: element %lld is %u, not %u", (long long)i, h2[i], want);
            good = 0;
        }
    }
    if (!good)
        diag("%s", gpumem_last_error());
    gpumem_array *all[] = {dv, D, h2v, hv, H2, H};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        gpumem_array_release(all[i]);
    free(h);
    free(h2);
    return good;
}

/* Every case at threads, the threads polling (spin ns) or not (0). */
static void cases(unsigned threads, long spin)
{
    gpumem_staging_settings s = {sizeof s, threads, 1u << 20, 2, 256u << 10};
    is_int(gpumem_staging_set(&s), GPUMEM_OK, "staging threads set");
    gm_workers_set_spin(spin);
    const char *how = spin > 0 ? "polling" : "not polling";
    for (int on_stream = 0; on_stream < 2; on_stream++) {
        const char *where = on_stream ? "on a stream" : "synchronous";
        gpumem_copy_path down = GPUMEM_COPY_PATH_NONE, up = GPUMEM_COPY_PATH_NONE;
        unsigned long a0 = gm_staging_caller_advances(), e0 = gm_staging_early_opens();
        int good = every_other((6 << 20) / 4 + 5, on_stream, &down, &up);
        unsigned long a1 = gm_staging_caller_advances(), e1 = gm_staging_early_opens();
        ok(good && down == GPUMEM_COPY_PATH_DEVICE_PACK && up == GPUMEM_COPY_PATH_DEVICE_PACK,
           "%u threads, %s, %s: 6 MiB + 20 B of d[::2] down into pageable memory and up again, in segments: exact, "
           "gaps untouched, path %s/%s",
           threads, how, where, gpumem_copy_path_name(down), gpumem_copy_path_name(up));
        if (threads == 1 && spin > 0)
            ok(a1 - a0 >= 6, "the caller alone advanced the segments from inside its waits (%lu times)", a1 - a0);
        else if (spin == 0)
            is_int((long long)(a1 - a0), 0, "threads that do not poll: the caller waits in the driver, in one piece");
        if (spin > 0)
            is_int((long long)(e1 - e0), 0,
                   "each segment opened once every chunk of the one before was taken (no transfer waits behind a "
                   "later segment's kernel)");
        else if (threads == 1)
            ok(e1 - e0 >= 2, "threads that do not poll: the caller opens two segments at once, ahead (%lu early)",
               e1 - e0);
        /* (on a stream a download may be queued: its own path) */
        good = slab(160, on_stream, &down);
        ok(good && (on_stream || down == GPUMEM_COPY_PATH_DEVICE_PACK),
           "%u threads, %s, %s: a 3-D slab of 160 planes of 32 x 32 into pageable memory: exact, path %s", threads,
           how, where, gpumem_copy_path_name(down));
        good = both_strided(40, (int64_t)(24u << 10) + 3, on_stream, &up, &down);
        ok(good && up == GPUMEM_COPY_PATH_CPU_DEVICE_PACK && (on_stream || down == GPUMEM_COPY_PATH_CPU_DEVICE_PACK),
           "%u threads, %s, %s: h[:, ::2] into d[:, ::2] and back (packed by the staging threads, in segments): "
           "exact, gaps untouched, path %s/%s",
           threads, how, where, gpumem_copy_path_name(up), gpumem_copy_path_name(down));
    }
}

int main(void)
{
    /* scratch buffers of 1 MiB: a staged copy of several MiB has several segments */
    setenv("GPUMEM_COPY_SCRATCH_CHUNK", "1M", 1);
    u32 = gpumem_dtype_builtin(GPUMEM_UINT32);
    if (gpumem_context_create_default(&ctx) != GPUMEM_OK || gpumem_stream_create(ctx, 0, &stream) != GPUMEM_OK)
        bail_out("no context: %s", gpumem_last_error());
    cases(1, 50000);
    cases(3, 50000);
    cases(3, 0);
    cases(1, 0);
    gm_workers_set_spin(-1);
    gpumem_stream_destroy(stream);
    gpumem_context_release(ctx);
    done_testing();
    return exit_status();
}
