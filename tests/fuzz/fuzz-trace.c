/* The trace reader of gpumem trace (tools/trace_read.c) over arbitrary
 * bytes: it never reads out of bounds, and what it accepts keeps the
 * format's rules.  Oracles:
 *  - a file it reads whole ends with its end block: every strict prefix of
 *    it is truncated (or, empty, no trace), and reads with --partial;
 *  - what it reads has events of known types in time order, names that it
 *    defines, valid UTF-8 strings, and as many events as the end block says;
 *  - a refusal leaves no trace and says where the file stops ("at byte N",
 *    N within the file), or why it is no trace of this version. */
#include "config.h"

#include "../../tools/trace_read.c"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    return 0;
}

static void valid_utf8(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned c = *p;
        size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
        FUZZ_CHECK(len != 0, "a string starts a character with 0x%02x", c);
        FUZZ_CHECK(len > 1 || c >= 0x20 || c == '\t', "a control character 0x%02x", c);
        for (size_t j = 1; j < len; j++)
            FUZZ_CHECK((p[j] & 0xc0) == 0x80, "a bad continuation byte");
        p += len;
    }
}

static void check_trace(const tr_trace *t)
{
    for (size_t i = 0; i < t->nstr; i++)
        if (t->str[i] != NULL)
            valid_utf8(t->str[i]);
    valid_utf8(t->program);
    for (size_t i = 0; i < t->nthr; i++)
        valid_utf8(t->thr[i].name);
    for (size_t i = 0; i < t->nev; i++) {
        const tr_event *e = &t->ev[i];
        FUZZ_CHECK(e->type >= 1 && e->type <= GM_TE_LAST, "event type %u", e->type);
        FUZZ_CHECK(e->kind <= 5 || e->kind == 0xff, "kind %u", e->kind);
        if (e->type == GM_TE_ALLOC)
            FUZZ_CHECK(e->ref == 0 || (e->ref < t->nstk && t->stk[e->ref].n <= GM_TRACE_MAX_FRAMES), "site %u",
                       e->ref);
        if (e->type == GM_TE_COPY || e->type == GM_TE_MARK || e->type == GM_TE_PUSH || e->type == GM_TE_OOM)
            FUZZ_CHECK(e->ref == 0 || e->ref < t->nstr, "string %u of %zu", e->ref, t->nstr);
        if (i > 0)
            FUZZ_CHECK(t->ev[i - 1].t < e->t || (t->ev[i - 1].t == e->t && t->ev[i - 1].seq < e->seq),
                       "events out of order at %zu", i);
        FUZZ_CHECK(e->t <= t->end_ns, "an event after the trace's end");
    }
    for (size_t i = 1; i < t->nstk; i++)
        for (uint32_t k = 0; k < t->stk[i].n; k++)
            FUZZ_CHECK(t->stk[i].f[k].module < (t->nstr ? t->nstr : 1), "a frame's module");
}

static void check_refusal(tr_status st, const tr_trace *t, const char *msg, size_t size)
{
    FUZZ_CHECK(t->nev == 0 && t->ev == NULL && t->str == NULL, "a refused file left a trace");
    FUZZ_CHECK(strncmp(msg, "input: ", 7) == 0, "the message names the file: %s", msg);
    if (st == TR_TRUNCATED || st == TR_CORRUPT) {
        const char *at = strstr(msg, "at byte ");
        FUZZ_CHECK(at != NULL, "no byte offset: %s", msg);
        unsigned long long off = strtoull(at + 8, NULL, 10);
        FUZZ_CHECK(off <= size, "offset %llu past the file's %zu bytes", off, size);
    } else {
        FUZZ_CHECK(st == TR_NOT_TRACE || st == TR_VERSION, "status %d", (int)st);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char msg[1024];
    tr_trace t;
    tr_status st = tr_parse(data, size, 0, "input", &t, msg, sizeof msg);
    FUZZ_CHECK(st != TR_NO_MEMORY, "out of memory");
    if (st == TR_OK) {
        FUZZ_CHECK(t.complete && t.recorded == t.nev, "a whole file: %llu recorded, %zu read",
                   (unsigned long long)t.recorded, t.nev);
        check_trace(&t);
        size_t nev = t.nev;
        tr_free(&t);
        /* every strict prefix is truncated, and its events are some of these */
        size_t cuts[3] = {size - 1, size / 2, size > 64 ? 64 : 0};
        for (int k = 0; k < 3; k++) {
            tr_trace p;
            tr_status ps = tr_parse(data, cuts[k], 0, "input", &p, msg, sizeof msg);
            FUZZ_CHECK(ps == TR_TRUNCATED || (cuts[k] == 0 && ps == TR_NOT_TRACE), "a prefix of %zu bytes: %d (%s)",
                       cuts[k], (int)ps, msg);
            check_refusal(ps, &p, msg, cuts[k]);
            ps = tr_parse(data, cuts[k], 1, "input", &p, msg, sizeof msg);
            if (ps == TR_OK) {
                FUZZ_CHECK(!p.complete && p.nev <= nev, "a partial prefix has %zu of %zu events", p.nev, nev);
                check_trace(&p);
                tr_free(&p);
            }
        }
    } else {
        check_refusal(st, &t, msg, size);
        st = tr_parse(data, size, 1, "input", &t, msg, sizeof msg);
        if (st == TR_OK) {
            FUZZ_CHECK(!t.complete || t.recorded == t.nev, "a partial read");
            check_trace(&t);
            tr_free(&t);
        }
    }
    return 0;
}
