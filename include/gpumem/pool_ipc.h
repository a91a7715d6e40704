/**
 * @file gpumem/pool_ipc.h
 * @brief Sharing a virtual-memory pool's or a driver's stream-ordered
 *        pool's memory with another process: its physical chunks (or the
 *        driver's pool) as POSIX file descriptors over a Unix socket, and
 *        its allocations as small fixed-size handles.
 *
 * A ::GPUMEM_POOL_SOURCE_VIRTUAL pool made with @c handle_type
 * ::GPUMEM_POOL_HANDLE_POSIX_FD (struct gpumem_pool_props) maps its memory
 * in physical chunks that the driver can export as file descriptors
 * (cuMemExportToShareableHandle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR).
 * Sharing it takes two steps:
 *  1. the exporter calls gpumem_pool_ipc_send() on a connected Unix socket
 *     (socketpair(2), or a connected AF_UNIX socket of any type): every
 *     chunk the pool maps at that moment goes, as one file descriptor per
 *     chunk, in SCM_RIGHTS control messages (no pidfd_getfd(2), which
 *     containers commonly refuse; nothing but the socket is needed);
 *     the importer calls gpumem_pool_ipc_open() on the other end: it
 *     reserves address space of the exporter's reservation's size and maps
 *     each chunk once, at the chunk's offset in it, readable and writable
 *     by its context's device.
 *  2. for each allocation to share, the exporter makes a
 *     ::gpumem_pool_ipc_handle (gpumem_allocation_ipc_handle(): 128 plain
 *     bytes, to send any way, the same socket included), and the importer
 *     gives it to gpumem_pool_import_open_allocation(), which checks it
 *     against what the import maps and gives the device address of the
 *     same memory.  Opening an allocation makes no driver call.
 *
 * @par Chunks mapped later
 * A pool maps chunks as it grows and unmaps idle ones (gpumem_pool_trim(),
 * the release threshold), so an allocation made after a send may lie in a
 * chunk the importer has not got.  The protocol: the exporter calls
 * gpumem_pool_ipc_send() again (each send carries every chunk mapped then),
 * and the importer calls gpumem_pool_import_update() on its end, which
 * maps the chunks it has not got and unmaps those the pool no longer maps
 * or has replaced (a chunk carries a serial number, so a new chunk at the
 * offset of an old one is told apart).  Until then
 * gpumem_pool_import_open_allocation() refuses a handle whose memory the
 * import does not map, or maps from a replaced chunk, with
 * ::GPUMEM_ERROR_INVALID_STATE and a message saying to update.  The two
 * sides agree on when to send and update (the example examples/pool-ipc.c
 * sends once after allocating).
 *
 * @par The driver's stream-ordered pool
 * A ::GPUMEM_POOL_SOURCE_ASYNC pool made with @c handle_type
 * ::GPUMEM_POOL_HANDLE_POSIX_FD (the driver's pool is created with
 * @c handleTypes CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) is shared by the
 * same calls: gpumem_pool_ipc_send() sends the driver's pool as one file
 * descriptor (cuMemPoolExportToShareableHandle); gpumem_pool_ipc_open()
 * imports it (cuMemPoolImportFromShareableHandle) and makes it readable
 * and writable by its context's device (cuMemPoolSetAccess);
 * gpumem_allocation_ipc_handle() exports the driver's allocation that
 * holds the allocation (the pool suballocates the driver's allocations:
 * cuMemGetAddressRange, cuMemPoolExportPointer) into a handle of kind 2;
 * gpumem_pool_import_open_allocation() imports each driver allocation once
 * (cuMemPoolImportPointer) and gives the allocation's address in it.  Such
 * an import maps nothing: gpumem_pool_import_update() receives and checks
 * a send of the same pool and changes nothing; every allocation the pool
 * makes later opens without one.  gpumem_pool_import_close() frees every
 * imported pointer (cuMemFree) and then the imported pool
 * (cuMemPoolDestroy).
 *
 * @par The exporter's rule (stream-ordered pools)
 * The driver requires that an imported allocation be freed in every
 * importing process before the exporting process frees it.  The exporter's
 * pool frees a driver allocation when it gives memory back (gpumem_pool_trim(),
 * gpumem_pool_free_held(), the out-of-memory ladder, gpumem_pool_destroy());
 * freeing a gpumem allocation only returns its block to the pool.  So the
 * exporter must not free an allocation it shared, nor let its pool give
 * memory back, while an importer has the allocation open: the importer
 * calls gpumem_pool_import_close() first and tells it (a message on the
 * socket).  If the exporter does not wait, the result is the driver's:
 * undefined; the importer's address may then read or overwrite memory the
 * exporter has reused for other allocations, or fault.
 *
 * @par Lifetime (virtual-memory pools)
 * The importer's mappings keep the physical memory alive: a chunk the
 * exporter unmaps and releases stays valid in the importer until its
 * update or close, and the exporter's allocations may be freed and the
 * pool destroyed meanwhile (the memory is then reused by neither).  Work
 * of the importer that uses an opened allocation must be complete before
 * gpumem_pool_import_update() or gpumem_pool_import_close(), which unmap;
 * the addresses that gpumem_pool_import_open_allocation() gave are then
 * invalid.  The two processes order their accesses to the shared bytes
 * themselves (a message on the socket, events, a barrier).  Every file
 * descriptor received is closed before the receiving call returns, on
 * success and on failure alike.
 *
 * @par Wire format
 * Integers are little-endian.  A stream-ordered pool's send is one message:
 * the 64-byte header with reservation size and granularity 0 and @c n 1,
 * no chunk record, and the pool's one file descriptor.  A virtual-memory
 * pool's send is one or more messages; each is a
 * 64-byte header followed by @c n 24-byte chunk records, with the @c n
 * chunks' file descriptors, in record order, as one SCM_RIGHTS control
 * message (at most ::GPUMEM_POOL_IPC_MAX_FDS per message):
 * | offset | bytes | field |
 * |---|---|---|
 * | 0 | 8 | magic "GPUMEMPC" |
 * | 8 | 4 | version ::GPUMEM_POOL_IPC_VERSION |
 * | 12 | 4 | header bytes, 64 |
 * | 16 | 8 | the pool's id (random, not 0) |
 * | 24 | 8 | the size of the pool's reservation in bytes |
 * | 32 | 8 | the chunk granularity in bytes (a power of two) |
 * | 40 | 12 | the device's PCI domain, bus and device ids (int32 each) |
 * | 52 | 4 | @c n, the chunks of this message |
 * | 56 | 4 | the chunks of the whole send |
 * | 60 | 4 | the index in the send of this message's first chunk |
 * A chunk record is its offset in the reservation, its length and its
 * serial number (8 bytes each).  A send of no chunks is one message with
 * @c n 0.  The receiving calls check every field before they call the
 * driver, and refuse with ::GPUMEM_ERROR_INVALID_VALUE and a message naming
 * the field: a wrong magic, version or header size; a reservation above
 * 2^51 bytes or not a multiple of the granularity; a granularity that is
 * not a power of two from 4 KiB to 1 GiB; more chunks than the reservation
 * has granules; a message whose bytes are not its header's @c n records,
 * or whose file descriptor count is not @c n; messages of one send that
 * disagree (another pool, another total, an index out of order); a chunk
 * that is empty, not aligned to the granularity, outside the reservation,
 * or not after the previous one; a stream-ordered pool's send that is not
 * one message of one descriptor and no record.  A message from another pool than the
 * import's (an update) is ::GPUMEM_ERROR_INVALID_VALUE too.
 *
 * The allocation handle's 128 bytes:
 * | offset | bytes | field |
 * |---|---|---|
 * | 0 | 8 | magic "GPUMEMPA" |
 * | 8 | 4 | version ::GPUMEM_POOL_IPC_VERSION |
 * | 12 | 4 | ::GPUMEM_POOL_IPC_HANDLE_SIZE (128) |
 * | 16 | 8 | the pool's id |
 * | 24 | 8 | the allocation's offset in the reservation |
 * | 32 | 8 | the allocation's size in bytes |
 * | 40 | 8 | the serial of the chunk under its first byte |
 * | 48 | 8 | the serial of the chunk under its last byte |
 * | 56 | 1 | the kind: 1, an allocation of a virtual-memory pool |
 * | 57 | 71 | zero |
 * A stream-ordered pool's allocation (kind 2) has the same bytes 0 to 23
 * and 32 to 39, and:
 * | offset | bytes | field |
 * |---|---|---|
 * | 24 | 8 | the allocation's offset in the driver's allocation that holds it |
 * | 40 | 8 | the size of that driver allocation in bytes |
 * | 48 | 8 | zero |
 * | 56 | 1 | the kind: 2 |
 * | 57 | 7 | zero |
 * | 64 | 64 | the driver's CUmemPoolPtrExportData of that allocation (opaque) |
 * The receiving call refuses a handle whose kind is neither, or not the
 * import's, or whose zero bytes are not zero.  The export data is opaque:
 * it goes to the driver as it is, and the import's bounds are the
 * driver's (the handle's offset and size must lie in the driver
 * allocation, whose size must be the one cuMemGetAddressRange gives in the
 * importer).
 *
 * Not simulated: the driver's stream-ordered pools (their creation is
 * ::GPUMEM_ERROR_NOT_SIMULATED).  On the simulator (GPUMEM_BACKEND=sim) a
 * virtual-memory chunk's file descriptor is a real one (a memfd of the
 * chunk's bytes), so two processes share memory there as on a GPU.
 *
 * All functions Added in GPUMEM_1.1.
 */
#ifndef GPUMEM_POOL_IPC_H
#define GPUMEM_POOL_IPC_H

#include <stddef.h>
#include <stdint.h>
#include <gpumem/export.h>
#include <gpumem/context.h>
#include <gpumem/pool.h>
#include <gpumem/status.h>

/** The version of the wire format and of the allocation handle.  Added in GPUMEM_1.1. */
#define GPUMEM_POOL_IPC_VERSION 1
/** The bytes of a ::gpumem_pool_ipc_handle.  Added in GPUMEM_1.1. */
#define GPUMEM_POOL_IPC_HANDLE_SIZE 128
/** The most file descriptors one message of a send carries.  Added in GPUMEM_1.1. */
#define GPUMEM_POOL_IPC_MAX_FDS 32

/** A pool's chunks mapped in this process, from gpumem_pool_ipc_open().  Added in GPUMEM_1.1. */
typedef struct gpumem_pool_import gpumem_pool_import;

/**
 * An allocation of an exported pool, as plain bytes (the header's table),
 * from gpumem_allocation_ipc_handle().  Added in GPUMEM_1.1.
 */
typedef struct gpumem_pool_ipc_handle {
    unsigned char bytes[GPUMEM_POOL_IPC_HANDLE_SIZE]; /**< the header's table */
} gpumem_pool_ipc_handle;

/**
 * Sends every chunk that @p pool maps now over the connected Unix socket
 * @p socket_fd, as the header's wire format says: one file descriptor per
 * chunk (cuMemExportToShareableHandle), in messages of at most
 * ::GPUMEM_POOL_IPC_MAX_FDS; for a ::GPUMEM_POOL_SOURCE_ASYNC pool, the
 * driver's pool as one descriptor (cuMemPoolExportToShareableHandle).  The descriptors this process exported are
 * closed before the call returns.  The call blocks while the socket's
 * buffer is full (the peer reads with gpumem_pool_ipc_open() or
 * gpumem_pool_import_update()); it raises no SIGPIPE.  Added in GPUMEM_1.1.
 * @param pool a ::GPUMEM_POOL_SOURCE_VIRTUAL or ::GPUMEM_POOL_SOURCE_ASYNC pool made with @c handle_type
 *        ::GPUMEM_POOL_HANDLE_POSIX_FD.
 * @param socket_fd a connected AF_UNIX socket.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT; ::GPUMEM_ERROR_INVALID_STATE (@p pool destroyed, or the
 *         peer closed the socket: EPIPE, ECONNRESET); ::GPUMEM_ERROR_INVALID_VALUE (@p pool not exportable,
 *         @p socket_fd not an open AF_UNIX socket, or another error of sendmsg(2), named in the message);
 *         ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY; or the driver's failure (the export, the device's PCI ids).
 *         A failure can come after some messages went: the peer's receiving call then fails too.
 */
GPUMEM_API gpumem_status gpumem_pool_ipc_send(gpumem_pool *pool, int socket_fd);

/**
 * Receives one send of gpumem_pool_ipc_send() from the Unix socket
 * @p socket_fd and maps its chunks in @p ctx (NULL: the autoinit
 * context): one reservation of the exporter's reservation's size
 * (cuMemAddressReserve), each chunk imported (cuMemImportFromShareableHandle),
 * mapped once at its offset (cuMemMap) and made readable and writable by
 * the context's device (cuMemSetAccess); a stream-ordered pool's send is
 * imported as a pool (cuMemPoolImportFromShareableHandle) that the
 * context's device may read and write (cuMemPoolSetAccess).  The memory
 * must be of the context's device (the same PCI ids).  The call blocks until the send's
 * messages arrive, or fails when the socket's receive timeout
 * (SO_RCVTIMEO) passes first.  Every received file descriptor is closed
 * before it returns.  The import holds a reference to the context.  Added
 * in GPUMEM_1.1.
 * @param ctx the context, or NULL for the autoinit context.
 * @param socket_fd a connected AF_UNIX socket.
 * @param[out] import the new import; unchanged on failure.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT; ::GPUMEM_ERROR_INVALID_VALUE (@p socket_fd not an open
 *         AF_UNIX socket, a message the header's wire format refuses, or an error of recvmsg(2), named in the
 *         message); ::GPUMEM_ERROR_INVALID_STATE (the peer closed the socket before the send was complete);
 *         ::GPUMEM_ERROR_NOT_READY (the receive timeout passed); ::GPUMEM_ERROR_CONTEXT_MISMATCH (the memory
 *         is of another device); ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY; an autoinit failure; or the driver's
 *         failure (the reservation, an import, a map, the access; ::GPUMEM_ERROR_OUT_OF_MEMORY when it has no
 *         room for the reservation; the pool's import or access).
 */
GPUMEM_API gpumem_status gpumem_pool_ipc_open(gpumem_context *ctx, int socket_fd, gpumem_pool_import **import);

/**
 * Receives a later send of the same pool from @p socket_fd and brings
 * @p import up to it: chunks the import has not got are mapped, chunks the
 * send no longer holds, or holds with another serial (a new chunk at the
 * same offset), are unmapped first.  Chunks in both stay mapped, at the
 * same addresses.  The message is received and checked whole before
 * anything changes; when a map then fails, the import keeps the chunks it
 * had and those mapped before the failure, and
 * gpumem_pool_import_open_allocation() keeps checking against exactly
 * what is mapped.  An import of a stream-ordered pool maps nothing: the
 * send is received and checked (the same pool) and nothing changes.
 * Added in GPUMEM_1.1.
 * @param import the import.
 * @param socket_fd a connected AF_UNIX socket.
 * @return as gpumem_pool_ipc_open(), and ::GPUMEM_ERROR_INVALID_STATE (@p import closed);
 *         ::GPUMEM_ERROR_INVALID_VALUE (a send of another pool, or of another reservation size or granularity).
 */
GPUMEM_API gpumem_status gpumem_pool_import_update(gpumem_pool_import *import, int socket_fd);

/**
 * The device address of the allocation that @p handle names, in
 * @p import's mapping, and its size.  The handle is untrusted input: it is
 * checked whole before it is used, and refused with
 * ::GPUMEM_ERROR_INVALID_VALUE and a message naming the field when its
 * magic, version, size, kind or zero bytes are wrong, when its kind is not
 * the import's (a virtual-memory pool's handle given to a stream-ordered
 * pool's import, or the other way round), when it names another
 * pool than the import's, when its size is 0 or its bytes reach past the
 * reservation (overflow included); and with ::GPUMEM_ERROR_INVALID_STATE
 * when the import does not map every byte of it, or maps its first or last
 * byte from another chunk than the handle's (the exporter's pool mapped it
 * after the import's last send: the exporter sends again and the importer
 * calls gpumem_pool_import_update()).  The address stays valid until the
 * import's next update or its close.  A stream-ordered pool's handle
 * (kind 2) is checked as the header's table says; the driver allocation it
 * names is imported on its first open (cuMemPoolImportPointer, then
 * cuMemGetAddressRange for its size) and kept until the import's close;
 * its address stays valid until the close, and the exporter's rule above
 * holds.  Opening a virtual-memory pool's allocation makes no driver call.
 * Added in GPUMEM_1.1.
 * @param import the import.
 * @param[in] handle bytes from gpumem_allocation_ipc_handle() in the exporting process.
 * @param[out] pointer the device address.
 * @param[out] size the allocation's size in bytes (may be NULL).
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT; ::GPUMEM_ERROR_INVALID_STATE (@p import closed, or as
 *         above); ::GPUMEM_ERROR_INVALID_VALUE (as above); ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY; or the driver's
 *         failure (a stream-ordered pool's: the pointer's import).
 */
GPUMEM_API gpumem_status gpumem_pool_import_open_allocation(gpumem_pool_import *import,
                                                            const gpumem_pool_ipc_handle *handle,
                                                            uint64_t *pointer, size_t *size);

/**
 * Unmaps every chunk of @p import, frees its reservation (a stream-ordered
 * pool's import: frees every pointer it imported, cuMemFree, then the
 * imported pool, cuMemPoolDestroy), and drops its reference to its context; the handle is dead afterwards.  Work that uses
 * its memory must be complete.  NULL is a no-op.  Added in GPUMEM_1.1.
 * @param import the import, or NULL.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_INVALID_STATE (closed already); or the first driver failure (the import
 *         is closed all the same).
 */
GPUMEM_API gpumem_status gpumem_pool_import_close(gpumem_pool_import *import);

/**
 * The handle of @p alloc, a live allocation of an exportable
 * ::GPUMEM_POOL_SOURCE_VIRTUAL pool (see the header's table): its offset
 * in the pool's reservation, its size (the size asked for), the pool's id
 * and the serials of the chunks under its first and last byte.  It makes
 * no driver call.  Of an exportable ::GPUMEM_POOL_SOURCE_ASYNC pool: a
 * handle of kind 2, with the driver's export data of the driver allocation
 * that holds @p alloc (cuMemGetAddressRange, cuMemPoolExportPointer).  The handle stays meaningful while the allocation is
 * live; the importer must have the chunks under it (a send after the
 * allocation, or one that already held them).  Added in GPUMEM_1.1.
 * @param alloc the allocation.
 * @param[out] handle its handle.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT; ::GPUMEM_ERROR_INVALID_STATE (@p alloc freed);
 *         ::GPUMEM_ERROR_INVALID_VALUE (@p alloc not an allocation handle, of a host pool, of a pool that
 *         is not exportable, or of size 0); or the driver's failure (a stream-ordered pool's export).
 */
GPUMEM_API gpumem_status gpumem_allocation_ipc_handle(const gpumem_allocation *alloc,
                                                      gpumem_pool_ipc_handle *handle);

#endif /* GPUMEM_POOL_IPC_H */
