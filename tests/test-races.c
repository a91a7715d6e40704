/* Races between threads that share streams and contexts:
 *  1. queued pageable downloads on one shared stream (or one stream each),
 *     each thread synchronizing its stream, beside a thread running
 *     gpumem_context_synchronize:
 *     a synchronization may give back only the bounce blocks of downloads
 *     its wait covered, so every byte of every download must be right;
 *  2. gpumem_context_synchronize beside threads that create a stream, queue
 *     a download on it and destroy it: no synchronization may use a stream
 *     being destroyed (a wrong status, or a use after free under ASan).
 * (Host-side get_item, set_item and fill on a stream: test-stream.) */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpumem.h>

#include "tap.h"

/* is_int with a formatted name. */
#define IS(got, want, ...)                                                                                        \
    do {                                                                                                          \
        long long got_ = (long long)(got), want_ = (long long)(want);                                             \
        if (!ok(got_ == want_, __VA_ARGS__))                                                                      \
            diag("got %lld, want %lld", got_, want_);                                                             \
    } while (0)

enum { THREADS = 3, N = 4096 };

static gpumem_context *ctx;
static gpumem_stream *streams[THREADS]; /* one shared by all, or one each */
static const gpumem_dtype *u32;
static int rounds;
static atomic_int stop;
static atomic_long wrong_bytes, failures, done_rounds;
static char first_failure[512];
static pthread_mutex_t fail_mu = PTHREAD_MUTEX_INITIALIZER;

static void note_failure(const char *what, gpumem_status st)
{
    atomic_fetch_add(&failures, 1);
    pthread_mutex_lock(&fail_mu);
    if (first_failure[0] == '\0')
        snprintf(first_failure, sizeof first_failure, "%s: %s (%s)", what, gpumem_status_string(st),
                 gpumem_last_error());
    pthread_mutex_unlock(&fail_mu);
}

/* Each round: a device array filled with a value of this thread and round,
 * queued down into a fresh pageable buffer on the shared stream, the stream
 * synchronized, every element checked. */
static void *downloader(void *arg)
{
    unsigned id = (unsigned)(uintptr_t)arg;
    gpumem_stream *shared = streams[id];
    gpumem_array *d = NULL;
    gpumem_status st = gpumem_device_array(ctx, 1, (int64_t[]){N}, NULL, u32, 'C', NULL, &d);
    if (st != GPUMEM_OK) {
        note_failure("device array", st);
        return NULL;
    }
    for (int r = 0; r < rounds && !atomic_load(&stop); r++) {
        uint32_t value = (id << 24) | (uint32_t)r, *buf = malloc(N * sizeof *buf);
        gpumem_array *h = NULL;
        if (buf == NULL)
            break;
        memset(buf, 0xA5, N * sizeof *buf);
        if ((st = gpumem_array_fill(d, &value, shared)) != GPUMEM_OK)
            note_failure("fill", st);
        else if ((st = gpumem_host_array_wrap(buf, 1, (int64_t[]){N}, NULL, u32, &h)) != GPUMEM_OK)
            note_failure("wrap", st);
        else if ((st = gpumem_copy_to_host(d, h, shared)) != GPUMEM_OK)
            note_failure("copy_to_host", st);
        else if ((st = gpumem_stream_synchronize(shared)) != GPUMEM_OK)
            note_failure("stream_synchronize", st);
        else
            for (int i = 0; i < N; i++)
                if (buf[i] != value)
                    atomic_fetch_add(&wrong_bytes, 4);
        gpumem_array_release(h);
        free(buf);
        atomic_fetch_add(&done_rounds, 1);
    }
    gpumem_array_release(d);
    return NULL;
}

static void *context_syncer(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop)) {
        gpumem_status st = gpumem_context_synchronize(ctx);
        if (st != GPUMEM_OK)
            note_failure("context_synchronize", st);
    }
    return NULL;
}

/* Each round: a stream of its own, a queued download on it (a write-back
 * left on the stream), then the stream destroyed. */
static void *stream_churner(void *arg)
{
    (void)arg;
    gpumem_array *d = NULL;
    gpumem_status st = gpumem_device_array(ctx, 1, (int64_t[]){N}, NULL, u32, 'C', NULL, &d);
    if (st != GPUMEM_OK) {
        note_failure("device array", st);
        return NULL;
    }
    uint32_t *buf = malloc(N * sizeof *buf);
    for (int r = 0; r < rounds && buf != NULL && !atomic_load(&stop); r++) {
        gpumem_stream *s = NULL;
        gpumem_array *h = NULL;
        uint32_t value = 0x5000000u + (uint32_t)r;
        if ((st = gpumem_stream_create(ctx, 0, &s)) != GPUMEM_OK) {
            note_failure("stream_create", st);
            break;
        }
        if ((st = gpumem_array_fill(d, &value, s)) != GPUMEM_OK)
            note_failure("fill", st);
        else if ((st = gpumem_host_array_wrap(buf, 1, (int64_t[]){N}, NULL, u32, &h)) != GPUMEM_OK)
            note_failure("wrap", st);
        else if ((st = gpumem_copy_to_host(d, h, s)) != GPUMEM_OK)
            note_failure("copy_to_host", st);
        if ((st = gpumem_stream_destroy(s)) != GPUMEM_OK)
            note_failure("stream_destroy", st);
        else
            for (int i = 0; i < N; i++)
                if (buf[i] != value)
                    atomic_fetch_add(&wrong_bytes, 4);
        gpumem_array_release(h);
        atomic_fetch_add(&done_rounds, 1);
    }
    free(buf);
    gpumem_array_release(d);
    return NULL;
}

static void run_threads(void *(*worker)(void *), const char *name)
{
    pthread_t tid[THREADS], syncer;
    atomic_store(&stop, 0);
    atomic_store(&wrong_bytes, 0);
    atomic_store(&failures, 0);
    atomic_store(&done_rounds, 0);
    first_failure[0] = '\0';
    pthread_create(&syncer, NULL, context_syncer, NULL);
    for (unsigned i = 0; i < THREADS; i++)
        pthread_create(&tid[i], NULL, worker, (void *)(uintptr_t)i);
    for (unsigned i = 0; i < THREADS; i++)
        pthread_join(tid[i], NULL);
    atomic_store(&stop, 1);
    pthread_join(syncer, NULL);
    diag("%s: %ld rounds", name, atomic_load(&done_rounds));
    IS((int)atomic_load(&failures), 0, "%s: every call returned GPUMEM_OK%s%s", name,
           first_failure[0] ? "; first failure: " : "", first_failure);
    IS((int)atomic_load(&wrong_bytes), 0, "%s: every downloaded byte is right", name);
}

int main(void)
{
    int sim = test_on_sim();
    if (sim)
        setenv("GPUMEM_SIM_STREAM_DELAY_US", "0", 1);
    const char *r = getenv("GPUMEM_RACE_ROUNDS");
    rounds = r != NULL ? atoi(r) : 600;
    if (getenv("GPUMEM_TEST_SANITIZER") != NULL && r == NULL)
        rounds = 200;
    if (gpumem_context_create(0, &ctx) != GPUMEM_OK)
        bail_out("no context: %s", gpumem_last_error());
    u32 = gpumem_dtype_builtin(GPUMEM_UINT32);

    gpumem_stream *s = NULL;
    gpumem_stream_default(ctx, &s);
    for (int i = 0; i < THREADS; i++)
        streams[i] = s;
    run_threads(downloader, "threads sharing the default stream");
    gpumem_stream_create(ctx, 0, &s);
    for (int i = 0; i < THREADS; i++)
        streams[i] = s;
    run_threads(downloader, "threads sharing a created stream");
    gpumem_stream_destroy(s);
    for (int i = 0; i < THREADS; i++)
        gpumem_stream_create(ctx, 0, &streams[i]);
    run_threads(downloader, "threads on streams of their own");
    for (int i = 0; i < THREADS; i++)
        gpumem_stream_destroy(streams[i]);
    run_threads(stream_churner, "streams destroyed beside gpumem_context_synchronize");

    gpumem_context_release(ctx);
    done_testing();
    return exit_status();
}
