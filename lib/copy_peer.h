/*
 * copy_peer.h - copies between device arrays of two different devices
 * (private; copy.c sends them here).  gpumem/peer.h describes the paths and
 * their settings.
 */
#ifndef GM_COPY_PEER_H
#define GM_COPY_PEER_H

#include "array.h"
#include "copy_decide.h"

/* Whether a and b are device arrays of two different devices. */
bool gm_copy_is_cross_device(const gpumem_array *a, const gpumem_array *b);

/* Whether a copy between the devices of dst and src goes through peer
 * access: the setting allows it, and the devices can, with access enabled
 * both ways (once per pair, remembered). */
gpumem_status gm_copy_peer_ready(const char *what, const gpumem_array *dst, const gpumem_array *src, bool *ready);

/* Copies src into dst, device arrays of two different devices (arguments
 * checked: equal shape and dtype, dst writable, nonzero size), as decided
 * (GM_HOW_PEER: the path PEER or PEER_STAGED, the way, which sides are
 * packed on their devices, in which chunks).  stream is NULL or a stream of
 * either array's device (the caller checked).  GM_PEER_COPY with peer
 * access is queued on stream; every other way waits for stream first, runs
 * on both devices' legacy streams and completes before returning.  When a
 * device's kernels or scratch cannot be had, nothing is written and
 * *missing says which (the caller decides again). */
gpumem_status gm_copy_peer(const char *what, gpumem_array *dst, const gpumem_array *src, gpumem_stream *stream,
                           const gm_copy_decision *d, gm_copy_reason *missing);

/* The context hook (lib/wiring.c): forgets the peer access enabled between
 * the context's device and others. */
extern const gm_context_hook gm_copy_peer_hook;

#endif /* GM_COPY_PEER_H */
