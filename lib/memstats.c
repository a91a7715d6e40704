/*
 * memstats.c - the memory layer's books (memstats.h): the registry of every
 * context's counters by device, the peaks, the memory report
 * (gpumem/memory.h), the out-of-memory message and callback, and the leak
 * records of GPUMEM_DEBUG=leaks.
 */
#include "config.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__has_include)
#if __has_include(<execinfo.h>)
#include <execinfo.h>
#define GM_HAVE_BACKTRACE 1
#endif
#endif

#include "context.h"
#include "lifecycle.h"
#include "driver.h"
#include "env.h"
#include "error.h"
#include "leaksite.h"
#include "memstats.h"
#include "pool.h"

/* ---- the registry ------------------------------------------------------------------ */

/* A device's peaks: of the sums over its contexts, sampled together.  It
 * lives while the device has a context. */
typedef struct gm_memdev {
    int device;
    int contexts;
    uint64_t peak_bytes[GM_MK_COUNT], peak_count[GM_MK_COUNT], peak_reserved;
    struct gm_memdev *next;
} gm_memdev;

/* Every context's books and every device's peaks.  Lock order: this lock,
 * then pool.c's live-pool list (gm_pools_usage). */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gm_memstats *reg_head;
static gm_memdev *devs;

/* What is live at one moment, for one context or a device. */
typedef struct usage {
    uint64_t bytes[GM_MK_COUNT], count[GM_MK_COUNT];
    uint64_t reserved; /* device memory from the driver: device_reserved_bytes */
    uint64_t pools;
    uint64_t held_blocks[2], held_bytes[2], largest[2]; /* by gm_pool_kind */
    uint64_t pending, pending_bytes, pending_device_bytes;
    uint64_t driver_allocs, ladder_runs, ladder_successes, cb_calls, cb_successes, oom_failures;
    uint64_t contexts;
} usage;

#define LOAD(x) atomic_load_explicit(&(x), memory_order_relaxed)

/* Adds a context's own counters (not its pools). */
static void add_books(usage *u, struct gm_memstats *m)
{
    for (int k = 0; k < GM_MK_COUNT; k++) {
        u->bytes[k] += LOAD(m->live[k].bytes);
        u->count[k] += LOAD(m->live[k].count);
    }
    uint64_t pdev = LOAD(m->pending_device_bytes);
    u->reserved += LOAD(m->live[GM_MK_DEVICE].bytes) + LOAD(m->live[GM_MK_MANAGED].bytes) + pdev;
    u->pending += LOAD(m->pending_count);
    u->pending_bytes += LOAD(m->pending_bytes);
    u->pending_device_bytes += pdev;
    u->driver_allocs += LOAD(m->driver_allocs);
    u->ladder_runs += LOAD(m->ladder_runs);
    u->ladder_successes += LOAD(m->ladder_successes);
    u->cb_calls += LOAD(m->cb_calls);
    u->cb_successes += LOAD(m->cb_successes);
    u->oom_failures += LOAD(m->oom_failures);
    u->contexts++;
}

static void add_pool(usage *u, const gm_pool_usage *p)
{
    gm_memkind k = p->kind == GM_POOL_DEVICE ? GM_MK_DEVICE : p->mapped ? GM_MK_MAPPED : GM_MK_PINNED;
    u->bytes[k] += p->active_requested;
    u->count[k] += p->active_blocks;
    if (p->kind == GM_POOL_DEVICE)
        u->reserved += p->bytes;
    if (p->destroyed) /* a destroyed pool's live allocations, no pool */
        return;
    u->pools++;
    u->held_blocks[p->kind] += p->held_blocks;
    u->held_bytes[p->kind] += p->held_bytes;
    if (p->largest_held > u->largest[p->kind])
        u->largest[p->kind] = p->largest_held;
}

typedef struct collect_arg {
    usage *ctx_usage, *dev_usage;
    const gpumem_context *ctx;
} collect_arg;

static void collect_pool(const gm_pool_usage *p, void *arg)
{
    collect_arg *c = arg;
    add_pool(c->dev_usage, p);
    if (p->ctx == c->ctx)
        add_pool(c->ctx_usage, p);
}

/* What is live in m's context (*uc) and in its device (*ud), now; the
 * registry lock held. */
static void collect_locked(struct gm_memstats *m, bool largest, usage *uc, usage *ud)
{
    memset(uc, 0, sizeof *uc);
    memset(ud, 0, sizeof *ud);
    for (struct gm_memstats *c = reg_head; c != NULL; c = c->next) {
        if (c->device != m->device)
            continue;
        add_books(ud, c);
        if (c == m)
            add_books(uc, c);
    }
    collect_arg arg = {uc, ud, m->ctx};
    gm_pools_usage(m->device, largest, collect_pool, &arg);
}

static void raise_peaks(uint64_t *pb, uint64_t *pc, uint64_t *pr, const usage *u)
{
    for (int k = 0; k < GM_MK_COUNT; k++) {
        if (u->bytes[k] > pb[k])
            pb[k] = u->bytes[k];
        if (u->count[k] > pc[k])
            pc[k] = u->count[k];
    }
    if (u->reserved > *pr)
        *pr = u->reserved;
}

static void set_peaks(uint64_t *pb, uint64_t *pc, uint64_t *pr, const usage *u)
{
    memcpy(pb, u->bytes, sizeof u->bytes);
    memcpy(pc, u->count, sizeof u->count);
    *pr = u->reserved;
}

void gm_memstats_sample(gpumem_context *ctx)
{
    struct gm_memstats *m = ctx->memstats;
    if (m == NULL)
        return;
    usage uc, ud;
    pthread_mutex_lock(&reg_lock);
    collect_locked(m, false, &uc, &ud);
    raise_peaks(m->peak_bytes, m->peak_count, &m->peak_reserved, &uc);
    raise_peaks(m->dev->peak_bytes, m->dev->peak_count, &m->dev->peak_reserved, &ud);
    pthread_mutex_unlock(&reg_lock);
}

/* ---- leaks (GPUMEM_DEBUG=leaks) ------------------------------------------------------ */

atomic_bool gm_leaks_on;

#define LEAK_FRAMES 16
#define LEAK_BUCKETS 256

typedef struct gm_leak {
    uintptr_t key;
    uint64_t seq; /* the order they were made in */
    gm_leak_type type;
    gpumem_memory_kind kind;
    uint64_t bytes;
    char what[48];
    void *frames[LEAK_FRAMES];
    int nframes;
    struct gm_leak *next;
} gm_leak;

struct gm_leaks {
    pthread_mutex_t lock;
    uint64_t seq;
    size_t n;
    gm_leak *bucket[LEAK_BUCKETS];
};

static size_t leak_hash(uintptr_t key)
{
    uint64_t h = (uint64_t)key * UINT64_C(0x9e3779b97f4a7c15);
    return (size_t)(h >> 56) & (LEAK_BUCKETS - 1);
}

void gm_leak_add(gpumem_context *ctx, gm_leak_type type, uintptr_t key, gpumem_memory_kind kind, uint64_t bytes,
                 const char *what)
{
    struct gm_leaks *l = ctx->memstats != NULL ? ctx->memstats->leaks : NULL;
    if (l == NULL)
        return;
    gm_leak *r = calloc(1, sizeof *r);
    if (r == NULL)
        return; /* a debugging aid: a record it cannot keep is one it does not list */
    r->key = key;
    r->type = type;
    r->kind = kind;
    r->bytes = bytes;
    snprintf(r->what, sizeof r->what, "%s", what != NULL ? what : "?");
#ifdef GM_HAVE_BACKTRACE
    r->nframes = backtrace(r->frames, LEAK_FRAMES);
#endif
    size_t b = leak_hash(key);
    pthread_mutex_lock(&l->lock);
    r->seq = l->seq++;
    r->next = l->bucket[b];
    l->bucket[b] = r;
    l->n++;
    pthread_mutex_unlock(&l->lock);
}

void gm_leak_forget(gpumem_context *ctx, uintptr_t key)
{
    struct gm_leaks *l = ctx->memstats != NULL ? ctx->memstats->leaks : NULL;
    if (l == NULL)
        return;
    gm_leak *gone = NULL;
    pthread_mutex_lock(&l->lock);
    for (gm_leak **p = &l->bucket[leak_hash(key)]; *p != NULL; p = &(*p)->next)
        if ((*p)->key == key) {
            gone = *p;
            *p = gone->next;
            l->n--;
            break;
        }
    pthread_mutex_unlock(&l->lock);
    free(gone);
}

static const char *kind_name(gpumem_memory_kind k)
{
    switch (k) {
    case GPUMEM_MEMORY_DEVICE: return "device";
    case GPUMEM_MEMORY_PINNED: return "pinned";
    case GPUMEM_MEMORY_MAPPED: return "mapped";
    case GPUMEM_MEMORY_MANAGED: return "managed";
    case GPUMEM_MEMORY_HOST: return "host";
    default: return "foreign";
    }
}

static int by_seq(const void *a, const void *b)
{
    const gm_leak *x = *(const gm_leak *const *)a, *y = *(const gm_leak *const *)b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Lists what m's context still has alive on standard error, oldest first:
 * after `headline` when anything is, or always when `always`. */
static void leaks_print(struct gm_memstats *m, const char *headline, bool always)
{
    struct gm_leaks *l = m->leaks;
    if (l == NULL)
        return;
    pthread_mutex_lock(&l->lock);
    size_t n = l->n;
    gm_leak **all = n > 0 ? malloc(n * sizeof *all) : NULL;
    size_t got = 0;
    if (all != NULL)
        for (size_t b = 0; b < LEAK_BUCKETS; b++)
            for (gm_leak *r = l->bucket[b]; r != NULL && got < n; r = r->next)
                all[got++] = r;
    if (got > 1)
        qsort(all, got, sizeof *all, by_seq);
    gm_leaksite *site = got > 0 ? gm_leaksite_open() : NULL; /* names the sites now, not at each allocation */
    if (n > 0 || always) {
        uint64_t bytes = 0;
        for (size_t i = 0; i < got; i++)
            bytes += all[i]->bytes;
        fprintf(stderr, "gpumem: leaks: %s: %zu still alive (%llu bytes)%s\n", headline, n,
                (unsigned long long)bytes, n > 0 ? ":" : "");
    }
    static const char *const type_names[] = {"array", "pool allocation", "registered host range"};
    for (size_t i = 0; i < got; i++) {
        const gm_leak *r = all[i];
        if (r->type == GM_LEAK_REGISTRATION)
            fprintf(stderr, "gpumem:   %s of %llu bytes at %p, registered by %s", type_names[r->type],
                    (unsigned long long)r->bytes, (void *)r->key, r->what);
        else
            fprintf(stderr, "gpumem:   %s of %llu bytes of %s memory, made by %s", type_names[r->type],
                    (unsigned long long)r->bytes, kind_name(r->kind), r->what);
        gm_leaksite_print(site, stderr, r->frames, r->nframes);
        fputc('\n', stderr);
    }
    pthread_mutex_unlock(&l->lock);
    gm_leaksite_close(site);
    free(all);
}

static void leaks_free(struct gm_leaks *l)
{
    if (l == NULL)
        return;
    for (size_t b = 0; b < LEAK_BUCKETS; b++)
        while (l->bucket[b] != NULL) {
            gm_leak *r = l->bucket[b];
            l->bucket[b] = r->next;
            free(r);
        }
    pthread_mutex_destroy(&l->lock);
    free(l);
}

/* At exit: every context still alive, and what it has alive. */
static void leaks_at_exit(void)
{
    pthread_mutex_lock(&reg_lock);
    for (struct gm_memstats *m = reg_head; m != NULL; m = m->next) {
        char head[160];
        snprintf(head, sizeof head, "at exit, a context of device %d that was never released (%d references left)",
                 m->device, atomic_load_explicit(&m->ctx->refs, memory_order_relaxed));
        leaks_print(m, head, true);
    }
    pthread_mutex_unlock(&reg_lock);
}

/* Whether GPUMEM_DEBUG, a comma-separated list, has the word "leaks" (env.h). */
static bool debug_wants_leaks(void)
{
    return (gm_debug_flags() & GM_DEBUG_LEAKS) != 0;
}

static pthread_once_t leaks_once = PTHREAD_ONCE_INIT;
const gm_life_hook gm_leaks_life = {.what = "the leak list", .at_exit = leaks_at_exit};

static void leaks_init(void)
{
    if (!debug_wants_leaks())
        return;
    atomic_store(&gm_leaks_on, true);
    (void)gm_life_arm(&gm_leaks_life);
}

/* ---- the context hook ---------------------------------------------------------------- */

static gpumem_status memstats_create(gpumem_context *ctx, const char *what)
{
    pthread_once(&leaks_once, leaks_init);
    struct gm_memstats *m = calloc(1, sizeof *m);
    struct gm_leaks *l = gm_leaks_enabled() ? calloc(1, sizeof *l) : NULL;
    if (m == NULL || (gm_leaks_enabled() && l == NULL)) {
        free(m);
        free(l);
        return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", what);
    }
    if (l != NULL)
        pthread_mutex_init(&l->lock, NULL);
    m->leaks = l;
    m->ctx = ctx;
    m->device = ctx->device;
    pthread_mutex_init(&m->cb_lock, NULL);
    pthread_mutex_lock(&reg_lock);
    gm_memdev *d = devs;
    while (d != NULL && d->device != ctx->device)
        d = d->next;
    if (d == NULL && (d = calloc(1, sizeof *d)) != NULL) {
        d->device = ctx->device;
        d->next = devs;
        devs = d;
    }
    if (d != NULL) {
        d->contexts++;
        m->dev = d;
        m->next = reg_head;
        if (reg_head != NULL)
            reg_head->prev = m;
        reg_head = m;
    }
    pthread_mutex_unlock(&reg_lock);
    if (d == NULL) {
        pthread_mutex_destroy(&m->cb_lock);
        leaks_free(l);
        free(m);
        return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", what);
    }
    ctx->memstats = m;
    return GPUMEM_OK;
}

static gpumem_status memstats_teardown(gpumem_context *ctx, const char *what)
{
    (void)what;
    struct gm_memstats *m = ctx->memstats;
    if (m == NULL)
        return GPUMEM_OK;
    char head[96];
    snprintf(head, sizeof head, "the final release of a context of device %d", m->device);
    leaks_print(m, head, false);
    pthread_mutex_lock(&reg_lock);
    if (m->prev != NULL)
        m->prev->next = m->next;
    else
        reg_head = m->next;
    if (m->next != NULL)
        m->next->prev = m->prev;
    if (--m->dev->contexts == 0) {
        gm_memdev **p = &devs;
        while (*p != m->dev)
            p = &(*p)->next;
        *p = m->dev->next;
        free(m->dev);
    }
    pthread_mutex_unlock(&reg_lock);
    ctx->memstats = NULL;
    pthread_mutex_destroy(&m->cb_lock);
    leaks_free(m->leaks);
    free(m);
    return GPUMEM_OK;
}

const gm_context_hook gm_memstats_hook = {memstats_create, memstats_teardown};

/* ---- out of memory ---------------------------------------------------------------------- */

/* Appends to a message buffer, keeping it terminated when it fills. */
__attribute__((format(printf, 4, 5))) static void cat(char *buf, size_t size, size_t *len, const char *fmt, ...)
{
    if (*len >= size)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *len, size - *len, fmt, ap);
    va_end(ap);
    if (n > 0)
        *len = *len + (size_t)n < size ? *len + (size_t)n : size;
}

static const char *kind_memory(gpumem_memory_kind k)
{
    return k == GPUMEM_MEMORY_PINNED ? "pinned" : k == GPUMEM_MEMORY_MAPPED ? "mapped"
           : k == GPUMEM_MEMORY_MANAGED ? "managed" : "device";
}

static void fill_report(struct gpumem_memory_report *r, const usage *u, const uint64_t *pb, const uint64_t *pc,
                        uint64_t peak_reserved);

/* The message of o in ctx, into buf; the status it goes with.  The
 * allocation's failure is counted in the report it quotes, whether or not
 * it is counted yet (the callback's message is the one it fails with). */
static gpumem_status format_oom(gpumem_context *ctx, const gm_oom *o, char *buf, size_t size)
{
    bool device_side = o->kind == GPUMEM_MEMORY_DEVICE || o->kind == GPUMEM_MEMORY_MANAGED;
    size_t f = 0, t = 0;
    bool known = device_side && GM_DRV(mem_get_info, ctx->dctx, &f, &t) == 0; /* raw: no error of its own */
    usage uc, ud;
    struct gpumem_memory_report r;
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    r.flags = GPUMEM_MEMORY_WHOLE_DEVICE | (known ? GPUMEM_MEMORY_DEVICE_INFO : 0);
    r.ordinal = ctx->device;
    struct gm_memstats *m = ctx->memstats;
    if (m != NULL) {
        pthread_mutex_lock(&reg_lock);
        collect_locked(m, true, &uc, &ud);
        raise_peaks(m->dev->peak_bytes, m->dev->peak_count, &m->dev->peak_reserved, &ud);
        fill_report(&r, &ud, m->dev->peak_bytes, m->dev->peak_count, m->dev->peak_reserved);
        pthread_mutex_unlock(&reg_lock);
        r.oom_failures = ud.oom_failures + 1; /* this one */
    } else {
        memset(&ud, 0, sizeof ud);
    }
    char h[3][32];
    size_t len = 0;
    size_t need = o->block_bytes != 0 ? o->block_bytes : o->bytes;
    cat(buf, size, &len, "%s: out of %s memory: asked for %zu bytes (%s) of %s memory", o->what,
        device_side ? "device" : "page-locked host", o->bytes, gm_mem_human(o->bytes, h[0], sizeof h[0]),
        kind_memory(o->kind));
    if (device_side)
        cat(buf, size, &len, " on device %d", ctx->device);
    if (o->pooled)
        cat(buf, size, &len, " (a pool block of %s)", gm_mem_human(o->block_bytes, h[0], sizeof h[0]));
    uint64_t ours = ud.reserved, others = 0;
    const char *cause;
    if (!device_side) {
        cause = "the host refused more page-locked memory";
    } else {
        if (known) {
            others = (uint64_t)t > (uint64_t)f + ours ? (uint64_t)t - (uint64_t)f - ours : 0;
            r.device_free_bytes = f;
            r.device_total_bytes = t;
            r.others_bytes = others;
        }
        cause = !known ? "unknown (no free memory figure)"
                : (uint64_t)t < need ? "larger than the device (more than its total memory)"
                : (uint64_t)f >= need ? "fragmented (enough free in total, no block large enough)"
                : others > ours ? "held by other processes"
                : "this process's live data";
    }
    cat(buf, size, &len, "; cause: %s (%s: %s)", cause, o->driver_op, gm_cu_error_name(GM_CUDA_ERROR_OUT_OF_MEMORY));
    cat(buf, size, &len, "; the ladder gave back %s (%llu pool blocks of %s, %llu deferred frees of %s)",
        gm_mem_human(o->released_bytes + o->flushed_bytes, h[0], sizeof h[0]), (unsigned long long)o->released_blocks,
        gm_mem_human(o->released_bytes, h[1], sizeof h[1]), (unsigned long long)o->flushed_frees,
        gm_mem_human(o->flushed_bytes, h[2], sizeof h[2]));
    if (o->callback_calls > 0)
        cat(buf, size, &len, "; the out-of-memory callback ran %u time%s%s", o->callback_calls,
            o->callback_calls == 1 ? "" : "s",
            o->callback_declined ? " and then declined" : ", the most for one allocation");
    cat(buf, size, &len, "; to see what holds it, run with GPUMEM_DEBUG=leaks (what is alive at exit, and where "
        "it was made) or GPUMEM_TRACE=FILE (every allocation: gpumem trace summary FILE); memory of ");
    if (len < size)
        len += gm_memory_report_text(&r, GPUMEM_MEMORY_REPORT_ONE_LINE, buf + len, size - len) - 1;
    return device_side ? GPUMEM_ERROR_OUT_OF_MEMORY : GPUMEM_ERROR_HOST_OUT_OF_MEMORY;
}

gpumem_status gm_mem_oom_error(gpumem_context *ctx, const gm_oom *o)
{
    char msg[1024];
    gpumem_status st = format_oom(ctx, o, msg, sizeof msg);
    if (ctx->memstats != NULL)
        GM_STAT_ADD(ctx->memstats->oom_failures, 1);
    /* the driver's refusal is the failure's driver result (gpumem/status.h) */
    return gm_error_driver(st, GM_CUDA_ERROR_OUT_OF_MEMORY, "%s", msg);
}

/* Set while the thread runs an out-of-memory callback: its own allocations
 * do not call it again. */
static _Thread_local int in_callback;

bool gm_mem_oom_callback(gpumem_context *ctx, gm_oom *o)
{
    struct gm_memstats *m = ctx->memstats;
    if (m == NULL || in_callback > 0 || o->callback_calls >= GPUMEM_OOM_CALLBACK_MAX_CALLS)
        return false;
    pthread_mutex_lock(&m->cb_lock);
    gpumem_oom_callback cb = m->cb;
    void *user = m->cb_user;
    pthread_mutex_unlock(&m->cb_lock);
    if (cb == NULL)
        return false;
    char msg[1024];
    format_oom(ctx, o, msg, sizeof msg);
    struct gpumem_oom_info info = {.size = sizeof info, .bytes = o->bytes, .kind = o->kind,
                                   .attempt = o->callback_calls + 1, .call = o->what, .message = msg};
    o->callback_calls++;
    GM_STAT_ADD(m->cb_calls, 1);
    in_callback++;
    int again = cb(ctx, &info, user);
    in_callback--;
    if (!again)
        o->callback_declined = true;
    return again != 0;
}

/* ---- the public API ------------------------------------------------------------------------ */

#define KNOWN_FLAGS (GPUMEM_MEMORY_DEVICE_INFO | GPUMEM_MEMORY_WHOLE_DEVICE)

static void fill_usage(struct gpumem_memory_usage *out, const usage *u, gm_memkind k, const uint64_t *pb,
                       const uint64_t *pc)
{
    out->bytes = u->bytes[k];
    out->count = u->count[k];
    out->peak_bytes = pb[k];
    out->peak_count = pc[k];
}

/* The counts of a report from u and its peaks (not size, flags, ordinal, the driver's figures). */
static void fill_report(struct gpumem_memory_report *r, const usage *u, const uint64_t *pb, const uint64_t *pc,
                        uint64_t peak_reserved)
{
    r->contexts = u->contexts;
    fill_usage(&r->device, u, GM_MK_DEVICE, pb, pc);
    fill_usage(&r->pinned, u, GM_MK_PINNED, pb, pc);
    fill_usage(&r->mapped, u, GM_MK_MAPPED, pb, pc);
    fill_usage(&r->managed, u, GM_MK_MANAGED, pb, pc);
    fill_usage(&r->registered, u, GM_MK_REGISTERED, pb, pc);
    r->device_reserved_bytes = u->reserved;
    r->peak_device_reserved_bytes = peak_reserved;
    r->pools = u->pools;
    r->pool_held_blocks = u->held_blocks[0] + u->held_blocks[1];
    r->pool_held_bytes = u->held_bytes[0] + u->held_bytes[1];
    r->pool_largest_free_block = u->largest[0] > u->largest[1] ? u->largest[0] : u->largest[1];
    r->pending_frees = u->pending;
    r->pending_free_bytes = u->pending_bytes;
    r->driver_allocations = u->driver_allocs;
    r->oom_ladder_runs = u->ladder_runs;
    r->oom_ladder_successes = u->ladder_successes;
    r->oom_callback_calls = u->cb_calls;
    r->oom_callback_successes = u->cb_successes;
    r->oom_failures = u->oom_failures;
}

GPUMEM_API gpumem_status gpumem_memory_report(gpumem_context *ctx, unsigned flags,
                                              struct gpumem_memory_report *report)
{
    GM_CHECK_HANDLE_OR_NULL(ctx); /* before the report is read (gpumem/status.h) */
    GM_CHECK_NULL(report);
    const char *what = "gpumem_memory_report";
    if (flags & ~(unsigned)KNOWN_FLAGS)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: flags 0x%x: unknown bits 0x%x", what, flags,
                        flags & ~(unsigned)KNOWN_FLAGS);
    const size_t first = offsetof(struct gpumem_memory_report, flags);
    if (report->size < first + sizeof report->flags)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: report->size is %zu; set it to "
                        "sizeof(struct gpumem_memory_report) (%zu)", what, report->size,
                        sizeof(struct gpumem_memory_report));
    gpumem_status st;
    ctx = gm_context_or_default(ctx, &st);
    if (st != GPUMEM_OK)
        return st;
    size_t f = 0, t = 0;
    if (flags & GPUMEM_MEMORY_DEVICE_INFO) {
        st = gm_drv_check(GM_DRV(mem_get_info, ctx->dctx, &f, &t), GM_OP_mem_get_info, what);
        if (st != GPUMEM_OK)
            return st;
    }
    struct gm_memstats *m = ctx->memstats;
    struct gpumem_memory_report r;
    memset(&r, 0, sizeof r);
    r.flags = flags;
    r.ordinal = ctx->device;
    if (m != NULL) {
        usage uc, ud;
        pthread_mutex_lock(&reg_lock);
        collect_locked(m, true, &uc, &ud);
        raise_peaks(m->peak_bytes, m->peak_count, &m->peak_reserved, &uc);
        raise_peaks(m->dev->peak_bytes, m->dev->peak_count, &m->dev->peak_reserved, &ud);
        bool whole = (flags & GPUMEM_MEMORY_WHOLE_DEVICE) != 0;
        const usage *u = whole ? &ud : &uc;
        const uint64_t *pb = whole ? m->dev->peak_bytes : m->peak_bytes;
        const uint64_t *pc = whole ? m->dev->peak_count : m->peak_count;
        if (flags & GPUMEM_MEMORY_DEVICE_INFO) {
            r.device_free_bytes = f;
            r.device_total_bytes = t;
            r.others_bytes = (uint64_t)t > (uint64_t)f + ud.reserved ? (uint64_t)t - (uint64_t)f - ud.reserved : 0;
        }
        fill_report(&r, u, pb, pc, whole ? m->dev->peak_reserved : m->peak_reserved);
        pthread_mutex_unlock(&reg_lock);
    }
    size_t n = report->size < sizeof r ? report->size : sizeof r;
    memcpy((char *)report + first, (const char *)&r + first, n - first);
    if (report->size > sizeof r)
        memset((char *)report + sizeof r, 0, report->size - sizeof r); /* fields of later versions */
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_memory_reset_peaks(gpumem_context *ctx, unsigned flags)
{
    GM_CHECK_HANDLE_OR_NULL(ctx);
    if (flags & ~(unsigned)GPUMEM_MEMORY_WHOLE_DEVICE)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "gpumem_memory_reset_peaks: flags 0x%x: only "
                        "GPUMEM_MEMORY_WHOLE_DEVICE (0x%x) is known", flags, GPUMEM_MEMORY_WHOLE_DEVICE);
    gpumem_status st;
    ctx = gm_context_or_default(ctx, &st);
    if (st != GPUMEM_OK)
        return st;
    struct gm_memstats *m = ctx->memstats;
    if (m == NULL)
        return GPUMEM_OK;
    usage uc, ud;
    pthread_mutex_lock(&reg_lock);
    if (flags & GPUMEM_MEMORY_WHOLE_DEVICE) {
        for (struct gm_memstats *c = reg_head; c != NULL; c = c->next) {
            if (c->device != m->device)
                continue;
            collect_locked(c, false, &uc, &ud);
            set_peaks(c->peak_bytes, c->peak_count, &c->peak_reserved, &uc);
        }
        collect_locked(m, false, &uc, &ud);
        set_peaks(m->dev->peak_bytes, m->dev->peak_count, &m->dev->peak_reserved, &ud);
    } else {
        collect_locked(m, false, &uc, &ud);
        set_peaks(m->peak_bytes, m->peak_count, &m->peak_reserved, &uc);
    }
    pthread_mutex_unlock(&reg_lock);
    return GPUMEM_OK;
}

typedef struct pool_list {
    const gpumem_context *ctx; /* NULL: every context of the device */
    gm_pool_usage *items;
    size_t n, cap;
    bool failed;
} pool_list;

static void list_pool(const gm_pool_usage *p, void *arg)
{
    pool_list *l = arg;
    if (p->destroyed || (l->ctx != NULL && p->ctx != l->ctx)) /* destroyed pools are not listed */
        return;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        gm_pool_usage *m = realloc(l->items, cap * sizeof *m);
        if (m == NULL) {
            l->failed = true;
            return;
        }
        l->items = m;
        l->cap = cap;
    }
    l->items[l->n++] = *p;
}

GPUMEM_API gpumem_status gpumem_memory_pools(gpumem_context *ctx, unsigned flags,
                                             struct gpumem_memory_pool_report *pools, size_t capacity,
                                             size_t *count)
{
    GM_CHECK_HANDLE_OR_NULL(ctx); /* before the elements are read (gpumem/status.h) */
    GM_CHECK_NULL(count);
    const char *what = "gpumem_memory_pools";
    if (capacity > 0 && pools == NULL)
        return gm_error(GPUMEM_ERROR_NULL_ARGUMENT, "%s: argument 'pools' is NULL with capacity %zu", what,
                        capacity);
    if (flags & ~(unsigned)GPUMEM_MEMORY_WHOLE_DEVICE)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: flags 0x%x: only GPUMEM_MEMORY_WHOLE_DEVICE (0x%x) is "
                        "known", what, flags, GPUMEM_MEMORY_WHOLE_DEVICE);
    const size_t first = offsetof(struct gpumem_memory_pool_report, pool);
    size_t stride = capacity > 0 ? pools[0].size : 0;
    if (capacity > 0 && stride < first + sizeof pools[0].pool)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: pools[0].size is %zu; set every element's size to "
                        "sizeof(struct gpumem_memory_pool_report) (%zu)", what, stride,
                        sizeof(struct gpumem_memory_pool_report));
    for (size_t i = 1; i < capacity; i++) {
        const struct gpumem_memory_pool_report *e =
            (const struct gpumem_memory_pool_report *)(const void *)((const char *)pools + i * stride);
        if (e->size != stride)
            return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: pools[%zu].size is %zu, unlike pools[0].size (%zu): "
                            "set every element's size to sizeof(struct gpumem_memory_pool_report)", what, i,
                            e->size, stride);
    }
    gpumem_status st;
    ctx = gm_context_or_default(ctx, &st);
    if (st != GPUMEM_OK)
        return st;
    pool_list l = {.ctx = (flags & GPUMEM_MEMORY_WHOLE_DEVICE) ? NULL : ctx};
    gm_pools_usage(ctx->device, true, list_pool, &l);
    if (l.failed) {
        free(l.items);
        return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory", what);
    }
    for (size_t i = 0; i < l.n && i < capacity; i++) {
        const gm_pool_usage *p = &l.items[i];
        struct gpumem_memory_pool_report r;
        memset(&r, 0, sizeof r);
        if (p->kind == GM_POOL_DEVICE && !p->own)
            r.pool = (gpumem_pool *)(uintptr_t)p->handle;
        if (p->kind == GM_POOL_HOST)
            r.host_pool = (gpumem_host_pool *)(uintptr_t)p->handle;
        r.kind = p->kind == GM_POOL_DEVICE ? GPUMEM_MEMORY_DEVICE : p->mapped ? GPUMEM_MEMORY_MAPPED
                                                                               : GPUMEM_MEMORY_PINNED;
        r.own = p->own;
        r.ordinal = p->ctx->device;
        r.held_blocks = p->held_blocks;
        r.held_bytes = p->held_bytes;
        r.largest_free_block = p->largest_held;
        r.active_blocks = p->active_blocks;
        r.active_bytes = p->active_bytes;
        r.active_requested_bytes = p->active_requested;
        char *dst = (char *)pools + i * stride;
        size_t n = stride < sizeof r ? stride : sizeof r;
        memcpy(dst + first, (const char *)&r + first, n - first);
        if (stride > sizeof r)
            memset(dst + sizeof r, 0, stride - sizeof r);
    }
    *count = l.n;
    free(l.items);
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_context_set_oom_callback(gpumem_context *ctx, gpumem_oom_callback callback,
                                                         void *user)
{
    gpumem_status st;
    ctx = gm_context_or_default(ctx, &st);
    if (st != GPUMEM_OK)
        return st;
    struct gm_memstats *m = ctx->memstats;
    if (m == NULL)
        return gm_error(GPUMEM_ERROR_INTERNAL, "gpumem_context_set_oom_callback: the context has no books");
    pthread_mutex_lock(&m->cb_lock);
    m->cb = callback;
    m->cb_user = callback != NULL ? user : NULL;
    pthread_mutex_unlock(&m->cb_lock);
    return GPUMEM_OK;
}
