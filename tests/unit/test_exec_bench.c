/* vpsim bench-allreduce: the plain parts (size sweeps, bus bandwidth, table and JSON output) and the
 * whole command on the CPU device with the MPI backend under mpirun, as CI runs it. */
#include "../../sim/config/cfg_tree.h"
#include "../../sim/exec/exec_bench.h"
#include "../../sim/comm/comm_custom.h"
#include "test_helpers.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------- bandwidths and sizes ---------------- */

Test(comm_bench, busbw_is_algbw_times_2_n_minus_1_over_n)
{
    cr_assert_float_eq(comm_busbw(10.0, 1), 0.0, 1e-12);
    cr_assert_float_eq(comm_busbw(10.0, 2), 10.0, 1e-12);
    cr_assert_float_eq(comm_busbw(10.0, 4), 15.0, 1e-12);
    cr_assert_float_eq(comm_busbw(10.0, 8), 17.5, 1e-12);
    cr_assert_float_eq(comm_algbw(43008, 10.0), 4.3008, 1e-12, "bytes / us / 1e3 = GB/s");
    cr_assert_float_eq(comm_algbw(43008, 0.0), 0.0, 1e-12);
}

Test(comm_bench, geometric_sweep_like_nccl_tests)
{
    long long s[EXEC_BENCH_MAX_SIZES];
    char why[256] = "";
    int n = exec_bench_sizes(16, 8 << 20, 2, 2, s, EXEC_BENCH_MAX_SIZES, why, sizeof(why));
    cr_assert_eq(n, 20, "%s", why);
    cr_assert_eq(s[0], 16);
    cr_assert_eq(s[19], 8 << 20);
    n = exec_bench_sizes(2, 100, 3, 2, s, EXEC_BENCH_MAX_SIZES, why, sizeof(why));
    cr_assert_eq(n, 4);
    long long want[] = {2, 6, 18, 54}; /* none a multiple of 16 */
    for (int i = 0; i < 4; i++)
        cr_assert_eq(s[i], want[i]);
}

Test(comm_bench, sizes_round_down_to_whole_elements)
{
    long long s[EXEC_BENCH_MAX_SIZES];
    char why[256] = "";
    int n = exec_bench_sizes(1, 16, 2, 4, s, EXEC_BENCH_MAX_SIZES, why, sizeof(why));
    cr_assert_eq(n, 3, "1 and 2 bytes hold no float");
    cr_assert_eq(s[0], 4);
    cr_assert_eq(s[2], 16);
    n = exec_bench_sizes(6, 6, 2, 4, s, EXEC_BENCH_MAX_SIZES, why, sizeof(why));
    cr_assert_eq(n, 1);
    cr_assert_eq(s[0], 4);
}

Test(comm_bench, bad_sweeps_are_explained)
{
    long long s[4];
    char why[256] = "";
    cr_assert_eq(exec_bench_sizes(64, 16, 2, 2, s, 4, why, sizeof(why)), -1);
    cr_assert(strstr(why, "-b MIN <= -e MAX") != NULL, "%s", why);
    cr_assert_eq(exec_bench_sizes(16, 64, 1, 2, s, 4, why, sizeof(why)), -1);
    cr_assert(strstr(why, "at least 2") != NULL, "%s", why);
    cr_assert_eq(exec_bench_sizes(1, 1 << 20, 2, 2, s, 4, why, sizeof(why)), -1);
    cr_assert(strstr(why, "more than 4") != NULL, "%s", why);
    cr_assert_eq(exec_bench_sizes(1, 3, 2, 4, s, 4, why, sizeof(why)), -1);
    cr_assert(strstr(why, "one 4-byte element") != NULL, "%s", why);
}

Test(comm_bench, add_size_keeps_the_list_sorted_and_unique)
{
    long long s[5] = {16, 64, 1024};
    int n = exec_bench_add_size(s, 3, 5, 43008);
    n = exec_bench_add_size(s, n, 5, 64);
    n = exec_bench_add_size(s, n, 5, 32);
    cr_assert_eq(n, 5);
    long long want[] = {16, 32, 64, 1024, 43008};
    for (int i = 0; i < 5; i++)
        cr_assert_eq(s[i], want[i]);
    cr_assert_eq(exec_bench_add_size(s, 5, 5, 7), 5, "full list stays as is");
}

/* ---------------- output ---------------- */

static exec_bench_result fake_result(bool virtual_ranks)
{
    exec_bench_result r;
    memset(&r, 0, sizeof(r));
    r.ranks = 8;
    snprintf(r.device, sizeof(r.device), "cuda");
    snprintf(r.type, sizeof(r.type), "bf16");
    r.elem_bytes = 2;
    r.iters = 20;
    r.warmup = 5;
    r.graph_requested = true;
    r.virtual_ranks = virtual_ranks;
    r.n_backends = 2;
    r.backends = calloc(2, sizeof(*r.backends));
    exec_bench_backend *b = &r.backends[0];
    b->ran = true;
    b->graph = true;
    snprintf(b->name, sizeof(b->name), "oneshot");
    b->n_rows = 2;
    b->rows[0] = (exec_bench_row){.bytes = 16, .count = 8, .time_us = 5.0, .wrong = 0};
    b->rows[1] = (exec_bench_row){.bytes = 43008, .count = 21504, .time_us = 10.0, .wrong = 3, .verify_size = true};
    for (int i = 0; i < 2; i++) {
        b->rows[i].algbw = comm_algbw(b->rows[i].bytes, b->rows[i].time_us);
        b->rows[i].busbw = comm_busbw(b->rows[i].algbw, 8);
    }
    snprintf(b->env[0].key, sizeof(b->env[0].key), "custom_topology");
    snprintf(b->env[0].value, sizeof(b->env[0].value), "8 ranks on 1 GPU");
    b->n_env = 1;
    snprintf(r.backends[1].name, sizeof(r.backends[1].name), "nccl-symm");
    snprintf(r.backends[1].why, sizeof(r.backends[1].why), "rank 0: 8 ranks share GPU X");
    r.wrong_total = 3;
    return r;
}

Test(comm_bench, table_has_nccl_tests_columns_and_marks)
{
    exec_bench_result r = fake_result(true);
    util_buf o = {0};
    exec_bench_table(&o, &r);
    cr_assert(strstr(o.s, "8 ranks, device cuda, type bf16") != NULL, "%s", o.s);
    cr_assert(strstr(o.s, "CUDA graphs") != NULL, "%s", o.s);
    cr_assert(strstr(o.s, COMM_VIRTUAL_NOTE) != NULL, "virtual ranks must carry the caveat:\n%s", o.s);
    const char *cols[] = {"size", "count", "type", "redop", "time", "algbw", "busbw", "#wrong", "(GB/s)"};
    for (size_t i = 0; i < sizeof(cols) / sizeof(cols[0]); i++)
        cr_assert(strstr(o.s, cols[i]) != NULL, "column %s missing:\n%s", cols[i], o.s);
    /* 43008 B in 10 us: algbw 4.30 GB/s, busbw x 7/4 = 7.53 GB/s. */
    /* The verify-pass mark is the last column ("yes" / "-"), not trailing text. */
    cr_assert(strstr(o.s, "43008         21504   bf16    sum     10.00     4.30     7.53       3    yes\n") != NULL,
              "%s", o.s);
    cr_assert(strstr(o.s, "16             8   bf16    sum      5.00     0.00     0.01       0      -\n") != NULL,
              "%s", o.s);
    cr_assert(strstr(o.s, "<-") == NULL, "%s", o.s);
    cr_assert(strstr(o.s, "# backend nccl-symm: unsupported: rank 0: 8 ranks share GPU X") != NULL, "%s", o.s);
    cr_assert(strstr(o.s, "#wrong total: 3 (FAILED)") != NULL, "%s", o.s);
    cr_assert(strstr(o.s, "avg bus bandwidth (oneshot)") != NULL, "%s", o.s);
    util_buf_free(&o);
    free(r.backends);
}

Test(comm_bench, table_without_virtual_ranks_has_no_caveat)
{
    exec_bench_result r = fake_result(false);
    r.wrong_total = 0;
    util_buf o = {0};
    exec_bench_table(&o, &r);
    cr_assert(strstr(o.s, "NOTE") == NULL, "%s", o.s);
    cr_assert(strstr(o.s, "#wrong total: 0 (OK)") != NULL, "%s", o.s);
    util_buf_free(&o);
    free(r.backends);
}

Test(comm_bench, json_has_stable_keys)
{
    exec_bench_result r = fake_result(true);
    util_json j;
    util_json_init(&j, true);
    char *argv[] = {"bench-allreduce", "--graph"};
    exec_bench_json(&j, &r, 2, argv);
    cfg_error err;
    cfg_doc *d = cfg_doc_load_text(j.out.s, j.out.len, "bench-json", false, &err);
    cr_assert_not_null(d, "not JSON: %s\n%s", err.msg, j.out.s);
    cfg_node *root = cfg_doc_root(d);
    cr_assert_str_eq(cfg_node_at(root, "schema")->scalar, "vpsim.bench_allreduce/1");
    cr_assert_str_eq(cfg_node_at(root, "command")->scalar, "bench-allreduce --graph");
    cr_assert_str_eq(cfg_node_at(root, "ranks")->scalar, "8");
    cr_assert_str_eq(cfg_node_at(root, "virtual_ranks")->scalar, "true");
    cr_assert_not_null(cfg_node_at(root, "note"));
    cr_assert_str_eq(cfg_node_at(root, "wrong_total")->scalar, "3");
    cfg_node *bes = cfg_map_get(root, "backends");
    cr_assert(bes && bes->kind == CFG_NODE_SEQ && bes->n == 2);
    cfg_node *b0 = bes->items[0], *b1 = bes->items[1];
    cr_assert_str_eq(cfg_map_get(b0, "name")->scalar, "oneshot");
    cr_assert_str_eq(cfg_map_get(b0, "supported")->scalar, "true");
    cr_assert_str_eq(cfg_node_at(b0, "environment.custom_topology")->scalar, "8 ranks on 1 GPU");
    cfg_node *rows = cfg_map_get(b0, "rows");
    cr_assert(rows && rows->n == 2);
    const char *keys[] = {"bytes", "count", "time_us", "algbw_gbps", "busbw_gbps", "wrong", "verify_pass"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        cr_assert_not_null(cfg_map_get(rows->items[1], keys[i]), "row lacks %s", keys[i]);
    cr_assert_str_eq(cfg_map_get(rows->items[1], "verify_pass")->scalar, "true");
    cr_assert_float_eq(strtod(cfg_map_get(rows->items[1], "busbw_gbps")->scalar, NULL), 4.3008 * 1.75, 1e-9);
    cr_assert_str_eq(cfg_map_get(b1, "supported")->scalar, "false");
    cr_assert(strstr(cfg_map_get(b1, "reason")->scalar, "share GPU") != NULL);
    cfg_doc_free(d);
    util_buf_free(&j.out);
    free(r.backends);
}

/* ---------------- the command ---------------- */

static th_result bench(int np, const char *args)
{
    return th_mpirun(np, "bench-allreduce %s", args);
}

Test(exec_bench_cli, mpi_on_cpu_checks_clean_under_mpirun_np4, .timeout = 150)
{
    th_need_mpirun();
    th_result r = bench(4, "--device cpu --backend mpi --check");
    cr_assert_eq(r.status, 0, "exit %d\n%s\n%s", r.status, r.out, r.err);
    cr_assert(strstr(r.out, "4 ranks, device cpu, type float") != NULL, "%s", r.out);
    cr_assert(strstr(r.out, "#wrong total: 0 (OK)") != NULL, "%s", r.out);
    cr_assert(strstr(r.out, "     8388608       2097152  float") != NULL, "default sweep ends at 8M:\n%s", r.out);
    th_free(&r);
}

Test(exec_bench_cli, odd_sizes_and_rank_counts, .timeout = 150)
{
    th_need_mpirun();
    for (int np = 1; np <= 3; np++) {
        th_result r = bench(np, "--device cpu --backend mpi --check --sizes 4,12,20,1000,43012 -n 3 -w 1");
        cr_assert_eq(r.status, 0, "np=%d exit %d\n%s\n%s", np, r.status, r.out, r.err);
        cr_assert(strstr(r.out, "#wrong total: 0 (OK)") != NULL, "%s", r.out);
        cr_assert(strstr(r.out, "43012         10753") != NULL, "%s", r.out);
        th_free(&r);
    }
}

Test(exec_bench_cli, scenario_marks_the_verify_pass_payload, .timeout = 150)
{
    th_need_mpirun();
    char dir[] = "/tmp/vpsim-bench-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char args[256];
    snprintf(args, sizeof(args), "configs/default.yaml --device cpu -b 1K -e 64K -f 4 --format json --out %s/b.json",
             dir);
    th_result r = bench(2, args);
    cr_assert_eq(r.status, 0, "%s\n%s", r.out, r.err);
    th_free(&r);
    char path[300];
    snprintf(path, sizeof(path), "%s/b.json", dir);
    cfg_error err;
    cfg_doc *d = cfg_doc_load_file(path, &err);
    cr_assert_not_null(d, "%s", err.msg);
    cfg_node *rows = cfg_node_at(cfg_doc_root(d), "backends");
    cr_assert(rows && rows->n == 1);
    rows = cfg_map_get(rows->items[0], "rows");
    int marked = 0;
    for (size_t i = 0; i < rows->n; i++)
        if (!strcmp(cfg_map_get(rows->items[i], "verify_pass")->scalar, "true")) {
            marked++;
            /* 3 tokens x 7168 hidden: 21504 elements (43,008 B in bf16; floats on the cpu device). */
            cr_assert_str_eq(cfg_map_get(rows->items[i], "count")->scalar, "21504");
        }
    cr_assert_eq(marked, 1);
    cfg_doc_free(d);
    snprintf(path, sizeof(path), "rm -rf '%s'", dir);
    cr_assert_eq(system(path), 0);
}

Test(exec_bench_cli, a_per_size_policy_runs_as_one_more_backend, .timeout = 150)
{
    th_need_mpirun();
    th_result r = bench(3, "--device cpu --backend mpi --policy 'mpi<=1K,mpi' --check -e 4K -f 4");
    cr_assert_eq(r.status, 0, "%s\n%s", r.out, r.err);
    cr_assert(strstr(r.out, "# backend policy(mpi<=1K,mpi) (timed eager)") != NULL, "%s", r.out);
    cr_assert(strstr(r.out, "#wrong total: 0 (OK)") != NULL, "%s", r.out);
    th_free(&r);
    r = th_run("bench-allreduce --device cpu --policy 'oneshot<=1K,mpi' -e 64 -n 1 -w 0");
    cr_assert_eq(r.status, 1, "a named policy that cannot run fails:\n%s\n%s", r.out, r.err);
    cr_assert(strstr(r.out, "policy 'oneshot<=1K,mpi': backend oneshot:") != NULL, "%s", r.out);
    th_free(&r);
}

Test(exec_bench_cli, a_dead_rank_ends_the_job_with_an_error_not_a_hang, .timeout = 150)
{
    th_need_mpirun();
    th_result r = bench(4, "--device cpu --backend mpi -e 4K -n 50 --inject-fault kill:2:30");
    cr_assert_neq(r.status, 0, "%s\n%s", r.out, r.err);
    cr_assert_neq(r.status, 124, "timed out: the surviving ranks hung\n%s", r.err);
    cr_assert(strstr(r.err, "--inject-fault kill") != NULL, "%s", r.err);
    th_free(&r);
}

Test(exec_bench_cli, unsupported_backends_get_a_row_and_fail_when_named, .timeout = 60)
{
    th_result r = th_run("bench-allreduce --device cpu --backend mpi,oneshot,nccl-symm -e 64 -n 2 -w 0");
    cr_assert_eq(r.status, 1, "%s\n%s", r.out, r.err);
    cr_assert(strstr(r.out, "# backend oneshot: unsupported:") != NULL, "%s", r.out);
    cr_assert(strstr(r.out, "# backend nccl-symm: unsupported:") != NULL, "%s", r.out);
    cr_assert(strstr(r.out, "#wrong total: 0 (OK)") != NULL, "%s", r.out);
    cr_assert(strstr(r.err, "could not run here") != NULL, "%s", r.err);
    th_free(&r);
}

static void usage_error(const char *args, const char *needle)
{
    th_result r = th_run("bench-allreduce %s", args);
    cr_assert_eq(r.status, 2, "'%s': exit %d\n%s", args, r.status, r.err);
    cr_assert(strstr(r.err, needle) != NULL, "'%s': stderr lacks '%s':\n%s", args, needle, r.err);
    th_free(&r);
}

Test(exec_bench_cli, bad_input_exits_2_with_the_choices)
{
    usage_error("--device cpu --backend carrier-pigeon", "valid choices: nccl, nccl-symm, oneshot, twoshot, push, mpi");
    usage_error("--device cpu --backend model", "valid choices");
    usage_error("--device gpu", "valid choices: cuda, cpu");
    usage_error("--device cpu -b 1M -e 1K", "-b MIN <= -e MAX");
    usage_error("--device cpu -b lots", "expected a size");
    usage_error("--device cpu -f 1", "expected an integer in [2,");
    usage_error("--device cpu --iters 0", "--iters");
    usage_error("--device cpu --sizes 1,2", "smaller than one 4-byte element");
    usage_error("--device cpu --format xml", "valid choices: table, json, csv");
    usage_error("--device cpu -c 2", "-c/--check");
    usage_error("--device cpu --check=yes", "-c/--check");
    usage_error("--device cpu -G -1", "-G/--cudagraph");
    usage_error("--device cpu -d bfloat16", "the cpu device reduces float (valid: float, float32)");
    usage_error("--device cpu -d half", "-d/--datatype 'half'");
    usage_error("--device cpu --inject-fault boom:1:2", "MODE:RANK:CALL");
    usage_error("--device cpu --frobnicate", "unknown option");
    usage_error("--device cpu --policy 'oneshot<=1K'", "last rule must have no bound");
    usage_error("--device cpu --policy 'none'", "valid choices");
}

Test(exec_bench_cli, help_lists_the_options)
{
    th_result r = th_run("bench-allreduce --help");
    cr_assert_eq(r.status, 0);
    const char *opts[] = {"--backend", "-b", "-e", "-f", "--iters", "--warmup", "--graph", "--check", "--device",
                          "--format", "--out", "VPSIM_COMM_TIMEOUT_MS"};
    for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
        cr_assert(strstr(r.out, opts[i]) != NULL, "help lacks %s", opts[i]);
    th_free(&r);
}
