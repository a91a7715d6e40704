#!/bin/sh
# Issue 27 on a GPU, from the built tree (bench/RESULTS.md records the
# figures): the whole suite on the driver, the three allocation patterns
# replayed on the classic pool, the virtual-memory pool and the driver's
# stream-ordered pool, and the allocation benchmark.
#
#   sh bench/gpu-vmm.sh [OUTDIR]     (default: vmm-results)
#
# Each step's output goes to OUTDIR/<step>.txt; a failing step is reported
# and the next one runs.
set -u
out=${1:-vmm-results}
mkdir -p "$out" || exit 1
export GPUMEM_BACKEND=cuda
gpumem=./tools/gpumem
status=0
step() { # name, command...
    name=$1
    shift
    echo "== $name: $*"
    if "$@" >"$out/$name.txt" 2>&1; then echo "   ok"; else echo "   FAILED (exit $?), see $out/$name.txt"; status=1; fi
}

nvidia-smi >"$out/nvidia-smi.txt" 2>&1
step suite make -j8 check GPUMEM_BACKEND=cuda
step suite-vmm make check GPUMEM_BACKEND=cuda TESTS="tests/test-pool-vmm tests/test-cuda-abi tests/test-pool tests/test-host-pool"
for p in drift growing random; do
    step "record-$p" env GPUMEM_TRACE="$out/$p.trace" ./bench/vmm-patterns "$p"
    for a in pool vmm async; do
        step "replay-$p-$a" "$gpumem" trace replay "$out/$p.trace" --allocator "$a"
    done
done
step bench-alloc "$gpumem" bench --alloc
# The figures for the table: peak in use, peak held, held / in use.
for p in drift growing random; do
    for a in pool vmm async; do
        f="$out/replay-$p-$a.txt"
        use=$(sed -n 's/.*peak in use: .*(\([0-9]*\) bytes).*/\1/p' "$f" 2>/dev/null)
        held=$(sed -n 's/.*peak held: .*(\([0-9]*\) bytes).*/\1/p' "$f" 2>/dev/null)
        if [ -n "$use" ] && [ -n "$held" ] && [ "$use" -gt 0 ]; then
            awk -v p="$p" -v a="$a" -v u="$use" -v h="$held" \
                'BEGIN { printf "%-8s %-6s in use %8.1f MiB  held %8.1f MiB  %.3fx\n", p, a, u / 1048576, h / 1048576, h / u }'
        else
            echo "$p $a: no figures (see $f)"
        fi
    done
done | tee "$out/table.txt"
exit $status
