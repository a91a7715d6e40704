/*
 * sim.c - the simulator backend: a GPU on host memory (sim.h says what it
 * simulates and why).  This file: devices, contexts and peers, the driver
 * table and the settings; memory (the allocation registry, device, managed,
 * page-locked and registered memory, pointer attributes) is sim_memory.c's.
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
#include "params.h"
#include "error.h"
#include "sim.h"
#include "sim_impl.h"

struct gm_sim_state gm_sim_S = {.mu = PTHREAD_MUTEX_INITIALIZER, .done = PTHREAD_COND_INITIALIZER};

/* ------------------------------------------------------------- helpers -- */

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
    if (attr == GM_CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID) { /* GPUMEM_SIM_NUMA's (sim_numa.c) */
        *value = S.numa_node[dev];
        return CU_OK;
    }
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
    .mem_get_info = gm_sim_mem_get_info,
    .mem_alloc = gm_sim_mem_alloc,
    .mem_free = gm_sim_mem_free,
    .mem_alloc_async = gm_sim_mem_alloc_async,
    .mem_free_async = gm_sim_mem_free_async,
    .mem_alloc_managed = gm_sim_mem_alloc_managed,
    .mem_host_alloc = gm_sim_mem_host_alloc,
    .mem_free_host = gm_sim_mem_free_host,
    .mem_host_register = gm_sim_mem_host_register,
    .mem_host_unregister = gm_sim_mem_host_unregister,
    .mem_host_get_device_pointer = gm_sim_mem_host_get_device_pointer,
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
    .pointer_get_attributes = gm_sim_pointer_get_attributes,
    .mem_get_address_range = gm_sim_mem_get_address_range,
    .ipc_get_mem_handle = gm_sim_ipc_get_mem_handle,
    .ipc_open_mem_handle = gm_sim_ipc_open_mem_handle,
    .ipc_close_mem_handle = gm_sim_ipc_close_mem_handle,
    .device_can_access_peer = sim_device_can_access_peer,
    .ctx_enable_peer_access = sim_ctx_enable_peer_access,
    .memcpy_peer = gm_sim_memcpy_peer,
    .mem_get_allocation_granularity = gm_sim_mem_get_allocation_granularity,
    .mem_address_reserve = gm_sim_mem_address_reserve,
    .mem_address_free = gm_sim_mem_address_free,
    .mem_create = gm_sim_mem_create,
    .mem_release = gm_sim_mem_release,
    .mem_map = gm_sim_mem_map,
    .mem_unmap = gm_sim_mem_unmap,
    .mem_set_access = gm_sim_mem_set_access,
    .mem_export_to_shareable_handle = gm_sim_mem_export_to_shareable_handle,
    .mem_import_from_shareable_handle = gm_sim_mem_import_from_shareable_handle,
    .mem_pool_create = gm_sim_mem_pool_create,
    .mem_pool_destroy = gm_sim_mem_pool_destroy,
    .mem_pool_set_attribute = gm_sim_mem_pool_attribute,
    .mem_pool_get_attribute = gm_sim_mem_pool_attribute,
    .mem_pool_trim_to = gm_sim_mem_pool_trim_to,
    .mem_alloc_from_pool_async = gm_sim_mem_alloc_from_pool_async,
    .mem_pool_set_access = gm_sim_mem_pool_set_access,
    .mem_pool_export_to_shareable_handle = gm_sim_mem_pool_export_to_shareable_handle,
    .mem_pool_import_from_shareable_handle = gm_sim_mem_pool_import_from_shareable_handle,
    .mem_pool_export_pointer = gm_sim_mem_pool_export_pointer,
    .mem_pool_import_pointer = gm_sim_mem_pool_import_pointer,
};

/* GPUMEM_SIM_BUSY: distinct ordinals below ndev, comma-separated. */
static gpumem_status parse_busy(long ndev, uint64_t *mask)
{
    static const char name[] = "GPUMEM_SIM_BUSY";
    const char *v = gm_param_text(GM_P_SIM_BUSY);
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
    const char *v = gm_param_text(GM_P_SIM_PEERS);
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
    long ndev, delay, first_fit;
    uint64_t capacity, host_limit, busy, other;
    gpumem_status st;
    _Static_assert(GM_SIM_MAX_DEVICES == 64, "params.c's GM_P_SIM_DEVICES row");
    if ((st = gm_param_long(GM_P_SIM_DEVICES, &ndev, NULL)) != GPUMEM_OK ||
        (st = gm_param_size(GM_P_SIM_MEMORY, &capacity)) != GPUMEM_OK ||
        (st = gm_param_size(GM_P_SIM_OTHER_MEMORY, &other)) != GPUMEM_OK ||
        (st = gm_param_long(GM_P_SIM_FIRST_FIT, &first_fit, NULL)) != GPUMEM_OK ||
        (st = gm_param_size(GM_P_SIM_HOST_MEMORY, &host_limit)) != GPUMEM_OK ||
        (st = gm_param_long(GM_P_SIM_STREAM_DELAY_US, &delay, NULL)) != GPUMEM_OK ||
        (st = parse_busy(ndev, &busy)) != GPUMEM_OK || (st = parse_peers(ndev, S.can_peer)) != GPUMEM_OK ||
        (st = gm_sim_numa_parse(ndev, S.numa_node)) != GPUMEM_OK)
        return st;
    if (capacity > SIZE_MAX || host_limit > SIZE_MAX)
        return gm_error(GPUMEM_ERROR_INVALID_ENVIRONMENT,
                        "GPUMEM_SIM_MEMORY or GPUMEM_SIM_HOST_MEMORY exceeds the address space");
    if (other >= capacity)
        return gm_error(GPUMEM_ERROR_INVALID_ENVIRONMENT, "GPUMEM_SIM_OTHER_MEMORY='%s': %llu bytes, not less than "
                        "the device's memory (GPUMEM_SIM_MEMORY: %llu bytes)", gm_param_text(GM_P_SIM_OTHER_MEMORY),
                        (unsigned long long)other, (unsigned long long)capacity);
    const char *name = gm_param_text(GM_P_SIM_ARCH);
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
    S.other = other;
    S.first_fit = first_fit != 0;
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
