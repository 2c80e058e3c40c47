/* Backend `nccl`: ncclAllReduce (bf16 sum) and ncclAllGather on the main stream. The communicator
 * comes from ncclGetUniqueId on rank 0, broadcast over MPI. NCCL calls are graph-capturable. */
#include "comm.h"
#include "../dist/dist_cuda.h"
#include "comm_nccl.h"

#include "comm_custom.h"

#include "../util/util.h"

#include <nccl.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;


typedef struct nccl_state {
    ncclComm_t comm;
} nccl_state;

static int nccl_supported(comm_ctx *x, char *why, size_t len)
{
    if (strcmp(x->dev->name, "cuda") != 0) {
        snprintf(why, len, "nccl needs the cuda device (use --backend mpi with --device cpu)");
        return -1;
    }
    /* Virtual ranks: NCCL would abort with "invalid usage"; say why instead. Collective. */
    char local[256] = "";
    comm_ranks_share_gpu(x, local, sizeof(local));
    snprintf(why, len, "%s", local);
    return dist_agree(&x->dist, local[0] != 0, why, len);
}

static void nccl_init(comm_ctx *x)
{
    nccl_state *s = util_xcalloc(1, sizeof(*s));
    x->state = s;
    ncclUniqueId id;
    if (x->dist.rank == 0)
        VP_NCCL(ncclGetUniqueId(&id));
    dist_bcast(&id, sizeof(id), 0);
    VP_NCCL(ncclCommInitRank(&s->comm, x->dist.size, id, x->dist.rank));
}

static void nccl_fini(comm_ctx *x)
{
    nccl_state *s = x->state;
    if (!s)
        return;
    ncclCommDestroy(s->comm);
    free(s);
    x->state = NULL;
}

static void nccl_allreduce(comm_ctx *x, const plan_op *op, int flat, const void *send, void *recv, long long count)
{
    (void)op;
    (void)flat;
    nccl_state *s = x->state;
    VP_NCCL(ncclAllReduce(send, recv, (size_t)count, ncclBfloat16, ncclSum, s->comm, x->dev->stream(x, 0)));
}

static void nccl_allgather(comm_ctx *x, const plan_op *op, int flat, const void *send, void *recv, long long count)
{
    (void)op;
    (void)flat;
    nccl_state *s = x->state;
    VP_NCCL(ncclAllGather(send, recv, (size_t)count, ncclBfloat16, s->comm, x->dev->stream(x, 0)));
}

void comm_nccl_describe_env(comm_ctx *x)
{
    int v = 0;
    ncclGetVersion(&v);
    comm_env_set(x, "nccl", "%d.%d.%d", v / 10000, (v / 100) % 100, v % 100);
    util_buf vars = {0};
    for (char **e = environ; *e; e++)
        if (strncmp(*e, "NCCL_", 5) == 0)
            util_buf_printf(&vars, "%s%s", vars.len ? " " : "", *e);
    comm_env_set(x, "nccl_env", "%s", vars.s ? vars.s : "(none set)");
    util_buf_free(&vars);
}

static void nccl_describe(comm_ctx *x) { comm_nccl_describe_env(x); }

const comm_backend comm_backend_nccl = {
    .name = "nccl",
    .graph_safe = true,
    .supported = nccl_supported,
    .init = nccl_init,
    .fini = nccl_fini,
    .allreduce = nccl_allreduce,
    .allgather = nccl_allgather,
    .describe = nccl_describe,
};
