/*
 * memstats.h - the memory layer's books (private): per-context counters of
 * live memory by kind, the peaks, the ladder's counts, the out-of-memory
 * callback and message, and the leak records of GPUMEM_DEBUG=leaks.  The
 * public face is gpumem/memory.h.
 *
 * Who writes what:
 *  - alloc.c: driver memory it allocates and frees (not pool blocks: the
 *    pools count those themselves, and the report reads their counters, so
 *    a pool hit writes nothing shared), the driver allocations, the
 *    ladder's runs and successes, the callback's calls; it builds the
 *    out-of-memory error here (gm_mem_oom_error);
 *  - pool_store.c: a driver allocation and a sample when a pool grows;
 *  - hostreg.c: the ranges the library registered (the "registered" kind);
 *  - dealloc.c: the deferred queue's totals, mirrored here on every change,
 *    so that reading them needs neither the queue nor its lock;
 *  - array.c, alloc.c (pool allocations), allocation.c and hostreg.c: the leak
 *    records, only when GPUMEM_DEBUG=leaks (one relaxed load otherwise).
 *
 * Counters are relaxed atomics written on driver paths only.  Peaks are
 * sampled (gm_memstats_sample) under the registry lock, which lists every
 * context's books by device.  Lock order: the registry lock, then pool.c's
 * live-pool list and its pools' locks; the callback and leak locks are
 * leaves.  The out-of-memory ladder's lock comes before the registry lock.
 */
#ifndef GM_MEMSTATS_H
#define GM_MEMSTATS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "context.h"
#include "gpumem/array.h"
#include "gpumem/memory.h"

/* The kinds of the report, in its order. */
typedef enum gm_memkind {
    GM_MK_DEVICE,
    GM_MK_PINNED,
    GM_MK_MAPPED,
    GM_MK_MANAGED,
    GM_MK_REGISTERED,
    GM_MK_COUNT
} gm_memkind;

typedef struct gm_memcount {
    _Atomic uint64_t bytes, count;
} gm_memcount;

struct gm_memdev;
struct gm_leaks;

struct gm_memstats {
    gpumem_context *ctx;
    int device;
    struct gm_memdev *dev;                 /* the device's books (registry) */
    struct gm_memstats *next, *prev;       /* in the registry (its lock) */
    gm_memcount live[GM_MK_COUNT];         /* driver memory and registrations; not pool blocks */
    /* the deferred queue's totals (dealloc.c writes them under its lock) */
    _Atomic uint64_t pending_count, pending_bytes, pending_device_bytes;
    _Atomic uint64_t driver_allocs, ladder_runs, ladder_successes, cb_calls, cb_successes, oom_failures;
    /* Under the registry lock: */
    uint64_t peak_bytes[GM_MK_COUNT], peak_count[GM_MK_COUNT], peak_reserved;
    /* The out-of-memory callback, under cb_lock. */
    pthread_mutex_t cb_lock;
    gpumem_oom_callback cb;
    void *cb_user;
    struct gm_leaks *leaks; /* GPUMEM_DEBUG=leaks: what is alive, with call sites */
};

/* The report's kind of a gpumem_memory_kind (device, pinned, mapped, managed). */
static inline gm_memkind gm_memkind_of(gpumem_memory_kind k)
{
    return k == GPUMEM_MEMORY_PINNED ? GM_MK_PINNED : k == GPUMEM_MEMORY_MAPPED ? GM_MK_MAPPED
           : k == GPUMEM_MEMORY_MANAGED ? GM_MK_MANAGED : GM_MK_DEVICE;
}

#define GM_STAT_ADD(field, n) atomic_fetch_add_explicit(&(field), (uint64_t)(n), memory_order_relaxed)
#define GM_STAT_SUB(field, n) atomic_fetch_sub_explicit(&(field), (uint64_t)(n), memory_order_relaxed)

/* Live memory of a kind allocated from (+) or given back to (-) the driver
 * outside pools.  NULL-safe on a context without books. */
static inline void gm_memstats_live(gpumem_context *ctx, gm_memkind k, uint64_t bytes, int sign)
{
    struct gm_memstats *m = ctx->memstats;
    if (m == NULL)
        return;
    if (sign > 0) {
        GM_STAT_ADD(m->live[k].bytes, bytes);
        GM_STAT_ADD(m->live[k].count, 1);
    } else {
        GM_STAT_SUB(m->live[k].bytes, bytes);
        GM_STAT_SUB(m->live[k].count, 1);
    }
}

/* One more driver allocation (cuMemAlloc, cuMemHostAlloc, cuMemAllocManaged). */
static inline void gm_memstats_driver_alloc(gpumem_context *ctx)
{
    if (ctx->memstats != NULL)
        GM_STAT_ADD(ctx->memstats->driver_allocs, 1);
}

/* Samples the peaks of ctx and of its device from what is live now.  Takes
 * the registry lock and pools' locks: call it with no lock of the memory
 * layer held but the ladder's. */
void gm_memstats_sample(gpumem_context *ctx);

/* ---- out of memory ---- */

/* What an allocation that failed for lack of memory asked for, and what
 * the ladder and the callback did about it. */
typedef struct gm_oom {
    const char *what;          /* the public call */
    size_t bytes;              /* asked for */
    size_t block_bytes;        /* a pool's block for it, or 0 for driver memory */
    gpumem_memory_kind kind;   /* DEVICE, PINNED, MAPPED or MANAGED */
    bool pooled;               /* from a pool */
    const char *driver_op;     /* cuMemAlloc, cuMemHostAlloc, cuMemAllocManaged */
    uint64_t released_blocks, released_bytes; /* pool blocks the ladder gave back */
    uint64_t flushed_frees, flushed_bytes;    /* deferred frees it did */
    unsigned ladder_runs, callback_calls;
    bool callback_declined;    /* the callback returned 0 */
} gm_oom;

/* The out-of-memory status and message of o, in ctx (the thread's last
 * error): GPUMEM_ERROR_OUT_OF_MEMORY, or GPUMEM_ERROR_HOST_OUT_OF_MEMORY for
 * page-locked memory.  Counts the failure.  Makes one driver call
 * (cuMemGetInfo) for device memory; its failure only leaves the numbers out. */
gpumem_status gm_mem_oom_error(gpumem_context *ctx, const gm_oom *o);

/* Runs ctx's out-of-memory callback for o, if there is one and it may run
 * (fewer than GPUMEM_OOM_CALLBACK_MAX_CALLS calls for this allocation, not
 * from inside a callback of this thread).  True when it asks for a retry;
 * o->callback_calls and callback_declined are updated.  No lock held. */
bool gm_mem_oom_callback(gpumem_context *ctx, gm_oom *o);

/* ---- the report as text (memprint.c) ---- */

/* bytes as a person reads them into buf of size bytes (32 always do): "512 B",
 * "4 KiB", "1.5 MiB", "1023.997 MiB"; a figure that is not exact never
 * reads as one.  Returns buf. */
const char *gm_mem_human(uint64_t b, char *buf, size_t size);

/* gpumem_memory_report_format() without its checks: r is a whole report of
 * this version.  Returns the bytes the text needs, its NUL included. */
size_t gm_memory_report_text(const struct gpumem_memory_report *r, unsigned flags, char *buf, size_t size);

/* ---- leaks (GPUMEM_DEBUG=leaks) ---- */

typedef enum gm_leak_type { GM_LEAK_ARRAY, GM_LEAK_ALLOCATION, GM_LEAK_REGISTRATION } gm_leak_type;

/* Whether leaks are recorded: set once, when the first context is made. */
extern atomic_bool gm_leaks_on;

static inline bool gm_leaks_enabled(void)
{
    return atomic_load_explicit(&gm_leaks_on, memory_order_relaxed);
}

/* Records something alive in ctx under key (its handle or address), with
 * the calling frames; gm_leak_forget drops it.  Only when enabled. */
void gm_leak_add(gpumem_context *ctx, gm_leak_type type, uintptr_t key, gpumem_memory_kind kind, uint64_t bytes,
                 const char *what);
void gm_leak_forget(gpumem_context *ctx, uintptr_t key);

/* The context hook (lib/wiring.c): made first and ended last, so that every
 * other layer's allocations and frees find the books. */
extern const gm_context_hook gm_memstats_hook;

/* The leak list's process-lifetime hook (lifecycle.h): listed at exit. */
extern const struct gm_life_hook gm_leaks_life;

#endif /* GM_MEMSTATS_H */
