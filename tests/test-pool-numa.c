/* Host pools on a NUMA node and the managed and registered sources (issue
 * 27, steps 1 and 5): the node of every page of every block read back
 * (move_pages(2)), the default node (the device's: GPUMEM_SIM_NUMA on the
 * simulator), a node the machine lacks refused with a message naming
 * props->numa_node, one cuMemHostRegister per block after the parallel
 * touch, the pool's memory page-locked and given back, GPUMEM_SIM_NUMA's
 * errors, managed device pools, and a fault-injection walk over every
 * driver call of a registered host pool and a managed device pool.
 *
 * Placement is real (the simulator simulates only the devices' nodes), so
 * the nodes checked are the machine's: on a machine of one node, node 0,
 * and node 1 must be refused.  Where the kernel refuses mbind (a
 * container's seccomp filter), the pool says so and the placement checks
 * are skipped with that reason. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "child.h"
#include "gpumem.h"
#include "sim.h"
#include "source.h"
#include "tap.h"
#include "workers.h"

#define M ((size_t)1 << 20)

static gpumem_context *ctx;
static int sim;
static size_t page;

static uint64_t calls(const char *fn)
{
    uint64_t c = 0;
    gpumem_debug_driver_calls(fn, &c);
    return c;
}

/* The real machine's nodes with memory ("0", "0-1"), and how many. */
static int machine_nodes(char *list, size_t size)
{
    FILE *f = fopen("/sys/devices/system/node/has_memory", "re");
    list[0] = '\0';
    if (f != NULL) {
        if (fgets(list, (int)size, f) == NULL)
            list[0] = '\0';
        fclose(f);
    }
    list[strcspn(list, "\n")] = '\0';
    cpu_set_t set;
    return list[0] != '\0' && gm_cpulist_parse(list, &set) ? CPU_COUNT(&set) : 1;
}

/* Whether the kernel lets this process bind pages: 0, or the errno. */
static int mbind_refused(void)
{
    void *p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return ENOMEM;
    int e = gm_numa_bind(p, page, 0);
    munmap(p, page);
    return e;
}

/* How many pages of [p, p + bytes) are on node (move_pages' query); -1
 * when the query fails. */
static long pages_on(const void *p, size_t bytes, int node, int *other)
{
    size_t n = (bytes + page - 1) / page;
    void **pages = calloc(n, sizeof *pages);
    int *nodes = calloc(n, sizeof *nodes);
    long on = -1;
    *other = -1;
    if (pages != NULL && nodes != NULL) {
        for (size_t i = 0; i < n; i++)
            pages[i] = (char *)p + i * page;
        if (gm_numa_page_nodes(pages, n, nodes) == 0) {
            on = 0;
            for (size_t i = 0; i < n; i++)
                if (nodes[i] == node)
                    on++;
                else if (*other == -1)
                    *other = nodes[i];
        }
    }
    free(pages);
    free(nodes);
    return on;
}

static gpumem_status host_pool(int source, int node, unsigned flags, gpumem_host_pool **out)
{
    struct gpumem_pool_props props = GPUMEM_POOL_PROPS_INIT;
    props.source = source;
    props.numa_node = node;
    props.flags = flags;
    *out = NULL;
    return gpumem_host_pool_create_with_props(ctx, &props, out);
}

/* Blocks of one page, 3 MiB and 37 MiB (several pieces, touched by the
 * workers) from a pool on node: every page there, one registration each,
 * page-locked, data kept, given back. */
static void test_node(int node)
{
    char name[160];
    gpumem_host_pool *pool = NULL;
    uint64_t reg0 = calls("cuMemHostRegister"), alloc0 = calls("cuMemHostAlloc"), unreg0 = calls("cuMemHostUnregister");
    uint64_t locked0 = sim ? gm_sim_host_locked_bytes() : 0;
    snprintf(name, sizeof name, "a host pool on node %d", node);
    if (!ok(host_pool(GPUMEM_POOL_SOURCE_PINNED, node, 0, &pool) == GPUMEM_OK, "%s", name)) {
        diag("%s", gpumem_last_error());
        skip(12, "no pool");
        return;
    }
    const size_t sizes[3] = {page, 3 * M, 37 * M};
    size_t blocks = 0, bsz[3] = {0, 0, 0}; /* the blocks' bytes: their size classes' */
    for (int i = 0; i < 3; i++) {
        gpumem_pool_block_size(sizes[i], &bsz[i]);
        blocks += bsz[i];
    }
    gpumem_allocation *a[3] = {NULL, NULL, NULL};
    int all_on = 1, pinned_all = 1, filled = 1;
    for (int i = 0; i < 3; i++) {
        void *h = NULL;
        int pinned = 0, other = -1;
        if (gpumem_host_pool_allocate_bytes(pool, sizes[i], &a[i]) != GPUMEM_OK ||
            gpumem_allocation_host_pointer(a[i], &h) != GPUMEM_OK) {
            diag("block %d: %s", i, gpumem_last_error());
            all_on = pinned_all = filled = 0;
            continue;
        }
        long on = pages_on(h, bsz[i], node, &other);
        if (on != (long)((bsz[i] + page - 1) / page)) {
            all_on = 0;
            diag("block of %zu bytes: %ld of %zu pages on node %d (another: %d)", bsz[i], on,
                 (bsz[i] + page - 1) / page, node, other);
        }
        if (gpumem_host_is_pinned(h, sizes[i], &pinned) != GPUMEM_OK || pinned != 1)
            pinned_all = 0;
        /* Resident before the program touched them: the pool touched them
         * (the simulator's registration does not). */
        size_t n = (bsz[i] + page - 1) / page;
        unsigned char *vec = calloc(n, 1);
        if (vec == NULL || mincore(h, n * page, vec) != 0)
            filled = 0;
        for (size_t k = 0; vec != NULL && k < n; k++)
            if (!(vec[k] & 1))
                filled = 0;
        free(vec);
        memset(h, 0x5a + i, sizes[i]);
    }
    ok(all_on, "every page of each block (1 page, 3 MiB, 37 MiB) is on node %d", node);
    ok(pinned_all, "each block is page-locked (gpumem_host_is_pinned)");
    ok(filled, "each block's pages are resident before the program touches them (mincore)");
    is_int(calls("cuMemHostRegister") - reg0, 3, "one cuMemHostRegister per block");
    is_int(calls("cuMemHostAlloc") - alloc0, 0, "and no cuMemHostAlloc: it cannot place pages");
    if (sim)
        is_int(gm_sim_host_locked_bytes() - locked0, blocks, "the driver locked the blocks' bytes");
    else
        skip(1, "the simulator's count of page-locked bytes");
    /* Data through the device and back. */
    gpumem_array *hv = NULL, *dv = NULL;
    void *h = NULL;
    int round = 0;
    if (gpumem_allocation_host_pointer(a[1], &h) == GPUMEM_OK &&
        gpumem_host_array_wrap(h, 1, (int64_t[]){(int64_t)(3 * M)}, NULL, gpumem_dtype_builtin(GPUMEM_UINT8), &hv) == GPUMEM_OK &&
        gpumem_to_device(ctx, hv, NULL, 0, &dv) == GPUMEM_OK) {
        memset(h, 0, 3 * M);
        round = gpumem_copy_to_host(dv, hv, NULL) == GPUMEM_OK && ((unsigned char *)h)[3 * M - 1] == 0x5b &&
                ((unsigned char *)h)[0] == 0x5b;
    }
    ok(round, "a block's data goes to the device and back");
    gpumem_array_release(dv);
    gpumem_array_release(hv);
    struct gpumem_pool_stats s = {.size = sizeof s};
    gpumem_host_pool_stats(pool, &s);
    is_int(s.source_bytes, blocks, "the pool's source_bytes are its blocks'");
    for (int i = 0; i < 3; i++)
        gpumem_allocation_free(a[i], NULL);
    ok(gpumem_host_pool_trim(pool, 0) == GPUMEM_OK, "trim");
    is_int(calls("cuMemHostUnregister") - unreg0, 3, "gives each block back with one cuMemHostUnregister");
    if (sim)
        is_int(gm_sim_host_locked_bytes(), locked0, "and every locked byte");
    else
        skip(1, "the simulator's count of page-locked bytes");
    ok(gpumem_host_pool_destroy(pool) == GPUMEM_OK, "destroy");
}

static void refused(int source, int node, unsigned flags, gpumem_status want, const char *needle, const char *what)
{
    gpumem_host_pool *pool = NULL;
    gpumem_status st = host_pool(source, node, flags, &pool);
    is_int(st, want, what);
    like(gpumem_last_error(), needle, "  its message");
    ok(pool == NULL, "  and no pool");
    gpumem_host_pool_destroy(pool);
}

static void test_refusals(int nodes, const char *list)
{
    char needle[64];
    snprintf(needle, sizeof needle, "no memory on NUMA node %d", nodes);
    char what[400];
    snprintf(what, sizeof what, "node %d of a machine with nodes %s is refused", nodes, list);
    refused(GPUMEM_POOL_SOURCE_PINNED, nodes, 0, GPUMEM_ERROR_INVALID_VALUE, needle, what);
    like(gpumem_last_error(), "props->numa_node", "  naming props->numa_node");
    refused(GPUMEM_POOL_SOURCE_REGISTERED, 5000, 0, GPUMEM_ERROR_INVALID_VALUE, "props->numa_node 5000",
            "node 5000 is refused");
    refused(GPUMEM_POOL_SOURCE_PINNED, -3, 0, GPUMEM_ERROR_INVALID_VALUE, "props->numa_node -3",
            "a negative node other than the two constants is refused");
    refused(GPUMEM_POOL_SOURCE_PINNED, 0, GPUMEM_HOST_ALLOC_WRITECOMBINED, GPUMEM_ERROR_INVALID_VALUE,
            "WRITECOMBINED", "write-combined memory on a node is refused");
    refused(GPUMEM_POOL_SOURCE_REGISTERED, GPUMEM_NUMA_NODE_NONE, GPUMEM_HOST_ALLOC_WRITECOMBINED,
            GPUMEM_ERROR_INVALID_VALUE, "WRITECOMBINED", "write-combined registered memory is refused");
    refused(GPUMEM_POOL_SOURCE_MANAGED, GPUMEM_NUMA_NODE_DEVICE, 0, GPUMEM_ERROR_INVALID_VALUE, "props->source",
            "a host pool of managed memory is refused");
    struct gpumem_pool_props d = GPUMEM_POOL_PROPS_INIT;
    d.source = GPUMEM_POOL_SOURCE_REGISTERED;
    gpumem_pool *p = NULL;
    is_int(gpumem_pool_create_with_props(ctx, &d, &p), GPUMEM_ERROR_INVALID_VALUE,
           "a device pool of registered memory is refused");
    like(gpumem_last_error(), "GPUMEM_POOL_SOURCE_REGISTERED is host memory", "  its message");
    d.source = GPUMEM_POOL_SOURCE_DEVICE, d.numa_node = GPUMEM_NUMA_NODE_NONE;
    is_int(gpumem_pool_create_with_props(ctx, &d, &p), GPUMEM_ERROR_INVALID_VALUE,
           "a device pool takes no NUMA node, not even NONE");
    like(gpumem_last_error(), "props->numa_node", "  its message");
}

/* No node to place on: a pinned pool is cuMemHostAlloc's, a registered one
 * registers without placing; write-combined with the default node too. */
static void test_unplaced(int device_node)
{
    gpumem_host_pool *pool = NULL;
    gpumem_allocation *a = NULL;
    uint64_t reg0 = calls("cuMemHostRegister"), alloc0 = calls("cuMemHostAlloc");
    ok(host_pool(GPUMEM_POOL_SOURCE_PINNED, GPUMEM_NUMA_NODE_NONE, 0, &pool) == GPUMEM_OK &&
           gpumem_host_pool_allocate_bytes(pool, 5000, &a) == GPUMEM_OK,
       "a pinned pool with GPUMEM_NUMA_NODE_NONE");
    is_int(calls("cuMemHostAlloc") - alloc0, 1, "  takes cuMemHostAlloc blocks");
    is_int(calls("cuMemHostRegister") - reg0, 0, "  and registers nothing");
    gpumem_allocation_free(a, NULL);
    gpumem_host_pool_destroy(pool);
    reg0 = calls("cuMemHostRegister"), alloc0 = calls("cuMemHostAlloc");
    ok(host_pool(GPUMEM_POOL_SOURCE_PINNED, GPUMEM_NUMA_NODE_DEVICE, GPUMEM_HOST_ALLOC_WRITECOMBINED, &pool) ==
               GPUMEM_OK &&
           gpumem_host_pool_allocate_bytes(pool, 5000, &a) == GPUMEM_OK,
       "write-combined with the default node");
    is_int(calls("cuMemHostAlloc") - alloc0, 1, "  is cuMemHostAlloc's, not placed");
    gpumem_allocation_free(a, NULL);
    gpumem_host_pool_destroy(pool);
    reg0 = calls("cuMemHostRegister"), alloc0 = calls("cuMemHostAlloc");
    ok(host_pool(GPUMEM_POOL_SOURCE_PINNED, GPUMEM_NUMA_NODE_DEVICE, 0, &pool) == GPUMEM_OK &&
           gpumem_host_pool_allocate_bytes(pool, 5000, &a) == GPUMEM_OK,
       "a pinned pool with the default node");
    if (device_node < 0)
        is_int(calls("cuMemHostAlloc") - alloc0, 1, "  on a device of no node: cuMemHostAlloc blocks");
    else
        is_int(calls("cuMemHostRegister") - reg0, 1, "  on a device of a node: registered blocks");
    gpumem_allocation_free(a, NULL);
    gpumem_host_pool_destroy(pool);
    reg0 = calls("cuMemHostRegister");
    uint64_t dptr = 0;
    void *h = NULL;
    ok(host_pool(GPUMEM_POOL_SOURCE_REGISTERED, GPUMEM_NUMA_NODE_NONE, GPUMEM_HOST_ALLOC_DEVICEMAP, &pool) ==
               GPUMEM_OK &&
           gpumem_host_pool_allocate_bytes(pool, 5 * M, &a) == GPUMEM_OK &&
           gpumem_allocation_pointer(a, &dptr) == GPUMEM_OK && gpumem_allocation_host_pointer(a, &h) == GPUMEM_OK,
       "a registered, mapped pool without a node");
    is_int(calls("cuMemHostRegister") - reg0, 1, "  registers its block once");
    ok(dptr != 0 && h != NULL && (uintptr_t)h % (uintptr_t)page == 0, "  which has a device pointer and a page-aligned "
       "host one");
    gpumem_allocation_free(a, NULL);
    gpumem_host_pool_destroy(pool);
}

/* A device pool of managed memory: host-visible blocks. */
static void test_managed(void)
{
    struct gpumem_pool_props props = GPUMEM_POOL_PROPS_INIT;
    props.source = GPUMEM_POOL_SOURCE_MANAGED;
    gpumem_pool *pool = NULL;
    uint64_t m0 = calls("cuMemAllocManaged"), a0 = calls("cuMemAlloc"), f0 = calls("cuMemFree");
    ok(gpumem_pool_create_with_props(ctx, &props, &pool) == GPUMEM_OK, "a managed device pool");
    gpumem_allocation *a = NULL;
    uint64_t d = 0;
    gpumem_array *arr = NULL;
    ok(gpumem_pool_allocate(pool, 3 * M, NULL, &a) == GPUMEM_OK && gpumem_allocation_pointer(a, &d) == GPUMEM_OK,
       "  allocates");
    is_int(calls("cuMemAllocManaged") - m0, 1, "  with cuMemAllocManaged");
    is_int(calls("cuMemAlloc") - a0, 0, "  and no cuMemAlloc");
    int pinned = 0;
    gpumem_host_is_pinned((void *)(uintptr_t)d, 3 * M, &pinned);
    is_int(pinned, 1, "  its block is known as page-locked, as managed memory is");
    int good = 0;
    if (d != 0) {
        memset((void *)(uintptr_t)d, 7, 3 * M); /* the host writes it */
        good = ((unsigned char *)(uintptr_t)d)[3 * M - 1] == 7;
    }
    ok(good, "  the host reads and writes the block");
    gpumem_allocation_free(a, NULL);
    ok(gpumem_pool_device_array(pool, 1, (int64_t[]){1000}, gpumem_dtype_builtin(GPUMEM_FLOAT64), 'C', NULL, &arr) == GPUMEM_OK &&
           gpumem_array_fill(arr, &(double){2.5}, NULL) == GPUMEM_OK,
       "  arrays through it");
    double back[1000] = {0};
    gpumem_array *hb = NULL;
    good = gpumem_host_array_wrap(back, 1, (int64_t[]){1000}, NULL, gpumem_dtype_builtin(GPUMEM_FLOAT64), &hb) == GPUMEM_OK &&
           gpumem_copy_to_host(arr, hb, NULL) == GPUMEM_OK && back[0] == 2.5 && back[999] == 2.5;
    ok(good, "  hold their data");
    gpumem_array_release(hb);
    gpumem_array_release(arr);
    struct gpumem_pool_stats s = {.size = sizeof s};
    gpumem_pool_stats(pool, &s);
    ok(s.held_blocks >= 1 && s.source_bytes >= 3 * M, "  holds its freed blocks");
    ok(gpumem_pool_trim(pool, 0) == GPUMEM_OK && gpumem_pool_destroy(pool) == GPUMEM_OK, "  trim and destroy");
    ok(calls("cuMemFree") - f0 >= 2, "  give its blocks back with cuMemFree");
}

/* ---- children: GPUMEM_SIM_NUMA ---- */

static void numa_child(const void *arg, child_result *out)
{
    setenv("GPUMEM_SIM_NUMA", (const char *)arg, 1);
    gpumem_context *c = NULL;
    out->status = gpumem_context_create(0, &c);
    snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
    if (out->status != GPUMEM_OK)
        return;
    ctx = c;
    gpumem_host_pool *pool = NULL;
    gpumem_allocation *a = NULL;
    void *h = NULL;
    uint64_t reg0 = calls("cuMemHostRegister");
    out->status = host_pool(GPUMEM_POOL_SOURCE_PINNED, GPUMEM_NUMA_NODE_DEVICE, 0, &pool);
    snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
    if (out->status == GPUMEM_OK && (out->status = gpumem_host_pool_allocate_bytes(pool, 9 * M, &a)) == GPUMEM_OK &&
        (out->status = gpumem_allocation_host_pointer(a, &h)) == GPUMEM_OK) {
        int other = -1;
        out->value[0] = pages_on(h, 9 * M, 0, &other);
        out->value[1] = pages_on(h, 9 * M, 1, &other);
        out->value[2] = (long)(calls("cuMemHostRegister") - reg0);
    }
    gpumem_allocation_free(a, NULL);
    gpumem_host_pool_destroy(pool);
    gpumem_context_release(c);
}

static void test_sim_numa(int nodes, int refuse)
{
    child_result r;
    long pages = (long)(9 * M / page);
    run_child(numa_child, "nodes=2,gpu0=0", &r);
    if (refuse) {
        is_int(r.status, GPUMEM_ERROR_NOT_SUPPORTED, "GPUMEM_SIM_NUMA gpu0=0: the kernel refuses mbind: the pool says so");
        like(r.text, "mbind", "  naming mbind");
        skip(1, "mbind is refused here");
    } else {
        is_int(r.status, GPUMEM_OK, "GPUMEM_SIM_NUMA=nodes=2,gpu0=0: the default host pool");
        is_int(r.value[0], pages, "  has every page on node 0, the device's");
        is_int(r.value[2], 1, "  of one registered block");
    }
    run_child(numa_child, "nodes=2,gpu0=1", &r);
    if (nodes < 2) {
        is_int(r.status, GPUMEM_ERROR_INVALID_VALUE, "GPUMEM_SIM_NUMA gpu0=1 on a machine of one node: refused");
        like(r.text, "GPUMEM_NUMA_NODE_DEVICE (device 0's node, 1)", "  naming the device's node");
    } else if (refuse) {
        is_int(r.status, GPUMEM_ERROR_NOT_SUPPORTED, "gpu0=1: mbind refused");
        skip(1, "mbind is refused here");
    } else {
        is_int(r.status, GPUMEM_OK, "GPUMEM_SIM_NUMA gpu0=1 on a machine of two nodes");
        is_int(r.value[1], pages, "  has every page on node 1");
    }
    static const struct {
        const char *value, *needle;
    } bad[] = {
        {"nodes=2,gpu0=2", "gpu0=2, but the nodes are 0 to 1"},
        {"gpu0=1", "nodes=N"},
        {"nodes=0", "nodes=0 is not between 1 and 1024"},
        {"nodes=2,gpu3=0", "device 3 does not exist"},
        {"nodes=2,gpu0=0,gpu0=1", "gpu0 is given twice"},
        {"junk", "'junk' is not 'nodes=N' or 'gpuK=NODE'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char name[128];
        run_child(numa_child, bad[i].value, &r);
        snprintf(name, sizeof name, "GPUMEM_SIM_NUMA=%s is an error", bad[i].value);
        is_int(r.status, GPUMEM_ERROR_INVALID_ENVIRONMENT, name);
        like(r.text, "GPUMEM_SIM_NUMA", "  naming the variable");
        like(r.text, bad[i].needle, "  and what is wrong");
    }
}

/* ---- mbind refused, as a container's seccomp filter refuses it ---- */

static void seccomp_child(const void *arg, child_result *out)
{
    (void)arg;
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mbind, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {.len = (unsigned short)(sizeof filter / sizeof filter[0]), .filter = filter};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
        out->status = -1;
        snprintf(out->note, sizeof out->note, "cannot install a seccomp filter: %s", strerror(errno));
        return;
    }
    if (gpumem_context_create(0, &ctx) != GPUMEM_OK) {
        out->status = -2;
        return;
    }
    gpumem_host_pool *pool = NULL;
    out->status = host_pool(GPUMEM_POOL_SOURCE_PINNED, 0, 0, &pool);
    snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
    out->value[0] = pool == NULL;
    gpumem_host_pool_destroy(pool);
    /* Without a node, the pool does not need mbind. */
    gpumem_allocation *a = NULL;
    out->value[1] = host_pool(GPUMEM_POOL_SOURCE_REGISTERED, GPUMEM_NUMA_NODE_NONE, 0, &pool) == GPUMEM_OK &&
                    gpumem_host_pool_allocate_bytes(pool, 3 * M, &a) == GPUMEM_OK;
    gpumem_allocation_free(a, NULL);
    gpumem_host_pool_destroy(pool);
    gpumem_context_release(ctx);
}

static void test_seccomp(void)
{
    child_result r;
    run_child(seccomp_child, NULL, &r);
    if (r.status == -1) {
        skip(4, r.note);
        return;
    }
    is_int(r.status, GPUMEM_ERROR_NOT_SUPPORTED, "mbind refused by a seccomp filter: a pool on node 0 is NOT_SUPPORTED");
    like(r.text, "mbind: EPERM: not allowed here, as under a container's default seccomp filter", "  saying why");
    is_int(r.value[0], 1, "  and makes no pool");
    is_int(r.value[1], 1, "  a pool without a node still works there");
}

/* ---- the fault walk ---- */

static gpumem_status workload(void)
{
    gpumem_status st = GPUMEM_OK;
    gpumem_host_pool *hp = NULL;
    gpumem_pool *dp = NULL;
    gpumem_allocation *a[3] = {NULL, NULL, NULL};
    struct gpumem_pool_props props = GPUMEM_POOL_PROPS_INIT;
    props.source = GPUMEM_POOL_SOURCE_REGISTERED;
    props.numa_node = GPUMEM_NUMA_NODE_NONE;
    props.flags = GPUMEM_HOST_ALLOC_DEVICEMAP;
    FAULT_FIRST(gpumem_host_pool_create_with_props(ctx, &props, &hp));
    props = (struct gpumem_pool_props)GPUMEM_POOL_PROPS_INIT;
    props.source = GPUMEM_POOL_SOURCE_MANAGED;
    FAULT_FIRST(gpumem_pool_create_with_props(ctx, &props, &dp));
    props = (struct gpumem_pool_props)GPUMEM_POOL_PROPS_INIT;
    props.source = GPUMEM_POOL_SOURCE_PINNED; /* the device's node: none on the simulator */
    gpumem_host_pool *dflt = NULL;
    FAULT_FIRST(gpumem_host_pool_create_with_props(ctx, &props, &dflt));
    if (hp != NULL)
        FAULT_FIRST(gpumem_host_pool_allocate_bytes(hp, 5 * M, &a[0]));
    if (dp != NULL)
        FAULT_FIRST(gpumem_pool_allocate(dp, M, NULL, &a[1]));
    if (dflt != NULL)
        FAULT_FIRST(gpumem_host_pool_allocate_bytes(dflt, 1000, &a[2]));
    for (int i = 0; i < 3; i++)
        if (a[i] != NULL)
            FAULT_FIRST(gpumem_allocation_free(a[i], NULL));
    if (hp != NULL)
        FAULT_FIRST(gpumem_host_pool_trim(hp, 0));
    if (dp != NULL)
        FAULT_FIRST(gpumem_pool_trim(dp, 0));
    FAULT_FIRST(gpumem_host_pool_destroy(hp));
    FAULT_FIRST(gpumem_pool_destroy(dp));
    FAULT_FIRST(gpumem_host_pool_destroy(dflt));
    return st;
}

static void fault_child(const void *arg, child_result *out)
{
    long k = *(const long *)arg;
    if (gpumem_context_create(0, &ctx) != GPUMEM_OK) {
        out->status = -1;
        return;
    }
    uint64_t fr = 0, total = 0;
    gpumem_memory_info(ctx, &fr, &total);
    uint64_t used0 = total - fr, locked0 = gm_sim_host_locked_bytes(), calls0 = fault_arm(k);
    out->status = workload();
    out->value[0] = fault_disarm(calls0);
    snprintf(out->text, sizeof out->text, "%s", fault_msg);
    gpumem_memory_info(ctx, &fr, &total);
    /* A block whose free call failed cannot come back. */
    int kept = strstr(fault_msg, "cuMemFree") != NULL || strstr(fault_msg, "cuMemHostUnregister") != NULL;
    out->value[1] = kept ? 0 : (long)(total - fr - used0) + (long)(gm_sim_host_locked_bytes() - locked0);
    gpumem_context_release(ctx);
}

int main(void)
{
    sim = test_on_sim();
    long pg = sysconf(_SC_PAGESIZE);
    page = pg > 0 ? (size_t)pg : 4096;
    char list[256];
    int nodes = machine_nodes(list, sizeof list);
    int refuse = mbind_refused();
    diag("the machine's nodes with memory: %s (%d); mbind: %s", list[0] ? list : "unknown", nodes,
         refuse == 0 ? "allowed" : strerror(refuse));
    test_seccomp(); /* in a child, before this process uses the driver */
    if (sim) {
        test_sim_numa(nodes, refuse != 0);
        fault_walk_all(fault_child, "registered and managed pools", 7, "device and page-locked",
                       "cuMemHostUnregister");
    } else {
        skip(5 + 6 * 3, "GPUMEM_SIM_NUMA is the simulator's");
        skip(5, "fault injection walks run on the simulator");
    }
    if (gpumem_context_create(0, &ctx) != GPUMEM_OK)
        bail_out("no context: %s", gpumem_last_error());
    int device_node = -1;
    if (gm_source_device_node(ctx, "test", &device_node) != GPUMEM_OK)
        bail_out("the device's node: %s", gpumem_last_error());
    diag("device 0's NUMA node: %d", device_node);
    if (refuse != 0) {
        gpumem_host_pool *pool = NULL;
        is_int(host_pool(GPUMEM_POOL_SOURCE_PINNED, 0, 0, &pool), GPUMEM_ERROR_NOT_SUPPORTED,
               "mbind is refused here: a pool on node 0 says so");
        like(gpumem_last_error(), "mbind", "  naming mbind");
        char why[128];
        snprintf(why, sizeof why, "the kernel refuses mbind here (%s): no page can be placed", strerror(refuse));
        skip(13 + 13, why);
    } else {
        test_node(0);
        if (nodes >= 2)
            test_node(1);
        else
            skip(13, "a machine of one NUMA node has no node 1 to place pages on");
    }
    test_refusals(nodes, list[0] ? list : "unknown");
    test_unplaced(refuse != 0 ? -1 : device_node);
    test_managed();
    gpumem_context_release(ctx);
    done_testing();
    return exit_status();
}
