/*
 * copy_tuning.c - the copy engine's tuning: cached parameters of the
 * environment, and the snapshot every copy reads (copy_tuning.h).
 *
 * The shared snapshot is rebuilt under a lock when a setting changes, and
 * its generation is published with a release store.  Each thread keeps its
 * own copy and the generation it was taken at; a copy compares the two
 * (one acquire load) and takes the lock only when they differ.
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "copy_tuning.h"
#include "env.h"
#include "error.h"
#include "params.h"

/* ---- the parameters (params.h's table, read once) --------------------------------------------------- */

_Static_assert(GM_COPY_MIN_ROW_BYTES == 128, "params.c's GM_P_COPY_MIN_ROW_BYTES row");

/* GPUMEM_COPY_SCRATCH_CHUNK unset: 0, and the decision chooses
 * (GM_COPY_SCRATCH_CHUNK, or more between devices) */
static gpumem_status param_copy_min_row_bytes(uint64_t *out)
{
    return gm_param_size(GM_P_COPY_MIN_ROW_BYTES, out);
}

static gpumem_status param_copy_scratch_chunk(uint64_t *out)
{
    return gm_param_size(GM_P_COPY_SCRATCH_CHUNK, out);
}

static gpumem_status param_peer(long *out)
{
    return gm_param_long(GM_P_PEER, out, NULL);
}

/* ---- the snapshot ------------------------------------------------------------------------------- */

static pthread_mutex_t tuning_mu = PTHREAD_MUTEX_INITIALIZER;
static gm_copy_tuning current;      /* tuning_mu */
static _Atomic uint64_t published;  /* current.gen once built; 0 before */
static atomic_int api_peer = -1;    /* gpumem_peer_set_enabled's value; -1: not called */

static _Thread_local gm_copy_tuning mine;
static _Thread_local uint64_t mine_gen;

/* Rebuilds current (tuning_mu held). */
static void build(void)
{
    gm_copy_tuning t;
    memset(&t, 0, sizeof t);
    long v = 0;
    uint64_t u = 0;
    /* a bad value's error is kept by its parameter and replayed by the copies
     * that need it; reading it here records nothing, so that a copy that does
     * not need it leaves the caller's last failure alone (gpumem/status.h) */
    gm_error_suspend();
    if (param_copy_min_row_bytes(&u) == GPUMEM_OK)
        t.min_row_bytes = (size_t)u;
    else
        t.bad |= GM_TUNE_BAD_MIN_ROW;
    if (param_copy_scratch_chunk(&u) == GPUMEM_OK)
        t.scratch_chunk = (size_t)u;
    else
        t.bad |= GM_TUNE_BAD_SCRATCH;
    t.staging.size = sizeof t.staging;
    if (gpumem_staging_get(&t.staging) != GPUMEM_OK)
        t.bad |= GM_TUNE_BAD_STAGING;
    int api = atomic_load(&api_peer);
    if (param_peer(&v) != GPUMEM_OK) /* a bad value fails copies between devices even when overridden */
        t.bad |= GM_TUNE_BAD_PEER;
    else
        t.peer = api >= 0 ? api != 0 : v != 0;
    gm_error_resume(GPUMEM_OK);
    t.cpu_thread_bytes = GM_COPY_CPU_THREAD_BYTES;
    t.gen = current.gen + 1;
    current = t;
    atomic_store_explicit(&published, t.gen, memory_order_release);
}

void gm_copy_tuning_publish(void)
{
    pthread_mutex_lock(&tuning_mu);
    build();
    pthread_mutex_unlock(&tuning_mu);
}

void gm_copy_tuning_get(gm_copy_tuning *out)
{
    uint64_t gen = atomic_load_explicit(&published, memory_order_acquire);
    if (gen == 0 || gen != mine_gen) {
        pthread_mutex_lock(&tuning_mu);
        if (current.gen == 0)
            build();
        mine = current;
        mine_gen = current.gen;
        pthread_mutex_unlock(&tuning_mu);
    }
    *out = mine;
}

void gm_copy_tuning_set_peer(int enabled)
{
    atomic_store(&api_peer, enabled);
    gm_copy_tuning_publish();
}

gpumem_status gm_copy_tuning_error(unsigned bad, const char *what)
{
    long v;
    uint64_t u;
    gpumem_status st = GPUMEM_OK;
    if (bad & GM_TUNE_BAD_MIN_ROW)
        st = param_copy_min_row_bytes(&u);
    else if (bad & GM_TUNE_BAD_SCRATCH)
        st = param_copy_scratch_chunk(&u);
    else if (bad & GM_TUNE_BAD_STAGING) {
        gpumem_staging_settings s = {sizeof s, 0, 0, 0, 0};
        st = gpumem_staging_get(&s);
    } else if (bad & GM_TUNE_BAD_PEER)
        st = param_peer(&v);
    return st == GPUMEM_OK ? st : gm_error_prefix(st, what);
}
