/* Streams: asynchronous copies that are wrong without a synchronization and
 * right with one, write-backs, auto_synchronize scopes, and streams of
 * another context. */
#include <stdlib.h>
#include <string.h>

#include <gpumem.h>

#include "tap.h"

enum { M = 4096 };

/* With a stream, host-side element access and fill come after the stream's
 * earlier work (here a download into the same host array, pageable or
 * pinned). */
static void ordered_host_access(gpumem_context *ctx, int pinned)
{
    const char *kind = pinned ? "pinned" : "pageable";
    gpumem_array *d = NULL, *h = NULL;
    gpumem_stream *s = NULL;
    uint32_t seven = 7, nine = 9, v = 0;
    const gpumem_dtype *u32 = gpumem_dtype_builtin(GPUMEM_UINT32);
    static uint32_t plain[M];
    gpumem_stream_create(ctx, 0, &s);
    gpumem_device_array(ctx, 1, (int64_t[]){M}, NULL, u32, 'C', NULL, &d);
    gpumem_array_fill(d, &seven, NULL);
    if (pinned)
        gpumem_pinned_array(ctx, 1, (int64_t[]){M}, NULL, u32, 'C', &h);
    else
        gpumem_host_array_wrap(plain, 1, (int64_t[]){M}, NULL, u32, &h);
    uint32_t zero = 0;
    gpumem_array_fill(h, &zero, NULL);

    ok((gpumem_copy_to_host(d, h, s)) == (GPUMEM_OK), "%s: a download queued on s", kind);
    ok((gpumem_array_get_item(h, (int64_t[]){M - 1}, &v, s)) == (GPUMEM_OK), "%s: get_item on s", kind);
    ok(((int)v) == (7), "%s: get_item on s reads what the download wrote", kind);

    gpumem_array_fill(h, &zero, NULL);
    gpumem_copy_to_host(d, h, s);
    ok((gpumem_array_set_item(h, (int64_t[]){3}, &nine, s)) == (GPUMEM_OK), "%s: set_item on s", kind);
    gpumem_stream_synchronize(s);
    gpumem_array_get_item(h, (int64_t[]){3}, &v, NULL);
    ok(((int)v) == (9), "%s: set_item on s is not overwritten by the earlier download", kind);
    gpumem_array_get_item(h, (int64_t[]){4}, &v, NULL);
    ok(((int)v) == (7), "%s: and the download landed around it", kind);

    gpumem_array_fill(h, &zero, NULL);
    gpumem_copy_to_host(d, h, s);
    ok((gpumem_array_fill(h, &nine, s)) == (GPUMEM_OK), "%s: fill on s", kind);
    gpumem_stream_synchronize(s);
    int all_nine = 1;
    for (int64_t i = 0; i < M; i += 97) {
        gpumem_array_get_item(h, (int64_t[]){i}, &v, NULL);
        all_nine &= v == 9;
    }
    ok(all_nine, "%s: fill on s is not overwritten by the earlier download", kind);
    gpumem_array_release(h);
    gpumem_array_release(d);
    gpumem_stream_destroy(s);
}

/* Page-locked bytes the context holds (the library's bounce blocks and
 * staging slots included). */
static uint64_t pinned_bytes(gpumem_context *ctx)
{
    struct gpumem_memory_report r = {.size = sizeof r};
    gpumem_memory_report(ctx, 0, &r);
    return r.pinned.bytes;
}

static int all_equal(const int32_t *v, size_t n, int32_t want)
{
    for (size_t i = 0; i < n; i++)
        if (v[i] != want)
            return 0;
    return 1;
}

/* A write-back that fails once the wait succeeded is named after the
 * synchronization and the call that queued it, and is not run again. */
static void failed_writeback(gpumem_context *ctx)
{
    const gpumem_dtype *i32 = gpumem_dtype_builtin(GPUMEM_INT32);
    enum { W = 4096 };
    static int32_t wb[W];
    gpumem_stream *s = NULL;
    gpumem_array *hw = NULL, *dw = NULL;
    gpumem_stream_create(ctx, 0, &s);
    gpumem_host_array_wrap(wb, 1, (int64_t[]){W}, NULL, i32, &hw);
    for (int i = 0; i < W; i++)
        wb[i] = 1;
    gpumem_to_device(ctx, hw, s, GPUMEM_TO_DEVICE_WRITEBACK, &dw);
    gpumem_array_fill(dw, &(int32_t){7}, s);
    gpumem_array_release(dw);
    gpumem_debug_fail_call(2, 999); /* the call after the wait: the write-back's copy */
    is_int(gpumem_stream_synchronize(s), GPUMEM_ERROR_DRIVER, "failed write-back: the synchronization fails");
    static const char head[] = "gpumem_stream_synchronize: the write-back that gpumem_to_device queued: ";
    ok(strncmp(gpumem_last_error(), head, strlen(head)) == 0, "failed write-back: the message names both calls: %s",
       gpumem_last_error());
    gpumem_debug_fail_call(0, 0);
    wb[0] = 2;
    is_int(gpumem_stream_synchronize(s), GPUMEM_OK, "failed write-back: the next synchronization succeeds");
    is_int(wb[0], 2, "failed write-back: and does not run it again");
    ok(all_equal(wb + 1, W - 1, 1), "failed write-back: nor did the failed one write the host array");
    gpumem_stream_destroy(s);
    gpumem_array_release(hw);
}

/* A synchronization whose wait for the stream fails says nothing of how far
 * the stream's work got, so it commits none of the write-backs: they stay
 * queued for the next synchronization whose wait succeeds.  A write-back of
 * gpumem_to_device does not copy device data that may be incomplete into
 * the host array, and a queued download keeps its bounce block (a cleared
 * cache cannot free it under the landing) until a wait succeeds.  Nothing
 * is lost or kept: the next synchronization commits them, and the context
 * gives every page-locked byte back. */
static void failed_wait(gpumem_context *ctx)
{
    const gpumem_dtype *i32 = gpumem_dtype_builtin(GPUMEM_INT32);
    enum { W = 4096, P = 1 << 18 }; /* P: a 1 MiB download, through a bounce block */
    static int32_t wb[W], pg[P];
    gpumem_stream *s = NULL;
    gpumem_array *hw = NULL, *dw = NULL, *hp = NULL, *dp = NULL;
    gpumem_stream_create(ctx, 0, &s);
    gpumem_host_array_wrap(wb, 1, (int64_t[]){W}, NULL, i32, &hw);
    gpumem_host_array_wrap(pg, 1, (int64_t[]){P}, NULL, i32, &hp);
    gpumem_device_array(ctx, 1, (int64_t[]){P}, NULL, i32, 'C', NULL, &dp);
    gpumem_array_fill(dp, &(int32_t){5}, NULL);
    gpumem_clear_context_caches();
    uint64_t pinned0 = pinned_bytes(ctx);

    /* gpumem_to_device's write-back */
    for (int i = 0; i < W; i++)
        wb[i] = 1;
    is_int(gpumem_to_device(ctx, hw, s, GPUMEM_TO_DEVICE_WRITEBACK, &dw), GPUMEM_OK, "failed wait: a write-back");
    gpumem_array_fill(dw, &(int32_t){6}, s);
    gpumem_array_release(dw); /* the write-back holds it */
    gpumem_debug_fail_call(1, 999 /* CUDA_ERROR_UNKNOWN */); /* the next driver call: the stream's wait */
    is_int(gpumem_stream_synchronize(s), GPUMEM_ERROR_DRIVER, "failed wait: the synchronization fails");
    like(gpumem_last_error(), "gpumem_stream_synchronize: cuStreamSynchronize failed: CUDA_ERROR_UNKNOWN (999)",
         "failed wait: and says that its wait failed");
    ok(all_equal(wb, W, 1), "failed wait: the write-back did not run: the host array is untouched");
    is_int(gpumem_stream_synchronize(s), GPUMEM_OK, "failed wait: the next synchronization succeeds");
    ok(all_equal(wb, W, 6), "failed wait: and commits the write-back that the failed one kept");

    /* a queued download into pageable memory, through a bounce block */
    memset(pg, 0, sizeof pg);
    is_int(gpumem_copy_to_host(dp, hp, s), GPUMEM_OK, "failed wait: a download into pageable memory, queued");
    gpumem_debug_fail_call(1, 999);
    is_int(gpumem_stream_synchronize(s), GPUMEM_ERROR_DRIVER, "failed wait: its synchronization fails");
    is_int(gpumem_clear_context_caches(), GPUMEM_OK, "failed wait: the context's caches are cleared meanwhile");
    ok(pinned_bytes(ctx) >= pinned0 + sizeof pg,
       "failed wait: the bounce block stays with the stream, not in the cleared cache (%llu bytes page-locked)",
       (unsigned long long)pinned_bytes(ctx));
    is_int(gpumem_stream_synchronize(s), GPUMEM_OK, "failed wait: the next synchronization succeeds");
    ok(all_equal(pg, P, 5), "failed wait: the download landed whole");
    gpumem_clear_context_caches();
    is_int((long long)pinned_bytes(ctx), (long long)pinned0, "failed wait: and its bounce block went back");

    /* the stream's destruction: its write-backs cannot wait for a later
     * synchronization; the wait is made once more, and they run */
    for (int i = 0; i < W; i++)
        wb[i] = 1;
    gpumem_to_device(ctx, hw, s, GPUMEM_TO_DEVICE_WRITEBACK, &dw);
    gpumem_array_fill(dw, &(int32_t){8}, s);
    gpumem_array_release(dw);
    gpumem_debug_fail_call(1, 999);
    is_int(gpumem_stream_destroy(s), GPUMEM_ERROR_DRIVER, "failed wait: a destruction whose wait fails fails");
    like(gpumem_last_error(), "gpumem_stream_destroy: cuStreamSynchronize failed", "failed wait: and says why");
    ok(all_equal(wb, W, 8), "failed wait: its second wait succeeded, so the write-back ran");
    gpumem_array_release(dp);
    gpumem_array_release(hp);
    gpumem_array_release(hw);
}

int main(void)
{
    int sim = test_on_sim();
    if (sim) {
        setenv("GPUMEM_SIM_DEVICES", "2", 1);
        /* Queued work waits 200 ms unless synchronized: a missing
         * synchronization reliably reads stale data. */
        setenv("GPUMEM_SIM_STREAM_DELAY_US", "200000", 1);
    }
    gpumem_context *ctx = NULL;
    if (gpumem_context_create(0, &ctx) != GPUMEM_OK)
        bail_out("no context: %s", gpumem_last_error());
    const gpumem_dtype *i32 = gpumem_dtype_builtin(GPUMEM_INT32);
    enum { N = 4096 };
    static int32_t src[N], dst[N];
    for (int i = 0; i < N; i++)
        src[i] = i * 3;

    gpumem_stream *s = NULL, *dflt = NULL, *dflt2 = NULL;
    is_int(gpumem_stream_create(ctx, GPUMEM_STREAM_NON_BLOCKING, &s), GPUMEM_OK, "a non-blocking stream");
    gpumem_context *sctx = NULL;
    gpumem_stream_context(s, &sctx);
    ok(sctx == ctx, "it belongs to its context");
    is_int(gpumem_stream_default(ctx, &dflt), GPUMEM_OK, "the default stream");
    gpumem_stream_default(ctx, &dflt2);
    ok(dflt == dflt2 && dflt != s, "one default stream per context");
    is_int(gpumem_stream_destroy(dflt), GPUMEM_ERROR_INVALID_VALUE, "the default stream cannot be destroyed");
    is_int(gpumem_stream_query(s), GPUMEM_OK, "an idle stream is done");

    gpumem_array *h = NULL, *hd = NULL, *a = NULL, *b = NULL;
    gpumem_host_array_wrap(src, 1, (int64_t[]){N}, NULL, i32, &h);
    gpumem_host_array_wrap(dst, 1, (int64_t[]){N}, NULL, i32, &hd);
    gpumem_to_device(ctx, h, NULL, 0, &a);
    gpumem_device_array_like(ctx, a, NULL, &b);
    int32_t zero = 0;
    gpumem_array_fill(b, &zero, NULL);

    /* A device-to-device copy queued on the non-blocking stream, then a
     * synchronous read on the default stream, which does not wait for it. */
    is_int(gpumem_array_copy(b, a, s), GPUMEM_OK, "queue a device-to-device copy on the stream");
    if (sim) {
        is_int(gpumem_stream_query(s), GPUMEM_ERROR_NOT_READY, "the stream reports work in flight");
        gpumem_copy_to_host(b, hd, NULL);
        ok(dst[N - 1] == 0, "without a synchronization the copy has not happened (stale data)");
    } else {
        skip(2, "the real GPU's timing is not deterministic; the simulator delays queued work");
    }
    is_int(gpumem_stream_synchronize(s), GPUMEM_OK, "synchronize the stream");
    is_int(gpumem_stream_query(s), GPUMEM_OK, "it is done");
    gpumem_copy_to_host(b, hd, NULL);
    ok(memcmp(dst, src, sizeof src) == 0, "after the synchronization the data is there");

    /* Write-back: the host array gets the device data at the next synchronize. */
    static int32_t wb[N];
    for (int i = 0; i < N; i++)
        wb[i] = 1;
    gpumem_array *hw = NULL, *dw = NULL;
    gpumem_host_array_wrap(wb, 1, (int64_t[]){N}, NULL, i32, &hw);
    is_int(gpumem_to_device(ctx, hw, s, GPUMEM_TO_DEVICE_WRITEBACK, &dw), GPUMEM_OK, "to_device with write-back");
    int32_t nine = 9;
    gpumem_array_fill(dw, &nine, s);
    ok(wb[0] == 1 && wb[N - 1] == 1, "the host array is untouched before the synchronize");
    gpumem_array_release(dw); /* the pending write-back keeps it alive */
    is_int(gpumem_stream_synchronize(s), GPUMEM_OK, "synchronize commits the write-back");
    int all9 = 1;
    for (int i = 0; i < N; i++)
        all9 = all9 && wb[i] == 9;
    ok(all9, "the host array now holds the device data");
    wb[0] = 5;
    gpumem_stream_synchronize(s);
    is_int(wb[0], 5, "a write-back is committed once");

    /* auto_synchronize: nested scopes; the outermost end synchronizes and
     * commits, also after the code inside failed. */
    is_int(gpumem_stream_auto_synchronize_end(s), GPUMEM_ERROR_INVALID_STATE, "an end without a begin");
    for (int i = 0; i < N; i++)
        wb[i] = 1;
    gpumem_stream_auto_synchronize_begin(s);
    gpumem_stream_auto_synchronize_begin(s);
    gpumem_to_device(ctx, hw, s, GPUMEM_TO_DEVICE_WRITEBACK, &dw);
    int32_t seven = 7;
    gpumem_array_fill(dw, &seven, s);
    gpumem_array *wrong = NULL;
    gpumem_host_array_wrap(dst, 1, (int64_t[]){N / 2}, NULL, i32, &wrong);
    gpumem_status body = gpumem_array_copy(dw, wrong, s); /* fails: shape mismatch */
    ok(body == GPUMEM_ERROR_SHAPE_MISMATCH, "the code in the scope fails");
    is_int(gpumem_stream_auto_synchronize_end(s), GPUMEM_OK, "the inner end");
    ok(wb[0] == 1, "...does not synchronize");
    gpumem_array_fill(dw, &seven, s);
    is_int(gpumem_stream_auto_synchronize_end(s), GPUMEM_OK, "the outer end synchronizes");
    int all7 = 1;
    for (int i = 0; i < N; i++)
        all7 = all7 && wb[i] == 7;
    ok(all7, "and commits the write-back despite the failure inside");
    gpumem_array_release(dw);
    gpumem_array_release(wrong);

    /* context_synchronize commits the default stream's write-backs. */
    for (int i = 0; i < N; i++)
        wb[i] = 1;
    gpumem_to_device(ctx, hw, NULL, GPUMEM_TO_DEVICE_WRITEBACK, &dw);
    int32_t four = 4;
    gpumem_array_fill(dw, &four, NULL);
    gpumem_array_release(dw);
    ok(wb[0] == 1, "a write-back on the default stream waits");
    is_int(gpumem_context_synchronize(ctx), GPUMEM_OK, "context_synchronize");
    ok(wb[0] == 4 && wb[N - 1] == 4, "commits it");

    /* A stream of another context. */
    gpumem_context *other = NULL;
    int count = 0;
    gpumem_device_count(&count);
    if (count >= 2 && gpumem_context_create(1, &other) == GPUMEM_OK) {
        gpumem_stream *s1 = NULL;
        gpumem_stream_create(other, 0, &s1);
        memset(dst, 0, sizeof dst);
        is_int(gpumem_array_copy(hd, a, s1), GPUMEM_ERROR_CONTEXT_MISMATCH,
               "an array used with a stream of another context");
        like(gpumem_last_error(), "'src'", "names the array");
        ok(dst[1] == 0, "and copies nothing");
        gpumem_array *x = NULL;
        is_int(gpumem_to_device(ctx, h, s1, 0, &x), GPUMEM_ERROR_CONTEXT_MISMATCH, "to_device likewise");
        gpumem_stream_destroy(s1);
        gpumem_context_release(other);
    } else {
        skip(4, "needs two devices");
    }

    is_int(gpumem_stream_destroy(s), GPUMEM_OK, "destroy the stream");
    gpumem_array_release(a);
    gpumem_array_release(b);
    gpumem_array_release(h);
    gpumem_array_release(hd);
    gpumem_array_release(hw);
    ordered_host_access(ctx, 0);
    ordered_host_access(ctx, 1);
    failed_writeback(ctx);
    failed_wait(ctx);
    gpumem_context_release(ctx);
    done_testing();
    return exit_status();
}
