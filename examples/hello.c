/*
 * hello.c - a downstream program of libgpumem, built only through pkg-config:
 *
 *     cc $(pkg-config --cflags gpumem) -o hello hello.c $(pkg-config --libs gpumem)
 *
 * It makes a context on the default device (CUDA_DEVICE, ~/.cuda-device, else
 * the first device that gives one) and tells what it got.  Without a GPU, run
 * it on the simulator:  GPUMEM_BACKEND=sim ./hello
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <gpumem.h>

static int fail(const char *call, gpumem_status status)
{
    fprintf(stderr, "hello: %s: %s: %s\n", call, gpumem_status_string(status), gpumem_last_error());
    return EXIT_FAILURE;
}

int main(void)
{
    gpumem_context *ctx = NULL;
    gpumem_status st;
    const char *backend;
    int device;
    gpumem_selection rule;
    char name[256];
    uint64_t free_bytes, total_bytes;
    int rc = EXIT_SUCCESS;

    printf("libgpumem %s (built with headers %s)\n", gpumem_version_string(), GPUMEM_VERSION_STRING);

    if ((st = gpumem_context_create_default(&ctx)) != GPUMEM_OK)
        return fail("gpumem_context_create_default", st);

    if ((st = gpumem_backend(&backend)) != GPUMEM_OK)
        rc = fail("gpumem_backend", st);
    else if ((st = gpumem_context_get_device(ctx, &device)) != GPUMEM_OK)
        rc = fail("gpumem_context_get_device", st);
    else if ((st = gpumem_context_selection(ctx, &rule)) != GPUMEM_OK)
        rc = fail("gpumem_context_selection", st);
    else if ((st = gpumem_device_name(device, name, sizeof name)) != GPUMEM_OK)
        rc = fail("gpumem_device_name", st);
    else if ((st = gpumem_memory_info(ctx, &free_bytes, &total_bytes)) != GPUMEM_OK)
        rc = fail("gpumem_memory_info", st);
    else {
        printf("backend:   %s\n", backend);
        printf("device:    %d (chosen by %s)\n", device, gpumem_selection_name(rule));
        printf("name:      %s\n", name);
        printf("memory:    %" PRIu64 " of %" PRIu64 " bytes free\n", free_bytes, total_bytes);
    }

    if ((st = gpumem_context_release(ctx)) != GPUMEM_OK && rc == EXIT_SUCCESS)
        rc = fail("gpumem_context_release", st);
    return rc;
}
