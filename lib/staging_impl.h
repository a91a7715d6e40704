/*
 * staging_impl.h - the staging engine's shared state (private to
 * staging.c and staging_xfer.c).
 *
 * The engine is two files:
 *   - staging.c: the settings (one immutable snapshot behind an atomic
 *     pointer), the engine of each context and its lanes (a lane is one
 *     thread's pinned slots with an event per slot: built, emptied and
 *     freed there), the bounce blocks of queued downloads, and
 *     gpumem_clear_context_caches' clearing;
 *   - staging_xfer.c: the transfers that run through the lanes (a lane
 *     taken per thread, chunks from one cursor, ramps, segments of device
 *     scratch), and the copies between two devices (gm_staging_peer_run).
 * The worker pool the transfers run on is workers.h's; the copies' other
 * CPU work on it is copy_workers.c's.
 */
#ifndef GM_STAGING_IMPL_H
#define GM_STAGING_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "driver.h"
#include "gpumem/staging.h"
#include "staging.h"
#include "workers.h"

#define MAX_DEPTH 64    /* GPUMEM_STAGING_DEPTH's largest value: slots per lane */
#define CALLER_LANES 64 /* lanes of calling threads, per context */
#define BOUNCE_KEEP 4   /* pinned blocks of queued downloads kept for reuse */

/* The settings at one time: every copy reads the one current (lock-free);
 * gpumem_staging_set publishes a new one, and the older stay. */
typedef struct snapshot {
    gpumem_staging_settings s;
    uint64_t gen;
    gpumem_status status; /* of the environment, kept for every read */
    char error[256];
    struct snapshot *older; /* kept: a reader may still hold one */
} snapshot;

/* The current settings: the environment's at the first call (never NULL;
 * out of host memory, a snapshot that says so). */
const snapshot *gm_staging_snapshot(void);

/* The status of a snapshot's environment, its message set again (a bad
 * environment's snapshot holds the defaults). */
gpumem_status gm_staging_snapshot_status(const snapshot *s);

/* One thread's pinned slots in one context. */
typedef struct lane {
    atomic_bool busy;    /* a thread uses it: taken with a compare-and-swap (a worker's own lane needs no lock) */
    bool dirty;          /* an operation on it failed: a transfer into a slot may still run */
    uint64_t gen;        /* the settings it was built for; 0: not built */
    unsigned nslots;
    size_t slot_bytes;
    gm_block blk;        /* the slots, one block */
    char *slot[MAX_DEPTH];
    gm_devent *ev[MAX_DEPTH];
    bool used[MAX_DEPTH]; /* an event was recorded after the slot's last transfer */
    unsigned next;       /* the slot the next chunk takes */
} lane;

struct gm_staging {
    atomic_int refs;      /* the context's + users' */
    gpumem_context *ctx;  /* not retained: the engine ends with it */
    gm_dctx *dctx;
    int node;             /* the device's NUMA node, -1: none or unknown */
    bool callers_fill;    /* calling threads take chunks too (off a NUMA node only the node's workers do) */
    gm_workers *workers;
    pthread_mutex_t mu;   /* the caller lanes (worker lanes need no lock) */
    pthread_cond_t lane_back; /* a caller lane was given back */
    _Atomic(lane *) wlane[GM_WORKERS_MAX]; /* worker w's: made by it, kept until the engine ends */
    lane *clane[CALLER_LANES];
    unsigned nclane;
    pthread_mutex_t bmu;  /* guards the bounce cache */
    gm_block bounce[BOUNCE_KEEP]; /* pinned blocks of queued downloads, kept for reuse */
    unsigned nbounce;
    struct gm_staging *next, *prev; /* in engines (engines_mu) */
};

/* Builds l for the settings s of generation gen (it was built for others,
 * or not at all): its slots from the context allocator, its events.  On
 * failure l is empty. */
gpumem_status gm_staging_lane_build(gm_staging *e, lane *l, const gpumem_staging_settings *s, uint64_t gen,
                                    const char *what);

#endif /* GM_STAGING_IMPL_H */
