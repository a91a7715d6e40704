/*
 * params.c - the table of the library's GPUMEM_* environment variables
 * (params.h) and their reads: through env.c's strict parsers, kept after
 * the first read for those read once.
 */
#include "config.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "env.h"
#include "error.h"
#include "params.h"

#define K (UINT64_C(1) << 10)
#define M (UINT64_C(1) << 20)
#define G (UINT64_C(1) << 30)

#define TEXT(N, DF, R, WHEN, DOC) [GM_P_##N] = {"GPUMEM_" #N, GM_PT_TEXT, .dflt = DF, .read = R, .when = WHEN, .doc = DOC}
#define LONG(N, MIN, MAX, DF, DFT, R, WHEN, DOC)                                                                      \
    [GM_P_##N] = {"GPUMEM_" #N, GM_PT_LONG, .lmin = MIN, .lmax = MAX, .ldflt = DF, .dflt = DFT, .read = R,            \
                  .when = WHEN, .doc = DOC}
#define SIZE(N, MIN, MAX, DF, DFT, R, WHEN, DOC)                                                                      \
    [GM_P_##N] = {"GPUMEM_" #N, GM_PT_SIZE, .umin = MIN, .umax = MAX, .udflt = DF, .dflt = DFT, .read = R,            \
                  .when = WHEN, .doc = DOC}
#define DOUBLE(N, MIN, MAX, DF, DFT, R, WHEN, DOC)                                                                    \
    [GM_P_##N] = {"GPUMEM_" #N, GM_PT_DOUBLE, .dmin = MIN, .dmax = MAX, .ddflt = DF, .dflt = DFT, .read = R,          \
                  .when = WHEN, .doc = DOC}

/* The defaults below are the ones the readers use (each names its own
 * constant where one exists: copy_tuning.h, staging.c, dealloc.c). */
const gm_param_def gm_params[GM_P_COUNT] = {
    TEXT(BACKEND, "auto", GM_READ_EACH, "once per process, on the first call that needs a backend (driver.c)",
         "the driver backend: auto, cuda or sim"),
    TEXT(CUDA_LIBRARY, "libcuda.so.1", GM_READ_EACH, "when the cuda backend loads (cuda.c)",
         "the CUDA driver library to load"),
    TEXT(DEBUG, "off", GM_READ_EACH, "once per process, at the library's first use of it (env.c keeps the flags)",
         "diagnostics on stderr: messages, leaks, poison, copies"),
    TEXT(TRACE, "unset", GM_READ_EACH, "once, by the first context the process makes (trace_writer.c)",
         "the memory trace's file"),
    LONG(TRACE_STACKS, 0, 1, 0, "0", GM_READ_EACH, "by every start of a trace (trace_writer.c)",
         "record each allocation's call site"),
    LONG(SIM_DEVICES, 1, 64, 1, "1", GM_READ_EACH, "when the sim backend loads (sim.c, once per process)",
         "the simulator's devices"),
    SIZE(SIM_MEMORY, M, UINT64_MAX, G, "1G", GM_READ_EACH, "when the sim backend loads", "each simulated device's memory"),
    TEXT(SIM_ARCH, "sm_90", GM_READ_EACH, "when the sim backend loads", "the simulated architecture"),
    TEXT(SIM_BUSY, "none", GM_READ_EACH, "when the sim backend loads", "simulated devices that are busy"),
    TEXT(SIM_PEERS, "all", GM_READ_EACH, "when the sim backend loads", "simulated devices that can access each other"),
    SIZE(SIM_OTHER_MEMORY, 0, UINT64_MAX, 0, "0", GM_READ_EACH, "when the sim backend loads",
         "simulated memory other processes hold"),
    LONG(SIM_FIRST_FIT, 0, 1, 0, "0", GM_READ_EACH, "when the sim backend loads",
         "simulated memory as one range handed out first fit"),
    SIZE(SIM_HOST_MEMORY, 0, UINT64_MAX, G, "1G", GM_READ_EACH, "when the sim backend loads",
         "the simulated page-locked host memory limit"),
    LONG(SIM_STREAM_DELAY_US, 0, 10000000, 2000, "2000", GM_READ_EACH, "when the sim backend loads",
         "the simulated streams' delay"),
    TEXT(SIM_FAIL, "none", GM_READ_EACH, "once per process, at the first driver call (driver.c)",
         "fail the k-th driver call (fault injection)"),
    TEXT(SIM_NUMA, "none", GM_READ_EACH, "when the sim backend loads (sim_numa.c)",
         "the simulated machine's NUMA nodes and each device's node"),
    TEXT(ALLOCATOR, "driver", GM_READ_EACH, "when a context is created (alloc.c)",
         "arrays from the driver or from a pool per context"),
    LONG(MAX_PENDING_DEALLOCS_COUNT, 0, LONG_MAX, 10, "10", GM_READ_EACH, "when a context is created (dealloc.c)",
         "frees queued per context before they are done at once"),
    DOUBLE(MAX_PENDING_DEALLOCS_RATIO, 0.0, 1.0, 0.2, "0.2", GM_READ_EACH, "when a context is created (dealloc.c)",
           "or the fraction of the device's memory they may hold"),
    SIZE(COPY_MIN_ROW_BYTES, 0, G, 128, "128", GM_READ_ONCE, "once per process, by the first copy that needs it",
         "the narrowest DMA row issued as a 2-D or 3-D driver copy"),
    SIZE(COPY_SCRATCH_CHUNK, 64 * K, G, 0, "4M", GM_READ_ONCE, "once per process, by the first copy that needs it",
         "the device scratch buffers of a strided copy"),
    LONG(PEER, 0, 1, 1, "1", GM_READ_ONCE, "once per process, by the first copy between two devices",
         "copies between devices use peer access"),
    LONG(STAGING_THREADS, 1, 64, 0, "three quarters of the CPUs, at least 1, at most 16", GM_READ_ONCE,
         "once per process, by the first gpumem_staging_get() or staged copy",
         "threads working on one staged transfer"),
    SIZE(STAGING_CHUNK, 64 * K, G, 2 * M, "2M", GM_READ_ONCE, "once per process, with GPUMEM_STAGING_THREADS",
         "bytes per pinned slot"),
    LONG(STAGING_DEPTH, 2, 64, 2, "2", GM_READ_ONCE, "once per process, with GPUMEM_STAGING_THREADS",
         "pinned slots per thread and context"),
    SIZE(STAGING_MIN_BYTES, 0, UINT64_MAX, 4 * M, "4M", GM_READ_ONCE, "once per process, with GPUMEM_STAGING_THREADS",
         "the smallest contiguous pageable transfer staged"),
};

/* ---- reads ---------------------------------------------------------------------------------------- */

/* The kept first read of a GM_READ_ONCE variable. */
typedef struct kept {
    _Atomic int state; /* 0: not read; 1: read (the fields below are final) */
    gpumem_status status;
    union {
        long l;
        uint64_t u;
        double d;
    } value;
    char *text; /* GM_PT_TEXT */
    bool set;
    char error[256];
} kept;

static kept keep[GM_P_COUNT];
static pthread_mutex_t keep_mu = PTHREAD_MUTEX_INITIALIZER; /* first reads */

/* Reads variable id now: its value in *k (status, error). */
static void read_now(gm_param_id id, kept *k)
{
    const gm_param_def *d = &gm_params[id];
    switch (d->type) {
    case GM_PT_LONG:
        k->status = gm_env_parse_long(d->name, d->lmin, d->lmax, d->ldflt, &k->value.l, &k->set, k->error,
                                      sizeof k->error);
        break;
    case GM_PT_SIZE:
        k->status = gm_env_parse_size(d->name, d->umin, d->umax, d->udflt, &k->value.u, k->error, sizeof k->error);
        break;
    case GM_PT_DOUBLE:
        k->status = gm_env_parse_double(d->name, d->dmin, d->dmax, d->ddflt, &k->value.d, k->error, sizeof k->error);
        break;
    default:
        k->status = GPUMEM_OK;
        break;
    }
}

/* The value of id: kept (GM_READ_ONCE) or read now into *tmp.  Its status,
 * with the message set. */
static gpumem_status get(gm_param_id id, gm_param_type type, kept *tmp, const kept **out)
{
    if (id < 0 || id >= GM_P_COUNT || gm_params[id].type != type)
        return gm_error(GPUMEM_ERROR_INTERNAL, "parameter %d read as type %d", (int)id, (int)type);
    const kept *k = tmp;
    if (gm_params[id].read == GM_READ_ONCE) {
        kept *c = &keep[id];
        if (atomic_load_explicit(&c->state, memory_order_acquire) == 0) {
            pthread_mutex_lock(&keep_mu);
            if (atomic_load_explicit(&c->state, memory_order_relaxed) == 0) {
                read_now(id, c);
                atomic_store_explicit(&c->state, 1, memory_order_release);
            }
            pthread_mutex_unlock(&keep_mu);
        }
        k = c;
    } else {
        read_now(id, tmp);
    }
    *out = k;
    return k->status == GPUMEM_OK ? GPUMEM_OK : gm_error(k->status, "%s", k->error);
}

const char *gm_param_text(gm_param_id id)
{
    if (id < 0 || id >= GM_P_COUNT)
        return NULL;
    if (gm_params[id].read == GM_READ_EACH || gm_params[id].type != GM_PT_TEXT)
        return gm_env(gm_params[id].name);
    kept *c = &keep[id];
    if (atomic_load_explicit(&c->state, memory_order_acquire) == 0) {
        pthread_mutex_lock(&keep_mu);
        if (atomic_load_explicit(&c->state, memory_order_relaxed) == 0) {
            const char *v = gm_env(gm_params[id].name);
            c->text = v != NULL ? strdup(v) : NULL; /* kept for the process (NULL too when out of memory) */
            atomic_store_explicit(&c->state, 1, memory_order_release);
        }
        pthread_mutex_unlock(&keep_mu);
    }
    return c->text;
}

gpumem_status gm_param_long(gm_param_id id, long *out, bool *is_set)
{
    kept tmp;
    const kept *k;
    gpumem_status st = get(id, GM_PT_LONG, &tmp, &k);
    if (st == GPUMEM_OK) {
        *out = k->value.l;
        if (is_set != NULL)
            *is_set = k->set;
    }
    return st;
}

gpumem_status gm_param_size(gm_param_id id, uint64_t *out)
{
    kept tmp;
    const kept *k;
    gpumem_status st = get(id, GM_PT_SIZE, &tmp, &k);
    if (st == GPUMEM_OK)
        *out = k->value.u;
    return st;
}

gpumem_status gm_param_double(gm_param_id id, double *out)
{
    kept tmp;
    const kept *k;
    gpumem_status st = get(id, GM_PT_DOUBLE, &tmp, &k);
    if (st == GPUMEM_OK)
        *out = k->value.d;
    return st;
}
