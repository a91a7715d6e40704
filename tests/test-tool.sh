#!/bin/sh
# The gpumem command: --help, --version, usage errors, info and info --json.
builddir=${GPUMEM_TEST_BUILDDIR:-.}
gpumem="$builddir/tools/gpumem"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-tool.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
if [ "${GPUMEM_BACKEND:-sim}" = sim ]; then
    export GPUMEM_SIM_DEVICES=2 GPUMEM_SIM_MEMORY=512M GPUMEM_SIM_ARCH=sm_90
fi
export HOME="$tmp"
unset CUDA_DEVICE
echo "1..24"
i=0
t() { i=$((i + 1)); if [ "$1" = 0 ]; then echo "ok $i - $2"; else echo "not ok $i - $2"; [ -f "$tmp/out" ] && sed 's/^/# /' "$tmp/out" "$tmp/err"; fi; }

"$gpumem" --help >"$tmp/out" 2>"$tmp/err"; t $? "--help exits 0"
grep -q '^Usage: gpumem' "$tmp/out"; t $? "--help prints the usage"
"$gpumem" --version >"$tmp/out" 2>"$tmp/err"; t $? "--version exits 0"
grep -q "^gpumem (libgpumem) [0-9]*\.[0-9]*\.[0-9]*" "$tmp/out"; t $? "--version prints the version"
"$gpumem" --bogus >"$tmp/out" 2>"$tmp/err"; [ $? = 2 ]; t $? "a bad option exits 2"
grep -q 'Usage' "$tmp/err"; t $? "...with the usage on stderr"
"$gpumem" info --bogus >"$tmp/out" 2>"$tmp/err"; [ $? = 2 ]; t $? "a bad info argument exits 2"

"$gpumem" info >"$tmp/out" 2>"$tmp/err"; t $? "info exits 0"
cp "$tmp/out" "$tmp/out.info"
grep -q "^backend: *${GPUMEM_BACKEND:-sim}" "$tmp/out" && grep -q "^default device: *0 (chosen by scan)" "$tmp/out"
t $? "info shows the backend and the default device with its rule"

"$gpumem" info --json >"$tmp/json" 2>"$tmp/err"; t $? "info --json exits 0"
if [ "${GPUMEM_BACKEND:-sim}" = sim ]; then
    grep -q '"backend": "sim", "driver_version": 13000, "devices": \[{"ordinal": 0, "name": "[^"]*", "compute_capability": \[9, 0\], "total_memory": 536870912, "multiprocessors": 132}, {"ordinal": 1,' "$tmp/json"
    t $? "info --json has the simulated devices' fields"
else
    grep -q '"backend": "cuda", "driver_version": [0-9]*, "devices": \[{"ordinal": 0, "name": "[^"]*", "compute_capability": \[[0-9]*, [0-9]*\], "total_memory": [0-9]*, "multiprocessors": [0-9]*}' "$tmp/json"
    t $? "info --json has the GPU's fields"
fi
if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["default_device"] == {"ordinal": 0, "source": "scan"}, d; assert len(d["devices"]) >= 1' "$tmp/json" >"$tmp/out" 2>"$tmp/err"
    t $? "info --json is one valid JSON object with the default device"
else
    i=$((i + 1)); echo "ok $i # SKIP python3 is not installed to parse the JSON"
fi

# the peer-access matrix
if [ "${GPUMEM_BACKEND:-sim}" = sim ]; then
    grep -q '"peer_access": \[\[false, true\], \[true, false\]\]' "$tmp/json"
    t $? "info --json has the peer-access matrix (two simulated peers)"
    GPUMEM_SIM_PEERS=none "$gpumem" info --json >"$tmp/json2" 2>"$tmp/err"
    grep -q '"peer_access": \[\[false, false\], \[false, false\]\]' "$tmp/json2"
    t $? "...and GPUMEM_SIM_PEERS=none empties it"
    grep -A3 '^peer access:' "$tmp/out.info" | grep -q '^ *0  *-  *y$'
    t $? "info prints the matrix"
    GPUMEM_SIM_PEERS=0-0 "$gpumem" info >"$tmp/out" 2>"$tmp/err"; [ $? = 1 ] && grep -q GPUMEM_SIM_PEERS "$tmp/err"
    t $? "a bad GPUMEM_SIM_PEERS: exit 1, naming it"
else
    grep -q '"peer_access": \[\[false' "$tmp/json"; t $? "info --json has the peer-access matrix"
    grep -q '^peer access:' "$tmp/out.info" || [ "$(grep -c '^  device' "$tmp/out.info")" -lt 2 ]
    t $? "info prints the matrix when there are several devices"
    i=$((i + 2)); echo "ok $((i - 1)) # SKIP GPUMEM_SIM_PEERS is the simulator's"; echo "ok $i # SKIP GPUMEM_SIM_PEERS is the simulator's"
fi

CUDA_DEVICE=7 "$gpumem" info >"$tmp/out" 2>"$tmp/err"; [ $? = 1 ]; t $? "no default device: exit 1"
grep -q "CUDA_DEVICE='7'" "$tmp/err"; t $? "...with the library's message"

# --json prints one JSON object whatever fails, with the version, and the
# error when there is one.
version=$("$gpumem" --version | sed 's/^gpumem (libgpumem) //')
json_check() { # file, python assertions over d
    if command -v python3 >/dev/null 2>&1; then
        python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); v=sys.argv[2]
'"$2" "$1" "$version" >"$tmp/out" 2>"$tmp/err"
    else
        grep -q "\"version\": \"$version\"" "$1"
    fi
}
json_check "$tmp/json" 'assert d["version"] == v, d; assert "error" not in d, d'
t $? "info --json has the library version and no error"
GPUMEM_BACKEND=cuda GPUMEM_CUDA_LIBRARY=/nonexistent/libcuda.so.1 "$gpumem" info --json >"$tmp/json" 2>"$tmp/err"
[ $? = 1 ]; t $? "info --json without a driver: exit 1"
json_check "$tmp/json" 'assert d["version"] == v and d["backend"] is None and d["devices"] == [] and d["default_device"] is None, d
assert "/nonexistent/libcuda.so.1" in d["error"], d'
t $? "...and still one JSON object, with the version and the error"
CUDA_DEVICE=7 "$gpumem" info --json >"$tmp/json" 2>"$tmp/err"
[ $? = 1 ]; t $? "info --json with no default device: exit 1"
json_check "$tmp/json" 'assert d["version"] == v and len(d["devices"]) >= 1 and d["default_device"] is None, d
assert "CUDA_DEVICE=\x277\x27" in d["error"], d'
t $? "...with the devices and the error"
# A string with a quote, a backslash and a tab: escaped (json-string.c).
GPUMEM_BACKEND="$(printf 'x"\\y\tz')" "$gpumem" info --json >"$tmp/json" 2>"$tmp/err"
grep -qF 'x\"\\y\u0009z' "$tmp/json" &&
    json_check "$tmp/json" 'assert "GPUMEM_BACKEND=\x27x\"\\y\tz\x27" in d["error"], d'
t $? "info --json escapes a quote, a backslash and a control character in a string"
