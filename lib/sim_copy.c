/*
 * sim_copy.c - the simulator's copies (1-D, between devices, 2-D, 3-D) and
 * memsets: each resolves its bytes in the allocation registry and queues
 * one op on its stream (sim_stream.c), staged or synchronous where the
 * driver's are (sim.h says what is simulated, sim_impl.h how the state is
 * shared).
 */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_abi.h"
#include "driver.h"
#include "sim_impl.h"

/* -------------------------------------------------------------- copies -- */

/* One side of a copy: memory type, first byte, bytes per row and per slice. */
typedef struct region {
    int type;
    uint64_t addr;
    size_t pitch, slice;
} region;

/* Bytes to resolve for one side of a copy, w bytes x h rows x d slices, and
 * where they are: the allocation holding them, NULL for pageable memory. */
typedef struct span {
    unsigned char *p;
    sim_alloc *rec;
} span;

static int region_make(int type, const void *host, gm_cu_deviceptr dev, size_t x, size_t y, size_t z,
                       size_t pitch, size_t height, size_t width, region *r)
{
    uint64_t base;
    switch (type) {
    case GM_CU_MEMORYTYPE_HOST: base = (uintptr_t)host; break;
    case GM_CU_MEMORYTYPE_DEVICE:
    case GM_CU_MEMORYTYPE_UNIFIED: base = dev; break;
    default: return GM_CUDA_ERROR_INVALID_VALUE; /* CUDA arrays are not simulated */
    }
    size_t slice, off, row;
    if (pitch < width || __builtin_mul_overflow(pitch, height, &slice) ||
        __builtin_mul_overflow(z, slice, &off) || __builtin_mul_overflow(y, pitch, &row) ||
        __builtin_add_overflow(off, row, &off) || __builtin_add_overflow(off, x, &off) ||
        off > UINT64_MAX - base)
        return GM_CUDA_ERROR_INVALID_VALUE;
    *r = (region){.type = type, .addr = base + off, .pitch = pitch, .slice = slice};
    return CU_OK;
}

/* Resolves the bytes of r that w x h x d touches: device bytes must lie in
 * one live allocation; DEVICE memory may also be mapped host memory. */
static int span_get(const region *r, size_t w, size_t h, size_t d, span *out)
{
    size_t a, b, len;
    if (__builtin_mul_overflow(d - 1, r->slice, &a) || __builtin_mul_overflow(h - 1, r->pitch, &b) ||
        __builtin_add_overflow(a, b, &len) || __builtin_add_overflow(len, w, &len) ||
        r->addr == 0 || len > UINT64_MAX - r->addr)
        return GM_CUDA_ERROR_INVALID_VALUE;
    sim_alloc *rec = gm_sim_reg_find_range(r->addr, len);
    if (gm_sim_in_device_window(r->addr)) {
        if (rec == NULL || r->type == GM_CU_MEMORYTYPE_HOST)
            return GM_CUDA_ERROR_INVALID_VALUE;
        out->p = rec->mem + (r->addr - rec->base);
    } else {
        /* like the driver: host bytes that start in page-locked memory
         * (an allocation, a registration) must lie in it */
        if (rec == NULL && (r->type == GM_CU_MEMORYTYPE_DEVICE || gm_sim_reg_find(r->addr) != NULL))
            return GM_CUDA_ERROR_INVALID_VALUE;
        out->p = (unsigned char *)(uintptr_t)r->addr;
    }
    out->rec = rec;
    return CU_OK;
}

static int copy_locked(gm_dctx *ctx, gm_dstream *stream, int async, const region *src,
                       const region *dst, size_t w, size_t h, size_t d)
{
    gm_dstream *s;
    int rc = gm_sim_stream_get(ctx, stream, &s);
    if (rc != CU_OK || w == 0 || h == 0 || d == 0)
        return rc;
    span sp, dp;
    if ((rc = span_get(src, w, h, d, &sp)) != CU_OK || (rc = span_get(dst, w, h, d, &dp)) != CU_OK)
        return rc;
    sim_op *op = calloc(1, sizeof *op);
    if (op == NULL)
        return GM_CUDA_ERROR_OUT_OF_MEMORY;
    op->kind = OP_COPY;
    op->u.copy.dst = dp.p;
    op->u.copy.src = sp.p;
    op->u.copy.w = w;
    op->u.copy.h = h;
    op->u.copy.d = d;
    op->u.copy.dpitch = dst->pitch;
    op->u.copy.dslice = dst->slice;
    op->u.copy.spitch = src->pitch;
    op->u.copy.sslice = src->slice;
    /* like the driver: into pageable memory is synchronous, from it is staged */
    bool wait = async != 1 || dp.rec == NULL; /* GM_DRV_SYNC_DONE (2) is synchronous */
    if (!wait && sp.rec == NULL) {
        size_t total;
        unsigned char *buf;
        if (__builtin_mul_overflow(w, h, &total) || __builtin_mul_overflow(total, d, &total) ||
            (buf = malloc(total)) == NULL) {
            free(op);
            return GM_CUDA_ERROR_OUT_OF_MEMORY;
        }
        for (size_t z = 0; z < d; z++)
            for (size_t y = 0; y < h; y++)
                memcpy(buf + (z * h + y) * w, sp.p + z * src->slice + y * src->pitch, w);
        op->staging = buf;
        op->u.copy.src = buf;
        op->u.copy.spitch = w;
        op->u.copy.sslice = w * h;
    } else {
        gm_sim_op_hold(op, 0, sp.rec);
    }
    gm_sim_op_hold(op, 1, dp.rec);
    return gm_sim_submit(s, op, wait);
}

int gm_sim_memcpy(gm_dctx *ctx, gm_cu_deviceptr dst, gm_cu_deviceptr src, size_t bytes,
                      gm_dstream *stream, int async)
{
    region s = {GM_CU_MEMORYTYPE_UNIFIED, src, bytes, bytes};
    region d = {GM_CU_MEMORYTYPE_UNIFIED, dst, bytes, bytes};
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? copy_locked(ctx, stream, async, &s, &d, bytes, 1, 1)
                         : GM_CUDA_ERROR_INVALID_CONTEXT;
    unlock();
    return rc;
}

/* cuMemcpyPeer: both ends must be device allocations of their contexts'
 * devices; issued in ctx (the stream's).  Peer access need not be enabled
 * (the driver stages such copies). */
int gm_sim_memcpy_peer(gm_dctx *ctx, gm_cu_deviceptr dst, gm_dctx *dst_ctx, gm_cu_deviceptr src, gm_dctx *src_ctx,
                       size_t bytes, gm_dstream *stream, int async)
{
    region s = {GM_CU_MEMORYTYPE_DEVICE, src, bytes, bytes};
    region d = {GM_CU_MEMORYTYPE_DEVICE, dst, bytes, bytes};
    lock();
    int rc = gm_sim_ctx_ok(ctx) && gm_sim_ctx_ok(dst_ctx) && gm_sim_ctx_ok(src_ctx) ? CU_OK
                                                                                     : GM_CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CU_OK && bytes > 0) {
        sim_alloc *sr = gm_sim_reg_find_range(src, bytes), *dr = gm_sim_reg_find_range(dst, bytes);
        if (sr == NULL || dr == NULL || sr->kind != GM_SIM_MEM_DEVICE || dr->kind != GM_SIM_MEM_DEVICE ||
            sr->dev != src_ctx->ordinal || dr->dev != dst_ctx->ordinal)
            rc = GM_CUDA_ERROR_INVALID_VALUE;
    }
    if (rc == CU_OK)
        rc = copy_locked(ctx, stream, async, &s, &d, bytes, 1, 1);
    unlock();
    return rc;
}

int gm_sim_memcpy_2d(gm_dctx *ctx, const gm_cu_memcpy2d *c, gm_dstream *stream, int async)
{
    if (c == NULL)
        return GM_CUDA_ERROR_INVALID_VALUE;
    region s, d;
    int rc = region_make(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcXInBytes, c->srcY, 0,
                         c->srcPitch, 1, c->WidthInBytes, &s);
    if (rc == CU_OK)
        rc = region_make(c->dstMemoryType, c->dstHost, c->dstDevice, c->dstXInBytes, c->dstY, 0,
                         c->dstPitch, 1, c->WidthInBytes, &d);
    if (rc != CU_OK)
        return rc;
    lock();
    rc = gm_sim_ctx_ok(ctx) ? copy_locked(ctx, stream, async, &s, &d, c->WidthInBytes, c->Height, 1)
                     : GM_CUDA_ERROR_INVALID_CONTEXT;
    unlock();
    return rc;
}

int gm_sim_memcpy_3d(gm_dctx *ctx, const gm_cu_memcpy3d *c, gm_dstream *stream, int async)
{
    if (c == NULL || c->srcLOD != 0 || c->dstLOD != 0)
        return GM_CUDA_ERROR_INVALID_VALUE;
    /* slices must not overlap */
    if (c->Depth > 1 && (c->srcHeight < c->Height || c->dstHeight < c->Height))
        return GM_CUDA_ERROR_INVALID_VALUE;
    region s, d;
    int rc = region_make(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcXInBytes, c->srcY, c->srcZ,
                         c->srcPitch, c->srcHeight, c->WidthInBytes, &s);
    if (rc == CU_OK)
        rc = region_make(c->dstMemoryType, c->dstHost, c->dstDevice, c->dstXInBytes, c->dstY, c->dstZ,
                         c->dstPitch, c->dstHeight, c->WidthInBytes, &d);
    if (rc != CU_OK)
        return rc;
    lock();
    rc = gm_sim_ctx_ok(ctx) ? copy_locked(ctx, stream, async, &s, &d, c->WidthInBytes, c->Height, c->Depth)
                     : GM_CUDA_ERROR_INVALID_CONTEXT;
    unlock();
    return rc;
}

static int memset_locked(gm_dctx *ctx, gm_cu_deviceptr dst, unsigned value, unsigned elem,
                         size_t count, gm_dstream *stream, int async)
{
    gm_dstream *s;
    int rc = gm_sim_stream_get(ctx, stream, &s);
    if (rc != CU_OK)
        return rc;
    if ((elem != 1 && elem != 2 && elem != 4) || dst % elem != 0)
        return GM_CUDA_ERROR_INVALID_VALUE;
    if (count == 0)
        return CU_OK;
    size_t len;
    span sp;
    region r = {GM_CU_MEMORYTYPE_DEVICE, dst, 0, 0};
    if (__builtin_mul_overflow(count, (size_t)elem, &len))
        return GM_CUDA_ERROR_INVALID_VALUE;
    if ((rc = span_get(&r, len, 1, 1, &sp)) != CU_OK)
        return rc;
    sim_op *op = calloc(1, sizeof *op);
    if (op == NULL)
        return GM_CUDA_ERROR_OUT_OF_MEMORY;
    op->kind = OP_SET;
    op->u.set.dst = sp.p;
    op->u.set.value = value;
    op->u.set.elem = elem;
    op->u.set.count = count;
    gm_sim_op_hold(op, 0, sp.rec);
    return gm_sim_submit(s, op, !async);
}

int gm_sim_memset(gm_dctx *ctx, gm_cu_deviceptr dst, unsigned value, unsigned elem_size,
                      size_t count, gm_dstream *stream, int async)
{
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? memset_locked(ctx, dst, value, elem_size, count, stream, async)
                         : GM_CUDA_ERROR_INVALID_CONTEXT;
    unlock();
    return rc;
}
