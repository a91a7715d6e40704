/*
 * test-memory-print.c - the memory report's printer (gpumem/memory.h):
 * gpumem_memory_report_format() and gpumem_memory_report_print(), written
 * from the header: both forms of a report of known numbers, exactly; the
 * size a NULL buffer of size 0 asks for; truncation as snprintf's; a report
 * of a later, longer struct; a live report; bad input, each named, with
 * nothing written; a stream that refuses the text.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpumem.h>

#include "tap.h"

/* A report of known numbers, as gpumem_memory_report() could fill it. */
static struct gpumem_memory_report known(void)
{
    struct gpumem_memory_report r;
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    r.flags = GPUMEM_MEMORY_DEVICE_INFO | GPUMEM_MEMORY_WHOLE_DEVICE;
    r.ordinal = 1;
    r.contexts = 2;
    r.device_total_bytes = 64ULL << 20;
    r.device_free_bytes = 16ULL << 20;
    r.others_bytes = 1000;
    r.device = (struct gpumem_memory_usage){.bytes = 48ULL << 20, .count = 3, .peak_bytes = (48ULL << 20) + 1000,
                                            .peak_count = 4};
    r.pinned = (struct gpumem_memory_usage){.bytes = 4096, .count = 1, .peak_bytes = 4096, .peak_count = 1};
    r.registered = (struct gpumem_memory_usage){.peak_bytes = 8192, .peak_count = 1};
    r.device_reserved_bytes = 56ULL << 20;
    r.peak_device_reserved_bytes = 60ULL << 20;
    r.pools = 1;
    r.pool_held_blocks = 2;
    r.pool_held_bytes = 8ULL << 20;
    r.pool_largest_free_block = 6ULL << 20;
    r.pending_frees = 1;
    r.pending_free_bytes = 512;
    r.driver_allocations = 7;
    r.oom_ladder_runs = 2;
    r.oom_ladder_successes = 1;
    r.oom_callback_calls = 1;
    r.oom_failures = 1;
    return r;
}

static const char want_lines[] =
    "memory of device 1 (every context of it in this process: 2)\n"
    "  total:              64 MiB (67108864 bytes)\n"
    "  free:               16 MiB (16777216 bytes)\n"
    "  other processes:    1000 B (1000 bytes: total - free - this process; the driver's own use too)\n"
    "  this process:       56 MiB of device memory reserved (peak 60 MiB)\n"
    "  live                bytes        count   peak bytes   peak count\n"
    "    device              50331648        3     50332648            4\n"
    "    pinned                  4096        1         4096            1\n"
    "    mapped                     0        0            0            0\n"
    "    managed                    0        0            0            0\n"
    "    registered                 0        0         8192            1\n"
    "  pools:              1, holding 8 MiB unused in 2 blocks (largest free block 6 MiB)\n"
    "  deferred frees:     1 (512 B)\n"
    "  driver allocations: 7\n"
    "  out of memory:      2 ladder runs (1 then succeeded), 1 callback call (0 then succeeded), 1 failure\n";

static const char want_line[] =
    "device 1 (2 contexts): 16 MiB free of 64 MiB, others about 1000 B; this process holds 56 MiB of the device "
    "(peak 60 MiB); live: device 48 MiB in 3 (peak 48.001 MiB in 4), pinned 4 KiB in 1 (peak 4 KiB in 1), "
    "registered 0 B in 0 (peak 8 KiB in 1); pools: 1, 8 MiB unused in 2 blocks (largest free block 6 MiB); "
    "deferred frees: 1 (512 B); driver allocations 7; out of memory: 2 ladder runs (1 succeeded), 1 callback call "
    "(0 succeeded), 1 failure";

/* What gpumem_memory_report_print() wrote to a temporary file. */
static char *printed(const struct gpumem_memory_report *r, unsigned flags, gpumem_status *st)
{
    FILE *f = tmpfile();
    if (f == NULL)
        bail_out("tmpfile failed");
    *st = gpumem_memory_report_print(r, flags, f);
    long n = ftell(f);
    char *text = calloc(1, n > 0 ? (size_t)n + 1 : 1);
    rewind(f);
    if (n > 0 && fread(text, 1, (size_t)n, f) != (size_t)n)
        bail_out("fread failed");
    fclose(f);
    return text;
}

static void forms(void)
{
    struct gpumem_memory_report r = known();
    char buf[2048];
    size_t needed = 0;
    is_int(gpumem_memory_report_format(&r, 0, buf, sizeof buf, &needed), GPUMEM_OK, "format: the lines");
    is_str(buf, want_lines, "every field, in lines");
    is_int(needed, sizeof want_lines, "needed: the text and its NUL");
    is_int(gpumem_memory_report_format(&r, GPUMEM_MEMORY_REPORT_ONE_LINE, buf, sizeof buf, &needed), GPUMEM_OK,
           "format: one line");
    is_str(buf, want_line, "one line: zero kinds (mapped, managed) left out, the rest as the lines say");
    is_int(needed, sizeof want_line, "needed: the line and its NUL");

    gpumem_status st;
    char *text = printed(&r, 0, &st);
    is_int(st, GPUMEM_OK, "print: the lines");
    is_str(text, want_lines, "print writes what format formats");
    free(text);
    text = printed(&r, GPUMEM_MEMORY_REPORT_ONE_LINE, &st);
    is_int(st, GPUMEM_OK, "print: one line");
    ok(strlen(text) == strlen(want_line) + 1 && strncmp(text, want_line, strlen(want_line)) == 0 &&
       text[strlen(want_line)] == '\n', "print: the line, ended by a newline");
    free(text);

    /* Without GPUMEM_MEMORY_DEVICE_INFO and for one context; nothing of a kind, pool or failure. */
    struct gpumem_memory_report z;
    memset(&z, 0, sizeof z);
    z.size = sizeof z;
    is_int(gpumem_memory_report_format(&z, GPUMEM_MEMORY_REPORT_ONE_LINE, buf, sizeof buf, NULL), GPUMEM_OK,
           "an empty report, needed NULL");
    is_str(buf, "device 0 (one context); this process holds 0 B of the device (peak 0 B); live: nothing; no pools; "
           "driver allocations 0", "one line: no device figures, nothing live, no pools, no failures");
    is_int(gpumem_memory_report_format(&z, 0, buf, sizeof buf, NULL), GPUMEM_OK, "its lines");
    like(buf, "memory of device 0 (one context)\n  free and total:     not asked for (GPUMEM_MEMORY_DEVICE_INFO)\n"
         "  this process:", "the lines say the free and total memory were not asked for");
}

static void sizes(void)
{
    struct gpumem_memory_report r = known();
    size_t needed = 0;
    is_int(gpumem_memory_report_format(&r, 0, NULL, 0, &needed), GPUMEM_OK, "NULL and 0 ask for the size");
    is_int(needed, sizeof want_lines, "the size the lines need");
    char *buf = malloc(needed);
    is_int(gpumem_memory_report_format(&r, 0, buf, needed, &needed), GPUMEM_OK, "malloc(needed) holds it");
    is_str(buf, want_lines, "all of it");
    free(buf);

    char small[16];
    memset(small, 'x', sizeof small);
    is_int(gpumem_memory_report_format(&r, GPUMEM_MEMORY_REPORT_ONE_LINE, small, 10, &needed), GPUMEM_OK,
           "a buffer too small: still GPUMEM_OK, as snprintf");
    is_str(small, "device 1 ", "its first size - 1 bytes and a NUL");
    ok(small[10] == 'x', "nothing past size");
    is_int(needed, sizeof want_line, "needed says the whole line's size: more than size, so truncated");
    char one = 'x';
    is_int(gpumem_memory_report_format(&r, 0, &one, 1, &needed), GPUMEM_OK, "size 1");
    ok(one == '\0', "holds the NUL alone");
    one = 'x';
    is_int(gpumem_memory_report_format(&r, 0, &one, 0, &needed), GPUMEM_OK, "size 0 with a buffer");
    ok(one == 'x' && needed == sizeof want_lines, "writes nothing, says the size");

    /* A newer program's longer struct: the fields of this version are printed. */
    unsigned char big[sizeof(struct gpumem_memory_report) + 16];
    memset(big, 0x77, sizeof big);
    memcpy(big, &r, sizeof r);
    ((struct gpumem_memory_report *)(void *)big)->size = sizeof big;
    char out[2048];
    is_int(gpumem_memory_report_format((struct gpumem_memory_report *)(void *)big, 0, out, sizeof out, NULL),
           GPUMEM_OK, "a longer struct");
    is_str(out, want_lines, "its known fields, as for this version's");
}

static void live(void)
{
    gpumem_context *ctx = NULL;
    if (gpumem_context_create(0, &ctx) != GPUMEM_OK)
        bail_out("no context: %s", gpumem_last_error());
    gpumem_array *a = NULL;
    const int64_t n = 1 << 20;
    if (gpumem_device_array(ctx, 1, &n, NULL, gpumem_dtype_builtin(GPUMEM_FLOAT32), 'C', NULL, &a) != GPUMEM_OK)
        bail_out("no array: %s", gpumem_last_error());
    struct gpumem_memory_report r = {.size = sizeof r};
    is_int(gpumem_memory_report(ctx, 0, &r), GPUMEM_OK, "a report of one array");
    char buf[2048];
    is_int(gpumem_memory_report_format(&r, GPUMEM_MEMORY_REPORT_ONE_LINE, buf, sizeof buf, NULL), GPUMEM_OK,
           "formatted");
    like(buf, "; live: device 4 MiB in 1 (peak 4 MiB in 1); no pools; driver allocations 1",
         "the array, as the report counts it");
    gpumem_array_release(a);
    gpumem_context_release(ctx);
}

static void bad_input(void)
{
    struct gpumem_memory_report r = known();
    char buf[64];
    size_t needed = 12345;
    memset(buf, 'x', sizeof buf);
    is_int(gpumem_memory_report_format(NULL, 0, buf, sizeof buf, &needed), GPUMEM_ERROR_NULL_ARGUMENT, "report NULL");
    like(gpumem_last_error(), "gpumem_memory_report_format: argument 'report' is NULL", "names the call and it");
    is_int(gpumem_memory_report_format(&r, 0, NULL, 8, &needed), GPUMEM_ERROR_NULL_ARGUMENT, "buf NULL, size 8");
    like(gpumem_last_error(), "gpumem_memory_report_format: argument 'buf' is NULL with size 8", "names it");
    is_int(gpumem_memory_report_format(&r, 0x6, buf, sizeof buf, &needed), GPUMEM_ERROR_INVALID_VALUE,
           "unknown flags");
    like(gpumem_last_error(), "flags 0x6: unknown bits 0x6", "names the bits");
    r.size = offsetof(struct gpumem_memory_report, oom_failures);
    is_int(gpumem_memory_report_format(&r, 0, buf, sizeof buf, &needed), GPUMEM_ERROR_INVALID_VALUE,
           "report->size too small");
    like(gpumem_last_error(), "report->size is ", "names the field");
    r = known();
    r.flags |= 0x100;
    is_int(gpumem_memory_report_format(&r, 0, buf, sizeof buf, &needed), GPUMEM_ERROR_INVALID_VALUE,
           "report->flags with a bit gpumem_memory_report() never sets");
    like(gpumem_last_error(), "report->flags 0x103 has bits gpumem_memory_report() does not set (0x100)", "says so");
    ok(buf[0] == 'x' && needed == 12345, "nothing written on failure");
    r = known();
    is_int(gpumem_memory_report_print(NULL, 0, stdout), GPUMEM_ERROR_NULL_ARGUMENT, "print: report NULL");
    like(gpumem_last_error(), "gpumem_memory_report_print: argument 'report' is NULL", "names it");
    is_int(gpumem_memory_report_print(&r, 0, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "print: file NULL");
    like(gpumem_last_error(), "gpumem_memory_report_print: argument 'file' is NULL", "names it");
    is_int(gpumem_memory_report_print(&r, 0x8, stdout), GPUMEM_ERROR_INVALID_VALUE, "print: unknown flags");
    like(gpumem_last_error(), "gpumem_memory_report_print: flags 0x8", "names the call and the flags");
    FILE *full = fopen("/dev/full", "w");
    if (full == NULL) {
        skip(2, "no /dev/full to refuse the text");
    } else {
        is_int(gpumem_memory_report_print(&r, 0, full), GPUMEM_ERROR_INVALID_VALUE, "a stream that refuses it");
        like(gpumem_last_error(), "gpumem_memory_report_print: writing to argument 'file' failed: ",
             "says so, with the system's reason");
        fclose(full);
    }
}

int main(void)
{
    forms();
    sizes();
    live();
    bad_input();
    done_testing();
    return exit_status();
}
