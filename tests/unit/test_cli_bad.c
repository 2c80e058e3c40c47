/* Bad inputs to the vpsim binary: each must give a `file:line:col` (or `--set`) message and exit 2.
 * Fixtures live in tests/data/bad/ (each says what is wrong and where). */
#include "../../sim/config/cfg.h"
#include "../../sim/util/util.h"
#include "test_helpers.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


/* A fixture scenario in tests/data/bad/ whose error is at `linecol` ("7:3"). */
static void expect_bad_fixture(const char *name, const char *linecol, const char *what)
{
    char *where = util_xasprintf("tests/data/bad/%s:%s: ", name, linecol);
    th_expect_bad(th_run("plan tests/data/bad/%s", name), where, what);
    free(where);
}

static char *temp_text(const char *text, size_t len)
{
    return th_write_temp(text, len, ".yaml");
}

/* ---------------- bad inputs: file:line:col, exit status 2 ---------------- */

Test(cli_bad, yaml_syntax_error)
{
    expect_bad_fixture("syntax_error.yaml", "8:9", "YAML syntax error");
}

Test(cli_bad, unknown_key_lists_the_valid_keys)
{
    expect_bad_fixture("unknown_key.yaml", "7:3", "unknown key 'parallel.tpp'; valid keys here: tp");
}

Test(cli_bad, unknown_key_in_the_model_file)
{
    th_expect_bad(th_run("plan tests/data/bad/model_unknown_key.yaml"),
                   "tests/data/bad/model_unknown_key.model.yaml:10:1: ",
                   "unknown key 'hiden'; valid keys here: name, source, arch, layers, first_k_dense, hidden,");
}

Test(cli_bad, wrong_type)
{
    expect_bad_fixture("wrong_type.yaml", "7:7", "parallel.tp: expected an integer, got 'eight'");
}

Test(cli_bad, quoted_number_is_a_string)
{
    expect_bad_fixture("quoted_number.yaml", "7:7", "parallel.tp: expected an integer, got '8'");
}

Test(cli_bad, negative_size)
{
    expect_bad_fixture("negative_size.yaml", "7:10", "workload.batch: -4 is out of range (must be in [1, 4096])");
}

Test(cli_bad, out_of_range_list_item)
{
    expect_bad_fixture("out_of_range.yaml", "7:21", "speculative.acceptance[1]: 1.5 is out of range");
}

Test(cli_bad, tp_that_does_not_divide_the_heads)
{
    expect_bad_fixture("tp_heads.yaml", "7:7", "parallel.tp=16 does not divide model attention.heads=8 (");
    /* ... and the message points at the heads in the model file too. */
    th_result r = th_run("plan tests/data/bad/tp_heads.yaml");
    cr_assert_not_null(strstr(r.err, "tiny-moe.yaml:"), "%s", r.err);
    th_free(&r);
}

Test(cli_bad, missing_model_file)
{
    expect_bad_fixture("missing_model.yaml", "3:8", "no-such-model.yaml");
    th_result r = th_run("plan tests/data/bad/missing_model.yaml");
    cr_assert_not_null(strstr(r.err, "cannot be read"), "%s", r.err);
    th_free(&r);
}

Test(cli_bad, model_path_that_is_a_directory)
{
    expect_bad_fixture("model_is_directory.yaml", "3:8", "is not a regular file");
    th_expect_bad(th_run("plan configs/tiny.yaml --set model=models"), "--set 'model=models': ",
                   "is not a regular file");
}

Test(cli_bad, missing_scenario_file)
{
    th_expect_bad(th_run("plan tests/data/bad/does-not-exist.yaml"), "tests/data/bad/does-not-exist.yaml: ",
                   "cannot open");
}

Test(cli_bad, alias_bomb)
{
    expect_bad_fixture("alias_bomb.yaml", "7:4", "YAML anchors are not supported (anchor '&a')");
}

Test(cli_bad, anchor)
{
    expect_bad_fixture("anchor.yaml", "2:7", "YAML anchors are not supported");
}

Test(cli_bad, alias)
{
    expect_bad_fixture("alias.yaml", "3:14", "YAML aliases are not supported");
}

Test(cli_bad, empty_file)
{
    expect_bad_fixture("empty.yaml", "1:1", "file is empty");
    expect_bad_fixture("comments_only.yaml", "1:1", "file is empty");
}

Test(cli_bad, binary_file)
{
    /* Bytes with NULs: the position of the first one. */
    const char bin[] = "\x7f" "ELF\x02\x01\x01\x00\x00\x00junk\xff\xfe";
    char *path = temp_text(bin, sizeof(bin) - 1);
    char *where = util_xasprintf("%s:1:8: ", path);
    th_expect_bad(th_run("plan %s", path), where, "contains NUL bytes; this looks like a binary file");
    unlink(path);
    free(path);
    free(where);

    /* Bytes that are not UTF-8 (and hold no NUL): the position of the first bad byte. */
    const char latin1[] = "name: caf\xe9\nparallel: {tp: 2}\n";
    path = temp_text(latin1, sizeof(latin1) - 1);
    where = util_xasprintf("%s:1:10: ", path);
    th_expect_bad(th_run("plan %s", path), where, "not valid UTF-8");
    unlink(path);
    free(path);
    free(where);

    /* The vpsim executable itself. */
    const char *bin_path = getenv("VPSIM_BIN");
    if (bin_path) {
        where = util_xasprintf("%s:1:", bin_path);
        th_expect_bad(th_run("plan '%s'", bin_path), where, "contains NUL bytes");
        free(where);
    }
}

Test(cli_bad, oversized_file)
{
    char path[] = "/tmp/vpsim-test-huge-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(ftruncate(fd, (off_t)CFG_MAX_FILE_BYTES + 4096), 0); /* sparse: costs nothing */
    close(fd);
    char *where = util_xasprintf("%s: ", path);
    th_expect_bad(th_run("plan %s", path), where, "the limit is 67108864 bytes");
    th_expect_bad(th_run("plan --plan %s", path), where, "the limit is 67108864 bytes");
    unlink(path);
    free(where);
}

Test(cli_bad, too_deep_nesting)
{
    util_buf b = {0};
    util_buf_printf(&b, "name: deep\ndescription: ");
    for (int i = 0; i < 200; i++)
        util_buf_printf(&b, "[");
    for (int i = 0; i < 200; i++)
        util_buf_printf(&b, "]");
    util_buf_printf(&b, "\n");
    char *path = temp_text(b.s, b.len);
    /* "description: " is 13 columns; the root mapping is level 1, so the 64th '[' opens level 65. */
    char *where = util_xasprintf("%s:2:%d: ", path, 13 + CFG_MAX_DEPTH);
    th_expect_bad(th_run("plan %s", path), where, "nesting deeper than 64 levels");
    unlink(path);
    free(path);
    free(where);
    util_buf_free(&b);
}

Test(cli_bad, duplicate_key)
{
    expect_bad_fixture("duplicate_key.yaml", "8:3", "duplicate key 'tp' (first at line 7)");
}

Test(cli_bad, bad_enum_value_lists_the_choices)
{
    expect_bad_fixture("bad_enum.yaml", "7:12",
                       "run.backend: unknown value 'gloo'; valid choices: nccl, nccl-symm, oneshot, twoshot");
}

Test(cli_bad, mapping_where_a_scalar_is_expected)
{
    expect_bad_fixture("map_for_scalar.yaml", "7:7", "parallel.tp: expected integer, got a mapping");
}

Test(cli_bad, list_where_a_section_is_expected)
{
    expect_bad_fixture("list_for_map.yaml", "6:11", "parallel: expected a mapping of keys, got a list");
}

Test(cli_bad, missing_required_key)
{
    expect_bad_fixture("missing_name.yaml", "2:1", "missing required key 'name'");
}

Test(cli_bad, inconsistent_draft_tokens_in_a_file)
{
    expect_bad_fixture("inconsistent_draft_tokens.yaml", "8:21", "steps + 1 = 4");
}

Test(cli_bad, two_documents)
{
    expect_bad_fixture("two_documents.yaml", "6:1", "more than one YAML document");
}

Test(cli_bad, scenario_that_is_not_a_mapping)
{
    expect_bad_fixture("not_a_mapping.yaml", "2:1", "a scenario must be a mapping of keys");
}

Test(cli_bad, set_without_equals)
{
    th_expect_bad(th_run("plan configs/tiny.yaml --set speculative.steps"), "--set 'speculative.steps': ",
                   "expected KEY=VALUE");
}

Test(cli_bad, set_unknown_key)
{
    th_expect_bad(th_run("plan configs/tiny.yaml --set parallel.tpx=2"), "--set 'parallel.tpx=2': ",
                   "unknown key 'parallel.tpx'");
    th_expect_bad(th_run("plan configs/tiny.yaml --set model.hiden=2"), "--set 'model.hiden=2': ",
                   "unknown key 'model.hiden'");
    th_expect_bad(th_run("plan configs/tiny.yaml --set Parallel.tp=2"), "--set 'Parallel.tp=2': ",
                   "may hold only a-z");
}

Test(cli_bad, set_bad_value_type)
{
    th_expect_bad(th_run("plan configs/tiny.yaml --set parallel.tp=abc"), "--set 'parallel.tp=abc': ",
                   "expected an integer, got 'abc'");
    th_expect_bad(th_run("plan configs/tiny.yaml --set run.graph=yes"), "--set 'run.graph=yes': ",
                   "expected true or false");
    th_expect_bad(th_run("plan configs/tiny.yaml --set 'speculative.acceptance=[0.5, 2]'"),
                   "--set 'speculative.acceptance=[0.5, 2]': ", "acceptance[1]: 2 is out of range");
    th_expect_bad(th_run("plan configs/tiny.yaml --set 'speculative.acceptance=[0.5'"),
                   "--set 'speculative.acceptance=[0.5': ", "YAML syntax error");
    th_expect_bad(th_run("plan configs/tiny.yaml --set model.hidden=-1"), "--set 'model.hidden=-1': ",
                   "out of range");
    th_expect_bad(th_run("plan configs/tiny.yaml --set run.device=tpu"), "--set 'run.device=tpu': ",
                   "valid choices: cuda, cpu");
    th_expect_bad(th_run("plan configs/tiny.yaml --set 'parallel.tp={a: 1}'"), "--set 'parallel.tp={a: 1}': ",
                   "expected integer, got a mapping");
}

Test(cli_bad, bad_format)
{
    th_expect_bad(th_run("plan configs/tiny.yaml --format xml"), "--format 'xml'", "valid choices: table, json, csv");
}

Test(cli_bad, unknown_option_and_extra_argument)
{
    th_expect_bad(th_run("plan configs/tiny.yaml --bogus"), "unknown option '--bogus'", "vpsim plan --help");
    th_expect_bad(th_run("plan configs/tiny.yaml configs/default.yaml"), "unexpected argument 'configs/default.yaml'",
                   "vpsim plan --help");
    th_expect_bad(th_run("plan configs/tiny.yaml --set"), "option '--set' needs a value", "vpsim plan --help");
    th_expect_bad(th_run("plan configs/tiny.yaml --format"), "option '--format' needs a value", "");
    th_expect_bad(th_run("plan configs/tiny.yaml -x"), "unknown option '-x'", "");
    th_expect_bad(th_run("no-such-command"), "unknown command 'no-such-command'", "plan");
}

Test(cli_bad, plan_json_cannot_take_set)
{
    th_expect_bad(th_run("plan --plan tests/data/plan_hand.json --set parallel.tp=2"), "--set", "scenario");
}

/* ---------------- TP degrees through the CLI ---------------- */

Test(cli_tp, powers_of_two_build_and_tp3_is_rejected)
{
    const int tps[] = {1, 2, 4, 8, 16};
    for (size_t i = 0; i < 5; i++) {
        th_result r = th_run("plan configs/default.yaml --set parallel.tp=%d --format csv", tps[i]);
        cr_assert_eq(r.status, 0, "default at TP=%d: %s", tps[i], r.err);
        th_free(&r);
        if (tps[i] <= 8) {
            r = th_run("plan configs/tiny.yaml --set parallel.tp=%d --format csv", tps[i]);
            cr_assert_eq(r.status, 0, "tiny at TP=%d: %s", tps[i], r.err);
            th_free(&r);
        }
    }
    th_expect_bad(th_run("plan configs/default.yaml --set parallel.tp=3"), "--set 'parallel.tp=3': ",
                   "must be 1, 2, 4, 8 or 16");
    /* tiny-moe has 8 heads. */
    th_expect_bad(th_run("plan configs/tiny.yaml --set parallel.tp=16"), "--set 'parallel.tp=16': ",
                   "does not divide model attention.heads=8");
}


Test(cli_bad, a_missing_option_value_is_named_in_every_command)
{
    const char *cmds[] = {"run --iters", "model --backend", "sweep --vary", "calibrate --results",
                          "bench-allreduce -n"};
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        th_result r = th_run("%s", cmds[i]);
        cr_assert_eq(r.status, 2, "%s: exit %d", cmds[i], r.status);
        cr_assert(strstr(r.err, "needs a value") != NULL, "%s:\n%s", cmds[i], r.err);
        th_free(&r);
    }
}

/* ---------------- one option parser behaviour for every command ---------------- */

/* The six commands that take options, with arguments each would otherwise accept, and a flag of each. */
static const struct {
    const char *cmd, *args, *flag;
} opt_cmds[] = {
    {"plan", "configs/tiny.yaml", "--help"},
    {"model", "configs/tiny.yaml", "--explain"},
    {"sweep", "configs/tiny.yaml --vary workload.batch=1,2 --out /tmp/vpsim-never-written.csv", "--restart"},
    {"calibrate", "configs/default.yaml --results traces/samples/h200-none-graph.results.json", "--help"},
    {"bench-allreduce", "--device cpu --backend mpi --sizes 16 -n 1 -w 0", "--graph"},
    {"run", "configs/tiny.yaml --device cpu --backend none --iters 1 --warmup 0 --instrumented 1", "--check"},
};
#define N_OPT_CMDS (sizeof(opt_cmds) / sizeof(opt_cmds[0]))

Test(cli_bad, combined_short_options_name_the_argument_typed)
{
    for (size_t i = 0; i < N_OPT_CMDS; i++) {
        char *want = util_xasprintf("vpsim %s: unknown option '-z' (in '-zq')", opt_cmds[i].cmd);
        th_expect_bad(th_run("%s %s -zq", opt_cmds[i].cmd, opt_cmds[i].args), want, "--help");
        free(want);
    }
    /* Before the positional argument (getopt moves it behind the options), first in the cluster, alone. */
    th_expect_bad(th_run("plan -zq configs/tiny.yaml"), "vpsim plan: unknown option '-z' (in '-zq')", "");
    th_expect_bad(th_run("model configs/tiny.yaml -qz"), "vpsim model: unknown option '-q' (in '-qz')", "");
    th_expect_bad(th_run("run configs/tiny.yaml -z"), "vpsim run: unknown option '-z'\n", "");
    /* A known option in a cluster takes the rest as its value; an unknown one before it is named. */
    th_expect_bad(th_run("bench-allreduce --device cpu -zn 5"), "unknown option '-z' (in '-zn')", "");
    th_expect_bad(th_run("bench-allreduce --device cpu -nz"), "-n/--iters 'z': expected an integer", "");
    th_expect_bad(th_run("bench-allreduce --device cpu -b"), "option '-b' needs a value", "");
}

Test(cli_bad, a_value_given_to_a_flag_is_named)
{
    for (size_t i = 0; i < N_OPT_CMDS; i++) {
        char *want = util_xasprintf("vpsim %s: option '%s' takes no value (got '%s=1')", opt_cmds[i].cmd,
                                    opt_cmds[i].flag, opt_cmds[i].flag);
        th_expect_bad(th_run("%s %s %s=1", opt_cmds[i].cmd, opt_cmds[i].args, opt_cmds[i].flag), want, "");
        free(want);
    }
    th_expect_bad(th_run("sweep --no-such=1"), "vpsim sweep: unknown option '--no-such'\n", "");
}

/* Every numeric option refuses the same values the same way: exit 2, the option and value named. */
Test(cli_bad, numeric_options_take_plain_decimals_only)
{
    static const struct {
        const char *cmd, *opt, *named;
    } opts[] = {
        {"run configs/tiny.yaml --device cpu --backend none", "--iters", "--iters"},
        {"run configs/tiny.yaml --device cpu --backend none", "--warmup", "--warmup"},
        {"run configs/tiny.yaml --device cpu --backend none", "--instrumented", "--instrumented"},
        {"run configs/tiny.yaml --device cpu --backend none --check", "--debug-corrupt-rank", "--debug-corrupt-rank"},
        {"run configs/tiny.yaml --device cpu --backend none", "--timeout", "--timeout"},
        {"run configs/tiny.yaml --device cpu --backend none", "--max-host-memory", "--max-host-memory"},
        {"bench-allreduce --device cpu --sizes 16", "-n", "-n/--iters"},
        {"bench-allreduce --device cpu --sizes 16", "--iters", "-n/--iters"},
        {"bench-allreduce --device cpu --sizes 16", "-w", "-w/--warmup"},
        {"bench-allreduce --device cpu", "-f", "-f/--stepfactor"},
        {"bench-allreduce --device cpu --sizes 16", "--timeout", "--timeout"},
        {"bench-allreduce --device cpu", "-b", "-b/--minbytes"},
        {"bench-allreduce --device cpu", "-e", "-e/--maxbytes"},
        {"model configs/tiny.yaml", "--bench", "--bench"},
    };
    static const char *const bad[] = {"0x10", "0x1p-1", "inf", "nan", "", "4x", " 4", "4 ", "+4", "1e3", "4.0",
                                      "99999999999999999999", "--"};
    const size_t n_opts = sizeof(opts) / sizeof(opts[0]), n_bad = sizeof(bad) / sizeof(bad[0]);
    /* Every value against one option of each of the two parsers (integers: run --iters; sizes: -b), then
     * every other option with one value in turn, so every option and every value are seen without
     * running all the pairs (a process start costs ~0.3 s). */
    for (size_t i = 0; i < n_opts; i++)
        for (size_t k = 0; k < n_bad; k++) {
            if (i != 0 && i != 11 && k != i % n_bad)
                continue;
            char *want = util_xasprintf("%s '%s': expected ", opts[i].named, bad[k]);
            th_expect_bad(th_run("%s %s '%s'", opts[i].cmd, opts[i].opt, bad[k]), want, "--help");
            free(want);
        }
}

Test(cli_bad, model_bench_has_a_documented_bound)
{
    /* Unbounded, this ran for days: a regression must fail, not hang the suite. */
    const char *bin = getenv("VPSIM_BIN");
    th_expect_bad(th_sh("timeout 30 '%s' model configs/tiny.yaml --bench 1000000000000", bin ? bin : "build/vpsim"),
                   "--bench '1000000000000': expected an integer in [1, 1000000]", "");
    th_expect_bad(th_run("model configs/tiny.yaml --bench 1000001"), "--bench '1000001'", "[1, 1000000]");
    th_expect_bad(th_run("model configs/tiny.yaml --bench 0"), "--bench '0'", "[1, 1000000]");
    th_result r = th_run("model --help");
    cr_assert_not_null(strstr(r.out, "N in [1, 1000000]"), "the bound is not in the help:\n%s", r.out);
    th_free(&r);
}

Test(cli_bad, inject_fault_numbers_are_plain_decimals)
{
    /* CALL 99999 is never reached, so a value that slipped through would run to exit 0. */
    const char *cmds[] = {"run configs/tiny.yaml --device cpu --backend none --iters 1 --warmup 0 --instrumented 1",
                          "bench-allreduce --device cpu --backend mpi --sizes 16 -n 1 -w 0"};
    const char *bad[] = {"stall:+0:99999:1", "stall: 0:99999:1", "stall:0:+99999:1", "stall:0:99999: 1",
                         "stall:0:99999:+1"};
    for (size_t i = 0; i < 2; i++)
        for (size_t k = i; k < sizeof(bad) / sizeof(bad[0]); k += 2) {
            char *want = util_xasprintf("--inject-fault '%s': ", bad[k]);
            th_expect_bad(th_run("%s --inject-fault '%s'", cmds[i], bad[k]), want, "each a plain decimal");
            free(want);
        }
}

/* ---------------- lists: no silent truncation, no empty items ---------------- */

Test(cli_bad, bench_sizes_refuse_empty_items_and_junk_naming_the_item)
{
    const char *base = "bench-allreduce --device cpu --backend mpi -n 1 -w 0";
    th_expect_bad(th_run("%s --sizes 16,,32", base), "--sizes: item 2 of 3 is empty", "single commas");
    th_expect_bad(th_run("%s --sizes 16,32,", base), "--sizes: item 3 of 3 is empty", "");
    th_expect_bad(th_run("%s --sizes ,16", base), "--sizes: item 1 of 2 is empty", "");
    th_expect_bad(th_run("%s --sizes ''", base), "--sizes: item 1 of 1 is empty", "");
    th_expect_bad(th_run("%s --sizes 16,32x,64", base), "--sizes item 2 '32x': expected a size in bytes", "");
    th_expect_bad(th_run("%s --sizes 16,0x40", base), "--sizes item 2 '0x40'", "");
    th_expect_bad(th_run("%s --sizes '16, 32'", base), "--sizes item 2 ' 32'", "");
    th_expect_bad(th_run("%s --backend mpi,,mpi --sizes 16", base), "--backend: item 2 of 3 is empty", "");
    th_expect_bad(th_run("model configs/tiny.yaml --backend nccl,,mpi"), "--backend: item 2 of 3 is empty", "");
    th_expect_bad(th_run("model configs/tiny.yaml --backend nccl,"), "--backend: item 2 of 2 is empty", "");
}

Test(cli_bad, bench_lists_longer_than_1023_characters_are_read_whole)
{
    /* 400 repeats of one size (deduplicated) then a distinct last one: 1,605 characters. */
    util_buf b = {0};
    for (int i = 0; i < 400; i++)
        util_buf_printf(&b, "16,");
    util_buf_printf(&b, "43008");
    th_result r = th_run("bench-allreduce --device cpu --backend mpi -n 1 -w 0 --sizes %s", b.s);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_not_null(strstr(r.out, "43008"), "the last size was cut:\n%s", r.out);
    int rows = 0;
    for (const char *p = r.out; (p = strstr(p, "\n ")); p++)
        rows += p[strspn(p + 1, " ") + 1] >= '0' && p[strspn(p + 1, " ") + 1] <= '9';
    cr_assert_eq(rows, 2, "want exactly the rows 16 and 43008, got %d:\n%s", rows, r.out);
    th_free(&r);
    /* Junk at the end of such a list is seen, not cut off. */
    b.len -= 5;
    util_buf_printf(&b, "junk");
    th_expect_bad(th_run("bench-allreduce --device cpu --backend mpi -n 1 -w 0 --sizes %s", b.s),
                   "--sizes item 401 'junk'", "");
    util_buf_free(&b);
    /* The same for a long --backend list. */
    for (int i = 0; i < 100; i++)
        util_buf_printf(&b, "mpi,");
    util_buf_printf(&b, "bogus");
    th_expect_bad(th_run("bench-allreduce --device cpu -n 1 -w 0 --sizes 16 --backend %s", b.s),
                   "--backend 'bogus': valid choices", "");
    util_buf_free(&b);
}

Test(cli_bad, bench_sizes_beyond_the_limit_are_refused_naming_it)
{
    util_buf b = {0};
    for (int i = 1; i <= 112; i++)
        util_buf_printf(&b, "%s%d", i > 1 ? "," : "", 16 * i);
    th_result r = th_run("bench-allreduce --device cpu --backend mpi -n 1 -w 0 --sizes %s", b.s);
    cr_assert_eq(r.status, 0, "112 sizes fit: %s", r.err);
    cr_assert_not_null(strstr(r.out, " 1792 "), "the 112th size is missing:\n%s", r.out);
    th_free(&r);
    util_buf_printf(&b, ",%d", 16 * 113);
    th_expect_bad(th_run("bench-allreduce --device cpu --backend mpi -n 1 -w 0 --sizes %s", b.s),
                   "--sizes: item 113 '1808' is distinct size number 113; at most 112 distinct sizes", "");
    util_buf_free(&b);
    th_result h = th_run("bench-allreduce --help");
    cr_assert_not_null(strstr(h.out, "at most 112"), "%s", h.out);
    th_free(&h);
}

Test(cli_bad, bench_set_without_a_scenario_is_checked_and_said)
{
    th_expect_bad(th_run("bench-allreduce --device cpu --backend mpi -n 1 -w 0 --sizes 16 --set workload.batch=0"),
                   "--set 'workload.batch=0': ", "out of range");
    th_expect_bad(th_run("bench-allreduce --device cpu --backend mpi -n 1 -w 0 --sizes 16 --set workload.batchx=2"),
                   "--set 'workload.batchx=2': ", "unknown key");
    /* A valid one reaches only run.timeout and the model without a scenario: a note says so. */
    th_result r = th_run("bench-allreduce --device cpu --backend mpi -n 1 -w 0 --sizes 16 --set workload.batch=4");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_not_null(strstr(r.err, "note: without a SCENARIO, --set and --system reach only run.timeout"), "%s",
                       r.err);
    th_free(&r);
}
