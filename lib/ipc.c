/*
 * ipc.c - CUDA IPC: an array's handle as plain bytes (gpumem_ipc_get_handle)
 * and an array over another process's memory (gpumem_ipc_open).  The byte
 * layout is gpumem/ipc.h's table; the opened array is a foreign array made by
 * gpumem_as_cuda_array, whose release closes the mapping.
 */
#include "config.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "bytes.h"
#include "cai.h"
#include "context.h"
#include "copy_engine.h"
#include "driver.h"
#include "dtype.h"
#include "error.h"
#include "gpumem/interop.h"
#include "gpumem/ipc.h"
#include "layout.h"
#include "pointer.h"

/* The byte layout (gpumem/ipc.h). */
enum {
    OFF_MAGIC = 0,
    OFF_VERSION = 8,
    OFF_SIZE = 12,
    OFF_PID = 16,
    OFF_NONCE = 24,
    OFF_CU_HANDLE = 32,
    OFF_PCI = 96, /* domain, bus, device */
    OFF_ORDINAL = 108,
    OFF_OFFSET = 112,
    OFF_ALLOC_SIZE = 120,
    OFF_NDIM = 128,
    OFF_ITEMSIZE = 132,
    OFF_SHAPE = 136,
    OFF_STRIDES = OFF_SHAPE + 8 * GPUMEM_MAX_NDIM,
    OFF_TYPESTR = OFF_STRIDES + 8 * GPUMEM_MAX_NDIM,
    TYPESTR_BYTES = 24,
    OFF_DESCR_LEN = OFF_TYPESTR + TYPESTR_BYTES,
    OFF_DESCR = OFF_DESCR_LEN + 4,
    DESCR_BYTES = GPUMEM_IPC_HANDLE_SIZE - OFF_DESCR
};
_Static_assert(OFF_STRIDES == 392 && OFF_TYPESTR == 648 && OFF_DESCR == 676 && DESCR_BYTES == 1372,
               "the layout of gpumem/ipc.h");
_Static_assert(GM_CU_IPC_HANDLE_SIZE == 64, "CUipcMemHandle is 64 bytes");

static const char ipc_magic[8] = {'G', 'P', 'U', 'M', 'E', 'M', 'I', 'P'};

/* ---- this process ----------------------------------------------------------------------- */

/* A random number of this process: with the process id, it tells the
 * exporting process apart from every other one, also across PID namespaces.
 * A forked child keeps it but has another process id. */
static uint64_t process_nonce;
static pthread_once_t nonce_once = PTHREAD_ONCE_INIT;

static void make_nonce(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    uint64_t x = (uint64_t)t.tv_sec * UINT64_C(1000000000) + (uint64_t)t.tv_nsec;
    x ^= (uint64_t)getpid() << 32 ^ (uint64_t)(uintptr_t)&process_nonce;
    /* splitmix64's finalizer spreads the bits */
    x += UINT64_C(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    process_nonce = (x ^ (x >> 31)) | 1;
}

static uint64_t nonce(void)
{
    pthread_once(&nonce_once, make_nonce);
    return process_nonce;
}

/* ---- gpumem_ipc_get_handle ---------------------------------------------------------------- */

GPUMEM_API gpumem_status gpumem_ipc_get_handle(const gpumem_array *array, gpumem_ipc_handle *handle)
{
    const char *what = "gpumem_ipc_get_handle";
    GM_CHECK_HANDLE(array);
    GM_CHECK_NULL(handle);
    const gpumem_array *a = array;
    if (a->kind != GPUMEM_MEMORY_DEVICE && a->kind != GPUMEM_MEMORY_FOREIGN)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE,
                        "%s: only device memory has IPC handles, and the array is %s memory", what,
                        a->kind == GPUMEM_MEMORY_MANAGED ? "managed" : "host-side");
    if (gm_array_size(a) == 0)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: the array is empty: it has no memory to share", what);

    /* typestr and descr as the CUDA Array Interface writes them, the descr
     * straight into the handle's bytes */
    unsigned char out[GPUMEM_IPC_HANDLE_SIZE];
    memset(out, 0, sizeof out);
    if (gm_dtype_is_record(a->dtype)) {
        /* a record's descr goes into the handle: one too long for it, or
         * none at all, is the dtype's fault (gpumem/ipc.h), not a buffer's */
        char where[96];
        snprintf(where, sizeof where, "%s: the array's record dtype", what);
        gpumem_status dst = gm_dtype_descr(where, a->dtype, (char *)out + OFF_DESCR, DESCR_BYTES);
        if (dst == GPUMEM_ERROR_INVALID_VALUE)
            return gm_error(GPUMEM_ERROR_INVALID_DTYPE,
                            "%s: the array's record dtype has a description (descr) of more than the %d characters "
                            "an IPC handle holds",
                            what, (int)DESCR_BYTES - 1);
        if (dst != GPUMEM_OK)
            return dst;
    }
    gpumem_cuda_array_interface desc = {.size = sizeof desc,
                                        .descr_buffer = (char *)out + OFF_DESCR,
                                        .descr_buffer_size = DESCR_BYTES};
    gpumem_status st = gm_array_interface(what, a, NULL, &desc);
    if (st != GPUMEM_OK)
        return st;

    gpumem_pointer_info info = {.size = sizeof info};
    int is_cuda = 0;
    st = gm_pointer_query(what, a->dev, &is_cuda, &info);
    if (st != GPUMEM_OK)
        return st;
    if (info.kind != GPUMEM_POINTER_DEVICE || !info.ipc_capable)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE,
                        "%s: the memory at 0x%" PRIx64 " is %s, which has no IPC handle (only cuMemAlloc memory has)",
                        what, a->dev,
                        info.kind == GPUMEM_POINTER_UNKNOWN   ? "not memory the driver knows"
                        : info.kind == GPUMEM_POINTER_DEVICE  ? "device memory that is not from cuMemAlloc"
                        : info.kind == GPUMEM_POINTER_MANAGED ? "managed memory"
                                                              : "host memory");
    int32_t pci[3];
    if ((st = gm_device_pci_ids(what, a->ctx->device, pci)) != GPUMEM_OK)
        return st;
    gm_cu_ipc_mem_handle cu_handle;
    st = gm_drv_check(GM_DRV(ipc_get_mem_handle, a->ctx->dctx, &cu_handle, info.range_start),
                      GM_OP_ipc_get_mem_handle, what);
    if (st != GPUMEM_OK)
        return st;

    memcpy(out + OFF_MAGIC, ipc_magic, sizeof ipc_magic);
    wr32(out + OFF_VERSION, GPUMEM_IPC_VERSION);
    wr32(out + OFF_SIZE, GPUMEM_IPC_HANDLE_SIZE);
    wr64(out + OFF_PID, (uint64_t)getpid());
    wr64(out + OFF_NONCE, nonce());
    memcpy(out + OFF_CU_HANDLE, &cu_handle, sizeof cu_handle);
    for (int i = 0; i < 3; i++)
        wr32(out + OFF_PCI + 4 * i, (uint32_t)pci[i]);
    wr32(out + OFF_ORDINAL, (uint32_t)a->ctx->device);
    wr64(out + OFF_OFFSET, a->dev - info.range_start);
    wr64(out + OFF_ALLOC_SIZE, info.range_size);
    wr32(out + OFF_NDIM, (uint32_t)a->ndim);
    wr32(out + OFF_ITEMSIZE, (uint32_t)a->itemsize);
    for (int i = 0; i < a->ndim; i++) {
        wr64(out + OFF_SHAPE + 8 * i, (uint64_t)a->shape[i]);
        wr64(out + OFF_STRIDES + 8 * i, (uint64_t)a->strides[i]);
    }
    size_t tlen = strlen(desc.typestr);
    if (tlen >= TYPESTR_BYTES)
        return gm_error(GPUMEM_ERROR_INVALID_DTYPE, "%s: the typestr '%s' is too long", what, desc.typestr);
    memcpy(out + OFF_TYPESTR, desc.typestr, tlen);
    size_t dlen = desc.descr != NULL ? strlen(desc.descr) : 0;
    wr32(out + OFF_DESCR_LEN, (uint32_t)dlen);
    memcpy(handle->bytes, out, sizeof out);
    return GPUMEM_OK;
}

/* ---- decoding ---------------------------------------------------------------------------- */

typedef struct decoded {
    uint64_t pid, nonce;
    gm_cu_ipc_mem_handle cu;
    int32_t pci[3];
    int ordinal;
    uint64_t offset, alloc_size;
    int ndim;
    size_t itemsize;
    int64_t shape[GPUMEM_MAX_NDIM];
    int64_t strides[GPUMEM_MAX_NDIM];
    char typestr[TYPESTR_BYTES];
    char descr[DESCR_BYTES];
    bool has_descr;
    uint64_t below, above; /* the elements' bytes reach from offset - below to offset + above */
} decoded;

static gpumem_status bad(const char *what, const char *fmt_field, uint64_t value)
{
    return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: not a valid IPC handle: %s (%" PRIu64 ")", what, fmt_field,
                    value);
}

static gpumem_status decode(const char *what, const unsigned char *in, decoded *d)
{
    if (memcmp(in + OFF_MAGIC, ipc_magic, sizeof ipc_magic) != 0)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE,
                        "%s: not an IPC handle: the magic is not \"GPUMEMIP\" (bytes of another kind, or damaged)",
                        what);
    uint32_t version = rd32(in + OFF_VERSION);
    if (version != GPUMEM_IPC_VERSION)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE,
                        "%s: the IPC handle has version %" PRIu32 ", and this library reads version %d", what,
                        version, GPUMEM_IPC_VERSION);
    uint32_t size = rd32(in + OFF_SIZE);
    if (size != GPUMEM_IPC_HANDLE_SIZE)
        return bad(what, "its size field is not GPUMEM_IPC_HANDLE_SIZE", size);
    d->pid = rd64(in + OFF_PID);
    d->nonce = rd64(in + OFF_NONCE);
    memcpy(&d->cu, in + OFF_CU_HANDLE, sizeof d->cu);
    for (int i = 0; i < 3; i++)
        d->pci[i] = (int32_t)rd32(in + OFF_PCI + 4 * i);
    d->ordinal = (int)(int32_t)rd32(in + OFF_ORDINAL);
    d->offset = rd64(in + OFF_OFFSET);
    d->alloc_size = rd64(in + OFF_ALLOC_SIZE);
    uint32_t ndim = rd32(in + OFF_NDIM);
    if (ndim > GPUMEM_MAX_NDIM)
        return bad(what, "ndim is above GPUMEM_MAX_NDIM", ndim);
    d->ndim = (int)ndim;
    d->itemsize = rd32(in + OFF_ITEMSIZE);
    if (d->itemsize == 0)
        return bad(what, "the item size is 0", 0);
    for (int i = 0; i < d->ndim; i++) {
        d->shape[i] = (int64_t)rd64(in + OFF_SHAPE + 8 * i);
        d->strides[i] = (int64_t)rd64(in + OFF_STRIDES + 8 * i);
        if (d->shape[i] < 0)
            return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: not a valid IPC handle: shape[%d] is %" PRId64, what,
                            i, d->shape[i]);
    }
    if (memchr(in + OFF_TYPESTR, '\0', TYPESTR_BYTES) == NULL)
        return bad(what, "the typestr is not NUL-terminated", TYPESTR_BYTES);
    memcpy(d->typestr, in + OFF_TYPESTR, TYPESTR_BYTES);
    uint32_t dlen = rd32(in + OFF_DESCR_LEN);
    if (dlen >= DESCR_BYTES || in[OFF_DESCR + dlen] != '\0' || memchr(in + OFF_DESCR, '\0', dlen) != NULL)
        return bad(what, "the record description's length does not match its text", dlen);
    memcpy(d->descr, in + OFF_DESCR, dlen + 1);
    d->has_descr = dlen > 0;

    /* the dtype's size is the item size; the record description (read
     * again by gpumem_as_cuda_array once mapped) is checked here, before
     * the driver */
    char where[160];
    snprintf(where, sizeof where, "%s: the handle's typestr", what);
    gpumem_dtype *dt = NULL;
    gpumem_status st = gm_dtype_from_typestr(where, d->typestr, &dt);
    if (st != GPUMEM_OK)
        return st;
    size_t dsize = 0;
    gpumem_dtype_itemsize(dt, &dsize);
    gpumem_type type = GPUMEM_VOID;
    gpumem_dtype_type(dt, &type, NULL);
    gpumem_dtype *rec = NULL;
    snprintf(where, sizeof where, "%s: the handle's record description", what);
    if (dsize == d->itemsize && d->has_descr && (st = gm_dtype_from_descr(where, d->descr, &rec)) != GPUMEM_OK) {
        gpumem_dtype_release(dt);
        return st;
    }
    size_t rsize = 0;
    if (rec != NULL)
        gpumem_dtype_itemsize(rec, &rsize);
    /* as gpumem_as_cuda_array reads them: a descr describes raw bytes of its size, or the typestr's dtype */
    bool agree = rec == NULL || (type == GPUMEM_VOID ? rsize == dsize : gpumem_dtype_equal(rec, dt));
    gpumem_dtype_release(rec);
    gpumem_dtype_release(dt);
    if (dsize != d->itemsize)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE,
                        "%s: not a valid IPC handle: the typestr '%s' has %zu bytes, the item size is %zu", what,
                        d->typestr, dsize, d->itemsize);
    if (!agree)
        return gm_error(GPUMEM_ERROR_INVALID_DTYPE,
                        "%s: not a valid IPC handle: the record description (%zu bytes) disagrees with the "
                        "typestr '%s' (%zu bytes)", what, rsize, d->typestr, dsize);

    /* every element lies in the allocation */
    int64_t count, nbytes;
    st = gm_layout_check_shape(what, d->ndim, d->shape, d->itemsize, &count, &nbytes);
    if (st != GPUMEM_OK) /* ipc.h documents INVALID_VALUE for every field */
        return gm_error_prefix(GPUMEM_ERROR_INVALID_VALUE, "not a valid IPC handle: its shape");
    if (count == 0)
        return bad(what, "the array is empty", 0);
    int64_t lo = 0, hi = nbytes;
    if (!gm_layout_extent(d->ndim, d->shape, d->strides, d->itemsize, &lo, &hi))
        return bad(what, "the strides leave the address space", 0);
    uint64_t below = (uint64_t)0 - (uint64_t)lo, above = (uint64_t)hi;
    d->below = below;
    d->above = above;
    if (d->offset > d->alloc_size || below > d->offset || above > d->alloc_size - d->offset)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE,
                        "%s: not a valid IPC handle: its elements reach from byte %" PRId64 " to %" PRId64
                        " around offset %" PRIu64 ", outside the allocation of %" PRIu64 " bytes",
                        what, lo, hi, d->offset, d->alloc_size);
    return GPUMEM_OK;
}

/* ---- gpumem_ipc_open ---------------------------------------------------------------------- */

/* An open mapping: the array's owner, closed with the array's last reference. */
typedef struct ipc_mapping {
    gpumem_context *ctx;  /* where it is mapped (retained) */
    gpumem_context *peer; /* the memory's device, for peer access (retained), or NULL */
    gm_cu_deviceptr base;
} ipc_mapping;

static void mapping_close(void *owner)
{
    ipc_mapping *m = owner;
    if (!gm_process_exiting()) {
        int rc = GM_DRV(ipc_close_mem_handle, m->ctx->dctx, m->base);
        if (rc != 0)
            gm_debug("gpumem_ipc_open: closing the mapping at 0x%" PRIx64 ": %s", m->base, gm_cu_error_name(rc));
    }
    /* an owner's close returns nothing (gpumem_array_from_cuda_array_interface):
     * a context's end that fails here is logged, as the close is, and the
     * caller's failure record stays as it was */
    gm_error_suspend();
    gpumem_status st = gm_context_release_as(m->ctx, "gpumem_ipc_open: closing its mapping");
    if (m->peer != NULL)
        st = gm_keep_first(st, gm_context_release_as(m->peer, "gpumem_ipc_open: closing its mapping"));
    if (st != GPUMEM_OK)
        gm_debug("%s", gm_error_message());
    (void)gm_error_resume(GPUMEM_OK);
    free(m);
}

/* The ordinal of the device with these PCI ids, or -1. */
static gpumem_status find_device(const char *what, const int32_t pci[3], int *device)
{
    int count = 0;
    gpumem_status st = gm_device_count(what, &count);
    *device = -1;
    for (int i = 0; st == GPUMEM_OK && i < count && *device < 0; i++) {
        int32_t ids[3];
        st = gm_device_pci_ids(what, i, ids);
        if (st == GPUMEM_OK && memcmp(ids, pci, sizeof ids) == 0)
            *device = i;
    }
    return st;
}

/* The handle's fields against what the driver mapped at base: the
 * allocation [range_base, range_base + range_size) that holds it.  The
 * handle's own sizes were checked against each other by decode(); these
 * are the bytes' claims about memory they cannot prove, so an offset, an
 * extent or an allocation size beyond the mapping is refused here, every
 * sum checked before it is made. */
static gpumem_status check_mapping(const char *what, const decoded *d, gm_cu_deviceptr base,
                                   gm_cu_deviceptr range_base, size_t range_size)
{
    uint64_t size = (uint64_t)range_size;
    if (base < range_base || base - range_base >= size || size > UINT64_MAX - range_base)
        return gm_error(GPUMEM_ERROR_DRIVER,
                        "%s: cuMemGetAddressRange says the mapping at 0x%" PRIx64 " lies in [0x%" PRIx64
                        ", +%" PRIu64 "), which does not hold it",
                        what, base, range_base, size);
    uint64_t avail = size - (base - range_base); /* mapped bytes from base on */
    if (d->offset >= avail)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE,
                        "%s: not a valid IPC handle: its offset (%" PRIu64 ") lies outside the mapped allocation "
                        "of %" PRIu64 " bytes",
                        what, d->offset, avail);
    if (d->below > d->offset || d->above > avail - d->offset)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE,
                        "%s: not a valid IPC handle: its elements (shape and strides) reach from byte -%" PRIu64
                        " to %" PRIu64 " around offset %" PRIu64 ", outside the mapped allocation of %" PRIu64
                        " bytes",
                        what, d->below, d->above, d->offset, avail);
    if (d->alloc_size > avail)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE,
                        "%s: not a valid IPC handle: its allocation size (%" PRIu64 " bytes) exceeds the mapped "
                        "allocation of %" PRIu64 " bytes",
                        what, d->alloc_size, avail);
    return GPUMEM_OK;
}

/* Maps d's memory into ctx (flags: cuIpcOpenMemHandle's), checks the handle
 * against the mapping and wraps it; a refused handle is unmapped again. */
static gpumem_status open_mapped(const char *what, gpumem_context *ctx, gpumem_context *peer, const decoded *d,
                                 unsigned flags, gpumem_array **out)
{
    ipc_mapping *m = calloc(1, sizeof *m);
    if (m == NULL)
        return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", what);
    gpumem_status st = gm_drv_check(GM_DRV(ipc_open_mem_handle, ctx->dctx, &m->base, &d->cu, flags),
                                    GM_OP_ipc_open_mem_handle, what);
    if (st != GPUMEM_OK) {
        free(m);
        return st;
    }
    gm_cu_deviceptr range_base = 0;
    size_t range_size = 0;
    st = gm_drv_check(GM_DRV(mem_get_address_range, ctx->dctx, &range_base, &range_size, m->base),
                      GM_OP_mem_get_address_range, what);
    if (st == GPUMEM_OK)
        st = check_mapping(what, d, m->base, range_base, range_size);
    if (st != GPUMEM_OK) {
        /* the message stays the refusal's: a failed close only logs */
        int rc = GM_DRV(ipc_close_mem_handle, ctx->dctx, m->base);
        if (rc != 0)
            gm_debug("%s: closing the refused mapping at 0x%" PRIx64 ": CUresult %d", what, m->base, rc);
        free(m);
        return st;
    }
    gpumem_context_retain(ctx);
    m->ctx = ctx;
    if (peer != NULL) {
        gpumem_context_retain(peer);
        m->peer = peer;
    }
    gpumem_cuda_array_interface desc = {.size = sizeof desc, .version = 3, .ndim = d->ndim, .has_strides = 1,
                                        .descr = d->has_descr ? d->descr : NULL, .data = m->base + d->offset};
    memcpy(desc.shape, d->shape, sizeof desc.shape);
    memcpy(desc.strides, d->strides, sizeof desc.strides);
    memcpy(desc.typestr, d->typestr, sizeof desc.typestr);
    st = gm_as_cuda_array(what, ctx, &desc, GPUMEM_CAI_NO_SYNCHRONIZE, mapping_close, m, out);
    if (st != GPUMEM_OK)
        mapping_close(m); /* the error message stays: the close only logs */
    return st;
}

GPUMEM_API gpumem_status gpumem_ipc_open(gpumem_context *ctx, const gpumem_ipc_handle *handle, gpumem_array **array)
{
    const char *what = "gpumem_ipc_open";
    GM_CHECK_HANDLE_OR_NULL(ctx);
    GM_CHECK_NULL(handle);
    GM_CHECK_NULL(array);
    decoded *d = malloc(sizeof *d);
    if (d == NULL)
        return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", what);
    gpumem_status st = decode(what, handle->bytes, d);
    if (st == GPUMEM_OK && d->pid == (uint64_t)getpid() && d->nonce == nonce())
        st = gm_error(GPUMEM_ERROR_INVALID_STATE,
                      "%s: the handle was made by this process, where CUDA cannot open it: use the array itself "
                      "(or a view of it)",
                      what);
    int owner_dev = -1;
    if (st == GPUMEM_OK && (st = gm_driver_ready_for(what)) == GPUMEM_OK && (st = find_device(what, d->pci, &owner_dev)) ==
                                                                        GPUMEM_OK && owner_dev < 0)
        st = gm_error(GPUMEM_ERROR_INVALID_DEVICE,
                      "%s: the handle's device (PCI %04x:%02x:%02x, device %d in the exporting process) is not "
                      "visible in this process",
                      what, (unsigned)d->pci[0], (unsigned)d->pci[1], (unsigned)d->pci[2], d->ordinal);
    gpumem_context *own = NULL, *owner_ctx = NULL;
    if (st == GPUMEM_OK && ctx == NULL)
        st = gm_context_create(what, owner_dev, &own), ctx = own;
    if (st != GPUMEM_OK) {
        free(d);
        return st;
    }

    if (ctx->device == owner_dev) {
        st = open_mapped(what, ctx, NULL, d, GM_CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS, array);
    } else {
        int can = 0;
        st = gm_drv_check(GM_DRV(device_can_access_peer, ctx->device, owner_dev, &can), GM_OP_device_can_access_peer,
                          what);
        if (st == GPUMEM_OK)
            st = gm_context_create(what, owner_dev, &owner_ctx);
        if (st == GPUMEM_OK && can) {
            /* peer access: the memory mapped into ctx, no copy */
            int rc = GM_DRV(ctx_enable_peer_access, ctx->dctx, owner_ctx->dctx);
            if (rc != GM_CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
                st = gm_drv_check(rc, GM_OP_ctx_enable_peer_access, what);
            if (st == GPUMEM_OK)
                st = open_mapped(what, ctx, owner_ctx, d, GM_CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS, array);
        } else if (st == GPUMEM_OK) {
            /* staged: mapped on its own device, copied into ctx */
            gpumem_array *src = NULL, *dst = NULL;
            st = open_mapped(what, owner_ctx, NULL, d, 0, &src);
            int64_t cstrides[GM_MAX_NDIM];
            if (st == GPUMEM_OK)
                st = gm_array_prepare(what, &ctx, src->ndim, src->shape, NULL, src->dtype, 'C', NULL, cstrides);
            if (st == GPUMEM_OK)
                st = gm_array_new_device(what, ctx, src->ndim, src->shape, cstrides, src->dtype, NULL, &dst);
            if (st == GPUMEM_OK)
                st = gm_array_copy(what, dst, src, NULL);
            if (st != GPUMEM_OK)
                st = gm_keep_first(st, gm_array_release_as(dst, what));
            else
                *array = dst;
            st = gm_keep_first(st, gm_array_release_as(src, what)); /* closes the mapping */
        }
    }
    st = gm_keep_first(st, gm_context_release_as(owner_ctx, what));
    st = gm_keep_first(st, gm_context_release_as(own, what));
    free(d);
    return st;
}
