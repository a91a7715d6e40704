/*
 * handles.h - storage for array handles (private).
 *
 * Array objects are never handed back to malloc while the library runs:
 * a released handle is marked dead and recycled, so a second release of it
 * (or a retain) reads memory that is still an array object and is refused
 * with GPUMEM_ERROR_INVALID_STATE instead of touching freed memory.  A
 * recycled object waits in its thread's quarantine of GM_HANDLE_QUARANTINE
 * releases before it is handed out again, so a stale handle is caught
 * unless that many arrays were released by the thread in between.
 * Taking a handle from the thread's ring is also cheaper than malloc on the
 * array fast path.
 */
#ifndef GM_HANDLES_H
#define GM_HANDLES_H

#include <stddef.h>
#include <stdint.h>

#define GM_HANDLE_LIVE UINT32_C(0x4c495645) /* "LIVE" */
#define GM_HANDLE_DEAD UINT32_C(0x44454144) /* "DEAD" */
#define GM_HANDLE_QUARANTINE 64

/* A block of `size` bytes (the same size at every call) for a new handle,
 * or NULL when out of memory.  Its first 4 bytes are the caller's magic. */
void *gm_handle_take(size_t size);

/* Gives a handle's block back for reuse (its magic already set dead). */
void gm_handle_give(void *block);

#endif /* GM_HANDLES_H */
