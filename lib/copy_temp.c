/*
 * copy_temp.c - the copy engine's two ways through a temporary array
 * (copy_decide.h's GM_HOW_HOST with via_temp, and GM_HOW_TEMP): both sides
 * host-addressable, copied by the CPU; overlapping device views, copied
 * twice through a device temporary.  copy_engine.c's execute() calls them.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>

#include "copy_engine.h"
#include "copyplan.h"
#include "error.h"
#include "stream.h"

/* Both sides host-addressable: the CPU copies, synchronously; overlapping
 * views go through a temporary. */
gpumem_status gm_copy_host(const char *what, gpumem_array *dst, const gpumem_array *src, gpumem_stream *stream,
                           bool via_temp)
{
    gpumem_array *tmp = NULL;
    gm_copy_plan plan;
    gpumem_status st = GPUMEM_OK;
    if (via_temp) {
        gm_owner was = gm_alloc_owner_begin(GM_OWNER_TEMPORARY); /* the library's own, in a trace */
        st = gm_array_new_like(what, src, src->ndim, src->shape, 0, stream, &tmp);
        gm_alloc_owner_end(was);
        if (st == GPUMEM_OK)
            st = gm_copy_plan_make(tmp->ndim, tmp->shape, src->strides, tmp->strides, tmp->itemsize, SIZE_MAX, &plan);
        if (st == GPUMEM_OK) {
            gm_copy_plan_run_host(&plan, src->host, tmp->host);
            src = tmp;
        }
    }
    if (st == GPUMEM_OK)
        st = gm_copy_plan_make(dst->ndim, dst->shape, src->strides, dst->strides, dst->itemsize, SIZE_MAX, &plan);
    if (st == GPUMEM_OK)
        gm_copy_plan_run_host(&plan, src->host, dst->host);
    else
        st = gm_error_prefix(st, what);
    return gm_keep_first(st, gm_copy_release_temp(what, tmp));
}

gpumem_status gm_copy_release_temp(const char *what, gpumem_array *tmp)
{
    char where[256];
    snprintf(where, sizeof where, "%s: the copy completed, but freeing its temporary memory failed", what);
    return gm_array_release_as(tmp, where);
}

/* The write-back of gm_copy_temp: the temporary goes once the stream's wait
 * succeeded, or unused when the stream ends and cannot be waited for. */
static gpumem_status release_temp(void *arg, bool run, const char *what)
{
    (void)run;
    return gm_array_release_as(arg, what);
}

gpumem_status gm_copy_temp_new(const char *what, const gpumem_array *src, gpumem_stream *stream, gpumem_array **tmp)
{
    gm_owner was = gm_alloc_owner_begin(GM_OWNER_TEMPORARY); /* the library's own, in a trace */
    gpumem_status st = gm_array_new_like(what, src, src->ndim, src->shape, 0, stream, tmp);
    gm_alloc_owner_end(was);
    return st;
}

gpumem_status gm_copy_temp_end(const char *what, gpumem_array *tmp, gpumem_stream *stream, gpumem_context *ctx,
                               gpumem_status st, bool *synced)
{
    if (stream != NULL && st == GPUMEM_OK && gm_stream_add_writeback(stream, ctx, release_temp, tmp, what) == GPUMEM_OK)
        return GPUMEM_OK;
    if (stream != NULL) {
        st = gm_keep_first(st, gm_drv_check(GM_DRV(stream_synchronize, ctx->dctx, gm_stream_ds(stream)),
                                            GM_OP_stream_synchronize, what));
        *synced = true;
    }
    return gm_keep_first(st, gm_copy_release_temp(what, tmp));
}
