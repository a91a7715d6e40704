#!/bin/sh
# examples/pool-ipc.c: a parent and the child it starts (fork and exec)
# share a virtual-memory pool's allocation through a socketpair; each reads
# the other's bytes, and each times a device-to-device copy of it (the
# figures are printed, not checked: on a GPU, compare them by eye or in
# bench/RESULTS.md).
builddir=${GPUMEM_TEST_BUILDDIR:-.}
ex=$builddir/examples/pool-ipc
echo "1..2"
out=$("$ex" 4 2>&1); rc=$?
if [ "$rc" = 0 ] && printf '%s\n' "$out" | grep -q "^the child read the parent's bytes: ok$" &&
    printf '%s\n' "$out" | grep -q "^the parent read the child's bytes: ok$" &&
    printf '%s\n' "$out" | grep -q "^both copies read the child's first byte: ok$" &&
    printf '%s\n' "$out" | grep -q '^copy of 4 MiB device to device (.*): within one process .* GB/s, from the other process.s allocation .* GB/s'; then
    echo "ok 1 - pool-ipc 4: the two processes read each other's bytes"
else
    echo "not ok 1 - pool-ipc 4 (exit $rc)"; printf '%s\n' "$out" | sed 's/^/# /'
fi
out=$("$ex" 1 2>&1); rc=$?
if [ "$rc" != 0 ] && printf '%s' "$out" | grep -q "usage: pool-ipc"; then echo "ok 2 - pool-ipc 1: refused with its usage"; else
    echo "not ok 2 - pool-ipc 1 (exit $rc): $out"; fi
