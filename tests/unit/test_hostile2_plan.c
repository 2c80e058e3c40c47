/* Hostile inputs, round 2, plans that lie and numbers without bounds: a saved plan must be a
 * cycle (its phases in order, each op's shape fields set) and the scenario's own cycle; every measured
 * number is bounded where it is read. Each case exits 2 with a message naming the field. */
#include "../../sim/util/util.h"
#include "test_helpers.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* configs/tiny.yaml's plan as JSON, edited by `py` (a Python statement over `p`, the parsed plan), in a
 * temporary file (free and unlink it). */
static char *hp_plan(const char *py, const char *sets)
{
    char *path = th_write_temp("", 0, ".json");
    /* the edit goes through a script file: its quotes stay out of the shell's way */
    char *script = util_xasprintf("import json, sys\np = json.load(sys.stdin)\n%s\njson.dump(p, open('%s', 'w'), "
                                  "indent=1)\n",
                                  py, path);
    char *py_path = th_write_temp(script, strlen(script), ".py");
    th_result r = th_sh("%s plan configs/tiny.yaml %s --format json | python3 '%s'",
                        getenv("VPSIM_BIN") ? getenv("VPSIM_BIN") : "build/vpsim", sets, py_path);
    cr_assert_eq(r.status, 0, "%s", r.err);
    th_free(&r);
    unlink(py_path);
    free(py_path);
    free(script);
    return path;
}

static void hp_expect_plan_bad(const char *py, const char *sets, const char *what)
{
    char *path = hp_plan(py, "");
    th_result r = th_run("model configs/tiny.yaml --plan '%s' --backend nccl %s", path, sets);
    cr_expect_eq(r.status, 2, "%s: exit 2, got %d: %s", py, r.status, r.err);
    cr_expect(strstr(r.err, what) != NULL, "%s: message '%s', got: %s", py, what, r.err);
    cr_expect(strstr(r.out, "tok/s") == NULL, "%s: no figures on stdout", py);
    th_free(&r);
    unlink(path);
    free(path);
}

Test(hostile2_plan, unedited_plan_still_loads)
{
    char *path = hp_plan("pass", "");
    th_result r = th_run("model configs/tiny.yaml --plan '%s' --backend nccl", path);
    cr_expect_eq(r.status, 0, "%s", r.err);
    th_free(&r);
    unlink(path);
    free(path);
}

Test(hostile2_plan, verify_only_plan_refused)
{
    hp_expect_plan_bad("p['phases'] = [ph for ph in p['phases'] if ph['kind'] == 'verify']", "",
                       "would model free speculation");
}

Test(hostile2_plan, repeated_phases_refused)
{
    hp_expect_plan_bad("p['phases'] = p['phases'] * 20", "", "nothing follows draft_extend");
    hp_expect_plan_bad("p['phases'].insert(2, dict(p['phases'][1]))", "", "a cycle has one verify phase");
}

Test(hostile2_plan, missing_or_zero_shape_fields_refused)
{
    hp_expect_plan_bad("g = [o for ph in p['phases'] for o in ph['ops'] if o['kind'] == 'gemm'][0]\ndel g['n']", "",
                       "\"n\" is missing");
    hp_expect_plan_bad("[o.__setitem__('heads', 0) for ph in p['phases'] for o in ph['ops'] if o['kind'] == "
                       "'attention']",
                       "", "\"heads\" is 0");
}

Test(hostile2_plan, plan_and_scenario_must_describe_one_cycle)
{
    /* a 2-step plan modelled with a 5-step scenario gave a tok/s of neither */
    hp_expect_plan_bad("pass", "--set speculative.steps=5 --set speculative.num_draft_tokens=6",
                       "the scenario sets speculative.steps=5");
    hp_expect_plan_bad("pass", "--set speculative.algorithm=none", "speculative.algorithm=none");
    hp_expect_plan_bad("pass", "--set workload.batch=2", "workload.batch=2");
    hp_expect_plan_bad("pass", "--set model.layers=6", "has 6");
}

Test(hostile2_plan, expected_tokens_above_the_verified_tokens_refused)
{
    hp_expect_plan_bad("p['expected_tokens'] = 50", "", "expected_tokens 50 is more than");
}

/* ---------------------------------------------------------------- numbers without bounds */

Test(hostile2_plan, measured_table_times_bounded)
{
    th_expect_bad(th_run("model configs/tiny.yaml --backend nccl --set system.measured.use=true --set "
                         "'system.measured.allreduce.nccl.bytes=[16,1048576]' --set "
                         "'system.measured.allreduce.nccl.us=[1e300,1e300]'"),
                  "measured.allreduce.nccl.us[0]", "out of range");
}

/* A short CPU benchmark's JSON in a temporary file (free and unlink it): what --from reads, saved once
 * for all the cases below (each edits a copy of it). */
static char *hp_bench_json(void)
{
    char *path = th_write_temp("", 0, ".json");
    th_result r = th_sh(TH_MPI_ASAN "%s bench-allreduce --device cpu --backend mpi --sizes 16,32 -n 1 -w 0 "
                        "--format json > '%s'",
                        getenv("VPSIM_BIN") ? getenv("VPSIM_BIN") : "build/vpsim", path);
    cr_assert_eq(r.status, 0, "%s", r.err);
    th_free(&r);
    return path;
}

/* The saved bench result `saved`, edited by `py` (over `b`), must be refused by --from, naming `what`. */
static void hp_expect_from_bad(const char *saved, const char *py, const char *what)
{
    char *path = th_write_temp("", 0, ".json");
    char *script = util_xasprintf("import json\nb = json.load(open('%s'))\n%s\njson.dump(b, open('%s', 'w'), "
                                  "indent=1)\n",
                                  saved, py, path);
    char *py_path = th_write_temp(script, strlen(script), ".py");
    th_result r = th_sh("python3 '%s'", py_path);
    cr_assert_eq(r.status, 0, "%s", r.err);
    th_free(&r);
    unlink(py_path);
    free(py_path);
    free(script);
    r = th_run("bench-allreduce configs/tiny.yaml --from '%s'", path);
    cr_expect_eq(r.status, 2, "%s: exit 2, got %d: %s", py, r.status, r.err);
    cr_expect(strstr(r.err, what) != NULL, "%s: message '%s', got: %s", py, what, r.err);
    cr_expect(strstr(r.out, "inf") == NULL && strstr(r.out, "nan") == NULL, "%s: no figure printed", py);
    th_free(&r);
    unlink(path);
    free(path);
}

Test(hostile2_plan, bench_from_numbers_bounded)
{
    char *saved = hp_bench_json();
    hp_expect_from_bad(saved, "b['backends'][0]['rows'][0]['time_us'] = 1e308",
                       "backends[0].rows[0].time_us: 1e+308 is out of range (must be in [0, 1000000000])");
    hp_expect_from_bad(saved, "b['backends'][0]['name'] = 'bogus'", "backend 'bogus'");
    hp_expect_from_bad(saved, "b['device'] = 'tpu'", "valid choices: cuda, cpu");
    hp_expect_from_bad(saved, "b['elem_bytes'] = 0", "elem_bytes: 0 is out of range (must be in [1, 16])");
    hp_expect_from_bad(saved, "b['elem_bytes'] = -4", "elem_bytes: -4 is out of range");
    hp_expect_from_bad(saved, "b['iters'] = 0", "iters: 0 is out of range (must be in [1, 1000000])");
    hp_expect_from_bad(saved, "b['ranks'] = 100000", "ranks: 100000 is out of range (must be in [1, 4096])");
    unlink(saved);
    free(saved);
}

Test(hostile2_plan, active_experts_above_the_expert_count_refused)
{
    th_expect_bad(th_run("plan configs/tiny.yaml --set workload.active_experts=500"), "workload.active_experts=500",
                  "more than the 16 routed experts");
}

Test(hostile2_plan, split_collectives_round_down_never_up, .timeout = 60)
{
    th_need_mpirun();
    /* 40 B over 3 ranks of floats: 10 elements, rounded down to 9 (36 B); 4 B has no such multiple */
    th_result r = th_mpirun(3, "bench-allreduce --device cpu --collective reduce_scatter --sizes 40 -n 1 -w 0");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "            36             9  float") != NULL, "40 B rounds down to 36 B: %s", r.out);
    th_free(&r);
    r = th_mpirun(3, "bench-allreduce --device cpu --collective alltoall --sizes 40,4 -n 1 -w 0");
    cr_expect_eq(r.status, 2, "%s", r.err);
    cr_expect(strstr(r.err, "--sizes 4: --collective alltoall over 3 ranks needs at least 12 bytes") != NULL, "%s",
              r.err);
    th_free(&r);
}

/* ---------------------------------------------------------------- one host-memory budget */

Test(hostile2_plan, bench_host_memory_budget_refuses_before_allocating)
{
    /* 8 GiB per call would need ~24 GiB per rank; refused at once (a run would take seconds and the box).
     * The address-space limit keeps a regression from taking the CI machine with it; a sanitizer build
     * reserves terabytes of shadow address space, so it runs without one. */
    const char *bin = getenv("VPSIM_BIN") ? getenv("VPSIM_BIN") : "build/vpsim";
    th_result r = th_sh("%s " TH_MPI_ASAN "%s bench-allreduce --device cpu --backend mpi -e 8G -n 1 -w 0",
                        strstr(bin, "/asan/") ? "" : "ulimit -v 2000000;", bin);
    cr_expect_eq(r.status, 2, "exit 2, got %d: %s", r.status, r.err);
    cr_expect(strstr(r.err, "over the 4.00 GiB budget (--max-host-memory GIB") != NULL, "%s", r.err);
    cr_expect_str_empty(r.out);
    th_free(&r);
    th_expect_bad(th_run("bench-allreduce --device cpu --backend mpi -e 1G --check 1 -n 1 -w 0 --max-host-memory 2"),
                  "with --check", "2.00 GiB budget");
    th_expect_bad(th_run("bench-allreduce --device cpu --max-host-memory 0"), "--max-host-memory", "0");
}
