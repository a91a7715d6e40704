/*
 * trace_plot_areas.c - gpumem trace plot: what the memory in use is
 * stacked by (the memory kind, the pool, or the call site; the library's
 * own memory by what it is for), and each pixel column's sample of it
 * (trace_plot.h).
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpumem.h>

#include "trace_cmd.h"
#include "trace_plot.h"

static const char *const kind_colour[] = {"#4e79a7", "#bab0ac", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#9c755f"};

/* Who holds an allocation (GM_TO_*: the program, or the library's own). */
static unsigned owner_of(const plot *p, const tm_alloc *a)
{
    unsigned o = p->t->ev[a->ev].aux;
    return o <= GM_TO_LAST ? o : GM_TO_PROGRAM;
}

static int category(const plot *p, const tm_alloc *a)
{
    if (p->by == TP_BY_POOL)
        return a->pool < (uint32_t)(MAX_AREAS - 1) ? (int)a->pool : MAX_AREAS - 1;
    unsigned o = owner_of(p, a);
    if (o != GM_TO_PROGRAM)
        return p->cat_of_owner[o];
    if (p->by == TP_BY_SITE)
        return a->stack != 0 && a->stack < p->t->nstk ? p->cat_of_site[a->stack] : p->cat_no_site;
    return p->cat_of_kind[a->kind < 6 ? a->kind : 6];
}

/* A new category: its name (printf) and fill; its number, or -1 when
 * there is no room left. */
static int new_category(plot *p, const char *fill, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int new_category(plot *p, const char *fill, const char *fmt, ...)
{
    if (p->ncat == MAX_AREAS)
        return -1;
    int c = p->ncat++;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->cat_name[c], sizeof p->cat_name[c], fmt, ap);
    va_end(ap);
    snprintf(p->cat_fill[c], sizeof p->cat_fill[c], "%s", fill);
    p->cat_site[c] = 0;
    p->cat_library[c] = 0;
    return c;
}

/* A call site's name: its first `depth` frames. */
static void site_name(const plot *p, uint32_t stack, uint32_t depth, char *buf, size_t size)
{
    const tr_stack *st = &p->t->stk[stack];
    char frame[512];
    size_t used = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < depth && i < st->n && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? " < " : "",
                                 tr_frame_name(p->t, &st->f[i], frame, sizeof frame));
}

/* --by-site: the program's call sites that held the most at their own
 * peak get a category each, named by as many frames as tell them apart;
 * the rest share one ("other call sites"), as do allocations without a
 * site. */
static int site_categories(plot *p, int room)
{
    size_t ns = p->t->nstk;
    double *cur = calloc(ns ? ns : 1, sizeof *cur), *peak = calloc(ns ? ns : 1, sizeof *peak);
    p->cat_of_site = malloc((ns ? ns : 1) * sizeof *p->cat_of_site);
    uint32_t chosen[MAX_AREAS], depth[MAX_AREAS];
    int n = 0, others = 0, none = 0;
    if (cur == NULL || peak == NULL || p->cat_of_site == NULL) {
        free(cur);
        free(peak);
        return -1;
    }
    for (size_t i = 0; i < p->t->nev; i++) {
        if (p->m.which[i] < 0)
            continue;
        const tm_alloc *a = &p->m.a[p->m.which[i]];
        if (owner_of(p, a) != GM_TO_PROGRAM)
            continue;
        if (a->stack == 0 || a->stack >= ns) {
            none = 1;
            continue;
        }
        cur[a->stack] += (double)p->m.delta[i];
        if (cur[a->stack] > peak[a->stack])
            peak[a->stack] = cur[a->stack];
    }
    size_t used = 0;
    for (size_t k = 1; k < ns; k++)
        used += peak[k] > 0;
    room -= none;
    if (used > (size_t)room)
        room--; /* for "other call sites" */
    while (n < room) { /* the largest left, one at a time: room is small */
        size_t best = 0;
        for (size_t k = 1; k < ns; k++)
            if (peak[k] > 0 && (best == 0 || peak[k] > peak[best]))
                best = k;
        if (best == 0)
            break;
        depth[n] = 1;
        chosen[n++] = (uint32_t)best;
        peak[best] = 0;
    }
    for (size_t k = 1; k < ns; k++)
        others |= peak[k] > 0;
    /* names: one frame more for the sites whose names are alike, until
     * they differ or have no more frames */
    char names[MAX_AREAS][sizeof p->cat_name[0]];
    for (int round = 0; round < (int)GM_TRACE_MAX_FRAMES; round++) {
        for (int i = 0; i < n; i++)
            site_name(p, chosen[i], depth[i], names[i], sizeof names[i]);
        int alike[MAX_AREAS] = {0}, any = 0;
        for (int i = 0; i < n; i++)
            for (int j = i + 1; j < n; j++)
                if (strcmp(names[i], names[j]) == 0)
                    alike[i] = alike[j] = any = 1;
        for (int i = 0; i < n; i++)
            depth[i] += alike[i] && depth[i] < p->t->stk[chosen[i]].n;
        if (!any)
            break;
    }
    int other = -1;
    for (int i = 0; i < n; i++) {
        int c = new_category(p, tp_palette[i % TP_NPAL], "%s", names[i]);
        p->cat_site[c] = chosen[i];
    }
    if (others)
        other = new_category(p, "#bab0ac", "other call sites");
    p->cat_no_site = none ? new_category(p, "#dddddd", "no call site") : other;
    for (size_t k = 0; k < ns; k++)
        p->cat_of_site[k] = other;
    for (int i = 0; i < n; i++)
        p->cat_of_site[chosen[i]] = i;
    free(cur);
    free(peak);
    return 0;
}

int tp_categories(plot *p)
{
    p->ncat = 0;
    if (p->by == TP_BY_POOL) {
        size_t n = p->m.npools + 1;
        for (size_t c = 0; c < n && c < MAX_AREAS; c++) {
            if (c == MAX_AREAS - 1 && n > MAX_AREAS)
                new_category(p, tp_palette[c % TP_NPAL], "pools %zu and later", c);
            else if (c == 0)
                new_category(p, tp_palette[0], "driver");
            else
                new_category(p, tp_palette[c % TP_NPAL], "pool %zu (%s, device %d)", c, tr_kind_name(p->m.pools[c - 1].kind),
                             (int)p->m.pools[c - 1].device);
        }
        return 0;
    }
    /* the program's memory, by kind or by call site; then the library's
     * own, by what it is for, hatched */
    int used[7] = {0}, owners[GM_TO_LAST + 1] = {0}, nowners = 0;
    for (size_t i = 0; i < p->m.na; i++) {
        unsigned o = owner_of(p, &p->m.a[i]);
        if (o == GM_TO_PROGRAM)
            used[p->m.a[i].kind < 6 ? p->m.a[i].kind : 6] = 1;
        else
            nowners += !owners[o]++;
    }
    if (p->by == TP_BY_SITE) {
        if (site_categories(p, MAX_AREAS - nowners) != 0)
            return -1;
    } else {
        for (int k = 0; k < 7; k++)
            if (used[k])
                p->cat_of_kind[k] = new_category(p, kind_colour[k], "%s", tr_kind_name(k));
    }
    for (int o = 1; o <= GM_TO_LAST; o++)
        if (owners[o]) {
            char fill[24];
            snprintf(fill, sizeof fill, "url(#library-%d)", o);
            p->cat_of_owner[o] = new_category(p, fill, "library: %s", tr_owner_name(o));
            p->cat_library[p->cat_of_owner[o]] = o;
        }
    if (p->ncat == 0) /* nothing allocated: one empty category */
        new_category(p, kind_colour[0], "device");
    return 0;
}

/* Each column's state at its highest total. */
int tp_sample(plot *p)
{
    int nc = p->ncat;
    p->snap = calloc((size_t)PW * nc, sizeof *p->snap);
    p->tot = calloc(PW, sizeof *p->tot);
    p->lib = calloc(PW, sizeof *p->lib);
    double *cur = calloc(nc, sizeof *cur);
    if (p->snap == NULL || p->tot == NULL || p->lib == NULL || cur == NULL) {
        free(cur);
        return -1;
    }
    double total = 0, lib = 0;
    int c = 0;
    for (size_t i = 0; i < p->t->nev; i++) {
        if (p->m.which[i] < 0)
            continue;
        int col = tp_colof(p, p->t->ev[i].t);
        while (c < col) {
            c++;
            memcpy(p->snap + (size_t)c * nc, cur, nc * sizeof *cur);
            p->tot[c] = total;
            p->lib[c] = lib;
        }
        const tm_alloc *a = &p->m.a[p->m.which[i]];
        int k = category(p, a);
        if (k >= 0)
            cur[k] += (double)p->m.delta[i];
        if (owner_of(p, a) != GM_TO_PROGRAM)
            lib += (double)p->m.delta[i];
        total += (double)p->m.delta[i];
        if (total > p->tot[col]) {
            p->tot[col] = total;
            p->lib[col] = lib;
            memcpy(p->snap + (size_t)col * nc, cur, nc * sizeof *cur);
        }
    }
    while (c < PW - 1) {
        c++;
        memcpy(p->snap + (size_t)c * nc, cur, nc * sizeof *cur);
        p->tot[c] = total;
        p->lib[c] = lib;
    }
    double top = 0;
    for (int i = 0; i < PW; i++)
        if (p->tot[i] > top)
            top = p->tot[i];
    p->ymax = top > 0 ? top * 1.08 : 1024;
    free(cur);
    return 0;
}
