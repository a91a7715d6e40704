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
 *     MPI message carrying the data.  Then the same through a virtual-memory
 *     pool's memory (gpumem/pool_ipc.h): each rank connects to its left
 *     neighbour over a Unix socket (an abstract name), which sends its pool's
 *     chunks (file descriptors) and its allocation's handle; the rank opens
 *     the allocation and copies it.
 *  2. MPI messages: each rank sends its array to the right.  A CUDA-aware MPI
 *     (MPIX_Query_cuda_support() answers 1) takes the device pointer itself;
 *     any other MPI gets the bytes through a pinned host array, since it
 *     would read a device address as host memory (a crash or garbage).
 *
 * Then a halo: every rank holds a field of its own on the device, sends its
 * first and last columns (strided views) to its neighbours, packed into one
 * pinned buffer by gpumem_array_pack (one kernel gathers both), with
 * MPI_Isend, receives theirs with MPI_Irecv, and gpumem_array_unpack
 * scatters them into its halo columns.
 *
 * All results are checked by value; the exit status is 1 on any mismatch or
 * error, so `mpirun` reports a failed job.  doc/mpi.md explains the calls.
 *
 * Build: make (pkg-config ompi-c gpumem).  Run: mpirun -np 4 ./ring
 * (GPUMEM_BACKEND=sim runs it without a GPU).
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

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

/* A Unix socket of this job by an abstract name: listening (peer < 0) as
 * rank `self`, or connected to rank `peer`'s. */
static int ring_socket(long job, int self, int peer)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    int n = snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "gpumem-ring-%ld-%d", job, peer < 0 ? self : peer);
    socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0 || (peer < 0 ? bind(s, (struct sockaddr *)&a, len) != 0 || listen(s, 1) != 0
                           : connect(s, (struct sockaddr *)&a, len) != 0)) {
        perror("ring: a Unix socket");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return s;
}

/* 1b. Pool IPC: this rank's values in an exportable virtual-memory pool;
 * the left neighbour's allocation opened through a Unix socket and copied
 * into got.  The wrong elements. */
static long pool_ipc(gpumem_context *ctx, const int32_t *v, int left, int ndev, gpumem_array *got)
{
    struct gpumem_pool_props props = GPUMEM_POOL_PROPS_INIT;
    props.source = GPUMEM_POOL_SOURCE_VIRTUAL;
    props.maximum = 64 << 20;
    props.handle_type = GPUMEM_POOL_HANDLE_POSIX_FD;
    gpumem_pool *pool = NULL;
    gpumem_allocation *a = NULL;
    gpumem_array *host = NULL, *dev = NULL, *theirs = NULL;
    gpumem_cuda_array_interface d = {.size = sizeof d, .version = 3, .ndim = 1, .shape = {N}, .typestr = "<i4"};
    check(gpumem_pool_create_with_props(ctx, &props, &pool), "gpumem_pool_create_with_props");
    check(gpumem_pool_allocate(pool, N * sizeof *v, NULL, &a), "gpumem_pool_allocate");
    check(gpumem_allocation_pointer(a, &d.data), "gpumem_allocation_pointer");
    check(gpumem_as_cuda_array(ctx, &d, GPUMEM_CAI_NO_SYNCHRONIZE, NULL, NULL, &dev), "gpumem_as_cuda_array");
    check(gpumem_host_array_wrap((void *)v, 1, (int64_t[]){N}, NULL, GPUMEM_DTYPE_OF(v[0]), &host),
          "gpumem_host_array_wrap");
    check(gpumem_array_copy(dev, host, NULL), "gpumem_array_copy");
    GPUMEM_ARRAY_RELEASE_ALL(dev, host);

    /* listen, then connect to the left neighbour and take the right one's call */
    long job = (long)getpid();
    MPI_Bcast(&job, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    int listener = ring_socket(job, rank, -1);
    MPI_Barrier(MPI_COMM_WORLD);
    int from_left = ring_socket(job, rank, left);
    int to_right = accept(listener, NULL, NULL);
    if (to_right < 0)
        MPI_Abort(MPI_COMM_WORLD, 1);
    gpumem_pool_ipc_handle h;
    check(gpumem_pool_ipc_send(pool, to_right), "gpumem_pool_ipc_send");
    check(gpumem_allocation_ipc_handle(a, &h), "gpumem_allocation_ipc_handle");
    if (write(to_right, &h, sizeof h) != (ssize_t)sizeof h)
        MPI_Abort(MPI_COMM_WORLD, 1);

    /* the left neighbour's memory is on its device: imported in a context of it */
    gpumem_context *lctx = ctx;
    if (left % ndev != rank % ndev)
        check(gpumem_context_create(left % ndev, &lctx), "gpumem_context_create");
    gpumem_pool_import *im = NULL;
    check(gpumem_pool_ipc_open(lctx, from_left, &im), "gpumem_pool_ipc_open");
    if (read(from_left, &h, sizeof h) != (ssize_t)sizeof h)
        MPI_Abort(MPI_COMM_WORLD, 1);
    check(gpumem_pool_import_open_allocation(im, &h, &d.data, NULL), "gpumem_pool_import_open_allocation");
    check(gpumem_as_cuda_array(lctx, &d, GPUMEM_CAI_NO_SYNCHRONIZE, NULL, NULL, &theirs), "gpumem_as_cuda_array");
    check(gpumem_array_copy(got, theirs, NULL), "gpumem_array_copy");
    gpumem_array_release(theirs);
    check(gpumem_pool_import_close(im), "gpumem_pool_import_close");
    long bad = mismatches(got, left);
    if (lctx != ctx)
        gpumem_context_release(lctx);
    close(from_left);
    close(to_right);
    close(listener);
    MPI_Barrier(MPI_COMM_WORLD);
    gpumem_allocation_free(a, NULL);
    gpumem_pool_destroy(pool);
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
    long bad_pool = pool_ipc(ctx, v, left, ndev, got);

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

    /* 3. A halo: this rank's H x W field with a halo column on each side */
    enum { H = 64, W = 10 };
    static double fv[H][W + 2];
    for (int i = 0; i < H; i++)
        for (int j = 0; j < W + 2; j++)
            fv[i][j] = j == 0 || j == W + 1 ? -1 : 1000.0 * rank + 100 * i + j;
    gpumem_array *fh = NULL, *field = NULL, *sendbuf = NULL, *recvbuf = NULL;
    gpumem_stream *s = NULL;
    check(gpumem_host_array_wrap(fv, 2, (int64_t[]){H, W + 2}, NULL, GPUMEM_DTYPE_OF(fv[0][0]), &fh),
          "gpumem_host_array_wrap");
    check(gpumem_to_device(ctx, fh, NULL, 0, &field), "gpumem_to_device");
    check(gpumem_stream_create(ctx, 0, &s), "gpumem_stream_create");
    const gpumem_slice rows = GPUMEM_SLICE_ALL;
    const gpumem_slice at[4] = {GPUMEM_INDEX(0), GPUMEM_INDEX(1), GPUMEM_INDEX(W), GPUMEM_INDEX(W + 1)};
    gpumem_array *edge[2] = {NULL, NULL}, *halo[2] = {NULL, NULL}; /* columns 1 and W; 0 and W + 1 */
    check(gpumem_array_slice(field, (gpumem_slice[2]){rows, at[1]}, 2, &edge[0]), "gpumem_array_slice");
    check(gpumem_array_slice(field, (gpumem_slice[2]){rows, at[2]}, 2, &edge[1]), "gpumem_array_slice");
    check(gpumem_array_slice(field, (gpumem_slice[2]){rows, at[0]}, 2, &halo[0]), "gpumem_array_slice");
    check(gpumem_array_slice(field, (gpumem_slice[2]){rows, at[3]}, 2, &halo[1]), "gpumem_array_slice");
    check(gpumem_pinned_array(ctx, 1, (int64_t[]){2 * H}, NULL, GPUMEM_DTYPE_OF(fv[0][0]), 'C', &sendbuf),
          "gpumem_pinned_array");
    check(gpumem_pinned_array(ctx, 1, (int64_t[]){2 * H}, NULL, GPUMEM_DTYPE_OF(fv[0][0]), 'C', &recvbuf),
          "gpumem_pinned_array");
    double *send = NULL, *recv = NULL;
    gpumem_array_host_pointer(sendbuf, (void **)&send);
    gpumem_array_host_pointer(recvbuf, (void **)&recv);
    check(gpumem_array_pack(2, edge, sendbuf, s), "gpumem_array_pack"); /* send[0:H] = column 1, send[H:] = column W */
    check(gpumem_stream_synchronize(s), "gpumem_stream_synchronize");    /* before MPI reads sendbuf */
    MPI_Request req[4];
    MPI_Irecv(recv, H, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &req[0]);      /* the left one's column W */
    MPI_Irecv(recv + H, H, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, &req[1]); /* the right one's column 1 */
    MPI_Isend(send + H, H, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &req[2]);
    MPI_Isend(send, H, MPI_DOUBLE, left, 2, MPI_COMM_WORLD, &req[3]);
    MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
    check(gpumem_array_unpack(2, halo, recvbuf, s), "gpumem_array_unpack"); /* column 0, column W + 1 */
    check(gpumem_copy_to_host(field, fh, s), "gpumem_copy_to_host");
    check(gpumem_stream_synchronize(s), "gpumem_stream_synchronize");
    long bad_halo = 0;
    for (int i = 0; i < H; i++) {
        bad_halo += fv[i][0] != 1000.0 * left + 100 * i + W || fv[i][W + 1] != 1000.0 * right + 100 * i + 1;
        for (int j = 1; j <= W; j++)
            bad_halo += fv[i][j] != 1000.0 * rank + 100 * i + j;
    }
    GPUMEM_ARRAY_RELEASE_ALL(halo[1], halo[0], edge[1], edge[0], recvbuf, sendbuf, field, fh);
    gpumem_stream_destroy(s);

    printf("rank %d of %d, device %d of %d: IPC from rank %d %s, pool IPC %s, %s message %s, halo %s\n", rank,
           size, device, ndev, left, bad_ipc == 0 ? "ok" : "WRONG", bad_pool == 0 ? "ok" : "WRONG",
           aware ? "device-pointer" : "pinned-host", bad_msg == 0 ? "ok" : "WRONG", bad_halo == 0 ? "ok" : "WRONG");
    long bad = bad_ipc + bad_pool + bad_msg + bad_halo, total = 0;
    MPI_Allreduce(&bad, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("ring of %d ranks: %s (%ld wrong elements)\n", size, total == 0 ? "PASS" : "FAIL", total);

    GPUMEM_ARRAY_RELEASE_ALL(got, mine);
    gpumem_context_release(ctx);
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
