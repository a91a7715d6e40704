/*
 * sim_impl.h - the simulator's shared state (private to sim*.c).
 *
 * The simulator is split by what it simulates: devices and contexts (sim.c,
 * which also fills the driver table), memory and the allocation registry
 * (sim_memory.c), streams and events with their
 * worker threads (sim_stream.c), copies and memsets (sim_copy.c), and
 * modules, functions, globals, occupancy and launches (sim_module.c).
 * Module images are read by sim_image.c (PTX by sim_ptx.c, cubins by
 * sim_elf.c), architectures described by sim_arch.c.
 *
 * One mutex guards all state: devices, the allocation registry, streams with
 * their queues, and events.  Workers let go of it only to move bytes or to
 * run a host function.  S.done is broadcast whenever an operation completes
 * (or a context teardown ends); synchronous callers and workers blocked on a
 * wait item sleep on it.
 *
 * Every queued operation has a number in its stream (1, 2, ...); a stream
 * counts what it enqueued and completed, and flush_to says up to which number
 * a synchronization wants work done without the delay.  Waits between
 * streams are queue items "until stream X completed op n", with n taken at
 * enqueue time, so they never form a cycle, and a flush follows them at once
 * (gm_sim_flush), so a synchronize never waits for the delay.
 *
 * IPC handles (sim_ipc.c) reach another process through shared memory:
 * see sim.h.
 *
 * Functions one file calls in another have a gm_sim_ prefix (hidden, like
 * every internal symbol); "_locked" or a comment says where the lock must be
 * held.
 */
#ifndef GM_SIM_IMPL_H
#define GM_SIM_IMPL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "cuda_abi.h"
#include "driver.h"
#include "sim.h"

#define DEVICE_ALIGN 512 /* cuMemAlloc alignment (texture alignment) */
#define DEVICE_GAP 512   /* unbacked bytes after each allocation: overruns fault */
#define GRANULE 256      /* unit of the capacity accounting */
#define WINDOW (UINT64_C(1) << GM_SIM_DEVICE_SHIFT)

enum { CU_OK = GM_CUDA_SUCCESS };

typedef struct sim_resv sim_resv; /* an address reservation (sim_vmm.c) */

typedef struct sim_alloc {
    uint64_t base;      /* the address users see */
    size_t size;        /* bytes asked for */
    size_t charged;     /* bytes counted against the device or host limit */
    unsigned char *mem; /* the bytes: our backing for device memory, else base */
    bool owned;         /* mem is freed with the record */
    gm_sim_mem_kind kind;
    int dev;
    unsigned flags;
    unsigned refs; /* 1 while in the registry, +1 per queued op using it */
    bool module;   /* a module's global: only module_unload frees it */
    /* IPC (sim_ipc.c): an exported allocation's bytes move to a memfd that
     * other processes map; an opened handle is such a mapping (not owned) */
    bool shared;     /* mem is a MAP_SHARED mapping of memfd `fd`, owned */
    bool ipc_mapped; /* mem maps another process's memfd (cuIpcOpenMemHandle) */
    int fd;          /* the memfd, while shared */
    bool placed;     /* GPUMEM_SIM_FIRST_FIT: it holds [place, place + charged) of its device */
    uint64_t place;
    /* An address reservation (cuMemAddressReserve, sim_vmm.c): mem is a
     * PROT_NONE host mapping of its size that cuMemMap maps physical memory
     * into; only its mapped, accessible bytes may be used. */
    sim_resv *vmm;
} sim_alloc;

/* A run of a device's memory that an allocation holds (GPUMEM_SIM_FIRST_FIT). */
typedef struct sim_place {
    uint64_t off, len;
} sim_place;

enum { OP_COPY, OP_SET, OP_HOSTFN, OP_RECORD, OP_WAIT, OP_KERNEL };

typedef struct sim_op {
    struct sim_op *next;
    int kind;
    uint64_t seq;          /* its number in its stream */
    struct timespec ready; /* when it may run without a flush */
    sim_alloc *hold[2];    /* allocations kept alive until it completes */
    void *staging;         /* our copy of a pageable source */
    union {
        struct {
            unsigned char *dst;
            const unsigned char *src;
            size_t w, h, d, dpitch, dslice, spitch, sslice;
        } copy;
        struct {
            unsigned char *dst;
            unsigned value, elem;
            size_t count;
        } set;
        struct {
            gm_cu_host_fn fn;
            void *data;
        } host;
        struct {
            gm_devent *ev;
            uint64_t gen;
        } rec;
        struct {
            void (*fn)(void *arg); /* a kernel run natively; arg is freed after */
            void *arg;
        } kernel;
        struct {
            gm_dstream *target;
            uint64_t n;
        } wait;
    } u;
} sim_op;

struct gm_dstream {
    gm_dctx *dev;
    unsigned flags;
    bool is_default;
    bool stop;
    unsigned refs; /* the handle, wait items, events and synchronous callers */
    pthread_t thread;
    pthread_cond_t cv; /* wakes the worker (CLOCK_MONOTONIC, for the delay) */
    sim_op *head, *tail;
    uint64_t enqueued, completed, flush_to;
    uint64_t dflt_waited;    /* blocking: the default stream's last op it waits for */
    uint64_t waited_by_dflt; /* blocking: its last op the default stream waits for */
    gm_dstream *next, *prev; /* S.streams, while the handle is valid */
};

struct gm_devent {
    gm_dctx *dev;
    unsigned flags;
    unsigned refs;      /* the handle and queued records */
    gm_dstream *stream; /* of the last record (referenced); NULL: never recorded */
    uint64_t seq;       /* that record's number there */
    uint64_t rec_gen;   /* records made */
    uint64_t done_gen;  /* the newest record that ran */
    struct timespec time;
    gm_devent *next, *prev;
};

/* A kernel of a loaded module. */
struct gm_dfunc {
    gm_dmodule *mod;
    char *name;
    size_t shared_bytes, local_bytes;
    int num_regs;           /* a cubin's; 0: unknown */
    int max_dynamic_shared; /* -1: the default */
    int native;             /* the library's pack kernel it is (kernels/pack.h index), or -1 */
    int carveout;           /* PREFERRED_SHARED_MEMORY_CARVEOUT, -1 until set */
};

typedef struct sim_global {
    char *name;
    size_t size;
    uint64_t addr;
} sim_global;

/* A loaded module; its kernels and globals live as long as it does. */
struct gm_dmodule {
    gm_dctx *dev;
    bool native_pack;       /* the library's own pack module (kernels/pack.h): its kernels run in C */
    int ptx_target;
    size_t const_bytes;
    gm_dfunc *funcs;
    size_t nfuncs;
    sim_global *globals;
    size_t nglobals;
    gm_dmodule *next, *prev; /* S.modules */
};

/* A device and its primary context: the context handle is its address. */
struct gm_dctx {
    int ordinal;
    unsigned refs;
    bool closing;      /* the last release is tearing it down */
    uint64_t used;     /* device and managed bytes charged */
    uint64_t next_off; /* bump pointer in the device's address window */
    gm_dstream *dflt;  /* the legacy default stream, while retained */
    uint64_t peers;    /* bit per ordinal: peer access enabled (ctx_enable_peer_access) */
    sim_place *place;  /* GPUMEM_SIM_FIRST_FIT: the runs held, sorted by offset */
    size_t nplace, capplace;
};

struct gm_sim_state {
    pthread_mutex_t mu;
    pthread_cond_t done;
    bool loaded;
    int ndev;
    uint64_t capacity;
    uint64_t host_limit, host_used;
    uint64_t other;  /* GPUMEM_SIM_OTHER_MEMORY: each device's bytes that other processes hold */
    bool first_fit;  /* GPUMEM_SIM_FIRST_FIT: device memory is one range, handed out first fit */
    long delay_us;
    const gm_sim_arch *arch;
    uint64_t busy; /* bit per ordinal */
    uint64_t can_peer[GM_SIM_MAX_DEVICES]; /* bit per ordinal: device i can access it (GPUMEM_SIM_PEERS) */
    int numa_node[GM_SIM_MAX_DEVICES];     /* GPUMEM_SIM_NUMA: device i's node, -1 for none (sim_numa.c) */
    size_t page;
    struct gm_dctx dev[GM_SIM_MAX_DEVICES];
    sim_alloc **reg; /* sorted by base; records never overlap */
    size_t nreg, capreg;
    gm_dstream *streams;
    gm_devent *events;
    gm_dmodule *modules;
    unsigned workers;
};

/* The one state (sim.c); S is its short name in the simulator's files. */
extern struct gm_sim_state gm_sim_S;
#define S gm_sim_S

static inline void lock(void)
{
    pthread_mutex_lock(&S.mu);
}

static inline void unlock(void)
{
    pthread_mutex_unlock(&S.mu);
}

/* ---- sim.c: devices, contexts (with the lock held) ---- */

/* Whether ctx is a device's primary context, retained. */
bool gm_sim_ctx_ok(const gm_dctx *ctx);
/* Whether addr lies in some device's address window. */
bool gm_sim_in_device_window(uint64_t addr);

/* ---- sim_memory.c: the allocation registry and memory (the gm_sim_reg_,
 * gm_sim_alloc_ and _locked ones with the lock held) ---- */

/* The record holding addr, or NULL. */
sim_alloc *gm_sim_reg_find(uint64_t addr);
/* The record holding all of [addr, addr + len), len > 0, or NULL. */
sim_alloc *gm_sim_reg_find_range(uint64_t addr, size_t len);
/* Drops a reference to r; the last one frees it. */
void gm_sim_alloc_unref(sim_alloc *r);
/* Takes r out of the registry and gives its bytes back to its limit. */
void gm_sim_alloc_drop(sim_alloc *r);
/* cuMemAlloc in ctx: device memory filled with GM_SIM_GARBAGE_BYTE. */
int gm_sim_mem_alloc_locked(gm_dctx *ctx, gm_cu_deviceptr *ptr, size_t bytes);
/* Registers mem (bytes long, mapped by the caller) at a fresh address of
 * ctx's window as an IPC mapping: device memory, not owned, not charged. */
int gm_sim_ipc_map_locked(gm_dctx *ctx, unsigned char *mem, size_t bytes, gm_cu_deviceptr *ptr);

int gm_sim_mem_get_info(gm_dctx *ctx, size_t *free_bytes, size_t *total_bytes);
int gm_sim_mem_alloc(gm_dctx *ctx, gm_cu_deviceptr *ptr, size_t bytes);
int gm_sim_mem_free(gm_dctx *ctx, gm_cu_deviceptr ptr);
int gm_sim_mem_alloc_async(gm_dctx *ctx, gm_cu_deviceptr *ptr, size_t bytes, gm_dstream *stream);
int gm_sim_mem_free_async(gm_dctx *ctx, gm_cu_deviceptr ptr, gm_dstream *stream);
int gm_sim_mem_alloc_managed(gm_dctx *ctx, gm_cu_deviceptr *ptr, size_t bytes, unsigned flags);
int gm_sim_mem_host_alloc(gm_dctx *ctx, void **ptr, size_t bytes, unsigned flags);
int gm_sim_mem_free_host(gm_dctx *ctx, void *ptr);
int gm_sim_mem_host_register(gm_dctx *ctx, void *ptr, size_t bytes, unsigned flags);
int gm_sim_mem_host_unregister(gm_dctx *ctx, void *ptr);
int gm_sim_mem_host_get_device_pointer(gm_dctx *ctx, gm_cu_deviceptr *dptr, void *ptr);
int gm_sim_pointer_get_attributes(unsigned count, const int *attrs, void **data, gm_cu_deviceptr ptr);
int gm_sim_mem_get_address_range(gm_dctx *ctx, gm_cu_deviceptr *base, size_t *size, gm_cu_deviceptr ptr);

/* Reserves bytes at the end of ctx's address window: *base, and the
 * extent to add to next_off once the record is in. */
bool gm_sim_window_reserve(gm_dctx *ctx, size_t bytes, uint64_t *base, size_t *extent);
/* Inserts r in the registry (false: out of memory). */
bool gm_sim_reg_insert(sim_alloc *r);

/* ---- sim_vmm.c: virtual memory management (reservations, physical
 * memory, mappings, access; the granularity is GM_SIM_VMM_GRANULARITY) ---- */

#define GM_SIM_VMM_GRANULARITY ((size_t)2 << 20)

/* Whether [off, off + len) of reservation v is mapped and accessible (lock held). */
bool gm_sim_vmm_accessible(const sim_resv *v, uint64_t off, size_t len);
/* Frees a reservation whose record went: its mappings and host range. */
void gm_sim_vmm_free(sim_resv *v);
int gm_sim_mem_get_allocation_granularity(gm_dctx *ctx, size_t *granularity, const gm_cu_mem_alloc_prop *prop,
                                          int option);
int gm_sim_mem_address_reserve(gm_dctx *ctx, gm_cu_deviceptr *ptr, size_t size, size_t alignment);
int gm_sim_mem_address_free(gm_dctx *ctx, gm_cu_deviceptr ptr, size_t size);
int gm_sim_mem_create(gm_dctx *ctx, gm_cu_mem_handle *handle, size_t size, const gm_cu_mem_alloc_prop *prop);
int gm_sim_mem_release(gm_dctx *ctx, gm_cu_mem_handle handle);
int gm_sim_mem_map(gm_dctx *ctx, gm_cu_deviceptr ptr, size_t size, gm_cu_mem_handle handle);
int gm_sim_mem_unmap(gm_dctx *ctx, gm_cu_deviceptr ptr, size_t size);
int gm_sim_mem_set_access(gm_dctx *ctx, gm_cu_deviceptr ptr, size_t size, const gm_cu_mem_access_desc *desc,
                          size_t count);
int gm_sim_mem_export_to_shareable_handle(gm_dctx *ctx, void *shareable, gm_cu_mem_handle handle, int type);
int gm_sim_mem_import_from_shareable_handle(gm_dctx *ctx, gm_cu_mem_handle *handle, void *os_handle, int type);
int gm_sim_mem_pool_create(gm_dctx *ctx, gm_dmempool **pool, const gm_cu_mem_pool_props *props);
int gm_sim_mem_pool_destroy(gm_dctx *ctx, gm_dmempool *pool);
int gm_sim_mem_pool_attribute(gm_dctx *ctx, gm_dmempool *pool, int attr, uint64_t *value);
int gm_sim_mem_pool_trim_to(gm_dctx *ctx, gm_dmempool *pool, size_t keep);
int gm_sim_mem_pool_set_access(gm_dctx *ctx, gm_dmempool *pool, const gm_cu_mem_access_desc *desc, size_t count);
int gm_sim_mem_pool_export_to_shareable_handle(gm_dctx *ctx, void *shareable, gm_dmempool *pool, int type);
int gm_sim_mem_pool_import_from_shareable_handle(gm_dctx *ctx, gm_dmempool **pool, void *os_handle, int type);
int gm_sim_mem_pool_export_pointer(gm_dctx *ctx, gm_cu_mem_pool_ptr_export_data *data, gm_cu_deviceptr ptr);
int gm_sim_mem_pool_import_pointer(gm_dctx *ctx, gm_cu_deviceptr *ptr, gm_dmempool *pool,
                                   gm_cu_mem_pool_ptr_export_data *data);
int gm_sim_mem_alloc_from_pool_async(gm_dctx *ctx, gm_cu_deviceptr *ptr, size_t bytes, gm_dmempool *pool,
                                     gm_dstream *stream);

/* ---- sim_ipc.c: IPC handles between processes ---- */

/* Unmaps r's shared or mapped bytes (its last reference went). */
void gm_sim_ipc_free(sim_alloc *r);
int gm_sim_ipc_get_mem_handle(gm_dctx *ctx, gm_cu_ipc_mem_handle *handle, gm_cu_deviceptr ptr);
int gm_sim_ipc_open_mem_handle(gm_dctx *ctx, gm_cu_deviceptr *ptr, const gm_cu_ipc_mem_handle *handle,
                               unsigned flags);
int gm_sim_ipc_close_mem_handle(gm_dctx *ctx, gm_cu_deviceptr ptr);

/* ---- sim_stream.c: streams, events ---- */

/* A new stream of device dev with its worker (lock held). */
int gm_sim_stream_new(gm_dctx *dev, unsigned flags, bool is_default, gm_dstream **out);
/* Invalidates s, drains it and joins its worker (drops the lock meanwhile). */
void gm_sim_stream_retire(gm_dstream *s);
/* Unlinks an event from S.events and drops the handle's reference. */
void gm_sim_event_unlink(gm_devent *ev);
/* The stream handle h names for ctx; NULL is the legacy default stream
 * (lock held). */
int gm_sim_stream_get(gm_dctx *ctx, gm_dstream *h, gm_dstream **out);
/* Queues op on s and, when wait, returns once it ran (lock held; dropped
 * while it waits).  On failure op is freed. */
int gm_sim_submit(gm_dstream *s, sim_op *op, bool wait);
/* Keeps rec (may be NULL) alive in op's slot i until op ran. */
void gm_sim_op_hold(sim_op *op, int i, sim_alloc *rec);

int gm_sim_ctx_synchronize(gm_dctx *ctx);
int gm_sim_stream_create(gm_dctx *ctx, gm_dstream **stream, unsigned flags);
int gm_sim_stream_destroy(gm_dctx *ctx, gm_dstream *stream);
int gm_sim_stream_synchronize(gm_dctx *ctx, gm_dstream *stream);
int gm_sim_stream_query(gm_dctx *ctx, gm_dstream *stream);
int gm_sim_stream_wait_event(gm_dctx *ctx, gm_dstream *stream, gm_devent *event);
int gm_sim_launch_host_func(gm_dctx *ctx, gm_dstream *stream, gm_cu_host_fn fn, void *data);
int gm_sim_event_create(gm_dctx *ctx, gm_devent **event, unsigned flags);
int gm_sim_event_destroy(gm_dctx *ctx, gm_devent *event);
int gm_sim_event_record(gm_dctx *ctx, gm_devent *event, gm_dstream *stream);
int gm_sim_event_query(gm_dctx *ctx, gm_devent *event);
int gm_sim_event_synchronize(gm_dctx *ctx, gm_devent *event);
int gm_sim_event_elapsed_time(gm_dctx *ctx, float *ms, gm_devent *start, gm_devent *end);

/* Queues fn(arg) on stream of ctx as device work (a kernel the simulator
 * runs natively), in stream order; a and b (may be NULL) stay alive until
 * it ran, and arg is freed after.  Lock held; on failure arg is freed. */
int gm_sim_submit_kernel_locked(gm_dctx *ctx, gm_dstream *stream, void (*fn)(void *), void *arg, sim_alloc *a,
                                sim_alloc *b);

/* ---- sim_copy.c: copies, memsets ---- */

int gm_sim_memcpy(gm_dctx *ctx, gm_cu_deviceptr dst, gm_cu_deviceptr src, size_t bytes, gm_dstream *stream,
                  int async);
int gm_sim_memcpy_2d(gm_dctx *ctx, const gm_cu_memcpy2d *c, gm_dstream *stream, int async);
int gm_sim_memcpy_peer(gm_dctx *ctx, gm_cu_deviceptr dst, gm_dctx *dst_ctx, gm_cu_deviceptr src, gm_dctx *src_ctx,
                       size_t bytes, gm_dstream *stream, int async);
int gm_sim_memcpy_3d(gm_dctx *ctx, const gm_cu_memcpy3d *c, gm_dstream *stream, int async);
int gm_sim_memset(gm_dctx *ctx, gm_cu_deviceptr dst, unsigned value, unsigned elem_size, size_t count,
                  gm_dstream *stream, int async);

/* ---- sim_module.c: modules, functions, globals, occupancy, launches ---- */

/* Unlinks m, frees its globals' memory and the module (lock held). */
void gm_sim_module_free(gm_dmodule *m);

int gm_sim_module_load_data(gm_dctx *ctx, gm_dmodule **module, const void *image, size_t size, char *error_log,
                            size_t log_size);
int gm_sim_module_unload(gm_dctx *ctx, gm_dmodule *module);
int gm_sim_module_get_function(gm_dctx *ctx, gm_dfunc **func, gm_dmodule *module, const char *name);
int gm_sim_module_get_global(gm_dctx *ctx, gm_cu_deviceptr *dptr, size_t *bytes, gm_dmodule *module,
                             const char *name);
int gm_sim_func_get_attribute(gm_dctx *ctx, int *value, int attr, gm_dfunc *func);
int gm_sim_func_set_attribute(gm_dctx *ctx, gm_dfunc *func, int attr, int value);
int gm_sim_occupancy_max_active_blocks(gm_dctx *ctx, int *blocks, gm_dfunc *func, int block_size,
                                       size_t dynamic_smem);
int gm_sim_launch_kernel(gm_dctx *ctx, gm_dfunc *func, const unsigned grid[3], const unsigned block[3],
                         unsigned shared_bytes, gm_dstream *stream, void **params);

/* GPUMEM_SIM_NUMA (sim_numa.c): each of the ndev devices' NUMA node into
 * node_of[] (-1 for every one when unset); a bad value is
 * GPUMEM_ERROR_INVALID_ENVIRONMENT naming the variable. */
gpumem_status gm_sim_numa_parse(long ndev, int *node_of);

#endif /* GM_SIM_IMPL_H */
