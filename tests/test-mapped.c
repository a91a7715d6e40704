/* A mapped array's device pointer reads the host data: the copy engines are
 * told the source is DEVICE memory at the mapped device address, so the bytes
 * come through the device's mapping of the host pages (on the GPU, over the
 * bus), not from the host pointer.  Runs on the simulator and on a GPU. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "context.h"
#include "driver.h"
#include "gpumem.h"
#include "tap.h"

/* Copies bytes from the device address src (typed DEVICE) into device array dst. */
static int read_as_device(gpumem_context *ctx, uint64_t src, gpumem_array *dst, size_t bytes)
{
    uint64_t d = 0;
    gpumem_array_device_pointer(dst, &d);
    gm_cu_memcpy2d c;
    memset(&c, 0, sizeof c);
    c.srcMemoryType = GM_CU_MEMORYTYPE_DEVICE;
    c.srcDevice = src;
    c.srcPitch = bytes;
    c.dstMemoryType = GM_CU_MEMORYTYPE_DEVICE;
    c.dstDevice = d;
    c.dstPitch = bytes;
    c.WidthInBytes = bytes;
    c.Height = 1;
    return GM_DRV(memcpy_2d, ctx->dctx, &c, NULL, 0);
}

int main(void)
{
    gpumem_context *ctx = NULL;
    if (gpumem_context_create_default(&ctx) != GPUMEM_OK)
        bail_out("no context: %s", gpumem_last_error());
    plan(7);
    const gpumem_dtype *f64 = gpumem_dtype_builtin(GPUMEM_FLOAT64);
    enum { N = 4096 };
    int64_t shape[1] = {N};
    gpumem_array *m = NULL, *d = NULL, *h = NULL;
    is_int(gpumem_mapped_array(ctx, 1, shape, NULL, f64, 'C', NULL, 0, &m), GPUMEM_OK, "a mapped array");
    double *mh = NULL;
    uint64_t mdev = 0;
    gpumem_array_host_pointer(m, (void **)&mh);
    gpumem_array_device_pointer(m, &mdev);
    for (int i = 0; i < N; i++)
        mh[i] = 0.5 * i;
    gpumem_device_array(ctx, 1, shape, NULL, f64, 'C', NULL, &d);
    is_int(read_as_device(ctx, mdev, d, N * sizeof(double)), 0, "the device reads through its device pointer");
    static double back[N];
    gpumem_host_array_wrap(back, 1, shape, NULL, f64, &h);
    gpumem_copy_to_host(d, h, NULL);
    ok(memcmp(back, mh, sizeof back) == 0, "and gets the host data");

    /* The host writes again; the device sees the new data with no copy. */
    mh[N - 1] = -1.0;
    read_as_device(ctx, mdev, d, N * sizeof(double));
    gpumem_copy_to_host(d, h, NULL);
    is_int((long long)back[N - 1], -1, "a later host write is visible through the mapping");

    /* mapped() of a pageable array: its view's device pointer reads the data too. */
    static double plain[N];
    for (int i = 0; i < N; i++)
        plain[i] = i + 0.25;
    gpumem_array *p = NULL, *view = NULL;
    gpumem_registration *reg = NULL;
    gpumem_host_array_wrap(plain, 1, shape, NULL, f64, &p);
    is_int(gpumem_mapped(ctx, &p, 1, NULL, &reg, &view), GPUMEM_OK, "mapped() a pageable array");
    uint64_t vdev = 0;
    gpumem_array_device_pointer(view, &vdev);
    if (test_on_sim()) {
        int rc = read_as_device(ctx, vdev, d, N * sizeof(double));
        gpumem_copy_to_host(d, h, NULL);
        ok(rc == 0 && memcmp(back, plain, sizeof back) == 0, "its device view reads the host data");
    } else {
        /* Seen on an H200 (driver 580): a DEVICE-typed cuMemcpy2D from
         * registered (not driver-allocated) host memory returns success and
         * moves nothing, so it is no probe of a mapped() view there. */
        ok(vdev == (uint64_t)(uintptr_t)plain, "its device view has the unified address of the host data");
    }
    gpumem_unmapped(&reg);
    gpumem_array_release(view);
    if (test_on_sim())
        ok(read_as_device(ctx, (uint64_t)(uintptr_t)plain, d, N * sizeof(double)) != 0,
           "after unmapped() the device can no longer read it");
    else
        skip(1, "a real driver may keep pageable memory addressable (HMM)");
    gpumem_array_release(p);
    gpumem_array_release(h);
    gpumem_array_release(d);
    gpumem_array_release(m);
    gpumem_context_release(ctx);
    return exit_status();
}
