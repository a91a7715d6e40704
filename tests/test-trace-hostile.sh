#!/bin/sh
# gpumem trace against hostile or unusual input and output (issue 26): -o
# naming a FIFO, a link, a device or a file with its own mode; a trace
# naming /proc files, FIFOs and one module under many names; traces crafted
# to cost quadratic time (many pools, many unmatched regions, many
# streams); an allocation of 2^63 bytes or more.  The crafted traces come
# from tests/trace-craft.py.
trace_test=trace-hostile trace_show=20
. "${GPUMEM_TEST_SRCDIR:-$(dirname "$0")/..}/tests/trace-lib.sh"
craft="$srcdir/tests/trace-craft.py"

"$workload" "$tmp/w.gmt" >"$tmp/out" 2>"$tmp/err"
t $? "the workload runs, traced"

# ---- plot -o: never replace what is not a regular file ----
mkfifo "$tmp/fifo"
timeout 120 cat "$tmp/fifo" >"$tmp/fifo.got" &
reader=$!
"$gpumem" trace plot "$tmp/w.gmt" -o "$tmp/fifo" >"$tmp/out" 2>"$tmp/err"; rc=$?
[ -p "$tmp/fifo" ] || kill $reader 2>/dev/null # replaced: nothing will write to the reader
wait $reader
[ $rc = 0 ] && [ -p "$tmp/fifo" ] && grep -q '</html>' "$tmp/fifo.got"
t $? "plot -o a FIFO: its reader gets the page, and the FIFO stays a FIFO"

echo old >"$tmp/target.html"
ln -s target.html "$tmp/link.html"
"$gpumem" trace plot "$tmp/w.gmt" -o "$tmp/link.html" >"$tmp/out" 2>"$tmp/err" &&
    [ -L "$tmp/link.html" ] && [ "$(readlink "$tmp/link.html")" = target.html ] &&
    grep -q '</html>' "$tmp/target.html" && ! ls "$tmp" | grep -q tmp
t $? "plot -o a symbolic link: the link stays, what it names gets the page, no temporary file left"

ln -s new-target.html "$tmp/dangling.html"
"$gpumem" trace plot "$tmp/w.gmt" -o "$tmp/dangling.html" >"$tmp/out" 2>"$tmp/err" &&
    [ -L "$tmp/dangling.html" ] && grep -q '</html>' "$tmp/new-target.html"
t $? "plot -o a link to a file that does not exist yet: the link stays, its target is made"

echo old >"$tmp/mode.html"
chmod 640 "$tmp/mode.html"
"$gpumem" trace plot "$tmp/w.gmt" -o "$tmp/mode.html" >"$tmp/out" 2>"$tmp/err" &&
    [ "$(stat -c %a "$tmp/mode.html")" = 640 ] && grep -q '</html>' "$tmp/mode.html"
t $? "plot -o a regular file: rewritten whole, its mode (640) kept"

echo old >"$tmp/hard.html"
ln "$tmp/hard.html" "$tmp/hard2.html"
"$gpumem" trace plot "$tmp/w.gmt" -o "$tmp/hard.html" >"$tmp/out" 2>"$tmp/err" &&
    grep -q '</html>' "$tmp/hard2.html" && [ "$(stat -c %h "$tmp/hard.html")" = 2 ]
t $? "plot -o a file with two hard links: written in place, both names see the page"

if mknod "$tmp/null" c 1 3 2>/dev/null; then
    "$gpumem" trace plot "$tmp/w.gmt" -o "$tmp/null" >"$tmp/out" 2>"$tmp/err" && [ -c "$tmp/null" ] &&
        [ "$(stat -c %t:%T "$tmp/null")" = 1:3 ]
    t $? "plot -o a character device (a new null device): written through, it stays the device"
elif [ "$(id -u)" = 0 ]; then
    "$gpumem" trace plot "$tmp/w.gmt" -o /dev/null >"$tmp/out" 2>"$tmp/err" && [ -c /dev/null ]
    t $? "plot -o /dev/null as root: /dev/null stays a character device"
else
    "$gpumem" trace plot "$tmp/w.gmt" -o /dev/null >"$tmp/out" 2>"$tmp/err" && [ -c /dev/null ]
    t $? "plot -o /dev/null: written through"
fi

# ---- the module files a trace names ----
mkdir "$tmp/d"
elf=
for f in "$builddir/tools/.libs/gpumem" "$builddir/tools/gpumem" /bin/true /usr/bin/true; do
    [ -f "$f" ] && [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] && { elf=$f; break; }
done
cp "$elf" "$tmp/d/f" && ln -s f "$tmp/d/l" && ln "$tmp/d/f" "$tmp/d/h"
echo "not an ELF object" >"$tmp/d/text"
mkfifo "$tmp/d/fifo"
python3 "$craft" symbols "$tmp/sym.gmt" "$tmp/d/f" "$tmp/d/./f" "$tmp/d//f" "$tmp/d/../d/f" "$tmp/d/l" "$tmp/d/h" \
    /proc/self/pagemap "$tmp/d/fifo" /proc/kmsg "$tmp/d/text" >"$tmp/out" 2>"$tmp/err"
timeout 120 "$gpumem" trace summary "$tmp/sym.gmt" >"$tmp/out" 2>"$tmp/err" &&
    grep -q "^call sites' module files: 10 named, 1 read ([0-9.]* [KM]iB), 4 refused" "$tmp/out"
t $? "summary reads one module file named 6 ways once, and refuses /proc/self/pagemap, a FIFO, /proc/kmsg, a text file"
grep -q "at f+0x1000" "$tmp/out" && grep -q "at pagemap+0x1000" "$tmp/out"
t $? "names that are not read still name their frames by file and address"

# ---- costs a crafted trace could make quadratic (each of these took
# ---- minutes, or tens of seconds, before) ----
python3 "$craft" pools "$tmp/pools.gmt" 200000 >"$tmp/out" 2>"$tmp/err" &&
    "$gpumem" trace summary --json "$tmp/pools.gmt" >"$tmp/pools.json" 2>"$tmp/err" &&
    python3 - "$tmp/pools.json" >"$tmp/out" 2>&1 <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["allocations"] == 200000, d["allocations"]
p = d["peak"]
assert p["bytes"] == 200000 * 256, p["bytes"]
pools = p["by_pool"]
assert len(pools) == 200000 and all(x["bytes"] == 256 for x in pools), len(pools)
assert sorted(x["pool"] for x in pools) == list(range(1, 200001))
EOF
t $? "summary of 200000 allocations in 200000 pools: each pool at the peak"

python3 "$craft" regions "$tmp/regions.gmt" 100000 >"$tmp/out" 2>"$tmp/err" &&
    "$gpumem" trace export --chrome "$tmp/regions.gmt" >"$tmp/regions.json" 2>"$tmp/err" &&
    python3 - "$tmp/regions.json" >"$tmp/out" 2>&1 <<'EOF'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
b = [e for e in ev if e["ph"] == "B"]
e = [e for e in ev if e["ph"] == "E"]
assert len(b) == 100000 and len(e) == 100000, (len(b), len(e))
# the pops close nothing (another depth): every region ends with the trace
end = max(float(x["ts"]) for x in ev if "ts" in x)
assert all(float(x["ts"]) == end for x in e), "a region closed early"
EOF
t $? "export of 100000 pushes and 100000 pops that close none of them: each region ends with the trace"
"$gpumem" trace plot "$tmp/regions.gmt" -o "$tmp/regions.html" >"$tmp/out" 2>"$tmp/err" &&
    [ "$(grep -c 'class="region"' "$tmp/regions.html")" = 100000 ] &&
    [ "$(grep -c 'class="region"[^>]*><title>region (thread 0, depth 1): [^<]*(still open)' "$tmp/regions.html")" = 100000 ]
t $? "plot of the same: 100000 regions drawn, all still open"

python3 "$craft" streams "$tmp/streams.gmt" 20000 >"$tmp/out" 2>"$tmp/err" &&
    "$gpumem" trace replay "$tmp/streams.gmt" >"$tmp/out" 2>"$tmp/err" &&
    grep -q "^  allocations: 20000 (0 of" "$tmp/out" &&
    grep -q "^  streams: 20000 of the trace's, replayed on 32 (at most 32 a device)" "$tmp/out" &&
    grep -q "^  peak in use: 4.9 MiB (5120000 bytes)" "$tmp/out"
t $? "replay of 20000 allocations on 20000 streams: on 32 streams, the same peak"

# ---- allocations of 2^63 bytes or more ----
for b in 9223372036854775808 18446744073709551615; do
    python3 "$craft" huge "$tmp/huge.gmt" $b >"$tmp/out" 2>"$tmp/err"
    for sub in "summary" "plot -o $tmp/huge.html" "export --chrome"; do
        # shellcheck disable=SC2086
        "$gpumem" trace $sub "$tmp/huge.gmt" >"$tmp/out" 2>"$tmp/err"; [ $? = 1 ] && [ ! -s "$tmp/out" ] &&
            grep -q "corrupt at byte 164 (block 3, event record 1): an allocation of $b bytes (at most 2^63 - 1)" "$tmp/err" &&
            [ ! -e "$tmp/huge.html" ]
        t $? "trace ${sub%% *}: an allocation of $b bytes is refused, saying so, and nothing is written"
    done
done
python3 "$craft" huge "$tmp/max.gmt" 9223372036854775807 >"$tmp/out" 2>"$tmp/err" &&
    "$gpumem" trace summary "$tmp/max.gmt" >"$tmp/out" 2>"$tmp/err" && grep -q "^peak in use: 8388608.0 TiB at" "$tmp/out"
t $? "an allocation of 2^63 - 1 bytes is read"
python3 "$craft" total "$tmp/total.gmt" 4 4611686018427387904 >"$tmp/out" 2>"$tmp/err"
"$gpumem" trace plot "$tmp/total.gmt" -o "$tmp/total.html" >"$tmp/out" 2>"$tmp/err"; [ $? = 1 ] &&
    grep -q "(block 3, event record 2): allocations of more than 2^63 - 1 bytes in all" "$tmp/err"
t $? "allocations that add up to 2^63 bytes or more are refused"
echo "1..$i"
