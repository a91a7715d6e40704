/*
 * copy_peer.c - copies between device arrays of two devices, and the peer
 * settings of gpumem/peer.h.
 *
 * Every such copy moves one dense run of bytes (the crossing layout,
 * copy_decide.c) from the source device to the destination device: a
 * strided source is packed on its own device into scratch, and a strided
 * destination is unpacked on its own device from scratch, chunk by chunk
 * through each device's cached scratch as decided; without the kernels or
 * that scratch, through temporaries as large as the copy that the engine
 * fills and empties (gm_copy_run, in each side's context).  The run crosses
 * by one cuMemcpyPeer when peer access is on for the pair (enabled once,
 * both ways, and remembered), else through two pinned host buffers in
 * chunks (download of one chunk overlapping the upload of the previous).
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "context.h"
#include "copy_engine.h"
#include "copy_pack.h"
#include "copy_peer.h"
#include "copy_tuning.h"
#include "error.h"
#include "gpumem/dtype.h"
#include "gpumem/peer.h"
#include "layout.h"
#include "stream.h"

/* ---- settings ------------------------------------------------------------------------------------ */

/* Whether copies between devices may use peer access: the tuning's
 * (gpumem_peer_set_enabled's value, else GPUMEM_PEER's). */
static gpumem_status peer_setting(const char *what, int *enabled)
{
    gm_copy_tuning t;
    gm_copy_tuning_get(&t);
    if (t.bad & GM_TUNE_BAD_PEER)
        return gm_copy_tuning_error(GM_TUNE_BAD_PEER, what);
    *enabled = t.peer;
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_peer_set_enabled(int enabled)
{
    if (enabled != 0 && enabled != 1)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "gpumem_peer_set_enabled: 'enabled' is %d; it must be 0 or 1",
                        enabled);
    gm_copy_tuning_set_peer(enabled);
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_peer_enabled(int *enabled)
{
    GM_CHECK_NULL(enabled);
    return peer_setting("gpumem_peer_enabled", enabled);
}

static gpumem_status check_ordinal(const char *what, const char *arg, int device, int count)
{
    if (device < 0 || device >= count)
        return gm_error(GPUMEM_ERROR_INVALID_DEVICE, "%s: '%s' is %d, but the backend has %d device%s", what, arg,
                        device, count, count == 1 ? "" : "s");
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_peer_can_access(int device, int peer, int *can)
{
    static const char what[] = "gpumem_peer_can_access";
    GM_CHECK_NULL(can);
    int count = 0, c = 0;
    gpumem_status st = gm_driver_ready();
    if (st == GPUMEM_OK)
        st = gm_drv_check(GM_DRV(device_get_count, &count), GM_OP_device_get_count, what);
    if (st == GPUMEM_OK)
        st = check_ordinal(what, "device", device, count);
    if (st == GPUMEM_OK)
        st = check_ordinal(what, "peer", peer, count);
    if (st == GPUMEM_OK && device != peer)
        st = gm_drv_check(GM_DRV(device_can_access_peer, device, peer, &c), GM_OP_device_can_access_peer, what);
    if (st == GPUMEM_OK)
        *can = c != 0;
    return st;
}

/* ---- peer access, once per pair ------------------------------------------------------------------ */

/* pairs[a][b]: whether copies between devices a and b use peer access
 * (enabled both ways): 0 not known yet, 1 yes, 2 no.  Forgotten when a
 * context of either device ends (its primary context may end with it, and
 * with it the access). */
#define MAX_PAIRED 64
static pthread_mutex_t pairs_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned char pairs[MAX_PAIRED][MAX_PAIRED];

static gpumem_status forget_device(gpumem_context *ctx)
{
    if (ctx->device >= 0 && ctx->device < MAX_PAIRED) {
        pthread_mutex_lock(&pairs_lock);
        for (int i = 0; i < MAX_PAIRED; i++)
            pairs[ctx->device][i] = pairs[i][ctx->device] = 0;
        pthread_mutex_unlock(&pairs_lock);
    }
    return GPUMEM_OK;
}

const gm_context_hook gm_copy_peer_hook = {NULL, forget_device};

/* Lets a address b's memory: true when done (or already done), false when
 * the driver says the pair cannot. */
static gpumem_status enable_one(const char *what, gpumem_context *a, gpumem_context *b, bool *ok)
{
    int rc = GM_DRV(ctx_enable_peer_access, a->dctx, b->dctx);
    *ok = rc == GM_CUDA_SUCCESS || rc == GM_CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
    if (*ok || rc == GM_CUDA_ERROR_PEER_ACCESS_UNSUPPORTED || rc == GM_CUDA_ERROR_TOO_MANY_PEERS)
        return GPUMEM_OK;
    return gm_drv_check(rc, GM_OP_ctx_enable_peer_access, what);
}

/* Whether a copy between a's and b's devices goes through peer access:
 * the setting allows it and the devices can, with access enabled both ways. */
static gpumem_status peer_ready(const char *what, gpumem_context *a, gpumem_context *b, bool *ready)
{
    int enabled = 0;
    gpumem_status st = peer_setting(what, &enabled);
    *ready = false;
    if (st != GPUMEM_OK || !enabled)
        return st;
    bool cached = a->device < MAX_PAIRED && b->device < MAX_PAIRED;
    pthread_mutex_lock(&pairs_lock);
    unsigned char known = cached ? pairs[a->device][b->device] : 0;
    if (known == 0) {
        int ab = 0, ba = 0;
        bool ok1 = false, ok2 = false;
        st = gm_drv_check(GM_DRV(device_can_access_peer, a->device, b->device, &ab), GM_OP_device_can_access_peer,
                          what);
        if (st == GPUMEM_OK)
            st = gm_drv_check(GM_DRV(device_can_access_peer, b->device, a->device, &ba),
                              GM_OP_device_can_access_peer, what);
        if (st == GPUMEM_OK && ab && ba && (st = enable_one(what, a, b, &ok1)) == GPUMEM_OK && ok1)
            st = enable_one(what, b, a, &ok2);
        if (st == GPUMEM_OK) {
            known = ok1 && ok2 ? 1 : 2;
            if (cached)
                pairs[a->device][b->device] = pairs[b->device][a->device] = known;
        }
    }
    pthread_mutex_unlock(&pairs_lock);
    *ready = known == 1;
    return st;
}

/* ---- layouts ------------------------------------------------------------------------------------- */

bool gm_copy_is_cross_device(const gpumem_array *a, const gpumem_array *b)
{
    return gm_array_on_device(a) && gm_array_on_device(b) && a->ctx != NULL && b->ctx != NULL &&
           a->ctx->device != b->ctx->device;
}

/* The address of a's lowest byte. */
static gm_cu_deviceptr low_addr(const gpumem_array *a)
{
    int64_t lo = 0, hi = 0;
    gm_layout_extent(a->ndim, a->shape, a->strides, a->itemsize, &lo, &hi);
    return a->dev + (gm_cu_deviceptr)lo;
}

/* ---- the crossing -------------------------------------------------------------------------------- */

/* Pinned host memory for the staged path: two halves of up to
 * GM_PEER_STAGE_CHUNK bytes, for moves of at most `bytes` at a time. */
static gpumem_status staging_new(const char *what, gpumem_context *ctx, size_t bytes, gpumem_array **out)
{
    size_t total = bytes < 2 * (size_t)GM_PEER_STAGE_CHUNK ? bytes : 2 * (size_t)GM_PEER_STAGE_CHUNK;
    int64_t n = (int64_t)(total > 0 ? total : 1), one = 1;
    return gm_array_new_locked(what, GPUMEM_MEMORY_PINNED, ctx, 1, &n, &one, gpumem_dtype_builtin(GPUMEM_UINT8),
                               GM_CU_MEMHOSTALLOC_PORTABLE, out);
}

/* bytes from src (src_ctx's device) to dst (dst_ctx's device) through the
 * two halves of buf (staging_new); complete on return, nothing reads or
 * writes buf then. */
static gpumem_status staged_move(const char *what, gpumem_context *dst_ctx, gm_cu_deviceptr dst,
                                 gpumem_context *src_ctx, gm_cu_deviceptr src, size_t bytes, gpumem_array *buf)
{
    size_t total = (size_t)gm_array_size(buf), step = (total + 1) / 2;
    gm_cu_deviceptr half[2] = {(gm_cu_deviceptr)(uintptr_t)buf->host, (gm_cu_deviceptr)(uintptr_t)(buf->host + step)};
    /* chunk k: download into half[k % 2] on the source's legacy stream, then
     * upload from it on the destination's; the download of k + 1 runs while
     * the upload of k does. */
    size_t len0 = bytes < step ? bytes : step;
    gpumem_status st = gm_drv_check(GM_DRV(memcpy, src_ctx->dctx, half[0], src, len0, NULL, 1), GM_OP_memcpy, what);
    for (size_t off = 0, k = 0; st == GPUMEM_OK && off < bytes; k++) {
        size_t len = bytes - off < step ? bytes - off : step;
        st = gm_drv_check(GM_DRV(stream_synchronize, src_ctx->dctx, NULL), GM_OP_stream_synchronize, what);
        if (st == GPUMEM_OK) /* the upload of k - 1 read the other half: it may be written again */
            st = gm_drv_check(GM_DRV(stream_synchronize, dst_ctx->dctx, NULL), GM_OP_stream_synchronize, what);
        if (st == GPUMEM_OK)
            st = gm_drv_check(GM_DRV(memcpy, dst_ctx->dctx, dst + off, half[k % 2], len, NULL, 1), GM_OP_memcpy,
                              what);
        size_t next = off + len;
        if (st == GPUMEM_OK && next < bytes) {
            size_t nlen = bytes - next < step ? bytes - next : step;
            st = gm_drv_check(GM_DRV(memcpy, src_ctx->dctx, half[(k + 1) % 2], src + next, nlen, NULL, 1),
                              GM_OP_memcpy, what);
        }
        off = next;
    }
    /* nothing may still read or write the buffers when the call returns */
    gpumem_status s1 = gm_drv_check(GM_DRV(stream_synchronize, src_ctx->dctx, NULL), GM_OP_stream_synchronize, what);
    gpumem_status s2 = gm_drv_check(GM_DRV(stream_synchronize, dst_ctx->dctx, NULL), GM_OP_stream_synchronize, what);
    if (st == GPUMEM_OK)
        st = s1 != GPUMEM_OK ? s1 : s2;
    return st;
}

/* n bytes from src's device to dst's, by peer access or through buf. */
static gpumem_status move(const char *what, bool peer, gpumem_context *dst_ctx, gm_cu_deviceptr to,
                          gpumem_context *src_ctx, gm_cu_deviceptr from, size_t n, gpumem_array *buf)
{
    if (peer)
        return gm_drv_check(GM_DRV(memcpy_peer, dst_ctx->dctx, to, dst_ctx->dctx, from, src_ctx->dctx, n, NULL, 0),
                            GM_OP_memcpy_peer, what);
    return staged_move(what, dst_ctx, to, src_ctx, from, n, buf);
}

/* ---- in chunks, through scratch on each device --------------------------------------------------- */

typedef struct peer_side {
    gm_pack_kernels *k;
    gm_scratch *s;
} peer_side;

/* The kernels and a scratch buffer of bytes on ctx's device, its last use
 * done; *missing when either cannot be had. */
static gpumem_status side_get(const char *what, gpumem_context *ctx, size_t bytes, peer_side *p,
                              gm_copy_reason *missing)
{
    gpumem_status st = gm_pack_kernels_get(ctx, &p->k);
    if (st != GPUMEM_OK || p->k == NULL) {
        if (st == GPUMEM_OK)
            *missing = GM_REASON_NO_KERNELS;
        return st;
    }
    st = gm_pack_scratch_get(p->k, bytes, false, what, &p->s);
    if (st == GPUMEM_ERROR_OUT_OF_MEMORY) {
        *missing = GM_REASON_NO_SCRATCH;
        return GPUMEM_OK;
    }
    /* the legacy stream, where every use of it here runs, waits for its last use */
    if (st == GPUMEM_OK && p->s->used)
        st = gm_drv_check(GM_DRV(stream_wait_event, ctx->dctx, NULL, p->s->ev[GM_SCRATCH_DONE]),
                          GM_OP_stream_wait_event, what);
    return st;
}

static void side_put(peer_side *p)
{
    if (p->s != NULL)
        p->s->used = false; /* idle: every chunk completed, or the legacy stream was waited for */
    gm_pack_scratch_put(p->k, p->s);
    gm_pack_kernels_put(p->k);
}

/* A pack (unpack: false) of shape ext between a device side's strides ss at
 * saddr and the crossing layout at paddr, on the legacy stream; waited for. */
static gpumem_status side_pack(const char *what, gpumem_context *ctx, gm_pack_kernels *k, int ndim,
                               const int64_t *ext, size_t itemsize, const int64_t *ss, uint64_t saddr,
                               const int64_t *layout, uint64_t paddr, bool unpack)
{
    gm_pack_plan plan;
    gpumem_status st = gm_pack_plan_make(ndim, ext, ss, layout, itemsize, saddr, paddr, unpack, &plan);
    if (st != GPUMEM_OK)
        return gm_error_prefix(st, what);
    if (plan.bytes > 0 && (st = gm_pack_launch(k, &plan, saddr, paddr, NULL, what)) == GPUMEM_OK)
        st = gm_drv_check(GM_DRV(stream_synchronize, ctx->dctx, NULL), GM_OP_stream_synchronize, what);
    return st;
}

static int64_t dot(int n, const int64_t *a, const int64_t *b)
{
    int64_t s = 0;
    for (int i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

/* The run crosses chunk by chunk: packed on the source's device into its
 * scratch, moved into the destination device's scratch, unpacked there
 * (a side that has the crossing layout is its own end).  Each chunk
 * completes before the next. */
static gpumem_status peer_chunks(const char *what, gpumem_array *dst, const gpumem_array *src, bool peer,
                                 const gm_copy_decision *d, const int64_t *layout, gm_copy_reason *missing,
                                 gpumem_status *freed)
{
    const int nd = dst->ndim;
    const size_t isz = dst->itemsize;
    peer_side ps = {NULL, NULL}, pd = {NULL, NULL};
    gpumem_array *buf = NULL;
    gpumem_status st = GPUMEM_OK;
    if (d->peer_pack_src)
        st = side_get(what, src->ctx, (size_t)d->chunk_bytes, &ps, missing);
    if (st == GPUMEM_OK && *missing == GM_REASON_NONE && d->peer_unpack_dst)
        st = side_get(what, dst->ctx, (size_t)d->chunk_bytes, &pd, missing);
    if (st == GPUMEM_OK && *missing == GM_REASON_NONE && !peer)
        st = staging_new(what, src->ctx, (size_t)d->chunk_bytes, &buf);
    int64_t lo = 0, hi = 0;
    gm_layout_extent(nd, dst->shape, layout, isz, &lo, &hi);
    for (uint64_t c = 0; st == GPUMEM_OK && *missing == GM_REASON_NONE && c < d->nchunks; c++) {
        int64_t start[GM_MAX_NDIM], ext[GM_MAX_NDIM];
        uint64_t off = 0, n = 0;
        gm_copy_chunk(d, nd, dst->shape, isz, layout, c, start, ext, &off, &n);
        uint64_t in_buf = (uint64_t)(dot(nd, start, layout) - lo) - off; /* chunk element 0 in a scratch buffer */
        gm_cu_deviceptr from = low_addr(src) + off, to = low_addr(dst) + off;
        if (d->peer_pack_src) {
            from = ps.s->addr;
            st = side_pack(what, src->ctx, ps.k, nd, ext, isz, src->strides,
                           src->dev + (uint64_t)dot(nd, start, src->strides), layout, from + in_buf, false);
        }
        if (d->peer_unpack_dst)
            to = pd.s->addr;
        if (st == GPUMEM_OK)
            st = move(what, peer, dst->ctx, to, src->ctx, from, (size_t)n, buf);
        if (st == GPUMEM_OK && d->peer_unpack_dst)
            st = side_pack(what, dst->ctx, pd.k, nd, ext, isz, dst->strides,
                           dst->dev + (uint64_t)dot(nd, start, dst->strides), layout, to + in_buf, true);
    }
    if (st != GPUMEM_OK) { /* nothing may still use the scratch when it goes back */
        gm_error_hold();
        (void)GM_DRV(stream_synchronize, src->ctx->dctx, NULL);
        (void)GM_DRV(stream_synchronize, dst->ctx->dctx, NULL);
        gm_error_unhold();
    }
    if (ps.k != NULL)
        side_put(&ps);
    if (pd.k != NULL)
        side_put(&pd);
    if (st != GPUMEM_OK) {
        gm_error_hold();
        (void)gpumem_array_release(buf);
        gm_error_unhold();
    } else {
        *freed = gpumem_array_release(buf);
    }
    return st;
}

/* Scratch on a's device (its context) with strides s. */
static gpumem_status scratch(const char *what, const gpumem_array *a, const int64_t *s, gpumem_array **out)
{
    return gm_array_new_device(what, a->ctx, a->ndim, a->shape, s, a->dtype, NULL, out);
}

gpumem_status gm_copy_peer_ready(const char *what, const gpumem_array *dst, const gpumem_array *src, bool *ready)
{
    return peer_ready(what, dst->ctx, src->ctx, ready);
}

gpumem_status gm_copy_peer(const char *what, gpumem_array *dst, const gpumem_array *src, gpumem_stream *stream,
                           const gm_copy_decision *d, gm_copy_reason *missing)
{
    bool peer = d->path == GPUMEM_COPY_PATH_PEER;
    int64_t layout[GM_MAX_NDIM];
    gm_copy_crossing_layout(dst->ndim, dst->shape, dst->itemsize, src->strides, dst->strides, layout);
    bool src_direct = !d->peer_pack_src, dst_direct = !d->peer_unpack_dst;
    size_t bytes = (size_t)gm_array_size(dst) * dst->itemsize;
    gpumem_status st;
    if (peer && src_direct && dst_direct) /* one run both sides: queued on the stream */
        return gm_drv_check(GM_DRV(memcpy_peer, stream != NULL ? stream->ctx->dctx : dst->ctx->dctx, low_addr(dst),
                                   dst->ctx->dctx, low_addr(src), src->ctx->dctx, bytes, gm_stream_ds(stream),
                                   stream != NULL),
                            GM_OP_memcpy_peer, what);

    /* Every other path runs on the legacy streams of both devices: wait for
     * the caller's stream first, finish before returning. */
    if (stream != NULL && (st = gm_drv_check(GM_DRV(stream_synchronize, stream->ctx->dctx, gm_stream_ds(stream)),
                                             GM_OP_stream_synchronize, what)) != GPUMEM_OK)
        return st;
    gpumem_status freed = GPUMEM_OK;
    gpumem_array *s = NULL, *t = NULL, *buf = NULL;
    if (d->nchunks > 0) {
        st = peer_chunks(what, dst, src, peer, d, layout, missing, &freed);
    } else {
        /* without the kernels or scratch chunks: temporaries as large as the
         * copy, filled and emptied by the engine as it can */
        const gpumem_array *from = src;
        gpumem_array *to = dst;
        if (!src_direct && (st = scratch(what, src, layout, &s)) == GPUMEM_OK) {
            st = gm_copy_run(what, s, src, NULL, src->ctx);
            from = s;
        }
        if (st == GPUMEM_OK && !dst_direct && (st = scratch(what, dst, layout, &t)) == GPUMEM_OK)
            to = t;
        if (st == GPUMEM_OK && !peer)
            st = staging_new(what, from->ctx, bytes, &buf);
        if (st == GPUMEM_OK)
            st = move(what, peer, to->ctx, low_addr(to), from->ctx, low_addr(from), bytes, buf);
        if (st == GPUMEM_OK && t != NULL)
            st = gm_copy_run(what, dst, t, NULL, dst->ctx);
    }
    /* the destination holds the copy now: a failure to free the temporaries
     * (the chunks' pinned buffer, or the temporaries here) says so */
    if (st != GPUMEM_OK || *missing != GM_REASON_NONE) {
        gm_error_hold();
        (void)gpumem_array_release(s);
        (void)gpumem_array_release(t);
        (void)gpumem_array_release(buf);
        gm_error_unhold();
        return st;
    }
    char first[512] = "";
    if (freed != GPUMEM_OK)
        snprintf(first, sizeof first, "%s", gpumem_last_error());
    gpumem_array *temps[3] = {buf, s, t};
    for (int i = 0; i < 3; i++) {
        gpumem_status r = gpumem_array_release(temps[i]);
        if (freed == GPUMEM_OK && r != GPUMEM_OK) {
            freed = r;
            snprintf(first, sizeof first, "%s", gpumem_last_error());
        }
    }
    if (freed != GPUMEM_OK)
        return gm_error(freed, "%s: the copy completed, but freeing its temporary memory failed: %s", what, first);
    return GPUMEM_OK;
}
