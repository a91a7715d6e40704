/*
 * cmd-occupancy.c - gpumem occupancy: pycuda's OccupancyRecord from the
 * command line.
 *
 *   gpumem occupancy --threads N [--smem B] [--regs R] [--device D] [--json]
 *   gpumem occupancy --threads N --cubin FILE --kernel NAME [--smem B] [--device D] [--json]
 *
 * Prints how many blocks of N threads, each using B bytes of shared memory
 * (default 0) and R registers per thread (default 0: unknown), are resident
 * on one multiprocessor of device D (default: the default device), what
 * limits them, the warps and the occupancy, and the limit of every factor.
 * B is a size as the environment's (gpumem_size_parse: 48K, 64KiB, 100000).
 * With --cubin and --kernel, the registers and the static shared memory come
 * from kernel NAME of the module image FILE (a cubin, PTX or a fat binary),
 * loaded through the library's kernel cache in a context of device D: the
 * driver's function attributes on a GPU, the simulator's image reader on the
 * simulator; B is then the dynamic shared memory added to the static.
 * --json prints one JSON object instead (only "error" when the library fails
 * before there is a record).  Options also take the --name=value
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
          "       gpumem occupancy --threads N --cubin FILE --kernel NAME [--smem B] [--device D] [--json]\n"
          "\n"
          "How many blocks of N threads per block, each using B bytes of shared memory\n"
          "(static plus dynamic; default 0) and R registers per thread (default 0:\n"
          "unknown, not limiting), are resident on one multiprocessor, what limits them\n"
          "(device, warps, regs or smem), the resident warps and the occupancy, as\n"
          "cuOccupancyMaxActiveBlocksPerMultiprocessor counts them.  With --cubin and\n"
          "--kernel, the kernel's registers and static shared memory come from the\n"
          "module image, and B is the dynamic shared memory added to the static.\n"
          "\n"
          "Options:\n"
          "  --threads N   threads per block (required)\n"
          "  --smem B      shared memory per block, a size as in the environment:\n"
          "                bytes, or with a K, M, G or T suffix (48K, 64KiB)\n"
          "  --regs R      registers per thread, 0 to 255\n"
          "  --cubin FILE  a module image (cubin, PTX or fat binary) holding the kernel\n"
          "  --kernel NAME the kernel whose registers and shared memory count\n"
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

/* What --cubin and --kernel read from the image. */
typedef struct kernel_info {
    const char *file, *name;
    int registers;            /* GPUMEM_FUNCTION_NUM_REGS */
    int static_smem;          /* GPUMEM_FUNCTION_SHARED_SIZE_BYTES */
    int max_threads;          /* GPUMEM_FUNCTION_MAX_THREADS_PER_BLOCK */
} kernel_info;

static void print_text(int device, const char *name, int cc, const gpumem_occupancy_record *r, int threads,
                       size_t smem, int regs, int maxwarps, const kernel_info *k)
{
    const int limits[4] = {r->tb_limit_device, r->tb_limit_warps, r->tb_limit_registers,
                           r->tb_limit_shared_memory};
    printf("device %d: %s (compute capability %d.%d)\n", device, name, cc / 10, cc % 10);
    if (k != NULL)
        printf("kernel: %s in %s: %d registers per thread, %d B static shared memory, at most %d threads per "
               "block\n", k->name, k->file, k->registers, k->static_smem, k->max_threads);
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
                       size_t smem, int regs, int maxwarps, const kernel_info *k, const char *error)
{
    printf("{\"device\": %d, \"name\": ", device);
    json_string(name);
    printf(", \"compute_capability\": [%d, %d], \"threads\": %d, \"shared_mem\": %zu, \"registers\": %d, ",
           cc / 10, cc % 10, threads, smem, regs);
    if (k != NULL) {
        printf("\"kernel\": {\"name\": ");
        json_string(k->name);
        printf(", \"file\": ");
        json_string(k->file);
        printf(", \"registers\": %d, \"static_shared_mem\": %d, \"max_threads_per_block\": %d}, ", k->registers,
               k->static_smem, k->max_threads);
    }
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

/* A library failure before there is a record: the message to stderr and,
 * with --json, as the object's "error" (gpumem(1): one JSON object, with
 * the library's message in "error" on failure). */
static int fail(int json, const char *msg)
{
    fprintf(stderr, "gpumem occupancy: %s\n", msg);
    if (json) {
        printf("{\"error\": ");
        json_string(msg);
        printf("}\n");
    }
    return 1;
}

/* The whole of file path, in *data (malloc'd) and *size; 0 on success, else
 * errno's value. */
static int read_file(const char *path, unsigned char **data, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return errno;
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = malloc(cap);
    int err = buf == NULL ? ENOMEM : 0;
    while (err == 0) {
        if (n == cap) {
            unsigned char *bigger = cap <= SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
            if (bigger == NULL) {
                err = ENOMEM;
                break;
            }
            buf = bigger;
            cap *= 2;
        }
        errno = 0;
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            if (ferror(f))
                err = errno != 0 ? errno : EIO; /* a directory: EISDIR */
            break;
        }
    }
    fclose(f);
    if (err != 0) {
        free(buf);
        return err;
    }
    *data = buf;
    *size = n;
    return 0;
}

/* Loads file in a context of device dev and reads kernel name's attributes
 * into *k; 0, or 1 with the reason in why. */
static int read_kernel(int dev, const char *file, const char *name, kernel_info *k, char *why, size_t why_size)
{
    unsigned char *image = NULL;
    size_t size = 0;
    int err = read_file(file, &image, &size);
    if (err != 0) {
        snprintf(why, why_size, "cannot read --cubin '%s': %s", file, strerror(err));
        return 1;
    }
    if (size == 0) {
        snprintf(why, why_size, "--cubin '%s' is empty", file);
        free(image);
        return 1;
    }
    gpumem_context *ctx = NULL;
    gpumem_module *mod = NULL;
    gpumem_function *fn = NULL;
    gpumem_status st = gpumem_context_create(dev, &ctx);
    if (st == GPUMEM_OK)
        st = gpumem_module_load(ctx, image, size, &mod);
    if (st == GPUMEM_OK)
        st = gpumem_module_get_function(mod, name, &fn);
    if (st == GPUMEM_OK)
        st = gpumem_function_attribute(fn, GPUMEM_FUNCTION_NUM_REGS, &k->registers);
    if (st == GPUMEM_OK)
        st = gpumem_function_attribute(fn, GPUMEM_FUNCTION_SHARED_SIZE_BYTES, &k->static_smem);
    if (st == GPUMEM_OK)
        st = gpumem_function_attribute(fn, GPUMEM_FUNCTION_MAX_THREADS_PER_BLOCK, &k->max_threads);
    if (st != GPUMEM_OK)
        snprintf(why, why_size, "--cubin '%s' --kernel '%s': %s", file, name, gpumem_last_error());
    gpumem_module_release(mod);
    gpumem_context_release(ctx);
    free(image);
    k->file = file;
    k->name = name;
    return st == GPUMEM_OK ? 0 : 1;
}

int cmd_occupancy(int argc, char **argv)
{
    enum { THREADS, SMEM, REGS, DEVICE, CUBIN, KERNEL, NOPTS };
    static const char *const names[NOPTS] = {"--threads", "--smem", "--regs", "--device", "--cubin", "--kernel"};
    const char *values[NOPTS] = {NULL, NULL, NULL, NULL, NULL, NULL};
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
        for (int k = 0; k < NOPTS && !known; k++) {
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
    if (values[THREADS] == NULL) {
        fputs("gpumem occupancy: --threads is required\n", stderr);
        occupancy_usage(stderr);
        return 2;
    }
    if ((values[CUBIN] == NULL) != (values[KERNEL] == NULL)) {
        fprintf(stderr, "gpumem occupancy: %s needs %s: the kernel NAME in the module image FILE\n",
                values[CUBIN] != NULL ? "--cubin" : "--kernel", values[CUBIN] != NULL ? "--kernel" : "--cubin");
        return 2;
    }
    if (values[CUBIN] != NULL && values[REGS] != NULL) {
        fputs("gpumem occupancy: --regs and --cubin exclude each other: the registers come from the kernel\n",
              stderr);
        return 2;
    }
    unsigned long long threads, regs = 0, device = 0;
    uint64_t smem = 0;
    if (parse_number("--threads", values[THREADS], INT_MAX, &threads) != 0 ||
        (values[REGS] != NULL && parse_number("--regs", values[REGS], INT_MAX, &regs) != 0) ||
        (values[DEVICE] != NULL && parse_number("--device", values[DEVICE], INT_MAX, &device) != 0))
        return 2;
    if (values[SMEM] != NULL && (gpumem_size_parse(values[SMEM], &smem) != GPUMEM_OK || smem > SIZE_MAX)) {
        fprintf(stderr, "gpumem occupancy: --smem '%s' is not a size: bytes, or a number with a K, M, G or T "
                "suffix (48K, 64KiB), as in the environment\n", values[SMEM]);
        return 2;
    }
    if (threads == 0) {
        fputs("gpumem occupancy: --threads must be at least 1\n", stderr);
        return 2;
    }

    gpumem_device_data *dd = NULL;
    int dev = values[DEVICE] != NULL ? (int)device : GPUMEM_DEVICE_DATA_DEFAULT;
    if (gpumem_device_data_create(dev, &dd) != GPUMEM_OK)
        return fail(json, gpumem_last_error());
    int cc = 0, maxwarps = 0;
    gpumem_device_data_get(dd, GPUMEM_DEVICE_DATA_DEVICE, &dev);
    gpumem_device_data_get(dd, GPUMEM_DEVICE_DATA_COMPUTE_CAPABILITY, &cc);
    gpumem_device_data_get(dd, GPUMEM_DEVICE_DATA_WARPS_PER_MP, &maxwarps);
    char name[256] = "";
    if (gpumem_device_name(dev, name, sizeof name) != GPUMEM_OK) {
        gpumem_device_data_destroy(dd);
        return fail(json, gpumem_last_error());
    }

    /* the kernel's registers and static shared memory, from its image */
    kernel_info kinfo, *k = NULL;
    size_t total_smem = (size_t)smem;
    if (values[CUBIN] != NULL) {
        char why[1024] = "";
        if (read_kernel(dev, values[CUBIN], values[KERNEL], &kinfo, why, sizeof why) != 0) {
            gpumem_device_data_destroy(dd);
            return fail(json, why);
        }
        k = &kinfo;
        regs = (unsigned long long)kinfo.registers;
        if ((size_t)kinfo.static_smem > SIZE_MAX - total_smem) {
            fprintf(stderr, "gpumem occupancy: --smem %s and the kernel's static shared memory overflow\n",
                    values[SMEM]);
            gpumem_device_data_destroy(dd);
            return 2;
        }
        total_smem += (size_t)kinfo.static_smem;
    }

    gpumem_occupancy_record r = {.size = sizeof r};
    gpumem_status st = gpumem_occupancy(dd, (int)threads, total_smem, (int)regs, &r);
    gpumem_device_data_destroy(dd);
    char error[1024] = "";
    if (st != GPUMEM_OK)
        snprintf(error, sizeof error, "%s", gpumem_last_error());
    /* Argument errors leave the record unset; a workload that cannot run
     * fills it with 0 blocks. */
    if (st != GPUMEM_OK && r.warps_per_block == 0)
        return fail(json, error);
    /* a kernel compiled for fewer threads per block (its registers, or
     * __launch_bounds__) cannot run this block at all */
    if (st == GPUMEM_OK && k != NULL && threads > (unsigned long long)k->max_threads) {
        st = GPUMEM_ERROR_INVALID_VALUE;
        snprintf(error, sizeof error, "kernel '%s' allows at most %d threads per block, not %llu", k->name,
                 k->max_threads, threads);
        r.tb_per_mp = 0;
        r.warps_per_mp = 0;
        r.occupancy = 0;
    }
    if (json)
        print_json(dev, name, cc, &r, (int)threads, total_smem, (int)regs, maxwarps, k,
                   st == GPUMEM_OK ? NULL : error);
    else
        print_text(dev, name, cc, &r, (int)threads, total_smem, (int)regs, maxwarps, k);
    if (st != GPUMEM_OK) {
        fprintf(stderr, "gpumem occupancy: %s\n", error);
        return 1;
    }
    return 0;
}
