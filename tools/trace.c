/*
 * trace.c - gpumem trace: reads a trace file (gpumem/trace.h,
 * doc/trace-format.md) and
 *   summary FILE [--json]        peak in use (when, by kind and pool), the
 *                                largest allocations, what was never freed
 *                                (by call site), copies by path, out-of-memory
 *                                events with their message, ladder runs, trims;
 *   plot FILE -o OUT.html        the timeline (trace_plot.c);
 *   export --chrome FILE         the Chrome Trace Event format, on stdout;
 *   replay FILE [--allocator driver|pool|vmm|async] [--no-thread-cache] [--no-hold]
 *                                the allocations and frees again, on this
 *                                backend, with one allocator configuration.
 * Every subcommand takes --partial: read a trace that does not end (its
 * program was killed) up to where it stops.  Exit status: 0; 1 a trace that
 * cannot be read (the message says where it stops) or a library failure;
 * 2 a usage error.  Nothing is written when the trace cannot be read.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gpumem.h>

#include "json-string.h"
#include "trace_cmd.h"

/* ---- the model ------------------------------------------------------------------------------------ */

/* An open-addressing map from (pool, device, address) to an allocation. */
typedef struct live_map {
    struct slot {
        uint64_t pool, addr;
        int32_t device;
        int32_t a; /* -1 empty, -2 deleted */
    } *s;
    size_t cap, used;
} live_map;

static uint64_t mix(uint64_t pool, uint64_t addr, int32_t device)
{
    uint64_t h = addr * 0x9e3779b97f4a7c15ull ^ pool * 0xc2b2ae3d27d4eb4full ^ (uint64_t)(uint32_t)device;
    return h ^ h >> 29;
}

static int map_grow(live_map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 1024;
    struct slot *s = malloc(cap * sizeof *s);
    if (s == NULL)
        return -1;
    for (size_t i = 0; i < cap; i++)
        s[i].a = -1;
    for (size_t i = 0; i < m->cap; i++)
        if (m->s[i].a >= 0) {
            size_t j = mix(m->s[i].pool, m->s[i].addr, m->s[i].device) & (cap - 1);
            while (s[j].a != -1)
                j = (j + 1) & (cap - 1);
            s[j] = m->s[i];
        }
    free(m->s);
    m->s = s;
    m->cap = cap;
    return 0;
}

static struct slot *map_find(live_map *m, uint64_t pool, uint64_t addr, int32_t device)
{
    if (m->cap == 0)
        return NULL;
    for (size_t j = mix(pool, addr, device) & (m->cap - 1);; j = (j + 1) & (m->cap - 1)) {
        struct slot *s = &m->s[j];
        if (s->a == -1)
            return NULL;
        if (s->a >= 0 && s->pool == pool && s->addr == addr && s->device == device)
            return s;
    }
}

static int map_put(live_map *m, uint64_t pool, uint64_t addr, int32_t device, int32_t a)
{
    if ((m->used + 1) * 2 > m->cap && map_grow(m) != 0)
        return -1;
    size_t j = mix(pool, addr, device) & (m->cap - 1);
    while (m->s[j].a >= 0)
        j = (j + 1) & (m->cap - 1);
    if (m->s[j].a == -1)
        m->used++;
    m->s[j] = (struct slot){pool, addr, device, a};
    return 0;
}

int tm_build(const tr_trace *t, tm_model *m)
{
    memset(m, 0, sizeof *m);
    live_map map = {0};
    m->delta = calloc(t->nev ? t->nev : 1, sizeof *m->delta);
    m->which = malloc((t->nev ? t->nev : 1) * sizeof *m->which);
    size_t cap = 0, pcap = 0;
    if (m->delta == NULL || m->which == NULL)
        goto nomem;
    for (size_t i = 0; i < t->nev; i++) {
        const tr_event *e = &t->ev[i];
        m->which[i] = -1;
        if (e->type == GM_TE_ALLOC) {
            uint32_t pool = 0;
            if (e->pool != 0) {
                while (pool < m->npools && m->pools[pool].id != e->pool)
                    pool++;
                if (pool == m->npools) {
                    if (m->npools == pcap) {
                        pcap = pcap ? pcap * 2 : 8;
                        tm_pool *p = realloc(m->pools, pcap * sizeof *p);
                        if (p == NULL)
                            goto nomem;
                        m->pools = p;
                    }
                    m->pools[m->npools++] = (tm_pool){e->pool, e->kind, e->device};
                }
                pool++;
            }
            struct slot *old = map_find(&map, e->pool, e->value, e->device);
            if (old != NULL) { /* its free is missing: it ends here */
                m->a[old->a].t1 = e->t;
                old->a = -2;
            }
            if (m->na == cap) {
                cap = cap ? cap * 2 : 256;
                tm_alloc *a = realloc(m->a, cap * sizeof *a);
                if (a == NULL)
                    goto nomem;
                m->a = a;
            }
            m->a[m->na] = (tm_alloc){.t0 = e->t, .t1 = TM_LIVE, .bytes = e->bytes, .addr = e->value,
                                     .stream = e->stream, .stack = e->ref, .thread = e->thread, .pool = pool,
                                     .device = e->device, .kind = e->kind, .ev = i};
            if (m->na > INT32_MAX - 1 || map_put(&map, e->pool, e->value, e->device, (int32_t)m->na) != 0)
                goto nomem;
            m->which[i] = (int32_t)m->na;
            m->delta[i] = (int64_t)e->bytes;
            m->na++;
        } else if (e->type == GM_TE_FREE) {
            struct slot *s = map_find(&map, e->pool, e->value, e->device);
            if (s == NULL) {
                m->unmatched_frees++;
                continue;
            }
            tm_alloc *a = &m->a[s->a];
            a->t1 = e->t;
            m->which[i] = s->a;
            m->delta[i] = -(int64_t)a->bytes;
            s->a = -2;
        }
    }
    free(map.s);
    return 0;
nomem:
    free(map.s);
    tm_free(m);
    return -1;
}

void tm_free(tm_model *m)
{
    free(m->a);
    free(m->pools);
    free(m->delta);
    free(m->which);
    memset(m, 0, sizeof *m);
}

const char *tm_bytes(uint64_t b, char *buf, size_t size)
{
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB"};
    if (b < 1024) {
        snprintf(buf, size, "%llu B", (unsigned long long)b);
        return buf;
    }
    double v = (double)b / 1024;
    int u = 0;
    while (v >= 1024 && u < 3) {
        v /= 1024;
        u++;
    }
    snprintf(buf, size, "%.1f %s", v, units[u]);
    return buf;
}

const char *tm_pool_name(uint32_t pool, char *buf, size_t size)
{
    if (pool == 0)
        snprintf(buf, size, "driver");
    else
        snprintf(buf, size, "pool %u", (unsigned)pool);
    return buf;
}

static void ms(uint64_t ns, char *buf, size_t size)
{
    snprintf(buf, size, "%.3f ms", (double)ns / 1e6);
}

static const char *thread_name(const tr_trace *t, uint32_t index, char *buf, size_t size)
{
    for (size_t i = 0; i < t->nthr; i++)
        if (t->thr[i].index == index) {
            if (t->thr[i].name[0])
                snprintf(buf, size, "thread %u (%s)", (unsigned)index, t->thr[i].name);
            else
                snprintf(buf, size, "thread %u", (unsigned)index);
            return buf;
        }
    snprintf(buf, size, "thread %u", (unsigned)index);
    return buf;
}

/* ---- summary ------------------------------------------------------------------------------------- */

#define NKIND 7 /* the six kinds, and unknown */

static int kind_slot(int kind)
{
    return kind >= 0 && kind < 6 ? kind : 6;
}

typedef struct path_sum {
    uint32_t path; /* string id */
    uint64_t count, bytes, sync_count, sync_bytes, sync_ns, async_count, async_bytes;
} path_sum;

typedef struct site_sum {
    uint32_t stack;
    uint64_t count, bytes;
} site_sum;

typedef struct summary {
    uint64_t peak, peak_t, by_kind[NKIND];
    uint64_t *by_pool; /* [npools + 1], at the peak */
    size_t *largest;   /* allocation indices, largest first */
    size_t nlargest;
    uint64_t leak_count, leak_bytes;
    site_sum *sites;
    size_t nsites;
    path_sum *paths;
    size_t npaths;
    uint64_t ladder_runs, ladder_ok, ladder_bytes, trims, trim_bytes, markers, regions, ooms;
} summary;

static int by_bytes_desc(const void *a, const void *b, void *arg)
{
    const tm_model *m = arg;
    const tm_alloc *x = &m->a[*(const size_t *)a], *y = &m->a[*(const size_t *)b];
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

static int site_desc(const void *a, const void *b)
{
    const site_sum *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    return x->stack < y->stack ? -1 : x->stack > y->stack;
}

static int summarize(const tr_trace *t, const tm_model *m, summary *s)
{
    memset(s, 0, sizeof *s);
    uint64_t cur = 0, kinds[NKIND] = {0};
    uint64_t *pools = calloc(m->npools + 1, sizeof *pools);
    s->by_pool = calloc(m->npools + 1, sizeof *s->by_pool);
    if (pools == NULL || s->by_pool == NULL) {
        free(pools);
        return -1;
    }
    for (size_t i = 0; i < t->nev; i++) {
        const tr_event *e = &t->ev[i];
        if (m->which[i] >= 0) {
            const tm_alloc *a = &m->a[m->which[i]];
            int64_t d = m->delta[i];
            cur += (uint64_t)d;
            kinds[kind_slot(a->kind)] += (uint64_t)d;
            pools[a->pool] += (uint64_t)d;
            if (d > 0 && cur > s->peak) {
                s->peak = cur;
                s->peak_t = e->t;
                memcpy(s->by_kind, kinds, sizeof kinds);
                memcpy(s->by_pool, pools, (m->npools + 1) * sizeof *pools);
            }
        }
        switch (e->type) {
        case GM_TE_COPY: {
            size_t k = 0;
            while (k < s->npaths && s->paths[k].path != e->ref)
                k++;
            if (k == s->npaths) {
                path_sum *p = realloc(s->paths, (s->npaths + 1) * sizeof *p);
                if (p == NULL) {
                    free(pools);
                    return -1;
                }
                s->paths = p;
                s->paths[s->npaths++] = (path_sum){.path = e->ref};
            }
            path_sum *p = &s->paths[k];
            p->count++;
            p->bytes += e->bytes;
            if (e->flags & GM_TF_ASYNC) {
                p->async_count++;
                p->async_bytes += e->bytes;
            } else {
                p->sync_count++;
                p->sync_bytes += e->bytes;
                p->sync_ns += e->value;
            }
            break;
        }
        case GM_TE_LADDER:
            s->ladder_runs++;
            s->ladder_ok += (e->flags & GM_TF_RETRY_OK) != 0;
            s->ladder_bytes += e->value;
            break;
        case GM_TE_TRIM:
            s->trims++;
            s->trim_bytes += e->value;
            break;
        case GM_TE_MARK:
            s->markers++;
            break;
        case GM_TE_PUSH:
            s->regions++;
            break;
        case GM_TE_OOM:
            s->ooms++;
            break;
        }
    }
    free(pools);
    s->largest = malloc((m->na ? m->na : 1) * sizeof *s->largest);
    if (s->largest == NULL)
        return -1;
    for (size_t i = 0; i < m->na; i++)
        s->largest[i] = i;
    qsort_r(s->largest, m->na, sizeof *s->largest, by_bytes_desc, (void *)m);
    s->nlargest = m->na < 10 ? m->na : 10;
    for (size_t i = 0; i < m->na; i++) {
        const tm_alloc *a = &m->a[i];
        if (a->t1 != TM_LIVE)
            continue;
        s->leak_count++;
        s->leak_bytes += a->bytes;
        size_t k = 0;
        while (k < s->nsites && s->sites[k].stack != a->stack)
            k++;
        if (k == s->nsites) {
            site_sum *p = realloc(s->sites, (s->nsites + 1) * sizeof *p);
            if (p == NULL)
                return -1;
            s->sites = p;
            s->sites[s->nsites++] = (site_sum){.stack = a->stack};
        }
        s->sites[k].count++;
        s->sites[k].bytes += a->bytes;
    }
    if (s->nsites > 1)
        qsort(s->sites, s->nsites, sizeof *s->sites, site_desc);
    return 0;
}

static void summary_free(summary *s)
{
    free(s->by_pool);
    free(s->largest);
    free(s->sites);
    free(s->paths);
}

static double bandwidth(const path_sum *p)
{
    return p->sync_ns > 0 ? (double)p->sync_bytes / ((double)p->sync_ns * 1e-9) : 0;
}

static void print_site(const tr_trace *t, uint32_t stack, const char *indent)
{
    if (stack == 0 || stack >= t->nstk) {
        printf("%s(no call site recorded: GPUMEM_TRACE_STACKS=1 records them)\n", indent);
        return;
    }
    char buf[512];
    for (uint32_t i = 0; i < t->stk[stack].n; i++)
        printf("%s%s %s\n", indent, i == 0 ? "at" : "  by", tr_frame_name(t, &t->stk[stack].f[i], buf, sizeof buf));
}

static void print_text(const char *file, const tr_trace *t, const tm_model *m, const summary *s, const char *note)
{
    char b1[64], b2[64], b3[96], b4[32];
    printf("trace %s: %s, pid %u, %s\n", file, t->program[0] ? t->program : "(program unknown)", (unsigned)t->pid,
           t->complete ? "complete" : "INCOMPLETE");
    if (!t->complete && note[0])
        printf("  %s\n", note);
    ms(t->end_ns, b1, sizeof b1);
    printf("  %s, %zu events (%llu lost), %zu thread%s, %zu allocations, %llu frees of earlier allocations\n", b1,
           t->nev, (unsigned long long)t->lost, t->nthr, t->nthr == 1 ? "" : "s", m->na,
           (unsigned long long)m->unmatched_frees);
    ms(s->peak_t, b2, sizeof b2);
    printf("peak in use: %s at %s\n", tm_bytes(s->peak, b1, sizeof b1), b2);
    printf("  by kind:");
    int any = 0;
    for (int k = 0; k < NKIND; k++)
        if (s->by_kind[k]) {
            printf("%s %s %s", any++ ? "," : "", tr_kind_name(k), tm_bytes(s->by_kind[k], b1, sizeof b1));
        }
    printf("%s\n  by pool:", any ? "" : " none");
    any = 0;
    for (size_t p = 0; p <= m->npools; p++)
        if (s->by_pool[p]) {
            if (p == 0)
                printf("%s driver %s", any++ ? "," : "", tm_bytes(s->by_pool[p], b1, sizeof b1));
            else
                printf("%s pool %zu (%s, device %d) %s", any++ ? "," : "", p, tr_kind_name(m->pools[p - 1].kind),
                       (int)m->pools[p - 1].device, tm_bytes(s->by_pool[p], b1, sizeof b1));
        }
    printf("%s\n", any ? "" : " none");
    printf("largest allocations:\n");
    for (size_t i = 0; i < s->nlargest; i++) {
        const tm_alloc *a = &m->a[s->largest[i]];
        ms(a->t0, b2, sizeof b2);
        printf("  %10s %s on device %d, %s, at %s by %s, ", tm_bytes(a->bytes, b1, sizeof b1), tr_kind_name(a->kind),
               (int)a->device, tm_pool_name(a->pool, b4, sizeof b4), b2, thread_name(t, a->thread, b3, sizeof b3));
        if (a->t1 == TM_LIVE) {
            printf("never freed\n");
        } else {
            ms(a->t1, b2, sizeof b2);
            printf("freed at %s\n", b2);
        }
    }
    if (s->nlargest == 0)
        printf("  none\n");
    printf("never freed: %llu allocation%s, %s\n", (unsigned long long)s->leak_count, s->leak_count == 1 ? "" : "s",
           tm_bytes(s->leak_bytes, b1, sizeof b1));
    for (size_t i = 0; i < s->nsites && i < 10; i++) {
        printf("  %llu x, %s\n", (unsigned long long)s->sites[i].count, tm_bytes(s->sites[i].bytes, b1, sizeof b1));
        print_site(t, s->sites[i].stack, "    ");
    }
    printf("copies by path:\n");
    if (s->npaths == 0)
        printf("  none\n");
    for (size_t i = 0; i < s->npaths; i++) {
        const path_sum *p = &s->paths[i];
        printf("  %-16s %6llu copies %10s", tr_str(t, p->path)[0] ? tr_str(t, p->path) : "?",
               (unsigned long long)p->count, tm_bytes(p->bytes, b1, sizeof b1));
        if (p->sync_count) {
            ms(p->sync_ns, b2, sizeof b2);
            double bw = bandwidth(p);
            printf(", %llu synchronous in %s: %.3g %s", (unsigned long long)p->sync_count, b2,
                   bw >= 1e9 ? bw / 1e9 : bw / 1e6, bw >= 1e9 ? "GB/s" : "MB/s");
        }
        if (p->async_count)
            printf(", %llu on streams (%s; their time is the queuing)", (unsigned long long)p->async_count,
                   tm_bytes(p->async_bytes, b1, sizeof b1));
        printf("\n");
    }
    printf("out of memory: %llu\n", (unsigned long long)s->ooms);
    for (size_t i = 0; i < t->nev; i++) {
        const tr_event *e = &t->ev[i];
        if (e->type != GM_TE_OOM)
            continue;
        ms(e->t, b2, sizeof b2);
        printf("  at %s: %s of %s on device %d by %s: %s (%s)\n", b2, tm_bytes(e->bytes, b1, sizeof b1),
               tr_kind_name(e->kind), (int)e->device, thread_name(t, e->thread, b3, sizeof b3), tr_str(t, e->ref),
               gpumem_status_string((gpumem_status)e->aux));
    }
    printf("out-of-memory ladder: %llu run%s, %llu retr%s succeeded, %s given back\n",
           (unsigned long long)s->ladder_runs, s->ladder_runs == 1 ? "" : "s", (unsigned long long)s->ladder_ok,
           s->ladder_ok == 1 ? "y" : "ies", tm_bytes(s->ladder_bytes, b1, sizeof b1));
    printf("pool trims: %llu, %s given back\n", (unsigned long long)s->trims, tm_bytes(s->trim_bytes, b1, sizeof b1));
    printf("markers: %llu, regions: %llu\n", (unsigned long long)s->markers, (unsigned long long)s->regions);
}

static void json_site(const tr_trace *t, uint32_t stack)
{
    printf("[");
    if (stack != 0 && stack < t->nstk) {
        char buf[512];
        for (uint32_t i = 0; i < t->stk[stack].n; i++) {
            printf("%s", i ? ", " : "");
            json_string(tr_frame_name(t, &t->stk[stack].f[i], buf, sizeof buf));
        }
    }
    printf("]");
}

static void print_json(const char *file, const tr_trace *t, const tm_model *m, const summary *s, const char *note)
{
    printf("{\"file\": ");
    json_string(file);
    printf(", \"complete\": %s, \"incomplete_reason\": ", t->complete ? "true" : "false");
    json_string(t->complete ? "" : note);
    printf(", \"program\": ");
    json_string(t->program);
    printf(", \"pid\": %u, \"duration_ns\": %llu, \"events\": %zu, \"lost\": %llu, \"allocations\": %zu, "
           "\"unmatched_frees\": %llu,\n",
           (unsigned)t->pid, (unsigned long long)t->end_ns, t->nev, (unsigned long long)t->lost, m->na,
           (unsigned long long)m->unmatched_frees);
    printf(" \"threads\": [");
    for (size_t i = 0; i < t->nthr; i++) {
        printf("%s{\"index\": %u, \"tid\": %u, \"name\": ", i ? ", " : "", (unsigned)t->thr[i].index,
               (unsigned)t->thr[i].tid);
        json_string(t->thr[i].name);
        printf("}");
    }
    printf("],\n \"peak\": {\"bytes\": %llu, \"t_ns\": %llu, \"by_kind\": {", (unsigned long long)s->peak,
           (unsigned long long)s->peak_t);
    int any = 0;
    for (int k = 0; k < NKIND; k++)
        if (s->by_kind[k])
            printf("%s\"%s\": %llu", any++ ? ", " : "", tr_kind_name(k), (unsigned long long)s->by_kind[k]);
    printf("}, \"by_pool\": [");
    any = 0;
    for (size_t p = 0; p <= m->npools; p++)
        if (s->by_pool[p])
            printf("%s{\"pool\": %zu, \"kind\": \"%s\", \"device\": %d, \"bytes\": %llu}", any++ ? ", " : "", p,
                   p ? tr_kind_name(m->pools[p - 1].kind) : "", p ? (int)m->pools[p - 1].device : -1,
                   (unsigned long long)s->by_pool[p]);
    printf("]},\n \"largest\": [");
    for (size_t i = 0; i < s->nlargest; i++) {
        const tm_alloc *a = &m->a[s->largest[i]];
        printf("%s\n  {\"bytes\": %llu, \"kind\": \"%s\", \"device\": %d, \"pool\": %u, \"t_ns\": %llu, "
               "\"freed_ns\": ",
               i ? "," : "", (unsigned long long)a->bytes, tr_kind_name(a->kind), (int)a->device, (unsigned)a->pool,
               (unsigned long long)a->t0);
        if (a->t1 == TM_LIVE)
            printf("null");
        else
            printf("%llu", (unsigned long long)a->t1);
        printf(", \"thread\": %u, \"call_site\": ", (unsigned)a->thread);
        json_site(t, a->stack);
        printf("}");
    }
    printf("],\n \"never_freed\": {\"count\": %llu, \"bytes\": %llu, \"sites\": [", (unsigned long long)s->leak_count,
           (unsigned long long)s->leak_bytes);
    for (size_t i = 0; i < s->nsites; i++) {
        printf("%s\n  {\"count\": %llu, \"bytes\": %llu, \"call_site\": ", i ? "," : "",
               (unsigned long long)s->sites[i].count, (unsigned long long)s->sites[i].bytes);
        json_site(t, s->sites[i].stack);
        printf("}");
    }
    printf("]},\n \"copies\": [");
    for (size_t i = 0; i < s->npaths; i++) {
        const path_sum *p = &s->paths[i];
        printf("%s\n  {\"path\": ", i ? "," : "");
        json_string(tr_str(t, p->path));
        printf(", \"count\": %llu, \"bytes\": %llu, \"sync_count\": %llu, \"sync_bytes\": %llu, \"sync_ns\": %llu, "
               "\"bandwidth_bytes_per_s\": %.0f, \"async_count\": %llu, \"async_bytes\": %llu}",
               (unsigned long long)p->count, (unsigned long long)p->bytes, (unsigned long long)p->sync_count,
               (unsigned long long)p->sync_bytes, (unsigned long long)p->sync_ns, bandwidth(p),
               (unsigned long long)p->async_count, (unsigned long long)p->async_bytes);
    }
    printf("],\n \"out_of_memory\": [");
    any = 0;
    for (size_t i = 0; i < t->nev; i++) {
        const tr_event *e = &t->ev[i];
        if (e->type != GM_TE_OOM)
            continue;
        printf("%s\n  {\"t_ns\": %llu, \"bytes\": %llu, \"kind\": \"%s\", \"device\": %d, \"thread\": %u, "
               "\"status\": \"%s\", \"message\": ",
               any++ ? "," : "", (unsigned long long)e->t, (unsigned long long)e->bytes, tr_kind_name(e->kind),
               (int)e->device, (unsigned)e->thread, gpumem_status_string((gpumem_status)e->aux));
        json_string(tr_str(t, e->ref));
        printf("}");
    }
    printf("],\n \"ladder\": {\"runs\": %llu, \"retries_succeeded\": %llu, \"released_bytes\": %llu}, "
           "\"trims\": {\"count\": %llu, \"released_bytes\": %llu}, \"markers\": %llu, \"regions\": %llu}\n",
           (unsigned long long)s->ladder_runs, (unsigned long long)s->ladder_ok, (unsigned long long)s->ladder_bytes,
           (unsigned long long)s->trims, (unsigned long long)s->trim_bytes, (unsigned long long)s->markers,
           (unsigned long long)s->regions);
}

/* ---- export --chrome ---------------------------------------------------------------------------- */

static void us(uint64_t ns)
{
    printf("%llu.%03llu", (unsigned long long)(ns / 1000), (unsigned long long)(ns % 1000));
}

static void chrome(const tr_trace *t, const tm_model *m)
{
    unsigned pid = t->pid;
    printf("{\"displayTimeUnit\": \"ns\", \"otherData\": {\"program\": ");
    json_string(t->program);
    printf(", \"complete\": %s}, \"traceEvents\": [\n", t->complete ? "true" : "false");
    printf("{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %u, \"tid\": 0, \"args\": {\"name\": ", pid);
    json_string(t->program[0] ? t->program : "traced program");
    printf("}}");
    for (size_t i = 0; i < t->nthr; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s%s%u", t->thr[i].name[0] ? t->thr[i].name : "thread",
                 t->thr[i].name[0] ? " #" : " ", (unsigned)t->thr[i].index);
        printf(",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %u, \"tid\": %u, \"args\": {\"name\": ", pid,
               (unsigned)t->thr[i].index);
        json_string(name);
        printf("}}");
    }
    uint64_t kinds[NKIND] = {0};
    /* open regions per thread (depths), so that every E has its B */
    typedef struct open_region {
        uint32_t thread, depth;
    } open_region;
    open_region *open = NULL;
    size_t nopen = 0, capopen = 0;
    for (size_t i = 0; i < t->nev; i++) {
        const tr_event *e = &t->ev[i];
        if (m->which[i] >= 0) {
            kinds[kind_slot(m->a[m->which[i]].kind)] += (uint64_t)m->delta[i];
            printf(",\n{\"name\": \"memory in use\", \"ph\": \"C\", \"pid\": %u, \"tid\": 0, \"ts\": ", pid);
            us(e->t);
            printf(", \"args\": {");
            int any = 0;
            for (int k = 0; k < NKIND; k++)
                if (kinds[k] || (k == 0))
                    printf("%s\"%s\": %llu", any++ ? ", " : "", tr_kind_name(k), (unsigned long long)kinds[k]);
            printf("}}");
        }
        switch (e->type) {
        case GM_TE_COPY: {
            double bw = e->value ? (double)e->bytes / ((double)e->value * 1e-9) / 1e9 : 0;
            printf(",\n{\"name\": ");
            char name[200];
            snprintf(name, sizeof name, "copy %s", tr_str(t, e->ref));
            json_string(name);
            printf(", \"cat\": \"copy\", \"ph\": \"X\", \"pid\": %u, \"tid\": %u, \"ts\": ", pid, (unsigned)e->thread);
            us(e->t);
            printf(", \"dur\": ");
            us(e->value);
            printf(", \"args\": {\"bytes\": %llu, \"direction\": \"%s\", \"src\": \"%s\", \"dst\": \"%s\", "
                   "\"on_stream\": %s, \"GB_per_s\": %.3f}}",
                   (unsigned long long)e->bytes, tr_direction_name((int)e->aux), tr_kind_name(e->kind),
                   tr_kind_name(e->kind2), (e->flags & GM_TF_ASYNC) ? "true" : "false", bw);
            break;
        }
        case GM_TE_PUSH:
            if (nopen == capopen) {
                capopen = capopen ? capopen * 2 : 16;
                open_region *o = realloc(open, capopen * sizeof *o);
                if (o == NULL)
                    break; /* drawn without its bar */
                open = o;
            }
            open[nopen++] = (open_region){e->thread, e->aux};
            printf(",\n{\"name\": ");
            json_string(tr_str(t, e->ref));
            printf(", \"cat\": \"region\", \"ph\": \"B\", \"pid\": %u, \"tid\": %u, \"ts\": ", pid,
                   (unsigned)e->thread);
            us(e->t);
            printf("}");
            break;
        case GM_TE_POP: {
            size_t k = nopen;
            while (k > 0 && !(open[k - 1].thread == e->thread && open[k - 1].depth == e->aux))
                k--;
            if (k == 0)
                break; /* opened before the trace started */
            open[k - 1] = open[--nopen];
            printf(",\n{\"cat\": \"region\", \"ph\": \"E\", \"pid\": %u, \"tid\": %u, \"ts\": ", pid,
                   (unsigned)e->thread);
            us(e->t);
            printf("}");
            break;
        }
        case GM_TE_MARK:
            printf(",\n{\"name\": ");
            json_string(tr_str(t, e->ref));
            printf(", \"cat\": \"marker\", \"ph\": \"i\", \"s\": \"t\", \"pid\": %u, \"tid\": %u, \"ts\": ", pid,
                   (unsigned)e->thread);
            us(e->t);
            printf("}");
            break;
        case GM_TE_OOM:
            printf(",\n{\"name\": \"out of memory\", \"cat\": \"oom\", \"ph\": \"i\", \"s\": \"p\", \"pid\": %u, "
                   "\"tid\": %u, \"ts\": ", pid, (unsigned)e->thread);
            us(e->t);
            printf(", \"args\": {\"bytes\": %llu, \"kind\": \"%s\", \"device\": %d, \"message\": ",
                   (unsigned long long)e->bytes, tr_kind_name(e->kind), (int)e->device);
            json_string(tr_str(t, e->ref));
            printf("}}");
            break;
        case GM_TE_LADDER:
        case GM_TE_TRIM:
            printf(",\n{\"name\": \"%s\", \"cat\": \"pool\", \"ph\": \"i\", \"s\": \"t\", \"pid\": %u, \"tid\": %u, "
                   "\"ts\": ", e->type == GM_TE_LADDER ? "out-of-memory ladder" : "pool trim", pid,
                   (unsigned)e->thread);
            us(e->t);
            printf(", \"args\": {\"released_bytes\": %llu, \"released_blocks\": %u}}", (unsigned long long)e->value,
                   (unsigned)e->aux);
            break;
        }
    }
    /* regions still open at the end */
    for (size_t k = nopen; k-- > 0;) {
        printf(",\n{\"cat\": \"region\", \"ph\": \"E\", \"pid\": %u, \"tid\": %u, \"ts\": ", pid,
               (unsigned)open[k].thread);
        us(t->end_ns);
        printf("}");
    }
    free(open);
    printf("\n]}\n");
}

/* ---- replay ------------------------------------------------------------------------------------- */

/* --allocator's device pools: the classic one (cuMemAlloc blocks), the
 * virtual-memory one, the driver's stream-ordered pool (not holding: the
 * driver's pool caches). */
enum { REPLAY_POOL = 1, REPLAY_VMM, REPLAY_ASYNC };
static const char *const allocator_names[] = {"driver", "pool", "vmm", "async"};

/* The device pool of --allocator. */
static gpumem_status replay_pool_create(gpumem_context *ctx, int kind, unsigned flags, gpumem_pool **pool)
{
    if (kind == REPLAY_POOL)
        return gpumem_pool_create(ctx, flags, pool);
    struct gpumem_pool_props props = GPUMEM_POOL_PROPS_INIT;
    props.source = kind == REPLAY_VMM ? GPUMEM_POOL_SOURCE_VIRTUAL : GPUMEM_POOL_SOURCE_ASYNC;
    props.flags = flags;
    gpumem_status st = gpumem_pool_create_with_props(ctx, &props, pool);
    if (st == GPUMEM_OK && kind == REPLAY_ASYNC && (st = gpumem_pool_stop_holding(*pool)) != GPUMEM_OK) {
        gpumem_pool_destroy(*pool);
        *pool = NULL;
    }
    return st;
}

typedef struct replay_opts {
    int pool;           /* --allocator: 0 driver, REPLAY_POOL, REPLAY_VMM, REPLAY_ASYNC */
    unsigned pool_flags;
    int no_hold;
} replay_opts;

typedef struct rdev {
    int device;
    gpumem_context *ctx;
    gpumem_pool *pool;
    gpumem_host_pool *pinned, *mapped;
    uint64_t base_used; /* total - free before the replay */
} rdev;

typedef struct rstream {
    int device;
    uint64_t id;
    gpumem_stream *s;
} rstream;

typedef struct replay {
    const tr_trace *t;
    const tm_model *m;
    replay_opts o;
    rdev *dev;
    size_t ndev;
    rstream *st;
    size_t nst;
    gpumem_array **arr; /* per allocation of the model */
    const gpumem_dtype *u8;
} replay;

static int replayable(const tm_alloc *a)
{
    return a->bytes != 0 && (a->kind == 0 || a->kind == 2 || a->kind == 3 || a->kind == 4);
}

static rdev *dev_of(replay *r, int device)
{
    for (size_t i = 0; i < r->ndev; i++)
        if (r->dev[i].device == device)
            return &r->dev[i];
    return NULL;
}

static void replay_end(replay *r)
{
    for (size_t i = 0; r->arr != NULL && i < r->m->na; i++)
        if (r->arr[i] != NULL) {
            gpumem_array_release(r->arr[i]);
            r->arr[i] = NULL;
        }
    for (size_t i = 0; i < r->nst; i++)
        if (r->st[i].s != NULL) {
            gpumem_stream_synchronize(r->st[i].s);
            gpumem_stream_destroy(r->st[i].s);
            r->st[i].s = NULL;
        }
    for (size_t i = 0; i < r->ndev; i++) {
        rdev *d = &r->dev[i];
        if (d->ctx != NULL && d->pool != NULL)
            gpumem_context_set_pool(d->ctx, NULL);
        if (d->pool != NULL)
            gpumem_pool_destroy(d->pool);
        if (d->pinned != NULL)
            gpumem_host_pool_destroy(d->pinned);
        if (d->mapped != NULL)
            gpumem_host_pool_destroy(d->mapped);
        d->pool = NULL;
        d->pinned = d->mapped = NULL;
    }
}

/* Contexts, streams and pools for one pass.  0, or 1 with a message. */
static int replay_begin(replay *r)
{
    for (size_t i = 0; i < r->ndev; i++) {
        rdev *d = &r->dev[i];
        if (d->ctx == NULL && gpumem_context_create(d->device, &d->ctx) != GPUMEM_OK) {
            fprintf(stderr, "gpumem trace replay: the trace allocates on device %d: %s\n", d->device,
                    gpumem_last_error());
            return 1;
        }
        if (r->o.pool) {
            if (replay_pool_create(d->ctx, r->o.pool, r->o.pool_flags, &d->pool) != GPUMEM_OK ||
                (r->o.no_hold && gpumem_pool_stop_holding(d->pool) != GPUMEM_OK) ||
                gpumem_context_set_pool(d->ctx, d->pool) != GPUMEM_OK ||
                gpumem_host_pool_create(d->ctx, 0, &d->pinned) != GPUMEM_OK ||
                gpumem_host_pool_create(d->ctx, GPUMEM_HOST_ALLOC_DEVICEMAP, &d->mapped) != GPUMEM_OK ||
                (r->o.no_hold && (gpumem_host_pool_stop_holding(d->pinned) != GPUMEM_OK ||
                                  gpumem_host_pool_stop_holding(d->mapped) != GPUMEM_OK))) {
                fprintf(stderr, "gpumem trace replay: the pools of device %d: %s\n", d->device, gpumem_last_error());
                return 1;
            }
        }
        uint64_t fr = 0, total = 0;
        if (gpumem_memory_info(d->ctx, &fr, &total) == GPUMEM_OK)
            d->base_used = total - fr;
    }
    for (size_t i = 0; i < r->nst; i++) {
        rstream *s = &r->st[i];
        rdev *d = dev_of(r, s->device);
        if (s->id != 0 && d != NULL && gpumem_stream_create(d->ctx, 0, &s->s) != GPUMEM_OK) {
            fprintf(stderr, "gpumem trace replay: a stream on device %d: %s\n", s->device, gpumem_last_error());
            return 1;
        }
    }
    return 0;
}

static gpumem_stream *stream_of(replay *r, int device, uint64_t id)
{
    for (size_t i = 0; i < r->nst; i++)
        if (r->st[i].device == device && r->st[i].id == id)
            return r->st[i].s;
    return NULL;
}

static gpumem_status replay_alloc(replay *r, size_t i)
{
    const tm_alloc *a = &r->m->a[i];
    rdev *d = dev_of(r, a->device);
    int64_t n = (int64_t)a->bytes;
    gpumem_stream *s = stream_of(r, a->device, a->stream);
    switch (a->kind) {
    case 0: /* device: the context's pool when set */
        return gpumem_device_array(d->ctx, 1, &n, NULL, r->u8, 'C', s, &r->arr[i]);
    case 2:
        return r->o.pool ? gpumem_host_pool_allocate(d->pinned, 1, &n, r->u8, 'C', &r->arr[i])
                         : gpumem_pinned_array(d->ctx, 1, &n, NULL, r->u8, 'C', &r->arr[i]);
    case 3:
        return r->o.pool ? gpumem_host_pool_allocate(d->mapped, 1, &n, r->u8, 'C', &r->arr[i])
                         : gpumem_mapped_array(d->ctx, 1, &n, NULL, r->u8, 'C', NULL, 0, &r->arr[i]);
    default: /* managed: pools do not make it */
        return gpumem_managed_array(d->ctx, 1, &n, NULL, r->u8, 'C', GPUMEM_MANAGED_ATTACH_GLOBAL, &r->arr[i]);
    }
}

/* What the allocators hold now: in use (requested bytes, from the pools'
 * statistics or the replay's own count for driver memory) and held from the
 * driver. */
static void replay_sample(replay *r, uint64_t live_unpooled, uint64_t *in_use, uint64_t *held, uint64_t *idle)
{
    *in_use = *held = *idle = 0;
    for (size_t i = 0; i < r->ndev; i++) {
        rdev *d = &r->dev[i];
        if (r->o.pool) {
            struct gpumem_pool_stats s = {.size = sizeof s};
            if (gpumem_pool_stats(d->pool, &s) == GPUMEM_OK) {
                *in_use += s.active_requested_bytes;
                *held += s.source_bytes; /* a virtual-memory pool's mapped memory, the driver pool's reserved */
                *idle += s.held_bytes;
            }
            gpumem_host_pool *hp[2] = {d->pinned, d->mapped};
            for (int k = 0; k < 2; k++) {
                struct gpumem_pool_stats h = {.size = sizeof h};
                if (gpumem_host_pool_stats(hp[k], &h) == GPUMEM_OK) {
                    *in_use += h.active_requested_bytes;
                    *held += h.active_bytes + h.held_bytes;
                    *idle += h.held_bytes;
                }
            }
        } else {
            uint64_t fr = 0, total = 0;
            if (gpumem_memory_info(d->ctx, &fr, &total) == GPUMEM_OK && total - fr > d->base_used)
                *held += total - fr - d->base_used;
        }
    }
    *in_use += live_unpooled;
}

static const char *const driver_ops[] = {"cuMemAlloc", "cuMemFree", "cuMemHostAlloc", "cuMemFreeHost",
                                         "cuMemAllocManaged", "cuMemCreate", "cuMemRelease", "cuMemMap",
                                         "cuMemUnmap", "cuMemAllocFromPoolAsync", "cuMemFreeAsync"};

static uint64_t driver_calls(void)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < sizeof driver_ops / sizeof *driver_ops; i++) {
        uint64_t c = 0;
        if (gpumem_debug_driver_calls(driver_ops[i], &c) == GPUMEM_OK)
            sum += c;
    }
    return sum;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One pass over the trace's allocations, frees and trims.  sample: after
 * every step, what the allocators hold.  0, or 1 with a message. */
static int replay_pass(replay *r, int sample, uint64_t *pairs, double *seconds, uint64_t *calls, uint64_t *peak_use,
                       uint64_t *peak_held, uint64_t *peak_free, uint64_t *peak_idle)
{
    const tr_trace *t = r->t;
    const tm_model *m = r->m;
    uint64_t live_unpooled = 0, n = 0;
    uint64_t c0 = driver_calls();
    double t0 = now_s();
    for (size_t i = 0; i < t->nev; i++) {
        const tr_event *e = &t->ev[i];
        int32_t w = m->which[i];
        if (w >= 0 && replayable(&m->a[w])) {
            const tm_alloc *a = &m->a[w];
            int unpooled = !r->o.pool || a->kind == 4;
            if (e->type == GM_TE_ALLOC) {
                if (replay_alloc(r, (size_t)w) != GPUMEM_OK) {
                    char b[64];
                    fprintf(stderr, "gpumem trace replay: allocation %zu of the trace (%s of %s memory on device "
                            "%d) failed: %s\n", (size_t)w + 1, tm_bytes(a->bytes, b, sizeof b), tr_kind_name(a->kind),
                            (int)a->device, gpumem_last_error());
                    return 1;
                }
                n++;
                live_unpooled += unpooled ? a->bytes : 0;
            } else if (r->arr[w] != NULL) {
                gpumem_array_release(r->arr[w]);
                r->arr[w] = NULL;
                live_unpooled -= unpooled ? a->bytes : 0;
            }
        } else if (e->type == GM_TE_TRIM && r->o.pool) {
            rdev *d = dev_of(r, e->device);
            if (d != NULL)
                (void)(e->kind == 0 ? gpumem_pool_free_held(d->pool)
                                    : (gpumem_host_pool_free_held(d->pinned), gpumem_host_pool_free_held(d->mapped)));
        } else {
            continue;
        }
        if (sample) {
            uint64_t use, held, idle;
            replay_sample(r, live_unpooled, &use, &held, &idle);
            if (held > *peak_held)
                *peak_held = held;
            if (use > *peak_use) {
                *peak_use = use;
                *peak_idle = idle;
                *peak_free = 0;
                for (size_t k = 0; k < r->ndev; k++) {
                    uint64_t fr = 0, total = 0;
                    if (gpumem_memory_info(r->dev[k].ctx, &fr, &total) == GPUMEM_OK && fr > *peak_free)
                        *peak_free = fr;
                }
            }
        }
    }
    *seconds = now_s() - t0;
    *calls = driver_calls() - c0;
    *pairs = n;
    return 0;
}

static int replay_main(const tr_trace *t, const tm_model *m, replay_opts o)
{
    replay r = {.t = t, .m = m, .o = o, .u8 = gpumem_dtype_builtin(GPUMEM_UINT8)};
    int rc = 1;
    r.arr = calloc(m->na ? m->na : 1, sizeof *r.arr);
    r.dev = calloc(m->na + 1, sizeof *r.dev);
    r.st = calloc(m->na + 1, sizeof *r.st);
    if (r.arr == NULL || r.dev == NULL || r.st == NULL) {
        fprintf(stderr, "gpumem trace replay: out of memory\n");
        goto out;
    }
    uint64_t skipped = 0;
    for (size_t i = 0; i < m->na; i++) {
        const tm_alloc *a = &m->a[i];
        if (!replayable(a)) {
            skipped++;
            continue;
        }
        if (dev_of(&r, a->device) == NULL)
            r.dev[r.ndev++] = (rdev){.device = a->device};
        size_t k = 0;
        while (k < r.nst && !(r.st[k].device == a->device && r.st[k].id == a->stream))
            k++;
        if (k == r.nst)
            r.st[r.nst++] = (rstream){a->device, a->stream, NULL};
    }
    /* A timed pass, then a pass that samples the allocators after every step. */
    uint64_t pairs = 0, calls = 0, use = 0, held = 0, fr = 0, idle = 0, p2, c2;
    double seconds = 0, s2;
    if (replay_begin(&r) != 0 || replay_pass(&r, 0, &pairs, &seconds, &calls, &use, &held, &fr, &idle) != 0)
        goto out;
    replay_end(&r);
    if (replay_begin(&r) != 0 || replay_pass(&r, 1, &p2, &s2, &c2, &use, &held, &fr, &idle) != 0)
        goto out;
    const char *backend = "?";
    gpumem_backend(&backend);
    char b1[64], b2[64], b3[64];
    printf("replay on the %s backend, allocator %s%s%s\n", backend, allocator_names[o.pool],
           o.pool && (o.pool_flags & GPUMEM_POOL_NO_THREAD_CACHE) ? ", no thread cache" : "",
           o.pool && o.no_hold ? ", not holding" : "");
    printf("  allocations: %llu (%llu of the trace's not replayed: zero bytes, or host or foreign memory)\n",
           (unsigned long long)pairs, (unsigned long long)skipped);
    printf("  time per pair: %.1f ns (allocation and free)\n", pairs ? seconds * 1e9 / (double)pairs : 0.0);
    printf("  peak in use: %s (%llu bytes)\n", tm_bytes(use, b1, sizeof b1), (unsigned long long)use);
    printf("  peak held: %s (%llu bytes)\n", tm_bytes(held, b1, sizeof b1), (unsigned long long)held);
    printf("  driver calls: %llu (allocations and frees of memory)\n", (unsigned long long)calls);
    printf("  largest free block at the peak: %s (the driver's free memory; the pools held %s idle)\n",
           tm_bytes(fr, b2, sizeof b2), tm_bytes(idle, b3, sizeof b3));
    rc = 0;
out:
    if (r.arr != NULL)
        replay_end(&r);
    for (size_t i = 0; i < r.ndev; i++)
        if (r.dev[i].ctx != NULL)
            gpumem_context_release(r.dev[i].ctx);
    free(r.arr);
    free(r.dev);
    free(r.st);
    return rc;
}

/* ---- the command --------------------------------------------------------------------------------- */

static void usage(FILE *out)
{
    fputs("Usage: gpumem trace summary FILE [--json] [--partial]\n"
          "       gpumem trace plot FILE -o OUT.html [--by-pool] [--partial]\n"
          "       gpumem trace export --chrome FILE [--partial]\n"
          "       gpumem trace replay FILE [--allocator driver|pool|vmm|async] [--no-thread-cache] [--no-hold]\n"
          "                           [--partial]\n"
          "\n"
          "Reads a trace that GPUMEM_TRACE=FILE or gpumem_trace_start() wrote (gpumem(1)).\n"
          "  summary   peak in use (when, by kind and pool), the largest allocations,\n"
          "            allocations never freed (by call site), copies by path with their\n"
          "            bandwidth, out-of-memory events with their message; --json\n"
          "  plot      one self-contained HTML file (inline SVG, no network): memory in\n"
          "            use over time stacked by kind (--by-pool: by pool), regions,\n"
          "            markers, out-of-memory events and copies by path; OUT.svg: the\n"
          "            picture alone\n"
          "  export    the Chrome Trace Event format on stdout (Perfetto, chrome://tracing)\n"
          "  replay    the allocations and frees again, with their sizes, order and\n"
          "            streams, on this backend: time per pair, peak in use, peak held,\n"
          "            driver calls, the largest free block at the peak; --allocator\n"
          "            pool: the classic pool, vmm: a virtual-memory pool, async: the\n"
          "            driver's stream-ordered pool (not simulated)\n"
          "  --partial reads a trace that does not end (its program was killed) up to\n"
          "            where it stops\n",
          out);
}

int cmd_trace(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *sub = argv[1], *file = NULL, *out = NULL;
    int json = 0, partial = 0, by_pool = 0, chrome_fmt = 0;
    replay_opts ro = {0};
    int summary_cmd = strcmp(sub, "summary") == 0, plot_cmd = strcmp(sub, "plot") == 0,
        export_cmd = strcmp(sub, "export") == 0, replay_cmd = strcmp(sub, "replay") == 0;
    if (!summary_cmd && !plot_cmd && !export_cmd && !replay_cmd) {
        fprintf(stderr, "gpumem trace: unknown subcommand '%s'\n", sub);
        usage(stderr);
        return 2;
    }
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--partial") == 0) {
            partial = 1;
        } else if (summary_cmd && strcmp(a, "--json") == 0) {
            json = 1;
        } else if (plot_cmd && strcmp(a, "-o") == 0 && i + 1 < argc) {
            out = argv[++i];
        } else if (plot_cmd && strcmp(a, "--by-pool") == 0) {
            by_pool = 1;
        } else if (export_cmd && strcmp(a, "--chrome") == 0) {
            chrome_fmt = 1;
        } else if (replay_cmd && strcmp(a, "--allocator") == 0 && i + 1 < argc) {
            const char *v = argv[++i];
            ro.pool = -1;
            for (int k = 0; k < 4; k++)
                if (strcmp(v, allocator_names[k]) == 0)
                    ro.pool = k;
            if (ro.pool < 0) {
                fprintf(stderr, "gpumem trace replay: --allocator '%s': expected 'driver' or 'pool' (or 'vmm', "
                        "'async')\n", v);
                return 2;
            }
        } else if (replay_cmd && strcmp(a, "--no-thread-cache") == 0) {
            ro.pool_flags |= GPUMEM_POOL_NO_THREAD_CACHE;
        } else if (replay_cmd && strcmp(a, "--no-hold") == 0) {
            ro.no_hold = 1;
        } else if (i + 1 == argc && ((plot_cmd && strcmp(a, "-o") == 0) ||
                                     (replay_cmd && strcmp(a, "--allocator") == 0))) {
            fprintf(stderr, "gpumem trace %s: %s needs a value\n", sub, a);
            usage(stderr);
            return 2;
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "gpumem trace %s: unknown option '%s'\n", sub, a);
            usage(stderr);
            return 2;
        } else if (file == NULL) {
            file = a;
        } else {
            fprintf(stderr, "gpumem trace %s: one trace file only ('%s' and '%s')\n", sub, file, a);
            return 2;
        }
    }
    if (file == NULL) {
        fprintf(stderr, "gpumem trace %s: no trace file\n", sub);
        usage(stderr);
        return 2;
    }
    if (plot_cmd && out == NULL) {
        fprintf(stderr, "gpumem trace plot: -o OUT.html is required\n");
        return 2;
    }
    if (export_cmd && !chrome_fmt) {
        fprintf(stderr, "gpumem trace export: --chrome is the only format\n");
        return 2;
    }
    if (replay_cmd && !ro.pool && (ro.pool_flags || ro.no_hold)) {
        fprintf(stderr, "gpumem trace replay: --no-thread-cache and --no-hold are pool options "
                "(--allocator pool)\n");
        return 2;
    }
    tr_trace t;
    char msg[1024];
    tr_status st = tr_load(file, partial, &t, msg, sizeof msg);
    if (st != TR_OK) {
        /* The hint only where --partial would read something: not for a
         * header that is cut or corrupt, which nothing comes before. */
        int hint = 0;
        if (!partial && (st == TR_TRUNCATED || st == TR_CORRUPT)) {
            char msg2[1024];
            hint = tr_load(file, 1, &t, msg2, sizeof msg2) == TR_OK;
            if (hint)
                tr_free(&t);
        }
        fprintf(stderr, "gpumem trace: %s%s\n", msg, hint ? " (--partial reads what comes before)" : "");
        return 1;
    }
    if (!t.complete)
        fprintf(stderr, "gpumem trace: warning: %s; reading what comes before\n", msg);
    tm_model m;
    if (tm_build(&t, &m) != 0) {
        tr_free(&t);
        fprintf(stderr, "gpumem trace: out of memory\n");
        return 1;
    }
    int rc = 0;
    if (summary_cmd) {
        summary s;
        if (summarize(&t, &m, &s) != 0) {
            fprintf(stderr, "gpumem trace: out of memory\n");
            rc = 1;
        } else if (json) {
            print_json(file, &t, &m, &s, msg);
        } else {
            print_text(file, &t, &m, &s, msg);
        }
        summary_free(&s);
    } else if (plot_cmd) {
        rc = trace_plot(&t, file, out, by_pool);
    } else if (export_cmd) {
        chrome(&t, &m);
    } else {
        rc = replay_main(&t, &m, ro);
    }
    tm_free(&m);
    tr_free(&t);
    tr_symbols_free();
    return rc;
}
