/* Device scratch of strided copies (lib/copy_engine.c, lib/copy_packed.c): bounded to a few
 * chunks, so a strided view larger than the device's free memory copies
 * both ways; without room even for that the copy runs without scratch and
 * the decision says why; many-chunk copies of random layouts are exact; a
 * copy on a stream never waits for its stream because of its scratch, with
 * the driver's memory or a pool.  Each case runs in a child with its own
 * simulator settings; on a GPU the cases that need the simulator's memory
 * size or stream delay are skipped, the others run with the real kernels. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gpumem.h>

#include "arrays.h"
#include "child.h"
#include "copy_engine.h"
#include "copy_tuning.h"
#include "pack_calls.h"
#include "rng.h"
#include "tap.h"
#include "workers.h"

static const gpumem_dtype *f32(void)
{
    return gpumem_dtype_builtin(GPUMEM_FLOAT32);
}

static gpumem_status keep(gpumem_status a, gpumem_status b)
{
    return a != GPUMEM_OK ? a : b;
}

/* Bits of child_result.value[1]. */
enum {
    DOWN_VALUES = 1 << 0,
    DOWN_PATH = 1 << 1,
    UP_VALUES = 1 << 2,
    UP_PATH = 1 << 3,
    SMALL_FREE = 1 << 4,
    DOWN_SMALL = 1 << 5, /* the decision's reason: GM_REASON_SMALL_SCRATCH */
    UP_SMALL = 1 << 6
};

#define BR 5120
#define BC 4096 /* 80 MiB of float32; a [:, ::2] view is 40 MiB */

/* On a 100 MiB device holding an 80 MiB array (arg NULL, or "window"),
 * or with less free memory than two scratch chunks ("starve"): d[:, ::2]
 * into a contiguous host array, then a host array into d[:, 1::2].  Both
 * are staged (pageable host memory): 2 staging threads of 2 MiB slots
 * make a window of 4 MiB, the scratch chunk; with "window", 16 threads
 * make one of 32 MiB, whose two buffers do not fit.  value[0]: the bytes
 * free before; value[2], value[3]: the two copies' chunks, or their
 * decisions' reasons when without scratch. */
static void big_case(const void *arg, child_result *out)
{
    bool starve = arg != NULL && strcmp(arg, "starve") == 0;
    setenv("GPUMEM_SIM_MEMORY", "100M", 1);
    setenv("GPUMEM_STAGING_THREADS", arg != NULL && strcmp(arg, "window") == 0 ? "16" : "2", 1);
    setenv("GPUMEM_STAGING_CHUNK", "2M", 1);
    gpumem_context *ctx = NULL;
    if ((out->status = gpumem_context_create_default(&ctx)) != GPUMEM_OK)
        return;
    float *h = malloc((size_t)BR * BC * sizeof *h), *half = malloc((size_t)BR * (BC / 2) * sizeof *half);
    for (int64_t i = 0; i < (int64_t)BR * BC; i++)
        h[i] = (float)i;
    gpumem_array *hb = wrap_f32(h, BR, BC), *d = NULL, *filler = NULL;
    out->status = gpumem_to_device(ctx, hb, NULL, 0, &d);
    size_t free0 = 0, total = 0;
    gpumem_memory_info(ctx, &free0, &total);
    if (out->status == GPUMEM_OK && starve) /* leave less than two 4 MiB chunks */
        out->status = gpumem_device_array(ctx, 1, (int64_t[]){(int64_t)free0 - (6 << 20)}, NULL,
                                          gpumem_dtype_builtin(GPUMEM_UINT8), 'C', NULL, &filler);
    gpumem_memory_info(ctx, &free0, &total);
    out->value[0] = (long)free0;
    if (out->status != GPUMEM_OK) {
        snprintf(out->text, sizeof out->text, "setting up: %s", gpumem_last_error());
        return;
    }
    long bits = 0;
    gm_copy_decision dd;
    /* down: every other column, into contiguous host memory */
    gpumem_array *even = cols_view(d, 0, 2), *odd = cols_view(d, 1, 2), *hh = wrap_f32(half, BR, BC / 2);
    gpumem_status st = gpumem_copy_to_host(even, hh, NULL);
    gm_copy_last_decision(&dd);
    bool good = st == GPUMEM_OK && holds_cols(half, h, BR, BC, 0, 2);
    bits |= good ? DOWN_VALUES : 0;
    bits |= dd.path == (starve ? GPUMEM_COPY_PATH_DMA : GPUMEM_COPY_PATH_DEVICE_PACK) ? DOWN_PATH : 0;
    out->value[2] = starve ? (long)dd.reason : (long)dd.nchunks;
    bits |= dd.reason == GM_REASON_SMALL_SCRATCH ? DOWN_SMALL : 0;
    if (st != GPUMEM_OK)
        snprintf(out->text, sizeof out->text, "down: %s", gpumem_last_error());
    /* up: new values into the odd columns; the even ones keep theirs */
    for (int64_t i = 0; i < (int64_t)BR * (BC / 2); i++)
        half[i] = -1.0f - (float)i;
    st = gpumem_array_copy(odd, hh, NULL);
    gm_copy_last_decision(&dd);
    memset(h, 0, (size_t)BR * BC * sizeof *h);
    good = st == GPUMEM_OK && read_all(d, h);
    for (int64_t i = 0; good && i < (int64_t)BR * BC; i++) {
        int64_t r = i / BC, c = i % BC;
        good = h[i] == (c % 2 ? half[r * (BC / 2) + c / 2] : (float)i);
    }
    bits |= good ? UP_VALUES : 0;
    bits |= dd.path == (starve ? GPUMEM_COPY_PATH_DMA : GPUMEM_COPY_PATH_DEVICE_PACK) ? UP_PATH : 0;
    out->value[3] = starve ? (long)dd.reason : (long)dd.nchunks;
    bits |= dd.reason == GM_REASON_SMALL_SCRATCH ? UP_SMALL : 0;
    if (st != GPUMEM_OK && out->text[0] == '\0')
        snprintf(out->text, sizeof out->text, "up: %s", gpumem_last_error());
    bits |= free0 < (size_t)BR * (BC / 2) * sizeof(float) ? SMALL_FREE : 0;
    out->value[1] = bits;
    gpumem_array *rel[] = {hb, d, filler, even, odd, hh};
    for (size_t i = 0; i < sizeof rel / sizeof *rel; i++)
        gpumem_array_release(rel[i]);
    gpumem_context_release(ctx);
    free(h);
    free(half);
}

static void test_big(void)
{
    child_result r;
    run_child(big_case, NULL, &r);
    ok(r.exited && r.exit_code == 0 && r.status == GPUMEM_OK, "a 100 MiB device with an 80 MiB array: %s",
       r.text[0] ? r.text : "set up");
    if (test_on_sim())
        ok(r.value[1] & SMALL_FREE, "its free memory (%ld bytes) is less than a 40 MiB view", r.value[0]);
    else
        skip(1, "GPUMEM_SIM_MEMORY sizes only the simulator's device");
    ok(r.value[1] & DOWN_VALUES, "d[:, ::2] of it into host memory: every value right (%s)", r.text);
    ok(r.value[1] & DOWN_PATH, "packed on the device");
    ok(r.value[2] == 10, "through 4 MiB of scratch at a time: 10 chunks (%ld)", r.value[2]);
    ok(r.value[1] & UP_VALUES, "host memory into d[:, 1::2]: every value right, the gaps untouched");
    ok(r.value[1] & UP_PATH, "unpacked on the device");
    ok(r.value[3] == 10, "10 chunks (%ld)", r.value[3]);

    if (!test_on_sim()) {
        skip(11, "filling a GPU's memory is left to the simulator");
        return;
    }
    run_child(big_case, "starve", &r);
    ok(r.exited && r.exit_code == 0 && r.status == GPUMEM_OK, "with less free memory than two chunks: %s",
       r.text[0] ? r.text : "set up");
    ok(r.value[0] < (8 << 20), "%ld bytes free", r.value[0]);
    ok((r.value[1] & (DOWN_VALUES | DOWN_PATH)) == (DOWN_VALUES | DOWN_PATH),
       "d[:, ::2] into host memory without scratch: one 2-D copy, every value right (%s)", r.text);
    is_int(r.value[2], GM_REASON_NO_SCRATCH, "its decision says why");
    ok((r.value[1] & (UP_VALUES | UP_PATH)) == (UP_VALUES | UP_PATH),
       "host memory into d[:, 1::2] without scratch: one 2-D copy, every value right, the gaps untouched");
    is_int(r.value[3], GM_REASON_NO_SCRATCH, "its decision says why");

    run_child(big_case, "window", &r);
    ok(r.exited && r.exit_code == 0 && r.status == GPUMEM_OK,
       "16 staging threads: a staging window of 32 MiB, whose two buffers do not fit beside the 80 MiB array: %s",
       r.text[0] ? r.text : "set up");
    ok((r.value[1] & (DOWN_VALUES | DOWN_PATH | DOWN_SMALL)) == (DOWN_VALUES | DOWN_PATH | DOWN_SMALL),
       "d[:, ::2] into host memory: packed on the device through buffers of the scratch chunk instead, every "
       "value right, the decision says why (%s)", r.text);
    ok(r.value[2] == 10, "10 chunks (%ld)", r.value[2]);
    ok((r.value[1] & (UP_VALUES | UP_PATH | UP_SMALL)) == (UP_VALUES | UP_PATH | UP_SMALL),
       "host memory into d[:, 1::2]: the same, the gaps untouched");
    ok(r.value[3] == 10, "10 chunks (%ld)", r.value[3]);
}

/* ---- many chunks, random layouts ---- */

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(uint64_t n)
{
    return xorshift64(&rng) % n;
}

/* With 64 KiB scratch chunks: random copies between host, pinned and device
 * views of up to 360 KiB (up to 720 KiB with "staged").  The staging
 * engine has 2 threads of 64 KiB slots (a staging window of 128 KiB, so
 * staged copies come in chunks too);
 * with arg "staged" the copies are between pageable host memory and the
 * device, and every one is staged (threshold 0), so the dense pageable
 * sides go through the staging engine's segments too, its threads polling
 * before they sleep (as on machines of 4 CPUs or more).  value[0]: bad copies, value[1]: copies in several chunks, value[2]:
 * of them on two streams, value[3]: on a stream (with "staged": staged). */
static void chunks_case(const void *arg, child_result *out)
{
    bool staged = arg != NULL;
    setenv("GPUMEM_COPY_SCRATCH_CHUNK", "64K", 1);
    setenv("GPUMEM_STAGING_THREADS", "2", 1);
    setenv("GPUMEM_STAGING_CHUNK", "64K", 1);
    if (staged) {
        setenv("GPUMEM_STAGING_MIN_BYTES", "0", 1);
        gm_workers_set_spin(50000); /* the threads of the staged transfers poll before they sleep */
    }
    gpumem_context *ctx = NULL;
    gpumem_stream *stream = NULL;
    if ((out->status = gpumem_context_create_default(&ctx)) != GPUMEM_OK ||
        (out->status = gpumem_stream_create(ctx, 0, &stream)) != GPUMEM_OK)
        return;
    for (int iter = 0; iter < 120 && out->value[0] < 3; iter++) {
        int64_t n[3] = {1 + (int64_t)rnd(staged ? 60 : 30), 1 + (int64_t)rnd(50), 1 + (int64_t)rnd(60)};
        int sk = (int)rnd(3), dk = (int)rnd(3);
        if (staged) { /* between pageable host memory and the device */
            sk = rnd(2) == 0 ? 0 : 2;
            dk = 2 - sk;
        }
        bool on_stream = rnd(2) == 0;
        random_copy c;
        random_copy_make(&c, ctx, &rng, sk, dk, n, 1e7f);
        gpumem_status st = gpumem_array_copy(c.dv, c.sv, on_stream ? stream : NULL);
        gm_copy_decision d;
        gm_copy_last_decision(&d);
        if (st == GPUMEM_OK && on_stream)
            st = gpumem_stream_synchronize(stream);
        bool good = st == GPUMEM_OK && random_copy_exact(&c);
        if (!good && out->value[0]++ == 0)
            snprintf(out->text, sizeof out->text, "copy %d (kinds %d -> %d, %lldx%lldx%lld, %s, %s): %s", iter, sk,
                     dk, (long long)n[0], (long long)n[1], (long long)n[2], gpumem_copy_path_name(d.path),
                     on_stream ? "on a stream" : "synchronous", st == GPUMEM_OK ? "wrong values" : gpumem_last_error());
        if (d.nchunks > 1) {
            out->value[1]++;
            out->value[2] += d.overlap;
            out->value[3] += staged ? d.staged && (sk == 0 || dk == 0) : on_stream;
        }
        random_copy_release(&c);
    }
    gpumem_stream_destroy(stream);
    gpumem_context_release(ctx);
}

static void test_chunks(void)
{
    child_result r;
    run_child(chunks_case, NULL, &r);
    ok(r.exited && r.exit_code == 0 && r.status == GPUMEM_OK, "GPUMEM_COPY_SCRATCH_CHUNK=64K: the copies ran");
    ok(r.value[0] == 0, "120 random copies in 64 KiB chunks are exact, gaps untouched%s%s", r.text[0] ? ": " : "",
       r.text);
    ok(r.value[1] >= 10, "%ld of them in several chunks", r.value[1]);
    ok(r.value[2] > 5, "%ld of those with the kernels and the transfers on two streams", r.value[2]);
    ok(r.value[3] > 5, "%ld of those on a stream", r.value[3]);
    run_child(chunks_case, "staged", &r);
    ok(r.exited && r.exit_code == 0 && r.status == GPUMEM_OK, "every pageable copy staged: the copies ran");
    ok(r.value[0] == 0, "120 random copies in 64 KiB chunks are exact, gaps untouched%s%s", r.text[0] ? ": " : "",
       r.text);
    ok(r.value[1] >= 10, "%ld of them in several chunks", r.value[1]);
    ok(r.value[3] > 10, "%ld of those staged (one staged transfer of the chunks as segments)", r.value[3]);
}

/* ---- a copy on a stream does not wait for it ---- */

enum {
    Q_D2D = 1 << 0, /* not done when the call returned */
    Q_H2D = 1 << 1,
    Q_D2H = 1 << 2,
    Q_CHUNKS = 1 << 3,
    V_D2D = 1 << 4, /* the values, after a synchronization */
    V_H2D = 1 << 5,
    V_D2H = 1 << 6,
    V_CHUNKS = 1 << 7
};

#define R 64
#define C 1024 /* 256 KiB of float32: [:, ::2] is two 64 KiB chunks */

/* Work queued on a stream waits 10 s on the simulator unless something
 * synchronizes with it, so a copy that waited for its stream would find it
 * done.  arg non-NULL: the context allocates from a pool. */
static void stream_case(const void *arg, child_result *out)
{
    setenv("GPUMEM_SIM_STREAM_DELAY_US", "10000000", 1);
    setenv("GPUMEM_COPY_SCRATCH_CHUNK", "64K", 1);
    gpumem_context *ctx = NULL;
    gpumem_stream *s = NULL;
    gpumem_pool *pool = NULL;
    if ((out->status = gpumem_context_create_default(&ctx)) != GPUMEM_OK ||
        (out->status = gpumem_stream_create(ctx, 0, &s)) != GPUMEM_OK)
        return;
    if (arg != NULL && ((out->status = gpumem_pool_create(ctx, 0, &pool)) != GPUMEM_OK ||
                        (out->status = gpumem_context_set_pool(ctx, pool)) != GPUMEM_OK))
        return;
    static float a[R][C], z[R][C], back[R][C], half[R][C / 2];
    for (int i = 0; i < R * C; i++) {
        a[i / C][i % C] = (float)i;
        z[i / C][i % C] = -1.0f;
    }
    gpumem_array *ha = wrap_f32(&a[0][0], R, C), *hz = wrap_f32(&z[0][0], R, C), *d = NULL, *d2 = NULL, *d3 = NULL;
    gpumem_array *pin = NULL, *pin2 = NULL;
    gpumem_to_device(ctx, ha, NULL, 0, &d);
    gpumem_to_device(ctx, hz, NULL, 0, &d2);
    gpumem_to_device(ctx, hz, NULL, 0, &d3);
    gpumem_pinned_array(ctx, 2, (int64_t[]){R, C / 2}, NULL, f32(), 'C', &pin);
    gpumem_pinned_array(ctx, 2, (int64_t[]){R, C / 2}, NULL, f32(), 'C', &pin2);
    float *p = NULL, *p2 = NULL;
    gpumem_array_host_pointer(pin, (void **)&p);
    gpumem_array_host_pointer(pin2, (void **)&p2);
    for (int i = 0; i < R * (C / 2); i++)
        p[i] = 1000.0f + (float)i;
    gpumem_array *even = cols_view(d, 0, 2), *odd2 = cols_view(d2, 1, 2), *odd3 = cols_view(d3, 1, 2);
    long bits = 0;
    gpumem_status st;
    /* device to device through scratch */
    if ((st = gpumem_array_copy(odd2, even, s)) == GPUMEM_OK && gpumem_stream_query(s) == GPUMEM_ERROR_NOT_READY)
        bits |= Q_D2D;
    out->status = keep(out->status, st);
    /* pinned host into strided device memory */
    if ((st = gpumem_array_copy(odd3, pin, s)) == GPUMEM_OK && gpumem_stream_query(s) == GPUMEM_ERROR_NOT_READY)
        bits |= Q_H2D;
    out->status = keep(out->status, st);
    /* strided device memory into pinned host memory, in several chunks on two streams */
    gm_copy_decision dd;
    if ((st = gpumem_copy_to_host(even, pin2, s)) == GPUMEM_OK && gpumem_stream_query(s) == GPUMEM_ERROR_NOT_READY)
        bits |= Q_D2H;
    gm_copy_last_decision(&dd);
    if (dd.nchunks > 1 && dd.overlap)
        bits |= Q_CHUNKS;
    out->status = keep(out->status, st);
    if (out->status != GPUMEM_OK)
        snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
    out->status = keep(out->status, gpumem_stream_synchronize(s));
    bool good = read_all(d2, back);
    for (int i = 0; good && i < R * C; i++)
        good = back[i / C][i % C] == (i % 2 ? a[i / C][i % C - 1] : -1.0f);
    bits |= good ? V_D2D : 0;
    good = read_all(d3, back);
    for (int i = 0; good && i < R * C; i++)
        good = back[i / C][i % C] == (i % 2 ? p[(i / C) * (C / 2) + (i % C) / 2] : -1.0f);
    bits |= good ? V_H2D : 0;
    good = holds_cols(p2, &a[0][0], R, C, 0, 2);
    bits |= good ? V_D2H | V_CHUNKS : 0;
    out->value[1] = bits;
    (void)half;
    gpumem_array *rel[] = {ha, hz, d, d2, d3, pin, pin2, even, odd2, odd3};
    for (size_t i = 0; i < sizeof rel / sizeof *rel; i++)
        gpumem_array_release(rel[i]);
    gpumem_stream_destroy(s);
    gpumem_context_set_pool(ctx, NULL);
    gpumem_pool_destroy(pool);
    gpumem_context_release(ctx);
}

static void test_stream(void)
{
    if (!test_on_sim()) { /* a GPU may finish a small copy before the query: only the simulator's delay is sure */
        skip(12, "needs the simulator's stream delay (GPUMEM_SIM_STREAM_DELAY_US)");
        return;
    }
    for (int pooled = 0; pooled < 2; pooled++) {
        const char *with = pooled ? "with a pool" : "with the driver's memory";
        child_result r;
        run_child(stream_case, pooled ? "" : NULL, &r);
        ok(r.exited && r.exit_code == 0 && r.status == GPUMEM_OK, "%s: copies on a stream%s%s", with,
           r.text[0] ? ": " : "", r.text);
        ok(r.value[1] & Q_D2D, "%s: d[:, ::2] into d2[:, 1::2] returns before its stream ran it", with);
        ok(r.value[1] & Q_H2D, "%s: pinned memory into d[:, 1::2] too", with);
        ok(r.value[1] & Q_D2H, "%s: d[:, ::2] into pinned memory too", with);
        ok(r.value[1] & Q_CHUNKS, "%s: that one in chunks on two streams", with);
        ok((r.value[1] & (V_D2D | V_H2D | V_D2H)) == (V_D2D | V_H2D | V_D2H),
           "%s: after a synchronization every value is there, the gaps untouched", with);
    }
}

/* What a copy did comes back with it (gm_copy_outcome), and copies made
 * inside it report nothing themselves.  value[1]: bits of the checks. */
enum { O_QUEUED = 1 << 0, O_LAST = 1 << 1, O_INNER = 1 << 2, O_TEMP = 1 << 3, O_VALUES = 1 << 4 };

#define OR 64
#define OC 64

static void outcome_case(const void *arg, child_result *out)
{
    (void)arg;
    gpumem_context *ctx = NULL;
    gpumem_stream *stream = NULL;
    if ((out->status = gpumem_context_create_default(&ctx)) != GPUMEM_OK ||
        (out->status = gpumem_stream_create(ctx, 0, &stream)) != GPUMEM_OK)
        return;
    float *h = malloc(sizeof(float) * OR * OC), *half = calloc(OR * (OC / 2), sizeof(float));
    for (int i = 0; i < OR * OC; i++)
        h[i] = (float)i;
    gpumem_array *hb = wrap_f32(h, OR, OC), *d = NULL, *d2 = NULL;
    out->status = keep(gpumem_to_device(ctx, hb, NULL, 0, &d), gpumem_to_device(ctx, hb, NULL, 0, &d2));
    if (out->status != GPUMEM_OK)
        return;
    long bits = 0;
    gpumem_array *even = cols_view(d, 0, 2), *hh = wrap_f32(half, OR, OC / 2);
    /* a queued download into pageable memory: its outcome is the bounce copy's decision, queued */
    gm_copy_outcome o;
    memset(&o, 0xff, sizeof o);
    gpumem_status st = gm_copy_run("test", hh, even, stream, ctx, &o);
    st = keep(st, gpumem_stream_synchronize(stream));
    gm_copy_decision last;
    gm_copy_last_decision(&last);
    bits |= st == GPUMEM_OK && o.d.queued && o.d.how == GM_HOW_PACKED &&
                    o.d.path == GPUMEM_COPY_PATH_DEVICE_PACK && !o.synced ? O_QUEUED : 0;
    bits |= last.path == o.d.path && last.queued && last.how == o.d.how ? O_LAST : 0;
    bits |= st == GPUMEM_OK && holds_cols(half, h, OR, OC, 0, 2) ? O_VALUES : 0;
    /* a copy inside another: its decision comes back to the caller, the thread's report stays */
    gm_copy_decision inner;
    memset(&inner, 0, sizeof inner);
    st = keep(st, gm_copy_inner("test", d2, d, NULL, ctx, NULL, &inner));
    gm_copy_last_decision(&last);
    bits |= st == GPUMEM_OK && inner.how == GM_HOW_RECT && inner.path == GPUMEM_COPY_PATH_CONTIGUOUS &&
                    last.queued && last.path == o.d.path ? O_INNER : 0;
    /* overlapping views through a temporary: the outcome is the second copy's decision */
    gpumem_array *odd = cols_view(d, 1, 2), *mid = NULL;
    gpumem_slice sl[2] = {{GPUMEM_SLICE_DEFAULT, GPUMEM_SLICE_DEFAULT, 1}, {1, OC - 1, 2}};
    st = keep(st, gpumem_array_slice(d, sl, 2, &mid)); /* d[:, 1:63:2]: the odd columns but the last */
    gpumem_array *even31 = NULL;
    gpumem_slice se[2] = {{GPUMEM_SLICE_DEFAULT, GPUMEM_SLICE_DEFAULT, 1}, {2, GPUMEM_SLICE_DEFAULT, 2}};
    st = keep(st, gpumem_array_slice(d, se, 2, &even31)); /* d[:, 2::2] */
    memset(&o, 0, sizeof o);
    if (st == GPUMEM_OK)
        st = gm_copy_run("test", even31, mid, NULL, ctx, &o); /* interleaved columns: the extents overlap */
    gm_copy_decision whole; /* the copy as a whole goes through the temporary */
    gm_copy_tuning t;
    gm_copy_tuning_get(&t);
    gm_copy_caps caps = {.max_pitch = 0};
    gm_copy_side ss = gm_copy_decide_side(mid), ds = gm_copy_decide_side(even31);
    gm_copy_decide(2, mid->shape, 4, &ss, &ds, &caps, &t, &whole);
    bits |= st == GPUMEM_OK && whole.how == GM_HOW_TEMP && o.d.how == GM_HOW_TEMP && o.d.path == whole.path &&
                    o.d.nsteps == 2 && o.d.steps[0].to == GM_BUF_TEMP && o.d.steps[1].from == GM_BUF_TEMP
                ? O_TEMP
                : 0;
    out->value[2] = (long)o.d.how;
    out->value[1] = bits;
    if (st != GPUMEM_OK)
        snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
    out->status = st;
    gpumem_array_release(even31);
    gpumem_array_release(mid);
    gpumem_array_release(odd);
    gpumem_array_release(even);
    gpumem_array_release(hh);
    gpumem_array_release(d2);
    gpumem_array_release(d);
    gpumem_array_release(hb);
    free(half);
    free(h);
    gpumem_stream_destroy(stream);
    gpumem_context_release(ctx);
}

static void test_outcome(void)
{
    child_result r;
    run_child(outcome_case, NULL, &r);
    ok(r.exited && r.exit_code == 0 && r.status == GPUMEM_OK, "the outcomes' copies run%s%s", r.text[0] ? ": " : "",
       r.text);
    ok(r.value[1] & O_QUEUED, "a queued download's outcome: the bounce copy's decision (device-pack), queued");
    ok(r.value[1] & O_LAST, "gpumem_debug_last_copy_path's decision is the outcome's");
    ok(r.value[1] & O_VALUES, "the queued download landed");
    ok(r.value[1] & O_INNER, "a copy inside another gives its decision back and leaves the thread's report alone");
    ok(r.value[1] & O_TEMP, "a copy through a temporary: the outcome is its plan, two steps through the temporary, "
       "the second one's path (how %ld)", r.value[2]);
}

/* A batch whose pairs go one by one (no two kernel pieces to fuse):
 * d[:, ::2] into a dense device array (one pack kernel), d into d2 (one
 * driver copy), synchronously: each pair is decided once, by the batch.
 * value[0]: the decisions the batch made; value[1]: the bytes landed. */
static void batch_once_case(const void *arg, child_result *out)
{
    (void)arg;
    gpumem_context *ctx = NULL;
    if ((out->status = gpumem_context_create_default(&ctx)) != GPUMEM_OK)
        return;
    float *h = malloc(sizeof(float) * OR * OC), *half = calloc(OR * (OC / 2), sizeof(float));
    float *back = calloc(OR * OC, sizeof(float));
    for (int i = 0; i < OR * OC; i++)
        h[i] = (float)i;
    gpumem_array *hb = wrap_f32(h, OR, OC), *hh = wrap_f32(half, OR, OC / 2), *hback = wrap_f32(back, OR, OC);
    gpumem_array *d = NULL, *d2 = NULL, *dh = NULL;
    gpumem_status st = keep(gpumem_to_device(ctx, hb, NULL, 0, &d), gpumem_to_device(ctx, hb, NULL, 0, &d2));
    st = keep(st, gpumem_to_device(ctx, hh, NULL, 0, &dh));
    gpumem_array *even = st == GPUMEM_OK ? cols_view(d, 0, 2) : NULL;
    unsigned long before = gm_copy_decide_count();
    if (st == GPUMEM_OK) {
        gpumem_array *dsts[2] = {dh, d2}, *srcs[2] = {even, d};
        st = gpumem_array_copy_batch(2, dsts, srcs, NULL);
    }
    out->value[0] = (long)(gm_copy_decide_count() - before);
    st = keep(st, keep(gpumem_copy_to_host(dh, hh, NULL), gpumem_copy_to_host(d2, hback, NULL)));
    out->value[1] = st == GPUMEM_OK && holds_cols(half, h, OR, OC, 0, 2) && memcmp(back, h, sizeof(float) * OR * OC) == 0;
    if (st != GPUMEM_OK)
        snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
    out->status = st;
    gpumem_array_release(even);
    gpumem_array_release(dh);
    gpumem_array_release(d2);
    gpumem_array_release(d);
    gpumem_array_release(hback);
    gpumem_array_release(hh);
    gpumem_array_release(hb);
    free(back);
    free(half);
    free(h);
    gpumem_context_release(ctx);
}

static void test_batch_once(void)
{
    child_result r;
    run_child(batch_once_case, NULL, &r);
    ok(r.exited && r.exit_code == 0 && r.status == GPUMEM_OK, "the batch runs%s%s", r.text[0] ? ": " : "", r.text);
    ok(r.value[0] == 2, "a batch's two pairs that go one by one are decided once each (%ld decisions)", r.value[0]);
    ok(r.value[1] == 1, "their bytes landed");
}

/* A queued download of a contiguous device array into pageable memory,
 * 4 landing threads: 8 MiB in slabs of 1 MiB, each one driver copy into
 * the bounce.  value[0]: the decisions the download made; value[1]: its
 * bytes landed; value[2]: its outcome is the last slab's copy, queued. */
#define QR 2048
#define QC 1024
static void queued_once_case(const void *arg, child_result *out)
{
    (void)arg;
    setenv("GPUMEM_STAGING_THREADS", "4", 1);
    gpumem_context *ctx = NULL;
    gpumem_stream *stream = NULL;
    if ((out->status = gpumem_context_create_default(&ctx)) != GPUMEM_OK ||
        (out->status = gpumem_stream_create(ctx, 0, &stream)) != GPUMEM_OK)
        return;
    float *h = malloc(sizeof(float) * QR * QC), *back = calloc((size_t)QR * QC, sizeof(float));
    for (int i = 0; i < QR * QC; i++)
        h[i] = (float)i;
    gpumem_array *hb = wrap_f32(h, QR, QC), *hback = wrap_f32(back, QR, QC), *d = NULL;
    gpumem_status st = gpumem_to_device(ctx, hb, NULL, 0, &d);
    unsigned long before = gm_copy_decide_count();
    gm_copy_outcome o;
    memset(&o, 0, sizeof o);
    if (st == GPUMEM_OK)
        st = gm_copy_run("test", hback, d, stream, ctx, &o);
    out->value[0] = (long)(gm_copy_decide_count() - before);
    st = keep(st, gpumem_stream_synchronize(stream));
    out->value[1] = st == GPUMEM_OK && memcmp(back, h, sizeof(float) * QR * QC) == 0;
    out->value[2] = o.d.queued && o.d.how == GM_HOW_TRANSFER && o.d.path == GPUMEM_COPY_PATH_CONTIGUOUS &&
                    o.d.width == (1u << 20);
    if (st != GPUMEM_OK)
        snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
    out->status = st;
    gpumem_array_release(d);
    gpumem_array_release(hback);
    gpumem_array_release(hb);
    free(back);
    free(h);
    gpumem_stream_destroy(stream);
    gpumem_context_release(ctx);
}

static void test_queued_once(void)
{
    child_result r;
    run_child(queued_once_case, NULL, &r);
    ok(r.exited && r.exit_code == 0 && r.status == GPUMEM_OK, "the queued download runs%s%s", r.text[0] ? ": " : "",
       r.text);
    ok(r.value[0] == 1, "a queued download of 8 slabs, each one driver copy, is decided once (%ld decisions)",
       r.value[0]);
    ok(r.value[1] == 1, "its bytes landed");
    ok(r.value[2] == 1, "its outcome: queued, contiguous, the last slab's 1 MiB");
}

/* Strided queued downloads into pageable memory, 4 landing threads: the
 * copy into the bounce is no one contiguous driver copy (a pack kernel
 * into scratch, or the planner's 3-D copy), and it is cut into 11 to 21
 * slabs of two extents.  Each download is decided once, and its slabs
 * are run from a decision made once per slab shape: at most 3 decisions
 * in all.  The base holds its element indices (int32, or int64 for the
 * item size 8); every element of the view must land. */
typedef struct strided_queued {
    const char *name;
    gpumem_type dtype;
    int ndim;
    int64_t shape[3];
    gpumem_slice s[3];
} strided_queued;

static const strided_queued strided_queued_cases[] = {
    {"d[::2], 1-D int32", GPUMEM_INT32, 1, {6000002}, {{0, GPUMEM_SLICE_DEFAULT, 2}}},
    {"d[:, ::2], 2-D int32", GPUMEM_INT32, 2, {3001, 2048}, {GPUMEM_SLICE_ALL, {0, GPUMEM_SLICE_DEFAULT, 2}}},
    {"d[3:48, 2:122:2, 5:1005], a 3-D slab of int32", GPUMEM_INT32, 3, {50, 130, 1024},
     {{3, 48, 1}, {2, 122, 2}, {5, 1005, 1}}},
    {"d[::-1, 1::2], 2-D int64", GPUMEM_INT64, 2, {1501, 2048},
     {{GPUMEM_SLICE_DEFAULT, GPUMEM_SLICE_DEFAULT, -1}, {1, GPUMEM_SLICE_DEFAULT, 2}}},
};

/* value[0]: the decisions of the copy; value[1]: every element landed;
 * value[2]: the slabs' events recorded; value[3]: the copy was queued. */
static void strided_queued_case(const void *arg, child_result *out)
{
    const strided_queued *c = arg;
    setenv("GPUMEM_STAGING_THREADS", "4", 1);
    gpumem_context *ctx = NULL;
    gpumem_stream *stream = NULL;
    if ((out->status = gpumem_context_create_default(&ctx)) != GPUMEM_OK ||
        (out->status = gpumem_stream_create(ctx, 0, &stream)) != GPUMEM_OK)
        return;
    const gpumem_dtype *dt = gpumem_dtype_builtin(c->dtype);
    size_t isz = c->dtype == GPUMEM_INT64 ? 8 : 4;
    int64_t n = 1;
    for (int i = 0; i < c->ndim; i++)
        n *= c->shape[i];
    char *base = malloc((size_t)n * isz);
    for (int64_t i = 0; i < n; i++) {
        if (isz == 8)
            ((int64_t *)base)[i] = i;
        else
            ((int32_t *)base)[i] = (int32_t)i;
    }
    gpumem_array *hb = NULL, *d = NULL, *view = NULL, *hdst = NULL;
    gpumem_status st = gpumem_host_array_wrap(base, c->ndim, c->shape, NULL, dt, &hb);
    st = keep(st, gpumem_to_device(ctx, hb, NULL, 0, &d));
    st = keep(st, gpumem_array_slice(d, c->s, c->ndim, &view));
    int64_t vshape[3] = {1, 1, 1}, vn = 1;
    if (st == GPUMEM_OK)
        gpumem_array_shape(view, vshape);
    for (int i = 0; i < c->ndim; i++)
        vn *= vshape[i];
    char *got = malloc((size_t)vn * isz);
    memset(got, 0xa5, (size_t)vn * isz);
    st = keep(st, gpumem_host_array_wrap(got, c->ndim, vshape, NULL, dt, &hdst));
    int64_t ev0 = calls("cuEventRecord");
    unsigned long before = gm_copy_decide_count();
    gm_copy_outcome o;
    memset(&o, 0, sizeof o);
    if (st == GPUMEM_OK)
        st = gm_copy_run("test", hdst, view, stream, ctx, &o);
    out->value[0] = (long)(gm_copy_decide_count() - before);
    out->value[2] = (long)(calls("cuEventRecord") - ev0);
    out->value[3] = o.d.queued;
    st = keep(st, gpumem_stream_synchronize(stream));
    /* the view's element (i, j, l) is the base's element at its indices */
    int64_t first[3] = {0, 0, 0}, step[3] = {1, 1, 1}, bs[3] = {1, 1, 1};
    for (int i = 0; i < c->ndim; i++) {
        step[i] = c->s[i].step == GPUMEM_SLICE_DEFAULT ? 1 : c->s[i].step;
        first[i] = c->s[i].start != GPUMEM_SLICE_DEFAULT ? c->s[i].start : step[i] < 0 ? c->shape[i] - 1 : 0;
        bs[i] = c->shape[i];
    }
    int64_t bad = st == GPUMEM_OK ? 0 : 1;
    for (int64_t e = 0; e < vn && bad == 0; e++) {
        int64_t r = e, idx[3] = {0, 0, 0};
        for (int i = c->ndim - 1; i >= 0; i--) {
            idx[i] = first[i] + step[i] * (r % vshape[i]);
            r /= vshape[i];
        }
        int64_t want = (idx[0] * (c->ndim > 1 ? bs[1] : 1) + (c->ndim > 1 ? idx[1] : 0)) * (c->ndim > 2 ? bs[2] : 1) +
                       (c->ndim > 2 ? idx[2] : 0);
        int64_t have = isz == 8 ? ((int64_t *)got)[e] : ((int32_t *)got)[e];
        if (have != want) {
            bad = 1;
            snprintf(out->note, sizeof out->note, "element %lld: %lld, not %lld", (long long)e, (long long)have,
                     (long long)want);
        }
    }
    out->value[1] = bad == 0;
    if (st != GPUMEM_OK)
        snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
    out->status = st;
    gpumem_array_release(hdst);
    gpumem_array_release(view);
    gpumem_array_release(d);
    gpumem_array_release(hb);
    free(got);
    free(base);
    gpumem_stream_destroy(stream);
    gpumem_context_release(ctx);
}

static void test_strided_queued(void)
{
    for (size_t i = 0; i < sizeof strided_queued_cases / sizeof strided_queued_cases[0]; i++) {
        const strided_queued *c = &strided_queued_cases[i];
        child_result r;
        run_child(strided_queued_case, c, &r);
        ok(r.exited && r.exit_code == 0 && r.status == GPUMEM_OK, "%s: the queued download runs%s%s", c->name,
           r.text[0] ? ": " : "", r.text);
        ok(r.value[3] == 1 && r.value[2] >= 7, "%s: queued, in 8 slabs or more (%ld events)", c->name, r.value[2]);
        ok(r.value[0] >= 1 && r.value[0] <= 3,
           "%s: decided once, its slabs once per slab shape (%ld decisions)", c->name, r.value[0]);
        ok(r.value[1] == 1, "%s: every element landed%s%s", c->name, r.note[0] ? ": " : "", r.note);
    }
}

int main(void)
{
    test_queued_once();
    test_strided_queued();
    test_big();
    test_batch_once();
    test_outcome();
    test_chunks();
    test_stream();
    done_testing();
    return exit_status();
}
