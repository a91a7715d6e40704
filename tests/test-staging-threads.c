/* The staging engine's worker pool through the public API, on small chunks
 * so that every copy crosses many of them: several threads copying
 * pageable memory at once (on one shared stream, on their own streams,
 * synchronously), none ever falling back to the driver's call; strided
 * host sides of 1, 2, 4, 8 and 16-byte elements packed into and unpacked
 * out of the pinned slots, the device side contiguous or strided, gaps
 * untouched; downloads queued on a stream that land chunk by chunk,
 * followed by work on the same stream that must see their bytes; and
 * gpumem_clear_context_caches() giving back the slots and the kept bounce
 * blocks (the simulator's page-locked limit shows it). */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gpumem.h>

#include "arrays.h"
#include "child.h"
#include "tap.h"

static gpumem_context *ctx;
static const gpumem_dtype *u8;

static unsigned char pattern(size_t i, unsigned seed)
{
    return (unsigned char)(i * 7 + seed * 131 + i / 65536);
}

/* ---- threads at once ---- */

typedef struct worker_arg {
    gpumem_context *ctx; /* NULL: the test's */
    int index;
    gpumem_stream *stream; /* shared, own (made here) or NULL */
    int own_stream;
    size_t bytes;
    int rounds;
    long good, staged;
} worker_arg;

static void *copier(void *p)
{
    worker_arg *w = p;
    gpumem_context *c = w->ctx != NULL ? w->ctx : ctx;
    unsigned char *a = malloc(w->bytes), *b = malloc(w->bytes);
    int64_t n = (int64_t)w->bytes;
    gpumem_stream *s = w->stream;
    if (w->own_stream)
        gpumem_stream_create(c, 0, &s);
    gpumem_array *d = NULL, *ha = NULL, *hb = NULL;
    gpumem_device_array(c, 1, &n, NULL, u8, 'C', NULL, &d);
    gpumem_host_array_wrap(a, 1, &n, NULL, u8, &ha);
    gpumem_host_array_wrap(b, 1, &n, NULL, u8, &hb);
    w->good = d != NULL && ha != NULL && hb != NULL;
    w->staged = 1;
    for (int r = 0; r < w->rounds && w->good; r++) {
        unsigned seed = (unsigned)(w->index * 100 + r);
        for (size_t i = 0; i < w->bytes; i++)
            a[i] = pattern(i, seed);
        memset(b, 0, w->bytes);
        w->good = gpumem_array_copy(d, ha, s) == GPUMEM_OK;
        w->staged &= last_path() == GPUMEM_COPY_PATH_STAGED;
        if (s != NULL) /* the source was read when the upload returned */
            memset(a, 0xEE, w->bytes);
        /* back: queued into pageable memory on a stream, synchronous without */
        w->good = w->good && gpumem_array_copy(hb, d, s) == GPUMEM_OK;
        if (s == NULL)
            w->staged &= last_path() == GPUMEM_COPY_PATH_STAGED;
        w->good = w->good && (s == NULL || gpumem_stream_synchronize(s) == GPUMEM_OK);
        for (size_t i = 0; i < w->bytes && w->good; i++)
            w->good = b[i] == pattern(i, seed);
    }
    gpumem_array_release(d);
    gpumem_array_release(ha);
    gpumem_array_release(hb);
    if (w->own_stream)
        gpumem_stream_destroy(s);
    free(a);
    free(b);
    return NULL;
}

static void threads_at_once_rounds(int n, int mode, int rounds, const char *how)
{
    pthread_t tid[8];
    worker_arg args[8];
    gpumem_stream *shared = NULL;
    if (mode == 1)
        gpumem_stream_create(ctx, 0, &shared);
    for (int i = 0; i < n; i++) {
        args[i] = (worker_arg){NULL, i, shared, mode == 2, (1u << 20) + 4096 * (size_t)i + (size_t)i, rounds, 0, 0};
        pthread_create(&tid[i], NULL, copier, &args[i]);
    }
    int good = 1, staged = 1;
    for (int i = 0; i < n; i++) {
        pthread_join(tid[i], NULL);
        good &= args[i].good != 0;
        staged &= args[i].staged != 0;
    }
    ok(good, "%d threads, %s: %d round trips of 1 MiB and more each, exact", n, how, rounds);
    ok(staged, "%d threads, %s: every pageable copy staged (none fell back to the driver's call)", n, how);
    if (shared != NULL)
        gpumem_stream_destroy(shared);
}

static void threads_at_once(int n, int mode, const char *how)
{
    threads_at_once_rounds(n, mode, 3, how);
}

/* Strided copies through the device pack kernels' scratch (a transfer in
 * segments: workers wait for the caller's opens, the caller for their
 * chunks), from several threads at once. */
typedef struct strided_arg {
    int index;
    int good;
} strided_arg;

static int strided_case(gpumem_type type, int64_t rows, int64_t cols, int dev_strided, gpumem_copy_path *up,
                        gpumem_copy_path *down);

static void *strided_thread(void *p)
{
    strided_arg *a = p;
    a->good = 1;
    for (int r = 0; r < 3 && a->good; r++) {
        gpumem_copy_path up, down;
        a->good = strided_case(a->index % 2 ? GPUMEM_UINT32 : GPUMEM_UINT8, 64, (int64_t)(96u << 10) + a->index, 1,
                               &up, &down) &&
                  up == GPUMEM_COPY_PATH_CPU_DEVICE_PACK && down == GPUMEM_COPY_PATH_CPU_DEVICE_PACK;
    }
    return NULL;
}

/* ---- strided host sides ---- */

/* rows x cols elements of dt, the host side h[:, ::2] of a pageable rows x
 * 2cols buffer, the device side contiguous (dev_strided 0) or d[:, ::2]:
 * up, then down into another h2[:, ::2]; exact, gaps untouched. */
static int strided_case(gpumem_type type, int64_t rows, int64_t cols, int dev_strided, gpumem_copy_path *up,
                        gpumem_copy_path *down)
{
    const gpumem_dtype *dt = gpumem_dtype_builtin(type);
    size_t isz = 0;
    gpumem_dtype_itemsize(dt, &isz);
    size_t bytes = (size_t)(rows * 2 * cols) * isz;
    unsigned char *h = malloc(bytes), *h2 = malloc(bytes);
    for (size_t i = 0; i < bytes; i++) {
        h[i] = pattern(i, 3);
        h2[i] = 0xC3;
    }
    int64_t full[2] = {rows, 2 * cols}, half[2] = {rows, cols};
    gpumem_slice every_other[2] = {GPUMEM_SLICE_ALL, {0, GPUMEM_SLICE_DEFAULT, 2}};
    gpumem_array *H = NULL, *H2 = NULL, *hv = NULL, *h2v = NULL, *D = NULL, *dv = NULL;
    gpumem_host_array_wrap(h, 2, full, NULL, dt, &H);
    gpumem_host_array_wrap(h2, 2, full, NULL, dt, &H2);
    gpumem_array_slice(H, every_other, 2, &hv);
    gpumem_array_slice(H2, every_other, 2, &h2v);
    if (dev_strided) {
        gpumem_device_array(ctx, 2, full, NULL, dt, 'C', NULL, &D);
        gpumem_array_slice(D, every_other, 2, &dv);
    } else {
        gpumem_device_array(ctx, 2, half, NULL, dt, 'C', NULL, &dv);
    }
    int good = hv != NULL && h2v != NULL && dv != NULL && gpumem_array_copy(dv, hv, NULL) == GPUMEM_OK;
    *up = last_path();
    good = good && gpumem_array_copy(h2v, dv, NULL) == GPUMEM_OK;
    *down = last_path();
    if (!good)
        diag("%s", gpumem_last_error());
    for (size_t r = 0; r < (size_t)rows && good; r++)
        for (size_t c = 0; c < (size_t)(2 * cols) && good; c++) {
            size_t at = (r * (size_t)(2 * cols) + c) * isz;
            for (size_t k = 0; k < isz && good; k++)
                good = h2[at + k] == (c % 2 == 0 ? h[at + k] : 0xC3);
        }
    gpumem_array *all[] = {dv, D, h2v, hv, H2, H};
    for (size_t i = 0; i < 6; i++)
        gpumem_array_release(all[i]);
    free(h);
    free(h2);
    return good;
}

/* ---- queued downloads ---- */

/* A download of n bytes queued on s into pageable memory, then, on the same
 * stream, the upload of that memory into a second device array: it must
 * see every landed byte. */
static int queued_then_upload(size_t n)
{
    int64_t len = (int64_t)n;
    unsigned char *want = malloc(n), *host = calloc(1, n), *back = calloc(1, n);
    for (size_t i = 0; i < n; i++)
        want[i] = pattern(i, 9);
    gpumem_stream *s = NULL;
    gpumem_array *hw = NULL, *hh = NULL, *hb = NULL, *d = NULL, *d2 = NULL;
    gpumem_stream_create(ctx, 0, &s);
    gpumem_host_array_wrap(want, 1, &len, NULL, u8, &hw);
    gpumem_host_array_wrap(host, 1, &len, NULL, u8, &hh);
    gpumem_host_array_wrap(back, 1, &len, NULL, u8, &hb);
    gpumem_device_array(ctx, 1, &len, NULL, u8, 'C', NULL, &d2);
    int good = gpumem_to_device(ctx, hw, NULL, 0, &d) == GPUMEM_OK;
    good = good && gpumem_array_copy(hh, d, s) == GPUMEM_OK; /* queued: lands chunk by chunk */
    good = good && gpumem_array_copy(d2, hh, s) == GPUMEM_OK; /* later work on the stream */
    good = good && gpumem_stream_synchronize(s) == GPUMEM_OK;
    good = good && gpumem_array_copy(hb, d2, NULL) == GPUMEM_OK;
    good = good && memcmp(host, want, n) == 0 && memcmp(back, want, n) == 0;
    gpumem_array *all[] = {hw, hh, hb, d, d2};
    for (size_t i = 0; i < 5; i++)
        gpumem_array_release(all[i]);
    gpumem_stream_destroy(s);
    free(want);
    free(host);
    free(back);
    return good;
}

typedef struct queued_arg {
    int index;
    long good;
} queued_arg;

/* A thread's queued downloads on its own stream, two back to back, with a
 * strided destination too. */
static void *queued_thread(void *p)
{
    queued_arg *q = p;
    size_t n = (3u << 20) + 8 * (size_t)q->index;
    int64_t len = (int64_t)n, half = len / 2;
    unsigned char *want = malloc(n), *a = calloc(1, n), *b = calloc(1, n);
    for (size_t i = 0; i < n; i++)
        want[i] = pattern(i, (unsigned)q->index);
    gpumem_stream *s = NULL;
    gpumem_array *hw = NULL, *ha = NULL, *hb = NULL, *hbv = NULL, *d = NULL, *dv = NULL;
    gpumem_stream_create(ctx, 0, &s);
    gpumem_host_array_wrap(want, 1, &len, NULL, u8, &hw);
    gpumem_host_array_wrap(a, 1, &len, NULL, u8, &ha);
    gpumem_host_array_wrap(b, 1, &len, NULL, u8, &hb);
    gpumem_slice even = {0, 2 * half, 2}, odd = {1, 2 * half, 2};
    int good = gpumem_to_device(ctx, hw, s, 0, &d) == GPUMEM_OK && gpumem_array_slice(hb, &even, 1, &hbv) == GPUMEM_OK &&
               gpumem_array_slice(d, &odd, 1, &dv) == GPUMEM_OK;
    good = good && gpumem_array_copy(ha, d, s) == GPUMEM_OK;
    good = good && gpumem_array_copy(hbv, dv, s) == GPUMEM_OK; /* d[1::2] into b[::2] */
    good = good && gpumem_stream_synchronize(s) == GPUMEM_OK;
    good = good && memcmp(a, want, n) == 0;
    for (int64_t i = 0; i < half && good; i++)
        good = b[2 * i] == want[2 * i + 1] && b[2 * i + 1] == 0;
    gpumem_array *all[] = {hw, ha, hb, hbv, d, dv};
    for (size_t i = 0; i < 6; i++)
        gpumem_array_release(all[i]);
    gpumem_stream_destroy(s);
    free(want);
    free(a);
    free(b);
    q->good = good;
    return NULL;
}

/* ---- clear_context_caches ---- */

/* A page-locked limit of 8 MiB: the engine's slots (one thread: 2 x 1 MiB)
 * and a kept 2 MiB bounce block leave too little for 5 MiB of pinned
 * memory until gpumem_clear_context_caches() gives them back. */
static void clear_case(const void *arg, child_result *out)
{
    (void)arg;
    u8 = gpumem_dtype_builtin(GPUMEM_UINT8);
    setenv("GPUMEM_SIM_HOST_MEMORY", "8M", 1);
    gpumem_staging_settings s = {sizeof s, 1, 1u << 20, 2, 0};
    gpumem_staging_set(&s);
    gpumem_context *c = NULL;
    if ((out->status = gpumem_context_create(0, &c)) != GPUMEM_OK)
        return;
    gpumem_context_set_dealloc_limits(c, 0, 0.0);
    int64_t n = 2 << 20, pn = 5 << 20;
    unsigned char *a = malloc((size_t)n), *b = calloc(1, (size_t)n);
    memset(a, 7, (size_t)n);
    gpumem_array *ha = NULL, *hb = NULL, *d = NULL, *p = NULL;
    gpumem_stream *st = NULL;
    gpumem_host_array_wrap(a, 1, &n, NULL, u8, &ha);
    gpumem_host_array_wrap(b, 1, &n, NULL, u8, &hb);
    gpumem_stream_create(c, 0, &st);
    out->status = gpumem_to_device(c, ha, NULL, 0, &d); /* staged: the slots */
    if (out->status == GPUMEM_OK)
        out->status = gpumem_array_copy(hb, d, st); /* queued: a bounce block, kept */
    if (out->status == GPUMEM_OK)
        out->status = gpumem_stream_synchronize(st);
    out->value[0] = out->status == GPUMEM_OK && memcmp(a, b, (size_t)n) == 0;
    out->value[1] = gpumem_pinned_array(c, 1, &pn, NULL, u8, 'C', &p); /* held: refused */
    gpumem_array_release(p);
    p = NULL;
    out->value[2] = gpumem_clear_context_caches();
    out->value[3] = gpumem_pinned_array(c, 1, &pn, NULL, u8, 'C', &p);
    snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
    gpumem_array *all[] = {ha, hb, d, p};
    for (size_t i = 0; i < 4; i++)
        gpumem_array_release(all[i]);
    gpumem_stream_destroy(st);
    gpumem_context_release(c);
    free(a);
    free(b);
}

/* Two devices, two contexts, two threads in each, copying at once: the
 * contexts share the worker pool.  value[0]: all exact and staged. */
static void two_contexts_case(const void *arg, child_result *out)
{
    (void)arg;
    setenv("GPUMEM_SIM_DEVICES", "2", 1);
    u8 = gpumem_dtype_builtin(GPUMEM_UINT8);
    gpumem_staging_settings s = {sizeof s, 3, 64u << 10, 2, 256u << 10};
    gpumem_staging_set(&s);
    gpumem_context *c[2] = {NULL, NULL};
    out->status = gpumem_context_create(0, &c[0]);
    if (out->status == GPUMEM_OK)
        out->status = gpumem_context_create(1, &c[1]);
    if (out->status != GPUMEM_OK) {
        snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
        return;
    }
    pthread_t tid[4];
    worker_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (worker_arg){c[i % 2], i, NULL, 1, (1u << 20) + 64 * (size_t)i, 2, 0, 0};
        pthread_create(&tid[i], NULL, copier, &args[i]);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(tid[i], NULL);
    long good = 1;
    for (int i = 0; i < 4; i++)
        good &= args[i].good && args[i].staged;
    out->value[0] = good;
    gpumem_context_release(c[0]);
    gpumem_context_release(c[1]);
}

int main(void)
{
    child_result r;
    run_child(clear_case, NULL, &r);
    ok(r.exited && r.exit_code == 0 && r.status == GPUMEM_OK && r.value[0] == 1,
       "a staged upload and a queued download under an 8 MiB page-locked limit");
    if (test_on_sim())
        is_int(r.value[1], GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "5 MiB more pinned memory is refused while the engine holds "
                                                             "its slots and a bounce block");
    else
        skip(1, "the 8 MiB page-locked limit is the simulator's (GPUMEM_SIM_HOST_MEMORY)");
    is_int(r.value[2], GPUMEM_OK, "gpumem_clear_context_caches()");
    ok(r.value[3] == GPUMEM_OK, "gives them back: the 5 MiB are allocated (%s)", r.value[3] ? r.text : "");

    if (!test_on_sim() && child_device_count() < 2) {
        skip(1, "two contexts on two devices: this machine has one GPU");
    } else {
        run_child(two_contexts_case, NULL, &r);
        ok(r.exited && r.exit_code == 0 && r.status == GPUMEM_OK && r.value[0] == 1,
           "two contexts on two devices, two threads each copying at once on their own streams: exact, staged (%s)",
           r.text);
    }

    u8 = gpumem_dtype_builtin(GPUMEM_UINT8);
    if (gpumem_context_create_default(&ctx) != GPUMEM_OK)
        bail_out("no context: %s", gpumem_last_error());
    /* 3 threads per copy, chunks of 64 KiB, 2 slots each, staged from 256 KiB */
    gpumem_staging_settings s = {sizeof s, 3, 64u << 10, 2, 256u << 10};
    is_int(gpumem_staging_set(&s), GPUMEM_OK, "3 threads per copy, 64 KiB slots");

    threads_at_once(4, 0, "synchronous copies");
    threads_at_once(4, 1, "one shared stream");
    threads_at_once(6, 2, "a stream each");

    static const gpumem_type types[] = {GPUMEM_UINT8, GPUMEM_UINT16, GPUMEM_UINT32, GPUMEM_UINT64, GPUMEM_COMPLEX128};
    for (size_t t = 0; t < 5; t++) {
        size_t isz = (size_t)1 << t;
        for (int big = 0; big < 2; big++) {
            int64_t rows = big ? 96 : 5, cols = big ? (int64_t)((48u << 10) / isz) + 3 : 37;
            for (int ds = 0; ds < 2; ds++) {
                gpumem_copy_path up, down;
                int good = strided_case(types[t], rows, cols, ds, &up, &down);
                gpumem_copy_path want = ds ? GPUMEM_COPY_PATH_CPU_DEVICE_PACK : GPUMEM_COPY_PATH_CPU_PACK;
                ok(good && up == want && down == want,
                   "%zu-byte elements, %lld x %lld, host [:, ::2] %s device %s: exact, gaps untouched, path %s/%s", isz,
                   (long long)rows, (long long)cols, "<->", ds ? "[:, ::2]" : "contiguous", gpumem_copy_path_name(up),
                   gpumem_copy_path_name(down));
            }
        }
    }

    ok(queued_then_upload(5u << 20), "a 5 MiB download queued on a stream, then an upload of the same memory on it: "
                                     "the upload saw every landed byte");
    ok(queued_then_upload(100), "the same with 100 bytes");
    pthread_t tid[4];
    queued_arg qa[4];
    for (int i = 0; i < 4; i++) {
        qa[i] = (queued_arg){i, 0};
        pthread_create(&tid[i], NULL, queued_thread, &qa[i]);
    }
    int all = 1;
    for (int i = 0; i < 4; i++) {
        pthread_join(tid[i], NULL);
        all &= qa[i].good != 0;
    }
    ok(all, "4 threads, each two queued downloads on its own stream (one into a strided destination): exact, gaps "
            "untouched");

    /* chunks that ramp: 8 threads of 1 MiB slots start (and end) with 128 KiB
     * chunks growing to 1 MiB; odd sizes end on a short chunk */
    gpumem_staging_settings ramp = {sizeof ramp, 8, 1u << 20, 3, 256u << 10};
    is_int(gpumem_staging_set(&ramp), GPUMEM_OK, "8 threads per copy, 1 MiB slots, depth 3");
    static const size_t sizes[] = {(4u << 20) + 13, (9u << 20) + 4097, (21u << 20) + 3};
    for (size_t i = 0; i < 3; i++) {
        worker_arg w = {NULL, (int)i, NULL, 0, sizes[i], 2, 0, 0};
        copier(&w);
        ok(w.good && w.staged, "%zu bytes up and back, staged in ramping chunks: exact", sizes[i]);
        w = (worker_arg){NULL, (int)i + 10, NULL, 1, sizes[i], 2, 0, 0};
        copier(&w);
        ok(w.good && w.staged, "the same on a stream (the download queued): exact");
    }

    /* the hand-off between callers and workers under load: many more
     * threads per copy than CPUs, small slots (many chunks), several
     * copies at once; every wait of a copy ends on a signal (no timeout
     * moves it on), so a lost wake-up hangs here */
    gpumem_staging_settings many = {sizeof many, 16, 64u << 10, 2, 256u << 10};
    is_int(gpumem_staging_set(&many), GPUMEM_OK, "16 threads per copy, 64 KiB slots, depth 2");
    threads_at_once_rounds(8, 0, 12, "16 threads per copy, synchronous copies");
    threads_at_once_rounds(8, 2, 12, "16 threads per copy, a stream each");
    pthread_t st[4];
    strided_arg sa[4];
    for (int i = 0; i < 4; i++) {
        sa[i] = (strided_arg){i, 0};
        pthread_create(&st[i], NULL, strided_thread, &sa[i]);
    }
    all = 1;
    for (int i = 0; i < 4; i++) {
        pthread_join(st[i], NULL);
        all &= sa[i].good;
    }
    ok(all, "4 threads, each 3 strided round trips through device scratch in segments at once: exact, gaps untouched, "
            "path cpu-device-pack");

    /* uploads of 32 MiB and more fill their slots with non-temporal stores */
    gpumem_staging_settings big = {sizeof big, 4, 2u << 20, 2, 256u << 10};
    is_int(gpumem_staging_set(&big), GPUMEM_OK, "4 threads per copy, 2 MiB slots");
    worker_arg wb = {NULL, 7, NULL, 0, (33u << 20) + 5, 1, 0, 0};
    copier(&wb);
    ok(wb.good && wb.staged, "33 MiB + 5 bytes up (slots filled around the cache) and back, staged: exact");
    gpumem_copy_path bu, bd;
    int bgood = strided_case(GPUMEM_UINT32, 64, 131075, 0, &bu, &bd);
    ok(bgood && bu == GPUMEM_COPY_PATH_CPU_PACK && bd == GPUMEM_COPY_PATH_CPU_PACK,
       "32 MiB + 3 KiB of 4-byte elements from host [:, ::2] (packed around the cache) and back: exact, gaps "
       "untouched, path %s/%s", gpumem_copy_path_name(bu), gpumem_copy_path_name(bd));
    gpumem_context_release(ctx);
    done_testing();
    return exit_status();
}
