#!/bin/sh
# The Python package (python/gpumem) against the built library on the
# simulator: tests/python/test_*.py through unittest, written as TAP.
# The numba plugin's tests (test_numba.py) run with $PYTHON when it can
# import numba, else with $NUMBA_PYTHON (Debian's /usr/bin/python3, which
# python3-numba is installed for) when that one can, the package being pure
# Python; they say why they skip only when neither can.  No python3
# (configure found none): skipped.
srcdir=${GPUMEM_TEST_SRCDIR:-.}
builddir=${GPUMEM_TEST_BUILDDIR:-.}
PYTHON=${PYTHON:-python3}
if [ -n "${GPUMEM_TEST_SANITIZER:-}" ]; then
    # python3 is not built with the sanitizer: it cannot load a library that
    # is (ASan's runtime must come first), and the C tier is checked under
    # the sanitizers by tests/test-foreign
    echo "1..0 # SKIP python3 cannot load the $GPUMEM_TEST_SANITIZER build of the library"
    exit 0
fi
if [ "$PYTHON" = : ] || ! command -v "$PYTHON" >/dev/null 2>&1; then
    echo "1..0 # SKIP no python3 (configure found none)"
    exit 0
fi
so="$builddir/lib/.libs/libgpumem.so.1"
if [ ! -f "$so" ]; then
    echo "1..0 # SKIP no shared library (--disable-shared)"
    exit 0
fi
GPUMEM_BACKEND=${GPUMEM_BACKEND:-sim}
GPUMEM_LIBRARY="$so"
PYTHONPATH="$srcdir/python${PYTHONPATH:+:$PYTHONPATH}"
PYTHONDONTWRITEBYTECODE=1
export GPUMEM_BACKEND GPUMEM_LIBRARY PYTHONPATH PYTHONDONTWRITEBYTECODE
tap="$srcdir/tests/python/tap.py"
has_numba() { "$1" -c 'from numba.cuda.cudadrv import driver' >/dev/null 2>&1; }
NUMBA_PYTHON=${NUMBA_PYTHON:-/usr/bin/python3}
if has_numba "$PYTHON" || ! command -v "$NUMBA_PYTHON" >/dev/null 2>&1 || ! has_numba "$NUMBA_PYTHON"; then
    exec "$PYTHON" "$tap"
fi
# Two runs, one TAP stream: the second's tests numbered after the first's.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-test-python.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
"$PYTHON" "$tap" --except test_numba.py >"$tmp/main" 2>&1
rc1=$?
echo "# test_numba.py with $NUMBA_PYTHON ($PYTHON has no numba)" >"$tmp/numba"
"$NUMBA_PYTHON" "$tap" --only test_numba.py >>"$tmp/numba" 2>&1
rc2=$?
n1=$(sed -n 's/^1\.\.\([0-9]*\)$/\1/p' "$tmp/main")
n2=$(sed -n 's/^1\.\.\([0-9]*\)$/\1/p' "$tmp/numba")
echo "1..$(( ${n1:-0} + ${n2:-0} ))"
grep -v '^1\.\.[0-9]*$' "$tmp/main"
grep -v '^1\.\.[0-9]*$' "$tmp/numba" |
    awk -v off="${n1:-0}" '/^(not )?ok [0-9]+/ { i = ($1 == "ok") ? 2 : 3; $i = $i + off } { print }'
[ "$rc1" = 0 ] && [ "$rc2" = 0 ] && [ -n "$n1" ] && [ -n "$n2" ]
