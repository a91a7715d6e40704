/*
 * cmd-bench-util.c - what the parts of gpumem bench share: the clock, the
 * median, p95 and maximum of timed runs, the library's copy of a case timed, notes, and the
 * CUDA driver of the baselines (see cmd-bench.h).
 */
#include "config.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gpumem.h>

#include "cmd-bench.h"

double bench_now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double bench_median_of(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

bench_times bench_times_of(double *t, int n)
{
    double med = bench_median_of(t, n);
    int rank = (95 * n + 99) / 100; /* nearest rank: the ceiling of 0.95 n */
    return (bench_times){med, t[(rank > 0 ? rank : 1) - 1], t[n - 1]};
}

void bench_times_scale(bench_times *t, double f)
{
    t->median *= f;
    if (t->p95 >= 0) {
        t->p95 *= f;
        t->max *= f;
    }
}

bench_times bench_times_one(double s)
{
    return (bench_times){s, -1, -1};
}

int bench_time(int reps, bench_run_fn fn, void *arg, bench_times *out)
{
    double t[BENCH_MAX_REPS];
    int n = reps < 1 ? 1 : reps < BENCH_MAX_REPS ? reps : BENCH_MAX_REPS;
    *out = bench_times_one(-1);
    if (fn(arg) != 0)
        return -1;
    for (int i = 0; i < n; i++) {
        double t0 = bench_now_s();
        if (fn(arg) != 0)
            return -1;
        t[i] = bench_now_s() - t0;
    }
    *out = bench_times_of(t, n);
    return 0;
}

int bench_time_vs(int reps, bench_run_fn fn, void *arg, bench_run_fn base, void *barg, bench_times *t,
                  bench_times *tb)
{
    double ta[BENCH_MAX_REPS], tbase[BENCH_MAX_REPS];
    int n = reps < 1 ? 1 : reps < BENCH_MAX_REPS ? reps : BENCH_MAX_REPS;
    *t = *tb = bench_times_one(-1);
    if (fn(arg) != 0)
        return -1;
    int with_base = base != NULL && base(barg) == 0;
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < 2; k++) {
            int lib = (k == 0) == (i % 2 == 0); /* even rounds: the library first */
            if (!lib && !with_base)
                continue;
            double t0 = bench_now_s();
            int bad = lib ? fn(arg) : base(barg);
            double dt = bench_now_s() - t0;
            if (bad && lib)
                return -1;
            with_base &= !bad;
            (lib ? ta : tbase)[i] = dt;
        }
    }
    *t = bench_times_of(ta, n);
    if (with_base)
        *tb = bench_times_of(tbase, n);
    return 0;
}

double bench_median(int reps, bench_run_fn fn, void *arg)
{
    bench_times t;
    return bench_time(reps, fn, arg, &t) == 0 ? t.median : -1;
}

double bench_gbs(uint64_t bytes, double s)
{
    return s > 0 ? (double)bytes / s / 1e9 : 0;
}

int bench_oom(gpumem_status st)
{
    return st == GPUMEM_ERROR_OUT_OF_MEMORY || st == GPUMEM_ERROR_HOST_OUT_OF_MEMORY;
}

void bench_note(bench_io *io, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    io->note(io, line);
}

typedef struct copy_run {
    gpumem_array *dst, *src;
    gpumem_status st;
} copy_run;

static int run_copy(void *arg)
{
    copy_run *c = arg;
    return (c->st = gpumem_array_copy(c->dst, c->src, NULL)) != GPUMEM_OK;
}

static char first_error[1024];

void bench_error(const char *lead, const char *fmt, ...)
{
    char msg[sizeof first_error];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%sgpumem bench: %s\n", lead, msg);
    if (first_error[0] == '\0')
        snprintf(first_error, sizeof first_error, "%s", msg);
}

const char *bench_first_error(void)
{
    return first_error[0] ? first_error : NULL;
}

int bench_copy(bench_io *io, int reps, const char *name, gpumem_array *dst, gpumem_array *src, bench_times *t,
               const char **path)
{
    bench_times none;
    return bench_copy_vs(io, reps, name, dst, src, t, path, NULL, NULL, &none);
}

int bench_copy_vs(bench_io *io, int reps, const char *name, gpumem_array *dst, gpumem_array *src, bench_times *t,
                  const char **path, bench_run_fn base, void *barg, bench_times *tb)
{
    io->progress(io, name);
    copy_run c = {dst, src, GPUMEM_OK};
    int bad = bench_time_vs(reps, run_copy, &c, base, barg, t, tb);
    if (bad && bench_oom(c.st)) { /* its temporaries do not fit: the staging slots, scratch */
        bench_note(io, "skipped: %s: %s", name, gpumem_last_error());
        return -1;
    }
    if (bad) {
        bench_error("\n", "%s: %s", name, gpumem_last_error());
        return 1;
    }
    gpumem_copy_path p = GPUMEM_COPY_PATH_NONE;
    gpumem_debug_last_copy_path(&p);
    *path = gpumem_copy_path_name(p);
    return 0;
}

void *bench_driver(void)
{
    const char *backend = NULL;
    if (gpumem_backend(&backend) != GPUMEM_OK || strcmp(backend, "cuda") != 0)
        return NULL;
    return dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
}

int bench_driver_primary(void *h, int device, void **ctx)
{
    int (*init)(unsigned) = NULL;
    int (*device_get)(int *, int) = NULL;
    int (*retain)(void **, int) = NULL;
    *(void **)&init = dlsym(h, "cuInit");
    *(void **)&device_get = dlsym(h, "cuDeviceGet");
    *(void **)&retain = dlsym(h, "cuDevicePrimaryCtxRetain");
    int dev = 0;
    return init != NULL && device_get != NULL && retain != NULL && init(0) == 0 && device_get(&dev, device) == 0 &&
                   retain(ctx, dev) == 0
               ? 0
               : 1;
}
