/*
 * sim_memory.c - the simulator's memory (sim.h says what it simulates):
 * the registry of allocations (every device, managed, page-locked and
 * registered range, sorted by address), the first-fit placement of
 * GPUMEM_SIM_FIRST_FIT, the driver's memory calls and pointer attributes.
 * sim_impl.h describes the shared state and the other files.
 */
#include "config.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_abi.h"
#include "driver.h"
#include "sim.h"
#include "sim_impl.h"

/* -------------------------------------------------------------- helpers -- */

static bool round_up(size_t n, size_t unit, size_t *out)
{
    if (n > SIZE_MAX - (unit - 1))
        return false;
    *out = (n + unit - 1) / unit * unit;
    return true;
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
    if (r == NULL || len > r->size - (addr - r->base))
        return NULL;
    return r->vmm == NULL || gm_sim_vmm_accessible(r->vmm, addr - r->base, len) ? r : NULL;
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

bool gm_sim_reg_insert(sim_alloc *r)
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

/* ---- first fit (GPUMEM_SIM_FIRST_FIT) ---- */

/* Device memory as one range [0, capacity - other): takes the first free
 * run of len bytes for an allocation, as an allocator without virtual
 * memory would, so that frees can leave the free memory in pieces too small
 * for a request that the total would hold.  False when no run is long
 * enough. */
static bool place_take(gm_dctx *d, uint64_t len, uint64_t *off)
{
    uint64_t at = 0, end = S.capacity - S.other;
    size_t i = 0;
    for (; i < d->nplace; i++) {
        if (d->place[i].off - at >= len)
            break;
        at = d->place[i].off + d->place[i].len;
    }
    if (i == d->nplace && (at > end || end - at < len))
        return false;
    if (d->nplace == d->capplace) {
        size_t cap = d->capplace ? d->capplace * 2 : 16;
        sim_place *p = realloc(d->place, cap * sizeof *p);
        if (p == NULL)
            return false;
        d->place = p;
        d->capplace = cap;
    }
    memmove(&d->place[i + 1], &d->place[i], (d->nplace - i) * sizeof *d->place);
    d->place[i] = (sim_place){at, len};
    d->nplace++;
    *off = at;
    return true;
}

static void place_drop(gm_dctx *d, uint64_t off)
{
    size_t lo = 0, hi = d->nplace;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (d->place[mid].off < off)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < d->nplace && d->place[lo].off == off) {
        memmove(&d->place[lo], &d->place[lo + 1], (d->nplace - lo - 1) * sizeof *d->place);
        d->nplace--;
    }
}

void gm_sim_alloc_unref(sim_alloc *r)
{
    if (--r->refs == 0) {
        if (r->vmm != NULL)
            gm_sim_vmm_free(r->vmm);
        else if (r->shared || r->ipc_mapped)
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
    if (r->placed)
        place_drop(&S.dev[r->dev], r->place);
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
    if (old != NULL || !gm_sim_reg_insert(r)) {
        free(r);
        return GM_CUDA_ERROR_OUT_OF_MEMORY;
    }
    return CU_OK;
}
/* -------------------------------------------------------------- memory -- */

int gm_sim_mem_get_info(gm_dctx *ctx, size_t *free_bytes, size_t *total_bytes)
{
    if (free_bytes == NULL || total_bytes == NULL)
        return GM_CUDA_ERROR_INVALID_VALUE;
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? CU_OK : GM_CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CU_OK) {
        *free_bytes = (size_t)(S.capacity - S.other - ctx->used);
        *total_bytes = (size_t)S.capacity;
    }
    unlock();
    return rc;
}

bool gm_sim_window_reserve(gm_dctx *ctx, size_t bytes, uint64_t *base, size_t *extent)
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
    uint64_t base, place = 0;
    if (!round_up(bytes, GRANULE, &charged) || charged > S.capacity - S.other - ctx->used ||
        !gm_sim_window_reserve(ctx, bytes, &base, &extent) || (S.first_fit && !place_take(ctx, charged, &place)))
        return GM_CUDA_ERROR_OUT_OF_MEMORY;
    sim_alloc *r = calloc(1, sizeof *r);
    unsigned char *mem = malloc(bytes);
    if (r != NULL && mem != NULL)
        *r = (sim_alloc){.base = base, .size = bytes, .charged = charged, .mem = mem, .owned = true,
                         .kind = GM_SIM_MEM_DEVICE, .dev = ctx->ordinal, .refs = 1, .fd = -1,
                         .placed = S.first_fit, .place = place};
    if (r == NULL || mem == NULL || !gm_sim_reg_insert(r)) {
        if (S.first_fit)
            place_drop(ctx, place);
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
    if (!gm_sim_window_reserve(ctx, bytes, &base, &extent))
        return GM_CUDA_ERROR_OUT_OF_MEMORY;
    sim_alloc *r = calloc(1, sizeof *r);
    if (r != NULL)
        *r = (sim_alloc){.base = base, .size = bytes, .mem = mem, .kind = GM_SIM_MEM_DEVICE,
                         .dev = ctx->ordinal, .refs = 1, .ipc_mapped = true, .fd = -1};
    if (r == NULL || !gm_sim_reg_insert(r)) {
        free(r);
        return GM_CUDA_ERROR_OUT_OF_MEMORY;
    }
    ctx->next_off += extent + DEVICE_GAP;
    *ptr = base;
    return CU_OK;
}

int gm_sim_mem_alloc(gm_dctx *ctx, gm_cu_deviceptr *ptr, size_t bytes)
{
    if (ptr == NULL || bytes == 0)
        return GM_CUDA_ERROR_INVALID_VALUE;
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? gm_sim_mem_alloc_locked(ctx, ptr, bytes) : GM_CUDA_ERROR_INVALID_CONTEXT;
    unlock();
    return rc;
}

int gm_sim_mem_free(gm_dctx *ctx, gm_cu_deviceptr ptr)
{
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? CU_OK : GM_CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CU_OK) {
        sim_alloc *r = gm_sim_reg_find(ptr);
        if (r != NULL && r->base == ptr && !r->module && !r->ipc_mapped && r->vmm == NULL &&
            (r->kind == GM_SIM_MEM_DEVICE || r->kind == GM_SIM_MEM_MANAGED))
            gm_sim_alloc_drop(r);
        else
            rc = GM_CUDA_ERROR_INVALID_VALUE;
    }
    unlock();
    return rc;
}

int gm_sim_mem_alloc_managed(gm_dctx *ctx, gm_cu_deviceptr *ptr, size_t bytes, unsigned flags)
{
    if (ptr == NULL || bytes == 0 ||
        (flags != GM_CU_MEM_ATTACH_GLOBAL && flags != GM_CU_MEM_ATTACH_HOST))
        return GM_CUDA_ERROR_INVALID_VALUE;
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? CU_OK : GM_CUDA_ERROR_INVALID_CONTEXT;
    size_t charged;
    uint64_t place = 0;
    void *mem = NULL;
    if (rc == CU_OK && (!round_up(bytes, GRANULE, &charged) || charged > S.capacity - S.other - ctx->used ||
                      (S.first_fit && !place_take(ctx, charged, &place))))
        rc = GM_CUDA_ERROR_OUT_OF_MEMORY;
    else if (rc == CU_OK && posix_memalign(&mem, S.page, bytes) != 0) {
        if (S.first_fit)
            place_drop(ctx, place);
        rc = GM_CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (rc == CU_OK) {
        memset(mem, GM_SIM_GARBAGE_BYTE, bytes);
        rc = alloc_add_host(GM_SIM_MEM_MANAGED, ctx->ordinal, mem, bytes, charged, flags);
        if (rc != CU_OK && S.first_fit)
            place_drop(ctx, place);
    }
    if (rc == CU_OK) {
        ctx->used += charged;
        if (S.first_fit) {
            sim_alloc *r = gm_sim_reg_find((uintptr_t)mem);
            r->placed = true;
            r->place = place;
        }
        *ptr = (uintptr_t)mem;
    } else {
        free(mem);
    }
    unlock();
    return rc;
}

int gm_sim_mem_host_alloc(gm_dctx *ctx, void **ptr, size_t bytes, unsigned flags)
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

int gm_sim_mem_free_host(gm_dctx *ctx, void *ptr)
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
    if (!gm_sim_reg_insert(r)) {
        free(r);
        return GM_CUDA_ERROR_OUT_OF_MEMORY;
    }
    S.host_used += r->charged;
    return CU_OK;
}

int gm_sim_mem_host_register(gm_dctx *ctx, void *ptr, size_t bytes, unsigned flags)
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

int gm_sim_mem_host_unregister(gm_dctx *ctx, void *ptr)
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

int gm_sim_mem_host_get_device_pointer(gm_dctx *ctx, gm_cu_deviceptr *dptr, void *ptr)
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
int gm_sim_mem_alloc_async(gm_dctx *ctx, gm_cu_deviceptr *ptr, size_t bytes, gm_dstream *stream)
{
    int rc = gm_sim_stream_query(ctx, stream);
    if (rc != CU_OK && rc != GM_CUDA_ERROR_NOT_READY)
        return rc;
    return gm_sim_mem_alloc(ctx, ptr, bytes);
}

int gm_sim_mem_free_async(gm_dctx *ctx, gm_cu_deviceptr ptr, gm_dstream *stream)
{
    int rc = gm_sim_stream_synchronize(ctx, stream);
    return rc != CU_OK ? rc : gm_sim_mem_free(ctx, ptr);
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

int gm_sim_pointer_get_attributes(unsigned count, const int *attrs, void **data, gm_cu_deviceptr ptr)
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

int gm_sim_mem_get_address_range(gm_dctx *ctx, gm_cu_deviceptr *base, size_t *size, gm_cu_deviceptr ptr)
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
