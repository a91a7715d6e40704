/*
 * source_vmm.c - the virtual-memory source (source.h): one address
 * reservation, physical chunks mapped on demand at the allocation
 * granularity, extents that merge with their free neighbours whichever
 * chunk they came from, idle chunks unmapped at a settle or a trim.
 *
 * The reservation is the maximum (the device's memory by default) for
 * large extents, and an eighth of it more, above, for small ones
 * (GM_SOURCE_SMALL and less): two arenas, each a sorted list of free ranges
 * that covers mapped and unmapped memory alike.  An extent takes the start
 * of the free range that needs the fewest unmapped bytes, the smallest
 * among those (best fit over mapped memory first); the unmapped granules
 * under it are mapped then, each granule one chunk (cuMemCreate, cuMemMap,
 * cuMemSetAccess: one map call per granule), at least growth_step bytes
 * when the free range goes on.  Each granule counts the live extents on
 * it; a chunk none of whose granules has one is idle.  A chunk per granule
 * lets any idle granule go: before the source maps more, it unmaps as many
 * idle chunks elsewhere (the highest first), so that what it maps stays
 * what its extents need, however the free ranges are scattered (physical
 * memory moves to where the address space has room).
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "memstats.h"
#include "source.h"

#define EXTENT_ALIGN 512u

typedef struct vrange {
    uint64_t off, len;
} vrange;

typedef struct varena {
    uint64_t base, size; /* offsets in the reservation */
    vrange *free;        /* sorted by off, disjoint, never adjacent */
    size_t nfree, cap;
} varena;

typedef struct vchunk {
    uint64_t off, len;
    gm_cu_mem_handle h;
    uint64_t serial; /* the source's count of chunks mapped when it was: tells chunks at one offset apart */
} vchunk;

typedef struct gm_vmm_source {
    gm_source s;
    pthread_mutex_t mu;
    gm_cu_deviceptr base;
    size_t size, gran, maximum;
    gm_cu_mem_alloc_prop prop;
    varena arena[2]; /* 0: large extents, 1: small ones */
    uint32_t *busy;  /* per granule: live extents on it */
    uint8_t *mapped; /* per granule */
    size_t ngran;
    vchunk *chunks; /* sorted by off */
    size_t nchunks, capchunks;
    uint64_t mapped_bytes, extents, extent_bytes;
    uint64_t serials; /* chunks mapped so far */
    uint64_t export_id; /* exportable: a random number naming the source to importers (pool_ipc.c) */
} gm_vmm_source;

static gm_vmm_source *vs_of(gm_source *s)
{
    return (gm_vmm_source *)s;
}

/* ---- free ranges ---- */

/* The index of the first free range whose off is above off. */
static size_t range_upper(const varena *a, uint64_t off)
{
    size_t lo = 0, hi = a->nfree;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a->free[mid].off <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Gives [off, off + len) back to a, merged with its neighbours. */
static bool range_put(varena *a, uint64_t off, uint64_t len)
{
    size_t i = range_upper(a, off);
    bool prev = i > 0 && a->free[i - 1].off + a->free[i - 1].len == off;
    bool next = i < a->nfree && off + len == a->free[i].off;
    if (prev && next) {
        a->free[i - 1].len += len + a->free[i].len;
        memmove(&a->free[i], &a->free[i + 1], (a->nfree - i - 1) * sizeof *a->free);
        a->nfree--;
    } else if (prev) {
        a->free[i - 1].len += len;
    } else if (next) {
        a->free[i].off = off;
        a->free[i].len += len;
    } else {
        if (a->nfree == a->cap) {
            size_t cap = a->cap ? a->cap * 2 : 16;
            vrange *v = realloc(a->free, cap * sizeof *v);
            if (v == NULL)
                return false;
            a->free = v;
            a->cap = cap;
        }
        memmove(&a->free[i + 1], &a->free[i], (a->nfree - i) * sizeof *a->free);
        a->free[i] = (vrange){off, len};
        a->nfree++;
    }
    return true;
}

/* Takes [off, off + len) from the start of free range i. */
static void range_take(varena *a, size_t i, uint64_t len)
{
    a->free[i].off += len;
    a->free[i].len -= len;
    if (a->free[i].len == 0) {
        memmove(&a->free[i], &a->free[i + 1], (a->nfree - i - 1) * sizeof *a->free);
        a->nfree--;
    }
}

/* Unmapped bytes under [off, off + len). */
static uint64_t unmapped_under(const gm_vmm_source *v, uint64_t off, uint64_t len)
{
    uint64_t n = 0;
    for (size_t g = off / v->gran, end = (off + len - 1) / v->gran; g <= end; g++)
        n += v->mapped[g] ? 0 : v->gran;
    return n;
}

/* ---- chunks ---- */

static size_t chunk_upper(const gm_vmm_source *v, uint64_t off)
{
    size_t lo = 0, hi = v->nchunks;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v->chunks[mid].off <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Maps one chunk at [off, off + len), granule-aligned and unmapped: one
 * cuMemCreate, one cuMemMap, one cuMemSetAccess. */
static gpumem_status chunk_map(gm_vmm_source *v, uint64_t off, uint64_t len, const char *what, bool *oom)
{
    gm_dctx *dctx = v->s.ctx->dctx;
    if (v->nchunks == v->capchunks) {
        size_t cap = v->capchunks ? v->capchunks * 2 : 16;
        vchunk *c = realloc(v->chunks, cap * sizeof *c);
        if (c == NULL)
            return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", what);
        v->chunks = c;
        v->capchunks = cap;
    }
    gm_cu_mem_handle h = 0;
    int rc = GM_DRV(mem_create, dctx, &h, len, &v->prop);
    if (rc == GM_CUDA_ERROR_OUT_OF_MEMORY) {
        *oom = true;
        return GPUMEM_ERROR_OUT_OF_MEMORY;
    }
    char where[200];
    snprintf(where, sizeof where, "%s: a chunk of %llu bytes", what, (unsigned long long)len);
    gpumem_status st = gm_drv_check(rc, GM_OP_mem_create, where);
    if (st != GPUMEM_OK)
        return st;
    st = gm_drv_check(GM_DRV(mem_map, dctx, v->base + off, len, h), GM_OP_mem_map, where);
    if (st == GPUMEM_OK) {
        gm_cu_mem_access_desc d = {{GM_CU_MEM_LOCATION_TYPE_DEVICE, v->s.ctx->device},
                                   GM_CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
        st = gm_drv_check(GM_DRV(mem_set_access, dctx, v->base + off, len, &d, 1), GM_OP_mem_set_access, where);
        if (st != GPUMEM_OK)
            gm_error_quietly(gm_drv_check(GM_DRV(mem_unmap, dctx, v->base + off, len), GM_OP_mem_unmap, where));
    }
    if (st != GPUMEM_OK) {
        gm_error_quietly(gm_drv_check(GM_DRV(mem_release, dctx, h), GM_OP_mem_release, where));
        return st;
    }
    size_t i = chunk_upper(v, off);
    memmove(&v->chunks[i + 1], &v->chunks[i], (v->nchunks - i) * sizeof *v->chunks);
    v->chunks[i] = (vchunk){off, len, h, ++v->serials};
    v->nchunks++;
    memset(&v->mapped[off / v->gran], 1, len / v->gran);
    v->mapped_bytes += len;
    gm_memstats_driver_alloc(v->s.ctx);
    return GPUMEM_OK;
}

static bool chunk_idle(const gm_vmm_source *v, const vchunk *c)
{
    for (size_t g = c->off / v->gran, n = c->len / v->gran; n > 0; g++, n--)
        if (v->busy[g] != 0)
            return false;
    return true;
}

/* Unmaps and releases chunk i (idle). */
static gpumem_status chunk_unmap(gm_vmm_source *v, size_t i, const char *what)
{
    gm_dctx *dctx = v->s.ctx->dctx;
    vchunk c = v->chunks[i];
    gpumem_status st = gm_drv_check(GM_DRV(mem_unmap, dctx, v->base + c.off, c.len), GM_OP_mem_unmap, what);
    if (st != GPUMEM_OK)
        return st; /* still mapped: it stays a chunk */
    st = gm_drv_check(GM_DRV(mem_release, dctx, c.h), GM_OP_mem_release, what);
    memmove(&v->chunks[i], &v->chunks[i + 1], (v->nchunks - i - 1) * sizeof *v->chunks);
    v->nchunks--;
    memset(&v->mapped[c.off / v->gran], 0, c.len / v->gran);
    v->mapped_bytes -= c.len;
    return st;
}

/* Maps every unmapped granule under [off, off + len), a run at a time,
 * each run extended to growth_step over unmapped granules up to limit. */
static gpumem_status map_under(gm_vmm_source *v, uint64_t off, uint64_t len, uint64_t limit, const char *what,
                               bool *oom)
{
    size_t g = off / v->gran, end = (off + len - 1) / v->gran + 1;
    size_t gmax = limit / v->gran, step = (size_t)((v->s.cfg.growth_step + v->gran - 1) / v->gran);
    while (g < end) {
        if (v->mapped[g]) {
            g++;
            continue;
        }
        size_t r = g;
        while (r < end && !v->mapped[r])
            r++;
        while (r - g < step && r < gmax && !v->mapped[r])
            r++;
        if (v->mapped_bytes + (uint64_t)(r - g) * v->gran > v->maximum) {
            *oom = true; /* the pool's maximum */
            return GPUMEM_ERROR_OUT_OF_MEMORY;
        }
        for (; g < r; g++) {
            gpumem_status st = chunk_map(v, (uint64_t)g * v->gran, v->gran, what, oom);
            if (st != GPUMEM_OK)
                return st;
        }
    }
    return GPUMEM_OK;
}

/* Unmaps idle chunks outside [lo, hi), the highest first, until need
 * bytes went or none is left (lock held): physical memory moves to where
 * an extent needs it instead of the source mapping more. */
static gpumem_status swap_out(gm_vmm_source *v, uint64_t need, uint64_t lo, uint64_t hi, const char *what)
{
    gpumem_status st = GPUMEM_OK;
    for (size_t i = v->nchunks; i-- > 0 && need > 0 && st == GPUMEM_OK;) {
        vchunk *c = &v->chunks[i];
        if ((c->off < hi && lo < c->off + c->len) || !chunk_idle(v, c))
            continue;
        uint64_t len = c->len;
        st = chunk_unmap(v, i, what);
        need = need > len ? need - len : 0;
    }
    return st;
}

/* ---- the operations ---- */

static gpumem_status vmm_alloc(gm_source *s, size_t bytes, bool grow, const char *what, uint64_t *addr, bool *oom)
{
    gm_vmm_source *v = vs_of(s);
    uint64_t n = ((uint64_t)bytes + EXTENT_ALIGN - 1) / EXTENT_ALIGN * EXTENT_ALIGN;
    varena *a = &v->arena[n <= GM_SOURCE_SMALL];
    if (n > a->size) {
        *oom = true;
        return GPUMEM_ERROR_OUT_OF_MEMORY;
    }
    pthread_mutex_lock(&v->mu);
    size_t best = a->nfree;
    uint64_t best_cost = UINT64_MAX, best_len = UINT64_MAX;
    for (size_t i = 0; i < a->nfree; i++) {
        const vrange *r = &a->free[i];
        if (r->len < n || (best_cost == 0 && r->len >= best_len))
            continue;
        uint64_t cost = unmapped_under(v, r->off, n);
        if ((cost == 0 || grow) && (cost < best_cost || (cost == best_cost && r->len < best_len))) {
            best = i;
            best_cost = cost;
            best_len = r->len;
        }
    }
    gpumem_status st = GPUMEM_OK;
    if (best == a->nfree) {
        *oom = grow; /* nothing will do: the reservation is full, or memory must be mapped */
        st = GPUMEM_ERROR_OUT_OF_MEMORY;
    } else if (best_cost != 0) {
        const vrange *r = &a->free[best];
        uint64_t lo = r->off, limit = r->off + r->len;
        st = swap_out(v, best_cost, lo, limit, what);
        if (st == GPUMEM_OK)
            st = map_under(v, lo, n, limit, what, oom);
    }
    if (st == GPUMEM_OK) {
        uint64_t off = a->free[best].off;
        range_take(a, best, n);
        for (size_t g = off / v->gran, end = (off + n - 1) / v->gran; g <= end; g++)
            v->busy[g]++;
        v->extents++;
        v->extent_bytes += n;
        *addr = v->base + off;
    }
    pthread_mutex_unlock(&v->mu);
    return st;
}

static gpumem_status vmm_free(gm_source *s, uint64_t addr, size_t bytes, const char *what)
{
    gm_vmm_source *v = vs_of(s);
    uint64_t n = ((uint64_t)bytes + EXTENT_ALIGN - 1) / EXTENT_ALIGN * EXTENT_ALIGN;
    uint64_t off = addr - v->base;
    varena *a = &v->arena[off >= v->arena[1].base];
    pthread_mutex_lock(&v->mu);
    for (size_t g = off / v->gran, end = (off + n - 1) / v->gran; g <= end; g++)
        v->busy[g]--;
    v->extents--;
    v->extent_bytes -= n;
    bool ok = range_put(a, off, n);
    pthread_mutex_unlock(&v->mu);
    /* Without room for the range its bytes stay unusable, never reused. */
    return ok ? GPUMEM_OK : gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", what);
}

static gpumem_status vmm_map(gm_source *s, uint64_t addr, size_t bytes, const char *what)
{
    gm_vmm_source *v = vs_of(s);
    bool oom = false;
    if (addr < v->base || addr - v->base > v->size || bytes > v->size - (addr - v->base) || bytes == 0)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: the range lies outside the reservation", what);
    pthread_mutex_lock(&v->mu);
    gpumem_status st = map_under(v, addr - v->base, bytes, addr - v->base + bytes, what, &oom);
    pthread_mutex_unlock(&v->mu);
    return st;
}

/* Unmaps idle chunks in [lo, hi), the highest first, until at most keep
 * idle mapped bytes remain (lock held). */
static gpumem_status unmap_idle(gm_vmm_source *v, uint64_t lo, uint64_t hi, uint64_t keep, const char *what)
{
    uint64_t idle = 0;
    for (size_t i = 0; i < v->nchunks; i++)
        if (v->chunks[i].off >= lo && v->chunks[i].off + v->chunks[i].len <= hi && chunk_idle(v, &v->chunks[i]))
            idle += v->chunks[i].len;
    gpumem_status st = GPUMEM_OK;
    for (size_t i = v->nchunks; i-- > 0 && idle > keep;) {
        vchunk *c = &v->chunks[i];
        if (c->off < lo || c->off + c->len > hi || !chunk_idle(v, c))
            continue;
        uint64_t len = c->len;
        gpumem_status one = chunk_unmap(v, i, what);
        st = gm_keep_first(st, one);
        if (one == GPUMEM_OK)
            idle -= len;
        else
            break; /* a driver that refuses one refuses the others */
    }
    return st;
}

static gpumem_status vmm_unmap(gm_source *s, uint64_t addr, size_t bytes, const char *what)
{
    gm_vmm_source *v = vs_of(s);
    pthread_mutex_lock(&v->mu);
    uint64_t lo = addr - v->base;
    gpumem_status st = unmap_idle(v, lo, lo + bytes, 0, what);
    pthread_mutex_unlock(&v->mu);
    return st;
}

static gpumem_status vmm_trim(gm_source *s, uint64_t keep, const char *what)
{
    gm_vmm_source *v = vs_of(s);
    pthread_mutex_lock(&v->mu);
    gpumem_status st = unmap_idle(v, 0, v->size, keep, what);
    pthread_mutex_unlock(&v->mu);
    return st;
}

static gpumem_status vmm_export_fd(gm_source *s, uint64_t addr, int *fd, uint64_t *chunk, size_t *chunk_bytes,
                                   const char *what)
{
    gm_vmm_source *v = vs_of(s);
    if (!v->s.cfg.exportable)
        return gm_error(GPUMEM_ERROR_INVALID_STATE, "%s: the pool was not made exportable", what);
    pthread_mutex_lock(&v->mu);
    size_t i = addr >= v->base ? chunk_upper(v, addr - v->base) : 0;
    gpumem_status st = GPUMEM_OK;
    if (i == 0 || addr - v->base >= v->chunks[i - 1].off + v->chunks[i - 1].len) {
        st = gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: no chunk of the pool holds address 0x%llx", what,
                      (unsigned long long)addr);
    } else {
        int out = -1;
        st = gm_drv_check(GM_DRV(mem_export_to_shareable_handle, v->s.ctx->dctx, &out, v->chunks[i - 1].h,
                                 GM_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
                          GM_OP_mem_export_to_shareable_handle, what);
        if (st == GPUMEM_OK) {
            *fd = out;
            *chunk = v->base + v->chunks[i - 1].off;
            *chunk_bytes = v->chunks[i - 1].len;
        }
    }
    pthread_mutex_unlock(&v->mu);
    return st;
}


/* ---- export (pool_ipc.c) ---- */

uint64_t gm_source_export_id(const void *salt)
{
    uint64_t id = 0;
    if (getrandom(&id, sizeof id, GRND_NONBLOCK) != sizeof id) {
        struct timespec t; /* no entropy yet: the clock and the process id tell sources apart well enough */
        clock_gettime(CLOCK_REALTIME, &t);
        id = ((uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec) ^ (uint64_t)getpid() << 40 ^
             (uint64_t)(uintptr_t)salt;
    }
    return id | 1; /* never 0 */
}

static gpumem_status not_exportable(const gm_source *s, const char *what)
{
    if (s->cfg.kind == GM_SOURCE_VMM && (s->ops->caps & GM_SOURCE_CAP_EXPORT))
        return GPUMEM_OK;
    return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: the pool was not made with handle_type "
                    "GPUMEM_POOL_HANDLE_POSIX_FD (a GPUMEM_POOL_SOURCE_VIRTUAL pool's props)", what);
}

void gm_source_vmm_describe(gm_source *s, gm_source_export_info *info)
{
    gm_vmm_source *v = vs_of(s);
    *info = (gm_source_export_info){.id = v->export_id, .reserved = v->size, .granularity = v->gran,
                                    .device = s->ctx->device};
}

gpumem_status gm_source_vmm_export_all(gm_source *s, const char *what, gm_source_chunk **out, size_t *count)
{
    gpumem_status st = not_exportable(s, what);
    if (st != GPUMEM_OK)
        return st;
    gm_vmm_source *v = vs_of(s);
    *out = NULL;
    *count = 0;
    pthread_mutex_lock(&v->mu);
    size_t n = v->nchunks;
    gm_source_chunk *c = n > 0 ? calloc(n, sizeof *c) : NULL;
    if (n > 0 && c == NULL)
        st = gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", what);
    size_t done = 0;
    for (; st == GPUMEM_OK && done < n; done++) {
        int fd = -1;
        char where[200];
        snprintf(where, sizeof where, "%s: exporting the chunk at offset %llu", what,
                 (unsigned long long)v->chunks[done].off);
        st = gm_drv_check(GM_DRV(mem_export_to_shareable_handle, s->ctx->dctx, &fd, v->chunks[done].h,
                                 GM_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
                          GM_OP_mem_export_to_shareable_handle, where);
        if (st == GPUMEM_OK)
            c[done] = (gm_source_chunk){.off = v->chunks[done].off, .len = v->chunks[done].len,
                                        .serial = v->chunks[done].serial, .fd = fd};
        else
            break;
    }
    pthread_mutex_unlock(&v->mu);
    if (st != GPUMEM_OK) {
        for (size_t i = 0; i < done; i++)
            close(c[i].fd);
        free(c);
        return st;
    }
    *out = c;
    *count = n;
    return GPUMEM_OK;
}

gpumem_status gm_source_vmm_locate(gm_source *s, uint64_t addr, uint64_t bytes, const char *what, uint64_t *off,
                                   uint64_t *first_serial, uint64_t *last_serial)
{
    gpumem_status st = not_exportable(s, what);
    if (st != GPUMEM_OK)
        return st;
    gm_vmm_source *v = vs_of(s);
    if (addr < v->base || bytes == 0 || addr - v->base > v->size || bytes > v->size - (addr - v->base))
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: the block lies outside the pool's reservation", what);
    uint64_t lo = addr - v->base, hi = lo + bytes;
    pthread_mutex_lock(&v->mu);
    size_t i = chunk_upper(v, lo);
    const vchunk *first = i > 0 && lo < v->chunks[i - 1].off + v->chunks[i - 1].len ? &v->chunks[i - 1] : NULL;
    size_t j = chunk_upper(v, hi - 1);
    const vchunk *last = j > 0 && hi - 1 < v->chunks[j - 1].off + v->chunks[j - 1].len ? &v->chunks[j - 1] : NULL;
    if (first == NULL || last == NULL)
        st = gm_error(GPUMEM_ERROR_INTERNAL, "%s: the block is not mapped", what);
    else {
        *off = lo;
        *first_serial = first->serial;
        *last_serial = last->serial;
    }
    pthread_mutex_unlock(&v->mu);
    return st;
}

static void vmm_location(const gm_source *s, gm_source_location *loc)
{
    *loc = (gm_source_location){GM_CU_MEM_LOCATION_TYPE_DEVICE, s->ctx->device};
}

static void vmm_usage(gm_source *s, gm_source_usage *u)
{
    gm_vmm_source *v = vs_of(s);
    pthread_mutex_lock(&v->mu);
    *u = (gm_source_usage){.extents = v->extents, .extent_bytes = v->extent_bytes, .mapped = v->mapped_bytes,
                           .reserved = v->size, .chunks = v->nchunks};
    pthread_mutex_unlock(&v->mu);
}

static void vmm_free_all(gm_vmm_source *v)
{
    free(v->arena[0].free);
    free(v->arena[1].free);
    free(v->busy);
    free(v->mapped);
    free(v->chunks);
    pthread_mutex_destroy(&v->mu);
    free(v);
}

static gpumem_status vmm_destroy(gm_source *s, const char *what)
{
    gm_vmm_source *v = vs_of(s);
    gpumem_status st = GPUMEM_OK;
    if (!gm_process_exiting()) {
        while (v->nchunks > 0 && st == GPUMEM_OK)
            st = chunk_unmap(v, v->nchunks - 1, what);
        if (st == GPUMEM_OK)
            st = gm_drv_check(GM_DRV(mem_address_free, v->s.ctx->dctx, v->base, v->size), GM_OP_mem_address_free,
                              what);
    }
    vmm_free_all(v);
    return st;
}

static const gm_source_ops vmm_ops = {
    .name = "virtual memory", .caps = GM_SOURCE_CAP_GROW, .alloc = vmm_alloc, .free = vmm_free,
    .map = vmm_map, .unmap = vmm_unmap, .trim = vmm_trim, .export_fd = vmm_export_fd,
    .location = vmm_location, .usage = vmm_usage, .destroy = vmm_destroy,
};

static const gm_source_ops vmm_export_ops = {
    .name = "virtual memory", .caps = GM_SOURCE_CAP_GROW | GM_SOURCE_CAP_EXPORT, .alloc = vmm_alloc,
    .free = vmm_free, .map = vmm_map, .unmap = vmm_unmap, .trim = vmm_trim, .export_fd = vmm_export_fd,
    .location = vmm_location, .usage = vmm_usage, .destroy = vmm_destroy,
};

gpumem_status gm_source_vmm_create(gpumem_context *ctx, const gm_source_config *cfg, const char *what,
                                   gm_source **out)
{
    gm_dctx *dctx = ctx->dctx;
    gm_cu_mem_alloc_prop prop;
    memset(&prop, 0, sizeof prop);
    prop.type = GM_CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location = (gm_cu_mem_location){GM_CU_MEM_LOCATION_TYPE_DEVICE, ctx->device};
    prop.requestedHandleTypes = cfg->exportable ? GM_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
                                                : GM_CU_MEM_HANDLE_TYPE_NONE;
    size_t gran = 0;
    int rc = GM_DRV(mem_get_allocation_granularity, dctx, &gran, &prop, GM_CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    if (rc == GM_CUDA_ERROR_NOT_SUPPORTED)
        return gm_error_driver(GPUMEM_ERROR_NOT_SUPPORTED, rc, "%s: the driver has no virtual memory management "
                               "for device %d (cuMemGetAllocationGranularity: CUDA_ERROR_NOT_SUPPORTED)", what,
                               ctx->device);
    gpumem_status st = gm_drv_check(rc, GM_OP_mem_get_allocation_granularity, what);
    if (st != GPUMEM_OK)
        return st;
    if (gran == 0 || (gran & (gran - 1)) != 0)
        return gm_error(GPUMEM_ERROR_DRIVER, "%s: the driver's allocation granularity %zu is not a power of two",
                        what, gran);
    uint64_t maximum = cfg->maximum;
    if (maximum == 0) {
        size_t total = 0;
        st = gm_drv_check(GM_DRV(device_total_mem, ctx->device, &total), GM_OP_device_total_mem, what);
        if (st != GPUMEM_OK)
            return st;
        maximum = total;
    }
    if (maximum > ((uint64_t)1 << 50))
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: props->maximum %llu is more than 2^50 bytes", what,
                        (unsigned long long)maximum);
    maximum = (maximum + gran - 1) / gran * gran;
    uint64_t small = maximum / 8 / gran * gran;
    if (small < gran)
        small = gran;
    gm_vmm_source *v = calloc(1, sizeof *v);
    if (v == NULL)
        return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", what);
    v->s = (gm_source){.ops = cfg->exportable ? &vmm_export_ops : &vmm_ops, .ctx = ctx, .cfg = *cfg};
    v->gran = gran;
    v->maximum = maximum;
    v->size = maximum + small;
    v->ngran = v->size / gran;
    v->prop = prop;
    if (cfg->exportable)
        v->export_id = gm_source_export_id(v);
    v->arena[0] = (varena){.base = 0, .size = maximum};
    v->arena[1] = (varena){.base = maximum, .size = small};
    pthread_mutex_init(&v->mu, NULL);
    v->busy = calloc(v->ngran, sizeof *v->busy);
    v->mapped = calloc(v->ngran, 1);
    if (v->busy == NULL || v->mapped == NULL || !range_put(&v->arena[0], 0, maximum) ||
        !range_put(&v->arena[1], maximum, small)) {
        vmm_free_all(v);
        return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", what);
    }
    rc = GM_DRV(mem_address_reserve, dctx, &v->base, v->size, 0);
    if (rc != 0) {
        char where[200];
        snprintf(where, sizeof where, "%s: reserving %zu bytes of address space", what, v->size);
        st = gm_drv_check(rc, GM_OP_mem_address_reserve, where);
        vmm_free_all(v);
        return st;
    }
    *out = &v->s;
    return GPUMEM_OK;
}
