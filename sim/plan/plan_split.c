/* collectives.allreduce_split: each layer allreduce of the hidden state that feeds an RMSNorm becomes
 * reduce-scatter -> the norm on this rank's shard of the rows -> all-gather (sequence parallelism over
 * the TP group, as SGLang's reduce-scatter + all-gather layer communicator does).
 *
 * The rows are padded up to a multiple of the ranks, as SGLang pads tokens for its scattered mode, so
 * every rank gets the same rows_padded / ranks rows: the reduce-scatter sends rows_padded x H elements,
 * the norm runs on rows_padded / ranks rows, the all-gather sends rows_padded / ranks x H and returns
 * rows_padded x H (the padding rows are dropped after it).
 *
 * Only allreduces directly followed by a norm over the same rows x hidden are split: the layer
 * allreduces (attn -> post_attention_layernorm, mlp/moe -> the next input_layernorm or final_norm), in
 * the target and the draft. The embedding's allreduce (layer -1) stays whole: it starts the residual
 * stream, which every rank then holds in full; the logits all-gather is not an allreduce. */
#include "plan.h"

#include "../util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A split candidate: a layer allreduce whose next op normalises exactly its rows x hidden. */
static bool splittable(const plan_op *op, const plan_op *next)
{
    return op->kind == PLAN_OP_ALLREDUCE && op->layer >= 0 && op->ranks > 1 && next &&
           next->kind == PLAN_OP_NORM && next->stream == op->stream && next->n > 0 && next->m * next->n == op->count;
}

/* "allreduce.attn" -> "<prefix>.attn": the suffix says which allreduce was split. */
static void set_name(plan_op *op, const char *from, const char *prefix)
{
    const char *dot = strchr(from, '.');
    snprintf(op->name, sizeof(op->name), "%s%s", prefix, dot ? dot : "");
}

static void split_phase(plan_phase *ph)
{
    const int n = ph->n_ops;
    plan_op *old = util_xmalloc((size_t)(n > 0 ? n : 1) * sizeof(plan_op));
    memcpy(old, ph->ops, (size_t)n * sizeof(plan_op));
    ph->n_ops = 0;
    for (int i = 0; i < n; i++) {
        const plan_op *ar = &old[i], *next = i + 1 < n ? &old[i + 1] : NULL;
        if (!splittable(ar, next)) {
            *plan_phase_add_op(ph) = *ar;
            continue;
        }
        const long long r = ar->ranks, H = next->n, rows = next->m;
        const long long shard = (rows + r - 1) / r; /* rows per rank after padding to a multiple of r */
        const long long elem = ar->count > 0 ? ar->payload_bytes / ar->count : 0;

        plan_op *rs = plan_phase_add_op(ph);
        *rs = *ar;
        rs->kind = PLAN_OP_REDUCE_SCATTER;
        set_name(rs, ar->name, "reduce_scatter");
        rs->count = shard * r * H;
        rs->payload_bytes = rs->count * elem;
        plan_op_finalize(rs);

        plan_op *norm = plan_phase_add_op(ph);
        *norm = *next;
        norm->m = shard;
        plan_op_finalize(norm);

        plan_op *ag = plan_phase_add_op(ph);
        *ag = *ar;
        ag->kind = PLAN_OP_ALLGATHER;
        set_name(ag, ar->name, "allgather");
        ag->count = shard * H;
        ag->payload_bytes = ag->count * elem;
        plan_op_finalize(ag);
        i++; /* the norm was consumed */
    }
    free(old);
}

void plan_split_allreduce(plan *p)
{
    if (p->ranks < 2)
        return; /* one rank: the plan has no collectives to split */
    for (int ph = 0; ph < p->n_phases; ph++)
        split_phase(&p->phases[ph]);
}
