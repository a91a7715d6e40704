/* IPC handles: the bytes gpumem_ipc_get_handle writes (layout of
 * gpumem/ipc.h), every malformed handle gpumem_ipc_open refuses, the
 * exporting process's refusal, and a second process that opens the handle,
 * reads and writes the first process's array and closes the mapping (on
 * the simulator through its shared-memory model); then the other way
 * round, with the second process's handle changed to claim memory beyond
 * its 4 KiB allocation (refused once mapped, and unmapped again), and a
 * handle of a process that has exited. */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gpumem.h>

#include "tap.h"

#define N 256
#define M 1024 /* the second process's array: int32, a 4 KiB allocation */

static gpumem_context *ctx;
static const gpumem_dtype *i32;

static uint64_t calls(const char *op)
{
    uint64_t n = 0;
    gpumem_debug_driver_calls(op, &n);
    return n;
}

static uint32_t rd32(const gpumem_ipc_handle *h, size_t off)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = v << 8 | h->bytes[off + (size_t)i];
    return v;
}

static uint64_t rd64(const gpumem_ipc_handle *h, size_t off)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | h->bytes[off + (size_t)i];
    return v;
}

static void wr32(gpumem_ipc_handle *h, size_t off, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        h->bytes[off + (size_t)i] = (unsigned char)(v >> (8 * i));
}

static void wr64(gpumem_ipc_handle *h, size_t off, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        h->bytes[off + (size_t)i] = (unsigned char)(v >> (8 * i));
}

/* ---- the second process --------------------------------------------------------------- */

typedef struct child_report {
    int status;       /* of gpumem_ipc_open */
    int kind;         /* the opened array's */
    int read_ok;      /* it read 0, 1, 2, ... */
    int write_ok;     /* its write of 1000 + i succeeded */
    long closes;      /* cuIpcCloseMemHandle calls after the release */
    char text[512];
    int export_status;      /* of exporting its own array of M values 7 * i */
    gpumem_ipc_handle mine; /* that array's handle */
} child_report;

static int to_child[2], from_child[2];
static pid_t child;

/* Forked before the parent touches the library: waits for a handle, opens
 * it, reads, writes, releases. */
static void child_main(void)
{
    gpumem_ipc_handle h;
    child_report rep;
    memset(&rep, 0, sizeof rep);
    size_t got = 0;
    while (got < sizeof h) {
        ssize_t n = read(to_child[0], (char *)&h + got, sizeof h - got);
        if (n <= 0)
            _exit(0);
        got += (size_t)n;
    }
    gpumem_array *a = NULL;
    const gpumem_dtype *int32 = gpumem_dtype_builtin(GPUMEM_INT32); /* i32 is set after the fork */
    rep.status = gpumem_ipc_open(NULL, &h, &a);
    snprintf(rep.text, sizeof rep.text, "%s", rep.status == GPUMEM_OK ? "" : gpumem_last_error());
    if (rep.status == GPUMEM_OK) {
        gpumem_memory_kind kind;
        gpumem_array_kind(a, &kind);
        rep.kind = (int)kind;
        int32_t v[N];
        gpumem_array *hv = NULL;
        gpumem_host_array_wrap(v, 1, (int64_t[]){N}, NULL, int32, &hv);
        rep.read_ok = gpumem_array_copy(hv, a, NULL) == GPUMEM_OK;
        for (int i = 0; i < N; i++) {
            rep.read_ok &= v[i] == i;
            v[i] = 1000 + i;
        }
        rep.write_ok = gpumem_array_copy(a, hv, NULL) == GPUMEM_OK;
        gpumem_array_release(hv);
        uint64_t before = calls("cuIpcCloseMemHandle");
        gpumem_array_release(a);
        rep.closes = (long)(calls("cuIpcCloseMemHandle") - before);
    }
    /* an array of its own for the first process to open, kept until told */
    gpumem_context *c = NULL;
    gpumem_array *mine = NULL, *src = NULL;
    static int32_t w[M];
    for (int i = 0; i < M; i++)
        w[i] = 7 * i;
    rep.export_status = gpumem_context_create(0, &c);
    if (rep.export_status == GPUMEM_OK)
        rep.export_status = gpumem_host_array_wrap(w, 1, (int64_t[]){M}, NULL, int32, &src);
    if (rep.export_status == GPUMEM_OK)
        rep.export_status = gpumem_to_device(c, src, NULL, 0, &mine);
    if (rep.export_status == GPUMEM_OK)
        rep.export_status = gpumem_ipc_get_handle(mine, &rep.mine);
    ssize_t n = write(from_child[1], &rep, sizeof rep);
    char go;
    if (read(to_child[0], &go, 1) < 0) /* the first process is done with the array (or gone) */
        n = -1;
    gpumem_array_release(mine);
    gpumem_array_release(src);
    gpumem_context_release(c);
    _exit(n == (ssize_t)sizeof rep ? 0 : 3);
}

static void start_child(void)
{
    if (pipe(to_child) != 0 || pipe(from_child) != 0)
        bail_out("pipe");
    fflush(stdout);
    child = fork();
    if (child < 0)
        bail_out("fork");
    if (child == 0) {
        close(to_child[1]);
        close(from_child[0]);
        child_main();
    }
    close(to_child[0]);
    close(from_child[1]);
}

/* Copies n int32 of a (an array of n elements) into out; 1 on success. */
static int read_ints(gpumem_array *a, int32_t *out, int64_t n)
{
    gpumem_array *hv = NULL;
    int good = a != NULL && gpumem_host_array_wrap(out, 1, &n, NULL, i32, &hv) == GPUMEM_OK &&
               gpumem_array_copy(hv, a, NULL) == GPUMEM_OK;
    gpumem_array_release(hv);
    return good;
}

/* A changed copy of the second process's handle that passes every check of
 * the bytes alone (its sizes agree with each other) but claims memory the
 * mapping does not have: refused with INVALID_VALUE and a message naming
 * gpumem_ipc_open and the field, after the driver mapped the memory, which
 * is unmapped again (one cuIpcCloseMemHandle per cuIpcOpenMemHandle). */
static void refuse_mapped(const gpumem_ipc_handle *h, const char *field, const char *name)
{
    uint64_t opens = calls("cuIpcOpenMemHandle"), closes = calls("cuIpcCloseMemHandle");
    gpumem_array *a = (gpumem_array *)&a;
    gpumem_status st = gpumem_ipc_open(ctx, h, &a);
    if (!ok(st == GPUMEM_ERROR_INVALID_VALUE, "%s: refused with INVALID_VALUE", name))
        diag("status %s: %s", gpumem_status_string(st), st == GPUMEM_OK ? "it opened" : gpumem_last_error());
    const char *msg = gpumem_last_error();
    ok(st != GPUMEM_OK && strncmp(msg, "gpumem_ipc_open: ", 17) == 0 && strstr(msg, field) != NULL,
       "%s: the message names gpumem_ipc_open and %s", name, field);
    if (st != GPUMEM_OK && strstr(msg, field) == NULL)
        diag("%s", msg);
    ok(a == (gpumem_array *)&a, "%s: no array", name);
    ok(calls("cuIpcOpenMemHandle") == opens + 1 && calls("cuIpcCloseMemHandle") == closes + 1,
       "%s: the driver mapped it, and it was unmapped again", name);
    if (st == GPUMEM_OK && a != (gpumem_array *)&a)
        gpumem_array_release(a);
}

/* The second process's handle (an int32 array of M values 7 * i, its whole
 * 4 KiB allocation) with its offset, allocation size, shape and strides
 * changed; mapped_base and mapped_size are where the driver mapped the
 * valid handle, and how much. */
static void check_mapped_range(const gpumem_ipc_handle *good, uint64_t mapped_base, uint64_t mapped_size)
{
    enum { OFFSET = 112, ALLOC_SIZE = 120, SHAPE0 = 136, STRIDE0 = 392 };
    gpumem_ipc_handle h = *good;
    wr64(&h, ALLOC_SIZE, UINT64_C(1) << 20);
    if (mapped_size < (UINT64_C(1) << 20))
        refuse_mapped(&h, "allocation size", "a 4 KiB allocation that claims 1 MiB");
    else
        skip(4, "the driver maps 1 MiB or more for a 4 KiB allocation");
    h = *good;
    wr64(&h, ALLOC_SIZE, mapped_size + 1);
    refuse_mapped(&h, "allocation size", "an allocation size one byte above the mapping");

    h = *good;
    wr64(&h, OFFSET, UINT64_C(1) << 40);
    wr64(&h, ALLOC_SIZE, (UINT64_C(1) << 40) + M * 4);
    refuse_mapped(&h, "offset", "an offset of 2^40");

    /* an offset that wraps around the address space to memory of this
     * process, at an address the sender chose */
    static int32_t victim[M];
    for (int i = 0; i < M; i++)
        victim[i] = -i;
    h = *good;
    wr64(&h, OFFSET, (uint64_t)(uintptr_t)victim - mapped_base);
    wr64(&h, ALLOC_SIZE, UINT64_MAX);
    refuse_mapped(&h, "offset", "an offset that wraps to a host address of this process");
    int intact = 1;
    for (int i = 0; i < M; i++)
        intact &= victim[i] == -i;
    ok(intact, "the host memory it aimed at is untouched");

    h = *good;
    wr64(&h, SHAPE0, mapped_size / 4 + 1);
    wr64(&h, ALLOC_SIZE, (mapped_size / 4 + 1) * 4);
    refuse_mapped(&h, "elements", "one element more than the mapping holds");
    h = *good;
    wr64(&h, SHAPE0, 2);
    wr64(&h, STRIDE0, mapped_size);
    wr64(&h, ALLOC_SIZE, mapped_size + 4);
    refuse_mapped(&h, "elements", "a stride that steps past the mapping");
    h = *good;
    wr64(&h, OFFSET, mapped_size - 4);
    wr64(&h, SHAPE0, 2);
    wr64(&h, ALLOC_SIZE, mapped_size + 4);
    refuse_mapped(&h, "elements", "an offset at the last element with two elements");

    /* valid handles still open: the last element alone, and the first two
     * under an allocation size smaller than the mapping's */
    h = *good;
    wr64(&h, OFFSET, (M - 1) * 4);
    wr64(&h, SHAPE0, 1);
    gpumem_array *a = NULL;
    int32_t v[2] = {0, 0};
    gpumem_status st = gpumem_ipc_open(ctx, &h, &a);
    if (!is_int(st, GPUMEM_OK, "a handle of the last element opens"))
        diag("%s", gpumem_last_error());
    ok(read_ints(a, v, 1) && v[0] == 7 * (M - 1), "and reads it");
    gpumem_array_release(a);
    h = *good;
    wr64(&h, SHAPE0, 2);
    wr64(&h, ALLOC_SIZE, 8);
    a = NULL;
    st = gpumem_ipc_open(ctx, &h, &a);
    if (!is_int(st, GPUMEM_OK, "a handle that declares less than the mapping opens"))
        diag("%s", gpumem_last_error());
    ok(read_ints(a, v, 2) && v[0] == 0 && v[1] == 7, "and reads its two elements");
    gpumem_array_release(a);

    /* every driver call of an open failing in turn, cuMemGetAddressRange
     * among them: the call fails, and no mapping stays open */
    uint64_t total0 = 0, total1 = 0;
    gpumem_debug_driver_calls(NULL, &total0);
    a = NULL;
    st = gpumem_ipc_open(ctx, good, &a);
    gpumem_array_release(a);
    gpumem_debug_driver_calls(NULL, &total1);
    int failed = 0, balanced = 1, range_failed = 0;
    for (uint64_t k = 1; st == GPUMEM_OK && k <= total1 - total0; k++) {
        uint64_t opens = calls("cuIpcOpenMemHandle"), closes = calls("cuIpcCloseMemHandle");
        a = (gpumem_array *)&a;
        gpumem_debug_fail_call(k, 999);
        gpumem_status fst = gpumem_ipc_open(ctx, good, &a);
        if (fst == GPUMEM_OK)
            gpumem_array_release(a);
        gpumem_debug_fail_call(0, 0);
        failed += fst != GPUMEM_OK;
        range_failed |= fst != GPUMEM_OK && strstr(gpumem_last_error(), "cuMemGetAddressRange failed") != NULL;
        /* a failed cuIpcOpenMemHandle mapped nothing */
        uint64_t mapped = calls("cuIpcOpenMemHandle") - opens;
        if (fst != GPUMEM_OK && strstr(gpumem_last_error(), "cuIpcOpenMemHandle failed") != NULL)
            mapped--;
        int good_k = mapped == calls("cuIpcCloseMemHandle") - closes &&
                     (fst == GPUMEM_OK || a == (gpumem_array *)&a);
        if (!good_k)
            diag("failing call %llu: %s: %s", (unsigned long long)k, gpumem_status_string(fst),
                 fst == GPUMEM_OK ? "" : gpumem_last_error());
        balanced &= good_k;
    }
    ok(st == GPUMEM_OK && failed > 0 && range_failed, "a failing cuMemGetAddressRange fails gpumem_ipc_open");
    ok(balanced, "whichever call fails, every mapping is closed and no array is made");
}

static void check_second_process(gpumem_array *d, const gpumem_ipc_handle *h)
{
    child_report rep;
    memset(&rep, 0, sizeof rep);
    ssize_t n = write(to_child[1], h, sizeof *h);
    size_t got = 0;
    while (n == (ssize_t)sizeof *h && got < sizeof rep) {
        ssize_t k = read(from_child[0], (char *)&rep + got, sizeof rep - got);
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    ok(got == sizeof rep, "the second process reported");
    if (!is_int(rep.status, GPUMEM_OK, "the second process opened the handle"))
        diag("%s", rep.text);
    is_int(rep.kind, GPUMEM_MEMORY_FOREIGN, "the opened array is foreign memory");
    ok(rep.read_ok, "the second process read the first one's values");
    ok(rep.write_ok, "the second process wrote into the array");
    is_int(rep.closes, 1, "its last release closed the mapping (one cuIpcCloseMemHandle)");
    int32_t v[N];
    gpumem_array *hv = NULL;
    gpumem_host_array_wrap(v, 1, (int64_t[]){N}, NULL, i32, &hv);
    int same = gpumem_array_copy(hv, d, NULL) == GPUMEM_OK;
    for (int i = 0; i < N; i++)
        same &= v[i] == 1000 + i;
    ok(same, "the first process sees the second one's writes");

    /* the other way round: this process opens the second one's array */
    is_int(rep.export_status, GPUMEM_OK, "the second process exported an array of its own");
    gpumem_array *a = NULL;
    gpumem_status st = gpumem_ipc_open(ctx, &rep.mine, &a);
    if (!is_int(st, GPUMEM_OK, "this process opens the second one's handle"))
        diag("%s", gpumem_last_error());
    static int32_t theirs[M];
    ok(st == GPUMEM_OK && read_ints(a, theirs, M) && theirs[0] == 0 && theirs[1] == 7 &&
           theirs[M - 1] == 7 * (M - 1),
       "and reads its values");
    /* what the driver mapped: the range the handle's fields must stay in */
    uint64_t mapped_base = 0, mapped_size = 0;
    gpumem_pointer_info info = {.size = sizeof info};
    int is_cuda = 0;
    if (st == GPUMEM_OK && gpumem_array_device_pointer(a, &mapped_base) == GPUMEM_OK &&
        gpumem_is_cuda_array(mapped_base, &is_cuda, &info) == GPUMEM_OK)
        mapped_size = info.range_size;
    ok(mapped_size >= M * 4 && info.range_start == mapped_base, "the mapping holds the 4 KiB allocation (%llu bytes)",
       (unsigned long long)mapped_size);
    uint64_t closes = calls("cuIpcCloseMemHandle");
    if (a != NULL)
        gpumem_array_release(a);
    ok(calls("cuIpcCloseMemHandle") == closes + (a != NULL), "the release closed the mapping");
    check_mapped_range(&rep.mine, mapped_base, mapped_size);
    if (test_on_sim()) {
        /* the simulator's handle (bytes 32 to 96) names the memfd by number
         * and inode: a number that now names another file is refused */
        gpumem_ipc_handle t = rep.mine;
        t.bytes[32 + 16] ^= 1;
        a = NULL;
        is_int(gpumem_ipc_open(ctx, &t, &a), GPUMEM_ERROR_DRIVER, "simulator: a handle whose inode differs");
        like(gpumem_last_error(), "CUDA_ERROR_INVALID_VALUE", "is the driver's CUDA_ERROR_INVALID_VALUE");
        ok(a == NULL, "no array");
    } else {
        skip(3, "a simulator handle's fields");
    }

    /* the exporting process exits: its handle opens no more */
    ssize_t w = write(to_child[1], "x", 1);
    int ws = 0;
    waitpid(child, &ws, 0);
    ok(w == 1 && WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "the second process exited cleanly");
    a = NULL;
    st = gpumem_ipc_open(ctx, &rep.mine, &a);
    if (test_on_sim()) {
        ok(st != GPUMEM_OK && a == NULL, "a handle of a process that exited does not open");
        is_int(st, GPUMEM_ERROR_DRIVER, "simulator: the driver's error");
        like(gpumem_last_error(), "CUDA_ERROR_INVALID_VALUE", "CUDA_ERROR_INVALID_VALUE");
    } else {
        /* ipc.h promises no error here: CUDA leaves it undefined, and an
         * H100 has both refused and opened such a handle */
        ok((st == GPUMEM_OK) == (a != NULL), "a dead exporter's handle: an array exactly when GPUMEM_OK");
        diag("the driver answers a dead exporter's handle with: %s",
             st == GPUMEM_OK ? "an open mapping" : gpumem_last_error());
        gpumem_array_release(a);
        skip(2, "the driver's own error for a dead exporter (none is promised)");
    }
    gpumem_array_release(hv);
}

/* ---- this process --------------------------------------------------------------------- */

static gpumem_status open_status(const gpumem_ipc_handle *h)
{
    gpumem_array *a = NULL;
    gpumem_status st = gpumem_ipc_open(ctx, h, &a);
    if (a != NULL)
        gpumem_array_release(a);
    return st;
}

/* One damaged copy of good: the status, and the message naming what. */
static void refuse(const gpumem_ipc_handle *good, size_t off, int width, uint64_t value, gpumem_status want,
                   const char *needle, const char *name)
{
    gpumem_ipc_handle h = *good;
    if (width == 4)
        wr32(&h, off, (uint32_t)value);
    else if (width == 8)
        wr64(&h, off, value);
    else
        h.bytes[off] = (unsigned char)value;
    is_int(open_status(&h), want, name);
    like(gpumem_last_error(), needle, name);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN); /* a second process that died shows as a short report, not a kill */
    start_child();
    if (test_on_sim())
        setenv("GPUMEM_SIM_MEMORY", "64M", 1);
    if (gpumem_context_create(0, &ctx) != GPUMEM_OK)
        bail_out("no context: %s", gpumem_last_error());
    i32 = gpumem_dtype_builtin(GPUMEM_INT32);

    int32_t v[N];
    for (int i = 0; i < N; i++)
        v[i] = i;
    gpumem_array *hv = NULL, *d = NULL;
    gpumem_host_array_wrap(v, 1, (int64_t[]){N}, NULL, i32, &hv);
    if (gpumem_to_device(ctx, hv, NULL, 0, &d) != GPUMEM_OK)
        bail_out("to_device: %s", gpumem_last_error());
    uint64_t dptr = 0;
    gpumem_array_device_pointer(d, &dptr);

    /* the handle's bytes */
    gpumem_ipc_handle h;
    memset(&h, 0xee, sizeof h);
    if (!is_int(gpumem_ipc_get_handle(d, &h), GPUMEM_OK, "a device array's handle"))
        diag("%s", gpumem_last_error());
    ok(memcmp(h.bytes, "GPUMEMIP", 8) == 0, "magic GPUMEMIP");
    is_int(rd32(&h, 8), GPUMEM_IPC_VERSION, "version");
    is_int(rd32(&h, 12), GPUMEM_IPC_HANDLE_SIZE, "size");
    is_int(rd64(&h, 16), getpid(), "the exporting process id");
    is_int(rd64(&h, 112), 0, "offset 0 for the allocation's start");
    ok(rd64(&h, 120) >= N * 4, "the allocation's size covers the array");
    is_int(rd32(&h, 128), 1, "ndim");
    is_int(rd32(&h, 132), 4, "item size");
    is_int(rd64(&h, 136), N, "shape[0]");
    is_int(rd64(&h, 392), 4, "strides[0]");
    is_str((const char *)h.bytes + 648, "<i4", "typestr");
    is_int(rd32(&h, 672), 0, "no record description");
    is_int(h.bytes[GPUMEM_IPC_HANDLE_SIZE - 1], 0, "unused bytes are zero");

    /* a reversed slice: element 0 is the last one */
    gpumem_array *rev = NULL;
    gpumem_slice back = {GPUMEM_SLICE_DEFAULT, GPUMEM_SLICE_DEFAULT, -2};
    gpumem_array_slice(d, &back, 1, &rev);
    gpumem_ipc_handle hr;
    ok(gpumem_ipc_get_handle(rev, &hr) == GPUMEM_OK, "a reversed, strided view's handle");
    is_int(rd64(&hr, 112), (N - 1) * 4, "its offset is element 0's");
    ok(rd64(&hr, 136) == N / 2 && (int64_t)rd64(&hr, 392) == -8, "its shape and negative stride");
    is_int(open_status(&hr), GPUMEM_ERROR_INVALID_STATE, "a valid view's handle is refused in this process too");
    gpumem_array_release(rev);

    /* a record dtype carries its description */
    gpumem_dtype *rec = NULL;
    gpumem_dtype_from_descr("[('x', '<f4'), ('n', '<i4')]", &rec);
    gpumem_array *rd = NULL;
    gpumem_ipc_handle hrec;
    if (gpumem_device_array(ctx, 1, (int64_t[]){8}, NULL, rec, 'C', NULL, &rd) == GPUMEM_OK &&
        gpumem_ipc_get_handle(rd, &hrec) == GPUMEM_OK) {
        is_str((const char *)hrec.bytes + 648, "|V8", "a record's typestr");
        ok(rd32(&hrec, 672) > 0 && strstr((const char *)hrec.bytes + 676, "'x'") != NULL,
           "a record's description: %s", (const char *)hrec.bytes + 676);
        uint64_t opens0 = calls("cuIpcOpenMemHandle");
        gpumem_ipc_handle bad = hrec;
        const char *junk = "[('x', '<f4'), ('n', 'Q')]";
        memset(bad.bytes + 676, 0, 1372);
        memcpy(bad.bytes + 676, junk, strlen(junk));
        wr32(&bad, 672, (uint32_t)strlen(junk));
        is_int(open_status(&bad), GPUMEM_ERROR_INVALID_DTYPE, "a malformed record description: INVALID_DTYPE");
        like(gpumem_last_error(), "record description", "naming the field");
        const char *wide = "[('x', '<f8'), ('n', '<i4')]";
        memset(bad.bytes + 676, 0, 1372);
        memcpy(bad.bytes + 676, wide, strlen(wide));
        wr32(&bad, 672, (uint32_t)strlen(wide));
        is_int(open_status(&bad), GPUMEM_ERROR_INVALID_DTYPE, "a record description of another size");
        like(gpumem_last_error(), "disagrees with the typestr", "says so");
        ok(calls("cuIpcOpenMemHandle") == opens0, "neither reached cuIpcOpenMemHandle");
    } else {
        ok(0, "a record array's handle: %s", gpumem_last_error());
        skip(1, "no record handle");
    }
    gpumem_array_release(rd);
    gpumem_dtype_release(rec);

    /* arrays without handles */
    gpumem_ipc_handle x;
    is_int(gpumem_ipc_get_handle(NULL, &x), GPUMEM_ERROR_NULL_ARGUMENT, "array NULL");
    is_int(gpumem_ipc_get_handle(d, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "handle NULL");
    is_int(gpumem_ipc_get_handle(hv, &x), GPUMEM_ERROR_INVALID_VALUE, "a host array has no handle");
    like(gpumem_last_error(), "host-side", "the message says why");
    gpumem_array *pa = NULL, *ma = NULL, *ea = NULL;
    gpumem_pinned_array(ctx, 1, (int64_t[]){4}, NULL, i32, 'C', &pa);
    is_int(gpumem_ipc_get_handle(pa, &x), GPUMEM_ERROR_INVALID_VALUE, "a pinned array has no handle");
    gpumem_array_release(pa);
    if (gpumem_managed_array(ctx, 1, (int64_t[]){4}, NULL, i32, 'C', GPUMEM_MANAGED_ATTACH_GLOBAL, &ma) ==
        GPUMEM_OK) {
        is_int(gpumem_ipc_get_handle(ma, &x), GPUMEM_ERROR_INVALID_VALUE, "a managed array has no handle");
        like(gpumem_last_error(), "managed", "the message says managed");
        gpumem_array_release(ma);
    } else {
        skip(2, "no managed memory");
    }
    gpumem_device_array(ctx, 1, (int64_t[]){0}, NULL, i32, 'C', NULL, &ea);
    is_int(gpumem_ipc_get_handle(ea, &x), GPUMEM_ERROR_INVALID_VALUE, "an empty array has no handle");
    gpumem_array_release(ea);

    /* a driver failure */
    uint64_t gets = calls("cuIpcGetMemHandle");
    gpumem_debug_fail_call(3, 999); /* after cuPointerGetAttributes and a first cuDeviceGetAttribute */
    gpumem_status st = gpumem_ipc_get_handle(d, &x);
    gpumem_debug_fail_call(0, 0);
    is_int(st, GPUMEM_ERROR_DRIVER, "a failing driver call fails gpumem_ipc_get_handle");
    like(gpumem_last_error(), "cuDeviceGetAttribute", "the message names the driver function");
    ok(calls("cuIpcGetMemHandle") == gets, "nothing exported after the failure");

    /* the exporting process: refused before any driver call */
    uint64_t opens = calls("cuIpcOpenMemHandle");
    gpumem_array *o = (gpumem_array *)&o;
    is_int(gpumem_ipc_open(ctx, &h, &o), GPUMEM_ERROR_INVALID_STATE, "opening in the exporting process");
    like(gpumem_last_error(), "made by this process", "the message says so");
    ok(o == (gpumem_array *)&o, "*array untouched on failure");
    is_int(gpumem_ipc_open(NULL, &h, &o), GPUMEM_ERROR_INVALID_STATE, "also with the default context");
    ok(calls("cuIpcOpenMemHandle") == opens, "no cuIpcOpenMemHandle call");
    is_int(gpumem_ipc_open(ctx, NULL, &o), GPUMEM_ERROR_NULL_ARGUMENT, "handle NULL");
    is_int(gpumem_ipc_open(ctx, &h, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "array NULL");

    /* malformed handles: each field checked before anything else */
    refuse(&h, 0, 1, 'X', GPUMEM_ERROR_INVALID_VALUE, "magic", "a wrong magic");
    refuse(&h, 8, 4, 2, GPUMEM_ERROR_INVALID_VALUE, "version 2", "another version");
    refuse(&h, 12, 4, 1024, GPUMEM_ERROR_INVALID_VALUE, "size", "a wrong size field");
    refuse(&h, 128, 4, GPUMEM_MAX_NDIM + 1, GPUMEM_ERROR_INVALID_VALUE, "ndim", "ndim above GPUMEM_MAX_NDIM");
    refuse(&h, 132, 4, 8, GPUMEM_ERROR_INVALID_VALUE, "item size", "an item size that is not the dtype's");
    refuse(&h, 136, 8, (uint64_t)-5, GPUMEM_ERROR_INVALID_VALUE, "shape[0]", "a negative extent");
    refuse(&h, 136, 8, 0, GPUMEM_ERROR_INVALID_VALUE, "empty", "an empty array");
    refuse(&h, 136, 8, UINT64_C(1) << 62, GPUMEM_ERROR_INVALID_VALUE, "its shape", "a shape whose bytes overflow "
           "is INVALID_VALUE, as ipc.h lists");
    refuse(&h, 136, 8, rd64(&h, 120) / 4 + 1, GPUMEM_ERROR_INVALID_VALUE, "outside the allocation",
           "more elements than the allocation holds");
    refuse(&h, 112, 8, rd64(&h, 120), GPUMEM_ERROR_INVALID_VALUE, "outside the allocation",
           "an offset at the allocation's end");
    refuse(&h, 392, 8, (uint64_t)-4, GPUMEM_ERROR_INVALID_VALUE, "outside the allocation",
           "negative strides from offset 0");
    refuse(&h, 648, 1, 'Q', GPUMEM_ERROR_INVALID_DTYPE, "typestr", "a malformed typestr");
    gpumem_ipc_handle t = h;
    memset(t.bytes + 648, 'f', 24);
    is_int(open_status(&t), GPUMEM_ERROR_INVALID_VALUE, "an unterminated typestr");
    like(gpumem_last_error(), "NUL-terminated", "the message says NUL-terminated");
    refuse(&h, 672, 4, 5, GPUMEM_ERROR_INVALID_VALUE, "record description", "a description length without text");
    refuse(&h, 672, 4, 5000, GPUMEM_ERROR_INVALID_VALUE, "record description", "a description length too long");
    ok(calls("cuIpcOpenMemHandle") == opens, "no malformed handle reached the driver");

    /* the handle travels by value: a copy in another buffer is the same */
    unsigned char raw[GPUMEM_IPC_HANDLE_SIZE];
    memcpy(raw, &h, sizeof raw);
    gpumem_ipc_handle h2;
    memcpy(&h2, raw, sizeof h2);
    is_int(open_status(&h2), GPUMEM_ERROR_INVALID_STATE, "a copied handle is the same handle");

    check_second_process(d, &h);

    gpumem_array_release(hv);
    gpumem_array_release(d);
    gpumem_context_release(ctx);
    done_testing();
    return exit_status();
}
