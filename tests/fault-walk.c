/* make check-faults: exhaustive fault injection on the simulator.
 *
 * Every scenario (fault-walk-scenarios.c) uses one area of the public
 * API.  For k = 1, 2, ... a child process runs it with GPUMEM_SIM_FAIL=k
 * (the k-th driver call of the process fails with CUDA_ERROR_UNKNOWN),
 * until a run ends before its k-th call: then every driver call of the
 * scenario has been failed once.
 * Each run must
 *  - exit normally (no crash, no abort),
 *  - return a failure status, or succeed with the right values (a failed
 *    call that was only an optimisation may be worked around),
 *  - give back every simulated device byte it allocated and every
 *    page-locked host byte (the simulator's own counts, read without a
 *    driver call), and
 *  - release every handle it made, so that the context's last release
 *    leaves no simulator thread alive.
 * Each run is made twice: once with the context's caches cleared before
 * the device bytes are counted (a cache is not a leak), and once without:
 * then the caller's must be the context's last reference, and its release
 * alone must give back every page-locked byte and end every thread (a
 * pool's block kept in a context's cache once kept the context alive).
 * Then each scenario runs again with every call from the k-th on failing
 * (the k-th with CUDA_ERROR_UNKNOWN, the later ones with
 * CUDA_ERROR_LAUNCH_FAILED, as after a lost device, through the context's
 * release), where one call meets several failures; those runs must exit
 * normally with a failure status or the right values (a lost device keeps
 * what it holds).
 * In every run, every failed call is held to the rule of gpumem/status.h
 * (see CHECKED in fault-walk.h): its message and driver result are those of the
 * status it returned, and its message names the public function that was
 * called, and no other one the library called on the way.
 * It prints "N injection points", the number of runs that failed a call
 * alone.  A scenario may ask for several simulated devices (copies between
 * two devices).
 */
#include "config.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <gpumem.h>

#include "child.h"
#include "context.h"
#include "dlpack_abi.h"
#include "driver.h"
#include "sim.h"
#include "tap.h"

#include "fault-walk.h"

/* The rule every call is held to: see CHECKED in fault-walk.h. */
static long mismatches;
/* Failed calls whose message does not name the function called first, or
 * names another public function as what failed: the first as "called:
 * message". */
static long misnamed;
static char misnamed_text[256];
static int injected_results[2]; /* the k-th call's result; the later calls' (a lost device) */
static char mismatch_text[1024];

static void mismatch(const char *call, gpumem_status st, const char *why)
{
    if (mismatches++ == 0) {
        snprintf(mismatch_text, sizeof mismatch_text, "%.60s returned %s, %s (driver result %d); message: %.600s",
                 call, gpumem_status_string(st), why, gpumem_last_driver_result(), gpumem_last_error());
    }
}

/* Whether msg names the public function `call` (n bytes) as what failed,
 * and no other: it begins with "call: ", and no other "gpumem_...:" (an
 * identifier, then a colon) is in it. */
static int names_call(const char *msg, const char *call, size_t n)
{
    if (strncmp(msg, call, n) != 0 || msg[n] != ':')
        return 0;
    for (const char *p = strstr(msg, "gpumem_"); p != NULL; p = strstr(p + 1, "gpumem_")) {
        if (p > msg && (isalnum((unsigned char)p[-1]) || p[-1] == '_'))
            continue;
        size_t len = strspn(p, "abcdefghijklmnopqrstuvwxyz0123456789_");
        if (p[len] == ':' && (len != n || strncmp(p, call, n) != 0))
            return 0;
    }
    return 1;
}

/* Whether every status msg names ("GPUMEM_ERROR_X") is st. */
static int names_status(const char *msg, gpumem_status st)
{
    const char *want = gpumem_status_string(st);
    for (const char *p = strstr(msg, "GPUMEM_ERROR_"); p != NULL; p = strstr(p + 1, "GPUMEM_ERROR_")) {
        size_t len = strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_");
        if (len != strlen(want) || strncmp(p, want, len) != 0)
            return 0;
    }
    return 1;
}

/* The driver result a message names first, "CUDA_ERROR_X (n)": n, or 0. */
static int named_result(const char *msg)
{
    for (const char *p = strstr(msg, "CUDA_ERROR_"); p != NULL; p = strstr(p, "CUDA_ERROR_")) {
        p += strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_");
        if (strncmp(p, " (", 2) == 0)
            return atoi(p + 2);
    }
    return 0;
}

/* The statuses status.h lets a driver failure be reported as, besides the
 * one its result maps to. */
static int restatus(gpumem_status st)
{
    return st == GPUMEM_ERROR_NO_DEVICE || st == GPUMEM_ERROR_HOST_OUT_OF_MEMORY ||
           st == GPUMEM_ERROR_INVALID_VALUE || st == GPUMEM_ERROR_DRIVER_NOT_FOUND;
}

/* The thread's last failure before a call. */
static struct {
    gpumem_status status;
    int result;
    char message[1024];
} before;

void snapshot(void)
{
    before.status = gpumem_last_status();
    before.result = gpumem_last_driver_result();
    snprintf(before.message, sizeof before.message, "%s", gpumem_last_error());
}

gpumem_status checked(const char *call, gpumem_status st)
{
    const char *msg = gpumem_last_error();
    if (st == GPUMEM_OK || st == GPUMEM_ERROR_NOT_READY) {
        if (gpumem_last_status() != before.status || gpumem_last_driver_result() != before.result ||
            strcmp(msg, before.message) != 0)
            mismatch(call, st, "the call succeeded, but the last failure changed");
        return st;
    }
    int named = named_result(msg), dr = gpumem_last_driver_result();
    size_t fn = strcspn(call, "(");
    if (!names_call(msg, call, fn) && misnamed++ == 0)
        snprintf(misnamed_text, sizeof misnamed_text, "%.*s: %.200s", (int)fn, call, msg);
    if (gpumem_last_status() != st)
        mismatch(call, st, "gpumem_last_status() is another status");
    else if (dr != 0 && dr != injected_results[0] && dr != injected_results[1])
        mismatch(call, st, "the driver result is not one injected");
    else if (dr != 0 && gm_drv_status(dr) != st && !restatus(st))
        mismatch(call, st, "the driver result is of another status");
    else if (st == GPUMEM_ERROR_DRIVER && dr == 0)
        mismatch(call, st, "a driver failure without its driver result");
    else if (named != dr)
        mismatch(call, st, "the message names another driver result");
    else if (!names_status(msg, st))
        mismatch(call, st, "the message names another status");
    return st;
}

const gpumem_dtype *f64, *i32;
int pooled;

/* ---- the walk ---------------------------------------------------------------------------- */

/* Whether the injected failure was of a call that gives something back:
 * the driver kept it, so the simulator still counts it (not the library's
 * leak). */
int failed_free(void)
{
    static const int frees[] = {GM_OP_mem_free,       GM_OP_mem_free_host,         GM_OP_mem_host_unregister,
                                GM_OP_module_unload,  GM_OP_primary_ctx_release,   GM_OP_stream_destroy,
                                GM_OP_event_destroy,  GM_OP_mem_unmap,             GM_OP_mem_release,
                                GM_OP_mem_address_free};
    for (size_t i = 0; i < sizeof frees / sizeof frees[0]; i++)
        if (gm_drv_failed_op == frees[i])
            return 1;
    return 0;
}

/* One run, in a child: value[0] 1 when the k-th call was reached, value[1]
 * device bytes kept (caches cleared first), or without clearing the caches
 * the context's references kept besides the caller's, value[2] page-locked
 * bytes kept after the context's release, value[3] simulator threads left
 * after it, value[4] the calls whose message broke the rule (text: the
 * first), value[5] 1 when the injected failure was of a free, value[6] the
 * failed calls whose message does not name the function called, or names
 * another (note: the first). */
static void run(const void *arg, child_result *out)
{
    const long *a = arg; /* scenario, k, variant, 1: caches not cleared */
    const scenario *sc = &scenarios[a[0]];
    long k = a[1];
    char v[32];
    if (sc->devices > 1) {
        snprintf(v, sizeof v, "%d", sc->devices);
        setenv("GPUMEM_SIM_DEVICES", v, 1);
    }
    if (k > 0) {
        snprintf(v, sizeof v, "%ld", k);
        setenv("GPUMEM_SIM_FAIL", v, 1);
        injected_results[0] = GM_CUDA_ERROR_UNKNOWN;
        if (a[2] >= 2) /* a lost device: every later call fails too, with another status */
            gm_drv_fail_then = injected_results[1] = GM_CUDA_ERROR_LAUNCH_FAILED;
    }
    f64 = gpumem_dtype_builtin(GPUMEM_FLOAT64);
    i32 = gpumem_dtype_builtin(GPUMEM_INT32);
    gpumem_context *ctx = NULL;
    out->status = CHECKED(gpumem_context_create(0, &ctx));
    uint64_t calls = 0;
    if (out->status == GPUMEM_OK) {
        gpumem_context_set_dealloc_limits(ctx, 0, 0.0); /* every free at its release */
        size_t free0 = 0, free1 = 0, total = 0;
        gm_drv->mem_get_info(ctx->dctx, &free0, &total); /* the backend itself: never a failing call */
        gpumem_pool *pool = NULL;
        pooled = a[2] % 2 == 1;
        if (pooled && (out->status = CHECKED(gpumem_pool_create(ctx, 0, &pool))) == GPUMEM_OK)
            out->status = CHECKED(gpumem_context_set_pool(ctx, pool));
        if (out->status == GPUMEM_OK)
            out->status = sc->run(ctx);
        gpumem_debug_driver_calls(NULL, &calls);
        if (a[2] < 2) /* a lost device stays lost: the cleanup below runs on it too */
            gpumem_debug_fail_call(0, 0);
        if (pool != NULL) {
            CHECKED(gpumem_context_set_pool(ctx, NULL));
            CHECKED(gpumem_pool_destroy(pool));
        }
        if (a[3] == 0) {
            /* caches are not leaks: the copy engine's device scratch and the
             * staging slots stay with the context until cleared */
            CHECKED(gpumem_clear_context_caches());
            CHECKED(gpumem_context_flush_deallocations(ctx));
            gm_drv->mem_get_info(ctx->dctx, &free1, &total);
            out->value[1] = (long)free0 - (long)free1;
        } else {
            /* uncleared, they end with the context: its release must be the last */
            int refs = 0;
            gpumem_context_refcount(ctx, &refs);
            out->value[1] = refs - 1;
        }
        CHECKED(gpumem_context_release(ctx));
    } else {
        gpumem_debug_driver_calls(NULL, &calls);
    }
    snprintf(out->text, sizeof out->text, "%s", mismatches ? mismatch_text : gpumem_last_error());
    out->value[0] = k > 0 && calls >= (uint64_t)k;
    out->value[2] = (long)gm_sim_host_locked_bytes();
    out->value[3] = (long)gm_sim_live_workers();
    out->value[4] = mismatches;
    out->value[6] = misnamed;
    snprintf(out->note, sizeof out->note, "%s", misnamed_text);
    out->value[5] = failed_free();
}

static int kept(const child_result *r)
{
    return r->value[1] != 0 || r->value[2] != 0 || r->value[3] != 0;
}

/* Runs arg with the caches cleared before the counts (r[0]), then without
 * (r[1]). */
static void run_both(long *arg, child_result r[2])
{
    for (long clear = 0; clear < 2; clear++) {
        arg[3] = clear;
        run_child(run, arg, &r[clear]);
    }
}

/* Says what went wrong in the runs of a pair (a failure status is one
 * when nothing was injected). */
static void diag_kept(const char *head, const child_result r[2], int injected)
{
    static const char *const what[2] = {"device bytes", "more context references"};
    for (int i = 0; i < 2; i++)
        if (!r[i].exited || r[i].exit_code != 0 || r[i].status == WRONG || kept(&r[i]) ||
            (!injected && r[i].status != GPUMEM_OK))
            diag("  %s%s: exit %d, status %d, kept %ld %s, %ld locked bytes, %ld threads: %s", head,
                 i ? " (caches not cleared)" : "", r[i].exit_code, r[i].status, r[i].value[1], what[i],
                 r[i].value[2], r[i].value[3], r[i].text);
}

int main(void)
{
    if (!test_on_sim())
        plan_skip_all("fault injection runs on the simulator (GPUMEM_BACKEND=sim)");
    size_t n = n_scenarios;
    plan((int)(8 * n + 3));
    long points = 0, total_mismatches = 0, mismatch_runs = 0, total_misnamed = 0, misnamed_runs = 0;
    /* Each scenario four times: arrays allocated directly, then through a
     * device pool plugged into the context (gpumem_context_set_pool); with
     * the k-th call failing alone, then with every call after it failing
     * too (a lost device: what it holds may stay held). */
    static const char *const how[4] = {"direct", "pooled", "direct, device lost", "pooled, device lost"};
    for (size_t v = 0; v < 4; v++) {
        int lost = v >= 2;
        for (size_t i = 0; i < n; i++) {
            child_result r[2];
            long arg[4] = {(long)i, 0, (long)v, 0};
            run_both(arg, r);
            int clean = 1;
            for (int c = 0; c < 2; c++)
                clean = clean && r[c].exited && r[c].exit_code == 0 && r[c].status == GPUMEM_OK && !kept(&r[c]);
            ok(clean, "%s (%s): runs clean without injection, its caches cleared or not", scenarios[i].name, how[v]);
            if (!clean)
                diag_kept("", r, 0);
            clean = 1;
            long k;
            for (k = 1; k < 100000; k++) {
                arg[1] = k;
                run_both(arg, r);
                int fired = r[0].exited && r[0].exit_code == 0 && r[0].value[0] == 1;
                /* The walk ends at the first k that r[0] did not reach.  The
                 * count may differ by a call between runs: a copy on a stream
                 * waits for a queued download's landing with a driver call
                 * only while the landing has not run yet.  A run that did
                 * reach k failed as injected, and is judged as such below. */
                int end = r[0].exited && r[0].exit_code == 0 && !fired;
                if (end) {
                    int other_fired = r[1].exited && r[1].exit_code == 0 && r[1].value[0] == 1;
                    if (r[0].status != GPUMEM_OK || (!other_fired && r[1].status != GPUMEM_OK)) {
                        clean = 0;
                        diag("  k=%ld: no injection, status %d, %d: %s", k, r[0].status, r[1].status, r[0].text);
                    }
                }
                int good = 1;
                for (int c = 0; c < 2; c++) {
                    if (end && (c == 0 || r[c].value[0] != 1))
                        continue; /* judged above: no injection reached it */
                    good = good && r[c].exited && r[c].exit_code == 0 && r[c].status != WRONG &&
                           (lost || !kept(&r[c]) || r[c].value[5]);
                    if (r[c].value[6] != 0) {
                        total_misnamed += r[c].value[6];
                        if (misnamed_runs++ < 40)
                            diag("  %s (%s), k=%ld%s: %ld calls whose message does not name the function called, "
                                 "or names another; the first: %s", scenarios[i].name, how[v], k,
                                 c ? " (caches not cleared)" : "", r[c].value[6], r[c].note);
                    }
                    if (r[c].value[4] != 0) {
                        total_mismatches += r[c].value[4];
                        if (mismatch_runs++ < 40)
                            diag("  %s (%s), k=%ld%s: %ld calls whose message is not their status's; the first: %s",
                                 scenarios[i].name, how[v], k, c ? " (caches not cleared)" : "", r[c].value[4],
                                 r[c].text);
                    }
                }
                if (!good) {
                    clean = 0;
                    char head[32];
                    snprintf(head, sizeof head, "k=%ld", k);
                    diag_kept(head, r, 1);
                }
                if (end)
                    break;
            }
            if (!lost)
                points += k - 1;
            if (lost)
                ok(clean, "%s (%s): every driver call from the k-th on failed, for each of its %ld calls: an "
                   "error or the right values, its caches cleared or not", scenarios[i].name, how[v], k - 1);
            else
                ok(clean, "%s (%s): each of its %ld driver calls failed in turn: an error or the right values, "
                   "nothing kept, its caches cleared or not", scenarios[i].name, how[v], k - 1);
        }
    }
    printf("# %ld injection points\n", points);
    ok(total_mismatches == 0, "at every failed call, gpumem_last_status() and the message's driver result "
       "agree with the status returned (%ld calls broke the rule, in %ld runs)", total_mismatches, mismatch_runs);
    ok(total_misnamed == 0, "at every failed call, the message names the public function called, and no other "
       "as what failed (%ld calls broke the rule, in %ld runs)", total_misnamed, misnamed_runs);
    ok(points >= 300, "%ld injection points (at least 300)", points);
    return exit_status();
}

