/*
 * trace_export.c - gpumem trace export --chrome: the trace in the Chrome Trace Event
 * format (Perfetto, chrome://tracing), on stdout.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "json-string.h"
#include "trace_cmd.h"

static void us(uint64_t ns)
{
    printf("%llu.%03llu", (unsigned long long)(ns / 1000), (unsigned long long)(ns % 1000));
}

int trace_export_chrome(const tr_trace *t, const tm_model *m)
{
    unsigned pid = t->pid;
    /* the regions, so that every E has its B: closes[i], the pop event i
     * closes a region */
    tm_region *reg = NULL;
    size_t nreg = 0;
    unsigned char *closes = calloc(t->nev ? t->nev : 1, 1);
    if (closes == NULL || tm_regions(t, &reg, &nreg) != 0) {
        free(closes);
        return -1;
    }
    for (size_t k = 0; k < nreg; k++)
        if (reg[k].pop != TM_NONE)
            closes[reg[k].pop] = 1;
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
    uint64_t kinds[TM_NKIND] = {0};
    for (size_t i = 0; i < t->nev; i++) {
        const tr_event *e = &t->ev[i];
        if (m->which[i] >= 0) {
            kinds[tm_kind_slot(m->a[m->which[i]].kind)] += (uint64_t)m->delta[i];
            printf(",\n{\"name\": \"memory in use\", \"ph\": \"C\", \"pid\": %u, \"tid\": 0, \"ts\": ", pid);
            us(e->t);
            printf(", \"args\": {");
            int any = 0;
            for (int k = 0; k < TM_NKIND; k++)
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
            printf(",\n{\"name\": ");
            json_string(tr_str(t, e->ref));
            printf(", \"cat\": \"region\", \"ph\": \"B\", \"pid\": %u, \"tid\": %u, \"ts\": ", pid,
                   (unsigned)e->thread);
            us(e->t);
            printf("}");
            break;
        case GM_TE_POP: {
            if (!closes[i])
                break; /* opened before the trace started */
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
    /* regions still open at the end, innermost first */
    for (size_t k = nreg; k-- > 0;) {
        if (reg[k].pop != TM_NONE)
            continue;
        printf(",\n{\"cat\": \"region\", \"ph\": \"E\", \"pid\": %u, \"tid\": %u, \"ts\": ", pid,
               (unsigned)reg[k].thread);
        us(t->end_ns);
        printf("}");
    }
    free(reg);
    free(closes);
    printf("\n]}\n");
    return 0;
}
