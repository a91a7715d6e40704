/*
 * cmd-bench-strided.c - gpumem bench's strided rows (strided and
 * transposed copies against the contiguous copy of the same bytes, a
 * strided host side against the host's ceiling of its useful bytes) and
 * --rows (2-D copies against the row width); cmd-bench.c says what each
 * case is.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gpumem.h>

#include "cmd-bench-run.h"

/* A 2-D driver baseline: rows of `width` bytes at the two pitches. */
static drv_case base2d(uint64_t dst, int dst_dev, size_t dpitch, uint64_t src, int src_dev, size_t spitch,
                       size_t width, size_t height)
{
    drv_case c = {0};
    c.two_d = 1;
    c.m.srcMemoryType = src_dev ? 2 : 1; /* CU_MEMORYTYPE_DEVICE, _HOST */
    c.m.dstMemoryType = dst_dev ? 2 : 1;
    if (src_dev)
        c.m.srcDevice = src;
    else
        c.m.srcHost = (const void *)(uintptr_t)src;
    if (dst_dev)
        c.m.dstDevice = dst;
    else
        c.m.dstHost = (void *)(uintptr_t)dst;
    c.m.srcPitch = spitch;
    c.m.dstPitch = dpitch;
    c.m.WidthInBytes = width;
    c.m.Height = height;
    return c;
}

/* The strided cases, each against the contiguous copy of the same memory
 * kind, direction and useful bytes (pct of contiguous), pinned first so
 * that a pageable case is judged against its pinned twin too. */
enum { S_D2H, S_D2H_D2, S_H2D, S_H2D_D2, S_D2H_1D, S_D2H_SLAB, S_H2D_T, S_H2D_HH, S_D2H_HH, S_H2D_H, S_D2H_H,
       S_CASES };

int bench_strided(bench *b)
{
    const gpumem_dtype *f32 = gpumem_dtype_builtin(GPUMEM_FLOAT32);
    int64_t rows = b->quick ? 64 : 2048, cols = b->quick ? 1024 : 8192; /* useful: rows x cols float32 */
    uint64_t useful = (uint64_t)(rows * cols * 4);
    double ref[S_CASES] = {0};
    int rc = 0;
    for (int pinned = 1; pinned >= 0 && !rc; pinned--) {
        const char *kind = pinned ? "pinned" : "pageable";
        char name[96];
        void *mem = NULL, *wmem = NULL;
        gpumem_array *hb = NULL, *hw = NULL, *h = NULL, *d = NULL, *dc = NULL;
        gpumem_status st = bench_host_alloc(b, pinned, (int64_t)useful, &mem, &hb);
        if (st == GPUMEM_OK)
            st = bench_host_alloc(b, pinned, 2 * (int64_t)useful, &wmem, &hw);
        if (st != GPUMEM_OK) {
            gpumem_array_release(hb);
            free(mem);
            if (!bench_oom(st)) {
                bench_error("", "%s", gpumem_last_error());
                return 1;
            }
            snprintf(name, sizeof name, "skipped: the strided %s rows: %s", kind, gpumem_last_error());
            bench_comment(b, name);
            continue;
        }
        gpumem_array_view(hb, f32, &h);
        gpumem_array *h2 = NULL, *hwf = NULL, *hw2 = NULL, *hwv = NULL;
        gpumem_array_reshape(h, 2, (int64_t[]){rows, cols}, 'C', GPUMEM_NO_COPY, NULL, &h2);
        gpumem_array_view(hw, f32, &hwf);
        gpumem_array_reshape(hwf, 2, (int64_t[]){rows, 2 * cols}, 'C', GPUMEM_NO_COPY, NULL, &hw2);
        gpumem_device_array(b->ctx, 2, (int64_t[]){rows, 2 * cols}, NULL, f32, 'C', NULL, &d);
        gpumem_device_array(b->ctx, 2, (int64_t[]){rows, cols}, NULL, f32, 'C', NULL, &dc);
        gpumem_slice sl[2] = {GPUMEM_SLICE_ALL, {0, GPUMEM_SLICE_DEFAULT, 2}};
        gpumem_array *dv = NULL;
        gpumem_array_slice(d, sl, 2, &dv);
        gpumem_array_slice(hw2, sl, 2, &hwv);
        if (h2 == NULL || dv == NULL || dc == NULL || hwv == NULL) {
            bench_error("", "%s", gpumem_last_error());
            rc = 1;
        }
        double got[S_CASES] = {0};
/* a strided host side is judged against the host's ceiling of its useful bytes */
#define HOST_STRIDED(c) ((c) == S_H2D_H || (c) == S_D2H_H || (c) == S_H2D_HH || (c) == S_D2H_HH)
#define CEILING(c, dir)                                                                                          \
    (HOST_STRIDED(c) ? ((dir) > 0 ? BENCH_H2D_STRIDED : BENCH_D2H_STRIDED) : (dir) > 0 ? BENCH_H2D : BENCH_D2H)
#define CASE(c, dst, src, bytes, base, dir)                                                                      \
    (rc = rc || bench_measure_vs(b, "strided", name, dst, src, bytes, base, pinned ? -1 : ref[c], CEILING(c, dir), \
                                 &got[c], (c) == S_D2H || (c) == S_H2D ? 0 : got[(dir) > 0 ? S_H2D : S_D2H]))
        drv_case up = {bench_addr(dc, 1), bench_addr(h2, 0), (size_t)useful, {0}, 0};
        drv_case down = {bench_addr(h2, 0), bench_addr(dc, 1), (size_t)useful, {0}, 0};
        snprintf(name, sizeof name, "d2h contiguous %s", kind);
        CASE(S_D2H, h2, dc, useful, &down, -1);
        snprintf(name, sizeof name, "h2d contiguous %s", kind);
        CASE(S_H2D, dc, h2, useful, &up, 1);
        snprintf(name, sizeof name, "d2h d[:, ::2] %s", kind);
        drv_case s2 = base2d(bench_addr(h2, 0), 0, 4, bench_addr(dv, 1), 1, 8, 4, (size_t)(rows * cols));
        CASE(S_D2H_D2, h2, dv, useful, &s2, -1);
        snprintf(name, sizeof name, "h2d d[:, ::2] %s", kind);
        drv_case s3 = base2d(bench_addr(dv, 1), 1, 8, bench_addr(h2, 0), 0, 4, 4, (size_t)(rows * cols));
        CASE(S_H2D_D2, dv, h2, useful, &s3, 1);
        /* the host side strided: h[:, ::2], into a contiguous device array and into d[:, ::2] */
        snprintf(name, sizeof name, "h2d h[:, ::2] %s", kind);
        drv_case s4 = base2d(bench_addr(dc, 1), 1, 4, bench_addr(hwv, 0), 0, 8, 4, (size_t)(rows * cols));
        CASE(S_H2D_H, dc, hwv, useful, &s4, 1);
        snprintf(name, sizeof name, "d2h h[:, ::2] %s", kind);
        drv_case s5 = base2d(bench_addr(hwv, 0), 0, 8, bench_addr(dc, 1), 1, 4, 4, (size_t)(rows * cols));
        CASE(S_D2H_H, hwv, dc, useful, &s5, -1);
        snprintf(name, sizeof name, "h2d h[:, ::2] -> d[:, ::2] %s", kind);
        drv_case s6 = base2d(bench_addr(dv, 1), 1, 8, bench_addr(hwv, 0), 0, 8, 4, (size_t)(rows * cols));
        CASE(S_H2D_HH, dv, hwv, useful, &s6, 1);
        snprintf(name, sizeof name, "d2h d[:, ::2] -> h[:, ::2] %s", kind);
        drv_case s7 = base2d(bench_addr(hwv, 0), 0, 8, bench_addr(dv, 1), 1, 8, 4, (size_t)(rows * cols));
        CASE(S_D2H_HH, hwv, dv, useful, &s7, -1);
        /* [::2] of a 1-D array */
        gpumem_array *d1 = NULL, *d1v = NULL, *h1 = NULL;
        gpumem_array_reshape(d, 1, (int64_t[]){rows * 2 * cols}, 'C', GPUMEM_NO_COPY, NULL, &d1);
        gpumem_array_slice(d1, (gpumem_slice[]){{0, GPUMEM_SLICE_DEFAULT, 2}}, 1, &d1v);
        gpumem_array_reshape(h, 1, (int64_t[]){rows * cols}, 'C', GPUMEM_NO_COPY, NULL, &h1);
        snprintf(name, sizeof name, "d2h d[::2] %s", kind);
        CASE(S_D2H_1D, h1, d1v, useful, &s2, -1);
        /* a 3-D slab: the inner 16 of every 32 x 32 x 32 block... */
        int64_t n0 = rows * cols / 1024, e = 32;
        gpumem_array *d3 = NULL, *d3v = NULL, *h3 = NULL;
        gpumem_device_array(b->ctx, 3, (int64_t[]){n0, e + 16, e + 16}, NULL, f32, 'C', NULL, &d3);
        gpumem_slice s3d[3] = {GPUMEM_SLICE_ALL, {8, 8 + e, 1}, {8, 8 + e, 1}};
        gpumem_array_slice(d3, s3d, 3, &d3v);
        gpumem_array_reshape(h, 3, (int64_t[]){n0, e, e}, 'C', GPUMEM_NO_COPY, NULL, &h3);
        snprintf(name, sizeof name, "d2h 3-D slab %s", kind);
        if (d3v != NULL && h3 != NULL)
            CASE(S_D2H_SLAB, h3, d3v, (uint64_t)(n0 * e * e * 4), NULL, -1);
        /* transposed: a C host array into an F device array */
        gpumem_array *df = NULL;
        gpumem_device_array(b->ctx, 2, (int64_t[]){rows, cols}, NULL, f32, 'F', NULL, &df);
        snprintf(name, sizeof name, "h2d transposed %s", kind);
        if (df != NULL)
            CASE(S_H2D_T, df, h2, useful, NULL, 1);
#undef CASE
#undef CEILING
#undef HOST_STRIDED
        if (pinned)
            memcpy(ref, got, sizeof ref);
        gpumem_array *all[] = {hb, h, h2, hw, hwf, hw2, hwv, d, dc, dv, d1, d1v, h1, d3, d3v, h3, df};
        for (size_t i = 0; i < sizeof all / sizeof *all; i++)
            gpumem_array_release(all[i]);
        free(mem);
        free(wmem);
    }
    return rc;
}

/* 2-D copies of rows of 4 B .. 64 KiB at a pitch of twice the row. */
int bench_rows(bench *b)
{
    const gpumem_dtype *u8 = gpumem_dtype_builtin(GPUMEM_UINT8);
    int64_t total = b->quick ? (1 << 20) : (64 << 20);
    void *mem = NULL;
    gpumem_array *h = bench_host_bytes(b, 1, total, &mem), *d = NULL;
    int64_t dn = 2 * total;
    if (h == NULL || gpumem_device_array(b->ctx, 1, &dn, NULL, u8, 'C', NULL, &d) != GPUMEM_OK) {
        bench_error("", "%s", gpumem_last_error());
        gpumem_array_release(h);
        return 1;
    }
    int rc = 0;
    for (int64_t w = 4; w <= 65536 && !rc; w *= 2) {
        int64_t height = total / w;
        gpumem_array *hv = NULL, *dv0 = NULL, *dv = NULL;
        gpumem_array_reshape(h, 2, (int64_t[]){height, w}, 'C', GPUMEM_NO_COPY, NULL, &hv);
        gpumem_array_reshape(d, 2, (int64_t[]){height, 2 * w}, 'C', GPUMEM_NO_COPY, NULL, &dv0);
        gpumem_array_slice(dv0, (gpumem_slice[]){GPUMEM_SLICE_ALL, {0, w, 1}}, 2, &dv);
        char name[64];
        drv_case down = base2d(bench_addr(hv, 0), 0, (size_t)w, bench_addr(dv, 1), 1, (size_t)(2 * w), (size_t)w,
                               (size_t)height);
        drv_case up = base2d(bench_addr(dv, 1), 1, (size_t)(2 * w), bench_addr(hv, 0), 0, (size_t)w, (size_t)w,
                             (size_t)height);
        snprintf(name, sizeof name, "d2h 2-D rows of %lld B", (long long)w);
        rc = bench_measure(b, "rows", name, hv, dv, (uint64_t)total, &down);
        snprintf(name, sizeof name, "h2d 2-D rows of %lld B", (long long)w);
        rc = rc || bench_measure(b, "rows", name, dv, hv, (uint64_t)total, &up);
        gpumem_array_release(hv);
        gpumem_array_release(dv0);
        gpumem_array_release(dv);
    }
    gpumem_array_release(h);
    gpumem_array_release(d);
    return rc;
}
