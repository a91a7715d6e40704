/*
 * sim_numa.c - the simulated machine's NUMA topology (GPUMEM_SIM_NUMA):
 * how many nodes it has and which one each simulated device sits on, which
 * the simulator answers as CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID (sim.c).
 *
 * Only the devices' nodes are simulated: host memory is the process's own,
 * so pages placed on a node (mbind) go where the real kernel puts them, and
 * a node the real machine lacks is refused there.
 */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "env.h"
#include "error.h"
#include "params.h"
#include "sim_impl.h"

#define NODES_MAX 1024 /* the kernel's largest node count (CONFIG_NODES_SHIFT 10) */

/* "key=value" of the item [p, p + n): the value of key "nodes" or of
 * "gpu<K>" (*gpu = K, else -1).  false when malformed. */
static bool item(const char *p, size_t n, long *gpu, long *value)
{
    char tok[48];
    if (n >= sizeof tok)
        return false;
    memcpy(tok, p, n);
    tok[n] = '\0';
    char *eq = strchr(tok, '=');
    if (eq == NULL)
        return false;
    *eq = '\0';
    char *key = tok;
    while (*key == ' ' || *key == '\t')
        key++;
    *gpu = -1;
    if (strncmp(key, "gpu", 3) == 0) {
        if (!gm_parse_long(key + 3, gpu) || *gpu < 0)
            return false;
    } else {
        size_t k = strlen(key);
        while (k > 0 && (key[k - 1] == ' ' || key[k - 1] == '\t'))
            key[--k] = '\0';
        if (strcmp(key, "nodes") != 0)
            return false;
    }
    return gm_parse_long(eq + 1, value);
}

gpumem_status gm_sim_numa_parse(long ndev, int *node_of)
{
    static const char name[] = "GPUMEM_SIM_NUMA";
    const char *v = gm_param_text(GM_P_SIM_NUMA);
    for (long i = 0; i < GM_SIM_MAX_DEVICES; i++)
        node_of[i] = -1;
    if (v == NULL || v[strspn(v, " \t")] == '\0')
        return GPUMEM_OK; /* no NUMA */
    long nodes = -1, at[GM_SIM_MAX_DEVICES];
    for (long i = 0; i < GM_SIM_MAX_DEVICES; i++)
        at[i] = -1;
    for (const char *p = v; p != NULL;) {
        const char *comma = strchr(p, ',');
        size_t n = comma != NULL ? (size_t)(comma - p) : strlen(p);
        long gpu = -1, value = -1;
        if (!item(p, n, &gpu, &value))
            return gm_error(GPUMEM_ERROR_INVALID_ENVIRONMENT, "%s='%s': '%.*s' is not 'nodes=N' or 'gpuK=NODE' "
                            "(as nodes=2,gpu0=1,gpu1=0)", name, v, (int)n, p);
        if (gpu < 0) {
            if (nodes != -1)
                return gm_error(GPUMEM_ERROR_INVALID_ENVIRONMENT, "%s='%s': nodes is given twice", name, v);
            if (value < 1 || value > NODES_MAX)
                return gm_error(GPUMEM_ERROR_INVALID_ENVIRONMENT, "%s='%s': nodes=%ld is not between 1 and %d",
                                name, v, value, NODES_MAX);
            nodes = value;
        } else {
            if (gpu >= ndev)
                return gm_error(GPUMEM_ERROR_INVALID_ENVIRONMENT,
                                "%s='%s': device %ld does not exist (GPUMEM_SIM_DEVICES=%ld)", name, v, gpu, ndev);
            if (at[gpu] != -1)
                return gm_error(GPUMEM_ERROR_INVALID_ENVIRONMENT, "%s='%s': gpu%ld is given twice", name, v, gpu);
            if (value < 0 || value >= NODES_MAX)
                return gm_error(GPUMEM_ERROR_INVALID_ENVIRONMENT, "%s='%s': gpu%ld=%ld is no node number", name, v,
                                gpu, value);
            at[gpu] = value;
        }
        p = comma != NULL ? comma + 1 : NULL;
    }
    if (nodes == -1)
        return gm_error(GPUMEM_ERROR_INVALID_ENVIRONMENT, "%s='%s': say how many nodes the machine has (nodes=N)",
                        name, v);
    for (long i = 0; i < ndev; i++) {
        if (at[i] >= nodes)
            return gm_error(GPUMEM_ERROR_INVALID_ENVIRONMENT, "%s='%s': gpu%ld=%ld, but the nodes are 0 to %ld", name,
                            v, i, at[i], nodes - 1);
        node_of[i] = at[i] >= 0 ? (int)at[i] : 0; /* a device not listed: node 0 */
    }
    return GPUMEM_OK;
}
