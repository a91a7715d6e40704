/*
 * pack_host.c - the pack and unpack kernels of pack.cu in C (pack.h), their
 * names and launch shape.
 */
#include "config.h"

#include <string.h>

#include "kernels/pack.h"

static const char *const names[GM_PACK_NKERNELS] = {
    "gm_pack_1_32",  "gm_pack_1_64",  "gm_unpack_1_32",  "gm_unpack_1_64",
    "gm_pack_2_32",  "gm_pack_2_64",  "gm_unpack_2_32",  "gm_unpack_2_64",
    "gm_pack_4_32",  "gm_pack_4_64",  "gm_unpack_4_32",  "gm_unpack_4_64",
    "gm_pack_8_32",  "gm_pack_8_64",  "gm_unpack_8_32",  "gm_unpack_8_64",
    "gm_pack_16_32", "gm_pack_16_64", "gm_unpack_16_32", "gm_unpack_16_64",
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

const char *gm_pack_kernel_name(int i)
{
    return i >= 0 && i < GM_PACK_NKERNELS ? names[i] : NULL;
}

void gm_pack_kernel_info(int i, int *unit, bool *wide, bool *unpack)
{
    *unit = 1 << (i / 4);
    *unpack = (i & 2) != 0;
    *wide = (i & 1) != 0;
}

void gm_pack_launch_dims(const gm_pack_params *p, unsigned grid[3], unsigned block[3])
{
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

static int64_t row_offset(const gm_pack_params *p, uint64_t row)
{
    int64_t off = 0;
    for (int k = p->nouter - 1; k > 0; k--) {
        uint64_t n = (uint64_t)p->outer_shape[k];
        uint64_t q = row / n;
        off += (int64_t)(row - q * n) * p->outer_stride[k];
        row = q;
    }
    if (p->nouter > 0)
        off += (int64_t)row * p->outer_stride[0];
    return off;
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

/* One row at constant unit U: the compiler turns each memcpy into a move. */
#define ROW(U)                                                                  \
    do {                                                                        \
        if (unpack)                                                             \
            for (uint64_t c = 0; c < cols; c++)                                 \
                memcpy(srow + (int64_t)c * cs, prow + c * (U), (U));            \
        else                                                                    \
            for (uint64_t c = 0; c < cols; c++)                                 \
                memcpy(prow + c * (U), srow + (int64_t)c * cs, (U));            \
    } while (0)

void gm_pack_run_host(const gm_pack_params *p, bool unpack, uint64_t row_begin, uint64_t row_end)
{
    const uint64_t cols = p->cols;
    const int64_t cs = p->col_stride;
    const size_t unit = (size_t)p->unit;
    for (uint64_t r = row_begin; r < row_end && r < p->rows; r++) {
        unsigned char *srow = (unsigned char *)(uintptr_t)p->strided + row_offset(p, r);
        unsigned char *prow = (unsigned char *)(uintptr_t)p->packed + r * cols * unit;
        if (cs == (int64_t)unit) { /* a run: one move */
            if (unpack)
                memcpy(srow, prow, cols * unit);
            else
                memcpy(prow, srow, cols * unit);
            continue;
        }
        switch (unit) {
        case 1: ROW(1); break;
        case 2: ROW(2); break;
        case 4: ROW(4); break;
        case 8: ROW(8); break;
        default: ROW(16); break;
        }
    }
}
