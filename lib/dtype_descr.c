/*
 * dtype_descr.c - the descr notation of NumPy's array interface: a record's
 * list of (name, typestr-or-list[, shape]) tuples, written as Python's repr
 * writes it and read as the Python literal NumPy writes (any whitespace,
 * either quote, Python's string escapes, trailing commas).
 */
#include "config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "dtype_impl.h"
#include "error.h"

/* ---- descr: writing ------------------------------------------------------------------ */

#include "printable_table.h"

/* Python's str.isprintable() of one code point. */
static bool printable(uint32_t cp)
{
    size_t lo = 0, hi = sizeof gm_nonprintable / sizeof gm_nonprintable[0];
    while (lo < hi) { /* the first range that ends at or after cp */
        size_t mid = lo + (hi - lo) / 2;
        if (gm_nonprintable[mid][1] < cp)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo == sizeof gm_nonprintable / sizeof gm_nonprintable[0] || cp < gm_nonprintable[lo][0];
}

/* The code point of the UTF-8 sequence at s and its length; 0 for a
 * malformed one.  An encoded surrogate (ED A0..BF xx) counts as malformed:
 * the reader refuses the escape \ud800, so the writer keeps those bytes as
 * they are, as the reader took them. */
static size_t utf8_decode(const unsigned char *s, uint32_t *cp)
{
    size_t n = s[0] >= 0xf5 ? 0 : s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
    if (n == 0)
        return 0;
    uint32_t v = s[0] & (0x7fu >> n);
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        v = v << 6 | (s[i] & 0x3fu);
    }
    static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (v < least[n] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        return 0;
    *cp = v;
    return n;
}

/* A field name as Python's repr() writes a str: single quotes unless the
 * name holds a ' and no ", backslash escapes for the quote and backslashes,
 * \t \n \r, and every character str.isprintable() rejects as \xNN, \uNNNN
 * or \UNNNNNNNN (Unicode of the table's Python); the rest as UTF-8.  A
 * malformed UTF-8 byte, which no str holds, is copied as it is, as the
 * reader took it, so that the text reads back to the same name. */
static void put_pyrepr(gm_dtype_writer *w, const char *s)
{
    char q = strchr(s, '\'') != NULL && strchr(s, '"') == NULL ? '"' : '\'';
    gm_dtype_put(w, &q, 1);
    const unsigned char *u = (const unsigned char *)s;
    while (*u != '\0') {
        uint32_t cp = *u;
        size_t n = cp < 0x80 ? 1 : utf8_decode(u, &cp);
        char esc[16];
        if (n == 0) { /* as it is: the reader keeps such a byte as it is too */
            gm_dtype_put(w, (const char *)u, 1);
            u++;
            continue;
        }
        if (cp == (unsigned char)q || cp == '\\') {
            esc[0] = '\\';
            esc[1] = (char)cp;
            gm_dtype_put(w, esc, 2);
        } else if (cp == '\t') {
            gm_dtype_puts(w, "\\t");
        } else if (cp == '\n') {
            gm_dtype_puts(w, "\\n");
        } else if (cp == '\r') {
            gm_dtype_puts(w, "\\r");
        } else if (!printable(cp)) {
            snprintf(esc, sizeof esc, cp < 0x100 ? "\\x%02x" : cp < 0x10000 ? "\\u%04x" : "\\U%08x", cp);
            gm_dtype_puts(w, esc);
        } else {
            gm_dtype_put(w, (const char *)u, n);
        }
        u += n;
    }
    gm_dtype_put(w, &q, 1);
}

static void put_gap(gm_dtype_writer *w, int64_t bytes)
{
    char buf[48];
    snprintf(buf, sizeof buf, "('', '|V%" PRId64 "')", bytes);
    gm_dtype_puts(w, buf);
}

/* NumPy's _array_descr() for a record: fields in order, a ('', '|Vn') entry
 * for every gap and for trailing padding, so that offsets follow from the
 * order.  Like NumPy, a record whose fields are not in increasing offset
 * order has no descr. */
static void sep(gm_dtype_writer *w, bool *first)
{
    if (!*first)
        gm_dtype_puts(w, ", ");
    *first = false;
}

static gpumem_status put_record(gm_dtype_writer *w, const char *what, const gpumem_dtype *d)
{
    int64_t at = 0;
    bool first = true;
    gm_dtype_put(w, "[", 1);
    for (size_t i = 0; i < d->nfields; i++) {
        const gm_field *f = &d->fields[i];
        if (f->offset < at) {
            char q[QUOTE_BUF];
            return gm_error(GPUMEM_ERROR_INVALID_DTYPE,
                            "%s: field %s at offset %" PRId64 " starts before the end of the fields before it "
                            "(byte %" PRId64 "): a descr cannot describe out-of-order fields",
                            what, gm_dtype_quoted(q, f->name, '\''), f->offset, at);
        }
        if (f->offset > at) {
            sep(w, &first);
            put_gap(w, f->offset - at);
        }
        sep(w, &first);
        at = f->offset + f->size;
        gm_dtype_put(w, "(", 1);
        put_pyrepr(w, f->name);
        gm_dtype_puts(w, ", ");
        if (f->dtype->type == GPUMEM_RECORD) {
            gpumem_status st = put_record(w, what, f->dtype);
            if (st != GPUMEM_OK)
                return st;
        } else {
            char ts[24];
            gm_dtype_format_typestr(f->dtype, ts);
            gm_dtype_put(w, "'", 1);
            gm_dtype_puts(w, ts);
            gm_dtype_put(w, "'", 1);
        }
        if (f->ndim > 0) {
            /* Python's tuple repr: (3,) for one extent, (2, 3) for more. */
            gm_dtype_puts(w, ", (");
            for (int k = 0; k < f->ndim; k++) {
                char buf[32];
                snprintf(buf, sizeof buf, "%s%" PRId64, k > 0 ? ", " : "", f->shape[k]);
                gm_dtype_puts(w, buf);
            }
            gm_dtype_puts(w, f->ndim == 1 ? ",)" : ")");
        }
        gm_dtype_put(w, ")", 1);
    }
    if ((int64_t)d->itemsize > at) {
        sep(w, &first);
        put_gap(w, (int64_t)d->itemsize - at);
    }
    gm_dtype_put(w, "]", 1);
    return GPUMEM_OK;
}

gpumem_status gm_dtype_descr(const char *what, const gpumem_dtype *dtype, char *buf, size_t size)
{
    gm_dtype_writer w = {buf, size, 0};
    if (dtype->type == GPUMEM_RECORD) {
        gpumem_status st = put_record(&w, what, dtype);
        if (st != GPUMEM_OK) {
            if (size > 0)
                buf[0] = '\0';
            return st;
        }
    } else {
        char ts[24];
        gm_dtype_format_typestr(dtype, ts);
        gm_dtype_puts(&w, "[('', '");
        gm_dtype_puts(&w, ts);
        gm_dtype_puts(&w, "')]");
    }
    return gm_dtype_finish(&w, what, "descr");
}

GPUMEM_API gpumem_status gpumem_dtype_descr(const gpumem_dtype *dtype, char *buf, size_t size)
{
    GM_CHECK_HANDLE(dtype);
    if (size > 0) /* size 0 asks only for the size needed, as snprintf */
        GM_CHECK_NULL(buf);
    return gm_dtype_descr(__func__, dtype, buf, size);
}

/* ---- descr: reading ---------------------------------------------------------------- */

/* The descr grammar is the Python literal NumPy writes: a list of tuples
 * (name, typestr-or-list[, shape]), any whitespace, ' or " strings with
 * Python's escapes, trailing commas, and a shape written as an int or a
 * tuple of ints. */
typedef struct parser {
    const char *what;
    const char *text; /* the whole descr, for messages */
    const char *p;
} parser;

/* One entry of a list while it is read. */
typedef struct entry {
    char *name;
    const gpumem_dtype *dtype; /* owned */
    int ndim;
    int64_t shape[GM_DTYPE_MAX_NDIM];
} entry;

static gpumem_status syntax(parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static gpumem_status syntax(parser *ps, const char *fmt, ...)
{
    char why[256], q[QUOTE_BUF], near[QUOTE_BUF], tail[24];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    snprintf(tail, sizeof tail, "%s", ps->p);
    return gm_error(GPUMEM_ERROR_INVALID_DTYPE, "%s: descr %s: at character %zu (%s): %s", ps->what,
                    gm_dtype_quoted(q, ps->text, '"'), (size_t)(ps->p - ps->text),
                    *ps->p == '\0' ? "the end" : gm_dtype_quoted(near, tail, '"'), why);
}

static void skip_ws(parser *ps)
{
    while (*ps->p != '\0' && strchr(" \t\n\r\f\v", *ps->p) != NULL)
        ps->p++;
}

/* Skips whitespace, then c if it is next. */
static bool accept(parser *ps, char c)
{
    skip_ws(ps);
    if (*ps->p != c)
        return false;
    ps->p++;
    return true;
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* A growing string for a literal's contents. */
typedef struct strbuf {
    char *s;
    size_t len, cap;
} strbuf;

static bool sb_put(strbuf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 32;
        while (b->len + n + 1 > cap)
            cap *= 2;
        char *t = realloc(b->s, cap);
        if (t == NULL)
            return false;
        b->s = t;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
    return true;
}

/* A code point as UTF-8, the way Python's str holds it. */
static bool sb_put_codepoint(strbuf *b, uint32_t cp)
{
    char u[4];
    size_t n;
    if (cp < 0x80) {
        u[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xc0 | (cp >> 6));
        u[1] = (char)(0x80 | (cp & 0x3f));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xe0 | (cp >> 12));
        u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        u[2] = (char)(0x80 | (cp & 0x3f));
        n = 3;
    } else {
        u[0] = (char)(0xf0 | (cp >> 18));
        u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
        u[3] = (char)(0x80 | (cp & 0x3f));
        n = 4;
    }
    return sb_put(b, u, n);
}

/* A Python string literal; *out is malloc'd. */
static gpumem_status parse_string(parser *ps, char **out)
{
    skip_ws(ps);
    char quote = *ps->p;
    if (quote != '\'' && quote != '"')
        return syntax(ps, "expected a quoted string");
    const char *start = ps->p++;
    strbuf b = {NULL, 0, 0};
    gpumem_status st = GPUMEM_OK;
    bool ok = sb_put(&b, "", 0);
    while (ok && st == GPUMEM_OK) {
        char c = *ps->p;
        if (c == '\0' || c == '\n') {
            ps->p = start;
            st = syntax(ps, "unterminated string");
            break;
        }
        ps->p++;
        if (c == quote)
            break;
        if (c != '\\') {
            ok = sb_put(&b, &c, 1);
            continue;
        }
        const char *esc = ps->p - 1;
        char e = *ps->p++;
        uint32_t cp = 0;
        int digits = 0;
        switch (e) {
        case '\\': case '\'': case '"':
            ok = sb_put(&b, &e, 1);
            continue;
        case '\n': /* a line continuation */
            continue;
        case 'a': cp = 7; break;
        case 'b': cp = 8; break;
        case 'f': cp = 12; break;
        case 'n': cp = 10; break;
        case 'r': cp = 13; break;
        case 't': cp = 9; break;
        case 'v': cp = 11; break;
        case 'x': digits = 2; break;
        case 'u': digits = 4; break;
        case 'U': digits = 8; break;
        case 'N':
            /* Python looks the name up in the Unicode database, which the
             * library does not carry: refused, never kept as text. */
            ps->p = esc;
            st = syntax(ps, "the named escape \\N{...} is not supported; write the character or \\u/\\U "
                        "with its code point");
            continue;
        case '\0':
            ps->p = start;
            st = syntax(ps, "unterminated string");
            continue;
        default:
            if (e >= '0' && e <= '7') {
                cp = (uint32_t)(e - '0');
                for (int k = 0; k < 2 && *ps->p >= '0' && *ps->p <= '7'; k++)
                    cp = cp * 8 + (uint32_t)(*ps->p++ - '0');
            } else {
                /* Python keeps an unknown escape as it is. */
                ok = sb_put(&b, esc, 2);
                continue;
            }
        }
        for (int k = 0; k < digits; k++) {
            int v = hex_value(*ps->p);
            if (v < 0) {
                ps->p = esc;
                st = syntax(ps, "the escape \\%c needs %d hexadecimal digits", e, digits);
                break;
            }
            cp = cp * 16 + (uint32_t)v;
            ps->p++;
        }
        if (st != GPUMEM_OK)
            break;
        if (cp == 0) {
            ps->p = esc;
            st = syntax(ps, "a NUL character cannot be part of a name");
        } else if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
            ps->p = esc;
            st = syntax(ps, "the escape is not a Unicode character");
        } else {
            ok = sb_put_codepoint(&b, cp);
        }
    }
    if (!ok && st == GPUMEM_OK)
        st = gm_dtype_out_of_memory(ps->what, b.cap * 2);
    if (st != GPUMEM_OK) {
        free(b.s);
        return st;
    }
    *out = b.s;
    return GPUMEM_OK;
}

/* A non-negative decimal integer (a sub-array extent). */
static gpumem_status parse_extent(parser *ps, int64_t *out)
{
    skip_ws(ps);
    if (*ps->p == '-')
        return syntax(ps, "a sub-array extent cannot be negative");
    if (*ps->p < '0' || *ps->p > '9')
        return syntax(ps, "expected a sub-array extent (a non-negative integer)");
    int64_t v = 0;
    const char *start = ps->p;
    for (; *ps->p >= '0' && *ps->p <= '9'; ps->p++) {
        if (v > (INT64_MAX - (*ps->p - '0')) / 10) {
            ps->p = start;
            return syntax(ps, "the sub-array extent is too large");
        }
        v = v * 10 + (*ps->p - '0');
    }
    *out = v;
    return GPUMEM_OK;
}

/* A shape: an int, or a parenthesized, comma-separated list of ints
 * ("(3)" is the int 3 in Python; "(3,)" a tuple; "()" no dimensions). */
static gpumem_status parse_shape(parser *ps, entry *e)
{
    skip_ws(ps);
    if (*ps->p != '(') {
        e->ndim = 1;
        return parse_extent(ps, &e->shape[0]);
    }
    ps->p++;
    e->ndim = 0;
    if (accept(ps, ')'))
        return GPUMEM_OK;
    for (;;) {
        if (e->ndim == GM_DTYPE_MAX_NDIM)
            return syntax(ps, "a sub-array has at most %d dimensions", GM_DTYPE_MAX_NDIM);
        gpumem_status st = parse_extent(ps, &e->shape[e->ndim++]);
        if (st != GPUMEM_OK)
            return st;
        if (accept(ps, ')'))
            return GPUMEM_OK;
        if (!accept(ps, ','))
            return syntax(ps, "expected ',' or ')' in a sub-array shape");
        if (accept(ps, ')'))
            return GPUMEM_OK;
    }
}

static gpumem_status parse_list(parser *ps, int depth, const gpumem_dtype **out);

/* One (name, type[, shape]) tuple. */
static gpumem_status parse_entry(parser *ps, int depth, entry *e)
{
    if (!accept(ps, '('))
        return syntax(ps, "expected '(' to start a field");
    gpumem_status st = parse_string(ps, &e->name);
    if (st != GPUMEM_OK)
        return st;
    if (!accept(ps, ','))
        return syntax(ps, "expected ',' after the field name");
    skip_ws(ps);
    if (*ps->p == '[') {
        st = parse_list(ps, depth + 1, &e->dtype);
    } else if (*ps->p == '\'' || *ps->p == '"') {
        char *ts;
        st = parse_string(ps, &ts);
        if (st == GPUMEM_OK) {
            char what[QUOTE_BUF + 64], q[QUOTE_BUF];
            snprintf(what, sizeof what, "%s: field %s", ps->what, gm_dtype_quoted(q, e->name, '\''));
            st = gm_dtype_parse_typestr(what, ts, &e->dtype);
            free(ts);
        }
    } else {
        st = syntax(ps, "expected a typestr or a list of fields");
    }
    if (st != GPUMEM_OK)
        return st;
    if (accept(ps, ')'))
        return GPUMEM_OK;
    if (!accept(ps, ','))
        return syntax(ps, "expected ',' or ')' after the field's type");
    if (accept(ps, ')'))
        return GPUMEM_OK;
    st = parse_shape(ps, e);
    if (st != GPUMEM_OK)
        return st;
    accept(ps, ',');
    if (!accept(ps, ')'))
        return syntax(ps, "expected ')' to end the field");
    return GPUMEM_OK;
}

static void entries_free(entry *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(v[i].name);
        gm_dtype_unref(v[i].dtype);
    }
    free(v);
}

/* The dtype a list of entries describes: a packed record whose offsets
 * follow from the order, unnamed entries being gaps; except that the whole
 * descr [('', '<f4')] or [('', '|V16')] is that builtin or those raw bytes,
 * as NumPy writes them.  In a field, a list is always a record: NumPy
 * writes a record without fields there as [('', '|Vn')]. */
static gpumem_status build(parser *ps, entry *v, size_t n, bool top, const gpumem_dtype **out)
{
    if (top && n == 1 && v[0].name[0] == '\0' && v[0].ndim == 0) {
        *out = v[0].dtype;
        v[0].dtype = NULL;
        return GPUMEM_OK;
    }
    gpumem_field *fields = malloc((n > 0 ? n : 1) * sizeof *fields);
    if (fields == NULL)
        return gm_dtype_out_of_memory(ps->what, n * sizeof *fields);
    size_t k = 0;
    int64_t at = 0;
    gpumem_status st = GPUMEM_OK;
    for (size_t i = 0; i < n && st == GPUMEM_OK; i++) {
        int64_t size = (int64_t)v[i].dtype->itemsize;
        for (int j = 0; j < v[i].ndim && st == GPUMEM_OK; j++) {
            if (v[i].shape[j] > 0 && size > MAX_BYTES / v[i].shape[j])
                st = gm_error(GPUMEM_ERROR_INVALID_DTYPE, "%s: entry %zu: the sub-array's size overflows", ps->what, i);
            else
                size *= v[i].shape[j];
        }
        if (st == GPUMEM_OK && gm_dtype_add_overflows(at, size))
            st = gm_error(GPUMEM_ERROR_INVALID_DTYPE, "%s: entry %zu: the record's size overflows", ps->what, i);
        if (st != GPUMEM_OK)
            break;
        if (v[i].name[0] != '\0')
            fields[k++] = (gpumem_field){v[i].name, v[i].dtype, at, v[i].ndim, v[i].shape};
        at += size;
    }
    if (st == GPUMEM_OK)
        st = gm_dtype_record_make(ps->what, fields, k, GPUMEM_RECORD_PACKED, (size_t)at, out);
    free(fields);
    return st;
}

static gpumem_status parse_list(parser *ps, int depth, const gpumem_dtype **out)
{
    if (depth > GM_DTYPE_MAX_DEPTH)
        return syntax(ps, "records nest more than %d levels deep", GM_DTYPE_MAX_DEPTH);
    if (!accept(ps, '['))
        return syntax(ps, "expected '[' to start a list of fields");
    entry *v = NULL;
    size_t n = 0, cap = 0;
    gpumem_status st = GPUMEM_OK;
    if (!accept(ps, ']')) {
        for (;;) {
            if (n == cap) {
                size_t ncap = cap ? cap * 2 : 8;
                entry *t = realloc(v, ncap * sizeof *v);
                if (t == NULL) {
                    st = gm_dtype_out_of_memory(ps->what, ncap * sizeof *v);
                    break;
                }
                v = t;
                cap = ncap;
            }
            memset(&v[n], 0, sizeof v[n]);
            st = parse_entry(ps, depth, &v[n++]);
            if (st != GPUMEM_OK)
                break;
            if (accept(ps, ']'))
                break;
            if (!accept(ps, ',')) {
                st = syntax(ps, "expected ',' or ']' after a field");
                break;
            }
            if (accept(ps, ']'))
                break;
        }
    }
    if (st == GPUMEM_OK)
        st = build(ps, v, n, depth == 1, out);
    entries_free(v, n);
    return st;
}

gpumem_status gm_dtype_from_descr(const char *what, const char *descr, gpumem_dtype **dtype)
{
    parser ps = {what, descr, descr};
    const gpumem_dtype *d = NULL;
    gpumem_status st;
    skip_ws(&ps);
    if (*ps.p == '\0')
        return gm_error(GPUMEM_ERROR_INVALID_DTYPE, "%s: the descr is empty", what);
    if (*ps.p == '[') {
        st = parse_list(&ps, 1, &d);
    } else if (*ps.p == '\'' || *ps.p == '"') {
        char *ts;
        st = parse_string(&ps, &ts);
        if (st == GPUMEM_OK) {
            st = gm_dtype_parse_typestr(what, ts, &d);
            free(ts);
        }
    } else {
        /* A bare typestr: up to the trailing whitespace. */
        const char *end = ps.p + strlen(ps.p);
        while (end > ps.p && strchr(" \t\n\r\f\v", end[-1]) != NULL)
            end--;
        char *ts = strndup(ps.p, (size_t)(end - ps.p));
        if (ts == NULL)
            return gm_dtype_out_of_memory(what, (size_t)(end - ps.p) + 1);
        st = gm_dtype_parse_typestr(what, ts, &d);
        free(ts);
        ps.p = end;
    }
    if (st == GPUMEM_OK) {
        skip_ws(&ps);
        if (*ps.p != '\0') {
            gm_dtype_unref(d);
            return syntax(&ps, "trailing characters after the descr");
        }
        *dtype = (gpumem_dtype *)d;
    }
    return st;
}

GPUMEM_API gpumem_status gpumem_dtype_from_descr(const char *descr, gpumem_dtype **dtype)
{
    GM_CHECK_NULL(descr);
    GM_CHECK_NULL(dtype);
    return gm_dtype_from_descr(__func__, descr, dtype);
}

