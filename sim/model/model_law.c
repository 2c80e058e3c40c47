/* Probed compute laws: which class an op belongs to and what "rows" means for it, and the evaluation
 * of a class's measured points (docs/model.md "Probed compute laws"). The classes follow what the
 * replay runs (sim/exec/dev_cuda.c), because the points are that replay's own per-op times. */
#include "model.h"

#include <math.h>
#include <string.h>

/* The replay runs a quantised GEMM as a bf16 GEMM of the same weight bytes, its width scaled by
 * bytes-per-weight / 2 (dev_cuda.c n_effective): the shape cuBLAS sees is that one. */
static double effective_n(const plan_op *op)
{
    if (op->wdtype != CFG_DT_INT4 && op->wdtype != CFG_DT_FP8)
        return (double)op->n;
    return (double)op->n * cfg_dtype_weight_bytes(op->wdtype, op->wgroup) / 2.0;
}

static bool name_ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

int model_law_class(const plan_op *op, double *rows)
{
    double r = 0.0;
    int c = -1;
    switch (op->kind) {
    case PLAN_OP_GEMM:
        r = (double)op->m;
        c = op->batch > 1 ? CFG_LAW_GEMM_BATCHED : effective_n(op) >= (double)op->k ? CFG_LAW_GEMM_WIDE : CFG_LAW_GEMM_NARROW;
        break;
    case PLAN_OP_GROUPED_GEMM:
        /* The replay spreads the rows evenly over the touched experts (one strided-batched GEMM). */
        r = op->batch > 0 ? ceil((double)op->m / op->batch) : (double)op->m;
        c = effective_n(op) >= (double)op->k ? CFG_LAW_GROUPED_WIDE : CFG_LAW_GROUPED_NARROW;
        break;
    case PLAN_OP_ATTENTION:
        /* Query rows that read one KV head: what fills the score tile of one sequence. */
        if (op->kv_shared) {
            r = (double)op->q_len * op->heads;
            c = CFG_LAW_ATTENTION_MLA;
        } else {
            r = (double)op->q_len * (op->kv_heads > 0 ? (double)op->heads / op->kv_heads : 1.0);
            c = CFG_LAW_ATTENTION_GQA;
        }
        break;
    case PLAN_OP_NORM: r = (double)op->m; c = CFG_LAW_NORM; break;
    case PLAN_OP_ELEMENTWISE:
        r = (double)op->m;
        c = name_ends_with(op->name, "silu_mul") ? CFG_LAW_SILU_MUL : CFG_LAW_ELEMENTWISE;
        break;
    case PLAN_OP_EMBEDDING: r = (double)op->m; c = CFG_LAW_EMBEDDING; break;
    default: break;
    }
    if (rows)
        *rows = r < 1.0 ? 1.0 : r;
    return c;
}
