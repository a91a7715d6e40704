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

int tm_kind_slot(int kind)
{
    return kind >= 0 && kind < 6 ? kind : 6;
}
