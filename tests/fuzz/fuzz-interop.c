/* CUDA Array Interface and DLPack import of descriptions made from the
 * input, over a real (simulated) device allocation: every call either fails
 * with the output and the owner untouched, or gives an array whose shape
 * and strides are the description's, whose owner (CAI release, DLPack
 * deleter) is called exactly once when it goes, and whose elements are the
 * allocation's bytes when they lie inside it.  A DLPack tensor imported as
 * host-side memory is not the device allocation, which the CPU would read:
 * kDLCUDAHost and kDLCUDAManaged have no byte in it, kDLCPU neither its
 * element 0 nor its lowest or highest byte (gpumem/interop.h: what the
 * driver is asked). */
#include "config.h"

#include <gpumem.h>

#include "dlpack_abi.h"
#include "fuzz.h"

#define ALLOC 4096

static gpumem_context *ctx;
static gpumem_array *backing; /* uint8 [ALLOC], byte i FUZZ_PATTERN(i) */
static uint64_t base;
static gpumem_stream *stream;
static int released;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    setenv("GPUMEM_BACKEND", "sim", 1);
    setenv("GPUMEM_SIM_STREAM_DELAY_US", "0", 1);
    static uint8_t init[ALLOC];
    fuzz_fill_pattern(init, ALLOC);
    gpumem_array *h = NULL;
    if (gpumem_context_create(0, &ctx) != GPUMEM_OK || gpumem_stream_create(ctx, 0, &stream) != GPUMEM_OK ||
        gpumem_host_array_wrap(init, 1, (int64_t[]){ALLOC}, NULL, gpumem_dtype_builtin(GPUMEM_UINT8), &h) != GPUMEM_OK ||
        gpumem_to_device(ctx, h, NULL, 0, &backing) != GPUMEM_OK ||
        gpumem_array_device_pointer(backing, &base) != GPUMEM_OK) {
        fprintf(stderr, "fuzz-interop: setup: %s\n", gpumem_last_error());
        abort();
    }
    gpumem_array_release(h);
    return 0;
}

static void on_release(void *owner)
{
    FUZZ_CHECK(owner == &released, "the owner pointer");
    released++;
}

static void on_delete(gm_dl_managed_tensor *t)
{
    FUZZ_CHECK(t->manager_ctx == &released, "manager_ctx");
    released++;
}

static void on_delete_v(gm_dl_managed_tensor_versioned *t)
{
    FUZZ_CHECK(t->manager_ctx == &released, "manager_ctx");
    released++;
}

static const char *const typestrs[] = {"<i4", "<f8", "|u1", "|b1", "<c8", ">i2", "|V8", "<f2", "<i8", "|V3", "x"};
static const char *const descrs[] = {NULL, "[('a', '<i4'), ('b', '<i4')]", "[('', '|V8')]", "[('a', '<f8')]",
                                     "[('a', '|u1', (3,))]", "[('x'"};

/* An extent or stride from the input: small mostly, sometimes wild. */
static int64_t number(fuzz_reader *r, int64_t lo, int64_t hi)
{
    unsigned form = fuzz_u8(r);
    if (form < 240)
        return fuzz_range(r, lo, hi);
    return (int64_t)fuzz_u64(r);
}

/* If every element lies in the backing allocation, reads them and compares. */
static void check_contents(gpumem_array *a)
{
    fuzz_layout l = fuzz_layout_of(a);
    uint64_t p = 0;
    if (l.size == 0 || l.size > 4096 || gpumem_array_device_pointer(a, &p) != GPUMEM_OK)
        return;
    if ((__int128)p + l.lo < (__int128)base || (__int128)p + l.hi > (__int128)base + ALLOC)
        return; /* not inside the allocation: never touched */
    uint8_t *got = malloc((size_t)l.size * l.itemsize);
    fuzz_read_elements(ctx, a, &l, got, "an imported array inside the allocation");
    fuzz_check_pattern(got, &l, (int64_t)(p - base));
    free(got);
}

/* An array the CPU reads (host, pinned or managed memory) is not the device
 * allocation (see the file's notes). */
static void check_host_side(gpumem_array *a)
{
    gpumem_memory_kind kind;
    gpumem_array_kind(a, &kind);
    if (kind != GPUMEM_MEMORY_HOST && kind != GPUMEM_MEMORY_PINNED && kind != GPUMEM_MEMORY_MANAGED)
        return;
    fuzz_layout l = fuzz_layout_of(a);
    void *h = NULL;
    if (l.size == 0 || gpumem_array_host_pointer(a, &h) != GPUMEM_OK)
        return;
    __int128 p = (__int128)(uintptr_t)h, lo = l.lo, hi = l.hi;
    __int128 b0 = (__int128)base, b1 = (__int128)base + ALLOC;
    if (kind != GPUMEM_MEMORY_HOST) {
        FUZZ_CHECK(p + hi <= b0 || p + lo >= b1, "a %s array over device memory",
                   kind == GPUMEM_MEMORY_PINNED ? "pinned" : "managed");
        return;
    }
    const __int128 bytes[3] = {p, p + lo, p + hi - 1};
    for (int i = 0; i < 3; i++)
        FUZZ_CHECK(bytes[i] < b0 || bytes[i] >= b1, "a kDLCPU array whose %s is device memory",
                   i == 0 ? "element 0" : i == 1 ? "lowest byte" : "highest byte");
}

static void cai(fuzz_reader *r)
{
    gpumem_cuda_array_interface d = {.size = sizeof d};
    unsigned v = fuzz_u8(r);
    d.version = v < 200 ? 3 : v < 240 ? 2 : (int)(v - 240);
    d.ndim = (int)fuzz_range(r, -1, 6);
    if (fuzz_u8(r) == 255)
        d.ndim = (int)fuzz_u64(r);
    for (int i = 0; i < GPUMEM_MAX_NDIM; i++) {
        d.shape[i] = number(r, -1, 9);
        d.strides[i] = number(r, -64, 64);
    }
    d.has_strides = fuzz_u8(r) & 1;
    unsigned t = fuzz_u8(r);
    if (t < 240)
        snprintf(d.typestr, sizeof d.typestr, "%s", typestrs[t % (sizeof typestrs / sizeof *typestrs)]);
    else
        for (size_t i = 0; i < sizeof d.typestr; i++)
            d.typestr[i] = (char)fuzz_u8(r);
    d.descr = descrs[fuzz_u8(r) % (sizeof descrs / sizeof *descrs)];
    unsigned where = fuzz_u8(r);
    d.data = where < 8 ? 0 : where < 250 ? base + (uint64_t)fuzz_range(r, 0, ALLOC) : fuzz_u64(r);
    d.readonly = fuzz_u8(r) % 4 == 0;
    d.has_mask = fuzz_u8(r) % 16 == 0;
    d.has_stream = fuzz_u8(r) % 2;
    unsigned sv = fuzz_u8(r);
    gpumem_cuda_array_interface mine = {.size = sizeof mine};
    if (sv % 4 == 3 && gpumem_array_interface(backing, stream, &mine) == GPUMEM_OK)
        d.stream = mine.stream; /* a real stream handle */
    else
        d.stream = sv % 4 == 0 ? 0 : sv % 4 == 1 ? 1 : sv % 4 == 2 ? 2 : (intptr_t)fuzz_u64(r);
    if (sv >= 128)
        d.stream = (intptr_t)fuzz_u64(r); /* anything: the simulator knows its handles */
    unsigned flags = fuzz_u8(r) % 5;
    gpumem_array *a = (gpumem_array *)(uintptr_t)0x1;
    released = 0;
    gpumem_status st = gpumem_as_cuda_array(ctx, &d, flags, on_release, &released, &a);
    if (st != GPUMEM_OK) {
        FUZZ_CHECK(a == (gpumem_array *)(uintptr_t)0x1 && released == 0, "a failed import changed its outputs");
        FUZZ_CHECK(gpumem_last_error()[0] != '\0', "no message");
        return;
    }
    int ndim = -1;
    int64_t shape[GPUMEM_MAX_NDIM];
    gpumem_array_ndim(a, &ndim);
    gpumem_array_shape(a, shape);
    FUZZ_CHECK(ndim == d.ndim, "ndim %d for %d", ndim, d.ndim);
    for (int i = 0; i < ndim; i++)
        FUZZ_CHECK(shape[i] == d.shape[i], "shape[%d]", i);
    if (d.has_strides) {
        int64_t strides[GPUMEM_MAX_NDIM], size = 0;
        gpumem_array_strides(a, strides);
        gpumem_array_size(a, &size);
        for (int i = 0; i < ndim && size > 0; i++)
            FUZZ_CHECK(strides[i] == d.strides[i] || shape[i] == 1, "strides[%d]", i);
    }
    check_contents(a);
    FUZZ_CHECK(released == 0, "released early");
    gpumem_array_release(a);
    FUZZ_CHECK(released == 1, "released %d times", released);
}

static void dlpack(fuzz_reader *r)
{
    static int64_t shape[40], strides[40];
    static gm_dl_managed_tensor legacy;
    static gm_dl_managed_tensor_versioned versioned;
    int use_v = fuzz_u8(r) & 1;
    gm_dl_tensor *t = use_v ? &versioned.dl_tensor : &legacy.dl_tensor;
    memset(&legacy, 0, sizeof legacy);
    memset(&versioned, 0, sizeof versioned);
    unsigned where = fuzz_u8(r);
    t->data = (void *)(uintptr_t)(where < 8 ? 0 : where < 250 ? base + (uint64_t)fuzz_range(r, 0, ALLOC) : fuzz_u64(r));
    unsigned dev = fuzz_u8(r);
    t->device.device_type = dev < 200   ? 2 /* kDLCUDA */
                            : dev < 220 ? 13 /* managed */
                            : dev >= 250 ? (dev & 1 ? 1 /* kDLCPU */ : 3 /* kDLCUDAHost */)
                                         : (int32_t)(dev - 200);
    t->device.device_id = fuzz_u8(r) < 240 ? 0 : (int32_t)fuzz_range(r, -2, 70);
    t->ndim = (int32_t)fuzz_range(r, -1, 6);
    if (fuzz_u8(r) == 255)
        t->ndim = (int32_t)fuzz_range(r, 0, 40);
    static const uint8_t codes[] = {0, 1, 2, 5, 6, 4};
    t->dtype.code = fuzz_u8(r) < 240 ? codes[fuzz_u8(r) % 6] : (uint8_t)fuzz_u8(r);
    static const uint8_t bits[] = {8, 16, 32, 64, 128, 1, 0, 7};
    t->dtype.bits = bits[fuzz_u8(r) % 8];
    t->dtype.lanes = fuzz_u8(r) < 240 ? 1 : (uint16_t)fuzz_range(r, 0, 4);
    for (int i = 0; i < 40; i++) {
        shape[i] = number(r, -1, 9);
        strides[i] = number(r, -16, 16);
    }
    t->shape = fuzz_u8(r) < 250 ? shape : NULL;
    t->strides = fuzz_u8(r) % 3 == 0 ? NULL : strides;
    t->byte_offset = fuzz_u8(r) < 200 ? (uint64_t)fuzz_range(r, 0, 64) : fuzz_u64(r);
    if (use_v) {
        versioned.version.major = fuzz_u8(r) < 240 ? 1 : fuzz_u8(r);
        versioned.version.minor = fuzz_u8(r);
        versioned.flags = fuzz_u8(r) < 200 ? 0 : fuzz_u64(r);
        versioned.manager_ctx = &released;
        versioned.deleter = fuzz_u8(r) < 250 ? on_delete_v : NULL;
    } else {
        legacy.manager_ctx = &released;
        legacy.deleter = fuzz_u8(r) < 250 ? on_delete : NULL;
    }
    unsigned flags = (use_v ? GPUMEM_DLPACK_VERSIONED : 0) | (fuzz_u8(r) % 8 == 0 ? GPUMEM_DLPACK_READ_ONLY : 0);
    if (fuzz_u8(r) == 255)
        flags ^= GPUMEM_DLPACK_VERSIONED; /* the wrong struct: only version checks stand between */
    if ((flags & GPUMEM_DLPACK_VERSIONED) && !use_v)
        return; /* reading a legacy struct as versioned reads past it: not a defined call */
    gpumem_array *a = (gpumem_array *)(uintptr_t)0x1;
    released = 0;
    int has_deleter = use_v ? versioned.deleter != NULL : legacy.deleter != NULL;
    gpumem_status st = gpumem_array_from_dlpack(ctx, use_v ? (void *)&versioned : (void *)&legacy, flags, &a);
    if (st != GPUMEM_OK) {
        FUZZ_CHECK(a == (gpumem_array *)(uintptr_t)0x1 && released == 0, "a failed import changed its outputs");
        return;
    }
    int ndim = -1;
    int64_t got[GPUMEM_MAX_NDIM];
    gpumem_array_ndim(a, &ndim);
    gpumem_array_shape(a, got);
    FUZZ_CHECK(ndim == t->ndim, "ndim");
    for (int i = 0; i < ndim; i++)
        FUZZ_CHECK(got[i] == t->shape[i], "shape[%d]", i);
    check_host_side(a);
    check_contents(a);
    gpumem_array_release(a);
    FUZZ_CHECK(released == has_deleter, "deleter called %d times", released);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_reader r = {data, size};
    if (fuzz_u8(&r) & 1)
        dlpack(&r);
    else
        cai(&r);
    return 0;
}
