/*
 * copy_engine.c - the copy engine: chooses, per copy, the cheapest way to
 * move it and runs it.  The cost is bytes per DMA row and memory kind, not
 * the number of driver calls (a 2-D copy of 4-byte rows runs at a tenth of
 * the link's speed).  In order:
 *
 *  1. both sides host memory: the CPU copies (through a temporary when they
 *     overlap);
 *  2. the planner (copyplan.c) gives one rectangular copy: one contiguous
 *     transfer, or one 2-D/3-D copy when its rows are at least
 *     gm_copy_min_row_bytes() wide;
 *  3. otherwise the strided sides are packed, so that one contiguous
 *     transfer crosses the link: a device side by the pack kernels
 *     (copy_pack.c) into device scratch, a host side by CPU threads into a
 *     host staging buffer, in the layout of the other side when that side is
 *     contiguous (then it is the transfer's end) or of its own axis order;
 *  4. when the pack kernels are unavailable (the driver could not load
 *     them), what one rectangular copy can do is one, else a loop of them.
 *
 * A failing copy changes nothing in the destination: in every path but the
 * last loop the destination is written once, by the final operation (a
 * transfer, a kernel, or the CPU's unpacking after the transfer completed),
 * and everything before it writes scratch or staging memory only.  The
 * destination's gaps are never written.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "copy_engine.h"
#include "copy_pack.h"
#include "copyplan.h"
#include "env.h"
#include "error.h"
#include "gpumem/dtype.h"
#include "staging.h"
#include "stream.h"

/* ---- the path of the thread's last copy ------------------------------------------------------ */

static _Thread_local gpumem_copy_path last_path;

GPUMEM_API gpumem_status gpumem_debug_last_copy_path(gpumem_copy_path *path)
{
    GM_CHECK_NULL(path);
    *path = last_path;
    return GPUMEM_OK;
}

void gm_copy_set_last_path(gpumem_copy_path path)
{
    last_path = path;
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

/* ---- settings ------------------------------------------------------------------------------------ */

static pthread_once_t settings_once = PTHREAD_ONCE_INIT;
static gpumem_status settings_status;
static char settings_error[256];
static size_t min_row_bytes = GM_COPY_MIN_ROW_BYTES;

static void settings_read(void)
{
    long v;
    settings_status = gm_env_long("GPUMEM_COPY_MIN_ROW_BYTES", 0, 1L << 30, GM_COPY_MIN_ROW_BYTES, &v, NULL);
    if (settings_status == GPUMEM_OK)
        min_row_bytes = (size_t)v;
    else
        snprintf(settings_error, sizeof settings_error, "%s", gpumem_last_error());
}

gpumem_status gm_copy_min_row_bytes(size_t *out)
{
    pthread_once(&settings_once, settings_read);
    if (settings_status != GPUMEM_OK)
        return gm_error(settings_status, "%s", settings_error);
    *out = min_row_bytes;
    return GPUMEM_OK;
}

/* ---- sides and driver copies --------------------------------------------------------------------- */

/* How the driver addresses one side of a copy. */
typedef struct side {
    int memtype;         /* GM_CU_MEMORYTYPE_HOST, _DEVICE or _UNIFIED */
    char *host;          /* element 0, for HOST */
    gm_cu_deviceptr dev; /* element 0, for DEVICE and UNIFIED */
} side;

static side side_of(const gpumem_array *a)
{
    side s = {GM_CU_MEMORYTYPE_HOST, a->host, 0};
    if (gm_array_on_device(a)) {
        s.memtype = GM_CU_MEMORYTYPE_DEVICE;
        s.dev = a->dev;
    } else if (a->kind == GPUMEM_MEMORY_MANAGED) {
        s.memtype = GM_CU_MEMORYTYPE_UNIFIED;
        s.dev = a->dev;
    }
    return s;
}

static gm_cu_deviceptr side_addr(const side *s, int64_t offset)
{
    return s->memtype == GM_CU_MEMORYTYPE_HOST ? (gm_cu_deviceptr)(uintptr_t)(s->host + offset)
                                               : s->dev + (gm_cu_deviceptr)offset;
}

/* One copy's state: where it runs, and what it allocated and queued. */
typedef struct job {
    const char *what;
    gpumem_context *ctx;
    gpumem_stream *stream;
    gm_dstream *ds;
    int async;
    side src, dst;           /* for plan visits */
    gm_pack_kernels *kernels; /* once asked for */
    bool kernels_asked;
    gpumem_array *scratch;   /* device scratch */
    gpumem_array *staging;   /* host staging */
    bool launched;           /* a kernel is queued */
    bool queued;             /* an asynchronous operation is queued */
    bool staged;             /* a transfer went through the staging engine */
} job;

/* One rectangular copy of a plan, with the driver. */
static gpumem_status run_one(void *arg, const gm_copy_plan *p, int64_t src_off, int64_t dst_off)
{
    job *r = arg;
    gm_dctx *dctx = r->ctx->dctx;
    r->queued |= r->async != 0;
    if (p->dims == 1)
        return gm_drv_check(GM_DRV(memcpy, dctx, side_addr(&r->dst, dst_off), side_addr(&r->src, src_off),
                                   p->width, r->ds, r->async),
                            GM_OP_memcpy, r->what);
/* CUDA_MEMCPY2D and CUDA_MEMCPY3D name their common fields alike. */
#define SET_COMMON(c)                                                   \
    do {                                                                \
        memset(&(c), 0, sizeof(c));                                     \
        (c).srcMemoryType = r->src.memtype;                             \
        (c).dstMemoryType = r->dst.memtype;                             \
        if (r->src.memtype == GM_CU_MEMORYTYPE_HOST)                    \
            (c).srcHost = r->src.host + src_off;                        \
        else                                                            \
            (c).srcDevice = r->src.dev + (gm_cu_deviceptr)src_off;      \
        if (r->dst.memtype == GM_CU_MEMORYTYPE_HOST)                    \
            (c).dstHost = r->dst.host + dst_off;                        \
        else                                                            \
            (c).dstDevice = r->dst.dev + (gm_cu_deviceptr)dst_off;      \
        (c).srcPitch = p->src_pitch;                                    \
        (c).dstPitch = p->dst_pitch;                                    \
        (c).WidthInBytes = p->width;                                    \
        (c).Height = p->height;                                         \
    } while (0)
    if (p->dims == 2) {
        gm_cu_memcpy2d c;
        SET_COMMON(c);
        return gm_drv_check(GM_DRV(memcpy_2d, dctx, &c, r->ds, r->async), GM_OP_memcpy_2d, r->what);
    }
    gm_cu_memcpy3d c;
    SET_COMMON(c);
    c.srcHeight = p->src_height;
    c.dstHeight = p->dst_height;
    c.Depth = p->depth;
#undef SET_COMMON
    return gm_drv_check(GM_DRV(memcpy_3d, dctx, &c, r->ds, r->async), GM_OP_memcpy_3d, r->what);
}

/* Runs a plan between two sides. */
static gpumem_status run_plan(job *j, const gm_copy_plan *plan, side src, side dst)
{
    j->src = src;
    j->dst = dst;
    return gm_copy_plan_visit(plan, run_one, j);
}

/* Whether a is pageable host memory (the driver stages it itself, slowly). */
static bool pageable(const gpumem_array *a)
{
    return a->kind == GPUMEM_MEMORY_HOST && !gm_array_is_locked(a);
}

/* One contiguous transfer of bytes, lowest address to lowest address; dir
 * 1 uploads, -1 downloads, 0 copies on the device.  A pageable host side
 * (`paged`) of at least the staging threshold goes through the staging
 * engine, unless another copy is using it. */
static gpumem_status transfer(job *j, gm_cu_deviceptr dst, gm_cu_deviceptr src, size_t bytes, int dir, bool paged)
{
    size_t min = 0;
    gpumem_status st;
    if (dir != 0 && paged && (st = gm_staging_min_bytes(&min)) != GPUMEM_OK)
        return gm_error_prefix(st, j->what);
    if (dir != 0 && paged && bytes >= min) {
        gm_staging *e = NULL;
        if ((st = gm_staging_acquire(j->ctx, &e)) != GPUMEM_OK)
            return st;
        if (e != NULL) {
            j->staged = true;
            j->queued |= j->async != 0;
            st = dir > 0 ? gm_staging_upload(e, dst, (const void *)(uintptr_t)src, bytes, j->ds, j->async, j->what)
                         : gm_staging_download(e, (void *)(uintptr_t)dst, src, bytes, j->ds, j->what);
            gm_staging_release(e);
            return st;
        }
    }
    j->queued |= j->async != 0;
    return gm_drv_check(GM_DRV(memcpy, j->ctx->dctx, dst, src, bytes, j->ds, j->async), GM_OP_memcpy, j->what);
}

static gpumem_status plan_for(const char *what, const gpumem_array *dst, const gpumem_array *src,
                              size_t max_pitch, gm_copy_plan *plan)
{
    gpumem_status st = gm_copy_plan_make(dst->ndim, dst->shape, src->strides, dst->strides, dst->itemsize,
                                         max_pitch, plan);
    return st == GPUMEM_OK ? st : gm_error_prefix(st, what);
}

/* ---- layouts --------------------------------------------------------------------------------------- */

/* Whether a's elements fill one run of bytes (contiguous in some axis
 * order, axes possibly reversed). */
static bool dense(const gpumem_array *a)
{
    int64_t like[GM_MAX_NDIM];
    gm_layout_strides_like(a->ndim, a->shape, a->strides, a->itemsize, like);
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] > 1 && a->strides[i] != like[i] && a->strides[i] != -like[i])
            return false;
    return true;
}

/* The offset of a's lowest byte from its element 0 (<= 0). */
static int64_t low_of(const gpumem_array *a)
{
    int64_t lo = 0, hi = 0;
    gm_layout_extent(a->ndim, a->shape, a->strides, a->itemsize, &lo, &hi);
    return lo;
}

static uint64_t nbytes_of(const gpumem_array *a)
{
    return (uint64_t)gm_array_size(a) * a->itemsize;
}

/* ---- scratch and staging --------------------------------------------------------------------------- */

static gpumem_status new_bytes(job *j, bool device, uint64_t bytes, gpumem_array **out)
{
    int64_t n = (int64_t)bytes, one = 1;
    const gpumem_dtype *u8 = gpumem_dtype_builtin(GPUMEM_UINT8);
    return device ? gm_array_new_device(j->what, j->ctx, 1, &n, &one, u8, j->stream, out)
                  : gm_array_new_host(j->what, 1, &n, &one, u8, out);
}

/* Device scratch of bytes; its address. */
static gpumem_status scratch(job *j, uint64_t bytes, uint64_t *addr)
{
    gpumem_status st = new_bytes(j, true, bytes, &j->scratch);
    if (st == GPUMEM_OK)
        *addr = j->scratch->dev;
    return st;
}

/* Host staging of bytes; its address. */
static gpumem_status staging(job *j, uint64_t bytes, char **addr)
{
    gpumem_status st = new_bytes(j, false, bytes, &j->staging);
    if (st == GPUMEM_OK)
        *addr = j->staging->host;
    return st;
}

/* The context's pack kernels, or NULL when the driver cannot load them. */
static gpumem_status kernels(job *j, gm_pack_kernels **out)
{
    gpumem_status st = GPUMEM_OK;
    if (!j->kernels_asked) {
        st = gm_pack_kernels_get(j->ctx, &j->kernels);
        j->kernels_asked = st == GPUMEM_OK;
    }
    *out = j->kernels;
    return st;
}

/* Waits for what the copy queued where it must (a synchronous copy is
 * complete on return; scratch and staging must outlive the work on them),
 * then frees them.  Keeps the first error. */
static gpumem_status finish(job *j, gpumem_status st)
{
    bool temps = j->scratch != NULL || j->staging != NULL;
    if ((j->launched && !j->async) || (j->async && j->queued && temps) || (j->launched && temps)) {
        gpumem_status sst = gm_drv_check(GM_DRV(stream_synchronize, j->ctx->dctx, j->ds),
                                         GM_OP_stream_synchronize, j->what);
        if (sst != GPUMEM_OK && st == GPUMEM_OK)
            st = gm_error(sst, "%s (waiting for the copy: the write into the destination was issued)",
                          gpumem_last_error());
    }
    gpumem_status copied = st;
    gpumem_status rst = gpumem_array_release(j->scratch);
    if (st == GPUMEM_OK)
        st = rst;
    rst = gpumem_array_release(j->staging);
    if (st == GPUMEM_OK)
        st = rst;
    gm_pack_kernels_put(j->kernels);
    if (copied == GPUMEM_OK && st != GPUMEM_OK)
        st = gm_error(st, "%s: the copy completed, but freeing its temporary memory failed: %s", j->what,
                      gpumem_last_error());
    return st;
}

/* ---- packing ----------------------------------------------------------------------------------------- */

/* A pack plan between a strided side (its element 0 at saddr) and a packed
 * side with strides pstrides (element 0 at paddr). */
static gpumem_status pack_plan(job *j, const gpumem_array *a, const int64_t *sstrides, uint64_t saddr,
                               const int64_t *pstrides, uint64_t paddr, bool unpack, gm_pack_plan *plan)
{
    gpumem_status st = gm_pack_plan_make(a->ndim, a->shape, sstrides, pstrides, a->itemsize, saddr, paddr, unpack,
                                         plan);
    return st == GPUMEM_OK ? st : gm_error_prefix(st, j->what);
}

/* A device pack (unpack: false) or unpack (true) between device addresses. */
static gpumem_status device_pack(job *j, const gpumem_array *a, const int64_t *sstrides, uint64_t saddr,
                                 const int64_t *pstrides, uint64_t paddr, bool unpack)
{
    gm_pack_plan plan;
    gpumem_status st = pack_plan(j, a, sstrides, saddr, pstrides, paddr, unpack, &plan);
    if (st == GPUMEM_OK && plan.bytes > 0) {
        st = gm_pack_launch(j->kernels, &plan, saddr, paddr, j->stream, j->what);
        j->launched = true;
    }
    return st;
}

/* A CPU pack or unpack between host addresses. */
static gpumem_status cpu_pack(job *j, const gpumem_array *a, const int64_t *sstrides, const char *sbase,
                              const int64_t *pstrides, const char *pbase, bool unpack)
{
    gm_pack_plan plan;
    uint64_t saddr = (uint64_t)(uintptr_t)sbase, paddr = (uint64_t)(uintptr_t)pbase;
    gpumem_status st = pack_plan(j, a, sstrides, saddr, pstrides, paddr, unpack, &plan);
    if (st == GPUMEM_OK && plan.bytes > 0) {
        plan.params.strided += saddr;
        plan.params.packed += paddr;
        gm_staging_cpu_pack(j->ctx, &plan.params, unpack, plan.bytes); /* on the worker pool */
    }
    return st;
}

/* A transfer between a strided host side (hstrides, element 0 at host) and
 * the packed run of device bytes laid out as pstrides with element 0 at
 * dev, through the staging engine: its threads pack (dir 1) or unpack (-1)
 * each chunk straight into or out of their pinned slots, in the same pass
 * as the transfer (staging.h). */
static gpumem_status staged_pack(job *j, const gpumem_array *a, const int64_t *hstrides, char *host,
                                 const int64_t *pstrides, uint64_t dev, int dir, int async)
{
    gm_pack_plan plan;
    uint64_t haddr = (uint64_t)(uintptr_t)host;
    gpumem_status st = pack_plan(j, a, hstrides, haddr, pstrides, dev, dir < 0, &plan);
    gm_staging *e = NULL;
    if (st != GPUMEM_OK || plan.bytes == 0 || (st = gm_staging_acquire(j->ctx, &e)) != GPUMEM_OK)
        return st;
    plan.params.strided += haddr;
    gm_stage_op op = {.dir = dir, .dev = dev + plan.params.packed, .pack = &plan.params, .bytes = plan.bytes};
    j->staged = true;
    j->queued |= dir > 0 && async;
    st = gm_staging_run(e, &op, j->ds, async, j->what);
    gm_staging_release(e);
    if (st != GPUMEM_OK && dir > 0) /* chunks may be on their way into the destination or scratch */
        (void)GM_DRV(stream_synchronize, j->ctx->dctx, j->ds);
    return st;
}

/* ---- the paths ---------------------------------------------------------------------------------------- */

/* Device to device, not overlapping, more than one rectangular copy or
 * narrow rows: one kernel when a side is dense, else through scratch. */
static gpumem_status d2d_packed(job *j, gpumem_array *dst, const gpumem_array *src)
{
    if (dense(dst))
        return device_pack(j, dst, src->strides, src->dev, dst->strides, dst->dev, false);
    if (dense(src))
        return device_pack(j, dst, dst->strides, dst->dev, src->strides, src->dev, true);
    int64_t like[GM_MAX_NDIM];
    uint64_t tmp = 0;
    gm_layout_strides_like(dst->ndim, dst->shape, dst->strides, dst->itemsize, like);
    gpumem_status st = scratch(j, nbytes_of(dst), &tmp);
    if (st == GPUMEM_OK)
        st = device_pack(j, dst, src->strides, src->dev, like, tmp, false);
    if (st == GPUMEM_OK)
        st = device_pack(j, dst, dst->strides, dst->dev, like, tmp, true);
    return st;
}

/* Host to device through packing.  k: the kernels, or NULL. */
static gpumem_status h2d_packed(job *j, gpumem_array *dst, const gpumem_array *src, gm_pack_kernels *k,
                                gpumem_copy_path *path)
{
    uint64_t bytes = nbytes_of(dst), tmp = 0;
    char *buf = NULL;
    gpumem_status st;
    if (dense(src)) { /* one transfer into scratch laid out like src, unpacked into dst */
        *path = GPUMEM_COPY_PATH_DEVICE_PACK;
        int64_t lo = low_of(src);
        if ((st = scratch(j, bytes, &tmp)) == GPUMEM_OK &&
            (st = transfer(j, tmp, side_addr(&(side){GM_CU_MEMORYTYPE_HOST, src->host, 0}, lo), bytes, 1,
                           pageable(src))) == GPUMEM_OK)
            st = device_pack(j, dst, dst->strides, dst->dev, src->strides, tmp - (uint64_t)lo, true);
        return st;
    }
    int64_t like[GM_MAX_NDIM];
    gm_layout_strides_like(dst->ndim, dst->shape, dst->strides, dst->itemsize, like);
    if (dense(dst)) { /* packed into the staging slots as dst's bytes */
        *path = GPUMEM_COPY_PATH_CPU_PACK;
        return staged_pack(j, dst, src->strides, src->host, dst->strides, dst->dev, 1, j->async);
    }
    if (k != NULL) { /* packed into the slots, moved into scratch laid out like dst, unpacked on the device */
        *path = GPUMEM_COPY_PATH_CPU_DEVICE_PACK;
        if ((st = scratch(j, bytes, &tmp)) == GPUMEM_OK &&
            (st = staged_pack(j, dst, src->strides, src->host, like, tmp, 1, 1)) == GPUMEM_OK &&
            (st = device_pack(j, dst, dst->strides, dst->dev, like, tmp, true)) != GPUMEM_OK && !j->async)
            (void)GM_DRV(stream_synchronize, j->ctx->dctx, j->ds); /* the scratch goes: nothing may write it */
        return st;
    }
    if ((st = staging(j, bytes, &buf)) != GPUMEM_OK ||
        (st = cpu_pack(j, dst, src->strides, src->host, like, buf, false)) != GPUMEM_OK)
        return st;
    /* no kernels: rectangular copies from the staging buffer */
    gm_copy_plan plan;
    size_t max_pitch = j->ctx->max_pitch > 0 ? j->ctx->max_pitch : SIZE_MAX;
    if ((st = gm_copy_plan_make(dst->ndim, dst->shape, like, dst->strides, dst->itemsize, max_pitch, &plan)) !=
        GPUMEM_OK)
        return gm_error_prefix(st, j->what);
    *path = gm_copy_plan_count(&plan) > 1 ? GPUMEM_COPY_PATH_DMA_LOOP : GPUMEM_COPY_PATH_CPU_PACK;
    return run_plan(j, &plan, (side){GM_CU_MEMORYTYPE_HOST, buf, 0}, side_of(dst));
}

/* Device to host through packing.  k: the kernels, or NULL. */
static gpumem_status d2h_packed(job *j, gpumem_array *dst, const gpumem_array *src, gm_pack_kernels *k,
                                gpumem_copy_path *path)
{
    uint64_t bytes = nbytes_of(dst), tmp = 0;
    char *buf = NULL;
    gpumem_status st;
    if (dense(dst)) { /* packed into scratch laid out like dst, one transfer */
        *path = GPUMEM_COPY_PATH_DEVICE_PACK;
        int64_t lo = low_of(dst);
        if ((st = scratch(j, bytes, &tmp)) == GPUMEM_OK &&
            (st = device_pack(j, dst, src->strides, src->dev, dst->strides, tmp - (uint64_t)lo, false)) ==
                GPUMEM_OK)
            st = transfer(j, (gm_cu_deviceptr)(uintptr_t)(dst->host + lo), tmp, bytes, -1, pageable(dst));
        return st;
    }
    /* dst strided: the staging slots' threads unpack each chunk as it arrives */
    if (dense(src)) {
        *path = GPUMEM_COPY_PATH_CPU_PACK;
        return staged_pack(j, dst, dst->strides, dst->host, src->strides, src->dev, -1, 0);
    }
    int64_t like[GM_MAX_NDIM];
    gm_layout_strides_like(dst->ndim, dst->shape, dst->strides, dst->itemsize, like);
    if (k != NULL) { /* packed on the device into scratch laid out like dst, then through the slots */
        *path = GPUMEM_COPY_PATH_CPU_DEVICE_PACK;
        if ((st = scratch(j, bytes, &tmp)) == GPUMEM_OK &&
            (st = device_pack(j, dst, src->strides, src->dev, like, tmp, false)) == GPUMEM_OK)
            st = staged_pack(j, dst, dst->strides, dst->host, like, tmp, -1, 0);
        return st;
    }
    /* no kernels: rectangular copies into host staging laid out like src, then the CPU unpacks */
    gm_layout_strides_like(src->ndim, src->shape, src->strides, src->itemsize, like);
    gm_copy_plan plan;
    size_t max_pitch = j->ctx->max_pitch > 0 ? j->ctx->max_pitch : SIZE_MAX;
    if ((st = staging(j, bytes, &buf)) != GPUMEM_OK)
        return st;
    if ((st = gm_copy_plan_make(dst->ndim, dst->shape, src->strides, like, dst->itemsize, max_pitch, &plan)) !=
        GPUMEM_OK)
        return gm_error_prefix(st, j->what);
    *path = gm_copy_plan_count(&plan) > 1 ? GPUMEM_COPY_PATH_DMA_LOOP : GPUMEM_COPY_PATH_CPU_PACK;
    st = run_plan(j, &plan, side_of(src), (side){GM_CU_MEMORYTYPE_HOST, buf, 0});
    if (st == GPUMEM_OK && (j->async || j->launched)) /* the bytes must be there before the CPU reads them */
        st = gm_drv_check(GM_DRV(stream_synchronize, j->ctx->dctx, j->ds), GM_OP_stream_synchronize, j->what);
    if (st == GPUMEM_OK) {
        j->launched = j->queued = false; /* all of it is done */
        st = cpu_pack(j, dst, dst->strides, dst->host, like, buf, true);
    }
    return st;
}

/* ---- the engine ------------------------------------------------------------------------------------- */

/* Whether the bytes two same-space arrays touch overlap. */
static bool overlap(const gpumem_array *a, const gpumem_array *b)
{
    int64_t alo, ahi, blo, bhi;
    gm_layout_extent(a->ndim, a->shape, a->strides, a->itemsize, &alo, &ahi);
    gm_layout_extent(b->ndim, b->shape, b->strides, b->itemsize, &blo, &bhi);
    uint64_t abase = gm_array_on_device(a) ? a->dev : (uint64_t)(uintptr_t)a->host;
    uint64_t bbase = gm_array_on_device(b) ? b->dev : (uint64_t)(uintptr_t)b->host;
    return abase + (uint64_t)alo < bbase + (uint64_t)bhi && bbase + (uint64_t)blo < abase + (uint64_t)ahi;
}

/* Both sides host-addressable: the CPU copies, synchronously; overlapping
 * views go through a temporary. */
static gpumem_status host_copy(const char *what, gpumem_array *dst, const gpumem_array *src, gpumem_stream *stream)
{
    gpumem_array *tmp = NULL;
    gm_copy_plan plan;
    gpumem_status st = GPUMEM_OK;
    last_path = GPUMEM_COPY_PATH_HOST;
    if (overlap(src, dst)) {
        st = gm_array_new_like(what, src, src->ndim, src->shape, 0, stream, &tmp);
        if (st == GPUMEM_OK)
            st = plan_for(what, tmp, src, SIZE_MAX, &plan);
        if (st == GPUMEM_OK) {
            gm_copy_plan_run_host(&plan, src->host, tmp->host);
            src = tmp;
        }
    }
    if (st == GPUMEM_OK)
        st = plan_for(what, dst, src, SIZE_MAX, &plan);
    if (st == GPUMEM_OK)
        gm_copy_plan_run_host(&plan, src->host, dst->host);
    gpumem_status rst = gpumem_array_release(tmp);
    return st != GPUMEM_OK ? st : rst;
}

gpumem_status gm_copy_run(const char *what, gpumem_array *dst, const gpumem_array *src, gpumem_stream *stream,
                          gpumem_context *ctx)
{
    bool src_dev = gm_array_on_device(src), dst_dev = gm_array_on_device(dst);
    /* downloads queued on the stream write host memory when the stream gets
     * there: a copy that touches host memory from the CPU now waits for them */
    if (stream != NULL && (!src_dev || !dst_dev) &&
        atomic_load_explicit(&stream->landings, memory_order_acquire) > 0) {
        gpumem_status sst = gm_drv_check(GM_DRV(stream_synchronize, ctx != NULL ? ctx->dctx : stream->ctx->dctx,
                                                gm_stream_ds(stream)),
                                         GM_OP_stream_synchronize, what);
        if (sst != GPUMEM_OK)
            return sst;
    }
    if (!src_dev && !dst_dev)
        return host_copy(what, dst, src, stream);

    if (stream != NULL && src_dev && pageable(dst))
        return gm_copy_queued_download(what, dst, src, stream, ctx);

    gpumem_status st;
    if (src_dev && dst_dev && overlap(src, dst)) {
        /* overlapping device views: through a device temporary */
        gpumem_array *tmp = NULL;
        if ((st = gm_array_new_like(what, src, src->ndim, src->shape, 0, stream, &tmp)) != GPUMEM_OK)
            return st;
        st = gm_copy_run(what, tmp, src, stream, ctx);
        if (st == GPUMEM_OK)
            st = gm_copy_run(what, dst, tmp, stream, ctx);
        job j = {.what = what, .ctx = ctx, .stream = stream, .ds = gm_stream_ds(stream), .async = stream != NULL,
                 .scratch = tmp, .queued = true};
        return finish(&j, st);
    }

    size_t min_row = 0, max_pitch = ctx->max_pitch > 0 ? ctx->max_pitch : SIZE_MAX;
    gm_copy_plan plan;
    if ((st = gm_copy_min_row_bytes(&min_row)) != GPUMEM_OK || (st = plan_for(what, dst, src, max_pitch, &plan)) !=
        GPUMEM_OK)
        return gm_error_prefix(st, what);
    job j = {.what = what, .ctx = ctx, .stream = stream, .ds = gm_stream_ds(stream), .async = stream != NULL};
    uint64_t count = gm_copy_plan_count(&plan);
    /* a 2-D/3-D copy with a pageable host side runs through the driver's own
     * slow staging (8.5 GB/s for a 64 MiB slab on an H100, against 25-40
     * packed): from the staging threshold on, pack instead, so that one
     * contiguous transfer goes through ours */
    size_t stage_min = SIZE_MAX;
    /* asked only of 2-D/3-D plans: the threshold takes the settings' lock */
    bool paged = plan.dims >= 2 && src_dev != dst_dev && pageable(dst_dev ? src : dst) &&
                 gm_staging_min_bytes(&stage_min) == GPUMEM_OK && nbytes_of(dst) >= stage_min;
    bool narrow = plan.dims >= 2 && (plan.width < min_row || paged);
    if (count == 1 && plan.dims == 1 && src_dev != dst_dev) {
        /* one run: the staging engine decides between itself and the driver */
        side s = side_of(src), d = side_of(dst);
        last_path = GPUMEM_COPY_PATH_CONTIGUOUS;
        st = transfer(&j, side_addr(&d, plan.dst_offset), side_addr(&s, plan.src_offset), plan.width,
                      dst_dev ? 1 : -1, pageable(dst_dev ? src : dst));
        if (j.staged)
            last_path = GPUMEM_COPY_PATH_STAGED;
        return finish(&j, st);
    }
    if (count == 1 && !narrow) {
        last_path = plan.dims == 1 ? GPUMEM_COPY_PATH_CONTIGUOUS : GPUMEM_COPY_PATH_DMA;
        return finish(&j, run_plan(&j, &plan, side_of(src), side_of(dst)));
    }

    gm_pack_kernels *k = NULL;
    if ((st = kernels(&j, &k)) != GPUMEM_OK)
        return finish(&j, st);
    /* without the kernels, a device side that is not one run cannot be packed */
    if (k == NULL && (src_dev && dst_dev ? true : dst_dev ? dense(src) : dense(dst))) {
        last_path = count == 1 ? GPUMEM_COPY_PATH_DMA : GPUMEM_COPY_PATH_DMA_LOOP;
        return finish(&j, run_plan(&j, &plan, side_of(src), side_of(dst)));
    }
    gpumem_copy_path path = GPUMEM_COPY_PATH_DEVICE_PACK;
    if (src_dev && dst_dev)
        st = d2d_packed(&j, dst, src);
    else if (dst_dev)
        st = h2d_packed(&j, dst, src, k, &path);
    else
        st = d2h_packed(&j, dst, src, k, &path);
    last_path = path;
    return finish(&j, st);
}
