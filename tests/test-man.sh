#!/bin/sh
# The man pages: gpumem(1) names every environment variable the library
# reads and every subcommand of the tool; gpumem(1) and gpumem(7) render
# without warnings and refer only to pages that exist; when the build wrote
# the man3 pages (doxygen and python3 present), there is one per exported
# function and each renders without warnings.
srcdir=${GPUMEM_TEST_SRCDIR:-.}
builddir=${GPUMEM_TEST_BUILDDIR:-.}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-man.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
echo "1..7"
i=0
t() { i=$((i + 1)); if [ "$1" = 0 ]; then echo "ok $i - $2"; else echo "not ok $i - $2"; sed 's/^/# /' "$tmp/log"; fi; }
: >"$tmp/log"

# Every variable read through lib/env.c's readers (gm_env*("NAME", ...), or a
# name kept in a constant first: static const char name[] = "NAME").
grep -ohE 'gm_env(_[a-z]+)?\("[A-Za-z_]+"|name\[\] = "[A-Z_]+"' "$srcdir"/lib/*.c | sed 's/.*"\(.*\)"$/\1/' |
    sort -u >"$tmp/vars"
missing=
for v in $(cat "$tmp/vars"); do
    grep -q "^\.B $v\$" "$srcdir/doc/gpumem.1" || missing="$missing $v"
done
[ "$(wc -l <"$tmp/vars")" -ge 10 ] && [ -z "$missing" ]; r=$?
echo "variables read: $(tr '\n' ' ' <"$tmp/vars"); not in gpumem.1's ENVIRONMENT:$missing" >"$tmp/log"
t $r "gpumem(1) describes every environment variable the library reads ($(wc -l <"$tmp/vars"))"

grep -oE 'strcmp\(cmd, "[a-z]+"\)' "$srcdir/tools/gpumem.c" | sed 's/.*, "//; s/")$//' | sort -u >"$tmp/cmds"
missing=
for c in $(cat "$tmp/cmds"); do
    grep -q "^\.B gpumem $c\$" "$srcdir/doc/gpumem.1" && grep -q "^\.B[IR]* \"*$c\b" "$srcdir/doc/gpumem.1" ||
        missing="$missing $c"
done
[ -s "$tmp/cmds" ] && [ -z "$missing" ]; r=$?
echo "subcommands: $(tr '\n' ' ' <"$tmp/cmds"); missing from gpumem(1):$missing" >"$tmp/log"
t $r "gpumem(1) shows every subcommand in SYNOPSIS and COMMANDS"

# Renders without warnings: groff -ww says what man would complain about.
render() { # page...
    : >"$tmp/log"
    for p in "$@"; do
        LC_ALL=C.UTF-8 groff -man -ww -z -Tutf8 "$p" >>"$tmp/log" 2>&1 || echo "groff failed on $p" >>"$tmp/log"
        grep -q '^\.SH NAME' "$p" && grep -q '^[^.].* \\- ' "$p" || echo "$p: no NAME line 'name \\- summary'" >>"$tmp/log"
    done
    [ ! -s "$tmp/log" ]
}
if ! command -v groff >/dev/null 2>&1; then
    i=$((i + 1)); echo "ok $i # SKIP groff is not installed"
else
    render "$srcdir/doc/gpumem.1" "$srcdir/doc/gpumem.7"; t $? "gpumem(1) and gpumem(7) render without warnings"
fi

# Every (3) reference in them names an exported function.
sed -n 's/^ *\(gpumem_[a-z0-9_]*\);.*/\1/p' "$srcdir/lib/libgpumem.map" | sort -u >"$tmp/functions"
grep -ohE 'gpumem_[a-z0-9_]+ \(3\)' "$srcdir/doc/gpumem.1" "$srcdir/doc/gpumem.7" | sed 's/ (3)//' | sort -u >"$tmp/refs"
comm -23 "$tmp/refs" "$tmp/functions" >"$tmp/log"
[ -s "$tmp/refs" ] && [ ! -s "$tmp/log" ]; t $? "gpumem(1) and gpumem(7) refer only to exported functions"

# The man3 pages: the build's, else the tarball's.
dir="$builddir/doc/man3"
[ -f "$builddir/doc/man3.stamp" ] || dir="$srcdir/doc/man3"
if [ ! -d "$dir" ]; then
    for n in 5 6 7; do echo "ok $n # SKIP no man3 pages: configure found no doxygen or no python3"; done
    exit 0
fi
ls "$dir" | sed -n 's/\.3$//p' | sort >"$tmp/pages"
comm -23 "$tmp/functions" "$tmp/pages" >"$tmp/log"
[ ! -s "$tmp/log" ]; t $? "a man3 page for every exported function ($(wc -l <"$tmp/pages") pages in $dir)"
: >"$tmp/log"
for f in $(cat "$tmp/functions"); do
    p="$dir/$f.3"
    [ -f "$p" ] || continue
    grep -q "^$f \\\\- ." "$p" && grep -q '^\.SH SYNOPSIS' "$p" &&
        grep -q "^\.B #include <gpumem/.*\.h>" "$p" && grep -q "^\.BI* \".* $f(" "$p" ||
        echo "$p lacks its NAME, SYNOPSIS or prototype" >>"$tmp/log"
done
[ ! -s "$tmp/log" ]; t $? "each page has NAME, the header and the prototype"
if command -v groff >/dev/null 2>&1; then
    render "$dir"/*.3; t $? "every man3 page renders without warnings"
else
    i=$((i + 1)); echo "ok $i # SKIP groff is not installed"
fi
