/* The promises of doc/environment.md (and the ENVIRONMENT sections of
 * gpumem(1), gpumem(7) and the headers), checked as an outside user reads
 * them: each variable set in a child process before the library's first
 * use, its accepted syntax (blanks, case, size suffixes, signs, empty value,
 * overflow), its default, and a bad value's status and message, which names
 * the variable and the value, and is given again by a second call. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <gpumem.h>

#include "tap.h"
#include "child.h"

extern char **environ;

/* What a case reads after setting its environment. */
typedef enum {
    P_DEVICES,      /* gpumem_device_count */
    P_MEMORY,       /* gpumem_device_total_memory(0) */
    P_ARCH,         /* compute capability of device 0, major * 10 + minor */
    P_FREE,         /* gpumem_memory_info's free bytes of a new default context */
    P_DEFAULT,      /* gpumem_get_default_device(-1) */
    P_PEER_01,      /* gpumem_peer_can_access(0, 1) */
    P_PEER_02,      /* gpumem_peer_can_access(0, 2) */
    P_PEER_ON,      /* gpumem_peer_enabled */
    P_PEER_SET,     /* gpumem_peer_set_enabled(1) then gpumem_peer_enabled */
    P_COUNT,        /* the default context's dealloc max_count */
    P_RATIO_E6,     /* the default context's dealloc max_ratio * 1e6 */
    P_CONTEXT,      /* gpumem_context_create_default: its device */
    P_ST_THREADS,   /* gpumem_staging_get */
    P_ST_CHUNK,
    P_ST_DEPTH,
    P_ST_MIN,
    P_ST_SET,       /* gpumem_staging_set(defaults) then gpumem_staging_get's chunk */
    P_COPY_D2H,     /* a download of 64 int32: the status */
    P_PINNED_2M,    /* a 2 MiB pinned array: the status */
    P_FAIL_FIRST,   /* gpumem_device_count, the first driver call */
    P_TRACE_START,  /* gpumem_trace_start of a file under TMPDIR */
    P_TRACE_FILE,   /* a default context made with GPUMEM_TRACE=gm-env-%p-%%.gmt: whether that file exists */
    P_DEBUG,        /* a failing call: whether anything came on standard error */
    P_COPY_H2H,     /* a copy between two host arrays: the status */
    P_COPY_STRIDED, /* a download of a transposed 256 x 256 device array to pinned memory: the status */
    P_COPY_LINES,   /* a copy between two host arrays: the "gpumem: copy" lines on standard error */
    P_OWN_POOLS,    /* the default context's own pools (gpumem_memory_pools) */
    P_QUIET_D2D,    /* after a failure, a copy between two device arrays: 1 when it leaves the failure's record */
    P_QUIET_H2H,    /* the same with two host arrays */
    P_FRAG,         /* four 1 MiB device arrays, the 1st and 3rd freed, then one of 2 MiB: the status */
    P_LATE,         /* a copy between host arrays, then bad copy and staging variables set: the calls that work */
    P_PER_CONTEXT,  /* a context's dealloc max_count, then with the variable at 7 a new context's: a * 100 + b */
    P_SIM_ONCE,     /* the device count, then with GPUMEM_SIM_DEVICES=3 set: a * 100 + b */
    P_DEBUG_LATE,   /* a failing call, then GPUMEM_DEBUG changed (0 <-> 1), then one more: whether that printed */
    P_COPY_QUEUED,  /* a download of 64 int32 into pageable memory queued on a stream: the elements landed */
} probe;

/* The probes' names, for the test lines. */
static const char *const probe_names[] = {
    "devices", "memory", "arch", "free", "default", "peer_01", "peer_02", "peer_on", "peer_set", "count",
    "ratio_e6", "context", "st_threads", "st_chunk", "st_depth", "st_min", "st_set", "copy_d2h", "pinned_2m",
    "fail_first", "trace_start", "trace_file", "debug", "copy_h2h", "copy_strided", "copy_lines", "own_pools",
    "quiet_d2d", "quiet_h2h", "frag", "late", "per_context", "sim_once", "debug_late", "copy_queued"
};

typedef struct env_case {
    const char *env;   /* NAME=VALUE pairs separated by '|' */
    probe what;
    gpumem_status want;
    long value;        /* the value read when want is GPUMEM_OK; on failure 1 when only the first call fails */
    const char *named; /* on failure, a text the message must contain (besides the variable) */
} env_case;

/* The failed call's message, for the probes that release things after it. */
static char probe_msg[1024];

static long run_probe(probe what, gpumem_status *st)
{
    probe_msg[0] = '\0';
    int n = 0, a = 0, b = 0;
    uint64_t u = 0, total = 0;
    gpumem_context *ctx = NULL;
    gpumem_staging_settings s = {.size = sizeof s};
    switch (what) {
    case P_DEVICES:
        *st = gpumem_device_count(&n);
        return n;
    case P_MEMORY:
        *st = gpumem_device_total_memory(0, &u);
        return (long)(u >> 10);
    case P_ARCH:
        *st = gpumem_device_compute_capability(0, &a, &b);
        return a * 10 + b;
    case P_FREE:
        if ((*st = gpumem_context_create_default(&ctx)) != GPUMEM_OK)
            return -1;
        *st = gpumem_memory_info(ctx, &u, &total);
        gpumem_context_release(ctx);
        return (long)(u >> 20);
    case P_DEFAULT:
        *st = gpumem_get_default_device(0, &n);
        return n;
    case P_PEER_01:
        *st = gpumem_peer_can_access(0, 1, &n);
        return n;
    case P_PEER_02:
        *st = gpumem_peer_can_access(0, 2, &n);
        return n;
    case P_PEER_ON:
        *st = gpumem_peer_enabled(&n);
        return n;
    case P_PEER_SET:
        if ((*st = gpumem_peer_set_enabled(1)) != GPUMEM_OK)
            return -1;
        *st = gpumem_peer_enabled(&n);
        return n;
    case P_COUNT:
    case P_RATIO_E6: {
        size_t count = 0;
        double ratio = -1;
        if ((*st = gpumem_context_create_default(&ctx)) != GPUMEM_OK)
            return -1;
        *st = gpumem_context_get_dealloc_limits(ctx, &count, &ratio);
        gpumem_context_release(ctx);
        return what == P_COUNT ? (long)count : (long)(ratio * 1e6 + 0.5);
    }
    case P_CONTEXT:
        if ((*st = gpumem_context_create_default(&ctx)) != GPUMEM_OK)
            return -1;
        *st = gpumem_context_get_device(ctx, &n);
        gpumem_context_release(ctx);
        return n;
    case P_ST_THREADS:
    case P_ST_CHUNK:
    case P_ST_DEPTH:
    case P_ST_MIN:
        *st = gpumem_staging_get(&s);
        return what == P_ST_THREADS ? (long)s.threads
               : what == P_ST_CHUNK ? (long)(s.chunk_bytes >> 10)
               : what == P_ST_DEPTH ? (long)s.depth
                                    : (long)(s.min_bytes >> 10);
    case P_ST_SET: {
        gpumem_staging_settings set = {.size = sizeof set, .threads = 2, .chunk_bytes = 1u << 20, .depth = 2,
                                       .min_bytes = 1u << 20};
        if ((*st = gpumem_staging_set(&set)) != GPUMEM_OK)
            return -1;
        *st = gpumem_staging_get(&s);
        return (long)(s.chunk_bytes >> 10);
    }
    case P_COPY_D2H:
    case P_PINNED_2M: {
        gpumem_array *d = NULL, *h = NULL;
        int64_t shape[1] = {what == P_COPY_D2H ? 64 : 512 * 1024};
        const gpumem_dtype *i32 = gpumem_dtype_builtin(GPUMEM_INT32);
        if ((*st = gpumem_context_create_default(&ctx)) != GPUMEM_OK)
            return -1;
        if (what == P_PINNED_2M) {
            *st = gpumem_pinned_array(ctx, 1, shape, NULL, i32, 'C', &h);
        } else if ((*st = gpumem_device_array(ctx, 1, shape, NULL, i32, 'C', NULL, &d)) == GPUMEM_OK &&
                   (*st = gpumem_host_array(1, shape, i32, 'C', &h)) == GPUMEM_OK) {
            *st = gpumem_copy_to_host(d, h, NULL);
        }
        snprintf(probe_msg, sizeof probe_msg, "%s", gpumem_last_error()); /* before the releases */
        gpumem_array_release(d);
        gpumem_array_release(h);
        gpumem_context_release(ctx);
        return 0;
    }
    case P_COPY_QUEUED: {
        /* the device array is filled by gpumem_array_fill (an upload from
         * pageable memory would need the staging settings too); the
         * destination holds 7 until the download lands */
        gpumem_array *d = NULL, *h = NULL;
        gpumem_stream *stream = NULL;
        int64_t shape[1] = {64};
        int32_t five = 5, *host = NULL;
        long landed = 0;
        const gpumem_dtype *i32 = gpumem_dtype_builtin(GPUMEM_INT32);
        if ((*st = gpumem_context_create_default(&ctx)) != GPUMEM_OK)
            return -1;
        if ((*st = gpumem_device_array(ctx, 1, shape, NULL, i32, 'C', NULL, &d)) == GPUMEM_OK &&
            (*st = gpumem_array_fill(d, &five, NULL)) == GPUMEM_OK &&
            (*st = gpumem_host_array(1, shape, i32, 'C', &h)) == GPUMEM_OK &&
            (*st = gpumem_array_host_pointer(h, (void **)&host)) == GPUMEM_OK &&
            (*st = gpumem_stream_create(ctx, 0, &stream)) == GPUMEM_OK) {
            for (int i = 0; i < 64; i++)
                host[i] = 7;
            *st = gpumem_copy_to_host(d, h, stream);
            snprintf(probe_msg, sizeof probe_msg, "%s", gpumem_last_error()); /* before the synchronization */
            gpumem_status sst = gpumem_stream_synchronize(stream);
            for (int i = 0; i < 64; i++)
                landed += host[i] == 5 ? 1 : host[i] == 7 ? 0 : 1000; /* nothing else may appear */
            if (*st == GPUMEM_OK && sst != GPUMEM_OK)
                *st = sst;
        }
        if (*st == GPUMEM_OK)
            probe_msg[0] = '\0';
        gpumem_stream_destroy(stream);
        gpumem_array_release(d);
        gpumem_array_release(h);
        gpumem_context_release(ctx);
        return landed;
    }
    case P_FAIL_FIRST:
        *st = gpumem_device_count(&n);
        return n;
    case P_TRACE_START: {
        char path[256];
        const char *tmp = getenv("TMPDIR");
        snprintf(path, sizeof path, "%s/gpumem-env-trace-%d.gmt", tmp && *tmp ? tmp : "/tmp", (int)getpid());
        *st = gpumem_trace_start(path, 0);
        if (*st == GPUMEM_OK)
            gpumem_trace_stop();
        unlink(path);
        return 0;
    }
    case P_TRACE_FILE: {
        char path[64];
        snprintf(path, sizeof path, "gm-env-%d-%%.gmt", (int)getpid());
        unlink(path);
        if ((*st = gpumem_context_create_default(&ctx)) != GPUMEM_OK)
            return -1;
        gpumem_context_release(ctx);
        gpumem_trace_stop();
        /* read once: the first context starts the trace, a later one none */
        static int calls;
        int exists = unlink(path) == 0;
        return calls++ == 0 ? exists : !exists;
    }
    case P_DEBUG:
    case P_DEBUG_LATE: {
        char path[256];
        const char *tmp = getenv("TMPDIR");
        snprintf(path, sizeof path, "%s/gpumem-env-stderr-%d", tmp && *tmp ? tmp : "/tmp", (int)getpid());
        int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
        int saved = dup(2);
        fflush(stderr);
        dup2(fd, 2);
        gpumem_device_count(NULL); /* an error */
        *st = gpumem_device_count(&n);
        fflush(stderr);
        off_t first = lseek(fd, 0, SEEK_END);
        if (what == P_DEBUG_LATE) { /* read once: a change now does not count */
            const char *was = getenv("GPUMEM_DEBUG");
            setenv("GPUMEM_DEBUG", was != NULL && strcmp(was, "1") == 0 ? "0" : "1", 1);
            gpumem_device_count(NULL);
            fflush(stderr);
            setenv("GPUMEM_DEBUG", was != NULL ? was : "", 1);
        }
        dup2(saved, 2);
        close(saved);
        struct stat sb;
        fstat(fd, &sb);
        close(fd);
        unlink(path);
        return what == P_DEBUG ? sb.st_size > 0 : sb.st_size > first;
    }
    case P_COPY_H2H: {
        gpumem_array *x = NULL, *y = NULL;
        int64_t shape[1] = {64};
        const gpumem_dtype *i32 = gpumem_dtype_builtin(GPUMEM_INT32);
        if ((*st = gpumem_host_array(1, shape, i32, 'C', &x)) == GPUMEM_OK &&
            (*st = gpumem_host_array(1, shape, i32, 'C', &y)) == GPUMEM_OK)
            *st = gpumem_array_copy(y, x, NULL);
        gpumem_array_release(x);
        gpumem_array_release(y);
        return 0;
    }
    case P_COPY_STRIDED: {
        gpumem_array *d = NULL, *t = NULL, *d2 = NULL;
        int64_t shape[2] = {256, 256};
        const gpumem_dtype *f32 = gpumem_dtype_builtin(GPUMEM_FLOAT32);
        if ((*st = gpumem_context_create_default(&ctx)) != GPUMEM_OK)
            return -1;
        if ((*st = gpumem_device_array(ctx, 2, shape, NULL, f32, 'C', NULL, &d)) == GPUMEM_OK &&
            (*st = gpumem_pinned_array(ctx, 2, shape, NULL, f32, 'C', &d2)) == GPUMEM_OK &&
            (*st = gpumem_array_transpose(d, NULL, &t)) == GPUMEM_OK)
            *st = gpumem_copy_to_host(t, d2, NULL); /* packed on the device in scratch, then moved */
        snprintf(probe_msg, sizeof probe_msg, "%s", gpumem_last_error());
        gpumem_array_release(t);
        gpumem_array_release(d);
        gpumem_array_release(d2);
        gpumem_context_release(ctx);
        return 0;
    }
    case P_COPY_LINES: {
        char path[256], text[4096] = "";
        const char *tmp = getenv("TMPDIR");
        snprintf(path, sizeof path, "%s/gpumem-env-stderr-%d", tmp && *tmp ? tmp : "/tmp", (int)getpid());
        int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
        int saved = dup(2);
        fflush(stderr);
        dup2(fd, 2);
        run_probe(P_COPY_H2H, st);
        fflush(stderr);
        dup2(saved, 2);
        close(saved);
        ssize_t got = pread(fd, text, sizeof text - 1, 0);
        text[got > 0 ? got : 0] = '\0';
        close(fd);
        unlink(path);
        long lines = 0;
        for (const char *p = text; (p = strstr(p, "gpumem: copy gpumem_array_copy: h2h ")) != NULL; p++)
            lines++;
        return lines;
    }
    case P_OWN_POOLS: {
        struct gpumem_memory_pool_report pools[8];
        size_t count = 0;
        long own = 0;
        for (int i = 0; i < 8; i++)
            pools[i].size = sizeof pools[i];
        if ((*st = gpumem_context_create_default(&ctx)) != GPUMEM_OK)
            return -1;
        *st = gpumem_memory_pools(ctx, 0, pools, 8, &count);
        for (size_t i = 0; i < count && i < 8; i++)
            own += pools[i].own;
        gpumem_context_release(ctx);
        return own;
    }
    case P_QUIET_D2D:
    case P_QUIET_H2H: {
        gpumem_array *x = NULL, *y = NULL;
        int64_t shape[1] = {64};
        const gpumem_dtype *i32 = gpumem_dtype_builtin(GPUMEM_INT32);
        char before[1024];
        if ((*st = gpumem_context_create_default(&ctx)) != GPUMEM_OK)
            return -1;
        if (what == P_QUIET_D2D) {
            gpumem_device_array(ctx, 1, shape, NULL, i32, 'C', NULL, &x);
            gpumem_device_array(ctx, 1, shape, NULL, i32, 'C', NULL, &y);
        } else {
            gpumem_host_array(1, shape, i32, 'C', &x);
            gpumem_host_array(1, shape, i32, 'C', &y);
        }
        gpumem_device_count(NULL); /* a failure of our own */
        snprintf(before, sizeof before, "%s", gpumem_last_error());
        *st = gpumem_array_copy(y, x, NULL);
        long kept = strcmp(before, gpumem_last_error()) == 0 && gpumem_last_status() == GPUMEM_ERROR_NULL_ARGUMENT;
        snprintf(probe_msg, sizeof probe_msg, "%s", *st != GPUMEM_OK ? gpumem_last_error() : before);
        gpumem_array_release(x);
        gpumem_array_release(y);
        gpumem_context_release(ctx);
        return *st == GPUMEM_OK ? kept : 0;
    }
    case P_FRAG: {
        gpumem_array *arr[4] = {NULL, NULL, NULL, NULL}, *big = NULL;
        int64_t one[1] = {1 << 20}, two[1] = {2 << 20};
        const gpumem_dtype *u8 = gpumem_dtype_builtin(GPUMEM_UINT8);
        if ((*st = gpumem_context_create_default(&ctx)) != GPUMEM_OK)
            return -1;
        for (int i = 0; i < 4 && *st == GPUMEM_OK; i++)
            *st = gpumem_device_array(ctx, 1, one, NULL, u8, 'C', NULL, &arr[i]);
        if (*st == GPUMEM_OK) {
            gpumem_array_release(arr[0]);
            gpumem_array_release(arr[2]);
            arr[0] = arr[2] = NULL;
            gpumem_context_flush_deallocations(ctx);
            *st = gpumem_device_array(ctx, 1, two, NULL, u8, 'C', NULL, &big);
        }
        snprintf(probe_msg, sizeof probe_msg, "%s", gpumem_last_error());
        gpumem_array_release(big);
        for (int i = 0; i < 4; i++)
            gpumem_array_release(arr[i]);
        gpumem_context_release(ctx);
        return 0;
    }
    case P_LATE: {
        /* the copy settings and the staging settings are read together, by
         * the first copy of any kind: values set after it do not count */
        gpumem_array *d = NULL, *h = NULL;
        int64_t shape[1] = {64};
        const gpumem_dtype *i32 = gpumem_dtype_builtin(GPUMEM_INT32);
        long works = 0;
        run_probe(P_COPY_H2H, st);
        if (*st != GPUMEM_OK)
            return -1;
        setenv("GPUMEM_COPY_MIN_ROW_BYTES", "x", 1);
        setenv("GPUMEM_COPY_SCRATCH_CHUNK", "x", 1);
        setenv("GPUMEM_PEER", "x", 1);
        setenv("GPUMEM_STAGING_CHUNK", "x", 1);
        if ((*st = gpumem_context_create_default(&ctx)) != GPUMEM_OK)
            return -1;
        if (gpumem_device_array(ctx, 1, shape, NULL, i32, 'C', NULL, &d) == GPUMEM_OK &&
            gpumem_host_array(1, shape, i32, 'C', &h) == GPUMEM_OK && gpumem_copy_to_host(d, h, NULL) == GPUMEM_OK)
            works++;
        works += gpumem_peer_enabled(&n) == GPUMEM_OK && n == 1;
        works += gpumem_staging_get(&s) == GPUMEM_OK && s.chunk_bytes == (size_t)2 << 20;
        gpumem_array_release(d);
        gpumem_array_release(h);
        gpumem_context_release(ctx);
        return works;
    }
    case P_PER_CONTEXT: {
        gpumem_context *c2 = NULL;
        size_t count1 = 0, count2 = 0;
        double ratio;
        if ((*st = gpumem_context_create_default(&ctx)) != GPUMEM_OK ||
            (*st = gpumem_context_get_dealloc_limits(ctx, &count1, &ratio)) != GPUMEM_OK)
            return -1;
        char was[64];
        const char *env = getenv("GPUMEM_MAX_PENDING_DEALLOCS_COUNT");
        snprintf(was, sizeof was, "%s", env != NULL ? env : "");
        setenv("GPUMEM_MAX_PENDING_DEALLOCS_COUNT", "7", 1);
        if ((*st = gpumem_context_create_default(&c2)) == GPUMEM_OK)
            *st = gpumem_context_get_dealloc_limits(c2, &count2, &ratio);
        size_t again = 0;
        gpumem_context_get_dealloc_limits(ctx, &again, &ratio); /* the first context keeps its own */
        gpumem_context_release(c2);
        gpumem_context_release(ctx);
        setenv("GPUMEM_MAX_PENDING_DEALLOCS_COUNT", was, 1); /* for the case's second run */
        return again == count1 ? (long)(count1 * 100 + count2) : -2;
    }
    case P_SIM_ONCE: {
        int m = 0;
        if ((*st = gpumem_device_count(&n)) != GPUMEM_OK)
            return -1;
        setenv("GPUMEM_SIM_DEVICES", "3", 1);
        *st = gpumem_device_count(&m);
        return n * 100 + m;
    }
    }
    *st = GPUMEM_ERROR_INVALID_VALUE;
    return -1;
}

static char *atexit_home;

static void set_env(const char *env)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", env);
    for (char *p = buf; p != NULL && *p != '\0';) {
        char *bar = strchr(p, '|');
        if (bar != NULL)
            *bar = '\0';
        char *eq = strchr(p, '=');
        *eq = '\0';
        if (strcmp(p, "@DEVDIR") == 0 || strcmp(p, "@DEVFIFO") == 0) { /* ~/.cuda-device not a regular file */
            char *home = make_home(), path[1100];
            snprintf(path, sizeof path, "%s/.cuda-device", home);
            if (p[4] == 'D' ? mkdir(path, 0700) != 0 : mkfifo(path, 0600) != 0)
                exit(99);
            setenv("HOME", home, 1);
            atexit_home = home;
        } else if (strcmp(p, "@DEVFILE") == 0 || strcmp(p, "@DEVFILE_") == 0) { /* a fresh HOME with this file */
            char *home = make_home();
            write_file(home, p[8] == '_' ? ".cuda_device" : ".cuda-device", eq + 1);
            setenv("HOME", home, 1); /* the child exits without removing it: remove_home at its end */
            atexit_home = home;
        } else {
            setenv(p, eq + 1, 1);
        }
        p = bar != NULL ? bar + 1 : NULL;
    }
}

/* The child: sets the environment, runs the probe twice (the second must
 * give the same status, and on failure the same message). */
static void env_child(const void *arg, child_result *out)
{
    const env_case *c = arg;
    /* only the case's variables: none of the caller's GPUMEM_*, CUDA_DEVICE or ~/.cuda-device */
    for (;;) {
        char name[256] = "";
        for (char **e = environ; *e != NULL && name[0] == '\0'; e++)
            if (strncmp(*e, "GPUMEM_", 7) == 0 || strncmp(*e, "CUDA_DEVICE=", 12) == 0)
                snprintf(name, sizeof name, "%.*s", (int)strcspn(*e, "="), *e);
        if (name[0] == '\0')
            break;
        unsetenv(name);
    }
    setenv("HOME", "/nonexistent-gpumem-home", 1);
    setenv("GPUMEM_BACKEND", "sim", 1);
    set_env(c->env);
    gpumem_status st;
    long v = run_probe(c->what, &st);
    out->status = st;
    out->value[0] = v;
    snprintf(out->text, sizeof out->text, "%s", probe_msg[0] != '\0' ? probe_msg : gpumem_last_error());
    gpumem_status st2;
    long v2 = run_probe(c->what, &st2);
    out->value[1] = st2;
    out->value[2] = v2 == v;
    out->value[3] = st == GPUMEM_OK ||
                    strcmp(out->text, probe_msg[0] != '\0' ? probe_msg : gpumem_last_error()) == 0;
    if (atexit_home != NULL) {
        char path[1100];
        snprintf(path, sizeof path, "%s/.cuda-device", atexit_home);
        rmdir(path); /* a directory case */
        remove_home(atexit_home);
    }
}

/* The case's environment, printable (a newline would end the TAP line). */
static const char *shown(const char *env)
{
    static char bufs[2][512];
    static int which;
    char *buf = bufs[which++ & 1];
    size_t j = 0;
    for (const char *p = env; *p != '\0' && j + 3 < sizeof bufs[0]; p++) {
        if (*p == '\n' || *p == '\r' || *p == '\t') {
            buf[j++] = '\\';
            buf[j++] = *p == '\n' ? 'n' : *p == '\r' ? 'r' : 't';
        } else {
            buf[j++] = *p;
        }
    }
    buf[j] = '\0';
    return buf;
}

static void check_case(const env_case *c)
{
    child_result r;
    int got = run_child(env_child, c, &r);
    if (got != 0 || !r.exited || r.exit_code != 0) {
        ok(0, "%s: %s runs to the end", shown(c->env), probe_names[c->what]);
        diag("  child exited %d (code %d)", r.exited, r.exit_code);
        return;
    }
    if (c->want == GPUMEM_OK) {
        int good = r.status == (int)GPUMEM_OK && r.value[0] == c->value && r.value[1] == GPUMEM_OK && r.value[2];
        ok(good, "%s: %s reads %ld", shown(c->env), probe_names[c->what], c->value);
        if (!good)
            diag("  got %s (%ld), then %s: %s", gpumem_status_string(r.status), r.value[0],
                 gpumem_status_string((gpumem_status)r.value[1]), r.text);
        return;
    }
    /* the variable named: the text before the first '=' of the last pair */
    char var[128];
    const char *last = strrchr(c->env, '|');
    last = last != NULL ? last + 1 : c->env;
    snprintf(var, sizeof var, "%.*s", (int)strcspn(last, "="), last);
    if (var[0] == '@') /* a ~/.cuda-device case: the message names the file */
        snprintf(var, sizeof var, "%s", strcmp(var, "@DEVFILE_") != 0 ? "/.cuda-device" : "/.cuda_device");
    int env_error = c->want == GPUMEM_ERROR_INVALID_ENVIRONMENT;
    int status = r.status == (int)c->want && r.value[1] == (c->value == 1 ? (long)GPUMEM_OK : (long)c->want);
    int named = (!env_error || strstr(r.text, var) != NULL) && (c->named == NULL || strstr(r.text, c->named) != NULL);
    int again = c->value == 1 || r.value[3];
    char naming[400];
    snprintf(naming, sizeof naming, "%s%s%s", env_error ? var : "", env_error && c->named ? " and " : "",
             c->named ? shown(c->named) : "");
    ok(status && named && again, "%s: %s fails with %s%s%s, %s", shown(c->env), probe_names[c->what],
       gpumem_status_string(c->want), naming[0] ? ", naming " : "", naming,
       c->value == 1 ? "then works" : "twice");
    if (!(status && named && again))
        diag("  got %s then %s: '%s'", gpumem_status_string(r.status), gpumem_status_string((gpumem_status)r.value[1]),
             r.text);
}

#define OKV(env, what, v) {env, what, GPUMEM_OK, v, NULL}
#define BADV(env, what, named) {env, what, GPUMEM_ERROR_INVALID_ENVIRONMENT, 0, named}
#define BADS(env, what, want, named) {env, what, want, 0, named}
#define BAD_ONCE(env, what, want, named) {env, what, want, 1, named}

static const env_case cases[] = {
    /* GPUMEM_BACKEND: a word, any case, blanks around it */
    OKV("GPUMEM_BACKEND=SIM", P_DEVICES, 1),
    OKV("GPUMEM_BACKEND= Sim\t", P_DEVICES, 1),
    BADV("GPUMEM_BACKEND=s im", P_DEVICES, "'s im'"),
    BADV("GPUMEM_BACKEND=sim\n", P_DEVICES, NULL),
    BADV("GPUMEM_BACKEND=simulator", P_DEVICES, "simulator"),

    /* GPUMEM_SIM_DEVICES: an integer, 1 to 64, default 1 */
    OKV("GPUMEM_SIM_DEVICES=", P_DEVICES, 1),
    OKV("GPUMEM_SIM_DEVICES= 3\t", P_DEVICES, 3),
    OKV("GPUMEM_SIM_DEVICES=64", P_DEVICES, 64),
    BADV("GPUMEM_SIM_DEVICES=65", P_DEVICES, "'65'"),
    BADV("GPUMEM_SIM_DEVICES=0", P_DEVICES, "'0'"),
    BADV("GPUMEM_SIM_DEVICES=+2", P_DEVICES, "'+2'"),
    BADV("GPUMEM_SIM_DEVICES=02", P_DEVICES, "'02'"),
    BADV("GPUMEM_SIM_DEVICES=0x2", P_DEVICES, "'0x2'"),
    BADV("GPUMEM_SIM_DEVICES=2.0", P_DEVICES, "'2.0'"),
    BADV("GPUMEM_SIM_DEVICES=-0", P_DEVICES, "'-0'"),
    BADV("GPUMEM_SIM_DEVICES=2 2", P_DEVICES, "'2 2'"),
    BADV("GPUMEM_SIM_DEVICES=99999999999999999999999", P_DEVICES, "99999999999999999999999"),

    /* GPUMEM_SIM_MEMORY: a size of at least 1M, default 1G (values in KiB) */
    OKV("GPUMEM_SIM_MEMORY=", P_MEMORY, 1L << 20),
    OKV("GPUMEM_SIM_MEMORY=2GiB", P_MEMORY, 2L << 20),
    OKV("GPUMEM_SIM_MEMORY=2gib", P_MEMORY, 2L << 20),
    OKV("GPUMEM_SIM_MEMORY= 2g\t", P_MEMORY, 2L << 20),
    OKV("GPUMEM_SIM_MEMORY=512MB", P_MEMORY, 512L << 10),
    OKV("GPUMEM_SIM_MEMORY=1048576", P_MEMORY, 1024),
    OKV("GPUMEM_SIM_MEMORY=1048576B", P_MEMORY, 1024),
    OKV("GPUMEM_SIM_MEMORY=1024k", P_MEMORY, 1024),
    OKV("GPUMEM_SIM_MEMORY=1M", P_MEMORY, 1024),
    BADV("GPUMEM_SIM_MEMORY=1048575", P_MEMORY, "'1048575'"),
    BADV("GPUMEM_SIM_MEMORY=1.5G", P_MEMORY, "'1.5G'"),
    BADV("GPUMEM_SIM_MEMORY=0x100000", P_MEMORY, "'0x100000'"),
    BADV("GPUMEM_SIM_MEMORY=+1G", P_MEMORY, "'+1G'"),
    BADV("GPUMEM_SIM_MEMORY=-1G", P_MEMORY, "'-1G'"),
    BADV("GPUMEM_SIM_MEMORY=1 G", P_MEMORY, "'1 G'"),
    BADV("GPUMEM_SIM_MEMORY=01G", P_MEMORY, "'01G'"),
    BADV("GPUMEM_SIM_MEMORY=1Gi", P_MEMORY, "'1Gi'"),
    BADV("GPUMEM_SIM_MEMORY=1iB", P_MEMORY, "'1iB'"),
    BADV("GPUMEM_SIM_MEMORY=1P", P_MEMORY, "'1P'"),
    BADV("GPUMEM_SIM_MEMORY=16777216T", P_MEMORY, "'16777216T'"),
    BADV("GPUMEM_SIM_MEMORY=18446744073709551616", P_MEMORY, "'18446744073709551616'"),
    BADV("GPUMEM_SIM_MEMORY=1G\r", P_MEMORY, NULL),

    /* GPUMEM_SIM_ARCH: a word; sm_90 by default */
    OKV("GPUMEM_SIM_ARCH=", P_ARCH, 90),
    OKV("GPUMEM_SIM_ARCH=SM_80", P_ARCH, 80),
    OKV("GPUMEM_SIM_ARCH= sm_75\t", P_ARCH, 75),
    OKV("GPUMEM_SIM_ARCH=sm_120", P_ARCH, 120),
    BADV("GPUMEM_SIM_ARCH=sm_ 80", P_ARCH, "'sm_ 80'"),
    BADV("GPUMEM_SIM_ARCH=sm80", P_ARCH, "'sm80'"),
    BADV("GPUMEM_SIM_ARCH=sm_70", P_ARCH, "'sm_70'"),

    /* GPUMEM_SIM_OTHER_MEMORY: a size less than GPUMEM_SIM_MEMORY (free in MiB) */
    OKV("GPUMEM_SIM_OTHER_MEMORY=", P_FREE, 1024),
    OKV("GPUMEM_SIM_OTHER_MEMORY= 256m ", P_FREE, 768),
    OKV("GPUMEM_SIM_MEMORY=2G|GPUMEM_SIM_OTHER_MEMORY=1GiB", P_FREE, 1024),
    BADV("GPUMEM_SIM_OTHER_MEMORY=1G", P_FREE, "'1G'"),
    BADV("GPUMEM_SIM_OTHER_MEMORY=-1", P_FREE, "'-1'"),

    /* GPUMEM_SIM_FIRST_FIT=1: frees can leave the free memory in pieces */
    OKV("GPUMEM_SIM_MEMORY=4M|GPUMEM_SIM_FIRST_FIT=0", P_FRAG, 0),
    BADS("GPUMEM_SIM_MEMORY=4M|GPUMEM_SIM_FIRST_FIT=1", P_FRAG, GPUMEM_ERROR_OUT_OF_MEMORY, "fragmented"),
    BADS("GPUMEM_SIM_MEMORY=4M|GPUMEM_SIM_OTHER_MEMORY=3M", P_FRAG, GPUMEM_ERROR_OUT_OF_MEMORY,
         "held by other processes"),

    /* GPUMEM_SIM_FIRST_FIT, GPUMEM_SIM_STREAM_DELAY_US, GPUMEM_SIM_HOST_MEMORY */
    OKV("GPUMEM_SIM_FIRST_FIT= 1 ", P_DEVICES, 1),
    BADV("GPUMEM_SIM_FIRST_FIT=2", P_DEVICES, "'2'"),
    BADV("GPUMEM_SIM_FIRST_FIT=yes", P_DEVICES, "'yes'"),
    OKV("GPUMEM_SIM_STREAM_DELAY_US=10000000", P_DEVICES, 1),
    OKV("GPUMEM_SIM_STREAM_DELAY_US=0", P_DEVICES, 1),
    BADV("GPUMEM_SIM_STREAM_DELAY_US=10000001", P_DEVICES, "'10000001'"),
    BADV("GPUMEM_SIM_STREAM_DELAY_US=-1", P_DEVICES, "'-1'"),
    BADV("GPUMEM_SIM_STREAM_DELAY_US=2ms", P_DEVICES, "'2ms'"),
    OKV("GPUMEM_SIM_HOST_MEMORY=4M", P_PINNED_2M, 0 + 0),
    BADS("GPUMEM_SIM_HOST_MEMORY=1M", P_PINNED_2M, GPUMEM_ERROR_HOST_OUT_OF_MEMORY, NULL),
    BADV("GPUMEM_SIM_HOST_MEMORY=lots", P_DEVICES, "'lots'"),

    /* GPUMEM_SIM_BUSY: distinct ordinals, blanks around each */
    OKV("GPUMEM_SIM_DEVICES=3|GPUMEM_SIM_BUSY= 0 , 1 ", P_CONTEXT, 2),
    BADS("GPUMEM_SIM_DEVICES=2|GPUMEM_SIM_BUSY=0,1", P_CONTEXT, GPUMEM_ERROR_NO_DEVICE, NULL),
    BADV("GPUMEM_SIM_DEVICES=2|GPUMEM_SIM_BUSY=0,0", P_DEVICES, "'0,0'"),
    BADV("GPUMEM_SIM_DEVICES=2|GPUMEM_SIM_BUSY=2", P_DEVICES, "'2'"),
    BADV("GPUMEM_SIM_DEVICES=2|GPUMEM_SIM_BUSY=0,", P_DEVICES, "'0,'"),
    BADV("GPUMEM_SIM_DEVICES=2|GPUMEM_SIM_BUSY=01", P_DEVICES, "'01'"),

    /* GPUMEM_SIM_PEERS */
    OKV("GPUMEM_SIM_DEVICES=3", P_PEER_02, 1),
    OKV("GPUMEM_SIM_DEVICES=3|GPUMEM_SIM_PEERS= 0 - 1 ", P_PEER_01, 1),
    OKV("GPUMEM_SIM_DEVICES=3|GPUMEM_SIM_PEERS= 0 - 1 ", P_PEER_02, 0),
    OKV("GPUMEM_SIM_DEVICES=3|GPUMEM_SIM_PEERS=1-2, 2-0", P_PEER_02, 1),
    OKV("GPUMEM_SIM_DEVICES=3|GPUMEM_SIM_PEERS=NONE", P_PEER_01, 0),
    OKV("GPUMEM_SIM_DEVICES=3|GPUMEM_SIM_PEERS= All ", P_PEER_01, 1),
    BADV("GPUMEM_SIM_DEVICES=3|GPUMEM_SIM_PEERS=0-0", P_DEVICES, "'0-0'"),
    BADV("GPUMEM_SIM_DEVICES=3|GPUMEM_SIM_PEERS=0-1,1-0", P_DEVICES, "'0-1,1-0'"),
    BADV("GPUMEM_SIM_DEVICES=3|GPUMEM_SIM_PEERS=0-3", P_DEVICES, "'0-3'"),
    BADV("GPUMEM_SIM_DEVICES=3|GPUMEM_SIM_PEERS=0-1-2", P_DEVICES, "'0-1-2'"),
    BADV("GPUMEM_SIM_DEVICES=3|GPUMEM_SIM_PEERS=0:1", P_DEVICES, "'0:1'"),

    /* GPUMEM_SIM_FAIL=k[:ERROR] */
    BAD_ONCE("GPUMEM_SIM_FAIL=1", P_FAIL_FIRST, GPUMEM_ERROR_DRIVER, "CUDA_ERROR_UNKNOWN"),
    BAD_ONCE("GPUMEM_SIM_FAIL= 1 : cuda_error_invalid_value ", P_FAIL_FIRST, GPUMEM_ERROR_DRIVER,
             "CUDA_ERROR_INVALID_VALUE"),
    BAD_ONCE("GPUMEM_SIM_FAIL=1:Cuda_Error_Unknown", P_FAIL_FIRST, GPUMEM_ERROR_DRIVER, "CUDA_ERROR_UNKNOWN"),
    BAD_ONCE("GPUMEM_SIM_FAIL=1: 1 ", P_FAIL_FIRST, GPUMEM_ERROR_DRIVER, "CUDA_ERROR_INVALID_VALUE"),
    BADV("GPUMEM_SIM_FAIL=0", P_DEVICES, "'0'"),
    BADV("GPUMEM_SIM_FAIL=1:", P_DEVICES, "'1:'"),
    BADV("GPUMEM_SIM_FAIL=1:0", P_DEVICES, "'1:0'"),
    BADV("GPUMEM_SIM_FAIL=1:CUDA_ERROR_NOPE", P_DEVICES, "CUDA_ERROR_NOPE"),
    BADV("GPUMEM_SIM_FAIL=+1", P_DEVICES, "'+1'"),

    /* CUDA_DEVICE */
    OKV("GPUMEM_SIM_DEVICES=2|CUDA_DEVICE= 1\t", P_DEFAULT, 1),
    OKV("GPUMEM_SIM_DEVICES=2|CUDA_DEVICE=", P_DEFAULT, 0),
    BADV("GPUMEM_SIM_DEVICES=2|CUDA_DEVICE=01", P_DEFAULT, "'01'"),
    BADV("GPUMEM_SIM_DEVICES=2|CUDA_DEVICE=+0", P_DEFAULT, "'+0'"),
    BADV("GPUMEM_SIM_DEVICES=2|CUDA_DEVICE=-1", P_DEFAULT, "negative"),
    BADV("GPUMEM_SIM_DEVICES=2|CUDA_DEVICE=1\n", P_DEFAULT, NULL),
    BADS("GPUMEM_SIM_DEVICES=2|CUDA_DEVICE=2", P_DEFAULT, GPUMEM_ERROR_INVALID_DEVICE, NULL),
    BADS("GPUMEM_SIM_DEVICES=2|CUDA_DEVICE=2147483648", P_DEFAULT, GPUMEM_ERROR_INVALID_DEVICE, "2147483648"),
    BADS("GPUMEM_SIM_DEVICES=2|CUDA_DEVICE=99999999999999999999", P_DEFAULT, GPUMEM_ERROR_INVALID_DEVICE,
         "99999999999999999999"),
    BADS("GPUMEM_SIM_DEVICES=2|GPUMEM_SIM_BUSY=1|CUDA_DEVICE=1", P_CONTEXT, GPUMEM_ERROR_DEVICE_UNAVAILABLE, NULL),

    /* ~/.cuda-device, then ~/.cuda_device: a device ordinal on the first line */
    OKV("GPUMEM_SIM_DEVICES=2|@DEVFILE= 1\t\nignored", P_DEFAULT, 1),
    OKV("GPUMEM_SIM_DEVICES=2|@DEVFILE=1", P_DEFAULT, 1),
    OKV("GPUMEM_SIM_DEVICES=2|@DEVFILE_=1\n", P_DEFAULT, 1),
    OKV("GPUMEM_SIM_DEVICES=2|@DEVFILE=1\n|CUDA_DEVICE=0", P_DEFAULT, 0),
    BADV("GPUMEM_SIM_DEVICES=2|CUDA_DEVICE=|@DEVFILE=1\r\n", P_DEFAULT, ".cuda-device"),
    BADV("GPUMEM_SIM_DEVICES=2|CUDA_DEVICE=|@DEVFILE=01\n", P_DEFAULT, "'01'"),
    BADV("GPUMEM_SIM_DEVICES=2|CUDA_DEVICE=|@DEVFILE=\n", P_DEFAULT, ".cuda-device"),
    BADV("GPUMEM_SIM_DEVICES=2|CUDA_DEVICE=|@DEVFILE=                                                                 1\n",
         P_DEFAULT, "64"),
    BADS("GPUMEM_SIM_DEVICES=2|CUDA_DEVICE=|@DEVFILE=5\n", P_DEFAULT, GPUMEM_ERROR_INVALID_DEVICE, ".cuda-device"),
    BADV("GPUMEM_SIM_DEVICES=2|CUDA_DEVICE=|@DEVDIR=", P_DEFAULT, "not a regular file"),
    BADV("GPUMEM_SIM_DEVICES=2|CUDA_DEVICE=|@DEVFIFO=", P_DEFAULT, "not a regular file"),
    OKV("GPUMEM_SIM_DEVICES=2|CUDA_DEVICE=|HOME=/nonexistent-gpumem-home", P_DEFAULT, 0),

    /* GPUMEM_ALLOCATOR: a word */
    OKV("GPUMEM_ALLOCATOR= POOL ", P_CONTEXT, 0),
    OKV("GPUMEM_ALLOCATOR=Driver", P_CONTEXT, 0),
    BADV("GPUMEM_ALLOCATOR=pools", P_CONTEXT, "'pools'"),
    BADV("GPUMEM_SIM_DEVICES=2|GPUMEM_ALLOCATOR=x", P_CONTEXT, "'x'"),

    /* GPUMEM_MAX_PENDING_DEALLOCS_COUNT: 0 or more, default 10 */
    OKV("GPUMEM_MAX_PENDING_DEALLOCS_COUNT=", P_COUNT, 10),
    OKV("GPUMEM_MAX_PENDING_DEALLOCS_COUNT= 0 ", P_COUNT, 0),
    OKV("GPUMEM_MAX_PENDING_DEALLOCS_COUNT=5000000000", P_COUNT, 5000000000L),
    BADV("GPUMEM_MAX_PENDING_DEALLOCS_COUNT=-1", P_COUNT, "'-1'"),
    BADV("GPUMEM_MAX_PENDING_DEALLOCS_COUNT=1e3", P_COUNT, "'1e3'"),
    BADV("GPUMEM_MAX_PENDING_DEALLOCS_COUNT=99999999999999999999", P_COUNT, "99999999999999999999"),

    /* GPUMEM_MAX_PENDING_DEALLOCS_RATIO: a number 0 to 1, default 0.2 */
    OKV("GPUMEM_MAX_PENDING_DEALLOCS_RATIO=", P_RATIO_E6, 200000),
    OKV("GPUMEM_MAX_PENDING_DEALLOCS_RATIO=.5", P_RATIO_E6, 500000),
    OKV("GPUMEM_MAX_PENDING_DEALLOCS_RATIO=5.e-1", P_RATIO_E6, 500000),
    OKV("GPUMEM_MAX_PENDING_DEALLOCS_RATIO= 1 ", P_RATIO_E6, 1000000),
    OKV("GPUMEM_MAX_PENDING_DEALLOCS_RATIO=-0", P_RATIO_E6, 0),
    OKV("GPUMEM_MAX_PENDING_DEALLOCS_RATIO=1e-400", P_RATIO_E6, 0),
    OKV("GPUMEM_MAX_PENDING_DEALLOCS_RATIO=2E-1", P_RATIO_E6, 200000),
    BADV("GPUMEM_MAX_PENDING_DEALLOCS_RATIO=1e400", P_RATIO_E6, "'1e400'"),
    BADV("GPUMEM_MAX_PENDING_DEALLOCS_RATIO=1.5", P_RATIO_E6, "'1.5'"),
    BADV("GPUMEM_MAX_PENDING_DEALLOCS_RATIO=+0.5", P_RATIO_E6, "'+0.5'"),
    BADV("GPUMEM_MAX_PENDING_DEALLOCS_RATIO=0,5", P_RATIO_E6, "'0,5'"),
    BADV("GPUMEM_MAX_PENDING_DEALLOCS_RATIO=nan", P_RATIO_E6, "'nan'"),
    BADV("GPUMEM_MAX_PENDING_DEALLOCS_RATIO=0x0.8p0", P_RATIO_E6, "'0x0.8p0'"),
    BADV("GPUMEM_MAX_PENDING_DEALLOCS_RATIO=.", P_RATIO_E6, "'.'"),
    BADV("GPUMEM_MAX_PENDING_DEALLOCS_RATIO=1e", P_RATIO_E6, "'1e'"),

    /* GPUMEM_PEER: 0 or 1, default 1; a bad value is not overridden */
    OKV("GPUMEM_PEER=", P_PEER_ON, 1),
    OKV("GPUMEM_PEER= 0 ", P_PEER_ON, 0),
    OKV("GPUMEM_PEER=0", P_PEER_SET, 1),
    BADV("GPUMEM_PEER=2", P_PEER_ON, "'2'"),
    BADV("GPUMEM_PEER=on", P_PEER_SET, "'on'"),

    /* GPUMEM_COPY_MIN_ROW_BYTES: bytes, a size from 0 to 2^30, read by a copy with device memory */
    OKV("GPUMEM_COPY_MIN_ROW_BYTES=1073741824", P_COPY_D2H, 0),
    OKV("GPUMEM_COPY_MIN_ROW_BYTES= 1GiB ", P_COPY_D2H, 0),
    OKV("GPUMEM_COPY_MIN_ROW_BYTES=128B", P_COPY_D2H, 0),
    OKV("GPUMEM_COPY_MIN_ROW_BYTES=1k", P_COPY_D2H, 0),
    OKV("GPUMEM_COPY_MIN_ROW_BYTES=0", P_COPY_D2H, 0),
    BADV("GPUMEM_COPY_MIN_ROW_BYTES=1073741825", P_COPY_D2H, "'1073741825'"),
    BADV("GPUMEM_COPY_MIN_ROW_BYTES=2G", P_COPY_D2H, "'2G'"),
    BADV("GPUMEM_COPY_MIN_ROW_BYTES=1.5K", P_COPY_D2H, "'1.5K'"),

    /* GPUMEM_STAGING_*: gpumem_staging_get reads them */
    OKV("GPUMEM_STAGING_THREADS= 64 ", P_ST_THREADS, 64),
    OKV("GPUMEM_STAGING_THREADS=1", P_ST_THREADS, 1),
    BADV("GPUMEM_STAGING_THREADS=0", P_ST_THREADS, "'0'"),
    BADV("GPUMEM_STAGING_THREADS=65", P_ST_THREADS, "'65'"),
    /* a download into pageable memory queued on a stream could be staged too (issue 26 item 6) */
    OKV("GPUMEM_STAGING_THREADS=1", P_COPY_QUEUED, 64),
    OKV("GPUMEM_STAGING_THREADS=4", P_COPY_QUEUED, 64),
    BADV("GPUMEM_STAGING_THREADS=0", P_COPY_QUEUED, "'0'"),
    BADV("GPUMEM_STAGING_CHUNK=1K", P_COPY_QUEUED, "'1K'"),
    OKV("GPUMEM_STAGING_CHUNK=", P_ST_CHUNK, 2048),
    OKV("GPUMEM_STAGING_CHUNK=64kib", P_ST_CHUNK, 64),
    OKV("GPUMEM_STAGING_CHUNK=1G", P_ST_CHUNK, 1L << 20),
    BADV("GPUMEM_STAGING_CHUNK=63K", P_ST_CHUNK, "'63K'"),
    BADV("GPUMEM_STAGING_CHUNK=2G", P_ST_CHUNK, "'2G'"),
    OKV("GPUMEM_STAGING_DEPTH=", P_ST_DEPTH, 2),
    OKV("GPUMEM_STAGING_DEPTH=64", P_ST_DEPTH, 64),
    BADV("GPUMEM_STAGING_DEPTH=1", P_ST_DEPTH, "'1'"),
    BADV("GPUMEM_STAGING_DEPTH=65", P_ST_DEPTH, "'65'"),
    OKV("GPUMEM_STAGING_MIN_BYTES=", P_ST_MIN, 4096),
    OKV("GPUMEM_STAGING_MIN_BYTES=0", P_ST_MIN, 0),
    OKV("GPUMEM_STAGING_MIN_BYTES=1T", P_ST_MIN, 1L << 30),
    BADV("GPUMEM_STAGING_MIN_BYTES=-1", P_ST_MIN, "'-1'"),
    OKV("GPUMEM_STAGING_CHUNK=256K", P_ST_SET, 1024),
    BADV("GPUMEM_STAGING_CHUNK=1K", P_COPY_D2H, "'1K'"),
    BADV("GPUMEM_STAGING_DEPTH=x", P_COPY_D2H, "'x'"),

    /* GPUMEM_TRACE_STACKS: 0 or 1, read by every start */
    OKV("GPUMEM_TRACE_STACKS= 1 ", P_TRACE_START, 0),
    BADV("GPUMEM_TRACE_STACKS=2", P_TRACE_START, "'2'"),
    OKV("GPUMEM_TRACE_STACKS=2", P_DEVICES, 1),

    /* GPUMEM_TRACE: %p the process id, %% one %, any other % an error; a
     * file that cannot be made fails the creation, and every later one */
    OKV("GPUMEM_TRACE=gm-env-%p-%%.gmt", P_TRACE_FILE, 1),
    BADV("GPUMEM_TRACE=gm-env-%d.gmt", P_TRACE_FILE, "'gm-env-%d.gmt'"),
    BADV("GPUMEM_TRACE=gm-env-%", P_TRACE_FILE, "'gm-env-%'"),
    BADV("GPUMEM_TRACE=/nonexistent-gpumem-dir/t.gmt", P_TRACE_FILE, "/nonexistent-gpumem-dir/t.gmt"),
    BADV("GPUMEM_TRACE=gm-env-%p-%%.gmt|GPUMEM_TRACE_STACKS=yes", P_TRACE_FILE, "'yes'"),

    /* GPUMEM_DEBUG: a list of words; 0, empty words, leaks, poison and copies print no messages */
    OKV("GPUMEM_DEBUG=", P_DEBUG, 0),
    OKV("GPUMEM_DEBUG=0", P_DEBUG, 0),
    OKV("GPUMEM_DEBUG= 0 , ,", P_DEBUG, 0),
    OKV("GPUMEM_DEBUG= LEAKS ,Poison,copies", P_DEBUG, 0),
    OKV("GPUMEM_DEBUG=1", P_DEBUG, 1),
    OKV("GPUMEM_DEBUG=yes", P_DEBUG, 1),
    OKV("GPUMEM_DEBUG=leaks,1", P_DEBUG, 1),
    OKV("GPUMEM_DEBUG=-0", P_DEBUG, 1),

    OKV("GPUMEM_DEBUG=", P_DEBUG_LATE, 0),
    OKV("GPUMEM_DEBUG=1", P_DEBUG_LATE, 1),
    OKV("GPUMEM_DEBUG=copies", P_COPY_LINES, 1),
    OKV("GPUMEM_DEBUG= COPIES ,0", P_COPY_LINES, 1),
    OKV("GPUMEM_DEBUG=1", P_COPY_LINES, 0),
    OKV("GPUMEM_DEBUG=", P_COPY_LINES, 0),

    /* GPUMEM_COPY_SCRATCH_CHUNK: a size from 64K to 1G; a bad one fails the copies that need scratch */
    OKV("GPUMEM_COPY_SCRATCH_CHUNK=", P_COPY_STRIDED, 0),
    OKV("GPUMEM_COPY_SCRATCH_CHUNK= 64k ", P_COPY_STRIDED, 0),
    BADV("GPUMEM_COPY_SCRATCH_CHUNK=63K", P_COPY_STRIDED, "'63K'"),
    BADV("GPUMEM_COPY_SCRATCH_CHUNK=2G", P_COPY_STRIDED, "'2G'"),
    BADV("GPUMEM_COPY_MIN_ROW_BYTES=-1", P_COPY_STRIDED, "'-1'"),

    /* GPUMEM_ALLOCATOR=pool: every new context has its own pool */
    OKV("GPUMEM_ALLOCATOR=", P_OWN_POOLS, 0),
    OKV("GPUMEM_ALLOCATOR=\tPool", P_OWN_POOLS, 1),
    OKV("GPUMEM_ALLOCATOR=driver", P_OWN_POOLS, 0),

    /* status.h: successful calls leave the last failure's record alone,
     * also when a setting they do not need is bad */
    OKV("GPUMEM_COPY_SCRATCH_CHUNK=", P_QUIET_D2D, 1),
    OKV("GPUMEM_COPY_SCRATCH_CHUNK=63K", P_QUIET_D2D, 1),
    OKV("GPUMEM_PEER=x", P_QUIET_D2D, 1),
    OKV("GPUMEM_STAGING_CHUNK=1K", P_QUIET_D2D, 1),
    OKV("GPUMEM_COPY_SCRATCH_CHUNK=63K", P_QUIET_H2H, 1),
    OKV("GPUMEM_COPY_MIN_ROW_BYTES=x", P_QUIET_H2H, 1),
    OKV("GPUMEM_STAGING_CHUNK=1K", P_QUIET_H2H, 1),
    BADV("GPUMEM_COPY_MIN_ROW_BYTES=x", P_QUIET_D2D, "'x'"),

    /* the deallocation limits are read by each context's creation; the simulator's once */
    OKV("GPUMEM_MAX_PENDING_DEALLOCS_COUNT=5", P_PER_CONTEXT, 507),
    OKV("GPUMEM_SIM_DEVICES=2", P_SIM_ONCE, 202),

    /* read once, together, by the first copy of any kind */
    OKV("GPUMEM_PEER=", P_LATE, 3),

    /* a copy between two host arrays fails for no copy setting */
    OKV("GPUMEM_COPY_MIN_ROW_BYTES=x", P_COPY_H2H, 0),
    OKV("GPUMEM_COPY_SCRATCH_CHUNK=x", P_COPY_H2H, 0),
    OKV("GPUMEM_PEER=x", P_COPY_H2H, 0),

    /* gpumem_staging_set replaces the variables */
    OKV("GPUMEM_STAGING_CHUNK=1K", P_ST_SET, 1024),

    /* GPUMEM_CUDA_LIBRARY: read by the cuda backend only */
    OKV("GPUMEM_CUDA_LIBRARY=/nonexistent/libcuda.so.1", P_DEVICES, 1),
    BADS("GPUMEM_BACKEND=cuda|GPUMEM_CUDA_LIBRARY=/nonexistent/libcuda.so.1", P_DEVICES,
         GPUMEM_ERROR_DRIVER_NOT_FOUND, "/nonexistent/libcuda.so.1"),
    BADS("GPUMEM_BACKEND=auto|GPUMEM_CUDA_LIBRARY=/nonexistent/libcuda.so.1", P_DEVICES,
         GPUMEM_ERROR_DRIVER_NOT_FOUND, "GPUMEM_BACKEND=sim"),
};

int main(void)
{
    size_t n = sizeof cases / sizeof cases[0];
    plan((int)n);
    for (size_t i = 0; i < n; i++)
        check_case(&cases[i]);
    done_testing();
    return exit_status();
}
