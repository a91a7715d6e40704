/* IPC of a virtual-memory pool's memory (gpumem/pool_ipc.h): two processes
 * joined by a socketpair, the parent exporting, the child importing; data
 * written on one side read on the other; the protocol for chunks mapped
 * later (a handle refused until the importer updates) and for chunks
 * unmapped; bad handles, bad sockets and forged messages refused with a
 * status and a message naming the argument or field; and no file
 * descriptor leaked (counted in /proc/self/fd).
 *
 * Public API only.  On the simulator a chunk's descriptor is a memfd; on a
 * GPU (GPUMEM_BACKEND=cuda) the same test runs with the driver's. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpumem.h"
#include "ipc-child.h"
#include "tap.h"

#define MAXIMUM (64 * M)
#define RESERVED (MAXIMUM + MAXIMUM / 8) /* the pool's reservation: maximum and an eighth for small blocks */

/* ---- the child: the importer (its results come back through a pipe) ---- */

static void importer(int s)
{
    uint64_t fr = 0, total = 0;
    gpumem_memory_info(NULL, &fr, &total); /* the library's own descriptors first */
    int fds0 = count_fds();
    gpumem_pool_import *im = NULL;
    gpumem_status st = gpumem_pool_ipc_open(NULL, s, &im);
    report(st == GPUMEM_OK, "gpumem_pool_ipc_open maps the pool's chunks received from the socket");
    if (st != GPUMEM_OK)
        return;
    gpumem_pool_ipc_handle ha, hb, bad;
    if (read_full(s, &ha, sizeof ha) != 0)
        _exit(4);
    uint64_t pa = 0, pb = 0;
    size_t size = 0;
    st = gpumem_pool_import_open_allocation(im, &ha, &pa, &size);
    report(st == GPUMEM_OK && size == 3 * M, "the allocation opens by its handle, with its size");
    static unsigned char buf[8 * M];
    st = xfer(pa, buf, 3 * M, 0);
    report(st == GPUMEM_OK && check(buf, 3 * M, 7, 1), "the child reads the parent's bytes through the import");
    fill(buf, 3 * M, 13, 5);
    report(xfer(pa, buf, 3 * M, 1) == GPUMEM_OK, "the child writes the allocation");
    write_full(s, "A", 1);

    /* B lies in chunks mapped after the send */
    if (read_full(s, &hb, sizeof hb) != 0)
        _exit(4);
    st = gpumem_pool_import_open_allocation(im, &hb, &pb, NULL);
    report_err(st, GPUMEM_ERROR_INVALID_STATE, "gpumem_pool_import_update",
               "a handle in chunks mapped after the send is GPUMEM_ERROR_INVALID_STATE, saying to update");

    /* bad handles */
    memcpy(&bad, &ha, sizeof bad);
    put64(bad.bytes + 24, RESERVED - M); /* 3 MiB from 1 MiB before the end */
    report_err(gpumem_pool_import_open_allocation(im, &bad, &pb, NULL), GPUMEM_ERROR_INVALID_VALUE,
               "reach past the pool's reservation", "an offset whose bytes reach past the reservation is refused");
    memcpy(&bad, &ha, sizeof bad);
    put64(bad.bytes + 32, UINT64_MAX);
    report_err(gpumem_pool_import_open_allocation(im, &bad, &pb, NULL), GPUMEM_ERROR_INVALID_VALUE,
               "reach past the pool's reservation", "a size that overflows is refused");
    memcpy(&bad, &ha, sizeof bad);
    put64(bad.bytes + 24, 40 * M);
    report_err(gpumem_pool_import_open_allocation(im, &bad, &pb, NULL), GPUMEM_ERROR_INVALID_STATE,
               "does not map all of", "an offset past the mapped chunks is GPUMEM_ERROR_INVALID_STATE");
    memcpy(&bad, &ha, sizeof bad);
    bad.bytes[16] ^= 2;
    report_err(gpumem_pool_import_open_allocation(im, &bad, &pb, NULL), GPUMEM_ERROR_INVALID_VALUE,
               "another pool", "a handle of another pool is refused");
    memcpy(&bad, &ha, sizeof bad);
    bad.bytes[0] = 'X';
    report_err(gpumem_pool_import_open_allocation(im, &bad, &pb, NULL), GPUMEM_ERROR_INVALID_VALUE, "magic",
               "garbage bytes are refused for their magic");
    memcpy(&bad, &ha, sizeof bad);
    put64(bad.bytes + 32, 0);
    report_err(gpumem_pool_import_open_allocation(im, &bad, &pb, NULL), GPUMEM_ERROR_INVALID_VALUE, "size is 0",
               "a size of 0 is refused");
    memcpy(&bad, &ha, sizeof bad);
    bad.bytes[60] = 1;
    report_err(gpumem_pool_import_open_allocation(im, &bad, &pb, NULL), GPUMEM_ERROR_INVALID_VALUE,
               "reserved bytes", "nonzero reserved bytes are refused");
    memcpy(&bad, &ha, sizeof bad);
    bad.bytes[GPUMEM_POOL_IPC_HANDLE_SIZE - 1] = 0x80;
    report_err(gpumem_pool_import_open_allocation(im, &bad, &pb, NULL), GPUMEM_ERROR_INVALID_VALUE, "byte (127)",
               "a nonzero last byte (127) is refused, naming it");
    memcpy(&bad, &ha, sizeof bad);
    bad.bytes[64] = 1;
    report_err(gpumem_pool_import_open_allocation(im, &bad, &pb, NULL), GPUMEM_ERROR_INVALID_VALUE, "byte (64)",
               "a nonzero byte 64 (beyond the old 64-byte handle) is refused");
    memcpy(&bad, &ha, sizeof bad);
    bad.bytes[56] = 7;
    report_err(gpumem_pool_import_open_allocation(im, &bad, &pb, NULL), GPUMEM_ERROR_INVALID_VALUE, "kind",
               "an unknown kind byte is refused, naming the kind");
    memcpy(&bad, &ha, sizeof bad);
    bad.bytes[56] = 2;
    report_err(gpumem_pool_import_open_allocation(im, &bad, &pb, NULL), GPUMEM_ERROR_INVALID_VALUE,
               "'handle' is of kind 2", "a stream-ordered pool's handle (kind 2) given to a virtual-memory pool's "
               "import is refused, naming 'handle'");
    memcpy(&bad, &ha, sizeof bad);
    put32(bad.bytes + 12, 64);
    report_err(gpumem_pool_import_open_allocation(im, &bad, &pb, NULL), GPUMEM_ERROR_INVALID_VALUE,
               "GPUMEM_POOL_IPC_HANDLE_SIZE", "a handle of the old size 64 is refused for its size field");
    memcpy(&bad, &ha, sizeof bad);
    put64(bad.bytes + 40, 999999);
    report_err(gpumem_pool_import_open_allocation(im, &bad, &pb, NULL), GPUMEM_ERROR_INVALID_STATE,
               "older chunks", "a handle whose chunk serial differs is GPUMEM_ERROR_INVALID_STATE");
    report_err(gpumem_pool_import_open_allocation(im, NULL, &pb, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'handle'",
               "a NULL handle is GPUMEM_ERROR_NULL_ARGUMENT naming 'handle'");

    /* the parent sends again: the update maps B, A stays where it was */
    write_full(s, "B", 1);
    st = gpumem_pool_import_update(im, s);
    report(st == GPUMEM_OK, "gpumem_pool_import_update receives the second send");
    uint64_t pa2 = 0;
    st = gpumem_pool_import_open_allocation(im, &hb, &pb, &size);
    report(st == GPUMEM_OK && size == 8 * M, "after the update the later allocation opens");
    report(gpumem_pool_import_open_allocation(im, &ha, &pa2, NULL) == GPUMEM_OK && pa2 == pa,
           "the earlier allocation keeps its address across the update");
    fill(buf, 8 * M, 3, 11);
    report(xfer(pb, buf, 8 * M, 1) == GPUMEM_OK, "the child writes the later allocation");
    write_full(s, "C", 1);

    /* the parent freed A and trimmed: its first chunk went */
    st = gpumem_pool_import_update(im, s);
    report(st == GPUMEM_OK, "the third send updates the import");
    report_err(gpumem_pool_import_open_allocation(im, &ha, &pa2, NULL), GPUMEM_ERROR_INVALID_STATE,
               "does not map all of", "a chunk the pool unmapped is unmapped by the update");
    report(gpumem_pool_import_open_allocation(im, &hb, &pb, NULL) == GPUMEM_OK &&
               xfer(pb, buf, 8 * M, 0) == GPUMEM_OK &&
               check(buf, 8 * M, 3, 11),
           "the chunks kept still hold their bytes");
    report(gpumem_pool_import_close(im) == GPUMEM_OK, "gpumem_pool_import_close");
    report_err(gpumem_pool_import_close(im), GPUMEM_ERROR_INVALID_STATE, "import",
               "a second close is GPUMEM_ERROR_INVALID_STATE naming 'import'");
    report_err(gpumem_pool_import_open_allocation(im, &hb, &pb, NULL), GPUMEM_ERROR_INVALID_STATE, "closed",
               "a closed import opens nothing");
    int fds1 = count_fds();
    report(fds1 == fds0, "the child's descriptors after the close are those before the open");
    write_full(s, "D", 1);
}

/* ---- the parent: the exporter ---- */

static gpumem_pool *vmm_pool(int exportable)
{
    struct gpumem_pool_props props = GPUMEM_POOL_PROPS_INIT;
    props.source = GPUMEM_POOL_SOURCE_VIRTUAL;
    props.maximum = MAXIMUM;
    props.handle_type = exportable ? GPUMEM_POOL_HANDLE_POSIX_FD : GPUMEM_POOL_HANDLE_NONE;
    gpumem_pool *p = NULL;
    if (gpumem_pool_create_with_props(NULL, &props, &p) != GPUMEM_OK)
        bail_out("a virtual-memory pool: %s", gpumem_last_error());
    return p;
}

static void exporter(int s)
{
    static unsigned char buf[8 * M];
    gpumem_pool *pool = vmm_pool(1);
    gpumem_allocation *a = NULL, *b = NULL;
    uint64_t pa = 0, pb = 0;
    if (gpumem_pool_allocate(pool, 3 * M, NULL, &a) != GPUMEM_OK || gpumem_allocation_pointer(a, &pa) != GPUMEM_OK)
        bail_out("allocate: %s", gpumem_last_error());
    fill(buf, 3 * M, 7, 1);
    ok(xfer(pa, buf, 3 * M, 1) == GPUMEM_OK, "the parent fills its allocation");
    ok(gpumem_pool_ipc_send(pool, s) == GPUMEM_OK, "gpumem_pool_ipc_send sends the pool's chunks");
    gpumem_pool_ipc_handle ha, hb;
    ok(gpumem_allocation_ipc_handle(a, &ha) == GPUMEM_OK, "gpumem_allocation_ipc_handle");
    ok(sizeof ha == 128 && memcmp(ha.bytes, "GPUMEMPA", 8) == 0 && ha.bytes[8] == GPUMEM_POOL_IPC_VERSION &&
           ha.bytes[12] == 128 && ha.bytes[13] == 0 && ha.bytes[56] == 1,
       "the handle is 128 bytes and starts with its magic, version and size; its kind (byte 56) is 1");
    int zero = 1;
    for (size_t i = 57; i < sizeof ha.bytes; i++)
        zero &= ha.bytes[i] == 0;
    ok(zero, "the handle's bytes 57 to 127 are zero");
    write_full(s, &ha, sizeof ha);
    wait_byte(s, 'A');
    ok(xfer(pa, buf, 3 * M, 0) == GPUMEM_OK && check(buf, 3 * M, 13, 5), "the parent reads what the child wrote");

    if (gpumem_pool_allocate(pool, 8 * M, NULL, &b) != GPUMEM_OK || gpumem_allocation_pointer(b, &pb) != GPUMEM_OK)
        bail_out("allocate: %s", gpumem_last_error());
    ok(gpumem_allocation_ipc_handle(b, &hb) == GPUMEM_OK, "the handle of an allocation in new chunks");
    write_full(s, &hb, sizeof hb);
    wait_byte(s, 'B');
    ok(gpumem_pool_ipc_send(pool, s) == GPUMEM_OK, "the second send");
    wait_byte(s, 'C');
    ok(xfer(pb, buf, 8 * M, 0) == GPUMEM_OK && check(buf, 8 * M, 3, 11),
       "the parent reads what the child wrote into the later allocation");
    gpumem_allocation_free(a, NULL);
    ok(gpumem_pool_trim(pool, 0) == GPUMEM_OK, "the parent frees the first allocation and trims");
    ok(gpumem_pool_ipc_send(pool, s) == GPUMEM_OK, "the third send");
    wait_byte(s, 'D');
    gpumem_allocation_free(b, NULL);
    gpumem_pool_destroy(pool);
}

/* ---- forged messages, received in this process ---- */

/* A header of the wire format. */
static void header(unsigned char *h, uint64_t id, uint32_t n, uint32_t total, uint32_t first)
{
    memset(h, 0, 64);
    memcpy(h, "GPUMEMPC", 8);
    put32(h + 8, GPUMEM_POOL_IPC_VERSION);
    put32(h + 12, 64);
    put64(h + 16, id);
    put64(h + 24, RESERVED);
    put64(h + 32, 2 * M);
    put32(h + 52, n);
    put32(h + 56, total);
    put32(h + 60, first);
}

static void record(unsigned char *r, uint64_t off, uint64_t len, uint64_t serial)
{
    put64(r, off);
    put64(r + 8, len);
    put64(r + 16, serial);
}

/* Sends buf with nfds memfds attached. */
static void send_forged(int s, const unsigned char *buf, size_t len, int nfds)
{
    int fds[4];
    union {
        char b[CMSG_SPACE(sizeof fds)];
        struct cmsghdr align;
    } ctl;
    memset(&ctl, 0, sizeof ctl);
    for (int i = 0; i < nfds; i++) {
        fds[i] = memfd_create("forged", MFD_CLOEXEC);
        if (fds[i] < 0 || ftruncate(fds[i], (off_t)(2 * M)) != 0)
            bail_out("memfd_create");
    }
    struct iovec iov = {(void *)buf, len};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
    if (nfds > 0) {
        m.msg_control = ctl.b;
        m.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
        struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
        memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
    }
    if (sendmsg(s, &m, 0) != (ssize_t)len)
        bail_out("sendmsg: %s", strerror(errno));
    for (int i = 0; i < nfds; i++)
        close(fds[i]);
}

/* Opens from a socketpair of type type after feed wrote into the other end
 * (closed afterwards when close_peer). */
static gpumem_status open_forged(int type, const unsigned char *buf, size_t len, int nfds, int close_peer)
{
    int sv[2];
    if (socketpair(AF_UNIX, type, 0, sv) != 0)
        bail_out("socketpair");
    if (len > 0)
        send_forged(sv[0], buf, len, nfds);
    if (close_peer)
        close(sv[0]);
    gpumem_pool_import *im = (gpumem_pool_import *)(uintptr_t)0x1;
    gpumem_status st = gpumem_pool_ipc_open(NULL, sv[1], &im);
    if (im != (gpumem_pool_import *)(uintptr_t)0x1) {
        diag("the import was written on failure");
        st = GPUMEM_ERROR_INTERNAL;
    }
    if (!close_peer)
        close(sv[0]);
    close(sv[1]);
    return st;
}

static void is_err(gpumem_status st, gpumem_status want, const char *needle, const char *name)
{
    if (!ok(st == want && strstr(gpumem_last_error(), needle) != NULL, "%s", name))
        diag("got %s: %s", gpumem_status_string(st), gpumem_last_error());
}

static void test_forged(void)
{
    unsigned char m[64 + 4 * 24];
    int fds0 = count_fds();
    memset(m, 'x', sizeof m);
    is_err(open_forged(SOCK_STREAM, m, 64, 0, 1), GPUMEM_ERROR_INVALID_VALUE, "magic",
           "garbage on the socket is refused for its magic");
    is_err(open_forged(SOCK_STREAM, m, 0, 0, 1), GPUMEM_ERROR_INVALID_STATE, "closed the socket",
           "a socket whose peer closed is GPUMEM_ERROR_INVALID_STATE");
    header(m, 77, 0, 0, 0);
    is_err(open_forged(SOCK_STREAM, m, 10, 0, 1), GPUMEM_ERROR_INVALID_STATE, "closed the socket",
           "a header cut short by the peer's close is GPUMEM_ERROR_INVALID_STATE");
    is_err(open_forged(SOCK_SEQPACKET, m, 10, 0, 0), GPUMEM_ERROR_INVALID_VALUE, "shorter than its 64-byte header",
           "a seqpacket message shorter than a header is refused");
    header(m, 77, 2, 2, 0);
    record(m + 64, 0, 2 * M, 1);
    record(m + 88, 2 * M, 2 * M, 2);
    is_err(open_forged(SOCK_STREAM, m, 64 + 48, 1, 1), GPUMEM_ERROR_INVALID_VALUE,
           "carries 1 file descriptors for 2 chunks", "a message with fewer descriptors than chunks is refused");
    header(m, 77, 1, 1, 0);
    record(m + 64, 0, 2 * M, 1);
    is_err(open_forged(SOCK_SEQPACKET, m, 64 + 24, 3, 0), GPUMEM_ERROR_INVALID_VALUE,
           "carries 3 file descriptors for 1 chunks", "a message with more descriptors than chunks is refused");
    record(m + 64, RESERVED, 2 * M, 1);
    is_err(open_forged(SOCK_STREAM, m, 64 + 24, 1, 1), GPUMEM_ERROR_INVALID_VALUE, "outside the reservation",
           "a chunk outside the reservation is refused");
    record(m + 64, M, 2 * M, 1);
    is_err(open_forged(SOCK_STREAM, m, 64 + 24, 1, 1), GPUMEM_ERROR_INVALID_VALUE, "aligned",
           "a chunk off the granularity is refused");
    header(m, 77, 1, 2, 0);
    record(m + 64, 0, 2 * M, 1);
    is_err(open_forged(SOCK_STREAM, m, 64 + 24, 1, 1), GPUMEM_ERROR_INVALID_STATE, "closed the socket",
           "a send cut short after its first message is GPUMEM_ERROR_INVALID_STATE");
    header(m, 77, 0, 1000000, 0);
    is_err(open_forged(SOCK_STREAM, m, 64, 0, 1), GPUMEM_ERROR_INVALID_VALUE, "more chunks than the reservation",
           "a chunk count above the reservation's granules is refused");
    header(m, 77, 0, 0, 0);
    put32(m + 8, 9);
    is_err(open_forged(SOCK_STREAM, m, 64, 0, 1), GPUMEM_ERROR_INVALID_VALUE, "version 9",
           "another version is refused");
    header(m, 77, 0, 0, 0);
    put64(m + 32, 3 * M);
    is_err(open_forged(SOCK_STREAM, m, 64, 0, 1), GPUMEM_ERROR_INVALID_VALUE, "granularity",
           "a granularity that is no power of two is refused");
    /* a stream-ordered pool's send: reservation and granularity 0, one descriptor, no record */
    header(m, 77, 1, 1, 0);
    put64(m + 24, 0);
    put64(m + 32, 0);
    is_err(open_forged(SOCK_SEQPACKET, m, 64, 0, 0), GPUMEM_ERROR_INVALID_VALUE,
           "carries 0 file descriptors for 1 chunks", "a stream-ordered pool's send without its descriptor is refused");
    is_err(open_forged(SOCK_SEQPACKET, m, 64, 2, 0), GPUMEM_ERROR_INVALID_VALUE,
           "carries 2 file descriptors for 1 chunks", "a stream-ordered pool's send of two descriptors is refused");
    is_err(open_forged(SOCK_SEQPACKET, m, 64 + 24, 1, 0), GPUMEM_ERROR_INVALID_VALUE,
           "not its header and its chunk records", "a stream-ordered pool's send with a record is refused");
    put32(m + 56, 2);
    is_err(open_forged(SOCK_STREAM, m, 64, 1, 1), GPUMEM_ERROR_INVALID_VALUE,
           "not one message of one file descriptor", "a stream-ordered pool's send of two chunks is refused");
    put32(m + 56, 1);
    put32(m + 44, 0x10); /* the simulated device 0's PCI bus */
    gpumem_status st = open_forged(SOCK_STREAM, m, 64, 1, 1);
    const char *backend = getenv("GPUMEM_BACKEND");
    int sim = backend == NULL || strcmp(backend, "cuda") != 0;
    if (sim)
        is_err(st, GPUMEM_ERROR_NOT_SIMULATED, "cuMemPoolImportFromShareableHandle",
               "a well-formed stream-ordered pool's send reaches cuMemPoolImportFromShareableHandle, which the "
               "simulator does not model");
    else
        is_err(st, st == GPUMEM_OK ? GPUMEM_ERROR_INTERNAL : st, "gpumem_pool_ipc_open",
               "a forged stream-ordered pool's send (a memfd, another device's PCI ids) is refused");
    ok(count_fds() == fds0, "no descriptor of the refused messages is left open");

    gpumem_pool_import *im = NULL;
    is_err(gpumem_pool_ipc_open(NULL, -1, &im), GPUMEM_ERROR_INVALID_VALUE, "socket_fd -1",
           "a socket_fd of -1 is refused, naming socket_fd");
    int p[2];
    if (pipe(p) != 0)
        bail_out("pipe");
    is_err(gpumem_pool_ipc_open(NULL, p[0], &im), GPUMEM_ERROR_INVALID_VALUE, "not a socket",
           "a pipe is not a socket");
    close(p[0]);
    close(p[1]);
    is_err(gpumem_pool_ipc_open(NULL, 0, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'import'",
           "a NULL import is GPUMEM_ERROR_NULL_ARGUMENT");
}

/* The exporter's errors, and an import in this process, counted. */
static void test_exporter_errors(void)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        bail_out("socketpair");
    gpumem_pool *plain = vmm_pool(0), *dev = NULL, *pool = vmm_pool(1);
    gpumem_pool_create(NULL, 0, &dev);
    gpumem_allocation *a = NULL, *z = NULL, *d = NULL;
    gpumem_pool_ipc_handle h;
    is_err(gpumem_pool_ipc_send(plain, sv[0]), GPUMEM_ERROR_INVALID_VALUE, "GPUMEM_POOL_HANDLE_POSIX_FD",
           "a pool made without an exportable handle type sends nothing");
    is_err(gpumem_pool_ipc_send(dev, sv[0]), GPUMEM_ERROR_INVALID_VALUE, "GPUMEM_POOL_HANDLE_POSIX_FD",
           "a cuMemAlloc pool sends nothing");
    is_err(gpumem_pool_ipc_send(pool, -5), GPUMEM_ERROR_INVALID_VALUE, "socket_fd -5",
           "a bad socket_fd is refused, naming it");
    is_err(gpumem_pool_ipc_send(NULL, sv[0]), GPUMEM_ERROR_NULL_ARGUMENT, "pool", "a NULL pool");
    gpumem_pool_allocate(dev, 4096, NULL, &d);
    is_err(gpumem_allocation_ipc_handle(d, &h), GPUMEM_ERROR_INVALID_VALUE, "GPUMEM_POOL_HANDLE_POSIX_FD",
           "an allocation of a pool that is not exportable has no handle");
    gpumem_pool_allocate(pool, 0, NULL, &z);
    is_err(gpumem_allocation_ipc_handle(z, &h), GPUMEM_ERROR_INVALID_VALUE, "size 0",
           "an empty allocation has no handle");
    gpumem_pool_allocate(pool, 5000, NULL, &a);
    ok(gpumem_allocation_ipc_handle(a, NULL) == GPUMEM_ERROR_NULL_ARGUMENT, "a NULL handle argument");

    gpumem_pool *other = vmm_pool(1);
    gpumem_allocation *o = NULL;
    gpumem_pool_allocate(other, 4096, NULL, &o);
    /* an import in this process: what it maps is the pool's memory */
    int fds0 = count_fds();
    ok(gpumem_pool_ipc_send(pool, sv[0]) == GPUMEM_OK, "a send of a small block's chunk");
    gpumem_pool_import *im = NULL;
    ok(gpumem_pool_ipc_open(NULL, sv[1], &im) == GPUMEM_OK, "received in the same process");
    uint64_t pa = 0, pi = 0;
    size_t size = 0;
    gpumem_allocation_pointer(a, &pa);
    ok(gpumem_allocation_ipc_handle(a, &h) == GPUMEM_OK &&
           gpumem_pool_import_open_allocation(im, &h, &pi, &size) == GPUMEM_OK && size == 5000 && pi != pa,
       "the small block opens at another address, with its size");
    unsigned char w[5000], r[5000];
    fill(w, sizeof w, 5, 9);
    ok(xfer(pa, w, sizeof w, 1) == GPUMEM_OK && xfer(pi, r, sizeof r, 0) == GPUMEM_OK && memcmp(w, r, sizeof w) == 0,
       "bytes written at the pool's address are read at the import's");
    /* a send of another pool is refused by the update */
    ok(gpumem_pool_ipc_send(plain, sv[0]) != GPUMEM_OK, "(nothing sent for the plain pool)");
    gpumem_pool_ipc_send(other, sv[0]);
    is_err(gpumem_pool_import_update(im, sv[1]), GPUMEM_ERROR_INVALID_VALUE, "another pool",
           "an update from another pool is refused");
    ok(gpumem_pool_import_open_allocation(im, &h, &pi, NULL) == GPUMEM_OK, "the import is unchanged by it");
    ok(gpumem_pool_import_close(im) == GPUMEM_OK, "the import closes");
    /* a pool that maps nothing sends an empty set */
    gpumem_pool *empty = vmm_pool(1);
    im = NULL;
    ok(gpumem_pool_ipc_send(empty, sv[0]) == GPUMEM_OK && gpumem_pool_ipc_open(NULL, sv[1], &im) == GPUMEM_OK,
       "a pool that maps no chunk sends, and the import maps nothing");
    is_err(gpumem_pool_import_open_allocation(im, &h, &pi, NULL), GPUMEM_ERROR_INVALID_VALUE, "another pool",
           "the empty import refuses another pool's handle");
    ok(gpumem_pool_import_close(im) == GPUMEM_OK, "the empty import closes");
    gpumem_pool_destroy(empty);
    ok(gpumem_pool_import_close(NULL) == GPUMEM_OK, "closing NULL is a no-op");
    ok(count_fds() == fds0, "the same process's descriptors after the close are those before the send");
    gpumem_allocation_free(o, NULL);
    gpumem_pool_destroy(other);

    gpumem_allocation_free(a, NULL);
    is_err(gpumem_allocation_ipc_handle(a, &h), GPUMEM_ERROR_INVALID_STATE, "freed",
           "a freed allocation has no handle");
    close(sv[1]);
    is_err(gpumem_pool_ipc_send(pool, sv[0]), GPUMEM_ERROR_INVALID_STATE, "peer closed",
           "a send to a closed peer is GPUMEM_ERROR_INVALID_STATE, without SIGPIPE");
    close(sv[0]);
    gpumem_allocation_free(z, NULL);
    gpumem_allocation_free(d, NULL);
    gpumem_pool_destroy(pool);
    gpumem_pool_destroy(plain);
    gpumem_pool_destroy(dev);

    /* the driver's stream-ordered pool takes an exportable handle type (tests/test-pool-ipc-async shares one) */
    struct gpumem_pool_props props = GPUMEM_POOL_PROPS_INIT;
    props.source = GPUMEM_POOL_SOURCE_ASYNC;
    props.handle_type = GPUMEM_POOL_HANDLE_POSIX_FD;
    gpumem_pool *ap = NULL;
    gpumem_status st = gpumem_pool_create_with_props(NULL, &props, &ap);
    const char *backend = getenv("GPUMEM_BACKEND");
    if (backend == NULL || strcmp(backend, "cuda") != 0)
        is_err(st, GPUMEM_ERROR_NOT_SIMULATED, "cuMemPoolCreate",
               "an exportable stream-ordered pool is accepted and reaches cuMemPoolCreate, which the simulator does "
               "not model");
    else if (!ok(st == GPUMEM_OK || st == GPUMEM_ERROR_NOT_SUPPORTED, "an exportable stream-ordered pool is made"))
        diag("%s", gpumem_last_error());
    gpumem_pool_destroy(ap);
}

int main(void)
{
    ipc_child c;
    ipc_child_start(&c, importer);
    exporter(c.sock);
    int wst = ipc_child_wait(&c);
    ok(WIFEXITED(wst) && WEXITSTATUS(wst) == 0, "the child exits normally");
    is_int(ipc_child_results(&c), 30, "the child reported every check");

    test_forged();
    test_exporter_errors();
    done_testing();
    return exit_status();
}
