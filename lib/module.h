/*
 * module.h - the objects behind gpumem_module and gpumem_function (private).
 */
#ifndef GM_MODULE_H
#define GM_MODULE_H

#include <pthread.h>
#include <stdatomic.h>

#include "context.h"
#include "driver.h"
#include "gpumem/module.h"
#include "handles.h"

struct gpumem_function {
    gm_handle h; /* first: the lifecycle check (handles.h); dead with its module */
    struct gpumem_function *next; /* in its module's list */
    gpumem_module *module;
    gm_dfunc *df;
    char name[];
};

typedef struct gm_global {
    struct gm_global *next;
    gm_cu_deviceptr ptr;
    size_t bytes;
    char name[];
} gm_global;

struct gpumem_module {
    gm_handle h; /* first: the lifecycle check (handles.h); dead once freed */
    /* the cache's reference (holding no context reference) + callers'
     * references (each holding one) + arrays of const_array_like (whose
     * arrays hold one) */
    atomic_int refs;
    atomic_int user_refs; /* the callers' references alone: load and retain less release */
    gpumem_context *ctx;
    gm_dmodule *dm;
    pthread_rwlock_t lock; /* the name lists below; entries are never removed */
    struct gpumem_function *functions;
    gm_global *globals;
};

/* The context and driver kernel of a function: for driver calls about it
 * (occupancy). */
static inline gpumem_context *gm_function_context(const gpumem_function *f)
{
    return f->module->ctx;
}

static inline gm_dfunc *gm_function_dfunc(const gpumem_function *f)
{
    return f->df;
}

/* gpumem_module_load (arguments checked, ctx resolved) and
 * gpumem_module_get_function for the library's own loads (the pack
 * kernels): every failure is named after `what`, the public call made. */
gpumem_status gm_module_load(const char *what, gpumem_context *ctx, const void *image_data, size_t size,
                             gpumem_module **module);
gpumem_status gm_module_get_function(const char *what, gpumem_module *module, const char *name,
                                     gpumem_function **function);

/* A module reference that holds no context reference, for a value cached
 * per context (which must not keep its context alive), and its release. */
void gm_module_hold(gpumem_module *m);
gpumem_status gm_module_drop(gpumem_module *m);

#endif /* GM_MODULE_H */
