#!/bin/sh
# The Python package (python/gpumem) against the built library on the
# simulator: tests/python/test_*.py through unittest, written as TAP.
# The numba plugin's tests run where numba can be imported and say why
# they skip elsewhere.  No python3 (configure found none): skipped.
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
GPUMEM_BACKEND=${GPUMEM_BACKEND:-sim} GPUMEM_LIBRARY="$so" \
    PYTHONPATH="$srcdir/python${PYTHONPATH:+:$PYTHONPATH}" PYTHONDONTWRITEBYTECODE=1 \
    exec "$PYTHON" "$srcdir/tests/python/tap.py"
