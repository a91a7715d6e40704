/*
 * trace_plot_charts.c - gpumem trace plot: the charts of the picture
 * (trace_plot.h): memory in use, stacked, with the out-of-memory lines;
 * markers, ladder runs, pool trims and out-of-memory dots over it; the
 * regions, one lane per thread; the copies, coloured by path.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpumem.h>

#include "trace_cmd.h"
#include "trace_plot.h"

static const char *const owner_colour[] = {"", "#8c564b", "#17becf", "#bcbd22", "#9467bd"};

/* The hatched fills of the library's own memory. */
void tp_patterns(plot *p)
{
    fprintf(p->f, "<defs>\n");
    for (int o = 1; o <= GM_TO_LAST; o++)
        fprintf(p->f, "<pattern id=\"library-%d\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
                "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"%s\"/><rect width=\"2\" "
                "height=\"6\" fill=\"#fff\" fill-opacity=\"0.6\"/></pattern>\n", o, owner_colour[o]);
    fprintf(p->f, "</defs>\n");
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

void tp_memory_chart(plot *p)
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
    double step = tp_nice_step(p->ymax / unit, 5);
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
            double x = tp_xof(p, p->t->ev[i].t), top = 0;
            for (int c = tp_colof(p, p->t->ev[i].t) - 2, e = c + 4; c <= e; c++)
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
        tp_esc(f, p->cat_name[k]);
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
        tp_esc(f, p->cat_name[k]);
        fprintf(f, ": peak %s", tm_bytes(peak, b1, sizeof b1));
        if (p->cat_library[k] != 0)
            fprintf(f, " (the library's own memory, not the program's arrays)");
        if (p->cat_site[k] != 0) { /* the whole call site */
            const tr_stack *st = &p->t->stk[p->cat_site[k]];
            char frame[512];
            for (uint32_t i = 0; i < st->n; i++) {
                fprintf(f, "\n%s ", i == 0 ? "at" : "  by");
                tp_esc(f, tr_frame_name(p->t, &st->f[i], frame, sizeof frame));
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
                p->y, c1 - c0, MEM_H, tp_moment(p, (double)c0 / PW * (double)p->T, b1, sizeof b1),
                tp_moment(p, (double)c1 / PW * (double)p->T, b2, sizeof b2),
                tm_bytes((uint64_t)p->tot[best], b3, sizeof b3));
        for (int k = 0; k < nc; k++)
            if (p->snap[(size_t)best * nc + k] > 0) {
                fprintf(f, "\n");
                tp_esc(f, p->cat_name[k]);
                fprintf(f, ": %s", tm_bytes((uint64_t)p->snap[(size_t)best * nc + k], b1, sizeof b1));
            }
        if (p->by == TP_BY_POOL && p->lib[best] > 0) /* the other ways, it has categories of its own */
            fprintf(f, "\nof which the library's own: %s", tm_bytes((uint64_t)p->lib[best], b1, sizeof b1));
        fprintf(f, "</title></rect>\n");
    }
    fprintf(f, "</g>\n</g>\n");
}

void tp_events_overlay(plot *p)
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
        double x = tp_xof(p, e->t);
        tp_moment(p, (double)e->t, b1, sizeof b1);
        fprintf(f, "<line class=\"marker\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#555\" "
                "stroke-dasharray=\"2,3\"><title>", x, x, p->y, p->y + MEM_H);
        tp_esc(f, tr_str(t, e->ref));
        fprintf(f, " (marker at %s, thread %u)</title></line>", b1, (unsigned)e->thread);
        if (nmark <= 40) {
            fprintf(f, "<text class=\"marker-label\" transform=\"translate(%.1f,%d) rotate(-90)\" font-size=\"9\">",
                    x + 3, p->y + MEM_H - 4);
            tp_esc(f, tr_str(t, e->ref));
            fprintf(f, "</text>");
        }
        fprintf(f, "\n");
    }
    fprintf(f, "</g>\n<g id=\"ladder\">\n");
    for (size_t i = 0; i < t->nev; i++) {
        const tr_event *e = &t->ev[i];
        if (e->type != GM_TE_LADDER && e->type != GM_TE_TRIM)
            continue;
        double x = tp_xof(p, e->t);
        tp_moment(p, (double)e->t, b1, sizeof b1);
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
        double x = tp_xof(p, e->t);
        tp_moment(p, (double)e->t, b1, sizeof b1);
        /* the line is under the memory areas (memory_chart); the dot is
         * above the chart's top, clear of its highest column */
        fprintf(f, "<g class=\"oom\"><circle cx=\"%.1f\" cy=\"%d\" r=\"6\" fill=\"#d62728\"/><title>out of "
                "memory at %s: %s of %s memory on device %d\n", x, p->y, b1, tm_bytes(e->bytes, b2, sizeof b2),
                tr_kind_name(e->kind), (int)e->device);
        tp_esc(f, tr_str(t, e->ref));
        fprintf(f, "</title></g>\n");
    }
    fprintf(f, "</g>\n");
}

int tp_regions(plot *p)
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
        tp_esc(f, tname);
        fprintf(f, "</title></text>\n");
        for (size_t i = 0; i < n; i++) {
            if (r[i].thread != lanes[l])
                continue;
            int d = r[i].depth < 1 ? 1 : r[i].depth > MAX_DEPTH ? MAX_DEPTH : (int)r[i].depth;
            uint64_t end = r[i].t1 == TM_LIVE ? p->T : r[i].t1;
            double x0 = tp_xof(p, r[i].t0), x1 = tp_xof(p, end);
            if (x1 - x0 < 1)
                x1 = x0 + 1;
            tp_time_label(r[i].t0, b1, sizeof b1);
            tp_time_label(end, b2, sizeof b2);
            tp_time_label(end - r[i].t0, b3, sizeof b3);
            fprintf(f, "<rect class=\"region\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\" "
                    "stroke=\"#fff\" stroke-width=\"0.5\"><title>", x0, y + (d - 1) * LANE_H, x1 - x0, LANE_H - 1,
                    tp_palette[(r[i].name + 3) % TP_NPAL]);
            tp_esc(f, tr_str(t, r[i].name));
            fprintf(f, " (thread %u, depth %u): %s to %s%s, %s</title></rect>", (unsigned)lanes[l],
                    (unsigned)r[i].depth, b1, b2, r[i].t1 == TM_LIVE ? " (still open)" : "", b3);
            if (x1 - x0 > 40) {
                fprintf(f, "<text x=\"%.1f\" y=\"%d\" font-size=\"9\" fill=\"#fff\" pointer-events=\"none\">",
                        x0 + 2, y + (d - 1) * LANE_H + 10);
                tp_esc(f, tr_str(t, r[i].name));
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

void tp_copies(plot *p)
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
    double step = tp_nice_step(top / 1e9, 4);
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
        const char *colour = tp_palette[k % TP_NPAL];
        double x0 = tp_xof(p, e->t), x1 = tp_xof(p, e->t + e->value);
        if (x1 - x0 < 2)
            x1 = x0 + 2;
        if (e->flags & GM_TF_ASYNC) {
            if (!coarse) {
                tp_time_label(e->value, b2, sizeof b2);
                fprintf(f, "<rect class=\"copy queued\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"6\" fill=\"%s\" "
                        "fill-opacity=\"0.5\"><title>", x0, p->y + COPY_H - 6, x1 - x0, colour);
                tp_esc(f, tr_str(t, e->ref));
                fprintf(f, ": %s %s (%s to %s), queued on a stream in %s</title></rect>\n",
                        tm_bytes(e->bytes, b1, sizeof b1), tr_direction_name((int)e->aux), tr_kind_name(e->kind),
                        tr_kind_name(e->kind2), b2);
            }
            continue;
        }
        if (coarse) {
            int c = tp_colof(p, e->t) / 2;
            bytes[(size_t)c * MAX_CATS + (k < MAX_CATS ? k : MAX_CATS - 1)] += (double)e->bytes;
            secs[(size_t)c * MAX_CATS + (k < MAX_CATS ? k : MAX_CATS - 1)] += (double)e->value * 1e-9;
            continue;
        }
        double bw = e->value > 0 ? (double)e->bytes / ((double)e->value * 1e-9) : 0;
        double h = bw / top * COPY_H;
        if (h < 1)
            h = 1;
        tp_moment(p, (double)e->t, b2, sizeof b2);
        tp_time_label(e->value, b3, sizeof b3);
        fprintf(f, "<rect class=\"copy\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>",
                x0, p->y + COPY_H - h, x1 - x0, h, colour);
        tp_esc(f, tr_str(t, e->ref));
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
                        LEFT + 2 * c, p->y + COPY_H - h, h, tp_palette[k % TP_NPAL]);
                tp_esc(f, k < np ? tr_str(t, paths[k]) : "?");
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
                p->y + COPY_H + 8, tp_palette[k % TP_NPAL], x + 14, p->y + COPY_H + 17);
        tp_esc(f, tr_str(t, paths[k]));
        fprintf(f, "</text>\n");
        x += 24 + 7 * (int)strlen(tr_str(t, paths[k]));
    }
    fprintf(f, "</g>\n");
    p->y += COPY_H + 34;
}
