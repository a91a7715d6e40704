/* pycuda.autoinit: one process-wide context, made once under concurrent first
 * calls, released at exit even when references outlive it, and a failure
 * that is remembered. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <gpumem.h>

#include "child.h"
#include "tap.h"

#define THREADS 16

static pthread_barrier_t barrier;
static gpumem_context *seen[THREADS];
static gpumem_status seen_status[THREADS];

static void *first_call(void *arg)
{
    long i = (long)arg;
    pthread_barrier_wait(&barrier);
    seen_status[i] = gpumem_autoinit(&seen[i]);
    return NULL;
}

/* Many threads at once: one context, one retain of the primary context. */
static void concurrent(const void *arg, child_result *out)
{
    (void)arg;
    pthread_t t[THREADS];
    pthread_barrier_init(&barrier, NULL, THREADS);
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, first_call, (void *)i);
    int same = 1;
    for (long i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        if (seen_status[i] != GPUMEM_OK || seen[i] != seen[0])
            same = 0;
    }
    out->value[0] = same;
    uint64_t retains = 0;
    gpumem_debug_driver_calls("cuDevicePrimaryCtxRetain", &retains);
    out->value[1] = (long)retains;
    int refs = 0;
    gpumem_context_refcount(seen[0], &refs);
    out->value[2] = refs;
    uint64_t f = 0, t_ = 0;
    out->status = gpumem_memory_info(NULL, &f, &t_); /* NULL is the autoinit context */
    out->value[3] = t_ > 0 && f <= t_;
}

/* Registered before autoinit, so it runs after autoinit's own exit handler:
 * the last reference is dropped once exit has begun, and that must not call
 * the driver, which may be tearing itself down. */
static gpumem_context *late;

static void release_late(void)
{
    uint64_t before = 0, after = 0;
    gpumem_debug_driver_calls(NULL, &before);
    gpumem_status st = gpumem_context_release(late);
    gpumem_debug_driver_calls(NULL, &after);
    _exit(st == GPUMEM_OK && after == before ? 0 : 20);
}

/* A failure is remembered: the second call fails the same way without
 * asking the driver again. */
static void remembered(const void *arg, child_result *out)
{
    (void)arg;
    setenv("CUDA_DEVICE", "junk", 1);
    gpumem_context *ctx = (gpumem_context *)&ctx;
    gpumem_status a = gpumem_autoinit(&ctx);
    char first[1024];
    snprintf(first, sizeof first, "%s", gpumem_last_error());
    uint64_t calls_before = 0, calls_after = 0;
    gpumem_debug_driver_calls(NULL, &calls_before);
    gpumem_status b = gpumem_autoinit(&ctx);
    gpumem_debug_driver_calls(NULL, &calls_after);
    out->status = a;
    out->value[0] = b == a;
    out->value[1] = strcmp(first, gpumem_last_error()) == 0;
    out->value[2] = (long)(calls_after - calls_before);
    snprintf(out->text, sizeof out->text, "%s", first);
    /* a call given the NULL context names itself, then the autoinit context */
    gpumem_array *d = NULL;
    out->value[3] = gpumem_device_array(NULL, 1, (int64_t[]){4}, NULL, gpumem_dtype_builtin(GPUMEM_INT32), 'C', NULL,
                                        &d);
    snprintf(out->note, sizeof out->note, "%s", gpumem_last_error());
}

int main(void)
{
    plan(13);
    child_result r;

    run_child(concurrent, NULL, &r);
    is_int(r.status, GPUMEM_OK, "autoinit and memory info on the NULL context");
    ok(r.value[0], "%d concurrent first calls all get the same context", THREADS);
    is_int(r.value[1], 1, "the primary context was retained once");
    is_int(r.value[2], 1, "the autoinit context holds one reference");
    ok(r.value[3], "memory info of the NULL context is the autoinit device's");

    /* exit() runs the atexit release while references remain. */
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        gpumem_context *ctx = NULL;
        if (gpumem_autoinit(&ctx) != GPUMEM_OK)
            exit(10);
        gpumem_context_retain(ctx);
        gpumem_context_retain(ctx);
        exit(0);
    }
    int ws = 0;
    waitpid(pid, &ws, 0);
    ok(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "exit() with outliving references is clean");

    pid = fork();
    if (pid == 0) {
        atexit(release_late);
        if (gpumem_autoinit(&late) != GPUMEM_OK)
            exit(10);
        gpumem_context_retain(late);
        exit(30);
    }
    waitpid(pid, &ws, 0);
    ok(WIFEXITED(ws) && WEXITSTATUS(ws) == 0,
       "the last release, after exit began, succeeds without calling the driver (%d)",
       WIFEXITED(ws) ? WEXITSTATUS(ws) : -1);

    run_child(remembered, NULL, &r);
    is_int(r.status, GPUMEM_ERROR_INVALID_ENVIRONMENT, "autoinit fails on a bad CUDA_DEVICE");
    ok(r.value[0] && r.value[1], "the second call reports the same failure and message");
    is_int(r.value[2], 0, "without calling the driver again");
    static const char head[] = "gpumem_autoinit: the autoinit context: CUDA_DEVICE";
    ok(strncmp(r.text, head, strlen(head)) == 0, "the message names the call, then the context: %s", r.text);
    is_int(r.value[3], GPUMEM_ERROR_INVALID_ENVIRONMENT, "a call on the NULL context fails the same way");
    static const char head2[] = "gpumem_device_array: the autoinit context: CUDA_DEVICE";
    ok(strncmp(r.note, head2, strlen(head2)) == 0, "and its message names that call, not gpumem_autoinit: %s",
       r.note);
    return exit_status();
}
