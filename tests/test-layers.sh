#!/bin/sh
# test-layers.sh: data flows down the layers of doc/design.md, never up.
#
# The layer of every file of lib/ (lib/kernels/ included) is in the layer
# table of doc/design.md, which this test reads: a file of lib/ that is not
# in it, or is in it twice, fails, and so does a row naming no file.  Then,
# on the built library (lib/.libs/libgpumem-core.a, the objects that make
# libgpumem):
#   - every undefined symbol of an object (nm -u) must be defined by an
#     object of the same layer or below.  A public gpumem_* function counts
#     as its object's layer like any other, so calling one of a higher layer
#     fails too.  A callback called through a function pointer is no symbol
#     reference, and is how a lower layer reaches a higher one;
#   - a private header may name (outside comments and struct, union and enum
#     tags) no function or variable that an object of a higher layer defines;
#   - a file may include the private headers of its own layer and below;
#   - nothing registers itself: lib/wiring.c holds the library's only
#     constructor and destructor, its table names every context hook of
#     lib/, its life table every process-lifetime hook (lifecycle.h), and
#     no other file calls atexit, pthread_atfork or pthread_key_create;
#   - doc/design.md's wiring table and doc/mainpage.md's list of layers
#     agree with lib/wiring.c and with the layer table.
# First the test checks itself: the symbol check must catch an upward call
# between two small objects, and let a callback pass.
srcdir=${GPUMEM_TEST_SRCDIR:-$(dirname "$0")/..}
builddir=${GPUMEM_TEST_BUILDDIR:-.}
lib=$srcdir/lib
design=$srcdir/doc/design.md
NM=${NM:-nm}
CC=${CC:-cc}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/test-layers.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

if ! $NM --version >/dev/null 2>&1; then
    echo "1..0 # SKIP no nm ($NM)"
    exit 0
fi

# ---- the layer table: "file layer name" lines, file relative to lib/ -------
awk '
/<!-- layer table/ { on = 1; next }
/<!-- end of the layer table/ { on = 0; next }
on && /^\|[ \t]*[0-9]+[ \t]*\|/ {
    n = split($0, cell, "|")
    layer = cell[2]; gsub(/[ \t*]/, "", layer)
    name = cell[3]; gsub(/^[ \t]+|[ \t]+$/, "", name)
    files = cell[n - 1]
    count = 0
    while (match(files, /`[^`]+`/)) {
        print substr(files, RSTART + 1, RLENGTH - 2), layer, name
        files = substr(files, RSTART + RLENGTH)
        count++
    }
    if (count == 0)
        print "-", layer, name
}' "$design" >"$tmp/table"

layer_of() { awk -v f="$1" '$1 == f { print $2; exit }' "$tmp/table"; }
name_of() { awk -v l="$1" '$2 == l { sub(/^[^ ]+ [^ ]+ /, ""); print; exit }' "$tmp/table"; }

# ---- the symbol check, on `nm -B` output of several objects ------------------
# symcheck TABLE NMOUT: one line "file symbol definer layer-of-definer" per
# upward reference, "NOSOURCE member" per object without a source in TABLE,
# and "OBJECT file" per object seen.  An object libgpumem_core_la-foo.o is
# lib's foo.c or kernels/foo.c (base names are unique: the static archive is
# made with ar x, which would lose one of two equal names).
symcheck() {
    awk '
    FNR == NR {
        layer[$1] = $2
        base = $1; sub(/.*\//, "", base)
        if (base ~ /\.c$/) { sub(/\.c$/, "", base); src[base] = $1 }
        next
    }
    /^$/ { next }
    /:$/ {
        m = $0; sub(/:$/, "", m); sub(/.*\//, "", m)
        stem = m; sub(/\.o$/, "", stem); sub(/^.*_la-/, "", stem)
        file[m] = (stem in src) ? src[stem] : ""
        if (file[m] == "") print "NOSOURCE", m; else print "OBJECT", file[m]
        next
    }
    NF == 2 && ($1 == "U" || $1 == "w") { nu++; um[nu] = m; us[nu] = $2; next }
    NF == 3 && $2 ~ /^[ABCDGIRSTVW]$/ { def[$3] = m; next }
    END {
        for (i = 1; i <= nu; i++) {
            m = um[i]; s = us[i]
            if (!(s in def) || file[m] == "" || file[def[s]] == "") continue
            d = file[def[s]]
            if (layer[d] + 0 > layer[file[m]] + 0) print file[m], s, d, layer[d]
        }
    }' "$1" "$2"
}

# defs TABLE NMOUT: "symbol file layer" for every global symbol defined.
defs() {
    awk '
    FNR == NR {
        layer[$1] = $2
        base = $1; sub(/.*\//, "", base)
        if (base ~ /\.c$/) { sub(/\.c$/, "", base); src[base] = $1 }
        next
    }
    /:$/ { m = $0; sub(/:$/, "", m); sub(/.*\//, "", m); sub(/\.o$/, "", m); sub(/^.*_la-/, "", m); f = src[m]; next }
    NF == 3 && $2 ~ /^[ABCDGIRSTVW]$/ && f != "" { print $3, f, layer[f] }' "$1" "$2"
}

# The identifiers of a C file outside comments, strings and characters,
# and outside struct, union and enum tags (struct gpumem_pool_stats names a
# type, not the function gpumem_pool_stats).
identifiers() {
    awk '
    {
        out = ""; n = length($0); i = 1
        while (i <= n) {
            c = substr($0, i, 1); c2 = substr($0, i, 2)
            if (incomment) { if (c2 == "*/") { incomment = 0; i += 2 } else i++; continue }
            if (quote != "") {
                if (c == "\\") { i += 2; continue }
                if (c == quote) quote = ""
                i++; continue
            }
            if (c2 == "/*") { incomment = 1; out = out " "; i += 2; continue }
            if (c2 == "//") break
            if (c == "\"" || c == "'\''") { quote = c; out = out " "; i++; continue }
            out = out c; i++
        }
        quote = ""
        gsub(/(^|[^A-Za-z0-9_])(struct|union|enum)[ \t]+[A-Za-z_][A-Za-z0-9_]*/, " ", out)
        gsub(/[^A-Za-z0-9_]+/, " ", out)
        k = split(out, w, " ")
        for (j = 1; j <= k; j++) if (w[j] ~ /^[A-Za-z_]/) print w[j]
    }' "$1" | sort -u
}

# ---- the test checks itself ---------------------------------------------------
mkdir "$tmp/self"
cat >"$tmp/self/low.c" <<'EOF'
void gm_self_high(void);
void gm_self_low_calls_up(void);
void gm_self_low_runs(void (*fn)(void));
void gm_self_low_calls_up(void) { gm_self_high(); }
void gm_self_low_runs(void (*fn)(void)) { fn(); }
EOF
cat >"$tmp/self/high.c" <<'EOF'
void gm_self_low_runs(void (*fn)(void));
void gm_self_high(void);
static void callback(void) {}
void gm_self_high(void) { gm_self_low_runs(callback); }
EOF
printf 'low.c 0 low\nhigh.c 1 high\n' >"$tmp/self/table"
selfcheck=""
if (cd "$tmp/self" && $CC -c low.c && $CC -c high.c) >"$tmp/self/cc.log" 2>&1; then
    $NM -B "$tmp/self/low.o" "$tmp/self/high.o" >"$tmp/self/nm" &&
        selfcheck=$(symcheck "$tmp/self/table" "$tmp/self/nm" | grep -v '^OBJECT ')
fi

# ---- the built library ----------------------------------------------------------
archive=$builddir/lib/.libs/libgpumem-core.a
if [ ! -f "$archive" ]; then
    echo "1..0 # SKIP $archive is not built"
    exit 0
fi
$NM -B "$archive" >"$tmp/nm" || { echo "Bail out! $NM $archive failed"; exit 1; }
symcheck "$tmp/table" "$tmp/nm" >"$tmp/up"
defs "$tmp/table" "$tmp/nm" >"$tmp/defs"

names=$(cd "$lib" && ls *.c *.h *.cu kernels/*.c kernels/*.h kernels/*.cu 2>/dev/null | sort -u)
rows=$(awk '$1 != "-" { print $1 }' "$tmp/table")
n=10
for f in $names; do n=$((n + 1)); done
echo "1..$n"
i=0
status=0
ok() {
    i=$((i + 1))
    if [ -z "$1" ]; then
        echo "ok $i - $2"
    else
        echo "not ok $i - $2:$1"
        status=1
    fi
}

# 1: the test catches an upward call and lets a callback pass.
if [ "$selfcheck" = "low.c gm_self_high high.c 1" ]; then
    ok "" "self-test: the symbol check catches a call to a higher layer and lets a callback pass"
else
    ok " it found [$selfcheck] in two test objects ($(cat "$tmp/self/cc.log"))" \
        "self-test: the symbol check catches a call to a higher layer and lets a callback pass"
fi

# 2: the table itself.
bad=""
for f in $rows; do
    [ -f "$lib/$f" ] || bad="$bad $f(no such file)"
done
bad="$bad$(awk '$1 != "-" { c[$1]++ } END { for (f in c) if (c[f] > 1) printf " %s(%d rows)", f, c[f] }' "$tmp/table")"
bad="$bad$(awk '$1 == "-" { printf " layer %s(no files)", $2 } $2 !~ /^[0-9]+$/ { printf " %s(layer %s)", $1, $2 }' "$tmp/table")"
[ -s "$tmp/table" ] || bad=" no layer table in $design"
ok "$bad" "doc/design.md's layer table names each existing file of lib/ once"

# 3: every object of the library has a source in the table.
bad=$(awk '$1 == "NOSOURCE" { printf " %s", $2 }' "$tmp/up")
[ -n "$(awk '$1 == "OBJECT"' "$tmp/up")" ] || bad=" no object in $archive"
ok "$bad" "every object of $archive comes from a file of the layer table"

wired_life=$(sed -n '/life_hooks\[\] *= *{/,/};/p' "$lib/wiring.c" | grep -o '&gm_[A-Za-z0-9_]*_life' | tr -d '&')

# 4: one constructor, in lib/wiring.c.
bad=""
for f in $names; do
    [ "$f" = wiring.c ] && continue
    grep -q '__attribute__ *( *( *constructor' "$lib/$f" && bad="$bad $f"
done
grep -q '__attribute__ *( *( *constructor' "$lib/wiring.c" || bad="$bad wiring.c(has none)"
ok "$bad" "lib/wiring.c holds the library's only constructor"

# 4b: the process-lifetime hooks: only lib/wiring.c registers them (atexit,
# at_quick_exit, pthread_atfork, pthread_key_create, a destructor), and its
# life table names every gm_life_hook of lib/, in the order of doc/design.md.
bad=""
for f in $names; do
    [ "$f" = wiring.c ] && continue
    sed 's,/\*.*\*/,,g' "$lib/$f" | grep -qE '(^|[^A-Za-z0-9_])(atexit|at_quick_exit|pthread_atfork|pthread_key_create) *\(|__attribute__ *\( *\( *destructor' &&
        bad="$bad $f"
done
ok "$bad" "no file of lib/ but wiring.c registers an exit, fork or thread-exit hook or a destructor"
bad=""
for h in $(cd "$lib" && cat $names | sed -n 's/^const gm_life_hook \([A-Za-z0-9_]*\) *=.*/\1/p'); do
    echo "$wired_life" | grep -qx "$h" || bad="$bad $h"
done
[ -n "$wired_life" ] || bad=" no life_hooks[] in lib/wiring.c"
ok "$bad" "lib/wiring.c's life table names every process-lifetime hook that lib/ defines"
doc=$(awk '/^## /{ on = ($0 == "## Wiring") } on' "$design" | grep -o '^| L[0-9]* | `gm_[A-Za-z0-9_]*_life`' |
    sed 's/.*`\(.*\)`/\1/' | tr '\n' ' ')
code=$(echo "$wired_life" | tr '\n' ' ')
bad=""
[ -n "$code" ] && [ "$code" = "$doc" ] || bad=" wiring.c has [$code], doc/design.md [$doc]"
ok "$bad" "doc/design.md's wiring table lists lib/wiring.c's process-lifetime hooks in their order"

# 5: lib/wiring.c's table names every context hook.
bad=""
wired=$(identifiers "$lib/wiring.c")
for h in $(cd "$lib" && cat $names | sed -n 's/^const gm_context_hook \([A-Za-z0-9_]*\) *=.*/\1/p'); do
    echo "$wired" | grep -qx "$h" || bad="$bad $h"
done
ok "$bad" "lib/wiring.c wires every context hook that lib/ defines"

# 6: doc/design.md's wiring table is wiring.c's, in its order.
code=$(sed -n '/context_hooks\[\] *= *{/,/};/p' "$lib/wiring.c" | grep -o '&gm_[A-Za-z0-9_]*_hook' | tr -d '&' |
    tr '\n' ' ')
doc=$(awk '/^## /{ on = ($0 == "## Wiring") } on' "$design" | grep -o '^| [0-9]* | `gm_[A-Za-z0-9_]*_hook`' |
    sed 's/.*`\(.*\)`/\1/' | tr '\n' ' ')
bad=""
[ -n "$code" ] && [ "$code" = "$doc" ] || bad=" wiring.c has [$code], doc/design.md [$doc]"
ok "$bad" "doc/design.md's wiring table lists lib/wiring.c's hooks in their order"

# 7: doc/mainpage.md lists the same layers, from the top.
want=$(awk '{ print $2 }' "$tmp/table" | sort -un | sort -rn | while read -r l; do name_of "$l"; done | tr '\n' '|')
have=$(awk '/^## /{ on = ($0 == "## Layers") } on' "$srcdir/doc/mainpage.md" |
    sed -n 's/^[0-9][0-9]*\. \*\*\([^*]*\)\*\*.*/\1/p' | tr '\n' '|')
bad=""
[ "$want" = "$have" ] || bad=" doc/design.md has [$want], doc/mainpage.md [$have]"
ok "$bad" "doc/mainpage.md lists the layers of doc/design.md, from the top"

# One line per file: its layer, its symbols, its includes.
for f in $names; do
    mine=$(layer_of "$f")
    if [ -z "$mine" ]; then
        ok " it is in no row" "lib/$f has a layer in doc/design.md's layer table"
        continue
    fi
    what="lib/$f ($(name_of "$mine"), layer $mine) uses its own layer and below"
    bad=""
    case $f in
    *.c)
        bad=$(awk -v f="$f" '$1 == f { printf " calls %s of %s (layer %s)", $2, $3, $4 }' "$tmp/up")
        awk -v f="$f" '$1 == "OBJECT" && $2 == f { found = 1 } END { exit !found }' "$tmp/up" ||
            bad="$bad no object in the library"
        ;;
    *.h)
        bad=$(identifiers "$lib/$f" | awk -v l="$mine" 'FNR == NR { fl[$1] = $2; ly[$1] = $3; next }
            ($1 in ly) && ly[$1] + 0 > l + 0 { printf " names %s of %s (layer %s)", $1, fl[$1], ly[$1] }' \
            "$tmp/defs" -)
        ;;
    esac
    dir=$(dirname "$f")
    for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$lib/$f"); do
        if [ -f "$lib/$inc" ]; then
            path=$inc
        elif [ -f "$lib/$dir/$inc" ]; then
            path=$dir/$inc
        else
            continue # config.h, a public header
        fi
        theirs=$(layer_of "$path")
        if [ -z "$theirs" ]; then
            bad="$bad includes $path (no layer)"
        elif [ "$theirs" -gt "$mine" ]; then
            bad="$bad includes $path (layer $theirs)"
        fi
    done
    ok "$bad" "$what"
done
exit $status
