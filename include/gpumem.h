/**
 * @file gpumem.h
 * @brief libgpumem: GPU memory for C, C++ and Fortran programs.
 *
 * The umbrella header: include this one.  Link with `pkg-config --libs gpumem`.
 */
#ifndef GPUMEM_H
#define GPUMEM_H

#include <gpumem/export.h>
#include <gpumem/version.h>
#include <gpumem/status.h>
#include <gpumem/context.h>
#include <gpumem/debug.h>
#include <gpumem/dtype.h>
#include <gpumem/stream.h>
#include <gpumem/event.h>
#include <gpumem/array.h>
#include <gpumem/batch.h>
#include <gpumem/pool.h>
#include <gpumem/pool_ipc.h>
#include <gpumem/pool_props.h>
#include <gpumem/memory.h>
#include <gpumem/host.h>
#include <gpumem/cleanup.h>
#include <gpumem/occupancy.h>
#include <gpumem/interop.h>
#include <gpumem/ipc.h>
#include <gpumem/memo.h>
#include <gpumem/module.h>
#include <gpumem/testing.h>
#include <gpumem/staging.h>
#include <gpumem/peer.h>
#include <gpumem/trace.h>

#endif /* GPUMEM_H */
