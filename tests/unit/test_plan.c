/* plan: the cycle schedule through the C API — collectives per phase, per-rank GEMM shapes at TP=8
 * against DESIGN.md, weight bytes against an independent calculation, TP sweeps, the routed-expert
 * estimate and the JSON round trip. */
#include "../../sim/config/cfg.h"
#include "../../sim/plan/plan.h"
#include "../../sim/plan/plan_json.h"
#include "../../sim/util/util.h"
#include "test_helpers.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void build(const char *rel, const char *const *sets, int n_sets, cfg_scenario *sc, plan *p)
{
    cfg_error err = {{0}};
    cr_assert_eq(cfg_scenario_load(th_path(rel), sets, n_sets, NULL, sc, &err), 0, "loading %s: %s", rel, err.msg);
    char why[256] = "";
    cr_assert_eq(plan_build(sc, p, why, sizeof(why)), 0, "plan_build: %s", why);
}

static void done(cfg_scenario *sc, plan *p)
{
    plan_free(p);
    cfg_scenario_free(sc);
}

static const plan_phase *phase(const plan *p, const char *name)
{
    const plan_phase *ph = plan_find_phase(p, name);
    cr_assert_not_null(ph, "no phase '%s'", name);
    return ph;
}

/* The op called `name` in `layer` (the first one when it occurs more than once). */
static const plan_op *find_op(const plan_phase *ph, const char *name, int layer)
{
    for (int i = 0; i < ph->n_ops; i++)
        if (ph->ops[i].layer == layer && strcmp(ph->ops[i].name, name) == 0)
            return &ph->ops[i];
    cr_assert_fail("phase %s has no op '%s' in layer %d", ph->name, name, layer);
    return NULL;
}

static int count_kind(const plan_phase *ph, plan_op_kind kind)
{
    int n = 0;
    for (int i = 0; i < ph->n_ops; i++)
        n += ph->ops[i].kind == kind;
    return n;
}

/* Every allreduce of the phase carries `bytes`, and the summary agrees with the op list. */
static void assert_allreduces(const plan_phase *ph, int count, long long bytes, int ranks)
{
    cr_assert_eq(ph->summary.allreduce_count, count, "%s: %d allreduces, want %d", ph->name,
                 ph->summary.allreduce_count, count);
    cr_assert_eq(count_kind(ph, PLAN_OP_ALLREDUCE), count, "%s: op list", ph->name);
    for (int i = 0; i < count; i++)
        cr_assert_eq(ph->summary.allreduce_bytes[i], bytes, "%s: allreduce %d carries %lld B, want %lld", ph->name, i,
                     ph->summary.allreduce_bytes[i], bytes);
    for (int i = 0; i < ph->n_ops; i++) {
        const plan_op *op = &ph->ops[i];
        if (op->kind != PLAN_OP_ALLREDUCE && op->kind != PLAN_OP_ALLGATHER)
            continue;
        cr_assert_eq(op->ranks, ranks, "%s: %s spans %d ranks", ph->name, op->name, op->ranks);
        cr_assert_eq(op->payload_bytes, op->count * 2, "%s: %s: bf16 payload = 2 B x count", ph->name, op->name);
    }
}

static void assert_gemm(const plan_op *op, long long m, long long k, long long n, int batch)
{
    cr_assert(op->kind == PLAN_OP_GEMM || op->kind == PLAN_OP_GROUPED_GEMM, "%s is not a GEMM", op->name);
    cr_assert_eq(op->k, k, "%s layer %d: k=%lld, want %lld", op->name, op->layer, op->k, k);
    cr_assert_eq(op->n, n, "%s layer %d: n=%lld, want %lld", op->name, op->layer, op->n, n);
    cr_assert_eq(op->m, m, "%s layer %d: m=%lld, want %lld", op->name, op->layer, op->m, m);
    cr_assert_eq(op->batch, batch, "%s layer %d: batch=%d, want %d", op->name, op->layer, op->batch, batch);
}

/* ---------------- collectives ---------------- */

Test(plan_collectives, default_verify_has_123_allreduces_of_43008_bytes)
{
    cfg_scenario sc;
    plan p;
    build("configs/default.yaml", NULL, 0, &sc, &p);
    cr_assert_eq(p.ranks, 8);
    const plan_phase *v = phase(&p, "verify");
    cr_assert_eq(v->kind, PLAN_PHASE_VERIFY);
    cr_assert_str_eq(v->model, "target");
    cr_assert_eq(v->tokens, 3);
    cr_assert_eq(v->batch, 1);
    /* 3 tokens x 7168 hidden x 2 B = 43,008 B; the embedding's plus 2 per layer x 61 = 123. */
    assert_allreduces(v, 123, 43008, 8);
    cr_assert_eq(v->summary.allgather_count, 1);
    cr_assert_eq(count_kind(v, PLAN_OP_ALLGATHER), 1);

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
    done(&sc, &p);
}

Test(plan_collectives, three_steps_give_57344_byte_allreduces)
{
    const char *sets[] = {"speculative.steps=3", "speculative.num_draft_tokens=4"};
    cfg_scenario sc;
    plan p;
    build("configs/default.yaml", sets, 2, &sc, &p);
    cr_assert_eq(p.n_phases, 4);
    const char *order[] = {"draft_1", "draft_2", "verify", "draft_extend"};
    for (int i = 0; i < 4; i++)
        cr_assert_str_eq(p.phases[i].name, order[i]);
    const plan_phase *v = phase(&p, "verify");
    cr_assert_eq(v->tokens, 4);
    assert_allreduces(v, 123, 57344, 8); /* 4 x 7168 x 2 */
    cr_assert_eq(v->summary.allgather_count, 1);
    cr_assert_eq(v->summary.allgather_bytes_total, 4LL * 20480 * 2);
    assert_allreduces(phase(&p, "draft_extend"), 3, 57344, 8);
    done(&sc, &p);
}

/* Each draft step: the embedding's, attention's and the MLP's allreduce of one token per request,
 * then the all-gather of the draft logits (32000 / 8 per rank). */
static void assert_draft_step(const plan_phase *ph, int batch)
{
    cr_assert_eq(ph->kind, PLAN_PHASE_DRAFT);
    cr_assert_str_eq(ph->model, "draft");
    cr_assert_eq(ph->tokens, 1);
    assert_allreduces(ph, 3, (long long)batch * 7168 * 2, 8);
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
    build("configs/default.yaml", NULL, 0, &sc, &p);
    /* steps=2: one draft forward in the cycle (the first draft token comes from draft-extend). */
    cr_assert_eq(p.n_phases, 3);
    cr_assert_str_eq(p.phases[0].name, "draft_1");
    cr_assert_str_eq(p.phases[1].name, "verify");
    cr_assert_str_eq(p.phases[2].name, "draft_extend");
    assert_draft_step(phase(&p, "draft_1"), 1);

    const plan_phase *de = phase(&p, "draft_extend");
    cr_assert_eq(de->kind, PLAN_PHASE_DRAFT_EXTEND);
    cr_assert_str_eq(de->model, "draft");
    cr_assert_eq(de->tokens, 3);
    assert_allreduces(de, 3, 43008, 8);
    cr_assert_eq(de->summary.allgather_count, 1);
    cr_assert_eq(de->summary.allgather_bytes_total, 1LL * 4000 * 2, "only each request's last row reaches lm_head");
    done(&sc, &p);

    const char *five[] = {"speculative.steps=5", "speculative.num_draft_tokens=6"};
    build("configs/default.yaml", five, 2, &sc, &p);
    cr_assert_eq(p.n_phases, 6);
    for (int s = 1; s <= 4; s++) {
        char name[16];
        snprintf(name, sizeof(name), "draft_%d", s);
        cr_assert_str_eq(p.phases[s - 1].name, name);
        assert_draft_step(&p.phases[s - 1], 1);
    }
    assert_allreduces(phase(&p, "verify"), 123, 6LL * 7168 * 2, 8);
    done(&sc, &p);
}

Test(plan_collectives, one_step_has_no_draft_forward_in_the_cycle)
{
    const char *sets[] = {"speculative.steps=1", "speculative.num_draft_tokens=2"};
    cfg_scenario sc;
    plan p;
    build("configs/default.yaml", sets, 2, &sc, &p);
    cr_assert_eq(p.n_phases, 2);
    cr_assert_str_eq(p.phases[0].name, "verify");
    cr_assert_str_eq(p.phases[1].name, "draft_extend");
    assert_allreduces(&p.phases[0], 123, 28672, 8);
    done(&sc, &p);
}

Test(plan_collectives, batch_scales_the_payloads)
{
    const char *sets[] = {"workload.batch=4"};
    cfg_scenario sc;
    plan p;
    build("configs/default.yaml", sets, 1, &sc, &p);
    assert_allreduces(phase(&p, "verify"), 123, 4LL * 3 * 7168 * 2, 8);
    assert_draft_step(phase(&p, "draft_1"), 4);
    assert_allreduces(phase(&p, "draft_extend"), 3, 4LL * 3 * 7168 * 2, 8);
    cr_assert_eq(phase(&p, "draft_extend")->summary.allgather_bytes_total, 4LL * 4000 * 2);
    cr_assert_eq(phase(&p, "verify")->summary.allgather_bytes_total, 12LL * 20480 * 2);
    done(&sc, &p);
}

Test(plan_collectives, no_speculation_is_one_decode_phase)
{
    const char *sets[] = {"speculative.algorithm=none"};
    cfg_scenario sc;
    plan p;
    build("configs/default.yaml", sets, 1, &sc, &p);
    cr_assert_eq(p.n_phases, 1);
    const plan_phase *d = &p.phases[0];
    cr_assert_str_eq(d->name, "decode");
    cr_assert_eq(d->kind, PLAN_PHASE_DECODE);
    cr_assert_str_eq(d->model, "target");
    cr_assert_eq(d->tokens, 1);
    assert_allreduces(d, 123, 14336, 8); /* 1 x 7168 x 2 */
    cr_assert_eq(d->summary.allgather_count, 1);
    cr_assert_eq(d->summary.allgather_bytes_total, 20480LL * 2);
    cr_assert_float_eq(p.expected_tokens, 1.0, 1e-12);
    cr_assert_eq(p.active_experts, 8, "one token touches exactly top_k experts");
    cr_assert_null(plan_find_phase(&p, "verify"));
    done(&sc, &p);
}

Test(plan_collectives, single_rank_has_no_collectives)
{
    const char *sets[] = {"parallel.tp=1"};
    cfg_scenario sc;
    plan p;
    build("configs/default.yaml", sets, 1, &sc, &p);
    for (int i = 0; i < p.n_phases; i++) {
        cr_assert_eq(p.phases[i].summary.allreduce_count, 0, "%s", p.phases[i].name);
        cr_assert_eq(p.phases[i].summary.allgather_count, 0, "%s", p.phases[i].name);
    }
    done(&sc, &p);
}

/* ---------------- per-rank shapes (DESIGN.md, "Per rank at TP=8") ---------------- */

Test(plan_shapes, target_gemms_at_tp8_match_the_design)
{
    cfg_scenario sc;
    plan p;
    build("configs/default.yaml", NULL, 0, &sc, &p);
    const plan_phase *v = phase(&p, "verify");
    const long long T = 3;
    const int layers[] = {0, 1, 30, 60};
    for (size_t i = 0; i < 4; i++) {
        int l = layers[i];
        assert_gemm(find_op(v, "fused_qkv_a_proj", l), T, 7168, 2112, 1); /* replicated: 1536 + 512 + 64 */
        assert_gemm(find_op(v, "q_b_proj", l), T, 1536, 8 * 192, 1);       /* 8 heads x (128 + 64) */
        assert_gemm(find_op(v, "w_kc", l), T, 128, 512, 8);                 /* bmm 8 x [128 -> 512] */
        assert_gemm(find_op(v, "w_vc", l), T, 512, 128, 8);                 /* bmm 8 x [512 -> 128] */
        assert_gemm(find_op(v, "o_proj", l), T, 1024, 7168, 1);             /* 8 heads x 128 -> hidden */
        const plan_op *at = find_op(v, "mla_attention", l);
        cr_assert_eq(at->kind, PLAN_OP_ATTENTION);
        cr_assert_eq(at->heads, 8);
        cr_assert_eq(at->qk_dim, 576, "latent 512 + rope 64 cached per token");
        cr_assert_eq(at->v_dim, 512);
        cr_assert(at->kv_shared);
        cr_assert_eq(at->q_len, 3);
        cr_assert_eq(at->kv_len, sc.workload.context);
    }
    /* Layer 0: the dense MLP, 18432 / 8 = 2304 per rank, gate and up fused. */
    assert_gemm(find_op(v, "mlp.gate_up", 0), T, 7168, 4608, 1);
    assert_gemm(find_op(v, "mlp.down", 0), T, 2304, 7168, 1);
    for (size_t i = 1; i < 4; i++) {
        int l = layers[i];
        assert_gemm(find_op(v, "moe.gate", l), T, 7168, 384, 1);
        /* Routed experts sharded by TP: 2048 / 8 = 256 per rank; 24 distinct experts at 3 tokens. */
        const plan_op *w13 = find_op(v, "moe.w13", l);
        cr_assert_eq(w13->kind, PLAN_OP_GROUPED_GEMM);
        assert_gemm(w13, T * 8, 7168, 512, 24);
        cr_assert_eq(w13->wdtype, CFG_DT_INT4);
        cr_assert_eq(w13->wgroup, 32);
        const plan_op *w2 = find_op(v, "moe.w2", l);
        cr_assert_eq(w2->kind, PLAN_OP_GROUPED_GEMM);
        assert_gemm(w2, T * 8, 256, 7168, 24);
        cr_assert_eq(w2->wdtype, CFG_DT_INT4);
        /* The shared expert has the same per-rank shape, in bf16, on the side stream. */
        const plan_op *sgu = find_op(v, "shared.gate_up", l);
        assert_gemm(sgu, T, 7168, 512, 1);
        cr_assert_eq(sgu->wdtype, CFG_DT_BF16);
        cr_assert_eq(sgu->stream, PLAN_STREAM_SIDE);
        const plan_op *sd = find_op(v, "shared.down", l);
        assert_gemm(sd, T, 256, 7168, 1);
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
    assert_gemm(find_op(v, "lm_head", -1), T, 7168, 20480, 1);
    const plan_op *emb = find_op(v, "embedding", -1);
    cr_assert_eq(emb->kind, PLAN_OP_EMBEDDING);
    cr_assert_eq(emb->k, 20480);
    cr_assert_eq(emb->n, 7168);
    cr_assert_eq(v->summary.op_count[PLAN_OP_ATTENTION], 61);
    cr_assert_eq(v->summary.op_count[PLAN_OP_GROUPED_GEMM], 120);
    done(&sc, &p);
}

Test(plan_shapes, draft_gemms_at_tp8)
{
    cfg_scenario sc;
    plan p;
    build("configs/default.yaml", NULL, 0, &sc, &p);
    const plan_phase *d = phase(&p, "draft_1");
    /* 64 heads x 128 and 64 KV heads over 8 ranks: q 8 x 128, k and v 8 x 128 each; input 2 x 7168. */
    assert_gemm(find_op(d, "qkv_proj", 0), 1, 2 * 7168, (8 + 2 * 8) * 128, 1);
    assert_gemm(find_op(d, "o_proj", 0), 1, 1024, 7168, 1);
    assert_gemm(find_op(d, "mlp.gate_up", 0), 1, 7168, 4608, 1);
    assert_gemm(find_op(d, "mlp.down", 0), 1, 2304, 7168, 1);
    assert_gemm(find_op(d, "lm_head", -1), 1, 7168, 4000, 1); /* draft vocab 32000 / 8 */
    for (int i = 0; i < d->n_ops; i++)
        cr_assert_str_neq(d->ops[i].name, "fc", "the draft steps consume the head's own output");
    const plan_phase *de = phase(&p, "draft_extend");
    assert_gemm(find_op(de, "fc", 0), 3, 3 * 7168, 7168, 1); /* three auxiliary layers fused */
    assert_gemm(find_op(de, "qkv_proj", 0), 3, 2 * 7168, 3072, 1);
    assert_gemm(find_op(de, "lm_head", -1), 1, 7168, 4000, 1);
    done(&sc, &p);
}

Test(plan_shapes, cost_terms_follow_the_shapes)
{
    cfg_scenario sc;
    plan p;
    build("configs/default.yaml", NULL, 0, &sc, &p);
    const plan_phase *v = phase(&p, "verify");
    const plan_op *o = find_op(v, "o_proj", 5);
    cr_assert_float_eq(o->flops, 2.0 * 3 * 1024 * 7168, 1.0);
    cr_assert_float_eq(o->weight_bytes, 1024.0 * 7168 * 2, 1.0);
    const plan_op *kc = find_op(v, "w_kc", 5);
    cr_assert_float_eq(kc->flops, 2.0 * 3 * 128 * 512 * 8, 1.0);
    const plan_op *w13 = find_op(v, "moe.w13", 5);
    cr_assert_float_eq(w13->flops, 2.0 * 24 * 7168 * 512, 1.0, "every routed row once");
    cr_assert_float_eq(w13->weight_bytes, 24.0 * 7168 * 512 * 0.5625, 1.0);
    const plan_op *ar = find_op(v, "allreduce.attn", 5);
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
    done(&sc, &p);
}

/* ---------------- weight bytes: an independent calculation ---------------- */

Test(plan_weights, verify_pass_weight_bytes_per_rank_at_tp8)
{
    cfg_scenario sc;
    plan p;
    build("configs/default.yaml", NULL, 0, &sc, &p);

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
    const double got = phase(&p, "verify")->summary.weight_bytes;
    cr_assert(fabs(got - expected) <= 0.01 * expected, "verify weight bytes per rank: plan %.0f, independent %.0f (%.3f%%)",
              got, expected, 100.0 * (got - expected) / expected);
    /* About 8.4 GiB per rank per verify pass. */
    cr_assert(expected > 8.3 * 1073741824.0 && expected < 8.5 * 1073741824.0, "%.0f", expected);
    done(&sc, &p);
}

Test(plan_weights, quantisation_changes_the_expert_bytes)
{
    const char *bf16[] = {"model.weights.routed_experts.dtype=bf16", "model.weights.routed_experts.group=0"};
    cfg_scenario sc_q, sc_b;
    plan p_q, p_b;
    build("configs/default.yaml", NULL, 0, &sc_q, &p_q);
    build("configs/default.yaml", bf16, 2, &sc_b, &p_b);
    const double experts = 60.0 * 24 * (7168.0 * 512 + 256.0 * 7168);
    double delta = phase(&p_b, "verify")->summary.weight_bytes - phase(&p_q, "verify")->summary.weight_bytes;
    cr_assert_float_eq(delta, experts * (2.0 - 0.5625), 1.0);
    done(&sc_q, &p_q);
    done(&sc_b, &p_b);
}

/* ---------------- routed experts ---------------- */

Test(plan_experts, expected_active_experts)
{
    cr_assert_float_eq(plan_expected_active_experts(384, 8, 3), 384.0 * (1.0 - pow(1.0 - 8.0 / 384.0, 3)), 1e-9);
    cr_assert_eq(lround(plan_expected_active_experts(384, 8, 3)), 24);
    cr_assert_float_eq(plan_expected_active_experts(384, 8, 1), 8.0, 1e-9, "one token: exactly top_k");
    cr_assert_float_eq(plan_expected_active_experts(384, 8, 0), 0.0, 1e-9);
    cr_assert_float_eq(plan_expected_active_experts(16, 2, 1), 2.0, 1e-9);
    cr_assert_float_eq(plan_expected_active_experts(8, 8, 2), 8.0, 1e-9, "top_k = experts: all of them");
    cr_assert_float_eq(plan_expected_active_experts(0, 8, 3), 0.0, 1e-9);
    cr_assert_float_eq(plan_expected_active_experts(384, 0, 3), 0.0, 1e-9);
    double big = plan_expected_active_experts(384, 8, 100000);
    cr_assert(big <= 384.0 && big > 383.9, "%f", big);
    double prev = 0;
    for (long long t = 1; t <= 512; t *= 2) {
        double e = plan_expected_active_experts(384, 8, t);
        cr_assert_gt(e, prev, "grows with tokens");
        cr_assert_leq(e, 8.0 * (double)t + 1e-9, "never more than tokens x top_k");
        prev = e;
    }
}

Test(plan_experts, plan_uses_the_estimate_or_the_configured_count)
{
    cfg_scenario sc;
    plan p;
    build("configs/default.yaml", NULL, 0, &sc, &p);
    cr_assert_eq(p.active_experts, 24);
    done(&sc, &p);

    const char *b16[] = {"workload.batch=16"};
    build("configs/default.yaml", b16, 1, &sc, &p);
    cr_assert_eq(p.active_experts, (int)lround(plan_expected_active_experts(384, 8, 48)));
    cr_assert_eq(find_op(phase(&p, "verify"), "moe.w13", 1)->batch, p.active_experts);
    done(&sc, &p);

    const char *set100[] = {"workload.active_experts=100"};
    build("configs/default.yaml", set100, 1, &sc, &p);
    cr_assert_eq(p.active_experts, 100);
    cr_assert_eq(find_op(phase(&p, "verify"), "moe.w2", 7)->batch, 100);
    done(&sc, &p);

    const char *too_many[] = {"workload.active_experts=1000"};
    build("configs/default.yaml", too_many, 1, &sc, &p);
    cr_assert_eq(p.active_experts, 384, "clamped to the expert count");
    done(&sc, &p);
}

/* ---------------- tensor-parallel degrees ---------------- */

Test(plan_tp, default_builds_at_1_2_4_8_16)
{
    const int tps[] = {1, 2, 4, 8, 16};
    for (size_t i = 0; i < 5; i++) {
        int tp = tps[i];
        char set[32];
        snprintf(set, sizeof(set), "parallel.tp=%d", tp);
        const char *sets[] = {set};
        cfg_scenario sc;
        plan p;
        build("configs/default.yaml", sets, 1, &sc, &p);
        cr_assert_eq(p.ranks, tp);
        const plan_phase *v = phase(&p, "verify");
        assert_allreduces(v, tp > 1 ? 123 : 0, 43008, tp);
        assert_gemm(find_op(v, "o_proj", 3), 3, 64 / tp * 128, 7168, 1);
        assert_gemm(find_op(v, "q_b_proj", 3), 3, 1536, 64 / tp * 192, 1);
        assert_gemm(find_op(v, "fused_qkv_a_proj", 3), 3, 7168, 2112, 1);
        assert_gemm(find_op(v, "moe.w13", 3), 24, 7168, 2 * 2048 / tp, 24);
        assert_gemm(find_op(v, "mlp.down", 0), 3, 18432 / tp, 7168, 1);
        assert_gemm(find_op(v, "lm_head", -1), 3, 7168, 163840 / tp, 1);
        assert_gemm(find_op(phase(&p, "draft_1"), "lm_head", -1), 1, 7168, 32000 / tp, 1);
        cr_assert_eq(find_op(v, "w_kc", 3)->batch, 64 / tp);
        done(&sc, &p);
    }
}

Test(plan_tp, tiny_builds_at_1_2_4_8)
{
    const int tps[] = {1, 2, 4, 8};
    for (size_t i = 0; i < 4; i++) {
        int tp = tps[i];
        char set[32];
        snprintf(set, sizeof(set), "parallel.tp=%d", tp);
        const char *sets[] = {set};
        cfg_scenario sc;
        plan p;
        build("configs/tiny.yaml", sets, 1, &sc, &p);
        const plan_phase *v = phase(&p, "verify");
        /* 4 layers: the embedding's plus 2 x 4; 3 tokens x 256 x 2 B. */
        assert_allreduces(v, tp > 1 ? 9 : 0, 3 * 256 * 2, tp);
        assert_gemm(find_op(v, "o_proj", 1), 3, 8 / tp * 32, 256, 1);
        assert_gemm(find_op(v, "lm_head", -1), 3, 256, 4096 / tp, 1);
        done(&sc, &p);
    }
}

Test(plan_tp, tiny_at_16_and_tp_3_are_rejected)
{
    cfg_scenario sc;
    cfg_error err = {{0}};
    const char *tp16[] = {"parallel.tp=16"};
    cr_assert_eq(cfg_scenario_load(th_path("configs/tiny.yaml"), tp16, 1, NULL, &sc, &err), -1);
    cr_assert_not_null(strstr(err.msg, "heads=8"), "%s", err.msg);
    const char *tp3[] = {"parallel.tp=3"};
    cr_assert_eq(cfg_scenario_load(th_path("configs/default.yaml"), tp3, 1, NULL, &sc, &err), -1);
    cr_assert_not_null(strstr(err.msg, "parallel.tp=3"), "%s", err.msg);

    /* plan_build guards itself too, for callers that fill a scenario by hand. */
    plan p;
    cr_assert_eq(cfg_scenario_load(th_path("configs/default.yaml"), NULL, 0, NULL, &sc, &err), 0, "%s", err.msg);
    sc.parallel.tp = 3;
    char why[256] = "";
    cr_assert_eq(plan_build(&sc, &p, why, sizeof(why)), -1);
    cr_assert_not_null(strstr(why, "parallel.tp=3"), "%s", why);
    cfg_scenario_free(&sc);
}

Test(plan_tp, divisibility_only_of_the_sizes_in_use)
{
    /* Without dense layers the dense MLP's size does not have to divide by TP. */
    const char *sets[] = {"model.first_k_dense=0", "model.mlp.intermediate=18433"};
    cfg_scenario sc;
    plan p;
    build("configs/default.yaml", sets, 2, &sc, &p);
    const plan_phase *v = phase(&p, "verify");
    for (int i = 0; i < v->n_ops; i++)
        cr_assert(strncmp(v->ops[i].name, "mlp.", 4), "no dense MLP op expected, found %s", v->ops[i].name);
    assert_allreduces(v, 123, 43008, 8);
    cr_assert_eq(v->summary.op_count[PLAN_OP_GROUPED_GEMM], 122);
    done(&sc, &p);

    /* With one, it does. */
    const char *dense[] = {"model.mlp.intermediate=18433"};
    cfg_error err = {{0}};
    cr_assert_eq(cfg_scenario_load(th_path("configs/default.yaml"), dense, 1, NULL, &sc, &err), -1);
    cr_assert_not_null(strstr(err.msg, "mlp.intermediate=18433"), "%s", err.msg);
}

/* ---------------- JSON round trip through the API ---------------- */

static char *plan_to_json(const plan *p)
{
    util_json j;
    util_json_init(&j, true);
    plan_json_write(&j, p);
    return j.out.s;
}

Test(plan_json, write_load_write_is_identical)
{
    const char *variants[][2] = {{NULL, NULL},
                                 {"speculative.algorithm=none", NULL},
                                 {"speculative.steps=3", "speculative.num_draft_tokens=4"}};
    for (size_t v = 0; v < 3; v++) {
        const char *sets[2];
        int n = 0;
        for (int k = 0; k < 2; k++)
            if (variants[v][k])
                sets[n++] = variants[v][k];
        cfg_scenario sc;
        plan p;
        build("configs/default.yaml", sets, n, &sc, &p);
        char *first = plan_to_json(&p);
        char *path = th_write_temp(first, strlen(first), ".json");
        plan q;
        cfg_error err = {{0}};
        cr_assert_eq(plan_json_load(path, &q, &err), 0, "%s", err.msg);
        char *second = plan_to_json(&q);
        cr_assert(strcmp(first, second) == 0, "variant %zu: the reloaded plan writes different JSON", v);
        cr_assert_eq(q.n_phases, p.n_phases);
        cr_assert_eq(q.ranks, p.ranks);
        cr_assert_eq(q.active_experts, p.active_experts);
        for (int i = 0; i < p.n_phases; i++) {
            cr_assert_eq(q.phases[i].n_ops, p.phases[i].n_ops);
            cr_assert_eq(q.phases[i].summary.allreduce_count, p.phases[i].summary.allreduce_count);
            cr_assert_float_eq(q.phases[i].summary.flops, p.phases[i].summary.flops, 1e-6);
            cr_assert_float_eq(q.phases[i].summary.weight_bytes, p.phases[i].summary.weight_bytes, 1e-6);
        }
        free(first);
        free(second);
        unlink(path);
        free(path);
        plan_free(&q);
        done(&sc, &p);
    }
}

Test(plan_json, derived_terms_are_recomputed_on_load)
{
    plan q;
    cfg_error err = {{0}};
    cr_assert_eq(plan_json_load(th_path("tests/data/plan_hand.json"), &q, &err), 0, "%s", err.msg);
    cr_assert_eq(q.n_phases, 1);
    cr_assert_eq(q.ranks, 2);
    const plan_phase *ph = &q.phases[0];
    cr_assert_eq(ph->n_ops, 2);
    /* The file says flops 12345 and weight_bytes 7; the shapes say otherwise. */
    cr_assert_float_eq(ph->ops[0].flops, 2.0 * 2 * 8 * 4, 1e-9);
    cr_assert_float_eq(ph->ops[0].weight_bytes, 4.0 * 8 * 2, 1e-9);
    cr_assert_eq(ph->summary.allreduce_count, 1);
    cr_assert_eq(ph->summary.allreduce_bytes[0], 32);
    cr_assert_eq(ph->summary.gemm_count, 1);
    plan_free(&q);
}

Test(plan_json, errors_have_line_and_column)
{
    const struct {
        const char *file, *where, *what;
    } cases[] = {
        {"tests/data/bad/plan_unknown_key.json", ":19:77: ", "unknown key \"colour\""},
        {"tests/data/bad/plan_bad_value.json", ":19:15: ", "op.m: -2 is out of range"},
        {"tests/data/bad/plan_bad_kind.json", ":18:18: ", "op.kind: expected one of: gemm"},
        {"tests/data/bad/plan_bad_ranks.json", ":21:57: ", "ranks 0..N-1"},
        {"tests/data/bad/plan_bad_schema.json", ":2:13: ", "not a vpsim plan"},
        {"tests/data/bad/plan_ranks_mismatch.json", ":21:53: ", "spans 2 ranks but the plan has 4"},
        {"tests/data/bad/plan_bad_context.json", ":6:14: ", "out of range [0, 2147483647]"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        plan q;
        cfg_error err = {{0}};
        const char *path = th_path(cases[i].file);
        cr_assert_eq(plan_json_load(path, &q, &err), -1, "%s should be rejected", cases[i].file);
        char *want = util_xasprintf("%s%s", path, cases[i].where);
        cr_assert(strncmp(err.msg, want, strlen(want)) == 0, "got: %s\nwant prefix: %s", err.msg, want);
        cr_assert_not_null(strstr(err.msg, cases[i].what), "%s", err.msg);
        free(want);
    }
}
