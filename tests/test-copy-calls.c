/* The driver calls of a small synchronous copy between host and device
 * (issue 29, latency): a contiguous upload or download below the staging
 * threshold is one driver copy and nothing else (the backend's copy
 * completes it: gpumem/debug.h counts what the library asks of the
 * driver), the first copy of a buffer as every later one: no pointer
 * attribute query, no event, no stream query or wait, no second
 * synchronization.  Pinned arrays, pageable memory the library does not
 * know, and pageable memory registered with it (gpumem_pinned); a device
 * slice like `gpumem bench`'s; gpumem_array_copy, gpumem_copy_to_device
 * and gpumem_copy_to_host.  The bytes arrive (values checked).  And an
 * array's page-locked state, which it keeps between copies, follows the
 * host registry. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gpumem.h>

#include "tap.h"

/* Every name gpumem_debug_driver_calls counts (gpumem/debug.h). */
static const char *const ops[] = {
    "cuDriverGetVersion", "cuDeviceGetCount", "cuDeviceGetName", "cuDeviceGetAttribute", "cuDeviceTotalMem",
    "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease", "cuCtxSynchronize", "cuMemGetInfo", "cuMemAlloc",
    "cuMemFree", "cuMemAllocAsync", "cuMemFreeAsync", "cuMemAllocManaged", "cuMemHostAlloc", "cuMemFreeHost",
    "cuMemHostRegister", "cuMemHostUnregister", "cuMemHostGetDevicePointer", "cuMemcpy", "cuMemcpy2D",
    "cuMemcpy3D", "cuMemsetD8", "cuStreamCreate", "cuStreamDestroy", "cuStreamSynchronize", "cuStreamQuery",
    "cuStreamWaitEvent", "cuLaunchHostFunc", "cuEventCreate", "cuEventDestroy", "cuEventRecord", "cuEventQuery",
    "cuEventSynchronize", "cuEventElapsedTime", "cuModuleLoadDataEx", "cuModuleUnload", "cuModuleGetFunction",
    "cuModuleGetGlobal", "cuFuncGetAttribute", "cuFuncSetAttribute",
    "cuOccupancyMaxActiveBlocksPerMultiprocessor", "cuLaunchKernel", "cuPointerGetAttributes",
    "cuMemGetAddressRange", "cuIpcGetMemHandle", "cuIpcOpenMemHandle", "cuIpcCloseMemHandle",
    "cuDeviceCanAccessPeer", "cuCtxEnablePeerAccess", "cuMemcpyPeer"};
#define NOPS (sizeof ops / sizeof ops[0])

typedef struct counts {
    uint64_t total, op[NOPS];
} counts;

static void snap(counts *c)
{
    if (gpumem_debug_driver_calls(NULL, &c->total) != GPUMEM_OK)
        bail_out("gpumem_debug_driver_calls(NULL): %s", gpumem_last_error());
    for (size_t i = 0; i < NOPS; i++)
        if (gpumem_debug_driver_calls(ops[i], &c->op[i]) != GPUMEM_OK)
            bail_out("gpumem_debug_driver_calls(%s): %s", ops[i], gpumem_last_error());
}

/* Runs one copy and checks that it made exactly one driver call, a
 * cuMemcpy; the calls of every other kind it made are named. */
typedef gpumem_status (*copy_fn)(gpumem_array *dst, gpumem_array *src);

static void one_call(const char *name, copy_fn fn, gpumem_array *dst, gpumem_array *src)
{
    counts a, b;
    snap(&a);
    gpumem_status st = fn(dst, src);
    snap(&b);
    char extra[512] = "";
    size_t used = 0;
    for (size_t i = 0; i < NOPS && used < sizeof extra; i++) {
        uint64_t n = b.op[i] - a.op[i] - (strcmp(ops[i], "cuMemcpy") == 0);
        if (n != 0)
            used += (size_t)snprintf(extra + used, sizeof extra - used, " %s%+lld", ops[i], (long long)n);
    }
    ok(st == GPUMEM_OK && b.total - a.total == 1 && extra[0] == '\0',
       "%s: one driver call, one cuMemcpy (got %llu call(s)%s%s%s%s)", name,
       (unsigned long long)(b.total - a.total), extra[0] ? "; beyond one cuMemcpy:" : "", extra,
       st == GPUMEM_OK ? "" : "; ", st == GPUMEM_OK ? "" : gpumem_last_error());
}

static gpumem_status by_array_copy(gpumem_array *dst, gpumem_array *src)
{
    return gpumem_array_copy(dst, src, NULL);
}

static gpumem_status to_device(gpumem_array *dst, gpumem_array *src)
{
    return gpumem_copy_to_device(dst, src, NULL);
}

static gpumem_status to_host(gpumem_array *dst, gpumem_array *src)
{
    return gpumem_copy_to_host(src, dst, NULL);
}

enum { PINNED, PAGEABLE, REGISTERED, NKINDS };
static const char *const kind_names[NKINDS] = {"pinned", "pageable", "registered pageable"};

static gpumem_context *ctx;
static const gpumem_dtype *u8;

static gpumem_array *slice(gpumem_array *a, int64_t start, int64_t n)
{
    gpumem_slice s = {start, start + n, 1};
    gpumem_array *v = NULL;
    if (gpumem_array_slice(a, &s, 1, &v) != GPUMEM_OK)
        bail_out("gpumem_array_slice: %s", gpumem_last_error());
    return v;
}

/* A host array of n bytes of the kind, the first n bytes of a buffer of 2n
 * (as gpumem bench slices it); *mem and *reg what to free. */
static gpumem_array *host_array(int kind, int64_t n, void **mem, gpumem_registration **reg, gpumem_array **whole)
{
    int64_t two = 2 * n;
    *mem = NULL;
    *reg = NULL;
    gpumem_status st;
    if (kind == PINNED) {
        st = gpumem_pinned_array(ctx, 1, &two, NULL, u8, 'C', whole);
    } else {
        /* whole pages of their own: two registrations that share a page are
         * two driver ranges, which one driver copy cannot span (test_split) */
        size_t page = (size_t)sysconf(_SC_PAGESIZE), size = ((size_t)two + page - 1) / page * page;
        if (posix_memalign(mem, page, size) != 0)
            bail_out("out of memory");
        st = gpumem_host_array_wrap(*mem, 1, &two, NULL, u8, whole);
        if (st == GPUMEM_OK && kind == REGISTERED)
            st = gpumem_pinned(ctx, whole, 1, reg);
    }
    if (st != GPUMEM_OK)
        bail_out("a %s host array: %s", kind_names[kind], gpumem_last_error());
    return slice(*whole, 0, n);
}

static void fill(gpumem_array *a, int64_t n, unsigned seed)
{
    unsigned char *p = NULL;
    gpumem_array_host_pointer(a, (void **)&p);
    for (int64_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 7 + seed);
}

static void test_size(int64_t n)
{
    int64_t two = 2 * n;
    gpumem_array *dwhole = NULL;
    if (gpumem_device_array(ctx, 1, &two, NULL, u8, 'C', NULL, &dwhole) != GPUMEM_OK)
        bail_out("a device array: %s", gpumem_last_error());
    gpumem_array *d = slice(dwhole, n / 2, n);
    for (int kind = 0; kind < NKINDS; kind++) {
        void *mem[2];
        gpumem_registration *reg[2];
        gpumem_array *whole[2];
        gpumem_array *h = host_array(kind, n, &mem[0], &reg[0], &whole[0]);
        gpumem_array *back = host_array(kind, n, &mem[1], &reg[1], &whole[1]);
        char name[160];
        fill(h, n, (unsigned)kind);
        fill(back, n, 0x55);
        snprintf(name, sizeof name, "%lld bytes, %s: the first upload", (long long)n, kind_names[kind]);
        one_call(name, by_array_copy, d, h);
        snprintf(name, sizeof name, "%lld bytes, %s: the first download", (long long)n, kind_names[kind]);
        one_call(name, by_array_copy, back, d);
        unsigned char *p = NULL, *q = NULL;
        gpumem_array_host_pointer(h, (void **)&p);
        gpumem_array_host_pointer(back, (void **)&q);
        ok(memcmp(p, q, (size_t)n) == 0, "%lld bytes, %s: the bytes went up and came back", (long long)n,
           kind_names[kind]);
        snprintf(name, sizeof name, "%lld bytes, %s: an upload again", (long long)n, kind_names[kind]);
        one_call(name, by_array_copy, d, h);
        snprintf(name, sizeof name, "%lld bytes, %s: a download again", (long long)n, kind_names[kind]);
        one_call(name, by_array_copy, back, d);
        fill(h, n, 3u + (unsigned)kind);
        snprintf(name, sizeof name, "%lld bytes, %s: gpumem_copy_to_device", (long long)n, kind_names[kind]);
        one_call(name, to_device, d, h);
        snprintf(name, sizeof name, "%lld bytes, %s: gpumem_copy_to_host", (long long)n, kind_names[kind]);
        one_call(name, to_host, back, d);
        ok(memcmp(p, q, (size_t)n) == 0, "%lld bytes, %s: the new bytes went up and came back", (long long)n,
           kind_names[kind]);
        for (int i = 0; i < 2; i++) {
            gpumem_array_release(i == 0 ? h : back);
            if (reg[i] != NULL && gpumem_unpinned(&reg[i]) != GPUMEM_OK)
                bail_out("gpumem_unpinned: %s", gpumem_last_error());
            gpumem_array_release(whole[i]);
            free(mem[i]);
        }
    }
    gpumem_array_release(d);
    gpumem_array_release(dwhole);
}

static gpumem_copy_path upload_path(gpumem_array *d, gpumem_array *h)
{
    gpumem_copy_path p = GPUMEM_COPY_PATH_NONE;
    if (gpumem_array_copy(d, h, NULL) != GPUMEM_OK)
        bail_out("an upload: %s", gpumem_last_error());
    gpumem_debug_last_copy_path(&p);
    return p;
}

/* Whether a host array is page-locked is the host registry's answer, kept
 * by the array until the registry changes: registering and unregistering
 * its memory (or a part of it) after copies of it changes the way the
 * next copy of the same array goes.  Above the staging threshold a
 * pageable upload is staged and a page-locked one is not. */
static void test_registry_followed(void)
{
    const int64_t n = 8 << 20, half = n / 2;
    unsigned char *mem = malloc((size_t)n);
    gpumem_array *h = NULL, *d = NULL, *dhalf = NULL;
    if (mem == NULL || gpumem_host_array_wrap(mem, 1, &n, NULL, u8, &h) != GPUMEM_OK ||
        gpumem_device_array(ctx, 1, &n, NULL, u8, 'C', NULL, &d) != GPUMEM_OK)
        bail_out("arrays: %s", gpumem_last_error());
    memset(mem, 9, (size_t)n);
    gpumem_array *first = slice(h, 0, half), *second = slice(h, half, half);
    dhalf = slice(d, 0, half);
    is_int(upload_path(d, h), GPUMEM_COPY_PATH_STAGED, "8 MiB pageable: staged");
    is_int(upload_path(dhalf, first), GPUMEM_COPY_PATH_STAGED, "its first half: staged");
    gpumem_registration *reg = NULL;
    if (gpumem_pinned(ctx, &first, 1, &reg) != GPUMEM_OK)
        bail_out("gpumem_pinned: %s", gpumem_last_error());
    is_int(upload_path(dhalf, first), GPUMEM_COPY_PATH_CONTIGUOUS, "its first half registered: one driver copy");
    is_int(upload_path(dhalf, second), GPUMEM_COPY_PATH_STAGED, "the second half, not registered: staged");
    is_int(upload_path(d, h), GPUMEM_COPY_PATH_STAGED, "the whole, half registered: staged");
    if (gpumem_unpinned(&reg) != GPUMEM_OK)
        bail_out("gpumem_unpinned: %s", gpumem_last_error());
    is_int(upload_path(dhalf, first), GPUMEM_COPY_PATH_STAGED, "its first half unregistered: staged again");
    if (gpumem_pinned(ctx, &h, 1, &reg) != GPUMEM_OK)
        bail_out("gpumem_pinned: %s", gpumem_last_error());
    is_int(upload_path(d, h), GPUMEM_COPY_PATH_CONTIGUOUS, "the whole registered: one driver copy");
    is_int(upload_path(dhalf, second), GPUMEM_COPY_PATH_CONTIGUOUS, "and its second half");
    if (gpumem_unpinned(&reg) != GPUMEM_OK)
        bail_out("gpumem_unpinned: %s", gpumem_last_error());
    is_int(upload_path(d, h), GPUMEM_COPY_PATH_STAGED, "the whole unregistered: staged again");
    gpumem_array *all[] = {first, second, h, dhalf, d};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        gpumem_array_release(all[i]);
    free(mem);
}

/* Two buffers that share a page, each registered (gpumem_pinned rounds
 * out to pages, so the shared page is the first registration's and the
 * second buffer spans two driver registrations): the driver refuses a copy
 * that starts in one registration and runs past it, whatever its size, so
 * the copy into or out of the second buffer is staged by the library, and
 * its bytes land. */
static void test_split(void)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const int64_t n = (int64_t)(4 * page);
    unsigned char *mem = NULL;
    if (posix_memalign((void **)&mem, page, 6 * page) != 0)
        bail_out("out of memory");
    int64_t first_n = (int64_t)(page + page / 2);
    gpumem_array *a = NULL, *b = NULL, *d = NULL;
    if (gpumem_host_array_wrap(mem, 1, &first_n, NULL, u8, &a) != GPUMEM_OK ||
        gpumem_host_array_wrap(mem + first_n, 1, &n, NULL, u8, &b) != GPUMEM_OK ||
        gpumem_device_array(ctx, 1, &n, NULL, u8, 'C', NULL, &d) != GPUMEM_OK)
        bail_out("arrays: %s", gpumem_last_error());
    gpumem_registration *ra = NULL, *rb = NULL;
    if (gpumem_pinned(ctx, &a, 1, &ra) != GPUMEM_OK || gpumem_pinned(ctx, &b, 1, &rb) != GPUMEM_OK)
        bail_out("gpumem_pinned: %s", gpumem_last_error());
    int pinned = 0;
    gpumem_host_is_pinned(mem + first_n, (size_t)n, &pinned);
    ok(pinned, "the second buffer is page-locked, in two registrations (gpumem_host_is_pinned)");
    for (int64_t i = 0; i < n; i++)
        mem[first_n + i] = (unsigned char)(i * 13 + 1);
    gpumem_copy_path p = GPUMEM_COPY_PATH_NONE;
    is_int(gpumem_array_copy(d, b, NULL), GPUMEM_OK, "an upload from the buffer that spans two registrations");
    gpumem_debug_last_copy_path(&p);
    is_int(p, GPUMEM_COPY_PATH_STAGED, "staged, below the staging threshold");
    memset(mem + first_n, 0, (size_t)n);
    is_int(gpumem_array_copy(b, d, NULL), GPUMEM_OK, "a download into it");
    gpumem_debug_last_copy_path(&p);
    is_int(p, GPUMEM_COPY_PATH_STAGED, "staged too");
    int same = 1;
    for (int64_t i = 0; i < n; i++)
        same &= mem[first_n + i] == (unsigned char)(i * 13 + 1);
    ok(same, "the bytes went up and came back");
    gpumem_unpinned(&ra);
    gpumem_unpinned(&rb);
    gpumem_array *all[] = {a, b, d};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        gpumem_array_release(all[i]);
    free(mem);
}

int main(void)
{
    /* 4 KiB to just below the staging threshold (GPUMEM_STAGING_MIN_BYTES's 4 MiB) */
    static const int64_t sizes[] = {4096, 16384, 1 << 20, (4 << 20) - 4096};
    const int nsizes = (int)(sizeof sizes / sizeof sizes[0]);
    unsetenv("GPUMEM_STAGING_MIN_BYTES"); /* the default threshold */
    unsetenv("GPUMEM_DEBUG");            /* poison and the like add their own calls */
    if (gpumem_context_create(0, &ctx) != GPUMEM_OK)
        plan_skip_all(gpumem_last_error());
    u8 = gpumem_dtype_builtin(GPUMEM_UINT8);
    plan(nsizes * NKINDS * 8 + 9 + 6);
    for (int i = 0; i < nsizes; i++)
        test_size(sizes[i]);
    test_registry_followed();
    test_split();
    gpumem_context_release(ctx);
    return exit_status();
}
