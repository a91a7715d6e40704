/*
 * pointer.c - numba's is_cuda_array for an address: what the driver's
 * pointer attributes (cuPointerGetAttributes) say it is.
 */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "driver.h"
#include "error.h"
#include "gpumem/ipc.h"
#include "pointer.h"

GPUMEM_API gpumem_status gpumem_is_cuda_array(uint64_t pointer, int *result, gpumem_pointer_info *info)
{
    const char *what = "gpumem_is_cuda_array";
    GM_CHECK_NULL(result);
    if (info != NULL && info->size < sizeof *info)
        return gm_error(GPUMEM_ERROR_INVALID_VALUE,
                        "%s: info->size is %zu, less than sizeof(gpumem_pointer_info), %zu: set it first", what,
                        info->size, sizeof *info);
    return gm_pointer_query(what, pointer, result, info);
}

gpumem_status gm_pointer_query(const char *what, uint64_t pointer, int *result, gpumem_pointer_info *info)
{
    gpumem_status st = gm_driver_ready_for(what);
    if (st != GPUMEM_OK)
        return st;

    /* Every value goes into a zeroed 8-byte slot: the driver writes booleans
     * as one byte and the enum and ordinal as four. */
    enum { CTX, TYPE, DPTR, HPTR, MANAGED, ORDINAL, IPC, START, SIZE, N };
    static const int attrs[N] = {
        [CTX] = GM_CU_POINTER_ATTRIBUTE_CONTEXT,
        [TYPE] = GM_CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
        [DPTR] = GM_CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
        [HPTR] = GM_CU_POINTER_ATTRIBUTE_HOST_POINTER,
        [MANAGED] = GM_CU_POINTER_ATTRIBUTE_IS_MANAGED,
        [ORDINAL] = GM_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
        [IPC] = GM_CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE,
        [START] = GM_CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
        [SIZE] = GM_CU_POINTER_ATTRIBUTE_RANGE_SIZE,
    };
    uint64_t slot[N] = {0};
    void *data[N];
    for (int i = 0; i < N; i++)
        data[i] = &slot[i];
    st = gm_drv_check(GM_DRV(pointer_get_attributes, N, attrs, data, pointer), GM_OP_pointer_get_attributes,
                      what);
    if (st != GPUMEM_OK)
        return st;

    unsigned type;
    int ordinal;
    void *host;
    memcpy(&type, &slot[TYPE], sizeof type);
    memcpy(&ordinal, &slot[ORDINAL], sizeof ordinal);
    memcpy(&host, &slot[HPTR], sizeof host);
    bool managed = slot[MANAGED] != 0;
    gpumem_pointer_kind kind = GPUMEM_POINTER_UNKNOWN;
    if (managed)
        kind = GPUMEM_POINTER_MANAGED;
    else if (type == GM_CU_MEMORYTYPE_DEVICE)
        kind = GPUMEM_POINTER_DEVICE;
    else if (type == GM_CU_MEMORYTYPE_HOST)
        kind = slot[DPTR] != 0 ? GPUMEM_POINTER_MAPPED : GPUMEM_POINTER_PINNED;

    *result = kind == GPUMEM_POINTER_DEVICE || kind == GPUMEM_POINTER_MAPPED || kind == GPUMEM_POINTER_MANAGED;
    if (info != NULL) {
        size_t size = info->size;
        bool known = kind != GPUMEM_POINTER_UNKNOWN;
        *info = (gpumem_pointer_info){
            .size = size,
            .kind = kind,
            .device = known && ordinal >= 0 ? ordinal : -1,
            .driver_context = known ? slot[CTX] : 0,
            .device_pointer = known ? slot[DPTR] : 0,
            .host_pointer = known && kind != GPUMEM_POINTER_DEVICE ? host : NULL,
            .range_start = known ? slot[START] : 0,
            .range_size = known ? slot[SIZE] : 0,
            .ipc_capable = kind == GPUMEM_POINTER_DEVICE && slot[IPC] != 0,
        };
    }
    return GPUMEM_OK;
}
