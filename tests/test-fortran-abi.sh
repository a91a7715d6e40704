#!/bin/sh
# The Fortran module against the C headers: an interface for every exported
# function and none else, every constant equal to its C value, every struct
# the size of its C struct; the module's archive defines only module
# procedures (no C ABI of its own); examples/fortran/example prints the
# values it must.
srcdir=${GPUMEM_TEST_SRCDIR:-.}
builddir=${GPUMEM_TEST_BUILDDIR:-.}
CC=${CC:-cc}
n=8
echo "1..$n"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-fortran.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
# The module's text: gpumem.f90 and the hand-written parts it includes.
mod="$tmp/gpumem.f90"
cat "$srcdir/fortran/gpumem.f90" "$srcdir/fortran/gpumem_constants.inc" "$srcdir/fortran/gpumem_c_api1.inc" \
    "$srcdir/fortran/gpumem_c_api2.inc" >"$mod" || exit 1
lib="$builddir/lib/.libs"
i=0
result() { # 0|1, description, log
    i=$((i + 1))
    if [ "$1" = 0 ]; then echo "ok $i - $2"; else echo "not ok $i - $2"; sed 's/^/# /' "$3" | head -40; fi
}
# The README's snippet from examples/fortran/example.f90: every line of it is a line of the example.
. "$srcdir/tests/snippet.sh"
readme_snippet "examples/fortran/example.f90, a(6, 4)" >"$tmp/snippet"
snippet_check "$tmp/snippet" "$srcdir/examples/fortran/example.f90" \
    "the README's Fortran snippet is taken from examples/fortran/example.f90"
if command -v python3 >/dev/null 2>&1; then
    mkdir "$tmp/gen" && python3 "$srcdir/fortran/gen-typed.py" "$tmp/gen" >"$tmp/log" 2>&1 &&
        diff "$srcdir/fortran/gpumem_typed.inc" "$tmp/gen/gpumem_typed.inc" >>"$tmp/log" 2>&1 &&
        diff "$srcdir/fortran/gpumem_generics.inc" "$tmp/gen/gpumem_generics.inc" >>"$tmp/log" 2>&1
    result $? "fortran/gpumem_typed.inc and gpumem_generics.inc are what fortran/gen-typed.py writes" "$tmp/log"
else
    i=$((i + 1)); echo "ok $i # SKIP no python3 to run fortran/gen-typed.py"
fi
if [ "${GPUMEM_HAVE_FORTRAN:-no}" != yes ]; then
    while [ $i -lt $n ]; do i=$((i + 1)); echo "ok $i # SKIP the Fortran module is not built (no Fortran compiler, or --disable-fortran)"; done
    exit 0
fi

# 1. interfaces: the bind(c) names are exactly the GPUMEM_API functions.
grep -hE '^GPUMEM_API' "$srcdir"/include/gpumem/*.h "$builddir/include/gpumem/version.h" |
    sed 's/(.*//' | awk '{print $NF}' | tr -d '*' | sort -u >"$tmp/declared"
sed -n "s/.*bind(c, name='\(gpumem_[a-z0-9_]*\)').*/\1/p" "$mod" | sort >"$tmp/bound"
{ comm -3 "$tmp/declared" "$tmp/bound"; sort "$tmp/bound" | uniq -d | sed 's/^/twice: /'; } >"$tmp/diff"
[ -s "$tmp/diff" ]; result $((1 - $?)) "the module has one interface for each of the $(wc -l <"$tmp/declared") C functions" "$tmp/diff"

# 2. constants: a C file asserts each Fortran parameter's value against the headers.
{
    echo '#include <gpumem.h>'
    sed -n 's/^ *integer(c_int), parameter :: \(GPUMEM_[A-Z0-9_]*\) = \(-\{0,1\}[0-9]*\)$/_Static_assert((long long)(\1) == \2LL, "\1");/p' "$mod"
    echo '_Static_assert(GPUMEM_SLICE_DEFAULT == INT64_MIN, "GPUMEM_SLICE_DEFAULT");'
} >"$tmp/const.c"
grep -hoE '\bGPUMEM_[A-Z0-9_]+ = -?[0-9]+' "$srcdir"/include/gpumem/*.h | awk '{print $1}' | sort -u >"$tmp/enums"
sed -n 's/^ *integer(c_int), parameter :: \(GPUMEM_[A-Z0-9_]*\) = .*/\1/p' "$mod" | sort -u >"$tmp/params"
comm -23 "$tmp/enums" "$tmp/params" >"$tmp/missing"
if $CC -std=c11 -I"$srcdir/include" -I"$builddir/include" -c "$tmp/const.c" -o "$tmp/const.o" >"$tmp/log" 2>&1 &&
    [ ! -s "$tmp/missing" ]; then
    result 0 "$(grep -c _Static_assert "$tmp/const.c") constants equal their C values; every enum value is there" "$tmp/log"
else
    cat "$tmp/missing" >>"$tmp/log"; result 1 "the constants equal their C values, every enum value is there" "$tmp/log"
fi

# 3. structs: the sizes Fortran's c_sizeof gives are C's sizeof.
types="gpumem_slice gpumem_pool_stats_t gpumem_field gpumem_cuda_array_interface gpumem_occupancy_record
gpumem_pointer_info gpumem_ipc_handle gpumem_memory_usage gpumem_memory_report_t gpumem_memory_pool_report
gpumem_oom_info gpumem_pool_props"
{
    echo 'program sizes'; echo '  use, intrinsic :: iso_c_binding'; echo '  use gpumem'; echo '  implicit none'
    for t in $types; do echo "  type($t) :: v_$t"; done
    for t in $types; do echo "  print '(a, 1x, i0)', '$t', c_sizeof(v_$t)"; done
    echo 'end program sizes'
} >"$tmp/sizes.f90"
{
    echo '#include <stdio.h>'; echo '#include <gpumem.h>'; echo 'int main(void) {'
    for t in $types; do
        case $t in gpumem_pool_stats_t) c='struct gpumem_pool_stats' ;; gpumem_memory_report_t) c='struct gpumem_memory_report' ;;
            gpumem_memory_*|gpumem_oom_info|gpumem_pool_props) c="struct $t" ;; *) c=$t ;; esac
        echo "  printf(\"%s %zu\\n\", \"$t\", sizeof($c));"
    done
    echo '  return 0; }'
} >"$tmp/sizes.c"
if ${FC:-gfortran} -I"$builddir/fortran" "$tmp/sizes.f90" -o "$tmp/sizes-f" >"$tmp/log" 2>&1 &&
    $CC -I"$srcdir/include" -I"$builddir/include" "$tmp/sizes.c" -o "$tmp/sizes-c" >>"$tmp/log" 2>&1 &&
    "$tmp/sizes-f" >"$tmp/f.out" && "$tmp/sizes-c" >"$tmp/c.out"; then
    diff "$tmp/c.out" "$tmp/f.out" >"$tmp/log" 2>&1
    result $? "the $(echo $types | wc -w) public structs have their C sizes" "$tmp/log"
else
    result 1 "the struct size programs build and run" "$tmp/log"
fi

# 4. the archive defines module procedures only: the C ABI stays libgpumem's.
nm -g --defined-only "$builddir/fortran/libgpumem_fortran.a" 2>"$tmp/log" |
    awk 'NF == 3 && $3 !~ /^__gpumem_MOD_/ {print}' >>"$tmp/log"
count=$(nm -g --defined-only "$builddir/fortran/libgpumem_fortran.a" 2>/dev/null | grep -c '__gpumem_MOD_')
[ ! -s "$tmp/log" ] && [ "$count" -gt 40 ]
result $? "libgpumem_fortran.a defines only __gpumem_MOD_* symbols ($count)" "$tmp/log"

# 5-6. the example, on the simulator or the GPU the harness chose.
exe="$builddir/examples/fortran/example"
LD_LIBRARY_PATH="$lib" "$exe" >"$tmp/out" 2>&1
rc=$?
printf 'out(1, :) =   0.   1.   0.   7.   0.  13.   0.  19.\nout(2, :) =   0.   3.   0.   9.   0.  15.   0.  21.\nout(3, :) =   0.   5.   0.  11.   0.  17.   0.  23.\n' >"$tmp/want"
head -n 3 "$tmp/out" | cmp -s - "$tmp/want" && [ $rc = 0 ]
result $? "examples/fortran: a(1:6:2, :) copied out into out(:, 2:8:2)" "$tmp/out"
sed -n 4p "$tmp/out" | grep -qx 'pool: 1 miss, 2 hits' && [ $rc = 0 ]
result $? "examples/fortran: the device pool served three arrays with one block" "$tmp/out"
