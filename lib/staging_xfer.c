/*
 * staging_xfer.c - the staging engine's transfers (staging.h): chunks of a
 * transfer run through the lanes of the threads that take part, and the
 * copies between two devices through one lane of each side
 * (staging_impl.h says how the engine is split).
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu_pack.h"
#include "error.h"
#include "staging.h"
#include "staging_impl.h"

/* ---- transfers ------------------------------------------------------------------------------------------ */

/*
 * A transfer (xfer) is a task of the pool.  Its bytes are taken in chunks
 * from one cursor, under the transfer's lock: the threads of the transfer
 * (the caller and the workers that join) each take the next chunk, run it
 * through their own lane, and take the next, with no barrier between
 * chunks.
 *
 * Chunk sizes ramp: the first and the last chunks are small (the slot over
 * the threads, at least RAMP_MIN) and they grow, linearly in their index,
 * to a slot.  When T threads start together on chunks of one size they all
 * fill at once and the link idles until the first is full, then they all
 * wait while the link moves the lot (and a download's last chunks drain
 * while the link idles): with a ramp the first chunk crosses after a small
 * fill, the threads fall out of step, and the link is fed from the start to
 * the end.
 *
 * Segments (gm_stage_segs): the device side is the copy engine's scratch,
 * which the pack kernels fill (a download) or empty (an upload) a scratch
 * buffer at a time.  The calling thread opens the segments in order, at
 * most `ahead` at once (each in its buffer), and closes each once every
 * chunk of it is queued on the stream; chunks never cross a segment, and a
 * thread takes only chunks of open segments (it waits for the caller
 * otherwise).  The caller takes chunks too between its opens and closes.
 *
 * Where the threads poll (gm_workers_spin() > 0, no fault armed: the walks
 * need the same calls each run) and the caller fills (issue 29's strided
 * downloads):
 *   - segment k opens once every chunk of k - 1 is taken (in_order): an
 *     open queues on the stream a wait for its buffer's kernel, and the
 *     chunks of k - 1 taken after it waited behind it, the link idle;
 *   - the caller never sleeps while it may have a segment to open or
 *     close: it polls its slot's event (not the driver's wait) and moves
 *     its chunks in pieces of CALLER_PIECE, advancing between them, and
 *     polls the transfer's events; else the workers that find no open
 *     chunk poll, then sleep, and the copy waits for their wake-up.
 */

/*
 * Where a thread of a transfer may sleep, and what wakes it (issue 29: a
 * copy must never wait for a timeout, nor sleep where a short poll does):
 *   - a parked worker (workers.c, its own condition variable): woken by
 *     gm_task_post, which clears its flag under the pool's lock and
 *     signals it after unlocking, only as many as the task wants beyond
 *     the workers polling the queue;
 *   - the pool's and the transfer's locks: glibc's adaptive mutexes, which
 *     spin a while before they sleep (the holders run a few instructions);
 *     the chunks of a one-segment transfer are taken with no lock at all;
 *   - wait_change (a worker waiting for the caller to open a segment, the
 *     caller for a segment's chunks to be queued, for the last chunk to be
 *     taken, or for a worker that could not have a lane): polls for
 *     gm_workers_spin(), then sleeps on x->cv, signalled under x->mu after
 *     every such change (changed()).  Only a caller with no lane, which
 *     leaves the chunks to the workers (a NUMA node's engine), sleeps in
 *     slices of WAIT_SLICE_NS: workers that stop at process exit signal
 *     nothing;
 *   - the join (gm_task_join): the caller first polls until the workers
 *     have left (END_POLL_SPINS spin times at most), then the join polls
 *     while workers keep leaving the task, then sleeps on the pool's
 *     `idle`, broadcast by the last one to leave;
 *   - slot_wait (cuEventSynchronize of the slot's last transfer) and the
 *     final stream synchronize of a synchronous upload: polled first with
 *     cuEventQuery / cuStreamQuery for gm_workers_spin() (no yield; not
 *     while a fault is armed, GPUMEM_SIM_FAIL), then
 *     the driver's wait, as the context's scheduling flags say (which may
 *     yield in a loop, or sleep until the device's interrupt);
 *     the caller of a transfer in segments polls only (above);
 *   - a caller lane, when all CALLER_LANES are taken: e->lane_back, which
 *     every caller broadcasts as it gives its lane back.
 * No usleep, nanosleep or sched_yield is on the path.
 */

#define SEG_RING 4           /* open segments' records (ahead < SEG_RING) */
/* Uploads of at least this many bytes fill their slots with non-temporal
 * stores (gm_cpu_copy_out, gm_cpu_pack_range_out): the link lags the fill
 * by up to threads x depth slots (48 MiB by default), so a slot's lines
 * leave the cache before the device reads them, and a regular store only
 * adds a read of each line first.  A smaller upload's slots stay in the
 * last-level cache, where the device's reads find them (on the simulator,
 * 4 MiB uploads took 1.5x as long with non-temporal stores).  To be judged
 * on the GPU machine (the 64 MiB pageable rows, bench-handoff 4 MiB): a
 * build with -DGM_STAGE_STREAM_MIN=0 streams every upload, one with
 * -DGM_STAGE_STREAM_MIN=UINT64_MAX none. */
#ifndef GM_STAGE_STREAM_MIN
#define GM_STAGE_STREAM_MIN ((uint64_t)32 << 20)
#endif
#define STREAM_MIN ((uint64_t)(GM_STAGE_STREAM_MIN))
#define RAMP_MIN (64u << 10) /* the smallest chunk of a ramp */
#define WAIT_SLICE_NS 10000000L /* a thread waiting for the transfer looks at the pools' end this often */

typedef struct seg_rec {
    uint64_t off, end;           /* the transfer's bytes [off, end) */
    gm_cu_deviceptr dev;         /* the device address of byte off */
    atomic_uint_fast64_t queued; /* its bytes queued on the stream */
} seg_rec;

typedef struct xfer {
    gm_task task;         /* first: the pool's task is the transfer */
    gm_staging *e;
    gm_stage_op op;
    gm_pack_params pack;  /* op.pack's copy */
    gm_stage_segs segs;   /* op.segs' copy (count 0: one segment, op.dev, open from the start) */
    gm_dstream *ds;
    const char *what;
    uint64_t gen;         /* the settings' generation */
    gpumem_staging_settings cfg;
    size_t chunk;         /* the largest chunk: a slot, or less */
    size_t ramp;          /* the first (and last) chunk of the ramps */
    pthread_mutex_t mu;   /* opened, ring, errors; pos with segments */
    pthread_cond_t cv;    /* events changed */
    atomic_uint events;   /* bumped at each change others may wait for: an open, a segment queued, the end, a failure */
    _Atomic uint64_t pos; /* the next byte to take: under mu with segments, else by compare-and-swap */
    uint64_t nseg, opened; /* segments; those opened */
    uint64_t closed;      /* segments closed (the caller's) */
    bool in_order;        /* segment k opens once every chunk of k - 1 is taken (advance) */
    seg_rec ring[SEG_RING]; /* segment k in ring[k % SEG_RING] while it may be open */
    atomic_bool failed;
    atomic_uint lanes_failed; /* workers that could not have a lane */
    gpumem_status st;     /* the first failure of a chunk */
    gm_error_record rec;  /* its record, from the thread that met it */
    gpumem_status lane_st; /* the first failure to get a lane */
    gm_error_record lane_rec;
} xfer;

static void lane_give(gm_staging *e, lane *l, int worker);

/* Something others may wait for changed (x->mu held). */
static void changed(xfer *x)
{
    atomic_fetch_add_explicit(&x->events, 1, memory_order_release);
    pthread_cond_broadcast(&x->cv);
}

static void fail(xfer *x, gpumem_status st)
{
    pthread_mutex_lock(&x->mu);
    if (x->st == GPUMEM_OK) {
        x->st = st;
        gm_error_save(&x->rec);
    }
    atomic_store_explicit(&x->failed, true, memory_order_release);
    changed(x);
    pthread_mutex_unlock(&x->mu);
}

/* Waits until x->events is no longer seen (polling a while first, as the
 * pool's threads do).  Every change a thread of a transfer waits for is
 * signalled (changed(), under x->mu, after the change), so the wait needs
 * no timeout, but one: a caller that leaves the chunks to the workers
 * (sliced) looks at the pools' end every WAIT_SLICE_NS, as workers that
 * stop at process exit signal nothing. */
static void wait_change(xfer *x, unsigned seen, bool sliced)
{
    long spin = gm_workers_spin();
    if (spin > 0 && gm_workers_poll(&x->events, seen, spin))
        return;
    pthread_mutex_lock(&x->mu);
    if (!sliced) {
        while (atomic_load_explicit(&x->events, memory_order_relaxed) == seen)
            pthread_cond_wait(&x->cv, &x->mu);
    } else {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += WAIT_SLICE_NS;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        while (atomic_load_explicit(&x->events, memory_order_relaxed) == seen &&
               pthread_cond_timedwait(&x->cv, &x->mu, &until) == 0)
            ;
    }
    pthread_mutex_unlock(&x->mu);
}

/* A lane for a thread of x: worker w's own, or a free caller lane (-1),
 * ready for x's settings.  NULL when there is none (*st OK: no caller lane
 * free and the caller need not wait) or it could not be built (*st). */
static lane *lane_take(xfer *x, int worker, bool wait, gpumem_status *st)
{
    gm_staging *e = x->e;
    lane *l = NULL;
    *st = GPUMEM_OK;
    if (worker >= 0) {
        /* its own: no lock (gpumem_clear_context_caches may hold it a moment to empty it) */
        l = atomic_load_explicit(&e->wlane[worker], memory_order_acquire);
        if (l == NULL && (l = calloc(1, sizeof *l)) != NULL)
            atomic_store_explicit(&e->wlane[worker], l, memory_order_release);
        bool idle = false;
        while (l != NULL && !atomic_compare_exchange_weak_explicit(&l->busy, &idle, true, memory_order_acq_rel,
                                                                   memory_order_relaxed))
            idle = false;
    } else {
        pthread_mutex_lock(&e->mu);
        for (;;) {
            for (unsigned i = 0; i < e->nclane && l == NULL; i++) {
                bool idle = false;
                if (atomic_compare_exchange_strong_explicit(&e->clane[i]->busy, &idle, true, memory_order_acq_rel,
                                                            memory_order_relaxed))
                    l = e->clane[i];
            }
            if (l == NULL && e->nclane < CALLER_LANES && (l = calloc(1, sizeof *l)) != NULL) {
                atomic_init(&l->busy, true);
                e->clane[e->nclane++] = l;
            }
            if (l != NULL || !wait)
                break;
            pthread_cond_wait(&e->lane_back, &e->mu);
        }
        pthread_mutex_unlock(&e->mu);
    }
    if (l == NULL) {
        if (worker >= 0 || wait)
            *st = gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", x->what);
        return NULL;
    }
    if (l->dirty || l->gen != x->gen) {
        if (l->dirty && l->gen == x->gen) { /* a failed transfer may still use a slot: wait for it */
            (void)GM_DRV(ctx_synchronize, e->dctx);
            memset(l->used, 0, sizeof l->used);
            l->dirty = false;
        } else {
            *st = gm_staging_lane_build(e, l, &x->cfg, x->gen, x->what);
        }
    }
    if (*st != GPUMEM_OK) {
        lane_give(e, l, worker);
        return NULL;
    }
    return l;
}

static void lane_give(gm_staging *e, lane *l, int worker)
{
    atomic_store_explicit(&l->busy, false, memory_order_release);
    if (worker < 0) { /* a caller may wait for a caller lane */
        pthread_mutex_lock(&e->mu);
        pthread_cond_broadcast(&e->lane_back);
        pthread_mutex_unlock(&e->mu);
    }
}

/* An event or a stream to poll before the driver's wait for it. */
typedef struct drv_poll {
    gm_dctx *dctx;
    gm_devent *ev;     /* NULL: the stream */
    gm_dstream *ds;
} drv_poll;

/* Whether the driver's wait would return at once (done, or failed: the
 * wait says how). */
static bool drv_done(void *arg)
{
    drv_poll *p = arg;
    int rc = p->ev != NULL ? GM_DRV(event_query, p->dctx, p->ev) : GM_DRV(stream_query, p->dctx, p->ds);
    return rc != GM_CUDA_ERROR_NOT_READY;
}

/* Polls p for gm_workers_spin() (no yield) before the driver's wait, which
 * may yield its CPU in a loop and then wait behind what runs there. */
static void drv_poll_first(drv_poll p)
{
    long spin = gm_workers_spin();
    /* not while a driver call is armed to fail (GPUMEM_SIM_FAIL, the fault
     * walks): a walk fails each call in turn, so a run's calls must be the
     * same in every run, and the number of queries depends on timing */
    if (spin > 0 && atomic_load_explicit(&gm_drv_fail_at, memory_order_relaxed) == 0)
        (void)gm_workers_poll_until(drv_done, &p, spin);
}

/* Waits until slot b's last transfer is done. */
static gpumem_status slot_wait(xfer *x, lane *l, unsigned b)
{
    if (!l->used[b])
        return GPUMEM_OK;
    l->used[b] = false;
    drv_poll_first((drv_poll){x->e->dctx, l->ev[b], NULL});
    return gm_drv_check(GM_DRV(event_synchronize, x->e->dctx, l->ev[b]), GM_OP_event_synchronize, x->what);
}

/* Queues the transfer of n bytes between slot b and the device at dev, and
 * the slot's event after it. */
static gpumem_status slot_queue(xfer *x, lane *l, unsigned b, gm_cu_deviceptr dev, size_t n)
{
    gm_cu_deviceptr s = (gm_cu_deviceptr)(uintptr_t)l->slot[b], d = dev;
    if (x->op.dir < 0) {
        s = dev;
        d = (gm_cu_deviceptr)(uintptr_t)l->slot[b];
    }
    gpumem_status st = gm_drv_check(GM_DRV(memcpy, x->e->dctx, d, s, n, x->ds, 1), GM_OP_memcpy, x->what);
    if (st == GPUMEM_OK)
        st = gm_drv_check(GM_DRV(event_record, x->e->dctx, l->ev[b], x->ds), GM_OP_event_record, x->what);
    l->used[b] = st == GPUMEM_OK;
    return st;
}

/* Chunk [off, off + n) between the host side and buf (a slot): the fill of
 * an upload, the drain of a download. */
static void host_side(xfer *x, char *buf, uint64_t off, size_t n)
{
    bool up = x->op.dir > 0;
    if (x->op.pack != NULL) {
        uint64_t u = (uint64_t)x->pack.unit, p = x->op.pack_offset + off;
        if (up && x->op.bytes >= STREAM_MIN) /* the slot is read by the device next, out of memory */
            gm_cpu_pack_range_out(&x->pack, p / u, (p + n) / u, buf);
        else if (up)
            gm_cpu_pack_range(&x->pack, false, p / u, (p + n) / u, buf);
        else
            gm_cpu_pack_range(&x->pack, true, p / u, (p + n) / u, buf);
    } else if (up && x->op.bytes >= STREAM_MIN) {
        gm_cpu_copy_out(buf, x->op.host + off, n); /* the device reads the slot next, out of memory */
    } else if (up) {
        memcpy(buf, x->op.host + off, n);
    } else {
        memcpy(x->op.host + off, buf, n);
    }
}

static bool stop_taking(xfer *x, int worker)
{
    return atomic_load_explicit(&x->failed, memory_order_acquire) || (worker >= 0 && gm_workers_stopping());
}

static uint64_t isqrt(uint64_t v)
{
    uint64_t r = 0;
    for (uint64_t b = (uint64_t)1 << 62; b != 0; b >>= 2) {
        if (v >= r + b) {
            v -= r + b;
            r = (r >> 1) + b;
        } else {
            r >>= 1;
        }
    }
    return r;
}

/* The chunk that starts at byte p (before segments cut it): ramp + the
 * root of 2 x ramp x (bytes to the nearer end), which is ramp x (k + 1)
 * for the k-th chunk from that end, in 4 KiB steps (a multiple of any pack
 * unit), at most x->chunk. */
static uint64_t chunk_at(const xfer *x, uint64_t p)
{
    uint64_t b = x->op.bytes, d = p < b - p ? p : b - p, a = x->ramp;
    if (d >= (uint64_t)x->chunk * x->chunk / (2 * a)) /* past the ramp: no overflow below */
        return x->chunk;
    uint64_t n = (a + isqrt(2 * a * d) + 4095) & ~(uint64_t)4095;
    return n < x->chunk ? n : x->chunk;
}

/* Takes the next chunk of an open segment: 1 with its bytes [*off, *off +
 * *n), its device address and segment; 0 when the next chunk's segment is
 * not open yet; -1 when every chunk was taken. */
static int take(xfer *x, uint64_t *off, size_t *n, gm_cu_deviceptr *dev, uint64_t *seg)
{
    if (x->segs.count == 0) { /* one segment, open from the start: no lock */
        uint64_t p = atomic_load_explicit(&x->pos, memory_order_relaxed), m;
        do {
            if (p >= x->op.bytes)
                return -1;
            m = chunk_at(x, p);
            if (m > x->op.bytes - p)
                m = x->op.bytes - p;
        } while (!atomic_compare_exchange_weak_explicit(&x->pos, &p, p + m, memory_order_relaxed,
                                                        memory_order_relaxed));
        *off = p;
        *n = (size_t)m;
        *dev = x->ring[0].dev + p;
        *seg = 0;
        if (p + m >= x->op.bytes) { /* the caller may wait for it */
            pthread_mutex_lock(&x->mu);
            changed(x);
            pthread_mutex_unlock(&x->mu);
        }
        return 1;
    }
    int r = 0;
    pthread_mutex_lock(&x->mu);
    uint64_t pos = atomic_load_explicit(&x->pos, memory_order_relaxed);
    if (pos >= x->op.bytes) {
        r = -1;
    } else {
        for (uint64_t k = x->opened > SEG_RING ? x->opened - SEG_RING : 0; k < x->opened; k++) {
            seg_rec *g = &x->ring[k % SEG_RING];
            if (pos < g->off || pos >= g->end)
                continue;
            uint64_t m = chunk_at(x, pos);
            if (m > g->end - pos)
                m = g->end - pos;
            *off = pos;
            *n = (size_t)m;
            *dev = g->dev + (pos - g->off);
            *seg = k;
            atomic_store_explicit(&x->pos, pos + m, memory_order_relaxed);
            if (pos + m >= g->end)
                changed(x); /* the caller may wait for it: the next open, the end */
            r = 1;
            break;
        }
    }
    pthread_mutex_unlock(&x->mu);
    return r;
}

/* n bytes of segment k were queued. */
static void queued(xfer *x, uint64_t k, size_t n)
{
    if (x->segs.count == 0)
        return;
    seg_rec *g = &x->ring[k % SEG_RING];
    uint64_t q = atomic_fetch_add_explicit(&g->queued, n, memory_order_acq_rel) + n;
    if (q == g->end - g->off) { /* the caller closes it */
        pthread_mutex_lock(&x->mu);
        changed(x);
        pthread_mutex_unlock(&x->mu);
    }
}

/* One thread's lane in a transfer, and a download's chunks queued in it. */
typedef struct runner {
    lane *l;
    int worker;
    unsigned head, count;
    uint64_t off[MAX_DEPTH];
    size_t n[MAX_DEPTH];
    unsigned b[MAX_DEPTH];
} runner;

enum { STEP_DID, STEP_WAIT, STEP_DONE };

static void advance(xfer *x);

/* The caller of a transfer in segments, where threads poll (see the top). */
#define CALLER_PIECE (256u << 10)

static _Thread_local unsigned long caller_advances, early_opens; /* the test hooks (staging.h) */

unsigned long gm_staging_caller_advances(void)
{
    return caller_advances;
}

unsigned long gm_staging_early_opens(void)
{
    return early_opens;
}

static bool caller_polls(const xfer *x, const runner *r)
{
    return r->worker < 0 && x->segs.count > 0 && gm_workers_spin() > 0 &&
           atomic_load_explicit(&gm_drv_fail_at, memory_order_relaxed) == 0;
}

typedef struct caller_slot {
    xfer *x;
    lane *l;
    unsigned b;
} caller_slot;

/* Whether the caller's poll of slot b may end: its event is done (or
 * failed: slot_wait says how), the transfer failed, or nothing is left to
 * open or close. */
static bool caller_slot_done(void *arg)
{
    caller_slot *c = arg;
    xfer *x = c->x;
    advance(x);
    caller_advances++;
    if (atomic_load_explicit(&x->failed, memory_order_acquire) || x->closed == x->nseg)
        return true;
    return GM_DRV(event_query, x->e->dctx, c->l->ev[c->b]) != GM_CUDA_ERROR_NOT_READY;
}

/* slot_wait for r's thread: the caller of a transfer with segments polls
 * first, advancing the segments (above). */
static gpumem_status runner_slot_wait(xfer *x, runner *r, unsigned b)
{
    if (r->l->used[b] && caller_polls(x, r)) {
        caller_slot c = {x, r->l, b};
        while (!gm_workers_poll_until(caller_slot_done, &c, gm_workers_spin()))
            ;
    }
    return slot_wait(x, r->l, b);
}

/* host_side for r's thread: the caller of a transfer with segments in
 * pieces, advancing the segments between them (above). */
static void runner_host_side(xfer *x, runner *r, char *buf, uint64_t off, size_t n)
{
    if (n <= CALLER_PIECE || !caller_polls(x, r)) {
        host_side(x, buf, off, n);
        return;
    }
    /* pieces of whole pack units (a unit larger than a piece: one unit) */
    uint64_t u = x->op.pack != NULL ? (uint64_t)x->pack.unit : 1, piece = CALLER_PIECE > u ? CALLER_PIECE / u * u : u;
    for (uint64_t done = 0; done < n;) {
        uint64_t m = n - done < piece ? n - done : piece;
        host_side(x, buf + done, off + done, (size_t)m);
        done += m;
        if (done < n) {
            advance(x);
            caller_advances++;
        }
    }
}

static int step_failed(xfer *x, runner *r, gpumem_status st)
{
    r->l->dirty = true;
    fail(x, st);
    return STEP_DONE;
}

/* One step of a thread in x: an upload fills and queues a chunk; a
 * download queues a chunk into a free slot, else drains its oldest.
 * STEP_WAIT: nothing to do until the caller opens a segment. */
static int step(xfer *x, runner *r)
{
    lane *l = r->l;
    bool stop = stop_taking(x, r->worker);
    uint64_t off = 0, k = 0;
    size_t n = 0;
    gm_cu_deviceptr dev = 0;
    gpumem_status st;
    if (x->op.dir > 0) {
        int got = stop ? -1 : take(x, &off, &n, &dev, &k);
        if (got <= 0)
            return got == 0 ? STEP_WAIT : STEP_DONE;
        unsigned b = l->next;
        l->next = (b + 1) % l->nslots;
        if ((st = runner_slot_wait(x, r, b)) != GPUMEM_OK)
            return step_failed(x, r, st);
        runner_host_side(x, r, l->slot[b], off, n);
        if ((st = slot_queue(x, l, b, dev, n)) != GPUMEM_OK)
            return step_failed(x, r, st);
        queued(x, k, n);
        return STEP_DID;
    }
    int got = -1;
    if (!stop && r->count < l->nslots && (got = take(x, &off, &n, &dev, &k)) == 1) {
        unsigned b = l->next;
        l->next = (b + 1) % l->nslots;
        if ((st = slot_wait(x, l, b)) != GPUMEM_OK || (st = slot_queue(x, l, b, dev, n)) != GPUMEM_OK)
            return step_failed(x, r, st);
        queued(x, k, n);
        unsigned q = (r->head + r->count++) % l->nslots;
        r->off[q] = off;
        r->n[q] = n;
        r->b[q] = b;
        return STEP_DID;
    }
    if (r->count == 0)
        return got == 0 ? STEP_WAIT : STEP_DONE;
    unsigned q = r->head;
    r->head = (r->head + 1) % l->nslots;
    r->count--;
    if ((st = runner_slot_wait(x, r, r->b[q])) != GPUMEM_OK)
        return step_failed(x, r, st);
    if (!atomic_load_explicit(&x->failed, memory_order_acquire))
        runner_host_side(x, r, l->slot[r->b[q]], r->off[q], r->n[q]);
    return STEP_DID;
}

/* The task: a worker's share of x, through its lane. */
static void xfer_run(gm_task *t, int worker)
{
    xfer *x = (xfer *)t;
    if (stop_taking(x, worker) || atomic_load_explicit(&x->pos, memory_order_relaxed) >= x->op.bytes)
        return;
    gpumem_status st;
    runner r = {.worker = worker};
    /* a lane that cannot be built may be worked around (other threads take
     * the chunks): its failure is kept aside, given only if it is not */
    gm_error_suspend();
    r.l = lane_take(x, worker, false, &st);
    if (r.l == NULL) {
        pthread_mutex_lock(&x->mu);
        if (x->lane_st == GPUMEM_OK && st != GPUMEM_OK) {
            x->lane_st = st;
            gm_error_save(&x->lane_rec);
        }
        atomic_fetch_add_explicit(&x->lanes_failed, 1, memory_order_relaxed);
        changed(x); /* the caller takes the chunks this worker would have */
        pthread_mutex_unlock(&x->mu);
    }
    gm_error_resume(GPUMEM_OK);
    if (r.l == NULL)
        return;
    for (;;) {
        unsigned seen = atomic_load_explicit(&x->events, memory_order_acquire);
        int s = step(x, &r);
        if (s == STEP_DONE)
            break;
        if (s == STEP_WAIT)
            wait_change(x, seen, false); /* for the caller's next open */
    }
    lane_give(x->e, r.l, worker);
}

/* The caller's part of a transfer with segments: closes the segments whose
 * chunks are all queued, and opens the next ones. */
static void advance(xfer *x)
{
    const gm_stage_segs *g = &x->segs;
    while (g->count > 0 && !atomic_load_explicit(&x->failed, memory_order_acquire)) {
        gpumem_status st;
        if (x->closed < x->opened) {
            seg_rec *c = &x->ring[x->closed % SEG_RING];
            if (atomic_load_explicit(&c->queued, memory_order_acquire) == c->end - c->off) {
                if ((st = g->close(g->arg, x->closed)) != GPUMEM_OK) {
                    fail(x, st);
                    return;
                }
                x->closed++;
                continue;
            }
        }
        if (x->opened < x->nseg && x->opened < x->closed + g->ahead &&
            (!x->in_order || x->opened == 0 ||
             atomic_load_explicit(&x->pos, memory_order_relaxed) >= x->ring[(x->opened - 1) % SEG_RING].end)) {
            uint64_t k = x->opened, off = 0, bytes = 0, want = k > 0 ? x->ring[(k - 1) % SEG_RING].end : 0;
            gm_cu_deviceptr dev = 0;
            if ((st = g->open(g->arg, k, &off, &bytes, &dev)) == GPUMEM_OK &&
                (off != want || bytes == 0 || off + bytes > x->op.bytes || (k + 1 == x->nseg) != (off + bytes == x->op.bytes)))
                st = gm_error(GPUMEM_ERROR_INTERNAL, "%s: staged segment %llu is bytes %llu..%llu, not from %llu", x->what,
                              (unsigned long long)k, (unsigned long long)off, (unsigned long long)(off + bytes),
                              (unsigned long long)want);
            if (st != GPUMEM_OK) {
                fail(x, st);
                return;
            }
            if (k > 0 && atomic_load_explicit(&x->pos, memory_order_relaxed) < want)
                early_opens++;
            pthread_mutex_lock(&x->mu);
            seg_rec *r = &x->ring[k % SEG_RING];
            r->off = off;
            r->end = off + bytes;
            r->dev = dev;
            atomic_store_explicit(&r->queued, 0, memory_order_relaxed);
            x->opened++;
            changed(x);
            pthread_mutex_unlock(&x->mu);
            continue;
        }
        return;
    }
}

#define END_POLL_SPINS 10 /* 1 ms at the default spin: the last chunks are small (the ramp); not long, as a
                            * caller polling here takes a CPU that other copies' threads may want */

/* Whether every worker left task t. */
static bool workers_left(void *arg)
{
    return atomic_load_explicit(&((gm_task *)arg)->active, memory_order_acquire) == 0;
}

/* The threads a task may use (the caller included), with the pool grown to
 * them. */
static unsigned engine_threads(gm_staging *e, unsigned threads)
{
    unsigned want = e->callers_fill ? threads - 1 : threads;
    unsigned have = gm_workers_grow(e->workers, want);
    if (have > want)
        have = want;
    return e->callers_fill ? have + 1 : have > 0 ? have : 1;
}

/* Counts the chunks of x up to limit. */
static uint64_t chunks_upto(const xfer *x, uint64_t limit)
{
    uint64_t n = 0;
    for (uint64_t p = 0; p < x->op.bytes && n < limit; n++)
        p += chunk_at(x, p);
    return n;
}

gpumem_status gm_staging_run(gm_staging *e, const gm_stage_op *op, gm_dstream *ds, int async, const char *what)
{
    if (op->bytes == 0)
        return GPUMEM_OK;
    if (op->pack != NULL && ((op->pack_offset | op->bytes) % (uint64_t)op->pack->unit != 0 ||
                             op->pack_offset + op->bytes > op->pack->rows * op->pack->cols * (uint64_t)op->pack->unit))
        return gm_error(GPUMEM_ERROR_INTERNAL, "%s: a staged pack of %llu bytes from %llu is not whole units of %d",
                        what, (unsigned long long)op->bytes, (unsigned long long)op->pack_offset, op->pack->unit);
    if (op->segs != NULL && (op->segs->count == 0 || op->segs->ahead == 0 || op->segs->ahead >= SEG_RING))
        return gm_error(GPUMEM_ERROR_INTERNAL, "%s: staged segments: %llu, %u ahead", what,
                        (unsigned long long)op->segs->count, op->segs->ahead);
    const snapshot *snap = gm_staging_snapshot();
    gpumem_status st = gm_staging_snapshot_status(snap);
    if (st != GPUMEM_OK)
        return gm_error_prefix(st, what);
    xfer *x = calloc(1, sizeof *x);
    if (x == NULL)
        return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", what);
    x->task = GM_TASK_INIT(xfer_run);
    x->e = e;
    x->op = *op;
    x->ds = ds;
    x->what = what;
    x->gen = snap->gen;
    x->cfg = snap->s;
    if (op->pack != NULL)
        x->pack = *op->pack;
    if (op->segs != NULL) {
        x->segs = *op->segs;
        x->nseg = op->segs->count;
        x->in_order = e->callers_fill && gm_workers_spin() > 0 &&
                      atomic_load_explicit(&gm_drv_fail_at, memory_order_relaxed) == 0;
    } else {
        x->nseg = x->opened = 1;
        x->ring[0].off = 0;
        x->ring[0].end = op->bytes;
        x->ring[0].dev = op->dev;
    }
    unsigned threads = op->threads != 0 && op->threads < x->cfg.threads ? op->threads : x->cfg.threads;
    threads = engine_threads(e, threads);
    size_t c = x->cfg.chunk_bytes;
    if (op->chunk != 0 && op->chunk < c)
        c = op->chunk;
    x->chunk = c & ~(size_t)4095 ? c & ~(size_t)4095 : 4096;
    size_t a = (x->chunk / threads) & ~(size_t)4095;
    x->ramp = a < RAMP_MIN ? (RAMP_MIN < x->chunk ? RAMP_MIN : x->chunk) : a;
    gm_spin_mutex_init(&x->mu);
    pthread_cond_init(&x->cv, NULL);
    /* workers: one per chunk beyond the caller's, at most threads in all */
    uint64_t helpers = chunks_upto(x, threads + 1) - (e->callers_fill ? 1 : 0);
    unsigned cap = e->callers_fill ? threads - 1 : threads;
    if (helpers > cap)
        helpers = cap;
    gm_task_post(e->workers, &x->task, (unsigned)helpers);

    /* the caller: opens and closes segments, and takes chunks when it fills */
    runner r = {.worker = -1};
    bool fills = e->callers_fill || helpers == 0;
    for (;;) {
        unsigned seen = atomic_load_explicit(&x->events, memory_order_acquire);
        advance(x);
        bool failed = atomic_load_explicit(&x->failed, memory_order_acquire);
        if (!fills && (atomic_load_explicit(&x->lanes_failed, memory_order_relaxed) > 0 || gm_workers_stopping()))
            fills = true; /* the workers cannot do it all */
        if (fills && r.l == NULL && !failed) {
            gpumem_status lst;
            r.l = lane_take(x, -1, helpers == 0 || !e->callers_fill, &lst);
            if (r.l == NULL && lst != GPUMEM_OK) {
                fail(x, lst);
                continue;
            }
        }
        int s = r.l != NULL ? step(x, &r) : STEP_WAIT;
        if (s == STEP_DID)
            continue;
        bool taken = atomic_load_explicit(&x->pos, memory_order_relaxed) >= x->op.bytes;
        bool closed = x->segs.count == 0 || x->closed == x->nseg;
        if ((failed || (taken && closed)) && s != STEP_DID)
            break;
        if (x->in_order && r.l != NULL && x->opened < x->nseg) { /* it opens the next: no sleep (in_order) */
            while (!gm_workers_poll(&x->events, seen, gm_workers_spin()) && !gm_workers_stopping())
                ;
            if (!gm_workers_stopping())
                continue;
        }
        wait_change(x, seen, r.l == NULL || gm_workers_stopping()); /* no lane: the workers move the chunks */
    }
    if (r.l != NULL)
        lane_give(e, r.l, -1);
    /* polled for the workers' last chunks: the join sleeps when one ends a
     * spin time after the one before, and its wake-up is the copy's tail */
    long spin = gm_workers_spin();
    if (spin > 0 && atomic_load_explicit(&x->task.active, memory_order_acquire) > 0)
        (void)gm_workers_poll_until(workers_left, &x->task, END_POLL_SPINS * spin);
    gm_task_join(e->workers, &x->task);
    if (x->st != GPUMEM_OK)
        st = gm_error_restore(&x->rec);
    else if (atomic_load_explicit(&x->pos, memory_order_relaxed) < x->op.bytes)
        st = x->lane_st != GPUMEM_OK ? gm_error_restore(&x->lane_rec)
                                     : gm_error(GPUMEM_ERROR_INTERNAL, "%s: the staging engine left chunks", what);
    pthread_cond_destroy(&x->cv);
    pthread_mutex_destroy(&x->mu);
    free(x);
    if (st == GPUMEM_OK && op->dir > 0 && !async) {
        drv_poll_first((drv_poll){e->dctx, NULL, ds});
        st = gm_drv_check(GM_DRV(stream_synchronize, e->dctx, ds), GM_OP_stream_synchronize, what);
    }
    return st;
}

gpumem_status gm_staging_upload(gm_staging *e, gm_cu_deviceptr dst, const void *src, size_t bytes, gm_dstream *ds,
                                int async, const char *what)
{
    gm_stage_op op = {.dir = 1, .dev = dst, .host = (char *)(uintptr_t)src, .bytes = bytes};
    return gm_staging_run(e, &op, ds, async, what);
}

gpumem_status gm_staging_download(gm_staging *e, void *dst, gm_cu_deviceptr src, size_t bytes, gm_dstream *ds,
                                  const char *what)
{
    gm_stage_op op = {.dir = -1, .dev = src, .host = dst, .bytes = bytes};
    return gm_staging_run(e, &op, ds, 0, what);
}

/* ---- copies between two devices (staging.h) ------------------------------------------------------- */

typedef struct peer_task {
    gm_task task;       /* first: the pool's task */
    xfer src, dst;      /* for lane_take: each side's engine, the settings, what */
    gm_stage_ring_fn fn;
    void *arg;
    bool ran;
    gpumem_status st;
    gm_error_record rec; /* its failure, from the worker that met it */
} peer_task;

/* The slots' and events' last uses done: they may be used again. */
static gpumem_status lane_idle(xfer *x, lane *l)
{
    gpumem_status st = GPUMEM_OK;
    for (unsigned i = 0; i < l->nslots && st == GPUMEM_OK; i++)
        st = slot_wait(x, l, i);
    return st;
}

static void peer_task_run(gm_task *t, int worker)
{
    peer_task *p = (peer_task *)t;
    if (p->ran)
        return;
    p->ran = true;
    gpumem_status st;
    lane *ls = lane_take(&p->src, worker, true, &st), *ld = NULL;
    if (ls != NULL && (ld = lane_take(&p->dst, -1, true, &st)) != NULL && (st = lane_idle(&p->src, ls)) == GPUMEM_OK)
        st = lane_idle(&p->dst, ld);
    if (ls != NULL && ld != NULL && st == GPUMEM_OK) {
        _Static_assert(MAX_DEPTH <= GM_STAGE_RING_MAX, "a ring holds a lane's slots");
        gm_stage_ring r = {.n = ls->nslots < ld->nslots ? ls->nslots : ld->nslots, .bytes = ls->slot_bytes};
        for (unsigned i = 0; i < r.n; i++) {
            r.slot[i] = ls->slot[i];
            r.down[i] = ls->ev[i];
            r.up[i] = ld->ev[i];
        }
        st = p->fn(p->arg, &r);
    }
    if (st != GPUMEM_OK)
        gm_error_save(&p->rec);
    if (st != GPUMEM_OK && ld != NULL) {
        /* fn waited for what it queued, but a wait may have failed: both
         * contexts finish before the slots and events are used again */
        (void)GM_DRV(ctx_synchronize, p->src.e->dctx);
        (void)GM_DRV(ctx_synchronize, p->dst.e->dctx);
        memset(ls->used, 0, sizeof ls->used);
        memset(ld->used, 0, sizeof ld->used);
    }
    p->st = st;
    if (ld != NULL)
        lane_give(p->dst.e, ld, -1);
    if (ls != NULL)
        lane_give(p->src.e, ls, worker);
}

gpumem_status gm_staging_peer_run(gm_staging *src, gm_staging *dst, gm_stage_ring_fn fn, void *arg,
                                  const char *what)
{
    const snapshot *snap = gm_staging_snapshot();
    gpumem_status st = gm_staging_snapshot_status(snap);
    if (st != GPUMEM_OK)
        return gm_error_prefix(st, what);
    peer_task p = {.task = GM_TASK_INIT(peer_task_run), .fn = fn, .arg = arg};
    p.src = (xfer){.e = src, .what = what, .gen = snap->gen, .cfg = snap->s};
    p.dst = (xfer){.e = dst, .what = what, .gen = snap->gen, .cfg = snap->s};
    if (!src->callers_fill && gm_workers_grow(src->workers, 1) > 0) { /* on a worker of the node */
        gm_task_post(src->workers, &p.task, 1);
        gm_task_wait(src->workers, &p.task);
    }
    if (!p.ran) /* no node, no worker, or the pool stopped */
        peer_task_run(&p.task, -1);
    return p.st == GPUMEM_OK ? GPUMEM_OK : gm_error_restore(&p.rec);
}
