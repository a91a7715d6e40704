#!/bin/sh
# gpumem trace summary: who holds memory (doc/trace-format.md, version 2):
# the library's own memory at the peak, apart from the program's; the
# largest allocations with their owner and call site; the library's memory
# kept at the end is not counted as never freed.  On crafted traces
# (tests/trace-plot-check.py --write-trace) and tests/trace-workload's.
trace_test=trace-owner
. "${GPUMEM_TEST_SRCDIR:-$(dirname "$0")/..}/tests/trace-lib.sh"
if ! command -v python3 >/dev/null 2>&1; then
    echo "1..0 # SKIP python3 is not installed to write the crafted traces"
    exit 0
fi
echo "1..7"
for n in owners owners-kept; do
    python3 "$srcdir/tests/trace-plot-check.py" --write-trace $n "$tmp/$n.gmt" || exit 1
done

"$gpumem" trace summary "$tmp/owners.gmt" >"$tmp/out" 2>"$tmp/err" &&
    grep -qx "  the library's own: 12.0 MiB (copy scratch 4.0 MiB, staging slots 8.0 MiB)" "$tmp/out"
t $? "the peak says how much of it is the library's own, and what for"
# each of the largest allocations, then its call site
awk '/^largest allocations:/ { on = 1; next } /^never freed/ { on = 0 } on' "$tmp/out" >"$tmp/largest"
printf '%s\n' \
    "    32.0 MiB device on device 0, driver, at 10.000 ms by thread 0 (main), freed at 90.000 ms" \
    "      at crafted-program+0x1000" \
    "    16.0 MiB device on device 0, driver, at 20.000 ms by thread 0 (main), freed at 80.000 ms" \
    "      at crafted-program+0x2000" \
    "     8.0 MiB pinned on device 0, driver, the library's staging slots, at 30.000 ms by thread 0 (main), freed at 75.000 ms" \
    "      at crafted-program+0x1000" \
    "     4.0 MiB device on device 0, driver, the library's copy scratch, at 40.000 ms by thread 0 (main), freed at 70.000 ms" \
    "      at crafted-program+0x2000" >"$tmp/want"
cmp -s "$tmp/largest" "$tmp/want"
t $? "the largest allocations: their owner and call site"
"$gpumem" trace summary --json "$tmp/owners.gmt" >"$tmp/json" 2>"$tmp/err" && python3 - "$tmp/json" >"$tmp/out" 2>&1 <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
MiB = 1 << 20
assert d["peak_by_owner"] == {"program": 48 * MiB, "copy scratch": 4 * MiB, "staging slots": 8 * MiB}, d["peak_by_owner"]
assert [a["owner"] for a in d["largest"]] == ["program", "program", "staging slots", "copy scratch"], d["largest"]
assert [a["call_site"] for a in d["largest"]] == [["crafted-program+0x1000"], ["crafted-program+0x2000"]] * 2, d["largest"]
assert d["library_held"] == {"count": 0, "bytes": 0}, d["library_held"]
PY
t $? "--json: the peak by owner, the largest allocations' owner and call site"

"$gpumem" trace summary "$tmp/owners-kept.gmt" >"$tmp/out" 2>"$tmp/err" &&
    grep -qx "never freed: 0 allocations, 0 B" "$tmp/out" &&
    grep -qx "the library's own, still held at the end: 1 allocation, 8.0 MiB (kept for later calls; given back when their context is released)" "$tmp/out"
t $? "the library's memory kept at the end is not a leak of the program's"
"$gpumem" trace summary --json "$tmp/owners-kept.gmt" >"$tmp/json" 2>"$tmp/err" && python3 - "$tmp/json" >"$tmp/out" 2>&1 <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["never_freed"]["count"] == 0 and d["library_held"] == {"count": 1, "bytes": 8 << 20}, d
PY
t $? "--json: the library's memory held at the end, apart from never_freed"

GPUMEM_TRACE_STACKS=1 "$workload" "$tmp/w.gmt" >"$tmp/out" 2>"$tmp/err"
t $? "the workload runs, traced with its call sites"
"$gpumem" trace summary "$tmp/w.gmt" >"$tmp/out" 2>"$tmp/err" &&
    grep -A1 "^     1.0 MiB device on device 0, driver, at " "$tmp/out" | tail -1 |
    grep -q "^      at device_bytes+0x[0-9a-f]* (trace-workload) < main+0x[0-9a-f]* (trace-workload)$"
t $? "the workload's largest allocation: where it was made"
