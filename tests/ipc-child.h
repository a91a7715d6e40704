/*
 * ipc-child.h - what the pool IPC tests (tests/test-pool-ipc.c and
 * tests/test-pool-ipc-async.c) share: a parent that exports and a child it
 * forks that imports, joined by a socketpair, the child's checks coming
 * back to the parent through a pipe, one record a check.
 *
 *   - ipc_child_start forks (before the parent has used the library: it
 *     starts threads on the simulator); the child runs fn on its end of
 *     the socketpair, calling report or report_err for each check, then
 *     exits 0;
 *   - the parent talks to the child on c.sock, then ipc_child_wait closes
 *     c.sock and waits for the child, and ipc_child_results reports each of
 *     the child's checks as its own, returning how many came;
 *   - count_fds counts this process's open descriptors (in /proc/self/fd),
 *     for "no descriptor leaked";
 *   - xfer copies bytes between the host and a device address through the
 *     public array calls; fill and check write and check a byte pattern;
 *   - put32 and put64 write the little-endian fields of a handle or of the
 *     wire format, for forged ones (written here, not taken from the
 *     library, so that the tests do not share the library's mistakes).
 *
 * Public API only.
 */
#ifndef GPUMEM_TEST_IPC_CHILD_H
#define GPUMEM_TEST_IPC_CHILD_H

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gpumem.h>

#include "tap.h"

#define M ((uint64_t)1 << 20)

static inline int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    if (d == NULL)
        return -1;
    while (readdir(d) != NULL)
        n++;
    closedir(d);
    return n - 3; /* ".", ".." and the directory's own */
}

/* 0 when all len bytes came, -1 on an error or an early end. */
static inline int read_full(int fd, void *buf, size_t len)
{
    size_t got = 0;
    while (got < len) {
        ssize_t r = read(fd, (char *)buf + got, len - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

static inline int write_full(int fd, const void *buf, size_t len)
{
    return write(fd, buf, len) == (ssize_t)len ? 0 : -1;
}

/* Waits for the byte want on s; bails out on another byte or an end. */
static inline void wait_byte(int s, char want)
{
    char c = 0;
    if (read_full(s, &c, 1) != 0 || c != want)
        bail_out("the child did not answer '%c' (got '%c')", want, c);
}

/* Copies n bytes between host buf and device ptr (to_device or back). */
static inline gpumem_status xfer(uint64_t ptr, unsigned char *buf, size_t n, int to_device)
{
    gpumem_cuda_array_interface cai = {.size = sizeof cai, .version = 3, .ndim = 1, .shape = {(int64_t)n},
                                       .typestr = "|u1", .data = ptr};
    gpumem_array *d = NULL, *h = NULL;
    int64_t shape[1] = {(int64_t)n};
    gpumem_status st = gpumem_as_cuda_array(NULL, &cai, GPUMEM_CAI_NO_SYNCHRONIZE, NULL, NULL, &d);
    if (st == GPUMEM_OK)
        st = gpumem_host_array_wrap(buf, 1, shape, NULL, gpumem_dtype_builtin(GPUMEM_UINT8), &h);
    if (st == GPUMEM_OK)
        st = to_device ? gpumem_array_copy(d, h, NULL) : gpumem_array_copy(h, d, NULL);
    gpumem_array_release(h);
    gpumem_array_release(d);
    return st;
}

static inline void fill(unsigned char *b, size_t n, unsigned mul, unsigned add)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)((i * mul + add) & 0xff);
}

static inline int check(const unsigned char *b, size_t n, unsigned mul, unsigned add)
{
    for (size_t i = 0; i < n; i++)
        if (b[i] != (unsigned char)((i * mul + add) & 0xff))
            return 0;
    return 1;
}

static inline void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static inline void put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* ---- the child and its results ---- */

typedef struct ipc_rec {
    int pass;
    char name[200];
    char diag[400];
} ipc_rec;

typedef struct ipc_child {
    pid_t pid;
    int sock; /* the parent's end of the socketpair */
    int res;  /* the read end of the results' pipe */
} ipc_child;

static int ipc_res_fd = -1; /* in the child: the write end of the results' pipe */

/* In the child: one check, passed or not; a failed one carries
 * gpumem_last_error(). */
static inline void report(int pass, const char *name)
{
    ipc_rec r;
    memset(&r, 0, sizeof r);
    r.pass = pass;
    snprintf(r.name, sizeof r.name, "child: %s", name);
    snprintf(r.diag, sizeof r.diag, "%s", pass ? "" : gpumem_last_error());
    if (write_full(ipc_res_fd, &r, sizeof r) != 0)
        _exit(3);
}

/* In the child: st is want and the message holds needle. */
static inline void report_err(gpumem_status st, gpumem_status want, const char *needle, const char *name)
{
    report(st == want && strstr(gpumem_last_error(), needle) != NULL, name);
}

static inline void ipc_child_start(ipc_child *c, void (*fn)(int s))
{
    int sv[2], res[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0 || pipe(res) != 0)
        bail_out("socketpair");
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        bail_out("fork");
    if (pid == 0) {
        close(sv[0]);
        close(res[0]);
        ipc_res_fd = res[1];
        fn(sv[1]);
        _exit(0);
    }
    close(sv[1]);
    close(res[1]);
    c->pid = pid;
    c->sock = sv[0];
    c->res = res[0];
}

/* Closes the parent's end of the socketpair and waits for the child;
 * returns its wait status. */
static inline int ipc_child_wait(ipc_child *c)
{
    int wst = 0;
    close(c->sock);
    c->sock = -1;
    waitpid(c->pid, &wst, 0);
    return wst;
}

/* Reports each of the child's checks (after ipc_child_wait); returns how
 * many came. */
static inline int ipc_child_results(ipc_child *c)
{
    ipc_rec r;
    int n = 0;
    while (read_full(c->res, &r, sizeof r) == 0) {
        n++;
        if (!ok(r.pass, "%s", r.name))
            diag("%s", r.diag);
    }
    close(c->res);
    c->res = -1;
    return n;
}

#endif /* GPUMEM_TEST_IPC_CHILD_H */
