/* gpumem_memoize and gpumem_clear_context_caches: values made once per
 * context and key, concurrent first calls, failures that are not cached,
 * recursion, destroy callbacks at clear and at the context's release, and no
 * context kept alive. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gpumem.h>

#include "setup.h"
#include "tap.h"

static atomic_int created, destroyed;
static int destroy_order[16], destroy_count;
static void *destroy_user;

static void nap_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* The value: a heap copy of the key's first int, plus 1000. */
static gpumem_status make_int(gpumem_context *ctx, const void *key, size_t key_size, void *user, void **value)
{
    (void)ctx, (void)user;
    int *v = malloc(sizeof *v);
    if (v == NULL)
        return GPUMEM_ERROR_HOST_OUT_OF_MEMORY;
    int k = 0;
    if (key_size > 0)
        memcpy(&k, key, key_size < sizeof k ? key_size : sizeof k);
    *v = k + 1000;
    atomic_fetch_add(&created, 1);
    *value = v;
    return GPUMEM_OK;
}

/* The same, under another callback: another cache. */
static gpumem_status make_int_other(gpumem_context *ctx, const void *key, size_t key_size, void *user, void **value)
{
    gpumem_status st = make_int(ctx, key, key_size, user, value);
    if (st == GPUMEM_OK)
        *(int *)*value += 1000;
    return st;
}

static void free_int(void *value, void *user)
{
    if (destroy_count < 16)
        destroy_order[destroy_count++] = *(int *)value;
    destroy_user = user;
    atomic_fetch_add(&destroyed, 1);
    free(value);
}

/* Slow: so that threads pile up on a first call. */
static gpumem_status make_slow(gpumem_context *ctx, const void *key, size_t key_size, void *user, void **value)
{
    nap_ms(100);
    return make_int(ctx, key, key_size, user, value);
}

/* Fails the first time (slowly), works afterwards. */
static atomic_int flaky_calls;
static gpumem_status make_flaky(gpumem_context *ctx, const void *key, size_t key_size, void *user, void **value)
{
    if (atomic_fetch_add(&flaky_calls, 1) == 0) {
        nap_ms(100);
        return GPUMEM_ERROR_OUT_OF_MEMORY;
    }
    return make_int(ctx, key, key_size, user, value);
}

static gpumem_status make_fail_quiet(gpumem_context *ctx, const void *key, size_t key_size, void *user,
                                     void **value)
{
    (void)ctx, (void)key, (void)key_size, (void)user, (void)value;
    return GPUMEM_ERROR_INVALID_VALUE;
}

/* Fails through a library call, whose message should reach the caller. */
static gpumem_status make_fail_said(gpumem_context *ctx, const void *key, size_t key_size, void *user,
                                    void **value)
{
    (void)ctx, (void)key, (void)key_size, (void)user, (void)value;
    char name[8];
    return gpumem_device_name(4242, name, sizeof name);
}

/* Asks for its own key. */
static gpumem_status make_recursive(gpumem_context *ctx, const void *key, size_t key_size, void *user,
                                    void **value)
{
    return gpumem_memoize(ctx, key, key_size, make_recursive, NULL, user, value);
}

/* Asks for another key of another callback: allowed. */
static gpumem_status make_nested(gpumem_context *ctx, const void *key, size_t key_size, void *user, void **value)
{
    (void)key, (void)key_size;
    int inner_key = 7;
    void *inner = NULL;
    gpumem_status st = gpumem_memoize(ctx, &inner_key, sizeof inner_key, make_int, free_int, user, &inner);
    if (st == GPUMEM_OK)
        *value = inner;
    return st;
}

/* Blocks until released: a creation in progress during a clear. */
static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static int gate_open, gate_entered;
static gpumem_status make_gated(gpumem_context *ctx, const void *key, size_t key_size, void *user, void **value)
{
    pthread_mutex_lock(&gate_mu);
    gate_entered = 1;
    pthread_cond_broadcast(&gate_cv);
    while (!gate_open)
        pthread_cond_wait(&gate_cv, &gate_mu);
    pthread_mutex_unlock(&gate_mu);
    return make_int(ctx, key, key_size, user, value);
}

typedef struct arg {
    gpumem_context *ctx;
    gpumem_memo_create_fn create;
    pthread_barrier_t *start;
    int key;
    void *value;
    gpumem_status st;
} arg;

static void *one_call(void *p)
{
    arg *a = p;
    if (a->start != NULL)
        pthread_barrier_wait(a->start);
    a->st = gpumem_memoize(a->ctx, &a->key, sizeof a->key, a->create, free_int, NULL, &a->value);
    return NULL;
}

/* Many hits on 64 keys from several threads. */
static void *many_calls(void *p)
{
    arg *a = p;
    pthread_barrier_wait(a->start);
    a->st = GPUMEM_OK;
    for (int i = 0; i < 20000 && a->st == GPUMEM_OK; i++) {
        int key = 5000 + (i * 7 + a->key) % 64;
        void *v = NULL;
        a->st = gpumem_memoize(a->ctx, &key, sizeof key, make_int, free_int, NULL, &v);
        if (a->st == GPUMEM_OK && *(int *)v != key + 1000)
            a->st = GPUMEM_ERROR_INTERNAL;
    }
    return NULL;
}

/* Runs n threads of fn on copies of proto, started together. */
static void run_threads(int n, void *(*fn)(void *), const arg *proto, arg *out)
{
    pthread_t th[16];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)n);
    for (int i = 0; i < n; i++) {
        out[i] = *proto;
        out[i].start = &start;
        out[i].key = proto->key + (fn == many_calls ? i : 0);
        pthread_create(&th[i], NULL, fn, &out[i]);
    }
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&start);
}

int main(void)
{
    gpumem_context *ctx = test_context_or_skip_all();
    int refs0 = 0, refs = 0;
    gpumem_context_refcount(ctx, &refs0);

    /* once per key */
    int k1 = 1, k2 = 2;
    void *v1 = NULL, *v1b = NULL, *v2 = NULL, *vo = NULL;
    is_int(gpumem_memoize(ctx, &k1, sizeof k1, make_int, free_int, &k1, &v1), GPUMEM_OK, "a first call");
    ok(v1 != NULL && *(int *)v1 == 1001, "computes the value");
    is_int(gpumem_memoize(ctx, &k1, sizeof k1, make_int, free_int, &k1, &v1b), GPUMEM_OK, "a second call");
    ok(v1b == v1, "gives the cached value");
    is_int(atomic_load(&created), 1, "create ran once");
    gpumem_memoize(ctx, &k2, sizeof k2, make_int, free_int, NULL, &v2);
    ok(v2 != v1 && *(int *)v2 == 1002, "another key, another value");
    gpumem_memoize(ctx, &k1, sizeof k1, make_int_other, free_int, NULL, &vo);
    ok(vo != v1 && *(int *)vo == 2001, "the same key bytes under another callback: another entry");
    is_int(atomic_load(&created), 3, "three values made");
    gpumem_context_refcount(ctx, &refs);
    is_int(refs, refs0, "the cache holds no reference on the context");

    /* keys of any bytes, and of no bytes */
    char long_key[300];
    memset(long_key, 'k', sizeof long_key);
    void *vl = NULL, *vl2 = NULL, *vn = NULL, *vn2 = NULL;
    gpumem_memoize(ctx, long_key, sizeof long_key, make_int, free_int, NULL, &vl);
    long_key[299] = 'x'; /* differs only in its last byte */
    gpumem_memoize(ctx, long_key, sizeof long_key, make_int, free_int, NULL, &vl2);
    ok(vl != vl2, "keys compare in full, to the last byte");
    is_int(gpumem_memoize(ctx, NULL, 0, make_int, free_int, NULL, &vn), GPUMEM_OK, "an empty key");
    gpumem_memoize(ctx, NULL, 0, make_int, free_int, NULL, &vn2);
    ok(vn == vn2, "is one entry");

    /* argument checks */
    void *junk = &refs;
    is_int(gpumem_memoize(ctx, NULL, 4, make_int, free_int, NULL, &junk), GPUMEM_ERROR_NULL_ARGUMENT,
           "a NULL key of 4 bytes");
    like(gpumem_last_error(), "key", "names the key");
    is_int(gpumem_memoize(ctx, &k1, sizeof k1, NULL, free_int, NULL, &junk), GPUMEM_ERROR_NULL_ARGUMENT,
           "no create callback");
    is_int(gpumem_memoize(ctx, &k1, sizeof k1, make_int, free_int, NULL, NULL), GPUMEM_ERROR_NULL_ARGUMENT,
           "no value pointer");
    ok(junk == &refs, "failures leave *value alone");

    /* failures are returned and not cached */
    int kf = 40;
    is_int(gpumem_memoize(ctx, &kf, sizeof kf, make_fail_quiet, NULL, NULL, &junk), GPUMEM_ERROR_INVALID_VALUE,
           "a failing create: its status");
    like(gpumem_last_error(), "create callback failed with GPUMEM_ERROR_INVALID_VALUE",
         "a message when the callback gave none");
    is_int(gpumem_memoize(ctx, &kf, sizeof kf, make_fail_said, NULL, NULL, &junk), GPUMEM_ERROR_INVALID_DEVICE,
           "a create failing in a library call");
    like(gpumem_last_error(), "4242", "keeps that call's message");
    int kr = 41;
    is_int(gpumem_memoize(ctx, &kr, sizeof kr, make_recursive, NULL, NULL, &junk), GPUMEM_ERROR_INVALID_STATE,
           "a create asking for its own key fails instead of waiting for itself");
    like(gpumem_last_error(), "own key", "and says why");
    void *vnest = NULL;
    int kn = 42;
    is_int(gpumem_memoize(ctx, &kn, sizeof kn, make_nested, NULL, NULL, &vnest), GPUMEM_OK,
           "a create may memoize other keys");
    ok(vnest != NULL && *(int *)vnest == 1007, "and use their values");
    int created_before = atomic_load(&created);

    /* concurrent first calls: one creator, the others wait for it */
    arg proto = {ctx, make_slow, NULL, 77, NULL, GPUMEM_ERROR_INTERNAL}, res[16];
    run_threads(16, one_call, &proto, res);
    int all_ok = 1, same = 1;
    for (int i = 0; i < 16; i++) {
        all_ok = all_ok && res[i].st == GPUMEM_OK;
        same = same && res[i].value == res[0].value;
    }
    ok(all_ok && same, "16 threads asking for one new key get one value");
    is_int(atomic_load(&created) - created_before, 1, "which create made once");

    /* a creator's failure goes to it; the waiters try again */
    proto.create = make_flaky;
    proto.key = 78;
    run_threads(16, one_call, &proto, res);
    int fails = 0, oks = 0;
    for (int i = 0; i < 16; i++) {
        fails += res[i].st == GPUMEM_ERROR_OUT_OF_MEMORY;
        if (res[i].st == GPUMEM_OK && *(int *)res[i].value == 1078)
            oks++;
    }
    is_int(fails, 1, "the failing creator gets the failure");
    is_int(oks, 15, "the waiters retry and get the value");
    is_int(atomic_load(&flaky_calls), 2, "create ran twice: the failure and one success");

    /* hits from many threads */
    int before_many = atomic_load(&created);
    proto.create = make_int;
    proto.key = 0;
    run_threads(8, many_calls, &proto, res);
    all_ok = 1;
    for (int i = 0; i < 8; i++)
        all_ok = all_ok && res[i].st == GPUMEM_OK;
    ok(all_ok, "8 threads x 20000 calls on 64 keys: right values");
    is_int(atomic_load(&created) - before_many, 64, "each key made once");

    /* the default context */
    void *vd = NULL, *vd2 = NULL;
    is_int(gpumem_memoize(NULL, &k1, sizeof k1, make_int, free_int, NULL, &vd), GPUMEM_OK,
           "NULL: the autoinit context");
    gpumem_memoize(NULL, &k1, sizeof k1, make_int, free_int, NULL, &vd2);
    ok(vd == vd2 && vd != v1, "has its own cache");

    /* clear_context_caches: every context, newest first, destroy once */
    destroy_count = 0;
    destroy_user = NULL;
    int ka = 90, kb = 91;
    void *va = NULL, *vb = NULL;
    gpumem_memoize(ctx, &ka, sizeof ka, make_int, free_int, &ka, &va);
    gpumem_memoize(ctx, &kb, sizeof kb, make_int, free_int, &kb, &vb);
    /* every value made so far is one cached entry with free_int */
    int live = atomic_load(&created) - atomic_load(&destroyed);
    int before_clear = atomic_load(&destroyed);
    is_int(gpumem_clear_context_caches(), GPUMEM_OK, "clear_context_caches");
    is_int(atomic_load(&destroyed) - before_clear, live, "destroys every entry of every context");
    ok(destroy_count >= 2, "destroy callbacks ran");
    int ia = -1, ib = -1;
    for (int i = 0; i < destroy_count; i++) {
        if (destroy_order[i] == 1090)
            ia = i;
        if (destroy_order[i] == 1091)
            ib = i;
    }
    ok(ib >= 0 && ia > ib, "newest first: 91 before 90");
    int made_after = atomic_load(&created);
    void *va2 = NULL;
    gpumem_memoize(ctx, &ka, sizeof ka, make_int, free_int, &ka, &va2);
    is_int(atomic_load(&created) - made_after, 1, "after a clear the value is made again");
    is_int(gpumem_clear_context_caches(), GPUMEM_OK, "clear again");
    ok(destroy_user == &ka, "destroy gets the creating call's user pointer");
    is_int(gpumem_clear_context_caches(), GPUMEM_OK, "clearing empty caches");

    /* an entry being created during a clear is kept */
    arg gated = {ctx, make_gated, NULL, 95, NULL, GPUMEM_ERROR_INTERNAL};
    pthread_t gt;
    pthread_create(&gt, NULL, one_call, &gated);
    pthread_mutex_lock(&gate_mu);
    while (!gate_entered)
        pthread_cond_wait(&gate_cv, &gate_mu);
    pthread_mutex_unlock(&gate_mu);
    is_int(gpumem_clear_context_caches(), GPUMEM_OK, "clear while a value is being made");
    pthread_mutex_lock(&gate_mu);
    gate_open = 1;
    pthread_cond_broadcast(&gate_cv);
    pthread_mutex_unlock(&gate_mu);
    pthread_join(gt, NULL);
    is_int(gated.st, GPUMEM_OK, "the creation completes");
    int made_gated = atomic_load(&created);
    void *vg = NULL;
    gpumem_memoize(ctx, &gated.key, sizeof gated.key, make_gated, free_int, NULL, &vg);
    ok(vg == gated.value && atomic_load(&created) == made_gated, "and stays cached");

    /* a context's release drops its entries */
    gpumem_context *c2 = NULL;
    gpumem_context_create(0, &c2);
    int k3 = 3;
    void *v3 = NULL, *v3b = NULL;
    gpumem_memoize(c2, &k3, sizeof k3, make_int, free_int, NULL, &v3);
    gpumem_memoize(ctx, &k3, sizeof k3, make_int, free_int, NULL, &v3b);
    ok(v3 != v3b, "two context handles have separate caches");
    int c2refs = 0;
    gpumem_context_refcount(c2, &c2refs);
    is_int(c2refs, 1, "the new context still has one reference");
    int before_rel = atomic_load(&destroyed);
    destroy_count = 0;
    is_int(gpumem_context_release(c2), GPUMEM_OK, "release it");
    is_int(atomic_load(&destroyed) - before_rel, 1, "its entry is destroyed");
    ok(destroy_count == 1 && destroy_order[0] == 1003, "the right one");
    /* the hit path checks the handle too (inline), before the thread's cache of hits */
    void *v3c = &k3;
    is_int(gpumem_memoize(c2, &k3, sizeof k3, make_int, free_int, NULL, &v3c), GPUMEM_ERROR_INVALID_STATE,
           "a released context handle is refused");
    like(gpumem_last_error(), "gpumem_memoize: 'ctx' was released", "the message names the function and the argument");
    ok(v3c == &k3, "and nothing is written to *value");

    int before_last = atomic_load(&destroyed);
    gpumem_context_release(ctx);
    ok(atomic_load(&destroyed) - before_last == 2, "the last release of the test context destroys its entries "
       "(%d)", atomic_load(&destroyed) - before_last);
    done_testing();
    return exit_status();
}
