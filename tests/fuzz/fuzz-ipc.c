/* IPC handle blobs: a real handle of this process, changed by the input
 * (bytes overwritten, fields set to chosen values), or raw bytes.  Opening
 * one must fail (a valid handle of this process is INVALID_STATE) with a
 * documented status, leave the output alone, and never reach
 * cuIpcOpenMemHandle: every field is checked before the driver.
 *
 * First input bytes 12 to 15 take instead the handle of another process
 * (a child exporting a 4 KiB allocation, int32 [1024], byte i of which is
 * i * 13 + 5), changed the same way: its fields reach the driver, which
 * maps the memory.  Opening it either fails with the output untouched and
 * every mapping closed again, or gives an array whose every element lies
 * in the mapping and holds the exporter's bytes, and whose release closes
 * the mapping. */
#include "config.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <gpumem.h>

#include "fuzz.h"

#define FOREIGN_BYTES 4096

static gpumem_context *ctx;
static gpumem_ipc_handle good[2], foreign;
static gpumem_array *d, *rec; /* kept for the run, so the handles stay valid */

/* The other process: exports its array, sends the handle and keeps the
 * array until this process is gone (its end of the pipe closes). */
static void exporter(int out, int wait_fd)
{
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0) { /* the test harness waits for stdout's end, not for this process */
        dup2(null, 1);
        close(null);
    }
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    static uint8_t init[FOREIGN_BYTES];
    for (int i = 0; i < FOREIGN_BYTES; i++)
        init[i] = (uint8_t)(i * 13 + 5);
    gpumem_context *c = NULL;
    gpumem_array *h = NULL, *a = NULL;
    gpumem_ipc_handle handle;
    int64_t n = FOREIGN_BYTES / 4;
    if (gpumem_context_create(0, &c) != GPUMEM_OK ||
        gpumem_host_array_wrap(init, 1, &n, NULL, gpumem_dtype_builtin(GPUMEM_INT32), &h) != GPUMEM_OK ||
        gpumem_to_device(c, h, NULL, 0, &a) != GPUMEM_OK || gpumem_ipc_get_handle(a, &handle) != GPUMEM_OK ||
        write(out, &handle, sizeof handle) != (ssize_t)sizeof handle)
        _exit(1);
    char byte;
    while (read(wait_fd, &byte, 1) > 0)
        ;
    _exit(0);
}

static void start_exporter(void)
{
    int to[2], from[2];
    if (pipe(to) != 0 || pipe(from) != 0)
        abort();
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        abort();
    if (pid == 0) {
        close(to[1]);
        close(from[0]);
        exporter(from[1], to[0]);
    }
    close(to[0]);
    close(from[1]);
    fcntl(to[1], F_SETFD, FD_CLOEXEC); /* held open until this process ends */
    size_t got = 0;
    while (got < sizeof foreign) {
        ssize_t k = read(from[0], (char *)&foreign + got, sizeof foreign - got);
        if (k <= 0) {
            fprintf(stderr, "fuzz-ipc: setup: the exporting process failed\n");
            abort();
        }
        got += (size_t)k;
    }
    close(from[0]);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    setenv("GPUMEM_BACKEND", "sim", 1);
    start_exporter(); /* before this process starts the simulator's threads */
    gpumem_dtype *rt = NULL;
    if (gpumem_context_create(0, &ctx) != GPUMEM_OK ||
        gpumem_device_array(ctx, 2, (int64_t[]){16, 8}, NULL, gpumem_dtype_builtin(GPUMEM_FLOAT32), 'C', NULL, &d) !=
            GPUMEM_OK ||
        gpumem_ipc_get_handle(d, &good[0]) != GPUMEM_OK ||
        gpumem_dtype_from_descr("[('x', '<f4'), ('n', '<i2', (3,))]", &rt) != GPUMEM_OK ||
        gpumem_device_array(ctx, 1, (int64_t[]){10}, NULL, rt, 'C', NULL, &rec) != GPUMEM_OK ||
        gpumem_ipc_get_handle(rec, &good[1]) != GPUMEM_OK) {
        fprintf(stderr, "fuzz-ipc: setup: %s\n", gpumem_last_error());
        abort();
    }
    gpumem_dtype_release(rt);
    return 0;
}

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t calls(const char *op)
{
    uint64_t n = 0;
    gpumem_debug_driver_calls(op, &n);
    return n;
}

/* An array opened from the other process's handle h: every element lies
 * in the mapping (as the driver reports it) and holds the exporter's
 * bytes, and the allocation size h declares is no more than the mapping's. */
static void check_foreign(gpumem_array *a, const gpumem_ipc_handle *h)
{
    int ndim = 0;
    int64_t shape[GPUMEM_MAX_NDIM], strides[GPUMEM_MAX_NDIM], size = 0;
    size_t itemsize = 0;
    uint64_t p = 0;
    const gpumem_dtype *dt = NULL;
    gpumem_memory_kind kind;
    gpumem_array_kind(a, &kind);
    gpumem_array_ndim(a, &ndim);
    gpumem_array_shape(a, shape);
    gpumem_array_strides(a, strides);
    gpumem_array_size(a, &size);
    gpumem_array_dtype(a, &dt);
    gpumem_dtype_itemsize(dt, &itemsize);
    FUZZ_CHECK(size > 0, "an opened array is not empty");
    FUZZ_CHECK(gpumem_array_device_pointer(a, &p) == GPUMEM_OK, "its device pointer: %s", gpumem_last_error());
    if (kind != GPUMEM_MEMORY_FOREIGN)
        return; /* staged into a copy on another device: nothing of the mapping to check */
    __int128 lo = 0, hi = (__int128)itemsize;
    for (int i = 0; i < ndim; i++) {
        __int128 span = (__int128)(shape[i] - 1) * strides[i];
        if (span < 0)
            lo += span;
        else
            hi += span;
    }
    gpumem_pointer_info info = {.size = sizeof info};
    int is_cuda = 0;
    FUZZ_CHECK(gpumem_is_cuda_array(p, &is_cuda, &info) == GPUMEM_OK, "%s", gpumem_last_error());
    FUZZ_CHECK(info.range_size == FOREIGN_BYTES,
               "element 0 at 0x%llx is not in a mapping of the 4 KiB allocation (the driver: %llu bytes there)",
               (unsigned long long)p, (unsigned long long)info.range_size);
    uint64_t declared = 0;
    for (int i = 7; i >= 0; i--)
        declared = declared << 8 | h->bytes[120 + i];
    FUZZ_CHECK(declared <= info.range_size, "a handle that declares %llu bytes opened a mapping of %llu",
               (unsigned long long)declared, (unsigned long long)info.range_size);
    __int128 start = (__int128)p - info.range_start;
    FUZZ_CHECK(start + lo >= 0 && start + hi <= (__int128)info.range_size,
               "elements [%lld, %lld) around byte %lld, outside the mapping of %llu bytes", (long long)lo,
               (long long)hi, (long long)start, (unsigned long long)info.range_size);
    if (size > FOREIGN_BYTES)
        return;
    /* the elements' bytes, through a C-ordered copy viewed as bytes */
    gpumem_array *copy = NULL, *flat = NULL, *bytes = NULL, *hv = NULL;
    int64_t nb = size * (int64_t)itemsize;
    uint8_t *got = malloc((size_t)nb);
    gpumem_status st = gpumem_device_array(ctx, ndim, shape, NULL, dt, 'C', NULL, &copy);
    if (st == GPUMEM_OK)
        st = gpumem_array_copy(copy, a, NULL);
    if (st == GPUMEM_OK)
        st = gpumem_array_reshape(copy, 1, (int64_t[]){size}, 'C', GPUMEM_NO_COPY, NULL, &flat);
    if (st == GPUMEM_OK)
        st = gpumem_array_view(flat, gpumem_dtype_builtin(GPUMEM_UINT8), &bytes);
    if (st == GPUMEM_OK)
        st = gpumem_host_array_wrap(got, 1, &nb, NULL, gpumem_dtype_builtin(GPUMEM_UINT8), &hv);
    if (st == GPUMEM_OK)
        st = gpumem_copy_to_host(bytes, hv, NULL);
    FUZZ_CHECK(st == GPUMEM_OK, "reading an opened array: %s", gpumem_last_error());
    int64_t idx[GPUMEM_MAX_NDIM] = {0};
    for (int64_t k = 0; k < size; k++) {
        int64_t off = (int64_t)start;
        for (int i = 0; i < ndim; i++)
            off += idx[i] * strides[i];
        for (size_t b = 0; b < itemsize; b++)
            FUZZ_CHECK(got[(size_t)k * itemsize + b] == (uint8_t)((off + (int64_t)b) * 13 + 5),
                       "element %lld byte %zu", (long long)k, b);
        for (int i = ndim - 1; i >= 0; i--) {
            if (++idx[i] < shape[i])
                break;
            idx[i] = 0;
        }
    }
    gpumem_array_release(hv);
    gpumem_array_release(bytes);
    gpumem_array_release(flat);
    gpumem_array_release(copy);
    free(got);
}

/* The other process's handle: see the file's notes. */
static void open_foreign(const gpumem_ipc_handle *h, gpumem_context *c)
{
    uint64_t opens = calls("cuIpcOpenMemHandle"), closes = calls("cuIpcCloseMemHandle");
    gpumem_array *a = (gpumem_array *)(uintptr_t)0x1;
    gpumem_status st = gpumem_ipc_open(c, h, &a);
    if (st == GPUMEM_OK) {
        check_foreign(a, h);
        gpumem_array_release(a);
    } else {
        FUZZ_CHECK(a == (gpumem_array *)(uintptr_t)0x1, "a failed open changed its output");
        FUZZ_CHECK(st == GPUMEM_ERROR_INVALID_VALUE || st == GPUMEM_ERROR_INVALID_DTYPE ||
                       st == GPUMEM_ERROR_INVALID_STATE || st == GPUMEM_ERROR_INVALID_DEVICE ||
                       st == GPUMEM_ERROR_DRIVER,
                   "status %s (not one gpumem/ipc.h lists): %s", gpumem_status_string(st), gpumem_last_error());
    }
    /* a cuIpcOpenMemHandle that failed mapped nothing; every other one was
     * closed.  The failure is the message's first words: the rest may quote
     * the handle's own text (its descr), which the fuzzer also writes. */
    static const char open_failed[] = "gpumem_ipc_open: cuIpcOpenMemHandle failed";
    uint64_t mapped = calls("cuIpcOpenMemHandle") - opens;
    if (st != GPUMEM_OK && mapped == 1 && strncmp(gpumem_last_error(), open_failed, sizeof open_failed - 1) == 0)
        mapped = 0;
    FUZZ_CHECK(mapped == calls("cuIpcCloseMemHandle") - closes, "%llu mappings, %llu closed (%s)",
               (unsigned long long)mapped, (unsigned long long)(calls("cuIpcCloseMemHandle") - closes),
               st == GPUMEM_OK ? "opened" : gpumem_last_error());
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_reader r = {data, size};
    gpumem_ipc_handle h;
    unsigned mode = fuzz_u8(&r);
    int other = mode >= 12 && mode < 16;
    if (mode < 12) {
        memset(&h, 0, sizeof h);
        for (size_t i = 0; i < sizeof h.bytes; i++)
            h.bytes[i] = (unsigned char)fuzz_u8(&r);
    } else {
        h = other ? foreign : good[mode & 1];
        unsigned edits = fuzz_u8(&r) % 16;
        static const size_t fields[] = {8, 12, 16, 24, 96, 100, 104, 108, 112, 120, 128, 132, 136, 144, 392, 400,
                                        648, 672, 676};
        for (unsigned e = 0; e < edits; e++) {
            unsigned kind = fuzz_u8(&r) % 4;
            size_t off = fields[fuzz_u8(&r) % (sizeof fields / sizeof *fields)];
            if (kind == 0) /* one byte anywhere */
                h.bytes[(size_t)fuzz_range(&r, 0, (int64_t)sizeof h.bytes - 1)] = (unsigned char)fuzz_u8(&r);
            else if (kind == 1)
                put_u32(h.bytes + off, (uint32_t)fuzz_range(&r, -4, 40));
            else if (kind == 2)
                put_u64(h.bytes + off, fuzz_u64(&r));
            else if (off >= 648) { /* a text field */
                size_t room = off == 648 ? 24 : off == 676 ? 1372 : 4;
                size_t n = (size_t)fuzz_range(&r, 0, (int64_t)room);
                for (size_t i = 0; i < n; i++)
                    h.bytes[off + i] = (unsigned char)fuzz_u8(&r);
                if (off == 676)
                    put_u32(h.bytes + 672, (uint32_t)(fuzz_u8(&r) & 1 ? n : strnlen((char *)h.bytes + 676, 1372)));
            }
        }
    }
    if (other) {
        open_foreign(&h, fuzz_u8(&r) & 1 ? ctx : NULL);
        return 0;
    }
    uint64_t opens0 = 0, opens1 = 0;
    gpumem_debug_driver_calls("cuIpcOpenMemHandle", &opens0);
    gpumem_array *a = (gpumem_array *)(uintptr_t)0x1;
    gpumem_status st = gpumem_ipc_open(fuzz_u8(&r) & 1 ? ctx : NULL, &h, &a);
    gpumem_debug_driver_calls("cuIpcOpenMemHandle", &opens1);
    FUZZ_CHECK(st != GPUMEM_OK, "a handle of this process opened");
    FUZZ_CHECK(a == (gpumem_array *)(uintptr_t)0x1, "a failed open changed its output");
    if (opens1 == opens0) {
        FUZZ_CHECK(st == GPUMEM_ERROR_INVALID_VALUE || st == GPUMEM_ERROR_INVALID_DTYPE ||
                       st == GPUMEM_ERROR_INVALID_STATE || st == GPUMEM_ERROR_INVALID_DEVICE,
                   "status %s (not one gpumem/ipc.h lists): %s", gpumem_status_string(st), gpumem_last_error());
        return 0;
    }
    /* The driver was reached: the handle names another process.  Every
     * field must then have been valid: with this process's id and random
     * number put back, the same bytes are refused as this process's. */
    FUZZ_CHECK(memcmp(h.bytes + 16, good[0].bytes + 16, 16) != 0, "a handle of this process reached the driver");
    FUZZ_CHECK(st == GPUMEM_ERROR_DRIVER || st == GPUMEM_ERROR_NOT_SIMULATED, "status %s: %s",
               gpumem_status_string(st), gpumem_last_error());
    memcpy(h.bytes + 16, good[0].bytes + 16, 16);
    st = gpumem_ipc_open(ctx, &h, &a);
    FUZZ_CHECK(st == GPUMEM_ERROR_INVALID_STATE, "a handle that reached the driver has a bad field: %s",
               gpumem_last_error());
    return 0;
}
