/* fusion.allreduce_residual_norm: every allreduce whose result goes straight into an RMSNorm of the
 * same rows becomes one allreduce_norm op (residual += allreduce(x); out = RMSNorm(residual) x weight),
 * as FlashInfer's allreduce fusion does in SGLang and TensorRT-LLM.
 *
 * The rule is structural, so it follows the builder (plan_build.c) without naming its ops: an allreduce
 * immediately followed, on the main stream, by a norm whose m x n equals its count. In the plans the
 * builder makes today that is:
 *   target  allreduce.attn -> post_attention_layernorm (every layer);
 *           allreduce.moe / allreduce.mlp -> the next layer's input_layernorm, the last one -> final_norm;
 *           allreduce.embedding -> layer 0's input_layernorm (the residual starts at zero: layer 0's
 *           residual is the embedding output itself, which residual += sum reproduces);
 *   draft   allreduce.attn -> post_attention_layernorm, allreduce.mlp -> final_norm, and in the draft
 *           steps allreduce.embedding -> input_layernorm; not in draft_extend, where fc stands between.
 * The all-gather of logits is followed by sampling, not a norm, and stays. A side-stream op (the shared
 * expert) joins before the collective, so the fused op keeps the allreduce's place and that order.
 * A one-rank plan has no collectives and is left alone. */
#include "plan.h"

#include <stdio.h>
#include <string.h>

static bool fusable(const plan_op *ar, const plan_op *norm)
{
    return ar->kind == PLAN_OP_ALLREDUCE && norm->kind == PLAN_OP_NORM && norm->stream == PLAN_STREAM_MAIN &&
           ar->stream == PLAN_STREAM_MAIN && norm->m * norm->n == ar->count && norm->n > 0;
}

int plan_fuse_allreduce_norm(plan *p)
{
    int fused = 0;
    for (int ph = 0; ph < p->n_phases; ph++) {
        plan_phase *phase = &p->phases[ph];
        for (int i = 0; i + 1 < phase->n_ops; i++) {
            plan_op *ar = &phase->ops[i];
            const plan_op *norm = &phase->ops[i + 1];
            if (!fusable(ar, norm))
                continue;
            /* "allreduce.attn" -> "allreduce_norm.attn": the allreduce names what it reduces. */
            const char *dot = strchr(ar->name, '.');
            char name[PLAN_NAME_MAX];
            snprintf(name, sizeof(name), "allreduce_norm%s", dot ? dot : "");
            snprintf(ar->name, sizeof(ar->name), "%s", name);
            ar->kind = PLAN_OP_ALLREDUCE_NORM;
            ar->m = norm->m;
            ar->n = norm->n;
            ar->adtype = norm->adtype;
            plan_op_finalize(ar);
            memmove(&phase->ops[i + 1], &phase->ops[i + 2], (size_t)(phase->n_ops - i - 2) * sizeof(plan_op));
            phase->n_ops--;
            fused++;
        }
    }
    plan_summarize(p);
    return fused;
}
