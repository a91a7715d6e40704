/*
 * sim_stream.c - the simulator's streams and events: per-stream FIFOs run by
 * worker threads with the delay that makes a missing synchronization show,
 * the legacy default stream's ordering, copies (1-D, 2-D, 3-D) and memsets,
 * host functions, events and stream-ordered allocation (sim.h says what is
 * simulated, sim_impl.h how the state is shared).
 */
#include "config.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cuda_abi.h"
#include "driver.h"
#include "env.h"
#include "error.h"
#include "sim.h"
#include "sim_impl.h"

/* ------------------------------------------------------------- helpers -- */

static struct timespec now_mono(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t;
}

static struct timespec ts_add_us(struct timespec t, long us)
{
    t.tv_sec += us / 1000000;
    t.tv_nsec += (us % 1000000) * 1000;
    if (t.tv_nsec >= 1000000000) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000;
    }
    return t;
}

static bool ts_before(struct timespec a, struct timespec b)
{
    return a.tv_sec < b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec < b.tv_nsec);
}

static int cond_init_monotonic(pthread_cond_t *cv)
{
    pthread_condattr_t attr;
    if (pthread_condattr_init(&attr) != 0)
        return -1;
    int rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    if (rc == 0)
        rc = pthread_cond_init(cv, &attr);
    pthread_condattr_destroy(&attr);
    return rc;
}

/* ------------------------------------------------------------- streams -- */

static void stream_unref(gm_dstream *s)
{
    if (--s->refs == 0) {
        pthread_cond_destroy(&s->cv);
        free(s);
    }
}

static void event_unref(gm_devent *ev)
{
    if (--ev->refs == 0) {
        if (ev->stream != NULL)
            stream_unref(ev->stream);
        free(ev);
    }
}

static void op_free(sim_op *op)
{
    for (int i = 0; i < 2; i++)
        if (op->hold[i] != NULL)
            gm_sim_alloc_unref(op->hold[i]);
    free(op->staging);
    if (op->kind == OP_KERNEL)
        free(op->u.kernel.arg);
    if (op->kind == OP_WAIT)
        stream_unref(op->u.wait.target);
    else if (op->kind == OP_RECORD)
        event_unref(op->u.rec.ev);
    free(op);
}

static void fill(unsigned char *p, unsigned value, unsigned elem, size_t count)
{
    if (elem == 1) {
        memset(p, (int)(value & 0xffu), count);
        return;
    }
    unsigned char pattern[4];
    if (elem == 2) {
        uint16_t v = (uint16_t)value;
        memcpy(pattern, &v, 2);
    } else {
        uint32_t v = value;
        memcpy(pattern, &v, 4);
    }
    for (size_t i = 0; i < count; i++)
        memcpy(p + i * elem, pattern, elem);
}

/* Runs the work of a copy, memset or host function, without the lock. */
static void op_run(sim_op *op)
{
    switch (op->kind) {
    case OP_COPY: {
        const unsigned char *src = op->u.copy.src;
        unsigned char *dst = op->u.copy.dst;
        for (size_t z = 0; z < op->u.copy.d; z++)
            for (size_t y = 0; y < op->u.copy.h; y++)
                memmove(dst + z * op->u.copy.dslice + y * op->u.copy.dpitch,
                        src + z * op->u.copy.sslice + y * op->u.copy.spitch, op->u.copy.w);
        break;
    }
    case OP_SET:
        fill(op->u.set.dst, op->u.set.value, op->u.set.elem, op->u.set.count);
        break;
    case OP_HOSTFN:
        op->u.host.fn(op->u.host.data);
        break;
    case OP_KERNEL:
        op->u.kernel.fn(op->u.kernel.arg);
        break;
    default:
        break;
    }
}

static void *worker_main(void *arg)
{
    gm_dstream *s = arg;
    lock();
    for (;;) {
        sim_op *op = s->head;
        if (op == NULL) {
            if (s->stop)
                break;
            pthread_cond_wait(&s->cv, &S.mu);
            continue;
        }
        if (op->kind == OP_WAIT) {
            /* a flush of this item was passed on to the target by flush() */
            if (op->u.wait.target->completed < op->u.wait.n) {
                pthread_cond_wait(&S.done, &S.mu);
                continue;
            }
        } else if (op->seq > s->flush_to && ts_before(now_mono(), op->ready)) {
            pthread_cond_timedwait(&s->cv, &S.mu, &op->ready);
            continue;
        }
        if (op->kind == OP_RECORD) {
            gm_devent *ev = op->u.rec.ev;
            if (op->u.rec.gen > ev->done_gen) { /* an older record may run after a newer one */
                ev->done_gen = op->u.rec.gen;
                ev->time = now_mono();
            }
        } else if (op->kind != OP_WAIT) {
            unlock();
            op_run(op);
            lock();
        }
        s->head = op->next;
        if (s->head == NULL)
            s->tail = NULL;
        s->completed = op->seq;
        op_free(op);
        pthread_cond_broadcast(&S.done);
    }
    S.workers--;
    unlock();
    return NULL;
}

/* Asks s to run its ops up to number n without the delay, and everything
 * those ops wait for.  flush_to is raised before the walk, so the recursion
 * ends: a wait item only names ops enqueued before it. */
static void flush(gm_dstream *s, uint64_t n)
{
    if (n <= s->flush_to)
        return;
    uint64_t old = s->flush_to;
    s->flush_to = n;
    for (sim_op *op = s->head; op != NULL && op->seq <= n; op = op->next)
        if (op->kind == OP_WAIT && op->seq > old)
            flush(op->u.wait.target, op->u.wait.n);
    pthread_cond_signal(&s->cv);
}

/* Returns once s completed op n; drops the lock while it waits. */
static void wait_done(gm_dstream *s, uint64_t n)
{
    s->refs++;
    flush(s, n);
    while (s->completed < n)
        pthread_cond_wait(&S.done, &S.mu);
    stream_unref(s);
}

static void push(gm_dstream *s, sim_op *op, bool delayed)
{
    op->seq = ++s->enqueued;
    op->ready = delayed ? ts_add_us(now_mono(), S.delay_us) : now_mono();
    if (s->tail != NULL)
        s->tail->next = op;
    else
        s->head = op;
    s->tail = op;
    pthread_cond_signal(&s->cv);
}

static int push_wait(gm_dstream *s, gm_dstream *target, uint64_t n)
{
    sim_op *w = calloc(1, sizeof *w);
    if (w == NULL)
        return GM_CUDA_ERROR_OUT_OF_MEMORY;
    w->kind = OP_WAIT;
    w->u.wait.target = target;
    w->u.wait.n = n;
    target->refs++;
    push(s, w, false);
    return CU_OK;
}

/* Queues op on s behind the waits the legacy default stream imposes.  On
 * failure op is not queued (the caller frees it). */
static int enqueue(gm_dstream *s, sim_op *op)
{
    if (!(s->flags & GM_CU_STREAM_NON_BLOCKING)) {
        if (s->is_default) {
            for (gm_dstream *b = S.streams; b != NULL; b = b->next) {
                if (b->dev != s->dev || b->is_default || (b->flags & GM_CU_STREAM_NON_BLOCKING))
                    continue;
                if (b->completed < b->enqueued && b->waited_by_dflt < b->enqueued) {
                    int rc = push_wait(s, b, b->enqueued);
                    if (rc != CU_OK)
                        return rc;
                    b->waited_by_dflt = b->enqueued;
                }
            }
        } else {
            gm_dstream *d = s->dev->dflt;
            if (d->completed < d->enqueued && s->dflt_waited < d->enqueued) {
                int rc = push_wait(s, d, d->enqueued);
                if (rc != CU_OK)
                    return rc;
                s->dflt_waited = d->enqueued;
            }
        }
    }
    push(s, op, true);
    return CU_OK;
}

int gm_sim_stream_new(gm_dctx *dev, unsigned flags, bool is_default, gm_dstream **out)
{
    gm_dstream *s = calloc(1, sizeof *s);
    if (s == NULL)
        return GM_CUDA_ERROR_OUT_OF_MEMORY;
    if (cond_init_monotonic(&s->cv) != 0) {
        free(s);
        return GM_CUDA_ERROR_OUT_OF_MEMORY;
    }
    s->dev = dev;
    s->flags = flags;
    s->is_default = is_default;
    s->refs = 1;
    if (pthread_create(&s->thread, NULL, worker_main, s) != 0) {
        pthread_cond_destroy(&s->cv);
        free(s);
        return GM_CUDA_ERROR_OUT_OF_MEMORY;
    }
    S.workers++;
    s->next = S.streams;
    if (S.streams != NULL)
        S.streams->prev = s;
    S.streams = s;
    *out = s;
    return CU_OK;
}

/* Invalidates s's handle, drains it, stops and joins its worker (dropping
 * the lock meanwhile), and lets go of the handle's reference. */
void gm_sim_stream_retire(gm_dstream *s)
{
    if (s->prev != NULL)
        s->prev->next = s->next;
    else
        S.streams = s->next;
    if (s->next != NULL)
        s->next->prev = s->prev;
    wait_done(s, s->enqueued);
    s->stop = true;
    pthread_cond_signal(&s->cv);
    unlock();
    pthread_join(s->thread, NULL);
    lock();
    stream_unref(s);
}

/* The stream handle h names for ctx; NULL is the legacy default stream. */
static int stream_get(gm_dctx *ctx, gm_dstream *h, gm_dstream **out)
{
    if (h == NULL) {
        *out = ctx->dflt;
        return CU_OK;
    }
    for (gm_dstream *s = S.streams; s != NULL; s = s->next) {
        if (s == h && !s->is_default) {
            if (s->dev != ctx)
                return GM_CUDA_ERROR_INVALID_CONTEXT;
            *out = s;
            return CU_OK;
        }
    }
    return GM_CUDA_ERROR_INVALID_HANDLE;
}

/* The event handle h names; ctx NULL accepts any device's. */
static int event_get(const gm_dctx *ctx, gm_devent *h, gm_devent **out)
{
    for (gm_devent *ev = S.events; ev != NULL && h != NULL; ev = ev->next) {
        if (ev == h) {
            if (ctx != NULL && ev->dev != ctx)
                return GM_CUDA_ERROR_INVALID_CONTEXT;
            *out = ev;
            return CU_OK;
        }
    }
    return GM_CUDA_ERROR_INVALID_HANDLE;
}

void gm_sim_event_unlink(gm_devent *ev)
{
    if (ev->prev != NULL)
        ev->prev->next = ev->next;
    else
        S.events = ev->next;
    if (ev->next != NULL)
        ev->next->prev = ev->prev;
    event_unref(ev);
}

/* Queues op on s and, when wait, returns once it ran. */
static int submit(gm_dstream *s, sim_op *op, bool wait)
{
    int rc = enqueue(s, op);
    if (rc != CU_OK) {
        op_free(op);
        return rc;
    }
    if (wait)
        wait_done(s, op->seq); /* op->seq is read before the lock is dropped */
    return CU_OK;
}
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
        if (rec == NULL && r->type == GM_CU_MEMORYTYPE_DEVICE)
            return GM_CUDA_ERROR_INVALID_VALUE;
        out->p = (unsigned char *)(uintptr_t)r->addr;
    }
    out->rec = rec;
    return CU_OK;
}

static void hold(sim_op *op, int i, sim_alloc *rec)
{
    if (rec != NULL) {
        rec->refs++;
        op->hold[i] = rec;
    }
}

static int copy_locked(gm_dctx *ctx, gm_dstream *stream, int async, const region *src,
                       const region *dst, size_t w, size_t h, size_t d)
{
    gm_dstream *s;
    int rc = stream_get(ctx, stream, &s);
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
    bool wait = !async || dp.rec == NULL;
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
        hold(op, 0, sp.rec);
    }
    hold(op, 1, dp.rec);
    return submit(s, op, wait);
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
    int rc = stream_get(ctx, stream, &s);
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
    hold(op, 0, sp.rec);
    return submit(s, op, !async);
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
int gm_sim_ctx_synchronize(gm_dctx *ctx)
{
    lock();
    if (!gm_sim_ctx_ok(ctx)) {
        unlock();
        return GM_CUDA_ERROR_INVALID_CONTEXT;
    }
    /* what was enqueued when we were called, not what comes after */
    size_t n = 0, i = 0;
    for (gm_dstream *s = S.streams; s != NULL; s = s->next)
        n += s->dev == ctx;
    struct target {
        gm_dstream *s;
        uint64_t n;
    } *t = malloc(n * sizeof *t);
    if (t == NULL) {
        unlock();
        return GM_CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (gm_dstream *s = S.streams; s != NULL; s = s->next) {
        if (s->dev == ctx) {
            t[i++] = (struct target){s, s->enqueued};
            s->refs++;
        }
    }
    for (i = 0; i < n; i++)
        flush(t[i].s, t[i].n);
    for (i = 0; i < n; i++) {
        wait_done(t[i].s, t[i].n);
        stream_unref(t[i].s);
    }
    unlock();
    free(t);
    return CU_OK;
}

/* ------------------------------------------------------ streams, events -- */

int gm_sim_stream_create(gm_dctx *ctx, gm_dstream **stream, unsigned flags)
{
    if (stream == NULL || (flags & ~(unsigned)GM_CU_STREAM_NON_BLOCKING) != 0)
        return GM_CUDA_ERROR_INVALID_VALUE;
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? gm_sim_stream_new(ctx, flags, false, stream) : GM_CUDA_ERROR_INVALID_CONTEXT;
    unlock();
    return rc;
}

int gm_sim_stream_destroy(gm_dctx *ctx, gm_dstream *stream)
{
    gm_dstream *s;
    lock();
    int rc = !gm_sim_ctx_ok(ctx) ? GM_CUDA_ERROR_INVALID_CONTEXT
             : stream == NULL ? GM_CUDA_ERROR_INVALID_HANDLE
                              : stream_get(ctx, stream, &s);
    if (rc == CU_OK)
        gm_sim_stream_retire(s);
    unlock();
    return rc;
}

int gm_sim_stream_synchronize(gm_dctx *ctx, gm_dstream *stream)
{
    gm_dstream *s;
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? stream_get(ctx, stream, &s) : GM_CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CU_OK)
        wait_done(s, s->enqueued);
    unlock();
    return rc;
}

int gm_sim_stream_query(gm_dctx *ctx, gm_dstream *stream)
{
    gm_dstream *s;
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? stream_get(ctx, stream, &s) : GM_CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CU_OK && s->completed < s->enqueued)
        rc = GM_CUDA_ERROR_NOT_READY;
    unlock();
    return rc;
}

int gm_sim_stream_wait_event(gm_dctx *ctx, gm_dstream *stream, gm_devent *event)
{
    gm_dstream *s;
    gm_devent *ev;
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? stream_get(ctx, stream, &s) : GM_CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CU_OK)
        rc = event_get(NULL, event, &ev); /* the driver accepts other devices' events */
    /* nothing to wait for: never recorded, already done, or FIFO order suffices */
    if (rc == CU_OK && ev->stream != NULL && ev->stream != s && ev->stream->completed < ev->seq)
        rc = push_wait(s, ev->stream, ev->seq);
    unlock();
    return rc;
}

int gm_sim_launch_host_func(gm_dctx *ctx, gm_dstream *stream, gm_cu_host_fn fn, void *data)
{
    if (fn == NULL)
        return GM_CUDA_ERROR_INVALID_VALUE;
    gm_dstream *s;
    sim_op *op = NULL;
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? stream_get(ctx, stream, &s) : GM_CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CU_OK && (op = calloc(1, sizeof *op)) == NULL)
        rc = GM_CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CU_OK) {
        op->kind = OP_HOSTFN;
        op->u.host.fn = fn;
        op->u.host.data = data;
        rc = submit(s, op, false);
    }
    unlock();
    return rc;
}

int gm_sim_event_create(gm_dctx *ctx, gm_devent **event, unsigned flags)
{
    if (event == NULL || (flags & ~(unsigned)(GM_CU_EVENT_BLOCKING_SYNC | GM_CU_EVENT_DISABLE_TIMING)) != 0)
        return GM_CUDA_ERROR_INVALID_VALUE;
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? CU_OK : GM_CUDA_ERROR_INVALID_CONTEXT;
    gm_devent *ev = NULL;
    if (rc == CU_OK && (ev = calloc(1, sizeof *ev)) == NULL)
        rc = GM_CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CU_OK) {
        ev->dev = ctx;
        ev->flags = flags;
        ev->refs = 1;
        ev->next = S.events;
        if (S.events != NULL)
            S.events->prev = ev;
        S.events = ev;
        *event = ev;
    }
    unlock();
    return rc;
}

int gm_sim_event_destroy(gm_dctx *ctx, gm_devent *event)
{
    gm_devent *ev;
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? event_get(ctx, event, &ev) : GM_CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CU_OK)
        gm_sim_event_unlink(ev); /* a pending record keeps it until it ran */
    unlock();
    return rc;
}

int gm_sim_event_record(gm_dctx *ctx, gm_devent *event, gm_dstream *stream)
{
    gm_devent *ev;
    gm_dstream *s;
    sim_op *op = NULL;
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? event_get(ctx, event, &ev) : GM_CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CU_OK)
        rc = stream_get(ctx, stream, &s);
    if (rc == CU_OK && (op = calloc(1, sizeof *op)) == NULL)
        rc = GM_CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CU_OK) {
        op->kind = OP_RECORD;
        op->u.rec.ev = ev;
        op->u.rec.gen = ev->rec_gen + 1;
        ev->refs++;
        rc = enqueue(s, op);
        if (rc != CU_OK) {
            op_free(op);
        } else {
            ev->rec_gen = op->u.rec.gen;
            s->refs++;
            if (ev->stream != NULL)
                stream_unref(ev->stream);
            ev->stream = s;
            ev->seq = op->seq;
        }
    }
    unlock();
    return rc;
}

int gm_sim_event_query(gm_dctx *ctx, gm_devent *event)
{
    gm_devent *ev;
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? event_get(ctx, event, &ev) : GM_CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CU_OK && ev->done_gen < ev->rec_gen)
        rc = GM_CUDA_ERROR_NOT_READY;
    unlock();
    return rc;
}

int gm_sim_event_synchronize(gm_dctx *ctx, gm_devent *event)
{
    gm_devent *ev;
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? event_get(ctx, event, &ev) : GM_CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CU_OK && ev->done_gen < ev->rec_gen)
        wait_done(ev->stream, ev->seq);
    unlock();
    return rc;
}

int gm_sim_event_elapsed_time(float *ms, gm_devent *start, gm_devent *end)
{
    if (ms == NULL)
        return GM_CUDA_ERROR_INVALID_VALUE;
    gm_devent *a, *b;
    lock();
    int rc = event_get(NULL, start, &a);
    if (rc == CU_OK)
        rc = event_get(NULL, end, &b);
    if (rc == CU_OK && a->dev != b->dev)
        rc = GM_CUDA_ERROR_INVALID_CONTEXT;
    else if (rc == CU_OK && ((a->flags | b->flags) & GM_CU_EVENT_DISABLE_TIMING))
        rc = GM_CUDA_ERROR_INVALID_HANDLE;
    else if (rc == CU_OK && (a->rec_gen == 0 || b->rec_gen == 0))
        rc = GM_CUDA_ERROR_INVALID_HANDLE; /* never recorded */
    else if (rc == CU_OK && (a->done_gen < a->rec_gen || b->done_gen < b->rec_gen))
        rc = GM_CUDA_ERROR_NOT_READY;
    if (rc == CU_OK)
        *ms = (float)((double)(b->time.tv_sec - a->time.tv_sec) * 1e3 +
                      (double)(b->time.tv_nsec - a->time.tv_nsec) / 1e6);
    unlock();
    return rc;
}

int gm_sim_submit_kernel_locked(gm_dctx *ctx, gm_dstream *stream, void (*fn)(void *), void *arg, sim_alloc *a,
                                sim_alloc *b)
{
    gm_dstream *s;
    sim_op *op = NULL;
    int rc = stream_get(ctx, stream, &s);
    if (rc == CU_OK && (op = calloc(1, sizeof *op)) == NULL)
        rc = GM_CUDA_ERROR_OUT_OF_MEMORY;
    if (rc != CU_OK) {
        free(arg);
        return rc;
    }
    op->kind = OP_KERNEL;
    op->u.kernel.fn = fn;
    op->u.kernel.arg = arg;
    hold(op, 0, a);
    hold(op, 1, b);
    return submit(s, op, false);
}
