/*
 * trace_read.c - the trace file reader (trace_read.h).  Every value of the
 * file is checked before it is used: the fuzz target tests/fuzz/fuzz-trace.c
 * runs this file over arbitrary bytes.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h" /* rd32 and rd64: the file is little-endian */
#include "trace_read.h"

const char *tr_kind_name(int kind)
{
    static const char *const names[] = {"device", "host", "pinned", "mapped", "managed", "foreign"};
    return kind >= 0 && kind < 6 ? names[kind] : "unknown";
}

const char *tr_owner_name(int owner)
{
    static const char *const names[] = {"program", "copy scratch", "staging slots", "bounce blocks",
                                        "copy temporaries"};
    return owner >= 0 && owner <= GM_TO_LAST ? names[owner] : "unknown";
}

const char *tr_type_name(int type)
{
    static const char *const names[] = {"?", "alloc", "free", "copy", "ladder", "oom", "trim", "mark", "push", "pop"};
    return type >= 1 && type <= GM_TE_LAST ? names[type] : "?";
}

const char *tr_direction_name(int direction)
{
    static const char *const names[] = {"?", "host-to-device", "device-to-host", "device-to-device", "host-to-host",
                                        "device-to-peer"};
    return direction >= 1 && direction <= 5 ? names[direction] : "?";
}

const char *tr_str(const tr_trace *t, uint32_t id)
{
    return id != 0 && id < t->nstr && t->str[id] != NULL ? t->str[id] : "";
}

/* A copy of s[0..n) that is valid UTF-8 with no control characters but
 * tab: other bytes become '?'. */
static char *clean_string(const unsigned char *s, size_t n)
{
    char *o = malloc(n + 1);
    if (o == NULL)
        return NULL;
    size_t i = 0, k = 0;
    while (i < n) {
        unsigned c = s[i];
        size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
        int ok = len != 0 && i + len <= n;
        if (ok && len > 1) {
            uint32_t cp = c & (0x7fu >> len);
            for (size_t j = 1; j < len && ok; j++) {
                ok = (s[i + j] & 0xc0) == 0x80;
                cp = cp << 6 | (s[i + j] & 0x3fu);
            }
            /* no overlong forms, surrogates or values past U+10FFFF */
            ok = ok && !(len == 2 && cp < 0x80) && !(len == 3 && cp < 0x800) && !(len == 4 && cp < 0x10000) &&
                 !(cp >= 0xd800 && cp <= 0xdfff) && cp <= 0x10ffff;
        }
        if (ok && len == 1 && (c < 0x20 || c == 0x7f) && c != '\t')
            ok = 0;
        if (!ok) {
            o[k++] = '?';
            i++;
            continue;
        }
        memcpy(o + k, s + i, len);
        k += len;
        i += len;
    }
    o[k] = '\0';
    return o;
}

typedef struct parser {
    const unsigned char *data;
    size_t size;
    const char *name;
    char *msg;
    size_t msgsize;
    tr_trace *t;
    size_t cap_ev, cap_str, cap_stk, cap_thr;
    uint32_t record_bytes;
    uint64_t alloc_total; /* the bytes of every allocation so far */
    /* where we are, for the messages */
    size_t block;        /* blocks read, from 1 */
    uint64_t records;    /* event records read */
    /* the start's clock pair, and the pairs with the lowest and highest ticks */
    uint64_t ticks0, ns0, ticks_lo, ns_lo, ticks_hi, ns_hi;
} parser;

static tr_status fail(parser *p, tr_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static tr_status fail(parser *p, tr_status st, const char *fmt, ...)
{
    char why[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    snprintf(p->msg, p->msgsize, "%s: %s", p->name, why);
    return st;
}

static int grow(void **a, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 64;
    while (n < need)
        n *= 2;
    void *b = realloc(*a, n * elem);
    if (b == NULL)
        return -1;
    memset((char *)b + *cap * elem, 0, (n - *cap) * elem);
    *a = b;
    *cap = n;
    return 0;
}

static int thread_known(const tr_trace *t, uint32_t index)
{
    for (size_t i = 0; i < t->nthr; i++)
        if (t->thr[i].index == index)
            return 1;
    return 0;
}

/* A pair of readings of the event clock and CLOCK_MONOTONIC: the rate comes
 * from the two farthest apart (lo, hi). */
static void add_clock(parser *p, const unsigned char *b)
{
    uint64_t ticks = rd64(b), ns = rd64(b + 8);
    if (ticks < p->ticks_lo) {
        p->ticks_lo = ticks;
        p->ns_lo = ns;
    }
    if (ticks > p->ticks_hi) {
        p->ticks_hi = ticks;
        p->ns_hi = ns;
    }
}

/* One event record of an EVENTS block at byte offset off. */
static tr_status add_event(parser *p, const unsigned char *r, size_t off, uint32_t thread)
{
    tr_trace *t = p->t;
    uint64_t recno = p->records + 1;
    unsigned type = r[GM_TR_TYPE], kind = r[GM_TR_KIND], kind2 = r[GM_TR_KIND2];
    uint32_t ref = rd32(r + GM_TR_REF), aux = rd32(r + GM_TR_AUX);
#define BAD(...) fail(p, TR_CORRUPT, "corrupt at byte %zu (block %zu, event record %llu): " __VA_ARGS__)
    if (type < 1 || type > GM_TE_LAST)
        return BAD("event type %u is not one of this format's (1 to %u)", off, p->block, (unsigned long long)recno,
                   type, (unsigned)GM_TE_LAST);
    if (kind > 5 && kind != 0xff)
        return BAD("memory kind %u is not one of this format's", off + GM_TR_KIND, p->block,
                   (unsigned long long)recno, kind);
    if (type == GM_TE_COPY && (kind2 > 5 || kind > 5))
        return BAD("a copy's memory kinds %u and %u are not both known", off + GM_TR_KIND, p->block,
                   (unsigned long long)recno, kind, kind2);
    if (type == GM_TE_COPY && (aux < 1 || aux > 5))
        return BAD("copy direction %u is not one of this format's (1 to 5)", off + GM_TR_AUX, p->block,
                   (unsigned long long)recno, (unsigned)aux);
    if (type == GM_TE_ALLOC && ref >= (t->nstk ? t->nstk : 1))
        return BAD("call site %u is not defined before it", off + GM_TR_REF, p->block, (unsigned long long)recno,
                   (unsigned)ref);
    if (type == GM_TE_ALLOC && t->version < 2)
        aux = GM_TO_PROGRAM; /* version 1 has no owners */
    if (type == GM_TE_ALLOC && aux > GM_TO_LAST)
        return BAD("owner %u is not one of this format's (0 to %u)", off + GM_TR_AUX, p->block,
                   (unsigned long long)recno, (unsigned)aux, (unsigned)GM_TO_LAST);
    if ((type == GM_TE_COPY || type == GM_TE_OOM || type == GM_TE_MARK || type == GM_TE_PUSH) &&
        ref >= (t->nstr ? t->nstr : 1))
        return BAD("string %u is not defined before it", off + GM_TR_REF, p->block, (unsigned long long)recno,
                   (unsigned)ref);
    uint64_t bytes = rd64(r + GM_TR_BYTES);
    if ((type == GM_TE_ALLOC || type == GM_TE_FREE) && bytes > TR_MAX_ALLOC_BYTES)
        return BAD("an allocation of %llu bytes (at most 2^63 - 1)", off + GM_TR_BYTES, p->block,
                   (unsigned long long)recno, (unsigned long long)bytes);
    if (type == GM_TE_ALLOC && bytes > TR_MAX_ALLOC_BYTES - p->alloc_total)
        return BAD("allocations of more than 2^63 - 1 bytes in all", off + GM_TR_BYTES, p->block,
                   (unsigned long long)recno);
    if (type == GM_TE_ALLOC)
        p->alloc_total += bytes;
#undef BAD
    if (grow((void **)&t->ev, &p->cap_ev, t->nev + 1, sizeof *t->ev) != 0)
        return fail(p, TR_NO_MEMORY, "out of memory");
    tr_event *e = &t->ev[t->nev];
    e->type = (uint8_t)type;
    e->kind = (uint8_t)kind;
    e->kind2 = (uint8_t)kind2;
    e->flags = r[GM_TR_FLAGS];
    e->device = (int32_t)rd32(r + GM_TR_DEVICE);
    e->thread = thread;
    e->ref = ref;
    e->aux = aux;
    e->t = rd64(r + GM_TR_TICKS); /* raw until the end */
    e->ctx = rd64(r + GM_TR_CONTEXT);
    e->stream = rd64(r + GM_TR_STREAM);
    e->pool = rd64(r + GM_TR_POOL);
    e->bytes = bytes;
    e->value = rd64(r + GM_TR_VALUE);
    e->seq = p->records;
    t->nev++;
    p->records++;
    return TR_OK;
}

static int by_time(const void *a, const void *b)
{
    const tr_event *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Converts a clock reading to ns since the start, within [0, 2^62]. */
static uint64_t to_ns(double scale, uint64_t ticks, uint64_t ticks0)
{
    double d = ((double)ticks - (double)ticks0) * scale;
    if (!(d > 0))
        return 0;
    return d > 4.6e18 ? (uint64_t)4.6e18 : (uint64_t)d;
}

static tr_status parse_blocks(parser *p, size_t off, int *ended, size_t *stop)
{
    tr_trace *t = p->t;
    *ended = 0;
    while (off < p->size) {
        *stop = off;
        p->block++;
        if (*ended)
            return fail(p, TR_CORRUPT, "corrupt at byte %zu (block %zu): data after the trace's end block", off,
                        p->block);
        if (p->size - off < GM_TRACE_BLOCK_HEADER)
            return fail(p, TR_TRUNCATED, "truncated at byte %zu (inside the header of block %zu, which starts at "
                        "byte %zu; after event record %llu)", p->size, p->block, off,
                        (unsigned long long)p->records);
        uint32_t type = rd32(p->data + off), len = rd32(p->data + off + 4);
        if (len > GM_TRACE_MAX_PAYLOAD)
            return fail(p, TR_CORRUPT, "corrupt at byte %zu (block %zu): a block of %u bytes (at most %u)", off,
                        p->block, (unsigned)len, (unsigned)GM_TRACE_MAX_PAYLOAD);
        const unsigned char *b = p->data + off + GM_TRACE_BLOCK_HEADER;
        size_t have = p->size - off - GM_TRACE_BLOCK_HEADER;
        if (len > have) {
            if (type == GM_TB_EVENTS && len >= 8 && have >= 8 && thread_known(t, rd32(b))) {
                /* the whole records before the end */
                uint32_t n = rd32(b + 4);
                size_t whole = (have - 8) / p->record_bytes;
                for (size_t i = 0; i < whole && i < n; i++) {
                    tr_status st = add_event(p, b + 8 + i * p->record_bytes, off + 16 + i * p->record_bytes,
                                             rd32(b));
                    if (st != TR_OK)
                        return st;
                }
            }
            return fail(p, TR_TRUNCATED, "truncated at byte %zu (inside block %zu, which starts at byte %zu; %s "
                        "event record %llu): the block needs %u bytes and the file has %zu more", p->size, p->block,
                        off, type == GM_TB_EVENTS ? "inside" : "after",
                        (unsigned long long)p->records + (type == GM_TB_EVENTS), (unsigned)len, have);
        }
#define BAD(what, ...) fail(p, TR_CORRUPT, "corrupt at byte %zu (block %zu, after event record %llu): " what, off, \
                            p->block, (unsigned long long)p->records, __VA_ARGS__)
        switch (type) {
        case GM_TB_INFO:
            if (len < 8)
                return BAD("an info block of %u bytes (at least 8)", (unsigned)len);
            t->pid = rd32(b);
            free(t->program);
            if ((t->program = clean_string(b + 8, len - 8)) == NULL)
                return fail(p, TR_NO_MEMORY, "out of memory");
            break;
        case GM_TB_THREAD: {
            if (len < 8 || len > 8 + 16)
                return BAD("a thread block of %u bytes (8 to 24)", (unsigned)len);
            if (grow((void **)&t->thr, &p->cap_thr, t->nthr + 1, sizeof *t->thr) != 0)
                return fail(p, TR_NO_MEMORY, "out of memory");
            tr_thread *th = &t->thr[t->nthr++];
            th->index = rd32(b);
            th->tid = rd32(b + 4);
            char *name = clean_string(b + 8, len - 8);
            if (name == NULL)
                return fail(p, TR_NO_MEMORY, "out of memory");
            snprintf(th->name, sizeof th->name, "%s", name);
            free(name);
            break;
        }
        case GM_TB_STRING: {
            if (len < 4 || len - 4 > GM_TRACE_MAX_STRING)
                return BAD("a string block of %u bytes (4 to %u)", (unsigned)len, 4 + GM_TRACE_MAX_STRING);
            uint32_t id = rd32(b);
            size_t next = t->nstr ? t->nstr : 1;
            if (id != next)
                return BAD("string id %u where %zu comes next", (unsigned)id, next);
            if (grow((void **)&t->str, &p->cap_str, next + 1, sizeof *t->str) != 0 ||
                (t->str[id] = clean_string(b + 4, len - 4)) == NULL)
                return fail(p, TR_NO_MEMORY, "out of memory");
            t->nstr = next + 1;
            break;
        }
        case GM_TB_STACK: {
            if (len < 8)
                return BAD("a call-site block of %u bytes (at least 8)", (unsigned)len);
            uint32_t id = rd32(b), n = rd32(b + 4);
            size_t next = t->nstk ? t->nstk : 1;
            if (n > GM_TRACE_MAX_FRAMES || len != 8 + n * GM_TRACE_FRAME_BYTES)
                return BAD("a call site of %u frames in %u bytes", (unsigned)n, (unsigned)len);
            if (id != next)
                return BAD("call-site id %u where %zu comes next", (unsigned)id, next);
            if (grow((void **)&t->stk, &p->cap_stk, next + 1, sizeof *t->stk) != 0)
                return fail(p, TR_NO_MEMORY, "out of memory");
            tr_stack *s = &t->stk[id];
            s->n = n;
            for (uint32_t i = 0; i < n; i++) {
                const unsigned char *fr = b + 8 + i * GM_TRACE_FRAME_BYTES;
                s->f[i].addr = rd64(fr);
                s->f[i].vaddr = rd64(fr + 8);
                s->f[i].module = rd32(fr + 16);
                if (s->f[i].module >= (t->nstr ? t->nstr : 1))
                    return BAD("a call site's frame names string %u, not defined before it",
                               (unsigned)s->f[i].module);
            }
            t->nstk = next + 1;
            break;
        }
        case GM_TB_EVENTS: {
            if (len < 8)
                return BAD("an events block of %u bytes (at least 8)", (unsigned)len);
            uint32_t thread = rd32(b), n = rd32(b + 4);
            if ((uint64_t)n * p->record_bytes != len - 8)
                return BAD("an events block of %u records in %u bytes", (unsigned)n, (unsigned)len);
            if (!thread_known(t, thread))
                return BAD("events of thread %u, which no thread block describes before them", (unsigned)thread);
            for (uint32_t i = 0; i < n; i++) {
                tr_status st = add_event(p, b + 8 + (size_t)i * p->record_bytes,
                                         off + 16 + (size_t)i * p->record_bytes, thread);
                if (st != TR_OK)
                    return st;
            }
            break;
        }
        case GM_TB_CLOCK:
            if (len != 16)
                return BAD("a clock block of %u bytes (16)", (unsigned)len);
            add_clock(p, b);
            break;
        case GM_TB_END:
            if (len != 32)
                return BAD("an end block of %u bytes (32)", (unsigned)len);
            t->recorded = rd64(b);
            t->lost = rd64(b + 8);
            add_clock(p, b + 16);
            if (t->recorded != p->records)
                return BAD("the end block counts %llu events, the file has %llu", (unsigned long long)t->recorded,
                           (unsigned long long)p->records);
            *ended = 1;
            break;
        default:
            return BAD("block type %u is not one of this format's (1 to 7)", (unsigned)type);
        }
#undef BAD
        off += GM_TRACE_BLOCK_HEADER + len;
    }
    *stop = off;
    if (!*ended)
        return fail(p, TR_TRUNCATED, "truncated at byte %zu (block %zu, after event record %llu): the file ends "
                    "before the trace's end block (the program did not stop the trace: killed, or still running)",
                    off, p->block + 1, (unsigned long long)p->records);
    return TR_OK;
}

void tr_free(tr_trace *t)
{
    for (size_t i = 0; i < t->nstr; i++)
        free(t->str[i]);
    free(t->str);
    free(t->stk);
    free(t->thr);
    free(t->ev);
    free(t->program);
    memset(t, 0, sizeof *t);
}

tr_status tr_parse(const unsigned char *data, size_t size, int partial, const char *name, tr_trace *t, char *msg,
                   size_t msgsize)
{
    memset(t, 0, sizeof *t);
    if (msgsize)
        msg[0] = '\0';
    parser p = {.data = data, .size = size, .name = name, .msg = msg, .msgsize = msgsize, .t = t};
    if (size < 8 || memcmp(data, GM_TRACE_MAGIC, 8) != 0) {
        tr_status st = size < 8 && memcmp(data, GM_TRACE_MAGIC, size) == 0 && size > 0
                           ? fail(&p, TR_TRUNCATED, "truncated at byte %zu: the file ends inside the header", size)
                           : fail(&p, TR_NOT_TRACE, "not a libgpumem trace (it does not begin with \"%s\")",
                                  GM_TRACE_MAGIC);
        return st;
    }
    if (size < 12)
        return fail(&p, TR_TRUNCATED, "truncated at byte %zu: the file ends inside the header", size);
    t->version = rd32(data + GM_TH_VERSION);
    if (t->version < GM_TRACE_VERSION_MIN || t->version > GM_TRACE_VERSION)
        return fail(&p, TR_VERSION, "trace format version %u; this gpumem reads versions %u to %u",
                    (unsigned)t->version, GM_TRACE_VERSION_MIN, GM_TRACE_VERSION);
    if (size < GM_TRACE_HEADER_BYTES)
        return fail(&p, TR_TRUNCATED, "truncated at byte %zu: the file ends inside the header (%u bytes)", size,
                    GM_TRACE_HEADER_BYTES);
    uint32_t hbytes = rd32(data + GM_TH_HEADER_BYTES);
    p.record_bytes = rd32(data + GM_TH_RECORD_BYTES);
    if (hbytes < GM_TRACE_HEADER_BYTES || hbytes > 4096)
        return fail(&p, TR_CORRUPT, "corrupt at byte %u: a header of %u bytes (64 to 4096)", GM_TH_HEADER_BYTES,
                    (unsigned)hbytes);
    if (p.record_bytes < GM_TRACE_RECORD_BYTES || p.record_bytes > 4096 || p.record_bytes % 8 != 0)
        return fail(&p, TR_CORRUPT, "corrupt at byte %u: event records of %u bytes (a multiple of 8 from 64 to "
                    "4096)", GM_TH_RECORD_BYTES, (unsigned)p.record_bytes);
    if (size < hbytes)
        return fail(&p, TR_TRUNCATED, "truncated at byte %zu: the file ends inside the header (%u bytes)", size,
                    (unsigned)hbytes);
    t->flags = rd32(data + GM_TH_FLAGS);
    t->realtime_ns = rd64(data + GM_TH_REALTIME_NS);
    p.ticks0 = rd64(data + GM_TH_TICKS0);
    p.ns0 = rd64(data + GM_TH_NS0);
    p.ticks_lo = p.ticks_hi = p.ticks0;
    p.ns_lo = p.ns_hi = p.ns0;
    add_clock(&p, data + GM_TH_TICKS1);

    int ended = 0;
    size_t stop = hbytes;
    tr_status st = parse_blocks(&p, hbytes, &ended, &stop);
    if (st == TR_NO_MEMORY || (st != TR_OK && !partial)) {
        tr_free(t);
        return st;
    }
    t->complete = ended && st == TR_OK; /* with partial, a corrupt tail is not complete */
    /* The clock: ns = (ticks - ticks0) * scale, the rate from the two pairs
     * farthest apart. */
    double scale = p.ticks_hi > p.ticks_lo && p.ns_hi > p.ns_lo
                       ? (double)(p.ns_hi - p.ns_lo) / (double)(p.ticks_hi - p.ticks_lo)
                       : 1.0;
    if (!(scale > 0) || scale > 1e6)
        scale = 1.0;
    uint64_t last = 0;
    for (size_t i = 0; i < t->nev; i++) {
        tr_event *e = &t->ev[i];
        e->t = to_ns(scale, e->t, p.ticks0);
        if (e->type == GM_TE_COPY) {
            double d = (double)e->value * scale;
            e->value = d > 4.6e18 ? (uint64_t)4.6e18 : (uint64_t)d;
        }
        uint64_t end = e->t + (e->type == GM_TE_COPY ? e->value : 0);
        if (end > last)
            last = end;
    }
    uint64_t end_ns = to_ns(scale, p.ticks_hi, p.ticks0);
    t->end_ns = ended && end_ns > last ? end_ns : last;
    if (t->nev > 1)
        qsort(t->ev, t->nev, sizeof *t->ev, by_time);
    if (t->program == NULL && (t->program = calloc(1, 1)) == NULL) {
        tr_free(t);
        return fail(&p, TR_NO_MEMORY, "out of memory");
    }
    return TR_OK; /* with partial, msg says where an incomplete file stops */
}

tr_status tr_load(const char *path, int partial, tr_trace *t, char *msg, size_t msgsize)
{
    memset(t, 0, sizeof *t);
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(msg, msgsize, "%s: cannot open: %s", path, strerror(errno));
        return TR_NOT_TRACE;
    }
    size_t cap = 1 << 20, n = 0;
    unsigned char *data = malloc(cap);
    for (;;) {
        if (data == NULL) {
            fclose(f);
            snprintf(msg, msgsize, "%s: out of memory", path);
            return TR_NO_MEMORY;
        }
        n += fread(data + n, 1, cap - n, f);
        if (n < cap)
            break;
        unsigned char *b = realloc(data, cap * 2);
        if (b == NULL)
            free(data);
        data = b;
        cap *= 2;
    }
    int err = ferror(f);
    fclose(f);
    if (err) {
        free(data);
        snprintf(msg, msgsize, "%s: cannot read: %s", path, strerror(errno));
        return TR_NOT_TRACE;
    }
    tr_status st = tr_parse(data, n, partial, path, t, msg, msgsize);
    free(data);
    return st;
}
