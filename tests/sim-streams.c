/* The simulator's streams (part of tests/test-sim): queued work, events
 * between contexts, host functions in order, the last release, and a
 * stress test of two contexts. */
#include "config.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "child.h"
#include "driver.h"
#include "gpumem.h"
#include "sim.h"
#include "tap.h"
#include "sim-test.h"

/* ---- streams --------------------------------------------------------------- */

void test_streams(gm_dctx *c)
{
    enum { N = 4096 };
    gm_dstream *s = NULL, *nb = NULL;
    unsigned base_workers = gm_sim_live_workers();
    is_int(GM_DRV(stream_create, c, &s, 0x4), GM_CUDA_ERROR_INVALID_VALUE, "an unknown stream flag");
    is_int(GM_DRV(stream_create, c, &s, GM_CU_STREAM_DEFAULT), GM_CUDA_SUCCESS, "a blocking stream");
    GM_DRV(stream_create, c, &nb, GM_CU_STREAM_NON_BLOCKING);
    is_int(gm_sim_live_workers(), base_workers + 2, "each stream has its worker thread");

    gm_cu_deviceptr d = 0;
    unsigned char *pin = NULL;
    static unsigned char page[N];
    GM_DRV(mem_alloc, c, &d, N);
    GM_DRV(mem_host_alloc, c, (void **)&pin, N, 0);
    GM_DRV(memset, c, d, 0x5A, 1, N, NULL, 0);

    /* the missing synchronization */
    memset(pin, 0xEE, N);
    is_int(GM_DRV(memcpy, c, H(pin), d, N, s, 1), GM_CUDA_SUCCESS, "an async copy into pinned memory");
    ok(all_bytes(pin, 0xEE, N), "read back without synchronizing: the old data");
    is_int(GM_DRV(stream_query, c, s), GM_CUDA_ERROR_NOT_READY, "stream_query: not ready");
    double t0 = now_ms();
    is_int(GM_DRV(stream_synchronize, c, s), GM_CUDA_SUCCESS, "stream_synchronize");
    double took = now_ms() - t0;
    ok(all_bytes(pin, 0x5A, N), "after synchronizing: the new data");
    ok(took < DELAY_MS / 2, "a synchronize does not wait for the delay (%.1f ms)", took);
    is_int(GM_DRV(stream_query, c, s), GM_CUDA_SUCCESS, "stream_query: done");

    /* pageable memory */
    memset(page, 0x21, N);
    is_int(GM_DRV(memcpy, c, d, H(page), N, s, 1), GM_CUDA_SUCCESS, "an async copy from pageable memory");
    memset(page, 0x22, N);
    GM_DRV(stream_synchronize, c, s);
    d2h(c, pin, d, N);
    ok(all_bytes(pin, 0x21, N), "copied what the source held at the call (staged)");
    GM_DRV(memset, c, d, 0x23, 1, N, s, 1);
    is_int(GM_DRV(memcpy, c, H(page), d, N, s, 1), GM_CUDA_SUCCESS, "an async copy into pageable memory");
    ok(all_bytes(page, 0x23, N), "is synchronous, as on the driver");

    /* polling never hurries work */
    GM_DRV(memset, c, d, 0x24, 1, N, nb, 1);
    t0 = now_ms();
    int rc;
    while ((rc = GM_DRV(stream_query, c, nb)) == GM_CUDA_ERROR_NOT_READY && now_ms() - t0 < 5000)
        usleep(2000);
    took = now_ms() - t0;
    is_int(rc, GM_CUDA_SUCCESS, "polled work completes on its own");
    ok(took >= DELAY_MS * 0.9, "after the delay (%.1f ms)", took);

    /* legacy default stream */
    gm_cu_deviceptr e = 0, f = 0;
    GM_DRV(mem_alloc, c, &e, N);
    GM_DRV(mem_alloc, c, &f, N);
    GM_DRV(memset, c, e, 0, 1, N, NULL, 0);
    GM_DRV(memset, c, f, 0, 1, N, NULL, 0);
    memset(pin, 0x31, N);
    GM_DRV(memcpy, c, e, H(pin), N, s, 1);
    GM_DRV(memset, c, f, 0x32, 1, N, nb, 1);
    t0 = now_ms();
    d2h(c, page, e, N);
    took = now_ms() - t0;
    ok(all_bytes(page, 0x31, N), "the default stream waits for a blocking stream's earlier work");
    ok(took < DELAY_MS / 2, "without waiting for the delay (%.1f ms)", took);
    d2h(c, page, f, N);
    ok(all_bytes(page, 0, N), "but not for a non-blocking stream's");
    GM_DRV(stream_synchronize, c, nb);
    d2h(c, page, f, N);
    ok(all_bytes(page, 0x32, N), "which is done once that stream is synchronized");

    GM_DRV(memset, c, e, 0x41, 1, N, NULL, 1);
    memset(pin, 0, N);
    GM_DRV(memcpy, c, H(pin), e, N, s, 1);
    GM_DRV(stream_synchronize, c, s);
    ok(all_bytes(pin, 0x41, N), "a blocking stream waits for the default stream's earlier work");
    GM_DRV(memset, c, f, 0x42, 1, N, NULL, 1);
    memset(pin, 0, N);
    GM_DRV(memcpy, c, H(pin), f, N, nb, 1);
    GM_DRV(stream_synchronize, c, nb);
    ok(all_bytes(pin, 0x32, N), "a non-blocking stream does not");
    is_int(GM_DRV(ctx_synchronize, c), GM_CUDA_SUCCESS, "ctx_synchronize");
    is_int(GM_DRV(stream_query, c, NULL), GM_CUDA_SUCCESS, "leaves the default stream idle");
    d2h(c, page, f, N);
    ok(all_bytes(page, 0x42, N), "with its work done");

    GM_DRV(mem_free, c, e);
    GM_DRV(mem_free, c, f);
    GM_DRV(mem_free, c, d);
    GM_DRV(mem_free_host, c, pin);
    is_int(GM_DRV(stream_destroy, c, s), GM_CUDA_SUCCESS, "stream_destroy");
    is_int(GM_DRV(stream_query, c, s), GM_CUDA_ERROR_INVALID_HANDLE, "a destroyed stream is no handle");
    is_int(GM_DRV(stream_destroy, c, NULL), GM_CUDA_ERROR_INVALID_HANDLE, "the default stream cannot be destroyed");
    GM_DRV(stream_destroy, c, nb);
    is_int(gm_sim_live_workers(), base_workers, "their workers are joined");
}

void test_events(gm_dctx *c, gm_dctx *c1)
{
    enum { N = 1024 };
    gm_dstream *s = NULL, *a = NULL, *w = NULL;
    gm_devent *e1 = NULL, *e2 = NULL, *nt = NULL, *ev = NULL;
    GM_DRV(stream_create, c, &s, 0);
    GM_DRV(stream_create, c, &a, GM_CU_STREAM_NON_BLOCKING);
    GM_DRV(stream_create, c, &w, GM_CU_STREAM_NON_BLOCKING);
    is_int(GM_DRV(event_create, c, &e1, 0x40), GM_CUDA_ERROR_INVALID_VALUE, "an unknown event flag");
    GM_DRV(event_create, c, &e1, GM_CU_EVENT_DEFAULT);
    GM_DRV(event_create, c, &e2, GM_CU_EVENT_BLOCKING_SYNC);
    GM_DRV(event_create, c, &nt, GM_CU_EVENT_DISABLE_TIMING);
    GM_DRV(event_create, c, &ev, GM_CU_EVENT_DISABLE_TIMING);
    float ms = -1;
    is_int(GM_DRV(event_query, c, e1), GM_CUDA_SUCCESS, "an event never recorded is complete");
    is_int(GM_DRV(event_elapsed_time, c, &ms, e1, e2), GM_CUDA_ERROR_INVALID_HANDLE,
           "elapsed time of events never recorded");

    gm_cu_deviceptr d = 0, d2 = 0;
    unsigned char *pin = NULL;
    GM_DRV(mem_alloc, c, &d, N);
    GM_DRV(mem_alloc, c, &d2, N);
    GM_DRV(mem_host_alloc, c, (void **)&pin, N, 0);
    GM_DRV(memset, c, d, 0, 1, N, NULL, 0);
    GM_DRV(memset, c, d2, 0, 1, N, NULL, 0);

    GM_DRV(event_record, c, e1, s);
    GM_DRV(memset, c, d, 0x51, 1, N, s, 1);
    is_int(GM_DRV(event_record, c, e2, s), GM_CUDA_SUCCESS, "event_record");
    is_int(GM_DRV(event_query, c, e2), GM_CUDA_ERROR_NOT_READY, "event_query before the work ran");
    is_int(GM_DRV(event_elapsed_time, c, &ms, e1, e2), GM_CUDA_ERROR_NOT_READY, "elapsed time: not ready");
    double t0 = now_ms();
    is_int(GM_DRV(event_synchronize, c, e2), GM_CUDA_SUCCESS, "event_synchronize");
    ok(now_ms() - t0 < DELAY_MS / 2, "without waiting for the delay");
    ok(GM_DRV(event_query, c, e1) == GM_CUDA_SUCCESS && GM_DRV(event_query, c, e2) == GM_CUDA_SUCCESS,
       "both events are complete (FIFO)");
    is_int(GM_DRV(event_elapsed_time, c, &ms, e1, e2), GM_CUDA_SUCCESS, "event_elapsed_time");
    is_int(GM_DRV(event_elapsed_time, c1, &ms, e1, e2), GM_CUDA_ERROR_INVALID_CONTEXT,
           "elapsed time asked in another device's context");
    ok(ms >= 0 && ms < 1000, "a plausible time between the records (%.3f ms)", (double)ms);
    GM_DRV(event_record, c, nt, s);
    GM_DRV(event_synchronize, c, nt);
    is_int(GM_DRV(event_elapsed_time, c, &ms, e1, nt), GM_CUDA_ERROR_INVALID_HANDLE,
           "an event without timing has no elapsed time");

    /* stream_wait_event orders two non-blocking streams */
    GM_DRV(memset, c, d, 0x61, 1, N, a, 1);
    GM_DRV(event_record, c, ev, a);
    is_int(GM_DRV(stream_wait_event, c, w, ev), GM_CUDA_SUCCESS, "stream_wait_event");
    memset(pin, 0, N);
    GM_DRV(memcpy, c, H(pin), d, N, w, 1);
    t0 = now_ms();
    GM_DRV(stream_synchronize, c, w);
    double took = now_ms() - t0;
    ok(all_bytes(pin, 0x61, N), "the waiting stream sees the work before the event");
    ok(took < DELAY_MS / 2, "synchronizing it hurried the awaited stream too (%.1f ms)", took);
    GM_DRV(memset, c, d2, 0x62, 1, N, a, 1);
    memset(pin, 0, N);
    GM_DRV(memcpy, c, H(pin), d2, N, w, 1);
    GM_DRV(stream_synchronize, c, w);
    ok(all_bytes(pin, 0, N), "without the wait it does not");

    /* handles */
    gm_dstream *s1 = NULL;
    gm_devent *ev1 = NULL;
    GM_DRV(stream_create, c1, &s1, 0);
    GM_DRV(event_create, c1, &ev1, 0);
    is_int(GM_DRV(stream_query, c, s1), GM_CUDA_ERROR_INVALID_CONTEXT, "another device's stream");
    is_int(GM_DRV(event_record, c, ev1, s), GM_CUDA_ERROR_INVALID_CONTEXT, "another device's event");
    GM_DRV(event_record, c1, ev1, s1);
    is_int(GM_DRV(stream_wait_event, c, s, ev1), GM_CUDA_SUCCESS,
           "a stream may wait for another device's event, as on the driver");
    is_int(GM_DRV(stream_synchronize, c, s), GM_CUDA_SUCCESS, "and synchronizes through it");
    is_int(GM_DRV(event_query, c1, ev1), GM_CUDA_SUCCESS, "hurrying the other device's work");
    GM_DRV(event_destroy, c, e2);
    is_int(GM_DRV(event_query, c, e2), GM_CUDA_ERROR_INVALID_HANDLE, "a destroyed event is no handle");
    is_int(GM_DRV(event_record, c, NULL, s), GM_CUDA_ERROR_INVALID_HANDLE, "a NULL event");

    GM_DRV(stream_destroy, c1, s1);
    GM_DRV(event_destroy, c1, ev1);
    GM_DRV(event_destroy, c, e1);
    GM_DRV(event_destroy, c, nt);
    GM_DRV(event_destroy, c, ev);
    GM_DRV(stream_destroy, c, s);
    GM_DRV(stream_destroy, c, a);
    GM_DRV(stream_destroy, c, w);
    GM_DRV(mem_free, c, d);
    GM_DRV(mem_free, c, d2);
    GM_DRV(mem_free_host, c, pin);
}

typedef struct trace {
    int order[8];
    atomic_int n;
    pthread_t thread[8];
} trace;

typedef struct step {
    trace *t;
    int id;
} step;

static void note(void *arg)
{
    step *st = arg;
    int i = atomic_fetch_add(&st->t->n, 1);
    st->t->order[i] = st->id;
    st->t->thread[i] = pthread_self();
}

void test_host_funcs(gm_dctx *c)
{
    gm_dstream *s = NULL;
    GM_DRV(stream_create, c, &s, 0);
    gm_cu_deviceptr d = 0;
    GM_DRV(mem_alloc, c, &d, 256);
    trace t = {.n = 0};
    step steps[8];
    for (int i = 0; i < 5; i++) {
        steps[i] = (step){&t, i};
        GM_DRV(launch_host_func, c, s, note, &steps[i]);
        GM_DRV(memset, c, d, (unsigned)i, 1, 256, s, 1);
    }
    is_int(atomic_load(&t.n), 0, "host functions wait for their turn");
    GM_DRV(stream_synchronize, c, s);
    ok(atomic_load(&t.n) == 5 && t.order[0] == 0 && t.order[1] == 1 && t.order[2] == 2 &&
       t.order[3] == 3 && t.order[4] == 4, "host functions run once each, in order");
    ok(!pthread_equal(t.thread[0], pthread_self()), "on the stream's worker thread");

    /* blocking stream, default stream, blocking stream */
    trace u = {.n = 0};
    step us[3] = {{&u, 0}, {&u, 1}, {&u, 2}};
    GM_DRV(launch_host_func, c, s, note, &us[0]);
    GM_DRV(launch_host_func, c, NULL, note, &us[1]);
    GM_DRV(launch_host_func, c, s, note, &us[2]);
    GM_DRV(ctx_synchronize, c);
    ok(atomic_load(&u.n) == 3 && u.order[0] == 0 && u.order[1] == 1 && u.order[2] == 2,
       "the legacy default stream orders host functions across streams");
    is_int(GM_DRV(launch_host_func, c, s, NULL, NULL), GM_CUDA_ERROR_INVALID_VALUE, "a NULL host function");
    GM_DRV(stream_destroy, c, s);
    GM_DRV(mem_free, c, d);
}

/* ---- the last release, stress ---------------------------------------------- */

void test_release(gm_dctx **c1p)
{
    gm_dctx *c1 = *c1p;
    gm_cu_deviceptr d = 0, m = 0;
    gm_dstream *s = NULL;
    gm_devent *ev = NULL;
    GM_DRV(mem_alloc, c1, &d, 8 * MiB);
    GM_DRV(mem_alloc_managed, c1, &m, MiB, GM_CU_MEM_ATTACH_HOST);
    GM_DRV(stream_create, c1, &s, 0);
    unsigned workers = gm_sim_live_workers();
    GM_DRV(event_create, c1, &ev, 0);
    GM_DRV(memset, c1, d, 1, 1, 8 * MiB, s, 1);
    GM_DRV(event_record, c1, ev, s);
    is_int(free_of(c1), CAPACITY - 9 * MiB, "device 1 has 9M in use");
    is_int(GM_DRV(primary_ctx_release, 1), GM_CUDA_SUCCESS, "the last release of device 1");
    is_int(GM_DRV(primary_ctx_release, 1), GM_CUDA_ERROR_INVALID_CONTEXT, "one release too many");
    is_int(gm_sim_live_workers(), workers - 2, "its stream and default stream are gone");
    gm_cu_deviceptr x;
    is_int(GM_DRV(mem_alloc, c1, &x, 16), GM_CUDA_ERROR_INVALID_CONTEXT, "a released context is refused");
    gm_dctx *again = NULL;
    GM_DRV(primary_ctx_retain, 1, &again);
    is_int(free_of(again), CAPACITY, "retained again: its memory was freed");
    gm_sim_ptr_info info;
    ok(gm_sim_pointer_info(d, &info) != GM_CUDA_SUCCESS && gm_sim_pointer_info(m, &info) != GM_CUDA_SUCCESS,
       "device and managed allocations are gone");
    unsigned char b[16];
    is_int(d2h(again, b, d, 16), GM_CUDA_ERROR_INVALID_VALUE, "a copy from its old memory");
    is_int(GM_DRV(stream_query, again, s), GM_CUDA_ERROR_INVALID_HANDLE, "its old stream");
    is_int(GM_DRV(event_query, again, ev), GM_CUDA_ERROR_INVALID_HANDLE, "its old event");
    *c1p = again;
}

typedef struct stress {
    gm_dctx *ctx;
    unsigned seed;
    atomic_int *failures;
} stress;

static void *stress_main(void *arg)
{
    stress *st = arg;
    unsigned char src[4096], back[4096];
    gm_dstream *s = NULL;
    int fails = GM_DRV(stream_create, st->ctx, &s, GM_CU_STREAM_NON_BLOCKING) != GM_CUDA_SUCCESS;
    for (int i = 0; i < 300; i++) {
        size_t n = 1 + rand_r(&st->seed) % sizeof src;
        gm_cu_deviceptr d = 0;
        if (GM_DRV(mem_alloc, st->ctx, &d, n) != GM_CUDA_SUCCESS) {
            fails++;
            continue;
        }
        pattern(src, n, st->seed);
        memset(back, 0, n);
        int async = i % 2;
        fails += GM_DRV(memcpy, st->ctx, d, H(src), n, s, async) != GM_CUDA_SUCCESS;
        fails += GM_DRV(memcpy, st->ctx, H(back), d, n, s, async) != GM_CUDA_SUCCESS;
        fails += memcmp(src, back, n) != 0;
        fails += GM_DRV(mem_free, st->ctx, d) != GM_CUDA_SUCCESS;
        if (i % 50 == 0) {
            fails += GM_DRV(stream_destroy, st->ctx, s) != GM_CUDA_SUCCESS;
            fails += GM_DRV(stream_create, st->ctx, &s, 0) != GM_CUDA_SUCCESS;
        }
    }
    fails += GM_DRV(stream_destroy, st->ctx, s) != GM_CUDA_SUCCESS;
    atomic_fetch_add(st->failures, fails);
    return NULL;
}

void test_stress(gm_dctx *c0, gm_dctx *c1)
{
    enum { THREADS = 8 };
    pthread_t th[THREADS];
    stress st[THREADS];
    atomic_int failures = 0;
    unsigned workers = gm_sim_live_workers();
    for (int i = 0; i < THREADS; i++) {
        st[i] = (stress){i % 2 ? c1 : c0, 1234u + (unsigned)i, &failures};
        pthread_create(&th[i], NULL, stress_main, &st[i]);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    is_int(atomic_load(&failures), 0, "8 threads allocating, copying, verifying and freeing at once");
    ok(free_of(c0) == CAPACITY && free_of(c1) == CAPACITY, "leave no memory in use");
    is_int(gm_sim_live_workers(), workers, "and no worker behind");
}
