/*
 * wiring.c - what runs when a context is made and when it ends, and who
 * gives the copy engine its pack kernels: the layers below expose their
 * hooks and providers, and this file, in the top layer, connects them in
 * one visible order (doc/design.md, "Wiring").  Nothing registers itself.
 */
#include "config.h"

#include "alloc.h"
#include "context.h"
#include "pack_calls.h"
#include "copy_peer.h"
#include "dealloc.h"
#include "memo.h"
#include "memstats.h"
#include "pack_provider.h"
#include "pool.h"
#include "staging.h"
#include "stream.h"
#include "wiring.h"

/* The context hooks in teardown order.  A context's final release runs their
 * teardowns from the first to the last; its creation runs their creates from
 * the last to the first, so each layer is made after the layers it uses and
 * ended before them. */
static const gm_context_hook *const context_hooks[] = {
    &gm_copy_peer_hook, /* arrays: forget the peer access of the context's device */
    &gm_memo_hook,      /* kernel cache: memoized values and cached modules (the pack kernels too) */
    &gm_staging_hook,   /* arrays: the staging engine's pinned buffers */
    &gm_streams_hook,   /* streams: the default stream, its write-backs committed */
    &gm_allocator_hook, /* memory: the context's own pool (GPUMEM_ALLOCATOR=pool) */
    &gm_dealloc_hook,   /* memory: the deferred frees, flushed last of the frees (the queue is made first) */
    &gm_memstats_hook,  /* memory: the books of every allocation and free above, and the leak list */
};

void gm_wiring_install(void)
{
    gm_context_set_hooks(context_hooks, sizeof context_hooks / sizeof context_hooks[0]);
    gm_pack_provider_set(gm_pack_kernels_provider()); /* device pack/unpack kernels for the copy engine */
    gm_pool_set_destroy_hook(gm_pack_scratch_drop_unkept); /* a destroyed pool's blocks leave the caches */
}

/* The library's only constructor. */
__attribute__((constructor)) static void wiring_at_load(void)
{
    gm_wiring_install();
}
