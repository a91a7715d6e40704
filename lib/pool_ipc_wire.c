/*
 * pool_ipc_wire.c - a pool's chunks over a Unix socket (pool_ipc.h): the
 * messages of gpumem/pool_ipc.h's wire format, written with sendmsg(2) and
 * their file descriptors as SCM_RIGHTS, and read back with every field
 * checked.  A stream socket has no message boundaries, so a message is
 * read as its header, then exactly its records; a datagram or seqpacket
 * socket gives it whole.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bytes.h"
#include "error.h"
#include "gpumem/pool_ipc.h"
#include "pool_ipc.h"

enum {
    HDR = 64,
    REC = 24,
    OFF_MAGIC = 0,
    OFF_VERSION = 8,
    OFF_HDRSIZE = 12,
    OFF_ID = 16,
    OFF_RESERVED = 24,
    OFF_GRAN = 32,
    OFF_PCI = 40,
    OFF_N = 52,
    OFF_TOTAL = 56,
    OFF_FIRST = 60,
    MAX_FDS = GPUMEM_POOL_IPC_MAX_FDS,
    MSG_MAX = HDR + MAX_FDS * REC
};
#define RESERVED_MAX ((uint64_t)1 << 51)
#define GRAN_MIN ((uint64_t)1 << 12)
#define GRAN_MAX ((uint64_t)1 << 30)

static const char magic[8] = {'G', 'P', 'U', 'M', 'E', 'M', 'P', 'C'};

gpumem_status gm_pool_ipc_socket(int sock, const char *what, int *stream)
{
    int domain = 0, type = 0;
    socklen_t len = sizeof domain;
    if (sock < 0 || fcntl(sock, F_GETFD) < 0)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: socket_fd %d is not an open file descriptor", what, sock);
    if (getsockopt(sock, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: socket_fd %d is not a socket (%s)", what, sock,
                        strerror(errno));
    len = sizeof type;
    if (domain != AF_UNIX || getsockopt(sock, SOL_SOCKET, SO_TYPE, &type, &len) != 0)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: socket_fd %d is not a Unix domain (AF_UNIX) socket, which "
                        "file descriptors need", what, sock);
    *stream = type == SOCK_STREAM;
    return GPUMEM_OK;
}

void gm_pool_ipc_chunks_free(gm_source_chunk *c, size_t n)
{
    for (size_t i = 0; c != NULL && i < n; i++)
        if (c[i].fd >= 0)
            close(c[i].fd);
    free(c);
}

/* ---- writing ---- */

static gpumem_status send_error(int err, const char *what)
{
    if (err == EPIPE || err == ECONNRESET || err == ENOTCONN)
        return gm_error(GPUMEM_ERROR_INVALID_STATE, "%s: the peer closed the socket (%s)", what, strerror(err));
    return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: sendmsg on socket_fd failed: %s", what, strerror(err));
}

/* One message: buf[0, len) with fds[0, nfds) on its first byte. */
static gpumem_status send_message(int sock, int stream, const unsigned char *buf, size_t len, const int *fds,
                                  size_t nfds, const char *what)
{
    union {
        char buf[CMSG_SPACE(sizeof(int) * MAX_FDS)];
        struct cmsghdr align;
    } ctl;
    memset(&ctl, 0, sizeof ctl);
    size_t done = 0;
    while (done < len) {
        struct iovec iov = {(void *)(buf + done), len - done};
        struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
        if (done == 0 && nfds > 0) {
            m.msg_control = ctl.buf;
            m.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
            struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
            cm->cmsg_level = SOL_SOCKET;
            cm->cmsg_type = SCM_RIGHTS;
            cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
            memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
        }
        ssize_t r = sendmsg(sock, &m, MSG_NOSIGNAL);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return send_error(errno, what);
        if (!stream && (size_t)r != len) /* a datagram goes whole or not at all */
            return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: sendmsg sent %zd of %zu bytes", what, r, len);
        done += (size_t)r;
    }
    return GPUMEM_OK;
}

gpumem_status gm_pool_ipc_write(int sock, int stream, const gm_ipc_pool_info *info, const gm_source_chunk *c,
                                size_t n, const char *what)
{
    if (n > UINT32_MAX)
        return gm_error(GPUMEM_ERROR_OVERFLOW, "%s: %zu chunks are more than a send holds", what, n);
    size_t at = 0;
    do {
        size_t k = n - at < MAX_FDS ? n - at : MAX_FDS;
        unsigned char buf[MSG_MAX];
        int fds[MAX_FDS];
        memset(buf, 0, HDR);
        memcpy(buf + OFF_MAGIC, magic, sizeof magic);
        wr32(buf + OFF_VERSION, GPUMEM_POOL_IPC_VERSION);
        wr32(buf + OFF_HDRSIZE, HDR);
        wr64(buf + OFF_ID, info->id);
        wr64(buf + OFF_RESERVED, info->reserved);
        wr64(buf + OFF_GRAN, info->granularity);
        for (int i = 0; i < 3; i++)
            wr32(buf + OFF_PCI + 4 * i, (uint32_t)info->pci[i]);
        wr32(buf + OFF_N, (uint32_t)k);
        wr32(buf + OFF_TOTAL, (uint32_t)n);
        wr32(buf + OFF_FIRST, (uint32_t)at);
        size_t recs = info->granularity == 0 ? 0 : k; /* a driver's pool: its one fd, no record */
        for (size_t i = 0; i < k; i++) {
            wr64(buf + HDR + REC * i, c[at + i].off);
            wr64(buf + HDR + REC * i + 8, c[at + i].len);
            wr64(buf + HDR + REC * i + 16, c[at + i].serial);
            fds[i] = c[at + i].fd;
        }
        gpumem_status st = send_message(sock, stream, buf, HDR + REC * recs, fds, k, what);
        if (st != GPUMEM_OK)
            return st;
        at += k;
    } while (at < n);
    return GPUMEM_OK;
}

/* ---- reading ---- */

/* File descriptors received for one message. */
typedef struct fdset {
    int fd[MAX_FDS];
    size_t n;
    bool excess; /* more came than a message may carry, or the kernel truncated them */
} fdset;

static void fdset_close(fdset *f)
{
    for (size_t i = 0; i < f->n; i++)
        close(f->fd[i]);
    f->n = 0;
}

/* Takes the SCM_RIGHTS descriptors of m into f (closing any beyond room). */
static void take_fds(struct msghdr *m, fdset *f)
{
    if (m->msg_flags & MSG_CTRUNC)
        f->excess = true;
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(m); cm != NULL; cm = CMSG_NXTHDR(m, cm)) {
        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
            continue;
        size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < k; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof fd);
            if (f->n < MAX_FDS)
                f->fd[f->n++] = fd;
            else {
                close(fd);
                f->excess = true;
            }
        }
    }
}

/* Receives up to len bytes into buf (exactly len on a stream socket, one
 * message on another), descriptors into f; *got the bytes. */
static gpumem_status recv_bytes(int sock, int stream, unsigned char *buf, size_t len, fdset *f, size_t *got,
                                bool *trunc, const char *what)
{
    union {
        char buf[CMSG_SPACE(sizeof(int) * MAX_FDS)];
        struct cmsghdr align;
    } ctl;
    *got = 0;
    *trunc = false;
    do {
        struct iovec iov = {buf + *got, len - *got};
        struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof ctl.buf};
        ssize_t r = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return gm_error(GPUMEM_ERROR_NOT_READY, "%s: no message came on socket_fd within its receive timeout",
                            what);
        if (r < 0)
            return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: recvmsg on socket_fd failed: %s", what,
                            strerror(errno));
        take_fds(&m, f);
        if (r == 0 && (stream || len > 0))
            return gm_error(GPUMEM_ERROR_INVALID_STATE, "%s: the peer closed the socket before the send was "
                            "complete", what);
        *got += (size_t)r;
        if (!stream) {
            *trunc = (m.msg_flags & MSG_TRUNC) != 0;
            break;
        }
    } while (*got < len);
    return GPUMEM_OK;
}

static gpumem_status bad(const char *what, const char *field, uint64_t value)
{
    return gm_error(GPUMEM_ERROR_INVALID_VALUE,
                    "%s: the message read from socket_fd is not a valid pool IPC message: %s (%" PRIu64 ")", what,
                    field, value);
}

/* Checks a header; the first of a send sets *info and *total. */
static gpumem_status check_header(const unsigned char *h, bool first, gm_ipc_pool_info *info, uint32_t *total,
                                  uint32_t received, uint32_t *n, const char *what)
{
    if (memcmp(h + OFF_MAGIC, magic, sizeof magic) != 0)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: the message read from socket_fd is not a pool IPC message: "
                        "the magic is not "
                        "\"GPUMEMPC\" (bytes of another kind on the socket, or damaged)", what);
    if (rd32(h + OFF_VERSION) != GPUMEM_POOL_IPC_VERSION)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE,
                        "%s: the pool IPC message read from socket_fd has version %" PRIu32 ", and "
                        "this library reads version %d", what, rd32(h + OFF_VERSION), GPUMEM_POOL_IPC_VERSION);
    if (rd32(h + OFF_HDRSIZE) != HDR)
        return bad(what, "its header size is not 64", rd32(h + OFF_HDRSIZE));
    gm_ipc_pool_info in = {.id = rd64(h + OFF_ID), .reserved = rd64(h + OFF_RESERVED),
                           .granularity = rd64(h + OFF_GRAN)};
    for (int i = 0; i < 3; i++)
        in.pci[i] = (int32_t)rd32(h + OFF_PCI + 4 * i);
    uint32_t t = rd32(h + OFF_TOTAL);
    *n = rd32(h + OFF_N);
    if (in.id == 0)
        return bad(what, "the pool id is 0", 0);
    if (in.reserved == 0 && in.granularity == 0) { /* the driver's stream-ordered pool: one fd, no record */
        if (t != 1 || *n != 1 || rd32(h + OFF_FIRST) != 0 || !first)
            return bad(what, "a stream-ordered pool's send is not one message of one file descriptor", t);
        *info = in;
        *total = t;
        return GPUMEM_OK;
    }
    if (in.granularity < GRAN_MIN || in.granularity > GRAN_MAX || (in.granularity & (in.granularity - 1)) != 0)
        return bad(what, "the granularity is not a power of two from 4 KiB to 1 GiB", in.granularity);
    if (in.reserved == 0 || in.reserved > RESERVED_MAX || in.reserved % in.granularity != 0)
        return bad(what, "the reservation size is 0, above 2^51 or not a multiple of the granularity",
                   in.reserved);
    if (t > in.reserved / in.granularity)
        return bad(what, "the send has more chunks than the reservation has granules", t);
    if (*n > MAX_FDS)
        return bad(what, "the message has more chunks than GPUMEM_POOL_IPC_MAX_FDS", *n);
    if (first) {
        *info = in;
        *total = t;
    } else if (in.id != info->id || in.reserved != info->reserved || in.granularity != info->granularity ||
               memcmp(in.pci, info->pci, sizeof in.pci) != 0 || t != *total) {
        return bad(what, "a message of the send disagrees with its first on the pool or the chunk count", t);
    }
    if (rd32(h + OFF_FIRST) != received)
        return bad(what, "the index of the message's first chunk is not the count received so far",
                   rd32(h + OFF_FIRST));
    if (*n > *total - received || (*n == 0 && *total != 0))
        return bad(what, "the message's chunk count does not fit the send's", *n);
    return GPUMEM_OK;
}

/* One message of a send: its chunks go to c[*received ...], with their fds. */
static gpumem_status read_message(int sock, int stream, bool first, gm_ipc_pool_info *info, uint32_t *total,
                                  gm_source_chunk **c, uint32_t *received, const char *what)
{
    unsigned char buf[MSG_MAX + 1];
    fdset f = {.n = 0};
    size_t got = 0;
    bool trunc = false;
    gpumem_status st = recv_bytes(sock, stream, buf, stream ? HDR : sizeof buf, &f, &got, &trunc, what);
    uint32_t n = 0;
    if (st == GPUMEM_OK && got < HDR)
        st = bad(what, "the message is shorter than its 64-byte header", got);
    if (st == GPUMEM_OK)
        st = check_header(buf, first, info, total, *received, &n, what);
    size_t recs = st == GPUMEM_OK && info->granularity == 0 ? 0 : n; /* a driver's pool: no record */
    if (st == GPUMEM_OK && stream && recs > 0) {
        size_t more = 0;
        st = recv_bytes(sock, stream, buf + HDR, recs * REC, &f, &more, &trunc, what);
        got += more;
    }
    if (st == GPUMEM_OK && (trunc || got != HDR + recs * REC))
        st = bad(what, "the message's bytes are not its header and its chunk records", got);
    if (st == GPUMEM_OK && (f.excess || f.n != n))
        st = gm_error(GPUMEM_ERROR_INVALID_VALUE,
                      "%s: the message read from socket_fd is not a valid pool IPC message: it carries "
                      "%s%zu file descriptors for %" PRIu32 " chunks", what, f.excess ? "more than " : "", f.n, n);
    if (st == GPUMEM_OK && first && *total > 0 && (*c = calloc(*total, sizeof **c)) == NULL)
        st = gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", what);
    for (uint32_t i = 0; st == GPUMEM_OK && recs > 0 && i < n; i++) {
        gm_source_chunk k = {.off = rd64(buf + HDR + REC * i), .len = rd64(buf + HDR + REC * i + 8),
                             .serial = rd64(buf + HDR + REC * i + 16), .fd = -1};
        uint64_t prev_end = *received + i > 0 ? (*c)[*received + i - 1].off + (*c)[*received + i - 1].len : 0;
        if (k.len == 0 || k.off % info->granularity != 0 || k.len % info->granularity != 0)
            st = bad(what, "a chunk is empty or not aligned to the granularity", k.off);
        else if (k.off > info->reserved || k.len > info->reserved - k.off)
            st = bad(what, "a chunk lies outside the reservation", k.off);
        else if (k.off < prev_end)
            st = bad(what, "a chunk does not come after the previous one", k.off);
        else
            (*c)[*received + i] = k;
    }
    if (st != GPUMEM_OK) {
        fdset_close(&f);
        return st;
    }
    for (uint32_t i = 0; i < n; i++)
        (*c)[*received + i].fd = f.fd[i];
    *received += n;
    return GPUMEM_OK;
}

gpumem_status gm_pool_ipc_read(int sock, int stream, const char *what, gm_ipc_pool_info *info, gm_source_chunk **c,
                               size_t *n)
{
    *c = NULL;
    *n = 0;
    uint32_t total = 0, received = 0;
    gpumem_status st = GPUMEM_OK;
    bool first = true;
    do {
        st = read_message(sock, stream, first, info, &total, c, &received, what);
        first = false;
    } while (st == GPUMEM_OK && received < total);
    if (st != GPUMEM_OK) {
        gm_pool_ipc_chunks_free(*c, received);
        *c = NULL;
        return st;
    }
    *n = total;
    return GPUMEM_OK;
}
