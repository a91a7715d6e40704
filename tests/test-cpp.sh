#!/bin/sh
# include/gpumem.hpp: the C++ examples and tests/test-hpp.cpp build as C++17
# and C++20 with -Wall -Wextra -pedantic -Werror against the build tree, and
# run on the simulator with the values they must print; they also compile
# with clang++ when it is installed, and so do shapes made of std::size_t
# (containers and braced lists, which narrow).  A translation unit that only
# includes the header defines no symbol (no state of its own); the member
# whose arguments read the wrong way round (copy_to_device) is deprecated.
srcdir=${GPUMEM_TEST_SRCDIR:-.}
builddir=${GPUMEM_TEST_BUILDDIR:-.}
CXX=${CXX:-c++}
echo "1..14"
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
. "$srcdir/tests/snippet.sh"
readme_snippet "From examples/cpp/first.cpp:" >"$tmp/snippet"
snippet_check "$tmp/snippet" "$srcdir/examples/cpp/first.cpp" \
    "the README's C++ snippet is taken from examples/cpp/first.cpp"
if [ "${GPUMEM_HAVE_CXX:-no}" != yes ]; then
    while [ $i -lt 14 ]; do i=$((i + 1)); echo "ok $i # SKIP no C++ compiler"; done
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
# Shapes from std::size_t: containers, braced lists of size_t, and lists that mix
# size_t with int compile without narrowing errors, under $CXX and clang++, with
# the warnings a careful build turns on.
cat >"$tmp/sizes.cpp" <<'CPP'
#include <gpumem.hpp>
#include <array>
#include <vector>
int gpumem_sizes(const gpumem::context &ctx, std::size_t n, std::size_t m);
int gpumem_sizes(const gpumem::context &ctx, std::size_t n, std::size_t m)
{
    std::vector<std::size_t> v{n, m};
    std::array<std::size_t, 2> a{{n, m}};
    gpumem::array d1 = gpumem::device_array<float>(ctx, gpumem::dims(v));
    gpumem::array d2 = gpumem::device_array<float>(ctx, gpumem::dims(a));
    gpumem::array d3 = gpumem::device_array<float>(ctx, {n, m});
    gpumem::array d4 = gpumem::device_array<float>(ctx, {n, 3});
    gpumem::array h = gpumem::host_array({m, n}, gpumem::dtype::of<double>(), 'F');
    gpumem::array r = d1.reshape({m, n});
    gpumem::array row = d3.slice({gpumem::index(1), {1, -1}});
    return d2.get<float>({n - 1, m - 1}) > 0 ? d4.ndim() + h.ndim() + r.ndim() + row.ndim() : 0;
}
CPP
: >"$tmp/log"
r=0
for cxx in "$CXX" clang++; do
    command -v "$cxx" >/dev/null 2>&1 || { echo "($cxx: not installed)" >>"$tmp/log"; continue; }
    echo "== $cxx" >>"$tmp/log"
    $cxx -std=c++17 -Wall -Wextra -pedantic -Werror -Wconversion -Wsign-conversion $inc -c "$tmp/sizes.cpp" \
        -o "$tmp/sizes.o" >>"$tmp/log" 2>&1 || r=1
done
result $r "shapes from size_t containers and braced lists compile under $CXX and clang++ -std=c++17 -Werror" "$tmp/log"
if command -v clang++ >/dev/null 2>&1; then
    : >"$tmp/log"
    r=0
    for prog in examples/cpp/first examples/cpp/pool tests/test-hpp; do
        for std in c++17 c++20; do
            clang++ -std=$std -Wall -Wextra -pedantic -Werror $inc -fsyntax-only "$srcdir/$prog.cpp" >>"$tmp/log" 2>&1 ||
                { echo "($prog as $std)" >>"$tmp/log"; r=1; }
        done
    done
    result $r "the examples and tests/test-hpp.cpp compile under clang++ -std=c++17 and c++20 -Werror" "$tmp/log"
else
    i=$((i + 1)); echo "ok $i # SKIP no clang++"
fi
# gpumem::array::copy_to_device(src) copies src into *this, which reads the other way round: deprecated,
# with copy_from_host named in the warning.
printf '#include <gpumem.hpp>\nvoid f(const gpumem::array &d, const gpumem::array &h);\nvoid f(const gpumem::array &d, const gpumem::array &h) { d.copy_to_device(h); }\n' >"$tmp/dep.cpp"
if $CXX -std=c++17 -Werror=deprecated-declarations $inc -c "$tmp/dep.cpp" -o "$tmp/dep.o" >"$tmp/log" 2>&1; then
    result 1 "gpumem::array::copy_to_device is deprecated" "$tmp/log"
else
    grep -q 'copy_from_host' "$tmp/log"; result $? "gpumem::array::copy_to_device is deprecated, pointing at copy_from_host" "$tmp/log"
fi
