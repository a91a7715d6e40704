/*
 * copy_debug.c - GPUMEM_DEBUG=poison and GPUMEM_DEBUG=copies (copy_debug.h
 * says what each does; doc/environment.md says it for users), and the
 * decision a thread's last copy reports (gpumem_debug_last_copy_path,
 * gpumem_copy_path_name; gm_copy_report, copy_engine.h).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "copy_debug.h"
#include "copy_decide.h"
#include "copy_engine.h"
#include "copyplan.h"
#include "error.h"
#include "gpumem/dtype.h"

/* ---- poison ------------------------------------------------------------------------------------ */

/* How to fill one host-side view: a dense one as one run of bytes from its
 * lowest (an element's first byte), else by the planner's rows from a
 * broadcast element. */
typedef struct fill {
    char *base;        /* dense: the lowest byte; else element 0 */
    uint64_t bytes;    /* dense: the run's bytes */
    bool dense;
    gm_copy_plan plan; /* !dense: from the pattern element (all strides 0) into the view */
    size_t itemsize;
    unsigned char pat[]; /* one element's bytes of the pattern */
} fill;

/* Byte k of an element is byte k mod 4 of the word, lowest first. */
static void pattern_bytes(unsigned char *out, size_t n)
{
    for (size_t k = 0; k < n; k++)
        out[k] = (unsigned char)((GPUMEM_DEBUG_POISON_WORD >> (8 * (k % 4))) & 0xffu);
}

/* The fill of a's elements; NULL when there are none or no host memory. */
static fill *fill_make(const gpumem_array *a)
{
    if (gm_array_size(a) == 0 || a->itemsize == 0)
        return NULL;
    fill *f = malloc(sizeof *f + a->itemsize);
    if (f == NULL)
        return NULL;
    f->itemsize = a->itemsize;
    pattern_bytes(f->pat, a->itemsize);
    f->dense = gm_copy_dense(a->ndim, a->shape, a->strides, a->itemsize);
    if (f->dense) {
        int64_t lo = 0, hi = 0;
        gm_layout_extent(a->ndim, a->shape, a->strides, a->itemsize, &lo, &hi);
        f->base = a->host + lo;
        f->bytes = (uint64_t)(hi - lo);
        return f;
    }
    int64_t zeros[GM_MAX_NDIM] = {0};
    f->base = a->host;
    if (gm_copy_plan_make(a->ndim, a->shape, zeros, a->strides, a->itemsize, SIZE_MAX, &f->plan) != GPUMEM_OK) {
        /* an array's own layout always plans; nothing is filled if not */
        free(f);
        return NULL;
    }
    return f;
}

static void fill_run(const fill *f)
{
    if (!f->dense) {
        gm_copy_plan_run_host(&f->plan, f->pat, f->base);
        return;
    }
    /* one element, then doubling copies of what is written */
    uint64_t done = f->itemsize < f->bytes ? f->itemsize : f->bytes;
    memcpy(f->base, f->pat, (size_t)done);
    while (done < f->bytes) {
        uint64_t n = done < f->bytes - done ? done : f->bytes - done;
        memcpy(f->base + done, f->base, (size_t)n);
        done += n;
    }
}

void gm_poison_host(const gpumem_array *a)
{
    fill *f = fill_make(a);
    if (f != NULL)
        fill_run(f);
    free(f);
}

/* The host function that fills a download's destination in stream order. */
static void fill_on_stream(void *arg)
{
    fill_run(arg);
    free(arg);
}

void gm_poison_before_download(const gpumem_array *a, gpumem_stream *stream, gpumem_context *ctx)
{
    fill *f = fill_make(a);
    if (f == NULL)
        return;
    gm_dstream *ds = gm_stream_ds(stream);
    /* Idle: nothing queued before the copy can still read the bytes.  The
     * copy also follows the legacy default stream's work (on a blocking
     * stream), so that must be idle too; on the legacy stream itself it
     * follows every blocking stream's, which no one query tells: there, only
     * the stream's order is safe.  Raw driver calls: a refusal only costs
     * the poison, and records nothing. */
    if (ds != NULL && GM_DRV(stream_query, ctx->dctx, ds) == GM_CUDA_SUCCESS &&
        GM_DRV(stream_query, ctx->dctx, NULL) == GM_CUDA_SUCCESS) {
        fill_run(f);
        free(f);
        return;
    }
    if (GM_DRV(launch_host_func, ctx->dctx, ds, fill_on_stream, f) != GM_CUDA_SUCCESS)
        free(f);
}

/* A device array: the driver's memset (gpumem_array_fill) on stream, or on
 * a private non-blocking stream, waited for, so that no other work is
 * waited for (a wait on the legacy stream would wait for every blocking
 * stream, and hide the missing synchronization this is here to show). */
static gpumem_status poison_device(gpumem_array *a, gpumem_stream *stream)
{
    unsigned char small[64];
    unsigned char *pat = a->itemsize <= sizeof small ? small : malloc(a->itemsize);
    if (pat == NULL)
        return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "out of host memory");
    pattern_bytes(pat, a->itemsize);
    gpumem_status st;
    if (stream != NULL) {
        st = gpumem_array_fill(a, pat, stream);
    } else {
        gpumem_stream *own = NULL;
        st = gpumem_stream_create(a->ctx, GPUMEM_STREAM_NON_BLOCKING, &own);
        if (st == GPUMEM_OK)
            st = gpumem_array_fill(a, pat, own);
        if (st == GPUMEM_OK)
            st = gpumem_stream_synchronize(own);
        if (own != NULL)
            st = gm_keep_first(st, gpumem_stream_destroy(own));
    }
    if (pat != small)
        free(pat);
    return st;
}

gpumem_status gm_poison_new_array(const char *what, gpumem_status st, gpumem_stream *stream, gpumem_array **out)
{
    if (st != GPUMEM_OK || !gm_poison_on())
        return st;
    gpumem_array *a = *out;
    if (gm_array_size(a) == 0)
        return GPUMEM_OK;
    if (!gm_array_on_device(a)) {
        gm_poison_host(a);
        return GPUMEM_OK;
    }
    st = poison_device(a, stream);
    if (st == GPUMEM_OK)
        return GPUMEM_OK;
    st = gm_error_reword(st, "%s: filling the new array with the poison pattern (GPUMEM_DEBUG=poison): %s", what,
                         gm_error_message());
    *out = NULL;
    return gm_keep_first(st, gpumem_array_release(a));
}

/* ---- copies -------------------------------------------------------------------------------------- */

uint64_t gm_copies_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The direction of one copy between arrays. */
static const char *direction(const gpumem_array *dst, const gpumem_array *src)
{
    bool sd = gm_array_on_device(src), dd = gm_array_on_device(dst);
    return sd && dd ? (src->ctx->device != dst->ctx->device ? "peer" : "d2d") : sd ? "d2h" : dd ? "h2d" : "h2h";
}

void gm_copies_line(const char *what, uint64_t t0, gpumem_status st, const gpumem_array *dst,
                    const gpumem_array *src, gpumem_copy_path path, bool sync)
{
    uint64_t t1 = gm_copies_clock();
    const char *name = gpumem_copy_path_name(path);
    /* one call: stdio writes the line whole among other threads' lines */
    fprintf(stderr, "gpumem: copy %s: %s path=%s bytes=%llu us=%.1f sync=%s status=%s\n", what, direction(dst, src),
            name != NULL ? name : "?", (unsigned long long)gm_array_size(dst) * (unsigned long long)dst->itemsize,
            (double)(t1 - t0) / 1000.0, sync ? "yes" : "no", gpumem_status_string(st));
}

void gm_copies_batch_line(const char *what, uint64_t t0, gpumem_status st, size_t n, gpumem_array *const *dst,
                          gpumem_array *const *src, gpumem_copy_path path, bool on_stream)
{
    uint64_t t1 = gm_copies_clock();
    const char *name = gpumem_copy_path_name(path), *dir = NULL;
    unsigned long long bytes = 0;
    bool host_only = true;
    for (size_t i = 0; i < n; i++) {
        const char *d = direction(dst[i], src[i]);
        dir = dir == NULL || strcmp(dir, d) == 0 ? d : "mixed";
        host_only = host_only && strcmp(d, "h2h") == 0;
        bytes += (unsigned long long)gm_array_size(dst[i]) * (unsigned long long)dst[i]->itemsize;
    }
    fprintf(stderr, "gpumem: copy %s: %s path=%s bytes=%llu us=%.1f sync=%s status=%s pairs=%zu\n", what,
            dir != NULL ? dir : "h2h", name != NULL ? name : "?", bytes, (double)(t1 - t0) / 1000.0,
            !on_stream || host_only ? "yes" : "no", gpumem_status_string(st), n);
}

/* ---- the decision a thread's copies report (copy_engine.h) ------------------------------------- */

/* The decision of the calling thread's last copy that a caller asked for
 * (gm_copy_run, or a batch's gm_copy_report): what
 * gpumem_debug_last_copy_path reports.  Copies made inside a copy
 * (gm_copy_inner) hand their decision back to it instead. */
static _Thread_local gm_copy_decision reported;

GPUMEM_API gpumem_status gpumem_debug_last_copy_path(gpumem_copy_path *path)
{
    GM_CHECK_NULL(path);
    *path = reported.path;
    return GPUMEM_OK;
}

void gm_copy_last_decision(gm_copy_decision *out)
{
    *out = reported;
}

void gm_copy_report(const gm_copy_decision *d)
{
    reported = *d;
}

GPUMEM_API const char *gpumem_copy_path_name(gpumem_copy_path path)
{
    switch (path) {
    case GPUMEM_COPY_PATH_NONE: return "none";
    case GPUMEM_COPY_PATH_HOST: return "host";
    case GPUMEM_COPY_PATH_CONTIGUOUS: return "contiguous";
    case GPUMEM_COPY_PATH_DMA: return "dma";
    case GPUMEM_COPY_PATH_DEVICE_PACK: return "device-pack";
    case GPUMEM_COPY_PATH_CPU_PACK: return "cpu-pack";
    case GPUMEM_COPY_PATH_CPU_DEVICE_PACK: return "cpu-device-pack";
    case GPUMEM_COPY_PATH_STAGED: return "staged";
    case GPUMEM_COPY_PATH_DMA_LOOP: return "dma-loop";
    case GPUMEM_COPY_PATH_PEER: return "peer";
    case GPUMEM_COPY_PATH_PEER_STAGED: return "peer-staged";
    }
    return NULL;
}
