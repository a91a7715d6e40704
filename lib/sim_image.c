/*
 * sim_image.c - the simulator's reader of module images: what
 * cuModuleLoadData would find in PTX text, a cubin or a fat binary, so that
 * modules, their kernels and their __device__ / __constant__ variables exist
 * on the simulator (sim.h says what is simulated and what is not).
 *
 * Nothing here compiles or runs code.  The PTX reader knows the module-level
 * grammar only: directives, variable declarations with their sizes and
 * literal initializers, and kernel (.entry) definitions, whose bodies it
 * skips except for the .shared and .local declarations it adds up.
 */
#include "config.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "cuda_abi.h"
#include "sim.h"

/* ------------------------------------------------------------- results -- */

typedef struct parse {
    gm_sim_image *img;
    size_t cap_funcs, cap_vars;
    char *log;
    size_t log_size;
} parse;

static int fail(parse *p, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(parse *p, int rc, const char *fmt, ...)
{
    if (p->log != NULL && p->log_size > 0) {
        int n = snprintf(p->log, p->log_size, "gpumem sim: ");
        if (n >= 0 && (size_t)n < p->log_size) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(p->log + n, p->log_size - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return rc;
}

static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d != NULL) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

static bool name_taken(const gm_sim_image *img, const char *name, size_t n)
{
    for (size_t i = 0; i < img->nfuncs; i++)
        if (strlen(img->funcs[i].name) == n && memcmp(img->funcs[i].name, name, n) == 0)
            return true;
    for (size_t i = 0; i < img->nvars; i++)
        if (strlen(img->vars[i].name) == n && memcmp(img->vars[i].name, name, n) == 0)
            return true;
    return false;
}

static int add_func(parse *p, const char *name, size_t n, size_t shared_bytes, size_t local_bytes, int num_regs)
{
    gm_sim_image *img = p->img;
    if (img->nfuncs == p->cap_funcs) {
        size_t cap = p->cap_funcs ? 2 * p->cap_funcs : 8;
        gm_sim_image_func *v = realloc(img->funcs, cap * sizeof *v);
        if (v == NULL)
            return GM_CUDA_ERROR_OUT_OF_MEMORY;
        img->funcs = v;
        p->cap_funcs = cap;
    }
    char *copy = dup_n(name, n);
    if (copy == NULL)
        return GM_CUDA_ERROR_OUT_OF_MEMORY;
    img->funcs[img->nfuncs++] = (gm_sim_image_func){copy, shared_bytes, local_bytes, num_regs};
    return GM_CUDA_SUCCESS;
}

/* Takes init (may be NULL) over. */
static int add_var(parse *p, const char *name, size_t n, size_t size, bool is_const, unsigned char *init)
{
    gm_sim_image *img = p->img;
    if (img->nvars == p->cap_vars) {
        size_t cap = p->cap_vars ? 2 * p->cap_vars : 8;
        gm_sim_image_var *v = realloc(img->vars, cap * sizeof *v);
        if (v == NULL) {
            free(init);
            return GM_CUDA_ERROR_OUT_OF_MEMORY;
        }
        img->vars = v;
        p->cap_vars = cap;
    }
    char *copy = dup_n(name, n);
    if (copy == NULL) {
        free(init);
        return GM_CUDA_ERROR_OUT_OF_MEMORY;
    }
    img->vars[img->nvars++] = (gm_sim_image_var){copy, size, is_const, init};
    if (is_const)
        img->const_bytes += size;
    return GM_CUDA_SUCCESS;
}

void gm_sim_image_free(gm_sim_image *img)
{
    for (size_t i = 0; i < img->nfuncs; i++)
        free(img->funcs[i].name);
    for (size_t i = 0; i < img->nvars; i++) {
        free(img->vars[i].name);
        free(img->vars[i].init);
    }
    free(img->funcs);
    free(img->vars);
    memset(img, 0, sizeof *img);
}

/* ----------------------------------------------------------------- PTX -- */

enum { T_WORD, T_NUMBER, T_STRING, T_PUNCT };

typedef struct token {
    const char *s;
    size_t n;
    int line;
    int kind;
} token;

typedef struct ptx {
    parse *p;
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
                return fail(x->p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: unterminated comment", start);
            i += 2;
        } else if (c == '"') {
            size_t j = i + 1;
            while (j < len && text[j] != '"' && text[j] != '\n')
                j++;
            if (j >= len || text[j] != '"')
                return fail(x->p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: unterminated string", line);
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
            return fail(x->p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: byte 0x%02x is not PTX text",
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
    parse *p = x->p;
    token *t = x->t;
    size_t vec = 1, tsize = 0;
    char klass = 'i';
    int line = t[i].line;
    for (; i < end && tsize == 0; i++) {
        if (tok_is(&t[i], ".align")) {
            uint64_t a;
            if (i + 1 >= end || !parse_uint(&t[i + 1], &a))
                return fail(p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: .align needs a number", t[i].line);
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
        return fail(p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: variable declaration without a known type",
                    line);
    for (;;) {
        if (i >= end || t[i].kind != T_WORD || t[i].s[0] == '.')
            return fail(p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: expected a variable name", line);
        const token *name = &t[i++];
        line = name->line;
        uint64_t dims[8];
        int ndim = 0, open = -1;
        while (i < end && tok_punct(&t[i], '[')) {
            if (ndim == 8)
                return fail(p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: too many dimensions", line);
            if (i + 1 < end && tok_punct(&t[i + 1], ']')) {
                if (open >= 0 || ndim > 0)
                    return fail(p, GM_CUDA_ERROR_INVALID_PTX,
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
                return fail(p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: bad array size of '%.*s'", line,
                            (int)name->n, name->s);
            }
        }
        if (i < end && tok_punct(&t[i], '<'))
            return fail(p, GM_CUDA_ERROR_INVALID_PTX,
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
                return fail(p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: unbalanced braces in the "
                            "initializer of '%.*s'", line, (int)name->n, name->s);
        }
        /* the size */
        uint64_t elems = vec, inner = vec;
        for (int d = 0; d < ndim; d++) {
            if (d != open && __builtin_mul_overflow(inner, dims[d], &inner))
                return fail(p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: '%.*s' is too large", line,
                            (int)name->n, name->s);
        }
        if (open >= 0) {
            if (init_begin == 0)
                return fail(p, GM_CUDA_ERROR_INVALID_PTX,
                            "ptx line %d: error: '%.*s[]' needs an initializer or .extern", line, (int)name->n,
                            name->s);
            dims[open] = (count + inner - 1) / inner;
            if (dims[open] == 0)
                dims[open] = 1;
        }
        for (int d = 0; d < ndim; d++)
            if (__builtin_mul_overflow(elems, dims[d], &elems))
                return fail(p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: '%.*s' is too large", line,
                            (int)name->n, name->s);
        uint64_t bytes;
        if (__builtin_mul_overflow(elems, (uint64_t)tsize, &bytes) || bytes > (UINT64_C(1) << 40))
            return fail(p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: '%.*s' is too large", line,
                        (int)name->n, name->s);
        if (count > elems)
            return fail(p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: too many initializers for '%.*s'",
                        line, (int)name->n, name->s);
        *total += (size_t)bytes;
        if (keep) {
            if (name_taken(p->img, name->s, name->n))
                return fail(p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: duplicate definition of '%.*s'",
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
            int rc = add_var(p, name->s, name->n, (size_t)bytes, is_const, init);
            if (rc != GM_CUDA_SUCCESS)
                return rc;
        }
        if (i >= end)
            return GM_CUDA_SUCCESS;
        if (!tok_punct(&t[i], ','))
            return fail(p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: unexpected '%.*s' in the "
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

static int parse_ptx(parse *p, const char *text, size_t len)
{
    ptx x = {.p = p};
    int rc = tokenize(&x, text, len);
    if (rc == GM_CUDA_SUCCESS && (x.n == 0 || !tok_is(&x.t[0], ".version")))
        rc = fail(p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: not PTX: it must begin with a .version "
                  "directive", x.n > 0 ? x.t[0].line : 1);
    p->img->format = GM_SIM_IMAGE_PTX;
    bool target = false;
    size_t i = 0;
    while (rc == GM_CUDA_SUCCESS && i < x.n) {
        token *t = &x.t[i];
        if (tok_is(t, ".version")) {
            if (i + 1 >= x.n || x.t[i + 1].kind != T_NUMBER)
                rc = fail(p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: .version needs a number", t->line);
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
                rc = fail(p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: .target names no sm_XX", t->line);
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
            rc = fail(p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: unexpected '%.*s'", t->line, (int)t->n,
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
            rc = fail(p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: unexpected end of input: the "
                      "statement has no ';' or body", t->line);
            break;
        }
        if (entry || func) {
            size_t body_end = j;
            if (tok_punct(&x.t[j], '{')) {
                body_end = block_end(&x, j);
                if (body_end >= x.n) {
                    rc = fail(p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: unexpected end of input: "
                              "the body has no closing '}'", x.t[j].line);
                    break;
                }
            }
            if (entry && name == NULL) {
                rc = fail(p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: .entry without a name", t->line);
                break;
            }
            if (entry && !ext && tok_punct(&x.t[j], '{')) {
                size_t shared_bytes = 0, local_bytes = 0;
                if (name_taken(p->img, name->s, name->n))
                    rc = fail(p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: duplicate definition of '%.*s'",
                              name->line, (int)name->n, name->s);
                if (rc == GM_CUDA_SUCCESS)
                    rc = body_sizes(&x, j + 1, body_end, &shared_bytes, &local_bytes);
                if (rc == GM_CUDA_SUCCESS)
                    rc = add_func(p, name->s, name->n, shared_bytes, local_bytes, 0);
            }
            i = body_end + 1;
            continue;
        }
        if (tok_punct(&x.t[j], '{')) {
            rc = fail(p, GM_CUDA_ERROR_INVALID_PTX, "ptx line %d: error: unexpected '{'", x.t[j].line);
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
        rc = fail(p, GM_CUDA_ERROR_INVALID_PTX, "ptx: error: no .target directive");
    free(x.t);
    return rc;
}

/* ----------------------------------------------------------------- ELF -- */

enum {
    SHT_SYMTAB = 2,
    SHT_NOBITS = 8,
    STT_OBJECT = 1,
    STT_FUNC = 2,
    STB_GLOBAL = 1,
    STB_WEAK = 2,
    SHN_LORESERVE = 0xff00,
    SHDR_SIZE = 64,
    SYM_SIZE = 24
};

typedef struct shdr {
    uint32_t name, type;
    uint64_t offset, size;
    uint32_t link;
} shdr;

static shdr section(const unsigned char *b, uint64_t shoff, unsigned i)
{
    const unsigned char *s = b + shoff + (uint64_t)i * SHDR_SIZE;
    return (shdr){rd32(s), rd32(s + 4), rd64(s + 24), rd64(s + 32), rd32(s + 40)};
}

/* The NUL-terminated string at off of section str, or NULL. */
static const char *elf_string(const unsigned char *b, size_t size, const shdr *str, uint64_t off)
{
    if (str->type == SHT_NOBITS || str->offset > size || str->size > size - str->offset || off >= str->size)
        return NULL;
    const char *s = (const char *)b + str->offset + off;
    return memchr(s, '\0', str->size - off) != NULL ? s : NULL;
}

static bool is_elf(const void *image, size_t size)
{
    const unsigned char *b = image;
    return size >= 4 && b[0] == 0x7f && b[1] == 'E' && b[2] == 'L' && b[3] == 'F';
}

/* EIATTR codes of a cubin's .nv.info: per-kernel values keyed by symbol index. */
enum { EIFMT_SVAL = 0x04, EIATTR_FRAME_SIZE = 0x11, EIATTR_REGCOUNT = 0x2f };

/* Reads the register counts and frame sizes of .nv.info into the kernels
 * whose symbol indices are in syms (img->funcs[i] is symbol syms[i]). */
static void read_nv_info(gm_sim_image *img, const uint64_t *syms, const unsigned char *b, const shdr *info)
{
    const unsigned char *q = b + info->offset, *end = q + info->size;
    while (end - q >= 4) {
        unsigned fmt = q[0], attr = q[1];
        size_t len = fmt == EIFMT_SVAL ? rd16(q + 2) : 0;
        if ((size_t)(end - q - 4) < len)
            break;
        if (fmt == EIFMT_SVAL && len == 8 && (attr == EIATTR_REGCOUNT || attr == EIATTR_FRAME_SIZE)) {
            uint32_t sym = rd32(q + 4), value = rd32(q + 8);
            for (size_t i = 0; i < img->nfuncs; i++) {
                if (syms[i] != sym)
                    continue;
                if (attr == EIATTR_REGCOUNT)
                    img->funcs[i].num_regs = value > 255 ? 255 : (int)value;
                else
                    img->funcs[i].local_bytes = value;
            }
        }
        q += 4 + len;
    }
}

static int parse_elf(parse *p, const unsigned char *b, size_t size, const gm_sim_arch *arch)
{
    p->img->format = GM_SIM_IMAGE_CUBIN;
    if (size < 64 || b[4] != 2 /* ELFCLASS64 */ || b[5] != 1 /* little-endian */)
        return fail(p, GM_CUDA_ERROR_INVALID_IMAGE, "cubin: not a 64-bit little-endian ELF file");
    if (rd16(b + 18) != GM_ELF_EM_CUDA)
        return fail(p, GM_CUDA_ERROR_INVALID_IMAGE, "cubin: ELF machine %u is not EM_CUDA (%d)", rd16(b + 18),
                    GM_ELF_EM_CUDA);
    uint64_t shoff = rd64(b + 40);
    unsigned shentsize = rd16(b + 58), shnum = rd16(b + 60), shstrndx = rd16(b + 62);
    if (shentsize != SHDR_SIZE || shnum == 0 || shstrndx >= shnum || shoff > size ||
        (uint64_t)shnum * SHDR_SIZE > size - shoff)
        return fail(p, GM_CUDA_ERROR_INVALID_IMAGE, "cubin: bad section header table");
    for (unsigned i = 1; i < shnum; i++) {
        shdr s = section(b, shoff, i);
        if (s.type != SHT_NOBITS && (s.offset > size || s.size > size - s.offset))
            return fail(p, GM_CUDA_ERROR_INVALID_IMAGE, "cubin: section %u lies outside the image", i);
    }
    shdr shstr = section(b, shoff, shstrndx);
    /* sm_80 and later reserve shared memory per block for the system; a
     * cubin that says so counts it in its kernels' .nv.shared.<name>
     * sections, and the driver leaves it out of SHARED_SIZE_BYTES */
    size_t reserved = 0;
    for (unsigned j = 1; j < shnum; j++) {
        shdr sh = section(b, shoff, j);
        const char *n = elf_string(b, size, &shstr, sh.name);
        if (n != NULL && strncmp(n, ".nv.shared.reserved.", 20) == 0)
            reserved = (size_t)arch->smem_reserved;
    }
    uint64_t *syms = NULL; /* the symbol index of each kernel */
    bool symtab = false;
    int rc = GM_CUDA_SUCCESS;
    for (unsigned i = 1; i < shnum && rc == GM_CUDA_SUCCESS; i++) {
        shdr st = section(b, shoff, i);
        if (st.type != SHT_SYMTAB)
            continue;
        if (symtab || st.link >= shnum || st.size % SYM_SIZE != 0) {
            rc = fail(p, GM_CUDA_ERROR_INVALID_IMAGE, "cubin: bad or second symbol table");
            break;
        }
        symtab = true;
        shdr str = section(b, shoff, st.link);
        if ((syms = calloc((size_t)(st.size / SYM_SIZE) + 1, sizeof *syms)) == NULL) {
            rc = GM_CUDA_ERROR_OUT_OF_MEMORY;
            break;
        }
        for (uint64_t k = 1; k < st.size / SYM_SIZE && rc == GM_CUDA_SUCCESS; k++) {
            const unsigned char *sym = b + st.offset + k * SYM_SIZE;
            unsigned type = sym[4] & 0xf, bind = sym[4] >> 4, shndx = rd16(sym + 6);
            uint64_t value = rd64(sym + 8), sym_size = rd64(sym + 16);
            if ((type != STT_FUNC && type != STT_OBJECT) || shndx == 0 || shndx >= SHN_LORESERVE)
                continue;
            const char *name = elf_string(b, size, &str, rd32(sym));
            if (shndx >= shnum || name == NULL || name[0] == '\0') {
                rc = fail(p, GM_CUDA_ERROR_INVALID_IMAGE, "cubin: symbol %llu has a bad name or section",
                          (unsigned long long)k);
                break;
            }
            shdr home = section(b, shoff, shndx);
            const char *sname = elf_string(b, size, &shstr, home.name);
            if (sname == NULL) {
                rc = fail(p, GM_CUDA_ERROR_INVALID_IMAGE, "cubin: section %u has a bad name", shndx);
                break;
            }
            if (type == STT_FUNC && (bind == STB_GLOBAL || bind == STB_WEAK)) {
                /* a kernel's static shared memory is its .nv.shared.<name> section */
                size_t shared_bytes = 0;
                for (unsigned j = 1; j < shnum; j++) {
                    shdr sh = section(b, shoff, j);
                    const char *n = elf_string(b, size, &shstr, sh.name);
                    if (n != NULL && strncmp(n, ".nv.shared.", 11) == 0 && strcmp(n + 11, name) == 0)
                        shared_bytes = sh.size > reserved ? (size_t)(sh.size - reserved) : 0;
                }
                if (name_taken(p->img, name, strlen(name)))
                    continue;
                syms[p->img->nfuncs] = k;
                rc = add_func(p, name, strlen(name), shared_bytes, 0, 0);
            } else if (type == STT_OBJECT && (strncmp(sname, ".nv.constant", 12) == 0 ||
                                              strncmp(sname, ".nv.global", 10) == 0)) {
                if (sym_size > (UINT64_C(1) << 40)) {
                    rc = fail(p, GM_CUDA_ERROR_INVALID_IMAGE, "cubin: symbol '%s' is too large", name);
                    break;
                }
                if (name_taken(p->img, name, strlen(name)) || sym_size == 0)
                    continue;
                unsigned char *init = NULL;
                if (home.type != SHT_NOBITS && value <= home.size && sym_size <= home.size - value) {
                    if ((init = malloc((size_t)sym_size)) == NULL) {
                        rc = GM_CUDA_ERROR_OUT_OF_MEMORY;
                        break;
                    }
                    memcpy(init, b + home.offset + value, (size_t)sym_size);
                }
                rc = add_var(p, name, strlen(name), (size_t)sym_size, sname[4] == 'c', init);
            }
        }
    }
    if (rc == GM_CUDA_SUCCESS && !symtab)
        rc = fail(p, GM_CUDA_ERROR_INVALID_IMAGE, "cubin: no symbol table");
    /* registers and frame sizes: .nv.info */
    for (unsigned j = 1; rc == GM_CUDA_SUCCESS && j < shnum; j++) {
        shdr sh = section(b, shoff, j);
        const char *n = elf_string(b, size, &shstr, sh.name);
        if (n != NULL && strcmp(n, ".nv.info") == 0 && sh.type != SHT_NOBITS)
            read_nv_info(p->img, syms, b, &sh);
    }
    free(syms);
    return rc;
}

/* -------------------------------------------------------------- fatbin -- */

enum { FAT_PTX = 1, FAT_ELF = 2, FAT_HEADER = 16, FAT_ENTRY = 64 };
#define FAT_COMPRESSED (UINT64_C(0x2000) | UINT64_C(0x8000))

static int parse_ptx_bytes(parse *p, const unsigned char *b, size_t size)
{
    const unsigned char *nul = memchr(b, '\0', size);
    return parse_ptx(p, (const char *)b, nul != NULL ? (size_t)(nul - b) : size);
}

static int parse_fatbin(parse *p, const unsigned char *b, size_t size, const gm_sim_arch *arch)
{
    if (size < FAT_HEADER)
        return fail(p, GM_CUDA_ERROR_INVALID_IMAGE, "fatbin: shorter than its header");
    uint64_t hsize = rd16(b + 6), fat = rd64(b + 8);
    if (rd16(b + 4) != 1 || hsize < FAT_HEADER || hsize > size || fat > size - hsize)
        return fail(p, GM_CUDA_ERROR_INVALID_IMAGE, "fatbin: bad header (version %u, header %llu bytes, "
                    "%llu bytes of entries, image %zu bytes)", rd16(b + 4), (unsigned long long)hsize,
                    (unsigned long long)fat, size);
    int cc = arch->major * 10 + arch->minor;
    const unsigned char *best = NULL;
    uint64_t best_size = 0;
    unsigned best_kind = 0, best_arch = 0, entries = 0, compressed = 0;
    uint64_t off = hsize, end = hsize + fat;
    while (off < end) {
        if (end - off < FAT_ENTRY)
            return fail(p, GM_CUDA_ERROR_INVALID_IMAGE, "fatbin: truncated entry at byte %llu",
                        (unsigned long long)off);
        const unsigned char *e = b + off;
        unsigned kind = rd16(e), earch = rd32(e + 28);
        uint64_t ehdr = rd32(e + 4), payload = rd64(e + 8), flags = rd64(e + 40);
        if (ehdr < FAT_ENTRY || ehdr > end - off || payload > end - off - ehdr)
            return fail(p, GM_CUDA_ERROR_INVALID_IMAGE, "fatbin: entry at byte %llu lies outside the image",
                        (unsigned long long)off);
        entries++;
        if (flags & FAT_COMPRESSED) {
            compressed++;
        } else if (kind == FAT_ELF && earch / 10 == (unsigned)arch->major && earch % 10 <= (unsigned)arch->minor) {
            /* a cubin runs on its major version's later minors */
            if (best_kind != FAT_ELF || earch > best_arch) {
                best = e + ehdr, best_size = payload, best_kind = FAT_ELF, best_arch = earch;
            }
        } else if (kind == FAT_PTX && earch <= (unsigned)cc && best_kind != FAT_ELF) {
            /* PTX is compiled for the device by the JIT */
            if (best_kind != FAT_PTX || earch > best_arch)
                best = e + ehdr, best_size = payload, best_kind = FAT_PTX, best_arch = earch;
        }
        off += ehdr + payload;
    }
    if (best_kind == FAT_ELF)
        return parse_elf(p, best, (size_t)best_size, arch);
    if (best_kind == FAT_PTX)
        return parse_ptx_bytes(p, best, (size_t)best_size);
    if (compressed > 0)
        return fail(p, GM_CUDA_ERROR_INVALID_IMAGE, "fatbin: %u of its %u entries are compressed, and the "
                    "simulator does not decompress fat binaries; give it an uncompressed fat binary, or the "
                    "PTX or cubin itself", compressed, entries);
    if (entries > 0)
        return fail(p, GM_CUDA_ERROR_NO_BINARY_FOR_GPU, "fatbin: none of its %u entries is a cubin or PTX "
                    "for %s", entries, arch->name);
    return fail(p, GM_CUDA_ERROR_INVALID_IMAGE, "fatbin: no entries");
}

/* ---------------------------------------------------------------- entry -- */

int gm_sim_image_parse(const void *image, size_t size, const gm_sim_arch *arch, gm_sim_image *out,
                       char *log, size_t log_size)
{
    parse p = {.img = out, .log = log, .log_size = log_size};
    memset(out, 0, sizeof *out);
    if (log != NULL && log_size > 0)
        log[0] = '\0';
    if (image == NULL || size == 0)
        return fail(&p, GM_CUDA_ERROR_INVALID_IMAGE, "empty image");
    const unsigned char *b = image;
    int rc;
    if (size >= 4 && rd32(b) == GM_FATBIN_MAGIC)
        rc = parse_fatbin(&p, b, size, arch);
    else if (size >= 4 && rd32_host(b) == GM_FATBINC_WRAPPER_MAGIC)
        rc = fail(&p, GM_CUDA_ERROR_INVALID_IMAGE, "a fatbin wrapper (__fatBinC_Wrapper_t): pass the fat binary "
                  "it points to");
    else if (is_elf(b, size))
        rc = parse_elf(&p, b, size, arch);
    else
        rc = parse_ptx_bytes(&p, b, size);
    if (rc != GM_CUDA_SUCCESS)
        gm_sim_image_free(out);
    return rc;
}
