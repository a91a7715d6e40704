#!/bin/sh
# The package version, the libtool version, the ELF version nodes and the
# release records tell one story (RELEASING, "Versions"):
#   version X.Y.Z  <->  nodes GPUMEM_X.0 .. GPUMEM_X.Y, each inheriting the
#   one before  <->  libgpumem.so.X, -version-info (X+Y):Z:Y on a library
#   that started at 1:0:0 (checked as: SONAME X, age Y, revision Z)
# and debian/libgpumem1.symbols gives each symbol of node GPUMEM_A.B the
# version A.B.0; NEWS, debian/changelog and the hand-written man pages name
# the version.  Everything is
# read from the built library, not from the files it was made from.
srcdir=${GPUMEM_TEST_SRCDIR:-.}
builddir=${GPUMEM_TEST_BUILDDIR:-.}
echo "1..9"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-abiver.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
i=0
t() { # status, description, [log]
    i=$((i + 1))
    if [ "$1" = 0 ]; then echo "ok $i - $2"; else echo "not ok $i - $2"; [ -n "${3:-}" ] && sed 's/^/# /' "$3"; fi
}
skip() { i=$((i + 1)); echo "ok $i # SKIP $1"; }

version=$(sed -n 's/^#define GPUMEM_VERSION_STRING "\(.*\)"$/\1/p' "$builddir/include/gpumem/version.h")
major=${version%%.*}; rest=${version#*.}; minor=${rest%%.*}; patch=${rest#*.}
# The real file libtool made: libgpumem.so.(current-age).(age).(revision).
real=$(cd "$builddir/lib/.libs" 2>/dev/null && for f in libgpumem.so.*.*.*; do [ -f "$f" ] && [ ! -L "$f" ] && echo "$f"; done | head -n 1)
if [ -z "$version" ] || [ -z "$real" ] || ! command -v objdump >/dev/null 2>&1; then
    echo "Bail out! no version.h ('$version'), no built libgpumem.so.X.Y.Z ('$real') or no objdump"
    exit 1
fi
so="$builddir/lib/.libs/$real"
lt=${real#libgpumem.so.}
lt_major=${lt%%.*}; lt_rest=${lt#*.}; lt_age=${lt_rest%%.*}; lt_rev=${lt_rest#*.}
echo "# version $version; $real (SONAME number $lt_major, age $lt_age, revision $lt_rev)"

# The library's version definitions, in order, each with its parent:
#   2 0x00 0x01a7e7b0 GPUMEM_1.0
#   3 0x00 0x01a7e7b1 GPUMEM_1.1
#           GPUMEM_1.0
objdump -p "$so" | awk '
    /^Version definitions:/ { on = 1; next }
    on && /^$/ { exit }
    on && /^[0-9]/ { if ($2 != "0x01") { if (n) print node, parent; node = $4; parent = "-"; n++ } next }
    on && /^[ \t]/ { if (n) parent = $1 }
    END { if (n) print node, parent }' >"$tmp/allnodes"
# GPUMEM_EXPERIMENTAL (the experimental tier) is apart from the chain: it
# inherits nothing, nothing inherits it, and it counts for no version.
grep -v '^GPUMEM_EXPERIMENTAL ' "$tmp/allnodes" >"$tmp/nodes"
sed 's/^/# node (parent): /' "$tmp/allnodes" | grep ' GPUMEM_EXPERIMENTAL ' || true
sed 's/^/# node (parent): /' "$tmp/nodes"

# 1. The nodes are GPUMEM_X.0, GPUMEM_X.1, ... in order, each inheriting the
#    one before; the first inherits nothing.
awk -v x="$major" '
    { want = "GPUMEM_" x "." (NR - 1); wantp = NR == 1 ? "-" : "GPUMEM_" x "." (NR - 2)
      if ($1 != want || $2 != wantp) { print "node " NR ": " $1 " (parent " $2 "), expected " want " (parent " wantp ")"; bad = 1 } }
    END { if (NR == 0) { print "no version nodes"; bad = 1 } exit bad }' "$tmp/nodes" >"$tmp/log"
t $? "the nodes are GPUMEM_$major.0, GPUMEM_$major.1, ..., each inheriting the one before" "$tmp/log"

# 2. The newest node is the version's major.minor.
newest=$(tail -n 1 "$tmp/nodes" | cut -d' ' -f1)
[ "$newest" = "GPUMEM_$major.$minor" ]
t $? "the newest node, $newest, is GPUMEM_$major.$minor of version $version"

# 3. libtool: the SONAME number is the major version, and the real file's
#    name agrees with the SONAME.
soname=$(objdump -p "$so" | awk '$1 == "SONAME" {print $2}')
[ "$lt_major" = "$major" ] && [ "$soname" = "libgpumem.so.$major" ]
t $? "SONAME $soname and the file $real: current - age = $major, the major version"

# 4. age counts the nodes before the newest; revision is the patch level.
nodes=$(wc -l <"$tmp/nodes")
[ "$lt_age" = $((nodes - 1)) ] && [ "$lt_rev" = "$patch" ]
t $? "libtool age $lt_age = $((nodes - 1)) older nodes, revision $lt_rev = patch level $patch"

# 5. lib/libgpumem.map declares exactly these nodes (the build used it).
sed -n 's/^\(GPUMEM_[0-9A-Z_]*\.*[0-9]*\) {.*/\1/p' "$srcdir/lib/libgpumem.map" >"$tmp/mapnodes"
cut -d' ' -f1 "$tmp/allnodes" | diff "$tmp/mapnodes" - >"$tmp/log"
awk '$1 == "GPUMEM_EXPERIMENTAL" && $2 != "-" { print "GPUMEM_EXPERIMENTAL inherits " $2 } $2 == "GPUMEM_EXPERIMENTAL" { print $1 " inherits GPUMEM_EXPERIMENTAL" }' \
    "$tmp/allnodes" >>"$tmp/log"
t $? "lib/libgpumem.map declares the library's nodes, in order (GPUMEM_EXPERIMENTAL apart)" "$tmp/log"

# 6. debian/libgpumem1.symbols: the SONAME and package name, every node, and
#    each symbol's version the release that opened its node (A.B.0).
if [ -f "$srcdir/debian/libgpumem1.symbols" ]; then
    f="$srcdir/debian/libgpumem1.symbols"
    : >"$tmp/log"
    head -n 1 "$f" | grep -qx "libgpumem.so.$major libgpumem$major #MINVER#" ||
        echo "first line: $(head -n 1 "$f"), expected: libgpumem.so.$major libgpumem$major #MINVER#" >>"$tmp/log"
    while read -r node parent; do
        grep -qx " $node@$node ${node#GPUMEM_}.0" "$f" || echo "no line ' $node@$node ${node#GPUMEM_}.0'" >>"$tmp/log"
    done <"$tmp/nodes"
    # An experimental symbol's version is the release that built the
    # package (RELEASING, "The experimental tier"): it may change in any.
    awk -v v="$version" '/^ / { split($1, a, "@GPUMEM_")
        if (a[2] == "EXPERIMENTAL") { if ($2 != v) print "line " NR ": " $0 " (expected version " v ")"; next }
        if (a[2] == "" || $2 != a[2] ".0") print "line " NR ": " $0 " (expected version " a[2] ".0)" }' \
        "$f" >>"$tmp/log"
    [ ! -s "$tmp/log" ]
    t $? "debian/libgpumem1.symbols: libgpumem.so.$major, every node, each symbol at its node's release" "$tmp/log"
else
    skip "no debian/ (a release tarball)"
fi

# 7. NEWS: the first release heading ("* X.Y.Z ...") is this version.
heading=$(grep -m 1 -E '^\* [0-9]+\.[0-9]+\.[0-9]+' "$srcdir/NEWS")
case $heading in
"* $version "* | "* $version") r=0 ;;
*) r=1 ;;
esac
t $r "NEWS: the newest release heading ('$heading') is $version"

# 8. debian/changelog: the newest entry packages this version.
if [ -f "$srcdir/debian/changelog" ]; then
    entry=$(head -n 1 "$srcdir/debian/changelog")
    case $entry in
    "libgpumem ($version-"*) r=0 ;;
    *) r=1 ;;
    esac
    t $r "debian/changelog: the newest entry ('$entry') is $version"
else
    skip "no debian/ (a release tarball)"
fi

# 9. The hand-written man pages: .TH NAME SECTION DATE "libgpumem X.Y.Z" ...
: >"$tmp/log"
for page in gpumem.1 gpumem.7; do
    grep -q "^\.TH GPUMEM [17] \"[^\"]*\" \"libgpumem $version\"" "$srcdir/doc/$page" ||
        grep '^\.TH' "$srcdir/doc/$page" | sed "s/^/doc\/$page: /" >>"$tmp/log"
done
[ ! -s "$tmp/log" ]
t $? "doc/gpumem.1 and doc/gpumem.7 name libgpumem $version in their .TH line" "$tmp/log"
