/*
 * copy_tuning.h - every setting the copy engine's decision reads, in one
 * structure (private).
 *
 * Each environment variable is a row of params.h's table, read once: its
 * value or its error kept for every later read.  The settings
 * that calls change (gpumem_staging_set, gpumem_peer_set_enabled) publish a
 * new snapshot: a generation number bumps, and each thread copies the
 * snapshot again at its next copy.  A copy reads the tuning once, with
 * gm_copy_tuning_get: one acquire load while nothing changed, no lock.
 */
#ifndef GM_COPY_TUNING_H
#define GM_COPY_TUNING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpumem/staging.h"
#include "gpumem/status.h"

/* DMA rows narrower than this many bytes run far below the link's speed
 * (the copy engine moves each row as a separate burst): the engine packs
 * such copies instead of issuing a 2-D or 3-D copy.  Measured with
 * `gpumem bench --rows` on an H100 (PCIe gen5, 64 MiB, 2026-11-24): 2-D DMA
 * moves 128-byte rows at 51-52 GB/s, as fast as packing (50.7), 64-byte rows
 * at 43-45 GB/s against packing's 49-50, and 8-byte rows at 3.6-6.3 GB/s
 * against 47-48 (bench/RESULTS.md); GPUMEM_COPY_MIN_ROW_BYTES overrides it. */
#define GM_COPY_MIN_ROW_BYTES 128

/* Device scratch of a strided copy: two buffers of this many bytes at most,
 * which the pack kernels and the transfers take turns on, chunk by chunk
 * (GPUMEM_COPY_SCRATCH_CHUNK overrides it). */
#define GM_COPY_SCRATCH_CHUNK (4u << 20)

/* Between two devices with peer access (both sides strided), unless
 * GPUMEM_COPY_SCRATCH_CHUNK is set, a buffer is a quarter of the copy, from
 * GM_COPY_SCRATCH_CHUNK to this: each chunk costs a wait across the devices
 * (about 10 us), so 4 MiB chunks held [::2] of 256 MiB to 205 GB/s and
 * 64 MiB chunks reached 325 (84% of contiguous; two H200s, 2026-11-25). */
#define GM_COPY_PEER_CHUNK_MAX (64u << 20)

/* A staged strided copy's scratch buffers are at most this big (copy_decide.h:
 * at least the staging window, the staging threads x their slot). */
#define GM_COPY_SCRATCH_STAGED_MAX (32u << 20)

/* A CPU pack at least this big runs on several threads of the worker pool
 * (copy_workers.c's gm_copy_cpu_pack). */
#define GM_COPY_CPU_THREAD_BYTES (4u << 20)

/* Bits of gm_copy_tuning.bad: a setting whose environment variable has a
 * bad value; a copy that needs it fails with the parameter's error. */
enum {
    GM_TUNE_BAD_MIN_ROW = 1u << 0, /* GPUMEM_COPY_MIN_ROW_BYTES */
    GM_TUNE_BAD_STAGING = 1u << 1, /* a GPUMEM_STAGING_* variable */
    GM_TUNE_BAD_PEER = 1u << 2,    /* GPUMEM_PEER */
    GM_TUNE_BAD_SCRATCH = 1u << 3  /* GPUMEM_COPY_SCRATCH_CHUNK */
};

typedef struct gm_copy_tuning {
    uint64_t gen;                    /* the snapshot's generation (> 0) */
    size_t min_row_bytes;            /* GPUMEM_COPY_MIN_ROW_BYTES */
    size_t scratch_chunk;            /* GPUMEM_COPY_SCRATCH_CHUNK: bytes of one scratch buffer; 0: unset */
    size_t cpu_thread_bytes;         /* a CPU pack of at least this runs on several threads */
    gpumem_staging_settings staging; /* gpumem/staging.h's settings */
    bool peer;                       /* copies between devices may use peer access */
    unsigned bad;                    /* GM_TUNE_BAD_* */
} gm_copy_tuning;

/* The current snapshot, into *out: a copy's one read of the tuning. */
void gm_copy_tuning_get(gm_copy_tuning *out);

/* A setting changed (gpumem_staging_set, gpumem_peer_set_enabled): makes a
 * new snapshot, which every thread takes at its next copy. */
void gm_copy_tuning_publish(void);

/* The error of the settings in `bad` (GM_TUNE_BAD_* bits), replayed from
 * their cached parameters and prefixed with what; GPUMEM_OK when none. */
gpumem_status gm_copy_tuning_error(unsigned bad, const char *what);

/* gpumem_peer_set_enabled's value: -1 until it is called. */
void gm_copy_tuning_set_peer(int enabled);


#endif /* GM_COPY_TUNING_H */
