# snippet.sh - sourced by the shell tests that hold a document's code to a
# file of the tree.  The test sets srcdir and tmp, and defines
# result STATUS DESCRIPTION LOG (one TAP line).

# readme_snippet MARKER: the README's indented block after the line that
# holds MARKER, each line's leading blanks dropped.
readme_snippet() {
    awk -v m="$1" 'index($0, m) {f = 1; next} f && /^    / {print; g = 1; next} f && g && !/^$/ {exit}' \
        "$srcdir/README" | sed 's/^ *//'
}

# snippet_check SNIPPET FILE DESCRIPTION: one result, whether the file
# SNIPPET has lines and each is a line of FILE (leading blanks dropped on
# both sides); its log lists the lines that are not.
snippet_check() {
    sed 's/^ *//' "$2" >"$tmp/snippet-source"
    : >"$tmp/missing"
    while IFS= read -r line; do
        grep -qxF -- "$line" "$tmp/snippet-source" || printf '%s\n' "$line" >>"$tmp/missing"
    done <"$1"
    { echo "(snippet: $(wc -l <"$1") lines; not in ${2#"$srcdir"/}:)"; cat "$tmp/missing"; } >"$tmp/log"
    [ -s "$1" ] && [ ! -s "$tmp/missing" ]
    result $? "$3" "$tmp/log"
}
