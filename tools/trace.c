/*
 * trace.c - gpumem trace: the command; reads a trace file (gpumem/trace.h,
 * doc/trace-format.md) and
 *   summary FILE [--json]        what the trace holds (trace_summary.c);
 *   plot FILE -o OUT.html        the timeline (trace_plot.c);
 *   export --chrome FILE         the Chrome Trace Event format, on stdout
 *                                (trace_export.c);
 *   replay FILE [--allocator driver|pool|vmm|async] [--no-thread-cache] [--no-hold]
 *                                the allocations and frees again, on this
 *                                backend, with one allocator configuration
 *                                (trace_replay.c).
 * Every subcommand takes --partial: read a trace that does not end (its
 * program was killed) up to where it stops.  Exit status: 0; 1 a trace that
 * cannot be read (the message says where it stops) or a library failure;
 * 2 a usage error.  Nothing is written when the trace cannot be read.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <gpumem.h>

#include "trace_cmd.h"

static void usage(FILE *out)
{
    fputs("Usage: gpumem trace summary FILE [--json] [--partial]\n"
          "       gpumem trace plot FILE -o OUT.html [--by-pool | --by-site] [--partial]\n"
          "       gpumem trace export --chrome FILE [--partial]\n"
          "       gpumem trace replay FILE [--allocator driver|pool|vmm|async] [--no-thread-cache] [--no-hold]\n"
          "                           [--partial]\n"
          "\n"
          "Reads a trace that GPUMEM_TRACE=FILE or gpumem_trace_start() wrote (gpumem(1)).\n"
          "  summary   peak in use (when, by kind and pool), the largest allocations,\n"
          "            allocations never freed (by call site), copies by path with their\n"
          "            bandwidth, out-of-memory events with their message; --json\n"
          "  plot      one self-contained HTML file (inline SVG, no network): memory in\n"
          "            use over time stacked by kind (--by-pool: by pool; --by-site: by\n"
          "            call site), the library's own memory apart, regions, markers,\n"
          "            out-of-memory events and copies by path; OUT.svg: the picture alone\n"
          "  export    the Chrome Trace Event format on stdout (Perfetto, chrome://tracing)\n"
          "  replay    the allocations and frees again, with their sizes, order and\n"
          "            streams, on this backend: time per pair, peak in use, peak held,\n"
          "            driver calls, the largest free block at the peak; --allocator\n"
          "            pool: the classic pool, vmm: a virtual-memory pool, async: the\n"
          "            driver's stream-ordered pool (not simulated)\n"
          "  --partial reads a trace that does not end (its program was killed) up to\n"
          "            where it stops\n",
          out);
}

int cmd_trace(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *sub = argv[1], *file = NULL, *out = NULL;
    int json = 0, partial = 0, by_pool = 0, chrome_fmt = 0;
    trace_replay_opts ro = {0};
    int summary_cmd = strcmp(sub, "summary") == 0, plot_cmd = strcmp(sub, "plot") == 0,
        export_cmd = strcmp(sub, "export") == 0, replay_cmd = strcmp(sub, "replay") == 0;
    if (!summary_cmd && !plot_cmd && !export_cmd && !replay_cmd) {
        fprintf(stderr, "gpumem trace: unknown subcommand '%s'\n", sub);
        usage(stderr);
        return 2;
    }
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--partial") == 0) {
            partial = 1;
        } else if (summary_cmd && strcmp(a, "--json") == 0) {
            json = 1;
        } else if (plot_cmd && strcmp(a, "-o") == 0 && i + 1 < argc) {
            out = argv[++i];
        } else if (plot_cmd && (strcmp(a, "--by-pool") == 0 || strcmp(a, "--by-site") == 0)) {
            by_pool = a[5] == 'p' ? TP_BY_POOL : TP_BY_SITE; /* the last one given */
        } else if (export_cmd && strcmp(a, "--chrome") == 0) {
            chrome_fmt = 1;
        } else if (replay_cmd && strcmp(a, "--allocator") == 0 && i + 1 < argc) {
            const char *v = argv[++i];
            ro.pool = -1;
            for (int k = 0; k < 4; k++)
                if (strcmp(v, trace_allocator_names[k]) == 0)
                    ro.pool = k;
            if (ro.pool < 0) {
                fprintf(stderr, "gpumem trace replay: --allocator '%s': expected 'driver' or 'pool' (or 'vmm', "
                        "'async')\n", v);
                return 2;
            }
        } else if (replay_cmd && strcmp(a, "--no-thread-cache") == 0) {
            ro.pool_flags |= GPUMEM_POOL_NO_THREAD_CACHE;
        } else if (replay_cmd && strcmp(a, "--no-hold") == 0) {
            ro.no_hold = 1;
        } else if (i + 1 == argc && ((plot_cmd && strcmp(a, "-o") == 0) ||
                                     (replay_cmd && strcmp(a, "--allocator") == 0))) {
            fprintf(stderr, "gpumem trace %s: %s needs a value\n", sub, a);
            usage(stderr);
            return 2;
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "gpumem trace %s: unknown option '%s'\n", sub, a);
            usage(stderr);
            return 2;
        } else if (file == NULL) {
            file = a;
        } else {
            fprintf(stderr, "gpumem trace %s: one trace file only ('%s' and '%s')\n", sub, file, a);
            return 2;
        }
    }
    if (file == NULL) {
        fprintf(stderr, "gpumem trace %s: no trace file\n", sub);
        usage(stderr);
        return 2;
    }
    if (plot_cmd && out == NULL) {
        fprintf(stderr, "gpumem trace plot: -o OUT.html is required\n");
        return 2;
    }
    if (export_cmd && !chrome_fmt) {
        fprintf(stderr, "gpumem trace export: --chrome is the only format\n");
        return 2;
    }
    if (replay_cmd && !ro.pool && (ro.pool_flags || ro.no_hold)) {
        fprintf(stderr, "gpumem trace replay: --no-thread-cache and --no-hold are pool options "
                "(--allocator pool)\n");
        return 2;
    }
    tr_trace t;
    char msg[1024];
    tr_status st = tr_load(file, partial, &t, msg, sizeof msg);
    if (st != TR_OK) {
        /* The hint only where --partial would read something: not for a
         * header that is cut or corrupt, which nothing comes before. */
        int hint = 0;
        if (!partial && (st == TR_TRUNCATED || st == TR_CORRUPT)) {
            char msg2[1024];
            hint = tr_load(file, 1, &t, msg2, sizeof msg2) == TR_OK;
            if (hint)
                tr_free(&t);
        }
        fprintf(stderr, "gpumem trace: %s%s\n", msg, hint ? " (--partial reads what comes before)" : "");
        return 1;
    }
    if (!t.complete)
        fprintf(stderr, "gpumem trace: warning: %s; reading what comes before\n", msg);
    tm_model m;
    if (tm_build(&t, &m) != 0) {
        tr_free(&t);
        fprintf(stderr, "gpumem trace: out of memory\n");
        return 1;
    }
    int rc = 0;
    if (summary_cmd) {
        rc = trace_summary(file, &t, &m, json, msg);
    } else if (plot_cmd) {
        rc = trace_plot(&t, file, out, by_pool);
    } else if (export_cmd) {
        if (trace_export_chrome(&t, &m) != 0) {
            fprintf(stderr, "gpumem trace: out of memory\n");
            rc = 1;
        }
    } else {
        rc = trace_replay(&t, &m, ro);
    }
    tm_free(&m);
    tr_free(&t);
    tr_symbols_free();
    return rc;
}
