#!/bin/sh
# The code examples in the public headers' doc comments compile, and the
# whole programs print what they say they print.
#
# Convention (keep it when adding an example to include/gpumem/*.h):
#   @code{.c} ... @endcode  is checked.  The comment's leading " * " is
#       dropped from each line.
#     - A block with a line starting "int main(" is a whole program: it is
#       compiled as C11 with -Wall -Wextra -Werror, linked against the built
#       library and run on the simulator (GPUMEM_BACKEND=sim); it must exit 0
#       and, where its lines carry "// prints: TEXT" comments, print exactly
#       those TEXTs, one line each, in order.
#     - Any other {.c} block is a fragment: it is wrapped as the body of
#       "int doc_fragment(void)" after "#include <stdio.h>" and
#       "#include <gpumem.h>", and compiled with -fsyntax-only.  Write elided
#       parts as C comments ("/* ... */").
#   @code (no language), @code{.cpp} and other languages are not checked:
#       use plain @code for log output, shell lines or pseudo-code.
# Runs without doxygen and without a GPU.
srcdir=${GPUMEM_TEST_SRCDIR:-.}
builddir=${GPUMEM_TEST_BUILDDIR:-.}
CC=${CC:-cc}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-docex.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
inc="-I$srcdir/include -I$builddir/include"
lib="$builddir/lib/.libs"
# Extract: one file per block, named after header and line: ex-N, with a
# list of "N header:line" in $tmp/list.
n=0
for h in $(cd "$srcdir/include" && ls gpumem/*.h); do
    awk -v dir="$tmp" -v hdr="$h" -v start="$n" '
    /^ \* @code\{\.c\}[ \t]*$/ { n++; f = dir "/ex-" (start + n) ".c"; printf "" > f; print (start + n) " " hdr ":" NR >> (dir "/list"); inb = 1; next }
    inb && /@endcode/ { inb = 0; close(f); next }
    inb { line = $0; sub(/^ \*( |$)/, "", line); print line >> f }
    END { print start + n > (dir "/count") }' "$srcdir/include/$h"
    n=$(cat "$tmp/count")
done
echo "1..$((n + 1))"
i=0
result() { # status description log
    i=$((i + 1))
    if [ "$1" = 0 ]; then echo "ok $i - $2"; else echo "not ok $i - $2"; sed 's/^/# /' "$3"; fi
}
[ "$n" -ge 10 ]
echo "found $n blocks" >"$tmp/log"
result $? "the headers hold @code{.c} examples ($n)" "$tmp/log"
k=0
while [ "$k" -lt "$n" ]; do
    k=$((k + 1))
    where=$(awk -v k="$k" '$1 == k {print $2}' "$tmp/list")
    src="$tmp/ex-$k.c"
    if grep -q '^int main(' "$src"; then
        sed -n 's|.*// prints: \(.*\)$|\1|p' "$src" >"$tmp/want"
        (   $CC -std=c11 -Wall -Wextra -Werror ${GPUMEM_TEST_CFLAGS:-} $inc "$src" -o "$tmp/ex" \
                ${GPUMEM_TEST_LDFLAGS:-} -L"$lib" -lgpumem &&
            (unset CUDA_DEVICE; HOME="$tmp" GPUMEM_BACKEND=sim LD_LIBRARY_PATH="$lib" "$tmp/ex") >"$tmp/got" &&
            if [ -s "$tmp/want" ]; then
                diff -u "$tmp/want" "$tmp/got"
            fi
        ) >"$tmp/log" 2>&1
        result $? "$where: the program compiles, runs on the simulator and prints what it says" "$tmp/log"
    else
        { printf '#include <stdio.h>\n#include <gpumem.h>\nint doc_fragment(void);\nint doc_fragment(void)\n{\n'
          cat "$src"; printf '}\n'; } >"$tmp/frag.c"
        $CC -std=c11 -Wall -Wextra -Werror -Wno-unused-variable -Wno-return-type ${GPUMEM_TEST_CFLAGS:-} $inc \
            -fsyntax-only "$tmp/frag.c" >"$tmp/log" 2>&1
        result $? "$where: the fragment compiles" "$tmp/log"
    fi
done
