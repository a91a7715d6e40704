#!/bin/sh
# The gpumem command: --help, --version, usage errors, info and info --json;
# occupancy with sizes as the environment reads them and with a kernel's
# registers and shared memory read from its module image (--cubin, --kernel);
# info --memory and info --memory --json (checked with python3 -m json.tool).
builddir=${GPUMEM_TEST_BUILDDIR:-.}
gpumem="$builddir/tools/gpumem"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-tool.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
if [ "${GPUMEM_BACKEND:-sim}" = sim ]; then
    export GPUMEM_SIM_DEVICES=2 GPUMEM_SIM_MEMORY=512M GPUMEM_SIM_ARCH=sm_90
fi
export HOME="$tmp"
unset CUDA_DEVICE
echo "1..49"
i=0
t() { i=$((i + 1)); if [ "$1" = 0 ]; then echo "ok $i - $2"; else echo "not ok $i - $2"; [ -f "$tmp/out" ] && sed 's/^/# /' "$tmp/out" "$tmp/err"; fi; }

"$gpumem" --help >"$tmp/out" 2>"$tmp/err"; t $? "--help exits 0"
grep -q '^Usage: gpumem' "$tmp/out"; t $? "--help prints the usage"
# every option of gpumem(1)'s bench synopsis is in --help's bench line
srcdir=${GPUMEM_TEST_SRCDIR:-.}
bench_opts=$(sed -n '/^\.SH SYNOPSIS/,/^\.SH DESCRIPTION/p' "$srcdir/doc/gpumem.1" | sed -n '/^\.B gpumem bench/,/^\.br/p' |
    grep -o '\\-\\-[a-z]*' | sed 's/\\-/-/g')
bench_line=$(grep '^  bench ' "$tmp/out")
missing=
for o in $bench_opts; do
    case "$bench_line" in *" [$o"* | *"| $o"* | *" $o "* | *" $o]"*) ;; *) missing="$missing $o" ;; esac
done
[ -n "$bench_opts" ] && [ -z "$missing" ]; t $? "--help lists every bench option of gpumem(1) (missing:${missing:- none})"
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

# occupancy: --smem is a size as in the environment (gpumem_size_parse).
"$gpumem" occupancy --threads 256 --smem 48K --regs 32 --json >"$tmp/k48" 2>"$tmp/err" &&
    "$gpumem" occupancy --threads 256 --smem 49152 --regs 32 --json >"$tmp/b48" 2>>"$tmp/err" &&
    cmp -s "$tmp/k48" "$tmp/b48" && grep -q '"shared_mem": 49152,' "$tmp/k48"
t $? "occupancy --smem 48K is --smem 49152"
"$gpumem" occupancy --threads 256 --smem=64KiB >"$tmp/out" 2>"$tmp/err" && grep -q '^block: 256 threads (8 warps), 65536 B shared memory' "$tmp/out"
t $? "occupancy --smem=64KiB: 65536 B"
"$gpumem" occupancy --threads 256 --smem 48X >"$tmp/out" 2>"$tmp/err"; [ $? = 2 ] && grep -q "\-\-smem '48X' is not a size" "$tmp/err"
t $? "occupancy --smem 48X: a usage error saying why"

# --cubin FILE --kernel NAME: the registers and static shared memory of the
# kernel, from the image (PTX here: the JIT's registers on a GPU, the
# simulator's 32; its 6 KiB .shared array on both).
cat >"$tmp/k.ptx" <<'PTX'
.version 7.0
.target sm_50
.address_size 64

// occ_kernel: 6 KiB of static shared memory
.visible .entry occ_kernel(.param .u64 out)
{
    .reg .b32 %r<3>;
    .reg .b64 %rd<5>;
    .shared .align 4 .b8 tile[6144];
    mov.u32 %r1, %tid.x;
    and.b32 %r1, %r1, 1023;
    mul.wide.u32 %rd1, %r1, 4;
    mov.u64 %rd2, tile;
    add.s64 %rd2, %rd2, %rd1;
    st.shared.u32 [%rd2], %r1;
    bar.sync 0;
    xor.b32 %r2, %r1, 1;
    mul.wide.u32 %rd1, %r2, 4;
    mov.u64 %rd2, tile;
    add.s64 %rd2, %rd2, %rd1;
    ld.shared.u32 %r2, [%rd2];
    ld.param.u64 %rd3, [out];
    cvta.to.global.u64 %rd3, %rd3;
    mul.wide.u32 %rd1, %r1, 4;
    add.s64 %rd4, %rd3, %rd1;
    st.global.u32 [%rd4], %r2;
    ret;
}
PTX
"$gpumem" occupancy --threads 128 --cubin "$tmp/k.ptx" --kernel occ_kernel --smem 1K --json >"$tmp/ptx.json" 2>"$tmp/err"
t $? "occupancy --cubin k.ptx --kernel occ_kernel exits 0"
grep -q '"shared_mem": 7168, "registers": [1-9][0-9]*, "kernel": {"name": "occ_kernel", "file": "[^"]*k.ptx", "registers": [1-9][0-9]*, "static_shared_mem": 6144, "max_threads_per_block": [1-9]' "$tmp/ptx.json"
t $? "...its 6144 B of static shared memory plus --smem 1K, and its registers"
regs=$(sed 's/.*"kernel": {[^}]*"registers": \([0-9]*\).*/\1/' "$tmp/ptx.json")
"$gpumem" occupancy --threads 128 --regs "$regs" --smem 7168 --json >"$tmp/same.json" 2>"$tmp/err"
sed 's/"kernel": {[^}]*}, //' "$tmp/ptx.json" | cmp -s - "$tmp/same.json"
t $? "...and the record of --regs $regs --smem 7168"
"$gpumem" occupancy --threads 128 --cubin "$tmp/k.ptx" --kernel occ_kernel >"$tmp/out" 2>"$tmp/err" &&
    grep -q "^kernel: occ_kernel in .*k.ptx: $regs registers per thread, 6144 B static shared memory" "$tmp/out"
t $? "...which the text output names"

# A cubin (made here: what the simulator's reader needs of one): 40
# registers in .nv.info, 12 KiB in .nv.shared.occ_kernel.  The driver
# needs a real one.
if [ "${GPUMEM_BACKEND:-sim}" != sim ]; then
    i=$((i + 2)); echo "ok $((i - 1)) # SKIP a hand-made cubin is for the simulator"; echo "ok $i # SKIP a hand-made cubin is for the simulator"
elif ! command -v python3 >/dev/null 2>&1; then
    i=$((i + 2)); echo "ok $((i - 1)) # SKIP python3 makes the cubin"; echo "ok $i # SKIP python3 makes the cubin"
else
    python3 - "$tmp/k.cubin" <<'PY'
import struct, sys
shstr = b"\0.shstrtab\0.strtab\0.symtab\0.text.occ_kernel\0.nv.info\0.nv.shared.occ_kernel\0"
strtab = b"\0occ_kernel\0"
b = bytearray(64)
o_shstr = len(b); b += shstr
o_str = len(b); b += strtab
b += b"\0" * (-len(b) % 8)
o_sym = len(b)
b += struct.pack("<IBBHQQ", 0, 0, 0, 0, 0, 0)
b += struct.pack("<IBBHQQ", 1, 0x12, 0, 4, 0, 16)   # occ_kernel: GLOBAL FUNC in section 4
o_text = len(b); b += bytes(16)
o_info = len(b); b += struct.pack("<BBHII", 0x04, 0x2f, 8, 1, 40)  # EIFMT_SVAL EIATTR_REGCOUNT: symbol 1, 40
b += b"\0" * (-len(b) % 8)
shoff = len(b)
name = lambda n: shstr.index(n)
for sh in [(0, 0, 0, 0, 0, 0, 0), (name(b".shstrtab"), 3, o_shstr, len(shstr), 0, 0, 0),
           (name(b".strtab"), 3, o_str, len(strtab), 0, 0, 0), (name(b".symtab"), 2, o_sym, 48, 2, 1, 24),
           (name(b".text.occ_kernel"), 1, o_text, 16, 0, 0, 0), (name(b".nv.info"), 0x70000000, o_info, 12, 3, 0, 0),
           (name(b".nv.shared.occ_kernel"), 8, 0, 12288, 0, 0, 0)]:
    b += struct.pack("<IIQQQQIIQQ", sh[0], sh[1], 0, 0, sh[2], sh[3], sh[4], sh[5], 0, sh[6])
b[0:7] = b"\x7fELF\x02\x01\x01"
struct.pack_into("<HHI", b, 16, 2, 190, 1)       # ET_EXEC, EM_CUDA
struct.pack_into("<QI", b, 40, shoff, 90)        # e_shoff, e_flags sm_90
struct.pack_into("<HHHHHH", b, 52, 64, 0, 0, 64, 7, 1)
open(sys.argv[1], "wb").write(b)
PY
    "$gpumem" occupancy --threads 256 --cubin "$tmp/k.cubin" --kernel occ_kernel --smem 1K --json >"$tmp/cubin.json" 2>"$tmp/err" &&
        grep -q '"shared_mem": 13312, "registers": 40, "kernel": {"name": "occ_kernel", "file": "[^"]*k.cubin", "registers": 40, "static_shared_mem": 12288,' "$tmp/cubin.json"
    t $? "occupancy --cubin k.cubin: the cubin's 40 registers and 12 KiB of shared memory"
    "$gpumem" occupancy --threads 256 --regs 40 --smem 13K --json >"$tmp/same.json" 2>"$tmp/err"
    sed 's/"kernel": {[^}]*}, //' "$tmp/cubin.json" | cmp -s - "$tmp/same.json" && grep -q '"limited_by": "regs"' "$tmp/same.json"
    t $? "...the record of --regs 40 --smem 13K: 6 blocks, limited by the registers"
fi
"$gpumem" occupancy --threads 128 --cubin "$tmp/k.ptx" --kernel nope >"$tmp/out" 2>"$tmp/err"; [ $? = 1 ] &&
    grep -q "\-\-kernel 'nope': gpumem_module_get_function: .*CUDA_ERROR_NOT_FOUND" "$tmp/err"
t $? "occupancy --kernel with a name the image lacks: exit 1, the library's message"
"$gpumem" occupancy --threads 128 --cubin "$tmp/missing" --kernel occ_kernel >"$tmp/out" 2>"$tmp/err"; [ $? = 1 ] &&
    grep -q "cannot read --cubin '.*missing': No such file" "$tmp/err"
t $? "occupancy --cubin of a missing file: exit 1, saying why"
"$gpumem" occupancy --threads 128 --cubin "$tmp/k.ptx" >"$tmp/out" 2>"$tmp/err"; [ $? = 2 ] && grep -q "\-\-cubin needs --kernel" "$tmp/err"
t $? "occupancy --cubin without --kernel: a usage error"
"$gpumem" occupancy --threads 128 --cubin "$tmp/k.ptx" --kernel occ_kernel --regs 8 >"$tmp/out" 2>"$tmp/err"; [ $? = 2 ] &&
    grep -q "\-\-regs and --cubin exclude each other" "$tmp/err"
t $? "occupancy --regs with --cubin: a usage error"
"$gpumem" occupancy --help >"$tmp/out" 2>"$tmp/err" && grep -q -- '--cubin FILE' "$tmp/out" && grep -q -- '48K' "$tmp/out"
t $? "occupancy --help shows --cubin and sizes"

# info --memory: the default device's memory report.
"$gpumem" info --memory >"$tmp/out" 2>"$tmp/err"; t $? "info --memory exits 0"
grep -q "^device 0: .*(the default device, chosen by scan)$" "$tmp/out" && grep -q "^  total: .* bytes)$" "$tmp/out" &&
    grep -q "^    device  *0  *0  *0  *0$" "$tmp/out"
t $? "info --memory shows the device, its memory and this process's (nothing live)"
sed -n '3p;$p' "$tmp/out" >"$tmp/ends"
printf '%s\n' "memory of device 0 (every context of it in this process: 1)" \
    "  out of memory:      0 ladder runs (0 then succeeded), 0 callback calls (0 then succeeded), 0 failures" |
    cmp -s - "$tmp/ends"
t $? "info --memory: the report as gpumem_memory_report_print() writes it, after the device's line"
if [ "${GPUMEM_BACKEND:-sim}" = sim ]; then
    GPUMEM_SIM_OTHER_MEMORY=100M "$gpumem" info --memory --json >"$tmp/json" 2>"$tmp/err"; rc=$?
    [ $rc = 0 ] && grep -q '"device_total_bytes": 536870912, "device_free_bytes": 432013312, "others_bytes": 104857600, "contexts": 1' "$tmp/json"
    t $? "info --memory --json: total, free, and what GPUMEM_SIM_OTHER_MEMORY holds as other processes"
else
    "$gpumem" info --memory --json >"$tmp/json" 2>"$tmp/err"
    grep -q '"device_total_bytes": [1-9][0-9]*, "device_free_bytes": [0-9]*, "others_bytes": [0-9]*' "$tmp/json"
    t $? "info --memory --json: the GPU's total and free memory"
fi
if command -v python3 >/dev/null 2>&1; then
    python3 -m json.tool "$tmp/json" >"$tmp/out" 2>"$tmp/err"; t $? "info --memory --json is valid JSON (python3 -m json.tool)"
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
for k in ("device", "pinned", "mapped", "managed", "registered"):
    assert d[k] == {"bytes": 0, "count": 0, "peak_bytes": 0, "peak_count": 0}, (k, d)
assert d["ordinal"] == 0 and d["source"] == "scan" and d["pools"] == 0 and d["driver_allocations"] == 0, d
assert d["device_total_bytes"] == d["device_free_bytes"] + d["others_bytes"] + d["device_reserved_bytes"], d' "$tmp/json" >"$tmp/out" 2>"$tmp/err"
    t $? "...with every kind, the pools and the counters; total = free + others + this process"
else
    i=$((i + 2)); echo "ok $((i - 1)) # SKIP python3 is not installed to parse the JSON"; echo "ok $i # SKIP python3 is not installed"
fi
CUDA_DEVICE=7 "$gpumem" info --memory --json >"$tmp/json" 2>"$tmp/err.memory"
[ $? = 1 ]; t $? "info --memory --json with no default device: exit 1"
json_check "$tmp/json" 'assert d["version"] == v and "ordinal" not in d, d
assert "no default device: " in d["error"] and "CUDA_DEVICE=\x277\x27" in d["error"], d'
t $? "...one JSON object with the version and the error"
grep -q "^gpumem: no default device: .*CUDA_DEVICE='7'" "$tmp/err.memory"; t $? "...and the message on stderr"
"$gpumem" info --memory --bogus >"$tmp/out" 2>"$tmp/err"; [ $? = 2 ]; t $? "info --memory with a bad argument exits 2"
