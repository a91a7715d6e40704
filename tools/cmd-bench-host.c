/*
 * cmd-bench-host.c - gpumem bench: what the host can do, measured in the
 * same run as the copies, and copies from several threads at once.
 *
 * The ceiling of a pageable copy is the host's, not the link's: the CPU
 * must read or write every pageable byte, and move it through pinned
 * memory.  Group "host", at 1, 2, 4, ... threads and at N (the CPUs):
 *   - "pageable read": each thread sums its own slice of a pageable buffer;
 *   - "memcpy pageable": each thread copies its slice to another buffer;
 *   - "pageable to pinned slot, engine busy" (h2d) and "pinned slot to
 *     pageable, engine busy" (d2h): each thread copies its slice through
 *     its own 2 MiB pinned slot (the staging engine's default; it stays in
 *     the core's cache) while the copy engine moves a pinned buffer to or
 *     from the device on a stream, as during a staged copy.
 *   - "h[:, ::2] to pinned slot" and "pinned slot to h[:, ::2]", useful
 *     bytes, engine busy: the same with every other float32 of the slice
 *     gathered into the slot (scattered from it), the work of a strided
 *     host side; the bytes counted are the useful half.
 * The best slot figure of each direction is the ceiling every pageable
 * figure of the run is judged against, and the best gather (scatter)
 * figure the ceiling of a strided host side (cmd-bench.c prints the
 * percentage).
 *
 * Group "concurrent": 2, 4 and 8 threads copying at once, each its own
 * arrays (64 MiB, --quick 1 MiB), synchronous copies, pinned then pageable,
 * both ways: the bandwidth of all of them together (bytes of every thread
 * over the time the slowest took).  Sizes that do not fit the device's or
 * the page-locked limit are skipped with a note.
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gpumem.h>

#include "cmd-bench.h"

#define SLOT (2u << 20)
#define MAX_THREADS 64

static void skipped(bench_io *io, const char *what)
{
    bench_note(io, "skipped: %s: %s", what, gpumem_last_error());
}

/* Threads wait at a gate until all of them started (or some could not:
 * then they leave). */
typedef struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int open, abort;
} gate;

#define GATE_INIT {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0}

/* Waits at g; nonzero when the threads must leave. */
static int gate_wait(gate *g)
{
    pthread_mutex_lock(&g->mu);
    while (!g->open)
        pthread_cond_wait(&g->cv, &g->mu);
    int abort = g->abort;
    pthread_mutex_unlock(&g->mu);
    return abort;
}

static void gate_open(gate *g, int abort)
{
    pthread_mutex_lock(&g->mu);
    g->open = 1;
    g->abort = abort;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

/* ---- the host ceiling --------------------------------------------------------------------------- */

typedef enum { READ, MEMCPY, TO_SLOT, FROM_SLOT, GATHER_TO_SLOT, SCATTER_FROM_SLOT, HOST_KINDS } host_kind;

typedef struct host_job {
    host_kind kind;
    unsigned char *src, *dst; /* the thread's slices (dst: another buffer or its slot) */
    size_t bytes;
    gate *start;
    uint64_t sink;
} host_job;

static void *host_thread(void *arg)
{
    host_job *j = arg;
    if (gate_wait(j->start))
        return NULL;
    switch (j->kind) {
    case READ: {
        const uint64_t *p = (const uint64_t *)(const void *)j->src;
        uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        size_t n = j->bytes / 8;
        for (size_t i = 0; i + 4 <= n; i += 4) {
            s0 += p[i];
            s1 += p[i + 1];
            s2 += p[i + 2];
            s3 += p[i + 3];
        }
        j->sink = s0 + s1 + s2 + s3;
        break;
    }
    case MEMCPY: memcpy(j->dst, j->src, j->bytes); break;
    case TO_SLOT:
        for (size_t off = 0; off < j->bytes; off += SLOT)
            memcpy(j->dst, j->src + off, j->bytes - off < SLOT ? j->bytes - off : SLOT);
        break;
    case FROM_SLOT:
        for (size_t off = 0; off < j->bytes; off += SLOT)
            memcpy(j->src + off, j->dst, j->bytes - off < SLOT ? j->bytes - off : SLOT);
        break;
    case GATHER_TO_SLOT: /* every other float32 of the slice, packed: h[:, ::2] into a slot */
    case SCATTER_FROM_SLOT: {
        uint32_t *h = (uint32_t *)(void *)j->src, *slot = (uint32_t *)(void *)j->dst;
        size_t n = j->bytes / 8, per = SLOT / 4; /* useful elements; a slot's */
        for (size_t e0 = 0; e0 < n; e0 += per) {
            size_t m = n - e0 < per ? n - e0 : per;
            if (j->kind == GATHER_TO_SLOT)
                for (size_t i = 0; i < m; i++)
                    slot[i] = h[2 * (e0 + i)];
            else
                for (size_t i = 0; i < m; i++)
                    h[2 * (e0 + i)] = slot[i];
        }
        break;
    }
    default: break;
    }
    return NULL;
}

/* The seconds for t threads to do kind over total bytes (reps runs);
 * -1 when threads cannot start. */
static int host_run(bench_times *out, host_kind kind, unsigned t, unsigned char *src, unsigned char *dst, unsigned char *slots,
                       size_t total, int reps)
{
    double times[16];
    int n = reps < 1 ? 1 : reps > 16 ? 16 : reps;
    size_t per = total / t / 64 * 64;
    for (int r = 0; r < n; r++) {
        host_job jobs[MAX_THREADS];
        pthread_t tid[MAX_THREADS];
        gate start = GATE_INIT;
        unsigned started = 0;
        for (unsigned i = 0; i < t; i++) {
            jobs[i] = (host_job){kind, src + i * per, kind == MEMCPY ? dst + i * per : slots + (size_t)i * SLOT, per,
                                 &start, 0};
            if (pthread_create(&tid[i], NULL, host_thread, &jobs[i]) != 0)
                break;
            started++;
        }
        gate_open(&start, started < t);
        double t0 = bench_now_s();
        for (unsigned i = 0; i < started; i++)
            pthread_join(tid[i], NULL);
        times[r] = bench_now_s() - t0;
        if (started < t)
            return -1;
    }
    *out = bench_times_of(times, n);
    return 0;
}

/* The copy engine kept busy: a pinned buffer to (or from) the device on a
 * stream, again and again, until stop. */
typedef struct engine {
    gpumem_array *pinned, *dev;
    gpumem_stream *stream;
    int down;
    atomic_int stop;
    pthread_t tid;
    int running;
} engine;

static void *engine_thread(void *arg)
{
    engine *e = arg;
    while (!atomic_load(&e->stop))
        if ((e->down ? gpumem_array_copy(e->pinned, e->dev, e->stream) : gpumem_array_copy(e->dev, e->pinned, e->stream)) !=
                GPUMEM_OK ||
            gpumem_stream_synchronize(e->stream) != GPUMEM_OK)
            break;
    return NULL;
}

static void engine_start(engine *e, int down)
{
    e->down = down;
    atomic_store(&e->stop, 0);
    e->running = e->pinned != NULL && e->dev != NULL && e->stream != NULL &&
                 pthread_create(&e->tid, NULL, engine_thread, e) == 0;
}

static void engine_stop(engine *e)
{
    atomic_store(&e->stop, 1);
    if (e->running)
        pthread_join(e->tid, NULL);
    e->running = 0;
}

int bench_host(bench_io *io, gpumem_context *ctx, int quick, int reps, double ceiling[BENCH_CEILINGS])
{
    double *h2d = &ceiling[BENCH_H2D], *d2h = &ceiling[BENCH_D2H];
    for (int i = 0; i < BENCH_CEILINGS; i++)
        ceiling[i] = 0;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned maxt = cpus < 1 ? 1 : cpus > MAX_THREADS ? MAX_THREADS : (unsigned)cpus;
    size_t total = quick ? (8u << 20) : (512u << 20);
    unsigned char *src = malloc(total), *dst = malloc(total);
    if (src == NULL || dst == NULL) {
        free(src);
        free(dst);
        io->note(io, "skipped: the host rows: out of host memory");
        return 0;
    }
    memset(src, 1, total); /* every page touched */
    memset(dst, 2, total);
    const gpumem_dtype *u8 = gpumem_dtype_builtin(GPUMEM_UINT8);
    int64_t nslots = (int64_t)maxt * SLOT, ne = quick ? (1 << 20) : (64 << 20);
    gpumem_array *slots = NULL;
    engine e = {0};
    gpumem_status st = gpumem_pinned_array(ctx, 1, &nslots, NULL, u8, 'C', &slots);
    if (st != GPUMEM_OK) {
        if (!bench_oom(st)) {
            bench_error("", "%s", gpumem_last_error());
            free(src);
            free(dst);
            return 1;
        }
        skipped(io, "the pinned slots of the host rows");
    }
    if (slots != NULL) {
        st = gpumem_pinned_array(ctx, 1, &ne, NULL, u8, 'C', &e.pinned);
        if (st == GPUMEM_OK)
            st = gpumem_device_array(ctx, 1, &ne, NULL, u8, 'C', NULL, &e.dev);
        if (st == GPUMEM_OK)
            st = gpumem_stream_create(ctx, GPUMEM_STREAM_NON_BLOCKING, &e.stream);
        if (st != GPUMEM_OK)
            skipped(io, "the copy engine beside the slot rows (the slots are measured alone)");
    }
    void *sp = NULL;
    if (slots != NULL)
        gpumem_array_host_pointer(slots, &sp);
    if (sp != NULL)
        memset(sp, 3, (size_t)nslots);
    static const char *const names[HOST_KINDS] = {
        "pageable read", "memcpy pageable", "pageable to pinned slot, engine busy",
        "pinned slot to pageable, engine busy", "h[:, ::2] to pinned slot, useful bytes, engine busy",
        "pinned slot to h[:, ::2], useful bytes, engine busy"};
    int rc = 0;
    for (int k = READ; k < HOST_KINDS && !rc; k++) {
        if (k >= TO_SLOT && sp == NULL)
            break;
        int down = k == FROM_SLOT || k == SCATTER_FROM_SLOT;
        if (k >= TO_SLOT)
            engine_start(&e, down);
        for (unsigned t = 1; t <= maxt && !rc; t = t * 2 > maxt && t < maxt ? maxt : t * 2) {
            char name[128];
            snprintf(name, sizeof name, "%s, %u thread%s", names[k], t, t > 1 ? "s" : "");
            io->progress(io, name);
            bench_times tm;
            if (host_run(&tm, (host_kind)k, t, src, dst, sp, total, reps) != 0) {
                io->note(io, "skipped: the host rows: threads could not start");
                break;
            }
            size_t bytes = total / t / 64 * 64 * t;
            if (k >= GATHER_TO_SLOT) /* the useful bytes: half of those read or written */
                bytes /= 2;
            io->row(io, "host", name, e.running || k < TO_SLOT ? "cpu" : "cpu, engine idle", bytes, &tm, (int)t, -1,
                    -1);
            double gbs = bench_gbs(bytes, tm.median);
            int which = k == TO_SLOT ? BENCH_H2D : k == FROM_SLOT ? BENCH_D2H : k == GATHER_TO_SLOT ? BENCH_H2D_STRIDED
                      : k == SCATTER_FROM_SLOT ? BENCH_D2H_STRIDED : -1;
            if (which >= 0 && gbs > ceiling[which])
                ceiling[which] = gbs;
        }
        if (k >= TO_SLOT)
            engine_stop(&e);
    }
    if (*h2d > 0 && *d2h > 0)
        bench_note(io, "host ceiling of pageable copies: h2d %.2f GB/s, d2h %.2f GB/s (the best slot rows)", *h2d,
                   *d2h);
    else
        io->note(io, "host ceiling of pageable copies: not measured (no pinned slots)");
    if (ceiling[BENCH_H2D_STRIDED] > 0 && ceiling[BENCH_D2H_STRIDED] > 0)
        bench_note(io, "host ceiling of a strided host side h[:, ::2] (useful bytes): h2d %.2f GB/s, d2h %.2f GB/s",
                   ceiling[BENCH_H2D_STRIDED], ceiling[BENCH_D2H_STRIDED]);
    gpumem_stream_destroy(e.stream);
    gpumem_array_release(e.pinned);
    gpumem_array_release(e.dev);
    gpumem_array_release(slots);
    free(src);
    free(dst);
    return rc;
}

/* ---- several threads at once ---------------------------------------------------------------------- */

typedef struct conc_job {
    gpumem_array *host, *dev;
    int down, reps;
    gate *go;
    pthread_barrier_t *start, *round_end;
    int bad;
} conc_job;

static void *conc_thread(void *arg)
{
    conc_job *j = arg;
    if (gate_wait(j->go))
        return NULL;
    for (int r = 0; r < j->reps; r++) {
        pthread_barrier_wait(j->start);
        if (!j->bad)
            j->bad = (j->down ? gpumem_array_copy(j->host, j->dev, NULL) : gpumem_array_copy(j->dev, j->host, NULL)) !=
                     GPUMEM_OK;
        pthread_barrier_wait(j->round_end);
    }
    return NULL;
}

/* Median seconds of reps rounds in which t threads each copy once (the
 * round ends with the slowest); < 0 on failure. */
static int conc_run(bench_times *out, conc_job *jobs, unsigned t, int down, int reps)
{
    pthread_t tid[8];
    pthread_barrier_t start, end;
    gate go = GATE_INIT;
    pthread_barrier_init(&start, NULL, t + 1);
    pthread_barrier_init(&end, NULL, t + 1);
    unsigned started = 0;
    for (unsigned i = 0; i < t; i++) {
        jobs[i].down = down;
        jobs[i].reps = reps + 1; /* a warm-up round first */
        jobs[i].go = &go;
        jobs[i].start = &start;
        jobs[i].round_end = &end;
        jobs[i].bad = 0;
        if (pthread_create(&tid[i], NULL, conc_thread, &jobs[i]) != 0)
            break;
        started++;
    }
    gate_open(&go, started < t);
    if (started < t) {
        for (unsigned i = 0; i < started; i++)
            pthread_join(tid[i], NULL);
        pthread_barrier_destroy(&start);
        pthread_barrier_destroy(&end);
        return -1;
    }
    double times[64];
    for (int r = 0; r < reps + 1; r++) {
        pthread_barrier_wait(&start);
        double t0 = bench_now_s();
        pthread_barrier_wait(&end);
        if (r > 0)
            times[r - 1] = bench_now_s() - t0;
    }
    int bad = 0;
    for (unsigned i = 0; i < t; i++) {
        pthread_join(tid[i], NULL);
        bad |= jobs[i].bad;
    }
    pthread_barrier_destroy(&start);
    pthread_barrier_destroy(&end);
    if (bad)
        return -1;
    *out = bench_times_of(times, reps);
    return 0;
}

int bench_concurrent(bench_io *io, gpumem_context *ctx, int quick, int reps, double h2d_ceiling,
                     double d2h_ceiling)
{
    static const unsigned counts[] = {2, 4, 8};
    int64_t n = quick ? (1 << 20) : (64 << 20);
    const gpumem_dtype *u8 = gpumem_dtype_builtin(GPUMEM_UINT8);
    if (reps > 64)
        reps = 64;
    int rc = 0;
    for (size_t c = 0; c < 3 && !rc; c++) {
        unsigned t = counts[c];
        conc_job jobs[8] = {{0}};
        void *mem[8] = {NULL};
        double pinned_gbs[2] = {0, 0};
        for (int pinned = 1; pinned >= 0 && !rc; pinned--) {
            gpumem_status st = GPUMEM_OK;
            for (unsigned i = 0; i < t && st == GPUMEM_OK; i++) {
                if (jobs[i].dev == NULL)
                    st = gpumem_device_array(ctx, 1, &n, NULL, u8, 'C', NULL, &jobs[i].dev);
                if (st != GPUMEM_OK)
                    break;
                if (pinned) {
                    st = gpumem_pinned_array(ctx, 1, &n, NULL, u8, 'C', &jobs[i].host);
                } else if ((mem[i] = malloc((size_t)n)) == NULL) {
                    st = GPUMEM_ERROR_HOST_OUT_OF_MEMORY;
                } else {
                    memset(mem[i], (int)i, (size_t)n);
                    st = gpumem_host_array_wrap(mem[i], 1, &n, NULL, u8, &jobs[i].host);
                }
            }
            char name[128];
            snprintf(name, sizeof name, "%u threads, %lld MiB %s each", t, (long long)(n >> 20),
                     pinned ? "pinned" : "pageable");
            if (st != GPUMEM_OK) {
                if (!bench_oom(st)) {
                    bench_error("", "%s: %s", name, gpumem_last_error());
                    rc = 1;
                } else {
                    skipped(io, name);
                }
            }
            for (int down = 0; down < 2 && st == GPUMEM_OK && !rc; down++) {
                char row[160];
                snprintf(row, sizeof row, "%s %s", down ? "d2h" : "h2d", name);
                io->progress(io, row);
                bench_times tm;
                if (conc_run(&tm, jobs, t, down, reps) != 0) {
                    bench_error("\n", "%s: a copy failed", row);
                    rc = 1;
                    break;
                }
                uint64_t bytes = (uint64_t)n * t;
                double gbs = bench_gbs(bytes, tm.median), ceiling = down ? d2h_ceiling : h2d_ceiling;
                if (pinned)
                    pinned_gbs[down] = gbs;
                io->row(io, "concurrent", row, pinned ? "pinned" : "pageable", bytes, &tm, (int)t,
                        pinned || pinned_gbs[down] <= 0 ? -1 : 100 * gbs / pinned_gbs[down],
                        pinned || ceiling <= 0 ? -1 : 100 * gbs / ceiling);
            }
            for (unsigned i = 0; i < t; i++) {
                gpumem_array_release(jobs[i].host);
                jobs[i].host = NULL;
                free(mem[i]);
                mem[i] = NULL;
            }
        }
        for (unsigned i = 0; i < t; i++)
            gpumem_array_release(jobs[i].dev);
    }
    return rc;
}
