#!/bin/sh
# The C++ and Fortran examples build through pkg-config alone against a
# staged `make install DESTDIR=...`, the way a downstream project builds
# them, and run (on the simulator unless GPUMEM_BACKEND says otherwise).
srcdir=${GPUMEM_TEST_SRCDIR:-.}
builddir=${GPUMEM_TEST_BUILDDIR:-.}
if [ -n "${GPUMEM_TEST_SANITIZER:-}" ]; then
    # A downstream build links the library without the sanitizer's runtime,
    # which a sanitized library needs first: this test is for normal builds.
    echo "1..0 # SKIP a $GPUMEM_TEST_SANITIZER build: downstream programs are built without its runtime"
    exit 0
fi
echo "1..7"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-install.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
i=0
result() { # 0|1, description, log
    i=$((i + 1))
    if [ "$1" = 0 ]; then echo "ok $i - $2"; else echo "not ok $i - $2"; sed 's/^/# /' "$3" | tail -40; fi
}
skip() { i=$((i + 1)); echo "ok $i # SKIP $1"; }
stage="$tmp/stage"
# A make of its own: not the jobserver of the `make check` that runs this test.
if (unset MAKEFLAGS MFLAGS MAKELEVEL; ${MAKE:-make} -C "$builddir" install DESTDIR="$stage") >"$tmp/log" 2>&1; then
    result 0 "make install DESTDIR=<stage>" "$tmp/log"
else
    result 1 "make install DESTDIR=<stage>" "$tmp/log"
    while [ $i -lt 7 ]; do skip "nothing installed"; done
    exit 0
fi
# The configured directories (make check sets them; gpumem.pc has them only
# relative to where it is).
libdir=${GM_LIBDIR:?make check sets GM_LIBDIR} includedir=${GM_INCLUDEDIR:?make check sets GM_INCLUDEDIR}
pc="PKG_CONFIG_PATH=$stage$libdir/pkgconfig PKG_CONFIG_SYSROOT_DIR=$stage"
run() { LD_LIBRARY_PATH="$stage$libdir" "$@"; }

if [ "${GPUMEM_HAVE_CXX:-no}" = yes ]; then
    for std in c++17 c++20; do
        rm -rf "$tmp/cpp"; mkdir "$tmp/cpp"
        cp "$srcdir/examples/cpp/Makefile" "$srcdir/examples/cpp/first.cpp" "$srcdir/examples/cpp/pool.cpp" "$tmp/cpp/"
        if env $pc ${MAKE:-make} -C "$tmp/cpp" CXX="${CXX:-c++}" CXXSTD=$std \
            CXXFLAGS="-O2 -Wall -Wextra -pedantic -Werror" >"$tmp/log" 2>&1 &&
            run "$tmp/cpp/first" >"$tmp/out" 2>&1 && run "$tmp/cpp/pool" >>"$tmp/out" 2>&1 &&
            printf 'out[3] = 18 20 22\nsum = 374250\ndevice pool: 1 misses, 2 hits\npinned vector from the pool: yes\n' |
            cmp -s - "$tmp/out"; then
            result 0 "examples/cpp as $std, through pkg-config gpumem, print their values" "$tmp/out"
        else
            cat "$tmp/out" >>"$tmp/log" 2>/dev/null; result 1 "examples/cpp as $std through pkg-config" "$tmp/log"
        fi
    done
    if [ -f "$stage$includedir/gpumem.hpp" ]; then
        result 0 "gpumem.hpp is installed beside gpumem.h" /dev/null
    else result 1 "gpumem.hpp is installed beside gpumem.h" /dev/null; fi
else
    skip "no C++ compiler"; skip "no C++ compiler"; skip "no C++ compiler"
fi

if [ "${GPUMEM_HAVE_FORTRAN:-no}" = yes ]; then
    fmoddir=$(env $pc pkg-config --variable=fmoddir gpumem-fortran 2>"$tmp/log")
    modver=$(gzip -dc "$fmoddir/gpumem.mod" 2>/dev/null | sed -n "1s/^GFORTRAN module version '\([0-9]*\)'.*/\1/p")
    # gpumem-fortran.pc may name it from its own directory (../..): compare
    # real paths.
    real_fmoddir=$(cd "$fmoddir" 2>/dev/null && pwd -P) real_libdir=$(cd "$stage$libdir" && pwd -P)
    case $real_fmoddir in
    "$real_libdir"/fortran/*) [ -f "$fmoddir/gpumem.mod" ] ;;
    *) false ;;
    esac
    rc=$?
    if [ $rc = 0 ] && [ -n "$modver" ]; then
        case $fmoddir in */gfortran-mod-"$modver") ;; *) rc=1 ;; esac
    fi
    echo "fmoddir: $fmoddir, module version: ${modver:-not gfortran}" >>"$tmp/log"
    result $rc "gpumem.mod is in \$libdir/fortran/<compiler-mod-dir>, named by pkg-config --variable=fmoddir" "$tmp/log"
    rm -rf "$tmp/f"; mkdir "$tmp/f"
    cp "$srcdir/examples/fortran/Makefile" "$srcdir/examples/fortran/example.f90" "$tmp/f/"
    if env $pc ${MAKE:-make} -C "$tmp/f" FC="${FC:-gfortran}" FCFLAGS="-O2 -Wall -Wextra -Werror" >"$tmp/log" 2>&1 &&
        run "$tmp/f/example" >"$tmp/out" 2>&1 && tail -n 1 "$tmp/out" | grep -qx 'pool: 1 miss, 2 hits' &&
        sed -n 1p "$tmp/out" | grep -qx 'out(1, :) =   0.   1.   0.   7.   0.  13.   0.  19.'; then
        result 0 "examples/fortran, through pkg-config gpumem-fortran, prints its values" "$tmp/out"
    else
        cat "$tmp/out" >>"$tmp/log" 2>/dev/null; result 1 "examples/fortran through pkg-config" "$tmp/log"
    fi
    env $pc pkg-config --libs gpumem-fortran >"$tmp/libs" 2>&1
    grep -q -- '-lgpumem_fortran.*-lgpumem' "$tmp/libs"
    result $? "pkg-config --libs gpumem-fortran names the module's archive before libgpumem" "$tmp/libs"
else
    skip "the Fortran module is not built"; skip "the Fortran module is not built"; skip "the Fortran module is not built"
fi
