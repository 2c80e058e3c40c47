/* Hostile inputs, round 2, messages: each refusal says what is true in the words of the
 * command that was run, and a valid input is not refused. */
#include "../../sim/util/util.h"
#include "test_helpers.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

Test(hostile2_msg, run_np3_names_the_rank_count_not_a_set_never_given, .timeout = 90)
{
    th_need_mpirun();
    th_result r = th_mpirun(3, "run configs/tiny.yaml --device cpu --backend mpi --iters 1 --warmup 0");
    cr_expect_eq(r.status, 2, "%s", r.err);
    cr_expect(strstr(r.err, "the job has 3 ranks, and a job of N > 1 ranks replays the scenario at TP = N (mpirun "
                            "-np, not a --set)") != NULL,
              "%s", r.err);
    cr_expect(strstr(r.err, "run with -np 2") != NULL, "%s", r.err);
    cr_expect_null(strstr(r.err, "--set 'parallel.tp=3'"), "cites a --set the user never gave:\n%s", r.err);
    th_free(&r);
}

Test(hostile2_msg, calibrate_measure_memory_error_speaks_for_calibrate, .timeout = 60)
{
    th_result r = th_run("calibrate --measure configs/default.yaml --device cpu --quick --max-host-memory 2 "
                         "--base configs/systems/rtx-pro-6000-8x-pcie.yaml");
    cr_expect_eq(r.status, 2, "%s", r.err);
    cr_expect(strstr(r.err, "vpsim calibrate: the CPU device would need") != NULL, "%s", r.err);
    cr_expect(strstr(r.err, "over the 2.00 GiB limit (--max-host-memory GIB)") != NULL, "the option it takes:\n%s",
              r.err);
    cr_expect_null(strstr(r.err, "vpsim run"), "%s", r.err);
    th_free(&r);
    /* the tiny scenario is not offered to a command that already uses it */
    r = th_run("calibrate --measure configs/tiny.yaml --device cpu --quick --max-host-memory 1 --base configs/systems/h200-1x.yaml "
               "--set model.moe.experts=4096 "
               "--set model.moe.intermediate=8192");
    cr_expect_eq(r.status, 2, "%s", r.err);
    cr_expect(strstr(r.err, "over the 1.00 GiB limit") != NULL, "%s", r.err);
    cr_expect_null(strstr(r.err, "use configs/tiny.yaml"), "%s", r.err);
    th_free(&r);
}

Test(hostile2_msg, a_proc_file_is_not_called_empty)
{
    th_result r = th_run("plan /proc/self/status");
    cr_expect_eq(r.status, 2, "%s", r.err);
    cr_expect_null(strstr(r.err, "empty"), "%s", r.err);
    cr_expect(strstr(r.err, "/proc/self/status:1:1: unknown key 'Name'") != NULL, "judged by its contents:\n%s", r.err);
    th_free(&r);
}

Test(hostile2_msg, equal_policy_bounds_are_not_called_larger)
{
    th_expect_bad(th_run("bench-allreduce --device cpu --policy 'mpi<=1K,mpi<=1K,mpi' --sizes 16 -n 1 -w 0"),
                  "'mpi<=1K' repeats the bound of the rule before it", "could never match");
    th_expect_bad(th_run("bench-allreduce --device cpu --policy 'mpi<=2K,mpi<=1K,mpi' --sizes 16 -n 1 -w 0"),
                  "'mpi<=1K' comes after a larger bound", "could never match");
}

Test(hostile2_msg, a_json_plan_with_a_non_bmp_escape_pair_loads)
{
    char *plan = th_write_temp("", 0, ".json");
    const char *py = "import json, sys\np = json.load(sys.stdin)\np['scenario'] = 'smile \\U0001F600 x'\n"
                     "print(json.dumps(p))\n";
    char *script = th_write_temp(py, strlen(py), ".py");
    th_result r = th_sh("%s plan configs/tiny.yaml --format json | python3 '%s' > '%s' && grep -c 'ud83d' '%s'",
                        getenv("VPSIM_BIN") ? getenv("VPSIM_BIN") : "build/vpsim", script, plan, plan);
    cr_assert_eq(r.status, 0, "the plan holds the escape pair: %s", r.err);
    th_free(&r);
    r = th_run("plan --plan '%s'", plan);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "plan smile \xF0\x9F\x98\x80 x") != NULL, "the character read back: %.200s", r.out);
    th_free(&r);
    unlink(script);
    unlink(plan);
    free(script);
    free(plan);
}
