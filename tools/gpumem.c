/*
 * gpumem - the libgpumem command-line tool.
 *
 *   gpumem info [--json]     backend, driver, devices and the default device
 *   gpumem occupancy ...     occupancy of a launch shape (cmd-occupancy.c)
 *   gpumem --help | --version
 *
 * Exit status: 0 success, 1 a library failure (its message on stderr),
 * 2 a usage error.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpumem.h>

int gpumem_cmd_occupancy(int argc, char **argv); /* cmd-occupancy.c */
int cmd_bench(int argc, char **argv);            /* cmd-bench.c */

static void usage(FILE *out)
{
    fputs("Usage: gpumem COMMAND [OPTIONS]\n"
          "\n"
          "Commands:\n"
          "  info [--json]   show the backend, the driver version, every device (name,\n"
          "                  compute capability, memory, multiprocessors) and the default\n"
          "                  device with the rule that chose it\n"
          "  occupancy --threads N [--smem B] [--regs R] [--device D] [--json]\n"
          "                  thread blocks per multiprocessor for a kernel's launch\n"
          "                  shape, and what limits them (pycuda's OccupancyRecord)\n"
          "  bench [--quick] [--rows] [--json | --csv] [--reps N]\n"
          "                  transfer bandwidth of each copy path beside the plain driver\n"
          "                  call; --rows: 2-D copy bandwidth against row width\n"
          "\n"
          "Options:\n"
          "  -h, --help      show this help and exit\n"
          "  -V, --version   show the version and exit\n"
          "\n"
          "Environment: GPUMEM_BACKEND=auto|cuda|sim, CUDA_DEVICE, ~/.cuda-device,\n"
          "GPUMEM_SIM_* (see the README).\n",
          out);
}

static int fail(const char *what)
{
    fprintf(stderr, "gpumem: %s: %s\n", what, gpumem_last_error());
    return 1;
}

/* Writes s as a JSON string literal. */
static void json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

typedef struct device_info {
    char name[256];
    int major, minor, multiprocessors;
    uint64_t memory;
} device_info;

static int query_device(int dev, device_info *d)
{
    if (gpumem_device_name(dev, d->name, sizeof d->name) != GPUMEM_OK ||
        gpumem_device_compute_capability(dev, &d->major, &d->minor) != GPUMEM_OK ||
        gpumem_device_total_memory(dev, &d->memory) != GPUMEM_OK ||
        gpumem_device_attribute(dev, GPUMEM_DEVICE_MULTIPROCESSORS, &d->multiprocessors) != GPUMEM_OK)
        return -1;
    return 0;
}

static int cmd_info(int json)
{
    const char *backend;
    int version, count;
    if (gpumem_backend(&backend) != GPUMEM_OK)
        return fail("backend");
    if (gpumem_driver_version(&version) != GPUMEM_OK)
        return fail("driver version");
    if (gpumem_device_count(&count) != GPUMEM_OK)
        return fail("device count");
    device_info *devs = calloc(count > 0 ? (size_t)count : 1, sizeof *devs);
    if (devs == NULL) {
        fputs("gpumem: out of memory\n", stderr);
        return 1;
    }
    for (int i = 0; i < count; i++) {
        if (query_device(i, &devs[i]) != 0) {
            free(devs);
            return fail("device query");
        }
    }

    /* The default device comes last: its failure still shows the rest. */
    gpumem_context *ctx = NULL;
    gpumem_status st = gpumem_context_create_default(&ctx);
    char error[1024] = "";
    int def = -1;
    gpumem_selection rule = GPUMEM_SELECTION_SCAN;
    if (st == GPUMEM_OK) {
        gpumem_context_get_device(ctx, &def);
        gpumem_context_selection(ctx, &rule);
        gpumem_context_release(ctx);
    } else {
        snprintf(error, sizeof error, "%s", gpumem_last_error());
    }

    if (json) {
        printf("{\"backend\": ");
        json_string(backend);
        printf(", \"driver_version\": %d, \"devices\": [", version);
        for (int i = 0; i < count; i++) {
            printf("%s{\"ordinal\": %d, \"name\": ", i ? ", " : "", i);
            json_string(devs[i].name);
            printf(", \"compute_capability\": [%d, %d], \"total_memory\": %llu, \"multiprocessors\": %d}",
                   devs[i].major, devs[i].minor, (unsigned long long)devs[i].memory, devs[i].multiprocessors);
        }
        printf("], \"default_device\": ");
        if (def >= 0) {
            printf("{\"ordinal\": %d, \"source\": ", def);
            json_string(gpumem_selection_name(rule));
            printf("}");
        } else {
            printf("null, \"error\": ");
            json_string(error);
        }
        printf("}\n");
    } else {
        printf("libgpumem %s\n", gpumem_version_string());
        printf("backend:         %s%s\n", backend, strcmp(backend, "sim") == 0 ? " (simulator)" : "");
        printf("driver version:  %d.%d (%d)\n", version / 1000, version % 1000 / 10, version);
        printf("devices:         %d\n", count);
        for (int i = 0; i < count; i++) {
            printf("  device %d: %s\n", i, devs[i].name);
            printf("    compute capability: %d.%d\n", devs[i].major, devs[i].minor);
            printf("    memory:             %.2f GiB (%llu bytes)\n", (double)devs[i].memory / (1 << 30),
                   (unsigned long long)devs[i].memory);
            printf("    multiprocessors:    %d\n", devs[i].multiprocessors);
        }
        if (def >= 0)
            printf("default device:  %d (chosen by %s)\n", def, gpumem_selection_name(rule));
        else
            printf("default device:  none\n");
    }
    free(devs);
    if (def < 0) {
        fprintf(stderr, "gpumem: no default device: %s\n", error);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "-V") == 0 || strcmp(cmd, "--version") == 0) {
        printf("gpumem (libgpumem) %s\n", gpumem_version_string());
        return 0;
    }
    if (strcmp(cmd, "occupancy") == 0)
        return gpumem_cmd_occupancy(argc - 1, argv + 1);
    if (strcmp(cmd, "bench") == 0)
        return cmd_bench(argc - 1, argv + 1);
    if (strcmp(cmd, "info") == 0) {
        int json = 0;
        for (int i = 2; i < argc; i++) {
            if (strcmp(argv[i], "--json") == 0) {
                json = 1;
            } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
                usage(stdout);
                return 0;
            } else {
                fprintf(stderr, "gpumem info: unknown argument '%s'\n", argv[i]);
                usage(stderr);
                return 2;
            }
        }
        return cmd_info(json);
    }
    fprintf(stderr, "gpumem: unknown command '%s'\n", cmd);
    usage(stderr);
    return 2;
}
