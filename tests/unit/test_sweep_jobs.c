/* vpsim sweep --jobs N: the points modelled by N worker processes give the same CSV and summary, byte
 * for byte, as one process, interrupted (--limit, SIGINT) and resumed included; a bad N is refused. */
#include "../../sim/util/util.h"
#include "test_helpers.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 2 x 3 x 12 = 72 points of the default scenario over 3 backends: more blocks of 16 than workers. */
#define VARY                                                                                                           \
    "--vary speculative.steps=1..2 --vary workload.batch=1,2,4 "                                                      \
    "--vary workload.context=1024,2048,3072,4096,5120,6144,7168,8192,9216,10240,11264,12288 "                         \
    "--backend nccl,oneshot,push --set 'speculative.acceptance=[0.8,0.6]'"

static char *tmpdir(void)
{
    char *dir = util_xstrdup("/tmp/vpsim-jobs-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    return dir;
}

static char *slurp_in(const char *dir, const char *name)
{
    char *path = util_xasprintf("%s/%s", dir, name);
    char *text = th_slurp(path);
    free(path);
    return text;
}

/* The summary names the CSV it wrote: compare the rest. */
static char *without_path(const char *text, const char *path)
{
    util_buf b = {0};
    const size_t n = strlen(path);
    for (const char *p = text; *p;) {
        const char *hit = strstr(p, path);
        if (!hit) {
            util_buf_printf(&b, "%s", p);
            break;
        }
        util_buf_printf(&b, "%.*sOUT", (int)(hit - p), p);
        p = hit + n;
    }
    return b.s ? b.s : util_xstrdup("");
}

static th_result sweep_to(const char *dir, const char *name, const char *extra)
{
    return th_run("sweep configs/default.yaml " VARY " --out '%s/%s' %s", dir, name, extra);
}

Test(sweep_jobs, two_jobs_write_the_csv_and_summary_of_one, .timeout = 120)
{
    char *dir = tmpdir();
    th_result one = sweep_to(dir, "one.csv", "--jobs 1");
    cr_assert_eq(one.status, 0, "%s", one.err);
    cr_assert_not_null(strstr(one.err, "(1 process)"), "%s", one.err);
    th_result two = sweep_to(dir, "two.csv", "--jobs 2");
    cr_assert_eq(two.status, 0, "%s", two.err);
    cr_assert_not_null(strstr(two.err, "(2 processes)"), "the workers ran: %s", two.err);
    char *a = slurp_in(dir, "one.csv"), *b = slurp_in(dir, "two.csv");
    cr_assert_not_null(a);
    cr_assert_not_null(b);
    cr_assert_gt(strlen(a), 1000);
    cr_assert_str_eq(b, a, "--jobs 2 must write the CSV of --jobs 1");
    char *p1 = util_xasprintf("%s/one.csv", dir), *p2 = util_xasprintf("%s/two.csv", dir);
    char *s1 = without_path(one.out, p1), *s2 = without_path(two.out, p2);
    cr_assert_str_eq(s2, s1, "and the same summary");
    free(a), free(b), free(p1), free(p2), free(s1), free(s2);
    th_free(&one);
    th_free(&two);
    th_result rm = th_sh("rm -rf '%s'", dir);
    th_free(&rm);
    free(dir);
}

Test(sweep_jobs, stopped_and_resumed_with_jobs_equals_one_uninterrupted_run, .timeout = 120)
{
    char *dir = tmpdir();
    th_result one = sweep_to(dir, "one.csv", "--jobs 1");
    cr_assert_eq(one.status, 0, "%s", one.err);
    /* 40 points in two workers (blocks 0-15 and 32-39 on one, 16-31 on the other), then the rest with 2. */
    th_result part = sweep_to(dir, "r.csv", "--jobs 2 --limit 40");
    cr_assert_eq(part.status, 1, "--limit stops with exit 1: %s", part.err);
    cr_assert_not_null(strstr(part.err, "after 40 of 72 scenarios"), "%s", part.err);
    th_result rest = sweep_to(dir, "r.csv", "--jobs 2");
    cr_assert_eq(rest.status, 0, "%s", rest.err);
    cr_assert_not_null(strstr(rest.err, "resuming: 40 of 72"), "%s", rest.err);
    char *a = slurp_in(dir, "one.csv"), *b = slurp_in(dir, "r.csv");
    cr_assert_not_null(b);
    cr_assert_str_eq(b, a, "stopped and resumed with workers, the CSV of one uninterrupted process");
    free(a), free(b);
    th_free(&one);
    th_free(&part);
    th_free(&rest);
    th_result rm = th_sh("rm -rf '%s'", dir);
    th_free(&rm);
    free(dir);
}

/* 72 x 20 = 1,440 points: a second of work in a release build (a minute under ASan), so a signal sent
 * once the first points are in lands mid-way. */
#define BIG VARY " --vary system.links.socket_gbs=5..24"

Test(sweep_jobs, sigint_stops_every_worker_and_the_resume_completes_the_same_csv, .timeout = 240)
{
    char *dir = tmpdir();
    /* Ctrl-C once the partial file holds some records: the parent and both workers stop after their
     * current point, and what they sent stays in the partial file. */
    th_result r = th_sh("cd '%s' && { %s sweep %s/configs/default.yaml " BIG " --jobs 2 --out big.csv 2>err.txt & "
                        "pid=$!; for i in $(seq 2000); do [ \"$(grep -c '^=' big.csv.partial 2>/dev/null)\" -gt 20 ] && break; "
                        "sleep 0.01; done; kill -INT $pid; wait $pid; echo rc=$?; }",
                        dir, getenv("VPSIM_BIN"), getenv("VPSIM_ROOT"));
    cr_assert_eq(r.status, 0, "%s", r.err);
    char *err = slurp_in(dir, "err.txt");
    cr_assert_not_null(err);
    cr_assert_not_null(strstr(r.out, "rc=1"), "an interrupted sweep exits 1: %s / %s", r.out, err);
    cr_assert_not_null(strstr(err, "interrupted after"), "%s", err);
    free(err);
    th_result rest = th_run("sweep %s/configs/default.yaml " BIG " --jobs 2 --out '%s/big.csv'", getenv("VPSIM_ROOT"), dir);
    cr_assert_eq(rest.status, 0, "%s", rest.err);
    cr_assert_not_null(strstr(rest.err, "resuming:"), "%s", rest.err);
    /* The reference uninterrupted (with workers too: that --jobs changes nothing is the first test's). */
    th_result full = th_run("sweep %s/configs/default.yaml " BIG " --jobs 2 --out '%s/full.csv'", getenv("VPSIM_ROOT"), dir);
    cr_assert_eq(full.status, 0, "%s", full.err);
    char *a = slurp_in(dir, "full.csv"), *b = slurp_in(dir, "big.csv");
    cr_assert_not_null(b);
    cr_assert_str_eq(b, a, "interrupted and resumed with workers, the CSV of an uninterrupted run");
    free(a), free(b);
    th_free(&r);
    th_free(&rest);
    th_free(&full);
    th_result rm = th_sh("rm -rf '%s'", dir);
    th_free(&rm);
    free(dir);
}

Test(sweep_jobs, a_bad_job_count_is_refused_naming_the_range)
{
    const char *bad[] = {"0", "-1", "257", "two", "1.5"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        th_result r = th_run("sweep configs/tiny.yaml --vary workload.batch=1,2 --out /tmp/vpsim-jobs-never.csv "
                             "--jobs %s", bad[i]);
        cr_assert_eq(r.status, 2, "--jobs %s: exit %d\n%s", bad[i], r.status, r.err);
        cr_assert_not_null(strstr(r.err, "--jobs"), "%s", r.err);
        th_free(&r);
    }
}
