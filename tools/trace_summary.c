/*
 * trace_summary.c - gpumem trace summary: peak in use (when, by kind and pool), the
 * largest allocations, what was never freed (by call site), copies by path,
 * out-of-memory events with their message, ladder runs, trims; text or --json.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpumem.h>

#include "json-string.h"
#include "trace_cmd.h"

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

typedef struct path_sum {
    uint32_t path; /* string id */
    uint64_t count, bytes, sync_count, sync_bytes, sync_ns, async_count, async_bytes;
} path_sum;

typedef struct site_sum {
    uint32_t stack;
    uint64_t count, bytes;
} site_sum;

typedef struct summary {
    uint64_t peak, peak_t, by_kind[TM_NKIND];
    uint64_t by_owner[GM_TO_LAST + 1]; /* at the peak: the program's, and the library's own (GM_TO_*) */
    uint64_t lib_count, lib_bytes;      /* the library's own, still held at the end (not leaks) */
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

/* Who holds an allocation: GM_TO_PROGRAM, or the library's own (GM_TO_*). */
static unsigned owner_of(const tr_trace *t, const tm_alloc *a)
{
    unsigned o = t->ev[a->ev].aux;
    return o <= GM_TO_LAST ? o : GM_TO_PROGRAM;
}

static int summarize(const tr_trace *t, const tm_model *m, summary *s)
{
    memset(s, 0, sizeof *s);
    /* the peak: the event after which the most is in use (then what is in
     * use by kind and pool, in a second pass up to it) */
    uint64_t cur = 0;
    size_t peak_i = SIZE_MAX;
    /* slots of the copy paths (by string id) and of the call sites never
     * freed (by call site id): index + 1, 0 none yet */
    size_t *path_slot = calloc(t->nstr + 1, sizeof *path_slot);
    size_t *site_slot = calloc(t->nstk + 1, sizeof *site_slot);
    s->by_pool = calloc(m->npools + 1, sizeof *s->by_pool);
    if (path_slot == NULL || site_slot == NULL || s->by_pool == NULL)
        goto nomem;
    size_t path_cap = 0, site_cap = 0;
    for (size_t i = 0; i < t->nev; i++) {
        const tr_event *e = &t->ev[i];
        if (m->which[i] >= 0) {
            int64_t d = m->delta[i];
            cur += (uint64_t)d;
            if (d > 0 && cur > s->peak) {
                s->peak = cur;
                s->peak_t = e->t;
                peak_i = i;
            }
        }
        switch (e->type) {
        case GM_TE_COPY: {
            uint32_t ref = e->ref < t->nstr ? e->ref : 0;
            if (path_slot[ref] == 0) {
                if (s->npaths == path_cap) {
                    path_cap = path_cap ? path_cap * 2 : 8;
                    path_sum *p = realloc(s->paths, path_cap * sizeof *p);
                    if (p == NULL)
                        goto nomem;
                    s->paths = p;
                }
                s->paths[s->npaths++] = (path_sum){.path = ref};
                path_slot[ref] = s->npaths;
            }
            path_sum *p = &s->paths[path_slot[ref] - 1];
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
    for (size_t i = 0; peak_i != SIZE_MAX && i <= peak_i; i++)
        if (m->which[i] >= 0) {
            const tm_alloc *a = &m->a[m->which[i]];
            s->by_kind[tm_kind_slot(a->kind)] += (uint64_t)m->delta[i];
            s->by_owner[owner_of(t, a)] += (uint64_t)m->delta[i];
            s->by_pool[a->pool] += (uint64_t)m->delta[i];
        }
    s->largest = malloc((m->na ? m->na : 1) * sizeof *s->largest);
    if (s->largest == NULL)
        goto nomem;
    for (size_t i = 0; i < m->na; i++)
        s->largest[i] = i;
    qsort_r(s->largest, m->na, sizeof *s->largest, by_bytes_desc, (void *)m);
    s->nlargest = m->na < 10 ? m->na : 10;
    for (size_t i = 0; i < m->na; i++) {
        const tm_alloc *a = &m->a[i];
        if (a->t1 != TM_LIVE)
            continue;
        if (owner_of(t, a) != GM_TO_PROGRAM) { /* kept for later calls: not a leak */
            s->lib_count++;
            s->lib_bytes += a->bytes;
            continue;
        }
        s->leak_count++;
        s->leak_bytes += a->bytes;
        uint32_t stack = a->stack < t->nstk ? a->stack : 0;
        if (site_slot[stack] == 0) {
            if (s->nsites == site_cap) {
                site_cap = site_cap ? site_cap * 2 : 8;
                site_sum *p = realloc(s->sites, site_cap * sizeof *p);
                if (p == NULL)
                    goto nomem;
                s->sites = p;
            }
            s->sites[s->nsites++] = (site_sum){.stack = stack};
            site_slot[stack] = s->nsites;
        }
        s->sites[site_slot[stack] - 1].count++;
        s->sites[site_slot[stack] - 1].bytes += a->bytes;
    }
    if (s->nsites > 1)
        qsort(s->sites, s->nsites, sizeof *s->sites, site_desc);
    free(path_slot);
    free(site_slot);
    return 0;
nomem:
    free(path_slot);
    free(site_slot);
    return -1;
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
    for (int k = 0; k < TM_NKIND; k++)
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
    uint64_t lib = 0;
    for (int o = 1; o <= GM_TO_LAST; o++)
        lib += s->by_owner[o];
    if (lib != 0) {
        printf("  the library's own: %s (", tm_bytes(lib, b1, sizeof b1));
        any = 0;
        for (int o = 1; o <= GM_TO_LAST; o++)
            if (s->by_owner[o])
                printf("%s%s %s", any++ ? ", " : "", tr_owner_name(o), tm_bytes(s->by_owner[o], b1, sizeof b1));
        printf(")\n");
    }
    printf("largest allocations:\n");
    for (size_t i = 0; i < s->nlargest; i++) {
        const tm_alloc *a = &m->a[s->largest[i]];
        unsigned o = owner_of(t, a);
        ms(a->t0, b2, sizeof b2);
        printf("  %10s %s on device %d, %s%s%s, at %s by %s, ", tm_bytes(a->bytes, b1, sizeof b1),
               tr_kind_name(a->kind), (int)a->device, tm_pool_name(a->pool, b4, sizeof b4),
               o != GM_TO_PROGRAM ? ", the library's " : "", o != GM_TO_PROGRAM ? tr_owner_name((int)o) : "", b2,
               thread_name(t, a->thread, b3, sizeof b3));
        if (a->t1 == TM_LIVE) {
            printf("never freed\n");
        } else {
            ms(a->t1, b2, sizeof b2);
            printf("freed at %s\n", b2);
        }
        if (a->stack != 0 && a->stack < t->nstk) { /* where it was made: its first two frames */
            char buf[512];
            printf("      at");
            for (uint32_t f = 0; f < t->stk[a->stack].n && f < 2; f++)
                printf("%s %s", f ? " <" : "", tr_frame_name(t, &t->stk[a->stack].f[f], buf, sizeof buf));
            printf("\n");
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
    if (s->lib_count != 0)
        printf("the library's own, still held at the end: %llu allocation%s, %s (kept for later calls; given back "
               "when their context is released)\n", (unsigned long long)s->lib_count, s->lib_count == 1 ? "" : "s",
               tm_bytes(s->lib_bytes, b1, sizeof b1));
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
    tr_symbols_stats ss;
    tr_symbols_get_stats(&ss);
    if (ss.names != 0)
        printf("call sites' module files: %llu named, %llu read (%s), %llu refused (not an ELF file that can be "
               "read)\n", (unsigned long long)ss.names, (unsigned long long)ss.files_read,
               tm_bytes(ss.bytes_read, b1, sizeof b1), (unsigned long long)ss.refused);
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
    for (int k = 0; k < TM_NKIND; k++)
        if (s->by_kind[k])
            printf("%s\"%s\": %llu", any++ ? ", " : "", tr_kind_name(k), (unsigned long long)s->by_kind[k]);
    printf("}, \"by_pool\": [");
    any = 0;
    for (size_t p = 0; p <= m->npools; p++)
        if (s->by_pool[p])
            printf("%s{\"pool\": %zu, \"kind\": \"%s\", \"device\": %d, \"bytes\": %llu}", any++ ? ", " : "", p,
                   p ? tr_kind_name(m->pools[p - 1].kind) : "", p ? (int)m->pools[p - 1].device : -1,
                   (unsigned long long)s->by_pool[p]);
    printf("]},\n \"peak_by_owner\": {");
    any = 0;
    for (int o = 0; o <= GM_TO_LAST; o++)
        if (s->by_owner[o])
            printf("%s\"%s\": %llu", any++ ? ", " : "", tr_owner_name(o), (unsigned long long)s->by_owner[o]);
    printf("},\n \"largest\": [");
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
        printf(", \"thread\": %u, \"owner\": \"%s\", \"call_site\": ", (unsigned)a->thread,
               tr_owner_name((int)owner_of(t, a)));
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
    printf("]},\n \"library_held\": {\"count\": %llu, \"bytes\": %llu},\n \"copies\": [",
           (unsigned long long)s->lib_count, (unsigned long long)s->lib_bytes);
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

int trace_summary(const char *file, const tr_trace *t, const tm_model *m, int json, const char *note)
{
    summary s;
    int rc = 0;
    if (summarize(t, m, &s) != 0) {
        fprintf(stderr, "gpumem trace: out of memory\n");
        rc = 1;
    } else if (json) {
        print_json(file, t, m, &s, note);
    } else {
        print_text(file, t, m, &s, note);
    }
    summary_free(&s);
    return rc;
}
