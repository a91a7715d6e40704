/* The default-device rules of make_default_context and get_default_device:
 * CUDA_DEVICE, then ~/.cuda-device (or ~/.cuda_device), with no fallback once
 * a number is given, else a scan.  Each case runs in its own process. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <gpumem.h>

#include "child.h"
#include "tap.h"

typedef struct selcase {
    const char *title;
    int sim_only;         /* needs simulated devices 1, 2 or busy ones */
    const char *cuda_device; /* NULL: unset */
    const char *dash_file;   /* ~/.cuda-device contents; NULL: absent */
    const char *under_file;  /* ~/.cuda_device contents; NULL: absent */
    const char *busy;        /* GPUMEM_SIM_BUSY */
    int get_default;         /* 1: gpumem_get_default_device(fallback) instead */
    int fallback;
    /* expected */
    gpumem_status status;
    int device;
    gpumem_selection rule;
    const char *message; /* substring of the error message */
} selcase;

static const selcase cases[] = {
    {"CUDA_DEVICE picks the device", 1, "1", NULL, NULL, NULL, 0, 0, GPUMEM_OK, 1,
     GPUMEM_SELECTION_CUDA_DEVICE, NULL},
    {"CUDA_DEVICE=0", 0, "0", NULL, NULL, NULL, 0, 0, GPUMEM_OK, 0, GPUMEM_SELECTION_CUDA_DEVICE, NULL},
    {"CUDA_DEVICE allows surrounding spaces", 0, "  0 \t", NULL, NULL, NULL, 0, 0, GPUMEM_OK, 0,
     GPUMEM_SELECTION_CUDA_DEVICE, NULL},
    {"CUDA_DEVICE junk is an error", 0, "gpu1", NULL, NULL, NULL, 0, 0, GPUMEM_ERROR_INVALID_ENVIRONMENT, -1,
     0, "CUDA_DEVICE='gpu1'"},
    {"CUDA_DEVICE with trailing junk is an error", 0, "0x", NULL, NULL, NULL, 0, 0,
     GPUMEM_ERROR_INVALID_ENVIRONMENT, -1, 0, "not a decimal device ordinal"},
    {"CUDA_DEVICE negative is an error", 0, "-1", NULL, NULL, NULL, 0, 0, GPUMEM_ERROR_INVALID_ENVIRONMENT, -1,
     0, "negative"},
    {"CUDA_DEVICE out of range is an error", 0, "99", NULL, NULL, NULL, 0, 0, GPUMEM_ERROR_INVALID_DEVICE, -1,
     0, "CUDA_DEVICE='99'"},
    {"CUDA_DEVICE naming a busy device fails with no fallback", 1, "1", NULL, NULL, "1", 0, 0,
     GPUMEM_ERROR_DEVICE_UNAVAILABLE, -1, 0, "CUDA_DEVICE='1'"},
    {"CUDA_DEVICE wins over ~/.cuda-device", 1, "2", "1\n", NULL, NULL, 0, 0, GPUMEM_OK, 2,
     GPUMEM_SELECTION_CUDA_DEVICE, NULL},
    {"~/.cuda-device's first line picks the device", 1, NULL, "2\n0\n", NULL, NULL, 0, 0, GPUMEM_OK, 2,
     GPUMEM_SELECTION_DEVICE_FILE, NULL},
    {"~/.cuda-device on a real GPU", 0, NULL, "0\n", NULL, NULL, 0, 0, GPUMEM_OK, 0,
     GPUMEM_SELECTION_DEVICE_FILE, NULL},
    {"~/.cuda_device (pycuda's code's name) is read too", 1, NULL, NULL, " 1 \n", NULL, 0, 0, GPUMEM_OK, 1,
     GPUMEM_SELECTION_DEVICE_FILE, NULL},
    {"~/.cuda-device wins over ~/.cuda_device", 1, NULL, "2", "1", NULL, 0, 0, GPUMEM_OK, 2,
     GPUMEM_SELECTION_DEVICE_FILE, NULL},
    {"~/.cuda-device junk is an error naming the file", 0, NULL, "first\n", NULL, NULL, 0, 0,
     GPUMEM_ERROR_INVALID_ENVIRONMENT, -1, 0, ".cuda-device (first line 'first')"},
    {"an empty ~/.cuda-device is an error", 0, NULL, "", NULL, NULL, 0, 0, GPUMEM_ERROR_INVALID_ENVIRONMENT,
     -1, 0, "first line ''"},
    {"~/.cuda-device naming a busy device has no fallback", 1, NULL, "0\n", NULL, "0", 0, 0,
     GPUMEM_ERROR_DEVICE_UNAVAILABLE, -1, 0, ".cuda-device"},
    {"~/.cuda_device out of range", 0, NULL, NULL, "77", NULL, 0, 0, GPUMEM_ERROR_INVALID_DEVICE, -1, 0,
     ".cuda_device (first line '77')"},
    {"with nothing configured, the scan takes device 0", 0, NULL, NULL, NULL, NULL, 0, 0, GPUMEM_OK, 0,
     GPUMEM_SELECTION_SCAN, NULL},
    {"the scan skips busy devices", 1, NULL, NULL, NULL, "0,1", 0, 0, GPUMEM_OK, 2, GPUMEM_SELECTION_SCAN,
     NULL},
    {"no device gives a context: the error lists what was tried", 1, NULL, NULL, NULL, "0,1,2", 0, 0,
     GPUMEM_ERROR_NO_DEVICE, -1, 0, "tried device 0 (CUDA_ERROR_DEVICE_UNAVAILABLE"},
    {"get_default_device: CUDA_DEVICE", 1, "2", NULL, NULL, NULL, 1, 0, GPUMEM_OK, 2, 0, NULL},
    {"get_default_device: the file", 1, NULL, "1", NULL, NULL, 1, 0, GPUMEM_OK, 1, 0, NULL},
    {"get_default_device: the fallback", 1, NULL, NULL, NULL, NULL, 1, 2, GPUMEM_OK, 2, 0, NULL},
    {"get_default_device: fallback 0 on a GPU", 0, NULL, NULL, NULL, NULL, 1, 0, GPUMEM_OK, 0, 0, NULL},
    {"get_default_device: a busy device is still its answer", 1, "1", NULL, NULL, "1", 1, 0, GPUMEM_OK, 1, 0,
     NULL},
    {"get_default_device: a bad fallback", 0, NULL, NULL, NULL, NULL, 1, 99, GPUMEM_ERROR_INVALID_DEVICE, -1,
     0, "fallback"},
    {"~/.cuda-device: a carriage return in the first line is an error", 0, NULL, "1\r2\n", NULL, NULL, 0, 0,
     GPUMEM_ERROR_INVALID_ENVIRONMENT, -1, 0, "first line '1\\x0d2'"},
    {"~/.cuda-device: junk after 100 blanks is an error", 0, NULL,
     "1                                                                                                    junk\n",
     NULL, NULL, 0, 0, GPUMEM_ERROR_INVALID_ENVIRONMENT, -1, 0, "longer than 64 bytes"},
    {"~/.cuda-device: leading zeros are an error, not device 0", 0, NULL,
     "0000000000000000000000000000000000000000000000000000000000000000000000019\n", NULL, NULL, 0, 0,
     GPUMEM_ERROR_INVALID_ENVIRONMENT, -1, 0, "longer than 64 bytes"},
    {"~/.cuda-device: 01 is an error", 0, NULL, "01\n", NULL, NULL, 0, 0, GPUMEM_ERROR_INVALID_ENVIRONMENT, -1,
     0, "leading zeros"},
    {"CUDA_DEVICE=+0 is an error", 0, "+0", NULL, NULL, NULL, 0, 0, GPUMEM_ERROR_INVALID_ENVIRONMENT, -1, 0,
     "CUDA_DEVICE='+0'"},
    {"CUDA_DEVICE=-0 is an error", 0, "-0", NULL, NULL, NULL, 0, 0, GPUMEM_ERROR_INVALID_ENVIRONMENT, -1, 0,
     "CUDA_DEVICE='-0'"},
    {"get_default_device: junk is an error", 0, "x", NULL, NULL, NULL, 1, 0, GPUMEM_ERROR_INVALID_ENVIRONMENT,
     -1, 0, "CUDA_DEVICE='x'"},
};

static char *home;

static void run_case(const void *arg, child_result *out)
{
    const selcase *c = arg;
    if (c->cuda_device)
        setenv("CUDA_DEVICE", c->cuda_device, 1);
    else
        unsetenv("CUDA_DEVICE");
    setenv("HOME", home, 1);
    if (c->dash_file)
        write_file(home, ".cuda-device", c->dash_file);
    if (c->under_file)
        write_file(home, ".cuda_device", c->under_file);
    if (test_on_sim()) {
        setenv("GPUMEM_SIM_DEVICES", "3", 1);
        if (c->busy)
            setenv("GPUMEM_SIM_BUSY", c->busy, 1);
    }
    out->value[0] = -1;
    if (c->get_default) {
        int dev = -1;
        out->status = gpumem_get_default_device(c->fallback, &dev);
        if (out->status == GPUMEM_OK)
            out->value[0] = dev;
    } else {
        gpumem_context *ctx = NULL;
        out->status = gpumem_context_create_default(&ctx);
        if (out->status == GPUMEM_OK) {
            int dev = -1;
            gpumem_selection rule;
            gpumem_context_get_device(ctx, &dev);
            gpumem_context_selection(ctx, &rule);
            out->value[0] = dev;
            out->value[1] = rule;
            gpumem_context_release(ctx);
        }
    }
    snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
    uint64_t retains = 0;
    gpumem_debug_driver_calls("cuDevicePrimaryCtxRetain", &retains);
    out->value[2] = (long)retains;
}

/* Cases that the table cannot express: value[0] 1 selects ~/.cuda-device as
 * a FIFO, 2 a file with a NUL, 3 a HOME longer than the path limit, 4 a bad
 * GPUMEM_MAX_PENDING_DEALLOCS_COUNT with nothing configured (the scan). */
static void run_special(const void *arg, child_result *out)
{
    long which = *(const long *)arg;
    unsetenv("CUDA_DEVICE");
    setenv("HOME", home, 1);
    char path[1100];
    snprintf(path, sizeof path, "%s/.cuda-device", home);
    if (which == 1 && mkfifo(path, 0600) != 0)
        exit(98);
    if (which == 2) {
        FILE *f = fopen(path, "w");
        if (f == NULL || fwrite("1\0garbage\n", 1, 10, f) != 10 || fclose(f) != 0)
            exit(98);
    }
    if (which == 3) {
        char *long_home = malloc(5000);
        snprintf(long_home, 5000, "%s/", home);
        size_t n = strlen(long_home);
        memset(long_home + n, 'h', 4999 - n);
        long_home[4999] = '\0';
        setenv("HOME", long_home, 1);
        free(long_home);
    }
    if (which == 4)
        setenv("GPUMEM_MAX_PENDING_DEALLOCS_COUNT", "lots", 1);
    gpumem_context *ctx = NULL;
    out->status = gpumem_context_create_default(&ctx);
    snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
    if (out->status == GPUMEM_OK)
        gpumem_context_release(ctx);
}

static void special(long which, gpumem_status want, const char *message, const char *title)
{
    home = make_home();
    child_result r;
    int rc = run_child(run_special, &which, &r);
    remove_home(home);
    ok(rc == 0 && r.status == (int)want && strstr(r.text, message) != NULL, "%s", title);
    if (rc != 0 || r.status != (int)want || strstr(r.text, message) == NULL)
        diag("  rc %d, exit %d, status %s: %s", rc, r.exit_code, gpumem_status_string((gpumem_status)r.status),
             r.text);
}

int main(void)
{
    size_t n = sizeof cases / sizeof cases[0];
    plan((int)n + 4);
    /* These come first: a hang would show here. */
    special(1, GPUMEM_ERROR_INVALID_ENVIRONMENT, "not a regular file", "~/.cuda-device as a FIFO is refused "
            "without waiting for a writer");
    special(2, GPUMEM_ERROR_INVALID_ENVIRONMENT, "first line '1\\x00garbage'", "~/.cuda-device with a NUL is "
            "refused");
    special(3, GPUMEM_ERROR_INVALID_ENVIRONMENT, "longer than 4095 bytes", "a HOME too long for a path is an "
            "error naming the limit, not cut");
    special(4, GPUMEM_ERROR_INVALID_ENVIRONMENT, "GPUMEM_MAX_PENDING_DEALLOCS_COUNT='lots'", "a bad "
            "GPUMEM_MAX_PENDING_DEALLOCS_COUNT is INVALID_ENVIRONMENT from the scan, not NO_DEVICE");
    int sim = test_on_sim();
    for (size_t i = 0; i < n; i++) {
        const selcase *c = &cases[i];
        if (c->sim_only && !sim) {
            skip(1, "needs simulated devices (GPUMEM_SIM_DEVICES, GPUMEM_SIM_BUSY)");
            continue;
        }
        home = make_home();
        child_result r;
        int rc = run_child(run_case, c, &r);
        remove_home(home);
        int good = rc == 0 && r.status == (int)c->status;
        if (good && c->status == GPUMEM_OK) {
            good = r.value[0] == c->device;
            if (!c->get_default)
                good = good && r.value[1] == (long)c->rule;
            else
                good = good && r.value[2] == 0; /* get_default_device creates no context */
        }
        if (good && c->message)
            good = strstr(r.text, c->message) != NULL;
        ok(good, "%s", c->title);
        if (!good)
            diag("  status %s (want %s), device %ld (want %d), rule %ld, retains %ld, message: %s",
                 gpumem_status_string((gpumem_status)r.status), gpumem_status_string(c->status), r.value[0],
                 c->device, r.value[1], r.value[2], r.text);
    }
    return exit_status();
}
