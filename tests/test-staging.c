/* The staging engine: its settings (API and GPUMEM_STAGING_*), pageable
 * uploads and downloads through the pinned ring (values exact at every
 * chunk boundary), asynchronous uploads, the threshold, a page-locked side
 * that skips it, and a ring rebuilt when the settings change. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gpumem.h>

#include "arrays.h"
#include "child.h"
#include "tap.h"

static void env_case(const void *arg, child_result *out)
{
    setenv("GPUMEM_STAGING_DEPTH", (const char *)arg, 1);
    gpumem_staging_settings s = {.size = sizeof s};
    out->status = gpumem_staging_get(&s);
    out->value[0] = s.depth;
    snprintf(out->text, sizeof out->text, "%s", out->status ? gpumem_last_error() : "");
}

/* n bytes up and down through the engine; 1 when exact. */
static int round_trip(gpumem_context *ctx, size_t n, gpumem_stream *s, gpumem_copy_path *up, gpumem_copy_path *down)
{
    unsigned char *a = malloc(n), *b = malloc(n);
    for (size_t i = 0; i < n; i++) {
        a[i] = (unsigned char)(i * 7 + i / 65536);
        b[i] = 0;
    }
    int64_t len = (int64_t)n;
    const gpumem_dtype *u8 = gpumem_dtype_builtin(GPUMEM_UINT8);
    gpumem_array *ha = NULL, *hb = NULL, *d = NULL;
    gpumem_host_array_wrap(a, 1, &len, NULL, u8, &ha);
    gpumem_host_array_wrap(b, 1, &len, NULL, u8, &hb);
    int good = gpumem_to_device(ctx, ha, s, 0, &d) == GPUMEM_OK;
    *up = last_path();
    if (s != NULL) {
        memset(a, 0, n); /* an upload on a stream has read the source when it returns */
        good = good && gpumem_stream_synchronize(s) == GPUMEM_OK;
    }
    good = good && gpumem_copy_to_host(d, hb, NULL) == GPUMEM_OK;
    *down = last_path();
    for (size_t i = 0; good && i < n; i++)
        good = b[i] == (unsigned char)(i * 7 + i / 65536);
    gpumem_array_release(ha);
    gpumem_array_release(hb);
    gpumem_array_release(d);
    free(a);
    free(b);
    return good;
}

int main(void)
{
    child_result r;
    run_child(env_case, "6", &r);
    ok(r.status == GPUMEM_OK && r.value[0] == 6, "GPUMEM_STAGING_DEPTH=6 is the depth");
    run_child(env_case, "1", &r);
    is_int(r.status, GPUMEM_ERROR_INVALID_ENVIRONMENT, "GPUMEM_STAGING_DEPTH=1 is refused");
    like(r.text, "GPUMEM_STAGING_DEPTH", "naming the variable");

    gpumem_context *ctx = NULL;
    if (gpumem_context_create_default(&ctx) != GPUMEM_OK)
        bail_out("no context: %s", gpumem_last_error());
    gpumem_staging_settings s = {.size = sizeof s};
    is_int(gpumem_staging_get(&s), GPUMEM_OK, "the settings");
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    long three_quarters = cpus * 3 / 4;
    ok(s.threads == (three_quarters < 1 ? 1u : three_quarters > 16 ? 16u : (unsigned)three_quarters) &&
           s.chunk_bytes == (2u << 20) && s.depth == 2 && s.min_bytes == (4u << 20),
       "the defaults: threads %u (three quarters of the %ld CPUs, at least 1, at most 16), slots of 2 MiB, 2 per "
       "thread, from 4 MiB", s.threads, cpus);
    gpumem_staging_settings bad = s;
    bad.size = 3;
    is_int(gpumem_staging_get(&bad), GPUMEM_ERROR_INVALID_VALUE, "a wrong size is refused");
    bad = s;
    bad.depth = 1;
    is_int(gpumem_staging_set(&bad), GPUMEM_ERROR_INVALID_VALUE, "depth 1 is refused");
    like(gpumem_last_error(), "depth", "naming the field");
    bad = s;
    bad.chunk_bytes = 1000;
    is_int(gpumem_staging_set(&bad), GPUMEM_ERROR_INVALID_VALUE, "a chunk below 64 KiB is refused");
    bad = s;
    bad.threads = 0;
    is_int(gpumem_staging_set(&bad), GPUMEM_ERROR_INVALID_VALUE, "0 threads are refused");

    /* small chunks, so that a few MiB cross many chunk boundaries */
    gpumem_staging_settings small = {sizeof small, 3, 64u << 10, 2, 256u << 10};
    is_int(gpumem_staging_set(&small), GPUMEM_OK, "3 threads, chunks of 64 KiB, depth 2, from 256 KiB");
    gpumem_copy_path up, down;
    ok(round_trip(ctx, (3u << 20) + 12345, NULL, &up, &down), "3 MiB + 12345 bytes up and down are exact");
    is_int(up, GPUMEM_COPY_PATH_STAGED, "the upload was staged");
    is_int(down, GPUMEM_COPY_PATH_STAGED, "the download was staged");
    ok(round_trip(ctx, 100000, NULL, &up, &down), "100000 bytes are exact");
    ok(up == GPUMEM_COPY_PATH_CONTIGUOUS && down == GPUMEM_COPY_PATH_CONTIGUOUS, "below the threshold: the driver's call");
    gpumem_stream *st = NULL;
    gpumem_stream_create(ctx, 0, &st);
    ok(round_trip(ctx, (1u << 20) + 3, st, &up, &down), "an upload on a stream: exact after synchronizing");
    is_int(up, GPUMEM_COPY_PATH_STAGED, "and staged");
    gpumem_stream_destroy(st);

    /* new settings: the ring is rebuilt at its next use */
    gpumem_staging_settings other = {sizeof other, 2, 128u << 10, 3, 0};
    gpumem_staging_set(&other);
    ok(round_trip(ctx, (2u << 20) + 1, NULL, &up, &down), "after new settings, exact");
    ok(up == GPUMEM_COPY_PATH_STAGED && down == GPUMEM_COPY_PATH_STAGED, "and staged");

    /* a pinned host side skips it */
    const gpumem_dtype *u8 = gpumem_dtype_builtin(GPUMEM_UINT8);
    int64_t n = 1 << 20;
    gpumem_array *p = NULL, *d = NULL;
    gpumem_pinned_array(ctx, 1, &n, NULL, u8, 'C', &p);
    gpumem_device_array(ctx, 1, &n, NULL, u8, 'C', NULL, &d);
    is_int(gpumem_array_copy(d, p, NULL), GPUMEM_OK, "a pinned upload");
    is_int(last_path(), GPUMEM_COPY_PATH_CONTIGUOUS, "is one driver transfer");
    gpumem_array_release(p);
    gpumem_array_release(d);

    /* every call of a staged upload failing in turn fails it cleanly */
    int clean = 1;
    for (uint64_t k = 1; k <= 12; k++) {
        static unsigned char buf[300000];
        int64_t m = sizeof buf;
        gpumem_array *h = NULL, *dd = NULL;
        gpumem_host_array_wrap(buf, 1, &m, NULL, u8, &h);
        gpumem_device_array(ctx, 1, &m, NULL, u8, 'C', NULL, &dd);
        gpumem_debug_fail_call(k, 999);
        gpumem_status rc = gpumem_array_copy(dd, h, NULL);
        gpumem_debug_fail_call(0, 0);
        if (rc != GPUMEM_OK && strstr(gpumem_last_error(), "CUDA_ERROR_UNKNOWN") == NULL)
            clean = 0;
        gpumem_array_release(h);
        gpumem_array_release(dd);
    }
    ok(clean, "a failing call of a staged upload is reported with the driver's error");

    /* a big download queued on a stream lands on several threads, exactly */
    {
        int64_t big = (12 << 20) + 4, half = big / 2;
        unsigned char *host = malloc((size_t)big), *want = malloc((size_t)big);
        gpumem_array *h = NULL, *dd = NULL, *hv = NULL, *dv = NULL;
        gpumem_stream *qs = NULL;
        for (int64_t i = 0; i < big; i++)
            want[i] = (unsigned char)(i * 7 + 3);
        gpumem_host_array_wrap(want, 1, &big, NULL, u8, &h);
        gpumem_stream_create(ctx, 0, &qs);
        is_int(gpumem_to_device(ctx, h, qs, 0, &dd), GPUMEM_OK, "12 MiB + 4 bytes to the device");
        gpumem_array_release(h);
        memset(host, 0, (size_t)big);
        gpumem_host_array_wrap(host, 1, &big, NULL, u8, &h);
        is_int(gpumem_array_copy(h, dd, qs), GPUMEM_OK, "queued back into pageable memory");
        is_int(gpumem_stream_synchronize(qs), GPUMEM_OK, "synchronize");
        ok(memcmp(host, want, (size_t)big) == 0, "every byte landed");
        /* strided both sides: dd[1::2] into host[::2] (the host plan, one thread) */
        memset(host, 0, (size_t)big);
        gpumem_slice odd = {1, GPUMEM_SLICE_DEFAULT, 2}, even = {0, big - 1, 2};
        gpumem_array_slice(dd, &odd, 1, &dv);
        gpumem_array_slice(h, &even, 1, &hv);
        is_int(gpumem_array_copy(hv, dv, qs), GPUMEM_OK, "queued: dd[1::2] into host[:-1:2]");
        gpumem_stream_synchronize(qs);
        int wrong = 0;
        for (int64_t i = 0; i < half && !wrong; i++)
            wrong = host[2 * i] != want[2 * i + 1] || host[2 * i + 1] != 0;
        ok(!wrong, "the strided download landed, the gaps untouched");
        gpumem_array_release(hv);
        gpumem_array_release(dv);
        gpumem_array_release(h);
        gpumem_array_release(dd);
        gpumem_stream_destroy(qs);
        free(host);
        free(want);
    }
    gpumem_context_release(ctx);
    done_testing();
    return exit_status();
}
