/*
 * sim.c - the simulator backend: a GPU on host memory (sim.h says what it
 * simulates and why).  This file: devices, contexts and memory (the
 * allocation registry, device, managed, page-locked and registered memory,
 * pointer attributes and peers), the driver table and the settings.
 * sim_impl.h describes the shared state and the other files.
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

struct gm_sim_state gm_sim_S = {.mu = PTHREAD_MUTEX_INITIALIZER, .done = PTHREAD_COND_INITIALIZER};

/* ------------------------------------------------------------- helpers -- */

static bool round_up(size_t n, size_t unit, size_t *out)
{
    if (n > SIZE_MAX - (unit - 1))
        return false;
    *out = (n + unit - 1) / unit * unit;
    return true;
}

bool gm_sim_in_device_window(uint64_t addr)
{
    return addr >= GM_SIM_DEVICE_BASE &&
           addr - GM_SIM_DEVICE_BASE < ((uint64_t)GM_SIM_MAX_DEVICES << GM_SIM_DEVICE_SHIFT);
}

bool gm_sim_ctx_ok(const gm_dctx *ctx)
{
    for (int i = 0; i < S.ndev; i++)
        if (ctx == &S.dev[i])
            return S.dev[i].refs > 0;
    return false;
}

/* ------------------------------------------------------------ registry -- */

/* Index of the first record whose base is above addr. */
static size_t reg_upper(uint64_t addr)
{
    size_t lo = 0, hi = S.nreg;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (S.reg[mid]->base <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

sim_alloc *gm_sim_reg_find(uint64_t addr)
{
    size_t i = reg_upper(addr);
    if (i == 0)
        return NULL;
    sim_alloc *r = S.reg[i - 1];
    return addr - r->base < r->size ? r : NULL;
}

/* The record holding all of [addr, addr + len), len > 0. */
sim_alloc *gm_sim_reg_find_range(uint64_t addr, size_t len)
{
    sim_alloc *r = gm_sim_reg_find(addr);
    return r != NULL && len <= r->size - (addr - r->base) ? r : NULL;
}

/* A record overlapping [addr, addr + len), len > 0: since records are
 * disjoint and sorted, only the last one starting before the end can. */
static sim_alloc *reg_overlap(uint64_t addr, size_t len)
{
    size_t i = reg_upper(addr + len - 1);
    if (i == 0)
        return NULL;
    sim_alloc *r = S.reg[i - 1];
    return r->base + r->size > addr ? r : NULL;
}

static bool reg_insert(sim_alloc *r)
{
    if (S.nreg == S.capreg) {
        size_t cap = S.capreg ? 2 * S.capreg : 64;
        sim_alloc **v = realloc(S.reg, cap * sizeof *v);
        if (v == NULL)
            return false;
        S.reg = v;
        S.capreg = cap;
    }
    size_t i = reg_upper(r->base);
    memmove(&S.reg[i + 1], &S.reg[i], (S.nreg - i) * sizeof *S.reg);
    S.reg[i] = r;
    S.nreg++;
    return true;
}

void gm_sim_alloc_unref(sim_alloc *r)
{
    if (--r->refs == 0) {
        if (r->shared || r->ipc_mapped)
            gm_sim_ipc_free(r);
        else if (r->owned)
            free(r->mem);
        free(r);
    }
}

/* Takes r out of the registry and gives its bytes back to its limit at
 * once; its memory goes when the last queued op using it completes. */
void gm_sim_alloc_drop(sim_alloc *r)
{
    size_t i = reg_upper(r->base) - 1;
    memmove(&S.reg[i], &S.reg[i + 1], (S.nreg - i - 1) * sizeof *S.reg);
    S.nreg--;
    if (r->kind == GM_SIM_MEM_DEVICE || r->kind == GM_SIM_MEM_MANAGED)
        S.dev[r->dev].used -= r->charged;
    else
        S.host_used -= r->charged;
    gm_sim_alloc_unref(r);
}

/* Registers host memory we just allocated.  A registration it overlaps can
 * only be stale (the user freed registered memory without unregistering it
 * and the allocator reused the pages): drop it to keep records disjoint. */
static int alloc_add_host(gm_sim_mem_kind kind, int dev, void *mem, size_t size, size_t charged,
                          unsigned flags)
{
    sim_alloc *r = calloc(1, sizeof *r);
    if (r == NULL)
        return GM_CUDA_ERROR_OUT_OF_MEMORY;
    *r = (sim_alloc){.base = (uintptr_t)mem, .size = size, .charged = charged, .mem = mem,
                     .owned = true, .kind = kind, .dev = dev, .flags = flags, .refs = 1};
    sim_alloc *old;
    while ((old = reg_overlap(r->base, size)) != NULL && old->kind == GM_SIM_MEM_HOST_REGISTERED)
        gm_sim_alloc_drop(old);
    if (old != NULL || !reg_insert(r)) {
        free(r);
        return GM_CUDA_ERROR_OUT_OF_MEMORY;
    }
    return CU_OK;
}
/* ------------------------------------------------------ device queries -- */

static int sim_driver_get_version(int *version)
{
    if (version == NULL)
        return GM_CUDA_ERROR_INVALID_VALUE;
    *version = 13000;
    return CU_OK;
}

static int sim_device_get_count(int *count)
{
    if (count == NULL)
        return GM_CUDA_ERROR_INVALID_VALUE;
    *count = S.ndev;
    return CU_OK;
}

static int sim_device_get_name(int dev, char *name, int len)
{
    if (name == NULL || len <= 0)
        return GM_CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= S.ndev)
        return GM_CUDA_ERROR_INVALID_DEVICE;
    snprintf(name, (size_t)len, "gpumem sim %s (%s)", S.arch->name, S.arch->model);
    return CU_OK;
}

static int sim_device_get_attribute(int dev, int attr, int *value)
{
    if (value == NULL)
        return GM_CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= S.ndev)
        return GM_CUDA_ERROR_INVALID_DEVICE;
    return gm_sim_arch_attribute(S.arch, dev, (int)(S.busy >> dev & 1), attr, value);
}

static int sim_device_total_mem(int dev, size_t *bytes)
{
    if (bytes == NULL)
        return GM_CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= S.ndev)
        return GM_CUDA_ERROR_INVALID_DEVICE;
    *bytes = (size_t)S.capacity;
    return CU_OK;
}
/* ------------------------------------------------------------ contexts -- */

static int sim_primary_ctx_retain(int dev, gm_dctx **ctx)
{
    if (ctx == NULL)
        return GM_CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= S.ndev)
        return GM_CUDA_ERROR_INVALID_DEVICE;
    if (S.busy >> dev & 1)
        return GM_CUDA_ERROR_DEVICE_UNAVAILABLE;
    lock();
    gm_dctx *d = &S.dev[dev];
    while (d->closing)
        pthread_cond_wait(&S.done, &S.mu);
    int rc = d->refs == 0 ? gm_sim_stream_new(d, 0, true, &d->dflt) : CU_OK;
    if (rc == CU_OK) {
        d->refs++;
        *ctx = d;
    }
    unlock();
    return rc;
}

/* The last release: what the driver does when it destroys a context. */
static void ctx_teardown(gm_dctx *d)
{
    d->closing = true;
    for (;;) {
        gm_dstream *s = S.streams;
        while (s != NULL && (s->dev != d || s->is_default))
            s = s->next;
        if (s == NULL)
            break;
        gm_sim_stream_retire(s);
    }
    gm_sim_stream_retire(d->dflt);
    d->dflt = NULL;
    for (gm_devent *ev = S.events, *next; ev != NULL; ev = next) {
        next = ev->next;
        if (ev->dev == d)
            gm_sim_event_unlink(ev);
    }
    for (gm_dmodule *m = S.modules, *next; m != NULL; m = next) {
        next = m->next;
        if (m->dev == d)
            gm_sim_module_free(m);
    }
    for (size_t i = S.nreg; i-- > 0;) {
        sim_alloc *r = S.reg[i];
        if (r->dev == d->ordinal && (r->kind == GM_SIM_MEM_DEVICE || r->kind == GM_SIM_MEM_MANAGED))
            gm_sim_alloc_drop(r);
    }
    d->peers = 0;
    d->closing = false;
    pthread_cond_broadcast(&S.done);
}

static int sim_primary_ctx_release(int dev)
{
    if (dev < 0 || dev >= S.ndev)
        return GM_CUDA_ERROR_INVALID_DEVICE;
    lock();
    gm_dctx *d = &S.dev[dev];
    int rc = CU_OK;
    if (d->refs == 0)
        rc = GM_CUDA_ERROR_INVALID_CONTEXT;
    else if (--d->refs == 0)
        ctx_teardown(d);
    unlock();
    return rc;
}

/* -------------------------------------------------------------- memory -- */

static int sim_mem_get_info(gm_dctx *ctx, size_t *free_bytes, size_t *total_bytes)
{
    if (free_bytes == NULL || total_bytes == NULL)
        return GM_CUDA_ERROR_INVALID_VALUE;
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? CU_OK : GM_CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CU_OK) {
        *free_bytes = (size_t)(S.capacity - ctx->used);
        *total_bytes = (size_t)S.capacity;
    }
    unlock();
    return rc;
}

/* Reserves bytes at the end of ctx's address window: *base, and the
 * extent to add to next_off once the record is in. */
static bool window_reserve(gm_dctx *ctx, size_t bytes, uint64_t *base, size_t *extent)
{
    if (!round_up(bytes, DEVICE_ALIGN, extent) || *extent > WINDOW - DEVICE_GAP ||
        ctx->next_off > WINDOW - DEVICE_GAP - *extent)
        return false;
    *base = GM_SIM_DEVICE_BASE + ((uint64_t)ctx->ordinal << GM_SIM_DEVICE_SHIFT) + ctx->next_off;
    return true;
}

int gm_sim_mem_alloc_locked(gm_dctx *ctx, gm_cu_deviceptr *ptr, size_t bytes)
{
    size_t charged, extent;
    uint64_t base;
    if (!round_up(bytes, GRANULE, &charged) || charged > S.capacity - ctx->used ||
        !window_reserve(ctx, bytes, &base, &extent))
        return GM_CUDA_ERROR_OUT_OF_MEMORY;
    sim_alloc *r = calloc(1, sizeof *r);
    unsigned char *mem = malloc(bytes);
    if (r != NULL && mem != NULL)
        *r = (sim_alloc){.base = base, .size = bytes, .charged = charged, .mem = mem, .owned = true,
                         .kind = GM_SIM_MEM_DEVICE, .dev = ctx->ordinal, .refs = 1, .fd = -1};
    if (r == NULL || mem == NULL || !reg_insert(r)) {
        free(r);
        free(mem);
        return GM_CUDA_ERROR_OUT_OF_MEMORY;
    }
    memset(mem, GM_SIM_GARBAGE_BYTE, bytes); /* device memory starts uninitialized */
    ctx->next_off += extent + DEVICE_GAP;
    ctx->used += charged;
    *ptr = r->base;
    return CU_OK;
}

int gm_sim_ipc_map_locked(gm_dctx *ctx, unsigned char *mem, size_t bytes, gm_cu_deviceptr *ptr)
{
    size_t extent;
    uint64_t base;
    if (!window_reserve(ctx, bytes, &base, &extent))
        return GM_CUDA_ERROR_OUT_OF_MEMORY;
    sim_alloc *r = calloc(1, sizeof *r);
    if (r != NULL)
        *r = (sim_alloc){.base = base, .size = bytes, .mem = mem, .kind = GM_SIM_MEM_DEVICE,
                         .dev = ctx->ordinal, .refs = 1, .ipc_mapped = true, .fd = -1};
    if (r == NULL || !reg_insert(r)) {
        free(r);
        return GM_CUDA_ERROR_OUT_OF_MEMORY;
    }
    ctx->next_off += extent + DEVICE_GAP;
    *ptr = base;
    return CU_OK;
}

static int sim_mem_alloc(gm_dctx *ctx, gm_cu_deviceptr *ptr, size_t bytes)
{
    if (ptr == NULL || bytes == 0)
        return GM_CUDA_ERROR_INVALID_VALUE;
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? gm_sim_mem_alloc_locked(ctx, ptr, bytes) : GM_CUDA_ERROR_INVALID_CONTEXT;
    unlock();
    return rc;
}

static int sim_mem_free(gm_dctx *ctx, gm_cu_deviceptr ptr)
{
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? CU_OK : GM_CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CU_OK) {
        sim_alloc *r = gm_sim_reg_find(ptr);
        if (r != NULL && r->base == ptr && !r->module && !r->ipc_mapped &&
            (r->kind == GM_SIM_MEM_DEVICE || r->kind == GM_SIM_MEM_MANAGED))
            gm_sim_alloc_drop(r);
        else
            rc = GM_CUDA_ERROR_INVALID_VALUE;
    }
    unlock();
    return rc;
}

static int sim_mem_alloc_managed(gm_dctx *ctx, gm_cu_deviceptr *ptr, size_t bytes, unsigned flags)
{
    if (ptr == NULL || bytes == 0 ||
        (flags != GM_CU_MEM_ATTACH_GLOBAL && flags != GM_CU_MEM_ATTACH_HOST))
        return GM_CUDA_ERROR_INVALID_VALUE;
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? CU_OK : GM_CUDA_ERROR_INVALID_CONTEXT;
    size_t charged;
    void *mem = NULL;
    if (rc == CU_OK && (!round_up(bytes, GRANULE, &charged) || charged > S.capacity - ctx->used ||
                      posix_memalign(&mem, S.page, bytes) != 0))
        rc = GM_CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CU_OK) {
        memset(mem, GM_SIM_GARBAGE_BYTE, bytes);
        rc = alloc_add_host(GM_SIM_MEM_MANAGED, ctx->ordinal, mem, bytes, charged, flags);
    }
    if (rc == CU_OK) {
        ctx->used += charged;
        *ptr = (uintptr_t)mem;
    } else {
        free(mem);
    }
    unlock();
    return rc;
}

static int sim_mem_host_alloc(gm_dctx *ctx, void **ptr, size_t bytes, unsigned flags)
{
    const unsigned known = GM_CU_MEMHOSTALLOC_PORTABLE | GM_CU_MEMHOSTALLOC_DEVICEMAP |
                           GM_CU_MEMHOSTALLOC_WRITECOMBINED;
    if (ptr == NULL || bytes == 0 || (flags & ~known) != 0)
        return GM_CUDA_ERROR_INVALID_VALUE;
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? CU_OK : GM_CUDA_ERROR_INVALID_CONTEXT;
    size_t charged;
    void *mem = NULL;
    if (rc == CU_OK && (!round_up(bytes, S.page, &charged) || charged > S.host_limit - S.host_used ||
                      posix_memalign(&mem, S.page, charged) != 0))
        rc = GM_CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CU_OK) {
        memset(mem, GM_SIM_GARBAGE_BYTE, bytes);
        rc = alloc_add_host(GM_SIM_MEM_HOST_ALLOC, ctx->ordinal, mem, bytes, charged, flags);
    }
    if (rc == CU_OK) {
        S.host_used += charged;
        *ptr = mem;
    } else {
        free(mem);
    }
    unlock();
    return rc;
}

static int sim_mem_free_host(gm_dctx *ctx, void *ptr)
{
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? CU_OK : GM_CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CU_OK) {
        sim_alloc *r = gm_sim_reg_find((uintptr_t)ptr);
        if (ptr != NULL && r != NULL && r->base == (uintptr_t)ptr && r->kind == GM_SIM_MEM_HOST_ALLOC)
            gm_sim_alloc_drop(r);
        else
            rc = GM_CUDA_ERROR_INVALID_VALUE;
    }
    unlock();
    return rc;
}

static int host_register_locked(gm_dctx *ctx, void *ptr, size_t bytes, unsigned flags)
{
    uint64_t addr = (uintptr_t)ptr;
    const uint64_t window_end = GM_SIM_DEVICE_BASE + ((uint64_t)GM_SIM_MAX_DEVICES << GM_SIM_DEVICE_SHIFT);
    if (addr < window_end && addr + bytes > GM_SIM_DEVICE_BASE)
        return GM_CUDA_ERROR_INVALID_VALUE; /* device memory is not host memory */
    if (reg_overlap(addr, bytes) != NULL)
        return GM_CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    /* the driver pins whole pages */
    uint64_t first = addr / S.page * S.page;
    uint64_t end = (addr + bytes - 1) / S.page * S.page + S.page;
    if (end - first > S.host_limit - S.host_used)
        return GM_CUDA_ERROR_OUT_OF_MEMORY;
    sim_alloc *r = calloc(1, sizeof *r);
    if (r == NULL)
        return GM_CUDA_ERROR_OUT_OF_MEMORY;
    *r = (sim_alloc){.base = addr, .size = bytes, .charged = (size_t)(end - first), .mem = ptr,
                     .kind = GM_SIM_MEM_HOST_REGISTERED, .dev = ctx->ordinal, .flags = flags, .refs = 1};
    if (!reg_insert(r)) {
        free(r);
        return GM_CUDA_ERROR_OUT_OF_MEMORY;
    }
    S.host_used += r->charged;
    return CU_OK;
}

static int sim_mem_host_register(gm_dctx *ctx, void *ptr, size_t bytes, unsigned flags)
{
    const unsigned known = GM_CU_MEMHOSTREGISTER_PORTABLE | GM_CU_MEMHOSTREGISTER_DEVICEMAP |
                           GM_CU_MEMHOSTREGISTER_IOMEMORY | GM_CU_MEMHOSTREGISTER_READ_ONLY;
    /* the whole range, rounded out to pages, must fit the address space */
    if (ptr == NULL || bytes == 0 || (uintptr_t)ptr > UINT64_MAX - S.page ||
        bytes > UINT64_MAX - S.page - (uintptr_t)ptr || (flags & ~known) != 0)
        return GM_CUDA_ERROR_INVALID_VALUE;
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? host_register_locked(ctx, ptr, bytes, flags) : GM_CUDA_ERROR_INVALID_CONTEXT;
    unlock();
    return rc;
}

static int sim_mem_host_unregister(gm_dctx *ctx, void *ptr)
{
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? CU_OK : GM_CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CU_OK) {
        sim_alloc *r = gm_sim_reg_find((uintptr_t)ptr);
        if (ptr != NULL && r != NULL && r->base == (uintptr_t)ptr &&
            r->kind == GM_SIM_MEM_HOST_REGISTERED)
            gm_sim_alloc_drop(r);
        else
            rc = GM_CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    }
    unlock();
    return rc;
}

static int sim_mem_host_get_device_pointer(gm_dctx *ctx, gm_cu_deviceptr *dptr, void *ptr)
{
    if (dptr == NULL || ptr == NULL)
        return GM_CUDA_ERROR_INVALID_VALUE;
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? CU_OK : GM_CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CU_OK) {
        /* unified addressing maps all page-locked memory at its host address */
        sim_alloc *r = gm_sim_reg_find((uintptr_t)ptr);
        if (r != NULL && (r->kind == GM_SIM_MEM_HOST_ALLOC || r->kind == GM_SIM_MEM_HOST_REGISTERED))
            *dptr = (uintptr_t)ptr;
        else
            rc = GM_CUDA_ERROR_INVALID_VALUE;
    }
    unlock();
    return rc;
}

/* Stream-ordered allocation, simulated plainly: the memory is usable at
 * once, and a free waits for the stream's earlier work before it frees
 * (what the driver's ordering guarantees, done synchronously). */
static int sim_mem_alloc_async(gm_dctx *ctx, gm_cu_deviceptr *ptr, size_t bytes, gm_dstream *stream)
{
    int rc = gm_sim_stream_query(ctx, stream);
    if (rc != CU_OK && rc != GM_CUDA_ERROR_NOT_READY)
        return rc;
    return sim_mem_alloc(ctx, ptr, bytes);
}

static int sim_mem_free_async(gm_dctx *ctx, gm_cu_deviceptr ptr, gm_dstream *stream)
{
    int rc = gm_sim_stream_synchronize(ctx, stream);
    return rc != CU_OK ? rc : sim_mem_free(ctx, ptr);
}

/* ------------------------------------------------------------ pointers -- */

/* One attribute of a known record r (NULL: an address the driver does not
 * know, which gets the null values).  Booleans are one byte, as the driver
 * writes them. */
static int pointer_attribute(const sim_alloc *r, uint64_t ptr, int attr, void *data)
{
    bool host_side = r != NULL && r->kind != GM_SIM_MEM_DEVICE;
    switch (attr) {
    case GM_CU_POINTER_ATTRIBUTE_CONTEXT: {
        gm_dctx *c = r != NULL ? &S.dev[r->dev] : NULL;
        memcpy(data, &c, sizeof c);
        return CU_OK;
    }
    case GM_CU_POINTER_ATTRIBUTE_MEMORY_TYPE: {
        /* managed memory is device memory to the driver, with IS_MANAGED set */
        unsigned t = r == NULL ? 0
                     : r->kind == GM_SIM_MEM_DEVICE || r->kind == GM_SIM_MEM_MANAGED ? GM_CU_MEMORYTYPE_DEVICE
                                                                                    : GM_CU_MEMORYTYPE_HOST;
        memcpy(data, &t, sizeof t);
        return CU_OK;
    }
    case GM_CU_POINTER_ATTRIBUTE_DEVICE_POINTER: {
        gm_cu_deviceptr p = r != NULL ? ptr : 0; /* every known byte is mapped */
        memcpy(data, &p, sizeof p);
        return CU_OK;
    }
    case GM_CU_POINTER_ATTRIBUTE_HOST_POINTER: {
        void *p = host_side ? (void *)(uintptr_t)ptr : NULL;
        memcpy(data, &p, sizeof p);
        return CU_OK;
    }
    case GM_CU_POINTER_ATTRIBUTE_IS_MANAGED:
        *(bool *)data = r != NULL && r->kind == GM_SIM_MEM_MANAGED;
        return CU_OK;
    case GM_CU_POINTER_ATTRIBUTE_MAPPED:
        *(bool *)data = r != NULL;
        return CU_OK;
    case GM_CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
        *(bool *)data = r != NULL && r->kind == GM_SIM_MEM_DEVICE && !r->module && !r->ipc_mapped;
        return CU_OK;
    case GM_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: {
        int d = r != NULL ? r->dev : -2;
        memcpy(data, &d, sizeof d);
        return CU_OK;
    }
    case GM_CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: {
        gm_cu_deviceptr p = r != NULL ? r->base : 0;
        memcpy(data, &p, sizeof p);
        return CU_OK;
    }
    case GM_CU_POINTER_ATTRIBUTE_RANGE_SIZE: {
        size_t n = r != NULL ? r->size : 0;
        memcpy(data, &n, sizeof n);
        return CU_OK;
    }
    default:
        return GM_CUDA_ERROR_INVALID_VALUE;
    }
}

static int sim_pointer_get_attributes(unsigned count, const int *attrs, void **data, gm_cu_deviceptr ptr)
{
    if (count == 0 || attrs == NULL || data == NULL)
        return GM_CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < count; i++)
        if (data[i] == NULL)
            return GM_CUDA_ERROR_INVALID_VALUE;
    lock();
    const sim_alloc *r = gm_sim_reg_find(ptr);
    int rc = CU_OK;
    for (unsigned i = 0; i < count && rc == CU_OK; i++)
        rc = pointer_attribute(r, ptr, attrs[i], data[i]);
    unlock();
    return rc;
}

static int sim_mem_get_address_range(gm_dctx *ctx, gm_cu_deviceptr *base, size_t *size, gm_cu_deviceptr ptr)
{
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? CU_OK : GM_CUDA_ERROR_INVALID_CONTEXT;
    const sim_alloc *r = rc == CU_OK ? gm_sim_reg_find(ptr) : NULL;
    if (rc == CU_OK && (r == NULL || (r->kind != GM_SIM_MEM_DEVICE && r->kind != GM_SIM_MEM_MANAGED)))
        rc = GM_CUDA_ERROR_NOT_FOUND; /* what the driver answers for an address of no device allocation */
    if (rc == CU_OK && base != NULL)
        *base = r->base;
    if (rc == CU_OK && size != NULL)
        *size = r->size;
    unlock();
    return rc;
}

static int sim_device_can_access_peer(int dev, int peer, int *can)
{
    if (can == NULL)
        return GM_CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= S.ndev || peer < 0 || peer >= S.ndev)
        return GM_CUDA_ERROR_INVALID_DEVICE;
    *can = dev != peer && (S.can_peer[dev] >> peer & 1);
    return CU_OK;
}

static int sim_ctx_enable_peer_access(gm_dctx *ctx, gm_dctx *peer)
{
    lock();
    int rc = gm_sim_ctx_ok(ctx) && gm_sim_ctx_ok(peer) ? CU_OK : GM_CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CU_OK && ctx == peer)
        rc = GM_CUDA_ERROR_INVALID_DEVICE;
    else if (rc == CU_OK && !(S.can_peer[ctx->ordinal] >> peer->ordinal & 1))
        rc = GM_CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
    else if (rc == CU_OK && (ctx->peers >> peer->ordinal & 1))
        rc = GM_CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
    else if (rc == CU_OK)
        ctx->peers |= UINT64_C(1) << peer->ordinal;
    unlock();
    return rc;
}

static const gm_driver sim_driver = {
    .name = "sim",
    .driver_get_version = sim_driver_get_version,
    .device_get_count = sim_device_get_count,
    .device_get_name = sim_device_get_name,
    .device_get_attribute = sim_device_get_attribute,
    .device_total_mem = sim_device_total_mem,
    .primary_ctx_retain = sim_primary_ctx_retain,
    .primary_ctx_release = sim_primary_ctx_release,
    .ctx_synchronize = gm_sim_ctx_synchronize,
    .mem_get_info = sim_mem_get_info,
    .mem_alloc = sim_mem_alloc,
    .mem_free = sim_mem_free,
    .mem_alloc_async = sim_mem_alloc_async,
    .mem_free_async = sim_mem_free_async,
    .mem_alloc_managed = sim_mem_alloc_managed,
    .mem_host_alloc = sim_mem_host_alloc,
    .mem_free_host = sim_mem_free_host,
    .mem_host_register = sim_mem_host_register,
    .mem_host_unregister = sim_mem_host_unregister,
    .mem_host_get_device_pointer = sim_mem_host_get_device_pointer,
    .memcpy = gm_sim_memcpy,
    .memcpy_2d = gm_sim_memcpy_2d,
    .memcpy_3d = gm_sim_memcpy_3d,
    .memset = gm_sim_memset,
    .stream_create = gm_sim_stream_create,
    .stream_destroy = gm_sim_stream_destroy,
    .stream_synchronize = gm_sim_stream_synchronize,
    .stream_query = gm_sim_stream_query,
    .stream_wait_event = gm_sim_stream_wait_event,
    .launch_host_func = gm_sim_launch_host_func,
    .event_create = gm_sim_event_create,
    .event_destroy = gm_sim_event_destroy,
    .event_record = gm_sim_event_record,
    .event_query = gm_sim_event_query,
    .event_synchronize = gm_sim_event_synchronize,
    .event_elapsed_time = gm_sim_event_elapsed_time,
    .module_load_data = gm_sim_module_load_data,
    .module_unload = gm_sim_module_unload,
    .module_get_function = gm_sim_module_get_function,
    .module_get_global = gm_sim_module_get_global,
    .func_get_attribute = gm_sim_func_get_attribute,
    .func_set_attribute = gm_sim_func_set_attribute,
    .occupancy_max_active_blocks = gm_sim_occupancy_max_active_blocks,
    .launch_kernel = gm_sim_launch_kernel,
    .pointer_get_attributes = sim_pointer_get_attributes,
    .mem_get_address_range = sim_mem_get_address_range,
    .ipc_get_mem_handle = gm_sim_ipc_get_mem_handle,
    .ipc_open_mem_handle = gm_sim_ipc_open_mem_handle,
    .ipc_close_mem_handle = gm_sim_ipc_close_mem_handle,
    .device_can_access_peer = sim_device_can_access_peer,
    .ctx_enable_peer_access = sim_ctx_enable_peer_access,
    .memcpy_peer = gm_sim_memcpy_peer,
};

/* GPUMEM_SIM_BUSY: distinct ordinals below ndev, comma-separated. */
static gpumem_status parse_busy(long ndev, uint64_t *mask)
{
    static const char name[] = "GPUMEM_SIM_BUSY";
    const char *v = gm_env(name);
    *mask = 0;
    for (const char *p = v; p != NULL;) {
        const char *comma = strchr(p, ',');
        size_t n = comma != NULL ? (size_t)(comma - p) : strlen(p);
        char tok[24];
        long ord = -1;
        bool number = n < sizeof tok;
        if (number) {
            memcpy(tok, p, n);
            tok[n] = '\0';
            number = gm_parse_long(tok, &ord);
        }
        if (!number)
            return gm_error(GPUMEM_ERROR_INVALID_ENVIRONMENT,
                            "%s='%s': '%.*s' is not a device ordinal", name, v, (int)n, p);
        if (ord < 0 || ord >= ndev)
            return gm_error(GPUMEM_ERROR_INVALID_ENVIRONMENT,
                            "%s='%s': device %ld does not exist (GPUMEM_SIM_DEVICES=%ld)", name, v,
                            ord, ndev);
        if (*mask >> ord & 1)
            return gm_error(GPUMEM_ERROR_INVALID_ENVIRONMENT, "%s='%s': device %ld is listed twice",
                            name, v, ord);
        *mask |= UINT64_C(1) << ord;
        p = comma != NULL ? comma + 1 : NULL;
    }
    return GPUMEM_OK;
}

/* GPUMEM_SIM_PEERS: "all" (the default), "none" (words: any case, blanks
 * around), or comma-separated pairs "a-b" of distinct ordinals below ndev
 * that can access each other (blanks around each ordinal, as " 0 - 1 "). */
static gpumem_status parse_peers(long ndev, uint64_t *can)
{
    static const char name[] = "GPUMEM_SIM_PEERS";
    const char *v = gm_env(name);
    uint64_t all = ndev >= 64 ? UINT64_MAX : (UINT64_C(1) << ndev) - 1;
    for (long i = 0; i < GM_SIM_MAX_DEVICES; i++)
        can[i] = 0;
    if (v == NULL || gm_word_is(v, "all")) {
        for (long i = 0; i < ndev; i++)
            can[i] = all & ~(UINT64_C(1) << i);
        return GPUMEM_OK;
    }
    if (gm_word_is(v, "none"))
        return GPUMEM_OK;
    for (const char *p = v; p != NULL;) {
        const char *comma = strchr(p, ',');
        size_t n = comma != NULL ? (size_t)(comma - p) : strlen(p);
        char tok[48];
        char *dash = NULL;
        long a = -1, b = -1;
        bool ok = n < sizeof tok;
        if (ok) {
            memcpy(tok, p, n);
            tok[n] = '\0';
            dash = strchr(tok, '-');
            ok = dash != NULL && dash != tok;
        }
        if (ok) {
            *dash = '\0';
            ok = gm_parse_long(tok, &a) && gm_parse_long(dash + 1, &b);
        }
        if (!ok)
            return gm_error(GPUMEM_ERROR_INVALID_ENVIRONMENT,
                            "%s='%s': '%.*s' is not a pair of device ordinals 'a-b' (or use 'all' or 'none')",
                            name, v, (int)n, p);
        if (a < 0 || a >= ndev || b < 0 || b >= ndev)
            return gm_error(GPUMEM_ERROR_INVALID_ENVIRONMENT,
                            "%s='%s': device %ld does not exist (GPUMEM_SIM_DEVICES=%ld)", name, v,
                            a < 0 || a >= ndev ? a : b, ndev);
        if (a == b)
            return gm_error(GPUMEM_ERROR_INVALID_ENVIRONMENT, "%s='%s': a device is no peer of itself (%ld-%ld)",
                            name, v, a, b);
        if (can[a] >> b & 1)
            return gm_error(GPUMEM_ERROR_INVALID_ENVIRONMENT, "%s='%s': the pair %ld-%ld is listed twice", name,
                            v, a, b);
        can[a] |= UINT64_C(1) << b;
        can[b] |= UINT64_C(1) << a;
        p = comma != NULL ? comma + 1 : NULL;
    }
    return GPUMEM_OK;
}

static gpumem_status configure(void)
{
    long ndev, delay;
    uint64_t capacity, host_limit, busy;
    gpumem_status st;
    if ((st = gm_env_long("GPUMEM_SIM_DEVICES", 1, GM_SIM_MAX_DEVICES, 1, &ndev, NULL)) != GPUMEM_OK ||
        (st = gm_env_size("GPUMEM_SIM_MEMORY", UINT64_C(1) << 20, UINT64_C(1) << 30, &capacity)) != GPUMEM_OK ||
        (st = gm_env_size("GPUMEM_SIM_HOST_MEMORY", 0, UINT64_C(1) << 30, &host_limit)) != GPUMEM_OK ||
        (st = gm_env_long("GPUMEM_SIM_STREAM_DELAY_US", 0, 10000000, 2000, &delay, NULL)) != GPUMEM_OK ||
        (st = parse_busy(ndev, &busy)) != GPUMEM_OK || (st = parse_peers(ndev, S.can_peer)) != GPUMEM_OK)
        return st;
    if (capacity > SIZE_MAX || host_limit > SIZE_MAX)
        return gm_error(GPUMEM_ERROR_INVALID_ENVIRONMENT,
                        "GPUMEM_SIM_MEMORY or GPUMEM_SIM_HOST_MEMORY exceeds the address space");
    const char *name = gm_env("GPUMEM_SIM_ARCH");
    const gm_sim_arch *arch = gm_sim_arch_find(name != NULL ? name : "sm_90");
    if (arch == NULL) {
        char known[128];
        gm_sim_arch_names(known, sizeof known);
        return gm_error(GPUMEM_ERROR_INVALID_ENVIRONMENT,
                        "GPUMEM_SIM_ARCH='%s': unknown architecture (known: %s)", name, known);
    }
    long page = sysconf(_SC_PAGESIZE);
    S.page = page > 0 ? (size_t)page : 4096;
    S.ndev = (int)ndev;
    S.capacity = capacity;
    S.host_limit = host_limit;
    S.delay_us = delay;
    S.busy = busy;
    S.arch = arch;
    for (int i = 0; i < S.ndev; i++)
        S.dev[i].ordinal = i;
    return GPUMEM_OK;
}

gpumem_status gm_sim_load(const gm_driver **table)
{
    GM_CHECK_NULL(table);
    gpumem_status st = GPUMEM_OK;
    lock();
    if (!S.loaded && (st = configure()) == GPUMEM_OK)
        S.loaded = true;
    unlock();
    if (st == GPUMEM_OK)
        *table = &sim_driver;
    return st;
}

/* ------------------------------------------------------- test helpers -- */

int gm_sim_pointer_info(uint64_t addr, gm_sim_ptr_info *info)
{
    lock();
    sim_alloc *r = gm_sim_reg_find(addr);
    if (r != NULL)
        *info = (gm_sim_ptr_info){r->kind, r->dev, r->base, r->size, r->flags};
    else
        *info = (gm_sim_ptr_info){.kind = GM_SIM_MEM_NONE, .device = -1};
    unlock();
    return r != NULL ? CU_OK : GM_CUDA_ERROR_INVALID_VALUE;
}

unsigned gm_sim_live_workers(void)
{
    lock();
    unsigned n = S.workers;
    unlock();
    return n;
}

uint64_t gm_sim_host_locked_bytes(void)
{
    lock();
    uint64_t n = S.host_used;
    unlock();
    return n;
}
