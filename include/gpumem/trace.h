/**
 * @file gpumem/trace.h
 * @brief The memory trace: a file with one event per allocation, free,
 *        copy, out-of-memory ladder step, pool trim and user marker, for
 *        `gpumem trace` to summarize, draw, export and replay.
 *
 * @par What is recorded
 * While a trace records, the library writes one event for:
 *  - every allocation and free of the context allocator: arrays, pool
 *    blocks (gpumem_pool_allocate(), gpumem_host_pool_allocate_bytes()),
 *    pinned, mapped and managed memory, and the library's own scratch and
 *    staging buffers; with the time, the thread, the context, the device,
 *    the stream, the memory kind, the pool (none for the driver), the size
 *    asked for and the address.  Zero-byte allocations are not recorded;
 *  - every copy between two arrays (gpumem_array_copy(),
 *    gpumem_copy_to_host(), gpumem_copy_to_device(), and the calls built on
 *    them): bytes, direction, the two memory kinds, the path the copy
 *    engine chose (gpumem_copy_path_name()) and how long the call took;
 *    for a copy on a stream that is the time to queue it, not the transfer;
 *  - every step of the out-of-memory ladder (what it gave back, whether the
 *    retry succeeded), and every allocation that still failed, with the
 *    message gpumem_last_error() gives for it;
 *  - every gpumem_pool_free_held() and gpumem_host_pool_free_held() (a pool
 *    trim), with what it gave back;
 *  - every marker (gpumem_trace_mark()) and named region
 *    (gpumem_trace_push(), gpumem_trace_pop()).
 *
 * With the flag ::GPUMEM_TRACE_CALL_SITES, or the environment variable
 * @c GPUMEM_TRACE_STACKS=1, each allocation also records its call site: up
 * to 6 return addresses of the caller's stack (the library's own frames
 * left out) and, once per distinct call site, the file and offset of each
 * frame's module, for `gpumem trace` to name the functions later.  This
 * costs a stack walk per allocation (microseconds); without it the cost is
 * below.
 *
 * @par Starting a trace
 * Either call gpumem_trace_start(), or set @c GPUMEM_TRACE=FILE: the first
 * context the process makes (gpumem_context_create() and the calls that
 * make one, autoinit included) starts a trace to FILE, and the trace ends
 * at gpumem_trace_stop() or when the process exits (exit(), or a return
 * from main).  In FILE, @c %p stands for the process id and @c %% for one
 * @c %.  When FILE cannot be written, that context creation, and every
 * later one, fails with ::GPUMEM_ERROR_INVALID_ENVIRONMENT naming
 * @c GPUMEM_TRACE and the reason.  Every process that inherits the variable
 * records (MPI ranks, programs that a traced program starts): put @c %p in
 * the name, or each replaces the file of the one before.  One trace records
 * at a time in a process.
 * A program killed by a signal, or one that calls abort(), leaves a trace
 * without its end; `gpumem trace` says where it stops, and reads what is
 * there with @c --partial.  A child made by fork() does not record.
 *
 * @par Cost
 * While no trace records, each place that would record costs one relaxed
 * atomic load.  While one records, an event is a few stores into the
 * calling thread's own buffer (64 bytes an event); full buffers go to a
 * background thread that writes the file, so no event waits for the disk
 * unless the writer falls 16 MiB behind.  `gpumem bench --alloc` measures an
 * array allocation and release on a pool with and without a trace.
 *
 * @par The file
 * doc/trace-format.md describes the format (a header with a magic number
 * and a version, then length-prefixed blocks: threads, strings, call
 * sites, clock pairs, and blocks of fixed-size little-endian event
 * records).  `gpumem trace summary|plot|export|replay FILE` reads it
 * (gpumem(1)).
 *
 * @par Threads
 * Every function may be called from any thread.  Markers and regions
 * belong to the calling thread: regions nest per thread.
 */
#ifndef GPUMEM_TRACE_H
#define GPUMEM_TRACE_H

#include <gpumem/export.h>
#include <gpumem/status.h>

GPUMEM_BEGIN_DECLS

/** gpumem_trace_start() flag: record each allocation's call site. */
#define GPUMEM_TRACE_CALL_SITES 0x1u

/**
 * Starts recording a trace into the file @p path, which is created, or
 * truncated when it exists.  The trace is written in place into what
 * @p path names, never replacing it: a FIFO, a device (such as /dev/null) or
 * what a symbolic link names is written through, and stays what it was.  A
 * FIFO must have a reader already: one without is refused (the message says
 * so) rather than waited for.  Call sites are recorded when @p flags has
 * ::GPUMEM_TRACE_CALL_SITES or the environment sets
 * @c GPUMEM_TRACE_STACKS=1.  Added in GPUMEM_1.1.
 * @param path the file to write.
 * @param flags 0 or ::GPUMEM_TRACE_CALL_SITES.
 * @return ::GPUMEM_OK;
 *         ::GPUMEM_ERROR_NULL_ARGUMENT (@p path);
 *         ::GPUMEM_ERROR_INVALID_VALUE for an empty @p path, unknown bits in
 *         @p flags, or a file that cannot be opened or written (the message
 *         names the file and the system's reason);
 *         ::GPUMEM_ERROR_INVALID_STATE when a trace is already recording
 *         (gpumem_trace_start() or @c GPUMEM_TRACE started it);
 *         ::GPUMEM_ERROR_INVALID_ENVIRONMENT for a bad
 *         @c GPUMEM_TRACE_STACKS (0 or 1);
 *         ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY when the writer thread cannot
 *         start.  On failure no trace records, and no file is left behind
 *         when the call created it.
 */
GPUMEM_API gpumem_status gpumem_trace_start(const char *path, unsigned flags);

/**
 * Stops the trace that records (whoever started it): every thread's
 * buffered events are written, then the trace's end, and the file is
 * closed.  Events of other threads racing with the call are either in the
 * file or not recorded at all, never half-written.  Added in GPUMEM_1.1.
 * @return ::GPUMEM_OK;
 *         ::GPUMEM_ERROR_INVALID_STATE when no trace records;
 *         ::GPUMEM_ERROR_INVALID_VALUE when writing the file failed at some
 *         point (the message names the file and the system's reason, such as
 *         a full disk): the trace is stopped either way, and the file ends
 *         where writing failed.
 */
GPUMEM_API gpumem_status gpumem_trace_stop(void);

/**
 * Records a marker named @p name at this moment on the calling thread
 * ("time step 12"), drawn as a line on the timeline.  Without a trace
 * recording it does nothing and costs one relaxed load.  Names longer than
 * 1024 bytes are recorded cut to 1024 bytes.  Added in GPUMEM_1.1.
 * @param name the marker's text (any bytes; UTF-8 shows best).
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT (@p name).
 */
GPUMEM_API gpumem_status gpumem_trace_mark(const char *name);

/**
 * Opens a region named @p name on the calling thread ("solver", "I/O"),
 * until the matching gpumem_trace_pop().  Regions nest per thread; the
 * timeline draws each as a bar.  The thread's count of open regions is
 * kept whether or not a trace records; the events are recorded only while
 * one does.  Names longer than 1024 bytes are recorded cut to 1024 bytes.
 * Added in GPUMEM_1.1.
 * @param name the region's name.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT (@p name).
 */
GPUMEM_API gpumem_status gpumem_trace_push(const char *name);

/**
 * Closes the calling thread's innermost open region (gpumem_trace_push()).
 * Added in GPUMEM_1.1.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_INVALID_STATE when the thread has no
 *         open region (nothing changes).
 */
GPUMEM_API gpumem_status gpumem_trace_pop(void);

GPUMEM_END_DECLS

#endif /* GPUMEM_TRACE_H */
