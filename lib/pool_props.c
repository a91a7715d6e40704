/*
 * pool_props.c - a pool made from struct gpumem_pool_props: the checks of
 * every field (gpumem/pool.h says what each may hold) and the source
 * configuration (source.h) that the pool core is made with.  Both public
 * create calls, gpumem_pool_create_with_props and
 * gpumem_host_pool_create_with_props, come here.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "error.h"
#include "pool_impl.h"

#define HOST_ALLOC_FLAGS GM_POOL_HOST_ALLOC_FLAGS
#define MAXIMUM_LIMIT ((uint64_t)1 << 50) /* a reservation's address space, at most */

/* The caller's struct, checked for its size: a shorter one is an error, a
 * longer one (a later version's) must hold zeros past ours. */
static gpumem_status props_copy(const struct gpumem_pool_props *in, const char *what, struct gpumem_pool_props *out)
{
    if (in->size < sizeof *out)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: props->size is %zu; set it to "
                        "sizeof(struct gpumem_pool_props) (%zu), or start from GPUMEM_POOL_PROPS_INIT", what,
                        in->size, sizeof *out);
    for (size_t i = sizeof *out; i < in->size; i++)
        if (((const unsigned char *)in)[i] != 0)
            return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: props has a nonzero byte at offset %zu, a field of a "
                            "later version of the library than this one (its struct has %zu bytes)", what, i,
                            sizeof *out);
    memcpy(out, in, sizeof *out);
    return GPUMEM_OK;
}

/* A host pool's node: numa_node resolved (the device's by default), then
 * checked; a pinned pool with a node becomes a registered one (source.h),
 * cuMemHostAlloc having no placement. */
static gpumem_status place(gpumem_context *ctx, const struct gpumem_pool_props *p, bool wc, gm_source_config *src,
                           const char *what)
{
    int node = p->numa_node;
    char asked[64];
    snprintf(asked, sizeof asked, "%d", node);
    if (node == GPUMEM_NUMA_NODE_DEVICE && wc)
        node = -1; /* write-combined memory comes from cuMemHostAlloc, not placed (pool.h) */
    else if (node == GPUMEM_NUMA_NODE_DEVICE) {
        gpumem_status st = gm_source_device_node(ctx, what, &node);
        if (st != GPUMEM_OK)
            return st;
        snprintf(asked, sizeof asked, "GPUMEM_NUMA_NODE_DEVICE (device %d's node, %d)", ctx->device, node);
    } else if (node == GPUMEM_NUMA_NODE_NONE)
        node = -1;
    if (node >= 0) {
        gpumem_status st = gm_numa_node_check(node, asked, what);
        if (st != GPUMEM_OK)
            return st;
        src->kind = GM_SOURCE_REGISTERED;
    }
    src->numa_node = node;
    return GPUMEM_OK;
}

gpumem_status gm_pool_core_create_props(gm_pool_kind kind, gpumem_context *ctx, const struct gpumem_pool_props *in,
                                        const char *what, gm_pool **out)
{
    struct gpumem_pool_props p;
    gpumem_status st = props_copy(in, what, &p);
    if (st != GPUMEM_OK)
        return st;
    bool host = kind == GM_POOL_HOST;
    gm_source_config src = {.kind = GM_SOURCE_DEVICE};
    switch (p.source) {
    case GPUMEM_POOL_SOURCE_DEVICE:
    case GPUMEM_POOL_SOURCE_VIRTUAL:
    case GPUMEM_POOL_SOURCE_ASYNC:
    case GPUMEM_POOL_SOURCE_MANAGED:
        if (host)
            return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: props->source %d is device memory; a host pool's is "
                            "GPUMEM_POOL_SOURCE_PINNED or GPUMEM_POOL_SOURCE_REGISTERED "
                            "(gpumem_pool_create_with_props makes device pools)", what, p.source);
        src.kind = p.source == GPUMEM_POOL_SOURCE_DEVICE    ? GM_SOURCE_DEVICE
                   : p.source == GPUMEM_POOL_SOURCE_VIRTUAL ? GM_SOURCE_VMM
                   : p.source == GPUMEM_POOL_SOURCE_ASYNC   ? GM_SOURCE_ASYNC
                                                            : GM_SOURCE_MANAGED;
        break;
    case GPUMEM_POOL_SOURCE_PINNED:
    case GPUMEM_POOL_SOURCE_REGISTERED:
        if (!host)
            return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: props->source %s is host memory "
                            "(gpumem_host_pool_create_with_props makes host pools)", what,
                            p.source == GPUMEM_POOL_SOURCE_PINNED ? "GPUMEM_POOL_SOURCE_PINNED"
                                                                  : "GPUMEM_POOL_SOURCE_REGISTERED");
        src.kind = p.source == GPUMEM_POOL_SOURCE_PINNED ? GM_SOURCE_PINNED : GM_SOURCE_REGISTERED;
        break;
    default:
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: props->source %d is no GPUMEM_POOL_SOURCE_*", what,
                        p.source);
    }
    unsigned known = GPUMEM_POOL_NO_THREAD_CACHE | (host ? HOST_ALLOC_FLAGS : 0u);
    if (p.flags & ~known)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: props->flags has unknown flags 0x%x", what,
                        p.flags & ~known);
    if (!host && p.numa_node != GPUMEM_NUMA_NODE_DEVICE)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: props->numa_node %d: a device pool has no NUMA node "
                        "(leave it GPUMEM_NUMA_NODE_DEVICE, -1)", what, p.numa_node);
    if (host && p.numa_node < GPUMEM_NUMA_NODE_NONE)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: props->numa_node %d is neither a node number nor "
                        "GPUMEM_NUMA_NODE_DEVICE (-1) or GPUMEM_NUMA_NODE_NONE (-2)", what, p.numa_node);
    bool wc = (p.flags & GPUMEM_HOST_ALLOC_WRITECOMBINED) != 0;
    if (host && wc && (src.kind == GM_SOURCE_REGISTERED || p.numa_node >= 0))
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: props->flags GPUMEM_HOST_ALLOC_WRITECOMBINED: registered "
                        "memory, as memory placed on a NUMA node is, cannot be write-combined (use "
                        "GPUMEM_POOL_SOURCE_PINNED with numa_node GPUMEM_NUMA_NODE_NONE)", what);
    bool vmm = src.kind == GM_SOURCE_VMM, async = src.kind == GM_SOURCE_ASYNC;
    if (!vmm && p.growth_step != 0)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: props->growth_step applies only to "
                        "GPUMEM_POOL_SOURCE_VIRTUAL (leave it 0)", what);
    if (!vmm && !async && (p.maximum != 0 || p.release_threshold != UINT64_MAX))
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: props->maximum and release_threshold apply only to "
                        "GPUMEM_POOL_SOURCE_VIRTUAL and GPUMEM_POOL_SOURCE_ASYNC (leave them 0 and UINT64_MAX)",
                        what);
    if (p.handle_type != GPUMEM_POOL_HANDLE_NONE && p.handle_type != GPUMEM_POOL_HANDLE_POSIX_FD)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: props->handle_type %d is no GPUMEM_POOL_HANDLE_*", what,
                        p.handle_type);
    if (!vmm && !async && p.handle_type != GPUMEM_POOL_HANDLE_NONE)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: props->handle_type: only a GPUMEM_POOL_SOURCE_VIRTUAL or "
                        "GPUMEM_POOL_SOURCE_ASYNC pool exports its memory", what);
    if (p.maximum > MAXIMUM_LIMIT || p.growth_step > MAXIMUM_LIMIT)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: props->%s %llu is more than 2^50 bytes", what,
                        p.maximum > MAXIMUM_LIMIT ? "maximum" : "growth_step",
                        (unsigned long long)(p.maximum > MAXIMUM_LIMIT ? p.maximum : p.growth_step));
    ctx = gm_context_use(ctx, what, &st);
    if (st != GPUMEM_OK)
        return st;
    if (p.device != -1 && p.device != ctx->device)
        return gm_error(GPUMEM_ERROR_CONTEXT_MISMATCH, "%s: props->device is %d, but the context's device is %d "
                        "(set -1 for the context's)", what, p.device, ctx->device);
    if (host && (st = place(ctx, &p, wc, &src, what)) != GPUMEM_OK)
        return st;
    src.host_flags = host ? p.flags & HOST_ALLOC_FLAGS : 0u;
    src.growth_step = p.growth_step;
    src.maximum = p.maximum;
    src.release_threshold = p.release_threshold;
    src.exportable = p.handle_type == GPUMEM_POOL_HANDLE_POSIX_FD;
    return gm_pool_core_create(kind, ctx, p.flags & GPUMEM_POOL_NO_THREAD_CACHE, &src, what, out);
}
