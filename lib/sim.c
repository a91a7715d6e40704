/*
 * sim.c - the simulator backend: a GPU on host memory (sim.h says what it
 * simulates and why).
 *
 * One mutex guards all state: devices, the allocation registry, streams with
 * their queues, and events.  Workers let go of it only to move bytes or to
 * run a host function.  S.done is broadcast whenever an operation completes
 * (or a context teardown ends); synchronous callers and workers blocked on a
 * wait item sleep on it.
 *
 * Every queued operation has a number in its stream (1, 2, ...); a stream
 * counts what it enqueued and completed, and flush_to says up to which number
 * a synchronization wants work done without the delay.  Waits between
 * streams are queue items "until stream X completed op n", with n taken at
 * enqueue time, so they never form a cycle, and a flush follows them at once
 * (flush()), so a synchronize never waits for the delay.
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

#define DEVICE_ALIGN 512 /* cuMemAlloc alignment (texture alignment) */
#define DEVICE_GAP 512   /* unbacked bytes after each allocation: overruns fault */
#define GRANULE 256      /* unit of the capacity accounting */
#define WINDOW (UINT64_C(1) << GM_SIM_DEVICE_SHIFT)

enum { CU_OK = GM_CUDA_SUCCESS };

typedef struct sim_alloc {
    uint64_t base;      /* the address users see */
    size_t size;        /* bytes asked for */
    size_t charged;     /* bytes counted against the device or host limit */
    unsigned char *mem; /* the bytes: our backing for device memory, else base */
    bool owned;         /* mem is freed with the record */
    gm_sim_mem_kind kind;
    int dev;
    unsigned flags;
    unsigned refs; /* 1 while in the registry, +1 per queued op using it */
    bool module;   /* a module's global: only module_unload frees it */
} sim_alloc;

enum { OP_COPY, OP_SET, OP_HOSTFN, OP_RECORD, OP_WAIT };

typedef struct sim_op {
    struct sim_op *next;
    int kind;
    uint64_t seq;          /* its number in its stream */
    struct timespec ready; /* when it may run without a flush */
    sim_alloc *hold[2];    /* allocations kept alive until it completes */
    void *staging;         /* our copy of a pageable source */
    union {
        struct {
            unsigned char *dst;
            const unsigned char *src;
            size_t w, h, d, dpitch, dslice, spitch, sslice;
        } copy;
        struct {
            unsigned char *dst;
            unsigned value, elem;
            size_t count;
        } set;
        struct {
            gm_cu_host_fn fn;
            void *data;
        } host;
        struct {
            gm_devent *ev;
            uint64_t gen;
        } rec;
        struct {
            gm_dstream *target;
            uint64_t n;
        } wait;
    } u;
} sim_op;

struct gm_dstream {
    gm_dctx *dev;
    unsigned flags;
    bool is_default;
    bool stop;
    unsigned refs; /* the handle, wait items, events and synchronous callers */
    pthread_t thread;
    pthread_cond_t cv; /* wakes the worker (CLOCK_MONOTONIC, for the delay) */
    sim_op *head, *tail;
    uint64_t enqueued, completed, flush_to;
    uint64_t dflt_waited;    /* blocking: the default stream's last op it waits for */
    uint64_t waited_by_dflt; /* blocking: its last op the default stream waits for */
    gm_dstream *next, *prev; /* S.streams, while the handle is valid */
};

struct gm_devent {
    gm_dctx *dev;
    unsigned flags;
    unsigned refs;      /* the handle and queued records */
    gm_dstream *stream; /* of the last record (referenced); NULL: never recorded */
    uint64_t seq;       /* that record's number there */
    uint64_t rec_gen;   /* records made */
    uint64_t done_gen;  /* the newest record that ran */
    struct timespec time;
    gm_devent *next, *prev;
};

/* A kernel of a loaded module. */
struct gm_dfunc {
    gm_dmodule *mod;
    char *name;
    size_t shared_bytes, local_bytes;
    int num_regs;           /* a cubin's; 0: unknown */
    int max_dynamic_shared; /* -1: the default */
    int carveout;           /* PREFERRED_SHARED_MEMORY_CARVEOUT, -1 until set */
};

typedef struct sim_global {
    char *name;
    size_t size;
    uint64_t addr;
} sim_global;

/* A loaded module; its kernels and globals live as long as it does. */
struct gm_dmodule {
    gm_dctx *dev;
    int ptx_target;
    size_t const_bytes;
    gm_dfunc *funcs;
    size_t nfuncs;
    sim_global *globals;
    size_t nglobals;
    gm_dmodule *next, *prev; /* S.modules */
};

static void module_free(gm_dmodule *m);

/* A device and its primary context: the context handle is its address. */
struct gm_dctx {
    int ordinal;
    unsigned refs;
    bool closing;      /* the last release is tearing it down */
    uint64_t used;     /* device and managed bytes charged */
    uint64_t next_off; /* bump pointer in the device's address window */
    gm_dstream *dflt;  /* the legacy default stream, while retained */
    uint64_t peers;    /* bit per ordinal: peer access enabled (ctx_enable_peer_access) */
};

static struct {
    pthread_mutex_t mu;
    pthread_cond_t done;
    bool loaded;
    int ndev;
    uint64_t capacity;
    uint64_t host_limit, host_used;
    long delay_us;
    const gm_sim_arch *arch;
    uint64_t busy; /* bit per ordinal */
    size_t page;
    struct gm_dctx dev[GM_SIM_MAX_DEVICES];
    sim_alloc **reg; /* sorted by base; records never overlap */
    size_t nreg, capreg;
    gm_dstream *streams;
    gm_devent *events;
    gm_dmodule *modules;
    unsigned workers;
} S = {.mu = PTHREAD_MUTEX_INITIALIZER, .done = PTHREAD_COND_INITIALIZER};

static void lock(void)
{
    pthread_mutex_lock(&S.mu);
}

static void unlock(void)
{
    pthread_mutex_unlock(&S.mu);
}

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

static bool round_up(size_t n, size_t unit, size_t *out)
{
    if (n > SIZE_MAX - (unit - 1))
        return false;
    *out = (n + unit - 1) / unit * unit;
    return true;
}

static bool in_device_window(uint64_t addr)
{
    return addr >= GM_SIM_DEVICE_BASE &&
           addr - GM_SIM_DEVICE_BASE < ((uint64_t)GM_SIM_MAX_DEVICES << GM_SIM_DEVICE_SHIFT);
}

static bool ctx_ok(const gm_dctx *ctx)
{
    for (int i = 0; i < S.ndev; i++)
        if (ctx == &S.dev[i])
            return S.dev[i].refs > 0;
    return false;
}

/* ------------------------------------------------------------ registry -- */

/* Index of the first record whose base is above addr. */
static size_t reg_upper(uint64_t addr)
{
    size_t lo = 0, hi = S.nreg;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (S.reg[mid]->base <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static sim_alloc *reg_find(uint64_t addr)
{
    size_t i = reg_upper(addr);
    if (i == 0)
        return NULL;
    sim_alloc *r = S.reg[i - 1];
    return addr - r->base < r->size ? r : NULL;
}

/* The record holding all of [addr, addr + len), len > 0. */
static sim_alloc *reg_find_range(uint64_t addr, size_t len)
{
    sim_alloc *r = reg_find(addr);
    return r != NULL && len <= r->size - (addr - r->base) ? r : NULL;
}

/* A record overlapping [addr, addr + len), len > 0: since records are
 * disjoint and sorted, only the last one starting before the end can. */
static sim_alloc *reg_overlap(uint64_t addr, size_t len)
{
    size_t i = reg_upper(addr + len - 1);
    if (i == 0)
        return NULL;
    sim_alloc *r = S.reg[i - 1];
    return r->base + r->size > addr ? r : NULL;
}

static bool reg_insert(sim_alloc *r)
{
    if (S.nreg == S.capreg) {
        size_t cap = S.capreg ? 2 * S.capreg : 64;
        sim_alloc **v = realloc(S.reg, cap * sizeof *v);
        if (v == NULL)
            return false;
        S.reg = v;
        S.capreg = cap;
    }
    size_t i = reg_upper(r->base);
    memmove(&S.reg[i + 1], &S.reg[i], (S.nreg - i) * sizeof *S.reg);
    S.reg[i] = r;
    S.nreg++;
    return true;
}

static void alloc_unref(sim_alloc *r)
{
    if (--r->refs == 0) {
        if (r->owned)
            free(r->mem);
        free(r);
    }
}

/* Takes r out of the registry and gives its bytes back to its limit at
 * once; its memory goes when the last queued op using it completes. */
static void alloc_drop(sim_alloc *r)
{
    size_t i = reg_upper(r->base) - 1;
    memmove(&S.reg[i], &S.reg[i + 1], (S.nreg - i - 1) * sizeof *S.reg);
    S.nreg--;
    if (r->kind == GM_SIM_MEM_DEVICE || r->kind == GM_SIM_MEM_MANAGED)
        S.dev[r->dev].used -= r->charged;
    else
        S.host_used -= r->charged;
    alloc_unref(r);
}

/* Registers host memory we just allocated.  A registration it overlaps can
 * only be stale (the user freed registered memory without unregistering it
 * and the allocator reused the pages): drop it to keep records disjoint. */
static int alloc_add_host(gm_sim_mem_kind kind, int dev, void *mem, size_t size, size_t charged,
                          unsigned flags)
{
    sim_alloc *r = calloc(1, sizeof *r);
    if (r == NULL)
        return GM_CUDA_ERROR_OUT_OF_MEMORY;
    *r = (sim_alloc){.base = (uintptr_t)mem, .size = size, .charged = charged, .mem = mem,
                     .owned = true, .kind = kind, .dev = dev, .flags = flags, .refs = 1};
    sim_alloc *old;
    while ((old = reg_overlap(r->base, size)) != NULL && old->kind == GM_SIM_MEM_HOST_REGISTERED)
        alloc_drop(old);
    if (old != NULL || !reg_insert(r)) {
        free(r);
        return GM_CUDA_ERROR_OUT_OF_MEMORY;
    }
    return CU_OK;
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
            alloc_unref(op->hold[i]);
    free(op->staging);
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

static int stream_new(gm_dctx *dev, unsigned flags, bool is_default, gm_dstream **out)
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
static void stream_retire(gm_dstream *s)
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

static void event_unlink(gm_devent *ev)
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
    sim_alloc *rec = reg_find_range(r->addr, len);
    if (in_device_window(r->addr)) {
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

static int sim_memcpy(gm_dctx *ctx, gm_cu_deviceptr dst, gm_cu_deviceptr src, size_t bytes,
                      gm_dstream *stream, int async)
{
    region s = {GM_CU_MEMORYTYPE_UNIFIED, src, bytes, bytes};
    region d = {GM_CU_MEMORYTYPE_UNIFIED, dst, bytes, bytes};
    lock();
    int rc = ctx_ok(ctx) ? copy_locked(ctx, stream, async, &s, &d, bytes, 1, 1)
                         : GM_CUDA_ERROR_INVALID_CONTEXT;
    unlock();
    return rc;
}

static int sim_memcpy_2d(gm_dctx *ctx, const gm_cu_memcpy2d *c, gm_dstream *stream, int async)
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
    rc = ctx_ok(ctx) ? copy_locked(ctx, stream, async, &s, &d, c->WidthInBytes, c->Height, 1)
                     : GM_CUDA_ERROR_INVALID_CONTEXT;
    unlock();
    return rc;
}

static int sim_memcpy_3d(gm_dctx *ctx, const gm_cu_memcpy3d *c, gm_dstream *stream, int async)
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
    rc = ctx_ok(ctx) ? copy_locked(ctx, stream, async, &s, &d, c->WidthInBytes, c->Height, c->Depth)
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

static int sim_memset(gm_dctx *ctx, gm_cu_deviceptr dst, unsigned value, unsigned elem_size,
                      size_t count, gm_dstream *stream, int async)
{
    lock();
    int rc = ctx_ok(ctx) ? memset_locked(ctx, dst, value, elem_size, count, stream, async)
                         : GM_CUDA_ERROR_INVALID_CONTEXT;
    unlock();
    return rc;
}

/* ------------------------------------------------------ device queries -- */

static int sim_driver_get_version(int *version)
{
    if (version == NULL)
        return GM_CUDA_ERROR_INVALID_VALUE;
    *version = 13000;
    return CU_OK;
}

static int sim_device_get_count(int *count)
{
    if (count == NULL)
        return GM_CUDA_ERROR_INVALID_VALUE;
    *count = S.ndev;
    return CU_OK;
}

static int sim_device_get_name(int dev, char *name, int len)
{
    if (name == NULL || len <= 0)
        return GM_CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= S.ndev)
        return GM_CUDA_ERROR_INVALID_DEVICE;
    snprintf(name, (size_t)len, "gpumem sim %s (%s)", S.arch->name, S.arch->model);
    return CU_OK;
}

static int sim_device_get_attribute(int dev, int attr, int *value)
{
    if (value == NULL)
        return GM_CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= S.ndev)
        return GM_CUDA_ERROR_INVALID_DEVICE;
    return gm_sim_arch_attribute(S.arch, dev, (int)(S.busy >> dev & 1), attr, value);
}

static int sim_device_total_mem(int dev, size_t *bytes)
{
    if (bytes == NULL)
        return GM_CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= S.ndev)
        return GM_CUDA_ERROR_INVALID_DEVICE;
    *bytes = (size_t)S.capacity;
    return CU_OK;
}

/* ------------------------------------------------------------ contexts -- */

static int sim_primary_ctx_retain(int dev, gm_dctx **ctx)
{
    if (ctx == NULL)
        return GM_CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= S.ndev)
        return GM_CUDA_ERROR_INVALID_DEVICE;
    if (S.busy >> dev & 1)
        return GM_CUDA_ERROR_DEVICE_UNAVAILABLE;
    lock();
    gm_dctx *d = &S.dev[dev];
    while (d->closing)
        pthread_cond_wait(&S.done, &S.mu);
    int rc = d->refs == 0 ? stream_new(d, 0, true, &d->dflt) : CU_OK;
    if (rc == CU_OK) {
        d->refs++;
        *ctx = d;
    }
    unlock();
    return rc;
}

/* The last release: what the driver does when it destroys a context. */
static void ctx_teardown(gm_dctx *d)
{
    d->closing = true;
    for (;;) {
        gm_dstream *s = S.streams;
        while (s != NULL && (s->dev != d || s->is_default))
            s = s->next;
        if (s == NULL)
            break;
        stream_retire(s);
    }
    stream_retire(d->dflt);
    d->dflt = NULL;
    for (gm_devent *ev = S.events, *next; ev != NULL; ev = next) {
        next = ev->next;
        if (ev->dev == d)
            event_unlink(ev);
    }
    for (gm_dmodule *m = S.modules, *next; m != NULL; m = next) {
        next = m->next;
        if (m->dev == d)
            module_free(m);
    }
    for (size_t i = S.nreg; i-- > 0;) {
        sim_alloc *r = S.reg[i];
        if (r->dev == d->ordinal && (r->kind == GM_SIM_MEM_DEVICE || r->kind == GM_SIM_MEM_MANAGED))
            alloc_drop(r);
    }
    d->peers = 0;
    d->closing = false;
    pthread_cond_broadcast(&S.done);
}

static int sim_primary_ctx_release(int dev)
{
    if (dev < 0 || dev >= S.ndev)
        return GM_CUDA_ERROR_INVALID_DEVICE;
    lock();
    gm_dctx *d = &S.dev[dev];
    int rc = CU_OK;
    if (d->refs == 0)
        rc = GM_CUDA_ERROR_INVALID_CONTEXT;
    else if (--d->refs == 0)
        ctx_teardown(d);
    unlock();
    return rc;
}

static int sim_ctx_synchronize(gm_dctx *ctx)
{
    lock();
    if (!ctx_ok(ctx)) {
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

/* -------------------------------------------------------------- memory -- */

static int sim_mem_get_info(gm_dctx *ctx, size_t *free_bytes, size_t *total_bytes)
{
    if (free_bytes == NULL || total_bytes == NULL)
        return GM_CUDA_ERROR_INVALID_VALUE;
    lock();
    int rc = ctx_ok(ctx) ? CU_OK : GM_CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CU_OK) {
        *free_bytes = (size_t)(S.capacity - ctx->used);
        *total_bytes = (size_t)S.capacity;
    }
    unlock();
    return rc;
}

static int mem_alloc_locked(gm_dctx *ctx, gm_cu_deviceptr *ptr, size_t bytes)
{
    size_t charged, extent;
    if (!round_up(bytes, GRANULE, &charged) || charged > S.capacity - ctx->used ||
        !round_up(bytes, DEVICE_ALIGN, &extent) || extent > WINDOW - DEVICE_GAP ||
        ctx->next_off > WINDOW - DEVICE_GAP - extent)
        return GM_CUDA_ERROR_OUT_OF_MEMORY;
    sim_alloc *r = calloc(1, sizeof *r);
    unsigned char *mem = malloc(bytes);
    if (r != NULL && mem != NULL)
        *r = (sim_alloc){.base = GM_SIM_DEVICE_BASE +
                                 ((uint64_t)ctx->ordinal << GM_SIM_DEVICE_SHIFT) + ctx->next_off,
                         .size = bytes, .charged = charged, .mem = mem, .owned = true,
                         .kind = GM_SIM_MEM_DEVICE, .dev = ctx->ordinal, .refs = 1};
    if (r == NULL || mem == NULL || !reg_insert(r)) {
        free(r);
        free(mem);
        return GM_CUDA_ERROR_OUT_OF_MEMORY;
    }
    memset(mem, GM_SIM_GARBAGE_BYTE, bytes); /* device memory starts uninitialized */
    ctx->next_off += extent + DEVICE_GAP;
    ctx->used += charged;
    *ptr = r->base;
    return CU_OK;
}

static int sim_mem_alloc(gm_dctx *ctx, gm_cu_deviceptr *ptr, size_t bytes)
{
    if (ptr == NULL || bytes == 0)
        return GM_CUDA_ERROR_INVALID_VALUE;
    lock();
    int rc = ctx_ok(ctx) ? mem_alloc_locked(ctx, ptr, bytes) : GM_CUDA_ERROR_INVALID_CONTEXT;
    unlock();
    return rc;
}

static int sim_mem_free(gm_dctx *ctx, gm_cu_deviceptr ptr)
{
    lock();
    int rc = ctx_ok(ctx) ? CU_OK : GM_CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CU_OK) {
        sim_alloc *r = reg_find(ptr);
        if (r != NULL && r->base == ptr && !r->module &&
            (r->kind == GM_SIM_MEM_DEVICE || r->kind == GM_SIM_MEM_MANAGED))
            alloc_drop(r);
        else
            rc = GM_CUDA_ERROR_INVALID_VALUE;
    }
    unlock();
    return rc;
}

static int sim_mem_alloc_managed(gm_dctx *ctx, gm_cu_deviceptr *ptr, size_t bytes, unsigned flags)
{
    if (ptr == NULL || bytes == 0 ||
        (flags != GM_CU_MEM_ATTACH_GLOBAL && flags != GM_CU_MEM_ATTACH_HOST))
        return GM_CUDA_ERROR_INVALID_VALUE;
    lock();
    int rc = ctx_ok(ctx) ? CU_OK : GM_CUDA_ERROR_INVALID_CONTEXT;
    size_t charged;
    void *mem = NULL;
    if (rc == CU_OK && (!round_up(bytes, GRANULE, &charged) || charged > S.capacity - ctx->used ||
                      posix_memalign(&mem, S.page, bytes) != 0))
        rc = GM_CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CU_OK) {
        memset(mem, GM_SIM_GARBAGE_BYTE, bytes);
        rc = alloc_add_host(GM_SIM_MEM_MANAGED, ctx->ordinal, mem, bytes, charged, flags);
    }
    if (rc == CU_OK) {
        ctx->used += charged;
        *ptr = (uintptr_t)mem;
    } else {
        free(mem);
    }
    unlock();
    return rc;
}

static int sim_mem_host_alloc(gm_dctx *ctx, void **ptr, size_t bytes, unsigned flags)
{
    const unsigned known = GM_CU_MEMHOSTALLOC_PORTABLE | GM_CU_MEMHOSTALLOC_DEVICEMAP |
                           GM_CU_MEMHOSTALLOC_WRITECOMBINED;
    if (ptr == NULL || bytes == 0 || (flags & ~known) != 0)
        return GM_CUDA_ERROR_INVALID_VALUE;
    lock();
    int rc = ctx_ok(ctx) ? CU_OK : GM_CUDA_ERROR_INVALID_CONTEXT;
    size_t charged;
    void *mem = NULL;
    if (rc == CU_OK && (!round_up(bytes, S.page, &charged) || charged > S.host_limit - S.host_used ||
                      posix_memalign(&mem, S.page, charged) != 0))
        rc = GM_CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CU_OK) {
        memset(mem, GM_SIM_GARBAGE_BYTE, bytes);
        rc = alloc_add_host(GM_SIM_MEM_HOST_ALLOC, ctx->ordinal, mem, bytes, charged, flags);
    }
    if (rc == CU_OK) {
        S.host_used += charged;
        *ptr = mem;
    } else {
        free(mem);
    }
    unlock();
    return rc;
}

static int sim_mem_free_host(gm_dctx *ctx, void *ptr)
{
    lock();
    int rc = ctx_ok(ctx) ? CU_OK : GM_CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CU_OK) {
        sim_alloc *r = reg_find((uintptr_t)ptr);
        if (ptr != NULL && r != NULL && r->base == (uintptr_t)ptr && r->kind == GM_SIM_MEM_HOST_ALLOC)
            alloc_drop(r);
        else
            rc = GM_CUDA_ERROR_INVALID_VALUE;
    }
    unlock();
    return rc;
}

static int host_register_locked(gm_dctx *ctx, void *ptr, size_t bytes, unsigned flags)
{
    uint64_t addr = (uintptr_t)ptr;
    const uint64_t window_end = GM_SIM_DEVICE_BASE + ((uint64_t)GM_SIM_MAX_DEVICES << GM_SIM_DEVICE_SHIFT);
    if (addr < window_end && addr + bytes > GM_SIM_DEVICE_BASE)
        return GM_CUDA_ERROR_INVALID_VALUE; /* device memory is not host memory */
    if (reg_overlap(addr, bytes) != NULL)
        return GM_CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    /* the driver pins whole pages */
    uint64_t first = addr / S.page * S.page;
    uint64_t end = (addr + bytes - 1) / S.page * S.page + S.page;
    if (end - first > S.host_limit - S.host_used)
        return GM_CUDA_ERROR_OUT_OF_MEMORY;
    sim_alloc *r = calloc(1, sizeof *r);
    if (r == NULL)
        return GM_CUDA_ERROR_OUT_OF_MEMORY;
    *r = (sim_alloc){.base = addr, .size = bytes, .charged = (size_t)(end - first), .mem = ptr,
                     .kind = GM_SIM_MEM_HOST_REGISTERED, .dev = ctx->ordinal, .flags = flags, .refs = 1};
    if (!reg_insert(r)) {
        free(r);
        return GM_CUDA_ERROR_OUT_OF_MEMORY;
    }
    S.host_used += r->charged;
    return CU_OK;
}

static int sim_mem_host_register(gm_dctx *ctx, void *ptr, size_t bytes, unsigned flags)
{
    const unsigned known = GM_CU_MEMHOSTREGISTER_PORTABLE | GM_CU_MEMHOSTREGISTER_DEVICEMAP |
                           GM_CU_MEMHOSTREGISTER_IOMEMORY | GM_CU_MEMHOSTREGISTER_READ_ONLY;
    /* the whole range, rounded out to pages, must fit the address space */
    if (ptr == NULL || bytes == 0 || (uintptr_t)ptr > UINT64_MAX - S.page ||
        bytes > UINT64_MAX - S.page - (uintptr_t)ptr || (flags & ~known) != 0)
        return GM_CUDA_ERROR_INVALID_VALUE;
    lock();
    int rc = ctx_ok(ctx) ? host_register_locked(ctx, ptr, bytes, flags) : GM_CUDA_ERROR_INVALID_CONTEXT;
    unlock();
    return rc;
}

static int sim_mem_host_unregister(gm_dctx *ctx, void *ptr)
{
    lock();
    int rc = ctx_ok(ctx) ? CU_OK : GM_CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CU_OK) {
        sim_alloc *r = reg_find((uintptr_t)ptr);
        if (ptr != NULL && r != NULL && r->base == (uintptr_t)ptr &&
            r->kind == GM_SIM_MEM_HOST_REGISTERED)
            alloc_drop(r);
        else
            rc = GM_CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    }
    unlock();
    return rc;
}

static int sim_mem_host_get_device_pointer(gm_dctx *ctx, gm_cu_deviceptr *dptr, void *ptr)
{
    if (dptr == NULL || ptr == NULL)
        return GM_CUDA_ERROR_INVALID_VALUE;
    lock();
    int rc = ctx_ok(ctx) ? CU_OK : GM_CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CU_OK) {
        /* unified addressing maps all page-locked memory at its host address */
        sim_alloc *r = reg_find((uintptr_t)ptr);
        if (r != NULL && (r->kind == GM_SIM_MEM_HOST_ALLOC || r->kind == GM_SIM_MEM_HOST_REGISTERED))
            *dptr = (uintptr_t)ptr;
        else
            rc = GM_CUDA_ERROR_INVALID_VALUE;
    }
    unlock();
    return rc;
}

/* ------------------------------------------------------ streams, events -- */

static int sim_stream_create(gm_dctx *ctx, gm_dstream **stream, unsigned flags)
{
    if (stream == NULL || (flags & ~(unsigned)GM_CU_STREAM_NON_BLOCKING) != 0)
        return GM_CUDA_ERROR_INVALID_VALUE;
    lock();
    int rc = ctx_ok(ctx) ? stream_new(ctx, flags, false, stream) : GM_CUDA_ERROR_INVALID_CONTEXT;
    unlock();
    return rc;
}

static int sim_stream_destroy(gm_dctx *ctx, gm_dstream *stream)
{
    gm_dstream *s;
    lock();
    int rc = !ctx_ok(ctx) ? GM_CUDA_ERROR_INVALID_CONTEXT
             : stream == NULL ? GM_CUDA_ERROR_INVALID_HANDLE
                              : stream_get(ctx, stream, &s);
    if (rc == CU_OK)
        stream_retire(s);
    unlock();
    return rc;
}

static int sim_stream_synchronize(gm_dctx *ctx, gm_dstream *stream)
{
    gm_dstream *s;
    lock();
    int rc = ctx_ok(ctx) ? stream_get(ctx, stream, &s) : GM_CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CU_OK)
        wait_done(s, s->enqueued);
    unlock();
    return rc;
}

static int sim_stream_query(gm_dctx *ctx, gm_dstream *stream);

/* Stream-ordered allocation, simulated plainly: the memory is usable at
 * once, and a free waits for the stream's earlier work before it frees
 * (what the driver's ordering guarantees, done synchronously). */
static int sim_mem_alloc_async(gm_dctx *ctx, gm_cu_deviceptr *ptr, size_t bytes, gm_dstream *stream)
{
    int rc = sim_stream_query(ctx, stream);
    if (rc != CU_OK && rc != GM_CUDA_ERROR_NOT_READY)
        return rc;
    return sim_mem_alloc(ctx, ptr, bytes);
}

static int sim_mem_free_async(gm_dctx *ctx, gm_cu_deviceptr ptr, gm_dstream *stream)
{
    int rc = sim_stream_synchronize(ctx, stream);
    return rc != CU_OK ? rc : sim_mem_free(ctx, ptr);
}

static int sim_stream_query(gm_dctx *ctx, gm_dstream *stream)
{
    gm_dstream *s;
    lock();
    int rc = ctx_ok(ctx) ? stream_get(ctx, stream, &s) : GM_CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CU_OK && s->completed < s->enqueued)
        rc = GM_CUDA_ERROR_NOT_READY;
    unlock();
    return rc;
}

static int sim_stream_wait_event(gm_dctx *ctx, gm_dstream *stream, gm_devent *event)
{
    gm_dstream *s;
    gm_devent *ev;
    lock();
    int rc = ctx_ok(ctx) ? stream_get(ctx, stream, &s) : GM_CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CU_OK)
        rc = event_get(NULL, event, &ev); /* the driver accepts other devices' events */
    /* nothing to wait for: never recorded, already done, or FIFO order suffices */
    if (rc == CU_OK && ev->stream != NULL && ev->stream != s && ev->stream->completed < ev->seq)
        rc = push_wait(s, ev->stream, ev->seq);
    unlock();
    return rc;
}

static int sim_launch_host_func(gm_dctx *ctx, gm_dstream *stream, gm_cu_host_fn fn, void *data)
{
    if (fn == NULL)
        return GM_CUDA_ERROR_INVALID_VALUE;
    gm_dstream *s;
    sim_op *op = NULL;
    lock();
    int rc = ctx_ok(ctx) ? stream_get(ctx, stream, &s) : GM_CUDA_ERROR_INVALID_CONTEXT;
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

static int sim_event_create(gm_dctx *ctx, gm_devent **event, unsigned flags)
{
    if (event == NULL || (flags & ~(unsigned)(GM_CU_EVENT_BLOCKING_SYNC | GM_CU_EVENT_DISABLE_TIMING)) != 0)
        return GM_CUDA_ERROR_INVALID_VALUE;
    lock();
    int rc = ctx_ok(ctx) ? CU_OK : GM_CUDA_ERROR_INVALID_CONTEXT;
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

static int sim_event_destroy(gm_dctx *ctx, gm_devent *event)
{
    gm_devent *ev;
    lock();
    int rc = ctx_ok(ctx) ? event_get(ctx, event, &ev) : GM_CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CU_OK)
        event_unlink(ev); /* a pending record keeps it until it ran */
    unlock();
    return rc;
}

static int sim_event_record(gm_dctx *ctx, gm_devent *event, gm_dstream *stream)
{
    gm_devent *ev;
    gm_dstream *s;
    sim_op *op = NULL;
    lock();
    int rc = ctx_ok(ctx) ? event_get(ctx, event, &ev) : GM_CUDA_ERROR_INVALID_CONTEXT;
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

static int sim_event_query(gm_dctx *ctx, gm_devent *event)
{
    gm_devent *ev;
    lock();
    int rc = ctx_ok(ctx) ? event_get(ctx, event, &ev) : GM_CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CU_OK && ev->done_gen < ev->rec_gen)
        rc = GM_CUDA_ERROR_NOT_READY;
    unlock();
    return rc;
}

static int sim_event_synchronize(gm_dctx *ctx, gm_devent *event)
{
    gm_devent *ev;
    lock();
    int rc = ctx_ok(ctx) ? event_get(ctx, event, &ev) : GM_CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CU_OK && ev->done_gen < ev->rec_gen)
        wait_done(ev->stream, ev->seq);
    unlock();
    return rc;
}

static int sim_event_elapsed_time(float *ms, gm_devent *start, gm_devent *end)
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

/* ------------------------------------------------------------- modules -- */

/* Unlinks m, frees its globals' memory and the module (lock held). */
static void module_free(gm_dmodule *m)
{
    if (m->prev != NULL)
        m->prev->next = m->next;
    else if (S.modules == m)
        S.modules = m->next;
    if (m->next != NULL)
        m->next->prev = m->prev;
    for (size_t i = 0; i < m->nglobals; i++) {
        sim_alloc *r = m->globals[i].addr != 0 ? reg_find(m->globals[i].addr) : NULL;
        if (r != NULL && r->module)
            alloc_drop(r);
        free(m->globals[i].name);
    }
    for (size_t i = 0; i < m->nfuncs; i++)
        free(m->funcs[i].name);
    free(m->globals);
    free(m->funcs);
    free(m);
}

/* The module handle h names in ctx. */
static int module_get(const gm_dctx *ctx, const gm_dmodule *h, gm_dmodule **out)
{
    for (gm_dmodule *m = S.modules; m != NULL && h != NULL; m = m->next) {
        if (m == h) {
            if (m->dev != ctx)
                return GM_CUDA_ERROR_INVALID_CONTEXT;
            *out = m;
            return CU_OK;
        }
    }
    return GM_CUDA_ERROR_INVALID_HANDLE;
}

/* The kernel handle h names in ctx. */
static int func_get(const gm_dctx *ctx, const gm_dfunc *h, gm_dfunc **out)
{
    for (gm_dmodule *m = S.modules; m != NULL && h != NULL; m = m->next) {
        for (size_t i = 0; i < m->nfuncs; i++) {
            if (&m->funcs[i] == h) {
                if (m->dev != ctx)
                    return GM_CUDA_ERROR_INVALID_CONTEXT;
                *out = &m->funcs[i];
                return CU_OK;
            }
        }
    }
    return GM_CUDA_ERROR_INVALID_HANDLE;
}

/* Builds the module of a parsed image in ctx, with its globals' memory;
 * takes the image's names over. */
static int module_build_locked(gm_dctx *ctx, gm_sim_image *img, gm_dmodule **out)
{
    gm_dmodule *m = calloc(1, sizeof *m);
    if (m == NULL)
        return GM_CUDA_ERROR_OUT_OF_MEMORY;
    m->dev = ctx;
    m->ptx_target = img->ptx_target;
    m->const_bytes = img->const_bytes;
    m->funcs = img->nfuncs ? calloc(img->nfuncs, sizeof *m->funcs) : NULL;
    m->globals = img->nvars ? calloc(img->nvars, sizeof *m->globals) : NULL;
    if ((img->nfuncs && m->funcs == NULL) || (img->nvars && m->globals == NULL)) {
        free(m->funcs);
        free(m->globals);
        free(m);
        return GM_CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (size_t i = 0; i < img->nfuncs; i++) {
        m->funcs[i] = (gm_dfunc){.mod = m, .name = img->funcs[i].name,
                                 .shared_bytes = img->funcs[i].shared_bytes,
                                 .local_bytes = img->funcs[i].local_bytes,
                                 .num_regs = img->funcs[i].num_regs, .max_dynamic_shared = -1,
                                 .carveout = -1};
        img->funcs[i].name = NULL;
    }
    m->nfuncs = img->nfuncs;
    int rc = CU_OK;
    for (size_t i = 0; i < img->nvars; i++) {
        gm_sim_image_var *v = &img->vars[i];
        sim_global *g = &m->globals[m->nglobals++];
        g->name = v->name;
        g->size = v->size;
        v->name = NULL;
        if (v->size == 0)
            continue;
        rc = mem_alloc_locked(ctx, &g->addr, v->size);
        if (rc != CU_OK)
            break;
        sim_alloc *r = reg_find(g->addr);
        r->module = true;
        if (v->init != NULL)
            memcpy(r->mem, v->init, v->size);
        else
            memset(r->mem, 0, v->size); /* static storage starts zeroed */
    }
    /* linked before a failure's cleanup, which unlinks it */
    m->next = S.modules;
    if (S.modules != NULL)
        S.modules->prev = m;
    S.modules = m;
    if (rc != CU_OK) {
        module_free(m);
        return rc;
    }
    *out = m;
    return CU_OK;
}

static int sim_module_load_data(gm_dctx *ctx, gm_dmodule **module, const void *image, size_t size,
                                char *error_log, size_t log_size)
{
    if (module == NULL || image == NULL)
        return GM_CUDA_ERROR_INVALID_VALUE;
    gm_sim_image img;
    int rc = gm_sim_image_parse(image, size, S.arch, &img, error_log, log_size);
    if (rc != CU_OK)
        return rc;
    lock();
    rc = ctx_ok(ctx) ? module_build_locked(ctx, &img, module) : GM_CUDA_ERROR_INVALID_CONTEXT;
    unlock();
    gm_sim_image_free(&img);
    return rc;
}

static int sim_module_unload(gm_dctx *ctx, gm_dmodule *module)
{
    gm_dmodule *m;
    lock();
    int rc = ctx_ok(ctx) ? module_get(ctx, module, &m) : GM_CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CU_OK)
        module_free(m);
    unlock();
    return rc;
}

static int sim_module_get_function(gm_dctx *ctx, gm_dfunc **func, gm_dmodule *module, const char *name)
{
    if (func == NULL || name == NULL)
        return GM_CUDA_ERROR_INVALID_VALUE;
    gm_dmodule *m;
    lock();
    int rc = ctx_ok(ctx) ? module_get(ctx, module, &m) : GM_CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CU_OK) {
        rc = GM_CUDA_ERROR_NOT_FOUND;
        for (size_t i = 0; i < m->nfuncs && rc != CU_OK; i++) {
            if (strcmp(m->funcs[i].name, name) == 0) {
                *func = &m->funcs[i];
                rc = CU_OK;
            }
        }
    }
    unlock();
    return rc;
}

static int sim_module_get_global(gm_dctx *ctx, gm_cu_deviceptr *dptr, size_t *bytes, gm_dmodule *module,
                                 const char *name)
{
    if (name == NULL)
        return GM_CUDA_ERROR_INVALID_VALUE;
    gm_dmodule *m;
    lock();
    int rc = ctx_ok(ctx) ? module_get(ctx, module, &m) : GM_CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CU_OK) {
        rc = GM_CUDA_ERROR_NOT_FOUND;
        for (size_t i = 0; i < m->nglobals && rc != CU_OK; i++) {
            if (m->globals[i].size > 0 && strcmp(m->globals[i].name, name) == 0) {
                if (dptr != NULL)
                    *dptr = m->globals[i].addr;
                if (bytes != NULL)
                    *bytes = m->globals[i].size;
                rc = CU_OK;
            }
        }
    }
    unlock();
    return rc;
}

static int clamp_int(size_t v)
{
    return v > INT32_MAX ? INT32_MAX : (int)v;
}

/* The default dynamic shared memory limit: 48 KiB without an opt-in. */
#define SIM_SMEM_DEFAULT 49152

static int sim_func_get_attribute(gm_dctx *ctx, int *value, int attr, gm_dfunc *func)
{
    if (value == NULL)
        return GM_CUDA_ERROR_INVALID_VALUE;
    gm_dfunc *f;
    lock();
    int rc = ctx_ok(ctx) ? func_get(ctx, func, &f) : GM_CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CU_OK) {
        int cc = S.arch->major * 10 + S.arch->minor;
        switch (attr) {
        case GM_CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = 1024; break;
        case GM_CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *value = clamp_int(f->shared_bytes); break;
        case GM_CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: *value = clamp_int(f->mod->const_bytes); break;
        case GM_CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *value = clamp_int(f->local_bytes); break;
        case GM_CU_FUNC_ATTRIBUTE_NUM_REGS: *value = f->num_regs > 0 ? f->num_regs : 32; break; /* simulated */
        case GM_CU_FUNC_ATTRIBUTE_PTX_VERSION: *value = f->mod->ptx_target ? f->mod->ptx_target : cc; break;
        case GM_CU_FUNC_ATTRIBUTE_BINARY_VERSION: *value = cc; break;
        case GM_CU_FUNC_ATTRIBUTE_CACHE_MODE_CA: *value = 0; break;
        case GM_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
            *value = f->max_dynamic_shared >= 0 ? f->max_dynamic_shared
                     : f->shared_bytes >= SIM_SMEM_DEFAULT ? 0
                                                           : SIM_SMEM_DEFAULT - (int)f->shared_bytes;
            break;
        case GM_CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: *value = f->carveout; break;
        default: rc = GM_CUDA_ERROR_INVALID_VALUE; break;
        }
    }
    unlock();
    return rc;
}

static int sim_func_set_attribute(gm_dctx *ctx, gm_dfunc *func, int attr, int value)
{
    gm_dfunc *f;
    lock();
    int rc = ctx_ok(ctx) ? func_get(ctx, func, &f) : GM_CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CU_OK) {
        if (attr == GM_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES && value >= 0 &&
            (size_t)value + f->shared_bytes <= (size_t)S.arch->smem_optin)
            f->max_dynamic_shared = value;
        else if (attr == GM_CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT && value >= -1 && value <= 100)
            f->carveout = value;
        else
            rc = GM_CUDA_ERROR_INVALID_VALUE;
    }
    unlock();
    return rc;
}

static int sim_occupancy_max_active_blocks(gm_dctx *ctx, int *blocks, gm_dfunc *func, int block_size,
                                           size_t dynamic_smem)
{
    (void)block_size, (void)dynamic_smem;
    if (blocks == NULL)
        return GM_CUDA_ERROR_INVALID_VALUE;
    gm_dfunc *f;
    lock();
    int rc = ctx_ok(ctx) ? func_get(ctx, func, &f) : GM_CUDA_ERROR_INVALID_CONTEXT;
    unlock();
    return rc == CU_OK ? GM_SIM_ERROR_NOT_SIMULATED : rc;
}

static int sim_launch_kernel(gm_dctx *ctx, gm_dfunc *func, const unsigned grid[3],
                             const unsigned block[3], unsigned shared_bytes, gm_dstream *stream,
                             void **params)
{
    (void)func, (void)grid, (void)block, (void)shared_bytes, (void)stream, (void)params;
    lock();
    int rc = ctx_ok(ctx) ? GM_SIM_ERROR_NOT_SIMULATED : GM_CUDA_ERROR_INVALID_CONTEXT;
    unlock();
    return rc;
}

/* ------------------------------------------------------------- loading -- */

/* ------------------------------------------------- pointers and IPC -- */

/* One attribute of a known record r (NULL: an address the driver does not
 * know, which gets the null values).  Booleans are one byte, as the driver
 * writes them. */
static int pointer_attribute(const sim_alloc *r, uint64_t ptr, int attr, void *data)
{
    bool host_side = r != NULL && r->kind != GM_SIM_MEM_DEVICE;
    switch (attr) {
    case GM_CU_POINTER_ATTRIBUTE_CONTEXT: {
        gm_dctx *c = r != NULL ? &S.dev[r->dev] : NULL;
        memcpy(data, &c, sizeof c);
        return CU_OK;
    }
    case GM_CU_POINTER_ATTRIBUTE_MEMORY_TYPE: {
        /* managed memory is device memory to the driver, with IS_MANAGED set */
        unsigned t = r == NULL ? 0
                     : r->kind == GM_SIM_MEM_DEVICE || r->kind == GM_SIM_MEM_MANAGED ? GM_CU_MEMORYTYPE_DEVICE
                                                                                    : GM_CU_MEMORYTYPE_HOST;
        memcpy(data, &t, sizeof t);
        return CU_OK;
    }
    case GM_CU_POINTER_ATTRIBUTE_DEVICE_POINTER: {
        gm_cu_deviceptr p = r != NULL ? ptr : 0; /* every known byte is mapped */
        memcpy(data, &p, sizeof p);
        return CU_OK;
    }
    case GM_CU_POINTER_ATTRIBUTE_HOST_POINTER: {
        void *p = host_side ? (void *)(uintptr_t)ptr : NULL;
        memcpy(data, &p, sizeof p);
        return CU_OK;
    }
    case GM_CU_POINTER_ATTRIBUTE_IS_MANAGED:
        *(bool *)data = r != NULL && r->kind == GM_SIM_MEM_MANAGED;
        return CU_OK;
    case GM_CU_POINTER_ATTRIBUTE_MAPPED:
        *(bool *)data = r != NULL;
        return CU_OK;
    case GM_CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
        *(bool *)data = r != NULL && r->kind == GM_SIM_MEM_DEVICE && !r->module;
        return CU_OK;
    case GM_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: {
        int d = r != NULL ? r->dev : -2;
        memcpy(data, &d, sizeof d);
        return CU_OK;
    }
    case GM_CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: {
        gm_cu_deviceptr p = r != NULL ? r->base : 0;
        memcpy(data, &p, sizeof p);
        return CU_OK;
    }
    case GM_CU_POINTER_ATTRIBUTE_RANGE_SIZE: {
        size_t n = r != NULL ? r->size : 0;
        memcpy(data, &n, sizeof n);
        return CU_OK;
    }
    default:
        return GM_CUDA_ERROR_INVALID_VALUE;
    }
}

static int sim_pointer_get_attributes(unsigned count, const int *attrs, void **data, gm_cu_deviceptr ptr)
{
    if (count == 0 || attrs == NULL || data == NULL)
        return GM_CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < count; i++)
        if (data[i] == NULL)
            return GM_CUDA_ERROR_INVALID_VALUE;
    lock();
    const sim_alloc *r = reg_find(ptr);
    int rc = CU_OK;
    for (unsigned i = 0; i < count && rc == CU_OK; i++)
        rc = pointer_attribute(r, ptr, attrs[i], data[i]);
    unlock();
    return rc;
}

/* The simulator's IPC handle: magic, the exporting process, the allocation. */
#define SIM_IPC_MAGIC "GMSIMIPC"
typedef struct sim_ipc {
    char magic[8];
    uint64_t pid;
    uint64_t base;
    uint64_t size;
    int32_t dev;
} sim_ipc;
_Static_assert(sizeof(sim_ipc) <= sizeof(gm_cu_ipc_mem_handle), "sim_ipc must fit in a CUipcMemHandle");

static int sim_ipc_get_mem_handle(gm_dctx *ctx, gm_cu_ipc_mem_handle *handle, gm_cu_deviceptr ptr)
{
    if (handle == NULL)
        return GM_CUDA_ERROR_INVALID_VALUE;
    lock();
    int rc = ctx_ok(ctx) ? CU_OK : GM_CUDA_ERROR_INVALID_CONTEXT;
    const sim_alloc *r = rc == CU_OK ? reg_find(ptr) : NULL;
    if (rc == CU_OK && (r == NULL || r->kind != GM_SIM_MEM_DEVICE || r->module))
        rc = GM_CUDA_ERROR_INVALID_VALUE; /* only cuMemAlloc memory has IPC handles */
    if (rc == CU_OK) {
        sim_ipc h = {.pid = (uint64_t)getpid(), .base = r->base, .size = r->size, .dev = r->dev};
        memcpy(h.magic, SIM_IPC_MAGIC, sizeof h.magic);
        memset(handle, 0, sizeof *handle);
        memcpy(handle, &h, sizeof h);
    }
    unlock();
    return rc;
}

static int sim_ipc_open_mem_handle(gm_dctx *ctx, gm_cu_deviceptr *ptr, const gm_cu_ipc_mem_handle *handle,
                                   unsigned flags)
{
    if (ptr == NULL || handle == NULL || (flags & ~(unsigned)GM_CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) != 0)
        return GM_CUDA_ERROR_INVALID_VALUE;
    sim_ipc h;
    memcpy(&h, handle, sizeof h);
    lock();
    int rc = ctx_ok(ctx) ? CU_OK : GM_CUDA_ERROR_INVALID_CONTEXT;
    unlock();
    if (rc != CU_OK)
        return rc;
    if (memcmp(h.magic, SIM_IPC_MAGIC, sizeof h.magic) != 0)
        return GM_CUDA_ERROR_INVALID_VALUE;
    if (h.pid == (uint64_t)getpid())
        return GM_CUDA_ERROR_INVALID_CONTEXT; /* what the driver answers in the exporting process */
    return GM_SIM_ERROR_NOT_SIMULATED;        /* another process's memory is out of reach */
}

static int sim_ipc_close_mem_handle(gm_dctx *ctx, gm_cu_deviceptr ptr)
{
    (void)ptr;
    lock();
    int rc = ctx_ok(ctx) ? GM_CUDA_ERROR_INVALID_VALUE : GM_CUDA_ERROR_INVALID_CONTEXT; /* nothing is ever open */
    unlock();
    return rc;
}

static int sim_device_can_access_peer(int dev, int peer, int *can)
{
    if (can == NULL)
        return GM_CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= S.ndev || peer < 0 || peer >= S.ndev)
        return GM_CUDA_ERROR_INVALID_DEVICE;
    *can = dev != peer;
    return CU_OK;
}

static int sim_ctx_enable_peer_access(gm_dctx *ctx, gm_dctx *peer)
{
    lock();
    int rc = ctx_ok(ctx) && ctx_ok(peer) ? CU_OK : GM_CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CU_OK && ctx == peer)
        rc = GM_CUDA_ERROR_INVALID_DEVICE;
    else if (rc == CU_OK && (ctx->peers >> peer->ordinal & 1))
        rc = GM_CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
    else if (rc == CU_OK)
        ctx->peers |= UINT64_C(1) << peer->ordinal;
    unlock();
    return rc;
}

static const gm_driver sim_driver = {
    .name = "sim",
    .driver_get_version = sim_driver_get_version,
    .device_get_count = sim_device_get_count,
    .device_get_name = sim_device_get_name,
    .device_get_attribute = sim_device_get_attribute,
    .device_total_mem = sim_device_total_mem,
    .primary_ctx_retain = sim_primary_ctx_retain,
    .primary_ctx_release = sim_primary_ctx_release,
    .ctx_synchronize = sim_ctx_synchronize,
    .mem_get_info = sim_mem_get_info,
    .mem_alloc = sim_mem_alloc,
    .mem_free = sim_mem_free,
    .mem_alloc_async = sim_mem_alloc_async,
    .mem_free_async = sim_mem_free_async,
    .mem_alloc_managed = sim_mem_alloc_managed,
    .mem_host_alloc = sim_mem_host_alloc,
    .mem_free_host = sim_mem_free_host,
    .mem_host_register = sim_mem_host_register,
    .mem_host_unregister = sim_mem_host_unregister,
    .mem_host_get_device_pointer = sim_mem_host_get_device_pointer,
    .memcpy = sim_memcpy,
    .memcpy_2d = sim_memcpy_2d,
    .memcpy_3d = sim_memcpy_3d,
    .memset = sim_memset,
    .stream_create = sim_stream_create,
    .stream_destroy = sim_stream_destroy,
    .stream_synchronize = sim_stream_synchronize,
    .stream_query = sim_stream_query,
    .stream_wait_event = sim_stream_wait_event,
    .launch_host_func = sim_launch_host_func,
    .event_create = sim_event_create,
    .event_destroy = sim_event_destroy,
    .event_record = sim_event_record,
    .event_query = sim_event_query,
    .event_synchronize = sim_event_synchronize,
    .event_elapsed_time = sim_event_elapsed_time,
    .module_load_data = sim_module_load_data,
    .module_unload = sim_module_unload,
    .module_get_function = sim_module_get_function,
    .module_get_global = sim_module_get_global,
    .func_get_attribute = sim_func_get_attribute,
    .func_set_attribute = sim_func_set_attribute,
    .occupancy_max_active_blocks = sim_occupancy_max_active_blocks,
    .launch_kernel = sim_launch_kernel,
    .pointer_get_attributes = sim_pointer_get_attributes,
    .ipc_get_mem_handle = sim_ipc_get_mem_handle,
    .ipc_open_mem_handle = sim_ipc_open_mem_handle,
    .ipc_close_mem_handle = sim_ipc_close_mem_handle,
    .device_can_access_peer = sim_device_can_access_peer,
    .ctx_enable_peer_access = sim_ctx_enable_peer_access,
};

/* GPUMEM_SIM_BUSY: distinct ordinals below ndev, comma-separated. */
static gpumem_status parse_busy(long ndev, uint64_t *mask)
{
    static const char name[] = "GPUMEM_SIM_BUSY";
    const char *v = gm_env(name);
    *mask = 0;
    for (const char *p = v; p != NULL;) {
        const char *comma = strchr(p, ',');
        size_t n = comma != NULL ? (size_t)(comma - p) : strlen(p);
        char tok[24];
        long ord = -1;
        bool number = n < sizeof tok;
        if (number) {
            memcpy(tok, p, n);
            tok[n] = '\0';
            number = gm_parse_long(tok, &ord);
        }
        if (!number)
            return gm_error(GPUMEM_ERROR_INVALID_ENVIRONMENT,
                            "%s='%s': '%.*s' is not a device ordinal", name, v, (int)n, p);
        if (ord < 0 || ord >= ndev)
            return gm_error(GPUMEM_ERROR_INVALID_ENVIRONMENT,
                            "%s='%s': device %ld does not exist (GPUMEM_SIM_DEVICES=%ld)", name, v,
                            ord, ndev);
        if (*mask >> ord & 1)
            return gm_error(GPUMEM_ERROR_INVALID_ENVIRONMENT, "%s='%s': device %ld is listed twice",
                            name, v, ord);
        *mask |= UINT64_C(1) << ord;
        p = comma != NULL ? comma + 1 : NULL;
    }
    return GPUMEM_OK;
}

static gpumem_status configure(void)
{
    long ndev, delay;
    uint64_t capacity, host_limit, busy;
    gpumem_status st;
    if ((st = gm_env_long("GPUMEM_SIM_DEVICES", 1, GM_SIM_MAX_DEVICES, 1, &ndev, NULL)) != GPUMEM_OK ||
        (st = gm_env_size("GPUMEM_SIM_MEMORY", UINT64_C(1) << 20, UINT64_C(1) << 30, &capacity)) != GPUMEM_OK ||
        (st = gm_env_size("GPUMEM_SIM_HOST_MEMORY", 0, UINT64_C(1) << 30, &host_limit)) != GPUMEM_OK ||
        (st = gm_env_long("GPUMEM_SIM_STREAM_DELAY_US", 0, 10000000, 2000, &delay, NULL)) != GPUMEM_OK ||
        (st = parse_busy(ndev, &busy)) != GPUMEM_OK)
        return st;
    if (capacity > SIZE_MAX || host_limit > SIZE_MAX)
        return gm_error(GPUMEM_ERROR_INVALID_ENVIRONMENT,
                        "GPUMEM_SIM_MEMORY or GPUMEM_SIM_HOST_MEMORY exceeds the address space");
    const char *name = gm_env("GPUMEM_SIM_ARCH");
    const gm_sim_arch *arch = gm_sim_arch_find(name != NULL ? name : "sm_90");
    if (arch == NULL) {
        char known[128];
        gm_sim_arch_names(known, sizeof known);
        return gm_error(GPUMEM_ERROR_INVALID_ENVIRONMENT,
                        "GPUMEM_SIM_ARCH='%s': unknown architecture (known: %s)", name, known);
    }
    long page = sysconf(_SC_PAGESIZE);
    S.page = page > 0 ? (size_t)page : 4096;
    S.ndev = (int)ndev;
    S.capacity = capacity;
    S.host_limit = host_limit;
    S.delay_us = delay;
    S.busy = busy;
    S.arch = arch;
    for (int i = 0; i < S.ndev; i++)
        S.dev[i].ordinal = i;
    return GPUMEM_OK;
}

gpumem_status gm_sim_load(const gm_driver **table)
{
    GM_CHECK_NULL(table);
    gpumem_status st = GPUMEM_OK;
    lock();
    if (!S.loaded && (st = configure()) == GPUMEM_OK)
        S.loaded = true;
    unlock();
    if (st == GPUMEM_OK)
        *table = &sim_driver;
    return st;
}

/* ------------------------------------------------------- test helpers -- */

int gm_sim_pointer_info(uint64_t addr, gm_sim_ptr_info *info)
{
    lock();
    sim_alloc *r = reg_find(addr);
    if (r != NULL)
        *info = (gm_sim_ptr_info){r->kind, r->dev, r->base, r->size, r->flags};
    else
        *info = (gm_sim_ptr_info){.kind = GM_SIM_MEM_NONE, .device = -1};
    unlock();
    return r != NULL ? CU_OK : GM_CUDA_ERROR_INVALID_VALUE;
}

unsigned gm_sim_live_workers(void)
{
    lock();
    unsigned n = S.workers;
    unlock();
    return n;
}

uint64_t gm_sim_host_locked_bytes(void)
{
    lock();
    uint64_t n = S.host_used;
    unlock();
    return n;
}
