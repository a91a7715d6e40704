/* A program that links the internal library statically and names nothing
 * of lib/wiring.c (no layer below the top one may) is linked without the
 * wiring: making a context then fails with GPUMEM_ERROR_INTERNAL and says
 * why, rather than making a context without its hooks.  Internal test,
 * linked on purpose without $(CORE_WIRING). */
#include "config.h"

#include <stddef.h>

#include "gpumem.h"
#include "tap.h"

int main(void)
{
    plan(6);
    gpumem_context *ctx = NULL;
    is_int(gpumem_context_create(0, &ctx), GPUMEM_ERROR_INTERNAL,
           "gpumem_context_create without the wiring is an internal error");
    like(gpumem_last_error(), "gpumem_context_create: the library was linked without its wiring (lib/wiring.c)",
         "the message says why");
    ok(ctx == NULL, "no context comes back");

    int count = 0;
    if (gpumem_device_count(&count) != GPUMEM_OK || count == 0) {
        skip(3, "no device to scan");
        return exit_status();
    }
    is_int(gpumem_context_create_default(&ctx), GPUMEM_ERROR_INTERNAL,
           "gpumem_context_create_default stops at the first device with the same error");
    like(gpumem_last_error(), "gpumem_context_create_default: the library was linked without its wiring",
         "and says why, not that no device gave a context");
    ok(ctx == NULL, "no context comes back");
    return exit_status();
}
