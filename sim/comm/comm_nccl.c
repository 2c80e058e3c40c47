/* Backend `nccl`: ncclAllReduce (bf16 sum), ncclAllGather, ncclReduceScatter and a grouped send/recv all-to-all on
 * the main stream. The communicator
 * comes from ncclGetUniqueId on rank 0, broadcast over MPI. NCCL calls are graph-capturable. */
#include "comm.h"
#include "../dist/dist_cuda.h"
#include "comm_nccl.h"

#include "comm_custom.h"

#include "../config/cfg_nccl.h"
#include "../util/util.h"

#include <nccl.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;


typedef struct nccl_state {
    ncclComm_t comm;
    char tuning_note[512]; /* what comm_nccl_tuning_apply set, for the results */
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
    if (!local[0])
        comm_nccl_tuning_check(x, local, sizeof(local));
    snprintf(why, len, "%s", local);
    return dist_agree(&x->dist, local[0] != 0, why, len);
}

int comm_nccl_tuning_check(comm_ctx *x, char *why, size_t len)
{
    cfg_nccl_env_pair env[CFG_NCCL_ENV_MAX];
    int v = 0;
    ncclGetVersion(&v);
    return cfg_nccl_env(x->nccl_tuning, v, env, why, len) < 0 ? -1 : 0;
}

void comm_nccl_tuning_apply(comm_ctx *x, char *note, size_t note_len)
{
    note[0] = '\0';
    cfg_nccl_env_pair env[CFG_NCCL_ENV_MAX];
    char why[256], desc[128];
    int v = 0;
    ncclGetVersion(&v);
    const int n = cfg_nccl_env(x->nccl_tuning, v, env, why, sizeof(why));
    if (n <= 0)
        return; /* nothing to set; an impossible tuning was refused by supported() */
    util_buf set = {0}, over = {0};
    for (int i = 0; i < n; i++) {
        const char *old = getenv(env[i].name);
        if (old && strcmp(old, env[i].value) != 0)
            util_buf_printf(&over, "%s%s=%s", over.len ? " " : "", env[i].name, old);
        setenv(env[i].name, env[i].value, 1);
        util_buf_printf(&set, "%s%s=%s", set.len ? " " : "", env[i].name, env[i].value);
    }
    snprintf(note, note_len, "scenario nccl: %s; set %s%s%s%s",
             cfg_nccl_describe(x->nccl_tuning, desc, sizeof(desc)), set.s, over.len ? " (overriding the environment's " : "",
             over.len ? over.s : "", over.len ? ")" : "");
    if (over.len && x->dist.rank == 0)
        fprintf(stderr, "vpsim: note: the scenario's nccl: settings override the environment's %s\n", over.s);
    util_buf_free(&set);
    util_buf_free(&over);
}

static void nccl_init(comm_ctx *x)
{
    nccl_state *s = util_xcalloc(1, sizeof(*s));
    x->state = s;
    comm_nccl_tuning_apply(x, s->tuning_note, sizeof(s->tuning_note));
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

/* `count` in; ncclReduceScatter takes the per-rank receive count. */
static void nccl_reduce_scatter(comm_ctx *x, const plan_op *op, int flat, const void *send, void *recv, long long count)
{
    (void)op;
    (void)flat;
    nccl_state *s = x->state;
    VP_NCCL(ncclReduceScatter(send, recv, (size_t)(count / x->dist.size), ncclBfloat16, ncclSum, s->comm,
                              x->dev->stream(x, 0)));
}

/* NCCL has no all-to-all call: one send and one receive per peer, grouped so NCCL schedules them as
 * one operation (its documented all-to-all idiom). Block j of `send` goes to rank j. */
static void nccl_alltoall(comm_ctx *x, const plan_op *op, int flat, const void *send, void *recv, long long count)
{
    (void)op;
    (void)flat;
    nccl_state *s = x->state;
    const int n = x->dist.size;
    const size_t block = (size_t)(count / n), stride = block * (size_t)x->dev->elem_bytes;
    cudaStream_t st = (cudaStream_t)x->dev->stream(x, 0);
    VP_NCCL(ncclGroupStart());
    for (int j = 0; j < n; j++) {
        VP_NCCL(ncclSend((const char *)send + (size_t)j * stride, block, ncclBfloat16, j, s->comm, st));
        VP_NCCL(ncclRecv((char *)recv + (size_t)j * stride, block, ncclBfloat16, j, s->comm, st));
    }
    VP_NCCL(ncclGroupEnd());
}

/* NCCL has no fused kernel: its allreduce, then the device's residual add and norm (the unfused sequence). */
static void nccl_allreduce_norm(comm_ctx *x, const plan_op *op, int flat, const void *send, void *recv,
                                void *residual, const void *weight, long long count)
{
    nccl_allreduce(x, op, flat, send, recv, count);
    x->dev->residual_norm(x, recv, residual, weight, op->m, op->n);
}

void comm_nccl_describe_env(comm_ctx *x, const char *tuning_note)
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
    if (tuning_note && tuning_note[0])
        comm_env_set(x, "nccl_tuning", "%s", tuning_note);
}

static void nccl_describe(comm_ctx *x)
{
    const nccl_state *s = x->state;
    comm_nccl_describe_env(x, s ? s->tuning_note : NULL);
    comm_env_set(x, "nccl_allreduce_norm", "NCCL has no fused kernel: the unfused sequence (ncclAllReduce, then a "
                                           "residual add + RMSNorm kernel)");
}

const comm_backend comm_backend_nccl = {
    .name = "nccl",
    .graph_safe = true,
    .supported = nccl_supported,
    .init = nccl_init,
    .fini = nccl_fini,
    .allreduce = nccl_allreduce,
    .allgather = nccl_allgather,
    .reduce_scatter = nccl_reduce_scatter,
    .alltoall = nccl_alltoall,
    .allreduce_norm = nccl_allreduce_norm,
    .describe = nccl_describe,
};
