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
 * This file: the page (its units and scales, the HTML around the SVG, the
 * legend, the time axis) and the command's entry; trace_plot_areas.c
 * stacks the memory, trace_plot_charts.c draws the charts (trace_plot.h).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gpumem.h>

#include "outfile.h"
#include "trace_cmd.h"
#include "trace_plot.h"

const char *const tp_palette[TP_NPAL] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
                                         "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#86bcb6", "#d37295"};

void tp_esc(FILE *f, const char *s)
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

double tp_xof(const plot *p, uint64_t ns)
{
    double x = (double)ns / (double)p->T * PW;
    return LEFT + (x < 0 ? 0 : x > PW ? PW : x);
}

int tp_colof(const plot *p, uint64_t ns)
{
    uint64_t c = (uint64_t)((double)ns / (double)p->T * PW);
    return c >= PW ? PW - 1 : (int)c;
}

/* A duration: in the unit that suits it ("12.5 ms", "80 ns"). */
void tp_time_label(uint64_t ns, char *buf, size_t size)
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
const char *tp_moment(const plot *p, double ns, char *buf, size_t size)
{
    if (ns <= 0)
        snprintf(buf, size, "0");
    else
        snprintf(buf, size, "%.*f %s", p->decimals, ns / p->unit_ns, p->unit);
    return buf;
}

/* A round step (1, 2 or 5 times a power of ten) giving about n ticks over span. */
double tp_nice_step(double span, int n)
{
    double raw = span / n, p = 1;
    while (p * 10 <= raw)
        p *= 10;
    while (p > raw && p > 1e-9)
        p /= 10;
    return raw <= p ? p : raw <= 2 * p ? 2 * p : raw <= 5 * p ? 5 * p : 10 * p;
}

/* The axis at the foot, and into grid (drawn first, under everything) its
 * vertical lines from top down. */
static void time_axis(plot *p, int top, FILE *grid)
{
    FILE *f = p->f;
    double step = tp_nice_step((double)p->T, 10);
    char b[64];
    fprintf(f, "<g id=\"time-axis\">\n<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"#333\"/>\n", LEFT,
            LEFT + PW, p->y, p->y);
    /* every label in the picture's unit; the trace's start is "0" */
    for (int i = 0; (double)i * step <= (double)p->T + step * 1e-9; i++) {
        double v = (double)i * step, x = tp_xof(p, (uint64_t)v);
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
        tp_esc(f, p->cat_name[k]);
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
        tp_esc(f, file);
        fprintf(f, "</title>\n<style>\nbody { font-family: sans-serif; margin: 16px; color: #222; background: #fff; }\n"
                "h1 { font-size: 18px; margin: 0 0 4px 0; }\np { margin: 0 0 8px 0; font-size: 13px; }\n"
                "</style>\n</head>\n<body>\n<h1>gpumem trace: ");
        tp_esc(f, file);
        tp_time_label(t->end_ns, b1, sizeof b1);
        fprintf(f, "</h1>\n<p>");
        tp_esc(f, t->program[0] ? t->program : "(program unknown)");
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
    tp_patterns(p);
    legend(p);
    p->y += 14;
    int mem_top = p->y;
    tp_memory_chart(p);
    tp_events_overlay(p);
    p->y += MEM_H + 34;
    int rc = tp_regions(p);
    p->y += 10;
    tp_copies(p);
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
    tp_esc(f, file);
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
    if (tm_build(t, &p.m) != 0 || tp_categories(&p) != 0) {
        fprintf(stderr, "gpumem trace plot: out of memory\n");
        free(p.cat_of_site);
        tm_free(&p.m);
        return 1;
    }
    size_t n = strlen(out);
    int svg_only = n >= 4 && strcmp(out + n - 4, ".svg") == 0;
    int rc = 1;
    outfile of;
    if (tp_sample(&p) != 0) {
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
