/* The scenarios of make check-faults (tests/fault-walk.c walks them):
 * each uses one area of the public API through CHECKED, TRY and KEEP
 * (fault-walk.h) and returns its status, or WRONG when it succeeded with
 * wrong values. */
#include "config.h"

#include <dirent.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gpumem.h>

#include "dlpack_abi.h"
#include "driver.h"
#include "fault-walk.h"

/* ---- scenarios ---------------------------------------------------------------------------- */

static int devices(gpumem_context *ctx)
{
    gpumem_status st = GPUMEM_OK;
    int count = 0, major = 0, minor = 0, warp = 0, dev = -1, version = 0;
    char name[64];
    uint64_t total = 0, free_b = 0, total_b = 0;
    const char *backend = NULL;
    gpumem_device_data *dd = NULL;
    gpumem_occupancy_record rec = {.size = sizeof rec};
    TRY(gpumem_backend(&backend));
    TRY(gpumem_driver_version(&version));
    TRY(gpumem_device_count(&count));
    TRY(gpumem_device_name(0, name, sizeof name));
    TRY(gpumem_device_compute_capability(0, &major, &minor));
    TRY(gpumem_device_total_memory(0, &total));
    TRY(gpumem_device_attribute(0, GPUMEM_DEVICE_WARP_SIZE, &warp));
    TRY(gpumem_get_default_device(0, &dev));
    TRY(gpumem_memory_info(ctx, &free_b, &total_b));
    TRY(gpumem_device_data_create(0, &dd));
    TRY(gpumem_occupancy(dd, 256, 0, 32, &rec));
    if (dd != NULL)
        KEEP(gpumem_device_data_destroy(dd));
    gpumem_context *other = NULL;
    TRY(gpumem_context_create(0, &other));
    if (other != NULL)
        KEEP(gpumem_context_release(other));
    if (st == GPUMEM_OK && (count != 1 || warp != 32 || dev != 0 || total != total_b || free_b > total_b))
        return WRONG;
    return st;
}

static int check_doubles(const double *v, size_t n, double (*want)(size_t))
{
    for (size_t i = 0; i < n; i++)
        if (v[i] != want(i))
            return 0;
    return 1;
}

static double iota(size_t i)
{
    return (double)i;
}

/* host[6][8] = i; d = to_device; d[::-1, 1:7:3] filled with 2.5, [0,0] set to
 * -1; out = d. */
static double arrays_want(size_t i)
{
    size_t r = i / 8, c = i % 8;
    if (c == 1 || c == 4)
        return r == 5 && c == 1 ? -1.0 : 2.5;
    return (double)i;
}

static int arrays(gpumem_context *ctx)
{
    static double host[6][8], out[6][8], back[48];
    for (int i = 0; i < 48; i++)
        host[i / 8][i % 8] = i;
    memset(out, 0, sizeof out);
    memset(back, 0, sizeof back);
    gpumem_array *h = NULL, *o = NULL, *d = NULL, *v = NULL, *t = NULL, *r = NULL, *e = NULL, *like = NULL;
    gpumem_array *pieces[8] = {NULL}, *bytes = NULL, *bk = NULL, *rs = NULL;
    size_t npieces = 0;
    gpumem_slice sl[2] = {{GPUMEM_SLICE_DEFAULT, GPUMEM_SLICE_DEFAULT, -1}, {1, 7, 3}};
    double x = 2.5, y = -1.0, got = 0;
    gpumem_status st = GPUMEM_OK;
    TRY(gpumem_host_array_wrap(host, 2, (int64_t[]){6, 8}, NULL, f64, &h));
    TRY(gpumem_host_array_wrap(out, 2, (int64_t[]){6, 8}, NULL, f64, &o));
    TRY(gpumem_host_array_wrap(back, 1, (int64_t[]){48}, NULL, f64, &bk));
    TRY(gpumem_to_device(ctx, h, NULL, 0, &d));
    TRY(gpumem_array_slice(d, sl, 2, &v));
    TRY(gpumem_array_fill(v, &x, NULL));
    TRY(gpumem_array_set_item(v, (int64_t[]){0, 0}, &y, NULL));
    TRY(gpumem_array_get_item(v, (int64_t[]){1, 1}, &got, NULL));
    TRY(gpumem_copy_to_host(d, o, NULL));
    TRY(gpumem_array_transpose(d, NULL, &t));
    TRY(gpumem_array_ravel(t, 'F', 0, NULL, &r)); /* F-order ravel of d.T is d's C order: a view */
    TRY(gpumem_array_reshape(t, 1, (int64_t[]){48}, 'C', 0, NULL, &rs)); /* needs a copy */
    TRY(gpumem_device_array_like(ctx, r, NULL, &like));
    TRY(gpumem_array_copy(like, r, NULL));
    TRY(gpumem_array_split(like, 20, pieces, 8, &npieces));
    TRY(gpumem_array_view(like, gpumem_dtype_builtin(GPUMEM_UINT8), &bytes));
    TRY(gpumem_device_array(ctx, 2, (int64_t[]){0, 3}, NULL, i32, 'F', NULL, &e));
    TRY(gpumem_copy_to_host(like, bk, NULL));
    int good = st == GPUMEM_OK && got == 2.5 && npieces == 3 && check_doubles(&out[0][0], 48, arrays_want) &&
               check_doubles(back, 48, arrays_want);
    for (size_t i = 0; i < npieces; i++)
        KEEP(gpumem_array_release(pieces[i]));
    gpumem_array *all[] = {bytes, like, rs, r, t, v, d, e, bk, o, h};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        KEEP(gpumem_array_release(all[i]));
    return RESULT(st, good);
}

static int streams(gpumem_context *ctx)
{
    static double host[64];
    for (int i = 0; i < 64; i++)
        host[i] = i;
    double *out = NULL;
    static double wback[64]; /* gets the device data back at the synchronization */
    for (int i = 0; i < 64; i++)
        wback[i] = -1;
    gpumem_stream *s = NULL, *s2 = NULL, *dflt = NULL;
    gpumem_array *h = NULL, *o = NULL, *d = NULL, *d2 = NULL, *hw = NULL, *dw = NULL;
    gpumem_status st = GPUMEM_OK;
    TRY(gpumem_stream_create(ctx, 0, &s));
    TRY(gpumem_stream_create(ctx, 0, &s2));
    TRY(gpumem_stream_default(ctx, &dflt));
    TRY(gpumem_host_array_wrap(host, 1, (int64_t[]){64}, NULL, f64, &h));
    TRY(gpumem_pinned_array(ctx, 1, (int64_t[]){64}, NULL, f64, 'C', &o));
    TRY(gpumem_array_host_pointer(o, (void **)&out));
    TRY(gpumem_to_device(ctx, h, s, 0, &d));
    TRY(gpumem_device_array_like(ctx, d, s2, &d2));
    TRY(gpumem_host_array_wrap(wback, 1, (int64_t[]){64}, NULL, f64, &hw));
    TRY(gpumem_to_device(ctx, hw, s, GPUMEM_TO_DEVICE_WRITEBACK, &dw));
    TRY(gpumem_array_copy(dw, h, s));
    TRY(gpumem_stream_synchronize(s)); /* commits the write-back */
    TRY(gpumem_array_copy(d2, d, s2));
    if (st == GPUMEM_OK) {
        gpumem_status q = gpumem_stream_query(s2);
        if (q != GPUMEM_OK && q != GPUMEM_ERROR_NOT_READY)
            st = q;
    }
    TRY(gpumem_stream_auto_synchronize_begin(s2));
    TRY(gpumem_copy_to_host(d2, o, s2));
    TRY(gpumem_stream_auto_synchronize_end(s2));
    /* a download into pageable memory, queued on the stream */
    static double back[64];
    memset(back, 0, sizeof back);
    gpumem_array *hb = NULL;
    TRY(gpumem_host_array_wrap(back, 1, (int64_t[]){64}, NULL, f64, &hb));
    TRY(gpumem_copy_to_host(d2, hb, s2));
    TRY(gpumem_context_synchronize(ctx));
    int good = st == GPUMEM_OK && out != NULL && check_doubles(out, 64, iota) && check_doubles(back, 64, iota) &&
               check_doubles(wback, 64, iota);
    gpumem_array *all[] = {d2, d, o, h, hb, dw, hw};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        KEEP(gpumem_array_release(all[i]));
    if (s2 != NULL)
        KEEP(gpumem_stream_destroy(s2));
    if (s != NULL)
        KEEP(gpumem_stream_destroy(s));
    return RESULT(st, good);
}

static int events(gpumem_context *ctx)
{
    gpumem_status st = GPUMEM_OK;
    gpumem_stream *a = NULL, *b = NULL;
    gpumem_event *e0 = NULL, *e1 = NULL;
    gpumem_array *x = NULL, *y = NULL;
    double seven = 7, got = 0;
    float ms = -1;
    int64_t last = 63;
    TRY(gpumem_stream_create(ctx, GPUMEM_STREAM_NON_BLOCKING, &a));
    TRY(gpumem_stream_create(ctx, 0, &b));
    TRY(gpumem_event_create(ctx, 0, &e0));
    TRY(gpumem_event_create(ctx, 0, &e1));
    TRY(gpumem_device_array(ctx, 1, (int64_t[]){64}, NULL, f64, 'C', NULL, &x));
    TRY(gpumem_device_array(ctx, 1, (int64_t[]){64}, NULL, f64, 'C', NULL, &y));
    TRY(gpumem_event_record(e0, a));
    TRY(gpumem_array_fill(x, &seven, a));
    TRY(gpumem_event_record(e1, a));
    TRY(gpumem_stream_wait_event(b, e1));
    TRY(gpumem_stream_wait_event(NULL, e1));
    TRY(gpumem_array_copy(y, x, b));
    if (st == GPUMEM_OK) {
        gpumem_status q = gpumem_event_query(e1);
        if (q != GPUMEM_OK && q != GPUMEM_ERROR_NOT_READY)
            st = q;
    }
    TRY(gpumem_event_synchronize(e1));
    TRY(gpumem_event_elapsed_time(e0, e1, &ms));
    TRY(gpumem_stream_synchronize(b));
    TRY(gpumem_array_get_item(y, &last, &got, NULL));
    int good = st == GPUMEM_OK && got == 7 && ms >= 0;
    KEEP(gpumem_array_release(y));
    KEEP(gpumem_array_release(x));
    KEEP(gpumem_event_destroy(e1));
    KEEP(gpumem_event_destroy(e0));
    if (b != NULL)
        KEEP(gpumem_stream_destroy(b));
    if (a != NULL)
        KEEP(gpumem_stream_destroy(a));
    return RESULT(st, good);
}

static int pools(gpumem_context *ctx)
{
    static double host[100], out[100];
    for (int i = 0; i < 100; i++)
        host[i] = i, out[i] = -1;
    gpumem_pool *pool = NULL;
    gpumem_allocation *a = NULL, *b = NULL;
    gpumem_array *h = NULL, *o = NULL, *d = NULL;
    gpumem_stream *s = NULL;
    struct gpumem_pool_stats stats = {.size = sizeof stats};
    uint64_t held = 0, active = 0, ptr = 0;
    gpumem_status st = GPUMEM_OK;
    TRY(gpumem_pool_create(ctx, 0, &pool));
    TRY(gpumem_stream_create(ctx, 0, &s));
    TRY(gpumem_pool_allocate(pool, 1000, NULL, &a));
    TRY(gpumem_allocation_pointer(a, &ptr));
    TRY(gpumem_pool_allocate(pool, 5000, s, &b));
    if (a != NULL) {
        KEEP(gpumem_allocation_free(a, NULL));
        a = NULL;
    }
    TRY(gpumem_pool_held_blocks(pool, &held));
    TRY(gpumem_pool_active_blocks(pool, &active));
    TRY(gpumem_context_set_pool(ctx, pool));
    TRY(gpumem_host_array_wrap(host, 1, (int64_t[]){100}, NULL, f64, &h));
    TRY(gpumem_host_array_wrap(out, 1, (int64_t[]){100}, NULL, f64, &o));
    TRY(gpumem_to_device(ctx, h, NULL, 0, &d));
    TRY(gpumem_copy_to_host(d, o, NULL));
    TRY(gpumem_pool_stats(pool, &stats));
    int good = st == GPUMEM_OK && held == 1 && active == 1 && ptr != 0 && check_doubles(out, 100, iota);
    gpumem_array *all[] = {d, o, h};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        KEEP(gpumem_array_release(all[i]));
    if (a != NULL)
        KEEP(gpumem_allocation_free(a, NULL));
    if (b != NULL)
        KEEP(gpumem_allocation_free(b, s));
    if (s != NULL)
        KEEP(gpumem_stream_destroy(s));
    KEEP(gpumem_context_set_pool(ctx, NULL));
    if (pool != NULL) {
        KEEP(gpumem_pool_free_held(pool));
        KEEP(gpumem_pool_stop_holding(pool));
        KEEP(gpumem_pool_destroy(pool));
    }
    return RESULT(st, good);
}

/* A virtual-memory pool (issue 27): blocks of drifting sizes that merge,
 * arrays through it, data that survives, trim, destroy. */
static int vmm_pool(gpumem_context *ctx)
{
    static double host[100], out[100];
    for (int i = 0; i < 100; i++)
        host[i] = i, out[i] = -1;
    struct gpumem_pool_props props = GPUMEM_POOL_PROPS_INIT;
    props.source = GPUMEM_POOL_SOURCE_VIRTUAL;
    props.maximum = (uint64_t)64 << 20;
    props.release_threshold = (uint64_t)2 << 20;
    gpumem_pool *pool = NULL;
    gpumem_allocation *a[3] = {NULL, NULL, NULL};
    gpumem_array *h = NULL, *o = NULL, *d = NULL;
    struct gpumem_pool_stats stats = {.size = sizeof stats};
    gpumem_status st = GPUMEM_OK;
    TRY(gpumem_pool_create_with_props(ctx, &props, &pool));
    for (int i = 0; i < 3; i++)
        TRY(gpumem_pool_allocate(pool, (size_t)(3 + i) << 20, NULL, &a[i]));
    for (int i = 0; i < 3; i++)
        if (a[i] != NULL) {
            KEEP(gpumem_allocation_free(a[i], NULL));
            a[i] = NULL;
        }
    TRY(gpumem_pool_allocate(pool, (size_t)7 << 20, NULL, &a[0])); /* the three merge; the idle granules past the threshold go when the small block maps one */
    TRY(gpumem_context_set_pool(ctx, pool));
    TRY(gpumem_host_array_wrap(host, 1, (int64_t[]){100}, NULL, f64, &h));
    TRY(gpumem_host_array_wrap(out, 1, (int64_t[]){100}, NULL, f64, &o));
    TRY(gpumem_to_device(ctx, h, NULL, 0, &d));
    TRY(gpumem_copy_to_host(d, o, NULL));
    TRY(gpumem_pool_stats(pool, &stats));
    int good = st == GPUMEM_OK && stats.source_bytes == ((uint64_t)10 << 20) && check_doubles(out, 100, iota);
    gpumem_array *all[] = {d, o, h};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        KEEP(gpumem_array_release(all[i]));
    if (a[0] != NULL)
        KEEP(gpumem_allocation_free(a[0], NULL));
    KEEP(gpumem_context_set_pool(ctx, NULL));
    if (pool != NULL) {
        KEEP(gpumem_pool_trim(pool, 0));
        KEEP(gpumem_pool_destroy(pool));
    }
    return RESULT(st, good);
}

/* Registered and managed pools (issue 27): a host pool of registered
 * memory (mmap, touched on the workers, cuMemHostRegister), one on the
 * device's node (the device's node query), a device pool of managed
 * memory, data through each. */
static int numa_pools(gpumem_context *ctx)
{
    gpumem_host_pool *hp = NULL, *dflt = NULL;
    gpumem_pool *mp = NULL;
    gpumem_allocation *a[3] = {NULL, NULL, NULL};
    void *h = NULL, *g = NULL;
    uint64_t dptr = 0;
    gpumem_status st = GPUMEM_OK;
    struct gpumem_pool_props props = GPUMEM_POOL_PROPS_INIT;
    props.source = GPUMEM_POOL_SOURCE_REGISTERED;
    props.numa_node = GPUMEM_NUMA_NODE_NONE;
    props.flags = GPUMEM_HOST_ALLOC_DEVICEMAP;
    TRY(gpumem_host_pool_create_with_props(ctx, &props, &hp));
    TRY(gpumem_host_pool_allocate_bytes(hp, (size_t)5 << 20, &a[0]));
    TRY(gpumem_allocation_host_pointer(a[0], &h));
    TRY(gpumem_allocation_pointer(a[0], &dptr));
    props = (struct gpumem_pool_props)GPUMEM_POOL_PROPS_INIT;
    props.source = GPUMEM_POOL_SOURCE_PINNED;
    TRY(gpumem_host_pool_create_with_props(ctx, &props, &dflt));
    TRY(gpumem_host_pool_allocate_bytes(dflt, 1000, &a[1]));
    props = (struct gpumem_pool_props)GPUMEM_POOL_PROPS_INIT;
    props.source = GPUMEM_POOL_SOURCE_MANAGED;
    TRY(gpumem_pool_create_with_props(ctx, &props, &mp));
    TRY(gpumem_pool_allocate(mp, 4096, NULL, &a[2]));
    uint64_t mptr = 0;
    TRY(gpumem_allocation_pointer(a[2], &mptr)); /* managed: valid on the host too */
    g = (void *)(uintptr_t)mptr;
    if (h != NULL)
        memset(h, 3, (size_t)5 << 20);
    if (g != NULL)
        memset(g, 4, 4096);
    int good = st == GPUMEM_OK && h != NULL && dptr != 0 && ((unsigned char *)h)[(5 << 20) - 1] == 3 && g != NULL &&
               ((unsigned char *)g)[4095] == 4;
    for (int i = 0; i < 3; i++)
        if (a[i] != NULL)
            KEEP(gpumem_allocation_free(a[i], NULL));
    if (hp != NULL)
        KEEP(gpumem_host_pool_destroy(hp));
    if (dflt != NULL)
        KEEP(gpumem_host_pool_destroy(dflt));
    if (mp != NULL)
        KEEP(gpumem_pool_destroy(mp));
    return RESULT(st, good);
}

/* IPC of a virtual-memory pool's memory (issue 27): a send over a
 * socketpair, received in this process (the simulator's shareable handles
 * are memfds), an allocation opened by its handle, bytes written on one
 * side read on the other, a second send after the pool grew, an update, the
 * close.  Descriptors are counted: none may stay open. */
static int count_fds(void)
{
    DIR *dir = opendir("/proc/self/fd");
    int n = 0;
    while (dir != NULL && readdir(dir) != NULL)
        n++;
    if (dir != NULL)
        closedir(dir);
    return n;
}

static int pool_ipc(gpumem_context *ctx)
{
    static double host[100], out[100];
    for (int i = 0; i < 100; i++)
        host[i] = i, out[i] = -1;
    struct gpumem_pool_props props = GPUMEM_POOL_PROPS_INIT;
    props.source = GPUMEM_POOL_SOURCE_VIRTUAL;
    props.maximum = (uint64_t)16 << 20;
    props.handle_type = GPUMEM_POOL_HANDLE_POSIX_FD;
    gpumem_pool *pool = NULL;
    gpumem_allocation *a = NULL, *b = NULL;
    gpumem_pool_import *im = NULL;
    gpumem_pool_ipc_handle ha, hb;
    gpumem_array *h = NULL, *o = NULL, *d = NULL, *v = NULL;
    uint64_t pa = 0, pb = 0;
    int sv[2] = {-1, -1}, fds0 = count_fds();
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        return GPUMEM_ERROR_INTERNAL;
    gpumem_status st = GPUMEM_OK;
    TRY(gpumem_pool_create_with_props(ctx, &props, &pool));
    TRY(gpumem_pool_allocate(pool, 800, NULL, &a));
    TRY(gpumem_pool_ipc_send(pool, sv[0]));
    TRY(gpumem_pool_ipc_open(ctx, sv[1], &im));
    TRY(gpumem_allocation_ipc_handle(a, &ha));
    TRY(gpumem_pool_import_open_allocation(im, &ha, &pa, NULL));
    TRY(gpumem_pool_allocate(pool, (size_t)3 << 20, NULL, &b));
    TRY(gpumem_pool_ipc_send(pool, sv[0]));
    TRY(gpumem_pool_import_update(im, sv[1]));
    TRY(gpumem_allocation_ipc_handle(b, &hb));
    TRY(gpumem_pool_import_open_allocation(im, &hb, &pb, NULL));
    uint64_t pool_ptr = 0;
    TRY(gpumem_allocation_pointer(a, &pool_ptr));
    gpumem_cuda_array_interface desc = {.size = sizeof desc, .version = 3, .ndim = 1, .shape = {100},
                                        .typestr = "<f8", .data = pool_ptr};
    TRY(gpumem_host_array_wrap(host, 1, (int64_t[]){100}, NULL, f64, &h));
    TRY(gpumem_host_array_wrap(out, 1, (int64_t[]){100}, NULL, f64, &o));
    TRY(gpumem_as_cuda_array(ctx, &desc, GPUMEM_CAI_NO_SYNCHRONIZE, NULL, NULL, &d));
    desc.data = pa;
    TRY(gpumem_as_cuda_array(ctx, &desc, GPUMEM_CAI_NO_SYNCHRONIZE, NULL, NULL, &v));
    TRY(gpumem_array_copy(d, h, NULL));
    TRY(gpumem_array_copy(o, v, NULL));
    int good = st == GPUMEM_OK && pa != pool_ptr && pb != 0 && check_doubles(out, 100, iota);
    gpumem_array *all[] = {v, d, o, h};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        KEEP(gpumem_array_release(all[i]));
    KEEP(gpumem_pool_import_close(im));
    if (b != NULL)
        KEEP(gpumem_allocation_free(b, NULL));
    if (a != NULL)
        KEEP(gpumem_allocation_free(a, NULL));
    if (pool != NULL)
        KEEP(gpumem_pool_destroy(pool));
    /* what a failed send left in the socket is closed with it */
    close(sv[0]);
    close(sv[1]);
    /* A descriptor left open is wrong, unless the driver kept memory (a
     * failed unmap or release keeps its chunk's memfd) */
    if (count_fds() != fds0 && !failed_free() && gm_drv_fail_then == 0)
        return WRONG;
    return RESULT(st, good);
}

static int host_memory(gpumem_context *ctx)
{
    static double buf[32], reg_buf[32];
    for (int i = 0; i < 32; i++)
        buf[i] = i, reg_buf[i] = 0;
    gpumem_array *p = NULL, *m = NULL, *g = NULL, *w = NULL, *rw = NULL, *views[1] = {NULL}, *hp = NULL, *d = NULL;
    gpumem_registration *pin = NULL, *map = NULL, *reg = NULL;
    gpumem_host_pool *pool = NULL;
    gpumem_allocation *raw = NULL;
    int pinned = 0;
    gpumem_status st = GPUMEM_OK;
    TRY(gpumem_pinned_array(ctx, 1, (int64_t[]){32}, NULL, f64, 'C', &p));
    TRY(gpumem_mapped_array(ctx, 1, (int64_t[]){32}, NULL, f64, 'C', NULL, 0, &m));
    TRY(gpumem_managed_array(ctx, 1, (int64_t[]){32}, NULL, f64, 'C', GPUMEM_MANAGED_ATTACH_GLOBAL, &g));
    TRY(gpumem_host_array_wrap(buf, 1, (int64_t[]){32}, NULL, f64, &w));
    TRY(gpumem_host_array_wrap(reg_buf, 1, (int64_t[]){32}, NULL, f64, &rw));
    TRY(gpumem_pinned(ctx, &w, 1, &pin));
    TRY(gpumem_host_is_pinned(buf, sizeof buf, &pinned));
    TRY(gpumem_to_device(ctx, w, NULL, 0, &d));
    TRY(gpumem_mapped(ctx, &rw, 1, NULL, &map, views));
    TRY(gpumem_array_copy(views[0], d, NULL));
    TRY(gpumem_array_copy(p, views[0], NULL));
    TRY(gpumem_array_copy(m, p, NULL));
    TRY(gpumem_array_copy(g, m, NULL));
    TRY(gpumem_host_pool_create(ctx, 0, &pool));
    TRY(gpumem_host_pool_allocate(pool, 1, (int64_t[]){16}, f64, 'C', &hp));
    TRY(gpumem_host_pool_allocate_bytes(pool, 100, &raw));
    void *gp = NULL;
    TRY(gpumem_array_host_pointer(g, &gp));
    int good = st == GPUMEM_OK && pinned == 1 && check_doubles(reg_buf, 32, iota) && gp != NULL &&
               check_doubles(gp, 32, iota);
    if (raw != NULL)
        KEEP(gpumem_allocation_free(raw, NULL));
    KEEP(gpumem_array_release(hp));
    if (pool != NULL)
        KEEP(gpumem_host_pool_destroy(pool));
    KEEP(gpumem_array_release(views[0]));
    if (map != NULL)
        KEEP(gpumem_unmapped(&map));
    if (pin != NULL)
        KEEP(gpumem_unpinned(&pin));
    TRY(gpumem_register(ctx, &w, 1, &reg));
    if (reg != NULL)
        KEEP(gpumem_deregister(&reg));
    gpumem_array *all[] = {d, rw, w, g, m, p};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        KEEP(gpumem_array_release(all[i]));
    return RESULT(st, good);
}

static int dealloc(gpumem_context *ctx)
{
    gpumem_array *a[4] = {NULL};
    size_t pending = 0;
    uint64_t bytes = 0;
    gpumem_status st = GPUMEM_OK;
    TRY(gpumem_context_set_dealloc_limits(ctx, 2, 0.5));
    TRY(gpumem_defer_cleanup_begin(ctx));
    for (int i = 0; i < 4; i++)
        TRY(gpumem_device_array(ctx, 1, (int64_t[]){100 + i}, NULL, f64, 'C', NULL, &a[i]));
    for (int i = 0; i < 4; i++) {
        KEEP(gpumem_array_release(a[i]));
        a[i] = NULL;
    }
    TRY(gpumem_context_pending_deallocations(ctx, &pending, &bytes));
    /* deferred while the cleanup is, unless a pool takes them back */
    int good = pending == (pooled ? 0 : 4);
    KEEP(gpumem_defer_cleanup_end(ctx));
    KEEP(gpumem_context_flush_deallocations(ctx));
    KEEP(gpumem_context_set_dealloc_limits(ctx, 0, 0.0));
    return RESULT(st, good);
}

static const char ptx[] =
    ".version 7.0\n"
    ".target sm_50\n"
    ".address_size 64\n"
    ".visible .const .align 8 .b8 coeffs[64];\n"
    ".visible .global .align 4 .u32 counter = 7;\n"
    ".visible .entry nothing()\n"
    "{\n"
    "    ret;\n"
    "}\n";

static gpumem_status make_value(gpumem_context *ctx, const void *key, size_t key_size, void *user, void **value)
{
    (void)ctx, (void)key, (void)key_size, (void)user;
    int *v = malloc(sizeof *v);
    if (v == NULL)
        return GPUMEM_ERROR_HOST_OUT_OF_MEMORY;
    *v = 42;
    *value = v;
    return GPUMEM_OK;
}

static void free_value(void *value, void *user)
{
    (void)user;
    free(value);
}

static int kernels(gpumem_context *ctx)
{
    static double src[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    gpumem_module *mod = NULL;
    gpumem_function *fn = NULL;
    gpumem_array *h = NULL, *c = NULL;
    uint64_t ptr = 0;
    size_t bytes = 0;
    int key = 1, nthreads = 0;
    void *value = NULL;
    uint32_t counter = 0;
    gpumem_status st = GPUMEM_OK;
    TRY(gpumem_memoize(ctx, &key, sizeof key, make_value, free_value, NULL, &value));
    TRY(gpumem_module_load(ctx, ptx, sizeof ptx, &mod));
    TRY(gpumem_module_get_function(mod, "nothing", &fn));
    TRY(gpumem_function_attribute(fn, GPUMEM_FUNCTION_MAX_THREADS_PER_BLOCK, &nthreads));
    TRY(gpumem_module_get_global(mod, "counter", &ptr, &bytes));
    TRY(gpumem_host_array_wrap(src, 1, (int64_t[]){8}, NULL, f64, &h));
    TRY(gpumem_const_array_like(mod, "coeffs", h, NULL, &c));
    gpumem_array *cv = NULL, *hc = NULL;
    TRY(gpumem_as_cuda_array(ctx, &(gpumem_cuda_array_interface){.size = sizeof(gpumem_cuda_array_interface),
                                                                  .version = 3, .ndim = 1, .shape = {1},
                                                                  .typestr = "<u4", .data = ptr},
                             0, NULL, NULL, &cv));
    TRY(gpumem_host_array_wrap(&counter, 1, (int64_t[]){1}, NULL, gpumem_dtype_builtin(GPUMEM_UINT32), &hc));
    TRY(gpumem_copy_to_host(cv, hc, NULL));
    int good = st == GPUMEM_OK && value != NULL && *(int *)value == 42 && nthreads == 1024 && bytes == 4 &&
               counter == 7;
    gpumem_array *all[] = {hc, cv, c, h};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        KEEP(gpumem_array_release(all[i]));
    if (mod != NULL)
        KEEP(gpumem_module_release(mod));
    KEEP(gpumem_clear_context_caches());
    return RESULT(st, good);
}

static int interop(gpumem_context *ctx)
{
    static int32_t host[24], out[24];
    for (int i = 0; i < 24; i++)
        host[i] = i, out[i] = -1;
    gpumem_array *h = NULL, *o = NULL, *d = NULL, *cai = NULL, *dl = NULL, *dlv = NULL;
    gpumem_cuda_array_interface desc = {.size = sizeof desc};
    gpumem_pointer_info info = {.size = sizeof info};
    gpumem_ipc_handle handle;
    void *t1 = NULL, *t2 = NULL;
    int is_cuda = 0;
    gpumem_status st = GPUMEM_OK;
    TRY(gpumem_host_array_wrap(host, 2, (int64_t[]){4, 6}, NULL, i32, &h));
    TRY(gpumem_host_array_wrap(out, 2, (int64_t[]){4, 6}, NULL, i32, &o));
    TRY(gpumem_to_device(ctx, h, NULL, 0, &d));
    TRY(gpumem_array_interface(d, NULL, &desc));
    TRY(gpumem_as_cuda_array(ctx, &desc, 0, NULL, NULL, &cai));
    TRY(gpumem_array_to_dlpack(cai, 0, &t1));
    TRY(gpumem_array_from_dlpack(ctx, t1, 0, &dl));
    if (st == GPUMEM_OK)
        t1 = NULL; /* the array owns it now */
    TRY(gpumem_array_to_dlpack(dl, GPUMEM_DLPACK_VERSIONED, &t2));
    TRY(gpumem_array_from_dlpack(ctx, t2, GPUMEM_DLPACK_VERSIONED, &dlv));
    if (st == GPUMEM_OK)
        t2 = NULL;
    TRY(gpumem_copy_to_host(dlv, o, NULL));
    uint64_t dp = 0;
    TRY(gpumem_array_device_pointer(dlv, &dp));
    TRY(gpumem_is_cuda_array(dp, &is_cuda, &info));
    TRY(gpumem_ipc_get_handle(dlv, &handle));
    int good = st == GPUMEM_OK && is_cuda == 1 && info.kind == GPUMEM_POINTER_DEVICE;
    for (int i = 0; good && i < 24; i++)
        good = out[i] == i;
    /* A tensor not handed over is the caller's: its deleter gives its reference back. */
    if (t1 != NULL)
        ((gm_dl_managed_tensor *)t1)->deleter(t1);
    if (t2 != NULL)
        ((gm_dl_managed_tensor_versioned *)t2)->deleter(t2);
    gpumem_array *all[] = {dlv, dl, cai, d, o, h};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        KEEP(gpumem_array_release(all[i]));
    return RESULT(st, good);
}

/* Strided copies between every pair of memory kinds: a 3-D C-ordered
 * source, a permuted and sliced view of it copied into each kind and back. */
static int copies(gpumem_context *ctx)
{
    enum { A = 4, B = 5, C = 6 };
    static int32_t src[A * B * C], dst[C * B * A];
    for (int i = 0; i < A * B * C; i++)
        src[i] = i;
    memset(dst, 0xff, sizeof dst);
    gpumem_array *h = NULL, *out = NULL, *t = NULL, *kinds[4] = {NULL}, *rev = NULL;
    int axes[3] = {2, 1, 0};
    gpumem_status st = GPUMEM_OK;
    TRY(gpumem_host_array_wrap(src, 3, (int64_t[]){A, B, C}, NULL, i32, &h));
    TRY(gpumem_host_array_wrap(dst, 3, (int64_t[]){C, B, A}, NULL, i32, &out));
    TRY(gpumem_array_transpose(h, axes, &t));
    TRY(gpumem_device_array(ctx, 3, (int64_t[]){C, B, A}, NULL, i32, 'F', NULL, &kinds[0]));
    TRY(gpumem_pinned_array(ctx, 3, (int64_t[]){C, B, A}, NULL, i32, 'C', &kinds[1]));
    TRY(gpumem_managed_array(ctx, 3, (int64_t[]){C, B, A}, NULL, i32, 'C', GPUMEM_MANAGED_ATTACH_GLOBAL, &kinds[2]));
    TRY(gpumem_mapped_array(ctx, 3, (int64_t[]){C, B, A}, NULL, i32, 'F', NULL, 0, &kinds[3]));
    TRY(gpumem_array_copy(kinds[0], t, NULL));
    for (int i = 1; i < 4; i++)
        TRY(gpumem_array_copy(kinds[i], kinds[i - 1], NULL));
    gpumem_slice whole_rev[3] = {GPUMEM_SLICE_ALL, {GPUMEM_SLICE_DEFAULT, GPUMEM_SLICE_DEFAULT, -1}, GPUMEM_SLICE_ALL};
    TRY(gpumem_array_slice(kinds[3], whole_rev, 3, &rev));
    TRY(gpumem_array_copy(kinds[0], rev, NULL)); /* device <- mapped, reversed on axis 1 */
    TRY(gpumem_array_copy(out, kinds[0], NULL));
    int good = st == GPUMEM_OK;
    for (int c = 0; good && c < C; c++)
        for (int b = 0; good && b < B; b++)
            for (int a = 0; good && a < A; a++)
                good = dst[(c * B + b) * A + a] == (a * B + (B - 1 - b)) * C + c;
    gpumem_array *all[] = {rev, kinds[3], kinds[2], kinds[1], kinds[0], t, out, h};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        KEEP(gpumem_array_release(all[i]));
    return RESULT(st, good);
}

/* The staging engine: pageable copies and strided host sides through the
 * pinned slots, and a download queued on a stream landing in slabs.  Two
 * threads per copy, but copies of one chunk (the caller alone: the calls
 * are the same in every run), while the queued download's 3 slabs land on
 * the worker pool (which calls no driver). */
static int staging(gpumem_context *ctx)
{
    enum { N = 25600, Q = 3 << 17 }; /* 200 KiB of doubles; 3 MiB */
    static double src[N], back[N], wide[2 * N], qback[Q];
    for (int i = 0; i < N; i++)
        src[i] = i;
    for (int i = 0; i < 2 * N; i++)
        wide[i] = -1;
    memset(back, 0, sizeof back);
    memset(qback, 0, sizeof qback);
    gpumem_staging_settings saved = {.size = sizeof saved}, s = {sizeof s, 2, 1u << 20, 2, 0};
    gpumem_status st = gpumem_staging_get(&saved);
    TRY(gpumem_staging_set(&s));
    gpumem_array *h = NULL, *hb = NULL, *hw = NULL, *hwv = NULL, *d = NULL, *d2 = NULL, *d2v = NULL, *dq = NULL,
                 *hq = NULL;
    gpumem_stream *qs = NULL;
    gpumem_slice even = {0, 2 * N, 2};
    int64_t q = Q, n2 = 2 * N;
    TRY(gpumem_host_array_wrap(src, 1, (int64_t[]){N}, NULL, f64, &h));
    TRY(gpumem_host_array_wrap(back, 1, (int64_t[]){N}, NULL, f64, &hb));
    TRY(gpumem_host_array_wrap(wide, 1, &n2, NULL, f64, &hw));
    TRY(gpumem_array_slice(hw, &even, 1, &hwv));
    TRY(gpumem_to_device(ctx, h, NULL, 0, &d));             /* staged upload */
    TRY(gpumem_array_copy(hb, d, NULL));                    /* staged download */
    TRY(gpumem_array_copy(hwv, d, NULL));                   /* unpacked out of the slots: wide[::2] */
    TRY(gpumem_device_array(ctx, 1, &n2, NULL, f64, 'C', NULL, &d2));
    TRY(gpumem_array_slice(d2, &even, 1, &d2v));
    TRY(gpumem_array_copy(d2v, hwv, NULL));                 /* packed into the slots, unpacked on the device */
    TRY(gpumem_device_array(ctx, 1, &q, NULL, f64, 'C', NULL, &dq));
    TRY(gpumem_array_fill(dq, &(double){2.5}, NULL));
    TRY(gpumem_host_array_wrap(qback, 1, &q, NULL, f64, &hq));
    TRY(gpumem_stream_create(ctx, 0, &qs));
    TRY(gpumem_array_copy(hq, dq, qs));                     /* queued: lands in slabs */
    TRY(gpumem_array_copy(hb, d2v, qs));                    /* and a strided one after it */
    TRY(gpumem_stream_synchronize(qs));
    int good = st == GPUMEM_OK;
    for (int i = 0; good && i < N; i++)
        good = back[i] == i && wide[2 * i] == i && wide[2 * i + 1] == -1;
    for (int i = 0; good && i < Q; i++)
        good = qback[i] == 2.5;
    gpumem_array *all[] = {h, hb, hwv, hw, d2v, d2, d, dq, hq};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        KEEP(gpumem_array_release(all[i]));
    if (qs != NULL)
        KEEP(gpumem_stream_destroy(qs));
    gpumem_staging_set(&saved);
    return RESULT(st, good);
}

/* Copies between two devices (gpumem/peer.h), with peer access and then
 * staged through the pinned slots: a dense copy, a strided source into a
 * dense destination, a dense source into a strided destination and both
 * sides strided.  Runs with two simulated devices (the scenario's
 * `devices`); the second device's context is made and released here. */
static int peers(gpumem_context *ctx)
{
    enum { R = 24, C = 32 };
    static int32_t in[R * C], out[R * C];
    for (int i = 0; i < R * C; i++)
        in[i] = i;
    gpumem_status st = GPUMEM_OK;
    gpumem_context *c1 = NULL;
    gpumem_array *h = NULL, *ho = NULL, *hh = NULL, *a = NULL, *b = NULL, *bh = NULL, *sa = NULL, *sb = NULL, *dense = NULL;
    gpumem_slice even[2] = {GPUMEM_SLICE_ALL, {0, GPUMEM_SLICE_DEFAULT, 2}};
    gpumem_slice odd_rev[2] = {{GPUMEM_SLICE_DEFAULT, GPUMEM_SLICE_DEFAULT, -1}, {1, GPUMEM_SLICE_DEFAULT, 2}};
    int good = 1;
    TRY(gpumem_context_create(1, &c1));
    TRY(gpumem_host_array_wrap(in, 2, (int64_t[]){R, C}, NULL, i32, &h));
    TRY(gpumem_host_array_wrap(out, 2, (int64_t[]){R, C}, NULL, i32, &ho));
    TRY(gpumem_host_array_wrap(out, 2, (int64_t[]){R, C / 2}, NULL, i32, &hh));
    TRY(gpumem_to_device(ctx, h, NULL, 0, &a));
    TRY(gpumem_device_array(c1, 2, (int64_t[]){R, C}, NULL, i32, 'C', NULL, &b));
    TRY(gpumem_device_array(c1, 2, (int64_t[]){R, C / 2}, NULL, i32, 'C', NULL, &bh));
    TRY(gpumem_array_slice(a, even, 2, &sa));
    TRY(gpumem_array_slice(b, odd_rev, 2, &sb));
    TRY(gpumem_device_array(ctx, 2, (int64_t[]){R, C / 2}, NULL, i32, 'C', NULL, &dense));
    TRY(gpumem_array_copy(dense, sa, NULL)); /* on device 0: a[:, ::2] */
    for (int staged = 0; staged < 2 && st == GPUMEM_OK; staged++) {
        TRY(gpumem_peer_set_enabled(!staged));
        TRY(gpumem_array_copy(b, a, NULL));      /* dense: one run */
        TRY(gpumem_array_copy(bh, sa, NULL));    /* a strided source */
        TRY(gpumem_array_copy(sb, dense, NULL)); /* a strided destination */
        TRY(gpumem_array_copy(ho, b, NULL));
        for (int i = 0; st == GPUMEM_OK && i < R * C; i++) { /* b = a, but b[::-1, 1::2] = a[:, ::2] */
            int r = i / C, c = i % C;
            good &= out[i] == (c % 2 ? (R - 1 - r) * C + c - 1 : i);
        }
        TRY(gpumem_array_copy(sb, sa, NULL));    /* both strided */
        TRY(gpumem_array_copy(ho, b, NULL));
        for (int i = 0; st == GPUMEM_OK && i < R * C; i++) {
            int r = i / C, c = i % C;
            good &= out[i] == (c % 2 ? (R - 1 - r) * C + c - 1 : i);
        }
        TRY(gpumem_array_copy(hh, bh, NULL));
        for (int i = 0; st == GPUMEM_OK && i < R * C / 2; i++)
            good &= out[i] == (i / (C / 2)) * C + 2 * (i % (C / 2));
    }
    gpumem_peer_set_enabled(1);
    gpumem_array *all[] = {dense, sb, sa, bh, b, a, hh, ho, h};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        KEEP(gpumem_array_release(all[i]));
    if (c1 != NULL)
        KEEP(gpumem_context_release(c1));
    return RESULT(st, good);
}

const scenario scenarios[] = {
    {"devices, contexts, device data, occupancy", devices, 0},
    {"arrays: creation, views, fill, items, copies, reshape, split", arrays, 0},
    {"copies between device, pinned, managed, mapped and host views", copies, 0},
    {"streams: queued copies, queries, auto-synchronize", streams, 0},
    {"events: records, waits between streams, queries, elapsed time", events, 0},
    {"staging: pageable and strided host sides through the slots, a queued download in slabs", staging, 0},
    {"device pool: allocations, arrays through the pool", pools, 0},
    {"virtual-memory pool: blocks that merge, arrays through it, trim", vmm_pool, 0},
    {"pool IPC: a send, an import in the same process, an update, an allocation through it", pool_ipc, 0},
    {"host memory: pinned, mapped, managed, scopes, host pool", host_memory, 0},
    {"registered, NUMA-placed and managed pools", numa_pools, 0},
    {"deferred deallocation and defer_cleanup", dealloc, 0},
    {"memoize, kernel cache, globals, const arrays", kernels, 0},
    {"interop: CUDA Array Interface, DLPack, pointer query, IPC handle", interop, 0},
    {"copies between two devices: peer access and staged, either side strided", peers, 2},
};
const size_t n_scenarios = sizeof scenarios / sizeof scenarios[0];
