/* Backend `mpi`: MPI_Allreduce / MPI_Allgather / MPI_Reduce_scatter_block / MPI_Alltoall. On the CPU device the buffers are host fp32 and go to
 * MPI directly. On CUDA the data is staged through the host: device-to-host copy, MPI on fp32, copy
 * back — MPI has no bf16 sum, so even a CUDA-aware MPI would need a conversion; whether the MPI is
 * CUDA-aware is detected and reported, not assumed. */
#include "comm.h"

#include "../util/util.h"

#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif
#include <stdlib.h>
#include <string.h>

typedef struct mpi_state {
    float *host_send, *host_recv;
    bool staged;
} mpi_state;

static int mpi_supported(comm_ctx *x, char *why, size_t len)
{
    (void)x;
    (void)why;
    (void)len;
    return 0;
}

static void mpi_init(comm_ctx *x)
{
    mpi_state *s = util_xcalloc(1, sizeof(*s));
    x->state = s;
    s->staged = x->dev->elem_bytes != sizeof(float) || strcmp(x->dev->name, "cpu") != 0;
    if (s->staged) {
        size_t n = x->max_comm_elems > 0 ? (size_t)x->max_comm_elems : 1;
        s->host_send = util_xmalloc(n * sizeof(float));
        s->host_recv = util_xmalloc(n * sizeof(float));
    }
}

static void mpi_fini(comm_ctx *x)
{
    mpi_state *s = x->state;
    if (!s)
        return;
    free(s->host_send);
    free(s->host_recv);
    free(s);
    x->state = NULL;
}

static void mpi_allreduce(comm_ctx *x, const plan_op *op, int flat, const void *send, void *recv, long long count)
{
    (void)op;
    (void)flat;
    mpi_state *s = x->state;
    if (!s->staged) {
        VP_MPI(MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
        return;
    }
    x->dev->to_host_float(x, s->host_send, send, count);
    VP_MPI(MPI_Allreduce(s->host_send, s->host_recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
    x->dev->from_host_float(x, recv, s->host_recv, count);
}

static void mpi_allgather(comm_ctx *x, const plan_op *op, int flat, const void *send, void *recv, long long count)
{
    (void)op;
    (void)flat;
    mpi_state *s = x->state;
    if (!s->staged) {
        VP_MPI(MPI_Allgather(send, (int)count, MPI_FLOAT, recv, (int)count, MPI_FLOAT, MPI_COMM_WORLD));
        return;
    }
    x->dev->to_host_float(x, s->host_send, send, count);
    VP_MPI(MPI_Allgather(s->host_send, (int)count, MPI_FLOAT, s->host_recv, (int)count, MPI_FLOAT, MPI_COMM_WORLD));
    x->dev->from_host_float(x, recv, s->host_recv, count * x->dist.size);
}

/* MPI_Reduce_scatter_block: `count` in, this rank's count / ranks block of the sum out. */
static void mpi_reduce_scatter(comm_ctx *x, const plan_op *op, int flat, const void *send, void *recv, long long count)
{
    (void)op;
    (void)flat;
    mpi_state *s = x->state;
    const long long block = count / x->dist.size;
    if (!s->staged) {
        VP_MPI(MPI_Reduce_scatter_block(send, recv, (int)block, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
        return;
    }
    x->dev->to_host_float(x, s->host_send, send, count);
    VP_MPI(MPI_Reduce_scatter_block(s->host_send, s->host_recv, (int)block, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
    x->dev->from_host_float(x, recv, s->host_recv, block);
}

/* Block j of `send` goes to rank j; `count` is a multiple of the ranks (the plan pads it). */
static void mpi_alltoall(comm_ctx *x, const plan_op *op, int flat, const void *send, void *recv, long long count)
{
    (void)op;
    (void)flat;
    mpi_state *s = x->state;
    const int block = (int)(count / x->dist.size);
    if (!s->staged) {
        VP_MPI(MPI_Alltoall(send, block, MPI_FLOAT, recv, block, MPI_FLOAT, MPI_COMM_WORLD));
        return;
    }
    x->dev->to_host_float(x, s->host_send, send, count);
    VP_MPI(MPI_Alltoall(s->host_send, block, MPI_FLOAT, s->host_recv, block, MPI_FLOAT, MPI_COMM_WORLD));
    x->dev->from_host_float(x, recv, s->host_recv, count);
}

/* MPI has no fused kernel: its allreduce, then the device's residual add and norm (the unfused sequence). */
static void mpi_allreduce_norm(comm_ctx *x, const plan_op *op, int flat, const void *send, void *recv, void *residual,
                               const void *weight, long long count)
{
    mpi_allreduce(x, op, flat, send, recv, count);
    x->dev->residual_norm(x, recv, residual, weight, op->m, op->n);
}

static void mpi_describe(comm_ctx *x)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    if (MPI_Get_library_version(lib, &len) == MPI_SUCCESS) {
        char *nl = strchr(lib, '\n');
        if (nl)
            *nl = '\0';
        char *comma = strchr(lib, ',');
        if (comma)
            *comma = '\0';
        comm_env_set(x, "mpi", "%s", lib);
    }
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
    comm_env_set(x, "mpi_cuda_aware", "%s", MPIX_Query_cuda_support() ? "yes (runtime)" : "no (runtime)");
#elif defined(MPIX_CUDA_AWARE_SUPPORT)
    comm_env_set(x, "mpi_cuda_aware", "no (this MPI was built without CUDA support)");
#else
    comm_env_set(x, "mpi_cuda_aware", "unknown (this MPI does not say)");
#endif
    mpi_state *s = x->state;
    if (s && s->staged)
        comm_env_set(x, "mpi_path", "host staged: device->host copy, MPI fp32, host->device copy");
    comm_env_set(x, "mpi_allreduce_norm", "MPI has no fused kernel: the unfused sequence (allreduce, then the "
                                          "device's residual add + RMSNorm)");
}

const comm_backend comm_backend_mpi = {
    .name = "mpi",
    .graph_safe = false,
    .supported = mpi_supported,
    .init = mpi_init,
    .fini = mpi_fini,
    .allreduce = mpi_allreduce,
    .allgather = mpi_allgather,
    .reduce_scatter = mpi_reduce_scatter,
    .alltoall = mpi_alltoall,
    .allreduce_norm = mpi_allreduce_norm,
    .describe = mpi_describe,
};
