/*
 * sim_stream.c - the simulator's streams and events: per-stream FIFOs run by
 * worker threads with the delay that makes a missing synchronization show,
 * the legacy default stream's ordering, host functions, events and
 * stream-ordered allocation; copies and memsets (sim_copy.c) and native
 * kernels queue their ops here (sim.h says what is simulated, sim_impl.h how
 * the state is shared).
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

/* The stream handle h names for ctx; NULL is the legacy default stream,
 * and so is CU_STREAM_PER_THREAD (2) here (sim.h, "Streams"). */
int gm_sim_stream_get(gm_dctx *ctx, gm_dstream *h, gm_dstream **out)
{
    if (h == NULL || h == (gm_dstream *)(uintptr_t)2) {
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
int gm_sim_submit(gm_dstream *s, sim_op *op, bool wait)
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

/* Keeps rec (may be NULL) alive in op's slot i until op ran. */
void gm_sim_op_hold(sim_op *op, int i, sim_alloc *rec)
{
    if (rec != NULL) {
        rec->refs++;
        op->hold[i] = rec;
    }
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
                              : gm_sim_stream_get(ctx, stream, &s);
    if (rc == CU_OK)
        gm_sim_stream_retire(s);
    unlock();
    return rc;
}

int gm_sim_stream_synchronize(gm_dctx *ctx, gm_dstream *stream)
{
    gm_dstream *s;
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? gm_sim_stream_get(ctx, stream, &s) : GM_CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CU_OK)
        wait_done(s, s->enqueued);
    unlock();
    return rc;
}

int gm_sim_stream_query(gm_dctx *ctx, gm_dstream *stream)
{
    gm_dstream *s;
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? gm_sim_stream_get(ctx, stream, &s) : GM_CUDA_ERROR_INVALID_CONTEXT;
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
    int rc = gm_sim_ctx_ok(ctx) ? gm_sim_stream_get(ctx, stream, &s) : GM_CUDA_ERROR_INVALID_CONTEXT;
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
    int rc = gm_sim_ctx_ok(ctx) ? gm_sim_stream_get(ctx, stream, &s) : GM_CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CU_OK && (op = calloc(1, sizeof *op)) == NULL)
        rc = GM_CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CU_OK) {
        op->kind = OP_HOSTFN;
        op->u.host.fn = fn;
        op->u.host.data = data;
        rc = gm_sim_submit(s, op, false);
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
        rc = gm_sim_stream_get(ctx, stream, &s);
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

int gm_sim_event_elapsed_time(gm_dctx *ctx, float *ms, gm_devent *start, gm_devent *end)
{
    if (ms == NULL)
        return GM_CUDA_ERROR_INVALID_VALUE;
    gm_devent *a, *b;
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? event_get(NULL, start, &a) : GM_CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CU_OK)
        rc = event_get(NULL, end, &b);
    if (rc == CU_OK && (a->dev != b->dev || a->dev != ctx))
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
    int rc = gm_sim_stream_get(ctx, stream, &s);
    if (rc == CU_OK && (op = calloc(1, sizeof *op)) == NULL)
        rc = GM_CUDA_ERROR_OUT_OF_MEMORY;
    if (rc != CU_OK) {
        free(arg);
        return rc;
    }
    op->kind = OP_KERNEL;
    op->u.kernel.fn = fn;
    op->u.kernel.arg = arg;
    gm_sim_op_hold(op, 0, a);
    gm_sim_op_hold(op, 1, b);
    return gm_sim_submit(s, op, false);
}
