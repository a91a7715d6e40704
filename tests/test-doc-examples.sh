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
#       those TEXTs, one line each, in order.  It is then run once for each
#       of its first driver calls with that call failing
#       (GPUMEM_SIM_FAIL=k): it must either print the same and exit 0 (a
#       failure the library absorbs), or print nothing on standard output,
#       exit 1 and say "gpumem: ..." on standard error with the first
#       failure's message (not a later call's "is NULL"): an example checks
#       every status it depends on and initializes its handles to NULL.
#       The first 40 calls (GPUMEM_DOC_EXAMPLES_CALLS=N for more).
#     - Any other {.c} block is a fragment: it is wrapped as the body of
#       "int doc_fragment(void)" after "#include <stdio.h>" and
#       "#include <gpumem.h>", and compiled with -fsyntax-only.  Write elided
#       parts as C comments ("/* ... */").
#   @code (no language), @code{.cpp} and other languages are not checked:
#       use plain @code for log output, shell lines or pseudo-code.
# The README's first program is held to the same failure sweep.
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
# The README's first program, as tests/test-readme.sh extracts it.
awk '/^    \/\* first.c/{f=1} f{print} f&&/^    }$/{exit}' "$srcdir/README" | sed 's/^    //' >"$tmp/readme.c"
sed -n 's|.*/\* \(18 20 22\) \*/$|out[3] = \1|p' "$tmp/readme.c" >"$tmp/readme-want"
programs=$(cat "$tmp"/ex-*.c | grep -c '^int main(')
echo "1..$((n + programs + 2))"
i=0
result() { # status description log
    i=$((i + 1))
    if [ "$1" = 0 ]; then echo "ok $i - $2"; else echo "not ok $i - $2"; sed 's/^/# /' "$3"; fi
}
[ "$n" -ge 10 ]
echo "found $n blocks" >"$tmp/log"
result $? "the headers hold @code{.c} examples ($n)" "$tmp/log"
# sweep WHERE PROGRAM: one result, the program under each of its first
# $calls driver calls failing (the expected output in $tmp/want).
calls=${GPUMEM_DOC_EXAMPLES_CALLS:-40}
sweep() {
    : >"$tmp/sweep"
    if [ ! -x "$2" ]; then
        echo "not built" >"$tmp/sweep"
    else
        f=0
        while [ "$f" -lt "$calls" ]; do
            f=$((f + 1))
            (unset CUDA_DEVICE; HOME="$tmp" GPUMEM_BACKEND=sim GPUMEM_SIM_FAIL=$f LD_LIBRARY_PATH="$lib" "$2") \
                >"$tmp/fout" 2>"$tmp/ferr"
            rc=$?
            if [ "$rc" = 0 ]; then
                [ -s "$tmp/want" ] && ! cmp -s "$tmp/want" "$tmp/fout" &&
                    echo "call $f failing: exit 0 but printed: $(cat "$tmp/fout")" >>"$tmp/sweep"
            elif [ "$rc" != 1 ]; then
                echo "call $f failing: exit status $rc: $(cat "$tmp/ferr")" >>"$tmp/sweep"
            elif [ -s "$tmp/fout" ]; then
                echo "call $f failing: exit 1 but printed: $(cat "$tmp/fout")" >>"$tmp/sweep"
            elif ! grep -q '^gpumem: ' "$tmp/ferr" || grep -q 'is NULL' "$tmp/ferr"; then
                echo "call $f failing: the message is not the failure's: $(cat "$tmp/ferr")" >>"$tmp/sweep"
            fi
        done
    fi
    [ ! -s "$tmp/sweep" ]
    result $? "$1: with each of its first $calls driver calls failing, it fails cleanly or absorbs it" "$tmp/sweep"
}
rm -f "$tmp/ex"
$CC -std=c11 -Wall -Wextra -Werror ${GPUMEM_TEST_CFLAGS:-} $inc "$tmp/readme.c" -o "$tmp/readme" \
    ${GPUMEM_TEST_LDFLAGS:-} -L"$lib" -lgpumem >"$tmp/log" 2>&1
cp "$tmp/readme-want" "$tmp/want"
sweep "README's first program" "$tmp/readme"
k=0
while [ "$k" -lt "$n" ]; do
    k=$((k + 1))
    where=$(awk -v k="$k" '$1 == k {print $2}' "$tmp/list")
    src="$tmp/ex-$k.c"
    if grep -q '^int main(' "$src"; then
        sed -n 's|.*// prints: \(.*\)$|\1|p' "$src" >"$tmp/want"
        rm -f "$tmp/ex"
        (   $CC -std=c11 -Wall -Wextra -Werror ${GPUMEM_TEST_CFLAGS:-} $inc "$src" -o "$tmp/ex" \
                ${GPUMEM_TEST_LDFLAGS:-} -L"$lib" -lgpumem &&
            (unset CUDA_DEVICE; HOME="$tmp" GPUMEM_BACKEND=sim LD_LIBRARY_PATH="$lib" "$tmp/ex") >"$tmp/got" &&
            if [ -s "$tmp/want" ]; then
                diff -u "$tmp/want" "$tmp/got"
            fi
        ) >"$tmp/log" 2>&1
        result $? "$where: the program compiles, runs on the simulator and prints what it says" "$tmp/log"
        sweep "$where" "$tmp/ex"
    else
        { printf '#include <stdio.h>\n#include <gpumem.h>\nint doc_fragment(void);\nint doc_fragment(void)\n{\n'
          cat "$src"; printf '}\n'; } >"$tmp/frag.c"
        $CC -std=c11 -Wall -Wextra -Werror -Wno-unused-variable -Wno-return-type ${GPUMEM_TEST_CFLAGS:-} $inc \
            -fsyntax-only "$tmp/frag.c" >"$tmp/log" 2>&1
        result $? "$where: the fragment compiles" "$tmp/log"
    fi
done
