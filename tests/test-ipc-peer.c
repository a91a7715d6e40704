/* IPC across devices: a second process opens device 0's array in a context
 * of device 1.  Where the devices can address each other the array is
 * mapped peer-to-peer (no copy: writes reach the first process), otherwise
 * staged into a copy.  Needs two devices: a GPU machine with two, or the
 * simulator with GPUMEM_SIM_DEVICES=2 (its shared-memory IPC). */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gpumem.h>

#include "tap.h"

enum { N = 4096 };

typedef struct report {
    int status, kind, read_ok, write_ok, peer;
    char text[512];
} report;

static void child_main(int in, int out)
{
    gpumem_ipc_handle h;
    report rep;
    memset(&rep, 0, sizeof rep);
    if (read(in, &h, sizeof h) != (ssize_t)sizeof h)
        _exit(2);
    gpumem_context *c1 = NULL;
    const gpumem_dtype *i32 = gpumem_dtype_builtin(GPUMEM_INT32);
    gpumem_array *a = NULL, *hv = NULL;
    rep.status = gpumem_context_create(1, &c1);
    if (rep.status == GPUMEM_OK)
        rep.status = gpumem_ipc_open(c1, &h, &a);
    snprintf(rep.text, sizeof rep.text, "%s", rep.status == GPUMEM_OK ? "" : gpumem_last_error());
    if (rep.status == GPUMEM_OK) {
        gpumem_memory_kind kind;
        gpumem_array_kind(a, &kind);
        rep.kind = (int)kind;
        int32_t v[N];
        gpumem_host_array_wrap(v, 1, (int64_t[]){N}, NULL, i32, &hv);
        rep.read_ok = gpumem_array_copy(hv, a, NULL) == GPUMEM_OK;
        for (int i = 0; i < N; i++) {
            rep.read_ok &= v[i] == 7 * i;
            v[i] = -i;
        }
        rep.write_ok = gpumem_array_copy(a, hv, NULL) == GPUMEM_OK;
        gpumem_array_release(hv);
        gpumem_array_release(a);
    }
    gpumem_context_release(c1);
    _exit(write(out, &rep, sizeof rep) == (ssize_t)sizeof rep ? 0 : 3);
}

int main(void)
{
    if (test_on_sim())
        setenv("GPUMEM_SIM_DEVICES", "2", 1); /* two simulated devices, peers of each other */
    int to[2], from[2];
    if (pipe(to) != 0 || pipe(from) != 0)
        bail_out("pipe");
    fflush(stdout);
    pid_t pid = fork(); /* before the library starts the driver in this process */
    if (pid == 0) {
        close(to[1]);
        close(from[0]);
        child_main(to[0], from[1]);
    }
    close(to[0]);
    close(from[1]);
    int count = 0;
    if (gpumem_device_count(&count) != GPUMEM_OK || count < 2) {
        close(to[1]);
        waitpid(pid, NULL, 0);
        plan_skip_all("needs two devices (nvidia-h200-x2)");
    }
    plan(6);
    gpumem_context *c0 = NULL;
    gpumem_context_create(0, &c0);
    const gpumem_dtype *i32 = gpumem_dtype_builtin(GPUMEM_INT32);
    int32_t v[N];
    for (int i = 0; i < N; i++)
        v[i] = 7 * i;
    gpumem_array *hv = NULL, *d = NULL;
    gpumem_host_array_wrap(v, 1, (int64_t[]){N}, NULL, i32, &hv);
    gpumem_to_device(c0, hv, NULL, 0, &d);
    gpumem_ipc_handle h;
    is_int(gpumem_ipc_get_handle(d, &h), GPUMEM_OK, "a handle of an array on device 0");
    report rep;
    memset(&rep, 0, sizeof rep);
    ssize_t n = write(to[1], &h, sizeof h);
    ssize_t got = n == (ssize_t)sizeof h ? read(from[0], &rep, sizeof rep) : -1;
    int ws = 0;
    waitpid(pid, &ws, 0);
    if (!is_int(rep.status, GPUMEM_OK, "another process opens it in a context of device 1"))
        diag("%s", rep.text);
    ok(got == (ssize_t)sizeof rep && WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "the second process reported");
    ok(rep.read_ok, "it reads device 0's values from device 1");
    ok(rep.write_ok, "and writes through the opened array");
    int canpeer = 0;
    gpumem_copy_to_host(d, hv, NULL);
    /* Peer-mapped (foreign): the writes landed in device 0's memory.
     * Staged (a device copy): they stayed in the copy. */
    int all_written = 1;
    for (int i = 0; i < N; i++)
        all_written &= v[i] == -i;
    canpeer = rep.kind == GPUMEM_MEMORY_FOREIGN;
    if (canpeer)
        ok(all_written, "peer-to-peer: the first process sees the writes (no copy)");
    else
        ok(!all_written && v[1] == 7, "staged: the first process's array is untouched by the copy's writes");
    diag("opened as %s", canpeer ? "a peer mapping" : "a staged copy");
    gpumem_array_release(d);
    gpumem_array_release(hv);
    gpumem_context_release(c0);
    return exit_status();
}
