/*
 * trace_impl.h - what the trace recorder's two files share (private to
 * trace.c and trace_writer.c; trace.h explains the design).
 *
 *   - trace.c records, on the threads that have events: the clock, each
 *     thread's buffer (its chunk, the busy handshake, the registry of
 *     threads), the strings and call sites interned per trace, the events
 *     and the public marks and regions;
 *   - trace_writer.c is the trace's life: the queue of full chunks and the
 *     writer thread that empties it into the file, start and stop (public
 *     and GPUMEM_TRACE), process exit and fork.
 *
 * Lock order (trace.h): the writer's ctl_mu, then the thread registry's
 * lock (gm_trace_threads_lock), then the writer's queue lock; the string
 * table's lock (gm_trace_strings_lock) is a leaf, taken last by the fork
 * handlers.
 */
#ifndef GM_TRACE_IMPL_H
#define GM_TRACE_IMPL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bytes.h" /* wr32 and wr64: the file is little-endian */
#include "trace_format.h"

/* ---- what the threads hand the writer ---------------------------------------------------------- */

#define CHUNK_RECORDS 1023u /* a chunk is 64 KiB */

/* A thread's records, in the file as one EVENTS block (after its THREAD
 * block, the first time the writer meets the thread). */
typedef struct chunk {
    struct chunk *next;
    uint32_t thread, tid, count;
    char name[16];
    unsigned char rec[CHUNK_RECORDS][GM_TRACE_RECORD_BYTES];
} chunk;

/* A STRING or STACK block for the writer, written before the chunks that
 * name it. */
typedef struct pending {
    struct pending *next;
    size_t size;
    unsigned char data[];
} pending;

/* ---- trace.c: the recorder ---------------------------------------------------------------------- */

extern atomic_uint_fast64_t gm_trace_lost; /* events not recorded for want of host memory */
extern atomic_uint gm_trace_flags;         /* GM_TRACE_FLAG_* of the trace that records */

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t gm_trace_mono_ns(void);
/* Whether gm_trace_ticks reads the CPU's counter (else it is
 * gm_trace_mono_ns). */
bool gm_trace_clock_counter(void);

/* The thread key whose destructor hands an exiting thread's chunk to the
 * writer; 0, or pthread_key_create's error. */
int gm_trace_threads_init(void);
/* The rest of the recorder's one-time set-up: the handshake, the clock,
 * the library's own code range and the program's file, the string ids. */
void gm_trace_recorder_init(void);
/* The program's file ("" when unknown; shorter than
 * GM_TRACE_EXE_PATH_MAX), for the INFO block. */
#define GM_TRACE_EXE_PATH_MAX 4096
const char *gm_trace_exe_path(void);

/* The registry of threads with a buffer. */
void gm_trace_threads_lock(void);
void gm_trace_threads_unlock(void);
/* gm_trace_on is 0 (registry locked): waits until no thread is inside a
 * record (the handshake's barrier first), and hands every thread's partial
 * chunk to the writer (gm_trace_writer_hand). */
void gm_trace_threads_drain_locked(void);
/* In a fork child (registry locked): the parent's threads are not there;
 * their buffers are freed and the calling thread starts over. */
void gm_trace_threads_forget(void);

/* The string table (strings and call sites of this trace). */
void gm_trace_strings_lock(void);
void gm_trace_strings_unlock(void);
/* Takes the blocks waiting for the writer, oldest first (the caller frees
 * them). */
pending *gm_trace_strings_take(void);
/* Forgets the trace's strings and call sites and frees the blocks not
 * written (table locked). */
void gm_trace_strings_reset_locked(void);

/* ---- trace_writer.c: the writer --------------------------------------------------------------------- */

/* Hands a thread's full chunk to the writer (NULL: none), waits while the
 * writer's queue is full, and returns an idle chunk to fill next, or NULL
 * (the caller allocates one).  A chunk the trace no longer accepts, or an
 * empty one, goes back to the idle chunks. */
chunk *gm_trace_writer_swap(chunk *full);
/* Hands c to the writer as gm_trace_writer_swap does, nothing back. */
void gm_trace_writer_hand(chunk *c);

#endif /* GM_TRACE_IMPL_H */
