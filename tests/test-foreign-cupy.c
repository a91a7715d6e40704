/*
 * test-foreign-cupy.c - CuPy's C-function allocator over the foreign tier
 * (gpumem_cupy_malloc, gpumem_cupy_free) and the free on the allocation's
 * own stream (GPUMEM_FOREIGN_STREAM_ALLOCATED), called as CuPy calls them:
 * through their C signatures, with a param whose current_stream and
 * set_error stand in for CuPy's C API and CPython's PyErr_SetString.
 *
 * An internal test: streams are held back with a host function
 * (stream-gate.h), so that pending work is deterministic.
 */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "gpumem.h"
#define GPUMEM_EXPERIMENTAL
#include "gpumem/experimental/foreign.h"
#include "stream-gate.h"
#include "tap.h"

static gpumem_context *fctx;

/* CuPy's malloc and free types (cupy/cuda/memory.pyx). */
typedef void *(*cupy_malloc_fn)(void *, size_t, int);
typedef void (*cupy_free_fn)(void *, void *, int);
static const cupy_malloc_fn cupy_malloc = gpumem_cupy_malloc;
static const cupy_free_fn cupy_free = gpumem_cupy_free;

/* The stand-ins for CuPy's current stream and Python's error state. */
static intptr_t current;   /* what current_stream returns */
static int py_error;       /* an exception is set */
static void *raised_type;  /* the type set_error was given */
static char raised[512];   /* and its message */
static int raises;         /* set_error's calls */

static intptr_t current_stream(void)
{
    return current;
}

static void *error_occurred(void)
{
    return py_error ? &py_error : NULL;
}

static void set_error(void *type, const char *message)
{
    raises++;
    py_error = 1;
    raised_type = type;
    snprintf(raised, sizeof raised, "%s", message);
}

static int oom_type, error_type; /* their addresses are the "types" */

static struct gpumem_cupy_param param = {
    .size = sizeof(struct gpumem_cupy_param),
    .current_stream = current_stream,
    .error_occurred = error_occurred,
    .set_error = set_error,
    .out_of_memory = &oom_type,
    .error = &error_type,
};

static void clear_error(void)
{
    py_error = 0;
    raises = 0;
    raised_type = NULL;
    raised[0] = '\0';
}

static void test_allocated_stream(void)
{
    enum { N = 8192 };
    gpumem_stream *S = NULL, *T = NULL;
    void *s = NULL, *t = NULL;
    gpumem_stream_create(fctx, GPUMEM_STREAM_NON_BLOCKING, &S);
    gpumem_stream_create(fctx, GPUMEM_STREAM_NON_BLOCKING, &T);
    gpumem_foreign_stream_handle(S, &s);
    gpumem_foreign_stream_handle(T, &t);

    void *x = NULL, *y = NULL, *x2 = NULL, *u = NULL;
    is_int(gpumem_foreign_alloc("cupy", 0, N, s, &x), GPUMEM_OK, "allocate X on stream S");
    hold_stream_of(fctx, s);
    is_int(gpumem_foreign_free(x, GPUMEM_FOREIGN_STREAM_ALLOCATED), GPUMEM_OK,
           "free X on the allocation's stream, S's work pending");
    is_int(gpumem_foreign_alloc("cupy", 0, N, t, &y), GPUMEM_OK, "allocate the same size on T");
    ok(y != NULL && y != x, "T does not get X while S's work is pending: the free was ordered on S");
    is_int(gpumem_foreign_alloc("cupy", 0, N, s, &x2), GPUMEM_OK, "allocate on S");
    ok(x2 == x, "S gets X at once");
    gpumem_foreign_free(x2, GPUMEM_FOREIGN_STREAM_ALLOCATED); /* S is still held: X's event is pending */
    release_stream_of(fctx, s);                               /* now it has completed */
    is_int(gpumem_foreign_alloc("cupy", 0, N, t, &u), GPUMEM_OK, "allocate on T again");
    ok(u == x, "once S's work is done, T gets X");

    /* An explicit stream still names the free's stream, not the allocation's. */
    hold_stream_of(fctx, s);
    is_int(gpumem_foreign_free(u, s), GPUMEM_OK, "free on S a block allocated on T");
    void *v = NULL;
    gpumem_foreign_alloc("cupy", 0, N, t, &v);
    ok(v != x, "T does not get it while S's work is pending");
    release_stream_of(fctx, s);
    gpumem_foreign_free(v, GPUMEM_FOREIGN_STREAM_ALLOCATED);
    gpumem_foreign_free(y, GPUMEM_FOREIGN_STREAM_ALLOCATED);

    /* The stream object stays alive with the pointer: destroying the
     * library stream before the free leaves the free well defined. */
    void *z = NULL;
    gpumem_stream *R = NULL;
    void *r = NULL;
    gpumem_stream_create(fctx, GPUMEM_STREAM_NON_BLOCKING, &R);
    gpumem_foreign_stream_handle(R, &r);
    is_int(gpumem_foreign_alloc("cupy", 0, N, r, &z), GPUMEM_OK, "allocate on stream R");
    is_int(gpumem_foreign_free(z, GPUMEM_FOREIGN_STREAM_ALLOCATED), GPUMEM_OK, "free it on R");
    gpumem_stream_destroy(R);

    /* 4 is no stream to allocate on. */
    void *w = (void *)0x1;
    is_int(gpumem_foreign_alloc("cupy", 0, N, GPUMEM_FOREIGN_STREAM_ALLOCATED, &w), GPUMEM_ERROR_INVALID_VALUE,
           "allocating on GPUMEM_FOREIGN_STREAM_ALLOCATED");
    ok(w == (void *)0x1, "leaves ptr unchanged");
    ok(strstr(gpumem_last_error(), "allocation's stream") != NULL, "and the message says what 4 is: %s",
       gpumem_last_error());
    gpumem_stream_destroy(S);
    gpumem_stream_destroy(T);
}

static void test_cupy_functions(void)
{
    enum { N = 4096 };
    gpumem_stream *S = NULL;
    void *s = NULL;
    gpumem_stream_create(fctx, GPUMEM_STREAM_NON_BLOCKING, &S);
    gpumem_foreign_stream_handle(S, &s);
    struct gpumem_foreign_stats before = {.size = sizeof before}, after = {.size = sizeof after};
    gpumem_foreign_stats("cupy", &before);

    clear_error();
    current = (intptr_t)s;
    void *a = cupy_malloc(&param, N, 0);
    ok(a != NULL && raises == 0, "gpumem_cupy_malloc on CuPy's current stream S");
    int device = -1;
    size_t size = 0;
    gpumem_memory_kind kind = GPUMEM_MEMORY_HOST;
    is_int(gpumem_foreign_lookup(a, &device, NULL, &size, &kind), GPUMEM_OK, "it is a live foreign allocation");
    ok(device == 0 && size == N && kind == GPUMEM_MEMORY_DEVICE, "of device 0, %d bytes of device memory", N);
    gpumem_foreign_stats("cupy", &after);
    is_int((int)(after.device_count - before.device_count), 1, "counted for the runtime \"cupy\"");

    /* the free goes on S, where it was allocated, though CuPy names none */
    hold_stream_of(fctx, s);
    current = 0;
    cupy_free(&param, a, 0);
    ok(gpumem_foreign_lookup(a, NULL, NULL, NULL, NULL) == GPUMEM_ERROR_INVALID_VALUE, "gpumem_cupy_free freed it");
    void *b = cupy_malloc(&param, N, 0);
    ok(b != NULL && b != a, "the null stream does not get it while S's work is pending");
    current = (intptr_t)s;
    void *c = cupy_malloc(&param, N, 0);
    ok(c == a, "S gets it at once");
    release_stream_of(fctx, s);
    cupy_free(&param, c, 0);

    /* CuPy's null stream: legacy-only, no event recorded at the free */
    hold_stream_of(fctx, NULL);
    cupy_free(&param, b, 0);
    current = 0;
    void *d = cupy_malloc(&param, N, 0);
    ok(d == b, "a block freed on the null stream is reused at once on it");
    release_stream_of(fctx, NULL);
    cupy_free(&param, d, 0);
    cupy_free(&param, NULL, 0); /* a no-op */
    gpumem_foreign_stats("cupy", &after);
    is_int((int)(after.device_count - before.device_count), 0, "every block freed");

    /* failures reach Python as exceptions, of the right type */
    clear_error();
    ok(cupy_malloc(&param, (size_t)1 << 62, 0) == NULL, "4 EiB fails");
    ok(raises == 1 && raised_type == &oom_type, "with the out-of-memory type");
    ok(strstr(raised, "gpumem_foreign_alloc") != NULL, "its message is the library's: %s", raised);
    clear_error();
    current = 7;
    ok(cupy_malloc(&param, N, 0) == NULL, "a current stream of 7 fails");
    ok(raises == 1 && raised_type == &error_type, "with the other type");
    ok(strstr(raised, "stream 0x7") != NULL, "naming the stream: %s", raised);
    clear_error();
    ok(cupy_malloc(&param, N, 7) == NULL && raises == 1 && raised_type == &error_type, "device 7 fails likewise");

    /* CuPy's current_stream failed: its exception stands */
    clear_error();
    current = -1;
    py_error = 1;
    ok(cupy_malloc(&param, N, 0) == NULL, "current_stream -1 with an exception set fails");
    is_int(raises, 0, "and set_error is not called over it");
    clear_error();

    /* a bad param: nothing to raise with, the message in gpumem_last_error() */
    ok(cupy_malloc(NULL, N, 0) == NULL, "a NULL param fails");
    ok(strstr(gpumem_last_error(), "'param'") != NULL, "naming param: %s", gpumem_last_error());
    struct gpumem_cupy_param small = param;
    small.size = sizeof small - 1;
    ok(cupy_malloc(&small, N, 0) == NULL, "a param whose size is too small fails");
    ok(strstr(gpumem_last_error(), "size") != NULL && raises == 0, "naming its size: %s", gpumem_last_error());
    struct gpumem_cupy_param partial = param;
    partial.set_error = NULL;
    ok(cupy_malloc(&partial, N, 0) == NULL, "a param without set_error fails");
    ok(strstr(gpumem_last_error(), "set_error") != NULL, "naming it: %s", gpumem_last_error());
    gpumem_foreign_stats("cupy", &after);
    is_int((int)(after.device_count - before.device_count), 0, "no failure allocated anything");

    /* a free of a pointer this tier did not make changes nothing */
    int x;
    cupy_free(&param, &x, 0);
    ok(strstr(gpumem_last_error(), "no live allocation") != NULL, "a foreign pointer's free is refused: %s",
       gpumem_last_error());
    gpumem_stream_destroy(S);
}

int main(void)
{
    if (gpumem_foreign_context(0, &fctx) != GPUMEM_OK)
        bail_out("no foreign context: %s", gpumem_last_error());
    test_allocated_stream();
    test_cupy_functions();
    done_testing();
    return exit_status();
}
