#!/bin/sh
# include/gpumem.hpp: the C++ examples and tests/test-hpp.cpp build as C++17
# and C++20 with -Wall -Wextra -pedantic -Werror against the build tree, and
# run on the simulator with the values they must print.  A translation unit
# that only includes the header defines no symbol (no state of its own).
srcdir=${GPUMEM_TEST_SRCDIR:-.}
builddir=${GPUMEM_TEST_BUILDDIR:-.}
CXX=${CXX:-c++}
echo "1..11"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-cpp.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
lib="$builddir/lib/.libs"
inc="-I$srcdir/include -I$builddir/include -I$srcdir/tests"
i=0
result() { # ok?, description, log
    i=$((i + 1))
    if [ "$1" = 0 ]; then echo "ok $i - $2"; else echo "not ok $i - $2"; sed 's/^/# /' "$3"; fi
}
# The README's snippet from examples/cpp/first.cpp: every line of it is a line of the example.
snippet_check() { # example file, README marker, description
    awk -v m="$2" 'index($0, m) {f = 1; next} f && /^    / {print; g = 1; next} f && g && !/^$/ {exit}' \
        "$srcdir/README" | sed 's/^ *//' >"$tmp/snippet"
    : >"$tmp/missing"
    while IFS= read -r line; do
        sed 's/^ *//' "$1" | grep -qxF -- "$line" || printf '%s\n' "$line" >>"$tmp/missing"
    done <"$tmp/snippet"
    if [ -s "$tmp/snippet" ] && [ ! -s "$tmp/missing" ]; then result 0 "$3" "$tmp/missing"
    else echo "(snippet: $(wc -l <"$tmp/snippet") lines; not in the example:)" >"$tmp/log"; cat "$tmp/missing" >>"$tmp/log"; result 1 "$3" "$tmp/log"; fi
}
snippet_check "$srcdir/examples/cpp/first.cpp" "From examples/cpp/first.cpp:" \
    "the README's C++ snippet is taken from examples/cpp/first.cpp"
if [ "${GPUMEM_HAVE_CXX:-no}" != yes ]; then
    while [ $i -lt 11 ]; do i=$((i + 1)); echo "ok $i # SKIP no C++ compiler"; done
    exit 0
fi
for std in c++17 c++20; do
    for prog in examples/cpp/first examples/cpp/pool tests/test-hpp; do
        name=$(basename "$prog")
        exe="$tmp/$name-$std"
        if $CXX -std=$std -Wall -Wextra -pedantic -Werror ${GPUMEM_TEST_CFLAGS:-} $inc "$srcdir/$prog.cpp" \
            -o "$exe" ${GPUMEM_TEST_LDFLAGS:-} -L"$lib" -lgpumem >"$tmp/log" 2>&1; then
            LD_LIBRARY_PATH="$lib" "$exe" >"$tmp/out" 2>&1
            rc=$?
        else
            rc=compile; cp "$tmp/log" "$tmp/out"
        fi
        case $name in
        first) printf 'out[3] = 18 20 22\n' >"$tmp/want" ;;
        pool) printf 'sum = 374250\ndevice pool: 1 misses, 2 hits\npinned vector from the pool: yes\n' >"$tmp/want" ;;
        test-hpp) grep -v '^not ok' "$tmp/out" | grep -v '^#' >"$tmp/want" ;;
        esac
        if [ "$rc" = 0 ] && head -n 1 "$tmp/out" | grep -q '^1\.\.0 # SKIP'; then
            i=$((i + 1)); echo "ok $i # SKIP $prog as $std: $(head -n 1 "$tmp/out" | sed 's/.*# SKIP //')"; continue
        fi
        good=1
        [ "$rc" = 0 ] && cmp -s "$tmp/out" "$tmp/want" && good=0
        [ $name = test-hpp ] && ! grep -q '^ok ' "$tmp/out" && good=1
        result $good "$prog.cpp as $std -pedantic -Werror builds and prints the right values" "$tmp/out"
    done
done
# The same with the extra warnings a careful downstream build turns on.
if $CXX -std=c++17 -Wall -Wextra -pedantic -Werror -Wconversion -Wsign-conversion -Wold-style-cast \
    -Wnon-virtual-dtor -Woverloaded-virtual $inc -x c++ -c - -o "$tmp/w.o" >"$tmp/log" 2>&1 <<'CPP'
#include <gpumem.hpp>
int gpumem_hpp_warnings(const gpumem::array &a);
int gpumem_hpp_warnings(const gpumem::array &a) { return a.ndim() + static_cast<int>(a.shape().product()); }
CPP
then result 0 "the header is clean under -Wconversion -Wsign-conversion -Wold-style-cast" "$tmp/log"
else result 1 "the header is clean under -Wconversion -Wsign-conversion -Wold-style-cast" "$tmp/log"; fi
for std in c++17 c++20; do
    printf '#include <gpumem.hpp>\n' >"$tmp/only.cpp"
    if $CXX -std=$std $inc -c "$tmp/only.cpp" -o "$tmp/only.o" >"$tmp/log" 2>&1; then
        # Strong global symbols only: a standard header may leave weak
        # (COMDAT) instantiations or local symbols behind, which are no one's ABI.
        nm --defined-only "$tmp/only.o" 2>&1 | awk '$2 ~ /^[TDBRG]$/' >"$tmp/syms"
        if [ -s "$tmp/syms" ]; then result 1 "including gpumem.hpp ($std) defines no strong symbol" "$tmp/syms"
        else result 0 "including gpumem.hpp ($std) defines no strong symbol" "$tmp/syms"; fi
    else
        result 1 "including gpumem.hpp ($std) compiles" "$tmp/log"
    fi
done
# A translation unit that uses the wrappers defines only weak (inline) symbols.
if $CXX -std=c++17 $inc -c "$srcdir/examples/cpp/first.cpp" -o "$tmp/first.o" >"$tmp/log" 2>&1; then
    nm --defined-only "$tmp/first.o" | awk '$2 ~ /^[TDBRCGS]$/ && $3 != "main"' >"$tmp/strong"
    if [ -s "$tmp/strong" ]; then result 1 "first.cpp's object defines only main and inline (weak) symbols" "$tmp/strong"
    else result 0 "first.cpp's object defines only main and inline (weak) symbols" "$tmp/strong"; fi
else
    result 1 "first.cpp compiles to an object" "$tmp/log"
fi
