/* The simulator's memory model (part of tests/test-sim): IPC on its own
 * thread, the address range, capacity, copies in one, two and three
 * dimensions, pinned, registered and managed memory. */
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

/* ---- memory -------------------------------------------------------------- */

size_t free_of(gm_dctx *c)
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
void test_ipc_own_thread(gm_dctx *c)
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
void test_address_range(gm_dctx *c)
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

void test_capacity(gm_dctx *c)
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

void test_copies(gm_dctx *c)
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

void test_copies_2d(gm_dctx *c)
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

void test_copies_3d(gm_dctx *c)
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

void test_pinned(gm_dctx *c)
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

void test_register(gm_dctx *c)
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

void test_managed(gm_dctx *c)
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
