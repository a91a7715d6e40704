/**
 * @file gpumem/interop.h
 * @brief Interoperation: the CUDA Array Interface (numba's
 *        `__cuda_array_interface__` and `as_cuda_array`) and DLPack.
 *
 * Both directions share memory, never copy it: an exported description or
 * tensor points at the array's own bytes, and an imported one becomes an
 * array over the other library's bytes that keeps the other library's owner
 * alive until the array's last reference goes.
 *
 * @par CUDA Array Interface, version 3
 * A ::gpumem_cuda_array_interface holds the entries of the Python dict
 * `__cuda_array_interface__`, one field each, so that a binding can build the
 * dict field by field (and fill the struct from a dict):
 * | dict entry | fields |
 * |---|---|
 * | `shape` | @c ndim, @c shape |
 * | `typestr` | @c typestr |
 * | `data` | (@c data, @c readonly) |
 * | `version` | @c version |
 * | `strides` | @c strides when @c has_strides, else absent (or `None`) |
 * | `descr` | @c descr when not NULL, else absent |
 * | `mask` | @c has_mask: 0 for absent or `None` |
 * | `stream` | @c stream when @c has_stream, else absent (or `None`) |
 *
 * gpumem_array_interface() follows the specification where numba does not:
 *  - `strides` is absent exactly when the array is C-contiguous (NumPy's
 *    rule) and no stride is 0: a broadcast array (stride 0) always carries
 *    its strides, since a consumer that read it as contiguous would read
 *    other elements;
 *  - `stream` is never 0: 1 is the legacy default stream, 2 the per-thread
 *    default stream, any other value a stream handle (CUstream), and absent
 *    means that no synchronization is needed;
 *  - `data` is the address of element [0, ..., 0] (also with negative
 *    strides), and 0 for an array of size 0.
 *
 * gpumem_as_cuda_array() accepts versions 2 and 3 (version 2 has no stream;
 * versions 0 and 1 left strides of C-contiguous and empty arrays undefined).
 * As the specification asks of a consumer, it synchronizes on the
 * description's stream before it returns, unless the caller passes
 * ::GPUMEM_CAI_NO_SYNCHRONIZE (numba's `sync=False`): then the caller orders
 * its own work after that stream.
 *
 * @par DLPack
 * gpumem_array_to_dlpack() produces either a legacy `DLManagedTensor` (the
 * struct of DLPack 0.x, which every DLPack consumer reads) or, with
 * ::GPUMEM_DLPACK_VERSIONED, a `DLManagedTensorVersioned` of DLPack 1.0
 * (its @c version field is {1, 0}).  gpumem_array_from_dlpack() accepts a
 * legacy `DLManagedTensor` of any 0.x version and a
 * `DLManagedTensorVersioned` of major version 1 with any minor version; a
 * tensor of another major version is ::GPUMEM_ERROR_NOT_SUPPORTED.  The
 * library needs no DLPack header: this header only names the two struct
 * tags, which are those of `<dlpack/dlpack.h>`, so a program that includes
 * that header passes its own pointers.
 *
 * The mapping of dtypes (DLPack's data type code, bits, lanes):
 * | dtype | DLPack |
 * |---|---|
 * | bool | kDLBool (6), 8, 1 |
 * | int8 ... int64 | kDLInt (0), 8 ... 64, 1 |
 * | uint8 ... uint64 | kDLUInt (1), 8 ... 64, 1 |
 * | float16, float32, float64 | kDLFloat (2), 16, 32, 64, 1 |
 * | complex64, complex128 | kDLComplex (5), 64, 128, 1 |
 * Bool is kDLBool in both structs, as NumPy, CuPy and PyTorch export it
 * (kDLBool exists since DLPack 0.8; an unsigned 8-bit code would change the
 * type).  Records, raw bytes and non-native byte order have no DLPack type
 * (::GPUMEM_ERROR_INVALID_DTYPE); imports of any other code, of other bits
 * (bfloat16, float8) or of more than one lane are refused the same way.
 *
 * The device of an exported tensor is the memory's: kDLCUDA (2) with the
 * context's device ordinal for device and foreign arrays, kDLCUDAManaged
 * (13) for managed arrays, kDLCUDAHost (3) for pinned and mapped arrays,
 * kDLCPU (1) for host arrays (the last three with device_id 0, as DLPack
 * asks).  Strides are in elements; a byte stride that is not a multiple of
 * the item size is ::GPUMEM_ERROR_INVALID_VALUE.  The data pointer is the
 * address of element [0, ..., 0] with byte_offset 0, and NULL for an empty
 * array.
 *
 * @par Ownership
 * An exported tensor holds a reference to its array: the consumer calls the
 * tensor's deleter exactly once, from any thread, which drops it and frees
 * the tensor.  An import takes ownership only when it succeeds: from then on
 * the array calls the tensor's deleter (or gpumem_as_cuda_array()'s
 * @p release) exactly once, when the array's last reference goes, views
 * included.  When an import fails, nothing is called and the caller still
 * owns the tensor or the owner: with DLPack it calls the deleter itself (a
 * Python capsule that was not consumed does so), also for a tensor of an
 * unknown major version, whose deleter DLPack keeps callable.
 *
 * @par Read-only memory
 * An array has NumPy's WRITEABLE flag, inverted
 * (gpumem_array_is_readonly(), gpumem_array_set_readonly() in
 * gpumem/array.h): the library refuses to write into a read-only array.
 * Exports carry the flag: gpumem_array_interface() sets `readonly` to it,
 * and gpumem_array_to_dlpack() sets DLPack's read-only flag for a read-only
 * array or when the caller passes ::GPUMEM_DLPACK_READ_ONLY (both need
 * ::GPUMEM_DLPACK_VERSIONED: a legacy DLManagedTensor has no such flag, so
 * a read-only array cannot be exported as one).  Importing read-only memory
 * (CAI's `readonly`, DLPack's DLPACK_FLAG_BITMASK_READ_ONLY) is refused
 * unless the caller passes ::GPUMEM_CAI_READ_ONLY or
 * ::GPUMEM_DLPACK_READ_ONLY; the array made is then read-only, and neither
 * it nor its views can be made writable.
 */
#ifndef GPUMEM_INTEROP_H
#define GPUMEM_INTEROP_H

#include <stddef.h>
#include <stdint.h>
#include <gpumem/export.h>
#include <gpumem/status.h>
#include <gpumem/context.h>
#include <gpumem/stream.h>
#include <gpumem/array.h>

GPUMEM_BEGIN_DECLS

/* ---- CUDA Array Interface ------------------------------------------------------------ */

/** The version of the CUDA Array Interface that gpumem_array_interface() produces. */
#define GPUMEM_CAI_VERSION 3

/** The `stream` value of the legacy default stream. */
#define GPUMEM_CAI_STREAM_LEGACY 1
/** The `stream` value of the per-thread default stream. */
#define GPUMEM_CAI_STREAM_PER_THREAD 2

/** Flag of gpumem_as_cuda_array(): do not synchronize on the description's stream (numba's sync=False). */
#define GPUMEM_CAI_NO_SYNCHRONIZE 0x1
/** Flag of gpumem_as_cuda_array(): accept read-only data; the caller will not write through the array. */
#define GPUMEM_CAI_READ_ONLY 0x2

/**
 * The entries of a `__cuda_array_interface__` dict (see the file's notes).
 * Set @c size to sizeof(gpumem_cuda_array_interface) before a call (in C:
 * <tt>gpumem_cuda_array_interface d = {.size = sizeof d};</tt>): later
 * versions of the library append fields and use only those a caller's size
 * covers.
 */
typedef struct gpumem_cuda_array_interface {
    size_t size;                     /**< set by the caller: sizeof(gpumem_cuda_array_interface) */
    int version;                     /**< `version`: 3 (gpumem_as_cuda_array() also reads 2) */
    int ndim;                        /**< the number of `shape` entries, 0 to ::GPUMEM_MAX_NDIM */
    int64_t shape[GPUMEM_MAX_NDIM];  /**< `shape`: ndim extents */
    int has_strides;                 /**< 1 when `strides` is given, 0 when absent (C-contiguous) */
    int64_t strides[GPUMEM_MAX_NDIM]; /**< `strides` in bytes: ndim values (when has_strides) */
    char typestr[24];                /**< `typestr`, NumPy's: "<f4", "|b1", "|V24" ... (NUL-terminated) */
    const char *descr;               /**< `descr` of a record dtype (NumPy's notation), or NULL: absent */
    char *descr_buffer;              /**< gpumem_array_interface(): where a record's descr is written (may be NULL for other dtypes) */
    size_t descr_buffer_size;        /**< the bytes of descr_buffer */
    uint64_t data;                   /**< `data[0]`: the device address of element [0, ...]; 0 for size 0 */
    int readonly;                    /**< `data[1]`: 1 when the data must not be written */
    int has_mask;                    /**< 1 when `mask` is given (not None): not supported */
    int has_stream;                  /**< 1 when `stream` is given, 0 when absent: no synchronization needed */
    intptr_t stream;                 /**< `stream` (when has_stream): 1 legacy default, 2 per-thread default, else a CUstream; never 0 */
} gpumem_cuda_array_interface;

/**
 * Fills @p desc with the `__cuda_array_interface__` (version 3) of a device,
 * foreign, managed or mapped @p array; host and pinned arrays are not device
 * memory (::GPUMEM_ERROR_INVALID_VALUE).  Set @p desc->size first.
 *
 * @p stream is the stream on which the array's data is ready (the producer's
 * last work on it): NULL when no synchronization is needed (every call given
 * a NULL stream is synchronous), and then `stream` is absent; the context's
 * default stream (gpumem_stream_default()) gives 1, the legacy default
 * stream; any other stream gives its driver handle.  A stream of another
 * context is ::GPUMEM_ERROR_CONTEXT_MISMATCH.
 *
 * For a record dtype, `descr` is written into @p desc->descr_buffer
 * (@p desc->descr_buffer_size bytes) and @p desc->descr points at it; a
 * missing or small buffer is ::GPUMEM_ERROR_INVALID_VALUE, whose message
 * says how many bytes it needs, and a record whose fields are not in offset
 * order has no descr (::GPUMEM_ERROR_INVALID_DTYPE).  Other dtypes get
 * @c descr NULL.  `readonly` is the array's read-only flag
 * (gpumem_array_is_readonly()), `mask` absent, `version` 3.  On failure
 * @p desc is unchanged (except for descr_buffer).
 * @param array a device, foreign, managed or mapped array.
 * @param stream the stream the data is ready on, or NULL.
 * @param[in,out] desc the description; its @c size set by the caller.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE,
 *        ::GPUMEM_ERROR_CONTEXT_MISMATCH, ::GPUMEM_ERROR_INVALID_DTYPE (see above).
 */
GPUMEM_API gpumem_status gpumem_array_interface(const gpumem_array *array, gpumem_stream *stream,
                                                gpumem_cuda_array_interface *desc);

/**
 * numba's as_cuda_array: a ::GPUMEM_MEMORY_FOREIGN array over the device
 * memory that @p desc describes, in @p ctx (NULL: the autoinit context),
 * without a copy.  Set @p desc->size first.
 *
 * The array's dtype is @c typestr's; for a typestr of raw bytes ("|Vn") a
 * @c descr gives the record (of n bytes); for other typestrs a @c descr must
 * describe the same dtype.  @c strides absent means C order.
 *
 * Unless @p flags has ::GPUMEM_CAI_NO_SYNCHRONIZE, a given @c stream is
 * synchronized before the call returns: 1 is the legacy default stream,
 * 2 the per-thread default stream (waited for by synchronizing the whole
 * context, which includes it), any other value a stream handle of @p ctx's
 * device.  A driver failure there fails the call.
 *
 * A stream value comes from another library and is checked as far as it
 * can be without undefined behaviour: a CUstream is the address of a
 * driver object, so a value from 3 to 4095 (the null page) or a negative
 * one (not a user-space address) is ::GPUMEM_ERROR_INVALID_VALUE before
 * any driver call; then the driver is asked about it (cuStreamQuery), and
 * a handle it does not know, or one of another context, is
 * ::GPUMEM_ERROR_INVALID_VALUE too.  What cannot be checked: a handle of a
 * stream that was destroyed (its memory possibly reused) or any other
 * made-up address is undefined behaviour inside the CUDA driver, as it is
 * for numba and CuPy; the simulator answers such handles with
 * CUDA_ERROR_INVALID_HANDLE.  With ::GPUMEM_CAI_NO_SYNCHRONIZE the stream
 * is not looked at.
 *
 * @p release (may be NULL) is called with @p owner exactly once, when the
 * array's last reference goes (views keep it alive): a binding passes a
 * function that drops its reference to the producer object.  When the call
 * fails, @p release is not called: the caller still owns @p owner.
 *
 * Errors (the message names the field and the value):
 *  - ::GPUMEM_ERROR_NULL_ARGUMENT: @p desc or @p array NULL; @c data 0 for a
 *    non-empty array;
 *  - ::GPUMEM_ERROR_INVALID_VALUE: @c size too small, @c version other than 2
 *    and 3, @c stream 0 (the specification forbids it), @c stream given with
 *    version 2, @c readonly without ::GPUMEM_CAI_READ_ONLY, unknown @p flags,
 *    @c ndim below 0, a @c stream that is no stream (see above);
 *  - ::GPUMEM_ERROR_INVALID_DTYPE: a malformed or unterminated @c typestr or
 *    @c descr, a descr that disagrees with the typestr;
 *  - ::GPUMEM_ERROR_NEGATIVE_DIMENSION, ::GPUMEM_ERROR_TOO_MANY_DIMENSIONS,
 *    ::GPUMEM_ERROR_OVERFLOW: a negative extent, more than
 *    ::GPUMEM_MAX_NDIM dimensions, a layout that leaves the address space;
 *  - ::GPUMEM_ERROR_NOT_SUPPORTED: a @c mask (as in numba);
 *  - the driver's error when synchronizing the stream fails.
 * @param ctx the context, or NULL for the autoinit context.
 * @param[in] desc the producer's description; its @c size set.
 * @param flags 0, ::GPUMEM_CAI_NO_SYNCHRONIZE, ::GPUMEM_CAI_READ_ONLY.
 * @param release called with @p owner when the array goes, or NULL.
 * @param owner passed to @p release.
 * @param[out] array the new foreign array.
 * @return ::GPUMEM_OK, one of the errors above, ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY, or an autoinit failure.
 */
GPUMEM_API gpumem_status gpumem_as_cuda_array(gpumem_context *ctx, const gpumem_cuda_array_interface *desc,
                                              unsigned flags, void (*release)(void *owner), void *owner,
                                              gpumem_array **array);

/* ---- DLPack ---------------------------------------------------------------------------- */

/** DLPack's legacy managed tensor (the tag of `<dlpack/dlpack.h>`). */
struct DLManagedTensor;
/** DLPack 1.x's versioned managed tensor (the tag of `<dlpack/dlpack.h>`). */
struct DLManagedTensorVersioned;

/** The DLPack version of the versioned tensors gpumem_array_to_dlpack() produces: major ... */
#define GPUMEM_DLPACK_MAJOR_VERSION 1
/** ... and minor. */
#define GPUMEM_DLPACK_MINOR_VERSION 0

/** Flag: the tensor is a `DLManagedTensorVersioned` (DLPack 1.x); without it a legacy `DLManagedTensor`. */
#define GPUMEM_DLPACK_VERSIONED 0x1
/**
 * Flag: gpumem_array_to_dlpack() sets DLPACK_FLAG_BITMASK_READ_ONLY (versioned
 * tensors only: a legacy tensor cannot say it); gpumem_array_from_dlpack()
 * accepts a read-only tensor, and the caller will not write through the array.
 */
#define GPUMEM_DLPACK_READ_ONLY 0x2

/**
 * Exports @p array as a DLPack tensor sharing its memory (see the file's
 * notes for dtypes, devices and strides): a `struct DLManagedTensor *`, or
 * with ::GPUMEM_DLPACK_VERSIONED a `struct DLManagedTensorVersioned *`, in
 * @p *tensor.  Receive it in a `void *` and convert that:
 * <tt>void *p; gpumem_array_to_dlpack(a, GPUMEM_DLPACK_VERSIONED, &p);
 * DLManagedTensorVersioned *t = p;</tt>.  The tensor (one allocation with
 * its shape and strides) holds a reference to @p array until its deleter is
 * called, exactly once, by the consumer.
 *
 * Errors: ::GPUMEM_ERROR_NULL_ARGUMENT; ::GPUMEM_ERROR_INVALID_VALUE for
 * unknown @p flags, ::GPUMEM_DLPACK_READ_ONLY or a read-only @p array
 * without ::GPUMEM_DLPACK_VERSIONED, or byte strides that are not multiples of the
 * item size; ::GPUMEM_ERROR_INVALID_DTYPE for records, raw bytes and
 * non-native byte order (the message names the dtype);
 * ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY.
 * @param array the array to export.
 * @param flags 0, ::GPUMEM_DLPACK_VERSIONED, ::GPUMEM_DLPACK_READ_ONLY.
 * @param[out] tensor the new tensor.
 * @return ::GPUMEM_OK, or one of the errors above.
 */
GPUMEM_API gpumem_status gpumem_array_to_dlpack(gpumem_array *array, unsigned flags, void **tensor);

/**
 * Imports a DLPack tensor without a copy: @p tensor is a
 * `struct DLManagedTensor *`, or with ::GPUMEM_DLPACK_VERSIONED in @p flags
 * a `struct DLManagedTensorVersioned *`.  On success the array owns the
 * tensor and calls its deleter (if not NULL) exactly once, when the array's
 * last reference goes; on failure the caller still owns it (see the file's
 * notes).
 *
 * The array's kind follows the device: kDLCUDA gives a
 * ::GPUMEM_MEMORY_FOREIGN array, kDLCUDAManaged a ::GPUMEM_MEMORY_MANAGED
 * one, kDLCUDAHost a ::GPUMEM_MEMORY_PINNED one (all in @p ctx), kDLCPU a
 * ::GPUMEM_MEMORY_HOST one (no context).  @p ctx NULL means a context on
 * the tensor's device for kDLCUDA (gpumem_context_create() of its
 * device_id) and the autoinit context for kDLCUDAManaged and kDLCUDAHost;
 * a kDLCUDA tensor of another device than @p ctx's is
 * ::GPUMEM_ERROR_CONTEXT_MISMATCH.  Element [0, ...] is at data +
 * byte_offset (any byte_offset); strides are in elements, NULL meaning C
 * order.  The CPU reads and writes kDLCUDAManaged and kDLCUDAHost memory,
 * so their claim is checked with the driver (cuPointerGetAttributes): every
 * byte the tensor touches must lie in one managed allocation, or in one
 * page-locked (pinned, mapped or registered) range.  The CPU reads kDLCPU
 * memory too, so that claim is checked with the same query, at most three
 * times: element 0 and the lowest and highest byte the tensor touches must
 * not be device memory (any host-side memory, pageable, page-locked or
 * managed, is accepted; bytes between them are not asked, so strides that
 * step over device memory between host bytes are not detected).  Where no
 * backend loads (no driver, a bad GPUMEM_BACKEND), kDLCPU is trusted.
 *
 * Errors (the message names the field and the value): ::GPUMEM_ERROR_NULL_ARGUMENT
 * (@p tensor, @p array, a NULL data pointer of a non-empty tensor);
 * ::GPUMEM_ERROR_NOT_SUPPORTED for a major version other than 1 and device
 * types other than the four above; ::GPUMEM_ERROR_INVALID_DEVICE for a
 * kDLCUDA device_id the backend does not have; ::GPUMEM_ERROR_INVALID_DTYPE
 * for dtypes outside the table of the file's notes;
 * ::GPUMEM_ERROR_INVALID_VALUE for unknown @p flags, a NULL shape, ndim
 * below 0, a read-only tensor without ::GPUMEM_DLPACK_READ_ONLY, a
 * kDLCUDAManaged or kDLCUDAHost tensor whose bytes are not such memory (device
 * memory, say), or a kDLCPU tensor found to be device memory;
 * ::GPUMEM_ERROR_NEGATIVE_DIMENSION, ::GPUMEM_ERROR_TOO_MANY_DIMENSIONS;
 * ::GPUMEM_ERROR_OVERFLOW for strides or a byte_offset that leave the
 * address space.
 * @param ctx the context, or NULL (see above).
 * @param tensor the tensor; owned by the array on success.
 * @param flags 0, ::GPUMEM_DLPACK_VERSIONED, ::GPUMEM_DLPACK_READ_ONLY.
 * @param[out] array the new array.
 * @return ::GPUMEM_OK, one of the errors above, ::GPUMEM_ERROR_CONTEXT_MISMATCH,
 *        ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY, an autoinit failure or a driver failure.
 */
GPUMEM_API gpumem_status gpumem_array_from_dlpack(gpumem_context *ctx, void *tensor, unsigned flags,
                                                  gpumem_array **array);

GPUMEM_END_DECLS

#endif /* GPUMEM_INTEROP_H */
