/* Host memory: pinned, mapped and managed arrays; pinned()/mapped() and
 * register()/deregister() scopes with reference-counted pages; the fast
 * path from page-locked memory; prompt release of pinned memory
 * (numba#9507); asynchronous copies into pageable memory queued on the
 * stream (numba#5130). */
#include <stdlib.h>
#include <string.h>

#include <gpumem.h>

#include "arrays.h"
#include "tap.h"

static int pinned_p(const void *p, size_t n)
{
    int r = -1;
    gpumem_host_is_pinned(p, n, &r);
    return r;
}

int main(void)
{
    int sim = test_on_sim();
    if (sim) {
        setenv("GPUMEM_SIM_HOST_MEMORY", "16M", 1);
        setenv("GPUMEM_SIM_STREAM_DELAY_US", "200000", 1);
    }
    gpumem_context *ctx = NULL;
    if (gpumem_context_create_default(&ctx) != GPUMEM_OK)
        bail_out("no context: %s", gpumem_last_error());
    const gpumem_dtype *i32 = gpumem_dtype_builtin(GPUMEM_INT32);
    enum { N = 1 << 16 };
    int64_t shape[1] = {N};

    /* ---- pinned arrays */
    gpumem_array *p = NULL, *d = NULL;
    is_int(gpumem_pinned_array(ctx, 1, shape, NULL, i32, 'C', &p), GPUMEM_OK, "pinned_array of 64K int32");
    gpumem_memory_kind kind;
    gpumem_array_kind(p, &kind);
    int32_t *ph = NULL;
    gpumem_array_host_pointer(p, (void **)&ph);
    ok(kind == GPUMEM_MEMORY_PINNED && ph != NULL, "a pinned host array");
    is_int(pinned_p(ph, N * 4), 1, "its memory is page-locked");
    for (int i = 0; i < N; i++)
        ph[i] = i;
    int64_t c1 = calls("cuMemcpy"), reg = calls("cuMemHostRegister"), halloc = calls("cuMemHostAlloc");
    is_int(gpumem_to_device(ctx, p, NULL, 0, &d), GPUMEM_OK, "to_device from it");
    ok(calls("cuMemcpy") - c1 == 1 && calls("cuMemHostRegister") == reg && calls("cuMemHostAlloc") == halloc,
       "the fast path: one copy, no staging or registration");

    /* Asynchronous download into pinned memory: allowed, and really asynchronous. */
    gpumem_stream *s = NULL;
    gpumem_stream_create(ctx, 0, &s);
    memset(ph, 0xff, N * 4);
    is_int(gpumem_copy_to_host(d, p, s), GPUMEM_OK, "an asynchronous copy into pinned memory");
    if (sim)
        is_int(ph[N - 1], -1, "before the synchronize it has not landed");
    else
        skip(1, "the real GPU's timing is not deterministic");
    gpumem_stream_synchronize(s);
    is_int(ph[N - 1], N - 1, "after the synchronize it has");

    /* numba#5130: into pageable memory with a stream, the copy is queued: a
     * pinned bounce block, then a host function on the stream writes it. */
    int32_t *pageable = malloc(N * 4);
    memset(pageable, 0, N * 4);
    gpumem_array *hp = NULL;
    gpumem_host_array_wrap(pageable, 1, shape, NULL, i32, &hp);
    int64_t hf = calls("cuLaunchHostFunc");
    is_int(gpumem_copy_to_host(d, hp, s), GPUMEM_OK, "an asynchronous copy into pageable memory is queued");
    is_int(calls("cuLaunchHostFunc") - hf, 1, "...with a host function on the stream");
    if (sim)
        ok(pageable[5] == 0 && pageable[N - 1] == 0, "before the synchronize it has not landed");
    else
        skip(1, "the real GPU's timing is not deterministic");
    is_int(gpumem_stream_synchronize(s), GPUMEM_OK, "synchronize");
    ok(pageable[5] == 5 && pageable[N - 1] == N - 1, "after the synchronize it has");
    memset(pageable, 0, N * 4);
    int64_t halloc2 = calls("cuMemHostAlloc");
    is_int(gpumem_copy_to_host(d, hp, s), GPUMEM_OK, "a second queued download");
    is_int(gpumem_context_synchronize(ctx), GPUMEM_OK, "a context synchronize waits for it");
    ok(pageable[7] == 7 && pageable[N - 1] == N - 1, "...and it landed");
    is_int(calls("cuMemHostAlloc") - halloc2, 0, "the bounce block of the first was reused");
    {
        /* a strided pageable destination: every other element of 2N */
        int32_t *wide = calloc(2 * N, 4);
        int64_t wshape[1] = {2 * N};
        gpumem_array *hw = NULL;
        gpumem_host_array_wrap(wide, 1, wshape, NULL, i32, &hw);
        gpumem_array *hv = NULL;
        gpumem_slice every_other = {GPUMEM_SLICE_DEFAULT, GPUMEM_SLICE_DEFAULT, 2};
        is_int(gpumem_array_slice(hw, &every_other, 1, &hv), GPUMEM_OK, "wide[::2]");
        is_int(gpumem_copy_to_host(d, hv, s), GPUMEM_OK, "a queued download into a strided pageable view");
        /* in stream order: an upload from the same memory, queued after, reads what landed */
        gpumem_array *d2 = NULL;
        is_int(gpumem_device_array(ctx, 1, shape, NULL, i32, 'C', s, &d2), GPUMEM_OK, "a second device array");
        is_int(gpumem_copy_to_device(d2, hv, s), GPUMEM_OK, "an upload from it on the same stream");
        gpumem_stream_synchronize(s);
        int bad = 0;
        for (int i = 0; i < N && !bad; i++)
            bad = wide[2 * i] != i || wide[2 * i + 1] != 0;
        ok(!bad, "the even elements got the data, the gaps kept theirs");
        int32_t *back = malloc(N * 4);
        ok(read_all(d2, back) && back[3] == 3 && back[N - 1] == N - 1, "the upload saw the landed bytes");
        free(back);
        gpumem_array_release(d2);
        gpumem_array_release(hv);
        gpumem_array_release(hw);
        free(wide);
    }
    /* the bounce block survives its stream's destruction before a synchronize */
    gpumem_stream *s2 = NULL;
    gpumem_stream_create(ctx, 0, &s2);
    memset(pageable, 0, N * 4);
    is_int(gpumem_copy_to_host(d, hp, s2), GPUMEM_OK, "a queued download on a second stream");
    is_int(gpumem_stream_destroy(s2), GPUMEM_OK, "destroying the stream waits for it");
    ok(pageable[9] == 9, "...and it landed");
    is_int(gpumem_copy_to_host(d, hp, NULL), GPUMEM_OK, "the synchronous copy works");
    is_int(pageable[5], 5, "...with the data");

    /* ---- scopes: pinned() makes the same copy legal */
    gpumem_registration *r1 = NULL, *r2 = NULL, *stale = NULL;
    int64_t regs = calls("cuMemHostRegister");
    is_int(gpumem_pinned(ctx, &hp, 1, &r1), GPUMEM_OK, "pinned() a pageable array");
    is_int(pinned_p(pageable, N * 4), 1, "it is page-locked now");
    is_int(calls("cuMemHostRegister") - regs, 1, "one registration");
    memset(pageable, 0, N * 4);
    is_int(gpumem_copy_to_host(d, hp, s), GPUMEM_OK, "an asynchronous copy into it is accepted");
    gpumem_stream_synchronize(s);
    is_int(pageable[N / 2], N / 2, "and lands after the synchronize");

    /* Overlapping and repeated arrays: pages are reference-counted. */
    gpumem_array *half = NULL, *list[3];
    gpumem_slice second_half = {N / 2, GPUMEM_SLICE_DEFAULT, 1};
    gpumem_array_slice(hp, &second_half, 1, &half);
    list[0] = half;
    list[1] = half;
    list[2] = hp;
    regs = calls("cuMemHostRegister");
    is_int(gpumem_pinned(ctx, list, 3, &r2), GPUMEM_OK, "pinned() overlapping and repeated arrays");
    is_int(calls("cuMemHostRegister") - regs, 0, "pages already registered are not registered again");
    stale = r1;
    int64_t unregs = calls("cuMemHostUnregister");
    is_int(gpumem_unpinned(&r1), GPUMEM_OK, "end the first scope");
    ok(r1 == NULL, "the handle is cleared");
    is_int(pinned_p(pageable, N * 4), 1, "the second scope still holds the pages");
    is_int(calls("cuMemHostUnregister") - unregs, 0, "so nothing was unregistered");
    is_int(gpumem_unpinned(&r1), GPUMEM_ERROR_INVALID_STATE, "ending it again is an error");
    is_int(gpumem_unpinned(&stale), GPUMEM_ERROR_INVALID_STATE, "so is a stale copy of the handle");
    is_int(gpumem_unpinned(&r2), GPUMEM_OK, "end the second scope");
    is_int(pinned_p(pageable, N * 4), 0, "the pages are no longer page-locked");
    ok(calls("cuMemHostUnregister") - unregs >= 1, "the last end unregistered them");
    gpumem_array_release(half);

    /* Memory that is already pinned, and device memory, are handled. */
    gpumem_array *mixed[2] = {p, d};
    regs = calls("cuMemHostRegister");
    is_int(gpumem_register(ctx, mixed, 2, &r1), GPUMEM_OK, "register() a pinned and a device array");
    is_int(calls("cuMemHostRegister") - regs, 0, "needs no registration");
    is_int(gpumem_deregister(&r1), GPUMEM_OK, "deregister()");
    is_int(pinned_p(ph, N * 4), 1, "the pinned array stays pinned");
    is_int(gpumem_unmapped(&r1), GPUMEM_ERROR_INVALID_STATE, "ending with the wrong call is an error");

    /* mapped(): device views of host arrays. */
    gpumem_array *view = NULL;
    is_int(gpumem_mapped(ctx, &hp, 1, s, &r1, &view), GPUMEM_OK, "mapped() a pageable array");
    uint64_t vdev = 0;
    gpumem_array_kind(view, &kind);
    ok(kind == GPUMEM_MEMORY_MAPPED && gpumem_array_device_pointer(view, &vdev) == GPUMEM_OK && vdev != 0,
       "gives a mapped view with a device pointer");
    is_int(gpumem_unpinned(&r1), GPUMEM_ERROR_INVALID_STATE, "a mapped scope is not ended by unpinned()");
    is_int(gpumem_unmapped(&r1), GPUMEM_OK, "unmapped()");
    gpumem_array_release(view);

    /* ---- mapped arrays */
    gpumem_array *m = NULL, *md = NULL;
    is_int(gpumem_mapped_array(ctx, 1, shape, NULL, i32, 'C', s, GPUMEM_HOST_PORTABLE | GPUMEM_HOST_WRITECOMBINED,
                               &m),
           GPUMEM_OK, "mapped_array, portable and write-combined");
    int32_t *mh = NULL;
    uint64_t mdev = 0;
    gpumem_array_host_pointer(m, (void **)&mh);
    ok(gpumem_array_device_pointer(m, &mdev) == GPUMEM_OK && mdev != 0 && mh != NULL,
       "it has a host and a device pointer");
    for (int i = 0; i < N; i++)
        mh[i] = 3 * i;
    is_int(gpumem_to_device(ctx, m, NULL, 0, &md), GPUMEM_OK, "copies from it work like any array's");
    gpumem_array *pieces[4];
    size_t count = 0;
    is_int(gpumem_array_split(m, N / 4, pieces, 4, &count), GPUMEM_OK, "and so does split");
    int64_t item = 0;
    int32_t v = 0;
    item = 1;
    gpumem_array_get_item(pieces[3], &item, &v, NULL);
    is_int(v, 3 * (3 * N / 4 + 1), "a piece reads the right element");
    for (size_t i = 0; i < count; i++)
        gpumem_array_release(pieces[i]);
    is_int(gpumem_mapped_array(ctx, 1, shape, NULL, i32, 'C', NULL, 0x100, &m), GPUMEM_ERROR_INVALID_VALUE,
           "unknown mapped flags are refused");
    gpumem_array_release(md);

    /* ---- managed arrays */
    gpumem_array *g = NULL;
    is_int(gpumem_managed_array(ctx, 1, shape, NULL, i32, 'C', GPUMEM_MANAGED_ATTACH_GLOBAL, &g), GPUMEM_OK,
           "managed_array, attach-global");
    int32_t *gh = NULL;
    gpumem_array_host_pointer(g, (void **)&gh);
    for (int i = 0; i < N; i++)
        gh[i] = 7;
    gpumem_array *gd = NULL;
    gpumem_to_device(ctx, g, NULL, 0, &gd);
    int32_t seven = 0;
    gpumem_array_get_item(gd, (int64_t[]){N - 1}, &seven, NULL);
    is_int(seven, 7, "host writes reach the device");
    is_int(gpumem_managed_array(ctx, 1, shape, NULL, i32, 'C', 3, &g), GPUMEM_ERROR_INVALID_VALUE,
           "both attach flags at once are refused");
    gpumem_array_release(gd);

    /* ---- numba#9507: pinned memory is returned promptly */
    if (sim) {
        int all = 1;
        for (int i = 0; i < 64 && all; i++) { /* 64 x 1M through a 16M page-locked limit */
            gpumem_array *t = NULL;
            all = gpumem_pinned_array(ctx, 1, (int64_t[]){1 << 20}, NULL, gpumem_dtype_builtin(GPUMEM_UINT8), 'C',
                                      &t) == GPUMEM_OK;
            gpumem_array_release(t);
        }
        ok(all, "64 MiB of pinned arrays allocated and freed through a 16 MiB limit");
        gpumem_array *big = NULL;
        is_int(gpumem_pinned_array(ctx, 1, (int64_t[]){32 << 20}, NULL, gpumem_dtype_builtin(GPUMEM_UINT8), 'C',
                                   &big),
               GPUMEM_ERROR_HOST_OUT_OF_MEMORY, "32 MiB at once is more than the limit: the host's shortage");
        /* A scope that cannot be completed leaves nothing registered. */
        unsigned char *a1 = malloc(4 << 20), *a2 = malloc(20 << 20);
        gpumem_array *two[2] = {NULL, NULL};
        gpumem_host_array_wrap(a1, 1, (int64_t[]){4 << 20}, NULL, gpumem_dtype_builtin(GPUMEM_UINT8), &two[0]);
        gpumem_host_array_wrap(a2, 1, (int64_t[]){20 << 20}, NULL, gpumem_dtype_builtin(GPUMEM_UINT8), &two[1]);
        is_int(gpumem_pinned(ctx, two, 2, &r1), GPUMEM_ERROR_OUT_OF_MEMORY, "a scope over the limit fails");
        ok(r1 == NULL && pinned_p(a1, 4 << 20) == 0, "and its first array is not left registered");
        gpumem_array_release(two[0]);
        gpumem_array_release(two[1]);
        free(a1);
        free(a2);
    } else {
        skip(4, "the page-locked limit is simulated (GPUMEM_SIM_HOST_MEMORY)");
    }

    gpumem_array_release(g);
    gpumem_array_release(m);
    gpumem_array_release(hp);
    free(pageable);
    gpumem_stream_destroy(s);
    gpumem_array_release(d);
    void *old = ph;
    gpumem_array_release(p);
    is_int(pinned_p(old, 4), 0, "a released pinned array's memory is no longer known as pinned");

    /* A reshape that needs a copy keeps the memory kind (array.h). */
    for (int k = 0; k < 3; k++) {
        gpumem_array *src = NULL, *t = NULL, *flat = NULL;
        int64_t shp[2] = {4, 6}, n24 = 24;
        gpumem_memory_kind want = k == 0 ? GPUMEM_MEMORY_PINNED : k == 1 ? GPUMEM_MEMORY_MAPPED : GPUMEM_MEMORY_MANAGED;
        gpumem_status cst = k == 0   ? gpumem_pinned_array(ctx, 2, shp, NULL, i32, 'C', &src)
                            : k == 1 ? gpumem_mapped_array(ctx, 2, shp, NULL, i32, 'C', NULL, 0, &src)
                                     : gpumem_managed_array(ctx, 2, shp, NULL, i32, 'C', GPUMEM_MANAGED_ATTACH_GLOBAL,
                                                            &src);
        if (cst != GPUMEM_OK) {
            diag("kind %d: %s", (int)want, gpumem_last_error());
            skip(2, "this device has no such memory");
            continue;
        }
        int32_t *vals = NULL;
        gpumem_array_host_pointer(src, (void **)&vals);
        for (int i = 0; i < 24; i++)
            vals[i] = i;
        gpumem_array_transpose(src, NULL, &t); /* 6x4, not C-contiguous */
        gpumem_memory_kind got = GPUMEM_MEMORY_HOST;
        int32_t last = -1;
        if (gpumem_array_reshape(t, 1, &n24, 'C', 0, NULL, &flat) == GPUMEM_OK) {
            gpumem_array_kind(flat, &got);
            gpumem_array_get_item(flat, (int64_t[]){23}, &last, NULL);
        }
        is_int(got, want, "a reshape copy of a pinned/mapped/managed array has its kind");
        is_int(last, 23, "and the values in the new order");
        gpumem_array_release(flat);
        gpumem_array_release(t);
        gpumem_array_release(src);
    }
    gpumem_context_release(ctx);
    done_testing();
    return exit_status();
}
