/* Status codes, their names, and the per-thread last error. */
#include <pthread.h>
#include <string.h>

#include <gpumem.h>

#include "tap.h"

static void *other_thread(void *arg)
{
    char **seen = arg;
    /* A fresh thread sees no error of the main thread... */
    seen[0] = strdup(gpumem_last_error());
    /* ...and its own failure stays its own. */
    gpumem_device_count(NULL);
    seen[1] = strdup(gpumem_last_error());
    return NULL;
}

int main(void)
{
    plan(22);

    /* Names are distinct and complete; descriptions exist. */
    int distinct = 1, described = 1;
    for (int i = 0; i < GPUMEM_STATUS_COUNT; i++) {
        const char *a = gpumem_status_string((gpumem_status)i);
        if (strncmp(a, "GPUMEM_", 7) != 0 || strcmp(a, "GPUMEM_STATUS_UNKNOWN") == 0)
            distinct = 0;
        for (int j = 0; j < i; j++)
            if (strcmp(a, gpumem_status_string((gpumem_status)j)) == 0)
                distinct = 0;
        if (strlen(gpumem_status_description((gpumem_status)i)) < 4)
            described = 0;
    }
    ok(distinct, "every status code has its own GPUMEM_ name");
    ok(described, "every status code has a description");
    is_str(gpumem_status_string(GPUMEM_OK), "GPUMEM_OK", "GPUMEM_OK's name");
    is_str(gpumem_status_string(GPUMEM_ERROR_OUT_OF_MEMORY), "GPUMEM_ERROR_OUT_OF_MEMORY", "a code's name");
    is_str(gpumem_status_string((gpumem_status)9999), "GPUMEM_STATUS_UNKNOWN", "an unknown code is named so");
    is_str(gpumem_status_string((gpumem_status)-1), "GPUMEM_STATUS_UNKNOWN", "a negative code is unknown");
    is_int(GPUMEM_ERROR_INTERNAL, GPUMEM_STATUS_COUNT - 1, "GPUMEM_STATUS_COUNT counts every code");

    is_str(gpumem_last_error(), "", "no error before the first failure");
    is_int(gpumem_device_count(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "a NULL out-parameter is refused");
    like(gpumem_last_error(), "'count'", "the message names the argument");
    is_int(gpumem_last_status(), GPUMEM_ERROR_NULL_ARGUMENT, "gpumem_last_status() is the failure's status");
    is_int(gpumem_context_release(NULL), GPUMEM_OK, "a call that succeeds...");
    like(gpumem_last_error(), "'count'", "...leaves the last message alone, like errno");

    /* The driver's own result, beside the status (sqlite3's extended codes). */
    is_int(gpumem_last_driver_result(), 0, "a failure that is not the driver's has driver result 0");
    int count = 0;
    uint64_t total = 0;
    gpumem_status st = gpumem_device_count(&count);
    if (st == GPUMEM_OK)
        st = gpumem_debug_fail_call(1, 2); /* the next driver call fails with CUDA_ERROR_OUT_OF_MEMORY */
    if (st == GPUMEM_OK)
        st = gpumem_device_total_memory(0, &total);
    is_int(st, GPUMEM_ERROR_OUT_OF_MEMORY, "a driver call failing with CUDA_ERROR_OUT_OF_MEMORY: the status it maps to");
    is_int(gpumem_last_driver_result(), 2, "gpumem_last_driver_result() is the driver's result");
    ok(strncmp(gpumem_last_error(), "gpumem_device_total_memory: ", 28) == 0 &&
           strstr(gpumem_last_error(), "CUDA_ERROR_OUT_OF_MEMORY (2)") != NULL,
       "the message names the call and the driver's error");
    is_str(gpumem_debug_driver_error_name(gpumem_last_driver_result()), "CUDA_ERROR_OUT_OF_MEMORY",
           "gpumem_debug_driver_error_name() names it");
    is_int(gpumem_device_total_memory(0, &total), GPUMEM_OK, "a call that succeeds...");
    ok(gpumem_last_driver_result() == 2 && gpumem_last_status() == GPUMEM_ERROR_OUT_OF_MEMORY,
       "...leaves the driver result alone too");
    gpumem_device_count(NULL);
    ok(gpumem_last_driver_result() == 0 && gpumem_last_status() == GPUMEM_ERROR_NULL_ARGUMENT,
       "the next failure, not the driver's, sets it back to 0");

    char *seen[2] = {NULL, NULL};
    pthread_t t;
    gpumem_context_get_device(NULL, NULL);
    pthread_create(&t, NULL, other_thread, seen);
    pthread_join(t, NULL);
    ok(strcmp(seen[0], "") == 0 && strstr(seen[1], "'count'") != NULL &&
           strstr(gpumem_last_error(), "'ctx'") != NULL,
       "each thread has its own last error");
    free(seen[0]);
    free(seen[1]);
    return exit_status();
}
