/*
 * env.c - strict parsing of numbers and sizes from the environment.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "env.h"
#include "error.h"

static const char *skip_space(const char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    return s;
}

bool gm_parse_long(const char *s, long *out)
{
    if (s == NULL)
        return false;
    s = skip_space(s);
    if (*s == '\0')
        return false;
    errno = 0;
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || errno == ERANGE)
        return false;
    if (*skip_space(end) != '\0')
        return false;
    *out = v;
    return true;
}

bool gm_parse_size(const char *s, uint64_t *out)
{
    if (s == NULL)
        return false;
    s = skip_space(s);
    if (!isdigit((unsigned char)*s))
        return false;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
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
    if (*skip_space(end) != '\0')
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
    s = skip_space(s);
    if (*s == '\0')
        return false;
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (end == s || errno == ERANGE || !isfinite(v))
        return false;
    if (*skip_space(end) != '\0')
        return false;
    *out = v;
    return true;
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
