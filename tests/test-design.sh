#!/bin/sh
# test-design.sh: doc/design.md stays true (issue 29): every function,
# variable, macro and file it names in backquotes exists.
#   - a name gm_* or gpumem_* (a function, a variable, a type, with or
#     without "()") must be a whole word of lib/, include/ or tools/;
#   - a GPUMEM_* name must be one too (a macro, an enumerator), or a row of
#     lib/params.c's table of environment variables;
#   - a file name (*.c, *.h, *.cu, *.md, *.sh, *.py, a glob such as sim*.c)
#     must exist under lib/, lib/kernels/, include/ or the top directory
#     (tests/test-layers.sh checks the layer table's files both ways).
# First the test checks itself on a page naming what does not exist.
srcdir=${GPUMEM_TEST_SRCDIR:-$(dirname "$0")/..}
design=$srcdir/doc/design.md
tmp=$(mktemp -d "${TMPDIR:-/tmp}/test-design.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
echo "1..4"
[ -r "$design" ] || { echo "Bail out! cannot read $design"; exit 1; }
find "$srcdir/lib" "$srcdir/include" "$srcdir/tools" \( -name '*.[ch]' -o -name '*.h.in' -o -name '*.cu' -o -name '*.hpp' \) \
    -exec cat {} + >"$tmp/code"

# The names of page $1 of kind $2 (ident, macro, file), one a line.
names() {
    grep -o '`[^`]*`' "$1" | tr -d '`' | sort -u >"$tmp/names"
    case $2 in
    ident) sed -n 's/^\(\(gm\|gpumem\)_[A-Za-z0-9_]*\)\((.*)\)\{0,1\}$/\1/p' "$tmp/names" ;;
    macro) grep -oE '^GPUMEM_[A-Z0-9_]+$' "$tmp/names" ;;
    file) grep -E '^[A-Za-z0-9_][A-Za-z0-9_./*-]*\.(c|h|cu|md|sh|py|gp|am|ac)$' "$tmp/names" ;;
    esac | sort -u
}

# The names of page $1 of kind $2 that do not exist, each after a space.
missing() {
    for t in $(names "$1" "$2"); do
        case $2 in
        ident) grep -qw "$t" "$tmp/code" || printf ' %s' "$t" ;;
        macro) grep -qw "$t" "$tmp/code" || grep -q "^ *[A-Z]*(${t#GPUMEM_}," "$srcdir/lib/params.c" ||
                   printf ' %s' "$t" ;;
        file)
            found=""
            for d in "$srcdir/lib" "$srcdir/lib/kernels" "$srcdir/include" "$srcdir"; do
                # a file configure makes (version.h) is its .in in a VPATH build
                for f in $d/$t; do [ -e "$f" ] || [ -e "$f.in" ] && found=yes; done
            done
            [ -n "$found" ] || printf ' %s' "$t" ;;
        esac
    done
}

status=0
ok() {
    if [ -z "$2" ]; then echo "ok $1 - $3"; else echo "not ok $1 - $3:$2"; status=1; fi
}

printf '%s\n' 'Calls `gm_error_hold()` and `gm_copy_run`, reads `GPUMEM_NO_SUCH` and `GPUMEM_PEER`,' \
    'lives in `no_such_file.c` and `copy_engine.c`, `sim*.c`.' >"$tmp/fake.md"
got="$(missing "$tmp/fake.md" ident)|$(missing "$tmp/fake.md" macro)|$(missing "$tmp/fake.md" file)"
want=" gm_error_hold| GPUMEM_NO_SUCH| no_such_file.c"
[ "$got" = "$want" ] && bad="" || bad=" found [$got], want [$want]"
ok 1 "$bad" "the checks find what a page names that does not exist, and only that"

n=$(names "$design" ident | wc -l)
bad=$(missing "$design" ident)
[ "$n" -ge 20 ] || bad="$bad (only $n names: the extraction broke)"
ok 2 "$bad" "every gm_* and gpumem_* name of doc/design.md ($n) is in lib/, include/ or tools/"
n=$(names "$design" macro | wc -l)
ok 3 "$(missing "$design" macro)" "every GPUMEM_* name of doc/design.md ($n) is a macro, an enumerator or a variable of the table"
n=$(names "$design" file | wc -l)
bad=$(missing "$design" file)
[ "$n" -ge 20 ] || bad="$bad (only $n files: the extraction broke)"
ok 4 "$bad" "every file doc/design.md names ($n) exists"
exit $status
