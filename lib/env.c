/*
 * env.c - strict parsing of numbers, sizes and words from the environment.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "env.h"
#include "error.h"

/* The grammar, in one place (doc/environment.md says the same):
 *   blank   = ' ' | '\t'            (around the value, and around each part of a
 *                                   list, pair or k:ERROR; no other white space)
 *   integer = '-'? ( '0' | [1-9][0-9]* )       no '+', no "-0", no leading zeros
 *   size    = ( '0' | [1-9][0-9]* ) ( [KMGT] ( 'B' | 'iB' )? | 'B' )?   any case
 *   number  = '-'? ( [0-9]+ ( '.' [0-9]* )? | '.' [0-9]+ ) ( [eE] [+-]? [0-9]+ )?
 *   word    = one of the variable's words, in any ASCII case (gm_word_is)
 * A number is decimal only (no hex floats, inf or nan); it is rounded to the
 * nearest double, so one too small for a double (1e-400) is 0, and one too
 * large (1e400) is refused.  -0 is 0. */

static const char *skip_blank(const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    return s;
}

/* The unsigned decimal at *s without leading zeros: its end, or NULL. */
static const char *canonical_digits(const char *s)
{
    if (*s < '0' || *s > '9')
        return NULL;
    if (*s == '0')
        return s + 1;
    while (*s >= '0' && *s <= '9')
        s++;
    return s;
}

static const char *digit_run(const char *s)
{
    while (*s >= '0' && *s <= '9')
        s++;
    return s;
}

bool gm_parse_long(const char *s, long *out)
{
    if (s == NULL)
        return false;
    s = skip_blank(s);
    bool negative = *s == '-';
    const char *d = negative ? s + 1 : s;
    const char *end = canonical_digits(d);
    if (end == NULL || *skip_blank(end) != '\0' || (negative && *d == '0'))
        return false;
    errno = 0;
    long v = strtol(s, NULL, 10);
    if (errno == ERANGE)
        return false;
    *out = v;
    return true;
}

bool gm_parse_size(const char *s, uint64_t *out)
{
    if (s == NULL)
        return false;
    s = skip_blank(s);
    const char *end = canonical_digits(s);
    if (end == NULL)
        return false;
    errno = 0;
    unsigned long long v = strtoull(s, NULL, 10);
    if (errno == ERANGE)
        return false;
    unsigned shift = 0;
    switch (toupper((unsigned char)*end)) {
    case 'K': shift = 10; end++; break;
    case 'M': shift = 20; end++; break;
    case 'G': shift = 30; end++; break;
    case 'T': shift = 40; end++; break;
    default: break;
    }
    if (shift != 0) {
        if (toupper((unsigned char)end[0]) == 'I' && toupper((unsigned char)end[1]) == 'B')
            end += 2;
        else if (toupper((unsigned char)end[0]) == 'B')
            end++;
    } else if (toupper((unsigned char)end[0]) == 'B') {
        end++;
    }
    if (*skip_blank(end) != '\0')
        return false;
    if (shift != 0 && v > (UINT64_MAX >> shift))
        return false;
    *out = (uint64_t)v << shift;
    return true;
}

bool gm_parse_double(const char *s, double *out)
{
    if (s == NULL)
        return false;
    s = skip_blank(s);
    const char *p = *s == '-' ? s + 1 : s;
    const char *int_end = digit_run(p);
    const char *end = int_end;
    if (*end == '.')
        end = digit_run(end + 1);
    if (int_end == p && end - int_end < 2) /* no digit before or after the point */
        return false;
    if (*end == 'e' || *end == 'E') {
        const char *e = end + 1;
        if (*e == '+' || *e == '-')
            e++;
        const char *e_end = digit_run(e);
        if (e_end == e)
            return false;
        end = e_end;
    }
    if (*skip_blank(end) != '\0')
        return false;
    /* The grammar above is a subset of strtod's (C locale digits, '.'). */
    locale_t c = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    locale_t old = c != (locale_t)0 ? uselocale(c) : (locale_t)0;
    errno = 0;
    char *stop;
    double v = strtod(s, &stop);
    if (c != (locale_t)0) {
        uselocale(old);
        freelocale(c);
    }
    if (stop != end || !isfinite(v) || (errno == ERANGE && fabs(v) > 1.0))
        return false;
    *out = v + 0.0; /* -0 is 0 */
    return true;
}

/* ASCII only: a locale's case mapping (Turkish 'I') must not change a word. */
static int ascii_lower(int c)
{
    return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

bool gm_word_is(const char *s, const char *word)
{
    if (s == NULL)
        return false;
    s = skip_blank(s);
    while (*word != '\0' && ascii_lower((unsigned char)*s) == ascii_lower((unsigned char)*word)) {
        s++;
        word++;
    }
    return *word == '\0' && *skip_blank(s) == '\0';
}

const char *gm_env(const char *name)
{
    const char *v = getenv(name);
    return v != NULL && *v != '\0' ? v : NULL;
}

gpumem_status gm_env_long(const char *name, long min, long max, long dflt, long *out, bool *is_set)
{
    const char *s = gm_env(name);
    if (is_set != NULL)
        *is_set = s != NULL;
    if (s == NULL) {
        *out = dflt;
        return GPUMEM_OK;
    }
    long v;
    if (!gm_parse_long(s, &v))
        return gm_error(GPUMEM_ERROR_INVALID_ENVIRONMENT, "%s='%s': not a decimal integer", name, s);
    if (v < min || v > max)
        return gm_error(GPUMEM_ERROR_INVALID_ENVIRONMENT, "%s='%s': must be between %ld and %ld",
                        name, s, min, max);
    *out = v;
    return GPUMEM_OK;
}

gpumem_status gm_env_size(const char *name, uint64_t min, uint64_t dflt, uint64_t *out)
{
    const char *s = gm_env(name);
    if (s == NULL) {
        *out = dflt;
        return GPUMEM_OK;
    }
    uint64_t v;
    if (!gm_parse_size(s, &v))
        return gm_error(GPUMEM_ERROR_INVALID_ENVIRONMENT,
                        "%s='%s': not a size (a number with an optional K, M, G or T suffix)", name, s);
    if (v < min)
        return gm_error(GPUMEM_ERROR_INVALID_ENVIRONMENT, "%s='%s': must be at least %llu bytes",
                        name, s, (unsigned long long)min);
    *out = v;
    return GPUMEM_OK;
}

gpumem_status gm_env_double(const char *name, double min, double max, double dflt, double *out)
{
    const char *s = gm_env(name);
    if (s == NULL) {
        *out = dflt;
        return GPUMEM_OK;
    }
    double v;
    if (!gm_parse_double(s, &v))
        return gm_error(GPUMEM_ERROR_INVALID_ENVIRONMENT, "%s='%s': not a number", name, s);
    if (!(v >= min && v <= max))
        return gm_error(GPUMEM_ERROR_INVALID_ENVIRONMENT, "%s='%s': must be between %g and %g",
                        name, s, min, max);
    *out = v;
    return GPUMEM_OK;
}
