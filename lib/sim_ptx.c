/*
 * sim_ptx.c - the simulator's reader of PTX text (sim_image.c reads the
 * image around it).
 *
 * Nothing here compiles or runs code.  The PTX reader knows the module-level
 * grammar only: directives, variable declarations with their sizes and
 * literal initializers, and kernel (.entry) definitions, whose bodies it
 * skips except for the .shared and .local declarations it adds up.
 */
#include "config.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_abi.h"
#include "sim_image.h"

/* ----------------------------------------------------------------- PTX -- */

enum { T_WORD, T_NUMBER, T_STRING, T_PUNCT };

typedef struct token {
    const char *s;
    size_t n;
    int line;
    int kind;
} token;

typedef struct ptx {
    gm_sim_parse *p;
    token *t;
    size_t n, cap;
} ptx;

static bool is_word_start(int c)
{
    return isalpha(c) || c == '_' || c == '$' || c == '%' || c == '.';
}

static bool is_word_char(int c)
{
    return isalnum(c) || c == '_' || c == '$' || c == '%' || c == '.';
}

static bool tok_is(const token *t, const char *s)
{
    return t->n == strlen(s) && memcmp(t->s, s, t->n) == 0;
}

static bool tok_punct(const token *t, char c)
{
    return t->kind == T_PUNCT && t->s[0] == c;
}

static int push_token(ptx *x, const char *s, size_t n, int line, int kind)
{
    if (x->n == x->cap) {
        size_t cap = x->cap ? 2 * x->cap : 256;
        token *v = realloc(x->t, cap * sizeof *v);
        if (v == NULL)
            return GM_CUDA_ERROR_OUT_OF_MEMORY;
        x->t = v;
        x->cap = cap;
    }
    x->t[x->n++] = (token){s, n, line, kind};
    return GM_CUDA_SUCCESS;
}

/* Splits text[0, len) into tokens; comments go, line numbers stay. */
static int tokenize(ptx *x, const char *text, size_t len)
{
    int line = 1, rc;
    size_t i = 0;
    while (i < len) {
        unsigned char c = (unsigned char)text[i];
        if (c == '\n') {
            line++;
            i++;
        } else if (isspace(c)) {
            i++;
        } else if (c == '/' && i + 1 < len && text[i + 1] == '/') {
            while (i < len && text[i] != '\n')
                i++;
        } else if (c == '/' && i + 1 < len && text[i + 1] == '*') {
            int start = line;
            i += 2;
            while (i + 1 < len && !(text[i] == '*' && text[i + 1] == '/')) {
                line += text[i] == '\n';
                i++;
            }
            if (i + 1 >= len)
                return gm_sim_fail(x->p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: unterminated comment", start);
            i += 2;
        } else if (c == '"') {
            size_t j = i + 1;
            while (j < len && text[j] != '"' && text[j] != '\n')
                j++;
            if (j >= len || text[j] != '"')
                return gm_sim_fail(x->p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: unterminated string", line);
            if ((rc = push_token(x, text + i, j + 1 - i, line, T_STRING)) != GM_CUDA_SUCCESS)
                return rc;
            i = j + 1;
        } else if (isdigit(c)) {
            size_t j = i;
            while (j < len && is_word_char((unsigned char)text[j])) {
                j++;
                /* an exponent's sign: 1e-3 (not in hex forms 0x, 0f, 0d) */
                if (j + 1 < len && (text[j - 1] == 'e' || text[j - 1] == 'E') &&
                    (text[j] == '-' || text[j] == '+') && isdigit((unsigned char)text[j + 1]) &&
                    !(text[i] == '0' && j - i > 1 && strchr("xXfFdD", text[i + 1]) != NULL))
                    j++;
            }
            if ((rc = push_token(x, text + i, j - i, line, T_NUMBER)) != GM_CUDA_SUCCESS)
                return rc;
            i = j;
        } else if (is_word_start(c)) {
            size_t j = i;
            while (j < len && is_word_char((unsigned char)text[j]))
                j++;
            if ((rc = push_token(x, text + i, j - i, line, T_WORD)) != GM_CUDA_SUCCESS)
                return rc;
            i = j;
        } else if (c == '\0') {
            break;
        } else if (c < 0x20 || c > 0x7e) {
            return gm_sim_fail(x->p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: byte 0x%02x is not PTX text",
                               line, c);
        } else {
            if ((rc = push_token(x, text + i, 1, line, T_PUNCT)) != GM_CUDA_SUCCESS)
                return rc;
            i++;
        }
    }
    return GM_CUDA_SUCCESS;
}

/* Bytes of a PTX fundamental type (.b32, .f64, ...), 0 if t is none. */
static size_t type_size(const token *t, char *klass)
{
    static const struct {
        const char *name;
        size_t size;
        char klass; /* 'i' integer/bits, 'f' float, 'h' half-width float (no initializers) */
    } types[] = {
        {".b8", 1, 'i'},  {".u8", 1, 'i'},  {".s8", 1, 'i'},    {".b16", 2, 'i'}, {".u16", 2, 'i'},
        {".s16", 2, 'i'}, {".f16", 2, 'h'}, {".bf16", 2, 'h'},  {".b32", 4, 'i'}, {".u32", 4, 'i'},
        {".s32", 4, 'i'}, {".f32", 4, 'f'}, {".f16x2", 4, 'h'}, {".bf16x2", 4, 'h'}, {".b64", 8, 'i'},
        {".u64", 8, 'i'}, {".s64", 8, 'i'}, {".f64", 8, 'f'},   {".b128", 16, 'h'}, {".pred", 1, 'h'},
    };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        if (tok_is(t, types[i].name)) {
            if (klass != NULL)
                *klass = types[i].klass;
            return types[i].size;
        }
    }
    return 0;
}

static bool parse_uint(const token *t, uint64_t *v)
{
    char buf[64];
    if (t->kind != T_NUMBER || t->n >= sizeof buf)
        return false;
    memcpy(buf, t->s, t->n);
    buf[t->n] = '\0';
    size_t n = t->n;
    if (n > 0 && (buf[n - 1] == 'U' || buf[n - 1] == 'u'))
        buf[--n] = '\0';
    char *end;
    int base = 0;
    const char *s = buf;
    if (buf[0] == '0' && (buf[1] == 'b' || buf[1] == 'B')) {
        base = 2;
        s = buf + 2;
    }
    *v = strtoull(s, &end, base);
    return *s != '\0' && *end == '\0';
}

/* Writes the literal t (negated when neg) as a value of `size` bytes and
 * class klass into out; false when t is not a literal the reader knows. */
static bool literal_bytes(const token *t, bool neg, size_t size, char klass, unsigned char *out)
{
    char buf[64];
    if (t->kind != T_NUMBER || t->n >= sizeof buf || klass == 'h')
        return false;
    memcpy(buf, t->s, t->n);
    buf[t->n] = '\0';
    /* 0f and 8 hex digits, 0d and 16: a float's bits */
    if (buf[0] == '0' && (buf[1] == 'f' || buf[1] == 'F' || buf[1] == 'd' || buf[1] == 'D')) {
        size_t digits = buf[1] == 'f' || buf[1] == 'F' ? 8 : 16;
        char *end;
        uint64_t bits = strtoull(buf + 2, &end, 16);
        if (*end != '\0' || strlen(buf + 2) != digits || digits / 2 != size)
            return false;
        if (neg)
            bits ^= UINT64_C(1) << (digits * 4 - 1);
        if (size == 4) {
            uint32_t b = (uint32_t)bits;
            memcpy(out, &b, 4);
        } else {
            memcpy(out, &bits, 8);
        }
        return true;
    }
    bool decimal_float = strpbrk(buf, ".eE") != NULL && !(buf[0] == '0' && (buf[1] == 'x' || buf[1] == 'X'));
    if (klass == 'f') {
        double d;
        uint64_t u;
        if (decimal_float) {
            char *end;
            d = strtod(buf, &end);
            if (*end != '\0')
                return false;
        } else if (parse_uint(t, &u)) {
            d = (double)u;
        } else {
            return false;
        }
        if (neg)
            d = -d;
        if (size == 4) {
            float f = (float)d;
            memcpy(out, &f, 4);
        } else {
            memcpy(out, &d, 8);
        }
        return true;
    }
    uint64_t u;
    if (decimal_float || !parse_uint(t, &u))
        return false;
    if (neg)
        u = (uint64_t)0 - u;
    switch (size) {
    case 1: { uint8_t v = (uint8_t)u; memcpy(out, &v, 1); break; }
    case 2: { uint16_t v = (uint16_t)u; memcpy(out, &v, 2); break; }
    case 4: { uint32_t v = (uint32_t)u; memcpy(out, &v, 4); break; }
    default: memcpy(out, &u, 8); break;
    }
    return true;
}

/* One variable declaration statement, tokens [i, end) (end is its ';'),
 * starting at its first qualifier.  keep: whether to record the
 * variables (module-scope .global / .const); *total adds their sizes. */
static int declaration(ptx *x, size_t i, size_t end, bool keep, bool is_const, size_t *total)
{
    gm_sim_parse *p = x->p;
    token *t = x->t;
    size_t vec = 1, tsize = 0;
    char klass = 'i';
    int line = t[i].line;
    for (; i < end && tsize == 0; i++) {
        if (tok_is(&t[i], ".align")) {
            uint64_t a;
            if (i + 1 >= end || !parse_uint(&t[i + 1], &a))
                return gm_sim_fail(p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: .align needs a number",
                                   t[i].line);
            i++;
        } else if (tok_is(&t[i], ".v2")) {
            vec = 2;
        } else if (tok_is(&t[i], ".v4")) {
            vec = 4;
        } else if (tok_is(&t[i], ".v8")) {
            vec = 8;
        } else if (tok_punct(&t[i], '[')) { /* .const[2]: an old constant bank */
            while (i < end && !tok_punct(&t[i], ']'))
                i++;
        } else if (t[i].kind == T_WORD && t[i].s[0] == '.') {
            tsize = type_size(&t[i], &klass);
        } else {
            break;
        }
    }
    if (tsize == 0)
        return gm_sim_fail(p, GM_CUDA_ERROR_INVALID_PTX,
                           "ptx line %d: error: variable declaration without a known type", line);
    for (;;) {
        if (i >= end || t[i].kind != T_WORD || t[i].s[0] == '.')
            return gm_sim_fail(p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: expected a variable name", line);
        const token *name = &t[i++];
        line = name->line;
        uint64_t dims[8];
        int ndim = 0, open = -1;
        while (i < end && tok_punct(&t[i], '[')) {
            if (ndim == 8)
                return gm_sim_fail(p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: too many dimensions", line);
            if (i + 1 < end && tok_punct(&t[i + 1], ']')) {
                if (open >= 0 || ndim > 0)
                    return gm_sim_fail(p, GM_CUDA_ERROR_INVALID_PTX,
                                       "ptx line %d: error: only the first dimension of '%.*s' may be omitted", line,
                                       (int)name->n, name->s);
                open = ndim;
                dims[ndim++] = 0;
                i += 2;
            } else if (i + 2 < end && parse_uint(&t[i + 1], &dims[ndim]) && tok_punct(&t[i + 2], ']') &&
                       dims[ndim] > 0) {
                ndim++;
                i += 3;
            } else {
                return gm_sim_fail(p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: bad array size of '%.*s'", line,
                                   (int)name->n, name->s);
            }
        }
        if (i < end && tok_punct(&t[i], '<'))
            return gm_sim_fail(p, GM_CUDA_ERROR_INVALID_PTX,
                               "ptx line %d: error: parameterized names are for registers, not '%.*s'", line,
                               (int)name->n, name->s);
        /* the initializer: tokens up to the next ',' outside braces */
        size_t init_begin = 0, init_end = 0, count = 0;
        if (i < end && tok_punct(&t[i], '=')) {
            int depth = 0;
            init_begin = ++i;
            for (; i < end; i++) {
                if (tok_punct(&t[i], '{'))
                    depth++;
                else if (tok_punct(&t[i], '}'))
                    depth--;
                else if (depth == 0 && tok_punct(&t[i], ','))
                    break;
                else if (t[i].kind == T_NUMBER ||
                         (t[i].kind == T_WORD && !(i + 1 < end && tok_punct(&t[i + 1], '('))))
                    count++;
            }
            init_end = i;
            if (depth != 0)
                return gm_sim_fail(p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: unbalanced braces in the "
                                   "initializer of '%.*s'", line, (int)name->n, name->s);
        }
        /* the size */
        uint64_t elems = vec, inner = vec;
        for (int d = 0; d < ndim; d++) {
            if (d != open && __builtin_mul_overflow(inner, dims[d], &inner))
                return gm_sim_fail(p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: '%.*s' is too large", line,
                                   (int)name->n, name->s);
        }
        if (open >= 0) {
            if (init_begin == 0)
                return gm_sim_fail(p, GM_CUDA_ERROR_INVALID_PTX,
                                   "ptx line %d: error: '%.*s[]' needs an initializer or .extern", line, (int)name->n,
                                   name->s);
            dims[open] = (count + inner - 1) / inner;
            if (dims[open] == 0)
                dims[open] = 1;
        }
        for (int d = 0; d < ndim; d++)
            if (__builtin_mul_overflow(elems, dims[d], &elems))
                return gm_sim_fail(p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: '%.*s' is too large", line,
                                   (int)name->n, name->s);
        uint64_t bytes;
        if (__builtin_mul_overflow(elems, (uint64_t)tsize, &bytes) || bytes > (UINT64_C(1) << 40))
            return gm_sim_fail(p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: '%.*s' is too large", line,
                               (int)name->n, name->s);
        if (count > elems)
            return gm_sim_fail(p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: too many initializers for '%.*s'",
                               line, (int)name->n, name->s);
        *total += (size_t)bytes;
        if (keep) {
            if (gm_sim_name_taken(p->img, name->s, name->n))
                return gm_sim_fail(p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: duplicate definition of '%.*s'",
                                   line, (int)name->n, name->s);
            unsigned char *init = NULL;
            if (count > 0) {
                init = calloc(1, (size_t)bytes);
                if (init == NULL)
                    return GM_CUDA_ERROR_OUT_OF_MEMORY;
                size_t k = 0;
                for (size_t j = init_begin; j < init_end && k < elems; j++) {
                    if (t[j].kind == T_NUMBER ||
                        (t[j].kind == T_WORD && !(j + 1 < init_end && tok_punct(&t[j + 1], '(')))) {
                        bool neg = j > init_begin && tok_punct(&t[j - 1], '-');
                        /* what the reader cannot evaluate (addresses of
                         * symbols, generic()) stays zero */
                        literal_bytes(&t[j], neg, tsize, klass, init + k * tsize);
                        k++;
                    }
                }
            }
            int rc = gm_sim_add_var(p, name->s, name->n, (size_t)bytes, is_const, init);
            if (rc != GM_CUDA_SUCCESS)
                return rc;
        }
        if (i >= end)
            return GM_CUDA_SUCCESS;
        if (!tok_punct(&t[i], ','))
            return gm_sim_fail(p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: unexpected '%.*s' in the "
                               "declaration of '%.*s'", t[i].line, (int)t[i].n, t[i].s, (int)name->n, name->s);
        i++;
    }
}

/* Index of the '}' closing the '{' at open; x->n when there is none. */
static size_t block_end(const ptx *x, size_t open)
{
    int depth = 0;
    for (size_t i = open; i < x->n; i++) {
        if (tok_punct(&x->t[i], '{'))
            depth++;
        else if (tok_punct(&x->t[i], '}') && --depth == 0)
            return i;
    }
    return x->n;
}

/* A kernel body (tokens between its braces): its static .shared and .local bytes. */
static int body_sizes(ptx *x, size_t begin, size_t end, size_t *shared_bytes, size_t *local_bytes)
{
    for (size_t i = begin; i < end; i++) {
        bool shared = tok_is(&x->t[i], ".shared"), local = tok_is(&x->t[i], ".local");
        if (!shared && !local)
            continue;
        size_t stop = i;
        while (stop < end && !tok_punct(&x->t[stop], ';'))
            stop++;
        /* .extern .shared is the dynamic shared memory of the launch */
        bool dynamic = i > begin && tok_is(&x->t[i - 1], ".extern");
        if (!dynamic) {
            int rc = declaration(x, i + 1, stop, false, false, shared ? shared_bytes : local_bytes);
            if (rc != GM_CUDA_SUCCESS)
                return rc;
        }
        i = stop;
    }
    return GM_CUDA_SUCCESS;
}

/* Tokens of the rest of a line-terminated directive (.target, .file, ...). */
static size_t line_end(const ptx *x, size_t i)
{
    int line = x->t[i].line;
    while (i < x->n && x->t[i].line == line)
        i++;
    return i;
}

int gm_sim_parse_ptx(gm_sim_parse *p, const char *text, size_t len)
{
    ptx x = {.p = p};
    int rc = tokenize(&x, text, len);
    if (rc == GM_CUDA_SUCCESS && (x.n == 0 || !tok_is(&x.t[0], ".version")))
        rc = gm_sim_fail(p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: not PTX: it must begin with a .version "
                         "directive", x.n > 0 ? x.t[0].line : 1);
    p->img->format = GM_SIM_IMAGE_PTX;
    bool target = false;
    size_t i = 0;
    while (rc == GM_CUDA_SUCCESS && i < x.n) {
        token *t = &x.t[i];
        if (tok_is(t, ".version")) {
            if (i + 1 >= x.n || x.t[i + 1].kind != T_NUMBER)
                rc = gm_sim_fail(p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: .version needs a number", t->line);
            i += 2;
            continue;
        }
        if (tok_is(t, ".target")) {
            size_t stop = line_end(&x, i);
            for (size_t j = i + 1; j < stop; j++) {
                if (x.t[j].kind == T_WORD && x.t[j].n > 3 && memcmp(x.t[j].s, "sm_", 3) == 0) {
                    int sm = 0; /* the token is not NUL-terminated */
                    for (size_t k = 3; k < x.t[j].n && isdigit((unsigned char)x.t[j].s[k]) && sm < 10000; k++)
                        sm = sm * 10 + (x.t[j].s[k] - '0');
                    p->img->ptx_target = sm;
                    target = true;
                }
            }
            if (!target)
                rc = gm_sim_fail(p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: .target names no sm_XX", t->line);
            i = stop;
            continue;
        }
        if (tok_is(t, ".address_size") || tok_is(t, ".file") || tok_is(t, ".loc")) {
            i = line_end(&x, i);
            continue;
        }
        if (tok_is(t, ".section")) { /* debug sections: .section .debug_x { ... } */
            size_t j = i;
            while (j < x.n && !tok_punct(&x.t[j], '{'))
                j++;
            i = j < x.n ? block_end(&x, j) + 1 : x.n;
            continue;
        }
        if (t->kind != T_WORD || t->s[0] != '.') {
            rc = gm_sim_fail(p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: unexpected '%.*s'", t->line, (int)t->n,
                             t->s);
            break;
        }
        /* a statement: up to ';' or a body's '{' (outside parentheses and
         * initializers) */
        size_t j = i;
        int paren = 0, brace = 0;
        bool init = false, entry = false, func = false, ext = false, global = false, cnst = false;
        const token *name = NULL;
        for (; j < x.n; j++) {
            token *u = &x.t[j];
            if (tok_punct(u, '('))
                paren++;
            else if (tok_punct(u, ')'))
                paren--;
            else if (paren == 0 && tok_punct(u, '='))
                init = true;
            else if (init && tok_punct(u, '{'))
                brace++;
            else if (init && tok_punct(u, '}'))
                brace--;
            else if (paren == 0 && brace == 0 && (tok_punct(u, ';') || tok_punct(u, '{')))
                break;
            else if (paren == 0 && !init && tok_is(u, ".entry"))
                entry = true;
            else if (paren == 0 && !init && tok_is(u, ".func"))
                func = true;
            else if (paren == 0 && !init && tok_is(u, ".extern"))
                ext = true;
            else if (paren == 0 && !init && tok_is(u, ".global"))
                global = true;
            else if (paren == 0 && !init && tok_is(u, ".const"))
                cnst = true;
            if (entry && name == NULL && u->kind == T_WORD && u->s[0] != '.')
                name = u;
        }
        if (j >= x.n) {
            rc = gm_sim_fail(p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: unexpected end of input: the "
                             "statement has no ';' or body", t->line);
            break;
        }
        if (entry || func) {
            size_t body_end = j;
            if (tok_punct(&x.t[j], '{')) {
                body_end = block_end(&x, j);
                if (body_end >= x.n) {
                    rc = gm_sim_fail(p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: unexpected end of input: "
                                     "the body has no closing '}'", x.t[j].line);
                    break;
                }
            }
            if (entry && name == NULL) {
                rc = gm_sim_fail(p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: .entry without a name", t->line);
                break;
            }
            if (entry && !ext && tok_punct(&x.t[j], '{')) {
                size_t shared_bytes = 0, local_bytes = 0;
                if (gm_sim_name_taken(p->img, name->s, name->n))
                    rc = gm_sim_fail(p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: duplicate definition of '%.*s'",
                                     name->line, (int)name->n, name->s);
                if (rc == GM_CUDA_SUCCESS)
                    rc = body_sizes(&x, j + 1, body_end, &shared_bytes, &local_bytes);
                if (rc == GM_CUDA_SUCCESS)
                    rc = gm_sim_add_func(p, name->s, name->n, shared_bytes, local_bytes, 0);
            }
            i = body_end + 1;
            continue;
        }
        if (tok_punct(&x.t[j], '{')) {
            rc = gm_sim_fail(p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: unexpected '{'", x.t[j].line);
            break;
        }
        if ((global || cnst) && !ext) {
            size_t k = i, total = 0;
            while (k < j && !tok_is(&x.t[k], global ? ".global" : ".const"))
                k++;
            rc = declaration(&x, k + 1, j, true, cnst, &total);
        }
        i = j + 1;
    }
    if (rc == GM_CUDA_SUCCESS && !target)
        rc = gm_sim_fail(p, GM_CUDA_ERROR_INVALID_PTX, "ptx: error: no .target directive");
    free(x.t);
    return rc;
}
