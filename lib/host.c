/*
 * host.c - page-locked host memory: pinned, mapped and managed arrays, and
 * registration scopes (numba's pinned()/mapped(), numba.roc's register()).
 *
 * Registration is page-granular and reference-counted.  A scope's ranges are
 * rounded out to whole pages and cut into pieces: pieces already registered
 * by an earlier scope gain a reference; pieces in no known range are
 * registered with the driver as new ranges; pieces inside libgpumem's own
 * page-locked allocations need nothing.  A range is unregistered when its
 * last reference goes.  So overlapping and repeated arrays work, though the
 * driver refuses overlapping registrations.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array.h"
#include "error.h"
#include "gpumem/host.h"
#include "host.h"
#include "pool.h"
#include "stream.h"

typedef enum range_kind {
    RANGE_ALLOCATION,   /* our own page-locked allocation: not a registration */
    RANGE_REGISTERED,   /* registered by us; unregistered at its last reference */
    RANGE_FOREIGN       /* the driver said another party registered it: never unregistered */
} range_kind;

typedef struct range {
    uintptr_t start, end;
    range_kind kind;
    int refs;               /* scopes covering it (registrations) */
    gpumem_context *ctx;    /* retained by registrations: the context that unregisters */
} range;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static range *ranges;       /* sorted by start, disjoint */
static size_t nranges, cap;

/* Index of the first range that ends after p. */
static size_t first_after(uintptr_t p)
{
    size_t lo = 0, hi = nranges;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (ranges[mid].end <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static bool insert_at(size_t i, range r)
{
    if (nranges == cap) {
        size_t ncap = cap ? cap * 2 : 16;
        range *n = realloc(ranges, ncap * sizeof *n);
        if (n == NULL)
            return false;
        ranges = n;
        cap = ncap;
    }
    memmove(&ranges[i + 1], &ranges[i], (nranges - i) * sizeof *ranges);
    ranges[i] = r;
    nranges++;
    return true;
}

static void remove_at(size_t i)
{
    memmove(&ranges[i], &ranges[i + 1], (nranges - i - 1) * sizeof *ranges);
    nranges--;
}

static size_t find_start(uintptr_t start)
{
    size_t i = first_after(start);
    return i < nranges && ranges[i].start == start ? i : (size_t)-1;
}

gpumem_status gm_host_track_allocation(const void *start, size_t bytes)
{
    uintptr_t s = (uintptr_t)start;
    range r = {s, s + bytes, RANGE_ALLOCATION, 0, NULL};
    pthread_mutex_lock(&lock);
    bool ok = insert_at(first_after(s), r);
    pthread_mutex_unlock(&lock);
    return ok ? GPUMEM_OK : gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "out of host memory");
}

void gm_host_untrack_allocation(const void *start)
{
    pthread_mutex_lock(&lock);
    size_t i = find_start((uintptr_t)start);
    if (i != (size_t)-1 && ranges[i].kind == RANGE_ALLOCATION)
        remove_at(i);
    pthread_mutex_unlock(&lock);
}

bool gm_host_is_locked(const void *p, size_t bytes)
{
    uintptr_t a = (uintptr_t)p, b = a + bytes;
    if (bytes == 0)
        return true;
    pthread_mutex_lock(&lock);
    bool covered = true;
    for (size_t i = first_after(a); a < b; i++) {
        if (i >= nranges || ranges[i].start > a) {
            covered = false;
            break;
        }
        a = ranges[i].end;
    }
    pthread_mutex_unlock(&lock);
    return covered;
}

GPUMEM_API gpumem_status gpumem_host_is_pinned(const void *pointer, size_t bytes, int *result)
{
    GM_CHECK_NULL(result);
    *result = pointer != NULL && gm_host_is_locked(pointer, bytes);
    return GPUMEM_OK;
}

/* ---- registration scopes ----------------------------------------------------------------- */

struct gpumem_registration {
    gpumem_context *ctx;
    bool mapped;
    size_t narrays;
    gpumem_array **arrays;  /* retained */
    size_t npieces;
    uintptr_t *pieces;      /* starts of the ranges this scope holds a reference on */
    struct gpumem_registration *next; /* live scopes, to catch a stale handle */
};

static gpumem_registration *live; /* guarded by lock */

/* Drops this scope's reference on the range starting at start; unregisters
 * the range at its last reference.  Called with the lock held. */
static gpumem_status unref_range(uintptr_t start, const char *what)
{
    size_t i = find_start(start);
    if (i == (size_t)-1)
        return gm_error(GPUMEM_ERROR_INTERNAL, "%s: a registered range is missing", what);
    if (--ranges[i].refs > 0)
        return GPUMEM_OK;
    range r = ranges[i];
    remove_at(i);
    gpumem_status st = GPUMEM_OK;
    if (r.kind == RANGE_REGISTERED && !gm_process_exiting())
        st = gm_drv_check(GM_DRV(mem_host_unregister, r.ctx->dctx, (void *)r.start), GM_OP_mem_host_unregister,
                          what);
    gpumem_context_release(r.ctx);
    return st;
}

static gpumem_status add_piece(gpumem_registration *reg, uintptr_t start, size_t *room)
{
    if (reg->npieces == *room) {
        size_t n = *room ? *room * 2 : 8;
        uintptr_t *p = realloc(reg->pieces, n * sizeof *p);
        if (p == NULL)
            return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "out of host memory");
        reg->pieces = p;
        *room = n;
    }
    reg->pieces[reg->npieces++] = start;
    return GPUMEM_OK;
}

/* Registers the pages of [a, b) for reg (lock held): new pieces are
 * registered with the driver, known ones gain a reference. */
static gpumem_status register_pages(gpumem_registration *reg, uintptr_t a, uintptr_t b, size_t *room,
                                    const char *what)
{
    gpumem_status st = GPUMEM_OK;
    while (a < b && st == GPUMEM_OK) {
        size_t i = first_after(a);
        if (i < nranges && ranges[i].start <= a) {
            /* inside a known range */
            if (ranges[i].kind != RANGE_ALLOCATION) {
                st = add_piece(reg, ranges[i].start, room);
                if (st == GPUMEM_OK)
                    ranges[i].refs++;
            }
            a = ranges[i].end;
            continue;
        }
        uintptr_t end = i < nranges && ranges[i].start < b ? ranges[i].start : b;
        range r = {a, end, RANGE_REGISTERED, 1, reg->ctx};
        int rc = GM_DRV(mem_host_register, reg->ctx->dctx, (void *)a, end - a,
                        GM_CU_MEMHOSTREGISTER_PORTABLE | GM_CU_MEMHOSTREGISTER_DEVICEMAP);
        if (rc == GM_CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED)
            r.kind = RANGE_FOREIGN; /* another library pinned it: use it, never unregister it */
        else if (rc != 0)
            return gm_drv_check(rc, GM_OP_mem_host_register, what);
        if (!insert_at(i, r)) {
            if (r.kind == RANGE_REGISTERED)
                GM_DRV(mem_host_unregister, reg->ctx->dctx, (void *)a);
            return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", what);
        }
        gpumem_context_retain(reg->ctx);
        st = add_piece(reg, a, room);
        if (st != GPUMEM_OK)
            unref_range(a, what);
        a = end;
    }
    return st;
}

static void registration_free(gpumem_registration *reg)
{
    for (size_t i = 0; i < reg->narrays; i++)
        gpumem_array_release(reg->arrays[i]);
    free(reg->arrays);
    free(reg->pieces);
    gpumem_context_release(reg->ctx);
    free(reg);
}

static gpumem_status begin(const char *what, gpumem_context *ctx, gpumem_array *const *arrays, size_t count,
                           bool mapped, gpumem_registration **out)
{
    if (out == NULL || (count > 0 && arrays == NULL)) /* the public names */
        return gm_error(GPUMEM_ERROR_NULL_ARGUMENT, "%s: argument '%s' is NULL", what,
                        out == NULL ? "registration" : "arrays");
    for (size_t i = 0; i < count; i++)
        if (arrays[i] == NULL)
            return gm_error(GPUMEM_ERROR_NULL_ARGUMENT, "%s: arrays[%zu] is NULL", what, i);
    gpumem_status st;
    ctx = gm_context_or_default(ctx, &st);
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
    gpumem_registration *reg = calloc(1, sizeof *reg);
    if (reg == NULL || (count > 0 && (reg->arrays = calloc(count, sizeof *reg->arrays)) == NULL)) {
        free(reg);
        return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", what);
    }
    reg->ctx = ctx;
    gpumem_context_retain(ctx);
    reg->mapped = mapped;
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t mask = (uintptr_t)(page > 0 ? page : 4096) - 1;
    size_t room = 0;
    pthread_mutex_lock(&lock);
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
        st = register_pages(reg, s, e, &room, what);
    }
    if (st != GPUMEM_OK) {
        gm_error_hold();
        for (size_t i = 0; i < reg->npieces; i++)
            unref_range(reg->pieces[i], what);
        pthread_mutex_unlock(&lock);
        registration_free(reg);
        gm_error_unhold();
        return st;
    }
    reg->next = live;
    live = reg;
    pthread_mutex_unlock(&lock);
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
    pthread_mutex_lock(&lock);
    gpumem_registration **p = &live;
    while (*p != NULL && *p != reg)
        p = &(*p)->next;
    if (*p == NULL || reg->mapped != mapped) {
        pthread_mutex_unlock(&lock);
        return gm_error(GPUMEM_ERROR_INVALID_STATE, "%s: not a live %s scope (ended already?)", what,
                        mapped ? "mapped" : "pinned/register");
    }
    *p = reg->next;
    gpumem_status st = GPUMEM_OK;
    for (size_t i = 0; i < reg->npieces; i++) {
        gpumem_status ust = unref_range(reg->pieces[i], what);
        if (st == GPUMEM_OK)
            st = ust;
    }
    pthread_mutex_unlock(&lock);
    registration_free(reg);
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
    if (st == GPUMEM_OK)
        st = gm_stream_check(stream, c, what, "ctx");
    if (st != GPUMEM_OK)
        return st;
    gpumem_registration *reg = NULL;
    if ((st = begin(what, c, arrays, count, true, &reg)) != GPUMEM_OK)
        return st;
    size_t made = 0;
    for (; made < count && st == GPUMEM_OK; made++)
        st = gm_array_mapped_view(what, c, arrays[made], &device_views[made]);
    if (st != GPUMEM_OK) {
        gm_error_hold();
        while (--made > 0)
            gpumem_array_release(device_views[made - 1]);
        end(what, &reg, true);
        gm_error_unhold();
        return st;
    }
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
    return gm_array_new_locked(what, GPUMEM_MEMORY_PINNED, ctx, ndim, shape, cstrides, dtype,
                               GM_CU_MEMHOSTALLOC_PORTABLE, array);
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
    gpumem_status st = gm_array_prepare(what, &ctx, ndim, shape, strides, dtype, order, stream, cstrides);
    if (st == GPUMEM_OK)
        st = device_can(ctx, GM_CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, "mapping host memory", what);
    if (st != GPUMEM_OK)
        return st;
    unsigned cu = GM_CU_MEMHOSTALLOC_DEVICEMAP;
    if (flags & GPUMEM_HOST_PORTABLE)
        cu |= GM_CU_MEMHOSTALLOC_PORTABLE;
    if (flags & GPUMEM_HOST_WRITECOMBINED)
        cu |= GM_CU_MEMHOSTALLOC_WRITECOMBINED;
    return gm_array_new_locked(what, GPUMEM_MEMORY_MAPPED, ctx, ndim, shape, cstrides, dtype, cu, array);
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
    gpumem_status st = gm_array_prepare(what, &ctx, ndim, shape, strides, dtype, order, NULL, cstrides);
    if (st == GPUMEM_OK)
        st = device_can(ctx, GM_CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, "managed memory", what);
    if (st != GPUMEM_OK)
        return st;
    return gm_array_new_locked(what, GPUMEM_MEMORY_MANAGED, ctx, ndim, shape, cstrides, dtype,
                               flags == GPUMEM_MANAGED_ATTACH_GLOBAL ? GM_CU_MEM_ATTACH_GLOBAL : GM_CU_MEM_ATTACH_HOST,
                               array);
}

GPUMEM_API gpumem_status gpumem_host_pool_allocate(gpumem_host_pool *pool, int ndim, const int64_t *shape,
                                                   const gpumem_dtype *dtype, char order, gpumem_array **array)
{
    const char *what = "gpumem_host_pool_allocate";
    GM_CHECK_NULL(pool);
    GM_CHECK_NULL(array);
    int64_t cstrides[GM_MAX_NDIM];
    gpumem_context *ctx = gm_host_pool_context(pool);
    gpumem_status st = gm_array_prepare(what, &ctx, ndim, shape, NULL, dtype, order, NULL, cstrides);
    if (st != GPUMEM_OK)
        return st;
    return gm_array_new_pooled_host(what, pool, ndim, shape, cstrides, dtype, array);
}
