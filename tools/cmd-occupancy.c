/*
 * cmd-occupancy.c - gpumem occupancy: pycuda's OccupancyRecord from the
 * command line.
 *
 *   gpumem occupancy --threads N [--smem B] [--regs R] [--device D] [--json]
 *
 * Prints how many blocks of N threads, each using B bytes of shared memory
 * (default 0) and R registers per thread (default 0: unknown), are resident
 * on one multiprocessor of device D (default: the default device), what
 * limits them, the warps and the occupancy, and the limit of every factor.
 * --json prints one JSON object instead.  Options also take the --name=value
 * form.
 *
 * Exit status: 0 success; 1 a library failure, including a workload that
 * cannot run (too many threads, registers or shared memory: the record is
 * still printed, with 0 blocks, and the reason goes to stderr and, with
 * --json, into the object's "error"); 2 a usage error.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpumem.h>
#include <gpumem/occupancy.h>

#include "json-string.h"

/* The entry point tools/gpumem.c calls with argv[0] = "occupancy". */
int cmd_occupancy(int argc, char **argv);

static void occupancy_usage(FILE *out)
{
    fputs("Usage: gpumem occupancy --threads N [--smem B] [--regs R] [--device D] [--json]\n"
          "\n"
          "How many blocks of N threads per block, each using B bytes of shared memory\n"
          "(static plus dynamic; default 0) and R registers per thread (default 0:\n"
          "unknown, not limiting), are resident on one multiprocessor, what limits them\n"
          "(device, warps, regs or smem), the resident warps and the occupancy, as\n"
          "cuOccupancyMaxActiveBlocksPerMultiprocessor counts them.\n"
          "\n"
          "Options:\n"
          "  --threads N   threads per block (required)\n"
          "  --smem B      shared memory per block, in bytes\n"
          "  --regs R      registers per thread, 0 to 255\n"
          "  --device D    device ordinal (default: the default device: CUDA_DEVICE,\n"
          "                ~/.cuda-device, else the first that gives a context)\n"
          "  --json        print one JSON object\n"
          "  -h, --help    show this help\n"
          "\n"
          "Exit status: 0 success, 1 a library failure or a workload that cannot run\n"
          "(too many threads, registers or shared memory), 2 a usage error.\n",
          out);
}

/* A decimal integer in [min, max]; 0 on success. */
static int parse_number(const char *opt, const char *text, unsigned long long max, unsigned long long *out)
{
    if (text == NULL || *text == '\0' || *text == '-' || *text == '+') {
        fprintf(stderr, "gpumem occupancy: %s needs a non-negative decimal number\n", opt);
        return -1;
    }
    for (const char *p = text; *p; p++) {
        if (*p < '0' || *p > '9') {
            fprintf(stderr, "gpumem occupancy: %s '%s' is not a decimal number\n", opt, text);
            return -1;
        }
    }
    errno = 0;
    unsigned long long v = strtoull(text, NULL, 10);
    if (errno == ERANGE || v > max) {
        fprintf(stderr, "gpumem occupancy: %s %s is too large (at most %llu)\n", opt, text, max);
        return -1;
    }
    *out = v;
    return 0;
}

static void print_limit_json(int limit)
{
    if (limit == GPUMEM_OCCUPANCY_NO_LIMIT)
        fputs("null", stdout);
    else
        printf("%d", limit);
}

static const char *const factor_words[4] = {"device (blocks per multiprocessor)", "warps", "registers",
                                            "shared memory"};

static void print_text(int device, const char *name, int cc, const gpumem_occupancy_record *r, int threads,
                       size_t smem, int regs, int maxwarps)
{
    const int limits[4] = {r->tb_limit_device, r->tb_limit_warps, r->tb_limit_registers,
                           r->tb_limit_shared_memory};
    printf("device %d: %s (compute capability %d.%d)\n", device, name, cc / 10, cc % 10);
    printf("block: %d threads (%d warps), %zu B shared memory, %d registers per thread%s\n", threads,
           r->warps_per_block, smem, regs, regs == 0 ? " (unknown)" : "");
    printf("tb_per_mp:     %d\n", r->tb_per_mp);
    printf("limited_by:    %s\n", gpumem_occupancy_limit_name(r->limited_by));
    printf("warps_per_mp:  %d of %d\n", r->warps_per_mp, maxwarps);
    printf("occupancy:     %.4f (%.1f%%)\n", r->occupancy, r->occupancy * 100.0);
    printf("blocks per multiprocessor each factor allows:\n");
    for (int f = 0; f < 4; f++) {
        char value[32];
        if (limits[f] == GPUMEM_OCCUPANCY_NO_LIMIT)
            snprintf(value, sizeof value, "no limit");
        else
            snprintf(value, sizeof value, "%d", limits[f]);
        if ((r->limiting_factors & (1u << f)) != 0)
            printf("  %-36s %-9s <- limits\n", factor_words[f], value);
        else
            printf("  %-36s %s\n", factor_words[f], value);
    }
    printf("allocated per block: %d registers, %zu B shared memory\n", r->registers_per_block,
           r->shared_memory_per_block);
}

static void print_json(int device, const char *name, int cc, const gpumem_occupancy_record *r, int threads,
                       size_t smem, int regs, int maxwarps, const char *error)
{
    printf("{\"device\": %d, \"name\": ", device);
    json_string(name);
    printf(", \"compute_capability\": [%d, %d], \"threads\": %d, \"shared_mem\": %zu, \"registers\": %d, ",
           cc / 10, cc % 10, threads, smem, regs);
    printf("\"tb_per_mp\": %d, \"limited_by\": ", r->tb_per_mp);
    json_string(gpumem_occupancy_limit_name(r->limited_by));
    printf(", \"limiting_factors\": [");
    int first = 1;
    for (int f = 0; f < 4; f++) {
        if ((r->limiting_factors & (1u << f)) != 0) {
            printf("%s", first ? "" : ", ");
            json_string(gpumem_occupancy_limit_name((gpumem_occupancy_limit)f));
            first = 0;
        }
    }
    printf("], \"warps_per_mp\": %d, \"max_warps_per_mp\": %d, \"occupancy\": %.6g, \"limits\": {", r->warps_per_mp,
           maxwarps, r->occupancy);
    printf("\"device\": ");
    print_limit_json(r->tb_limit_device);
    printf(", \"warps\": ");
    print_limit_json(r->tb_limit_warps);
    printf(", \"regs\": ");
    print_limit_json(r->tb_limit_registers);
    printf(", \"smem\": ");
    print_limit_json(r->tb_limit_shared_memory);
    printf("}, \"warps_per_block\": %d, \"registers_per_block\": %d, \"shared_memory_per_block\": %zu",
           r->warps_per_block, r->registers_per_block, r->shared_memory_per_block);
    if (error != NULL) {
        printf(", \"error\": ");
        json_string(error);
    }
    printf("}\n");
}

int cmd_occupancy(int argc, char **argv)
{
    static const char *const names[] = {"--threads", "--smem", "--regs", "--device"};
    const char *values[4] = {NULL, NULL, NULL, NULL};
    int json = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--json") == 0) {
            json = 1;
            continue;
        }
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            occupancy_usage(stdout);
            return 0;
        }
        int known = 0;
        for (int k = 0; k < 4 && !known; k++) {
            size_t len = strlen(names[k]);
            if (strncmp(arg, names[k], len) != 0 || (arg[len] != '\0' && arg[len] != '='))
                continue;
            known = 1;
            if (arg[len] == '=') {
                values[k] = arg + len + 1;
            } else if (i + 1 < argc) {
                values[k] = argv[++i];
            } else {
                fprintf(stderr, "gpumem occupancy: %s needs a value\n", names[k]);
                occupancy_usage(stderr);
                return 2;
            }
        }
        if (!known) {
            fprintf(stderr, "gpumem occupancy: unknown argument '%s'\n", arg);
            occupancy_usage(stderr);
            return 2;
        }
    }
    if (values[0] == NULL) {
        fputs("gpumem occupancy: --threads is required\n", stderr);
        occupancy_usage(stderr);
        return 2;
    }
    unsigned long long threads, smem = 0, regs = 0, device = 0;
    if (parse_number("--threads", values[0], INT_MAX, &threads) != 0 ||
        (values[1] != NULL && parse_number("--smem", values[1], SIZE_MAX, &smem) != 0) ||
        (values[2] != NULL && parse_number("--regs", values[2], INT_MAX, &regs) != 0) ||
        (values[3] != NULL && parse_number("--device", values[3], INT_MAX, &device) != 0))
        return 2;
    if (threads == 0) {
        fputs("gpumem occupancy: --threads must be at least 1\n", stderr);
        return 2;
    }

    gpumem_device_data *dd = NULL;
    int dev = values[3] != NULL ? (int)device : GPUMEM_DEVICE_DATA_DEFAULT;
    if (gpumem_device_data_create(dev, &dd) != GPUMEM_OK) {
        fprintf(stderr, "gpumem occupancy: %s\n", gpumem_last_error());
        return 1;
    }
    int cc = 0, maxwarps = 0;
    gpumem_device_data_get(dd, GPUMEM_DEVICE_DATA_DEVICE, &dev);
    gpumem_device_data_get(dd, GPUMEM_DEVICE_DATA_COMPUTE_CAPABILITY, &cc);
    gpumem_device_data_get(dd, GPUMEM_DEVICE_DATA_WARPS_PER_MP, &maxwarps);
    char name[256] = "";
    if (gpumem_device_name(dev, name, sizeof name) != GPUMEM_OK) {
        fprintf(stderr, "gpumem occupancy: %s\n", gpumem_last_error());
        gpumem_device_data_destroy(dd);
        return 1;
    }

    gpumem_occupancy_record r = {.size = sizeof r};
    gpumem_status st = gpumem_occupancy(dd, (int)threads, (size_t)smem, (int)regs, &r);
    gpumem_device_data_destroy(dd);
    char error[1024] = "";
    if (st != GPUMEM_OK)
        snprintf(error, sizeof error, "%s", gpumem_last_error());
    /* Argument errors leave the record unset; a workload that cannot run
     * fills it with 0 blocks. */
    if (st != GPUMEM_OK && r.warps_per_block == 0) {
        fprintf(stderr, "gpumem occupancy: %s\n", error);
        return 1;
    }
    if (json)
        print_json(dev, name, cc, &r, (int)threads, (size_t)smem, (int)regs, maxwarps, st == GPUMEM_OK ? NULL : error);
    else
        print_text(dev, name, cc, &r, (int)threads, (size_t)smem, (int)regs, maxwarps);
    if (st != GPUMEM_OK) {
        fprintf(stderr, "gpumem occupancy: %s\n", error);
        return 1;
    }
    return 0;
}
