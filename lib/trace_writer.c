/*
 * trace_writer.c - the trace's writer and its life (trace.h explains the
 * design): the queue of full chunks and the writer thread that empties it
 * into the file, start and stop (gpumem_trace_start and _stop of
 * gpumem/trace.h, and GPUMEM_TRACE), process exit and fork.  The threads'
 * recording is trace.c's (trace_impl.h says what the two share).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "env.h"
#include "params.h"
#include "error.h"
#include "gpumem/trace.h"
#include "lifecycle.h"
#include "trace.h"
#include "trace_format.h"
#include "trace_impl.h"
#include "workers.h"

#define QUEUE_MAX 256u      /* chunks waiting for the writer (16 MiB) before a thread waits */
#define FREE_MAX 64u        /* idle chunks kept for reuse */
#define WAKE_AT 8u          /* queued chunks that wake the writer (else it looks every WAKE_MS) */
#define WAKE_MS 50

static pthread_mutex_t ctl_mu = PTHREAD_MUTEX_INITIALIZER; /* start and stop */

static struct writer {
    pthread_mutex_t mu;
    pthread_cond_t work, space;
    chunk *head, *tail; /* full chunks, oldest first */
    unsigned queued;
    chunk *free, *free_tail; /* idle chunks, oldest first */
    unsigned nfree;
    bool accepting, finish;
    /* the writer thread's, until it is joined: */
    pthread_t thread;
    FILE *f;
    int err; /* the first failed write's errno */
    uint64_t recorded;
    unsigned char *seen; /* thread indices with a THREAD block in this file */
    size_t nseen;
} W = {.mu = PTHREAD_MUTEX_INITIALIZER, .work = PTHREAD_COND_INITIALIZER, .space = PTHREAD_COND_INITIALIZER};

static char trace_path[4096];     /* under ctl_mu */

/* ---- the queue -------------------------------------------------------------------------------- */

/* Idle chunks go to the back of the free list and come from its front: the
 * one a thread gets is the longest idle, whose lines have most likely left
 * the writer's cache (a thread then writes them without taking each back
 * from the writer's core). */
static void recycle_locked(chunk *c)
{
    if (W.nfree < FREE_MAX) {
        c->next = NULL;
        if (W.free_tail != NULL)
            W.free_tail->next = c;
        else
            W.free = c;
        W.free_tail = c;
        W.nfree++;
    } else {
        free(c);
    }
}

static void push_locked(chunk *c)
{
    c->next = NULL;
    if (W.tail != NULL)
        W.tail->next = c;
    else
        W.head = c;
    W.tail = c;
    W.queued++;
    if (W.queued >= WAKE_AT) /* a wake-up costs a system call: one per WAKE_AT chunks */
        pthread_cond_signal(&W.work);
}

/* A thread's chunk to the writer, or back to the idle ones (W.mu held). */
static void hand_locked(chunk *c)
{
    if (W.accepting && c->count != 0)
        push_locked(c);
    else
        recycle_locked(c);
}

chunk *gm_trace_writer_swap(chunk *full)
{
    chunk *c = NULL;
    pthread_mutex_lock(&W.mu);
    if (full != NULL)
        hand_locked(full);
    while (W.accepting && W.queued >= QUEUE_MAX)
        pthread_cond_wait(&W.space, &W.mu);
    if (W.free != NULL) {
        c = W.free;
        W.free = c->next;
        if (W.free == NULL)
            W.free_tail = NULL;
        W.nfree--;
    }
    pthread_mutex_unlock(&W.mu);
    return c;
}

void gm_trace_writer_hand(chunk *c)
{
    pthread_mutex_lock(&W.mu);
    hand_locked(c);
    pthread_mutex_unlock(&W.mu);
}

/* ---- the writer thread --------------------------------------------------------------------- */

static void out(const void *p, size_t n)
{
    if (W.err == 0 && n != 0 && fwrite(p, 1, n, W.f) != n)
        W.err = errno != 0 ? errno : EIO;
}

static void out_block(uint32_t type, const void *payload, size_t n)
{
    unsigned char h[GM_TRACE_BLOCK_HEADER];
    wr32(h, type);
    wr32(h + 4, (uint32_t)n);
    out(h, sizeof h);
    out(payload, n);
}

static void out_pending(void)
{
    pending *p = gm_trace_strings_take();
    while (p != NULL) {
        pending *next = p->next;
        out(p->data, p->size);
        free(p);
        p = next;
    }
}

static void out_clock(uint32_t type, const uint64_t *pre, size_t npre)
{
    unsigned char b[48];
    size_t n = 0;
    for (size_t i = 0; i < npre; i++, n += 8)
        wr64(b + n, pre[i]);
    wr64(b + n, gm_trace_ticks());
    wr64(b + n + 8, gm_trace_mono_ns());
    out_block(type, b, n + 16);
}

static void out_chunk(chunk *c)
{
    if (c->thread >= W.nseen) {
        size_t n = W.nseen ? W.nseen : 64;
        while (n <= c->thread)
            n *= 2;
        unsigned char *s = realloc(W.seen, n);
        if (s != NULL) {
            memset(s + W.nseen, 0, n - W.nseen);
            W.seen = s;
            W.nseen = n;
        }
    }
    if (c->thread >= W.nseen || !W.seen[c->thread]) {
        unsigned char b[8 + sizeof c->name];
        size_t len = strnlen(c->name, sizeof c->name);
        wr32(b, c->thread);
        wr32(b + 4, c->tid);
        memcpy(b + 8, c->name, len);
        out_block(GM_TB_THREAD, b, 8 + len);
        if (c->thread < W.nseen)
            W.seen[c->thread] = 1;
    }
    unsigned char h[GM_TRACE_BLOCK_HEADER + 8];
    wr32(h, GM_TB_EVENTS);
    wr32(h + 4, 8 + c->count * GM_TRACE_RECORD_BYTES);
    wr32(h + 8, c->thread);
    wr32(h + 12, c->count);
    out(h, sizeof h);
    out(c->rec, (size_t)c->count * GM_TRACE_RECORD_BYTES);
    W.recorded += c->count;
}

static void *writer_main(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&W.mu);
        while (W.head == NULL && !W.finish) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += WAKE_MS * 1000000L;
            if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&W.work, &W.mu, &until);
        }
        chunk *list = W.head;
        bool fin = W.finish;
        W.head = W.tail = NULL;
        W.queued = 0;
        pthread_cond_broadcast(&W.space);
        pthread_mutex_unlock(&W.mu);
        if (list == NULL && fin)
            break;
        while (list != NULL) {
            chunk *next = list->next;
            out_pending(); /* the strings and call sites its records name */
            out_chunk(list);
            pthread_mutex_lock(&W.mu);
            recycle_locked(list);
            pthread_mutex_unlock(&W.mu);
            list = next;
        }
        out_clock(GM_TB_CLOCK, NULL, 0);
        if (W.err == 0 && fflush(W.f) != 0)
            W.err = errno != 0 ? errno : EIO;
    }
    out_pending();
    uint64_t counts[2] = {W.recorded, atomic_load(&gm_trace_lost)};
    out_clock(GM_TB_END, counts, 2);
    if (W.err == 0 && fflush(W.f) != 0)
        W.err = errno != 0 ? errno : EIO;
    return NULL;
}

/* ---- start and stop ---------------------------------------------------------------------- */

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int once_failed;

static void stop_locked(int *err);

static void at_exit(void)
{
    pthread_mutex_lock(&ctl_mu);
    if (atomic_load(&gm_trace_on) != 0) {
        int err = 0;
        stop_locked(&err);
    }
    pthread_mutex_unlock(&ctl_mu);
}

/* Fork: the forking thread holds every lock of the trace (and the file's
 * stdio lock, so that no other thread is inside a write) across fork. */
static void fork_prepare(void)
{
    pthread_mutex_lock(&ctl_mu);
    gm_trace_threads_lock();
    pthread_mutex_lock(&W.mu);
    gm_trace_strings_lock();
    if (W.f != NULL)
        flockfile(W.f);
}

static void fork_parent(void)
{
    if (W.f != NULL)
        funlockfile(W.f);
    gm_trace_strings_unlock();
    pthread_mutex_unlock(&W.mu);
    gm_trace_threads_unlock();
    pthread_mutex_unlock(&ctl_mu);
}

/* The child does not record: it forgets the parent's trace (its writer
 * thread is not there) and may start its own.  The writer's mutex and
 * condition variables are made anew: the parent's writer thread and
 * recording threads may have been waiting on them, and a condition
 * variable copied with waiters that do not exist in the child can block
 * its next signal forever. */
static void fork_child(void)
{
    bool was_on = atomic_exchange(&gm_trace_on, 0) != 0;
    if (W.f != NULL) {
        funlockfile(W.f);
        __fpurge(W.f); /* the parent writes what is buffered */
        fclose(W.f);
        W.f = NULL;
    }
    if (was_on) {
        free(W.seen);
        W.seen = NULL;
        W.nseen = 0;
        gm_trace_strings_reset_locked();
    }
    for (chunk *c = W.head, *next; c != NULL; c = next) {
        next = c->next;
        free(c);
    }
    W.head = W.tail = NULL;
    W.queued = 0;
    W.accepting = false;
    W.finish = false;
    W.err = 0;
    memset(&W.thread, 0, sizeof W.thread); /* no writer thread in the child */
    gm_trace_threads_forget();
    gm_trace_strings_unlock();
    gm_trace_threads_unlock();
    pthread_mutex_init(&W.mu, NULL);
    pthread_cond_init(&W.work, NULL);
    pthread_cond_init(&W.space, NULL);
    pthread_mutex_init(&ctl_mu, NULL);
}

const gm_life_hook gm_trace_life = {.what = "the trace", .at_exit = at_exit, .fork_prepare = fork_prepare,
                                    .fork_parent = fork_parent, .fork_child = fork_child};

static void init_once(void)
{
    if (gm_trace_threads_init() != 0 || gm_life_arm(&gm_trace_life) != 0) {
        once_failed = 1;
        return;
    }
    gm_trace_recorder_init();
}

/* Opens the trace's file: made when it does not exist (*created), else
 * written in place, whatever it is (a regular file is truncated; a FIFO, a
 * device or a link's target is written through, never replaced).  A FIFO
 * without a reader is refused (ENXIO) rather than waited for.  *sb: what
 * was opened.  NULL with errno on failure. */
static FILE *open_trace_file(const char *path, bool *created, struct stat *sb)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0666);
    *created = fd >= 0;
    if (fd < 0 && errno == EEXIST)
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0666);
    if (fd < 0)
        return NULL;
    int fl = fcntl(fd, F_GETFL);
    FILE *f = NULL;
    if (fstat(fd, sb) == 0 && fl != -1 && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == 0)
        f = fdopen(fd, "wb");
    if (f == NULL) {
        int e = errno;
        close(fd);
        if (*created)
            unlink(path);
        errno = e;
    }
    return f;
}

/* Removes the file that open_trace_file made, if path still names it. */
static void remove_created(const char *path, bool created, const struct stat *sb)
{
    struct stat now;
    if (created && lstat(path, &now) == 0 && now.st_dev == sb->st_dev && now.st_ino == sb->st_ino)
        unlink(path);
}

/* Starts a trace into path (ctl_mu held).  On failure, the reason goes to
 * why and nothing records; a file this call created is removed. */
static gpumem_status start_locked(const char *path, unsigned flags, char *why, size_t whysize)
{
    pthread_once(&once, init_once);
    if (once_failed) {
        snprintf(why, whysize, "cannot set up the trace's thread data and exit handler");
        return GPUMEM_ERROR_HOST_OUT_OF_MEMORY;
    }
    if (strlen(path) >= sizeof trace_path) {
        snprintf(why, whysize, "the file name is longer than %zu bytes", sizeof trace_path - 1);
        return GPUMEM_ERROR_INVALID_VALUE;
    }
    bool created = false;
    struct stat sb;
    FILE *f = open_trace_file(path, &created, &sb);
    if (f == NULL) {
        int e = errno;
        snprintf(why, whysize, "cannot open '%s' for writing: %s%s", path, strerror(e),
                 e == ENXIO ? " (a FIFO without a reader)" : "");
        return GPUMEM_ERROR_INVALID_VALUE;
    }
    unsigned char h[GM_TRACE_HEADER_BYTES] = {0};
    memcpy(h + GM_TH_MAGIC, GM_TRACE_MAGIC, 8);
    wr32(h + GM_TH_VERSION, GM_TRACE_VERSION);
    wr32(h + GM_TH_HEADER_BYTES, GM_TRACE_HEADER_BYTES);
    wr32(h + GM_TH_RECORD_BYTES, GM_TRACE_RECORD_BYTES);
    wr32(h + GM_TH_FLAGS, flags);
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    wr64(h + GM_TH_REALTIME_NS, (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec);
    /* A first rate for the counter, from a pair read 2 ms before the start
     * (so a trace cut short still converts); the start is the later pair. */
    uint64_t t1 = gm_trace_ticks(), n1 = gm_trace_mono_ns(), t0 = t1, n0 = n1;
    if (gm_trace_clock_counter())
        do {
            t0 = gm_trace_ticks();
            n0 = gm_trace_mono_ns();
        } while (n0 - n1 < 2000000u);
    wr64(h + GM_TH_TICKS0, t0);
    wr64(h + GM_TH_NS0, n0);
    wr64(h + GM_TH_TICKS1, t1);
    wr64(h + GM_TH_NS1, n1);
    const char *exe_path = gm_trace_exe_path();
    size_t elen = strlen(exe_path);
    unsigned char info[8 + GM_TRACE_EXE_PATH_MAX];
    wr32(info, (uint32_t)getpid());
    wr32(info + 4, 0);
    memcpy(info + 8, exe_path, elen);
    W.f = f;
    W.err = 0;
    errno = 0;
    out(h, sizeof h);
    out_block(GM_TB_INFO, info, 8 + elen);
    if (W.err == 0 && fflush(f) != 0)
        W.err = errno != 0 ? errno : EIO;
    if (W.err != 0) {
        snprintf(why, whysize, "cannot write '%s': %s", path, strerror(W.err));
        fclose(f);
        W.f = NULL;
        remove_created(path, created, &sb);
        return GPUMEM_ERROR_INVALID_VALUE;
    }
    W.recorded = 0;
    W.accepting = true;
    W.finish = false;
    atomic_store(&gm_trace_lost, 0);
    atomic_store(&gm_trace_flags, flags);
    strcpy(trace_path, path);
    int rc = gm_thread_start(&W.thread, "gpumem-trace", writer_main, NULL);
    if (rc != 0) {
        snprintf(why, whysize, "cannot start the trace's writer thread: %s", strerror(rc));
        W.accepting = false;
        fclose(f);
        W.f = NULL;
        remove_created(path, created, &sb);
        return GPUMEM_ERROR_HOST_OUT_OF_MEMORY;
    }
    atomic_store(&gm_trace_on, 1);
    return GPUMEM_OK;
}

/* Stops the trace (ctl_mu held, a trace records); *err gets the first
 * failed write's errno, or 0. */
static void stop_locked(int *err)
{
    atomic_store(&gm_trace_on, 0);
    gm_trace_threads_lock();
    gm_trace_threads_drain_locked();
    pthread_mutex_lock(&W.mu);
    W.accepting = false;
    W.finish = true;
    pthread_cond_signal(&W.work);
    pthread_cond_broadcast(&W.space);
    pthread_mutex_unlock(&W.mu);
    gm_trace_threads_unlock();
    pthread_join(W.thread, NULL);
    *err = W.err;
    errno = 0;
    if (fclose(W.f) != 0 && *err == 0)
        *err = errno != 0 ? errno : EIO;
    W.f = NULL;
    pthread_mutex_lock(&W.mu);
    W.free_tail = NULL;
    while (W.free != NULL) {
        chunk *c = W.free;
        W.free = c->next;
        free(c);
    }
    W.nfree = 0;
    W.finish = false;
    pthread_mutex_unlock(&W.mu);
    free(W.seen);
    W.seen = NULL;
    W.nseen = 0;
    gm_trace_strings_lock();
    gm_trace_strings_reset_locked();
    gm_trace_strings_unlock();
}

GPUMEM_API gpumem_status gpumem_trace_start(const char *path, unsigned flags)
{
    const char *what = "gpumem_trace_start";
    GM_CHECK_NULL(path);
    if (path[0] == '\0')
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: 'path' is empty", what);
    if (flags & ~GPUMEM_TRACE_CALL_SITES)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: 'flags' 0x%x has bits other than "
                        "GPUMEM_TRACE_CALL_SITES (0x1)", what, flags);
    long stacks = 0;
    gpumem_status st = gm_param_long(GM_P_TRACE_STACKS, &stacks, NULL);
    if (st != GPUMEM_OK)
        return gm_error_prefix(st, what);
    if (stacks)
        flags |= GPUMEM_TRACE_CALL_SITES;
    char why[600];
    pthread_mutex_lock(&ctl_mu);
    if (atomic_load(&gm_trace_on) != 0) {
        st = gm_error(GPUMEM_ERROR_INVALID_STATE, "%s: a trace is already recording to '%s' "
                      "(gpumem_trace_stop ends it)", what, trace_path);
    } else {
        st = start_locked(path, flags & GPUMEM_TRACE_CALL_SITES ? GM_TRACE_FLAG_CALL_SITES : 0, why, sizeof why);
        if (st != GPUMEM_OK)
            gm_error(st, "%s: %s", what, why);
    }
    pthread_mutex_unlock(&ctl_mu);
    return st;
}

GPUMEM_API gpumem_status gpumem_trace_stop(void)
{
    const char *what = "gpumem_trace_stop";
    gpumem_status st = GPUMEM_OK;
    pthread_mutex_lock(&ctl_mu);
    if (atomic_load(&gm_trace_on) == 0) {
        st = gm_error(GPUMEM_ERROR_INVALID_STATE, "%s: no trace is recording", what);
    } else {
        int err = 0;
        stop_locked(&err);
        if (err != 0)
            st = gm_error(GPUMEM_ERROR_INVALID_VALUE, "%s: writing the trace '%s' failed: %s; the file ends "
                          "where writing failed", what, trace_path, strerror(err));
    }
    pthread_mutex_unlock(&ctl_mu);
    return st;
}

/* ---- GPUMEM_TRACE ------------------------------------------------------------------------- */

static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static gpumem_status env_status;
static char env_message[1024];

static void env_start(void)
{
    const char *v = gm_param_text(GM_P_TRACE);
    if (v == NULL)
        return;
    char path[sizeof trace_path + 64];
    size_t n = 0;
    for (const char *s = v; *s != '\0'; s++) {
        char buf[24];
        const char *add = buf;
        if (*s != '%') {
            buf[0] = *s;
            buf[1] = '\0';
        } else if (s[1] == 'p') {
            snprintf(buf, sizeof buf, "%ld", (long)getpid());
            s++;
        } else if (s[1] == '%') {
            add = "%";
            s++;
        } else {
            env_status = GPUMEM_ERROR_INVALID_ENVIRONMENT;
            snprintf(env_message, sizeof env_message, "GPUMEM_TRACE='%.600s': a '%%' must be followed by 'p' "
                     "(the process id) or '%%'", v);
            return;
        }
        size_t len = strlen(add);
        if (n + len >= sizeof path) {
            env_status = GPUMEM_ERROR_INVALID_ENVIRONMENT;
            snprintf(env_message, sizeof env_message, "GPUMEM_TRACE='%.600s': the file name is too long", v);
            return;
        }
        memcpy(path + n, add, len);
        n += len;
    }
    path[n] = '\0';
    long stacks = 0;
    gpumem_status st = gm_param_long(GM_P_TRACE_STACKS, &stacks, NULL);
    if (st != GPUMEM_OK) {
        env_status = st;
        snprintf(env_message, sizeof env_message, "%s", gpumem_last_error());
        return;
    }
    char why[600];
    pthread_mutex_lock(&ctl_mu);
    if (atomic_load(&gm_trace_on) == 0) /* else gpumem_trace_start came first */
        st = start_locked(path, stacks ? GM_TRACE_FLAG_CALL_SITES : 0, why, sizeof why);
    pthread_mutex_unlock(&ctl_mu);
    if (st != GPUMEM_OK) {
        env_status = GPUMEM_ERROR_INVALID_ENVIRONMENT;
        snprintf(env_message, sizeof env_message, "GPUMEM_TRACE='%.300s': %s", v, why);
    }
}

gpumem_status gm_trace_env_start(const char *what)
{
    pthread_once(&env_once, env_start);
    if (env_status != GPUMEM_OK)
        return gm_error(env_status, "%s: %s", what, env_message);
    return GPUMEM_OK;
}
