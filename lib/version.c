/*
 * version.c - the run-time library version.
 */
#include "config.h"

#include "gpumem/version.h"

GPUMEM_API unsigned gpumem_version(void)
{
    return GPUMEM_VERSION_NUMBER;
}

GPUMEM_API const char *gpumem_version_string(void)
{
    return GPUMEM_VERSION_STRING;
}
