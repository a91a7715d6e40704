/*
 * source_host.c - the registered source (source.h): page-locked host
 * memory that the library maps itself, so that it can place the pages on a
 * NUMA node before they exist (cuMemHostAlloc cannot), and the device's
 * node.
 *
 * An extent is one anonymous private mapping, bound to the node with
 * mbind(MPOL_BIND) while none of its pages exists, then first-touched in
 * pieces by the library's workers of that node (workers.h: they run on the
 * node's CPUs) and the caller, and then registered with one
 * cuMemHostRegister of the whole extent.  Touching is where the time goes:
 * a registration of untouched memory faults every page in, zeroing it, on
 * the one thread that calls the driver; pages that exist already are only
 * pinned and mapped for the device.  One registration per extent, not one
 * per piece: the extent is one pool block, which copies see as one
 * page-locked range (a copy over two registrations is not one the driver
 * knows as page-locked), given back with one cuMemHostUnregister.
 *
 * mbind and move_pages are called through syscall(2): glibc has no
 * wrappers, and libnuma would be a dependency for two calls.
 */
#include "config.h"

#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "error.h"
#include "hostreg.h"
#include "memstats.h"
#include "source.h"
#include "workers.h"

#define NODE_BITS 1024            /* the kernel's largest node count (CONFIG_NODES_SHIFT 10) */
#define GM_MPOL_BIND 2            /* <linux/mempolicy.h>'s MPOL_BIND */
#define PIECE ((size_t)2 << 20)   /* bytes one thread touches at a time */
#define TOUCHERS_MAX 16u          /* threads touching one extent, the caller included */

/* A pool's flags are given to cuMemHostRegister as they are (write-combined
 * memory is refused before: pool_props.c). */
_Static_assert(GM_CU_MEMHOSTALLOC_PORTABLE == GM_CU_MEMHOSTREGISTER_PORTABLE &&
                   GM_CU_MEMHOSTALLOC_DEVICEMAP == GM_CU_MEMHOSTREGISTER_DEVICEMAP,
               "the registration flags are the allocation flags");

/* ---- NUMA syscalls ---- */

int gm_numa_bind(void *p, size_t bytes, int node)
{
#ifdef SYS_mbind
    unsigned long mask[NODE_BITS / (8 * sizeof(unsigned long))];
    if (node < 0 || node >= NODE_BITS)
        return EINVAL;
    memset(mask, 0, sizeof mask);
    mask[(unsigned)node / (8 * sizeof(unsigned long))] |= 1UL << ((unsigned)node % (8 * sizeof(unsigned long)));
    /* maxnode counts one more than the bits the kernel reads */
    return syscall(SYS_mbind, p, bytes, GM_MPOL_BIND, mask, (unsigned long)NODE_BITS + 1, 0UL) == 0 ? 0 : errno;
#else
    (void)p, (void)bytes, (void)node;
    return ENOSYS;
#endif
}

int gm_numa_page_nodes(void *const *pages, size_t n, int *nodes)
{
#ifdef SYS_move_pages
    return syscall(SYS_move_pages, 0, (unsigned long)n, pages, NULL, nodes, 0) == 0 ? 0 : errno;
#else
    (void)pages, (void)n, (void)nodes;
    return ENOSYS;
#endif
}

/* ---- the device's node ---- */

gpumem_status gm_source_device_node(gpumem_context *ctx, const char *what, int *node)
{
    int v = -1;
    int rc = GM_DRV(device_get_attribute, ctx->device, GM_CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, &v);
    if (rc == 0) {
        *node = v >= 0 && v < NODE_BITS ? v : -1;
        return GPUMEM_OK;
    }
    if (rc != GM_CUDA_ERROR_INVALID_VALUE) /* INVALID_VALUE: a driver before CUDA 12.2 */
        return gm_drv_check(rc, GM_OP_device_get_attribute, what);
    int domain = 0, bus = 0, slot = 0;
    if ((rc = GM_DRV(device_get_attribute, ctx->device, GM_CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, &domain)) != 0 ||
        (rc = GM_DRV(device_get_attribute, ctx->device, GM_CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, &bus)) != 0 ||
        (rc = GM_DRV(device_get_attribute, ctx->device, GM_CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, &slot)) != 0)
        return gm_drv_check(rc, GM_OP_device_get_attribute, what);
    char id[32];
    snprintf(id, sizeof id, "%04x:%02x:%02x.0", (unsigned)domain & 0xffffu, (unsigned)bus & 0xffu,
             (unsigned)slot & 0xffu);
    *node = gm_numa_pci_node(gm_sysfs_root(), id);
    return GPUMEM_OK;
}

/* ---- the node's check ---- */

static const char *errno_name(int e)
{
    switch (e) {
    case EPERM: return "EPERM";
    case EINVAL: return "EINVAL";
    case ENOSYS: return "ENOSYS";
    case ENOMEM: return "ENOMEM";
    case EFAULT: return "EFAULT";
    default: return "an error";
    }
}

gpumem_status gm_numa_node_check(int node, const char *asked, const char *what)
{
    char path[512], list[256] = "";
    snprintf(path, sizeof path, "%s/devices/system/node/has_memory", gm_sysfs_root());
    FILE *f = fopen(path, "re");
    if (f != NULL) {
        if (fgets(list, sizeof list, f) == NULL)
            list[0] = '\0';
        fclose(f);
        list[strcspn(list, "\n")] = '\0';
    }
    cpu_set_t nodes; /* a node list has a CPU list's grammar */
    if (list[0] != '\0' && gm_cpulist_parse(list, &nodes) && (node >= CPU_SETSIZE || !CPU_ISSET(node, &nodes)))
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: props->numa_node %s: the machine has no memory on NUMA node "
                        "%d (the nodes with memory: %s)", what, asked, node, list);
    long pg = sysconf(_SC_PAGESIZE);
    size_t page = pg > 0 ? (size_t)pg : 4096;
    void *p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory (mmap of one page)", what);
    int e = gm_numa_bind(p, page, node);
    munmap(p, page);
    if (e == 0)
        return GPUMEM_OK;
    if (e == EINVAL)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: props->numa_node %s: the kernel refused NUMA node %d "
                        "(mbind: EINVAL): the machine has no such node, or the process may not use it (cpuset)", what,
                        asked, node);
    return gm_error(GPUMEM_ERROR_NOT_SUPPORTED, "%s: props->numa_node %s: the kernel refused to place pages on "
                    "NUMA node %d (mbind: %s%s); set GPUMEM_NUMA_NODE_NONE", what, asked, node, errno_name(e),
                    e == EPERM    ? ": not allowed here, as under a container's default seccomp filter"
                    : e == ENOSYS ? ": a kernel without NUMA"
                                  : "");
}

/* ---- the source ---- */

typedef struct host_source {
    gm_source s;
    _Atomic uint64_t extents, bytes;
    size_t page;
    unsigned touchers; /* threads that touch one extent, the caller included */
} host_source;

typedef struct touch_task {
    gm_task t;
    char *base;
    size_t len, page, pieces;
    _Atomic size_t next;
} touch_task;

static void touch_fn(gm_task *t, int worker)
{
    touch_task *tt = (touch_task *)t;
    for (;;) {
        if (worker >= 0 && gm_workers_stopping())
            return; /* the caller does the rest */
        size_t i = atomic_fetch_add_explicit(&tt->next, 1, memory_order_relaxed);
        if (i >= tt->pieces)
            return;
        volatile char *a = tt->base + i * PIECE;
        size_t n = i + 1 < tt->pieces ? PIECE : tt->len - i * PIECE;
        for (size_t o = 0; o < n; o += tt->page)
            a[o] = 0;
    }
}

/* First-touches [p, p + len) on the node's workers and the caller. */
static void touch(host_source *hs, char *p, size_t len)
{
    touch_task tt = {.t = GM_TASK_INIT(touch_fn), .base = p, .len = len, .page = hs->page,
                     .pieces = (len + PIECE - 1) / PIECE};
    atomic_init(&tt.next, 0);
    unsigned helpers = tt.pieces - 1 < hs->touchers - 1 ? (unsigned)(tt.pieces - 1) : hs->touchers - 1;
    gm_workers *w = helpers > 0 ? gm_workers_get(hs->s.cfg.numa_node) : NULL;
    if (w != NULL && gm_workers_grow(w, helpers) > 0) {
        gm_task_post(w, &tt.t, helpers);
        touch_fn(&tt.t, -1);
        gm_task_join(w, &tt.t);
    } else {
        touch_fn(&tt.t, -1);
    }
}

static size_t round_page(const host_source *hs, size_t bytes)
{
    return (bytes + hs->page - 1) / hs->page * hs->page;
}

static gpumem_status host_alloc(gm_source *s, size_t bytes, bool grow, const char *what, uint64_t *addr, bool *oom)
{
    (void)grow;
    host_source *hs = (host_source *)s;
    if (bytes > SIZE_MAX - hs->page) {
        *oom = true;
        return GPUMEM_ERROR_HOST_OUT_OF_MEMORY;
    }
    size_t len = round_page(hs, bytes);
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        *oom = true;
        return GPUMEM_ERROR_HOST_OUT_OF_MEMORY;
    }
    int node = s->cfg.numa_node, e = node >= 0 ? gm_numa_bind(p, len, node) : 0;
    if (e != 0) {
        munmap(p, len);
        if (e == ENOMEM) {
            *oom = true;
            return GPUMEM_ERROR_HOST_OUT_OF_MEMORY;
        }
        return gm_error(GPUMEM_ERROR_NOT_SUPPORTED, "%s: a block of %zu bytes: the kernel refused to place it on NUMA "
                        "node %d (mbind: %s)", what, bytes, node, errno_name(e));
    }
    touch(hs, p, len);
    gm_dctx *dctx = s->ctx->dctx;
    int rc = GM_DRV(mem_host_register, dctx, p, len, s->cfg.host_flags);
    gpumem_status st = GPUMEM_OK;
    if (rc == GM_CUDA_ERROR_OUT_OF_MEMORY) {
        munmap(p, len);
        *oom = true;
        return GPUMEM_ERROR_HOST_OUT_OF_MEMORY;
    }
    if (rc != 0) {
        munmap(p, len);
        char where[200];
        snprintf(where, sizeof where, "%s: a block of %zu bytes", what, bytes);
        return gm_drv_check(rc, GM_OP_mem_host_register, where);
    }
    if ((st = gm_host_track_allocation(p, len)) != GPUMEM_OK) {
        gm_error_quietly(GM_DRV(mem_host_unregister, dctx, p));
        munmap(p, len);
        return gm_error_prefix(st, what);
    }
    gm_memstats_driver_alloc(s->ctx);
    atomic_fetch_add_explicit(&hs->extents, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&hs->bytes, bytes, memory_order_relaxed);
    *addr = (uint64_t)(uintptr_t)p;
    return GPUMEM_OK;
}

static gpumem_status host_free(gm_source *s, uint64_t addr, size_t bytes, const char *what)
{
    host_source *hs = (host_source *)s;
    void *p = (void *)(uintptr_t)addr;
    atomic_fetch_sub_explicit(&hs->extents, 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&hs->bytes, bytes, memory_order_relaxed);
    gm_host_untrack_allocation(p);
    gpumem_status st = gm_drv_check(GM_DRV(mem_host_unregister, s->ctx->dctx, p), GM_OP_mem_host_unregister, what);
    /* Unmapped whatever the driver said: the pages are the process's. */
    munmap(p, round_page(hs, bytes));
    return st;
}

static void host_location(const gm_source *s, gm_source_location *loc)
{
    if (s->cfg.numa_node >= 0)
        *loc = (gm_source_location){GM_CU_MEM_LOCATION_TYPE_HOST_NUMA, s->cfg.numa_node};
    else
        *loc = (gm_source_location){GM_CU_MEM_LOCATION_TYPE_HOST, -1};
}

static void host_usage(gm_source *s, gm_source_usage *u)
{
    host_source *hs = (host_source *)s;
    *u = (gm_source_usage){.extents = atomic_load_explicit(&hs->extents, memory_order_relaxed),
                           .extent_bytes = atomic_load_explicit(&hs->bytes, memory_order_relaxed)};
    u->mapped = u->extent_bytes;
}

static gpumem_status host_destroy(gm_source *s, const char *what)
{
    (void)what;
    free(s);
    return GPUMEM_OK;
}

static const gm_source_ops host_ops = {
    .name = "registered", .caps = GM_SOURCE_CAP_HOST, .alloc = host_alloc, .free = host_free,
    .location = host_location, .usage = host_usage, .destroy = host_destroy,
};

gpumem_status gm_source_host_create(gpumem_context *ctx, const gm_source_config *cfg, const char *what,
                                    gm_source **out)
{
    host_source *hs = calloc(1, sizeof *hs);
    if (hs == NULL)
        return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", what);
    hs->s = (gm_source){.ops = &host_ops, .ctx = ctx, .cfg = *cfg};
    long pg = sysconf(_SC_PAGESIZE);
    hs->page = pg > 0 ? (size_t)pg : 4096;
    /* The node's CPUs (all of them without a node), at most TOUCHERS_MAX. */
    cpu_set_t set;
    long cpus = cfg->numa_node >= 0 && gm_numa_node_cpus(gm_sysfs_root(), cfg->numa_node, &set)
                    ? CPU_COUNT(&set)
                    : sysconf(_SC_NPROCESSORS_ONLN);
    hs->touchers = cpus < 1 ? 1u : cpus > (long)TOUCHERS_MAX ? TOUCHERS_MAX : (unsigned)cpus;
    atomic_init(&hs->extents, 0);
    atomic_init(&hs->bytes, 0);
    *out = &hs->s;
    return GPUMEM_OK;
}
