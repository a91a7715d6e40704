#!/bin/sh
# gpumem trace plot: the timeline of tests/trace-workload's trace opened in
# headless Chromium (tests/trace-plot-check.py: the elements, a screenshot
# that is not blank, no console error).  Without Chromium (the Debian
# package chromium) or python3 the test skips and says so.
builddir=${GPUMEM_TEST_BUILDDIR:-.}
srcdir=${GPUMEM_TEST_SRCDIR:-$(dirname "$0")/..}
gpumem="$builddir/tools/gpumem"
workload="$builddir/tests/trace-workload"
unset GPUMEM_TRACE GPUMEM_TRACE_STACKS

browser=
for b in chromium chromium-browser google-chrome google-chrome-stable; do
    if command -v "$b" >/dev/null 2>&1; then
        browser=$(command -v "$b")
        break
    fi
done
if [ -z "$browser" ]; then
    echo "1..0 # SKIP no Chromium to open the picture in (install the Debian package chromium)"
    exit 0
fi
if ! command -v python3 >/dev/null 2>&1; then
    echo "1..0 # SKIP python3 is not installed to drive Chromium"
    exit 0
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-trace-plot.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

if ! "$workload" "$tmp/w.gmt" >"$tmp/out" 2>&1 || ! "$gpumem" trace plot "$tmp/w.gmt" -o "$tmp/w.html" >>"$tmp/out" 2>&1 ||
    ! "$gpumem" trace plot "$tmp/w.gmt" -o "$tmp/w.svg" >>"$tmp/out" 2>&1; then
    echo "1..1"
    echo "not ok 1 - the workload's trace is drawn"
    sed 's/^/# /' "$tmp/out"
    exit 1
fi
# what the workload does (its head comment): device and pinned memory, 5
# markers, 5 regions, 6 copies, one out-of-memory error after one ladder run,
# one pool trim
exec python3 "$srcdir/tests/trace-plot-check.py" "$browser" "$tmp/w.html" \
    '{"areas": ["device", "pinned"], "markers": 5, "regions": 5, "copies": 6, "oom": 1, "ladder": 1, "trims": 1}' \
    "$tmp/w.svg"
