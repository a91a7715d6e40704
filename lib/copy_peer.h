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

/* What a copy between two devices holds, acquired as its decision asked
 * (gm_copy_probe): [0] on the source's device, [1] on the destination's. */
typedef struct gm_peer_hold {
    gpumem_context *ctx[2];
    struct gm_pack_kernels *k[2];
    struct gm_scratch *s[2];
} gm_peer_hold;

/* gm_copy_probe's acquire for a copy between two devices (ctx[] set): the
 * kernels of device `side`, or scratch of bytes there (with its side stream
 * when two), its last use waited for on that device's legacy stream, where
 * the copy starts; *have false when the kernels cannot be loaded or the
 * device has no room.  Other failures are returned, named after what. */
gpumem_status gm_copy_peer_acquire(const char *what, gm_peer_hold *h, gm_copy_need need, int side, uint64_t bytes,
                                   bool two, bool *have);

/* Gives back what h holds (after gm_copy_peer, or when the copy took
 * another way). */
void gm_copy_peer_release(gm_peer_hold *h);

/* Copies src into dst, device arrays of two different devices (arguments
 * checked: equal shape and dtype, dst writable, nonzero size), as decided
 * (GM_HOW_PEER: the path PEER or PEER_STAGED, the way, which sides are
 * packed on their devices, in which chunks), with the kernels and scratch
 * the decision acquired into h (the caller gives them back).  stream is NULL or
 * a stream of either array's device (the caller checked).  GM_PEER_COPY
 * with peer access is queued on stream; every other way waits for stream
 * first, runs on both devices' legacy streams and completes before
 * returning. */
gpumem_status gm_copy_peer(const char *what, gpumem_array *dst, const gpumem_array *src, gpumem_stream *stream,
                           const gm_copy_decision *d, gm_peer_hold *h);

/* The context hook (lib/wiring.c): forgets the peer access enabled between
 * the context's device and others. */
extern const gm_context_hook gm_copy_peer_hook;

#endif /* GM_COPY_PEER_H */
