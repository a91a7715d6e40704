/*
 * batch_overlap.h - the collision check of a batched copy's pairs
 * (private; copy_batch.c's).
 */
#ifndef GM_BATCH_OVERLAP_H
#define GM_BATCH_OVERLAP_H

#include <stdbool.h>
#include <stddef.h>

#include "array.h"

/* How a call names the two sides of pair i. */
typedef struct batch_names {
    const char *what;
    void (*name)(char *buf, size_t size, size_t i, bool dst);
} batch_names;

/* GPUMEM_ERROR_INVALID_VALUE when a destination shares memory with
 * another pair's destination or source, or may share it where telling
 * takes too many steps (gpumem/batch.h); the first such pair in the order
 * of a walk over destination i, then pair j != i, then j's destination
 * (once per two destinations) before its source, named with nm. */
gpumem_status gm_batch_check_collisions(const batch_names *nm, size_t n, gpumem_array *const *dst,
                                        gpumem_array *const *src);

#endif /* GM_BATCH_OVERLAP_H */
