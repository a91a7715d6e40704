#!/bin/sh
# The README's first program compiles, links and prints what it says.
srcdir=${GPUMEM_TEST_SRCDIR:-.}
builddir=${GPUMEM_TEST_BUILDDIR:-.}
CC=${CC:-cc}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-readme.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
echo "1..2"
awk '/^    \/\* first.c/{f=1} f&&/^Every function/{exit} f' "$srcdir/README" | sed 's/^    //' >"$tmp/first.c"
lib="$builddir/lib/.libs"
if $CC -std=c11 -Wall -Wextra -Werror ${GPUMEM_TEST_CFLAGS:-} -I"$srcdir/include" -I"$builddir/include" \
    "$tmp/first.c" -o "$tmp/first" ${GPUMEM_TEST_LDFLAGS:-} -L"$lib" -lgpumem >"$tmp/log" 2>&1; then
    echo "ok 1 - the README's first program compiles with -Wall -Wextra -Werror"
else
    echo "not ok 1 - the README's first program compiles"; sed 's/^/# /' "$tmp/log"
fi
out=$(LD_LIBRARY_PATH="$lib" "$tmp/first" 2>&1)
if [ "$out" = "out[3] = 18 20 22" ]; then
    echo "ok 2 - it prints what the README says"
else
    echo "not ok 2 - it printed: $out"
fi
