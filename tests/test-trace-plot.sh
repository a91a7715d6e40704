#!/bin/sh
# gpumem trace plot: the timeline of tests/trace-workload's trace, and of a
# crafted trace whose allocation fails at the peak
# (tests/trace-plot-check.py): the SVG's hover details, time axis and
# drawing order, then, with Chromium, the pages opened in it (the elements,
# a screenshot that is not blank, the highest column visible under the
# out-of-memory line, no console error).  Without Chromium (the Debian
# package chromium) the browser's checks skip and say so; without python3
# the test skips.
trace_test=trace-plot
. "${GPUMEM_TEST_SRCDIR:-$(dirname "$0")/..}/tests/trace-lib.sh"
check="$srcdir/tests/trace-plot-check.py"

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

plot() { # TRACE OUT [OPTION...]
    trace=$1 out=$2
    shift 2
    "$gpumem" trace plot "$trace" -o "$out" "$@" >>"$tmp/out" 2>&1
}
if ! "$workload" "$tmp/w.gmt" >"$tmp/out" 2>&1 || ! plot "$tmp/w.gmt" "$tmp/w.html" || ! plot "$tmp/w.gmt" "$tmp/w.svg" ||
    ! python3 "$check" --write-trace oom-at-peak "$tmp/oom.gmt" >>"$tmp/out" 2>&1 ||
    ! plot "$tmp/oom.gmt" "$tmp/oom.html" || ! plot "$tmp/oom.gmt" "$tmp/oom.svg" ||
    ! python3 "$check" --write-trace owners "$tmp/own.gmt" >>"$tmp/out" 2>&1 ||
    ! plot "$tmp/own.gmt" "$tmp/own.html" || ! plot "$tmp/own.gmt" "$tmp/own.svg" ||
    ! plot "$tmp/own.gmt" "$tmp/own-site.html" --by-site || ! plot "$tmp/own.gmt" "$tmp/own-site.svg" --by-site ||
    ! plot "$tmp/own.gmt" "$tmp/own-pool.svg" --by-pool ||
    ! GPUMEM_TRACE_STACKS=1 "$workload" "$tmp/ws.gmt" >>"$tmp/out" 2>&1 ||
    ! plot "$tmp/ws.gmt" "$tmp/ws-site.html" --by-site || ! plot "$tmp/ws.gmt" "$tmp/ws-site.svg" --by-site; then
    echo "1..1"
    echo "not ok 1 - the traces are drawn"
    sed 's/^/# /' "$tmp/out"
    exit 1
fi
# what the workload does (its head comment): device and pinned memory, 5
# markers, 5 regions, 6 copies, one out-of-memory error after one ladder run,
# one pool trim; the crafted traces (trace-plot-check.py's make_trace): 64
# MiB of device memory in use when an allocation fails; the program's memory
# at two call sites, and the library's own staging slots and copy scratch
rc=0
python3 "$check" "$browser" \
    "$tmp/w.html" '{"areas": ["device", "pinned"], "markers": 5, "regions": 5, "copies": 6, "oom": 1, "ladder": 1,
                    "trims": 1, "svg": "'"$tmp/w.svg"'"}' \
    "$tmp/oom.html" '{"areas": ["device"], "oom": 1, "oom_at_peak": "64.0 MiB", "svg": "'"$tmp/oom.svg"'"}' \
    "$tmp/own.html" '{"areas": ["device", "library: copy scratch", "library: staging slots"], "svg": "'"$tmp/own.svg"'",
                      "svg_expect": {"areas": ["device", "library: copy scratch", "library: staging slots"],
                                     "area_titles": ["^library: staging slots: peak 8.0 MiB \\(the library.s own memory"],
                                     "hover": ["\\nlibrary: staging slots: 8.0 MiB", "\\nlibrary: copy scratch: 4.0 MiB"]}}' \
    "$tmp/own-site.html" '{"areas": ["crafted-program\\+0x1000", "crafted-program\\+0x2000", "library: copy scratch",
                                     "library: staging slots"], "svg": "'"$tmp/own-site.svg"'",
                           "svg_expect": {"area_titles": ["^crafted-program\\+0x1000: peak 32.0 MiB\\nat crafted-program\\+0x1000$"],
                                          "hover": ["\\ncrafted-program\\+0x2000: 16.0 MiB"]}}' \
    "$tmp/ws-site.html" '{"device_blue": false, "markers": 5, "svg": "'"$tmp/ws-site.svg"'",
                          "svg_expect": {"area_titles": ["^device_bytes\\+0x[0-9a-f]+ \\(trace-workload\\) < leak_some\\+0x[0-9a-f]+ \\(trace-workload\\): peak 4.0 KiB\\nat device_bytes"],
                                         "hover": ["\\ndevice_bytes\\+0x[0-9a-f]+ \\(trace-workload\\) < main\\+0x[0-9a-f]+ \\(trace-workload\\): 1.0 MiB"]}}' \
    >"$tmp/tap" || rc=1
# --by-pool: the hover says how much of a column is the library's; --by-site needs call sites
n=$(grep -c '^ok \|^not ok ' "$tmp/tap")
grep -q "of which the library's own: 12.0 MiB" "$tmp/own-pool.svg"; r1=$?
"$gpumem" trace plot "$tmp/w.gmt" -o "$tmp/none.html" --by-site >"$tmp/out" 2>&1; r=$?
[ $r = 1 ] && [ ! -e "$tmp/none.html" ] && grep -q "w.gmt has no call sites (record them with GPUMEM_TRACE_STACKS=1" "$tmp/out"
r2=$?
sed '1d' "$tmp/tap"
echo "$([ $r1 = 0 ] || echo "not ")ok $((n + 1)) - --by-pool: a column's hover says how much of it is the library's own"
echo "$([ $r2 = 0 ] || echo "not ")ok $((n + 2)) - --by-site on a trace without call sites: exit 1, saying how to record them"
echo "1..$((n + 2))"
[ $rc = 0 ] && [ $r1 = 0 ] && [ $r2 = 0 ]
