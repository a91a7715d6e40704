#!/bin/sh
# Interoperation with real clients: tests/interop/*.py load the built
# libgpumem through ctypes next to PyTorch, CuPy and numba on a GPU.
# Skipped (with the reason) unless GPUMEM_BACKEND=cuda and python3 is there;
# each script skips itself when its package is missing.
srcdir=${GPUMEM_TEST_SRCDIR:-.}
builddir=${GPUMEM_TEST_BUILDDIR:-.}
if [ "${GPUMEM_BACKEND:-sim}" != cuda ]; then
    echo "1..0 # SKIP the interop scripts need a GPU (GPUMEM_BACKEND=cuda), not the ${GPUMEM_BACKEND:-sim} backend"
    exit 0
fi
if ! command -v python3 >/dev/null 2>&1; then
    echo "1..0 # SKIP no python3"
    exit 0
fi
so="$builddir/lib/.libs/libgpumem.so.1"
if [ ! -f "$so" ]; then
    echo "1..0 # SKIP no shared library at $so"
    exit 0
fi
GPUMEM_LIBRARY=$(cd "$(dirname "$so")" && pwd)/libgpumem.so.1
export GPUMEM_LIBRARY
set -- test_torch_dlpack.py test_cupy_dlpack.py test_numba_cai.py test_ipc.py
echo "1..$#"
n=0
for script in "$@"; do
    n=$((n + 1))
    out=$(python3 "$srcdir/tests/interop/$script" 2>&1)
    rc=$?
    echo "$out" | sed 's/^/# /'
    if [ $rc -eq 77 ]; then
        reason=$(echo "$out" | sed -n 's/^SKIP: //p' | head -n 1)
        echo "ok $n - $script # SKIP ${reason:-skipped}"
    elif [ $rc -eq 0 ]; then
        echo "ok $n - $script"
    else
        echo "not ok $n - $script (exit $rc)"
    fi
done
