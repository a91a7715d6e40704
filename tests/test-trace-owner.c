/*
 * test-trace-owner - who holds memory in a trace (doc/trace-format.md,
 * version 2: an allocation's owner): the program's arrays are the
 * program's, and the library's own memory is marked as such: a staged
 * upload's staging slots, a queued download's bounce block, a strided
 * copy's device scratch.  A version 1 trace still reads (its allocations
 * are the program's), and an owner the format does not define is corrupt.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gpumem.h>

#include "tap.h"
#include "trace_read.h"

#define CHECK(call) \
    do { \
        gpumem_status st_ = (call); \
        if (st_ != GPUMEM_OK) \
            bail_out("%s: %s", #call, gpumem_last_error()); \
    } while (0)

/* The allocations of t: how many of each owner; and whether a copy took
 * the named path. */
static void owners(const tr_trace *t, int count[GM_TO_LAST + 1])
{
    memset(count, 0, (GM_TO_LAST + 1) * sizeof *count);
    for (size_t i = 0; i < t->nev; i++)
        if (t->ev[i].type == GM_TE_ALLOC && t->ev[i].aux <= GM_TO_LAST)
            count[t->ev[i].aux]++;
}

static int took_path(const tr_trace *t, const char *path)
{
    for (size_t i = 0; i < t->nev; i++)
        if (t->ev[i].type == GM_TE_COPY && strcmp(tr_str(t, t->ev[i].ref), path) == 0)
            return 1;
    return 0;
}

static unsigned char *slurp(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        bail_out("%s: %s", path, strerror(errno));
    unsigned char *d = malloc(64u << 20);
    *size = fread(d, 1, 64u << 20, f);
    fclose(f);
    return d;
}

int main(void)
{
    const char *tmp = getenv("TMPDIR") != NULL && getenv("TMPDIR")[0] ? getenv("TMPDIR") : "/tmp";
    char path[512];
    snprintf(path, sizeof path, "%s/test-trace-owner.%ld.gmt", tmp, (long)getpid());
    unsetenv("GPUMEM_TRACE");
    int sim = getenv("GPUMEM_BACKEND") != NULL && strcmp(getenv("GPUMEM_BACKEND"), "sim") == 0;

    gpumem_context *ctx = NULL;
    gpumem_stream *s = NULL;
    CHECK(gpumem_context_create(0, &ctx));
    CHECK(gpumem_stream_create(ctx, 0, &s));
    CHECK(gpumem_trace_start(path, 0));
    const gpumem_dtype *f32 = gpumem_dtype_builtin(GPUMEM_FLOAT32);
    int64_t n = 4 << 20, shape2[2] = {1024, 1024};
    float *host = calloc((size_t)n, sizeof *host);
    gpumem_array *h = NULL, *h2 = NULL, *d = NULL, *d2 = NULL, *v = NULL;
    CHECK(gpumem_host_array_wrap(host, 1, &n, NULL, f32, &h));
    CHECK(gpumem_host_array_wrap(host, 2, shape2, NULL, f32, &h2));
    CHECK(gpumem_device_array(ctx, 1, &n, NULL, f32, 'C', NULL, &d));
    CHECK(gpumem_array_copy(d, h, NULL)); /* an upload from pageable memory: staged */
    CHECK(gpumem_array_copy(h, d, s));    /* a download into it, queued: through a bounce block */
    CHECK(gpumem_stream_synchronize(s));
    CHECK(gpumem_device_array(ctx, 2, shape2, NULL, f32, 'C', NULL, &d2));
    CHECK(gpumem_array_transpose(d2, NULL, &v));
    CHECK(gpumem_array_copy(h2, v, NULL)); /* a strided download: packed in device scratch */
    CHECK(gpumem_array_release(v));
    CHECK(gpumem_array_release(d2));
    CHECK(gpumem_array_release(d));
    CHECK(gpumem_trace_stop());

    tr_trace t;
    char msg[1024];
    tr_status st = tr_load(path, 0, &t, msg, sizeof msg);
    ok(st == TR_OK && t.version == GM_TRACE_VERSION, "the trace reads back, of version %u", (unsigned)t.version);
    if (st != TR_OK)
        bail_out("%s", msg);
    int count[GM_TO_LAST + 1];
    owners(&t, count);
    is_int(count[GM_TO_PROGRAM], 2, "the program's two device arrays are the program's");
    if (sim || took_path(&t, "staged"))
        ok(count[GM_TO_STAGING] >= 1 && took_path(&t, "staged"), "the staged upload's slots are the library's "
           "staging slots (%d)", count[GM_TO_STAGING]);
    else
        skip(1, "the upload was not staged on this backend");
    ok(count[GM_TO_BOUNCE] == 1, "the queued download's bounce block is the library's (%d)", count[GM_TO_BOUNCE]);
    if (sim || took_path(&t, "device-pack"))
        ok(count[GM_TO_SCRATCH] >= 1 && took_path(&t, "device-pack"), "the strided download's scratch is the "
           "library's copy scratch (%d)", count[GM_TO_SCRATCH]);
    else
        skip(1, "the strided download was not packed on the device on this backend");
    for (size_t i = 0; i < t.nev; i++) /* the library's own is page-locked or device memory as it should be */
        if (t.ev[i].type == GM_TE_ALLOC && t.ev[i].aux != GM_TO_PROGRAM &&
            t.ev[i].kind != (t.ev[i].aux == GM_TO_SCRATCH ? GPUMEM_MEMORY_DEVICE : GPUMEM_MEMORY_PINNED))
            ok(0, "allocation of %s has kind %s", tr_owner_name((int)t.ev[i].aux), tr_kind_name(t.ev[i].kind));
    is_str(tr_owner_name(GM_TO_BOUNCE), "bounce blocks", "the owners' names");

    /* the same file as version 1: its allocations read as the program's */
    size_t size = 0;
    unsigned char *data = slurp(path, &size);
    data[GM_TH_VERSION] = 1;
    tr_trace t1;
    st = tr_parse(data, size, 0, "v1", &t1, msg, sizeof msg);
    ok(st == TR_OK, "a version 1 trace reads (%s)", msg);
    if (st == TR_OK) {
        owners(&t1, count);
        ok(count[GM_TO_PROGRAM] == count[0] && count[GM_TO_SCRATCH] + count[GM_TO_STAGING] + count[GM_TO_BOUNCE] +
                   count[GM_TO_TEMPORARY] == 0 && t1.nev == t.nev,
           "in version 1, every allocation is the program's (%d of %zu events)", count[0], t1.nev);
        tr_free(&t1);
    }
    /* an owner the format does not define */
    data[GM_TH_VERSION] = 2;
    size_t at = 0; /* the bounce block's record: type, kind, bytes and owner */
    for (size_t i = 0; i < t.nev && at == 0; i++)
        if (t.ev[i].type == GM_TE_ALLOC && t.ev[i].aux == GM_TO_BOUNCE)
            for (size_t o = 64; o + 64 <= size; o++) {
                uint64_t bytes = 0;
                for (int k = 7; k >= 0; k--)
                    bytes = bytes << 8 | data[o + GM_TR_BYTES + k];
                if (data[o] == GM_TE_ALLOC && data[o + GM_TR_KIND] == t.ev[i].kind && bytes == t.ev[i].bytes &&
                    memcmp(data + o + GM_TR_AUX, "\3\0\0\0", 4) == 0) {
                    at = o;
                    break;
                }
            }
    ok(at != 0, "the bounce block's record is found in the file");
    data[at + GM_TR_AUX] = GM_TO_LAST + 1;
    st = tr_parse(data, size, 0, "bad", &t1, msg, sizeof msg);
    ok(st == TR_CORRUPT && strstr(msg, "owner 5 is not one of this format's (0 to 4)") != NULL, "an unknown owner is "
       "corrupt: %s", msg);
    data[GM_TH_VERSION] = 3;
    st = tr_parse(data, size, 0, "v3", &t1, msg, sizeof msg);
    ok(st == TR_VERSION && strstr(msg, "trace format version 3; this gpumem reads versions 1 to 2") != NULL,
       "a later version is refused: %s", msg);
    free(data);
    tr_free(&t);
    tr_symbols_free();
    unlink(path);
    CHECK(gpumem_array_release(h));
    CHECK(gpumem_array_release(h2));
    CHECK(gpumem_stream_destroy(s));
    CHECK(gpumem_context_release(ctx));
    free(host);
    done_testing();
    return exit_status();
}
