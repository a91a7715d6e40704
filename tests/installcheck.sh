#!/bin/sh
# Checks an installed copy of libgpumem, in place or staged under DESTDIR:
# examples/hello.c built through pkg-config, the CMake package and Meson
# (shared and static), the modulefiles loaded with Debian's Lmod, and the
# man pages.  Run by `make installcheck` (so by `make distcheck`) and
# `make check-install`:
#   GM_ROOT=$DESTDIR GM_PREFIX=... GM_LIBDIR=... GM_BINDIR=... GM_MANDIR=...
#   GM_MODULEDIR=... GM_FMODDIR=... GM_VERSION=... sh tests/installcheck.sh
# (GM_FMODDIR: where gpumem.mod is installed; empty when Fortran was not built)
# A missing tool is a skip, unless GPUMEM_INSTALLCHECK_STRICT=yes (CI).
srcdir=${GPUMEM_TEST_SRCDIR:-.}
root=${GM_ROOT:-}
CC=${CC:-cc}
export GPUMEM_BACKEND=${GPUMEM_BACKEND:-sim}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-installcheck.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
lib=$root$GM_LIBDIR
echo "1..13"
i=0 failed=0
t() { # status, description
    i=$((i + 1))
    if [ "$1" = 0 ]; then echo "ok $i - $2"; else echo "not ok $i - $2"; sed 's/^/# /' "$tmp/log"; failed=1; fi
}
skip() { # count, reason
    if [ "${GPUMEM_INSTALLCHECK_STRICT:-no}" = yes ]; then
        n=0; while [ $n -lt "$1" ]; do i=$((i + 1)); n=$((n + 1)); echo "not ok $i - $2 (GPUMEM_INSTALLCHECK_STRICT=yes)"; done
        failed=1
    else
        n=0; while [ $n -lt "$1" ]; do i=$((i + 1)); n=$((n + 1)); echo "ok $i # SKIP $2"; done
    fi
}
# The program prints the library's version first; a static link has no
# libgpumem.so.1 among its NEEDED entries, a shared one has.
runs() { # program, "shared" or "static"
    needed=$(readelf -d "$1" 2>>"$tmp/log" | grep -c 'NEEDED.*libgpumem\.so\.1') || true
    if [ "$2" = static ]; then [ "$needed" = 0 ] || { echo "$1 needs libgpumem.so.1" >>"$tmp/log"; return 1; }
    else [ "$needed" = 1 ] || { echo "$1 does not need libgpumem.so.1" >>"$tmp/log"; return 1; }; fi
    LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$1" >"$tmp/out" 2>>"$tmp/log" &&
        head -n 1 "$tmp/out" | grep -qx "libgpumem $GM_VERSION (built with headers $GM_VERSION)" ||
        { cat "$tmp/out" >>"$tmp/log"; return 1; }
}
mkdir "$tmp/examples" && cp -R "$srcdir/examples/hello.c" "$srcdir/examples/Makefile" "$srcdir/examples/cmake" \
    "$srcdir/examples/meson" "$tmp/examples" && chmod -R u+w "$tmp/examples"

# ---- pkg-config --------------------------------------------------------------
: >"$tmp/log"
make -C "$tmp/examples" hello PKG_CONFIG_PATH="$lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$root" CC="$CC" >>"$tmp/log" 2>&1 &&
    runs "$tmp/examples/hello" shared
t $? "examples/Makefile builds hello.c through pkg-config, and it runs"

# ---- the man pages -----------------------------------------------------------
: >"$tmp/log"
for p in man1/gpumem.1 man7/gpumem.7 man7/gpumem-memory.7 man3/gpumem_to_device.3 man3/gpumem_context_create_default.3; do
    [ -f "$root$GM_MANDIR/$p" ] || echo "no $root$GM_MANDIR/$p" >>"$tmp/log"
done
[ ! -s "$tmp/log" ]; t $? "gpumem(1), gpumem(7), gpumem-memory(7) and the man3 pages are installed"

# ---- CMake -------------------------------------------------------------------
if command -v cmake >/dev/null 2>&1; then
    for kind in shared static; do
        : >"$tmp/log"
        static=OFF; [ $kind = static ] && static=ON
        cmake -S "$tmp/examples/cmake" -B "$tmp/cmake-$kind" -DCMAKE_PREFIX_PATH="$root$GM_PREFIX" \
            -DCMAKE_C_COMPILER="$CC" -DGPUMEM_STATIC=$static >>"$tmp/log" 2>&1 &&
            cmake --build "$tmp/cmake-$kind" >>"$tmp/log" 2>&1 && runs "$tmp/cmake-$kind/hello" $kind
        t $? "examples/cmake: find_package(gpumem 1.0) and a $kind link"
    done
    mkdir -p "$tmp/cmake-v2"
    printf 'cmake_minimum_required(VERSION 3.13)\nproject(v C)\nfind_package(gpumem 2.0 REQUIRED)\n' >"$tmp/cmake-v2/CMakeLists.txt"
    cmake -S "$tmp/cmake-v2" -B "$tmp/cmake-v2/build" -DCMAKE_PREFIX_PATH="$root$GM_PREFIX" >"$tmp/log" 2>&1
    [ $? != 0 ] && grep -q "gpumemConfig.cmake, version: $GM_VERSION" "$tmp/log"
    t $? "find_package(gpumem 2.0) refuses version $GM_VERSION"
else
    skip 3 "cmake is not installed"
fi

# ---- Meson -------------------------------------------------------------------
if command -v meson >/dev/null 2>&1 && command -v ninja >/dev/null 2>&1; then
    for kind in shared static; do
        : >"$tmp/log"
        static=false; [ $kind = static ] && static=true
        PKG_CONFIG_PATH="$lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$root" CC="$CC" \
            meson setup "$tmp/meson-$kind" "$tmp/examples/meson" -Dstatic=$static >>"$tmp/log" 2>&1 &&
            meson compile -C "$tmp/meson-$kind" >>"$tmp/log" 2>&1 && runs "$tmp/meson-$kind/hello" $kind
        t $? "examples/meson: dependency('gpumem') and a $kind link"
    done
else
    skip 2 "meson or ninja is not installed"
fi

# ---- the modulefiles, with Lmod ----------------------------------------------
lmod=${LMOD_CMD:-/usr/share/lmod/lmod/libexec/lmod}
if [ -x "$lmod" ]; then
    # module load, in a subshell: prints the variables the module set.
    load() { # MODULEPATH, module
        (
            unset GPUMEM_ROOT GPUMEM_FORTRAN_MODDIR CPATH LIBRARY_PATH PKG_CONFIG_PATH MANPATH CMAKE_PREFIX_PATH LOADEDMODULES _LMFILES_
            MODULEPATH=$1; export MODULEPATH
            eval "$("$lmod" sh load "$2")" || exit 1
            env | grep -E '^(GPUMEM_ROOT|GPUMEM_FORTRAN_MODDIR|PATH|LD_LIBRARY_PATH|LIBRARY_PATH|CPATH|PKG_CONFIG_PATH|MANPATH|CMAKE_PREFIX_PATH)='
            command -v gpumem | sed 's/^/gpumem=/'
            gpumem --version | sed 's/^/version=/'
            man -w gpumem_to_device 2>&1 | sed 's/^/man3=/'
            make -C "$tmp/examples" clean hello CC="$CC" >/dev/null 2>&1 && "$tmp/examples/hello" | head -n 1 | sed 's/^/hello=/'
        ) >"$tmp/env" 2>>"$tmp/log"
    }
    expect() { # the lines every load must give
        for l in "GPUMEM_ROOT=$root$GM_PREFIX" "gpumem=$root$GM_BINDIR/gpumem" "version=gpumem (libgpumem) $GM_VERSION" \
                 "man3=$root$GM_MANDIR/man3/gpumem_to_device.3" "hello=libgpumem $GM_VERSION (built with headers $GM_VERSION)"; do
            grep -qxF "$l" "$tmp/env" || echo "expected: $l" >>"$tmp/log"
        done
        # The Fortran module's directory, set only when Fortran was built.
        if [ -n "${GM_FMODDIR:-}" ]; then
            grep -qxF "GPUMEM_FORTRAN_MODDIR=$root$GM_FMODDIR" "$tmp/env" && [ -f "$root$GM_FMODDIR/gpumem.mod" ] ||
                echo "expected: GPUMEM_FORTRAN_MODDIR=$root$GM_FMODDIR, holding gpumem.mod" >>"$tmp/log"
        elif grep -q '^GPUMEM_FORTRAN_MODDIR=' "$tmp/env"; then
            echo "expected no GPUMEM_FORTRAN_MODDIR: Fortran was not built" >>"$tmp/log"
        fi
        for v in "PATH=$root$GM_BINDIR" "LD_LIBRARY_PATH=$lib" "LIBRARY_PATH=$lib" "CPATH=$root$GM_PREFIX/include" \
                 "PKG_CONFIG_PATH=$lib/pkgconfig" "MANPATH=$root$GM_MANDIR" "CMAKE_PREFIX_PATH=$root$GM_PREFIX"; do
            grep -q "^$v\(:\|\$\)" "$tmp/env" || echo "expected ${v%%=*} to start with ${v#*=}" >>"$tmp/log"
        done
        [ ! -s "$tmp/log" ] || { sed 's/^/got: /' "$tmp/env" >>"$tmp/log"; return 1; }
    }
    : >"$tmp/log"
    [ -f "$root$GM_MODULEDIR/gpumem/$GM_VERSION" ] && [ -f "$root$GM_MODULEDIR/gpumem/$GM_VERSION.lua" ]
    t $? "the Tcl and Lmod modulefiles are installed in $GM_MODULEDIR/gpumem"
    : >"$tmp/log"
    load "$root$GM_MODULEDIR" gpumem && expect
    t $? "module load gpumem (Lmod, the .lua file) sets every variable; gpumem, man and a pkg-config build work"
    : >"$tmp/log"
    # Lmod prefers the .lua file; a directory with a link to the Tcl file alone
    # checks that one (and that it finds its root through a link).
    mkdir -p "$tmp/tcl/gpumem" && ln -s "$root$GM_MODULEDIR/gpumem/$GM_VERSION" "$tmp/tcl/gpumem/$GM_VERSION"
    load "$tmp/tcl" gpumem && expect
    t $? "the Tcl modulefile (#%Module) sets the same"
    : >"$tmp/log"
    (MODULEPATH="$root$GM_MODULEDIR"; export MODULEPATH; "$lmod" sh whatis gpumem) >"$tmp/env" 2>&1
    grep -q "Version: $GM_VERSION" "$tmp/env" || cat "$tmp/env" >>"$tmp/log"
    [ ! -s "$tmp/log" ]; t $? "module whatis gpumem names the version"
    : >"$tmp/log"
    (MODULEPATH="$root$GM_MODULEDIR"; export MODULEPATH; "$lmod" sh avail) >"$tmp/env" 2>&1
    grep -q "gpumem/$GM_VERSION" "$tmp/env" || cat "$tmp/env" >>"$tmp/log"
    [ ! -s "$tmp/log" ]; t $? "module avail lists gpumem/$GM_VERSION"
else
    skip 5 "Lmod is not installed ($lmod)"
fi
: >"$tmp/log"
[ "$i" = 12 ]; t $? "every check ran"
exit $failed
