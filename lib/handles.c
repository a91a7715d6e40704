/*
 * handles.c - the lifecycle check and the quarantine of every handle type
 * (handles.h).
 *
 * Small objects: per size class, chunks of blocks that stay reachable from
 * `chunks` until the process ends; each thread's ring of the blocks it
 * released (the quarantine), a shared FIFO behind the rings, and a list of
 * fresh blocks never used.  Large objects: calloc, and one FIFO of released
 * ones before free().
 */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "handles.h"
#include "lifecycle.h"

#define GRAIN 64                          /* block sizes are multiples; blocks are aligned to it */
#define CLASSES (GM_HANDLE_SMALL_MAX / GRAIN)
#define RING 256                          /* blocks a thread's ring keeps per class; power of two */
#define CHUNK 64                          /* blocks made at once */
#define LARGE ((uint32_t)CLASSES)         /* gm_handle.store of a large object */

_Static_assert(RING > GM_HANDLE_QUARANTINE, "the ring holds the quarantine");
_Static_assert(sizeof(gm_handle) <= 16, "a block's link (offset 8) is past the magic");

/* A block in the shared FIFO or the fresh list: its header's magic stays
 * dead; the link overwrites what follows. */
typedef struct free_block {
    gm_handle head;
    struct free_block *next;
} free_block;

typedef struct chunk {
    struct chunk *next;
    /* blocks follow, from offset GRAIN */
} chunk;

typedef struct shared_class {
    free_block *first, *last; /* released blocks, oldest first */
    size_t count;
    free_block *fresh;        /* never used */
} shared_class;

/* One lock for the shared structures: they are the slow path (a thread's
 * ring serves its own releases). */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static shared_class shared[CLASSES];
static chunk *chunks; /* every chunk made: never freed */

typedef struct ring {
    unsigned head, tail; /* taken from head, given at tail */
    void *slot[RING];
} ring;

typedef struct thread_rings {
    ring *r[CLASSES]; /* made at the thread's first release of the class */
} thread_rings;

static _Thread_local thread_rings mine;
static pthread_key_t exit_key;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;

static void shared_put_locked(unsigned c, void *block)
{
    free_block *b = block;
    b->next = NULL;
    if (shared[c].last != NULL)
        shared[c].last->next = b;
    else
        shared[c].first = b;
    shared[c].last = b;
    shared[c].count++;
}

/* A thread that ends hands its rings to the shared FIFOs, oldest first. */
static void rings_exit(void *arg)
{
    thread_rings *t = arg;
    pthread_mutex_lock(&lock);
    for (unsigned c = 0; c < CLASSES; c++) {
        ring *r = t->r[c];
        if (r == NULL)
            continue;
        while (r->head != r->tail)
            shared_put_locked(c, r->slot[r->head++ % RING]);
        t->r[c] = NULL;
        free(r);
    }
    pthread_mutex_unlock(&lock);
}

const gm_life_hook gm_handles_life = {.what = "the handle rings", .key = &exit_key, .thread_exit = rings_exit};
static bool exit_key_ok;

static void exit_init(void)
{
    exit_key_ok = gm_life_arm(&gm_handles_life) == 0;
}

static void *take_shared(unsigned c)
{
    size_t bs = (size_t)(c + 1) * GRAIN;
    pthread_mutex_lock(&lock);
    shared_class *s = &shared[c];
    free_block *b = NULL;
    if (s->count > GM_HANDLE_QUARANTINE) {
        b = s->first;
        s->first = b->next;
        if (s->first == NULL)
            s->last = NULL;
        s->count--;
    } else if (s->fresh != NULL) {
        b = s->fresh;
        s->fresh = b->next;
    } else {
        void *mem = NULL;
        if (posix_memalign(&mem, GRAIN, GRAIN + CHUNK * bs) == 0) {
            chunk *ch = mem;
            ch->next = chunks;
            chunks = ch;
            char *first = (char *)mem + GRAIN;
            for (size_t i = CHUNK - 1; i >= 1; i--) {
                free_block *f = (free_block *)(void *)(first + i * bs);
                f->next = s->fresh;
                s->fresh = f;
            }
            b = (free_block *)(void *)first;
        }
    }
    pthread_mutex_unlock(&lock);
    return b;
}

static void *take_small(unsigned c)
{
    ring *r = mine.r[c];
    if (r != NULL && r->tail - r->head > GM_HANDLE_QUARANTINE)
        return r->slot[r->head++ % RING];
    return take_shared(c);
}

static void give_small(unsigned c, void *block)
{
    ring *r = mine.r[c];
    if (r == NULL) {
        pthread_once(&exit_once, exit_init);
        r = calloc(1, sizeof *r);
        if (r != NULL) {
            mine.r[c] = r;
            /* the thread's rings go back when it ends */
            if (exit_key_ok)
                (void)pthread_setspecific(exit_key, &mine);
        }
    }
    if (r != NULL && r->tail - r->head < RING) {
        r->slot[r->tail++ % RING] = block;
        return;
    }
    pthread_mutex_lock(&lock);
    if (r != NULL) { /* full: its oldest goes on to the shared FIFO, having waited RING releases */
        shared_put_locked(c, r->slot[r->head++ % RING]);
        r->slot[r->tail++ % RING] = block;
    } else {
        shared_put_locked(c, block);
    }
    pthread_mutex_unlock(&lock);
}

/* ---- large objects ---- */

static pthread_mutex_t large_lock = PTHREAD_MUTEX_INITIALIZER;
static void *large_fifo[GM_HANDLE_QUARANTINE_LARGE]; /* released large objects (calloc's pointers), a ring */
static unsigned large_head, large_count;

/* What calloc gave for a large object sits just before it. */
static void *large_mem(void *h)
{
    void *mem;
    memcpy(&mem, (char *)h - sizeof mem, sizeof mem);
    return mem;
}

static void *take_large(size_t size)
{
    if (size > SIZE_MAX - GRAIN - sizeof(void *))
        return NULL;
    char *mem = calloc(1, size + GRAIN + sizeof(void *));
    if (mem == NULL)
        return NULL;
    uintptr_t at = ((uintptr_t)mem + sizeof(void *) + GRAIN - 1) & ~(uintptr_t)(GRAIN - 1);
    char *h = (char *)at;
    memcpy(h - sizeof(void *), &mem, sizeof(void *));
    return h;
}

static void give_large(void *h)
{
    void *evict = NULL;
    pthread_mutex_lock(&large_lock);
    if (large_count == GM_HANDLE_QUARANTINE_LARGE) {
        evict = large_fifo[large_head];
        large_head = (large_head + 1) % GM_HANDLE_QUARANTINE_LARGE;
        large_count--;
    }
    /* What calloc gave, so that leak checkers see the block held. */
    large_fifo[(large_head + large_count++) % GM_HANDLE_QUARANTINE_LARGE] = large_mem(h);
    pthread_mutex_unlock(&large_lock);
    free(evict);
}

/* ---- the interface ---- */

static void *handle_new(gm_handle_type t, size_t size, bool zero)
{
    if (size < sizeof(gm_handle))
        size = sizeof(gm_handle);
    gm_handle *h;
    if (size <= GM_HANDLE_SMALL_MAX) {
        unsigned c = (unsigned)((size - 1) / GRAIN);
        h = take_small(c);
        if (h == NULL)
            return NULL;
        if (zero)
            memset((char *)h + sizeof *h, 0, size - sizeof *h);
        h->store = c;
    } else {
        h = take_large(size); /* calloc: zeroed */
        if (h == NULL)
            return NULL;
        h->store = LARGE;
    }
    __atomic_store_n(&h->magic, GM_HANDLE_LIVE(t), __ATOMIC_RELEASE);
    return h;
}

void *gm_handle_new(gm_handle_type t, size_t size)
{
    return handle_new(t, size, false);
}

void *gm_handle_new_zeroed(gm_handle_type t, size_t size)
{
    return handle_new(t, size, true);
}

static bool is_live_magic(uint32_t m)
{
    return (m & UINT32_C(0xffff0000)) == GM_HANDLE_BASE && (m & 0xffu) == 0x4cu;
}

bool gm_handle_kill(void *h, gm_handle_type t)
{
    if (h == NULL)
        return false;
    uint32_t live = GM_HANDLE_LIVE(t);
    return __atomic_compare_exchange_n(&((gm_handle *)h)->magic, &live, GM_HANDLE_DEAD(t), false,
                                       __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

void gm_handle_free(void *p)
{
    if (p == NULL)
        return;
    gm_handle *h = p;
    uint32_t m = __atomic_load_n(&h->magic, __ATOMIC_RELAXED);
    if (is_live_magic(m))
        __atomic_store_n(&h->magic, (m & ~UINT32_C(0xff)) | 0x44u, __ATOMIC_RELEASE);
    if (h->store < CLASSES)
        give_small(h->store, h);
    else if (h->store == LARGE)
        give_large(h);
    /* GM_HANDLE_STATIC: never freed */
}

/* ---- messages ---- */

static const struct {
    const char *name;  /* in words */
    const char *a;     /* with its article */
    const char *ctype; /* the public type */
    const char *ended; /* what the user did to end it */
} types[GM_HANDLE_TYPES] = {
    [GM_HANDLE_CONTEXT] = {"context", "a context", "gpumem_context", "released"},
    [GM_HANDLE_ARRAY] = {"array", "an array", "gpumem_array", "released"},
    [GM_HANDLE_STREAM] = {"stream", "a stream", "gpumem_stream", "destroyed"},
    [GM_HANDLE_POOL] = {"device pool", "a device pool", "gpumem_pool", "destroyed"},
    [GM_HANDLE_HOST_POOL] = {"host pool", "a host pool", "gpumem_host_pool", "destroyed"},
    [GM_HANDLE_REGISTRATION] = {"registration scope", "a registration scope", "gpumem_registration", "ended"},
    [GM_HANDLE_MODULE] = {"module", "a module", "gpumem_module", "released"},
    [GM_HANDLE_FUNCTION] = {"function", "a function", "gpumem_function", "released with its module"},
    [GM_HANDLE_DEVICE_DATA] = {"device data", "a device data object", "gpumem_device_data", "destroyed"},
    [GM_HANDLE_DTYPE] = {"dtype", "a dtype", "gpumem_dtype", "released"},
    [GM_HANDLE_EVENT] = {"event", "an event", "gpumem_event", "destroyed"},
    [GM_HANDLE_POOL_IMPORT] = {"pool import", "a pool import", "gpumem_pool_import", "closed"},
};

const char *gm_handle_type_name(gm_handle_type t)
{
    return t > 0 && t < GM_HANDLE_TYPES ? types[t].name : "handle";
}

gpumem_status gm_handle_error(const void *h, gm_handle_type t, const char *what, const char *arg)
{
    if (h == NULL)
        return gm_error(GPUMEM_ERROR_NULL_ARGUMENT, "%s: argument '%s' is NULL", what, arg);
    uint32_t m = __atomic_load_n(&((const gm_handle *)h)->magic, __ATOMIC_ACQUIRE);
    if (m == GM_HANDLE_LIVE(t)) /* it became live: only a racing reuse of stale memory does that */
        return gm_error(GPUMEM_ERROR_INVALID_STATE, "%s: '%s' was %s already and its memory reused", what, arg,
                        types[t].ended);
    if (m == GM_HANDLE_DEAD(t))
        return gm_error(GPUMEM_ERROR_INVALID_STATE, "%s: '%s' was %s already (a dead %s handle)", what, arg,
                        types[t].ended, types[t].name);
    unsigned other = (m >> 8) & 0xffu;
    if ((m & UINT32_C(0xffff0000)) == GM_HANDLE_BASE && other > 0 && other < GM_HANDLE_TYPES) {
        if ((m & 0xffu) == 0x4cu)
            return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: '%s' is %s (%s), not %s (%s)", what, arg,
                            types[other].a, types[other].ctype, types[t].a, types[t].ctype);
        if ((m & 0xffu) == 0x44u)
            return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: '%s' is %s (%s), %s already, and not %s (%s)", what,
                            arg, types[other].a, types[other].ctype, types[other].ended, types[t].a,
                            types[t].ctype);
    }
    return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: '%s' is not %s (%s): a pointer to something else, or "
                    "a handle released long ago", what, arg, types[t].a, types[t].ctype);
}
