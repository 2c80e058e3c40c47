/* A backend added the documented way (docs/extending.md: one list line + one file), for
 * tests/extend/new_backend.sh: a host ring allreduce written against comm.h alone — each rank passes its
 * running sum to the next with MPI point-to-point calls, n - 1 times, then the last rank's total goes
 * round. Slow and plain on purpose; what it proves is that the rest of vpsim follows from the list line
 * and this file. */
#include "comm.h"

#include "../util/util.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>

static int dummy_supported(comm_ctx *x, char *why, size_t len)
{
    if (x->dev->elem_bytes != sizeof(float)) {
        snprintf(why, len, "the dummy backend sums fp32 host buffers (use --device cpu)");
        return -1;
    }
    return 0;
}

static void dummy_init(comm_ctx *x) { (void)x; }
static void dummy_fini(comm_ctx *x) { (void)x; }

/* Rank r adds its input to what rank r-1 sent and passes it on; rank n-1 holds the sum and sends it
 * round to everyone. Every rank adds in the same order, so every rank's result is bit-identical. */
static void dummy_allreduce(comm_ctx *x, const plan_op *op, int flat, const void *send, void *recv, long long count)
{
    (void)op;
    (void)flat;
    const int r = x->dist.rank, n = x->dist.size;
    float *acc = recv;
    if (acc != send)
        memmove(acc, send, (size_t)count * sizeof(float));
    if (n == 1)
        return;
    float *in = util_xmalloc((size_t)count * sizeof(float));
    if (r > 0) {
        VP_MPI(MPI_Recv(in, (int)count, MPI_FLOAT, r - 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        for (long long i = 0; i < count; i++)
            acc[i] = in[i] + acc[i];
    }
    if (r < n - 1)
        VP_MPI(MPI_Send(acc, (int)count, MPI_FLOAT, r + 1, 7, MPI_COMM_WORLD));
    VP_MPI(MPI_Bcast(acc, (int)count, MPI_FLOAT, n - 1, MPI_COMM_WORLD));
    free(in);
}

static void dummy_allgather(comm_ctx *x, const plan_op *op, int flat, const void *send, void *recv, long long count)
{
    (void)op;
    (void)flat;
    (void)x;
    VP_MPI(MPI_Allgather(send, (int)count, MPI_FLOAT, recv, (int)count, MPI_FLOAT, MPI_COMM_WORLD));
}

static void dummy_describe(comm_ctx *x) { comm_env_set(x, "comm", "dummy: a host ring of MPI sends (an extension test)"); }

const comm_backend comm_backend_dummy = {
    .name = "dummy",
    .graph_safe = false,
    .supported = dummy_supported,
    .init = dummy_init,
    .fini = dummy_fini,
    .allreduce = dummy_allreduce,
    .allgather = dummy_allgather,
    .describe = dummy_describe,
};
