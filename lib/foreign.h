/*
 * foreign.h - the experimental tier for foreign runtimes (private):
 * gpumem/experimental/foreign.h.  foreign.c has the public calls, the
 * per-device state (contexts, pools) and the streams; foreign_map.c the
 * pointer table and the runtimes' names and counters.
 */
#ifndef GM_FOREIGN_H
#define GM_FOREIGN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc.h"

#define GPUMEM_EXPERIMENTAL
#include "gpumem/experimental/foreign.h"

/* Devices this tier serves: ordinals 0 to GM_FOREIGN_MAX_DEVICES - 1. */
#define GM_FOREIGN_MAX_DEVICES 64
/* Runtime names: at most this many, each at most GM_FOREIGN_NAME_MAX - 1 characters. */
#define GM_FOREIGN_MAX_RUNTIMES 16
#define GM_FOREIGN_NAME_MAX 16

/* Which table a pointer is in: device and managed memory, or page-locked
 * host memory (their addresses may coincide on the simulator). */
typedef enum gm_fspace { GM_FSPACE_DEVICE = 0, GM_FSPACE_HOST = 1 } gm_fspace;

/* One live allocation. */
typedef struct gm_fentry {
    struct gm_fentry *next;  /* in its bucket */
    gm_block block;          /* what gm_alloc_free takes back; for device memory block.stream (held) and
                              * block.legacy_only are the allocation's stream */
    gpumem_context *ctx;     /* the context it was allocated in (the device's, kept until exit) */
    int device;
    int runtime;             /* index of its runtime's name */
    gpumem_memory_kind kind; /* DEVICE, PINNED, MAPPED or MANAGED */
} gm_fentry;

/* The runtime named `name` (NULL: "c"), added on first use: its index, or
 * a failure naming `what` (a bad name, a 17th runtime). */
gpumem_status gm_foreign_runtime_index(const char *name, const char *what, int *index);
/* Counts an allocation (+1) or a free (-1) of e for its runtime. */
void gm_foreign_count(const gm_fentry *e, int sign);
/* The name of runtime index i. */
const char *gm_foreign_runtime_name(int i);

/* Adds e (keyed by e->block.addr) to the table of space; e is the table's
 * until taken.  HOST_OUT_OF_MEMORY when the table cannot grow (e stays the
 * caller's). */
gpumem_status gm_foreign_map_put(gm_fspace space, gm_fentry *e, const char *what);
/* Takes the entry of addr out of the table of space: NULL if none. */
gm_fentry *gm_foreign_map_take(gm_fspace space, uint64_t addr);
/* Copies the entry of addr (its fields; next is meaningless) into *out:
 * false if none. */
bool gm_foreign_map_find(gm_fspace space, uint64_t addr, gm_fentry *out);

#endif /* GM_FOREIGN_H */
