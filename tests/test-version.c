/* The version macros, the run-time version, and config agreement. */
#include <stdio.h>
#include <string.h>

#include <gpumem.h>

#include "config.h"
#include "tap.h"

int main(void)
{
    plan(5);
    is_int(gpumem_version(), GPUMEM_VERSION_NUMBER, "run-time version equals the headers' version");
    is_str(gpumem_version_string(), GPUMEM_VERSION_STRING, "run-time string equals the headers' string");
    is_str(gpumem_version_string(), PACKAGE_VERSION, "the version is configure's version");
    char buf[64];
    snprintf(buf, sizeof buf, "%d.%d.%d", GPUMEM_VERSION_MAJOR, GPUMEM_VERSION_MINOR, GPUMEM_VERSION_PATCH);
    is_str(buf, GPUMEM_VERSION_STRING, "the string is major.minor.patch");
    is_int(GPUMEM_VERSION_NUMBER,
           GPUMEM_VERSION_MAJOR * 10000 + GPUMEM_VERSION_MINOR * 100 + GPUMEM_VERSION_PATCH,
           "the number is major*10000 + minor*100 + patch");
    return exit_status();
}
