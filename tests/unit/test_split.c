/* collectives.allreduce_split (plan_split.c): the plan's shapes, the config cross-check, the CPU replay
 * with --check, bench-allreduce --collective reduce_scatter, and the model's explanation.
 *
 * configs/tiny.yaml: hidden 256, 4 target layers (1 dense), one draft layer, batch 1, steps 2,
 * num_draft_tokens 3: draft_1 has 1 row, verify 3 rows, draft_extend 3 rows (steps + 1). */
#include "../../sim/config/cfg.h"
#include "../../sim/config/cfg_tree.h"
#include "../../sim/exec/exec_bench.h"
#include "../../sim/model/model.h"
#include "../../sim/plan/plan.h"
#include "test_helpers.h"
#include "th_plan.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define H 256

static int index_of(const plan_phase *ph, const char *name, int layer)
{
    for (int i = 0; i < ph->n_ops; i++)
        if (!strcmp(ph->ops[i].name, name) && ph->ops[i].layer == layer)
            return i;
    cr_assert_fail("no op %s in layer %d of %s", name, layer, ph->name);
    return -1;
}

/* reduce_scatter.<what> of layer `layer`, then `norm` on shard rows, then allgather.<what>. */
static void assert_split(const plan_phase *ph, const char *what, int layer, const char *norm, long long shard, int ranks)
{
    char rs_name[PLAN_NAME_MAX], ag_name[PLAN_NAME_MAX];
    snprintf(rs_name, sizeof(rs_name), "reduce_scatter.%s", what);
    snprintf(ag_name, sizeof(ag_name), "allgather.%s", what);
    const int i = index_of(ph, rs_name, layer);
    cr_assert_lt(i + 2, ph->n_ops);
    const plan_op *rs = &ph->ops[i], *n = &ph->ops[i + 1], *ag = &ph->ops[i + 2];
    cr_assert_eq(rs->kind, PLAN_OP_REDUCE_SCATTER, "%s", ph->name);
    cr_assert_eq(rs->count, shard * ranks * H, "%s %s: count %lld", ph->name, rs_name, rs->count);
    cr_assert_eq(rs->payload_bytes, rs->count * 2, "bf16 activations");
    cr_assert_eq(rs->ranks, ranks);
    cr_assert_eq(n->kind, PLAN_OP_NORM);
    cr_assert_str_eq(n->name, norm);
    cr_assert_eq(n->m, shard, "%s %s: the norm runs on this rank's %lld rows, got %lld", ph->name, norm, shard, n->m);
    cr_assert_eq(n->n, H);
    cr_assert_eq(ag->kind, PLAN_OP_ALLGATHER);
    cr_assert_str_eq(ag->name, ag_name);
    cr_assert_eq(ag->count, shard * H, "%s %s: count %lld", ph->name, ag_name, ag->count);
    cr_assert_eq(ag->ranks, ranks);
}

static void build(int tp, bool split, cfg_scenario *sc, plan *p)
{
    char tps[32];
    snprintf(tps, sizeof(tps), "parallel.tp=%d", tp);
    const char *sets[] = {tps, split ? "collectives.allreduce_split=true" : "collectives.allreduce_split=false"};
    th_plan_build("configs/tiny.yaml", sets, 2, sc, p);
}

Test(plan_split, tp2_pads_three_rows_to_four_and_keeps_the_op_order)
{
    cfg_scenario sc;
    plan p;
    build(2, true, &sc, &p);
    const plan_phase *v = th_phase(&p, "verify");
    /* 3 rows over 2 ranks: padded to 4, 2 per rank. */
    for (int l = 0; l < 4; l++)
        assert_split(v, "attn", l, "post_attention_layernorm", 2, 2);
    assert_split(v, "mlp", 0, "input_layernorm", 2, 2); /* the dense layer feeds layer 1's norm */
    for (int l = 1; l < 3; l++)
        assert_split(v, "moe", l, "input_layernorm", 2, 2);
    assert_split(v, "moe", 3, "final_norm", 2, 2);
    cr_assert_str_eq(v->ops[index_of(v, "allgather.moe", 3) + 1].name, "lm_head", "lm_head follows the gather");
    cr_assert_eq(v->ops[index_of(v, "lm_head", -1)].m, 3, "lm_head keeps the real rows");
    /* 8 layer allreduces split; the embedding's stays; all-gathers: 8 + the logits. */
    cr_assert_eq(th_count_kind(v, PLAN_OP_REDUCE_SCATTER), 8);
    cr_assert_eq(th_count_kind(v, PLAN_OP_ALLGATHER), 9);
    cr_assert_eq(th_count_kind(v, PLAN_OP_ALLREDUCE), 1);
    cr_assert_str_eq(v->ops[index_of(v, "allreduce.embedding", -1)].name, "allreduce.embedding");
    cr_assert_eq(v->ops[index_of(v, "allreduce.embedding", -1)].count, 3 * H);
    cr_assert_eq(v->summary.op_count[PLAN_OP_REDUCE_SCATTER], 8, "the summary counts them");
    /* Draft: one row pads to two (one per rank); the draft's mlp allreduce feeds final_norm. */
    const plan_phase *d1 = th_phase(&p, "draft_1");
    assert_split(d1, "attn", 0, "post_attention_layernorm", 1, 2);
    assert_split(d1, "mlp", 0, "final_norm", 1, 2);
    assert_split(th_phase(&p, "draft_extend"), "mlp", 0, "final_norm", 2, 2);
    cfg_scenario plain_sc;
    plan plain;
    build(2, false, &plain_sc, &plain);
    for (int ph = 0; ph < p.n_phases; ph++) {
        /* allreduce + norm -> reduce-scatter + norm + all-gather: one more op per split. */
        const int splits = th_count_kind(&p.phases[ph], PLAN_OP_REDUCE_SCATTER);
        cr_assert_eq(p.phases[ph].n_ops, plain.phases[ph].n_ops + splits, "%s", p.phases[ph].name);
        cr_assert_eq(th_count_kind(&plain.phases[ph], PLAN_OP_ALLREDUCE), 1 + splits);
    }
    th_plan_done(&plain_sc, &plain);
    th_plan_done(&sc, &p);
}

Test(plan_split, tp4_gives_each_rank_one_row)
{
    cfg_scenario sc;
    plan p;
    build(4, true, &sc, &p);
    /* verify: 3 rows pad to 4; draft_1: 1 row pads to 4 (three padding rows). */
    assert_split(th_phase(&p, "verify"), "moe", 2, "input_layernorm", 1, 4);
    assert_split(th_phase(&p, "draft_1"), "attn", 0, "post_attention_layernorm", 1, 4);
    th_plan_done(&sc, &p);
}

Test(plan_split, one_rank_changes_nothing)
{
    cfg_scenario sc, plain_sc;
    plan p, plain;
    build(1, true, &sc, &p);
    build(1, false, &plain_sc, &plain);
    cr_assert_eq(p.n_phases, plain.n_phases);
    for (int ph = 0; ph < p.n_phases; ph++) {
        cr_assert_eq(p.phases[ph].n_ops, plain.phases[ph].n_ops);
        cr_assert_eq(th_count_kind(&p.phases[ph], PLAN_OP_REDUCE_SCATTER), 0);
        for (int i = 0; i < p.phases[ph].n_ops; i++)
            cr_assert_str_eq(p.phases[ph].ops[i].name, plain.phases[ph].ops[i].name);
    }
    th_plan_done(&plain_sc, &plain);
    th_plan_done(&sc, &p);
}

Test(plan_split, the_plan_table_names_the_reduce_scatters)
{
    th_result r = th_run("plan configs/tiny.yaml --set collectives.allreduce_split=true");
    cr_assert_eq(r.status, 0, "%s", r.err);
    /* verify: 8 x (4 rows x 256 x 2 B = 2048 B); draft_1: 2 x (2 x 256 x 2 = 1024 B). */
    cr_assert(strstr(r.out, "draft_1 2 x 1024 B, verify 8 x 2048 B, draft_extend 2 x 2048 B") != NULL, "%s", r.out);
    th_free(&r);
}

Test(plan_split, fusion_and_split_together_are_refused_naming_both_keys)
{
    th_expect_bad(th_run("plan configs/tiny.yaml --set collectives.allreduce_split=true --set "
                         "fusion.allreduce_residual_norm=true"),
                  "collectives.allreduce_split", "fusion.allreduce_residual_norm");
}

/* ---------------- replay and benchmark on the CPU device ---------------- */

static th_result mpirun2(const char *args)
{
    return th_mpirun(2, "%s", args);
}

Test(split_cpu, replay_checks_every_collective_and_a_corruption_fails_them_all, .timeout = 120)
{
    th_need_mpirun();
    th_result r = mpirun2("run configs/tiny.yaml --device cpu --backend mpi --set collectives.allreduce_split=true "
                          "--check --iters 1 --warmup 0");
    cr_assert_eq(r.status, 0, "exit %d\n%s\n%s", r.status, r.out, r.err);
    cr_assert(strstr(r.out, "CHECK FAILED") == NULL, "%s", r.out);
    th_free(&r);
    /* Rank 1's output poisoned after every collective: all of them fail, reduce-scatters included.
     * draft_1 and draft_extend: embedding allreduce, 2 x (reduce-scatter + all-gather), logits = 6 each;
     * verify: embedding, 8 x 2, logits = 18; 30 in all (unsplit: 18). */
    r = mpirun2("run configs/tiny.yaml --device cpu --backend mpi --set collectives.allreduce_split=true --check "
                "--iters 1 --warmup 0 --debug-corrupt-rank 1");
    cr_assert_eq(r.status, 1, "exit %d\n%s\n%s", r.status, r.out, r.err);
    cr_assert(strstr(r.out, "CHECK FAILED: 30 of 30 collective(s)") != NULL, "%s", r.out);
    th_free(&r);
}

Test(split_cpu, bench_reduce_scatter_checks_and_records_the_collective, .timeout = 120)
{
    th_need_mpirun();
    /* 12 B = 3 floats: rounded down to 2 (a multiple of the 2 ranks) = 8 B; 4096 B = 1024 floats. */
    th_result r = mpirun2("bench-allreduce --device cpu --backend mpi --policy mpi --collective reduce_scatter "
                          "--check --sizes 12,4096 -n 3 -w 1 --format csv");
    cr_assert_eq(r.status, 0, "exit %d\n%s\n%s", r.status, r.out, r.err);
    cr_assert(strstr(r.out, ",graph,collective\n") != NULL, "%s", r.out);
    int rows = 0;
    for (char *line = strtok(r.out, "\n"); line; line = strtok(NULL, "\n")) {
        if (strncmp(line, "mpi,", 4) && strncmp(line, "\"policy", 7) && strncmp(line, "policy", 6))
            continue;
        long long bytes, count;
        double t, alg, bus;
        int wrong;
        const char *p = strstr(line, ",2,cpu,float,sum,");
        cr_assert_not_null(p, "%s", line);
        cr_assert_eq(sscanf(p, ",2,cpu,float,sum,%lld,%lld,%lf,%lf,%lf,%d,", &bytes, &count, &t, &alg, &bus, &wrong), 6,
                     "%s", line);
        cr_assert(bytes == 8 || bytes == 4096, "%s", line);
        cr_assert_eq(count * 4, bytes);
        cr_assert_eq(wrong, 0, "%s", line);
        cr_assert_float_eq(bus, alg / 2, 1e-4 * alg + 1e-9, "busbw = algbw x (n-1)/n: %s", line);
        cr_assert(strstr(line, ",reduce_scatter") != NULL, "%s", line);
        rows++;
    }
    cr_assert_eq(rows, 4, "two sizes x (mpi + the policy)");
    th_free(&r);
}

Test(split_cpu, bench_refuses_a_backend_without_the_collective)
{
    /* The refusal comes before the device is asked, so a CUDA backend shows it on a machine without a GPU. */
    th_expect_bad(th_run("bench-allreduce --device cpu --backend oneshot --collective alltoall"),
                  "--collective alltoall", "backend oneshot has no alltoall");
    th_expect_bad(th_run("bench-allreduce --device cpu --collective allreduce_norm"), "--collective",
                  "allreduce, allgather, reduce_scatter, alltoall");
}

Test(split_model, explain_costs_the_reduce_scatter_and_the_gather)
{
    th_result r = th_run("model configs/tiny.yaml --set collectives.allreduce_split=true --backend nccl --explain");
    cr_assert_eq(r.status, 0, "%s", r.err);
    /* verify layer 0: 4 rows x 256 x 2 B = 2048 B sent; the all-gather sends 2 x 256 x 2 = 1024 B. */
    cr_assert(strstr(r.out, "one reduce_scatter: reduce_scatter.attn, layer 0, 2048 B per rank over 2 ranks") != NULL,
              "%s", r.out);
    cr_assert(strstr(r.out, "one allgather: allgather.attn, layer 0, 1024 B per rank over 2 ranks") != NULL, "%s",
              r.out);
    th_free(&r);
}

/* The target box's system has a measured NCCL allreduce (200 us) and no reduce-scatter table: the NCCL
 * split is formula against a measurement, so it is warned about and ranked apart; the oneshot split
 * (formula against formula, no table for oneshot) is not. */
Test(split_model, compare_ranks_the_formula_only_nccl_split_apart)
{
    th_result r = th_run("compare configs/default.yaml --variants configs/plans/verify-faster.yaml");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "~ split (nccl)") != NULL, "%s", r.out);
    cr_assert(strstr(r.out, "~ split + oneshot") == NULL && strstr(r.out, "split + oneshot") != NULL, "%s", r.out);
    cr_assert(strstr(r.out, "the split's reduce-scatters are the formula") != NULL, "%s", r.out);
    th_free(&r);
}

Test(split_bench, busbw_follows_nccl_tests_per_kind)
{
    /* algbw 10 GB/s at 4 ranks: allreduce x 2 x 3/4 = 15; reduce_scatter, alltoall x 3/4 = 7.5; allgather
     * x 3 = 30 (nccl-tests' size is the gathered 4 x the contribution, times 3/4). */
    cr_assert_float_eq(exec_bench_busbw(PLAN_OP_ALLREDUCE, 10, 4), 15.0, 1e-12);
    cr_assert_float_eq(exec_bench_busbw(PLAN_OP_REDUCE_SCATTER, 10, 4), 7.5, 1e-12);
    cr_assert_float_eq(exec_bench_busbw(PLAN_OP_ALLTOALL, 10, 4), 7.5, 1e-12);
    cr_assert_float_eq(exec_bench_busbw(PLAN_OP_ALLGATHER, 10, 4), 30.0, 1e-12);
}

/* --model prices the kind that was timed, and a saved result keeps it (--from). */
Test(split_bench, model_and_saved_results_use_the_collective, .timeout = 120)
{
    th_need_mpirun();
    char dir[] = "/tmp/vpsim-split-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[600];
    snprintf(path, sizeof(path), "%s/rs.json", dir);
    th_result r = th_mpirun(2, "bench-allreduce --device cpu --backend mpi --collective reduce_scatter --sizes 4K -n 2 "
                               "-w 0 --model --format json --out %s",
                            path);
    cr_assert_eq(r.status, 0, "%s\n%s", r.out, r.err);
    th_free(&r);
    cfg_error err;
    cfg_doc *d = cfg_doc_load_file(path, &err);
    cr_assert_not_null(d, "%s", err.msg);
    cfg_node *root = cfg_doc_root(d);
    cr_assert_str_eq(cfg_map_get(root, "collective")->scalar, "reduce_scatter");
    cfg_node *row = cfg_map_get(cfg_map_get(root, "backends")->items[0], "rows")->items[0];
    const double model_us = strtod(cfg_map_get(row, "model_us")->scalar, NULL);
    cfg_doc_free(d);
    /* The default scenario's system (the model's when no scenario is named), host-staged MPI: the
     * reduce-scatter formula, not the allreduce's. */
    cfg_scenario sc;
    plan p;
    th_plan_build("configs/default.yaml", NULL, 0, &sc, &p);
    model_coll rs, ar;
    model_bench_call(&sc.system, CFG_BACKEND_MPI, PLAN_OP_REDUCE_SCATTER, 4096, 2, false, &rs);
    model_bench_call(&sc.system, CFG_BACKEND_MPI, PLAN_OP_ALLREDUCE, 4096, 2, false, &ar);
    th_plan_done(&sc, &p);
    cr_assert_float_eq(model_us, rs.us, 1e-6 * rs.us, "model_us %f, reduce-scatter %f", model_us, rs.us);
    cr_assert(fabs(rs.us - ar.us) > 1e-3, "the kinds differ: %f vs %f", rs.us, ar.us);
    r = th_run("bench-allreduce --from %s --format csv", path);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, ",false,false,reduce_scatter,") != NULL, "%s", r.out);
    th_free(&r);
    r = th_sh("rm -rf '%s'", dir);
    th_free(&r);
}
