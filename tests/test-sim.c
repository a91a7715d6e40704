/* The simulator backend itself, through the driver table as the library
 * calls it (GM_DRV): its settings, architectures, memory model and streams.
 * Runs only on the simulator. */
#include "config.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "child.h"
#include "driver.h"
#include "gpumem.h"
#include "sim.h"
#include "tap.h"

#define MiB ((size_t)1 << 20)
#define CAPACITY (64 * MiB)
#define HOST_LIMIT (16 * MiB)
/* GPUMEM_SIM_STREAM_DELAY_US below, in ms: long enough that a loaded machine
 * still checks "not done yet" before it passes, short enough to poll. */
#define DELAY_MS 300

static gm_cu_deviceptr H(const void *p)
{
    return (gm_cu_deviceptr)(uintptr_t)p;
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int all_bytes(const void *p, int v, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i] != (unsigned char)v)
            return 0;
    return 1;
}

static void pattern(void *p, size_t n, unsigned seed)
{
    unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)(seed + i * 7 + (i >> 8));
}

/* Synchronous copies on the default stream. */
static int h2d(gm_dctx *c, gm_cu_deviceptr d, const void *h, size_t n)
{
    return GM_DRV(memcpy, c, d, H(h), n, NULL, 0);
}

static int d2h(gm_dctx *c, void *h, gm_cu_deviceptr d, size_t n)
{
    return GM_DRV(memcpy, c, H(h), d, n, NULL, 0);
}

/* ---- configuration: one child per case (the backend loads once) ---------- */

typedef struct setting {
    const char *name, *value;
} setting;

static void load_with(const void *arg, child_result *out)
{
    const setting *s = arg;
    setenv(s->name, s->value, 1);
    out->status = gm_driver_ready();
    snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
}

static void test_bad_settings(void)
{
    static const setting bad[] = {
        {"GPUMEM_SIM_DEVICES", "0"},
        {"GPUMEM_SIM_DEVICES", "65"},
        {"GPUMEM_SIM_DEVICES", "two"},
        {"GPUMEM_SIM_MEMORY", "512K"},
        {"GPUMEM_SIM_MEMORY", "12Q"},
        {"GPUMEM_SIM_ARCH", "sm_99"},
        {"GPUMEM_SIM_BUSY", "0,0"},
        {"GPUMEM_SIM_BUSY", "3"},
        {"GPUMEM_SIM_BUSY", "1,x"},
        {"GPUMEM_SIM_BUSY", "1,"},
        {"GPUMEM_SIM_BUSY", "-1"},
        {"GPUMEM_SIM_HOST_MEMORY", "lots"},
        {"GPUMEM_SIM_STREAM_DELAY_US", "-1"},
        {"GPUMEM_SIM_STREAM_DELAY_US", "20000000"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        child_result r;
        char want[128];
        run_child(load_with, &bad[i], &r);
        snprintf(want, sizeof want, "%s='%s'", bad[i].name, bad[i].value);
        ok(r.status == GPUMEM_ERROR_INVALID_ENVIRONMENT && strstr(r.text, want) != NULL,
           "%s is refused, naming the variable and value", want);
        if (r.status != GPUMEM_ERROR_INVALID_ENVIRONMENT || strstr(r.text, want) == NULL)
            diag("  status %d: %s", r.status, r.text);
        if (strcmp(bad[i].name, "GPUMEM_SIM_ARCH") == 0)
            like(r.text, "sm_75, sm_80, sm_86, sm_89, sm_90, sm_100, sm_120",
                 "an unknown architecture lists the known ones");
    }
}

/* What NVIDIA's per-compute-capability table and the imitated products say. */
static const struct arch_case {
    const char *arch, *name;
    int values[10];
} arch_cases[] = {
    {"sm_75", "gpumem sim sm_75 (T4-like)", {7, 5, 40, 1024, 16, 65536, 65536, 0, 4194304, 3}},
    {"sm_80", "gpumem sim sm_80 (A100-like)", {8, 0, 108, 2048, 32, 167936, 166912, 1024, 41943040, 3}},
    {"sm_86", "gpumem sim sm_86 (RTX 3090-like)", {8, 6, 82, 1536, 16, 102400, 101376, 1024, 6291456, 2}},
    {"sm_89", "gpumem sim sm_89 (RTX 4090-like)", {8, 9, 128, 1536, 24, 102400, 101376, 1024, 75497472, 2}},
    {"sm_90", "gpumem sim sm_90 (H100-like)", {9, 0, 132, 2048, 32, 233472, 232448, 1024, 52428800, 3}},
    {"sm_100", "gpumem sim sm_100 (B200-like)", {10, 0, 148, 2048, 32, 233472, 232448, 1024, 132644864, 3}},
    {"sm_120", "gpumem sim sm_120 (RTX 5090-like)", {12, 0, 170, 1536, 24, 102400, 101376, 1024, 100663296, 2}},
};

static const int arch_attrs[10] = {
    GM_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
    GM_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
    GM_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
    GM_CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
    GM_CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR,
    GM_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
    GM_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
    GM_CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK,
    GM_CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE,
    GM_CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT,
};

/* value[0]: attributes that differ; text: the name, then the differences. */
static void check_arch(const void *arg, child_result *out)
{
    const struct arch_case *c = arg;
    setenv("GPUMEM_SIM_ARCH", c->arch, 1);
    out->status = gm_driver_ready();
    if (out->status != GPUMEM_OK) {
        snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
        return;
    }
    GM_DRV(device_get_name, 0, out->text, 64);
    for (int i = 0; i < 10; i++) {
        int v = -1;
        GM_DRV(device_get_attribute, 0, arch_attrs[i], &v);
        if (v != c->values[i]) {
            size_t len = strlen(out->text);
            snprintf(out->text + len, sizeof out->text - len, "; attribute %d is %d, not %d",
                     arch_attrs[i], v, c->values[i]);
            out->value[0]++;
        }
    }
}

static void test_archs(void)
{
    for (size_t i = 0; i < sizeof arch_cases / sizeof arch_cases[0]; i++) {
        child_result r;
        run_child(check_arch, &arch_cases[i], &r);
        ok(r.status == GPUMEM_OK && r.value[0] == 0, "GPUMEM_SIM_ARCH=%s: compute capability, SMs, "
           "per-SM limits, L2 and copy engines are the published ones", arch_cases[i].arch);
        if (r.value[0] != 0 || r.status != GPUMEM_OK)
            diag("  %s", r.text);
        is_str(strtok(r.text, ";"), arch_cases[i].name, "and the device is named after it");
    }
}

/* ---- devices and contexts ----------------------------------------------- */

/* ---- IPC between processes: the memfd's number ---------------------------- */

#define IPC_FD_FLOOR 40 /* the exporter's memfd gets this number or the next free one */

/* The descriptor of this process that is a simulator memfd, or -1. */
static int find_sim_memfd(void)
{
    for (int fd = 0; fd < IPC_FD_FLOOR + 64; fd++) {
        char path[64], target[256];
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(path, target, sizeof target - 1);
        if (n > 0) {
            target[n] = '\0';
            if (strstr(target, "memfd:gpumem-sim-") != NULL)
                return fd;
        }
    }
    return -1;
}

/* Takes every free descriptor below n (with /dev/null); 0 when n itself is
 * then the lowest free one. */
static int make_lowest_free(int n)
{
    for (int fd = 0; fd < n; fd++)
        if (fcntl(fd, F_GETFD) < 0) {
            int d = open("/dev/null", O_RDONLY);
            if (d != fd)
                return -1;
        }
    int probe = open("/dev/null", O_RDONLY);
    if (probe >= 0)
        close(probe);
    return probe == n ? 0 : -1;
}

typedef struct ipc_export {
    gm_cu_ipc_mem_handle handle;
    int memfd; /* its number in the exporting process */
} ipc_export;

/* The importing process: its lowest free descriptor is the exporter's
 * memfd number, so open() of /proc/<pid>/fd/<n> gives the file that very
 * number.  value[0]: the lowest free descriptor was n; value[1]: the
 * mapping holds the exporter's bytes; value[2]: the close left n free. */
static void import_at_same_number(const void *arg, child_result *out)
{
    const ipc_export *e = arg;
    gm_dctx *c = NULL;
    gm_cu_deviceptr p = 0;
    out->status = -1;
    if (gm_driver_ready() != GPUMEM_OK || GM_DRV(primary_ctx_retain, 0, &c) != GM_CUDA_SUCCESS) {
        snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
        return;
    }
    out->value[0] = make_lowest_free(e->memfd) == 0;
    out->status = GM_DRV(ipc_open_mem_handle, c, &p, &e->handle, 0);
    if (out->status == GM_CUDA_SUCCESS) {
        unsigned char want[4096], got[4096];
        pattern(want, sizeof want, 77);
        out->value[1] = d2h(c, got, p, sizeof got) == GM_CUDA_SUCCESS && memcmp(got, want, sizeof got) == 0;
        out->value[2] = GM_DRV(ipc_close_mem_handle, c, p) == GM_CUDA_SUCCESS && fcntl(e->memfd, F_GETFD) < 0;
    }
    GM_DRV(primary_ctx_release, 0);
}

/* The exporting process, forked before this one loads the simulator:
 * exports 4 KiB of pattern(77) through a memfd numbered at least
 * IPC_FD_FLOOR, sends the handle, keeps the memory until `wait_fd` closes. */
static void export_for_import(int out, int wait_fd)
{
    gm_dctx *c = NULL;
    gm_cu_deviceptr d = 0;
    ipc_export e = {.memfd = -1};
    unsigned char bytes[4096];
    pattern(bytes, sizeof bytes, 77);
    if (gm_driver_ready() == GPUMEM_OK && GM_DRV(primary_ctx_retain, 0, &c) == GM_CUDA_SUCCESS &&
        GM_DRV(mem_alloc, c, &d, sizeof bytes) == GM_CUDA_SUCCESS && h2d(c, d, bytes, sizeof bytes) == 0) {
        for (int fd = 0; fd < IPC_FD_FLOOR; fd++)
            if (fcntl(fd, F_GETFD) < 0)
                open("/dev/null", O_RDONLY);
        if (GM_DRV(ipc_get_mem_handle, c, &e.handle, d) == GM_CUDA_SUCCESS)
            e.memfd = find_sim_memfd();
    }
    if (write(out, &e, sizeof e) != (ssize_t)sizeof e)
        _exit(1);
    char byte;
    while (read(wait_fd, &byte, 1) > 0)
        ;
    _exit(0);
}

/* A valid handle opened in a process whose lowest free descriptor equals
 * the exporter's memfd number (issue 21): the check "is this my own memfd"
 * compared the file it had just opened with itself and refused it. */
static void test_ipc_same_fd_number(void)
{
    int to[2], from[2];
    if (pipe(to) != 0 || pipe(from) != 0)
        bail_out("pipe");
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        bail_out("fork");
    if (pid == 0) {
        close(to[1]);
        close(from[0]);
        export_for_import(from[1], to[0]);
    }
    close(to[0]);
    close(from[1]);
    ipc_export e = {.memfd = -1};
    ssize_t got = read(from[0], &e, sizeof e);
    close(from[0]);
    ok(got == (ssize_t)sizeof e && e.memfd >= IPC_FD_FLOOR, "another process exported 4 KiB through memfd %d",
       e.memfd);
    child_result r;
    if (got == (ssize_t)sizeof e && e.memfd >= 0 && run_child(import_at_same_number, &e, &r) == 0) {
        ok(r.value[0], "the importing process's lowest free descriptor is %d, the exporter's memfd number",
           e.memfd);
        if (!is_int(r.status, GM_CUDA_SUCCESS, "it opens the handle"))
            diag("%s", gm_cu_error_name(r.status) ? gm_cu_error_name(r.status) : r.text);
        ok(r.value[1], "and reads the exporter's bytes");
        ok(r.value[2], "closing it unmaps it and keeps no descriptor");
    } else {
        ok(0, "the importing process reported");
        skip(3, "no import");
    }
    close(to[1]);
    waitpid(pid, NULL, 0);
}

static void test_devices(void)
{
    int v = 0;
    is_int(GM_DRV(driver_get_version, &v), GM_CUDA_SUCCESS, "driver_get_version");
    is_int(v, 13000, "the simulated driver is CUDA 13.0");
    is_int(GM_DRV(device_get_count, &v), GM_CUDA_SUCCESS, "device_get_count");
    is_int(v, 3, "GPUMEM_SIM_DEVICES=3");
    char name[64];
    GM_DRV(device_get_name, 1, name, (int)sizeof name);
    is_str(name, "gpumem sim sm_90 (H100-like)", "device name");
    is_int(GM_DRV(device_get_name, 3, name, (int)sizeof name), GM_CUDA_ERROR_INVALID_DEVICE,
           "device_get_name of a missing device: CUDA_ERROR_INVALID_DEVICE");
    size_t total = 0;
    GM_DRV(device_total_mem, 0, &total);
    is_int(total, CAPACITY, "device_total_mem is GPUMEM_SIM_MEMORY");

    static const struct {
        int attr, want;
        const char *what;
    } h100[] = {
        {GM_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 132, "132 SMs"},
        {GM_CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 2048, "2048 threads per SM"},
        {GM_CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, 32, "32 blocks per SM"},
        {GM_CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, 65536, "64K registers per SM"},
        {GM_CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, 65536, "64K registers per block"},
        {GM_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 49152, "48K shared memory per block"},
        {GM_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 232448, "227K opt-in"},
        {GM_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, 233472, "228K per SM"},
        {GM_CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, 1024, "1K reserved per block"},
        {GM_CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 52428800, "50 MB L2"},
        {GM_CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024, "1024 threads per block"},
        {GM_CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32, "warp of 32"},
        {GM_CU_DEVICE_ATTRIBUTE_MAX_PITCH, 2147483647, "max pitch"},
        {GM_CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, 512, "texture alignment 512"},
        {GM_CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, 1, "can map host memory"},
        {GM_CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1, "unified addressing"},
        {GM_CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 1, "managed memory"},
        {GM_CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, 1, "concurrent managed access"},
        {GM_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 9, "compute capability 9."},
        {GM_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0, "compute capability .0"},
        {GM_CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, GM_CU_COMPUTEMODE_DEFAULT, "a free device: default compute mode"},
    };
    for (size_t i = 0; i < sizeof h100 / sizeof h100[0]; i++) {
        v = -1;
        GM_DRV(device_get_attribute, 0, h100[i].attr, &v);
        is_int(v, h100[i].want, h100[i].what);
    }
    GM_DRV(device_get_attribute, 2, GM_CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, &v);
    is_int(v, GM_CU_COMPUTEMODE_EXCLUSIVE_PROCESS, "a busy device: exclusive-process compute mode");
    int bus[3];
    for (int d = 0; d < 3; d++)
        GM_DRV(device_get_attribute, d, GM_CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, &bus[d]);
    ok(bus[0] != bus[1] && bus[1] != bus[2] && bus[0] != bus[2], "PCI bus ids differ (%d, %d, %d)",
       bus[0], bus[1], bus[2]);
    is_int(GM_DRV(device_get_attribute, 0, 12345, &v), GM_CUDA_ERROR_INVALID_VALUE,
           "an unknown attribute: CUDA_ERROR_INVALID_VALUE");
    is_int(GM_DRV(device_get_attribute, 3, GM_CU_DEVICE_ATTRIBUTE_WARP_SIZE, &v),
           GM_CUDA_ERROR_INVALID_DEVICE, "an attribute of a missing device: CUDA_ERROR_INVALID_DEVICE");
}

static void test_contexts(gm_dctx **ctx0)
{
    gm_dctx *c = NULL, *again = NULL;
    is_int(GM_DRV(primary_ctx_retain, 2, &c), GM_CUDA_ERROR_DEVICE_UNAVAILABLE,
           "a busy device refuses a context");
    is_int(GM_DRV(primary_ctx_retain, 3, &c), GM_CUDA_ERROR_INVALID_DEVICE, "a missing device");
    is_int(GM_DRV(primary_ctx_release, 0), GM_CUDA_ERROR_INVALID_CONTEXT, "release without a retain");
    is_int(GM_DRV(primary_ctx_retain, 0, &c), GM_CUDA_SUCCESS, "retain device 0");
    GM_DRV(primary_ctx_retain, 0, &again);
    ok(c != NULL && c == again, "retains nest: the same primary context");
    GM_DRV(primary_ctx_release, 0);
    size_t free_b = 0, total_b = 0;
    is_int(GM_DRV(mem_get_info, c, &free_b, &total_b), GM_CUDA_SUCCESS,
           "the context lives while one reference is left");
    ok(free_b == CAPACITY && total_b == CAPACITY, "mem_get_info of a fresh device: all free (%zu/%zu)",
       free_b, total_b);
    static int not_a_context;
    is_int(GM_DRV(mem_get_info, (gm_dctx *)&not_a_context, &free_b, &total_b),
           GM_CUDA_ERROR_INVALID_CONTEXT, "a pointer that is no context: CUDA_ERROR_INVALID_CONTEXT");
    *ctx0 = c;
}

/* ---- memory -------------------------------------------------------------- */

static size_t free_of(gm_dctx *c)
{
    size_t f = 0, t = 0;
    GM_DRV(mem_get_info, c, &f, &t);
    return f;
}

/* A thread of this process, kept alive while the test reads its id. */
static pthread_mutex_t tid_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t tid_cv = PTHREAD_COND_INITIALIZER;
static long thread_tid;
static int tid_done;

static void *tid_thread(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&tid_mu);
    thread_tid = (long)gettid();
    pthread_cond_broadcast(&tid_cv);
    while (!tid_done)
        pthread_cond_wait(&tid_cv, &tid_mu);
    pthread_mutex_unlock(&tid_mu);
    return NULL;
}

/* /proc/<pid> also names a process's threads: a handle whose process id is
 * one of this process's threads reaches this process's own memory, which
 * the driver refuses as in the exporting process (found by fuzz-ipc). */
static void test_ipc_own_thread(gm_dctx *c)
{
    gm_cu_deviceptr d = 0, o = 0;
    gm_cu_ipc_mem_handle h;
    GM_DRV(mem_alloc, c, &d, 4096);
    is_int(GM_DRV(ipc_get_mem_handle, c, &h, d), GM_CUDA_SUCCESS, "an IPC handle of this process");
    pthread_t t;
    pthread_create(&t, NULL, tid_thread, NULL);
    pthread_mutex_lock(&tid_mu);
    while (thread_tid == 0)
        pthread_cond_wait(&tid_cv, &tid_mu);
    pthread_mutex_unlock(&tid_mu);
    /* the process id, wherever the handle keeps it, becomes the thread's id */
    uint64_t pid = (uint64_t)getpid(), tid = (uint64_t)thread_tid;
    int found = 0;
    for (size_t off = 0; off + 8 <= sizeof h; off++)
        if (memcmp((char *)&h + off, &pid, 8) == 0) {
            memcpy((char *)&h + off, &tid, 8);
            found = 1;
            break;
        }
    ok(found && tid != pid, "the handle names a thread of this process (%llu) instead", (unsigned long long)tid);
    is_int(GM_DRV(ipc_open_mem_handle, c, &o, &h, 0), GM_CUDA_ERROR_INVALID_CONTEXT,
           "opening it is refused as in the exporting process");
    pthread_mutex_lock(&tid_mu);
    tid_done = 1;
    pthread_cond_broadcast(&tid_cv);
    pthread_mutex_unlock(&tid_mu);
    pthread_join(t, NULL);
    GM_DRV(mem_free, c, d);
}

/* cuMemGetAddressRange: the device or managed allocation holding an
 * address, as the registry knows it; counted and injectable like every
 * operation of the table. */
static void test_address_range(gm_dctx *c)
{
    gm_cu_deviceptr d = 0, m = 0, base = 1;
    size_t size = 1;
    void *p = NULL;
    GM_DRV(mem_alloc, c, &d, 4096);
    GM_DRV(mem_alloc_managed, c, &m, 3000, GM_CU_MEM_ATTACH_GLOBAL);
    GM_DRV(mem_host_alloc, c, &p, 4096, 0);
    uint64_t calls0 = 0, calls1 = 0;
    gpumem_debug_driver_calls("cuMemGetAddressRange", &calls0);
    is_int(GM_DRV(mem_get_address_range, c, &base, &size, d + 100), GM_CUDA_SUCCESS,
           "an address inside a device allocation");
    ok(base == d && size == 4096, "its allocation's base and size (0x%llx, %zu)", (unsigned long long)base, size);
    base = 1;
    is_int(GM_DRV(mem_get_address_range, c, &base, NULL, d + 4095), GM_CUDA_SUCCESS, "the last byte, no size wanted");
    ok(base == d, "the same base");
    size = 1;
    is_int(GM_DRV(mem_get_address_range, c, NULL, &size, m + 2999), GM_CUDA_SUCCESS, "managed memory");
    is_int(size, 3000, "its size");
    is_int(GM_DRV(mem_get_address_range, c, &base, &size, d + 4096), GM_CUDA_ERROR_NOT_FOUND,
           "the byte after the allocation is NOT_FOUND");
    is_int(GM_DRV(mem_get_address_range, c, &base, &size, H(p)), GM_CUDA_ERROR_NOT_FOUND,
           "page-locked host memory is no device allocation");
    is_int(GM_DRV(mem_get_address_range, c, &base, &size, H(&base)), GM_CUDA_ERROR_NOT_FOUND, "pageable memory");
    is_int(GM_DRV(mem_get_address_range, NULL, &base, &size, d), GM_CUDA_ERROR_INVALID_CONTEXT, "no context");
    gpumem_debug_driver_calls("cuMemGetAddressRange", &calls1);
    is_int(calls1 - calls0, 7, "each call counted as cuMemGetAddressRange");
    gpumem_debug_fail_call(1, GM_CUDA_ERROR_ILLEGAL_ADDRESS);
    base = 1;
    is_int(GM_DRV(mem_get_address_range, c, &base, &size, d), GM_CUDA_ERROR_ILLEGAL_ADDRESS,
           "fault injection reaches it");
    is_int(base, 1, "without reaching the simulator");
    GM_DRV(mem_free, c, d);
    is_int(GM_DRV(mem_get_address_range, c, &base, &size, d), GM_CUDA_ERROR_NOT_FOUND, "a freed allocation");
    GM_DRV(mem_free, c, m);
    GM_DRV(mem_free_host, c, p);
}

static void test_capacity(gm_dctx *c)
{
    gm_cu_deviceptr a = 0, b = 0, x = 0;
    is_int(GM_DRV(mem_alloc, c, &a, 0), GM_CUDA_ERROR_INVALID_VALUE, "mem_alloc of 0 bytes");
    is_int(GM_DRV(mem_alloc, c, &a, 1000), GM_CUDA_SUCCESS, "mem_alloc of 1000 bytes");
    ok(a >= GM_SIM_DEVICE_BASE, "device addresses are not host addresses (0x%llx)", (unsigned long long)a);
    is_int(free_of(c), CAPACITY - 1024, "1000 bytes take 1024 of the capacity");
    is_int(GM_DRV(mem_alloc, c, &b, CAPACITY - 1024), GM_CUDA_SUCCESS, "the rest of the capacity");
    is_int(free_of(c), 0, "nothing is free");
    is_int(GM_DRV(mem_alloc, c, &x, 1), GM_CUDA_ERROR_OUT_OF_MEMORY, "one byte more: out of memory");
    is_int(GM_DRV(mem_free, c, b), GM_CUDA_SUCCESS, "free the big one");
    is_int(GM_DRV(mem_alloc, c, &x, CAPACITY - 1024), GM_CUDA_SUCCESS, "its room can be allocated again");
    ok(x != b, "at a new address: device addresses are never reused");
    GM_DRV(mem_free, c, x);
    is_int(GM_DRV(mem_free, c, x), GM_CUDA_ERROR_INVALID_VALUE, "a double free: CUDA_ERROR_INVALID_VALUE");
    is_int(GM_DRV(mem_free, c, a + 16), GM_CUDA_ERROR_INVALID_VALUE, "freeing an interior pointer");

    gm_sim_ptr_info info;
    is_int(gm_sim_pointer_info(a + 5, &info), GM_CUDA_SUCCESS, "the registry finds an interior address");
    ok(info.kind == GM_SIM_MEM_DEVICE && info.base == a && info.size == 1000 && info.device == 0,
       "as device memory of device 0, its base and size");
    unsigned char buf[1000];
    d2h(c, buf, a, sizeof buf);
    ok(all_bytes(buf, GM_SIM_GARBAGE_BYTE, sizeof buf), "new device memory holds garbage, not zeros");
    GM_DRV(mem_free, c, a);
    is_int(free_of(c), CAPACITY, "all memory is back");
    is_int(gm_sim_pointer_info(a + 5, &info), GM_CUDA_ERROR_INVALID_VALUE, "a freed address is unknown");
}

static void test_copies(gm_dctx *c)
{
    enum { N = 4096 };
    static unsigned char src[N], dst[N], tmp[N];
    gm_cu_deviceptr a = 0, b = 0;
    GM_DRV(mem_alloc, c, &a, N);
    GM_DRV(mem_alloc, c, &b, N);
    pattern(src, N, 3);
    is_int(h2d(c, a, src, N), GM_CUDA_SUCCESS, "host to device");
    is_int(d2h(c, dst, a, N), GM_CUDA_SUCCESS, "device to host");
    ok(memcmp(src, dst, N) == 0, "the bytes come back");
    is_int(GM_DRV(memcpy, c, b + 100, a + 200, 1000, NULL, 0), GM_CUDA_SUCCESS, "device to device");
    d2h(c, tmp, b + 100, 1000);
    ok(memcmp(tmp, src + 200, 1000) == 0, "device to device, with offsets");
    memset(dst, 0, N);
    is_int(GM_DRV(memcpy, c, H(dst), H(src), N, NULL, 0), GM_CUDA_SUCCESS, "host to host");
    ok(memcmp(src, dst, N) == 0, "host to host copies too");

    memset(dst, 0x77, N);
    is_int(d2h(c, dst, a + 3000, 2000), GM_CUDA_ERROR_INVALID_VALUE, "reading past an allocation's end");
    ok(all_bytes(dst, 0x77, N), "touches nothing");
    is_int(d2h(c, dst, a + N + 16, 16), GM_CUDA_ERROR_INVALID_VALUE, "an address between allocations");
    is_int(h2d(c, a - 8, src, 16), GM_CUDA_ERROR_INVALID_VALUE, "writing before an allocation's start");
    d2h(c, tmp, a, N);
    ok(memcmp(tmp, src, N) == 0, "and the allocation is unchanged");

    /* memsets of 1, 2 and 4 bytes */
    is_int(GM_DRV(memset, c, a, 0xAB, 1, 10, NULL, 0), GM_CUDA_SUCCESS, "memset of bytes");
    is_int(GM_DRV(memset, c, a + 10, 0xBEEF, 2, 5, NULL, 0), GM_CUDA_SUCCESS, "memset of 16-bit words");
    is_int(GM_DRV(memset, c, a + 20, 0xDEADBEEFu, 4, 3, NULL, 0), GM_CUDA_SUCCESS, "memset of 32-bit words");
    d2h(c, tmp, a, 40);
    uint16_t w16;
    uint32_t w32;
    memcpy(&w16, tmp + 18, 2);
    memcpy(&w32, tmp + 28, 4);
    ok(all_bytes(tmp, 0xAB, 10) && w16 == 0xBEEF && w32 == 0xDEADBEEFu && tmp[32] == src[32],
       "each memset wrote its elements and no more");
    is_int(GM_DRV(memset, c, a, 1, 3, 4, NULL, 0), GM_CUDA_ERROR_INVALID_VALUE, "an element of 3 bytes");
    is_int(GM_DRV(memset, c, a + 2, 1, 4, 4, NULL, 0), GM_CUDA_ERROR_INVALID_VALUE,
           "a misaligned 32-bit memset");
    is_int(GM_DRV(memset, c, H(dst), 1, 1, 4, NULL, 0), GM_CUDA_ERROR_INVALID_VALUE,
           "a memset of pageable host memory");
    is_int(GM_DRV(memset, c, a + N - 4, 0, 4, 2, NULL, 0), GM_CUDA_ERROR_INVALID_VALUE,
           "a memset past the end");
    d2h(c, tmp, a + N - 8, 8);
    ok(memcmp(tmp, src + N - 8, 8) == 0, "writes nothing");
    GM_DRV(mem_free, c, b);
    is_int(d2h(c, dst, b, 16), GM_CUDA_ERROR_INVALID_VALUE, "a copy from freed memory");
    GM_DRV(mem_free, c, a);
}

/* The bytes a 3-D copy (2-D when d == 1) leaves at dst, done by hand. */
static void copy_reference(unsigned char *dst, size_t dpitch, size_t dheight, size_t dx, size_t dy, size_t dz,
                           const unsigned char *src, size_t spitch, size_t sheight, size_t sx, size_t sy,
                           size_t sz, size_t w, size_t h, size_t d)
{
    for (size_t z = 0; z < d; z++)
        for (size_t y = 0; y < h; y++)
            for (size_t x = 0; x < w; x++)
                dst[((dz + z) * dheight + dy + y) * dpitch + dx + x] =
                    src[((sz + z) * sheight + sy + y) * spitch + sx + x];
}

static void test_copies_2d(gm_dctx *c)
{
    enum { SP = 40, SH = 8, DP = 64, DH = 8, W = 24, HT = 5 };
    static unsigned char src[SP * SH], back[DP * DH], want[DP * DH], out[SP * SH], want_out[SP * SH];
    gm_cu_deviceptr d = 0;
    GM_DRV(mem_alloc, c, &d, DP * DH);
    GM_DRV(memset, c, d, 0, 1, DP * DH, NULL, 0);
    pattern(src, sizeof src, 11);

    gm_cu_memcpy2d m = {0};
    m.srcMemoryType = GM_CU_MEMORYTYPE_HOST;
    m.srcHost = src;
    m.srcPitch = SP;
    m.srcXInBytes = 4;
    m.srcY = 1;
    m.dstMemoryType = GM_CU_MEMORYTYPE_DEVICE;
    m.dstDevice = d;
    m.dstPitch = DP;
    m.dstXInBytes = 8;
    m.dstY = 2;
    m.WidthInBytes = W;
    m.Height = HT;
    is_int(GM_DRV(memcpy_2d, c, &m, NULL, 0), GM_CUDA_SUCCESS, "2-D host to device with pitches and offsets");
    d2h(c, back, d, sizeof back);
    memset(want, 0, sizeof want);
    copy_reference(want, DP, DH, 8, 2, 0, src, SP, SH, 4, 1, 0, W, HT, 1);
    ok(memcmp(back, want, sizeof want) == 0, "matches the reference loop, gaps untouched");

    gm_cu_memcpy2d r = {0};
    r.srcMemoryType = GM_CU_MEMORYTYPE_UNIFIED;
    r.srcDevice = d;
    r.srcPitch = DP;
    r.srcXInBytes = 6;
    r.srcY = 1;
    r.dstMemoryType = GM_CU_MEMORYTYPE_UNIFIED;
    r.dstDevice = H(out);
    r.dstPitch = SP;
    r.dstXInBytes = 2;
    r.dstY = 3;
    r.WidthInBytes = 30;
    r.Height = 4;
    memset(out, 0xCC, sizeof out);
    memset(want_out, 0xCC, sizeof want_out);
    copy_reference(want_out, SP, SH, 2, 3, 0, back, DP, DH, 6, 1, 0, 30, 4, 1);
    is_int(GM_DRV(memcpy_2d, c, &r, NULL, 0), GM_CUDA_SUCCESS, "2-D device to host, unified addresses");
    ok(memcmp(out, want_out, sizeof out) == 0, "matches the reference loop");

    gm_cu_memcpy2d bad = m;
    bad.srcPitch = W - 1;
    is_int(GM_DRV(memcpy_2d, c, &bad, NULL, 0), GM_CUDA_ERROR_INVALID_VALUE, "a pitch below the width");
    bad = m;
    bad.dstMemoryType = GM_CU_MEMORYTYPE_ARRAY;
    is_int(GM_DRV(memcpy_2d, c, &bad, NULL, 0), GM_CUDA_ERROR_INVALID_VALUE, "CUDA arrays are not simulated");
    bad = m;
    bad.dstY = 4; /* rows 4..8 of an 8-row buffer */
    bad.srcHost = src;
    memset(src, 0x99, sizeof src);
    is_int(GM_DRV(memcpy_2d, c, &bad, NULL, 0), GM_CUDA_ERROR_INVALID_VALUE, "rows past the allocation");
    bad = m;
    bad.Height = 0;
    is_int(GM_DRV(memcpy_2d, c, &bad, NULL, 0), GM_CUDA_SUCCESS, "Height 0 is a no-op");
    d2h(c, back, d, sizeof back);
    ok(memcmp(back, want, sizeof want) == 0, "and neither copy touched the device");
    bad = m;
    bad.dstMemoryType = GM_CU_MEMORYTYPE_HOST;
    bad.dstHost = (void *)(uintptr_t)d;
    is_int(GM_DRV(memcpy_2d, c, &bad, NULL, 0), GM_CUDA_ERROR_INVALID_VALUE,
           "a device address given as host memory");
    GM_DRV(mem_free, c, d);
}

static void test_copies_3d(gm_dctx *c)
{
    enum { SP = 16, SH = 6, SD = 4, DP = 32, DH = 5, DD = 4, W = 10, HT = 4, D = 3 };
    static unsigned char src[SP * SH * SD], back[DP * DH * DD], want[DP * DH * DD];
    gm_cu_deviceptr d = 0;
    GM_DRV(mem_alloc, c, &d, sizeof back);
    GM_DRV(memset, c, d, 0x11, 1, sizeof back, NULL, 0);
    pattern(src, sizeof src, 29);

    gm_cu_memcpy3d m = {0};
    m.srcMemoryType = GM_CU_MEMORYTYPE_HOST;
    m.srcHost = src;
    m.srcPitch = SP;
    m.srcHeight = SH;
    m.srcXInBytes = 2;
    m.srcY = 1;
    m.srcZ = 1;
    m.dstMemoryType = GM_CU_MEMORYTYPE_DEVICE;
    m.dstDevice = d;
    m.dstPitch = DP;
    m.dstHeight = DH;
    m.dstXInBytes = 4;
    m.dstY = 1;
    m.dstZ = 0;
    m.WidthInBytes = W;
    m.Height = HT;
    m.Depth = D;
    is_int(GM_DRV(memcpy_3d, c, &m, NULL, 0), GM_CUDA_SUCCESS, "3-D host to device with offsets");
    d2h(c, back, d, sizeof back);
    memset(want, 0x11, sizeof want);
    copy_reference(want, DP, DH, 4, 1, 0, src, SP, SH, 2, 1, 1, W, HT, D);
    ok(memcmp(back, want, sizeof want) == 0, "matches the reference loop, slice by slice");

    static unsigned char out[SP * SH * SD], want_out[SP * SH * SD];
    gm_cu_memcpy3d r = {0};
    r.srcMemoryType = GM_CU_MEMORYTYPE_DEVICE;
    r.srcDevice = d;
    r.srcPitch = DP;
    r.srcHeight = DH;
    r.srcXInBytes = 3;
    r.srcZ = 1;
    r.dstMemoryType = GM_CU_MEMORYTYPE_HOST;
    r.dstHost = out;
    r.dstPitch = SP;
    r.dstHeight = SH;
    r.dstY = 2;
    r.dstZ = 1;
    r.WidthInBytes = 12;
    r.Height = 3;
    r.Depth = 3;
    memset(out, 0, sizeof out);
    memset(want_out, 0, sizeof want_out);
    copy_reference(want_out, SP, SH, 0, 2, 1, back, DP, DH, 3, 0, 1, 12, 3, 3);
    is_int(GM_DRV(memcpy_3d, c, &r, NULL, 0), GM_CUDA_SUCCESS, "3-D device to host");
    ok(memcmp(out, want_out, sizeof out) == 0, "matches the reference loop");

    gm_cu_memcpy3d bad = m;
    bad.srcHeight = HT - 1;
    is_int(GM_DRV(memcpy_3d, c, &bad, NULL, 0), GM_CUDA_ERROR_INVALID_VALUE,
           "slices shorter than Height (they would overlap)");
    bad = m;
    bad.dstZ = 2; /* slices 2..4 of 4 */
    is_int(GM_DRV(memcpy_3d, c, &bad, NULL, 0), GM_CUDA_ERROR_INVALID_VALUE, "slices past the allocation");
    bad = m;
    bad.Depth = 0;
    is_int(GM_DRV(memcpy_3d, c, &bad, NULL, 0), GM_CUDA_SUCCESS, "Depth 0 is a no-op");
    d2h(c, back, d, sizeof back);
    ok(memcmp(back, want, sizeof want) == 0, "the device is unchanged");
    GM_DRV(mem_free, c, d);
}

static void test_pinned(gm_dctx *c)
{
    void *p = NULL, *q = NULL;
    long page = sysconf(_SC_PAGESIZE);
    is_int(GM_DRV(mem_host_alloc, c, &p, 4096, 0x8), GM_CUDA_ERROR_INVALID_VALUE, "an unknown host_alloc flag");
    is_int(GM_DRV(mem_host_alloc, c, &p, 10 * MiB, GM_CU_MEMHOSTALLOC_DEVICEMAP | GM_CU_MEMHOSTALLOC_PORTABLE),
           GM_CUDA_SUCCESS, "10M of pinned memory");
    ok((uintptr_t)p % (uintptr_t)page == 0, "page aligned");
    is_int(gm_sim_host_locked_bytes(), 10 * MiB, "counted against GPUMEM_SIM_HOST_MEMORY");
    is_int(GM_DRV(mem_host_alloc, c, &q, 10 * MiB, 0), GM_CUDA_ERROR_OUT_OF_MEMORY,
           "10M more is over the 16M limit");
    gm_cu_deviceptr dp = 0;
    is_int(GM_DRV(mem_host_get_device_pointer, c, &dp, (char *)p + 100), GM_CUDA_SUCCESS,
           "the device pointer of pinned memory");
    ok(dp == H((char *)p + 100), "is its host address (unified addressing)");
    is_int(GM_DRV(mem_free_host, c, p), GM_CUDA_SUCCESS, "mem_free_host");
    int reused = 1;
    for (int i = 0; i < 5 && reused; i++) {
        reused = GM_DRV(mem_host_alloc, c, &p, 10 * MiB, 0) == GM_CUDA_SUCCESS;
        if (reused) {
            memset(p, i, 10 * MiB);
            reused = GM_DRV(mem_free_host, c, p) == GM_CUDA_SUCCESS;
        }
    }
    ok(reused, "the limit is given back at once: 50M allocated and freed under a 16M limit");
    is_int(gm_sim_host_locked_bytes(), 0, "no pinned memory left");
    is_int(GM_DRV(mem_free_host, c, p), GM_CUDA_ERROR_INVALID_VALUE, "a second mem_free_host");
    char pageable[64];
    is_int(GM_DRV(mem_free_host, c, pageable), GM_CUDA_ERROR_INVALID_VALUE, "mem_free_host of pageable memory");
    is_int(GM_DRV(mem_host_get_device_pointer, c, &dp, pageable), GM_CUDA_ERROR_INVALID_VALUE,
           "pageable memory has no device pointer");
}

static void test_register(gm_dctx *c)
{
    enum { SIZE = 128 * 1024 };
    unsigned char *buf = aligned_alloc(65536, SIZE);
    unsigned char *mid = buf + 32 * 1024;
    is_int(GM_DRV(mem_host_register, c, mid, 64 * 1024, 0x10), GM_CUDA_ERROR_INVALID_VALUE,
           "an unknown register flag");
    is_int(GM_DRV(mem_host_register, c, mid, 64 * 1024, GM_CU_MEMHOSTREGISTER_DEVICEMAP), GM_CUDA_SUCCESS,
           "register 64K");
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t first = (uintptr_t)mid / page * page, end = ((uintptr_t)mid + 64 * 1024 + page - 1) / page * page;
    is_int(gm_sim_host_locked_bytes(), end - first, "counted against the host limit, in whole pages");
    is_int(GM_DRV(mem_host_register, c, buf, 40 * 1024, 0), GM_CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
           "a range overlapping its start");
    is_int(GM_DRV(mem_host_register, c, mid + 4096, 4096, 0), GM_CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
           "a range inside it");
    is_int(GM_DRV(mem_host_register, c, mid + 64 * 1024, 32 * 1024, 0), GM_CUDA_SUCCESS,
           "the adjacent range");
    gm_cu_deviceptr dp = 0;
    GM_DRV(mem_host_get_device_pointer, c, &dp, mid + 10);
    ok(dp == H(mid + 10), "registered memory maps at its host address");
    is_int(GM_DRV(mem_host_unregister, c, mid + 4096), GM_CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,
           "unregister needs the start of a registration");
    is_int(GM_DRV(mem_host_unregister, c, mid), GM_CUDA_SUCCESS, "unregister");
    is_int(GM_DRV(mem_host_unregister, c, mid), GM_CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "unregister twice");
    GM_DRV(mem_host_unregister, c, mid + 64 * 1024);
    is_int(gm_sim_host_locked_bytes(), 0, "the limit is given back");
    gm_cu_deviceptr d = 0;
    GM_DRV(mem_alloc, c, &d, 4096);
    is_int(GM_DRV(mem_host_register, c, (void *)(uintptr_t)d, 4096, 0), GM_CUDA_ERROR_INVALID_VALUE,
           "registering a device address");
    GM_DRV(mem_free, c, d);
    unsigned char *big = malloc(20 * MiB); /* never touched */
    is_int(GM_DRV(mem_host_register, c, big, 20 * MiB, 0), GM_CUDA_ERROR_OUT_OF_MEMORY,
           "registering more than the host limit");
    free(big);
    free(buf);
}

static void test_managed(gm_dctx *c)
{
    gm_cu_deviceptr m = 0, d = 0;
    is_int(GM_DRV(mem_alloc_managed, c, &m, MiB, 0), GM_CUDA_ERROR_INVALID_VALUE, "managed flags 0");
    is_int(GM_DRV(mem_alloc_managed, c, &m, MiB, 3), GM_CUDA_ERROR_INVALID_VALUE, "managed flags 3");
    is_int(GM_DRV(mem_alloc_managed, c, &m, MiB, GM_CU_MEM_ATTACH_GLOBAL), GM_CUDA_SUCCESS, "managed 1M");
    is_int(free_of(c), CAPACITY - MiB, "counted against the device capacity");
    unsigned char *host = (unsigned char *)(uintptr_t)m;
    memset(host, 0x3C, MiB); /* host-accessible */
    GM_DRV(mem_alloc, c, &d, MiB);
    static unsigned char back[1 << 20];
    is_int(GM_DRV(memcpy, c, d, m, MiB, NULL, 0), GM_CUDA_SUCCESS, "managed to device");
    d2h(c, back, d, MiB);
    ok(all_bytes(back, 0x3C, MiB), "carries what the host wrote");
    GM_DRV(memset, c, m + 100, 0x5D, 1, 10, NULL, 0);
    ok(all_bytes(host + 100, 0x5D, 10) && host[110] == 0x3C, "a memset of managed memory is seen by the host");
    gm_sim_ptr_info info;
    gm_sim_pointer_info(m + 7, &info);
    ok(info.kind == GM_SIM_MEM_MANAGED && info.base == m, "the registry knows it as managed");
    is_int(GM_DRV(mem_free, c, m), GM_CUDA_SUCCESS, "mem_free frees managed memory");
    GM_DRV(mem_free, c, d);
    is_int(free_of(c), CAPACITY, "and gives its capacity back");
}

/* ---- streams --------------------------------------------------------------- */

static void test_streams(gm_dctx *c)
{
    enum { N = 4096 };
    gm_dstream *s = NULL, *nb = NULL;
    unsigned base_workers = gm_sim_live_workers();
    is_int(GM_DRV(stream_create, c, &s, 0x4), GM_CUDA_ERROR_INVALID_VALUE, "an unknown stream flag");
    is_int(GM_DRV(stream_create, c, &s, GM_CU_STREAM_DEFAULT), GM_CUDA_SUCCESS, "a blocking stream");
    GM_DRV(stream_create, c, &nb, GM_CU_STREAM_NON_BLOCKING);
    is_int(gm_sim_live_workers(), base_workers + 2, "each stream has its worker thread");

    gm_cu_deviceptr d = 0;
    unsigned char *pin = NULL;
    static unsigned char page[N];
    GM_DRV(mem_alloc, c, &d, N);
    GM_DRV(mem_host_alloc, c, (void **)&pin, N, 0);
    GM_DRV(memset, c, d, 0x5A, 1, N, NULL, 0);

    /* the missing synchronization */
    memset(pin, 0xEE, N);
    is_int(GM_DRV(memcpy, c, H(pin), d, N, s, 1), GM_CUDA_SUCCESS, "an async copy into pinned memory");
    ok(all_bytes(pin, 0xEE, N), "read back without synchronizing: the old data");
    is_int(GM_DRV(stream_query, c, s), GM_CUDA_ERROR_NOT_READY, "stream_query: not ready");
    double t0 = now_ms();
    is_int(GM_DRV(stream_synchronize, c, s), GM_CUDA_SUCCESS, "stream_synchronize");
    double took = now_ms() - t0;
    ok(all_bytes(pin, 0x5A, N), "after synchronizing: the new data");
    ok(took < DELAY_MS / 2, "a synchronize does not wait for the delay (%.1f ms)", took);
    is_int(GM_DRV(stream_query, c, s), GM_CUDA_SUCCESS, "stream_query: done");

    /* pageable memory */
    memset(page, 0x21, N);
    is_int(GM_DRV(memcpy, c, d, H(page), N, s, 1), GM_CUDA_SUCCESS, "an async copy from pageable memory");
    memset(page, 0x22, N);
    GM_DRV(stream_synchronize, c, s);
    d2h(c, pin, d, N);
    ok(all_bytes(pin, 0x21, N), "copied what the source held at the call (staged)");
    GM_DRV(memset, c, d, 0x23, 1, N, s, 1);
    is_int(GM_DRV(memcpy, c, H(page), d, N, s, 1), GM_CUDA_SUCCESS, "an async copy into pageable memory");
    ok(all_bytes(page, 0x23, N), "is synchronous, as on the driver");

    /* polling never hurries work */
    GM_DRV(memset, c, d, 0x24, 1, N, nb, 1);
    t0 = now_ms();
    int rc;
    while ((rc = GM_DRV(stream_query, c, nb)) == GM_CUDA_ERROR_NOT_READY && now_ms() - t0 < 5000)
        usleep(2000);
    took = now_ms() - t0;
    is_int(rc, GM_CUDA_SUCCESS, "polled work completes on its own");
    ok(took >= DELAY_MS * 0.9, "after the delay (%.1f ms)", took);

    /* legacy default stream */
    gm_cu_deviceptr e = 0, f = 0;
    GM_DRV(mem_alloc, c, &e, N);
    GM_DRV(mem_alloc, c, &f, N);
    GM_DRV(memset, c, e, 0, 1, N, NULL, 0);
    GM_DRV(memset, c, f, 0, 1, N, NULL, 0);
    memset(pin, 0x31, N);
    GM_DRV(memcpy, c, e, H(pin), N, s, 1);
    GM_DRV(memset, c, f, 0x32, 1, N, nb, 1);
    t0 = now_ms();
    d2h(c, page, e, N);
    took = now_ms() - t0;
    ok(all_bytes(page, 0x31, N), "the default stream waits for a blocking stream's earlier work");
    ok(took < DELAY_MS / 2, "without waiting for the delay (%.1f ms)", took);
    d2h(c, page, f, N);
    ok(all_bytes(page, 0, N), "but not for a non-blocking stream's");
    GM_DRV(stream_synchronize, c, nb);
    d2h(c, page, f, N);
    ok(all_bytes(page, 0x32, N), "which is done once that stream is synchronized");

    GM_DRV(memset, c, e, 0x41, 1, N, NULL, 1);
    memset(pin, 0, N);
    GM_DRV(memcpy, c, H(pin), e, N, s, 1);
    GM_DRV(stream_synchronize, c, s);
    ok(all_bytes(pin, 0x41, N), "a blocking stream waits for the default stream's earlier work");
    GM_DRV(memset, c, f, 0x42, 1, N, NULL, 1);
    memset(pin, 0, N);
    GM_DRV(memcpy, c, H(pin), f, N, nb, 1);
    GM_DRV(stream_synchronize, c, nb);
    ok(all_bytes(pin, 0x32, N), "a non-blocking stream does not");
    is_int(GM_DRV(ctx_synchronize, c), GM_CUDA_SUCCESS, "ctx_synchronize");
    is_int(GM_DRV(stream_query, c, NULL), GM_CUDA_SUCCESS, "leaves the default stream idle");
    d2h(c, page, f, N);
    ok(all_bytes(page, 0x42, N), "with its work done");

    GM_DRV(mem_free, c, e);
    GM_DRV(mem_free, c, f);
    GM_DRV(mem_free, c, d);
    GM_DRV(mem_free_host, c, pin);
    is_int(GM_DRV(stream_destroy, c, s), GM_CUDA_SUCCESS, "stream_destroy");
    is_int(GM_DRV(stream_query, c, s), GM_CUDA_ERROR_INVALID_HANDLE, "a destroyed stream is no handle");
    is_int(GM_DRV(stream_destroy, c, NULL), GM_CUDA_ERROR_INVALID_HANDLE, "the default stream cannot be destroyed");
    GM_DRV(stream_destroy, c, nb);
    is_int(gm_sim_live_workers(), base_workers, "their workers are joined");
}

static void test_events(gm_dctx *c, gm_dctx *c1)
{
    enum { N = 1024 };
    gm_dstream *s = NULL, *a = NULL, *w = NULL;
    gm_devent *e1 = NULL, *e2 = NULL, *nt = NULL, *ev = NULL;
    GM_DRV(stream_create, c, &s, 0);
    GM_DRV(stream_create, c, &a, GM_CU_STREAM_NON_BLOCKING);
    GM_DRV(stream_create, c, &w, GM_CU_STREAM_NON_BLOCKING);
    is_int(GM_DRV(event_create, c, &e1, 0x40), GM_CUDA_ERROR_INVALID_VALUE, "an unknown event flag");
    GM_DRV(event_create, c, &e1, GM_CU_EVENT_DEFAULT);
    GM_DRV(event_create, c, &e2, GM_CU_EVENT_BLOCKING_SYNC);
    GM_DRV(event_create, c, &nt, GM_CU_EVENT_DISABLE_TIMING);
    GM_DRV(event_create, c, &ev, GM_CU_EVENT_DISABLE_TIMING);
    float ms = -1;
    is_int(GM_DRV(event_query, c, e1), GM_CUDA_SUCCESS, "an event never recorded is complete");
    is_int(GM_DRV(event_elapsed_time, c, &ms, e1, e2), GM_CUDA_ERROR_INVALID_HANDLE,
           "elapsed time of events never recorded");

    gm_cu_deviceptr d = 0, d2 = 0;
    unsigned char *pin = NULL;
    GM_DRV(mem_alloc, c, &d, N);
    GM_DRV(mem_alloc, c, &d2, N);
    GM_DRV(mem_host_alloc, c, (void **)&pin, N, 0);
    GM_DRV(memset, c, d, 0, 1, N, NULL, 0);
    GM_DRV(memset, c, d2, 0, 1, N, NULL, 0);

    GM_DRV(event_record, c, e1, s);
    GM_DRV(memset, c, d, 0x51, 1, N, s, 1);
    is_int(GM_DRV(event_record, c, e2, s), GM_CUDA_SUCCESS, "event_record");
    is_int(GM_DRV(event_query, c, e2), GM_CUDA_ERROR_NOT_READY, "event_query before the work ran");
    is_int(GM_DRV(event_elapsed_time, c, &ms, e1, e2), GM_CUDA_ERROR_NOT_READY, "elapsed time: not ready");
    double t0 = now_ms();
    is_int(GM_DRV(event_synchronize, c, e2), GM_CUDA_SUCCESS, "event_synchronize");
    ok(now_ms() - t0 < DELAY_MS / 2, "without waiting for the delay");
    ok(GM_DRV(event_query, c, e1) == GM_CUDA_SUCCESS && GM_DRV(event_query, c, e2) == GM_CUDA_SUCCESS,
       "both events are complete (FIFO)");
    is_int(GM_DRV(event_elapsed_time, c, &ms, e1, e2), GM_CUDA_SUCCESS, "event_elapsed_time");
    is_int(GM_DRV(event_elapsed_time, c1, &ms, e1, e2), GM_CUDA_ERROR_INVALID_CONTEXT,
           "elapsed time asked in another device's context");
    ok(ms >= 0 && ms < 1000, "a plausible time between the records (%.3f ms)", (double)ms);
    GM_DRV(event_record, c, nt, s);
    GM_DRV(event_synchronize, c, nt);
    is_int(GM_DRV(event_elapsed_time, c, &ms, e1, nt), GM_CUDA_ERROR_INVALID_HANDLE,
           "an event without timing has no elapsed time");

    /* stream_wait_event orders two non-blocking streams */
    GM_DRV(memset, c, d, 0x61, 1, N, a, 1);
    GM_DRV(event_record, c, ev, a);
    is_int(GM_DRV(stream_wait_event, c, w, ev), GM_CUDA_SUCCESS, "stream_wait_event");
    memset(pin, 0, N);
    GM_DRV(memcpy, c, H(pin), d, N, w, 1);
    t0 = now_ms();
    GM_DRV(stream_synchronize, c, w);
    double took = now_ms() - t0;
    ok(all_bytes(pin, 0x61, N), "the waiting stream sees the work before the event");
    ok(took < DELAY_MS / 2, "synchronizing it hurried the awaited stream too (%.1f ms)", took);
    GM_DRV(memset, c, d2, 0x62, 1, N, a, 1);
    memset(pin, 0, N);
    GM_DRV(memcpy, c, H(pin), d2, N, w, 1);
    GM_DRV(stream_synchronize, c, w);
    ok(all_bytes(pin, 0, N), "without the wait it does not");

    /* handles */
    gm_dstream *s1 = NULL;
    gm_devent *ev1 = NULL;
    GM_DRV(stream_create, c1, &s1, 0);
    GM_DRV(event_create, c1, &ev1, 0);
    is_int(GM_DRV(stream_query, c, s1), GM_CUDA_ERROR_INVALID_CONTEXT, "another device's stream");
    is_int(GM_DRV(event_record, c, ev1, s), GM_CUDA_ERROR_INVALID_CONTEXT, "another device's event");
    GM_DRV(event_record, c1, ev1, s1);
    is_int(GM_DRV(stream_wait_event, c, s, ev1), GM_CUDA_SUCCESS,
           "a stream may wait for another device's event, as on the driver");
    is_int(GM_DRV(stream_synchronize, c, s), GM_CUDA_SUCCESS, "and synchronizes through it");
    is_int(GM_DRV(event_query, c1, ev1), GM_CUDA_SUCCESS, "hurrying the other device's work");
    GM_DRV(event_destroy, c, e2);
    is_int(GM_DRV(event_query, c, e2), GM_CUDA_ERROR_INVALID_HANDLE, "a destroyed event is no handle");
    is_int(GM_DRV(event_record, c, NULL, s), GM_CUDA_ERROR_INVALID_HANDLE, "a NULL event");

    GM_DRV(stream_destroy, c1, s1);
    GM_DRV(event_destroy, c1, ev1);
    GM_DRV(event_destroy, c, e1);
    GM_DRV(event_destroy, c, nt);
    GM_DRV(event_destroy, c, ev);
    GM_DRV(stream_destroy, c, s);
    GM_DRV(stream_destroy, c, a);
    GM_DRV(stream_destroy, c, w);
    GM_DRV(mem_free, c, d);
    GM_DRV(mem_free, c, d2);
    GM_DRV(mem_free_host, c, pin);
}

typedef struct trace {
    int order[8];
    atomic_int n;
    pthread_t thread[8];
} trace;

typedef struct step {
    trace *t;
    int id;
} step;

static void note(void *arg)
{
    step *st = arg;
    int i = atomic_fetch_add(&st->t->n, 1);
    st->t->order[i] = st->id;
    st->t->thread[i] = pthread_self();
}

static void test_host_funcs(gm_dctx *c)
{
    gm_dstream *s = NULL;
    GM_DRV(stream_create, c, &s, 0);
    gm_cu_deviceptr d = 0;
    GM_DRV(mem_alloc, c, &d, 256);
    trace t = {.n = 0};
    step steps[8];
    for (int i = 0; i < 5; i++) {
        steps[i] = (step){&t, i};
        GM_DRV(launch_host_func, c, s, note, &steps[i]);
        GM_DRV(memset, c, d, (unsigned)i, 1, 256, s, 1);
    }
    is_int(atomic_load(&t.n), 0, "host functions wait for their turn");
    GM_DRV(stream_synchronize, c, s);
    ok(atomic_load(&t.n) == 5 && t.order[0] == 0 && t.order[1] == 1 && t.order[2] == 2 &&
       t.order[3] == 3 && t.order[4] == 4, "host functions run once each, in order");
    ok(!pthread_equal(t.thread[0], pthread_self()), "on the stream's worker thread");

    /* blocking stream, default stream, blocking stream */
    trace u = {.n = 0};
    step us[3] = {{&u, 0}, {&u, 1}, {&u, 2}};
    GM_DRV(launch_host_func, c, s, note, &us[0]);
    GM_DRV(launch_host_func, c, NULL, note, &us[1]);
    GM_DRV(launch_host_func, c, s, note, &us[2]);
    GM_DRV(ctx_synchronize, c);
    ok(atomic_load(&u.n) == 3 && u.order[0] == 0 && u.order[1] == 1 && u.order[2] == 2,
       "the legacy default stream orders host functions across streams");
    is_int(GM_DRV(launch_host_func, c, s, NULL, NULL), GM_CUDA_ERROR_INVALID_VALUE, "a NULL host function");
    GM_DRV(stream_destroy, c, s);
    GM_DRV(mem_free, c, d);
}

/* ---- the last release, stress ---------------------------------------------- */

static void test_release(gm_dctx **c1p)
{
    gm_dctx *c1 = *c1p;
    gm_cu_deviceptr d = 0, m = 0;
    gm_dstream *s = NULL;
    gm_devent *ev = NULL;
    GM_DRV(mem_alloc, c1, &d, 8 * MiB);
    GM_DRV(mem_alloc_managed, c1, &m, MiB, GM_CU_MEM_ATTACH_HOST);
    GM_DRV(stream_create, c1, &s, 0);
    unsigned workers = gm_sim_live_workers();
    GM_DRV(event_create, c1, &ev, 0);
    GM_DRV(memset, c1, d, 1, 1, 8 * MiB, s, 1);
    GM_DRV(event_record, c1, ev, s);
    is_int(free_of(c1), CAPACITY - 9 * MiB, "device 1 has 9M in use");
    is_int(GM_DRV(primary_ctx_release, 1), GM_CUDA_SUCCESS, "the last release of device 1");
    is_int(GM_DRV(primary_ctx_release, 1), GM_CUDA_ERROR_INVALID_CONTEXT, "one release too many");
    is_int(gm_sim_live_workers(), workers - 2, "its stream and default stream are gone");
    gm_cu_deviceptr x;
    is_int(GM_DRV(mem_alloc, c1, &x, 16), GM_CUDA_ERROR_INVALID_CONTEXT, "a released context is refused");
    gm_dctx *again = NULL;
    GM_DRV(primary_ctx_retain, 1, &again);
    is_int(free_of(again), CAPACITY, "retained again: its memory was freed");
    gm_sim_ptr_info info;
    ok(gm_sim_pointer_info(d, &info) != GM_CUDA_SUCCESS && gm_sim_pointer_info(m, &info) != GM_CUDA_SUCCESS,
       "device and managed allocations are gone");
    unsigned char b[16];
    is_int(d2h(again, b, d, 16), GM_CUDA_ERROR_INVALID_VALUE, "a copy from its old memory");
    is_int(GM_DRV(stream_query, again, s), GM_CUDA_ERROR_INVALID_HANDLE, "its old stream");
    is_int(GM_DRV(event_query, again, ev), GM_CUDA_ERROR_INVALID_HANDLE, "its old event");
    *c1p = again;
}

typedef struct stress {
    gm_dctx *ctx;
    unsigned seed;
    atomic_int *failures;
} stress;

static void *stress_main(void *arg)
{
    stress *st = arg;
    unsigned char src[4096], back[4096];
    gm_dstream *s = NULL;
    int fails = GM_DRV(stream_create, st->ctx, &s, GM_CU_STREAM_NON_BLOCKING) != GM_CUDA_SUCCESS;
    for (int i = 0; i < 300; i++) {
        size_t n = 1 + rand_r(&st->seed) % sizeof src;
        gm_cu_deviceptr d = 0;
        if (GM_DRV(mem_alloc, st->ctx, &d, n) != GM_CUDA_SUCCESS) {
            fails++;
            continue;
        }
        pattern(src, n, st->seed);
        memset(back, 0, n);
        int async = i % 2;
        fails += GM_DRV(memcpy, st->ctx, d, H(src), n, s, async) != GM_CUDA_SUCCESS;
        fails += GM_DRV(memcpy, st->ctx, H(back), d, n, s, async) != GM_CUDA_SUCCESS;
        fails += memcmp(src, back, n) != 0;
        fails += GM_DRV(mem_free, st->ctx, d) != GM_CUDA_SUCCESS;
        if (i % 50 == 0) {
            fails += GM_DRV(stream_destroy, st->ctx, s) != GM_CUDA_SUCCESS;
            fails += GM_DRV(stream_create, st->ctx, &s, 0) != GM_CUDA_SUCCESS;
        }
    }
    fails += GM_DRV(stream_destroy, st->ctx, s) != GM_CUDA_SUCCESS;
    atomic_fetch_add(st->failures, fails);
    return NULL;
}

static void test_stress(gm_dctx *c0, gm_dctx *c1)
{
    enum { THREADS = 8 };
    pthread_t th[THREADS];
    stress st[THREADS];
    atomic_int failures = 0;
    unsigned workers = gm_sim_live_workers();
    for (int i = 0; i < THREADS; i++) {
        st[i] = (stress){i % 2 ? c1 : c0, 1234u + (unsigned)i, &failures};
        pthread_create(&th[i], NULL, stress_main, &st[i]);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    is_int(atomic_load(&failures), 0, "8 threads allocating, copying, verifying and freeing at once");
    ok(free_of(c0) == CAPACITY && free_of(c1) == CAPACITY, "leave no memory in use");
    is_int(gm_sim_live_workers(), workers, "and no worker behind");
}

int main(void)
{
    if (!test_on_sim())
        plan_skip_all("the simulator's own tests run only with GPUMEM_BACKEND=sim");
    setenv("GPUMEM_BACKEND", "sim", 1);
    setenv("GPUMEM_SIM_DEVICES", "3", 1);
    setenv("GPUMEM_SIM_MEMORY", "64M", 1);
    setenv("GPUMEM_SIM_ARCH", "sm_90", 1);
    setenv("GPUMEM_SIM_BUSY", "2", 1);
    setenv("GPUMEM_SIM_HOST_MEMORY", "16M", 1);
    setenv("GPUMEM_SIM_STREAM_DELAY_US", "300000", 1);
    plan(258);
    unsetenv("GPUMEM_SIM_FAIL");

    /* children first: they must fork before this process starts workers */
    test_bad_settings();
    test_archs();
    test_ipc_same_fd_number();

    if (gm_driver_ready() != GPUMEM_OK)
        bail_out("the simulator does not load: %s", gpumem_last_error());
    is_str(gm_drv->name, "sim", "the simulator is the backend");
    test_devices();
    gm_dctx *c0 = NULL, *c1 = NULL;
    test_contexts(&c0);
    GM_DRV(primary_ctx_retain, 1, &c1);
    test_capacity(c0);
    test_copies(c0);
    test_ipc_own_thread(c0);
    test_address_range(c0);
    test_copies_2d(c0);
    test_copies_3d(c0);
    test_pinned(c0);
    test_register(c0);
    test_managed(c0);
    test_streams(c0);
    test_events(c0, c1);
    test_host_funcs(c0);
    is_int(GM_DRV(launch_kernel, c0, NULL, (unsigned[3]){1, 1, 1}, (unsigned[3]){32, 1, 1}, 0, NULL, NULL),
           GM_CUDA_ERROR_INVALID_HANDLE, "a launch of no kernel is an invalid handle");
    test_release(&c1);
    test_stress(c0, c1);
    GM_DRV(primary_ctx_release, 1);
    GM_DRV(primary_ctx_release, 0);
    is_int(gm_sim_live_workers(), 0, "no worker outlives the contexts");
    return exit_status();
}
