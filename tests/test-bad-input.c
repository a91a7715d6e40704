/* The bad-input table: invalid calls across the whole public API.  Each must
 * return the status its header documents, leave a message in
 * gpumem_last_error() that names the offending argument (or field), and
 * change nothing: every out-parameter points into a canary buffer that is
 * compared byte for byte afterwards, and the contents of the fixture's
 * arrays are compared with their snapshots after every call. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gpumem.h>

#include "tap.h"

#define CANARY_BYTE 0xAB
static unsigned char canary[512];

/* An out-parameter of type T that must stay untouched. */
#define OUT(T) ((T)(void *)canary)

static gpumem_context *ctx, *ctx2;
static gpumem_array *h, *d, *df, *d1, *p, *e, *g2, *ro;
static int32_t hbuf[4][6];
static int32_t hsnap[4][6], dsnap[24], psnap[24];
static gpumem_stream *s, *s2;
static gpumem_pool *pool;
static gpumem_host_pool *hpool;
static gpumem_module *mod;
static gpumem_device_data *dd;
static const gpumem_dtype *i32, *f32;
static int cases;

/* Reads a device (or pinned) int32 array of 24 elements into out. */
static void read24(gpumem_array *a, int32_t *out)
{
    gpumem_array *w = NULL;
    memset(out, 0, 24 * sizeof *out);
    int ndim = 0;
    int64_t shape[2] = {0, 0};
    gpumem_array_ndim(a, &ndim);
    gpumem_array_shape(a, shape);
    if (gpumem_host_array_wrap(out, ndim, shape, NULL, i32, &w) == GPUMEM_OK)
        gpumem_copy_to_host(a, w, NULL);
    gpumem_array_release(w);
}

static int unchanged(void)
{
    for (size_t i = 0; i < sizeof canary; i++)
        if (canary[i] != CANARY_BYTE)
            return 0;
    int32_t now[24];
    if (memcmp(hbuf, hsnap, sizeof hbuf) != 0)
        return 0;
    read24(d, now);
    if (memcmp(now, dsnap, sizeof now) != 0)
        return 0;
    read24(p, now);
    return memcmp(now, psnap, sizeof now) == 0;
}

static void check(gpumem_status got, gpumem_status want, const char *needle, const char *expr)
{
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", gpumem_last_error());
    int status_ok = got == want, named = strstr(msg, needle) != NULL, same = unchanged();
    cases++;
    ok(status_ok && named && same, "%s -> %s", expr, gpumem_status_string(want));
    if (!status_ok)
        diag("  status %s", gpumem_status_string(got));
    if (!named)
        diag("  message does not name '%s': %s", needle, msg);
    if (!same)
        diag("  an output or an array changed");
    memset(canary, CANARY_BYTE, sizeof canary);
}

#define BAD(call, want, needle) check((call), (want), (needle), #call)

static void fixture(void)
{
    if (test_on_sim()) {
        setenv("GPUMEM_SIM_DEVICES", "2", 1);
        setenv("GPUMEM_SIM_MEMORY", "64M", 1);
    }
    if (gpumem_context_create(0, &ctx) != GPUMEM_OK)
        bail_out("no context: %s", gpumem_last_error());
    int count = 0;
    gpumem_device_count(&count);
    if (count < 2 && !test_on_sim()) {
        gpumem_context_release(ctx);
        plan_skip_all("the bad-input table needs two devices for its wrong-context calls, and this machine "
                      "has one (it runs on the simulator, which has two)");
    }
    if (count < 2 || gpumem_context_create(1, &ctx2) != GPUMEM_OK)
        bail_out("the bad-input table needs two devices (on the simulator: GPUMEM_SIM_DEVICES=2)");
    i32 = gpumem_dtype_builtin(GPUMEM_INT32);
    f32 = gpumem_dtype_builtin(GPUMEM_FLOAT32);
    for (int i = 0; i < 24; i++)
        hbuf[i / 6][i % 6] = i * 7 - 3;
    int ok_ = gpumem_host_array_wrap(hbuf, 2, (int64_t[]){4, 6}, NULL, i32, &h) == GPUMEM_OK &&
              gpumem_to_device(ctx, h, NULL, 0, &d) == GPUMEM_OK &&
              gpumem_device_array(ctx, 2, (int64_t[]){4, 6}, NULL, f32, 'C', NULL, &df) == GPUMEM_OK &&
              gpumem_device_array(ctx, 1, (int64_t[]){24}, NULL, i32, 'C', NULL, &d1) == GPUMEM_OK &&
              gpumem_pinned_array(ctx, 2, (int64_t[]){4, 6}, NULL, i32, 'C', &p) == GPUMEM_OK &&
              gpumem_array_copy(p, h, NULL) == GPUMEM_OK &&
              gpumem_device_array(ctx, 2, (int64_t[]){0, 6}, NULL, i32, 'C', NULL, &e) == GPUMEM_OK &&
              gpumem_device_array(ctx2, 2, (int64_t[]){4, 6}, NULL, i32, 'C', NULL, &g2) == GPUMEM_OK &&
              gpumem_to_device(ctx, h, NULL, 0, &ro) == GPUMEM_OK && gpumem_array_set_readonly(ro, 1) == GPUMEM_OK &&
              gpumem_stream_create(ctx, 0, &s) == GPUMEM_OK && gpumem_stream_create(ctx2, 0, &s2) == GPUMEM_OK &&
              gpumem_pool_create(ctx, 0, &pool) == GPUMEM_OK &&
              gpumem_host_pool_create(ctx, 0, &hpool) == GPUMEM_OK && gpumem_device_data_create(0, &dd) == GPUMEM_OK;
    static const char ptx[] = ".version 7.0\n.target sm_50\n.address_size 64\n"
                              ".visible .global .align 4 .u32 g[4];\n"
                              ".visible .entry k()\n{\n    ret;\n}\n";
    ok_ = ok_ && gpumem_module_load(ctx, ptx, sizeof ptx, &mod) == GPUMEM_OK;
    if (!ok_)
        bail_out("fixture: %s", gpumem_last_error());
    memcpy(hsnap, hbuf, sizeof hbuf);
    read24(d, dsnap);
    read24(p, psnap);
    memset(canary, CANARY_BYTE, sizeof canary);
}

static void contexts_and_devices(void)
{
    BAD(gpumem_backend(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'name'");
    BAD(gpumem_driver_version(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'version'");
    BAD(gpumem_device_count(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'count'");
    BAD(gpumem_device_name(0, NULL, 8), GPUMEM_ERROR_NULL_ARGUMENT, "'name'");
    BAD(gpumem_device_name(0, OUT(char *), 0), GPUMEM_ERROR_INVALID_VALUE, "size");
    BAD(gpumem_device_name(-1, OUT(char *), 8), GPUMEM_ERROR_INVALID_DEVICE, "device -1");
    BAD(gpumem_device_name(99, OUT(char *), 8), GPUMEM_ERROR_INVALID_DEVICE, "device 99");
    BAD(gpumem_device_compute_capability(0, NULL, OUT(int *)), GPUMEM_ERROR_NULL_ARGUMENT, "'major'");
    BAD(gpumem_device_compute_capability(0, OUT(int *), NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'minor'");
    BAD(gpumem_device_compute_capability(7, OUT(int *), OUT(int *) + 1), GPUMEM_ERROR_INVALID_DEVICE, "device 7");
    BAD(gpumem_device_total_memory(0, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'bytes'");
    BAD(gpumem_device_total_memory(-3, OUT(uint64_t *)), GPUMEM_ERROR_INVALID_DEVICE, "device -3");
    BAD(gpumem_device_attribute(0, GPUMEM_DEVICE_WARP_SIZE, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'value'");
    BAD(gpumem_device_attribute(0, (gpumem_device_attr)9999, OUT(int *)), GPUMEM_ERROR_INVALID_VALUE, "attr 9999");
    BAD(gpumem_device_attribute(0, (gpumem_device_attr)-1, OUT(int *)), GPUMEM_ERROR_INVALID_VALUE, "attr -1");
    BAD(gpumem_device_attribute(5, GPUMEM_DEVICE_WARP_SIZE, OUT(int *)), GPUMEM_ERROR_INVALID_DEVICE, "device 5");
    BAD(gpumem_get_default_device(0, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'device'");
    BAD(gpumem_get_default_device(42, OUT(int *)), GPUMEM_ERROR_INVALID_DEVICE, "fallback");
    BAD(gpumem_context_create(0, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'ctx'");
    BAD(gpumem_context_create(-1, OUT(gpumem_context **)), GPUMEM_ERROR_INVALID_DEVICE, "device -1");
    BAD(gpumem_context_create(2, OUT(gpumem_context **)), GPUMEM_ERROR_INVALID_DEVICE, "device 2");
    BAD(gpumem_context_create_default(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'ctx'");
    BAD(gpumem_context_retain(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'ctx'");
    BAD(gpumem_context_get_device(NULL, OUT(int *)), GPUMEM_ERROR_NULL_ARGUMENT, "'ctx'");
    BAD(gpumem_context_get_device(ctx, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'device'");
    BAD(gpumem_context_selection(NULL, OUT(gpumem_selection *)), GPUMEM_ERROR_NULL_ARGUMENT, "'ctx'");
    BAD(gpumem_context_selection(ctx, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'rule'");
    BAD(gpumem_context_refcount(NULL, OUT(int *)), GPUMEM_ERROR_NULL_ARGUMENT, "'ctx'");
    BAD(gpumem_context_refcount(ctx, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'count'");
    BAD(gpumem_memory_info(ctx, NULL, OUT(uint64_t *)), GPUMEM_ERROR_NULL_ARGUMENT, "'free_bytes'");
    BAD(gpumem_memory_info(ctx, OUT(uint64_t *), NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'total_bytes'");
    BAD(gpumem_autoinit(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'ctx'");
    BAD(gpumem_context_set_pool(ctx2, pool), GPUMEM_ERROR_CONTEXT_MISMATCH, "pool");
    BAD(gpumem_context_synchronize(NULL), GPUMEM_OK, ""); /* NULL is the default context: not an error */
}

static void dtypes(void)
{
    BAD(gpumem_dtype_from_typestr(NULL, OUT(gpumem_dtype **)), GPUMEM_ERROR_NULL_ARGUMENT, "'typestr'");
    BAD(gpumem_dtype_from_typestr("<f4", NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'dtype'");
    BAD(gpumem_dtype_from_typestr("<f3", OUT(gpumem_dtype **)), GPUMEM_ERROR_INVALID_DTYPE, "<f3");
    BAD(gpumem_dtype_from_typestr("", OUT(gpumem_dtype **)), GPUMEM_ERROR_INVALID_DTYPE, "typestr");
    BAD(gpumem_dtype_from_typestr("|V-1", OUT(gpumem_dtype **)), GPUMEM_ERROR_INVALID_DTYPE, "|V-1");
    BAD(gpumem_dtype_from_typestr("<f4 ", OUT(gpumem_dtype **)), GPUMEM_ERROR_INVALID_DTYPE, "<f4 ");
    BAD(gpumem_dtype_from_typestr("|V99999999999999999999", OUT(gpumem_dtype **)), GPUMEM_ERROR_INVALID_DTYPE,
        "|V99999999999999999999");
    BAD(gpumem_dtype_typestr(NULL, OUT(char *), 24), GPUMEM_ERROR_NULL_ARGUMENT, "'dtype'");
    BAD(gpumem_dtype_typestr(f32, NULL, 24), GPUMEM_ERROR_NULL_ARGUMENT, "'buf'");
    BAD(gpumem_dtype_from_descr(NULL, OUT(gpumem_dtype **)), GPUMEM_ERROR_NULL_ARGUMENT, "'descr'");
    BAD(gpumem_dtype_from_descr("[('a', '<f4')]", NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'dtype'");
    BAD(gpumem_dtype_from_descr("[('a', '<f4')", OUT(gpumem_dtype **)), GPUMEM_ERROR_INVALID_DTYPE, "descr");
    BAD(gpumem_dtype_from_descr("[('a', '<f4'), ('a', '<i4')]", OUT(gpumem_dtype **)), GPUMEM_ERROR_INVALID_DTYPE,
        "'a'");
    BAD(gpumem_dtype_from_descr("[('a', '<f4', (-1,))]", OUT(gpumem_dtype **)), GPUMEM_ERROR_INVALID_DTYPE,
        "negative");
    BAD(gpumem_dtype_from_descr("[('\\N{x}', '<f4')]", OUT(gpumem_dtype **)), GPUMEM_ERROR_INVALID_DTYPE,
        "named escape");
    BAD(gpumem_dtype_descr(NULL, OUT(char *), 64), GPUMEM_ERROR_NULL_ARGUMENT, "'dtype'");
    BAD(gpumem_dtype_record_create(NULL, 1, GPUMEM_RECORD_PACKED, 0, OUT(gpumem_dtype **)),
        GPUMEM_ERROR_NULL_ARGUMENT, "'fields'");
    gpumem_field fields[2] = {{.name = "x", .dtype = f32}, {.name = "x", .dtype = i32}};
    BAD(gpumem_dtype_record_create(fields, 2, GPUMEM_RECORD_PACKED, 0, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'dtype'");
    BAD(gpumem_dtype_record_create(fields, 2, GPUMEM_RECORD_PACKED, 0, OUT(gpumem_dtype **)),
        GPUMEM_ERROR_INVALID_DTYPE, "'x'");
    gpumem_field nodt[1] = {{.name = "y", .dtype = NULL}};
    BAD(gpumem_dtype_record_create(nodt, 1, GPUMEM_RECORD_PACKED, 0, OUT(gpumem_dtype **)),
        GPUMEM_ERROR_INVALID_DTYPE, "'y'");
    BAD(gpumem_dtype_record_create(fields, 1, (gpumem_record_layout)77, 0, OUT(gpumem_dtype **)),
        GPUMEM_ERROR_INVALID_VALUE, "layout");
    BAD(gpumem_dtype_record_create(fields, 1, GPUMEM_RECORD_PACKED, 2, OUT(gpumem_dtype **)),
        GPUMEM_ERROR_INVALID_DTYPE, "itemsize");
    BAD(gpumem_dtype_retain(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'dtype'");
    BAD(gpumem_dtype_itemsize(NULL, OUT(size_t *)), GPUMEM_ERROR_NULL_ARGUMENT, "'dtype'");
    BAD(gpumem_dtype_itemsize(f32, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'itemsize'");
    BAD(gpumem_dtype_alignment(NULL, OUT(size_t *)), GPUMEM_ERROR_NULL_ARGUMENT, "'dtype'");
    BAD(gpumem_dtype_alignment(f32, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'alignment'");
    BAD(gpumem_dtype_type(NULL, OUT(gpumem_type *), NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'dtype'");
    BAD(gpumem_dtype_field_count(NULL, OUT(size_t *)), GPUMEM_ERROR_NULL_ARGUMENT, "'dtype'");
    BAD(gpumem_dtype_field_count(f32, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'count'");
    BAD(gpumem_dtype_field(f32, 0, OUT(const char **), NULL, NULL, NULL, NULL), GPUMEM_ERROR_INDEX_OUT_OF_RANGE,
        "field 0");
    BAD(gpumem_dtype_field_index(f32, "x", OUT(size_t *)), GPUMEM_ERROR_NOT_FOUND, "'x'");
    BAD(gpumem_dtype_field_index(f32, NULL, OUT(size_t *)), GPUMEM_ERROR_NULL_ARGUMENT, "'name'");
}

static void array_creation(void)
{
    int64_t sh[2] = {4, 6};
    BAD(gpumem_host_array_wrap(NULL, 2, sh, NULL, i32, OUT(gpumem_array **)), GPUMEM_ERROR_NULL_ARGUMENT, "data");
    BAD(gpumem_host_array_wrap(hbuf, 2, NULL, NULL, i32, OUT(gpumem_array **)), GPUMEM_ERROR_NULL_ARGUMENT, "'shape'");
    BAD(gpumem_host_array_wrap(hbuf, 2, sh, NULL, NULL, OUT(gpumem_array **)), GPUMEM_ERROR_NULL_ARGUMENT, "'dtype'");
    BAD(gpumem_host_array_wrap(hbuf, 2, sh, NULL, i32, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'array'");
    BAD(gpumem_host_array_wrap(hbuf, -1, sh, NULL, i32, OUT(gpumem_array **)), GPUMEM_ERROR_INVALID_VALUE, "ndim -1");
    BAD(gpumem_host_array_wrap(hbuf, GPUMEM_MAX_NDIM + 1, sh, NULL, i32, OUT(gpumem_array **)),
        GPUMEM_ERROR_TOO_MANY_DIMENSIONS, "ndim");
    BAD(gpumem_host_array_wrap(hbuf, 2, (int64_t[]){4, -6}, NULL, i32, OUT(gpumem_array **)),
        GPUMEM_ERROR_NEGATIVE_DIMENSION, "shape[1]");
    BAD(gpumem_host_array_wrap(hbuf, 2, (int64_t[]){INT64_MAX, 6}, NULL, i32, OUT(gpumem_array **)),
        GPUMEM_ERROR_OVERFLOW, "shape");
    BAD(gpumem_host_array(2, sh, i32, 'Z', OUT(gpumem_array **)), GPUMEM_ERROR_INVALID_ORDER, "'Z'");
    BAD(gpumem_host_array(2, sh, i32, 'C', NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'array'");
    BAD(gpumem_host_array(2, sh, NULL, 'C', OUT(gpumem_array **)), GPUMEM_ERROR_NULL_ARGUMENT, "'dtype'");
    BAD(gpumem_device_array(ctx, 2, sh, NULL, i32, 'C', NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'array'");
    BAD(gpumem_device_array(ctx, 2, sh, NULL, NULL, 'C', NULL, OUT(gpumem_array **)), GPUMEM_ERROR_NULL_ARGUMENT,
        "'dtype'");
    BAD(gpumem_device_array(ctx, 2, NULL, NULL, i32, 'C', NULL, OUT(gpumem_array **)), GPUMEM_ERROR_NULL_ARGUMENT,
        "'shape'");
    BAD(gpumem_device_array(ctx, 2, sh, NULL, i32, 'X', NULL, OUT(gpumem_array **)), GPUMEM_ERROR_INVALID_ORDER,
        "'X'");
    BAD(gpumem_device_array(ctx, 2, (int64_t[]){-1, 6}, NULL, i32, 'C', NULL, OUT(gpumem_array **)),
        GPUMEM_ERROR_NEGATIVE_DIMENSION, "shape[0]");
    BAD(gpumem_device_array(ctx, 2, (int64_t[]){INT64_MAX / 2, 6}, NULL, i32, 'C', NULL, OUT(gpumem_array **)),
        GPUMEM_ERROR_OVERFLOW, "shape");
    BAD(gpumem_device_array(ctx, 1, (int64_t[]){INT64_C(1) << 40}, NULL, i32, 'C', NULL, OUT(gpumem_array **)),
        GPUMEM_ERROR_OUT_OF_MEMORY, "cuMemAlloc");
    BAD(gpumem_device_array(ctx, 2, sh, NULL, i32, 'C', s2, OUT(gpumem_array **)), GPUMEM_ERROR_CONTEXT_MISMATCH,
        "stream");
    BAD(gpumem_device_array(ctx, -1, sh, NULL, i32, 'C', NULL, OUT(gpumem_array **)), GPUMEM_ERROR_INVALID_VALUE,
        "ndim -1");
    BAD(gpumem_device_array_like(ctx, NULL, NULL, OUT(gpumem_array **)), GPUMEM_ERROR_NULL_ARGUMENT, "'like'");
    BAD(gpumem_device_array_like(ctx, d, NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'array'");
    BAD(gpumem_device_record(ctx, NULL, NULL, OUT(gpumem_array **)), GPUMEM_ERROR_NULL_ARGUMENT, "'dtype'");
    BAD(gpumem_device_record(ctx, i32, NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'array'");
    BAD(gpumem_to_device(ctx, NULL, NULL, 0, OUT(gpumem_array **)), GPUMEM_ERROR_NULL_ARGUMENT, "'host'");
    BAD(gpumem_to_device(ctx, h, NULL, 0, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'array'");
    BAD(gpumem_to_device(ctx, h, NULL, 0x80, OUT(gpumem_array **)), GPUMEM_ERROR_INVALID_VALUE, "flags");
    BAD(gpumem_to_device(ctx, h, s2, 0, OUT(gpumem_array **)), GPUMEM_ERROR_CONTEXT_MISMATCH, "stream");
    BAD(gpumem_pinned_array(ctx, 2, sh, NULL, i32, 'C', NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'array'");
    BAD(gpumem_pinned_array(ctx, 2, sh, NULL, i32, 'q', OUT(gpumem_array **)), GPUMEM_ERROR_INVALID_ORDER, "'q'");
    BAD(gpumem_pinned_array(ctx, 2, (int64_t[]){-4, 6}, NULL, i32, 'C', OUT(gpumem_array **)),
        GPUMEM_ERROR_NEGATIVE_DIMENSION, "shape[0]");
    BAD(gpumem_mapped_array(ctx, 2, sh, NULL, i32, 'C', NULL, 0x8000, OUT(gpumem_array **)),
        GPUMEM_ERROR_INVALID_VALUE, "flags");
    BAD(gpumem_mapped_array(ctx, 2, sh, NULL, i32, 'C', NULL, 0, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'array'");
    BAD(gpumem_managed_array(ctx, 2, sh, NULL, i32, 'C', 0, OUT(gpumem_array **)), GPUMEM_ERROR_INVALID_VALUE,
        "flags");
    BAD(gpumem_managed_array(ctx, 2, sh, NULL, NULL, 'C', GPUMEM_MANAGED_ATTACH_GLOBAL, OUT(gpumem_array **)),
        GPUMEM_ERROR_NULL_ARGUMENT, "'dtype'");
}

static void views(void)
{
    gpumem_slice all2[2] = {GPUMEM_SLICE_ALL, GPUMEM_SLICE_ALL};
    BAD(gpumem_array_slice(NULL, all2, 2, OUT(gpumem_array **)), GPUMEM_ERROR_NULL_ARGUMENT, "'array'");
    BAD(gpumem_array_slice(d, all2, 2, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'view'");
    BAD(gpumem_array_slice(d, NULL, 2, OUT(gpumem_array **)), GPUMEM_ERROR_NULL_ARGUMENT, "'slices'");
    BAD(gpumem_array_slice(d, all2, 3, OUT(gpumem_array **)), GPUMEM_ERROR_INVALID_VALUE, "nslices 3");
    BAD(gpumem_array_slice(d, all2, -1, OUT(gpumem_array **)), GPUMEM_ERROR_INVALID_VALUE, "nslices -1");
    BAD(gpumem_array_slice(d, (gpumem_slice[]){{0, GPUMEM_SLICE_INDEX, 2}}, 1, OUT(gpumem_array **)),
        GPUMEM_ERROR_INVALID_VALUE, "axis 0: an index");
    BAD(gpumem_array_slice(d, (gpumem_slice[]){GPUMEM_INDEX(-9)}, 1, OUT(gpumem_array **)),
        GPUMEM_ERROR_INDEX_OUT_OF_RANGE, "index -9");
    BAD(gpumem_array_slice(d, (gpumem_slice[]){{5, 6, 1}}, 1, OUT(gpumem_array **)),
        GPUMEM_ERROR_INDEX_OUT_OF_RANGE, "start 5");
    BAD(gpumem_array_slice(d, (gpumem_slice[]){{0, -9, 1}}, 1, OUT(gpumem_array **)),
        GPUMEM_ERROR_INDEX_OUT_OF_RANGE, "stop -9");
    BAD(gpumem_array_slice(d, (gpumem_slice[]){GPUMEM_SLICE_ALL, {INT64_MAX, 1, 1}}, 2, OUT(gpumem_array **)),
        GPUMEM_ERROR_INDEX_OUT_OF_RANGE, "axis 1");
    BAD(gpumem_array_transpose(NULL, NULL, OUT(gpumem_array **)), GPUMEM_ERROR_NULL_ARGUMENT, "'array'");
    BAD(gpumem_array_transpose(d, NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'view'");
    BAD(gpumem_array_transpose(d, (int[]){0, 0}, OUT(gpumem_array **)), GPUMEM_ERROR_INVALID_VALUE, "axes");
    BAD(gpumem_array_transpose(d, (int[]){0, 2}, OUT(gpumem_array **)), GPUMEM_ERROR_INVALID_VALUE, "axes");
    BAD(gpumem_array_transpose(d, (int[]){-3, 0}, OUT(gpumem_array **)), GPUMEM_ERROR_INVALID_VALUE, "axes");
    BAD(gpumem_array_view(NULL, f32, OUT(gpumem_array **)), GPUMEM_ERROR_NULL_ARGUMENT, "'array'");
    BAD(gpumem_array_view(d, NULL, OUT(gpumem_array **)), GPUMEM_ERROR_NULL_ARGUMENT, "'dtype'");
    BAD(gpumem_array_view(d, f32, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'view'");
    BAD(gpumem_array_view(d, gpumem_dtype_builtin(GPUMEM_COMPLEX128), OUT(gpumem_array **)),
        GPUMEM_ERROR_INVALID_VALUE, "item size");
    BAD(gpumem_array_reshape(NULL, 1, (int64_t[]){24}, 'C', 0, NULL, OUT(gpumem_array **)),
        GPUMEM_ERROR_NULL_ARGUMENT, "'array'");
    BAD(gpumem_array_reshape(d, 1, NULL, 'C', 0, NULL, OUT(gpumem_array **)), GPUMEM_ERROR_NULL_ARGUMENT, "'shape'");
    BAD(gpumem_array_reshape(d, 1, (int64_t[]){24}, 'C', 0, NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'result'");
    BAD(gpumem_array_reshape(d, 1, (int64_t[]){25}, 'C', 0, NULL, OUT(gpumem_array **)),
        GPUMEM_ERROR_INVALID_RESHAPE, "25");
    BAD(gpumem_array_reshape(d, 2, (int64_t[]){-1, -1}, 'C', 0, NULL, OUT(gpumem_array **)),
        GPUMEM_ERROR_INVALID_RESHAPE, "-1");
    BAD(gpumem_array_reshape(d, 2, (int64_t[]){-2, 12}, 'C', 0, NULL, OUT(gpumem_array **)),
        GPUMEM_ERROR_INVALID_RESHAPE, "-2");
    BAD(gpumem_array_reshape(d, 1, (int64_t[]){24}, 'W', 0, NULL, OUT(gpumem_array **)), GPUMEM_ERROR_INVALID_ORDER,
        "'W'");
    BAD(gpumem_array_reshape(d, 1, (int64_t[]){24}, 'F', GPUMEM_NO_COPY, NULL, OUT(gpumem_array **)),
        GPUMEM_ERROR_COPY_REQUIRED, "a copy is required");
    BAD(gpumem_array_reshape(d, 1, (int64_t[]){24}, 'C', 0x40, NULL, OUT(gpumem_array **)),
        GPUMEM_ERROR_INVALID_VALUE, "flags");
    BAD(gpumem_array_reshape(d, GPUMEM_MAX_NDIM + 1, (int64_t[GPUMEM_MAX_NDIM + 1]){24}, 'C', 0, NULL,
                             OUT(gpumem_array **)), GPUMEM_ERROR_TOO_MANY_DIMENSIONS, "ndim");
    BAD(gpumem_array_ravel(NULL, 'C', 0, NULL, OUT(gpumem_array **)), GPUMEM_ERROR_NULL_ARGUMENT, "'array'");
    BAD(gpumem_array_ravel(d, 'C', 0, NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'result'");
    BAD(gpumem_array_ravel(d, 'K', 0, NULL, OUT(gpumem_array **)), GPUMEM_ERROR_INVALID_ORDER, "'K'");
    BAD(gpumem_array_split(NULL, 4, OUT(gpumem_array **), 8, OUT(size_t *) + 8), GPUMEM_ERROR_NULL_ARGUMENT,
        "'array'");
    BAD(gpumem_array_split(d, 4, OUT(gpumem_array **), 8, OUT(size_t *) + 8), GPUMEM_ERROR_INVALID_VALUE,
        "2 dimensions");
    BAD(gpumem_array_split(d1, 0, OUT(gpumem_array **), 8, OUT(size_t *) + 8), GPUMEM_ERROR_INVALID_SECTION,
        "section 0");
    BAD(gpumem_array_split(d1, -4, OUT(gpumem_array **), 8, OUT(size_t *) + 8), GPUMEM_ERROR_INVALID_SECTION,
        "section -4");
    BAD(gpumem_array_split(d1, INT64_MIN, OUT(gpumem_array **), 8, OUT(size_t *) + 8), GPUMEM_ERROR_INVALID_SECTION,
        "section");
    BAD(gpumem_array_split(d1, 4, OUT(gpumem_array **), 8, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'count'");
}

static void properties(void)
{
    BAD(gpumem_array_ndim(NULL, OUT(int *)), GPUMEM_ERROR_NULL_ARGUMENT, "'array'");
    BAD(gpumem_array_ndim(d, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'ndim'");
    BAD(gpumem_array_shape(NULL, OUT(int64_t *)), GPUMEM_ERROR_NULL_ARGUMENT, "'array'");
    BAD(gpumem_array_shape(d, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'shape'");
    BAD(gpumem_array_strides(NULL, OUT(int64_t *)), GPUMEM_ERROR_NULL_ARGUMENT, "'array'");
    BAD(gpumem_array_strides(d, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'strides'");
    BAD(gpumem_array_dtype(NULL, OUT(const gpumem_dtype **)), GPUMEM_ERROR_NULL_ARGUMENT, "'array'");
    BAD(gpumem_array_dtype(d, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'dtype'");
    BAD(gpumem_array_size(NULL, OUT(int64_t *)), GPUMEM_ERROR_NULL_ARGUMENT, "'array'");
    BAD(gpumem_array_size(d, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'size'");
    BAD(gpumem_array_nbytes(NULL, OUT(int64_t *)), GPUMEM_ERROR_NULL_ARGUMENT, "'array'");
    BAD(gpumem_array_nbytes(d, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'nbytes'");
    BAD(gpumem_array_kind(NULL, OUT(gpumem_memory_kind *)), GPUMEM_ERROR_NULL_ARGUMENT, "'array'");
    BAD(gpumem_array_kind(d, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'kind'");
    BAD(gpumem_array_context(NULL, OUT(gpumem_context **)), GPUMEM_ERROR_NULL_ARGUMENT, "'array'");
    BAD(gpumem_array_context(d, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'ctx'");
    BAD(gpumem_array_device_pointer(NULL, OUT(uint64_t *)), GPUMEM_ERROR_NULL_ARGUMENT, "'array'");
    BAD(gpumem_array_device_pointer(d, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'pointer'");
    BAD(gpumem_array_device_pointer(h, OUT(uint64_t *)), GPUMEM_ERROR_INVALID_VALUE, "host");
    BAD(gpumem_array_host_pointer(NULL, OUT(void **)), GPUMEM_ERROR_NULL_ARGUMENT, "'array'");
    BAD(gpumem_array_host_pointer(d, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'pointer'");
    BAD(gpumem_array_host_pointer(d, OUT(void **)), GPUMEM_ERROR_INVALID_VALUE, "device");
    BAD(gpumem_array_is_c_contiguous(NULL, OUT(int *)), GPUMEM_ERROR_NULL_ARGUMENT, "'array'");
    BAD(gpumem_array_is_c_contiguous(d, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'result'");
    BAD(gpumem_array_is_f_contiguous(NULL, OUT(int *)), GPUMEM_ERROR_NULL_ARGUMENT, "'array'");
    BAD(gpumem_array_is_f_contiguous(d, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'result'");
    BAD(gpumem_array_is_readonly(NULL, OUT(int *)), GPUMEM_ERROR_NULL_ARGUMENT, "'array'");
    BAD(gpumem_array_is_readonly(d, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'readonly'");
    BAD(gpumem_array_set_readonly(NULL, 1), GPUMEM_ERROR_NULL_ARGUMENT, "'array'");
    BAD(gpumem_array_retain(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'array'");
}

static void copies_and_items(void)
{
    int32_t v = 99;
    BAD(gpumem_array_copy(NULL, d, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'dst'");
    BAD(gpumem_array_copy(d, NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'src'");
    BAD(gpumem_array_copy(d, d1, NULL), GPUMEM_ERROR_SHAPE_MISMATCH, "shape");
    BAD(gpumem_array_copy(d, df, NULL), GPUMEM_ERROR_DTYPE_MISMATCH, "dtype");
    BAD(gpumem_array_copy(d, e, NULL), GPUMEM_ERROR_SHAPE_MISMATCH, "shape");
    BAD(gpumem_array_copy(d, h, s2), GPUMEM_ERROR_CONTEXT_MISMATCH, "stream");
    BAD(gpumem_array_copy(ro, h, NULL), GPUMEM_ERROR_INVALID_VALUE, "read-only");
    BAD(gpumem_copy_to_host(NULL, h, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'src'");
    BAD(gpumem_copy_to_host(d, d, NULL), GPUMEM_ERROR_INVALID_VALUE, "dst");
    BAD(gpumem_copy_to_host(d1, h, NULL), GPUMEM_ERROR_SHAPE_MISMATCH, "shape");
    BAD(gpumem_copy_to_host(df, h, NULL), GPUMEM_ERROR_DTYPE_MISMATCH, "dtype");
    BAD(gpumem_copy_to_device(NULL, h, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'dst'");
    BAD(gpumem_copy_to_device(d, NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'src'");
    BAD(gpumem_copy_to_device(h, h, NULL), GPUMEM_ERROR_INVALID_VALUE, "dst");
    BAD(gpumem_copy_to_device(d, d1, NULL), GPUMEM_ERROR_SHAPE_MISMATCH, "shape");
    BAD(gpumem_copy_to_device(g2, h, s), GPUMEM_ERROR_CONTEXT_MISMATCH, "stream");
    BAD(gpumem_array_fill(NULL, &v, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'array'");
    BAD(gpumem_array_fill(d, NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'value'");
    BAD(gpumem_array_fill(d, &v, s2), GPUMEM_ERROR_CONTEXT_MISMATCH, "stream");
    BAD(gpumem_array_fill(ro, &v, NULL), GPUMEM_ERROR_INVALID_VALUE, "read-only");
    BAD(gpumem_array_get_item(NULL, (int64_t[]){0, 0}, OUT(void *), NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'array'");
    BAD(gpumem_array_get_item(d, NULL, OUT(void *), NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'index'");
    BAD(gpumem_array_get_item(d, (int64_t[]){0, 0}, NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'value'");
    BAD(gpumem_array_get_item(d, (int64_t[]){4, 0}, OUT(void *), NULL), GPUMEM_ERROR_INDEX_OUT_OF_RANGE, "index 4");
    BAD(gpumem_array_get_item(d, (int64_t[]){0, -7}, OUT(void *), NULL), GPUMEM_ERROR_INDEX_OUT_OF_RANGE,
        "index -7");
    BAD(gpumem_array_get_item(d, (int64_t[]){INT64_MIN, 0}, OUT(void *), NULL), GPUMEM_ERROR_INDEX_OUT_OF_RANGE,
        "index");
    BAD(gpumem_array_get_item(d, (int64_t[]){0, 0}, OUT(void *), s2), GPUMEM_ERROR_CONTEXT_MISMATCH, "stream");
    BAD(gpumem_array_set_item(NULL, (int64_t[]){0, 0}, &v, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'array'");
    BAD(gpumem_array_set_item(d, NULL, &v, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'index'");
    BAD(gpumem_array_set_item(d, (int64_t[]){0, 0}, NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'value'");
    BAD(gpumem_array_set_item(d, (int64_t[]){0, 6}, &v, NULL), GPUMEM_ERROR_INDEX_OUT_OF_RANGE, "index 6");
    BAD(gpumem_array_set_item(ro, (int64_t[]){0, 0}, &v, NULL), GPUMEM_ERROR_INVALID_VALUE, "read-only");
    BAD(gpumem_array_set_item(d, (int64_t[]){1, 1}, &v, s2), GPUMEM_ERROR_CONTEXT_MISMATCH, "stream");
}

static void streams_and_cleanup(void)
{
    BAD(gpumem_stream_create(ctx, 0, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'stream'");
    BAD(gpumem_stream_create(ctx, 0x10, OUT(gpumem_stream **)), GPUMEM_ERROR_INVALID_VALUE, "flags");
    BAD(gpumem_stream_default(ctx, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'stream'");
    BAD(gpumem_stream_synchronize(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'stream'");
    BAD(gpumem_stream_query(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'stream'");
    BAD(gpumem_stream_context(NULL, OUT(gpumem_context **)), GPUMEM_ERROR_NULL_ARGUMENT, "'stream'");
    BAD(gpumem_stream_context(s, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'ctx'");
    BAD(gpumem_stream_auto_synchronize_begin(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'stream'");
    BAD(gpumem_stream_auto_synchronize_end(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'stream'");
    BAD(gpumem_stream_auto_synchronize_end(s), GPUMEM_ERROR_INVALID_STATE, "auto_synchronize");
    BAD(gpumem_context_set_dealloc_limits(ctx, 0, -0.5), GPUMEM_ERROR_INVALID_VALUE, "max_ratio");
    BAD(gpumem_context_set_dealloc_limits(ctx, 0, 1.5), GPUMEM_ERROR_INVALID_VALUE, "max_ratio");
    BAD(gpumem_context_set_dealloc_limits(ctx, 0, 0.0 / 0.0), GPUMEM_ERROR_INVALID_VALUE, "max_ratio");
    BAD(gpumem_context_get_dealloc_limits(ctx, NULL, OUT(double *)), GPUMEM_ERROR_NULL_ARGUMENT, "'max_count'");
    BAD(gpumem_context_get_dealloc_limits(ctx, OUT(size_t *), NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'max_ratio'");
    BAD(gpumem_defer_cleanup_end(ctx), GPUMEM_ERROR_INVALID_STATE, "defer_cleanup");
}

static void pools_and_host(void)
{
    gpumem_array *arrs[1] = {h};
    BAD(gpumem_pool_create(ctx, 0, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'pool'");
    BAD(gpumem_pool_create(ctx, 0x1, OUT(gpumem_pool **)), GPUMEM_ERROR_INVALID_VALUE, "flags");
    BAD(gpumem_pool_allocate(NULL, 16, NULL, OUT(gpumem_allocation **)), GPUMEM_ERROR_NULL_ARGUMENT, "'pool'");
    BAD(gpumem_pool_allocate(pool, 16, NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'alloc'");
    BAD(gpumem_pool_allocate(pool, SIZE_MAX, NULL, OUT(gpumem_allocation **)), GPUMEM_ERROR_OVERFLOW, "size");
    BAD(gpumem_pool_allocate(pool, 16, s2, OUT(gpumem_allocation **)), GPUMEM_ERROR_CONTEXT_MISMATCH, "stream");
    BAD(gpumem_pool_block_size(SIZE_MAX, OUT(size_t *)), GPUMEM_ERROR_OVERFLOW, "size");
    BAD(gpumem_pool_block_size(16, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'block_size'");
    BAD(gpumem_pool_context(NULL, OUT(gpumem_context **)), GPUMEM_ERROR_NULL_ARGUMENT, "'pool'");
    BAD(gpumem_pool_held_blocks(NULL, OUT(uint64_t *)), GPUMEM_ERROR_NULL_ARGUMENT, "'pool'");
    BAD(gpumem_pool_held_blocks(pool, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'count'");
    BAD(gpumem_pool_active_blocks(pool, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'count'");
    BAD(gpumem_pool_free_held(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'pool'");
    BAD(gpumem_pool_stop_holding(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'pool'");
    BAD(gpumem_pool_stats(pool, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'stats'");
    struct gpumem_pool_stats small = {.size = 1};
    BAD(gpumem_pool_stats(pool, &small), GPUMEM_ERROR_INVALID_VALUE, "size");
    BAD(gpumem_allocation_pointer(NULL, OUT(uint64_t *)), GPUMEM_ERROR_NULL_ARGUMENT, "'alloc'");
    BAD(gpumem_allocation_size(NULL, OUT(size_t *)), GPUMEM_ERROR_NULL_ARGUMENT, "'alloc'");
    BAD(gpumem_allocation_free(NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'alloc'");
    BAD(gpumem_host_pool_create(ctx, 0, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'pool'");
    BAD(gpumem_host_pool_allocate_bytes(NULL, 16, OUT(gpumem_allocation **)), GPUMEM_ERROR_NULL_ARGUMENT, "'pool'");
    BAD(gpumem_host_pool_allocate_bytes(hpool, 16, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'alloc'");
    BAD(gpumem_host_pool_allocate(hpool, 2, (int64_t[]){4, -1}, i32, 'C', OUT(gpumem_array **)),
        GPUMEM_ERROR_NEGATIVE_DIMENSION, "shape[1]");
    BAD(gpumem_host_pool_allocate(hpool, 1, (int64_t[]){4}, i32, 'Y', OUT(gpumem_array **)),
        GPUMEM_ERROR_INVALID_ORDER, "'Y'");
    BAD(gpumem_host_pool_allocate(hpool, 1, (int64_t[]){4}, NULL, 'C', OUT(gpumem_array **)),
        GPUMEM_ERROR_NULL_ARGUMENT, "'dtype'");
    BAD(gpumem_pinned(ctx, NULL, 1, OUT(gpumem_registration **)), GPUMEM_ERROR_NULL_ARGUMENT, "'arrays'");
    BAD(gpumem_pinned(ctx, arrs, 1, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'registration'");
    BAD(gpumem_pinned(ctx, (gpumem_array *const[]){h, NULL}, 2, OUT(gpumem_registration **)),
        GPUMEM_ERROR_NULL_ARGUMENT, "arrays[1]");
    BAD(gpumem_unpinned(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'registration'");
    BAD(gpumem_mapped(ctx, arrs, 1, NULL, NULL, OUT(gpumem_array **)), GPUMEM_ERROR_NULL_ARGUMENT,
        "'registration'");
    BAD(gpumem_mapped(ctx, arrs, 1, NULL, OUT(gpumem_registration **), NULL), GPUMEM_ERROR_NULL_ARGUMENT,
        "'device_views'");
    BAD(gpumem_mapped(ctx, arrs, 1, s2, OUT(gpumem_registration **), OUT(gpumem_array **) + 8),
        GPUMEM_ERROR_CONTEXT_MISMATCH, "stream");
    BAD(gpumem_unmapped(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'registration'");
    BAD(gpumem_register(ctx, NULL, 1, OUT(gpumem_registration **)), GPUMEM_ERROR_NULL_ARGUMENT, "'arrays'");
    BAD(gpumem_register(ctx, (gpumem_array *const[]){NULL}, 1, OUT(gpumem_registration **)),
        GPUMEM_ERROR_NULL_ARGUMENT, "arrays[0]");
    BAD(gpumem_deregister(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'registration'");
    BAD(gpumem_host_is_pinned(hbuf, 16, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'result'");
}

static gpumem_status never(gpumem_context *c, const void *key, size_t key_size, void *user, void **value)
{
    (void)c, (void)key, (void)key_size, (void)user, (void)value;
    return GPUMEM_ERROR_INTERNAL;
}

static void kernels_and_occupancy(void)
{
    gpumem_function *fn = NULL;
    gpumem_module_get_function(mod, "k", &fn);
    BAD(gpumem_memoize(ctx, NULL, 4, never, NULL, NULL, OUT(void **)), GPUMEM_ERROR_NULL_ARGUMENT, "'key'");
    BAD(gpumem_memoize(ctx, "k", 1, NULL, NULL, NULL, OUT(void **)), GPUMEM_ERROR_NULL_ARGUMENT, "'create'");
    BAD(gpumem_memoize(ctx, "k", 1, never, NULL, NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'value'");
    BAD(gpumem_module_load(ctx, NULL, 16, OUT(gpumem_module **)), GPUMEM_ERROR_NULL_ARGUMENT, "'image'");
    BAD(gpumem_module_load(ctx, "x", 1, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'module'");
    BAD(gpumem_module_load(ctx, "not an image", 13, OUT(gpumem_module **)), GPUMEM_ERROR_DRIVER, "cuModuleLoadDataEx");
    BAD(gpumem_module_retain(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'module'");
    BAD(gpumem_module_context(NULL, OUT(gpumem_context **)), GPUMEM_ERROR_NULL_ARGUMENT, "'module'");
    BAD(gpumem_module_get_function(NULL, "k", OUT(gpumem_function **)), GPUMEM_ERROR_NULL_ARGUMENT, "'module'");
    BAD(gpumem_module_get_function(mod, NULL, OUT(gpumem_function **)), GPUMEM_ERROR_NULL_ARGUMENT, "'name'");
    BAD(gpumem_module_get_function(mod, "k", NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'function'");
    BAD(gpumem_module_get_function(mod, "nope", OUT(gpumem_function **)), GPUMEM_ERROR_NOT_FOUND, "nope");
    BAD(gpumem_module_get_global(mod, "nope", OUT(uint64_t *), OUT(size_t *) + 8), GPUMEM_ERROR_NOT_FOUND, "nope");
    BAD(gpumem_module_get_global(mod, NULL, OUT(uint64_t *), OUT(size_t *) + 8), GPUMEM_ERROR_NULL_ARGUMENT,
        "'name'");
    BAD(gpumem_function_name(NULL, OUT(const char **)), GPUMEM_ERROR_NULL_ARGUMENT, "'function'");
    BAD(gpumem_function_attribute(fn, (gpumem_function_attr)999, OUT(int *)), GPUMEM_ERROR_INVALID_VALUE, "999");
    BAD(gpumem_function_attribute(fn, GPUMEM_FUNCTION_MAX_THREADS_PER_BLOCK, NULL), GPUMEM_ERROR_NULL_ARGUMENT,
        "'value'");
    BAD(gpumem_function_max_active_blocks(fn, 0, 0, OUT(int *)), GPUMEM_ERROR_INVALID_VALUE, "block_threads");
    BAD(gpumem_launch(NULL, (unsigned[]){1, 1, 1}, (unsigned[]){1, 1, 1}, 0, NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT,
        "'function'");
    BAD(gpumem_launch(fn, NULL, (unsigned[]){1, 1, 1}, 0, NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'grid'");
    BAD(gpumem_launch(fn, (unsigned[]){0, 1, 1}, (unsigned[]){1, 1, 1}, 0, NULL, NULL), GPUMEM_ERROR_INVALID_VALUE,
        "grid");
    BAD(gpumem_launch(fn, (unsigned[]){1, 1, 1}, (unsigned[]){1, 1, 1}, 0, s2, NULL), GPUMEM_ERROR_CONTEXT_MISMATCH,
        "stream");
    BAD(gpumem_const_array_like(mod, "nope", h, NULL, OUT(gpumem_array **)), GPUMEM_ERROR_NOT_FOUND, "nope");
    BAD(gpumem_const_array_like(mod, "g", h, NULL, OUT(gpumem_array **)), GPUMEM_ERROR_INVALID_VALUE, "bytes");
    BAD(gpumem_device_data_create(9, OUT(gpumem_device_data **)), GPUMEM_ERROR_INVALID_DEVICE, "device 9");
    BAD(gpumem_device_data_create(0, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'dd'");
    BAD(gpumem_device_data_get(dd, (gpumem_device_data_field)500, OUT(int *)), GPUMEM_ERROR_INVALID_VALUE, "500");
    BAD(gpumem_device_data_get(NULL, GPUMEM_DEVICE_DATA_MAX_THREADS, OUT(int *)), GPUMEM_ERROR_NULL_ARGUMENT, "'dd'");
    BAD(gpumem_device_data_align_bytes(dd, 0, OUT(size_t *)), GPUMEM_ERROR_INVALID_VALUE, "word_size");
    BAD(gpumem_device_data_align(dd, SIZE_MAX, 4, OUT(size_t *)), GPUMEM_ERROR_OVERFLOW, "bytes");
    BAD(gpumem_device_data_align_dtype(dd, 4, NULL, OUT(size_t *)), GPUMEM_ERROR_NULL_ARGUMENT, "'dtype'");
    BAD(gpumem_make_valid_tex_channel_count(0, OUT(int *)), GPUMEM_ERROR_INVALID_VALUE, "size");
    BAD(gpumem_make_valid_tex_channel_count(5, OUT(int *)), GPUMEM_ERROR_INVALID_VALUE, "size");
    gpumem_occupancy_record rec = {.size = sizeof rec};
    BAD(gpumem_occupancy(dd, 0, 0, 32, &rec), GPUMEM_ERROR_INVALID_VALUE, "threads");
    BAD(gpumem_occupancy(dd, 256, 0, -1, &rec), GPUMEM_ERROR_INVALID_VALUE, "registers");
    BAD(gpumem_occupancy(NULL, 256, 0, 32, &rec), GPUMEM_ERROR_NULL_ARGUMENT, "'dd'");
    BAD(gpumem_occupancy(dd, 256, 0, 32, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'record'");
}

static void interop(void)
{
    gpumem_cuda_array_interface good = {.size = sizeof good, .version = 3, .ndim = 1, .shape = {24},
                                        .typestr = "<i4"};
    gpumem_array_device_pointer(d, &good.data);
    gpumem_cuda_array_interface c;
    BAD(gpumem_array_interface(NULL, NULL, OUT(gpumem_cuda_array_interface *)), GPUMEM_ERROR_NULL_ARGUMENT,
        "'array'");
    BAD(gpumem_array_interface(d, NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'desc'");
    BAD(gpumem_array_interface(h, NULL, OUT(gpumem_cuda_array_interface *)), GPUMEM_ERROR_INVALID_VALUE, "host");
    BAD(gpumem_array_interface(d, s2, OUT(gpumem_cuda_array_interface *)), GPUMEM_ERROR_CONTEXT_MISMATCH, "stream");
    BAD(gpumem_as_cuda_array(ctx, NULL, 0, NULL, NULL, OUT(gpumem_array **)), GPUMEM_ERROR_NULL_ARGUMENT, "'desc'");
    BAD(gpumem_as_cuda_array(ctx, &good, 0, NULL, NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'array'");
    c = good, c.size = 8;
    BAD(gpumem_as_cuda_array(ctx, &c, 0, NULL, NULL, OUT(gpumem_array **)), GPUMEM_ERROR_INVALID_VALUE, "size");
    c = good, c.version = 1;
    BAD(gpumem_as_cuda_array(ctx, &c, 0, NULL, NULL, OUT(gpumem_array **)), GPUMEM_ERROR_INVALID_VALUE, "version 1");
    c = good;
    BAD(gpumem_as_cuda_array(ctx, &c, 0x100, NULL, NULL, OUT(gpumem_array **)), GPUMEM_ERROR_INVALID_VALUE, "flags");
    c = good, c.has_stream = 1, c.stream = 0;
    BAD(gpumem_as_cuda_array(ctx, &c, 0, NULL, NULL, OUT(gpumem_array **)), GPUMEM_ERROR_INVALID_VALUE,
        "desc->stream is 0");
    c = good, c.has_mask = 1;
    BAD(gpumem_as_cuda_array(ctx, &c, 0, NULL, NULL, OUT(gpumem_array **)), GPUMEM_ERROR_NOT_SUPPORTED, "has_mask");
    c = good, c.readonly = 1;
    BAD(gpumem_as_cuda_array(ctx, &c, 0, NULL, NULL, OUT(gpumem_array **)), GPUMEM_ERROR_INVALID_VALUE, "readonly");
    c = good, c.ndim = -1;
    BAD(gpumem_as_cuda_array(ctx, &c, 0, NULL, NULL, OUT(gpumem_array **)), GPUMEM_ERROR_INVALID_VALUE, "ndim -1");
    c = good, c.ndim = GPUMEM_MAX_NDIM + 1;
    BAD(gpumem_as_cuda_array(ctx, &c, 0, NULL, NULL, OUT(gpumem_array **)), GPUMEM_ERROR_TOO_MANY_DIMENSIONS,
        "ndim");
    c = good, c.shape[0] = -24;
    BAD(gpumem_as_cuda_array(ctx, &c, 0, NULL, NULL, OUT(gpumem_array **)), GPUMEM_ERROR_NEGATIVE_DIMENSION,
        "shape[0]");
    c = good, c.data = 0;
    BAD(gpumem_as_cuda_array(ctx, &c, 0, NULL, NULL, OUT(gpumem_array **)), GPUMEM_ERROR_NULL_ARGUMENT,
        "desc->data");
    c = good, memcpy(c.typestr, "<i9", 4);
    BAD(gpumem_as_cuda_array(ctx, &c, 0, NULL, NULL, OUT(gpumem_array **)), GPUMEM_ERROR_INVALID_DTYPE,
        "desc->typestr");
    c = good, memset(c.typestr, 'x', sizeof c.typestr);
    BAD(gpumem_as_cuda_array(ctx, &c, 0, NULL, NULL, OUT(gpumem_array **)), GPUMEM_ERROR_INVALID_DTYPE,
        "desc->typestr");
    c = good, c.descr = "[('a', '<f4')";
    BAD(gpumem_as_cuda_array(ctx, &c, 0, NULL, NULL, OUT(gpumem_array **)), GPUMEM_ERROR_INVALID_DTYPE,
        "desc->descr");
    c = good, c.descr = "[('a', '<f8')]";
    BAD(gpumem_as_cuda_array(ctx, &c, 0, NULL, NULL, OUT(gpumem_array **)), GPUMEM_ERROR_INVALID_DTYPE,
        "desc->descr");
    c = good, c.has_strides = 1, c.strides[0] = INT64_MAX;
    BAD(gpumem_as_cuda_array(ctx, &c, 0, NULL, NULL, OUT(gpumem_array **)), GPUMEM_ERROR_OVERFLOW, "strides");
    BAD(gpumem_array_to_dlpack(NULL, 0, OUT(void **)), GPUMEM_ERROR_NULL_ARGUMENT, "'array'");
    BAD(gpumem_array_to_dlpack(d, 0, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'tensor'");
    BAD(gpumem_array_to_dlpack(d, 0x40, OUT(void **)), GPUMEM_ERROR_INVALID_VALUE, "flags");
    BAD(gpumem_array_to_dlpack(d, GPUMEM_DLPACK_READ_ONLY, OUT(void **)), GPUMEM_ERROR_INVALID_VALUE,
        "GPUMEM_DLPACK_VERSIONED");
    BAD(gpumem_array_from_dlpack(ctx, NULL, 0, OUT(gpumem_array **)), GPUMEM_ERROR_NULL_ARGUMENT, "'tensor'");
    BAD(gpumem_array_from_dlpack(ctx, canary + 256, 0, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'array'");
    BAD(gpumem_array_from_dlpack(ctx, canary + 256, 0x40, OUT(gpumem_array **)), GPUMEM_ERROR_INVALID_VALUE,
        "flags");
    BAD(gpumem_is_cuda_array(0, NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'result'");
    gpumem_pointer_info info = {.size = 4};
    BAD(gpumem_is_cuda_array(good.data, OUT(int *), &info), GPUMEM_ERROR_INVALID_VALUE, "size");
    BAD(gpumem_ipc_get_handle(NULL, OUT(gpumem_ipc_handle *)), GPUMEM_ERROR_NULL_ARGUMENT, "'array'");
    BAD(gpumem_ipc_get_handle(d, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "'handle'");
    BAD(gpumem_ipc_get_handle(p, OUT(gpumem_ipc_handle *)), GPUMEM_ERROR_INVALID_VALUE, "host-side");
    BAD(gpumem_ipc_get_handle(e, OUT(gpumem_ipc_handle *)), GPUMEM_ERROR_INVALID_VALUE, "empty");
    BAD(gpumem_ipc_open(ctx, NULL, OUT(gpumem_array **)), GPUMEM_ERROR_NULL_ARGUMENT, "'handle'");
    static gpumem_ipc_handle zero;
    BAD(gpumem_ipc_open(ctx, &zero, OUT(gpumem_array **)), GPUMEM_ERROR_INVALID_VALUE, "magic");
}

int main(void)
{
    fixture();
    contexts_and_devices();
    dtypes();
    array_creation();
    views();
    properties();
    copies_and_items();
    streams_and_cleanup();
    pools_and_host();
    kernels_and_occupancy();
    interop();
    ok(cases >= 150, "%d invalid calls walked (at least 150)", cases);
    gpumem_array *all[] = {ro, g2, e, p, d1, df, d, h};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        gpumem_array_release(all[i]);
    gpumem_module_release(mod);
    gpumem_device_data_destroy(dd);
    gpumem_host_pool_destroy(hpool);
    gpumem_pool_destroy(pool);
    gpumem_stream_destroy(s2);
    gpumem_stream_destroy(s);
    gpumem_context_release(ctx2);
    gpumem_context_release(ctx);
    done_testing();
    return exit_status();
}
