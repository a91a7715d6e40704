/*
 * module.c - the kernel cache: module images loaded once per context and
 * content (through memo.c), kernels and globals looked up once per module,
 * launches, kernel attributes, and numba's const.array_like.
 */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "array.h"
#include "copy_engine.h"
#include "error.h"
#include "memo.h"
#include "module.h"
#include "stream.h"

/* ---- images ------------------------------------------------------------------------- */

enum { IMAGE_PTX, IMAGE_ELF, IMAGE_FATBIN };

/* The format of the image at b; reads at most 4 bytes, and no byte past a
 * NUL (a short PTX string). */
static int image_format(const unsigned char *b, size_t size)
{
    size_t avail = size;
    if (size == 0) /* NUL-terminated, or a binary whose magic has no NUL */
        for (avail = 0; avail < 4 && b[avail] != '\0'; avail++) {
        }
    if (avail < 4)
        return IMAGE_PTX;
    if (b[0] == 0x7f && b[1] == 'E' && b[2] == 'L' && b[3] == 'F')
        return IMAGE_ELF;
    if (rd32(b) == GM_FATBIN_MAGIC)
        return IMAGE_FATBIN;
    return IMAGE_PTX;
}

static bool grow_end(uint64_t *end, uint64_t off, uint64_t len)
{
    if (off > UINT64_MAX - len)
        return false;
    if (off + len > *end)
        *end = off + len;
    return true;
}

/* A 64-bit ELF file's size from its headers: the furthest byte that its
 * header tables, sections and segments cover. */
static gpumem_status elf_size(const char *what, const unsigned char *b, size_t *size)
{
    if (b[4] != 2 || b[5] != 1)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: 'size' is 0, which needs a 64-bit little-endian cubin "
                        "to read the image's size from; pass the image's size", what);
    uint64_t end = 64, phoff = rd64(b + 32), shoff = rd64(b + 40);
    unsigned phentsize = rd16(b + 54), phnum = rd16(b + 56), shentsize = rd16(b + 58), shnum = rd16(b + 60);
    bool ok = grow_end(&end, phoff, (uint64_t)phnum * phentsize) &&
              grow_end(&end, shoff, (uint64_t)shnum * shentsize) && (shnum == 0 || shentsize >= 40) &&
              (phnum == 0 || phentsize >= 40) && end < (UINT64_C(1) << 40);
    for (unsigned i = 0; ok && i < shnum; i++) {
        const unsigned char *s = b + shoff + (uint64_t)i * shentsize;
        if (rd32(s + 4) != 8 /* SHT_NOBITS */)
            ok = grow_end(&end, rd64(s + 24), rd64(s + 32));
    }
    for (unsigned i = 0; ok && i < phnum; i++) {
        const unsigned char *p = b + phoff + (uint64_t)i * phentsize;
        ok = grow_end(&end, rd64(p + 8), rd64(p + 32));
    }
    if (!ok || end > SIZE_MAX || end >= (UINT64_C(1) << 40))
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: 'size' is 0, and the headers of the cubin 'image' give "
                        "no believable size; pass the image's size", what);
    *size = (size_t)end;
    return GPUMEM_OK;
}

/* What gpumem_module_load caches and loads: the image bytes that are the
 * key (PTX without its NUL), and its format. */
typedef struct image {
    const unsigned char *bytes;
    size_t size;
    int format;
} image;

static gpumem_status image_resolve(const char *what, const void *data, size_t size, image *out)
{
    const unsigned char *b = data;
    /* the wrapper of nvcc's host code points at the fat binary */
    bool four = size >= 4 || (size == 0 && b[0] && b[1] && b[2] && b[3]); /* stops at a NUL */
    if (four && rd32_host(b) == GM_FATBINC_WRAPPER_MAGIC && (size == 0 || size >= sizeof(gm_cu_fatbin_wrapper))) {
        gm_cu_fatbin_wrapper w;
        memcpy(&w, b, sizeof w);
        if (w.data == NULL)
            return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: 'image' is a fatbin wrapper whose data pointer is NULL", what);
        b = (const unsigned char *)w.data;
        size = 0;
        if (image_format(b, 0) != IMAGE_FATBIN)
            return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: 'image' is a fatbin wrapper that does not point at a fat binary "
                            "(magic 0x%08x)", what, GM_FATBIN_MAGIC);
    }
    int format = image_format(b, size);
    if (size == 0) {
        if (format == IMAGE_FATBIN) {
            uint64_t total = (uint64_t)rd16(b + 6) + rd64(b + 8);
            if (rd16(b + 6) < 16 || total < rd64(b + 8) || total > SIZE_MAX || total >= (UINT64_C(1) << 40))
                return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: 'size' is 0, and the header of the fat binary "
                                "'image' gives no believable size; pass the image's size", what);
            size = (size_t)total;
        } else if (format == IMAGE_ELF) {
            gpumem_status st = elf_size(what, b, &size);
            if (st != GPUMEM_OK)
                return st;
        } else {
            size = strlen((const char *)b);
        }
    } else if (format == IMAGE_PTX && b[size - 1] == '\0') {
        size--; /* the terminator is not part of the text */
    }
    if (size == 0)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: 'image' is empty", what);
    *out = (image){b, size, format};
    return GPUMEM_OK;
}

/* ---- modules -------------------------------------------------------------------------- */

static gpumem_status module_free(gpumem_module *m)
{
    gpumem_status st = GPUMEM_OK;
    /* at exit the driver may be tearing itself down; it unloads with the context */
    if (!gm_process_exiting())
        st = gm_drv_check(GM_DRV(module_unload, m->ctx->dctx, m->dm), GM_OP_module_unload, "gpumem_module_release");
    for (struct gpumem_function *f = m->functions, *next; f != NULL; f = next) {
        next = f->next;
        gm_handle_free(f);
    }
    for (gm_global *g = m->globals, *next; g != NULL; g = next) {
        next = g->next;
        free(g);
    }
    pthread_rwlock_destroy(&m->lock);
    gm_handle_free(m);
    return st;
}

static gpumem_status module_unref(gpumem_module *m)
{
    if (atomic_fetch_sub_explicit(&m->refs, 1, memory_order_acq_rel) == 1)
        return module_free(m);
    return GPUMEM_OK;
}

void gm_module_hold(gpumem_module *m)
{
    atomic_fetch_add_explicit(&m->refs, 1, memory_order_relaxed);
}

gpumem_status gm_module_drop(gpumem_module *m)
{
    return m == NULL ? GPUMEM_OK : module_unref(m);
}

/* memo.c's callbacks for the kernel cache: the key is the image (PTX
 * without its NUL); user is the `what` of the load that makes the entry
 * (read only while it does). */
static gpumem_status module_create(gpumem_context *ctx, const void *key, size_t key_size, void *user, void **value)
{
    const char *what = user;
    bool ptx = image_format(key, key_size) == IMAGE_PTX;
    gpumem_module *m = gm_handle_new_zeroed(GM_HANDLE_MODULE, sizeof *m);
    char *text = NULL;
    if (m == NULL || (ptx && (text = malloc(key_size + 1)) == NULL)) {
        gm_handle_free(m);
        return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", what);
    }
    const void *load = key;
    if (ptx) { /* the driver reads PTX up to its NUL */
        memcpy(text, key, key_size);
        text[key_size] = '\0';
        load = text;
    }
    char log[4096];
    log[0] = '\0';
    int rc = GM_DRV(module_load_data, ctx->dctx, &m->dm, load, text != NULL ? key_size + 1 : key_size, log,
                    sizeof log);
    free(text);
    if (rc != 0) {
        gm_handle_free(m);
        /* the log, on one line */
        size_t n = strlen(log);
        while (n > 0 && (log[n - 1] == '\n' || log[n - 1] == '\r' || log[n - 1] == ' '))
            log[--n] = '\0';
        for (size_t i = 0; i < n; i++)
            if (log[i] == '\n' || log[i] == '\r')
                log[i] = ' ';
        gpumem_status st = gm_drv_check(rc, GM_OP_module_load_data, what);
        if (n == 0)
            return st;
        return gm_error_reword(st, "%s; log: %s", gm_error_message(), log);
    }
    atomic_init(&m->refs, 1); /* the cache's */
    m->ctx = ctx;
    pthread_rwlock_init(&m->lock, NULL);
    *value = m;
    return GPUMEM_OK;
}

static void module_cache_drop(void *value, void *user)
{
    (void)user;
    module_unref(value);
}

/* A caller of gpumem_module_load gets a reference. */
static void module_acquire(void *value)
{
    gpumem_module *m = value;
    atomic_fetch_add_explicit(&m->refs, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->user_refs, 1, memory_order_relaxed);
}

gpumem_status gm_module_load(const char *what, gpumem_context *ctx, const void *image_data, size_t size,
                             gpumem_module **module)
{
    image img = {NULL, 0, IMAGE_PTX};
    gpumem_status st = image_resolve(what, image_data, size, &img);
    if (st != GPUMEM_OK)
        return st;
    void *v;
    st = gm_memo_get(what, ctx, img.bytes, img.size, module_create, module_cache_drop, (void *)what, module_acquire,
                     &v);
    if (st != GPUMEM_OK)
        return st;
    gpumem_context_retain(ctx); /* the caller's reference holds the context */
    *module = v;
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_module_load(gpumem_context *ctx, const void *image_data, size_t size,
                                            gpumem_module **module)
{
    if (image_data == NULL) /* the header's name */
        return gm_error(GPUMEM_ERROR_NULL_ARGUMENT, "gpumem_module_load: argument 'image' is NULL");
    GM_CHECK_NULL(module);
    gpumem_status st;
    ctx = gm_context_or_default(ctx, &st);
    if (st != GPUMEM_OK)
        return st;
    return gm_module_load("gpumem_module_load", ctx, image_data, size, module);
}

GPUMEM_API gpumem_status gpumem_module_retain(gpumem_module *module)
{
    GM_CHECK_HANDLE(module);
    gpumem_context_retain(module->ctx);
    atomic_fetch_add_explicit(&module->refs, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&module->user_refs, 1, memory_order_relaxed);
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_module_release(gpumem_module *module)
{
    if (module == NULL)
        return GPUMEM_OK;
    GM_CHECK_HANDLE(module);
    /* The kernel cache keeps a module alive after its callers' last
     * release: their count tells a release too many. */
    if (atomic_fetch_sub_explicit(&module->user_refs, 1, memory_order_relaxed) <= 0) {
        atomic_fetch_add_explicit(&module->user_refs, 1, memory_order_relaxed);
        return gm_error(GPUMEM_ERROR_INVALID_STATE, "gpumem_module_release: 'module' was released already (more "
                        "often than it was loaded and retained; the kernel cache still holds it)");
    }
    gpumem_context *ctx = module->ctx;
    gpumem_status st = module_unref(module); /* unloads while ctx is still held */
    gpumem_status cst = gm_context_release_as(ctx, "gpumem_module_release");
    return st != GPUMEM_OK ? st : cst;
}

GPUMEM_API gpumem_status gpumem_module_context(const gpumem_module *module, gpumem_context **ctx)
{
    GM_CHECK_HANDLE(module);
    GM_CHECK_NULL(ctx);
    *ctx = module->ctx;
    return GPUMEM_OK;
}

/* ---- names ------------------------------------------------------------------------------ */

static struct gpumem_function *find_function(const gpumem_module *m, const char *name)
{
    for (struct gpumem_function *f = m->functions; f != NULL; f = f->next)
        if (strcmp(f->name, name) == 0)
            return f;
    return NULL;
}

static gm_global *find_global(const gpumem_module *m, const char *name)
{
    for (gm_global *g = m->globals; g != NULL; g = g->next)
        if (strcmp(g->name, name) == 0)
            return g;
    return NULL;
}

gpumem_status gm_module_get_function(const char *what, gpumem_module *module, const char *name,
                                     gpumem_function **function)
{
    pthread_rwlock_rdlock(&module->lock);
    struct gpumem_function *f = find_function(module, name);
    pthread_rwlock_unlock(&module->lock);
    if (f != NULL) {
        *function = f;
        return GPUMEM_OK;
    }
    gpumem_status st = GPUMEM_OK;
    pthread_rwlock_wrlock(&module->lock);
    if ((f = find_function(module, name)) == NULL) {
        size_t len = strlen(name);
        gm_dfunc *df = NULL;
        int rc = GM_DRV(module_get_function, module->ctx->dctx, &df, module->dm, name);
        if (rc != 0) {
            char where[400];
            snprintf(where, sizeof where, "%s: no kernel '%.100s' in the module", what, name);
            st = gm_drv_check(rc, GM_OP_module_get_function, where);
        } else if ((f = gm_handle_new(GM_HANDLE_FUNCTION, sizeof *f + len + 1)) == NULL) {
            st = gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", what);
        } else {
            f->module = module;
            f->df = df;
            memcpy(f->name, name, len + 1);
            f->next = module->functions;
            module->functions = f;
        }
    }
    pthread_rwlock_unlock(&module->lock);
    if (st == GPUMEM_OK)
        *function = f;
    return st;
}

GPUMEM_API gpumem_status gpumem_module_get_function(gpumem_module *module, const char *name,
                                                    gpumem_function **function)
{
    GM_CHECK_HANDLE(module);
    GM_CHECK_NULL(name);
    GM_CHECK_NULL(function);
    return gm_module_get_function("gpumem_module_get_function", module, name, function);
}

/* The global `name` of m, looked up once. */
static gpumem_status get_global(const char *what, gpumem_module *m, const char *name, gm_global **out)
{
    pthread_rwlock_rdlock(&m->lock);
    gm_global *g = find_global(m, name);
    pthread_rwlock_unlock(&m->lock);
    if (g != NULL) {
        *out = g;
        return GPUMEM_OK;
    }
    gpumem_status st = GPUMEM_OK;
    pthread_rwlock_wrlock(&m->lock);
    if ((g = find_global(m, name)) == NULL) {
        size_t len = strlen(name), bytes = 0;
        gm_cu_deviceptr ptr = 0;
        int rc = GM_DRV(module_get_global, m->ctx->dctx, &ptr, &bytes, m->dm, name);
        if (rc != 0) {
            char where[180];
            snprintf(where, sizeof where, "%s: no __device__ or __constant__ variable '%.100s' in the module", what,
                     name);
            st = gm_drv_check(rc, GM_OP_module_get_global, where);
        } else if ((g = malloc(sizeof *g + len + 1)) == NULL) {
            st = gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", what);
        } else {
            g->ptr = ptr;
            g->bytes = bytes;
            memcpy(g->name, name, len + 1);
            g->next = m->globals;
            m->globals = g;
        }
    }
    pthread_rwlock_unlock(&m->lock);
    if (st == GPUMEM_OK)
        *out = g;
    return st;
}

GPUMEM_API gpumem_status gpumem_module_get_global(gpumem_module *module, const char *name, uint64_t *pointer,
                                                  size_t *bytes)
{
    GM_CHECK_HANDLE(module);
    GM_CHECK_NULL(name);
    gm_global *g;
    gpumem_status st = get_global("gpumem_module_get_global", module, name, &g);
    if (st != GPUMEM_OK)
        return st;
    if (pointer != NULL)
        *pointer = g->ptr;
    if (bytes != NULL)
        *bytes = g->bytes;
    return GPUMEM_OK;
}

/* ---- functions ---------------------------------------------------------------------------- */

GPUMEM_API gpumem_status gpumem_function_name(const gpumem_function *function, const char **name)
{
    GM_CHECK_HANDLE(function);
    GM_CHECK_NULL(name);
    *name = function->name;
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_function_module(const gpumem_function *function, gpumem_module **module)
{
    GM_CHECK_HANDLE(function);
    GM_CHECK_NULL(module);
    *module = function->module;
    return GPUMEM_OK;
}

static const char *attr_name(gpumem_function_attr attr)
{
    switch (attr) {
    case GPUMEM_FUNCTION_MAX_THREADS_PER_BLOCK: return "MAX_THREADS_PER_BLOCK";
    case GPUMEM_FUNCTION_SHARED_SIZE_BYTES: return "SHARED_SIZE_BYTES";
    case GPUMEM_FUNCTION_CONST_SIZE_BYTES: return "CONST_SIZE_BYTES";
    case GPUMEM_FUNCTION_LOCAL_SIZE_BYTES: return "LOCAL_SIZE_BYTES";
    case GPUMEM_FUNCTION_NUM_REGS: return "NUM_REGS";
    case GPUMEM_FUNCTION_PTX_VERSION: return "PTX_VERSION";
    case GPUMEM_FUNCTION_BINARY_VERSION: return "BINARY_VERSION";
    case GPUMEM_FUNCTION_CACHE_MODE_CA: return "CACHE_MODE_CA";
    case GPUMEM_FUNCTION_MAX_DYNAMIC_SHARED_SIZE_BYTES: return "MAX_DYNAMIC_SHARED_SIZE_BYTES";
    case GPUMEM_FUNCTION_PREFERRED_SHARED_MEMORY_CARVEOUT: return "PREFERRED_SHARED_MEMORY_CARVEOUT";
    default: return NULL;
    }
}

/* The public values are CUfunction_attribute's. */
_Static_assert((int)GPUMEM_FUNCTION_NUM_REGS == (int)GM_CU_FUNC_ATTRIBUTE_NUM_REGS &&
                   (int)GPUMEM_FUNCTION_MAX_DYNAMIC_SHARED_SIZE_BYTES ==
                       (int)GM_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES &&
                   (int)GPUMEM_FUNCTION_PREFERRED_SHARED_MEMORY_CARVEOUT ==
                       (int)GM_CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
               "gpumem_function_attr mirrors CUfunction_attribute");

GPUMEM_API gpumem_status gpumem_function_attribute(const gpumem_function *function, gpumem_function_attr attr,
                                                   int *value)
{
    GM_CHECK_HANDLE(function);
    GM_CHECK_NULL(value);
    const char *name = attr_name(attr);
    if (name == NULL)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "gpumem_function_attribute: attr %d is not a "
                        "gpumem_function_attr", (int)attr);
    char what[200];
    snprintf(what, sizeof what, "gpumem_function_attribute: %s of kernel '%.100s'", name, function->name);
    int v = 0;
    gpumem_status st = gm_drv_check(GM_DRV(func_get_attribute, function->module->ctx->dctx, &v, (int)attr,
                                           function->df), GM_OP_func_get_attribute, what);
    if (st == GPUMEM_OK)
        *value = v;
    return st;
}

GPUMEM_API gpumem_status gpumem_function_set_attribute(gpumem_function *function, gpumem_function_attr attr,
                                                       int value)
{
    GM_CHECK_HANDLE(function);
    if (attr != GPUMEM_FUNCTION_MAX_DYNAMIC_SHARED_SIZE_BYTES && attr != GPUMEM_FUNCTION_PREFERRED_SHARED_MEMORY_CARVEOUT)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "gpumem_function_set_attribute: attr %d (%s) cannot be set; "
                        "only MAX_DYNAMIC_SHARED_SIZE_BYTES and PREFERRED_SHARED_MEMORY_CARVEOUT can",
                        (int)attr, attr_name(attr) != NULL ? attr_name(attr) : "not a gpumem_function_attr");
    char what[200];
    snprintf(what, sizeof what, "gpumem_function_set_attribute: %s = %d for kernel '%.100s'", attr_name(attr), value,
             function->name);
    int rc = GM_DRV(func_set_attribute, function->module->ctx->dctx, function->df, (int)attr, value);
    gpumem_status st = gm_drv_check(rc, GM_OP_func_set_attribute, what);
    if (rc == GM_CUDA_ERROR_INVALID_VALUE) /* a value the device refuses */
        st = gm_error_reword(GPUMEM_ERROR_INVALID_VALUE, "%s", gm_error_message());
    return st;
}

GPUMEM_API gpumem_status gpumem_function_max_active_blocks(const gpumem_function *function, int block_threads,
                                                           size_t shared_bytes, int *blocks)
{
    GM_CHECK_HANDLE(function);
    GM_CHECK_NULL(blocks);
    if (block_threads <= 0)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "gpumem_function_max_active_blocks: block_threads is %d; "
                        "it must be positive", block_threads);
    char what[160];
    snprintf(what, sizeof what, "gpumem_function_max_active_blocks: kernel '%.100s'", function->name);
    int n = 0;
    gpumem_status st = gm_drv_check(GM_DRV(occupancy_max_active_blocks, function->module->ctx->dctx, &n,
                                           function->df, block_threads, shared_bytes),
                                    GM_OP_occupancy_max_active_blocks, what);
    if (st == GPUMEM_OK)
        *blocks = n;
    return st;
}

GPUMEM_API gpumem_status gpumem_launch(const gpumem_function *function, const unsigned grid[3],
                                       const unsigned block[3], unsigned shared_bytes, gpumem_stream *stream,
                                       void **params)
{
    GM_CHECK_HANDLE(function);
    GM_CHECK_NULL(grid);
    GM_CHECK_NULL(block);
    static const char axis[3] = {'x', 'y', 'z'};
    for (int i = 0; i < 3; i++) {
        if (grid[i] == 0)
            return gm_error(GPUMEM_ERROR_INVALID_VALUE, "gpumem_launch: grid[%d] (%c) is 0; every extent must be "
                            "at least 1", i, axis[i]);
        if (block[i] == 0)
            return gm_error(GPUMEM_ERROR_INVALID_VALUE, "gpumem_launch: block[%d] (%c) is 0; every extent must "
                            "be at least 1", i, axis[i]);
    }
    gpumem_context *ctx = function->module->ctx;
    gpumem_status st = gm_stream_check(stream, ctx, "gpumem_launch", "function");
    if (st != GPUMEM_OK)
        return st;
    char what[160];
    snprintf(what, sizeof what, "gpumem_launch: kernel '%.100s'", function->name);
    return gm_drv_check(GM_DRV(launch_kernel, ctx->dctx, function->df, grid, block, shared_bytes,
                               gm_stream_ds(stream), params),
                        GM_OP_launch_kernel, what);
}

/* ---- const.array_like ---------------------------------------------------------------------- */

static void array_drops_module(void *module)
{
    gm_error_quietly(module_unref(module)); /* the array's release cannot report it */
}

GPUMEM_API gpumem_status gpumem_const_array_like(gpumem_module *module, const char *symbol,
                                                 const gpumem_array *array, gpumem_stream *stream,
                                                 gpumem_array **device_array)
{
    const char *what = "gpumem_const_array_like";
    GM_CHECK_HANDLE(module);
    GM_CHECK_NULL(symbol);
    GM_CHECK_HANDLE(array);
    GM_CHECK_NULL(device_array);
    GM_FORWARD_IF_ERROR(gm_stream_check(stream, module->ctx, what, "module"));
    gm_global *g;
    GM_FORWARD_IF_ERROR(get_global(what, module, symbol, &g));
    uint64_t nbytes = (uint64_t)gm_array_size(array) * array->itemsize;
    GM_RETURN_ERROR_IF(nbytes > g->bytes, GPUMEM_ERROR_INVALID_VALUE,
                       "%s: the array's %llu bytes do not fit in '%s', which has %zu", what,
                       (unsigned long long)nbytes, symbol, g->bytes);
    atomic_fetch_add_explicit(&module->refs, 1, memory_order_relaxed); /* the new array's */
    gpumem_array *d = NULL;
    gpumem_status st = gm_array_wrap(what, module->ctx, GPUMEM_MEMORY_DEVICE, g->ptr, array->ndim, array->shape,
                                     NULL, array->dtype, array_drops_module, module, &d);
    if (st != GPUMEM_OK) {
        module_unref(module);
        return st;
    }
    char where[200];
    snprintf(where, sizeof where, "%s: copying into '%.100s'", what, symbol);
    st = gm_array_copy(where, d, array, stream);
    if (st != GPUMEM_OK)
        return gm_keep_first(st, gm_array_release_as(d, what));
    *device_array = d;
    return GPUMEM_OK;
}
