/*
 * cmd-bench-targets.c - gpumem bench's overlap rows (a pageable copy on one
 * stream beside a pinned copy on another) and the targets read off
 * one run (a queued pageable download against a synchronous one, a 4 KiB
 * pinned copy against the driver's call).
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gpumem.h>

#include "cmd-bench-run.h"

/* ---- overlap: a pageable copy on one stream beside a pinned copy on another ----------------------------- */

typedef struct overlap_case {
    gpumem_array *pdst, *psrc; /* the pageable copy, on s1 */
    gpumem_array *qdst, *qsrc; /* the pinned copy the other way, on s2 */
    gpumem_stream *s1, *s2;
    int which;                 /* 1: the pageable alone, 2: the pinned alone, 3: both */
} overlap_case;

static int run_overlap(void *arg)
{
    overlap_case *c = arg;
    int rc = 0;
    if (c->which & 2) /* queued first: it runs while the pageable copy is issued */
        rc |= gpumem_array_copy(c->qdst, c->qsrc, c->s2) != GPUMEM_OK;
    if (c->which & 1)
        rc |= gpumem_array_copy(c->pdst, c->psrc, c->s1) != GPUMEM_OK;
    if (c->which & 1)
        rc |= gpumem_stream_synchronize(c->s1) != GPUMEM_OK;
    if (c->which & 2)
        rc |= gpumem_stream_synchronize(c->s2) != GPUMEM_OK;
    return rc;
}

/* Pageable D2H (queued on a stream) beside a pinned H2D on another stream,
 * and pageable H2D beside a pinned D2H: the time of each alone and of both
 * at once.  Both at once near the longer one alone shows the overlap. */
int bench_overlap(bench *b)
{
    int64_t n = b->quick ? (1 << 20) : (256 << 20);
    const gpumem_dtype *u8 = gpumem_dtype_builtin(GPUMEM_UINT8);
    void *mem = NULL;
    void *unused = NULL;
    gpumem_array *page = bench_host_bytes(b, 0, n, &mem), *pin = bench_host_bytes(b, 1, n, &unused), *d1 = NULL, *d2 = NULL;
    gpumem_stream *s1 = NULL, *s2 = NULL;
    gpumem_status st = page == NULL || pin == NULL ? GPUMEM_ERROR_HOST_OUT_OF_MEMORY : GPUMEM_OK;
    if (st == GPUMEM_OK)
        st = gpumem_device_array(b->ctx, 1, &n, NULL, u8, 'C', NULL, &d1);
    if (st == GPUMEM_OK)
        st = gpumem_device_array(b->ctx, 1, &n, NULL, u8, 'C', NULL, &d2);
    if (st == GPUMEM_OK)
        st = gpumem_stream_create(b->ctx, GPUMEM_STREAM_NON_BLOCKING, &s1);
    if (st == GPUMEM_OK)
        st = gpumem_stream_create(b->ctx, GPUMEM_STREAM_NON_BLOCKING, &s2);
    int rc = st != GPUMEM_OK && !bench_oom(st);
    if (rc) {
        bench_error("", "%s", gpumem_last_error());
    } else if (st != GPUMEM_OK) { /* too big for this device or the page-locked limit */
        bench_note(&b->io, "skipped: the overlap rows (%lld MiB): %s", (long long)(n >> 20), gpumem_last_error());
        rc = -1;
    }
    static const char *const names[2][3] = {
        {"d2h pageable on s1 (queued)", "h2d pinned on s2", "both at once"},
        {"h2d pageable on s1", "d2h pinned on s2", "both at once"}};
    for (int dir = 0; dir < 2 && !rc; dir++) {
        overlap_case c = {dir == 0 ? page : d1, dir == 0 ? d1 : page, dir == 0 ? d2 : pin, dir == 0 ? pin : d2,
                          s1, s2, 0};
        for (int which = 1; which <= 3 && !rc; which++) {
            c.which = which;
            bench_progress(b, names[dir][which - 1]);
            bench_times t;
            if (bench_med(b, run_overlap, &c, &t) != 0) {
                bench_error("\n", "%s: %s", names[dir][which - 1], gpumem_last_error());
                rc = 1;
                break;
            }
            bench_result(b, "overlap", names[dir][which - 1], which == 3 ? "together" : "alone",
                         (uint64_t)n * (which == 3 ? 2 : 1), &t);
        }
    }
    gpumem_stream_destroy(s1);
    gpumem_stream_destroy(s2);
    gpumem_array_release(d1);
    gpumem_array_release(d2);
    gpumem_array_release(page);
    gpumem_array_release(pin);
    free(mem);
    return rc > 0;
}

/* ---- the targets, read off one run ---------------------------------------------------- */

typedef struct queued_case {
    gpumem_array *host, *dev;
    gpumem_stream *stream; /* NULL: synchronous */
} queued_case;

static int run_download(void *arg)
{
    queued_case *c = arg;
    return gpumem_array_copy(c->host, c->dev, c->stream) != GPUMEM_OK ||
           (c->stream != NULL && gpumem_stream_synchronize(c->stream) != GPUMEM_OK);
}

#define SMALL_LOOP 200 /* 4 KiB copies per timed run */

static int run_small(void *arg)
{
    copy_case *c = arg;
    for (int i = 0; i < SMALL_LOOP; i++)
        if (gpumem_array_copy(c->dst, c->src, NULL) != GPUMEM_OK)
            return 1;
    return 0;
}

static int run_small_drv(void *arg)
{
    drv_case *c = arg;
    for (int i = 0; i < SMALL_LOOP; i++)
        if (bench_drv.memcpy(c->dst, c->src, c->bytes) != 0 || bench_drv.ctx_synchronize() != 0)
            return 1;
    return 0;
}

/* A pageable download queued on a stream against a synchronous one (256
 * MiB, --quick 1 MiB), and the cost of a 4 KiB pinned copy above the
 * driver's call: rows of group "targets" and notes with the ratios. */
int bench_targets(bench *b)
{
    int64_t n = b->quick ? (1 << 20) : (256 << 20), small = 4096;
    const gpumem_dtype *u8 = gpumem_dtype_builtin(GPUMEM_UINT8);
    void *mem = NULL;
    gpumem_array *h = NULL, *d = NULL;
    gpumem_stream *s = NULL;
    gpumem_status st = bench_host_alloc(b, 0, n, &mem, &h);
    if (st == GPUMEM_OK)
        st = gpumem_device_array(b->ctx, 1, &n, NULL, u8, 'C', NULL, &d);
    if (st == GPUMEM_OK)
        st = gpumem_stream_create(b->ctx, GPUMEM_STREAM_NON_BLOCKING, &s);
    int rc = 0;
    if (st != GPUMEM_OK) {
        if (!bench_oom(st)) {
            bench_error("", "%s", gpumem_last_error());
            rc = 1;
        } else {
            bench_note(&b->io, "skipped: the queued download target: %s", gpumem_last_error());
        }
    } else {
        queued_case sync = {h, d, NULL}, queued = {h, d, s};
        char name[96];
        snprintf(name, sizeof name, "d2h pageable %lld MiB, synchronous", (long long)(n >> 20));
        bench_progress(b, name);
        bench_times t;
        double ts = bench_med(b, run_download, &sync, &t) == 0 ? t.median : -1;
        if (ts >= 0)
            bench_result(b, "targets", name, "synchronous", (uint64_t)n, &t);
        snprintf(name, sizeof name, "d2h pageable %lld MiB, queued on a stream", (long long)(n >> 20));
        bench_progress(b, name);
        double tq = ts < 0 || bench_med(b, run_download, &queued, &t) != 0 ? -1 : t.median;
        if (tq >= 0)
            bench_result(b, "targets", name, "queued", (uint64_t)n, &t);
        if (ts <= 0 || tq < 0) {
            bench_error("\n", "%s: %s", name, gpumem_last_error());
            rc = 1;
        } else {
            bench_note(&b->io, "target: a queued pageable download takes %.2fx a synchronous one (at most 1.15x)",
                       tq / ts);
        }
    }
    gpumem_stream_destroy(s);
    gpumem_array_release(h);
    gpumem_array_release(d);
    free(mem);
    /* 4 KiB pinned, each way: the library's call against the driver's */
    void *unused = NULL;
    gpumem_array *p = NULL, *ds = NULL;
    st = rc ? GPUMEM_ERROR_INTERNAL : bench_host_alloc(b, 1, small, &unused, &p);
    if (st == GPUMEM_OK)
        st = gpumem_device_array(b->ctx, 1, &small, NULL, u8, 'C', NULL, &ds);
    for (int dir = 0; dir < 2 && st == GPUMEM_OK && !rc; dir++) {
        copy_case c = {dir ? p : ds, dir ? ds : p};
        drv_case dc = {bench_addr(c.dst, !dir), bench_addr(c.src, dir), (size_t)small, {0}, 0};
        const char *name = dir ? "d2h pinned 4 KiB, per copy" : "h2d pinned 4 KiB, per copy";
        bench_progress(b, name);
        bench_times tm, tdrv; /* the two timed in turns (bench_time_vs) */
        if (bench_time_vs(b->reps, run_small, &c, bench_drv.ok ? run_small_drv : NULL, &dc, &tm, &tdrv) != 0) {
            bench_error("\n", "%s: %s", name, gpumem_last_error());
            rc = 1;
            break;
        }
        bench_times_scale(&tm, 1.0 / SMALL_LOOP);
        double t = tm.median;
        bench_result(b, "targets", name, "gpumem", (uint64_t)small, &tm);
        if (tdrv.median >= 0) {
            tm = tdrv;
            bench_times_scale(&tm, 1.0 / SMALL_LOOP);
            double td = tm.median;
            {
                bench_result(b, "targets", name, "driver", (uint64_t)small, &tm);
                bench_note(&b->io, "target: %s: %.2f us above the driver's call (at most 1 us)", name,
                           (t - td) * 1e6);
            }
        }
    }
    if (st != GPUMEM_OK && !rc && bench_oom(st))
        bench_comment(b, "skipped: the 4 KiB pinned target: out of memory");
    gpumem_array_release(p);
    gpumem_array_release(ds);
    return rc;
}
