#!/bin/sh
# One GPU lease's worth of checks, run on the GPU machine from the working
# tree's root, with the `make dist` tarball carried in .dist/:
#   - builds the tarball (the machine has no libtool or doxygen);
#   - the whole suite with GPUMEM_BACKEND=cuda (totals in suite.txt);
#   - tests/test-races with many rounds (the stream races of issue 18);
#   - `gpumem bench` (text and --json), and with two GPUs `bench --peer`
#     beside bench/peers.py --peer (PyTorch's copies between the GPUs);
#   - optionally compute-sanitizer on the copy tests (SANITIZE=1).
# Everything it prints goes to $OUT (at most 8 files come back).
#   - optionally the out-of-memory check of a real device (oom) and the
#     allocation benchmark with its traced row (alloc).
# Usage: OUT=dir bench/gpu-session.sh [suite] [races] [bench] [peer] [sanitize] [mpi] [oom] [alloc]
set -u
out=${OUT:-/tmp/gpu-out}
mkdir -p "$out"
what=${*:-suite races bench}
has() { case " $what " in *" $1 "*) return 0 ;; esac; return 1; }
log="$out/session-$(date +%H%M%S).txt"
exec >"$log" 2>&1
echo "== $(date -u) $(nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.max,pcie.link.width.max --format=csv,noheader | head -2 | tr '\n' ';') $(nproc) CPUs"
nvidia-smi topo -m 2>/dev/null | head -6
root=$(pwd)
t=$root/$(cd "$root" && ls .dist/libgpumem-*.tar.gz | head -1)
# The build of an earlier call on the same warm machine is kept when its
# tarball is the same one.
if [ -f /tmp/g/built ] && cmp -s /tmp/g/built "$t"; then
    cd /tmp/g/libgpumem-* || exit 1
    echo "== reusing the build of $t"
else
    rm -rf /tmp/g && mkdir -p /tmp/g && tar -C /tmp/g -xzf "$t" && cd /tmp/g/libgpumem-* || exit 1
    start=$(date +%s)
    ./configure --disable-static >/tmp/g/configure.log 2>&1 && make -j16 >/tmp/g/make.log 2>&1 &&
        make -j16 check TESTS= >/tmp/g/make-check.log 2>&1 ||
        { tail -30 /tmp/g/make.log /tmp/g/configure.log; exit 1; }
    cp "$t" /tmp/g/built
    echo "== built in $(( $(date +%s) - start )) s"
fi
export GPUMEM_BACKEND=cuda
if has suite; then
    start=$(date +%s)
    make -j8 check >/tmp/g/check.log 2>&1
    echo "== suite rc=$? in $(( $(date +%s) - start )) s"
    find tests -name '*.trs' -exec cat {} + | awk '$1 == ":test-result:" { n[$2]++ }
        END { for (k in n) printf "%s %d\n", k, n[k] }' | sort | tee "$out/suite.txt"
    grep -h -E '^(FAIL|ERROR|XPASS)' tests/*.log | head -50
    grep -h -E '^(SKIP)' tests/*.log | sed 's/ - .*#/ #/' | sort | uniq -c | sort -rn | head -15
    for f in $(grep -l -E '^(FAIL|ERROR)' tests/*.log 2>/dev/null | head -4); do
        echo "----- $f"; grep -v '^ok ' "$f" | head -40
    done
fi
if has races; then
    echo "== test-races, 5000 rounds per case"
    GPUMEM_RACE_ROUNDS=5000 ./libtool --mode=execute tests/test-races 2>&1 | grep -v '^ok '
fi
if has sanitize && command -v compute-sanitizer >/dev/null; then
    for tool in memcheck racecheck synccheck; do
        for t in test-pack test-copy-scratch test-copy-paths test-staging-threads test-batch test-poison; do
            [ -x tests/.libs/$t ] || [ -x tests/$t ] || continue
            echo "== compute-sanitizer --tool $tool $t"
            ./libtool --mode=execute compute-sanitizer --tool "$tool" --error-exitcode 9 tests/$t \
                >/tmp/g/cs.log 2>&1
            echo "rc=$?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|not ok" /tmp/g/cs.log | head -5
        done
    done
fi
if has bench; then
    echo "== gpumem bench"
    ./libtool --mode=execute tools/gpumem bench >"$out/bench.txt" 2>&1; echo "rc=$?"
    ./libtool --mode=execute tools/gpumem bench --json >"$out/bench.json" 2>&1; echo "rc=$?"
fi
if has peer; then
    echo "== gpumem bench --peer"
    ./libtool --mode=execute tools/gpumem bench --peer >"$out/peer.txt" 2>&1; echo "rc=$?"
    command -v python3 >/dev/null && [ -f "$root/bench/peers.py" ] && python3 "$root/bench/peers.py" --peer >>"$out/peer.txt" 2>&1
fi
if has oom; then
    echo "== tests/test-memory-oom with GPUMEM_TEST_GPU_OOM=1"
    GPUMEM_TEST_GPU_OOM=1 ./libtool --mode=execute tests/test-memory-oom 2>GPUMEM_TEST_GPU_OOM=1 ./libtool --mode=execute tests/test-memory 2>&11 | grep -v '^ok ' | head -40
fi
if has alloc; then
    echo "== gpumem bench --alloc"
    # what the trace's event clock rests on (lib/trace.c choose_clock)
    { echo "# TSC flags: $(grep -m1 -o -w -E 'constant_tsc|nonstop_tsc|tsc_reliable' /proc/cpuinfo | sort -u | tr '\n' ' ')"
      echo "# kernel clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"
    } >"$out/alloc.txt"
    ./libtool --mode=execute tools/gpumem bench --alloc >>"$out/alloc.txt" 2>&1; echo "rc=$?"
fi
if has mpi; then
    sh "$root/bench/mpi-gpu.sh" . 2>&1 | tail -20
fi
echo "== done $(date -u)"
