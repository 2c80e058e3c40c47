/* vpsim calibrate: a run's per-op times become measured op tables that model mode then uses. */
#include "test_helpers.h"
#include "th_plan.h"

#include "../../sim/calib/cal_results.h"
#include "../../sim/config/cfg_tree.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The H200 graph run of configs/default.yaml shipped in traces/samples, calibrated on the H200 system. */
#define CAL_H200 "calibrate configs/default.yaml --system configs/systems/h200-1x.yaml " \
                 "--results traces/samples/h200-none-graph.results.json "

Test(calibrate, writes_a_whole_system_file_the_model_loads, .timeout = 60)
{
    char dir[] = "/tmp/vpsim-cal-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    th_result r = th_run(CAL_H200 "--ops gemm,grouped_gemm,attention,embedding --out %s/sys.yaml", dir);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_str_eq(r.out, "", "the file goes to --out, nothing to stdout");
    th_free(&r);
    char path[128];
    snprintf(path, sizeof(path), "%s/sys.yaml", dir);
    char *text = th_slurp(path);
    cr_assert_not_null(text);
    /* One measured section (the old workflow appended a second: "duplicate key 'measured'"), the base's
     * values, and only the kinds asked for. */
    const char *m = strstr(text, "\nmeasured:\n");
    cr_assert(m && !strstr(m + 1, "\nmeasured:"), "%s", text);
    cr_assert_not_null(strstr(text, "\nname: h200-1x\n"), "%s", text);
    /* Each value keeps the provenance comment beside it (continuation lines too), and the base's header
     * follows calibrate's own. */
    cr_assert_not_null(strstr(text, "  mem_bw_gbs: 4800  # spec: HBM3e\n"), "%s", text);
    cr_assert_not_null(strstr(text, "# measured: 1.75 us per call for the shortest kernel in a CUDA graph (1-rank push\n"
                                    "                             # allreduce,"),
                       "%s", text);
    cr_assert_not_null(strstr(text, "\n# One NVIDIA H200 (SXM, 141 GB HBM3e)"), "%s", text);
    cr_assert_not_null(strstr(text, "    gemm:\n      bytes: ["), "%s", text);
    cr_assert_null(strstr(text, "    norm:"), "%s", text);
    free(text);
    r = th_run("model configs/default.yaml --system %s --backend none --explain", path);
    cr_assert_eq(r.status, 0, "%s\n%s", r.out, r.err);
    cr_assert(strstr(r.out, "measured.ops.gemm") != NULL, "the model must use the calibrated table:\n%s", r.out);
    th_free(&r);
    /* The output as the next base: its tables stay unless replaced. */
    r = th_run(CAL_H200 "--ops embedding --base %s", path);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_not_null(strstr(r.out, "    gemm:\n      bytes: ["), "%s", r.out);
    cr_assert_not_null(strstr(r.out, "    embedding:\n"), "%s", r.out);
    th_free(&r);
    r = th_sh("rm -rf '%s'", dir);
    th_free(&r);
}

/* In that run the norm ops at 7168 B (kv_a_layernorm, median 1.89 us over 61 layers) are slower than
 * those at 21504 B (q_a_layernorm, 1.31 us): 30 %, 0.58 us, beyond both tolerances. Some elementwise
 * ops at 8192 B measured 0 us once the timer overhead was subtracted. */
Test(calibrate, falling_and_zero_tables_are_refused_naming_op_and_size, .timeout = 60)
{
    char dir[] = "/tmp/vpsim-cal-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    th_result r = th_run(CAL_H200 "--out %s/sys.yaml", dir);
    cr_assert_eq(r.status, 2, "%s", r.err);
    cr_assert_str_eq(r.out, "");
    cr_assert_not_null(strstr(r.err, "vpsim calibrate: norm at 21504 B: 1.31 us, below 1.89 us at 7168 B by 30 %"),
                       "%s", r.err);
    cr_assert_not_null(strstr(r.err, "vpsim calibrate: elementwise at 8192 B: 0 us"), "%s", r.err);
    cr_assert_not_null(strstr(r.err, "nothing written"), "%s", r.err);
    th_free(&r);
    char path[128];
    snprintf(path, sizeof(path), "%s/sys.yaml", dir);
    cr_assert_eq(access(path, F_OK), -1, "nothing may be written on a refusal");
    r = th_run(CAL_H200 "--ops gemm,norm --out %s/sys.yaml", dir);
    cr_assert_eq(r.status, 2, "%s", r.err);
    cr_assert_not_null(strstr(r.err, "norm at 21504 B"), "%s", r.err);
    cr_assert_null(strstr(r.err, "elementwise"), "not asked for:\n%s", r.err);
    th_free(&r);
    th_expect_bad(th_run(CAL_H200 "--ops allreduce"), "--ops 'allreduce'", "valid choices: gemm, grouped_gemm");
    th_expect_bad(th_run(CAL_H200 "--format json"), "vpsim calibrate: --format", "YAML system file");
    r = th_sh("rm -rf '%s'", dir);
    th_free(&r);
}

Test(calibrate, results_of_another_plan_are_refused)
{
    th_result r = th_run("calibrate configs/tiny.yaml --results traces/samples/h200-none-graph.results.json");
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "same scenario") != NULL, "%s", r.err);
    th_free(&r);
}

Test(calibrate, model_results_are_not_measurements)
{
    th_result r = th_run("calibrate configs/default.yaml --results traces/samples/model-default-rtx6000.results.json");
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "not the results of a `vpsim run`") != NULL, "%s", r.err);
    th_free(&r);
}

/* ---------------------------------------------------------------- what a results file must be
 * Each refusal: exit 2, nothing written, the first mismatch named with the file:line:col of the value. */

/* `text` with the first `from` replaced by `to` (malloc'ed); the test fails when `from` is absent. */
static char *replace_once(const char *text, const char *from, const char *to)
{
    const char *at = strstr(text, from);
    cr_assert_not_null(at, "'%s' not in the results", from);
    const size_t head = (size_t)(at - text), nf = strlen(from), nt = strlen(to);
    char *out = malloc(strlen(text) - nf + nt + 1);
    memcpy(out, text, head);
    memcpy(out + head, to, nt);
    strcpy(out + head + nt, at + nf);
    return out;
}

/* The shipped H200 run with `from` replaced by `to`, as a temp file. */
static char *edited_h200(const char *from, const char *to)
{
    char *src = th_slurp(th_path("traces/samples/h200-none-graph.results.json"));
    cr_assert_not_null(src);
    char *text = replace_once(src, from, to);
    char *path = th_write_temp(text, strlen(text), ".json");
    free(src);
    free(text);
    return path;
}

/* calibrate of the default scenario on the H200 base from `results`: exit 2, `what` in the message at
 * `results:LINE:`, nothing written to --out. */
static void expect_refused(const char *results, const char *line_col, const char *what, const char *sets)
{
    char out[] = "/tmp/vpsim-cal-out-XXXXXX";
    cr_assert_neq(mkstemp(out), -1);
    unlink(out);
    th_result r = th_run("calibrate configs/default.yaml --system configs/systems/h200-1x.yaml %s --results %s --ops gemm "
                         "--out %s", sets, results, out);
    cr_assert_eq(r.status, 2, "%s", r.err);
    char where[256];
    snprintf(where, sizeof(where), "vpsim calibrate: %s:%s", results, line_col);
    cr_assert_not_null(strstr(r.err, where), "want '%s' in:\n%s", where, r.err);
    cr_assert_not_null(strstr(r.err, what), "want '%s' in:\n%s", what, r.err);
    cr_assert_not_null(strstr(r.err, "(nothing written)"), "%s", r.err);
    cr_assert_eq(access(out, F_OK), -1, "nothing may be written on a refusal");
    th_free(&r);
}

Test(calibrate, a_results_file_of_another_schema_is_refused, .timeout = 60)
{
    char *p = edited_h200("\"schema\": \"vpsim.results/1\"", "\"schema\": \"vpsim.results/2\"");
    expect_refused(p, "2:13:", "\"schema\": \"vpsim.results/2\": calibrate reads \"vpsim.results/1\"", "");
    unlink(p);
    free(p);
    p = edited_h200("\"schema\": \"vpsim.results/1\",", "");
    expect_refused(p, "1:1:", "no \"schema\": not a vpsim results file", "");
    unlink(p);
    free(p);
}

/* A --device cpu run's times are the host's: never a GPU's tables. */
Test(calibrate, a_cpu_run_never_becomes_gpu_tables, .timeout = 60)
{
    char *p = edited_h200("\"device\": \"cuda\"", "\"device\": \"cpu\"");
    expect_refused(p, "11125:15:", "\"device\": \"cpu\": a run on the cpu device times the host CPU, not a GPU", "");
    unlink(p);
    free(p);
    /* and a real CPU run of the tiny scenario, on the base that names its GPU */
    char *res = th_write_temp("", 0, ".json");
    th_result r = th_run("run configs/tiny.yaml --device cpu --backend none --iters 1 --warmup 0 --instrumented 1 --out %s",
                         res);
    cr_assert_eq(r.status, 0, "%s", r.err);
    th_free(&r);
    r = th_run("calibrate configs/tiny.yaml --results %s", res);
    cr_assert_eq(r.status, 2, "%s", r.err);
    cr_assert_not_null(strstr(r.err, "\"device\": \"cpu\": a run on the cpu device"), "%s", r.err);
    th_free(&r);
    unlink(res);
    free(res);
}

/* A TP=8 run is refused for TP=4 shapes, and a file claiming TP 2 for the TP=8 plan too. */
Test(calibrate, a_run_of_another_tp_is_refused, .timeout = 60)
{
    const char *h200 = th_path("traces/samples/h200-none-graph.results.json");
    expect_refused(h200, "8:9:", "\"tp\": 8 here but the scenario's plan has 4 (TP degree", "--set parallel.tp=4");
    char *p = edited_h200("\"tp\": 8", "\"tp\": 2");
    expect_refused(p, "8:9:", "\"tp\": 2 here but the scenario's plan has 8", "");
    unlink(p);
    free(p);
}

/* Edited op kinds, indices, phases: each named with its op. */
Test(calibrate, edited_ops_are_refused_naming_the_first, .timeout = 60)
{
    static const struct {
        const char *from, *to, *at, *what;
    } cases[] = {
        {"\"kind\": \"elementwise\"", "\"kind\": \"norm\"", "116:19:", "op 5: \"kind\": \"norm\" here but the scenario's "
                                                                       "plan has \"elementwise\" (draft_1 5, rope)"},
        {"\"index\": 5,", "\"index\": 6,", "114:20:", "op 5: \"index\": \"6\" here but the scenario's plan has \"5\""},
        {"\"phase\": \"draft_1\"", "\"phase\": \"verify\"", "73:20:", "op 0: \"phase\": \"verify\" here but the "
                                                                       "scenario's plan has \"draft_1\""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *p = edited_h200(cases[i].from, cases[i].to);
        expect_refused(p, cases[i].at, cases[i].what, "");
        unlink(p);
        free(p);
    }
}

/* A run that records each op's bytes is checked op by op against the plan's sizes: another shape of
 * the same names is refused (here a TP=2 tiny run's file claiming a GPU). */
Test(calibrate, per_op_sizes_are_checked_when_the_run_has_them, .timeout = 60)
{
    char *res = th_write_temp("", 0, ".json");
    th_result r = th_run("run configs/tiny.yaml --device cpu --backend none --iters 1 --warmup 0 --instrumented 1 --out %s",
                         res);
    cr_assert_eq(r.status, 0, "%s", r.err);
    th_free(&r);
    char *src = th_slurp(res);
    char *gpu = replace_once(src, "\"device\": \"cpu\"", "\"device\": \"cuda\", \"gpu\": \"NVIDIA H200 (sm_90, 132 SMs, "
                                                         "139.8 GiB)\"");
    /* Crafted to claim a GPU: its sizes are the plan's, so only the times are wrong, and the bytes check
     * passes; one op's bytes changed is refused, naming that op. */
    char *bad = replace_once(gpu, "\"bytes\": 1536,", "\"bytes\": 3072,");
    char *good_p = th_write_temp(gpu, strlen(gpu), ".json"), *bad_p = th_write_temp(bad, strlen(bad), ".json");
    /* The check alone (CPU times make no sound table): the sizes are the plan's. */
    cfg_scenario sc;
    plan p;
    th_plan_build("configs/tiny.yaml", NULL, 0, &sc, &p);
    cfg_error err;
    cfg_doc *doc = cfg_doc_load_file(good_p, &err);
    cr_assert_not_null(doc, "%s", err.msg);
    bool sized = false;
    char why[1024] = "";
    cr_assert_eq(cal_results_check(&p, cfg_doc_root(doc), &sized, why, sizeof(why)), 0, "%s", why);
    cr_assert(sized, "the run recorded its ops' bytes");
    cfg_doc_free(doc);
    th_plan_done(&sc, &p);
    r = th_run("calibrate configs/tiny.yaml --results %s --ops embedding", bad_p);
    cr_assert_eq(r.status, 2, "%s", r.err);
    cr_assert_not_null(strstr(r.err, "op 2: \"bytes\": \"3072\" here but the scenario's plan has \"1536\" (draft_1 2, "
                                     "input_layernorm)"), "%s", r.err);
    th_free(&r);
    for (char **f = (char *[]){res, good_p, bad_p, NULL}; *f; f++) {
        unlink(*f);
        free(*f);
    }
    free(src);
    free(gpu);
    free(bad);
}

/* The H200's run into the scenario's RTX PRO 6000 base: refused, the H200 files offered; with --base
 * written, the mismatch in the header. */
Test(calibrate, an_h200_run_into_the_rtx_base_needs_base, .timeout = 60)
{
    const char *h200 = "--results traces/samples/h200-none-graph.results.json --ops gemm";
    th_result r = th_run("calibrate configs/default.yaml %s", h200);
    cr_assert_eq(r.status, 2, "%s", r.err);
    cr_assert_not_null(strstr(r.err, "base configs/systems/rtx-pro-6000-8x-pcie.yaml: measured on NVIDIA H200 (sm_90, 132 "
                                     "SMs, 139.8 GiB), but the base names NVIDIA RTX PRO 6000"), "%s", r.err);
    cr_assert_not_null(strstr(r.err, "configs/systems/h200-1x.yaml"), "%s", r.err);
    cr_assert_str_eq(r.out, "");
    th_free(&r);
    r = th_run("calibrate configs/default.yaml %s --base configs/systems/rtx-pro-6000-8x-pcie.yaml", h200);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_not_null(strstr(r.out, "#   MISMATCH, written because --base configs/systems/rtx-pro-6000-8x-pcie.yaml was "
                                     "given:\n#     measured on NVIDIA H200"), "%s", r.out);
    th_free(&r);
}
