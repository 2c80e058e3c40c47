/* Expert parallelism and DP attention for the target (see plan_ep.h for the layout and its source). */
#include "plan_ep.h"
#include "plan_emit.h"

#include <stdio.h>

long long plan_ep_rows_shard(long long rows, int ep) { return ep > 1 ? (rows + ep - 1) / ep : rows; }

long long plan_ep_alltoall_count(long long rows_shard, int top_k, int hidden, int ep)
{
    const long long raw = rows_shard * top_k * hidden;
    return ep > 1 ? (raw + ep - 1) / ep * ep : raw;
}

int plan_ep_active_experts(int active_all, int experts, int ep)
{
    const int local = experts / ep;
    const int a = (active_all + ep / 2) / ep; /* round to nearest: uniform routing spreads them evenly */
    return a < 1 ? 1 : a > local ? local : a;
}

void plan_ep_moe(plan_phase *ph, const cfg_scenario *sc, int layer, long long rows, int ranks, int active_all,
                 bool gather)
{
    const cfg_model *m = &sc->target;
    plan_emit b = {.ph = ph, .ranks = ranks, .act = (cfg_dtype)m->activation_dtype};
    const int H = m->hidden, topk = m->moe.top_k, inter = m->moe.intermediate, ep = sc->parallel.ep;
    /* Under TP attention every rank holds all rows and routes its shard; under DP attention they are
     * its own already. */
    const long long shard = gather ? plan_ep_rows_shard(rows, ep) : rows;
    /* Routed rows reaching one rank: 1/ep of every rank's shard x top_k under uniform routing. */
    const long long routed = shard * topk;
    const long long count = plan_ep_alltoall_count(shard, topk, H, ep);
    const int active = plan_ep_active_experts(active_all, m->moe.experts, ep);

    plan_emit_matmul(&b, PLAN_OP_GEMM, "moe.gate", layer, shard, H, m->moe.experts, m->weights.router, 1);
    plan_emit_rowwise(&b, PLAN_OP_ELEMENTWISE, "moe.topk", layer, shard, m->moe.experts);
    if (m->moe.shared_experts > 0) {
        /* Replicated shared experts over this rank's rows, overlapped on the side stream. */
        const int sinter = inter * m->moe.shared_experts;
        plan_emit_matmul(&b, PLAN_OP_GEMM, "shared.gate_up", layer, shard, H, 2LL * sinter, m->weights.shared_expert, 1)->stream =
            PLAN_STREAM_SIDE;
        plan_emit_rowwise(&b, PLAN_OP_ELEMENTWISE, "shared.silu_mul", layer, shard, sinter)->stream = PLAN_STREAM_SIDE;
        plan_emit_matmul(&b, PLAN_OP_GEMM, "shared.down", layer, shard, sinter, H, m->weights.shared_expert, 1)->stream = PLAN_STREAM_SIDE;
    }
    plan_emit_collective(&b, PLAN_OP_ALLTOALL, "alltoall.dispatch", layer, count);
    /* Whole experts: the full intermediate, `active` of this rank's experts / ep. */
    plan_emit_matmul(&b, PLAN_OP_GROUPED_GEMM, "moe.w13", layer, routed, H, 2LL * inter, m->weights.routed_experts, active);
    plan_emit_rowwise(&b, PLAN_OP_ELEMENTWISE, "moe.silu_mul", layer, routed, inter);
    plan_emit_matmul(&b, PLAN_OP_GROUPED_GEMM, "moe.w2", layer, routed, inter, H, m->weights.routed_experts, active);
    plan_emit_collective(&b, PLAN_OP_ALLTOALL, "alltoall.combine", layer, count);
    plan_emit_rowwise(&b, PLAN_OP_ELEMENTWISE, "moe.combine", layer, shard, H);
    if (gather)
        plan_emit_collective(&b, PLAN_OP_ALLGATHER, "allgather.moe", layer, shard * H);
}

/* Attention of one layer on the rank's own requests with every head (whole weights), no allreduce. */
static void dp_attention(plan_emit *b, const cfg_scenario *sc, int layer, long long rows, int batch, int tokens)
{
    const cfg_model *m = &sc->target;
    const int H = m->hidden, heads = m->attention.heads;
    const int nope = m->attention.qk_nope_head_dim, rope = m->attention.qk_rope_head_dim;
    const int qlr = m->attention.q_lora_rank, kvlr = m->attention.kv_lora_rank, vd = m->attention.v_head_dim;
    const cfg_weight aw = m->weights.attention;
    plan_emit_rowwise(b, PLAN_OP_NORM, "input_layernorm", layer, rows, H);
    plan_emit_matmul(b, PLAN_OP_GEMM, "fused_qkv_a_proj", layer, rows, H, qlr + kvlr + rope, aw, 1);
    plan_emit_rowwise(b, PLAN_OP_NORM, "q_a_layernorm", layer, rows, qlr);
    plan_emit_rowwise(b, PLAN_OP_NORM, "kv_a_layernorm", layer, rows, kvlr);
    plan_emit_matmul(b, PLAN_OP_GEMM, "q_b_proj", layer, rows, qlr, (long long)heads * (nope + rope), aw, 1);
    plan_emit_matmul(b, PLAN_OP_GEMM, "w_kc", layer, rows, nope, kvlr, aw, heads);
    plan_emit_rowwise(b, PLAN_OP_ELEMENTWISE, "rope", layer, rows, (long long)(heads + 1) * rope);
    plan_op *at = plan_emit_add(b, PLAN_OP_ATTENTION, "mla_attention", layer);
    at->batch = batch;
    at->q_len = tokens;
    at->kv_len = sc->workload.context;
    at->heads = heads;
    at->kv_heads = 1;
    at->qk_dim = kvlr + rope;
    at->v_dim = kvlr;
    at->kv_shared = true;
    plan_op_finalize(at);
    plan_emit_matmul(b, PLAN_OP_GEMM, "w_vc", layer, rows, kvlr, vd, aw, heads);
    plan_emit_matmul(b, PLAN_OP_GEMM, "o_proj", layer, rows, (long long)heads * vd, H, aw, 1);
    plan_emit_rowwise(b, PLAN_OP_NORM, "post_attention_layernorm", layer, rows, H);
}

void plan_ep_dp_target_pass(plan_phase *ph, const cfg_scenario *sc, long long rows, int ranks, int active_all)
{
    const cfg_model *m = &sc->target;
    plan_emit b = {.ph = ph, .ranks = ranks, .act = (cfg_dtype)m->activation_dtype};
    const int ep = sc->parallel.ep, H = m->hidden, tokens = ph->tokens;
    const long long own = rows / ep; /* the config makes batch a multiple of ep */
    /* SGLang replicates the embedding under DP attention (VocabParallelEmbedding enable_tp=False). */
    plan_op *emb = plan_emit_add(&b, PLAN_OP_EMBEDDING, "embedding", -1);
    emb->m = own;
    emb->n = H;
    emb->k = m->vocab;
    emb->ranks = 1;
    emb->wdtype = (cfg_dtype)m->weights.embedding.dtype;
    emb->wgroup = m->weights.embedding.group;
    plan_op_finalize(emb);
    for (int l = 0; l < m->layers; l++) {
        dp_attention(&b, sc, l, own, sc->workload.batch / ep, tokens);
        if (l >= m->first_k_dense) {
            plan_ep_moe(ph, sc, l, own, ranks, active_all, false);
            continue;
        }
        /* Dense layers keep a TP MLP over every rank's rows: gather them, then the MLP's allreduce
         * (SGLang scatters back with a reduce-scatter; the allreduce is its upper bound here). */
        const int inter = m->mlp.intermediate / ranks;
        plan_emit_collective(&b, PLAN_OP_ALLGATHER, "allgather.mlp_in", l, own * H);
        plan_emit_matmul(&b, PLAN_OP_GEMM, "mlp.gate_up", l, rows, H, 2LL * inter, m->weights.dense_mlp, 1);
        plan_emit_rowwise(&b, PLAN_OP_ELEMENTWISE, "mlp.silu_mul", l, rows, inter);
        plan_emit_matmul(&b, PLAN_OP_GEMM, "mlp.down", l, rows, inter, H, m->weights.dense_mlp, 1);
        plan_emit_collective(&b, PLAN_OP_ALLREDUCE, "allreduce.mlp", l, rows * H);
    }
    plan_emit_rowwise(&b, PLAN_OP_NORM, "final_norm", -1, own, H);
    /* lm_head stays vocab-parallel over the TP group (enable_dp_lm_head off): the ranks' rows are
     * gathered, logits computed for all of them on this rank's vocab shard and all-gathered; each rank
     * samples its own. */
    plan_emit_collective(&b, PLAN_OP_ALLGATHER, "allgather.lm_in", -1, own * H);
    plan_emit_matmul(&b, PLAN_OP_GEMM, "lm_head", -1, rows, H, m->vocab / ranks, m->weights.lm_head, 1);
    plan_emit_collective(&b, PLAN_OP_ALLGATHER, "allgather.logits", -1, rows * (m->vocab / ranks));
    plan_emit_rowwise(&b, PLAN_OP_ELEMENTWISE, "verify.greedy", -1, own, m->vocab);
}
