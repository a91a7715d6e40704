/*
 * trace.c - the trace recorder (trace.h explains the design, trace_format.h
 * and doc/trace-format.md the file) and the public calls of gpumem/trace.h.
 */
#include "config.h"

#include <dlfcn.h>
#include <endian.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#ifdef HAVE_EXECINFO_H
#include <execinfo.h>
#endif
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

#include "env.h"
#include "error.h"
#include "gpumem/trace.h"
#include "trace.h"
#include "trace_format.h"

atomic_uint gm_trace_on;

/* ---- the clock ------------------------------------------------------------------------ */

/* The events' clock: the CPU's time-stamp counter where it runs at a
 * constant rate (x86's invariant TSC, arm64's virtual counter), else
 * CLOCK_MONOTONIC.  A counter costs a few nanoseconds to read, the clock
 * call several tens in a virtual machine; the file carries pairs of both
 * for the reader to convert. */
static atomic_int tick_counter;

static uint64_t mono_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

uint64_t gm_trace_ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
    if (atomic_load_explicit(&tick_counter, memory_order_relaxed))
        return __rdtsc();
#elif defined(__aarch64__)
    if (atomic_load_explicit(&tick_counter, memory_order_relaxed)) {
        uint64_t v;
        __asm__ __volatile__("isb; mrs %0, cntvct_el0" : "=r"(v));
        return v;
    }
#endif
    return mono_ns();
}

static void choose_clock(void)
{
    int counter = 0;
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    counter = __get_cpuid(0x80000007u, &a, &b, &c, &d) && (d & (1u << 8)); /* invariant TSC */
#elif defined(__aarch64__)
    counter = 1;
#endif
    atomic_store(&tick_counter, counter);
}

/* ---- little-endian stores ------------------------------------------------------------------- */

static inline void put32(unsigned char *p, uint32_t v)
{
    v = htole32(v);
    memcpy(p, &v, sizeof v);
}

static inline void put64(unsigned char *p, uint64_t v)
{
    v = htole64(v);
    memcpy(p, &v, sizeof v);
}

static inline uint64_t id_of(const void *p)
{
    return (uint64_t)(uintptr_t)p;
}

/* ---- the asymmetric handshake (as pool.c's thread caches) ---------------------------------- */

#define MB_CMD_QUERY 0
#define MB_CMD_GLOBAL 1
#define MB_CMD_PRIVATE_EXPEDITED (1 << 3)
#define MB_CMD_REGISTER_PRIVATE_EXPEDITED (1 << 4)

static atomic_bool asym; /* set once, before the first trace records */

static void asym_init(void)
{
#if defined(__linux__) && defined(SYS_membarrier)
    long cmds = syscall(SYS_membarrier, MB_CMD_QUERY, 0, 0);
    atomic_store(&asym, cmds > 0 && (cmds & MB_CMD_PRIVATE_EXPEDITED) && (cmds & MB_CMD_GLOBAL) &&
                            syscall(SYS_membarrier, MB_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0);
#endif
}

static void asym_barrier(void)
{
#if defined(__linux__) && defined(SYS_membarrier)
    if (syscall(SYS_membarrier, MB_CMD_PRIVATE_EXPEDITED, 0, 0) == 0)
        return;
    syscall(SYS_membarrier, MB_CMD_GLOBAL, 0, 0);
#endif
}

/* ---- chunks, thread buffers and the writer -------------------------------------------------- */

#define CHUNK_RECORDS 1023u /* a chunk is 64 KiB */
#define QUEUE_MAX 256u      /* chunks waiting for the writer (16 MiB) before a thread waits */
#define FREE_MAX 64u        /* idle chunks kept for reuse */
#define WAKE_AT 8u          /* queued chunks that wake the writer (else it looks every WAKE_MS) */
#define WAKE_MS 50

typedef struct chunk {
    struct chunk *next;
    uint32_t thread, tid, count;
    char name[16];
    unsigned char rec[CHUNK_RECORDS][GM_TRACE_RECORD_BYTES];
} chunk;

/* A thread's buffer.  Its owner uses cur only while busy and the trace
 * records; the stopper, only once the owner is not busy after the trace
 * stopped. */
typedef struct tbuf {
    atomic_int busy;
    uint32_t index, tid;
    chunk *cur;
    struct tbuf *next, *prev; /* in the registry (reg_mu) */
} tbuf;

/* The default TLS model (a __tls_get_addr call per record while tracing is
 * on): initial-exec would be one load, but it puts the library's whole TLS
 * block in glibc's static TLS, and a libgpumem opened with dlopen after
 * other libraries took that space fails to load ("cannot allocate memory
 * in static TLS block": Python with PyTorch on an H200, 2026-11-25).
 * tests/test-symbols.sh checks that the library asks for no static TLS. */
static _Thread_local tbuf *my_tb;
static _Thread_local int region_depth;
static pthread_key_t tb_key; /* its destructor hands an exiting thread's chunk over */

static pthread_mutex_t ctl_mu = PTHREAD_MUTEX_INITIALIZER; /* start and stop */
static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static tbuf *registry;
static atomic_uint next_thread_index;

static struct writer {
    pthread_mutex_t mu;
    pthread_cond_t work, space;
    chunk *head, *tail; /* full chunks, oldest first */
    unsigned queued;
    chunk *free, *free_tail; /* idle chunks, oldest first */
    unsigned nfree;
    bool accepting, finish;
    /* the writer thread's, until it is joined: */
    pthread_t thread;
    FILE *f;
    int err; /* the first failed write's errno */
    uint64_t recorded;
    unsigned char *seen; /* thread indices with a THREAD block in this file */
    size_t nseen;
} W = {.mu = PTHREAD_MUTEX_INITIALIZER, .work = PTHREAD_COND_INITIALIZER, .space = PTHREAD_COND_INITIALIZER};

static atomic_uint_fast64_t lost; /* events not recorded for want of host memory */
static atomic_uint trace_flags;   /* GM_TRACE_FLAG_* of the trace that records */
static char trace_path[4096];     /* under ctl_mu */

/* Idle chunks go to the back of the free list and come from its front: the
 * one a thread gets is the longest idle, whose lines have most likely left
 * the writer's cache (a thread then writes them without taking each back
 * from the writer's core). */
static void recycle_locked(chunk *c)
{
    if (W.nfree < FREE_MAX) {
        c->next = NULL;
        if (W.free_tail != NULL)
            W.free_tail->next = c;
        else
            W.free = c;
        W.free_tail = c;
        W.nfree++;
    } else {
        free(c);
    }
}

static void push_locked(chunk *c)
{
    c->next = NULL;
    if (W.tail != NULL)
        W.tail->next = c;
    else
        W.head = c;
    W.tail = c;
    W.queued++;
    if (W.queued >= WAKE_AT) /* a wake-up costs a system call: one per WAKE_AT chunks */
        pthread_cond_signal(&W.work);
}

/* Hands the owner's full chunk to the writer and gives it a fresh one
 * (NULL without memory).  Inside busy: the trace records. */
static chunk *rotate(tbuf *tb)
{
    chunk *full = tb->cur, *c = NULL;
    tb->cur = NULL;
    pthread_mutex_lock(&W.mu);
    if (full != NULL) {
        if (W.accepting && full->count != 0)
            push_locked(full);
        else
            recycle_locked(full);
    }
    while (W.accepting && W.queued >= QUEUE_MAX)
        pthread_cond_wait(&W.space, &W.mu);
    if (W.free != NULL) {
        c = W.free;
        W.free = c->next;
        if (W.free == NULL)
            W.free_tail = NULL;
        W.nfree--;
    }
    pthread_mutex_unlock(&W.mu);
    if (c == NULL && (c = malloc(sizeof *c)) == NULL)
        return NULL;
    c->next = NULL;
    c->thread = tb->index;
    c->tid = tb->tid;
    c->count = 0;
    memset(c->name, 0, sizeof c->name);
    pthread_getname_np(pthread_self(), c->name, sizeof c->name);
    tb->cur = c;
    return c;
}

static tbuf *tb_new(void)
{
    tbuf *tb = calloc(1, sizeof *tb);
    if (tb == NULL)
        return NULL;
    tb->index = atomic_fetch_add(&next_thread_index, 1);
    tb->tid = (uint32_t)syscall(SYS_gettid);
    pthread_mutex_lock(&reg_mu);
    tb->next = registry;
    if (registry != NULL)
        registry->prev = tb;
    registry = tb;
    pthread_mutex_unlock(&reg_mu);
    pthread_setspecific(tb_key, tb);
    my_tb = tb;
    return tb;
}

/* An exiting thread's buffer: its events go to the writer while the trace
 * accepts them. */
static void tb_exit(void *arg)
{
    tbuf *tb = arg;
    pthread_mutex_lock(&reg_mu);
    if (tb->prev != NULL)
        tb->prev->next = tb->next;
    else
        registry = tb->next;
    if (tb->next != NULL)
        tb->next->prev = tb->prev;
    chunk *c = tb->cur;
    tb->cur = NULL;
    if (c != NULL) {
        pthread_mutex_lock(&W.mu);
        if (W.accepting && c->count != 0)
            push_locked(c);
        else
            recycle_locked(c);
        pthread_mutex_unlock(&W.mu);
    }
    pthread_mutex_unlock(&reg_mu);
    if (my_tb == tb)
        my_tb = NULL;
    free(tb);
}

static inline void enter(tbuf *tb)
{
    if (atomic_load_explicit(&asym, memory_order_relaxed)) {
        atomic_store_explicit(&tb->busy, 1, memory_order_relaxed);
        atomic_signal_fence(memory_order_seq_cst);
    } else {
        atomic_exchange_explicit(&tb->busy, 1, memory_order_seq_cst);
    }
}

static inline void leave(tbuf *tb)
{
    atomic_store_explicit(&tb->busy, 0, memory_order_release);
}

/* The next record of the calling thread, inside busy; NULL when the trace
 * does not record (or, counted as lost, without memory). */
static inline __attribute__((always_inline)) unsigned char *begin(tbuf **out)
{
    tbuf *tb = my_tb;
    if (__builtin_expect(tb == NULL, 0) && (tb = tb_new()) == NULL) {
        atomic_fetch_add_explicit(&lost, 1, memory_order_relaxed);
        return NULL;
    }
    enter(tb);
    if (atomic_load_explicit(&gm_trace_on, memory_order_seq_cst) == 0) {
        leave(tb);
        return NULL;
    }
    chunk *c = tb->cur;
    if (__builtin_expect(c == NULL || c->count == CHUNK_RECORDS, 0) && (c = rotate(tb)) == NULL) {
        leave(tb);
        atomic_fetch_add_explicit(&lost, 1, memory_order_relaxed);
        return NULL;
    }
    *out = tb;
    return c->rec[c->count];
}

static inline void commit(tbuf *tb)
{
    chunk *c = tb->cur;
    c->count++;
    /* the line a few records on, for writing: its fetch (from the writer's
     * core or memory) then overlaps the work until it is needed */
    if (c->count + 4 < CHUNK_RECORDS)
        __builtin_prefetch(c->rec[c->count + 4], 1, 3);
    leave(tb);
}

static inline void fill(unsigned char *r, unsigned type, int kind, int kind2, unsigned flags, int device,
                        uint64_t ticks, uint64_t ctx, uint64_t stream, uint64_t pool, uint64_t bytes, uint64_t value,
                        uint32_t ref, uint32_t aux)
{
    put64(r + GM_TR_TYPE, (uint64_t)(type & 0xffu) | (uint64_t)(kind & 0xff) << 8 | (uint64_t)(kind2 & 0xff) << 16 |
                              (uint64_t)(flags & 0xffu) << 24 | (uint64_t)(uint32_t)device << 32);
    put64(r + GM_TR_TICKS, ticks);
    put64(r + GM_TR_CONTEXT, ctx);
    put64(r + GM_TR_STREAM, stream);
    put64(r + GM_TR_POOL, pool);
    put64(r + GM_TR_BYTES, bytes);
    put64(r + GM_TR_VALUE, value);
    put32(r + GM_TR_REF, ref);
    put32(r + GM_TR_AUX, aux);
}

/* ---- strings and call sites ----------------------------------------------------------------- */

#define TABLE_MAX 65536u /* strings (and call sites) remembered per trace; later new ones are written each time */

typedef struct sentry {
    struct sentry *next;
    uint64_t hash;
    uint32_t id, len;
    char s[];
} sentry;

typedef struct kentry {
    struct kentry *next;
    uint64_t hash;
    uint32_t id, n;
    uint64_t f[GM_TRACE_MAX_FRAMES];
} kentry;

typedef struct pending {
    struct pending *next;
    size_t size;
    unsigned char data[];
} pending;

static struct strtab {
    pthread_mutex_t mu;
    sentry **sb;
    size_t nsb, ns;
    uint32_t next_sid;
    kentry **kb;
    size_t nkb, nk;
    uint32_t next_kid;
    pending *head, *tail; /* blocks for the writer, oldest first */
} T = {.mu = PTHREAD_MUTEX_INITIALIZER};

static uint64_t fnv(const void *p, size_t n, uint64_t h)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static void strtab_reset(void)
{
    for (size_t i = 0; i < T.nsb; i++)
        for (sentry *e = T.sb[i], *next; e != NULL; e = next) {
            next = e->next;
            free(e);
        }
    for (size_t i = 0; i < T.nkb; i++)
        for (kentry *e = T.kb[i], *next; e != NULL; e = next) {
            next = e->next;
            free(e);
        }
    free(T.sb);
    free(T.kb);
    for (pending *p = T.head, *next; p != NULL; p = next) {
        next = p->next;
        free(p);
    }
    T.sb = NULL;
    T.kb = NULL;
    T.nsb = T.ns = T.nkb = T.nk = 0;
    T.next_sid = T.next_kid = 1;
    T.head = T.tail = NULL;
}

/* A block of type for the writer (T.mu held); its payload to fill.  NULL
 * without memory. */
static unsigned char *pending_add(uint32_t type, size_t payload)
{
    pending *p = malloc(sizeof *p + GM_TRACE_BLOCK_HEADER + payload);
    if (p == NULL)
        return NULL;
    p->next = NULL;
    p->size = GM_TRACE_BLOCK_HEADER + payload;
    put32(p->data, type);
    put32(p->data + 4, (uint32_t)payload);
    if (T.tail != NULL)
        T.tail->next = p;
    else
        T.head = p;
    T.tail = p;
    return p->data + GM_TRACE_BLOCK_HEADER;
}

/* Doubles a table of *nb buckets (a power of two, or 0) when it holds more
 * entries than buckets; entries link through their first member. */
static void grow(void ***b, size_t *nb, size_t count, size_t hash_offset)
{
    if (count < *nb)
        return;
    size_t n = *nb ? *nb * 2 : 256;
    void **nbk = calloc(n, sizeof *nbk);
    if (nbk == NULL)
        return; /* longer chains */
    for (size_t i = 0; i < *nb; i++)
        for (void *e = (*b)[i], *next; e != NULL; e = next) {
            next = *(void **)e;
            uint64_t h;
            memcpy(&h, (char *)e + hash_offset, sizeof h);
            *(void **)e = nbk[h & (n - 1)];
            nbk[h & (n - 1)] = e;
        }
    free(*b);
    *b = nbk;
    *nb = n;
}

/* The id of the string s[0..len) in this trace (T.mu held); 0 without memory. */
static uint32_t intern_string_locked(const char *s, size_t len)
{
    uint64_t h = fnv(s, len, 14695981039346656037ull);
    if (T.nsb != 0)
        for (sentry *e = T.sb[h & (T.nsb - 1)]; e != NULL; e = e->next)
            if (e->hash == h && e->len == len && memcmp(e->s, s, len) == 0)
                return e->id;
    unsigned char *b = pending_add(GM_TB_STRING, 4 + len);
    if (b == NULL)
        return 0;
    uint32_t id = T.next_sid++;
    put32(b, id);
    memcpy(b + 4, s, len);
    if (T.ns < TABLE_MAX) {
        grow((void ***)&T.sb, &T.nsb, T.ns, offsetof(sentry, hash));
        sentry *e = malloc(sizeof *e + len);
        if (e != NULL && T.nsb != 0) {
            e->hash = h;
            e->id = id;
            e->len = (uint32_t)len;
            memcpy(e->s, s, len);
            e->next = T.sb[h & (T.nsb - 1)];
            T.sb[h & (T.nsb - 1)] = e;
            T.ns++;
        } else {
            free(e);
        }
    }
    return id;
}

static uint32_t intern_string(const char *s)
{
    size_t len = strnlen(s, GM_TRACE_MAX_STRING);
    pthread_mutex_lock(&T.mu);
    uint32_t id = intern_string_locked(s, len);
    pthread_mutex_unlock(&T.mu);
    return id;
}

/* The library's own code, when it is a module of its own (a shared
 * library): the frames a call site leaves out.  Set once. */
static uintptr_t lib_lo, lib_hi;
static char exe_path[4096]; /* the program's file, for frames of the main program */

static int find_lib(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    uintptr_t self = (uintptr_t)arg;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && self >= lo && self < lo + ph->p_memsz) {
            if (info->dlpi_name != NULL && info->dlpi_name[0] != '\0') {
                lib_lo = lo;
                lib_hi = lo + ph->p_memsz;
            }
            return 1;
        }
    }
    return 0;
}

/* The caller's frames outside the library, at most GM_TRACE_MAX_FRAMES. */
static unsigned capture(uint64_t *out)
{
#ifdef HAVE_BACKTRACE
    void *raw[48];
    int n = backtrace(raw, 48), i = 1; /* raw[0] is this function */
    if (lib_hi != 0)
        while (i < n && (uintptr_t)raw[i] >= lib_lo && (uintptr_t)raw[i] < lib_hi)
            i++;
    unsigned k = 0;
    for (; i < n && k < GM_TRACE_MAX_FRAMES; i++)
        out[k++] = (uint64_t)(uintptr_t)raw[i];
    return k;
#else
    (void)out;
    return 0;
#endif
}

/* The module of a code address: its file and the address in it. */
static const char *module_of(uint64_t addr, uint64_t *vaddr)
{
    Dl_info info;
    struct link_map *lm = NULL;
    *vaddr = addr;
#ifdef HAVE_DLADDR1
    if (dladdr1((void *)(uintptr_t)addr, &info, (void **)&lm, RTLD_DL_LINKMAP) == 0 || lm == NULL)
        return NULL;
    *vaddr = addr - (uint64_t)lm->l_addr;
    return lm->l_name != NULL && lm->l_name[0] != '\0' ? lm->l_name : exe_path[0] ? exe_path : NULL;
#else
    (void)info, (void)lm;
    return NULL;
#endif
}

/* The id of a call site in this trace (inside busy, T.mu not held). */
static uint32_t intern_stack(const uint64_t *f, unsigned n)
{
    uint64_t h = fnv(f, n * sizeof *f, 14695981039346656037ull);
    pthread_mutex_lock(&T.mu);
    if (T.nkb != 0)
        for (kentry *e = T.kb[h & (T.nkb - 1)]; e != NULL; e = e->next)
            if (e->hash == h && e->n == n && memcmp(e->f, f, n * sizeof *f) == 0) {
                uint32_t id = e->id;
                pthread_mutex_unlock(&T.mu);
                return id;
            }
    pthread_mutex_unlock(&T.mu);
    /* A new call site: its modules, looked up with no lock of ours held
     * (dladdr takes the loader's lock). */
    const char *mod[GM_TRACE_MAX_FRAMES];
    uint64_t va[GM_TRACE_MAX_FRAMES];
    for (unsigned i = 0; i < n; i++)
        mod[i] = module_of(f[i], &va[i]);
    pthread_mutex_lock(&T.mu);
    uint32_t mid[GM_TRACE_MAX_FRAMES];
    for (unsigned i = 0; i < n; i++)
        mid[i] = mod[i] != NULL ? intern_string_locked(mod[i], strnlen(mod[i], GM_TRACE_MAX_STRING)) : 0;
    uint32_t id = 0;
    unsigned char *b = pending_add(GM_TB_STACK, 8 + (size_t)n * GM_TRACE_FRAME_BYTES);
    if (b != NULL) {
        id = T.next_kid++;
        put32(b, id);
        put32(b + 4, n);
        for (unsigned i = 0; i < n; i++) {
            unsigned char *fr = b + 8 + (size_t)i * GM_TRACE_FRAME_BYTES;
            put64(fr, f[i]);
            put64(fr + 8, va[i]);
            put32(fr + 16, mid[i]);
            put32(fr + 20, 0);
        }
        if (T.nk < TABLE_MAX) {
            grow((void ***)&T.kb, &T.nkb, T.nk, offsetof(kentry, hash));
            kentry *e = malloc(sizeof *e);
            if (e != NULL && T.nkb != 0) {
                e->hash = h;
                e->id = id;
                e->n = n;
                memcpy(e->f, f, n * sizeof *f);
                e->next = T.kb[h & (T.nkb - 1)];
                T.kb[h & (T.nkb - 1)] = e;
                T.nk++;
            } else {
                free(e);
            }
        }
    }
    pthread_mutex_unlock(&T.mu);
    return id;
}

/* ---- the writer thread --------------------------------------------------------------------- */

static void out(const void *p, size_t n)
{
    if (W.err == 0 && n != 0 && fwrite(p, 1, n, W.f) != n)
        W.err = errno != 0 ? errno : EIO;
}

static void out_block(uint32_t type, const void *payload, size_t n)
{
    unsigned char h[GM_TRACE_BLOCK_HEADER];
    put32(h, type);
    put32(h + 4, (uint32_t)n);
    out(h, sizeof h);
    out(payload, n);
}

static void out_pending(void)
{
    pthread_mutex_lock(&T.mu);
    pending *p = T.head;
    T.head = T.tail = NULL;
    pthread_mutex_unlock(&T.mu);
    while (p != NULL) {
        pending *next = p->next;
        out(p->data, p->size);
        free(p);
        p = next;
    }
}

static void out_clock(uint32_t type, const uint64_t *pre, size_t npre)
{
    unsigned char b[48];
    size_t n = 0;
    for (size_t i = 0; i < npre; i++, n += 8)
        put64(b + n, pre[i]);
    put64(b + n, gm_trace_ticks());
    put64(b + n + 8, mono_ns());
    out_block(type, b, n + 16);
}

static void out_chunk(chunk *c)
{
    if (c->thread >= W.nseen) {
        size_t n = W.nseen ? W.nseen : 64;
        while (n <= c->thread)
            n *= 2;
        unsigned char *s = realloc(W.seen, n);
        if (s != NULL) {
            memset(s + W.nseen, 0, n - W.nseen);
            W.seen = s;
            W.nseen = n;
        }
    }
    if (c->thread >= W.nseen || !W.seen[c->thread]) {
        unsigned char b[8 + sizeof c->name];
        size_t len = strnlen(c->name, sizeof c->name);
        put32(b, c->thread);
        put32(b + 4, c->tid);
        memcpy(b + 8, c->name, len);
        out_block(GM_TB_THREAD, b, 8 + len);
        if (c->thread < W.nseen)
            W.seen[c->thread] = 1;
    }
    unsigned char h[GM_TRACE_BLOCK_HEADER + 8];
    put32(h, GM_TB_EVENTS);
    put32(h + 4, 8 + c->count * GM_TRACE_RECORD_BYTES);
    put32(h + 8, c->thread);
    put32(h + 12, c->count);
    out(h, sizeof h);
    out(c->rec, (size_t)c->count * GM_TRACE_RECORD_BYTES);
    W.recorded += c->count;
}

static void *writer_main(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "gpumem-trace");
    for (;;) {
        pthread_mutex_lock(&W.mu);
        while (W.head == NULL && !W.finish) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += WAKE_MS * 1000000L;
            if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&W.work, &W.mu, &until);
        }
        chunk *list = W.head;
        bool fin = W.finish;
        W.head = W.tail = NULL;
        W.queued = 0;
        pthread_cond_broadcast(&W.space);
        pthread_mutex_unlock(&W.mu);
        if (list == NULL && fin)
            break;
        while (list != NULL) {
            chunk *next = list->next;
            out_pending(); /* the strings and call sites its records name */
            out_chunk(list);
            pthread_mutex_lock(&W.mu);
            recycle_locked(list);
            pthread_mutex_unlock(&W.mu);
            list = next;
        }
        out_clock(GM_TB_CLOCK, NULL, 0);
        if (W.err == 0 && fflush(W.f) != 0)
            W.err = errno != 0 ? errno : EIO;
    }
    out_pending();
    uint64_t counts[2] = {W.recorded, atomic_load(&lost)};
    out_clock(GM_TB_END, counts, 2);
    if (W.err == 0 && fflush(W.f) != 0)
        W.err = errno != 0 ? errno : EIO;
    return NULL;
}

/* ---- start and stop ---------------------------------------------------------------------- */

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int once_failed;

static void stop_locked(int *err);

static void at_exit(void)
{
    pthread_mutex_lock(&ctl_mu);
    if (atomic_load(&gm_trace_on) != 0) {
        int err = 0;
        stop_locked(&err);
    }
    pthread_mutex_unlock(&ctl_mu);
}

static void fork_prepare(void)
{
    pthread_mutex_lock(&ctl_mu);
    pthread_mutex_lock(&reg_mu);
    pthread_mutex_lock(&W.mu);
    pthread_mutex_lock(&T.mu);
}

static void fork_parent(void)
{
    pthread_mutex_unlock(&T.mu);
    pthread_mutex_unlock(&W.mu);
    pthread_mutex_unlock(&reg_mu);
    pthread_mutex_unlock(&ctl_mu);
}

/* The child does not record: it forgets the parent's trace (its writer
 * thread is not there) and may start its own. */
static void fork_child(void)
{
    bool was_on = atomic_exchange(&gm_trace_on, 0) != 0;
    if (was_on) {
        __fpurge(W.f); /* the parent writes what is buffered */
        fclose(W.f);
        W.f = NULL;
        for (chunk *c = W.head, *next; c != NULL; c = next) {
            next = c->next;
            free(c);
        }
        W.head = W.tail = NULL;
        W.queued = 0;
        W.accepting = false;
        free(W.seen);
        W.seen = NULL;
        W.nseen = 0;
        strtab_reset();
    }
    for (tbuf *tb = registry, *next; tb != NULL; tb = next) {
        next = tb->next;
        free(tb->cur);
        free(tb);
    }
    registry = NULL;
    my_tb = NULL;
    pthread_setspecific(tb_key, NULL);
    pthread_mutex_unlock(&T.mu);
    pthread_mutex_unlock(&W.mu);
    pthread_mutex_unlock(&reg_mu);
    pthread_mutex_unlock(&ctl_mu);
}

static void init_once(void)
{
    if (pthread_key_create(&tb_key, tb_exit) != 0 || atexit(at_exit) != 0 ||
        pthread_atfork(fork_prepare, fork_parent, fork_child) != 0) {
        once_failed = 1;
        return;
    }
    asym_init();
    choose_clock();
    dl_iterate_phdr(find_lib, (void *)(uintptr_t)&gm_trace_ticks);
    ssize_t n = readlink("/proc/self/exe", exe_path, sizeof exe_path - 1);
    exe_path[n > 0 ? n : 0] = '\0';
    T.next_sid = T.next_kid = 1;
}

/* Starts a trace into path (ctl_mu held).  On failure, the reason goes to
 * why and nothing records; a file this call created is removed. */
static gpumem_status start_locked(const char *path, unsigned flags, char *why, size_t whysize)
{
    pthread_once(&once, init_once);
    if (once_failed) {
        snprintf(why, whysize, "cannot set up the trace's thread data and exit handler");
        return GPUMEM_ERROR_HOST_OUT_OF_MEMORY;
    }
    if (strlen(path) >= sizeof trace_path) {
        snprintf(why, whysize, "the file name is longer than %zu bytes", sizeof trace_path - 1);
        return GPUMEM_ERROR_INVALID_VALUE;
    }
    struct stat sb;
    bool existed = stat(path, &sb) == 0;
    FILE *f = fopen(path, "wbe");
    if (f == NULL) {
        snprintf(why, whysize, "cannot open '%s' for writing: %s", path, strerror(errno));
        return GPUMEM_ERROR_INVALID_VALUE;
    }
    unsigned char h[GM_TRACE_HEADER_BYTES] = {0};
    memcpy(h + GM_TH_MAGIC, GM_TRACE_MAGIC, 8);
    put32(h + GM_TH_VERSION, GM_TRACE_VERSION);
    put32(h + GM_TH_HEADER_BYTES, GM_TRACE_HEADER_BYTES);
    put32(h + GM_TH_RECORD_BYTES, GM_TRACE_RECORD_BYTES);
    put32(h + GM_TH_FLAGS, flags);
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    put64(h + GM_TH_REALTIME_NS, (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec);
    /* A first rate for the counter, from a pair read 2 ms before the start
     * (so a trace cut short still converts); the start is the later pair. */
    uint64_t t1 = gm_trace_ticks(), n1 = mono_ns(), t0 = t1, n0 = n1;
    if (atomic_load(&tick_counter))
        do {
            t0 = gm_trace_ticks();
            n0 = mono_ns();
        } while (n0 - n1 < 2000000u);
    put64(h + GM_TH_TICKS0, t0);
    put64(h + GM_TH_NS0, n0);
    put64(h + GM_TH_TICKS1, t1);
    put64(h + GM_TH_NS1, n1);
    size_t elen = strlen(exe_path);
    unsigned char info[8 + sizeof exe_path];
    put32(info, (uint32_t)getpid());
    put32(info + 4, 0);
    memcpy(info + 8, exe_path, elen);
    W.f = f;
    W.err = 0;
    errno = 0;
    out(h, sizeof h);
    out_block(GM_TB_INFO, info, 8 + elen);
    if (W.err == 0 && fflush(f) != 0)
        W.err = errno != 0 ? errno : EIO;
    if (W.err != 0) {
        snprintf(why, whysize, "cannot write '%s': %s", path, strerror(W.err));
        fclose(f);
        W.f = NULL;
        if (!existed)
            unlink(path);
        return GPUMEM_ERROR_INVALID_VALUE;
    }
    W.recorded = 0;
    W.accepting = true;
    W.finish = false;
    atomic_store(&lost, 0);
    atomic_store(&trace_flags, flags);
    strcpy(trace_path, path);
    int rc = pthread_create(&W.thread, NULL, writer_main, NULL);
    if (rc != 0) {
        snprintf(why, whysize, "cannot start the trace's writer thread: %s", strerror(rc));
        W.accepting = false;
        fclose(f);
        W.f = NULL;
        if (!existed)
            unlink(path);
        return GPUMEM_ERROR_HOST_OUT_OF_MEMORY;
    }
    atomic_store(&gm_trace_on, 1);
    return GPUMEM_OK;
}

/* Stops the trace (ctl_mu held, a trace records); *err gets the first
 * failed write's errno, or 0. */
static void stop_locked(int *err)
{
    atomic_store(&gm_trace_on, 0);
    if (atomic_load_explicit(&asym, memory_order_relaxed))
        asym_barrier();
    pthread_mutex_lock(&reg_mu);
    for (tbuf *tb = registry; tb != NULL; tb = tb->next) {
        while (atomic_load_explicit(&tb->busy, memory_order_seq_cst) != 0)
            sched_yield();
        chunk *c = tb->cur;
        tb->cur = NULL;
        if (c != NULL) {
            pthread_mutex_lock(&W.mu);
            if (c->count != 0)
                push_locked(c);
            else
                recycle_locked(c);
            pthread_mutex_unlock(&W.mu);
        }
    }
    pthread_mutex_lock(&W.mu);
    W.accepting = false;
    W.finish = true;
    pthread_cond_signal(&W.work);
    pthread_cond_broadcast(&W.space);
    pthread_mutex_unlock(&W.mu);
    pthread_mutex_unlock(&reg_mu);
    pthread_join(W.thread, NULL);
    *err = W.err;
    errno = 0;
    if (fclose(W.f) != 0 && *err == 0)
        *err = errno != 0 ? errno : EIO;
    W.f = NULL;
    pthread_mutex_lock(&W.mu);
    W.free_tail = NULL;
    while (W.free != NULL) {
        chunk *c = W.free;
        W.free = c->next;
        free(c);
    }
    W.nfree = 0;
    W.finish = false;
    pthread_mutex_unlock(&W.mu);
    free(W.seen);
    W.seen = NULL;
    W.nseen = 0;
    pthread_mutex_lock(&T.mu);
    strtab_reset();
    pthread_mutex_unlock(&T.mu);
}

GPUMEM_API gpumem_status gpumem_trace_start(const char *path, unsigned flags)
{
    const char *what = "gpumem_trace_start";
    GM_CHECK_NULL(path);
    if (path[0] == '\0')
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: 'path' is empty", what);
    if (flags & ~GPUMEM_TRACE_CALL_SITES)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: 'flags' 0x%x has bits other than "
                        "GPUMEM_TRACE_CALL_SITES (0x1)", what, flags);
    long stacks = 0;
    gpumem_status st = gm_env_long("GPUMEM_TRACE_STACKS", 0, 1, 0, &stacks, NULL);
    if (st != GPUMEM_OK)
        return gm_error_prefix(st, what);
    if (stacks)
        flags |= GPUMEM_TRACE_CALL_SITES;
    char why[600];
    pthread_mutex_lock(&ctl_mu);
    if (atomic_load(&gm_trace_on) != 0) {
        st = gm_error(GPUMEM_ERROR_INVALID_STATE, "%s: a trace is already recording to '%s' "
                      "(gpumem_trace_stop ends it)", what, trace_path);
    } else {
        st = start_locked(path, flags & GPUMEM_TRACE_CALL_SITES ? GM_TRACE_FLAG_CALL_SITES : 0, why, sizeof why);
        if (st != GPUMEM_OK)
            gm_error(st, "%s: %s", what, why);
    }
    pthread_mutex_unlock(&ctl_mu);
    return st;
}

GPUMEM_API gpumem_status gpumem_trace_stop(void)
{
    const char *what = "gpumem_trace_stop";
    gpumem_status st = GPUMEM_OK;
    pthread_mutex_lock(&ctl_mu);
    if (atomic_load(&gm_trace_on) == 0) {
        st = gm_error(GPUMEM_ERROR_INVALID_STATE, "%s: no trace is recording", what);
    } else {
        int err = 0;
        stop_locked(&err);
        if (err != 0)
            st = gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: writing the trace '%s' failed: %s; the file ends "
                          "where writing failed", what, trace_path, strerror(err));
    }
    pthread_mutex_unlock(&ctl_mu);
    return st;
}

/* ---- GPUMEM_TRACE ------------------------------------------------------------------------- */

static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static gpumem_status env_status;
static char env_message[1024];

static void env_start(void)
{
    const char *v = gm_env("GPUMEM_TRACE");
    if (v == NULL)
        return;
    char path[sizeof trace_path + 64];
    size_t n = 0;
    for (const char *s = v; *s != '\0'; s++) {
        char buf[24];
        const char *add = buf;
        if (*s != '%') {
            buf[0] = *s;
            buf[1] = '\0';
        } else if (s[1] == 'p') {
            snprintf(buf, sizeof buf, "%ld", (long)getpid());
            s++;
        } else if (s[1] == '%') {
            add = "%";
            s++;
        } else {
            env_status = GPUMEM_ERROR_INVALID_ENVIRONMENT;
            snprintf(env_message, sizeof env_message, "GPUMEM_TRACE='%.600s': a '%%' must be followed by 'p' "
                     "(the process id) or '%%'", v);
            return;
        }
        size_t len = strlen(add);
        if (n + len >= sizeof path) {
            env_status = GPUMEM_ERROR_INVALID_ENVIRONMENT;
            snprintf(env_message, sizeof env_message, "GPUMEM_TRACE='%.600s': the file name is too long", v);
            return;
        }
        memcpy(path + n, add, len);
        n += len;
    }
    path[n] = '\0';
    long stacks = 0;
    gpumem_status st = gm_env_long("GPUMEM_TRACE_STACKS", 0, 1, 0, &stacks, NULL);
    if (st != GPUMEM_OK) {
        env_status = st;
        snprintf(env_message, sizeof env_message, "%s", gpumem_last_error());
        return;
    }
    char why[600];
    pthread_mutex_lock(&ctl_mu);
    if (atomic_load(&gm_trace_on) == 0) /* else gpumem_trace_start came first */
        st = start_locked(path, stacks ? GM_TRACE_FLAG_CALL_SITES : 0, why, sizeof why);
    pthread_mutex_unlock(&ctl_mu);
    if (st != GPUMEM_OK) {
        env_status = GPUMEM_ERROR_INVALID_ENVIRONMENT;
        snprintf(env_message, sizeof env_message, "GPUMEM_TRACE='%.300s': %s", v, why);
    }
}

gpumem_status gm_trace_env_start(const char *what)
{
    pthread_once(&env_once, env_start);
    if (env_status != GPUMEM_OK)
        return gm_error(env_status, "%s: %s", what, env_message);
    return GPUMEM_OK;
}

/* ---- the events ------------------------------------------------------------------------- */

/* An allocation with its call site: a stack walk, out of the fast path. */
static __attribute__((noinline)) void alloc_with_site(const void *ctx, int device, const void *stream, int kind,
                                                      const void *pool, uint64_t bytes, uint64_t addr)
{
    uint64_t f[GM_TRACE_MAX_FRAMES];
    unsigned n = capture(f);
    uint64_t t = gm_trace_ticks();
    tbuf *tb;
    unsigned char *r = begin(&tb);
    if (r == NULL)
        return;
    uint32_t site = n != 0 ? intern_stack(f, n) : 0;
    fill(r, GM_TE_ALLOC, kind, 0, 0, device, t, id_of(ctx), id_of(stream), id_of(pool), bytes, addr, site, 0);
    commit(tb);
}

/* gm_trace_alloc and gm_trace_free are cold for their callers (trace.h),
 * which makes the compiler optimize them for size: they jump to these,
 * optimized for speed. */
static __attribute__((noinline, hot)) void alloc_event(const void *ctx, int device, const void *stream, int kind,
                                                       const void *pool, uint64_t bytes, uint64_t addr)
{
    if (__builtin_expect(atomic_load_explicit(&trace_flags, memory_order_relaxed) & GM_TRACE_FLAG_CALL_SITES, 0)) {
        alloc_with_site(ctx, device, stream, kind, pool, bytes, addr);
        return;
    }
    tbuf *tb;
    unsigned char *r = begin(&tb);
    if (r == NULL)
        return;
    /* the clock after the rest is set up: its latency overlaps it */
    fill(r, GM_TE_ALLOC, kind, 0, 0, device, gm_trace_ticks(), id_of(ctx), id_of(stream), id_of(pool), bytes, addr, 0,
         0);
    commit(tb);
}

static __attribute__((noinline, hot)) void free_event(const void *ctx, int device, const void *stream, int kind,
                                                      const void *pool, uint64_t bytes, uint64_t addr)
{
    tbuf *tb;
    unsigned char *r = begin(&tb);
    if (r == NULL)
        return;
    /* the clock after the rest is set up: its latency overlaps it */
    fill(r, GM_TE_FREE, kind, 0, 0, device, gm_trace_ticks(), id_of(ctx), id_of(stream), id_of(pool), bytes, addr, 0,
         0);
    commit(tb);
}

void gm_trace_alloc(const void *ctx, int device, const void *stream, int kind, const void *pool, uint64_t bytes,
                    uint64_t addr)
{
    alloc_event(ctx, device, stream, kind, pool, bytes, addr);
}

void gm_trace_free(const void *ctx, int device, const void *stream, int kind, const void *pool, uint64_t bytes,
                   uint64_t addr)
{
    free_event(ctx, device, stream, kind, pool, bytes, addr);
}

void gm_trace_copy(uint64_t t0, const void *ctx, int device, int device2, const void *stream, int src_kind,
                   int dst_kind, int direction, uint64_t bytes, const char *path)
{
    uint64_t t = gm_trace_ticks();
    if (t0 == 0) /* the trace started during the copy */
        return;
    tbuf *tb;
    unsigned char *r = begin(&tb);
    if (r == NULL)
        return;
    uint32_t pid = intern_string(path != NULL ? path : "");
    fill(r, GM_TE_COPY, src_kind, dst_kind, stream != NULL ? GM_TF_ASYNC : 0, device, t0, id_of(ctx), id_of(stream),
         (uint64_t)(int64_t)device2, bytes, t >= t0 ? t - t0 : 0, pid, (uint32_t)direction);
    commit(tb);
}

void gm_trace_ladder(const void *ctx, int device, int kind, const void *pool, uint64_t bytes,
                     uint64_t released_bytes, uint64_t released_blocks, bool retry_ok)
{
    uint64_t t = gm_trace_ticks();
    tbuf *tb;
    unsigned char *r = begin(&tb);
    if (r == NULL)
        return;
    fill(r, GM_TE_LADDER, kind, 0, retry_ok ? GM_TF_RETRY_OK : 0, device, t, id_of(ctx), 0, id_of(pool), bytes,
         released_bytes, 0, released_blocks > UINT32_MAX ? UINT32_MAX : (uint32_t)released_blocks);
    commit(tb);
}

void gm_trace_oom(const void *ctx, int device, int kind, const void *pool, uint64_t bytes, gpumem_status st,
                  const char *message)
{
    uint64_t t = gm_trace_ticks();
    tbuf *tb;
    unsigned char *r = begin(&tb);
    if (r == NULL)
        return;
    uint32_t mid = intern_string(message != NULL ? message : "");
    fill(r, GM_TE_OOM, kind, 0, 0, device, t, id_of(ctx), 0, id_of(pool), bytes, 0, mid, (uint32_t)st);
    commit(tb);
}

void gm_trace_trim(const void *ctx, int device, int kind, const void *pool, uint64_t released_bytes,
                   uint64_t released_blocks)
{
    uint64_t t = gm_trace_ticks();
    tbuf *tb;
    unsigned char *r = begin(&tb);
    if (r == NULL)
        return;
    fill(r, GM_TE_TRIM, kind, 0, 0, device, t, id_of(ctx), 0, id_of(pool), 0, released_bytes, 0,
         released_blocks > UINT32_MAX ? UINT32_MAX : (uint32_t)released_blocks);
    commit(tb);
}

static void named(unsigned type, const char *name, int depth)
{
    uint64_t t = gm_trace_ticks();
    tbuf *tb;
    unsigned char *r = begin(&tb);
    if (r == NULL)
        return;
    uint32_t id = name != NULL ? intern_string(name) : 0;
    fill(r, type, GM_TRACE_KIND_UNKNOWN, 0, 0, -1, t, 0, 0, 0, 0, 0, id, (uint32_t)depth);
    commit(tb);
}

GPUMEM_API gpumem_status gpumem_trace_mark(const char *name)
{
    GM_CHECK_NULL(name);
    GM_TRACE(named(GM_TE_MARK, name, region_depth));
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_trace_push(const char *name)
{
    GM_CHECK_NULL(name);
    region_depth++;
    GM_TRACE(named(GM_TE_PUSH, name, region_depth));
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_trace_pop(void)
{
    if (region_depth == 0)
        return gm_error(GPUMEM_ERROR_INVALID_STATE, "gpumem_trace_pop: no region is open on this thread "
                        "(gpumem_trace_push opens one)");
    GM_TRACE(named(GM_TE_POP, NULL, region_depth));
    region_depth--;
    return GPUMEM_OK;
}
