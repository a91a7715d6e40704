/*
 * pack_host.c - the pack and unpack kernels of pack.cu in C (pack.h), their
 * names and launch shape.
 */
#include "config.h"

#include <string.h>

#include "cpu_pack.h"
#include "kernels/pack.h"

static const char *const names[GM_PACK_ALL_KERNELS] = {
    "gm_pack_1_32",  "gm_pack_1_64",  "gm_unpack_1_32",  "gm_unpack_1_64",
    "gm_pack_2_32",  "gm_pack_2_64",  "gm_unpack_2_32",  "gm_unpack_2_64",
    "gm_pack_4_32",  "gm_pack_4_64",  "gm_unpack_4_32",  "gm_unpack_4_64",
    "gm_pack_8_32",  "gm_pack_8_64",  "gm_unpack_8_32",  "gm_unpack_8_64",
    "gm_pack_16_32", "gm_pack_16_64", "gm_unpack_16_32", "gm_unpack_16_64",
    "gm_pack_t_1_32",  "gm_pack_t_1_64",  "gm_unpack_t_1_32",  "gm_unpack_t_1_64",
    "gm_pack_t_2_32",  "gm_pack_t_2_64",  "gm_unpack_t_2_32",  "gm_unpack_t_2_64",
    "gm_pack_t_4_32",  "gm_pack_t_4_64",  "gm_unpack_t_4_32",  "gm_unpack_t_4_64",
    "gm_pack_t_8_32",  "gm_pack_t_8_64",  "gm_unpack_t_8_32",  "gm_unpack_t_8_64",
    "gm_pack_t_16_32", "gm_pack_t_16_64", "gm_unpack_t_16_32", "gm_unpack_t_16_64",
    "gm_pack_batch_32", "gm_pack_batch_64",
};

int gm_pack_kernel_index(int unit, bool wide, bool unpack)
{
    int u;
    switch (unit) {
    case 1: u = 0; break;
    case 2: u = 1; break;
    case 4: u = 2; break;
    case 8: u = 3; break;
    case 16: u = 4; break;
    default: return -1;
    }
    return u * 4 + (unpack ? 2 : 0) + (wide ? 1 : 0);
}

int gm_pack_kernel_tiled_index(int unit, bool wide, bool unpack)
{
    int i = gm_pack_kernel_index(unit, wide, unpack);
    return i < 0 ? i : GM_PACK_TILED_BASE + i;
}

const char *gm_pack_kernel_name(int i)
{
    return i >= 0 && i < GM_PACK_ALL_KERNELS ? names[i] : NULL;
}

bool gm_pack_kernel_tiled(int i)
{
    return i >= GM_PACK_TILED_BASE && i < GM_PACK_NKERNELS;
}

void gm_pack_kernel_info(int i, int *unit, bool *wide, bool *unpack)
{
    i %= GM_PACK_TILED_BASE;
    *unit = 1 << (i / 4);
    *unpack = (i & 2) != 0;
    *wide = (i & 1) != 0;
}

static unsigned capped(uint64_t n, uint64_t max)
{
    return (unsigned)(n < 1 ? 1 : n > max ? max : n);
}

void gm_pack_launch_dims(int i, const gm_pack_params *p, unsigned grid[3], unsigned block[3])
{
    if (gm_pack_kernel_tiled(i)) {
        /* tiles of 32 columns x 32 rows of the innermost outer axis; z over the rest */
        uint64_t nlo = p->nouter > 0 ? (uint64_t)p->outer_shape[p->nouter - 1] : 1;
        block[0] = GM_PACK_TILE;
        block[1] = GM_PACK_TILE_ROWS;
        block[2] = 1;
        grid[0] = capped((p->cols + GM_PACK_TILE - 1) / GM_PACK_TILE, 65535);
        grid[1] = capped((nlo + GM_PACK_TILE - 1) / GM_PACK_TILE, 65535);
        grid[2] = capped(nlo > 0 ? p->rows / nlo : 1, 65535);
        return;
    }
    /* x covers the columns, narrow rows share a block with their neighbours */
    unsigned bx = 1;
    while (bx < GM_PACK_THREADS && bx < p->cols)
        bx *= 2;
    unsigned by = GM_PACK_THREADS / bx;
    uint64_t gx = (p->cols + bx - 1) / bx, gy = (p->rows + by - 1) / by;
    if (gx > 4096)
        gx = 4096; /* grid-stride loops do the rest */
    uint64_t ymax = 65535;
    if (gx * ymax > 262144)
        ymax = 262144 / gx > 0 ? 262144 / gx : 1;
    if (gy > ymax)
        gy = ymax;
    block[0] = bx;
    block[1] = by;
    block[2] = 1;
    grid[0] = (unsigned)(gx > 0 ? gx : 1);
    grid[1] = (unsigned)(gy > 0 ? gy : 1);
    grid[2] = 1;
}

void gm_pack_strided_span(const gm_pack_params *p, int64_t *lo, int64_t *hi)
{
    int64_t l = 0, h = 0;
    for (int k = 0; k <= p->nouter; k++) {
        int64_t n = k < p->nouter ? p->outer_shape[k] : (int64_t)p->cols;
        int64_t s = k < p->nouter ? p->outer_stride[k] : p->col_stride;
        int64_t t = (n - 1) * s;
        if (t < 0)
            l += t;
        else
            h += t;
    }
    *lo = l;
    *hi = h + p->unit;
}

/* The generic kernels' twin is the library's one CPU packer (cpu_pack.c),
 * which packs strided host sides for the copy engine too: rows [row_begin,
 * row_end) are the packed elements row_begin * cols onward. */
void gm_pack_run_host(const gm_pack_params *p, bool unpack, uint64_t row_begin, uint64_t row_end)
{
    if (row_end > p->rows)
        row_end = p->rows;
    if (row_begin >= row_end)
        return;
    uint64_t e0 = row_begin * p->cols;
    gm_cpu_pack_range(p, unpack, e0, row_end * p->cols,
                      (unsigned char *)(uintptr_t)p->packed + e0 * (uint64_t)p->unit);
}

/* ---- the tiled kernels' twin ---------------------------------------------------------------------- */

/* pack.cu's hi_offset: the offset of row h * nlo. */
static int64_t hi_offset(const gm_pack_params *p, uint64_t h)
{
    int64_t off = 0;
    for (int k = p->nouter - 2; k > 0; k--) {
        uint64_t n = (uint64_t)p->outer_shape[k];
        uint64_t q = h / n;
        off += (int64_t)(h - q * n) * p->outer_stride[k];
        h = q;
    }
    if (p->nouter >= 2)
        off += (int64_t)h * p->outer_stride[0];
    return off;
}

/* pack.cu's run_tiled, one block after another and, within a block, one
 * phase (the threads' reads into the tile, then their writes out of it)
 * after the other, thread by thread. */
static void run_tiled(const gm_pack_params *p, bool unpack)
{
    enum { T = GM_PACK_TILE };
    static _Thread_local unsigned char tile[T][T + 1][16];
    unsigned char *strided = (unsigned char *)(uintptr_t)p->strided, *packed = (unsigned char *)(uintptr_t)p->packed;
    const uint64_t cols = p->cols, nlo = p->nouter > 0 ? (uint64_t)p->outer_shape[p->nouter - 1] : 1;
    const int64_t cs = p->col_stride, slo = p->nouter > 0 ? p->outer_stride[p->nouter - 1] : 0;
    const uint64_t nhi = p->rows / nlo;
    const size_t unit = (size_t)p->unit;
    for (uint64_t h = 0; h < nhi; h++) {
        const int64_t hoff = hi_offset(p, h);
        const uint64_t prow = h * nlo;
        for (uint64_t r0 = 0; r0 < nlo; r0 += T) {
            for (uint64_t c0 = 0; c0 < cols; c0 += T) {
                for (unsigned tx = 0; tx < T; tx++) {
                    for (unsigned j = 0; j < T; j++) {
                        if (!unpack) { /* tile[j][tx] = strided(r0 + tx, c0 + j) */
                            uint64_t r = r0 + tx, c = c0 + j;
                            if (r < nlo && c < cols)
                                memcpy(tile[j][tx], strided + hoff + (int64_t)r * slo + (int64_t)c * cs, unit);
                        } else { /* tile[tx][j] = packed(r0 + j, c0 + tx) */
                            uint64_t rr = r0 + j, c = c0 + tx;
                            if (rr < nlo && c < cols)
                                memcpy(tile[tx][j], packed + ((prow + rr) * cols + c) * unit, unit);
                        }
                    }
                }
                for (unsigned tx = 0; tx < T; tx++) {
                    for (unsigned j = 0; j < T; j++) {
                        if (!unpack) { /* packed(r0 + j, c0 + tx) = tile[tx][j] */
                            uint64_t rr = r0 + j, c = c0 + tx;
                            if (rr < nlo && c < cols)
                                memcpy(packed + ((prow + rr) * cols + c) * unit, tile[tx][j], unit);
                        } else { /* strided(r0 + tx, c0 + j) = tile[j][tx] */
                            uint64_t r = r0 + tx, c = c0 + j;
                            if (r < nlo && c < cols)
                                memcpy(strided + hoff + (int64_t)r * slo + (int64_t)c * cs, tile[j][tx], unit);
                        }
                    }
                }
            }
        }
    }
}

void gm_pack_run_kernel_host(int i, const gm_pack_params *p)
{
    int unit;
    bool wide, unpack;
    gm_pack_kernel_info(i, &unit, &wide, &unpack);
    if (gm_pack_kernel_tiled(i))
        run_tiled(p, unpack);
    else
        gm_pack_run_host(p, unpack, 0, p->rows);
}

/* ---- the batched kernels' twin --------------------------------------------------------------------- */

void gm_pack_batch_piece_dims(gm_pack_batch_piece *p)
{
    unsigned bx = 1;
    while (bx < GM_PACK_THREADS && bx < p->cols)
        bx *= 2;
    uint64_t by = GM_PACK_THREADS / bx;
    uint64_t gx = (p->cols + bx - 1) / bx, gy = (p->rows + by - 1) / by;
    if (gx < 1)
        gx = 1;
    if (gx > 4096)
        gx = 4096;
    if (gy < 1)
        gy = 1;
    if (gy > 65536 / gx)
        gy = 65536 / gx;
    p->bx = bx;
    p->gx = (unsigned)gx;
    p->blocks = (unsigned)(gx * gy);
}

void gm_pack_batch_piece_params(const gm_pack_batch_piece *p, gm_pack_params *out)
{
    memset(out, 0, sizeof *out);
    out->strided = p->strided;
    out->packed = p->packed;
    out->rows = p->rows;
    out->cols = p->cols;
    out->col_stride = p->col_stride;
    out->nouter = p->nouter;
    out->unit = p->unit;
    for (int k = 0; k < p->nouter && k < GM_PACK_BATCH_OUTER; k++) {
        out->outer_shape[k] = p->outer_shape[k];
        out->outer_stride[k] = p->outer_stride[k];
    }
}

void gm_pack_run_batch_host(const gm_pack_batch_params *p)
{
    for (int k = 0; k < p->count && k < GM_PACK_BATCH_MAX; k++) {
        gm_pack_params q;
        gm_pack_batch_piece_params(&p->piece[k], &q);
        gm_pack_run_host(&q, p->piece[k].unpack != 0, 0, q.rows);
    }
}
