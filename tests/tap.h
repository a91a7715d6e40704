/*
 * tap.h - a small TAP producer for libgpumem's tests (header-only).
 *
 *   plan(n) / plan_skip_all(reason) / done_testing()
 *   ok(cond, fmt, ...)            one result
 *   is_int(got, want, name)       integers, printing both on failure
 *   is_str(got, want, name)       strings (NULL-safe)
 *   like(got, needle, name)       substring match
 *   skip(n, reason)               n skipped results
 *   diag(fmt, ...)                a "# " comment line
 *   bail_out(fmt, ...)            "Bail out!" and exit
 *
 * Every program ends with return exit_status(); it is non-zero when any
 * result failed or the plan was not met.
 */
#ifndef GPUMEM_TAP_H
#define GPUMEM_TAP_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The counts: weak definitions, one set for the whole program, so that a
 * test made of several files, each including this header, numbers its
 * results in one sequence. */
__attribute__((weak)) int tap_run, tap_failed;
__attribute__((weak)) int tap_planned = -1;

static void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2), unused));
static void diag(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("# ", stdout);
    vprintf(fmt, ap);
    fputc('\n', stdout);
    va_end(ap);
    fflush(stdout);
}

static void plan(int n) __attribute__((unused));
static void plan(int n)
{
    tap_planned = n;
    printf("1..%d\n", n);
    fflush(stdout);
}

static void plan_skip_all(const char *reason) __attribute__((unused, noreturn));
static void plan_skip_all(const char *reason)
{
    printf("1..0 # SKIP %s\n", reason);
    fflush(stdout);
    exit(0);
}

static void bail_out(const char *fmt, ...) __attribute__((format(printf, 1, 2), unused, noreturn));
static void bail_out(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("Bail out! ", stdout);
    vprintf(fmt, ap);
    fputc('\n', stdout);
    va_end(ap);
    fflush(stdout);
    exit(255);
}

static int ok(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3), unused));
static int ok(int cond, const char *fmt, ...)
{
    va_list ap;
    tap_run++;
    if (!cond)
        tap_failed++;
    printf("%sok %d - ", cond ? "" : "not ", tap_run);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fputc('\n', stdout);
    fflush(stdout);
    return cond;
}

static int is_int_(long long got, long long want, const char *name) __attribute__((unused));
static int is_int_(long long got, long long want, const char *name)
{
    int r = ok(got == want, "%s", name);
    if (!r)
        diag("  got: %lld, expected: %lld", got, want);
    return r;
}
#define is_int(got, want, name) is_int_((long long)(got), (long long)(want), (name))

static int is_str(const char *got, const char *want, const char *name) __attribute__((unused));
static int is_str(const char *got, const char *want, const char *name)
{
    int r = ok(got != NULL && want != NULL ? strcmp(got, want) == 0 : got == want, "%s", name);
    if (!r)
        diag("  got: '%s', expected: '%s'", got ? got : "(null)", want ? want : "(null)");
    return r;
}

static int like(const char *got, const char *needle, const char *name) __attribute__((unused));
static int like(const char *got, const char *needle, const char *name)
{
    int r = ok(got != NULL && strstr(got, needle) != NULL, "%s", name);
    if (!r)
        diag("  '%s' does not contain '%s'", got ? got : "(null)", needle);
    return r;
}

static void skip(int n, const char *reason) __attribute__((unused));
static void skip(int n, const char *reason)
{
    for (int i = 0; i < n; i++) {
        tap_run++;
        printf("ok %d # SKIP %s\n", tap_run, reason);
    }
    fflush(stdout);
}

static void done_testing(void) __attribute__((unused));
static void done_testing(void)
{
    if (tap_planned < 0) {
        tap_planned = tap_run;
        printf("1..%d\n", tap_run);
        fflush(stdout);
    }
}

static int exit_status(void) __attribute__((unused));
static int exit_status(void)
{
    if (tap_planned >= 0 && tap_planned != tap_run) {
        diag("planned %d tests but ran %d", tap_planned, tap_run);
        return 1;
    }
    return tap_failed != 0;
}

/* The backend the suite runs on: "sim" unless GPUMEM_BACKEND says otherwise. */
static const char *test_backend(void) __attribute__((unused));
static const char *test_backend(void)
{
    const char *b = getenv("GPUMEM_BACKEND");
    return b != NULL && *b != '\0' ? b : "sim";
}

static int test_on_sim(void) __attribute__((unused));
static int test_on_sim(void)
{
    return strcmp(test_backend(), "sim") == 0;
}

#endif /* GPUMEM_TAP_H */
