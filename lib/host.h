/*
 * host.h - the registry of page-locked host memory (private).
 *
 * One process-wide, sorted list of disjoint ranges that libgpumem knows to be
 * page-locked: its own allocations (pinned, mapped, managed arrays) and the
 * page-granular, reference-counted ranges of registration scopes.
 */
#ifndef GM_HOST_H
#define GM_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpumem/status.h"

/* Records / forgets an allocation of page-locked memory. */
gpumem_status gm_host_track_allocation(const void *start, size_t bytes);
void gm_host_untrack_allocation(const void *start);

/* Whether every byte of [p, p + bytes) is page-locked as far as we know. */
bool gm_host_is_locked(const void *p, size_t bytes);

#endif /* GM_HOST_H */
