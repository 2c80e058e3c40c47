/* cfg: scenario loading through the C API — values, defaults, --set overrides (including the model.,
 * draft. and system. prefixes), cross-field checks, dtype sizes and the
 * acceptance model. The YAML tree and schema binder: test_cfg_tree.c; CLI errors: test_cli_bad.c. */
#include "../../sim/config/cfg.h"
#include "../../sim/util/util.h"
#include "test_helpers.h"
#include "th_plan.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Load a repo scenario with --set strings; asserts success. */
static void load_ok(const char *rel, const char *const *sets, int n_sets, cfg_scenario *sc)
{
    cfg_error err = {{0}};
    int rc = cfg_scenario_load(th_path(rel), sets, n_sets, NULL, sc, &err);
    cr_assert_eq(rc, 0, "loading %s failed: %s", rel, err.msg);
}

/* Load a repo scenario with --set strings; asserts failure and returns the message. */
static void load_fails(const char *rel, const char *const *sets, int n_sets, cfg_error *err)
{
    cfg_scenario sc;
    memset(err, 0, sizeof(*err));
    int rc = cfg_scenario_load(th_path(rel), sets, n_sets, NULL, &sc, err);
    cr_assert_eq(rc, -1, "loading %s should fail", rel);
    cr_assert_neq(err->msg[0], '\0', "an error needs a message");
}

/* A scenario in a temporary file that names the tiny models by absolute path; `extra` is appended. */
static char *temp_scenario(const char *extra)
{
    char *text = util_xasprintf("name: temp\nmodel: %s\ndraft: %s\nsystem: %s\n%s", th_path("models/tiny-moe.yaml"),
                                th_path("models/tiny-eagle3.yaml"), th_path("configs/systems/h200-1x.yaml"), extra);
    char *path = th_write_temp(text, strlen(text), ".yaml");
    free(text);
    return path;
}

/* ---------------- dtype sizes ---------------- */

Test(cfg_dtype, weight_bytes_count_quantisation_scales)
{
    cr_assert_float_eq(cfg_dtype_weight_bytes(CFG_DT_BF16, 0), 2.0, 1e-12);
    cr_assert_float_eq(cfg_dtype_weight_bytes(CFG_DT_FP16, 0), 2.0, 1e-12);
    cr_assert_float_eq(cfg_dtype_weight_bytes(CFG_DT_FP32, 0), 4.0, 1e-12);
    cr_assert_float_eq(cfg_dtype_weight_bytes(CFG_DT_FP8, 0), 1.0, 1e-12);
    cr_assert_float_eq(cfg_dtype_weight_bytes(CFG_DT_INT4, 0), 0.5, 1e-12);
    /* INT4 W4A16, group 32, one bf16 scale per group: 0.5 + 2/32. */
    cr_assert_float_eq(cfg_dtype_weight_bytes(CFG_DT_INT4, 32), 0.5625, 1e-12);
    cr_assert_float_eq(cfg_dtype_weight_bytes(CFG_DT_INT4, 128), 0.5 + 2.0 / 128, 1e-12);
    /* Block FP8 with one fp32 scale per 128x128 block. */
    cr_assert_float_eq(cfg_dtype_weight_bytes(CFG_DT_FP8, 16384), 1.0 + 4.0 / 16384, 1e-12);
    cr_assert_float_eq(cfg_dtype_weight_bytes(CFG_DT_FP8, 128), 1.03125, 1e-12);
}

Test(cfg_dtype, activation_bytes)
{
    cr_assert_float_eq(cfg_dtype_bytes(CFG_DT_BF16), 2.0, 1e-12);
    cr_assert_float_eq(cfg_dtype_bytes(CFG_DT_FP16), 2.0, 1e-12);
    cr_assert_float_eq(cfg_dtype_bytes(CFG_DT_FP8), 1.0, 1e-12);
    cr_assert_float_eq(cfg_dtype_bytes(CFG_DT_INT4), 0.5, 1e-12);
    cr_assert_float_eq(cfg_dtype_bytes(CFG_DT_FP32), 4.0, 1e-12);
    cr_assert_str_eq(cfg_dtype_names[CFG_DT_INT4], "int4");
    cr_assert_null(cfg_dtype_names[CFG_DT_COUNT]);
}

/* ---------------- acceptance model ---------------- */

Test(cfg_expected_tokens, chains_the_rates)
{
    const double r[] = {0.75, 0.6};
    cfg_scenario sc = th_chain_scenario(2, r, 2);
    /* 1 + a1 + a1*a2 */
    cr_assert_float_eq(cfg_expected_tokens(&sc), 1.0 + 0.75 + 0.75 * 0.6, 1e-12);

    const double r3[] = {0.9, 0.8, 0.5};
    sc = th_chain_scenario(3, r3, 3);
    cr_assert_float_eq(cfg_expected_tokens(&sc), 1.0 + 0.9 + 0.9 * 0.8 + 0.9 * 0.8 * 0.5, 1e-12);
}

Test(cfg_expected_tokens, shorter_vector_reuses_the_last_rate)
{
    const double r[] = {0.8, 0.5};
    cfg_scenario sc = th_chain_scenario(4, r, 2);
    /* positions 3 and 4 reuse 0.5: 1 + 0.8 + 0.4 + 0.2 + 0.1 */
    cr_assert_float_eq(cfg_expected_tokens(&sc), 2.5, 1e-12);

    const double one[] = {0.5};
    sc = th_chain_scenario(3, one, 1);
    cr_assert_float_eq(cfg_expected_tokens(&sc), 1.0 + 0.5 + 0.25 + 0.125, 1e-12);
}

Test(cfg_expected_tokens, longer_vector_uses_only_steps_positions)
{
    const double r[] = {0.5, 0.5, 0.5, 0.5};
    cfg_scenario sc = th_chain_scenario(1, r, 4);
    cr_assert_float_eq(cfg_expected_tokens(&sc), 1.5, 1e-12);
}

Test(cfg_expected_tokens, bounds)
{
    const double all[] = {1.0};
    cfg_scenario sc = th_chain_scenario(5, all, 1);
    cr_assert_float_eq(cfg_expected_tokens(&sc), 6.0, 1e-12); /* every draft accepted: steps + 1 */
    const double none[] = {0.0, 0.9};
    sc = th_chain_scenario(2, none, 2);
    cr_assert_float_eq(cfg_expected_tokens(&sc), 1.0, 1e-12); /* the chain breaks at position 1 */
    const double r[] = {0.7};
    sc = th_chain_scenario(2, r, 1);
    sc.speculative.algorithm = CFG_SPEC_NONE;
    cr_assert_float_eq(cfg_expected_tokens(&sc), 1.0, 1e-12); /* plain decoding: one token per cycle */
}

Test(cfg_expected_tokens, default_scenario)
{
    cfg_scenario sc;
    load_ok("configs/default.yaml", NULL, 0, &sc);
    cr_assert_eq(sc.speculative.n_acceptance, 2);
    double a1 = sc.speculative.acceptance[0], a2 = sc.speculative.acceptance[1];
    cr_assert_float_eq(cfg_expected_tokens(&sc), 1.0 + a1 + a1 * a2, 1e-12);
    cfg_scenario_free(&sc);
}

/* ---------------- loading the shipped scenarios ---------------- */

Test(cfg_load, default_scenario_values)
{
    cfg_scenario sc;
    load_ok("configs/default.yaml", NULL, 0, &sc);
    cr_assert_str_eq(sc.name, "default");
    cr_assert_eq(sc.parallel.tp, 8);
    cr_assert_eq(sc.speculative.algorithm, CFG_SPEC_EAGLE3);
    cr_assert_eq(sc.speculative.steps, 2);
    cr_assert_eq(sc.speculative.topk, 1);
    cr_assert_eq(sc.speculative.num_draft_tokens, 3);
    cr_assert_eq(sc.workload.batch, 1);
    cr_assert_gt(sc.workload.context, 0);

    const cfg_model *t = &sc.target;
    cr_assert_eq(t->arch, CFG_ARCH_DEEPSEEK_V3);
    cr_assert_eq(t->layers, 61);
    cr_assert_eq(t->first_k_dense, 1);
    cr_assert_eq(t->hidden, 7168);
    cr_assert_eq(t->vocab, 163840);
    cr_assert_eq(t->attention.kind, CFG_ATTN_MLA);
    cr_assert_eq(t->attention.heads, 64);
    cr_assert_eq(t->attention.q_lora_rank, 1536);
    cr_assert_eq(t->attention.kv_lora_rank, 512);
    cr_assert_eq(t->attention.qk_nope_head_dim, 128);
    cr_assert_eq(t->attention.qk_rope_head_dim, 64);
    cr_assert_eq(t->attention.v_head_dim, 128);
    cr_assert_eq(t->mlp.intermediate, 18432);
    cr_assert_eq(t->moe.experts, 384);
    cr_assert_eq(t->moe.top_k, 8);
    cr_assert_eq(t->moe.shared_experts, 1);
    cr_assert_eq(t->moe.intermediate, 2048);
    cr_assert_eq(t->weights.routed_experts.dtype, CFG_DT_INT4);
    cr_assert_eq(t->weights.routed_experts.group, 32);
    cr_assert_eq(t->weights.attention.dtype, CFG_DT_BF16);
    cr_assert_eq(t->weights.shared_expert.dtype, CFG_DT_BF16);
    cr_assert_eq(t->weights.lm_head.dtype, CFG_DT_BF16);
    cr_assert_eq(t->activation_dtype, CFG_DT_BF16);

    const cfg_model *d = &sc.draft;
    cr_assert_eq(d->arch, CFG_ARCH_EAGLE3);
    cr_assert_eq(d->layers, 1);
    cr_assert_eq(d->hidden, 7168);
    cr_assert_eq(d->mlp.intermediate, 18432);
    cr_assert_eq(d->attention.heads, 64);
    cr_assert_eq(d->attention.head_dim, 128);
    cr_assert_eq(d->eagle3.draft_vocab, 32000);
    cr_assert_eq(d->eagle3.n_aux_layers, 3);
    cr_assert_eq(d->eagle3.aux_layers[0], 2);
    cr_assert_eq(d->eagle3.aux_layers[1], 30);
    cr_assert_eq(d->eagle3.aux_layers[2], 58);
    cr_assert_not_null(sc.system.name);
    cfg_scenario_free(&sc);
}

Test(cfg_load, tiny_scenario_loads)
{
    cfg_scenario sc;
    load_ok("configs/tiny.yaml", NULL, 0, &sc);
    cr_assert_str_eq(sc.name, "tiny");
    cr_assert_eq(sc.run.device, CFG_DEVICE_CPU);
    cr_assert_eq(sc.run.backend, CFG_BACKEND_MPI);
    cr_assert_eq(sc.target.layers, 4);
    cfg_scenario_free(&sc);
}

Test(cfg_load, every_model_file_loads_as_target_or_draft)
{
    const char *targets[] = {"models/kimi-k2.5.yaml", "models/deepseek-v3.yaml"};
    for (size_t i = 0; i < 2; i++) {
        /* --set paths are relative to the working directory: use absolute ones. */
        char *set = util_xasprintf("model=%s", th_path(targets[i]));
        const char *sets[] = {set};
        cfg_scenario sc;
        load_ok("configs/default.yaml", sets, 1, &sc);
        cr_assert_eq(sc.target.arch, CFG_ARCH_DEEPSEEK_V3);
        cr_assert_gt(sc.target.layers, 1);
        cfg_scenario_free(&sc);
        free(set);
    }
}

Test(cfg_load, defaults_fill_absent_sections)
{
    char *path = temp_scenario("");
    cfg_scenario sc;
    cfg_error err = {{0}};
    cr_assert_eq(cfg_scenario_load(path, NULL, 0, NULL, &sc, &err), 0, "%s", err.msg);
    cr_assert_eq(sc.parallel.tp, 8);
    cr_assert_eq(sc.speculative.steps, 2);
    cr_assert_eq(sc.speculative.topk, 1);
    cr_assert_eq(sc.speculative.num_draft_tokens, 3);
    cr_assert_eq(sc.speculative.n_acceptance, 2);
    cr_assert_eq(sc.workload.batch, 1);
    cr_assert_eq(sc.workload.context, 8192);
    cr_assert_eq(sc.workload.active_experts, 0);
    cr_assert_eq(sc.run.backend, CFG_BACKEND_NCCL);
    cr_assert_eq(sc.run.graph, true);
    cr_assert_str_eq(sc.description, "");
    cfg_scenario_free(&sc);
    unlink(path);
    free(path);
}

Test(cfg_load, relative_paths_resolve_against_the_scenario_file)
{
    cfg_scenario sc;
    load_ok("configs/tiny.yaml", NULL, 0, &sc);
    /* configs/tiny.yaml says ../models/tiny-moe.yaml: the result must point into configs/.. */
    cr_assert_not_null(strstr(sc.model_path, "configs/../models/tiny-moe.yaml"), "%s", sc.model_path);
    cr_assert_eq(access(sc.model_path, R_OK), 0);
    cfg_scenario_free(&sc);
}

/* ---------------- --set ---------------- */

Test(cfg_set, overrides_scenario_fields)
{
    const char *sets[] = {"speculative.steps=3", "speculative.num_draft_tokens=4", "workload.batch=4",
                          "speculative.acceptance=[0.9, 0.8, 0.7]", "run.graph=false", "run.backend=oneshot"};
    cfg_scenario sc;
    load_ok("configs/default.yaml", sets, 6, &sc);
    cr_assert_eq(sc.speculative.steps, 3);
    cr_assert_eq(sc.speculative.num_draft_tokens, 4);
    cr_assert_eq(sc.workload.batch, 4);
    cr_assert_eq(sc.speculative.n_acceptance, 3);
    cr_assert_float_eq(sc.speculative.acceptance[2], 0.7, 1e-12);
    cr_assert_eq(sc.run.graph, false);
    cr_assert_eq(sc.run.backend, CFG_BACKEND_ONESHOT);
    cfg_scenario_free(&sc);
}

Test(cfg_set, reaches_into_model_draft_and_system_files)
{
    const char *sets[] = {"model.moe.top_k=4", "model.weights.routed_experts.dtype=fp8",
                          "draft.mlp.intermediate=12288", "draft.eagle3.draft_vocab=0", "system.name=what-if-box"};
    cfg_scenario sc;
    load_ok("configs/default.yaml", sets, 5, &sc);
    cr_assert_eq(sc.target.moe.top_k, 4);
    cr_assert_eq(sc.target.weights.routed_experts.dtype, CFG_DT_FP8);
    cr_assert_eq(sc.target.weights.routed_experts.group, 32, "the other weight fields stay");
    cr_assert_eq(sc.target.moe.experts, 384, "the rest of the model stays");
    cr_assert_eq(sc.draft.mlp.intermediate, 12288);
    cr_assert_eq(sc.draft.eagle3.draft_vocab, 0);
    cr_assert_str_eq(sc.system.name, "what-if-box");
    cfg_scenario_free(&sc);
}

Test(cfg_set, creates_absent_sections_and_last_one_wins)
{
    char *path = temp_scenario("");
    const char *sets[] = {"parallel.tp=2", "workload.context=100", "workload.context=200"};
    cfg_scenario sc;
    cfg_error err = {{0}};
    cr_assert_eq(cfg_scenario_load(path, sets, 3, NULL, &sc, &err), 0, "%s", err.msg);
    cr_assert_eq(sc.parallel.tp, 2);
    cr_assert_eq(sc.workload.context, 200);
    cfg_scenario_free(&sc);
    unlink(path);
    free(path);
}

Test(cfg_set, errors_name_the_set_argument)
{
    cfg_error err;
    const char *bad_type[] = {"parallel.tp=eight"};
    load_fails("configs/default.yaml", bad_type, 1, &err);
    cr_assert(strstr(err.msg, "--set 'parallel.tp=eight': ") == err.msg, "%s", err.msg);
    cr_assert_not_null(strstr(err.msg, "expected an integer"), "%s", err.msg);

    const char *no_eq[] = {"parallel.tp"};
    load_fails("configs/default.yaml", no_eq, 1, &err);
    cr_assert_not_null(strstr(err.msg, "--set 'parallel.tp'"), "%s", err.msg);
    cr_assert_not_null(strstr(err.msg, "KEY=VALUE"), "%s", err.msg);

    const char *unknown[] = {"parallel.tpp=2"};
    load_fails("configs/default.yaml", unknown, 1, &err);
    cr_assert_not_null(strstr(err.msg, "--set 'parallel.tpp=2'"), "%s", err.msg);
    cr_assert_not_null(strstr(err.msg, "unknown key 'parallel.tpp'"), "%s", err.msg);
    cr_assert_not_null(strstr(err.msg, "valid keys here: tp"), "%s", err.msg);

    const char *model_bad[] = {"model.hidden=-1"};
    load_fails("configs/default.yaml", model_bad, 1, &err);
    cr_assert(strstr(err.msg, "--set 'model.hidden=-1': ") == err.msg, "%s", err.msg);
    cr_assert_not_null(strstr(err.msg, "out of range"), "%s", err.msg);

    const char *not_section[] = {"name.x=1"};
    load_fails("configs/default.yaml", not_section, 1, &err);
    cr_assert_not_null(strstr(err.msg, "--set 'name.x=1'"), "%s", err.msg);
    cr_assert_not_null(strstr(err.msg, "not a section"), "%s", err.msg);
}

Test(cfg_set, check_set_key_without_a_scenario)
{
    cfg_error err;
    cr_assert_eq(cfg_check_set_key("parallel.tp=4", &err), 0);
    cr_assert_eq(cfg_check_set_key("speculative.acceptance=[0.5]", &err), 0);
    cr_assert_eq(cfg_check_set_key("model.moe.experts=8", &err), 0);
    cr_assert_eq(cfg_check_set_key("draft.eagle3.draft_vocab=0", &err), 0);
    cr_assert_eq(cfg_check_set_key("system.name=x", &err), 0);
    cr_assert_eq(cfg_check_set_key("description=", &err), 0, "an empty value is an empty string");

    const char *bad[] = {"parallel.tp", "=4", "parallel=4", "nope=1", "model.nope=1", "Parallel.tp=1",
                         "parallel..tp=1", ".parallel.tp=1", "parallel.tp.=1", "model.moe=1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        memset(&err, 0, sizeof(err));
        cr_assert_eq(cfg_check_set_key(bad[i], &err), -1, "'%s' should be rejected", bad[i]);
        char *want = util_xasprintf("--set '%s'", bad[i]);
        cr_assert_not_null(strstr(err.msg, want), "'%s': %s", bad[i], err.msg);
        free(want);
    }
}

/* ---------------- cross-field checks ---------------- */

Test(cfg_checks, steps_and_draft_tokens_must_agree_with_topk_1)
{
    cfg_error err;
    /* default.yaml leaves num_draft_tokens out: it follows steps (steps + 1, as SGLang derives it). */
    const char *only_steps[] = {"speculative.steps=3"};
    cfg_scenario sc;
    load_ok("configs/default.yaml", only_steps, 1, &sc);
    cr_assert_eq(sc.speculative.num_draft_tokens, 4);
    cfg_scenario_free(&sc);

    const char *explicit_bad[] = {"speculative.steps=3", "speculative.num_draft_tokens=3"};
    load_fails("configs/default.yaml", explicit_bad, 2, &err);
    cr_assert(strstr(err.msg, "--set 'speculative.num_draft_tokens=3': ") == err.msg, "%s", err.msg);
    cr_assert_not_null(strstr(err.msg, "steps + 1 = 4"), "%s", err.msg);
    cr_assert_not_null(strstr(err.msg, "steps=3"), "%s", err.msg);

    const char *only_ndt[] = {"speculative.num_draft_tokens=5"};
    load_fails("configs/default.yaml", only_ndt, 1, &err);
    cr_assert(strstr(err.msg, "--set 'speculative.num_draft_tokens=5': ") == err.msg, "%s", err.msg);
    cr_assert_not_null(strstr(err.msg, "steps + 1 = 3"), "%s", err.msg);

    const char *both[] = {"speculative.steps=3", "speculative.num_draft_tokens=4"};
    load_ok("configs/default.yaml", both, 2, &sc);
    cfg_scenario_free(&sc);
}

Test(cfg_checks, tree_with_topk_above_1_bounds_the_draft_tokens)
{
    cfg_error err;
    /* steps=2, topk=2: at most 1 + 2 + 1*4 = 7 candidates. */
    const char *ok[] = {"speculative.topk=2", "speculative.num_draft_tokens=7"};
    cfg_scenario sc;
    load_ok("configs/default.yaml", ok, 2, &sc);
    cfg_scenario_free(&sc);
    const char *too_many[] = {"speculative.topk=2", "speculative.num_draft_tokens=8"};
    load_fails("configs/default.yaml", too_many, 2, &err);
    cr_assert_not_null(strstr(err.msg, "[2, 7]"), "%s", err.msg);
}

Test(cfg_checks, algorithm_none_skips_the_speculative_checks)
{
    const char *sets[] = {"speculative.algorithm=none", "speculative.steps=5"};
    cfg_scenario sc;
    load_ok("configs/default.yaml", sets, 2, &sc);
    cr_assert_eq(sc.speculative.algorithm, CFG_SPEC_NONE);
    cr_assert_float_eq(cfg_expected_tokens(&sc), 1.0, 1e-12);
    cfg_scenario_free(&sc);
}

Test(cfg_checks, tp_must_be_a_power_of_two_that_divides_the_shapes)
{
    cfg_error err;
    const char *tp3[] = {"parallel.tp=3"};
    load_fails("configs/default.yaml", tp3, 1, &err);
    cr_assert_not_null(strstr(err.msg, "--set 'parallel.tp=3'"), "%s", err.msg);
    cr_assert_not_null(strstr(err.msg, "1, 2, 4, 8 or 16"), "%s", err.msg);

    const char *tp32[] = {"parallel.tp=32"};
    load_fails("configs/default.yaml", tp32, 1, &err);
    cr_assert_not_null(strstr(err.msg, "out of range"), "%s", err.msg);

    /* tiny-moe has 8 heads: TP=16 cannot split them. */
    const char *tp16[] = {"parallel.tp=16"};
    load_fails("configs/tiny.yaml", tp16, 1, &err);
    cr_assert_not_null(strstr(err.msg, "does not divide model attention.heads=8"), "%s", err.msg);
    cr_assert_not_null(strstr(err.msg, "tiny-moe.yaml:"), "the message points at the model file: %s", err.msg);

    /* 12 heads with TP=8. */
    const char *heads12[] = {"model.attention.heads=12"};
    load_fails("configs/default.yaml", heads12, 1, &err);
    cr_assert_not_null(strstr(err.msg, "attention.heads=12"), "%s", err.msg);
    cr_assert_not_null(strstr(err.msg, "(--set 'model.attention.heads=12')"), "%s", err.msg);

    /* A draft vocab that TP does not divide. */
    const char *dv[] = {"draft.eagle3.draft_vocab=32001"};
    load_fails("configs/default.yaml", dv, 1, &err);
    cr_assert_not_null(strstr(err.msg, "draft eagle3.draft_vocab=32001"), "%s", err.msg);

    /* An expert intermediate size that TP does not divide. */
    const char *mi[] = {"model.moe.intermediate=2052"};
    load_fails("configs/default.yaml", mi, 1, &err);
    cr_assert_not_null(strstr(err.msg, "moe.intermediate=2052"), "%s", err.msg);
}

Test(cfg_checks, model_consistency)
{
    cfg_error err;
    const char *topk[] = {"model.moe.top_k=500"};
    load_fails("configs/default.yaml", topk, 1, &err);
    cr_assert_not_null(strstr(err.msg, "top_k=500 exceeds moe.experts=384"), "%s", err.msg);

    const char *aux[] = {"draft.eagle3.aux_layers=[2, 30, 61]"};
    load_fails("configs/default.yaml", aux, 1, &err);
    cr_assert_not_null(strstr(err.msg, "aux_layers[2]=61"), "%s", err.msg);

    const char *hidden[] = {"draft.hidden=4096"};
    load_fails("configs/default.yaml", hidden, 1, &err);
    cr_assert_not_null(strstr(err.msg, "draft hidden=4096"), "%s", err.msg);

    const char *arch[] = {"draft.arch=deepseek_v3"};
    load_fails("configs/default.yaml", arch, 1, &err);
    cr_assert_neq(err.msg[0], '\0');
}

Test(cfg_checks, file_errors_carry_line_and_column)
{
    char *path = temp_scenario("parallel:\n  tp: 2\nworkload:\n  batch: 0\n");
    cfg_scenario sc;
    cfg_error err = {{0}};
    cr_assert_eq(cfg_scenario_load(path, NULL, 0, NULL, &sc, &err), -1);
    char *want = util_xasprintf("%s:8:10: workload.batch: 0 is out of range", path);
    cr_assert(strstr(err.msg, want) == err.msg, "got: %s\nwant: %s", err.msg, want);
    free(want);
    unlink(path);
    free(path);
}

Test(cfg_checks, missing_scenario_file)
{
    cfg_scenario sc;
    cfg_error err = {{0}};
    cr_assert_eq(cfg_scenario_load("/nonexistent/vpsim/scenario.yaml", NULL, 0, NULL, &sc, &err), -1);
    cr_assert_not_null(strstr(err.msg, "/nonexistent/vpsim/scenario.yaml: cannot open"), "%s", err.msg);
}

Test(cfg_checks, system_override_replaces_the_system_file)
{
    cfg_scenario sc;
    cfg_error err = {{0}};
    cr_assert_eq(cfg_scenario_load(th_path("configs/default.yaml"), NULL, 0, th_path("configs/systems/h200-1x.yaml"),
                                   &sc, &err),
                 0, "%s", err.msg);
    cr_assert_not_null(strstr(sc.system_path, "h200-1x.yaml"), "%s", sc.system_path);
    cfg_scenario_free(&sc);

    cr_assert_eq(cfg_scenario_load(th_path("configs/default.yaml"), NULL, 0, "/nonexistent/system.yaml", &sc, &err),
                 -1);
    cr_assert_not_null(strstr(err.msg, "--system '/nonexistent/system.yaml'"), "%s", err.msg);
}

/* Numbers in configs are decimal, finite and bare: strtod alone would take a hex float ("0x1p-1" was
 * accepted as 0.5 while integers refused hex), and both would skip leading blanks. */
Test(cfg_numbers, hex_special_and_padded_numbers_are_refused)
{
    double d;
    long long v;
    const char *bad_d[] = {"0x1p-1", "0X10", "inf", "-inf", "nan", " 0.5", "\t1", "1p3", "0.5 ", ""};
    for (size_t i = 0; i < sizeof(bad_d) / sizeof(*bad_d); i++)
        cr_assert(!cfg_parse_double(bad_d[i], &d), "'%s' must be refused", bad_d[i]);
    const char *bad_i[] = {"0x10", " 5", "5 ", "1e3", ""};
    for (size_t i = 0; i < sizeof(bad_i) / sizeof(*bad_i); i++)
        cr_assert(!cfg_parse_int(bad_i[i], &v), "'%s' must be refused", bad_i[i]);
    cr_assert(cfg_parse_double("5e-1", &d) && d == 0.5);
    cr_assert(cfg_parse_double("-0.25", &d) && d == -0.25);
    cr_assert(cfg_parse_int("-7", &v) && v == -7);
    th_result r = th_run("plan configs/tiny.yaml --set 'speculative.acceptance=[0x1p-1]'");
    cr_assert_eq(r.status, 2, "%s", r.err);
    cr_assert_not_null(strstr(r.err, "speculative.acceptance[0]: expected a number, got '0x1p-1'"), "%s", r.err);
    th_free(&r);
}
