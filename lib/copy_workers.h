/*
 * copy_workers.h - the copies' CPU work on the worker pool (private; the
 * copy engine's, arrays layer): which pool a copy of a context fans out
 * on, and a CPU pack or unpack split over its threads.
 *
 * The pool is workers.h's, the one all CPU fan-out runs on; a context's
 * copies use its device's NUMA node's pool, the one the staging engine
 * (staging.h) places its workers and pinned slots on, grown to the
 * staging settings' threads.  Queued downloads (copy_queued.c) land their
 * slabs on it, and the copy engine packs a strided host side there when no
 * staged transfer does it in the same pass.
 */
#ifndef GM_COPY_WORKERS_H
#define GM_COPY_WORKERS_H

#include <stdbool.h>
#include <stdint.h>

#include "context.h"
#include "kernels/pack_params.h"
#include "workers.h"

/* The worker pool of ctx's device (its NUMA node's; ctx NULL: the pool of
 * no node), grown to the staging settings' threads; *threads: the threads
 * a task of ctx may use, a caller included.  NULL when out of host
 * memory. */
gm_workers *gm_copy_workers(gpumem_context *ctx, unsigned *threads);

/* A pack or unpack between two host buffers (p->strided and p->packed host
 * addresses) on the pool's threads and the caller's, for a copy of ctx
 * (NULL: any), `bytes` packed bytes: at least GM_COPY_CPU_THREAD_BYTES
 * (copy_tuning.h) fan out, in parts of 1 MiB. */
void gm_copy_cpu_pack(gpumem_context *ctx, const gm_pack_params *p, bool unpack, uint64_t bytes);

#endif /* GM_COPY_WORKERS_H */
