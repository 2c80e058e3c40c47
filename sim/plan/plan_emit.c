#include "plan_emit.h"

#include <stdio.h>

plan_op *plan_emit_add(plan_emit *b, plan_op_kind kind, const char *name, int layer)
{
    plan_op *op = plan_phase_add_op(b->ph);
    op->kind = kind;
    snprintf(op->name, sizeof(op->name), "%s", name);
    op->layer = layer;
    op->stream = PLAN_STREAM_MAIN;
    op->adtype = b->act;
    op->wdtype = b->act;
    op->batch = 1;
    op->ranks = b->ranks;
    return op;
}

plan_op *plan_emit_matmul(plan_emit *b, plan_op_kind kind, const char *name, int layer, long long m, long long k,
                         long long n, cfg_weight w, int batch)
{
    plan_op *op = plan_emit_add(b, kind, name, layer);
    op->m = m;
    op->k = k;
    op->n = n;
    op->batch = batch;
    op->wdtype = (cfg_dtype)w.dtype;
    op->wgroup = w.group;
    plan_op_finalize(op);
    return op;
}

plan_op *plan_emit_rowwise(plan_emit *b, plan_op_kind kind, const char *name, int layer, long long m, long long n)
{
    plan_op *op = plan_emit_add(b, kind, name, layer);
    op->m = m;
    op->n = n;
    plan_op_finalize(op);
    return op;
}

void plan_emit_collective(plan_emit *b, plan_op_kind kind, const char *name, int layer, long long count)
{
    if (b->ranks == 1)
        return;
    plan_op *op = plan_emit_add(b, kind, name, layer);
    op->count = count;
    op->payload_bytes = (long long)(count * cfg_dtype_bytes(b->act));
    plan_op_finalize(op);
}
