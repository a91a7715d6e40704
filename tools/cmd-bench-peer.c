/*
 * cmd-bench-peer.c - gpumem bench --peer: copies between devices 0 and 1,
 * both ways, 256 MiB of float32 useful bytes (--quick: 1 MiB), each beside
 * its baselines in the same run.
 *
 * With peer access (group "peer"):
 *   - "contiguous": the library (path peer) and cuMemcpyPeer ("driver");
 *   - "[::2]": every other element of one array into every other element
 *     of another (both sides strided);
 *   - "[:, ::2] -> C": every other column of an R x 2C array into a C-order
 *     R x C array;
 *   - "C -> [:, ::2]": the other way;
 *   - "transposed -> C": the transpose of a C-order C x R array into a
 *     C-order R x C array;
 *   each strided case also by a plain kernel that copies one element per
 *   thread through the peer mapping (tools/bench-kernel.cu), run on the
 *   destination's device reading the source ("kernel-pull") and on the
 *   source's device writing the destination ("kernel-push"); a note gives
 *   the library's figure as a percentage of the contiguous one.
 * Staged (gpumem_peer_set_enabled(0)): "contiguous staged" and "[::2]
 * staged", beside pinned D2H on the source's device and pinned H2D on the
 * destination's device of the same bytes, each by the library; a note
 * gives the staged figure as a percentage of the slower of the two.
 *
 * Each figure is the median of the runs (after one warm-up), every run
 * complete when timed.  The plain kernel needs a GPU (the simulator runs
 * only the library's kernels): there its rows are skipped with a note.
 */
#include "config.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpumem.h>

#include "cmd-bench.h"

extern const char gm_bench_kernel_ptx[];
extern const size_t gm_bench_kernel_ptx_size;

/* ---- the runs ----------------------------------------------------------------------------------------------- */

/* cuMemcpyPeer, called directly (the cuda backend only). */
static struct {
    int (*memcpy_peer)(unsigned long long, void *, unsigned long long, void *, size_t);
    int (*ctx_synchronize)(void);
    int (*ctx_set_current)(void *);
    void *ctx[2];
    int ok;
} drv;

static void driver_open(void)
{
    void *h = bench_driver();
    if (h == NULL)
        return;
    *(void **)&drv.memcpy_peer = dlsym(h, "cuMemcpyPeer");
    *(void **)&drv.ctx_synchronize = dlsym(h, "cuCtxSynchronize");
    *(void **)&drv.ctx_set_current = dlsym(h, "cuCtxSetCurrent");
    drv.ok = drv.memcpy_peer && drv.ctx_synchronize && drv.ctx_set_current &&
             bench_driver_primary(h, 0, &drv.ctx[0]) == 0 && bench_driver_primary(h, 1, &drv.ctx[1]) == 0;
}

typedef struct drv_run {
    unsigned long long dst, src;
    int to, from;
    size_t bytes;
} drv_run;

static int run_drv(void *arg)
{
    drv_run *c = arg;
    return drv.memcpy_peer(c->dst, drv.ctx[c->to], c->src, drv.ctx[c->from], c->bytes) != 0 ||
           drv.ctx_set_current(drv.ctx[c->to]) != 0 || drv.ctx_synchronize() != 0;
}

/* The plain kernel: dst[r * ds0 + c * ds1] = src[r * ss0 + c * ss1]
 * (elements), launched in ctx (the device that runs it). */
typedef struct kernel_run {
    gpumem_function *fn;
    gpumem_context *ctx;
    unsigned long long dst, src;
    long long rows, cols, ds0, ds1, ss0, ss1;
    gpumem_status st;
} kernel_run;

static int run_kernel(void *arg)
{
    kernel_run *k = arg;
    unsigned block[3] = {256, 1, 1};
    unsigned long long gx = ((unsigned long long)k->cols + 255) / 256;
    unsigned grid[3] = {(unsigned)(gx > 1024 ? 1024 : gx), (unsigned)(k->rows > 65535 ? 65535 : k->rows), 1};
    void *params[8] = {&k->dst, &k->src, &k->rows, &k->cols, &k->ds0, &k->ds1, &k->ss0, &k->ss1};
    if ((k->st = gpumem_launch(k->fn, grid, block, 0, NULL, params)) != GPUMEM_OK)
        return 1;
    return (k->st = gpumem_context_synchronize(k->ctx)) != GPUMEM_OK;
}

/* ---- the cases ---------------------------------------------------------------------------------------------- */

/* One view of a case: its array, and its 2-D shape in elements for the
 * plain kernel (strides in elements from element 0). */
typedef struct view {
    gpumem_array *a;
    long long rows, cols, s0, s1;
} view;

typedef struct peer_bench {
    bench_io *io;
    int reps, rc;
    gpumem_context *c[2];
    gpumem_function *fn[2]; /* the plain kernel in each context; NULL: none */
    char why_no_kernel[256];
} peer_bench;

/* The library's copy of a case: a row with its path; its GB/s, < 0 when it
 * failed (a failure other than out of memory fails the bench). */
static double lib_row(peer_bench *p, const char *name, view *to, view *from, uint64_t bytes)
{
    bench_times t;
    const char *path = NULL;
    int rc = bench_copy(p->io, p->reps, name, to->a, from->a, &t, &path);
    if (rc != 0) {
        p->rc |= rc > 0;
        return -1;
    }
    p->io->row(p->io, "peer", name, path, bytes, &t, 0, -1, -1);
    return bench_gbs(bytes, t.median);
}

static unsigned long long dev_ptr(gpumem_array *a)
{
    uint64_t v = 0;
    gpumem_array_device_pointer(a, &v);
    return (unsigned long long)v;
}

/* The plain kernel on device `on` (the destination's: pull; the source's:
 * push); its GB/s, < 0 when not run. */
static double kernel_row(peer_bench *p, const char *name, int on, const char *path, view *to, view *from,
                         uint64_t bytes)
{
    if (p->fn[on] == NULL)
        return -1;
    kernel_run k = {p->fn[on], p->c[on], dev_ptr(to->a), dev_ptr(from->a), to->rows, to->cols, to->s0, to->s1,
                    from->s0, from->s1, GPUMEM_OK};
    p->io->progress(p->io, name);
    bench_times t;
    if (bench_time(p->reps, run_kernel, &k, &t) != 0) {
        bench_note(p->io, "skipped: %s, %s: %s", name, path, gpumem_last_error());
        p->fn[0] = p->fn[1] = NULL; /* a kernel that cannot run here will not run in the next case either */
        return -1;
    }
    p->io->row(p->io, "peer", name, path, bytes, &t, 0, -1, -1);
    return bench_gbs(bytes, t.median);
}

/* A strided case from device `from` to `to`: the library, the plain
 * kernel pulled and pushed, and the target note against contiguous. */
static void strided_case(peer_bench *p, const char *what, int from, int to, view *dst, view *src, uint64_t bytes,
                         double contig)
{
    char name[96];
    snprintf(name, sizeof name, "d2d %d->%d %s", from, to, what);
    double lib = lib_row(p, name, dst, src, bytes);
    if (lib < 0)
        return;
    double pull = kernel_row(p, name, to, "kernel-pull", dst, src, bytes);
    double push = kernel_row(p, name, from, "kernel-push", dst, src, bytes);
    double plain = pull > push ? pull : push;
    char vs[96] = "";
    if (plain > 0)
        snprintf(vs, sizeof vs, "; %.2fx the plain kernel's best (%.1f GB/s)", lib / plain, plain);
    if (contig > 0)
        bench_note(p->io, "target: %s: %.1f%% of contiguous (at least 80%%)%s", name, 100.0 * lib / contig, vs);
}

/* An array of n float32 on device d (a 1-D view), or NULL (noted). */
static gpumem_array *device_floats(peer_bench *p, int d, int64_t n)
{
    gpumem_array *a = NULL;
    gpumem_status st = gpumem_device_array(p->c[d], 1, &n, NULL, gpumem_dtype_builtin(GPUMEM_FLOAT32), 'C', NULL, &a);
    if (st != GPUMEM_OK) {
        if (bench_oom(st)) {
            bench_note(p->io, "skipped: the peer rows: %s", gpumem_last_error());
        } else {
            bench_error("", "%s", gpumem_last_error());
            p->rc = 1;
        }
    }
    return a;
}

static gpumem_array *reshaped(gpumem_array *a, int64_t r, int64_t c)
{
    gpumem_array *v = NULL;
    int64_t sh[2] = {r, c};
    gpumem_array_reshape(a, 2, sh, 'C', GPUMEM_NO_COPY, NULL, &v);
    return v;
}

static gpumem_array *cols_even(gpumem_array *a2)
{
    gpumem_array *v = NULL;
    gpumem_slice s[2] = {{GPUMEM_SLICE_DEFAULT, GPUMEM_SLICE_DEFAULT, 1}, {0, GPUMEM_SLICE_DEFAULT, 2}};
    gpumem_array_slice(a2, s, 2, &v);
    return v;
}

static gpumem_array *every_other(gpumem_array *a)
{
    gpumem_array *v = NULL;
    gpumem_slice s = {0, GPUMEM_SLICE_DEFAULT, 2};
    gpumem_array_slice(a, &s, 1, &v);
    return v;
}

static gpumem_array *transposed(gpumem_array *a2)
{
    gpumem_array *v = NULL;
    gpumem_array_transpose(a2, NULL, &v);
    return v;
}

/* Pinned D2H (dir -1) from device d, or H2D (dir 1) to it, of n floats. */
static double pinned_row(peer_bench *p, int d, int dir, gpumem_array *dev, gpumem_array *host, uint64_t bytes)
{
    char name[96];
    snprintf(name, sizeof name, "%s pinned device %d", dir > 0 ? "h2d" : "d2h", d);
    view to = {dir > 0 ? dev : host, 0, 0, 0, 0}, from = {dir > 0 ? host : dev, 0, 0, 0, 0};
    return lib_row(p, name, &to, &from, bytes);
}

int bench_peer(bench_io *io, gpumem_context *ctx, int quick, int reps)
{
    (void)ctx;
    int count = 0;
    if (gpumem_device_count(&count) != GPUMEM_OK || count < 2) {
        bench_error("", "--peer needs two devices (this backend has %d)", count);
        return 1;
    }
    driver_open();
    peer_bench p = {.io = io, .reps = reps};
    const int64_t n = quick ? (1 << 18) : (64 << 20); /* float32: 1 MiB or 256 MiB */
    const int64_t R = quick ? 256 : 4096, C = n / R;  /* the 2-D cases: R x C */
    const uint64_t bytes = (uint64_t)n * 4;
    gpumem_array *a[2] = {NULL, NULL}, *w[2] = {NULL, NULL}, *host = NULL;
    gpumem_module *m[2] = {NULL, NULL};
    int was = 1;
    gpumem_peer_enabled(&was);
    for (int d = 0; d < 2 && !p.rc; d++) {
        if (gpumem_context_create(d, &p.c[d]) != GPUMEM_OK) {
            bench_error("", "%s", gpumem_last_error());
            p.rc = 1;
            break;
        }
        if ((a[d] = device_floats(&p, d, n)) == NULL || (w[d] = device_floats(&p, d, 2 * n)) == NULL)
            break;
        /* the plain kernel, in both contexts */
        gpumem_status st = gpumem_module_load(p.c[d], gm_bench_kernel_ptx, gm_bench_kernel_ptx_size, &m[d]);
        if (st == GPUMEM_OK)
            st = gpumem_module_get_function(m[d], "gm_bench_copy_f32", &p.fn[d]);
        if (st != GPUMEM_OK && p.why_no_kernel[0] == '\0')
            snprintf(p.why_no_kernel, sizeof p.why_no_kernel, "%s", gpumem_last_error());
    }
    if (p.fn[0] == NULL || p.fn[1] == NULL) {
        p.fn[0] = p.fn[1] = NULL;
        if (!p.rc && a[1] != NULL && w[1] != NULL)
            bench_note(io, "skipped: the plain kernel's rows: %s", p.why_no_kernel);
    }
    int ready = !p.rc && a[0] && a[1] && w[0] && w[1];
    /* the views of each device */
    gpumem_array *ev[2] = {NULL, NULL}, *w2[2] = {NULL, NULL}, *cols[2] = {NULL, NULL}, *a2[2] = {NULL, NULL},
                 *at[2] = {NULL, NULL}, *tr[2] = {NULL, NULL};
    for (int d = 0; d < 2 && ready; d++) {
        ev[d] = every_other(w[d]);
        w2[d] = reshaped(w[d], R, 2 * C);
        cols[d] = w2[d] != NULL ? cols_even(w2[d]) : NULL;
        a2[d] = reshaped(a[d], R, C);
        at[d] = reshaped(a[d], C, R);
        tr[d] = at[d] != NULL ? transposed(at[d]) : NULL;
        ready = ev[d] && cols[d] && a2[d] && tr[d];
    }
    double contig[2] = {0, 0};
    for (int from = 0; from < 2 && ready && !p.rc; from++) {
        int to = 1 - from;
        gpumem_peer_set_enabled(1);
        char name[96];
        snprintf(name, sizeof name, "d2d %d->%d contiguous", from, to);
        view va = {a[to], 1, n, 0, 1}, vb = {a[from], 1, n, 0, 1};
        contig[from] = lib_row(&p, name, &va, &vb, bytes);
        if (contig[from] < 0)
            continue;
        if (drv.ok) {
            drv_run dr = {dev_ptr(a[to]), dev_ptr(a[from]), to, from, (size_t)bytes};
            bench_times t;
            if (bench_time(reps, run_drv, &dr, &t) == 0) {
                io->row(io, "peer", name, "driver", bytes, &t, 0, -1, -1);
                bench_note(io, "target: %s: %.1f%% of cuMemcpyPeer (at least 95%%)", name,
                           100.0 * contig[from] / bench_gbs(bytes, t.median));
            }
        }
        view s_ev = {ev[from], 1, n, 0, 2}, d_ev = {ev[to], 1, n, 0, 2};
        strided_case(&p, "[::2]", from, to, &d_ev, &s_ev, bytes, contig[from]);
        view s_cols = {cols[from], R, C, 2 * C, 2}, d_dense = {a2[to], R, C, C, 1};
        strided_case(&p, "[:, ::2] -> C", from, to, &d_dense, &s_cols, bytes, contig[from]);
        view s_dense = {a2[from], R, C, C, 1}, d_cols = {cols[to], R, C, 2 * C, 2};
        strided_case(&p, "C -> [:, ::2]", from, to, &d_cols, &s_dense, bytes, contig[from]);
        view s_tr = {tr[from], R, C, 1, R};
        strided_case(&p, "transposed -> C", from, to, &d_dense, &s_tr, bytes, contig[from]);
    }
    /* staged, beside pinned D2H and H2D of the same bytes */
    if (ready && !p.rc) {
        int64_t nb = (int64_t)bytes;
        gpumem_status st = gpumem_pinned_array(p.c[0], 1, &nb, NULL, gpumem_dtype_builtin(GPUMEM_UINT8), 'C', &host);
        if (st != GPUMEM_OK) {
            bench_note(io, "skipped: the pinned rows: %s", gpumem_last_error());
            host = NULL;
        }
        gpumem_array *hf = NULL;
        int64_t nf = n;
        if (host != NULL) {
            void *hp = NULL;
            gpumem_array_host_pointer(host, &hp);
            gpumem_host_array_wrap(hp, 1, &nf, NULL, gpumem_dtype_builtin(GPUMEM_FLOAT32), &hf);
        }
        gpumem_peer_set_enabled(0);
        for (int from = 0; from < 2 && !p.rc; from++) {
            int to = 1 - from;
            char name[96];
            snprintf(name, sizeof name, "d2d %d->%d contiguous staged", from, to);
            view va = {a[to], 1, n, 0, 1}, vb = {a[from], 1, n, 0, 1};
            double staged = lib_row(&p, name, &va, &vb, bytes);
            snprintf(name, sizeof name, "d2d %d->%d [::2] staged", from, to);
            view s_ev = {ev[from], 1, n, 0, 2}, d_ev = {ev[to], 1, n, 0, 2};
            (void)lib_row(&p, name, &d_ev, &s_ev, bytes);
            if (hf == NULL || staged < 0)
                continue;
            double down = pinned_row(&p, from, -1, a[from], hf, bytes);
            double up = pinned_row(&p, to, 1, a[to], hf, bytes);
            double slower = down < up ? down : up;
            if (slower > 0)
                bench_note(io,
                           "target: d2d %d->%d contiguous staged: %.1f%% of the slower of pinned d2h on device %d "
                           "and h2d on device %d (at least 80%%)",
                           from, to, 100.0 * staged / slower, from, to);
        }
        gpumem_array_release(hf);
    }
    gpumem_peer_set_enabled(was);
    gpumem_array_release(host);
    for (int d = 0; d < 2; d++) {
        gpumem_array *rel[] = {tr[d], at[d], a2[d], cols[d], w2[d], ev[d], w[d], a[d]};
        for (size_t i = 0; i < sizeof rel / sizeof *rel; i++)
            gpumem_array_release(rel[i]);
        gpumem_module_release(m[d]);
        gpumem_context_release(p.c[d]);
    }
    return p.rc;
}
