/*
 * handles.h - the one lifecycle check of every public handle type (private).
 *
 * Every object behind a public opaque handle (gpumem_context, gpumem_array,
 * gpumem_stream, gpumem_pool, gpumem_host_pool, gpumem_registration,
 * gpumem_module, gpumem_function, gpumem_device_data, gpumem_dtype,
 * gpumem_event, gpumem_pool_import) begins
 * with a gm_handle: a magic number that names its type and whether it is
 * live.  (gpumem_allocation handles are not addresses but generation-tagged
 * record numbers, checked exactly by allocation.c; see pool.h.)
 *
 *  - Every public entry point checks its handle arguments with
 *    GM_CHECK_HANDLE(arg) (or gm_handle_check where the function's name
 *    comes in a `what` argument): one load and one compare when the handle
 *    is live.  A NULL handle is GPUMEM_ERROR_NULL_ARGUMENT; a released or
 *    destroyed one GPUMEM_ERROR_INVALID_STATE; a pointer to another type's
 *    object, or to memory that holds no handle, GPUMEM_ERROR_INVALID_VALUE.
 *    The message names the public function and the argument.
 *  - The user's end of a handle (release of the last reference, destroy,
 *    the end of a scope) turns its magic dead with one compare-and-swap
 *    (gm_handle_kill): of two threads that end one handle at once, exactly
 *    one wins, and the other gets GPUMEM_ERROR_INVALID_STATE.
 *  - Its memory goes back with gm_handle_free, which may come later (a pool
 *    with live allocations, a stream held by pending work): the object then
 *    waits in a quarantine before its memory is used again, so that a stale
 *    handle reads a dead magic (memory the library still owns: no
 *    use-after-free, for ASan either) instead of freed memory.
 *
 * The quarantine.  Objects of up to GM_HANDLE_SMALL_MAX bytes are recycled
 * by size class (64-byte steps) and never handed back to malloc: each
 * thread keeps the blocks it released in a ring and reuses a block only
 * after GM_HANDLE_QUARANTINE more releases of the same class; overflow and
 * the rings of exited threads go to a shared FIFO per class, which hands a
 * block out only while it holds more than GM_HANDLE_QUARANTINE others.
 * Larger objects (pools, large records) are malloc'd; released, they wait in
 * one process-wide FIFO of GM_HANDLE_QUARANTINE_LARGE before free().  So a
 * stale handle is detected for certain until that many later releases;
 * after that its memory may hold a new live handle (of any type of a
 * similar size), and the check is best-effort: a new handle of the same
 * type at that address is indistinguishable from the old one.
 */
#ifndef GM_HANDLES_H
#define GM_HANDLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpumem/array.h"
#include "gpumem/context.h"
#include "gpumem/dtype.h"
#include "gpumem/event.h"
#include "gpumem/host.h"
#include "gpumem/module.h"
#include "gpumem/occupancy.h"
#include "gpumem/pool.h"
#include "gpumem/pool_ipc.h"
#include "gpumem/status.h"
#include "gpumem/stream.h"

typedef enum gm_handle_type {
    GM_HANDLE_CONTEXT = 1,
    GM_HANDLE_ARRAY,
    GM_HANDLE_STREAM,
    GM_HANDLE_POOL,
    GM_HANDLE_HOST_POOL,
    GM_HANDLE_REGISTRATION,
    GM_HANDLE_MODULE,
    GM_HANDLE_FUNCTION,
    GM_HANDLE_DEVICE_DATA,
    GM_HANDLE_DTYPE,
    GM_HANDLE_EVENT,
    GM_HANDLE_POOL_IMPORT,
    GM_HANDLE_TYPES /* one past the last */
} gm_handle_type;

/* The first member of every handle object. */
typedef struct gm_handle {
    uint32_t magic; /* GM_HANDLE_LIVE(type), then GM_HANDLE_DEAD(type); read and written atomically */
    uint32_t store; /* where its memory goes back: handles.c's (a size class, large, or static) */
} gm_handle;

/* "gm" + type + 'L' (live) or 'D' (dead): values that no small integer,
 * pointer or ASCII text of ours takes by accident. */
#define GM_HANDLE_BASE UINT32_C(0xd6470000)
#define GM_HANDLE_LIVE(type) (GM_HANDLE_BASE | ((uint32_t)(type) << 8) | UINT32_C(0x4c))
#define GM_HANDLE_DEAD(type) (GM_HANDLE_BASE | ((uint32_t)(type) << 8) | UINT32_C(0x44))
/* The initializer of a static handle (the builtin dtypes), never freed. */
#define GM_HANDLE_STATIC UINT32_MAX
#define GM_HANDLE_INIT(type) {.magic = GM_HANDLE_LIVE(type), .store = GM_HANDLE_STATIC}

/* Releases of one size class by one thread (and blocks in the shared FIFO)
 * that a small block waits for before its reuse; large objects released
 * process-wide that a large one waits for before free(). */
#define GM_HANDLE_QUARANTINE 64
#define GM_HANDLE_QUARANTINE_LARGE 16
#define GM_HANDLE_SMALL_MAX 1024

/* The handle type of a public handle pointer, from its C type. */
#define GM_HANDLE_TYPE_OF(h)                                                                     \
    _Generic((h), gpumem_context *: GM_HANDLE_CONTEXT, const gpumem_context *: GM_HANDLE_CONTEXT, \
             gpumem_array *: GM_HANDLE_ARRAY, const gpumem_array *: GM_HANDLE_ARRAY,               \
             gpumem_stream *: GM_HANDLE_STREAM, const gpumem_stream *: GM_HANDLE_STREAM,           \
             gpumem_pool *: GM_HANDLE_POOL, const gpumem_pool *: GM_HANDLE_POOL,                   \
             gpumem_host_pool *: GM_HANDLE_HOST_POOL, const gpumem_host_pool *: GM_HANDLE_HOST_POOL, \
             gpumem_registration *: GM_HANDLE_REGISTRATION,                                        \
             const gpumem_registration *: GM_HANDLE_REGISTRATION,                                  \
             gpumem_module *: GM_HANDLE_MODULE, const gpumem_module *: GM_HANDLE_MODULE,           \
             gpumem_function *: GM_HANDLE_FUNCTION, const gpumem_function *: GM_HANDLE_FUNCTION,   \
             gpumem_device_data *: GM_HANDLE_DEVICE_DATA,                                          \
             const gpumem_device_data *: GM_HANDLE_DEVICE_DATA,                                    \
             gpumem_dtype *: GM_HANDLE_DTYPE, const gpumem_dtype *: GM_HANDLE_DTYPE,               \
             gpumem_event *: GM_HANDLE_EVENT, const gpumem_event *: GM_HANDLE_EVENT,               \
             gpumem_pool_import *: GM_HANDLE_POOL_IMPORT, const gpumem_pool_import *: GM_HANDLE_POOL_IMPORT)

/* Whether h is a live handle of type t: one load and one compare. */
static inline bool gm_handle_live(const void *h, gm_handle_type t)
{
    return h != NULL && __atomic_load_n(&((const gm_handle *)h)->magic, __ATOMIC_ACQUIRE) == GM_HANDLE_LIVE(t);
}

/* The status and message for a handle that is not live (h may be NULL):
 * GPUMEM_ERROR_NULL_ARGUMENT, GPUMEM_ERROR_INVALID_STATE (a dead handle of
 * type t) or GPUMEM_ERROR_INVALID_VALUE (anything else); `what` names the
 * public function, `arg` its argument. */
gpumem_status gm_handle_error(const void *h, gm_handle_type t, const char *what, const char *arg);

/* GPUMEM_OK when h is a live handle of type t, else gm_handle_error's. */
static inline gpumem_status gm_handle_check(const void *h, gm_handle_type t, const char *what, const char *arg)
{
    return __builtin_expect(gm_handle_live(h, t), 1) ? GPUMEM_OK : gm_handle_error(h, t, what, arg);
}

/* In a public function: returns the error unless the handle argument h is
 * live.  The message names the function (__func__) and the argument. */
#define GM_CHECK_HANDLE(h)                                                           \
    do {                                                                             \
        if (__builtin_expect(!gm_handle_live((h), GM_HANDLE_TYPE_OF(h)), 0))         \
            return gm_handle_error((h), GM_HANDLE_TYPE_OF(h), __func__, #h);         \
    } while (0)

/* GM_CHECK_HANDLE for an argument that may be NULL (a NULL context is the
 * autoinit context, a NULL stream the default stream). */
#define GM_CHECK_HANDLE_OR_NULL(h)                                                   \
    do {                                                                             \
        if ((h) != NULL)                                                             \
            GM_CHECK_HANDLE(h);                                                      \
    } while (0)

/* The user's end of handle h of type t: its magic turns dead if it was
 * live (one compare-and-swap).  false when it was not live: the caller
 * returns gm_handle_error.  Its memory stays until gm_handle_free. */
bool gm_handle_kill(void *h, gm_handle_type t);

/* In a public release or destroy function: ends the handle argument h, or
 * returns the error (a second end is GPUMEM_ERROR_INVALID_STATE). */
#define GM_END_HANDLE(h)                                                             \
    do {                                                                             \
        if (__builtin_expect(!gm_handle_kill((h), GM_HANDLE_TYPE_OF(h)), 0))         \
            return gm_handle_error((h), GM_HANDLE_TYPE_OF(h), __func__, #h);         \
    } while (0)

/* A new object of `size` bytes (aligned to 64) whose header is live of type
 * t; NULL when out of host memory.  gm_handle_new leaves the bytes after
 * the header unspecified (the array fast path clears what it needs, by a
 * constant size); gm_handle_new_zeroed clears them. */
void *gm_handle_new(gm_handle_type t, size_t size);
void *gm_handle_new_zeroed(gm_handle_type t, size_t size);

/* Gives an object's memory back (to the quarantine); its magic turns dead
 * if it was not already.  NULL is ignored. */
void gm_handle_free(void *h);

/* The name of a handle type in messages ("array", "host pool", ...). */
const char *gm_handle_type_name(gm_handle_type t);

/* The handle rings' process-lifetime hook (lifecycle.h): thread exit. */
extern const struct gm_life_hook gm_handles_life;

#endif /* GM_HANDLES_H */
