#!/bin/sh
# gpumem trace: summary (text and --json), export --chrome, replay, and bad
# input (truncated, corrupt, another version, not a trace), on the trace of
# tests/trace-workload, whose memory history is known (its head comment).
trace_test=trace-tool
. "${GPUMEM_TEST_SRCDIR:-$(dirname "$0")/..}/tests/trace-lib.sh"
echo "1..37"
have_python=no
command -v python3 >/dev/null 2>&1 && have_python=yes

GPUMEM_TRACE_STACKS=1 "$workload" "$tmp/w.gmt" >"$tmp/out" 2>"$tmp/err"
t $? "the workload runs, traced with its call sites"

# ---- summary ----
"$gpumem" trace summary "$tmp/w.gmt" >"$tmp/out" 2>"$tmp/err"; t $? "summary exits 0"
grep -q "^peak in use: 1.9 MiB at " "$tmp/out" && grep -q "^never freed: 2 allocations, 8.0 KiB" "$tmp/out"
t $? "summary gives the peak in use and what was never freed"
grep -q "at device_bytes+0x[0-9a-f]* (" "$tmp/out" && grep -q "by leak_some+0x[0-9a-f]* (" "$tmp/out"
t $? "summary names the call sites of the allocations never freed"
"$gpumem" trace summary "$tmp/w.gmt" --json >"$tmp/json" 2>"$tmp/err"; t $? "summary --json exits 0"
if [ $have_python = yes ]; then
    python3 - "$tmp/json" >"$tmp/out" 2>"$tmp/err" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
KiB = 1024
p = d["peak"]
assert d["complete"] is True, d["complete"]
assert p["bytes"] == 2031616, p
assert p["by_kind"] == {"device": 1966080, "pinned": 64 * KiB}, p["by_kind"]
pools = {x["pool"]: x["bytes"] for x in p["by_pool"]}
assert pools == {0: 1024 * KiB + 64 * KiB, 1: 256 * KiB + 512 * KiB + 128 * KiB}, pools
nf = d["never_freed"]
assert nf["count"] == 2 and nf["bytes"] == 8192, nf
assert all(any("leak_some" in f for f in s["call_site"]) for s in nf["sites"]), nf["sites"]
assert [a["bytes"] for a in d["largest"][:4]] == [1024 * KiB, 512 * KiB, 256 * KiB, 128 * KiB], d["largest"]
c = d["copies"]
assert sum(x["count"] for x in c) == 6 and sum(x["bytes"] for x in c) == 6 * 64 * KiB, c
assert sum(x["sync_count"] for x in c) == 3 and sum(x["async_count"] for x in c) == 3, c
assert all(x["bandwidth_bytes_per_s"] > 0 for x in c if x["sync_count"]), c
o = d["out_of_memory"]
assert len(o) == 1 and o[0]["status"] == "GPUMEM_ERROR_OUT_OF_MEMORY" and o[0]["kind"] == "device", o
assert "gpumem_device_array" in o[0]["message"], o[0]["message"]
assert d["ladder"]["runs"] == 1 and d["ladder"]["retries_succeeded"] == 0, d["ladder"]
assert d["trims"] == {"count": 1, "released_bytes": 512 * KiB + 128 * KiB}, d["trims"]
assert d["markers"] == 5 and d["regions"] == 5, (d["markers"], d["regions"])
assert d["allocations"] == 9 and d["unmatched_frees"] == 0, d
EOF
    t $? "summary --json: peak by kind and pool, never freed with call sites, copies, out of memory, trims, markers"
else
    skip "python3 is not installed to read the JSON"
fi

# ---- export --chrome ----
"$gpumem" trace export --chrome "$tmp/w.gmt" >"$tmp/chrome.json" 2>"$tmp/err"; t $? "export --chrome exits 0"
if [ $have_python = yes ]; then
    python3 - "$tmp/chrome.json" >"$tmp/out" 2>"$tmp/err" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
def n(**kw):
    return sum(1 for e in ev if all(e.get(k) == v for k, v in kw.items()))
assert n(ph="C", name="memory in use") == 16, n(ph="C")  # 9 allocations, 7 frees
peak = max(sum(e["args"].values()) for e in ev if e["ph"] == "C")
assert peak == 2031616, peak
assert n(ph="X", cat="copy") == 6
assert all(e["dur"] >= 0 and e["args"]["bytes"] == 65536 for e in ev if e["ph"] == "X")
assert n(ph="B") == 5 and n(ph="E") == 5
assert n(ph="i", cat="marker") == 5 and n(ph="i", cat="oom") == 1
assert n(ph="M", name="thread_name") == 1
ts = [e["ts"] for e in ev if "ts" in e and e["ph"] != "E"]
assert all(isinstance(x, (int, float)) and x >= 0 for x in ts)
EOF
    t $? "export --chrome: valid JSON with memory counters, copies and regions as durations, markers as instants"
else
    skip "python3 is not installed to read the JSON"
fi

# ---- plot (tests/test-trace-plot.sh opens the page in a browser) ----
"$gpumem" trace plot "$tmp/w.gmt" -o "$tmp/pools.html" --by-pool >"$tmp/out" 2>"$tmp/err" &&
    grep -q 'class="area" data-category="driver"' "$tmp/pools.html" &&
    grep -q 'class="area" data-category="pool 1 (device, device 0)"' "$tmp/pools.html" &&
    ! grep -q 'data-category="pinned"' "$tmp/pools.html"
t $? "plot --by-pool stacks the driver's memory and the pool's"
"$gpumem" trace plot "$tmp/w.gmt" -o "$tmp/no-such-dir/w.html" >"$tmp/out" 2>"$tmp/err"; [ $? = 1 ] &&
    grep -q "cannot write '$tmp/no-such-dir/w.html': No such file or directory" "$tmp/err"
t $? "plot into a directory that does not exist: exit 1, saying so"

# ---- replay ----
"$gpumem" trace replay "$tmp/w.gmt" --allocator pool >"$tmp/out" 2>"$tmp/err"; t $? "replay --allocator pool exits 0"
grep -q "^  peak in use: .* (2031616 bytes)$" "$tmp/out"
t $? "replay on a pool reproduces the trace's peak in use, measured by the pools"
held=$(sed -n 's/^  peak held: .* (\([0-9]*\) bytes)$/\1/p' "$tmp/out")
calls=$(sed -n 's/^  driver calls: \([0-9]*\) .*/\1/p' "$tmp/out")
[ -n "$held" ] && [ "$held" -ge 2031616 ] && [ -n "$calls" ] && [ "$calls" -gt 0 ] &&
    grep -q "^  time per pair: [0-9.]* ns" "$tmp/out" && grep -q "^  largest free block at the peak: " "$tmp/out"
t $? "replay prints time per pair, peak held ($held bytes), driver calls ($calls) and the largest free block"
"$gpumem" trace replay "$tmp/w.gmt" --allocator pool --no-thread-cache --no-hold >"$tmp/out" 2>"$tmp/err"
grep -q "^  peak in use: .* (2031616 bytes)$" "$tmp/out" && grep -q "allocator pool, no thread cache, not holding" "$tmp/out"
t $? "replay takes the pool's options"
calls2=$(sed -n 's/^  driver calls: \([0-9]*\) .*/\1/p' "$tmp/out")
[ -n "$calls2" ] && [ "$calls2" -gt "$calls" ]
t $? "a pool that does not hold calls the driver more ($calls2 against $calls)"
"$gpumem" trace replay "$tmp/w.gmt" >"$tmp/out" 2>"$tmp/err"
grep -q "^  peak in use: .* (2031616 bytes)$" "$tmp/out" && grep -q "allocator driver" "$tmp/out"
t $? "replay on the driver (the default)"
"$gpumem" trace replay "$tmp/w.gmt" --no-hold >"$tmp/out" 2>"$tmp/err"; [ $? = 2 ]
t $? "a pool option without --allocator pool is a usage error"

# ---- GPUMEM_TRACE ----
GPUMEM_TRACE="$tmp/env-%p.gmt" "$workload" - >"$tmp/out" 2>"$tmp/err"; t $? "the workload runs under GPUMEM_TRACE"
envfile=$(ls "$tmp"/env-*.gmt 2>/dev/null | head -n 1)
[ -n "$envfile" ] && "$gpumem" trace summary "$envfile" >"$tmp/out" 2>"$tmp/err" &&
    grep -q ", complete$" "$tmp/out" && grep -q "^never freed: 2 allocations" "$tmp/out"
t $? "its trace ends at exit, whole, with the two arrays still alive"

# ---- bad input ----
size=$(wc -c <"$tmp/w.gmt")
head -c $((size - 100)) "$tmp/w.gmt" >"$tmp/cut.gmt"
"$gpumem" trace summary "$tmp/cut.gmt" >"$tmp/out" 2>"$tmp/err"; [ $? = 1 ] && [ ! -s "$tmp/out" ]
t $? "a truncated trace: exit 1, nothing on stdout"
grep -q "cut.gmt: truncated at byte $((size - 100)) (inside block [0-9]*, which starts at byte [0-9]*; inside event record [0-9]*): the block needs" "$tmp/err"
t $? "the message says where it stops: byte, block, event record"
"$gpumem" trace summary --partial "$tmp/cut.gmt" >"$tmp/out" 2>"$tmp/err"
[ $? = 0 ] && grep -q "INCOMPLETE" "$tmp/out" && grep -q "warning: .*truncated at byte" "$tmp/err"
t $? "--partial reads what comes before, and says so"
head -c $((size - 40)) "$tmp/w.gmt" >"$tmp/noend.gmt"
"$gpumem" trace summary "$tmp/noend.gmt" >"$tmp/out" 2>"$tmp/err"; [ $? = 1 ] &&
    grep -q "noend.gmt: truncated at byte $((size - 40)) (block [0-9]*, after event record [0-9]*): the file ends before the trace's end block" "$tmp/err"
t $? "a trace without its end block (its program was killed)"
head -c 30 "$tmp/w.gmt" >"$tmp/head.gmt"
"$gpumem" trace summary "$tmp/head.gmt" >"$tmp/out" 2>"$tmp/err"; [ $? = 1 ] &&
    grep -q "head.gmt: truncated at byte 30: the file ends inside the header" "$tmp/err"
t $? "a trace cut inside its header"
if [ $have_python = yes ]; then
    # the offsets of the first events block and of its first record, by the format's rules
    python3 - "$tmp/w.gmt" "$tmp" >"$tmp/offsets" <<'EOF'
import struct, sys
data = open(sys.argv[1], "rb").read()
off = struct.unpack_from("<I", data, 12)[0]
block = 0
while off < len(data):
    typ, length = struct.unpack_from("<II", data, off)
    block += 1
    if typ == 5:
        break
    off += 8 + length
rec = off + 16
bad = bytearray(data); bad[rec] = 200
open(sys.argv[2] + "/type.gmt", "wb").write(bad)
bad = bytearray(data); struct.pack_into("<I", bad, off + 4, 8 + 64)
open(sys.argv[2] + "/len.gmt", "wb").write(bad)
bad = bytearray(data); struct.pack_into("<I", bad, 8, 3)
open(sys.argv[2] + "/version.gmt", "wb").write(bad)
print(rec, block, off)
EOF
    read -r rec block boff <"$tmp/offsets"
    "$gpumem" trace summary "$tmp/type.gmt" >"$tmp/out" 2>"$tmp/err"; [ $? = 1 ] &&
        grep -q "type.gmt: corrupt at byte $rec (block $block, event record 1): event type 200 is not one of this format's" "$tmp/err"
    t $? "a corrupt event record: its byte ($rec), block ($block) and record number"
    "$gpumem" trace summary "$tmp/len.gmt" >"$tmp/out" 2>"$tmp/err"; [ $? = 1 ] &&
        grep -q "len.gmt: corrupt at byte $boff (block $block, after event record 0): an events block of [0-9]* records in 72 bytes" "$tmp/err"
    t $? "a block whose length does not fit its records"
    "$gpumem" trace summary "$tmp/version.gmt" >"$tmp/out" 2>"$tmp/err"; [ $? = 1 ] &&
        grep -q "version.gmt: trace format version 3; this gpumem reads versions 1 to 2" "$tmp/err"
    t $? "an unknown format version is refused"
    echo keep >"$tmp/keep.html"
    "$gpumem" trace plot "$tmp/type.gmt" -o "$tmp/keep.html" >"$tmp/out" 2>"$tmp/err"; [ $? = 1 ] &&
        [ "$(cat "$tmp/keep.html")" = keep ] && [ -z "$(ls "$tmp"/keep.html.tmp* 2>/dev/null)" ]
    t $? "plot of a corrupt trace changes nothing"
    "$gpumem" trace export --chrome "$tmp/version.gmt" >"$tmp/out" 2>"$tmp/err"; [ $? = 1 ] && [ ! -s "$tmp/out" ]
    t $? "export of a refused trace writes nothing"
else
    for n in 1 2 3 4 5; do skip "python3 is not installed to make the corrupt files"; done
fi
printf 'hello, world\n' >"$tmp/text.gmt"
"$gpumem" trace summary "$tmp/text.gmt" >"$tmp/out" 2>"$tmp/err"; [ $? = 1 ] &&
    grep -q "text.gmt: not a libgpumem trace" "$tmp/err"
t $? "a file that is not a trace"
"$gpumem" trace summary "$tmp/missing.gmt" >"$tmp/out" 2>"$tmp/err"; [ $? = 1 ] &&
    grep -q "missing.gmt: cannot open: No such file or directory" "$tmp/err"
t $? "a missing file"

# ---- usage ----
"$gpumem" trace >"$tmp/out" 2>"$tmp/err"; [ $? = 2 ] && grep -q "Usage: gpumem trace summary" "$tmp/err"
t $? "gpumem trace alone: the usage, exit 2"
"$gpumem" trace bogus "$tmp/w.gmt" >"$tmp/out" 2>"$tmp/err"; [ $? = 2 ]; t $? "an unknown subcommand: exit 2"
"$gpumem" trace plot "$tmp/w.gmt" >"$tmp/out" 2>"$tmp/err"; [ $? = 2 ] && grep -q -- "-o OUT.html is required" "$tmp/err"
t $? "plot without -o: exit 2"
"$gpumem" trace export "$tmp/w.gmt" >"$tmp/out" 2>"$tmp/err"; [ $? = 2 ]; t $? "export without --chrome: exit 2"
"$gpumem" trace --help >"$tmp/out" 2>"$tmp/err"; [ $? = 0 ] && grep -q "replay" "$tmp/out"
t $? "gpumem trace --help"
"$gpumem" --help >"$tmp/out" 2>"$tmp/err"; grep -q "^  trace summary|plot|export|replay FILE" "$tmp/out"
t $? "gpumem --help lists trace"
