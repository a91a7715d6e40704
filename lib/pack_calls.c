/*
 * pack_calls.c - the caller's side of the pack kernels: the copy engine's
 * calls, forwarded to the provider that lib/wiring.c set (pack_calls.h);
 * the kernels' side is pack_provider.c.
 */
#include "config.h"

#include <stdatomic.h>

#include "pack_calls.h"

static _Atomic(const gm_pack_provider *) provider;

void gm_pack_provider_set(const gm_pack_provider *p)
{
    atomic_store_explicit(&provider, p, memory_order_release);
}

gpumem_status gm_pack_kernels_get(gpumem_context *ctx, const char *what, gm_pack_kernels **out)
{
    const gm_pack_provider *p = atomic_load_explicit(&provider, memory_order_acquire);
    *out = NULL;
    return p != NULL ? p->get(ctx, what, out) : GPUMEM_OK;
}

void gm_pack_kernels_put(gm_pack_kernels *k)
{
    const gm_pack_provider *p = atomic_load_explicit(&provider, memory_order_acquire);
    if (k != NULL && p != NULL)
        p->put(k);
}

gpumem_status gm_pack_launch(gm_pack_kernels *k, const gm_pack_plan *plan, uint64_t strided, uint64_t packed,
                             gpumem_stream *stream, const char *what)
{
    const gm_pack_provider *p = atomic_load_explicit(&provider, memory_order_acquire);
    return p->launch(k, plan, strided, packed, stream, what);
}

gpumem_status gm_pack_launch_on(gm_pack_kernels *k, const gm_pack_plan *plan, uint64_t strided, uint64_t packed,
                                gm_dstream *ds, const char *what)
{
    const gm_pack_provider *p = atomic_load_explicit(&provider, memory_order_acquire);
    return p->launch_ds(k, plan, strided, packed, ds, what);
}

gpumem_status gm_pack_launch_batch(gm_pack_kernels *k, int kernel, const gm_pack_batch_params *p,
                                   gpumem_stream *stream, const char *what)
{
    const gm_pack_provider *p_ = atomic_load_explicit(&provider, memory_order_acquire);
    return p_->launch_batch(k, kernel, p, stream, what);
}

gpumem_status gm_pack_scratch_get(gm_pack_kernels *k, size_t bytes, bool side, const char *what, gm_scratch **out)
{
    const gm_pack_provider *p = atomic_load_explicit(&provider, memory_order_acquire);
    return p->scratch_get(k, bytes, side, what, out);
}

void gm_pack_scratch_put(gm_pack_kernels *k, gm_scratch *s)
{
    const gm_pack_provider *p = atomic_load_explicit(&provider, memory_order_acquire);
    if (s != NULL)
        p->scratch_put(k, s);
}
