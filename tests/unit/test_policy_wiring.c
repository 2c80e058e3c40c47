/* run.allreduce_policy / --allreduce-policy: validated like any field, honoured by `vpsim run`. */
#include "test_helpers.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

Test(policy_wiring, bad_policy_in_a_scenario_points_at_line_and_column)
{
    const char *yaml = "name: x\nmodel: ../models/tiny-moe.yaml\ndraft: ../models/tiny-eagle3.yaml\n"
                       "system: systems/h200-1x.yaml\nparallel: {tp: 2}\nrun:\n  allreduce_policy: \"oneshot<=2K\"\n";
    char *path = strdup(th_path("configs/.policy-test.yaml"));
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(yaml, f);
    fclose(f);
    th_result r = th_run("plan '%s'", path);
    remove(path);
    cr_assert_eq(r.status, 2, "%s", r.err);
    cr_assert(strstr(r.err, ".policy-test.yaml:7:21: run.allreduce_policy") != NULL, "%s", r.err);
    cr_assert(strstr(r.err, "last rule must have no bound") != NULL, "%s", r.err);
    th_free(&r);
    free(path);
}

Test(policy_wiring, bad_policy_from_set_names_the_argument)
{
    th_result r = th_run("plan configs/tiny.yaml --set 'run.allreduce_policy=teleport<=1K,mpi'");
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "--set 'run.allreduce_policy=teleport<=1K,mpi'") != NULL, "%s", r.err);
    cr_assert(strstr(r.err, "valid choices: nccl") != NULL, "%s", r.err);
    th_free(&r);
}

Test(policy_wiring, run_reports_and_checks_through_a_policy, .timeout = 120)
{
    const char *bin = getenv("VPSIM_BIN");
    th_result r = th_sh("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --allow-run-as-root "
                        "--oversubscribe --bind-to none -np 2 '%s' run configs/tiny.yaml --device cpu "
                        "--allreduce-policy 'mpi<=1K,mpi' --check --iters 2 --warmup 0",
                        bin ? bin : "build/vpsim");
    cr_assert_eq(r.status, 0, "%s\n%s", r.out, r.err);
    cr_assert(strstr(r.out, "mpi<=1K,mpi") != NULL, "the policy names the row:\n%s", r.out);
    th_free(&r);
}
