#!/bin/sh
# test-layers.sh: data flows down the layers of DESIGN.md, never up.  Each
# private file of lib/ belongs to one layer; a file may include the private
# headers of its own layer and of the layers below, never of one above.
#   0 pure:    no driver (errors, environment, layout, dtypes, byte helpers)
#   1 driver:  the backend table and both backends
#   2 context: contexts and streams
#   3 memory:  the allocator, pools, host registry, deferred frees
#   4 arrays:  arrays, copies and their planner, host arrays and scopes
#   5 top:     interop, kernel cache and memoization, occupancy, IPC
# A file missing from the table fails the test, so new files get a layer.
srcdir=${GPUMEM_TEST_SRCDIR:-$(dirname "$0")/..}
lib=$srcdir/lib

layer_of() {
    case $1 in
    error|env|layout|dtype|dtype_descr|dtype_impl|bytes|version|copyplan|testing|devfile|kernels/*|workers|cpu_pack) echo 0 ;;
    driver|cuda|cuda_abi|sim|sim_*|arch_table|pointer) echo 1 ;;
    context|stream) echo 2 ;;
    alloc|pool|device_pool|host_pool|hostreg|dealloc) echo 3 ;;
    pack_kernels) echo 5 ;;
    array|copy|copy_*|host|handles|staging) echo 4 ;;
    cai|dlpack|dlpack_abi|ipc|memo|module|occupancy) echo 5 ;;
    *) echo "" ;;
    esac
}

names=$(cd "$lib" && ls *.c *.h 2>/dev/null | sed 's/\.[ch]$//' | sort -u)
n=0
for f in $names; do n=$((n + 1)); done
echo "1..$n"
i=0
status=0
for f in $names; do
    i=$((i + 1))
    mine=$(layer_of "$f")
    if [ -z "$mine" ]; then
        echo "not ok $i - lib/$f has no layer in tests/test-layers.sh"
        status=1
        continue
    fi
    bad=""
    for src in "$lib/$f.c" "$lib/$f.h"; do
        [ -f "$src" ] || continue
        for inc in $(sed -n 's/^#include "\([^"]*\)\.h".*/\1/p' "$src"); do
            case $inc in gpumem/* | config | "$f") continue ;; esac
            theirs=$(layer_of "$inc")
            if [ -z "$theirs" ]; then
                [ -f "$lib/$inc.h" ] || continue # a generated or outside header
                bad="$bad $inc.h(no layer)"
            elif [ "$theirs" -gt "$mine" ]; then
                bad="$bad $inc.h(layer $theirs)"
            fi
        done
    done
    if [ -n "$bad" ]; then
        echo "not ok $i - lib/$f (layer $mine) includes a higher layer:$bad"
        status=1
    else
        echo "ok $i - lib/$f (layer $mine) includes only its own layer and below"
    fi
done
exit $status
