/*
 * context.c - devices, contexts, default-device selection (pycuda's
 * make_default_context and get_default_device) and autoinit.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "context.h"
#include "devfile.h"
#include "driver.h"
#include "env.h"
#include "lifecycle.h"
#include "error.h"
#include "stream.h"
#include "trace.h"

/* ---- devices ------------------------------------------------------------------ */

static gpumem_status device_count(int *count, const char *what)
{
    gpumem_status st = gm_driver_ready_for(what);
    if (st != GPUMEM_OK)
        return st;
    return gm_drv_check(GM_DRV(device_get_count, count), GM_OP_device_get_count, what);
}

/* Checks that device is an ordinal the backend knows; `what` names where the
 * number came from in the message. */
static gpumem_status check_device(int device, const char *what)
{
    int count;
    gpumem_status st = device_count(&count, what);
    if (st != GPUMEM_OK)
        return st;
    if (device < 0 || device >= count) {
        if (count == 0)
            return gm_error(GPUMEM_ERROR_INVALID_DEVICE, "%s: no device %d: the %s backend sees no device",
                            what, device, gm_drv->name);
        return gm_error(GPUMEM_ERROR_INVALID_DEVICE,
                        "%s: no device %d: the %s backend sees %d device%s (0 to %d)", what, device,
                        gm_drv->name, count, count == 1 ? "" : "s", count - 1);
    }
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_backend(const char **name)
{
    GM_CHECK_NULL(name);
    gpumem_status st = gm_driver_ready_for("gpumem_backend");
    if (st == GPUMEM_OK)
        *name = gm_drv->name;
    return st;
}

GPUMEM_API gpumem_status gpumem_driver_version(int *version)
{
    GM_CHECK_NULL(version);
    gpumem_status st = gm_driver_ready_for("gpumem_driver_version");
    if (st != GPUMEM_OK)
        return st;
    return gm_drv_check(GM_DRV(driver_get_version, version), GM_OP_driver_get_version,
                        "gpumem_driver_version");
}

GPUMEM_API gpumem_status gpumem_device_count(int *count)
{
    GM_CHECK_NULL(count);
    return device_count(count, "gpumem_device_count");
}

gpumem_status gm_device_count(const char *what, int *count)
{
    return device_count(count, what);
}

GPUMEM_API gpumem_status gpumem_device_name(int device, char *name, size_t size)
{
    GM_CHECK_NULL(name);
    if (size == 0)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "gpumem_device_name: size is 0");
    gpumem_status st = check_device(device, "gpumem_device_name");
    if (st != GPUMEM_OK)
        return st;
    char buf[256];
    st = gm_drv_check(GM_DRV(device_get_name, device, buf, (int)sizeof buf), GM_OP_device_get_name,
                      "gpumem_device_name");
    if (st != GPUMEM_OK)
        return st;
    buf[sizeof buf - 1] = '\0';
    snprintf(name, size, "%s", buf);
    return GPUMEM_OK;
}

static gpumem_status attribute(int device, int attr, int *value, const char *what)
{
    return gm_drv_check(GM_DRV(device_get_attribute, device, attr, value), GM_OP_device_get_attribute, what);
}

gpumem_status gm_device_compute_capability(const char *what, int device, int *major, int *minor)
{
    gpumem_status st = check_device(device, what);
    int a, b;
    if (st == GPUMEM_OK)
        st = attribute(device, GM_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &a, what);
    if (st == GPUMEM_OK)
        st = attribute(device, GM_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &b, what);
    if (st == GPUMEM_OK) {
        *major = a;
        *minor = b;
    }
    return st;
}

GPUMEM_API gpumem_status gpumem_device_compute_capability(int device, int *major, int *minor)
{
    GM_CHECK_NULL(major);
    GM_CHECK_NULL(minor);
    return gm_device_compute_capability("gpumem_device_compute_capability", device, major, minor);
}

GPUMEM_API gpumem_status gpumem_device_total_memory(int device, uint64_t *bytes)
{
    GM_CHECK_NULL(bytes);
    gpumem_status st = check_device(device, "gpumem_device_total_memory");
    if (st != GPUMEM_OK)
        return st;
    size_t total;
    st = gm_drv_check(GM_DRV(device_total_mem, device, &total), GM_OP_device_total_mem,
                      "gpumem_device_total_memory");
    if (st == GPUMEM_OK)
        *bytes = total;
    return st;
}

/* gpumem_device_attr -> CUdevice_attribute, indexed by the public value. */
static const int attr_map[] = {
    [GPUMEM_DEVICE_MULTIPROCESSORS] = GM_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
    [GPUMEM_DEVICE_MAX_THREADS_PER_BLOCK] = GM_CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
    [GPUMEM_DEVICE_MAX_THREADS_PER_MULTIPROCESSOR] = GM_CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
    [GPUMEM_DEVICE_WARP_SIZE] = GM_CU_DEVICE_ATTRIBUTE_WARP_SIZE,
    [GPUMEM_DEVICE_MAX_SHARED_MEMORY_PER_BLOCK] = GM_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
    [GPUMEM_DEVICE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN] = GM_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
    [GPUMEM_DEVICE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR] =
        GM_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
    [GPUMEM_DEVICE_MAX_REGISTERS_PER_BLOCK] = GM_CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK,
    [GPUMEM_DEVICE_MAX_REGISTERS_PER_MULTIPROCESSOR] = GM_CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR,
    [GPUMEM_DEVICE_MAX_BLOCKS_PER_MULTIPROCESSOR] = GM_CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR,
    [GPUMEM_DEVICE_RESERVED_SHARED_MEMORY_PER_BLOCK] = GM_CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK,
    [GPUMEM_DEVICE_TOTAL_CONSTANT_MEMORY] = GM_CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY,
    [GPUMEM_DEVICE_CAN_MAP_HOST_MEMORY] = GM_CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY,
    [GPUMEM_DEVICE_MANAGED_MEMORY] = GM_CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY,
    [GPUMEM_DEVICE_CONCURRENT_MANAGED_ACCESS] = GM_CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS,
    [GPUMEM_DEVICE_UNIFIED_ADDRESSING] = GM_CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING,
    [GPUMEM_DEVICE_COMPUTE_MODE] = GM_CU_DEVICE_ATTRIBUTE_COMPUTE_MODE,
    [GPUMEM_DEVICE_ASYNC_ENGINES] = GM_CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT,
    [GPUMEM_DEVICE_PCI_BUS_ID] = GM_CU_DEVICE_ATTRIBUTE_PCI_BUS_ID,
    [GPUMEM_DEVICE_PCI_DEVICE_ID] = GM_CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID,
    [GPUMEM_DEVICE_PCI_DOMAIN_ID] = GM_CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID,
    [GPUMEM_DEVICE_L2_CACHE_SIZE] = GM_CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE,
    [GPUMEM_DEVICE_CLOCK_RATE_KHZ] = GM_CU_DEVICE_ATTRIBUTE_CLOCK_RATE,
    [GPUMEM_DEVICE_MEMORY_CLOCK_RATE_KHZ] = GM_CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE,
    [GPUMEM_DEVICE_MEMORY_BUS_WIDTH] = GM_CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH,
    [GPUMEM_DEVICE_TEXTURE_ALIGNMENT] = GM_CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT,
    [GPUMEM_DEVICE_INTEGRATED] = GM_CU_DEVICE_ATTRIBUTE_INTEGRATED,
};

GPUMEM_API gpumem_status gpumem_device_attribute(int device, gpumem_device_attr attr, int *value)
{
    GM_CHECK_NULL(value);
    if ((unsigned)attr >= sizeof attr_map / sizeof attr_map[0])
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "gpumem_device_attribute: attr %d is not a "
                        "gpumem_device_attr", (int)attr);
    gpumem_status st = check_device(device, "gpumem_device_attribute");
    int v;
    if (st == GPUMEM_OK)
        st = attribute(device, attr_map[attr], &v, "gpumem_device_attribute");
    if (st == GPUMEM_OK)
        *value = v;
    return st;
}

/* ---- contexts -------------------------------------------------------------------- */

static atomic_bool exiting;

bool gm_process_exiting(void)
{
    return atomic_load_explicit(&exiting, memory_order_relaxed);
}

/* ---- hooks ---- */

/* In teardown order; set once by lib/wiring.c before any context exists. */
static const gm_context_hook *const *hooks;
static size_t nhooks;

void gm_context_set_hooks(const gm_context_hook *const *table, size_t n)
{
    hooks = table;
    nhooks = n;
}

/* Runs the teardowns of hooks[from..nhooks-1] in that order; the first
 * failure is returned. */
static gpumem_status run_teardowns(gpumem_context *ctx, size_t from, const char *what)
{
    gpumem_status st = GPUMEM_OK;
    for (size_t i = from; i < nhooks; i++)
        if (hooks[i]->teardown != NULL)
            st = gm_keep_first(st, hooks[i]->teardown(ctx, what));
    return st;
}

/* Runs the creates from the last hook back to the first; on a failure,
 * tears down what was made (the hooks after the failing one). */
static gpumem_status run_creates(gpumem_context *ctx, const char *what)
{
    for (size_t i = nhooks; i-- > 0;) {
        if (hooks[i]->create == NULL)
            continue;
        gpumem_status st = hooks[i]->create(ctx, what);
        if (st != GPUMEM_OK)
            return gm_keep_first(st, run_teardowns(ctx, i + 1, what));
    }
    return GPUMEM_OK;
}

/* Retains device's primary context into a new handle.  `what` prefixes errors. */
static gpumem_status context_new(int device, gpumem_selection rule, const char *what, gpumem_context **out)
{
    if (hooks == NULL) /* a static link that left lib/wiring.c's object out */
        return gm_error(GPUMEM_ERROR_INTERNAL, "%s: the library was linked without its wiring (lib/wiring.c), "
                        "which a context needs", what);
    gpumem_status st = check_device(device, what);
    if (st == GPUMEM_OK)
        st = gm_trace_env_start(what); /* GPUMEM_TRACE: the first context starts the trace */
    if (st != GPUMEM_OK)
        return st;
    gpumem_context *ctx = gm_handle_new_zeroed(GM_HANDLE_CONTEXT, sizeof *ctx);
    if (ctx == NULL)
        return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", what);
    int rc = GM_DRV(primary_ctx_retain, device, &ctx->dctx);
    if (rc != 0) {
        gm_handle_free(ctx);
        char where[160];
        snprintf(where, sizeof where, "%s: device %d gives no context", what, device);
        return gm_drv_check(rc, GM_OP_primary_ctx_retain, where);
    }
    int max_pitch = 0;
    rc = GM_DRV(device_get_attribute, device, GM_CU_DEVICE_ATTRIBUTE_MAX_PITCH, &max_pitch);
    if (rc != 0) {
        GM_DRV(primary_ctx_release, device);
        gm_handle_free(ctx);
        return gm_drv_check(rc, GM_OP_device_get_attribute, what);
    }
    atomic_init(&ctx->refs, 1);
    atomic_init(&ctx->pool, NULL);
    atomic_init(&ctx->memo, NULL);
    atomic_init(&ctx->staging, NULL);
    ctx->device = device;
    ctx->selection = rule;
    ctx->max_pitch = max_pitch > 0 ? (size_t)max_pitch : 0;
    pthread_mutex_init(&ctx->lock, NULL);
    st = run_creates(ctx, what);
    if (st != GPUMEM_OK) {
        GM_DRV(primary_ctx_release, device); /* a raw call: the message stays */
        pthread_mutex_destroy(&ctx->lock);
        gm_handle_free(ctx);
        return st;
    }
    *out = ctx;
    gm_debug("context on device %d (%s)", device, gpumem_selection_name(rule));
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_context_create(int device, gpumem_context **ctx)
{
    GM_CHECK_NULL(ctx);
    return context_new(device, GPUMEM_SELECTION_EXPLICIT, "gpumem_context_create", ctx);
}

gpumem_status gm_context_create(const char *what, int device, gpumem_context **ctx)
{
    return context_new(device, GPUMEM_SELECTION_EXPLICIT, what, ctx);
}

GPUMEM_API gpumem_status gpumem_context_retain(gpumem_context *ctx)
{
    GM_CHECK_HANDLE(ctx);
    atomic_fetch_add_explicit(&ctx->refs, 1, memory_order_relaxed);
    return GPUMEM_OK;
}

gpumem_status gm_context_release_as(gpumem_context *ctx, const char *what)
{
    if (ctx == NULL)
        return GPUMEM_OK;
    int before = atomic_fetch_sub_explicit(&ctx->refs, 1, memory_order_acq_rel);
    if (before > 1)
        return GPUMEM_OK;
    if (before < 1) {
        atomic_fetch_add_explicit(&ctx->refs, 1, memory_order_relaxed);
        return gm_error(GPUMEM_ERROR_INVALID_STATE, "%s: the context has no references left (released more often "
                        "than retained)", what);
    }
    gpumem_status st = run_teardowns(ctx, 0, what);
    /* At exit the driver may already be tearing itself down; the operating
     * system reclaims the context. */
    if (!gm_process_exiting()) {
        st = gm_keep_first(st, gm_drv_check(GM_DRV(primary_ctx_release, ctx->device), GM_OP_primary_ctx_release,
                                            what));
    }
    pthread_mutex_destroy(&ctx->lock);
    gm_handle_free(ctx);
    return st;
}

GPUMEM_API gpumem_status gpumem_context_release(gpumem_context *ctx)
{
    if (ctx == NULL)
        return GPUMEM_OK;
    GM_CHECK_HANDLE(ctx);
    return gm_context_release_as(ctx, "gpumem_context_release");
}

GPUMEM_API gpumem_status gpumem_context_get_device(const gpumem_context *ctx, int *device)
{
    GM_CHECK_HANDLE(ctx);
    GM_CHECK_NULL(device);
    *device = ctx->device;
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_context_selection(const gpumem_context *ctx, gpumem_selection *rule)
{
    GM_CHECK_HANDLE(ctx);
    GM_CHECK_NULL(rule);
    *rule = ctx->selection;
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_context_refcount(const gpumem_context *ctx, int *count)
{
    GM_CHECK_HANDLE(ctx);
    GM_CHECK_NULL(count);
    *count = atomic_load_explicit(&ctx->refs, memory_order_relaxed);
    return GPUMEM_OK;
}

GPUMEM_API const char *gpumem_selection_name(gpumem_selection rule)
{
    switch (rule) {
    case GPUMEM_SELECTION_EXPLICIT: return "explicit";
    case GPUMEM_SELECTION_CUDA_DEVICE: return "CUDA_DEVICE";
    case GPUMEM_SELECTION_DEVICE_FILE: return "~/.cuda-device";
    case GPUMEM_SELECTION_SCAN: return "scan";
    default: return "unknown";
    }
}

/* ---- default-device rules ------------------------------------------------------------ */

GPUMEM_API gpumem_status gpumem_get_default_device(int fallback, int *device)
{
    GM_CHECK_NULL(device);
    gm_configured c;
    const char *what = "gpumem_get_default_device";
    gpumem_status st = gm_configured_device(what, &c);
    if (st != GPUMEM_OK)
        return st;
    char source[sizeof c.source + 64];
    if (c.found)
        snprintf(source, sizeof source, "%s: %s", what, c.source);
    else
        snprintf(source, sizeof source, "%s: fallback", what);
    int dev = c.found ? (int)c.device : fallback;
    st = check_device(dev, source);
    if (st == GPUMEM_OK)
        *device = dev;
    return st;
}

/* gpumem_context_create_default, named `what`. */
static gpumem_status create_default(const char *what, gpumem_context **out)
{
    gm_configured c;
    gpumem_status st = gm_configured_device(what, &c);
    if (st != GPUMEM_OK)
        return st;
    if (c.found) {
        /* A configured device has no fallback, as in pycuda. */
        char where[sizeof c.source + 64];
        snprintf(where, sizeof where, "%s: %s", what, c.source);
        return context_new((int)c.device, c.rule, where, out);
    }

    int count;
    st = device_count(&count, what);
    if (st != GPUMEM_OK)
        return st;
    if (count == 0)
        return gm_error(GPUMEM_ERROR_NO_DEVICE, "%s: CUDA_DEVICE and ~/.cuda-device are not set, and the "
                        "%s backend sees no device", what, gm_drv->name);
    /* Rule 4: every device in turn; keep each refusal for the final message.
     * A refusal is recorded only if the scan fails: a success leaves the
     * thread's last failure as it was (gpumem/status.h). */
    char tried[900] = "";
    size_t used = 0;
    int first_rc = 0; /* the first refusal's driver result, kept with the final failure */
    gm_error_suspend();
    for (int dev = 0; dev < count; dev++) {
        st = context_new(dev, GPUMEM_SELECTION_SCAN, what, out);
        if (st == GPUMEM_OK)
            return gm_error_resume(GPUMEM_OK);
        /* Not a refusal of this device (a bad GPUMEM_* value): every device would answer the same. */
        if (st == GPUMEM_ERROR_INVALID_ENVIRONMENT || st == GPUMEM_ERROR_HOST_OUT_OF_MEMORY ||
            st == GPUMEM_ERROR_INTERNAL) {
            gm_error_record failure;
            gm_error_save(&failure);
            gm_error_resume(GPUMEM_OK);
            return gm_error_restore(&failure);
        }
        int rc = gm_error_result(), n;
        if (first_rc == 0)
            first_rc = rc;
        if (rc != 0) /* the driver's refusal: its result, as the message gave it */
            n = snprintf(tried + used, sizeof tried - used, "%sdevice %d (%s (%d): %s)", dev ? ", " : "", dev,
                         gm_cu_error_name(rc) ? gm_cu_error_name(rc) : "CUresult", rc, gm_cu_error_description(rc));
        else
            n = snprintf(tried + used, sizeof tried - used, "%sdevice %d (%s)", dev ? ", " : "", dev,
                         gm_error_message());
        if (n > 0)
            used = used + (size_t)n < sizeof tried ? used + (size_t)n : sizeof tried - 1;
    }
    gm_error_resume(GPUMEM_OK);
    return gm_error_driver(GPUMEM_ERROR_NO_DEVICE, first_rc, "%s: CUDA_DEVICE and ~/.cuda-device are not set, and "
                           "no device gave a context; tried %s", what, tried);
}

GPUMEM_API gpumem_status gpumem_context_create_default(gpumem_context **ctx)
{
    GM_CHECK_NULL(ctx);
    return create_default("gpumem_context_create_default", ctx);
}

/* ---- autoinit ------------------------------------------------------------------------ */

static pthread_once_t autoinit_once = PTHREAD_ONCE_INIT;
static gpumem_context *autoinit_ctx;
static gpumem_status autoinit_status;
static gm_error_record autoinit_failure; /* given again to every caller */

static void autoinit_at_exit(void)
{
    /* Arrays and pools that outlive this keep their own references; their
     * final releases see `exiting` and leave the driver alone. */
    gpumem_context *ctx = autoinit_ctx;
    autoinit_ctx = NULL;
    gpumem_context_release(ctx);
    atomic_store(&exiting, true);
}

const gm_life_hook gm_autoinit_life = {.what = "the autoinit context", .at_exit = autoinit_at_exit};

static void autoinit_run(void)
{
    /* made by gpumem_context_create_default's rules; the failure is given
     * to every caller, each naming itself before it */
    autoinit_status = create_default("the autoinit context", &autoinit_ctx);
    if (autoinit_status != GPUMEM_OK)
        gm_error_save(&autoinit_failure);
    else
        (void)gm_life_arm(&gm_autoinit_life);
}

/* The autoinit context (borrowed), made once; a failure names `what`. */
static gpumem_status autoinit(const char *what, gpumem_context **ctx)
{
    pthread_once(&autoinit_once, autoinit_run);
    if (autoinit_status != GPUMEM_OK)
        return gm_error_prefix(gm_error_restore(&autoinit_failure), what);
    *ctx = autoinit_ctx;
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_autoinit(gpumem_context **ctx)
{
    GM_CHECK_NULL(ctx);
    return autoinit("gpumem_autoinit", ctx);
}

gpumem_context *gm_context_use(gpumem_context *ctx, const char *what, gpumem_status *st)
{
    if (ctx != NULL) {
        *st = gm_handle_check(ctx, GM_HANDLE_CONTEXT, what, "ctx");
        return *st == GPUMEM_OK ? ctx : NULL;
    }
    gpumem_context *dflt = NULL;
    *st = autoinit(what, &dflt);
    return dflt;
}

GPUMEM_API gpumem_status gpumem_memory_info(gpumem_context *ctx, uint64_t *free_bytes, uint64_t *total_bytes)
{
    GM_CHECK_NULL(free_bytes);
    GM_CHECK_NULL(total_bytes);
    gpumem_status st;
    ctx = gm_context_or_default(ctx, &st);
    if (st != GPUMEM_OK)
        return st;
    size_t f, t;
    st = gm_drv_check(GM_DRV(mem_get_info, ctx->dctx, &f, &t), GM_OP_mem_get_info, "gpumem_memory_info");
    if (st == GPUMEM_OK) {
        *free_bytes = f;
        *total_bytes = t;
    }
    return st;
}

GPUMEM_API gpumem_status gpumem_context_synchronize(gpumem_context *ctx)
{
    gpumem_status st;
    ctx = gm_context_or_default(ctx, &st);
    if (st != GPUMEM_OK)
        return st;
    st = gm_drv_check(GM_DRV(ctx_synchronize, ctx->dctx), GM_OP_ctx_synchronize, "gpumem_context_synchronize");
    return gm_keep_first(st, gm_streams_commit(ctx, "gpumem_context_synchronize"));
}
