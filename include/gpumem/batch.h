/**
 * @file gpumem/batch.h
 * @brief Batched copies: many (dst, src) pairs in one call, and several
 *        views packed into one contiguous buffer and back (a halo for
 *        MPI_Isend and MPI_Irecv).
 *
 * gpumem_array_copy_batch() does what one gpumem_array_copy() per pair
 * does, on one stream, with one plan for the whole batch: each pair is
 * decided as gpumem_array_copy() decides it (gpumem/debug.h), and the pairs
 * of the stream's device whose strided device side the pack kernels move
 * (a column of a row-major field, the faces of a halo) share their
 * launches: one kernel gathers every strided source that goes out, the
 * transfers follow (adjacent ones merged into one), and one kernel
 * scatters every strided destination that comes in.  Where that does not
 * pay (fewer than two such pairs, no pack kernels, no device scratch) the
 * pairs are copied one by one, with the same result.
 *
 * gpumem_array_pack() copies several views, one after the other, into one
 * contiguous buffer, and gpumem_array_unpack() copies the buffer back into
 * views of the same shapes and dtypes: the bytes of a halo go through MPI
 * as one message (doc/mpi.md shows a whole exchange).
 *
 * Arguments are checked for every pair before anything is copied: a bad
 * pair, or two pairs whose memory collides, leaves every destination
 * untouched and names the pair.  A driver failure while the copies run
 * (out of device memory for a pair's temporary, a lost device) may leave
 * some pairs copied and others not.
 */
#ifndef GPUMEM_BATCH_H
#define GPUMEM_BATCH_H

#include <stddef.h>

#include <gpumem/export.h>
#include <gpumem/status.h>
#include <gpumem/array.h>
#include <gpumem/stream.h>

GPUMEM_BEGIN_DECLS

/**
 * dst[i][:] = src[i] for i = 0 .. count - 1, arguments (count, dst, src,
 * stream), destinations first as in gpumem_array_copy(): copies each
 * source into its destination (equal shapes and dtypes, any strides, any
 * memory kinds, as gpumem_array_copy() copies them), all on @p stream.
 *
 * With a stream the copies are queued on it and the call returns before
 * they complete, as gpumem_array_copy()'s do (a copy between two host-side
 * arrays is done by the CPU before the call returns); with NULL it returns
 * once every pair is copied.  The order in which the pairs are copied is
 * not specified: they may run in one kernel at once.  So no destination
 * may share memory with another pair's destination or source (checked
 * byte for byte, not by extent: two columns of one array do not collide;
 * where telling would take more than about four million steps, views of
 * millions of elements whose strides do not line up, such as x[::6] and
 * x[1::4] of a large byte array, the two are refused as if they collided,
 * with a message that says "may share memory (too many elements to tell)",
 * as NumPy's may_share_memory() answers when its work is bounded: copy such
 * pairs with gpumem_array_copy(); the check costs O(n log n) in the pairs,
 * plus the byte-for-byte comparisons of the sides whose byte ranges meet,
 * and names the first colliding pair in the order of destination i, then
 * pair j, j's destination before its source);
 * a pair's destination may overlap its own source (it is then copied
 * through a temporary, as gpumem_array_copy() copies it), and sources may
 * overlap each other.  Pairs with nothing to copy (an extent 0) are
 * checked, and copy nothing; count 0 copies nothing.
 *
 * How the batch moves: one decision per pair (gpumem_debug_last_copy_path()
 * reports the last pair's after the call).  The pairs of the stream's
 * device (with a NULL stream, the first device-side pair's) that the
 * device's pack kernels move through device scratch, or device to device,
 * are batched once there are two or more of them: one launch packs the
 * strided sources of the device-to-host and device-to-device pairs (and
 * unpacks those that need no scratch), the transfers of those pairs and of
 * the contiguous ones follow in order (adjacent bytes on both sides in one
 * transfer), then one launch unpacks the strided destinations of the
 * host-to-device pairs.  A launch takes up to 32 pieces; a piece of more
 * than three collapsed axes, a transposed one, a host side in pageable or
 * managed memory, and pairs of other devices are copied one by one first.
 *
 * @par Example
 * The first and the last column of a 4x5 device field, strided views,
 * copied into two rows of a host array in one call:
 * @code{.c}
 * #include <stdio.h>
 * #include <gpumem.h>
 *
 * int main(void)
 * {
 *     float field[4][5], edges[2][4];
 *     for (int i = 0; i < 20; i++)
 *         field[i / 5][i % 5] = (float)i;
 *     const int64_t shape[2] = {4, 5}, eshape[2] = {2, 4};
 *     const gpumem_slice left[2] = {GPUMEM_SLICE_ALL, GPUMEM_INDEX(0)};
 *     const gpumem_slice right[2] = {GPUMEM_SLICE_ALL, GPUMEM_INDEX(4)};
 *     const gpumem_slice row0[1] = {GPUMEM_INDEX(0)}, row1[1] = {GPUMEM_INDEX(1)};
 *     gpumem_array *h = NULL, *d = NULL, *e = NULL, *src[2] = {NULL, NULL}, *dst[2] = {NULL, NULL};
 *     gpumem_status st = gpumem_host_array_wrap(field, 2, shape, NULL, GPUMEM_DTYPE_OF(field[0][0]), &h);
 *     if (st == GPUMEM_OK)
 *         st = gpumem_to_device(NULL, h, NULL, 0, &d);
 *     if (st == GPUMEM_OK)
 *         st = gpumem_array_slice(d, left, 2, &src[0]); // d[:, 0]: stride 20 bytes
 *     if (st == GPUMEM_OK)
 *         st = gpumem_array_slice(d, right, 2, &src[1]); // d[:, 4]
 *     if (st == GPUMEM_OK)
 *         st = gpumem_host_array_wrap(edges, 2, eshape, NULL, GPUMEM_DTYPE_OF(edges[0][0]), &e);
 *     if (st == GPUMEM_OK)
 *         st = gpumem_array_slice(e, row0, 1, &dst[0]);
 *     if (st == GPUMEM_OK)
 *         st = gpumem_array_slice(e, row1, 1, &dst[1]);
 *     if (st == GPUMEM_OK)
 *         st = gpumem_array_copy_batch(2, dst, src, NULL);
 *     if (st == GPUMEM_OK)
 *         printf("%g %g %g %g | %g %g %g %g\n", edges[0][0], edges[0][1], edges[0][2], edges[0][3],
 *                edges[1][0], edges[1][1], edges[1][2], edges[1][3]); // prints: 0 5 10 15 | 4 9 14 19
 *     else
 *         fprintf(stderr, "gpumem: %s\n", gpumem_last_error());
 *     GPUMEM_ARRAY_RELEASE_ALL(dst[1], dst[0], e, src[1], src[0], d, h);
 *     return st == GPUMEM_OK ? 0 : 1;
 * }
 * @endcode
 * @param count the number of pairs (0: nothing to do; @p dst and @p src may then be NULL).
 * @param[in] dst @p count destinations (writable).
 * @param[in] src @p count sources, src[i] of the shape and dtype of dst[i] (only read; the pointers are not
 *        const so that an array of the handles a C program holds passes as it is).
 * @param stream the stream, or NULL (synchronous).
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT (@p dst, @p src, or one of their arrays: the message
 *        names it, as 'dst[2]'), any error of gpumem_array_copy() for a pair (::GPUMEM_ERROR_SHAPE_MISMATCH,
 *        ::GPUMEM_ERROR_DTYPE_MISMATCH, ::GPUMEM_ERROR_CONTEXT_MISMATCH, ::GPUMEM_ERROR_INVALID_VALUE for a
 *        read-only destination or a broadcast one (stride 0 on an axis of more than one element),
 *        ::GPUMEM_ERROR_INVALID_STATE for a released array: the message starts
 *        "gpumem_array_copy_batch: pair 2:"), ::GPUMEM_ERROR_INVALID_VALUE (a destination that shares memory
 *        with another pair's destination or source, or may share it where that takes too long to tell: the
 *        message names both pairs), and the errors of the
 *        copies themselves (::GPUMEM_ERROR_OUT_OF_MEMORY, ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY,
 *        ::GPUMEM_ERROR_INVALID_ENVIRONMENT, a driver failure).  Every argument error is found before
 *        anything is copied. Added in GPUMEM_1.1.
 */
GPUMEM_API gpumem_status gpumem_array_copy_batch(size_t count, gpumem_array *const *dst, gpumem_array *const *src,
                                                 gpumem_stream *stream);

/**
 * buffer[...] = views[0], views[1], ..., arguments (count, views, buffer,
 * stream), the sources first: copies the elements of each view, in C order
 * (row-major, whatever the view's strides), into the contiguous @p buffer,
 * one view after the other with no padding: the bytes of views[i] start at
 * byte offset nbytes(views[0]) + ... + nbytes(views[i-1]) of the buffer.
 * Bytes of the buffer beyond the views' total are not written.  The
 * buffer is a C-contiguous array of any dtype, in any memory (a pinned
 * array for an MPI library that does not read device memory, a device
 * array for one that does), of at least the views' total bytes;
 * gpumem_array_unpack() copies such a buffer back.
 *
 * This is gpumem_array_copy_batch() of the pairs (the buffer's bytes for
 * views[i] seen with views[i]'s shape and dtype, views[i]): the strided
 * device views (the columns of a halo) are gathered by one kernel and the
 * buffer is filled by one transfer, and it orders, returns and fails as
 * gpumem_array_copy_batch() does.  The views may overlap each other; the
 * bytes of the buffer that one view goes to may not hold another view.  With a stream, synchronize it (or an event recorded after
 * the call) before handing the buffer to MPI: MPI does not know the
 * stream.
 * @param count the number of views (0: nothing is written).
 * @param[in] views @p count arrays of any shapes, dtypes, strides and memory kinds (only read).
 * @param buffer the contiguous destination (writable, C-contiguous).
 * @param stream the stream, or NULL (synchronous).
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT (@p views, @p buffer, or views[i]: the message names
 *        it), ::GPUMEM_ERROR_INVALID_VALUE (@p buffer read-only, not C-contiguous, smaller than the views'
 *        total bytes, or holding another view in the bytes for one), ::GPUMEM_ERROR_OVERFLOW (the total does not fit),
 *        ::GPUMEM_ERROR_CONTEXT_MISMATCH (@p stream of another device), ::GPUMEM_ERROR_INVALID_STATE (a
 *        released array), and the errors of gpumem_array_copy_batch()'s copies.  Added in GPUMEM_1.1.
 */
GPUMEM_API gpumem_status gpumem_array_pack(size_t count, gpumem_array *const *views, gpumem_array *buffer,
                                           gpumem_stream *stream);

/**
 * views[0], views[1], ... = buffer[...], arguments (count, views, buffer,
 * stream), the destinations first: the reverse of gpumem_array_pack():
 * copies the bytes of the contiguous @p buffer, one view after the other
 * with no padding, into the views, each in C order: views[i] receives the
 * bytes at byte offset nbytes(views[0]) + ... + nbytes(views[i-1]).  The
 * buffer holds at least the views' total bytes (more are not read).
 *
 * This is gpumem_array_copy_batch() of the pairs (views[i], the buffer's
 * bytes for views[i]): one transfer and one kernel scatter a halo received
 * by MPI into the strided views of a device field; it orders, returns and
 * fails as gpumem_array_copy_batch() does.  The views may not overlap each
 * other, nor the bytes of the buffer meant for another view.
 *
 * @par Example
 * Two columns of a device field packed into one pinned buffer (what
 * MPI_Isend would send), then unpacked into the two other columns:
 * @code{.c}
 * #include <stdio.h>
 * #include <gpumem.h>
 *
 * int main(void)
 * {
 *     double field[3][4];
 *     for (int i = 0; i < 12; i++)
 *         field[i / 4][i % 4] = i;
 *     const int64_t shape[2] = {3, 4}, six = 6;
 *     const gpumem_slice c[4][2] = {{GPUMEM_SLICE_ALL, GPUMEM_INDEX(0)}, {GPUMEM_SLICE_ALL, GPUMEM_INDEX(1)},
 *                                   {GPUMEM_SLICE_ALL, GPUMEM_INDEX(2)}, {GPUMEM_SLICE_ALL, GPUMEM_INDEX(3)}};
 *     gpumem_array *h = NULL, *d = NULL, *buf = NULL, *col[4] = {NULL, NULL, NULL, NULL};
 *     gpumem_status st = gpumem_host_array_wrap(field, 2, shape, NULL, GPUMEM_DTYPE_OF(field[0][0]), &h);
 *     if (st == GPUMEM_OK)
 *         st = gpumem_to_device(NULL, h, NULL, 0, &d);
 *     for (int j = 0; j < 4 && st == GPUMEM_OK; j++)
 *         st = gpumem_array_slice(d, c[j], 2, &col[j]);
 *     if (st == GPUMEM_OK)
 *         st = gpumem_pinned_array(NULL, 1, &six, NULL, GPUMEM_DTYPE_OF(field[0][0]), 'C', &buf);
 *     if (st == GPUMEM_OK) // buf = d[:, 1], d[:, 2]
 *         st = gpumem_array_pack(2, (gpumem_array *const[]){col[1], col[2]}, buf, NULL);
 *     if (st == GPUMEM_OK) // d[:, 3], d[:, 0] = buf
 *         st = gpumem_array_unpack(2, (gpumem_array *const[]){col[3], col[0]}, buf, NULL);
 *     if (st == GPUMEM_OK)
 *         st = gpumem_array_copy(h, d, NULL);
 *     if (st == GPUMEM_OK)
 *         printf("%g %g %g %g\n", field[2][0], field[2][1], field[2][2], field[2][3]); // prints: 10 9 10 9
 *     else
 *         fprintf(stderr, "gpumem: %s\n", gpumem_last_error());
 *     GPUMEM_ARRAY_RELEASE_ALL(buf, col[3], col[2], col[1], col[0], d, h);
 *     return st == GPUMEM_OK ? 0 : 1;
 * }
 * @endcode
 * @param count the number of views (0: nothing is read or written).
 * @param[in] views @p count writable arrays of any shapes, dtypes, strides and memory kinds.
 * @param buffer the contiguous source (C-contiguous).
 * @param stream the stream, or NULL (synchronous).
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT (@p views, @p buffer, or views[i]: the message names
 *        it), ::GPUMEM_ERROR_INVALID_VALUE (a read-only view, or a broadcast one: stride 0 on an axis of more
 *        than one element; @p buffer not C-contiguous or smaller than
 *        the views' total bytes; two views sharing memory, or a view sharing memory with the bytes of the
 *        buffer meant for another),
 *        ::GPUMEM_ERROR_OVERFLOW, ::GPUMEM_ERROR_CONTEXT_MISMATCH, ::GPUMEM_ERROR_INVALID_STATE, and the
 *        errors of gpumem_array_copy_batch()'s copies.  Added in GPUMEM_1.1.
 */
GPUMEM_API gpumem_status gpumem_array_unpack(size_t count, gpumem_array *const *views, const gpumem_array *buffer,
                                             gpumem_stream *stream);

GPUMEM_END_DECLS

#endif /* GPUMEM_BATCH_H */
