#!/bin/sh
# The man pages: gpumem(1) (and doc/environment.md) name every environment
# variable the library reads; gpumem(1) shows every subcommand of the tool,
# lists every member of info --json, and its examples for a machine without
# a GPU ask for the simulator and run; gpumem(7) lists every public header;
# both render without warnings and refer only to pages that exist.  When the
# build wrote the man3 pages (doxygen and python3 present), there is one per
# exported function, each renders without warnings, and a function with an
# example has an EXAMPLES section.  Every `@par Example` of the public
# headers is a whole program: each compiles as C11 with -Wall -Wextra
# -Werror, runs (on the simulator unless GPUMEM_BACKEND says otherwise) and
# prints what its `// prints:` comments say.
srcdir=${GPUMEM_TEST_SRCDIR:-.}
builddir=${GPUMEM_TEST_BUILDDIR:-.}
CC=${CC:-cc}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-man.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# The examples: ex<n>.c, and in "names" each one's number, the function whose
# comment holds it (or "file" for a header's own comment) and the header.
mkdir "$tmp/ex"
awk -v dir="$tmp/ex" '
function flush(where) { if (pending) { print pending, where, prev > (dir "/names"); pending = 0 } }
FNR == 1 { flush("file"); want = 0; incode = 0 }
{ prev = FILENAME }
/^ \* @par Example/ { flush("file"); want = 1; next }
want && /^ \* @code/ { incode = 1; n++; file = dir "/ex" n ".c"; printf "" > file; next }
incode && /^ \* @endcode/ { incode = 0; want = 0; pending = n; close(file); next }
incode { line = $0; sub(/^ \*( |$)/, "", line); print line >> file; next }
pending && /^GPUMEM_API/ && match($0, /gpumem_[a-z0-9_]+\(/) { flush(substr($0, RSTART, RLENGTH - 1)) }
END { flush("file") }
' "$srcdir"/include/gpumem/*.h
touch "$tmp/ex/names"
nex=$(wc -l <"$tmp/ex/names")
echo "1..$((12 + nex))"
i=0
t() { i=$((i + 1)); if [ "$1" = 0 ]; then echo "ok $i - $2"; else echo "not ok $i - $2"; sed 's/^/# /' "$tmp/log"; fi; }
: >"$tmp/log"

# Every variable read through lib/env.c's readers (gm_env*("NAME", ...), or a
# name kept in a constant first: static const char name[] = "NAME"), and
# every row of lib/params.c's table (TEXT(NAME, ...), LONG(NAME, ...): GPUMEM_NAME).
{
    grep -ohE 'gm_env(_[a-z]+)?\("[A-Za-z_]+"|name\[\] = "[A-Z_]+"' "$srcdir"/lib/*.c | sed 's/.*"\(.*\)"$/\1/'
    grep -ohE '^ *(TEXT|LONG|SIZE|DOUBLE)\([A-Z_]+,' "$srcdir/lib/params.c" | sed 's/^ *[A-Z]*(\([A-Z_]*\),$/GPUMEM_\1/'
} | sort -u >"$tmp/vars"
missing=
for v in $(cat "$tmp/vars"); do
    grep -q "^\.B $v\$" "$srcdir/doc/gpumem.1" || missing="$missing gpumem.1:$v"
    grep -q "\`$v\`" "$srcdir/doc/environment.md" || missing="$missing environment.md:$v"
done
[ "$(wc -l <"$tmp/vars")" -ge 10 ] && [ -z "$missing" ]; r=$?
echo "variables read: $(tr '\n' ' ' <"$tmp/vars"); not described:$missing" >"$tmp/log"
t $r "gpumem(1) and doc/environment.md describe every environment variable the library reads ($(wc -l <"$tmp/vars"))"

grep -oE 'strcmp\(cmd, "[a-z]+"\)' "$srcdir/tools/gpumem.c" | sed 's/.*, "//; s/")$//' | sort -u >"$tmp/cmds"
missing=
for c in $(cat "$tmp/cmds"); do
    grep -q "^\.B gpumem $c\$" "$srcdir/doc/gpumem.1" && grep -q "^\.B[IR]* \"*$c\b" "$srcdir/doc/gpumem.1" ||
        missing="$missing $c"
done
[ -s "$tmp/cmds" ] && [ -z "$missing" ]; r=$?
echo "subcommands: $(tr '\n' ' ' <"$tmp/cmds"); missing from gpumem(1):$missing" >"$tmp/log"
t $r "gpumem(1) shows every subcommand in SYNOPSIS and COMMANDS"

# gpumem(1)'s examples for a machine without a GPU ask for the simulator, and
# each runs (the built tool, an empty HOME) and exits 0.
sed -n '/^\.SH EXAMPLES/,/^\.SH/p' "$srcdir/doc/gpumem.1" |
    sed -n '/without a GPU/,/^\.fi/p' | grep -v '^[.]' | grep -v 'without a GPU' | sed 's/\\-/-/g' >"$tmp/examples1"
: >"$tmp/log"
while read -r line; do
    case $line in GPUMEM_BACKEND=sim\ *) ;; *) echo "no GPUMEM_BACKEND=sim: $line" >>"$tmp/log" ;; esac
    (unset GPUMEM_BACKEND CUDA_DEVICE; PATH="$builddir/tools:$PATH" HOME="$tmp" sh -c "$line") >/dev/null 2>"$tmp/err" ||
        { echo "exits $?: $line"; sed 's/^/  /' "$tmp/err"; } >>"$tmp/log"
done <"$tmp/examples1"
[ -s "$tmp/examples1" ] && [ ! -s "$tmp/log" ]; t $? "gpumem(1)'s $(wc -l <"$tmp/examples1") examples without a GPU set GPUMEM_BACKEND=sim and succeed"

# gpumem(1)'s list of the members of `gpumem info --json` (and of `info
# --memory --json`, in the same entry) names every member the tool writes
# (with two devices, and with a failing backend for "error").
{ (unset CUDA_DEVICE; HOME="$tmp" GPUMEM_BACKEND=sim GPUMEM_SIM_DEVICES=2 "$builddir/tools/gpumem" info --json)
  (unset CUDA_DEVICE; HOME="$tmp" GPUMEM_BACKEND=sim "$builddir/tools/gpumem" info --memory --json)
  (HOME="$tmp" GPUMEM_BACKEND=none "$builddir/tools/gpumem" info --json); } 2>/dev/null |
    grep -o '"[a-z_]*": ' | tr -d '": ' | sort -u >"$tmp/members"
# the paragraph that lists them: from "prints one JSON object" to the next .TP
sed -n '/prints one JSON object on one line/,/^\.TP/p' "$srcdir/doc/gpumem.1" >"$tmp/json-paragraph"
missing=
for m in $(cat "$tmp/members"); do
    grep -qE "^\.BR? $m( |\$)" "$tmp/json-paragraph" || missing="$missing $m"
done
echo "members: $(tr '\n' ' ' <"$tmp/members"); not in gpumem(1):$missing" >"$tmp/log"
[ "$(wc -l <"$tmp/members")" -ge 10 ] && [ -z "$missing" ]; t $? "gpumem(1) names every member of info --json ($(wc -l <"$tmp/members"))"

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
    render "$srcdir/doc/gpumem.1" "$srcdir/doc/gpumem.7" "$srcdir/doc/gpumem-memory.7"
    t $? "gpumem(1), gpumem(7) and gpumem-memory(7) render without warnings"
fi

# gpumem(7)'s HEADERS list every public header.
missing=
for h in "$srcdir"/include/gpumem/*.h; do
    grep -q "^\.B <gpumem/${h##*/}>\$" "$srcdir/doc/gpumem.7" || missing="$missing ${h##*/}"
done
echo "headers missing from gpumem(7):$missing" >"$tmp/log"
[ -z "$missing" ]; t $? "gpumem(7) lists every header of include/gpumem"

# Every (3) reference in them names an exported function.
sed -n 's/^ *\(gpumem_[a-z0-9_]*\);.*/\1/p' "$srcdir/lib/libgpumem.map" | sort -u >"$tmp/functions"
grep -ohE 'gpumem_[a-z0-9_]+ \(3\)' "$srcdir/doc/gpumem.1" "$srcdir/doc/gpumem.7" "$srcdir/doc/gpumem-memory.7" |
    sed 's/ (3)//' | sort -u >"$tmp/refs"
comm -23 "$tmp/refs" "$tmp/functions" >"$tmp/log"
[ -s "$tmp/refs" ] && [ ! -s "$tmp/log" ]; t $? "gpumem(1), gpumem(7) and gpumem-memory(7) refer only to exported functions"

# The examples compile, run and print what they say.
if [ "$nex" -lt 8 ]; then
    echo "not ok $((i + 1)) - only $nex examples found in the headers (the central calls have 8)"
else
    echo "ok $((i + 1)) - $nex examples in the headers"
fi
i=$((i + 1))
home="$tmp/home"
mkdir "$home"
lib="$builddir/lib/.libs"
while read -r n fn header; do
    src="$tmp/ex/ex$n.c"
    h=${header#"$srcdir"/}
    where="the example of $fn() in $h"
    [ "$fn" = file ] && where="the example in $h's own comment"
    sed -n 's|.*// prints: ||p' "$src" >"$tmp/expected"
    if ! grep -q '^int main' "$src"; then
        echo "$where is not a whole program (no int main)" >"$tmp/log"; r=1
    elif ! $CC -std=c11 -Wall -Wextra -Werror ${GPUMEM_TEST_CFLAGS:-} -I"$srcdir/include" -I"$builddir/include" \
        "$src" -o "$tmp/ex/ex$n" ${GPUMEM_TEST_LDFLAGS:-} -L"$lib" -lgpumem >"$tmp/log" 2>&1; then
        r=1
    elif ! (unset CUDA_DEVICE; HOME="$home" GPUMEM_BACKEND="${GPUMEM_BACKEND:-sim}" LD_LIBRARY_PATH="$lib" \
        "$tmp/ex/ex$n") >"$tmp/out" 2>"$tmp/log"; then
        echo "it exited with a failure" >>"$tmp/log"; r=1
    elif ! cmp -s "$tmp/out" "$tmp/expected"; then
        { echo "it printed:"; cat "$tmp/out"; echo "its // prints: comments say:"; cat "$tmp/expected"; } >"$tmp/log"
        r=1
    else
        r=0
    fi
    t $r "$where compiles, runs and prints what it says"
done <"$tmp/ex/names"
: >"$tmp/log"

# The man3 pages: the build's, else the tarball's.
dir="$builddir/doc/man3"
[ -f "$builddir/doc/man3.stamp" ] || dir="$srcdir/doc/man3"
if [ ! -d "$dir" ]; then
    for n in 1 2 3 4; do echo "ok $((i + n)) # SKIP no man3 pages: configure found no doxygen or no python3"; done
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
: >"$tmp/log"
while read -r n fn header; do
    [ "$fn" = file ] && continue
    grep -q '^\.SH EXAMPLES' "$dir/$fn.3" || echo "$dir/$fn.3 has no EXAMPLES section" >>"$tmp/log"
done <"$tmp/ex/names"
[ ! -s "$tmp/log" ]; t $? "the page of each function with an example has an EXAMPLES section"
if command -v groff >/dev/null 2>&1; then
    render "$dir"/*.3; t $? "every man3 page renders without warnings"
else
    i=$((i + 1)); echo "ok $i # SKIP groff is not installed"
fi
