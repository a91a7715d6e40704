/* The promises of module.h, occupancy.h, peer.h, trace.h, testing.h and
 * version.h (part of tests/test-promises-pool). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <pthread.h>

#include <gpumem.h>
#include <gpumem/testing.h>

#include "tap.h"
#include "child.h"
#include "arrays.h"
#include "promises.h"
#include "promises-pool.h"

/* ---- module.h --------------------------------------------------------------------------- */

const char k_ptx[] =
    ".version 7.0\n"
    ".target sm_50\n"
    ".address_size 64\n"
    ".visible .const .align 4 .b8 coeffs[64];\n"
    ".visible .global .align 4 .u32 table[4] = {1, 2, 3, 4};\n"
    ".visible .entry k(.param .u64 y)\n"
    "{\n"
    "    ret;\n"
    "}\n";

void test_module(void)
{
    gpumem_module *m = NULL, *msent = (gpumem_module *)&ctx;
    gpumem_function *f = NULL, *fsent = (gpumem_function *)&ctx;
    gpumem_context *c = NULL;
    const char *name = NULL;
    int v = 77;
    BAD(gpumem_module_load(ctx, k_ptx, 0, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "module");
    m = msent;
    BAD(gpumem_module_load(ctx, NULL, 0, &m), GPUMEM_ERROR_NULL_ARGUMENT, "image");
    BAD(gpumem_module_load(ctx, "", 0, &m), GPUMEM_ERROR_INVALID_VALUE, "'image'");
    BAD(gpumem_module_load(ctx, "", 1, &m), GPUMEM_ERROR_INVALID_VALUE, "'image'");
    {
        /* nvcc's __fatBinC_Wrapper_t (magic 0x466243B1) with no fat binary behind it */
        struct { uint32_t magic, version; const void *data, *filename; } wrap = {0x466243B1u, 1, NULL, NULL};
        BAD(gpumem_module_load(ctx, &wrap, sizeof wrap, &m), GPUMEM_ERROR_INVALID_VALUE, "'image'");
        /* a 32-bit ELF: its size cannot be read */
        unsigned char elf32[64] = {0x7f, 'E', 'L', 'F', 1, 1, 1};
        BAD(gpumem_module_load(ctx, elf32, 0, &m), GPUMEM_ERROR_INVALID_VALUE, "'size'");
        ok(m == msent, "failed loads leave *module alone");
    }
    MUST(gpumem_module_load(ctx, k_ptx, 0, &m));
    gpumem_module *m2 = NULL;
    GOOD(gpumem_module_load(ctx, k_ptx, sizeof k_ptx - 1, &m2));
    ok(m2 == m, "the same text with and without size is one module");
    GOOD(gpumem_module_release(m2));
    BAD(gpumem_module_retain(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "module");
    GOOD(gpumem_module_release(NULL));
    BAD(gpumem_module_context(NULL, &c), GPUMEM_ERROR_NULL_ARGUMENT, "module");
    BAD(gpumem_module_context(m, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "ctx");
    GOOD(gpumem_module_context(m, &c));
    ok(c == ctx, "the module's context");
    f = fsent;
    BAD(gpumem_module_get_function(m, "nope", &f), GPUMEM_ERROR_NOT_FOUND, "nope");
    ok(f == fsent, "an unknown kernel leaves *function alone");
    BAD(gpumem_module_get_function(m, NULL, &f), GPUMEM_ERROR_NULL_ARGUMENT, "name");
    BAD(gpumem_module_get_function(m, "k", NULL), GPUMEM_ERROR_NULL_ARGUMENT, "function");
    BAD(gpumem_module_get_function(NULL, "k", &f), GPUMEM_ERROR_NULL_ARGUMENT, "module");
    GOOD(gpumem_module_get_function(m, "k", &f));
    gpumem_function *f2 = NULL;
    GOOD(gpumem_module_get_function(m, "k", &f2));
    ok(f2 == f, "the same name gives the same handle");
    uint64_t gp = 77;
    size_t gb = 77;
    BAD(gpumem_module_get_global(m, "nope", &gp, &gb), GPUMEM_ERROR_NOT_FOUND, "nope");
    ok(gp == 77 && gb == 77, "an unknown global leaves the outputs alone");
    BAD(gpumem_module_get_global(m, NULL, &gp, &gb), GPUMEM_ERROR_NULL_ARGUMENT, "name");
    BAD(gpumem_module_get_global(NULL, "table", &gp, &gb), GPUMEM_ERROR_NULL_ARGUMENT, "module");
    GOOD(gpumem_module_get_global(m, "table", NULL, &gb));
    is_int(gb, 16, "table is 16 bytes");
    GOOD(gpumem_module_get_global(m, "coeffs", &gp, NULL));
    ok(gp != 0, "coeffs has an address");
    BAD(gpumem_function_name(NULL, &name), GPUMEM_ERROR_NULL_ARGUMENT, "function");
    BAD(gpumem_function_name(f, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "name");
    GOOD(gpumem_function_name(f, &name));
    is_str(name, "k", "the function's name");
    gpumem_module *fm = NULL;
    BAD(gpumem_function_module(NULL, &fm), GPUMEM_ERROR_NULL_ARGUMENT, "function");
    BAD(gpumem_function_module(f, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "module");
    GOOD(gpumem_function_module(f, &fm));
    ok(fm == m, "the function's module");
    BAD(gpumem_function_attribute(f, (gpumem_function_attr)10, &v), GPUMEM_ERROR_INVALID_VALUE, "attr");
    BAD(gpumem_function_attribute(f, (gpumem_function_attr)-1, &v), GPUMEM_ERROR_INVALID_VALUE, "attr");
    ok(v == 77, "an unknown attribute leaves *value alone");
    BAD(gpumem_function_attribute(f, GPUMEM_FUNCTION_NUM_REGS, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "value");
    BAD(gpumem_function_attribute(NULL, GPUMEM_FUNCTION_NUM_REGS, &v), GPUMEM_ERROR_NULL_ARGUMENT, "function");
    GOOD(gpumem_function_attribute(f, GPUMEM_FUNCTION_MAX_THREADS_PER_BLOCK, &v));
    ok(v > 0, "max threads per block %d", v);
    BAD(gpumem_function_set_attribute(f, GPUMEM_FUNCTION_NUM_REGS, 3), GPUMEM_ERROR_INVALID_VALUE, "attr");
    BAD(gpumem_function_set_attribute(f, (gpumem_function_attr)42, 3), GPUMEM_ERROR_INVALID_VALUE, "attr");
    BAD(gpumem_function_set_attribute(NULL, GPUMEM_FUNCTION_MAX_DYNAMIC_SHARED_SIZE_BYTES, 3),
        GPUMEM_ERROR_NULL_ARGUMENT, "function");
    int blocks = 77;
    BAD(gpumem_function_max_active_blocks(f, 0, 0, &blocks), GPUMEM_ERROR_INVALID_VALUE, "block_threads");
    BAD(gpumem_function_max_active_blocks(f, 32, 0, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "blocks");
    BAD(gpumem_function_max_active_blocks(NULL, 32, 0, &blocks), GPUMEM_ERROR_NULL_ARGUMENT, "function");
    BAD(gpumem_function_max_active_blocks(f, 32, 0, &blocks), GPUMEM_ERROR_NOT_SIMULATED, NULL);
    ok(blocks == 77, "failed max_active_blocks leaves *blocks alone");
    unsigned g1[3] = {1, 1, 1}, g0[3] = {1, 0, 1};
    BAD(gpumem_launch(f, g0, g1, 0, NULL, NULL), GPUMEM_ERROR_INVALID_VALUE, "grid");
    BAD(gpumem_launch(f, g1, g0, 0, NULL, NULL), GPUMEM_ERROR_INVALID_VALUE, "block");
    BAD(gpumem_launch(NULL, g1, g1, 0, NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "function");
    BAD(gpumem_launch(f, NULL, g1, 0, NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "grid");
    BAD(gpumem_launch(f, g1, NULL, 0, NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "block");
    gpumem_stream *s2 = NULL;
    MUST(gpumem_stream_create(ctx2, 0, &s2));
    BAD(gpumem_launch(f, g1, g1, 0, s2, NULL), GPUMEM_ERROR_CONTEXT_MISMATCH, "stream");
    BAD(gpumem_launch(f, g1, g1, 0, NULL, NULL), GPUMEM_ERROR_NOT_SIMULATED, NULL);
    /* const_array_like */
    int64_t shape[1] = {4};
    gpumem_array *src = device_iota(ctx, 1, shape, 7), *out = (gpumem_array *)&ctx;
    int64_t big[1] = {100};
    gpumem_array *bigsrc = device_iota(ctx, 1, big, 0);
    BAD(gpumem_const_array_like(m, "coeffs", bigsrc, NULL, &out), GPUMEM_ERROR_INVALID_VALUE, "array");
    BAD(gpumem_const_array_like(m, "nope", src, NULL, &out), GPUMEM_ERROR_NOT_FOUND, "nope");
    BAD(gpumem_const_array_like(m, NULL, src, NULL, &out), GPUMEM_ERROR_NULL_ARGUMENT, "symbol");
    BAD(gpumem_const_array_like(m, "coeffs", NULL, NULL, &out), GPUMEM_ERROR_NULL_ARGUMENT, "array");
    BAD(gpumem_const_array_like(m, "coeffs", src, NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "device_array");
    BAD(gpumem_const_array_like(NULL, "coeffs", src, NULL, &out), GPUMEM_ERROR_NULL_ARGUMENT, "module");
    BAD(gpumem_const_array_like(m, "coeffs", src, s2, &out), GPUMEM_ERROR_CONTEXT_MISMATCH, "stream");
    ok(out == (gpumem_array *)&ctx, "failed const_array_like calls leave *device_array alone");
    GOOD(gpumem_const_array_like(m, "coeffs", src, NULL, &out));
    int32_t got[4] = {0};
    ok(read_all(out, got) && got[0] == 7 && got[3] == 10, "const_array_like holds the data");
    GOOD(gpumem_module_get_global(m, "coeffs", &gp, NULL));
    uint64_t outp = 0;
    GOOD(gpumem_array_device_pointer(out, &outp));
    ok(outp == gp, "const_array_like's array lies over the symbol");
    gpumem_array_release(out);
    gpumem_array_release(src);
    gpumem_array_release(bigsrc);
    gpumem_stream_destroy(s2);
    /* release too often */
    GOOD(gpumem_module_release(m));
    BAD(gpumem_module_release(m), GPUMEM_ERROR_INVALID_STATE, "module");
    /* a module freed: dead */
    gpumem_context *own = NULL;
    MUST(gpumem_context_create(0, &own));
    gpumem_module *om = NULL;
    MUST(gpumem_module_load(own, k_ptx, 0, &om));
    gpumem_function *of = NULL;
    MUST(gpumem_module_get_function(om, "k", &of));
    MUST(gpumem_module_release(om));

    MUST(gpumem_clear_context_caches());

    c = (gpumem_context *)&v;
    BAD(gpumem_module_context(om, &c), GPUMEM_ERROR_INVALID_STATE, "module");
    BAD(gpumem_module_get_function(om, "k", &f), GPUMEM_ERROR_INVALID_STATE, "module");
    BAD(gpumem_module_get_global(om, "table", &gp, &gb), GPUMEM_ERROR_INVALID_STATE, "module");
    BAD(gpumem_module_release(om), GPUMEM_ERROR_INVALID_STATE, "module");
    BAD(gpumem_function_name(of, &name), GPUMEM_ERROR_INVALID_STATE, "function");
    BAD(gpumem_function_module(of, &fm), GPUMEM_ERROR_INVALID_STATE, "function");
    BAD(gpumem_function_attribute(of, GPUMEM_FUNCTION_NUM_REGS, &v), GPUMEM_ERROR_INVALID_STATE, "function");
    BAD(gpumem_launch(of, g1, g1, 0, NULL, NULL), GPUMEM_ERROR_INVALID_STATE, "function");
    ok(c == (gpumem_context *)&v, "a dead module leaves *ctx alone");
    /* not a module */
    BAD(gpumem_module_retain((gpumem_module *)(void *)own), GPUMEM_ERROR_INVALID_VALUE, "module");
    BAD(gpumem_function_name((gpumem_function *)(void *)own, &name), GPUMEM_ERROR_INVALID_VALUE, "function");
    gpumem_context_release(own);
}

/* ---- occupancy.h ------------------------------------------------------------------------ */

void test_occupancy(void)
{
    gpumem_device_data *dd = NULL, *ddsent = (gpumem_device_data *)&ctx;
    int v = 77;
    size_t sz = 77;
    BAD(gpumem_device_data_create(0, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "dd");
    dd = ddsent;
    BAD(gpumem_device_data_create(5, &dd), GPUMEM_ERROR_INVALID_DEVICE, "device");
    BAD(gpumem_device_data_create(-2, &dd), GPUMEM_ERROR_INVALID_DEVICE, "device");
    ok(dd == ddsent, "failed device_data_create leaves *dd alone");
    GOOD(gpumem_device_data_create(GPUMEM_DEVICE_DATA_DEFAULT, &dd));
    GOOD(gpumem_device_data_get(dd, GPUMEM_DEVICE_DATA_DEVICE, &v));
    is_int(v, 0, "the default device data is device 0's");
    BAD(gpumem_device_data_get(dd, (gpumem_device_data_field)GPUMEM_DEVICE_DATA_FIELD_COUNT, &v),
        GPUMEM_ERROR_INVALID_VALUE, "field");
    BAD(gpumem_device_data_get(dd, (gpumem_device_data_field)-1, &v), GPUMEM_ERROR_INVALID_VALUE, "field");
    ok(v == 0, "an unknown field leaves *value alone");
    BAD(gpumem_device_data_get(NULL, GPUMEM_DEVICE_DATA_WARP_SIZE, &v), GPUMEM_ERROR_NULL_ARGUMENT, "dd");
    BAD(gpumem_device_data_get(dd, GPUMEM_DEVICE_DATA_WARP_SIZE, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "value");
    GOOD(gpumem_device_data_get(dd, GPUMEM_DEVICE_DATA_WARP_SIZE, &v));
    is_int(v, 32, "warp size");
    ok(gpumem_device_data_field_name((gpumem_device_data_field)GPUMEM_DEVICE_DATA_FIELD_COUNT) == NULL &&
           gpumem_device_data_field_name((gpumem_device_data_field)-1) == NULL,
       "field_name of an unknown field is NULL");
    is_str(gpumem_device_data_field_name(GPUMEM_DEVICE_DATA_SMEM_ALLOC_GRANULARITY), "smem_alloc_granularity",
           "field 7's name");
    is_str(gpumem_device_data_field_name(GPUMEM_DEVICE_DATA_SHARED_MEMORY_PER_MP), "shared_memory_per_mp",
           "field 9's name");
    is_str(gpumem_device_data_field_name(GPUMEM_DEVICE_DATA_DEVICE), "device", "field 17's name");
    int allnamed = 1;
    for (int i = 0; i < GPUMEM_DEVICE_DATA_FIELD_COUNT; i++)
        allnamed &= gpumem_device_data_field_name((gpumem_device_data_field)i) != NULL;
    ok(allnamed, "every field has a name");
    BAD(gpumem_device_data_align_bytes(dd, 4, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "bytes");
    BAD(gpumem_device_data_align_bytes(NULL, 4, &sz), GPUMEM_ERROR_NULL_ARGUMENT, "dd");
    BAD(gpumem_device_data_align_bytes(dd, 2, &sz), GPUMEM_ERROR_INVALID_VALUE, "word_size");
    BAD(gpumem_device_data_align_bytes(dd, 0, &sz), GPUMEM_ERROR_INVALID_VALUE, "word_size");
    ok(sz == 77, "failed align_bytes leaves *bytes alone");
    GOOD(gpumem_device_data_align_bytes(dd, 4, &sz));
    is_int(sz, 64, "align_bytes(4)");
    GOOD(gpumem_device_data_align_bytes(dd, 16, &sz));
    is_int(sz, 128, "align_bytes(16)");
    GOOD(gpumem_device_data_align(dd, 65, 4, &sz));
    is_int(sz, 128, "align(65, 4)");
    GOOD(gpumem_device_data_align(dd, 0, 8, &sz));
    is_int(sz, 0, "align(0, 8)");
    sz = 77;
    BAD(gpumem_device_data_align(dd, SIZE_MAX - 3, 4, &sz), GPUMEM_ERROR_OVERFLOW, "bytes");
    BAD(gpumem_device_data_align(dd, 5, 3, &sz), GPUMEM_ERROR_INVALID_VALUE, "word_size");
    BAD(gpumem_device_data_align(dd, 5, 4, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "aligned");
    ok(sz == 77, "failed align leaves *aligned alone");
    GOOD(gpumem_device_data_align_words(dd, 4, &sz));
    is_int(sz, 16, "align_words(4)");
    GOOD(gpumem_device_data_align_words(dd, 16, &sz));
    is_int(sz, 8, "align_words(16)");
    BAD(gpumem_device_data_align_words(dd, 5, &sz), GPUMEM_ERROR_INVALID_VALUE, "word_size");
    BAD(gpumem_device_data_align_words(dd, 4, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "words");
    GOOD(gpumem_device_data_align_dtype(dd, 17, i32, &sz));
    is_int(sz, 32, "align_dtype(17, int32)");
    GOOD(gpumem_device_data_align_dtype(dd, 17, gpumem_dtype_builtin(GPUMEM_FLOAT64), &sz));
    is_int(sz, 32, "align_dtype(17, float64)");
    sz = 77;
    BAD(gpumem_device_data_align_dtype(dd, 17, gpumem_dtype_builtin(GPUMEM_INT16), &sz), GPUMEM_ERROR_INVALID_VALUE,
        "dtype");
    BAD(gpumem_device_data_align_dtype(dd, 17, NULL, &sz), GPUMEM_ERROR_NULL_ARGUMENT, "dtype");
    BAD(gpumem_device_data_align_dtype(dd, SIZE_MAX - 1, i32, &sz), GPUMEM_ERROR_OVERFLOW, "elements");
    BAD(gpumem_device_data_align_dtype(dd, 17, i32, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "aligned");
    ok(sz == 77, "failed align_dtype leaves *aligned alone");
    int cnt = 77;
    BAD(gpumem_make_valid_tex_channel_count(0, &cnt), GPUMEM_ERROR_INVALID_VALUE, "size");
    BAD(gpumem_make_valid_tex_channel_count(5, &cnt), GPUMEM_ERROR_INVALID_VALUE, "size");
    BAD(gpumem_make_valid_tex_channel_count(2, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "count");
    ok(cnt == 77, "failed tex_channel_count leaves *count alone");
    int want[5] = {0, 1, 2, 4, 4};
    int allc = 1;
    for (int i = 1; i <= 4; i++)
        allc &= gpumem_make_valid_tex_channel_count(i, &cnt) == GPUMEM_OK && cnt == want[i];
    ok(allc, "tex channel counts 1, 2, 4, 4");

    gpumem_occupancy_record r;
    memset(&r, 0xab, sizeof r);
    r.size = sizeof r - 1;
    BAD(gpumem_occupancy(dd, 128, 0, 32, &r), GPUMEM_ERROR_INVALID_VALUE, "size");
    ok(r.tb_per_mp == (int)0xabababab, "a too small record is untouched");
    r.size = sizeof r;
    BAD(gpumem_occupancy(dd, 0, 0, 32, &r), GPUMEM_ERROR_INVALID_VALUE, "threads");
    BAD(gpumem_occupancy(dd, 128, 0, -1, &r), GPUMEM_ERROR_INVALID_VALUE, "registers");
    BAD(gpumem_occupancy(NULL, 128, 0, 32, &r), GPUMEM_ERROR_NULL_ARGUMENT, "dd");
    BAD(gpumem_occupancy(dd, 128, 0, 32, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "record");
    ok(r.tb_per_mp == (int)0xabababab, "argument errors leave the record untouched");
    BAD(gpumem_occupancy(dd, 4096, 0, 32, &r), GPUMEM_ERROR_INVALID_VALUE, "thread");
    ok(r.tb_per_mp == 0 && r.occupancy == 0 && r.limited_by == GPUMEM_LIMITED_BY_WARPS,
       "too many threads: tb_per_mp 0, limited by warps (%d, %d)", r.tb_per_mp, (int)r.limited_by);
    BAD(gpumem_occupancy(dd, 128, 0, 256, &r), GPUMEM_ERROR_INVALID_VALUE, "register");
    ok(r.tb_per_mp == 0 && r.limited_by == GPUMEM_LIMITED_BY_REGISTERS, "too many registers: limited by registers");
    BAD(gpumem_occupancy(dd, 128, (size_t)1 << 30, 0, &r), GPUMEM_ERROR_INVALID_VALUE, "shared");
    ok(r.tb_per_mp == 0 && r.limited_by == GPUMEM_LIMITED_BY_SHARED_MEMORY, "too much shared memory");
    GOOD(gpumem_occupancy(dd, 128, 0, 0, &r));
    ok(r.tb_per_mp > 0 && r.occupancy > 0 && r.occupancy <= 1 && r.warps_per_block == 4 &&
           r.warps_per_mp == r.tb_per_mp * 4 && r.tb_limit_registers == GPUMEM_OCCUPANCY_NO_LIMIT &&
           (r.limiting_factors & (1u << r.limited_by)),
       "a plain workload: %d blocks, occupancy %g", r.tb_per_mp, r.occupancy);
    /* an older, shorter record: only its fields */
    struct { size_t size; int tb; int lim; int w; double occ; unsigned lf; int guard; } oldr;
    memset(&oldr, 0xab, sizeof oldr);
    oldr.size = offsetof(gpumem_occupancy_record, tb_limit_device);
    BAD(gpumem_occupancy(dd, 128, 0, 0, (gpumem_occupancy_record *)(void *)&oldr), GPUMEM_ERROR_INVALID_VALUE,
        "size");
    is_str(gpumem_occupancy_limit_name(GPUMEM_LIMITED_BY_DEVICE), "device", "limit name device");
    is_str(gpumem_occupancy_limit_name(GPUMEM_LIMITED_BY_WARPS), "warps", "limit name warps");
    is_str(gpumem_occupancy_limit_name(GPUMEM_LIMITED_BY_REGISTERS), "regs", "limit name regs");
    is_str(gpumem_occupancy_limit_name(GPUMEM_LIMITED_BY_SHARED_MEMORY), "smem", "limit name smem");
    ok(gpumem_occupancy_limit_name((gpumem_occupancy_limit)4) == NULL &&
           gpumem_occupancy_limit_name((gpumem_occupancy_limit)-1) == NULL, "unknown limit names are NULL");
    GOOD(gpumem_device_data_destroy(dd));
    BAD(gpumem_device_data_destroy(dd), GPUMEM_ERROR_INVALID_STATE, "dd");
    v = 77;
    BAD(gpumem_device_data_get(dd, GPUMEM_DEVICE_DATA_WARP_SIZE, &v), GPUMEM_ERROR_INVALID_STATE, "dd");
    ok(v == 77, "a destroyed device data leaves *value alone");
    BAD(gpumem_device_data_align_bytes(dd, 4, &sz), GPUMEM_ERROR_INVALID_STATE, "dd");
    BAD(gpumem_occupancy(dd, 128, 0, 0, &r), GPUMEM_ERROR_INVALID_STATE, "dd");
    GOOD(gpumem_device_data_destroy(NULL));
    gpumem_stream *s = NULL;
    MUST(gpumem_stream_create(ctx, 0, &s));
    BAD(gpumem_device_data_destroy((gpumem_device_data *)(void *)s), GPUMEM_ERROR_INVALID_VALUE, "dd");
    BAD(gpumem_device_data_get((gpumem_device_data *)(void *)s, GPUMEM_DEVICE_DATA_WARP_SIZE, &v),
        GPUMEM_ERROR_INVALID_VALUE, "dd");
    gpumem_stream_destroy(s);
}

/* ---- peer.h ----------------------------------------------------------------------------- */

void test_peer(void)
{
    int can = 77, en = 77;
    BAD(gpumem_peer_can_access(0, 1, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "can");
    BAD(gpumem_peer_can_access(-1, 1, &can), GPUMEM_ERROR_INVALID_DEVICE, "device");
    BAD(gpumem_peer_can_access(0, 2, &can), GPUMEM_ERROR_INVALID_DEVICE, "peer");
    ok(can == 77, "failed can_access leaves *can alone");
    GOOD(gpumem_peer_can_access(0, 0, &can));
    is_int(can, 0, "a device is no peer of itself");
    BAD(gpumem_peer_set_enabled(2), GPUMEM_ERROR_INVALID_VALUE, "enabled");
    BAD(gpumem_peer_set_enabled(-1), GPUMEM_ERROR_INVALID_VALUE, "enabled");
    BAD(gpumem_peer_enabled(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "enabled");
    GOOD(gpumem_peer_enabled(&en));
    is_int(en, 1, "peer access on by default");
    GOOD(gpumem_peer_set_enabled(0));
    GOOD(gpumem_peer_enabled(&en));
    is_int(en, 0, "switched off");
    GOOD(gpumem_peer_set_enabled(1));
    GOOD(gpumem_peer_enabled(&en));
    is_int(en, 1, "switched on");
}

static void case_peer_env(const void *arg, child_result *out)
{
    setenv("GPUMEM_PEER", (const char *)arg, 1);
    int en = 77;
    out->status = gpumem_peer_enabled(&en);
    out->value[0] = en;
    snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
    out->value[1] = gpumem_peer_set_enabled(1);
    en = 77;
    out->value[2] = gpumem_peer_enabled(&en);
    out->value[3] = en;
}

void peer_env_checks(void)
{
    child_result r;
    run_child(case_peer_env, "0", &r);
    ok(r.status == GPUMEM_OK && r.value[0] == 0, "GPUMEM_PEER=0: peer access off");
    run_child(case_peer_env, "2", &r);
    ok(r.status == GPUMEM_ERROR_INVALID_ENVIRONMENT && r.value[0] == 77 && strstr(r.text, "GPUMEM_PEER") &&
           strncmp(r.text, "gpumem_peer_enabled: ", 21) == 0,
       "GPUMEM_PEER=2: INVALID_ENVIRONMENT naming the variable, *enabled alone (%s)", r.text);
    ok(r.value[1] == GPUMEM_OK && r.value[2] == GPUMEM_ERROR_INVALID_ENVIRONMENT && r.value[3] == 77,
       "GPUMEM_PEER=2: gpumem_peer_set_enabled succeeds, the bad variable stays an error (peer.h)");
}

/* ---- trace.h ---------------------------------------------------------------------------- */

void test_trace(void)
{
    char path[256];
    snprintf(path, sizeof path, "/tmp/gpumem-promises-pool-%ld.trace", (long)getpid());
    unlink(path);
    BAD(gpumem_trace_start(NULL, 0), GPUMEM_ERROR_NULL_ARGUMENT, "path");
    BAD(gpumem_trace_start("", 0), GPUMEM_ERROR_INVALID_VALUE, "path");
    BAD(gpumem_trace_start(path, 0x2), GPUMEM_ERROR_INVALID_VALUE, "flags");
    struct stat sb;
    ok(stat(path, &sb) != 0, "a refused start leaves no file");
    BAD(gpumem_trace_start("/nonexistent-dir/x.trace", 0), GPUMEM_ERROR_INVALID_VALUE, "/nonexistent-dir/x.trace");
    BAD(gpumem_trace_stop(), GPUMEM_ERROR_INVALID_STATE, NULL);
    if (access("/dev/full", W_OK) == 0) {
        BAD(gpumem_trace_start("/dev/full", 0), GPUMEM_ERROR_INVALID_VALUE, "/dev/full");
        like(gpumem_last_error(), "No space left", "a file that cannot be written: the system's reason");
        BAD(gpumem_trace_stop(), GPUMEM_ERROR_INVALID_STATE, NULL);
    } else {
        skip(3, "no /dev/full");
    }
    BAD(gpumem_trace_mark(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "name");
    GOOD(gpumem_trace_mark("not recording"));
    BAD(gpumem_trace_push(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "name");
    BAD(gpumem_trace_pop(), GPUMEM_ERROR_INVALID_STATE, NULL);
    GOOD(gpumem_trace_push("outside"));
    GOOD(gpumem_trace_start(path, GPUMEM_TRACE_CALL_SITES));
    BAD(gpumem_trace_start(path, 0), GPUMEM_ERROR_INVALID_STATE, NULL);
    GOOD(gpumem_trace_pop()); /* the region pushed before the trace */
    BAD(gpumem_trace_pop(), GPUMEM_ERROR_INVALID_STATE, NULL);
    GOOD(gpumem_trace_mark("step 1"));
    GOOD(gpumem_trace_push("solver"));
    gpumem_array *a = NULL;
    int64_t n = 1000;
    MUST(gpumem_device_array(ctx, 1, &n, NULL, i32, 'C', NULL, &a));
    gpumem_array_release(a);
    GOOD(gpumem_trace_pop());
    GOOD(gpumem_trace_stop());
    BAD(gpumem_trace_stop(), GPUMEM_ERROR_INVALID_STATE, NULL);
    ok(stat(path, &sb) == 0 && sb.st_size > 0, "the trace file was written (%lld bytes)", (long long)sb.st_size);
    unlink(path);
}

static void case_trace_env_bad(const void *arg, child_result *out)
{
    (void)arg;
    setenv("GPUMEM_TRACE", "/nonexistent-dir/t.trace", 1);
    gpumem_context *c = (gpumem_context *)out;
    out->status = gpumem_context_create(0, &c);
    snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
    out->value[0] = c == (gpumem_context *)out;
    c = (gpumem_context *)out;
    out->value[1] = gpumem_context_create(0, &c);
}

static void case_trace_stacks_bad(const void *arg, child_result *out)
{
    setenv("GPUMEM_TRACE_STACKS", (const char *)arg, 1);
    out->status = gpumem_trace_start((const char *)arg + 8, 0);
    snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
    struct stat sb;
    out->value[0] = stat((const char *)arg + 8, &sb) == 0;
}

static void case_trace_env_pid(const void *arg, child_result *out)
{
    const char *dir = arg;
    char pat[256], want[256];
    snprintf(pat, sizeof pat, "%s/t-%%p-%%%%.trace", dir);
    snprintf(want, sizeof want, "%s/t-%ld-%%.trace", dir, (long)getpid());
    setenv("GPUMEM_TRACE", pat, 1);
    gpumem_context *c = NULL;
    out->status = gpumem_context_create(0, &c);
    gpumem_context_release(c);
    gpumem_trace_stop();
    struct stat sb;
    out->value[0] = stat(want, &sb) == 0 && sb.st_size > 0;
    snprintf(out->note, sizeof out->note, "%s", want);
    unlink(want);
}

void trace_env_checks(void)
{
    child_result r;
    run_child(case_trace_env_bad, NULL, &r);
    ok(r.status == GPUMEM_ERROR_INVALID_ENVIRONMENT && strstr(r.text, "GPUMEM_TRACE") && r.value[0] == 1 &&
           r.value[1] == GPUMEM_ERROR_INVALID_ENVIRONMENT,
       "GPUMEM_TRACE in a missing directory: every context creation fails naming it (%s)", r.text);
    char arg[256];
    snprintf(arg, sizeof arg, "yes%c%c%c%c%c/tmp/gpumem-promises-stacks-%ld.trace", 0, 0, 0, 0, 0, (long)getpid());
    /* arg: "yes" then the path at offset 8 */
    run_child(case_trace_stacks_bad, arg, &r);
    ok(r.status == GPUMEM_ERROR_INVALID_ENVIRONMENT && strstr(r.text, "GPUMEM_TRACE_STACKS") && r.value[0] == 0,
       "GPUMEM_TRACE_STACKS=yes: INVALID_ENVIRONMENT naming it, no file left (%s)", r.text);
    run_child(case_trace_pct, "/tmp/gpumem-promises-%q.trace", &r);
    ok(r.status == GPUMEM_ERROR_INVALID_ENVIRONMENT && strstr(r.text, "GPUMEM_TRACE") && r.value[0] == 1 &&
           r.value[1] == GPUMEM_ERROR_INVALID_ENVIRONMENT,
       "GPUMEM_TRACE with %%q: INVALID_ENVIRONMENT naming the variable, and again for a later context (%s)", r.text);
    run_child(case_trace_pct, "", &r);
    ok(r.status == GPUMEM_OK, "an empty GPUMEM_TRACE means no trace");
    char dir[] = "/tmp/gpumem-promises-XXXXXX";
    if (mkdtemp(dir) != NULL) {
        run_child(case_trace_env_pid, dir, &r);
        ok(r.status == GPUMEM_OK && r.value[0] == 1, "GPUMEM_TRACE: %%p is the process id, %%%% one %% (%s)", r.note);
        rmdir(dir);
    }
}


/* ---- testing.h, version.h --------------------------------------------------------------- */

void test_testing(void)
{
    char why[128];
    gpumem_context *c = NULL;
    memset(why, 'x', sizeof why);
    BAD(gpumem_test_context(NULL, why, sizeof why), GPUMEM_ERROR_NULL_ARGUMENT, "ctx");
    ok(memchr(why, 0, sizeof why) != NULL && strstr(why, "ctx") != NULL && strchr(why, '\n') == NULL,
       "a NULL ctx: the reason is filled too, one line naming the argument (%.40s)", why);
    GOOD(gpumem_test_context(&c, why, sizeof why));
    is_str(why, "", "on success the reason is empty");
    gpumem_context_release(c);
    GOOD(gpumem_test_context(&c, NULL, 0));
    gpumem_context_release(c);
    BAD(gpumem_test_context(&c, NULL, 16), GPUMEM_ERROR_NULL_ARGUMENT, "reason");
    ok(gpumem_test_should_skip(GPUMEM_ERROR_NO_DEVICE) && gpumem_test_should_skip(GPUMEM_ERROR_DRIVER_NOT_FOUND) &&
           gpumem_test_should_skip(GPUMEM_ERROR_DEVICE_UNAVAILABLE) &&
           !gpumem_test_should_skip(GPUMEM_ERROR_INVALID_ENVIRONMENT) && !gpumem_test_should_skip(GPUMEM_OK),
       "gpumem_test_should_skip");
}

static void case_test_ctx_bad(const void *arg, child_result *out)
{
    setenv("CUDA_DEVICE", (const char *)arg, 1);
    char why[64];
    memset(why, 'x', sizeof why);
    gpumem_context *c = (gpumem_context *)out;
    out->status = gpumem_test_context(&c, why, sizeof why);
    out->value[0] = c == (gpumem_context *)out;
    out->value[1] = memchr(why, 0, sizeof why) != NULL;
    out->value[2] = strchr(why, '\n') == NULL;
    snprintf(out->text, sizeof out->text, "%.*s", (int)sizeof why, why);
    out->value[3] = gpumem_test_should_skip(out->status);
}

/* arg: "VAR=value;VAR=value": the environment of one gpumem_test_context call */
static void case_test_ctx_env(const void *arg, child_result *out)
{
    char env[256];
    snprintf(env, sizeof env, "%s", (const char *)arg);
    for (char *save = NULL, *kv = strtok_r(env, ";", &save); kv != NULL; kv = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(kv, '=');
        *eq = '\0';
        setenv(kv, eq + 1, 1);
    }
    char why[512];
    gpumem_context *c = (gpumem_context *)out;
    out->status = gpumem_test_context(&c, why, sizeof why);
    out->value[0] = gpumem_test_should_skip(out->status);
    out->value[1] = c == (gpumem_context *)out;
    snprintf(out->text, sizeof out->text, "%s", why);
}

/* One device whose context creation fails with a driver error: the scan
 * finds no device; testing.h says that is NO_DEVICE, a skip, with the
 * driver's error in the reason. */
static void case_test_ctx_scan(const void *arg, child_result *out)
{
    (void)arg;
    setenv("GPUMEM_SIM_DEVICES", "1", 1);
    setenv("HOME", "/nonexistent", 1);
    for (uint64_t k = 1; k < 8; k++) {
        char why[256];
        gpumem_context *c = (gpumem_context *)out;
        memset(why, 'x', sizeof why);
        gpumem_debug_fail_call(k, 999);
        gpumem_status st = gpumem_test_context(&c, why, sizeof why);
        gpumem_debug_fail_call(0, 0);
        if (st == GPUMEM_OK) {
            gpumem_context_release(c);
            continue;
        }
        if (st != GPUMEM_ERROR_NO_DEVICE)
            continue;
        out->value[0]++;
        int good = gpumem_test_should_skip(st) && strstr(why, "CUDA_ERROR_UNKNOWN") != NULL &&
                   strncmp(why, "no CUDA device: ", 16) == 0 && gpumem_last_driver_result() == 999 &&
                   c == (gpumem_context *)out;
        if (!good)
            snprintf(out->text, sizeof out->text, "%.*s", (int)sizeof why, why);
        out->value[1] += !good;
    }
}

void testing_env_checks(void)
{
    child_result r;
    run_child(case_test_ctx_env, "GPUMEM_BACKEND=cuda;GPUMEM_CUDA_LIBRARY=/nonexistent/libcuda.so.1", &r);
    ok(r.status == GPUMEM_ERROR_DRIVER_NOT_FOUND && r.value[0] == 1 && r.value[1] == 1 &&
           strncmp(r.text, "no CUDA driver: ", 16) == 0,
       "no driver: DRIVER_NOT_FOUND, a skip, 'no CUDA driver: ...' (%.60s)", r.text);
    run_child(case_test_ctx_env, "GPUMEM_SIM_DEVICES=2;GPUMEM_SIM_BUSY=0,1;HOME=/nonexistent", &r);
    ok(r.status == GPUMEM_ERROR_NO_DEVICE && r.value[0] == 1 && strncmp(r.text, "no CUDA device: ", 16) == 0 &&
           strstr(r.text, "CUDA_ERROR_DEVICE_UNAVAILABLE") != NULL,
       "every device busy: NO_DEVICE, a skip, naming the devices' error (%.60s)", r.text);
    run_child(case_test_ctx_env, "GPUMEM_SIM_BUSY=0;CUDA_DEVICE=0", &r);
    ok(r.status == GPUMEM_ERROR_DEVICE_UNAVAILABLE && r.value[0] == 1 &&
           strncmp(r.text, "no CUDA device available: ", 26) == 0,
       "CUDA_DEVICE names a busy device: DEVICE_UNAVAILABLE, a skip (%.60s)", r.text);
    run_child(case_test_ctx_env, "GPUMEM_BACKEND=bogus", &r);
    ok(r.status == GPUMEM_ERROR_INVALID_ENVIRONMENT && r.value[0] == 0 && strncmp(r.text, "no test context: ", 17) == 0 &&
           strstr(r.text, "GPUMEM_BACKEND") != NULL,
       "a bad GPUMEM_BACKEND: a failure, not a skip (%.60s)", r.text);
    run_child(case_test_ctx_scan, NULL, &r);
    ok(r.value[0] > 0 && r.value[1] == 0,
       "a scan in which the only device fails: NO_DEVICE, a skip, naming the driver's error (%ld times) %s",
       r.value[0], r.text);
    run_child(case_test_ctx_bad, "7", &r);
    ok(r.status == GPUMEM_ERROR_INVALID_DEVICE || r.status == GPUMEM_ERROR_INVALID_ENVIRONMENT,
       "CUDA_DEVICE=7 on two devices: a failure (%s)", gpumem_status_string(r.status));
    ok(r.value[0] == 1 && r.value[1] == 1 && r.value[2] == 1 && r.value[3] == 0,
       "the reason is one terminated line, *ctx alone, not a skip (%s)", r.text);
}

void test_version(void)
{
    is_int(gpumem_version(), GPUMEM_VERSION_NUMBER, "gpumem_version() == GPUMEM_VERSION_NUMBER");
    is_str(gpumem_version_string(), GPUMEM_VERSION_STRING, "gpumem_version_string() == GPUMEM_VERSION_STRING");
    char buf[32];
    snprintf(buf, sizeof buf, "%d.%d.%d", GPUMEM_VERSION_MAJOR, GPUMEM_VERSION_MINOR, GPUMEM_VERSION_PATCH);
    is_str(GPUMEM_VERSION_STRING, buf, "the string macro matches the numbers");
    ok(gpumem_version_string() == gpumem_version_string(), "the version string is static");
}
