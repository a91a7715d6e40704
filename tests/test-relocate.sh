#!/bin/sh
# A moved installation works.  `make install DESTDIR=<stage>`, then the
# prefix is moved to another place, at another depth, and nothing is left
# where it was; programs are built against the moved tree alone, through
# pkg-config (gpumem.pc, gpumem-fortran.pc) and through CMake's
# find_package(gpumem), and run (on the simulator unless GPUMEM_BACKEND says
# otherwise).  Every directory they are given must lie in the moved tree.
# A missing cmake is a skip, unless GPUMEM_INSTALLCHECK_STRICT=yes (CI).
srcdir=${GPUMEM_TEST_SRCDIR:-.}
builddir=${GPUMEM_TEST_BUILDDIR:-.}
export GPUMEM_BACKEND=${GPUMEM_BACKEND:-sim}
n=8
if [ -n "${GPUMEM_TEST_SANITIZER:-}" ]; then
    echo "1..0 # SKIP a $GPUMEM_TEST_SANITIZER build: downstream programs are built without its runtime"
    exit 0
fi
echo "1..$n"
prefix=${GM_PREFIX:-} libdir=${GM_LIBDIR:-} includedir=${GM_INCLUDEDIR:-}
version=$(sed -n 's/^#define GPUMEM_VERSION_STRING "\(.*\)"$/\1/p' "$builddir/include/gpumem/version.h")
if [ -z "$prefix" ] || [ -z "$libdir" ] || [ -z "$includedir" ] || [ -z "$version" ]; then
    echo "Bail out! GM_PREFIX, GM_LIBDIR, GM_INCLUDEDIR (make check sets them) or version.h missing"
    exit 1
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-relocate.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
i=0 failed=0
t() { # status, description
    i=$((i + 1))
    if [ "$1" = 0 ]; then echo "ok $i - $2"; else echo "not ok $i - $2"; sed 's/^/# /' "$tmp/log" | tail -40; failed=1; fi
}
skip() { # count, reason, "tool" when a missing tool is the reason
    k=0
    while [ $k -lt "$1" ]; do
        i=$((i + 1)); k=$((k + 1))
        if [ "${3:-}" = tool ] && [ "${GPUMEM_INSTALLCHECK_STRICT:-no}" = yes ]; then
            echo "not ok $i - $2 (GPUMEM_INSTALLCHECK_STRICT=yes)"; failed=1
        else
            echo "ok $i # SKIP $2"
        fi
    done
}
case $libdir/ in
"$prefix"/*) ;;
*) skip $n "libdir $libdir is outside the prefix $prefix: moving the prefix does not move it"; exit 0 ;;
esac
case $includedir/ in
"$prefix"/*) ;;
*) skip $n "includedir $includedir is outside the prefix $prefix: moving the prefix does not move it"; exit 0 ;;
esac
librel=${libdir#"$prefix"/}

# ---- install, then move ------------------------------------------------------
stage="$tmp/stage"
moved="$tmp/elsewhere/a/b/gpumem-$version"   # another place, another depth
: >"$tmp/log"
# A make of its own: not the jobserver of the `make check` that runs this test.
(unset MAKEFLAGS MFLAGS MAKELEVEL; ${MAKE:-make} -C "$builddir" install DESTDIR="$stage") >"$tmp/log" 2>&1 &&
    mkdir -p "${moved%/*}" && mv "$stage$prefix" "$moved" && rm -rf "$stage" &&
    [ -f "$moved/$librel/pkgconfig/gpumem.pc" ] && [ -f "$moved/$librel/cmake/gpumem/gpumemConfig.cmake" ]
t $? "make install DESTDIR=<stage>, then the prefix moved to <elsewhere>/a/b/gpumem-$version"
if [ $failed = 1 ]; then skip $((n - 1)) "nothing installed"; exit 1; fi
mreal=$(cd "$moved" && pwd -P)

# A directory's real path is in the moved tree.
inside() { # directory
    r=$(cd "$1" 2>/dev/null && pwd -P) || { echo "no directory $1" >>"$tmp/log"; return 1; }
    case $r/ in "$mreal"/*) ;; *) echo "$1 is outside the moved tree" >>"$tmp/log"; return 1 ;; esac
}
# Every -I and -L directory of some flags is in the moved tree.
flags_inside() { # flags
    rc=0
    for f in $1; do
        case $f in -I*|-L*) inside "${f#-?}" || rc=1 ;; esac
    done
    return $rc
}
# The program prints the library's version first.
runs() { # program, library directory
    LD_LIBRARY_PATH="$2" "$1" >"$tmp/out" 2>>"$tmp/log" &&
        head -n 1 "$tmp/out" | grep -qx "libgpumem $version (built with headers $version)" ||
        { cat "$tmp/out" >>"$tmp/log"; return 1; }
}
cp "$srcdir/examples/hello.c" "$tmp/hello.c"

# ---- pkg-config ----------------------------------------------------------------
# Only the moved tree's files: no PKG_CONFIG_PATH, no sysroot, no system .pc.
pc() { env -u PKG_CONFIG_PATH -u PKG_CONFIG_SYSROOT_DIR PKG_CONFIG_LIBDIR="$moved/$librel/pkgconfig" pkg-config "$@"; }
if [ "${GM_PC_RELOCATABLE:-yes}" = no ]; then
    skip 4 "configure made gpumem.pc name its prefix (--disable-relocatable, or --prefix=/usr)"
else
    : >"$tmp/log"
    cflags=$(pc --cflags gpumem 2>>"$tmp/log") && libs=$(pc --libs gpumem 2>>"$tmp/log") &&
        pclib=$(pc --variable=libdir gpumem) && pcinc=$(pc --variable=includedir gpumem) &&
        echo "cflags: $cflags; libs: $libs" >>"$tmp/log" &&
        inside "$(pc --variable=prefix gpumem)" && [ "$(cd "$(pc --variable=prefix gpumem)" && pwd -P)" = "$mreal" ] &&
        inside "$pclib" && inside "$pcinc" && [ -f "$pcinc/gpumem.h" ] && [ -f "$pclib/libgpumem.so" ] &&
        flags_inside "$cflags $libs"
    t $? "gpumem.pc: prefix is the moved tree; libdir, includedir and every -I/-L are in it"

    : >"$tmp/log"
    # shellcheck disable=SC2086
    ${CC:-cc} -Wall -Wextra -Werror $cflags -o "$tmp/hello-pc" "$tmp/hello.c" $libs >>"$tmp/log" 2>&1 &&
        runs "$tmp/hello-pc" "$pclib" &&
        LD_LIBRARY_PATH="$pclib" ldd "$tmp/hello-pc" | grep 'libgpumem\.so' >"$tmp/ldd" &&
        inside "$(sed -n 's/.*=> \(.*\)\/libgpumem\.so.*/\1/p' "$tmp/ldd")"
    t $? "hello.c built through pkg-config gpumem runs, on the moved tree's libgpumem.so.1"

    if [ "${GPUMEM_HAVE_FORTRAN:-no}" = yes ]; then
        : >"$tmp/log"
        fmoddir=$(pc --variable=fmoddir gpumem-fortran 2>>"$tmp/log") &&
            flibs=$(pc --libs gpumem-fortran 2>>"$tmp/log") && fcflags=$(pc --cflags gpumem-fortran 2>>"$tmp/log") &&
            echo "fmoddir: $fmoddir; cflags: $fcflags; libs: $flibs" >>"$tmp/log" &&
            inside "$fmoddir" && [ -f "$fmoddir/gpumem.mod" ] && flags_inside "$fcflags $flibs"
        t $? "gpumem-fortran.pc: fmoddir holds gpumem.mod in the moved tree; every -I/-L is in it"
        : >"$tmp/log"
        cp "$srcdir/examples/fortran/example.f90" "$tmp/example.f90"
        # shellcheck disable=SC2086
        ${FC:-gfortran} -O2 $fcflags -o "$tmp/example" "$tmp/example.f90" $flibs >>"$tmp/log" 2>&1 &&
            LD_LIBRARY_PATH="$pclib" "$tmp/example" >"$tmp/out" 2>>"$tmp/log" &&
            tail -n 1 "$tmp/out" | grep -qx 'pool: 1 miss, 2 hits' || { cat "$tmp/out" >>"$tmp/log"; false; }
        t $? "examples/fortran built through pkg-config gpumem-fortran runs"
    else
        skip 2 "the Fortran module is not built"
    fi
fi

# ---- CMake ----------------------------------------------------------------------
if command -v cmake >/dev/null 2>&1; then
    mkdir -p "$tmp/examples/cmake" && cp "$srcdir/examples/cmake/CMakeLists.txt" "$tmp/examples/cmake/" &&
        cp "$srcdir/examples/hello.c" "$tmp/examples/"
    cmake_hello() { # name, prefix path, static ON|OFF
        cmake -S "$tmp/examples/cmake" -B "$tmp/cmake-$1" -DCMAKE_PREFIX_PATH="$2" -DCMAKE_C_COMPILER="${CC:-cc}" \
            -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF \
            -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DGPUMEM_STATIC="$3" >>"$tmp/log" 2>&1 &&
            cmake --build "$tmp/cmake-$1" >>"$tmp/log" 2>&1 &&
            d=$(sed -n 's/^gpumem_DIR:[A-Z]*=//p' "$tmp/cmake-$1/CMakeCache.txt") && echo "gpumem_DIR: $d" >>"$tmp/log" &&
            inside "$d" &&
            # the compiler's include directories are the moved tree's
            grep -o -E '(-isystem |-I)[^ "]+' "$tmp/cmake-$1/compile_commands.json" | sed 's/^-isystem /-I/' >"$tmp/inc" &&
            [ -s "$tmp/inc" ] && flags_inside "$(cat "$tmp/inc")" &&
            runs "$tmp/cmake-$1/hello" "$moved/$librel"
    }
    : >"$tmp/log"
    cmake_hello shared "$moved" OFF && readelf -d "$tmp/cmake-shared/hello" | grep -q 'NEEDED.*libgpumem\.so\.1'
    t $? "CMake: find_package(gpumem 1.0) in the moved tree, a shared link runs"
    : >"$tmp/log"
    if [ -f "$moved/$librel/libgpumem.a" ]; then
        cmake_hello static "$moved" ON && ! readelf -d "$tmp/cmake-static/hello" | grep -q 'NEEDED.*libgpumem'
        t $? "CMake: gpumem::gpumem_static from the moved tree, a static link runs"
    else
        skip 1 "no static archive (--disable-static)"
    fi
    : >"$tmp/log"
    ln -s "$moved" "$tmp/link"
    cmake_hello link "$tmp/link" OFF
    t $? "CMake: the moved tree found through a symbolic link to it"
else
    skip 3 "cmake is not installed" tool
fi
[ "$i" = "$n" ] || { echo "not ok - $i checks of $n ran"; failed=1; }
exit $failed
