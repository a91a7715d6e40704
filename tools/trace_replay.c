/*
 * trace_replay.c - gpumem trace replay: the trace's allocations and frees again, with
 * their sizes, order and streams, on this backend, with one allocator
 * configuration: time per pair, peak in use, peak held, driver calls.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <gpumem.h>

#include "trace_cmd.h"

typedef struct rdev {
    int device;
    gpumem_context *ctx;
    gpumem_pool *pool;
    gpumem_host_pool *pinned, *mapped;
    uint64_t base_used; /* total - free before the replay */
} rdev;

/* The trace's streams, sorted by device and identity; past
 * TRACE_REPLAY_MAX_STREAMS on a device, one replays on the stream of
 * another (use). */
typedef struct rstream {
    int device;
    uint64_t id;
    gpumem_stream *s;
    size_t use; /* the entry whose stream it replays on */
} rstream;

typedef struct replay {
    const tr_trace *t;
    const tm_model *m;
    trace_replay_opts o;
    rdev *dev;
    size_t ndev;
    rstream *st;
    size_t nst;           /* the trace's (device, stream) pairs, stream 0 (none) included */
    size_t ntrace, nstreams; /* the trace's streams, and the streams made for them */
    gpumem_array **arr; /* per allocation of the model */
    const gpumem_dtype *u8;
} replay;

static int replayable(const tm_alloc *a)
{
    return a->bytes != 0 && (a->kind == 0 || a->kind == 2 || a->kind == 3 || a->kind == 4);
}

static rdev *dev_of(replay *r, int device)
{
    for (size_t i = 0; i < r->ndev; i++)
        if (r->dev[i].device == device)
            return &r->dev[i];
    return NULL;
}

static void replay_end(replay *r)
{
    for (size_t i = 0; r->arr != NULL && i < r->m->na; i++)
        if (r->arr[i] != NULL) {
            gpumem_array_release(r->arr[i]);
            r->arr[i] = NULL;
        }
    for (size_t i = 0; i < r->nst; i++)
        if (r->st[i].s != NULL) {
            gpumem_stream_synchronize(r->st[i].s);
            gpumem_stream_destroy(r->st[i].s);
            r->st[i].s = NULL;
        }
    for (size_t i = 0; i < r->ndev; i++) {
        rdev *d = &r->dev[i];
        if (d->ctx != NULL && d->pool != NULL)
            gpumem_context_set_pool(d->ctx, NULL);
        if (d->pool != NULL)
            gpumem_pool_destroy(d->pool);
        if (d->pinned != NULL)
            gpumem_host_pool_destroy(d->pinned);
        if (d->mapped != NULL)
            gpumem_host_pool_destroy(d->mapped);
        d->pool = NULL;
        d->pinned = d->mapped = NULL;
    }
}

const char *const trace_allocator_names[4] = {"driver", "pool", "vmm", "async"};

/* The device pool of --allocator. */
static gpumem_status replay_pool_create(gpumem_context *ctx, int kind, unsigned flags, gpumem_pool **pool)
{
    if (kind == TRACE_REPLAY_POOL)
        return gpumem_pool_create(ctx, flags, pool);
    struct gpumem_pool_props props = GPUMEM_POOL_PROPS_INIT;
    props.source = kind == TRACE_REPLAY_VMM ? GPUMEM_POOL_SOURCE_VIRTUAL : GPUMEM_POOL_SOURCE_ASYNC;
    props.flags = flags;
    gpumem_status st = gpumem_pool_create_with_props(ctx, &props, pool);
    if (st == GPUMEM_OK && kind == TRACE_REPLAY_ASYNC && (st = gpumem_pool_stop_holding(*pool)) != GPUMEM_OK) {
        gpumem_pool_destroy(*pool);
        *pool = NULL;
    }
    return st;
}

/* Contexts, streams and pools for one pass.  0, or 1 with a message. */
static int replay_begin(replay *r)
{
    for (size_t i = 0; i < r->ndev; i++) {
        rdev *d = &r->dev[i];
        if (d->ctx == NULL && gpumem_context_create(d->device, &d->ctx) != GPUMEM_OK) {
            fprintf(stderr, "gpumem trace replay: the trace allocates on device %d: %s\n", d->device,
                    gpumem_last_error());
            return 1;
        }
        if (r->o.pool) {
            if (replay_pool_create(d->ctx, r->o.pool, r->o.pool_flags, &d->pool) != GPUMEM_OK ||
                (r->o.no_hold && gpumem_pool_stop_holding(d->pool) != GPUMEM_OK) ||
                gpumem_context_set_pool(d->ctx, d->pool) != GPUMEM_OK ||
                gpumem_host_pool_create(d->ctx, 0, &d->pinned) != GPUMEM_OK ||
                gpumem_host_pool_create(d->ctx, GPUMEM_HOST_ALLOC_DEVICEMAP, &d->mapped) != GPUMEM_OK ||
                (r->o.no_hold && (gpumem_host_pool_stop_holding(d->pinned) != GPUMEM_OK ||
                                  gpumem_host_pool_stop_holding(d->mapped) != GPUMEM_OK))) {
                fprintf(stderr, "gpumem trace replay: the pools of device %d: %s\n", d->device, gpumem_last_error());
                return 1;
            }
        }
        uint64_t fr = 0, total = 0;
        if (gpumem_memory_info(d->ctx, &fr, &total) == GPUMEM_OK)
            d->base_used = total - fr;
    }
    for (size_t i = 0; i < r->nst; i++) {
        rstream *s = &r->st[i];
        rdev *d = dev_of(r, s->device);
        if (s->id != 0 && s->use == i && d != NULL && gpumem_stream_create(d->ctx, 0, &s->s) != GPUMEM_OK) {
            fprintf(stderr, "gpumem trace replay: a stream on device %d: %s\n", s->device, gpumem_last_error());
            return 1;
        }
    }
    return 0;
}

static int by_stream(const void *a, const void *b)
{
    const rstream *x = a, *y = b;
    if (x->device != y->device)
        return x->device < y->device ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static gpumem_stream *stream_of(replay *r, int device, uint64_t id)
{
    rstream key = {.device = device, .id = id};
    const rstream *s = bsearch(&key, r->st, r->nst, sizeof *r->st, by_stream);
    return s != NULL ? r->st[s->use].s : NULL;
}

/* The streams of the trace's allocations, each (device, identity) once:
 * O(n log n).  Identities past the first TRACE_REPLAY_MAX_STREAMS of a
 * device share their streams, in turn. */
static void plan_streams(replay *r)
{
    if (r->nst > 1)
        qsort(r->st, r->nst, sizeof *r->st, by_stream);
    size_t n = 0;
    for (size_t i = 0; i < r->nst; i++)
        if (n == 0 || by_stream(&r->st[n - 1], &r->st[i]) != 0)
            r->st[n++] = r->st[i];
    r->nst = n;
    size_t first = 0, k = 0; /* the device's first stream with an identity, and its count so far */
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || r->st[i].device != r->st[i - 1].device) {
            first = i;
            k = 0;
        }
        if (r->st[i].id == 0) { /* synchronous: no stream */
            r->st[i].use = i;
            first = i + 1;
            continue;
        }
        r->st[i].use = k < TRACE_REPLAY_MAX_STREAMS ? i : first + k % TRACE_REPLAY_MAX_STREAMS;
        if (r->st[i].use == i)
            r->nstreams++;
        r->ntrace++;
        k++;
    }
}

static gpumem_status replay_alloc(replay *r, size_t i)
{
    const tm_alloc *a = &r->m->a[i];
    rdev *d = dev_of(r, a->device);
    int64_t n = (int64_t)a->bytes;
    gpumem_stream *s = stream_of(r, a->device, a->stream);
    switch (a->kind) {
    case 0: /* device: the context's pool when set */
        return gpumem_device_array(d->ctx, 1, &n, NULL, r->u8, 'C', s, &r->arr[i]);
    case 2:
        return r->o.pool ? gpumem_host_pool_allocate(d->pinned, 1, &n, r->u8, 'C', &r->arr[i])
                         : gpumem_pinned_array(d->ctx, 1, &n, NULL, r->u8, 'C', &r->arr[i]);
    case 3:
        return r->o.pool ? gpumem_host_pool_allocate(d->mapped, 1, &n, r->u8, 'C', &r->arr[i])
                         : gpumem_mapped_array(d->ctx, 1, &n, NULL, r->u8, 'C', NULL, 0, &r->arr[i]);
    default: /* managed: pools do not make it */
        return gpumem_managed_array(d->ctx, 1, &n, NULL, r->u8, 'C', GPUMEM_MANAGED_ATTACH_GLOBAL, &r->arr[i]);
    }
}

/* What the allocators hold now: in use (requested bytes, from the pools'
 * statistics or the replay's own count for driver memory) and held from the
 * driver. */
static void replay_sample(replay *r, uint64_t live_unpooled, uint64_t *in_use, uint64_t *held, uint64_t *idle)
{
    *in_use = *held = *idle = 0;
    for (size_t i = 0; i < r->ndev; i++) {
        rdev *d = &r->dev[i];
        if (r->o.pool) {
            struct gpumem_pool_stats s = {.size = sizeof s};
            if (gpumem_pool_stats(d->pool, &s) == GPUMEM_OK) {
                *in_use += s.active_requested_bytes;
                *held += s.source_bytes; /* a virtual-memory pool's mapped memory, the driver pool's reserved */
                *idle += s.held_bytes;
            }
            gpumem_host_pool *hp[2] = {d->pinned, d->mapped};
            for (int k = 0; k < 2; k++) {
                struct gpumem_pool_stats h = {.size = sizeof h};
                if (gpumem_host_pool_stats(hp[k], &h) == GPUMEM_OK) {
                    *in_use += h.active_requested_bytes;
                    *held += h.active_bytes + h.held_bytes;
                    *idle += h.held_bytes;
                }
            }
        } else {
            uint64_t fr = 0, total = 0;
            if (gpumem_memory_info(d->ctx, &fr, &total) == GPUMEM_OK && total - fr > d->base_used)
                *held += total - fr - d->base_used;
        }
    }
    *in_use += live_unpooled;
}

static const char *const driver_ops[] = {"cuMemAlloc", "cuMemFree", "cuMemHostAlloc", "cuMemFreeHost",
                                         "cuMemAllocManaged", "cuMemCreate", "cuMemRelease", "cuMemMap",
                                         "cuMemUnmap", "cuMemAllocFromPoolAsync", "cuMemFreeAsync"};

static uint64_t driver_calls(void)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < sizeof driver_ops / sizeof *driver_ops; i++) {
        uint64_t c = 0;
        if (gpumem_debug_driver_calls(driver_ops[i], &c) == GPUMEM_OK)
            sum += c;
    }
    return sum;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One pass over the trace's allocations, frees and trims.  sample: after
 * every step, what the allocators hold.  0, or 1 with a message. */
static int replay_pass(replay *r, int sample, uint64_t *pairs, double *seconds, uint64_t *calls, uint64_t *peak_use,
                       uint64_t *peak_held, uint64_t *peak_free, uint64_t *peak_idle)
{
    const tr_trace *t = r->t;
    const tm_model *m = r->m;
    uint64_t live_unpooled = 0, n = 0;
    uint64_t c0 = driver_calls();
    double t0 = now_s();
    for (size_t i = 0; i < t->nev; i++) {
        const tr_event *e = &t->ev[i];
        int32_t w = m->which[i];
        if (w >= 0 && replayable(&m->a[w])) {
            const tm_alloc *a = &m->a[w];
            int unpooled = !r->o.pool || a->kind == 4;
            if (e->type == GM_TE_ALLOC) {
                if (replay_alloc(r, (size_t)w) != GPUMEM_OK) {
                    char b[64];
                    fprintf(stderr, "gpumem trace replay: allocation %zu of the trace (%s of %s memory on device "
                            "%d) failed: %s\n", (size_t)w + 1, tm_bytes(a->bytes, b, sizeof b), tr_kind_name(a->kind),
                            (int)a->device, gpumem_last_error());
                    return 1;
                }
                n++;
                live_unpooled += unpooled ? a->bytes : 0;
            } else if (r->arr[w] != NULL) {
                gpumem_array_release(r->arr[w]);
                r->arr[w] = NULL;
                live_unpooled -= unpooled ? a->bytes : 0;
            }
        } else if (e->type == GM_TE_TRIM && r->o.pool) {
            rdev *d = dev_of(r, e->device);
            if (d != NULL)
                (void)(e->kind == 0 ? gpumem_pool_free_held(d->pool)
                                    : (gpumem_host_pool_free_held(d->pinned), gpumem_host_pool_free_held(d->mapped)));
        } else {
            continue;
        }
        if (sample) {
            uint64_t use, held, idle;
            replay_sample(r, live_unpooled, &use, &held, &idle);
            if (held > *peak_held)
                *peak_held = held;
            if (use > *peak_use) {
                *peak_use = use;
                *peak_idle = idle;
                *peak_free = 0;
                for (size_t k = 0; k < r->ndev; k++) {
                    uint64_t fr = 0, total = 0;
                    if (gpumem_memory_info(r->dev[k].ctx, &fr, &total) == GPUMEM_OK && fr > *peak_free)
                        *peak_free = fr;
                }
            }
        }
    }
    *seconds = now_s() - t0;
    *calls = driver_calls() - c0;
    *pairs = n;
    return 0;
}

int trace_replay(const tr_trace *t, const tm_model *m, trace_replay_opts o)
{
    replay r = {.t = t, .m = m, .o = o, .u8 = gpumem_dtype_builtin(GPUMEM_UINT8)};
    int rc = 1;
    r.arr = calloc(m->na ? m->na : 1, sizeof *r.arr);
    r.dev = calloc(m->na + 1, sizeof *r.dev);
    r.st = calloc(m->na + 1, sizeof *r.st);
    if (r.arr == NULL || r.dev == NULL || r.st == NULL) {
        fprintf(stderr, "gpumem trace replay: out of memory\n");
        goto out;
    }
    uint64_t skipped = 0;
    for (size_t i = 0; i < m->na; i++) {
        const tm_alloc *a = &m->a[i];
        if (!replayable(a)) {
            skipped++;
            continue;
        }
        if (dev_of(&r, a->device) == NULL) {
            /* only this machine's devices: a trace can name 2^32 */
            int count = 0;
            if (gpumem_device_count(&count) != GPUMEM_OK) {
                fprintf(stderr, "gpumem trace replay: %s\n", gpumem_last_error());
                goto out;
            }
            if (a->device < 0 || a->device >= count) {
                fprintf(stderr, "gpumem trace replay: the trace allocates on device %d: this machine has %d "
                        "device%s\n", (int)a->device, count, count == 1 ? "" : "s");
                goto out;
            }
            r.dev[r.ndev++] = (rdev){.device = a->device};
        }
        r.st[r.nst++] = (rstream){a->device, a->stream, NULL, 0};
    }
    plan_streams(&r);
    /* A timed pass, then a pass that samples the allocators after every step. */
    uint64_t pairs = 0, calls = 0, use = 0, held = 0, fr = 0, idle = 0, p2, c2;
    double seconds = 0, s2;
    if (replay_begin(&r) != 0 || replay_pass(&r, 0, &pairs, &seconds, &calls, &use, &held, &fr, &idle) != 0)
        goto out;
    replay_end(&r);
    if (replay_begin(&r) != 0 || replay_pass(&r, 1, &p2, &s2, &c2, &use, &held, &fr, &idle) != 0)
        goto out;
    const char *backend = "?";
    gpumem_backend(&backend);
    char b1[64], b2[64], b3[64];
    printf("replay on the %s backend, allocator %s%s%s\n", backend, trace_allocator_names[o.pool],
           o.pool && (o.pool_flags & GPUMEM_POOL_NO_THREAD_CACHE) ? ", no thread cache" : "",
           o.pool && o.no_hold ? ", not holding" : "");
    printf("  allocations: %llu (%llu of the trace's not replayed: zero bytes, or host or foreign memory)\n",
           (unsigned long long)pairs, (unsigned long long)skipped);
    printf("  streams: %zu of the trace's, replayed on %zu (at most %d a device)\n", r.ntrace, r.nstreams,
           TRACE_REPLAY_MAX_STREAMS);
    printf("  time per pair: %.1f ns (allocation and free)\n", pairs ? seconds * 1e9 / (double)pairs : 0.0);
    printf("  peak in use: %s (%llu bytes)\n", tm_bytes(use, b1, sizeof b1), (unsigned long long)use);
    printf("  peak held: %s (%llu bytes)\n", tm_bytes(held, b1, sizeof b1), (unsigned long long)held);
    printf("  driver calls: %llu (allocations and frees of memory)\n", (unsigned long long)calls);
    printf("  largest free block at the peak: %s (the driver's free memory; the pools held %s idle)\n",
           tm_bytes(fr, b2, sizeof b2), tm_bytes(idle, b3, sizeof b3));
    rc = 0;
out:
    if (r.arr != NULL)
        replay_end(&r);
    for (size_t i = 0; i < r.ndev; i++)
        if (r.dev[i].ctx != NULL)
            gpumem_context_release(r.dev[i].ctx);
    free(r.arr);
    free(r.dev);
    free(r.st);
    return rc;
}
