/*
 * memprint.c - the memory report as text (gpumem/memory.h):
 * gpumem_memory_report_format() and gpumem_memory_report_print(), the
 * one-line form that the out-of-memory message quotes (memstats.c), and
 * the byte figures both write.  Pure code: it reads a report, nothing else.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "memstats.h"

const char *gm_mem_human(uint64_t b, char *buf, size_t size)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int u = 0;
    uint64_t scale = 1;
    while (u < 5 && b / scale >= 1024) {
        scale <<= 10;
        u++;
    }
    double v = (double)b / (double)scale;
    if (b % scale == 0)
        snprintf(buf, size, "%llu %s", (unsigned long long)(b / scale), units[u]);
    else if ((long long)(v * 10.0 + 0.5) % 10 != 0) /* a figure that does not look exact when it is not */
        snprintf(buf, size, "%.1f %s", v, units[u]);
    else if ((long long)(v * 1000.0 + 0.5) % 1000 != 0)
        snprintf(buf, size, "%.3f %s", v, units[u]);
    else
        snprintf(buf, size, "%llu B", (unsigned long long)b);
    return buf;
}

/* Text written as snprintf() writes it: what fits into buf, len counting all. */
typedef struct gm_text {
    char *buf;
    size_t size, len;
} gm_text;

__attribute__((format(printf, 2, 3))) static void put(gm_text *t, const char *fmt, ...)
{
    char part[512]; /* every part below is shorter */
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(part, sizeof part, fmt, ap);
    va_end(ap);
    if (n <= 0)
        return;
    size_t k = (size_t)n < sizeof part ? (size_t)n : sizeof part - 1;
    if (t->size > 0 && t->len < t->size - 1) {
        size_t room = t->size - 1 - t->len;
        memcpy(t->buf + t->len, part, k < room ? k : room);
    }
    t->len += k;
}

typedef unsigned long long ull;

static const char *h(uint64_t b, char *buf)
{
    return gm_mem_human(b, buf, 32);
}

static void kinds_of(const struct gpumem_memory_report *r, const char **names,
                     const struct gpumem_memory_usage **u)
{
    names[0] = "device", u[0] = &r->device;
    names[1] = "pinned", u[1] = &r->pinned;
    names[2] = "mapped", u[2] = &r->mapped;
    names[3] = "managed", u[3] = &r->managed;
    names[4] = "registered", u[4] = &r->registered;
}

static const char *plural(uint64_t n)
{
    return n == 1 ? "" : "s";
}

static void lines(gm_text *t, const struct gpumem_memory_report *r)
{
    char a[32], b[32];
    if (r->flags & GPUMEM_MEMORY_WHOLE_DEVICE)
        put(t, "memory of device %d (every context of it in this process: %llu)\n", r->ordinal, (ull)r->contexts);
    else
        put(t, "memory of device %d (one context)\n", r->ordinal);
    if (r->flags & GPUMEM_MEMORY_DEVICE_INFO) {
        put(t, "  total:              %s (%llu bytes)\n", h(r->device_total_bytes, a), (ull)r->device_total_bytes);
        put(t, "  free:               %s (%llu bytes)\n", h(r->device_free_bytes, a), (ull)r->device_free_bytes);
        put(t, "  other processes:    %s (%llu bytes: total - free - this process; the driver's own use too)\n",
            h(r->others_bytes, a), (ull)r->others_bytes);
    } else {
        put(t, "  free and total:     not asked for (GPUMEM_MEMORY_DEVICE_INFO)\n");
    }
    put(t, "  this process:       %s of device memory reserved (peak %s)\n", h(r->device_reserved_bytes, a),
        h(r->peak_device_reserved_bytes, b));
    put(t, "  live                bytes        count   peak bytes   peak count\n");
    const char *names[5];
    const struct gpumem_memory_usage *u[5];
    kinds_of(r, names, u);
    for (int i = 0; i < 5; i++)
        put(t, "    %-15s %12llu %8llu %12llu %12llu\n", names[i], (ull)u[i]->bytes, (ull)u[i]->count,
            (ull)u[i]->peak_bytes, (ull)u[i]->peak_count);
    put(t, "  pools:              %llu, holding %s unused in %llu blocks (largest free block %s)\n", (ull)r->pools,
        h(r->pool_held_bytes, a), (ull)r->pool_held_blocks, h(r->pool_largest_free_block, b));
    put(t, "  deferred frees:     %llu (%s)\n", (ull)r->pending_frees, h(r->pending_free_bytes, a));
    put(t, "  driver allocations: %llu\n", (ull)r->driver_allocations);
    put(t, "  out of memory:      %llu ladder run%s (%llu then succeeded), %llu callback call%s (%llu then "
        "succeeded), %llu failure%s\n", (ull)r->oom_ladder_runs, plural(r->oom_ladder_runs),
        (ull)r->oom_ladder_successes, (ull)r->oom_callback_calls, plural(r->oom_callback_calls),
        (ull)r->oom_callback_successes, (ull)r->oom_failures, plural(r->oom_failures));
}

static void one_line(gm_text *t, const struct gpumem_memory_report *r)
{
    char a[32], b[32], c[32];
    if (r->flags & GPUMEM_MEMORY_WHOLE_DEVICE)
        put(t, "device %d (%llu context%s)", r->ordinal, (ull)r->contexts, plural(r->contexts));
    else
        put(t, "device %d (one context)", r->ordinal);
    if (r->flags & GPUMEM_MEMORY_DEVICE_INFO)
        put(t, ": %s free of %s, others about %s", h(r->device_free_bytes, a), h(r->device_total_bytes, b),
            h(r->others_bytes, c));
    put(t, "; this process holds %s of the device (peak %s); live:", h(r->device_reserved_bytes, a),
        h(r->peak_device_reserved_bytes, b));
    const char *names[5];
    const struct gpumem_memory_usage *u[5];
    kinds_of(r, names, u);
    int shown = 0;
    for (int i = 0; i < 5; i++) {
        if (u[i]->bytes == 0 && u[i]->count == 0 && u[i]->peak_bytes == 0 && u[i]->peak_count == 0)
            continue;
        put(t, "%s %s %s in %llu (peak %s in %llu)", shown++ ? "," : "", names[i], h(u[i]->bytes, a),
            (ull)u[i]->count, h(u[i]->peak_bytes, b), (ull)u[i]->peak_count);
    }
    if (shown == 0)
        put(t, " nothing");
    if (r->pools == 0 && r->pool_held_blocks == 0)
        put(t, "; no pools");
    else
        put(t, "; pools: %llu, %s unused in %llu blocks (largest free block %s)", (ull)r->pools,
            h(r->pool_held_bytes, a), (ull)r->pool_held_blocks, h(r->pool_largest_free_block, b));
    if (r->pending_frees != 0 || r->pending_free_bytes != 0)
        put(t, "; deferred frees: %llu (%s)", (ull)r->pending_frees, h(r->pending_free_bytes, a));
    put(t, "; driver allocations %llu", (ull)r->driver_allocations);
    if (r->oom_ladder_runs != 0 || r->oom_callback_calls != 0 || r->oom_failures != 0) {
        put(t, "; out of memory: %llu ladder run%s (%llu succeeded)", (ull)r->oom_ladder_runs,
            plural(r->oom_ladder_runs), (ull)r->oom_ladder_successes);
        if (r->oom_callback_calls != 0)
            put(t, ", %llu callback call%s (%llu succeeded)", (ull)r->oom_callback_calls,
                plural(r->oom_callback_calls), (ull)r->oom_callback_successes);
        put(t, ", %llu failure%s", (ull)r->oom_failures, plural(r->oom_failures));
    }
}

size_t gm_memory_report_text(const struct gpumem_memory_report *r, unsigned flags, char *buf, size_t size)
{
    gm_text t = {buf, size, 0};
    if (flags & GPUMEM_MEMORY_REPORT_ONE_LINE)
        one_line(&t, r);
    else
        lines(&t, r);
    if (size > 0)
        buf[t.len < size ? t.len : size - 1] = '\0';
    return t.len + 1;
}

/* The report as a 1.1 report: fields beyond its size (later versions') are
 * not read; the caller checked that the 1.1 fields are there. */
static gpumem_status check(const char *what, const struct gpumem_memory_report *report, unsigned flags)
{
    if (flags & ~(unsigned)GPUMEM_MEMORY_REPORT_ONE_LINE)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: flags 0x%x: unknown bits 0x%x (only "
                        "GPUMEM_MEMORY_REPORT_ONE_LINE, 0x%x, is known)", what, flags,
                        flags & ~(unsigned)GPUMEM_MEMORY_REPORT_ONE_LINE, GPUMEM_MEMORY_REPORT_ONE_LINE);
    if (report->size < sizeof(struct gpumem_memory_report))
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: report->size is %zu; set it to "
                        "sizeof(struct gpumem_memory_report) (%zu) and fill it with gpumem_memory_report()", what,
                        report->size, sizeof(struct gpumem_memory_report));
    const unsigned known = GPUMEM_MEMORY_DEVICE_INFO | GPUMEM_MEMORY_WHOLE_DEVICE;
    if (report->flags & ~known)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: report->flags 0x%x has bits gpumem_memory_report() "
                        "does not set (0x%x): fill the report with gpumem_memory_report()", what, report->flags,
                        report->flags & ~known);
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_memory_report_format(const struct gpumem_memory_report *report, unsigned flags,
                                                     char *buf, size_t size, size_t *needed)
{
    const char *what = "gpumem_memory_report_format";
    GM_CHECK_NULL(report);
    if (buf == NULL && size > 0)
        return gm_error(GPUMEM_ERROR_NULL_ARGUMENT, "%s: argument 'buf' is NULL with size %zu", what, size);
    GM_FORWARD_IF_ERROR(check(what, report, flags));
    size_t n = gm_memory_report_text(report, flags, buf, size);
    if (needed != NULL)
        *needed = n;
    return GPUMEM_OK;
}

GPUMEM_API gpumem_status gpumem_memory_report_print(const struct gpumem_memory_report *report, unsigned flags,
                                                    FILE *file)
{
    const char *what = "gpumem_memory_report_print";
    GM_CHECK_NULL(report);
    GM_CHECK_NULL(file);
    GM_FORWARD_IF_ERROR(check(what, report, flags));
    char small[2048];
    size_t n = gm_memory_report_text(report, flags, small, sizeof small);
    char *text = small;
    if (n > sizeof small) {
        if ((text = malloc(n)) == NULL)
            return gm_error(GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "%s: out of host memory (%zu bytes)", what, n);
        gm_memory_report_text(report, flags, text, n);
    }
    size_t len = n - 1;
    bool nl = (flags & GPUMEM_MEMORY_REPORT_ONE_LINE) != 0;
    errno = 0;
    bool written = fwrite(text, 1, len, file) == len && (!nl || fputc('\n', file) != EOF) && fflush(file) == 0;
    int e = errno;
    if (text != small)
        free(text);
    if (!written)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: writing to argument 'file' failed: %s", what,
                        e != 0 ? strerror(e) : "the stream refused it");
    return GPUMEM_OK;
}
