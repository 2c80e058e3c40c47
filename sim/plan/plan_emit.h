/* plan_emit: appending ops to a phase, shared by the plan builders of sim/plan (plan_build.c's tensor
 * parallel layers, plan_ep.c's expert-parallel ones). Internal to sim/plan. */
#ifndef VPSIM_PLAN_EMIT_H
#define VPSIM_PLAN_EMIT_H

#include "plan.h"

typedef struct plan_emit {
    plan_phase *ph;
    int ranks;
    long long rows; /* activation rows in this phase: batch x tokens */
    cfg_dtype act;
} plan_emit;

/* A new op of `kind` on the main stream with the builder's ranks and activation dtype. */
plan_op *plan_emit_add(plan_emit *b, plan_op_kind kind, const char *name, int layer);
/* A GEMM (kind GEMM: `batch` > 1 is a bmm) or a grouped GEMM over `batch` experts (GROUPED_GEMM). */
plan_op *plan_emit_matmul(plan_emit *b, plan_op_kind kind, const char *name, int layer, long long m, long long k,
                         long long n, cfg_weight w, int batch);
/* A norm or elementwise op over m x n. */
plan_op *plan_emit_rowwise(plan_emit *b, plan_op_kind kind, const char *name, int layer, long long m, long long n);
/* A collective of `count` elements per rank; none at one rank (the server skips it entirely). */
void plan_emit_collective(plan_emit *b, plan_op_kind kind, const char *name, int layer, long long count);

#endif
