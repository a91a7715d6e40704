/* The typestr and descr parsers: whatever they accept writes back (as
 * gpumem_dtype_typestr or gpumem_dtype_descr) to text that parses to an
 * equal dtype; whatever they refuse is INVALID_DTYPE with a message, and
 * leaves the output alone. */
#include "config.h"

#include <gpumem.h>

#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_reader r = {data, size};
    unsigned mode = fuzz_u8(&r) % 2;
    char *text = fuzz_rest_string(&r);
    gpumem_dtype *dt = (gpumem_dtype *)(uintptr_t)0x1, *again = NULL;
    gpumem_status st = mode == 0 ? gpumem_dtype_from_typestr(text, &dt) : gpumem_dtype_from_descr(text, &dt);
    if (st != GPUMEM_OK) {
        FUZZ_CHECK(st == GPUMEM_ERROR_INVALID_DTYPE || st == GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "status %d", st);
        FUZZ_CHECK(dt == (gpumem_dtype *)(uintptr_t)0x1, "the output changed on failure");
        FUZZ_CHECK(gpumem_last_error()[0] != '\0', "no message");
        free(text);
        return 0;
    }
    size_t need = 1 << 16;
    char *out = malloc(need);
    if (mode == 0) {
        st = gpumem_dtype_typestr(dt, out, need);
        FUZZ_CHECK(st == GPUMEM_OK, "typestr of a parsed typestr: %s", gpumem_last_error());
        st = gpumem_dtype_from_typestr(out, &again);
    } else {
        st = gpumem_dtype_descr(dt, out, need);
        FUZZ_CHECK(st == GPUMEM_OK || st == GPUMEM_ERROR_INVALID_VALUE, "descr of a parsed descr: %s",
                   gpumem_last_error());
        if (st == GPUMEM_OK)
            st = gpumem_dtype_from_descr(out, &again);
        else
            st = GPUMEM_OK; /* longer than the buffer: nothing to compare */
    }
    FUZZ_CHECK(st == GPUMEM_OK, "the written text '%s' does not parse: %s", out, gpumem_last_error());
    if (again != NULL)
        FUZZ_CHECK(gpumem_dtype_equal(dt, again), "'%s' reads back as another dtype", out);
    size_t a = 0, b = 0;
    FUZZ_CHECK(gpumem_dtype_itemsize(dt, &a) == GPUMEM_OK && a > 0 ? 1 : a == 0, "itemsize");
    if (again != NULL) {
        gpumem_dtype_itemsize(again, &b);
        FUZZ_CHECK(a == b, "item sizes %zu and %zu", a, b);
    }
    gpumem_dtype_release(again);
    gpumem_dtype_release(dt);
    free(out);
    free(text);
    return 0;
}
