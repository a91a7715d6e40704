/* Arrays on pools: gpumem_context_set_pool makes a context's array
 * allocations (device_array, to_device, copy scratch) come from a device
 * pool, gpumem_pool_device_array gives one device array from a chosen pool,
 * and gpumem_host_pool_allocate gives pinned arrays whose memory goes back
 * to a page-locked pool. */
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

    /* gpumem_pool_device_array: one array from a chosen pool; the context's allocator stays the driver. */
    {
        gpumem_pool *p2 = NULL;
        gpumem_stream *s2 = NULL;
        is_int(gpumem_pool_create(ctx, 0, &p2), GPUMEM_OK, "a second device pool");
        gpumem_stream_create(ctx, 0, &s2);
        gpumem_array *pd = NULL, *other = NULL, *view = NULL;
        allocs = calls("cuMemAlloc");
        is_int(gpumem_pool_device_array(p2, 2, shape, f32, 'F', s2, &pd), GPUMEM_OK,
               "gpumem_pool_device_array: 64x100 float32, F order, on a stream");
        gpumem_memory_kind pk = GPUMEM_MEMORY_HOST;
        int64_t pstr[2] = {0, 0};
        gpumem_context *pctx = NULL;
        gpumem_array_kind(pd, &pk);
        gpumem_array_strides(pd, pstr);
        gpumem_array_context(pd, &pctx);
        ok(pk == GPUMEM_MEMORY_DEVICE && pstr[0] == 4 && pstr[1] == 256 && pctx == ctx,
           "a device array of the pool's context, F strides (4, 256)");
        ok(active(p2) == 1 && active(pool) == 0 && calls("cuMemAlloc") - allocs == 1,
           "its block is the new pool's: one cuMemAlloc, none of the other pool's");
        gpumem_device_array(ctx, 2, shape, NULL, f32, 'C', NULL, &other);
        ok(active(p2) == 1 && calls("cuMemAlloc") - allocs == 2,
           "the context's own arrays still come from the driver (gpumem_context_set_pool is unaffected)");
        gpumem_array_release(other);
        static float fback[100][64];
        gpumem_array *fo = NULL;
        gpumem_host_array_wrap(fback, 2, shape, (const int64_t[]){4, 256}, f32, &fo);
        is_int(gpumem_copy_to_device(pd, h, s2), GPUMEM_OK, "a copy into it on the stream");
        gpumem_copy_to_host(pd, fo, s2);
        gpumem_stream_synchronize(s2);
        ok(fback[99][63] == host[63][99] && fback[0][1] == host[1][0], "holds the data");
        gpumem_array_release(fo);
        gpumem_array_slice(pd, (gpumem_slice[]){GPUMEM_INDEX(3)}, 1, &view);
        gpumem_array_release(pd);
        is_int(active(p2), 1, "a view keeps the block after the array's release");
        float pv = 0;
        ok(gpumem_array_get_item_n(view, 1, (int64_t[]){7}, &pv, NULL) == GPUMEM_OK && pv == host[3][7],
           "and reads it");
        gpumem_array_release(view);
        ok(active(p2) == 0 && held(p2) == 1, "the view's release returns the block to the pool");
        struct gpumem_pool_stats ps = {.size = sizeof ps};
        is_int(gpumem_pool_device_array(p2, 2, shape, f32, 'C', s2, &pd), GPUMEM_OK, "another one on the stream");
        gpumem_pool_stats(p2, &ps);
        ok(ps.hits == 1 && ps.misses == 1, "reuses the block freed in the stream's order: 1 hit, 1 miss");
        gpumem_array_release(pd);
        /* bad input: nothing made */
        gpumem_array *none = (gpumem_array *)&none;
        is_int(gpumem_pool_device_array(NULL, 2, shape, f32, 'C', NULL, &none), GPUMEM_ERROR_NULL_ARGUMENT,
               "a NULL pool");
        like(gpumem_last_error(), "gpumem_pool_device_array: argument 'pool'", "names the function and 'pool'");
        is_int(gpumem_pool_device_array(p2, 2, shape, f32, 'X', NULL, &none), GPUMEM_ERROR_INVALID_ORDER,
               "a bad order");
        is_int(gpumem_pool_device_array(p2, 2, (int64_t[]){-1, 3}, f32, 'C', NULL, &none),
               GPUMEM_ERROR_NEGATIVE_DIMENSION, "a negative extent");
        gpumem_host_pool *hp2 = NULL;
        gpumem_host_pool_create(ctx, 0, &hp2);
        is_int(gpumem_pool_device_array((gpumem_pool *)(void *)hp2, 2, shape, f32, 'C', NULL, &none),
               GPUMEM_ERROR_INVALID_VALUE, "a page-locked pool is refused");
        gpumem_host_pool_destroy(hp2);
        uint64_t total = 0, freeb = 0;
        gpumem_memory_info(ctx, &freeb, &total);
        is_int(gpumem_pool_device_array(p2, 1, (int64_t[]){(int64_t)total}, f32, 'C', NULL, &none),
               GPUMEM_ERROR_OUT_OF_MEMORY, "more than the device has");
        like(gpumem_last_error(), "gpumem_pool_device_array: ", "the message names the call");
        if (count >= 2) {
            gpumem_context *c1 = NULL;
            gpumem_stream *s1 = NULL;
            gpumem_context_create(1, &c1);
            gpumem_stream_create(c1, 0, &s1);
            is_int(gpumem_pool_device_array(p2, 2, shape, f32, 'C', s1, &none), GPUMEM_ERROR_CONTEXT_MISMATCH,
                   "a stream of another device");
            gpumem_stream_destroy(s1);
            gpumem_context_release(c1);
        } else {
            skip(1, "needs two devices");
        }
        ok(none == (gpumem_array *)&none, "no array came out of the failures");
        /* The pool may go first: its live blocks stay valid and go to the driver at the end. */
        is_int(gpumem_pool_device_array(p2, 2, shape, f32, 'C', NULL, &pd), GPUMEM_OK, "one more array");
        is_int(gpumem_pool_destroy(p2), GPUMEM_OK, "destroy its pool while it lives");
        float nine = 9.0f, got9 = 0;
        ok(gpumem_array_fill(pd, &nine, NULL) == GPUMEM_OK &&
               gpumem_array_get_item_n(pd, 2, (int64_t[]){63, 99}, &got9, NULL) == GPUMEM_OK && got9 == 9.0f,
           "the array still works");
        int64_t frees = calls("cuMemFree");
        is_int(gpumem_array_release(pd), GPUMEM_OK, "its release");
        is_int(calls("cuMemFree") - frees, 1, "gives the block to the driver");
        is_int(gpumem_pool_device_array(p2, 2, shape, f32, 'C', NULL, &none), GPUMEM_ERROR_INVALID_STATE,
               "a destroyed pool is refused");
        gpumem_stream_destroy(s2);
    }

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
