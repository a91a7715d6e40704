/*
 * stream-gate.h - holds a raw stream's work back until the test lets it go
 * (a host function spinning on a flag, through the driver table's
 * launch_host_func): pending work that is deterministic on the simulator
 * and on a GPU.  For internal tests (test-foreign, test-foreign-cupy).
 */
#ifndef TESTS_STREAM_GATE_H
#define TESTS_STREAM_GATE_H

#include <stdatomic.h>

#include "context.h"
#include "driver.h"

static atomic_int stream_gate;

static void stream_gate_fn(void *arg)
{
    (void)arg;
    while (!atomic_load(&stream_gate))
        ;
}

/* Queues work on raw stream h of ctx that waits for the gate. */
static inline void hold_stream_of(gpumem_context *ctx, void *h)
{
    atomic_store(&stream_gate, 0);
    GM_DRV(launch_host_func, ctx->dctx, (gm_dstream *)h, stream_gate_fn, NULL);
}

/* Opens the gate and waits for h's work. */
static inline void release_stream_of(gpumem_context *ctx, void *h)
{
    atomic_store(&stream_gate, 1);
    GM_DRV(stream_synchronize, ctx->dctx, (gm_dstream *)h);
}

#endif /* TESTS_STREAM_GATE_H */
