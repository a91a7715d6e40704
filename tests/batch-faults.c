/* Batches under fault injection (part of tests/test-batch): every driver
 * call of a batch workload failed in turn, in children, and the lines a
 * batch prints under GPUMEM_DEBUG=copies. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gpumem.h>

#include "arrays.h"
#include "child.h"
#include "rng.h"
#include "tap.h"
#include "batch-test.h"

/* ---- every driver call failed in turn -------------------------------------------------------- */

#define TRY(call)                 \
    do {                          \
        if (st == GPUMEM_OK)      \
            st = (call);          \
    } while (0)

/* The faces of a 16 x 12 field out into pinned buffers and back in (a
 * batch each way), then two columns packed and unpacked: the status, or -2
 * when it succeeded with a wrong value. */
static int workload(gpumem_context *c)
{
    enum { H = 16, W = 12 };
    gpumem_status st = GPUMEM_OK;
    gpumem_stream *s = NULL;
    gpumem_array *f = NULL, *h = NULL, *v[4] = {NULL, NULL, NULL, NULL}, *p[4] = {NULL, NULL, NULL, NULL};
    gpumem_array *buf = NULL;
    int32_t host[H][W], back[H][W];
    for (int i = 0; i < H * W; i++)
        host[i / W][i % W] = i;
    const gpumem_slice sl[4][2] = {{GPUMEM_INDEX(0), GPUMEM_SLICE_ALL}, {GPUMEM_INDEX(H - 1), GPUMEM_SLICE_ALL},
                                   {{1, H - 1, 1}, GPUMEM_INDEX(0)}, {{1, H - 1, 1}, GPUMEM_INDEX(W - 1)}};
    const int64_t len[4] = {W, W, H - 2, H - 2};
    TRY(gpumem_stream_create(c, 0, &s));
    TRY(gpumem_host_array_wrap(host, 2, (int64_t[]){H, W}, NULL, i32, &h));
    TRY(gpumem_to_device(c, h, NULL, 0, &f));
    for (int k = 0; k < 4; k++) {
        TRY(gpumem_array_slice(f, sl[k], 2, &v[k]));
        TRY(gpumem_pinned_array(c, 1, &len[k], NULL, i32, 'C', &p[k]));
    }
    TRY(gpumem_pinned_array(c, 1, (int64_t[]){2 * (H - 2)}, NULL, i32, 'C', &buf));
    TRY(gpumem_array_copy_batch(4, p, v, s));                          /* faces out */
    TRY(gpumem_array_copy_batch(2, (gpumem_array *[]){v[3], v[2]}, (gpumem_array *[]){p[2], p[3]}, s)); /* swapped */
    TRY(gpumem_array_pack(2, &v[2], buf, s));
    TRY(gpumem_array_unpack(2, (gpumem_array *[]){v[3], v[2]}, buf, s)); /* swapped back */
    TRY(gpumem_stream_synchronize(s));
    TRY(gpumem_copy_to_host(f, h, NULL));
    int good = 0;
    if (st == GPUMEM_OK) {
        memcpy(back, host, sizeof back);
        good = 1;
        for (int i = 0; i < H * W; i++)
            good &= back[i / W][i % W] == i;
    }
    gpumem_array *all[11] = {buf, p[0], p[1], p[2], p[3], v[0], v[1], v[2], v[3], f, h};
    for (int k = 0; k < 11; k++) { /* all of them, the first failure kept */
        gpumem_status rst = gpumem_array_release(all[k]);
        if (st == GPUMEM_OK)
            st = rst;
    }
    if (s != NULL) {
        gpumem_status rst = gpumem_stream_destroy(s);
        if (st == GPUMEM_OK)
            st = rst;
    }
    return st == GPUMEM_OK && !good ? -2 : (int)st;
}

static void run(const void *arg, child_result *out)
{
    long k = *(const long *)arg;
    i32 = gpumem_dtype_builtin(GPUMEM_INT32);
    gpumem_context *c = NULL;
    if (gpumem_context_create(0, &c) != GPUMEM_OK) {
        out->status = -1;
        return;
    }
    uint64_t f0 = 0, f1 = 0, total = 0;
    gpumem_context_set_dealloc_limits(c, 0, 0.0); /* every free at its release */
    gpumem_memory_info(c, &f0, &total);
    uint64_t calls0 = fault_arm(k);
    out->status = workload(c);
    snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
    out->value[0] = fault_disarm(calls0);
    gpumem_clear_context_caches(); /* the pack kernels' scratch */
    gpumem_context_flush_deallocations(c);
    gpumem_memory_info(c, &f1, &total);
    out->value[1] = (long)(f0 - f1); /* device bytes not given back */
    gpumem_context_release(c);
}

void fault_injection(void)
{
    child_result r;
    long k = 0;
    run_child(run, &k, &r);
    is_int(r.status, GPUMEM_OK, "the batch workload succeeds without injection (and its values are right)");
    long n = r.value[0];
    ok(n >= 20, "it makes %ld driver calls", n);
    is_int(r.value[1], 0, "and gives all device memory back");
    /* fault_walk, but a batch that gives its scratch back replaces a failed record of the scratch's event by
     * a wait for its stream (as the copy engine does): those failures complete the workload, exactly */
    int clean = 1, named = 1, absorbed = 0;
    for (long c = 1; c <= n; c++) {
        run_child(run, &c, &r);
        int exited = r.exited && r.exit_code == 0 && r.status != -1 && r.status != -2;
        if (exited && r.status == 0 && r.value[1] == 0) {
            absorbed++;
            continue;
        }
        if (!exited || r.status == 0 || (r.value[1] != 0 && strstr(r.text, "cuMemFree") == NULL)) {
            clean = 0;
            diag("call %ld: exit %d, status %d, %ld bytes kept: %s", c, r.exit_code, r.status, r.value[1], r.text);
        }
        if (strstr(r.text, "CUDA_ERROR_UNKNOWN") == NULL) {
            named = 0;
            diag("call %ld: message without the driver error: %s", c, r.text);
        }
    }
    ok(clean && absorbed <= 4, "failing any one of the %ld calls fails the workload cleanly, without leaks, or "
                               "(%d calls, at most the 4 batches' scratch records) completes it with the right values",
       n, absorbed);
    ok(named, "every failure's message names the injected driver error");
}

/* GPUMEM_DEBUG=copies (doc/environment.md): one line for each batched
 * call that got past its checks, succeeded or not, and none for a refused
 * one.  In a child (the variable is read once): value[0] the lines, value[1]
 * the lines as expected (text: the first that was not), value[2] lines that
 * are no copy's. */
static void copies_lines(const void *arg, child_result *out)
{
    (void)arg;
    char path[] = "/tmp/gpumem-batch-copies-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) {
        out->status = -1;
        return;
    }
    setenv("GPUMEM_DEBUG", "copies", 1);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    enum { H = 16, W = 12 };
    i32 = gpumem_dtype_builtin(GPUMEM_INT32);
    gpumem_context *c = NULL;
    gpumem_stream *s = NULL;
    gpumem_array *f = NULL, *v[4] = {NULL, NULL, NULL, NULL}, *p[4] = {NULL, NULL, NULL, NULL}, *buf = NULL;
    const gpumem_slice sl[4][2] = {{GPUMEM_INDEX(0), GPUMEM_SLICE_ALL}, {GPUMEM_INDEX(H - 1), GPUMEM_SLICE_ALL},
                                   {{1, H - 1, 1}, GPUMEM_INDEX(0)}, {{1, H - 1, 1}, GPUMEM_INDEX(W - 1)}};
    const int64_t len[4] = {W, W, H - 2, H - 2};
    gpumem_status st = gpumem_context_create(0, &c);
    if (st == GPUMEM_OK)
        st = gpumem_stream_create(c, 0, &s);
    if (st == GPUMEM_OK)
        st = gpumem_device_array(c, 2, (int64_t[]){H, W}, NULL, i32, 'C', NULL, &f);
    for (int k = 0; k < 4 && st == GPUMEM_OK; k++)
        if ((st = gpumem_array_slice(f, sl[k], 2, &v[k])) == GPUMEM_OK)
            st = gpumem_pinned_array(c, 1, &len[k], NULL, i32, 'C', &p[k]);
    if (st == GPUMEM_OK)
        st = gpumem_pinned_array(c, 1, (int64_t[]){2 * (H - 2)}, NULL, i32, 'C', &buf);
    if (st != GPUMEM_OK) {
        dup2(saved, 2);
        out->status = st;
        snprintf(out->text, sizeof out->text, "setup: %s", gpumem_last_error());
        return;
    }
    /* what each line must say: the call, the direction, sync, status, pairs, bytes */
    struct {
        const char *what, *dir, *sync, *status;
        int pairs;
        unsigned long long bytes;
    } want[5];
    int nwant = 0;
    const unsigned long long faces = 4ull * (2 * W + 2 * (H - 2)), sides = 4ull * 2 * (H - 2);
    st = gpumem_array_copy_batch(4, p, v, s); /* faces out, on the stream */
    want[nwant++] = (typeof(want[0])){"gpumem_array_copy_batch", "d2h", "no", gpumem_status_string(st), 4, faces};
    gpumem_stream_synchronize(s);
    /* both ways in one batch, without a stream */
    st = gpumem_array_copy_batch(2, (gpumem_array *[]){v[0], p[2]}, (gpumem_array *[]){p[0], v[2]}, NULL);
    want[nwant++] = (typeof(want[0])){"gpumem_array_copy_batch", "mixed", "yes", gpumem_status_string(st), 2,
                                      4ull * (W + H - 2)};
    st = gpumem_array_pack(2, &v[2], buf, s);
    want[nwant++] = (typeof(want[0])){"gpumem_array_pack", "d2h", "no", gpumem_status_string(st), 2, sides};
    st = gpumem_array_unpack(2, (gpumem_array *[]){v[3], v[2]}, buf, s);
    want[nwant++] = (typeof(want[0])){"gpumem_array_unpack", "h2d", "no", gpumem_status_string(st), 2, sides};
    gpumem_stream_synchronize(s);
    /* one that fails past its checks (its first driver call): a line with its status */
    gpumem_debug_fail_call(1, 999);
    st = gpumem_array_copy_batch(4, p, v, NULL);
    gpumem_debug_fail_call(0, 0);
    want[nwant++] = (typeof(want[0])){"gpumem_array_copy_batch", "d2h", "yes", gpumem_status_string(st), 4, faces};
    out->value[3] = st != GPUMEM_OK;
    /* refused by their checks, or empty: no line */
    gpumem_array_copy_batch(2, (gpumem_array *[]){p[0], p[0]}, (gpumem_array *[]){v[0], v[1]}, s);
    gpumem_array_copy_batch(0, NULL, NULL, s);
    gpumem_array_unpack(2, v, NULL, s);
    gpumem_stream_synchronize(s);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    FILE *fp = fdopen(fd, "r");
    rewind(fp);
    char line[512];
    while (fgets(line, sizeof line, fp) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        char what[64], dir[8], pth[32], sync[8], status[64];
        unsigned long long b = 0;
        double us = -1;
        int pairs = -1;
        if (sscanf(line, "gpumem: copy %63[^:]: %7s path=%31s bytes=%llu us=%lf sync=%7s status=%63s pairs=%d",
                   what, dir, pth, &b, &us, sync, status, &pairs) != 8) {
            if (out->value[2]++ == 0)
                snprintf(out->note, sizeof out->note, "%.200s", line);
            continue;
        }
        int k = (int)out->value[0]++;
        int good = k < nwant && strcmp(what, want[k].what) == 0 && strcmp(dir, want[k].dir) == 0 &&
                   b == want[k].bytes && us >= 0 && strcmp(sync, want[k].sync) == 0 &&
                   strcmp(status, want[k].status) == 0 && pairs == want[k].pairs &&
                   strcmp(pth, "?") != 0;
        if (good)
            out->value[1]++;
        else if (out->text[0] == '\0')
            snprintf(out->text, sizeof out->text, "line %d: %.400s (want %s %s bytes=%llu sync=%s status=%s pairs=%d)",
                     k, line, k < nwant ? want[k].what : "none", k < nwant ? want[k].dir : "",
                     k < nwant ? want[k].bytes : 0, k < nwant ? want[k].sync : "", k < nwant ? want[k].status : "",
                     k < nwant ? want[k].pairs : 0);
    }
    fclose(fp);
    unlink(path);
    out->value[4] = nwant;
    gpumem_array *all[9] = {buf, p[0], p[1], p[2], p[3], v[0], v[1], v[2], v[3]};
    for (int k = 0; k < 9; k++)
        gpumem_array_release(all[k]);
    gpumem_array_release(f);
    gpumem_stream_destroy(s);
    gpumem_context_release(c);
}

void test_copies_lines(void)
{
    child_result r;
    run_child(copies_lines, NULL, &r);
    ok(r.exited && r.exit_code == 0 && r.status == GPUMEM_OK && r.value[3], "GPUMEM_DEBUG=copies: the batches ran");
    if (r.status != GPUMEM_OK)
        diag("  %s", r.text);
    ok(r.value[0] == r.value[4] && r.value[1] == r.value[4] && r.value[2] == 0,
       "GPUMEM_DEBUG=copies: one line for each of the %ld batch, pack and unpack calls past their checks (its "
       "direction, bytes, sync, status and pairs), none for refused or empty ones (%ld lines, %ld right, %ld "
       "others)", r.value[4], r.value[0], r.value[1], r.value[2]);
    if (r.text[0] != '\0' || r.value[2] != 0)
        diag("  %s %s", r.text, r.note);
}
