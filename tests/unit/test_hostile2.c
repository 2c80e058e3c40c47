/* Hostile inputs, round 2: each class of mishandled case gets its root fix and a test here
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
static char *h2_shm(void)
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
    /* 1,500 points listed one a line (--top): a summary of ~130 KB, twice a pipe's buffer, so the sweep
     * is still writing when the reader leaves. */
    char *args = util_xasprintf("sweep configs/tiny.yaml --vary workload.batch=1..500 --vary workload.context=256,512,"
                                "1024 --backend none --top 2000 --out '%s' 2>/dev/null",
                                csv);
    th_result r = th_sh("(%s %s; echo \"status=$?\" >&2) | head -c 10 >/dev/null", h2_bin(), args);
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
    a = util_xasprintf("calibrate configs/default.yaml --system configs/systems/h200-1x.yaml --results '%s' --ops gemm --out '%s'", res, res);
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
    cr_assert_not_null(csv);
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
    cr_assert_not_null(out);
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

/* ---------------------------------------------------------------- dead ranks named by what they say */

/* The launcher follows its SIGTERM with SIGKILL after odls_base_sigkill_timeout (1 s by default, which a
 * loaded sanitizer build can miss; test_dead_rank.c gives 10 s): 3 s here, since a job's end takes twice
 * that and make check must stay short. */

/* A 2-rank CPU run in which rank 1 pauses (--inject-fault stall) before collective call 50, when start-up
 * is long over; once it says so, `sig` goes to it (SIGSTOP: continued `stop_s` s later). Waiting for
 * its line rather than for a fixed time keeps a slow (sanitizer) build from being signalled while MPI
 * is still starting. stderr of the job, and its status. */
static th_result h2_signal_rank(const char *sig, int stop_s, const char *extra)
{
    th_need_mpirun();
    char *log = th_write_temp("", 0, ".log");
    th_result r = th_sh("export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " TH_MPI_ASAN
                        "OMPI_MCA_odls_base_sigkill_timeout=3; "
                        "mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 '%s' run configs/tiny.yaml "
                        "--device cpu --backend mpi --iters 1000000 --warmup 0 --inject-fault stall:1:50:%d %s "
                        ">/dev/null 2>'%s' & m=$!; "
                        "for i in $(seq 1 600); do grep -q 'inject-fault stall' '%s' && break; sleep 0.1; done; "
                        "v=$(pgrep -P $m | sort -n | tail -1); kill -%s $v; "
                        "if [ %d -gt 0 ]; then sleep %d; kill -CONT $v; fi; "
                        "( sleep 60; kill -9 $m ) 2>/dev/null & w=$!; wait $m; s=$?; kill $w 2>/dev/null; "
                        "cat '%s' >&2; exit $s",
                        h2_bin(), stop_s > 0 ? 1 : 20, extra, log, log, sig, stop_s, stop_s, log);
    unlink(log);
    free(log);
    return r;
}

/* The survivor's line for rank 1. */
static const char *h2_survivor_line(const th_result *r)
{
    const char *line = strstr(r->err, "vpsim[rank 0@");
    for (; line; line = strstr(line + 1, "vpsim[rank 0@"))
        if (strstr(line, "the job lost rank 1 (pid ") && strstr(line, "the job lost rank 1 (pid ") < strchr(line, '\n'))
            return line;
    return NULL;
}

Test(hostile2, a_rank_dead_of_sigsegv_is_named_by_its_signal, .timeout = 90)
{
    th_result r = h2_signal_rank("SEGV", 0, "");
    cr_assert_neq(r.status, 0);
    const char *line = h2_survivor_line(&r);
    cr_assert_not_null(line, "the survivor names rank 1; stderr:\n%s", r.err);
    cr_expect(!strncmp(strstr(line, "the job lost rank 1"), "the job lost rank 1", 19) &&
                  strstr(line, "it died of SIGSEGV") != NULL && strstr(line, "it died of SIGSEGV") < strchr(line, '\n'),
              "named by its signal; stderr:\n%s", r.err);
    cr_expect_null(strstr(r.err, "SIGKILL"), "not called killed; stderr:\n%s", r.err);
    th_free(&r);
}

/* A rank that exits: the job's status (1) and the survivor's line, dead_rank/a_rank_that_exits_*. */

Test(hostile2, a_stopped_rank_is_named_by_the_survivors_watchdog, .timeout = 90)
{
    th_result r = h2_signal_rank("STOP", 3, "--timeout 1");
    cr_assert_neq(r.status, 0);
    const char *line = strstr(r.err, "vpsim[rank 0@");
    cr_assert_not_null(line, "%s", r.err);
    cr_expect(strstr(r.err, "the job cannot go on: rank 1 (pid ") != NULL, "the survivor names the stopped rank:\n%s",
              r.err);
    cr_expect(strstr(r.err, "is stopped (SIGSTOP or a debugger)") != NULL, "%s", r.err);
    /* the stopped rank's own late line, if it got one out, says it was the one stopped */
    const char *late = strstr(r.err, "vpsim[rank 1@");
    if (late)
        cr_expect(strstr(late, "this rank was stopped (SIGSTOP)") != NULL, "%s", r.err);
    cr_expect_null(strstr(r.err, "SIGKILL"), "%s", r.err);
    th_free(&r);
}

/* ---------------------------------------------------------------- files */

Test(hostile2, a_rank_killed_during_link_setup_leaves_nothing_in_dev_shm, .timeout = 90)
{
    th_need_mpirun();
    char *before = h2_shm();
    char *out = th_write_temp("", 0, ".yaml");
    /* rank 2 of 3 is killed (SIGKILL) as soon as a link segment exists: the set-up is under way */
    th_result r = th_sh("export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " TH_MPI_ASAN
                        "OMPI_MCA_odls_base_sigkill_timeout=3; "
                        "mpirun --allow-run-as-root --oversubscribe --bind-to none -np 3 '%s' probe configs/tiny.yaml "
                        "--device cpu --base configs/systems/h200-1x.yaml --out '%s' >/dev/null & m=$!; "
                        "for i in $(seq 1 20000); do ls /dev/shm 2>/dev/null | grep -q '^vpsim-links' && break; done; "
                        "kill -9 $(pgrep -P $m | sort -n | tail -1) 2>/dev/null; "
                        "( sleep 60; kill -9 $m ) 2>/dev/null & w=$!; wait $m; s=$?; kill $w 2>/dev/null; sleep 0.3; "
                        "exit $s",
                        h2_bin(), out);
    /* Other tests run beside this one and hold segments for moments: a leak is a segment that was not
     * there before and is still there a second later. */
    char *after = h2_shm();
    sleep(1);
    char *later = h2_shm();
    for (const char *l = after; *l;) {
        const char *nl = strchr(l, '\n');
        char *name = util_xstrndup(l, nl ? (size_t)(nl - l) : strlen(l));
        char *line = util_xasprintf("%s\n", name);
        const bool leaked = !strstr(before, line) && strstr(later, line);
        cr_expect(!leaked, "%s left in /dev/shm; stderr:\n%s", name, r.err);
        free(line);
        free(name);
        l = nl ? nl + 1 : l + strlen(l);
    }
    th_free(&r);
    free(before);
    free(after);
    free(later);
    unlink(out);
    free(out);
}

Test(hostile2, plan_csv_quotes_names_with_commas_and_newlines)
{
    const char *py = "import json, sys\np = json.load(sys.stdin)\np['phases'][0]['ops'][0]['name'] = 'a,b\\n\"c'\n"
                     "json.dump(p, sys.stdout)\n";
    char *script = th_write_temp(py, strlen(py), ".py");
    char *plan = th_write_temp("", 0, ".json");
    th_result r = th_sh("%s plan configs/tiny.yaml --format json | python3 '%s' > '%s'", h2_bin(), script, plan);
    cr_assert_eq(r.status, 0, "%s", r.err);
    th_free(&r);
    /* every row of the CSV has the header's column count, and the name reads back as written */
    const char *check = "import csv, sys\nrows = list(csv.reader(sys.stdin))\n"
                        "assert all(len(x) == len(rows[0]) for x in rows), 'ragged rows'\n"
                        "assert rows[1][3] == 'a,b\\n\"c', rows[1][3]\nprint(len(rows))\n";
    char *checker = th_write_temp(check, strlen(check), ".py");
    r = th_sh("%s plan --plan '%s' --format csv | python3 '%s'", h2_bin(), plan, checker);
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    th_free(&r);
    unlink(script);
    unlink(plan);
    unlink(checker);
    free(script);
    free(plan);
    free(checker);
}

Test(hostile2, sweep_never_copies_an_edited_partial_row)
{
    char *a = th_write_temp("", 0, ".csv"), *b = th_write_temp("", 0, ".csv");
    th_result r = th_run("sweep configs/tiny.yaml --vary workload.batch=1..4 --backend none --out '%s'", a);
    cr_assert_eq(r.status, 0, "%s", r.err);
    th_free(&r);
    r = th_run("sweep configs/tiny.yaml --vary workload.batch=1..4 --backend none --out '%s' --limit 2", b);
    cr_assert_eq(r.status, 1, "%s", r.err);
    th_free(&r);
    /* a hand edit of a finished row: an extra field in the first record */
    r = th_sh("sed -i '0,/^r 1,none,true/s//r 1,none,true,999/' '%s.partial' && grep -c ',999,' '%s.partial'", b, b);
    cr_assert_eq(r.status, 0, "the edit took: %s", r.err);
    th_free(&r);
    r = th_run("sweep configs/tiny.yaml --vary workload.batch=1..4 --backend none --out '%s'", b);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.err, "do not match their digest") != NULL, "the edit is noticed: %s", r.err);
    th_free(&r);
    char *ta = th_slurp(a), *tb = th_slurp(b);
    cr_expect(ta && tb && !strcmp(ta, tb), "the resumed sweep equals a fresh one");
    free(ta);
    free(tb);
    unlink(a);
    unlink(b);
    free(a);
    free(b);
}

Test(hostile2, sweep_partial_with_a_truncated_header_is_not_another_sweep)
{
    char *out = th_write_temp("", 0, ".csv");
    char *partial = util_xasprintf("%s.partial", out);
    FILE *f = fopen(partial, "w");
    fputs("# vpsim sweep partial 4\n# scen", f);
    fclose(f);
    th_result r = th_run("sweep configs/tiny.yaml --vary workload.batch=1,2 --backend none --out '%s'", out);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect_null(strstr(r.err, "different sweep"), "%s", r.err);
    th_free(&r);
    unlink(partial);
    unlink(out);
    free(partial);
    free(out);
}
