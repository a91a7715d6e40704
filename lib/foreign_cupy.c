/*
 * foreign_cupy.c - CuPy's CFunctionAllocator functions over the foreign
 * tier (gpumem/experimental/foreign.h): gpumem_cupy_malloc and
 * gpumem_cupy_free.
 *
 * CuPy's Python-function allocator costs two Python calls and two ctypes
 * calls per array; its C-function allocator calls these two directly.  It
 * passes no stream, so the stream comes from the param's current_stream
 * (CuPy's own C function, with the GIL held), and the free takes the
 * allocation's stream from the pointer table.  A failure must reach Python
 * as an exception (CuPy checks for one after malloc), through the param's
 * set_error: this file holds the only calls into Python's C API the library
 * makes, and only through pointers that the Python package gave it.
 */
#include "config.h"

#include <stdint.h>

#include "error.h"
#include "foreign.h"

GPUMEM_API void *gpumem_cupy_malloc(void *param, size_t size, int device)
{
    const char *what = "gpumem_cupy_malloc";
    const struct gpumem_cupy_param *p = param;
    if (p == NULL) {
        gm_error(GPUMEM_ERROR_NULL_ARGUMENT, "%s: argument 'param' is NULL", what);
        return NULL;
    }
    if (p->size < sizeof *p || p->current_stream == NULL || p->set_error == NULL || p->out_of_memory == NULL ||
        p->error == NULL) {
        gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: param: %s", what,
                 p->size < sizeof *p ? "size is less than sizeof(struct gpumem_cupy_param)"
                                     : "current_stream, set_error, out_of_memory and error must be set");
        return NULL;
    }
    intptr_t s = p->current_stream();
    if (s == -1 && p->error_occurred != NULL && p->error_occurred() != NULL)
        return NULL; /* CuPy's exception stands */
    void *ptr = NULL;
    gpumem_status st = gpumem_foreign_alloc("cupy", device, size,
                                            s == 0 ? GPUMEM_FOREIGN_STREAM_LEGACY_ONLY : (void *)s, &ptr);
    if (st != GPUMEM_OK) {
        bool oom = st == GPUMEM_ERROR_OUT_OF_MEMORY || st == GPUMEM_ERROR_HOST_OUT_OF_MEMORY;
        p->set_error(oom ? p->out_of_memory : p->error, gpumem_last_error());
        return NULL;
    }
    return ptr;
}

GPUMEM_API void gpumem_cupy_free(void *param, void *ptr, int device)
{
    (void)param;
    (void)device;
    (void)gpumem_foreign_free(ptr, GPUMEM_FOREIGN_STREAM_ALLOCATED);
}
