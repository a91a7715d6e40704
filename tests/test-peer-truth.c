/* What a failing copy between devices says of its destination (issue 26,
 * item 7).  gpumem/array.h and gpumem/peer.h promise that a failure which
 * says nothing more leaves the destination unchanged, one whose message
 * says "the write into the destination was issued" may have written a part
 * of it (never its gaps), and one that says "the copy completed" left it
 * holding the whole copy.
 *
 * The walk: every way between two devices (one peer copy, one kernel
 * pushing or pulling through the peer mapping, chunks through scratch with
 * peer access, staged through the pinned slots with either side strided or
 * both, through temporaries when the destination's device has no room for
 * scratch), in one chunk or several, without a stream and on a stream of
 * the destination's device; for each, every driver call of the copy fails
 * in turn (gpumem_debug_fail_call), and the destination's whole memory,
 * gaps included, is read back once both devices are idle and compared with
 * what the message says.  Each configuration runs in a child (the settings
 * are read once per process).  Simulator only: it needs the fault
 * injection's exact call counts and several devices.  Internal: it reads
 * which way each copy took (gm_copy_last_decision). */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gpumem.h>

#include "arrays.h"
#include "child.h"
#include "copy_decide.h"
#include "copy_engine.h"
#include "tap.h"

/* The arrays are M x M int32: 256 x 256, 256 KiB, several 64 KiB chunks;
 * through temporaries 64 x 64, 16 KiB, less than the least scratch (64 KiB). */

static int64_t M = 256;

static const gpumem_dtype *i32(void)
{
    return gpumem_dtype_builtin(GPUMEM_INT32);
}

typedef struct config {
    const char *name;
    int staged;      /* GPUMEM_PEER=0 */
    int small;       /* 64 KiB scratch chunks and staging slots: several chunks */
    int temps;       /* the destination's device too full for scratch: temporaries */
} config;

static const config configs[] = {
    {"peer access, one chunk", 0, 0, 0},
    {"peer access, 64 KiB chunks", 0, 1, 0},
    {"staged, one chunk", 1, 0, 0},
    {"staged, 64 KiB chunks and slots", 1, 1, 0},
    {"peer access, through temporaries", 0, 0, 1},
    {"staged, through temporaries", 1, 0, 1},
};

enum { KINDS = 5 };
static const char *const kind_name[KINDS] = {"dense -> dense", "a[:, ::2] -> dense", "dense -> b[::-1, 1::2]",
                                             "a[:, ::2] -> b[:, 1::2]", "a -> b.T"};

static gpumem_copy_path copy_path; /* of one_copy's copy */
static int copy_way;                /* its gm_peer_way */

static gpumem_array *view(gpumem_array *a, const gpumem_slice *s)
{
    gpumem_array *v = NULL;
    if (gpumem_array_slice(a, s, 2, &v) != GPUMEM_OK)
        bail_out("slice: %s", gpumem_last_error());
    return v;
}

/* One copy of kind k from device 0 (values 1000 + i) into device 1's b
 * (values -1 - i), on stream (NULL: none), the fail_at-th driver call of
 * the copy failing (0: none).  want[] gets what b must hold after the
 * copy, was[] what it held before, got[] what it holds once both devices
 * are idle; *st the copy's status, msg its message. */
static void one_copy(gpumem_context *c0, gpumem_context *c1, gpumem_stream *stream, int k, uint64_t fail_at,
                     gpumem_status *st, char *msg, size_t msg_size, int32_t *was, int32_t *want, int32_t *got)
{
    int64_t n = (int64_t)M * M, sh[2] = {M, M}, half[2] = {M, M / 2};
    gpumem_array *a = device_iota(c0, 2, sh, 1000), *b = device_iota(c1, 2, sh, 0), *from = NULL, *to = NULL;
    /* b: -1 - i, so that no value of the source is one of its own */
    int32_t *neg = malloc((size_t)n * sizeof *neg);
    for (int64_t i = 0; i < n; i++)
        neg[i] = -1 - (int32_t)i;
    gpumem_array *hneg = NULL;
    if (gpumem_host_array_wrap(neg, 2, sh, NULL, i32(), &hneg) != GPUMEM_OK || gpumem_array_copy(b, hneg, NULL) ||
        a == NULL || b == NULL)
        bail_out("setup: %s", gpumem_last_error());
    gpumem_slice even[2] = {GPUMEM_SLICE_ALL, {0, GPUMEM_SLICE_DEFAULT, 2}};
    gpumem_slice odd_rev[2] = {{GPUMEM_SLICE_DEFAULT, GPUMEM_SLICE_DEFAULT, -1}, {1, GPUMEM_SLICE_DEFAULT, 2}};
    gpumem_slice odd[2] = {GPUMEM_SLICE_ALL, {1, GPUMEM_SLICE_DEFAULT, 2}};
    gpumem_array *keep = NULL; /* b itself when the destination is a view of it */
    memcpy(was, neg, (size_t)n * sizeof *was);
    memcpy(want, neg, (size_t)n * sizeof *want);
    switch (k) {
    case 0: /* dense -> dense: b = a */
        from = a;
        to = b;
        for (int64_t i = 0; i < n; i++)
            want[i] = 1000 + (int32_t)i;
        break;
    case 1: /* a[:, ::2] into a dense M x M/2 array at the front of b's memory */
        from = view(a, even);
        gpumem_array_reshape(b, 2, half, 'C', GPUMEM_NO_COPY, NULL, &to);
        keep = b;
        if (to == NULL) { /* b holds twice as many: a view of its first half */
            gpumem_slice first[1] = {{0, n / 2, 1}};
            gpumem_array *flat = NULL, *front = NULL;
            gpumem_array_reshape(b, 1, &n, 'C', GPUMEM_NO_COPY, NULL, &flat);
            gpumem_array_slice(flat, first, 1, &front);
            gpumem_array_reshape(front, 2, half, 'C', GPUMEM_NO_COPY, NULL, &to);
            gpumem_array_release(front);
            gpumem_array_release(flat);
        }
        for (int64_t i = 0; i < n / 2; i++)
            want[i] = 1000 + (int32_t)((i / (M / 2)) * M + 2 * (i % (M / 2)));
        break;
    case 2: { /* a dense M x M/2 array of device 0 into b[::-1, 1::2] */
        gpumem_array *sa = view(a, even);
        gpumem_device_array(c0, 2, half, NULL, i32(), 'C', NULL, &from);
        if (gpumem_array_copy(from, sa, NULL) != GPUMEM_OK)
            bail_out("setup: %s", gpumem_last_error());
        gpumem_array_release(sa);
        to = view(b, odd_rev);
        keep = b;
        for (int64_t r = 0; r < M; r++)
            for (int64_t c = 1; c < M; c += 2)
                want[r * M + c] = 1000 + (int32_t)((M - 1 - r) * M + c - 1);
        break;
    }
    case 3: /* a[:, ::2] into b[:, 1::2] */
        from = view(a, even);
        to = view(b, odd);
        keep = b;
        for (int64_t r = 0; r < M; r++)
            for (int64_t c = 1; c < M; c += 2)
                want[r * M + c] = 1000 + (int32_t)(r * M + c - 1);
        break;
    default: /* a into b.T */
        from = a;
        gpumem_array_transpose(b, NULL, &to);
        keep = b;
        for (int64_t i = 0; i < n; i++)
            want[i] = 1000 + (int32_t)((i % M) * M + i / M);
        break;
    }
    if (fail_at > 0)
        gpumem_debug_fail_call(fail_at, 999);
    *st = gpumem_array_copy(to, from, stream);
    gpumem_debug_fail_call(0, 0);
    gm_copy_decision d;
    gm_copy_last_decision(&d);
    copy_path = d.path;
    copy_way = d.peer_way;
    snprintf(msg, msg_size, "%s", *st != GPUMEM_OK ? gpumem_last_error() : "");
    /* both devices idle: whatever the copy queued has run */
    if ((stream != NULL && gpumem_stream_synchronize(stream) != GPUMEM_OK) ||
        gpumem_context_synchronize(c0) != GPUMEM_OK || gpumem_context_synchronize(c1) != GPUMEM_OK ||
        !read_all(keep != NULL ? keep : to, got))
        bail_out("reading back: %s", gpumem_last_error());
    if (from != a)
        gpumem_array_release(from);
    if (to != b)
        gpumem_array_release(to);
    gpumem_array_release(a);
    gpumem_array_release(b);
    gpumem_array_release(hneg);
    free(neg);
}

/* value[0]: failures walked, value[1]: failures whose destination
 * contradicts their message (text: the first), value[2]: failures saying
 * "the copy completed", value[3]: saying "the write into the destination
 * was issued", value[4]: copies whose walk did not end, value[5]: failures
 * whose message does not begin with "gpumem_array_copy: ", value[6]: the
 * ways seen (bit per gm_peer_way) and the paths (bit 16 + gpumem_copy_path),
 * value[7]: copies without a failure that were wrong. */
static void walk_case(const void *arg, child_result *out)
{
    const config *cf = arg;
    setenv("GPUMEM_SIM_DEVICES", "2", 1);
    if (cf->staged)
        setenv("GPUMEM_PEER", "0", 1);
    if (cf->small) {
        setenv("GPUMEM_COPY_SCRATCH_CHUNK", "64K", 1);
        setenv("GPUMEM_STAGING_CHUNK", "64K", 1);
    }
    if (cf->temps) {
        setenv("GPUMEM_SIM_MEMORY", "8M", 1);
        M = 64;
    }
    gpumem_context *c0 = NULL, *c1 = NULL;
    gpumem_stream *s1 = NULL;
    gpumem_array *filler = NULL;
    if ((out->status = gpumem_context_create(0, &c0)) != GPUMEM_OK ||
        (out->status = gpumem_context_create(1, &c1)) != GPUMEM_OK ||
        (out->status = gpumem_stream_create(c1, 0, &s1)) != GPUMEM_OK) {
        snprintf(out->text, sizeof out->text, "setup: %s", gpumem_last_error());
        return;
    }
    int64_t n = (int64_t)M * M;
    int32_t *was = malloc((size_t)n * 4), *want = malloc((size_t)n * 4), *got = malloc((size_t)n * 4);
    if (cf->temps) {
        /* device 1 keeps room for the destination and a temporary like it
         * (16 KiB each), not for scratch (64 KiB at least) */
        gpumem_status st;
        char msg[8];
        one_copy(c0, c1, NULL, 0, 0, &st, msg, sizeof msg, was, want, got); /* caches made, then cleared */
        gpumem_clear_context_caches();
        gpumem_context_flush_deallocations(c1);
        size_t free1 = 0, total1 = 0;
        gpumem_memory_info(c1, &free1, &total1);
        int64_t fill = (int64_t)free1 - (48 << 10);
        if ((out->status = gpumem_device_array(c1, 1, &fill, NULL, gpumem_dtype_builtin(GPUMEM_UINT8), 'C', NULL,
                                               &filler)) != GPUMEM_OK) {
            snprintf(out->text, sizeof out->text, "filler: %s", gpumem_last_error());
            return;
        }
    }
    for (int k = 0; k < KINDS; k++) {
        for (int on_stream = 0; on_stream < 2; on_stream++) {
            gpumem_stream *stream = on_stream ? s1 : NULL;
            uint64_t nth;
            for (nth = 1; nth < 2000; nth++) {
                gpumem_status st;
                char msg[1024];
                one_copy(c0, c1, stream, k, nth, &st, msg, sizeof msg, was, want, got);
                int64_t changed = 0, wrong = 0, stray = 0;
                for (int64_t i = 0; i < n; i++) {
                    changed += got[i] != was[i];
                    wrong += got[i] != want[i];
                    stray += got[i] != was[i] && got[i] != want[i];
                }
                if (st == GPUMEM_OK) {
                    out->value[6] |= 1L << (16 + copy_path) | 1L << copy_way;
                    if (wrong != 0 && out->value[7]++ == 0 && out->note[0] == '\0')
                        snprintf(out->note, sizeof out->note, "%s%s: %ld wrong elements", kind_name[k],
                                 on_stream ? ", on a stream" : "", (long)wrong);
                    break;
                }
                out->value[0]++;
                int completed = strstr(msg, "the copy completed") != NULL;
                int issued = strstr(msg, "the write into the destination was issued") != NULL;
                out->value[2] += completed;
                out->value[3] += issued && !completed;
                const char *why = NULL;
                if (strncmp(msg, "gpumem_array_copy: ", 19) != 0)
                    out->value[5]++;
                if (completed && wrong != 0)
                    why = "says the copy completed, but the destination does not hold it";
                else if (!completed && issued && stray != 0)
                    why = "says the write was issued, but the destination holds values of neither";
                else if (!completed && !issued && changed != 0)
                    why = "says nothing was written, but the destination changed";
                if (why != NULL && out->value[1]++ == 0)
                    snprintf(out->text, sizeof out->text, "%.40s%s, driver call %llu of the copy failing: %s (%ld of "
                             "%ld elements changed, %ld wrong): %.600s", kind_name[k], on_stream ? ", on a stream" : "",
                             (unsigned long long)nth, why, (long)changed, (long)n, (long)wrong, msg);
            }
            out->value[4] += nth >= 2000;
        }
    }
    free(was);
    free(want);
    free(got);
    gpumem_array_release(filler);
    gpumem_stream_destroy(s1);
    gpumem_context_release(c1);
    gpumem_context_release(c0);
}

int main(void)
{
    if (!test_on_sim())
        plan_skip_all("the walk needs the simulator's exact driver call counts and two devices");
    size_t nconf = sizeof configs / sizeof configs[0];
    plan((int)(4 * nconf + 2));
    long completed = 0, issued = 0;
    for (size_t c = 0; c < nconf; c++) {
        child_result r;
        run_child(walk_case, &configs[c], &r);
        ok(r.exited && r.exit_code == 0 && r.status == GPUMEM_OK && r.value[4] == 0,
           "%s: every kind of copy walked to its end", configs[c].name);
        if (!(r.exited && r.exit_code == 0 && r.status == GPUMEM_OK))
            diag("  exit %d, code %d: %s", r.exited, r.exit_code, r.text);
        ok(r.value[1] == 0, "%s: each of %ld failures leaves what its message says in the destination",
           configs[c].name, r.value[0]);
        if (r.value[1] != 0)
            diag("  %ld failures contradict their message; the first: %s", r.value[1], r.text);
        ok(r.value[5] == 0 && r.value[7] == 0, "%s: every message names gpumem_array_copy; copies that did not "
           "fail are right", configs[c].name);
        if (r.value[5] != 0 || r.value[7] != 0)
            diag("  %ld misnamed; %ld wrong: %s", r.value[5], r.value[7], r.note);
        long want_path = configs[c].staged ? GPUMEM_COPY_PATH_PEER_STAGED : GPUMEM_COPY_PATH_PEER;
        /* every way: one run, and one kernel with peer access, chunks, or temporaries when asked */
        long ways = 1L << GM_PEER_COPY | (configs[c].staged ? 0 : 1L << GM_PEER_KERNEL) |
                    1L << (configs[c].temps ? GM_PEER_TEMPS : GM_PEER_PIPELINE);
        long paths = r.value[6] >> 16;
        ok(paths == 1L << want_path && (r.value[6] & ways) == ways,
           "%s: the copies took the %s path, every way expected", configs[c].name,
           gpumem_copy_path_name((gpumem_copy_path)want_path));
        if (paths != 1L << want_path || (r.value[6] & ways) != ways)
            diag("  paths and ways seen (bits): %lx, ways wanted %lx", r.value[6], ways);
        diag("  %s: %ld failures, %ld saying the copy completed, %ld that the write was issued", configs[c].name,
             r.value[0], r.value[2], r.value[3]);
        completed += r.value[2];
        issued += r.value[3];
    }
    /* the walk meets both: a wait after the last write failing, and one
     * after the destination's own wait succeeded */
    ok(issued > 0, "%ld failures say that the write into the destination was issued", issued);
    ok(completed > 0, "%ld failures say that the copy completed", completed);
    return exit_status();
}
