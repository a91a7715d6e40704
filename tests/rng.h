/*
 * rng.h - the pseudo-random numbers of the tests (header-only).  Each test
 * keeps its own state, seeded in the file, so that its sequence, and so
 * every case it draws, is the same on every run and every machine.
 */
#ifndef GPUMEM_TEST_RNG_H
#define GPUMEM_TEST_RNG_H

#include <stdint.h>

/* xorshift64 (Marsaglia): the next value of *state (never 0 if seeded so). */
static inline uint64_t xorshift64(uint64_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

/* splitmix64 (Steele, Lea, Flood): the next value of *state, any seed. */
static inline uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

#endif /* GPUMEM_TEST_RNG_H */
