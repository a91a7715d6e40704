/* The kernel cache: modules loaded once per context and content, names
 * looked up once, globals, const_array_like, bad images, kernel attributes
 * and launches of small hand-written PTX kernels.  On the simulator the
 * launches skip (kernels are not simulated); everything else runs on both.
 * Internal test: it reads module globals through gm_array_wrap. */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "bytes.h"
#include "child.h"
#include "gpumem.h"
#include "setup.h"
#include "tap.h"

/* y[i] = a * x[i] for i < n */
static const char scale_ptx[] =
    ".version 7.0\n"
    ".target sm_50\n"
    ".address_size 64\n"
    "\n"
    "// scale: y[i] = a * x[i]\n"
    ".visible .entry scale(\n"
    "    .param .u64 y_ptr,\n"
    "    .param .u64 x_ptr,\n"
    "    .param .f32 a,\n"
    "    .param .u32 n)\n"
    "{\n"
    "    .reg .pred %p<2>;\n"
    "    .reg .b32 %r<5>;\n"
    "    .reg .f32 %f<3>;\n"
    "    .reg .b64 %rd<8>;\n"
    "    ld.param.u64 %rd1, [y_ptr];\n"
    "    ld.param.u64 %rd2, [x_ptr];\n"
    "    ld.param.f32 %f1, [a];\n"
    "    ld.param.u32 %r1, [n];\n"
    "    mov.u32 %r2, %ctaid.x;\n"
    "    mov.u32 %r3, %ntid.x;\n"
    "    mov.u32 %r4, %tid.x;\n"
    "    mad.lo.s32 %r2, %r2, %r3, %r4;\n"
    "    setp.ge.u32 %p1, %r2, %r1;\n"
    "    @%p1 bra DONE;\n"
    "    cvta.to.global.u64 %rd3, %rd1;\n"
    "    cvta.to.global.u64 %rd4, %rd2;\n"
    "    mul.wide.u32 %rd5, %r2, 4;\n"
    "    add.s64 %rd6, %rd4, %rd5;\n"
    "    ld.global.f32 %f2, [%rd6];\n"
    "    mul.f32 %f2, %f2, %f1;\n"
    "    add.s64 %rd7, %rd3, %rd5;\n"
    "    st.global.f32 [%rd7], %f2;\n"
    "DONE:\n"
    "    ret;\n"
    "}\n";

/* y[i] = 2 * coeffs[i] + bias for i < 16: reads __constant__ memory and an
 * initialized __device__ variable; with_shared declares 1 KiB of shared memory. */
static const char const_ptx[] =
    ".version 7.0\n"
    ".target sm_50\n"
    ".address_size 64\n"
    "\n"
    ".visible .const .align 4 .b8 coeffs[64];\n"
    ".visible .global .align 4 .f32 bias = 0f3F800000;\n"
    ".visible .global .align 4 .u32 table[4] = {1, 2, 3, 4};\n"
    ".visible .global .align 8 .f64 dtable[] = {0.5, -2.25};\n"
    "\n"
    ".visible .entry use_const(.param .u64 y_ptr)\n"
    "{\n"
    "    .reg .pred %p<2>;\n"
    "    .reg .b32 %r<2>;\n"
    "    .reg .f32 %f<4>;\n"
    "    .reg .b64 %rd<6>;\n"
    "    ld.param.u64 %rd1, [y_ptr];\n"
    "    cvta.to.global.u64 %rd1, %rd1;\n"
    "    mov.u32 %r1, %tid.x;\n"
    "    setp.ge.u32 %p1, %r1, 16;\n"
    "    @%p1 bra DONE;\n"
    "    mul.wide.u32 %rd2, %r1, 4;\n"
    "    mov.u64 %rd3, coeffs;\n"
    "    add.s64 %rd4, %rd3, %rd2;\n"
    "    ld.const.f32 %f1, [%rd4];\n"
    "    ld.global.f32 %f2, [bias];\n"
    "    fma.rn.f32 %f3, %f1, 0f40000000, %f2;\n"
    "    add.s64 %rd5, %rd1, %rd2;\n"
    "    st.global.f32 [%rd5], %f3;\n"
    "DONE:\n"
    "    ret;\n"
    "}\n"
    "\n"
    ".visible .entry with_shared(.param .u64 out)\n"
    "{\n"
    "    .reg .b32 %r<3>;\n"
    "    .reg .b64 %rd<5>;\n"
    "    .shared .align 4 .b8 tile[1024];\n"
    "    mov.u32 %r1, %tid.x;\n"
    "    and.b32 %r1, %r1, 255;\n"
    "    mul.wide.u32 %rd1, %r1, 4;\n"
    "    mov.u64 %rd2, tile;\n"
    "    add.s64 %rd2, %rd2, %rd1;\n"
    "    st.shared.u32 [%rd2], %r1;\n"
    "    bar.sync 0;\n"
    "    xor.b32 %r2, %r1, 1;\n"
    "    mul.wide.u32 %rd1, %r2, 4;\n"
    "    mov.u64 %rd2, tile;\n"
    "    add.s64 %rd2, %rd2, %rd1;\n"
    "    ld.shared.u32 %r2, [%rd2];\n"
    "    ld.param.u64 %rd3, [out];\n"
    "    cvta.to.global.u64 %rd3, %rd3;\n"
    "    mul.wide.u32 %rd1, %r1, 4;\n"
    "    add.s64 %rd4, %rd3, %rd1;\n"
    "    st.global.u32 [%rd4], %r2;\n"
    "    ret;\n"
    "}\n";

/* A kernel without parameters (a distinct image for cache tests). */
static const char empty_ptx[] =
    ".version 7.0\n"
    ".target sm_50\n"
    ".address_size 64\n"
    ".visible .entry nothing()\n"
    "{\n"
    "    ret;\n"
    "}\n";

static uint64_t calls(const char *op)
{
    uint64_t n = 0;
    gpumem_debug_driver_calls(op, &n);
    return n;
}

/* ---- images built here --------------------------------------------------------------- */

static void put16(unsigned char *p, uint16_t v) { memcpy(p, &v, 2); }
static void put32(unsigned char *p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(unsigned char *p, uint64_t v) { memcpy(p, &v, 8); }

/* A fat binary holding one entry (kind 1 PTX, 2 cubin) of architecture
 * arch, laid out as nvcc 13 writes one: a 64-byte entry header (80 for PTX,
 * whose 16 more bytes point at an empty option string), the payload padded
 * to 8 bytes; flags 0x2000 marks it compressed.  Returns its size. */
static size_t make_fatbin(unsigned char *out, unsigned kind, unsigned arch, uint64_t flags, const void *payload,
                          size_t len)
{
    size_t padded = (len + 7) / 8 * 8, hdr = kind == 1 ? 80 : 64;
    memset(out, 0, 16 + hdr + padded);
    put32(out, 0xBA55ED50u);
    put16(out + 4, 1);
    put16(out + 6, 16);
    put64(out + 8, hdr + padded);
    unsigned char *e = out + 16;
    put16(e, (uint16_t)kind);
    put16(e + 2, 0x0101);
    put32(e + 4, (uint32_t)hdr);
    put64(e + 8, padded);
    if (kind == 1) {
        put32(e + 20, 64); /* address size */
        put16(e + 24, 0);  /* PTX ISA 7.0 */
        put16(e + 26, 7);
        put64(e + 64, 72); /* the option string's offset: "" */
    } else {
        put16(e + 24, 8);  /* as nvcc writes for cubins */
        put16(e + 26, 1);
    }
    put32(e + 28, arch);
    put64(e + 40, 0x11 | flags); /* 64-bit, Linux */
    memcpy(e + hdr, payload, len);
    return 16 + hdr + padded;
}

/* A fat binary holding PTX, loaded directly, with size 0 and through nvcc's
 * wrapper struct; in a child process, so that a driver that refuses this
 * hand-made container by crashing fails one test, not the program.
 * value[0]: load status, [1]: get_function status, [2]: size 0 gave the
 * same module, [3]: the wrapper gave it, text: the message; value[3] also
 * counts loads in its high bits. */
static void case_fatbin_ptx(const void *arg, child_result *out)
{
    (void)arg;
    static unsigned char fat[4096];
    char why[256];
    gpumem_context *ctx = NULL;
    out->status = gpumem_test_context(&ctx, why, sizeof why);
    if (out->status != GPUMEM_OK) {
        snprintf(out->text, sizeof out->text, "%s", why);
        return;
    }
    size_t fs = make_fatbin(fat, 1, 50, 0, empty_ptx, sizeof empty_ptx);
    gpumem_module *f1 = NULL, *f2 = NULL, *f3 = NULL;
    gpumem_function *nothing = NULL;
    uint64_t loads = 0, loads2 = 0;
    gpumem_debug_driver_calls("cuModuleLoadDataEx", &loads);
    out->value[0] = gpumem_module_load(ctx, fat, fs, &f1);
    snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
    if (out->value[0] != GPUMEM_OK)
        return;
    out->value[1] = gpumem_module_get_function(f1, "nothing", &nothing);
    gpumem_module_load(ctx, fat, 0, &f2);
    out->value[2] = f2 == f1;
    gm_cu_fatbin_wrapper w = {0x466243B1, 1, (const unsigned long long *)(const void *)fat, NULL};
    gpumem_module_load(ctx, &w, sizeof w, &f3);
    gpumem_debug_driver_calls("cuModuleLoadDataEx", &loads2);
    out->value[3] = (f3 == f1) | (long)((loads2 - loads) << 8);
    gpumem_module_release(f3);
    gpumem_module_release(f2);
    gpumem_module_release(f1);
    gpumem_context_release(ctx);
}

/* A minimal cubin (what the simulator reads of one): kernel `kern` with
 * 256 bytes of static shared memory, a local function `helper`, a
 * __constant__ `lut` of 4 floats {1, 2, 3, 4} and a __device__ `counters`
 * of 32 bytes. */
static size_t make_cubin(unsigned char *b, size_t cap)
{
    static const char shstr[] = "\0.shstrtab\0.strtab\0.symtab\0.text.kern\0.nv.constant3\0.nv.global\0"
                                ".nv.shared.kern";
    static const char str[] = "\0kern\0lut\0counters\0helper";
    enum { SH_SHSTR = 1, SH_STR, SH_SYM, SH_TEXT, SH_CONST, SH_GLOBAL, SH_SHARED, NSEC };
    memset(b, 0, cap);
    size_t off = 64;
    size_t o_shstr = off; memcpy(b + off, shstr, sizeof shstr); off += sizeof shstr;
    size_t o_str = off; memcpy(b + off, str, sizeof str); off += sizeof str;
    off = (off + 7) / 8 * 8;
    size_t o_sym = off;
    /* symbols: null, kern, lut, counters, helper */
    struct { uint32_t name; unsigned char info; uint16_t shndx; uint64_t value, size; } syms[] = {
        {0, 0, 0, 0, 0},
        {1, 0x12, SH_TEXT, 0, 16},     /* GLOBAL FUNC */
        {6, 0x11, SH_CONST, 0, 16},    /* GLOBAL OBJECT */
        {10, 0x11, SH_GLOBAL, 0, 32},  /* GLOBAL OBJECT */
        {19, 0x02, SH_TEXT, 0, 16},    /* LOCAL FUNC */
    };
    for (size_t i = 0; i < 5; i++) {
        unsigned char *s = b + off + i * 24;
        put32(s, syms[i].name);
        s[4] = syms[i].info;
        put16(s + 6, syms[i].shndx);
        put64(s + 8, syms[i].value);
        put64(s + 16, syms[i].size);
    }
    off += 5 * 24;
    size_t o_text = off; off += 16;
    size_t o_const = off;
    float lut[4] = {1, 2, 3, 4};
    memcpy(b + off, lut, sizeof lut);
    off += 16;
    off = (off + 7) / 8 * 8;
    size_t shoff = off;
    struct { uint32_t name, type; uint64_t offset, size; uint32_t link, info; uint64_t entsize; } sh[NSEC] = {
        {0, 0, 0, 0, 0, 0, 0},
        {1, 3, o_shstr, sizeof shstr, 0, 0, 0},
        {11, 3, o_str, sizeof str, 0, 0, 0},
        {19, 2, o_sym, 5 * 24, SH_STR, 1, 24},
        {27, 1, o_text, 16, 0, 0, 0},
        {38, 1, o_const, 16, 0, 0, 0},
        {52, 8, 0, 32, 0, 0, 0},
        {63, 8, 0, 256, 0, 0, 0},
    };
    for (int i = 0; i < NSEC; i++) {
        unsigned char *s = b + off + (size_t)i * 64;
        put32(s, sh[i].name);
        put32(s + 4, sh[i].type);
        put64(s + 24, sh[i].offset);
        put64(s + 32, sh[i].size);
        put32(s + 40, sh[i].link);
        put32(s + 44, sh[i].info);
        put64(s + 56, sh[i].entsize);
    }
    off += NSEC * 64;
    memcpy(b, "\x7f" "ELF", 4);
    b[4] = 2; /* 64-bit */
    b[5] = 1; /* little-endian */
    b[6] = 1;
    put16(b + 16, 2);   /* ET_EXEC */
    put16(b + 18, 190); /* EM_CUDA */
    put32(b + 20, 1);
    put64(b + 40, shoff);
    put32(b + 48, 90);  /* e_flags: sm_90 */
    put16(b + 52, 64);
    put16(b + 58, 64);
    put16(b + 60, NSEC);
    put16(b + 62, SH_SHSTR);
    return off;
}

/* ---- threads ------------------------------------------------------------------------------ */

typedef struct load_arg {
    gpumem_context *ctx;
    const char *text;
    pthread_barrier_t *start;
    gpumem_module *module;
    gpumem_status st;
} load_arg;

static void *load_thread(void *p)
{
    load_arg *a = p;
    pthread_barrier_wait(a->start);
    a->st = gpumem_module_load(a->ctx, a->text, 0, &a->module);
    return NULL;
}

/* Reads n bytes of device memory at ptr into out. */
static gpumem_status read_device(gpumem_context *ctx, uint64_t ptr, void *out, int64_t n)
{
    const gpumem_dtype *u8 = gpumem_dtype_builtin(GPUMEM_UINT8);
    gpumem_array *d = NULL, *h = NULL;
    gpumem_status st = gm_array_wrap("test", ctx, GPUMEM_MEMORY_DEVICE, ptr, 1, &n, NULL, u8, NULL, NULL, &d);
    if (st == GPUMEM_OK)
        st = gpumem_host_array_wrap(out, 1, &n, NULL, u8, &h);
    if (st == GPUMEM_OK)
        st = gpumem_copy_to_host(d, h, NULL);
    gpumem_array_release(h);
    gpumem_array_release(d);
    return st;
}

int main(void)
{
    if (test_on_sim())
        setenv("GPUMEM_SIM_DEVICES", "2", 1); /* for a context of another device */
    child_result fatptx; /* forked before this process touches the library */
    int forked = run_child(case_fatbin_ptx, NULL, &fatptx);
    gpumem_context *ctx = test_context_or_skip_all();
    gpumem_status st;
    const char *backend = "";
    gpumem_backend(&backend);
    int sim = strcmp(backend, "sim") == 0;
    const char *no_kernels = "the simulator does not run kernels";
    const gpumem_dtype *f32 = gpumem_dtype_builtin(GPUMEM_FLOAT32);

    /* ---- the cache: one load per context and content ---- */
    uint64_t loads0 = calls("cuModuleLoadDataEx");
    gpumem_module *m1 = NULL, *m2 = NULL, *m3 = NULL, *m4 = NULL;
    st = gpumem_module_load(ctx, scale_ptx, 0, &m1);
    if (!is_int(st, GPUMEM_OK, "load a PTX module"))
        diag("%s", gpumem_last_error());
    is_int(calls("cuModuleLoadDataEx") - loads0, 1, "one cuModuleLoadDataEx");
    char *copy = strdup(scale_ptx);
    gpumem_module_load(ctx, copy, 0, &m2);
    ok(m2 == m1, "the same text in another buffer is the same module");
    gpumem_module_load(ctx, scale_ptx, strlen(scale_ptx), &m3);
    ok(m3 == m1, "with an explicit size and no NUL: the same module");
    gpumem_module_load(ctx, scale_ptx, sizeof scale_ptx, &m4);
    ok(m4 == m1, "with the NUL counted in the size: the same module");
    is_int(calls("cuModuleLoadDataEx") - loads0, 1, "still one cuModuleLoadDataEx");
    copy[strlen(copy) - 3] = ' '; /* different bytes, still PTX */
    gpumem_module *other = NULL;
    is_int(gpumem_module_load(ctx, copy, 0, &other), GPUMEM_OK, "a changed text loads");
    ok(other != NULL && other != m1, "as another module");
    is_int(calls("cuModuleLoadDataEx") - loads0, 2, "with its own cuModuleLoadDataEx");
    gpumem_module_release(other);
    gpumem_module_release(m2);
    gpumem_module_release(m3);
    gpumem_module_release(m4);
    free(copy);
    gpumem_context *mctx = NULL;
    gpumem_module_context(m1, &mctx);
    ok(mctx == ctx, "the module's context");

    /* ---- kernels, looked up once ---- */
    uint64_t gets0 = calls("cuModuleGetFunction");
    gpumem_function *scale = NULL, *scale2 = NULL, *none = NULL;
    is_int(gpumem_module_get_function(m1, "scale", &scale), GPUMEM_OK, "get_function(scale)");
    gpumem_module_get_function(m1, "scale", &scale2);
    ok(scale2 == scale, "the same handle again");
    is_int(calls("cuModuleGetFunction") - gets0, 1, "one cuModuleGetFunction for two lookups");
    const char *fname = NULL;
    gpumem_function_name(scale, &fname);
    is_str(fname, "scale", "the function's name");
    gpumem_module *fmod = NULL;
    gpumem_function_module(scale, &fmod);
    ok(fmod == m1, "the function's module");
    is_int(gpumem_module_get_function(m1, "scal", &none), GPUMEM_ERROR_NOT_FOUND, "an unknown kernel");
    like(gpumem_last_error(), "'scal'", "the message names it");
    like(gpumem_last_error(), "CUDA_ERROR_NOT_FOUND", "and the driver's error");
    ok(none == NULL, "and leaves the handle alone");
    is_int(gpumem_module_get_function(m1, NULL, &none), GPUMEM_ERROR_NULL_ARGUMENT, "a NULL name");

    /* ---- globals ---- */
    gpumem_module *cm = NULL;
    st = gpumem_module_load(ctx, const_ptx, 0, &cm);
    if (!is_int(st, GPUMEM_OK, "load the module with globals"))
        bail_out("%s", gpumem_last_error());
    uint64_t gets1 = calls("cuModuleGetGlobal"), coeffs = 0, bias = 0, table = 0, dtable = 0, again = 0;
    size_t bytes = 0, bias_bytes = 0, table_bytes = 0, dtable_bytes = 0;
    is_int(gpumem_module_get_global(cm, "coeffs", &coeffs, &bytes), GPUMEM_OK, "get_global(coeffs)");
    is_int(bytes, 64, "__constant__ coeffs has 64 bytes");
    gpumem_module_get_global(cm, "coeffs", &again, NULL);
    ok(again == coeffs && coeffs != 0, "the same address again");
    is_int(calls("cuModuleGetGlobal") - gets1, 1, "one cuModuleGetGlobal for two lookups");
    gpumem_module_get_global(cm, "bias", &bias, &bias_bytes);
    gpumem_module_get_global(cm, "table", &table, &table_bytes);
    gpumem_module_get_global(cm, "dtable", &dtable, &dtable_bytes);
    is_int(bias_bytes, 4, "bias has 4 bytes");
    is_int(table_bytes, 16, "table[4] of .u32 has 16 bytes");
    is_int(dtable_bytes, 16, "dtable[] takes its initializer's 2 doubles");
    float bias_v = 0;
    uint32_t table_v[4] = {0};
    double dtable_v[2] = {0};
    read_device(ctx, bias, &bias_v, 4);
    read_device(ctx, table, table_v, 16);
    read_device(ctx, dtable, dtable_v, 16);
    ok(bias_v == 1.0f, "bias starts as its initializer 0f3F800000 (1.0)");
    ok(table_v[0] == 1 && table_v[1] == 2 && table_v[2] == 3 && table_v[3] == 4, "table starts as {1, 2, 3, 4}");
    ok(dtable_v[0] == 0.5 && dtable_v[1] == -2.25, "dtable starts as {0.5, -2.25}");
    is_int(gpumem_module_get_global(cm, "nope", NULL, NULL), GPUMEM_ERROR_NOT_FOUND, "an unknown global");
    like(gpumem_last_error(), "'nope'", "the message names it");

    /* ---- const.array_like ---- */
    float host[16], back[16];
    for (int i = 0; i < 16; i++)
        host[i] = (float)i * 0.5f;
    gpumem_array *h = NULL, *c = NULL, *hb = NULL;
    gpumem_host_array_wrap(host, 1, (int64_t[]){16}, NULL, f32, &h);
    gpumem_host_array_wrap(back, 1, (int64_t[]){16}, NULL, f32, &hb);
    st = gpumem_const_array_like(cm, "coeffs", h, NULL, &c);
    if (!is_int(st, GPUMEM_OK, "const_array_like(coeffs)"))
        diag("%s", gpumem_last_error());
    uint64_t cptr = 0;
    gpumem_array_device_pointer(c, &cptr);
    ok(cptr == coeffs, "the array views the symbol's memory");
    gpumem_memory_kind kind = GPUMEM_MEMORY_HOST;
    gpumem_array_kind(c, &kind);
    is_int(kind, GPUMEM_MEMORY_DEVICE, "a device array");
    memset(back, 0, sizeof back);
    gpumem_copy_to_host(c, hb, NULL);
    ok(memcmp(back, host, sizeof host) == 0, "it holds the host values");
    float raw[16] = {0};
    read_device(ctx, coeffs, raw, 64);
    ok(memcmp(raw, host, sizeof host) == 0, "so does the __constant__ memory itself");
    float big_data[17] = {0};
    gpumem_array *big = NULL, *c2 = NULL;
    gpumem_host_array_wrap(big_data, 1, (int64_t[]){17}, NULL, f32, &big);
    is_int(gpumem_const_array_like(cm, "coeffs", big, NULL, &c2), GPUMEM_ERROR_INVALID_VALUE,
           "68 bytes do not fit in 64");
    like(gpumem_last_error(), "coeffs", "the message names the symbol");
    is_int(gpumem_const_array_like(cm, "nope", h, NULL, &c2), GPUMEM_ERROR_NOT_FOUND, "an unknown symbol");
    ok(c2 == NULL, "no array on failure");
    gpumem_array_release(big);
    /* 2-D with a stream: [[1, 2], [3, 4]] into table (as int32) */
    int32_t t2[2][2] = {{10, 20}, {30, 40}};
    gpumem_array *ht = NULL, *ct = NULL;
    gpumem_host_array_wrap(t2, 2, (int64_t[]){2, 2}, NULL, gpumem_dtype_builtin(GPUMEM_INT32), &ht);
    gpumem_stream *s = NULL;
    gpumem_stream_create(ctx, 0, &s);
    is_int(gpumem_const_array_like(cm, "table", ht, s, &ct), GPUMEM_OK, "a 2-D array on a stream");
    gpumem_stream_synchronize(s);
    read_device(ctx, table, table_v, 16);
    ok(table_v[0] == 10 && table_v[3] == 40, "arrives after the synchronization");
    int ndim = 0;
    gpumem_array_ndim(ct, &ndim);
    is_int(ndim, 2, "with the array's shape");
    gpumem_array_release(ct);
    gpumem_array_release(ht);

    /* ---- kernel attributes ---- */
    gpumem_function *uc = NULL, *ws = NULL;
    gpumem_module_get_function(cm, "use_const", &uc);
    gpumem_module_get_function(cm, "with_shared", &ws);
    int regs = -1, maxt = -1, shared = -1, cbytes = -1, binv = -1, dyn = -1;
    is_int(gpumem_function_attribute(scale, GPUMEM_FUNCTION_NUM_REGS, &regs), GPUMEM_OK, "NUM_REGS");
    is_int(gpumem_function_attribute(scale, GPUMEM_FUNCTION_MAX_THREADS_PER_BLOCK, &maxt), GPUMEM_OK,
           "MAX_THREADS_PER_BLOCK");
    gpumem_function_attribute(ws, GPUMEM_FUNCTION_SHARED_SIZE_BYTES, &shared);
    gpumem_function_attribute(uc, GPUMEM_FUNCTION_CONST_SIZE_BYTES, &cbytes);
    gpumem_function_attribute(scale, GPUMEM_FUNCTION_BINARY_VERSION, &binv);
    int major = 0, minor = 0, dev = 0;
    gpumem_context_get_device(ctx, &dev);
    gpumem_device_compute_capability(dev, &major, &minor);
    if (sim)
        is_int(regs, 32, "the simulator says 32 registers");
    else
        ok(regs > 0 && regs <= 255, "a plausible register count (%d)", regs);
    ok(maxt > 0 && maxt <= 1024, "a plausible block limit (%d)", maxt);
    is_int(shared, 1024, "with_shared has 1 KiB of static shared memory");
    ok(cbytes >= 64, "use_const's module has at least its 64 constant bytes (%d)", cbytes);
    is_int(binv, major * 10 + minor, "compiled for the device's architecture");
    is_int(gpumem_function_set_attribute(scale, GPUMEM_FUNCTION_MAX_DYNAMIC_SHARED_SIZE_BYTES, 65536), GPUMEM_OK,
           "opt in to 64 KiB of dynamic shared memory");
    gpumem_function_attribute(scale, GPUMEM_FUNCTION_MAX_DYNAMIC_SHARED_SIZE_BYTES, &dyn);
    is_int(dyn, 65536, "reads back");
    is_int(gpumem_function_set_attribute(scale, GPUMEM_FUNCTION_MAX_DYNAMIC_SHARED_SIZE_BYTES, 1 << 30),
           GPUMEM_ERROR_INVALID_VALUE, "1 GiB is refused");
    is_int(gpumem_function_set_attribute(scale, GPUMEM_FUNCTION_NUM_REGS, 8), GPUMEM_ERROR_INVALID_VALUE,
           "NUM_REGS cannot be set");
    is_int(gpumem_function_attribute(scale, (gpumem_function_attr)99, &regs), GPUMEM_ERROR_INVALID_VALUE,
           "an unknown attribute");
    int blocks = -1;
    st = gpumem_function_max_active_blocks(scale, 256, 0, &blocks);
    if (sim)
        is_int(st, GPUMEM_ERROR_NOT_SIMULATED, "max_active_blocks is not simulated");
    else
        ok(st == GPUMEM_OK && blocks >= 1, "the driver's occupancy: %d blocks of 256", blocks);

    /* ---- launches ---- */
    enum { N = 1000 };
    float x[N], y[N];
    for (int i = 0; i < N; i++)
        x[i] = (float)i;
    gpumem_array *hx = NULL, *hy = NULL, *dx = NULL, *dy = NULL, *mx = NULL;
    gpumem_host_array_wrap(x, 1, (int64_t[]){N}, NULL, f32, &hx);
    gpumem_host_array_wrap(y, 1, (int64_t[]){N}, NULL, f32, &hy);
    gpumem_to_device(ctx, hx, NULL, 0, &dx);
    gpumem_device_array(ctx, 1, (int64_t[]){N}, NULL, f32, 'C', NULL, &dy);
    uint64_t px = 0, py = 0;
    gpumem_array_device_pointer(dx, &px);
    gpumem_array_device_pointer(dy, &py);
    float a = 3.0f;
    unsigned n = N;
    void *params[] = {&py, &px, &a, &n};
    unsigned grid[3] = {(N + 127) / 128, 1, 1}, block[3] = {128, 1, 1};
    is_int(gpumem_launch(scale, (unsigned[3]){0, 1, 1}, block, 0, NULL, params), GPUMEM_ERROR_INVALID_VALUE,
           "a grid extent of 0");
    like(gpumem_last_error(), "grid[0]", "names it");
    gpumem_context *ctx2 = NULL;
    gpumem_stream *s2 = NULL;
    st = gpumem_launch(scale, grid, block, 0, s, params);
    if (sim) {
        is_int(st, GPUMEM_ERROR_NOT_SIMULATED, "a launch on the simulator is not simulated");
        like(gpumem_last_error(), "'scale'", "the message names the kernel");
        skip(5, no_kernels);
    } else {
        is_int(st, GPUMEM_OK, "launch scale on a stream");
        gpumem_stream_synchronize(s);
        memset(y, 0, sizeof y);
        gpumem_copy_to_host(dy, hy, NULL);
        int good = 1;
        for (int i = 0; i < N; i++)
            good = good && y[i] == 3.0f * (float)i;
        ok(good, "y = 3 x");

        /* a mapped array: the kernel reads host memory through its device pointer, no copy */
        gpumem_mapped_array(ctx, 1, (int64_t[]){N}, NULL, f32, 'C', NULL, 0, &mx);
        float *mh = NULL;
        gpumem_array_host_pointer(mx, (void **)&mh);
        for (int i = 0; i < N; i++)
            mh[i] = (float)(N - i);
        uint64_t mp = 0;
        gpumem_array_device_pointer(mx, &mp);
        void *mparams[] = {&py, &mp, &a, &n};
        uint64_t copies = calls("cuMemcpy") + calls("cuMemcpy2D") + calls("cuMemcpy3D");
        is_int(gpumem_launch(scale, grid, block, 0, NULL, mparams), GPUMEM_OK, "launch on a mapped array");
        gpumem_context_synchronize(ctx);
        is_int(calls("cuMemcpy") + calls("cuMemcpy2D") + calls("cuMemcpy3D") - copies, 0,
               "no copy between the host writes and the kernel");
        gpumem_copy_to_host(dy, hy, NULL);
        good = 1;
        for (int i = 0; i < N; i++)
            good = good && y[i] == 3.0f * (float)(N - i);
        ok(good, "the kernel read the mapped host memory");

        /* the constant-memory kernel: y = 2 coeffs + bias */
        void *cparams[] = {&py};
        is_int(gpumem_launch(uc, (unsigned[3]){1, 1, 1}, (unsigned[3]){16, 1, 1}, 0, NULL, cparams), GPUMEM_OK,
               "launch use_const");
        gpumem_context_synchronize(ctx);
        gpumem_copy_to_host(dy, hy, NULL);
        good = 1;
        for (int i = 0; i < 16; i++)
            good = good && y[i] == 2.0f * host[i] + 1.0f;
        ok(good, "it read const_array_like's values from __constant__ memory");
    }
    /* streams: another handle on the same device shares its primary
     * context and may be used; another device's may not */
    gpumem_context_create(0, &ctx2);
    gpumem_stream_create(ctx2, 0, &s2);
    is_int(gpumem_launch(scale, grid, block, 0, s2, params), sim ? GPUMEM_ERROR_NOT_SIMULATED : GPUMEM_OK,
           "a stream of another handle on the same device is accepted");
    gpumem_stream_synchronize(s2);
    gpumem_stream_destroy(s2);
    int ndev = 0;
    gpumem_device_count(&ndev);
    if (ndev > 1) {
        gpumem_context *ctx3 = NULL;
        gpumem_stream *s3 = NULL;
        gpumem_context_create(1, &ctx3);
        gpumem_stream_create(ctx3, 0, &s3);
        is_int(gpumem_launch(scale, grid, block, 0, s3, params), GPUMEM_ERROR_CONTEXT_MISMATCH,
               "a stream of another device is refused");
        is_int(gpumem_const_array_like(cm, "coeffs", h, s3, &c2), GPUMEM_ERROR_CONTEXT_MISMATCH,
               "const_array_like refuses it too");
        gpumem_stream_destroy(s3);
        gpumem_context_release(ctx3);
    } else {
        skip(2, "one device: no stream of another device");
    }

    /* ---- bad images ---- */
    gpumem_module *bad = NULL;
    is_int(gpumem_module_load(ctx, "", 0, &bad), GPUMEM_ERROR_INVALID_VALUE, "an empty image");
    is_int(gpumem_module_load(ctx, NULL, 0, &bad), GPUMEM_ERROR_NULL_ARGUMENT, "a NULL image");
    static const char bad_type[] = ".version 7.0\n.target sm_50\n.address_size 64\n.global .f33 x;\n";
    is_int(gpumem_module_load(ctx, bad_type, 0, &bad), GPUMEM_ERROR_DRIVER, "a PTX with an unknown type");
    like(gpumem_last_error(), "CUDA_ERROR_INVALID_PTX", "is CUDA_ERROR_INVALID_PTX");
    like(gpumem_last_error(), "log: ", "with the JIT's log");
    diag("%s", gpumem_last_error());
    is_int(gpumem_module_load(ctx, "this is not PTX", 0, &bad), GPUMEM_ERROR_DRIVER, "text that is not PTX");
    ok(bad == NULL, "no module on failure");
    if (sim) {
        /* not given to a real driver: it trusts the offsets of an ELF */
        unsigned char junk[256];
        memset(junk, 0x5a, sizeof junk);
        memcpy(junk, "\x7f" "ELF", 4);
        junk[4] = 2;
        junk[5] = 1;
        is_int(gpumem_module_load(ctx, junk, sizeof junk, &bad), GPUMEM_ERROR_DRIVER, "a malformed cubin");
        like(gpumem_last_error(), "CUDA_ERROR_INVALID_IMAGE", "is CUDA_ERROR_INVALID_IMAGE");
        like(gpumem_last_error(), "log: gpumem sim: cubin", "the loader's log says what is wrong");
    } else {
        skip(3, "a malformed cubin is only given to the simulator");
    }

    /* ---- a cubin and fat binaries ---- */
    static unsigned char cubin[4096], fat[8192];
    size_t cubin_size = make_cubin(cubin, sizeof cubin);
    if (sim) {
        gpumem_module *cb = NULL, *cb0 = NULL;
        gpumem_function *kern = NULL, *helper = NULL;
        is_int(gpumem_module_load(ctx, cubin, cubin_size, &cb), GPUMEM_OK, "the simulator reads a cubin");
        is_int(gpumem_module_load(ctx, cubin, 0, &cb0), GPUMEM_OK, "size 0: from its ELF headers");
        ok(cb0 == cb, "the same module");
        is_int(gpumem_module_get_function(cb, "kern", &kern), GPUMEM_OK, "its kernel");
        is_int(gpumem_module_get_function(cb, "helper", &helper), GPUMEM_ERROR_NOT_FOUND,
               "a local function is no kernel");
        int ksh = 0;
        gpumem_function_attribute(kern, GPUMEM_FUNCTION_SHARED_SIZE_BYTES, &ksh);
        is_int(ksh, 256, "its .nv.shared.kern section is its static shared memory");
        uint64_t lut = 0, ctr = 0;
        size_t lut_bytes = 0, ctr_bytes = 0;
        gpumem_module_get_global(cb, "lut", &lut, &lut_bytes);
        gpumem_module_get_global(cb, "counters", &ctr, &ctr_bytes);
        ok(lut_bytes == 16 && ctr_bytes == 32, "globals with their st_size");
        float lut_v[4] = {0};
        unsigned char ctr_v[32];
        read_device(ctx, lut, lut_v, 16);
        read_device(ctx, ctr, ctr_v, 32);
        ok(lut_v[0] == 1 && lut_v[3] == 4, "the constant initialized from .nv.constant3");
        int zero = 1;
        for (int i = 0; i < 32; i++)
            zero = zero && ctr_v[i] == 0;
        ok(zero, "the NOBITS global zeroed");
        gpumem_module_release(cb0);
        gpumem_module_release(cb);

        size_t fs = make_fatbin(fat, 2, (unsigned)(major * 10 + minor), 0, cubin, cubin_size);
        gpumem_module *fm = NULL;
        gpumem_function *fk = NULL;
        is_int(gpumem_module_load(ctx, fat, fs, &fm), GPUMEM_OK, "a fat binary with the device's cubin");
        is_int(gpumem_module_get_function(fm, "kern", &fk), GPUMEM_OK, "its kernel");
        gpumem_module_release(fm);
        fs = make_fatbin(fat, 2, 35, 0, cubin, cubin_size);
        is_int(gpumem_module_load(ctx, fat, fs, &fm), GPUMEM_ERROR_DRIVER, "a fat binary for sm_35 only");
        like(gpumem_last_error(), "CUDA_ERROR_NO_BINARY_FOR_GPU", "has no binary for the device");
        fs = make_fatbin(fat, 1, 50, 0x2000, empty_ptx, sizeof empty_ptx);
        is_int(gpumem_module_load(ctx, fat, fs, &fm), GPUMEM_ERROR_DRIVER, "a compressed fat binary");
        like(gpumem_last_error(), "compressed", "the simulator says it cannot decompress it");
        like(gpumem_last_error(), "CUDA_ERROR_INVALID_IMAGE", "CUDA_ERROR_INVALID_IMAGE");
    } else {
        skip(16, "a hand-made cubin is only for the simulator; the driver needs a real one");
    }
    /* a fat binary holding PTX, directly and through nvcc's wrapper struct
     * (run in the child forked at the start) */
    ok(forked == 0 && fatptx.exited && fatptx.exit_code == 0, "the fat binary child ran (exit %d)",
       fatptx.exit_code);
    if (!is_int(fatptx.value[0], GPUMEM_OK, "a fat binary holding PTX"))
        diag("%s", fatptx.text);
    is_int(fatptx.value[1], GPUMEM_OK, "its kernel");
    ok(fatptx.value[2] == 1, "size 0: from its header, the same module");
    ok((fatptx.value[3] & 1) == 1, "through the __fatBinC_Wrapper_t: the same module");
    is_int(fatptx.value[3] >> 8, 1, "one load for the three");

    /* ---- concurrent first loads ---- */
    enum { T = 8 };
    pthread_t th[T];
    load_arg args[T];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, T);
    static const char race_ptx[] = ".version 7.0\n.target sm_50\n.address_size 64\n"
                                   ".visible .entry race()\n{\n    ret;\n}\n";
    uint64_t loads2 = calls("cuModuleLoadDataEx");
    for (int i = 0; i < T; i++) {
        args[i] = (load_arg){ctx, race_ptx, &start, NULL, GPUMEM_ERROR_INTERNAL};
        pthread_create(&th[i], NULL, load_thread, &args[i]);
    }
    int same = 1, all_ok = 1;
    for (int i = 0; i < T; i++) {
        pthread_join(th[i], NULL);
        all_ok = all_ok && args[i].st == GPUMEM_OK;
        same = same && args[i].module == args[0].module;
    }
    ok(all_ok && same, "%d threads loading one new image get one module", T);
    is_int(calls("cuModuleLoadDataEx") - loads2, 1, "from one cuModuleLoadDataEx");
    for (int i = 0; i < T; i++)
        gpumem_module_release(args[i].module);
    pthread_barrier_destroy(&start);

    /* ---- a failed load is not cached ---- */
    gpumem_module *fl = NULL;
    gpumem_debug_fail_call(1, 2 /* CUDA_ERROR_OUT_OF_MEMORY */);
    is_int(gpumem_module_load(ctx, empty_ptx, 0, &fl), GPUMEM_ERROR_OUT_OF_MEMORY, "an injected failure");
    is_int(gpumem_module_load(ctx, empty_ptx, 0, &fl), GPUMEM_OK, "the next load tries again, and works");
    gpumem_module_release(fl);

    /* ---- lifetime: clear_context_caches, held modules, context release ---- */
    uint64_t unloads = calls("cuModuleUnload");
    int refs_before = 0, refs_after = 0;
    gpumem_context_refcount(ctx2, &refs_before);
    gpumem_module *m5 = NULL, *m6 = NULL;
    gpumem_module_load(ctx2, scale_ptx, 0, &m5);
    ok(m5 != m1, "another context handle has its own cache");
    gpumem_module_release(m5);
    gpumem_context_refcount(ctx2, &refs_after);
    is_int(refs_after, refs_before, "the cache holds no context reference");
    gpumem_context_release(ctx2);
    is_int(calls("cuModuleUnload") - unloads, 1, "releasing the context unloads its module");

    gpumem_module_release(cm); /* our reference goes; the const array's and the cache's stay */
    unloads = calls("cuModuleUnload");
    uint64_t loads3 = calls("cuModuleLoadDataEx");
    is_int(gpumem_clear_context_caches(), GPUMEM_OK, "clear_context_caches");
    /* cached and held by no one: the changed scale text, empty_ptx, race
     * (and on the simulator the cubin and its fat binary) */
    is_int(calls("cuModuleUnload") - unloads, sim ? 5 : 3, "unloads every module that no one holds");
    memset(back, 0, sizeof back);
    is_int(gpumem_copy_to_host(c, hb, NULL), GPUMEM_OK, "a const array still reads its symbol");
    ok(memcmp(back, host, sizeof host) == 0, "with its values");
    gpumem_array_release(c);
    is_int(calls("cuModuleUnload") - unloads, sim ? 6 : 4, "its release unloads the module it held");
    gpumem_module_load(ctx, scale_ptx, 0, &m6);
    ok(m6 != NULL && m6 != m1, "after the clear, a load gives a new module");
    is_int(calls("cuModuleLoadDataEx") - loads3, 1, "from a new driver load");
    gpumem_function *old = NULL;
    is_int(gpumem_module_get_function(m1, "scale", &old), GPUMEM_OK, "the old module still works while held");
    ok(old == scale, "with its looked-up kernel");
    gpumem_module_release(m1);
    is_int(calls("cuModuleUnload") - unloads, sim ? 7 : 5, "releasing it unloads it");
    gpumem_module_release(m6); /* the cache keeps it */
    gpumem_stream_destroy(s);
    gpumem_array_release(h);
    gpumem_array_release(hb);
    gpumem_array_release(hx);
    gpumem_array_release(hy);
    gpumem_array_release(dx);
    gpumem_array_release(dy);
    gpumem_array_release(mx);
    unloads = calls("cuModuleUnload");
    gpumem_context_release(ctx);
    is_int(calls("cuModuleUnload") - unloads, 1, "the last context release unloads the cached scale module");

    /* the images' integers are little-endian whatever the host's order */
    static const unsigned char le[8] = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08};
    ok(rd16(le) == 0x0201 && rd32(le) == UINT32_C(0x04030201) && rd64(le) == UINT64_C(0x0807060504030201),
       "image fields are read little-endian (bytes.h)");
    uint32_t native = GM_FATBINC_WRAPPER_MAGIC;
    ok(rd32_host((const unsigned char *)&native) == GM_FATBINC_WRAPPER_MAGIC,
       "and the fatbin wrapper, a host structure, in host order");
    done_testing();
    return exit_status();
}
