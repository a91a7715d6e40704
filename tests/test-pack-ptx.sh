#!/bin/sh
# test-pack-ptx.sh - the committed lib/kernels/pack_ptx.c is what nvcc makes
# of lib/kernels/pack.cu (tools/ptx-embed.sh), and tools/bench-kernel-ptx.c
# of tools/bench-kernel.cu (gpumem bench --peer's plain kernel), when the
# nvcc at hand is the release the committed file records.  Without nvcc it
# skips and says why.
srcdir=${GPUMEM_TEST_SRCDIR:-.}
nvcc=${GPUMEM_TEST_NVCC:-}
committed=$srcdir/lib/kernels/pack_ptx.c
echo "1..3"
if test -z "$nvcc"; then
    echo "ok 1 # SKIP nvcc was not found by configure: the committed PTX cannot be regenerated here"
    echo "ok 2 # SKIP nvcc was not found by configure"
    echo "ok 3 # SKIP nvcc was not found by configure"
    exit 0
fi
want=$(sed -n 's/^ \* nvcc release: //p' "$committed")
have=$("$nvcc" --version | sed -n 's/^Cuda compilation tools, //p')
if test -z "$want"; then
    echo "not ok 1 - $committed records no nvcc release"
    echo "not ok 2 # SKIP no release to compare with"
    echo "ok 3 # SKIP no release to compare with"
    exit 0
fi
echo "ok 1 - the committed PTX records nvcc $want"
if test "x$want" != "x$have"; then
    echo "ok 2 # SKIP $nvcc is $have, the committed PTX was made by $want"
    echo "ok 3 # SKIP $nvcc is $have, the committed PTX was made by $want"
    exit 0
fi
tmp=${TMPDIR:-/tmp}/test-pack-ptx.$$
trap 'rm -f "$tmp"' EXIT
# check N SOURCE NAME COMMITTED
check() {
    if ! sh "$srcdir/tools/ptx-embed.sh" "$nvcc" "$srcdir/$2" "$3" > "$tmp"; then
        echo "not ok $1 - $nvcc failed on $2"
    elif cmp -s "$tmp" "$srcdir/$4"; then
        echo "ok $1 - regenerating $4 with $have gives the committed file"
    else
        diff -u "$srcdir/$4" "$tmp" | head -20 | sed 's/^/# /'
        echo "not ok $1 - $4 differs from what $have makes of $2: run make regen-ptx"
    fi
}
check 2 lib/kernels/pack.cu gm_pack_ptx lib/kernels/pack_ptx.c
check 3 tools/bench-kernel.cu gm_bench_kernel_ptx tools/bench-kernel-ptx.c
