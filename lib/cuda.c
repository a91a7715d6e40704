/*
 * cuda.c - the NVIDIA driver backend: libcuda loaded with dlopen at run time,
 * its entry points resolved with cuGetProcAddress at one CUDA version, so
 * that building needs no CUDA headers and a machine without a driver gets a
 * clear error instead of a failed link.
 *
 * Every symbol is requested by its base name ("cuMemAlloc") at
 * GM_CUDA_API_VERSION: the driver then hands out the ABI of that version
 * (cuMemAlloc_v2, cuStreamDestroy_v2, ...), which is what the declarations
 * in cuda_impl.h spell, whatever newer variants the installed driver also
 * has.  The operations of the driver table that call them are cuda_ops.c's.
 */
#include "config.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cuda_abi.h"
#include "cuda_impl.h"
#include "driver.h"
#include "env.h"
#include "params.h"
#include "error.h"

#define GM_CUDA_DEFAULT_LIBRARY "libcuda.so.1"

/* Written once by gm_cuda_load before gm_driver_ready publishes the table,
 * read-only afterwards. */
gm_cu_entry_points gm_cu;

/* dlsym and cuGetProcAddress give object pointers; POSIX guarantees they
 * convert to function pointers, and copying the bytes says so without the
 * cast ISO C leaves undefined. */
_Static_assert(sizeof(void *) == sizeof(gm_pfn_cuInit), "function pointers must fit in void *");
#define GM_SET_PFN_(dst, p) memcpy(&(dst), &(p), sizeof(dst))

/* ---- error names ------------------------------------------------------------ */

/* The driver's own name for rc when it can say, else ours; never NULL. */
static const char *cu_error_name(gm_cu_result rc)
{
    const char *s = NULL;
    if (gm_cu.cuGetErrorName != NULL && gm_cu.cuGetErrorName(rc, &s) == GM_CUDA_SUCCESS && s != NULL)
        return s;
    s = gm_cu_error_name(rc);
    return s != NULL ? s : "unknown CUresult";
}

static const char *cu_error_description(gm_cu_result rc)
{
    const char *s = NULL;
    if (gm_cu.cuGetErrorString != NULL && gm_cu.cuGetErrorString(rc, &s) == GM_CUDA_SUCCESS && s != NULL)
        return s;
    return gm_cu_error_description(rc);
}

/* ---- loading ------------------------------------------------------------------- */

#define GM_API_MAJOR (GM_CUDA_API_VERSION / 1000)
#define GM_API_MINOR (GM_CUDA_API_VERSION % 1000 / 10)

/* symbol's GM_CUDA_API_VERSION variant into *pfn; NULL when the driver has
 * none (optional symbols), else an error for required ones. */
static gpumem_status get_proc(const char *path, const char *symbol, void **pfn, int required)
{
    int status = GM_CU_GET_PROC_ADDRESS_SUCCESS;
    gm_cu_result rc;
    *pfn = NULL;
    /* LEGACY_STREAM: a NULL stream must mean the legacy default stream
     * (driver.h), never the per-thread one. */
    if (gm_cu.get_proc_v2 != NULL)
        rc = gm_cu.get_proc_v2(symbol, pfn, GM_CUDA_API_VERSION, GM_CU_GET_PROC_ADDRESS_LEGACY_STREAM,
                            &status);
    else
        rc = gm_cu.get_proc_v1(symbol, pfn, GM_CUDA_API_VERSION, GM_CU_GET_PROC_ADDRESS_LEGACY_STREAM);
    if (rc != GM_CUDA_SUCCESS) {
        *pfn = NULL;
        if (!required)
            return GPUMEM_OK;
        return gm_error_driver(GPUMEM_ERROR_DRIVER_NOT_FOUND, rc,
                        "CUDA driver '%s': cuGetProcAddress(\"%s\") failed: %s (%d): %s%s", path, symbol,
                        cu_error_name(rc), rc, cu_error_description(rc),
                        rc == GM_CUDA_ERROR_STUB_LIBRARY
                            ? " (this is the toolkit's stub library, not the installed driver)"
                            : "");
    }
    if (*pfn == NULL && required)
        return gm_error(GPUMEM_ERROR_DRIVER_NOT_FOUND,
                        "CUDA driver '%s' too old: needs CUDA %d.%d or later (%s: %s)", path,
                        GM_API_MAJOR, GM_API_MINOR, symbol,
                        status == GM_CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                            ? "the driver has it only for newer CUDA versions"
                            : "not found");
    return GPUMEM_OK;
}

/* Finds cuGetProcAddress in the library; without it the driver predates
 * CUDA 11.3. */
static gpumem_status find_get_proc_address(void *lib, const char *path)
{
    void *p = dlsym(lib, "cuGetProcAddress_v2");
    if (p != NULL) {
        GM_SET_PFN_(gm_cu.get_proc_v2, p);
        return GPUMEM_OK;
    }
    p = dlsym(lib, "cuGetProcAddress");
    if (p != NULL) {
        /* An 11.3 to 11.8 driver: it hands out the same ABI for every entry
         * point we use at our version, so it works. */
        gm_debug("cuda: %s has no cuGetProcAddress_v2; using the CUDA 11.3 cuGetProcAddress", path);
        GM_SET_PFN_(gm_cu.get_proc_v1, p);
        return GPUMEM_OK;
    }
    int version = 0;
    gm_pfn_cuDriverGetVersion get_version = NULL;
    p = dlsym(lib, "cuDriverGetVersion");
    if (p != NULL) {
        GM_SET_PFN_(get_version, p);
        if (get_version(&version) != GM_CUDA_SUCCESS)
            version = 0;
    }
    if (version > 0)
        return gm_error(GPUMEM_ERROR_DRIVER_NOT_FOUND,
                        "CUDA driver '%s' too old: it is CUDA %d.%d and has no cuGetProcAddress; "
                        "needs CUDA %d.%d or later", path, version / 1000, version % 1000 / 10,
                        GM_API_MAJOR, GM_API_MINOR);
    return gm_error(GPUMEM_ERROR_DRIVER_NOT_FOUND,
                    "CUDA driver '%s' too old or not a CUDA driver: no cuGetProcAddress; "
                    "needs CUDA %d.%d or later", path, GM_API_MAJOR, GM_API_MINOR);
}

static gpumem_status resolve_all(const char *path)
{
    gpumem_status st;
    void *p;
    /* The optional names first, so that later failures are named by the driver. */
#define GM_CU_RESOLVE_(name, params, required)                             \
    if ((st = get_proc(path, #name, &p, required)) != GPUMEM_OK)           \
        return st;                                                         \
    GM_SET_PFN_(gm_cu.name, p);
#define GM_CU_RESOLVE_OPTIONAL_(name, params) GM_CU_RESOLVE_(name, params, 0)
#define GM_CU_RESOLVE_REQUIRED_(name, params) GM_CU_RESOLVE_(name, params, 1)
    GM_CU_OPTIONAL_ENTRY_POINTS(GM_CU_RESOLVE_OPTIONAL_)
    GM_CU_ENTRY_POINTS(GM_CU_RESOLVE_REQUIRED_)
#undef GM_CU_RESOLVE_REQUIRED_
#undef GM_CU_RESOLVE_OPTIONAL_
#undef GM_CU_RESOLVE_
    return GPUMEM_OK;
}

static gpumem_status init_status(gm_cu_result rc)
{
    switch (rc) {
    case GM_CUDA_ERROR_NO_DEVICE:
        return GPUMEM_ERROR_NO_DEVICE;
    case GM_CUDA_ERROR_STUB_LIBRARY:
    case GM_CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
    case GM_CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
        /* The library loaded is not a driver that can run here: a stub, or a
         * forward-compatibility libcuda the kernel module or GPU rejects. */
        return GPUMEM_ERROR_DRIVER_NOT_FOUND;
    default:
        return GPUMEM_ERROR_DRIVER;
    }
}

gpumem_status gm_cuda_load(const gm_driver **table)
{
    GM_CHECK_NULL(table);
    const char *path = gm_param_text(GM_P_CUDA_LIBRARY);
    if (path == NULL)
        path = GM_CUDA_DEFAULT_LIBRARY;

    dlerror();
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        const char *why = dlerror();
        return gm_error(GPUMEM_ERROR_DRIVER_NOT_FOUND,
                        "cannot load the CUDA driver '%s': %s (is the NVIDIA driver installed? "
                        "GPUMEM_CUDA_LIBRARY may name its path; GPUMEM_BACKEND=sim needs no driver)",
                        path, why != NULL ? why : "unknown dlopen error");
    }

    gpumem_status st = find_get_proc_address(lib, path);
    if (st == GPUMEM_OK)
        st = resolve_all(path);
    if (st != GPUMEM_OK) {
        /* Before cuInit the driver has started nothing, so unloading it is safe. */
        memset(&gm_cu, 0, sizeof gm_cu);
        dlclose(lib);
        return st;
    }

    gm_cu_result rc = gm_cu.cuInit(0);
    if (rc != GM_CUDA_SUCCESS) {
        st = gm_error_driver(init_status(rc), rc, "CUDA driver '%s': cuInit failed: %s (%d): %s", path,
                      cu_error_name(rc), rc, cu_error_description(rc));
        /* cuInit may have started threads or registered handlers that live
         * in the library: keep it mapped, and only forget the pointers. */
        memset(&gm_cu, 0, sizeof gm_cu);
        return st;
    }

    int version = 0;
    if (gm_cu.cuDriverGetVersion(&version) == GM_CUDA_SUCCESS)
        gm_debug("cuda: loaded %s, driver CUDA %d.%d, entry points of CUDA %d.%d", path,
                 version / 1000, version % 1000 / 10, GM_API_MAJOR, GM_API_MINOR);
    *table = &gm_cuda_driver;
    return GPUMEM_OK;
}
