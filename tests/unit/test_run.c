/* vpsim run on the CPU device under mpirun: correctness checks of the collectives, results JSON and
 * Chrome trace, error paths. These run in CI (no GPU). */
#include "../../sim/config/cfg_tree.h"
#include "test_helpers.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static th_result mpirun_vpsim(int np, const char *args)
{
    return th_mpirun(np, "run %s", args);
}

static void check_ranks(int np)
{
    th_result r = mpirun_vpsim(np, "configs/tiny.yaml --device cpu --backend mpi --check --iters 3 --warmup 1");
    cr_assert_eq(r.status, 0, "np=%d exit %d\nstdout:\n%s\nstderr:\n%s", np, r.status, r.out, r.err);
    cr_assert(strstr(r.out, "CHECK FAILED") == NULL, "%s", r.out);
    cr_assert(strstr(r.out, "cycle") != NULL, "no cycle line:\n%s", r.out);
    cr_assert(strstr(r.out, "check                    passed: 18 collective(s)") != NULL, "no verdict:\n%s", r.out);
    th_free(&r);
}

Test(run_cpu, check_passes_on_1_rank, .timeout = 120) { check_ranks(1); }
Test(run_cpu, check_passes_on_2_ranks, .timeout = 120) { check_ranks(2); }
Test(run_cpu, check_passes_on_4_ranks, .timeout = 120) { check_ranks(4); }
Test(run_cpu, check_passes_on_8_ranks, .timeout = 120) { check_ranks(8); }

Test(run_cpu, corrupted_collective_fails_the_check_and_names_the_op, .timeout = 120)
{
    th_result r = mpirun_vpsim(2, "configs/tiny.yaml --device cpu --backend mpi --check --iters 1 --warmup 0 "
                                  "--debug-corrupt-rank 1");
    cr_assert_eq(r.status, 1, "exit %d\n%s\n%s", r.status, r.out, r.err);
    cr_assert(strstr(r.err, "check failed") != NULL, "%s", r.err);
    cr_assert(strstr(r.err, "rank 1") != NULL, "%s", r.err);
    cr_assert(strstr(r.err, "first bad index 0") != NULL, "%s", r.err);
    cr_assert(strstr(r.err, "allreduce.embedding") != NULL, "first collective should be named:\n%s", r.err);
    /* The verdict on stdout, and no results table: its timings come from wrong collectives. */
    cr_assert(strstr(r.out, "CHECK FAILED: 18 of 18 collective(s) wrong") != NULL, "%s", r.out);
    cr_assert(strstr(r.out, "tok/s") == NULL && strstr(r.out, "median") == NULL, "a results table after a failed check:\n%s",
              r.out);
    th_free(&r);
}

static cfg_doc *load_json(const char *path)
{
    cfg_error err;
    cfg_doc *d = cfg_doc_load_file(path, &err);
    cr_assert_not_null(d, "%s", err.msg);
    return d;
}

static double num_at(cfg_node *root, const char *dotted)
{
    cfg_node *n = cfg_node_at(root, dotted);
    cr_assert_not_null(n, "missing %s", dotted);
    cr_assert_eq(n->kind, CFG_NODE_SCALAR, "%s is not a scalar", dotted);
    return strtod(n->scalar, NULL);
}

Test(run_cpu, results_json_and_trace_have_the_documented_shape, .timeout = 120)
{
    char dir[] = "/tmp/vpsim-run-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char args[512];
    snprintf(args, sizeof(args),
             "configs/tiny.yaml --device cpu --backend mpi --iters 4 --warmup 1 --out %s/res.json --trace %s/trace.json",
             dir, dir);
    th_result r = mpirun_vpsim(4, args);
    cr_assert_eq(r.status, 0, "%s\n%s", r.out, r.err);
    th_free(&r);

    char path[600];
    snprintf(path, sizeof(path), "%s/res.json", dir);
    cfg_doc *d = load_json(path);
    cfg_node *root = cfg_doc_root(d);
    cr_assert_str_eq(cfg_node_at(root, "schema")->scalar, "vpsim.results/1");
    cr_assert_str_eq(cfg_node_at(root, "mode")->scalar, "run");
    cfg_node *bes = cfg_map_get(root, "backends");
    cr_assert(bes && bes->kind == CFG_NODE_SEQ && bes->n == 1);
    cfg_node *b = bes->items[0];
    cr_assert_str_eq(cfg_map_get(b, "backend")->scalar, "mpi");
    const char *keys[] = {"allreduce_us", "verify_ms", "verify_comm_ms", "draft_ms", "cycle_ms", "tokens_per_cycle",
                          "tok_per_s"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        cfg_node *n = cfg_map_get(b, keys[i]);
        cr_assert_not_null(n, "backend row lacks %s", keys[i]);
        cr_assert(strtod(n->scalar, NULL) >= 0.0, "%s negative", keys[i]);
    }
    double cycle = strtod(cfg_map_get(b, "cycle_ms")->scalar, NULL);
    double tps = strtod(cfg_map_get(b, "tok_per_s")->scalar, NULL);
    double tpc = strtod(cfg_map_get(b, "tokens_per_cycle")->scalar, NULL);
    cr_assert(cycle > 0.0);
    cr_assert_float_eq(tps, tpc / (cycle / 1000.0), tps * 1e-3, "tok/s must be tokens per cycle / cycle time");
    cr_assert_float_eq(tpc, 1.0 + 0.7 + 0.7 * 0.5, 1e-9, "tiny.yaml acceptance [0.7, 0.5]");
    /* TPOT from the same timed cycle as tok/s, not from the per-op sum (which differs by the replay
     * overhead). */
    double tpot = strtod(cfg_map_get(b, "tpot_ms")->scalar, NULL);
    cr_assert_float_eq(tpot, cycle / tpc, tpot * 1e-3, "tpot_ms %g must be cycle_ms %g / tokens per cycle %g", tpot,
                       cycle, tpc);
    cr_assert_str_eq(cfg_node_at(root, "measured.check.run")->scalar, "false");
    cr_assert_eq(cfg_node_at(root, "measured.check.passed")->kind, CFG_NODE_SCALAR);
    cr_assert_str_eq(cfg_node_at(root, "measured.check.passed")->scalar, "null");
    cr_assert_eq(num_at(root, "measured.ranks"), 4.0);
    cr_assert_not_null(cfg_node_at(root, "environment.mpi"), "environment must name the MPI library");
    cr_assert_not_null(cfg_map_get(root, "command_line"));
    cfg_doc_free(d);

    snprintf(path, sizeof(path), "%s/trace.json", dir);
    d = load_json(path);
    root = cfg_doc_root(d);
    cfg_node *ev = cfg_map_get(root, "traceEvents");
    cr_assert(ev && ev->kind == CFG_NODE_SEQ && ev->n > 0);
    int seen_pid[4] = {0}, named[4] = {0};
    for (size_t i = 0; i < ev->n; i++) {
        cfg_node *e = ev->items[i];
        int pid = atoi(cfg_map_get(e, "pid")->scalar);
        cr_assert(pid >= 0 && pid < 4, "pid %d", pid);
        const char *ph = cfg_map_get(e, "ph")->scalar;
        if (!strcmp(ph, "X")) {
            seen_pid[pid]++;
            cr_assert(strtod(cfg_map_get(e, "dur")->scalar, NULL) >= 0.0);
        } else if (!strcmp(ph, "M") && !strcmp(cfg_map_get(e, "name")->scalar, "process_name")) {
            named[pid]++;
        }
    }
    for (int r2 = 0; r2 < 4; r2++) {
        cr_assert_gt(seen_pid[r2], 100, "rank %d has %d events", r2, seen_pid[r2]);
        cr_assert_eq(named[r2], 1, "rank %d track named %d times", r2, named[r2]);
    }
    cfg_doc_free(d);
    char cmd[700];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

Test(run_cpu, world_size_sets_tp_with_a_note, .timeout = 120)
{
    th_result r = mpirun_vpsim(4, "configs/tiny.yaml --device cpu --backend none --iters 1 --warmup 0");
    cr_assert_eq(r.status, 0, "%s\n%s", r.out, r.err);
    cr_assert(strstr(r.err, "parallel.tp=4") != NULL, "expected a note about TP following the job:\n%s", r.err);
    th_free(&r);
}

Test(run_cpu, bad_backend_lists_choices_and_exits_2)
{
    th_result r = th_run("run configs/tiny.yaml --device cpu --backend carrier-pigeon");
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "valid choices: nccl") != NULL, "%s", r.err);
    th_free(&r);
}

Test(run_cpu, nccl_on_the_cpu_device_is_refused_clearly)
{
    th_result r = th_run("run configs/tiny.yaml --device cpu --backend nccl --iters 1");
    cr_assert_eq(r.status, 2, "%s", r.err);
    cr_assert(strstr(r.err, "nccl needs the cuda device") != NULL || strstr(r.err, "no CUDA") != NULL, "%s", r.err);
    th_free(&r);
}

Test(run_cpu, cpu_device_refuses_plans_over_the_memory_limit)
{
    th_result r = th_run("run configs/default.yaml --device cpu --backend none --iters 1 --max-host-memory 1");
    cr_assert_eq(r.status, 2, "%s", r.err);
    cr_assert(strstr(r.err, "configs/tiny.yaml") != NULL, "%s", r.err);
    th_free(&r);
}

Test(run_cpu, model_backend_without_target_system_says_so)
{
    th_result r = th_run("run configs/tiny.yaml --device cpu --backend model --iters 1");
    cr_assert_eq(r.status, 2, "%s", r.err);
    cr_assert(strstr(r.err, "--target-system") != NULL, "%s", r.err);
    th_free(&r);
}

Test(run_cpu, model_backend_replays_modelled_collectives_on_the_cpu, .timeout = 120)
{
    th_result r = th_run("run configs/tiny.yaml --device cpu --backend model --iters 2 --warmup 0 "
                         "--target-system configs/systems/rtx-pro-6000-8x-pcie.yaml");
    cr_assert_eq(r.status, 0, "%s\n%s", r.out, r.err);
    cr_assert(strstr(r.out, "model") != NULL, "%s", r.out);
    th_free(&r);
}

/* At one rank an allreduce is the identity and an all-gather a copy: --check still compares every
 * element, so a corrupted result fails it. */
Test(run_cpu, check_at_1_rank_catches_a_corrupted_result, .timeout = 120)
{
    th_result r = mpirun_vpsim(1, "configs/tiny.yaml --device cpu --backend mpi --check --iters 1 --warmup 0 "
                                  "--debug-corrupt-rank 0");
    cr_assert_eq(r.status, 1, "exit %d\n%s\n%s", r.status, r.out, r.err);
    cr_assert(strstr(r.err, "check failed") != NULL, "%s", r.err);
    cr_assert(strstr(r.err, "wrong on rank 0: first bad index 0") != NULL, "%s", r.err);
    th_free(&r);
}

Test(run_cpu, check_needs_a_backend_that_moves_data)
{
    const char *backends[] = {"none", "model --target-system configs/systems/rtx-pro-6000-8x-pcie.yaml"};
    for (int i = 0; i < 2; i++) {
        th_result r = th_run("run configs/tiny.yaml --device cpu --check --iters 1 --backend %s", backends[i]);
        cr_assert_eq(r.status, 2, "%s: exit %d\n%s", backends[i], r.status, r.err);
        cr_assert(strstr(r.err, "moves no data") != NULL, "%s", r.err);
        th_free(&r);
    }
}

Test(run_cpu, debug_corrupt_rank_needs_check_and_an_existing_rank)
{
    th_result r = th_run("run configs/tiny.yaml --device cpu --backend mpi --iters 1 --debug-corrupt-rank 0");
    cr_assert_eq(r.status, 2, "%s", r.err);
    cr_assert(strstr(r.err, "needs --check") != NULL, "%s", r.err);
    th_free(&r);
    r = th_run("run configs/tiny.yaml --device cpu --backend mpi --iters 1 --check --debug-corrupt-rank 3");
    cr_assert_eq(r.status, 2, "%s", r.err);
    cr_assert(strstr(r.err, "no such rank") != NULL, "%s", r.err);
    th_free(&r);
}

static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* --warmup N means N untimed cycles before anything is measured (it once ran at most one there). The
 * collective calls a run makes count the cycles: with --inject-fault exit:0:CALL a rank exits 1 just
 * before call CALL, so the last call made and the first one not made bound the count exactly. */
Test(run_cpu, warmup_runs_as_many_cycles_as_asked, .timeout = 120)
{
    th_result pl = th_run("plan configs/tiny.yaml --format json");
    cr_assert_eq(pl.status, 0, "%s", pl.err);
    const int per_cycle = count_of(pl.out, "\"kind\": \"allreduce\"") + count_of(pl.out, "\"kind\": \"allgather\"");
    th_free(&pl);
    cr_assert_gt(per_cycle, 0);
    const int warmup = 3, inst = 1, iters = 2, calls = (warmup + inst + iters) * per_cycle;
    const char *args = "configs/tiny.yaml --device cpu --backend mpi --warmup 3 --instrumented 1 --iters 2";
    th_result r = th_run("run %s --inject-fault exit:0:%d", args, calls + 1);
    cr_assert_eq(r.status, 0, "call %d should never be made (%d cycles of %d collectives): exit %d\n%s", calls + 1,
                 warmup + inst + iters, per_cycle, r.status, r.err);
    th_free(&r);
    r = th_run("run %s --inject-fault exit:0:%d", args, calls);
    /* the fault's exit is a runtime failure (1), told apart from a clean run by its own line */
    cr_assert_eq(r.status, 1, "call %d is the last one made: exit %d\n%s", calls, r.status, r.err);
    cr_assert_not_null(strstr(r.err, "--inject-fault exit: before collective call"), "%s", r.err);
    th_free(&r);
}

/* Without a scenario argument `run` uses the default scenario; backend model reloads that scenario
 * against --target-system, and once reloaded it by its name ("default: cannot open"). Reaching the
 * CPU device's memory check shows the durations were modelled. */
Test(run_cpu, backend_model_works_on_the_default_scenario, .timeout = 60)
{
    th_result r = th_run("run --backend model --target-system configs/systems/rtx-pro-6000-8x-pcie.yaml --device cpu "
                         "--set parallel.tp=1 --iters 1 --warmup 0");
    cr_assert(strstr(r.err, "cannot open") == NULL, "%s", r.err);
    cr_assert_eq(r.status, 2, "%s", r.err);
    cr_assert(strstr(r.err, "--max-host-memory") != NULL, "the run got as far as the device: %s", r.err);
    th_free(&r);
}
