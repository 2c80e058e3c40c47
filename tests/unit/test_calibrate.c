/* vpsim calibrate: a run's per-op times become measured op tables that model mode then uses. */
#include "test_helpers.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

Test(calibrate, run_times_become_tables_the_model_interpolates, .timeout = 60)
{
    char dir[] = "/tmp/vpsim-cal-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    th_result r = th_run("run configs/tiny.yaml --device cpu --backend none --iters 2 --warmup 0 --set parallel.tp=1 "
                         "--out %s/r.json",
                         dir);
    cr_assert_eq(r.status, 0, "%s", r.err);
    th_free(&r);
    r = th_run("calibrate configs/tiny.yaml --set parallel.tp=1 --results %s/r.json --out %s/ops.yaml", dir, dir);
    cr_assert_eq(r.status, 0, "%s", r.err);
    th_free(&r);
    /* A system file: the shipped H200 one without its measured block, plus the calibration. */
    r = th_sh("grep -v -e '^measured:' -e '^  use:' configs/systems/h200-1x.yaml > %s/sys.yaml && cat %s/ops.yaml >> "
              "%s/sys.yaml && grep -c 'gemm:' %s/sys.yaml",
              dir, dir, dir, dir);
    cr_assert_eq(r.status, 0, "%s", r.err);
    th_free(&r);
    r = th_run("model configs/tiny.yaml --set parallel.tp=1 --system %s/sys.yaml --backend none --explain", dir);
    cr_assert_eq(r.status, 0, "%s\n%s", r.out, r.err);
    cr_assert(strstr(r.out, "measured.ops.gemm") != NULL, "the model must use the calibrated table:\n%s", r.out);
    th_free(&r);
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
