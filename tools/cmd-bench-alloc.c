/*
 * cmd-bench-alloc.c - the allocation rows of gpumem bench: nanoseconds per
 * allocate+free pair (per thread) and the total rate, at 1, 2, 4 and 8
 * threads, for
 *   - a device pool (gpumem_pool_allocate + gpumem_allocation_free);
 *   - arrays on the context's pool (gpumem_device_array + release), also
 *     while a trace records (gpumem_trace_start into a temporary file);
 *   - a page-locked pool (gpumem_host_pool_allocate_bytes + free);
 *   - memoize hits (one call, not a pair), with a note that tells the
 *     library's cost from the machine's: how much of the wall time the
 *     threads ran, the hit in cycles of the thread's own clock (timed
 *     beside it), the CPU time the process's other threads (the copies'
 *     parked workers, say) took meanwhile, and whether threads moved
 *     between CPUs or shared a core;
 *   - the driver's own allocators as the baseline: cuMemAlloc + cuMemFree
 *     and cuMemAllocAsync + cuMemFreeAsync (each thread on its own stream),
 *     called through libcuda.so.1 in the device's primary context (only
 *     when the library runs on the cuda backend).
 * and the registration row (group "register"): page-locking fresh memory
 * through a host pool of the registered source on the device's NUMA node
 * (parallel first touch, one cuMemHostRegister) against one serial
 * cuMemHostRegister of the same size.
 * Every block is 4 KiB.  bench/bench-pool has more cases (the shared store
 * alone, 4 MiB blocks) and runs on the simulator's driver table too.
 */
#include "config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <gpumem.h>

#include "cmd-bench.h"

#define BLOCK 4096

/* The driver entry points of the baseline. */
static struct {
    int ok;
    void *primary; /* CUcontext */
    int (*ctx_set_current)(void *);
    int (*mem_alloc)(unsigned long long *, size_t);
    int (*mem_free)(unsigned long long);
    int (*mem_alloc_async)(unsigned long long *, size_t, void *);
    int (*mem_free_async)(unsigned long long, void *);
    int (*stream_create)(void **, unsigned);
    int (*stream_synchronize)(void *);
    int (*stream_destroy)(void *);
} drv;

static void driver_open(int device)
{
    void *h = bench_driver();
    if (h == NULL)
        return;
    drv.ctx_set_current = (int (*)(void *))dlsym(h, "cuCtxSetCurrent");
    drv.mem_alloc = (int (*)(unsigned long long *, size_t))dlsym(h, "cuMemAlloc_v2");
    drv.mem_free = (int (*)(unsigned long long))dlsym(h, "cuMemFree_v2");
    drv.mem_alloc_async = (int (*)(unsigned long long *, size_t, void *))dlsym(h, "cuMemAllocAsync");
    drv.mem_free_async = (int (*)(unsigned long long, void *))dlsym(h, "cuMemFreeAsync");
    drv.stream_create = (int (*)(void **, unsigned))dlsym(h, "cuStreamCreate");
    drv.stream_synchronize = (int (*)(void *))dlsym(h, "cuStreamSynchronize");
    drv.stream_destroy = (int (*)(void *))dlsym(h, "cuStreamDestroy_v2");
    drv.ok = drv.ctx_set_current != NULL && drv.mem_alloc != NULL && drv.mem_free != NULL &&
             drv.mem_alloc_async != NULL && drv.mem_free_async != NULL && drv.stream_create != NULL &&
             drv.stream_synchronize != NULL && drv.stream_destroy != NULL &&
             bench_driver_primary(h, device, &drv.primary) == 0;
}

typedef enum { POOL, ARRAY, HOST_POOL, MEMO, DRIVER, DRIVER_ASYNC, ARRAY_TRACED, POOL_VMM } kind;

static const struct {
    const char *name;
    kind k;
} cases[] = {
    {"pool 4 KiB", POOL},
    {"pool 4 KiB, virtual memory", POOL_VMM},         /* GPUMEM_POOL_SOURCE_VIRTUAL: the same fast path */
    {"array 4 KiB on the context's pool", ARRAY},
    {"array 4 KiB on the context's pool, traced", ARRAY_TRACED}, /* a gpumem_trace_start trace records */
    {"page-locked pool 4 KiB", HOST_POOL},
    {"memoize hit", MEMO},
    {"cuMemAlloc+cuMemFree 4 KiB", DRIVER},
    {"cuMemAllocAsync+cuMemFreeAsync 4 KiB", DRIVER_ASYNC},
};

/* One thread's: on cache lines of its own, as the threads write theirs
 * while the others run (adjacent ones shared a line, and every thread's
 * pair wrote it: the rows measured that sharing, not the library). */
typedef struct worker {
    _Alignas(64) kind k;
    gpumem_context *ctx;
    gpumem_pool *pool;
    gpumem_host_pool *host_pool;
    struct gate *gate;
    double seconds;
    void *stream; /* DRIVER_ASYNC: the thread's own driver stream */
    uint64_t pairs;
    double elapsed;
    double loop_cpu;  /* MEMO: the thread's CPU time in its timed loop, seconds */
    double cpu;       /* MEMO: its CPU time from the gate to its end */
    double mul_ns;    /* MEMO: one dependent multiply on it after the loop */
    int cpu_first, cpu_last; /* MEMO: the CPU it ran on when its loop began and ended */
    int bad;
} worker;

/* Starts the timed loops of all threads together, after their warm-ups. */
typedef struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int ready, go;
} gate;

static void gate_pass(gate *g)
{
    pthread_mutex_lock(&g->mu);
    g->ready++;
    pthread_cond_broadcast(&g->cv);
    while (!g->go)
        pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
}

/* Opens the gate once `threads` are at it. */
static void gate_open(gate *g, int threads)
{
    pthread_mutex_lock(&g->mu);
    while (g->ready < threads)
        pthread_cond_wait(&g->cv, &g->mu);
    g->go = 1;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

static gpumem_status memo_create(gpumem_context *c, const void *key, size_t key_size, void *user, void **value)
{
    (void)c, (void)key, (void)key_size, (void)user;
    *value = &drv;
    return GPUMEM_OK;
}

static double cpu_s(clockid_t clock)
{
    struct timespec t;
    clock_gettime(clock, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* x * k, kept as one multiply: the empty asm stops the compiler from
 * folding a chain of them into one. */
static inline uint64_t mul_step(uint64_t x, uint64_t k)
{
    x *= k;
    __asm__ volatile("" : "+r"(x));
    return x;
}

/* The time of one 64-bit multiply that waits for the one before, on this
 * thread now, in nanoseconds (the best of five runs of 2^20): a measure of
 * the core's clock, which a row's nanoseconds depend on as much as on the
 * library.  It takes 3 cycles on the x86-64 cores of the last decade; the
 * note's cycles and GHz assume that. */
static double mul_latency_ns(void)
{
    static volatile uint64_t seed = UINT64_C(0x9e3779b97f4a7c15);
    uint64_t x = seed, k = seed | 1;
    double best = 0;
    for (int r = 0; r < 5; r++) {
        double t0 = bench_now_s();
        for (int i = 0; i < (1 << 20) / 8; i++) {
            x = mul_step(mul_step(mul_step(mul_step(x, k), k), k), k);
            x = mul_step(mul_step(mul_step(mul_step(x, k), k), k), k);
        }
        double ns = (bench_now_s() - t0) * 1e9 / (1 << 20);
        if (r == 0 || ns < best)
            best = ns;
    }
    seed = x;
    return best;
}

/* The physical core of a CPU as package * 65536 + core id (sysfs), or -1. */
static long core_of(int cpu)
{
    long id[2] = {-1, -1};
    static const char *const names[2] = {"physical_package_id", "core_id"};
    for (int i = 0; i < 2 && cpu >= 0; i++) {
        char path[96];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/%s", cpu, names[i]);
        FILE *f = fopen(path, "r");
        if (f == NULL || fscanf(f, "%ld", &id[i]) != 1)
            id[i] = -1;
        if (f != NULL)
            fclose(f);
    }
    return id[0] < 0 || id[1] < 0 ? -1 : id[0] * 65536 + id[1];
}

/* One pair; 0 on success. */
static int pair(worker *w)
{
    gpumem_allocation *a = NULL;
    switch (w->k) {
    case POOL:
    case POOL_VMM:
        return gpumem_pool_allocate(w->pool, BLOCK, NULL, &a) != GPUMEM_OK || gpumem_allocation_free(a, NULL) != GPUMEM_OK;
    case HOST_POOL:
        return gpumem_host_pool_allocate_bytes(w->host_pool, BLOCK, &a) != GPUMEM_OK ||
               gpumem_allocation_free(a, NULL) != GPUMEM_OK;
    case ARRAY:
    case ARRAY_TRACED: {
        int64_t n = BLOCK;
        gpumem_array *arr = NULL;
        return gpumem_device_array(w->ctx, 1, &n, NULL, gpumem_dtype_builtin(GPUMEM_UINT8), 'C', NULL, &arr) !=
                   GPUMEM_OK ||
               gpumem_array_release(arr) != GPUMEM_OK;
    }
    case MEMO: {
        static const uint64_t key = 42;
        void *v = NULL;
        return gpumem_memoize(w->ctx, &key, sizeof key, memo_create, NULL, NULL, &v) != GPUMEM_OK;
    }
    case DRIVER: {
        unsigned long long d = 0;
        return drv.mem_alloc(&d, BLOCK) != 0 || drv.mem_free(d) != 0;
    }
    case DRIVER_ASYNC: {
        unsigned long long d = 0;
        return drv.mem_alloc_async(&d, BLOCK, w->stream) != 0 || drv.mem_free_async(d, w->stream) != 0;
    }
    }
    return 1;
}

static void *run(void *arg)
{
    worker *w = arg;
    if (w->k == DRIVER || w->k == DRIVER_ASYNC)
        w->bad = drv.ctx_set_current(drv.primary) != 0 ||
                 (w->k == DRIVER_ASYNC && drv.stream_create(&w->stream, 1 /* non-blocking */) != 0);
    for (int i = 0; i < 100 && !w->bad; i++)
        w->bad = pair(w);
    gate_pass(w->gate);
    double cpu0 = w->k == MEMO ? cpu_s(CLOCK_THREAD_CPUTIME_ID) : 0;
    w->cpu_first = w->k == MEMO ? sched_getcpu() : -1;
    int batch = w->k == DRIVER || w->k == DRIVER_ASYNC ? 20 : 1000;
    uint64_t n = 0;
    double t0 = bench_now_s(), t = t0;
    int bad = w->bad; /* in a register, not the shared array's line */
    while (!bad && t - t0 < w->seconds) {
        if (w->k == MEMO) { /* the call alone, no dispatch per call: a hit is a few nanoseconds */
            static const uint64_t key = 42;
            gpumem_context *ctx = w->ctx;
            for (int i = 0; i < batch; i++) {
                void *v = NULL;
                bad |= gpumem_memoize(ctx, &key, sizeof key, memo_create, NULL, NULL, &v) != GPUMEM_OK;
            }
        } else {
            for (int i = 0; i < batch && !bad; i++)
                bad = pair(w);
        }
        n += (uint64_t)batch;
        t = bench_now_s();
    }
    w->bad = bad;
    w->pairs = n;
    w->elapsed = t - t0;
    if (w->k == MEMO) {
        w->loop_cpu = cpu_s(CLOCK_THREAD_CPUTIME_ID) - cpu0;
        w->cpu_last = sched_getcpu();
        w->mul_ns = mul_latency_ns();
        w->cpu = cpu_s(CLOCK_THREAD_CPUTIME_ID) - cpu0;
    }
    if (w->stream != NULL) {
        drv.stream_synchronize(w->stream);
        drv.stream_destroy(w->stream);
    }
    return NULL;
}

/* A trace recording into a new temporary file, named in path; or, when one
 * records already (GPUMEM_TRACE), that one, and path empty. */
static int trace_begin(char *path, size_t size)
{
    const char *dir = getenv("TMPDIR") != NULL && getenv("TMPDIR")[0] ? getenv("TMPDIR") : "/tmp";
    snprintf(path, size, "%s/gpumem-bench-XXXXXX", dir);
    int fd = mkstemp(path);
    if (fd < 0)
        return 1;
    close(fd);
    gpumem_status st = gpumem_trace_start(path, 0);
    if (st != GPUMEM_OK) {
        unlink(path);
        path[0] = '\0';
        return st != GPUMEM_ERROR_INVALID_STATE;
    }
    return 0;
}

/* One case on `threads` threads: its row.  0 on success. */
static int measure(bench_io *io, gpumem_context *ctx, int c, int threads, double seconds)
{
    worker w[8];
    pthread_t th[8];
    gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
    gpumem_pool *pool = NULL;
    gpumem_host_pool *host_pool = NULL;
    kind k = cases[c].k == ARRAY_TRACED ? ARRAY : cases[c].k == POOL_VMM ? POOL : cases[c].k;
    char trace[64] = "";
    if ((k == POOL || k == ARRAY) && cases[c].k != POOL_VMM && gpumem_pool_create(ctx, 0, &pool) != GPUMEM_OK)
        return 1;
    if (cases[c].k == POOL_VMM) {
        struct gpumem_pool_props props = GPUMEM_POOL_PROPS_INIT;
        props.source = GPUMEM_POOL_SOURCE_VIRTUAL;
        if (gpumem_pool_create_with_props(ctx, &props, &pool) != GPUMEM_OK)
            return 1;
    }
    if (k == HOST_POOL && gpumem_host_pool_create(ctx, 0, &host_pool) != GPUMEM_OK)
        return 1;
    if (cases[c].k == ARRAY_TRACED && trace_begin(trace, sizeof trace) != 0) {
        gpumem_pool_destroy(pool);
        return 1;
    }
    if (k == ARRAY)
        gpumem_context_set_pool(ctx, pool);
    int started = 0;
    for (int i = 0; i < threads; i++) {
        w[i] = (worker){.k = k, .ctx = ctx, .pool = pool, .host_pool = host_pool, .gate = &g, .seconds = seconds};
        if (pthread_create(&th[i], NULL, run, &w[i]) != 0)
            break;
        started++;
    }
    double proc0 = cpu_s(CLOCK_PROCESS_CPUTIME_ID), wall0 = bench_now_s();
    gate_open(&g, started);
    int bad = started < threads;
    double ns = 0, longest = 0, threads_cpu = 0, ran = 0, cpu_ns = 0, mul_ns = 0;
    uint64_t total = 0;
    for (int i = 0; i < started; i++) {
        pthread_join(th[i], NULL);
        bad |= w[i].bad;
        ns += w[i].pairs ? w[i].elapsed * 1e9 / (double)w[i].pairs : 0;
        total += w[i].pairs;
        if (w[i].elapsed > longest)
            longest = w[i].elapsed;
        threads_cpu += w[i].cpu;
        ran += w[i].elapsed > 0 ? w[i].loop_cpu / w[i].elapsed : 0;
        cpu_ns += w[i].pairs ? w[i].loop_cpu * 1e9 / (double)w[i].pairs : 0;
        mul_ns += w[i].mul_ns;
    }
    double others_cpu = cpu_s(CLOCK_PROCESS_CPUTIME_ID) - proc0 - threads_cpu, wall = bench_now_s() - wall0;
    if (k == ARRAY)
        gpumem_context_set_pool(ctx, NULL);
    if (trace[0] && (gpumem_trace_stop() != GPUMEM_OK || unlink(trace) != 0))
        bad = 1;
    gpumem_pool_destroy(pool);
    gpumem_host_pool_destroy(host_pool);
    if (bad)
        return 1;
    char name[96];
    snprintf(name, sizeof name, "%s, %d thread%s", cases[c].name, threads, threads > 1 ? "s" : "");
    io->alloc_result(io, name, k == DRIVER || k == DRIVER_ASYNC ? "driver" : "gpumem", threads, ns / threads * 1e-9,
                     longest > 0 ? (double)total / longest : 0);
    if (k == MEMO && started > 0) {
        /* where the threads ran: moved between CPUs, or two on one core
         * (hyperthreads share a core's issue slots) */
        int moved = 0, shared = 0;
        long core[8];
        for (int i = 0; i < started; i++) {
            moved += w[i].cpu_first != w[i].cpu_last;
            core[i] = core_of(w[i].cpu_last);
            for (int j = 0; j < i; j++)
                shared += core[i] >= 0 && core[i] == core[j];
        }
        /* what the nanoseconds are made of: the share of the wall time the
         * threads ran, the library's cycles while they ran, the core's
         * clock, and the CPU the process's other threads took meanwhile
         * (workers still spinning after the copies would show there) */
        mul_ns /= started;
        cpu_ns /= started;
        bench_note(io, "%s: %.1f ns a hit of wall time, of which the threads ran %.0f%%: %.1f ns a hit of their CPU "
                   "time, %.1f cycles of their clock (a dependent multiply took %.3f ns: %.2f GHz at 3 cycles a "
                   "multiply); the process's other threads took %.1f ms of CPU in the row's %.0f ms; %d of %d "
                   "threads ended on another CPU than they began on; %d pairs of threads ended on one core (one "
                   "CPU, or two hyperthreads of a core)",
                   name, ns / threads, 100 * ran / started, cpu_ns, mul_ns > 0 ? 3 * cpu_ns / mul_ns : 0, mul_ns,
                   mul_ns > 0 ? 3 / mul_ns : 0, others_cpu > 0 ? others_cpu * 1e3 : 0, wall * 1e3, moved, started,
                   shared);
    }
    return 0;
}

/* ---- registration speed: group "register" ---- */

/* One run: bytes of fresh, untouched host memory page-locked and given
 * back, either by a host pool of the registered source on the device's
 * NUMA node (mmap, mbind, touched in parallel on the node's workers, one
 * cuMemHostRegister; freed and trimmed: cuMemHostUnregister, munmap) or
 * by one serial cuMemHostRegister of an anonymous mapping (gpumem_pinned
 * of an array over it, then gpumem_unpinned and munmap). */
typedef struct reg_case {
    gpumem_context *ctx;
    gpumem_host_pool *pool; /* NULL: the serial registration */
    size_t bytes;
    int touch; /* serial: the caller touches every page first, on one thread */
} reg_case;

static int reg_run(void *arg)
{
    reg_case *r = arg;
    if (r->pool != NULL) {
        gpumem_allocation *a = NULL;
        return gpumem_host_pool_allocate_bytes(r->pool, r->bytes, &a) != GPUMEM_OK ||
               gpumem_allocation_free(a, NULL) != GPUMEM_OK || gpumem_host_pool_trim(r->pool, 0) != GPUMEM_OK;
    }
    void *p = mmap(NULL, r->bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return 1;
    long page = sysconf(_SC_PAGESIZE);
    for (size_t o = 0; r->touch && o < r->bytes; o += page > 0 ? (size_t)page : 4096)
        ((volatile char *)p)[o] = 0;
    gpumem_array *arr = NULL;
    gpumem_registration *reg = NULL;
    int bad = gpumem_host_array_wrap(p, 1, (int64_t[]){(int64_t)r->bytes}, NULL, gpumem_dtype_builtin(GPUMEM_UINT8),
                                     &arr) != GPUMEM_OK ||
              gpumem_pinned(r->ctx, &arr, 1, &reg) != GPUMEM_OK || gpumem_unpinned(&reg) != GPUMEM_OK;
    gpumem_array_release(arr);
    munmap(p, r->bytes);
    return bad;
}

static int bench_register(bench_io *io, gpumem_context *ctx, int quick)
{
    struct gpumem_pool_props props = GPUMEM_POOL_PROPS_INIT;
    props.source = GPUMEM_POOL_SOURCE_REGISTERED;
    props.flags = GPUMEM_POOL_NO_THREAD_CACHE;
    reg_case r = {.ctx = ctx, .bytes = (size_t)(quick ? 32 : 1024) << 20};
    if (gpumem_host_pool_create_with_props(ctx, &props, &r.pool) != GPUMEM_OK) {
        bench_note(io, "skipped: registration on the device's NUMA node: %s", gpumem_last_error());
        props.numa_node = GPUMEM_NUMA_NODE_NONE;
        if (gpumem_host_pool_create_with_props(ctx, &props, &r.pool) != GPUMEM_OK)
            return 1;
    }
    bench_times t[3];
    int reps = quick ? 3 : 5;
    io->progress(io, "registration");
    int bad = bench_time(reps, reg_run, &r, &t[0]) != 0;
    gpumem_status st = gpumem_last_status();
    gpumem_host_pool_destroy(r.pool);
    if (bad && bench_oom(st)) {
        bench_note(io, "skipped: registration of %zu MiB: out of page-locked memory", r.bytes >> 20);
        return 0;
    }
    r.pool = NULL;
    bad = bad || bench_time(reps, reg_run, &r, &t[1]) != 0;
    r.touch = 1;
    bad = bad || bench_time(reps, reg_run, &r, &t[2]) != 0;
    if (bad && bench_oom(gpumem_last_status())) {
        bench_note(io, "skipped: registration of %zu MiB: %s", r.bytes >> 20, gpumem_last_error());
        return 0;
    }
    if (bad)
        return 1;
    io->row(io, "register", props.numa_node == GPUMEM_NUMA_NODE_NONE ? "pool, no node: parallel touch + 1 register"
                                                                     : "pool, device's node: parallel touch + 1 register",
            "gpumem", r.bytes, &t[0], 0, -1, -1);
    io->row(io, "register", "one serial cuMemHostRegister (untouched)", "driver", r.bytes, &t[1], 0, -1, -1);
    io->row(io, "register", "touch on 1 thread + 1 cuMemHostRegister", "driver", r.bytes, &t[2], 0, -1, -1);
    bench_note(io, "register: each run maps, page-locks and gives back %zu MiB of fresh memory; the pool takes "
               "%.2fx the time of one serial registration, %.2fx that of a serial touch and registration%s",
               r.bytes >> 20, t[1].median > 0 ? t[0].median / t[1].median : 0,
               t[2].median > 0 ? t[0].median / t[2].median : 0,
               bench_driver() == NULL ? " (the simulator's registration touches no page: compare the touch rows)" : "");
    return 0;
}

int bench_alloc(bench_io *io, gpumem_context *ctx, int quick)
{
    int device = 0;
    gpumem_context_get_device(ctx, &device);
    driver_open(device);
    static const int threads[] = {1, 2, 4, 8};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        if ((cases[c].k == DRIVER || cases[c].k == DRIVER_ASYNC) && !drv.ok)
            continue; /* no driver to call on the simulator */
        for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
            io->progress(io, cases[c].name);
            if (measure(io, ctx, (int)c, threads[t], quick ? 0.02 : 0.3) != 0) {
                bench_error("\n", "%s: %s", cases[c].name, gpumem_last_error());
                return 1;
            }
        }
    }
    if (bench_register(io, ctx, quick) != 0) {
        bench_error("\n", "registration: %s", gpumem_last_error());
        return 1;
    }
    return 0;
}
