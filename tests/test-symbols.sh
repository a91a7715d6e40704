#!/bin/sh
# The shared library exports exactly the gpumem_* functions the headers
# declare, each with a version node; nothing else.
srcdir=${GPUMEM_TEST_SRCDIR:-.}
builddir=${GPUMEM_TEST_BUILDDIR:-.}
so=$(ls "$builddir"/lib/.libs/libgpumem.so.* 2>/dev/null | head -n 1)
echo "1..10"
if [ -z "$so" ] || ! command -v nm >/dev/null 2>&1; then
    echo "Bail out! no shared library or no nm"
    exit 1
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-symbols.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
nm -D --defined-only "$so" | awk '$2 != "A" {print $3}' | sort >"$tmp/exported"
grep -hE '^GPUMEM_API' "$srcdir"/include/gpumem/*.h "$srcdir"/include/gpumem/experimental/*.h \
    "$builddir"/include/gpumem/version.h |
    sed 's/(.*//' | awk '{print $NF}' | tr -d '*' | sort -u >"$tmp/declared"
sed -n 's/^ *\(gpumem_[a-z0-9_]*\);.*/\1/p' "$srcdir/lib/libgpumem.map" | sort -u >"$tmp/mapped"
sed 's/@.*//' "$tmp/exported" | sort -u >"$tmp/names"

# Which nodes there are, and in what order, is tests/test-abi-version.sh's.
bad=$(grep -Ev '^gpumem_[a-z0-9_]*@@GPUMEM_(1\.[0-9]+|EXPERIMENTAL)$' "$tmp/exported")
if [ -z "$bad" ]; then echo "ok 1 - every exported symbol is gpumem_*@@GPUMEM_1.N or @@GPUMEM_EXPERIMENTAL"; else
    echo "not ok 1 - symbols outside gpumem_*@@GPUMEM_1.N and @@GPUMEM_EXPERIMENTAL"; echo "$bad" | sed 's/^/# /'; fi
n=$(wc -l <"$tmp/exported")
if [ "$n" -gt 20 ]; then echo "ok 2 - the library exports $n symbols"; else echo "not ok 2 - only $n exported"; fi
missing=$(comm -23 "$tmp/declared" "$tmp/names")
if [ -z "$missing" ]; then echo "ok 3 - every declared function is exported"; else
    echo "not ok 3 - declared but not exported:"; echo "$missing" | sed 's/^/# /'; fi
extra=$(comm -13 "$tmp/declared" "$tmp/names")
if [ -z "$extra" ]; then echo "ok 4 - every exported function is declared in a public header"; else
    echo "not ok 4 - exported but not declared:"; echo "$extra" | sed 's/^/# /'; fi
diffmap=$(comm -3 "$tmp/declared" "$tmp/mapped")
if [ -z "$diffmap" ]; then echo "ok 5 - lib/libgpumem.map lists exactly the declared functions"; else
    echo "not ok 5 - lib/libgpumem.map and the headers differ:"; echo "$diffmap" | sed 's/^/# /'; fi
soname=$(objdump -p "$so" 2>/dev/null | awk '$1 == "SONAME" {print $2}')
if [ "$soname" = "libgpumem.so.1" ]; then echo "ok 6 - SONAME is libgpumem.so.1"; else
    echo "not ok 6 - SONAME is '$soname'"; fi

# The static archive: only gpumem_* names are global, and a static link works.
a="$builddir/lib/.libs/libgpumem.a"
if [ -f "$a" ]; then
    others=$(nm -g --defined-only "$a" 2>/dev/null | awk 'NF == 3 {print $3}' | grep -v '^gpumem_' | sort -u)
    if [ -z "$others" ]; then echo "ok 7 - the static archive defines only gpumem_* globals"; else
        echo "not ok 7 - the static archive also defines:"; echo "$others" | head -20 | sed 's/^/# /'; fi
    # what pkg-config --static adds: gpumem.pc's Libs.private (libdw when configure found it)
    private=$(sed -n 's/^Libs.private: *//p' "$builddir/gpumem.pc" 2>/dev/null)
    printf '#include <gpumem.h>\nint main(void) { const char *b; gpumem_context *c;\n  if (gpumem_backend(&b) != GPUMEM_OK || gpumem_context_create(0, &c) != GPUMEM_OK) return 1;\n  return gpumem_context_release(c) != GPUMEM_OK; }\n' >"$tmp/static.c"
    if ${CC:-cc} ${GPUMEM_TEST_CFLAGS:-} -I"$srcdir/include" -I"$builddir/include" "$tmp/static.c" -o "$tmp/static" \
        ${GPUMEM_TEST_LDFLAGS:-} "$a" -pthread -ldl $private >"$tmp/log" 2>&1 && "$tmp/static" >>"$tmp/log" 2>&1; then
        echo "ok 8 - a program links the static archive and makes a context"
    else
        echo "not ok 8 - a static link"; sed 's/^/# /' "$tmp/log"
    fi
else
    echo "ok 7 # SKIP no static archive (--disable-static)"
    echo "ok 8 # SKIP no static archive (--disable-static)"
fi

# No static TLS (DF_STATIC_TLS, set by any initial-exec access): a library
# that needs it fails to dlopen once other libraries took glibc's surplus,
# as Python with PyTorch had.
flags=$(readelf -d "$so" 2>/dev/null | awk '/\(FLAGS\)/ {$1 = $2 = ""; print}')
case "$flags" in
*STATIC_TLS*) echo "not ok 9 - the library needs static TLS (FLAGS:$flags): an initial-exec thread-local" ;;
*) echo "ok 9 - the library needs no static TLS, so dlopen after others' TLS works" ;;
esac

# The experimental tier: the functions that include/gpumem/experimental/
# declares are exactly those of node GPUMEM_EXPERIMENTAL (and no stable
# header declares one of them).
grep -hE '^GPUMEM_API' "$srcdir"/include/gpumem/experimental/*.h | sed 's/(.*//' | awk '{print $NF}' |
    tr -d '*' | sort -u >"$tmp/exp-declared"
sed -n 's/@@GPUMEM_EXPERIMENTAL$//p' "$tmp/exported" | sort -u >"$tmp/exp-exported"
if [ -s "$tmp/exp-declared" ] && cmp -s "$tmp/exp-declared" "$tmp/exp-exported"; then
    echo "ok 10 - node GPUMEM_EXPERIMENTAL holds exactly the $(wc -l <"$tmp/exp-declared") functions of include/gpumem/experimental/"
else
    echo "not ok 10 - node GPUMEM_EXPERIMENTAL and include/gpumem/experimental/ differ:"
    diff "$tmp/exp-declared" "$tmp/exp-exported" | sed 's/^/# /'
fi
