/*
 * trace_plot.c - gpumem trace plot: a trace's timeline as one
 * self-contained HTML file with an inline SVG picture (no script, no
 * network), or the SVG alone for a name ending in .svg:
 *   - memory in use over time, stacked by memory kind (or by pool), each
 *     pixel column showing the moment of its highest total;
 *   - markers as lines, out-of-memory events in red, ladder runs and pool
 *     trims as ticks;
 *   - named regions, one lane per thread, nested by depth;
 *   - copies in one lane, coloured by path, as tall as their bandwidth;
 *   - hover details as SVG <title> elements.
 * OUT is written as outfile.h says: a regular file beside it and renamed
 * onto it when whole, anything else (a FIFO, /dev/null, a link's target)
 * in place.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gpumem.h>

#include "outfile.h"
#include "trace_cmd.h"

#define LEFT 96
#define PW 1100 /* plot width, px: one column per px */
#define RIGHT 24
#define WIDTH (LEFT + PW + RIGHT)
#define MEM_H 260
#define LANE_H 14
#define COPY_H 110
#define MAX_CATS 12 /* copy paths */
#define MAX_AREAS 16 /* categories of memory */
#define MAX_DEPTH 6
#define COPY_LIMIT 5000 /* more copies are drawn two pixels at a time, by path */

static const char *const palette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
                                      "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#86bcb6", "#d37295"};
#define NPAL (sizeof palette / sizeof *palette)

static const char *const kind_colour[] = {"#4e79a7", "#bab0ac", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#9c755f"};

typedef struct plot {
    FILE *f;
    const tr_trace *t;
    tm_model m;
    uint64_t T; /* ns the picture spans */
    double unit_ns;   /* its times' unit (time_unit) */
    const char *unit; /* "ms" */
    int decimals;     /* of a moment in that unit */
    int by; /* TP_BY_* */
    int ncat;
    char cat_name[MAX_AREAS][160];
    char cat_fill[MAX_AREAS][24];  /* a colour, or a pattern: url(#library-N) */
    uint32_t cat_site[MAX_AREAS];   /* --by-site: the call site's id, or 0 */
    unsigned cat_library[MAX_AREAS]; /* the library's own memory: its GM_TO_*, else 0 */
    int cat_of_kind[7];
    int cat_of_owner[GM_TO_LAST + 1];
    int *cat_of_site; /* [t->nstk], --by-site (-1: none) */
    int cat_no_site;  /* --by-site: allocations without a site */
    double *snap; /* [PW][ncat] */
    double *tot;  /* [PW] */
    double *lib;  /* [PW]: of tot, the library's own */
    double ymax;
    int y; /* the next section's top */
} plot;

static void esc(FILE *f, const char *s)
{
    for (; *s; s++)
        switch (*s) {
        case '&':
            fputs("&amp;", f);
            break;
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        case '\'':
            fputs("&#39;", f);
            break;
        default:
            fputc(*s, f);
        }
}

static double xof(const plot *p, uint64_t ns)
{
    double x = (double)ns / (double)p->T * PW;
    return LEFT + (x < 0 ? 0 : x > PW ? PW : x);
}

static int colof(const plot *p, uint64_t ns)
{
    uint64_t c = (uint64_t)((double)ns / (double)p->T * PW);
    return c >= PW ? PW - 1 : (int)c;
}

/* A duration: in the unit that suits it ("12.5 ms", "80 ns"). */
static void time_label(uint64_t ns, char *buf, size_t size)
{
    if (ns >= 1000000000u)
        snprintf(buf, size, "%.6g s", (double)ns / 1e9);
    else if (ns >= 1000000u)
        snprintf(buf, size, "%.6g ms", (double)ns / 1e6);
    else if (ns >= 1000u)
        snprintf(buf, size, "%.6g us", (double)ns / 1e3);
    else
        snprintf(buf, size, "%llu ns", (unsigned long long)ns);
}

/* The unit of the picture's times (its axis, and every moment on hover):
 * the one its span is counted in, so that every label reads alike. */
static void time_unit(plot *p)
{
    static const struct {
        double ns;
        const char *name;
    } units[] = {{1e9, "s"}, {1e6, "ms"}, {1e3, "us"}, {1, "ns"}};
    size_t i = 0;
    while (i + 1 < sizeof units / sizeof *units && (double)p->T < units[i].ns)
        i++;
    p->unit_ns = units[i].ns;
    p->unit = units[i].name;
    /* decimals enough to tell a pixel column from the next */
    double px = (double)p->T / PW / p->unit_ns;
    p->decimals = 0;
    for (double d = 1; d > px && p->decimals < 9; d /= 10)
        p->decimals++;
}

/* A moment since the trace started, in the picture's unit to a pixel's
 * precision: "0" at the start, else "12.50 ms". */
static const char *moment(const plot *p, double ns, char *buf, size_t size)
{
    if (ns <= 0)
        snprintf(buf, size, "0");
    else
        snprintf(buf, size, "%.*f %s", p->decimals, ns / p->unit_ns, p->unit);
    return buf;
}

/* A round step (1, 2 or 5 times a power of ten) giving about n ticks over span. */
static double nice_step(double span, int n)
{
    double raw = span / n, p = 1;
    while (p * 10 <= raw)
        p *= 10;
    while (p > raw && p > 1e-9)
        p /= 10;
    return raw <= p ? p : raw <= 2 * p ? 2 * p : raw <= 5 * p ? 5 * p : 10 * p;
}

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
        int c = new_category(p, palette[i % NPAL], "%s", names[i]);
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

static const char *const owner_colour[] = {"", "#8c564b", "#17becf", "#bcbd22", "#9467bd"};

static int categories(plot *p)
{
    p->ncat = 0;
    if (p->by == TP_BY_POOL) {
        size_t n = p->m.npools + 1;
        for (size_t c = 0; c < n && c < MAX_AREAS; c++) {
            if (c == MAX_AREAS - 1 && n > MAX_AREAS)
                new_category(p, palette[c % NPAL], "pools %zu and later", c);
            else if (c == 0)
                new_category(p, palette[0], "driver");
            else
                new_category(p, palette[c % NPAL], "pool %zu (%s, device %d)", c, tr_kind_name(p->m.pools[c - 1].kind),
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

/* The hatched fills of the library's own memory. */
static void patterns(plot *p)
{
    fprintf(p->f, "<defs>\n");
    for (int o = 1; o <= GM_TO_LAST; o++)
        fprintf(p->f, "<pattern id=\"library-%d\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
                "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"%s\"/><rect width=\"2\" "
                "height=\"6\" fill=\"#fff\" fill-opacity=\"0.6\"/></pattern>\n", o, owner_colour[o]);
    fprintf(p->f, "</defs>\n");
}

/* Each column's state at its highest total. */
static int sample(plot *p)
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
        int col = colof(p, p->t->ev[i].t);
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

static double ymem(const plot *p, double v)
{
    return p->y + MEM_H - v / p->ymax * MEM_H;
}

/* The y of column c's top (or bottom) of category k's area. */
static double edge_y(const plot *p, int c, int k, int top)
{
    double lo = 0;
    for (int j = 0; j < k; j++)
        lo += p->snap[(size_t)c * p->ncat + j];
    return ymem(p, top ? lo + p->snap[(size_t)c * p->ncat + k] : lo);
}

static void memory_chart(plot *p)
{
    FILE *f = p->f;
    int nc = p->ncat;
    char b1[64], b2[64], b3[64];
    fprintf(f, "<g id=\"memory\">\n<text x=\"%d\" y=\"%d\" class=\"h\">memory in use (stacked by %s)</text>\n", LEFT,
            p->y - 6, p->by == TP_BY_POOL ? "pool" : p->by == TP_BY_SITE ? "call site" : "kind");
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#000\" fill-opacity=\"0.02\" stroke=\"#ccc\"/>\n", LEFT, p->y,
            PW, MEM_H);
    /* y axis: round steps of the unit (B, KiB, MiB, ...) the top is counted in */
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    double unit = 1;
    while (u < 4 && p->ymax >= unit * 1024) {
        unit *= 1024;
        u++;
    }
    double step = nice_step(p->ymax / unit, 5);
    for (double v = 0; v <= p->ymax / unit; v += step) {
        double y = ymem(p, v * unit);
        fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>", LEFT, LEFT + PW, y, y);
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.4g %s</text>\n", LEFT - 4, y + 4, v,
                units[u]);
    }
    /* Out-of-memory lines from the chart's top down to the memory in use
     * of the columns they cross, and under the areas: the memory in use
     * when an allocation failed is most often the peak, whose column a
     * line would hide.  Their dots, with the message, come over the chart
     * (events_overlay). */
    fprintf(f, "<g id=\"oom-lines\">\n");
    for (size_t i = 0; i < p->t->nev; i++)
        if (p->t->ev[i].type == GM_TE_OOM) {
            double x = xof(p, p->t->ev[i].t), top = 0;
            for (int c = colof(p, p->t->ev[i].t) - 2, e = c + 4; c <= e; c++)
                if (c >= 0 && c < PW && p->tot[c] > top)
                    top = p->tot[c];
            fprintf(f, "<line class=\"oom-line\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%.1f\" stroke=\"#d62728\" "
                    "stroke-width=\"2\"/>\n", x, x, p->y, ymem(p, top) - 1);
        }
    fprintf(f, "</g>\n");
    /* one area per category, from the lower categories' top up */
    for (int k = 0; k < nc; k++) {
        uint64_t peak = 0;
        for (int c = 0; c < PW; c++)
            if (p->snap[(size_t)c * nc + k] > (double)peak)
                peak = (uint64_t)p->snap[(size_t)c * nc + k];
        if (peak == 0)
            continue;
        fprintf(f, "<path class=\"area\" data-category=\"");
        esc(f, p->cat_name[k]);
        fprintf(f, "\" fill=\"%s\" fill-opacity=\"0.85\" d=\"", p->cat_fill[k]);
        /* the top edge left to right, then the bottom edge back: one step
         * per run of columns of one height */
        for (int edge = 0; edge < 2; edge++)
            for (int i = 0; i < PW;) {
                double y = edge_y(p, edge == 0 ? i : PW - 1 - i, k, edge == 0);
                int j = i + 1;
                while (j < PW && fabs(edge_y(p, edge == 0 ? j : PW - 1 - j, k, edge == 0) - y) < 0.05)
                    j++;
                fprintf(f, "%s%d %.1f L%d %.1f", i == 0 && edge == 0 ? "M" : " L", edge == 0 ? LEFT + i : LEFT + PW - i,
                        y, edge == 0 ? LEFT + j : LEFT + PW - j, y);
                i = j;
            }
        fprintf(f, " Z\"><title>");
        esc(f, p->cat_name[k]);
        fprintf(f, ": peak %s", tm_bytes(peak, b1, sizeof b1));
        if (p->cat_library[k] != 0)
            fprintf(f, " (the library's own memory, not the program's arrays)");
        if (p->cat_site[k] != 0) { /* the whole call site */
            const tr_stack *st = &p->t->stk[p->cat_site[k]];
            char frame[512];
            for (uint32_t i = 0; i < st->n; i++) {
                fprintf(f, "\n%s ", i == 0 ? "at" : "  by");
                esc(f, tr_frame_name(p->t, &st->f[i], frame, sizeof frame));
            }
        }
        fprintf(f, "</title></path>\n");
    }
    /* hover: 5-pixel bins with their highest moment */
    fprintf(f, "<g class=\"hover\" fill=\"transparent\">\n");
    for (int c0 = 0; c0 < PW; c0 += 5) {
        int best = c0;
        for (int c = c0; c < c0 + 5 && c < PW; c++)
            if (p->tot[c] > p->tot[best])
                best = c;
        /* one buffer per string: all three are read when the line is printed */
        int c1 = c0 + 5 < PW ? c0 + 5 : PW;
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"><title>%s to %s: in use %s", LEFT + c0,
                p->y, c1 - c0, MEM_H, moment(p, (double)c0 / PW * (double)p->T, b1, sizeof b1),
                moment(p, (double)c1 / PW * (double)p->T, b2, sizeof b2),
                tm_bytes((uint64_t)p->tot[best], b3, sizeof b3));
        for (int k = 0; k < nc; k++)
            if (p->snap[(size_t)best * nc + k] > 0) {
                fprintf(f, "\n");
                esc(f, p->cat_name[k]);
                fprintf(f, ": %s", tm_bytes((uint64_t)p->snap[(size_t)best * nc + k], b1, sizeof b1));
            }
        if (p->by == TP_BY_POOL && p->lib[best] > 0) /* the other ways, it has categories of its own */
            fprintf(f, "\nof which the library's own: %s", tm_bytes((uint64_t)p->lib[best], b1, sizeof b1));
        fprintf(f, "</title></rect>\n");
    }
    fprintf(f, "</g>\n</g>\n");
}

static void events_overlay(plot *p)
{
    FILE *f = p->f;
    const tr_trace *t = p->t;
    char b1[64], b2[64];
    size_t nmark = 0;
    for (size_t i = 0; i < t->nev; i++)
        nmark += t->ev[i].type == GM_TE_MARK;
    fprintf(f, "<g id=\"markers\">\n");
    for (size_t i = 0; i < t->nev; i++) {
        const tr_event *e = &t->ev[i];
        if (e->type != GM_TE_MARK)
            continue;
        double x = xof(p, e->t);
        moment(p, (double)e->t, b1, sizeof b1);
        fprintf(f, "<line class=\"marker\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#555\" "
                "stroke-dasharray=\"2,3\"><title>", x, x, p->y, p->y + MEM_H);
        esc(f, tr_str(t, e->ref));
        fprintf(f, " (marker at %s, thread %u)</title></line>", b1, (unsigned)e->thread);
        if (nmark <= 40) {
            fprintf(f, "<text class=\"marker-label\" transform=\"translate(%.1f,%d) rotate(-90)\" font-size=\"9\">",
                    x + 3, p->y + MEM_H - 4);
            esc(f, tr_str(t, e->ref));
            fprintf(f, "</text>");
        }
        fprintf(f, "\n");
    }
    fprintf(f, "</g>\n<g id=\"ladder\">\n");
    for (size_t i = 0; i < t->nev; i++) {
        const tr_event *e = &t->ev[i];
        if (e->type != GM_TE_LADDER && e->type != GM_TE_TRIM)
            continue;
        double x = xof(p, e->t);
        moment(p, (double)e->t, b1, sizeof b1);
        fprintf(f, "<path class=\"%s\" d=\"M%.1f %d l-4 8 h8 Z\" fill=\"#e8a33d\"><title>%s at %s on device %d: %s "
                "given back in %u blocks%s</title></path>\n", e->type == GM_TE_LADDER ? "ladder" : "trim", x,
                p->y + MEM_H - 8, e->type == GM_TE_LADDER ? "out-of-memory ladder" : "pool trim", b1, (int)e->device,
                tm_bytes(e->value, b2, sizeof b2), (unsigned)e->aux,
                e->type != GM_TE_LADDER ? "" : (e->flags & GM_TF_RETRY_OK) ? "; the retry succeeded"
                                                                            : "; the retry failed");
    }
    fprintf(f, "</g>\n<g id=\"oom\">\n");
    for (size_t i = 0; i < t->nev; i++) {
        const tr_event *e = &t->ev[i];
        if (e->type != GM_TE_OOM)
            continue;
        double x = xof(p, e->t);
        moment(p, (double)e->t, b1, sizeof b1);
        /* the line is under the memory areas (memory_chart); the dot is
         * above the chart's top, clear of its highest column */
        fprintf(f, "<g class=\"oom\"><circle cx=\"%.1f\" cy=\"%d\" r=\"6\" fill=\"#d62728\"/><title>out of "
                "memory at %s: %s of %s memory on device %d\n", x, p->y, b1, tm_bytes(e->bytes, b2, sizeof b2),
                tr_kind_name(e->kind), (int)e->device);
        esc(f, tr_str(t, e->ref));
        fprintf(f, "</title></g>\n");
    }
    fprintf(f, "</g>\n");
}

static int regions(plot *p)
{
    FILE *f = p->f;
    const tr_trace *t = p->t;
    tm_region *r = NULL;
    size_t n = 0;
    if (tm_regions(t, &r, &n) != 0)
        return -1;
    /* lanes: the threads with regions, in order of their first region */
    uint32_t lanes[64];
    int depth[64] = {0}, nl = 0;
    for (size_t i = 0; i < n; i++) {
        int l = 0;
        while (l < nl && lanes[l] != r[i].thread)
            l++;
        if (l == nl && nl < 64)
            lanes[nl++] = r[i].thread;
        int d = r[i].depth < 1 ? 1 : r[i].depth > MAX_DEPTH ? MAX_DEPTH : (int)r[i].depth;
        if (l < nl && d > depth[l])
            depth[l] = d;
    }
    fprintf(f, "<g id=\"regions\">\n<text x=\"%d\" y=\"%d\" class=\"h\">regions%s</text>\n", LEFT, p->y - 6,
            nl ? "" : ": none (gpumem_trace_push and gpumem_trace_pop name them)");
    char b1[64], b2[64], b3[64];
    int y = p->y;
    for (int l = 0; l < nl; l++) {
        const char *tname = "";
        for (size_t i = 0; i < t->nthr; i++)
            if (t->thr[i].index == lanes[l])
                tname = t->thr[i].name;
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">thread %u<title>", LEFT - 4, y + 11,
                (unsigned)lanes[l]);
        esc(f, tname);
        fprintf(f, "</title></text>\n");
        for (size_t i = 0; i < n; i++) {
            if (r[i].thread != lanes[l])
                continue;
            int d = r[i].depth < 1 ? 1 : r[i].depth > MAX_DEPTH ? MAX_DEPTH : (int)r[i].depth;
            uint64_t end = r[i].t1 == TM_LIVE ? p->T : r[i].t1;
            double x0 = xof(p, r[i].t0), x1 = xof(p, end);
            if (x1 - x0 < 1)
                x1 = x0 + 1;
            time_label(r[i].t0, b1, sizeof b1);
            time_label(end, b2, sizeof b2);
            time_label(end - r[i].t0, b3, sizeof b3);
            fprintf(f, "<rect class=\"region\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\" "
                    "stroke=\"#fff\" stroke-width=\"0.5\"><title>", x0, y + (d - 1) * LANE_H, x1 - x0, LANE_H - 1,
                    palette[(r[i].name + 3) % NPAL]);
            esc(f, tr_str(t, r[i].name));
            fprintf(f, " (thread %u, depth %u): %s to %s%s, %s</title></rect>", (unsigned)lanes[l],
                    (unsigned)r[i].depth, b1, b2, r[i].t1 == TM_LIVE ? " (still open)" : "", b3);
            if (x1 - x0 > 40) {
                fprintf(f, "<text x=\"%.1f\" y=\"%d\" font-size=\"9\" fill=\"#fff\" pointer-events=\"none\">",
                        x0 + 2, y + (d - 1) * LANE_H + 10);
                esc(f, tr_str(t, r[i].name));
                fprintf(f, "</text>");
            }
            fprintf(f, "\n");
        }
        y += depth[l] * LANE_H + 4;
    }
    fprintf(f, "</g>\n");
    p->y = y + (nl ? 30 : 24);
    free(r);
    return 0;
}

static void copies(plot *p)
{
    FILE *f = p->f;
    const tr_trace *t = p->t;
    uint32_t paths[MAX_CATS];
    int np = 0;
    size_t ncopies = 0;
    double bwmax = 0;
    for (size_t i = 0; i < t->nev; i++) {
        const tr_event *e = &t->ev[i];
        if (e->type != GM_TE_COPY)
            continue;
        ncopies++;
        int k = 0;
        while (k < np && paths[k] != e->ref)
            k++;
        if (k == np && np < MAX_CATS)
            paths[np++] = e->ref;
        if (!(e->flags & GM_TF_ASYNC) && e->value > 0) {
            double bw = (double)e->bytes / ((double)e->value * 1e-9);
            if (bw > bwmax)
                bwmax = bw;
        }
    }
    char b1[64], b2[64], b3[64];
    fprintf(f, "<g id=\"copies\">\n<text x=\"%d\" y=\"%d\" class=\"h\">copies: bandwidth of synchronous copies, "
            "coloured by path; copies on streams as ticks at the foot%s</text>\n", LEFT, p->y - 6,
            ncopies ? "" : " (none)");
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#000\" fill-opacity=\"0.02\" stroke=\"#ccc\"/>\n", LEFT, p->y,
            PW, COPY_H);
    double top = bwmax > 0 ? bwmax * 1.1 : 1e9;
    double step = nice_step(top / 1e9, 4);
    for (double v = 0; v <= top / 1e9 && step > 0; v += step) {
        double y = p->y + COPY_H - v * 1e9 / top * COPY_H;
        fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/><text x=\"%d\" y=\"%.1f\" "
                "text-anchor=\"end\">%.3g GB/s</text>\n", LEFT, LEFT + PW, y, y, LEFT - 4, y + 4, v);
    }
    int coarse = ncopies > COPY_LIMIT;
    /* coarse: per 2-pixel bin and path, bytes and time summed */
    double *bytes = NULL, *secs = NULL;
    if (coarse) {
        bytes = calloc((size_t)PW / 2 * MAX_CATS, sizeof *bytes);
        secs = calloc((size_t)PW / 2 * MAX_CATS, sizeof *secs);
        if (bytes == NULL || secs == NULL)
            coarse = 0, ncopies = 0; /* drawn without copies */
    }
    for (size_t i = 0; i < t->nev && ncopies; i++) {
        const tr_event *e = &t->ev[i];
        if (e->type != GM_TE_COPY)
            continue;
        int k = 0;
        while (k < np && paths[k] != e->ref)
            k++;
        const char *colour = palette[k % NPAL];
        double x0 = xof(p, e->t), x1 = xof(p, e->t + e->value);
        if (x1 - x0 < 2)
            x1 = x0 + 2;
        if (e->flags & GM_TF_ASYNC) {
            if (!coarse) {
                time_label(e->value, b2, sizeof b2);
                fprintf(f, "<rect class=\"copy queued\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"6\" fill=\"%s\" "
                        "fill-opacity=\"0.5\"><title>", x0, p->y + COPY_H - 6, x1 - x0, colour);
                esc(f, tr_str(t, e->ref));
                fprintf(f, ": %s %s (%s to %s), queued on a stream in %s</title></rect>\n",
                        tm_bytes(e->bytes, b1, sizeof b1), tr_direction_name((int)e->aux), tr_kind_name(e->kind),
                        tr_kind_name(e->kind2), b2);
            }
            continue;
        }
        if (coarse) {
            int c = colof(p, e->t) / 2;
            bytes[(size_t)c * MAX_CATS + (k < MAX_CATS ? k : MAX_CATS - 1)] += (double)e->bytes;
            secs[(size_t)c * MAX_CATS + (k < MAX_CATS ? k : MAX_CATS - 1)] += (double)e->value * 1e-9;
            continue;
        }
        double bw = e->value > 0 ? (double)e->bytes / ((double)e->value * 1e-9) : 0;
        double h = bw / top * COPY_H;
        if (h < 1)
            h = 1;
        moment(p, (double)e->t, b2, sizeof b2);
        time_label(e->value, b3, sizeof b3);
        fprintf(f, "<rect class=\"copy\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>",
                x0, p->y + COPY_H - h, x1 - x0, h, colour);
        esc(f, tr_str(t, e->ref));
        fprintf(f, ": %s %s (%s to %s) at %s in %s: %.3f GB/s</title></rect>\n", tm_bytes(e->bytes, b1, sizeof b1),
                tr_direction_name((int)e->aux), tr_kind_name(e->kind), tr_kind_name(e->kind2), b2, b3, bw / 1e9);
    }
    if (coarse) {
        for (int c = 0; c < PW / 2; c++)
            for (int k = 0; k < MAX_CATS; k++) {
                double by = bytes[(size_t)c * MAX_CATS + k], s = secs[(size_t)c * MAX_CATS + k];
                if (by <= 0)
                    continue;
                double bw = s > 0 ? by / s : 0, h = bw / top * COPY_H;
                if (h < 1)
                    h = 1;
                fprintf(f, "<rect class=\"copy\" x=\"%d\" y=\"%.1f\" width=\"2\" height=\"%.1f\" fill=\"%s\"><title>",
                        LEFT + 2 * c, p->y + COPY_H - h, h, palette[k % NPAL]);
                esc(f, k < np ? tr_str(t, paths[k]) : "?");
                fprintf(f, ": %s in this bin: %.3f GB/s</title></rect>\n", tm_bytes((uint64_t)by, b1, sizeof b1),
                        bw / 1e9);
            }
    }
    free(bytes);
    free(secs);
    /* legend of paths */
    int x = LEFT;
    for (int k = 0; k < np; k++) {
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"10\" fill=\"%s\"/><text x=\"%d\" y=\"%d\">", x,
                p->y + COPY_H + 8, palette[k % NPAL], x + 14, p->y + COPY_H + 17);
        esc(f, tr_str(t, paths[k]));
        fprintf(f, "</text>\n");
        x += 24 + 7 * (int)strlen(tr_str(t, paths[k]));
    }
    fprintf(f, "</g>\n");
    p->y += COPY_H + 34;
}

/* The axis at the foot, and into grid (drawn first, under everything) its
 * vertical lines from top down. */
static void time_axis(plot *p, int top, FILE *grid)
{
    FILE *f = p->f;
    double step = nice_step((double)p->T, 10);
    char b[64];
    fprintf(f, "<g id=\"time-axis\">\n<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"#333\"/>\n", LEFT,
            LEFT + PW, p->y, p->y);
    /* every label in the picture's unit; the trace's start is "0" */
    for (int i = 0; (double)i * step <= (double)p->T + step * 1e-9; i++) {
        double v = (double)i * step, x = xof(p, (uint64_t)v);
        if (i == 0)
            snprintf(b, sizeof b, "0");
        else
            snprintf(b, sizeof b, "%.6g %s", v / p->unit_ns, p->unit);
        fprintf(grid, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#eee\"/>\n", x, x, top, p->y);
        fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#333\"/><text x=\"%.1f\" y=\"%d\" "
                "text-anchor=\"middle\">%s</text>\n", x, x, p->y, p->y + 5, x, p->y + 17, b);
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">time since the trace started (%s)</text>\n</g>\n",
            LEFT + PW / 2, p->y + 34, p->unit);
    p->y += 44;
}

/* The legend: as many rows as its entries need. */
static void legend(plot *p)
{
    FILE *f = p->f;
    int x = LEFT;
    fprintf(f, "<g id=\"legend\">\n");
    for (int k = 0; k < p->ncat; k++) {
        int w = 24 + 6 * (int)strlen(p->cat_name[k]);
        if (x > LEFT && x + w > LEFT + PW) {
            x = LEFT;
            p->y += 16;
        }
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"10\" fill=\"%s\"/><text x=\"%d\" y=\"%d\">", x,
                p->y, p->cat_fill[k], x + 14, p->y + 9);
        esc(f, p->cat_name[k]);
        fprintf(f, "</text>\n");
        x += w;
    }
    if (x + 380 > LEFT + PW) {
        x = LEFT;
        p->y += 16;
    }
    fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"#555\" stroke-dasharray=\"2,3\"/><text "
            "x=\"%d\" y=\"%d\">marker</text>\n", x, x + 10, p->y + 5, p->y + 5, x + 14, p->y + 9);
    x += 70;
    fprintf(f, "<circle cx=\"%d\" cy=\"%d\" r=\"5\" fill=\"#d62728\"/><text x=\"%d\" y=\"%d\">out of memory</text>\n",
            x + 5, p->y + 5, x + 14, p->y + 9);
    x += 110;
    fprintf(f, "<path d=\"M%d %d l-4 8 h8 Z\" fill=\"#e8a33d\"/><text x=\"%d\" y=\"%d\">ladder run, pool trim</text>\n",
            x + 5, p->y + 1, x + 14, p->y + 9);
    fprintf(f, "</g>\n");
    p->y += 40;
}

static int draw(plot *p, const char *file, int svg_only)
{
    FILE *f = p->f;
    const tr_trace *t = p->t;
    char b1[64], b2[64];
    uint64_t peak = 0;
    for (int c = 0; c < PW; c++)
        if (p->tot[c] > (double)peak)
            peak = (uint64_t)p->tot[c];
    /* The height: title, legend, memory, regions (lanes), copies, axis. */
    if (!svg_only) {
        fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>gpumem trace: ");
        esc(f, file);
        fprintf(f, "</title>\n<style>\nbody { font-family: sans-serif; margin: 16px; color: #222; background: #fff; }\n"
                "h1 { font-size: 18px; margin: 0 0 4px 0; }\np { margin: 0 0 8px 0; font-size: 13px; }\n"
                "</style>\n</head>\n<body>\n<h1>gpumem trace: ");
        esc(f, file);
        time_label(t->end_ns, b1, sizeof b1);
        fprintf(f, "</h1>\n<p>");
        esc(f, t->program[0] ? t->program : "(program unknown)");
        fprintf(f, ", pid %u: %s, %zu events, peak in use %s%s. Hover over the picture for details.</p>\n",
                (unsigned)t->pid, b1, t->nev, tm_bytes(peak, b2, sizeof b2),
                t->complete ? "" : " (the trace is incomplete: its program did not stop it)");
    }
    /* the SVG's height is known only at the end: draw into a buffer first,
     * and the time grid, which lies under everything, into another (the
     * charts' backgrounds are translucent over it) */
    char *body = NULL, *gridtext = NULL;
    size_t bodysize = 0, gridsize = 0;
    FILE *real = f, *grid = open_memstream(&gridtext, &gridsize);
    if (grid == NULL)
        return -1;
    p->f = f = open_memstream(&body, &bodysize);
    if (f == NULL) {
        fclose(grid);
        free(gridtext);
        return -1;
    }
    p->y = 30;
    patterns(p);
    legend(p);
    p->y += 14;
    int mem_top = p->y;
    memory_chart(p);
    events_overlay(p);
    p->y += MEM_H + 34;
    int rc = regions(p);
    p->y += 10;
    copies(p);
    time_axis(p, mem_top, grid);
    fclose(f);
    fclose(grid);
    p->f = f = real;
    if (rc != 0) {
        free(body);
        free(gridtext);
        return -1;
    }
    if (svg_only)
        fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    fprintf(f, "<svg id=\"gpumem-timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"11\">\n<style>.h { font-weight: bold; "
            "font-size: 12px; }</style>\n<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n<text x=\"%d\" "
            "y=\"18\" class=\"h\">", WIDTH, p->y, WIDTH, p->y, LEFT);
    esc(f, file);
    fprintf(f, ": peak in use %s</text>\n<g id=\"time-grid\">\n", tm_bytes(peak, b1, sizeof b1));
    fwrite(gridtext, 1, gridsize, f);
    fprintf(f, "</g>\n");
    fwrite(body, 1, bodysize, f);
    free(gridtext);
    free(body);
    fprintf(f, "</svg>\n");
    if (!svg_only)
        fprintf(f, "</body>\n</html>\n");
    return 0;
}

int trace_plot(const tr_trace *t, const char *file, const char *out, int by)
{
    plot p = {.t = t, .by = by};
    p.T = t->end_ns > 0 ? t->end_ns : 1;
    time_unit(&p);
    if (by == TP_BY_SITE && !(t->flags & GM_TRACE_FLAG_CALL_SITES)) {
        fprintf(stderr, "gpumem trace plot: --by-site: %s has no call sites (record them with GPUMEM_TRACE_STACKS=1, "
                "or gpumem_trace_start's GPUMEM_TRACE_CALL_SITES)\n", file);
        return 1;
    }
    if (tm_build(t, &p.m) != 0 || categories(&p) != 0) {
        fprintf(stderr, "gpumem trace plot: out of memory\n");
        free(p.cat_of_site);
        tm_free(&p.m);
        return 1;
    }
    size_t n = strlen(out);
    int svg_only = n >= 4 && strcmp(out + n - 4, ".svg") == 0;
    int rc = 1;
    outfile of;
    if (sample(&p) != 0) {
        fprintf(stderr, "gpumem trace plot: out of memory\n");
        goto done;
    }
    if (outfile_open(&of, out) != 0) {
        fprintf(stderr, "gpumem trace plot: cannot write '%s': %s\n", out, strerror(errno));
        goto done;
    }
    p.f = of.f;
    int drawn = draw(&p, file, svg_only);
    if (outfile_close(&of, drawn == 0) != 0 || drawn != 0) {
        fprintf(stderr, "gpumem trace plot: cannot write '%s': %s\n", out, drawn ? "out of memory" : strerror(errno));
        goto done;
    }
    rc = 0;
done:
    free(p.snap);
    free(p.tot);
    free(p.lib);
    free(p.cat_of_site);
    tm_free(&p.m);
    return rc;
}
