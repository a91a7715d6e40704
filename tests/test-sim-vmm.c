/* The simulator's virtual memory management, through the driver table as
 * the library calls it (GM_DRV): the granularity, reservations, physical
 * memory charged to the device, mappings, access rights checked by every
 * copy, unmapping and release, and a physical chunk exported as a file
 * descriptor that a second process receives over a Unix socket
 * (SCM_RIGHTS), imports, maps and reads.  Runs only on the simulator. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "driver.h"
#include "gpumem.h"
#include "tap.h"

#define MiB ((size_t)1 << 20)
#define G (2 * MiB)

static gm_dctx *c0;

static gm_cu_mem_alloc_prop prop_of(int dev, int handles)
{
    gm_cu_mem_alloc_prop p;
    memset(&p, 0, sizeof p);
    p.type = GM_CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location = (gm_cu_mem_location){GM_CU_MEM_LOCATION_TYPE_DEVICE, dev};
    p.requestedHandleTypes = handles;
    return p;
}

static size_t used(void)
{
    size_t fr = 0, total = 0;
    GM_DRV(mem_get_info, c0, &fr, &total);
    return total - fr;
}

static int send_fd(int sock, int fd)
{
    char byte = 'x', ctl[CMSG_SPACE(sizeof(int))];
    struct iovec iov = {&byte, 1};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
    memset(ctl, 0, sizeof ctl);
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
    return sendmsg(sock, &m, 0) == 1 ? 0 : -1;
}

static int recv_fd(int sock)
{
    char byte, ctl[CMSG_SPACE(sizeof(int))];
    struct iovec iov = {&byte, 1};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
    if (recvmsg(sock, &m, 0) != 1)
        return -1;
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    int fd = -1;
    if (c != NULL && c->cmsg_type == SCM_RIGHTS)
        memcpy(&fd, CMSG_DATA(c), sizeof fd);
    return fd;
}

/* The second process: imports the chunk, maps it, reads it back; exit 0
 * when it holds the 0x5a pattern its parent wrote. */
static int importer(int sock)
{
    int fd = recv_fd(sock);
    gm_dctx *c = NULL;
    if (fd < 0 || gm_driver_ready() != GPUMEM_OK || GM_DRV(primary_ctx_retain, 0, &c) != 0)
        return 2;
    gm_cu_mem_handle h = 0;
    gm_cu_deviceptr base = 0;
    gm_cu_mem_access_desc d = {{GM_CU_MEM_LOCATION_TYPE_DEVICE, 0}, GM_CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    if (GM_DRV(mem_import_from_shareable_handle, c, &h, (void *)(intptr_t)fd,
               GM_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) != 0 ||
        GM_DRV(mem_address_reserve, c, &base, G, 0) != 0 || GM_DRV(mem_map, c, base, G, h) != 0 ||
        GM_DRV(mem_set_access, c, base, G, &d, 1) != 0)
        return 3;
    unsigned char buf[4096];
    if (GM_DRV(memcpy, c, (uintptr_t)buf, base + G - sizeof buf, sizeof buf, NULL, 0) != 0)
        return 4;
    for (size_t i = 0; i < sizeof buf; i++)
        if (buf[i] != 0x5a)
            return 5;
    return 0;
}

int main(void)
{
    if (!test_on_sim())
        plan_skip_all("the simulator's own tests run only with GPUMEM_BACKEND=sim");
    setenv("GPUMEM_SIM_MEMORY", "64M", 1);
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        bail_out("socketpair");
    pid_t pid = fork(); /* before this process loads the simulator */
    if (pid == 0) {
        close(sv[0]);
        _exit(importer(sv[1]));
    }
    close(sv[1]);
    if (gm_driver_ready() != GPUMEM_OK || GM_DRV(primary_ctx_retain, 0, &c0) != 0)
        bail_out("the simulator does not load: %s", gpumem_last_error());

    gm_cu_mem_alloc_prop prop = prop_of(0, GM_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR), bad = prop_of(7, 0);
    size_t gran = 0;
    ok(GM_DRV(mem_get_allocation_granularity, c0, &gran, &prop, GM_CU_MEM_ALLOC_GRANULARITY_MINIMUM) == 0 &&
           gran == G,
       "the granularity is 2 MiB");
    is_int(GM_DRV(mem_get_allocation_granularity, c0, &gran, &bad, GM_CU_MEM_ALLOC_GRANULARITY_MINIMUM),
           GM_CUDA_ERROR_INVALID_VALUE, "a location of no device is refused");

    gm_cu_deviceptr base = 0;
    is_int(GM_DRV(mem_address_reserve, c0, &base, G + 1, 0), GM_CUDA_ERROR_INVALID_VALUE,
           "a reservation that is not a multiple of the granularity is refused");
    size_t u0 = used();
    ok(GM_DRV(mem_address_reserve, c0, &base, 4 * G, 0) == 0 && base % G == 0, "reserve 8 MiB, aligned");
    is_int(used(), u0, "a reservation charges nothing");
    gm_cu_mem_handle h = 0, h2 = 0;
    ok(GM_DRV(mem_create, c0, &h, G, &prop) == 0, "create 2 MiB of physical memory");
    is_int(used() - u0, G, "charged to the device");
    is_int(GM_DRV(mem_create, c0, &h2, 64 * MiB, &prop), GM_CUDA_ERROR_OUT_OF_MEMORY,
           "more than the device has left is out of memory");

    unsigned char buf[4096];
    memset(buf, 0x5a, sizeof buf);
    gm_cu_deviceptr at = base + 2 * G - sizeof buf; /* the end of the second granule */
    is_int(GM_DRV(memcpy, c0, at, (uintptr_t)buf, sizeof buf, NULL, 0), GM_CUDA_ERROR_INVALID_VALUE,
           "a copy into reserved, unmapped memory is refused");
    is_int(GM_DRV(mem_map, c0, base + 1, G, h), GM_CUDA_ERROR_INVALID_VALUE, "a map off the granularity is refused");
    ok(GM_DRV(mem_map, c0, base + G, G, h) == 0, "map it at the second granule");
    is_int(GM_DRV(mem_map, c0, base + G, G, h), GM_CUDA_ERROR_ALREADY_MAPPED, "mapping over it again is refused");
    is_int(GM_DRV(memcpy, c0, at, (uintptr_t)buf, sizeof buf, NULL, 0), GM_CUDA_ERROR_INVALID_VALUE,
           "mapped but not yet accessible: refused");
    gm_cu_mem_access_desc d = {{GM_CU_MEM_LOCATION_TYPE_DEVICE, 0}, GM_CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    is_int(GM_DRV(mem_set_access, c0, base, 2 * G, &d, 1), GM_CUDA_ERROR_INVALID_VALUE,
           "access over an unmapped granule is refused");
    ok(GM_DRV(mem_set_access, c0, base + G, G, &d, 1) == 0, "read-write access to the mapped granule");
    ok(GM_DRV(memcpy, c0, at, (uintptr_t)buf, sizeof buf, NULL, 0) == 0, "now the copy lands");
    is_int(GM_DRV(memcpy, c0, at, (uintptr_t)buf, sizeof buf + 1, NULL, 0), GM_CUDA_ERROR_INVALID_VALUE,
           "one byte past the mapping is refused");
    is_int(GM_DRV(mem_free, c0, base), GM_CUDA_ERROR_INVALID_VALUE, "cuMemFree does not free a reservation");
    gm_cu_ipc_mem_handle ipc;
    is_int(GM_DRV(ipc_get_mem_handle, c0, &ipc, base), GM_CUDA_ERROR_INVALID_VALUE,
           "nor has a reservation a legacy IPC handle");

    int fd = -1;
    ok(GM_DRV(mem_export_to_shareable_handle, c0, &fd, h, GM_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) == 0 && fd >= 0,
       "the chunk exports as a file descriptor");
    ok(send_fd(sv[0], fd) == 0, "sent over a Unix socket (SCM_RIGHTS)");
    close(fd);
    int status = -1;
    waitpid(pid, &status, 0);
    ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
       "a second process imports it, maps it and reads what this one wrote (exit %d)",
       WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    gm_cu_mem_alloc_prop plain = prop_of(0, 0);
    ok(GM_DRV(mem_create, c0, &h2, G, &plain) == 0, "a chunk made without handle types");
    is_int(GM_DRV(mem_export_to_shareable_handle, c0, &fd, h2, GM_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
           GM_CUDA_ERROR_NOT_PERMITTED, "does not export");
    ok(GM_DRV(mem_release, c0, h2) == 0, "released unmapped: its memory goes at once");

    ok(GM_DRV(mem_release, c0, h) == 0, "release the mapped handle");
    is_int(used() - u0, G, "its memory stays while it is mapped");
    is_int(GM_DRV(mem_release, c0, h), GM_CUDA_ERROR_INVALID_VALUE, "a second release is refused");
    is_int(GM_DRV(mem_address_free, c0, base, 4 * G), GM_CUDA_ERROR_INVALID_VALUE,
           "freeing a reservation that is still mapped is refused");
    is_int(GM_DRV(mem_unmap, c0, base, G), GM_CUDA_ERROR_INVALID_VALUE, "unmapping what is not mapped is refused");
    ok(GM_DRV(mem_unmap, c0, base + G, G) == 0, "unmap");
    is_int(used(), u0, "released and unmapped: the device has its memory back");
    is_int(GM_DRV(memcpy, c0, at, (uintptr_t)buf, sizeof buf, NULL, 0), GM_CUDA_ERROR_INVALID_VALUE,
           "a copy into the unmapped range is refused again");
    ok(GM_DRV(mem_address_free, c0, base, 4 * G) == 0, "free the reservation");
    is_int(GM_DRV(mem_pool_create, c0, &(gm_dmempool *){NULL}, &(gm_cu_mem_pool_props){0}),
           GM_SIM_ERROR_NOT_SIMULATED, "the driver's stream-ordered pools are not simulated");
    GM_DRV(primary_ctx_release, 0);
    done_testing();
    return exit_status();
}
