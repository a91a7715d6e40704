/*
 * copy_workers.c - the copies' CPU work on the worker pool
 * (copy_workers.h).
 */
#include "config.h"

#include <stdatomic.h>

#include "copy_tuning.h"
#include "copy_workers.h"
#include "error.h"
#include "cpu_pack.h"
#include "staging.h"

gm_workers *gm_copy_workers(gpumem_context *ctx, unsigned *threads)
{
    gpumem_staging_settings s;
    gm_error_quietly(gm_staging_settings_now(&s)); /* the defaults where the environment is bad */
    /* callers always take part in these tasks (no pinned memory is touched) */
    gm_workers *w = gm_workers_get(ctx != NULL ? gm_staging_node(ctx) : -1);
    unsigned have = w != NULL ? gm_workers_grow(w, s.threads - 1) : 0;
    *threads = (have < s.threads - 1 ? have : s.threads - 1) + 1;
    return w;
}

typedef struct cpu_pack_task {
    gm_task task;
    const gm_pack_params *p;
    bool unpack;
    uint64_t per, count; /* elements per part, elements */
    atomic_uint_fast64_t next;
} cpu_pack_task;

static void cpu_pack_run(gm_task *t, int worker)
{
    cpu_pack_task *c = (cpu_pack_task *)t;
    for (;;) {
        if (worker >= 0 && gm_workers_stopping())
            return;
        uint64_t i = atomic_fetch_add_explicit(&c->next, 1, memory_order_relaxed);
        uint64_t e0 = i * c->per;
        if (e0 >= c->count)
            return;
        uint64_t e1 = c->count - e0 < c->per ? c->count : e0 + c->per;
        gm_cpu_pack_range(c->p, c->unpack, e0, e1,
                          (char *)(uintptr_t)c->p->packed + e0 * (uint64_t)c->p->unit);
    }
}

void gm_copy_cpu_pack(gpumem_context *ctx, const gm_pack_params *p, bool unpack, uint64_t bytes)
{
    uint64_t count = p->rows * p->cols;
    if (count == 0)
        return;
    unsigned threads = 1;
    gm_workers *w = bytes >= GM_COPY_CPU_THREAD_BYTES ? gm_copy_workers(ctx, &threads) : NULL;
    /* parts of 1 MiB, or fewer bigger ones */
    uint64_t per = (1u << 20) / (uint64_t)p->unit;
    cpu_pack_task c = {.task = GM_TASK_INIT(cpu_pack_run), .p = p, .unpack = unpack, .per = per ? per : 1,
                       .count = count};
    atomic_init(&c.next, 0);
    uint64_t parts = (count + c.per - 1) / c.per;
    if (w != NULL && threads > 1 && parts > 1)
        gm_task_post(w, &c.task, (unsigned)(parts - 1 < threads - 1 ? parts - 1 : threads - 1));
    cpu_pack_run(&c.task, -1);
    if (w != NULL)
        gm_task_join(w, &c.task);
}
