/*
 * cmd-bench-out.c - gpumem bench's output: each row as a table line, a
 * JSON object or a CSV line, the notes, and the machine's lines first
 * (cmd-bench.c says what each format holds).
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gpumem.h>

#include "cmd-bench-run.h"
#include "json-string.h"

/* Writes s as one CSV field (RFC 4180): quoted, its quotes doubled, when it
 * holds a comma, a quote or a line break; as it is otherwise. */
static void csv_field(const char *s)
{
    if (strpbrk(s, ",\"\r\n") == NULL) {
        fputs(s, stdout);
        return;
    }
    putchar('"');
    for (; *s; s++) {
        if (*s == '"')
            putchar('"');
        putchar(*s);
    }
    putchar('"');
}

/* The first three fields of a CSV line: group, case, path. */
static void csv_names(const char *group, const char *name, const char *path)
{
    csv_field(group);
    putchar(',');
    csv_field(name);
    putchar(',');
    csv_field(path);
}

/* A row; threads > 0 for rows of several threads, the percentages >= 0
 * for pageable rows judged against pinned and the host's ceiling. */
void bench_row(bench *b, const char *group, const char *name, const char *path, uint64_t bytes,
               const bench_times *t, int threads, double pct_pinned, double pct_host, double pct_contig)
{
    double s = t->median, gbs = bench_gbs(bytes, s);
    if (b->progress)
        fprintf(stderr, "\r\033[K");
    if (b->json) {
        printf("%s\n    {\"group\": ", b->nresults ? "," : "");
        json_string(group);
        printf(", \"case\": ");
        json_string(name);
        printf(", \"path\": ");
        json_string(path);
        printf(", \"bytes\": %llu, \"seconds\": %.9f, \"gb_per_s\": %.3f", (unsigned long long)bytes, s, gbs);
        if (t->p95 >= 0)
            printf(", \"p95_seconds\": %.9f, \"max_seconds\": %.9f", t->p95, t->max);
        if (threads > 0)
            printf(", \"threads\": %d", threads);
        if (pct_pinned >= 0)
            printf(", \"pct_of_pinned\": %.1f", pct_pinned);
        if (pct_host >= 0)
            printf(", \"pct_of_host\": %.1f", pct_host);
        if (pct_contig >= 0)
            printf(", \"pct_of_contiguous\": %.1f", pct_contig);
        printf("}");
    } else if (b->csv) {
        csv_names(group, name, path);
        printf(",%llu,%.9f,%.3f,", (unsigned long long)bytes, s, gbs);
        if (t->p95 >= 0) /* empty fields when unknown */
            printf("%.9f,%.9f", t->p95, t->max);
        else
            putchar(',');
        putchar('\n');
    } else {
        printf("%-9s %-34s %-16s %12llu %10.1f us %9.2f GB/s", group, name, path, (unsigned long long)bytes,
               s * 1e6, gbs);
        if (t->p95 >= 0)
            printf("  p95 %.1f us  max %.1f us", t->p95 * 1e6, t->max * 1e6);
        if (pct_pinned >= 0)
            printf("  %5.1f%% of pinned", pct_pinned);
        if (pct_host >= 0)
            printf("  %5.1f%% of host", pct_host);
        if (pct_contig >= 0)
            printf("  %5.1f%% of contiguous", pct_contig);
        printf("\n");
    }
    b->nresults++;
    fflush(stdout);
}

void bench_result(bench *b, const char *group, const char *name, const char *path, uint64_t bytes,
                  const bench_times *t)
{
    bench_row(b, group, name, path, bytes, t, 0, -1, -1, -1);
}

/* A comment: "# text" in the table, on stderr with --csv, in "notes" with --json. */
void bench_comment(bench *b, const char *text)
{
    if (b->progress)
        fprintf(stderr, "\r\033[K");
    if (b->json) {
        size_t n = strlen(text) + 1;
        char *p = realloc(b->notes, b->notes_len + n);
        if (p == NULL)
            return;
        memcpy(p + b->notes_len, text, n);
        b->notes = p;
        b->notes_len += n;
    } else {
        fprintf(b->csv ? stderr : stdout, "# %s\n", text);
        fflush(b->csv ? stderr : stdout);
    }
}

/* The percentage a pageable figure is of a reference (< 0: none). */
double bench_pct(uint64_t bytes, double s, double ref_gbs)
{
    return s > 0 && ref_gbs > 0 ? 100.0 * (double)bytes / s / 1e9 / ref_gbs : -1;
}

void bench_progress(bench *b, const char *what)
{
    if (b->progress)
        fprintf(stderr, "\r\033[Kgpumem bench: %s ...", what);
}

static void io_progress(bench_io *io, const char *what)
{
    bench_progress((bench *)io, what);
}

static void io_row(bench_io *io, const char *group, const char *name, const char *path, uint64_t bytes,
                   const bench_times *t, int threads, double pct_pinned, double pct_host)
{
    bench_row((bench *)io, group, name, path, bytes, t, threads, pct_pinned, pct_host, -1);
}

static void io_note(bench_io *io, const char *text)
{
    bench_comment((bench *)io, text);
}

/* An allocation row: seconds per pair (per thread) and the total rate; in
 * JSON and CSV, bytes is the block size and gb_per_s is 0. */
static void io_alloc_result(bench_io *io, const char *name, const char *path, int threads, double s, double rate)
{
    bench *b = (bench *)io;
    if (b->progress)
        fprintf(stderr, "\r\033[K");
    if (b->json) {
        printf("%s\n    {\"group\": \"alloc\", \"case\": ", b->nresults ? "," : "");
        json_string(name);
        printf(", \"path\": ");
        json_string(path);
        printf(", \"bytes\": 4096, \"seconds\": %.12f, \"gb_per_s\": 0, \"threads\": %d, \"pairs_per_s\": %.1f}", s,
               threads, rate);
    } else if (b->csv) {
        csv_names("alloc", name, path);
        printf(",4096,%.12f,0,,\n", s);
    }
    else
        printf("%-9s %-50s %-8s %10.1f ns/pair %9.2f M pairs/s\n", "alloc", name, path, s * 1e9, rate / 1e6);
    b->nresults++;
    fflush(stdout);
}

void bench_io_init(bench *b)
{
    b->io = (bench_io){io_progress, io_alloc_result, io_row, io_note};
}

void bench_machine(bench *b)
{
    const char *backend = "?";
    char name[256] = "?";
    int dev = 0, major = 0, minor = 0;
    gpumem_backend(&backend);
    gpumem_context_get_device(b->ctx, &dev);
    gpumem_device_name(dev, name, sizeof name);
    gpumem_device_compute_capability(dev, &major, &minor);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    gpumem_staging_settings st = {.size = sizeof st};
    gpumem_staging_get(&st);
    char host[256] = "?";
    gethostname(host, sizeof host - 1);
    if (b->json) {
        /* the host and device names are the system's and the driver's: escaped */
        printf("{\n  \"machine\": {\"host\": ");
        json_string(host);
        printf(", \"backend\": ");
        json_string(backend);
        printf(", \"device\": %d, \"name\": ", dev);
        json_string(name);
        printf(", \"compute_capability\": [%d, %d], \"cpus\": %ld, \"library\": \"%s\", \"staging\": {\"threads\": %u, "
               "\"chunk_bytes\": %zu, \"depth\": %u, \"min_bytes\": %zu}, \"reps\": %d, \"baseline\": %s},\n"
               "  \"results\": [",
               major, minor, cpus, gpumem_version_string(), st.threads, st.chunk_bytes, st.depth, st.min_bytes, b->reps,
               bench_drv.ok ? "\"libcuda\"" : "null");
    } else if (b->csv) {
        printf("group,case,path,bytes,seconds,gb_per_s,p95_seconds,max_seconds\n");
    } else {
        printf("# %s: %s device %d (%s, sm_%d%d), %ld CPUs, libgpumem %s, median (p95, max) of %d%s\n", host, backend, dev,
               name, major, minor, cpus, gpumem_version_string(), b->reps,
               bench_drv.ok ? "" : "; no driver baseline (not the cuda backend)");
        if (strcmp(backend, "sim") == 0)
            printf("# the simulator: these figures mean nothing\n");
    }
}
