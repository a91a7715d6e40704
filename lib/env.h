/*
 * env.h - strict parsing of numbers, sizes and words from the environment
 * and files.  A bad value is an error naming the variable and the value,
 * never a silent default.  Unset (or empty) variables give the default.
 */
#ifndef GM_ENV_H
#define GM_ENV_H

#include <stdbool.h>
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

/* name's value as an integer in [min, max]; *is_set tells whether it was set
 * (may be NULL).  GPUMEM_ERROR_INVALID_ENVIRONMENT on a bad value. */
gpumem_status gm_env_long(const char *name, long min, long max, long dflt, long *out, bool *is_set);

/* name's value as a size in bytes, at least min. */
gpumem_status gm_env_size(const char *name, uint64_t min, uint64_t dflt, uint64_t *out);

/* name's value as a number in [min, max]. */
gpumem_status gm_env_double(const char *name, double min, double max, double dflt, double *out);

/* Whether s, less the blanks (spaces and tabs) around it, is word, compared
 * without regard to ASCII case: "sim", " SIM\t" and "Sim" are the word
 * "sim"; "si m", "sim\n" and "" are not.  NULL is no word. */
bool gm_word_is(const char *s, const char *word);

/* The value of name, or NULL when unset or empty. */
const char *gm_env(const char *name);

#endif /* GM_ENV_H */
