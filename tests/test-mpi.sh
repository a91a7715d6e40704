#!/bin/sh
# examples/mpi/ring under mpirun: 4 ranks pass their device arrays around a
# ring through IPC handles, through a virtual-memory pool's chunks sent over
# Unix sockets (gpumem/pool_ipc.h) and through MPI messages, and exchange the
# strided halo columns of a field (gpumem_array_pack, MPI_Isend and
# MPI_Irecv, gpumem_array_unpack), checked by value (the
# example exits nonzero on any wrong element), on one simulated device and
# on two (GPUMEM_SIM_DEVICES=2: neighbours on different devices).  Also:
# doc/mpi.md's code is the example's.  Without Open MPI (configure did not
# find it) the runs are skipped, saying so.
srcdir=${GPUMEM_TEST_SRCDIR:-.}
builddir=${GPUMEM_TEST_BUILDDIR:-.}
echo "1..5"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-mpi.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
i=0
result() { # ok?, description, log
    i=$((i + 1))
    if [ "$1" = 0 ]; then echo "ok $i - $2"; else echo "not ok $i - $2"; sed 's/^/# /' "$3"; fi
}
skip() { i=$((i + 1)); echo "ok $i # SKIP $1"; }

# doc/mpi.md's C block(s): every line is a line of the example
. "$srcdir/tests/snippet.sh"
awk '/^```c/ {f = 1; next} /^```/ {f = 0} f' "$srcdir/doc/mpi.md" | sed 's/^ *//' | grep -v '^$' | grep -v '^\.\.\.$' >"$tmp/snippet"
snippet_check "$tmp/snippet" "$srcdir/examples/mpi/ring.c" "doc/mpi.md shows lines of examples/mpi/ring.c"

if [ "$GPUMEM_HAVE_MPI" != yes ] || [ ! -x "$builddir/examples/mpi/ring" ] || [ -z "$MPIRUN" ]; then
    for t in 1 2 3 4; do skip "no Open MPI (configure found no ompi-c or mpicc; install libopenmpi-dev openmpi-bin)"; done
    exit 0
fi
if [ -n "$GPUMEM_TEST_SANITIZER" ]; then
    for t in 1 2 3 4; do skip "a $GPUMEM_TEST_SANITIZER build: Open MPI is not built with the sanitizer"; done
    exit 0
fi

# CI runs as root in a container without ssh: local launch, shared memory
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_plm=isolated OMPI_MCA_btl=self,vader \
    OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM OMPI_MCA_plm OMPI_MCA_btl OMPI_MCA_rmaps_base_oversubscribe
export GPUMEM_BACKEND="${GPUMEM_BACKEND:-sim}"

ring() { # log, extra environment...
    log=$1
    shift
    env "$@" timeout 120 "$MPIRUN" -np 4 --oversubscribe "$builddir/examples/mpi/ring" >"$log" 2>&1
}

ring "$tmp/one" GPUMEM_SIM_DEVICES=1
rc=$?
echo "(exit $rc)" >>"$tmp/one"
result $rc "mpirun -np 4: the ring passes (GPUMEM_BACKEND=$GPUMEM_BACKEND)" "$tmp/one"
n=$(grep -c 'IPC from rank [0-9]* ok, pool IPC ok, .* message ok, halo ok' "$tmp/one")
[ "$n" = 4 ] && grep -q 'ring of 4 ranks: PASS' "$tmp/one"
result $? "each of the 4 ranks read its left neighbour's values through IPC, pool IPC and a message, and its halo columns" "$tmp/one"

if [ "$GPUMEM_BACKEND" = sim ]; then
    ring "$tmp/two" GPUMEM_SIM_DEVICES=2
    rc=$?
    echo "(exit $rc)" >>"$tmp/two"
    result $rc "GPUMEM_SIM_DEVICES=2: the ring passes with neighbours on different devices" "$tmp/two"
    [ "$(grep -c 'device 1 of 2: IPC from rank [0-9]* ok' "$tmp/two")" = 2 ] &&
        [ "$(grep -c 'device 0 of 2: IPC from rank [0-9]* ok' "$tmp/two")" = 2 ]
    result $? "two ranks on each device" "$tmp/two"
else
    skip "GPUMEM_SIM_DEVICES is the simulator's"
    skip "GPUMEM_SIM_DEVICES is the simulator's"
fi
