#!/bin/sh
# The promises of gpumem(1) for info, occupancy and trace, as a user of the
# tool reads them: with --json, one JSON object on standard output whatever
# fails, the library's message in its "error", and the documented exit
# status (0 success, 1 a library failure or a workload that cannot run, 2 a
# usage error).
builddir=${GPUMEM_TEST_BUILDDIR:-.}
gpumem="$builddir/tools/gpumem"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-promises-tool.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset GPUMEM_TRACE GPUMEM_TRACE_STACKS CUDA_DEVICE
if [ "${GPUMEM_BACKEND:-sim}" != sim ]; then
    echo "1..0 # SKIP the tool's promises are checked on the simulator"
    exit 0
fi
GPUMEM_BACKEND=sim GPUMEM_SIM_DEVICES=2
export GPUMEM_BACKEND GPUMEM_SIM_DEVICES
echo "1..9"
i=0
t() {
    i=$((i + 1))
    if [ "$1" = 0 ]; then
        echo "ok $i - $2"
    else
        echo "not ok $i - $2"
        for f in "$tmp/out" "$tmp/err"; do [ -f "$f" ] && sed 's/^/# /' "$f" | head -20; done
    fi
}
# one JSON object on one line with an "error" member that holds the needle
json_error() { # file needle
    [ "$(wc -l <"$1")" = 1 ] || return 1
    grep -q '^{.*"error": "[^"]*'"$2"'[^"]*"}$' "$1"
}

# occupancy --json: a device that does not exist is a library failure
"$gpumem" occupancy --threads 128 --device 7 --json >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc = 1 ]; t $? "occupancy --device 7 --json: exit 1 (got $rc)"
json_error "$tmp/out" "gpumem_device_data_create: no device 7"
t $? "occupancy --device 7 --json: one JSON object with the library's message in error"
grep -q 'gpumem_device_data_create: no device 7' "$tmp/err"
t $? "occupancy --device 7 --json: the message on standard error too"
# occupancy --json: a module image that cannot be read
"$gpumem" occupancy --threads 128 --cubin "$tmp/missing.ptx" --kernel k --json >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc = 1 ]; t $? "occupancy --cubin MISSING --json: exit 1 (got $rc)"
json_error "$tmp/out" "cannot read --cubin"
t $? "occupancy --cubin MISSING --json: one JSON object with the reason in error"
# a kernel that the image lacks
printf '.version 7.0\n.target sm_50\n.address_size 64\n.visible .entry k()\n{\n    ret;\n}\n' >"$tmp/k.ptx"
"$gpumem" occupancy --threads 128 --cubin "$tmp/k.ptx" --kernel nope --json >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc = 1 ] && json_error "$tmp/out" "nope"
t $? "occupancy --kernel NOPE --json: exit 1, one JSON object naming the kernel (rc $rc)"
# a workload that cannot run still prints its record, with 0 blocks, and exits 1
"$gpumem" occupancy --threads 4096 --json >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc = 1 ] && grep -q '"tb_per_mp": 0, "limited_by": "warps"' "$tmp/out" && json_error "$tmp/out" "too many threads"
t $? "occupancy --threads 4096 --json: the record with 0 blocks, its error, exit 1 (rc $rc)"
# a usage error is exit 2, whatever --json says
"$gpumem" occupancy --threads 0 --json >"$tmp/out" 2>"$tmp/err"
[ $? = 2 ]; t $? "occupancy --threads 0: a usage error (exit 2)"
# info --json: one object whatever fails (no default device)
CUDA_DEVICE=9 "$gpumem" info --json >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc = 1 ] && json_error "$tmp/out" "CUDA_DEVICE"
t $? "info --json with CUDA_DEVICE=9: exit 1, one object naming the variable (rc $rc)"
