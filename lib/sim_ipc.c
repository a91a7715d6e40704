/*
 * sim_ipc.c - the simulator's IPC handles: device memory shared between
 * processes (sim.h says what the driver calls answer).
 *
 * A simulated allocation's bytes are malloc'd in the process that made it,
 * out of another process's reach.  Exporting one (cuIpcGetMemHandle) moves
 * its bytes, once, into a memfd mapped MAP_SHARED, and the handle names the
 * process, the memfd's number there and its inode.  Another process opens
 * the memfd through /proc/<pid>/fd/<n>, checks the inode (the number may
 * have been reused since), maps it and registers the mapping at a fresh
 * address of its context's window: both processes then read and write the
 * same pages, as with CUDA IPC.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cuda_abi.h"
#include "sim_impl.h"

/* The handle's bytes: magic, the exporting process, its memfd, the allocation. */
#define SIM_IPC_MAGIC "GMSIMIP2"
typedef struct sim_ipc {
    char magic[8];
    uint64_t pid;
    uint64_t ino;    /* the memfd's inode and file system, to tell a reused number */
    uint64_t st_dev;
    uint64_t base;   /* informative: the address in the exporting process */
    uint64_t size;
    int32_t fd;      /* the memfd's number in the exporting process */
    int32_t dev;
} sim_ipc;
_Static_assert(sizeof(sim_ipc) <= sizeof(gm_cu_ipc_mem_handle), "sim_ipc must fit in a CUipcMemHandle");

void gm_sim_ipc_free(sim_alloc *r)
{
    munmap(r->mem, r->size);
    if (r->shared)
        close(r->fd);
}

/* Moves r's bytes into a memfd (lock held; no queued op uses r, so no
 * worker holds a pointer into the old bytes). */
static int share_locked(sim_alloc *r)
{
    char name[64];
    snprintf(name, sizeof name, "gpumem-sim-%llx", (unsigned long long)r->base);
    int fd = memfd_create(name, MFD_CLOEXEC);
    if (fd < 0)
        return GM_CUDA_ERROR_OUT_OF_MEMORY;
    unsigned char *mem = MAP_FAILED;
    if (ftruncate(fd, (off_t)r->size) == 0)
        mem = mmap(NULL, r->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (mem == MAP_FAILED) {
        close(fd);
        return GM_CUDA_ERROR_OUT_OF_MEMORY;
    }
    memcpy(mem, r->mem, r->size);
    free(r->mem);
    r->mem = mem;
    r->fd = fd;
    r->shared = true;
    return CU_OK;
}

int gm_sim_ipc_get_mem_handle(gm_dctx *ctx, gm_cu_ipc_mem_handle *handle, gm_cu_deviceptr ptr)
{
    if (handle == NULL)
        return GM_CUDA_ERROR_INVALID_VALUE;
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? CU_OK : GM_CUDA_ERROR_INVALID_CONTEXT;
    sim_alloc *r = rc == CU_OK ? gm_sim_reg_find(ptr) : NULL;
    if (rc == CU_OK && (r == NULL || r->kind != GM_SIM_MEM_DEVICE || r->module || r->ipc_mapped || r->vmm != NULL))
        rc = GM_CUDA_ERROR_INVALID_VALUE; /* only cuMemAlloc memory of this process has IPC handles */
    if (rc == CU_OK && !r->shared) {
        /* wait until no queued op holds r (ours and the registry's are the two
         * references left): they point into the bytes that are about to move */
        r->refs++;
        bool live;
        while ((live = gm_sim_reg_find(r->base) == r) && r->refs > 2)
            pthread_cond_wait(&S.done, &S.mu);
        if (!live)
            rc = GM_CUDA_ERROR_INVALID_VALUE; /* freed meanwhile */
        else if (!r->shared) /* another export may have moved it meanwhile */
            rc = share_locked(r);
        gm_sim_alloc_unref(r);
    }
    struct stat st;
    if (rc == CU_OK && fstat(r->fd, &st) != 0)
        rc = GM_CUDA_ERROR_UNKNOWN;
    if (rc == CU_OK) {
        sim_ipc h = {.pid = (uint64_t)getpid(), .ino = (uint64_t)st.st_ino, .st_dev = (uint64_t)st.st_dev,
                     .base = r->base, .size = r->size, .fd = r->fd, .dev = r->dev};
        memcpy(h.magic, SIM_IPC_MAGIC, sizeof h.magic);
        memset(handle, 0, sizeof *handle);
        memcpy(handle, &h, sizeof h);
    }
    unlock();
    return rc;
}

/* Maps the exporting process's memfd: CUDA_ERROR_INVALID_VALUE when it is
 * gone (the process exited or freed the memory, so the number is closed or
 * names another file now). */
static int map_remote(const sim_ipc *h, unsigned char **mem)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%llu/fd/%d", (unsigned long long)h->pid, (int)h->fd);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOMEM ? GM_CUDA_ERROR_OUT_OF_MEMORY : GM_CUDA_ERROR_INVALID_VALUE;
    struct stat st;
    int rc = CU_OK;
    if (fstat(fd, &st) != 0 || (uint64_t)st.st_ino != h->ino || (uint64_t)st.st_dev != h->st_dev ||
        st.st_size < 0 || (uint64_t)st.st_size != h->size)
        rc = GM_CUDA_ERROR_INVALID_VALUE;
    /* /proc/<pid> also names this process's own threads: a handle whose pid
     * is one of them reaches this process's own memfd, which the driver
     * refuses as it refuses the exporting process.  That memfd is this
     * process's descriptor h->fd.  When open() gave fd that very number,
     * the number was free here until now, so /proc/self/fd/<n> is the file
     * just opened, which says nothing: only another descriptor tells. */
    struct stat own;
    char self[64];
    snprintf(self, sizeof self, "/proc/self/fd/%d", (int)h->fd);
    if (rc == CU_OK && fd != h->fd && stat(self, &own) == 0 && own.st_ino == st.st_ino && own.st_dev == st.st_dev)
        rc = GM_CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CU_OK) {
        void *p = mmap(NULL, (size_t)h->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED)
            rc = GM_CUDA_ERROR_OUT_OF_MEMORY;
        else
            *mem = p;
    }
    close(fd); /* the mapping keeps the memory */
    return rc;
}

int gm_sim_ipc_open_mem_handle(gm_dctx *ctx, gm_cu_deviceptr *ptr, const gm_cu_ipc_mem_handle *handle,
                               unsigned flags)
{
    if (ptr == NULL || handle == NULL || (flags & ~(unsigned)GM_CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) != 0)
        return GM_CUDA_ERROR_INVALID_VALUE;
    sim_ipc h;
    memcpy(&h, handle, sizeof h);
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? CU_OK : GM_CUDA_ERROR_INVALID_CONTEXT;
    unlock();
    if (rc != CU_OK)
        return rc;
    if (memcmp(h.magic, SIM_IPC_MAGIC, sizeof h.magic) != 0 || h.size == 0 || h.size > SIZE_MAX || h.fd < 0)
        return GM_CUDA_ERROR_INVALID_VALUE;
    if (h.pid == (uint64_t)getpid())
        return GM_CUDA_ERROR_INVALID_CONTEXT; /* what the driver answers in the exporting process */
    unsigned char *mem = NULL;
    if ((rc = map_remote(&h, &mem)) != CU_OK)
        return rc;
    lock();
    rc = gm_sim_ctx_ok(ctx) ? gm_sim_ipc_map_locked(ctx, mem, (size_t)h.size, ptr) : GM_CUDA_ERROR_INVALID_CONTEXT;
    unlock();
    if (rc != CU_OK)
        munmap(mem, (size_t)h.size);
    return rc;
}

int gm_sim_ipc_close_mem_handle(gm_dctx *ctx, gm_cu_deviceptr ptr)
{
    lock();
    int rc = gm_sim_ctx_ok(ctx) ? CU_OK : GM_CUDA_ERROR_INVALID_CONTEXT;
    sim_alloc *r = rc == CU_OK ? gm_sim_reg_find(ptr) : NULL;
    if (rc == CU_OK && (r == NULL || r->base != ptr || !r->ipc_mapped || r->dev != ctx->ordinal))
        rc = GM_CUDA_ERROR_INVALID_VALUE; /* not a mapping this context opened */
    if (rc == CU_OK)
        gm_sim_alloc_drop(r); /* unmapped once queued ops using it are done */
    unlock();
    return rc;
}
