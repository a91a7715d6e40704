#!/bin/sh
# Each public header compiles on its own as C99 and C11 with -pedantic, and
# as C++ (extern "C": a C++ program links against the C library).  The
# link tests use configure's CFLAGS and LDFLAGS (sanitizer builds need them).
srcdir=${GPUMEM_TEST_SRCDIR:-.}
builddir=${GPUMEM_TEST_BUILDDIR:-.}
CC=${CC:-cc}
CXX=${CXX:-c++}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-headers.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
inc="-I$srcdir/include -I$builddir/include"
# version.h is generated: in the build tree, also under make distcheck.
headers=$( (cd "$srcdir/include" && ls gpumem.h gpumem/*.h; echo gpumem/version.h) | sort -u)
n=0
for h in $headers; do n=$((n + 3)); done
n=$((n + 2))
echo "1..$n"
i=0
check() { # description, command...
    desc=$1; shift
    i=$((i + 1))
    if "$@" >"$tmp/log" 2>&1; then echo "ok $i - $desc"; else echo "not ok $i - $desc"; sed 's/^/# /' "$tmp/log"; fi
}
for h in $headers; do
    printf '#include <%s>\n#include <%s>\nint gpumem_header_test;\n' "$h" "$h" >"$tmp/t.c"
    check "$h alone as C99 -pedantic" $CC -std=c99 -pedantic -Wall -Wextra -Werror $inc -c "$tmp/t.c" -o "$tmp/t.o"
    check "$h alone as C11 -pedantic" $CC -std=c11 -pedantic -Wall -Wextra -Werror $inc -c "$tmp/t.c" -o "$tmp/t.o"
    cp "$tmp/t.c" "$tmp/t.cpp"
    if [ "${GPUMEM_HAVE_CXX:-no}" = yes ]; then
        check "$h alone as C++" $CXX -std=c++11 -pedantic -Wall -Wextra -Werror $inc -c "$tmp/t.cpp" -o "$tmp/t.o"
    else
        i=$((i + 1)); echo "ok $i # SKIP no C++ compiler"
    fi
done
lib="$builddir/lib/.libs"
cat >"$tmp/link.cpp" <<'CPP'
#include <gpumem.h>
#include <cstring>
int main() { return std::strcmp(gpumem_version_string(), GPUMEM_VERSION_STRING) != 0; }
CPP
if [ "${GPUMEM_HAVE_CXX:-no}" = yes ]; then
    check "a C++ program links and runs against the C library" sh -c \
        "$CXX -std=c++11 ${GPUMEM_TEST_CFLAGS:-} $inc '$tmp/link.cpp' -o '$tmp/link' ${GPUMEM_TEST_LDFLAGS:-} -L'$lib' -lgpumem && LD_LIBRARY_PATH='$lib' '$tmp/link'"
else
    i=$((i + 1)); echo "ok $i # SKIP no C++ compiler"
fi
printf '#include <gpumem.h>\nint main(void) { return gpumem_version() != GPUMEM_VERSION_NUMBER; }\n' >"$tmp/link.c"
check "a C99 program links and runs against the library" sh -c \
    "$CC -std=c99 -pedantic ${GPUMEM_TEST_CFLAGS:-} $inc '$tmp/link.c' -o '$tmp/linkc' ${GPUMEM_TEST_LDFLAGS:-} -L'$lib' -lgpumem && LD_LIBRARY_PATH='$lib' '$tmp/linkc'"
