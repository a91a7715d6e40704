/* The copy engine's decision (lib/copy_decide.c): a table of copies and
 * what must be decided for each (path, executor, how each side meets the
 * packed run, staging, scratch chunks, why a fallback), so that a changed
 * choice fails here; the steps of plans; what a decision asks its probe for; then the chunks of random runs, which must tile the
 * run in order, every element once. */
#include "config.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "copy_decide.h"
#include "rng.h"
#include "tap.h"

#define MiB (1u << 20)

static gm_copy_tuning tuning(void)
{
    gm_copy_tuning t;
    memset(&t, 0, sizeof t);
    t.gen = 1;
    t.min_row_bytes = 128;
    t.scratch_chunk = 4 * MiB;
    t.cpu_thread_bytes = 4 * MiB;
    t.staging = (gpumem_staging_settings){sizeof t.staging, 8, 8 * MiB, 4, 4 * MiB};
    t.peer = true;
    return t;
}

/* What a case must give; fields left 0 must be 0 (or GM_OP_DIRECT and
 * GM_RUN_SRC, their zero values). */
typedef struct want {
    gm_copy_how how;
    gpumem_copy_path path;
    gm_copy_op src_op, dst_op;
    gm_copy_run_layout run;
    bool staged, queued, via_temp, overlap, transpose;
    uint64_t nchunks, chunk_bytes;
    gm_copy_reason reason;
    unsigned bad, cpu_threads;
} want;

static const char *how_name(gm_copy_how h)
{
    static const char *const n[] = {"none", "fail", "host", "peer", "temp", "transfer", "rect", "kernel", "packed"};
    return (unsigned)h < sizeof n / sizeof *n ? n[h] : "?";
}

static void check(const char *name, int ndim, const int64_t *shape, size_t isz, gm_copy_side src, gm_copy_side dst,
                  gm_copy_caps caps, const gm_copy_tuning *t, want w, gm_copy_decision *out)
{
    gm_copy_decision d;
    gm_copy_decide(ndim, shape, isz, &src, &dst, &caps, t, &d);
    bool packed = w.how == GM_HOW_PACKED;
    bool good = d.how == w.how && d.path == w.path && d.staged == w.staged && d.queued == w.queued &&
                d.transpose == w.transpose &&
                d.via_temp == w.via_temp && d.reason == w.reason && d.bad == w.bad &&
                (!packed || (d.src_op == w.src_op && d.dst_op == w.dst_op && d.run == w.run &&
                             d.nchunks == w.nchunks && d.overlap == w.overlap && d.cpu_threads == w.cpu_threads &&
                             (w.chunk_bytes == 0 || d.chunk_bytes == w.chunk_bytes)));
    ok(good, "%s: %s, %s", name, how_name(w.how), gpumem_copy_path_name(w.path));
    if (!good)
        diag("got how %s path %s ops %d/%d run %d staged %d queued %d temp %d reason %d bad %u chunks %" PRIu64
             " of %" PRIu64 " overlap %d threads %u transpose %d",
             how_name(d.how), gpumem_copy_path_name(d.path), d.src_op, d.dst_op, d.run, d.staged, d.queued,
             d.via_temp, d.reason, d.bad, d.nchunks, d.chunk_bytes, d.overlap, d.cpu_threads, d.transpose);
    if (out != NULL)
        *out = d;
}

static gm_copy_side dev(uint64_t addr, const int64_t *strides)
{
    return (gm_copy_side){GM_COPY_MEM_DEVICE, 0, addr, strides, false};
}
static gm_copy_side dev_on(int device, uint64_t addr, const int64_t *strides)
{
    return (gm_copy_side){GM_COPY_MEM_DEVICE, device, addr, strides, false};
}
static gm_copy_side pinned(uint64_t addr, const int64_t *strides)
{
    return (gm_copy_side){GM_COPY_MEM_LOCKED, -1, addr, strides, false};
}
static gm_copy_side paged(uint64_t addr, const int64_t *strides)
{
    return (gm_copy_side){GM_COPY_MEM_PAGEABLE, -1, addr, strides, false};
}
/* pageable bytes partly page-locked, in more than one range (hostreg.h) */
static gm_copy_side split(uint64_t addr, const int64_t *strides)
{
    return (gm_copy_side){GM_COPY_MEM_PAGEABLE, -1, addr, strides, true};
}

#define D0 0x100000000ull /* device addresses */
#define H0 0x7f0000000000ull /* host addresses */

static void test_table(void)
{
    gm_copy_tuning t = tuning();
    gm_copy_caps none = {0}, stream = {.on_stream = true};
    /* 6 x 8 float32: C, its columns ::2 (6, 4), a C (6, 4) */
    int64_t s68[] = {6, 8}, s64[] = {6, 4}, c8[] = {32, 4}, cols[] = {32, 8}, c4[] = {16, 4}, f8[] = {4, 24};
    int64_t n1[] = {256}, c1[] = {4};
    const size_t f = 4;

    check("an empty copy", 2, (int64_t[]){0, 4}, f, dev(D0, c4), pinned(H0, c4), none, &t,
          (want){.how = GM_HOW_NONE, .path = GPUMEM_COPY_PATH_NONE}, NULL);
    check("an empty copy between devices", 2, (int64_t[]){3, 0}, f, dev_on(0, D0, c4), dev_on(1, D0, c4), none, &t,
          (want){.how = GM_HOW_NONE, .path = GPUMEM_COPY_PATH_NONE}, NULL);
    check("host to host", 2, s68, f, paged(H0, c8), pinned(H0 + 4096, c8), none, &t,
          (want){.how = GM_HOW_HOST, .path = GPUMEM_COPY_PATH_HOST}, NULL);
    check("overlapping host views", 1, n1, f, paged(H0, c1), paged(H0 + 8, c1), none, &t,
          (want){.how = GM_HOW_HOST, .path = GPUMEM_COPY_PATH_HOST, .via_temp = true}, NULL);
    check("contiguous D2H, pinned", 2, s68, f, dev(D0, c8), pinned(H0, c8), none, &t,
          (want){.how = GM_HOW_TRANSFER, .path = GPUMEM_COPY_PATH_CONTIGUOUS}, NULL);
    check("contiguous D2D", 2, s68, f, dev(D0, c8), dev(D0 + 4096, c8), none, &t,
          (want){.how = GM_HOW_RECT, .path = GPUMEM_COPY_PATH_CONTIGUOUS}, NULL);

    /* 64 MiB contiguous: staged when pageable */
    int64_t big[] = {16 * (int64_t)MiB}, big_s[] = {4};
    check("64 MiB pageable upload", 1, big, f, paged(H0, big_s), dev(D0, big_s), none, &t,
          (want){.how = GM_HOW_TRANSFER, .path = GPUMEM_COPY_PATH_STAGED, .staged = true}, NULL);
    check("the same, the staging engine busy", 1, big, f, paged(H0, big_s), dev(D0, big_s),
          (gm_copy_caps){.staging_busy = true}, &t,
          (want){.how = GM_HOW_TRANSFER, .path = GPUMEM_COPY_PATH_CONTIGUOUS, .reason = GM_REASON_STAGING_BUSY},
          NULL);
    check("1 MiB pageable download: below min_bytes", 1, (int64_t[]){256 * 1024}, f, dev(D0, big_s), paged(H0, big_s),
          none, &t, (want){.how = GM_HOW_TRANSFER, .path = GPUMEM_COPY_PATH_CONTIGUOUS}, NULL);
    check("64 MiB pinned download", 1, big, f, dev(D0, big_s), pinned(H0, big_s), none, &t,
          (want){.how = GM_HOW_TRANSFER, .path = GPUMEM_COPY_PATH_CONTIGUOUS}, NULL);
    /* split host bytes: the driver refuses them at any size, so they are staged */
    check("1 MiB split download: staged below min_bytes", 1, (int64_t[]){256 * 1024}, f, dev(D0, big_s),
          split(H0, big_s), none, &t, (want){.how = GM_HOW_TRANSFER, .path = GPUMEM_COPY_PATH_STAGED, .staged = true},
          NULL);
    check("4 KiB split upload: staged", 1, (int64_t[]){1024}, f, split(H0, big_s), dev(D0, big_s), none, &t,
          (want){.how = GM_HOW_TRANSFER, .path = GPUMEM_COPY_PATH_STAGED, .staged = true}, NULL);
    /* 64 rows of 2 KiB at a pitch of 4 KiB: the driver's 2-D copy, unless split */
    int64_t rows[] = {64, 512}, pitch4k[] = {4096, 4}, dense2k[] = {2048, 4};
    check("a pageable 2-D upload below min_bytes: the driver's 2-D copy", 2, rows, f, paged(H0, pitch4k),
          dev(D0, dense2k), none, &t, (want){.how = GM_HOW_RECT, .path = GPUMEM_COPY_PATH_DMA}, NULL);
    check("the same split: packed by the CPU, staged, not the driver's 2-D copy", 2, rows, f, split(H0, pitch4k),
          dev(D0, dense2k), none, &t,
          (want){.how = GM_HOW_PACKED, .path = GPUMEM_COPY_PATH_CPU_PACK, .src_op = GM_OP_CPU,
                 .dst_op = GM_OP_DIRECT, .run = GM_RUN_DST, .staged = true, .cpu_threads = 8},
          NULL);

    /* the packing paths of tests/test-copy-paths.c */
    check("d[:, ::2] to a contiguous host array", 2, s64, f, dev(D0, cols), pinned(H0, c4), none, &t,
          (want){.how = GM_HOW_PACKED, .path = GPUMEM_COPY_PATH_DEVICE_PACK, .src_op = GM_OP_KERNEL,
                 .dst_op = GM_OP_DIRECT, .run = GM_RUN_DST, .nchunks = 1, .chunk_bytes = 96},
          NULL);
    check("a contiguous host array to d[:, 1::2]", 2, s64, f, pinned(H0, c4), dev(D0 + 4, cols), none, &t,
          (want){.how = GM_HOW_PACKED, .path = GPUMEM_COPY_PATH_DEVICE_PACK, .src_op = GM_OP_DIRECT,
                 .dst_op = GM_OP_KERNEL, .run = GM_RUN_SRC, .nchunks = 1},
          NULL);
    check("h[:, ::2] to a contiguous device array", 2, s64, f, paged(H0, cols), dev(D0, c4), none, &t,
          (want){.how = GM_HOW_PACKED, .path = GPUMEM_COPY_PATH_CPU_PACK, .src_op = GM_OP_CPU,
                 .dst_op = GM_OP_DIRECT, .run = GM_RUN_DST, .staged = true, .cpu_threads = 8},
          NULL);
    check("h[:, ::2] to d[:, 1::2]", 2, s64, f, paged(H0, cols), dev(D0 + 4, cols), none, &t,
          (want){.how = GM_HOW_PACKED, .path = GPUMEM_COPY_PATH_CPU_DEVICE_PACK, .src_op = GM_OP_CPU,
                 .dst_op = GM_OP_KERNEL, .run = GM_RUN_LIKE_DST, .staged = true, .nchunks = 1, .cpu_threads = 8},
          NULL);
    check("a contiguous device array to h[:, 1::2]", 2, s64, f, dev(D0, c4), paged(H0 + 4, cols), none, &t,
          (want){.how = GM_HOW_PACKED, .path = GPUMEM_COPY_PATH_CPU_PACK, .src_op = GM_OP_DIRECT,
                 .dst_op = GM_OP_CPU, .run = GM_RUN_SRC, .staged = true, .cpu_threads = 8},
          NULL);
    check("d[:, ::2] to h[:, 1::2]", 2, s64, f, dev(D0, cols), pinned(H0 + 4, cols), none, &t,
          (want){.how = GM_HOW_PACKED, .path = GPUMEM_COPY_PATH_CPU_DEVICE_PACK, .src_op = GM_OP_KERNEL,
                 .dst_op = GM_OP_CPU, .run = GM_RUN_LIKE_DST, .staged = true, .nchunks = 1, .cpu_threads = 8},
          NULL);
    check("d[:, ::2] to a contiguous device array", 2, s64, f, dev(D0, cols), dev(D0 + 4096, c4), none, &t,
          (want){.how = GM_HOW_KERNEL, .path = GPUMEM_COPY_PATH_DEVICE_PACK}, NULL);
    check("a contiguous device array to d[:, 1::2]", 2, s64, f, dev(D0 + 4096, c4), dev(D0 + 4, cols), none, &t,
          (want){.how = GM_HOW_KERNEL, .path = GPUMEM_COPY_PATH_DEVICE_PACK}, NULL);
    check("d[:, ::2] to d2[:, 1::2]", 2, s64, f, dev(D0, cols), dev(D0 + 4096, cols), none, &t,
          (want){.how = GM_HOW_PACKED, .path = GPUMEM_COPY_PATH_DEVICE_PACK, .src_op = GM_OP_KERNEL,
                 .dst_op = GM_OP_KERNEL, .run = GM_RUN_LIKE_DST, .nchunks = 1},
          NULL);
    check("C host into an F device array", 2, s68, f, pinned(H0, c8), dev(D0, f8), none, &t,
          (want){.how = GM_HOW_PACKED, .path = GPUMEM_COPY_PATH_DEVICE_PACK, .src_op = GM_OP_DIRECT,
                 .dst_op = GM_OP_KERNEL, .run = GM_RUN_SRC, .nchunks = 1},
          NULL);
    /* transposes large enough for the tiled kernels */
    int64_t t64[] = {64, 48}, c64[] = {192, 4}, f64[] = {4, 256};
    check("C host (64, 48) into an F device array: tiled", 2, t64, f, pinned(H0, c64), dev(D0, f64), none, &t,
          (want){.how = GM_HOW_PACKED, .path = GPUMEM_COPY_PATH_DEVICE_PACK, .src_op = GM_OP_DIRECT,
                 .dst_op = GM_OP_KERNEL, .run = GM_RUN_SRC, .nchunks = 1, .transpose = true},
          NULL);
    check("an F device array (64, 48) into C host memory: tiled", 2, t64, f, dev(D0, f64), pinned(H0, c64), none,
          &t,
          (want){.how = GM_HOW_PACKED, .path = GPUMEM_COPY_PATH_DEVICE_PACK, .src_op = GM_OP_KERNEL,
                 .dst_op = GM_OP_DIRECT, .run = GM_RUN_DST, .nchunks = 1, .transpose = true},
          NULL);
    check("C (64, 48) into F on the device: one tiled kernel", 2, t64, f, dev(D0, c64), dev(D0 + MiB, f64), none, &t,
          (want){.how = GM_HOW_KERNEL, .path = GPUMEM_COPY_PATH_DEVICE_PACK, .transpose = true}, NULL);
    check("rows of 800 bytes: one 2-D copy", 2, (int64_t[]){8, 200}, f, dev(D0, (int64_t[]){1024, 4}),
          pinned(H0, (int64_t[]){800, 4}), none, &t, (want){.how = GM_HOW_RECT, .path = GPUMEM_COPY_PATH_DMA}, NULL);

    /* the row threshold */
    gm_copy_tuning t0 = t;
    t0.min_row_bytes = 0;
    check("min_row_bytes 0: d[:, ::2] is one 2-D copy", 2, s64, f, dev(D0, cols), pinned(H0, c4), none, &t0,
          (want){.how = GM_HOW_RECT, .path = GPUMEM_COPY_PATH_DMA}, NULL);

    /* a wide 2-D copy of 62.5 MiB with a pageable side: packed, staged, in chunks on two streams; the
     * staged transfer's chunks come from two buffers of the staging window (8 threads x 8 MiB, at most
     * 32 MiB: GM_COPY_SCRATCH_STAGED_MAX), not of scratch_chunk (4 MiB) */
    gm_copy_decision d;
    int64_t wide[] = {16384, 1000}, wsrc[] = {4096, 4}, wdst[] = {4000, 4};
    check("62.5 MiB of 4000-byte rows into pageable memory", 2, wide, f, dev(D0, wsrc), paged(H0, wdst), none, &t,
          (want){.how = GM_HOW_PACKED, .path = GPUMEM_COPY_PATH_DEVICE_PACK, .src_op = GM_OP_KERNEL,
                 .dst_op = GM_OP_DIRECT, .run = GM_RUN_DST, .staged = true, .overlap = true, .nchunks = 2,
                 .chunk_bytes = 8388 * 4000},
          &d);
    is_int(d.nbufs, 2, "two scratch buffers take turns");
    gm_copy_tuning t4 = t;
    t4.staging.threads = 2;
    t4.staging.chunk_bytes = 2 * MiB;
    check("the same with 2 staging threads of 2 MiB slots: a window of 4 MiB, the scratch chunk", 2, wide, f,
          dev(D0, wsrc), paged(H0, wdst), none, &t4,
          (want){.how = GM_HOW_PACKED, .path = GPUMEM_COPY_PATH_DEVICE_PACK, .src_op = GM_OP_KERNEL,
                 .dst_op = GM_OP_DIRECT, .run = GM_RUN_DST, .staged = true, .overlap = true, .nchunks = 16,
                 .chunk_bytes = 1048 * 4000},
          NULL);
    check("the same when the window's scratch could not be had: buffers of the scratch chunk", 2, wide, f,
          dev(D0, wsrc), paged(H0, wdst), (gm_copy_caps){.small_scratch = true}, &t,
          (want){.how = GM_HOW_PACKED, .path = GPUMEM_COPY_PATH_DEVICE_PACK, .src_op = GM_OP_KERNEL,
                 .dst_op = GM_OP_DIRECT, .run = GM_RUN_DST, .staged = true, .overlap = true, .nchunks = 16,
                 .chunk_bytes = 1048 * 4000, .reason = GM_REASON_SMALL_SCRATCH},
          NULL);
    check("the same into pinned memory: one 2-D copy", 2, wide, f, dev(D0, wsrc), pinned(H0, wdst), none, &t,
          (want){.how = GM_HOW_RECT, .path = GPUMEM_COPY_PATH_DMA}, NULL);
    check("the same on a stream: queued through a bounce laid out like dst", 2, wide, f, dev(D0, wsrc),
          paged(H0, wdst), stream, &t, (want){.how = GM_HOW_RECT, .path = GPUMEM_COPY_PATH_DMA, .queued = true},
          NULL);
    check("d[:, ::2] into pageable memory on a stream", 2, s64, f, dev(D0, cols), paged(H0 + 4, cols), stream, &t,
          (want){.how = GM_HOW_PACKED, .path = GPUMEM_COPY_PATH_DEVICE_PACK, .src_op = GM_OP_KERNEL,
                 .dst_op = GM_OP_DIRECT, .run = GM_RUN_DST, .queued = true, .nchunks = 1},
          NULL);

    /* without the kernels, without scratch */
    gm_copy_caps nok = {.no_kernels = true}, nos = {.no_scratch = true};
    check("no kernels: d[:, ::2] to host is one 2-D copy", 2, s64, f, dev(D0, cols), pinned(H0, c4), nok, &t,
          (want){.how = GM_HOW_RECT, .path = GPUMEM_COPY_PATH_DMA, .reason = GM_REASON_NO_KERNELS}, NULL);
    check("no scratch: the same", 2, s64, f, dev(D0, cols), pinned(H0, c4), nos, &t,
          (want){.how = GM_HOW_RECT, .path = GPUMEM_COPY_PATH_DMA, .reason = GM_REASON_NO_SCRATCH}, NULL);
    check("no scratch: d[:, ::2] to d2[:, 1::2]", 2, s64, f, dev(D0, cols), dev(D0 + 4096, cols), nos, &t,
          (want){.how = GM_HOW_RECT, .path = GPUMEM_COPY_PATH_DMA, .reason = GM_REASON_NO_SCRATCH}, NULL);
    check("no scratch: one kernel still does d[:, ::2] to a dense device array", 2, s64, f, dev(D0, cols),
          dev(D0 + 4096, c4), nos, &t, (want){.how = GM_HOW_KERNEL, .path = GPUMEM_COPY_PATH_DEVICE_PACK}, NULL);
    check("no kernels: h[:, ::2] to d[:, 1::2] packs on the CPU, then one 2-D copy", 2, s64, f, paged(H0, cols),
          dev(D0 + 4, cols), nok, &t,
          (want){.how = GM_HOW_PACKED, .path = GPUMEM_COPY_PATH_CPU_PACK, .src_op = GM_OP_CPU, .dst_op = GM_OP_RECT,
                 .run = GM_RUN_LIKE_DST, .reason = GM_REASON_NO_KERNELS, .cpu_threads = 1},
          NULL);
    check("no scratch: d[:, ::2] to h[:, 1::2], one 2-D copy, the CPU unpacks", 2, s64, f, dev(D0, cols),
          paged(H0 + 4, cols), nos, &t,
          (want){.how = GM_HOW_PACKED, .path = GPUMEM_COPY_PATH_CPU_PACK, .src_op = GM_OP_RECT, .dst_op = GM_OP_CPU,
                 .run = GM_RUN_LIKE_SRC, .reason = GM_REASON_NO_SCRATCH, .cpu_threads = 1},
          NULL);
    check("no kernels: C host into an F device array is a loop", 2, s68, f, pinned(H0, c8), dev(D0, f8), nok, &t,
          (want){.how = GM_HOW_RECT, .path = GPUMEM_COPY_PATH_DMA_LOOP, .reason = GM_REASON_NO_KERNELS}, NULL);

    /* overlapping device views: through a temporary, reported as its second copy */
    check("d[1:] into d[:-1]", 1, (int64_t[]){255}, f, dev(D0 + 4, c1), dev(D0, c1), none, &t,
          (want){.how = GM_HOW_TEMP, .path = GPUMEM_COPY_PATH_CONTIGUOUS}, NULL);
    check("d[:, ::2] into d[:, 1::2] of the same array", 2, s64, f, dev(D0, cols), dev(D0 + 4, cols), none, &t,
          (want){.how = GM_HOW_TEMP, .path = GPUMEM_COPY_PATH_DEVICE_PACK}, NULL);

    /* two devices */
    gm_copy_caps peer = {.peer = true};
    check("between devices, contiguous", 2, s68, f, dev_on(0, D0, c8), dev_on(1, D0, c8), none, &t,
          (want){.how = GM_HOW_PEER, .path = GPUMEM_COPY_PATH_PEER_STAGED}, &d);
    ok(d.peer_way == GM_PEER_COPY && !d.peer_pack_src && !d.peer_unpack_dst && d.nchunks == 0,
       "one run through the slots, no packing on either device");
    check("the same with peer access", 2, s68, f, dev_on(0, D0, c8), dev_on(1, D0, c8), peer, &t,
          (want){.how = GM_HOW_PEER, .path = GPUMEM_COPY_PATH_PEER}, &d);
    ok(d.peer_way == GM_PEER_COPY && !d.peer_write, "one peer copy");
    check("between devices with peer access, d[:, ::2] to contiguous", 2, s64, f, dev_on(0, D0, cols),
          dev_on(1, D0, c4), peer, &t, (want){.how = GM_HOW_PEER, .path = GPUMEM_COPY_PATH_PEER}, &d);
    ok(d.peer_way == GM_PEER_KERNEL && d.peer_write && d.peer_pack_src && !d.peer_unpack_dst && d.nchunks == 0,
       "one pack kernel on the source's device writes the destination through the peer mapping, no scratch");
    check("the same without scratch", 2, s64, f, dev_on(0, D0, cols), dev_on(1, D0, c4),
          (gm_copy_caps){.peer = true, .no_scratch = true}, &t,
          (want){.how = GM_HOW_PEER, .path = GPUMEM_COPY_PATH_PEER}, &d);
    ok(d.peer_way == GM_PEER_KERNEL, "still one kernel: it needs no scratch");
    check("the same without kernels", 2, s64, f, dev_on(0, D0, cols), dev_on(1, D0, c4),
          (gm_copy_caps){.peer = true, .no_kernels = true}, &t,
          (want){.how = GM_HOW_PEER, .path = GPUMEM_COPY_PATH_PEER, .reason = GM_REASON_NO_KERNELS}, &d);
    ok(d.peer_way == GM_PEER_TEMPS && d.peer_pack_src && d.nchunks == 0, "through a temporary as large as the copy");
    int64_t big2[] = {64, 48}, bc[] = {192, 4}, bf[] = {4, 256};
    check("C (64, 48) into an F array on another device, peer access", 2, big2, f, dev_on(0, D0, bc),
          dev_on(1, D0, bf), peer, &t, (want){.how = GM_HOW_PEER, .path = GPUMEM_COPY_PATH_PEER}, &d);
    ok(d.peer_way == GM_PEER_KERNEL && d.peer_pack_src, "one (tiled) pack kernel writes the F array");
    check("contiguous to d[:, 1::2] on another device, peer access", 2, s64, f, dev_on(0, D0, c4),
          dev_on(1, D0 + 4, cols), peer, &t, (want){.how = GM_HOW_PEER, .path = GPUMEM_COPY_PATH_PEER}, &d);
    ok(d.peer_way == GM_PEER_KERNEL && !d.peer_write && d.peer_read && !d.peer_pack_src && d.peer_unpack_dst &&
           d.nchunks == 0,
       "one unpack kernel on the destination's device reads the source through the peer mapping, no scratch");
    check("the same without scratch", 2, s64, f, dev_on(0, D0, c4), dev_on(1, D0 + 4, cols),
          (gm_copy_caps){.peer = true, .no_scratch = true}, &t,
          (want){.how = GM_HOW_PEER, .path = GPUMEM_COPY_PATH_PEER}, &d);
    ok(d.peer_way == GM_PEER_KERNEL && d.peer_read, "still one kernel: it needs no scratch");
    check("contiguous to d[:, 1::2] on another device, staged", 2, s64, f, dev_on(0, D0, c4),
          dev_on(1, D0 + 4, cols), none, &t, (want){.how = GM_HOW_PEER, .path = GPUMEM_COPY_PATH_PEER_STAGED}, &d);
    ok(d.peer_way == GM_PEER_PIPELINE && !d.peer_read && !d.peer_pack_src && d.peer_unpack_dst && d.nchunks == 1 &&
           d.chunk_bytes == 96 && d.nbufs == 1,
       "no peer mapping: moved through the slots into the destination's scratch, unpacked there: one chunk of 96 bytes");
    check("d[:, ::2] to d2[:, 1::2] on another device, peer access", 2, s64, f, dev_on(0, D0, cols),
          dev_on(1, D0 + 4, cols), peer, &t, (want){.how = GM_HOW_PEER, .path = GPUMEM_COPY_PATH_PEER}, &d);
    ok(d.peer_way == GM_PEER_PIPELINE && d.peer_write && !d.peer_read && d.peer_pack_src && d.peer_unpack_dst &&
           d.nchunks == 1,
       "the source's kernel packs into the destination's scratch, unpacked there");
    check("the same without scratch", 2, s64, f, dev_on(0, D0, cols), dev_on(1, D0 + 4, cols),
          (gm_copy_caps){.peer = true, .no_scratch = true}, &t,
          (want){.how = GM_HOW_PEER, .path = GPUMEM_COPY_PATH_PEER, .reason = GM_REASON_NO_SCRATCH}, &d);
    ok(d.peer_way == GM_PEER_TEMPS && d.peer_pack_src && d.peer_unpack_dst, "through temporaries");
    int64_t wstr[] = {8000, 8};
    check("62.5 MiB of rows into strided rows on another device, peer access", 2, wide, f, dev_on(0, D0, wsrc),
          dev_on(1, D0, wstr), peer, &t, (want){.how = GM_HOW_PEER, .path = GPUMEM_COPY_PATH_PEER}, &d);
    ok(d.peer_way == GM_PEER_PIPELINE && d.peer_write && d.nchunks == 16 && d.chunk_bytes == 1048 * 4000 &&
           d.nbufs == 2 && d.overlap,
       "16 chunks through two buffers of the destination's device, the two devices overlapping");
    {
        gm_copy_tuning ta = t; /* GPUMEM_COPY_SCRATCH_CHUNK unset */
        ta.scratch_chunk = 0;
        check("the same, the scratch chunk unset", 2, wide, f, dev_on(0, D0, wsrc), dev_on(1, D0, wstr), peer, &ta,
              (want){.how = GM_HOW_PEER, .path = GPUMEM_COPY_PATH_PEER}, &d);
        ok(d.peer_way == GM_PEER_PIPELINE && d.nchunks == 4 && d.chunk_bytes == 4096 * 4000 && d.nbufs == 2,
           "buffers of a quarter of the copy (15.6 MiB: 4096 rows), 4 chunks (got %llu of %llu bytes)",
           (unsigned long long)d.nchunks, (unsigned long long)d.chunk_bytes);
        int64_t huge[] = {262144, 1000}; /* 1000 MiB */
        check("1000 MiB, the scratch chunk unset", 2, huge, f, dev_on(0, D0, wsrc), dev_on(1, D0, wstr), peer, &ta,
              (want){.how = GM_HOW_PEER, .path = GPUMEM_COPY_PATH_PEER}, &d);
        ok(d.chunk_bytes <= 64 * MiB && d.chunk_bytes > 60 * MiB && d.nchunks == 16,
           "buffers of at most 64 MiB between devices (got %llu chunks of %llu bytes)",
           (unsigned long long)d.nchunks, (unsigned long long)d.chunk_bytes);
        int64_t small[] = {256, 1000}; /* 1000 KiB */
        check("1000 KiB, the scratch chunk unset", 2, small, f, dev_on(0, D0, wsrc), dev_on(1, D0, wstr), peer, &ta,
              (want){.how = GM_HOW_PEER, .path = GPUMEM_COPY_PATH_PEER}, &d);
        ok(d.nchunks == 1, "a small copy: one chunk of at most 4 MiB");
        check("the same staged, the scratch chunk unset", 2, wide, f, dev_on(0, D0, wsrc), dev_on(1, D0, wstr), none,
              &ta, (want){.how = GM_HOW_PEER, .path = GPUMEM_COPY_PATH_PEER_STAGED}, &d);
        ok(d.chunk_bytes == 1048 * 4000 && d.nchunks == 16, "staged: 4 MiB, as before");
    }
    check("the same staged", 2, wide, f, dev_on(0, D0, wsrc), dev_on(1, D0, wstr), none, &t,
          (want){.how = GM_HOW_PEER, .path = GPUMEM_COPY_PATH_PEER_STAGED}, &d);
    ok(d.peer_way == GM_PEER_PIPELINE && !d.peer_write && d.peer_pack_src && d.peer_unpack_dst && d.nchunks == 16 &&
           d.chunk_bytes == 1048 * 4000 && d.nbufs == 1 && d.overlap,
       "packed and unpacked on each device through one buffer each, 16 chunks through the slots");
    check("staged, d[:, ::2] to contiguous", 2, s64, f, dev_on(0, D0, cols), dev_on(1, D0, c4), none, &t,
          (want){.how = GM_HOW_PEER, .path = GPUMEM_COPY_PATH_PEER_STAGED}, &d);
    ok(d.peer_way == GM_PEER_PIPELINE && !d.peer_write && d.peer_pack_src && !d.peer_unpack_dst && d.nchunks == 1,
       "no peer mapping: packed into scratch on the source's device");
    check("the same without scratch", 2, s64, f, dev_on(0, D0, cols), dev_on(1, D0, c4),
          (gm_copy_caps){.no_scratch = true}, &t,
          (want){.how = GM_HOW_PEER, .path = GPUMEM_COPY_PATH_PEER_STAGED, .reason = GM_REASON_NO_SCRATCH}, &d);
    ok(d.peer_way == GM_PEER_TEMPS, "through a temporary");

    /* bad settings fail the copies that need them, and only those */
    gm_copy_tuning bad = t;
    bad.bad = GM_TUNE_BAD_MIN_ROW;
    check("a bad GPUMEM_COPY_MIN_ROW_BYTES fails a device copy", 2, s68, f, dev(D0, c8), pinned(H0, c8), none, &bad,
          (want){.how = GM_HOW_FAIL, .path = GPUMEM_COPY_PATH_NONE, .bad = GM_TUNE_BAD_MIN_ROW}, NULL);
    check("but not a host copy", 2, s68, f, paged(H0, c8), paged(H0 + 4096, c8), none, &bad,
          (want){.how = GM_HOW_HOST, .path = GPUMEM_COPY_PATH_HOST}, NULL);
    bad.bad = GM_TUNE_BAD_STAGING;
    check("a bad staging setting fails a pageable transfer", 1, big, f, paged(H0, big_s), dev(D0, big_s), none, &bad,
          (want){.how = GM_HOW_FAIL, .path = GPUMEM_COPY_PATH_NONE, .bad = GM_TUNE_BAD_STAGING}, NULL);
    check("but not a pinned one", 1, big, f, pinned(H0, big_s), dev(D0, big_s), none, &bad,
          (want){.how = GM_HOW_TRANSFER, .path = GPUMEM_COPY_PATH_CONTIGUOUS}, NULL);
    check("and a strided host side, which the staging engine packs", 2, s64, f, pinned(H0, cols), dev(D0, c4), none,
          &bad, (want){.how = GM_HOW_FAIL, .path = GPUMEM_COPY_PATH_NONE, .bad = GM_TUNE_BAD_STAGING}, NULL);
    bad.bad = GM_TUNE_BAD_SCRATCH;
    check("a bad GPUMEM_COPY_SCRATCH_CHUNK fails a copy through scratch", 2, s64, f, dev(D0, cols), pinned(H0, c4),
          none, &bad, (want){.how = GM_HOW_FAIL, .path = GPUMEM_COPY_PATH_NONE, .bad = GM_TUNE_BAD_SCRATCH}, NULL);
    check("but not one kernel", 2, s64, f, dev(D0, cols), dev(D0 + 4096, c4), none, &bad,
          (want){.how = GM_HOW_KERNEL, .path = GPUMEM_COPY_PATH_DEVICE_PACK}, NULL);
    check("not one kernel between devices", 2, s64, f, dev_on(0, D0, cols), dev_on(1, D0, c4), peer, &bad,
          (want){.how = GM_HOW_PEER, .path = GPUMEM_COPY_PATH_PEER}, NULL);
    check("but chunks between devices", 2, s64, f, dev_on(0, D0, cols), dev_on(1, D0 + 4, cols), peer, &bad,
          (want){.how = GM_HOW_FAIL, .path = GPUMEM_COPY_PATH_NONE, .bad = GM_TUNE_BAD_SCRATCH}, NULL);
    bad.bad = GM_TUNE_BAD_STAGING;
    check("a bad staging setting fails a staged copy between devices", 2, s68, f, dev_on(0, D0, c8),
          dev_on(1, D0, c8), none, &bad,
          (want){.how = GM_HOW_FAIL, .path = GPUMEM_COPY_PATH_NONE, .bad = GM_TUNE_BAD_STAGING}, NULL);
    check("but not one with peer access", 2, s68, f, dev_on(0, D0, c8), dev_on(1, D0, c8), peer, &bad,
          (want){.how = GM_HOW_PEER, .path = GPUMEM_COPY_PATH_PEER}, NULL);
    bad.bad = GM_TUNE_BAD_PEER;
    check("a bad GPUMEM_PEER fails a copy between devices", 2, s68, f, dev_on(0, D0, c8), dev_on(1, D0, c8), none,
          &bad, (want){.how = GM_HOW_FAIL, .path = GPUMEM_COPY_PATH_NONE, .bad = GM_TUNE_BAD_PEER}, NULL);
    int64_t neg[] = {0, 4};
    check("a broadcast destination fails in the planner", 2, s64, f, dev(D0, c4), dev(D0 + 4096, neg), none, &t,
          (want){.how = GM_HOW_FAIL, .path = GPUMEM_COPY_PATH_NONE, .bad = 0}, &d);
    is_int(d.status, GPUMEM_ERROR_INVALID_VALUE, "with the planner's status");

    /* CPU threads: a big strided host side */
    int64_t hbig[] = {4096, 4096}, hcols[] = {32768, 8}, hc[] = {16384, 4};
    check("64 MiB of h[:, ::2] packed by the staging engine's 8 threads", 2, hbig, f, paged(H0, hcols), dev(D0, hc),
          none, &t,
          (want){.how = GM_HOW_PACKED, .path = GPUMEM_COPY_PATH_CPU_PACK, .src_op = GM_OP_CPU,
                 .dst_op = GM_OP_DIRECT, .run = GM_RUN_DST, .staged = true, .cpu_threads = 8},
          NULL);
    gm_copy_tuning t2 = t;
    t2.staging.threads = 2;
    check("or by the 2 its settings allow", 2, hbig, f, paged(H0, hcols), dev(D0, hc), none, &t2,
          (want){.how = GM_HOW_PACKED, .path = GPUMEM_COPY_PATH_CPU_PACK, .src_op = GM_OP_CPU,
                 .dst_op = GM_OP_DIRECT, .run = GM_RUN_DST, .staged = true, .cpu_threads = 2},
          NULL);

    /* chunks: a 3-D slab whose planes exceed the chunk */
    int64_t slab[] = {2, 3000, 1000}, sl_src[] = {24000000, 8000, 8}, sl_dst[] = {12000000, 4000, 4};
    check("d[:, :, ::2] of 2 x 3000 x 1000 float32 into pinned memory", 3, slab, f, dev(D0, sl_src),
          pinned(H0, sl_dst), none, &t,
          (want){.how = GM_HOW_PACKED, .path = GPUMEM_COPY_PATH_DEVICE_PACK, .src_op = GM_OP_KERNEL,
                 .dst_op = GM_OP_DIRECT, .run = GM_RUN_DST, .overlap = true, .nchunks = 6, .chunk_bytes = 4192000},
          &d);
    int64_t start[3], ext[3];
    uint64_t off = 0, n = 0;
    gm_copy_chunk(&d, 3, slab, f, sl_dst, 4, start, ext, &off, &n);
    ok(start[0] == 1 && start[1] == 1048 && start[2] == 0 && ext[0] == 1 && ext[1] == 1048 && ext[2] == 1000 &&
           off == 12000000 + 1048 * 4000 && n == 1048 * 4000,
       "chunk 4: plane 1, rows 1048..2095");
    gm_copy_chunk(&d, 3, slab, f, sl_dst, 5, start, ext, &off, &n);
    ok(start[0] == 1 && start[1] == 2096 && ext[1] == 904 && off == 12000000 + 2096 * 4000 && n == 904 * 4000,
       "chunk 5: the last 904 rows");
    /* a reversed run counts in memory order */
    int64_t rev_dst[] = {-12000000, 4000, 4};
    check("the same into a destination whose planes are reversed", 3, slab, f, dev(D0, sl_src),
          pinned(H0 + 12000000, rev_dst), none, &t,
          (want){.how = GM_HOW_PACKED, .path = GPUMEM_COPY_PATH_DEVICE_PACK, .src_op = GM_OP_KERNEL,
                 .dst_op = GM_OP_DIRECT, .run = GM_RUN_DST, .overlap = true, .nchunks = 6},
          &d);
    gm_copy_chunk(&d, 3, slab, f, rev_dst, 0, start, ext, &off, &n);
    ok(start[0] == 1 && start[1] == 0 && off == 0, "chunk 0 is in plane 1, the lowest in memory");
    t2 = t;
    t2.scratch_chunk = 64 * 1024;
    check("a 64 KiB scratch chunk: device to device in chunks on one stream", 2, (int64_t[]){256, 256}, f,
          dev(D0, (int64_t[]){2048, 8}), dev(D0 + 8 * MiB, (int64_t[]){8, 4096}), none, &t2,
          (want){.how = GM_HOW_PACKED, .path = GPUMEM_COPY_PATH_DEVICE_PACK, .src_op = GM_OP_KERNEL,
                 .dst_op = GM_OP_KERNEL, .run = GM_RUN_LIKE_DST, .nchunks = 4, .chunk_bytes = 65536},
          NULL);
}

/* ---- chunks tile their run ---- */

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static uint64_t rnd(uint64_t n)
{
    return xorshift64(&rng) % n;
}

static void test_tiling(void)
{
    int bad = 0;
    gm_copy_tuning t = tuning();
    for (int iter = 0; iter < 500 && bad < 5; iter++) {
        int nd = 1 + (int)rnd(4);
        int64_t shape[4], like[4], rs[4];
        size_t isz = (size_t)1 << rnd(4);
        int64_t total = 1;
        for (int i = 0; i < nd; i++) {
            shape[i] = 1 + (int64_t)rnd(9);
            total *= shape[i];
        }
        /* a dense run: contiguous in a random axis order, axes possibly reversed */
        int perm[4] = {0, 1, 2, 3};
        for (int i = nd - 1; i > 0; i--) {
            int j = (int)rnd((uint64_t)i + 1), x = perm[i];
            perm[i] = perm[j];
            perm[j] = x;
        }
        int64_t s = (int64_t)isz;
        for (int i = nd - 1; i >= 0; i--) {
            like[perm[i]] = s;
            s *= shape[perm[i]];
        }
        int64_t lo = 0;
        for (int i = 0; i < nd; i++) {
            rs[i] = rnd(3) == 0 ? -like[i] : like[i];
            if (rs[i] < 0)
                lo += (shape[i] - 1) * rs[i];
        }
        gm_copy_decision d;
        memset(&d, 0, sizeof d);
        uint64_t bytes = (uint64_t)total * isz;
        t.scratch_chunk = isz * (1 + rnd((uint64_t)total));
        gm_copy_side src = {GM_COPY_MEM_DEVICE, 0, D0, rs, false}, dst = {GM_COPY_MEM_LOCKED, -1, H0, rs, false};
        /* a strided source so that it packs: twice the run's strides */
        int64_t ss[4];
        for (int i = 0; i < nd; i++)
            ss[i] = 2 * rs[i];
        src.strides = ss;
        gm_copy_caps caps = {0};
        gm_copy_decide(nd, shape, isz, &src, &dst, &caps, &t, &d);
        if (d.how != GM_HOW_PACKED || d.run != GM_RUN_DST) {
            if (total > 1 || d.how == GM_HOW_FAIL) {
                ok(d.how != GM_HOW_FAIL, "case %d decided", iter);
            }
            continue;
        }
        /* every element once; chunks in order, each one run */
        unsigned char *seen = calloc((size_t)total, 1);
        uint64_t next = 0;
        bool good = d.chunk_bytes <= (t.scratch_chunk > isz ? t.scratch_chunk : isz) || d.nchunks == 1;
        for (uint64_t c = 0; good && c < d.nchunks; c++) {
            int64_t st[4], ex[4];
            uint64_t off, n;
            gm_copy_chunk(&d, nd, shape, isz, rs, c, st, ex, &off, &n);
            good = off == next && n <= d.chunk_bytes && n > 0;
            next = off + n;
            int64_t cnt = 1, idx[4] = {0};
            for (int i = 0; i < nd; i++)
                cnt *= ex[i];
            good = good && (uint64_t)cnt * isz == n;
            for (int64_t e = 0; good && e < cnt; e++) {
                int64_t r = e, lin = 0, addr = 0;
                for (int i = nd - 1; i >= 0; i--) {
                    idx[i] = st[i] + r % ex[i];
                    r /= ex[i];
                }
                for (int i = 0; i < nd; i++) {
                    lin = lin * shape[i] + idx[i];
                    addr += idx[i] * rs[i];
                }
                /* the element lies in the chunk's bytes */
                uint64_t b = (uint64_t)(addr - lo);
                good = b >= off && b + isz <= off + n && !seen[lin];
                seen[lin] = 1;
            }
        }
        good = good && next == bytes;
        for (int64_t e = 0; good && e < total; e++)
            good = seen[e];
        free(seen);
        if (!good) {
            bad++;
            ok(0, "case %d: %d axes, item %zu, chunk %zu: the chunks do not tile the run", iter, nd, isz,
               t.scratch_chunk);
        }
    }
    ok(bad == 0, "the chunks of 500 random runs tile them, in order, every element once");
}

/* ---- the capabilities, asked as the rules reach them ------------------------------------------- */

/* A probe that records what the decision asks and answers from a table. */
typedef struct asked {
    int n;
    gm_copy_need need[8];
    int side[8];
    uint64_t bytes[8];
    bool two[8];
    bool no[4];            /* per need: not had */
    gm_copy_need fail_on;  /* a need that fails with GPUMEM_ERROR_INVALID_VALUE (fail: true) */
    bool fail;
} asked;

static gpumem_status record_ask(void *arg, gm_copy_need need, int side, uint64_t bytes, bool two, bool *have)
{
    asked *a = arg;
    if (a->n < 8) {
        a->need[a->n] = need;
        a->side[a->n] = side;
        a->bytes[a->n] = bytes;
        a->two[a->n] = two;
    }
    a->n++;
    *have = !a->no[need];
    return a->fail && need == a->fail_on ? GPUMEM_ERROR_INVALID_VALUE : GPUMEM_OK;
}

static gm_copy_decision decide_asking(asked *a, int ndim, const int64_t *shape, gm_copy_side src, gm_copy_side dst,
                                      bool peer)
{
    gm_copy_tuning t = tuning();
    gm_copy_probe probe = {record_ask, a};
    gm_copy_caps caps = {.probe = &probe, .peer = peer};
    gm_copy_decision d;
    gm_copy_decide(ndim, shape, 4, &src, &dst, &caps, &t, &d);
    return d;
}

static void test_probe(void)
{
    int64_t wide[] = {16384, 1000}, wsrc[] = {4096, 4}, wdst[] = {4000, 4}, c8[] = {32, 4};
    int64_t s64[] = {6, 4}, cols[] = {32, 8};

    asked a = {0};
    gm_copy_decision d = decide_asking(&a, 2, (int64_t[]){6, 8}, dev(D0, c8), pinned(H0, c8), false);
    ok(d.how == GM_HOW_TRANSFER && a.n == 0, "a contiguous pinned download asks for nothing");

    a = (asked){0};
    d = decide_asking(&a, 2, wide, dev(D0, wsrc), paged(H0, wdst), false);
    ok(d.how == GM_HOW_PACKED && d.staged && d.nchunks == 2 && a.n == 3 && a.need[0] == GM_NEED_KERNELS &&
           a.side[0] == 0 && a.need[1] == GM_NEED_STAGING && a.need[2] == GM_NEED_WINDOW &&
           a.bytes[2] == 2ull * 8388 * 4000 && a.two[2],
       "a staged strided download asks for the kernels, the staging engine, then the window's two buffers");

    a = (asked){.no = {[GM_NEED_WINDOW] = true}};
    d = decide_asking(&a, 2, wide, dev(D0, wsrc), paged(H0, wdst), false);
    ok(d.how == GM_HOW_PACKED && d.reason == GM_REASON_SMALL_SCRATCH && d.nchunks == 16 && a.n == 4 &&
           a.need[3] == GM_NEED_SCRATCH && a.bytes[3] == 2ull * 1048 * 4000 && a.two[3],
       "without the window: buffers of the scratch chunk, asked for next, in the one decision");

    a = (asked){.no = {[GM_NEED_WINDOW] = true, [GM_NEED_SCRATCH] = true}};
    d = decide_asking(&a, 2, wide, dev(D0, wsrc), paged(H0, wdst), false);
    ok(d.how == GM_HOW_RECT && d.path == GPUMEM_COPY_PATH_DMA && d.reason == GM_REASON_NO_SCRATCH && !d.staged &&
           d.nchunks == 0 && a.n == 4,
       "without any scratch: one 2-D copy, decided at once (no scratch, no chunks, not staged)");

    a = (asked){.no = {[GM_NEED_KERNELS] = true}};
    d = decide_asking(&a, 2, s64, dev(D0, cols), pinned(H0, (int64_t[]){16, 4}), false);
    ok(d.how == GM_HOW_RECT && d.reason == GM_REASON_NO_KERNELS && a.n == 1 && a.need[0] == GM_NEED_KERNELS,
       "kernels that cannot be loaded: asked once, the rectangular copies instead");

    a = (asked){.fail = true, .fail_on = GM_NEED_KERNELS};
    d = decide_asking(&a, 2, s64, dev(D0, cols), pinned(H0, (int64_t[]){16, 4}), false);
    ok(d.how == GM_HOW_FAIL && d.probe_failed && d.status == GPUMEM_ERROR_INVALID_VALUE && a.n == 1,
       "a probe that fails fails the decision with its status");

    a = (asked){0};
    d = decide_asking(&a, 2, s64, dev_on(0, D0, cols), dev_on(1, D0 + 4, cols), true);
    ok(d.how == GM_HOW_PEER && d.peer_way == GM_PEER_PIPELINE && a.n == 4 && a.need[0] == GM_NEED_KERNELS &&
           a.side[0] == 0 && a.need[1] == GM_NEED_KERNELS && a.side[1] == 1 && a.need[2] == GM_NEED_SCRATCH &&
           a.side[2] == 0 && a.bytes[2] == 1 && a.need[3] == GM_NEED_SCRATCH && a.side[3] == 1 &&
           a.bytes[3] == d.chunk_bytes * (uint64_t)d.nbufs,
       "both sides strided between two devices: both devices' kernels, the source's stream, the destination's buffers");

    a = (asked){.no = {[GM_NEED_SCRATCH] = true}};
    d = decide_asking(&a, 2, s64, dev_on(0, D0, cols), dev_on(1, D0 + 4, cols), true);
    ok(d.how == GM_HOW_PEER && d.peer_way == GM_PEER_TEMPS && d.reason == GM_REASON_NO_SCRATCH && d.nchunks == 0 &&
           d.peer_pack_src && d.peer_unpack_dst,
       "the same without scratch: through temporaries");

    a = (asked){0};
    d = decide_asking(&a, 1, (int64_t[]){1024}, dev(D0, (int64_t[]){8}), dev(D0 + 4, (int64_t[]){8}), false);
    ok(d.how == GM_HOW_TEMP && a.n == 2 && a.need[0] == GM_NEED_KERNELS && a.need[1] == GM_NEED_KERNELS &&
           d.nsteps == 2 && d.steps[0].kind == GM_STEP_PACK && d.steps[1].kind == GM_STEP_UNPACK,
       "overlapping strided device views: each copy through the temporary asks for the kernels it runs");
}

/* ---- the plans' steps ------------------------------------------------------------------------------ */

static const char *step_name(gm_step_kind k)
{
    static const char *const n[] = {"?",      "host",       "copy", "rect",   "staged", "pack",
                                    "unpack", "cpu-pack", "cpu-unpack", "peer", "nested", "land"};
    return (unsigned)k < sizeof n / sizeof *n ? n[k] : "?";
}

/* Whether the plan of src -> dst is the n steps given (kind, from, to, chunked). */
static void plan_is(const char *name, int ndim, const int64_t *shape, gm_copy_side src, gm_copy_side dst,
                    gm_copy_caps caps, int n, const gm_copy_step *steps)
{
    gm_copy_tuning t = tuning();
    gm_copy_decision d;
    gm_copy_decide(ndim, shape, 4, &src, &dst, &caps, &t, &d);
    bool good = d.nsteps == n;
    for (int i = 0; good && i < n; i++)
        good = d.steps[i].kind == steps[i].kind && d.steps[i].from == steps[i].from && d.steps[i].to == steps[i].to &&
               d.steps[i].chunked == steps[i].chunked;
    ok(good, "the plan of %s: %d steps", name, n);
    if (!good)
        for (int i = 0; i < d.nsteps; i++)
            diag("step %d: %s %d -> %d%s", i, step_name(d.steps[i].kind), d.steps[i].from, d.steps[i].to,
                 d.steps[i].chunked ? " chunked" : "");
}

#define STEP(k, f, t) {GM_STEP_##k, GM_BUF_##f, GM_BUF_##t, false}
#define CHUNKED(k, f, t) {GM_STEP_##k, GM_BUF_##f, GM_BUF_##t, true}

static void test_plans(void)
{
    int64_t s64[] = {6, 4}, cols[] = {32, 8}, c4[] = {16, 4}, c1[] = {4}, s68[] = {6, 8}, c8[] = {32, 4};
    int64_t wide[] = {16384, 1000}, wsrc[] = {4096, 4}, wdst[] = {4000, 4};
    gm_copy_caps none = {0}, stream = {.on_stream = true}, nok = {.no_kernels = true};
    gm_copy_caps peer_nos = {.peer = true, .no_scratch = true};

    plan_is("a contiguous pinned download", 2, s68, dev(D0, c8), pinned(H0, c8), none, 1,
            (gm_copy_step[]){STEP(COPY, SRC, DST)});
    plan_is("a 64 MiB pageable upload", 1, (int64_t[]){16 * (int64_t)MiB}, paged(H0, c1), dev(D0, c1), none, 1,
            (gm_copy_step[]){STEP(STAGED, SRC, DST)});
    plan_is("a queued pageable download of d[:, ::2]", 2, s64, dev(D0, cols), paged(H0, c4), stream, 2,
            (gm_copy_step[]){STEP(NESTED, SRC, BOUNCE), STEP(LAND, BOUNCE, DST)});
    plan_is("overlapping device views d[1:] into d[:-1]", 1, (int64_t[]){255}, dev(D0 + 4, c1), dev(D0, c1), none, 2,
            (gm_copy_step[]){STEP(RECT, SRC, TEMP), STEP(RECT, TEMP, DST)});
    plan_is("d[:, ::2] into d[:, 1::2] of the same array", 2, s64, dev(D0, cols), dev(D0 + 4, cols), none, 2,
            (gm_copy_step[]){STEP(PACK, SRC, TEMP), STEP(UNPACK, TEMP, DST)});
    plan_is("a strided host upload h[:, ::2] into a dense device array", 2, s64, paged(H0, cols), dev(D0, c4), none,
            2, (gm_copy_step[]){STEP(CPU_PACK, SRC, SLOTS), STEP(STAGED, SLOTS, DST)});
    plan_is("h[:, ::2] into d[:, 1::2]", 2, s64, paged(H0, cols), dev(D0 + 4, cols), none, 3,
            (gm_copy_step[]){CHUNKED(CPU_PACK, SRC, SLOTS), CHUNKED(STAGED, SLOTS, SCRATCH),
                             CHUNKED(UNPACK, SCRATCH, DST)});
    plan_is("62.5 MiB of d's 4000-byte rows into pageable memory", 2, wide, dev(D0, wsrc), paged(H0, wdst), none, 2,
            (gm_copy_step[]){CHUNKED(PACK, SRC, SCRATCH), CHUNKED(STAGED, SCRATCH, DST)});
    plan_is("d[:, ::2] into a contiguous pinned array", 2, s64, dev(D0, cols), pinned(H0, c4), none, 2,
            (gm_copy_step[]){CHUNKED(PACK, SRC, SCRATCH), CHUNKED(COPY, SCRATCH, DST)});
    plan_is("d[:, ::2] into d2[:, 1::2]", 2, s64, dev(D0, cols), dev(D0 + 4096, cols), none, 2,
            (gm_copy_step[]){CHUNKED(PACK, SRC, SCRATCH), CHUNKED(UNPACK, SCRATCH, DST)});
    plan_is("d[:, ::2] into a contiguous device array", 2, s64, dev(D0, cols), dev(D0 + 4096, c4), none, 1,
            (gm_copy_step[]){STEP(PACK, SRC, DST)});
    plan_is("without kernels, h[:, ::2] into d[:, 1::2]", 2, s64, paged(H0, cols), dev(D0 + 4, cols), nok, 2,
            (gm_copy_step[]){STEP(CPU_PACK, SRC, HOST_RUN), STEP(RECT, HOST_RUN, DST)});
    plan_is("without kernels, d[:, ::2] to a contiguous host array", 2, s64, dev(D0, cols), pinned(H0, c4), nok, 1,
            (gm_copy_step[]){STEP(RECT, SRC, DST)});
    plan_is("between devices without scratch, both strided", 2, s64, dev_on(0, D0, cols), dev_on(1, D0 + 4, cols),
            peer_nos, 3, (gm_copy_step[]){STEP(PACK, SRC, TEMP), STEP(PEER, TEMP, TEMP), STEP(UNPACK, TEMP, DST)});
    plan_is("between devices without kernels, both strided", 2, s64, dev_on(0, D0, cols), dev_on(1, D0 + 4, cols),
            (gm_copy_caps){.peer = true, .no_kernels = true}, 3,
            (gm_copy_step[]){STEP(RECT, SRC, TEMP), STEP(PEER, TEMP, TEMP), STEP(RECT, TEMP, DST)});
    plan_is("between devices without kernels, a strided source into a dense destination", 2, s64,
            dev_on(0, D0, cols), dev_on(1, D0, c4), (gm_copy_caps){.no_kernels = true}, 2,
            (gm_copy_step[]){STEP(RECT, SRC, TEMP), STEP(PEER, TEMP, DST)});
    plan_is("host to host", 2, s68, paged(H0, c8), pinned(H0 + 4096, c8), none, 1,
            (gm_copy_step[]){STEP(HOST, SRC, DST)});
    plan_is("an empty copy", 2, (int64_t[]){0, 4}, dev(D0, c4), pinned(H0, c4), none, 0, NULL);
}

int main(void)
{
    test_table();
    test_plans();
    test_tiling();
    test_probe();
    done_testing();
    return exit_status();
}
