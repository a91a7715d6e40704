/* Arrays on pools: gpumem_context_set_pool makes a context's array
 * allocations (device_array, to_device, copy scratch) come from a device
 * pool, and gpumem_host_pool_allocate gives pinned arrays whose memory goes
 * back to a page-locked pool. */
#include <stdlib.h>
#include <string.h>

#include <gpumem.h>

#include "arrays.h"
#include "child.h"
#include "tap.h"

static uint64_t held(gpumem_pool *p)
{
    uint64_t n = 0;
    gpumem_pool_held_blocks(p, &n);
    return n;
}

static uint64_t active(gpumem_pool *p)
{
    uint64_t n = 0;
    gpumem_pool_active_blocks(p, &n);
    return n;
}

/* GPUMEM_ALLOCATOR=pool: a fresh context allocates its arrays from its own
 * pool; value[0]: cuMemAlloc calls for two arrays made one after the other,
 * value[1]: deferred frees after the first is released, value[2]: the
 * cuMemFree calls made by the context's last release. */
static void own_pool(const void *arg, child_result *out)
{
    setenv("GPUMEM_ALLOCATOR", (const char *)arg, 1);
    gpumem_context *c = NULL;
    out->status = gpumem_context_create(0, &c);
    snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
    if (out->status != GPUMEM_OK)
        return;
    int64_t n = 1000;
    gpumem_array *x = NULL, *y = NULL;
    int64_t allocs = calls("cuMemAlloc");
    gpumem_device_array(c, 1, &n, NULL, gpumem_dtype_builtin(GPUMEM_FLOAT32), 'C', NULL, &x);
    gpumem_array_release(x);
    size_t pending = 99;
    gpumem_context_pending_deallocations(c, &pending, NULL);
    gpumem_device_array(c, 1, &n, NULL, gpumem_dtype_builtin(GPUMEM_FLOAT32), 'C', NULL, &y);
    out->value[0] = (long)(calls("cuMemAlloc") - allocs);
    out->value[1] = (long)pending;
    gpumem_array_release(y);
    int64_t frees = calls("cuMemFree");
    gpumem_context_release(c);
    out->value[2] = (long)(calls("cuMemFree") - frees);
}

int main(void)
{
    child_result r;
    run_child(own_pool, "pool", &r);
    is_int(r.status, GPUMEM_OK, "GPUMEM_ALLOCATOR=pool: a context");
    ok(r.value[0] == 1 && r.value[1] == 0, "its arrays come from its own pool: one cuMemAlloc for two, no deferred free");
    is_int(r.value[2], 1, "and the pool's block goes back to the driver with the context");
    run_child(own_pool, "driver", &r);
    ok(r.status == GPUMEM_OK && r.value[0] == 2 && r.value[1] == 1,
       "GPUMEM_ALLOCATOR=driver: each array from the driver, frees deferred (numba's default)");
    run_child(own_pool, "caching", &r);
    is_int(r.status, GPUMEM_ERROR_INVALID_ENVIRONMENT, "GPUMEM_ALLOCATOR=caching is refused");
    like(r.text, "GPUMEM_ALLOCATOR='caching'", "naming the variable and its value");

    if (test_on_sim())
        setenv("GPUMEM_SIM_DEVICES", "2", 1);
    gpumem_context *ctx = NULL;
    if (gpumem_context_create(0, &ctx) != GPUMEM_OK)
        bail_out("no context: %s", gpumem_last_error());
    const gpumem_dtype *f32 = gpumem_dtype_builtin(GPUMEM_FLOAT32);
    gpumem_pool *pool = NULL;
    is_int(gpumem_pool_create(ctx, 0, &pool), GPUMEM_OK, "a device pool");
    is_int(gpumem_context_set_pool(ctx, pool), GPUMEM_OK, "set it as the context's allocator");

    int64_t shape[2] = {64, 100};
    gpumem_array *a = NULL, *b = NULL;
    int64_t allocs = calls("cuMemAlloc");
    is_int(gpumem_device_array(ctx, 2, shape, NULL, f32, 'C', NULL, &a), GPUMEM_OK, "a device array");
    is_int(active(pool), 1, "it is an active block of the pool");
    gpumem_array_release(a);
    is_int(held(pool), 1, "released, the block is held by the pool");
    is_int(gpumem_device_array(ctx, 2, shape, NULL, f32, 'C', NULL, &a), GPUMEM_OK, "another array of that size");
    is_int(calls("cuMemAlloc") - allocs, 1, "reuses the block: one cuMemAlloc in all");

    static float host[64][100], back[64][100];
    for (int i = 0; i < 6400; i++)
        host[i / 100][i % 100] = (float)i;
    gpumem_array *h = NULL, *o = NULL, *cols = NULL;
    gpumem_host_array_wrap(host, 2, shape, NULL, f32, &h);
    gpumem_host_array_wrap(back, 2, shape, NULL, f32, &o);
    is_int(gpumem_to_device(ctx, h, NULL, 0, &b), GPUMEM_OK, "to_device allocates from the pool too");
    is_int(active(pool), 2, "two active blocks");
    gpumem_copy_to_host(b, o, NULL);
    ok(memcmp(host, back, sizeof host) == 0, "pooled arrays hold their data");

    /* A strided fill needs scratch space: it comes from the pool and goes back. */
    gpumem_slice every_other[2] = {GPUMEM_SLICE_ALL, {GPUMEM_SLICE_DEFAULT, GPUMEM_SLICE_DEFAULT, 2}};
    gpumem_array_slice(b, every_other, 2, &cols);
    allocs = calls("cuMemAlloc");
    float one = 1.0f;
    is_int(gpumem_array_fill(cols, &one, NULL), GPUMEM_OK, "a strided fill (scratch space)");
    is_int(active(pool), 2, "its scratch block is back in the pool");
    gpumem_copy_to_host(b, o, NULL);
    ok(back[5][4] == 1.0f && back[5][5] == host[5][5], "the fill wrote exactly the view");

    /* Another device's pool is refused. */
    int count = 0;
    gpumem_device_count(&count);
    if (count >= 2) {
        gpumem_context *c1 = NULL;
        gpumem_pool *p1 = NULL;
        gpumem_context_create(1, &c1);
        gpumem_pool_create(c1, 0, &p1);
        is_int(gpumem_context_set_pool(ctx, p1), GPUMEM_ERROR_CONTEXT_MISMATCH, "a pool of another device");
        gpumem_pool_destroy(p1);
        gpumem_context_release(c1);
    } else {
        skip(1, "needs two devices");
    }

    /* Back to the driver. */
    is_int(gpumem_context_set_pool(ctx, NULL), GPUMEM_OK, "set no pool");
    gpumem_array *c = NULL;
    allocs = calls("cuMemAlloc");
    gpumem_device_array(ctx, 2, shape, NULL, f32, 'C', NULL, &c);
    is_int(calls("cuMemAlloc") - allocs, 1, "arrays come from the driver again");
    is_int(active(pool), 2, "while the pooled arrays keep their blocks");
    gpumem_array_release(c);
    gpumem_array_release(cols);
    gpumem_array_release(a);
    gpumem_array_release(b);
    is_int(active(pool), 0, "releasing them returns every block to the pool");

    /* The page-locked pool gives pinned arrays. */
    gpumem_host_pool *hp = NULL;
    is_int(gpumem_host_pool_create(ctx, GPUMEM_HOST_ALLOC_PORTABLE, &hp), GPUMEM_OK, "a page-locked pool");
    gpumem_array *pa = NULL;
    is_int(gpumem_host_pool_allocate(hp, 2, shape, f32, 'F', &pa), GPUMEM_OK, "allocate a 64x100 F-ordered array");
    gpumem_memory_kind kind;
    int64_t strides[2];
    void *ph = NULL;
    int pinned = 0;
    gpumem_array_kind(pa, &kind);
    gpumem_array_strides(pa, strides);
    gpumem_array_host_pointer(pa, &ph);
    gpumem_host_is_pinned(ph, 6400 * 4, &pinned);
    ok(kind == GPUMEM_MEMORY_PINNED && strides[0] == 4 && strides[1] == 256, "a pinned array in F order");
    is_int(pinned, 1, "its memory is page-locked");
    gpumem_stream *s = NULL;
    gpumem_stream_create(ctx, 0, &s);
    gpumem_array *dd = NULL;
    gpumem_to_device(ctx, h, NULL, 0, &dd);
    is_int(gpumem_copy_to_host(dd, pa, s), GPUMEM_OK, "an asynchronous copy into it is accepted");
    gpumem_stream_synchronize(s);
    float v = 0;
    gpumem_array_get_item(pa, (int64_t[]){63, 99}, &v, NULL);
    ok(v == host[63][99], "and lands");
    uint64_t hheld = 0, hactive = 0;
    gpumem_host_pool_active_blocks(hp, &hactive);
    is_int(hactive, 1, "one active page-locked block");
    gpumem_array_release(pa);
    gpumem_host_pool_held_blocks(hp, &hheld);
    gpumem_host_pool_active_blocks(hp, &hactive);
    ok(hheld == 1 && hactive == 0, "released, it goes back to the pool");
    is_int(gpumem_host_pool_allocate(hp, 2, shape, f32, 'X', &pa), GPUMEM_ERROR_INVALID_ORDER, "a bad order");

    gpumem_array_release(dd);
    gpumem_stream_destroy(s);
    gpumem_host_pool_destroy(hp);
    gpumem_array_release(h);
    gpumem_array_release(o);
    gpumem_pool_destroy(pool);
    gpumem_context_release(ctx);
    done_testing();
    return exit_status();
}
