/* Two-batch overlap (SGLang --enable-two-batch-overlap, DeepSeek's TBO) as a rewrite of a target phase.
 *
 * The batch of B requests becomes micro-batch a (ceil(B/2) requests) and micro-batch b (floor(B/2)):
 * an odd batch gives a the extra request, as SGLang's split by requests does. Every op appears once per
 * micro-batch with its rows scaled to that micro-batch's requests; the weights are read once per
 * micro-batch, so a TBO pass reads every weight twice (that is TBO's real cost at small batch, and
 * plan_op_finalize's weight_bytes carries it). Routed experts are re-estimated for each half's tokens.
 *
 * Order: the phase is cut into stages, each ending at a collective; the new phase holds a's stage, then
 * b's stage, for every stage in turn:
 *   a.C1 a.AR1 | b.C1 b.AR1 | a.C2 a.AR2 | b.C2 b.AR2 ...
 * so every collective of one micro-batch is followed by compute of the other, which depends only on its
 * own micro-batch's earlier ops and may run while the collective is in flight. The ops carry
 * micro_batch 1 / 2 for the model (model_tbo.c) and the replay; all of them are on the main stream: the
 * shared expert's side-stream overlap inside one micro-batch gives way to the overlap between
 * micro-batches (the executor's fork/join rules for the side stream then never meet a TBO phase). */
#include "plan.h"

#include "../util/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool plan_phase_is_tbo(const plan_phase *ph)
{
    for (int i = 0; i < ph->n_ops; i++)
        if (ph->ops[i].micro_batch)
            return true;
    return false;
}

/* Distinct routed experts one micro-batch touches: the expected count for its tokens, clamped as the
 * builder clamps the full pass's (at least top_k, at most the full pass's count). A scenario that sets
 * workload.active_experts keeps its figure for both halves: it is a measurement of the whole batch,
 * and a half touches at most that many. */
static int half_experts(const cfg_scenario *sc, long long tokens, int full)
{
    if (sc->workload.active_experts > 0)
        return full;
    const cfg_model *m = &sc->target;
    int e = (int)lround(plan_expected_active_experts(m->moe.experts, m->moe.top_k, tokens));
    if (e < m->moe.top_k)
        e = m->moe.top_k;
    return e < full ? e : full;
}

/* One op of micro-batch `mb` (1 = a, 2 = b) of `part` requests out of the phase's `whole`. Every row
 * count of a target op is requests x (tokens, or tokens x top_k): scaling by part / whole is exact. */
static void half_op(const cfg_scenario *sc, const plan_phase *ph, plan_op *op, int mb, int part, int whole)
{
    char name[PLAN_NAME_MAX];
    const int room = PLAN_NAME_MAX - 3; /* leave ".a" and the terminator */
    snprintf(name, sizeof(name), "%.*s.%c", room, op->name, mb == 1 ? 'a' : 'b');
    memcpy(op->name, name, sizeof(op->name));
    op->micro_batch = mb;
    op->stream = PLAN_STREAM_MAIN;
    op->m = op->m / whole * part;
    if (op->kind == PLAN_OP_ATTENTION)
        op->batch = part;
    if (op->kind == PLAN_OP_GROUPED_GEMM)
        op->batch = half_experts(sc, (long long)part * ph->tokens, op->batch);
    if (plan_op_is_collective(op->kind)) {
        op->count = op->count / whole * part;
        op->payload_bytes = op->payload_bytes / whole * part;
    }
    plan_op_finalize(op);
}

void plan_tbo_split(const cfg_scenario *sc, plan_phase *ph)
{
    const int whole = ph->batch;
    if (whole < 2) /* cfg_scenario.c refuses two_batch below batch 2: nothing to split */
        return;
    const int part[3] = {0, (whole + 1) / 2, whole / 2};
    plan_op *old = ph->ops;
    const int n = ph->n_ops;
    ph->ops = NULL;
    ph->n_ops = ph->cap_ops = 0;
    for (int start = 0; start < n;) {
        int end = start;
        while (end < n && !plan_op_is_collective(old[end].kind))
            end++;
        if (end < n)
            end++; /* the stage's collective closes it */
        for (int mb = 1; mb <= 2; mb++)
            for (int i = start; i < end; i++) {
                plan_op *op = plan_phase_add_op(ph);
                *op = old[i];
                half_op(sc, ph, op, mb, part[mb], whole);
            }
        start = end;
    }
    free(old);
}
