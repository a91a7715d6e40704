/* IPC handle blobs: a real handle of this process, changed by the input
 * (bytes overwritten, fields set to chosen values), or raw bytes.  Opening
 * one must fail (a valid handle of this process is INVALID_STATE) with a
 * documented status, leave the output alone, and never reach
 * cuIpcOpenMemHandle: every field is checked before the driver. */
#include "config.h"

#include <gpumem.h>

#include "fuzz.h"

static gpumem_context *ctx;
static gpumem_ipc_handle good[2];
static gpumem_array *d, *rec; /* kept for the run, so the handles stay valid */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    setenv("GPUMEM_BACKEND", "sim", 1);
    gpumem_dtype *rt = NULL;
    if (gpumem_context_create(0, &ctx) != GPUMEM_OK ||
        gpumem_device_array(ctx, 2, (int64_t[]){16, 8}, NULL, gpumem_dtype_builtin(GPUMEM_FLOAT32), 'C', NULL, &d) !=
            GPUMEM_OK ||
        gpumem_ipc_get_handle(d, &good[0]) != GPUMEM_OK ||
        gpumem_dtype_from_descr("[('x', '<f4'), ('n', '<i2', (3,))]", &rt) != GPUMEM_OK ||
        gpumem_device_array(ctx, 1, (int64_t[]){10}, NULL, rt, 'C', NULL, &rec) != GPUMEM_OK ||
        gpumem_ipc_get_handle(rec, &good[1]) != GPUMEM_OK) {
        fprintf(stderr, "fuzz-ipc: setup: %s\n", gpumem_last_error());
        abort();
    }
    gpumem_dtype_release(rt);
    return 0;
}

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_reader r = {data, size};
    gpumem_ipc_handle h;
    unsigned mode = fuzz_u8(&r);
    if (mode < 16) {
        memset(&h, 0, sizeof h);
        for (size_t i = 0; i < sizeof h.bytes; i++)
            h.bytes[i] = (unsigned char)fuzz_u8(&r);
    } else {
        h = good[mode & 1];
        unsigned edits = fuzz_u8(&r) % 16;
        static const size_t fields[] = {8, 12, 16, 24, 96, 100, 104, 108, 112, 120, 128, 132, 136, 144, 392, 400,
                                        648, 672, 676};
        for (unsigned e = 0; e < edits; e++) {
            unsigned kind = fuzz_u8(&r) % 4;
            size_t off = fields[fuzz_u8(&r) % (sizeof fields / sizeof *fields)];
            if (kind == 0) /* one byte anywhere */
                h.bytes[(size_t)fuzz_range(&r, 0, (int64_t)sizeof h.bytes - 1)] = (unsigned char)fuzz_u8(&r);
            else if (kind == 1)
                put_u32(h.bytes + off, (uint32_t)fuzz_range(&r, -4, 40));
            else if (kind == 2)
                put_u64(h.bytes + off, fuzz_u64(&r));
            else if (off >= 648) { /* a text field */
                size_t room = off == 648 ? 24 : off == 676 ? 1372 : 4;
                size_t n = (size_t)fuzz_range(&r, 0, (int64_t)room);
                for (size_t i = 0; i < n; i++)
                    h.bytes[off + i] = (unsigned char)fuzz_u8(&r);
                if (off == 676)
                    put_u32(h.bytes + 672, (uint32_t)(fuzz_u8(&r) & 1 ? n : strnlen((char *)h.bytes + 676, 1372)));
            }
        }
    }
    uint64_t opens0 = 0, opens1 = 0;
    gpumem_debug_driver_calls("cuIpcOpenMemHandle", &opens0);
    gpumem_array *a = (gpumem_array *)(uintptr_t)0x1;
    gpumem_status st = gpumem_ipc_open(fuzz_u8(&r) & 1 ? ctx : NULL, &h, &a);
    gpumem_debug_driver_calls("cuIpcOpenMemHandle", &opens1);
    FUZZ_CHECK(st != GPUMEM_OK, "a handle of this process opened");
    FUZZ_CHECK(a == (gpumem_array *)(uintptr_t)0x1, "a failed open changed its output");
    if (opens1 == opens0) {
        FUZZ_CHECK(st == GPUMEM_ERROR_INVALID_VALUE || st == GPUMEM_ERROR_INVALID_DTYPE ||
                       st == GPUMEM_ERROR_INVALID_STATE || st == GPUMEM_ERROR_INVALID_DEVICE,
                   "status %s (not one gpumem/ipc.h lists): %s", gpumem_status_string(st), gpumem_last_error());
        return 0;
    }
    /* The driver was reached: the handle names another process.  Every
     * field must then have been valid: with this process's id and random
     * number put back, the same bytes are refused as this process's. */
    FUZZ_CHECK(memcmp(h.bytes + 16, good[0].bytes + 16, 16) != 0, "a handle of this process reached the driver");
    FUZZ_CHECK(st == GPUMEM_ERROR_DRIVER || st == GPUMEM_ERROR_NOT_SIMULATED, "status %s: %s",
               gpumem_status_string(st), gpumem_last_error());
    memcpy(h.bytes + 16, good[0].bytes + 16, 16);
    st = gpumem_ipc_open(ctx, &h, &a);
    FUZZ_CHECK(st == GPUMEM_ERROR_INVALID_STATE, "a handle that reached the driver has a bad field: %s",
               gpumem_last_error());
    return 0;
}
