/*
 * host.c - page-locked host memory for arrays: pinned, mapped and managed
 * arrays, and registration scopes (numba's pinned()/mapped(), numba.roc's
 * register()); the arrays of page-locked pools are host_pool.c's.  The
 * pages themselves are counted by the registry (hostreg.c).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array.h"
#include "copy_debug.h"
#include "error.h"
#include "gpumem/host.h"
#include "hostreg.h"
#include "stream.h"

/* ---- registration scopes ----------------------------------------------------------------- */

struct gpumem_registration {
    gm_handle h;            /* first: the lifecycle check (handles.h); dead once the scope ended */
    gpumem_context *ctx;
    bool mapped;
    size_t narrays;
    gpumem_array **arrays;  /* retained */
    gm_pin_set pins;        /* the page ranges this scope holds a reference on */
};

/* Drops the scope's references: an array whose last reference was the
 * scope's is freed, and a failure to free it names `what`. */
static gpumem_status registration_free(const char *what, gpumem_registration *reg)
{
    gpumem_status st = GPUMEM_OK;
    for (size_t i = 0; i < reg->narrays; i++)
        st = gm_keep_first(st, gm_array_release_as(reg->arrays[i], what));
    free(reg->arrays);
    st = gm_keep_first(st, gm_context_release_as(reg->ctx, what));
    gm_handle_free(reg);
    return st;
}

static gpumem_status begin(const char *what, gpumem_context *ctx, gpumem_array *const *arrays, size_t count,
                           bool mapped, gpumem_registration **out)
{
    if (out == NULL || (count > 0 && arrays == NULL)) /* the public names */
        return gm_error(GPUMEM_ERROR_NULL_ARGUMENT, "%s: argument '%s' is NULL", what,
                        out == NULL ? "registration" : "arrays");
    for (size_t i = 0; i < count; i++) {
        if (arrays[i] == NULL)
            return gm_error(GPUMEM_ERROR_NULL_ARGUMENT, "%s: arrays[%zu] is NULL", what, i);
        if (!gm_handle_live(arrays[i], GM_HANDLE_ARRAY)) {
            char arg[48];
            snprintf(arg, sizeof arg, "arrays[%zu]", i);
            return gm_handle_error(arrays[i], GM_HANDLE_ARRAY, what, arg);
        }
    }
    gpumem_status st;
    ctx = gm_context_use(ctx, what, &st);
    if (st != GPUMEM_OK)
        return st;
    if (mapped) {
        int can = 0;
        st = gm_drv_check(GM_DRV(device_get_attribute, ctx->device, GM_CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY,
                                 &can),
                          GM_OP_device_get_attribute, what);
        if (st != GPUMEM_OK)
            return st;
        if (!can)
            return gm_error(GPUMEM_ERROR_NOT_SUPPORTED, "%s: device %d cannot map host memory", what,
                            ctx->device);
    }
    gpumem_registration *reg = gm_handle_new_zeroed(GM_HANDLE_REGISTRATION, sizeof *reg);
    if (reg == NULL || (count > 0 && (reg->arrays = calloc(count, sizeof *reg->arrays)) == NULL)) {
        gm_handle_free(reg);
        return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", what);
    }
    reg->ctx = ctx;
    gpumem_context_retain(ctx);
    reg->mapped = mapped;
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t mask = (uintptr_t)(page > 0 ? page : 4096) - 1;
    for (size_t i = 0; i < count && st == GPUMEM_OK; i++) {
        gpumem_array *a = arrays[i];
        gpumem_array_retain(a);
        reg->arrays[reg->narrays++] = a;
        if (a->kind != GPUMEM_MEMORY_HOST)
            continue; /* device memory, or memory that is page-locked already */
        int64_t lo, hi;
        gm_layout_extent(a->ndim, a->shape, a->strides, a->itemsize, &lo, &hi);
        if (hi <= lo)
            continue;
        uintptr_t s = ((uintptr_t)a->host + (uintptr_t)lo) & ~mask;
        uintptr_t e = ((uintptr_t)a->host + (uintptr_t)hi + mask) & ~mask;
        st = gm_host_pin_pages(ctx, &reg->pins, s, e,
                               GM_CU_MEMHOSTREGISTER_PORTABLE | GM_CU_MEMHOSTREGISTER_DEVICEMAP, what);
    }
    if (st != GPUMEM_OK) {
        st = gm_keep_first(st, gm_host_unpin_set(&reg->pins, what));
        return gm_keep_first(st, registration_free(what, reg));
    }
    *out = reg;
    return GPUMEM_OK;
}

static gpumem_status end(const char *what, gpumem_registration **handle, bool mapped)
{
    if (handle == NULL)
        return gm_error(GPUMEM_ERROR_NULL_ARGUMENT, "%s: argument 'registration' is NULL", what);
    gpumem_registration *reg = *handle;
    if (reg == NULL)
        return gm_error(GPUMEM_ERROR_INVALID_STATE, "%s: the scope was already ended (the handle is NULL)", what);
    gpumem_status st = gm_handle_check(reg, GM_HANDLE_REGISTRATION, what, "*registration");
    if (st != GPUMEM_OK)
        return st;
    if (reg->mapped != mapped)
        return gm_error(GPUMEM_ERROR_INVALID_STATE, "%s: '*registration' is a %s scope: end it with %s", what,
                        reg->mapped ? "mapped" : "pinned/register", reg->mapped ? "gpumem_unmapped" :
                        "gpumem_unpinned or gpumem_deregister");
    /* One compare-and-swap: of two threads that end the scope, one does. */
    if (!gm_handle_kill(reg, GM_HANDLE_REGISTRATION))
        return gm_handle_error(reg, GM_HANDLE_REGISTRATION, what, "*registration");
    st = gm_host_unpin_set(&reg->pins, what);
    st = gm_keep_first(st, registration_free(what, reg));
    *handle = NULL;
    return st;
}

GPUMEM_API gpumem_status gpumem_pinned(gpumem_context *ctx, gpumem_array *const *arrays, size_t count,
                                       gpumem_registration **registration)
{
    return begin("gpumem_pinned", ctx, arrays, count, false, registration);
}

GPUMEM_API gpumem_status gpumem_unpinned(gpumem_registration **registration)
{
    return end("gpumem_unpinned", registration, false);
}

GPUMEM_API gpumem_status gpumem_register(gpumem_context *ctx, gpumem_array *const *arrays, size_t count,
                                         gpumem_registration **registration)
{
    return begin("gpumem_register", ctx, arrays, count, false, registration);
}

GPUMEM_API gpumem_status gpumem_deregister(gpumem_registration **registration)
{
    return end("gpumem_deregister", registration, false);
}

GPUMEM_API gpumem_status gpumem_mapped(gpumem_context *ctx, gpumem_array *const *arrays, size_t count,
                                       gpumem_stream *stream, gpumem_registration **registration,
                                       gpumem_array **device_views)
{
    const char *what = "gpumem_mapped";
    GM_CHECK_NULL(registration);
    if (count > 0)
        GM_CHECK_NULL(device_views);
    gpumem_status st;
    gpumem_context *c = gm_context_or_default(ctx, &st);
    GM_FORWARD_IF_ERROR(st);
    GM_FORWARD_IF_ERROR(gm_stream_check(stream, c, what, "ctx"));
    gpumem_registration *reg = NULL;
    GM_FORWARD_IF_ERROR(begin(what, c, arrays, count, true, &reg));
    /* The views are made aside and given only when all are: a failure
     * leaves the caller's device_views as they were. */
    gpumem_array **views = count > 0 ? calloc(count, sizeof *views) : NULL;
    if (count > 0 && views == NULL)
        st = gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", what);
    size_t made = 0;
    for (; made < count && st == GPUMEM_OK; made++)
        st = gm_array_mapped_view(what, c, arrays[made], &views[made]);
    if (st != GPUMEM_OK) {
        for (size_t i = 0; i < count && views != NULL; i++)
            if (views[i] != NULL)
                st = gm_keep_first(st, gm_array_release_as(views[i], what));
        free(views);
        return gm_keep_first(st, end(what, &reg, true));
    }
    if (count > 0)
        memcpy(device_views, views, count * sizeof *views);
    free(views);
    *registration = reg;
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_unmapped(gpumem_registration **registration)
{
    return end("gpumem_unmapped", registration, true);
}

/* ---- page-locked and managed arrays -------------------------------------------------------- */

static gpumem_status device_can(gpumem_context *ctx, int attr, const char *feature, const char *what)
{
    int can = 0;
    gpumem_status st = gm_drv_check(GM_DRV(device_get_attribute, ctx->device, attr, &can),
                                    GM_OP_device_get_attribute, what);
    if (st == GPUMEM_OK && !can)
        st = gm_error(GPUMEM_ERROR_NOT_SUPPORTED, "%s: device %d does not support %s", what, ctx->device, feature);
    return st;
}

GPUMEM_API gpumem_status gpumem_pinned_array(gpumem_context *ctx, int ndim, const int64_t *shape,
                                             const int64_t *strides, const gpumem_dtype *dtype, char order,
                                             gpumem_array **array)
{
    const char *what = "gpumem_pinned_array";
    GM_CHECK_NULL(array);
    int64_t cstrides[GM_MAX_NDIM];
    gpumem_status st = gm_array_prepare(what, &ctx, ndim, shape, strides, dtype, order, NULL, cstrides);
    if (st != GPUMEM_OK)
        return st;
    /* Portable: page-locked for every context, as the registry is process-wide. */
    return gm_poison_new_array(what, gm_array_new_locked(what, GPUMEM_MEMORY_PINNED, ctx, ndim, shape, cstrides, dtype,
                                                         GM_CU_MEMHOSTALLOC_PORTABLE, array),
                               NULL, array);
}

GPUMEM_API gpumem_status gpumem_mapped_array(gpumem_context *ctx, int ndim, const int64_t *shape,
                                             const int64_t *strides, const gpumem_dtype *dtype, char order,
                                             gpumem_stream *stream, unsigned flags, gpumem_array **array)
{
    const char *what = "gpumem_mapped_array";
    GM_CHECK_NULL(array);
    if (flags & ~(unsigned)(GPUMEM_HOST_PORTABLE | GPUMEM_HOST_WRITECOMBINED))
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: unknown flags 0x%x", what, flags);
    int64_t cstrides[GM_MAX_NDIM];
    GM_FORWARD_IF_ERROR(gm_array_prepare(what, &ctx, ndim, shape, strides, dtype, order, stream, cstrides));
    GM_FORWARD_IF_ERROR(device_can(ctx, GM_CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, "mapping host memory", what));
    unsigned cu = GM_CU_MEMHOSTALLOC_DEVICEMAP;
    if (flags & GPUMEM_HOST_PORTABLE)
        cu |= GM_CU_MEMHOSTALLOC_PORTABLE;
    if (flags & GPUMEM_HOST_WRITECOMBINED)
        cu |= GM_CU_MEMHOSTALLOC_WRITECOMBINED;
    return gm_poison_new_array(what, gm_array_new_locked(what, GPUMEM_MEMORY_MAPPED, ctx, ndim, shape, cstrides, dtype,
                                                         cu, array),
                               NULL, array);
}

GPUMEM_API gpumem_status gpumem_managed_array(gpumem_context *ctx, int ndim, const int64_t *shape,
                                              const int64_t *strides, const gpumem_dtype *dtype, char order,
                                              unsigned flags, gpumem_array **array)
{
    const char *what = "gpumem_managed_array";
    GM_CHECK_NULL(array);
    if (flags != GPUMEM_MANAGED_ATTACH_GLOBAL && flags != GPUMEM_MANAGED_ATTACH_HOST)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: flags 0x%x: must be GPUMEM_MANAGED_ATTACH_GLOBAL or "
                        "GPUMEM_MANAGED_ATTACH_HOST", what, flags);
    int64_t cstrides[GM_MAX_NDIM];
    GM_FORWARD_IF_ERROR(gm_array_prepare(what, &ctx, ndim, shape, strides, dtype, order, NULL, cstrides));
    GM_FORWARD_IF_ERROR(device_can(ctx, GM_CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, "managed memory", what));
    return gm_poison_new_array(what, gm_array_new_locked(what, GPUMEM_MEMORY_MANAGED, ctx, ndim, shape, cstrides, dtype,
                                                         flags == GPUMEM_MANAGED_ATTACH_GLOBAL ? GM_CU_MEM_ATTACH_GLOBAL
                                                                                               : GM_CU_MEM_ATTACH_HOST,
                                                         array),
                               NULL, array);
}
