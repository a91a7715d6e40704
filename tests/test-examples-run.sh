#!/bin/sh
# examples/Makefile's `make run` (and examples/cpp's and examples/fortran's),
# as a user runs it after building the
# examples against a copy of the library found through pkg-config (here a
# .pc file naming the build tree): it runs hello and halo on the GPU when
# there is one, and on a machine without one says so and runs them on the
# simulator instead of failing (issue 26); a GPUMEM_BACKEND the user set is
# obeyed as it is, so GPUMEM_BACKEND=cuda without a GPU still fails.  The
# programs find the library without LD_LIBRARY_PATH (an rpath from
# pkg-config's -L).
srcdir=${GPUMEM_TEST_SRCDIR:-.}
builddir=${GPUMEM_TEST_BUILDDIR:-.}
CC=${CC:-cc}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-examples-run.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
echo "1..6"
mkdir "$tmp/pc" "$tmp/ex"
cat >"$tmp/pc/gpumem.pc" <<PC
Name: gpumem
Description: libgpumem, the build tree
Version: 1
Cflags: -I$srcdir/include -I$builddir/include
Libs: -L$builddir/lib/.libs -lgpumem
PC
cat >"$tmp/pc/gpumem-fortran.pc" <<PC
Name: gpumem-fortran
Description: the Fortran module of libgpumem, the build tree
Version: 1
Requires: gpumem
Cflags: -I$builddir/fortran
Libs: -L$builddir/fortran -lgpumem_fortran
PC
cp "$srcdir/examples/Makefile" "$srcdir/examples/hello.c" "$srcdir/examples/halo.c" "$srcdir/examples/pool-ipc.c" "$tmp/ex/"
mkdir "$tmp/ex/cpp" "$tmp/ex/fortran"
cp "$srcdir/examples/cpp/Makefile" "$srcdir/examples/cpp/first.cpp" "$srcdir/examples/cpp/pool.cpp" "$tmp/ex/cpp/"
cp "$srcdir/examples/fortran/Makefile" "$srcdir/examples/fortran/example.f90" "$tmp/ex/fortran/"
chmod -R u+w "$tmp/ex"
# The user's environment: no LD_LIBRARY_PATH, and no GPUMEM_BACKEND unless
# the case sets one; the test suite's backend says what the machine has.
suite_backend=${GPUMEM_BACKEND:-sim}
# A sanitizer build's library needs its programs built with the same flags.
san=
[ -n "${GPUMEM_TEST_SANITIZER:-}" ] && san=yes
runmake() { # GPUMEM_BACKEND value ("" for unset), log [, directory under examples/, compiler setting]
    b=; [ -n "$1" ] && b="GPUMEM_BACKEND=$1"
    if [ -n "$san" ]; then
        env -u LD_LIBRARY_PATH -u MAKEFLAGS -u MAKELEVEL -u GPUMEM_BACKEND $b \
            make -C "$tmp/ex/${3:-}" run PKG_CONFIG_PATH="$tmp/pc" "${4:-CC=$CC}" CFLAGS="${GPUMEM_TEST_CFLAGS:-}" \
            CXXFLAGS="-std=c++17 ${GPUMEM_TEST_CFLAGS:-}" FCFLAGS="${GPUMEM_TEST_CFLAGS:-}" \
            LDFLAGS="${GPUMEM_TEST_LDFLAGS:-}" >"$2" 2>&1
    else
        env -u LD_LIBRARY_PATH -u MAKEFLAGS -u MAKELEVEL -u GPUMEM_BACKEND $b \
            make -C "$tmp/ex/${3:-}" run PKG_CONFIG_PATH="$tmp/pc" "${4:-CC=$CC}" >"$2" 2>&1
    fi
}

runmake "" "$tmp/auto.log"; r=$?
if [ "$suite_backend" = sim ]; then
    # No GPU here (CI): the note, the reason, and both programs on the simulator.
    [ $r = 0 ] && grep -q '^make run: no usable GPU here (above): running on the simulator, GPUMEM_BACKEND=sim$' "$tmp/auto.log" &&
        grep -q 'gpumem_context_create_default: GPUMEM_ERROR_\(DRIVER_NOT_FOUND\|NO_DEVICE\)' "$tmp/auto.log" &&
        grep -q '^backend: *sim$' "$tmp/auto.log" && grep -q 'steps: .*host reference.*: ok$' "$tmp/auto.log" &&
        grep -q "^the parent read the child's bytes: ok$" "$tmp/auto.log"
    r2=$?
    what="without a GPU, make run says so and runs hello and halo on the simulator"
    if [ $r2 != 0 ] && [ $r = 0 ] && grep -q '^backend: *cuda$' "$tmp/auto.log"; then
        r2=0; what="make run found a GPU here and ran on it"
    fi
else
    [ $r = 0 ] && grep -q '^backend: *cuda$' "$tmp/auto.log" && ! grep -q 'simulator' "$tmp/auto.log"
    r2=$?
    what="with a GPU, make run runs hello and halo on it"
fi
if [ $r2 = 0 ]; then echo "ok 1 - $what"; else echo "not ok 1 - $what (make exit $r)"; sed 's/^/# /' "$tmp/auto.log"; fi

runmake sim "$tmp/sim.log"; r=$?
if [ $r = 0 ] && grep -q '^backend: *sim$' "$tmp/sim.log" && ! grep -q 'no usable GPU' "$tmp/sim.log"; then
    echo "ok 2 - GPUMEM_BACKEND=sim make run runs on the simulator without a note"
else echo "not ok 2 - GPUMEM_BACKEND=sim make run (exit $r)"; sed 's/^/# /' "$tmp/sim.log"; fi

if [ "$suite_backend" = sim ] && ! grep -q '^backend: *cuda$' "$tmp/auto.log"; then
    runmake cuda "$tmp/cuda.log"; r=$?
    if [ $r != 0 ] && ! grep -q 'simulator, GPUMEM_BACKEND=sim' "$tmp/cuda.log" && ! grep -q '^backend: *sim$' "$tmp/cuda.log"; then
        echo "ok 3 - GPUMEM_BACKEND=cuda make run without a GPU fails: the user's choice is not replaced"
    else echo "not ok 3 - GPUMEM_BACKEND=cuda make run without a GPU (exit $r)"; sed 's/^/# /' "$tmp/cuda.log"; fi
else
    echo "ok 3 # SKIP there is a GPU: GPUMEM_BACKEND=cuda make run cannot fail for the want of one"
fi

out=$(env -u LD_LIBRARY_PATH GPUMEM_BACKEND=sim "$tmp/ex/hello" 2>&1)
if printf '%s\n' "$out" | grep -q '^backend: *sim$' && readelf -d "$tmp/ex/hello" | grep -q "R.*PATH.*$builddir/lib/.libs"; then
    echo "ok 4 - hello finds the library through its rpath, without LD_LIBRARY_PATH"
else echo "not ok 4 - hello without LD_LIBRARY_PATH: $out"; fi

# examples/cpp and examples/fortran: the same without a GPU (on the GPU machine, on it).
note='^make run: no usable GPU here (above): running on the simulator, GPUMEM_BACKEND=sim$'
if [ "${GPUMEM_HAVE_CXX:-no}" != yes ]; then
    echo "ok 5 # SKIP no C++ compiler"
else
    runmake "" "$tmp/cpp.log" cpp "CXX=${CXX:-c++}"; r=$?
    if [ $r = 0 ] && grep -q '^out\[3\] = 18 20 22$' "$tmp/cpp.log" && grep -q '^pinned vector from the pool: yes$' "$tmp/cpp.log" &&
        { [ "$suite_backend" != sim ] || grep -q "$note" "$tmp/cpp.log" || ! grep -q 'create_default: GPUMEM_ERROR' "$tmp/cpp.log"; }; then
        echo "ok 5 - examples/cpp: make run runs first and pool$(grep -q "$note" "$tmp/cpp.log" && echo ' on the simulator, saying so')"
    else echo "not ok 5 - examples/cpp: make run (exit $r)"; sed 's/^/# /' "$tmp/cpp.log"; fi
fi
if [ "${GPUMEM_HAVE_FORTRAN:-no}" != yes ]; then
    echo "ok 6 # SKIP the Fortran module is not built"
else
    # libgfortran's formatted write hands Fortran strings, which have no
    # NUL, to strndup, whose interceptor under strict_string_checks reads
    # past them: a report in libgfortran, not in the example or the library
    if [ -n "$san" ]; then
        ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}intercept_strndup=0" runmake "" "$tmp/f.log" fortran "FC=${FC:-gfortran}"
    else
        runmake "" "$tmp/f.log" fortran "FC=${FC:-gfortran}"
    fi
    r=$?
    if [ $r = 0 ] && grep -q '^pool: 1 miss, 2 hits$' "$tmp/f.log" &&
        { [ "$suite_backend" != sim ] || grep -q "$note" "$tmp/f.log" || ! grep -q 'create_default: GPUMEM_ERROR' "$tmp/f.log"; }; then
        echo "ok 6 - examples/fortran: make run runs example$(grep -q "$note" "$tmp/f.log" && echo ' on the simulator, saying so')"
    else echo "not ok 6 - examples/fortran: make run (exit $r)"; sed 's/^/# /' "$tmp/f.log"; fi
fi
