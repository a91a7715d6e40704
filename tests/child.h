/*
 * child.h - run a test case in a forked child process.
 *
 * The backend and the default context are chosen once per process, so cases
 * that need another environment (CUDA_DEVICE, HOME, GPUMEM_SIM_*) run in a
 * child: the case sets its environment, calls the library and fills a
 * child_result, which comes back through a pipe.  Fork before the parent
 * has touched the library (it starts threads on the simulator).
 */
#ifndef GPUMEM_TEST_CHILD_H
#define GPUMEM_TEST_CHILD_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gpumem.h>

#include "tap.h"

typedef struct child_result {
    int status;      /* a gpumem_status */
    long value[8];   /* case-defined values */
    char text[1024]; /* usually gpumem_last_error() */
    char note[256];  /* case-defined */
    /* filled by run_child: */
    int exited;      /* 1 when the child exited normally */
    int exit_code;
} child_result;

typedef void (*child_fn)(const void *arg, child_result *out);

static int run_child(child_fn fn, const void *arg, child_result *res) __attribute__((unused));
static int run_child(child_fn fn, const void *arg, child_result *res)
{
    int fds[2];
    memset(res, 0, sizeof *res);
    fflush(stdout);
    fflush(stderr);
    if (pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        close(fds[0]);
        child_result r;
        memset(&r, 0, sizeof r);
        fn(arg, &r);
        ssize_t n = write(fds[1], &r, sizeof r);
        _exit(n == (ssize_t)sizeof r ? 0 : 3);
    }
    close(fds[1]);
    size_t got = 0;
    while (got < sizeof *res) {
        ssize_t n = read(fds[0], (char *)res + got, sizeof *res - got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fds[0]);
    int wstatus = 0;
    waitpid(pid, &wstatus, 0);
    res->exited = WIFEXITED(wstatus);
    res->exit_code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
    return got == sizeof *res ? 0 : -1;
}

/* Writes text to dir/name (creating it), for ~/.cuda-device cases. */
static void write_file(const char *dir, const char *name, const char *text) __attribute__((unused));
static void write_file(const char *dir, const char *name, const char *text)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        perror(path);
        exit(99);
    }
    fputs(text, f);
    fclose(f);
}

/* A fresh empty directory to serve as HOME. */
static char *make_home(void) __attribute__((unused));
static char *make_home(void)
{
    const char *tmp = getenv("TMPDIR");
    char *dir = malloc(1024);
    snprintf(dir, 1024, "%s/gpumem-test-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        exit(99);
    }
    return dir;
}

static void remove_home(char *dir) __attribute__((unused));
static void remove_home(char *dir)
{
    char path[1100];
    snprintf(path, sizeof path, "%s/.cuda-device", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/.cuda_device", dir);
    unlink(path);
    rmdir(dir);
    free(dir);
}

/* In a child of the fault walk: arms the k-th driver call from now to fail
 * with CUDA_ERROR_UNKNOWN (none for k <= 0) and gives the count of driver
 * calls so far, for fault_disarm. */
static uint64_t fault_arm(long k) __attribute__((unused));
static uint64_t fault_arm(long k)
{
    uint64_t calls = 0;
    gpumem_debug_driver_calls(NULL, &calls);
    if (k > 0)
        gpumem_debug_fail_call((uint64_t)k, 999 /* CUDA_ERROR_UNKNOWN */);
    return calls;
}

/* Disarms fault_arm's failure; the driver calls made since it (calls0). */
static long fault_disarm(uint64_t calls0) __attribute__((unused));
static long fault_disarm(uint64_t calls0)
{
    uint64_t calls = 0;
    gpumem_debug_fail_call(0, 0);
    gpumem_debug_driver_calls(NULL, &calls);
    return (long)(calls - calls0);
}

/* The fault walk: runs fn (the workload, arg a long k) in a child for every
 * k from 1 to n with the k-th driver call failing (fn arms it with
 * gpumem_debug_fail_call(k, CUDA_ERROR_UNKNOWN)).  fn reports its status,
 * its last error in text, and in value[1] the memory it did not give back.
 * Two TAP results: every run failed cleanly (an error, no crash, nothing kept
 * unless the failed call was `free_call`, whose bytes cannot come back), and
 * every message names the injected error. */
static void fault_walk(child_fn fn, long n, const char *free_call) __attribute__((unused));
static void fault_walk(child_fn fn, long n, const char *free_call)
{
    int clean = 1, named = 1;
    child_result r;
    for (long k = 1; k <= n; k++) {
        run_child(fn, &k, &r);
        int failed = r.exited && r.exit_code == 0 && r.status != 0 && r.status != -1;
        int leak_ok = r.value[1] == 0 || strstr(r.text, free_call) != NULL;
        if (!failed || !leak_ok) {
            clean = 0;
            diag("call %ld: exit %d, status %d, %ld bytes kept: %s", k, r.exit_code, r.status, r.value[1], r.text);
        }
        if (strstr(r.text, "CUDA_ERROR_UNKNOWN") == NULL) {
            named = 0;
            diag("call %ld: message without the driver error: %s", k, r.text);
        }
    }
    ok(clean, "failing any one of the %ld calls fails the workload cleanly, without leaks", n);
    ok(named, "every failure's message names the injected driver error");
}

/* The number of devices, counted in a child: CUDA cannot be used in a child
 * forked after the parent initialized it, and later cases run in children.
 * -1 when the count fails. */
static void child_count_case(const void *arg, child_result *out)
{
    (void)arg;
    int count = 0;
    out->status = gpumem_device_count(&count);
    out->value[0] = count;
}
static int child_device_count(void) __attribute__((unused));
static int child_device_count(void)
{
    child_result r;
    run_child(child_count_case, NULL, &r);
    return r.exited && r.exit_code == 0 && r.status == 0 ? (int)r.value[0] : -1;
}

/* For a fault walk's workload: the gpumem_status st in scope keeps the
 * first failing status of the calls, and fault_msg that failure's message
 * (a later failure or a cleanup may set gpumem_last_error() again). */
static char fault_msg[1024] __attribute__((unused));
#define FAULT_FIRST(call)                                                                                  \
    do {                                                                                                   \
        gpumem_status st_ = (call);                                                                        \
        if (st_ != GPUMEM_OK && st == GPUMEM_OK) {                                                         \
            st = st_;                                                                                      \
            snprintf(fault_msg, sizeof fault_msg, "%s", gpumem_last_error());                              \
        }                                                                                                  \
    } while (0)

/* The whole walk of a workload: fn run without injection (k = 0) must
 * succeed, make at least `least` driver calls (value[0], fault_disarm's)
 * and keep no `memory` memory (value[1]); then fault_walk over its calls.
 * Five TAP results; `what` names the workload. */
static void fault_walk_all(child_fn fn, const char *what, long least, const char *memory, const char *free_call)
    __attribute__((unused));
static void fault_walk_all(child_fn fn, const char *what, long least, const char *memory, const char *free_call)
{
    child_result r;
    long k = 0;
    char name[256];
    run_child(fn, &k, &r);
    snprintf(name, sizeof name, "%s succeeds without injection", what);
    is_int(r.status, GPUMEM_OK, name);
    long n = r.value[0];
    ok(n >= least, "it makes %ld driver calls", n);
    snprintf(name, sizeof name, "and gives all %s memory back", memory);
    is_int(r.value[1], 0, name);
    fault_walk(fn, n, free_call);
}

/* This program's path, to run it again (exec): argv0 when it is a path
 * (under valgrind /proc/self/exe names valgrind itself), else
 * /proc/self/exe. */
static const char *child_self_path(const char *argv0) __attribute__((unused));
static const char *child_self_path(const char *argv0)
{
    return argv0 != NULL && strchr(argv0, '/') != NULL ? argv0 : "/proc/self/exe";
}

#endif /* GPUMEM_TEST_CHILD_H */
