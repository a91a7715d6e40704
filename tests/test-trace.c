/*
 * test-trace - the memory trace (gpumem/trace.h): a known sequence read
 * back event by event (tools/trace_read.c, the reader of gpumem trace), call
 * sites named, markers and nested regions, out-of-memory events with their
 * message, GPUMEM_TRACE and its errors, bad input (a file that cannot be
 * written, at the start and midway), a child of fork, and 8 threads
 * recording at once while traces start and stop (make check-tsan runs it).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gpumem.h>

#include "child.h"
#include "tap.h"
#include "trace_read.h"

#define CHECK(call) \
    do { \
        gpumem_status st_ = (call); \
        if (st_ != GPUMEM_OK) \
            bail_out("%s: %s", #call, gpumem_last_error()); \
    } while (0)

static char dir[512];

static const char *path_in(const char *name, char *buf, size_t size)
{
    snprintf(buf, size, "%s/%s", dir, name);
    return buf;
}

static int load(const char *path, tr_trace *t)
{
    char msg[1024];
    tr_status st = tr_load(path, 0, t, msg, sizeof msg);
    if (st != TR_OK)
        diag("%s", msg);
    return st == TR_OK;
}

/* The events of t of the given types (a bit mask of 1 << GM_TE_*). */
static size_t select_events(const tr_trace *t, unsigned types, const tr_event **out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < t->nev; i++)
        if (types & (1u << t->ev[i].type)) {
            if (n < max)
                out[n] = &t->ev[i];
            n++;
        }
    return n;
}

/* ---- GPUMEM_TRACE, in children that have not touched the library -------------------------------- */

static void env_bad_path(const void *arg, child_result *r)
{
    (void)arg;
    setenv("GPUMEM_TRACE", "/nonexistent-gpumem-dir/t.gmt", 1);
    gpumem_context *ctx = NULL;
    r->status = gpumem_context_create(0, &ctx);
    snprintf(r->text, sizeof r->text, "%s", gpumem_last_error());
    r->value[0] = gpumem_context_create(0, &ctx); /* the error is kept */
    r->value[1] = ctx == NULL;
}

static void env_bad_pattern(const void *arg, child_result *r)
{
    (void)arg;
    setenv("GPUMEM_TRACE", "t-%q.gmt", 1);
    gpumem_context *ctx = NULL;
    r->status = gpumem_context_create(0, &ctx);
    snprintf(r->text, sizeof r->text, "%s", gpumem_last_error());
}

/* A file that cannot be written midway: the writer's first failure is what
 * gpumem_trace_stop says, and the file ends where writing failed. */
static void write_fails(const void *arg, child_result *r)
{
    const char *path = arg;
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = {16384, 16384};
    if (setrlimit(RLIMIT_FSIZE, &lim) != 0) {
        r->status = -1;
        return;
    }
    r->value[0] = gpumem_trace_start(path, 0);
    for (int i = 0; i < 3000; i++)
        gpumem_trace_mark("filler");
    r->status = gpumem_trace_stop();
    snprintf(r->text, sizeof r->text, "%s", gpumem_last_error());
    r->value[1] = gpumem_trace_stop(); /* stopped either way */
}

/* The trace of a program that returns from main, with GPUMEM_TRACE=...%p. */
static int env_child_main(void)
{
    gpumem_context *ctx = NULL;
    gpumem_array *a = NULL;
    int64_t n = 777;
    if (gpumem_context_create(0, &ctx) != GPUMEM_OK ||
        gpumem_device_array(ctx, 1, &n, NULL, gpumem_dtype_builtin(GPUMEM_UINT8), 'C', NULL, &a) != GPUMEM_OK ||
        gpumem_trace_mark("from the environment") != GPUMEM_OK)
        return 1;
    return 0; /* the array stays: the trace ends at exit, with it alive */
}

/* ---- the known sequence ---------------------------------------------------------------------------- */

static void known_sequence(void)
{
    char path[600];
    path_in("known.gmt", path, sizeof path);
    gpumem_context *ctx = NULL;
    CHECK(gpumem_context_create(0, &ctx));
    gpumem_stream *stream = NULL;
    CHECK(gpumem_stream_create(ctx, 0, &stream));
    gpumem_pool *pool = NULL;
    CHECK(gpumem_pool_create(ctx, 0, &pool));
    const gpumem_dtype *u8 = gpumem_dtype_builtin(GPUMEM_UINT8);
    int64_t n1000 = 1000, n2000 = 2000;
    gpumem_array *host = NULL;
    CHECK(gpumem_host_array(1, &n1000, u8, 'C', &host));

    CHECK(gpumem_trace_start(path, 0));
    gpumem_array *dev = NULL, *pin = NULL;
    CHECK(gpumem_device_array(ctx, 1, &n1000, NULL, u8, 'C', NULL, &dev));
    CHECK(gpumem_pinned_array(ctx, 1, &n2000, NULL, u8, 'C', &pin));
    gpumem_allocation *pa = NULL;
    CHECK(gpumem_pool_allocate(pool, 3000, stream, &pa));
    uint64_t dev_addr = 0, pa_addr = 0;
    void *pin_addr = NULL;
    CHECK(gpumem_array_device_pointer(dev, &dev_addr));
    CHECK(gpumem_array_host_pointer(pin, &pin_addr));
    CHECK(gpumem_allocation_pointer(pa, &pa_addr));
    CHECK(gpumem_allocation_free(pa, stream));
    CHECK(gpumem_array_copy(dev, host, NULL));
    gpumem_copy_path path_used = GPUMEM_COPY_PATH_NONE;
    CHECK(gpumem_debug_last_copy_path(&path_used));
    CHECK(gpumem_trace_mark("m1"));
    CHECK(gpumem_trace_push("outer"));
    CHECK(gpumem_trace_push("inner"));
    CHECK(gpumem_trace_pop());
    CHECK(gpumem_trace_pop());
    CHECK(gpumem_array_release(dev));
    CHECK(gpumem_array_release(pin));
    CHECK(gpumem_stream_synchronize(stream));
    CHECK(gpumem_pool_free_held(pool));
    CHECK(gpumem_trace_stop());

    tr_trace t;
    if (!load(path, &t)) {
        ok(0, "the known sequence's trace reads back");
        return;
    }
    ok(t.complete && t.recorded == t.nev && t.lost == 0, "the trace is whole: its end block counts its %zu events",
       t.nev);
    is_int(t.pid, getpid(), "the trace names this process");
    ok(t.nthr == 1 && t.thr[0].tid != 0, "one thread, with its system id");
    const tr_event *e[32];
    unsigned all = ~1u;
    size_t n = select_events(&t, all, e, 32);
    is_int(n, 13, "13 events: 3 allocations, 3 frees, a copy, a marker, 2 pushes, 2 pops and a trim");
    if (n == 13) {
        uint64_t ctx_id = e[0]->ctx, s_id = (uint64_t)(uintptr_t)stream;
        ok(e[0]->type == GM_TE_ALLOC && e[0]->kind == GPUMEM_MEMORY_DEVICE && e[0]->bytes == 1000 &&
               e[0]->value == dev_addr && e[0]->pool == 0 && e[0]->stream == 0 && e[0]->device == 0 && ctx_id != 0,
           "1: the device array: alloc, device, 1000 bytes, its address, the driver, no stream, device 0");
        ok(e[1]->type == GM_TE_ALLOC && e[1]->kind == GPUMEM_MEMORY_PINNED && e[1]->bytes == 2000 &&
               e[1]->value == (uint64_t)(uintptr_t)pin_addr && e[1]->pool == 0 && e[1]->ctx == ctx_id,
           "2: the pinned array: alloc, pinned, 2000 bytes, its host address, same context");
        ok(e[2]->type == GM_TE_ALLOC && e[2]->kind == GPUMEM_MEMORY_DEVICE && e[2]->bytes == 3000 &&
               e[2]->value == pa_addr && e[2]->pool == (uint64_t)(uintptr_t)pool && e[2]->stream == s_id,
           "3: the pool allocation: 3000 bytes, its address, the pool, the stream");
        ok(e[3]->type == GM_TE_FREE && e[3]->value == pa_addr && e[3]->pool == e[2]->pool && e[3]->bytes == 3000 &&
               e[3]->stream == s_id,
           "4: its free: same address, pool and size, on the stream");
        ok(e[4]->type == GM_TE_COPY && e[4]->bytes == 1000 && e[4]->aux == 1 && e[4]->kind == GPUMEM_MEMORY_HOST &&
               e[4]->kind2 == GPUMEM_MEMORY_DEVICE && !(e[4]->flags & GM_TF_ASYNC) && e[4]->device == 0,
           "5: the copy: 1000 bytes, host-to-device, host to device memory, synchronous, device 0");
        is_str(tr_str(&t, e[4]->ref), gpumem_copy_path_name(path_used), "5: the copy's path is the engine's");
        ok(e[5]->type == GM_TE_MARK && strcmp(tr_str(&t, e[5]->ref), "m1") == 0, "6: marker m1");
        ok(e[6]->type == GM_TE_PUSH && strcmp(tr_str(&t, e[6]->ref), "outer") == 0 && e[6]->aux == 1 &&
               e[7]->type == GM_TE_PUSH && strcmp(tr_str(&t, e[7]->ref), "inner") == 0 && e[7]->aux == 2 &&
               e[8]->type == GM_TE_POP && e[8]->aux == 2 && e[9]->type == GM_TE_POP && e[9]->aux == 1,
           "7-10: regions outer (depth 1) and inner (depth 2), popped in order");
        ok(e[10]->type == GM_TE_FREE && e[10]->value == dev_addr && e[10]->bytes == 1000 && e[10]->pool == 0,
           "11: the device array's free");
        ok(e[11]->type == GM_TE_FREE && e[11]->value == (uint64_t)(uintptr_t)pin_addr && e[11]->bytes == 2000,
           "12: the pinned array's free");
        size_t block = 0;
        CHECK(gpumem_pool_block_size(3000, &block));
        ok(e[12]->type == GM_TE_TRIM && e[12]->pool == e[2]->pool && e[12]->value == block && e[12]->aux == 1,
           "13: the pool's trim gave back one block of %zu bytes", block);
        int ordered = 1;
        for (size_t i = 1; i < n; i++)
            ordered &= e[i]->t >= e[i - 1]->t;
        ok(ordered && e[12]->t <= t.end_ns, "the events' times rise, within the trace");
    } else {
        skip(13, "not the 13 events expected");
    }
    tr_free(&t);
    CHECK(gpumem_array_release(host));
    CHECK(gpumem_pool_destroy(pool));
    CHECK(gpumem_stream_destroy(stream));
    CHECK(gpumem_context_release(ctx));
}

/* ---- call sites, names, out of memory --------------------------------------------------------------- */

void trace_test_allocating_function(gpumem_context *ctx, gpumem_array **out);
__attribute__((noinline)) void trace_test_allocating_function(gpumem_context *ctx, gpumem_array **out)
{
    int64_t n = 4321;
    CHECK(gpumem_device_array(ctx, 1, &n, NULL, gpumem_dtype_builtin(GPUMEM_UINT8), 'C', NULL, out));
    __asm__ __volatile__("" ::: "memory");
}

static void call_sites_and_names(void)
{
    char path[600];
    path_in("sites.gmt", path, sizeof path);
    gpumem_context *ctx = NULL;
    CHECK(gpumem_context_create(0, &ctx));
    CHECK(gpumem_trace_start(path, GPUMEM_TRACE_CALL_SITES));
    gpumem_array *a = NULL, *b = NULL;
    trace_test_allocating_function(ctx, &a);
    trace_test_allocating_function(ctx, &b);
    char longname[2000];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    CHECK(gpumem_trace_mark(longname));
    CHECK(gpumem_trace_mark("bad \xff\xfe utf-8 \xe2\x82\xac"));
    uint64_t total = 0;
    CHECK(gpumem_device_total_memory(0, &total));
    gpumem_array *huge = NULL;
    int64_t nh = (int64_t)total + (1 << 20);
    gpumem_status st = gpumem_device_array(ctx, 1, &nh, NULL, gpumem_dtype_builtin(GPUMEM_UINT8), 'C', NULL, &huge);
    char oom_message[1024];
    snprintf(oom_message, sizeof oom_message, "%s", gpumem_last_error());
    is_int(st, GPUMEM_ERROR_OUT_OF_MEMORY, "an array larger than the device: out of memory");
    CHECK(gpumem_array_release(a));
    CHECK(gpumem_array_release(b));
    CHECK(gpumem_trace_stop());

    tr_trace t;
    if (!load(path, &t)) {
        ok(0, "the call sites' trace reads back");
        return;
    }
    ok(t.flags & GM_TRACE_FLAG_CALL_SITES, "the header says call sites are recorded");
    const tr_event *al[4];
    size_t na = select_events(&t, 1u << GM_TE_ALLOC, al, 4);
    is_int(na, 2, "two allocations (the failed one is an out-of-memory event)");
    if (na == 2 && al[0]->ref != 0 && al[1]->ref != 0) {
        const tr_stack *s0 = &t.stk[al[0]->ref], *s1 = &t.stk[al[1]->ref];
        char buf[512];
        const char *first = tr_frame_name(&t, &s0->f[0], buf, sizeof buf);
        like(first, "trace_test_allocating_function", "the first frame outside the library is the caller's");
        ok(s0->n >= 2 && s1->n >= 2 && s0->f[0].addr == s1->f[0].addr && s0->f[1].addr != s1->f[1].addr,
           "both allocations share the function's frame and differ in the frame of their call (%u frames)",
           (unsigned)s0->n);
        like(tr_str(&t, s0->f[0].module), "test-trace", "the frame's module is the test program");
    } else {
        skip(3, "no call sites");
    }
    const tr_event *mk[4];
    size_t nm = select_events(&t, 1u << GM_TE_MARK, mk, 4);
    is_int(nm, 2, "two markers");
    if (nm == 2) {
        const char *s = tr_str(&t, mk[0]->ref);
        ok(strlen(s) == GM_TRACE_MAX_STRING && strspn(s, "x") == GM_TRACE_MAX_STRING,
           "a 1999-byte name is recorded cut to %u bytes", GM_TRACE_MAX_STRING);
        is_str(tr_str(&t, mk[1]->ref), "bad ?? utf-8 \xe2\x82\xac", "bytes that are not UTF-8 read back as '?'");
    } else {
        skip(2, "not two markers");
    }
    const tr_event *oo[4], *ld[4];
    size_t no = select_events(&t, 1u << GM_TE_OOM, oo, 4), nl = select_events(&t, 1u << GM_TE_LADDER, ld, 4);
    ok(no == 1 && oo[0]->bytes == (uint64_t)nh && oo[0]->kind == GPUMEM_MEMORY_DEVICE &&
           oo[0]->aux == GPUMEM_ERROR_OUT_OF_MEMORY && oo[0]->device == 0,
       "one out-of-memory event: the bytes asked for, device memory, its status");
    is_str(no == 1 ? tr_str(&t, oo[0]->ref) : "", oom_message, "it carries the message the caller got");
    ok(nl == 1 && !(ld[0]->flags & GM_TF_RETRY_OK) && ld[0]->bytes == (uint64_t)nh && no == 1 && ld[0]->t <= oo[0]->t,
       "the ladder ran once before it, and its retry failed");
    tr_free(&t);
    CHECK(gpumem_context_release(ctx));
}

/* ---- bad input -------------------------------------------------------------------------------------- */

static void bad_input(void)
{
    char path[600], path2[600];
    is_int(gpumem_trace_start(NULL, 0), GPUMEM_ERROR_NULL_ARGUMENT, "start: path NULL");
    like(gpumem_last_error(), "'path'", "its message names the argument");
    is_int(gpumem_trace_start("", 0), GPUMEM_ERROR_INVALID_VALUE, "start: an empty path");
    is_int(gpumem_trace_start(path_in("flags.gmt", path, sizeof path), 0x10), GPUMEM_ERROR_INVALID_VALUE,
           "start: unknown flags");
    like(gpumem_last_error(), "'flags' 0x10", "its message names the flags");
    ok(access(path, F_OK) != 0, "and no file is made");
    is_int(gpumem_trace_start("/nonexistent-gpumem-dir/t.gmt", 0), GPUMEM_ERROR_INVALID_VALUE,
           "start: a file in a directory that does not exist");
    like(gpumem_last_error(), "cannot open '/nonexistent-gpumem-dir/t.gmt' for writing: No such file or directory",
         "its message names the file and the reason");
    if (access("/dev/full", W_OK) == 0) {
        is_int(gpumem_trace_start("/dev/full", 0), GPUMEM_ERROR_INVALID_VALUE, "start: /dev/full");
        like(gpumem_last_error(), "cannot write '/dev/full': No space left on device", "its message says why");
    } else {
        skip(2, "no /dev/full");
    }
    is_int(gpumem_trace_stop(), GPUMEM_ERROR_INVALID_STATE, "stop: no trace records after failed starts");
    like(gpumem_last_error(), "no trace is recording", "its message says so");
    is_int(gpumem_trace_pop(), GPUMEM_ERROR_INVALID_STATE, "pop: no region is open");
    like(gpumem_last_error(), "no region is open on this thread", "its message says so");
    is_int(gpumem_trace_mark(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "mark: name NULL");
    is_int(gpumem_trace_push(NULL), GPUMEM_ERROR_NULL_ARGUMENT, "push: name NULL");
    is_int(gpumem_trace_pop(), GPUMEM_ERROR_INVALID_STATE, "a refused push opened no region");
    is_int(gpumem_trace_mark("no trace"), GPUMEM_OK, "mark without a trace: nothing to do");

    setenv("GPUMEM_TRACE_STACKS", "2", 1);
    is_int(gpumem_trace_start(path_in("stacks.gmt", path, sizeof path), 0), GPUMEM_ERROR_INVALID_ENVIRONMENT,
           "start: GPUMEM_TRACE_STACKS=2");
    like(gpumem_last_error(), "GPUMEM_TRACE_STACKS", "its message names the variable");
    ok(access(path, F_OK) != 0, "and no file is made");
    unsetenv("GPUMEM_TRACE_STACKS");

    CHECK(gpumem_trace_start(path_in("first.gmt", path, sizeof path), 0));
    is_int(gpumem_trace_start(path_in("second.gmt", path2, sizeof path2), 0), GPUMEM_ERROR_INVALID_STATE,
           "start while a trace records");
    like(gpumem_last_error(), "already recording to '", "its message says which file records");
    ok(access(path2, F_OK) != 0, "the second file is not made");
    CHECK(gpumem_trace_mark("kept"));
    CHECK(gpumem_trace_stop());
    tr_trace t;
    if (load(path, &t)) {
        ok(t.nev == 1 && t.ev[0].type == GM_TE_MARK && strcmp(tr_str(&t, t.ev[0].ref), "kept") == 0,
           "the first trace is unchanged by the refused start");
        tr_free(&t);
    } else {
        ok(0, "the first trace reads back");
    }
}

/* ---- fork ------------------------------------------------------------------------------------------ */

static void forked(void)
{
    char path[600], cpath[600];
    CHECK(gpumem_trace_start(path_in("parent.gmt", path, sizeof path), 0));
    CHECK(gpumem_trace_mark("before fork"));
    path_in("child.gmt", cpath, sizeof cpath);
    fflush(stdout);
    /* ThreadSanitizer refuses threads made after a fork of a threaded
     * process: there the child does not start a trace of its own. */
    const char *san = getenv("GPUMEM_TEST_SANITIZER");
    int own = san == NULL || strcmp(san, "tsan") != 0;
    pid_t pid = fork();
    if (pid == 0) {
        int bad = gpumem_trace_mark("in the child") != GPUMEM_OK;
        bad |= (gpumem_trace_stop() != GPUMEM_ERROR_INVALID_STATE) << 1; /* the child does not record */
        if (own) {
            bad |= (gpumem_trace_start(cpath, 0) != GPUMEM_OK) << 2; /* it may start its own */
            bad |= (gpumem_trace_mark("child's own") != GPUMEM_OK) << 3;
            bad |= (gpumem_trace_stop() != GPUMEM_OK) << 4;
        }
        _exit(bad);
    }
    int ws = 0;
    waitpid(pid, &ws, 0);
    is_int(WIFEXITED(ws) ? WEXITSTATUS(ws) : 100, 0, "the child of fork does not record its parent's trace, "
           "and starts its own");
    CHECK(gpumem_trace_mark("after fork"));
    CHECK(gpumem_trace_stop());
    tr_trace t;
    if (load(path, &t)) {
        ok(t.nev == 2 && strcmp(tr_str(&t, t.ev[0].ref), "before fork") == 0 &&
               strcmp(tr_str(&t, t.ev[1].ref), "after fork") == 0,
           "the parent's trace has its own two markers, none of the child's");
        tr_free(&t);
    } else {
        ok(0, "the parent's trace reads back");
    }
    if (!own) {
        skip(1, "ThreadSanitizer: the child starts no trace of its own");
    } else if (load(cpath, &t)) {
        ok(t.nev == 1 && strcmp(tr_str(&t, t.ev[0].ref), "child's own") == 0 && t.pid == (uint32_t)pid,
           "the child's trace has its marker and its pid");
        tr_free(&t);
    } else {
        ok(0, "the child's trace reads back");
    }
}

/* ---- files that are not regular ---------------------------------------------------------------- */

/* The trace is written through into what its name names, never replacing
 * it: a FIFO (with a reader; one without is refused, not waited for), a
 * symbolic link's target, a character device. */
static void special_files(void)
{
    char fifo[600], link[600], target[600], copy[600];
    path_in("trace.fifo", fifo, sizeof fifo);
    if (mkfifo(fifo, 0600) != 0)
        bail_out("mkfifo: %s", strerror(errno));
    /* without a reader: refused at once (a child, so that a wait fails the
     * test after 10 s instead of hanging it) */
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(10);
        gpumem_status st = gpumem_trace_start(fifo, 0);
        _exit(st == GPUMEM_ERROR_INVALID_VALUE && strstr(gpumem_last_error(), "a FIFO without a reader") ? 0 : 1);
    }
    int ws = 0;
    while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
        ;
    struct stat sb;
    ok(WIFEXITED(ws) && WEXITSTATUS(ws) == 0 && stat(fifo, &sb) == 0 && S_ISFIFO(sb.st_mode),
       "start: a FIFO without a reader is refused at once, saying so, and stays a FIFO (%s)",
       WIFSIGNALED(ws) ? "the child hung" : "");
    /* with a reader: the reader gets the trace */
    int rfd = open(fifo, O_RDONLY | O_NONBLOCK);
    if (rfd < 0)
        bail_out("open %s: %s", fifo, strerror(errno));
    CHECK(gpumem_trace_start(fifo, 0));
    CHECK(gpumem_trace_mark("through the FIFO"));
    CHECK(gpumem_trace_stop()); /* a few hundred bytes: the pipe holds them */
    char buf[65536];
    ssize_t n = read(rfd, buf, sizeof buf);
    close(rfd);
    FILE *f = fopen(path_in("fifo-copy.gmt", copy, sizeof copy), "wb");
    if (f == NULL || n <= 0 || fwrite(buf, 1, (size_t)n, f) != (size_t)n || fclose(f) != 0)
        bail_out("copying the FIFO's trace");
    tr_trace t;
    ok(stat(fifo, &sb) == 0 && S_ISFIFO(sb.st_mode), "start: a FIFO with a reader stays a FIFO");
    if (load(copy, &t)) {
        ok(t.complete && t.nev == 1 && strcmp(tr_str(&t, t.ev[0].ref), "through the FIFO") == 0,
           "its reader gets the whole trace (%zd bytes)", n);
        tr_free(&t);
    } else {
        ok(0, "its reader gets the whole trace");
    }
    /* a symbolic link: the link stays, its target gets the trace */
    path_in("link.gmt", link, sizeof link);
    path_in("link-target.gmt", target, sizeof target);
    if (symlink("link-target.gmt", link) != 0)
        bail_out("symlink: %s", strerror(errno));
    CHECK(gpumem_trace_start(link, 0));
    CHECK(gpumem_trace_mark("through the link"));
    CHECK(gpumem_trace_stop());
    ok(lstat(link, &sb) == 0 && S_ISLNK(sb.st_mode) && load(target, &t) && t.nev == 1 &&
           strcmp(tr_str(&t, t.ev[0].ref), "through the link") == 0,
       "start: a symbolic link stays a link, what it names gets the trace");
    if (t.ev != NULL)
        tr_free(&t);
    /* a character device */
    const char *dev = "/dev/null";
    char made[600];
    if (mknod(path_in("null", made, sizeof made), S_IFCHR | 0666, makedev(1, 3)) == 0)
        dev = made;
    CHECK(gpumem_trace_start(dev, 0));
    CHECK(gpumem_trace_mark("into the device"));
    CHECK(gpumem_trace_stop());
    ok(stat(dev, &sb) == 0 && S_ISCHR(sb.st_mode), "start: %s stays a character device", dev);
}

/* Many children forked while the parent records, each starting and stopping
 * traces of its own: the writer's condition variables were copied in the
 * state the parent's writer thread left them (waiting on them, a waiter
 * that does not exist in the child), and a child's stop could wait for it
 * forever.  alarm() bounds each child, and the first hang ends the loop: a
 * hang fails the test, it does not hang the suite. */
#define FORKS 500
#define CHILD_CYCLES 3

static void fork_storm(void)
{
    const char *san = getenv("GPUMEM_TEST_SANITIZER");
    if (san != NULL && strcmp(san, "tsan") == 0) {
        skip(2, "ThreadSanitizer: the children start no trace of their own");
        return;
    }
    char path[600], cpath[600];
    CHECK(gpumem_trace_start(path_in("storm.gmt", path, sizeof path), 0));
    path_in("storm-child.gmt", cpath, sizeof cpath);
    int good = 0, hung = 0, failed = 0;
    for (int i = 0; i < FORKS && hung == 0; i++) {
        for (int k = 0; k < 20; k++)
            CHECK(gpumem_trace_mark("parent"));
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0)
            bail_out("fork: %s", strerror(errno));
        if (pid == 0) {
            alarm(10);
            int bad = 0;
            for (int c = 0; c < CHILD_CYCLES; c++) {
                bad |= gpumem_trace_start(cpath, 0) != GPUMEM_OK;
                bad |= gpumem_trace_mark("child") != GPUMEM_OK;
                bad |= gpumem_trace_stop() != GPUMEM_OK;
            }
            _exit(bad);
        }
        int ws = 0;
        while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
            ;
        if (WIFEXITED(ws) && WEXITSTATUS(ws) == 0)
            good++;
        else if (WIFSIGNALED(ws) && WTERMSIG(ws) == SIGALRM)
            hung++;
        else
            failed++;
    }
    CHECK(gpumem_trace_stop());
    ok(good == FORKS, "%d children forked while the parent records each start and stop %d traces of their own "
       "(%d good, %d hung, %d failed)", FORKS, CHILD_CYCLES, good, hung, failed);
    tr_trace t;
    if (load(path, &t)) {
        size_t mine = 0;
        for (size_t i = 0; i < t.nev; i++)
            mine += t.ev[i].type == GM_TE_MARK && strcmp(tr_str(&t, t.ev[i].ref), "parent") == 0;
        ok(t.complete && t.lost == 0 && mine == (size_t)(good + hung + failed) * 20,
           "the parent's trace is whole, with its markers (%zu)", mine);
        tr_free(&t);
    } else {
        ok(0, "the parent's trace reads back");
    }
    tr_trace c;
    if (good > 0 && load(cpath, &c)) {
        ok(c.complete && c.nev == 1 && strcmp(tr_str(&c, c.ev[0].ref), "child") == 0,
           "a child's trace has its own marker only");
        tr_free(&c);
    } else {
        ok(0, "a child's trace reads back");
    }
}

/* ---- 8 threads --------------------------------------------------------------------------------------- */

#define THREADS 8
#define ITERS 300

typedef struct worker {
    gpumem_context *ctx;
    int iters;
    atomic_int *stop;
    int bad;
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    const gpumem_dtype *u8 = gpumem_dtype_builtin(GPUMEM_UINT8);
    for (int i = 0; w->stop ? !atomic_load(w->stop) : i < w->iters; i++) {
        int64_t n = (int64_t)(i % 7 + 1) * 256;
        gpumem_array *a = NULL;
        w->bad |= gpumem_trace_push("iteration") != GPUMEM_OK;
        w->bad |= gpumem_device_array(w->ctx, 1, &n, NULL, u8, 'C', NULL, &a) != GPUMEM_OK;
        w->bad |= a == NULL || gpumem_array_release(a) != GPUMEM_OK;
        if (i % 100 == 0)
            w->bad |= gpumem_trace_mark("hundred") != GPUMEM_OK;
        w->bad |= gpumem_trace_pop() != GPUMEM_OK;
    }
    return NULL;
}

static void threads(void)
{
    char path[600];
    gpumem_context *ctx = NULL;
    CHECK(gpumem_context_create(0, &ctx));
    gpumem_pool *pool = NULL;
    CHECK(gpumem_pool_create(ctx, 0, &pool));
    CHECK(gpumem_context_set_pool(ctx, pool));

    /* All of the threads' work inside one trace: every event is there. */
    CHECK(gpumem_trace_start(path_in("threads.gmt", path, sizeof path), 0));
    pthread_t th[THREADS];
    worker w[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){ctx, ITERS, NULL, 0};
        if (pthread_create(&th[i], NULL, work, &w[i]) != 0)
            bail_out("pthread_create");
    }
    int bad = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        bad |= w[i].bad;
    }
    CHECK(gpumem_trace_stop());
    ok(!bad, "%d threads allocated, released, marked and nested regions", THREADS);
    tr_trace t;
    if (load(path, &t)) {
        ok(t.complete && t.lost == 0 && t.nthr == THREADS, "the trace is whole, with %zu threads", t.nthr);
        size_t counts[THREADS][10];
        memset(counts, 0, sizeof counts);
        int sizes_ok = 1, threads_ok = 1;
        for (size_t i = 0; i < t.nev; i++) {
            size_t k = 0;
            while (k < t.nthr && t.thr[k].index != t.ev[i].thread)
                k++;
            if (k >= THREADS) {
                threads_ok = 0;
                continue;
            }
            counts[k][t.ev[i].type]++;
            if (t.ev[i].type == GM_TE_ALLOC)
                sizes_ok &= t.ev[i].bytes % 256 == 0 && t.ev[i].bytes >= 256 && t.ev[i].bytes <= 7 * 256;
        }
        int each = threads_ok;
        for (int k = 0; k < THREADS; k++)
            each &= counts[k][GM_TE_ALLOC] == ITERS && counts[k][GM_TE_FREE] == ITERS &&
                    counts[k][GM_TE_PUSH] == ITERS && counts[k][GM_TE_POP] == ITERS &&
                    counts[k][GM_TE_MARK] == (ITERS + 99) / 100;
        ok(each, "each thread has its %d allocations, frees, pushes and pops and its %d markers", ITERS,
           (ITERS + 99) / 100);
        ok(sizes_ok, "every allocation has one of the sizes asked for");
        /* every free follows its allocation on the same thread */
        int paired = 1;
        for (size_t i = 0; i < t.nev && paired; i++)
            if (t.ev[i].type == GM_TE_FREE) {
                size_t j = i;
                while (j-- > 0 && !(t.ev[j].type == GM_TE_ALLOC && t.ev[j].value == t.ev[i].value &&
                                    t.ev[j].thread == t.ev[i].thread))
                    ;
                paired = j < i;
            }
        ok(paired, "every free comes after its allocation, by the same thread");
        tr_free(&t);
    } else {
        skip(4, "the threads' trace does not read");
    }

    /* Traces started and stopped while the threads work: each file whole. */
    atomic_int stop = 0;
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){ctx, 0, &stop, 0};
        if (pthread_create(&th[i], NULL, work, &w[i]) != 0)
            bail_out("pthread_create");
    }
    int whole = 1;
    for (int round = 0; round < 12; round++) {
        char name[64];
        snprintf(name, sizeof name, "round-%d.gmt", round);
        CHECK(gpumem_trace_start(path_in(name, path, sizeof path), round % 2 ? GPUMEM_TRACE_CALL_SITES : 0));
        usleep(2000);
        CHECK(gpumem_trace_stop());
        if (load(path, &t)) {
            whole &= t.complete && t.recorded == t.nev;
            tr_free(&t);
        } else {
            whole = 0;
        }
    }
    atomic_store(&stop, 1);
    bad = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        bad |= w[i].bad;
    }
    ok(whole && !bad, "12 traces started and stopped while %d threads record: each file is whole", THREADS);
    CHECK(gpumem_context_set_pool(ctx, NULL));
    CHECK(gpumem_pool_destroy(pool));
    CHECK(gpumem_context_release(ctx));
}

/* This program's path, set by main (child.h's child_self_path). */
static const char *self_path = "/proc/self/exe";

int main(int argc, char **argv)
{
    self_path = child_self_path(argc > 0 ? argv[0] : NULL);
    if (argc == 2 && strcmp(argv[1], "--env-child") == 0)
        return env_child_main();
    const char *tmp = getenv("TMPDIR") != NULL && getenv("TMPDIR")[0] ? getenv("TMPDIR") : "/tmp";
    snprintf(dir, sizeof dir, "%s/test-trace.XXXXXX", tmp);
    if (mkdtemp(dir) == NULL)
        bail_out("mkdtemp: %s", strerror(errno));
    unsetenv("GPUMEM_TRACE");
    unsetenv("GPUMEM_TRACE_STACKS");

    /* GPUMEM_TRACE, in children, before this process touches the library. */
    child_result r;
    if (run_child(env_bad_path, NULL, &r) != 0)
        bail_out("child");
    is_int(r.status, GPUMEM_ERROR_INVALID_ENVIRONMENT, "GPUMEM_TRACE naming a file that cannot be made: the first "
           "context creation fails");
    like(r.text, "GPUMEM_TRACE='/nonexistent-gpumem-dir/t.gmt': cannot open", "its message names the variable");
    like(r.text, "No such file or directory", "and the reason");
    ok(r.value[0] == GPUMEM_ERROR_INVALID_ENVIRONMENT && r.value[1], "so does the next one");
    if (run_child(env_bad_pattern, NULL, &r) != 0)
        bail_out("child");
    is_int(r.status, GPUMEM_ERROR_INVALID_ENVIRONMENT, "GPUMEM_TRACE with '%q'");
    like(r.text, "must be followed by 'p'", "its message says what may follow '%'");
    char path[600];
    if (run_child(write_fails, path_in("limited.gmt", path, sizeof path), &r) != 0)
        bail_out("child");
    if (r.status == -1) {
        skip(4, "setrlimit(RLIMIT_FSIZE) refused");
    } else {
        ok(r.value[0] == GPUMEM_OK && r.status == GPUMEM_ERROR_INVALID_VALUE,
           "a trace whose file stops growing (RLIMIT_FSIZE): stop fails");
        like(r.text, "writing the trace '", "its message names the file");
        like(r.text, "File too large", "and the system's reason");
        is_int(r.value[1], GPUMEM_ERROR_INVALID_STATE, "the trace is stopped all the same");
        tr_trace t;
        char msg[1024];
        tr_status st = tr_load(path, 0, &t, msg, sizeof msg);
        ok(st == TR_TRUNCATED, "the reader finds the file truncated");
        like(msg, "truncated at byte ", "and says at which byte");
        if (st == TR_OK)
            tr_free(&t);
    }
    /* GPUMEM_TRACE=...%p in a program that returns from main. */
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        char pattern[700];
        snprintf(pattern, sizeof pattern, "%s/env-%%p.gmt", dir);
        setenv("GPUMEM_TRACE", pattern, 1);
        execl(self_path, "test-trace", "--env-child", (char *)NULL);
        _exit(127);
    }
    int ws = 0;
    waitpid(pid, &ws, 0);
    is_int(WIFEXITED(ws) ? WEXITSTATUS(ws) : 100, 0, "a program traced by GPUMEM_TRACE=DIR/env-%p.gmt runs");
    char envpath[600];
    snprintf(envpath, sizeof envpath, "%s/env-%ld.gmt", dir, (long)pid);
    tr_trace t;
    if (load(envpath, &t)) {
        const tr_event *al[4], *mk[4];
        size_t na = select_events(&t, 1u << GM_TE_ALLOC, al, 4), nm = select_events(&t, 1u << GM_TE_MARK, mk, 4);
        ok(t.complete && na == 1 && al[0]->bytes == 777 && nm == 1,
           "its trace, named with its pid, ends at exit with its allocation and marker");
        tr_free(&t);
    } else {
        ok(0, "the GPUMEM_TRACE trace reads back");
    }

    bad_input();
    known_sequence();
    call_sites_and_names();
    forked();
    special_files();
    fork_storm();
    threads();
    done_testing();
    if (exit_status() == 0) {
        char cmd[700];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0)
            diag("could not remove %s", dir);
    } else {
        diag("the traces are in %s", dir);
    }
    return exit_status();
}
