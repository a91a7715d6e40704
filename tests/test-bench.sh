#!/bin/sh
# gpumem bench as a smoke test (its figures mean nothing on the simulator):
# the quick run, --json, --csv (read back with Python's csv module), --rows,
# and its arguments: --help, --reps parsed strictly, exclusive options.
builddir=${GPUMEM_TEST_BUILDDIR:-.}
gpumem="$builddir/tools/gpumem"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-bench.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
echo "1..28"
i=0
t() { i=$((i + 1)); if [ "$1" = 0 ]; then echo "ok $i - $2"; else echo "not ok $i - $2"; sed 's/^/# /' "$tmp/err"; fi; }
GPUMEM_STAGING_MIN_BYTES=1M "$gpumem" bench --quick >"$tmp/out" 2>"$tmp/err"; t $? "bench --quick exits 0"
grep -q '^transfer  h2d pinned ' "$tmp/out" && grep -q '^strided   d2h d\[:, ::2\] pinned  *device-pack' "$tmp/out"
t $? "it has the transfer rows and d[:, ::2] packed on the device"
grep -q ' staged ' "$tmp/out"; t $? "with GPUMEM_STAGING_MIN_BYTES=1M the 1 MiB pageable rows go through the staging engine"
grep -q '^host  *pageable read, 1 thread ' "$tmp/out" && grep -q '^host  *pageable to pinned slot, engine busy' "$tmp/out" &&
    grep -q '^# host ceiling of pageable copies' "$tmp/out" && grep -q '^transfer  h2d pageable .*% of pinned .*% of host' "$tmp/out" &&
    grep -q '^concurrent h2d 8 threads, 1 MiB pageable each .*% of pinned' "$tmp/out" &&
    grep -q '^# target: a queued pageable download takes' "$tmp/out" && grep -q '^targets .*h2d pinned 4 KiB' "$tmp/out"
t $? "the host ceiling, pageable rows as % of pinned and of the host, 2 to 8 threads at once, the targets"
grep -q '^host  *h\[:, ::2\] to pinned slot, useful bytes, engine busy, 1 thread ' "$tmp/out" &&
    grep -q '^# host ceiling of a strided host side h\[:, ::2\] (useful bytes): h2d ' "$tmp/out" &&
    grep -q '^strided   h2d h\[:, ::2\] pageable .*% of host' "$tmp/out" && grep -q '^transfer  h2d pinned .* p95 .* max ' "$tmp/out"
t $? "the strided host side's ceiling of useful bytes, the strided pageable rows judged against it; p95 and max"
if [ "${GPUMEM_BACKEND:-sim}" = sim ]; then
    GPUMEM_SIM_HOST_MEMORY=3M "$gpumem" bench --quick --reps 1 >"$tmp/out" 2>"$tmp/err" && grep -q '^# skipped: .*page-locked' "$tmp/out"
    t $? "sizes beyond the page-locked limit are skipped with a note, not failed"
else
    i=$((i + 1)); echo "ok $i # SKIP the page-locked limit is the simulator's (GPUMEM_SIM_HOST_MEMORY)"
fi
"$gpumem" bench --quick --csv >"$tmp/csv" 2>"$tmp/err"; t $? "bench --csv exits 0"
head -n 1 "$tmp/csv" | grep -q '^group,case,path,bytes,seconds,gb_per_s,p95_seconds,max_seconds$' && [ "$(wc -l <"$tmp/csv")" -gt 30 ]
t $? "--csv: the header and a line per result"
if command -v python3 >/dev/null 2>&1; then
    python3 -c '
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
assert rows[0] == ["group", "case", "path", "bytes", "seconds", "gb_per_s", "p95_seconds", "max_seconds"], rows[0]
bad = [r for r in rows if len(r) != 8]
assert not bad, "rows without 8 fields: %r" % bad[:3]
for r in rows[1:]:
    int(r[3]); m = float(r[4]); float(r[5])
    if r[0] == "alloc":
        assert r[6] == "" and r[7] == "", r
    else:
        assert m <= float(r[6]) <= float(r[7]), r
assert any(r[0] == "transfer" and r[6] != "" for r in rows[1:])
commas = [r[1] for r in rows[1:] if "," in r[1]]
assert "d2h d[:, ::2] pinned" in commas and any(c.startswith("pool 4 KiB, ") for c in commas), commas
' "$tmp/csv" >"$tmp/err" 2>&1
    t $? "--csv is RFC 4180: a CSV reader finds 8 fields in every row, case names with commas included; median <= p95 <= max"
else
    i=$((i + 1)); echo "ok $i # SKIP python3 is not installed to read the CSV"
fi
"$gpumem" bench --quick --json >"$tmp/json" 2>"$tmp/err"
if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["machine"]["backend"]; assert len(d["results"]) > 30; assert all(r["bytes"] > 0 for r in d["results"])' "$tmp/json" 2>"$tmp/err"
    t $? "--json is one object with the machine and the results"
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); r=d["results"]; assert any("pct_of_pinned" in x and "pct_of_host" in x for x in r if x["group"] == "transfer"); assert any(x["group"] == "host" and x["threads"] >= 1 for x in r); assert any(n.startswith("host ceiling") for n in d["notes"])' "$tmp/json" 2>"$tmp/err"
    t $? "--json carries the percentages of pinned and of the host, the host rows and the notes"
    python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
r = [x for x in d["results"] if x["group"] in ("transfer", "strided", "host", "concurrent", "overlap")]
assert r and all(x["seconds"] <= x["p95_seconds"] <= x["max_seconds"] for x in r), r[:2]
assert d["machine"]["reps"] == 3
' "$tmp/json" 2>"$tmp/err"
    t $? "--json: every transfer, strided, host, concurrent and overlap row has its median <= p95 <= maximum"
else
    i=$((i + 3)); echo "ok $((i - 2)) # SKIP python3 is not installed to parse the JSON"; echo "ok $((i - 1)) # SKIP python3"; echo "ok $i # SKIP python3"
fi
"$gpumem" bench --quick --rows --reps 1 >"$tmp/out" 2>"$tmp/err" && grep -q '^rows .*rows of 65536 B' "$tmp/out"
t $? "--rows measures 2-D copies up to rows of 64 KiB"
"$gpumem" bench --quick --alloc --reps 1 >"$tmp/out" 2>"$tmp/err" &&
    [ "$(grep -c '^alloc .*gpumem' "$tmp/out")" -ge 16 ] && grep -q '^alloc  *memoize hit, 8 threads' "$tmp/out" &&
    grep -q '^register  *pool, .* 33554432 ' "$tmp/out" && grep -q '^register  *one serial cuMemHostRegister' "$tmp/out"
t $? "--alloc: pool, array, page-locked pool and memoize rows at 1 to 8 threads, and the registration rows"
grep -Eq '^# memoize hit, 8 threads: [0-9.]+ ns a hit of wall time, of which the threads ran [0-9]+%: [0-9.]+ ns a hit of their CPU time, [0-9.]+ cycles of their clock \(a dependent multiply took [0-9.]+ ns: [0-9.]+ GHz at 3 cycles a multiply\); the process.s other threads took [0-9.]+ ms of CPU in the row.s [0-9]+ ms; [0-9] of 8 threads ended on another CPU than they began on; [0-9]+ pairs of threads ended on one core \(one CPU, or two hyperthreads of a core\)$' "$tmp/out"
t $? "--alloc: each memoize row has a note of what its time is made of (CPU share, cycles, clock, other threads' CPU, CPUs and cores)"
if [ "${GPUMEM_BACKEND:-sim}" = sim ]; then
    GPUMEM_SIM_DEVICES=2 "$gpumem" bench --quick --peer --reps 1 >"$tmp/out" 2>"$tmp/err" &&
        grep -q '^peer .*d2d 0->1 \[::2\]  *peer ' "$tmp/out" && grep -q '^peer .*d2d 1->0 contiguous staged  *peer-staged ' "$tmp/out" &&
        grep -q '^peer .*d2d 1->0 \[:, ::2\] -> C  *peer ' "$tmp/out" && grep -q '^peer .*d2d 0->1 C -> \[:, ::2\]  *peer ' "$tmp/out" &&
        grep -q '^peer .*d2d 0->1 transposed -> C  *peer ' "$tmp/out" && grep -q '^peer .*d2h pinned device 1 ' "$tmp/out" &&
        grep -q '^# target: d2d 1->0 contiguous staged: .* of the slower of pinned' "$tmp/out" &&
        grep -q '^# skipped: .*kernel-pull: .*not simulated' "$tmp/out"
    t $? "--peer measures both directions, peer (strided, transposed) and staged beside pinned, with the targets; the plain kernel is skipped on the simulator"
    GPUMEM_SIM_DEVICES=1 "$gpumem" bench --quick --peer >"$tmp/out" 2>"$tmp/err"; [ $? = 1 ] && grep -q 'two devices' "$tmp/err"
    t $? "--peer with one device: exit 1, saying why"
else
    i=$((i + 2)); echo "ok $((i - 1)) # SKIP --peer: run on the GPU by hand (gpumem bench --peer)"; echo "ok $i # SKIP --peer"
fi
"$gpumem" bench --bogus >"$tmp/out" 2>"$tmp/err"; [ $? = 2 ]; t $? "a bad argument exits 2"

# arguments: help, --reps, options that exclude each other (none runs a case)
for h in -h --help; do
    "$gpumem" bench $h >"$tmp/out" 2>"$tmp/err" && grep -q '^Usage: gpumem bench ' "$tmp/out" &&
        grep -q -- '--reps N' "$tmp/out" && [ ! -s "$tmp/err" ]
    t $? "bench $h prints its usage on stdout and exits 0"
done
usage_error() { # expected message, then the arguments
    want=$1; shift
    "$gpumem" bench "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?
    [ $rc = 2 ] && grep -q -- "$want" "$tmp/err" && grep -q '^Usage: gpumem bench' "$tmp/err" && [ ! -s "$tmp/out" ]
}
usage_error "--reps '5abc' is not a decimal number" --quick --reps 5abc; t $? "--reps 5abc: exit 2, not a number"
usage_error "--reps 0: at least one" --quick --reps 0; t $? "--reps 0: exit 2, saying why"
usage_error "--reps 18446744073709551617 is too large" --quick --reps 18446744073709551617
t $? "--reps past 2^64: exit 2, too large (no wrap)"
usage_error "--reps 4294967301 is too large (at most 64)" --quick --reps 4294967301
t $? "--reps 2^32 + 5: exit 2, too large (atoi would give 5)"
usage_error "--reps needs a number" --quick --reps; t $? "--reps without a value: exit 2"
usage_error "--rows and --alloc exclude each other" --rows --alloc; t $? "--rows --alloc: exit 2"
usage_error "--peer and --rows exclude each other" --peer --quick --rows; t $? "--peer --rows: exit 2"
usage_error "--csv and --json exclude each other" --csv --json; t $? "--csv --json: exit 2"
