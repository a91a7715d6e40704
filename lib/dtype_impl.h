/*
 * dtype_impl.h - what dtype.c shares with dtype_descr.c (private to the two).
 */
#ifndef GM_DTYPE_IMPL_H
#define GM_DTYPE_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dtype.h"

/* The largest item size: byte counts are int64_t in layouts and size_t in
 * memory, so it must fit both. */
#if SIZE_MAX < INT64_MAX
#define MAX_BYTES ((int64_t)SIZE_MAX)
#else
#define MAX_BYTES INT64_MAX
#endif

/* How much of a user's string a message quotes. */
#define QUOTE_MAX 64
#define QUOTE_BUF (QUOTE_MAX * 4 + 8)

/* Counts every byte and stores those that fit, like snprintf, so that one
 * pass both writes and measures. */
typedef struct gm_dtype_writer {
    char *buf;
    size_t size;
    size_t len;
} gm_dtype_writer;

/* Appends n bytes of s (counted even when they do not fit). */
void gm_dtype_put(gm_dtype_writer *w, const char *s, size_t n);
void gm_dtype_puts(gm_dtype_writer *w, const char *s);

/* Ends the string, or fails saying how many bytes it needs; on failure the
 * buffer holds "". */
gpumem_status gm_dtype_finish(gm_dtype_writer *w, const char *what, const char *thing);

/* s quoted for a message (escaped, at most QUOTE_MAX bytes); out has
 * QUOTE_BUF bytes. */
const char *gm_dtype_quoted(char *out, const char *s, char quote);

gpumem_status gm_dtype_out_of_memory(const char *what, size_t bytes);

/* A typestr ("<f4", "|V12") into a dtype (a reference for the caller). */
gpumem_status gm_dtype_parse_typestr(const char *what, const char *s, const gpumem_dtype **out);

/* d's typestr into buf (24 bytes). */
void gm_dtype_format_typestr(const gpumem_dtype *d, char *buf);

/* Whether a + b overflows int64_t. */
bool gm_dtype_add_overflows(int64_t a, int64_t b);

/* A record of the fields (checked) in the layout, of itemsize bytes (0: the
 * layout's own); a reference for the caller. */
gpumem_status gm_dtype_record_make(const char *what, const gpumem_field *fields, size_t nfields,
                                   gpumem_record_layout layout, size_t itemsize, const gpumem_dtype **out);

#endif /* GM_DTYPE_IMPL_H */
