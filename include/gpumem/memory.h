/**
 * @file gpumem/memory.h
 * @brief Where the memory is: the memory report, out-of-memory errors that
 *        name their cause, the out-of-memory callback, and leaks at exit.
 *
 * Every allocation of the library (arrays, pool allocations, the scratch,
 * staging and bounce buffers of copies) goes through one allocator per
 * context, and every failure for lack of memory through one ladder: give
 * back the blocks that the device's pools hold, flush the context's deferred
 * frees (gpumem/cleanup.h), retry once.  Both keep counters; this header
 * reads them.
 *
 * @par The report
 * gpumem_memory_report() fills a ::gpumem_memory_report for one context, or,
 * with ::GPUMEM_MEMORY_WHOLE_DEVICE, for every context of its device in this
 * process: what is live by kind (device, pinned, mapped, managed and
 * registered memory, bytes and allocations) with the peaks since the last
 * gpumem_memory_reset_peaks(); the device memory the process holds from the
 * driver (live, in pools, in deferred frees) and its peak; what pools hold
 * unused and their largest free block (gpumem_memory_pools() gives each
 * pool's); the deferred frees; the driver allocations made; the ladder's runs
 * and the retries that then succeeded.  The report reads counters that the
 * allocator keeps with relaxed atomic operations and the pools' own
 * counters, so it is cheap enough to call at every time step: it makes no
 * driver call unless ::GPUMEM_MEMORY_DEVICE_INFO asks for the device's free
 * and total memory (one cuMemGetInfo).
 *
 * @par Peaks
 * A peak is sampled whenever the driver gives memory (an allocation that is
 * not served by a pool, a pool that grows, a registration), and at every
 * report and reset, so that allocations served from a pool's held blocks, in
 * any thread, write no counter that threads share.  A peak of live bytes
 * reached only by reusing held pool blocks between two samples can
 * therefore be missed: call gpumem_memory_report() where the peak matters,
 * or read @c peak_device_reserved_bytes, the peak of what the device gave,
 * which every sample catches.  For a whole device the peaks are those of the
 * sums over its contexts, sampled together.
 *
 * @par Out of memory
 * When an allocation still fails after the ladder, its
 * ::GPUMEM_ERROR_OUT_OF_MEMORY (::GPUMEM_ERROR_HOST_OUT_OF_MEMORY for
 * page-locked memory) has a one-line message that says what was asked for
 * and by which call; the cause (below) and the driver call that refused;
 * what the ladder gave back; what to try next (@c GPUMEM_DEBUG=leaks, which
 * lists what is alive at exit and where it was made, and @c GPUMEM_TRACE,
 * which records every allocation); then the memory report of the device,
 * every context of it in this process, as
 * gpumem_memory_report_format() writes it with
 * ::GPUMEM_MEMORY_REPORT_ONE_LINE, this failure counted: the device's free
 * and total memory and an estimate of what others hold (total - free -
 * what this process holds) when the driver gave them, what this process
 * holds, what is live by kind, what its pools hold unused and their largest
 * free block, the deferred frees.  The message is cut at 1023 bytes.  The
 * cause is one of:
 *  - "larger than the device (more than its total memory)": the request
 *    (for a pool, its block) exceeds the device's total memory, so no
 *    freeing can make room;
 *  - "fragmented (enough free in total, no block large enough)": the
 *    device has at least the request free, yet the driver refused it;
 *  - "held by other processes": the device's memory is mostly used outside
 *    this process's allocations (the estimate counts the driver's own use
 *    too, such as the CUDA context itself);
 *  - "this process's live data": the memory is this process's own;
 *  - "unknown (no free memory figure)": the driver did not say how much of
 *    the device is free (its cuMemGetInfo failed).
 *
 * For page-locked memory the host is short, not the device: the cause says
 * so, and the report gives the process's page-locked memory by kind.  A callback
 * set with gpumem_context_set_oom_callback() runs before the final failure
 * and may free memory and ask for another try.
 *
 * @par Leaks
 * With @c GPUMEM_DEBUG=leaks (doc/environment.md), the library records every
 * array that owns memory, every pool allocation of gpumem_pool_allocate()
 * and gpumem_host_pool_allocate_bytes(), and every range of host memory it
 * registered, with a few return addresses of the call that made it.  A
 * context's final release, and the end of the process for every context
 * still alive then, list on standard error what is still alive, with the
 * call that made it and the first three calling frames outside the
 * library.  The frames are named when the list is printed, not when
 * memory is allocated: in a library built with libdw (configure says
 * "leak sites: file:line (libdw)"), a frame whose object has debug
 * information (built with -g, or with a separate debug file under
 * /usr/lib/debug) reads "function (file:line)", the file relative to the
 * directory it was compiled in; any other frame reads as
 * backtrace_symbols() writes it, object(symbol+offset) [address] (a
 * program linked with -rdynamic gets its function names there).
 */
#ifndef GPUMEM_MEMORY_H
#define GPUMEM_MEMORY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <gpumem/export.h>
#include <gpumem/status.h>
#include <gpumem/context.h>
#include <gpumem/array.h>
#include <gpumem/pool.h>

GPUMEM_BEGIN_DECLS

/** Report flag: also ask the driver for the device's free and total memory (one cuMemGetInfo). */
#define GPUMEM_MEMORY_DEVICE_INFO 0x1
/** Report and reset flag: every context of the context's device in this process, not the one context. */
#define GPUMEM_MEMORY_WHOLE_DEVICE 0x2

/**
 * Live memory of one kind: what the program (and the library on its
 * behalf) allocated and has not freed.  Bytes are the sizes asked for.
 */
struct gpumem_memory_usage {
    uint64_t bytes;      /**< live bytes */
    uint64_t count;      /**< live allocations */
    uint64_t peak_bytes; /**< the highest @c bytes sampled since the last reset (see "Peaks") */
    uint64_t peak_count; /**< the highest @c count sampled since the last reset */
};

/**
 * The memory report, filled by gpumem_memory_report().  Set @c size to
 * sizeof(struct gpumem_memory_report) before the call: later versions only
 * append fields, and fill only those that fit in @c size bytes.
 *
 * The kinds count every allocation of the library's allocator: arrays, pool
 * allocations, and the library's own buffers (copy scratch, staging and
 * bounce buffers).  Pool allocations count at the size asked for, in the
 * kind of their pool (page-locked pools made with
 * ::GPUMEM_HOST_ALLOC_DEVICEMAP are mapped).  Counts are exact when no other
 * thread allocates or frees during the call.  Added in GPUMEM_1.1.
 */
struct gpumem_memory_report {
    size_t size;                  /**< set by the caller: sizeof(struct gpumem_memory_report) */
    unsigned flags;               /**< the flags the report was made with */
    int ordinal;                  /**< the device's ordinal */
    uint64_t contexts;            /**< the contexts counted: 1, or those of the device (::GPUMEM_MEMORY_WHOLE_DEVICE) */
    /** The device's free memory (driver; ::GPUMEM_MEMORY_DEVICE_INFO, else 0). */
    uint64_t device_free_bytes;
    /** The device's total memory (driver; ::GPUMEM_MEMORY_DEVICE_INFO, else 0). */
    uint64_t device_total_bytes;
    /**
     * Device memory that this process is not known to hold: total - free -
     * @c device_reserved_bytes of every context of the device, or 0 if that
     * is negative (::GPUMEM_MEMORY_DEVICE_INFO, else 0).  Other processes'
     * memory and the driver's own (the CUDA context itself takes some).
     */
    uint64_t others_bytes;
    struct gpumem_memory_usage device;     /**< device memory (cuMemAlloc, device pools) */
    struct gpumem_memory_usage pinned;     /**< page-locked host memory (cuMemHostAlloc, page-locked pools) */
    struct gpumem_memory_usage mapped;     /**< page-locked host memory mapped into the device */
    struct gpumem_memory_usage managed;    /**< managed memory (cuMemAllocManaged) */
    /** Host memory the library registered with the driver (cuMemHostRegister): page ranges, not scopes. */
    struct gpumem_memory_usage registered;
    /**
     * Device memory held from the driver: live device and managed
     * allocations, device pools' blocks (in use or held, at their block
     * size), and device frees still deferred.  What the device's free
     * memory does not have because of these contexts.
     */
    uint64_t device_reserved_bytes;
    uint64_t peak_device_reserved_bytes; /**< its highest value since the last reset (every sample catches it) */
    uint64_t pools;                      /**< live pools, device and page-locked (gpumem_memory_pools()) */
    uint64_t pool_held_blocks;           /**< free blocks they hold for reuse */
    uint64_t pool_held_bytes;            /**< their bytes */
    uint64_t pool_largest_free_block;    /**< the largest of those blocks, in bytes (0: none) */
    uint64_t pending_frees;              /**< frees waiting in the deferred queue (gpumem/cleanup.h) */
    uint64_t pending_free_bytes;         /**< their bytes */
    /** Driver allocations made (cuMemAlloc, cuMemHostAlloc, cuMemAllocManaged), for pools too. */
    uint64_t driver_allocations;
    /**
     * Runs of the ladder: one for each allocation the driver refused, and
     * one more for each retry the out-of-memory callback asked for that the
     * driver refused too.
     */
    uint64_t oom_ladder_runs;
    uint64_t oom_ladder_successes; /**< of those runs, the ones whose retry then succeeded */
    uint64_t oom_callback_calls;   /**< calls of the out-of-memory callback */
    uint64_t oom_callback_successes; /**< retries the callback asked for that succeeded */
    /** Allocations that failed for lack of memory after all that (not a copy's scratch, which the copy does without). */
    uint64_t oom_failures;
};

/**
 * One pool of a context, filled by gpumem_memory_pools().  Set @c size in
 * every element to sizeof(struct gpumem_memory_pool_report).  Bytes are
 * block bytes (size classes), except @c active_requested_bytes.  Added in
 * GPUMEM_1.1.
 */
struct gpumem_memory_pool_report {
    size_t size;                  /**< set by the caller: sizeof(struct gpumem_memory_pool_report) */
    /** The device pool (borrowed, not retained), or NULL for a page-locked pool and for the context's own. */
    gpumem_pool *pool;
    gpumem_host_pool *host_pool;  /**< the page-locked pool (borrowed, not retained), or NULL */
    gpumem_memory_kind kind;      /**< ::GPUMEM_MEMORY_DEVICE, ::GPUMEM_MEMORY_PINNED or ::GPUMEM_MEMORY_MAPPED */
    int own;                      /**< 1 for the context's own pool (GPUMEM_ALLOCATOR=pool), else 0 */
    int ordinal;                  /**< its device's ordinal */
    uint64_t held_blocks;         /**< free blocks it holds for reuse */
    uint64_t held_bytes;          /**< their bytes */
    uint64_t largest_free_block;  /**< the largest of them (0: none) */
    uint64_t active_blocks;       /**< blocks in use */
    uint64_t active_bytes;        /**< their bytes */
    uint64_t active_requested_bytes; /**< the sizes asked for by the allocations in use */
};

/**
 * Fills @p report (whose @c size field the caller set) for @p ctx, or with
 * ::GPUMEM_MEMORY_WHOLE_DEVICE for every context of its device in this
 * process.  Samples the peaks first.  No driver call unless @p flags has
 * ::GPUMEM_MEMORY_DEVICE_INFO.  Added in GPUMEM_1.1.
 * @par Example
 * The report after one allocation:
 * @code{.c}
 * #include <stdio.h>
 * #include <gpumem.h>
 *
 * int main(void)
 * {
 *     gpumem_array *a = NULL;
 *     const int64_t n = 1 << 20;
 *     struct gpumem_memory_report r = {.size = sizeof r};
 *     gpumem_status st = gpumem_device_array(NULL, 1, &n, NULL, gpumem_dtype_builtin(GPUMEM_FLOAT32), 'C',
 *                                            NULL, &a);
 *     if (st == GPUMEM_OK)
 *         st = gpumem_memory_report(NULL, 0, &r); // no driver call
 *     if (st == GPUMEM_OK)
 *         printf("%llu bytes of device memory in %llu allocation\n", (unsigned long long)r.device.bytes,
 *                (unsigned long long)r.device.count); // prints: 4194304 bytes of device memory in 1 allocation
 *     else
 *         fprintf(stderr, "gpumem: %s\n", gpumem_last_error());
 *     gpumem_array_release(a);
 *     return st == GPUMEM_OK ? 0 : 1;
 * }
 * @endcode
 * @param ctx the context, or NULL for the autoinit context.
 * @param flags 0, or ::GPUMEM_MEMORY_DEVICE_INFO and ::GPUMEM_MEMORY_WHOLE_DEVICE or'ed.
 * @param[in,out] report the report; its @c size set by the caller.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE (unknown flags, @c size
 *        too small), an autoinit failure, or the driver's failure of cuMemGetInfo (the report is then
 *        unchanged).
 */
GPUMEM_API gpumem_status gpumem_memory_report(gpumem_context *ctx, unsigned flags,
                                              struct gpumem_memory_report *report);

/** Printer flag: one line, parts separated by "; ", what is zero left out (for a log or an error message). */
#define GPUMEM_MEMORY_REPORT_ONE_LINE 0x1

/**
 * Writes @p report, as gpumem_memory_report() filled it, as text into @p buf
 * of @p size bytes, the way snprintf() does.  Without flags the text is a
 * few lines, each ending in a newline: a first line naming the device and
 * the contexts counted, then the device's total and free memory and what
 * others hold (only when the report was made with
 * ::GPUMEM_MEMORY_DEVICE_INFO), what this process holds of the device
 * (@c device_reserved_bytes and its peak), a table of the live kinds (bytes,
 * count and their peaks, one row per kind), the pools, the deferred frees,
 * the driver allocations and the out-of-memory counts.  Sizes are written
 * in bytes and in KiB, MiB, GiB or TiB; a figure that is not a whole number
 * of its unit never reads as one ("1024.0 MiB" is written for no less).
 * With ::GPUMEM_MEMORY_REPORT_ONE_LINE it is one line with no newline,
 * parts separated by "; ", which leaves out kinds with nothing live and no
 * peak, and pools, deferred frees and out-of-memory counts that are all 0;
 * the out-of-memory errors of the library quote it (see "Out of memory").
 *
 * @par Truncation
 * As snprintf(): when the text and its terminating NUL do not fit in
 * @p size bytes, @p buf gets the text's first @p size - 1 bytes and a NUL,
 * and the call still returns ::GPUMEM_OK: the text was truncated when
 * @c *needed is more than @p size.  The text is ASCII, so a cut never splits
 * a character.  With @p size 0 nothing is written and @p buf may be NULL: a
 * call with NULL and 0 asks for the size.
 *
 * @par Versions
 * The report's @c size must be at least sizeof(struct gpumem_memory_report)
 * of GPUMEM_1.1; fields that later versions append are printed when @c size
 * covers them.  The report is only read.  Added in GPUMEM_1.1.
 * @par Example
 * A report in a buffer of the size it needs:
 * @code{.c}
 * #include <stdio.h>
 * #include <stdlib.h>
 * #include <string.h>
 * #include <gpumem.h>
 *
 * int main(void)
 * {
 *     struct gpumem_memory_report r = {.size = sizeof r};
 *     size_t needed = 0;
 *     char *text = NULL;
 *     gpumem_status st = gpumem_memory_report(NULL, 0, &r);
 *     if (st == GPUMEM_OK)
 *         st = gpumem_memory_report_format(&r, GPUMEM_MEMORY_REPORT_ONE_LINE, NULL, 0, &needed);
 *     if (st == GPUMEM_OK && (text = malloc(needed)) != NULL)
 *         st = gpumem_memory_report_format(&r, GPUMEM_MEMORY_REPORT_ONE_LINE, text, needed, &needed);
 *     if (st == GPUMEM_OK && text != NULL)
 *         printf("%s\n", strstr(text, "live:")); // prints: live: nothing; no pools; driver allocations 0
 *     else
 *         fprintf(stderr, "gpumem: %s\n", st != GPUMEM_OK ? gpumem_last_error() : "out of memory");
 *     free(text);
 *     return st == GPUMEM_OK ? 0 : 1;
 * }
 * @endcode
 * @param report the report, filled by gpumem_memory_report().
 * @param flags 0 or ::GPUMEM_MEMORY_REPORT_ONE_LINE.
 * @param[out] buf room for @p size bytes (may be NULL when @p size is 0).
 * @param size the size of @p buf.
 * @param[out] needed if not NULL, the bytes the whole text needs, its NUL included (so that
 *        malloc(*needed) holds it).
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT (@p report; @p buf with @p size > 0),
 *        ::GPUMEM_ERROR_INVALID_VALUE (unknown @p flags; @c report->size too small; @c report->flags
 *        with bits gpumem_memory_report() does not know: not a report it filled).  Nothing is written on
 *        failure.
 */
GPUMEM_API gpumem_status gpumem_memory_report_format(const struct gpumem_memory_report *report, unsigned flags,
                                                     char *buf, size_t size, size_t *needed);

/**
 * Writes @p report as gpumem_memory_report_format() formats it to
 * @p file, such as stdout or stderr (with ::GPUMEM_MEMORY_REPORT_ONE_LINE,
 * a newline ends the line).  Added in GPUMEM_1.1.
 * @param report the report, filled by gpumem_memory_report().
 * @param flags 0 or ::GPUMEM_MEMORY_REPORT_ONE_LINE.
 * @param file an open stream.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT (@p report, @p file), ::GPUMEM_ERROR_INVALID_VALUE
 *        for what gpumem_memory_report_format() refuses (then nothing is written) and for a stream that
 *        refuses the text (the message gives the system's reason; part of the text may have been written),
 *        or ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY.
 */
GPUMEM_API gpumem_status gpumem_memory_report_print(const struct gpumem_memory_report *report, unsigned flags,
                                                    FILE *file);

/**
 * Starts the peaks of @p ctx (with ::GPUMEM_MEMORY_WHOLE_DEVICE: of its
 * device and of every context of it) again from what is live now, as
 * PyTorch's reset_peak_memory_stats.  Added in GPUMEM_1.1.
 * @param ctx the context, or NULL for the autoinit context.
 * @param flags 0 or ::GPUMEM_MEMORY_WHOLE_DEVICE.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_INVALID_VALUE (unknown flags), or an autoinit failure.
 */
GPUMEM_API gpumem_status gpumem_memory_reset_peaks(gpumem_context *ctx, unsigned flags);

/**
 * The pools of @p ctx (with ::GPUMEM_MEMORY_WHOLE_DEVICE: of every context
 * of its device), device and page-locked, the context's own pool included:
 * the first @p capacity go to @p pools, and @p count gets how many there
 * are, which may be more.  Every element's @c size must be set, all to the
 * same value.  @p pools may be NULL when @p capacity is 0 (to count them).
 * Destroyed pools are not listed.  Added in GPUMEM_1.1.
 * @param ctx the context, or NULL for the autoinit context.
 * @param flags 0 or ::GPUMEM_MEMORY_WHOLE_DEVICE.
 * @param[in,out] pools @p capacity elements, each with its @c size set.
 * @param capacity the number of elements of @p pools.
 * @param[out] count the number of pools.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT (@p count, or @p pools with @p capacity > 0),
 *        ::GPUMEM_ERROR_INVALID_VALUE (unknown flags, an element's @c size too small or unlike the first's),
 *        or an autoinit failure.  Nothing is written on failure.
 */
GPUMEM_API gpumem_status gpumem_memory_pools(gpumem_context *ctx, unsigned flags,
                                             struct gpumem_memory_pool_report *pools, size_t capacity,
                                             size_t *count);

/**
 * What gpumem_context_set_oom_callback()'s callback is told.  Written by
 * the library: @c size is the library's sizeof, so a program built against
 * an older header reads only the fields it knows.  Added in GPUMEM_1.1.
 */
struct gpumem_oom_info {
    size_t size;              /**< sizeof(struct gpumem_oom_info) of the library */
    size_t bytes;             /**< the bytes asked for */
    gpumem_memory_kind kind;  /**< ::GPUMEM_MEMORY_DEVICE, _PINNED, _MAPPED or _MANAGED */
    unsigned attempt;         /**< 1 at the first call for this allocation, up to ::GPUMEM_OOM_CALLBACK_MAX_CALLS */
    const char *call;         /**< the public function that allocated, such as "gpumem_device_array" */
    /** The error message the allocation fails with if the callback returns 0 (valid during the call). */
    const char *message;
};

/**
 * The out-of-memory callback (RMM's failure callback): runs when an
 * allocation still fails after the ladder.  It may free memory (release
 * arrays, free pool allocations, destroy pools, flush) and return nonzero
 * to have the allocation tried again (the ladder first: what it released
 * into the deferred queue or a pool is given back), or return 0 to let it
 * fail.  Added in GPUMEM_1.1.
 */
typedef int (*gpumem_oom_callback)(gpumem_context *ctx, const struct gpumem_oom_info *info, void *user);

/** The most calls of the out-of-memory callback for one allocation: a callback that always asks again still ends. */
#define GPUMEM_OOM_CALLBACK_MAX_CALLS 4

/**
 * Sets the out-of-memory callback of @p ctx (NULL removes it), with a
 * pointer passed to it unchanged.  It runs in the thread that allocates,
 * with no lock of the library held, at most
 * ::GPUMEM_OOM_CALLBACK_MAX_CALLS times for one allocation; an allocation
 * made inside it does not call it again.  It runs for every allocation of
 * the context's allocator (arrays, pools of the context, the library's own
 * buffers), device and page-locked, except the device scratch of a copy,
 * which the copy can do without (it takes a slower way instead).  If it destroys the pool being
 * allocated from, the allocation fails with ::GPUMEM_ERROR_INVALID_STATE.
 * Added in GPUMEM_1.1.
 * @param ctx the context, or NULL for the autoinit context.
 * @param callback the callback, or NULL.
 * @param user passed to @p callback.
 * @return ::GPUMEM_OK, or an autoinit failure.
 */
GPUMEM_API gpumem_status gpumem_context_set_oom_callback(gpumem_context *ctx, gpumem_oom_callback callback,
                                                         void *user);

GPUMEM_END_DECLS

#endif /* GPUMEM_MEMORY_H */
