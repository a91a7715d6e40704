/* IPC of the driver's stream-ordered pool (gpumem/pool_ipc.h): a
 * GPUMEM_POOL_SOURCE_ASYNC pool made with handle_type
 * GPUMEM_POOL_HANDLE_POSIX_FD, shared by a parent (the exporter) with the
 * child it forks (the importer) over a socketpair: the pool's descriptor
 * (cuMemPoolExportToShareableHandle), allocations by 128-byte handles of
 * kind 2 carrying the driver's CUmemPoolPtrExportData; bytes written on
 * one side read on the other; an update of such an import maps nothing; a
 * handle of the other kind, or with bounds the driver's allocation does not
 * have, refused naming 'handle'; no descriptor leaked.
 *
 * GPU only: the simulator does not model the driver's stream-ordered
 * pools, so on it the test skips, saying so.  Run it with
 *     make check GPUMEM_BACKEND=cuda TESTS=tests/test-pool-ipc-async
 * Public API only. */
#include "config.h"

#include <stdint.h>
#include <string.h>
#include <sys/wait.h>

#include "gpumem.h"
#include "ipc-child.h"
#include "tap.h"

/* ---- the child: the importer (its results come back through a pipe) ---- */

static void importer(int s)
{
    static unsigned char buf[3 * M];
    char go = 0;
    if (read_full(s, &go, 1) != 0 || go != 'G')
        return; /* the parent has no stream-ordered pool: it skips */
    uint64_t fr = 0, total = 0;
    gpumem_memory_info(NULL, &fr, &total);
    int fds0 = count_fds();
    gpumem_pool_import *im = NULL;
    gpumem_status st = gpumem_pool_ipc_open(NULL, s, &im);
    report(st == GPUMEM_OK, "gpumem_pool_ipc_open imports the stream-ordered pool from its descriptor");
    if (st != GPUMEM_OK)
        return;
    gpumem_pool_ipc_handle ha, hb, bad;
    if (read_full(s, &ha, sizeof ha) != 0 || read_full(s, &hb, sizeof hb) != 0)
        _exit(4);
    uint64_t pa = 0, pa2 = 0, pb = 0;
    size_t size = 0;
    st = gpumem_pool_import_open_allocation(im, &ha, &pa, &size);
    report(st == GPUMEM_OK && size == 3 * M, "the allocation opens by its handle (cuMemPoolImportPointer)");
    report(xfer(pa, buf, 3 * M, 0) == GPUMEM_OK && check(buf, 3 * M, 7, 1), "the child reads the parent's bytes");
    fill(buf, 3 * M, 13, 5);
    report(xfer(pa, buf, 3 * M, 1) == GPUMEM_OK, "the child writes the allocation");
    report(gpumem_pool_import_open_allocation(im, &ha, &pa2, NULL) == GPUMEM_OK && pa2 == pa,
           "opening the same handle again gives the same address");
    report(gpumem_pool_import_open_allocation(im, &hb, &pb, &size) == GPUMEM_OK && size == M && pb != pa,
           "a second allocation opens");

    memcpy(&bad, &ha, sizeof bad);
    bad.bytes[56] = 1;
    report_err(gpumem_pool_import_open_allocation(im, &bad, &pb, NULL), GPUMEM_ERROR_INVALID_VALUE,
               "'handle' is of kind 1", "a virtual-memory pool's handle given to a stream-ordered import is refused");
    memcpy(&bad, &ha, sizeof bad);
    bad.bytes[60] = 1;
    report_err(gpumem_pool_import_open_allocation(im, &bad, &pb, NULL), GPUMEM_ERROR_INVALID_VALUE,
               "reserved bytes 57 to 63", "nonzero reserved bytes are refused");
    memcpy(&bad, &ha, sizeof bad);
    put64(bad.bytes + 24, UINT64_MAX - 5);
    report_err(gpumem_pool_import_open_allocation(im, &bad, &pb, NULL), GPUMEM_ERROR_INVALID_VALUE,
               "do not lie in the driver's allocation", "an offset past the driver's allocation is refused");
    memcpy(&bad, &ha, sizeof bad);
    put64(bad.bytes + 40, 1ull << 40);
    report_err(gpumem_pool_import_open_allocation(im, &bad, &pb, NULL), GPUMEM_ERROR_INVALID_VALUE,
               "the driver's import has", "an allocation size the driver's allocation does not have is refused");
    memcpy(&bad, &ha, sizeof bad);
    bad.bytes[16] ^= 2;
    report_err(gpumem_pool_import_open_allocation(im, &bad, &pb, NULL), GPUMEM_ERROR_INVALID_VALUE,
               "another pool", "a handle of another pool is refused");
    write_full(s, "A", 1);
    report(gpumem_pool_import_update(im, s) == GPUMEM_OK &&
               gpumem_pool_import_open_allocation(im, &ha, &pa2, NULL) == GPUMEM_OK && pa2 == pa,
           "an update of a stream-ordered import changes nothing");
    report(gpumem_pool_import_close(im) == GPUMEM_OK, "gpumem_pool_import_close frees the imported pointers");
    report(count_fds() == fds0, "the child's descriptors after the close are those before the open");
    write_full(s, "D", 1);
}

/* ---- the parent: the exporter ---- */

/* 1: it ran; 0: no stream-ordered pool here (skipped). */
static int exporter(int s)
{
    static unsigned char buf[3 * M];
    struct gpumem_pool_props props = GPUMEM_POOL_PROPS_INIT;
    props.source = GPUMEM_POOL_SOURCE_ASYNC;
    props.handle_type = GPUMEM_POOL_HANDLE_POSIX_FD;
    gpumem_pool *pool = NULL;
    gpumem_status st = gpumem_pool_create_with_props(NULL, &props, &pool);
    if (st == GPUMEM_ERROR_NOT_SUPPORTED) {
        write_full(s, "S", 1);
        diag("%s", gpumem_last_error());
        return 0;
    }
    if (st != GPUMEM_OK)
        bail_out("an exportable stream-ordered pool: %s", gpumem_last_error());
    write_full(s, "G", 1);
    gpumem_allocation *a = NULL, *b = NULL;
    uint64_t pa = 0;
    if (gpumem_pool_allocate(pool, 3 * M, NULL, &a) != GPUMEM_OK || gpumem_allocation_pointer(a, &pa) != GPUMEM_OK ||
        gpumem_pool_allocate(pool, M, NULL, &b) != GPUMEM_OK)
        bail_out("allocate: %s", gpumem_last_error());
    fill(buf, 3 * M, 7, 1);
    ok(xfer(pa, buf, 3 * M, 1) == GPUMEM_OK, "the parent fills its allocation");
    ok(gpumem_pool_ipc_send(pool, s) == GPUMEM_OK, "gpumem_pool_ipc_send sends the pool's descriptor");
    gpumem_pool_ipc_handle ha, hb;
    ok(gpumem_allocation_ipc_handle(a, &ha) == GPUMEM_OK && gpumem_allocation_ipc_handle(b, &hb) == GPUMEM_OK,
       "gpumem_allocation_ipc_handle exports the allocations (cuMemPoolExportPointer)");
    int zero = 1;
    for (int i = 57; i < 64; i++)
        zero &= ha.bytes[i] == 0;
    ok(ha.bytes[56] == 2 && zero, "the handle's kind is 2 and its bytes 57 to 63 are zero");
    write_full(s, &ha, sizeof ha);
    write_full(s, &hb, sizeof hb);
    wait_byte(s, 'A');
    ok(xfer(pa, buf, 3 * M, 0) == GPUMEM_OK && check(buf, 3 * M, 13, 5), "the parent reads what the child wrote");
    ok(gpumem_pool_ipc_send(pool, s) == GPUMEM_OK, "a second send");
    wait_byte(s, 'D'); /* the importer closed: the allocations may go (the driver's rule) */
    gpumem_allocation_free(a, NULL);
    gpumem_allocation_free(b, NULL);
    ok(gpumem_pool_destroy(pool) == GPUMEM_OK, "the parent frees and destroys its pool");
    return 1;
}

int main(void)
{
    if (test_on_sim())
        plan_skip_all("the simulator does not model the driver's stream-ordered pools (cuMemPoolCreate, "
                      "cuMemPoolExportPointer); run: make check GPUMEM_BACKEND=cuda TESTS=tests/test-pool-ipc-async");
    ipc_child c;
    ipc_child_start(&c, importer);
    int ran = exporter(c.sock);
    int wst = ipc_child_wait(&c);
    if (!ran)
        plan_skip_all("the driver has no stream-ordered pools for this device");
    ok(WIFEXITED(wst) && WEXITSTATUS(wst) == 0, "the child exits normally");
    is_int(ipc_child_results(&c), 14, "the child reported every check");
    done_testing();
    return exit_status();
}
