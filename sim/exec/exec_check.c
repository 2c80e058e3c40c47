/* --check: every collective of a plan run once on a deterministic pattern (kernels/vp_pattern.h) and
 * compared with what the collective must produce. Allreduce and all-gather are compared on the device
 * (dev->check); the other kinds are copied to the host and compared with a reference computed here,
 * so a new collective needs one reference function and no device code. */
#include "exec.h"

#include "../../kernels/vp_pattern.h"
#include "../util/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* Rank r of n after a reduce-scatter of `count` elements: block r of the sum. */
static float want_reduce_scatter(int r, int n, long long count, long long i, int salt)
{
    const long long blk = count / n;
    float sum = 0.f;
    for (int q = 0; q < n; q++)
        sum += vp_pattern_value(q, (long long)r * blk + i, salt);
    return sum;
}

/* Rank r of n after an all-to-all of `count` elements: its block j is rank j's block r. */
static float want_alltoall(int r, int n, long long count, long long i, int salt)
{
    const long long blk = count / n;
    const int j = (int)(i / blk);
    return vp_pattern_value(j, (long long)r * blk + i % blk, salt);
}

void exec_check_norm_reference(int ranks, long long rows, long long width, int salt, float *residual, float *recv)
{
    for (long long r = 0; r < rows; r++) {
        double ss = 0.0;
        for (long long j = 0; j < width; j++) {
            const long long i = r * width + j;
            float sum = 0.f;
            for (int q = 0; q < ranks; q++)
                sum += vp_pattern_value(q, i, salt);
            residual[i] = vp_residual_value(i, salt) + sum;
            ss += (double)residual[i] * residual[i];
        }
        const double inv = 1.0 / sqrt(ss / (double)width + 1e-6);
        for (long long j = 0; j < width; j++)
            recv[r * width + j] = (float)(residual[r * width + j] * inv * vp_norm_weight_value(j));
    }
}

/* allreduce_norm: both outputs against the host reference. The residual holds small integers (exact in
 * bf16 and fp32); the normalised rows go through a square root, so they get a relative tolerance: fp32
 * (the CPU device) 1e-5, bf16 (8 significant bits, CUDA) 1e-2. Returns the first bad index of recv, or
 * count + index for the residual, or -1. */
static long long check_norm(exec_ctx *x, const plan_op *op, const float *recv, const float *residual, int salt)
{
    const long long n = op->count;
    float *want_res = util_xcalloc((size_t)n + 1, sizeof(float));
    float *want_out = util_xcalloc((size_t)n + 1, sizeof(float));
    exec_check_norm_reference(x->dist.size, op->m, op->n, salt, want_res, want_out);
    const double tol = x->dev->elem_bytes >= 4 ? 1e-5 : 1e-2;
    long long bad = -1;
    for (long long i = 0; i < n && bad < 0; i++)
        if (!(fabs((double)recv[i] - want_out[i]) <= tol * fmax(1.0, fabs((double)want_out[i]))))
            bad = i;
    for (long long i = 0; i < n && bad < 0; i++)
        if (!(fabs((double)residual[i] - want_res[i]) <= tol * fmax(1.0, fabs((double)want_res[i]))))
            bad = n + i;
    free(want_res);
    free(want_out);
    return bad;
}

/* First index of `got` that differs from the kind's reference, or -1. */
static long long host_check(const exec_ctx *x, const plan_op *op, const float *got, long long n, int salt)
{
    const int r = x->dist.rank, size = x->dist.size;
    for (long long i = 0; i < n; i++) {
        float want;
        switch (op->kind) {
        case PLAN_OP_REDUCE_SCATTER: want = want_reduce_scatter(r, size, op->count, i, salt); break;
        case PLAN_OP_ALLTOALL: want = want_alltoall(r, size, op->count, i, salt); break;
        default: return 0; /* a kind without a reference is a failure, never a silent pass */
        }
        /* Small integers: exact in bf16 and fp32, so any difference is an error. */
        if (!(got[i] == want))
            return i;
    }
    return -1;
}

static long long check_one(exec_ctx *x, const plan_op *orig, int salt)
{
    /* A one-rank job replays a multi-rank plan's compute: its collectives span the job, not the plan. */
    plan_op local = *orig;
    local.ranks = x->dist.size;
    const plan_op *op = &local;
    long long in, out;
    plan_collective_elems(op, &in, &out);
    void *send = x->dev->comm_send(x), *recv = x->dev->comm_recv(x);
    x->dev->fill_pattern(x, send, in, salt);
    x->dev->poison(x, recv, out);
    void *residual = op->kind == PLAN_OP_ALLREDUCE_NORM ? x->dev->comm_aux(x, EXEC_AUX_RESIDUAL) : NULL;
    if (residual) {
        /* The residual is updated in place by every call: refilled before each checked one. */
        float *host = util_xcalloc((size_t)op->count + 1, sizeof(float));
        for (long long i = 0; i < op->count; i++)
            host[i] = vp_residual_value(i, salt);
        x->dev->from_host_float(x, residual, host, op->count);
        free(host);
    }
    exec_collective(x, op, salt, send, recv, op->count);
    if (x->opt->debug_corrupt_rank == x->dist.rank)
        x->dev->poison(x, recv, 1); /* proves --check can fail (tests) */
    return exec_check_result(x, op, recv, salt);
}

long long exec_check_result(exec_ctx *x, const plan_op *op, const void *recv, int salt)
{
    long long in, out;
    plan_collective_elems(op, &in, &out);
    if (op->kind == PLAN_OP_ALLREDUCE || op->kind == PLAN_OP_ALLGATHER)
        return x->dev->check(x, recv, out, salt, op->kind == PLAN_OP_ALLGATHER);
    float *host = util_xcalloc((size_t)out + 1, sizeof(float));
    x->dev->to_host_float(x, host, recv, out);
    long long bad;
    if (op->kind == PLAN_OP_ALLREDUCE_NORM) {
        /* Both outputs: the normalised rows and the residual the call updated. */
        float *res = util_xcalloc((size_t)op->count + 1, sizeof(float));
        x->dev->to_host_float(x, res, x->dev->comm_aux(x, EXEC_AUX_RESIDUAL), op->count);
        bad = check_norm(x, op, host, res, salt);
        free(res);
    } else {
        bad = host_check(x, op, host, out, salt);
    }
    free(host);
    return bad;
}

long long exec_check_collectives(exec_ctx *x, char *msg, size_t msg_len)
{
    const plan *p = x->plan;
    long long failures = 0;
    for (int ph = 0; ph < p->n_phases; ph++) {
        for (int i = 0; i < p->phases[ph].n_ops; i++) {
            const plan_op *op = &p->phases[ph].ops[i];
            if (!plan_op_is_collective(op->kind))
                continue;
            const int salt = plan_op_flat_index(p, ph, i);
            const long long bad = check_one(x, op, salt);
            double flag = bad >= 0 ? 1.0 : 0.0;
            dist_sum_doubles(&flag, 1);
            if (bad >= 0 && failures == 0 && msg[0] == '\0') {
                long long in, out;
                plan_collective_elems(op, &in, &out);
                snprintf(msg, msg_len, "%s '%s' (phase %s, op %d) wrong on rank %d: first bad index %lld of %lld%s",
                         plan_op_kind_names[op->kind], op->name, p->phases[ph].name, i, x->dist.rank, bad, out,
                         bad >= out ? " (past the output: the residual's element index - count)" : "");
            }
            failures += (long long)flag;
        }
    }
    return failures;
}
