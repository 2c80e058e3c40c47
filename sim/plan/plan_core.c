#include "plan.h"

#include "../util/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const plan_op_kind_names[] = {CFG_OP_LIST(CFG_LIST_NAME_OP) NULL};
const char *const plan_stream_names[] = {"main", "side", NULL};
const char *const plan_class_names[] = {"gemm", "attention", "comm", "other", NULL};
const char *const plan_phase_kind_names[] = {"draft", "verify", "draft_extend", "decode", NULL};

#define OP_CLASS(ID, name, cls, compute, help) PLAN_CLASS_##cls,
#define OP_COMPUTE(ID, name, cls, compute, help) compute,
static const plan_class op_class[] = {CFG_OP_LIST(OP_CLASS)};
static const bool op_compute[] = {CFG_OP_LIST(OP_COMPUTE)};
#undef OP_CLASS
#undef OP_COMPUTE
/* The system file's measured.ops is indexed by op kind. */
_Static_assert((int)PLAN_OP_KIND_COUNT == (int)CFG_SYS_OPS_COUNT, "cfg_system.h sizes measured.ops from the same list");
_Static_assert(sizeof(plan_op_kind_names) / sizeof(*plan_op_kind_names) == PLAN_OP_KIND_COUNT + 1, "one name a kind");

plan_class plan_op_class(plan_op_kind kind) { return op_class[kind]; }
bool plan_op_is_compute(plan_op_kind kind) { return kind >= 0 && kind < PLAN_OP_KIND_COUNT && op_compute[kind]; }
bool plan_op_is_collective(plan_op_kind kind) { return kind >= 0 && kind < PLAN_OP_KIND_COUNT && !op_compute[kind]; }

void plan_collective_elems(const plan_op *op, long long *in, long long *out)
{
    const int r = op->ranks > 0 ? op->ranks : 1;
    *in = op->count;
    switch (op->kind) {
    case PLAN_OP_ALLGATHER: *out = op->count * r; break;
    case PLAN_OP_REDUCE_SCATTER: *out = op->count / r; break;
    default: *out = op->count; break;
    }
}

plan_op *plan_phase_add_op(plan_phase *ph)
{
    if (ph->n_ops == ph->cap_ops) {
        ph->cap_ops = ph->cap_ops ? ph->cap_ops * 2 : 256;
        ph->ops = util_xrealloc(ph->ops, (size_t)ph->cap_ops * sizeof(plan_op));
    }
    plan_op *op = &ph->ops[ph->n_ops++];
    memset(op, 0, sizeof(*op));
    op->batch = 1;
    op->layer = -1;
    return op;
}

void plan_op_finalize(plan_op *op)
{
    const double ab = cfg_dtype_bytes(op->adtype);
    const double wb = cfg_dtype_weight_bytes(op->wdtype, op->wgroup);
    const double m = (double)op->m, n = (double)op->n, k = (double)op->k, batch = op->batch;
    op->flops = op->weight_bytes = op->bytes_read = op->bytes_written = 0.0;
    switch (op->kind) {
    case PLAN_OP_GEMM:
        /* batch > 1 is a bmm: every batch entry has m rows of its own. */
        op->flops = 2.0 * m * n * k * batch;
        op->weight_bytes = k * n * batch * wb;
        op->bytes_read = op->weight_bytes + m * k * batch * ab;
        op->bytes_written = m * n * batch * ab;
        break;
    case PLAN_OP_GROUPED_GEMM:
        /* m counts rows across all groups; each group reads its own weight once. */
        op->flops = 2.0 * m * n * k;
        op->weight_bytes = k * n * batch * wb;
        op->bytes_read = op->weight_bytes + m * k * ab;
        op->bytes_written = m * n * ab;
        break;
    case PLAN_OP_ATTENTION: {
        const double rows = (double)op->batch * (double)op->q_len;
        const double kv_elems = op->kv_shared ? op->qk_dim : (double)op->kv_heads * (op->qk_dim + op->v_dim);
        op->flops = 2.0 * rows * op->heads * (double)op->kv_len * (op->qk_dim + op->v_dim);
        op->bytes_read = (double)op->batch * (double)op->kv_len * kv_elems * ab + rows * op->heads * op->qk_dim * ab;
        op->bytes_written = rows * op->heads * op->v_dim * ab;
        break;
    }
    case PLAN_OP_NORM:
        op->flops = 4.0 * m * n;
        op->weight_bytes = n * ab;
        op->bytes_read = m * n * ab + op->weight_bytes;
        op->bytes_written = m * n * ab;
        break;
    case PLAN_OP_ELEMENTWISE:
        op->flops = m * n;
        op->bytes_read = m * n * ab;
        op->bytes_written = m * n * ab;
        break;
    case PLAN_OP_EMBEDDING:
        /* Expected rows that fall in this rank's vocab shard (k rows of the n-wide table). */
        op->weight_bytes = op->ranks > 0 ? m * n * wb / op->ranks : m * n * wb;
        op->bytes_read = op->weight_bytes + m * 8.0;
        op->bytes_written = m * n * ab;
        break;
    case PLAN_OP_ALLREDUCE:
        op->flops = (double)op->count * (op->ranks - 1);
        op->bytes_read = (double)op->payload_bytes;
        op->bytes_written = (double)op->payload_bytes;
        break;
    case PLAN_OP_ALLGATHER:
        op->bytes_read = (double)op->payload_bytes;
        op->bytes_written = (double)op->payload_bytes * op->ranks;
        break;
    case PLAN_OP_REDUCE_SCATTER:
        op->flops = op->ranks > 0 ? (double)op->count * (op->ranks - 1) / op->ranks : 0.0;
        op->bytes_read = (double)op->payload_bytes;
        op->bytes_written = op->ranks > 0 ? (double)op->payload_bytes / op->ranks : 0.0;
        break;
    case PLAN_OP_ALLTOALL:
        op->bytes_read = (double)op->payload_bytes;
        op->bytes_written = (double)op->payload_bytes;
        break;
    case PLAN_OP_ALLREDUCE_NORM:
        /* The allreduce, then the residual add and the norm over its m x n result: the residual is read
         * and written back, the normalised rows written, the norm weight read. */
        op->flops = (double)op->count * (op->ranks - 1) + 5.0 * m * n;
        op->weight_bytes = n * ab;
        op->bytes_read = (double)op->payload_bytes + m * n * ab + op->weight_bytes;
        op->bytes_written = (double)op->payload_bytes + 2.0 * m * n * ab;
        break;
    default:
        break;
    }
}

void plan_summarize(plan *p)
{
    for (int i = 0; i < p->n_phases; i++) {
        plan_phase *ph = &p->phases[i];
        free(ph->summary.allreduce_bytes);
        memset(&ph->summary, 0, sizeof(ph->summary));
        plan_phase_summary *s = &ph->summary;
        int n_ar = 0;
        for (int j = 0; j < ph->n_ops; j++)
            n_ar += ph->ops[j].kind == PLAN_OP_ALLREDUCE;
        s->allreduce_bytes = util_xcalloc((size_t)n_ar + 1, sizeof(long long));
        for (int j = 0; j < ph->n_ops; j++) {
            const plan_op *op = &ph->ops[j];
            s->op_count[op->kind]++;
            s->flops += op->flops;
            s->weight_bytes += op->weight_bytes;
            s->bytes_read += op->bytes_read;
            s->bytes_written += op->bytes_written;
            if (op->kind == PLAN_OP_ATTENTION)
                s->attention_bytes_read += op->bytes_read;
            else if (op->bytes_read - op->weight_bytes + op->bytes_written > s->activation_peak)
                s->activation_peak = op->bytes_read - op->weight_bytes + op->bytes_written;
            s->two_batch |= op->micro_batch != 0;
            if (op->kind == PLAN_OP_ALLREDUCE)
                s->allreduce_bytes[s->allreduce_count++] = op->payload_bytes;
            else if (op->kind == PLAN_OP_ALLGATHER) {
                s->allgather_count++;
                s->allgather_bytes_total += op->payload_bytes;
            } else if (op->kind == PLAN_OP_GEMM || op->kind == PLAN_OP_GROUPED_GEMM)
                s->gemm_count++;
        }
    }
    plan_index_shapes(p);
}

void plan_free(plan *p)
{
    for (int i = 0; i < p->n_phases; i++) {
        free(p->phases[i].ops);
        free(p->phases[i].shape);
        free(p->phases[i].summary.allreduce_bytes);
    }
    free(p->phases);
    free(p->shapes);
    memset(p, 0, sizeof(*p));
}

const plan_phase *plan_find_phase(const plan *p, const char *name)
{
    for (int i = 0; i < p->n_phases; i++)
        if (strcmp(p->phases[i].name, name) == 0)
            return &p->phases[i];
    return NULL;
}

long long plan_op_effective_n(const plan_op *op)
{
    if (op->wdtype != CFG_DT_INT4 && op->wdtype != CFG_DT_FP8)
        return op->n;
    /* cuBLAS wants the width a multiple of 8 (16-byte rows of bf16). */
    const long long n = (long long)(op->n * cfg_dtype_weight_bytes(op->wdtype, op->wgroup) / 2.0 + 7) / 8 * 8;
    return n < 8 ? 8 : n;
}

static bool name_ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

bool plan_op_is_silu_mul(const plan_op *op)
{
    return op->kind == PLAN_OP_ELEMENTWISE && name_ends_with(op->name, "silu_mul");
}

/* The decode kernel (kernels/vp_attention_plan.cu, make_plan) puts the rows of one KV head into as few
 * balanced chunks of at most 32 rows (VP_ATTN_MAX_NT n8 tiles) as it can, each padded to whole 8-row
 * tiles, and every chunk reads all the keys again: 40 rows run as 2 chunks of 24, the work of 48. Past
 * one chunk, the rows a law prices are those the kernel runs: chunks x rows per chunk. Within one
 * chunk the rows are kept (the probe's points there are measured as they are). */
double plan_attention_rows(long long rows)
{
    if (rows <= 32)
        return (double)rows;
    const long long chunks = (rows + 31) / 32, per = (rows + chunks - 1) / chunks;
    return (double)(chunks * ((per + 7) / 8 * 8));
}

int plan_op_law_class(const plan_op *op, double *rows)
{
    double r = 0.0;
    int c = -1;
    switch (op->kind) {
    case PLAN_OP_GEMM:
        r = (double)op->m;
        c = op->batch > 1 ? CFG_LAW_GEMM_BATCHED : plan_op_effective_n(op) >= op->k ? CFG_LAW_GEMM_WIDE : CFG_LAW_GEMM_NARROW;
        break;
    case PLAN_OP_GROUPED_GEMM:
        /* The replay spreads the rows evenly over the touched experts (one strided-batched GEMM). */
        r = op->batch > 0 ? (double)((op->m + op->batch - 1) / op->batch) : (double)op->m;
        c = plan_op_effective_n(op) >= op->k ? CFG_LAW_GROUPED_WIDE : CFG_LAW_GROUPED_NARROW;
        break;
    case PLAN_OP_ATTENTION:
        /* Query rows that read one KV head: what fills the score tile of one sequence, as the kernel
         * chunks them (plan_attention_rows). */
        if (op->kv_shared) {
            r = plan_attention_rows((long long)op->q_len * op->heads);
            c = CFG_LAW_ATTENTION_MLA;
        } else {
            r = plan_attention_rows(op->q_len * (op->kv_heads > 0 ? op->heads / op->kv_heads : 1));
            c = CFG_LAW_ATTENTION_GQA;
        }
        break;
    case PLAN_OP_NORM: r = (double)op->m; c = CFG_LAW_NORM; break;
    case PLAN_OP_ELEMENTWISE:
        r = (double)op->m;
        c = plan_op_is_silu_mul(op) ? CFG_LAW_SILU_MUL : CFG_LAW_ELEMENTWISE;
        break;
    case PLAN_OP_EMBEDDING: r = (double)op->m; c = CFG_LAW_EMBEDDING; break;
    default: break;
    }
    if (rows)
        *rows = r < 1.0 ? 1.0 : r;
    return c;
}

double plan_op_law_width(const plan_op *op)
{
    if (op->kind != PLAN_OP_GROUPED_GEMM)
        return 0.0;
    const long long n = plan_op_effective_n(op);
    return (double)(n < op->k ? n : op->k);
}

/* The distinct experts `tokens` routed tokens touch under uniform routing: E (1 - (1 - k/E)^tokens). */
double plan_expected_active_experts(int experts, int top_k, long long tokens)
{
    if (experts <= 0 || top_k <= 0)
        return 0.0;
    double miss = 1.0 - (double)top_k / experts;
    return experts * (1.0 - pow(miss, (double)tokens));
}

int plan_op_flat_index(const plan *p, int phase, int op)
{
    int idx = 0;
    for (int i = 0; i < phase; i++)
        idx += p->phases[i].n_ops;
    return idx + op;
}
