/*
 * pack_provider.c - the kernels' side of the pack kernels (the caller's is
 * pack_calls.c): the pack kernels of a context, loaded once through the
 * kernel cache (module.c) and memoized per context (memo.c) with their
 * function handles, and launched for the copy engine.  The kernel cache is
 * a layer above the copy engine, so this file only provides its functions
 * (pack_calls.h's gm_pack_provider); lib/wiring.c hands them to the engine.
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "pack_calls.h"
#include "error.h"
#include "gpumem/module.h"
#include "kernels/pack.h"
#include "memo.h"
#include "module.h"
#include "pack_provider.h"
#include "stream.h"

/* Idle scratch buffers kept per context (pack_calls.h). */
#define SCRATCH_KEEP 4

struct gm_pack_kernels {
    atomic_int refs;        /* the memo entry's + users' */
    gpumem_module *module;  /* a reference without a context reference; NULL: unavailable */
    gpumem_function *fn[GM_PACK_ALL_KERNELS];
    gpumem_context *ctx;    /* not retained: the kernels end with it */
    pthread_mutex_t mu;     /* guards the idle scratch */
    gm_scratch *idle;       /* idle scratch buffers */
    unsigned nidle;
    struct gm_pack_kernels *next, *prev; /* in all_kernels (all_mu) */
};

/* Every context's kernels, for gm_pack_scratch_drop_unkept. */
static pthread_mutex_t all_mu = PTHREAD_MUTEX_INITIALIZER;
static gm_pack_kernels *all_kernels;

static void kernels_link(gm_pack_kernels *k)
{
    pthread_mutex_lock(&all_mu);
    k->next = all_kernels;
    if (all_kernels != NULL)
        all_kernels->prev = k;
    all_kernels = k;
    pthread_mutex_unlock(&all_mu);
}

/* Frees a scratch buffer once its last use has ended (a driver failure
 * there leaves it to the context's end). */
static void scratch_free(gm_pack_kernels *k, gm_scratch *s)
{
    gm_dctx *dctx = k->ctx->dctx;
    if (s->used)
        (void)GM_DRV(event_synchronize, dctx, s->ev[GM_SCRATCH_DONE]);
    for (int i = 0; i < GM_SCRATCH_NEVENTS; i++)
        if (s->ev[i] != NULL)
            (void)GM_DRV(event_destroy, dctx, s->ev[i]);
    if (s->side != NULL)
        (void)GM_DRV(stream_destroy, dctx, s->side);
    gm_error_quietly(gm_alloc_free(k->ctx, &s->blk, "the copy scratch")); /* nobody reports it */
    free(s);
}

static void kernels_unref(gm_pack_kernels *k)
{
    if (atomic_fetch_sub_explicit(&k->refs, 1, memory_order_acq_rel) == 1) {
        pthread_mutex_lock(&all_mu);
        if (k->prev != NULL)
            k->prev->next = k->next;
        else
            all_kernels = k->next;
        if (k->next != NULL)
            k->next->prev = k->prev;
        pthread_mutex_unlock(&all_mu);
        while (k->idle != NULL) {
            gm_scratch *s = k->idle;
            k->idle = s->next;
            scratch_free(k, s);
        }
        pthread_mutex_destroy(&k->mu);
        gm_error_quietly(gm_module_drop(k->module)); /* nobody reports it */
        free(k);
    }
}

/* Whether a module load's driver result says that this driver cannot use
 * the PTX at all. */
static bool cannot_load(int result)
{
    return result == GM_CUDA_ERROR_UNSUPPORTED_PTX_VERSION || result == GM_CUDA_ERROR_INVALID_PTX ||
           result == GM_CUDA_ERROR_NO_BINARY_FOR_GPU || result == GM_CUDA_ERROR_INVALID_IMAGE;
}

/* memo.c's create callback; user is the `what` of the copy that loads them
 * (read only while it does). */
static gpumem_status kernels_create(gpumem_context *ctx, const void *key, size_t key_size, void *user,
                                    void **value)
{
    (void)key, (void)key_size;
    const char *what = user;
    gm_pack_kernels *k = calloc(1, sizeof *k);
    if (k == NULL)
        return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", what);
    atomic_init(&k->refs, 1);
    k->ctx = ctx;
    pthread_mutex_init(&k->mu, NULL);
    gpumem_module *m = NULL;
    gpumem_status st = gm_module_load(what, ctx, gm_pack_ptx, gm_pack_ptx_size, &m);
    if (st == GPUMEM_ERROR_DRIVER && cannot_load(gm_error_result())) {
        /* the driver cannot load them (say, PTX newer than it): remembered
         * as unavailable, so no copy tries again; other failures (out of
         * memory, a lost device) fail the copy and are not remembered */
        kernels_link(k);
        *value = k;
        return GPUMEM_OK;
    }
    if (st != GPUMEM_OK) {
        pthread_mutex_destroy(&k->mu);
        free(k);
        return st;
    }
    for (int i = 0; i < GM_PACK_ALL_KERNELS && st == GPUMEM_OK; i++)
        st = gm_module_get_function(what, m, gm_pack_kernel_name(i), &k->fn[i]);
    if (st == GPUMEM_OK)
        gm_module_hold(m); /* ours, holding no context */
    gm_error_quietly(gpumem_module_release(m)); /* the cache holds it: this frees nothing */
    if (st != GPUMEM_OK) {
        pthread_mutex_destroy(&k->mu);
        free(k);
        return st;
    }
    k->module = m;
    kernels_link(k);
    *value = k;
    return GPUMEM_OK;
}

static void kernels_destroy(void *value, void *user)
{
    (void)user;
    kernels_unref(value);
}

static void kernels_acquire(void *value)
{
    gm_pack_kernels *k = value;
    atomic_fetch_add_explicit(&k->refs, 1, memory_order_relaxed);
}

static gpumem_status kernels_get(gpumem_context *ctx, const char *what, gm_pack_kernels **out)
{
    char where[256];
    snprintf(where, sizeof where, "%s: the copy engine's pack kernels", what);
    void *v = NULL;
    gpumem_status st = gm_memo_get(where, ctx, NULL, 0, kernels_create, kernels_destroy, where, kernels_acquire, &v);
    if (st != GPUMEM_OK)
        return st;
    gm_pack_kernels *k = v;
    if (k->module == NULL) {
        kernels_unref(k);
        k = NULL;
    }
    *out = k;
    return GPUMEM_OK;
}

static void kernels_put(gm_pack_kernels *k)
{
    if (k != NULL)
        kernels_unref(k);
}

static gpumem_status kernels_launch_ds(gm_pack_kernels *k, const gm_pack_plan *plan, uint64_t strided,
                                       uint64_t packed, gm_dstream *ds, const char *what)
{
    gm_pack_params p = plan->params;
    p.strided += strided; /* the plan holds the offsets */
    p.packed += packed;
    unsigned grid[3], block[3];
    gm_pack_launch_dims(plan->kernel, &p, grid, block);
    void *params[1] = {&p};
    const gpumem_function *f = k->fn[plan->kernel];
    int rc = GM_DRV(launch_kernel, k->ctx->dctx, f->df, grid, block, 0, ds, params);
    if (rc == GM_CUDA_SUCCESS)
        return GPUMEM_OK;
    char where[300];
    snprintf(where, sizeof where, "%s: the pack kernel '%.64s'", what, f->name);
    return gm_drv_check(rc, GM_OP_launch_kernel, where);
}

/* On a stream the copy checked already (gpumem_launch's checks hold). */
static gpumem_status kernels_launch(gm_pack_kernels *k, const gm_pack_plan *plan, uint64_t strided,
                                    uint64_t packed, gpumem_stream *stream, const char *what)
{
    return kernels_launch_ds(k, plan, strided, packed, gm_stream_ds(stream), what);
}

static gpumem_status kernels_launch_batch(gm_pack_kernels *k, int kernel, const gm_pack_batch_params *p,
                                          gpumem_stream *stream, const char *what)
{
    unsigned grid[3] = {p->nblocks, 1, 1}, block[3] = {GM_PACK_THREADS, 1, 1};
    void *params[1] = {(void *)p};
    gpumem_status st = gpumem_launch(k->fn[kernel], grid, block, 0, stream, params);
    return st == GPUMEM_OK ? st : gm_error_prefix(st, what);
}

/* ---- scratch ------------------------------------------------------------------------------------- */

static gpumem_status scratch_get(gm_pack_kernels *k, size_t bytes, bool side, const char *what, gm_scratch **out)
{
    gm_scratch *s = NULL;
    pthread_mutex_lock(&k->mu);
    gm_scratch **best = NULL;
    for (gm_scratch **p = &k->idle; *p != NULL; p = &(*p)->next)
        if ((*p)->bytes >= bytes && (best == NULL || (*p)->bytes < (*best)->bytes))
            best = p;
    if (best != NULL) {
        s = *best;
        *best = s->next;
        k->nidle--;
    }
    pthread_mutex_unlock(&k->mu);
    gm_dctx *dctx = k->ctx->dctx;
    gpumem_status st = GPUMEM_OK;
    if (s == NULL) {
        size_t size = 64u << 10;
        while (size < bytes && size <= SIZE_MAX / 2)
            size *= 2;
        if (size < bytes)
            size = bytes;
        if ((s = calloc(1, sizeof *s)) == NULL)
            return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", what);
        gm_owner was = gm_alloc_owner_begin(GM_OWNER_SCRATCH); /* the library's own, in a trace */
        st = gm_alloc_device_spare(k->ctx, size, NULL, what, &s->blk); /* the copy has a slower way */
        gm_alloc_owner_end(was);
        if (st != GPUMEM_OK) {
            free(s);
            return st;
        }
        s->addr = s->blk.addr;
        s->bytes = size;
        for (int i = 0; i < GM_SCRATCH_NEVENTS && st == GPUMEM_OK; i++)
            st = gm_drv_check(GM_DRV(event_create, dctx, &s->ev[i], GM_CU_EVENT_DISABLE_TIMING), GM_OP_event_create,
                              what);
    }
    if (st == GPUMEM_OK && side && s->side == NULL)
        st = gm_drv_check(GM_DRV(stream_create, dctx, &s->side, GM_CU_STREAM_NON_BLOCKING), GM_OP_stream_create,
                          what);
    if (st != GPUMEM_OK) {
        gm_error_quietly(scratch_free(k, s));
        return st;
    }
    *out = s;
    return GPUMEM_OK;
}

/* Whether s's last use has ended (without waiting). */
static bool scratch_idle(gm_pack_kernels *k, gm_scratch *s)
{
    return !s->used || GM_DRV(event_query, k->ctx->dctx, s->ev[GM_SCRATCH_DONE]) == GM_CUDA_SUCCESS;
}

static void scratch_put(gm_pack_kernels *k, gm_scratch *s)
{
    gm_scratch *drop = NULL;
    pthread_mutex_lock(&k->mu);
    if (!gm_alloc_keepable(&s->blk)) {
        /* its pool was destroyed while the copy used it (checked under mu:
         * gm_pack_scratch_drop_unkept sees it idle, or it is not kept) */
        drop = s;
    } else {
        s->next = k->idle;
        k->idle = s;
        k->nidle++;
    }
    if (k->nidle > SCRATCH_KEEP) {
        /* the smallest buffer whose last use has ended goes */
        gm_scratch **small = NULL;
        for (gm_scratch **p = &k->idle; *p != NULL; p = &(*p)->next)
            if ((small == NULL || (*p)->bytes < (*small)->bytes) && scratch_idle(k, *p))
                small = p;
        if (small != NULL) {
            drop = *small;
            *small = drop->next;
            k->nidle--;
        }
    }
    pthread_mutex_unlock(&k->mu);
    if (drop != NULL)
        scratch_free(k, drop);
}

void gm_pack_scratch_drop_unkept(void)
{
    /* all_mu is held throughout: a context whose kernels are listed cannot
     * end meanwhile (its final release waits in kernels_unref to unlist
     * them), so k->ctx stays valid while its buffers are freed */
    pthread_mutex_lock(&all_mu);
    for (gm_pack_kernels *k = all_kernels; k != NULL; k = k->next) {
        gm_scratch *drop = NULL;
        pthread_mutex_lock(&k->mu);
        for (gm_scratch **p = &k->idle; *p != NULL;) {
            gm_scratch *s = *p;
            if (gm_alloc_keepable(&s->blk)) {
                p = &s->next;
                continue;
            }
            *p = s->next;
            k->nidle--;
            s->next = drop;
            drop = s;
        }
        pthread_mutex_unlock(&k->mu);
        while (drop != NULL) {
            gm_scratch *s = drop;
            drop = s->next;
            scratch_free(k, s);
        }
    }
    pthread_mutex_unlock(&all_mu);
}

static const gm_pack_provider provider = {kernels_get, kernels_put, kernels_launch, scratch_get, scratch_put,
                                          kernels_launch_ds, kernels_launch_batch};

const gm_pack_provider *gm_pack_kernels_provider(void)
{
    return &provider;
}
