/* The simulator backend itself, through the driver table as the library
 * calls it (GM_DRV): its settings, architectures, memory model and streams.
 * Runs only on the simulator.
 * This file: main, the helpers, the settings (in children), devices,
 * contexts and IPC between processes; sim-memory.c: the memory model;
 * sim-streams.c: streams, events, host functions, the last release and the
 * stress test. */
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
#include "sim-test.h"

gm_cu_deviceptr H(const void *p)
{
    return (gm_cu_deviceptr)(uintptr_t)p;
}

double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

int all_bytes(const void *p, int v, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i] != (unsigned char)v)
            return 0;
    return 1;
}

void pattern(void *p, size_t n, unsigned seed)
{
    unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)(seed + i * 7 + (i >> 8));
}

/* Synchronous copies on the default stream. */
int h2d(gm_dctx *c, gm_cu_deviceptr d, const void *h, size_t n)
{
    return GM_DRV(memcpy, c, d, H(h), n, NULL, 0);
}

int d2h(gm_dctx *c, void *h, gm_cu_deviceptr d, size_t n)
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
        {"GPUMEM_SIM_OTHER_MEMORY", "64M"},
        {"GPUMEM_SIM_FIRST_FIT", "2"},
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

/* GPUMEM_SIM_OTHER_MEMORY and GPUMEM_SIM_FIRST_FIT (arg: the latter's
 * value): text names the first check that failed. */
#define SIM_CHECK(cond, ...)                                                                       \
    do {                                                                                           \
        if (!(cond) && out->text[0] == '\0')                                                      \
            snprintf(out->text, sizeof out->text, __VA_ARGS__);                                   \
    } while (0)

static void other_and_first_fit(const void *arg, child_result *out)
{
    const size_t M = (size_t)1 << 20;
    setenv("GPUMEM_SIM_MEMORY", "64M", 1);
    setenv("GPUMEM_SIM_OTHER_MEMORY", "16M", 1);
    setenv("GPUMEM_SIM_FIRST_FIT", (const char *)arg, 1);
    out->status = gm_driver_ready();
    gm_dctx *c = NULL;
    if (out->status != GPUMEM_OK || GM_DRV(primary_ctx_retain, 0, &c) != 0) {
        snprintf(out->text, sizeof out->text, "no simulator: %s", gpumem_last_error());
        return;
    }
    size_t f = 0, t = 0, total = 0;
    GM_DRV(mem_get_info, c, &f, &t);
    GM_DRV(device_total_mem, 0, &total);
    SIM_CHECK(f == 48 * M && t == 64 * M && total == 64 * M, "free %zu and total %zu (device %zu): other "
              "processes' 16 MiB are neither free nor allocatable", f, t, total);
    gm_cu_deviceptr a[4] = {0, 0, 0, 0}, x = 0, y = 0;
    for (int i = 0; i < 4; i++)
        SIM_CHECK(GM_DRV(mem_alloc, c, &a[i], 12 * M) == 0, "12 MiB number %d", i);
    SIM_CHECK(GM_DRV(mem_alloc, c, &x, 256) == GM_CUDA_ERROR_OUT_OF_MEMORY, "48 MiB allocated: 256 bytes more fail");
    GM_DRV(mem_free, c, a[0]);
    GM_DRV(mem_free, c, a[2]);
    GM_DRV(mem_get_info, c, &f, &t);
    SIM_CHECK(f == 24 * M, "after two frees, 24 MiB free (%zu)", f);
    int rc = GM_DRV(mem_alloc, c, &x, 24 * M);
    out->value[0] = rc; /* the caller checks it against the setting */
    if (rc == 0)
        GM_DRV(mem_free, c, x);
    SIM_CHECK(GM_DRV(mem_alloc, c, &x, 12 * M) == 0 && GM_DRV(mem_alloc, c, &y, 12 * M) == 0,
              "each 12 MiB hole takes 12 MiB");
    GM_DRV(mem_get_info, c, &f, &t);
    SIM_CHECK(f == 0, "and then nothing is free (%zu)", f);
    GM_DRV(mem_free, c, x);
    GM_DRV(mem_free, c, y);
    GM_DRV(mem_free, c, a[1]);
    GM_DRV(mem_free, c, a[3]);
    SIM_CHECK(GM_DRV(mem_alloc, c, &x, 48 * M) == 0, "all freed: 48 MiB in one piece again");
    GM_DRV(mem_free, c, x);
    GM_DRV(primary_ctx_release, 0);
}

static void test_other_and_first_fit(void)
{
    child_result r;
    run_child(other_and_first_fit, "1", &r);
    ok(r.status == GPUMEM_OK && r.text[0] == '\0', "GPUMEM_SIM_OTHER_MEMORY=16M: free and allocatable memory "
       "lack it; GPUMEM_SIM_FIRST_FIT=1: holes are reused%s%s", r.text[0] ? ": " : "", r.text);
    is_int(r.value[0], GM_CUDA_ERROR_OUT_OF_MEMORY, "first fit: 24 MiB free in two holes of 12 cannot hold 24 MiB");
    run_child(other_and_first_fit, "0", &r);
    ok(r.status == GPUMEM_OK && r.text[0] == '\0' && r.value[0] == 0,
       "GPUMEM_SIM_FIRST_FIT=0: only the total counts, 24 MiB fit%s%s", r.text[0] ? ": " : "", r.text);
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
    plan(263);
    unsetenv("GPUMEM_SIM_FAIL");

    /* children first: they must fork before this process starts workers */
    test_bad_settings();
    test_archs();
    test_other_and_first_fit();
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
