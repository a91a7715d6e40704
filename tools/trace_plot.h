/*
 * trace_plot.h - what the files of gpumem trace plot share (private to
 * them; trace_cmd.h declares the command's entry, trace_plot):
 *   trace_plot.c         the page: its units and scales, the HTML around
 *                        the SVG, the legend, the time axis, the entry;
 *   trace_plot_areas.c   what the memory in use is stacked by (kind, pool,
 *                        call site, the library's own by owner), and each
 *                        pixel column's sample of it;
 *   trace_plot_charts.c  the charts: memory, markers and out-of-memory
 *                        events, regions, copies.
 */
#ifndef GPUMEM_TOOLS_TRACE_PLOT_H
#define GPUMEM_TOOLS_TRACE_PLOT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <gpumem.h>

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

/* The colours of copy paths, regions and call sites, in turn. */
#define TP_NPAL 12
extern const char *const tp_palette[TP_NPAL];

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

/* ---- trace_plot.c: units and scales ---- */

/* s escaped for HTML and XML text and attributes. */
void tp_esc(FILE *f, const char *s);
/* The x of a moment (ns since the trace started), clamped to the plot. */
double tp_xof(const plot *p, uint64_t ns);
/* The pixel column of a moment, 0 to PW - 1. */
int tp_colof(const plot *p, uint64_t ns);
/* A duration: in the unit that suits it ("12.5 ms", "80 ns"). */
void tp_time_label(uint64_t ns, char *buf, size_t size);
/* A moment since the trace started, in the picture's unit to a pixel's
 * precision: "0" at the start, else "12.50 ms".  Returns buf. */
const char *tp_moment(const plot *p, double ns, char *buf, size_t size);
/* A round step (1, 2 or 5 times a power of ten) giving about n ticks over span. */
double tp_nice_step(double span, int n);

/* ---- trace_plot_areas.c ---- */

/* The categories the memory in use is stacked by (p->by): p->ncat, their
 * names, fills and maps.  0, or -1 without memory (p->cat_of_site is then
 * the caller's to free, as always). */
int tp_categories(plot *p);
/* Each column's state at its highest total: p->snap, tot, lib (the
 * caller's to free) and ymax.  0, or -1 without memory. */
int tp_sample(plot *p);

/* ---- trace_plot_charts.c: each draws into p->f from p->y ---- */

/* The hatched fills of the library's own memory (<defs>). */
void tp_patterns(plot *p);
/* The memory in use, stacked, with its y axis, out-of-memory lines and
 * hover details. */
void tp_memory_chart(plot *p);
/* Markers, ladder runs and pool trims, out-of-memory dots, over the
 * memory chart. */
void tp_events_overlay(plot *p);
/* The regions, one lane per thread; moves p->y past them.  0, or -1
 * without memory. */
int tp_regions(plot *p);
/* The copies and their legend; moves p->y past them. */
void tp_copies(plot *p);

#endif /* GPUMEM_TOOLS_TRACE_PLOT_H */
