#!/bin/sh
# The MPI example on a GPU machine (issue 14, "Several processes through MPI"):
#   - 2 ranks on one GPU (both open each other's memory through CUDA IPC);
#   - with two or more GPUs: 2 ranks on two GPUs (rank % device_count; the
#     IPC handle opens as a peer mapping) and 4 ranks, two per GPU;
#   - then tests/test-ipc, tests/test-ipc-peer and tests/test-mpi.sh with
#     GPUMEM_BACKEND=cuda.
# Needs Open MPI (mpicc, mpirun: the H100/H200 machines have Ubuntu's) and a
# build tree whose configure found it ("checking for Open MPI ... yes"); the
# machines have no libtool, so carry configure, Makefile.in, aclocal.m4,
# config.h.in, build-aux and m4 generated here.  Every run must print
# "ring of N ranks: PASS" and exit 0.
# Usage: bench/mpi-gpu.sh [builddir]
b=${1:-.}
ring="$b/examples/mpi/ring"
if [ ! -x "$ring" ]; then
    echo "no $ring: configure found no Open MPI, or make check was not run (make -C $b check TESTS=)" >&2
    exit 1
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 GPUMEM_BACKEND=cuda
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
echo "== $ngpu GPU(s)"
fail=0
run() { # ranks, what, environment...
    n=$1
    echo "== mpirun -np $n: $2"
    shift 2
    env "$@" timeout 300 mpirun -np "$n" --oversubscribe "$ring" || { echo "FAILED (exit $?)"; fail=1; }
}
if [ "$ngpu" -ge 2 ]; then
    run 2 "2 ranks on two GPUs"
    run 4 "4 ranks, two per GPU"
    run 2 "2 ranks on one GPU" CUDA_VISIBLE_DEVICES=0
else
    run 2 "2 ranks on one GPU"
fi
echo "== make check (GPUMEM_BACKEND=cuda): IPC and MPI tests"
make -C "$b" check TESTS='tests/test-ipc tests/test-ipc-peer tests/test-mpi.sh' || fail=1
exit $fail
