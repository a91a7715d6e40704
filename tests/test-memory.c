/* The memory report and GPUMEM_DEBUG=leaks (gpumem/memory.h): the
 * report's numbers after a known sequence of allocations of every kind
 * (peaks and their reset, pools' held blocks and largest block, deferred
 * frees, driver allocations, the ladder), the books of threads, leaks
 * listed at exit with their call sites, and bad input.  Out-of-memory
 * errors and the callback: test-memory-oom.c.  Each case that needs its
 * own simulated device runs in a child process. */
#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gpumem.h>

#include "arrays.h"
#include "child.h"
#include "memory-common.h"
#include "tap.h"

/* ---- the report after a known sequence --------------------------------------------- */

static void case_report(const void *arg, child_result *out)
{
    (void)arg;
    new_context("64M");
    gpumem_context *ctx = NULL;
    if ((out->status = gpumem_context_create(0, &ctx)) != GPUMEM_OK) {
        snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
        return;
    }
    gpumem_context_set_dealloc_limits(ctx, 100, 1.0); /* frees wait in the queue */
    struct gpumem_memory_report r0 = report(ctx, GPUMEM_MEMORY_DEVICE_INFO);
    CHECK(r0.device.bytes == 0 && r0.device.count == 0 && r0.driver_allocations == 0 && r0.pools == 0,
          "a new context reports nothing live (device %llu bytes, %llu driver allocations)",
          (unsigned long long)r0.device.bytes, (unsigned long long)r0.driver_allocations);
    CHECK(r0.device_total_bytes == 64 * MiB && r0.ordinal == 0 && r0.contexts == 1 &&
              r0.flags == GPUMEM_MEMORY_DEVICE_INFO,
          "total %llu, ordinal %d, contexts %llu", (unsigned long long)r0.device_total_bytes, r0.ordinal,
          (unsigned long long)r0.contexts);
    const gpumem_dtype *u8 = gpumem_dtype_builtin(GPUMEM_UINT8);
    gpumem_array *a1 = device_bytes(ctx, 1 * MiB), *a2 = device_bytes(ctx, 2 * MiB), *pin = NULL, *map = NULL,
                 *man = NULL, *wrap = NULL;
    int64_t n64k = 64 * KiB, n128k = 128 * KiB, n256k = 256 * KiB;
    gpumem_pinned_array(ctx, 1, &n64k, NULL, u8, 'C', &pin);
    gpumem_mapped_array(ctx, 1, &n128k, NULL, u8, 'C', NULL, 0, &map);
    gpumem_managed_array(ctx, 1, &n256k, NULL, u8, 'C', GPUMEM_MANAGED_ATTACH_GLOBAL, &man);
    long page = sysconf(_SC_PAGESIZE);
    int64_t npage2 = 2 * page;
    void *host = aligned_alloc((size_t)page, (size_t)npage2);
    gpumem_host_array_wrap(host, 1, &npage2, NULL, u8, &wrap);
    gpumem_registration *reg = NULL;
    gpumem_pinned(ctx, &wrap, 1, &reg);
    gpumem_pool *pool = NULL;
    gpumem_host_pool *hpool = NULL;
    gpumem_pool_create(ctx, 0, &pool);
    gpumem_host_pool_create(ctx, 0, &hpool);
    gpumem_allocation *p[3] = {NULL, NULL, NULL}, *hp = NULL;
    for (int i = 0; i < 3; i++)
        gpumem_pool_allocate(pool, 4000, NULL, &p[i]); /* blocks of 4096 */
    gpumem_allocation_free(p[2], NULL);
    gpumem_host_pool_allocate_bytes(hpool, 10000, &hp); /* a block of 10240 */
    CHECK(a1 && a2 && pin && map && man && reg && p[0] && p[1] && hp, "an allocation failed: %s",
          gpumem_last_error());

    struct gpumem_memory_report r = report(ctx, GPUMEM_MEMORY_DEVICE_INFO);
    CHECK(r.device.bytes == (uint64_t)(3 * MiB + 8000) && r.device.count == 4,
          "device: %llu bytes in %llu", (unsigned long long)r.device.bytes, (unsigned long long)r.device.count);
    CHECK(r.pinned.bytes == (uint64_t)(64 * KiB + 10000) && r.pinned.count == 2, "pinned: %llu bytes in %llu",
          (unsigned long long)r.pinned.bytes, (unsigned long long)r.pinned.count);
    CHECK(r.mapped.bytes == (uint64_t)(128 * KiB) && r.mapped.count == 1, "mapped: %llu in %llu",
          (unsigned long long)r.mapped.bytes, (unsigned long long)r.mapped.count);
    CHECK(r.managed.bytes == (uint64_t)(256 * KiB) && r.managed.count == 1, "managed: %llu in %llu",
          (unsigned long long)r.managed.bytes, (unsigned long long)r.managed.count);
    CHECK(r.registered.bytes == (uint64_t)npage2 && r.registered.count == 1, "registered: %llu in %llu",
          (unsigned long long)r.registered.bytes, (unsigned long long)r.registered.count);
    CHECK(r.pools == 2 && r.pool_held_blocks == 1 && r.pool_held_bytes == 4096 &&
              r.pool_largest_free_block == 4096,
          "pools %llu, held %llu blocks of %llu bytes, largest %llu", (unsigned long long)r.pools,
          (unsigned long long)r.pool_held_blocks, (unsigned long long)r.pool_held_bytes,
          (unsigned long long)r.pool_largest_free_block);
    /* 2 device arrays, pinned, mapped, managed, 3 device blocks, 1 page-locked block */
    CHECK(r.driver_allocations == 9, "driver allocations: %llu", (unsigned long long)r.driver_allocations);
    uint64_t reserved = (uint64_t)(3 * MiB + 256 * KiB + 3 * 4096);
    CHECK(r.device_reserved_bytes == reserved, "reserved %llu, not %llu", (unsigned long long)r.device_reserved_bytes,
          (unsigned long long)reserved);
    CHECK(r.device_free_bytes == r0.device_free_bytes - reserved, "free %llu after %llu reserved from %llu",
          (unsigned long long)r.device_free_bytes, (unsigned long long)reserved,
          (unsigned long long)r0.device_free_bytes);
    CHECK(r.others_bytes == r0.others_bytes, "others moved: %llu then %llu", (unsigned long long)r0.others_bytes,
          (unsigned long long)r.others_bytes);
    /* The peak was sampled at the third pool block: 3 MiB and 12000 bytes in 5. */
    CHECK(r.device.peak_bytes == (uint64_t)(3 * MiB + 12000) && r.device.peak_count == 5,
          "device peak %llu in %llu", (unsigned long long)r.device.peak_bytes,
          (unsigned long long)r.device.peak_count);
    CHECK(r.pending_frees == 0 && r.oom_ladder_runs == 0 && r.oom_failures == 0, "pending %llu, ladder %llu",
          (unsigned long long)r.pending_frees, (unsigned long long)r.oom_ladder_runs);
    out->value[0] = (long)r.device.bytes;

    /* The pools one by one. */
    struct gpumem_memory_pool_report pr[3];
    for (int i = 0; i < 3; i++) {
        memset(&pr[i], 0xcd, sizeof pr[i]);
        pr[i].size = sizeof pr[i];
    }
    size_t n = 0;
    gpumem_status st = gpumem_memory_pools(ctx, 0, pr, 3, &n);
    CHECK(st == GPUMEM_OK && n == 2, "gpumem_memory_pools: %d, %zu pools", st, n);
    int dev_i = pr[0].pool == pool ? 0 : 1, host_i = 1 - dev_i;
    CHECK(pr[dev_i].pool == pool && pr[dev_i].host_pool == NULL && pr[dev_i].kind == GPUMEM_MEMORY_DEVICE &&
              pr[dev_i].own == 0 && pr[dev_i].ordinal == 0 && pr[dev_i].held_blocks == 1 &&
              pr[dev_i].held_bytes == 4096 && pr[dev_i].largest_free_block == 4096 &&
              pr[dev_i].active_blocks == 2 && pr[dev_i].active_bytes == 8192 &&
              pr[dev_i].active_requested_bytes == 8000,
          "the device pool's entry: held %llu, largest %llu, active %llu", (unsigned long long)pr[dev_i].held_bytes,
          (unsigned long long)pr[dev_i].largest_free_block, (unsigned long long)pr[dev_i].active_bytes);
    CHECK(pr[host_i].host_pool == hpool && pr[host_i].pool == NULL && pr[host_i].kind == GPUMEM_MEMORY_PINNED &&
              pr[host_i].held_blocks == 0 && pr[host_i].largest_free_block == 0 &&
              pr[host_i].active_blocks == 1 && pr[host_i].active_bytes == 10240 &&
              pr[host_i].active_requested_bytes == 10000,
          "the page-locked pool's entry: active %llu", (unsigned long long)pr[host_i].active_bytes);
    CHECK(pr[2].size == sizeof pr[2] && pr[2].held_blocks == 0xcdcdcdcdcdcdcdcdULL,
          "an element past the pools is left alone");
    n = 99;
    CHECK(gpumem_memory_pools(ctx, 0, NULL, 0, &n) == GPUMEM_OK && n == 2, "counting alone: %zu", n);

    /* A free waits in the queue: live drops, pending and reserved keep it. */
    gpumem_array_release(a2);
    r = report(ctx, 0);
    CHECK(r.device.bytes == (uint64_t)(1 * MiB + 8000) && r.device.count == 3, "after a release: %llu in %llu",
          (unsigned long long)r.device.bytes, (unsigned long long)r.device.count);
    CHECK(r.pending_frees == 1 && r.pending_free_bytes == (uint64_t)(2 * MiB) && r.device_reserved_bytes == reserved,
          "pending %llu of %llu, reserved %llu", (unsigned long long)r.pending_frees,
          (unsigned long long)r.pending_free_bytes, (unsigned long long)r.device_reserved_bytes);
    CHECK(r.device.peak_bytes == (uint64_t)(3 * MiB + 12000), "the peak stays: %llu",
          (unsigned long long)r.device.peak_bytes);
    CHECK(r.device_total_bytes == 0 && r.device_free_bytes == 0 && r.others_bytes == 0,
          "without GPUMEM_MEMORY_DEVICE_INFO the driver's figures are 0");
    /* Reset: the peaks start from what is live. */
    CHECK(gpumem_memory_reset_peaks(ctx, 0) == GPUMEM_OK, "reset: %s", gpumem_last_error());
    r = report(ctx, 0);
    CHECK(r.device.peak_bytes == (uint64_t)(1 * MiB + 8000) && r.device.peak_count == 3 &&
              r.pinned.peak_bytes == r.pinned.bytes && r.peak_device_reserved_bytes == reserved,
          "after the reset: peak %llu in %llu, reserved peak %llu", (unsigned long long)r.device.peak_bytes,
          (unsigned long long)r.device.peak_count, (unsigned long long)r.peak_device_reserved_bytes);
    gpumem_array *a3 = device_bytes(ctx, 512 * KiB);
    gpumem_array_release(a3);
    gpumem_context_flush_deallocations(ctx);
    r = report(ctx, 0);
    CHECK(r.device.peak_bytes == (uint64_t)(1 * MiB + 512 * KiB + 8000) && r.device.peak_count == 4,
          "a new array raises the peak: %llu in %llu", (unsigned long long)r.device.peak_bytes,
          (unsigned long long)r.device.peak_count);
    CHECK(r.peak_device_reserved_bytes == reserved + 512 * KiB, "the reserved peak: %llu",
          (unsigned long long)r.peak_device_reserved_bytes);
    CHECK(r.pending_frees == 0 && r.device_reserved_bytes == reserved - 2 * MiB, "flushed: pending %llu, reserved %llu",
          (unsigned long long)r.pending_frees, (unsigned long long)r.device_reserved_bytes);
    CHECK(r.driver_allocations == 10, "one more driver allocation: %llu", (unsigned long long)r.driver_allocations);

    /* A second context on the device: its own report, and the device's. */
    gpumem_context *ctx2 = NULL;
    gpumem_context_create(0, &ctx2);
    gpumem_array *b1 = device_bytes(ctx2, 1 * MiB);
    struct gpumem_memory_report r2 = report(ctx2, 0);
    struct gpumem_memory_report rd = report(ctx, GPUMEM_MEMORY_WHOLE_DEVICE | GPUMEM_MEMORY_DEVICE_INFO);
    r = report(ctx, 0);
    CHECK(r2.device.bytes == (uint64_t)MiB && r2.device.count == 1 && r2.contexts == 1 && r2.pools == 0,
          "the second context: %llu in %llu", (unsigned long long)r2.device.bytes,
          (unsigned long long)r2.device.count);
    CHECK(r.device.bytes == (uint64_t)(1 * MiB + 8000), "the first context does not count it: %llu",
          (unsigned long long)r.device.bytes);
    CHECK(rd.contexts == 2 && rd.device.bytes == (uint64_t)(2 * MiB + 8000) && rd.device.count == 4 &&
              rd.pools == 2 && rd.device_reserved_bytes == reserved - MiB,
          "the device: %llu contexts, %llu bytes in %llu, reserved %llu", (unsigned long long)rd.contexts,
          (unsigned long long)rd.device.bytes, (unsigned long long)rd.device.count,
          (unsigned long long)rd.device_reserved_bytes);
    CHECK(rd.others_bytes == r0.others_bytes, "others, device-wide: %llu", (unsigned long long)rd.others_bytes);
    CHECK(gpumem_memory_reset_peaks(ctx, GPUMEM_MEMORY_WHOLE_DEVICE) == GPUMEM_OK, "device reset");
    rd = report(ctx, GPUMEM_MEMORY_WHOLE_DEVICE);
    r2 = report(ctx2, 0);
    CHECK(rd.device.peak_bytes == rd.device.bytes && r2.device.peak_bytes == (uint64_t)MiB,
          "after the device's reset: %llu, %llu", (unsigned long long)rd.device.peak_bytes,
          (unsigned long long)r2.device.peak_bytes);
    gpumem_array_release(b1);
    gpumem_context_release(ctx2);
    rd = report(ctx, GPUMEM_MEMORY_WHOLE_DEVICE);
    CHECK(rd.contexts == 1, "a released context leaves the device's report: %llu", (unsigned long long)rd.contexts);

    /* Everything freed: nothing live. */
    gpumem_unpinned(&reg);
    gpumem_array_release(wrap);
    free(host);
    gpumem_allocation_free(p[0], NULL);
    gpumem_allocation_free(p[1], NULL);
    gpumem_allocation_free(hp, NULL);
    gpumem_array_release(a1);
    gpumem_array_release(pin);
    gpumem_array_release(map);
    gpumem_array_release(man);
    gpumem_pool_destroy(pool);
    gpumem_host_pool_destroy(hpool);
    gpumem_context_flush_deallocations(ctx);
    r = report(ctx, 0);
    CHECK(r.device.bytes == 0 && r.device.count == 0 && r.pinned.bytes == 0 && r.mapped.bytes == 0 &&
              r.managed.bytes == 0 && r.registered.bytes == 0 && r.registered.count == 0 && r.pools == 0 &&
              r.device_reserved_bytes == 0 && r.pending_frees == 0,
          "all freed: device %llu, pinned %llu, registered %llu, reserved %llu", (unsigned long long)r.device.bytes,
          (unsigned long long)r.pinned.bytes, (unsigned long long)r.registered.bytes,
          (unsigned long long)r.device_reserved_bytes);
    gpumem_context_release(ctx);
}

/* ---- the context's own pool (GPUMEM_ALLOCATOR=pool) ---- */

static void case_own_pool(const void *arg, child_result *out)
{
    (void)arg;
    setenv("GPUMEM_ALLOCATOR", "pool", 1);
    gpumem_context *ctx = NULL;
    if ((out->status = gpumem_context_create(0, &ctx)) != GPUMEM_OK) {
        snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
        return;
    }
    gpumem_array *a = device_bytes(ctx, 5000), *b = device_bytes(ctx, 70000);
    gpumem_array_release(b); /* its block stays in the pool */
    struct gpumem_memory_report r = report(ctx, 0);
    CHECK(r.device.bytes == 5000 && r.device.count == 1 && r.pools == 1 && r.pool_held_blocks == 1 &&
              r.pending_frees == 0 && r.driver_allocations == 2,
          "own pool: %llu bytes in %llu, %llu pools, %llu held, %llu pending, %llu driver allocations",
          (unsigned long long)r.device.bytes, (unsigned long long)r.device.count, (unsigned long long)r.pools,
          (unsigned long long)r.pool_held_blocks, (unsigned long long)r.pending_frees,
          (unsigned long long)r.driver_allocations);
    struct gpumem_memory_pool_report pr;
    memset(&pr, 0, sizeof pr);
    pr.size = sizeof pr;
    size_t n = 0;
    gpumem_memory_pools(ctx, 0, &pr, 1, &n);
    CHECK(n == 1 && pr.own == 1 && pr.pool == NULL && pr.host_pool == NULL && pr.kind == GPUMEM_MEMORY_DEVICE &&
              pr.held_blocks == 1 && pr.largest_free_block >= 70000 && pr.active_requested_bytes == 5000,
          "its entry: own %d, pool %p, held %llu, largest %llu", pr.own, (void *)pr.pool,
          (unsigned long long)pr.held_blocks, (unsigned long long)pr.largest_free_block);
    CHECK(r.device_reserved_bytes == pr.active_bytes + pr.held_bytes, "reserved %llu: the pool's blocks",
          (unsigned long long)r.device_reserved_bytes);
    gpumem_array_release(a);
    gpumem_context_release(ctx);
}

/* ---- the ladder's counters ---- */

static void case_ladder(const void *arg, child_result *out)
{
    (void)arg;
    new_context("16M");
    gpumem_context *ctx = NULL;
    if ((out->status = gpumem_context_create(0, &ctx)) != GPUMEM_OK) {
        snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
        return;
    }
    gpumem_pool *pool = NULL;
    gpumem_pool_create(ctx, 0, &pool);
    gpumem_allocation *b[4];
    for (int i = 0; i < 4; i++)
        gpumem_pool_allocate(pool, 2 * MiB, NULL, &b[i]);
    for (int i = 0; i < 4; i++)
        gpumem_allocation_free(b[i], NULL); /* the pool holds 8 MiB */
    gpumem_array *a = device_bytes(ctx, 12 * MiB); /* the driver refuses, the ladder gives the 8 MiB back */
    struct gpumem_memory_report r = report(ctx, 0);
    CHECK(a != NULL && r.oom_ladder_runs == 1 && r.oom_ladder_successes == 1 && r.oom_failures == 0 &&
              r.pool_held_bytes == 0,
          "one ladder run that succeeded: runs %llu, successes %llu, failures %llu, held %llu",
          (unsigned long long)r.oom_ladder_runs, (unsigned long long)r.oom_ladder_successes,
          (unsigned long long)r.oom_failures, (unsigned long long)r.pool_held_bytes);
    gpumem_array *big = NULL;
    int64_t n = 32 * MiB;
    gpumem_status st = gpumem_device_array(ctx, 1, &n, NULL, gpumem_dtype_builtin(GPUMEM_UINT8), 'C', NULL, &big);
    r = report(ctx, 0);
    CHECK(st == GPUMEM_ERROR_OUT_OF_MEMORY && big == NULL && r.oom_ladder_runs == 2 &&
              r.oom_ladder_successes == 1 && r.oom_failures == 1,
          "one that failed: %d, runs %llu, successes %llu, failures %llu", st, (unsigned long long)r.oom_ladder_runs,
          (unsigned long long)r.oom_ladder_successes, (unsigned long long)r.oom_failures);
    gpumem_array_release(a);
    gpumem_pool_destroy(pool);
    gpumem_context_release(ctx);
}

/* ---- leaks at exit ------------------------------------------------------------------------- */

/* Called by the child (exported with -rdynamic): its name is the call site. */
gpumem_array *gm_test_leak_here(gpumem_context *ctx);
__attribute__((noinline)) gpumem_array *gm_test_leak_here(gpumem_context *ctx)
{
    gpumem_array *a = NULL;
    int64_t n = 4096;
    /* the library is called from here, not through a tail call */
    if (gpumem_device_array(ctx, 1, &n, NULL, gpumem_dtype_builtin(GPUMEM_UINT8), 'C', NULL, &a) != GPUMEM_OK)
        return NULL;
    return a;
}

static int leak_child(const char *mode)
{
    gpumem_context *ctx = NULL;
    if (gpumem_context_create(0, &ctx) != GPUMEM_OK)
        return 2;
    if (strcmp(mode, "clean") == 0) {
        gpumem_array_release(device_bytes(ctx, 4096));
        gpumem_array *bad = NULL;
        int64_t n = -1;
        gpumem_device_array(ctx, 1, &n, NULL, gpumem_dtype_builtin(GPUMEM_UINT8), 'C', NULL, &bad);
        return gpumem_context_release(ctx) == GPUMEM_OK ? 0 : 3;
    }
    gpumem_array *leaked = gm_test_leak_here(ctx);
    gpumem_array_release(device_bytes(ctx, 8192)); /* released: not listed */
    gpumem_pool *pool = NULL;
    gpumem_allocation *al = NULL;
    gpumem_pool_create(ctx, 0, &pool);
    gpumem_pool_allocate(pool, 1000, NULL, &al);
    gpumem_array *pooled = NULL, *gone = NULL;
    const int64_t n512 = 512, n768 = 768;
    gpumem_pool_device_array(pool, 1, &n512, gpumem_dtype_builtin(GPUMEM_UINT8), 'C', NULL, &pooled);
    gpumem_pool_device_array(pool, 1, &n768, gpumem_dtype_builtin(GPUMEM_UINT8), 'C', NULL, &gone);
    gpumem_array_release(gone); /* released: listed neither as an array nor as its pool allocation */
    long page = sysconf(_SC_PAGESIZE);
    int64_t n = 2 * page;
    void *host = aligned_alloc((size_t)page, (size_t)n);
    gpumem_array *wrap = NULL;
    gpumem_host_array_wrap(host, 1, &n, NULL, gpumem_dtype_builtin(GPUMEM_UINT8), &wrap);
    gpumem_registration *reg = NULL;
    gpumem_pinned(ctx, &wrap, 1, &reg);
    printf("registered %p\n", host);
    return leaked != NULL && al != NULL && pooled != NULL && reg != NULL ? 0 : 4; /* exit lists what is alive */
}

/* This program's path, set by main (child.h's child_self_path). */
static const char *self_path = "/proc/self/exe";

/* Runs this program as `mode` with GPUMEM_DEBUG=debug; its stderr into err, stdout into out. */
static int run_self(const char *mode, const char *debug, char *err, size_t errsize, char *outbuf, size_t outsize)
{
    char errpath[] = "/tmp/gpumem-test-memory-errXXXXXX", outpath[] = "/tmp/gpumem-test-memory-outXXXXXX";
    int efd = mkstemp(errpath), ofd = mkstemp(outpath);
    if (efd < 0 || ofd < 0)
        return -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(efd, 2);
        dup2(ofd, 1);
        setenv("GPUMEM_DEBUG", debug, 1);
        setenv("GPUMEM_SIM_MEMORY", "64M", 1);
        execl(self_path, "test-memory", mode, (char *)NULL);
        _exit(127);
    }
    int ws = 0;
    waitpid(pid, &ws, 0);
    ssize_t n = pread(efd, err, errsize - 1, 0);
    err[n > 0 ? n : 0] = '\0';
    n = pread(ofd, outbuf, outsize - 1, 0);
    outbuf[n > 0 ? n : 0] = '\0';
    close(efd);
    close(ofd);
    unlink(errpath);
    unlink(outpath);
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128;
}

/* Every line of text starts with one of the prefixes. */
static int lines_start_with(const char *text, const char *a, const char *b)
{
    for (const char *p = text; *p != '\0';) {
        if (strncmp(p, a, strlen(a)) != 0 && strncmp(p, b, strlen(b)) != 0)
            return 0;
        const char *nl = strchr(p, '\n');
        if (nl == NULL)
            break;
        p = nl + 1;
    }
    return 1;
}

/* ---- threads: the books stay exact ---- */

typedef struct worker_arg {
    gpumem_context *ctx;
    gpumem_pool *pool;
    int n;
} worker_arg;

static void *worker(void *p)
{
    worker_arg *w = p;
    for (int i = 0; i < w->n; i++) {
        gpumem_allocation *a = NULL;
        gpumem_array *d = NULL;
        gpumem_pool_allocate(w->pool, (size_t)(256 * (1 + i % 8)), NULL, &a);
        if (i % 16 == 0)
            d = device_bytes(w->ctx, 4096);
        struct gpumem_memory_report r = {.size = sizeof r};
        if (i % 32 == 0)
            gpumem_memory_report(w->ctx, GPUMEM_MEMORY_WHOLE_DEVICE, &r);
        gpumem_allocation_free(a, NULL);
        gpumem_array_release(d);
    }
    return NULL;
}

static void case_threads(const void *arg, child_result *out)
{
    (void)arg;
    gpumem_context *ctx = NULL;
    if ((out->status = gpumem_context_create(0, &ctx)) != GPUMEM_OK)
        return;
    gpumem_pool *pool = NULL;
    gpumem_pool_create(ctx, 0, &pool);
    pthread_t t[4];
    worker_arg w = {ctx, pool, 400};
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, worker, &w);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    gpumem_context_flush_deallocations(ctx);
    struct gpumem_memory_report r = report(ctx, 0);
    out->value[0] = (long)r.device.bytes;
    out->value[1] = (long)r.device.count;
    out->value[2] = (long)r.device.peak_count;
    out->value[3] = (long)r.pool_held_blocks;
    gpumem_pool_destroy(pool);
    gpumem_context_release(ctx);
}

/* An out-of-memory callback that declines (bad input: never set). */
static int decline(gpumem_context *ctx, const struct gpumem_oom_info *info, void *user)
{
    (void)ctx;
    (void)info;
    (void)user;
    return 0;
}

/* ---- bad input ---- */

static void bad_input(void)
{
    gpumem_context *ctx = NULL;
    if (gpumem_context_create(0, &ctx) != GPUMEM_OK)
        bail_out("no context: %s", gpumem_last_error());
    struct gpumem_memory_report r;
    is_int(gpumem_memory_report(ctx, 0, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "report NULL");
    like(gpumem_last_error(), "'report'", "names it");
    memset(&r, 0x5a, sizeof r);
    r.size = 4;
    is_int(gpumem_memory_report(ctx, 0, &r), GPUMEM_ERROR_INVALID_VALUE, "a size too small");
    like(gpumem_last_error(), "report->size is 4; set it to sizeof(struct gpumem_memory_report)", "says so");
    ok(r.flags == 0x5a5a5a5au && r.device.bytes == 0x5a5a5a5a5a5a5a5aULL, "and writes nothing");
    r.size = sizeof r;
    is_int(gpumem_memory_report(ctx, 0x10, &r), GPUMEM_ERROR_INVALID_VALUE, "unknown flags");
    like(gpumem_last_error(), "flags 0x10: unknown bits 0x10", "names the bits");
    ok(r.device.bytes == 0x5a5a5a5a5a5a5a5aULL, "nothing written");
    /* An older, shorter struct: only its fields are written. */
    unsigned char small[offsetof(struct gpumem_memory_report, device) + 16];
    memset(small, 0x77, sizeof small);
    *(size_t *)(void *)small = offsetof(struct gpumem_memory_report, device) + 8;
    is_int(gpumem_memory_report(ctx, 0, (struct gpumem_memory_report *)(void *)small), GPUMEM_OK,
           "a shorter struct (an older program)");
    ok(small[sizeof small - 1] == 0x77 && small[offsetof(struct gpumem_memory_report, device) + 8] == 0x77,
       "nothing past its size is written");
    /* A longer struct (a newer program): the tail is zeroed. */
    unsigned char big[sizeof(struct gpumem_memory_report) + 16];
    memset(big, 0x77, sizeof big);
    *(size_t *)(void *)big = sizeof big;
    is_int(gpumem_memory_report(ctx, 0, (struct gpumem_memory_report *)(void *)big), GPUMEM_OK, "a longer struct");
    ok(big[sizeof big - 1] == 0 && big[sizeof(struct gpumem_memory_report)] == 0, "its unknown fields are zeroed");

    is_int(gpumem_memory_reset_peaks(ctx, GPUMEM_MEMORY_DEVICE_INFO), GPUMEM_ERROR_INVALID_VALUE,
           "reset with a report-only flag");
    size_t n = 7;
    struct gpumem_memory_pool_report pr[2];
    is_int(gpumem_memory_pools(ctx, 0, pr, 2, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "pools without count");
    is_int(gpumem_memory_pools(ctx, 0, NULL, 2, &n), GPUMEM_ERROR_NULL_ARGUMENT, "pools NULL with a capacity");
    like(gpumem_last_error(), "'pools' is NULL with capacity 2", "says so");
    pr[0].size = sizeof pr[0];
    pr[1].size = 8;
    is_int(gpumem_memory_pools(ctx, 0, pr, 2, &n), GPUMEM_ERROR_INVALID_VALUE, "elements of unlike sizes");
    like(gpumem_last_error(), "pools[1].size is 8, unlike pools[0].size", "names the element");
    is_int(n, 7, "count untouched");
    pr[0].size = 8;
    is_int(gpumem_memory_pools(ctx, 0, pr, 1, &n), GPUMEM_ERROR_INVALID_VALUE, "an element too small");
    is_int(gpumem_memory_pools(ctx, 4, pr, 0, &n), GPUMEM_ERROR_INVALID_VALUE, "unknown flags");
    is_int(gpumem_memory_pools(ctx, 0, NULL, 0, &n), GPUMEM_OK, "counting with no array");
    is_int(n, 0, "no pools");
    gpumem_context_release(ctx);
    is_int(gpumem_memory_report(ctx, 0, &r), GPUMEM_ERROR_INVALID_STATE, "a released context");
    is_int(gpumem_context_set_oom_callback(ctx, decline, NULL), GPUMEM_ERROR_INVALID_STATE,
           "no callback on a released context");
}

/* Every case that needs a simulated device of its own. */
static void sim_cases(void)
{
    child_result res;
    run_child(case_report, NULL, &res);
    ok(res.status == GPUMEM_OK && res.text[0] == '\0', "the report after a known sequence: every kind, peaks, "
       "reset, pools, deferred frees, driver allocations, two contexts%s%s", res.text[0] ? ": " : "", res.text);
    run_child(case_own_pool, NULL, &res);
    ok(res.status == GPUMEM_OK && res.text[0] == '\0', "GPUMEM_ALLOCATOR=pool: arrays counted through the "
       "context's own pool, listed as its own%s%s", res.text[0] ? ": " : "", res.text);
    run_child(case_ladder, NULL, &res);
    ok(res.status == GPUMEM_OK && res.text[0] == '\0', "the ladder's runs and successes%s%s",
       res.text[0] ? ": " : "", res.text);
}

int main(int argc, char **argv)
{
    self_path = child_self_path(argc > 0 ? argv[0] : NULL);
    if (argc > 1)
        return leak_child(argv[1]);
    child_result res;
    if (test_on_sim())
        sim_cases();
    else
        diag("the report's numbers are checked against simulated devices of known sizes (GPUMEM_SIM_MEMORY): "
             "run with GPUMEM_BACKEND=sim (tests/test-memory-oom counts the skip)");

    /* Threads: the books are exact once they are done. */
    run_child(case_threads, NULL, &res);
    ok(res.status == GPUMEM_OK && res.value[0] == 0 && res.value[1] == 0, "4 threads allocating and reporting: "
       "nothing live after (%ld bytes in %ld)", res.value[0], res.value[1]);
    ok(res.value[2] >= 1 && res.value[3] >= 1, "a peak was sampled (%ld), the pool holds its blocks (%ld)",
       res.value[2], res.value[3]);

    /* Leaks. */
    char err[8192], out[256];
    int rc = run_self("leak", "leaks", err, sizeof err, out, sizeof out);
    is_int(rc, 0, "a program that leaks exits normally");
    like(err, "gpumem: leaks: at exit, a context of device 0 that was never released (", "its context is listed at exit");
    like(err, "4 still alive (", "with what is alive");
    like(err, "gpumem:   array of 512 bytes of device memory, made by gpumem_pool_device_array, at ",
         "an array of a pool (its pool allocation not listed twice)");
    like(err, "gpumem:   array of 4096 bytes of device memory, made by gpumem_device_array, at ", "the array");
#ifdef GM_HAVE_LIBDW
    like(err, "at gm_test_leak_here (", "and the function that made it (libdw: by file and line, "
         "tests/test-memory-leaks checks them)");
#else
    like(err, "(gm_test_leak_here+0x", "and the function that made it (-rdynamic)");
#endif
    like(err, "gpumem:   pool allocation of 1000 bytes of device memory, made by gpumem_pool_allocate, at ",
         "the pool allocation");
    char want[128];
    long page = sysconf(_SC_PAGESIZE);
    void *regp = NULL;
    sscanf(out, "registered %p", &regp);
    snprintf(want, sizeof want, "gpumem:   registered host range of %ld bytes at %p, registered by gpumem_pinned",
             2 * page, regp);
    like(err, want, "the registered range");
    ok(strstr(err, "8192 bytes of device") == NULL && strstr(err, "768 bytes") == NULL,
       "not the arrays that were released");
    ok(lines_start_with(err, "gpumem: leaks: ", "gpumem:   "), "GPUMEM_DEBUG=leaks prints nothing else");
    rc = run_self("clean", "leaks", err, sizeof err, out, sizeof out);
    ok(rc == 0 && err[0] == '\0', "a program that frees everything: nothing listed (%s)", err);
    rc = run_self("leak", "1", err, sizeof err, out, sizeof out);
    ok(rc == 0 && strstr(err, "leaks:") == NULL && strstr(err, "gpumem: ") != NULL,
       "GPUMEM_DEBUG=1 prints messages, no leak list");
    rc = run_self("leak", "1,leaks", err, sizeof err, out, sizeof out);
    ok(rc == 0 && strstr(err, "leaks: at exit") != NULL && strstr(err, "gpumem: context on device") != NULL,
       "GPUMEM_DEBUG=1,leaks: both");

    bad_input();
    done_testing();
    return exit_status();
}

