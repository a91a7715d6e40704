/* The three allocation patterns of issue 27, to record as traces and
 * replay on every allocator:
 *
 *   GPUMEM_TRACE=drift.trace bench/vmm-patterns drift
 *   gpumem trace replay drift.trace --allocator pool|vmm|async
 *
 *   drift    sizes that drift each round: 8 x (16+r) MiB allocated and
 *            freed, then 4 x (32+2r) MiB, 40 rounds (peak in use 440 MiB)
 *   growing  a 1 MiB array kept each round beside a short-lived large one
 *            growing from 10 to 187 MiB, 60 rounds (peak in use 247 MiB)
 *   random   random sizes and lifetimes: 24 sizes drawn once (log-uniform,
 *            64 KiB to 64 MiB), 4000 steps that free a random slot's
 *            array or allocate one of the sizes into it, at most 64 live,
 *            a fixed seed (the same trace on every machine)
 *
 * Arrays come from the driver (the default allocator), so the trace holds
 * the program's own allocations and frees, in order, whatever replays them.
 * bench/gpu-vmm.sh runs it on a GPU. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <gpumem.h>

#define MIB ((int64_t)1 << 20)

static gpumem_context *ctx;
static const gpumem_dtype *u8;

static gpumem_array *alloc(int64_t bytes)
{
    gpumem_array *a = NULL;
    if (gpumem_device_array(ctx, 1, &bytes, NULL, u8, 'C', NULL, &a) != GPUMEM_OK) {
        fprintf(stderr, "vmm-patterns: %s\n", gpumem_last_error());
        return NULL;
    }
    return a;
}

static int drift(void)
{
    for (int64_t r = 0; r < 40; r++) {
        gpumem_array *a[8];
        for (int i = 0; i < 8; i++)
            if ((a[i] = alloc((16 + r) * MIB)) == NULL)
                return 1;
        for (int i = 0; i < 8; i++)
            gpumem_array_release(a[i]);
        for (int i = 0; i < 4; i++)
            if ((a[i] = alloc((32 + 2 * r) * MIB)) == NULL)
                return 1;
        for (int i = 0; i < 4; i++)
            gpumem_array_release(a[i]);
    }
    return 0;
}

static int growing(void)
{
    gpumem_array *kept[60];
    int n = 0, rc = 0;
    for (int64_t r = 0; r < 60 && rc == 0; r++) {
        gpumem_array *big;
        if ((kept[n] = alloc(MIB)) == NULL || (big = alloc((10 + 3 * r) * MIB)) == NULL)
            rc = 1;
        else
            gpumem_array_release(big);
        n += kept[n] != NULL;
    }
    for (int i = 0; i < n; i++)
        gpumem_array_release(kept[i]);
    return rc;
}

static uint64_t rng = 0x9e3779b97f4a7c15u;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int random_pattern(void)
{
    /* 24 sizes, log-uniform from 64 KiB to 64 MiB, drawn once; each
     * allocation takes one of them: a program's arrays come in a few
     * shapes, whose lifetimes mix at random. */
    int64_t sizes[24];
    for (int i = 0; i < 24; i++) {
        int64_t base = (int64_t)1 << (16 + next() % 10);
        sizes[i] = base + (int64_t)(next() % (uint64_t)base) / 4096 * 4096;
    }
    gpumem_array *live[64] = {0};
    int rc = 0;
    for (int step = 0; step < 4000 && rc == 0; step++) {
        int slot = (int)(next() % 64);
        if (live[slot] != NULL) {
            gpumem_array_release(live[slot]);
            live[slot] = NULL;
        } else {
            rc = (live[slot] = alloc(sizes[next() % 24])) == NULL;
        }
    }
    for (int i = 0; i < 64; i++)
        if (live[i] != NULL)
            gpumem_array_release(live[i]);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 2 || (strcmp(argv[1], "drift") != 0 && strcmp(argv[1], "growing") != 0 &&
                      strcmp(argv[1], "random") != 0)) {
        fprintf(stderr, "usage: GPUMEM_TRACE=FILE vmm-patterns drift|growing|random\n");
        return 2;
    }
    u8 = gpumem_dtype_builtin(GPUMEM_UINT8);
    if (gpumem_context_create(0, &ctx) != GPUMEM_OK) {
        fprintf(stderr, "vmm-patterns: %s\n", gpumem_last_error());
        return 1;
    }
    int rc = strcmp(argv[1], "drift") == 0 ? drift() : strcmp(argv[1], "growing") == 0 ? growing() : random_pattern();
    gpumem_context_release(ctx);
    return rc;
}
