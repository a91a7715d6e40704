/**
 * @file gpumem/experimental/foreign.h
 * @brief Experimental: memory for foreign runtimes (numba, CuPy, PyTorch),
 *        allocated and freed by pointer on their own streams.
 *
 * @par The experimental tier
 * This header is not included by <gpumem.h>.  A program that includes it
 * must define @c GPUMEM_EXPERIMENTAL first, the way zstd's static-only API
 * asks for @c ZSTD_STATIC_LINKING_ONLY:
 * @code{.c}
 * #define GPUMEM_EXPERIMENTAL
 * #include <gpumem/experimental/foreign.h>
 * @endcode
 * Without it the header stops the compilation with an error.  Its
 * functions carry the ELF version node @c GPUMEM_EXPERIMENTAL, not
 * @c GPUMEM_1.x: they may change or go in any release, minor and patch
 * releases included, and a program built against them must be rebuilt for
 * each release (Debian's symbols file gives them the version of the release
 * that built the program).
 *
 * @par What it is for
 * Other runtimes in the same process keep pools of their own: memory that
 * one frees the others never reuse, and none of it appears in
 * gpumem_memory_report().  These calls let such a runtime take its memory
 * from libgpumem's pool instead, by pointer (the runtime keeps the pointer,
 * not a handle) and on its own CUDA stream (a @c CUstream given as
 * <tt>void *</tt>).  The Python package @c gpumem (doc/python.md) wraps them
 * with ctypes: a numba memory-manager plugin, CuPy's allocators and
 * PyTorch's pluggable allocator.
 *
 * @par Which pool
 * Device @c d's allocations come from one context of @c d: the one given to
 * gpumem_foreign_set_context(), else one made by gpumem_context_create() on
 * the device's first foreign allocation, which lives until the process
 * exits.  They come from that context's pool (gpumem_context_set_pool(),
 * or the context's own pool that @c GPUMEM_ALLOCATOR=pool gives it) when it
 * has one, else from a device pool that this tier makes for the device on
 * first use (gpumem_pool_create(), no flags) and keeps until exit.  So
 * numba, CuPy and PyTorch in one process share one pool per device, and a
 * block freed by one is reused by the others.  Page-locked memory
 * (gpumem_foreign_host_alloc()) comes from page-locked pools of that
 * context, one per combination of flags.
 *
 * @par Streams
 * A stream is a @c CUstream of the device's primary context, given as
 * <tt>void *</tt>: NULL (0) and @c CU_STREAM_LEGACY (1) are the legacy
 * default stream, @c CU_STREAM_PER_THREAD (2) the calling thread's default
 * stream, ::GPUMEM_FOREIGN_STREAM_LEGACY_ONLY (3) the legacy default stream
 * too (see below), ::GPUMEM_FOREIGN_STREAM_ALLOCATED (4), for a free only, the
 * allocation's stream, any other value a stream handle.  Any other value from
 * 4 to 4095, or above @c INTPTR_MAX, is ::GPUMEM_ERROR_INVALID_VALUE; the first time a handle is
 * seen it is asked about (cuStreamQuery), and one the driver does not know
 * is ::GPUMEM_ERROR_INVALID_VALUE too.  (A handle of a destroyed stream is
 * undefined behaviour in the CUDA driver, as it is for numba and CuPy; the
 * simulator answers it with an error.  A handle that was destroyed and whose
 * address the driver gave to a new stream is taken for the new stream.)
 * The pool's rule for its own streams holds (gpumem/pool.h, "Streams"): a
 * block freed on stream S is reused at once by an allocation on S, whose
 * later work is ordered after S's; an allocation on another stream takes it
 * only once an event that the free recorded on S has completed.
 *
 * @par The legacy default stream
 * A free on the legacy default stream (0 or 1) records its event there
 * too, and since the legacy stream waits for the work queued before on
 * every blocking stream, and that later work waits for it, a block freed
 * on it is safe to reuse for work on any blocking stream: the call for a
 * runtime that does not know which stream used the memory (numba's
 * plugin).  A runtime whose memory was used on the legacy stream alone
 * (CuPy on its null stream, as CuPy's own pool assumes) may free with
 * ::GPUMEM_FOREIGN_STREAM_LEGACY_ONLY instead: that free queues nothing
 * (no cuEventRecord), an allocation on the legacy stream reuses the block
 * at once, one on another stream first records the block's event on the
 * legacy stream, covering its work, and takes the block only once that has
 * completed, and giving the block back to the driver waits for the legacy
 * stream.  Allocating on it is allocating on the legacy stream.
 *
 * @par Pointers
 * Every allocation is found again by its pointer (a hash table: O(1)
 * expected).  Freeing a pointer that this tier did not allocate, or freed
 * already, is ::GPUMEM_ERROR_INVALID_VALUE and changes nothing (the two
 * cannot be told apart once the pointer is gone).  A size of 0 gives a
 * pointer of NULL that needs no free (freeing NULL is a no-op).
 *
 * @par Runtimes
 * Each allocation is tagged with the name of the runtime that asked for it
 * (NULL: "c"): 1 to 15 characters of a-z, 0-9, '_', '-' and '.', at most
 * 16 names in a process.  gpumem_foreign_stats() gives each runtime's live
 * memory; the memory report counts foreign memory as the pools' memory it
 * is.  While a trace records (gpumem/trace.h), each foreign allocation and
 * free is wrapped in a region named after its runtime
 * (gpumem_trace_push()), so that the trace shows who allocated what.
 *
 * @par Threads
 * Every function may be called from any thread.
 */
#ifndef GPUMEM_EXPERIMENTAL_FOREIGN_H
#define GPUMEM_EXPERIMENTAL_FOREIGN_H

#if !defined(GPUMEM_EXPERIMENTAL) && !defined(GPUMEM_DOXYGEN)
#error "gpumem/experimental/foreign.h is experimental (it may change in any release): define GPUMEM_EXPERIMENTAL before including it"
#endif

#include <stddef.h>
#include <stdint.h>
#include <gpumem/export.h>
#include <gpumem/status.h>
#include <gpumem/context.h>
#include <gpumem/stream.h>
#include <gpumem/array.h>

GPUMEM_BEGIN_DECLS

/** The bytes of a driver IPC handle (CUipcMemHandle), as gpumem_foreign_ipc_handle() writes them. */
#define GPUMEM_FOREIGN_IPC_HANDLE_SIZE 64

/** Flag of gpumem_foreign_host_alloc(): page-locked for every context (CU_MEMHOSTALLOC_PORTABLE). */
#define GPUMEM_FOREIGN_HOST_PORTABLE 0x1
/** Flag of gpumem_foreign_host_alloc(): mapped into the device's address space (CU_MEMHOSTALLOC_DEVICEMAP). */
#define GPUMEM_FOREIGN_HOST_MAPPED 0x2
/** Flag of gpumem_foreign_host_alloc(): write-combined (CU_MEMHOSTALLOC_WRITECOMBINED). */
#define GPUMEM_FOREIGN_HOST_WRITECOMBINED 0x4

/**
 * A stream value: the legacy default stream, for memory whose work was
 * queued on the legacy stream only; its free records no event (see "The
 * legacy default stream").
 */
#define GPUMEM_FOREIGN_STREAM_LEGACY_ONLY ((void *)(uintptr_t)3)

/**
 * A stream value for gpumem_foreign_free() only: the stream that the
 * allocation was made for, as gpumem_foreign_alloc() was given it
 * (::GPUMEM_FOREIGN_STREAM_LEGACY_ONLY included), for a runtime that frees
 * without a stream, as CuPy's allocator hooks do (the library keeps it
 * with the pointer, and the stream object alive until the free).
 */
#define GPUMEM_FOREIGN_STREAM_ALLOCATED ((void *)(uintptr_t)4)

/**
 * One runtime's memory, filled by gpumem_foreign_stats().  Set @c size to
 * sizeof(struct gpumem_foreign_stats) first: later versions only append
 * fields.  Bytes are the sizes asked for.  The counts are exact when no
 * other thread allocates or frees during the call.
 */
struct gpumem_foreign_stats {
    size_t size;                /**< set by the caller: sizeof(struct gpumem_foreign_stats) */
    uint64_t device_bytes;      /**< live device memory (gpumem_foreign_alloc()) */
    uint64_t device_count;      /**< its allocations */
    uint64_t host_bytes;        /**< live page-locked memory (gpumem_foreign_host_alloc()) */
    uint64_t host_count;        /**< its allocations */
    uint64_t managed_bytes;     /**< live managed memory (gpumem_foreign_managed_alloc()) */
    uint64_t managed_count;     /**< its allocations */
    uint64_t peak_device_bytes; /**< the highest @c device_bytes so far */
    uint64_t allocations;       /**< allocations made, of every kind */
    uint64_t frees;             /**< allocations freed */
};

/**
 * Device memory for a foreign runtime: @p size bytes on @p device, for work
 * on @p stream, from the device's pool (see "Which pool").  Free it with
 * gpumem_foreign_free().
 * @param runtime the runtime's name (see "Runtimes"), or NULL for "c".
 * @param device the device ordinal.
 * @param size the bytes; 0 gives NULL.
 * @param stream the CUstream that will use the memory (see "Streams").
 * @param[out] ptr the device pointer; unchanged on failure.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT (@p ptr), ::GPUMEM_ERROR_INVALID_VALUE (a bad
 *        @p runtime, a 17th runtime, a bad @p stream), ::GPUMEM_ERROR_INVALID_DEVICE,
 *        ::GPUMEM_ERROR_OVERFLOW, ::GPUMEM_ERROR_OUT_OF_MEMORY (after the pool's ladder),
 *        ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY, or a driver failure.
 */
GPUMEM_API gpumem_status gpumem_foreign_alloc(const char *runtime, int device, size_t size, void *stream,
                                              void **ptr);

/**
 * Frees memory of gpumem_foreign_alloc() or gpumem_foreign_managed_alloc().
 * A device block goes back to its pool, ordered after the work queued on
 * @p stream so far (see "Streams"); managed memory goes back to the driver
 * through the context's deferred frees (gpumem/cleanup.h).  NULL is a no-op.
 * @param ptr the pointer, or NULL.
 * @param stream the CUstream on which work using the memory may still be queued (NULL: the legacy default
 *        stream), or ::GPUMEM_FOREIGN_STREAM_ALLOCATED: the one the allocation was made for.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_INVALID_VALUE (a pointer that is no live allocation of this tier, a
 *        page-locked one, or a bad @p stream: then nothing is freed), or a driver failure recording the free's
 *        event (the block is then given back to the driver once the stream's work is done: it is freed
 *        either way).
 */
GPUMEM_API gpumem_status gpumem_foreign_free(void *ptr, void *stream);

/**
 * Page-locked host memory for a foreign runtime (numba's memhostalloc,
 * CuPy's pinned allocator): @p size bytes from the page-locked pool of
 * @p device's context for @p flags.  Free it with gpumem_foreign_host_free().
 * With ::GPUMEM_FOREIGN_HOST_MAPPED the memory is also mapped into the device;
 * gpumem_foreign_device_pointer() gives its device address.
 * @param runtime the runtime's name, or NULL for "c".
 * @param device the device ordinal.
 * @param size the bytes; 0 gives NULL.
 * @param flags 0, or ::GPUMEM_FOREIGN_HOST_PORTABLE, ::GPUMEM_FOREIGN_HOST_MAPPED and
 *        ::GPUMEM_FOREIGN_HOST_WRITECOMBINED or'ed.
 * @param[out] ptr the host pointer; unchanged on failure.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE (unknown @p flags, a bad
 *        @p runtime), ::GPUMEM_ERROR_INVALID_DEVICE, ::GPUMEM_ERROR_OVERFLOW,
 *        ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY, or a driver failure.
 */
GPUMEM_API gpumem_status gpumem_foreign_host_alloc(const char *runtime, int device, size_t size, unsigned flags,
                                                   void **ptr);

/**
 * Frees memory of gpumem_foreign_host_alloc(): its block goes back to its
 * pool, for reuse once the CPU may write it (the caller has finished the
 * work that used it).  NULL is a no-op.
 * @param ptr the host pointer, or NULL.
 * @return ::GPUMEM_OK, or ::GPUMEM_ERROR_INVALID_VALUE (no live page-locked allocation of this tier: nothing
 *        is freed).
 */
GPUMEM_API gpumem_status gpumem_foreign_host_free(void *ptr);

/**
 * Managed memory for a foreign runtime (numba's memallocmanaged):
 * cuMemAllocManaged of @p size bytes in @p device's context, attached
 * globally (@p global nonzero) or to the host.  Not pooled.  Free it with
 * gpumem_foreign_free().
 * @param runtime the runtime's name, or NULL for "c".
 * @param device the device ordinal.
 * @param size the bytes; 0 gives NULL.
 * @param global nonzero: CU_MEM_ATTACH_GLOBAL; 0: CU_MEM_ATTACH_HOST.
 * @param[out] ptr the pointer (valid on the host and the device); unchanged on failure.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE (a bad @p runtime),
 *        ::GPUMEM_ERROR_INVALID_DEVICE, ::GPUMEM_ERROR_OUT_OF_MEMORY, or a driver failure.
 */
GPUMEM_API gpumem_status gpumem_foreign_managed_alloc(const char *runtime, int device, size_t size, int global,
                                                      void **ptr);

/**
 * What a live allocation of this tier is, found by its start.
 * @param ptr the start of a live allocation.
 * @param[out] device its device ordinal (may be NULL).
 * @param[out] base its start (may be NULL).
 * @param[out] size its size asked for (may be NULL).
 * @param[out] kind ::GPUMEM_MEMORY_DEVICE, ::GPUMEM_MEMORY_PINNED, ::GPUMEM_MEMORY_MAPPED or
 *        ::GPUMEM_MEMORY_MANAGED (may be NULL).
 * @return ::GPUMEM_OK, or ::GPUMEM_ERROR_INVALID_VALUE (no live allocation of this tier starts at @p ptr;
 *        only a start is looked up, in O(1)).
 */
GPUMEM_API gpumem_status gpumem_foreign_lookup(const void *ptr, int *device, void **base, size_t *size,
                                               gpumem_memory_kind *kind);

/**
 * The device address of mapped page-locked memory of
 * gpumem_foreign_host_alloc() (::GPUMEM_FOREIGN_HOST_MAPPED).
 * @param ptr the host pointer.
 * @param[out] device_ptr its device address.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE (not a live mapped
 *        allocation of this tier), or a driver failure.
 */
GPUMEM_API gpumem_status gpumem_foreign_device_pointer(const void *ptr, uint64_t *device_ptr);

/**
 * The driver's IPC handle (cuIpcGetMemHandle) of the driver allocation that
 * holds device address @p ptr, and @p ptr's offset in it
 * (cuMemGetAddressRange): what numba's IpcHandle carries.  Another process
 * opens it with cuIpcOpenMemHandle and adds the offset.  @p ptr may be the
 * start of device memory of gpumem_foreign_alloc() (found in the pointer
 * table: no driver query), any address inside one (a view), or device
 * memory that another allocator made (numba's foreign arrays), as numba's
 * own memory manager exports any device pointer: the driver then says
 * which device holds it (cuPointerGetAttributes), and the handle is made in
 * that device's foreign context.  So an address inside a block that this
 * tier's pool holds for reuse (freed, not given back) is still exported:
 * it is device memory the driver knows.
 * @param ptr a device address.
 * @param[out] handle ::GPUMEM_FOREIGN_IPC_HANDLE_SIZE bytes.
 * @param[out] offset @p ptr minus the driver allocation's start.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT (@p handle, @p offset), ::GPUMEM_ERROR_INVALID_VALUE
 *        (@p ptr NULL, managed memory, or no device memory the driver knows: host memory, freed memory,
 *        nothing), ::GPUMEM_ERROR_INVALID_DEVICE (a device beyond the tier's), ::GPUMEM_ERROR_NOT_SUPPORTED
 *        or another driver failure (memory the driver cannot export).  Nothing is written on failure.
 */
GPUMEM_API gpumem_status gpumem_foreign_ipc_handle(const void *ptr, void *handle, size_t *offset);

/**
 * The context that foreign allocations of @p ctx's device use from now on
 * (see "Which pool").  It is retained until exit, as is the one it
 * replaces: allocations made before keep their context and pool.
 * @param ctx the context.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_STATE (a released context),
 *        ::GPUMEM_ERROR_INVALID_DEVICE (an ordinal beyond 63).
 */
GPUMEM_API gpumem_status gpumem_foreign_set_context(gpumem_context *ctx);

/**
 * The context that foreign allocations of @p device use (borrowed), made
 * as on a first allocation when there is none yet: gpumem_memory_report()
 * of it shows the foreign memory.
 * @param device the device ordinal.
 * @param[out] ctx the context (borrowed: valid until exit).
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_DEVICE, or a failure of
 *        gpumem_context_create().
 */
GPUMEM_API gpumem_status gpumem_foreign_context(int device, gpumem_context **ctx);

/**
 * Gives back to the driver the blocks that the pools of this tier hold for
 * reuse, device and page-locked (numba's reset): gpumem_pool_free_held() and
 * gpumem_host_pool_free_held() of each.  Live allocations stay.  A context's
 * own pool (gpumem_context_set_pool()) is its owner's and is left alone.
 * @param device the device ordinal, or -1 for every device.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_INVALID_DEVICE, or the first driver failure.
 */
GPUMEM_API gpumem_status gpumem_foreign_release_held(int device);

/**
 * One runtime's memory (see "Runtimes"); all zero for a name never used.
 * @param runtime the runtime's name, or NULL for "c".
 * @param[in,out] stats the counters; its @c size set by the caller.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE (a bad name, @c size too
 *        small).
 */
GPUMEM_API gpumem_status gpumem_foreign_stats(const char *runtime, struct gpumem_foreign_stats *stats);

/**
 * The runtimes that allocated so far, in order of first use: name @p index
 * (from 0), or ::GPUMEM_ERROR_INVALID_VALUE past the last.
 * @param index the index.
 * @param[out] name the name (static: valid until exit).
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE (no such runtime).
 */
GPUMEM_API gpumem_status gpumem_foreign_runtime(int index, const char **name);

/**
 * The CUstream of a library stream, as the other runtimes name it
 * (NULL for a context's default stream, the legacy default stream): to
 * hand a gpumem_stream to numba, CuPy or PyTorch, or to these calls.
 * @param stream the stream.
 * @param[out] handle its CUstream.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_STATE (a destroyed stream).
 */
GPUMEM_API gpumem_status gpumem_foreign_stream_handle(gpumem_stream *stream, void **handle);

/**
 * PyTorch's CUDAPluggableAllocator alloc function: it allocates as
 * gpumem_foreign_alloc("torch", @p device, @p size, @p stream, &ptr) does.
 * PyTorch loads it by name:
 * <tt>CUDAPluggableAllocator("libgpumem.so.1", "gpumem_torch_alloc", "gpumem_torch_free")</tt>.
 * PyTorch checks no status: a failure returns NULL, which PyTorch reports
 * as out of memory, and leaves its message in gpumem_last_error().
 * @param size the bytes.
 * @param device the device ordinal.
 * @param stream the CUstream (cudaStream_t).
 * @return the device pointer, or NULL (a failure, or @p size 0).
 */
GPUMEM_API void *gpumem_torch_alloc(size_t size, int device, void *stream);

/**
 * PyTorch's CUDAPluggableAllocator free function:
 * gpumem_foreign_free(@p ptr, @p stream).  PyTorch passes the stream it
 * allocated on, and the size and device, which are not needed.  PyTorch
 * uses a block on the stream it was allocated on alone (other streams
 * through record_stream, which a pluggable allocator does not see), so a
 * block freed on the legacy default stream (NULL or 1) is freed as
 * ::GPUMEM_FOREIGN_STREAM_LEGACY_ONLY: no event is recorded, the legacy
 * stream reuses it at once and another stream after the legacy stream's
 * work (as PyTorch's own caching allocator does).  A failure
 * (a pointer this tier did not allocate) leaves its message in
 * gpumem_last_error() and frees nothing.
 * @param ptr the device pointer.
 * @param size the bytes (unused).
 * @param device the device ordinal (unused).
 * @param stream the CUstream on which work using the memory may still be queued.
 */
GPUMEM_API void gpumem_torch_free(void *ptr, size_t size, int device, void *stream);

/**
 * What CuPy's CFunctionAllocator hands gpumem_cupy_malloc() and
 * gpumem_cupy_free() as their @c param: how to find the stream an
 * allocation is for and how to report a failure to Python.  CuPy calls both
 * with the GIL held, so the functions here may use the Python C API.  The
 * Python package fills it (gpumem.cupy.install(), doc/python.md); it must
 * stay alive while CuPy may call the two functions.
 */
struct gpumem_cupy_param {
    /** sizeof(struct gpumem_cupy_param): later versions only append fields. */
    size_t size;
    /** The CUstream the allocation is for (CuPy's current stream: its C API
     *  get_current_stream_ptr), 0 for CuPy's null stream, the legacy default
     *  stream.  -1 is a failure when error_occurred() says so. */
    intptr_t (*current_stream)(void);
    /** Whether a Python exception is set (PyErr_Occurred); may be NULL. */
    void *(*error_occurred)(void);
    /** Sets a Python exception of type @p type with message @p message
     *  (PyErr_SetString). */
    void (*set_error)(void *type, const char *message);
    /** The exception type of ::GPUMEM_ERROR_OUT_OF_MEMORY and
     *  ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY. */
    void *out_of_memory;
    /** The exception type of any other failure. */
    void *error;
};

/**
 * CuPy's CFunctionAllocator malloc function: @p size bytes of device
 * memory, as gpumem_foreign_alloc("cupy", @p device, @p size, stream, &ptr)
 * gives them, stream being <tt>param->current_stream()</tt>, and
 * ::GPUMEM_FOREIGN_STREAM_LEGACY_ONLY for CuPy's null stream (CuPy's own
 * pool, too, takes memory used on its null stream to be used there alone).
 * CuPy makes it with
 * <tt>CFunctionAllocator(param, gpumem_cupy_malloc, gpumem_cupy_free, owner)</tt>
 * and checks for a Python exception after the call.
 * @param param a struct gpumem_cupy_param.
 * @param size the bytes; 0 gives NULL.
 * @param device the device ordinal.
 * @return the device pointer; NULL on failure, with a Python exception set
 *         by @c param->set_error (@c out_of_memory for lack of memory, else
 *         @c error, its message gpumem_last_error()), or the one that
 *         @c current_stream set.  A NULL @p param, or one whose @c size is
 *         too small, gives NULL and ::GPUMEM_ERROR_NULL_ARGUMENT or
 *         ::GPUMEM_ERROR_INVALID_VALUE in gpumem_last_error() only.
 */
GPUMEM_API void *gpumem_cupy_malloc(void *param, size_t size, int device);

/**
 * CuPy's CFunctionAllocator free function: gpumem_foreign_free(@p ptr,
 * ::GPUMEM_FOREIGN_STREAM_ALLOCATED), ordered after the work queued on the
 * stream it was allocated for.  CuPy checks nothing: a failure (a pointer
 * this tier did not allocate) leaves its message in gpumem_last_error() and
 * frees nothing.
 * @param param the struct gpumem_cupy_param (unused).
 * @param ptr the device pointer, or NULL (a no-op).
 * @param device the device ordinal (unused).
 */
GPUMEM_API void gpumem_cupy_free(void *param, void *ptr, int device);

GPUMEM_END_DECLS

#endif /* GPUMEM_EXPERIMENTAL_FOREIGN_H */
