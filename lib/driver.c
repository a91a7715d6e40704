/*
 * driver.c - backend selection, the counting and fault-injecting dispatcher,
 * and the names of driver errors.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "env.h"
#include "params.h"
#include "error.h"
#include "gpumem/debug.h"

const gm_driver *gm_drv;

_Atomic uint64_t gm_drv_calls[GM_OP_COUNT];
_Atomic uint64_t gm_drv_total_calls;
_Atomic uint64_t gm_drv_fail_at;
_Thread_local int gm_drv_fault_code;

/* An arming is the pair (gm_drv_fail_at, fail_code), written and fired under
 * fail_mu, so that the call that fires sees its own arming's code and a
 * re-arming never hands the previous one's code to a call in flight.  The
 * hot path reads gm_drv_fail_at alone, and takes the lock only when its
 * number came up. */
static pthread_mutex_t fail_mu = PTHREAD_MUTEX_INITIALIZER;
static int fail_code = GM_CUDA_ERROR_UNKNOWN; /* under fail_mu */

void gm_drv_arm(uint64_t at, int code)
{
    pthread_mutex_lock(&fail_mu);
    fail_code = code;
    atomic_store_explicit(&gm_drv_fail_at, at, memory_order_relaxed);
    pthread_mutex_unlock(&fail_mu);
}

int gm_drv_fail_then;
int gm_drv_failed_op = -1; /* under fail_mu */

int gm_drv_fire_(uint64_t n, int op)
{
    pthread_mutex_lock(&fail_mu);
    uint64_t at = atomic_load_explicit(&gm_drv_fail_at, memory_order_relaxed);
    int fire = at == n;
    if (fire) {
        if (gm_drv_fail_then == 0)
            atomic_store_explicit(&gm_drv_fail_at, 0, memory_order_relaxed);
        gm_drv_fault_code = fail_code;
        gm_drv_failed_op = op;
    } else if (at != 0 && n > at && gm_drv_fail_then != 0) { /* a lost device: every later call too */
        fire = 1;
        gm_drv_fault_code = gm_drv_fail_then;
    }
    pthread_mutex_unlock(&fail_mu);
    return fire;
}

/* ---- names ---------------------------------------------------------------- */

#define GM_OP_NAME_(op, fn) fn,
static const char *const op_names[GM_OP_COUNT] = {GM_DRIVER_OPS(GM_OP_NAME_)};

const char *gm_drv_op_name(int op)
{
    return op >= 0 && op < GM_OP_COUNT ? op_names[op] : "cu?";
}

static const struct {
    int code;
    const char *name;
} cu_names[] = {
#define GM_CU_NAME_(name, value) {value, #name},
    GM_CU_RESULTS(GM_CU_NAME_)
#undef GM_CU_NAME_
};

const char *gm_cu_error_name(int result)
{
    for (size_t i = 0; i < sizeof cu_names / sizeof cu_names[0]; i++)
        if (cu_names[i].code == result)
            return cu_names[i].name;
    if (result == GM_SIM_ERROR_NOT_SIMULATED)
        return "GPUMEM_SIM_NOT_SIMULATED";
    return NULL;
}

const char *gm_cu_error_description(int result)
{
    switch (result) {
    case GM_CUDA_SUCCESS: return "no error";
    case GM_CUDA_ERROR_INVALID_VALUE: return "invalid argument";
    case GM_CUDA_ERROR_OUT_OF_MEMORY: return "out of memory";
    case GM_CUDA_ERROR_NOT_INITIALIZED: return "driver not initialized";
    case GM_CUDA_ERROR_DEINITIALIZED: return "driver shutting down";
    case GM_CUDA_ERROR_STUB_LIBRARY: return "CUDA driver is a stub library";
    case GM_CUDA_ERROR_DEVICE_UNAVAILABLE: return "CUDA-capable device(s) is/are busy or unavailable";
    case GM_CUDA_ERROR_NO_DEVICE: return "no CUDA-capable device is detected";
    case GM_CUDA_ERROR_INVALID_DEVICE: return "invalid device ordinal";
    case GM_CUDA_ERROR_INVALID_IMAGE: return "device kernel image is invalid";
    case GM_CUDA_ERROR_INVALID_CONTEXT: return "invalid device context";
    case GM_CUDA_ERROR_INVALID_PTX: return "a PTX JIT compilation failed";
    case GM_CUDA_ERROR_INVALID_HANDLE: return "invalid resource handle";
    case GM_CUDA_ERROR_NOT_FOUND: return "named symbol not found";
    case GM_CUDA_ERROR_NOT_READY: return "device not ready";
    case GM_CUDA_ERROR_ILLEGAL_ADDRESS: return "an illegal memory access was encountered";
    case GM_CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: return "too many resources requested for launch";
    case GM_CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED:
        return "part or all of the requested memory range is already mapped";
    case GM_CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED: return "pointer does not correspond to a registered memory region";
    case GM_CUDA_ERROR_LAUNCH_FAILED: return "unspecified launch failure";
    case GM_CUDA_ERROR_NOT_PERMITTED: return "operation not permitted";
    case GM_CUDA_ERROR_NOT_SUPPORTED: return "operation not supported";
    case GM_CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: return "system has unsupported display driver / cuda driver combination";
    case GM_CUDA_ERROR_UNKNOWN: return "unknown error";
    case GM_SIM_ERROR_NOT_SIMULATED: return "not simulated (kernel launches, the driver's stream-ordered pools)";
    default: return "driver error";
    }
}

GPUMEM_API const char *gpumem_debug_driver_error_name(int driver_error)
{
    return gm_cu_error_name(driver_error);
}

gpumem_status gm_drv_status(int result)
{
    switch (result) {
    case GM_CUDA_SUCCESS: return GPUMEM_OK;
    case GM_CUDA_ERROR_OUT_OF_MEMORY: return GPUMEM_ERROR_OUT_OF_MEMORY;
    case GM_CUDA_ERROR_NO_DEVICE: return GPUMEM_ERROR_NO_DEVICE;
    case GM_CUDA_ERROR_INVALID_DEVICE: return GPUMEM_ERROR_INVALID_DEVICE;
    case GM_CUDA_ERROR_DEVICE_UNAVAILABLE: return GPUMEM_ERROR_DEVICE_UNAVAILABLE;
    case GM_CUDA_ERROR_NOT_READY: return GPUMEM_ERROR_NOT_READY;
    case GM_CUDA_ERROR_NOT_SUPPORTED: return GPUMEM_ERROR_NOT_SUPPORTED;
    case GM_CUDA_ERROR_NOT_FOUND: return GPUMEM_ERROR_NOT_FOUND;
    case GM_CUDA_ERROR_LAUNCH_FAILED:
    case GM_CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: return GPUMEM_ERROR_LAUNCH_FAILED;
    case GM_CUDA_ERROR_STUB_LIBRARY:
    case GM_CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
    case GM_CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE: return GPUMEM_ERROR_DRIVER_NOT_FOUND;
    case GM_SIM_ERROR_NOT_SIMULATED: return GPUMEM_ERROR_NOT_SIMULATED;
    default: return GPUMEM_ERROR_DRIVER;
    }
}

gpumem_status gm_drv_fail_(int result, int op, const char *what)
{
    const char *name = gm_cu_error_name(result);
    char code[32];
    if (name == NULL) {
        snprintf(code, sizeof code, "CUresult %d", result);
        name = code;
    }
    return gm_error_driver(gm_drv_status(result), result, "%s%s%s failed: %s (%d): %s", what ? what : "",
                           what ? ": " : "", gm_drv_op_name(op), name, result, gm_cu_error_description(result));
}

/* ---- the debug API ----------------------------------------------------------- */

GPUMEM_API gpumem_status gpumem_debug_driver_calls(const char *op, uint64_t *count)
{
    GM_CHECK_NULL(count);
    if (op == NULL) {
        *count = atomic_load(&gm_drv_total_calls);
        return GPUMEM_OK;
    }
    for (int i = 0; i < GM_OP_COUNT; i++) {
        if (strcmp(op, op_names[i]) == 0) {
            *count = atomic_load(&gm_drv_calls[i]);
            return GPUMEM_OK;
        }
    }
    return gm_error(GPUMEM_ERROR_NOT_FOUND, "gpumem_debug_driver_calls: op '%s' is not the name of a counted "
                    "operation (gpumem/debug.h lists them: queued forms count under their synchronous function's "
                    "name, such as cuMemcpy for cuMemcpyAsync)", op);
}

GPUMEM_API gpumem_status gpumem_debug_fail_call(uint64_t nth, int driver_error)
{
    if (nth != 0 && driver_error == 0)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "gpumem_debug_fail_call: driver_error 0 is success, "
                        "not a failure");
    gm_drv_arm(nth == 0 ? 0 : atomic_load(&gm_drv_total_calls) + nth, driver_error);
    return GPUMEM_OK;
}

/* GPUMEM_SIM_FAIL=k[:ERROR]: the k-th call of the process fails with ERROR,
 * a driver error name (any case) or number; blanks may surround k and ERROR. */
static gpumem_status parse_sim_fail(void)
{
    const char *s = gm_param_text(GM_P_SIM_FAIL);
    if (s == NULL)
        return GPUMEM_OK;
    long k;
    int code;
    const char *bad;
    if (!gm_parse_sim_fail(s, &k, &code, &bad)) {
        if (bad == NULL)
            return gm_error(GPUMEM_ERROR_INVALID_ENVIRONMENT,
                            "GPUMEM_SIM_FAIL='%s': expected k[:ERROR] with k >= 1, the call to fail", s);
        return gm_error(GPUMEM_ERROR_INVALID_ENVIRONMENT,
                        "GPUMEM_SIM_FAIL='%s': '%s' is not a CUDA driver error name or non-zero number", s, bad);
    }
    gm_drv_arm((uint64_t)k, code);
    return GPUMEM_OK;
}

bool gm_parse_sim_fail(const char *s, long *k, int *code, const char **bad)
{
    /* k is parsed from a copy of the text before the colon, of any length */
    *bad = NULL;
    const char *colon = strchr(s, ':');
    size_t klen = colon != NULL ? (size_t)(colon - s) : strlen(s);
    char *kbuf = strndup(s, klen);
    bool good = kbuf != NULL && gm_parse_long(kbuf, k) && *k >= 1;
    free(kbuf);
    if (!good)
        return false;
    *code = GM_CUDA_ERROR_UNKNOWN;
    if (colon == NULL)
        return true;
    const char *name = colon + 1;
    long v;
    size_t i, n = sizeof cu_names / sizeof cu_names[0];
    for (i = 0; i < n; i++)
        if (gm_word_is(name, cu_names[i].name))
            break;
    if (i < n && cu_names[i].code != 0)
        *code = cu_names[i].code;
    else if (gm_parse_long(name, &v) && v > 0 && v <= 0x7fffffff)
        *code = (int)v;
    else {
        *bad = name;
        return false;
    }
    return true;
}

/* ---- backend selection --------------------------------------------------------- */

static pthread_once_t select_once = PTHREAD_ONCE_INIT;
static gpumem_status select_status;
static gm_error_record select_failure; /* given again to every caller */

static gpumem_status load_auto(const gm_driver **table)
{
    gpumem_status st = gm_cuda_load(table);
    if (st == GPUMEM_OK) {
        int count = 0;
        int rc = (*table)->device_get_count(&count);
        if (rc != 0)
            return gm_error_driver(gm_drv_status(rc), rc, "GPUMEM_BACKEND=auto: the CUDA driver loaded but "
                                   "cuDeviceGetCount failed: %s; set GPUMEM_BACKEND=sim to use the simulator",
                                   gm_cu_error_name(rc) ? gm_cu_error_name(rc) : "driver error");
        if (count > 0)
            return GPUMEM_OK;
        return gm_error(GPUMEM_ERROR_NO_DEVICE, "GPUMEM_BACKEND=auto: the CUDA driver loaded but sees no "
                        "device; set GPUMEM_BACKEND=sim to use the simulator");
    }
    return gm_error_reword(st == GPUMEM_ERROR_DRIVER_NOT_FOUND ? st : GPUMEM_ERROR_NO_DEVICE,
                           "GPUMEM_BACKEND=auto: no usable CUDA driver (%s); set GPUMEM_BACKEND=sim to use "
                           "the simulator", gm_error_message());
}

static void select_backend(void)
{
    const char *name = gm_param_text(GM_P_BACKEND);
    const gm_driver *table = NULL;
    gpumem_status st;
    if (name == NULL || gm_word_is(name, "auto"))
        st = load_auto(&table);
    else if (gm_word_is(name, "cuda"))
        st = gm_cuda_load(&table);
    else if (gm_word_is(name, "sim"))
        st = gm_sim_load(&table);
    else
        st = gm_error(GPUMEM_ERROR_INVALID_ENVIRONMENT,
                      "GPUMEM_BACKEND='%s': expected auto, cuda or sim", name);
    if (st == GPUMEM_OK && strcmp(table->name, "sim") == 0)
        st = parse_sim_fail();
    if (st == GPUMEM_OK) {
        gm_drv = table;
        gm_debug("backend %s", table->name);
    } else {
        gm_error_save(&select_failure);
    }
    select_status = st;
}

gpumem_status gm_driver_ready(void)
{
    /* pthread_once's fast path is one acquire load, and it orders the
     * reads of gm_drv that follow. */
    pthread_once(&select_once, select_backend);
    if (select_status != GPUMEM_OK)
        return gm_error_restore(&select_failure);
    return GPUMEM_OK;
}

gpumem_status gm_driver_ready_for(const char *what)
{
    gpumem_status st = gm_driver_ready();
    return st == GPUMEM_OK ? GPUMEM_OK : gm_error_prefix(st, what);
}

bool gm_driver_usable(void)
{
    gm_error_suspend(); /* the selection's failure is kept for the calls that need a backend */
    gpumem_status st = gm_driver_ready();
    gm_error_resume(GPUMEM_OK);
    return st == GPUMEM_OK;
}

gpumem_status gm_device_pci_ids(const char *what, int device, int32_t ids[3])
{
    static const int attrs[3] = {GM_CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, GM_CU_DEVICE_ATTRIBUTE_PCI_BUS_ID,
                                 GM_CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID};
    for (int i = 0; i < 3; i++) {
        int v = 0;
        gpumem_status st = gm_drv_check(GM_DRV(device_get_attribute, device, attrs[i], &v),
                                        GM_OP_device_get_attribute, what);
        if (st != GPUMEM_OK)
            return st;
        ids[i] = v;
    }
    return GPUMEM_OK;
}
