/*
 * copy_engine_impl.h - the copy engine's shared state (private to
 * copy_engine.c and copy_packed.c).
 *
 * The engine is two files:
 *   - copy_engine.c: a copy from end to end (its job, the decision's probe
 *     acquiring what it takes, finish() giving it back), the sides as the
 *     driver addresses them, the driver's rectangular copies and
 *     contiguous transfers, and the executors of one step, of a transfer
 *     and of two steps through a temporary;
 *   - copy_packed.c: the packed run's executor (GM_HOW_PACKED): packing and
 *     unpacking by the kernels, the CPU and the staging engine's threads,
 *     a run's chunks through device scratch, and the chunks cut into one
 *     staged transfer's segments.
 */
#ifndef GM_COPY_ENGINE_IMPL_H
#define GM_COPY_ENGINE_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "array.h"
#include "copy_decide.h"
#include "copy_peer.h"
#include "driver.h"
#include "pack_calls.h"
#include "staging.h"

/* How the driver addresses one side of a copy. */
typedef struct gm_copy_addr {
    int memtype;         /* GM_CU_MEMORYTYPE_HOST, _DEVICE or _UNIFIED */
    char *host;          /* element 0, for HOST */
    gm_cu_deviceptr dev; /* element 0, for DEVICE and UNIFIED */
} gm_copy_addr;

/* One copy's state: where it runs, and what it holds and queued. */
typedef struct gm_copy_job {
    const char *what;
    gpumem_context *ctx;
    gpumem_stream *stream;
    gm_dstream *ds;
    int async;
    gm_copy_addr src, dst;    /* for plan visits */
    gm_pack_kernels *kernels; /* held for the copy */
    gm_scratch *scratch;      /* device scratch, held for the copy */
    gm_staging *stage;        /* the staging engine, held when the decision stages */
    gpumem_array *run_buf;    /* the pageable host array that holds the run (the decision's host_run) */
    bool pending;             /* work is queued on ds that a synchronous copy must wait for */
    bool side_pending;        /* work is queued on the scratch's side stream that ds does not wait for */
    gpumem_array *temp;       /* the device temporary of a copy through one (GM_HOW_TEMP) */
    bool *synced;             /* set when the copy waited for its stream after all */
    bool cross;               /* between two devices: what the copy holds is in peer */
    gm_peer_hold peer;
} gm_copy_job;

/* copy_engine.c: how the driver addresses array a. */
gm_copy_addr gm_copy_addr_of(const gpumem_array *a);

/* copy_engine.c: the planner's rectangular copies of a's shape, strides sstrides at src to dstrides at dst. */
gpumem_status gm_copy_job_rect(gm_copy_job *j, const gpumem_array *a, const int64_t *sstrides, gm_copy_addr src,
                               const int64_t *dstrides, gm_copy_addr dst);

/* copy_engine.c: one contiguous transfer on ds (dir 1 up, -1 down), staged when j holds the staging engine. */
gpumem_status gm_copy_job_transfer(gm_copy_job *j, gm_dstream *ds, gm_cu_deviceptr dst, gm_cu_deviceptr src,
                                   size_t bytes, int dir, int async);

/* copy_packed.c: a pack (or unpack) by j's kernels between strided ss at saddr and packed ps at paddr. */
gpumem_status gm_copy_device_pack(gm_copy_job *j, int ndim, const int64_t *shape, size_t itemsize, const int64_t *ss,
                                  uint64_t saddr, const int64_t *ps, uint64_t paddr, bool unpack);

/* copy_packed.c: the executor of a packed run (GM_HOW_PACKED), with what the job holds. */
gpumem_status gm_copy_run_packed(gm_copy_job *j, const gm_copy_decision *d, gpumem_array *dst,
                                 const gpumem_array *src);

#endif
