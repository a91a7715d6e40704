/*
 * cpu_pack.h - packing and unpacking a strided host side on the CPU, any
 * range of its elements at a time (private; pure).
 *
 * The staging engine's workers pack a strided host side straight into
 * their pinned slots (and unpack out of them) chunk by chunk, so a chunk is
 * a range of the packed elements, not of the rows: a single row of 10^8
 * elements splits as well as 10^8 rows of one.  The plan is the pack
 * kernels' (kernels/pack_params.h: rows x cols elements of `unit` bytes,
 * packed row-major), read with host addresses.
 *
 * Loops: a contiguous row is one memcpy; other rows copy element by
 * element at a constant unit (1, 2, 4, 8 or 16 bytes), and a pack whose
 * column stride is twice the unit (`a[:, ::2]`, every other element) of
 * unit 1, 2 or 4 gathers with SSE2 on x86-64, 16 bytes out at a time.
 * Measured in cache, one thread (2026-11-25, the 2-CPU build VM): the
 * gather packs 1-byte elements at 16.8 GB/s against the loop's 3.7, 2-byte
 * at 19.6 against 8.0, 4-byte at 29.3 against 16.0, but 8-byte at 23.2
 * against the loop's 30.1, so 8 and 16 bytes keep the loop
 * (tests/test-cpu-pack prints both as diagnostics).  Packs into staging
 * slots (gm_cpu_pack_range_out) store the gathers' 16 bytes around the
 * cache, 8-byte elements included: out of cache, one thread on the build
 * VM (2026-11-29, noisy), 4-byte every-other packs went from 3.9 to 10.1
 * GB/s and 8-byte from 8.5 to 10.0.  An unpack writes each
 * element on its own: the gaps between the strided side's elements are
 * never written, not even with the bytes they hold, as another thread may
 * write them (SSE2 has no cheap masked store).
 */
#ifndef GM_CPU_PACK_H
#define GM_CPU_PACK_H

#include <stdbool.h>
#include <stdint.h>

#include "kernels/pack_params.h"

/* Moves the packed elements [e0, e1) (element e = row * cols + col) between
 * the strided side of p (p->strided: the host address of element (0, 0);
 * p->packed is not read) and buf, which holds the packed bytes of element
 * e0 onward: pack reads the strided side into buf, unpack writes it from
 * buf.  e1 is at most rows * cols. */
void gm_cpu_pack_range(const gm_pack_params *p, bool unpack, uint64_t e0, uint64_t e1, void *buf);

/* The pack of gm_cpu_pack_range (unpack false) into a buf that a device
 * reads next, not this CPU (a staging slot): the SSE2 gathers, 8-byte
 * elements included, store with non-temporal stores (fenced before it
 * returns), which neither read buf's lines first nor keep them in the
 * cache.  The same bytes as gm_cpu_pack_range. */
void gm_cpu_pack_range_out(const gm_pack_params *p, uint64_t e0, uint64_t e1, void *buf);

/* memcpy(dst, src, n) into a dst that a device reads next (a staging
 * slot): from GM_CPU_COPY_OUT_MIN bytes on, with non-temporal stores
 * (fenced before it returns) on x86-64, so that dst's lines are not read
 * for ownership first and the copy's memory traffic is the source's reads
 * and dst's writes (the device's reads of dst compete with it). */
#define GM_CPU_COPY_OUT_MIN (64u << 10)
void gm_cpu_copy_out(void *dst, const void *src, size_t n);

/* The same with the element-by-element loop only (no SSE2 gather): the
 * reference the tests and the measurement compare with. */
void gm_cpu_pack_range_plain(const gm_pack_params *p, bool unpack, uint64_t e0, uint64_t e1, void *buf);

#endif /* GM_CPU_PACK_H */
