#!/bin/sh
# make check-asan, check-tsan and fuzz configure a copy of the sources made
# by `make distdir`.  That copy must not need doxygen: in a tree whose
# configure found none, the man3 pages cannot be made, and only a real
# `make dist` may insist on them.  Checked here by making the pages
# unavailable to a distdir of this tree.
srcdir=${GPUMEM_TEST_SRCDIR:-.}
builddir=${GPUMEM_TEST_BUILDDIR:-.}
if [ -n "${GPUMEM_TEST_SANITIZER:-}" ]; then
    echo "1..0 # SKIP a $GPUMEM_TEST_SANITIZER build: its own sources are such a copy"
    exit 0
fi
echo "1..3"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-distdir.XXXXXX") || exit 1
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
i=0
t() { # status, description
    i=$((i + 1))
    if [ "$1" = 0 ]; then echo "ok $i - $2"; else echo "not ok $i - $2"; sed 's/^/# /' "$tmp/log" | tail -30; fi
}
# As a tree configured without doxygen: no pages of its own (MAN3_CLEAN is
# empty there) and none in the source tree.
nodoc="MAN3_CLEAN= MAN3_DIR=d=$tmp/no-man3 DOXYGEN="
mk() { (unset MAKEFLAGS MFLAGS MAKELEVEL; ${MAKE:-make} -C "$builddir" "$@") >>"$tmp/log" 2>&1; }

# 1. Each of the three targets asks for the copy without the pages.
: >"$tmp/log"
rc=0
for target in check-asan check-tsan fuzz; do
    # Read from the Makefile: make -n would run the recipe's $(MAKE) lines.
    sed -n "/^$target:/,/^[^\t]/p" "$builddir/Makefile" | grep -q 'san_configure' || { echo "$target: no \$(san_configure)" >>"$tmp/log"; rc=1; }
done
sed -n '/^san_configure = /,/[^\\]$/p' "$builddir/Makefile" >"$tmp/san"
grep -q 'distdir distdir=[^ ]* GM_DIST_MAN3=no' "$tmp/san" || { cat "$tmp/san" >>"$tmp/log"; rc=1; }
t $rc "check-asan, check-tsan and fuzz make their copy with GM_DIST_MAN3=no"

# 2. Such a copy is made without the pages, and is a tree configure runs in.
: >"$tmp/log"
# shellcheck disable=SC2086
mk distdir distdir="$tmp/src" GM_DIST_MAN3=no $nodoc &&
    [ -x "$tmp/src/configure" ] && [ -f "$tmp/src/lib/libgpumem.map" ] && [ ! -d "$tmp/src/doc/man3" ] &&
    (cd "$tmp/src" && ./configure --version) >>"$tmp/log" 2>&1
t $? "make distdir GM_DIST_MAN3=no, without the man3 pages, gives a configurable copy"

# 3. make dist itself still refuses a tarball without the pages.
: >"$tmp/log"
# shellcheck disable=SC2086
mk distdir distdir="$tmp/dist" $nodoc
rc=$?
[ $rc != 0 ] && grep -q 'make dist: the man3 pages need doxygen' "$tmp/log"
t $? "make distdir without the man3 pages fails and says that they need doxygen"
