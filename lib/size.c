/*
 * size.c - gpumem_size_parse: the environment's size grammar (env.c's
 * gm_parse_size, doc/environment.md) for programs and the gpumem tool, so a
 * size reads the same on a command line as in a GPUMEM_* variable.
 */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "env.h"
#include "error.h"
#include "gpumem/context.h"

GPUMEM_API gpumem_status gpumem_size_parse(const char *text, uint64_t *bytes)
{
    GM_CHECK_NULL(text);
    GM_CHECK_NULL(bytes);
    uint64_t v = 0;
    if (!gm_parse_size(text, &v))
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "gpumem_size_parse: '%.64s%s' is not a size (a number of bytes "
                        "with an optional K, M, G or T suffix, powers of 1024, below 2^64)", text,
                        strlen(text) > 64 ? "..." : "");
    *bytes = v;
    return GPUMEM_OK;
}
