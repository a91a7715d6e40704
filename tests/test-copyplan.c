/* The copy planner (lib/copyplan.c): exact plans for the documented cases,
 * then randomized layouts checked against an element-wise reference. */
#include "config.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "copyplan.h"
#include "gpumem/status.h"
#include "rng.h"
#include "tap.h"

#define PAD 16         /* bytes around each buffer that must stay untouched */
#define SENTINEL 0xFF  /* never a source byte, so any stray write shows */
#define NRANDOM 4000
#define NCONTIG 1000
#define MAXD 6

/* ------------------------------------------------------------------ rng -- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
    return splitmix64(&rng_state); /* the same sequence everywhere for a seed */
}

static int64_t rnd_below(int64_t n)
{
    return (int64_t)(rnd() % (uint64_t)n);
}

/* ------------------------------------------------------------ reference -- */

static int64_t elements(int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++)
        n *= shape[i];
    return n;
}

/* The bytes an array touches relative to its data pointer: [lo, hi). */
static void span_of(int ndim, const int64_t *shape, const int64_t *st, size_t isz, int64_t *lo, int64_t *hi)
{
    *lo = *hi = 0;
    if (elements(ndim, shape) == 0)
        return;
    for (int i = 0; i < ndim; i++) {
        int64_t t = (shape[i] - 1) * st[i];
        if (t < 0)
            *lo += t;
        else
            *hi += t;
    }
    *hi += (int64_t)isz;
}

enum { V_OK, V_ELEMENT, V_GAP };

/* Runs the plan on the host between freshly filled buffers and compares the
 * destination buffer, byte for byte, with an element-wise copy made by
 * plain index arithmetic: element bytes must match, all others keep the
 * sentinel.  *where gets the first bad byte's offset from the data pointer. */
static int verify(const gm_copy_plan *p, int ndim, const int64_t *shape, const int64_t *ss, const int64_t *ds,
                  size_t isz, int64_t *where)
{
    int64_t slo, shi, dlo, dhi;
    span_of(ndim, shape, ss, isz, &slo, &shi);
    span_of(ndim, shape, ds, isz, &dlo, &dhi);
    size_t slen = (size_t)(shi - slo) + 2 * PAD, dlen = (size_t)(dhi - dlo) + 2 * PAD;
    unsigned char *sbuf = malloc(slen), *dbuf = malloc(dlen), *ref = malloc(dlen), *mask = calloc(dlen, 1);
    if (sbuf == NULL || dbuf == NULL || ref == NULL || mask == NULL)
        bail_out("out of memory");
    for (size_t i = 0; i < slen; i++)
        sbuf[i] = (unsigned char)(rnd() % 255);
    memset(dbuf, SENTINEL, dlen);
    memset(ref, SENTINEL, dlen);
    const unsigned char *src = sbuf + PAD - slo;
    size_t dbase = (size_t)(PAD - dlo);

    int64_t idx[GM_MAX_NDIM] = {0};
    for (int64_t e = 0, n = elements(ndim, shape); e < n; e++) {
        int64_t so = 0, dof = 0;
        for (int i = 0; i < ndim; i++) {
            so += idx[i] * ss[i];
            dof += idx[i] * ds[i];
        }
        memcpy(ref + dbase + dof, src + so, isz);
        memset(mask + dbase + dof, 1, isz);
        for (int i = ndim - 1; i >= 0 && ++idx[i] == shape[i]; i--)
            idx[i] = 0;
    }

    gm_copy_plan_run_host(p, src, dbuf + dbase);
    int r = V_OK;
    for (size_t b = 0; b < dlen && r == V_OK; b++) {
        if (mask[b] ? dbuf[b] != ref[b] : dbuf[b] != SENTINEL) {
            r = mask[b] ? V_ELEMENT : V_GAP;
            *where = (int64_t)b - (int64_t)dbase;
        }
    }
    free(sbuf);
    free(dbuf);
    free(ref);
    free(mask);
    return r;
}

typedef struct tally {
    uint64_t copies, bytes;
} tally;

static gpumem_status tally_fn(void *arg, const gm_copy_plan *p, int64_t so, int64_t dof)
{
    tally *t = arg;
    t->copies++;
    t->bytes += p->width * p->height * p->depth;
    return GPUMEM_OK;
}

/* ----------------------------------------------------------- named cases -- */

typedef struct want {
    int dims;
    int64_t src_offset, dst_offset;
    size_t width, height, depth, src_pitch, dst_pitch, src_height, dst_height;
    int nloops;
    int64_t ext[4], ls[4], ld[4];
    uint64_t count;
} want;

static void show_plan(const gm_copy_plan *p)
{
    diag("  dims %d offsets %" PRId64 "/%" PRId64 " width %zu height %zu depth %zu pitches %zu/%zu heights %zu/%zu"
         " count %" PRIu64,
         p->dims, p->src_offset, p->dst_offset, p->width, p->height, p->depth, p->src_pitch, p->dst_pitch,
         p->src_height, p->dst_height, gm_copy_plan_count(p));
    for (int i = 0; i < p->nloops; i++)
        diag("  loop %d: extent %" PRId64 " strides %" PRId64 "/%" PRId64, i, p->loop_extent[i],
             p->loop_src_stride[i], p->loop_dst_stride[i]);
}

/* Two results: the plan's every field, and its host run against the
 * reference.  Unset fields of w take the header's conventions (height and
 * depth 1, pitches = width for dims 1, slice heights = height for dims < 3). */
static void check_case(const char *name, int ndim, const int64_t *shape, const int64_t *ss, const int64_t *ds,
                       size_t isz, size_t max_pitch, want w)
{
    if (w.dims > 0) {
        w.height = w.height ? w.height : 1;
        w.depth = w.depth ? w.depth : 1;
        w.src_pitch = w.src_pitch ? w.src_pitch : w.width;
        w.dst_pitch = w.dst_pitch ? w.dst_pitch : w.width;
        w.src_height = w.src_height ? w.src_height : w.height;
        w.dst_height = w.dst_height ? w.dst_height : w.height;
    }
    gm_copy_plan p;
    gpumem_status st = gm_copy_plan_make(ndim, shape, ss, ds, isz, max_pitch, &p);
    bool good = st == GPUMEM_OK && p.dims == w.dims && p.src_offset == w.src_offset &&
                p.dst_offset == w.dst_offset && p.width == w.width && p.height == w.height &&
                p.depth == w.depth && p.src_pitch == w.src_pitch && p.dst_pitch == w.dst_pitch &&
                p.src_height == w.src_height && p.dst_height == w.dst_height && p.nloops == w.nloops &&
                gm_copy_plan_count(&p) == w.count;
    for (int i = 0; good && i < w.nloops; i++)
        good = p.loop_extent[i] == w.ext[i] && p.loop_src_stride[i] == w.ls[i] && p.loop_dst_stride[i] == w.ld[i];
    if (!ok(good, "%s: plan", name)) {
        if (st != GPUMEM_OK)
            diag("  status %s: %s", gpumem_status_string(st), gpumem_last_error());
        else
            show_plan(&p);
    }
    int64_t where = 0;
    int v = st == GPUMEM_OK ? verify(&p, ndim, shape, ss, ds, isz, &where) : V_ELEMENT;
    if (!ok(v == V_OK, "%s: every element copied, nothing else written", name))
        diag("  %s at destination byte %" PRId64, v == V_GAP ? "gap written" : "element wrong", where);
}

#define A(...) ((const int64_t[]){__VA_ARGS__})

static void named_cases(void)
{
    /* One 1-D copy. */
    check_case("contiguous 1-D", 1, A(10), A(4), A(4), 4, SIZE_MAX, (want){.dims = 1, .width = 40, .count = 1});
    check_case("C (2,3,4) -> C", 3, A(2, 3, 4), A(96, 32, 8), A(96, 32, 8), 8, SIZE_MAX,
               (want){.dims = 1, .width = 192, .count = 1});
    check_case("F (2,3,4) -> F", 3, A(2, 3, 4), A(8, 16, 48), A(8, 16, 48), 8, SIZE_MAX,
               (want){.dims = 1, .width = 192, .count = 1});
    check_case("a[::-1] -> b[::-1], 5 floats", 1, A(5), A(-4), A(-4), 4, SIZE_MAX,
               (want){.dims = 1, .src_offset = -16, .dst_offset = -16, .width = 20, .count = 1});
    check_case("a[::-1, ::-1] -> b[::-1, ::-1], C (3,4)", 2, A(3, 4), A(-16, -4), A(-16, -4), 4, SIZE_MAX,
               (want){.dims = 1, .src_offset = -44, .dst_offset = -44, .width = 48, .count = 1});
    check_case("extent-1 axes with any strides", 4, A(1, 4, 1, 3), A(999, 12, -7, 4), A(5, 12, 0, 4), 4,
               SIZE_MAX, (want){.dims = 1, .width = 48, .count = 1});
    check_case("only extent-1 axes", 2, A(1, 1), A(-3, 5), A(0, 0), 4, SIZE_MAX,
               (want){.dims = 1, .width = 4, .count = 1});
    check_case("0-d array", 0, NULL, NULL, NULL, 8, SIZE_MAX, (want){.dims = 1, .width = 8, .count = 1});

    /* One 2-D copy. */
    check_case("a[:, ::2] of C (4,6) -> C (4,3)", 2, A(4, 3), A(24, 8), A(12, 4), 4, SIZE_MAX,
               (want){.dims = 2, .width = 4, .height = 12, .src_pitch = 8, .dst_pitch = 4, .count = 1});
    check_case("C (4,3) -> a[:, ::2] of C (4,6)", 2, A(4, 3), A(12, 4), A(24, 8), 4, SIZE_MAX,
               (want){.dims = 2, .width = 4, .height = 12, .src_pitch = 4, .dst_pitch = 8, .count = 1});
    check_case("a[:, :4] of C (4,6) -> C (4,4)", 2, A(4, 4), A(24, 4), A(16, 4), 4, SIZE_MAX,
               (want){.dims = 2, .width = 16, .height = 4, .src_pitch = 24, .dst_pitch = 16, .count = 1});
    check_case("column a[:, 1] of C (4,6)", 1, A(4), A(24), A(4), 4, SIZE_MAX,
               (want){.dims = 2, .width = 4, .height = 4, .src_pitch = 24, .dst_pitch = 4, .count = 1});
    check_case("16-byte items at pitch 24", 1, A(5), A(24), A(16), 16, SIZE_MAX,
               (want){.dims = 2, .width = 16, .height = 5, .src_pitch = 24, .dst_pitch = 16, .count = 1});

    /* One 3-D copy. */
    check_case("a[:, :2, :3] of C (4,5,6) -> C (4,2,3)", 3, A(4, 2, 3), A(120, 24, 4), A(24, 12, 4), 4, SIZE_MAX,
               (want){.dims = 3, .width = 12, .height = 2, .depth = 4, .src_pitch = 24, .dst_pitch = 12,
                      .src_height = 5, .dst_height = 2, .count = 1});
    check_case("a[:, ::2, ::2] of C (4,6,8) -> C (4,3,4)", 3, A(4, 3, 4), A(192, 64, 8), A(48, 16, 4), 4,
               SIZE_MAX,
               (want){.dims = 3, .width = 4, .height = 4, .depth = 12, .src_pitch = 8, .dst_pitch = 4,
                      .src_height = 8, .dst_height = 4, .count = 1});

    /* Transposing copies: a loop of 2-D copies, the longer axis the level. */
    check_case("C (3,5) -> F (3,5)", 2, A(3, 5), A(20, 4), A(4, 12), 4, SIZE_MAX,
               (want){.dims = 2, .width = 4, .height = 5, .src_pitch = 4, .dst_pitch = 12, .nloops = 1,
                      .ext = {3}, .ls = {20}, .ld = {4}, .count = 3});
    check_case("F (3,5) -> C (3,5)", 2, A(3, 5), A(4, 12), A(20, 4), 4, SIZE_MAX,
               (want){.dims = 2, .width = 4, .height = 5, .src_pitch = 12, .dst_pitch = 4, .nloops = 1,
                      .ext = {3}, .ls = {4}, .ld = {20}, .count = 3});
    check_case("C (4,4) -> F (4,4): a tie keeps the inner level", 2, A(4, 4), A(16, 4), A(4, 16), 4, SIZE_MAX,
               (want){.dims = 2, .width = 4, .height = 4, .src_pitch = 16, .dst_pitch = 4, .nloops = 1,
                      .ext = {4}, .ls = {4}, .ld = {16}, .count = 4});

    /* Broadcast sources (numba#3550). */
    check_case("row of 3 floats into C (4,3)", 2, A(4, 3), A(0, 4), A(12, 4), 4, SIZE_MAX,
               (want){.dims = 1, .width = 12, .nloops = 1, .ext = {4}, .ls = {0}, .ld = {12}, .count = 4});
    check_case("column of 4 floats into C (4,3)", 2, A(4, 3), A(4, 0), A(12, 4), 4, SIZE_MAX,
               (want){.dims = 2, .width = 4, .height = 4, .src_pitch = 4, .dst_pitch = 12, .nloops = 1,
                      .ext = {3}, .ls = {0}, .ld = {4}, .count = 3});
    check_case("scalar into C (4,3)", 2, A(4, 3), A(0, 0), A(12, 4), 4, SIZE_MAX,
               (want){.dims = 1, .width = 4, .nloops = 1, .ext = {12}, .ls = {0}, .ld = {4}, .count = 12});

    /* Negative strides on one side only (numba#3723). */
    check_case("a[::-1] -> 5 floats", 1, A(5), A(-4), A(4), 4, SIZE_MAX,
               (want){.dims = 1, .width = 4, .nloops = 1, .ext = {5}, .ls = {-4}, .ld = {4}, .count = 5});
    check_case("5 floats -> b[::-1]", 1, A(5), A(4), A(-4), 4, SIZE_MAX,
               (want){.dims = 1, .src_offset = 16, .dst_offset = -16, .width = 4, .nloops = 1, .ext = {5},
                      .ls = {-4}, .ld = {4}, .count = 5});
    check_case("a[::-1, :] of C (4,6) -> C (4,6)", 2, A(4, 6), A(-24, 4), A(24, 4), 4, SIZE_MAX,
               (want){.dims = 1, .width = 24, .nloops = 1, .ext = {4}, .ls = {-24}, .ld = {24}, .count = 4});
    check_case("a[:, ::-1] of C (3,4) -> C (3,4): an outer level past the loop", 2, A(3, 4), A(16, -4),
               A(16, 4), 4, SIZE_MAX,
               (want){.dims = 2, .width = 4, .height = 3, .src_pitch = 16, .dst_pitch = 16, .nloops = 1,
                      .ext = {4}, .ls = {-4}, .ld = {4}, .count = 4});

    /* Loops beyond three levels, or where CUDA's limits say no. */
    check_case("a[::2, ::2, ::2, ::2] of C (4,6,8,10) int16", 4, A(2, 3, 4, 5), A(1920, 320, 40, 4),
               A(120, 40, 10, 2), 2, SIZE_MAX,
               (want){.dims = 3, .width = 2, .height = 5, .depth = 4, .src_pitch = 4, .dst_pitch = 2,
                      .src_height = 10, .dst_height = 5, .nloops = 2, .ext = {2, 3}, .ls = {1920, 320},
                      .ld = {120, 40}, .count = 6});
    check_case("column with max_pitch 16", 1, A(4), A(24), A(4), 4, 16,
               (want){.dims = 1, .width = 4, .nloops = 1, .ext = {4}, .ls = {24}, .ld = {4}, .count = 4});
    check_case("a[:, :4] of C (4,6) with max_pitch 20", 2, A(4, 4), A(24, 4), A(16, 4), 4, 20,
               (want){.dims = 1, .width = 16, .nloops = 1, .ext = {4}, .ls = {24}, .ld = {16}, .count = 4});
    check_case("no 3-D level when a slice has fewer rows than the height", 3, A(2, 3, 4), A(64, 32, 4),
               A(48, 16, 4), 4, SIZE_MAX,
               (want){.dims = 2, .width = 16, .height = 3, .src_pitch = 32, .dst_pitch = 16, .nloops = 1,
                      .ext = {2}, .ls = {64}, .ld = {48}, .count = 2});

    /* Nothing to copy. */
    check_case("empty (3,0,2)", 3, A(3, 0, 2), A(8, 4, 4), A(8, 4, 4), 4, SIZE_MAX, (want){.dims = 0});
    check_case("empty with a zero destination stride", 2, A(3, 0), A(4, 4), A(0, 4), 4, SIZE_MAX,
               (want){.dims = 0});
    check_case("item size 0", 1, A(3), A(0), A(0), 0, SIZE_MAX, (want){.dims = 0});
}

/* --------------------------------------------------------------- errors -- */

static void errors(void)
{
    gm_copy_plan p, before;
    memset(&p, 0x5A, sizeof p);
    memcpy(&before, &p, sizeof p);
    is_int(gm_copy_plan_make(2, A(3, 4), A(16, 4), A(0, 4), 4, SIZE_MAX, &p), GPUMEM_ERROR_INVALID_VALUE,
           "destination stride 0 on extent 3");
    like(gpumem_last_error(), "stride 0", "the message names the stride");
    like(gpumem_last_error(), "axis 0", "the message names the axis");
    ok(memcmp(&p, &before, sizeof p) == 0, "the plan is left alone on failure");
    is_int(gm_copy_plan_make(1, A(2), A(4), A(INT64_MIN), 4, SIZE_MAX, &p), GPUMEM_ERROR_OVERFLOW,
           "a destination stride of INT64_MIN");
    is_int(gm_copy_plan_make(1, A(3), A(INT64_MAX / 2), A(4), 4, SIZE_MAX, &p), GPUMEM_ERROR_OVERFLOW,
           "a source span beyond int64_t");
    is_int(gm_copy_plan_make(2, A(INT64_MAX / 2, 4), A(4, 0), A(4, 1), 1, SIZE_MAX, &p), GPUMEM_ERROR_OVERFLOW,
           "an element count beyond int64_t");
    is_int(gm_copy_plan_make(1, A(-2), A(4), A(4), 4, SIZE_MAX, &p), GPUMEM_ERROR_NEGATIVE_DIMENSION,
           "a negative extent");
    is_int(gm_copy_plan_make(-1, NULL, NULL, NULL, 4, SIZE_MAX, &p), GPUMEM_ERROR_INVALID_VALUE, "ndim -1");
    int64_t big[GM_MAX_NDIM + 1] = {0};
    is_int(gm_copy_plan_make(GM_MAX_NDIM + 1, big, big, big, 4, SIZE_MAX, &p), GPUMEM_ERROR_TOO_MANY_DIMENSIONS,
           "ndim above GM_MAX_NDIM");
    is_int(gm_copy_plan_make(1, A(3), A(4), A(4), 4, SIZE_MAX, NULL), GPUMEM_ERROR_NULL_ARGUMENT, "a NULL plan");
    is_int(gm_copy_plan_make(1, NULL, A(4), A(4), 4, SIZE_MAX, &p), GPUMEM_ERROR_NULL_ARGUMENT, "a NULL shape");
    ok(memcmp(&p, &before, sizeof p) == 0, "still left alone after every failure");
}

/* ---------------------------------------------------------------- visit -- */

typedef struct trace {
    int calls, fail_at;
    int64_t so[8], dof[8];
} trace;

static gpumem_status trace_fn(void *arg, const gm_copy_plan *p, int64_t so, int64_t dof)
{
    trace *t = arg;
    if (t->calls < 8) {
        t->so[t->calls] = so;
        t->dof[t->calls] = dof;
    }
    return ++t->calls == t->fail_at ? GPUMEM_ERROR_DRIVER : GPUMEM_OK;
}

static void visits(void)
{
    gm_copy_plan p;
    trace t = {0};
    gm_copy_plan_make(4, A(2, 3, 4, 5), A(1920, 320, 40, 4), A(120, 40, 10, 2), 2, SIZE_MAX, &p);
    gpumem_status st = gm_copy_plan_visit(&p, trace_fn, &t);
    static const int64_t wso[] = {0, 320, 640, 1920, 2240, 2560}, wdo[] = {0, 40, 80, 120, 160, 200};
    ok(st == GPUMEM_OK && t.calls == 6 && memcmp(t.so, wso, sizeof wso) == 0 && memcmp(t.dof, wdo, sizeof wdo) == 0,
       "visit: an odometer over the loops, outermost first");

    gm_copy_plan_make(1, A(5), A(4), A(-4), 4, SIZE_MAX, &p);
    t = (trace){0};
    gm_copy_plan_visit(&p, trace_fn, &t);
    static const int64_t rso[] = {16, 12, 8, 4, 0}, rdo[] = {-16, -12, -8, -4, 0};
    ok(t.calls == 5 && memcmp(t.so, rso, sizeof rso) == 0 && memcmp(t.dof, rdo, sizeof rdo) == 0,
       "visit: a flipped axis walks the source backwards");

    t = (trace){.fail_at = 3};
    gm_copy_plan_make(2, A(4, 3), A(0, 4), A(12, 4), 4, SIZE_MAX, &p);
    st = gm_copy_plan_visit(&p, trace_fn, &t);
    ok(st == GPUMEM_ERROR_DRIVER && t.calls == 3, "visit: stops at the first failure and returns it");

    t = (trace){0};
    gm_copy_plan_make(2, A(4, 0), A(0, 4), A(12, 4), 4, SIZE_MAX, &p);
    st = gm_copy_plan_visit(&p, trace_fn, &t);
    ok(st == GPUMEM_OK && t.calls == 0 && gm_copy_plan_count(&p) == 0, "visit: an empty plan issues nothing");
}

/* ------------------------------------------------------------- property -- */

static void random_perm(int n, int *perm)
{
    for (int i = 0; i < n; i++)
        perm[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)rnd_below(i + 1), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

/* Non-overlapping elements in a random axis order with random gaps: inside
 * an element's stride (padding), between runs, and whole spare rows (so
 * that 3-D slices arise), then random axes reversed. */
static void gen_nested(int ndim, const int64_t *shape, size_t isz, bool gaps, int64_t *st)
{
    int perm[MAXD];
    random_perm(ndim, perm);
    int64_t cur = (int64_t)isz;
    if (gaps && rnd_below(4) == 0)
        cur += rnd_below((int64_t)isz + 3);
    for (int k = ndim - 1; k >= 0; k--) {
        int ax = perm[k];
        int64_t n = shape[ax] > 0 ? shape[ax] : 1;
        st[ax] = cur;
        cur *= n;
        if (gaps) {
            switch (rnd_below(4)) {
            case 0: cur += rnd_below(2 * (int64_t)isz + 3); break;
            case 1: cur += st[ax] * rnd_below(2); break;
            default: break;
            }
        }
    }
    for (int i = 0; i < ndim; i++)
        if (rnd_below(4) == 0)
            st[i] = -st[i];
}

static void junk_unit_axes(int ndim, const int64_t *shape, int64_t *st)
{
    for (int i = 0; i < ndim; i++)
        if (shape[i] == 1 && rnd_below(2) == 0)
            st[i] = rnd_below(201) - 100;
}

static void random_shape(int *ndim, int64_t *shape)
{
    *ndim = (int)rnd_below(MAXD + 1);
    for (int i = 0; i < *ndim; i++)
        shape[i] = rnd_below(20) == 0 ? 0 : 1 + rnd_below(5);
}

static size_t random_itemsize(void)
{
    static const size_t sizes[] = {1, 2, 4, 8, 16};
    return sizes[rnd_below(5)];
}

static void property_random(void)
{
    int made = 0, bad_elem = 0, bad_gap = 0, bad_count = 0, bad_bytes = 0, bad_many = 0, bad_shape = 0;
    int bad_det = 0, bad_empty = 0, seen[4] = {0};
    for (int c = 0; c < NRANDOM; c++) {
        int ndim;
        int64_t shape[MAXD], ss[MAXD], ds[MAXD];
        random_shape(&ndim, shape);
        size_t isz = random_itemsize();
        gen_nested(ndim, shape, isz, true, ds);
        if (rnd_below(8) == 0) {
            memcpy(ss, ds, sizeof ss);
        } else if (rnd_below(5) == 0) {
            for (int i = 0; i < ndim; i++)
                ss[i] = rnd_below(8 * (int64_t)isz + 1) - 4 * (int64_t)isz; /* overlapping reads are fine */
        } else {
            gen_nested(ndim, shape, isz, true, ss);
            for (int i = 0; i < ndim; i++)
                if (rnd_below(6) == 0)
                    ss[i] = 0;
        }
        junk_unit_axes(ndim, shape, ss);
        junk_unit_axes(ndim, shape, ds);
        size_t max_pitch = rnd_below(5) == 0 ? (size_t)(1 + rnd_below(64)) : SIZE_MAX;

        gm_copy_plan p, q;
        if (gm_copy_plan_make(ndim, shape, ss, ds, isz, max_pitch, &p) != GPUMEM_OK) {
            diag("case %d: %s", c, gpumem_last_error());
            continue;
        }
        made++;
        seen[p.dims]++;
        int64_t n = elements(ndim, shape), where = 0;
        int v = verify(&p, ndim, shape, ss, ds, isz, &where);
        if (v != V_OK && bad_elem + bad_gap < 5)
            diag("case %d: %s at destination byte %" PRId64, c, v == V_GAP ? "gap written" : "element wrong",
                 where);
        bad_elem += v == V_ELEMENT;
        bad_gap += v == V_GAP;
        tally t = {0, 0};
        gm_copy_plan_visit(&p, tally_fn, &t);
        bad_count += t.copies != gm_copy_plan_count(&p);
        bad_bytes += t.bytes != (uint64_t)n * isz;
        bad_many += t.copies > (uint64_t)n;
        bad_empty += (p.dims == 0) != (n == 0);
        if (p.dims >= 2)
            bad_shape += p.src_pitch < p.width || p.dst_pitch < p.width || p.src_pitch > max_pitch ||
                         p.dst_pitch > max_pitch;
        if (p.dims == 3)
            bad_shape += p.src_height < p.height || p.dst_height < p.height;
        gm_copy_plan_make(ndim, shape, ss, ds, isz, max_pitch, &q);
        bad_det += memcmp(&p, &q, sizeof p) != 0;
    }
    diag("random plans by kind: %d empty, %d 1-D, %d 2-D, %d 3-D", seen[0], seen[1], seen[2], seen[3]);
    is_int(made, NRANDOM, "random: every plan is made");
    is_int(bad_elem, 0, "random: every element equals the reference");
    is_int(bad_gap, 0, "random: every non-element byte keeps the sentinel");
    is_int(bad_count, 0, "random: visits == gm_copy_plan_count");
    is_int(bad_bytes, 0, "random: bytes copied == elements * itemsize");
    is_int(bad_many, 0, "random: never more copies than elements");
    is_int(bad_empty, 0, "random: dims 0 exactly for empty arrays");
    is_int(bad_shape, 0, "random: pitches >= width and <= max_pitch, slice heights >= height");
    is_int(bad_det, 0, "random: the same arguments give the same plan");
    ok(seen[0] > 0 && seen[1] > 0 && seen[2] > 0 && seen[3] > 0, "random: every kind of plan was exercised");
}

/* Both sides contiguous in the same (random) axis order, the same axes
 * reversed, junk strides on extent-1 axes: always one 1-D copy. */
static void property_contiguous(void)
{
    int bad_plan = 0, bad_copy = 0;
    for (int c = 0; c < NCONTIG; c++) {
        int ndim;
        int64_t shape[MAXD], ss[MAXD], ds[MAXD];
        random_shape(&ndim, shape);
        size_t isz = random_itemsize();
        gen_nested(ndim, shape, isz, false, ds);
        memcpy(ss, ds, sizeof ss);
        junk_unit_axes(ndim, shape, ss);
        junk_unit_axes(ndim, shape, ds);
        int64_t n = elements(ndim, shape), where = 0;
        gm_copy_plan p;
        if (gm_copy_plan_make(ndim, shape, ss, ds, isz, SIZE_MAX, &p) != GPUMEM_OK ||
            (n > 0 ? p.dims != 1 || gm_copy_plan_count(&p) != 1 || p.width != (uint64_t)n * isz || p.nloops != 0
                   : p.dims != 0 || gm_copy_plan_count(&p) != 0)) {
            if (bad_plan++ < 5)
                show_plan(&p);
            continue;
        }
        bad_copy += verify(&p, ndim, shape, ss, ds, isz, &where) != V_OK;
    }
    is_int(bad_plan, 0, "contiguous: count == 1 (0 when empty), one row of all the bytes");
    is_int(bad_copy, 0, "contiguous: the copy matches the reference");
}

int main(void)
{
    const char *env = getenv("GPUMEM_TEST_SEED");
    uint64_t seed = env != NULL && *env != '\0' ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);
    rng_state = seed;
    diag("seed %" PRIu64 " (set GPUMEM_TEST_SEED to repeat)", seed);

    named_cases();
    errors();
    visits();
    property_random();
    property_contiguous();
    done_testing();
    return exit_status();
}
