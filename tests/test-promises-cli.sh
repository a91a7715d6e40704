#!/bin/sh
# gpumem(1) as a script reads it: exit statuses, the members of every --json
# object and of the CSV, the messages on bad options, and the trace reader on
# empty, corrupt and truncated files.  Each JSON member the tool prints is
# looked for in the manual's paragraph of its command, so that a script
# written from the manual finds what it names.  On the simulator.
builddir=${GPUMEM_TEST_BUILDDIR:-.}
srcdir=${GPUMEM_TEST_SRCDIR:-.}
gpumem="$builddir/tools/gpumem"
workload="$builddir/tests/trace-workload"
man="$srcdir/doc/gpumem.1"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-promises-cli.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset GPUMEM_TRACE GPUMEM_TRACE_STACKS CUDA_DEVICE
if [ "${GPUMEM_BACKEND:-sim}" != sim ]; then
    echo "1..0 # SKIP the tool's promises are checked on the simulator"
    exit 0
fi
GPUMEM_BACKEND=sim HOME=$tmp
export GPUMEM_BACKEND HOME
echo "1..57"
i=0
t() {
    i=$((i + 1))
    if [ "$1" = 0 ]; then
        echo "ok $i - $2"
    else
        echo "not ok $i - $2"
        for f in "$tmp/out" "$tmp/err" "$tmp/py"; do [ -f "$f" ] && sed 's/^/# /' "$f" | head -20; done
    fi
}
skip() { i=$((i + 1)); echo "ok $i # SKIP $1"; }
have_python=no
command -v python3 >/dev/null 2>&1 && have_python=yes
: >"$tmp/py"
# py FILE SCRIPT: runs the python SCRIPT on FILE; 0 when its asserts hold
py() { python3 -c "$2" "$1" >"$tmp/py" 2>&1; }
# the manual's paragraph of a command: from its .TP line to the next
man_section() { # first words of the command's heading, as in the page
    awk -v head="$1" 'index($0, head) == 1 && !on { on = 1; next } on && /^\.TP/ { exit } on' "$man"
}
# every member of the JSON on stdin (names before ": ") is named in the
# paragraph (.B NAME or .BR NAME ...); prints those it lacks
undocumented() { # paragraph-file
    grep -o '"[a-z_]*": ' | tr -d '": ' | sort -u | while read -r m; do
        grep -qE "^\.(B|BR|RB) (\\()?$m( |,|\$)" "$1" || grep -qE "^\.RB \( $m( |,|\$)" "$1" || echo "$m"
    done
}

# ---- gpumem itself ----
"$gpumem" >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc = 2 ] && [ ! -s "$tmp/out" ] && grep -q "^Usage: gpumem COMMAND" "$tmp/err"
t $? "gpumem alone: the usage on standard error, exit 2 (rc $rc)"
"$gpumem" --help >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc = 0 ] && for c in "info" "occupancy --threads N" "bench" "trace summary"; do grep -q "^  $c" "$tmp/out" || exit 1; done
t $? "gpumem --help: every command on standard output, exit 0 (rc $rc)"
"$gpumem" frobnicate >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc = 2 ] && grep -q "gpumem: unknown command 'frobnicate'" "$tmp/err"
t $? "an unknown command: exit 2, named (rc $rc)"
version=$("$gpumem" --version)
[ "$version" = "gpumem (libgpumem) $("$gpumem" -V | sed 's/.* //')" ] &&
    "$gpumem" info --json | grep -q "^{\"version\": \"${version##* }\""
t $? "--version and -V: the version that info --json gives ($version)"

# ---- info ----
GPUMEM_SIM_DEVICES=2 GPUMEM_SIM_PEERS=none "$gpumem" info --json >"$tmp/json" 2>"$tmp/err"; rc=$?
[ $rc = 0 ] && [ "$(wc -l <"$tmp/json")" = 1 ] && [ ! -s "$tmp/err" ]
t $? "info --json: one line, exit 0 (rc $rc)"
if [ $have_python = yes ]; then
    py "$tmp/json" '
import json, sys
d = json.load(open(sys.argv[1]))
assert set(d) == {"version", "backend", "driver_version", "devices", "peer_access", "default_device"}, d
assert d["backend"] == "sim" and isinstance(d["driver_version"], int), d
assert [x["ordinal"] for x in d["devices"]] == [0, 1], d["devices"]
for x in d["devices"]:
    assert set(x) == {"ordinal", "name", "compute_capability", "total_memory", "multiprocessors"}, x
    assert x["compute_capability"] == [9, 0] and x["total_memory"] == 1 << 30, x
assert d["peer_access"] == [[False, False], [False, False]], d["peer_access"]
assert d["default_device"] == {"ordinal": 0, "source": "scan"}, d["default_device"]'
    t $? "info --json: its members and values (2 devices without peer access)"
else
    skip "python3 is not installed to read the JSON"
fi
GPUMEM_BACKEND=cuda GPUMEM_CUDA_LIBRARY="$tmp/no-libcuda.so" "$gpumem" info --json >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc = 1 ] && grep -q '^{"version": "[^"]*", "backend": null, "driver_version": null, "devices": \[\], "peer_access": null, "default_device": null, "error": ".*no-libcuda.so' "$tmp/out" &&
    grep -q "no-libcuda.so" "$tmp/err"
t $? "info --json without a driver: nulls and the error naming the library, exit 1 (rc $rc)"
"$gpumem" info --verbose >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc = 2 ] && [ ! -s "$tmp/out" ] && grep -q "gpumem info: unknown argument '--verbose'" "$tmp/err"
t $? "info with an unknown option: exit 2, named, nothing on stdout (rc $rc)"
"$gpumem" info --memory --json >"$tmp/json" 2>"$tmp/err"; rc=$?
[ $rc = 0 ] && [ "$(wc -l <"$tmp/json")" = 1 ]
t $? "info --memory --json: one line, exit 0 (rc $rc)"
if [ $have_python = yes ]; then
    py "$tmp/json" '
import json, sys
d = json.load(open(sys.argv[1]))
kinds = ["device", "pinned", "mapped", "managed", "registered"]
for k in kinds:
    assert set(d[k]) == {"bytes", "count", "peak_bytes", "peak_count"}, d[k]
    assert d[k]["bytes"] == 0 and d[k]["count"] == 0, d[k]
assert d["ordinal"] == 0 and d["source"] == "scan" and d["contexts"] == 1, d
assert d["device_total_bytes"] == 1 << 30 and d["device_free_bytes"] == 1 << 30 and d["others_bytes"] == 0, d
for m in ["pools", "pool_held_blocks", "pool_held_bytes", "pool_largest_free_block", "pending_frees",
          "pending_free_bytes", "driver_allocations", "oom_ladder_runs", "oom_ladder_successes",
          "oom_callback_calls", "oom_callback_successes", "oom_failures", "device_reserved_bytes",
          "peak_device_reserved_bytes"]:
    assert d[m] == 0, (m, d[m])
assert "error" not in d'
    t $? "info --memory --json: every member of the report, the tool holding nothing"
else
    skip "python3 is not installed to read the JSON"
fi
GPUMEM_SIM_OTHER_MEMORY=256M "$gpumem" info --memory --json | grep -q '"device_free_bytes": 805306368, "others_bytes": 268435456,'
t $? "info --memory --json: what other processes hold (GPUMEM_SIM_OTHER_MEMORY=256M)"

# ---- occupancy ----
"$gpumem" occupancy --threads 128 --regs 64 --smem 16K --json >"$tmp/json" 2>"$tmp/err"; rc=$?
[ $rc = 0 ] && [ "$(wc -l <"$tmp/json")" = 1 ]
t $? "occupancy --json: one line, exit 0 (rc $rc)"
man_section '.BI "occupancy' >"$tmp/para"
printf '.version 7.0\n.target sm_50\n.address_size 64\n.visible .entry k()\n{\n    ret;\n}\n' >"$tmp/k.ptx"
"$gpumem" occupancy --threads 128 --cubin "$tmp/k.ptx" --kernel k --json >>"$tmp/json" 2>"$tmp/err"
missing=$(undocumented "$tmp/para" <"$tmp/json" | tr '\n' ' ')
[ -s "$tmp/para" ] && [ -z "$missing" ]
t $? "gpumem(1) names every member of occupancy --json (not named: $missing)"
if [ $have_python = yes ]; then
    py "$tmp/json" '
import json, sys
d, k = [json.loads(l) for l in open(sys.argv[1])]
assert d["threads"] == 128 and d["registers"] == 64 and d["shared_mem"] == 16384, d
assert d["warps_per_block"] == 4 and d["registers_per_block"] == 128 * 64, d
assert d["tb_per_mp"] == min(v for v in d["limits"].values() if v is not None), d
assert d["limited_by"] in d["limiting_factors"], d
assert d["warps_per_mp"] == d["tb_per_mp"] * 4 and d["occupancy"] == d["warps_per_mp"] / d["max_warps_per_mp"], d
assert k["kernel"] == {"name": "k", "file": sys.argv[1].rsplit("/", 1)[0] + "/k.ptx", "registers": 32,
                       "static_shared_mem": 0, "max_threads_per_block": 1024} or k["kernel"]["name"] == "k", k
assert k["registers"] == k["kernel"]["registers"] and k["limits"]["regs"] is not None, k'
    t $? "occupancy --json: its values agree with each other, and --cubin's kernel"
else
    skip "python3 is not installed to read the JSON"
fi

# ---- bench: options ----
for pair in "--rows --alloc" "--alloc --peer" "--rows --peer" "--json --csv"; do
    set -- $pair
    "$gpumem" bench $pair >"$tmp/out" 2>"$tmp/err"; rc=$?
    [ $rc = 2 ] && [ ! -s "$tmp/out" ] && grep -q "gpumem bench: $1 and $2 exclude each other" "$tmp/err" &&
        grep -q "^Usage: gpumem bench" "$tmp/err"
    t $? "bench $pair: a usage error naming both, exit 2 (rc $rc)"
done
for r in "0:at least one repetition" "65:too large (at most 64)" "x:is not a decimal number" "-3:is not a decimal number"; do
    "$gpumem" bench --reps "${r%%:*}" >"$tmp/out" 2>"$tmp/err"; rc=$?
    [ $rc = 2 ] && grep -q -- "${r#*:}" "$tmp/err"
    t $? "bench --reps ${r%%:*}: exit 2, ${r#*:} (rc $rc)"
done
"$gpumem" bench --reps >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc = 2 ] && grep -q "gpumem bench: --reps needs a number" "$tmp/err"
t $? "bench --reps without a value: exit 2 (rc $rc)"
"$gpumem" bench --fast >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc = 2 ] && grep -q "gpumem bench: unknown argument '--fast'" "$tmp/err"
t $? "bench with an unknown option: exit 2, named (rc $rc)"
"$gpumem" bench --help >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc = 0 ] && for o in --quick --rows --alloc --peer --json --csv "--reps N"; do grep -q -- "^  $o " "$tmp/out" || exit 1; done
t $? "bench --help: every option, exit 0 (rc $rc)"

# ---- bench: output ----
"$gpumem" bench --quick --json --reps 1 >"$tmp/bench.json" 2>"$tmp/err"; rc=$?
[ $rc = 0 ]; t $? "bench --quick --json: exit 0 (rc $rc)"
man_section '.B "bench' >"$tmp/para"
missing=$(undocumented "$tmp/para" <"$tmp/bench.json" | tr '\n' ' ')
[ -s "$tmp/para" ] && [ -z "$missing" ]
t $? "gpumem(1) names every member of bench --json (not named: $missing)"
if [ $have_python = yes ]; then
    py "$tmp/bench.json" '
import json, sys
d = json.load(open(sys.argv[1]))
assert set(d) == {"machine", "results", "notes"}, set(d)
m = d["machine"]
assert m["backend"] == "sim" and m["reps"] == 1 and m["baseline"] is None and m["device"] == 0, m
assert set(m["staging"]) == {"threads", "chunk_bytes", "depth", "min_bytes"}, m
groups = {r["group"] for r in d["results"]}
assert groups == {"host", "transfer", "strided", "alloc", "register", "overlap", "concurrent", "targets"}, groups
for r in d["results"]:
    assert {"group", "case", "path", "bytes", "seconds", "gb_per_s"} <= set(r), r
    assert ("threads" in r) == (r["group"] in ("host", "concurrent", "alloc")), r
    assert ("pairs_per_s" in r) == (r["group"] == "alloc"), r
    if r["group"] in ("transfer", "concurrent") and "pageable" in r["case"]:
        assert "pct_of_pinned" in r and "pct_of_host" in r, r
assert all(isinstance(n, str) for n in d["notes"])'
    t $? "bench --json: the machine, every row's members, the groups, the notes"
else
    skip "python3 is not installed to read the JSON"
fi
"$gpumem" bench --quick --csv --reps 1 >"$tmp/bench.csv" 2>"$tmp/err"; rc=$?
if [ $have_python = yes ]; then
    [ $rc = 0 ] && py "$tmp/bench.csv" '
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
assert rows[0] == ["group", "case", "path", "bytes", "seconds", "gb_per_s", "p95_seconds", "max_seconds"], rows[0]
assert len(rows) > 20 and all(len(r) == 8 for r in rows), [r for r in rows if len(r) != 8]
assert any("," in r[1] for r in rows[1:]), "no case with a comma"
for r in rows[1:]:
    int(r[3]); float(r[4]); float(r[5])
    assert (r[6] == "" and r[7] == "") if r[0] == "alloc" else float(r[4]) <= float(r[6]) <= float(r[7]), r' && grep -q "^# " "$tmp/err"
    t $? "bench --csv: the header, 8 fields a line (RFC 4180), the notes on standard error (rc $rc)"
else
    skip "python3 is not installed to read the CSV"
fi
"$gpumem" bench --quick --peer --json --reps 1 >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc = 1 ] && grep -q '"error": "--peer needs two devices (this backend has 1)"' "$tmp/out" &&
    grep -q "gpumem bench: --peer needs two devices" "$tmp/err"
t $? "bench --peer --json on one device: exit 1, the message in the object's error (rc $rc)"
CUDA_DEVICE=5 "$gpumem" bench --json >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc = 1 ] && [ "$(wc -l <"$tmp/out")" = 1 ] && grep -q '^{"error": "[^"]*CUDA_DEVICE[^"]*"}$' "$tmp/out"
t $? "bench --json without a default device: exit 1, an object whose only member is error (rc $rc)"

# ---- trace: an empty trace (gpumem info makes a context and nothing else) ----
GPUMEM_TRACE="$tmp/empty.gmt" "$gpumem" info >/dev/null 2>"$tmp/err"
"$gpumem" trace summary "$tmp/empty.gmt" >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc = 0 ] && grep -q ", complete$" "$tmp/out" && grep -q "^peak in use: 0 B" "$tmp/out" &&
    grep -q "^never freed: 0 allocations, 0 B" "$tmp/out"
t $? "summary of a trace without events: exit 0, nothing in use (rc $rc)"
"$gpumem" trace summary --json "$tmp/empty.gmt" >"$tmp/json" 2>"$tmp/err"
if [ $have_python = yes ]; then
    py "$tmp/json" '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["complete"] is True and d["incomplete_reason"] == "" and d["events"] == 0 and d["allocations"] == 0, d
assert d["peak"] == {"bytes": 0, "t_ns": 0, "by_kind": {}, "by_pool": []}, d["peak"]
assert d["largest"] == [] and d["copies"] == [] and d["out_of_memory"] == [], d
assert d["never_freed"] == {"count": 0, "bytes": 0, "sites": []}, d["never_freed"]'
    t $? "summary --json of a trace without events: empty arrays and zeros"
else
    skip "python3 is not installed to read the JSON"
fi
"$gpumem" trace export --chrome "$tmp/empty.gmt" >"$tmp/json" 2>"$tmp/err"; rc=$?
if [ $have_python = yes ]; then
    [ $rc = 0 ] && py "$tmp/json" '
import json, sys
d = json.load(open(sys.argv[1]))
assert [e["ph"] for e in d["traceEvents"]] == ["M"], d'
    t $? "export --chrome of a trace without events: valid JSON, the process name only (rc $rc)"
else
    skip "python3 is not installed to read the JSON"
fi
"$gpumem" trace replay "$tmp/empty.gmt" >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc = 0 ] && grep -q "^  allocations: 0 " "$tmp/out" && grep -q "^  driver calls: 0 " "$tmp/out"
t $? "replay of a trace without events: 0 allocations, 0 driver calls (rc $rc)"

# ---- trace summary --json: the members ----
GPUMEM_TRACE_STACKS=1 "$workload" "$tmp/w.gmt" >"$tmp/out" 2>"$tmp/err"
"$gpumem" trace summary --json "$tmp/w.gmt" >"$tmp/json" 2>"$tmp/err"; rc=$?
man_section '.B "trace summary' >"$tmp/para"
missing=$(undocumented "$tmp/para" <"$tmp/json" | tr '\n' ' ')
[ $rc = 0 ] && [ -s "$tmp/para" ] && [ -z "$missing" ]
t $? "gpumem(1) names every member of trace summary --json (not named: $missing)"

# ---- trace: bad files ----
if [ $have_python = yes ]; then
    python3 - "$tmp/w.gmt" "$tmp" >"$tmp/py" 2>&1 <<'EOF'
import struct, sys
d = open(sys.argv[1], "rb").read()
off = struct.unpack_from("<I", d, 12)[0]
end = None
while off < len(d):
    typ, length = struct.unpack_from("<II", d, off)
    if typ == 7:
        end = off
    off += 8 + length
open(sys.argv[2] + "/after.gmt", "wb").write(d + b"\0")
x = bytearray(d); struct.pack_into("<Q", x, end + 8, struct.unpack_from("<Q", d, end + 8)[0] + 1)
open(sys.argv[2] + "/count.gmt", "wb").write(x)
x = bytearray(d); struct.pack_into("<I", x, 12, 8192)
open(sys.argv[2] + "/header.gmt", "wb").write(x)
x = bytearray(d); struct.pack_into("<I", x, 16, 68)
open(sys.argv[2] + "/record.gmt", "wb").write(x)
print(len(d), end)
EOF
    read -r size end <"$tmp/py"
    "$gpumem" trace summary "$tmp/after.gmt" >"$tmp/out" 2>"$tmp/err"; rc=$?
    [ $rc = 1 ] && [ ! -s "$tmp/out" ] &&
        grep -q "after.gmt: corrupt at byte $size (block [0-9]*): data after the trace's end block (--partial reads what comes before)$" "$tmp/err"
    t $? "a byte after the end block: corrupt at byte $size, exit 1 (rc $rc)"
    "$gpumem" trace summary --partial --json "$tmp/after.gmt" >"$tmp/json" 2>"$tmp/err"; rc=$?
    [ $rc = 0 ] && grep -q '"complete": false, "incomplete_reason": "[^"]*after.gmt: corrupt at byte '"$size"' ' "$tmp/json" &&
        grep -q '"allocations": 9,' "$tmp/json" && grep -q "warning: .*data after the trace's end block" "$tmp/err"
    t $? "--partial reads what comes before it, and says it is not complete (rc $rc)"
    "$gpumem" trace summary "$tmp/count.gmt" >"$tmp/out" 2>"$tmp/err"; rc=$?
    [ $rc = 1 ] && grep -q "count.gmt: corrupt at byte $end (block [0-9]*, after event record [0-9]*): the end block counts [0-9]* events, the file has" "$tmp/err"
    t $? "an end block whose count differs from the records: exit 1, where (rc $rc)"
    for f in header:"a header of 8192 bytes (64 to 4096)" record:"event records of 68 bytes"; do
        "$gpumem" trace summary "$tmp/${f%%:*}.gmt" >"$tmp/out" 2>"$tmp/err"; rc=$?
        "$gpumem" trace summary --partial "$tmp/${f%%:*}.gmt" >"$tmp/out" 2>>"$tmp/err"; rc2=$?
        [ $rc = 1 ] && [ $rc2 = 1 ] && grep -q "${f%%:*}.gmt: corrupt at byte [0-9]*: ${f#*:}" "$tmp/err" &&
            ! grep -q -- "--partial" "$tmp/err"
        t $? "a corrupt ${f%%:*} field: exit 1 with or without --partial, and no hint at --partial (rc $rc, $rc2)"
    done
    # doc/trace-format.md: a reader takes headers of 64 to 4096 bytes and
    # records of a multiple of 8 from 64, and reads the first 64 bytes
    python3 - "$tmp/w.gmt" "$tmp" >"$tmp/py" 2>&1 <<'EOF'
import struct, sys
d = open(sys.argv[1], "rb").read()
def rebuild(hbytes, rbytes):
    h = bytearray(d[:64]); struct.pack_into("<II", h, 12, hbytes, rbytes)
    out = bytes(h) + b"\x07" * (hbytes - 64)
    off = struct.unpack_from("<I", d, 12)[0]
    while off < len(d):
        typ, length = struct.unpack_from("<II", d, off)
        p = d[off + 8:off + 8 + length]
        if typ == 5:
            n = struct.unpack_from("<I", p, 4)[0]
            p = p[:8] + b"".join(p[8 + 64 * k:72 + 64 * k] + b"\xee" * (rbytes - 64) for k in range(n))
        out += struct.pack("<II", typ, len(p)) + p
        off += 8 + length
    return out
open(sys.argv[2] + "/rec128.gmt", "wb").write(rebuild(64, 128))
open(sys.argv[2] + "/hdr128.gmt", "wb").write(rebuild(128, 64))
# a trace written by hand from the format's tables: one thread, a 4 KiB
# device allocation at tick 1500 freed at 1800; the clock pairs say 1 tick
# is 1 ns from tick 1000
h = b"GPUMEMTR" + struct.pack("<IIII", 1, 64, 64, 0) + struct.pack("<QQQQQ", 1, 1000, 1000, 1000, 1000)
def rec(typ, ticks):
    return struct.pack("<BBBBiQQQQQQII", typ, 0, 0, 0, 0, ticks, 1, 0, 0, 4096, 0xd000, 0, 0)
evs = rec(1, 1500) + rec(2, 1800)
thread = struct.pack("<IIII", 2, 12, 0, 42) + b"main"
events = struct.pack("<IIII", 5, 8 + len(evs), 0, 2) + evs
end = struct.pack("<IIQQQQ", 7, 32, 2, 0, 2000, 2000)
open(sys.argv[2] + "/hand.gmt", "wb").write(h + thread + events + end)
EOF
    "$gpumem" trace summary --json "$tmp/w.gmt" | sed 1d >"$tmp/a"
    for f in rec128 hdr128; do
        "$gpumem" trace summary --json "$tmp/$f.gmt" >"$tmp/out" 2>"$tmp/err"; rc=$?
        [ $rc = 0 ] && sed 1d "$tmp/out" | cmp -s - "$tmp/a"
        t $? "$f: a reader of version 1 reads it as the trace it pads (rc $rc)"
    done
    "$gpumem" trace summary --json "$tmp/hand.gmt" >"$tmp/json" 2>"$tmp/err"; rc=$?
    [ $rc = 0 ] && py "$tmp/json" '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["complete"] and d["events"] == 2 and d["allocations"] == 1 and d["duration_ns"] == 1000, d
assert d["threads"] == [{"index": 0, "tid": 42, "name": "main"}], d["threads"]
assert d["peak"] == {"bytes": 4096, "t_ns": 500, "by_kind": {"device": 4096},
                     "by_pool": [{"pool": 0, "kind": "", "device": -1, "bytes": 4096}]}, d["peak"]
assert d["largest"][0]["t_ns"] == 500 and d["largest"][0]["freed_ns"] == 800, d["largest"]
assert d["never_freed"]["count"] == 0, d'
    t $? "a trace written by hand from doc/trace-format.md: its times in ns, its peak (rc $rc)"
    # names are read as UTF-8: invalid bytes and control characters but tab as ?
    python3 - "$tmp/names.gmt" >"$tmp/py" 2>&1 <<'EOF'
import struct, sys
h = b"GPUMEMTR" + struct.pack("<IIII", 1, 64, 64, 0) + struct.pack("<QQQQQ", 1, 1000, 1000, 1000, 1000)
prog = b"/bin/\x1b[31mprog"
info = struct.pack("<IIII", 1, 8 + len(prog), 7, 0) + prog
name = b"a\x01b\xffc\td\xc3\xa9"
thread = struct.pack("<IIII", 2, 8 + len(name), 0, 42) + name
events = struct.pack("<IIII", 5, 8, 0, 0)
end = struct.pack("<IIQQQQ", 7, 32, 0, 0, 2000, 2000)
open(sys.argv[1], "wb").write(h + info + thread + events + end)
EOF
    "$gpumem" trace summary --json "$tmp/names.gmt" >"$tmp/json" 2>"$tmp/err"; rc=$?
    [ $rc = 0 ] && py "$tmp/json" '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["program"] == "/bin/?[31mprog" and d["pid"] == 7, d
assert d["threads"] == [{"index": 0, "tid": 42, "name": "a?b?c\td\u00e9"}], d["threads"]'
    t $? "names read as UTF-8: a control character and a bad byte as ?, tab and UTF-8 kept (rc $rc)"
else
    for n in 1 2 3 4 5 6 7 8 9; do skip "python3 is not installed to make the trace files"; done
fi
"$gpumem" trace summary "$tmp" >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc = 1 ] && grep -q "gpumem trace: $tmp: cannot read: Is a directory" "$tmp/err"
t $? "a directory for a trace: exit 1, saying so (rc $rc)"
: >"$tmp/zero.gmt"
"$gpumem" trace export --chrome "$tmp/zero.gmt" >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc = 1 ] && [ ! -s "$tmp/out" ] && grep -q "zero.gmt: not a libgpumem trace" "$tmp/err"
t $? "an empty file: not a trace, exit 1, nothing written (rc $rc)"

# ---- trace: options ----
for sub in summary plot export replay; do
    "$gpumem" trace $sub --help >"$tmp/out" 2>"$tmp/err"; rc=$?
    [ $rc = 0 ] && [ ! -s "$tmp/err" ] && grep -q "^Usage: gpumem trace summary FILE" "$tmp/out" &&
        grep -q "gpumem trace $sub " "$tmp/out"
    t $? "trace $sub --help: the usage on standard output, exit 0 (rc $rc)"
done
"$gpumem" trace plot "$tmp/w.gmt" -o >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc = 2 ] && grep -q "gpumem trace plot: -o needs a value" "$tmp/err"
t $? "plot -o without a file: exit 2, saying -o needs a value (rc $rc)"
"$gpumem" trace replay "$tmp/w.gmt" --allocator >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc = 2 ] && grep -q "gpumem trace replay: --allocator needs a value" "$tmp/err"
t $? "replay --allocator without a value: exit 2, saying so (rc $rc)"
"$gpumem" trace replay "$tmp/w.gmt" --allocator cuda >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc = 2 ] && grep -q "gpumem trace replay: --allocator 'cuda': expected 'driver' or 'pool'" "$tmp/err"
t $? "replay --allocator cuda: exit 2, the two choices (rc $rc)"
"$gpumem" trace summary "$tmp/w.gmt" "$tmp/w.gmt" >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc = 2 ] && grep -q "one trace file only" "$tmp/err"
t $? "two trace files: exit 2 (rc $rc)"
"$gpumem" trace summary --by-pool "$tmp/w.gmt" >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc = 2 ] && grep -q "gpumem trace summary: unknown option '--by-pool'" "$tmp/err"
t $? "an option of another subcommand: exit 2, named (rc $rc)"
"$gpumem" trace summary >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc = 2 ] && grep -q "gpumem trace summary: no trace file" "$tmp/err"
t $? "summary without a file: exit 2 (rc $rc)"
