/*
 * pool-ipc.c - two processes share a virtual-memory pool's memory
 * (gpumem/pool_ipc.h), built only through pkg-config:
 *
 *     cc $(pkg-config --cflags gpumem) -o pool-ipc pool-ipc.c $(pkg-config --libs gpumem)
 *     ./pool-ipc [--source vmm|async] [MiB]
 *
 * The parent makes an exportable virtual-memory pool, allocates MiB
 * mebibytes (default: 1024 on a GPU, 16 on the simulator) and fills them,
 * then starts itself again as a child (fork and exec) joined by a
 * socketpair.  It sends the pool's chunks over the socket (file
 * descriptors, SCM_RIGHTS) and the allocation's 128-byte handle; the child
 * opens the allocation, checks the parent's bytes, writes its own into the
 * first mebibyte, and copies the whole allocation into memory of its own
 * (device to device), timed.  The parent checks the child's bytes and
 * times the same copy within its own process.  Both bandwidths are
 * printed; on a GPU the copy from the other process's memory should run
 * at the same speed (the same device memory, mapped twice).  Without a
 * GPU, run it on the simulator:  GPUMEM_BACKEND=sim ./pool-ipc
 *
 * --source async runs the same exchange on the driver's stream-ordered
 * pool (GPUMEM_POOL_SOURCE_ASYNC: one descriptor for the driver's pool, the
 * allocation's handle carrying the driver's export data).  The simulator
 * does not model those pools: there the program says so and exits with 77
 * (skipped).  The parent frees its allocation only after the child closed
 * its import (the driver's rule, gpumem/pool_ipc.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <gpumem.h>

#define MIB ((size_t)1 << 20)

static int fail(const char *who, const char *call, gpumem_status status)
{
    fprintf(stderr, "pool-ipc (%s): %s: %s: %s\n", who, call, gpumem_status_string(status), gpumem_last_error());
    return EXIT_FAILURE;
}

/* n bytes of device memory at ptr as an array. */
static gpumem_status device_bytes(uint64_t ptr, size_t n, gpumem_array **out)
{
    gpumem_cuda_array_interface d = {.size = sizeof d, .version = 3, .ndim = 1, .shape = {(int64_t)n},
                                     .typestr = "|u1", .data = ptr};
    return gpumem_as_cuda_array(NULL, &d, GPUMEM_CAI_NO_SYNCHRONIZE, NULL, NULL, out);
}

/* Copies n bytes between the host buffer and device memory at ptr. */
static gpumem_status host_copy(uint64_t ptr, unsigned char *host, size_t n, int to_device)
{
    gpumem_array *d = NULL, *h = NULL;
    int64_t shape[1] = {(int64_t)n};
    gpumem_status st = device_bytes(ptr, n, &d);
    if (st == GPUMEM_OK)
        st = gpumem_host_array_wrap(host, 1, shape, NULL, gpumem_dtype_builtin(GPUMEM_UINT8), &h);
    if (st == GPUMEM_OK)
        st = to_device ? gpumem_array_copy(d, h, NULL) : gpumem_array_copy(h, d, NULL);
    gpumem_array_release(h);
    gpumem_array_release(d);
    return st;
}

static unsigned char pattern(size_t i, unsigned seed)
{
    return (unsigned char)((i * 131u + seed) % 251u);
}

static int holds(const unsigned char *b, size_t n, size_t from, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        if (b[i] != pattern(from + i, seed))
            return 0;
    return 1;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The best of 5 timed device-to-device copies of n bytes from src into a
 * new cuMemAlloc buffer, in GB/s (1e9 bytes); *first gets the copy's first
 * byte, read back. */
static gpumem_status copy_bandwidth(uint64_t src, size_t n, double *gbs, unsigned char *first)
{
    gpumem_pool *plain = NULL;
    gpumem_allocation *a = NULL;
    gpumem_array *s = NULL, *d = NULL;
    uint64_t dst = 0;
    gpumem_status st = gpumem_pool_create(NULL, 0, &plain);
    if (st == GPUMEM_OK)
        st = gpumem_pool_allocate(plain, n, NULL, &a);
    if (st == GPUMEM_OK)
        st = gpumem_allocation_pointer(a, &dst);
    if (st == GPUMEM_OK)
        st = device_bytes(src, n, &s);
    if (st == GPUMEM_OK)
        st = device_bytes(dst, n, &d);
    if (st == GPUMEM_OK)
        st = gpumem_array_copy(d, s, NULL); /* warm-up */
    double best = 1e30;
    for (int i = 0; i < 5 && st == GPUMEM_OK; i++) {
        double t0 = now();
        st = gpumem_array_copy(d, s, NULL); /* synchronous: complete when it returns */
        double t = now() - t0;
        best = t < best ? t : best;
    }
    if (st == GPUMEM_OK) {
        *gbs = (double)n / best / 1e9;
        st = host_copy(dst, first, 1, 0);
    }
    gpumem_array_release(d);
    gpumem_array_release(s);
    gpumem_allocation_free(a, NULL);
    gpumem_pool_destroy(plain);
    return st;
}

static int child(int sock)
{
    gpumem_pool_import *im = NULL;
    gpumem_pool_ipc_handle h;
    uint64_t ptr = 0;
    size_t n = 0;
    gpumem_status st = gpumem_pool_ipc_open(NULL, sock, &im);
    if (st != GPUMEM_OK)
        return fail("child", "gpumem_pool_ipc_open", st);
    if (read(sock, &h, sizeof h) != (ssize_t)sizeof h) {
        fprintf(stderr, "pool-ipc (child): no handle came\n");
        return EXIT_FAILURE;
    }
    if ((st = gpumem_pool_import_open_allocation(im, &h, &ptr, &n)) != GPUMEM_OK)
        return fail("child", "gpumem_pool_import_open_allocation", st);
    unsigned char *buf = malloc(MIB);
    int ok = buf != NULL;
    /* the parent's bytes, at both ends */
    if (ok && (st = host_copy(ptr, buf, MIB, 0)) == GPUMEM_OK)
        ok = holds(buf, MIB, 0, 1);
    if (ok && st == GPUMEM_OK && (st = host_copy(ptr + n - MIB, buf, MIB, 0)) == GPUMEM_OK)
        ok = holds(buf, MIB, n - MIB, 1);
    /* the child's own bytes in the first mebibyte */
    for (size_t i = 0; ok && i < MIB; i++)
        buf[i] = pattern(i, 7);
    if (ok && st == GPUMEM_OK)
        st = host_copy(ptr, buf, MIB, 1);
    double gbs = 0;
    unsigned char first = 0;
    if (ok && st == GPUMEM_OK)
        st = copy_bandwidth(ptr, n, &gbs, &first);
    free(buf);
    if (st != GPUMEM_OK)
        return fail("child", "a copy", st);
    gpumem_status cst = gpumem_pool_import_close(im);
    if (cst != GPUMEM_OK)
        return fail("child", "gpumem_pool_import_close", cst);
    char line[64];
    int len = snprintf(line, sizeof line, "%d %.3f %d\n", ok, gbs, first);
    return write(sock, line, (size_t)len) == len ? EXIT_SUCCESS : EXIT_FAILURE;
}

#define EXIT_SKIPPED 77

static int parent(const char *self, size_t mib, int async)
{
    const char *backend = "?";
    gpumem_status st = gpumem_backend(&backend);
    if (st != GPUMEM_OK)
        return fail("parent", "gpumem_backend", st);
    if (mib == 0)
        mib = strcmp(backend, "sim") == 0 ? 16 : 1024;
    size_t n = mib * MIB;
    struct gpumem_pool_props props = GPUMEM_POOL_PROPS_INIT;
    props.source = async ? GPUMEM_POOL_SOURCE_ASYNC : GPUMEM_POOL_SOURCE_VIRTUAL;
    props.maximum = 2 * (uint64_t)n;
    props.handle_type = GPUMEM_POOL_HANDLE_POSIX_FD;
    gpumem_pool *pool = NULL;
    gpumem_allocation *a = NULL;
    uint64_t ptr = 0;
    st = gpumem_pool_create_with_props(NULL, &props, &pool);
    if (async && (st == GPUMEM_ERROR_NOT_SIMULATED || st == GPUMEM_ERROR_NOT_SUPPORTED)) {
        printf("pool-ipc --source async: skipped: %s has no stream-ordered pools (%s)\n",
               st == GPUMEM_ERROR_NOT_SIMULATED ? "the simulator" : "this driver or device", gpumem_last_error());
        return EXIT_SKIPPED;
    }
    if (st != GPUMEM_OK)
        return fail("parent", "gpumem_pool_create_with_props", st);
    if ((st = gpumem_pool_allocate(pool, n, NULL, &a)) != GPUMEM_OK ||
        (st = gpumem_allocation_pointer(a, &ptr)) != GPUMEM_OK)
        return fail("parent", "gpumem_pool_allocate", st);
    unsigned char *buf = malloc(n);
    if (buf == NULL)
        return fail("parent", "malloc", GPUMEM_ERROR_HOST_OUT_OF_MEMORY);
    for (size_t i = 0; i < n; i++)
        buf[i] = pattern(i, 1);
    if ((st = host_copy(ptr, buf, n, 1)) != GPUMEM_OK)
        return fail("parent", "filling the allocation", st);

    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        perror("pool-ipc: socketpair");
        return EXIT_FAILURE;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) { /* a new process image: the library starts afresh in it */
        char fd[16];
        snprintf(fd, sizeof fd, "%d", sv[1]);
        close(sv[0]);
        execl(self, self, "--child", fd, (char *)NULL);
        perror("pool-ipc: exec");
        _exit(127);
    }
    close(sv[1]);
    gpumem_pool_ipc_handle h;
    if ((st = gpumem_pool_ipc_send(pool, sv[0])) != GPUMEM_OK)
        return fail("parent", "gpumem_pool_ipc_send", st);
    if ((st = gpumem_allocation_ipc_handle(a, &h)) != GPUMEM_OK)
        return fail("parent", "gpumem_allocation_ipc_handle", st);
    if (write(sv[0], &h, sizeof h) != (ssize_t)sizeof h) {
        perror("pool-ipc: write");
        return EXIT_FAILURE;
    }
    char line[64] = "";
    ssize_t got = 0, r;
    while ((size_t)got < sizeof line - 1 && (r = read(sv[0], line + got, sizeof line - 1 - (size_t)got)) > 0)
        got += r;
    line[got] = '\0';
    int wst = 0;
    waitpid(pid, &wst, 0);
    int child_ok = 0, child_first = -1;
    double child_gbs = 0;
    if (!WIFEXITED(wst) || WEXITSTATUS(wst) != 0 ||
        sscanf(line, "%d %lf %d", &child_ok, &child_gbs, &child_first) != 3) {
        fprintf(stderr, "pool-ipc: the child failed\n");
        return EXIT_FAILURE;
    }
    /* the child's bytes in the first mebibyte, the parent's after it */
    if ((st = host_copy(ptr, buf, 2 * MIB, 0)) != GPUMEM_OK)
        return fail("parent", "reading back", st);
    int parent_ok = holds(buf, MIB, 0, 7) && holds(buf + MIB, MIB, MIB, 1);
    double gbs = 0;
    unsigned char first = 0;
    if ((st = copy_bandwidth(ptr, n, &gbs, &first)) != GPUMEM_OK)
        return fail("parent", "the copy within the process", st);
    printf("the child read the parent's bytes: %s\n", child_ok ? "ok" : "WRONG");
    printf("the parent read the child's bytes: %s\n", parent_ok ? "ok" : "WRONG");
    printf("both copies read the child's first byte: %s\n",
           child_first == pattern(0, 7) && first == pattern(0, 7) ? "ok" : "WRONG");
    printf("copy of %zu MiB device to device (%s, %s pool): within one process %.1f GB/s, from the other process's "
           "allocation %.1f GB/s (%.0f%%)\n", mib, backend, async ? "stream-ordered" : "virtual-memory", gbs, child_gbs, gbs > 0 ? 100.0 * child_gbs / gbs : 0.0);
    free(buf);
    gpumem_allocation_free(a, NULL);
    gpumem_pool_destroy(pool);
    close(sv[0]);
    return child_ok && parent_ok && first == pattern(0, 7) ? EXIT_SUCCESS : EXIT_FAILURE;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--child") == 0)
        return child(atoi(argv[2]));
    int async = 0, at = 1;
    if (argc > 2 && strcmp(argv[1], "--source") == 0) {
        async = strcmp(argv[2], "async") == 0;
        at = async || strcmp(argv[2], "vmm") == 0 ? 3 : argc + 1; /* another source: the usage */
    }
    long mib = argc > at ? atol(argv[at]) : 0;
    if (at > argc || argc > at + 1 || mib < 0 || mib == 1 || mib > (1L << 20)) {
        fprintf(stderr, "usage: pool-ipc [--source vmm|async] [MiB], at least 2\n");
        return EXIT_FAILURE;
    }
    /* the child is this program again: by its path when argv[0] is one */
    const char *self = strchr(argv[0], '/') != NULL ? argv[0] : "/proc/self/exe";
    return parent(self, (size_t)mib, async);
}
