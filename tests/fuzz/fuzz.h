/*
 * fuzz.h - shared by the libFuzzer targets of tests/fuzz/.
 *
 * Each target defines LLVMFuzzerTestOneInput (and may define
 * fuzz_init, run once before the first input).  Built with clang's
 * -fsanitize=fuzzer by `make fuzz`; built with replay.c's main by the
 * normal `make check`, which runs every committed input of
 * tests/fuzz/corpus/<target>/ (seeds and crash regressions) through it.
 * A broken oracle aborts, which both report as a failure.
 */
#ifndef GPUMEM_FUZZ_H
#define GPUMEM_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define FUZZ_CHECK(cond, ...) \
    do { \
        if (!(cond)) { \
            fprintf(stderr, "%s:%d: oracle failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__); \
            fputc('\n', stderr); \
            abort(); \
        } \
    } while (0)

/* Reads the input as a stream of small numbers; past its end, zeros. */
typedef struct fuzz_reader {
    const uint8_t *p;
    size_t n;
} fuzz_reader;

static inline unsigned fuzz_u8(fuzz_reader *r)
{
    if (r->n == 0)
        return 0;
    r->n--;
    return *r->p++;
}

static inline uint64_t fuzz_u64(fuzz_reader *r)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | fuzz_u8(r);
    return v;
}

/* A value in [lo, hi] (hi - lo < 2^16). */
static inline int64_t fuzz_range(fuzz_reader *r, int64_t lo, int64_t hi)
{
    unsigned v = fuzz_u8(r) << 8 | fuzz_u8(r);
    return lo + (int64_t)(v % (unsigned)(hi - lo + 1));
}

/* The rest of the input as a NUL-terminated string (malloc'd). */
static inline char *fuzz_rest_string(fuzz_reader *r)
{
    char *s = malloc(r->n + 1);
    if (s == NULL)
        abort();
    memcpy(s, r->p, r->n);
    s[r->n] = '\0';
    r->p += r->n;
    r->n = 0;
    return s;
}

#endif /* GPUMEM_FUZZ_H */
