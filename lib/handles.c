/*
 * handles.c - storage for array handles (handles.h): a per-thread ring of
 * released blocks (the quarantine), a shared free list behind it, and chunks
 * of new blocks that stay reachable from `chunks` until the process ends.
 */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>

#include "handles.h"

#define RING 256   /* blocks a thread keeps; power of two */
#define CHUNK 64   /* blocks made at once */

typedef struct free_block {
    uint32_t magic; /* the caller's: left as it was */
    struct free_block *next;
} free_block;

typedef struct chunk {
    struct chunk *next;
    /* blocks follow, aligned to 64 */
} chunk;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static free_block *shared;   /* released blocks that no thread ring took */
static chunk *chunks;        /* every chunk made: never freed */
static size_t block_size;    /* fixed at the first call */

typedef struct ring {
    void *slot[RING];
    unsigned head, tail; /* taken from head, given at tail */
} ring;

static _Thread_local ring mine;
static pthread_key_t exit_key;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;

/* A thread that ends hands its ring to the shared list. */
static void ring_exit(void *arg)
{
    ring *r = arg;
    pthread_mutex_lock(&lock);
    while (r->head != r->tail) {
        free_block *b = r->slot[r->head++ % RING];
        b->next = shared;
        shared = b;
    }
    pthread_mutex_unlock(&lock);
}

static void exit_init(void)
{
    (void)pthread_key_create(&exit_key, ring_exit);
}

static void *take_shared(size_t size)
{
    pthread_mutex_lock(&lock);
    free_block *b = shared;
    if (b != NULL) {
        shared = b->next;
    } else {
        if (block_size == 0)
            block_size = (size + 63) & ~(size_t)63;
        void *mem = NULL;
        if (posix_memalign(&mem, 64, 64 + CHUNK * block_size) == 0) {
            chunk *c = mem;
            c->next = chunks;
            chunks = c;
            char *first = (char *)mem + 64;
            for (size_t i = 1; i < CHUNK; i++) {
                free_block *f = (free_block *)(void *)(first + i * block_size);
                f->next = shared;
                shared = f;
            }
            b = (free_block *)(void *)first;
        }
    }
    pthread_mutex_unlock(&lock);
    return b;
}

void *gm_handle_take(size_t size)
{
    ring *r = &mine;
    if (r->tail - r->head > GM_HANDLE_QUARANTINE)
        return r->slot[r->head++ % RING];
    return take_shared(size);
}

void gm_handle_give(void *block)
{
    ring *r = &mine;
    if (r->tail - r->head < RING) {
        if (r->tail == r->head && r->tail == 0) {
            /* the thread's first release: its ring goes back when it ends */
            pthread_once(&exit_once, exit_init);
            (void)pthread_setspecific(exit_key, r);
        }
        r->slot[r->tail++ % RING] = block;
        return;
    }
    pthread_mutex_lock(&lock);
    free_block *b = block;
    b->next = shared;
    shared = b;
    pthread_mutex_unlock(&lock);
}
