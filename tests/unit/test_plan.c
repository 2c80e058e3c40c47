/* plan: the cycle schedule through the C API — collectives per phase, per-rank GEMM shapes at TP=8
 * against DESIGN.md, weight bytes against an independent calculation. The routed-expert estimate, TP
 * sweeps and the JSON round trip: test_plan_tp.c. */
#include "../../sim/config/cfg.h"
#include "../../sim/plan/plan.h"
#include "../../sim/plan/plan_json.h"
#include "../../sim/util/util.h"
#include "test_helpers.h"
#include "th_plan.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---------------- collectives ---------------- */

Test(plan_collectives, default_verify_has_123_allreduces_of_43008_bytes)
{
    cfg_scenario sc;
    plan p;
    th_plan_build("configs/default.yaml", NULL, 0, &sc, &p);
    cr_assert_eq(p.ranks, 8);
    const plan_phase *v = th_phase(&p, "verify");
    cr_assert_eq(v->kind, PLAN_PHASE_VERIFY);
    cr_assert_str_eq(v->model, "target");
    cr_assert_eq(v->tokens, 3);
    cr_assert_eq(v->batch, 1);
    /* 3 tokens x 7168 hidden x 2 B = 43,008 B; the embedding's plus 2 per layer x 61 = 123. */
    th_assert_allreduces(v, 123, 43008, 8);
    cr_assert_eq(v->summary.allgather_count, 1);
    cr_assert_eq(th_count_kind(v, PLAN_OP_ALLGATHER), 1);

    /* Order: the embedding's allreduce, then per layer attention's and the MLP's / MoE's. */
    int seen = 0;
    int per_layer[61] = {0};
    for (int i = 0; i < v->n_ops; i++) {
        const plan_op *op = &v->ops[i];
        if (op->kind != PLAN_OP_ALLREDUCE)
            continue;
        if (seen == 0) {
            cr_assert_str_eq(op->name, "allreduce.embedding");
            cr_assert_eq(op->layer, -1);
        } else {
            int l = (seen - 1) / 2;
            cr_assert_eq(op->layer, l, "allreduce %d is in layer %d, want %d", seen, op->layer, l);
            const char *want = (seen - 1) % 2 == 0 ? "allreduce.attn" : l == 0 ? "allreduce.mlp" : "allreduce.moe";
            cr_assert_str_eq(op->name, want, "allreduce %d (layer %d)", seen, l);
            per_layer[l]++;
        }
        seen++;
    }
    for (int l = 0; l < 61; l++)
        cr_assert_eq(per_layer[l], 2, "layer %d has %d allreduces", l, per_layer[l]);

    /* The logits all-gather follows lm_head: 3 rows x 163840/8 vocab x 2 B. */
    int lm = -1, ag = -1;
    for (int i = 0; i < v->n_ops; i++) {
        if (!strcmp(v->ops[i].name, "lm_head"))
            lm = i;
        if (v->ops[i].kind == PLAN_OP_ALLGATHER)
            ag = i;
    }
    cr_assert(lm >= 0 && ag == lm + 1, "the all-gather (op %d) follows lm_head (op %d)", ag, lm);
    cr_assert_str_eq(v->ops[ag].name, "allgather.logits");
    cr_assert_eq(v->ops[ag].payload_bytes, 3LL * 20480 * 2);
    cr_assert_eq(v->summary.allgather_bytes_total, 3LL * 20480 * 2);
    th_plan_done(&sc, &p);
}

Test(plan_collectives, three_steps_give_57344_byte_allreduces)
{
    const char *sets[] = {"speculative.steps=3", "speculative.num_draft_tokens=4"};
    cfg_scenario sc;
    plan p;
    th_plan_build("configs/default.yaml", sets, 2, &sc, &p);
    cr_assert_eq(p.n_phases, 4);
    const char *order[] = {"draft_1", "draft_2", "verify", "draft_extend"};
    for (int i = 0; i < 4; i++)
        cr_assert_str_eq(p.phases[i].name, order[i]);
    const plan_phase *v = th_phase(&p, "verify");
    cr_assert_eq(v->tokens, 4);
    th_assert_allreduces(v, 123, 57344, 8); /* 4 x 7168 x 2 */
    cr_assert_eq(v->summary.allgather_count, 1);
    cr_assert_eq(v->summary.allgather_bytes_total, 4LL * 20480 * 2);
    th_assert_allreduces(th_phase(&p, "draft_extend"), 3, 57344, 8);
    th_plan_done(&sc, &p);
}

/* Each draft step: the embedding's, attention's and the MLP's allreduce of one token per request,
 * then the all-gather of the draft logits (32000 / 8 per rank). */
static void assert_draft_step(const plan_phase *ph, int batch)
{
    cr_assert_eq(ph->kind, PLAN_PHASE_DRAFT);
    cr_assert_str_eq(ph->model, "draft");
    cr_assert_eq(ph->tokens, 1);
    th_assert_allreduces(ph, 3, (long long)batch * 7168 * 2, 8);
    const char *names[] = {"allreduce.embedding", "allreduce.attn", "allreduce.mlp", "allgather.logits"};
    int k = 0;
    for (int i = 0; i < ph->n_ops; i++)
        if (ph->ops[i].kind == PLAN_OP_ALLREDUCE || ph->ops[i].kind == PLAN_OP_ALLGATHER) {
            cr_assert_lt(k, 4, "%s: more collectives than expected", ph->name);
            cr_assert_str_eq(ph->ops[i].name, names[k], "%s: collective %d", ph->name, k);
            k++;
        }
    cr_assert_eq(k, 4);
    cr_assert_eq(ph->summary.allgather_count, 1);
    cr_assert_eq(ph->summary.allgather_bytes_total, (long long)batch * 4000 * 2);
}

Test(plan_collectives, every_draft_step_lists_its_collectives)
{
    cfg_scenario sc;
    plan p;
    th_plan_build("configs/default.yaml", NULL, 0, &sc, &p);
    /* steps=2: one draft forward in the cycle (the first draft token comes from draft-extend). */
    cr_assert_eq(p.n_phases, 3);
    cr_assert_str_eq(p.phases[0].name, "draft_1");
    cr_assert_str_eq(p.phases[1].name, "verify");
    cr_assert_str_eq(p.phases[2].name, "draft_extend");
    assert_draft_step(th_phase(&p, "draft_1"), 1);

    const plan_phase *de = th_phase(&p, "draft_extend");
    cr_assert_eq(de->kind, PLAN_PHASE_DRAFT_EXTEND);
    cr_assert_str_eq(de->model, "draft");
    cr_assert_eq(de->tokens, 3);
    th_assert_allreduces(de, 3, 43008, 8);
    cr_assert_eq(de->summary.allgather_count, 1);
    cr_assert_eq(de->summary.allgather_bytes_total, 1LL * 4000 * 2, "only each request's last row reaches lm_head");
    th_plan_done(&sc, &p);

    const char *five[] = {"speculative.steps=5", "speculative.num_draft_tokens=6"};
    th_plan_build("configs/default.yaml", five, 2, &sc, &p);
    cr_assert_eq(p.n_phases, 6);
    for (int s = 1; s <= 4; s++) {
        char name[16];
        snprintf(name, sizeof(name), "draft_%d", s);
        cr_assert_str_eq(p.phases[s - 1].name, name);
        assert_draft_step(&p.phases[s - 1], 1);
    }
    th_assert_allreduces(th_phase(&p, "verify"), 123, 6LL * 7168 * 2, 8);
    th_plan_done(&sc, &p);
}

Test(plan_collectives, one_step_has_no_draft_forward_in_the_cycle)
{
    const char *sets[] = {"speculative.steps=1", "speculative.num_draft_tokens=2"};
    cfg_scenario sc;
    plan p;
    th_plan_build("configs/default.yaml", sets, 2, &sc, &p);
    cr_assert_eq(p.n_phases, 2);
    cr_assert_str_eq(p.phases[0].name, "verify");
    cr_assert_str_eq(p.phases[1].name, "draft_extend");
    th_assert_allreduces(&p.phases[0], 123, 28672, 8);
    th_plan_done(&sc, &p);
}

Test(plan_collectives, batch_scales_the_payloads)
{
    const char *sets[] = {"workload.batch=4"};
    cfg_scenario sc;
    plan p;
    th_plan_build("configs/default.yaml", sets, 1, &sc, &p);
    th_assert_allreduces(th_phase(&p, "verify"), 123, 4LL * 3 * 7168 * 2, 8);
    assert_draft_step(th_phase(&p, "draft_1"), 4);
    th_assert_allreduces(th_phase(&p, "draft_extend"), 3, 4LL * 3 * 7168 * 2, 8);
    cr_assert_eq(th_phase(&p, "draft_extend")->summary.allgather_bytes_total, 4LL * 4000 * 2);
    cr_assert_eq(th_phase(&p, "verify")->summary.allgather_bytes_total, 12LL * 20480 * 2);
    th_plan_done(&sc, &p);
}

Test(plan_collectives, no_speculation_is_one_decode_phase)
{
    const char *sets[] = {"speculative.algorithm=none"};
    cfg_scenario sc;
    plan p;
    th_plan_build("configs/default.yaml", sets, 1, &sc, &p);
    cr_assert_eq(p.n_phases, 1);
    const plan_phase *d = &p.phases[0];
    cr_assert_str_eq(d->name, "decode");
    cr_assert_eq(d->kind, PLAN_PHASE_DECODE);
    cr_assert_str_eq(d->model, "target");
    cr_assert_eq(d->tokens, 1);
    th_assert_allreduces(d, 123, 14336, 8); /* 1 x 7168 x 2 */
    cr_assert_eq(d->summary.allgather_count, 1);
    cr_assert_eq(d->summary.allgather_bytes_total, 20480LL * 2);
    cr_assert_float_eq(p.expected_tokens, 1.0, 1e-12);
    cr_assert_eq(p.active_experts, 8, "one token touches exactly top_k experts");
    cr_assert_null(plan_find_phase(&p, "verify"));
    th_plan_done(&sc, &p);
}

Test(plan_collectives, single_rank_has_no_collectives)
{
    const char *sets[] = {"parallel.tp=1"};
    cfg_scenario sc;
    plan p;
    th_plan_build("configs/default.yaml", sets, 1, &sc, &p);
    for (int i = 0; i < p.n_phases; i++) {
        cr_assert_eq(p.phases[i].summary.allreduce_count, 0, "%s", p.phases[i].name);
        cr_assert_eq(p.phases[i].summary.allgather_count, 0, "%s", p.phases[i].name);
    }
    th_plan_done(&sc, &p);
}

/* ---------------- per-rank shapes (DESIGN.md, "Per rank at TP=8") ---------------- */

Test(plan_shapes, target_gemms_at_tp8_match_the_design)
{
    cfg_scenario sc;
    plan p;
    th_plan_build("configs/default.yaml", NULL, 0, &sc, &p);
    const plan_phase *v = th_phase(&p, "verify");
    const long long T = 3;
    const int layers[] = {0, 1, 30, 60};
    for (size_t i = 0; i < 4; i++) {
        int l = layers[i];
        th_assert_gemm(th_find_op(v, "fused_qkv_a_proj", l), T, 7168, 2112, 1); /* replicated: 1536 + 512 + 64 */
        th_assert_gemm(th_find_op(v, "q_b_proj", l), T, 1536, 8 * 192, 1);       /* 8 heads x (128 + 64) */
        th_assert_gemm(th_find_op(v, "w_kc", l), T, 128, 512, 8);                 /* bmm 8 x [128 -> 512] */
        th_assert_gemm(th_find_op(v, "w_vc", l), T, 512, 128, 8);                 /* bmm 8 x [512 -> 128] */
        th_assert_gemm(th_find_op(v, "o_proj", l), T, 1024, 7168, 1);             /* 8 heads x 128 -> hidden */
        const plan_op *at = th_find_op(v, "mla_attention", l);
        cr_assert_eq(at->kind, PLAN_OP_ATTENTION);
        cr_assert_eq(at->heads, 8);
        cr_assert_eq(at->qk_dim, 576, "latent 512 + rope 64 cached per token");
        cr_assert_eq(at->v_dim, 512);
        cr_assert(at->kv_shared);
        cr_assert_eq(at->q_len, 3);
        cr_assert_eq(at->kv_len, sc.workload.context);
    }
    /* Layer 0: the dense MLP, 18432 / 8 = 2304 per rank, gate and up fused. */
    th_assert_gemm(th_find_op(v, "mlp.gate_up", 0), T, 7168, 4608, 1);
    th_assert_gemm(th_find_op(v, "mlp.down", 0), T, 2304, 7168, 1);
    for (size_t i = 1; i < 4; i++) {
        int l = layers[i];
        th_assert_gemm(th_find_op(v, "moe.gate", l), T, 7168, 384, 1);
        /* Routed experts sharded by TP: 2048 / 8 = 256 per rank; 24 distinct experts at 3 tokens. */
        const plan_op *w13 = th_find_op(v, "moe.w13", l);
        cr_assert_eq(w13->kind, PLAN_OP_GROUPED_GEMM);
        th_assert_gemm(w13, T * 8, 7168, 512, 24);
        cr_assert_eq(w13->wdtype, CFG_DT_INT4);
        cr_assert_eq(w13->wgroup, 32);
        const plan_op *w2 = th_find_op(v, "moe.w2", l);
        cr_assert_eq(w2->kind, PLAN_OP_GROUPED_GEMM);
        th_assert_gemm(w2, T * 8, 256, 7168, 24);
        cr_assert_eq(w2->wdtype, CFG_DT_INT4);
        /* The shared expert has the same per-rank shape, in bf16, on the side stream. */
        const plan_op *sgu = th_find_op(v, "shared.gate_up", l);
        th_assert_gemm(sgu, T, 7168, 512, 1);
        cr_assert_eq(sgu->wdtype, CFG_DT_BF16);
        cr_assert_eq(sgu->stream, PLAN_STREAM_SIDE);
        const plan_op *sd = th_find_op(v, "shared.down", l);
        th_assert_gemm(sd, T, 256, 7168, 1);
        cr_assert_eq(sd->stream, PLAN_STREAM_SIDE);
    }
    /* No layer has both a dense MLP and experts. */
    for (int i = 0; i < v->n_ops; i++) {
        const plan_op *op = &v->ops[i];
        if (!strncmp(op->name, "mlp.", 4))
            cr_assert_eq(op->layer, 0, "%s in layer %d", op->name, op->layer);
        if (!strncmp(op->name, "moe.", 4))
            cr_assert_neq(op->layer, 0, "%s in layer 0", op->name);
    }
    /* lm_head: vocab 163840 / 8 = 20480 per rank. */
    th_assert_gemm(th_find_op(v, "lm_head", -1), T, 7168, 20480, 1);
    const plan_op *emb = th_find_op(v, "embedding", -1);
    cr_assert_eq(emb->kind, PLAN_OP_EMBEDDING);
    cr_assert_eq(emb->k, 20480);
    cr_assert_eq(emb->n, 7168);
    cr_assert_eq(v->summary.op_count[PLAN_OP_ATTENTION], 61);
    cr_assert_eq(v->summary.op_count[PLAN_OP_GROUPED_GEMM], 120);
    th_plan_done(&sc, &p);
}

Test(plan_shapes, draft_gemms_at_tp8)
{
    cfg_scenario sc;
    plan p;
    th_plan_build("configs/default.yaml", NULL, 0, &sc, &p);
    const plan_phase *d = th_phase(&p, "draft_1");
    /* 64 heads x 128 and 64 KV heads over 8 ranks: q 8 x 128, k and v 8 x 128 each; input 2 x 7168. */
    th_assert_gemm(th_find_op(d, "qkv_proj", 0), 1, 2 * 7168, (8 + 2 * 8) * 128, 1);
    th_assert_gemm(th_find_op(d, "o_proj", 0), 1, 1024, 7168, 1);
    th_assert_gemm(th_find_op(d, "mlp.gate_up", 0), 1, 7168, 4608, 1);
    th_assert_gemm(th_find_op(d, "mlp.down", 0), 1, 2304, 7168, 1);
    th_assert_gemm(th_find_op(d, "lm_head", -1), 1, 7168, 4000, 1); /* draft vocab 32000 / 8 */
    for (int i = 0; i < d->n_ops; i++)
        cr_assert_str_neq(d->ops[i].name, "fc", "the draft steps consume the head's own output");
    const plan_phase *de = th_phase(&p, "draft_extend");
    th_assert_gemm(th_find_op(de, "fc", 0), 3, 3 * 7168, 7168, 1); /* three auxiliary layers fused */
    th_assert_gemm(th_find_op(de, "qkv_proj", 0), 3, 2 * 7168, 3072, 1);
    th_assert_gemm(th_find_op(de, "lm_head", -1), 1, 7168, 4000, 1);
    th_plan_done(&sc, &p);
}

Test(plan_shapes, cost_terms_follow_the_shapes)
{
    cfg_scenario sc;
    plan p;
    th_plan_build("configs/default.yaml", NULL, 0, &sc, &p);
    const plan_phase *v = th_phase(&p, "verify");
    const plan_op *o = th_find_op(v, "o_proj", 5);
    cr_assert_float_eq(o->flops, 2.0 * 3 * 1024 * 7168, 1.0);
    cr_assert_float_eq(o->weight_bytes, 1024.0 * 7168 * 2, 1.0);
    const plan_op *kc = th_find_op(v, "w_kc", 5);
    cr_assert_float_eq(kc->flops, 2.0 * 3 * 128 * 512 * 8, 1.0);
    const plan_op *w13 = th_find_op(v, "moe.w13", 5);
    cr_assert_float_eq(w13->flops, 2.0 * 24 * 7168 * 512, 1.0, "every routed row once");
    cr_assert_float_eq(w13->weight_bytes, 24.0 * 7168 * 512 * 0.5625, 1.0);
    const plan_op *ar = th_find_op(v, "allreduce.attn", 5);
    cr_assert_float_eq(ar->weight_bytes, 0.0, 1e-9);
    cr_assert_float_eq(ar->flops, 3.0 * 7168 * 7, 1e-9, "reduce: (ranks - 1) adds per element");
    /* Summaries add up the ops. */
    for (int i = 0; i < p.n_phases; i++) {
        const plan_phase *ph = &p.phases[i];
        double f = 0, w = 0;
        int g = 0;
        for (int k = 0; k < ph->n_ops; k++) {
            f += ph->ops[k].flops;
            w += ph->ops[k].weight_bytes;
            g += ph->ops[k].kind == PLAN_OP_GEMM || ph->ops[k].kind == PLAN_OP_GROUPED_GEMM;
        }
        cr_assert_float_eq(ph->summary.flops, f, 1e-6 * f + 1);
        cr_assert_float_eq(ph->summary.weight_bytes, w, 1e-6 * w + 1);
        cr_assert_eq(ph->summary.gemm_count, g);
    }
    th_plan_done(&sc, &p);
}

/* ---------------- weight bytes: an independent calculation ---------------- */

Test(plan_weights, verify_pass_weight_bytes_per_rank_at_tp8)
{
    cfg_scenario sc;
    plan p;
    th_plan_build("configs/default.yaml", NULL, 0, &sc, &p);

    /* Kimi-K2.5 (DESIGN.md), TP=8, batch 1 x 3 tokens. bf16 = 2 B per weight; INT4 group-32 routed
     * experts = 0.5 B + one bf16 scale per 32 weights = 0.5625 B. */
    const double bf16 = 2.0, int4g32 = 0.5 + 2.0 / 32.0;
    const double H = 7168, tp = 8, heads = 64 / tp, T = 3;

    /* Attention, every layer: fused_qkv_a replicated [7168 -> 1536 + 512 + 64]; q_b [1536 -> 8 x 192];
     * w_kc 8 x [128 -> 512]; w_vc 8 x [512 -> 128]; o_proj [8 x 128 -> 7168]. */
    const double attn = (H * (1536 + 512 + 64) + 1536 * heads * (128 + 64) + heads * 128 * 512 +
                         heads * 512 * 128 + heads * 128 * H) * bf16;
    /* RMSNorm weights read per layer: input, q_a (1536), kv_a (512), post-attention. */
    const double norms = (H + 1536 + 512 + H) * bf16;
    /* Layer 0: dense MLP, 18432 / 8 = 2304 per rank: gate+up [7168 -> 4608], down [2304 -> 7168]. */
    const double dense = (H * 2 * 2304 + 2304 * H) * bf16;
    /* MoE layers: router [7168 -> 384] bf16; shared expert [7168 -> 512] + [256 -> 7168] bf16; the
     * routed experts a pass touches, each [7168 -> 512] + [256 -> 7168] in INT4. Distinct experts of
     * 384 when 3 tokens each pick 8: 384 * (1 - (1 - 8/384)^3) = 23.5 -> 24. */
    const double active = round(384.0 * (1.0 - pow(1.0 - 8.0 / 384.0, 3.0)));
    cr_assert_float_eq(active, 24.0, 1e-12);
    const double expert = (H * 2 * 256 + 256 * H);
    const double moe = H * 384 * bf16 + expert * bf16 + active * expert * int4g32;
    /* Vocab-parallel embedding: the 3 rows, of which 1/8 fall in this rank's shard on average; the final
     * norm; lm_head [7168 -> 163840 / 8 = 20480]. */
    const double embedding = T * H * bf16 / tp;
    const double head = H * bf16 + H * 20480 * bf16;

    const double expected = 61 * (attn + norms) + dense + 60 * moe + embedding + head;
    const double got = th_phase(&p, "verify")->summary.weight_bytes;
    cr_assert(fabs(got - expected) <= 0.01 * expected, "verify weight bytes per rank: plan %.0f, independent %.0f (%.3f%%)",
              got, expected, 100.0 * (got - expected) / expected);
    /* About 8.4 GiB per rank per verify pass. */
    cr_assert(expected > 8.3 * 1073741824.0 && expected < 8.5 * 1073741824.0, "%.0f", expected);
    th_plan_done(&sc, &p);
}

Test(plan_weights, quantisation_changes_the_expert_bytes)
{
    const char *bf16[] = {"model.weights.routed_experts.dtype=bf16", "model.weights.routed_experts.group=0"};
    cfg_scenario sc_q, sc_b;
    plan p_q, p_b;
    th_plan_build("configs/default.yaml", NULL, 0, &sc_q, &p_q);
    th_plan_build("configs/default.yaml", bf16, 2, &sc_b, &p_b);
    const double experts = 60.0 * 24 * (7168.0 * 512 + 256.0 * 7168);
    double delta = th_phase(&p_b, "verify")->summary.weight_bytes - th_phase(&p_q, "verify")->summary.weight_bytes;
    cr_assert_float_eq(delta, experts * (2.0 - 0.5625), 1.0);
    th_plan_done(&sc_q, &p_q);
    th_plan_done(&sc_b, &p_b);
}

/* ---------------- shape classes (plan_shapes.c) ---------------- */

/* Every op's class representative has its shape; ops in one class agree on every field a cost reads
 * and differ at most in name (not for element-wise ops), layer, stream and micro-batch; two classes
 * never hold the same shape; the default cycle's 1,379 ops fall into a few dozen. */
Test(plan_shapes, each_op_is_in_the_one_class_of_its_shape)
{
    cfg_scenario sc;
    plan p;
    th_plan_build("configs/default.yaml", NULL, 0, &sc, &p);
    int ops = 0;
    for (int ph = 0; ph < p.n_phases; ph++) {
        cr_assert_not_null(p.phases[ph].shape);
        for (int i = 0; i < p.phases[ph].n_ops; i++, ops++) {
            const plan_op *op = &p.phases[ph].ops[i];
            const int c = p.phases[ph].shape[i];
            cr_assert(c >= 0 && c < p.n_shapes);
            const plan_op *rep = &p.shapes[c];
            cr_assert(plan_op_same_shape(rep, op), "%s: op %d (%s) not of its class", p.phases[ph].name, i, op->name);
            cr_assert(rep->kind == op->kind && rep->m == op->m && rep->n == op->n && rep->k == op->k &&
                      rep->kv_len == op->kv_len && rep->heads == op->heads && rep->wdtype == op->wdtype &&
                      rep->flops == op->flops && rep->bytes_read == op->bytes_read &&
                      rep->payload_bytes == op->payload_bytes);
            if (op->kind == PLAN_OP_ELEMENTWISE)
                cr_assert_str_eq(rep->name, op->name);
        }
    }
    for (int a = 0; a < p.n_shapes; a++)
        for (int b = a + 1; b < p.n_shapes; b++)
            cr_assert(!plan_op_same_shape(&p.shapes[a], &p.shapes[b]), "classes %d and %d are one shape", a, b);
    cr_assert(ops > 1000 && p.n_shapes < 80, "%d ops in %d classes", ops, p.n_shapes);
    th_plan_done(&sc, &p);
}

/* One field a cost reads, changed, makes another shape; the layer, stream and (outside element-wise
 * ops) the name do not. */
Test(plan_shapes, a_cost_field_separates_shapes_and_the_layer_does_not)
{
    plan_phase ph = {0};
    plan_op *a = plan_phase_add_op(&ph);
    a->kind = PLAN_OP_GEMM;
    a->m = 3, a->n = 7168, a->k = 2048, a->wdtype = CFG_DT_BF16, a->adtype = CFG_DT_BF16;
    plan_op_finalize(a);
    plan_op b = *a;
    b.layer = 7, b.stream = PLAN_STREAM_SIDE, b.micro_batch = 1;
    snprintf(b.name, sizeof(b.name), "other");
    cr_assert(plan_op_same_shape(a, &b));
    b = *a;
    b.k = 4096;
    plan_op_finalize(&b);
    cr_assert_not(plan_op_same_shape(a, &b));
    b = *a;
    b.wgroup = 128;
    cr_assert_not(plan_op_same_shape(a, &b), "a field with no derived term still separates");
    plan_op e = *a, f;
    e.kind = PLAN_OP_ELEMENTWISE;
    snprintf(e.name, sizeof(e.name), "mlp.silu_mul");
    f = e;
    snprintf(f.name, sizeof(f.name), "act");
    cr_assert_not(plan_op_same_shape(&e, &f), "element-wise ops are priced by name (the silu_mul law)");
    free(ph.ops);
}
