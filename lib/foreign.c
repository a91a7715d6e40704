/*
 * foreign.c - the experimental tier for foreign runtimes
 * (gpumem/experimental/foreign.h): each device's context and pools, the
 * foreign streams, and the public calls.  The pointer table and the
 * runtimes' counters are foreign_map.c's.
 *
 * The blocks come through the allocator's entry points
 * (gm_alloc_device_pool, gm_alloc_host_pool, gm_alloc_managed) and go back
 * through gm_alloc_free, so the ladder, the books and the trace see them as
 * they see the library's own.  A foreign CUstream is wrapped in a stream
 * object (gm_stream_foreign) that the pool's stream-ordered reuse keys by
 * its driver stream, as it does the library's streams; the wrappers are
 * cached, a few per device.
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "foreign.h"
#include "pool.h"
#include "stream.h"
#include "trace.h"
#include "gpumem/trace.h"

/* st, its message prefixed by the public call `what` on failure. */
static gpumem_status prefixed(gpumem_status st, const char *what)
{
    return st == GPUMEM_OK ? st : gm_error_prefix(st, what);
}

/* ---- devices ---------------------------------------------------------------------- */

/* Page-locked pools: one per combination of the three host flags. */
#define HOST_POOLS 8
/* Cached stream wrappers per device (a direct-mapped cache). */
#define STREAM_SLOTS 32

typedef struct fdevice {
    gpumem_context *anchor;               /* made by this tier on first use; owns the stream wrappers; kept */
    _Atomic(gpumem_context *) ctx;        /* the context allocations use: gpumem_foreign_set_context's, or anchor */
    _Atomic(gpumem_pool *) pool;          /* the default device pool of the context it was made in, made on first use */
    gpumem_host_pool *host[HOST_POOLS];   /* guarded by lock */
    gpumem_context *host_ctx[HOST_POOLS];
    gpumem_stream *slots[STREAM_SLOTS];   /* guarded by lock */
    _Atomic(gpumem_stream *) legacy;      /* the anchor's default stream, once asked for */
    pthread_mutex_t lock;
} fdevice;

static fdevice devices[GM_FOREIGN_MAX_DEVICES];
static pthread_mutex_t devices_lock = PTHREAD_MUTEX_INITIALIZER; /* making an anchor */
static pthread_once_t devices_once = PTHREAD_ONCE_INIT;

static void devices_init(void)
{
    for (int i = 0; i < GM_FOREIGN_MAX_DEVICES; i++)
        pthread_mutex_init(&devices[i].lock, NULL);
}

/* Device d's state, its anchor made on first use. */
static gpumem_status device_get(int d, const char *what, fdevice **out)
{
    GM_RETURN_ERROR_IF(d < 0 || d >= GM_FOREIGN_MAX_DEVICES, GPUMEM_ERROR_INVALID_DEVICE,
                       "%s: device %d: the foreign tier serves devices 0 to %d", what, d, GM_FOREIGN_MAX_DEVICES - 1);
    pthread_once(&devices_once, devices_init);
    fdevice *f = &devices[d];
    if (atomic_load_explicit(&f->ctx, memory_order_acquire) == NULL) {
        gpumem_status st = GPUMEM_OK;
        pthread_mutex_lock(&devices_lock);
        if (f->anchor == NULL) {
            st = gm_context_create(what, d, &f->anchor);
            if (st == GPUMEM_OK)
                atomic_store_explicit(&f->ctx, f->anchor, memory_order_release);
        }
        pthread_mutex_unlock(&devices_lock);
        GM_FORWARD_IF_ERROR(st);
    }
    *out = f;
    return GPUMEM_OK;
}

/* The pool a device allocation of f takes: the context's pool when it has
 * one, else the tier's default pool of the context, made on first use. */
static gpumem_status device_pool(fdevice *f, gpumem_context *ctx, const char *what, gpumem_pool **out)
{
    gpumem_pool *p = atomic_load_explicit(&ctx->pool, memory_order_acquire);
    if (p != NULL && gm_handle_live(p, GM_HANDLE_POOL)) {
        *out = p;
        return GPUMEM_OK;
    }
    p = atomic_load_explicit(&f->pool, memory_order_acquire);
    if (p != NULL && gm_pool_context(gm_pool_of_device(p)) == ctx) {
        *out = p;
        return GPUMEM_OK;
    }
    gpumem_status st = GPUMEM_OK;
    pthread_mutex_lock(&f->lock);
    p = atomic_load_explicit(&f->pool, memory_order_relaxed);
    if (p == NULL || gm_pool_context(gm_pool_of_device(p)) != ctx) {
        /* A pool of an earlier context stays (its blocks may be live); it is not used again. */
        gpumem_pool *np = NULL;
        st = gpumem_pool_create(ctx, 0, &np);
        if (st == GPUMEM_OK) {
            atomic_store_explicit(&f->pool, np, memory_order_release);
            p = np;
        } else {
            st = prefixed(st, what);
        }
    }
    pthread_mutex_unlock(&f->lock);
    if (st == GPUMEM_OK)
        *out = p;
    return st;
}

/* ---- foreign streams ---------------------------------------------------------------- */

#define PER_THREAD_STREAM ((uintptr_t)2)
#define LEGACY_ONLY ((uintptr_t)GPUMEM_FOREIGN_STREAM_LEGACY_ONLY)
#define ALLOCATED ((uintptr_t)GPUMEM_FOREIGN_STREAM_ALLOCATED)

/* Whether stream value v names the legacy default stream: 0, 1 or LEGACY_ONLY. */
static inline bool is_legacy(uintptr_t v)
{
    return v <= 1 || v == LEGACY_ONLY;
}

/* The stream object for CUstream `stream` of device f: the context's default
 * stream for the legacy default stream (0, 1 or LEGACY_ONLY), else a cached wrapper,
 * made (and the handle asked about) on a miss.  Not held: valid while the
 * caller holds f->lock, or, for the default stream, while ctx lives. */
static gpumem_status stream_of(fdevice *f, int d, void *stream, const char *what, gpumem_stream **out)
{
    uintptr_t v = (uintptr_t)stream;
    if (is_legacy(v))
        return prefixed(gpumem_stream_default(f->anchor, out), what);
    GM_RETURN_ERROR_IF((v > LEGACY_ONLY && v < 4096) || v > (uintptr_t)INTPTR_MAX, GPUMEM_ERROR_INVALID_VALUE,
                       "%s: stream 0x%llx is not a stream: 0 and 1 are the legacy default stream (3 too, for memory "
                       "used on it only), 2 the per-thread default stream, 4 (for a free only) the allocation's "
                       "stream, and a CUstream is the address of a driver object (not in the first page)", what,
                       (unsigned long long)v);
    gm_dstream *ds = (gm_dstream *)stream;
    size_t slot = (size_t)((v >> 4) * 0x9E3779B1u) % STREAM_SLOTS;
    gpumem_stream *s = f->slots[slot];
    if (s != NULL && s->ds == ds) {
        *out = s;
        return GPUMEM_OK;
    }
    /* First sight of the handle (or evicted): ask the driver about it. */
    int rc = GM_DRV(stream_query, f->anchor->dctx, ds);
    GM_RETURN_ERROR_IF(rc != 0 && rc != GM_CUDA_ERROR_NOT_READY, GPUMEM_ERROR_INVALID_VALUE,
                       "%s: stream 0x%llx is not a stream of device %d's context that the driver knows "
                       "(cuStreamQuery: %s)", what, (unsigned long long)v, d, gm_cu_error_name(rc));
    gpumem_stream *w = gm_stream_foreign(f->anchor, ds);
    GM_RETURN_ERROR_IF(w == NULL, GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory (a stream)", what);
    gm_stream_unhold(s); /* evicted: blocks that hold it keep it */
    f->slots[slot] = w;
    *out = w;
    return GPUMEM_OK;
}

/* stream_of, held (release it with gm_stream_unhold). */
static gpumem_status stream_held(fdevice *f, int d, void *stream, const char *what, gpumem_stream **out)
{
    uintptr_t v = (uintptr_t)stream;
    if (is_legacy(v)) { /* the legacy default stream, which lives as long as the anchor: no lock */
        gpumem_stream *s = atomic_load_explicit(&f->legacy, memory_order_acquire);
        if (s == NULL) {
            GM_FORWARD_IF_ERROR(prefixed(gpumem_stream_default(f->anchor, &s), what));
            atomic_store_explicit(&f->legacy, s, memory_order_release);
        }
        *out = gm_stream_hold(s);
        return GPUMEM_OK;
    }
    pthread_mutex_lock(&f->lock);
    gpumem_status st = stream_of(f, d, stream, what, out);
    if (st == GPUMEM_OK)
        gm_stream_hold(*out);
    pthread_mutex_unlock(&f->lock);
    return st;
}

/* ---- tracing ---------------------------------------------------------------------- */

/* While a trace records, an allocation or free is a region named after its
 * runtime; returns whether one was pushed. */
static bool trace_push(int runtime)
{
    return GM_TRACE_ACTIVE() && gpumem_trace_push(gm_foreign_runtime_name(runtime)) == GPUMEM_OK;
}

static void trace_pop(bool pushed)
{
    if (pushed)
        gpumem_trace_pop();
}

/* ---- allocation --------------------------------------------------------------------- */

/* Records the allocation b of ctx (device d) in the table; on failure gives b back. */
static gpumem_status record(gm_fspace space, gm_block *b, gpumem_context *ctx, int d, int runtime,
                            gpumem_memory_kind kind, const char *what, void **ptr)
{
    gm_fentry *e = malloc(sizeof *e);
    gpumem_status st = e == NULL ? gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory (the pointer "
                                            "table)", what)
                                 : GPUMEM_OK;
    if (st == GPUMEM_OK) {
        *e = (gm_fentry){.block = *b, .ctx = ctx, .device = d, .runtime = runtime, .kind = kind};
        st = gm_foreign_map_put(space, e, what);
    }
    if (st != GPUMEM_OK) {
        free(e);
        return gm_keep_first(st, gm_alloc_free(ctx, b, what));
    }
    gm_foreign_count(e, +1);
    *ptr = (void *)(uintptr_t)e->block.addr;
    return GPUMEM_OK;
}

/* What every allocation entry point starts from. */
typedef struct alloc_start {
    int rt;               /* the runtime's index */
    fdevice *f;           /* the device's state */
    gpumem_context *ctx;  /* the context the allocation is made in */
} alloc_start;

/* The start of every allocation entry point `what`: checks ptr, then finds
 * the runtime's index, the device's state and its context.  Returns false
 * when the entry point has nothing more to do and returns *st: a failure,
 * or GPUMEM_OK with *ptr = NULL for size 0. */
static bool alloc_begin(const char *what, const char *runtime, int device, size_t size, void **ptr, alloc_start *a,
                        gpumem_status *st)
{
    if (ptr == NULL) {
        *st = gm_error(GPUMEM_ERROR_NULL_ARGUMENT, "%s: argument 'ptr' is NULL", what);
        return false;
    }
    *st = gm_foreign_runtime_index(runtime, what, &a->rt);
    if (*st == GPUMEM_OK)
        *st = device_get(device, what, &a->f);
    if (*st != GPUMEM_OK)
        return false;
    a->ctx = atomic_load_explicit(&a->f->ctx, memory_order_acquire);
    if (size == 0) {
        *ptr = NULL;
        return false;
    }
    return true;
}

GPUMEM_API gpumem_status gpumem_foreign_alloc(const char *runtime, int device, size_t size, void *stream, void **ptr)
{
    const char *what = "gpumem_foreign_alloc";
    alloc_start a;
    gpumem_status st;
    if (!alloc_begin(what, runtime, device, size, ptr, &a, &st))
        return st;
    gpumem_pool *pool;
    GM_FORWARD_IF_ERROR(device_pool(a.f, a.ctx, what, &pool));
    gpumem_stream *s = NULL;
    GM_FORWARD_IF_ERROR(stream_held(a.f, device, stream, what, &s));
    bool pushed = trace_push(a.rt);
    gm_block b;
    st = gm_alloc_device_pool(pool, size, s, what, &b); /* b.stream holds s too */
    gm_stream_unhold(s);
    if (st == GPUMEM_OK) {
        /* b.stream stays held: a free on GPUMEM_FOREIGN_STREAM_ALLOCATED uses it */
        b.legacy_only = (uintptr_t)stream == LEGACY_ONLY;
        st = record(GM_FSPACE_DEVICE, &b, a.ctx, device, a.rt, GPUMEM_MEMORY_DEVICE, what, ptr);
    }
    trace_pop(pushed);
    return st;
}

GPUMEM_API gpumem_status gpumem_foreign_free(void *ptr, void *stream)
{
    const char *what = "gpumem_foreign_free";
    if (ptr == NULL)
        return GPUMEM_OK;
    uint64_t addr = (uint64_t)(uintptr_t)ptr;
    gm_fentry *e = gm_foreign_map_take(GM_FSPACE_DEVICE, addr);
    if (e == NULL) {
        gm_fentry probe;
        bool host = gm_foreign_map_find(GM_FSPACE_HOST, addr, &probe);
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: pointer 0x%llx is %s", what, (unsigned long long)addr,
                        host ? "page-locked memory of gpumem_foreign_host_alloc: free it with gpumem_foreign_host_free"
                             : "no live allocation of gpumem_foreign_alloc or gpumem_foreign_managed_alloc (freed "
                               "already, or another allocator's)");
    }
    if (e->kind == GPUMEM_MEMORY_DEVICE && (uintptr_t)stream != ALLOCATED) {
        gpumem_stream *s = NULL;
        gpumem_status st = stream_held(&devices[e->device], e->device, stream, what, &s);
        if (st != GPUMEM_OK) { /* a bad stream frees nothing: the entry goes back (its shard has room) */
            gm_foreign_map_put(GM_FSPACE_DEVICE, e, what);
            return st;
        }
        gm_stream_unhold(e->block.stream); /* the allocation's stream, not named by this free */
        e->block.stream = s;
        e->block.legacy_only = (uintptr_t)stream == LEGACY_ONLY; /* then it records no event now */
    }
    /* gm_alloc_free orders the reuse after block.stream's work, and drops the hold */
    bool pushed = trace_push(e->runtime);
    gm_foreign_count(e, -1);
    gpumem_status st = gm_alloc_free(e->ctx, &e->block, what);
    trace_pop(pushed);
    free(e);
    return st;
}

GPUMEM_API gpumem_status gpumem_foreign_managed_alloc(const char *runtime, int device, size_t size, int global,
                                                      void **ptr)
{
    const char *what = "gpumem_foreign_managed_alloc";
    alloc_start a;
    gpumem_status st;
    if (!alloc_begin(what, runtime, device, size, ptr, &a, &st))
        return st;
    bool pushed = trace_push(a.rt);
    gm_block b;
    st = gm_alloc_managed(a.ctx, size, global ? GM_CU_MEM_ATTACH_GLOBAL : GM_CU_MEM_ATTACH_HOST, what, &b);
    if (st == GPUMEM_OK)
        st = record(GM_FSPACE_DEVICE, &b, a.ctx, device, a.rt, GPUMEM_MEMORY_MANAGED, what, ptr);
    trace_pop(pushed);
    return st;
}

/* ---- page-locked memory --------------------------------------------------------------- */

#define HOST_FLAGS (GPUMEM_FOREIGN_HOST_PORTABLE | GPUMEM_FOREIGN_HOST_MAPPED | GPUMEM_FOREIGN_HOST_WRITECOMBINED)

GPUMEM_API gpumem_status gpumem_foreign_host_alloc(const char *runtime, int device, size_t size, unsigned flags,
                                                   void **ptr)
{
    const char *what = "gpumem_foreign_host_alloc";
    GM_RETURN_ERROR_IF(ptr != NULL && (flags & ~(unsigned)HOST_FLAGS), GPUMEM_ERROR_INVALID_VALUE,
                       "%s: unknown flags 0x%x", what, flags); /* a NULL ptr is named first, by alloc_begin */
    alloc_start a;
    gpumem_status st;
    if (!alloc_begin(what, runtime, device, size, ptr, &a, &st))
        return st;
    fdevice *f = a.f;
    gpumem_context *ctx = a.ctx;
    pthread_mutex_lock(&f->lock);
    gpumem_host_pool *hp = f->host[flags];
    if (hp == NULL || f->host_ctx[flags] != ctx) {
        /* The public flags are the driver's (gpumem/pool.h); an earlier context's pool stays. */
        st = prefixed(gpumem_host_pool_create(ctx, flags, &hp), what);
        if (st == GPUMEM_OK) {
            f->host[flags] = hp;
            f->host_ctx[flags] = ctx;
        }
    }
    pthread_mutex_unlock(&f->lock);
    GM_FORWARD_IF_ERROR(st);
    bool pushed = trace_push(a.rt);
    gm_block b;
    st = gm_alloc_host_pool(hp, size, what, &b);
    if (st == GPUMEM_OK)
        st = record(GM_FSPACE_HOST, &b, ctx, device, a.rt,
                    flags & GPUMEM_FOREIGN_HOST_MAPPED ? GPUMEM_MEMORY_MAPPED : GPUMEM_MEMORY_PINNED, what, ptr);
    trace_pop(pushed);
    return st;
}

GPUMEM_API gpumem_status gpumem_foreign_host_free(void *ptr)
{
    const char *what = "gpumem_foreign_host_free";
    if (ptr == NULL)
        return GPUMEM_OK;
    uint64_t addr = (uint64_t)(uintptr_t)ptr;
    gm_fentry *e = gm_foreign_map_take(GM_FSPACE_HOST, addr);
    GM_RETURN_ERROR_IF(e == NULL, GPUMEM_ERROR_INVALID_VALUE, "%s: pointer 0x%llx is no live allocation of "
                       "gpumem_foreign_host_alloc (freed already, or another allocator's)", what,
                       (unsigned long long)addr);
    bool pushed = trace_push(e->runtime);
    gm_foreign_count(e, -1);
    gpumem_status st = gm_alloc_free(e->ctx, &e->block, what);
    trace_pop(pushed);
    free(e);
    return st;
}

/* ---- queries ------------------------------------------------------------------------ */

GPUMEM_API gpumem_status gpumem_foreign_lookup(const void *ptr, int *device, void **base, size_t *size,
                                               gpumem_memory_kind *kind)
{
    uint64_t addr = (uint64_t)(uintptr_t)ptr;
    gm_fentry e;
    GM_RETURN_ERROR_IF(ptr == NULL || (!gm_foreign_map_find(GM_FSPACE_DEVICE, addr, &e) &&
                                       !gm_foreign_map_find(GM_FSPACE_HOST, addr, &e)),
                       GPUMEM_ERROR_INVALID_VALUE, "gpumem_foreign_lookup: pointer 0x%llx is no live allocation of "
                       "the foreign tier", (unsigned long long)addr);
    if (device != NULL)
        *device = e.device;
    if (base != NULL)
        *base = (void *)(uintptr_t)e.block.addr;
    if (size != NULL)
        *size = e.block.bytes;
    if (kind != NULL)
        *kind = e.kind;
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_foreign_device_pointer(const void *ptr, uint64_t *device_ptr)
{
    const char *what = "gpumem_foreign_device_pointer";
    GM_CHECK_NULL(device_ptr);
    gm_fentry e;
    GM_RETURN_ERROR_IF(ptr == NULL || !gm_foreign_map_find(GM_FSPACE_HOST, (uint64_t)(uintptr_t)ptr, &e) ||
                           e.kind != GPUMEM_MEMORY_MAPPED, GPUMEM_ERROR_INVALID_VALUE,
                       "%s: pointer %p is no live mapped allocation of gpumem_foreign_host_alloc", what, ptr);
    gm_cu_deviceptr d = 0;
    GM_FORWARD_IF_ERROR(gm_drv_check(GM_DRV(mem_host_get_device_pointer, e.ctx->dctx, &d, (void *)ptr),
                                     GM_OP_mem_host_get_device_pointer, what));
    *device_ptr = d;
    return GPUMEM_OK;
}

/* The driver context in which to export device address addr, which is no
 * live allocation's start in the table: the foreign context of the device
 * the driver says holds it (cuPointerGetAttributes), if it is device memory
 * and not managed. */
static gpumem_status ipc_context_of(uint64_t addr, const char *what, gm_dctx **out)
{
    enum { TYPE, MANAGED, ORDINAL, N };
    static const int attrs[N] = {
        [TYPE] = GM_CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
        [MANAGED] = GM_CU_POINTER_ATTRIBUTE_IS_MANAGED,
        [ORDINAL] = GM_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
    };
    uint64_t slot[N] = {0}; /* zeroed 8-byte slots: the driver writes 1 or 4 bytes */
    void *data[N] = {&slot[TYPE], &slot[MANAGED], &slot[ORDINAL]};
    GM_FORWARD_IF_ERROR(gm_drv_check(GM_DRV(pointer_get_attributes, N, attrs, data, addr),
                                     GM_OP_pointer_get_attributes, what));
    unsigned type;
    int ordinal;
    memcpy(&type, &slot[TYPE], sizeof type);
    memcpy(&ordinal, &slot[ORDINAL], sizeof ordinal);
    GM_RETURN_ERROR_IF(type != GM_CU_MEMORYTYPE_DEVICE || slot[MANAGED] != 0, GPUMEM_ERROR_INVALID_VALUE,
                       "%s: pointer 0x%llx is no device memory the driver knows (%s)", what,
                       (unsigned long long)addr, slot[MANAGED] ? "managed memory cannot be exported"
                                                               : "host memory, freed memory, or nothing");
    fdevice *f;
    GM_FORWARD_IF_ERROR(device_get(ordinal, what, &f));
    *out = atomic_load_explicit(&f->ctx, memory_order_acquire)->dctx;
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_foreign_ipc_handle(const void *ptr, void *handle, size_t *offset)
{
    const char *what = "gpumem_foreign_ipc_handle";
    GM_CHECK_NULL(handle);
    GM_CHECK_NULL(offset);
    GM_RETURN_ERROR_IF(ptr == NULL, GPUMEM_ERROR_INVALID_VALUE, "%s: pointer is NULL", what);
    uint64_t addr = (uint64_t)(uintptr_t)ptr;
    gm_fentry e;
    gm_dctx *dctx = NULL;
    if (gm_foreign_map_find(GM_FSPACE_DEVICE, addr, &e)) { /* the start of an allocation of this tier */
        GM_RETURN_ERROR_IF(e.kind != GPUMEM_MEMORY_DEVICE, GPUMEM_ERROR_INVALID_VALUE,
                           "%s: pointer %p is managed memory of gpumem_foreign_managed_alloc, which the driver "
                           "cannot export", what, ptr);
        dctx = e.ctx->dctx;
    } else { /* inside one, or another allocator's memory (numba's foreign arrays) */
        GM_FORWARD_IF_ERROR(ipc_context_of(addr, what, &dctx));
    }
    gm_cu_deviceptr base = 0;
    size_t range = 0;
    GM_FORWARD_IF_ERROR(gm_drv_check(GM_DRV(mem_get_address_range, dctx, &base, &range, addr),
                                     GM_OP_mem_get_address_range, what));
    gm_cu_ipc_mem_handle h;
    GM_FORWARD_IF_ERROR(gm_drv_check(GM_DRV(ipc_get_mem_handle, dctx, &h, base), GM_OP_ipc_get_mem_handle,
                                     what));
    _Static_assert(sizeof h == GPUMEM_FOREIGN_IPC_HANDLE_SIZE, "CUipcMemHandle is 64 bytes");
    memcpy(handle, &h, sizeof h);
    *offset = (size_t)(addr - base);
    return GPUMEM_OK;
}

/* ---- contexts and pools --------------------------------------------------------------- */

GPUMEM_API gpumem_status gpumem_foreign_set_context(gpumem_context *ctx)
{
    const char *what = "gpumem_foreign_set_context";
    GM_CHECK_HANDLE(ctx);
    fdevice *f;
    GM_FORWARD_IF_ERROR(device_get(ctx->device, what, &f));
    gpumem_context_retain(ctx);
    pthread_mutex_lock(&devices_lock);
    gpumem_context *old = atomic_exchange_explicit(&f->ctx, ctx, memory_order_acq_rel);
    pthread_mutex_unlock(&devices_lock);
    /* The anchor keeps its own reference; an earlier context of the caller's
     * stays referenced too: its pools (and the allocations made in it) may
     * still be live, and entries name it. */
    (void)old;
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_foreign_context(int device, gpumem_context **ctx)
{
    GM_CHECK_NULL(ctx);
    fdevice *f;
    GM_FORWARD_IF_ERROR(device_get(device, "gpumem_foreign_context", &f));
    *ctx = atomic_load_explicit(&f->ctx, memory_order_acquire);
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_foreign_release_held(int device)
{
    const char *what = "gpumem_foreign_release_held";
    GM_RETURN_ERROR_IF(device < -1 || device >= GM_FOREIGN_MAX_DEVICES, GPUMEM_ERROR_INVALID_DEVICE,
                       "%s: device %d: the foreign tier serves devices 0 to %d (-1: all)", what, device,
                       GM_FOREIGN_MAX_DEVICES - 1);
    pthread_once(&devices_once, devices_init);
    gpumem_status st = GPUMEM_OK;
    for (int d = device < 0 ? 0 : device; d <= (device < 0 ? GM_FOREIGN_MAX_DEVICES - 1 : device); d++) {
        fdevice *f = &devices[d];
        pthread_mutex_lock(&f->lock);
        gpumem_pool *p = atomic_load_explicit(&f->pool, memory_order_acquire);
        if (p != NULL)
            st = gm_keep_first(st, prefixed(gpumem_pool_free_held(p), what));
        for (int i = 0; i < HOST_POOLS; i++)
            if (f->host[i] != NULL)
                st = gm_keep_first(st, prefixed(gpumem_host_pool_free_held(f->host[i]), what));
        pthread_mutex_unlock(&f->lock);
    }
    return st;
}

GPUMEM_API gpumem_status gpumem_foreign_stream_handle(gpumem_stream *stream, void **handle)
{
    GM_CHECK_HANDLE(stream);
    GM_CHECK_NULL(handle);
    *handle = (void *)gm_stream_ds(stream);
    return GPUMEM_OK;
}

/* ---- PyTorch's CUDAPluggableAllocator ------------------------------------------------- */

GPUMEM_API void *gpumem_torch_alloc(size_t size, int device, void *stream)
{
    void *p = NULL;
    if (gpumem_foreign_alloc("torch", device, size, stream, &p) != GPUMEM_OK)
        return NULL;
    return p;
}

GPUMEM_API void gpumem_torch_free(void *ptr, size_t size, int device, void *stream)
{
    (void)size;
    (void)device;
    /* PyTorch used the block on its allocation stream alone: on the
     * legacy stream no event is needed (foreign.h). */
    if ((uintptr_t)stream <= 1)
        stream = GPUMEM_FOREIGN_STREAM_LEGACY_ONLY;
    (void)gpumem_foreign_free(ptr, stream);
}
