/*
 * pack_kernels.c - the pack kernels of a context: loaded once through the
 * kernel cache (module.c) and memoized per context (memo.c) with their
 * function handles, and launched for the copy engine.  The kernel cache is
 * a layer above the copy engine, so this file only provides its functions
 * (copy_pack.h's gm_pack_provider); lib/wiring.c hands them to the engine.
 */
#include "config.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "copy_pack.h"
#include "error.h"
#include "gpumem/module.h"
#include "kernels/pack.h"
#include "memo.h"
#include "module.h"
#include "pack_kernels.h"

struct gm_pack_kernels {
    atomic_int refs;        /* the memo entry's + users' */
    gpumem_module *module;  /* a reference without a context reference; NULL: unavailable */
    gpumem_function *fn[GM_PACK_NKERNELS];
};

static void kernels_unref(gm_pack_kernels *k)
{
    if (atomic_fetch_sub_explicit(&k->refs, 1, memory_order_acq_rel) == 1) {
        (void)gm_module_drop(k->module);
        free(k);
    }
}

/* Whether a module load's error says that this driver cannot use the PTX
 * at all (the message names the driver's error: driver.c). */
static bool cannot_load(const char *message)
{
    static const char *const codes[] = {"CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "CUDA_ERROR_INVALID_PTX",
                                        "CUDA_ERROR_NO_BINARY_FOR_GPU", "CUDA_ERROR_INVALID_IMAGE"};
    for (size_t i = 0; i < sizeof codes / sizeof *codes; i++)
        if (strstr(message, codes[i]) != NULL)
            return true;
    return false;
}

static gpumem_status kernels_create(gpumem_context *ctx, const void *key, size_t key_size, void *user,
                                    void **value)
{
    (void)key, (void)key_size, (void)user;
    gm_pack_kernels *k = calloc(1, sizeof *k);
    if (k == NULL)
        return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "the pack kernels: out of host memory");
    atomic_init(&k->refs, 1);
    gpumem_module *m = NULL;
    gpumem_status st = gpumem_module_load(ctx, gm_pack_ptx, gm_pack_ptx_size, &m);
    if (st == GPUMEM_ERROR_DRIVER && cannot_load(gpumem_last_error())) {
        /* the driver cannot load them (say, PTX newer than it): remembered
         * as unavailable, so no copy tries again; other failures (out of
         * memory, a lost device) fail the copy and are not remembered */
        *value = k;
        return GPUMEM_OK;
    }
    if (st != GPUMEM_OK) {
        free(k);
        return st;
    }
    for (int i = 0; i < GM_PACK_NKERNELS && st == GPUMEM_OK; i++)
        st = gpumem_module_get_function(m, gm_pack_kernel_name(i), &k->fn[i]);
    if (st == GPUMEM_OK)
        gm_module_hold(m); /* ours, holding no context */
    gpumem_module_release(m);
    if (st != GPUMEM_OK) {
        free(k);
        return st;
    }
    k->module = m;
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

static gpumem_status kernels_get(gpumem_context *ctx, gm_pack_kernels **out)
{
    void *v = NULL;
    gpumem_status st = gm_memo_get("the copy engine's pack kernels", ctx, NULL, 0, kernels_create,
                                   kernels_destroy, NULL, kernels_acquire, &v);
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

static gpumem_status kernels_launch(gm_pack_kernels *k, const gm_pack_plan *plan, uint64_t strided,
                                     uint64_t packed, gpumem_stream *stream, const char *what)
{
    gm_pack_params p = plan->params;
    p.strided += strided; /* the plan holds the offsets */
    p.packed += packed;
    unsigned grid[3], block[3];
    gm_pack_launch_dims(&p, grid, block);
    void *params[1] = {&p};
    gpumem_status st = gpumem_launch(k->fn[plan->kernel], grid, block, 0, stream, params);
    return st == GPUMEM_OK ? st : gm_error_prefix(st, what);
}

static const gm_pack_provider provider = {kernels_get, kernels_put, kernels_launch};

const gm_pack_provider *gm_pack_kernels_provider(void)
{
    return &provider;
}
