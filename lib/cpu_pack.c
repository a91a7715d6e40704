/*
 * cpu_pack.c - packing and unpacking a strided host side, by ranges of
 * elements (cpu_pack.h).
 */
#include "config.h"

#include <string.h>

#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#define HAVE_SSE2_GATHER 1
#endif

#include "cpu_pack.h"

/* One row's n elements at constant unit U: a memcpy of U bytes is one move. */
#define ROW(U)                                                      \
    do {                                                            \
        if (unpack)                                                 \
            for (uint64_t c = 0; c < n; c++)                        \
                memcpy(s + (int64_t)c * cs, b + c * (U), (U));      \
        else                                                        \
            for (uint64_t c = 0; c < n; c++)                        \
                memcpy(b + c * (U), s + (int64_t)c * cs, (U));      \
    } while (0)

static void row_plain(unsigned char *s, unsigned char *b, uint64_t n, int64_t cs, int unit, bool unpack)
{
    if (cs == unit) {
        if (unpack)
            memcpy(s, b, n * (uint64_t)unit);
        else
            memcpy(b, s, n * (uint64_t)unit);
        return;
    }
    switch (unit) {
    case 1: ROW(1); break;
    case 2: ROW(2); break;
    case 4: ROW(4); break;
    case 8: ROW(8); break;
    default: ROW(16); break;
    }
}

#ifdef HAVE_SSE2_GATHER
/* Every other element of s (stride 2 * unit) into b, n elements: 32 bytes
 * of s become 16 of b per step.  Loads are unaligned; the last step reads no
 * byte past the last element's. */
static inline __attribute__((always_inline)) uint64_t gather2_to(const unsigned char *s, unsigned char *b, uint64_t n,
                                                                  int unit, bool stream)
{
    uint64_t per = 16 / (uint64_t)unit, done = 0; /* elements per 16 bytes out */
    const __m128i lo16 = _mm_set1_epi32(0xffff), lo8 = _mm_set1_epi16(0xff);
    /* a step reads 2 * per elements' strides: the last one read, 2 * per - 2, is
     * an element; its own unit ends 2 * unit * (per - 1) + unit <= 32 bytes in */
    for (; done + per <= n; done += per, s += 32, b += 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)s);
        /* the second load reads up to byte 32 of the step: the element at
         * 2 * (per - 1) ends at 2 * unit * per - unit, so for unit < 16 the
         * load's last `unit` bytes are a gap, read only when in bounds */
        __m128i y;
        if (done + per < n) {
            y = _mm_loadu_si128((const __m128i *)(const void *)(s + 16));
        } else { /* the last step: no read past the last element */
            unsigned char tmp[16] = {0};
            memcpy(tmp, s + 16, 16 - (size_t)unit);
            y = _mm_loadu_si128((const __m128i *)(const void *)tmp);
        }
        __m128i r;
        switch (unit) {
        case 1: r = _mm_packus_epi16(_mm_and_si128(x, lo8), _mm_and_si128(y, lo8)); break;
        case 2:
            r = _mm_packs_epi32(_mm_srai_epi32(_mm_slli_epi32(_mm_and_si128(x, lo16), 16), 16),
                                _mm_srai_epi32(_mm_slli_epi32(_mm_and_si128(y, lo16), 16), 16));
            break;
        case 4:
            r = _mm_castps_si128(_mm_shuffle_ps(_mm_castsi128_ps(x), _mm_castsi128_ps(y), _MM_SHUFFLE(2, 0, 2, 0)));
            break;
        default: r = _mm_unpacklo_epi64(x, y); break;
        }
        if (stream)
            _mm_stream_si128((__m128i *)(void *)b, r);
        else
            _mm_storeu_si128((__m128i *)(void *)b, r);
    }
    return done;
}

static uint64_t gather2(const unsigned char *s, unsigned char *b, uint64_t n, int unit)
{
    return gather2_to(s, b, n, unit, false);
}

/* gather2 with non-temporal stores: b is 16-byte aligned. */
static uint64_t gather2_nt(const unsigned char *s, unsigned char *b, uint64_t n, int unit)
{
    return gather2_to(s, b, n, unit, true);
}
#endif

static void row_fast(unsigned char *s, unsigned char *b, uint64_t n, int64_t cs, int unit, bool unpack)
{
#ifdef HAVE_SSE2_GATHER
    if (!unpack && unit <= 4 && cs == 2 * unit) { /* measured: slower than the element loop at 8 bytes */
        uint64_t done = gather2(s, b, n, unit);
        s += (int64_t)done * cs;
        b += done * (uint64_t)unit;
        n -= done;
    }
#endif
    row_plain(s, b, n, cs, unit, unpack);
}

/* A pack whose bytes go out of this CPU (a pinned slot a DMA reads next):
 * the gathers store around the cache (non-temporal), so that the slot's
 * lines are neither read for ownership first nor evict the strided side's,
 * and the 8-byte every-other gather is worth it then (the reads and the
 * slot's writes are the memory traffic; in cache the loop was faster). */
static void row_stream(unsigned char *s, unsigned char *b, uint64_t n, int64_t cs, int unit, bool unpack)
{
#ifdef HAVE_SSE2_GATHER
    if (!unpack && unit <= 8 && cs == 2 * unit) {
        uint64_t head = ((16 - ((uintptr_t)b & 15)) & 15) / (uint64_t)unit; /* elements before b is aligned */
        if (head * (uint64_t)unit == ((16 - ((uintptr_t)b & 15)) & 15)) { /* b aligned on the unit */
            if (head > n)
                head = n;
            row_plain(s, b, head, cs, unit, false);
            s += (int64_t)head * cs;
            b += head * (uint64_t)unit;
            n -= head;
            uint64_t done = gather2_nt(s, b, n, unit);
            s += (int64_t)done * cs;
            b += done * (uint64_t)unit;
            n -= done;
        }
    }
#endif
    row_fast(s, b, n, cs, unit, unpack);
}

typedef void (*row_fn)(unsigned char *s, unsigned char *b, uint64_t n, int64_t cs, int unit, bool unpack);

static void range(const gm_pack_params *p, bool unpack, uint64_t e0, uint64_t e1, void *buf, row_fn row)
{
    if (e1 <= e0 || p->cols == 0)
        return;
    const uint64_t cols = p->cols;
    const int unit = p->unit;
    uint64_t r = e0 / cols, c = e0 % cols;
    /* the odometer of row r over the outer axes, and its byte offset */
    long long idx[GM_PACK_MAX_OUTER];
    int64_t off = 0;
    uint64_t q = r;
    for (int k = p->nouter - 1; k >= 0; k--) {
        uint64_t ext = (uint64_t)p->outer_shape[k];
        idx[k] = (long long)(k > 0 ? q % ext : q);
        q = k > 0 ? q / ext : 0;
        off += idx[k] * p->outer_stride[k];
    }
    unsigned char *b = buf;
    for (uint64_t e = e0; e < e1;) {
        uint64_t n = cols - c < e1 - e ? cols - c : e1 - e;
        row((unsigned char *)(uintptr_t)p->strided + off + (int64_t)c * p->col_stride, b, n, p->col_stride, unit,
            unpack);
        b += n * (uint64_t)unit;
        e += n;
        c = 0;
        for (int k = p->nouter - 1; k >= 0; k--) { /* the next row */
            off += p->outer_stride[k];
            if (++idx[k] < p->outer_shape[k] || k == 0)
                break;
            off -= idx[k] * p->outer_stride[k];
            idx[k] = 0;
        }
    }
}

void gm_cpu_pack_range(const gm_pack_params *p, bool unpack, uint64_t e0, uint64_t e1, void *buf)
{
    range(p, unpack, e0, e1, buf, row_fast);
}

void gm_cpu_pack_range_out(const gm_pack_params *p, uint64_t e0, uint64_t e1, void *buf)
{
    range(p, false, e0, e1, buf, row_stream);
#ifdef HAVE_SSE2_GATHER
    _mm_sfence(); /* the non-temporal stores are done before whatever reads buf next is started */
#endif
}

void gm_cpu_copy_out(void *dst, const void *src, size_t n)
{
#ifdef HAVE_SSE2_GATHER
    unsigned char *d = dst;
    const unsigned char *s = src;
    if (n >= GM_CPU_COPY_OUT_MIN) {
        size_t head = (16 - ((uintptr_t)d & 15)) & 15;
        memcpy(d, s, head);
        d += head;
        s += head;
        n -= head;
        for (; n >= 64; n -= 64, d += 64, s += 64) {
            __m128i a = _mm_loadu_si128((const __m128i *)(const void *)s);
            __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(s + 16));
            __m128i c = _mm_loadu_si128((const __m128i *)(const void *)(s + 32));
            __m128i e = _mm_loadu_si128((const __m128i *)(const void *)(s + 48));
            _mm_stream_si128((__m128i *)(void *)d, a);
            _mm_stream_si128((__m128i *)(void *)(d + 16), b);
            _mm_stream_si128((__m128i *)(void *)(d + 32), c);
            _mm_stream_si128((__m128i *)(void *)(d + 48), e);
        }
        _mm_sfence();
    }
    memcpy(d, s, n);
#else
    memcpy(dst, src, n);
#endif
}

void gm_cpu_pack_range_plain(const gm_pack_params *p, bool unpack, uint64_t e0, uint64_t e1, void *buf)
{
    range(p, unpack, e0, e1, buf, row_plain);
}
