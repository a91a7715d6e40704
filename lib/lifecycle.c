/*
 * lifecycle.c - the layers' process-lifetime hooks reach the registrar the
 * wiring installed (lifecycle.h).
 */
#include "config.h"

#include <errno.h>
#include <stdatomic.h>

#include "lifecycle.h"

static _Atomic(gm_life_registrar) registrar;

void gm_life_set_registrar(gm_life_registrar r)
{
    atomic_store_explicit(&registrar, r, memory_order_release);
}

int gm_life_arm(const gm_life_hook *h)
{
    gm_life_registrar r = atomic_load_explicit(&registrar, memory_order_acquire);
    return r != NULL ? r(h) : ENOSYS;
}
