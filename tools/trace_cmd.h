/*
 * trace_cmd.h - gpumem trace (trace.c: the command; trace_summary.c,
 * trace_plot.c, trace_export.c, trace_replay.c: its subcommands), and the
 * model of a trace's allocations they share (trace_model.c).
 */
#ifndef GPUMEM_TOOLS_TRACE_CMD_H
#define GPUMEM_TOOLS_TRACE_CMD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "trace_read.h"

#define TM_LIVE UINT64_MAX

/* An allocation of the trace, from its alloc event to its free (t1
 * TM_LIVE: never freed within the trace). */
typedef struct tm_alloc {
    uint64_t t0, t1, bytes, addr, stream;
    uint32_t stack, thread, pool; /* pool: a number from 1 (tm_model.pools), 0 the driver */
    int32_t device;
    uint8_t kind;
    size_t ev;                    /* its alloc event */
} tm_alloc;

typedef struct tm_pool {
    uint64_t id; /* the trace's identity */
    uint8_t kind;
    int32_t device;
} tm_pool;

typedef struct tm_model {
    tm_alloc *a;
    size_t na;
    tm_pool *pools; /* pools[n - 1] is pool n, in order of first use */
    size_t npools;
    int64_t *delta;  /* per event: bytes in use it adds (alloc) or takes (free) */
    int32_t *which;  /* per event: its allocation (tm_model.a), or -1 */
    uint64_t unmatched_frees; /* frees of memory allocated before the trace started */
} tm_model;

/* 0, or -1 without memory. */
int tm_build(const tr_trace *t, tm_model *m);
void tm_free(tm_model *m);

/* A region of a thread, from its push to the pop that closes it: the next
 * pop of the same thread and depth (t1 TM_LIVE, pop TM_NONE: still open at
 * the end).  Pops that close nothing (their push came before the trace) are
 * in no region. */
#define TM_NONE SIZE_MAX
typedef struct tm_region {
    uint32_t thread, depth, name; /* name: a string id */
    uint64_t t0, t1;
    size_t push, pop;             /* their events */
} tm_region;

/* The trace's regions in the order of their push, in time linear in the
 * events (a map from thread and depth).  0, or -1 without memory. */
int tm_regions(const tr_trace *t, tm_region **r, size_t *n);

/* The kinds a summary counts apart: the six kinds, and unknown (6). */
#define TM_NKIND 7
int tm_kind_slot(int kind);

/* "12.5 MiB", "512 B" */
const char *tm_bytes(uint64_t b, char *buf, size_t size);
/* The name of a pool number: "driver", "pool 3". */
const char *tm_pool_name(uint32_t pool, char *buf, size_t size);

/* What gpumem trace plot stacks the memory in use by: the memory kind, the
 * pool, or the call site (--by-site: the trace must have call sites); the
 * library's own memory (scratch, staging, bounce blocks, temporaries) has
 * categories of its own but by pool. */
enum { TP_BY_KIND = 0, TP_BY_POOL = 1, TP_BY_SITE = 2 };

/* gpumem trace plot (trace_plot.c): 0, 1 on failure (message on stderr). */
int trace_plot(const tr_trace *t, const char *file, const char *out, int by);

/* gpumem trace summary (trace_summary.c), on stdout, text or JSON; note: why
 * the trace is incomplete.  0, 1 without memory (message on stderr). */
int trace_summary(const char *file, const tr_trace *t, const tm_model *m, int json, const char *note);

/* gpumem trace export --chrome (trace_export.c), on stdout.  0, -1 without
 * memory (nothing written). */
int trace_export_chrome(const tr_trace *t, const tm_model *m);

/* gpumem trace replay (trace_replay.c).  The trace's streams replay on
 * streams of their own, at most TRACE_REPLAY_MAX_STREAMS a device: more
 * share them in turn (a trace can name millions). */
#define TRACE_REPLAY_MAX_STREAMS 32
/* --allocator's device pools: the classic one (cuMemAlloc blocks), a
 * virtual-memory one, the driver's stream-ordered pool (not holding: the
 * driver's pool caches); trace_allocator_names[pool] is the option's value. */
enum { TRACE_REPLAY_POOL = 1, TRACE_REPLAY_VMM, TRACE_REPLAY_ASYNC };
extern const char *const trace_allocator_names[4];

typedef struct trace_replay_opts {
    int pool;           /* --allocator: 0 driver, TRACE_REPLAY_POOL, _VMM or _ASYNC */
    unsigned pool_flags;
    int no_hold;
} trace_replay_opts;

/* 0, 1 on failure (message on stderr). */
int trace_replay(const tr_trace *t, const tm_model *m, trace_replay_opts o);

/* gpumem trace: the command (trace.c). */
int cmd_trace(int argc, char **argv);

#endif /* GPUMEM_TOOLS_TRACE_CMD_H */
