/*
 * hostreg.h - the registry of page-locked host memory (private).
 *
 * One process-wide, sorted list of disjoint ranges that libgpumem knows to be
 * page-locked: its own allocations (pinned, mapped, managed memory, pool
 * blocks) and the page-granular, reference-counted ranges that registration
 * scopes (host.c) registered with the driver.
 *
 * No lock is held across a driver call: a range being registered or
 * unregistered is in the list as busy (not page-locked for
 * gm_host_is_locked); a scope that needs a busy range waits until it is
 * published, so an asynchronous copy's check never waits for another
 * thread's cuMemHostRegister.
 */
#ifndef GM_HOSTREG_H
#define GM_HOSTREG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "context.h"
#include "gpumem/status.h"

/* Records / forgets an allocation of page-locked memory. */
gpumem_status gm_host_track_allocation(const void *start, size_t bytes);
void gm_host_untrack_allocation(const void *start);

/* Page-locked memory of the library's own, the one way the allocator
 * (alloc.c) and the page-locked pools (pool_store.c) get it: cuMemHostAlloc of
 * bytes with flags (CU_MEMHOSTALLOC_*) in dctx, recorded while it lives.
 * Returns the driver's result, or -1 with *st set (HOST_OUT_OF_MEMORY,
 * "what: out of host memory") when the record finds no room; the memory is
 * then given back. */
int gm_host_alloc_locked(gm_dctx *dctx, size_t bytes, unsigned flags, const char *what, void **out,
                         gpumem_status *st);

/* Forgets the record of p (from gm_host_alloc_locked) and gives p back to
 * the driver (cuMemFreeHost); the driver's result. */
int gm_host_free_locked(gm_dctx *dctx, void *p);

/* Whether every byte of [p, p + bytes) is page-locked as far as we know. */
bool gm_host_is_locked(const void *p, size_t bytes);

/* The registry's generation (never 0): it moves on with every change that
 * may change an answer of gm_host_lock_state_at, so an answer may be kept
 * (gm_array_lock_state) while the generation is the one it was given at. */
extern _Atomic uint64_t gm_host_gen_;
static inline uint64_t gm_host_generation(void)
{
    return atomic_load_explicit(&gm_host_gen_, memory_order_relaxed);
}

/* What the driver's DMA may make of host bytes: a range that starts in
 * page-locked memory must lie in that one allocation or registration, or
 * the driver refuses the copy (CUDA_ERROR_INVALID_VALUE), page-locked
 * around it or not; two registrations that share a page are two. */
typedef enum gm_host_lock {
    GM_HOST_PAGEABLE = 0, /* no byte in a range the registry knows */
    GM_HOST_LOCKED = 1,   /* every byte in one range: a driver copy takes it */
    GM_HOST_SPLIT = 2     /* some bytes in ranges, not all in one: only the CPU may copy it */
} gm_host_lock;

/* The gm_host_lock of [p, p + bytes) (bytes > 0), and in *gen the generation
 * its answer is of. */
gm_host_lock gm_host_lock_state_at(const void *p, size_t bytes, uint64_t *gen);

/* The ranges a registration scope holds a reference on. */
typedef struct gm_pin_set {
    uintptr_t *pieces; /* starts of the ranges */
    size_t count, room;
} gm_pin_set;

/* Page-locks the pages [a, b) (page-aligned) for a scope of ctx: ranges
 * already registered gain a reference, pages in none are registered with the
 * driver (flags: CU_MEMHOSTREGISTER_*), pages of the library's own
 * allocations need nothing.  On failure what this call added is still in
 * set: the caller drops the whole set. */
gpumem_status gm_host_pin_pages(gpumem_context *ctx, gm_pin_set *set, uintptr_t a, uintptr_t b, unsigned flags,
                                const char *what);

/* Drops the set's references (unregistering ranges at their last) and
 * frees it; the first failure is returned. */
gpumem_status gm_host_unpin_set(gm_pin_set *set, const char *what);

#endif /* GM_HOSTREG_H */
