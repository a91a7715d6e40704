/**
 * @file gpumem/peer.h
 * @brief Several devices in one process: copies between devices, peer
 *        access and its switch.
 *
 * @par Several devices
 * Every array, stream and pool belongs to one device's context.  Pools, the
 * deferred-deallocation queue and the staging buffers of pageable copies are
 * per context, and a context's out-of-memory ladder frees only its own
 * pool's blocks.  A call that takes an array together with a stream, pool or
 * context of another device is either a cross-device operation or
 * ::GPUMEM_ERROR_CONTEXT_MISMATCH, never a silent use of the wrong device:
 *  - gpumem_array_copy() (and gpumem_copy_to_device()) between device
 *    arrays of two devices is a cross-device copy (below); its stream may be
 *    one of either device; any other stream is a mismatch;
 *  - a copy between a device array and host memory, gpumem_array_fill(),
 *    gpumem_array_get_item() and gpumem_array_set_item() take only a stream
 *    of the array's device;
 *  - making an array with a stream takes only a stream of the context it is
 *    made in, and gpumem_context_set_pool() only a pool of that context's
 *    device (gpumem/array.h, gpumem/pool.h).
 *
 * @par Copies between devices
 * gpumem_array_copy() between device arrays of two devices moves one dense
 * run of bytes between them, laid out like the destination when it is
 * dense, else like the source when it is, else contiguously in the
 * destination's axis order; any two views work (negative strides,
 * transposes).  Peer access is on when the devices can
 * (gpumem_peer_can_access()) and neither the environment variable
 * @c GPUMEM_PEER=0 nor gpumem_peer_set_enabled(0) switched it off; the
 * library enables it both ways the first time and remembers it.  With peer
 * access (path ::GPUMEM_COPY_PATH_PEER):
 *  - two arrays that share one dense layout: one cuMemcpyPeer;
 *  - a strided source into a destination with the run's layout: one pack
 *    kernel on the source's device gathers the source and writes the
 *    destination through the peer mapping, in one pass over the link;
 *  - a source with the run's layout into a strided destination: one
 *    unpack kernel on the destination's device reads the source through
 *    the peer mapping and scatters it, in one pass over the link (the
 *    strided side stays on the kernel's own device);
 *  - both strided: chunk by chunk through two buffers of scratch on the
 *    destination's device (each a quarter of the copy, 4 to 64 MiB, or
 *    `GPUMEM_COPY_SCRATCH_CHUNK` bytes when that is set), which the
 *    source's pack kernel fills through
 *    the peer mapping on two streams while the destination's device
 *    unpacks the other buffer.
 * Without peer access (::GPUMEM_COPY_PATH_PEER_STAGED) the run goes
 * through the staging engine's pinned slots (gpumem/staging.h: its chunk
 * size and depth), the download of one slot overlapping the upload of
 * another on each device's stream; the slots are those of a worker on the
 * source device's NUMA node where the machine says which it is (the node
 * between the two devices when they share one).  A strided source is
 * packed chunk by chunk into one scratch buffer on its device before its
 * chunk goes down, a strided destination unpacked from one on its device
 * after its chunk came up.  When a device cannot load the pack kernels, or
 * has no room for the scratch a way needs, the copy goes through
 * temporaries as large as the copy on each strided side's device.
 *
 * @par Ordering
 * Only the peer copy of two arrays that share one dense layout is queued on
 * the caller's stream (and with a NULL stream, complete on return).  Every
 * other cross-device copy first waits for the caller's stream, runs on both
 * devices' legacy default streams (a kernel writing the destination's
 * memory from the source's device starts once the destination device's
 * legacy stream is idle) and is complete when the call returns.  Work
 * queued on the other device's other streams is not waited for: order it
 * yourself before the copy, with gpumem_context_synchronize() or an event
 * (gpumem_event_record() behind that work, gpumem_stream_wait_event() on
 * the copy's stream; gpumem/event.h).
 *
 * @par Failures
 * A failing cross-device copy returns the driver's error, and a staged one
 * a bad staging setting's error (::GPUMEM_ERROR_INVALID_ENVIRONMENT).  A
 * copy in several chunks (or staged pieces) writes the destination chunk
 * by chunk, so one that fails part-way may have written a part of it;
 * every other copy writes the destination once, last; the destination's
 * gaps are never written.  The message says which: a failure before the
 * first write into the destination says nothing more, and the destination
 * is unchanged; one after it says "the write into the destination was
 * issued" (a part of it, or all of it, may be written); one that comes
 * once the destination's device was seen done with the last write (a wait
 * for the other device, an event recorded after the copy) says "the copy
 * completed", and the destination holds the whole copy.
 */
#ifndef GPUMEM_PEER_H
#define GPUMEM_PEER_H

#include <gpumem/export.h>
#include <gpumem/status.h>

GPUMEM_BEGIN_DECLS

/**
 * Whether @p device can address @p peer's memory (cuDeviceCanAccessPeer);
 * a device is no peer of itself.  Added in GPUMEM_1.1.
 * @param device a device ordinal
 * @param peer another device ordinal
 * @param can receives 1 when it can, else 0
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT when @p can is NULL;
 *         ::GPUMEM_ERROR_INVALID_DEVICE for an ordinal out of range; the
 *         backend's errors (::GPUMEM_ERROR_NO_DEVICE,
 *         ::GPUMEM_ERROR_DRIVER_NOT_FOUND, ::GPUMEM_ERROR_INVALID_ENVIRONMENT, a
 *         driver error).
 */
GPUMEM_API gpumem_status gpumem_peer_can_access(int device, int peer, int *can);

/**
 * Switches peer access for copies between devices on (1) or off (0, the
 * staged path for every pair), for the whole process, overriding a valid
 * @c GPUMEM_PEER.  A bad @c GPUMEM_PEER is not overridden: this call still
 * succeeds, but gpumem_peer_enabled() and every copy between devices keep
 * failing with ::GPUMEM_ERROR_INVALID_ENVIRONMENT naming the variable (the
 * library never hides a bad setting).  Access already enabled in the driver
 * stays enabled; only the library's choice of path changes.  Added in
 * GPUMEM_1.1.
 * @param enabled 0 or 1
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_INVALID_VALUE for another value.
 */
GPUMEM_API gpumem_status gpumem_peer_set_enabled(int enabled);

/**
 * Whether copies between devices may use peer access: the value of
 * gpumem_peer_set_enabled() once called, else of @c GPUMEM_PEER (0 or 1,
 * default 1).  A bad @c GPUMEM_PEER is an error even after
 * gpumem_peer_set_enabled().  Added in GPUMEM_1.1.
 * @param enabled receives 0 or 1
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT when @p enabled is NULL;
 *         ::GPUMEM_ERROR_INVALID_ENVIRONMENT when @c GPUMEM_PEER is neither 0
 *         nor 1 (every cross-device copy then fails the same way).
 */
GPUMEM_API gpumem_status gpumem_peer_enabled(int *enabled);

GPUMEM_END_DECLS

#endif /* GPUMEM_PEER_H */
