/*
 * pool_ipc.c - a virtual-memory pool's memory in another process
 * (gpumem/pool_ipc.h): the exporter's send and allocation handles, and the
 * importer's reservation, into which each received chunk is mapped once at
 * its offset in the exporter's reservation, so that an allocation's offset
 * is the same on both sides.  An import keeps its mapped chunks sorted by
 * offset; opening an allocation checks the handle against them and makes
 * no driver call.
 */
#include "config.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bytes.h"
#include "context.h"
#include "driver.h"
#include "error.h"
#include "gpumem/pool_ipc.h"
#include "handles.h"
#include "pool.h"
#include "pool_ipc.h"

enum {
    H_MAGIC = 0,
    H_VERSION = 8,
    H_SIZE = 12,
    H_ID = 16,
    H_OFFSET = 24,
    H_BYTES = 32,
    H_FIRST = 40,
    H_LAST = 48,
    H_KIND = 56,
    H_ZERO = 57, /* to the end (KIND_VMM), to H_DATA (KIND_ASYNC) */
    H_DATA = 64, /* KIND_ASYNC: the driver's CUmemPoolPtrExportData */
    KIND_VMM = 1,
    KIND_ASYNC = 2
};
/* KIND_ASYNC: H_OFFSET is the offset in the driver's allocation, H_FIRST its size, H_LAST zero. */
#define EXTENT_MAX ((uint64_t)1 << 51)
_Static_assert(GPUMEM_POOL_IPC_HANDLE_SIZE == 128, "the handle's table");

static const char handle_magic[8] = {'G', 'P', 'U', 'M', 'E', 'M', 'P', 'A'};

typedef struct ichunk {
    uint64_t off, len, serial;
} ichunk;

/* A driver's allocation imported from a stream-ordered pool (cuMemPoolImportPointer). */
typedef struct iptr {
    gm_cu_mem_pool_ptr_export_data data;
    gm_cu_deviceptr ptr;
    uint64_t size;
} iptr;

struct gpumem_pool_import {
    gm_handle h; /* first: the lifecycle check */
    gpumem_context *ctx; /* retained */
    pthread_mutex_t mu;  /* guards the chunks */
    gm_ipc_pool_info info;
    gm_cu_deviceptr base;
    ichunk *chunks; /* sorted by off, disjoint */
    size_t n;
    gm_dmempool *dpool; /* a stream-ordered pool's import (info.granularity 0), else NULL */
    iptr *ptrs;         /* its allocations imported, each once */
    size_t nptrs, cap;
};

/* ---- the exporter ---- */

/* A stream-ordered pool's send: its one file descriptor. */
static gpumem_status send_async(gm_source *src, int sock, int stream, const char *what)
{
    gm_source_chunk c = {.fd = -1};
    gm_ipc_pool_info info = {0};
    gpumem_status st = gm_source_async_export_pool(src, what, &c.fd, &info.id);
    if (st != GPUMEM_OK)
        return st;
    st = gm_device_pci_ids(what, src->ctx->device, info.pci);
    if (st == GPUMEM_OK)
        st = gm_pool_ipc_write(sock, stream, &info, &c, 1, what);
    close(c.fd);
    return st;
}

GPUMEM_API gpumem_status gpumem_pool_ipc_send(gpumem_pool *pool, int socket_fd)
{
    const char *what = "gpumem_pool_ipc_send";
    gm_pool *p = gm_pool_of_device(pool);
    gpumem_status st = gm_pool_core_check(p, GM_POOL_DEVICE, what, "pool");
    int stream = 0;
    if (st == GPUMEM_OK)
        st = gm_pool_ipc_socket(socket_fd, what, &stream);
    if (st != GPUMEM_OK)
        return st;
    gm_source *src = gm_pool_core_source(p);
    gm_ipc_pool_info info = {0};
    gm_source_chunk *c = NULL;
    size_t n = 0;
    if (src->cfg.kind == GM_SOURCE_ASYNC)
        return send_async(src, socket_fd, stream, what);
    st = gm_source_vmm_export_all(src, what, &c, &n);
    if (st != GPUMEM_OK)
        return st;
    gm_source_export_info ex;
    gm_source_vmm_describe(src, &ex);
    info = (gm_ipc_pool_info){.id = ex.id, .reserved = ex.reserved, .granularity = ex.granularity};
    st = gm_device_pci_ids(what, ex.device, info.pci);
    if (st == GPUMEM_OK)
        st = gm_pool_ipc_write(socket_fd, stream, &info, c, n, what);
    gm_pool_ipc_chunks_free(c, n);
    return st;
}

static void handle_head(unsigned char *out, uint64_t id, uint64_t off, uint64_t bytes, uint64_t first,
                        uint64_t last, int kind)
{
    memset(out, 0, GPUMEM_POOL_IPC_HANDLE_SIZE);
    memcpy(out + H_MAGIC, handle_magic, sizeof handle_magic);
    wr32(out + H_VERSION, GPUMEM_POOL_IPC_VERSION);
    wr32(out + H_SIZE, GPUMEM_POOL_IPC_HANDLE_SIZE);
    wr64(out + H_ID, id);
    wr64(out + H_OFFSET, off);
    wr64(out + H_BYTES, bytes);
    wr64(out + H_FIRST, first);
    wr64(out + H_LAST, last);
    out[H_KIND] = (unsigned char)kind;
}

/* A stream-ordered pool's allocation: the driver's allocation under it, exported. */
static gpumem_status handle_async(gm_source *src, uint64_t addr, size_t bytes, gpumem_pool_ipc_handle *handle,
                                  const char *what)
{
    gm_source_async_block b;
    gpumem_status st = gm_source_async_export_block(src, addr, bytes, what, &b);
    if (st != GPUMEM_OK)
        return st;
    unsigned char out[GPUMEM_POOL_IPC_HANDLE_SIZE];
    handle_head(out, b.id, b.off, bytes, b.extent, 0, KIND_ASYNC);
    memcpy(out + H_DATA, b.data.reserved, sizeof b.data.reserved);
    memcpy(handle->bytes, out, sizeof out);
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_allocation_ipc_handle(const gpumem_allocation *alloc, gpumem_pool_ipc_handle *handle)
{
    const char *what = "gpumem_allocation_ipc_handle";
    GM_CHECK_NULL(handle);
    gm_pool *p = NULL;
    uint64_t addr = 0, off = 0, first = 0, last = 0;
    size_t bytes = 0;
    gpumem_status st = gm_pool_token_block(alloc, what, &p, &addr, &bytes);
    if (st != GPUMEM_OK)
        return st;
    if (bytes == 0)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: 'alloc' has size 0: it has no memory to share", what);
    gm_source *src = gm_pool_core_source(p);
    if (src->cfg.kind == GM_SOURCE_ASYNC)
        return handle_async(src, addr, bytes, handle, what);
    st = gm_source_vmm_locate(src, addr, bytes, what, &off, &first, &last);
    if (st != GPUMEM_OK)
        return st;
    gm_source_export_info ex;
    gm_source_vmm_describe(src, &ex);
    unsigned char out[GPUMEM_POOL_IPC_HANDLE_SIZE];
    handle_head(out, ex.id, off, bytes, first, last, KIND_VMM);
    memcpy(handle->bytes, out, sizeof out);
    return GPUMEM_OK;
}

/* ---- the importer ---- */

/* Imports and maps chunk k at its offset, read-write for the context's
 * device; k's fd is closed whatever happens. */
static gpumem_status map_chunk(gpumem_pool_import *im, gm_source_chunk *k, const char *what)
{
    gm_dctx *dctx = im->ctx->dctx;
    char where[200];
    snprintf(where, sizeof where, "%s: the chunk at offset %" PRIu64, what, k->off);
    gm_cu_mem_handle h = 0;
    gpumem_status st = gm_drv_check(GM_DRV(mem_import_from_shareable_handle, dctx, &h, (void *)(intptr_t)k->fd,
                                           GM_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
                                    GM_OP_mem_import_from_shareable_handle, where);
    close(k->fd);
    k->fd = -1;
    if (st != GPUMEM_OK)
        return st;
    st = gm_drv_check(GM_DRV(mem_map, dctx, im->base + k->off, k->len, h), GM_OP_mem_map, where);
    if (st == GPUMEM_OK) {
        gm_cu_mem_access_desc d = {{GM_CU_MEM_LOCATION_TYPE_DEVICE, im->ctx->device},
                                   GM_CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
        st = gm_drv_check(GM_DRV(mem_set_access, dctx, im->base + k->off, k->len, &d, 1), GM_OP_mem_set_access,
                          where);
        if (st != GPUMEM_OK)
            gm_error_quietly(gm_drv_check(GM_DRV(mem_unmap, dctx, im->base + k->off, k->len), GM_OP_mem_unmap, where));
    }
    /* The mapping keeps the memory: the handle goes at once. */
    if (st != GPUMEM_OK) {
        gm_error_quietly(gm_drv_check(GM_DRV(mem_release, dctx, h), GM_OP_mem_release, where));
        return st;
    }
    st = gm_drv_check(GM_DRV(mem_release, dctx, h), GM_OP_mem_release, where);
    if (st != GPUMEM_OK)
        gm_error_quietly(gm_drv_check(GM_DRV(mem_unmap, dctx, im->base + k->off, k->len), GM_OP_mem_unmap, where));
    return st;
}

static gpumem_status unmap_chunk(gpumem_pool_import *im, const ichunk *c, const char *what)
{
    if (gm_process_exiting())
        return GPUMEM_OK;
    return gm_drv_check(GM_DRV(mem_unmap, im->ctx->dctx, im->base + c->off, c->len), GM_OP_mem_unmap, what);
}

/* Brings the import's chunks to the send's c[0..n) (im->mu held): those
 * it no longer holds go, the new ones are mapped.  Every fd of c is closed. */
static gpumem_status reconcile(gpumem_pool_import *im, gm_source_chunk *c, size_t n, const char *what)
{
    ichunk *next = n + im->n > 0 ? calloc(n + im->n, sizeof *next) : NULL;
    if (n + im->n > 0 && next == NULL) {
        gm_pool_ipc_chunks_free(c, n);
        return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", what);
    }
    size_t m = 0, j = 0;
    gpumem_status st = GPUMEM_OK;
    /* Keep the chunks in both; unmap the others (a failed unmap keeps its chunk mapped and listed). */
    for (size_t i = 0; i < im->n; i++) {
        const ichunk *o = &im->chunks[i];
        while (j < n && c[j].off < o->off)
            j++;
        if (j < n && c[j].off == o->off && c[j].len == o->len && c[j].serial == o->serial) {
            close(c[j].fd);
            c[j].fd = -1;
            next[m++] = *o;
            continue;
        }
        gpumem_status one = unmap_chunk(im, o, what);
        if (one != GPUMEM_OK)
            next[m++] = *o;
        st = gm_keep_first(st, one);
    }
    /* Map the new ones, unless a kept chunk overlaps (the failed unmaps). */
    size_t kept = m;
    for (size_t i = 0; i < n; i++) {
        if (c[i].fd < 0)
            continue;
        bool overlap = false;
        for (size_t q = 0; q < kept && !overlap; q++)
            overlap = next[q].off < c[i].off + c[i].len && c[i].off < next[q].off + next[q].len;
        if (overlap || st != GPUMEM_OK) {
            close(c[i].fd);
            c[i].fd = -1;
            continue;
        }
        gpumem_status one = map_chunk(im, &c[i], what);
        if (one == GPUMEM_OK)
            next[m++] = (ichunk){c[i].off, c[i].len, c[i].serial};
        st = gm_keep_first(st, one);
    }
    gm_pool_ipc_chunks_free(c, n);
    /* sorted by offset again: an insertion sort of the kept and new ones */
    for (size_t a = 1; a < m; a++) {
        ichunk x = next[a];
        size_t b = a;
        for (; b > 0 && next[b - 1].off > x.off; b--)
            next[b] = next[b - 1];
        next[b] = x;
    }
    free(im->chunks);
    im->chunks = next;
    im->n = m;
    return st;
}

static gpumem_status import_end(gpumem_pool_import *im, const char *what)
{
    gpumem_status st = GPUMEM_OK;
    /* a stream-ordered pool's: the imported allocations go before the pool (the driver's order) */
    for (size_t i = 0; i < im->nptrs && !gm_process_exiting(); i++)
        st = gm_keep_first(st, gm_drv_check(GM_DRV(mem_free, im->ctx->dctx, im->ptrs[i].ptr), GM_OP_mem_free, what));
    if (im->dpool != NULL && !gm_process_exiting())
        st = gm_keep_first(st, gm_drv_check(GM_DRV(mem_pool_destroy, im->ctx->dctx, im->dpool),
                                            GM_OP_mem_pool_destroy, what));
    free(im->ptrs);
    for (size_t i = 0; i < im->n; i++)
        st = gm_keep_first(st, unmap_chunk(im, &im->chunks[i], what));
    if (im->base != 0 && !gm_process_exiting())
        st = gm_keep_first(st, gm_drv_check(GM_DRV(mem_address_free, im->ctx->dctx, im->base,
                                                   (size_t)im->info.reserved),
                                            GM_OP_mem_address_free, what));
    st = gm_keep_first(st, gm_context_release_as(im->ctx, what));
    free(im->chunks);
    pthread_mutex_destroy(&im->mu);
    gm_handle_free(im);
    return st;
}

/* A stream-ordered pool from its file descriptor (the caller closes it),
 * readable and writable by the context's device. */
static gpumem_status import_pool(gpumem_pool_import *im, int fd, const char *what)
{
    gm_dctx *dctx = im->ctx->dctx;
    gm_dmempool *pool = NULL;
    gpumem_status st = gm_drv_check(GM_DRV(mem_pool_import_from_shareable_handle, dctx, &pool, (void *)(intptr_t)fd,
                                           GM_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
                                    GM_OP_mem_pool_import_from_shareable_handle, what);
    if (st != GPUMEM_OK)
        return st;
    im->dpool = pool;
    gm_cu_mem_access_desc d = {{GM_CU_MEM_LOCATION_TYPE_DEVICE, im->ctx->device},
                               GM_CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    return gm_drv_check(GM_DRV(mem_pool_set_access, dctx, pool, &d, 1), GM_OP_mem_pool_set_access, what);
}

/* Receives a send from sock: checked, of the context's device. */
static gpumem_status receive(gpumem_context *ctx, int sock, const char *what, gm_ipc_pool_info *info,
                             gm_source_chunk **c, size_t *n)
{
    int stream = 0;
    gpumem_status st = gm_pool_ipc_socket(sock, what, &stream);
    if (st != GPUMEM_OK)
        return st;
    int32_t pci[3];
    st = gm_device_pci_ids(what, ctx->device, pci);
    if (st == GPUMEM_OK)
        st = gm_pool_ipc_read(sock, stream, what, info, c, n);
    if (st == GPUMEM_OK && memcmp(pci, info->pci, sizeof pci) != 0) {
        gm_pool_ipc_chunks_free(*c, *n);
        *c = NULL;
        st = gm_error(GPUMEM_ERROR_CONTEXT_MISMATCH, "%s: the pool's memory is on the device at PCI %04x:%02x:%02x, "
                      "and the context's device %d is at %04x:%02x:%02x", what, (unsigned)info->pci[0],
                      (unsigned)info->pci[1], (unsigned)info->pci[2], ctx->device, (unsigned)pci[0],
                      (unsigned)pci[1], (unsigned)pci[2]);
    }
    return st;
}

GPUMEM_API gpumem_status gpumem_pool_ipc_open(gpumem_context *ctx, int socket_fd, gpumem_pool_import **import)
{
    const char *what = "gpumem_pool_ipc_open";
    GM_CHECK_NULL(import);
    gpumem_status st = GPUMEM_OK;
    ctx = gm_context_use(ctx, what, &st);
    if (st != GPUMEM_OK)
        return st;
    gm_ipc_pool_info info;
    gm_source_chunk *c = NULL;
    size_t n = 0;
    st = receive(ctx, socket_fd, what, &info, &c, &n);
    if (st != GPUMEM_OK)
        return st;
    gpumem_pool_import *im = gm_handle_new_zeroed(GM_HANDLE_POOL_IMPORT, sizeof *im);
    if (im == NULL) {
        gm_pool_ipc_chunks_free(c, n);
        return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", what);
    }
    gpumem_context_retain(ctx);
    im->ctx = ctx;
    im->info = info;
    pthread_mutex_init(&im->mu, NULL);
    if (info.granularity == 0) { /* a stream-ordered pool */
        st = import_pool(im, c[0].fd, what);
        gm_pool_ipc_chunks_free(c, n);
        if (st != GPUMEM_OK)
            return gm_keep_first(st, import_end(im, what));
        *import = im;
        return GPUMEM_OK;
    }
    char where[200];
    snprintf(where, sizeof where, "%s: reserving %" PRIu64 " bytes of address space", what, info.reserved);
    st = gm_drv_check(GM_DRV(mem_address_reserve, ctx->dctx, &im->base, (size_t)info.reserved, 0),
                      GM_OP_mem_address_reserve, where);
    if (st != GPUMEM_OK) {
        im->base = 0;
        gm_pool_ipc_chunks_free(c, n);
    } else {
        st = reconcile(im, c, n, what);
    }
    if (st != GPUMEM_OK)
        return gm_keep_first(st, import_end(im, what));
    *import = im;
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_pool_import_update(gpumem_pool_import *import, int socket_fd)
{
    const char *what = "gpumem_pool_import_update";
    GM_CHECK_HANDLE(import);
    gm_ipc_pool_info info;
    gm_source_chunk *c = NULL;
    size_t n = 0;
    /* received without the lock: opening allocations goes on meanwhile */
    gpumem_status st = receive(import->ctx, socket_fd, what, &info, &c, &n);
    if (st != GPUMEM_OK)
        return st;
    if (info.id != import->info.id || info.reserved != import->info.reserved ||
        info.granularity != import->info.granularity) {
        gm_pool_ipc_chunks_free(c, n);
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: the send is of %s than the import's", what,
                        info.id != import->info.id ? "another pool" : "another reservation size or granularity");
    }
    if (import->dpool != NULL || info.granularity == 0) { /* a stream-ordered pool's: nothing to map */
        gm_pool_ipc_chunks_free(c, n);
        return GPUMEM_OK;
    }
    pthread_mutex_lock(&import->mu);
    st = reconcile(import, c, n, what);
    pthread_mutex_unlock(&import->mu);
    return st;
}

/* The index of the first chunk whose off is above off. */
static size_t chunk_upper(const gpumem_pool_import *im, uint64_t off)
{
    size_t lo = 0, hi = im->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (im->chunks[mid].off <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static gpumem_status bad_handle(const char *what, const char *field, uint64_t value)
{
    return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: 'handle' is not a valid pool IPC handle: %s (%" PRIu64 ")",
                    what, field,
                    value);
}

/* The driver's allocation that data names, imported once (import->mu held). */
static gpumem_status import_pointer(gpumem_pool_import *im, const unsigned char *data, const char *what,
                                    const iptr **out)
{
    for (size_t i = 0; i < im->nptrs; i++)
        if (memcmp(im->ptrs[i].data.reserved, data, sizeof im->ptrs[i].data.reserved) == 0) {
            *out = &im->ptrs[i];
            return GPUMEM_OK;
        }
    if (im->nptrs == im->cap) {
        size_t cap = im->cap ? 2 * im->cap : 8;
        iptr *p = realloc(im->ptrs, cap * sizeof *p);
        if (p == NULL)
            return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", what);
        im->ptrs = p;
        im->cap = cap;
    }
    iptr *e = &im->ptrs[im->nptrs];
    memset(e, 0, sizeof *e);
    memcpy(e->data.reserved, data, sizeof e->data.reserved);
    gm_dctx *dctx = im->ctx->dctx;
    gpumem_status st = gm_drv_check(GM_DRV(mem_pool_import_pointer, dctx, &e->ptr, im->dpool, &e->data),
                                    GM_OP_mem_pool_import_pointer, what);
    if (st != GPUMEM_OK)
        return st;
    gm_cu_deviceptr base = 0;
    size_t size = 0; /* the driver's own bounds: the handle's are untrusted */
    st = gm_drv_check(GM_DRV(mem_get_address_range, dctx, &base, &size, e->ptr), GM_OP_mem_get_address_range, what);
    if (st != GPUMEM_OK) {
        gm_error_quietly(GM_DRV(mem_free, dctx, e->ptr));
        return st;
    }
    e->size = size;
    im->nptrs++;
    *out = e;
    return GPUMEM_OK;
}

/* A stream-ordered pool's allocation: bounds checked against the driver's allocation it lies in. */
static gpumem_status open_async(gpumem_pool_import *im, const unsigned char *in, uint64_t *pointer, size_t *size,
                                const char *what)
{
    uint64_t off = rd64(in + H_OFFSET), bytes = rd64(in + H_BYTES), extent = rd64(in + H_FIRST);
    if (rd64(in + H_LAST) != 0)
        return bad_handle(what, "its bytes 48 to 55 are not zero", rd64(in + H_LAST));
    if (extent == 0 || extent > EXTENT_MAX || bytes > extent || off > extent - bytes)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: 'handle' is not a valid pool IPC handle: its %" PRIu64
                        " bytes at offset %" PRIu64 " do not lie in the driver's allocation of %" PRIu64 " bytes",
                        what, bytes, off, extent);
    pthread_mutex_lock(&im->mu);
    const iptr *e = NULL;
    gpumem_status st = import_pointer(im, in + H_DATA, what, &e);
    uint64_t base = e != NULL ? e->ptr : 0, real = e != NULL ? e->size : 0;
    pthread_mutex_unlock(&im->mu);
    if (st != GPUMEM_OK)
        return st;
    if (real != extent)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: 'handle' is not a valid pool IPC handle: it says the "
                        "driver's allocation has %" PRIu64 " bytes, and the driver's import has %" PRIu64, what,
                        extent, real);
    *pointer = base + off;
    if (size != NULL)
        *size = (size_t)bytes;
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_pool_import_open_allocation(gpumem_pool_import *import,
                                                            const gpumem_pool_ipc_handle *handle,
                                                            uint64_t *pointer, size_t *size)
{
    const char *what = "gpumem_pool_import_open_allocation";
    GM_CHECK_HANDLE(import);
    GM_CHECK_NULL(handle);
    GM_CHECK_NULL(pointer);
    const unsigned char *in = handle->bytes;
    if (memcmp(in + H_MAGIC, handle_magic, sizeof handle_magic) != 0)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: 'handle' is not a pool IPC handle: the magic is not "
                        "\"GPUMEMPA\" (bytes of another kind, or damaged)", what);
    if (rd32(in + H_VERSION) != GPUMEM_POOL_IPC_VERSION)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: 'handle' has version %" PRIu32 ", and this library reads "
                        "version %d", what, rd32(in + H_VERSION), GPUMEM_POOL_IPC_VERSION);
    if (rd32(in + H_SIZE) != GPUMEM_POOL_IPC_HANDLE_SIZE)
        return bad_handle(what, "its size field is not GPUMEM_POOL_IPC_HANDLE_SIZE", rd32(in + H_SIZE));
    int kind = import->info.granularity == 0 ? KIND_ASYNC : KIND_VMM;
    if (in[H_KIND] != KIND_VMM && in[H_KIND] != KIND_ASYNC)
        return bad_handle(what, "its kind (byte 56) is neither 1 (a virtual-memory pool's allocation) nor 2 (a "
                          "stream-ordered pool's)", in[H_KIND]);
    if (in[H_KIND] != kind)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: 'handle' is of kind %d, an allocation of %s, and the import "
                        "is of %s", what, in[H_KIND], in[H_KIND] == KIND_VMM ? "a virtual-memory pool" :
                        "the driver's stream-ordered pool", kind == KIND_VMM ? "a virtual-memory pool" :
                        "the driver's stream-ordered pool");
    for (size_t i = H_ZERO; i < (kind == KIND_VMM ? GPUMEM_POOL_IPC_HANDLE_SIZE : H_DATA); i++)
        if (in[i] != 0)
            return bad_handle(what, kind == KIND_VMM ? "its reserved bytes 57 to 127 are not zero: byte" :
                              "its reserved bytes 57 to 63 are not zero: byte", i);
    uint64_t id = rd64(in + H_ID), off = rd64(in + H_OFFSET), bytes = rd64(in + H_BYTES);
    uint64_t first = rd64(in + H_FIRST), last = rd64(in + H_LAST);
    if (id != import->info.id)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: 'handle' names another pool (id 0x%016" PRIx64 ") than the "
                        "import's (0x%016" PRIx64 ")", what, id, import->info.id);
    if (bytes == 0)
        return bad_handle(what, "its size is 0", 0);
    if (kind == KIND_ASYNC)
        return open_async(import, in, pointer, size, what);
    if (bytes > SIZE_MAX || off > import->info.reserved || bytes > import->info.reserved - off)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: 'handle' is not a valid pool IPC handle: its %" PRIu64
                        " bytes at "
                        "offset %" PRIu64 " reach past the pool's reservation of %" PRIu64 " bytes", what, bytes, off,
                        import->info.reserved);
    pthread_mutex_lock(&import->mu);
    /* every byte mapped, by chunks that touch each other */
    size_t i = chunk_upper(import, off), k = i > 0 ? i - 1 : 0;
    uint64_t end = off + bytes;
    bool mapped = i > 0 && off < import->chunks[k].off + import->chunks[k].len;
    while (mapped && import->chunks[k].off + import->chunks[k].len < end) {
        if (k + 1 >= import->n || import->chunks[k + 1].off != import->chunks[k].off + import->chunks[k].len)
            mapped = false;
        else
            k++;
    }
    bool same = mapped && import->chunks[i - 1].serial == first && import->chunks[k].serial == last;
    uint64_t base = import->base;
    pthread_mutex_unlock(&import->mu);
    if (!mapped || !same)
        return gm_error(GPUMEM_ERROR_INVALID_STATE, "%s: the import %s the %" PRIu64 " bytes at offset %" PRIu64
                        " of 'handle': the exporter's pool mapped them after its last send (send again with "
                        "gpumem_pool_ipc_send and call gpumem_pool_import_update)", what,
                        !mapped ? "does not map all of" : "maps older chunks under", bytes, off);
    *pointer = base + off;
    if (size != NULL)
        *size = (size_t)bytes;
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_pool_import_close(gpumem_pool_import *import)
{
    if (import == NULL)
        return GPUMEM_OK;
    GM_END_HANDLE(import);
    return import_end(import, "gpumem_pool_import_close");
}
