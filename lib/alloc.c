/*
 * alloc.c - the context allocator: the one path by which arrays, scratch
 * and staging get device, page-locked and managed memory (alloc.h), with
 * the library's one out-of-memory ladder, and the pools' public allocate
 * calls, which take the same ladder.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "dealloc.h"
#include "env.h"
#include "error.h"
#include "hostreg.h"
#include "pool.h"
#include "stream.h"
#include "trace.h"

/* The memory kind a trace event names (a gpumem_memory_kind): flags are
 * cuMemHostAlloc's, or a host pool's (pool). */
static int trace_kind(gm_mem mem, gm_pool_kind pool_kind, unsigned flags, gm_pool *pool)
{
    if (mem == GM_MEM_DEVICE || (mem != GM_MEM_MANAGED && mem != GM_MEM_LOCKED && pool_kind == GM_POOL_DEVICE))
        return GPUMEM_MEMORY_DEVICE;
    if (mem == GM_MEM_MANAGED)
        return GPUMEM_MEMORY_MANAGED;
    if (pool != NULL)
        flags = gm_pool_core_alloc_flags(pool);
    return flags & GM_CU_MEMHOSTALLOC_DEVICEMAP ? GPUMEM_MEMORY_MAPPED : GPUMEM_MEMORY_PINNED;
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
    uint64_t released_blocks, released_bytes;
} attempt;

/* Returns the driver's result for driver memory; for a pool block, 0, or
 * GM_CUDA_ERROR_OUT_OF_MEMORY, or -1 with *st set for another failure. */
static int try_once(attempt *a, gpumem_status *st)
{
    gm_block *b = a->out;
    gm_dctx *dctx = a->ctx->dctx;
    switch (a->mem) {
    case GM_MEM_DEVICE: {
        gm_cu_deviceptr d = 0;
        int rc = GM_DRV(mem_alloc, dctx, &d, a->bytes);
        b->addr = d;
        return rc;
    }
    case GM_MEM_MANAGED: {
        gm_cu_deviceptr d = 0;
        int rc = GM_DRV(mem_alloc_managed, dctx, &d, a->bytes, a->flags);
        b->addr = d;
        return rc;
    }
    case GM_MEM_LOCKED: {
        void *h = NULL;
        int rc = gm_host_alloc_locked(dctx, a->bytes, a->flags, a->what, &h, st);
        b->addr = (uint64_t)(uintptr_t)h;
        return rc;
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
}

/* The ladder: try; when the driver is out of memory, give back every block
 * the pools of this device hold, flush the context's deferred frees, and
 * try once more.  Returns as try_once. */
static int with_ladder(attempt *a, gpumem_status *st)
{
    *st = GPUMEM_OK;
    int rc = try_once(a, st);
    if (rc != GM_CUDA_ERROR_OUT_OF_MEMORY)
        return rc;
    pthread_mutex_lock(&ladder_lock);
    gpumem_status rst = gm_pools_release_held(a->ctx->dctx, a->kind, a->what, &a->released_blocks,
                                              &a->released_bytes);
    if (rst == GPUMEM_OK && gm_dealloc_flush_for_retry(a->ctx)) {
        /* the flush may have freed into a pool that holds */
        uint64_t n = 0, b = 0;
        rst = gm_pools_release_held(a->ctx->dctx, a->kind, a->what, &n, &b);
        a->released_blocks += n;
        a->released_bytes += b;
    }
    if (rst == GPUMEM_OK) {
        if (a->pool != NULL)
            gm_pool_core_count_retry(a->pool);
        rc = try_once(a, st);
        GM_TRACE(gm_trace_ladder(a->ctx, a->ctx->device, trace_kind(a->mem, a->kind, a->flags, a->pool), a->pool,
                                 a->bytes, a->released_bytes, a->released_blocks, rc == 0));
    } else {
        *st = rst;
        rc = -1;
    }
    pthread_mutex_unlock(&ladder_lock);
    return rc;
}

/* ---- driver memory ------------------------------------------------------------------ */

static const char *mem_name(gm_mem mem)
{
    return mem == GM_MEM_DEVICE ? "device memory" : mem == GM_MEM_MANAGED ? "managed memory" : "page-locked memory";
}

/* Driver memory of a kind, with the ladder. */
static gpumem_status alloc_driver(gpumem_context *ctx, gm_mem mem, size_t bytes, unsigned flags, const char *what,
                                  gm_block *out)
{
    *out = (gm_block){0};
    if (bytes == 0)
        return GPUMEM_OK; /* the driver refuses empty allocations; none is needed */
    attempt a = {.ctx = ctx, .kind = mem == GM_MEM_LOCKED ? GM_POOL_HOST : GM_POOL_DEVICE, .what = what,
                 .mem = mem, .bytes = bytes, .flags = flags, .out = out};
    gpumem_status st;
    int rc = with_ladder(&a, &st);
    if (rc < 0)
        return st;
    if (rc != 0) {
        char where[240];
        snprintf(where, sizeof where, "%s: %zu bytes of %s on device %d", what, bytes, mem_name(mem), ctx->device);
        int op = mem == GM_MEM_DEVICE ? GM_OP_mem_alloc : mem == GM_MEM_MANAGED ? GM_OP_mem_alloc_managed
                                                                                 : GM_OP_mem_host_alloc;
        st = gm_drv_check(rc, op, where);
        /* Host memory the driver cannot give is the host's shortage. */
        if (mem == GM_MEM_LOCKED && st == GPUMEM_ERROR_OUT_OF_MEMORY)
            st = gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s", gpumem_last_error());
        GM_TRACE_IF(rc == GM_CUDA_ERROR_OUT_OF_MEMORY, gm_trace_oom(ctx, ctx->device, trace_kind(mem, 0, flags, NULL),
                                                                    NULL, bytes, st, gpumem_last_error()));
        *out = (gm_block){0};
        return st;
    }
    out->bytes = bytes;
    out->mem = mem;
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
    GM_TRACE(gm_trace_alloc(ctx, ctx->device, NULL, trace_kind(mem, 0, flags, NULL), NULL, bytes, out->addr));
    return GPUMEM_OK;
}

/* A pool block, with the ladder. */
static gpumem_status alloc_pool(gpumem_context *ctx, gm_pool *pool, gm_pool_kind kind, size_t bytes,
                                gpumem_stream *stream, const char *what, gm_block *out)
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
                     .stream = stream, .pool = pool, .out = out};
        int rc = with_ladder(&a, &st);
        if (rc == GM_CUDA_ERROR_OUT_OF_MEMORY)
            st = gm_pool_core_oom_error(pool, bytes, a.released_blocks, a.released_bytes, what);
        GM_TRACE_IF(rc == GM_CUDA_ERROR_OUT_OF_MEMORY, gm_trace_oom(ctx, ctx->device, trace_kind(GM_MEM_POOL, kind, 0,
                    pool), pool, bytes, st, gpumem_last_error()));
        if (rc != 0) {
            *out = (gm_block){0};
            return st;
        }
    }
    out->bytes = bytes;
    out->mem = GM_MEM_POOL;
    out->stream = gm_stream_hold(stream);
    out->pool_ctx = gm_pool_core_holds_context(pool) ? gm_pool_core_context(pool) : NULL;
    GM_TRACE_IF(bytes != 0, gm_trace_alloc(ctx, ctx->device, stream, trace_kind(GM_MEM_POOL, kind, 0, pool), pool,
                                           bytes, out->addr));
    return GPUMEM_OK;
}

gpumem_status gm_alloc_device(gpumem_context *ctx, size_t bytes, gpumem_stream *stream, const char *what,
                              gm_block *out)
{
    gpumem_pool *pool = atomic_load_explicit(&ctx->pool, memory_order_acquire);
    if (pool == NULL || bytes == 0)
        return alloc_driver(ctx, GM_MEM_DEVICE, bytes, 0, what, out);
    if (!gm_handle_live(pool, GM_HANDLE_POOL))
        return gm_error(GPUMEM_ERROR_INVALID_STATE, "%s: the context's pool (gpumem_context_set_pool) was "
                        "destroyed; set another pool, or NULL, before allocating", what);
    return alloc_pool(ctx, gm_pool_of_device(pool), GM_POOL_DEVICE, bytes, stream, what, out);
}

gpumem_status gm_alloc_locked(gpumem_context *ctx, size_t bytes, unsigned flags, const char *what, gm_block *out)
{
    return alloc_driver(ctx, GM_MEM_LOCKED, bytes, flags, what, out);
}

gpumem_status gm_alloc_managed(gpumem_context *ctx, size_t bytes, unsigned flags, const char *what, gm_block *out)
{
    return alloc_driver(ctx, GM_MEM_MANAGED, bytes, flags, what, out);
}

gpumem_status gm_alloc_host_pool(gpumem_host_pool *pool, size_t bytes, const char *what, gm_block *out)
{
    gm_pool *p = gm_pool_of_host(pool);
    gpumem_status st = gm_pool_core_check(p, GM_POOL_HOST, what, "pool");
    if (st != GPUMEM_OK)
        return st;
    /* No stream: the CPU uses the block at once, so only idle blocks do. */
    return alloc_pool(gm_pool_core_context(p), p, GM_POOL_HOST, bytes, NULL, what, out);
}

gpumem_status gm_alloc_free(gpumem_context *ctx, gm_block *b)
{
    gpumem_status st = GPUMEM_OK;
    if (b->mem != GM_MEM_POOL) /* a pool block's free is recorded by its pool (gm_pool_release) */
        GM_TRACE_IF(b->mem != GM_MEM_NONE,
                    gm_trace_free(ctx, ctx->device, NULL, GM_TRACE_KIND_UNKNOWN, NULL, b->bytes, b->addr));
    switch (b->mem) {
    case GM_MEM_NONE:
        break;
    case GM_MEM_DEVICE:
        st = gm_dealloc_free(ctx, GM_FREE_DEVICE, b->addr, b->bytes);
        break;
    case GM_MEM_MANAGED:
        gm_host_untrack_allocation((void *)(uintptr_t)b->addr);
        st = gm_dealloc_free(ctx, GM_FREE_DEVICE, b->addr, b->bytes);
        break;
    case GM_MEM_LOCKED:
        gm_host_untrack_allocation((void *)(uintptr_t)b->addr);
        st = gm_dealloc_free(ctx, GM_FREE_HOST, b->addr, b->bytes);
        break;
    case GM_MEM_POOL:
        /* Back to the pool, ordered after the work of the stream it was
         * allocated on while that stream lives (a destroyed stream was
         * synchronized: nothing of it is pending). */
        st = gm_pool_release(b->token, gm_stream_if_alive(b->stream), "gpumem_array_release");
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
    const char *v = gm_env("GPUMEM_ALLOCATOR");
    if (v == NULL || gm_word_is(v, "driver"))
        return GPUMEM_OK;
    if (!gm_word_is(v, "pool"))
        return gm_error(GPUMEM_ERROR_INVALID_ENVIRONMENT, "%s: GPUMEM_ALLOCATOR='%s': expected 'driver' or 'pool'",
                        what, v);
    gm_pool *p = NULL;
    gpumem_status st = gm_pool_core_create(GM_POOL_DEVICE, ctx, GM_POOL_CONTEXT_OWNED, 0, what, &p);
    if (st == GPUMEM_OK) {
        ctx->own_pool = (gpumem_pool *)(void *)p;
        atomic_store_explicit(&ctx->pool, ctx->own_pool, memory_order_release);
    }
    return st;
}

static gpumem_status allocator_teardown(gpumem_context *ctx)
{
    gpumem_pool *own = ctx->own_pool;
    if (own == NULL)
        return GPUMEM_OK;
    gpumem_pool *expected = own;
    atomic_compare_exchange_strong(&ctx->pool, &expected, NULL);
    ctx->own_pool = NULL;
    return gm_pool_core_destroy(gm_pool_of_device(own), "gpumem_context_release");
}

const gm_context_hook gm_allocator_hook = {allocator_create, allocator_teardown};

/* ---- the pools' public allocate calls ---------------------------------------------- */

GPUMEM_API gpumem_status gpumem_pool_allocate(gpumem_pool *pool, size_t size, gpumem_stream *stream,
                                              gpumem_allocation **alloc)
{
    GM_CHECK_NULL(alloc);
    const char *what = "gpumem_pool_allocate";
    gm_pool *p = gm_pool_of_device(pool);
    gpumem_status st = gm_pool_core_check(p, GM_POOL_DEVICE, what, "pool");
    if (st != GPUMEM_OK)
        return st;
    gm_block b;
    st = alloc_pool(gm_pool_core_context(p), p, GM_POOL_DEVICE, size, stream, what, &b);
    if (st == GPUMEM_OK) {
        gm_stream_unhold(b.stream); /* the caller frees it with its own stream */
        *alloc = b.token;
    }
    return st;
}

GPUMEM_API gpumem_status gpumem_host_pool_allocate_bytes(gpumem_host_pool *pool, size_t size,
                                                         gpumem_allocation **alloc)
{
    GM_CHECK_NULL(alloc);
    gm_block b;
    gpumem_status st = gm_alloc_host_pool(pool, size, "gpumem_host_pool_allocate_bytes", &b);
    if (st == GPUMEM_OK)
        *alloc = b.token;
    return st;
}
