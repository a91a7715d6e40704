/* promises-memory.h - what the files of tests/test-promises-memory share:
 * the two contexts and dtypes main makes, and the checks of each part,
 * which main runs in order. */
#ifndef GPUMEM_TEST_PROMISES_MEMORY_H
#define GPUMEM_TEST_PROMISES_MEMORY_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <gpumem.h>

/* A DLPack tensor as interop.h describes it, and its managed and versioned
 * wrappers (the fields the checks read and write). */
typedef struct {
    void *data;
    struct {
        int32_t device_type, device_id;
    } device;
    int32_t ndim;
    struct {
        uint8_t code, bits;
        uint16_t lanes;
    } dtype;
    int64_t *shape, *strides;
    uint64_t byte_offset;
} dl_tensor;

typedef struct dl_managed {
    dl_tensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct dl_managed *self);
} dl_managed;

typedef struct dl_versioned {
    struct {
        uint32_t major, minor;
    } version;
    void *manager_ctx;
    void (*deleter)(struct dl_versioned *self);
    uint64_t flags;
    dl_tensor dl_tensor;
} dl_versioned;

extern gpumem_context *ctx, *ctx2;
extern const gpumem_dtype *i32, *f32;
void test_status(void);
void test_context(void);
void test_stream(void);
void test_event(void);
void test_host(void);
void test_staging(void);
void test_cleanup(void);
extern int created, destroyed;
gpumem_status memo_create(gpumem_context *c, const void *key, size_t key_size, void *user, void **value);
void memo_destroy(void *value, void *user);
void test_memo(void);
void test_memory(void);
void test_ipc(void);
void test_interop(void);
void test_debug(void);
void test_oom_nested(void);
void test_behaviour(void);
void test_handles(void);
void test_more(void);
void test_peaks(void);
void test_defer(void);
void test_fault_walk(void);
void test_fault_outputs(void);
void test_fault_ends(void);
void test_writebacks(void);
int ipc_child(const char *file);
void test_ipc_processes(void);

#endif
