/* Backends `none` (compute only: collectives are skipped) and `model` (each collective replaced by a
 * GPU delay of the duration model mode predicts for a target system, so one GPU can answer "this
 * compute, that interconnect"). */
#include "comm.h"

#include <stdio.h>

static int always_supported(comm_ctx *x, char *why, size_t len)
{
    (void)x;
    (void)why;
    (void)len;
    return 0;
}

static void nothing(comm_ctx *x) { (void)x; }

static void skip_collective(comm_ctx *x, const plan_op *op, int flat, const void *send, void *recv,
                            long long count)
{
    (void)x;
    (void)op;
    (void)flat;
    (void)send;
    (void)recv;
    (void)count;
}

static void skip_norm(comm_ctx *x, const plan_op *op, int flat, const void *send, void *recv, void *residual,
                      const void *weight, long long count)
{
    (void)residual;
    (void)weight;
    skip_collective(x, op, flat, send, recv, count);
}

static void none_describe(comm_ctx *x) { comm_env_set(x, "comm", "none: collectives skipped (compute only)"); }

const comm_backend comm_backend_none = {
    .name = "none",
    .graph_safe = true,
    .moves_no_data = true,
    .supported = always_supported,
    .init = nothing,
    .fini = nothing,
    .allreduce = skip_collective,
    .allgather = skip_collective,
    .reduce_scatter = skip_collective,
    .alltoall = skip_collective,
    .allreduce_norm = skip_norm,
    .describe = none_describe,
};

static int model_supported(comm_ctx *x, char *why, size_t len)
{
    if (!x->collective_us) {
        snprintf(why, len, "needs modelled collective durations (give --target-system FILE)");
        return -1;
    }
    return 0;
}

static void delay_collective(comm_ctx *x, const plan_op *op, int flat, const void *send, void *recv,
                             long long count)
{
    (void)op;
    (void)send;
    (void)recv;
    (void)count;
    x->dev->delay(x, 1e3 * x->collective_us[flat]);
}

static void delay_norm(comm_ctx *x, const plan_op *op, int flat, const void *send, void *recv, void *residual,
                       const void *weight, long long count)
{
    (void)residual;
    (void)weight;
    delay_collective(x, op, flat, send, recv, count);
}

static void model_describe(comm_ctx *x)
{
    comm_env_set(x, "comm", "model: each collective is a GPU delay of its modelled duration on the target system");
}

const comm_backend comm_backend_model = {
    .name = "model",
    .graph_safe = true,
    .moves_no_data = true,
    .supported = model_supported,
    .init = nothing,
    .fini = nothing,
    .allreduce = delay_collective,
    .allgather = delay_collective,
    .reduce_scatter = delay_collective,
    .alltoall = delay_collective,
    .allreduce_norm = delay_norm,
    .describe = model_describe,
};
