#!/bin/sh
# The README's first program compiles as C and as C++, links, and prints
# what the README says when run as the README says to run it without a GPU;
# its tool section shows every subcommand of the tool.
srcdir=${GPUMEM_TEST_SRCDIR:-.}
builddir=${GPUMEM_TEST_BUILDDIR:-.}
CC=${CC:-cc}
CXX=${CXX:-c++}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-readme.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
echo "1..7"
# The program: from its first line to the closing brace of main.
awk '/^    \/\* first.c/{f=1} f{print} f&&/^    }$/{exit}' "$srcdir/README" | sed 's/^    //' >"$tmp/first.c"
inc="-I$srcdir/include -I$builddir/include"
lib="$builddir/lib/.libs"
if grep -q '^int main' "$tmp/first.c" && tail -n 1 "$tmp/first.c" | grep -qx '}'; then
    echo "ok 1 - the README has the first program"
else
    echo "not ok 1 - no first program found in the README"; sed 's/^/# /' "$tmp/first.c"
fi
if $CC -std=c11 -Wall -Wextra -Werror ${GPUMEM_TEST_CFLAGS:-} $inc \
    "$tmp/first.c" -o "$tmp/first" ${GPUMEM_TEST_LDFLAGS:-} -L"$lib" -lgpumem >"$tmp/log" 2>&1; then
    echo "ok 2 - it compiles as C11 with -Wall -Wextra -Werror"
else
    echo "not ok 2 - it compiles as C11"; sed 's/^/# /' "$tmp/log"
fi
if [ "${GPUMEM_HAVE_CXX:-no}" != yes ]; then
    echo "ok 3 # SKIP no C++ compiler"
elif $CXX -std=c++11 -x c++ -Wall -Wextra -Werror ${GPUMEM_TEST_CFLAGS:-} $inc \
    "$tmp/first.c" -o "$tmp/first-cxx" ${GPUMEM_TEST_LDFLAGS:-} -L"$lib" -lgpumem >"$tmp/log" 2>&1; then
    echo "ok 3 - it compiles as C++11 with -Wall -Wextra -Werror"
else
    echo "not ok 3 - it compiles as C++11"; sed 's/^/# /' "$tmp/log"
fi
# The README shows how to run it without a GPU; run it that way.
if grep -q '^    GPUMEM_BACKEND=sim ./first ' "$srcdir/README"; then
    echo "ok 4 - the README's run line for a machine without a GPU sets GPUMEM_BACKEND=sim"
else
    echo "not ok 4 - the README has no 'GPUMEM_BACKEND=sim ./first' run line"
fi
out=$(GPUMEM_BACKEND=sim LD_LIBRARY_PATH="$lib" "$tmp/first" 2>&1)
if [ "$out" = "out[3] = 18 20 22" ]; then
    echo "ok 5 - GPUMEM_BACKEND=sim ./first prints what the README says"
else
    echo "not ok 5 - it printed: $out"
fi
if [ "${GPUMEM_HAVE_CXX:-no}" != yes ]; then
    echo "ok 6 # SKIP no C++ compiler"
else
    out=$(GPUMEM_BACKEND=sim LD_LIBRARY_PATH="$lib" "$tmp/first-cxx" 2>&1)
    if [ "$out" = "out[3] = 18 20 22" ]; then echo "ok 6 - so does the C++ build"; else echo "not ok 6 - the C++ build printed: $out"; fi
fi
# The tool section: a "    gpumem CMD" line for every subcommand tools/gpumem.c knows.
missing=
for c in $(grep -oE 'strcmp\(cmd, "[a-z]+"\)' "$srcdir/tools/gpumem.c" | sed 's/.*, "//; s/")$//' | sort -u); do
    grep -q "^    gpumem $c\b" "$srcdir/README" || missing="$missing $c"
done
if [ -z "$missing" ]; then
    echo "ok 7 - the README's tool section shows every subcommand"
else
    echo "not ok 7 - the README's tool section lacks:$missing"
fi
