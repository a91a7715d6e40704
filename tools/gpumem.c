/*
 * gpumem - the libgpumem command-line tool.
 *
 *   gpumem info [--json]     backend, driver, devices, the peer-access matrix
 *                            and the default device;
 *                            --json prints one JSON object whatever fails
 *   gpumem info --memory [--json]
 *                            the memory report of the default device
 *   gpumem occupancy ...     occupancy of a launch shape or a kernel (cmd-occupancy.c)
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

#include "json-string.h"

int cmd_occupancy(int argc, char **argv); /* cmd-occupancy.c */
int cmd_bench(int argc, char **argv);            /* cmd-bench.c */
int cmd_trace(int argc, char **argv);            /* trace.c */

static void usage(FILE *out)
{
    fputs("Usage: gpumem COMMAND [OPTIONS]\n"
          "\n"
          "Commands:\n"
          "  info [--json]   show the backend, the driver version, every device (name,\n"
          "                  compute capability, memory, multiprocessors), the peer-access\n"
          "                  matrix and the default device with the rule that chose it\n"
          "  info --memory [--json]\n"
          "                  the default device's memory: free, total, what other processes\n"
          "                  hold, and this process's memory report (gpumem-memory(7))\n"
          "  occupancy --threads N [--smem B] [--regs R] [--device D] [--json]\n"
          "  occupancy --threads N --cubin FILE --kernel NAME [--smem B] [--device D] [--json]\n"
          "                  thread blocks per multiprocessor for a kernel's launch\n"
          "                  shape, and what limits them (pycuda's OccupancyRecord);\n"
          "                  B is a size (48K); --cubin: the kernel's registers and\n"
          "                  shared memory from its module image\n"
          "  bench [--quick] [--rows | --alloc | --peer] [--json | --csv] [--reps N]\n"
          "                  transfer bandwidth of each copy path beside the plain driver\n"
          "                  call; --rows: 2-D copy bandwidth against row width; --alloc:\n"
          "                  the allocation rows alone; --peer: device 0 to 1 and back,\n"
          "                  peer and staged, against cuMemcpyPeer (bench --help: more)\n"
          "  trace summary|plot|export|replay FILE ...\n"
          "                  read a memory trace (GPUMEM_TRACE=FILE): summary, timeline\n"
          "                  picture, Chrome Trace Event export, replay (gpumem trace --help)\n"
          "\n"
          "Options:\n"
          "  -h, --help      show this help and exit\n"
          "  -V, --version   show the version and exit\n"
          "\n"
          "Environment: GPUMEM_BACKEND=auto|cuda|sim (sim: the simulator, for a machine\n"
          "without a GPU), CUDA_DEVICE, ~/.cuda-device, GPUMEM_SIM_*; see gpumem(1).\n",
          out);
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

/* What `gpumem info` found; error is "" when nothing failed. */
typedef struct info {
    const char *backend; /* NULL: no backend loaded */
    int have_version, version, count;
    device_info *devs;
    int *peer;           /* count x count: row can access column; NULL when not learnt */
    int def;             /* the default device, -1 when none */
    gpumem_selection rule;
    char error[1024];
} info;

/* Records the first failure: what failed and the library's message. */
static void info_fail(info *in, const char *what)
{
    if (in->error[0] == '\0')
        snprintf(in->error, sizeof in->error, "%s: %s", what, gpumem_last_error());
}

/* Asks the library everything it can; stops at the first failure but keeps
 * what came before it, so --json can still print it. */
static void gather(info *in)
{
    if (gpumem_backend(&in->backend) != GPUMEM_OK) {
        in->backend = NULL;
        info_fail(in, "backend");
        return;
    }
    if (gpumem_driver_version(&in->version) != GPUMEM_OK) {
        info_fail(in, "driver version");
        return;
    }
    in->have_version = 1;
    int count;
    if (gpumem_device_count(&count) != GPUMEM_OK) {
        info_fail(in, "device count");
        return;
    }
    in->devs = calloc(count > 0 ? (size_t)count : 1, sizeof *in->devs);
    if (in->devs == NULL) {
        snprintf(in->error, sizeof in->error, "out of memory");
        return;
    }
    for (; in->count < count; in->count++) {
        if (query_device(in->count, &in->devs[in->count]) != 0) {
            info_fail(in, "device query");
            return;
        }
    }
    in->peer = calloc((size_t)count * (size_t)count + 1, sizeof *in->peer);
    if (in->peer == NULL) {
        snprintf(in->error, sizeof in->error, "out of memory");
        return;
    }
    for (int a = 0; a < count; a++)
        for (int b = 0; b < count; b++)
            if (gpumem_peer_can_access(a, b, &in->peer[a * count + b]) != GPUMEM_OK) {
                free(in->peer);
                in->peer = NULL;
                info_fail(in, "peer access");
                return;
            }
    /* The default device comes last: its failure still shows the rest. */
    gpumem_context *ctx = NULL;
    if (gpumem_context_create_default(&ctx) != GPUMEM_OK) {
        info_fail(in, "no default device");
        return;
    }
    gpumem_context_get_device(ctx, &in->def);
    gpumem_context_selection(ctx, &in->rule);
    gpumem_context_release(ctx);
}

/* One JSON object on one line, whatever failed: "version" always, null for
 * what could not be learnt, and "error" when something failed. */
static void print_json(const info *in)
{
    printf("{\"version\": ");
    json_string(gpumem_version_string());
    printf(", \"backend\": ");
    if (in->backend)
        json_string(in->backend);
    else
        printf("null");
    if (in->have_version)
        printf(", \"driver_version\": %d", in->version);
    else
        printf(", \"driver_version\": null");
    printf(", \"devices\": [");
    for (int i = 0; i < in->count; i++) {
        const device_info *d = &in->devs[i];
        printf("%s{\"ordinal\": %d, \"name\": ", i ? ", " : "", i);
        json_string(d->name);
        printf(", \"compute_capability\": [%d, %d], \"total_memory\": %llu, \"multiprocessors\": %d}", d->major,
               d->minor, (unsigned long long)d->memory, d->multiprocessors);
    }
    printf("], \"peer_access\": ");
    if (in->peer != NULL) {
        printf("[");
        for (int a = 0; a < in->count; a++) {
            printf("%s[", a ? ", " : "");
            for (int b = 0; b < in->count; b++)
                printf("%s%s", b ? ", " : "", in->peer[a * in->count + b] ? "true" : "false");
            printf("]");
        }
        printf("]");
    } else {
        printf("null");
    }
    printf(", \"default_device\": ");
    if (in->def >= 0) {
        printf("{\"ordinal\": %d, \"source\": ", in->def);
        json_string(gpumem_selection_name(in->rule));
        printf("}");
    } else {
        printf("null");
    }
    if (in->error[0]) {
        printf(", \"error\": ");
        json_string(in->error);
    }
    printf("}\n");
}

static void print_text(const info *in)
{
    printf("libgpumem %s\n", gpumem_version_string());
    if (in->backend == NULL)
        return;
    printf("backend:         %s%s\n", in->backend, strcmp(in->backend, "sim") == 0 ? " (simulator)" : "");
    if (!in->have_version)
        return;
    printf("driver version:  %d.%d (%d)\n", in->version / 1000, in->version % 1000 / 10, in->version);
    printf("devices:         %d\n", in->count);
    for (int i = 0; i < in->count; i++) {
        const device_info *d = &in->devs[i];
        printf("  device %d: %s\n", i, d->name);
        printf("    compute capability: %d.%d\n", d->major, d->minor);
        printf("    memory:             %.2f GiB (%llu bytes)\n", (double)d->memory / (1 << 30),
               (unsigned long long)d->memory);
        printf("    multiprocessors:    %d\n", d->multiprocessors);
    }
    if (in->peer != NULL && in->count > 1) {
        printf("peer access:     (y: the row's device can access the column's memory)\n        ");
        for (int b = 0; b < in->count; b++)
            printf(" %3d", b);
        printf("\n");
        for (int a = 0; a < in->count; a++) {
            printf("    %3d ", a);
            for (int b = 0; b < in->count; b++)
                printf(" %3s", a == b ? "-" : in->peer[a * in->count + b] ? "y" : "n");
            printf("\n");
        }
    }
    if (in->def >= 0)
        printf("default device:  %d (chosen by %s)\n", in->def, gpumem_selection_name(in->rule));
    else
        printf("default device:  none\n");
}

static int cmd_info(int json)
{
    info in = {.def = -1, .rule = GPUMEM_SELECTION_SCAN};
    gather(&in);
    if (json)
        print_json(&in);
    else
        print_text(&in);
    free(in.devs);
    free(in.peer);
    if (in.error[0]) {
        fprintf(stderr, "gpumem: %s\n", in.error);
        return 1;
    }
    return 0;
}

/* ---- info --memory ---- */

static void json_usage(const char *name, const struct gpumem_memory_usage *u)
{
    printf(", \"%s\": {\"bytes\": %llu, \"count\": %llu, \"peak_bytes\": %llu, \"peak_count\": %llu}", name,
           (unsigned long long)u->bytes, (unsigned long long)u->count, (unsigned long long)u->peak_bytes,
           (unsigned long long)u->peak_count);
}

/* gpumem_memory_report of the default device, all its contexts in this
 * process, with the driver's free and total memory. */
static int cmd_info_memory(int json)
{
    struct gpumem_memory_report r;
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    char name[256] = "", error[1100] = "";
    gpumem_selection rule = GPUMEM_SELECTION_SCAN;
    gpumem_context *ctx = NULL;
    if (gpumem_context_create_default(&ctx) != GPUMEM_OK)
        snprintf(error, sizeof error, "no default device: %s", gpumem_last_error());
    else if (gpumem_memory_report(ctx, GPUMEM_MEMORY_DEVICE_INFO | GPUMEM_MEMORY_WHOLE_DEVICE, &r) != GPUMEM_OK ||
             gpumem_device_name(r.ordinal, name, sizeof name) != GPUMEM_OK)
        snprintf(error, sizeof error, "memory report: %s", gpumem_last_error());
    else
        gpumem_context_selection(ctx, &rule);
    if (json) {
        printf("{\"version\": ");
        json_string(gpumem_version_string());
        if (error[0] == '\0') {
            printf(", \"ordinal\": %d, \"name\": ", r.ordinal);
            json_string(name);
            printf(", \"source\": ");
            json_string(gpumem_selection_name(rule));
            printf(", \"device_total_bytes\": %llu, \"device_free_bytes\": %llu, \"others_bytes\": %llu, "
                   "\"contexts\": %llu, \"device_reserved_bytes\": %llu, \"peak_device_reserved_bytes\": %llu",
                   (unsigned long long)r.device_total_bytes, (unsigned long long)r.device_free_bytes,
                   (unsigned long long)r.others_bytes, (unsigned long long)r.contexts,
                   (unsigned long long)r.device_reserved_bytes, (unsigned long long)r.peak_device_reserved_bytes);
            json_usage("device", &r.device);
            json_usage("pinned", &r.pinned);
            json_usage("mapped", &r.mapped);
            json_usage("managed", &r.managed);
            json_usage("registered", &r.registered);
            printf(", \"pools\": %llu, \"pool_held_blocks\": %llu, \"pool_held_bytes\": %llu, "
                   "\"pool_largest_free_block\": %llu, \"pending_frees\": %llu, \"pending_free_bytes\": %llu, "
                   "\"driver_allocations\": %llu, \"oom_ladder_runs\": %llu, \"oom_ladder_successes\": %llu, "
                   "\"oom_callback_calls\": %llu, \"oom_callback_successes\": %llu, \"oom_failures\": %llu",
                   (unsigned long long)r.pools, (unsigned long long)r.pool_held_blocks,
                   (unsigned long long)r.pool_held_bytes, (unsigned long long)r.pool_largest_free_block,
                   (unsigned long long)r.pending_frees, (unsigned long long)r.pending_free_bytes,
                   (unsigned long long)r.driver_allocations, (unsigned long long)r.oom_ladder_runs,
                   (unsigned long long)r.oom_ladder_successes, (unsigned long long)r.oom_callback_calls,
                   (unsigned long long)r.oom_callback_successes, (unsigned long long)r.oom_failures);
        } else {
            printf(", \"error\": ");
            json_string(error);
        }
        printf("}\n");
    } else if (error[0] == '\0') {
        printf("libgpumem %s\n", gpumem_version_string());
        printf("device %d: %s (the default device, chosen by %s)\n", r.ordinal, name, gpumem_selection_name(rule));
        fflush(stdout);
        if (gpumem_memory_report_print(&r, 0, stdout) != GPUMEM_OK)
            snprintf(error, sizeof error, "%s", gpumem_last_error());
    }
    gpumem_context_release(ctx);
    if (error[0]) {
        fprintf(stderr, "gpumem: %s\n", error);
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
        return cmd_occupancy(argc - 1, argv + 1);
    if (strcmp(cmd, "bench") == 0)
        return cmd_bench(argc - 1, argv + 1);
    if (strcmp(cmd, "trace") == 0)
        return cmd_trace(argc - 1, argv + 1);
    if (strcmp(cmd, "info") == 0) {
        int json = 0, memory = 0;
        for (int i = 2; i < argc; i++) {
            if (strcmp(argv[i], "--json") == 0) {
                json = 1;
            } else if (strcmp(argv[i], "--memory") == 0) {
                memory = 1;
            } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
                usage(stdout);
                return 0;
            } else {
                fprintf(stderr, "gpumem info: unknown argument '%s'\n", argv[i]);
                usage(stderr);
                return 2;
            }
        }
        return memory ? cmd_info_memory(json) : cmd_info(json);
    }
    fprintf(stderr, "gpumem: unknown command '%s'\n", cmd);
    usage(stderr);
    return 2;
}
