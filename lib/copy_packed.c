/*
 * copy_packed.c - the copy engine's executor of a packed run
 * (GM_HOW_PACKED, copy_decide.h): a strided copy's steps fused through one
 * dense run, packed and unpacked by the pack kernels, the CPU or the
 * staging engine's threads, whole or chunk by chunk through device scratch
 * (two buffers taking turns on two streams when the decision overlaps),
 * its transfers staged as one transfer cut into the chunks' segments when
 * the host side is pageable.  The job, what it holds and its other
 * executors are copy_engine.c's (copy_engine_impl.h).
 */
#include "config.h"

#include <stdint.h>

#include "copy_decide.h"
#include "copy_engine_impl.h"
#include "copy_workers.h"
#include "copyplan.h"
#include "error.h"
#include "gpumem/dtype.h"
#include "pack_calls.h"
#include "staging.h"

/* ---- layouts --------------------------------------------------------------------------------------- */

/* The offset of the lowest byte of a layout from its element 0 (<= 0). */
static int64_t low_of(int ndim, const int64_t *shape, const int64_t *strides, size_t itemsize)
{
    int64_t lo = 0, hi = 0;
    gm_layout_extent(ndim, shape, strides, itemsize, &lo, &hi);
    return lo;
}

static uint64_t nbytes_of(const gpumem_array *a)
{
    return (uint64_t)gm_array_size(a) * a->itemsize;
}

static int64_t dot(int ndim, const int64_t *a, const int64_t *b)
{
    int64_t s = 0;
    for (int i = 0; i < ndim; i++)
        s += a[i] * b[i];
    return s;
}

/* The run's host buffer of bytes (the decision's host_run): a pageable host
 * array, not the staging engine's pinned slots. */
static gpumem_status run_buffer(gm_copy_job *j, uint64_t bytes, char **addr)
{
    int64_t n = (int64_t)bytes, one = 1;
    gpumem_status st = gm_array_new_host(j->what, 1, &n, &one, gpumem_dtype_builtin(GPUMEM_UINT8), &j->run_buf);
    if (st == GPUMEM_OK)
        *addr = j->run_buf->host;
    return st;
}

/* ---- packing ----------------------------------------------------------------------------------------- */

/* A pack (unpack: false) or unpack (true) between a strided side with
 * strides ss, element 0 at saddr, and a packed side with strides ps,
 * element 0 at paddr, of shape (ndim, shape), on the device. */
gpumem_status gm_copy_device_pack(gm_copy_job *j, int ndim, const int64_t *shape, size_t itemsize, const int64_t *ss,
                                  uint64_t saddr, const int64_t *ps, uint64_t paddr, bool unpack)
{
    gm_pack_plan plan;
    gpumem_status st = gm_pack_plan_make(ndim, shape, ss, ps, itemsize, saddr, paddr, unpack, &plan);
    if (st != GPUMEM_OK)
        return gm_error_prefix(st, j->what);
    if (plan.bytes == 0)
        return GPUMEM_OK;
    j->pending = true;
    return gm_pack_launch(j->kernels, &plan, saddr, paddr, j->stream, j->what);
}

/* A CPU pack or unpack of array a between host addresses, on the worker
 * pool (copy_workers.h). */
static gpumem_status cpu_pack(gm_copy_job *j, const gpumem_array *a, const int64_t *ss, const char *sbase,
                              const int64_t *ps, const char *pbase, bool unpack)
{
    gm_pack_plan plan;
    uint64_t saddr = (uint64_t)(uintptr_t)sbase, paddr = (uint64_t)(uintptr_t)pbase;
    gpumem_status st = gm_pack_plan_make(a->ndim, a->shape, ss, ps, a->itemsize, saddr, paddr, unpack, &plan);
    if (st != GPUMEM_OK)
        return gm_error_prefix(st, j->what);
    if (plan.bytes > 0) {
        plan.params.strided += saddr;
        plan.params.packed += paddr;
        gm_copy_cpu_pack(j->ctx, &plan.params, unpack, plan.bytes);
    }
    return GPUMEM_OK;
}

/* A transfer between a strided host side (a view of shape ext with
 * strides hs, element 0 at host) and a packed run on the device (strides
 * ps, element 0 at dev), on ds, through the staging engine: its threads
 * pack (dir 1) or unpack (-1) each chunk straight into or out of their
 * pinned slots, in the same pass as the transfer. */
static gpumem_status staged_pack(gm_copy_job *j, int ndim, const int64_t *ext, size_t itemsize, const int64_t *hs,
                                 char *host, const int64_t *ps, uint64_t dev, int dir, gm_dstream *ds, int async,
                                 unsigned threads)
{
    gm_pack_plan plan;
    uint64_t haddr = (uint64_t)(uintptr_t)host;
    gpumem_status st = gm_pack_plan_make(ndim, ext, hs, ps, itemsize, haddr, dev, dir < 0, &plan);
    if (st != GPUMEM_OK)
        return gm_error_prefix(st, j->what);
    if (plan.bytes == 0)
        return GPUMEM_OK;
    plan.params.strided += haddr;
    gm_stage_op op = {.dir = dir, .dev = dev + plan.params.packed, .pack = &plan.params, .bytes = plan.bytes,
                      .threads = threads};
    return gm_staging_run(j->stage, &op, ds, async, j->what);
}

/* ---- the executors ---------------------------------------------------------------------------------- */

static gpumem_status wait_event(gm_copy_job *j, gm_dstream *ds, int ev)
{
    return gm_drv_check(GM_DRV(stream_wait_event, j->ctx->dctx, ds, j->scratch->ev[ev]), GM_OP_stream_wait_event,
                        j->what);
}

static gpumem_status record(gm_copy_job *j, gm_dstream *ds, int ev)
{
    return gm_drv_check(GM_DRV(event_record, j->ctx->dctx, j->scratch->ev[ev], ds), GM_OP_event_record, j->what);
}

/* The chunks of a packed run through device scratch.  rs: the run's
 * strides, rlo: its lowest byte's offset from its element 0; host: the
 * run's lowest byte in host memory (the dense host side or the staging
 * buffer), NULL device to device.  Kernels run on the copy's stream;
 * transfers too, or, when overlapping, on the scratch's side stream, the
 * two taking turns on the two buffers through events. */
static gpumem_status run_chunks(gm_copy_job *j, const gm_copy_decision *d, gpumem_array *dst,
                                const gpumem_array *src, const int64_t *rs, int64_t rlo, char *host)
{
    const int nd = dst->ndim;
    const int64_t *shape = dst->shape;
    const size_t isz = dst->itemsize;
    gm_scratch *s = j->scratch;
    const uint64_t buf[2] = {s->addr, s->addr + d->chunk_bytes};
    gm_dstream *S = j->ds, *X = d->overlap ? s->side : j->ds;
    const int xasync = d->overlap ? 1 : j->async;
    const bool down = d->src_op == GM_OP_KERNEL; /* the kernels fill the buffers (D2D, D2H) */
    gpumem_status st = GPUMEM_OK;
    if (d->overlap) {
        j->side_pending = true;
        if ((st = record(j, S, GM_SCRATCH_START)) == GPUMEM_OK)
            st = wait_event(j, X, GM_SCRATCH_START);
    }
    int last = 0;
    for (uint64_t c = 0; st == GPUMEM_OK && c < d->nchunks; c++) {
        const int h = (int)(c % (uint64_t)d->nbufs);
        int64_t start[GM_MAX_NDIM], ext[GM_MAX_NDIM];
        uint64_t off = 0, n = 0;
        gm_copy_chunk(d, nd, shape, isz, rs, c, start, ext, &off, &n);
        /* element 0 of the chunk on each side; in the buffer, the run's layout from its lowest byte */
        uint64_t saddr = src->dev + (uint64_t)dot(nd, start, src->strides);
        uint64_t daddr = dst->dev + (uint64_t)dot(nd, start, dst->strides);
        uint64_t baddr = buf[h] + (uint64_t)(dot(nd, start, rs) - rlo) - off;
        last = h;
        if (down) {
            if (d->overlap && c >= 2)
                st = wait_event(j, S, GM_SCRATCH_DRAIN + h);
            if (st == GPUMEM_OK)
                st = gm_copy_device_pack(j, nd, ext, isz, src->strides, saddr, rs, baddr, false);
            if (st != GPUMEM_OK)
                break;
            if (d->dst_op == GM_OP_KERNEL) {
                st = gm_copy_device_pack(j, nd, ext, isz, dst->strides, daddr, rs, baddr, true);
                continue;
            }
            if (d->overlap && (st = record(j, S, GM_SCRATCH_FILL + h)) == GPUMEM_OK)
                st = wait_event(j, X, GM_SCRATCH_FILL + h);
            if (st == GPUMEM_OK && d->dst_op == GM_OP_CPU) /* unpacked from the slots into the host view */
                st = staged_pack(j, nd, ext, isz, dst->strides, dst->host + dot(nd, start, dst->strides), rs, baddr,
                                 -1, X, xasync, d->cpu_threads);
            else if (st == GPUMEM_OK)
                st = gm_copy_job_transfer(j, X, (gm_cu_deviceptr)(uintptr_t)(host + off), buf[h], n, -1, xasync);
            if (st == GPUMEM_OK && d->overlap)
                st = record(j, X, GM_SCRATCH_DRAIN + h);
        } else {
            if (d->overlap && c >= 2)
                st = wait_event(j, X, GM_SCRATCH_DRAIN + h);
            if (st == GPUMEM_OK && d->src_op == GM_OP_CPU) /* packed from the host view into the slots */
                st = staged_pack(j, nd, ext, isz, src->strides, src->host + dot(nd, start, src->strides), rs, baddr, 1,
                                 X, xasync, d->cpu_threads);
            else if (st == GPUMEM_OK)
                st = gm_copy_job_transfer(j, X, buf[h], (gm_cu_deviceptr)(uintptr_t)(host + off), n, 1, xasync);
            if (st == GPUMEM_OK && d->overlap && (st = record(j, X, GM_SCRATCH_FILL + h)) == GPUMEM_OK)
                st = wait_event(j, S, GM_SCRATCH_FILL + h);
            if (st == GPUMEM_OK)
                st = gm_copy_device_pack(j, nd, ext, isz, dst->strides, daddr, rs, baddr, true);
            if (st == GPUMEM_OK && d->overlap)
                st = record(j, S, GM_SCRATCH_DRAIN + h);
        }
        j->pending |= xasync != 0;
    }
    /* the copy's stream waits for the side stream's last transfer (uploads:
     * it waited for every one already) */
    if (st == GPUMEM_OK && d->overlap && down)
        st = wait_event(j, S, GM_SCRATCH_DRAIN + last);
    if (st == GPUMEM_OK)
        j->side_pending = false;
    return st;
}

/* A packed run through device scratch whose transfers are staged (a
 * pageable or strided host side): one staged transfer of the whole run,
 * cut into segments that are the scratch chunks (staging.h).  The caller
 * opens chunk k by packing it into its buffer (a download) or by making
 * the transfers wait until the buffer is free (an upload), and closes it
 * once the staging engine has queued all its transfers: then the buffer
 * may be refilled (a download) or unpacked into the destination (an
 * upload).  With two streams the kernels run on the copy's stream and the
 * transfers on the scratch's side stream, ordered by the buffers' events;
 * with one, stream order does it. */
typedef struct staged_run {
    gm_copy_job *j;
    const gm_copy_decision *d;
    gpumem_array *dst;
    const gpumem_array *src;
    const int64_t *rs;
    int64_t rlo;
    uint64_t buf[2];
    gm_dstream *S, *X;
    bool down, two;
    int last;       /* the buffer of the last segment opened */
    int64_t start[GM_MAX_NDIM], ext[GM_MAX_NDIM]; /* the geometry of the segment opened last */
} staged_run;

/* Segment k's geometry into g (start, ext) and its bytes of the run. */
static void staged_chunk(staged_run *g, uint64_t k, uint64_t *off, uint64_t *n)
{
    gm_copy_chunk(g->d, g->dst->ndim, g->dst->shape, g->dst->itemsize, g->rs, k, g->start, g->ext, off, n);
}

/* Element 0 of segment k in buffer h (its geometry in g). */
static uint64_t staged_baddr(staged_run *g, int h, uint64_t off)
{
    return g->buf[h] + (uint64_t)(dot(g->dst->ndim, g->start, g->rs) - g->rlo) - off;
}

static gpumem_status staged_open(void *arg, uint64_t k, uint64_t *offset, uint64_t *bytes, gm_cu_deviceptr *dev)
{
    staged_run *g = arg;
    gm_copy_job *j = g->j;
    const int h = (int)(k % (uint64_t)g->d->nbufs), nd = g->dst->ndim;
    gpumem_status st = GPUMEM_OK;
    staged_chunk(g, k, offset, bytes);
    g->last = h;
    if (g->down) { /* pack the chunk into its buffer, once its last transfers are done */
        if (g->two && k >= 2)
            st = wait_event(j, g->S, GM_SCRATCH_DRAIN + h);
        uint64_t saddr = g->src->dev + (uint64_t)dot(nd, g->start, g->src->strides);
        if (st == GPUMEM_OK)
            st = gm_copy_device_pack(j, nd, g->ext, g->dst->itemsize, g->src->strides, saddr, g->rs,
                                     staged_baddr(g, h, *offset), false);
        if (st == GPUMEM_OK && g->two && (st = record(j, g->S, GM_SCRATCH_FILL + h)) == GPUMEM_OK)
            st = wait_event(j, g->X, GM_SCRATCH_FILL + h);
    } else if (g->two && k >= 2) { /* the transfers into the buffer wait until its last unpack is done */
        st = wait_event(j, g->X, GM_SCRATCH_DRAIN + h);
    }
    *dev = g->buf[h];
    return st;
}

static gpumem_status staged_close(void *arg, uint64_t k)
{
    staged_run *g = arg;
    gm_copy_job *j = g->j;
    const int h = (int)(k % (uint64_t)g->d->nbufs), nd = g->dst->ndim;
    if (g->down) /* the buffer's transfers are queued: it may be packed again after them */
        return g->two ? record(j, g->X, GM_SCRATCH_DRAIN + h) : GPUMEM_OK;
    gpumem_status st = GPUMEM_OK;
    uint64_t off = 0, n = 0;
    staged_chunk(g, k, &off, &n);
    if (g->two && (st = record(j, g->X, GM_SCRATCH_FILL + h)) == GPUMEM_OK)
        st = wait_event(j, g->S, GM_SCRATCH_FILL + h);
    uint64_t daddr = g->dst->dev + (uint64_t)dot(nd, g->start, g->dst->strides);
    if (st == GPUMEM_OK)
        st = gm_copy_device_pack(j, nd, g->ext, g->dst->itemsize, g->dst->strides, daddr, g->rs,
                                 staged_baddr(g, h, off), true);
    if (st == GPUMEM_OK && g->two)
        st = record(j, g->S, GM_SCRATCH_DRAIN + h);
    return st;
}

/* Runs the chunks of d through one staged transfer (see above); *ran
 * false (and nothing queued) when it cannot: a strided host side whose
 * pack unit does not divide every chunk takes run_chunks' way. */
static gpumem_status run_staged(gm_copy_job *j, const gm_copy_decision *d, gpumem_array *dst,
                                const gpumem_array *src, const int64_t *rs, int64_t rlo, char *host, bool *ran)
{
    const int nd = dst->ndim;
    const size_t isz = dst->itemsize;
    const bool down = d->src_op == GM_OP_KERNEL;
    gm_scratch *s = j->scratch;
    staged_run g = {.j = j, .d = d, .dst = dst, .src = src, .rs = rs, .rlo = rlo,
                    .buf = {s->addr, s->addr + d->chunk_bytes}, .S = j->ds, .X = d->overlap ? s->side : j->ds,
                    .down = down, .two = d->overlap};
    gm_stage_op op = {.dir = down ? -1 : 1, .host = host, .threads = d->cpu_threads};
    gm_pack_plan plan;
    const gpumem_array *h = down ? dst : src; /* the host side */
    bool cpu = (down ? d->dst_op : d->src_op) == GM_OP_CPU;
    *ran = false;
    if (cpu) { /* the whole host view against the run: packed byte o is run byte o from its lowest */
        uint64_t haddr = (uint64_t)(uintptr_t)h->host;
        gpumem_status st = gm_pack_plan_make(nd, dst->shape, h->strides, rs, isz, haddr, 0, down, &plan);
        if (st != GPUMEM_OK)
            return gm_error_prefix(st, j->what);
        if (plan.params.packed != (unsigned long long)rlo)
            return GPUMEM_OK;
        for (uint64_t k = 0; k < d->nchunks; k++) {
            int64_t start[GM_MAX_NDIM], ext[GM_MAX_NDIM];
            uint64_t off = 0, n = 0;
            gm_copy_chunk(d, nd, dst->shape, isz, rs, k, start, ext, &off, &n);
            if ((off | n) % (uint64_t)plan.params.unit != 0)
                return GPUMEM_OK;
        }
        plan.params.strided += haddr;
        op.pack = &plan.params;
        op.bytes = plan.bytes;
        op.host = NULL;
    } else {
        op.bytes = nbytes_of(dst);
    }
    *ran = true;
    gpumem_status st = GPUMEM_OK;
    if (g.two) { /* the side stream follows what the copy's stream holds before the copy */
        j->side_pending = true;
        if ((st = record(j, g.S, GM_SCRATCH_START)) == GPUMEM_OK)
            st = wait_event(j, g.X, GM_SCRATCH_START);
    }
    gm_stage_segs segs = {.count = d->nchunks, .ahead = (unsigned)d->nbufs, .open = staged_open,
                          .close = staged_close, .arg = &g};
    op.segs = &segs;
    if (st == GPUMEM_OK)
        st = gm_staging_run(j->stage, &op, g.X, g.two ? 1 : j->async, j->what);
    j->pending |= g.two || j->async;
    /* the copy's stream waits for the side stream's last transfers (uploads:
     * its kernels waited for every one already) */
    if (st == GPUMEM_OK && g.two && down)
        st = wait_event(j, g.S, GM_SCRATCH_DRAIN + g.last);
    if (st == GPUMEM_OK)
        j->side_pending = false;
    return st;
}

/* Through one packed run (GM_HOW_PACKED). */
gpumem_status gm_copy_run_packed(gm_copy_job *j, const gm_copy_decision *d, gpumem_array *dst,
                                 const gpumem_array *src)
{
    const int nd = dst->ndim;
    const int64_t *shape = dst->shape;
    const size_t isz = dst->itemsize;
    const uint64_t bytes = nbytes_of(dst);
    const bool ddev = gm_array_on_device(dst);
    gpumem_status st = GPUMEM_OK; /* the kernels, scratch and staging engine are held (acquire) */

    int64_t rs[GM_MAX_NDIM];
    gm_copy_run_strides(d, nd, shape, isz, src->strides, dst->strides, rs);
    const int64_t rlo = low_of(nd, shape, rs, isz);
    char *host = NULL; /* the run's lowest byte in host memory */
    if (d->host_run)
        st = run_buffer(j, bytes, &host);
    else if (d->src_op == GM_OP_DIRECT && !gm_array_on_device(src))
        host = src->host + low_of(nd, shape, src->strides, isz);
    else if (d->dst_op == GM_OP_DIRECT && !ddev)
        host = dst->host + low_of(nd, shape, dst->strides, isz);
    if (st != GPUMEM_OK)
        return st;

    /* without the kernels or scratch: the CPU packs the host source into the buffer */
    if (d->host_run && d->src_op == GM_OP_CPU &&
        (st = cpu_pack(j, src, src->strides, src->host, rs, host - rlo, false)) != GPUMEM_OK)
        return st;
    /* the run crosses */
    gm_copy_addr hrun = {GM_CU_MEMORYTYPE_HOST, host != NULL ? host - rlo : NULL, 0};
    bool ran = false;
    if (d->nchunks > 0 && j->stage != NULL)
        st = run_staged(j, d, dst, src, rs, rlo, host, &ran);
    if (ran || st != GPUMEM_OK) {
        /* done (or failed) */
    } else if (d->nchunks > 0)
        st = run_chunks(j, d, dst, src, rs, rlo, host);
    else if (d->src_op == GM_OP_RECT)
        st = gm_copy_job_rect(j, dst, src->strides, gm_copy_addr_of(src), rs, hrun);
    else if (d->dst_op == GM_OP_RECT)
        st = gm_copy_job_rect(j, dst, rs, hrun, dst->strides, gm_copy_addr_of(dst));
    else if (ddev) /* the strided host source packed into the slots, into the dense device destination */
        st = staged_pack(j, nd, shape, isz, src->strides, src->host, dst->strides, dst->dev, 1, j->ds, j->async,
                         d->cpu_threads);
    else /* the dense device source unpacked from the slots into the strided host destination */
        st = staged_pack(j, nd, shape, isz, dst->strides, dst->host, src->strides, src->dev, -1, j->ds, j->async,
                         d->cpu_threads);
    if (st == GPUMEM_OK && d->nchunks == 0)
        j->pending |= j->async != 0;
    /* without the kernels or scratch: the CPU unpacks the buffer into the host destination, once it is there */
    if (st == GPUMEM_OK && d->host_run && d->dst_op == GM_OP_CPU) {
        if (j->pending)
            st = gm_drv_check(GM_DRV(stream_synchronize, j->ctx->dctx, j->ds), GM_OP_stream_synchronize, j->what);
        if (st == GPUMEM_OK) {
            j->pending = false; /* all of it is done */
            st = cpu_pack(j, dst, dst->strides, dst->host, rs, host - rlo, true);
        }
    }
    return st;
}

