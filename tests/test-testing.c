/* gpumem_test_context (pycuda's mark_cuda_test): a context for a test, or a
 * one-line reason to skip, and misconfigurations that are failures, not
 * skips.  The cases with another environment run in children. */
#include <stdlib.h>
#include <string.h>

#include <gpumem.h>

#include "child.h"
#include "tap.h"

/* arg: "VAR=value;VAR=value" set before the library is touched. */
static void case_env(const void *arg, child_result *out)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", (const char *)arg);
    for (char *tok = strtok(buf, ";"); tok != NULL; tok = strtok(NULL, ";")) {
        char *eq = strchr(tok, '=');
        if (eq != NULL) {
            *eq = '\0';
            setenv(tok, eq + 1, 1);
        }
    }
    gpumem_context *ctx = NULL;
    out->status = gpumem_test_context(&ctx, out->text, sizeof out->text);
    out->value[0] = ctx != NULL;
    out->value[1] = gpumem_test_should_skip(out->status);
    gpumem_context_release(ctx);
}

static child_result run(const char *env)
{
    child_result r;
    if (run_child(case_env, env, &r) != 0 || !r.exited || r.exit_code != 0)
        bail_out("child for '%s' died (exit %d)", env, r.exit_code);
    return r;
}

int main(void)
{
    /* before the parent touches the library */
    char *home = make_home();
    char env[700];

    snprintf(env, sizeof env, "GPUMEM_BACKEND=cuda;GPUMEM_CUDA_LIBRARY=/nonexistent/libcuda.so.1;HOME=%s", home);
    child_result nodrv = run(env);
    snprintf(env, sizeof env, "GPUMEM_BACKEND=sim;GPUMEM_SIM_DEVICES=2;GPUMEM_SIM_BUSY=0,1;HOME=%s", home);
    child_result busy = run(env);
    snprintf(env, sizeof env, "GPUMEM_BACKEND=sim;CUDA_DEVICE=abc;HOME=%s", home);
    child_result badenv = run(env);
    snprintf(env, sizeof env, "GPUMEM_BACKEND=sim;GPUMEM_SIM_DEVICES=3;CUDA_DEVICE=2;HOME=%s", home);
    child_result chosen = run(env);
    remove_home(home);

    plan(21);
    is_int(nodrv.status, GPUMEM_ERROR_DRIVER_NOT_FOUND, "no driver: DRIVER_NOT_FOUND");
    ok(nodrv.value[1], "...which is a skip");
    like(nodrv.text, "no CUDA driver: ", "the reason says so");
    like(nodrv.text, "/nonexistent/libcuda.so.1", "and names the library");
    ok(strchr(nodrv.text, '\n') == NULL, "on one line");
    ok(!nodrv.value[0], "no context");

    is_int(busy.status, GPUMEM_ERROR_NO_DEVICE, "every device busy: NO_DEVICE");
    ok(busy.value[1], "...a skip");
    like(busy.text, "no CUDA device: ", "the reason");

    is_int(badenv.status, GPUMEM_ERROR_INVALID_ENVIRONMENT, "CUDA_DEVICE=abc: INVALID_ENVIRONMENT");
    ok(!badenv.value[1], "...a failure, not a skip");
    like(badenv.text, "CUDA_DEVICE='abc'", "the reason names the variable");

    is_int(chosen.status, GPUMEM_OK, "CUDA_DEVICE=2 on three devices");
    ok(chosen.value[0] && chosen.text[0] == '\0', "a context and an empty reason");

    /* in this process: the suite's backend */
    char why[256] = "untouched";
    gpumem_context *ctx = NULL;
    gpumem_status st = gpumem_test_context(&ctx, why, sizeof why);
    if (st != GPUMEM_OK && gpumem_test_should_skip(st)) {
        skip(7, why);
        return exit_status();
    }
    is_int(st, GPUMEM_OK, "a context on this machine");
    is_str(why, "", "an empty reason");
    int refs = 0;
    gpumem_context_refcount(ctx, &refs);
    is_int(refs, 1, "a new reference for the test");
    is_int(gpumem_context_release(ctx), GPUMEM_OK, "which the test releases");
    is_int(gpumem_test_context(NULL, why, sizeof why), GPUMEM_ERROR_NULL_ARGUMENT, "ctx NULL");
    is_int(gpumem_test_context(&ctx, NULL, 16), GPUMEM_ERROR_NULL_ARGUMENT, "reason NULL with a size");
    ctx = NULL;
    is_int(gpumem_test_context(&ctx, NULL, 0), GPUMEM_OK, "reason NULL with size 0");
    gpumem_context_release(ctx);
    return exit_status();
}
