/*
 * sim_module.c - the simulator's modules: loading a parsed image
 * (sim_image.c) with its globals in device memory, kernels and their
 * attributes, occupancy and launches (sim.h says what is simulated).
 */
#include "config.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cuda_abi.h"
#include "driver.h"
#include "env.h"
#include "error.h"
#include "sim.h"
#include "sim_impl.h"
#include "kernels/pack.h"

/* ------------------------------------------------------------- modules -- */

void gm_sim_module_free(gm_dmodule *m)
{
    if (m->prev != NULL)
        m->prev->next = m->next;
    else if (S.modules == m)
        S.modules = m->next;
    if (m->next != NULL)
        m->next->prev = m->prev;
    for (size_t i = 0; i < m->nglobals; i++) {
        sim_alloc *r = m->globals[i].addr != 0 ? gm_sim_reg_find(m->globals[i].addr) : NULL;
        if (r != NULL && r->module)
            gm_sim_alloc_drop(r);
        free(m->globals[i].name);
    }
    for (size_t i = 0; i < m->nfuncs; i++)
        free(m->funcs[i].name);
    free(m->globals);
    free(m->funcs);
    free(m);
}

/* The module handle h names in ctx. */
static int module_get(const gm_dctx *ctx, const gm_dmodule *h, gm_dmodule **out)
{
    for (gm_dmodule *m = S.modules; m != NULL && h != NULL; m = m->next) {
        if (m == h) {
            if (m->dev != ctx)
                return GM_CUDA_ERROR_INVALID_CONTEXT;
            *out = m;
            return CU_OK;
        }
    }
    return GM_CUDA_ERROR_INVALID_HANDLE;
}

/* The kernel handle h names in ctx. */
static int func_get(const gm_dctx *ctx, const gm_dfunc *h, gm_dfunc **out)
{
    for (gm_dmodule *m = S.modules; m != NULL && h != NULL; m = m->next) {
        for (size_t i = 0; i < m->nfuncs; i++) {
            if (&m->funcs[i] == h) {
                if (m->dev != ctx)
                    return GM_CUDA_ERROR_INVALID_CONTEXT;
                *out = &m->funcs[i];
                return CU_OK;
            }
        }
    }
    return GM_CUDA_ERROR_INVALID_HANDLE;
}

/* Builds the module of a parsed image in ctx, with its globals' memory;
 * takes the image's names over. */
static int module_build_locked(gm_dctx *ctx, gm_sim_image *img, bool native_pack, gm_dmodule **out)
{
    gm_dmodule *m = calloc(1, sizeof *m);
    if (m == NULL)
        return GM_CUDA_ERROR_OUT_OF_MEMORY;
    m->dev = ctx;
    m->native_pack = native_pack;
    m->ptx_target = img->ptx_target;
    m->const_bytes = img->const_bytes;
    m->funcs = img->nfuncs ? calloc(img->nfuncs, sizeof *m->funcs) : NULL;
    m->globals = img->nvars ? calloc(img->nvars, sizeof *m->globals) : NULL;
    if ((img->nfuncs && m->funcs == NULL) || (img->nvars && m->globals == NULL)) {
        free(m->funcs);
        free(m->globals);
        free(m);
        return GM_CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (size_t i = 0; i < img->nfuncs; i++) {
        m->funcs[i] = (gm_dfunc){.mod = m, .name = img->funcs[i].name,
                                 .shared_bytes = img->funcs[i].shared_bytes,
                                 .local_bytes = img->funcs[i].local_bytes,
                                 .num_regs = img->funcs[i].num_regs, .max_dynamic_shared = -1,
                                 .carveout = -1};
        img->funcs[i].name = NULL;
    }
    m->nfuncs = img->nfuncs;
    for (size_t i = 0; i < m->nfuncs; i++) {
        m->funcs[i].native = -1;
        for (int k = 0; m->native_pack && k < GM_PACK_ALL_KERNELS; k++)
            if (strcmp(m->funcs[i].name, gm_pack_kernel_name(k)) == 0)
                m->funcs[i].native = k;
    }
    int rc = CU_OK;
    for (size_t i = 0; i < img->nvars; i++) {
        gm_sim_image_var *v = &img->vars[i];
        sim_global *g = &m->globals[m->nglobals++];
        g->name = v->name;
        g->size = v->size;
        v->name = NULL;
        if (v->size == 0)
            continue;
        rc = gm_sim_mem_alloc_locked(ctx, &g->addr, v->size);
        if (rc != CU_OK)
            break;
        sim_alloc *r = gm_sim_reg_find(g->addr);
        r->module = true;
        if (v->init != NULL)
            memcpy(r->mem, v->init, v->size);
        else
            memset(r->mem, 0, v->size); /* static storage starts zeroed */
    }
    /* linked before a failure's cleanup, which unlinks it */
    m->next = S.modules;
    if (S.modules != NULL)
        S.modules->prev = m;
    S.modules = m;
    if (rc != CU_OK) {
        gm_sim_module_free(m);
        return rc;
    }
    *out = m;
    return CU_OK;
}

int gm_sim_module_load_data(gm_dctx *ctx, gm_dmodule **module, const void *image, size_t size,
                                char *error_log, size_t log_size)
{
    if (module == NULL || image == NULL)
        return GM_CUDA_ERROR_INVALID_VALUE;
    gm_sim_image img;
    int rc = gm_sim_image_parse(image, size, S.arch, &img, error_log, log_size);
    if (rc != CU_OK)
        return rc;
    lock();
    /* the library's own pack kernels, recognised by their exact bytes */
    bool native = size == gm_pack_ptx_size && memcmp(image, gm_pack_ptx, size) == 0;
    rc = gm_sim_ctx_ok(ctx) ? module_build_locked(ctx, &img, native, module) : GM_CUDA_ERROR_INVALID_CONTEXT;
    unlock();
    gm_sim_image_free(&img);
    return rc;
}

int gm_sim_module_unload(gm_dctx *ctx, gm_dmodule *module)
{
    gm_dmodule *m;
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? module_get(ctx, module, &m) : GM_CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CU_OK)
        gm_sim_module_free(m);
    unlock();
    return rc;
}

int gm_sim_module_get_function(gm_dctx *ctx, gm_dfunc **func, gm_dmodule *module, const char *name)
{
    if (func == NULL || name == NULL)
        return GM_CUDA_ERROR_INVALID_VALUE;
    gm_dmodule *m;
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? module_get(ctx, module, &m) : GM_CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CU_OK) {
        rc = GM_CUDA_ERROR_NOT_FOUND;
        for (size_t i = 0; i < m->nfuncs && rc != CU_OK; i++) {
            if (strcmp(m->funcs[i].name, name) == 0) {
                *func = &m->funcs[i];
                rc = CU_OK;
            }
        }
    }
    unlock();
    return rc;
}

int gm_sim_module_get_global(gm_dctx *ctx, gm_cu_deviceptr *dptr, size_t *bytes, gm_dmodule *module,
                                 const char *name)
{
    if (name == NULL)
        return GM_CUDA_ERROR_INVALID_VALUE;
    gm_dmodule *m;
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? module_get(ctx, module, &m) : GM_CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CU_OK) {
        rc = GM_CUDA_ERROR_NOT_FOUND;
        for (size_t i = 0; i < m->nglobals && rc != CU_OK; i++) {
            if (m->globals[i].size > 0 && strcmp(m->globals[i].name, name) == 0) {
                if (dptr != NULL)
                    *dptr = m->globals[i].addr;
                if (bytes != NULL)
                    *bytes = m->globals[i].size;
                rc = CU_OK;
            }
        }
    }
    unlock();
    return rc;
}

static int clamp_int(size_t v)
{
    return v > INT32_MAX ? INT32_MAX : (int)v;
}

/* The default dynamic shared memory limit: 48 KiB without an opt-in. */
#define SIM_SMEM_DEFAULT 49152

int gm_sim_func_get_attribute(gm_dctx *ctx, int *value, int attr, gm_dfunc *func)
{
    if (value == NULL)
        return GM_CUDA_ERROR_INVALID_VALUE;
    gm_dfunc *f;
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? func_get(ctx, func, &f) : GM_CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CU_OK) {
        int cc = S.arch->major * 10 + S.arch->minor;
        switch (attr) {
        case GM_CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = 1024; break;
        case GM_CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *value = clamp_int(f->shared_bytes); break;
        case GM_CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: *value = clamp_int(f->mod->const_bytes); break;
        case GM_CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *value = clamp_int(f->local_bytes); break;
        case GM_CU_FUNC_ATTRIBUTE_NUM_REGS: *value = f->num_regs > 0 ? f->num_regs : 32; break; /* simulated */
        case GM_CU_FUNC_ATTRIBUTE_PTX_VERSION: *value = f->mod->ptx_target ? f->mod->ptx_target : cc; break;
        case GM_CU_FUNC_ATTRIBUTE_BINARY_VERSION: *value = cc; break;
        case GM_CU_FUNC_ATTRIBUTE_CACHE_MODE_CA: *value = 0; break;
        case GM_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
            *value = f->max_dynamic_shared >= 0 ? f->max_dynamic_shared
                     : f->shared_bytes >= SIM_SMEM_DEFAULT ? 0
                                                           : SIM_SMEM_DEFAULT - (int)f->shared_bytes;
            break;
        case GM_CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: *value = f->carveout; break;
        default: rc = GM_CUDA_ERROR_INVALID_VALUE; break;
        }
    }
    unlock();
    return rc;
}

int gm_sim_func_set_attribute(gm_dctx *ctx, gm_dfunc *func, int attr, int value)
{
    gm_dfunc *f;
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? func_get(ctx, func, &f) : GM_CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CU_OK) {
        if (attr == GM_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES && value >= 0 &&
            (size_t)value + f->shared_bytes <= (size_t)S.arch->smem_optin)
            f->max_dynamic_shared = value;
        else if (attr == GM_CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT && value >= -1 && value <= 100)
            f->carveout = value;
        else
            rc = GM_CUDA_ERROR_INVALID_VALUE;
    }
    unlock();
    return rc;
}

int gm_sim_occupancy_max_active_blocks(gm_dctx *ctx, int *blocks, gm_dfunc *func, int block_size,
                                           size_t dynamic_smem)
{
    (void)block_size, (void)dynamic_smem;
    if (blocks == NULL)
        return GM_CUDA_ERROR_INVALID_VALUE;
    gm_dfunc *f;
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? func_get(ctx, func, &f) : GM_CUDA_ERROR_INVALID_CONTEXT;
    unlock();
    return rc == CU_OK ? GM_SIM_ERROR_NOT_SIMULATED : rc;
}

/* A pack kernel's run on a worker: the parameter block with host addresses. */
typedef struct native_pack {
    gm_pack_params p;
    bool unpack;
    int kernel;
} native_pack;

static void native_pack_run(void *arg)
{
    native_pack *n = arg;
    gm_pack_run_kernel_host(n->kernel, &n->p);
}

/* The host bytes behind the device bytes [addr + lo, addr + hi) that a
 * kernel of ctx touches: one live allocation must hold them all (device,
 * managed or page-locked memory, which unified addressing maps); another
 * device's memory only once ctx has peer access to it. */
static int kernel_span(const gm_dctx *ctx, uint64_t addr, int64_t lo, int64_t hi, uint64_t *host, sim_alloc **rec)
{
    uint64_t first = addr + (uint64_t)lo;
    sim_alloc *r = hi > lo ? gm_sim_reg_find_range(first, (size_t)(hi - lo)) : NULL;
    if (r == NULL || (r->kind == GM_SIM_MEM_DEVICE && r->dev != ctx->ordinal && !(ctx->peers >> r->dev & 1)))
        return GM_CUDA_ERROR_ILLEGAL_ADDRESS;
    *host = (uint64_t)(uintptr_t)(r->mem + (addr - r->base));
    *rec = r;
    return CU_OK;
}

/* Checks a pack kernel's parameter block p for kernel index `kernel` (what
 * pack_params.h says the kernel assumes) and finds the host bytes of both
 * sides: *n is the C twin's argument, *a and *b the allocations; n->p.rows
 * 0 when there is nothing to touch. */
static int native_check_locked(const gm_dctx *ctx, int kernel, const gm_pack_params *p, native_pack *n, sim_alloc **a,
                               sim_alloc **b)
{
    int unit;
    bool wide, unpack;
    gm_pack_kernel_info(kernel, &unit, &wide, &unpack);
    n->p = *p;
    n->unpack = unpack;
    n->kernel = kernel;
    /* what the kernel assumes of its block (pack_params.h) */
    if (p->unit != unit || p->nouter < 0 || p->nouter > GM_PACK_MAX_OUTER || p->col_stride % unit != 0 ||
        p->strided % (unsigned)unit != 0 || p->packed % (unsigned)unit != 0)
        return GM_CUDA_ERROR_INVALID_VALUE;
    uint64_t rows = 1;
    for (int i = 0; i < p->nouter; i++) {
        if (p->outer_shape[i] <= 0 || p->outer_stride[i] % unit != 0 ||
            __builtin_mul_overflow(rows, (uint64_t)p->outer_shape[i], &rows))
            return GM_CUDA_ERROR_INVALID_VALUE;
    }
    if (rows != p->rows)
        return GM_CUDA_ERROR_INVALID_VALUE;
    if (p->rows == 0 || p->cols == 0) {
        n->p.rows = 0; /* nothing to touch */
        return CU_OK;
    }
    int64_t lo, hi;
    uint64_t packed_bytes;
    if (__builtin_mul_overflow(p->rows, p->cols, &packed_bytes) ||
        __builtin_mul_overflow(packed_bytes, (uint64_t)unit, &packed_bytes) || packed_bytes > INT64_MAX)
        return GM_CUDA_ERROR_INVALID_VALUE;
    gm_pack_strided_span(p, &lo, &hi);
    /* a 32-bit kernel computes in 32 bits: what does not fit would go astray */
    if (!wide && (p->rows > INT32_MAX || p->cols > INT32_MAX || lo < INT32_MIN || hi > INT32_MAX))
        return GM_CUDA_ERROR_ILLEGAL_ADDRESS;
    uint64_t hs, hp;
    int rc = kernel_span(ctx, p->strided, lo, hi, &hs, a);
    if (rc == CU_OK)
        rc = kernel_span(ctx, p->packed, 0, (int64_t)packed_bytes, &hp, b);
    if (rc != CU_OK)
        return rc;
    n->p.strided = hs;
    n->p.packed = hp;
    return CU_OK;
}

/* Queues the C twin of a checked pack (native_check_locked). */
static int native_submit_locked(gm_dctx *ctx, gm_dstream *stream, const native_pack *n, sim_alloc *a, sim_alloc *b)
{
    native_pack *arg = malloc(sizeof *arg);
    if (arg == NULL)
        return GM_CUDA_ERROR_OUT_OF_MEMORY;
    *arg = *n;
    return gm_sim_submit_kernel_locked(ctx, stream, native_pack_run, arg, a, b);
}

/* Checks a launch of a batched kernel (pack_params.h): the grid its pieces
 * cover, each piece as a launch of its own, then queues the pieces' C twins
 * one after the other (on one stream: nothing runs between them). */
static int launch_batch_locked(gm_dctx *ctx, const gm_dfunc *f, const unsigned grid[3], const unsigned block[3],
                               gm_dstream *stream, const gm_pack_batch_params *p)
{
    bool wide = f->native == GM_PACK_BATCH_64;
    if (block[0] != GM_PACK_THREADS || block[1] != 1 || block[2] != 1 || grid[1] != 1 || grid[2] != 1)
        return GM_CUDA_ERROR_INVALID_VALUE;
    if (p->count < 1 || p->count > GM_PACK_BATCH_MAX || grid[0] != p->nblocks)
        return GM_CUDA_ERROR_INVALID_VALUE;
    native_pack n[GM_PACK_BATCH_MAX];
    sim_alloc *a[GM_PACK_BATCH_MAX] = {NULL}, *b[GM_PACK_BATCH_MAX] = {NULL};
    uint64_t next = 0;
    for (int k = 0; k < p->count; k++) {
        const gm_pack_batch_piece *q = &p->piece[k];
        if (q->block_begin != next || q->blocks == 0 || q->gx == 0 || q->blocks % q->gx != 0 || q->bx == 0 ||
            q->bx > GM_PACK_THREADS || (q->bx & (q->bx - 1)) != 0 || q->nouter < 0 ||
            q->nouter > GM_PACK_BATCH_OUTER || (q->unpack != 0 && q->unpack != 1))
            return GM_CUDA_ERROR_INVALID_VALUE;
        next += q->blocks;
        int kernel = gm_pack_kernel_index(q->unit, wide, q->unpack != 0);
        if (kernel < 0)
            return GM_CUDA_ERROR_INVALID_VALUE;
        gm_pack_params single;
        gm_pack_batch_piece_params(q, &single);
        int rc = native_check_locked(ctx, kernel, &single, &n[k], &a[k], &b[k]);
        if (rc != CU_OK)
            return rc;
    }
    if (next != p->nblocks)
        return GM_CUDA_ERROR_INVALID_VALUE;
    for (int k = 0; k < p->count; k++) {
        if (n[k].p.rows == 0)
            continue;
        int rc = native_submit_locked(ctx, stream, &n[k], a[k], b[k]);
        if (rc != CU_OK)
            return rc;
    }
    return CU_OK;
}

/* Checks a launch of pack kernel k and queues its C twin. */
static int launch_native_locked(gm_dctx *ctx, const gm_dfunc *f, const unsigned grid[3], const unsigned block[3],
                                gm_dstream *stream, void **params)
{
    if (params == NULL || params[0] == NULL)
        return GM_CUDA_ERROR_INVALID_VALUE;
    for (int i = 0; i < 3; i++)
        if (grid[i] == 0 || block[i] == 0)
            return GM_CUDA_ERROR_INVALID_VALUE;
    if ((uint64_t)block[0] * block[1] * block[2] > GM_PACK_THREADS)
        return GM_CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES; /* __launch_bounds__ */
    if (f->native >= GM_PACK_NKERNELS) {
        gm_pack_batch_params bp;
        memcpy(&bp, params[0], sizeof bp);
        return launch_batch_locked(ctx, f, grid, block, stream, &bp);
    }
    gm_pack_params p;
    memcpy(&p, params[0], sizeof p);
    native_pack n;
    sim_alloc *a = NULL, *b = NULL;
    int rc = native_check_locked(ctx, f->native, &p, &n, &a, &b);
    if (rc != CU_OK || n.p.rows == 0)
        return rc;
    return native_submit_locked(ctx, stream, &n, a, b);
}

int gm_sim_launch_kernel(gm_dctx *ctx, gm_dfunc *func, const unsigned grid[3],
                         const unsigned block[3], unsigned shared_bytes, gm_dstream *stream,
                         void **params)
{
    (void)shared_bytes;
    gm_dfunc *f;
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? func_get(ctx, func, &f) : GM_CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CU_OK)
        rc = f->native >= 0 ? launch_native_locked(ctx, f, grid, block, stream, params) : GM_SIM_ERROR_NOT_SIMULATED;
    unlock();
    return rc;
}
