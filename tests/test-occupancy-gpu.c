/* The occupancy calculator against the driver, on a GPU: for every point of
 * a sweep, gpumem_occupancy()'s tb_per_mp equals what
 * cuOccupancyMaxActiveBlocksPerMultiprocessor (gpumem_function_max_active_blocks)
 * answers for a real kernel with the same block size, shared memory and
 * register count.
 *
 * The sweep: blocks of 32 to 1024 threads in steps of 32; 8 register
 * targets from 16 to 255; 12 dynamic shared memory sizes from 0 to the
 * device's opt-in maximum per block, both included.  For each register
 * target R a PTX kernel is generated here with `.maxnreg R` and a body that
 * keeps more values live than R registers hold, so that the compiler uses
 * (about) R of them; the driver JIT-compiles it for the device.  The
 * calculator's input is the register count the driver reports for the
 * compiled kernel (CU_FUNC_ATTRIBUTE_NUM_REGS) and its static plus dynamic
 * shared memory.  Each kernel opts in to the device's maximum of dynamic
 * shared memory (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) before the
 * driver is asked, as the calculator assumes.
 *
 * A workload that cannot run is an error of gpumem_occupancy() with
 * tb_per_mp 0; the driver answers 0 blocks or an error there, and either
 * counts as 0.
 *
 * One result per register target (32 x 12 points each), with the first
 * mismatches as diagnostics, and one for the whole sweep.  The simulator
 * cannot answer the driver's occupancy query
 * (gpumem_function_max_active_blocks() is GPUMEM_ERROR_NOT_SIMULATED
 * there), so there the whole test skips: run it with GPUMEM_BACKEND=cuda. */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpumem.h>

#include "setup.h"
#include "tap.h"

enum {
    TARGETS = 8,          /* register targets */
    THREAD_STEP = 32,     /* threads: 32, 64, ..., 1024 */
    THREAD_MAX = 1024,
    SMEM_STEPS = 12,      /* 0 to the maximum, both included */
    MISMATCHES_SHOWN = 5, /* per register target */
    PTX_CAP = 64 * 1024
};

/* 16 to 255 in 8 steps of (255 - 16) / 7, rounded. */
static const int targets[TARGETS] = {16, 50, 84, 118, 152, 186, 220, 255};

/* Appends to the PTX buffer; the buffer is sized for the largest kernel. */
static void put(char *buf, size_t *len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void put(char *buf, size_t *len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *len, PTX_CAP - *len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= PTX_CAP - *len)
        bail_out("the PTX of a kernel does not fit in %d bytes", PTX_CAP);
    *len += (size_t)n;
}

/* A kernel `pressure` that uses up to `maxnreg` registers per thread:
 * each thread loads `values` floats with volatile loads (which the compiler
 * may neither drop, merge nor repeat), sums them, and stores each value
 * times the sum, so that every value is live when the sum is complete.
 * With more values than registers the compiler fills the registers and
 * spills the rest to local memory.  It also stores the sum into the
 * dynamic (extern) shared memory, which the launch would size.  Nothing
 * launches it: the driver only compiles it and answers occupancy queries. */
static size_t make_ptx(char *buf, int maxnreg, int values)
{
    size_t len = 0;
    put(buf, &len,
        ".version 7.0\n"
        ".target sm_70\n"
        ".address_size 64\n"
        "\n"
        ".extern .shared .align 16 .b8 smem[];\n"
        "\n"
        ".visible .entry pressure(\n"
        "    .param .u64 out_ptr,\n"
        "    .param .u64 in_ptr)\n"
        "    .maxnreg %d\n"
        "{\n"
        "    .reg .b32 %%r<4>;\n"
        "    .reg .b64 %%rd<8>;\n"
        "    .reg .f32 %%s;\n"
        "    .reg .f32 %%f<%d>;\n"
        "    ld.param.u64 %%rd1, [in_ptr];\n"
        "    ld.param.u64 %%rd2, [out_ptr];\n"
        "    cvta.to.global.u64 %%rd1, %%rd1;\n"
        "    cvta.to.global.u64 %%rd2, %%rd2;\n"
        "    mov.u32 %%r1, %%ctaid.x;\n"
        "    mov.u32 %%r2, %%ntid.x;\n"
        "    mov.u32 %%r3, %%tid.x;\n"
        "    mad.lo.s32 %%r1, %%r1, %%r2, %%r3;\n"
        "    mul.wide.u32 %%rd3, %%r1, %d;\n"
        "    add.s64 %%rd1, %%rd1, %%rd3;\n"
        "    add.s64 %%rd2, %%rd2, %%rd3;\n",
        maxnreg, values, 4 * values);
    for (int i = 0; i < values; i++)
        put(buf, &len, "    ld.volatile.global.f32 %%f%d, [%%rd1+%d];\n", i, 4 * i);
    put(buf, &len, "    mov.f32 %%s, %%f0;\n");
    for (int i = 1; i < values; i++)
        put(buf, &len, "    add.rn.f32 %%s, %%s, %%f%d;\n", i);
    for (int i = 0; i < values; i++)
        put(buf, &len,
            "    mul.rn.f32 %%f%d, %%f%d, %%s;\n"
            "    st.global.f32 [%%rd2+%d], %%f%d;\n",
            i, i, 4 * i, i);
    put(buf, &len,
        "    mov.u64 %%rd4, smem;\n"
        "    and.b32 %%r2, %%r1, 255;\n"
        "    mul.wide.u32 %%rd5, %%r2, 4;\n"
        "    add.s64 %%rd4, %%rd4, %%rd5;\n"
        "    st.shared.f32 [%%rd4], %%s;\n"
        "    ret;\n"
        "}\n");
    return len;
}

/* The driver's answer as a block count: an error (a block that cannot
 * launch) is 0. */
static int driver_blocks(const gpumem_function *f, int threads, size_t smem, gpumem_status *st)
{
    int n = -1;
    *st = gpumem_function_max_active_blocks(f, threads, smem, &n);
    return *st == GPUMEM_OK ? n : 0;
}

int main(void)
{
    static char ptx[PTX_CAP];
    gpumem_context *ctx = test_context_or_skip_all();
    gpumem_status st;
    const char *backend = "?";
    gpumem_backend(&backend);
    int device = 0;
    gpumem_context_get_device(ctx, &device);

    /* Load the kernels (and ask the driver once, to tell a backend that
     * cannot answer before any result). */
    gpumem_module *mods[TARGETS] = {NULL};
    gpumem_function *funcs[TARGETS] = {NULL};
    for (int t = 0; t < TARGETS; t++) {
        /* More values than registers: the usage reaches the cap. */
        size_t len = make_ptx(ptx, targets[t], targets[t] + 8);
        st = gpumem_module_load(ctx, ptx, len, &mods[t]);
        if (st != GPUMEM_OK)
            bail_out("the kernel for .maxnreg %d does not load: %s", targets[t], gpumem_last_error());
        st = gpumem_module_get_function(mods[t], "pressure", &funcs[t]);
        if (st != GPUMEM_OK)
            bail_out("no kernel 'pressure' for .maxnreg %d: %s", targets[t], gpumem_last_error());
        if (t == 0) {
            int n = 0;
            st = gpumem_function_max_active_blocks(funcs[0], THREAD_STEP, 0, &n);
            if (st == GPUMEM_ERROR_NOT_SIMULATED) {
                char reason[640];
                snprintf(reason, sizeof reason,
                         "the %s backend cannot answer the driver's occupancy query "
                         "(cuOccupancyMaxActiveBlocksPerMultiprocessor); run with GPUMEM_BACKEND=cuda on a GPU",
                         backend);
                plan_skip_all(reason);
            }
            if (st != GPUMEM_OK)
                bail_out("the driver's occupancy query fails: %s", gpumem_last_error());
        }
    }

    plan(TARGETS + 2);

    gpumem_device_data *dd = NULL;
    if (gpumem_device_data_create(device, &dd) != GPUMEM_OK)
        bail_out("no device data for device %d: %s", device, gpumem_last_error());
    char name[256] = "";
    int cc = 0, optin = 0;
    gpumem_device_name(device, name, sizeof name);
    gpumem_device_data_get(dd, GPUMEM_DEVICE_DATA_COMPUTE_CAPABILITY, &cc);
    if (gpumem_device_attribute(device, GPUMEM_DEVICE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &optin) != GPUMEM_OK)
        bail_out("no opt-in shared memory size: %s", gpumem_last_error());
    diag("device %d: %s, compute capability %d.%d, %d bytes of shared memory per block with opt-in", device, name,
         cc / 10, cc % 10, optin);

    /* The kernels' actual register counts, and their opt-in. */
    int regs[TARGETS], statics[TARGETS], smax[TARGETS];
    int increasing = 1;
    for (int t = 0; t < TARGETS; t++) {
        int maxthreads = 0;
        if (gpumem_function_attribute(funcs[t], GPUMEM_FUNCTION_NUM_REGS, &regs[t]) != GPUMEM_OK ||
            gpumem_function_attribute(funcs[t], GPUMEM_FUNCTION_SHARED_SIZE_BYTES, &statics[t]) != GPUMEM_OK ||
            gpumem_function_attribute(funcs[t], GPUMEM_FUNCTION_MAX_THREADS_PER_BLOCK, &maxthreads) != GPUMEM_OK)
            bail_out("the attributes of the kernel for .maxnreg %d: %s", targets[t], gpumem_last_error());
        smax[t] = optin - statics[t];
        if (gpumem_function_set_attribute(funcs[t], GPUMEM_FUNCTION_MAX_DYNAMIC_SHARED_SIZE_BYTES, smax[t]) !=
            GPUMEM_OK)
            bail_out("opting the kernel for .maxnreg %d in to %d bytes of dynamic shared memory: %s", targets[t],
                     smax[t], gpumem_last_error());
        diag(".maxnreg %3d: %3d registers, %d bytes of static shared memory, at most %4d threads per block",
             targets[t], regs[t], statics[t], maxthreads);
        increasing &= t == 0 || regs[t] > regs[t - 1];
    }
    /* The JIT has a floor (24 registers on sm_90), so the lowest target may
     * get more than it asks for; the others get what they ask for. */
    ok(increasing && regs[0] <= 32 && regs[TARGETS - 1] >= 224,
       "the kernels' register counts rise with their targets, from %d to %d", regs[0], regs[TARGETS - 1]);

    long total = 0, total_bad = 0, total_runnable = 0;
    for (int t = 0; t < TARGETS; t++) {
        long points = 0, bad = 0, runnable = 0, driver_errors = 0;
        for (int threads = THREAD_STEP; threads <= THREAD_MAX; threads += THREAD_STEP) {
            for (int s = 0; s < SMEM_STEPS; s++) {
                size_t dyn = (size_t)smax[t] * (size_t)s / (SMEM_STEPS - 1);
                gpumem_occupancy_record r = {.size = sizeof r};
                gpumem_status ours_st = gpumem_occupancy(dd, threads, dyn + (size_t)statics[t], regs[t], &r);
                int ours = ours_st == GPUMEM_OK ? r.tb_per_mp : 0;
                gpumem_status drv_st;
                int theirs = driver_blocks(funcs[t], threads, dyn, &drv_st);
                points++;
                runnable += theirs > 0;
                driver_errors += drv_st != GPUMEM_OK;
                /* An error of ours must come with tb_per_mp 0. */
                int good = ours == theirs && (ours_st == GPUMEM_OK || r.tb_per_mp == 0);
                if (!good && bad++ < MISMATCHES_SHOWN)
                    diag("  %4d threads, %6zu B dynamic shared memory, %3d registers: ours %d (%s, limited by %s; "
                         "device %d, warps %d, regs %d, smem %d), the driver's %d (%s)",
                         threads, dyn, regs[t], r.tb_per_mp, gpumem_status_string(ours_st),
                         gpumem_occupancy_limit_name(r.limited_by), r.tb_limit_device, r.tb_limit_warps,
                         r.tb_limit_registers, r.tb_limit_shared_memory, theirs, gpumem_status_string(drv_st));
            }
        }
        if (bad > MISMATCHES_SHOWN)
            diag("  ... and %ld more", bad - MISMATCHES_SHOWN);
        ok(bad == 0,
           ".maxnreg %d (%d registers): tb_per_mp is the driver's at all %ld points (%ld runnable, %ld refused by "
           "the driver)",
           targets[t], regs[t], points, runnable, driver_errors);
        total += points;
        total_bad += bad;
        total_runnable += runnable;
    }
    ok(total_bad == 0, "the whole sweep: %ld points, %ld runnable, %ld mismatches", total, total_runnable,
       total_bad);

    gpumem_device_data_destroy(dd);
    for (int t = 0; t < TARGETS; t++)
        gpumem_module_release(mods[t]);
    gpumem_context_release(ctx);
    return exit_status();
}
