#!/bin/sh
# The shared library exports exactly the gpumem_* functions the headers
# declare, each with a version node; nothing else.
srcdir=${GPUMEM_TEST_SRCDIR:-.}
builddir=${GPUMEM_TEST_BUILDDIR:-.}
so=$(ls "$builddir"/lib/.libs/libgpumem.so.* 2>/dev/null | head -n 1)
echo "1..6"
if [ -z "$so" ] || ! command -v nm >/dev/null 2>&1; then
    echo "Bail out! no shared library or no nm"
    exit 1
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-symbols.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
nm -D --defined-only "$so" | awk '$2 != "A" {print $3}' | sort >"$tmp/exported"
grep -hE '^GPUMEM_API' "$srcdir"/include/gpumem/*.h "$builddir"/include/gpumem/version.h |
    sed 's/(.*//' | awk '{print $NF}' | tr -d '*' | sort -u >"$tmp/declared"
sed -n 's/^ *\(gpumem_[a-z0-9_]*\);.*/\1/p' "$srcdir/lib/libgpumem.map" | sort -u >"$tmp/mapped"
sed 's/@.*//' "$tmp/exported" | sort -u >"$tmp/names"

bad=$(grep -v '^gpumem_[a-z0-9_]*@@GPUMEM_1\.0$' "$tmp/exported")
if [ -z "$bad" ]; then echo "ok 1 - every exported symbol is gpumem_*@@GPUMEM_1.0"; else
    echo "not ok 1 - symbols outside gpumem_*@@GPUMEM_1.0"; echo "$bad" | sed 's/^/# /'; fi
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
