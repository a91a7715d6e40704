/*
 * ring.c - gpumem device arrays passed around a ring of MPI ranks.
 *
 * Each rank takes device rank % device_count and fills a device array with
 * values of its own (1000 * rank + i).  Then, twice around the ring:
 *
 *  1. IPC (ranks on one node): every rank exports its array
 *     (gpumem_ipc_get_handle), the handles go to every rank
 *     (MPI_Allgather of plain bytes), each rank opens its left neighbour's
 *     array (gpumem_ipc_open) and copies it into an array of its own, with no
 *     MPI message carrying the data.
 *  2. MPI messages: each rank sends its array to the right.  A CUDA-aware MPI
 *     (MPIX_Query_cuda_support() answers 1) takes the device pointer itself;
 *     any other MPI gets the bytes through a pinned host array, since it
 *     would read a device address as host memory (a crash or garbage).
 *
 * Both results are checked by value; the exit status is 1 on any mismatch or
 * error, so `mpirun` reports a failed job.  doc/mpi.md explains the calls.
 *
 * Build: make (pkg-config ompi-c gpumem).  Run: mpirun -np 4 ./ring
 * (GPUMEM_BACKEND=sim runs it without a GPU).
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h> /* MPIX_Query_cuda_support */
#endif

#include <gpumem.h>

enum { N = 1 << 16 };

static int rank = 0;

/* Prints a failed call's message and ends the whole job. */
static void check(gpumem_status st, const char *what)
{
    if (st != GPUMEM_OK) {
        fprintf(stderr, "rank %d: %s: %s\n", rank, what, gpumem_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* Whether the MPI library reads device pointers (and the backend has real
 * ones: the simulator's device addresses mean nothing to MPI). */
static int cuda_aware(void)
{
    int aware = 0;
#if defined(OMPI_HAVE_MPI_EXT_CUDA) && OMPI_HAVE_MPI_EXT_CUDA
    aware = MPIX_Query_cuda_support();
#endif
    const char *backend = NULL;
    return aware && gpumem_backend(&backend) == GPUMEM_OK && strcmp(backend, "cuda") == 0;
}

/* The elements of dev that differ from 1000 * from + i. */
static long mismatches(gpumem_array *dev, int from)
{
    static int32_t v[N];
    gpumem_array *host = NULL;
    check(gpumem_host_array_wrap(v, 1, (int64_t[]){N}, NULL, GPUMEM_DTYPE_OF(v[0]), &host), "gpumem_host_array_wrap");
    check(gpumem_copy_to_host(dev, host, NULL), "gpumem_copy_to_host");
    gpumem_array_release(host);
    long bad = 0;
    for (int i = 0; i < N; i++)
        bad += v[i] != 1000 * from + i;
    return bad;
}

int main(int argc, char **argv)
{
    int size = 0, ndev = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int left = (rank + size - 1) % size, right = (rank + 1) % size;

    check(gpumem_device_count(&ndev), "gpumem_device_count");
    if (ndev == 0) {
        fprintf(stderr, "rank %d: no device\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int device = rank % ndev;
    gpumem_context *ctx = NULL;
    check(gpumem_context_create(device, &ctx), "gpumem_context_create");
    const gpumem_dtype *i32 = gpumem_dtype_builtin(GPUMEM_INT32);

    /* this rank's values, on its device */
    static int32_t v[N];
    for (int i = 0; i < N; i++)
        v[i] = 1000 * rank + i;
    gpumem_array *host = NULL, *mine = NULL, *got = NULL;
    check(gpumem_host_array_wrap(v, 1, (int64_t[]){N}, NULL, i32, &host), "gpumem_host_array_wrap");
    check(gpumem_to_device(ctx, host, NULL, 0, &mine), "gpumem_to_device");
    gpumem_array_release(host);
    check(gpumem_device_array_like(ctx, mine, NULL, &got), "gpumem_device_array_like");

    /* 1. IPC: open the left neighbour's array and copy it */
    gpumem_ipc_handle *all = malloc((size_t)size * sizeof *all);
    gpumem_ipc_handle h;
    if (all == NULL)
        MPI_Abort(MPI_COMM_WORLD, 1);
    check(gpumem_ipc_get_handle(mine, &h), "gpumem_ipc_get_handle");
    MPI_Allgather(&h, sizeof h, MPI_BYTE, all, sizeof h, MPI_BYTE, MPI_COMM_WORLD);
    if (left != rank) { /* one rank alone is its own neighbour: no IPC in a process */
        gpumem_array *theirs = NULL;
        check(gpumem_ipc_open(ctx, &all[left], &theirs), "gpumem_ipc_open");
        check(gpumem_array_copy(got, theirs, NULL), "gpumem_array_copy");
        gpumem_array_release(theirs); /* closes the mapping */
    } else {
        check(gpumem_array_copy(got, mine, NULL), "gpumem_array_copy");
    }
    long bad_ipc = mismatches(got, left);
    free(all);
    MPI_Barrier(MPI_COMM_WORLD); /* every rank closed its mapping: the arrays may go */

    /* 2. MPI messages: send this rank's array to the right */
    int aware = cuda_aware();
    int64_t nbytes = 0;
    gpumem_array_nbytes(mine, &nbytes);
    if (aware) {
        uint64_t src = 0, dst = 0;
        gpumem_array_device_pointer(mine, &src);
        gpumem_array_device_pointer(got, &dst);
        MPI_Sendrecv((void *)(uintptr_t)src, (int)nbytes, MPI_BYTE, right, 0, (void *)(uintptr_t)dst, (int)nbytes,
                     MPI_BYTE, left, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        gpumem_array *out = NULL, *in = NULL;
        void *po = NULL, *pi = NULL;
        check(gpumem_pinned_array(ctx, 1, (int64_t[]){N}, NULL, i32, 'C', &out), "gpumem_pinned_array");
        check(gpumem_pinned_array(ctx, 1, (int64_t[]){N}, NULL, i32, 'C', &in), "gpumem_pinned_array");
        check(gpumem_copy_to_host(mine, out, NULL), "gpumem_copy_to_host");
        gpumem_array_host_pointer(out, &po);
        gpumem_array_host_pointer(in, &pi);
        MPI_Sendrecv(po, (int)nbytes, MPI_BYTE, right, 0, pi, (int)nbytes, MPI_BYTE, left, 0, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        check(gpumem_copy_to_device(got, in, NULL), "gpumem_copy_to_device");
        GPUMEM_ARRAY_RELEASE_ALL(in, out);
    }
    long bad_msg = mismatches(got, left);

    printf("rank %d of %d, device %d of %d: IPC from rank %d %s, %s message %s\n", rank, size, device, ndev, left,
           bad_ipc == 0 ? "ok" : "WRONG", aware ? "device-pointer" : "pinned-host", bad_msg == 0 ? "ok" : "WRONG");
    long bad = bad_ipc + bad_msg, total = 0;
    MPI_Allreduce(&bad, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("ring of %d ranks: %s (%ld wrong elements)\n", size, total == 0 ? "PASS" : "FAIL", total);

    GPUMEM_ARRAY_RELEASE_ALL(got, mine);
    gpumem_context_release(ctx);
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
