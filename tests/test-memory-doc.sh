#!/bin/sh
# doc/memory-debugging.md tells the truth: its program (the first ```c
# block) compiles as C11 with -Wall -Wextra -Werror against the build tree,
# and on the simulator prints exactly the two outputs the page quotes (the
# first two plain ``` blocks): out of memory for this process's live data,
# then, with GPUMEM_SIM_OTHER_MEMORY, for other processes.
srcdir=${GPUMEM_TEST_SRCDIR:-.}
builddir=${GPUMEM_TEST_BUILDDIR:-.}
CC=${CC:-cc}
doc="$srcdir/doc/memory-debugging.md"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-memdoc.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
echo "1..3"
awk -v dir="$tmp" '
/^```c$/ && !done_c { inc = 1; file = dir "/oom.c"; next }
/^```$/ && !inc && !inplain && nout < 2 { inplain = 1; nout++; file = dir "/out" nout; printf "" > file; next }
/^```$/ && inc { inc = 0; done_c = 1; next }
/^```$/ && inplain { inplain = 0; next }
inc { print > file; next }
inplain { print >> file; next }
' "$doc"
i=0
t() { i=$((i + 1)); if [ "$1" = 0 ]; then echo "ok $i - $2"; else echo "not ok $i - $2"; sed 's/^/# /' "$tmp/log"; fi; }
lib="$builddir/lib/.libs"
$CC -std=c11 -Wall -Wextra -Werror ${GPUMEM_TEST_CFLAGS:-} -I"$srcdir/include" -I"$builddir/include" \
    "$tmp/oom.c" -o "$tmp/oom" ${GPUMEM_TEST_LDFLAGS:-} -L"$lib" -lgpumem >"$tmp/log" 2>&1
t $? "the page's program compiles"
run() { # expected output file, environment...
    want=$1; shift
    (unset CUDA_DEVICE; HOME="$tmp" env GPUMEM_BACKEND=sim LD_LIBRARY_PATH="$lib" "$@" "$tmp/oom") >"$tmp/got" 2>&1
    if cmp -s "$tmp/got" "$want"; then return 0; fi
    { echo "it printed:"; cat "$tmp/got"; echo "the page says:"; cat "$want"; } >"$tmp/log"
    return 1
}
[ -f "$tmp/out1" ] && run "$tmp/out1" GPUMEM_SIM_MEMORY=256M
t $? "GPUMEM_SIM_MEMORY=256M: the output the page quotes (this process's live data)"
[ -f "$tmp/out2" ] && run "$tmp/out2" GPUMEM_SIM_MEMORY=256M GPUMEM_SIM_OTHER_MEMORY=160M
t $? "with GPUMEM_SIM_OTHER_MEMORY=160M: the output the page quotes (held by other processes)"
