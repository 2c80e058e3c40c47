/* vpsim calibrate: a run's per-op times become measured op tables that model mode then uses. */
#include "test_helpers.h"

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
