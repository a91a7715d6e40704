/**
 * @file gpumem/memo.h
 * @brief Per-context memoization: pycuda's context_dependent_memoize and
 *        clear_context_caches.
 *
 * gpumem_memoize() computes a value once per context and key, the way
 * pycuda's `@context_dependent_memoize` caches what a function returns for
 * the current context (typically a compiled kernel; gpumem/module.h's
 * kernel cache is built on it).  The value is whatever a pointer can hold: a
 * handle, a struct the callback allocated, a number cast to a pointer.
 *
 * @par Keys
 * An entry is found by its context handle, its @p create callback and the
 * bytes of its key (compared in full; a 64-bit FNV-1a hash only picks the
 * bucket).  Two callers that pick the same key bytes with different create
 * callbacks get different entries, as two functions decorated in pycuda
 * have different caches.  Contexts are distinct handles: two handles on the
 * same device (two gpumem_context_create() calls) have separate caches.
 *
 * @par Concurrency
 * Any thread may call gpumem_memoize() at any time.  A hit takes a shared
 * lock of its context's cache only (no global lock, no exclusive lock), so
 * threads reading cached values never wait for each other.  When several
 * threads ask for a missing key at once, one of them (the creator) runs
 * @p create while the others wait; all get the creator's value, and
 * @p create has run once.  If @p create fails, the creator gets its status
 * and message and nothing is cached; each waiter then tries again, so one of
 * them becomes the next creator (a failure is never cached: the next call
 * runs @p create again).  @p create runs with no lock held, so it may call
 * the library, gpumem_memoize() included, for other keys; asking for its
 * own key from inside @p create is ::GPUMEM_ERROR_INVALID_STATE instead of a
 * deadlock.
 *
 * @par Lifetime
 * Unlike pycuda, the cache holds no reference on a context: an entry lives
 * until gpumem_clear_context_caches() or until its context's last reference
 * goes (gpumem_context_release()), whichever comes first, and @p destroy
 * then runs once for it.  A value that itself holds a reference on its
 * context (an array of that context, say) keeps the context alive, so that
 * its entry would only go with gpumem_clear_context_caches(); keep values
 * free of references to their own context, or clear the caches before the
 * final release.  Values are borrowed: do not use one after its entry is
 * dropped (gpumem/module.h's modules are reference-counted for this).
 * @p destroy must not release the context whose entry it destroys.
 */
#ifndef GPUMEM_MEMO_H
#define GPUMEM_MEMO_H

#include <stddef.h>
#include <gpumem/export.h>
#include <gpumem/status.h>
#include <gpumem/context.h>

GPUMEM_BEGIN_DECLS

/**
 * Computes the value of a cache entry: the context it is for, the key as
 * given to gpumem_memoize(), and its @p user pointer.  Stores the value in
 * @p *value and returns ::GPUMEM_OK, or returns a failure status, which
 * gpumem_memoize() returns to its caller (the thread's gpumem_last_error()
 * is kept when the callback's own library call set it).
 */
typedef gpumem_status (*gpumem_memo_create_fn)(gpumem_context *ctx, const void *key, size_t key_size,
                                               void *user, void **value);

/**
 * Frees a cached value when its entry is dropped; @p user is the pointer
 * given to the gpumem_memoize() call that created it.
 */
typedef void (*gpumem_memo_destroy_fn)(void *value, void *user);

/**
 * pycuda's context_dependent_memoize: the value cached in @p ctx (NULL: the
 * autoinit context) for @p create and the @p key_size bytes at @p key,
 * computed by @p create on the first call.  @p key may be NULL when
 * @p key_size is 0 (one value per context and callback).  @p destroy (may be
 * NULL) frees the value when the entry is dropped.  The value in @p *value
 * is borrowed (see the file's Lifetime notes); a failed call leaves
 * @p *value untouched.
 * @param ctx the context, or NULL for the autoinit context.
 * @param[in] key the key's bytes (NULL when @p key_size is 0).
 * @param key_size the key's length in bytes.
 * @param create computes the value on a miss.
 * @param destroy frees the value when its entry is dropped, or NULL.
 * @param user passed to @p create and @p destroy.
 * @param[out] value the cached value (borrowed).
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT (@p create, @p value, or @p key with a nonzero size),
 *        ::GPUMEM_ERROR_INVALID_STATE (@p create asked for its own key), ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY,
 *        an autoinit failure, or the status @p create returned.
 */
GPUMEM_API gpumem_status gpumem_memoize(gpumem_context *ctx, const void *key, size_t key_size,
                                        gpumem_memo_create_fn create, gpumem_memo_destroy_fn destroy,
                                        void *user, void **value);

/**
 * pycuda's clear_context_caches: drops every entry of every context,
 * running each @p destroy callback once, the kernel cache's modules
 * included (a module a caller still holds stays loaded until released; the
 * next gpumem_module_load() loads it again).  Entries still being created
 * when it runs are kept.  pycuda's call also lets go of the contexts its
 * cache kept alive; this cache keeps none alive, so there is nothing else
 * to release.
 * @return ::GPUMEM_OK, or ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY (a context whose entries the library
 *         could not gather keeps them all; the other contexts' entries are dropped).
 */
GPUMEM_API gpumem_status gpumem_clear_context_caches(void);

GPUMEM_END_DECLS

#endif /* GPUMEM_MEMO_H */
