/* gpumem_is_cuda_array: what the driver's pointer attributes say about
 * device, pinned, mapped, managed and pageable memory, slices of them, and
 * freed memory; the argument checks and a failing driver call. */
#include <stdlib.h>
#include <string.h>

#include <gpumem.h>

#include "tap.h"

static gpumem_context *ctx;
static const gpumem_dtype *f32;

static int query(uint64_t p, int *result, gpumem_pointer_info *info)
{
    memset(info, 0x5a, sizeof *info);
    info->size = sizeof *info;
    *result = -1;
    gpumem_status st = gpumem_is_cuda_array(p, result, info);
    if (st != GPUMEM_OK)
        diag("gpumem_is_cuda_array: %s", gpumem_last_error());
    return st == GPUMEM_OK;
}

static void check_device(void)
{
    int64_t shape[1] = {1000};
    gpumem_array *d = NULL, *s = NULL;
    if (gpumem_device_array(ctx, 1, shape, NULL, f32, 'C', NULL, &d) != GPUMEM_OK)
        bail_out("device_array: %s", gpumem_last_error());
    uint64_t p = 0;
    gpumem_array_device_pointer(d, &p);
    int dev = -1, r;
    gpumem_context_get_device(ctx, &dev);
    gpumem_pointer_info info;
    ok(query(p, &r, &info), "device memory: answered");
    is_int(r, 1, "device memory is a CUDA array");
    is_int(info.kind, GPUMEM_POINTER_DEVICE, "device memory: kind DEVICE");
    is_int(info.device, dev, "device memory: the context's device");
    ok(info.driver_context != 0, "device memory: a driver context");
    ok(info.device_pointer == p, "device memory: its device pointer is itself");
    ok(info.host_pointer == NULL, "device memory: no host pointer");
    ok(info.range_start == p && info.range_size >= 4000, "device memory: the allocation's range (%llu bytes)",
       (unsigned long long)info.range_size);
    is_int(info.ipc_capable, 1, "device memory from cuMemAlloc has an IPC handle");
    uint64_t ctx_bits = info.driver_context;

    /* an address inside the allocation: the same allocation */
    gpumem_slice sl = {10, 20, 1};
    gpumem_array_slice(d, &sl, 1, &s);
    uint64_t q = 0;
    gpumem_array_device_pointer(s, &q);
    ok(query(q, &r, &info) && r == 1 && info.kind == GPUMEM_POINTER_DEVICE, "a slice's element: device memory");
    ok(q == p + 40 && info.range_start == p && info.driver_context == ctx_bits,
       "a slice's element: the range starts at the allocation, same context");
    gpumem_array_release(s);

    /* info may be NULL */
    r = -1;
    ok(gpumem_is_cuda_array(p, &r, NULL) == GPUMEM_OK && r == 1, "info NULL: only the answer");

    /* freed memory is unknown to the driver again */
    gpumem_array_release(d);
    gpumem_context_flush_deallocations(ctx);
    ok(query(p, &r, &info) && r == 0 && info.kind == GPUMEM_POINTER_UNKNOWN, "freed device memory: unknown");
}

static void check_host_side(void)
{
    int64_t shape[1] = {256};
    gpumem_array *a = NULL;
    gpumem_pointer_info info;
    int r;
    void *h = NULL;
    uint64_t p = 0;

    if (gpumem_pinned_array(ctx, 1, shape, NULL, f32, 'C', &a) != GPUMEM_OK)
        bail_out("pinned_array: %s", gpumem_last_error());
    gpumem_array_host_pointer(a, &h);
    ok(query((uint64_t)(uintptr_t)h, &r, &info), "pinned memory: answered");
    ok(info.kind == GPUMEM_POINTER_MAPPED || info.kind == GPUMEM_POINTER_PINNED, "pinned memory: kind %d",
       (int)info.kind);
    is_int(r, info.kind == GPUMEM_POINTER_MAPPED, "pinned memory: a CUDA array exactly when it has a device address");
    ok(info.host_pointer == h, "pinned memory: its host pointer");
    ok(info.range_start == (uint64_t)(uintptr_t)h && info.range_size >= 1024, "pinned memory: the allocation");
    is_int(info.ipc_capable, 0, "pinned memory has no IPC handle");
    gpumem_array_release(a);

    if (gpumem_mapped_array(ctx, 1, shape, NULL, f32, 'C', NULL, 0, &a) == GPUMEM_OK) {
        gpumem_array_host_pointer(a, &h);
        gpumem_array_device_pointer(a, &p);
        ok(query(p, &r, &info) && r == 1 && info.kind == GPUMEM_POINTER_MAPPED, "mapped memory: kind MAPPED");
        ok(info.device_pointer == p && info.host_pointer == h, "mapped memory: both pointers");
        gpumem_array_release(a);
    } else {
        skip(2, "the device cannot map host memory");
    }

    if (gpumem_managed_array(ctx, 1, shape, NULL, f32, 'C', GPUMEM_MANAGED_ATTACH_GLOBAL, &a) == GPUMEM_OK) {
        gpumem_array_device_pointer(a, &p);
        ok(query(p, &r, &info) && r == 1 && info.kind == GPUMEM_POINTER_MANAGED, "managed memory: kind MANAGED");
        ok(info.host_pointer != NULL && info.ipc_capable == 0, "managed memory: a host pointer, no IPC handle");
        gpumem_array_release(a);
    } else {
        skip(2, "no managed memory");
    }

    /* pageable memory and nothing at all: no error, unknown */
    float *m = malloc(4096);
    ok(query((uint64_t)(uintptr_t)m, &r, &info) && r == 0, "pageable memory: not a CUDA array, no error");
    ok(info.kind == GPUMEM_POINTER_UNKNOWN && info.device == -1 && info.driver_context == 0 &&
           info.range_size == 0 && info.host_pointer == NULL,
       "pageable memory: kind UNKNOWN with null details");
    free(m);
    ok(query(0, &r, &info) && r == 0 && info.kind == GPUMEM_POINTER_UNKNOWN, "address 0: unknown");
}

static void check_errors(void)
{
    gpumem_pointer_info info = {.size = sizeof info - 1};
    int r;
    is_int(gpumem_is_cuda_array(0, NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "result NULL");
    is_int(gpumem_is_cuda_array(0, &r, &info), GPUMEM_ERROR_INVALID_VALUE, "info->size too small");
    like(gpumem_last_error(), "info->size", "the message names info->size");

    uint64_t before = 0, after = 0;
    gpumem_debug_driver_calls("cuPointerGetAttributes", &before);
    gpumem_is_cuda_array(0, &r, NULL);
    gpumem_debug_driver_calls("cuPointerGetAttributes", &after);
    is_int(after - before, 1, "one cuPointerGetAttributes call per query");

    gpumem_debug_fail_call(1, 999);
    is_int(gpumem_is_cuda_array(0, &r, NULL), GPUMEM_ERROR_DRIVER, "a failing driver call fails the query");
    like(gpumem_last_error(), "cuPointerGetAttributes", "the message names cuPointerGetAttributes");
}

int main(void)
{
    if (gpumem_context_create(0, &ctx) != GPUMEM_OK)
        bail_out("no context: %s", gpumem_last_error());
    f32 = gpumem_dtype_builtin(GPUMEM_FLOAT32);
    check_device();
    check_host_side();
    check_errors();
    gpumem_context_release(ctx);
    done_testing();
    return exit_status();
}
