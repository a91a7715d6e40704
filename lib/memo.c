/*
 * memo.c - pycuda's context_dependent_memoize and clear_context_caches:
 * values computed once per context and key.
 *
 * Every context has its own table (a gm_memo, made on first use and
 * published in ctx->memo), so hits in different contexts share nothing and
 * hits in one context share one rwlock in read mode.  An entry is created
 * in the table as pending before its create callback runs (with no lock
 * held); threads that find it pending sleep on the table's condition
 * variable until the creator publishes the value or takes the entry out
 * again after a failure, then look again.
 *
 * Locks, in the order they may be taken: stores_mu (the list of tables,
 * with each table's busy count), then a table's wait_mu, then its rwlock.
 * No callback runs under any of them.
 *
 * Hits of gpumem_memoize skip even the rwlock: each table remembers its
 * last few hits (create, key, value) in a small cache that every thread
 * reads without a lock or a write (a sequence lock: a remembering thread
 * makes the sequence odd while it writes a slot, and a reader that saw it
 * change discards what it read), valid while the process-wide generation
 * `memo_gen` is the one it was filled under.  Every removal of an entry
 * (clear_context_caches, a context's end) bumps the generation under the
 * table's write lock before the entry is destroyed, so a remembered value
 * is never returned after its entry went.  The cache is the table's, not
 * the thread's: a thread-local one costs a call (__tls_get_addr) per hit
 * in a shared library, and the initial-exec model that avoids the call
 * makes a library opened with dlopen fail to load once other libraries
 * took glibc's static TLS (Python with PyTorch did, 2026-11-25).
 * (A value returned just before a concurrent clear may be destroyed by it,
 * as with the locked path: that is why the kernel cache passes an acquire
 * hook and always takes the locked path.)
 */
#include "config.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "memo.h"
#include "staging.h"

/* ---- the table's cache of hits ---- */

#define HIT_SLOTS 4
#define HIT_KEY_WORDS 4 /* keys up to 32 bytes are remembered */

/* Every field atomic: threads read a slot while another may write it (the
 * sequence then tells them to discard what they read). */
typedef struct memo_hit {
    _Atomic uint64_t gen;       /* 0: empty */
    _Atomic uintptr_t create;   /* the create callback, as an integer */
    _Atomic uintptr_t value;
    _Atomic uint64_t key_size;
    _Atomic uint64_t key[HIT_KEY_WORDS]; /* zero-padded */
} memo_hit;

typedef struct memo_entry {
    struct memo_entry *next; /* in its bucket */
    uint64_t hash;
    uint64_t seq; /* creation order, so that entries are destroyed newest first */
    gpumem_memo_create_fn create;
    gpumem_memo_destroy_fn destroy;
    void *user;
    void *value;
    bool ready;        /* false while the creator runs create */
    pthread_t creator; /* while not ready */
    size_t key_size;
    unsigned char key[];
} memo_entry;

typedef struct gm_memo {
    pthread_rwlock_t lock; /* the table: buckets, entries' ready and value */
    memo_entry **buckets;
    size_t nbuckets; /* a power of two */
    size_t count;
    uint64_t next_seq;
    pthread_mutex_t wait_mu; /* waiters for pending entries sleep on wait_cv */
    pthread_cond_t wait_cv;
    unsigned busy;               /* clear_context_caches is destroying entries of it (stores_mu) */
    struct gm_memo *next, *prev; /* in stores (stores_mu) */
    /* the cache of hits, on cache lines of its own (the table is allocated aligned) */
    _Alignas(64) atomic_uint hit_seq; /* even: stable; odd: a slot is being written */
    unsigned hit_next;                /* the slot the next hit takes (while hit_seq is odd) */
    memo_hit hit[HIT_SLOTS];
    char hit_end[] __attribute__((aligned(64)));
} gm_memo;

static pthread_mutex_t stores_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t stores_cv = PTHREAD_COND_INITIALIZER;
static gm_memo *stores;
/* the generation, read by every hit: on a cache line no other variable
 * shares (a neighbour written by other threads would make each hit a miss) */
static struct {
    _Alignas(64) _Atomic uint64_t v;
} memo_gen_line = {1};
#define memo_gen (memo_gen_line.v)

/* ---- the table's cache of hits ---- */

/* Key word w of key (key_size bytes), zero-padded. */
static inline uint64_t key_word(const void *key, size_t key_size, unsigned w)
{
    uint64_t v = 0;
    size_t at = (size_t)w * 8, n = key_size - at < 8 ? key_size - at : 8;
    memcpy(&v, (const unsigned char *)key + at, n);
    return v;
}

static inline bool key_equal(const memo_hit *h, const void *key, size_t key_size)
{
    /* fixed-size loads for the usual keys (a pointer, an id, two of them) */
    uint64_t w[2];
    switch (key_size) {
    case 0:
        return true;
    case 8:
        memcpy(w, key, 8);
        return w[0] == atomic_load_explicit(&h->key[0], memory_order_relaxed);
    case 16:
        memcpy(w, key, 16);
        return ((w[0] ^ atomic_load_explicit(&h->key[0], memory_order_relaxed)) |
                (w[1] ^ atomic_load_explicit(&h->key[1], memory_order_relaxed))) == 0;
    default:
        for (unsigned i = 0; (size_t)i * 8 < key_size; i++)
            if (key_word(key, key_size, i) != atomic_load_explicit(&h->key[i], memory_order_relaxed))
                return false;
        return true;
    }
}

static inline __attribute__((always_inline)) bool hit_find(gm_memo *m, gpumem_memo_create_fn create, const void *key, size_t key_size, void **value)
{
    if (key_size > HIT_KEY_WORDS * 8)
        return false;
    unsigned seq = atomic_load_explicit(&m->hit_seq, memory_order_acquire);
    if (seq & 1)
        return false;
    uint64_t gen = atomic_load_explicit(&memo_gen, memory_order_acquire);
    uintptr_t fn = (uintptr_t)create;
    for (unsigned i = 0; i < HIT_SLOTS; i++) {
        const memo_hit *h = &m->hit[i];
        if (atomic_load_explicit(&h->gen, memory_order_relaxed) != gen ||
            atomic_load_explicit(&h->create, memory_order_relaxed) != fn ||
            atomic_load_explicit(&h->key_size, memory_order_relaxed) != key_size || !key_equal(h, key, key_size))
            continue;
        uintptr_t v = atomic_load_explicit(&h->value, memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&m->hit_seq, memory_order_relaxed) != seq)
            return false; /* written meanwhile: the locked path decides */
        *value = (void *)v;
        return true;
    }
    return false;
}

/* Remembers a hit found under the table's lock (gen read under it too).
 * Another thread remembering at the same time wins; this one gives up. */
static void hit_remember(gm_memo *m, gpumem_memo_create_fn create, const void *key, size_t key_size, void *value,
                         uint64_t gen)
{
    if (key_size > HIT_KEY_WORDS * 8)
        return;
    unsigned seq = atomic_load_explicit(&m->hit_seq, memory_order_relaxed);
    if ((seq & 1) || !atomic_compare_exchange_strong_explicit(&m->hit_seq, &seq, seq + 1, memory_order_acquire,
                                                              memory_order_relaxed))
        return;
    atomic_thread_fence(memory_order_release); /* the odd sequence before the slot's new bytes */
    memo_hit *h = &m->hit[m->hit_next];
    m->hit_next = (m->hit_next + 1) % HIT_SLOTS;
    atomic_store_explicit(&h->gen, gen, memory_order_relaxed);
    atomic_store_explicit(&h->create, (uintptr_t)create, memory_order_relaxed);
    atomic_store_explicit(&h->value, (uintptr_t)value, memory_order_relaxed);
    atomic_store_explicit(&h->key_size, key_size, memory_order_relaxed);
    for (unsigned i = 0; i < HIT_KEY_WORDS; i++)
        atomic_store_explicit(&h->key[i], (size_t)i * 8 < key_size ? key_word(key, key_size, i) : 0,
                              memory_order_relaxed);
    atomic_store_explicit(&m->hit_seq, seq + 2, memory_order_release);
}

/* ---- hashing ------------------------------------------------------------------ */

#define FNV_OFFSET UINT64_C(0xcbf29ce484222325)
#define FNV_PRIME UINT64_C(0x100000001b3)

static uint64_t fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= FNV_PRIME;
    }
    return h;
}

static uint64_t entry_hash(gpumem_memo_create_fn create, const void *key, size_t key_size)
{
    unsigned char fn[sizeof create];
    memcpy(fn, &create, sizeof create);
    uint64_t h = fnv1a(FNV_OFFSET, fn, sizeof fn);
    h = fnv1a(h, &key_size, sizeof key_size);
    return fnv1a(h, key, key_size);
}

/* ---- tables ---------------------------------------------------------------------- */

static memo_entry *find(const gm_memo *m, uint64_t hash, gpumem_memo_create_fn create, const void *key,
                        size_t key_size)
{
    for (memo_entry *e = m->buckets[hash & (m->nbuckets - 1)]; e != NULL; e = e->next)
        if (e->hash == hash && e->create == create && e->key_size == key_size &&
            (key_size == 0 || memcmp(e->key, key, key_size) == 0))
            return e;
    return NULL;
}

/* Doubles the buckets when the table is full; a failure only keeps chains longer. */
static void maybe_grow(gm_memo *m)
{
    if (m->count < m->nbuckets)
        return;
    size_t n = m->nbuckets * 2;
    memo_entry **b = calloc(n, sizeof *b);
    if (b == NULL)
        return;
    for (size_t i = 0; i < m->nbuckets; i++) {
        for (memo_entry *e = m->buckets[i], *next; e != NULL; e = next) {
            next = e->next;
            e->next = b[e->hash & (n - 1)];
            b[e->hash & (n - 1)] = e;
        }
    }
    free(m->buckets);
    m->buckets = b;
    m->nbuckets = n;
}

static void unlink_entry(gm_memo *m, memo_entry *e)
{
    memo_entry **p = &m->buckets[e->hash & (m->nbuckets - 1)];
    while (*p != e)
        p = &(*p)->next;
    *p = e->next;
    m->count--;
}

/* The context's table; made when `make` is set and there is none (NULL then
 * only when out of memory). */
static gm_memo *table_of(gpumem_context *ctx, bool make)
{
    gm_memo *m = atomic_load_explicit(&ctx->memo, memory_order_acquire);
    if (m != NULL || !make)
        return m;
    pthread_mutex_lock(&stores_mu);
    m = atomic_load_explicit(&ctx->memo, memory_order_relaxed);
    if (m == NULL && (m = aligned_alloc(64, sizeof *m)) != NULL) { /* sizeof is a multiple of 64 */
        memset(m, 0, sizeof *m);
        m->nbuckets = 16;
        m->buckets = calloc(m->nbuckets, sizeof *m->buckets);
        if (m->buckets == NULL || pthread_rwlock_init(&m->lock, NULL) != 0) {
            free(m->buckets);
            free(m);
            m = NULL;
        } else {
            pthread_mutex_init(&m->wait_mu, NULL);
            pthread_cond_init(&m->wait_cv, NULL);
            m->next = stores;
            if (stores != NULL)
                stores->prev = m;
            stores = m;
            atomic_store_explicit(&ctx->memo, m, memory_order_release);
        }
    }
    pthread_mutex_unlock(&stores_mu);
    return m;
}

/* Takes the table's entries out: all of them, or the ready ones only; gives
 * them newest first in *out (count in *n).  False when out of memory (then
 * nothing was taken). */
static bool take_entries(gm_memo *m, bool all, memo_entry ***out, size_t *n)
{
    pthread_rwlock_wrlock(&m->lock);
    atomic_fetch_add_explicit(&memo_gen, 1, memory_order_acq_rel);
    memo_entry **v = m->count ? malloc(m->count * sizeof *v) : NULL;
    size_t k = 0;
    if (m->count && v == NULL) {
        pthread_rwlock_unlock(&m->lock);
        return false;
    }
    for (size_t i = 0; i < m->nbuckets; i++) {
        for (memo_entry **p = &m->buckets[i]; *p != NULL;) {
            memo_entry *e = *p;
            if (all || e->ready) {
                *p = e->next;
                m->count--;
                v[k++] = e;
            } else {
                p = &e->next;
            }
        }
    }
    pthread_rwlock_unlock(&m->lock);
    /* newest first: later values may use earlier ones */
    for (size_t i = 1; i < k; i++) {
        memo_entry *e = v[i];
        size_t j = i;
        for (; j > 0 && v[j - 1]->seq < e->seq; j--)
            v[j] = v[j - 1];
        v[j] = e;
    }
    *out = v;
    *n = k;
    return true;
}

/* A value's destroy callback reports nothing, so what it records (a failed
 * free of the pack kernels' module) is undone: its caller succeeds. */
static void destroy_entry(memo_entry *e)
{
    if (e->ready && e->destroy != NULL)
        gm_error_quietly(e->destroy(e->value, e->user));
}

static void destroy_entries(memo_entry **v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        memo_entry *e = v[i];
        destroy_entry(e);
        free(e);
    }
    free(v);
}

/* ---- lookups ------------------------------------------------------------------------ */

/* Waits until the entry for the key is no longer pending (ready, or gone). */
static void wait_pending(gm_memo *m, uint64_t hash, gpumem_memo_create_fn create, const void *key, size_t key_size)
{
    pthread_mutex_lock(&m->wait_mu);
    for (;;) {
        pthread_rwlock_rdlock(&m->lock);
        memo_entry *e = find(m, hash, create, key, key_size);
        bool pending = e != NULL && !e->ready;
        pthread_rwlock_unlock(&m->lock);
        if (!pending)
            break;
        /* the creator publishes under the rwlock, then broadcasts under
         * wait_mu, which we hold from the check to the wait */
        pthread_cond_wait(&m->wait_cv, &m->wait_mu);
    }
    pthread_mutex_unlock(&m->wait_mu);
}

/* Runs create for the pending entry e (inserted by the caller) and publishes
 * the result, or takes e out again on failure. */
static gpumem_status run_create(const char *what, gpumem_context *ctx, gm_memo *m, memo_entry *e, const void *key,
                                size_t key_size, void (*acquire)(void *), void **value)
{
    unsigned long before = gm_error_serial(); /* to tell whether the callback said why it failed */

    void *v = NULL;
    gpumem_status st = e->create(ctx, key, key_size, e->user, &v);

    pthread_rwlock_wrlock(&m->lock);
    if (st == GPUMEM_OK) {
        e->value = v;
        e->ready = true;
        if (acquire != NULL)
            acquire(v);
    } else {
        unlink_entry(m, e);
    }
    pthread_rwlock_unlock(&m->lock);
    pthread_mutex_lock(&m->wait_mu);
    pthread_cond_broadcast(&m->wait_cv);
    pthread_mutex_unlock(&m->wait_mu);

    if (st == GPUMEM_OK) {
        *value = v;
        return GPUMEM_OK;
    }
    free(e);
    if (gm_error_serial() == before) /* it said nothing */
        return gm_error(st, "%s: the create callback failed with %s", what, gpumem_status_string(st));
    if (gpumem_last_status() != st) /* keep its message, with the status it returned (its own failure) */
        return gm_error(st, "%s", gm_error_message());
    return st;
}

__attribute__((noinline)) /* keeps gpumem_memoize's hit path small */
gpumem_status gm_memo_get(const char *what, gpumem_context *ctx, const void *key, size_t key_size,
                          gpumem_memo_create_fn create, gpumem_memo_destroy_fn destroy, void *user,
                          void (*acquire)(void *value), void **value)
{
    gm_memo *m = table_of(ctx, true);
    if (m == NULL)
        return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", what);
    uint64_t hash = entry_hash(create, key, key_size);
    for (;;) {
        /* the hit: a shared lock of this context's table only */
        pthread_rwlock_rdlock(&m->lock);
        memo_entry *e = find(m, hash, create, key, key_size);
        if (e != NULL && e->ready) {
            void *v = e->value;
            if (acquire != NULL)
                acquire(v);
            else
                hit_remember(m, create, key, key_size, v, atomic_load_explicit(&memo_gen, memory_order_relaxed));
            pthread_rwlock_unlock(&m->lock);
            *value = v;
            return GPUMEM_OK;
        }
        pthread_rwlock_unlock(&m->lock);

        pthread_rwlock_wrlock(&m->lock);
        e = find(m, hash, create, key, key_size);
        if (e != NULL && e->ready) {
            void *v = e->value;
            if (acquire != NULL)
                acquire(v);
            pthread_rwlock_unlock(&m->lock);
            *value = v;
            return GPUMEM_OK;
        }
        if (e == NULL) {
            e = malloc(sizeof *e + key_size);
            if (e == NULL) {
                pthread_rwlock_unlock(&m->lock);
                return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", what);
            }
            *e = (memo_entry){.hash = hash, .seq = m->next_seq++, .create = create, .destroy = destroy,
                              .user = user, .creator = pthread_self(), .key_size = key_size};
            if (key_size > 0)
                memcpy(e->key, key, key_size);
            maybe_grow(m);
            memo_entry **b = &m->buckets[hash & (m->nbuckets - 1)];
            e->next = *b;
            *b = e;
            m->count++;
            pthread_rwlock_unlock(&m->lock);
            return run_create(what, ctx, m, e, key, key_size, acquire, value);
        }
        bool mine = pthread_equal(e->creator, pthread_self());
        pthread_rwlock_unlock(&m->lock);
        if (mine)
            return gm_error(GPUMEM_ERROR_INVALID_STATE, "%s: the create callback asked for its own key "
                            "(recursion would wait for itself)", what);
        wait_pending(m, hash, create, key, key_size);
        /* ready now (a hit), or the creator failed or the entry was
         * cleared (then this thread may become the creator) */
    }
}

/* Everything of gpumemoize but the hit: the checks with their messages, the
 * autoinit context, the locked path.  Apart, so that the hit path saves no
 * register and sets up no frame (it tail-calls this). */
__attribute__((noinline)) static gpumem_status memoize_slow(gpumem_context *ctx, const void *key, size_t key_size,
                                                            gpumem_memo_create_fn create,
                                                            gpumem_memo_destroy_fn destroy, void *user, void **value)
{
    static const char what[] = "gpumem_memoize";
    if (create == NULL)
        return gm_error(GPUMEM_ERROR_NULL_ARGUMENT, "%s: argument '%s' is NULL", what, "create");
    if (value == NULL)
        return gm_error(GPUMEM_ERROR_NULL_ARGUMENT, "%s: argument '%s' is NULL", what, "value");
    if (key == NULL && key_size > 0)
        return gm_error(GPUMEM_ERROR_NULL_ARGUMENT, "gpumem_memoize: argument 'key' is NULL but key_size "
                        "is %zu", key_size);
    if (ctx == NULL) { /* the autoinit context, a call only when it is asked for */
        gpumem_status st;
        ctx = gm_context_or_default(ctx, &st);
        if (st != GPUMEM_OK)
            return st;
    } else if (!gm_handle_live(ctx, GM_HANDLE_TYPE_OF(ctx))) {
        return gm_handle_error(ctx, GM_HANDLE_TYPE_OF(ctx), what, "ctx");
    }
    gm_memo *m = atomic_load_explicit(&ctx->memo, memory_order_acquire);
    if (m != NULL && hit_find(m, create, key, key_size, value))
        return GPUMEM_OK;
    return gm_memo_get(what, ctx, key, key_size, create, destroy, user, NULL, value);
}

GPUMEM_API gpumem_status gpumem_memoize(gpumem_context *ctx, const void *key, size_t key_size,
                                        gpumem_memo_create_fn create, gpumem_memo_destroy_fn destroy,
                                        void *user, void **value)
{
    /* the hit, before anything else: good arguments, a live context, a
     * remembered hit (anything else, memoize_slow says what) */
    if (__builtin_expect(create != NULL && value != NULL && (key != NULL || key_size == 0) &&
                             gm_handle_live(ctx, GM_HANDLE_TYPE_OF(ctx)),
                         1)) {
        gm_memo *m = atomic_load_explicit(&ctx->memo, memory_order_acquire);
        if (m != NULL && hit_find(m, create, key, key_size, value))
            return GPUMEM_OK;
    }
    return memoize_slow(ctx, key, key_size, create, destroy, user, value);
}

/* ---- dropping entries ------------------------------------------------------------------- */

GPUMEM_API gpumem_status gpumem_clear_context_caches(void)
{
    gpumem_status st = GPUMEM_OK;
    pthread_mutex_lock(&stores_mu);
    for (gm_memo *m = stores; m != NULL; m = m->next) {
        memo_entry **v;
        size_t n;
        if (!take_entries(m, false, &v, &n)) {
            st = gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "gpumem_clear_context_caches: out of host memory");
            continue;
        }
        if (n == 0) {
            free(v);
            continue;
        }
        /* busy keeps m linked (and its context's release waiting) while the
         * callbacks run without the lock */
        m->busy++;
        pthread_mutex_unlock(&stores_mu);
        destroy_entries(v, n);
        pthread_mutex_lock(&stores_mu);
        m->busy--;
        pthread_cond_broadcast(&stores_cv);
    }
    pthread_mutex_unlock(&stores_mu);
    gm_staging_clear_all(); /* the staging slots and kept bounce blocks too (gpumem/staging.h) */
    return st;
}

/* The context hook: the context's values go first at its final release,
 * while the context still works. */
static gpumem_status memo_teardown(gpumem_context *ctx, const char *what)
{
    (void)what;
    gm_memo *m = atomic_exchange_explicit(&ctx->memo, NULL, memory_order_acq_rel);
    if (m == NULL)
        return GPUMEM_OK;
    pthread_mutex_lock(&stores_mu);
    while (m->busy > 0)
        pthread_cond_wait(&stores_cv, &stores_mu);
    if (m->prev != NULL)
        m->prev->next = m->next;
    else
        stores = m->next;
    if (m->next != NULL)
        m->next->prev = m->prev;
    pthread_mutex_unlock(&stores_mu);

    memo_entry **v;
    size_t n;
    if (take_entries(m, true, &v, &n)) {
        destroy_entries(v, n);
    } else {
        /* out of memory for the ordering: destroy in table order */
        for (size_t i = 0; i < m->nbuckets; i++) {
            for (memo_entry *e = m->buckets[i], *next; e != NULL; e = next) {
                next = e->next;
                destroy_entry(e);
                free(e);
            }
        }
    }
    pthread_rwlock_destroy(&m->lock);
    pthread_mutex_destroy(&m->wait_mu);
    pthread_cond_destroy(&m->wait_cv);
    free(m->buckets);
    free(m);
    return GPUMEM_OK;
}

const gm_context_hook gm_memo_hook = {NULL, memo_teardown};
