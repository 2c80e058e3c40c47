/* Checked sizes and shape rules for the devices (see dev_sizes.h). */
#include "dev_sizes.h"

#include <limits.h>
#include <stdio.h>

dev_size dev_size_of(long long v)
{
    dev_size s = {.v = v < 0 ? 0 : (uint64_t)v, .bad = v < 0};
    return s;
}

/* Everything stays below INT64_MAX so that a good size converts to long long (kernel arguments) and
 * to size_t on every platform vpsim builds on. */
static dev_size checked(uint64_t v, bool overflow, bool bad)
{
    dev_size s = {.v = v, .bad = bad || overflow || v > (uint64_t)INT64_MAX};
    if (s.bad)
        s.v = 0;
    return s;
}

dev_size dev_size_mul_size(dev_size a, dev_size b)
{
    uint64_t v;
    bool o = __builtin_mul_overflow(a.v, b.v, &v);
    return checked(v, o, a.bad || b.bad);
}

dev_size dev_size_mul(dev_size a, long long b) { return dev_size_mul_size(a, dev_size_of(b)); }

dev_size dev_size_add(dev_size a, dev_size b)
{
    uint64_t v;
    bool o = __builtin_add_overflow(a.v, b.v, &v);
    return checked(v, o, a.bad || b.bad);
}

dev_size dev_size_max(dev_size a, dev_size b)
{
    dev_size s = {.v = a.v > b.v ? a.v : b.v, .bad = a.bad || b.bad};
    return s;
}

dev_size dev_size_prod(long long a, long long b, long long c, long long d)
{
    return dev_size_mul(dev_size_mul(dev_size_mul(dev_size_of(a), b), c), d);
}

dev_size dev_size_align(dev_size a, uint64_t align)
{
    dev_size s = dev_size_add(a, dev_size_of((long long)(align - 1)));
    s.v &= ~(align - 1);
    return s;
}

int dev_size_refuse(char *why, size_t len, const char *what, const plan_op *op, const char *phase)
{
    char shape[160];
    if (op->kind == PLAN_OP_ATTENTION)
        snprintf(shape, sizeof(shape), "batch=%d q_len=%lld kv_len=%lld heads=%d kv_heads=%d qk_dim=%d v_dim=%d",
                 op->batch, op->q_len, op->kv_len, op->heads, op->kv_heads, op->qk_dim, op->v_dim);
    else
        snprintf(shape, sizeof(shape), "m=%lld n=%lld k=%lld batch=%d", op->m, op->n, op->k, op->batch);
    snprintf(why, len, "op %s (phase %s, %s %s): %s does not fit a 64-bit byte count; the plan asks for an "
             "impossible size", op->name, phase, plan_op_kind_names[op->kind], shape, what);
    return -1;
}

static int bad_field(char *why, size_t len, const plan_op *op, const char *phase, const char *field, long long v,
                     const char *rule)
{
    snprintf(why, len, "op %s (phase %s, %s): %s=%lld: %s", op->name, phase, plan_op_kind_names[op->kind], field, v,
             rule);
    return -1;
}

int dev_op_check(const plan_op *op, const char *phase, char *why, size_t len)
{
    const long long imax = INT_MAX;
    switch (op->kind) {
    case PLAN_OP_GEMM:
    case PLAN_OP_GROUPED_GEMM:
    case PLAN_OP_EMBEDDING: {
        /* BLAS and the kernels take int dimensions. */
        const struct {
            const char *name;
            long long v;
        } dims[] = {{"m", op->m}, {"n", op->n}, {"k", op->k}};
        for (size_t i = 0; i < sizeof(dims) / sizeof(dims[0]); i++)
            if (dims[i].v < 0 || dims[i].v > imax)
                return bad_field(why, len, op, phase, dims[i].name, dims[i].v,
                                 "a GEMM dimension must lie in [0, 2147483647] (BLAS takes int)");
        if (op->batch < 1)
            return bad_field(why, len, op, phase, "batch", op->batch,
                             "a GEMM needs batch >= 1 (a grouped GEMM spreads its rows over batch experts)");
        if (op->kind == PLAN_OP_EMBEDDING && op->m > 0 && op->k < 1)
            return bad_field(why, len, op, phase, "k", op->k, "an embedding needs a vocabulary shard of k >= 1 rows");
        break;
    }
    case PLAN_OP_ATTENTION:
        if (op->q_len < 0 || op->q_len > imax)
            return bad_field(why, len, op, phase, "q_len", op->q_len, "must lie in [0, 2147483647]");
        if (op->kv_len < 0 || op->kv_len > imax)
            return bad_field(why, len, op, phase, "kv_len", op->kv_len, "must lie in [0, 2147483647]");
        if (op->batch < 0 || op->heads < 0 || op->qk_dim < 0 || op->v_dim < 0)
            return bad_field(why, len, op, phase, "batch/heads/qk_dim/v_dim",
                             op->batch < 0 ? op->batch : op->heads < 0 ? op->heads : op->qk_dim < 0 ? op->qk_dim : op->v_dim,
                             "must be >= 0");
        if (op->kv_shared) {
            /* Values are read from the front of each key row (MLA's latent cache). */
            if (op->v_dim > op->qk_dim)
                return bad_field(why, len, op, phase, "v_dim", op->v_dim,
                                 "with kv_shared the values are read from the key rows, so v_dim must be <= qk_dim");
        } else if (op->heads > 0 && (op->kv_heads < 1 || op->heads % op->kv_heads != 0)) {
            return bad_field(why, len, op, phase, "kv_heads", op->kv_heads,
                             "the query heads must group evenly over kv_heads >= 1 (heads % kv_heads == 0)");
        }
        break;
    case PLAN_OP_NORM:
    case PLAN_OP_ELEMENTWISE:
        if (op->m < 0 || op->m > imax)
            return bad_field(why, len, op, phase, "m", op->m, "must lie in [0, 2147483647]");
        if (op->n < 0 || op->n > imax)
            return bad_field(why, len, op, phase, "n", op->n, "must lie in [0, 2147483647]");
        break;
    case PLAN_OP_ALLREDUCE:
    case PLAN_OP_ALLGATHER:
        if (op->count < 0)
            return bad_field(why, len, op, phase, "count", op->count, "must be >= 0");
        break;
    case PLAN_OP_REDUCE_SCATTER:
    case PLAN_OP_ALLTOALL:
        if (op->count < 0 || (op->ranks > 0 && op->count % op->ranks != 0))
            return bad_field(why, len, op, phase, "count", op->count,
                             "must be >= 0 and split evenly over the ranks (count % ranks == 0)");
        break;
    case PLAN_OP_ALLREDUCE_NORM:
        if (op->m < 0 || op->n < 1 || op->count != op->m * op->n)
            return bad_field(why, len, op, phase, "count", op->count, "must equal m x n, with n >= 1");
        break;
    default: break;
    }
    return 0;
}

void dev_norm_extent(const plan *p, long long *max_count, long long *max_width)
{
    *max_count = *max_width = 0;
    for (int ph = 0; ph < p->n_phases; ph++)
        for (int i = 0; i < p->phases[ph].n_ops; i++) {
            const plan_op *op = &p->phases[ph].ops[i];
            if (op->kind != PLAN_OP_ALLREDUCE_NORM)
                continue;
            *max_count = op->count > *max_count ? op->count : *max_count;
            *max_width = op->n > *max_width ? op->n : *max_width;
        }
}
