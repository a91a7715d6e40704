/* Backends, device queries, contexts and their reference counts.  Runs on the
 * simulator (with a configuration it sets) and on a real GPU. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gpumem.h>

#include "tap.h"

static uint64_t calls(const char *op)
{
    uint64_t n = 0;
    gpumem_debug_driver_calls(op, &n);
    return n;
}

int main(void)
{
    int sim = test_on_sim();
    if (sim) {
        setenv("GPUMEM_SIM_DEVICES", "3", 1);
        setenv("GPUMEM_SIM_MEMORY", "256M", 1);
        setenv("GPUMEM_SIM_ARCH", "sm_80", 1);
        setenv("GPUMEM_SIM_BUSY", "2", 1);
    }
    plan(36);

    const char *backend = NULL;
    is_int(gpumem_backend(&backend), GPUMEM_OK, "the backend loads");
    is_str(backend, test_backend(), "it is the one GPUMEM_BACKEND names");

    int version = 0;
    is_int(gpumem_driver_version(&version), GPUMEM_OK, "driver version");
    ok(version >= 12000, "the driver is CUDA 12.0 or newer (%d)", version);

    int count = 0;
    is_int(gpumem_device_count(&count), GPUMEM_OK, "device count");
    if (sim)
        is_int(count, 3, "GPUMEM_SIM_DEVICES=3 gives 3 devices");
    else
        ok(count >= 1, "the GPU machine has a device (%d)", count);

    char name[256] = "";
    is_int(gpumem_device_name(0, name, sizeof name), GPUMEM_OK, "device 0's name");
    ok(strlen(name) > 0, "it is not empty: '%s'", name);
    char tiny[5];
    gpumem_device_name(0, tiny, sizeof tiny);
    ok(strlen(tiny) == 4 && strncmp(tiny, name, 4) == 0, "a short buffer gets a truncated, terminated name");

    int major = 0, minor = 0;
    is_int(gpumem_device_compute_capability(0, &major, &minor), GPUMEM_OK, "compute capability");
    if (sim)
        ok(major == 8 && minor == 0, "GPUMEM_SIM_ARCH=sm_80 is compute capability 8.0 (%d.%d)", major, minor);
    else
        ok(major >= 5, "a real compute capability (%d.%d)", major, minor);

    uint64_t total = 0;
    is_int(gpumem_device_total_memory(0, &total), GPUMEM_OK, "total memory");
    if (sim)
        is_int(total, 256u << 20, "GPUMEM_SIM_MEMORY=256M is the capacity");
    else
        ok(total > (1u << 30), "a real GPU has more than 1 GiB (%llu)", (unsigned long long)total);

    int sms = 0, warp = 0;
    gpumem_device_attribute(0, GPUMEM_DEVICE_MULTIPROCESSORS, &sms);
    gpumem_device_attribute(0, GPUMEM_DEVICE_WARP_SIZE, &warp);
    if (sim)
        ok(sms == 108 && warp == 32, "sm_80 is A100-like: 108 multiprocessors, warp 32 (%d, %d)", sms, warp);
    else
        ok(sms > 0 && warp == 32, "multiprocessors and warp size (%d, %d)", sms, warp);
    int dummy;
    is_int(gpumem_device_attribute(0, (gpumem_device_attr)999, &dummy), GPUMEM_ERROR_INVALID_VALUE,
           "an unknown attribute is refused");

    is_int(gpumem_device_name(count, name, sizeof name), GPUMEM_ERROR_INVALID_DEVICE,
           "a device past the last is refused");
    like(gpumem_last_error(), "0 to", "the message gives the valid range");
    is_int(gpumem_device_compute_capability(-1, &major, &minor), GPUMEM_ERROR_INVALID_DEVICE,
           "a negative device is refused");

    /* Contexts: a reference count over one primary-context retain. */
    uint64_t retains = calls("cuDevicePrimaryCtxRetain");
    gpumem_context *ctx = NULL;
    is_int(gpumem_context_create(0, &ctx), GPUMEM_OK, "a context on device 0");
    is_int(calls("cuDevicePrimaryCtxRetain") - retains, 1, "it retains the primary context once");
    int dev = -1, refs = 0;
    gpumem_selection rule = GPUMEM_SELECTION_SCAN;
    gpumem_context_get_device(ctx, &dev);
    gpumem_context_selection(ctx, &rule);
    ok(dev == 0 && rule == GPUMEM_SELECTION_EXPLICIT, "its device is 0, chosen explicitly");
    gpumem_context_retain(ctx);
    gpumem_context_retain(ctx);
    gpumem_context_refcount(ctx, &refs);
    is_int(refs, 3, "two retains make three references");
    uint64_t releases = calls("cuDevicePrimaryCtxRelease");
    gpumem_context_release(ctx);
    gpumem_context_release(ctx);
    is_int(calls("cuDevicePrimaryCtxRelease") - releases, 0, "releases before the last do not reach the driver");

    uint64_t free_b = 0, total_b = 0;
    is_int(gpumem_memory_info(ctx, &free_b, &total_b), GPUMEM_OK, "memory info");
    ok(total_b == total && free_b <= total_b && free_b > 0, "free (%llu) <= total (%llu) = the device's",
       (unsigned long long)free_b, (unsigned long long)total_b);
    is_int(gpumem_context_release(ctx), GPUMEM_OK, "the last release");
    is_int(calls("cuDevicePrimaryCtxRelease") - releases, 1, "...releases the primary context");

    if (sim) {
        gpumem_context *busy = NULL;
        is_int(gpumem_context_create(2, &busy), GPUMEM_ERROR_DEVICE_UNAVAILABLE,
               "a busy device (GPUMEM_SIM_BUSY=2) refuses a context");
        like(gpumem_last_error(), "CUDA_ERROR_DEVICE_UNAVAILABLE", "the message has the driver's error name");
        ok(busy == NULL, "and no context comes back");
        int mode = -1;
        gpumem_device_attribute(2, GPUMEM_DEVICE_COMPUTE_MODE, &mode);
        is_int(mode, 3, "it reports exclusive-process compute mode");
    } else {
        skip(4, "busy devices are simulated (GPUMEM_SIM_BUSY)");
    }

    /* gpumem_size_parse: the sizes of the environment (GPUMEM_SIM_MEMORY=256M above) */
    static const struct {
        const char *text;
        uint64_t bytes;
    } sizes[] = {{"4096", 4096}, {"48K", 49152}, {"48k", 49152}, {"64KiB", 65536}, {" 512M\t", 512u << 20},
                 {"2GB", UINT64_C(2) << 30}, {"1T", UINT64_C(1) << 40}, {"7B", 7}, {"0", 0},
                 {"18446744073709551615", UINT64_MAX}};
    int all_read = 1;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        uint64_t v = 1;
        if (gpumem_size_parse(sizes[i].text, &v) != GPUMEM_OK || v != sizes[i].bytes) {
            all_read = 0;
            diag("'%s': %llu, want %llu", sizes[i].text, (unsigned long long)v, (unsigned long long)sizes[i].bytes);
        }
    }
    ok(all_read, "gpumem_size_parse reads bytes, K, M, G and T (KiB, B), any case, blanks around");
    static const char *const bad[] = {"", "48X", "-1", "+4", "4 K", "1.5M", "0x10", "16777216T", "18446744073709551616",
                                      "4K\n", "K"};
    int all_refused = 1;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t v = 77;
        if (gpumem_size_parse(bad[i], &v) != GPUMEM_ERROR_INVALID_VALUE || v != 77) {
            all_refused = 0;
            diag("'%s' was not refused, or changed the output", bad[i]);
        }
    }
    ok(all_refused, "it refuses what is not a size, past 2^64 - 1 bytes included, and leaves the output alone");
    uint64_t v = 0;
    gpumem_size_parse("48X", &v);
    like(gpumem_last_error(), "gpumem_size_parse: '48X' is not a size", "the message quotes the text");
    is_int(gpumem_size_parse(NULL, &v), GPUMEM_ERROR_NULL_ARGUMENT, "NULL text");
    is_int(gpumem_size_parse("1K", NULL), GPUMEM_ERROR_NULL_ARGUMENT, "NULL bytes");
    return exit_status();
}
