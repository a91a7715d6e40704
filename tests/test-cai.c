/* The CUDA Array Interface: an array's __cuda_array_interface__ (strides,
 * typestr, descr, data, stream by the specification's rules), and
 * as_cuda_array of such a description: values, the owner's release called
 * exactly once, synchronization, and every malformed description. */
#include <stdlib.h>
#include <string.h>

#include <gpumem.h>

#include "arrays.h"
#include "tap.h"

static gpumem_context *ctx;
static const gpumem_dtype *i32, *f32;
static int released;
static void *released_owner;

static void release_owner(void *owner)
{
    released++;
    released_owner = owner;
}

static gpumem_cuda_array_interface desc_of(gpumem_array *a)
{
    gpumem_cuda_array_interface d = {.size = sizeof d};
    if (gpumem_array_interface(a, NULL, &d) != GPUMEM_OK)
        bail_out("array_interface: %s", gpumem_last_error());
    return d;
}

/* as_cuda_array of a description that must fail with st, naming `needle`,
 * without calling the owner's release. */
static void refused(const gpumem_cuda_array_interface *d, unsigned flags, gpumem_status st, const char *needle,
                    const char *name)
{
    gpumem_array *a = NULL;
    released = 0;
    gpumem_status got = gpumem_as_cuda_array(ctx, d, flags, release_owner, &released, &a);
    int good = got == st && a == NULL && released == 0 && strstr(gpumem_last_error(), needle) != NULL;
    ok(good, "%s: %s", name, gpumem_status_string(st));
    if (!good)
        diag("  got %s (%s), array %p, released %d", gpumem_status_string(got), gpumem_last_error(), (void *)a,
             released);
    gpumem_array_release(a);
}

int main(void)
{
    if (test_on_sim()) {
        setenv("GPUMEM_SIM_MEMORY", "64M", 1);
        setenv("GPUMEM_SIM_DEVICES", "2", 1);
        setenv("GPUMEM_SIM_STREAM_DELAY_US", "2000", 1);
    }
    if (gpumem_context_create(0, &ctx) != GPUMEM_OK)
        bail_out("no context: %s", gpumem_last_error());
    i32 = gpumem_dtype_builtin(GPUMEM_INT32);
    f32 = gpumem_dtype_builtin(GPUMEM_FLOAT32);
    int32_t vals[64];

    /* ---- the description of a C-contiguous device array */
    gpumem_array *d = device_iota(ctx, 2, (int64_t[]){2, 3}, 0);
    uint64_t dptr = 0;
    gpumem_array_device_pointer(d, &dptr);
    gpumem_cuda_array_interface cai = {.size = sizeof cai};
    is_int(gpumem_array_interface(d, NULL, &cai), GPUMEM_OK, "array_interface of a 2x3 int32 device array");
    ok(cai.version == 3 && cai.ndim == 2 && cai.shape[0] == 2 && cai.shape[1] == 3, "version 3, shape (2, 3)");
    is_str(cai.typestr, "<i4", "typestr '<i4'");
    ok(cai.has_strides == 0, "strides absent: C-contiguous");
    ok(cai.descr == NULL, "no descr for a builtin dtype");
    ok(cai.data == dptr && dptr != 0 && cai.readonly == 0, "data (the device pointer, False)");
    ok(cai.has_mask == 0 && cai.has_stream == 0, "no mask; stream absent without a stream");

    /* ---- round trip: as_cuda_array of it, the owner released exactly once */
    gpumem_array *b = NULL, *bv = NULL;
    int owner_token = 0;
    released = 0;
    is_int(gpumem_as_cuda_array(ctx, &cai, 0, release_owner, &owner_token, &b), GPUMEM_OK, "as_cuda_array of it");
    gpumem_memory_kind kind = GPUMEM_MEMORY_HOST;
    uint64_t bptr = 0;
    gpumem_array_kind(b, &kind);
    gpumem_array_device_pointer(b, &bptr);
    ok(kind == GPUMEM_MEMORY_FOREIGN && bptr == dptr, "a foreign array over the same memory");
    int good = read_all(b, vals);
    for (int i = 0; i < 6; i++)
        good = good && vals[i] == i;
    ok(good, "it reads 0..5");
    int32_t nine = 9;
    gpumem_array_set_item(b, (int64_t[]){1, 2}, &nine, NULL);
    int32_t item = 0;
    gpumem_array_get_item(d, (int64_t[]){1, 2}, &item, NULL);
    is_int(item, 9, "a write through it shows in the producer's array");
    gpumem_slice last_row[1] = {{1, 2, 1}};
    gpumem_array_slice(b, last_row, 1, &bv);
    is_int(gpumem_array_release(b), GPUMEM_OK, "release the array");
    is_int(released, 0, "its view keeps the owner");
    gpumem_array_release(bv);
    ok(released == 1 && released_owner == &owner_token, "the last release calls release(owner) once");
    gpumem_array *nb = NULL;
    is_int(gpumem_as_cuda_array(NULL, &cai, 0, NULL, NULL, &nb), GPUMEM_OK, "NULL ctx and NULL release");
    gpumem_array_release(nb);

    /* ---- views: strides given, data at element [0, 0] */
    gpumem_array *t = NULL, *rev = NULL;
    gpumem_array_transpose(d, NULL, &t);
    gpumem_cuda_array_interface ct = desc_of(t);
    ok(ct.has_strides == 1 && ct.strides[0] == 4 && ct.strides[1] == 12 && ct.shape[0] == 3,
       "a transpose has strides (4, 12)");
    gpumem_slice flip[2] = {{GPUMEM_SLICE_DEFAULT, GPUMEM_SLICE_DEFAULT, -1}, {GPUMEM_SLICE_DEFAULT, GPUMEM_SLICE_DEFAULT, -1}};
    gpumem_array_slice(d, flip, 2, &rev);
    gpumem_cuda_array_interface cr = desc_of(rev);
    ok(cr.has_strides == 1 && cr.strides[0] == -12 && cr.strides[1] == -4, "d[::-1, ::-1] has strides (-12, -4)");
    ok(cr.data == dptr + 20, "its data is element [0, 0], the last of the buffer");
    gpumem_array *rb = NULL;
    is_int(gpumem_as_cuda_array(ctx, &cr, 0, NULL, NULL, &rb), GPUMEM_OK, "as_cuda_array of negative strides");
    good = read_all(rb, vals);
    int32_t want_rev[6] = {9, 4, 3, 2, 1, 0};
    ok(good && memcmp(vals, want_rev, sizeof want_rev) == 0, "reads the reversed values");
    gpumem_array_release(rb);
    gpumem_array_release(t);
    gpumem_array_release(rev);

    /* ---- broadcast (stride 0): never contiguous */
    gpumem_array *row = device_iota(ctx, 1, (int64_t[]){3}, 0);
    gpumem_cuda_array_interface cb = desc_of(row);
    cb.ndim = 2;
    cb.shape[0] = 4;
    cb.shape[1] = 3;
    cb.has_strides = 1;
    cb.strides[0] = 0;
    cb.strides[1] = 4;
    gpumem_array *bc = NULL;
    is_int(gpumem_as_cuda_array(ctx, &cb, 0, NULL, NULL, &bc), GPUMEM_OK, "as_cuda_array of a broadcast (4, 3)");
    good = read_all(bc, vals);
    for (int i = 0; i < 12; i++)
        good = good && vals[i] == i % 3;
    ok(good, "every row reads 0, 1, 2");
    int c = 0;
    gpumem_cuda_array_interface cbb = desc_of(bc);
    ok(cbb.has_strides == 1 && cbb.strides[0] == 0 && cbb.strides[1] == 4,
       "its interface keeps the strides (0, 4)");
    gpumem_array_release(bc);
    cb.shape[0] = 1;
    is_int(gpumem_as_cuda_array(ctx, &cb, 0, NULL, NULL, &bc), GPUMEM_OK, "a (1, 3) broadcast with stride 0");
    gpumem_array_is_c_contiguous(bc, &c);
    cbb = desc_of(bc);
    ok(c == 1 && cbb.has_strides == 1, "NumPy calls it C-contiguous, yet its strides are given");
    gpumem_array_release(bc);

    /* ---- empty and 0-d arrays */
    gpumem_array *e = NULL, *z = NULL;
    gpumem_device_array(ctx, 2, (int64_t[]){0, 5}, NULL, f32, 'C', NULL, &e);
    gpumem_cuda_array_interface ce = desc_of(e);
    ok(ce.data == 0 && ce.has_strides == 0 && ce.shape[0] == 0 && ce.shape[1] == 5,
       "an empty array: data 0, no strides");
    gpumem_array *eb = NULL;
    is_int(gpumem_as_cuda_array(ctx, &ce, 0, NULL, NULL, &eb), GPUMEM_OK, "as_cuda_array of data 0, size 0");
    gpumem_array_release(eb);
    gpumem_array_release(e);
    z = device_iota(ctx, 0, NULL, 0);
    gpumem_cuda_array_interface cz = desc_of(z);
    ok(cz.ndim == 0 && cz.has_strides == 0 && cz.data != 0, "a 0-d array: no shape, no strides, data");
    gpumem_array_release(z);

    /* ---- records: typestr |Vn and the descr */
    gpumem_dtype *rec = NULL;
    gpumem_dtype_from_descr("[('x', '<f4'), ('n', '<i4')]", &rec);
    struct { float x; int32_t n; } rh[3] = {{0.5f, 1}, {1.5f, 2}, {2.5f, 3}}, rb2[3];
    gpumem_array *hr = NULL, *dr = NULL;
    gpumem_host_array_wrap(rh, 1, (int64_t[]){3}, NULL, rec, &hr);
    gpumem_to_device(ctx, hr, NULL, 0, &dr);
    gpumem_cuda_array_interface cd = {.size = sizeof cd};
    is_int(gpumem_array_interface(dr, NULL, &cd), GPUMEM_ERROR_INVALID_VALUE, "a record without a descr buffer");
    like(gpumem_last_error(), "needs 29 bytes", "says how many bytes the descr needs");
    char small[8], buf[256];
    cd.descr_buffer = small;
    cd.descr_buffer_size = sizeof small;
    is_int(gpumem_array_interface(dr, NULL, &cd), GPUMEM_ERROR_INVALID_VALUE, "a record with a small buffer");
    like(gpumem_last_error(), "descr_buffer", "names the buffer");
    cd.descr_buffer = buf;
    cd.descr_buffer_size = sizeof buf;
    is_int(gpumem_array_interface(dr, NULL, &cd), GPUMEM_OK, "a record with a buffer");
    is_str(cd.typestr, "|V8", "typestr '|V8'");
    is_str(cd.descr, "[('x', '<f4'), ('n', '<i4')]", "descr lists the fields");
    ok(cd.descr == buf, "in the caller's buffer");
    gpumem_array *rr = NULL;
    const gpumem_dtype *rdt = NULL;
    is_int(gpumem_as_cuda_array(ctx, &cd, 0, NULL, NULL, &rr), GPUMEM_OK, "as_cuda_array of the record array");
    gpumem_array_dtype(rr, &rdt);
    ok(gpumem_dtype_equal(rdt, rec), "its dtype is the record");
    ok(read_all(rr, rb2) && memcmp(rb2, rh, sizeof rh) == 0, "and it reads the records");
    gpumem_array_release(rr);
    gpumem_cuda_array_interface cv = cd;
    cv.descr = NULL;
    is_int(gpumem_as_cuda_array(ctx, &cv, 0, NULL, NULL, &rr), GPUMEM_OK, "without descr: raw bytes");
    gpumem_array_dtype(rr, &rdt);
    gpumem_type vt = GPUMEM_BOOL;
    gpumem_dtype_type(rdt, &vt, NULL);
    is_int(vt, GPUMEM_VOID, "of type |V8");
    gpumem_array_release(rr);
    gpumem_array_release(hr);
    gpumem_array_release(dr);
    gpumem_dtype_release(rec);

    /* ---- other kinds */
    gpumem_array *ha = NULL, *pa = NULL, *ma = NULL, *mg = NULL;
    gpumem_cuda_array_interface ck = {.size = sizeof ck};
    gpumem_host_array(1, (int64_t[]){4}, f32, 'C', &ha);
    is_int(gpumem_array_interface(ha, NULL, &ck), GPUMEM_ERROR_INVALID_VALUE, "a host array has no interface");
    like(gpumem_last_error(), "not device memory", "it is not device memory");
    gpumem_pinned_array(ctx, 1, (int64_t[]){4}, NULL, f32, 'C', &pa);
    is_int(gpumem_array_interface(pa, NULL, &ck), GPUMEM_ERROR_INVALID_VALUE, "nor a pinned array");
    if (gpumem_mapped_array(ctx, 1, (int64_t[]){4}, NULL, f32, 'C', NULL, 0, &ma) == GPUMEM_OK) {
        uint64_t mp = 0;
        gpumem_array_device_pointer(ma, &mp);
        ok(gpumem_array_interface(ma, NULL, &ck) == GPUMEM_OK && ck.data == mp,
           "a mapped array gives its device pointer");
    } else {
        skip(1, "the device cannot map host memory");
    }
    if (gpumem_managed_array(ctx, 1, (int64_t[]){4}, NULL, f32, 'C', GPUMEM_MANAGED_ATTACH_GLOBAL, &mg) ==
        GPUMEM_OK) {
        uint64_t gp = 0;
        gpumem_array_device_pointer(mg, &gp);
        ok(gpumem_array_interface(mg, NULL, &ck) == GPUMEM_OK && ck.data == gp, "a managed array too");
    } else {
        skip(1, "no managed memory");
    }
    gpumem_array_release(ha);
    gpumem_array_release(pa);
    gpumem_array_release(ma);
    gpumem_array_release(mg);

    /* ---- streams: 1 for the default stream, a handle for others, never 0 */
    gpumem_stream *dflt = NULL, *s = NULL;
    gpumem_stream_default(ctx, &dflt);
    gpumem_cuda_array_interface cs = {.size = sizeof cs};
    is_int(gpumem_array_interface(d, dflt, &cs), GPUMEM_OK, "array_interface on the default stream");
    ok(cs.has_stream == 1 && cs.stream == 1, "stream 1: the legacy default stream");
    gpumem_stream_create(ctx, GPUMEM_STREAM_NON_BLOCKING, &s);
    is_int(gpumem_array_interface(d, s, &cs), GPUMEM_OK, "array_interface on a stream");
    ok(cs.has_stream == 1 && cs.stream != 0 && cs.stream != 1 && cs.stream != 2, "its handle, not 0, 1 or 2");

    int64_t ss = calls("cuStreamSynchronize"), cx = calls("cuCtxSynchronize");
    gpumem_array *sa = NULL;
    is_int(gpumem_as_cuda_array(ctx, &cs, 0, NULL, NULL, &sa), GPUMEM_OK, "as_cuda_array with that stream");
    ok(calls("cuStreamSynchronize") == ss + 1, "synchronizes on it");
    gpumem_array_release(sa);
    ss = calls("cuStreamSynchronize");
    is_int(gpumem_as_cuda_array(ctx, &cs, GPUMEM_CAI_NO_SYNCHRONIZE, NULL, NULL, &sa), GPUMEM_OK,
           "GPUMEM_CAI_NO_SYNCHRONIZE");
    ok(calls("cuStreamSynchronize") == ss && calls("cuCtxSynchronize") == cx, "synchronizes nothing");
    gpumem_array_release(sa);
    gpumem_cuda_array_interface c1 = cs;
    c1.stream = 1;
    is_int(gpumem_as_cuda_array(ctx, &c1, 0, NULL, NULL, &sa), GPUMEM_OK, "stream 1");
    ok(calls("cuStreamSynchronize") == ss + 1, "synchronizes the legacy default stream");
    gpumem_array_release(sa);
    c1.stream = 2;
    is_int(gpumem_as_cuda_array(ctx, &c1, 0, NULL, NULL, &sa), GPUMEM_OK, "stream 2");
    ok(calls("cuCtxSynchronize") == cx + 1, "waits for the context, which holds the per-thread default stream");
    gpumem_array_release(sa);

    /* The consumer sees the producer's last writes on the stream. */
    int32_t fresh[6] = {60, 61, 62, 63, 64, 65};
    gpumem_array *fh = NULL, *fd = NULL;
    gpumem_host_array_wrap(fresh, 2, (int64_t[]){2, 3}, NULL, i32, &fh);
    int32_t minus = -1;
    gpumem_array_fill(d, &minus, s);
    gpumem_array_copy(d, fh, s);
    gpumem_array_fill(d, &minus, s);
    gpumem_array_copy(d, fh, s);
    is_int(gpumem_array_interface(d, s, &cs), GPUMEM_OK, "four operations queued on a non-blocking stream");
    is_int(gpumem_as_cuda_array(ctx, &cs, 0, NULL, NULL, &fd), GPUMEM_OK, "as_cuda_array synchronizes");
    ok(read_all(fd, vals) && memcmp(vals, fresh, sizeof fresh) == 0, "and reads the last values");
    gpumem_array_release(fd);
    gpumem_array_release(fh);

    if (test_on_sim()) {
        gpumem_cuda_array_interface cbad = cs;
        cbad.stream = 0x5151;
        refused(&cbad, 0, GPUMEM_ERROR_INVALID_VALUE, "cuStreamQuery: CUDA_ERROR_INVALID_HANDLE",
                "a stream handle the driver does not know is INVALID_VALUE");
        like(gpumem_last_error(), "desc->stream 0x5151", "names the stream");
    } else {
        skip(2, "only the simulator answers made-up stream handles (the driver's answer is undefined)");
    }
    {
        gpumem_cuda_array_interface cbad = cs;
        uint64_t calls0 = 0, calls1 = 0;
        gpumem_debug_driver_calls(NULL, &calls0);
        cbad.stream = 7;
        refused(&cbad, 0, GPUMEM_ERROR_INVALID_VALUE, "desc->stream 7 is not a stream", "stream 7: in the null page");
        cbad.stream = -5;
        refused(&cbad, 0, GPUMEM_ERROR_INVALID_VALUE, "desc->stream -5 is not a stream", "stream -5: negative");
        gpumem_debug_driver_calls(NULL, &calls1);
        is_int(calls1 - calls0, 0, "both refused before any driver call");
        cbad.stream = 7;
        gpumem_array *nosync = NULL;
        is_int(gpumem_as_cuda_array(ctx, &cbad, GPUMEM_CAI_NO_SYNCHRONIZE, NULL, NULL, &nosync), GPUMEM_OK,
               "with GPUMEM_CAI_NO_SYNCHRONIZE the stream is not looked at");
        gpumem_array_release(nosync);
    }
    cs.stream = 1;
    gpumem_debug_fail_call(1, 999);
    refused(&cs, 0, GPUMEM_ERROR_DRIVER, "cuStreamSynchronize", "a failing synchronization");

    gpumem_context *ctx1 = NULL;
    if (gpumem_context_create(1, &ctx1) == GPUMEM_OK) {
        gpumem_stream *s1 = NULL;
        gpumem_stream_create(ctx1, 0, &s1);
        is_int(gpumem_array_interface(d, s1, &cs), GPUMEM_ERROR_CONTEXT_MISMATCH, "a stream of another device");
        gpumem_stream_destroy(s1);
        gpumem_context_release(ctx1);
    } else {
        skip(1, "one device only");
    }
    gpumem_stream_destroy(s);

    /* ---- malformed descriptions: clear errors, release never called */
    gpumem_cuda_array_interface m = desc_of(d), x;
    x = m;
    x.size = 8;
    refused(&x, 0, GPUMEM_ERROR_INVALID_VALUE, "desc->size is 8", "a size that is not set");
    x = m;
    x.version = 1;
    refused(&x, 0, GPUMEM_ERROR_INVALID_VALUE, "desc->version 1", "version 1");
    x.version = 4;
    refused(&x, 0, GPUMEM_ERROR_INVALID_VALUE, "desc->version 4", "an unknown version 4");
    x = m;
    x.version = 2;
    gpumem_array *v2 = NULL;
    is_int(gpumem_as_cuda_array(ctx, &x, 0, NULL, NULL, &v2), GPUMEM_OK, "version 2 is read");
    gpumem_array_release(v2);
    x.has_stream = 1;
    x.stream = 1;
    refused(&x, 0, GPUMEM_ERROR_INVALID_VALUE, "version 2 has no stream", "a stream in version 2");
    x = m;
    x.has_stream = 1;
    x.stream = 0;
    refused(&x, 0, GPUMEM_ERROR_INVALID_VALUE, "desc->stream is 0", "stream 0");
    x = m;
    strcpy(x.typestr, "<f3");
    refused(&x, 0, GPUMEM_ERROR_INVALID_DTYPE, "\"<f3\"", "a bad typestr");
    like(gpumem_last_error(), "desc->typestr", "names the field");
    x.typestr[0] = '\0';
    refused(&x, 0, GPUMEM_ERROR_INVALID_DTYPE, "desc->typestr", "an empty typestr");
    memset(x.typestr, 'i', sizeof x.typestr);
    refused(&x, 0, GPUMEM_ERROR_INVALID_DTYPE, "not NUL-terminated", "an unterminated typestr");
    x = m;
    x.descr = "[('a', '<f8')]";
    refused(&x, 0, GPUMEM_ERROR_INVALID_DTYPE, "disagrees", "a descr that disagrees with the typestr");
    x.descr = "[('a', '<i4'";
    refused(&x, 0, GPUMEM_ERROR_INVALID_DTYPE, "desc->descr", "a malformed descr");
    x.descr = "[('', '<i4')]";
    is_int(gpumem_as_cuda_array(ctx, &x, 0, NULL, NULL, &v2), GPUMEM_OK, "a descr equal to the typestr");
    gpumem_array_release(v2);
    strcpy(x.typestr, "|V12");
    x.descr = "[('a', '<i4'), ('b', '<i4')]";
    refused(&x, 0, GPUMEM_ERROR_INVALID_DTYPE, "8 bytes", "a record descr of another size than |V12");
    x = m;
    x.shape[1] = -3;
    refused(&x, 0, GPUMEM_ERROR_NEGATIVE_DIMENSION, "axis 1", "a negative extent");
    x = m;
    x.ndim = -1;
    refused(&x, 0, GPUMEM_ERROR_INVALID_VALUE, "desc->ndim -1", "ndim -1");
    x.ndim = 33;
    refused(&x, 0, GPUMEM_ERROR_TOO_MANY_DIMENSIONS, "33", "ndim 33");
    x = m;
    x.data = 0;
    refused(&x, 0, GPUMEM_ERROR_NULL_ARGUMENT, "desc->data is NULL", "data 0 for 6 elements");
    x = m;
    x.has_mask = 1;
    refused(&x, 0, GPUMEM_ERROR_NOT_SUPPORTED, "mask", "a mask");
    x = m;
    x.readonly = 1;
    refused(&x, 0, GPUMEM_ERROR_INVALID_VALUE, "GPUMEM_CAI_READ_ONLY", "read-only data without the flag");
    released = 0;
    is_int(gpumem_as_cuda_array(ctx, &x, GPUMEM_CAI_READ_ONLY, release_owner, NULL, &v2), GPUMEM_OK,
           "read-only data with GPUMEM_CAI_READ_ONLY");
    int roflag = 0;
    gpumem_array_is_readonly(v2, &roflag);
    is_int(roflag, 1, "gives a read-only array");
    gpumem_cuda_array_interface back_desc = {.size = sizeof back_desc};
    gpumem_array_interface(v2, NULL, &back_desc);
    is_int(back_desc.readonly, 1, "which describes itself as read-only");
    gpumem_array_release(v2);
    is_int(released, 1, "released once");
    x = m;
    refused(&x, 0x80, GPUMEM_ERROR_INVALID_VALUE, "flags 0x80", "unknown flags");
    x.has_strides = 1;
    x.strides[0] = INT64_MAX / 2;
    x.data = 0xF000000000000000u; /* high on every backend: see test-dlpack */
    refused(&x, 0, GPUMEM_ERROR_OVERFLOW, "address space", "strides that overflow");
    x = m;
    x.data = UINT64_MAX - 8;
    refused(&x, 0, GPUMEM_ERROR_OVERFLOW, "address space", "data at the end of the address space");
    x = m;
    x.has_strides = 1;
    x.strides[0] = -12;
    x.data = 4;
    refused(&x, 0, GPUMEM_ERROR_OVERFLOW, "address space", "negative strides below address 0");
    gpumem_array *na = NULL;
    is_int(gpumem_as_cuda_array(ctx, NULL, 0, NULL, NULL, &na), GPUMEM_ERROR_NULL_ARGUMENT, "desc NULL");
    is_int(gpumem_as_cuda_array(ctx, &m, 0, NULL, NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "array NULL");
    is_int(gpumem_array_interface(NULL, NULL, &cs), GPUMEM_ERROR_NULL_ARGUMENT, "array_interface of NULL");
    is_int(gpumem_array_interface(d, NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "into NULL");
    gpumem_cuda_array_interface unset;
    memset(&unset, 0x5a, sizeof unset);
    unset.size = 0;
    is_int(gpumem_array_interface(d, NULL, &unset), GPUMEM_ERROR_INVALID_VALUE, "desc->size 0");
    ok(unset.version == 0x5a5a5a5a, "leaves the description alone");

    gpumem_array_release(row);
    gpumem_array_release(d);
    gpumem_context_release(ctx);
    done_testing();
    return exit_status();
}
