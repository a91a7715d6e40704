/* The promises of the memory-side headers (memory.h, host.h, stream.h,
 * event.h, context.h, staging.h, cleanup.h, memo.h, ipc.h, interop.h,
 * debug.h, status.h), checked as an outside user reads them: every
 * documented status for bad arguments and ended handles, the message that
 * names the public function and the argument, the record of the last
 * failure, and out-parameters left as documented on failure.
 * This file: main, and what runs in children or across threads (the
 * environment, GPUMEM_DEBUG and GPUMEM_SIM_FAIL, default devices, the
 * causes of an out-of-memory error, contexts and races).  The others:
 * promises-memory-calls.c (status.h to cleanup.h), promises-memory-interop.c
 * (memo.h, memory.h, ipc.h, interop.h, debug.h), promises-memory-behaviour.c
 * (the behaviour behind the statuses, handles' lifecycle, batch 5) and
 * promises-memory-faults.c (peaks, defer_cleanup, failing calls that change
 * nothing, write-backs, IPC handles in another process). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

#include <gpumem.h>

#include "promises.h"
#include "tap.h"
#include "child.h"
#include "promises-memory.h"

gpumem_context *ctx, *ctx2;
const gpumem_dtype *i32, *f32;


/* ---- batch 3: GPUMEM_DEBUG and GPUMEM_SIM_FAIL, in children whose standard error is kept --------- */

typedef struct {
    int status;
    long value[4];
    char text[512];
} dbg_result;

/* Runs fn in a child with the variable set and standard error in a file;
 * the child ends with exit() (atexit handlers run); err gets what it wrote. */
static int run_dbg(const char *var, const char *value, void (*fn)(dbg_result *), dbg_result *res, char *err,
                   size_t errsize)
{
    char path[] = "/tmp/gpumem-promises-XXXXXX";
    int fd = mkstemp(path);
    int fds[2];
    if (fd < 0 || pipe(fds) != 0)
        return -1;
    memset(res, 0, sizeof *res);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        dup2(fd, 2);
        setenv(var, value, 1);
        dbg_result r;
        memset(&r, 0, sizeof r);
        fn(&r);
        if (write(fds[1], &r, sizeof r) != (ssize_t)sizeof r)
            _exit(3);
        exit(0);
    }
    close(fds[1]);
    ssize_t n = read(fds[0], res, sizeof *res);
    close(fds[0]);
    int wst = 0;
    waitpid(pid, &wst, 0);
    lseek(fd, 0, SEEK_SET);
    ssize_t got = read(fd, err, errsize - 1);
    err[got > 0 ? got : 0] = '\0';
    close(fd);
    unlink(path);
    return n == (ssize_t)sizeof *res && WIFEXITED(wst) && WEXITSTATUS(wst) == 0 ? 0 : -1;
}

static void dbg_leak(dbg_result *r)
{
    const int64_t n = 1000;
    gpumem_array *a = NULL;
    r->status = gpumem_device_array(NULL, 1, &n, NULL, gpumem_dtype_builtin(GPUMEM_INT32), 'C', NULL, &a);
    /* a is never released: the end of the process lists it */
}

static void dbg_copy(dbg_result *r)
{
    const int64_t n = 4;
    int32_t host[4] = {0, 0, 0, 0};
    gpumem_array *d = NULL, *h = NULL;
    const gpumem_dtype *t = gpumem_dtype_builtin(GPUMEM_INT32);
    r->status = gpumem_device_array(NULL, 1, &n, NULL, t, 'C', NULL, &d);
    if (r->status == GPUMEM_OK)
        r->status = gpumem_host_array_wrap(host, 1, &n, NULL, t, &h);
    if (r->status == GPUMEM_OK)
        r->status = gpumem_copy_to_host(d, h, NULL);
    gpumem_array_release(h);
    gpumem_array_release(d);
}

static void dbg_poison(dbg_result *r)
{
    const int64_t n = 8, i = 5;
    gpumem_array *d = NULL, *h = NULL, *f = NULL;
    int32_t v = 0, w = 0;
    float x = 0;
    r->status = gpumem_device_array(NULL, 1, &n, NULL, gpumem_dtype_builtin(GPUMEM_INT32), 'C', NULL, &d);
    if (r->status == GPUMEM_OK)
        r->status = gpumem_array_get_item(d, &i, &v, NULL);
    if (r->status == GPUMEM_OK)
        r->status = gpumem_host_array(1, &n, gpumem_dtype_builtin(GPUMEM_INT32), 'C', &h);
    if (r->status == GPUMEM_OK)
        r->status = gpumem_array_get_item(h, &i, &w, NULL);
    if (r->status == GPUMEM_OK)
        r->status = gpumem_device_array(NULL, 1, &n, NULL, gpumem_dtype_builtin(GPUMEM_FLOAT32), 'C', NULL, &f);
    if (r->status == GPUMEM_OK)
        r->status = gpumem_array_get_item(f, &i, &x, NULL);
    r->value[0] = v;
    r->value[1] = w;
    r->value[2] = isnan(x) != 0;
    gpumem_array_release(d);
    gpumem_array_release(h);
    gpumem_array_release(f);
}

static void dbg_quiet(dbg_result *r)
{
    int n = 0;
    r->status = gpumem_device_count(&n);
    gpumem_device_count(NULL);
    gpumem_stream *s = NULL;
    gpumem_stream_create(NULL, 99, &s);
}

static void dbg_simfail(dbg_result *r)
{
    int n = 0;
    r->status = gpumem_device_count(&n);
    r->value[0] = gpumem_last_driver_result();
    snprintf(r->text, sizeof r->text, "%s", gpumem_last_error());
}

static void test_debug_env(void)
{
    static char err[16384];
    dbg_result r;
    int rc = run_dbg("GPUMEM_DEBUG", "leaks", dbg_leak, &r, err, sizeof err);
    ok(rc == 0 && r.status == GPUMEM_OK && strstr(err, "gpumem_device_array") != NULL,
       "GPUMEM_DEBUG=leaks: the end of the process lists the array and the call that made it");
    if (strstr(err, "gpumem_device_array") == NULL)
        diag("  stderr: %.600s", err);
    ok(strstr(err, "4000") != NULL, "the leak lists the array's bytes");
    rc = run_dbg("GPUMEM_DEBUG", " Copies ", dbg_copy, &r, err, sizeof err);
    ok(rc == 0 && r.status == GPUMEM_OK &&
           strstr(err, "gpumem: copy gpumem_copy_to_host: d2h path=contiguous bytes=16 us=") != NULL &&
           strstr(err, " sync=yes status=GPUMEM_OK\n") != NULL,
       "GPUMEM_DEBUG=' Copies ': one line per copy, as documented");
    if (strstr(err, "gpumem: copy gpumem_copy_to_host: d2h") == NULL || strstr(err, "sync=yes") == NULL)
        diag("  stderr: %.600s", err);
    int lines = 0;
    for (const char *c = err; *c; c++)
        lines += *c == '\n';
    is_int(lines, 1, "GPUMEM_DEBUG=copies prints nothing else");
    rc = run_dbg("GPUMEM_DEBUG", "poison", dbg_poison, &r, err, sizeof err);
    ok(rc == 0 && r.status == GPUMEM_OK && r.value[0] == 2147384958L && r.value[1] == 2147384958L && r.value[2] == 1,
       "GPUMEM_DEBUG=poison: new int32 arrays read 2147384958, float32 NaN (%ld, %ld, %ld)", r.value[0], r.value[1],
       r.value[2]);
    is_str(err, "", "GPUMEM_DEBUG=poison prints nothing");
    rc = run_dbg("GPUMEM_DEBUG", "0", dbg_quiet, &r, err, sizeof err);
    ok(rc == 0 && r.status == GPUMEM_OK && err[0] == '\0', "GPUMEM_DEBUG=0: failures print nothing");
    rc = run_dbg("GPUMEM_DEBUG", "1", dbg_quiet, &r, err, sizeof err);
    ok(rc == 0 && strstr(err, "gpumem: ") != NULL && strstr(err, "gpumem_stream_create") != NULL,
       "GPUMEM_DEBUG=1: errors are printed as they are raised");
    rc = run_dbg("GPUMEM_SIM_FAIL", "1:CUDA_ERROR_INVALID_VALUE", dbg_simfail, &r, err, sizeof err);
    ok(rc == 0 && r.status == GPUMEM_ERROR_DRIVER && r.value[0] == 1 &&
           strstr(r.text, "CUDA_ERROR_INVALID_VALUE") != NULL && strncmp(r.text, "gpumem_device_count: ", 21) == 0,
       "GPUMEM_SIM_FAIL=1:CUDA_ERROR_INVALID_VALUE fails the first driver call (%s, %ld: %s)",
       gpumem_status_string(r.status), r.value[0], r.text);
    rc = run_dbg("GPUMEM_SIM_FAIL", "1:2", dbg_simfail, &r, err, sizeof err);
    ok(rc == 0 && r.status == GPUMEM_ERROR_OUT_OF_MEMORY && r.value[0] == 2,
       "GPUMEM_SIM_FAIL=1:2 fails it with CUDA_ERROR_OUT_OF_MEMORY (%s, %ld: %s)", gpumem_status_string(r.status),
       r.value[0], r.text);
    rc = run_dbg("GPUMEM_SIM_FAIL", "1", dbg_simfail, &r, err, sizeof err);
    ok(rc == 0 && r.status == GPUMEM_ERROR_DRIVER && r.value[0] == 999,
       "GPUMEM_SIM_FAIL=1 fails it with CUDA_ERROR_UNKNOWN (%s, %ld: %s)", gpumem_status_string(r.status), r.value[0],
       r.text);
}


/* ---- batch 6: contexts, default devices, races, destroy after a failed wait ------------------- */

static gpumem_event *race_event;
static gpumem_status race_result[2];

static void *race_destroy(void *arg)
{
    int i = *(int *)arg;
    race_result[i] = gpumem_event_destroy(race_event);
    return NULL;
}

static gpumem_stream *race_stream;
static gpumem_registration *race_reg;
static gpumem_context *race_ctx;

static void *race_end_other(void *arg)
{
    int i = *(int *)arg;
    if (i < 2) {
        race_result[i] = gpumem_stream_destroy(race_stream);
    } else if (i < 4) {
        gpumem_registration *copy = race_reg; /* each thread ends its own copy of the handle */
        race_result[i - 2] = gpumem_unpinned(&copy);
    } else {
        race_result[i - 4] = gpumem_context_release(race_ctx);
    }
    return NULL;
}

static void test_races(void)
{
    const int64_t n = 1024;
    gpumem_array *h = NULL;
    GOOD(gpumem_host_array(1, &n, i32, 'C', &h));
    static const char *const what[] = {"gpumem_stream_destroy", "gpumem_unpinned", "gpumem_context_release"};
    for (int kind = 0; kind < 3; kind++) {
        int good = 1;
        for (int round = 0; round < 20; round++) {
            if (kind == 0)
                GOOD(gpumem_stream_create(ctx, 0, &race_stream));
            else if (kind == 1)
                GOOD(gpumem_pinned(ctx, &h, 1, &race_reg));
            else
                GOOD(gpumem_context_create(0, &race_ctx));
            pthread_t t[2];
            int idx[2] = {2 * kind, 2 * kind + 1};
            for (int i = 0; i < 2; i++)
                pthread_create(&t[i], NULL, race_end_other, &idx[i]);
            for (int i = 0; i < 2; i++)
                pthread_join(t[i], NULL);
            int oks = (race_result[0] == GPUMEM_OK) + (race_result[1] == GPUMEM_OK);
            int states =
                (race_result[0] == GPUMEM_ERROR_INVALID_STATE) + (race_result[1] == GPUMEM_ERROR_INVALID_STATE);
            good &= oks == 1 && states == 1;
        }
        ok(good, "%s from two threads at once: exactly one succeeds, 20 times", what[kind]);
    }
    gpumem_array_release(h);
}

static void test_contexts(void)
{
    /* two handles on one device have separate caches */
    gpumem_context *a = NULL, *b = NULL;
    GOOD(gpumem_context_create(0, &a));
    GOOD(gpumem_context_create(0, &b));
    void *v = NULL;
    int u1 = 0, u2 = 0;
    created = 0;
    GOOD(gpumem_memoize(a, "same", 4, memo_create, NULL, &u1, &v));
    GOOD(gpumem_memoize(b, "same", 4, memo_create, NULL, &u2, &v));
    ok(a != b && created == 2 && v == &u2, "two gpumem_context_create calls give handles with separate caches");
    gpumem_context_release(b);

    /* an extra release while a stream holds the context */
    gpumem_stream *s = NULL;
    GOOD(gpumem_stream_create(a, 0, &s));
    int refs = 0;
    GOOD(gpumem_context_refcount(a, &refs));
    is_int(refs, 2, "a stream holds a reference on its context");
    GOOD(gpumem_context_release(a)); /* the caller's own */
    GOOD(gpumem_context_refcount(a, &refs));
    is_int(refs, 1, "the stream's reference is left");
    GOOD(gpumem_stream_destroy(s)); /* ends the context too */
    BAD(gpumem_context_release(a), GPUMEM_ERROR_INVALID_STATE, "ctx");

    /* destroy after a failed wait: the first failure, and the stream is destroyed either way */
    GOOD(gpumem_stream_create(ctx, 0, &s));
    gpumem_stream *stale = s;
    GOOD(gpumem_debug_fail_call(1, 999));
    gpumem_status st = gpumem_stream_destroy(s);
    gpumem_debug_fail_call(0, 0);
    ok(st == GPUMEM_ERROR_DRIVER && gpumem_last_driver_result() == 999 &&
           strncmp(gpumem_last_error(), "gpumem_stream_destroy: ", 23) == 0,
       "a failed final synchronization is returned by gpumem_stream_destroy (%s: %s)", gpumem_status_string(st),
       gpumem_last_error());
    BAD(gpumem_stream_destroy(stale), GPUMEM_ERROR_INVALID_STATE, "stream");

    /* two threads end one event: exactly one succeeds */
    int good = 1;
    for (int round = 0; round < 20; round++) {
        pthread_t t[2];
        int idx[2] = {0, 1};
        GOOD(gpumem_event_create(ctx, 0, &race_event));
        for (int i = 0; i < 2; i++)
            pthread_create(&t[i], NULL, race_destroy, &idx[i]);
        for (int i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
        int oks = (race_result[0] == GPUMEM_OK) + (race_result[1] == GPUMEM_OK);
        int states = (race_result[0] == GPUMEM_ERROR_INVALID_STATE) + (race_result[1] == GPUMEM_ERROR_INVALID_STATE);
        good &= oks == 1 && states == 1;
    }
    ok(good, "of two threads that destroy one event, exactly one succeeds, 20 times");

    /* DLPack kDLCUDA with no context: a context on the tensor's device */
    const int64_t n = 8;
    gpumem_array *d = NULL, *imp = NULL;
    GOOD(gpumem_device_array(ctx2, 1, &n, NULL, i32, 'C', NULL, &d));
    void *t = NULL;
    GOOD(gpumem_array_to_dlpack(d, 0, &t));
    dl_managed *tm = t;
    ok(tm->dl_tensor.device.device_type == 2 && tm->dl_tensor.device.device_id == 1, "a device array of device 1");
    GOOD(gpumem_array_from_dlpack(NULL, tm, 0, &imp));
    gpumem_context *ic = NULL;
    gpumem_array_context(imp, &ic);
    int dev = -1;
    gpumem_context_get_device(ic, &dev);
    is_int(dev, 1, "a kDLCUDA import with a NULL context lands in a context of the tensor's device");
    gpumem_array_release(imp);
    gpumem_array_release(d);

    /* the last copy path of this thread */
    gpumem_array *h = NULL;
    int32_t buf[8] = {0};
    GOOD(gpumem_device_array(ctx, 1, &n, NULL, i32, 'C', NULL, &d));
    GOOD(gpumem_host_array_wrap(buf, 1, &n, NULL, i32, &h));
    GOOD(gpumem_copy_to_host(d, h, NULL));
    gpumem_copy_path path = GPUMEM_COPY_PATH_NONE;
    GOOD(gpumem_debug_last_copy_path(&path));
    is_int(path, GPUMEM_COPY_PATH_CONTIGUOUS, "a contiguous download reports the contiguous path");
    gpumem_array_release(h);
    gpumem_array_release(d);
}

static void child_default(const void *arg, child_result *out)
{
    const char *const *kv = arg; /* {CUDA_DEVICE or "", GPUMEM_SIM_BUSY or "", call, fallback} */
    char *home = make_home();
    setenv("HOME", home, 1);
    if (kv[0][0])
        setenv("CUDA_DEVICE", kv[0], 1);
    if (kv[1][0])
        setenv("GPUMEM_SIM_BUSY", kv[1], 1);
    gpumem_context *c = NULL;
    if (strcmp(kv[2], "quiet") == 0) {
        /* a scan that passes a refusing device succeeds: the last failure stays the caller's */
        gpumem_stream *s = NULL;
        gpumem_device_count(NULL);
        out->status = gpumem_context_create_default(&c);
        out->value[0] = strncmp(gpumem_last_error(), "gpumem_device_count: ", 21) == 0 &&
                        gpumem_last_status() == GPUMEM_ERROR_NULL_ARGUMENT && gpumem_last_driver_result() == 0;
        gpumem_context_release(c);
        gpumem_status st = gpumem_stream_create(NULL, 0, &s); /* the autoinit context, made by the same scan */
        out->value[1] = st == GPUMEM_OK && strncmp(gpumem_last_error(), "gpumem_device_count: ", 21) == 0;
        gpumem_stream_destroy(s);
        snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
        remove_home(home);
        return;
    }
    if (strcmp(kv[2], "default") == 0) {
        int dev = -5;
        out->status = gpumem_get_default_device(atoi(kv[3]), &dev);
        out->value[0] = dev;
    } else if (strcmp(kv[2], "autoinit") == 0) {
        out->status = gpumem_autoinit(&c);
        gpumem_status again = gpumem_autoinit(&c);
        out->value[2] = (int)again == out->status;
        if (c != NULL) {
            int dev = -1;
            gpumem_selection rule = GPUMEM_SELECTION_EXPLICIT;
            gpumem_context_get_device(c, &dev);
            gpumem_context_selection(c, &rule);
            out->value[0] = dev;
            out->value[1] = rule;
        }
    } else {
        out->status = gpumem_context_create_default(&c);
        if (out->status == GPUMEM_OK) {
            int dev = -1;
            gpumem_selection rule = GPUMEM_SELECTION_EXPLICIT;
            gpumem_context_get_device(c, &dev);
            gpumem_context_selection(c, &rule);
            out->value[0] = dev;
            out->value[1] = rule;
        }
        gpumem_context_release(c);
    }
    snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
    remove_home(home);
}

static void default_checks(void)
{
    static const char *cases[][7] = {
        /* CUDA_DEVICE, GPUMEM_SIM_BUSY, call, fallback, status, device, rule or needle */
        {"", "", "default", "1", "GPUMEM_OK", "1", ""},
        {"", "", "default", "7", "GPUMEM_ERROR_INVALID_DEVICE", "", "7"},
        {"", "", "default", "-1", "GPUMEM_ERROR_INVALID_DEVICE", "", "-1"},
        {"", "", "create", "", "GPUMEM_OK", "0", "scan"},
        {"", "0", "create", "", "GPUMEM_OK", "1", "scan"},
        {"1", "", "create", "", "GPUMEM_OK", "1", "CUDA_DEVICE"},
        {"0", "0", "create", "", "GPUMEM_ERROR_DEVICE_UNAVAILABLE", "", "CUDA_DEVICE"},
        {"", "0,1", "create", "", "GPUMEM_ERROR_NO_DEVICE", "", "device 1"},
        {"", "0,1", "autoinit", "", "GPUMEM_ERROR_NO_DEVICE", "", "gpumem_autoinit: the autoinit context: "},
        {"1", "", "autoinit", "", "GPUMEM_OK", "1", "CUDA_DEVICE"},
    };
    static const char *const quiet[] = {"", "0", "quiet", ""};
    child_result q;
    int qrc = run_child(child_default, quiet, &q);
    ok(qrc == 0 && q.status == GPUMEM_OK && q.value[0] == 1 && q.value[1] == 1,
       "GPUMEM_SIM_BUSY=0: the scan's success, and the autoinit's, leave the last failure alone (%s: %s)",
       gpumem_status_string(q.status), q.text);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        child_result r;
        int rc = run_child(child_default, cases[i], &r);
        int good = rc == 0 && strcmp(gpumem_status_string(r.status), cases[i][4]) == 0;
        if (good && r.status == GPUMEM_OK) {
            good = r.value[0] == atoi(cases[i][5]);
            if (cases[i][6][0])
                good &= strcmp(gpumem_selection_name((gpumem_selection)r.value[1]), cases[i][6]) == 0;
        } else if (good) {
            good = strstr(r.text, cases[i][6]) != NULL;
        }
        if (good && strcmp(cases[i][2], "autoinit") == 0)
            good = r.value[2] == 1;
        ok(good, "CUDA_DEVICE='%s' GPUMEM_SIM_BUSY='%s' %s(%s): %s", cases[i][0], cases[i][1], cases[i][2],
           cases[i][3], cases[i][4]);
        if (!good)
            diag("  got %s, device %ld, rule %ld: %s", gpumem_status_string(r.status), r.value[0], r.value[1], r.text);
    }
}


/* ---- batch 8: the causes of an out-of-memory error (memory.h, gpumem-memory.7) --------------- */

static void oom_case(const void *arg, child_result *out)
{
    const char *const *kv = arg; /* variable, value, what: device or pinned */
    setenv("GPUMEM_SIM_MEMORY", "256M", 1);
    setenv(kv[0], kv[1], 1);
    gpumem_context *c = NULL;
    if (gpumem_context_create(0, &c) != GPUMEM_OK) {
        out->status = -1;
        snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
        return;
    }
    const gpumem_dtype *u8 = gpumem_dtype_builtin(GPUMEM_UINT8);
    gpumem_array *keep[64] = {NULL};
    gpumem_array *big = (gpumem_array *)&out;
    if (strcmp(kv[2], "pinned") == 0) {
        const int64_t n = 48 << 20;
        out->status = gpumem_pinned_array(c, 1, &n, NULL, u8, 'C', &big);
    } else if (strcmp(kv[2], "fragmented") == 0) {
        /* 16 MiB pieces, every other one freed: 128 MiB free, no 32 MiB block */
        const int64_t piece = 16 << 20, n = 32 << 20;
        int k = 0;
        while (k < 64 && gpumem_device_array(c, 1, &piece, NULL, u8, 'C', NULL, &keep[k]) == GPUMEM_OK)
            k++;
        for (int i = 0; i < k; i += 2) {
            gpumem_array_release(keep[i]);
            keep[i] = NULL;
        }
        gpumem_context_flush_deallocations(c);
        out->status = gpumem_device_array(c, 1, &n, NULL, u8, 'C', NULL, &big);
    } else {
        const int64_t n = 200 << 20;
        out->status = gpumem_device_array(c, 1, &n, NULL, u8, 'C', NULL, &big);
    }
    out->value[0] = big == (gpumem_array *)&out;
    out->value[1] = gpumem_last_driver_result();
    snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
}

static void oom_checks(void)
{
    static const char *cases[][5] = {
        {"GPUMEM_SIM_OTHER_MEMORY", "160M", "device", "GPUMEM_ERROR_OUT_OF_MEMORY", "cause: held by other processes"},
        {"GPUMEM_SIM_FIRST_FIT", "1", "fragmented", "GPUMEM_ERROR_OUT_OF_MEMORY",
         "cause: fragmented (enough free in total, no block large enough)"},
        {"GPUMEM_SIM_HOST_MEMORY", "32M", "pinned", "GPUMEM_ERROR_HOST_OUT_OF_MEMORY",
         "the host refused more page-locked memory"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        child_result r;
        int rc = run_child(oom_case, cases[i], &r);
        const char *fn = strcmp(cases[i][2], "pinned") == 0 ? "gpumem_pinned_array: " : "gpumem_device_array: ";
        int good = rc == 0 && strcmp(gpumem_status_string(r.status), cases[i][3]) == 0 &&
                   strstr(r.text, cases[i][4]) != NULL && strncmp(r.text, fn, strlen(fn)) == 0 && r.value[0] == 1 &&
                   r.value[1] == 2;
        ok(good, "%s=%s: %s, '%s', output alone, driver result 2", cases[i][0], cases[i][1], cases[i][3],
           cases[i][4]);
        if (!good)
            diag("  got %s (array alone %ld, driver result %ld): %s", gpumem_status_string(r.status), r.value[0],
                 r.value[1], r.text);
    }
}


/* ---- the environment (children) ------------------------------------------------------ */

/* A call in a child whose environment was set: kv = {variable, value, call}. */
static void env_case(const void *arg, child_result *out)
{
    const char *const *kv = arg;
    const char *call = kv[2];
    setenv(kv[0], kv[1], 1);
    gpumem_context *c = NULL;
    gpumem_stream *s = NULL;
    if (strcmp(kv[0], "GPUMEM_STAGING_THREADS") == 0 && strcmp(call, "gpumem_staging_set") == 0) {
        /* a successful call leaves the last failure alone, also when it reads a bad environment */
        gpumem_device_count(NULL);
        gpumem_staging_settings st = {.size = sizeof st, 2, 1u << 20, 3, 1u << 20};
        gpumem_staging_settings got = {.size = sizeof got};
        out->status = gpumem_staging_set(&st);
        snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
        out->value[0] = gpumem_staging_get(&got);
        out->value[1] = got.threads == 2 && got.chunk_bytes == 1u << 20 && got.depth == 3;
        return;
    }
    if (strcmp(call, "gpumem_array_from_dlpack") == 0) {
        /* kDLCPU is trusted where no backend loads: a success that leaves the last failure alone */
        int32_t buf[4] = {1, 2, 3, 4};
        int64_t shape[1] = {4};
        dl_managed t = {{buf, {1, 0}, 1, {0, 32, 1}, shape, NULL, 0}, NULL, NULL};
        gpumem_array *a = NULL;
        gpumem_device_count(NULL);
        out->status = gpumem_array_from_dlpack(NULL, &t, 0, &a);
        snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
        int32_t v = 0;
        const int64_t idx = 3;
        out->value[0] = gpumem_array_get_item(a, &idx, &v, NULL) == GPUMEM_OK && v == 4;
        gpumem_array_release(a);
        return;
    }
    if (strcmp(call, "gpumem_staging_get") == 0) {
        gpumem_staging_settings st = {.size = sizeof st};
        out->status = gpumem_staging_get(&st);
    } else if (strcmp(call, "gpumem_get_default_device") == 0) {
        int dev = -5;
        out->status = gpumem_get_default_device(0, &dev);
        out->value[0] = dev;
    } else if (strcmp(call, "gpumem_backend") == 0) {
        const char *name = NULL;
        out->status = gpumem_backend(&name);
    } else if (strcmp(call, "gpumem_device_count") == 0) {
        int n = 0;
        out->status = gpumem_device_count(&n);
    } else if (strcmp(call, "gpumem_device_name") == 0) {
        char name[64];
        out->status = gpumem_device_name(0, name, sizeof name);
    } else if (strcmp(call, "gpumem_peer_can_access") == 0) {
        int can = 0;
        out->status = gpumem_peer_can_access(0, 1, &can);
    } else if (strcmp(call, "gpumem_is_cuda_array") == 0) {
        int r = 0;
        out->status = gpumem_is_cuda_array(4096, &r, NULL);
    } else if (strcmp(call, "gpumem_stream_create") == 0) {
        out->status = gpumem_stream_create(NULL, 0, &s);
        gpumem_stream_destroy(s);
    } else if (strcmp(call, "gpumem_autoinit") == 0) {
        out->status = gpumem_autoinit(&c);
        c = NULL;
    } else {
        out->status = gpumem_context_create(0, &c);
        gpumem_context_release(c);
    }
    snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
}

static void env_checks(void)
{
    static const char *cases[][5] = {
        /* variable, value, call, status name, needle */
        {"GPUMEM_STAGING_THREADS", "0", "gpumem_staging_get", "GPUMEM_ERROR_INVALID_ENVIRONMENT",
         "GPUMEM_STAGING_THREADS"},
        {"GPUMEM_STAGING_THREADS", "lots", "gpumem_staging_get", "GPUMEM_ERROR_INVALID_ENVIRONMENT",
         "GPUMEM_STAGING_THREADS"},
        {"GPUMEM_STAGING_CHUNK", "1K", "gpumem_staging_get", "GPUMEM_ERROR_INVALID_ENVIRONMENT",
         "GPUMEM_STAGING_CHUNK"},
        {"GPUMEM_STAGING_DEPTH", "1", "gpumem_staging_get", "GPUMEM_ERROR_INVALID_ENVIRONMENT",
         "GPUMEM_STAGING_DEPTH"},
        {"GPUMEM_STAGING_MIN_BYTES", "x", "gpumem_staging_get", "GPUMEM_ERROR_INVALID_ENVIRONMENT",
         "GPUMEM_STAGING_MIN_BYTES"},
        {"GPUMEM_STAGING_CHUNK", "1M", "gpumem_staging_get", "GPUMEM_OK", ""},
        {"GPUMEM_MAX_PENDING_DEALLOCS_COUNT", "ten", "gpumem_context_create", "GPUMEM_ERROR_INVALID_ENVIRONMENT",
         "GPUMEM_MAX_PENDING_DEALLOCS_COUNT"},
        {"GPUMEM_MAX_PENDING_DEALLOCS_COUNT", "-1", "gpumem_context_create", "GPUMEM_ERROR_INVALID_ENVIRONMENT",
         "GPUMEM_MAX_PENDING_DEALLOCS_COUNT"},
        {"GPUMEM_MAX_PENDING_DEALLOCS_RATIO", "1.5", "gpumem_context_create", "GPUMEM_ERROR_INVALID_ENVIRONMENT",
         "GPUMEM_MAX_PENDING_DEALLOCS_RATIO"},
        {"GPUMEM_MAX_PENDING_DEALLOCS_RATIO", "nan", "gpumem_context_create", "GPUMEM_ERROR_INVALID_ENVIRONMENT",
         "GPUMEM_MAX_PENDING_DEALLOCS_RATIO"},
        {"GPUMEM_MAX_PENDING_DEALLOCS_RATIO", "0.5", "gpumem_context_create", "GPUMEM_OK", ""},
        {"GPUMEM_MAX_PENDING_DEALLOCS_COUNT", "x", "gpumem_stream_create", "GPUMEM_ERROR_INVALID_ENVIRONMENT",
         "gpumem_stream_create: the autoinit context: "},
        {"CUDA_DEVICE", " 1\t", "gpumem_get_default_device", "GPUMEM_OK", ""},
        {"CUDA_DEVICE", "01", "gpumem_get_default_device", "GPUMEM_ERROR_INVALID_ENVIRONMENT", "CUDA_DEVICE"},
        {"CUDA_DEVICE", "+1", "gpumem_get_default_device", "GPUMEM_ERROR_INVALID_ENVIRONMENT", "CUDA_DEVICE"},
        {"CUDA_DEVICE", "1x", "gpumem_get_default_device", "GPUMEM_ERROR_INVALID_ENVIRONMENT", "CUDA_DEVICE"},
        {"CUDA_DEVICE", "7", "gpumem_get_default_device", "GPUMEM_ERROR_INVALID_DEVICE", "CUDA_DEVICE"},
        {"CUDA_DEVICE", "7", "gpumem_stream_create", "GPUMEM_ERROR_INVALID_DEVICE",
         "gpumem_stream_create: the autoinit context: "},
        {"GPUMEM_BACKEND", "gpu", "gpumem_context_create", "GPUMEM_ERROR_INVALID_ENVIRONMENT", "GPUMEM_BACKEND"},
        {"GPUMEM_BACKEND", "gpu", "gpumem_backend", "GPUMEM_ERROR_INVALID_ENVIRONMENT", "GPUMEM_BACKEND"},
        {"GPUMEM_BACKEND", "gpu", "gpumem_device_count", "GPUMEM_ERROR_INVALID_ENVIRONMENT", "GPUMEM_BACKEND"},
        {"GPUMEM_BACKEND", "gpu", "gpumem_device_name", "GPUMEM_ERROR_INVALID_ENVIRONMENT", "GPUMEM_BACKEND"},
        {"GPUMEM_BACKEND", "gpu", "gpumem_get_default_device", "GPUMEM_ERROR_INVALID_ENVIRONMENT", "GPUMEM_BACKEND"},
        {"GPUMEM_BACKEND", "gpu", "gpumem_is_cuda_array", "GPUMEM_ERROR_INVALID_ENVIRONMENT", "GPUMEM_BACKEND"},
        {"GPUMEM_BACKEND", "gpu", "gpumem_peer_can_access", "GPUMEM_ERROR_INVALID_ENVIRONMENT", "GPUMEM_BACKEND"},
        {"GPUMEM_BACKEND", "gpu", "gpumem_autoinit", "GPUMEM_ERROR_INVALID_ENVIRONMENT", "GPUMEM_BACKEND"},
        {"GPUMEM_BACKEND", "gpu", "gpumem_stream_create", "GPUMEM_ERROR_INVALID_ENVIRONMENT",
         "gpumem_stream_create: the autoinit context: "},
        {"GPUMEM_SIM_FAIL", "zero", "gpumem_backend", "GPUMEM_ERROR_INVALID_ENVIRONMENT", "GPUMEM_SIM_FAIL"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        child_result res;
        int rc = run_child(env_case, cases[i], &res);
        char fn[128];
        snprintf(fn, sizeof fn, "%s: ", cases[i][2]);
        int good = rc == 0 && strcmp(gpumem_status_string(res.status), cases[i][3]) == 0 &&
                   strstr(res.text, cases[i][4]) != NULL &&
                   (res.status == GPUMEM_OK || strncmp(res.text, fn, strlen(fn)) == 0);
        ok(good, "%s=%s: %s -> %s, named", cases[i][0], cases[i][1], cases[i][2], cases[i][3]);
        if (!good)
            diag("  got %s: %s", gpumem_status_string(res.status), res.text);
        if (strcmp(cases[i][2], "gpumem_get_default_device") == 0 && res.status == GPUMEM_OK)
            is_int((int)res.value[0], 1, "CUDA_DEVICE names device 1");
    }
    static const char *const dl_case[] = {"GPUMEM_BACKEND", "gpu", "gpumem_array_from_dlpack"};
    child_result dl;
    int dlrc = run_child(env_case, dl_case, &dl);
    ok(dlrc == 0 && dl.status == GPUMEM_OK && dl.value[0] == 1 && strncmp(dl.text, "gpumem_device_count: ", 21) == 0,
       "GPUMEM_BACKEND=gpu: a kDLCPU import succeeds and leaves the last error alone (%s: %s)",
       gpumem_status_string(dl.status), dl.text);
    /* gpumem_staging_set succeeds over a bad environment, and leaves the last failure alone */
    static const char *const set_case[] = {"GPUMEM_STAGING_THREADS", "0", "gpumem_staging_set"};
    child_result res;
    int rc = run_child(env_case, set_case, &res);
    ok(rc == 0 && res.status == GPUMEM_OK && res.value[0] == GPUMEM_OK && res.value[1] == 1,
       "gpumem_staging_set replaces a bad environment's settings (%s, get %s)", gpumem_status_string(res.status),
       gpumem_status_string((gpumem_status)res.value[0]));
    ok(strncmp(res.text, "gpumem_device_count: ", 21) == 0,
       "a successful gpumem_staging_set leaves the last error alone (%s)", res.text);
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "ipc-child") == 0)
        return ipc_child(argv[2]);
    const char *backend = getenv("GPUMEM_BACKEND");
    if (backend == NULL || strcmp(backend, "sim") == 0) {
        setenv("GPUMEM_BACKEND", "sim", 1);
        setenv("GPUMEM_SIM_DEVICES", "2", 1);
        setenv("GPUMEM_SIM_MEMORY", "256M", 1);
        /* queued work stays queued until something waits for it, however
         * loaded the machine: the NOT_READY and event-order checks of
         * test_behaviour need it (the 2 ms default ran out under load) */
        setenv("GPUMEM_SIM_STREAM_DELAY_US", "500000", 1);
    } else {
        plan_skip_all("the promises are checked on the simulator (two devices)");
    }
    unsetenv("CUDA_DEVICE");
    unsetenv("GPUMEM_MAX_PENDING_DEALLOCS_COUNT");
    unsetenv("GPUMEM_MAX_PENDING_DEALLOCS_RATIO");
    env_checks(); /* children first: fork before the library starts threads */
    test_debug_env();
    default_checks();
    oom_checks();
    if (gpumem_context_create(0, &ctx) != GPUMEM_OK || gpumem_context_create(1, &ctx2) != GPUMEM_OK)
        bail_out("two simulated devices: %s", gpumem_last_error());
    i32 = gpumem_dtype_builtin(GPUMEM_INT32);
    f32 = gpumem_dtype_builtin(GPUMEM_FLOAT32);
    test_status();
    test_context();
    test_stream();
    test_event();
    test_host();
    test_staging();
    test_cleanup();
    test_memo();
    test_memory();
    test_ipc();
    test_interop();
    test_debug();
    test_behaviour();
    test_oom_nested();
    test_handles();
    test_more();
    test_contexts();
    test_races();
    test_writebacks();
    test_ipc_processes();
    test_peaks();
    test_defer();
    test_fault_walk();
    test_fault_outputs();
    test_fault_ends();
    gpumem_context_release(ctx2);
    gpumem_context_release(ctx);
    done_testing();
    return exit_status();
}
