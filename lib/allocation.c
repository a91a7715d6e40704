/*
 * allocation.c - gpumem_allocation handles: the process-wide table of
 * block records that the handles name (pool.h: a handle is a record number
 * and a generation tag), and the gpumem_allocation_* calls.  The pools'
 * allocate calls are alloc.c's; a free goes to the pool core
 * (gm_pool_release, pool_cache.c).
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "memstats.h"
#include "pool_impl.h"

/* ---- the record table ------------------------------------------------------------- */

_Atomic(gm_rec *) gm_rec_chunks[REC_MAX_CHUNKS];
static pthread_mutex_t rec_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t rec_used;
static gm_rec *rec_free_list;

gm_rec *gm_rec_get(void)
{
    gm_rec *r = NULL;
    pthread_mutex_lock(&rec_lock);
    if (rec_free_list != NULL) {
        r = rec_free_list;
        rec_free_list = r->next;
    } else if (rec_used < REC_MAX_CHUNKS * REC_CHUNK) {
        uint32_t chunk = rec_used >> REC_CHUNK_BITS;
        gm_rec *c = atomic_load_explicit(&gm_rec_chunks[chunk], memory_order_relaxed);
        void *mem = NULL;
        if (c == NULL && posix_memalign(&mem, _Alignof(gm_rec), REC_CHUNK * sizeof *c) == 0) {
            c = mem;
            memset(c, 0, REC_CHUNK * sizeof *c);
            for (uint32_t i = 0; i < REC_CHUNK; i++)
                c[i].index = (chunk << REC_CHUNK_BITS) | i;
            atomic_store_explicit(&gm_rec_chunks[chunk], c, memory_order_release);
        }
        if (c != NULL)
            r = &c[rec_used++ & (REC_CHUNK - 1)];
    }
    pthread_mutex_unlock(&rec_lock);
    if (r != NULL) {
        r->next = NULL;
        r->key = 0;
        r->event = NULL;
    }
    return r;
}

void gm_rec_put(gm_rec *r)
{
    pthread_mutex_lock(&rec_lock);
    r->pool = NULL;
    r->next = rec_free_list;
    rec_free_list = r;
    pthread_mutex_unlock(&rec_lock);
}

/* The live record of a handle (for reading its fields), or NULL with *st
 * set. */
static gm_rec *rec_live(const gpumem_allocation *a, const char *what, gpumem_status *st)
{
    if (a == NULL) {
        *st = gm_error(GPUMEM_ERROR_NULL_ARGUMENT, "%s: argument 'alloc' is NULL", what);
        return NULL;
    }
    uint32_t htag;
    gm_rec *r = gm_rec_of(a, &htag);
    if (r == NULL) {
        *st = gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: 'alloc' is not an allocation handle", what);
        return NULL;
    }
    if ((atomic_load_explicit(&r->tag, memory_order_acquire) & HANDLE_TAG_MASK) != htag) {
        *st = gm_error(GPUMEM_ERROR_INVALID_STATE, "%s: 'alloc' was freed already", what);
        return NULL;
    }
    return r;
}

gpumem_status gm_pool_token_block(const gpumem_allocation *a, const char *what, gm_pool **pool, uint64_t *addr,
                                  size_t *requested)
{
    gpumem_status st = GPUMEM_OK;
    gm_rec *r = rec_live(a, what, &st);
    if (r == NULL)
        return st;
    *pool = r->pool;
    *addr = r->addr;
    *requested = r->requested;
    return GPUMEM_OK;
}

bool gm_pool_token_pool_live(const gpumem_allocation *token)
{
    uint32_t htag;
    gm_rec *r = gm_rec_of(token, &htag);
    return r != NULL && gm_handle_live(r->pool, r->pool->kind == GM_POOL_DEVICE ? GM_HANDLE_POOL : GM_HANDLE_HOST_POOL);
}

/* ---- the gpumem_allocation_* calls -------------------------------------------------- */

GPUMEM_API gpumem_status gpumem_allocation_free(gpumem_allocation *alloc, gpumem_stream *stream)
{
    GM_CHECK_HANDLE_OR_NULL(stream);
    gpumem_context *ctx = NULL;
    if (gm_leaks_enabled()) { /* the record names the pool, which the free may end */
        gpumem_status st = GPUMEM_OK;
        gm_rec *r = rec_live(alloc, "gpumem_allocation_free", &st);
        ctx = r != NULL ? r->pool->ctx : NULL;
    }
    gpumem_status st = gm_pool_release(alloc, stream, "gpumem_allocation_free");
    if (st == GPUMEM_OK && ctx != NULL)
        gm_leak_forget(ctx, (uintptr_t)alloc);
    return st;
}

GPUMEM_API gpumem_status gpumem_allocation_pointer(const gpumem_allocation *alloc, uint64_t *pointer)
{
    GM_CHECK_NULL(pointer);
    gpumem_status st = GPUMEM_OK;
    gm_rec *r = rec_live(alloc, "gpumem_allocation_pointer", &st);
    if (r != NULL)
        *pointer = r->addr;
    return st;
}

GPUMEM_API gpumem_status gpumem_allocation_host_pointer(const gpumem_allocation *alloc, void **pointer)
{
    GM_CHECK_NULL(pointer);
    gpumem_status st = GPUMEM_OK;
    gm_rec *r = rec_live(alloc, "gpumem_allocation_host_pointer", &st);
    if (r == NULL)
        return st;
    if (r->pool->kind != GM_POOL_HOST)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "gpumem_allocation_host_pointer: 'alloc' is device memory "
                        "(use gpumem_allocation_pointer)");
    *pointer = (void *)(uintptr_t)r->addr;
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_allocation_size(const gpumem_allocation *alloc, size_t *size)
{
    GM_CHECK_NULL(size);
    gpumem_status st = GPUMEM_OK;
    gm_rec *r = rec_live(alloc, "gpumem_allocation_size", &st);
    if (r != NULL)
        *size = r->requested;
    return st;
}
