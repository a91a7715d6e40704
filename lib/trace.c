/*
 * trace.c - the trace recorder (trace.h explains the design, trace_format.h
 * and doc/trace-format.md the file): the clock, each thread's buffer, the
 * strings and call sites of a trace, the events, and the public marks and
 * regions of gpumem/trace.h.  The writer and the trace's start and stop
 * are trace_writer.c's (trace_impl.h says what the two share).
 */
#include "config.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

#include "error.h"
#include "gpumem/trace.h"
#include "lifecycle.h"
#include "trace.h"
#include "trace_format.h"
#include "trace_impl.h"

atomic_uint gm_trace_on;
atomic_uint_fast64_t gm_trace_lost;
atomic_uint gm_trace_flags;

/* ---- the clock ------------------------------------------------------------------------ */

/* The events' clock: the CPU's time-stamp counter where it runs at a
 * constant rate (x86's invariant TSC, arm64's virtual counter), else
 * CLOCK_MONOTONIC.  A counter costs a few nanoseconds to read, the clock
 * call several tens in a virtual machine; the file carries pairs of both
 * for the reader to convert.  Hypervisors often hide the invariant-TSC
 * bit while the kernel, having checked the counter, keeps time with it:
 * its clocksource "tsc" is taken as the same promise. */
static atomic_int tick_counter;

uint64_t gm_trace_mono_ns(void)
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
    return gm_trace_mono_ns();
}

#if defined(__x86_64__) || defined(__i386__)
/* Whether the kernel keeps time with the TSC: it stops (and says so) when
 * its checks find the counter unstable or unsynchronized. */
static int kernel_clock_is_tsc(void)
{
    char name[32] = "";
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");
    if (f == NULL)
        return 0;
    int ok = fgets(name, sizeof name, f) != NULL && strcmp(name, "tsc\n") == 0;
    fclose(f);
    return ok;
}
#endif

static void choose_clock(void)
{
    int counter = 0;
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    counter = (__get_cpuid(0x80000007u, &a, &b, &c, &d) && (d & (1u << 8))) /* invariant TSC */ ||
              kernel_clock_is_tsc();
#elif defined(__aarch64__)
    counter = 1;
#endif
    atomic_store(&tick_counter, counter);
}

bool gm_trace_clock_counter(void)
{
    return atomic_load(&tick_counter) != 0;
}

static inline uint64_t id_of(const void *p)
{
    return (uint64_t)(uintptr_t)p;
}

/* ---- the asymmetric handshake (as pool_cache.c's thread caches) ---------------------------------- */

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

/* ---- thread buffers ------------------------------------------------------------------------ */

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

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static tbuf *registry;
static atomic_uint next_thread_index;

/* Hands the owner's full chunk to the writer and gives it a fresh one
 * (NULL without memory).  Inside busy: the trace records. */
static chunk *rotate(tbuf *tb)
{
    chunk *full = tb->cur;
    tb->cur = NULL;
    chunk *c = gm_trace_writer_swap(full);
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
    if (c != NULL)
        gm_trace_writer_hand(c);
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
        atomic_fetch_add_explicit(&gm_trace_lost, 1, memory_order_relaxed);
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
        atomic_fetch_add_explicit(&gm_trace_lost, 1, memory_order_relaxed);
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
    wr64(r + GM_TR_TYPE, (uint64_t)(type & 0xffu) | (uint64_t)(kind & 0xff) << 8 | (uint64_t)(kind2 & 0xff) << 16 |
                              (uint64_t)(flags & 0xffu) << 24 | (uint64_t)(uint32_t)device << 32);
    wr64(r + GM_TR_TICKS, ticks);
    wr64(r + GM_TR_CONTEXT, ctx);
    wr64(r + GM_TR_STREAM, stream);
    wr64(r + GM_TR_POOL, pool);
    wr64(r + GM_TR_BYTES, bytes);
    wr64(r + GM_TR_VALUE, value);
    wr32(r + GM_TR_REF, ref);
    wr32(r + GM_TR_AUX, aux);
}

const gm_life_hook gm_trace_threads_life = {.what = "the trace's thread buffers", .key = &tb_key,
                                            .thread_exit = tb_exit};

int gm_trace_threads_init(void)
{
    return gm_life_arm(&gm_trace_threads_life);
}

void gm_trace_threads_lock(void)
{
    pthread_mutex_lock(&reg_mu);
}

void gm_trace_threads_unlock(void)
{
    pthread_mutex_unlock(&reg_mu);
}

void gm_trace_threads_drain_locked(void)
{
    if (atomic_load_explicit(&asym, memory_order_relaxed))
        asym_barrier();
    for (tbuf *tb = registry; tb != NULL; tb = tb->next) {
        while (atomic_load_explicit(&tb->busy, memory_order_seq_cst) != 0)
            sched_yield();
        chunk *c = tb->cur;
        tb->cur = NULL;
        if (c != NULL)
            gm_trace_writer_hand(c);
    }
}

void gm_trace_threads_forget(void)
{
    for (tbuf *tb = registry, *next; tb != NULL; tb = next) {
        next = tb->next;
        free(tb->cur);
        free(tb);
    }
    registry = NULL;
    my_tb = NULL;
    pthread_setspecific(tb_key, NULL);
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

void gm_trace_strings_reset_locked(void)
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
    wr32(p->data, type);
    wr32(p->data + 4, (uint32_t)payload);
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
    wr32(b, id);
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
static char exe_path[GM_TRACE_EXE_PATH_MAX]; /* the program's file, for frames of the main program */

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
        wr32(b, id);
        wr32(b + 4, n);
        for (unsigned i = 0; i < n; i++) {
            unsigned char *fr = b + 8 + (size_t)i * GM_TRACE_FRAME_BYTES;
            wr64(fr, f[i]);
            wr64(fr + 8, va[i]);
            wr32(fr + 16, mid[i]);
            wr32(fr + 20, 0);
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

void gm_trace_strings_lock(void)
{
    pthread_mutex_lock(&T.mu);
}

void gm_trace_strings_unlock(void)
{
    pthread_mutex_unlock(&T.mu);
}

pending *gm_trace_strings_take(void)
{
    pthread_mutex_lock(&T.mu);
    pending *p = T.head;
    T.head = T.tail = NULL;
    pthread_mutex_unlock(&T.mu);
    return p;
}

const char *gm_trace_exe_path(void)
{
    return exe_path;
}

void gm_trace_recorder_init(void)
{
    asym_init();
    choose_clock();
    dl_iterate_phdr(find_lib, (void *)(uintptr_t)&gm_trace_ticks);
    ssize_t n = readlink("/proc/self/exe", exe_path, sizeof exe_path - 1);
    exe_path[n > 0 ? n : 0] = '\0';
    T.next_sid = T.next_kid = 1;
}

/* ---- the events ------------------------------------------------------------------------- */

/* An allocation with its call site: a stack walk, out of the fast path. */
static __attribute__((noinline)) void alloc_with_site(const void *ctx, int device, const void *stream, int kind,
                                                      const void *pool, uint64_t bytes, uint64_t addr, unsigned owner)
{
    uint64_t f[GM_TRACE_MAX_FRAMES];
    unsigned n = capture(f);
    uint64_t t = gm_trace_ticks();
    tbuf *tb;
    unsigned char *r = begin(&tb);
    if (r == NULL)
        return;
    uint32_t site = n != 0 ? intern_stack(f, n) : 0;
    fill(r, GM_TE_ALLOC, kind, 0, 0, device, t, id_of(ctx), id_of(stream), id_of(pool), bytes, addr, site, owner);
    commit(tb);
}

/* gm_trace_alloc and gm_trace_free are cold for their callers (trace.h),
 * which makes the compiler optimize them for size: they jump to these,
 * optimized for speed. */
static __attribute__((noinline, hot)) void alloc_event(const void *ctx, int device, const void *stream, int kind,
                                                       const void *pool, uint64_t bytes, uint64_t addr, unsigned owner)
{
    if (__builtin_expect(atomic_load_explicit(&gm_trace_flags, memory_order_relaxed) & GM_TRACE_FLAG_CALL_SITES, 0)) {
        alloc_with_site(ctx, device, stream, kind, pool, bytes, addr, owner);
        return;
    }
    tbuf *tb;
    unsigned char *r = begin(&tb);
    if (r == NULL)
        return;
    /* the clock after the rest is set up: its latency overlaps it */
    fill(r, GM_TE_ALLOC, kind, 0, 0, device, gm_trace_ticks(), id_of(ctx), id_of(stream), id_of(pool), bytes, addr, 0,
         owner);
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
                    uint64_t addr, unsigned owner)
{
    alloc_event(ctx, device, stream, kind, pool, bytes, addr, owner);
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
