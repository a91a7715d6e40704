/*
 * pool_ipc.h - sharing a virtual-memory pool's chunks with another process
 * (gpumem/pool_ipc.h): the wire format over a Unix socket (pool_ipc_wire.c)
 * and the import (pool_ipc.c).  The file descriptors travel as SCM_RIGHTS
 * control messages; everything read is untrusted and checked whole before
 * the driver sees it.
 */
#ifndef GM_POOL_IPC_H
#define GM_POOL_IPC_H

#include <stddef.h>
#include <stdint.h>

#include "gpumem/status.h"
#include "source.h"

/* A send's header fields (gpumem/pool_ipc.h's table). */
typedef struct gm_ipc_pool_info {
    uint64_t id, reserved, granularity;
    int32_t pci[3];
} gm_ipc_pool_info;

/* Whether sock is an open AF_UNIX socket (else INVALID_VALUE naming
 * 'socket_fd'); *stream: a SOCK_STREAM one (messages have no boundaries). */
gpumem_status gm_pool_ipc_socket(int sock, const char *what, int *stream);

/* Sends the n chunks (their fds) as one send; closes none of them. */
gpumem_status gm_pool_ipc_write(int sock, int stream, const gm_ipc_pool_info *info, const gm_source_chunk *c,
                                size_t n, const char *what);

/* Receives one send: its header's fields and its chunks (*c malloc'd,
 * sorted by offset, each with its received fd, which the caller closes).
 * On failure every fd received is closed and *c is NULL. */
gpumem_status gm_pool_ipc_read(int sock, int stream, const char *what, gm_ipc_pool_info *info, gm_source_chunk **c,
                               size_t *n);

/* Closes the fds of c[0..n) that are not -1, and frees c. */
void gm_pool_ipc_chunks_free(gm_source_chunk *c, size_t n);

#endif /* GM_POOL_IPC_H */
