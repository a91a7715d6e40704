/*
 * env.h - strict parsing of numbers, sizes and words from the environment
 * and files.  A bad value is an error naming the variable and the value,
 * never a silent default.  Unset (or empty) variables give the default.
 */
#ifndef GM_ENV_H
#define GM_ENV_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpumem/status.h"

/* The grammar of each is in env.c and doc/environment.md.  Blanks (spaces
 * and tabs) may surround the value; nothing else may.
 * A decimal integer: an optional '-', no '+', no leading zeros, no "-0". */
bool gm_parse_long(const char *s, long *out);

/* A size: a decimal number with an optional suffix K, M, G or T (powers of
 * 1024, optionally followed by "B" or "iB", any case): "512M", "2GiB", "4096". */
bool gm_parse_size(const char *s, uint64_t *out);

/* A decimal number such as "0.2", "-1", ".5" or "1e-3"; no hex, inf or nan;
 * rounded to the nearest double (an underflow is 0, an overflow refused). */
bool gm_parse_double(const char *s, double *out);

/* The parsers behind the gm_env_* calls and params.h's reads: name's
 * value into *out, or GPUMEM_ERROR_INVALID_ENVIRONMENT with the message in
 * err (no error recorded). */
gpumem_status gm_env_parse_long(const char *name, long min, long max, long dflt, long *out, bool *is_set, char *err,
                                size_t size);
gpumem_status gm_env_parse_size(const char *name, uint64_t min, uint64_t max, uint64_t dflt, uint64_t *out, char *err,
                                size_t size);
gpumem_status gm_env_parse_double(const char *name, double min, double max, double dflt, double *out, char *err,
                                  size_t size);

/* name's value as an integer in [min, max]; *is_set tells whether it was set
 * (may be NULL).  GPUMEM_ERROR_INVALID_ENVIRONMENT on a bad value. */
gpumem_status gm_env_long(const char *name, long min, long max, long dflt, long *out, bool *is_set);

/* name's value as a size in bytes, at least min. */
gpumem_status gm_env_size(const char *name, uint64_t min, uint64_t dflt, uint64_t *out);

/* name's value as a size in bytes in [min, max]. */
gpumem_status gm_env_size_range(const char *name, uint64_t min, uint64_t max, uint64_t dflt, uint64_t *out);

/* name's value as a number in [min, max]. */
gpumem_status gm_env_double(const char *name, double min, double max, double dflt, double *out);

/* Whether s, less the blanks (spaces and tabs) around it, is word, compared
 * without regard to ASCII case: "sim", " SIM\t" and "Sim" are the word
 * "sim"; "si m", "sim\n" and "" are not.  NULL is no word. */
bool gm_word_is(const char *s, const char *word);

/* The value of name, or NULL when unset or empty. */
const char *gm_env(const char *name);

/* ---- GPUMEM_DEBUG ------------------------------------------------------------------------------ */

/* GPUMEM_DEBUG is a comma-separated list of words, each compared as
 * gm_word_is compares (any ASCII case, blanks around it):
 *   leaks   GM_DEBUG_LEAKS   list what is alive at a context's end (memstats.c)
 *   poison  GM_DEBUG_POISON  fill new arrays and pending download destinations (copy_debug.c)
 *   copies  GM_DEBUG_COPIES  one line per copy on stderr (copy_debug.c)
 *   0       nothing
 *   empty   nothing (as "1,,leaks" or a trailing comma leave)
 *   any other word: GM_DEBUG_MESSAGES, the backend choice and every error
 *   on stderr (gm_debug), as every value but 0 did before the list had words. */
enum {
    GM_DEBUG_MESSAGES = 1u << 0,
    GM_DEBUG_LEAKS = 1u << 1,
    GM_DEBUG_POISON = 1u << 2,
    GM_DEBUG_COPIES = 1u << 3
};

/* The flags of a GPUMEM_DEBUG value (NULL: unset, 0). */
unsigned gm_debug_parse(const char *s);

/* GPUMEM_DEBUG's flags, read once per process: after the first call, one
 * relaxed load. */
extern _Atomic int gm_debug_flags_cache; /* -1: not read yet */
unsigned gm_debug_flags_read(void);
static inline unsigned gm_debug_flags(void)
{
    int f = atomic_load_explicit(&gm_debug_flags_cache, memory_order_relaxed);
    return f >= 0 ? (unsigned)f : gm_debug_flags_read();
}

#endif /* GM_ENV_H */
