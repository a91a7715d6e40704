/*
 * dtype.c - NumPy's dtypes: the builtins in both byte orders, raw bytes
 * (|Vn), records (structured dtypes), the typestr notation of NumPy's array
 * interface, comparison and accessors.  dtype_descr.c reads and writes the
 * descr notation.
 */
#include "config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "dtype_impl.h"
#include "error.h"


/* ---- builtins ------------------------------------------------------------------ */

#define NBUILTIN 14 /* GPUMEM_BOOL .. GPUMEM_COMPLEX128 */

#define BUILTIN(t, k, size, align, ord) \
    {.h = GM_HANDLE_INIT(GM_HANDLE_DTYPE), .type = (t), .order = (size) == 1 ? GPUMEM_BYTEORDER_NA : (ord), \
     .is_static = true, .kind = (k), \
     .depth = 0, .itemsize = (size), .alignment = (align), .nfields = 0, .fields = NULL, .refs = 0}
#define BUILTINS(ord) \
    { \
        BUILTIN(GPUMEM_BOOL, 'b', 1, 1, ord), BUILTIN(GPUMEM_INT8, 'i', 1, 1, ord), \
        BUILTIN(GPUMEM_INT16, 'i', 2, 2, ord), BUILTIN(GPUMEM_INT32, 'i', 4, 4, ord), \
        BUILTIN(GPUMEM_INT64, 'i', 8, 8, ord), BUILTIN(GPUMEM_UINT8, 'u', 1, 1, ord), \
        BUILTIN(GPUMEM_UINT16, 'u', 2, 2, ord), BUILTIN(GPUMEM_UINT32, 'u', 4, 4, ord), \
        BUILTIN(GPUMEM_UINT64, 'u', 8, 8, ord), BUILTIN(GPUMEM_FLOAT16, 'f', 2, 2, ord), \
        BUILTIN(GPUMEM_FLOAT32, 'f', 4, 4, ord), BUILTIN(GPUMEM_FLOAT64, 'f', 8, 8, ord), \
        BUILTIN(GPUMEM_COMPLEX64, 'c', 8, 4, ord), BUILTIN(GPUMEM_COMPLEX128, 'c', 16, 8, ord), \
    }

/* [0]: little-endian, [1]: big-endian.  One-byte types have no byte order;
 * their canonical object is the one in row 0. */
static const struct gpumem_dtype builtins[2][NBUILTIN] = {BUILTINS(GPUMEM_BYTEORDER_LITTLE),
                                                         BUILTINS(GPUMEM_BYTEORDER_BIG)};

static const gpumem_dtype *builtin_get(gpumem_type type, gpumem_byteorder order)
{
    const gpumem_dtype *d = &builtins[0][type];
    if (d->itemsize == 1 || order == GPUMEM_BYTEORDER_LITTLE)
        return d;
    return &builtins[1][type];
}

/* The builtin of a kind and size, or -1 if NumPy's kind has no such size here. */
static int builtin_type(char kind, int64_t size)
{
    for (int t = 0; t < NBUILTIN; t++)
        if (builtins[0][t].kind == kind && (int64_t)builtins[0][t].itemsize == size)
            return t;
    return -1;
}

GPUMEM_API const gpumem_dtype *gpumem_dtype_builtin(gpumem_type type)
{
    if ((unsigned)type >= NBUILTIN) {
        gm_error(GPUMEM_ERROR_INVALID_VALUE,
                 "gpumem_dtype_builtin: %d is not a builtin type (GPUMEM_BOOL to GPUMEM_COMPLEX128)", (int)type);
        return NULL;
    }
    return builtin_get(type, gm_dtype_native_order());
}

/* ---- lifetime ------------------------------------------------------------------ */

const gpumem_dtype *gm_dtype_ref(const gpumem_dtype *d)
{
    if (d != NULL && !d->is_static)
        atomic_fetch_add_explicit(&((gpumem_dtype *)d)->refs, 1, memory_order_relaxed);
    return d;
}

void gm_dtype_unref(const gpumem_dtype *d)
{
    if (d == NULL || d->is_static)
        return;
    gpumem_dtype *m = (gpumem_dtype *)d;
    if (atomic_fetch_sub_explicit(&m->refs, 1, memory_order_release) != 1)
        return;
    /* The last reference: see every other thread's writes before freeing. */
    atomic_thread_fence(memory_order_acquire);
    for (size_t i = 0; i < m->nfields; i++)
        gm_dtype_unref(m->fields[i].dtype);
    gm_handle_free(m);
}

GPUMEM_API gpumem_status gpumem_dtype_retain(const gpumem_dtype *dtype)
{
    GM_CHECK_HANDLE(dtype);
    gm_dtype_ref(dtype);
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_dtype_release(const gpumem_dtype *dtype)
{
    if (dtype == NULL)
        return GPUMEM_OK;
    GM_CHECK_HANDLE(dtype);
    gm_dtype_unref(dtype);
    return GPUMEM_OK;
}

gpumem_status gm_dtype_out_of_memory(const char *what, size_t bytes)
{
    return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory (%zu bytes)", what, bytes);
}

/* ---- messages ------------------------------------------------------------------- */

/* Writes s as a quoted string for a message: quote characters, backslashes
 * and control characters escaped, at most QUOTE_MAX bytes of s (then "...").
 * out has QUOTE_BUF bytes. */
const char *gm_dtype_quoted(char *out, const char *s, char quote)
{
    size_t n = 0;
    out[n++] = quote;
    for (size_t i = 0; s[i] != '\0'; i++) {
        unsigned char c = (unsigned char)s[i];
        if (i == QUOTE_MAX) {
            memcpy(out + n, "...", 3);
            n += 3;
            break;
        }
        if (c == (unsigned char)quote || c == '\\') {
            out[n++] = '\\';
            out[n++] = (char)c;
        } else if (c < 0x20 || c == 0x7f) {
            n += (size_t)snprintf(out + n, 5, "\\x%02x", c);
        } else {
            out[n++] = (char)c;
        }
    }
    out[n++] = quote;
    out[n] = '\0';
    return out;
}

/* ---- typestr --------------------------------------------------------------------- */

static gpumem_dtype *void_create(int64_t size)
{
    gpumem_dtype *d = gm_handle_new_zeroed(GM_HANDLE_DTYPE, sizeof *d);
    if (d == NULL)
        return NULL;
    d->type = GPUMEM_VOID;
    d->order = GPUMEM_BYTEORDER_NA;
    d->kind = 'V';
    d->itemsize = (size_t)size;
    d->alignment = 1;
    atomic_init(&d->refs, 1);
    return d;
}

/* Parses a NumPy typestr.  `what` starts every message (the function, and
 * for a descr the field).  Builtins come back static, raw bytes allocated. */
gpumem_status gm_dtype_parse_typestr(const char *what, const char *s, const gpumem_dtype **out)
{
    char q[QUOTE_BUF];
#define BAD(...) gm_error(GPUMEM_ERROR_INVALID_DTYPE, "%s: typestr %s: " __VA_ARGS__)
    if (s[0] == '\0')
        return gm_error(GPUMEM_ERROR_INVALID_DTYPE, "%s: typestr \"\" is empty", what);
    char ord = s[0];
    if (strchr("<>=|", ord) == NULL)
        return BAD("must start with a byte-order character ('<', '>', '=' or '|')", what, gm_dtype_quoted(q, s, '"'));
    char kind = s[1];
    if (kind == '\0')
        return BAD("has no kind character after the byte order", what, gm_dtype_quoted(q, s, '"'));
    if (strchr("biufcV", kind) == NULL) {
        char k[QUOTE_BUF];
        return BAD("unknown kind %s (the kinds are b i u f c V)", what, gm_dtype_quoted(q, s, '"'),
                   gm_dtype_quoted(k, (char[]){kind, '\0'}, '\''));
    }
    const char *p = s + 2;
    if (*p == '\0')
        return BAD("has no item size after the kind '%c'", what, gm_dtype_quoted(q, s, '"'), kind);
    if (*p < '0' || *p > '9')
        return BAD("the item size must be a decimal number of bytes", what, gm_dtype_quoted(q, s, '"'));
    int64_t size = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (size > (MAX_BYTES - (*p - '0')) / 10)
            return BAD("the item size is too large (at most %" PRId64 " bytes)", what, gm_dtype_quoted(q, s, '"'),
                       MAX_BYTES);
        size = size * 10 + (*p - '0');
    }
    if (*p != '\0')
        return BAD("trailing characters after the item size", what, gm_dtype_quoted(q, s, '"'));

    int type = -1;
    if (kind == 'V') {
        if (size < 1)
            return BAD("raw bytes 'V' need a size of at least 1", what, gm_dtype_quoted(q, s, '"'));
    } else {
        type = builtin_type(kind, size);
        if (type < 0) {
            static const char *const sizes[] = {['b'] = "1", ['i'] = "1, 2, 4 or 8", ['u'] = "1, 2, 4 or 8",
                                                ['f'] = "2, 4 or 8", ['c'] = "8 or 16"};
            return BAD("kind '%c' has no %" PRId64 "-byte type (sizes: %s)", what, gm_dtype_quoted(q, s, '"'), kind,
                       size, sizes[(unsigned char)kind]);
        }
    }
    if (ord == '|' && size > 1 && kind != 'V')
        return BAD("'|' (no byte order) is only for one-byte types and raw bytes 'V'; "
                   "a %" PRId64 "-byte type needs '<', '>' or '='",
                   what, gm_dtype_quoted(q, s, '"'), size);
#undef BAD

    if (type >= 0) {
        gpumem_byteorder order = ord == '<'   ? GPUMEM_BYTEORDER_LITTLE
                                 : ord == '>' ? GPUMEM_BYTEORDER_BIG
                                              : gm_dtype_native_order();
        *out = builtin_get((gpumem_type)type, order);
        return GPUMEM_OK;
    }
    gpumem_dtype *v = void_create(size);
    if (v == NULL)
        return gm_dtype_out_of_memory(what, sizeof *v);
    *out = v;
    return GPUMEM_OK;
}

gpumem_status gm_dtype_from_typestr(const char *what, const char *typestr, gpumem_dtype **dtype)
{
    const gpumem_dtype *d;
    gpumem_status st = gm_dtype_parse_typestr(what, typestr, &d);
    if (st == GPUMEM_OK)
        *dtype = (gpumem_dtype *)d; /* static builtins are never written through it */
    return st;
}

GPUMEM_API gpumem_status gpumem_dtype_from_typestr(const char *typestr, gpumem_dtype **dtype)
{
    GM_CHECK_NULL(typestr);
    GM_CHECK_NULL(dtype);
    return gm_dtype_from_typestr(__func__, typestr, dtype);
}

/* The typestr of any dtype; records are raw bytes of their size, as NumPy's
 * dtype.str.  buf has room for 24 bytes. */
void gm_dtype_format_typestr(const gpumem_dtype *d, char *buf)
{
    char ord = d->order == GPUMEM_BYTEORDER_LITTLE ? '<' : d->order == GPUMEM_BYTEORDER_BIG ? '>' : '|';
    snprintf(buf, 24, "%c%c%zu", ord, d->kind, d->itemsize);
}

/* ---- writing into a caller's buffer ----------------------------------------------- */


void gm_dtype_put(gm_dtype_writer *w, const char *s, size_t n)
{
    if (w->len < w->size) {
        size_t room = w->size - w->len;
        memcpy(w->buf + w->len, s, n < room ? n : room);
    }
    w->len += n;
}

void gm_dtype_puts(gm_dtype_writer *w, const char *s)
{
    gm_dtype_put(w, s, strlen(s));
}

/* Ends the string, or fails saying how many bytes it needs; on failure the
 * buffer holds "". */
gpumem_status gm_dtype_finish(gm_dtype_writer *w, const char *what, const char *thing)
{
    if (w->len < w->size) {
        w->buf[w->len] = '\0';
        return GPUMEM_OK;
    }
    if (w->size > 0)
        w->buf[0] = '\0';
    return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: the buffer of %zu bytes is too small: the %s needs %zu bytes",
                    what, w->size, thing, w->len + 1);
}

GPUMEM_API gpumem_status gpumem_dtype_typestr(const gpumem_dtype *dtype, char *buf, size_t size)
{
    GM_CHECK_HANDLE(dtype);
    if (size > 0) /* size 0 asks only for the size needed, as snprintf */
        GM_CHECK_NULL(buf);
    char ts[24];
    gm_dtype_format_typestr(dtype, ts);
    gm_dtype_writer w = {buf, size, 0};
    gm_dtype_puts(&w, ts);
    return gm_dtype_finish(&w, __func__, "typestr");
}

/* ---- records ----------------------------------------------------------------------- */

bool gm_dtype_add_overflows(int64_t a, int64_t b)
{
    return a > MAX_BYTES - b;
}

/* Orders fields by name, for the duplicate check. */
static int by_name(const void *a, const void *b)
{
    const gm_field *x = *(const gm_field *const *)a, *y = *(const gm_field *const *)b;
    return strcmp(x->name, y->name);
}

/* Orders fields by offset, then by end, for the overlap sweep. */
static int by_offset(const void *a, const void *b)
{
    const gm_field *x = *(const gm_field *const *)a, *y = *(const gm_field *const *)b;
    if (x->offset != y->offset)
        return x->offset < y->offset ? -1 : 1;
    int64_t xe = x->offset + x->size, ye = y->offset + y->size;
    return (xe > ye) - (xe < ye);
}

/* Duplicate names and overlapping fields, in O(n log n) so that a descr of
 * many fields cannot make creation quadratic.  Two fields overlap when their
 * byte ranges share a byte, or when an empty field lies strictly inside
 * another one (it would point into that field's bytes). */
static gpumem_status check_fields(const char *what, const gm_field *fields, size_t n)
{
    if (n < 2)
        return GPUMEM_OK;
    const gm_field **order = malloc(n * sizeof *order);
    if (order == NULL)
        return gm_dtype_out_of_memory(what, n * sizeof *order);
    char q1[QUOTE_BUF], q2[QUOTE_BUF];
    gpumem_status st = GPUMEM_OK;
    for (size_t i = 0; i < n; i++)
        order[i] = &fields[i];
    qsort(order, n, sizeof *order, by_name);
    for (size_t i = 1; i < n && st == GPUMEM_OK; i++)
        if (strcmp(order[i - 1]->name, order[i]->name) == 0)
            st = gm_error(GPUMEM_ERROR_INVALID_DTYPE, "%s: field %s: duplicate field name", what,
                          gm_dtype_quoted(q1, order[i]->name, '\''));
    if (st == GPUMEM_OK) {
        qsort(order, n, sizeof *order, by_offset);
        /* Sorted by start, then end: a field overlaps an earlier one exactly
         * when it starts before the furthest end of the earlier non-empty
         * fields (an empty field at the same start sorts first). */
        const gm_field *furthest = NULL;
        for (size_t i = 0; i < n && st == GPUMEM_OK; i++) {
            const gm_field *f = order[i];
            if (furthest != NULL && f->offset < furthest->offset + furthest->size)
                st = gm_error(GPUMEM_ERROR_INVALID_DTYPE,
                              "%s: field %s (bytes %" PRId64 " to %" PRId64 ") overlaps field %s (bytes %" PRId64
                              " to %" PRId64 ")",
                              what, gm_dtype_quoted(q1, f->name, '\''), f->offset, f->offset + f->size,
                              gm_dtype_quoted(q2, furthest->name, '\''), furthest->offset,
                              furthest->offset + furthest->size);
            else if (f->size > 0 &&
                     (furthest == NULL || f->offset + f->size > furthest->offset + furthest->size))
                furthest = f;
        }
    }
    free(order);
    return st;
}

static size_t round_up(size_t n, size_t align)
{
    return (n + align - 1) / align * align;
}

/* Makes a record; `what` starts every message.  On failure nothing is
 * allocated and no reference is taken. */
gpumem_status gm_dtype_record_make(const char *what, const gpumem_field *fields, size_t nfields,
                                   gpumem_record_layout layout, size_t itemsize, const gpumem_dtype **out)
{
    char q[QUOTE_BUF];
    if (layout != GPUMEM_RECORD_PACKED && layout != GPUMEM_RECORD_ALIGNED)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE,
                        "%s: layout %d is neither GPUMEM_RECORD_PACKED nor GPUMEM_RECORD_ALIGNED", what, (int)layout);
    /* Bounds the block below: fields and shapes take at most a quarter of
     * the address space, names another quarter. */
    if (nfields > SIZE_MAX / 4 / (sizeof(gm_field) + GM_DTYPE_MAX_NDIM * sizeof(int64_t)))
        return gm_error(GPUMEM_ERROR_INVALID_DTYPE, "%s: %zu fields are too many", what, nfields);
    bool aligned = layout == GPUMEM_RECORD_ALIGNED;

    /* First pass: what must hold before anything is computed, and the room
     * the names and shapes take. */
    size_t names_len = 0, extents = 0;
    int depth = 0;
    for (size_t i = 0; i < nfields; i++) {
        const gpumem_field *f = &fields[i];
        if (f->name == NULL || f->name[0] == '\0')
            return gm_error(GPUMEM_ERROR_INVALID_DTYPE, "%s: field %zu has %s name", what, i,
                            f->name == NULL ? "a NULL" : "an empty");
        const char *name = gm_dtype_quoted(q, f->name, '\'');
        if (f->dtype == NULL)
            return gm_error(GPUMEM_ERROR_INVALID_DTYPE, "%s: field %s has a NULL dtype", what, name);
        if (!gm_handle_live(f->dtype, GM_HANDLE_DTYPE)) {
            char arg[64];
            snprintf(arg, sizeof arg, "fields[%zu].dtype", i);
            return gm_handle_error(f->dtype, GM_HANDLE_DTYPE, what, arg);
        }
        if (f->ndim < 0 || f->ndim > GM_DTYPE_MAX_NDIM)
            return gm_error(GPUMEM_ERROR_INVALID_DTYPE,
                            "%s: field %s: a sub-array has 0 to %d dimensions, not %d", what, name,
                            GM_DTYPE_MAX_NDIM, f->ndim);
        if (f->ndim > 0 && f->shape == NULL)
            return gm_error(GPUMEM_ERROR_INVALID_DTYPE, "%s: field %s has ndim %d and a NULL shape", what, name,
                            f->ndim);
        if (f->offset < -1)
            return gm_error(GPUMEM_ERROR_INVALID_DTYPE,
                            "%s: field %s has a negative offset %" PRId64 " (-1 places it after the previous field)",
                            what, name, f->offset);
        if (f->dtype->depth + 1 > depth)
            depth = f->dtype->depth + 1;
        size_t len = strlen(f->name) + 1;
        if (len > SIZE_MAX / 4 - names_len)
            return gm_error(GPUMEM_ERROR_INVALID_DTYPE, "%s: field %s: the names are too long", what, name);
        names_len += len;
        extents += (size_t)f->ndim;
    }
    if (depth > GM_DTYPE_MAX_DEPTH)
        return gm_error(GPUMEM_ERROR_INVALID_DTYPE, "%s: records nest more than %d levels deep", what,
                        GM_DTYPE_MAX_DEPTH);

    /* One block: the dtype, its fields, their shapes, their names. */
    size_t at_fields = round_up(sizeof(struct gpumem_dtype), _Alignof(gm_field));
    size_t at_shapes = round_up(at_fields + nfields * sizeof(gm_field), _Alignof(int64_t));
    size_t at_names = at_shapes + extents * sizeof(int64_t);
    size_t total = at_names + names_len;
    char *block = gm_handle_new_zeroed(GM_HANDLE_DTYPE, total);
    if (block == NULL)
        return gm_dtype_out_of_memory(what, total);
    gpumem_dtype *d = (gpumem_dtype *)(void *)block;
    gm_field *mf = (gm_field *)(void *)(block + at_fields);
    int64_t *shapes = (int64_t *)(void *)(block + at_shapes);
    char *names = block + at_names;
    gpumem_status st = GPUMEM_OK;

    /* Second pass: sizes and offsets. */
    int64_t prev_end = 0, max_end = 0;
    size_t max_align = 1;
    const gm_field *last = NULL; /* the field that ends furthest */
    for (size_t i = 0; i < nfields && st == GPUMEM_OK; i++) {
        const gpumem_field *f = &fields[i];
        gm_field *g = &mf[i];
        const char *name = gm_dtype_quoted(q, f->name, '\'');
        size_t len = strlen(f->name) + 1;
        memcpy(names, f->name, len);
        g->name = names;
        names += len;
        g->dtype = f->dtype;
        g->ndim = f->ndim;
        g->shape = f->ndim > 0 ? shapes : NULL;
        int64_t size = (int64_t)f->dtype->itemsize;
        for (int k = 0; k < f->ndim; k++) {
            int64_t e = f->shape[k];
            if (e < 0) {
                st = gm_error(GPUMEM_ERROR_INVALID_DTYPE, "%s: field %s: extent %d of the sub-array is negative (%" PRId64 ")",
                              what, name, k, e);
                break;
            }
            if (e > 0 && size > MAX_BYTES / e) {
                st = gm_error(GPUMEM_ERROR_INVALID_DTYPE, "%s: field %s: the sub-array's size overflows", what, name);
                break;
            }
            size *= e;
            *shapes++ = e;
        }
        if (st != GPUMEM_OK)
            break;
        g->size = size;
        size_t align = aligned ? f->dtype->alignment : 1;
        if (align > max_align)
            max_align = align;
        int64_t offset = f->offset;
        if (offset == -1) {
            if (gm_dtype_add_overflows(prev_end, (int64_t)align - 1)) {
                st = gm_error(GPUMEM_ERROR_INVALID_DTYPE, "%s: field %s: the offset overflows", what, name);
                break;
            }
            offset = (int64_t)round_up((size_t)prev_end, align);
        } else if (aligned && (size_t)offset % align != 0) {
            /* NumPy's rule for align=True: an explicit offset must be aligned too. */
            st = gm_error(GPUMEM_ERROR_INVALID_DTYPE,
                          "%s: field %s: offset %" PRId64 " is not a multiple of the field's alignment %zu "
                          "(GPUMEM_RECORD_ALIGNED)",
                          what, name, offset, align);
            break;
        }
        if (gm_dtype_add_overflows(offset, size)) {
            st = gm_error(GPUMEM_ERROR_INVALID_DTYPE,
                          "%s: field %s: offset %" PRId64 " plus size %" PRId64 " overflows", what, name, offset, size);
            break;
        }
        g->offset = offset;
        prev_end = offset + size;
        if (last == NULL || prev_end > max_end) {
            max_end = prev_end;
            last = g;
        }
    }
    if (st == GPUMEM_OK)
        st = check_fields(what, mf, nfields);

    size_t alignment = aligned ? max_align : 1;
    if (st == GPUMEM_OK) {
        if (itemsize == 0) {
            if ((size_t)max_end > (size_t)MAX_BYTES - (alignment - 1))
                st = gm_error(GPUMEM_ERROR_INVALID_DTYPE, "%s: the record's size overflows", what);
            else
                itemsize = round_up((size_t)max_end, alignment);
        } else if ((uint64_t)itemsize > (uint64_t)MAX_BYTES) {
            st = gm_error(GPUMEM_ERROR_INVALID_DTYPE, "%s: itemsize %zu is too large (at most %" PRId64 ")", what,
                          itemsize, MAX_BYTES);
        } else if ((size_t)max_end > itemsize) {
            st = gm_error(GPUMEM_ERROR_INVALID_DTYPE,
                          "%s: field %s ends at byte %" PRId64 ", past the itemsize %zu", what,
                          gm_dtype_quoted(q, last->name, '\''), max_end, itemsize);
        } else if (itemsize % alignment != 0) {
            st = gm_error(GPUMEM_ERROR_INVALID_DTYPE,
                          "%s: itemsize %zu is not a multiple of the record's alignment %zu (GPUMEM_RECORD_ALIGNED)",
                          what, itemsize, alignment);
        }
    }
    if (st != GPUMEM_OK) {
        gm_handle_free(block);
        return st;
    }

    d->type = GPUMEM_RECORD;
    d->order = GPUMEM_BYTEORDER_NA;
    d->kind = 'V';
    d->depth = depth;
    d->itemsize = itemsize;
    d->alignment = alignment;
    d->nfields = nfields;
    d->fields = nfields > 0 ? mf : NULL;
    atomic_init(&d->refs, 1);
    for (size_t i = 0; i < nfields; i++)
        gm_dtype_ref(mf[i].dtype);
    *out = d;
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_dtype_record_create(const gpumem_field *fields, size_t nfields,
                                                    gpumem_record_layout layout, size_t itemsize,
                                                    gpumem_dtype **dtype)
{
    if (nfields > 0)
        GM_CHECK_NULL(fields);
    GM_CHECK_NULL(dtype);
    const gpumem_dtype *d;
    gpumem_status st = gm_dtype_record_make(__func__, fields, nfields, layout, itemsize, &d);
    if (st == GPUMEM_OK)
        *dtype = (gpumem_dtype *)d;
    return st;
}

/* ---- comparison and accessors ----------------------------------------------------- */

/* Bytes with no named field in them: raw bytes, or a record without fields;
 * both have the descr [('', '|Vn')], so they are the same layout. */
static bool opaque(const gpumem_dtype *d)
{
    return d->type == GPUMEM_VOID || (d->type == GPUMEM_RECORD && d->nfields == 0);
}

static bool equal(const gpumem_dtype *a, const gpumem_dtype *b)
{
    if (a == b)
        return true;
    if (a->itemsize != b->itemsize)
        return false;
    if (opaque(a) && opaque(b))
        return true;
    if (a->type != b->type || a->order != b->order || a->nfields != b->nfields)
        return false;
    for (size_t i = 0; i < a->nfields; i++) {
        const gm_field *x = &a->fields[i], *y = &b->fields[i];
        if (x->offset != y->offset || x->ndim != y->ndim || strcmp(x->name, y->name) != 0)
            return false;
        for (int k = 0; k < x->ndim; k++)
            if (x->shape[k] != y->shape[k])
                return false;
        if (!equal(x->dtype, y->dtype))
            return false;
    }
    return true;
}

GPUMEM_API int gpumem_dtype_equal(const gpumem_dtype *a, const gpumem_dtype *b)
{
    return gm_handle_live(a, GM_HANDLE_DTYPE) && gm_handle_live(b, GM_HANDLE_DTYPE) && equal(a, b);
}

GPUMEM_API gpumem_status gpumem_dtype_itemsize(const gpumem_dtype *dtype, size_t *itemsize)
{
    GM_CHECK_HANDLE(dtype);
    GM_CHECK_NULL(itemsize);
    *itemsize = dtype->itemsize;
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_dtype_alignment(const gpumem_dtype *dtype, size_t *alignment)
{
    GM_CHECK_HANDLE(dtype);
    GM_CHECK_NULL(alignment);
    *alignment = dtype->alignment;
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_dtype_type(const gpumem_dtype *dtype, gpumem_type *type, gpumem_byteorder *order)
{
    GM_CHECK_HANDLE(dtype);
    if (type != NULL)
        *type = dtype->type;
    if (order != NULL)
        *order = dtype->order;
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_dtype_field_count(const gpumem_dtype *dtype, size_t *count)
{
    GM_CHECK_HANDLE(dtype);
    GM_CHECK_NULL(count);
    *count = dtype->nfields;
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_dtype_field(const gpumem_dtype *dtype, size_t index, const char **name,
                                            const gpumem_dtype **field_dtype, int64_t *offset, int *ndim,
                                            int64_t *shape)
{
    GM_CHECK_HANDLE(dtype);
    if (index >= dtype->nfields) {
        char ts[24];
        gm_dtype_format_typestr(dtype, ts);
        if (dtype->type != GPUMEM_RECORD)
            return gm_error(GPUMEM_ERROR_INDEX_OUT_OF_RANGE, "%s: the dtype '%s' is not a record: it has no field %zu",
                            __func__, ts, index);
        return gm_error(GPUMEM_ERROR_INDEX_OUT_OF_RANGE, "%s: field index %zu is out of range: the record has %zu field%s",
                        __func__, index, dtype->nfields, dtype->nfields == 1 ? "" : "s");
    }
    const gm_field *f = &dtype->fields[index];
    if (name != NULL)
        *name = f->name;
    if (field_dtype != NULL)
        *field_dtype = f->dtype;
    if (offset != NULL)
        *offset = f->offset;
    if (ndim != NULL)
        *ndim = f->ndim;
    if (shape != NULL && f->ndim > 0)
        memcpy(shape, f->shape, (size_t)f->ndim * sizeof *shape);
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_dtype_field_index(const gpumem_dtype *dtype, const char *name, size_t *index)
{
    GM_CHECK_HANDLE(dtype);
    GM_CHECK_NULL(name);
    GM_CHECK_NULL(index);
    for (size_t i = 0; i < dtype->nfields; i++)
        if (strcmp(dtype->fields[i].name, name) == 0) {
            *index = i;
            return GPUMEM_OK;
        }
    char q[QUOTE_BUF], ts[24];
    gm_dtype_format_typestr(dtype, ts);
    if (dtype->type != GPUMEM_RECORD)
        return gm_error(GPUMEM_ERROR_NOT_FOUND, "%s: no field %s: the dtype '%s' is not a record", __func__,
                        gm_dtype_quoted(q, name, '\''), ts);
    return gm_error(GPUMEM_ERROR_NOT_FOUND, "%s: no field %s in the record (it has %zu field%s)", __func__,
                    gm_dtype_quoted(q, name, '\''), dtype->nfields, dtype->nfields == 1 ? "" : "s");
}
