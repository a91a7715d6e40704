/*
 * alloc.c - the context allocator: the one path by which arrays, scratch
 * and staging get device, page-locked and managed memory (alloc.h), with
 * the library's one out-of-memory ladder (then the context's out-of-memory
 * callback, and the error that memstats.c words), which the pools'
 * allocate calls take too (gm_alloc_device_pool, gm_alloc_host_pool).  It
 * keeps the books of driver memory (memstats.h); pools keep their own.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "dealloc.h"
#include "env.h"
#include "params.h"
#include "error.h"
#include "hostreg.h"
#include "memstats.h"
#include "pool.h"
#include "stream.h"
#include "trace.h"
#include "trace_format.h"

/* The memory kind a trace event names (a gpumem_memory_kind): flags are
 * cuMemHostAlloc's, or a host pool's (pool). */
static int trace_kind(gm_mem mem, gm_pool_kind pool_kind, unsigned flags, gm_pool *pool)
{
    if (mem == GM_MEM_DEVICE || (mem != GM_MEM_MANAGED && mem != GM_MEM_LOCKED && pool_kind == GM_POOL_DEVICE))
        return GPUMEM_MEMORY_DEVICE;
    if (mem == GM_MEM_MANAGED)
        return GPUMEM_MEMORY_MANAGED;
    if (pool != NULL)
        flags = gm_pool_alloc_flags(pool);
    return flags & GM_CU_MEMHOSTALLOC_DEVICEMAP ? GPUMEM_MEMORY_MAPPED : GPUMEM_MEMORY_PINNED;
}

/* ---- who holds the memory (alloc.h) ---------------------------------------------- */

_Static_assert((int)GM_OWNER_PROGRAM == GM_TO_PROGRAM && (int)GM_OWNER_SCRATCH == GM_TO_SCRATCH &&
                   (int)GM_OWNER_STAGING == GM_TO_STAGING && (int)GM_OWNER_BOUNCE == GM_TO_BOUNCE &&
                   (int)GM_OWNER_TEMPORARY == GM_TO_TEMPORARY,
               "gm_owner is the trace format's owner");

static _Thread_local gm_owner alloc_owner; /* GM_OWNER_PROGRAM: 0 */

gm_owner gm_alloc_owner_begin(gm_owner owner)
{
    gm_owner was = alloc_owner;
    alloc_owner = owner;
    return was;
}

void gm_alloc_owner_end(gm_owner was)
{
    alloc_owner = was;
}

/* ---- the out-of-memory ladder ----------------------------------------------------- */

/* One ladder at a time: a thread that finds the driver out of memory waits
 * until another's release has reached the driver, instead of retrying while
 * those blocks are in flight.  Running out of memory is rare; one lock for
 * the process is enough. */
static pthread_mutex_t ladder_lock = PTHREAD_MUTEX_INITIALIZER;

/* One attempt at an allocation: a driver result (0, CUDA_ERROR_OUT_OF_MEMORY,
 * another error) for driver memory, or a status for a pool block. */
typedef struct attempt {
    gpumem_context *ctx;
    gm_pool_kind kind; /* whose held blocks the ladder releases */
    const char *what;
    /* what to allocate */
    gm_mem mem;
    size_t bytes;
    unsigned flags;
    gpumem_stream *stream;
    gm_pool *pool; /* GM_MEM_POOL: from this pool */
    /* the result */
    gm_block *out;
    bool spare; /* the caller can do without it: no callback, a short message (gm_alloc_device_spare) */
    gm_oom oom; /* what the ladder and the callback did, for the message (memstats.h) */
} attempt;

/* Returns the driver's result for driver memory; for a pool block, 0, or
 * GM_CUDA_ERROR_OUT_OF_MEMORY, or -1 with *st set for another failure. */
static int try_once(attempt *a, gpumem_status *st)
{
    gm_block *b = a->out;
    gm_dctx *dctx = a->ctx->dctx;
    int rc;
    switch (a->mem) {
    case GM_MEM_DEVICE: {
        gm_cu_deviceptr d = 0;
        rc = GM_DRV(mem_alloc, dctx, &d, a->bytes);
        b->addr = d;
        break;
    }
    case GM_MEM_MANAGED: {
        gm_cu_deviceptr d = 0;
        rc = GM_DRV(mem_alloc_managed, dctx, &d, a->bytes, a->flags);
        b->addr = d;
        break;
    }
    case GM_MEM_LOCKED: {
        void *h = NULL;
        rc = gm_host_alloc_locked(dctx, a->bytes, a->flags, a->what, &h, st);
        b->addr = (uint64_t)(uintptr_t)h;
        break;
    }
    case GM_MEM_POOL: {
        uint64_t addr = 0;
        bool oom = false;
        *st = gm_pool_core_alloc(a->pool, a->bytes, a->stream, a->what, &addr, &b->token, &oom);
        b->addr = addr;
        return *st == GPUMEM_OK ? 0 : oom ? GM_CUDA_ERROR_OUT_OF_MEMORY : -1;
    }
    default:
        return -1;
    }
    if (rc == 0)
        gm_memstats_driver_alloc(a->ctx);
    return rc;
}

/* The ladder, after the driver said it is out of memory: give back every
 * block the pools of this device and kind hold, flush the context's
 * deferred frees, and try once more.  Returns as try_once. */
static int ladder(attempt *a, gpumem_status *st)
{
    struct gm_memstats *m = a->ctx->memstats;
    if (m != NULL)
        GM_STAT_ADD(m->ladder_runs, 1);
    a->oom.ladder_runs++;
    int rc = -1;
    uint64_t n = 0, b = 0, fn = 0, fb = 0;
    pthread_mutex_lock(&ladder_lock);
    gpumem_status rst = gm_pools_release_held(a->ctx->dctx, a->kind, a->what, &n, &b);
    a->oom.released_blocks += n;
    a->oom.released_bytes += b;
    if (rst == GPUMEM_OK) {
        bool flushed = gm_dealloc_flush_for_retry(a->ctx, &fn, &fb);
        a->oom.flushed_frees += fn;
        a->oom.flushed_bytes += fb;
        if (flushed) {
            /* the flush may have freed into a pool that holds */
            rst = gm_pools_release_held(a->ctx->dctx, a->kind, a->what, &n, &b);
            a->oom.released_blocks += n;
            a->oom.released_bytes += b;
        }
    }
    if (rst == GPUMEM_OK) {
        if (a->pool != NULL)
            gm_pool_core_count_retry(a->pool);
        *st = GPUMEM_OK;
        rc = try_once(a, st);
        GM_TRACE(gm_trace_ladder(a->ctx, a->ctx->device, trace_kind(a->mem, a->kind, a->flags, a->pool), a->pool,
                                 a->bytes, a->oom.released_bytes + a->oom.flushed_bytes, a->oom.released_blocks + a->oom.flushed_frees, rc == 0));
    } else {
        *st = rst;
    }
    pthread_mutex_unlock(&ladder_lock);
    if (rc == 0 && m != NULL)
        GM_STAT_ADD(m->ladder_successes, 1);
    return rc;
}

/* The context's out-of-memory callback: whether to try again.  It is the
 * program's: what it allocates is the program's own. */
static bool oom_callback(attempt *a)
{
    gm_owner was = gm_alloc_owner_begin(GM_OWNER_PROGRAM);
    bool again = gm_mem_oom_callback(a->ctx, &a->oom);
    gm_alloc_owner_end(was);
    return again;
}

/* After the driver's first refusal: the ladder, then as often as the
 * context's out-of-memory callback asks (and may), the ladder again after
 * trying once more.  Returns as try_once. */
static int after_oom(attempt *a, gpumem_status *st)
{
    int rc = ladder(a, st);
    while (rc == GM_CUDA_ERROR_OUT_OF_MEMORY && !a->spare && oom_callback(a)) {
        if (a->pool != NULL && !gm_handle_live(a->pool, a->kind == GM_POOL_DEVICE ? GM_HANDLE_POOL
                                                                                    : GM_HANDLE_HOST_POOL)) {
            *st = gm_error(GPUMEM_ERROR_INVALID_STATE, "%s: the out-of-memory callback destroyed the pool that "
                           "was being allocated from", a->what);
            return -1;
        }
        *st = GPUMEM_OK;
        rc = try_once(a, st);
        if (rc == GM_CUDA_ERROR_OUT_OF_MEMORY)
            rc = ladder(a, st);
        if (rc == 0 && a->ctx->memstats != NULL)
            GM_STAT_ADD(a->ctx->memstats->cb_successes, 1);
    }
    return rc;
}

/* Fills the fixed part of a->oom: what was asked for, of which kind. */
static void oom_begin(attempt *a, gpumem_memory_kind kind)
{
    a->oom = (gm_oom){.what = a->what, .bytes = a->bytes, .kind = kind, .pooled = a->mem == GM_MEM_POOL};
    a->oom.driver_op = kind == GPUMEM_MEMORY_DEVICE ? "cuMemAlloc" : kind == GPUMEM_MEMORY_MANAGED
                                                                         ? "cuMemAllocManaged" : "cuMemHostAlloc";
    if (a->mem == GM_MEM_POOL && a->pool != NULL) { /* the pool's own block size and driver call */
        a->oom.block_bytes = gm_pool_block_for(a->pool, a->bytes);
        a->oom.driver_op = gm_pool_alloc_call(a->pool);
    } else if (a->mem == GM_MEM_POOL) {
        a->oom.block_bytes = gm_pool_class_bytes(gm_pool_class_of(a->bytes));
    }
}

/* The error of memory the caller can do without: short, with no driver
 * call of its own, not counted as a failure (the call goes on without). */
static gpumem_status spare_oom(const attempt *a)
{
    return gm_error_driver(GPUMEM_ERROR_OUT_OF_MEMORY, GM_CUDA_ERROR_OUT_OF_MEMORY,
                           "%s: out of device memory: %zu bytes the call can do without, "
                           "after the ladder gave back %llu bytes (%s: %s)", a->what, a->bytes,
                           (unsigned long long)(a->oom.released_bytes + a->oom.flushed_bytes), a->oom.driver_op,
                           gm_cu_error_name(GM_CUDA_ERROR_OUT_OF_MEMORY));
}

/* ---- driver memory ------------------------------------------------------------------ */

static const char *mem_name(gm_mem mem)
{
    return mem == GM_MEM_DEVICE ? "device memory" : mem == GM_MEM_MANAGED ? "managed memory" : "page-locked memory";
}

/* The kind of driver memory mem with cuMemHostAlloc flags. */
static gpumem_memory_kind driver_kind(gm_mem mem, unsigned flags)
{
    if (mem == GM_MEM_DEVICE)
        return GPUMEM_MEMORY_DEVICE;
    if (mem == GM_MEM_MANAGED)
        return GPUMEM_MEMORY_MANAGED;
    return flags & GM_CU_MEMHOSTALLOC_DEVICEMAP ? GPUMEM_MEMORY_MAPPED : GPUMEM_MEMORY_PINNED;
}

/* Driver memory of a kind, with the ladder. */
static gpumem_status alloc_driver(gpumem_context *ctx, gm_mem mem, size_t bytes, unsigned flags, const char *what,
                                  bool spare, gm_block *out)
{
    *out = (gm_block){0};
    if (bytes == 0)
        return GPUMEM_OK; /* the driver refuses empty allocations; none is needed */
    attempt a = {.ctx = ctx, .kind = mem == GM_MEM_LOCKED ? GM_POOL_HOST : GM_POOL_DEVICE, .what = what,
                 .mem = mem, .bytes = bytes, .flags = flags, .out = out, .spare = spare};
    gpumem_memory_kind kind = driver_kind(mem, flags);
    gpumem_status st = GPUMEM_OK;
    int rc = try_once(&a, &st);
    if (rc == GM_CUDA_ERROR_OUT_OF_MEMORY) {
        oom_begin(&a, kind);
        rc = after_oom(&a, &st);
    }
    if (rc < 0)
        return st;
    if (rc == GM_CUDA_ERROR_OUT_OF_MEMORY) {
        *out = (gm_block){0};
        st = spare ? spare_oom(&a) : gm_mem_oom_error(ctx, &a.oom);
        GM_TRACE(gm_trace_oom(ctx, ctx->device, trace_kind(mem, 0, flags, NULL), NULL, bytes, st, gm_error_message()));
        return st;
    }
    if (rc != 0) {
        char where[240];
        snprintf(where, sizeof where, "%s: %zu bytes of %s on device %d", what, bytes, mem_name(mem), ctx->device);
        int op = mem == GM_MEM_DEVICE ? GM_OP_mem_alloc : mem == GM_MEM_MANAGED ? GM_OP_mem_alloc_managed
                                                                                 : GM_OP_mem_host_alloc;
        st = gm_drv_check(rc, op, where);
        /* Host memory the driver cannot give is the host's shortage. */
        if (mem == GM_MEM_LOCKED && st == GPUMEM_ERROR_OUT_OF_MEMORY)
            st = gm_error_reword(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s", gm_error_message());
        *out = (gm_block){0};
        return st;
    }
    out->bytes = bytes;
    out->mem = mem;
    out->mapped = kind == GPUMEM_MEMORY_MAPPED;
    if (mem == GM_MEM_MANAGED) {
        /* Known as page-locked (gpumem_host_is_pinned, copy planning) while
         * it lives, as page-locked memory is (gm_host_alloc_locked). */
        st = gm_host_track_allocation((void *)(uintptr_t)out->addr, bytes);
        if (st != GPUMEM_OK) {
            GM_DRV(mem_free, ctx->dctx, out->addr);
            *out = (gm_block){0};
            return gm_error_prefix(st, what);
        }
    }
    gm_memstats_live(ctx, gm_memkind_of(kind), bytes, +1);
    gm_memstats_sample(ctx);
    GM_TRACE(gm_trace_alloc(ctx, ctx->device, NULL, trace_kind(mem, 0, flags, NULL), NULL, bytes, out->addr,
                            alloc_owner));
    return GPUMEM_OK;
}

/* A pool block, with the ladder. */
static gpumem_status alloc_pool(gpumem_context *ctx, gm_pool *pool, gm_pool_kind kind, size_t bytes,
                                gpumem_stream *stream, const char *what, bool spare, gm_block *out)
{
    /* The first try is the pool's fast path, made directly. */
    uint64_t addr = 0;
    bool oom = false;
    gpumem_status st = gm_pool_core_alloc(pool, bytes, stream, what, &addr, &out->token, &oom);
    out->addr = addr;
    if (st != GPUMEM_OK) {
        if (!oom) {
            *out = (gm_block){0};
            return st;
        }
        attempt a = {.ctx = ctx, .kind = kind, .what = what, .mem = GM_MEM_POOL, .bytes = bytes,
                     .stream = stream, .pool = pool, .out = out, .spare = spare};
        oom_begin(&a, kind == GM_POOL_DEVICE ? GPUMEM_MEMORY_DEVICE
                      : gm_pool_alloc_flags(pool) & GM_CU_MEMHOSTALLOC_DEVICEMAP ? GPUMEM_MEMORY_MAPPED
                                                                                 : GPUMEM_MEMORY_PINNED);
        int rc = after_oom(&a, &st);
        if (rc == GM_CUDA_ERROR_OUT_OF_MEMORY)
            st = spare ? spare_oom(&a) : gm_mem_oom_error(ctx, &a.oom);
        GM_TRACE_IF(rc == GM_CUDA_ERROR_OUT_OF_MEMORY, gm_trace_oom(ctx, ctx->device, trace_kind(GM_MEM_POOL, kind, 0,
                    pool), pool, bytes, st, gm_error_message()));
        if (rc != 0) {
            *out = (gm_block){0};
            return st;
        }
    }
    out->bytes = bytes;
    out->mem = GM_MEM_POOL;
    out->legacy_only = false;
    out->stream = gm_stream_hold(stream);
    out->pool_ctx = gm_pool_holds_context(pool) ? gm_pool_context(pool) : NULL;
    GM_TRACE_IF(bytes != 0, gm_trace_alloc(ctx, ctx->device, stream, trace_kind(GM_MEM_POOL, kind, 0, pool), pool,
                                           bytes, out->addr, alloc_owner));
    return GPUMEM_OK;
}

static gpumem_status alloc_device(gpumem_context *ctx, size_t bytes, gpumem_stream *stream, const char *what,
                                  bool spare, gm_block *out)
{
    gpumem_pool *pool = atomic_load_explicit(&ctx->pool, memory_order_acquire);
    if (pool == NULL || bytes == 0)
        return alloc_driver(ctx, GM_MEM_DEVICE, bytes, 0, what, spare, out);
    if (!gm_handle_live(pool, GM_HANDLE_POOL))
        return gm_error(GPUMEM_ERROR_INVALID_STATE, "%s: the context's pool (gpumem_context_set_pool) was "
                        "destroyed; set another pool, or NULL, before allocating", what);
    return alloc_pool(ctx, gm_pool_of_device(pool), GM_POOL_DEVICE, bytes, stream, what, spare, out);
}

gpumem_status gm_alloc_device(gpumem_context *ctx, size_t bytes, gpumem_stream *stream, const char *what,
                              gm_block *out)
{
    return alloc_device(ctx, bytes, stream, what, false, out);
}

gpumem_status gm_alloc_device_spare(gpumem_context *ctx, size_t bytes, gpumem_stream *stream, const char *what,
                                    gm_block *out)
{
    return alloc_device(ctx, bytes, stream, what, true, out);
}

gpumem_status gm_alloc_locked(gpumem_context *ctx, size_t bytes, unsigned flags, const char *what, gm_block *out)
{
    return alloc_driver(ctx, GM_MEM_LOCKED, bytes, flags, what, false, out);
}

gpumem_status gm_alloc_managed(gpumem_context *ctx, size_t bytes, unsigned flags, const char *what, gm_block *out)
{
    return alloc_driver(ctx, GM_MEM_MANAGED, bytes, flags, what, false, out);
}

gpumem_status gm_alloc_device_pool(gpumem_pool *pool, size_t bytes, gpumem_stream *stream, const char *what,
                                   gm_block *out)
{
    gm_pool *p = gm_pool_of_device(pool);
    gpumem_status st = gm_pool_core_check(p, GM_POOL_DEVICE, what, "pool");
    if (st != GPUMEM_OK)
        return st;
    return alloc_pool(gm_pool_context(p), p, GM_POOL_DEVICE, bytes, stream, what, false, out);
}

gpumem_status gm_alloc_host_pool(gpumem_host_pool *pool, size_t bytes, const char *what, gm_block *out)
{
    gm_pool *p = gm_pool_of_host(pool);
    gpumem_status st = gm_pool_core_check(p, GM_POOL_HOST, what, "pool");
    if (st != GPUMEM_OK)
        return st;
    /* No stream: the CPU uses the block at once, so only idle blocks do. */
    return alloc_pool(gm_pool_context(p), p, GM_POOL_HOST, bytes, NULL, what, false, out);
}

gpumem_status gm_alloc_free(gpumem_context *ctx, gm_block *b, const char *what)
{
    gpumem_status st = GPUMEM_OK;
    if (b->mem != GM_MEM_POOL) /* a pool block's free is recorded by its pool (gm_pool_release) */
        GM_TRACE_IF(b->mem != GM_MEM_NONE,
                    gm_trace_free(ctx, ctx->device, NULL, GM_TRACE_KIND_UNKNOWN, NULL, b->bytes, b->addr));
    switch (b->mem) {
    case GM_MEM_NONE:
        break;
    case GM_MEM_DEVICE:
        gm_memstats_live(ctx, GM_MK_DEVICE, b->bytes, -1);
        st = gm_dealloc_free(ctx, GM_FREE_DEVICE, b->addr, b->bytes, what);
        break;
    case GM_MEM_MANAGED:
        gm_memstats_live(ctx, GM_MK_MANAGED, b->bytes, -1);
        gm_host_untrack_allocation((void *)(uintptr_t)b->addr);
        st = gm_dealloc_free(ctx, GM_FREE_DEVICE, b->addr, b->bytes, what);
        break;
    case GM_MEM_LOCKED:
        gm_memstats_live(ctx, b->mapped ? GM_MK_MAPPED : GM_MK_PINNED, b->bytes, -1);
        gm_host_untrack_allocation((void *)(uintptr_t)b->addr);
        st = gm_dealloc_free(ctx, GM_FREE_HOST, b->addr, b->bytes, what);
        break;
    case GM_MEM_POOL:
        /* Back to the pool, ordered after the work of the stream it was
         * allocated on while that stream lives (a destroyed stream was
         * synchronized: nothing of it is pending). */
        st = gm_pool_release_as(b->token, gm_stream_if_alive(b->stream), b->legacy_only, what);
        gm_stream_unhold(b->stream);
        break;
    }
    *b = (gm_block){0};
    return st;
}

bool gm_alloc_keepable(const gm_block *b)
{
    return b->mem != GM_MEM_POOL || gm_pool_token_pool_live(b->token);
}

/* ---- the default allocator ------------------------------------------------------------ */

/* GPUMEM_ALLOCATOR=pool gives every context its own device pool at creation
 * (the context holds it, and destroys it at its end); driver, the default,
 * gives none.  pool.h says why the driver is the default. */
static gpumem_status allocator_create(gpumem_context *ctx, const char *what)
{
    const char *v = gm_param_text(GM_P_ALLOCATOR);
    if (v == NULL || gm_word_is(v, "driver"))
        return GPUMEM_OK;
    if (!gm_word_is(v, "pool"))
        return gm_error(GPUMEM_ERROR_INVALID_ENVIRONMENT, "%s: GPUMEM_ALLOCATOR='%s': expected 'driver' or 'pool'",
                        what, v);
    gm_pool *p = NULL;
    const gm_source_config src = {.kind = GM_SOURCE_DEVICE};
    gpumem_status st = gm_pool_core_create(GM_POOL_DEVICE, ctx, GM_POOL_CONTEXT_OWNED, &src, what, &p);
    if (st == GPUMEM_OK) {
        ctx->own_pool = (gpumem_pool *)(void *)p;
        atomic_store_explicit(&ctx->pool, ctx->own_pool, memory_order_release);
    }
    return st;
}

static gpumem_status allocator_teardown(gpumem_context *ctx, const char *what)
{
    gpumem_pool *own = ctx->own_pool;
    if (own == NULL)
        return GPUMEM_OK;
    gpumem_pool *expected = own;
    atomic_compare_exchange_strong(&ctx->pool, &expected, NULL);
    ctx->own_pool = NULL;
    return gm_pool_core_destroy(gm_pool_of_device(own), what);
}

const gm_context_hook gm_allocator_hook = {allocator_create, allocator_teardown};
