/* DLPack: export of every kind and dtype as a legacy DLManagedTensor and a
 * DLManagedTensorVersioned, import of both (the deleter called exactly once,
 * when the last reference goes), round trips through copies, views with
 * negative and zero strides, and every unsupported tensor refused without a
 * call of its deleter.  The tensors are read through lib/dlpack_abi.h, which
 * tests/test-dlpack-abi.c checks against the real dlpack.h. */
#include <stdlib.h>
#include <string.h>

#include <gpumem.h>

#include "dlpack_abi.h"
#include "arrays.h"
#include "tap.h"

static gpumem_context *ctx;
static const gpumem_dtype *i32, *f32;

/* ---- a producer of our own, counting its deleter calls */

static int deleted;

typedef struct producer {
    gm_dl_managed_tensor legacy;
    gm_dl_managed_tensor_versioned versioned;
    int64_t shape[GPUMEM_MAX_NDIM + 1];
    int64_t strides[GPUMEM_MAX_NDIM + 1];
} producer;

static void count_legacy(gm_dl_managed_tensor *self)
{
    (void)self;
    deleted++;
}

static void count_versioned(gm_dl_managed_tensor_versioned *self)
{
    (void)self;
    deleted++;
}

/* A C-ordered int32 tensor of shape (n) over data. */
static void make_tensor(producer *p, void *data, int64_t n, int32_t device_type, int32_t device_id)
{
    memset(p, 0, sizeof *p);
    p->shape[0] = n;
    gm_dl_tensor t = {data, {device_type, device_id}, 1, {GM_DL_INT, 32, 1}, p->shape, NULL, 0};
    p->legacy.dl_tensor = t;
    p->legacy.deleter = count_legacy;
    p->versioned.version.major = 1;
    p->versioned.version.minor = 1;
    p->versioned.dl_tensor = t;
    p->versioned.deleter = count_versioned;
}

/* Imports a tensor that must be refused with st, naming `needle`, without
 * calling its deleter. */
static void refused(void *tensor, unsigned flags, gpumem_status st, const char *needle, const char *name)
{
    gpumem_array *a = NULL;
    deleted = 0;
    gpumem_status got = gpumem_array_from_dlpack(ctx, tensor, flags, &a);
    int good = got == st && a == NULL && deleted == 0 && strstr(gpumem_last_error(), needle) != NULL;
    ok(good, "%s: %s", name, gpumem_status_string(st));
    if (!good)
        diag("  got %s (%s), array %p, deleted %d", gpumem_status_string(got), gpumem_last_error(), (void *)a,
             deleted);
    gpumem_array_release(a);
}

static gm_dl_tensor *tensor_of(void *t, int versioned)
{
    return versioned ? &((gm_dl_managed_tensor_versioned *)t)->dl_tensor : &((gm_dl_managed_tensor *)t)->dl_tensor;
}

static void delete_tensor(void *t, int versioned)
{
    if (versioned)
        ((gm_dl_managed_tensor_versioned *)t)->deleter(t);
    else
        ((gm_dl_managed_tensor *)t)->deleter(t);
}

/* Exports a with flags, checks the tensor's device, dtype and strides, and
 * gives it. */
static void *exported(gpumem_array *a, unsigned flags, int32_t device_type, int32_t device_id, gm_dl_data_type dt,
                      const int64_t *el_strides, const char *name)
{
    void *p = NULL;
    gpumem_status st = gpumem_array_to_dlpack(a, flags, &p);
    if (st != GPUMEM_OK) {
        ok(0, "%s: %s", name, gpumem_last_error());
        return NULL;
    }
    gm_dl_tensor *t = tensor_of(p, flags & GPUMEM_DLPACK_VERSIONED);
    int ndim = 0;
    int64_t shape[GPUMEM_MAX_NDIM];
    gpumem_array_ndim(a, &ndim);
    gpumem_array_shape(a, shape);
    int good = t->ndim == ndim && t->device.device_type == device_type && t->device.device_id == device_id &&
               t->dtype.code == dt.code && t->dtype.bits == dt.bits && t->dtype.lanes == dt.lanes &&
               t->byte_offset == 0 && t->shape != NULL && t->strides != NULL;
    for (int i = 0; good && i < ndim; i++)
        good = t->shape[i] == shape[i] && (el_strides == NULL || t->strides[i] == el_strides[i]);
    ok(good, "%s", name);
    if (!good)
        diag("  ndim %d device (%d, %d) dtype (%u, %u, %u) byte_offset %llu", (int)t->ndim,
             (int)t->device.device_type, (int)t->device.device_id, t->dtype.code, t->dtype.bits, t->dtype.lanes,
             (unsigned long long)t->byte_offset);
    return p;
}

int main(void)
{
    if (test_on_sim()) {
        setenv("GPUMEM_SIM_MEMORY", "64M", 1);
        setenv("GPUMEM_SIM_DEVICES", "2", 1);
    }
    if (gpumem_context_create(0, &ctx) != GPUMEM_OK)
        bail_out("no context: %s", gpumem_last_error());
    i32 = gpumem_dtype_builtin(GPUMEM_INT32);
    f32 = gpumem_dtype_builtin(GPUMEM_FLOAT32);
    const gm_dl_data_type dl_i32 = {GM_DL_INT, 32, 1};
    int32_t vals[64];

    /* ---- export of a device array, both structs */
    gpumem_array *d = device_iota(ctx, 2, (int64_t[]){2, 3}, 0);
    uint64_t dptr = 0;
    gpumem_array_device_pointer(d, &dptr);
    for (int versioned = 0; versioned <= 1; versioned++) {
        unsigned fl = versioned ? GPUMEM_DLPACK_VERSIONED : 0;
        const char *which = versioned ? "versioned" : "legacy";
        gpumem_array *own = device_iota(ctx, 2, (int64_t[]){2, 3}, 0);
        uint64_t optr = 0;
        gpumem_array_device_pointer(own, &optr);
        void *tp = exported(own, fl, GM_DL_CUDA, 0, dl_i32, (int64_t[]){3, 1},
                            versioned ? "a versioned tensor of a 2x3 int32 device array: kDLCUDA 0, int32, "
                                        "strides (3, 1) elements"
                                      : "a legacy tensor of it: the same");
        gm_dl_tensor *t = tensor_of(tp, versioned);
        ok(t->data == (void *)(uintptr_t)optr, "%s: data is the device pointer", which);
        if (versioned) {
            gm_dl_managed_tensor_versioned *v = tp;
            ok(v->version.major == 1 && v->version.minor == 0 && v->flags == 0 && v->deleter != NULL,
               "versioned: version 1.0, flags 0, a deleter");
        } else {
            ok(((gm_dl_managed_tensor *)tp)->deleter != NULL, "legacy: a deleter");
        }
        /* The tensor holds its own reference: import it after dropping ours. */
        gpumem_array_release(own);
        gpumem_array *back = NULL;
        is_int(gpumem_array_from_dlpack(ctx, tp, fl, &back), GPUMEM_OK, "imported back after our release");
        uint64_t bptr = 0;
        int64_t bst[2] = {0, 0};
        gpumem_memory_kind kind = GPUMEM_MEMORY_HOST;
        gpumem_array_device_pointer(back, &bptr);
        gpumem_array_strides(back, bst);
        gpumem_array_kind(back, &kind);
        ok(bptr == optr && bst[0] == 12 && bst[1] == 4 && kind == GPUMEM_MEMORY_FOREIGN,
           "%s: the same pointer and byte strides (12, 4), a foreign array", which);
        int good = read_all(back, vals);
        for (int i = 0; i < 6; i++)
            good = good && vals[i] == i;
        ok(good, "%s: the same values", which);
        /* The array owns the tensor: its release calls our deleter, which
         * drops the last reference on the exported array and frees it. */
        size_t pending = 0, after = 0;
        gpumem_context_pending_deallocations(ctx, &pending, NULL);
        gpumem_array_release(back);
        gpumem_context_pending_deallocations(ctx, &after, NULL);
        ok(after == pending + 1 || after == 0, "%s: the last release frees the exported array's memory", which);
    }
    void *ro = exported(d, GPUMEM_DLPACK_VERSIONED | GPUMEM_DLPACK_READ_ONLY, GM_DL_CUDA, 0, dl_i32, NULL,
                        "a read-only versioned tensor");
    ok(((gm_dl_managed_tensor_versioned *)ro)->flags == GM_DLPACK_FLAG_BITMASK_READ_ONLY,
       "has DLPACK_FLAG_BITMASK_READ_ONLY");
    gpumem_array *roa = NULL;
    is_int(gpumem_array_from_dlpack(ctx, ro, GPUMEM_DLPACK_VERSIONED, &roa), GPUMEM_ERROR_INVALID_VALUE,
           "its import without GPUMEM_DLPACK_READ_ONLY is refused");
    is_int(gpumem_array_from_dlpack(ctx, ro, GPUMEM_DLPACK_VERSIONED | GPUMEM_DLPACK_READ_ONLY, &roa), GPUMEM_OK,
           "and accepted with it");
    int roflag = 0;
    gpumem_array_is_readonly(roa, &roflag);
    is_int(roflag, 1, "the imported array is read-only");
    is_int(gpumem_array_set_readonly(roa, 0), GPUMEM_ERROR_INVALID_VALUE, "for good");
    gpumem_array_release(roa);
    void *p = NULL;
    is_int(gpumem_array_to_dlpack(d, GPUMEM_DLPACK_READ_ONLY, &p), GPUMEM_ERROR_INVALID_VALUE,
           "read-only needs the versioned struct");
    is_int(gpumem_array_to_dlpack(d, 0x10, &p), GPUMEM_ERROR_INVALID_VALUE, "unknown flags");
    is_int(gpumem_array_to_dlpack(NULL, 0, &p), GPUMEM_ERROR_NULL_ARGUMENT, "array NULL");
    is_int(gpumem_array_to_dlpack(d, 0, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "tensor NULL");
    /* A consumer that deletes the tensor without importing it. */
    p = exported(d, 0, GM_DL_CUDA, 0, dl_i32, NULL, "a tensor a consumer just deletes");
    delete_tensor(p, 0);

    /* ---- views: negative strides and broadcast */
    gpumem_array *rev = NULL, *back = NULL;
    gpumem_slice flip[1] = {{GPUMEM_SLICE_DEFAULT, GPUMEM_SLICE_DEFAULT, -1}};
    gpumem_array_slice(d, flip, 1, &rev);
    uint64_t rptr = 0;
    gpumem_array_device_pointer(rev, &rptr);
    p = exported(rev, GPUMEM_DLPACK_VERSIONED, GM_DL_CUDA, 0, dl_i32, (int64_t[]){-3, 1},
                 "d[::-1]: strides (-3, 1)");
    ok(tensor_of(p, 1)->data == (void *)(uintptr_t)rptr && rptr == dptr + 12, "data is element [0, 0]");
    gpumem_array_release(rev);
    is_int(gpumem_array_from_dlpack(NULL, p, GPUMEM_DLPACK_VERSIONED, &back), GPUMEM_OK,
           "imported back with ctx NULL");
    int32_t want_rev[6] = {3, 4, 5, 0, 1, 2};
    ok(read_all(back, vals) && memcmp(vals, want_rev, sizeof want_rev) == 0, "reads the rows reversed");
    gpumem_array_release(back);

    gpumem_cuda_array_interface cai = {.size = sizeof cai};
    gpumem_array *row = device_iota(ctx, 1, (int64_t[]){3}, 0), *bc = NULL;
    gpumem_array_interface(row, NULL, &cai);
    cai.ndim = 2;
    cai.shape[0] = 4;
    cai.shape[1] = 3;
    cai.has_strides = 1;
    cai.strides[0] = 0;
    cai.strides[1] = 4;
    gpumem_as_cuda_array(ctx, &cai, 0, NULL, NULL, &bc);
    p = exported(bc, 0, GM_DL_CUDA, 0, dl_i32, (int64_t[]){0, 1}, "a broadcast (4, 3): strides (0, 1)");
    gpumem_array_release(bc);
    is_int(gpumem_array_from_dlpack(ctx, p, 0, &back), GPUMEM_OK, "imported back");
    int good = read_all(back, vals);
    for (int i = 0; i < 12; i++)
        good = good && vals[i] == i % 3;
    ok(good, "every row reads 0, 1, 2");
    gpumem_array_release(back);
    gpumem_array_release(row);

    /* ---- the other kinds: the device type follows the memory */
    float fv[4] = {1.5f, 2.5f, 3.5f, 4.5f}, fb[4];
    gpumem_array *fh = NULL, *pa = NULL, *ma = NULL, *mg = NULL;
    const gm_dl_data_type dl_f32 = {GM_DL_FLOAT, 32, 1};
    gpumem_host_array_wrap(fv, 1, (int64_t[]){4}, NULL, f32, &fh);
    p = exported(fh, GPUMEM_DLPACK_VERSIONED, GM_DL_CPU, 0, dl_f32, (int64_t[]){1}, "a host array: kDLCPU");
    ok(tensor_of(p, 1)->data == (void *)fv, "data is the host pointer");
    is_int(gpumem_array_from_dlpack(ctx, p, GPUMEM_DLPACK_VERSIONED, &back), GPUMEM_OK, "imported back");
    gpumem_memory_kind kind = GPUMEM_MEMORY_DEVICE;
    void *hp = NULL;
    gpumem_context *actx = (gpumem_context *)&actx;
    gpumem_array_kind(back, &kind);
    gpumem_array_host_pointer(back, &hp);
    gpumem_array_context(back, &actx);
    ok(kind == GPUMEM_MEMORY_HOST && hp == (void *)fv && actx == NULL, "a host array over the same memory");
    gpumem_array_release(back);

    gpumem_pinned_array(ctx, 1, (int64_t[]){4}, NULL, f32, 'C', &pa);
    gpumem_array_copy(pa, fh, NULL);
    p = exported(pa, 0, GM_DL_CUDA_HOST, 0, dl_f32, NULL, "a pinned array: kDLCUDAHost 0");
    gpumem_array_host_pointer(pa, &hp);
    ok(tensor_of(p, 0)->data == hp, "data is the host pointer");
    is_int(gpumem_array_from_dlpack(ctx, p, 0, &back), GPUMEM_OK, "imported back");
    gpumem_array_kind(back, &kind);
    ok(kind == GPUMEM_MEMORY_PINNED && read_all(back, fb) && memcmp(fb, fv, sizeof fv) == 0,
       "a pinned array with the values");
    gpumem_array *dcopy = NULL;
    ok(gpumem_to_device(ctx, back, NULL, 0, &dcopy) == GPUMEM_OK && read_all(dcopy, fb) &&
           memcmp(fb, fv, sizeof fv) == 0,
       "which copies to the device");
    gpumem_array_release(dcopy);
    gpumem_array_release(back);
    if (gpumem_mapped_array(ctx, 1, (int64_t[]){4}, NULL, f32, 'C', NULL, 0, &ma) == GPUMEM_OK) {
        p = exported(ma, 0, GM_DL_CUDA_HOST, 0, dl_f32, NULL, "a mapped array: kDLCUDAHost 0");
        delete_tensor(p, 0);
    } else {
        skip(1, "the device cannot map host memory");
    }
    if (gpumem_managed_array(ctx, 1, (int64_t[]){4}, NULL, f32, 'C', GPUMEM_MANAGED_ATTACH_GLOBAL, &mg) ==
        GPUMEM_OK) {
        gpumem_array_copy(mg, fh, NULL);
        p = exported(mg, GPUMEM_DLPACK_VERSIONED, GM_DL_CUDA_MANAGED, 0, dl_f32, NULL,
                     "a managed array: kDLCUDAManaged 0");
        is_int(gpumem_array_from_dlpack(ctx, p, GPUMEM_DLPACK_VERSIONED, &back), GPUMEM_OK, "imported back");
        gpumem_array_kind(back, &kind);
        uint64_t mp = 0, bp = 0;
        gpumem_array_device_pointer(mg, &mp);
        gpumem_array_device_pointer(back, &bp);
        ok(kind == GPUMEM_MEMORY_MANAGED && bp == mp && read_all(back, fb) && memcmp(fb, fv, sizeof fv) == 0,
           "a managed array over the same memory, with the values");
        void *again = NULL;
        ok(gpumem_array_to_dlpack(back, 0, &again) == GPUMEM_OK &&
               tensor_of(again, 0)->device.device_type == GM_DL_CUDA_MANAGED,
           "which exports as managed again");
        delete_tensor(again, 0);
        gpumem_array_release(back);
    } else {
        skip(4, "no managed memory");
    }
    gpumem_array_release(fh);
    gpumem_array_release(pa);
    gpumem_array_release(ma);
    gpumem_array_release(mg);

    /* ---- dtypes */
    static const struct {
        gpumem_type type;
        uint8_t code, bits;
    } map[] = {
        {GPUMEM_BOOL, GM_DL_BOOL, 8},         {GPUMEM_INT8, GM_DL_INT, 8},
        {GPUMEM_INT16, GM_DL_INT, 16},        {GPUMEM_INT64, GM_DL_INT, 64},
        {GPUMEM_UINT8, GM_DL_UINT, 8},        {GPUMEM_UINT16, GM_DL_UINT, 16},
        {GPUMEM_UINT32, GM_DL_UINT, 32},      {GPUMEM_UINT64, GM_DL_UINT, 64},
        {GPUMEM_FLOAT16, GM_DL_FLOAT, 16},    {GPUMEM_FLOAT64, GM_DL_FLOAT, 64},
        {GPUMEM_COMPLEX64, GM_DL_COMPLEX, 64}, {GPUMEM_COMPLEX128, GM_DL_COMPLEX, 128},
    };
    good = 1;
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        const gpumem_dtype *dt = gpumem_dtype_builtin(map[i].type);
        gpumem_array *a = NULL, *imp = NULL;
        const gpumem_dtype *idt = NULL;
        void *tp = NULL;
        int fine = gpumem_device_array(ctx, 1, (int64_t[]){2}, NULL, dt, 'C', NULL, &a) == GPUMEM_OK &&
                   gpumem_array_to_dlpack(a, GPUMEM_DLPACK_VERSIONED, &tp) == GPUMEM_OK;
        gm_dl_tensor *t = fine ? tensor_of(tp, 1) : NULL;
        fine = fine && t->dtype.code == map[i].code && t->dtype.bits == map[i].bits && t->dtype.lanes == 1 &&
               gpumem_array_from_dlpack(ctx, tp, GPUMEM_DLPACK_VERSIONED, &imp) == GPUMEM_OK &&
               gpumem_array_dtype(imp, &idt) == GPUMEM_OK && idt == dt;
        if (!fine) {
            diag("  type %d: %s", (int)map[i].type, gpumem_last_error());
            if (tp != NULL && imp == NULL)
                delete_tensor(tp, 1);
        }
        good = good && fine;
        gpumem_array_release(imp);
        gpumem_array_release(a);
    }
    ok(good, "bool, int, uint, float16/64 and complex export with their codes and bits and import back");

    gpumem_dtype *rec = NULL, *raw = NULL, *big = NULL;
    gpumem_dtype_from_descr("[('x', '<f4'), ('n', '<i4')]", &rec);
    gpumem_dtype_from_typestr("|V4", &raw);
    const int little = ((const union { uint16_t u; uint8_t c[2]; }){1}).c[0] == 1;
    gpumem_dtype_from_typestr(little ? ">f4" : "<f4", &big);
    gpumem_array *ra = NULL, *va = NULL, *ba = NULL;
    gpumem_device_array(ctx, 1, (int64_t[]){2}, NULL, rec, 'C', NULL, &ra);
    gpumem_device_array(ctx, 1, (int64_t[]){2}, NULL, raw, 'C', NULL, &va);
    gpumem_device_array(ctx, 1, (int64_t[]){2}, NULL, big, 'C', NULL, &ba);
    p = NULL;
    is_int(gpumem_array_to_dlpack(ra, 0, &p), GPUMEM_ERROR_INVALID_DTYPE, "a record has no DLPack type");
    like(gpumem_last_error(), "'|V8' (a record)", "the message names the dtype");
    is_int(gpumem_array_to_dlpack(va, GPUMEM_DLPACK_VERSIONED, &p), GPUMEM_ERROR_INVALID_DTYPE,
           "nor raw bytes");
    like(gpumem_last_error(), "'|V4'", "the message names it");
    is_int(gpumem_array_to_dlpack(ba, 0, &p), GPUMEM_ERROR_INVALID_DTYPE, "nor a non-native byte order");
    like(gpumem_last_error(), "native byte order", "says so");
    ok(p == NULL, "no tensor came out of the failures");
    gpumem_array_release(ra);
    gpumem_array_release(va);
    gpumem_array_release(ba);
    gpumem_dtype_release(rec);
    gpumem_dtype_release(raw);
    gpumem_dtype_release(big);

    int32_t odd[8] = {0};
    gpumem_array *oa = NULL;
    gpumem_host_array_wrap(odd, 1, (int64_t[]){3}, (int64_t[]){6}, i32, &oa);
    is_int(gpumem_array_to_dlpack(oa, 0, &p), GPUMEM_ERROR_INVALID_VALUE,
           "a byte stride of 6 for 4-byte items");
    like(gpumem_last_error(), "not a multiple of the item size", "says why");
    gpumem_array_release(oa);
    gpumem_host_array_wrap(odd, 2, (int64_t[]){1, 3}, (int64_t[]){6, 4}, i32, &oa);
    p = exported(oa, 0, GM_DL_CPU, 0, dl_i32, (int64_t[]){3, 1},
                 "an odd stride on an axis of extent 1 gives C's stride");
    delete_tensor(p, 0);
    gpumem_array_release(oa);
    gpumem_array *empty = NULL, *eback = NULL;
    gpumem_device_array(ctx, 2, (int64_t[]){0, 4}, NULL, i32, 'C', NULL, &empty);
    p = exported(empty, 0, GM_DL_CUDA, 0, dl_i32, NULL, "an empty array");
    ok(tensor_of(p, 0)->data == NULL, "has data NULL");
    is_int(gpumem_array_from_dlpack(ctx, p, 0, &eback), GPUMEM_OK, "and imports back");
    gpumem_array_release(eback);
    gpumem_array_release(empty);
    gpumem_array *zd = device_iota(ctx, 0, NULL, 0);
    p = exported(zd, GPUMEM_DLPACK_VERSIONED, GM_DL_CUDA, 0, dl_i32, NULL, "a 0-d array");
    is_int(gpumem_array_from_dlpack(ctx, p, GPUMEM_DLPACK_VERSIONED, &eback), GPUMEM_OK, "imports back");
    int32_t zv = -1;
    gpumem_array_get_item(eback, NULL, &zv, NULL);
    is_int(zv, 0, "with its value");
    gpumem_array_release(eback);
    gpumem_array_release(zd);

    /* ---- import of another producer's tensors: the deleter exactly once */
    producer pr;
    make_tensor(&pr, (void *)(uintptr_t)dptr, 5, GM_DL_CUDA, 0);
    pr.legacy.dl_tensor.byte_offset = 4;
    pr.versioned.dl_tensor.byte_offset = 4;
    for (int versioned = 0; versioned <= 1; versioned++) {
        const char *which = versioned ? "versioned" : "legacy";
        void *tp = versioned ? (void *)&pr.versioned : (void *)&pr.legacy;
        unsigned fl = versioned ? GPUMEM_DLPACK_VERSIONED : 0;
        gpumem_array *a = NULL, *v = NULL;
        deleted = 0;
        is_int(gpumem_array_from_dlpack(ctx, tp, fl, &a), GPUMEM_OK, "a foreign producer's tensor, byte_offset 4");
        uint64_t ap = 0;
        gpumem_array_device_pointer(a, &ap);
        ok(ap == dptr + 4 && read_all(a, vals) && vals[0] == 1 && vals[4] == 5,
           "%s: element 0 at data + byte_offset, C order for NULL strides", which);
        gpumem_slice tail[1] = {{2, GPUMEM_SLICE_DEFAULT, 1}};
        gpumem_array_slice(a, tail, 1, &v);
        gpumem_array_retain(a);
        gpumem_array_release(a);
        gpumem_array_release(a);
        is_int(deleted, 0, "the deleter waits for the last reference (a view)");
        gpumem_array_release(v);
        is_int(deleted, 1, "then runs exactly once");
    }
    pr.versioned.version.minor = 7;
    gpumem_array *a7 = NULL;
    deleted = 0;
    is_int(gpumem_array_from_dlpack(ctx, &pr.versioned, GPUMEM_DLPACK_VERSIONED, &a7), GPUMEM_OK,
           "a newer minor version 1.7 is read");
    gpumem_array_release(a7);
    is_int(deleted, 1, "and deleted once");
    pr.versioned.deleter = NULL;
    is_int(gpumem_array_from_dlpack(ctx, &pr.versioned, GPUMEM_DLPACK_VERSIONED, &a7), GPUMEM_OK,
           "a tensor without a deleter");
    gpumem_array_release(a7);

    /* strides in elements, honored */
    make_tensor(&pr, (void *)(uintptr_t)dptr, 3, GM_DL_CUDA, 0);
    pr.strides[0] = 2;
    pr.legacy.dl_tensor.strides = pr.strides;
    is_int(gpumem_array_from_dlpack(ctx, &pr.legacy, 0, &a7), GPUMEM_OK, "strides of 2 elements");
    int64_t bs = 0;
    gpumem_array_strides(a7, &bs);
    ok(bs == 8 && read_all(a7, vals) && vals[0] == 0 && vals[1] == 2 && vals[2] == 4, "read every other element");
    gpumem_array_release(a7);

    /* contexts and devices */
    int ndev = 0;
    gpumem_device_count(&ndev);
    if (ndev >= 2) {
        gpumem_array *a1 = NULL;
        gpumem_context *c1 = NULL;
        make_tensor(&pr, (void *)(uintptr_t)dptr, 2, GM_DL_CUDA, 1);
        refused(&pr.legacy, 0, GPUMEM_ERROR_CONTEXT_MISMATCH, "device 1", "a tensor of device 1 into ctx of 0");
        deleted = 0;
        int dev = -1;
        ok(gpumem_array_from_dlpack(NULL, &pr.legacy, 0, &a1) == GPUMEM_OK &&
               gpumem_array_context(a1, &c1) == GPUMEM_OK && gpumem_context_get_device(c1, &dev) == GPUMEM_OK &&
               dev == 1,
           "with ctx NULL, a context on the tensor's device 1");
        gpumem_array_release(a1);
        is_int(deleted, 1, "deleted once");
    } else {
        skip(3, "one device only");
    }

    /* ---- unsupported tensors: clear errors, the deleter not called */
    make_tensor(&pr, (void *)(uintptr_t)dptr, 2, GM_DL_CUDA, 0);
    producer bad = pr;
    bad.versioned.version.major = 2;
    refused(&bad.versioned, GPUMEM_DLPACK_VERSIONED, GPUMEM_ERROR_NOT_SUPPORTED, "version is 2.1",
            "major version 2");
    bad.versioned.version.major = 0;
    refused(&bad.versioned, GPUMEM_DLPACK_VERSIONED, GPUMEM_ERROR_NOT_SUPPORTED, "only major version 1",
            "major version 0");
    bad = pr;
    bad.versioned.flags = GM_DLPACK_FLAG_BITMASK_READ_ONLY;
    refused(&bad.versioned, GPUMEM_DLPACK_VERSIONED, GPUMEM_ERROR_INVALID_VALUE, "read-only", "a read-only tensor");
    bad = pr;
    bad.legacy.dl_tensor.dtype = (gm_dl_data_type){GM_DL_BFLOAT, 16, 1};
    refused(&bad.legacy, 0, GPUMEM_ERROR_INVALID_DTYPE, "kDLBfloat", "bfloat16");
    bad.legacy.dl_tensor.dtype = (gm_dl_data_type){GM_DL_FLOAT, 32, 4};
    refused(&bad.legacy, 0, GPUMEM_ERROR_INVALID_DTYPE, "lanes 4", "four lanes");
    bad.legacy.dl_tensor.dtype = (gm_dl_data_type){GM_DL_INT, 24, 1};
    refused(&bad.legacy, 0, GPUMEM_ERROR_INVALID_DTYPE, "bits 24", "24-bit integers");
    bad.legacy.dl_tensor.dtype = (gm_dl_data_type){GM_DL_OPAQUE_HANDLE, 64, 1};
    refused(&bad.legacy, 0, GPUMEM_ERROR_INVALID_DTYPE, "kDLOpaqueHandle", "opaque handles");
    bad = pr;
    bad.legacy.dl_tensor.device.device_type = GM_DL_OPENCL;
    refused(&bad.legacy, 0, GPUMEM_ERROR_NOT_SUPPORTED, "kDLOpenCL", "an OpenCL tensor");
    bad.legacy.dl_tensor.device.device_type = GM_DL_ROCM;
    refused(&bad.legacy, 0, GPUMEM_ERROR_NOT_SUPPORTED, "kDLROCM", "a ROCm tensor");
    bad.legacy.dl_tensor.device = (gm_dl_device){GM_DL_CUDA, 7};
    refused(&bad.legacy, 0, GPUMEM_ERROR_INVALID_DEVICE, "device 7", "a device that does not exist");
    bad.legacy.dl_tensor.device = (gm_dl_device){GM_DL_CUDA, -1};
    refused(&bad.legacy, 0, GPUMEM_ERROR_INVALID_DEVICE, "device -1", "device -1");
    bad = pr;
    bad.legacy.dl_tensor.ndim = -2;
    refused(&bad.legacy, 0, GPUMEM_ERROR_INVALID_VALUE, "ndim -2", "ndim -2");
    bad.legacy.dl_tensor.ndim = 33;
    refused(&bad.legacy, 0, GPUMEM_ERROR_TOO_MANY_DIMENSIONS, "33 dimensions", "33 dimensions");
    bad = pr;
    bad.legacy.dl_tensor.shape = NULL;
    refused(&bad.legacy, 0, GPUMEM_ERROR_INVALID_VALUE, "shape is NULL", "shape NULL");
    bad = pr;
    bad.shape[0] = -4;
    bad.legacy.dl_tensor.shape = bad.shape;
    refused(&bad.legacy, 0, GPUMEM_ERROR_NEGATIVE_DIMENSION, "-4", "a negative extent");
    bad = pr;
    bad.legacy.dl_tensor.data = NULL;
    refused(&bad.legacy, 0, GPUMEM_ERROR_NULL_ARGUMENT, "data is NULL", "data NULL for 2 elements");
    bad.legacy.dl_tensor.byte_offset = 256;
    refused(&bad.legacy, 0, GPUMEM_ERROR_NULL_ARGUMENT, "data is NULL", "data NULL with a byte_offset");
    bad = pr;
    bad.legacy.dl_tensor.byte_offset = UINT64_MAX - 2;
    refused(&bad.legacy, 0, GPUMEM_ERROR_OVERFLOW, "byte_offset", "a byte_offset past the address space");
    bad = pr;
    bad.strides[0] = INT64_MAX / 2;
    bad.legacy.dl_tensor.strides = bad.strides;
    refused(&bad.legacy, 0, GPUMEM_ERROR_OVERFLOW, "overflows in bytes", "a stride that overflows in bytes");
    bad.strides[0] = INT64_MAX / 8;
    /* A high address, so the elements pass the top whatever the backend's
     * addresses look like (the simulator's are high, a GPU's are low). */
    bad.legacy.dl_tensor.data = (void *)(uintptr_t)0xF000000000000000u;
    refused(&bad.legacy, 0, GPUMEM_ERROR_OVERFLOW, "address space", "strides that reach past the address space");
    bad = pr;
    refused(&bad.legacy, 0x40, GPUMEM_ERROR_INVALID_VALUE, "flags 0x40", "unknown flags");
    gpumem_array *na = NULL;
    is_int(gpumem_array_from_dlpack(ctx, NULL, 0, &na), GPUMEM_ERROR_NULL_ARGUMENT, "tensor NULL");
    is_int(gpumem_array_from_dlpack(ctx, &pr.legacy, 0, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "array NULL");
    /* An empty tensor may have data NULL. */
    bad = pr;
    bad.shape[0] = 0;
    bad.legacy.dl_tensor.shape = bad.shape;
    bad.legacy.dl_tensor.data = NULL;
    deleted = 0;
    is_int(gpumem_array_from_dlpack(ctx, &bad.legacy, 0, &na), GPUMEM_OK, "an empty tensor with data NULL");
    gpumem_array_release(na);
    is_int(deleted, 1, "deleted once");
    /* Host memory. */
    bad = pr;
    bad.legacy.dl_tensor.device = (gm_dl_device){GM_DL_CPU, 0};
    bad.legacy.dl_tensor.data = vals;
    deleted = 0;
    is_int(gpumem_array_from_dlpack(ctx, &bad.legacy, 0, &na), GPUMEM_OK, "a kDLCPU tensor");
    gpumem_array_release(na);
    is_int(deleted, 1, "deleted once");

    /* kDLCUDAManaged and kDLCUDAHost claims are checked with the driver: the
     * CPU reads such memory, so device memory sent as either is refused. */
    {
        int64_t n = 64;
        gpumem_array *dev = device_iota(ctx, 1, &n, 0), *mgd = NULL, *pin = NULL;
        uint64_t devp = 0;
        void *mptr = NULL, *pptr = NULL;
        gpumem_array_device_pointer(dev, &devp);
        producer q;
        make_tensor(&q, (void *)(uintptr_t)devp, n, GM_DL_CUDA_MANAGED, 0);
        refused(&q.legacy, 0, GPUMEM_ERROR_INVALID_VALUE, "device memory", "device memory sent as kDLCUDAManaged");
        make_tensor(&q, (void *)(uintptr_t)devp, n, GM_DL_CUDA_HOST, 0);
        refused(&q.legacy, 0, GPUMEM_ERROR_INVALID_VALUE, "device memory", "device memory sent as kDLCUDAHost");
        gpumem_managed_array(ctx, 1, &n, NULL, i32, 'C', GPUMEM_MANAGED_ATTACH_GLOBAL, &mgd);
        gpumem_array_host_pointer(mgd, &mptr);
        make_tensor(&q, mptr, n + 1, GM_DL_CUDA_MANAGED, 0);
        refused(&q.legacy, 0, GPUMEM_ERROR_INVALID_VALUE, "not inside one allocation",
                "a kDLCUDAManaged tensor one element past its allocation");
        make_tensor(&q, mptr, n, GM_DL_CUDA_HOST, 0);
        refused(&q.legacy, 0, GPUMEM_ERROR_INVALID_VALUE, "managed memory", "managed memory sent as kDLCUDAHost");
        gpumem_pinned_array(ctx, 1, &n, NULL, i32, 'C', &pin);
        gpumem_array_host_pointer(pin, &pptr);
        make_tensor(&q, pptr, n, GM_DL_CUDA_HOST, 0);
        deleted = 0;
        is_int(gpumem_array_from_dlpack(ctx, &q.legacy, 0, &na), GPUMEM_OK, "pinned memory as kDLCUDAHost");
        gpumem_array_release(na);
        make_tensor(&q, mptr, n, GM_DL_CUDA_MANAGED, 0);
        is_int(gpumem_array_from_dlpack(ctx, &q.legacy, 0, &na), GPUMEM_OK, "managed memory as kDLCUDAManaged");
        gpumem_array_release(na);
        is_int(deleted, 2, "each deleted once");
        gpumem_array_release(pin);
        gpumem_array_release(mgd);
        gpumem_array_release(dev);
    }

    /* A kDLCPU claim is checked the same way: device memory sent as host
     * memory is refused (a host copy of it crashed), host-side memory of
     * every kind imports. */
    {
        int64_t n = 64;
        gpumem_array *dev = device_iota(ctx, 1, &n, 0), *mgd = NULL, *pin = NULL, *out = NULL;
        uint64_t devp = 0;
        void *mptr = NULL, *pptr = NULL;
        static int32_t host[64], got[64];
        for (int i = 0; i < 64; i++)
            host[i] = 3 * i + 1;
        gpumem_array_device_pointer(dev, &devp);
        producer q;
        make_tensor(&q, (void *)(uintptr_t)devp, n, GM_DL_CPU, 0);
        refused(&q.legacy, 0, GPUMEM_ERROR_INVALID_VALUE, "says kDLCPU, but", "device memory sent as kDLCPU");
        like(gpumem_last_error(), "is device memory to the driver", "the message says what the memory is");
        make_tensor(&q, (void *)(uintptr_t)devp, n, GM_DL_CPU, 0);
        q.versioned.dl_tensor.byte_offset = 8;
        q.versioned.dl_tensor.shape = q.shape;
        refused(&q.versioned, GPUMEM_DLPACK_VERSIONED, GPUMEM_ERROR_INVALID_VALUE, "kDLCPU",
                "device memory sent as kDLCPU, versioned, with a byte_offset");
        /* the first element before the device allocation (no memory the
         * driver knows, on the simulator), the second one in it */
        make_tensor(&q, (void *)(uintptr_t)(devp - 4), 2, GM_DL_CPU, 0);
        refused(&q.legacy, 0, GPUMEM_ERROR_INVALID_VALUE, "is device memory",
                "a kDLCPU tensor whose last element is device memory");
        /* element 0 in the device allocation, the lowest and highest bytes
         * 2^40 bytes either side of it */
        make_tensor(&q, (void *)(uintptr_t)devp, 2, GM_DL_CPU, 0);
        q.legacy.dl_tensor.ndim = 2;
        q.shape[1] = 2;
        q.strides[0] = -(INT64_C(1) << 38);
        q.strides[1] = INT64_C(1) << 38;
        q.legacy.dl_tensor.strides = q.strides;
        refused(&q.legacy, 0, GPUMEM_ERROR_INVALID_VALUE, "is device memory",
                "a kDLCPU tensor whose element 0 is device memory, between its lowest and highest bytes");
        int32_t first = 0;
        gpumem_array *one = NULL;
        gpumem_array_slice(dev, &(gpumem_slice){0, 1, 1}, 1, &one);
        ok(gpumem_array_get_item(one, (int64_t[]){0}, &first, NULL) == GPUMEM_OK && first == 0,
           "the device memory is unchanged");
        gpumem_array_release(one);

        /* pageable, pinned and managed memory import as host arrays, and copies read them */
        gpumem_pinned_array(ctx, 1, &n, NULL, i32, 'C', &pin);
        gpumem_array_host_pointer(pin, &pptr);
        memcpy(pptr, host, sizeof host);
        gpumem_managed_array(ctx, 1, &n, NULL, i32, 'C', GPUMEM_MANAGED_ATTACH_GLOBAL, &mgd);
        gpumem_array_host_pointer(mgd, &mptr);
        if (mptr != NULL)
            memcpy(mptr, host, sizeof host);
        void *const where[3] = {host, pptr, mptr};
        const char *const kinds[3] = {"pageable", "pinned", "managed"};
        gpumem_host_array_wrap(got, 1, &n, NULL, i32, &out);
        for (int k = 0; k < 3; k++) {
            if (where[k] == NULL) {
                skip(2, "no managed memory");
                continue;
            }
            make_tensor(&q, where[k], n, GM_DL_CPU, 0);
            deleted = 0;
            gpumem_array *d2 = NULL;
            memset(got, 0, sizeof got);
            gpumem_status st = gpumem_array_from_dlpack(ctx, &q.legacy, 0, &na);
            if (st == GPUMEM_OK)
                st = gpumem_to_device(ctx, na, NULL, 0, &d2);
            if (st == GPUMEM_OK)
                st = gpumem_copy_to_host(d2, out, NULL);
            if (!ok(st == GPUMEM_OK, "%s memory as kDLCPU imports and copies", kinds[k]))
                diag("%s", gpumem_last_error());
            ok(memcmp(got, host, sizeof host) == 0, "%s: the values went through", kinds[k]);
            gpumem_array_release(d2);
            gpumem_array_release(na);
            na = NULL;
        }
        gpumem_array_release(out);
        gpumem_array_release(pin);
        gpumem_array_release(mgd);
        gpumem_array_release(dev);
    }

    gpumem_array_release(d);
    gpumem_context_release(ctx);
    done_testing();
    return exit_status();
}
