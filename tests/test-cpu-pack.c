/* CPU packing by element ranges (lib/cpu_pack.c, the library's one CPU
 * packer, which the pack kernels' C twin gm_pack_run_host runs too): random
 * layouts of items of 1 to 16 bytes, packed and unpacked in random ranges,
 * against an element-by-element copy from the layout alone, byte for byte,
 * gaps included; the
 * vectorized every-other-element gather at the very end of a mapping (no
 * read past the last element); and, as diagnostics, the gather's speed
 * against the element loop. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "copyplan.h"
#include "cpu_pack.h"
#include "kernels/pack.h"
#include "rng.h"
#include "tap.h"

static uint64_t rng = 0x2545F4914F6CDD1Dull;

static uint64_t next(void)
{
    return xorshift64(&rng);
}

static int64_t pick(int64_t n)
{
    return n > 0 ? (int64_t)(next() % (uint64_t)n) : 0;
}

/* The byte span of a layout: [lo, hi) from element 0. */
static void span(int ndim, const int64_t *shape, const int64_t *st, size_t isz, int64_t *lo, int64_t *hi)
{
    *lo = 0;
    *hi = (int64_t)isz;
    for (int i = 0; i < ndim; i++) {
        int64_t t = (shape[i] - 1) * st[i];
        if (t < 0)
            *lo += t;
        else
            *hi += t;
    }
}

/* The reference, from the layout alone (no plan): element by element in C
 * order, item i of the strided side (base s, strides st) to or from byte
 * i * isz of the packed bytes pk. */
static void naive(int ndim, const int64_t *shape, const int64_t *st, size_t isz, unsigned char *s, unsigned char *pk,
                  bool unpack)
{
    int64_t idx[4] = {0, 0, 0, 0}, n = 1;
    for (int i = 0; i < ndim; i++)
        n *= shape[i];
    for (int64_t e = 0; e < n; e++) {
        int64_t off = 0;
        for (int i = 0; i < ndim; i++)
            off += idx[i] * st[i];
        if (unpack)
            memcpy(s + off, pk + e * (int64_t)isz, isz);
        else
            memcpy(pk + e * (int64_t)isz, s + off, isz);
        for (int i = ndim - 1; i >= 0 && ++idx[i] == shape[i]; i--)
            idx[i] = 0;
    }
}

/* One random case; 1 when the ranges give the reference's bytes. */
static int one_case(char *why, size_t whylen)
{
    static const size_t items[] = {1, 2, 4, 8, 16, 3, 12, 6};
    size_t isz = items[pick(8)];
    int ndim = 1 + (int)pick(4);
    int64_t shape[4], st[4], packed[4], n = 1;
    for (int i = 0; i < ndim; i++) {
        shape[i] = 1 + pick(i == ndim - 1 ? 40 : 6);
        n *= shape[i];
    }
    /* strided side: items at random gaps, some axes reversed or permuted */
    int64_t step = (int64_t)isz * (1 + pick(3));
    int order[4] = {0, 1, 2, 3};
    for (int i = ndim - 1; i > 0; i--) {
        int j = (int)pick(i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (int r = ndim - 1; r >= 0; r--) {
        int ax = order[r];
        st[ax] = pick(4) == 0 ? -step : step;
        step *= shape[ax] + pick(2);
    }
    int64_t p = (int64_t)isz; /* packed: C order */
    for (int i = ndim - 1; i >= 0; i--) {
        packed[i] = p;
        p *= shape[i];
    }
    int64_t lo, hi;
    span(ndim, shape, st, isz, &lo, &hi);
    size_t sbytes = (size_t)(hi - lo), pbytes = (size_t)n * isz;
    unsigned char *sbuf = malloc(sbytes + 32), *ref = malloc(pbytes + 32), *out = malloc(pbytes + 32);
    unsigned char *ubuf = malloc(sbytes + 32), *uref = malloc(sbytes + 32);
    for (size_t i = 0; i < sbytes + 32; i++) {
        sbuf[i] = (unsigned char)next();
        ubuf[i] = uref[i] = 0xA5;
    }
    size_t off = (size_t)pick(16); /* misaligned bases too */
    uint64_t saddr = (uint64_t)(uintptr_t)(sbuf + off - lo), paddr = (uint64_t)(uintptr_t)(ref + 16);
    gm_pack_plan plan;
    int good = 1;
    for (int unpack = 0; unpack < 2 && good; unpack++) {
        uint64_t s0 = unpack ? (uint64_t)(uintptr_t)(ubuf + off - lo) : saddr;
        if (gm_pack_plan_make(ndim, shape, st, packed, isz, s0, paddr, unpack != 0, &plan) != GPUMEM_OK) {
            snprintf(why, whylen, "no plan");
            good = 0;
            break;
        }
        gm_pack_params ref_p = plan.params, p2 = plan.params;
        ref_p.strided += s0;
        ref_p.packed += paddr;
        p2.strided += s0;
        uint64_t count = plan.params.rows * plan.params.cols, unit = (uint64_t)plan.params.unit;
        if (!unpack) {
            memset(ref, 0, pbytes + 32);
            naive(ndim, shape, st, isz, sbuf + off - lo, ref + 16, false);
            memset(out, 0x5A, pbytes + 32);
            /* random ranges */
            for (uint64_t e = 0; e < count;) {
                uint64_t len = 1 + (uint64_t)pick((int64_t)count);
                if (e + len > count)
                    len = count - e;
                int64_t how = pick(3);
                if (how == 2) /* the non-temporal pack of staging slots */
                    gm_cpu_pack_range_out(&p2, e, e + len, out + 16 + e * unit);
                else
                    (how ? gm_cpu_pack_range : gm_cpu_pack_range_plain)(&p2, false, e, e + len, out + 16 + e * unit);
                e += len;
            }
            good = memcmp(out + 16, ref + 16, pbytes) == 0 && out[15] == 0x5A && out[16 + pbytes] == 0x5A;
        } else {
            /* ref holds packed bytes: unpack them both ways */
            for (size_t i = 0; i < pbytes; i++)
                ref[16 + i] = (unsigned char)next();
            naive(ndim, shape, st, isz, uref + off - lo, ref + 16, true);
            for (uint64_t e = 0; e < count;) {
                uint64_t len = 1 + (uint64_t)pick((int64_t)count);
                if (e + len > count)
                    len = count - e;
                gm_cpu_pack_range(&p2, true, e, e + len, ref + 16 + plan.params.packed + e * unit);
                e += len;
            }
            good = memcmp(ubuf, uref, sbytes + 32) == 0;
        }
        if (!good)
            snprintf(why, whylen, "%s: itemsize %zu, ndim %d, unit %d, rows %llu, cols %llu, col stride %lld",
                     unpack ? "unpack" : "pack", isz, ndim, plan.params.unit, plan.params.rows, plan.params.cols,
                     plan.params.col_stride);
    }
    free(sbuf);
    free(ref);
    free(out);
    free(ubuf);
    free(uref);
    return good;
}

/* Every other element of unit u, n of them, ending at the last byte before
 * an inaccessible page: packed exactly, no fault. */
static int edge_gather(int u, uint64_t n, int out_at, bool nt)
{
    long page = sysconf(_SC_PAGESIZE);
    size_t span_bytes = (size_t)((2 * n - 1) * (uint64_t)u);
    size_t pages = (span_bytes + (size_t)page - 1) / (size_t)page + 1;
    unsigned char *m = mmap(NULL, (pages + 1) * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                            -1, 0);
    if (m == MAP_FAILED)
        return 0;
    mprotect(m + pages * (size_t)page, (size_t)page, PROT_NONE);
    unsigned char *s = m + pages * (size_t)page - span_bytes;
    for (size_t i = 0; i < span_bytes; i++)
        s[i] = (unsigned char)(i * 31 + 7);
    gm_pack_params p = {0};
    p.strided = (uint64_t)(uintptr_t)s;
    p.rows = 1;
    p.cols = n;
    p.col_stride = 2 * u;
    p.unit = u;
    unsigned char *mem = malloc((size_t)(n * (uint64_t)u) + 32), *out = mem + out_at;
    memset(mem, 0x5A, (size_t)(n * (uint64_t)u) + 32);
    if (nt)
        gm_cpu_pack_range_out(&p, 0, n, out);
    else
        gm_cpu_pack_range(&p, false, 0, n, out);
    int good = mem[out_at - 1] == 0x5A && out[n * (uint64_t)u] == 0x5A;
    for (uint64_t e = 0; e < n && good; e++)
        good = memcmp(out + e * (uint64_t)u, s + 2 * e * (uint64_t)u, (size_t)u) == 0;
    free(mem);
    munmap(m, (pages + 1) * (size_t)page);
    return good;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* GB/s of packed bytes: every other element of unit u out of 2 x 32 MiB. */
static void speed(int u, bool unpack)
{
    size_t useful = 32u << 20;
    unsigned char *s = malloc(2 * useful), *b = malloc(useful);
    memset(s, 1, 2 * useful);
    memset(b, 2, useful);
    gm_pack_params p = {0};
    p.strided = (uint64_t)(uintptr_t)s;
    p.rows = 1;
    p.cols = useful / (size_t)u;
    p.col_stride = 2 * u;
    p.unit = u;
    double best[3] = {1e9, 1e9, 1e9};
    for (int rep = 0; rep < 3; rep++)
        for (int fast = 0; fast < (unpack ? 2 : 3); fast++) {
            double t0 = now();
            if (fast == 2)
                gm_cpu_pack_range_out(&p, 0, p.cols, b);
            else
                (fast ? gm_cpu_pack_range : gm_cpu_pack_range_plain)(&p, unpack, 0, p.cols, b);
            double t = now() - t0;
            if (t < best[fast])
                best[fast] = t;
        }
    diag("%s of every other %d-byte element, one thread: element loop %.2f GB/s, this library's %.2f GB/s",
         unpack ? "unpack" : "pack", u, (double)useful / best[0] / 1e9, (double)useful / best[1] / 1e9);
    if (!unpack)
        diag("  non-temporal (staging slots, out of cache): %.2f GB/s", (double)useful / best[2] / 1e9);
    free(s);
    free(b);
}

int main(void)
{
    char why[256] = "";
    int bad = 0;
    for (int i = 0; i < 3000 && !bad; i++)
        bad = !one_case(why, sizeof why);
    ok(!bad, "3000 random layouts, items of 1 to 16 bytes, packed and unpacked in random ranges: the reference's "
             "bytes, gaps untouched%s%s", bad ? ": " : "", why);
    int edges = 1;
    for (int u = 1; u <= 8 && edges; u *= 2)
        for (uint64_t n = 1; n <= 70 && edges; n++)
            edges = edge_gather(u, n, 16, false);
    ok(edges, "every other element of 1, 2, 4, 8 bytes, 1 to 70 of them ending at an inaccessible page: exact, "
              "nothing read past the last element (the SSE2 gather's last step)");
    edges = 1;
    for (int u = 1; u <= 8 && edges; u *= 2)
        for (int at = 16; at < 32 && edges; at += u)
            for (uint64_t n = 1; n <= 70 && edges; n++)
                edges = edge_gather(u, n, at, true);
    ok(edges, "the same packed with non-temporal stores into buffers at every offset of the unit in 16 bytes: exact, "
              "nothing written around it, nothing read past the last element");
    /* the copy into staging slots: around its threshold, at every offset */
    static const size_t lens[] = {0, 1, 15, 63, GM_CPU_COPY_OUT_MIN - 1, GM_CPU_COPY_OUT_MIN, GM_CPU_COPY_OUT_MIN + 1,
                                  GM_CPU_COPY_OUT_MIN + 63, GM_CPU_COPY_OUT_MIN + 77, 3 * GM_CPU_COPY_OUT_MIN + 5};
    size_t most = 3 * GM_CPU_COPY_OUT_MIN + 5 + 64;
    unsigned char *src = malloc(most), *dst = malloc(most);
    int copies = 1;
    for (size_t i = 0; i < most; i++)
        src[i] = (unsigned char)(i * 13 + 5);
    for (size_t l = 0; l < sizeof lens / sizeof *lens && copies; l++)
        for (size_t so = 0; so < 16 && copies; so += 3)
            for (size_t d = 1; d < 17 && copies; d++) {
                memset(dst, 0xE7, most);
                gm_cpu_copy_out(dst + d, src + so, lens[l]);
                copies = dst[d - 1] == 0xE7 && dst[d + lens[l]] == 0xE7 && memcmp(dst + d, src + so, lens[l]) == 0;
                if (!copies)
                    diag("gm_cpu_copy_out: %zu bytes from offset %zu to offset %zu", lens[l], so, d);
            }
    ok(copies, "gm_cpu_copy_out: 0 to 192 KiB + 5 bytes at every destination offset in 16: memcpy's bytes, nothing "
               "written around them");
    free(src);
    free(dst);
    for (int u = 1; u <= 16; u *= 2) {
        speed(u, false);
        speed(u, true);
    }
    done_testing();
    return exit_status();
}
