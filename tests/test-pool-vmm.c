/* Virtual-memory pools (GPUMEM_POOL_SOURCE_VIRTUAL) and pool properties:
 * one reservation, chunks mapped on demand at the granularity (one
 * cuMemCreate, cuMemMap and cuMemSetAccess each), freed blocks that merge
 * whichever chunk they came from (the drifting sizes and small
 * blocks kept beside a growing one, against the classic pool), data that
 * survives, trim and the release threshold, the maximum and the
 * out-of-memory ladder, every bad property refused with its message, and a
 * fault-injection walk over every driver call of a workload.
 *
 * Public API only; the figures are the simulator's (2 MiB granularity). */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "child.h"
#include "gpumem.h"
#include "tap.h"

#define M ((uint64_t)1 << 20)

static gpumem_context *ctx;
static int sim;

static uint64_t calls(const char *fn)
{
    uint64_t c = 0;
    gpumem_debug_driver_calls(fn, &c);
    return c;
}

static uint64_t device_used(void)
{
    uint64_t fr = 0, total = 0;
    gpumem_memory_info(ctx, &fr, &total);
    return total - fr;
}

/* What the device is charged, by cuMemGetInfo: exact on the simulator.  A
 * real driver charges its own page tables for the reservation and the
 * mappings too (the H200 run of 2026-11-29 saw 24 MiB move), so there the
 * pool's source_bytes, checked beside each of these, is the figure. */
static void device_charge_is(uint64_t got, uint64_t want, const char *what)
{
    if (sim)
        is_int(got, want, what);
    else
        skip(1, "cuMemGetInfo on a real driver counts the driver's own page tables: source_bytes is checked instead");
}

static struct gpumem_pool_stats stats_of(gpumem_pool *p)
{
    struct gpumem_pool_stats s = {.size = sizeof s};
    gpumem_pool_stats(p, &s);
    return s;
}

static gpumem_pool *vmm_pool(uint64_t maximum, uint64_t threshold)
{
    struct gpumem_pool_props props = GPUMEM_POOL_PROPS_INIT;
    props.source = GPUMEM_POOL_SOURCE_VIRTUAL;
    props.maximum = maximum;
    props.release_threshold = threshold;
    gpumem_pool *p = NULL;
    if (gpumem_pool_create_with_props(ctx, &props, &p) != GPUMEM_OK)
        bail_out("a virtual-memory pool: %s", gpumem_last_error());
    return p;
}

static void test_basics(void)
{
    uint64_t used0 = device_used(), total = 0, fr = 0;
    gpumem_memory_info(ctx, &fr, &total);
    uint64_t res0 = calls("cuMemAddressReserve");
    gpumem_pool *p = vmm_pool(0, UINT64_MAX);
    struct gpumem_pool_stats s = stats_of(p);
    uint64_t want_res = (total + 2 * M - 1) / (2 * M) * (2 * M);
    want_res += want_res / 8 / (2 * M) * (2 * M);
    is_int(calls("cuMemAddressReserve") - res0, 1, "a virtual-memory pool makes one address reservation");
    is_int(s.reserved_bytes, want_res, "of the device's memory and an eighth more for small blocks");
    is_int(s.source_bytes, 0, "nothing mapped yet");
    device_charge_is(device_used(), used0, "nothing charged to the device");

    uint64_t map0 = calls("cuMemMap"), create0 = calls("cuMemCreate"), acc0 = calls("cuMemSetAccess");
    gpumem_allocation *a = NULL, *b = NULL;
    ok(gpumem_pool_allocate(p, 3 * M, NULL, &a) == GPUMEM_OK, "allocate 3 MiB");
    s = stats_of(p);
    is_int(s.source_bytes, 4 * M, "two granules mapped (4 MiB)");
    ok(calls("cuMemMap") - map0 == 2 && calls("cuMemCreate") - create0 == 2 && calls("cuMemSetAccess") - acc0 == 2,
       "a chunk per granule: two cuMemCreate, two cuMemMap, two cuMemSetAccess");
    device_charge_is(device_used() - used0, 4 * M, "the device is charged the mapped bytes");
    ok(gpumem_pool_allocate(p, 512 * 1024, NULL, &b) == GPUMEM_OK, "a small block (512 KiB)");
    uint64_t pa = 0, pb = 0;
    gpumem_allocation_pointer(a, &pa);
    gpumem_allocation_pointer(b, &pb);
    ok(pb >= pa + s.reserved_bytes * 8 / 9 - 4 * M, "comes from the reservation's small part");

    /* Data written through a pool array survives and reads back. */
    gpumem_array *arr = NULL;
    const int64_t n = 1 << 18;
    const gpumem_dtype *f32 = gpumem_dtype_builtin(GPUMEM_FLOAT32);
    float v = 2.5f, got = 0;
    ok(gpumem_pool_device_array(p, 1, &n, f32, 'C', NULL, &arr) == GPUMEM_OK &&
           gpumem_array_fill(arr, &v, NULL) == GPUMEM_OK &&
           gpumem_array_get_item_n(arr, 1, (const int64_t[]){n - 1}, &got, NULL) == GPUMEM_OK && got == 2.5f,
       "an array of the pool holds its data");
    gpumem_array_release(arr);
    gpumem_allocation_free(a, NULL);
    gpumem_allocation_free(b, NULL);

    uint64_t unmap0 = calls("cuMemUnmap"), rel0 = calls("cuMemRelease");
    ok(gpumem_pool_trim(p, 0) == GPUMEM_OK, "trim to nothing");
    s = stats_of(p);
    is_int(s.source_bytes, 0, "every chunk unmapped");
    is_int(calls("cuMemUnmap") - unmap0, calls("cuMemRelease") - rel0, "each unmapped chunk released");
    device_charge_is(device_used(), used0, "the device has all its memory back");
    uint64_t free0 = calls("cuMemAddressFree");
    ok(gpumem_pool_destroy(p) == GPUMEM_OK, "destroy");
    is_int(calls("cuMemAddressFree") - free0, 1, "the reservation is freed with the pool");
}

/* 40 rounds: 8 blocks of (16 + r) MiB freed, then 4 of (32 + 2r) MiB freed. */
static uint64_t drifting(gpumem_pool *p, int rounds)
{
    for (int r = 0; r < rounds; r++) {
        gpumem_allocation *a[8] = {0};
        for (int i = 0; i < 8; i++)
            if (gpumem_pool_allocate(p, (16 + (uint64_t)r) * M, NULL, &a[i]) != GPUMEM_OK)
                return 0;
        for (int i = 0; i < 8; i++)
            gpumem_allocation_free(a[i], NULL);
        for (int i = 0; i < 4; i++)
            if (gpumem_pool_allocate(p, (32 + 2 * (uint64_t)r) * M, NULL, &a[i]) != GPUMEM_OK)
                return 0;
        for (int i = 0; i < 4; i++)
            gpumem_allocation_free(a[i], NULL);
    }
    return stats_of(p).source_bytes;
}

static void test_drifting(void)
{
    gpumem_pool *classic = NULL;
    gpumem_pool_create(ctx, 0, &classic);
    uint64_t held_classic = drifting(classic, 12);
    gpumem_pool_destroy(classic);
    gpumem_pool *p = vmm_pool(0, UINT64_MAX);
    uint64_t map0 = calls("cuMemMap");
    uint64_t held = drifting(p, 12);
    uint64_t peak_use = 8 * 27 * M;
    diag("drifting sizes, 12 rounds: in use %llu MiB at most; classic pool holds %llu MiB, virtual memory %llu MiB",
         (unsigned long long)(peak_use / M), (unsigned long long)(held_classic / M), (unsigned long long)(held / M));
    ok(held_classic >= 2 * peak_use, "the classic pool strands memory (%llu MiB)", (unsigned long long)(held_classic / M));
    is_int(held, peak_use, "the virtual-memory pool maps what is in use at most, exactly (216 MiB)");
    ok(calls("cuMemMap") - map0 == held / (2 * M), "one cuMemMap per granule mapped (%llu for %llu)",
       (unsigned long long)(calls("cuMemMap") - map0), (unsigned long long)(held / (2 * M)));
    gpumem_pool_destroy(p);
}

static void test_small_beside_growing(void)
{
    gpumem_pool *p = vmm_pool(0, UINT64_MAX);
    gpumem_allocation *kept[30] = {0};
    uint64_t peak_use = 0, live_small = 0;
    int fails = 0;
    for (int r = 0; r < 30; r++) {
        gpumem_allocation *big = NULL;
        fails += gpumem_pool_allocate(p, M, NULL, &kept[r]) != GPUMEM_OK;
        live_small += M;
        uint64_t bytes = (10 + 3 * (uint64_t)r) * M;
        fails += gpumem_pool_allocate(p, bytes, NULL, &big) != GPUMEM_OK;
        if (live_small + bytes > peak_use)
            peak_use = live_small + bytes;
        gpumem_allocation_free(big, NULL);
    }
    uint64_t held = stats_of(p).source_bytes;
    is_int(fails, 0, "1 MiB kept each round beside a large block growing from 10 to 97 MiB");
    ok(held * 100 <= peak_use * 105, "held %llu MiB for %llu MiB in use at most (<= 1.05x)",
       (unsigned long long)(held / M), (unsigned long long)(peak_use / M));
    for (int r = 0; r < 30; r++)
        gpumem_allocation_free(kept[r], NULL);
    gpumem_pool_destroy(p);
}

static void test_threshold_and_maximum(void)
{
    uint64_t used0 = device_used();
    gpumem_pool *p = vmm_pool(64 * M, 0);
    gpumem_allocation *a = NULL, *b = NULL, *c = NULL;
    ok(gpumem_pool_allocate(p, 40 * M, NULL, &a) == GPUMEM_OK && gpumem_pool_allocate(p, 8 * M, NULL, &b) == GPUMEM_OK,
       "maximum 64 MiB, release threshold 0: 40 MiB and 8 MiB");
    gpumem_allocation_free(a, NULL);
    gpumem_allocation_free(b, NULL);
    ok(gpumem_pool_allocate(p, 4 * M, NULL, &a) == GPUMEM_OK, "both freed, then 4 MiB: a size the pool holds none of");
    is_int(stats_of(p).source_bytes, 4 * M, "the held blocks merged; the 4 MiB took the first two granules, the "
           "idle 44 MiB is past the threshold and went");
    gpumem_status st = gpumem_pool_allocate(p, 61 * M, NULL, &c);
    is_int(st, GPUMEM_ERROR_OUT_OF_MEMORY, "61 MiB beside it: more than the maximum leaves room for, out of memory");
    ok(strstr(gpumem_last_error(), "gpumem_pool_allocate") != NULL &&
           strstr(gpumem_last_error(), "cuMemCreate: CUDA_ERROR_OUT_OF_MEMORY") != NULL &&
           strstr(gpumem_last_error(), "a pool block of 61 MiB") != NULL,
       "the message names the call, the exact block and the driver call that maps: %s", gpumem_last_error());
    ok(gpumem_pool_allocate(p, 56 * M, NULL, &c) == GPUMEM_OK, "56 MiB fits beside the 4");
    is_int(stats_of(p).source_bytes, 60 * M, "60 MiB mapped, within the maximum");
    gpumem_allocation_free(a, NULL);
    gpumem_allocation_free(c, NULL);
    ok(gpumem_pool_free_held(p) == GPUMEM_OK && stats_of(p).source_bytes == 0,
       "free_held gives every chunk back to the driver");
    device_charge_is(device_used(), used0, "all device memory is back");
    gpumem_pool_destroy(p);
}

static void test_ladder(void)
{
    /* Another pool's idle chunks go when the driver runs out. */
    uint64_t total = 0, fr = 0;
    gpumem_memory_info(ctx, &fr, &total);
    gpumem_pool *p = vmm_pool(0, UINT64_MAX);
    gpumem_allocation *a = NULL;
    uint64_t big = fr / 2 / (2 * M) * (2 * M) + 2 * M;
    ok(gpumem_pool_allocate(p, big, NULL, &a) == GPUMEM_OK, "more than half the free memory from the pool");
    gpumem_allocation_free(a, NULL);
    gpumem_array *arr = NULL;
    int64_t n = (int64_t)big;
    ok(gpumem_device_array(ctx, 1, &n, NULL, gpumem_dtype_builtin(GPUMEM_UINT8), 'C', NULL, &arr) == GPUMEM_OK,
       "as much again from the driver: the ladder unmaps the pool's idle chunks");
    is_int(stats_of(p).source_bytes, 0, "the pool maps nothing now");
    gpumem_array_release(arr);
    gpumem_pool_destroy(p);
}

static void bad(const struct gpumem_pool_props *props, int host, gpumem_status want, const char *needle,
                const char *name)
{
    gpumem_pool *p = NULL;
    gpumem_host_pool *hp = NULL;
    gpumem_status st = host ? gpumem_host_pool_create_with_props(ctx, props, &hp)
                            : gpumem_pool_create_with_props(ctx, props, &p);
    const char *call = host ? "gpumem_host_pool_create_with_props" : "gpumem_pool_create_with_props";
    ok(st == want && strstr(gpumem_last_error(), call) != NULL && strstr(gpumem_last_error(), needle) != NULL &&
           p == NULL && hp == NULL,
       "%s: %s", name, gpumem_last_error());
}

static void test_props(void)
{
    struct gpumem_pool_props d = GPUMEM_POOL_PROPS_INIT, x;
    gpumem_pool *p = NULL;
    ok(gpumem_pool_create_with_props(ctx, &d, &p) == GPUMEM_OK, "the defaults make a device pool");
    uint64_t alloc0 = calls("cuMemAlloc");
    gpumem_allocation *a = NULL;
    gpumem_pool_allocate(p, 1000, NULL, &a);
    gpumem_allocation_free(a, NULL);
    is_int(calls("cuMemAlloc") - alloc0, 1, "of cuMemAlloc blocks");
    is_int(stats_of(p).reserved_bytes, 0, "with no reservation");
    ok(gpumem_pool_trim(p, 0) == GPUMEM_OK && stats_of(p).held_blocks == 0, "trim gives its held block back");
    gpumem_pool_destroy(p);
    struct gpumem_pool_props h = GPUMEM_POOL_PROPS_INIT;
    h.source = GPUMEM_POOL_SOURCE_PINNED;
    h.flags = GPUMEM_HOST_ALLOC_DEVICEMAP;
    gpumem_host_pool *hp = NULL;
    ok(gpumem_host_pool_create_with_props(ctx, &h, &hp) == GPUMEM_OK, "a mapped host pool from props");
    ok(gpumem_host_pool_allocate_bytes(hp, 5000, &a) == GPUMEM_OK && gpumem_allocation_free(a, NULL) == GPUMEM_OK &&
           gpumem_host_pool_trim(hp, 0) == GPUMEM_OK,
       "allocates, frees and trims");
    gpumem_host_pool_destroy(hp);

    ok(gpumem_pool_create_with_props(ctx, NULL, &p) == GPUMEM_ERROR_NULL_ARGUMENT, "NULL props");
    ok(gpumem_pool_create_with_props(ctx, &d, NULL) == GPUMEM_ERROR_NULL_ARGUMENT, "NULL out-parameter");
    x = d, x.size = sizeof x - 1;
    bad(&x, 0, GPUMEM_ERROR_INVALID_VALUE, "props->size", "a short struct");
    struct {
        struct gpumem_pool_props p;
        uint64_t later;
    } longer = {d, 1};
    longer.p.size = sizeof longer;
    bad(&longer.p, 0, GPUMEM_ERROR_INVALID_VALUE, "later version", "a longer struct with a nonzero unknown field");
    longer.later = 0;
    ok(gpumem_pool_create_with_props(ctx, &longer.p, &p) == GPUMEM_OK && gpumem_pool_destroy(p) == GPUMEM_OK,
       "a longer struct with zeros past ours is accepted");
    x = d, x.source = 7;
    bad(&x, 0, GPUMEM_ERROR_INVALID_VALUE, "props->source", "an unknown source");
    x = d, x.source = GPUMEM_POOL_SOURCE_PINNED;
    bad(&x, 0, GPUMEM_ERROR_INVALID_VALUE, "GPUMEM_POOL_SOURCE_PINNED", "a device pool of pinned memory");
    bad(&d, 1, GPUMEM_ERROR_INVALID_VALUE, "props->source", "a host pool of device memory");
    x = d, x.flags = GPUMEM_HOST_ALLOC_PORTABLE;
    bad(&x, 0, GPUMEM_ERROR_INVALID_VALUE, "props->flags", "host flags on a device pool");
    x = h, x.numa_node = -3;
    bad(&x, 1, GPUMEM_ERROR_INVALID_VALUE, "props->numa_node", "a host pool's node below GPUMEM_NUMA_NODE_NONE");
    x = d, x.numa_node = 0;
    bad(&x, 0, GPUMEM_ERROR_INVALID_VALUE, "props->numa_node", "a NUMA node for a device pool");
    x = d, x.maximum = 64 * M;
    bad(&x, 0, GPUMEM_ERROR_INVALID_VALUE, "GPUMEM_POOL_SOURCE_VIRTUAL", "a maximum for cuMemAlloc blocks");
    x = d, x.source = GPUMEM_POOL_SOURCE_ASYNC, x.growth_step = M;
    bad(&x, 0, GPUMEM_ERROR_INVALID_VALUE, "props->growth_step", "a growth step for the driver's pool");
    x = d, x.source = GPUMEM_POOL_SOURCE_ASYNC;
    if (sim)
        bad(&x, 0, GPUMEM_ERROR_NOT_SIMULATED, "cuMemPoolCreate", "the driver's stream-ordered pool is not simulated");
    else if (gpumem_pool_create_with_props(ctx, &x, &p) == GPUMEM_OK) {
        ok(gpumem_pool_allocate(p, 3 * M, NULL, &a) == GPUMEM_OK && gpumem_allocation_free(a, NULL) == GPUMEM_OK &&
               stats_of(p).source_bytes >= 3 * M,
           "a pool over the driver's stream-ordered pool allocates; its reserved memory is counted");
        gpumem_pool_destroy(p);
    } else {
        skip(1, "no stream-ordered pools on this device");
    }
    x = d, x.release_threshold = 0;
    bad(&x, 0, GPUMEM_ERROR_INVALID_VALUE, "release_threshold", "a release threshold for cuMemAlloc blocks");
    x = d, x.handle_type = GPUMEM_POOL_HANDLE_POSIX_FD;
    bad(&x, 0, GPUMEM_ERROR_INVALID_VALUE, "props->handle_type", "exportable cuMemAlloc blocks");
    x = d, x.source = GPUMEM_POOL_SOURCE_VIRTUAL, x.handle_type = 9;
    bad(&x, 0, GPUMEM_ERROR_INVALID_VALUE, "props->handle_type", "an unknown handle type");
    x = d, x.source = GPUMEM_POOL_SOURCE_VIRTUAL, x.maximum = (uint64_t)1 << 51;
    bad(&x, 0, GPUMEM_ERROR_INVALID_VALUE, "props->maximum", "a maximum above 2^50");
    x = d, x.device = 5;
    bad(&x, 0, GPUMEM_ERROR_CONTEXT_MISMATCH, "props->device", "another device than the context's");
    ok(gpumem_pool_trim(NULL, 0) == GPUMEM_ERROR_NULL_ARGUMENT, "trim NULL");
    ok(gpumem_host_pool_trim((gpumem_host_pool *)(void *)p, 0) != GPUMEM_OK, "trim a destroyed pool");
}

/* Misses that map, merges, a free on a stream, trim, the threshold, destroy. */
static gpumem_status workload(void)
{
    gpumem_status st = GPUMEM_OK;
    gpumem_pool *pool = NULL;
    gpumem_stream *s = NULL;
    gpumem_allocation *a[3] = {NULL, NULL, NULL};
    fault_msg[0] = '\0';
    struct gpumem_pool_props props = GPUMEM_POOL_PROPS_INIT;
    props.source = GPUMEM_POOL_SOURCE_VIRTUAL;
    props.maximum = 256 * M;
    props.release_threshold = 2 * M;
    FAULT_FIRST(gpumem_stream_create(ctx, 0, &s));
    FAULT_FIRST(gpumem_pool_create_with_props(ctx, &props, &pool));
    if (pool == NULL)
        goto done;
    for (int i = 0; i < 3; i++)
        FAULT_FIRST(gpumem_pool_allocate(pool, (size_t)(5 + i) * M, i == 0 ? s : NULL, &a[i]));
    for (int i = 0; i < 3; i++)
        if (a[i] != NULL) {
            FAULT_FIRST(gpumem_allocation_free(a[i], i == 0 ? s : NULL));
            a[i] = NULL;
        }
    FAULT_FIRST(gpumem_stream_synchronize(s));
    FAULT_FIRST(gpumem_pool_allocate(pool, 11 * M, NULL, &a[0])); /* merges, settles */
    FAULT_FIRST(gpumem_pool_trim(pool, 0));
    if (a[0] != NULL) {
        FAULT_FIRST(gpumem_allocation_free(a[0], NULL));
        a[0] = NULL;
    }
    FAULT_FIRST(gpumem_pool_allocate(pool, 300 * 1024, NULL, &a[1]));
    FAULT_FIRST(gpumem_pool_destroy(pool));
    pool = NULL;
done:
    for (int i = 0; i < 3; i++)
        if (a[i] != NULL)
            FAULT_FIRST(gpumem_allocation_free(a[i], NULL));
    if (pool != NULL)
        FAULT_FIRST(gpumem_pool_destroy(pool));
    FAULT_FIRST(gpumem_stream_destroy(s));
    return st;
}

static void fault_child(const void *arg, child_result *out)
{
    long k = *(const long *)arg;
    if (gpumem_context_create(0, &ctx) != GPUMEM_OK) {
        out->status = -1;
        return;
    }
    uint64_t u0 = device_used(), calls0 = fault_arm(k);
    out->status = workload();
    out->value[0] = fault_disarm(calls0);
    snprintf(out->text, sizeof out->text, "%s", fault_msg);
    /* A chunk whose cuMemUnmap or cuMemRelease failed cannot come back. */
    out->value[1] = strstr(fault_msg, "cuMemRelease") != NULL ? 0 : (long)(device_used() - u0);
    gpumem_context_release(ctx);
}

int main(void)
{
    sim = test_on_sim();
    if (sim)
        fault_walk_all(fault_child, "the virtual-memory pool workload", 20, "device", "cuMemUnmap");
    else
        skip(5, "fault injection walks run on the simulator");
    if (gpumem_context_create(0, &ctx) != GPUMEM_OK)
        bail_out("no context: %s", gpumem_last_error());
    test_basics();
    test_drifting();
    test_small_beside_growing();
    test_threshold_and_maximum();
    if (sim)
        test_ladder();
    else
        skip(3, "the ladder test fills the simulator's memory");
    test_props();
    gpumem_context_release(ctx);
    done_testing();
    return exit_status();
}
