/* The behaviour pool.h and the environment promise: pools across
 * threads, the cache of a context's pools, the architecture, streams and
 * allocator variables, in children (part of tests/test-promises-pool). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <pthread.h>

#include <gpumem.h>
#include <gpumem/testing.h>

#include "tap.h"
#include "child.h"
#include "arrays.h"
#include "promises.h"
#include "promises-pool.h"

/* ---- behaviour the headers promise -------------------------------------------------------- */

static gpumem_allocation *race_alloc;
static gpumem_status race_res[2];

static void *race_free(void *arg)
{
    int i = *(int *)arg;
    race_res[i] = gpumem_allocation_free(race_alloc, NULL);
    return NULL;
}

void test_pool_behaviour(void)
{
    gpumem_pool *p = NULL;
    gpumem_stream *s1 = NULL, *s2 = NULL;
    MUST(gpumem_pool_create(ctx, 0, &p));
    MUST(gpumem_stream_create(ctx, 0, &s1));
    MUST(gpumem_stream_create(ctx, 0, &s2));
    gpumem_allocation *a = NULL, *b = NULL;
    uint64_t pa = 0, pb = 0;
    /* pool.h: while the pool holds, frees with NULL and hits make no driver call */
    MUST(gpumem_pool_allocate(p, 5000, NULL, &a));
    MUST(gpumem_allocation_pointer(a, &pa));
    MUST(gpumem_allocation_free(a, NULL));
    int64_t c0 = calls(NULL);
    MUST(gpumem_pool_allocate(p, 5000, NULL, &b));
    MUST(gpumem_allocation_pointer(b, &pb));
    MUST(gpumem_allocation_free(b, NULL));
    ok(pa == pb && calls(NULL) == c0, "a held block reused and freed with NULL: the same block, no driver call");
    /* a free with a stream records one event; the same stream reuses the block at once */
    MUST(gpumem_pool_allocate(p, 5000, s1, &a));
    MUST(gpumem_allocation_pointer(a, &pa));
    int64_t ev0 = calls("cuEventCreate") + calls("cuEventRecord");
    MUST(gpumem_allocation_free(a, s1));
    ok(calls("cuEventCreate") + calls("cuEventRecord") - ev0 <= 2 && calls("cuEventRecord") > 0,
       "a free with a stream records one event");
    MUST(gpumem_pool_allocate(p, 5000, s1, &b));
    MUST(gpumem_allocation_pointer(b, &pb));
    ok(pa == pb, "the same stream reuses the block at once");
    MUST(gpumem_allocation_free(b, s1));
    MUST(gpumem_stream_synchronize(s1));
    MUST(gpumem_pool_allocate(p, 5000, s2, &b));
    MUST(gpumem_allocation_pointer(b, &pb));
    ok(pa == pb, "another stream reuses it once its event completed");
    MUST(gpumem_allocation_free(b, NULL));
    /* the events are pooled: later frees on a stream record, create none;
     * free_held destroys them */
    {
        int exact = 1;
        for (int round = 0; round < 3; round++) {
            int64_t e0 = calls("cuEventCreate"), r0 = calls("cuEventRecord");
            MUST(gpumem_pool_allocate(p, 5000, s1, &a));
            MUST(gpumem_allocation_free(a, s1));
            MUST(gpumem_stream_synchronize(s1));
            exact &= calls("cuEventRecord") - r0 == 1 && calls("cuEventCreate") - e0 == 0;
        }
        ok(exact, "later frees on a stream record one pooled event each and create none");
        int64_t d0 = calls("cuEventDestroy");
        MUST(gpumem_pool_free_held(p));
        ok(calls("cuEventDestroy") > d0, "free_held destroys the pooled events");
    }
    /* of two threads that free one handle at once, exactly one succeeds */
    int exactly_one = 1;
    for (int it = 0; it < 100; it++) {
        MUST(gpumem_pool_allocate(p, 1024, NULL, &race_alloc));
        pthread_t t[2];
        int ids[2] = {0, 1};
        for (int i = 0; i < 2; i++)
            pthread_create(&t[i], NULL, race_free, &ids[i]);
        for (int i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
        exactly_one &= (race_res[0] == GPUMEM_OK) + (race_res[1] == GPUMEM_OK) == 1 &&
                       (race_res[0] == GPUMEM_ERROR_INVALID_STATE || race_res[1] == GPUMEM_ERROR_INVALID_STATE);
    }
    ok(exactly_one, "two threads free one handle at once: exactly one succeeds, the other INVALID_STATE");
    /* every driver call of a pool call failed in turn: a status naming the call,
     * outputs untouched, and a free that fails still ends its handle */
    static const char *const names[] = {"gpumem_pool_allocate", "gpumem_allocation_free", "gpumem_pool_device_array",
                                        "gpumem_pool_free_held"};
    int64_t n100 = 100;
    for (int w = 0; w < 4; w++) {
        int failures = 0, clean = 1;
        for (uint64_t k = 1; k < 20; k++) {
            void *sent = &failures, *out = sent;
            gpumem_allocation *x = NULL;
            if (w == 1)
                MUST(gpumem_pool_allocate(p, 4096, s1, &x));
            if (w == 3) {
                MUST(gpumem_pool_allocate(p, 4096, s1, &x));
                MUST(gpumem_allocation_free(x, s1));
            }
            gpumem_status st;
            gpumem_debug_fail_call(k, 999);
            switch (w) {
            case 0: st = gpumem_pool_allocate(p, 8192, s1, (gpumem_allocation **)&out); break;
            case 1: st = gpumem_allocation_free(x, s1); break;
            case 2: st = gpumem_pool_device_array(p, 1, &n100, i32, 'C', s1, (gpumem_array **)&out); break;
            default: st = gpumem_pool_free_held(p); break;
            }
            gpumem_debug_fail_call(0, 0);
            if (st == GPUMEM_OK) {
                if (w == 0)
                    gpumem_allocation_free(out, s1);
                if (w == 2)
                    gpumem_array_release(out);
                break;
            }
            failures++;
            char fn[64];
            snprintf(fn, sizeof fn, "%s: ", names[w]);
            int good = out == sent && strncmp(gpumem_last_error(), fn, strlen(fn)) == 0 &&
                       gpumem_last_status() == st && gpumem_last_driver_result() == 999;
            if (w == 1)
                good &= gpumem_allocation_free(x, s1) == GPUMEM_ERROR_INVALID_STATE;
            if (!good)
                diag("  %s failing at driver call %llu: %s", names[w], (unsigned long long)k, gpumem_last_error());
            clean &= good;
        }
        ok(failures > 0 && clean, "%s: each of its %d driver calls failed in turn: named, outputs untouched%s",
           names[w], failures, w == 1 ? ", the handle ended" : "");
    }
    uint64_t count = 77;
    MUST(gpumem_pool_active_blocks(p, &count));
    is_int(count, 0, "after the failures no block is left active");
    /* the out-of-memory ladder gives back held blocks and retries once */
    gpumem_allocation *big = NULL;
    MUST(gpumem_pool_allocate(p, (size_t)150 << 20, NULL, &big));
    MUST(gpumem_allocation_free(big, NULL));
    GOOD(gpumem_pool_allocate(p, (size_t)200 << 20, NULL, &big));
    struct gpumem_pool_stats st = {.size = sizeof st};
    MUST(gpumem_pool_stats(p, &st));
    ok(st.oom_retries == 1 && st.held_blocks == 0 && st.active_blocks == 1,
       "the ladder: held blocks given back, one retry counted (%llu retries, %llu held)",
       (unsigned long long)st.oom_retries, (unsigned long long)st.held_blocks);
    MUST(gpumem_allocation_free(big, NULL));
    MUST(gpumem_pool_destroy(p));
    gpumem_stream_destroy(s1);
    gpumem_stream_destroy(s2);

    /* pool.h Lifetime: allocations of a destroyed pool stay valid, and
     * memory.h counts them as live until they are freed (a destroyed pool
     * itself is neither counted nor listed) */
    {
        struct gpumem_memory_report r0, r1, r2;
        memset(&r0, 0, sizeof r0);
        r0.size = sizeof r0;
        r1 = r2 = r0;
        MUST(gpumem_memory_report(ctx2, 0, &r0));
        gpumem_pool *zp = NULL;
        gpumem_allocation *za = NULL;
        gpumem_array *zarr = NULL;
        int64_t zn = 1 << 18;
        MUST(gpumem_pool_create(ctx2, 0, &zp));
        MUST(gpumem_pool_allocate(zp, 1 << 20, NULL, &za));
        MUST(gpumem_pool_device_array(zp, 1, &zn, i32, 'C', NULL, &zarr));
        MUST(gpumem_pool_destroy(zp));
        MUST(gpumem_memory_report(ctx2, 0, &r1));
        size_t npools = 77;
        MUST(gpumem_memory_pools(ctx2, 0, NULL, 0, &npools));
        ok(r1.device.bytes - r0.device.bytes == (2u << 20) && r1.device.count - r0.device.count == 2 &&
               r1.device_reserved_bytes - r0.device_reserved_bytes == (2u << 20) && r1.pools == r0.pools &&
               npools == r0.pools,
           "a destroyed pool's live allocations still count in the memory report (%llu bytes, %llu reserved), "
           "the pool not (%llu pools, %zu listed)",
           (unsigned long long)(r1.device.bytes - r0.device.bytes),
           (unsigned long long)(r1.device_reserved_bytes - r0.device_reserved_bytes), (unsigned long long)r1.pools,
           npools);
        int32_t v7 = 7, got7 = 0;
        GOOD(gpumem_array_fill(zarr, &v7, NULL));
        GOOD(gpumem_array_get_item_n(zarr, 1, (const int64_t[]){(1 << 18) - 1}, &got7, NULL));
        is_int(got7, 7, "an array of a destroyed pool is usable");
        GOOD(gpumem_allocation_free(za, NULL));
        GOOD(gpumem_array_release(zarr));
        MUST(gpumem_memory_report(ctx2, 0, &r2));
        ok(r2.device.bytes == r0.device.bytes && r2.device_reserved_bytes == r0.device_reserved_bytes,
           "freed, they leave the report");
    }

    /* module.h: a cached module, a known kernel: no driver call */
    gpumem_module *m1 = NULL, *m2 = NULL;
    gpumem_function *f1 = NULL, *f2 = NULL;
    MUST(gpumem_module_load(ctx, k_ptx, 0, &m1));
    MUST(gpumem_module_get_function(m1, "k", &f1));
    c0 = calls(NULL);
    MUST(gpumem_module_load(ctx, k_ptx, 0, &m2));
    MUST(gpumem_module_get_function(m2, "k", &f2));
    ok(m1 == m2 && f1 == f2 && calls(NULL) == c0, "a second load and lookup: the same handles, no driver call");
    gpumem_module_release(m2);
    gpumem_module_release(m1);

    /* occupancy.h: the functions that take a device data call no driver */
    gpumem_device_data *dd = NULL;
    MUST(gpumem_device_data_create(0, &dd));
    gpumem_occupancy_record r = {.size = sizeof r};
    int v = 0;
    size_t z = 0;
    gpumem_debug_fail_call(1, 999);
    gpumem_status s_occ = gpumem_occupancy(dd, 96, 1000, 40, &r);
    gpumem_status s_get = gpumem_device_data_get(dd, GPUMEM_DEVICE_DATA_WARPS_PER_MP, &v);
    gpumem_status s_al = gpumem_device_data_align(dd, 5, 4, &z);
    gpumem_debug_fail_call(0, 0);
    ok(s_occ == GPUMEM_OK && s_get == GPUMEM_OK && s_al == GPUMEM_OK, "occupancy, get and align call no driver");
    /* sm_90: 3 warps of 40 registers: 1280 a warp, 12 warps a partition, 16 blocks; 1000 + 1024 B -> 2048 */
    ok(r.tb_per_mp == 16 && r.limited_by == GPUMEM_LIMITED_BY_REGISTERS && r.registers_per_block == 3840 &&
           r.shared_memory_per_block == 2048 && r.tb_limit_shared_memory == 233472 / 2048 && r.tb_limit_warps == 21 &&
           r.warps_per_mp == 48 && r.occupancy == 0.75 && r.limiting_factors == (1u << GPUMEM_LIMITED_BY_REGISTERS),
       "96 threads, 1000 B, 40 registers: 16 blocks, limited by registers, occupancy 0.75");
    /* a tie: 64 threads: the device's 32 blocks and the warps' 32 */
    MUST(gpumem_occupancy(dd, 64, 0, 0, &r));
    ok(r.tb_per_mp == 32 && r.limited_by == GPUMEM_LIMITED_BY_DEVICE &&
           r.limiting_factors == ((1u << GPUMEM_LIMITED_BY_DEVICE) | (1u << GPUMEM_LIMITED_BY_WARPS)),
       "a tie of device and warps: limited by device, both factors listed");
    /* several limits exceeded: the first of warps, registers, shared memory */
    gpumem_occupancy(dd, 4096, (size_t)1 << 30, 256, &r);
    ok(r.tb_per_mp == 0 && r.limited_by == GPUMEM_LIMITED_BY_WARPS, "threads, registers and smem exceeded: warps");
    gpumem_occupancy(dd, 128, (size_t)1 << 30, 256, &r);
    ok(r.tb_per_mp == 0 && r.limited_by == GPUMEM_LIMITED_BY_REGISTERS, "registers and smem exceeded: registers");
    BAD(gpumem_occupancy(dd, 1024, 0, 255, &r), GPUMEM_ERROR_INVALID_VALUE, "registers");
    ok(r.tb_per_mp == 0 && r.limited_by == GPUMEM_LIMITED_BY_REGISTERS,
       "1024 threads of 255 registers: more registers per block than the device allows");
    gpumem_device_data_destroy(dd);
}

/* pool.h Threads: the caches belong to the pool */
static gpumem_pool *cache_pool;
static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cache_cv = PTHREAD_COND_INITIALIZER;
static int cache_step;

static void *cache_keeper(void *arg)
{
    (void)arg;
    gpumem_allocation *a = NULL;
    MUST(gpumem_pool_allocate(cache_pool, 4096, NULL, &a));
    MUST(gpumem_allocation_free(a, NULL)); /* into this thread's cache */
    pthread_mutex_lock(&cache_mu);
    cache_step = 1;
    pthread_cond_broadcast(&cache_cv);
    while (cache_step != 2)
        pthread_cond_wait(&cache_cv, &cache_mu);
    pthread_mutex_unlock(&cache_mu);
    return NULL;
}

static void *cache_exiter(void *arg)
{
    (void)arg;
    gpumem_allocation *a = NULL;
    MUST(gpumem_pool_allocate(cache_pool, 8192, NULL, &a));
    MUST(gpumem_allocation_free(a, NULL));
    return NULL;
}

void test_pool_threads(void)
{
    MUST(gpumem_pool_create(ctx, 0, &cache_pool));
    pthread_t t;
    pthread_create(&t, NULL, cache_keeper, NULL);
    pthread_mutex_lock(&cache_mu);
    while (cache_step != 1)
        pthread_cond_wait(&cache_cv, &cache_mu);
    pthread_mutex_unlock(&cache_mu);
    uint64_t held = 77;
    GOOD(gpumem_pool_held_blocks(cache_pool, &held));
    is_int(held, 1, "held_blocks counts a block in another thread's cache");
    GOOD(gpumem_pool_free_held(cache_pool));
    struct gpumem_pool_stats st = {.size = sizeof st};
    GOOD(gpumem_pool_stats(cache_pool, &st));
    ok(st.held_blocks == 0 && st.driver_frees == 1, "free_held empties another (live) thread's cache too");
    pthread_mutex_lock(&cache_mu);
    cache_step = 2;
    pthread_cond_broadcast(&cache_cv);
    pthread_mutex_unlock(&cache_mu);
    pthread_join(t, NULL);
    pthread_create(&t, NULL, cache_exiter, NULL);
    pthread_join(t, NULL);
    gpumem_allocation *a = NULL;
    GOOD(gpumem_pool_allocate(cache_pool, 8192, NULL, &a));
    GOOD(gpumem_pool_stats(cache_pool, &st));
    ok(st.hits == 1 && st.misses == 2, "a thread that exits hands its cache back: its block is reused here");
    GOOD(gpumem_allocation_free(a, NULL));
    /* peak_active_bytes: sampled at each new block */
    gpumem_allocation *x = NULL, *y = NULL;
    MUST(gpumem_pool_allocate(cache_pool, 1 << 20, NULL, &x));
    MUST(gpumem_pool_allocate(cache_pool, 1 << 20, NULL, &y));
    MUST(gpumem_allocation_free(x, NULL));
    MUST(gpumem_allocation_free(y, NULL));
    GOOD(gpumem_pool_stats(cache_pool, &st));
    ok(st.peak_active_bytes == (2u << 20) && st.active_bytes == 0 && st.active_requested_bytes == 0,
       "peak_active_bytes keeps the 2 MiB of two live blocks");
    GOOD(gpumem_pool_destroy(cache_pool));
    /* GPUMEM_POOL_NO_THREAD_CACHE still reuses, through the shared store */
    gpumem_pool *q = NULL;
    MUST(gpumem_pool_create(ctx, GPUMEM_POOL_NO_THREAD_CACHE, &q));
    MUST(gpumem_pool_allocate(q, 100, NULL, &x));
    MUST(gpumem_allocation_free(x, NULL));
    MUST(gpumem_pool_allocate(q, 100, NULL, &x));
    GOOD(gpumem_pool_stats(q, &st));
    ok(st.hits == 1 && st.misses == 1, "without thread caches a freed block is still reused");
    MUST(gpumem_allocation_free(x, NULL));
    GOOD(gpumem_pool_destroy(q));
}

/* occupancy.h's table: the values it gives for some architectures */
static void case_arch(const void *arg, child_result *out)
{
    setenv("GPUMEM_SIM_ARCH", (const char *)arg, 1);
    gpumem_device_data *dd = NULL;
    out->status = gpumem_device_data_create(0, &dd);
    static const gpumem_device_data_field f[] = {
        GPUMEM_DEVICE_DATA_WARPS_PER_MP, GPUMEM_DEVICE_DATA_THREAD_BLOCKS_PER_MP,
        GPUMEM_DEVICE_DATA_SMEM_ALLOC_GRANULARITY, GPUMEM_DEVICE_DATA_RESERVED_SHARED_MEMORY,
        GPUMEM_DEVICE_DATA_REGISTER_PARTITIONS, GPUMEM_DEVICE_DATA_COMPUTE_CAPABILITY,
        GPUMEM_DEVICE_DATA_SHARED_MEMORY, GPUMEM_DEVICE_DATA_MAX_REGISTERS_PER_THREAD};
    for (int i = 0; i < 8 && out->status == GPUMEM_OK; i++) {
        int v = -1;
        gpumem_device_data_get(dd, f[i], &v);
        out->value[i] = v;
    }
    gpumem_device_data_destroy(dd);
}

void arch_checks(void)
{
    static const struct {
        const char *arch;
        long want[8];
    } rows[] = {
        {"sm_75", {32, 16, 256, 0, 4, 75, 49152, 255}},
        {"sm_80", {64, 32, 128, 1024, 4, 80, 49152, 255}},
        {"sm_86", {48, 16, 128, 1024, 4, 86, 49152, 255}},
        {"sm_89", {48, 24, 128, 1024, 4, 89, 49152, 255}},
        {"sm_90", {64, 32, 128, 1024, 4, 90, 49152, 255}},
        {"sm_120", {48, 24, 128, 1024, 4, 120, 49152, 255}},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        child_result r;
        run_child(case_arch, rows[i].arch, &r);
        int same = r.status == GPUMEM_OK;
        for (int j = 0; j < 8; j++)
            same &= r.value[j] == rows[i].want[j];
        ok(same, "%s: warps/mp %ld, blocks/mp %ld, smem unit %ld, reserved %ld, partitions %ld, cc %ld (occupancy.h)",
           rows[i].arch, r.value[0], r.value[1], r.value[2], r.value[3], r.value[4], r.value[5]);
    }
}

/* pool.h Streams, with queued work that waits until something synchronizes
 * (GPUMEM_SIM_STREAM_DELAY_US): a block freed on s1 with work pending is
 * reused at once on s1, and on another stream, with NULL, or (a host block)
 * at all, only once s1's work is done. */
static void case_streams(const void *arg, child_result *out)
{
    (void)arg;
    setenv("GPUMEM_SIM_STREAM_DELAY_US", "10000000", 1);
    gpumem_context *c = NULL;
    if ((out->status = gpumem_context_create(0, &c)) != GPUMEM_OK)
        return;
    const gpumem_dtype *t = gpumem_dtype_builtin(GPUMEM_INT32);
    int64_t n = 1 << 16;
    int32_t v = 3;
    int i = 0;
    for (int other = 0; other < 3; other++)
        for (int sync = 0; sync < 2; sync++) {
            gpumem_stream *s1 = NULL, *s2 = NULL;
            gpumem_pool *p = NULL;
            gpumem_array *a = NULL, *b = NULL;
            gpumem_stream_create(c, 0, &s1);
            gpumem_stream_create(c, 0, &s2);
            gpumem_pool_create(c, 0, &p);
            gpumem_pool_device_array(p, 1, &n, t, 'C', s1, &a);
            gpumem_array_fill(a, &v, s1);
            gpumem_array_release(a); /* back to the pool, ordered on s1 */
            if (sync)
                gpumem_stream_synchronize(s1);
            gpumem_pool_device_array(p, 1, &n, t, 'C', other == 0 ? s1 : other == 1 ? s2 : NULL, &b);
            struct gpumem_pool_stats st = {.size = sizeof st};
            gpumem_pool_stats(p, &st);
            out->value[i++] = (long)st.hits;
            gpumem_array_release(b);
            gpumem_pool_destroy(p);
            gpumem_stream_destroy(s1);
            gpumem_stream_destroy(s2);
        }
    for (int sync = 0; sync < 2; sync++) {
        gpumem_stream *s1 = NULL;
        gpumem_host_pool *hp = NULL;
        gpumem_array *d = NULL;
        gpumem_allocation *h1 = NULL, *h2 = NULL;
        gpumem_stream_create(c, 0, &s1);
        gpumem_host_pool_create(c, 0, &hp);
        gpumem_device_array(c, 1, &n, NULL, t, 'C', NULL, &d);
        gpumem_host_pool_allocate_bytes(hp, 4096, &h1);
        gpumem_array_fill(d, &v, s1);
        gpumem_allocation_free(h1, s1);
        if (sync)
            gpumem_stream_synchronize(s1);
        gpumem_host_pool_allocate_bytes(hp, 4096, &h2);
        struct gpumem_pool_stats st = {.size = sizeof st};
        gpumem_host_pool_stats(hp, &st);
        out->value[i++] = (long)st.hits;
        gpumem_allocation_free(h2, NULL);
        gpumem_host_pool_destroy(hp);
        gpumem_array_release(d);
        gpumem_stream_destroy(s1);
    }
    gpumem_context_release(c);
}

void stream_checks(void)
{
    child_result r;
    run_child(case_streams, NULL, &r);
    ok(r.status == GPUMEM_OK && r.value[0] == 1 && r.value[1] == 1, "the same stream reuses a pending block at once");
    ok(r.value[2] == 0 && r.value[3] == 1, "another stream: a fresh block while s1's work is pending, reuse after");
    ok(r.value[4] == 0 && r.value[5] == 1, "a NULL stream: a fresh block while pending, reuse after");
    ok(r.value[6] == 0 && r.value[7] == 1, "a host block freed on a stream: reused only once its work is done");
}

/* GPUMEM_ALLOCATOR (doc/environment.md) */
static void case_allocator(const void *arg, child_result *out)
{
    setenv("GPUMEM_ALLOCATOR", (const char *)arg, 1);
    gpumem_context *c = (gpumem_context *)out;
    out->status = gpumem_context_create(0, &c);
    snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
    if (out->status != GPUMEM_OK) {
        out->value[2] = c == (gpumem_context *)out;
        c = NULL;
        out->value[3] = gpumem_context_create(0, &c);
        return;
    }
    int64_t n = 1000;
    gpumem_array *a = NULL;
    gpumem_device_array(c, 1, &n, NULL, gpumem_dtype_builtin(GPUMEM_INT32), 'C', NULL, &a);
    gpumem_array_release(a);
    struct gpumem_memory_report rep;
    memset(&rep, 0, sizeof rep);
    rep.size = sizeof rep;
    gpumem_memory_report(c, 0, &rep);
    out->value[0] = (long)rep.pools;
    out->value[1] = (long)rep.pool_held_blocks;
    gpumem_context_release(c);
}

void allocator_env_checks(void)
{
    child_result r;
    run_child(case_allocator, "pool", &r);
    ok(r.status == GPUMEM_OK && r.value[0] == 1 && r.value[1] == 1,
       "GPUMEM_ALLOCATOR=pool: the context's own pool holds the released array's block");
    run_child(case_allocator, " Pool ", &r);
    ok(r.status == GPUMEM_OK && r.value[0] == 1, "GPUMEM_ALLOCATOR=' Pool ': a word in any case, blanks around");
    run_child(case_allocator, "driver", &r);
    ok(r.status == GPUMEM_OK && r.value[0] == 0 && r.value[1] == 0, "GPUMEM_ALLOCATOR=driver: no pool");
    run_child(case_allocator, "caching", &r);
    ok(r.status == GPUMEM_ERROR_INVALID_ENVIRONMENT && strstr(r.text, "GPUMEM_ALLOCATOR") &&
           strstr(r.text, "caching") && r.value[2] == 1 && r.value[3] == GPUMEM_ERROR_INVALID_ENVIRONMENT,
       "GPUMEM_ALLOCATOR=caching: INVALID_ENVIRONMENT naming the variable and value, *ctx alone (%s)", r.text);
}

void case_trace_pct(const void *arg, child_result *out)
{
    setenv("GPUMEM_TRACE", (const char *)arg, 1);
    gpumem_context *c = (gpumem_context *)out;
    out->status = gpumem_context_create(0, &c);
    snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
    if (out->status == GPUMEM_OK) {
        gpumem_context_release(c);
        return;
    }
    out->value[0] = c == (gpumem_context *)out;
    out->value[1] = gpumem_context_create(0, &c); /* every later creation fails too */
}
