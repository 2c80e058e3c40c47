/* fusion.allreduce_residual_norm: the plan transform, the --check reference, the
 * model's epilogue and separate-norm terms, and the CPU replay with --check. */
#include "../../sim/exec/exec.h"
#include "../../sim/model/model.h"
#include "test_helpers.h"
#include "th_model.h"
#include "th_plan.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const fuse_on[] = {"fusion.allreduce_residual_norm=true"};

/* tiny: hidden 256, 4 layers (1 dense, 3 MoE), draft steps 2, 3 draft tokens. */
static void assert_phase(const plan_phase *off, const plan_phase *on, int fused, int left, long long count)
{
    cr_assert_eq(th_count_kind(on, PLAN_OP_ALLREDUCE_NORM), fused, "%s", on->name);
    cr_assert_eq(th_count_kind(on, PLAN_OP_ALLREDUCE), left, "%s", on->name);
    cr_assert_eq(th_count_kind(on, PLAN_OP_NORM), th_count_kind(off, PLAN_OP_NORM) - fused, "%s", on->name);
    cr_assert_eq(on->n_ops, off->n_ops - fused, "%s: each pair becomes one op", on->name);
    for (int i = 0; i < on->n_ops; i++) {
        const plan_op *op = &on->ops[i];
        if (op->kind == PLAN_OP_ALLREDUCE_NORM) {
            cr_assert_eq(op->count, count, "%s %s", on->name, op->name);
            cr_assert_eq(op->m * op->n, op->count);
            cr_assert_eq(op->n, 256);
            cr_assert_eq(op->payload_bytes, count * 2, "bf16 payload");
        }
        /* No norm of an allreduce's rows is left right behind it. */
        if (op->kind == PLAN_OP_ALLREDUCE && i + 1 < on->n_ops)
            cr_assert(!(on->ops[i + 1].kind == PLAN_OP_NORM && on->ops[i + 1].m * on->ops[i + 1].n == op->count),
                      "%s: %s is still followed by %s", on->name, op->name, on->ops[i + 1].name);
    }
}

Test(fusion, tiny_plan_fuses_every_allreduce_followed_by_its_norm)
{
    cfg_scenario s0, s1;
    plan off, on;
    th_plan_build("configs/tiny.yaml", NULL, 0, &s0, &off);
    th_plan_build("configs/tiny.yaml", fuse_on, 1, &s1, &on);
    /* draft_1 (1 row): embedding -> input_layernorm, attn -> post_attention_layernorm, mlp -> final_norm. */
    assert_phase(th_phase(&off, "draft_1"), th_phase(&on, "draft_1"), 3, 0, 1 * 256);
    /* verify (3 rows): embedding -> layer 0's input_layernorm, 4 x attn, 3 x moe + 1 x mlp into the next
     * input_layernorm or final_norm: 9, nothing left. */
    assert_phase(th_phase(&off, "verify"), th_phase(&on, "verify"), 9, 0, 3 * 256);
    /* draft_extend: fc stands between the embedding's allreduce and its norm, so that one stays. */
    assert_phase(th_phase(&off, "draft_extend"), th_phase(&on, "draft_extend"), 2, 1, 3 * 256);
    const plan_phase *v = th_phase(&on, "verify");
    cr_assert_eq(th_find_op(v, "allreduce_norm.attn", 2)->kind, PLAN_OP_ALLREDUCE_NORM);
    cr_assert_eq(th_find_op(v, "allreduce_norm.moe", 3)->m, 3);
    cr_assert_eq(th_find_op(v, "allreduce_norm.mlp", 0)->layer, 0);
    /* The shared expert still joins before the fused collective: side ops precede it in the layer. */
    for (int i = 0; i < v->n_ops; i++)
        if (v->ops[i].stream == PLAN_STREAM_SIDE)
            cr_assert_neq(v->ops[i + 1].kind, PLAN_OP_NORM);
    th_plan_done(&s0, &off);
    th_plan_done(&s1, &on);
}

Test(fusion, one_rank_plan_is_left_alone)
{
    const char *const sets[] = {"fusion.allreduce_residual_norm=true", "parallel.tp=1"};
    cfg_scenario s0, s1;
    plan off, on;
    th_plan_build("configs/tiny.yaml", sets + 1, 1, &s0, &off);
    th_plan_build("configs/tiny.yaml", sets, 2, &s1, &on);
    for (int i = 0; i < on.n_phases; i++) {
        cr_assert_eq(on.phases[i].n_ops, off.phases[i].n_ops);
        cr_assert_eq(th_count_kind(&on.phases[i], PLAN_OP_ALLREDUCE_NORM), 0);
    }
    th_plan_done(&s0, &off);
    th_plan_done(&s1, &on);
}

Test(fusion, check_reference_on_a_hand_computed_two_rank_row)
{
    /* Salt 0, one row of 2. Ranks' patterns ((7i + 5r) % 17 - 8): r0 = {-8, -1}, r1 = {-3, 4}; sum {-11, 3}.
     * Residual fill ((5i) % 9 - 4) = {-4, 1}, so the residual becomes {-15, 4}. Mean square (225 + 16) / 2
     * = 120.5; 1 / sqrt(120.5 + 1e-6) = 0.0910975; weights {0.5, 0.625}:
     * out = {-15 x 0.0910975 x 0.5, 4 x 0.0910975 x 0.625} = {-0.683231, 0.227744}. */
    float res[2], out[2];
    exec_check_norm_reference(2, 1, 2, 0, res, out);
    cr_assert_float_eq(res[0], -15.0f, 0.0f);
    cr_assert_float_eq(res[1], 4.0f, 0.0f);
    cr_assert_float_eq(out[0], -0.683231f, 1e-6f);
    cr_assert_float_eq(out[1], 0.227744f, 1e-6f);
}

static void default_scenario(cfg_scenario *sc)
{
    cfg_error err;
    cr_assert_eq(cfg_scenario_load(th_path("configs/default.yaml"), NULL, 0, NULL, sc, &err), 0, "%s", err.msg);
}

Test(fusion, norm_part_terms_hand_computed)
{
    cfg_scenario sc;
    default_scenario(&sc);
    const cfg_system *s = &sc.system;
    /* DeepSeek-V3 verify rows: 3 x 7168 bf16. Fused epilogue bytes (3 x 3 x 7168 + 7168) x 2 = 143360. */
    plan_op op = {.kind = PLAN_OP_ALLREDUCE_NORM, .m = 3, .n = 7168, .count = 3 * 7168, .adtype = CFG_DT_BF16,
                  .ranks = 8, .batch = 1};
    model_terms t = {0};
    const double epi = model_norm_part_us(s, true, &op, false, &t);
    const double bw = s->gpu.mem_bw_gbs * s->gpu.mem_efficiency * 1e3; /* bytes per us */
    cr_assert_float_eq(model_term_get(&t, "epilogue_bytes"), 143360.0, 1e-9);
    cr_assert_float_eq(epi, 143360.0 / bw, 1e-12);
    /* Separate norm: read 3 x 7168 + 7168 weights, write 3 x 7168, at 2 B = 100352 B: a norm kernel of
     * max(kernel floor, latency + bytes / bw). */
    t.n = 0;
    const double sep = model_norm_part_us(s, false, &op, false, &t);
    cr_assert_float_eq(model_term_get(&t, "bytes"), 100352.0, 1e-9);
    cr_assert_float_eq(sep, fmax(s->gpu.kernel_floor_us, s->gpu.mem_latency_us + 100352.0 / bw), 1e-9);
    cr_assert(model_backend_fuses_norm(CFG_BACKEND_ONESHOT) && model_backend_fuses_norm(CFG_BACKEND_PUSH));
    cr_assert(!model_backend_fuses_norm(CFG_BACKEND_NCCL) && !model_backend_fuses_norm(CFG_BACKEND_MPI));
    cfg_scenario_free(&sc);
}

static double cycle_ms(cfg_scenario *sc, plan *p, const char *const *sets, int n, cfg_backend be)
{
    return th_model_cycle(sets, n, be, sc, p).cycle_ms;
}

/* Default scenario (CUDA graphs): a fused pair drops the norm's graph node and kernel and adds the
 * epilogue, so the cycle saves sum over fused ops of (graph_node_us + norm kernel - epilogue). */
Test(fusion, default_oneshot_saves_one_norm_launch_per_fused_pair)
{
    cfg_scenario s0, s1;
    plan off, on;
    const double t_off = cycle_ms(&s0, &off, NULL, 0, CFG_BACKEND_ONESHOT);
    const double t_on = cycle_ms(&s1, &on, fuse_on, 1, CFG_BACKEND_ONESHOT);
    cr_assert(s1.run.graph, "the default scenario replays CUDA graphs");
    const cfg_system *s = &s1.system;
    double want_us = 0.0;
    int pairs = 0;
    for (int ph = 0; ph < on.n_phases; ph++)
        for (int i = 0; i < on.phases[ph].n_ops; i++) {
            const plan_op *op = &on.phases[ph].ops[i];
            if (op->kind != PLAN_OP_ALLREDUCE_NORM)
                continue;
            pairs++;
            want_us += s->launch.graph_node_us + model_norm_part_us(s, false, op, false, NULL) -
                       model_norm_part_us(s, true, op, false, NULL);
        }
    /* 61 layers x 2 + the embedding's in verify; 3 in the one draft step (steps 2), 2 in draft_extend. */
    cr_assert_eq(pairs, 61 * 2 + 1 + 3 + 2);
    cr_assert_float_eq((t_off - t_on) * 1000.0, want_us, 1e-6 * want_us, "saved %.3f us, want %.3f us",
                       (t_off - t_on) * 1000.0, want_us);
    /* About one norm launch each: at least the node gap, at most node gap + kernel floor. */
    cr_assert(want_us / pairs > s->launch.graph_node_us);
    cr_assert(want_us / pairs < s->launch.graph_node_us + s->gpu.kernel_floor_us);
    /* NCCL has no fused kernel: the fused plan costs what the unfused one does. */
    plan off2, on2;
    cfg_scenario s2, s3;
    const double nccl_off = cycle_ms(&s2, &off2, NULL, 0, CFG_BACKEND_NCCL);
    const double nccl_on = cycle_ms(&s3, &on2, fuse_on, 1, CFG_BACKEND_NCCL);
    cr_assert_float_eq(nccl_off, nccl_on, 1e-9); /* (Criterion's macros evaluate their arguments more than once) */
    th_plan_done(&s0, &off);
    th_plan_done(&s1, &on);
    th_plan_done(&s2, &off2);
    th_plan_done(&s3, &on2);
}

static th_result mpirun_fused(const char *extra)
{
    return th_mpirun(2, "run configs/tiny.yaml --device cpu --backend mpi --set fusion.allreduce_residual_norm=true "
                        "--check --iters 1 --warmup 0 %s",
                     extra);
}

Test(fusion, cpu_replay_checks_allreduce_norm_and_fails_when_corrupted, .timeout = 120)
{
    th_need_mpirun();
    th_result r = mpirun_fused("");
    cr_assert_eq(r.status, 0, "exit %d\n%s\n%s", r.status, r.out, r.err);
    cr_assert(strstr(r.out, "mpi_allreduce_norm") != NULL, "the unfused sequence is said:\n%s", r.out);
    th_free(&r);
    /* Through the per-size composite: each rule's member runs its allreduce_norm. */
    r = mpirun_fused("--allreduce-policy 'mpi<=1K,mpi'");
    cr_assert_eq(r.status, 0, "exit %d\n%s\n%s", r.status, r.out, r.err);
    /* Per pass, 1 KiB and under: draft_1's 3 allreduce_norm of 256 fp32; above: verify's 9 and draft_extend's
     * 2 allreduce_norm and 1 allreduce of 768. So 4 large calls per small one, whatever the pass count. */
    long long small = 0, large = 0;
    const char *calls = strstr(r.out, "mpi<=1K: ");
    cr_assert(calls && sscanf(calls, "mpi<=1K: %lld, mpi: %lld", &small, &large) == 2, "%s", r.out);
    cr_assert(small > 0 && small % 3 == 0 && large == 4 * small, "small %lld, large %lld", small, large);
    th_free(&r);
    r = mpirun_fused("--debug-corrupt-rank 1");
    cr_assert_eq(r.status, 1, "exit %d\n%s\n%s", r.status, r.out, r.err);
    cr_assert(strstr(r.err, "allreduce_norm 'allreduce_norm.embedding'") != NULL, "%s", r.err);
    cr_assert(strstr(r.err, "first bad index 0") != NULL, "%s", r.err);
    th_free(&r);
}
