/* Building the cycle schedule from a scenario. Per-rank shapes follow SGLang's tensor-parallel layout
 * for DeepSeek-V3-style models without DP attention (python/sglang/srt/models/deepseek_v2.py) and its
 * EAGLE-3 draft head (python/sglang/srt/models/llama_eagle3.py). */
#include "plan.h"
#include "plan_emit.h"
#include "plan_ep.h"

#include "../config/cfg_accept.h"
#include "../util/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef plan_emit builder;

static plan_op *gemm(builder *b, const char *name, int layer, long long m, long long k, long long n, cfg_weight w)
{
    return plan_emit_matmul(b, PLAN_OP_GEMM, name, layer, m, k, n, w, 1);
}

/* Vocab-parallel embedding: each rank looks up the tokens in its vocab shard and writes zeros
 * elsewhere; the allreduce assembles the rows (VocabParallelEmbedding). */
static void embedding(builder *b, const cfg_model *m, cfg_weight w)
{
    plan_op *op = plan_emit_add(b, PLAN_OP_EMBEDDING, "embedding", -1);
    op->m = b->rows;
    op->n = m->hidden;
    op->k = m->vocab / b->ranks;
    op->wdtype = (cfg_dtype)w.dtype;
    op->wgroup = w.group;
    plan_op_finalize(op);
    plan_emit_collective(b, PLAN_OP_ALLREDUCE, "allreduce.embedding", -1, b->rows * m->hidden);
}

/* Vocab-parallel lm_head over `rows` rows, then the all-gather of logits (LogitsProcessor). */
static void lm_head(builder *b, int vocab, int hidden, long long rows, cfg_weight w, const char *sample_name)
{
    gemm(b, "lm_head", -1, rows, hidden, vocab / b->ranks, w);
    plan_emit_collective(b, PLAN_OP_ALLGATHER, "allgather.logits", -1, rows * (vocab / b->ranks));
    plan_emit_rowwise(b, PLAN_OP_ELEMENTWISE, sample_name, -1, rows, vocab);
}

/* One DeepSeek-V3 decoder layer with absorbed MLA (the decode path: q_b, w_kc bmm, attention over the
 * latent cache, w_vc bmm, o_proj). */
static void target_layer(builder *b, const cfg_scenario *sc, int layer, int active_experts)
{
    const cfg_model *m = &sc->target;
    const int tp = b->ranks, H = m->hidden;
    const int heads = m->attention.heads / tp;
    const int nope = m->attention.qk_nope_head_dim, rope = m->attention.qk_rope_head_dim;
    const int qlr = m->attention.q_lora_rank, kvlr = m->attention.kv_lora_rank, vd = m->attention.v_head_dim;
    const long long M = b->rows;
    cfg_weight aw = m->weights.attention;

    plan_emit_rowwise(b, PLAN_OP_NORM, "input_layernorm", layer, M, H);
    /* fused_qkv_a_proj_with_mqa is replicated on every rank: [H -> q_lora + kv_lora + rope]. */
    gemm(b, "fused_qkv_a_proj", layer, M, H, qlr + kvlr + rope, aw);
    plan_emit_rowwise(b, PLAN_OP_NORM, "q_a_layernorm", layer, M, qlr);
    plan_emit_rowwise(b, PLAN_OP_NORM, "kv_a_layernorm", layer, M, kvlr);
    gemm(b, "q_b_proj", layer, M, qlr, (long long)heads * (nope + rope), aw);
    plan_op *kc = gemm(b, "w_kc", layer, M, nope, kvlr, aw);
    kc->batch = heads;
    plan_op_finalize(kc);
    plan_emit_rowwise(b, PLAN_OP_ELEMENTWISE, "rope", layer, M, (long long)(heads + 1) * rope);

    plan_op *at = plan_emit_add(b, PLAN_OP_ATTENTION, "mla_attention", layer);
    at->batch = sc->workload.batch;
    at->q_len = b->ph->tokens;
    at->kv_len = sc->workload.context;
    at->heads = heads;
    at->kv_heads = 1;
    at->qk_dim = kvlr + rope; /* 576: latent + rope key, cached per token */
    at->v_dim = kvlr;         /* values are the latent itself */
    at->kv_shared = true;
    plan_op_finalize(at);

    plan_op *vc = gemm(b, "w_vc", layer, M, kvlr, vd, aw);
    vc->batch = heads;
    plan_op_finalize(vc);
    gemm(b, "o_proj", layer, M, (long long)heads * vd, H, aw);
    plan_emit_collective(b, PLAN_OP_ALLREDUCE, "allreduce.attn", layer, M * H);
    plan_emit_rowwise(b, PLAN_OP_NORM, "post_attention_layernorm", layer, M, H);

    if (layer < m->first_k_dense) {
        const int inter = m->mlp.intermediate / tp;
        gemm(b, "mlp.gate_up", layer, M, H, 2LL * inter, m->weights.dense_mlp);
        plan_emit_rowwise(b, PLAN_OP_ELEMENTWISE, "mlp.silu_mul", layer, M, inter);
        gemm(b, "mlp.down", layer, M, inter, H, m->weights.dense_mlp);
        plan_emit_collective(b, PLAN_OP_ALLREDUCE, "allreduce.mlp", layer, M * H);
        return;
    }
    if (sc->parallel.ep > 1) {
        plan_ep_moe(b->ph, sc, layer, M, tp, active_experts, true);
        return;
    }
    const int inter = m->moe.intermediate / tp;
    const int topk = m->moe.top_k;
    gemm(b, "moe.gate", layer, M, H, m->moe.experts, m->weights.router);
    plan_emit_rowwise(b, PLAN_OP_ELEMENTWISE, "moe.topk", layer, M, m->moe.experts);
    if (m->moe.shared_experts > 0) {
        /* SGLang overlaps the shared expert with the routed ones on an alternate stream. */
        const int sinter = inter * m->moe.shared_experts;
        /* (Op pointers die at the next add: set each stream before adding the next op.) */
        gemm(b, "shared.gate_up", layer, M, H, 2LL * sinter, m->weights.shared_expert)->stream = PLAN_STREAM_SIDE;
        plan_emit_rowwise(b, PLAN_OP_ELEMENTWISE, "shared.silu_mul", layer, M, sinter)->stream = PLAN_STREAM_SIDE;
        gemm(b, "shared.down", layer, M, sinter, H, m->weights.shared_expert)->stream = PLAN_STREAM_SIDE;
    }
    /* Fused MoE: one grouped launch per projection over the distinct experts touched; m counts the
     * routed rows (tokens x top_k) across all groups. */
    plan_op *w13 = plan_emit_add(b, PLAN_OP_GROUPED_GEMM, "moe.w13", layer);
    w13->m = M * topk;
    w13->k = H;
    w13->n = 2LL * inter;
    w13->batch = active_experts;
    w13->wdtype = (cfg_dtype)m->weights.routed_experts.dtype;
    w13->wgroup = m->weights.routed_experts.group;
    plan_op_finalize(w13);
    plan_emit_rowwise(b, PLAN_OP_ELEMENTWISE, "moe.silu_mul", layer, M * topk, inter);
    plan_op *w2 = plan_emit_add(b, PLAN_OP_GROUPED_GEMM, "moe.w2", layer);
    w2->m = M * topk;
    w2->k = inter;
    w2->n = H;
    w2->batch = active_experts;
    w2->wdtype = (cfg_dtype)m->weights.routed_experts.dtype;
    w2->wgroup = m->weights.routed_experts.group;
    plan_op_finalize(w2);
    plan_emit_rowwise(b, PLAN_OP_ELEMENTWISE, "moe.combine", layer, M, H);
    plan_emit_collective(b, PLAN_OP_ALLREDUCE, "allreduce.moe", layer, M * H);
}

static void target_pass(builder *b, const cfg_scenario *sc, int active_experts)
{
    const cfg_model *m = &sc->target;
    if (sc->parallel.dp_attention) {
        plan_ep_dp_target_pass(b->ph, sc, b->rows, b->ranks, active_experts);
        return;
    }
    embedding(b, m, m->weights.embedding);
    for (int l = 0; l < m->layers; l++)
        target_layer(b, sc, l, active_experts);
    plan_emit_rowwise(b, PLAN_OP_NORM, "final_norm", -1, b->rows, m->hidden);
    lm_head(b, m->vocab, m->hidden, b->rows, m->weights.lm_head, "verify.greedy");
}

/* One forward of the EAGLE-3 draft head (LlamaForCausalLMEagle3). `with_fc`: the input hidden states
 * are the target's fused auxiliary states (3H wide) and go through fc first; in the draft steps the
 * head consumes its own H-wide output and fc is skipped. `logit_rows`: rows that reach lm_head. */
static void draft_pass(builder *b, const cfg_scenario *sc, bool with_fc, long long logit_rows)
{
    const cfg_model *d = &sc->draft;
    const int tp = b->ranks, H = d->hidden, hd = d->attention.head_dim;
    const int heads = d->attention.heads / tp;
    const int kv_all = d->attention.kv_heads ? d->attention.kv_heads : d->attention.heads;
    const int kv = kv_all >= tp ? kv_all / tp : 1; /* fewer KV heads than ranks: replicated */
    const long long M = b->rows;
    cfg_weight aw = d->weights.attention;

    /* The draft head borrows the target's vocab-parallel embedding (set_embed). */
    embedding(b, &sc->target, sc->target.weights.embedding);
    if (with_fc) {
        const int n_aux = d->eagle3.n_aux_layers > 0 ? d->eagle3.n_aux_layers : 3;
        gemm(b, "fc", 0, M, (long long)n_aux * H, H, d->weights.fc); /* replicated, no collective */
    }
    plan_emit_rowwise(b, PLAN_OP_NORM, "input_layernorm", 0, M, H);
    plan_emit_rowwise(b, PLAN_OP_NORM, "hidden_norm", 0, M, H);
    /* Attention reads cat(embeds, hidden): 2H wide. */
    gemm(b, "qkv_proj", 0, M, 2LL * H, (long long)(heads + 2 * kv) * hd, aw);
    plan_emit_rowwise(b, PLAN_OP_ELEMENTWISE, "rope", 0, M, (long long)(heads + kv) * hd);
    plan_op *at = plan_emit_add(b, PLAN_OP_ATTENTION, "gqa_attention", 0);
    at->batch = sc->workload.batch;
    at->q_len = b->ph->tokens;
    at->kv_len = sc->workload.context;
    at->heads = heads;
    at->kv_heads = kv;
    at->qk_dim = hd;
    at->v_dim = hd;
    plan_op_finalize(at);
    gemm(b, "o_proj", 0, M, (long long)heads * hd, H, aw);
    plan_emit_collective(b, PLAN_OP_ALLREDUCE, "allreduce.attn", 0, M * H);
    plan_emit_rowwise(b, PLAN_OP_NORM, "post_attention_layernorm", 0, M, H);
    const int inter = d->mlp.intermediate / tp;
    gemm(b, "mlp.gate_up", 0, M, H, 2LL * inter, d->weights.dense_mlp);
    plan_emit_rowwise(b, PLAN_OP_ELEMENTWISE, "mlp.silu_mul", 0, M, inter);
    gemm(b, "mlp.down", 0, M, inter, H, d->weights.dense_mlp);
    plan_emit_collective(b, PLAN_OP_ALLREDUCE, "allreduce.mlp", 0, M * H);
    plan_emit_rowwise(b, PLAN_OP_NORM, "final_norm", -1, M, H);
    const int dvocab = d->eagle3.draft_vocab ? d->eagle3.draft_vocab : d->vocab;
    lm_head(b, dvocab, H, logit_rows, d->weights.lm_head, "draft.topk");
}

static plan_phase *new_phase(plan *p, const char *name, plan_phase_kind kind, const char *model, int tokens,
                             int batch)
{
    p->phases = util_xrealloc(p->phases, (size_t)(p->n_phases + 1) * sizeof(plan_phase));
    plan_phase *ph = &p->phases[p->n_phases++];
    memset(ph, 0, sizeof(*ph));
    snprintf(ph->name, sizeof(ph->name), "%s", name);
    snprintf(ph->model, sizeof(ph->model), "%s", model);
    ph->kind = kind;
    ph->tokens = tokens;
    ph->batch = batch;
    return ph;
}

static int resolve_active_experts(const cfg_scenario *sc, long long tokens)
{
    const cfg_model *m = &sc->target;
    if (m->first_k_dense >= m->layers)
        return 0;
    if (sc->workload.active_experts > 0)
        return sc->workload.active_experts < m->moe.experts ? sc->workload.active_experts : m->moe.experts;
    int e = (int)lround(plan_expected_active_experts(m->moe.experts, m->moe.top_k, tokens));
    if (e < m->moe.top_k)
        e = m->moe.top_k;
    return e < m->moe.experts ? e : m->moe.experts;
}

int plan_build(const cfg_scenario *sc, plan *out, char *why, size_t why_len)
{
    memset(out, 0, sizeof(*out));
    const int tp = sc->parallel.tp;
    const cfg_model *t = &sc->target;
    /* The same divisibility the config checks (cfg_scenario.c check_tp): the dense MLP's size only
     * matters when there are dense layers, the experts' only when there are MoE layers. */
    if (t->attention.heads % tp || t->vocab % tp || (t->first_k_dense > 0 && t->mlp.intermediate % tp) ||
        (t->first_k_dense < t->layers && t->moe.intermediate % tp)) {
        snprintf(why, why_len, "parallel.tp=%d does not divide the target's heads, vocab or intermediate sizes", tp);
        return -1;
    }
    snprintf(out->scenario, sizeof(out->scenario), "%s", sc->name ? sc->name : "");
    out->ranks = tp;
    out->batch = sc->workload.batch;
    out->context = sc->workload.context;
    cfg_accept acc;
    cfg_accept_eval(sc, &acc);
    out->expected_tokens = acc.tokens;
    const int B = sc->workload.batch;
    builder b = {.ranks = tp, .act = (cfg_dtype)t->activation_dtype};

    if (sc->speculative.algorithm == CFG_SPEC_NONE) {
        out->active_experts = resolve_active_experts(sc, B);
        b.ph = new_phase(out, "decode", PLAN_PHASE_DECODE, "target", 1, B);
        b.rows = B;
        target_pass(&b, sc, out->active_experts);
        if (sc->collectives.allreduce_split)
            plan_split_allreduce(out);
        if (sc->overlap.two_batch)
            plan_tbo_split(sc, b.ph);
        plan_summarize(out);
        if (sc->fusion.allreduce_residual_norm)
            plan_fuse_allreduce_norm(out);
        return 0;
    }

    const int steps = sc->speculative.steps, topk = sc->speculative.topk;
    const int ndt = sc->speculative.num_draft_tokens;
    out->active_experts = resolve_active_experts(sc, (long long)B * ndt);

    for (int s = 1; s < steps; s++) {
        char name[PLAN_NAME_MAX];
        snprintf(name, sizeof(name), "draft_%d", s);
        b.ph = new_phase(out, name, PLAN_PHASE_DRAFT, "draft", topk, B);
        b.rows = (long long)B * topk;
        draft_pass(&b, sc, false, b.rows);
    }
    b.ph = new_phase(out, "verify", PLAN_PHASE_VERIFY, "target", ndt, B);
    b.rows = (long long)B * ndt;
    target_pass(&b, sc, out->active_experts);
    if (sc->overlap.two_batch)
        plan_tbo_split(sc, b.ph);

    /* Draft-extend over the accepted tokens, padded to the longest acceptable path, steps + 1 (SGLang's
     * EAGLEDraftExtendCudaGraphRunner: num_tokens_per_bs = speculative_num_steps + 1; a chain's ndt); only
     * each request's last row reaches lm_head. */
    b.ph = new_phase(out, "draft_extend", PLAN_PHASE_DRAFT_EXTEND, "draft", steps + 1, B);
    b.rows = (long long)B * (steps + 1);
    draft_pass(&b, sc, true, B);
    if (sc->collectives.allreduce_split)
        plan_split_allreduce(out);
    plan_summarize(out);
    if (sc->fusion.allreduce_residual_norm)
        plan_fuse_allreduce_norm(out);
    return 0;
}
