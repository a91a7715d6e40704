/*
 * bytes.h - unaligned little-endian reads from byte buffers (module images:
 * ELF and fat binaries are little-endian on every CUDA platform).
 */
#ifndef GM_BYTES_H
#define GM_BYTES_H

#include <stdint.h>
#include <string.h>

static inline uint16_t rd16(const unsigned char *b)
{
    uint16_t v;
    memcpy(&v, b, 2);
    return v;
}

static inline uint32_t rd32(const unsigned char *b)
{
    uint32_t v;
    memcpy(&v, b, 4);
    return v;
}

static inline uint64_t rd64(const unsigned char *b)
{
    uint64_t v;
    memcpy(&v, b, 8);
    return v;
}

#endif /* GM_BYTES_H */
