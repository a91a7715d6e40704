/*
 * trace_model.c - gpumem trace: the model of a trace's allocations (trace_cmd.h):
 * each allocation from its alloc event to its free, the pools, and the bytes
 * in use each event adds or takes; the names the subcommands share.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_cmd.h"


/* An open-addressing map from (pool, device, address) to an allocation (and
 * from a pool to its number, from a thread and depth to a region). */
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
    live_map map = {0}, pool_map = {0}; /* (pool, address, device) to allocation; pool to its number - 1 */
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
                struct slot *ps = map_find(&pool_map, e->pool, 0, 0);
                if (ps != NULL) {
                    pool = (uint32_t)ps->a;
                } else {
                    if (m->npools == pcap) {
                        pcap = pcap ? pcap * 2 : 8;
                        tm_pool *p = realloc(m->pools, pcap * sizeof *p);
                        if (p == NULL)
                            goto nomem;
                        m->pools = p;
                    }
                    m->pools[m->npools++] = (tm_pool){e->pool, e->kind, e->device};
                    pool = (uint32_t)m->npools - 1;
                    if (m->npools > INT32_MAX - 1 || map_put(&pool_map, e->pool, 0, 0, (int32_t)pool) != 0)
                        goto nomem;
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
    free(pool_map.s);
    return 0;
nomem:
    free(map.s);
    free(pool_map.s);
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

int tm_regions(const tr_trace *t, tm_region **out, size_t *nout)
{
    tm_region *r = NULL;
    int32_t *below = NULL; /* per region: the open region of its thread and depth that it hides, or -1 */
    size_t n = 0, cap = 0;
    live_map open = {0};   /* (thread, depth) to its innermost open region */
    for (size_t i = 0; i < t->nev; i++) {
        const tr_event *e = &t->ev[i];
        if (e->type == GM_TE_PUSH) {
            if (n == cap) {
                cap = cap ? cap * 2 : 64;
                tm_region *q = realloc(r, cap * sizeof *q);
                int32_t *b = q != NULL ? realloc(below, cap * sizeof *b) : NULL;
                if (q != NULL)
                    r = q;
                if (b == NULL)
                    goto nomem;
                below = b;
            }
            if (n > INT32_MAX - 1)
                goto nomem;
            r[n] = (tm_region){e->thread, e->aux, e->ref, e->t, TM_LIVE, i, TM_NONE};
            struct slot *s = map_find(&open, e->thread, e->aux, 0);
            below[n] = s != NULL ? s->a : -1;
            if (s != NULL)
                s->a = (int32_t)n;
            else if (map_put(&open, e->thread, e->aux, 0, (int32_t)n) != 0)
                goto nomem;
            n++;
        } else if (e->type == GM_TE_POP) {
            struct slot *s = map_find(&open, e->thread, e->aux, 0);
            if (s == NULL)
                continue; /* opened before the trace started */
            tm_region *k = &r[s->a];
            k->t1 = e->t;
            k->pop = i;
            s->a = below[s->a] >= 0 ? below[s->a] : -2;
        }
    }
    free(open.s);
    free(below);
    *out = r;
    *nout = n;
    return 0;
nomem:
    free(open.s);
    free(below);
    free(r);
    *out = NULL;
    *nout = 0;
    return -1;
}

int tm_kind_slot(int kind)
{
    return kind >= 0 && kind < 6 ? kind : 6;
}
