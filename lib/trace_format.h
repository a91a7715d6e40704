/*
 * trace_format.h - the trace file's layout (doc/trace-format.md is its
 * description; this is the one list of its numbers, shared by the recorder,
 * lib/trace.c and lib/trace_writer.c, and the reader, tools/trace_read.c).
 * Constants only.
 *
 * Every number is little-endian.  A file is:
 *   the header (GM_TRACE_HEADER_BYTES; its own size at GM_TH_HEADER_BYTES),
 *   then blocks: a u32 type, a u32 payload length, the payload.
 */
#ifndef GM_TRACE_FORMAT_H
#define GM_TRACE_FORMAT_H

#define GM_TRACE_MAGIC "GPUMEMTR" /* 8 bytes, no terminator in the file */
#define GM_TRACE_VERSION 2u     /* the version written */
#define GM_TRACE_VERSION_MIN 1u /* the oldest one read: version 1 has no owners (GM_TO_*) */
#define GM_TRACE_HEADER_BYTES 64u
#define GM_TRACE_RECORD_BYTES 64u
#define GM_TRACE_BLOCK_HEADER 8u
#define GM_TRACE_MAX_PAYLOAD (16u << 20) /* a longer block is corrupt */
#define GM_TRACE_MAX_STRING 1024u        /* names are cut to this many bytes */
#define GM_TRACE_MAX_FRAMES 6u           /* frames of a call site */

/* The header's fields: byte offsets. */
enum {
    GM_TH_MAGIC = 0,         /* 8 bytes */
    GM_TH_VERSION = 8,       /* u32 */
    GM_TH_HEADER_BYTES = 12, /* u32: where the first block starts */
    GM_TH_RECORD_BYTES = 16, /* u32: bytes of an event record (>= 64) */
    GM_TH_FLAGS = 20,        /* u32: GM_TRACE_FLAG_* */
    GM_TH_REALTIME_NS = 24,  /* u64: wall clock at the start, ns since 1970 */
    GM_TH_TICKS0 = 32,       /* u64: the event clock at the start */
    GM_TH_NS0 = 40,          /* u64: CLOCK_MONOTONIC at the start, ns */
    GM_TH_TICKS1 = 48,       /* u64, u64: a second pair, read 2 ms before (or the same) */
    GM_TH_NS1 = 56
};
#define GM_TRACE_FLAG_CALL_SITES 0x1u

/* Block types. */
enum {
    GM_TB_INFO = 1,   /* u32 pid, u32 0, the program's file (bytes to the end) */
    GM_TB_THREAD = 2, /* u32 index, u32 system thread id, the thread's name (bytes to the end) */
    GM_TB_STRING = 3, /* u32 id (from 1), the bytes (to the end) */
    GM_TB_STACK = 4,  /* u32 id (from 1), u32 n <= GM_TRACE_MAX_FRAMES, n frames: u64 address,
                       * u64 address in its module's file (its ELF virtual address), u32 string id of
                       * the module's file (0: unknown), u32 0 */
    GM_TB_EVENTS = 5, /* u32 thread index, u32 n, n records of the header's record size */
    GM_TB_CLOCK = 6,  /* u64 ticks, u64 CLOCK_MONOTONIC ns, read together */
    GM_TB_END = 7     /* u64 events recorded, u64 events lost, u64 ticks, u64 ns: the trace is whole */
};
#define GM_TRACE_FRAME_BYTES 24u

/* An event record's fields: byte offsets. */
enum {
    GM_TR_TYPE = 0,    /* u8: GM_TE_* */
    GM_TR_KIND = 1,    /* u8: a gpumem_memory_kind, 0xff unknown; a copy's source */
    GM_TR_KIND2 = 2,   /* u8: a copy's destination kind */
    GM_TR_FLAGS = 3,   /* u8: GM_TF_* */
    GM_TR_DEVICE = 4,  /* i32: -1 none */
    GM_TR_TICKS = 8,   /* u64 */
    GM_TR_CONTEXT = 16, /* u64: an identity, 0 none */
    GM_TR_STREAM = 24, /* u64: an identity, 0 none (synchronous) */
    GM_TR_POOL = 32,   /* u64: an identity, 0 the driver; a copy: the destination device (i64) */
    GM_TR_BYTES = 40,  /* u64 */
    GM_TR_VALUE = 48,  /* u64: address (alloc, free), duration in ticks (copy), bytes given back (ladder, trim) */
    GM_TR_REF = 56,    /* u32: call site id (alloc), string id (copy path, marker, region, OOM message) */
    GM_TR_AUX = 60     /* u32: owner (alloc, GM_TO_*), direction (copy), blocks given back (ladder, trim), status (OOM),
                        * depth (regions) */
};

/* Event types. */
enum {
    GM_TE_ALLOC = 1,
    GM_TE_FREE = 2,
    GM_TE_COPY = 3,
    GM_TE_LADDER = 4,
    GM_TE_OOM = 5,
    GM_TE_TRIM = 6,
    GM_TE_MARK = 7,
    GM_TE_PUSH = 8,
    GM_TE_POP = 9
};
#define GM_TE_LAST GM_TE_POP

/* Who holds an allocation: an alloc event's aux (version 2; 0 in version 1).
 * The program (its arrays, pool allocations, page-locked memory), or the
 * library's own memory, which it allocates and frees inside its calls or
 * keeps for later ones. */
enum {
    GM_TO_PROGRAM = 0,
    GM_TO_SCRATCH = 1,  /* a copy's device scratch (the pack kernels' chunks) */
    GM_TO_STAGING = 2,  /* the staging engine's pinned slots (gpumem/staging.h) */
    GM_TO_BOUNCE = 3,   /* a queued download's pinned bounce block */
    GM_TO_TEMPORARY = 4 /* a copy's temporary array (overlapping views, copies between devices) */
};
#define GM_TO_LAST GM_TO_TEMPORARY

/* Event flags. */
#define GM_TF_ASYNC 0x1u    /* a copy on a stream: its duration is the time to queue it */
#define GM_TF_RETRY_OK 0x1u /* a ladder step whose retry succeeded */

#endif /* GM_TRACE_FORMAT_H */
