/* run.allreduce_policy / --allreduce-policy: validated like any field, honoured by `vpsim run`. */
#include "../../sim/util/util.h"
#include "test_helpers.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

Test(policy_wiring, bad_policy_in_a_scenario_points_at_line_and_column)
{
    /* A scenario in a temporary file (never in the source tree): its paths are absolute. */
    char *yaml = util_xasprintf("name: x\nmodel: %s\ndraft: %s\nsystem: %s\nparallel: {tp: 2}\nrun:\n"
                                "  allreduce_policy: \"oneshot<=2K\"\n",
                                th_path("models/tiny-moe.yaml"), th_path("models/tiny-eagle3.yaml"),
                                th_path("configs/systems/h200-1x.yaml"));
    char *path = th_write_temp(yaml, strlen(yaml), ".yaml");
    th_result r = th_run("plan '%s'", path);
    remove(path);
    cr_assert_eq(r.status, 2, "%s", r.err);
    char *where = util_xasprintf("%s:7:21: run.allreduce_policy", path);
    cr_assert(strstr(r.err, where) != NULL, "%s", r.err);
    cr_assert(strstr(r.err, "last rule must have no bound") != NULL, "%s", r.err);
    th_free(&r);
    free(where);
    free(path);
    free(yaml);
}

Test(policy_wiring, bad_policy_from_set_names_the_argument)
{
    th_result r = th_run("plan configs/tiny.yaml --set 'run.allreduce_policy=teleport<=1K,mpi'");
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "--set 'run.allreduce_policy=teleport<=1K,mpi'") != NULL, "%s", r.err);
    cr_assert(strstr(r.err, "valid choices: nccl") != NULL, "%s", r.err);
    th_free(&r);
}

/* Both rules name mpi (the only reducing backend on the CPU device), so only the count of calls each
 * rule served shows the routing. tiny's allreduces: per cycle 3 of 256 elements in the draft step and 12
 * of 768 elsewhere; in fp32 on the CPU that is 1 KiB and 3 KiB, so "mpi<=2K" must serve exactly a fifth
 * of them (a size taken in bf16 bytes would send them all to the first rule). */
Test(policy_wiring, run_routes_each_allreduce_by_its_size, .timeout = 120)
{
    th_result r = th_mpirun(2, "run configs/tiny.yaml --device cpu --allreduce-policy 'mpi<=2K,mpi' --check --iters 2 "
                               "--warmup 0");
    cr_assert_eq(r.status, 0, "%s\n%s", r.out, r.err);
    cr_assert(strstr(r.out, "mpi<=2K,mpi") != NULL, "the policy names the row:\n%s", r.out);
    const char *calls = strstr(r.out, "allreduces per rule on this rank: ");
    cr_assert_not_null(calls, "%s", r.out);
    long long small = -1, large = -1;
    cr_assert_eq(sscanf(calls, "allreduces per rule on this rank: mpi<=2K: %lld, mpi: %lld", &small, &large), 2, "%s",
                 calls);
    cr_assert_gt(small, 0, "%s", calls);
    cr_assert_eq(large, 4 * small, "3 small and 12 large allreduces a cycle: %s", calls);
    th_free(&r);
}
