/* Plan files are untrusted input: `--plan FILE` goes through the same schema machinery as YAML
 * (sim/plan/plan_json.c), so every mistake is refused with file:line:col and exit 2, before any
 * allocation a device would make from the shapes. Fixtures: tests/data/bad/plan_*.json and
 * tests/data/plan_hand.json edited in temporary files. */
#include "../../sim/util/util.h"
#include "test_helpers.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* plan_hand.json with the first `from` replaced by `to`, in a temporary file (free and unlink it). */
static char *edited_plan(const char *from, const char *to)
{
    char *text = th_slurp(th_path("tests/data/plan_hand.json"));
    cr_assert_not_null(text);
    char *at = strstr(text, from);
    cr_assert_not_null(at, "plan_hand.json lacks '%s'", from);
    util_buf b = {0};
    util_buf_printf(&b, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    char *path = th_write_temp(b.s, b.len, ".json");
    util_buf_free(&b);
    free(text);
    return path;
}

/* Edit plan_hand.json, then `vpsim plan --plan` must refuse it at `linecol` saying `what`. */
static void expect_refused(const char *from, const char *to, const char *linecol, const char *what)
{
    char *path = edited_plan(from, to);
    char *where = util_xasprintf("%s:%s: ", path, linecol);
    th_expect_bad(th_run("plan --plan '%s'", path), where, what);
    free(where);
    unlink(path);
    free(path);
}

Test(plan_json, fixtures_point_at_the_mistake)
{
    th_expect_bad(th_run("plan --plan tests/data/bad/plan_unknown_key.json"), "tests/data/bad/plan_unknown_key.json:19:77: ",
                  "unknown key 'phases[0].ops[0].colour'; valid keys here: kind, name,");
    th_expect_bad(th_run("plan --plan tests/data/bad/plan_bad_value.json"), "tests/data/bad/plan_bad_value.json:19:15: ",
                  "phases[0].ops[0].m: -2 is out of range (must be in [0, 1000000000000])");
    th_expect_bad(th_run("plan --plan tests/data/bad/plan_bad_kind.json"), "tests/data/bad/plan_bad_kind.json:18:18: ",
                  "phases[0].ops[0].kind: unknown value 'conv'; valid choices: gemm, grouped_gemm,");
    th_expect_bad(th_run("plan --plan tests/data/bad/plan_bad_ranks.json"), "tests/data/bad/plan_bad_ranks.json:21:57: ",
                  "phases[0].ops[1].ranks: collectives span ranks 0..N-1");
    th_expect_bad(th_run("plan --plan tests/data/bad/plan_bad_schema.json"), "tests/data/bad/plan_bad_schema.json:2:13: ",
                  "not a vpsim plan");
    th_expect_bad(th_run("plan --plan tests/data/bad/plan_ranks_mismatch.json"),
                  "tests/data/bad/plan_ranks_mismatch.json:21:53: ", "spans 2 ranks but the plan has 4");
    th_expect_bad(th_run("plan --plan tests/data/bad/plan_bad_context.json"), "tests/data/bad/plan_bad_context.json:6:14: ",
                  "context: 4294967296 is out of range (must be in [0, 2147483647])");
    th_expect_bad(th_run("plan --plan tests/data/does-not-exist.json"), "tests/data/does-not-exist.json: ", "cannot open");
    /* A scenario is not a plan. */
    th_expect_bad(th_run("plan --plan configs/tiny.yaml"), "configs/tiny.yaml:", "not a vpsim plan");
}

/* The crash: a grouped GEMM divides its rows among `batch` groups (SIGFPE in dev_cpu.c). */
Test(plan_json, a_zero_batch_is_refused_before_any_device_sees_it)
{
    expect_refused("\"batch\": 1, \"wdtype\"", "\"batch\": 0, \"wdtype\"", "19:43",
                   "phases[0].ops[0].batch: 0 is out of range (must be in [1, 16777216])");
    char *path = edited_plan("{\"kind\": \"gemm\", \"name\": \"proj\"", "{\"kind\": \"grouped_gemm\", \"name\": \"proj\"");
    char *zero = edited_plan("\"batch\": 1, \"wdtype\"", "\"batch\": 0, \"wdtype\"");
    th_result r = th_run("run --plan '%s' --device cpu --backend none --iters 1 --warmup 0", zero);
    cr_assert_eq(r.status, 2, "run --plan with batch 0: status %d (a signal is 128+N)\n%s", r.status, r.err);
    th_free(&r);
    r = th_run("run --plan '%s' --device cpu --backend none --iters 1 --warmup 0", path);
    cr_assert_eq(r.status, 0, "the same plan with batch 1 runs: %s", r.err);
    th_free(&r);
    unlink(path);
    unlink(zero);
    free(path);
    free(zero);
}

/* The other crash: m = n = k = 2^30, batch 16 wrapped a 64-bit byte count to 0. */
Test(plan_json, shapes_past_any_device_are_refused_with_the_limit)
{
    expect_refused("\"m\": 2, \"n\": 8, \"k\": 4, \"batch\": 1",
                   "\"m\": 1073741824, \"n\": 1073741824, \"k\": 1073741824, \"batch\": 16", "18:9",
                   "phases[0].ops[0] (proj): its shapes move");
    expect_refused("\"m\": 2,", "\"m\": 1000000000001,", "19:15", "phases[0].ops[0].m: 1000000000001 is out of range");
}

Test(plan_json, every_field_is_checked)
{
    expect_refused("\"name\": \"proj\"", "\"name\": \"a-name-of-more-than-thirty-one-chars\"", "18:34",
                   "phases[0].ops[0].name: 'a-name-of-more-than-thirty-one-chars...' is longer than 31 characters");
    expect_refused("\"name\": \"proj\", ", "", "18:9", "missing required key 'phases[0].ops[0].name'");
    expect_refused("\"ranks\": [0, 1]", "\"ranks\": [0]", "21:53",
                   "phases[0].ops[1] (allreduce.proj): a collective needs \"ranks\"");
    expect_refused("\"stream\": \"main\"", "\"stream\": \"sidecar\"", "18:64",
                   "phases[0].ops[0].stream: unknown value 'sidecar'; valid choices: main, side");
}

/* A key another kind of op carries (attention's heads on a gemm) would be read and never used: the
 * loader refuses it, as docs/schemas/plan.schema.json does (one table makes both). */
Test(plan_json, a_field_of_another_kind_is_refused)
{
    expect_refused("\"m\": 2, \"n\": 8", "\"heads\": 4, \"m\": 2, \"n\": 8", "19:19",
                   "phases[0].ops[0] (gemm proj): gemm ops have no \"heads\" (query heads on this rank)");
    expect_refused("\"count\": 16,", "\"count\": 16, \"k\": 4,", "21:28",
                   "phases[0].ops[1] (allreduce allreduce.proj): allreduce ops have no \"k\"");
}
