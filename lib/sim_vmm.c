/*
 * sim_vmm.c - the simulator's virtual memory management (sim.h): address
 * reservations, physical memory, mappings and access rights, at a
 * granularity of GM_SIM_VMM_GRANULARITY (2 MiB, a Hopper GPU's).
 *
 * A reservation is one record of the registry (device memory, never freed
 * by cuMemFree), whose backing is a PROT_NONE host range of its size.
 * Physical memory (cuMemCreate) is a memfd, filled with
 * GM_SIM_GARBAGE_BYTE and charged to the device until it is released and no
 * longer mapped, as the driver frees it.  cuMemMap maps the memfd into the
 * reservation's host range (MAP_SHARED | MAP_FIXED), still inaccessible;
 * cuMemSetAccess makes it readable and writable.  Copies and memsets check
 * every byte they touch against the mapped, accessible ranges
 * (gm_sim_reg_find_range), so a use of unmapped memory fails as it would
 * fault on a GPU.  A physical handle exports as a real file descriptor (a
 * dup of its memfd) that another process can receive and import.
 *
 * The driver's stream-ordered pools (cuMemPoolCreate) are not simulated.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cuda_abi.h"
#include "driver.h"
#include "sim.h"
#include "sim_impl.h"

#define G GM_SIM_VMM_GRANULARITY

/* Physical memory: a memfd.  Handles are indices + 1 into S_phys, tagged. */
typedef struct sim_phys {
    int fd;           /* -1: the slot is free */
    size_t size;
    int dev;
    size_t charged;   /* bytes counted against the device */
    unsigned maps;    /* mappings of it */
    bool released;    /* cuMemRelease was called: it goes with its last mapping */
    bool exportable;  /* requested POSIX file descriptors */
    uint32_t gen;     /* tag of its handle, so that a stale handle is refused */
} sim_phys;

typedef struct sim_map {
    uint64_t off;
    size_t size;
    size_t phys; /* index in phys */
    bool access; /* cuMemSetAccess made it read-write */
} sim_map;

struct sim_resv {
    sim_alloc *rec;
    int dev;
    sim_map *maps;
    size_t nmaps, capmaps;
};

/* Guarded by the simulator's lock. */
static sim_phys *phys;
static size_t nphys;

static gm_cu_mem_handle handle_of(size_t i)
{
    return (gm_cu_mem_handle)phys[i].gen << 32 | (gm_cu_mem_handle)(i + 1);
}

/* The live physical memory a handle names, or NULL. */
static sim_phys *phys_of(gm_cu_mem_handle h, size_t *index)
{
    size_t i = (size_t)(h & 0xffffffffu);
    if (i == 0 || i > nphys || phys[i - 1].fd < 0 || phys[i - 1].released || phys[i - 1].gen != (uint32_t)(h >> 32))
        return NULL;
    *index = i - 1;
    return &phys[i - 1];
}

/* Frees physical memory that is released and no longer mapped. */
static void phys_maybe_free(size_t i)
{
    sim_phys *p = &phys[i];
    if (!p->released || p->maps != 0)
        return;
    close(p->fd);
    p->fd = -1;
    S.dev[p->dev].used -= p->charged;
    p->charged = 0;
    p->gen++;
}

/* A free slot of phys (grown when none is); false when out of memory. */
static bool phys_slot(size_t *slot)
{
    for (size_t i = 0; i < nphys; i++)
        if (phys[i].fd < 0) {
            *slot = i;
            return true;
        }
    sim_phys *p = realloc(phys, (nphys + 1) * sizeof *p);
    if (p == NULL)
        return false;
    phys = p;
    phys[nphys] = (sim_phys){.fd = -1};
    *slot = nphys++;
    return true;
}

static bool prop_ok(const gm_cu_mem_alloc_prop *prop)
{
    return prop != NULL && prop->type == GM_CU_MEM_ALLOCATION_TYPE_PINNED &&
           prop->location.type == GM_CU_MEM_LOCATION_TYPE_DEVICE && prop->location.id >= 0 &&
           prop->location.id < S.ndev &&
           (prop->requestedHandleTypes & ~GM_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) == 0;
}

int gm_sim_mem_get_allocation_granularity(gm_dctx *ctx, size_t *granularity, const gm_cu_mem_alloc_prop *prop,
                                          int option)
{
    (void)ctx;
    if (granularity == NULL || (option != GM_CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
                                option != GM_CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
        return GM_CUDA_ERROR_INVALID_VALUE;
    lock();
    bool ok = prop_ok(prop);
    unlock();
    if (!ok)
        return GM_CUDA_ERROR_INVALID_VALUE;
    *granularity = G;
    return CU_OK;
}

/* ---- reservations ---- */

static sim_resv *resv_at(gm_dctx *ctx, uint64_t ptr, size_t size, uint64_t *off)
{
    sim_alloc *r = gm_sim_reg_find(ptr);
    if (r == NULL || r->vmm == NULL || r->dev != ctx->ordinal || size == 0 || size > r->size - (ptr - r->base))
        return NULL;
    *off = ptr - r->base;
    return r->vmm;
}

int gm_sim_mem_address_reserve(gm_dctx *ctx, gm_cu_deviceptr *ptr, size_t size, size_t alignment)
{
    if (ptr == NULL || size == 0 || size % G != 0 || (alignment != 0 && alignment > G))
        return GM_CUDA_ERROR_INVALID_VALUE;
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? CU_OK : GM_CUDA_ERROR_INVALID_CONTEXT;
    uint64_t base = 0;
    size_t extent = 0;
    if (rc == CU_OK && !gm_sim_window_reserve(ctx, size + G, &base, &extent))
        rc = GM_CUDA_ERROR_OUT_OF_MEMORY;
    sim_alloc *r = NULL;
    sim_resv *v = NULL;
    void *mem = MAP_FAILED;
    if (rc == CU_OK) {
        base = (base + G - 1) / G * G; /* aligned to the granularity, inside the extent */
        r = calloc(1, sizeof *r);
        v = calloc(1, sizeof *v);
        mem = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (r == NULL || v == NULL || mem == MAP_FAILED)
            rc = GM_CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (rc == CU_OK) {
        *r = (sim_alloc){.base = base, .size = size, .mem = mem, .kind = GM_SIM_MEM_DEVICE, .dev = ctx->ordinal,
                         .refs = 1, .fd = -1, .vmm = v};
        *v = (sim_resv){.rec = r, .dev = ctx->ordinal};
        if (!gm_sim_reg_insert(r))
            rc = GM_CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (rc != CU_OK) {
        if (mem != MAP_FAILED)
            munmap(mem, size);
        free(r);
        free(v);
    } else {
        ctx->next_off += extent + DEVICE_GAP;
        *ptr = base;
    }
    unlock();
    return rc;
}

int gm_sim_mem_address_free(gm_dctx *ctx, gm_cu_deviceptr ptr, size_t size)
{
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? CU_OK : GM_CUDA_ERROR_INVALID_CONTEXT;
    sim_alloc *r = rc == CU_OK ? gm_sim_reg_find(ptr) : NULL;
    if (rc == CU_OK && (r == NULL || r->vmm == NULL || r->base != ptr || r->size != size))
        rc = GM_CUDA_ERROR_INVALID_VALUE;
    else if (rc == CU_OK && r->vmm->nmaps != 0)
        rc = GM_CUDA_ERROR_INVALID_VALUE; /* the driver refuses a range still mapped */
    if (rc == CU_OK)
        gm_sim_alloc_drop(r);
    unlock();
    return rc;
}

/* The record's last reference went (lock held). */
void gm_sim_vmm_free(sim_resv *v)
{
    for (size_t i = 0; i < v->nmaps; i++) { /* a context's end: the driver unmaps */
        phys[v->maps[i].phys].maps--;
        phys_maybe_free(v->maps[i].phys);
    }
    munmap(v->rec->mem, v->rec->size);
    free(v->maps);
    free(v);
}

bool gm_sim_vmm_accessible(const sim_resv *v, uint64_t off, size_t len)
{
    /* Mappings do not overlap; walk those that cover the range in order. */
    uint64_t at = off, end = off + len;
    while (at < end) {
        const sim_map *m = NULL;
        for (size_t i = 0; i < v->nmaps && m == NULL; i++)
            if (v->maps[i].off <= at && at < v->maps[i].off + v->maps[i].size)
                m = &v->maps[i];
        if (m == NULL || !m->access)
            return false;
        at = m->off + m->size;
    }
    return true;
}

/* ---- physical memory ---- */

int gm_sim_mem_create(gm_dctx *ctx, gm_cu_mem_handle *handle, size_t size, const gm_cu_mem_alloc_prop *prop)
{
    if (handle == NULL || size == 0 || size % G != 0)
        return GM_CUDA_ERROR_INVALID_VALUE;
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? CU_OK : GM_CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CU_OK && !prop_ok(prop))
        rc = GM_CUDA_ERROR_INVALID_VALUE;
    gm_dctx *dev = rc == CU_OK ? &S.dev[prop->location.id] : NULL;
    if (rc == CU_OK && size > S.capacity - S.other - dev->used)
        rc = GM_CUDA_ERROR_OUT_OF_MEMORY;
    size_t slot = 0;
    if (rc == CU_OK && !phys_slot(&slot))
        rc = GM_CUDA_ERROR_OUT_OF_MEMORY;
    int fd = -1;
    if (rc == CU_OK && ((fd = memfd_create("gpumem-sim-vmm", MFD_CLOEXEC)) < 0 || ftruncate(fd, (off_t)size) != 0))
        rc = GM_CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CU_OK) {
        /* Device memory starts uninitialized. */
        void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED)
            rc = GM_CUDA_ERROR_OUT_OF_MEMORY;
        else {
            memset(m, GM_SIM_GARBAGE_BYTE, size);
            munmap(m, size);
        }
    }
    if (rc == CU_OK) {
        uint32_t gen = phys[slot].gen;
        phys[slot] = (sim_phys){.fd = fd, .size = size, .dev = prop->location.id, .charged = size, .gen = gen,
                                .exportable = prop->requestedHandleTypes != 0};
        dev->used += size;
        *handle = handle_of(slot);
    } else if (fd >= 0) {
        close(fd);
    }
    unlock();
    return rc;
}

int gm_sim_mem_release(gm_dctx *ctx, gm_cu_mem_handle handle)
{
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? CU_OK : GM_CUDA_ERROR_INVALID_CONTEXT;
    size_t i = 0;
    if (rc == CU_OK && phys_of(handle, &i) == NULL)
        rc = GM_CUDA_ERROR_INVALID_VALUE;
    if (rc == CU_OK) {
        phys[i].released = true;
        phys_maybe_free(i);
    }
    unlock();
    return rc;
}

/* ---- mappings ---- */

int gm_sim_mem_map(gm_dctx *ctx, gm_cu_deviceptr ptr, size_t size, gm_cu_mem_handle handle)
{
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? CU_OK : GM_CUDA_ERROR_INVALID_CONTEXT;
    uint64_t off = 0;
    size_t pi = 0;
    sim_resv *v = rc == CU_OK ? resv_at(ctx, ptr, size, &off) : NULL;
    sim_phys *p = v != NULL ? phys_of(handle, &pi) : NULL;
    if (rc == CU_OK && (v == NULL || p == NULL || off % G != 0 || size != p->size))
        rc = GM_CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; rc == CU_OK && i < v->nmaps; i++)
        if (v->maps[i].off < off + size && off < v->maps[i].off + v->maps[i].size)
            rc = GM_CUDA_ERROR_ALREADY_MAPPED;
    if (rc == CU_OK && v->nmaps == v->capmaps) {
        size_t cap = v->capmaps ? v->capmaps * 2 : 8;
        sim_map *m = realloc(v->maps, cap * sizeof *m);
        if (m == NULL)
            rc = GM_CUDA_ERROR_OUT_OF_MEMORY;
        else {
            v->maps = m;
            v->capmaps = cap;
        }
    }
    if (rc == CU_OK && mmap(v->rec->mem + off, size, PROT_NONE, MAP_SHARED | MAP_FIXED, p->fd, 0) == MAP_FAILED)
        rc = GM_CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CU_OK) {
        v->maps[v->nmaps++] = (sim_map){.off = off, .size = size, .phys = pi};
        p->maps++;
    }
    unlock();
    return rc;
}

int gm_sim_mem_unmap(gm_dctx *ctx, gm_cu_deviceptr ptr, size_t size)
{
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? CU_OK : GM_CUDA_ERROR_INVALID_CONTEXT;
    uint64_t off = 0;
    sim_resv *v = rc == CU_OK ? resv_at(ctx, ptr, size, &off) : NULL;
    if (rc == CU_OK && v == NULL)
        rc = GM_CUDA_ERROR_INVALID_VALUE;
    /* Whole mappings only, as the driver requires. */
    uint64_t at = off;
    while (rc == CU_OK && at < off + size) {
        size_t k = v->nmaps;
        for (size_t i = 0; i < v->nmaps && k == v->nmaps; i++)
            if (v->maps[i].off == at)
                k = i;
        if (k == v->nmaps || v->maps[k].size > off + size - at)
            rc = GM_CUDA_ERROR_INVALID_VALUE;
        else
            at += v->maps[k].size;
    }
    /* The host pages go back to PROT_NONE at once; a queued copy that still
     * uses them is the program's bug, as on a GPU. */
    if (rc == CU_OK && mmap(v->rec->mem + off, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED |
                            MAP_NORESERVE, -1, 0) == MAP_FAILED)
        rc = GM_CUDA_ERROR_UNKNOWN;
    for (size_t i = 0; rc == CU_OK && i < v->nmaps;) {
        sim_map m = v->maps[i];
        if (m.off >= off && m.off < off + size) {
            v->maps[i] = v->maps[--v->nmaps];
            phys[m.phys].maps--;
            phys_maybe_free(m.phys);
        } else {
            i++;
        }
    }
    unlock();
    return rc;
}

int gm_sim_mem_set_access(gm_dctx *ctx, gm_cu_deviceptr ptr, size_t size, const gm_cu_mem_access_desc *desc,
                          size_t count)
{
    if (desc == NULL || count == 0)
        return GM_CUDA_ERROR_INVALID_VALUE;
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? CU_OK : GM_CUDA_ERROR_INVALID_CONTEXT;
    uint64_t off = 0;
    sim_resv *v = rc == CU_OK ? resv_at(ctx, ptr, size, &off) : NULL;
    bool rw = false;
    for (size_t i = 0; rc == CU_OK && i < count; i++) {
        if (desc[i].location.type != GM_CU_MEM_LOCATION_TYPE_DEVICE || desc[i].location.id < 0 ||
            desc[i].location.id >= S.ndev ||
            (desc[i].flags != GM_CU_MEM_ACCESS_FLAGS_PROT_READWRITE && desc[i].flags != GM_CU_MEM_ACCESS_FLAGS_PROT_READ &&
             desc[i].flags != GM_CU_MEM_ACCESS_FLAGS_PROT_NONE))
            rc = GM_CUDA_ERROR_INVALID_VALUE;
        else if (desc[i].location.id == ctx->ordinal)
            rw = desc[i].flags == GM_CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    }
    if (rc == CU_OK && v == NULL)
        rc = GM_CUDA_ERROR_INVALID_VALUE;
    /* Every byte must be mapped: mark the whole mappings of the range. */
    uint64_t at = off;
    while (rc == CU_OK && at < off + size) {
        size_t k = v->nmaps;
        for (size_t i = 0; i < v->nmaps && k == v->nmaps; i++)
            if (v->maps[i].off <= at && at < v->maps[i].off + v->maps[i].size)
                k = i;
        if (k == v->nmaps)
            rc = GM_CUDA_ERROR_INVALID_VALUE;
        else
            at = v->maps[k].off + v->maps[k].size;
    }
    if (rc == CU_OK && mprotect(v->rec->mem + off, size, rw ? PROT_READ | PROT_WRITE : PROT_NONE) != 0)
        rc = GM_CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; rc == CU_OK && i < v->nmaps; i++)
        if (v->maps[i].off >= off && v->maps[i].off < off + size)
            v->maps[i].access = rw;
    unlock();
    return rc;
}

/* ---- shareable handles: a file descriptor ---- */

int gm_sim_mem_export_to_shareable_handle(gm_dctx *ctx, void *shareable, gm_cu_mem_handle handle, int type)
{
    if (shareable == NULL)
        return GM_CUDA_ERROR_INVALID_VALUE;
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? CU_OK : GM_CUDA_ERROR_INVALID_CONTEXT;
    size_t i = 0;
    sim_phys *p = rc == CU_OK ? phys_of(handle, &i) : NULL;
    if (rc == CU_OK && (p == NULL || type != GM_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
        rc = GM_CUDA_ERROR_INVALID_VALUE;
    else if (rc == CU_OK && !p->exportable)
        rc = GM_CUDA_ERROR_NOT_PERMITTED; /* not created with that handle type requested */
    int fd = rc == CU_OK ? fcntl(p->fd, F_DUPFD_CLOEXEC, 0) : -1;
    if (rc == CU_OK && fd < 0)
        rc = GM_CUDA_ERROR_OPERATING_SYSTEM;
    if (rc == CU_OK)
        memcpy(shareable, &fd, sizeof fd);
    unlock();
    return rc;
}

int gm_sim_mem_import_from_shareable_handle(gm_dctx *ctx, gm_cu_mem_handle *handle, void *os_handle, int type)
{
    int src = (int)(intptr_t)os_handle;
    struct stat sb;
    if (handle == NULL || type != GM_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR || src < 0 || fstat(src, &sb) != 0 ||
        !S_ISREG(sb.st_mode) || sb.st_size <= 0 || (size_t)sb.st_size % G != 0)
        return GM_CUDA_ERROR_INVALID_VALUE;
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? CU_OK : GM_CUDA_ERROR_INVALID_CONTEXT;
    size_t slot = 0;
    if (rc == CU_OK && !phys_slot(&slot))
        rc = GM_CUDA_ERROR_OUT_OF_MEMORY;
    int fd = rc == CU_OK ? fcntl(src, F_DUPFD_CLOEXEC, 0) : -1;
    if (rc == CU_OK && fd < 0)
        rc = GM_CUDA_ERROR_OPERATING_SYSTEM;
    if (rc == CU_OK) {
        /* Another process's memory: not charged here. */
        uint32_t gen = phys[slot].gen;
        phys[slot] = (sim_phys){.fd = fd, .size = (size_t)sb.st_size, .dev = ctx->ordinal, .gen = gen};
        *handle = handle_of(slot);
    }
    unlock();
    return rc;
}

/* ---- the driver's stream-ordered pools: not simulated ---- */

int gm_sim_mem_pool_create(gm_dctx *ctx, gm_dmempool **pool, const gm_cu_mem_pool_props *props)
{
    (void)ctx, (void)pool, (void)props;
    return GM_SIM_ERROR_NOT_SIMULATED;
}

int gm_sim_mem_pool_destroy(gm_dctx *ctx, gm_dmempool *pool)
{
    (void)ctx, (void)pool;
    return GM_SIM_ERROR_NOT_SIMULATED;
}

int gm_sim_mem_pool_attribute(gm_dctx *ctx, gm_dmempool *pool, int attr, uint64_t *value)
{
    (void)ctx, (void)pool, (void)attr, (void)value;
    return GM_SIM_ERROR_NOT_SIMULATED;
}

int gm_sim_mem_pool_trim_to(gm_dctx *ctx, gm_dmempool *pool, size_t keep)
{
    (void)ctx, (void)pool, (void)keep;
    return GM_SIM_ERROR_NOT_SIMULATED;
}

int gm_sim_mem_alloc_from_pool_async(gm_dctx *ctx, gm_cu_deviceptr *ptr, size_t bytes, gm_dmempool *pool,
                                     gm_dstream *stream)
{
    (void)ctx, (void)ptr, (void)bytes, (void)pool, (void)stream;
    return GM_SIM_ERROR_NOT_SIMULATED;
}

int gm_sim_mem_pool_set_access(gm_dctx *ctx, gm_dmempool *pool, const gm_cu_mem_access_desc *desc, size_t count)
{
    (void)ctx, (void)pool, (void)desc, (void)count;
    return GM_SIM_ERROR_NOT_SIMULATED;
}

int gm_sim_mem_pool_export_to_shareable_handle(gm_dctx *ctx, void *shareable, gm_dmempool *pool, int type)
{
    (void)ctx, (void)shareable, (void)pool, (void)type;
    return GM_SIM_ERROR_NOT_SIMULATED;
}

int gm_sim_mem_pool_import_from_shareable_handle(gm_dctx *ctx, gm_dmempool **pool, void *os_handle, int type)
{
    (void)ctx, (void)pool, (void)os_handle, (void)type;
    return GM_SIM_ERROR_NOT_SIMULATED;
}

int gm_sim_mem_pool_export_pointer(gm_dctx *ctx, gm_cu_mem_pool_ptr_export_data *data, gm_cu_deviceptr ptr)
{
    (void)ctx, (void)data, (void)ptr;
    return GM_SIM_ERROR_NOT_SIMULATED;
}

int gm_sim_mem_pool_import_pointer(gm_dctx *ctx, gm_cu_deviceptr *ptr, gm_dmempool *pool,
                                   gm_cu_mem_pool_ptr_export_data *data)
{
    (void)ctx, (void)ptr, (void)pool, (void)data;
    return GM_SIM_ERROR_NOT_SIMULATED;
}
