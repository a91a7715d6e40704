# trace-lib.sh - the preamble the trace tool's tests share, sourced by
# tests/test-trace-*.sh after they set trace_test (the name part of their
# temporary directory) and, if they like, trace_show (how many lines of
# $tmp/out and $tmp/err a failed result shows; 40 unless set):
#   builddir, srcdir   the build and source trees (GPUMEM_TEST_BUILDDIR,
#                      GPUMEM_TEST_SRCDIR, as make check sets them)
#   gpumem, workload   tools/gpumem and tests/trace-workload
#   tmp                a temporary directory, removed at exit
#   t STATUS TEXT      one TAP result, numbered by i: ok when STATUS is 0,
#                      else not ok, with $tmp/out and $tmp/err as comments
#   skip REASON        one skipped TAP result
# GPUMEM_TRACE and GPUMEM_TRACE_STACKS are unset, so that the tests trace
# only what they ask for.
builddir=${GPUMEM_TEST_BUILDDIR:-.}
srcdir=${GPUMEM_TEST_SRCDIR:-$(dirname "$0")/..}
gpumem="$builddir/tools/gpumem"
workload="$builddir/tests/trace-workload"
unset GPUMEM_TRACE GPUMEM_TRACE_STACKS
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-$trace_test.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

i=0
t() {
    i=$((i + 1))
    if [ "$1" = 0 ]; then
        echo "ok $i - $2"
    else
        echo "not ok $i - $2"
        for f in "$tmp/out" "$tmp/err"; do [ -f "$f" ] && sed 's/^/# /' "$f" | head -"${trace_show:-40}"; done
    fi
}
skip() { i=$((i + 1)); echo "ok $i # SKIP $1"; }
