/*
 * test-poison: GPUMEM_DEBUG=poison and GPUMEM_DEBUG=copies (gpumem/debug.h).
 *
 * GPUMEM_DEBUG is read once per process, so each case runs in a forked
 * child with its own value; the child reports its checks through a pipe
 * ("1 name" or "0 name" per line) and the parent turns them into TAP.
 * On the simulator queued work waits GPUMEM_SIM_STREAM_DELAY_US unless
 * something synchronizes with it, so "read before the synchronization"
 * deterministically reads before the copy ran; on a GPU those checks
 * become "each element is the pattern or the right value, never the stale
 * one".
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gpumem.h>

#include "arrays.h"
#include "tap.h"

enum { N = 4096 };

static FILE *report;         /* the child's end of the pipe */
static char errpath[] = "/tmp/gpumem-test-poison-errXXXXXX";
static int sim;

static void check(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(int cond, const char *fmt, ...)
{
    char name[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    for (char *p = name; *p != '\0'; p++)
        if (*p == '\n')
            *p = ' ';
    fprintf(report, "%d %s\n", cond ? 1 : 0, name);
    fflush(report);
}

/* Runs fn in a child with GPUMEM_DEBUG=debug (NULL: unset) and, when
 * capture, its stderr into errpath. */
static void run_case(const char *title, void (*fn)(void), const char *debug, int capture)
{
    int fds[2];
    if (pipe(fds) != 0)
        bail_out("pipe");
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0)
        bail_out("fork");
    if (pid == 0) {
        close(fds[0]);
        report = fdopen(fds[1], "w");
        if (debug != NULL)
            setenv("GPUMEM_DEBUG", debug, 1);
        else
            unsetenv("GPUMEM_DEBUG");
        if (sim)
            setenv("GPUMEM_SIM_STREAM_DELAY_US", "2000000", 1);
        if (capture) {
            FILE *f = fopen(errpath, "w");
            if (f == NULL || dup2(fileno(f), 2) < 0)
                _exit(3);
            fclose(f);
        }
        fn();
        fclose(report);
        _exit(0);
    }
    close(fds[1]);
    FILE *in = fdopen(fds[0], "r");
    char line[600];
    int n = 0;
    while (fgets(line, sizeof line, in) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        ok(line[0] == '1', "%s: %s", title, line + 2);
        n++;
    }
    fclose(in);
    int ws = 0;
    waitpid(pid, &ws, 0);
    ok(WIFEXITED(ws) && WEXITSTATUS(ws) == 0 && n > 0, "%s: the case ran to its end (%d checks)", title, n);
}

/* Byte k of an element of the pattern. */
static unsigned char pat(size_t k)
{
    return (unsigned char)((GPUMEM_DEBUG_POISON_WORD >> (8 * (k % 4))) & 0xffu);
}

/* n elements of itemsize bytes, stride bytes apart from p, each holds the pattern from its first byte. */
static int is_poison(const void *p, size_t n, size_t itemsize, size_t stride)
{
    const unsigned char *b = p;
    for (size_t e = 0; e < n; e++)
        for (size_t k = 0; k < itemsize; k++)
            if (b[e * stride + k] != pat(k))
                return 0;
    return 1;
}

static gpumem_context *context(void)
{
    gpumem_context *ctx = NULL;
    if (gpumem_context_create_default(&ctx) != GPUMEM_OK) {
        check(0, "a context: %s", gpumem_last_error());
        fclose(report);
        _exit(0);
    }
    return ctx;
}

static const gpumem_dtype *i32(void)
{
    return gpumem_dtype_builtin(GPUMEM_INT32);
}

/* A device array holding 0, 1, ..., N-1 (int32). */
static gpumem_array *device_iota(gpumem_context *ctx)
{
    static int32_t src[N];
    for (int i = 0; i < N; i++)
        src[i] = i;
    gpumem_array *h = NULL, *d = NULL;
    gpumem_host_array_wrap(src, 1, (int64_t[]){N}, NULL, i32(), &h);
    gpumem_device_array(ctx, 1, (int64_t[]){N}, NULL, i32(), 'C', NULL, &d);
    gpumem_copy_to_device(d, h, NULL);
    gpumem_array_release(h);
    return d;
}

static int is_iota(const int32_t *v, int n)
{
    for (int i = 0; i < n; i++)
        if (v[i] != i)
            return 0;
    return 1;
}

/* Every element is the pattern or i (what a GPU may show before the synchronization). */
static int pattern_or_iota(const int32_t *v, int n)
{
    for (int i = 0; i < n; i++)
        if (v[i] != i && (uint32_t)v[i] != GPUMEM_DEBUG_POISON_WORD)
            return 0;
    return 1;
}

/* ---- poison on: new arrays ------------------------------------------------------------------ */

static void new_arrays(void)
{
    gpumem_context *ctx = context();
    const int64_t shape[1] = {N};
    static unsigned char buf[N * 16];

    /* device arrays of several item sizes: each element from its own first byte */
    const char *types[] = {"<i4", "<f8", "|u1", "<f2", "|V3", "<c16"};
    for (size_t t = 0; t < sizeof types / sizeof *types; t++) {
        gpumem_dtype *dt = NULL;
        size_t isz = 0;
        gpumem_dtype_from_typestr(types[t], &dt);
        gpumem_dtype_itemsize(dt, &isz);
        gpumem_array *d = NULL;
        memset(buf, 0, sizeof buf);
        gpumem_status st = gpumem_device_array(ctx, 1, shape, NULL, dt, 'C', NULL, &d);
        check(st == GPUMEM_OK && read_all(d, buf) && is_poison(buf, N, isz, isz),
              "a new device array of %s holds the pattern in every element", types[t]);
        gpumem_array_release(d);
        gpumem_dtype_release(dt);
    }
    {
        gpumem_array *d = NULL;
        gpumem_device_array(ctx, 1, shape, NULL, gpumem_dtype_builtin(GPUMEM_FLOAT64), 'C', NULL, &d);
        double v[N];
        int nan = read_all(d, v);
        for (int i = 0; i < N; i++)
            nan = nan && isnan(v[i]);
        check(nan, "its float64 elements read NaN");
        gpumem_array_release(d);
        gpumem_device_array(ctx, 1, shape, NULL, gpumem_dtype_builtin(GPUMEM_FLOAT32), 'C', NULL, &d);
        float f[N];
        nan = read_all(d, f);
        for (int i = 0; i < N; i++)
            nan = nan && isnan(f[i]);
        check(nan, "its float32 elements read NaN");
        gpumem_array_release(d);
        int32_t w[N];
        gpumem_device_array(ctx, 1, shape, NULL, i32(), 'C', NULL, &d);
        check(read_all(d, w) && w[0] == 2147384958 && w[N - 1] == 2147384958, "its int32 elements read 2147384958");
        gpumem_array_release(d);
    }

    /* the cost: one memset; without a stream, on a private stream made and destroyed */
    int64_t m0 = calls("cuMemsetD8"), c0 = calls("cuStreamCreate"), x0 = calls("cuStreamDestroy");
    gpumem_array *d = NULL;
    gpumem_device_array(ctx, 1, shape, NULL, i32(), 'C', NULL, &d);
    check(calls("cuMemsetD8") - m0 == 1 && calls("cuStreamCreate") - c0 == 1 && calls("cuStreamDestroy") - x0 == 1,
          "without a stream: one memset, on one stream made and destroyed for it (memsets %lld, streams %lld)",
          (long long)(calls("cuMemsetD8") - m0), (long long)(calls("cuStreamCreate") - c0));
    gpumem_array_release(d);

    /* on a stream: the memset is queued there, before what the program queues next */
    gpumem_stream *s = NULL;
    gpumem_stream_create(ctx, 0, &s);
    m0 = calls("cuMemsetD8");
    c0 = calls("cuStreamCreate");
    gpumem_status st = gpumem_device_array(ctx, 1, shape, NULL, i32(), 'C', s, &d);
    check(st == GPUMEM_OK && calls("cuMemsetD8") - m0 == 1 && calls("cuStreamCreate") == c0,
          "with a stream: one memset, no stream made");
    int32_t v[N];
    gpumem_stream_synchronize(s);
    check(read_all(d, v) && is_poison(v, N, 4, 4), "the array made on a stream holds the pattern");
    /* written on the same stream right after: the program's bytes win */
    int32_t seven = 7;
    gpumem_array_fill(d, &seven, s);
    gpumem_stream_synchronize(s);
    int sevens = read_all(d, v);
    for (int i = 0; i < N; i++)
        sevens = sevens && v[i] == 7;
    check(sevens, "a fill queued after it on the stream is what the array holds");
    gpumem_array_release(d);

    /* a pool's device array */
    gpumem_pool *pool = NULL;
    gpumem_pool_create(ctx, 0, &pool);
    st = gpumem_pool_device_array(pool, 1, shape, i32(), 'C', s, &d);
    gpumem_stream_synchronize(s);
    check(st == GPUMEM_OK && read_all(d, v) && is_poison(v, N, 4, 4), "a pool's device array holds the pattern");
    gpumem_array_release(d);

    /* host-side arrays: filled by the CPU before the call returns */
    gpumem_array *h = NULL;
    void *p = NULL;
    st = gpumem_host_array(2, (int64_t[]){64, 33}, gpumem_dtype_builtin(GPUMEM_FLOAT64), 'F', &h);
    gpumem_array_host_pointer(h, &p);
    check(st == GPUMEM_OK && is_poison(p, 64 * 33, 8, 8), "a new host array (F order) holds the pattern");
    gpumem_array_release(h);
    st = gpumem_pinned_array(ctx, 1, shape, NULL, gpumem_dtype_builtin(GPUMEM_UINT16), 'C', &h);
    gpumem_array_host_pointer(h, &p);
    check(st == GPUMEM_OK && is_poison(p, N, 2, 2) && ((uint16_t *)p)[0] == 32382,
          "a new pinned array holds the pattern (uint16 32382)");
    gpumem_array_release(h);
    st = gpumem_mapped_array(ctx, 1, shape, NULL, i32(), 'C', NULL, 0, &h);
    gpumem_array_host_pointer(h, &p);
    check(st == GPUMEM_OK && is_poison(p, N, 4, 4), "a new mapped array holds the pattern");
    gpumem_array_release(h);
    st = gpumem_managed_array(ctx, 1, shape, NULL, gpumem_dtype_builtin(GPUMEM_INT64), 'C',
                              GPUMEM_MANAGED_ATTACH_GLOBAL, &h);
    gpumem_array_host_pointer(h, &p);
    check(st == GPUMEM_OK && is_poison(p, N, 8, 8) && ((int64_t *)p)[N - 1] == INT64_C(9222948168679718526),
          "a new managed array holds the pattern (int64 9222948168679718526)");
    gpumem_array_release(h);
    gpumem_host_pool *hp = NULL;
    gpumem_host_pool_create(ctx, 0, &hp);
    st = gpumem_host_pool_allocate(hp, 1, shape, gpumem_dtype_builtin(GPUMEM_INT8), 'C', &h);
    gpumem_array_host_pointer(h, &p);
    check(st == GPUMEM_OK && is_poison(p, N, 1, 1) && ((int8_t *)p)[5] == 126,
          "a page-locked pool's array holds the pattern (int8 126)");
    gpumem_array_release(h);

    /* to_device with NO_COPY gives an uninitialized array: poisoned too */
    static int32_t src[N];
    gpumem_array *hw = NULL;
    gpumem_host_array_wrap(src, 1, shape, NULL, i32(), &hw);
    st = gpumem_to_device(ctx, hw, NULL, GPUMEM_TO_DEVICE_NO_COPY, &d);
    check(st == GPUMEM_OK && read_all(d, v) && is_poison(v, N, 4, 4), "to_device with NO_COPY: the pattern");
    gpumem_array_release(d);
    gpumem_array_release(hw);

    /* a memset that fails: the constructor fails, names the poison, and gives no array */
    uint64_t before = 0, after = 0;
    gpumem_debug_driver_calls(NULL, &before);
    gpumem_device_array(ctx, 1, shape, NULL, i32(), 'C', s, &d);
    gpumem_debug_driver_calls(NULL, &after);
    gpumem_array_release(d);
    gpumem_stream_synchronize(s);
    static int sentinel;
    d = (gpumem_array *)(void *)&sentinel; /* not NULL */
    gpumem_debug_fail_call(after - before, 999); /* the last call: the memset */
    st = gpumem_device_array(ctx, 1, shape, NULL, i32(), 'C', s, &d);
    check(st != GPUMEM_OK && d == NULL && strstr(gpumem_last_error(), "gpumem_device_array: filling the new array "
                                                                     "with the poison pattern") != NULL,
          "a failing poison memset fails the call and releases the array (%s)", gpumem_last_error());
    gpumem_debug_fail_call(0, 0);

    gpumem_host_pool_destroy(hp);
    gpumem_stream_synchronize(s);
    gpumem_pool_destroy(pool);
    gpumem_stream_destroy(s);
    gpumem_context_release(ctx);
}

/* ---- poison on: pending downloads ---------------------------------------------------------- */

static void downloads(void)
{
    gpumem_context *ctx = context();
    gpumem_array *d = device_iota(ctx);
    gpumem_stream *s = NULL;
    gpumem_stream_create(ctx, 0, &s);

    /* a queued download into pageable memory: the pattern until it lands */
    static int32_t h[N];
    for (int i = 0; i < N; i++)
        h[i] = -1;
    gpumem_array *ha = NULL;
    gpumem_host_array_wrap(h, 1, (int64_t[]){N}, NULL, i32(), &ha);
    gpumem_status st = gpumem_copy_to_host(d, ha, s);
    if (sim)
        check(st == GPUMEM_OK && is_poison(h, N, 4, 4),
              "a queued pageable download, read before the synchronization: the pattern, not the stale -1");
    else
        check(st == GPUMEM_OK && pattern_or_iota(h, N),
              "a queued pageable download, read before the synchronization: the pattern or the data, never -1");
    gpumem_stream_synchronize(s);
    check(is_iota(h, N), "after the synchronization: the data");

    /* a strided destination: its elements get the pattern, its gaps stay */
    static int32_t g[2 * N];
    for (int i = 0; i < 2 * N; i++)
        g[i] = -1;
    gpumem_array *ga = NULL;
    gpumem_host_array_wrap(g, 1, (int64_t[]){N}, (int64_t[]){8}, i32(), &ga);
    st = gpumem_copy_to_host(d, ga, s);
    int gaps = 1, elems = 1;
    for (int i = 0; i < N; i++) {
        gaps = gaps && g[2 * i + 1] == -1;
        elems = elems && (sim ? (uint32_t)g[2 * i] == GPUMEM_DEBUG_POISON_WORD
                              : (g[2 * i] == i || (uint32_t)g[2 * i] == GPUMEM_DEBUG_POISON_WORD));
    }
    check(st == GPUMEM_OK && elems && gaps, "a strided pageable destination: the pattern in its elements, not its gaps");
    gpumem_stream_synchronize(s);
    gaps = elems = 1;
    for (int i = 0; i < N; i++) {
        gaps = gaps && g[2 * i + 1] == -1;
        elems = elems && g[2 * i] == i;
    }
    check(elems && gaps, "after the synchronization: the data, and the gaps untouched");

    /* an upload from a pageable buffer, then a download into it, on one stream */
    static int32_t u[N];
    for (int i = 0; i < N; i++)
        u[i] = 1000 + i;
    gpumem_array *ua = NULL, *d2 = NULL;
    gpumem_host_array_wrap(u, 1, (int64_t[]){N}, NULL, i32(), &ua);
    gpumem_device_array(ctx, 1, (int64_t[]){N}, NULL, i32(), 'C', NULL, &d2);
    gpumem_copy_to_device(d2, ua, s);
    gpumem_copy_to_host(d, ua, s);
    gpumem_stream_synchronize(s);
    int32_t back[N];
    int up = read_all(d2, back);
    for (int i = 0; i < N; i++)
        up = up && back[i] == 1000 + i;
    check(up && is_iota(u, N), "pageable: an upload queued before the download still read the program's bytes");

    /* pinned, idle stream: the pattern at once */
    gpumem_array *pa = NULL;
    void *pv = NULL;
    gpumem_pinned_array(ctx, 1, (int64_t[]){N}, NULL, i32(), 'C', &pa);
    gpumem_array_host_pointer(pa, &pv);
    int32_t *p = pv;
    for (int i = 0; i < N; i++)
        p[i] = -1;
    st = gpumem_copy_to_host(d, pa, s);
    if (sim)
        check(st == GPUMEM_OK && is_poison(p, N, 4, 4),
              "a pinned download on an idle stream, read before the synchronization: the pattern");
    else
        check(st == GPUMEM_OK && pattern_or_iota(p, N),
              "a pinned download on an idle stream, read before the synchronization: the pattern or the data");
    gpumem_stream_synchronize(s);
    check(is_iota(p, N), "after the synchronization: the data");

    /* pinned, busy stream: an upload from the same buffer queued before the
     * download reads the program's bytes; the pattern goes in after it */
    for (int i = 0; i < N; i++)
        p[i] = 2000 + i;
    gpumem_copy_to_device(d2, pa, s);
    st = gpumem_copy_to_host(d, pa, s);
    if (sim) {
        int still = 1;
        for (int i = 0; i < N; i++)
            still = still && p[i] == 2000 + i;
        check(st == GPUMEM_OK && still, "busy stream: before the stream gets there, the buffer holds what the upload "
                                        "must read");
    }
    gpumem_stream_synchronize(s);
    up = read_all(d2, back);
    for (int i = 0; i < N; i++)
        up = up && back[i] == 2000 + i;
    check(up, "busy stream: the upload queued before the download read the program's bytes, not the pattern");
    check(is_iota(p, N), "busy stream: after the synchronization the buffer holds the download");

    /* the default (legacy) stream's work comes before a blocking stream's:
     * an upload from the buffer queued there, then a download into it on
     * an idle blocking stream; and the other way round */
    gpumem_stream *legacy = NULL;
    gpumem_stream_default(ctx, &legacy);
    for (int i = 0; i < N; i++)
        p[i] = 3000 + i;
    gpumem_copy_to_device(d2, pa, legacy);
    st = gpumem_copy_to_host(d, pa, s);
    gpumem_context_synchronize(ctx);
    up = read_all(d2, back);
    for (int i = 0; i < N; i++)
        up = up && back[i] == 3000 + i;
    check(st == GPUMEM_OK && up && is_iota(p, N),
          "an upload on the default stream, then a download into its buffer on an idle blocking stream: the "
          "upload read the program's bytes, the buffer holds the download");
    gpumem_stream *s2 = NULL;
    gpumem_stream_create(ctx, 0, &s2);
    for (int i = 0; i < N; i++)
        p[i] = 4000 + i;
    gpumem_copy_to_device(d2, pa, s2);
    st = gpumem_copy_to_host(d, pa, legacy);
    gpumem_context_synchronize(ctx);
    up = read_all(d2, back);
    for (int i = 0; i < N; i++)
        up = up && back[i] == 4000 + i;
    check(st == GPUMEM_OK && up && is_iota(p, N),
          "an upload on a blocking stream, then a download into its buffer on the default stream: the upload "
          "read the program's bytes, the buffer holds the download");
    gpumem_stream_destroy(s2);

    /* an upload on a non-blocking stream that the download's idle stream waits for by an event */
    gpumem_stream *s3 = NULL;
    gpumem_event *ev = NULL;
    gpumem_stream_create(ctx, GPUMEM_STREAM_NON_BLOCKING, &s3);
    gpumem_event_create(ctx, 0, &ev);
    for (int i = 0; i < N; i++)
        p[i] = 5000 + i;
    gpumem_copy_to_device(d2, pa, s3);
    gpumem_event_record(ev, s3);
    gpumem_stream_wait_event(s, ev);
    st = gpumem_copy_to_host(d, pa, s);
    gpumem_stream_synchronize(s);
    gpumem_stream_synchronize(s3);
    up = read_all(d2, back);
    for (int i = 0; i < N; i++)
        up = up && back[i] == 5000 + i;
    check(st == GPUMEM_OK && up && is_iota(p, N),
          "an upload on another stream that the download waits for by an event read the program's bytes");
    gpumem_event_destroy(ev);
    gpumem_stream_destroy(s3);

    /* without a stream nothing is pending: nothing is poisoned */
    for (int i = 0; i < N; i++)
        p[i] = -1;
    int64_t q0 = calls("cuStreamQuery"), f0 = calls("cuLaunchHostFunc");
    st = gpumem_copy_to_host(d, pa, NULL);
    check(st == GPUMEM_OK && is_iota(p, N) && calls("cuStreamQuery") == q0 && calls("cuLaunchHostFunc") == f0,
          "a download without a stream: the data, no query or host function");

    gpumem_array_release(pa);
    gpumem_array_release(ua);
    gpumem_array_release(d2);
    gpumem_array_release(ga);
    gpumem_array_release(ha);
    gpumem_array_release(d);
    gpumem_stream_destroy(s);
    gpumem_context_release(ctx);
}

/* ---- poison off: nothing filled, nothing spent -------------------------------------------- */

static void poison_off(void)
{
    gpumem_context *ctx = context();
    gpumem_array *d = device_iota(ctx), *n = NULL;
    gpumem_stream *s = NULL;
    gpumem_stream_create(ctx, 0, &s);
    int64_t m0 = calls("cuMemsetD8"), c0 = calls("cuStreamCreate"), q0 = calls("cuStreamQuery");
    gpumem_device_array(ctx, 1, (int64_t[]){N}, NULL, i32(), 'C', NULL, &n);
    unsigned char b[N * 4];
    int read = read_all(n, b);
    if (sim) { /* the simulator's device memory starts as 0xA5 bytes */
        int garbage = read;
        for (size_t i = 0; i < sizeof b; i++)
            garbage = garbage && b[i] == 0xA5;
        check(garbage, "a new device array is not filled: the simulator's 0xA5 bytes");
    }
    check(read && !is_poison(b, 1, 4, 4), "a new device array does not hold the pattern");
    gpumem_array *pa = NULL;
    void *pv = NULL;
    gpumem_pinned_array(ctx, 1, (int64_t[]){N}, NULL, i32(), 'C', &pa);
    gpumem_array_host_pointer(pa, &pv);
    int32_t *p = pv;
    for (int i = 0; i < N; i++)
        p[i] = -1;
    gpumem_copy_to_host(d, pa, s);
    if (sim) {
        int stale = 1;
        for (int i = 0; i < N; i++)
            stale = stale && p[i] == -1;
        check(stale, "a pinned download read before the synchronization shows the stale -1 (what poison is for)");
    }
    static int32_t h[N];
    for (int i = 0; i < N; i++)
        h[i] = -1;
    gpumem_array *ha = NULL;
    gpumem_host_array_wrap(h, 1, (int64_t[]){N}, NULL, i32(), &ha);
    gpumem_copy_to_host(d, ha, s);
    if (sim) {
        int stale = 1;
        for (int i = 0; i < N; i++)
            stale = stale && h[i] == -1;
        check(stale, "a queued pageable download read before the synchronization shows the stale -1");
    }
    gpumem_stream_synchronize(s);
    check(is_iota(h, N) && is_iota(p, N), "after the synchronization: the data");
    check(calls("cuMemsetD8") == m0 && calls("cuStreamCreate") == c0 && calls("cuStreamQuery") == q0,
          "no memset, no stream made, no stream query for poison");
    gpumem_array_release(ha);
    gpumem_array_release(pa);
    gpumem_array_release(n);
    gpumem_array_release(d);
    gpumem_stream_destroy(s);
    gpumem_context_release(ctx);
}

/* ---- copies ---------------------------------------------------------------------------------- */

typedef struct expect {
    const char *what, *dir;
    char path[32];
    unsigned long long bytes;
    const char *sync, *status;
} expect;

static expect want[16];
static int nwant;

/* Records what the line of the copy just made must say. */
static void expect_line(const char *what, const char *dir, unsigned long long bytes, const char *sync,
                        gpumem_status st)
{
    gpumem_copy_path path = GPUMEM_COPY_PATH_NONE;
    gpumem_debug_last_copy_path(&path);
    expect *e = &want[nwant++];
    e->what = what;
    e->dir = dir;
    snprintf(e->path, sizeof e->path, "%s", gpumem_copy_path_name(path));
    e->bytes = bytes;
    e->sync = sync;
    e->status = gpumem_status_string(st);
}

static void copies(void)
{
    gpumem_context *ctx = context();
    gpumem_stream *s = NULL;
    gpumem_stream_create(ctx, 0, &s);
    static int32_t h[N], h2[N];
    gpumem_array *ha = NULL, *h2a = NULL, *d = NULL, *pa = NULL;
    gpumem_host_array_wrap(h, 1, (int64_t[]){N}, NULL, i32(), &ha);
    gpumem_host_array_wrap(h2, 1, (int64_t[]){N}, NULL, i32(), &h2a);
    gpumem_device_array(ctx, 1, (int64_t[]){N}, NULL, i32(), 'C', NULL, &d);
    gpumem_pinned_array(ctx, 1, (int64_t[]){N}, NULL, i32(), 'C', &pa);
    const unsigned long long bytes = N * 4;
    gpumem_status st;

    st = gpumem_copy_to_device(d, ha, NULL);
    expect_line("gpumem_copy_to_device", "h2d", bytes, "yes", st);
    st = gpumem_copy_to_host(d, ha, s); /* queued into pageable memory */
    expect_line("gpumem_copy_to_host", "d2h", bytes, "no", st);
    st = gpumem_copy_to_host(d, pa, s); /* pinned, on the stream */
    expect_line("gpumem_copy_to_host", "d2h", bytes, "no", st);
    gpumem_stream_synchronize(s);
    st = gpumem_copy_to_host(d, pa, NULL);
    expect_line("gpumem_copy_to_host", "d2h", bytes, "yes", st);
    st = gpumem_array_copy(h2a, ha, s); /* the CPU copies: done on return */
    expect_line("gpumem_array_copy", "h2h", bytes, "yes", st);
    gpumem_array *half = NULL, *dhalf = NULL;
    gpumem_array_slice(h2a, (gpumem_slice[]){{0, N / 2, 1}}, 1, &half);
    gpumem_array_slice(d, (gpumem_slice[]){{N / 2, N, 1}}, 1, &dhalf);
    st = gpumem_array_copy(dhalf, half, s);
    expect_line("gpumem_array_copy", "h2d", bytes / 2, "no", st);
    gpumem_stream_synchronize(s);
    gpumem_debug_fail_call(1, 999); /* the copy's one driver call fails */
    st = gpumem_copy_to_device(d, pa, NULL);
    gpumem_debug_fail_call(0, 0);
    expect_line("gpumem_copy_to_device", "h2d", bytes, "yes", st);
    check(st != GPUMEM_OK, "the injected failure fails the copy");
    /* not a copy: argument checks come first, and print nothing */
    gpumem_array_copy(d, half, NULL);

    fflush(stderr);
    FILE *f = fopen(errpath, "r");
    char line[512];
    int n = 0, others = 0;
    while (f != NULL && fgets(line, sizeof line, f) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        char what[64], dir[8], path[32], sync[8], status[64];
        unsigned long long b = 0;
        double us = -1;
        if (sscanf(line, "gpumem: copy %63[^:]: %7s path=%31s bytes=%llu us=%lf sync=%7s status=%63s", what, dir, path,
                   &b, &us, sync, status) != 7) {
            others++;
            check(0, "a line that is no copy's: %s", line);
            continue;
        }
        if (n >= nwant) {
            check(0, "one line too many: %s", line);
            n++;
            continue;
        }
        const expect *e = &want[n++];
        check(strcmp(what, e->what) == 0 && strcmp(dir, e->dir) == 0 && strcmp(path, e->path) == 0 &&
                  b == e->bytes && us >= 0 && strcmp(sync, e->sync) == 0 && strcmp(status, e->status) == 0,
              "copy %d: %s %s path=%s bytes=%llu sync=%s status=%s (the line: %s)", n, e->what, e->dir, e->path,
              e->bytes, e->sync, e->status, line);
    }
    if (f != NULL)
        fclose(f);
    check(n == nwant && others == 0, "one line per copy, nothing else (%d lines for %d copies)", n, nwant);

    gpumem_array_release(half);
    gpumem_array_release(dhalf);
    gpumem_array_release(pa);
    gpumem_array_release(d);
    gpumem_array_release(h2a);
    gpumem_array_release(ha);
    gpumem_stream_destroy(s);
    gpumem_context_release(ctx);
}

/* poison and copies together, with the messages on: each word does its own part */
static void together(void)
{
    gpumem_context *ctx = context();
    gpumem_array *d = NULL;
    int32_t v[N];
    gpumem_device_array(ctx, 1, (int64_t[]){N}, NULL, i32(), 'C', NULL, &d);
    int poisoned = read_all(d, v) && is_poison(v, N, 4, 4);
    check(poisoned, "GPUMEM_DEBUG=1,poison,copies: poison is on");
    gpumem_array_release(d);
    gpumem_context_release(ctx);
    fflush(stderr);
    FILE *f = fopen(errpath, "r");
    char line[512];
    int copy_lines = 0, messages = 0;
    while (f != NULL && fgets(line, sizeof line, f) != NULL) {
        copy_lines += strncmp(line, "gpumem: copy gpumem_array_copy: d2h ", 36) == 0;
        messages += strncmp(line, "gpumem: backend ", 16) == 0;
    }
    if (f != NULL)
        fclose(f);
    check(copy_lines == 1, "copies is on: read_all's copy has its line (%d)", copy_lines);
    check(messages == 1, "1 is on: the backend's choice is printed (%d)", messages);
}

int main(void)
{
    sim = test_on_sim();
    int fd = mkstemp(errpath);
    if (fd < 0)
        bail_out("mkstemp");
    close(fd);
    run_case("poison, new arrays", new_arrays, "poison", 0);
    run_case("poison, downloads", downloads, "POISON", 0);
    run_case("poison off", poison_off, NULL, 0);
    run_case("poison off (leaks)", poison_off, "leaks", 0);
    run_case("copies", copies, " copies ", 1);
    run_case("1,poison,copies", together, "1,poison,copies", 1);
    unlink(errpath);
    done_testing();
    return exit_status();
}
