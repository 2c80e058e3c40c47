/* plan: the routed-expert estimate, tensor-parallel degrees and the JSON round trip through the C API. */
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
    th_plan_build("configs/default.yaml", NULL, 0, &sc, &p);
    cr_assert_eq(p.active_experts, 24);
    th_plan_done(&sc, &p);

    const char *b16[] = {"workload.batch=16"};
    th_plan_build("configs/default.yaml", b16, 1, &sc, &p);
    cr_assert_eq(p.active_experts, (int)lround(plan_expected_active_experts(384, 8, 48)));
    cr_assert_eq(th_find_op(th_phase(&p, "verify"), "moe.w13", 1)->batch, p.active_experts);
    th_plan_done(&sc, &p);

    const char *set100[] = {"workload.active_experts=100"};
    th_plan_build("configs/default.yaml", set100, 1, &sc, &p);
    cr_assert_eq(p.active_experts, 100);
    cr_assert_eq(th_find_op(th_phase(&p, "verify"), "moe.w2", 7)->batch, 100);
    th_plan_done(&sc, &p);

    /* More experts than the model has is refused, not clamped (seen once: clamping modelled another
     * input than the one given). */
    const char *too_many[] = {"workload.active_experts=1000"};
    cfg_error err;
    cr_assert_neq(cfg_scenario_load(th_path("configs/default.yaml"), too_many, 1, NULL, &sc, &err), 0);
    cr_assert_not_null(strstr(err.msg, "workload.active_experts=1000 is more than the 384 routed experts"), "%s",
                       err.msg);
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
        th_plan_build("configs/default.yaml", sets, 1, &sc, &p);
        cr_assert_eq(p.ranks, tp);
        const plan_phase *v = th_phase(&p, "verify");
        th_assert_allreduces(v, tp > 1 ? 123 : 0, 43008, tp);
        th_assert_gemm(th_find_op(v, "o_proj", 3), 3, 64 / tp * 128, 7168, 1);
        th_assert_gemm(th_find_op(v, "q_b_proj", 3), 3, 1536, 64 / tp * 192, 1);
        th_assert_gemm(th_find_op(v, "fused_qkv_a_proj", 3), 3, 7168, 2112, 1);
        th_assert_gemm(th_find_op(v, "moe.w13", 3), 24, 7168, 2 * 2048 / tp, 24);
        th_assert_gemm(th_find_op(v, "mlp.down", 0), 3, 18432 / tp, 7168, 1);
        th_assert_gemm(th_find_op(v, "lm_head", -1), 3, 7168, 163840 / tp, 1);
        th_assert_gemm(th_find_op(th_phase(&p, "draft_1"), "lm_head", -1), 1, 7168, 32000 / tp, 1);
        cr_assert_eq(th_find_op(v, "w_kc", 3)->batch, 64 / tp);
        th_plan_done(&sc, &p);
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
        th_plan_build("configs/tiny.yaml", sets, 1, &sc, &p);
        const plan_phase *v = th_phase(&p, "verify");
        /* 4 layers: the embedding's plus 2 x 4; 3 tokens x 256 x 2 B. */
        th_assert_allreduces(v, tp > 1 ? 9 : 0, 3 * 256 * 2, tp);
        th_assert_gemm(th_find_op(v, "o_proj", 1), 3, 8 / tp * 32, 256, 1);
        th_assert_gemm(th_find_op(v, "lm_head", -1), 3, 256, 4096 / tp, 1);
        th_plan_done(&sc, &p);
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
    th_plan_build("configs/default.yaml", sets, 2, &sc, &p);
    const plan_phase *v = th_phase(&p, "verify");
    for (int i = 0; i < v->n_ops; i++)
        cr_assert(strncmp(v->ops[i].name, "mlp.", 4), "no dense MLP op expected, found %s", v->ops[i].name);
    th_assert_allreduces(v, 123, 43008, 8);
    cr_assert_eq(v->summary.op_count[PLAN_OP_GROUPED_GEMM], 122);
    th_plan_done(&sc, &p);

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
        th_plan_build("configs/default.yaml", sets, n, &sc, &p);
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
        th_plan_done(&sc, &p);
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
        {"tests/data/bad/plan_unknown_key.json", ":19:77: ", "unknown key 'phases[0].ops[0].colour'"},
        {"tests/data/bad/plan_bad_value.json", ":19:15: ", "phases[0].ops[0].m: -2 is out of range"},
        {"tests/data/bad/plan_bad_kind.json", ":18:18: ", "phases[0].ops[0].kind: unknown value 'conv'; valid choices: gemm"},
        {"tests/data/bad/plan_bad_ranks.json", ":21:57: ", "ranks 0..N-1"},
        {"tests/data/bad/plan_bad_schema.json", ":2:13: ", "not a vpsim plan"},
        {"tests/data/bad/plan_ranks_mismatch.json", ":21:53: ", "spans 2 ranks but the plan has 4"},
        {"tests/data/bad/plan_bad_context.json", ":6:14: ", "out of range (must be in [0, 2147483647])"},
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
