/*
 * bytes.h - unaligned reads from byte buffers.  rd16, rd32 and rd64 read
 * little-endian values, whatever the host's byte order: module images (ELF
 * files and fat binaries) are little-endian on every CUDA platform, and a
 * simulator on a big-endian host (Debian's s390x) reads them alike.
 * rd32_host reads a value in the host's byte order, for structures that
 * this process itself laid out in memory (nvcc's fatbin wrapper).  wr32 and
 * wr64 write little-endian values: the IPC handles, the pool IPC wire
 * format and the trace file (trace_format.h) are little-endian whatever the
 * hosts, and the trace reader of gpumem trace (tools/trace_read.c) reads
 * the file back with rd32 and rd64.
 */
#ifndef GM_BYTES_H
#define GM_BYTES_H

#include <stdint.h>
#include <string.h>

static inline uint16_t rd16(const unsigned char *b)
{
    return (uint16_t)(b[0] | (unsigned)b[1] << 8);
}

static inline uint32_t rd32(const unsigned char *b)
{
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static inline uint64_t rd64(const unsigned char *b)
{
    return (uint64_t)rd32(b) | (uint64_t)rd32(b + 4) << 32;
}

static inline void wr32(unsigned char *b, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        b[i] = (unsigned char)(v >> (8 * i));
}

static inline void wr64(unsigned char *b, uint64_t v)
{
    wr32(b, (uint32_t)v);
    wr32(b + 4, (uint32_t)(v >> 32));
}

static inline uint32_t rd32_host(const unsigned char *b)
{
    uint32_t v;
    memcpy(&v, b, 4);
    return v;
}

#endif /* GM_BYTES_H */
