/*
 * sysfs.h - a fake sysfs tree for the NUMA cases (header-only; the
 * includer has _GNU_SOURCE, as config.h gives, for sched_getaffinity).
 */
#ifndef GPUMEM_TEST_SYSFS_H
#define GPUMEM_TEST_SYSFS_H

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#include "child.h"
#include "tap.h"

/* Writes text to root/dir/file, making root/dir first. */
static void sysfs_put(const char *root, const char *dir, const char *file, const char *text) __attribute__((unused));
static void sysfs_put(const char *root, const char *dir, const char *file, const char *text)
{
    char path[512], cmd[640];
    snprintf(path, sizeof path, "%s/%s", root, dir);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", path);
    if (system(cmd) != 0)
        bail_out("cannot make %s", path);
    write_file(path, file, text);
}

/* Fills root with NUMA nodes 0 and 1, each of the one CPU this process may
 * run on first, and the PCI device 0000:10:00.0 (the simulator's device 0)
 * on node 1; gives that CPU. */
static int sysfs_two_nodes(const char *root) __attribute__((unused));
static int sysfs_two_nodes(const char *root)
{
    cpu_set_t mine;
    int cpu = 0;
    if (sched_getaffinity(0, sizeof mine, &mine) == 0)
        while (cpu < CPU_SETSIZE - 1 && !CPU_ISSET(cpu, &mine))
            cpu++;
    char list[32];
    snprintf(list, sizeof list, "%d\n", cpu);
    sysfs_put(root, "devices/system/node/node0", "cpulist", list);
    sysfs_put(root, "devices/system/node/node1", "cpulist", list);
    sysfs_put(root, "bus/pci/devices/0000:10:00.0", "numa_node", "1\n");
    return cpu;
}

/* Removes the tree at root (a diag when it cannot). */
static void sysfs_remove(const char *root) __attribute__((unused));
static void sysfs_remove(const char *root)
{
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0)
        diag("could not remove %s", root);
}

#endif /* GPUMEM_TEST_SYSFS_H */
