#!/bin/sh
# gpumem trace plot: the timeline of tests/trace-workload's trace, and of a
# crafted trace whose allocation fails at the peak
# (tests/trace-plot-check.py): the SVG's hover details, time axis and
# drawing order, then, with Chromium, the pages opened in it (the elements,
# a screenshot that is not blank, the highest column visible under the
# out-of-memory line, no console error).  Without Chromium (the Debian
# package chromium) the browser's checks skip and say so; without python3
# the test skips.
builddir=${GPUMEM_TEST_BUILDDIR:-.}
srcdir=${GPUMEM_TEST_SRCDIR:-$(dirname "$0")/..}
gpumem="$builddir/tools/gpumem"
workload="$builddir/tests/trace-workload"
check="$srcdir/tests/trace-plot-check.py"
unset GPUMEM_TRACE GPUMEM_TRACE_STACKS

if ! command -v python3 >/dev/null 2>&1; then
    echo "1..0 # SKIP python3 is not installed to check the pictures"
    exit 0
fi
browser=
for b in chromium chromium-browser google-chrome google-chrome-stable; do
    if command -v "$b" >/dev/null 2>&1; then
        browser=$(command -v "$b")
        break
    fi
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-trace-plot.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

plot() { # TRACE OUT [OPTION...]
    trace=$1 out=$2
    shift 2
    "$gpumem" trace plot "$trace" -o "$out" "$@" >>"$tmp/out" 2>&1
}
if ! "$workload" "$tmp/w.gmt" >"$tmp/out" 2>&1 || ! plot "$tmp/w.gmt" "$tmp/w.html" || ! plot "$tmp/w.gmt" "$tmp/w.svg" ||
    ! python3 "$check" --write-trace oom-at-peak "$tmp/oom.gmt" >>"$tmp/out" 2>&1 ||
    ! plot "$tmp/oom.gmt" "$tmp/oom.html" || ! plot "$tmp/oom.gmt" "$tmp/oom.svg"; then
    echo "1..1"
    echo "not ok 1 - the traces are drawn"
    sed 's/^/# /' "$tmp/out"
    exit 1
fi
# what the workload does (its head comment): device and pinned memory, 5
# markers, 5 regions, 6 copies, one out-of-memory error after one ladder run,
# one pool trim; the crafted trace: 64 MiB of device memory in use when an
# allocation fails
exec python3 "$check" "$browser" \
    "$tmp/w.html" '{"areas": ["device", "pinned"], "markers": 5, "regions": 5, "copies": 6, "oom": 1, "ladder": 1,
                    "trims": 1, "svg": "'"$tmp/w.svg"'"}' \
    "$tmp/oom.html" '{"areas": ["device"], "oom": 1, "oom_at_peak": "64.0 MiB", "svg": "'"$tmp/oom.svg"'"}'
