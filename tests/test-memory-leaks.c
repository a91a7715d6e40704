/*
 * test-memory-leaks.c - GPUMEM_DEBUG=leaks names a leak's call site by
 * source file and line (gpumem/memory.h, "Leaks").  This program is built
 * with -g and without -rdynamic; it runs itself as a child with
 * GPUMEM_DEBUG=leaks, and the child leaks an array made at a known line.
 * With libdw the listing must say "leak_one_array (…test-memory-leaks.c:N)"
 * and name its caller's line too; without it (configure found no libdw),
 * the sites read object(+offset) [address], and the file and line checks
 * are skipped with that reason.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gpumem.h>

#include "tap.h"

static int leak_line, call_line; /* the lines of the allocation and of its call */

__attribute__((noinline)) static gpumem_array *leak_one_array(gpumem_context *ctx)
{
    gpumem_array *a = NULL;
    const int64_t n = 1000;
    leak_line = __LINE__ + 1;
    gpumem_status st = gpumem_device_array(ctx, 1, &n, NULL, gpumem_dtype_builtin(GPUMEM_FLOAT32), 'C', NULL, &a);
    return st == GPUMEM_OK ? a : NULL;
}

static int child(void)
{
    gpumem_context *ctx = NULL;
    if (gpumem_context_create(0, &ctx) != GPUMEM_OK)
        return 2;
    call_line = __LINE__ + 1;
    gpumem_array *leaked = leak_one_array(ctx);
    printf("%d %d\n", leak_line, call_line);
    return leaked != NULL ? 0 : 3; /* the end of the process lists the array and its context */
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "child") == 0)
        return child();
    char errpath[] = "/tmp/gpumem-test-leaks-errXXXXXX", outpath[] = "/tmp/gpumem-test-leaks-outXXXXXX";
    int efd = mkstemp(errpath), ofd = mkstemp(outpath);
    if (efd < 0 || ofd < 0)
        bail_out("mkstemp failed");
    unlink(errpath);
    unlink(outpath);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(efd, 2);
        dup2(ofd, 1);
        setenv("GPUMEM_DEBUG", "leaks", 1);
        /* argv[0] when it is a path: under valgrind /proc/self/exe names valgrind */
        execl(strchr(argv[0], '/') != NULL ? argv[0] : "/proc/self/exe", argv[0], "child", (char *)NULL);
        _exit(127);
    }
    int ws = 0;
    waitpid(pid, &ws, 0);
    static char err[16384];
    char out[64];
    ssize_t n = pread(efd, err, sizeof err - 1, 0);
    err[n > 0 ? n : 0] = '\0';
    n = pread(ofd, out, sizeof out - 1, 0);
    out[n > 0 ? n : 0] = '\0';
    out[strcspn(out, "\n")] = '\0';
    int lline = 0, cline = 0;
    ok(WIFEXITED(ws) && WEXITSTATUS(ws) == 0 && sscanf(out, "%d %d", &lline, &cline) == 2 && lline > 0,
       "the child leaks an array and exits normally (%s)", out);
    like(err, "gpumem:   array of 4000 bytes of device memory, made by gpumem_device_array, at ",
         "the leak is listed");
#ifdef GM_HAVE_LIBDW
    char want[128];
    snprintf(want, sizeof want, "at leak_one_array (");
    like(err, want, "named by its function, without -rdynamic (libdw reads the symbol table)");
    snprintf(want, sizeof want, "test-memory-leaks.c:%d) < ", lline);
    like(err, want, "at the allocation's source file and line");
    snprintf(want, sizeof want, " < child (");
    ok(strstr(err, want) != NULL || strstr(err, " < main (") != NULL, "then its caller, by name");
    snprintf(want, sizeof want, "test-memory-leaks.c:%d)", cline);
    like(err, want, "at the line of the call");
    ok(strstr(err, "leak_one_array+0x") == NULL, "not as symbol+offset");
#else
    like(err, "[0x", "the site as object(+offset) [address]");
    skip(5, "built without libdw (configure found no pkg-config libdw; install libdw-dev): no file and line");
#endif
    close(efd);
    close(ofd);
    done_testing();
    return exit_status();
}
