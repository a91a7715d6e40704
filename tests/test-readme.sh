#!/bin/sh
# The README's first program compiles as C and as C++, links, and prints
# what the README says when run as the README says to run it without a GPU;
# its tool section shows every subcommand of the tool.  The README's block
# that goes from a fresh clone to the program running on the simulator
# (configure, install under ~/.local, pkg-config, run) is run as it stands,
# in a copy of the tree, with HOME a fresh directory and none of the
# variables it sets (PKG_CONFIG_PATH, LD_LIBRARY_PATH, GPUMEM_BACKEND) set
# before, as a new user would paste it (issue 26: the README's build line
# failed with "Package gpumem was not found").
srcdir=${GPUMEM_TEST_SRCDIR:-.}
builddir=${GPUMEM_TEST_BUILDDIR:-.}
CC=${CC:-cc}
CXX=${CXX:-c++}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-readme.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
echo "1..10"
# The program: from its first line to the closing brace of main.
awk '/^    \/\* first.c/{f=1} f{print} f&&/^    }$/{exit}' "$srcdir/README" | sed 's/^    //' >"$tmp/first.c"
inc="-I$srcdir/include -I$builddir/include"
lib="$builddir/lib/.libs"
if grep -q '^int main' "$tmp/first.c" && tail -n 1 "$tmp/first.c" | grep -qx '}'; then
    echo "ok 1 - the README has the first program"
else
    echo "not ok 1 - no first program found in the README"; sed 's/^/# /' "$tmp/first.c"
fi
if $CC -std=c11 -Wall -Wextra -Werror ${GPUMEM_TEST_CFLAGS:-} $inc \
    "$tmp/first.c" -o "$tmp/first" ${GPUMEM_TEST_LDFLAGS:-} -L"$lib" -lgpumem >"$tmp/log" 2>&1; then
    echo "ok 2 - it compiles as C11 with -Wall -Wextra -Werror"
else
    echo "not ok 2 - it compiles as C11"; sed 's/^/# /' "$tmp/log"
fi
if [ "${GPUMEM_HAVE_CXX:-no}" != yes ]; then
    echo "ok 3 # SKIP no C++ compiler"
elif $CXX -std=c++11 -x c++ -Wall -Wextra -Werror ${GPUMEM_TEST_CFLAGS:-} $inc \
    "$tmp/first.c" -o "$tmp/first-cxx" ${GPUMEM_TEST_LDFLAGS:-} -L"$lib" -lgpumem >"$tmp/log" 2>&1; then
    echo "ok 3 - it compiles as C++11 with -Wall -Wextra -Werror"
else
    echo "not ok 3 - it compiles as C++11"; sed 's/^/# /' "$tmp/log"
fi
# The README shows how to run it without a GPU; run it that way.
if grep -q '^    GPUMEM_BACKEND=sim ./first ' "$srcdir/README"; then
    echo "ok 4 - the README's run line for a machine without a GPU sets GPUMEM_BACKEND=sim"
else
    echo "not ok 4 - the README has no 'GPUMEM_BACKEND=sim ./first' run line"
fi
out=$(GPUMEM_BACKEND=sim LD_LIBRARY_PATH="$lib" "$tmp/first" 2>&1)
if [ "$out" = "out[3] = 18 20 22" ]; then
    echo "ok 5 - GPUMEM_BACKEND=sim ./first prints what the README says"
else
    echo "not ok 5 - it printed: $out"
fi
if [ "${GPUMEM_HAVE_CXX:-no}" != yes ]; then
    echo "ok 6 # SKIP no C++ compiler"
else
    out=$(GPUMEM_BACKEND=sim LD_LIBRARY_PATH="$lib" "$tmp/first-cxx" 2>&1)
    if [ "$out" = "out[3] = 18 20 22" ]; then echo "ok 6 - so does the C++ build"; else echo "not ok 6 - the C++ build printed: $out"; fi
fi
# The tool section: a "    gpumem CMD" line for every subcommand tools/gpumem.c knows.
missing=
for c in $(grep -oE 'strcmp\(cmd, "[a-z]+"\)' "$srcdir/tools/gpumem.c" | sed 's/.*, "//; s/")$//' | sort -u); do
    grep -q "^    gpumem $c\b" "$srcdir/README" || missing="$missing $c"
done
if [ -z "$missing" ]; then
    echo "ok 7 - the README's tool section shows every subcommand"
else
    echo "not ok 7 - the README's tool section lacks:$missing"
fi

# The block: the README's indented lines after the paragraph that names this
# test.  It must start from a clone (autoreconf), install, build first.c
# through pkg-config and run it on the simulator.
. "$srcdir/tests/snippet.sh"
readme_snippet "tests/test-readme.sh runs this very block" >"$tmp/block.sh"
want=$(sed -n 's/.*GPUMEM_BACKEND=sim \.\/first *# prints: //p' "$tmp/block.sh")
if grep -q '^autoreconf -fi && ./configure' "$tmp/block.sh" && grep -q 'make install' "$tmp/block.sh" &&
    grep -q '^cc first\.c .*pkg-config --cflags --libs gpumem' "$tmp/block.sh" &&
    [ "$want" = "out[3] = 18 20 22" ] && ! grep -q sudo "$tmp/block.sh"; then
    echo "ok 8 - the README has one block from a clone to the first program on the simulator ($(wc -l <"$tmp/block.sh") lines)"
else
    echo "not ok 8 - the README's block after 'tests/test-readme.sh runs this very block' is not whole:"
    sed 's/^/# /' "$tmp/block.sh"
fi
missing_tools=
for t in autoreconf libtoolize automake pkg-config cc; do
    command -v "$t" >/dev/null 2>&1 || missing_tools="$missing_tools $t"
done
if [ -n "$missing_tools" ]; then
    # the block starts from a clone, as a new user's machine after the Quick
    # start's apt-get line; a machine without those tools (the GPU machine
    # builds from the release tarball) cannot run it
    echo "ok 9 # SKIP the block needs the Quick start's build tools, and this machine lacks:$missing_tools"
    echo "ok 10 # SKIP the same"
    exit 0
fi
if [ -n "${GPUMEM_TEST_SANITIZER:-}" ]; then
    echo "ok 9 # SKIP the block builds the library without the sanitizer: nothing for the $GPUMEM_TEST_SANITIZER run to add"
    echo "ok 10 # SKIP the same"
    exit 0
fi
# The copy: the source tree (a clone has no .git need here), without the
# sanitizer and dist copies.  When the tree is built in place, the copy keeps
# the compiled objects, so that the block's make compiles little; the
# libtool libraries are removed, so that it links them anew for its prefix,
# as it would in a fresh clone.
mkdir "$tmp/clone" "$tmp/home"
(cd "$srcdir" && tar --exclude=./.git --exclude='./_build-*' --exclude='./libgpumem-*' \
    --exclude='*.log' --exclude='*.trs' --warning=no-file-changed -cf - .) | tar -C "$tmp/clone" -xf -
chmod -R u+w "$tmp/clone"
find "$tmp/clone" -name '*.la' -exec rm -f {} +
cp "$tmp/first.c" "$tmp/clone/first.c"
(cd "$tmp/clone" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u MAKEOVERRIDES \
    -u PKG_CONFIG_PATH -u PKG_CONFIG_LIBDIR -u PKG_CONFIG_SYSROOT_DIR -u LD_LIBRARY_PATH -u GPUMEM_BACKEND \
    -u CC -u CXX -u CFLAGS -u CPPFLAGS -u LDFLAGS -u CONFIG_SITE HOME="$tmp/home" \
    sh -e "$tmp/block.sh" >"$tmp/block.log" 2>&1)
r=$?
last=$(tail -n 1 "$tmp/block.log")
if [ $r = 0 ] && [ -n "$want" ] && [ "$last" = "$want" ]; then
    echo "ok 9 - the README's block, pasted into a fresh copy of the tree, ends with the program printing: $want"
else
    echo "not ok 9 - the README's block exited $r; its last lines:"; tail -n 20 "$tmp/block.log" | sed 's/^/# /'
fi
# What it built runs without the block's environment: found through its rpath.
out=$(cd "$tmp/clone" && env -u LD_LIBRARY_PATH GPUMEM_BACKEND=sim ./first 2>&1)
if [ "$out" = "$want" ] && [ -f "$tmp/home/.local/lib/pkgconfig/gpumem.pc" ]; then
    echo "ok 10 - the installed copy is under ~/.local and ./first finds it without LD_LIBRARY_PATH"
else
    echo "not ok 10 - ./first printed: $out"
fi
