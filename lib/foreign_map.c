/*
 * foreign_map.c - the pointer tables of the foreign tier (foreign.h): a
 * live allocation is found again by its address in O(1) expected, and the
 * runtimes' names with their counters.
 *
 * Each table is split into shards by a hash of the address, each shard a
 * chained hash table under its own mutex that doubles when its entries
 * outnumber its buckets, so that threads allocating at once rarely meet.
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "foreign.h"

/* ---- runtimes --------------------------------------------------------------------- */

typedef struct runtime {
    char name[GM_FOREIGN_NAME_MAX];
    _Atomic uint64_t device_bytes, device_count, host_bytes, host_count, managed_bytes, managed_count;
    _Atomic uint64_t peak_device_bytes, allocations, frees;
} runtime;

static runtime runtimes[GM_FOREIGN_MAX_RUNTIMES];
static atomic_int runtime_count; /* entries [0, runtime_count) are complete */
static pthread_mutex_t runtime_lock = PTHREAD_MUTEX_INITIALIZER;

static bool name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n >= GM_FOREIGN_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.'))
            return false;
    }
    return true;
}

/* The index of name among the complete entries, or -1. */
static int runtime_find(const char *name)
{
    int n = atomic_load_explicit(&runtime_count, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (strcmp(runtimes[i].name, name) == 0)
            return i;
    return -1;
}

gpumem_status gm_foreign_runtime_index(const char *name, const char *what, int *index)
{
    if (name == NULL)
        name = "c";
    int i = runtime_find(name);
    if (i >= 0) {
        *index = i;
        return GPUMEM_OK;
    }
    GM_RETURN_ERROR_IF(!name_ok(name), GPUMEM_ERROR_INVALID_VALUE,
                       "%s: runtime name '%.40s' is not 1 to %d characters of a-z, 0-9, '_', '-' and '.'", what,
                       name, GM_FOREIGN_NAME_MAX - 1);
    pthread_mutex_lock(&runtime_lock);
    i = runtime_find(name);
    int n = atomic_load_explicit(&runtime_count, memory_order_relaxed);
    if (i < 0 && n < GM_FOREIGN_MAX_RUNTIMES) {
        strcpy(runtimes[n].name, name);
        atomic_store_explicit(&runtime_count, n + 1, memory_order_release);
        i = n;
    }
    pthread_mutex_unlock(&runtime_lock);
    GM_RETURN_ERROR_IF(i < 0, GPUMEM_ERROR_INVALID_VALUE,
                       "%s: runtime name '%s' would be a %dth runtime; a process has at most %d", what, name,
                       GM_FOREIGN_MAX_RUNTIMES + 1, GM_FOREIGN_MAX_RUNTIMES);
    *index = i;
    return GPUMEM_OK;
}

const char *gm_foreign_runtime_name(int i)
{
    return i >= 0 && i < atomic_load_explicit(&runtime_count, memory_order_acquire) ? runtimes[i].name : "?";
}

void gm_foreign_count(const gm_fentry *e, int sign)
{
    runtime *r = &runtimes[e->runtime];
    uint64_t bytes = e->block.bytes;
    _Atomic uint64_t *b = e->kind == GPUMEM_MEMORY_DEVICE ? &r->device_bytes
                        : e->kind == GPUMEM_MEMORY_MANAGED ? &r->managed_bytes : &r->host_bytes;
    _Atomic uint64_t *c = e->kind == GPUMEM_MEMORY_DEVICE ? &r->device_count
                        : e->kind == GPUMEM_MEMORY_MANAGED ? &r->managed_count : &r->host_count;
    if (sign > 0) {
        uint64_t now = atomic_fetch_add_explicit(b, bytes, memory_order_relaxed) + bytes;
        atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&r->allocations, 1, memory_order_relaxed);
        if (e->kind == GPUMEM_MEMORY_DEVICE) {
            uint64_t peak = atomic_load_explicit(&r->peak_device_bytes, memory_order_relaxed);
            while (now > peak && !atomic_compare_exchange_weak_explicit(&r->peak_device_bytes, &peak, now,
                                                                         memory_order_relaxed, memory_order_relaxed)) {
            }
        }
    } else {
        atomic_fetch_sub_explicit(b, bytes, memory_order_relaxed);
        atomic_fetch_sub_explicit(c, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&r->frees, 1, memory_order_relaxed);
    }
}

GPUMEM_API gpumem_status gpumem_foreign_stats(const char *runtime_name, struct gpumem_foreign_stats *stats)
{
    GM_CHECK_NULL(stats);
    const char *name = runtime_name != NULL ? runtime_name : "c";
    GM_RETURN_ERROR_IF(!name_ok(name), GPUMEM_ERROR_INVALID_VALUE,
                       "gpumem_foreign_stats: runtime name '%.40s' is not 1 to %d characters of a-z, 0-9, '_', "
                       "'-' and '.'", name, GM_FOREIGN_NAME_MAX - 1);
    GM_RETURN_ERROR_IF(stats->size < sizeof(size_t) + sizeof(uint64_t), GPUMEM_ERROR_INVALID_VALUE,
                       "gpumem_foreign_stats: stats->size is %zu, less than the first field needs", stats->size);
    struct gpumem_foreign_stats s = {.size = sizeof s};
    int i = runtime_find(name);
    if (i >= 0) {
        runtime *r = &runtimes[i];
        s.device_bytes = atomic_load_explicit(&r->device_bytes, memory_order_relaxed);
        s.device_count = atomic_load_explicit(&r->device_count, memory_order_relaxed);
        s.host_bytes = atomic_load_explicit(&r->host_bytes, memory_order_relaxed);
        s.host_count = atomic_load_explicit(&r->host_count, memory_order_relaxed);
        s.managed_bytes = atomic_load_explicit(&r->managed_bytes, memory_order_relaxed);
        s.managed_count = atomic_load_explicit(&r->managed_count, memory_order_relaxed);
        s.peak_device_bytes = atomic_load_explicit(&r->peak_device_bytes, memory_order_relaxed);
        s.allocations = atomic_load_explicit(&r->allocations, memory_order_relaxed);
        s.frees = atomic_load_explicit(&r->frees, memory_order_relaxed);
    }
    size_t n = stats->size < sizeof s ? stats->size : sizeof s;
    size_t keep = stats->size;
    memcpy(stats, &s, n);
    stats->size = keep;
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_foreign_runtime(int index, const char **name)
{
    GM_CHECK_NULL(name);
    int n = atomic_load_explicit(&runtime_count, memory_order_acquire);
    GM_RETURN_ERROR_IF(index < 0 || index >= n, GPUMEM_ERROR_INVALID_VALUE,
                       "gpumem_foreign_runtime: index %d: there are %d runtimes", index, n);
    *name = runtimes[index].name;
    return GPUMEM_OK;
}

/* ---- the pointer tables ----------------------------------------------------------- */

#define SHARDS 64
#define FIRST_BUCKETS 64

typedef struct shard {
    pthread_mutex_t lock;
    gm_fentry **buckets;
    size_t nbuckets; /* a power of two, or 0 before the first put */
    size_t count;
} shard;

static shard tables[2][SHARDS];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void tables_init(void)
{
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < SHARDS; i++)
            pthread_mutex_init(&tables[t][i].lock, NULL);
}

static inline uint64_t hash(uint64_t addr)
{
    /* Allocations are at least 256-byte aligned in practice: mix the high bits in. */
    uint64_t h = (addr >> 8) * UINT64_C(0x9E3779B97F4A7C15);
    return h ^ (h >> 29);
}

static inline shard *shard_of(gm_fspace space, uint64_t h)
{
    return &tables[space][h & (SHARDS - 1)];
}

static inline size_t bucket_of(const shard *s, uint64_t h)
{
    return (size_t)(h >> 6) & (s->nbuckets - 1);
}

/* Doubles s (locked); false when out of memory (s unchanged). */
static bool grow(shard *s)
{
    size_t n = s->nbuckets ? s->nbuckets * 2 : FIRST_BUCKETS;
    gm_fentry **b = calloc(n, sizeof *b);
    if (b == NULL)
        return false;
    for (size_t i = 0; i < s->nbuckets; i++) {
        gm_fentry *e = s->buckets[i];
        while (e != NULL) {
            gm_fentry *next = e->next;
            size_t j = (size_t)(hash(e->block.addr) >> 6) & (n - 1);
            e->next = b[j];
            b[j] = e;
            e = next;
        }
    }
    free(s->buckets);
    s->buckets = b;
    s->nbuckets = n;
    return true;
}

gpumem_status gm_foreign_map_put(gm_fspace space, gm_fentry *e, const char *what)
{
    pthread_once(&tables_once, tables_init);
    uint64_t h = hash(e->block.addr);
    shard *s = shard_of(space, h);
    pthread_mutex_lock(&s->lock);
    if (s->count >= s->nbuckets && !grow(s) && s->nbuckets == 0) {
        pthread_mutex_unlock(&s->lock);
        return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory (the pointer table)", what);
    }
    size_t j = bucket_of(s, h);
    e->next = s->buckets[j];
    s->buckets[j] = e;
    s->count++;
    pthread_mutex_unlock(&s->lock);
    return GPUMEM_OK;
}

gm_fentry *gm_foreign_map_take(gm_fspace space, uint64_t addr)
{
    pthread_once(&tables_once, tables_init);
    uint64_t h = hash(addr);
    shard *s = shard_of(space, h);
    gm_fentry *found = NULL;
    pthread_mutex_lock(&s->lock);
    if (s->nbuckets != 0) {
        for (gm_fentry **p = &s->buckets[bucket_of(s, h)]; *p != NULL; p = &(*p)->next) {
            if ((*p)->block.addr == addr) {
                found = *p;
                *p = found->next;
                s->count--;
                break;
            }
        }
    }
    pthread_mutex_unlock(&s->lock);
    return found;
}

bool gm_foreign_map_find(gm_fspace space, uint64_t addr, gm_fentry *out)
{
    pthread_once(&tables_once, tables_init);
    uint64_t h = hash(addr);
    shard *s = shard_of(space, h);
    bool found = false;
    pthread_mutex_lock(&s->lock);
    if (s->nbuckets != 0) {
        for (gm_fentry *e = s->buckets[bucket_of(s, h)]; e != NULL; e = e->next) {
            if (e->block.addr == addr) {
                *out = *e;
                found = true;
                break;
            }
        }
    }
    pthread_mutex_unlock(&s->lock);
    return found;
}
