/* Acceptance keys through the loader and the binary: measured accept lengths (speculative.accept_length,
 * speculative.accept_table), rank rates, num_draft_tokens derived for a chain, the errors, and the tokens
 * line of `vpsim model`. The tree itself: test_accept.c. */
#include "../../sim/config/cfg.h"
#include "../../sim/config/cfg_accept.h"
#include "../../sim/util/util.h"
#include "test_helpers.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void load_ok(const char *const *sets, int n, cfg_scenario *sc)
{
    cfg_error err = {{0}};
    cr_assert_eq(cfg_scenario_load(th_path("configs/default.yaml"), sets, n, NULL, sc, &err), 0, "%s", err.msg);
}

static void load_fails(const char *path, const char *const *sets, int n, const char *want1, const char *want2)
{
    cfg_scenario sc;
    cfg_error err = {{0}};
    cr_assert_eq(cfg_scenario_load(path, sets, n, NULL, &sc, &err), -1, "should fail: %s", want1);
    cr_assert_not_null(strstr(err.msg, want1), "want '%s' in: %s", want1, err.msg);
    if (want2)
        cr_assert_not_null(strstr(err.msg, want2), "want '%s' in: %s", want2, err.msg);
}

static double eval(const cfg_scenario *sc, cfg_accept *a)
{
    cfg_accept_eval(sc, a);
    return a->tokens;
}

/* ---------------- measured accept lengths ---------------- */

Test(accept_measured, accept_length_overrides_the_model_and_says_so)
{
    const char *sets[] = {"speculative.accept_length=2.8"};
    cfg_scenario sc;
    load_ok(sets, 1, &sc);
    cfg_accept a;
    cr_assert_float_eq(eval(&sc, &a), 2.8, 1e-12);
    cr_assert_eq(a.source, CFG_ACCEPT_MEASURED);
    cr_assert_float_eq(a.model_tokens, 2.2, 1e-12, "the chain 1 + 0.75 + 0.45 stays visible");
    cr_assert_not_null(strstr(a.explain, "speculative.accept_length"), "%s", a.explain);
    cr_assert_not_null(strstr(a.explain, "2.200"), "%s", a.explain);
    cr_assert_str_eq(cfg_accept_source_names[a.source], "accept_length");
    cfg_scenario_free(&sc);
}

Test(accept_measured, the_table_row_of_the_shape_is_used)
{
    const char *table = "speculative.accept_table=[{steps: 2, accept_length: 2.5}, {steps: 3, accept_length: 2.9}, "
                        "{steps: 3, topk: 4, num_draft_tokens: 8, accept_length: 3.4}]";
    cfg_scenario sc;
    cfg_accept a;
    const char *s2[] = {table};
    load_ok(s2, 1, &sc);
    cr_assert_float_eq(eval(&sc, &a), 2.5, 1e-12);
    cr_assert_eq(a.source, CFG_ACCEPT_TABLE);
    cr_assert_eq(a.table_row, 0);
    cfg_scenario_free(&sc);

    const char *s3[] = {table, "speculative.steps=3", "speculative.topk=4", "speculative.num_draft_tokens=8"};
    load_ok(s3, 4, &sc);
    cr_assert_float_eq(eval(&sc, &a), 3.4, 1e-12);
    cr_assert_eq(a.table_row, 2);
    cr_assert_not_null(strstr(a.explain, "accept_table[2]"), "%s", a.explain);
    cfg_scenario_free(&sc);

    /* No row for steps=4: the model, and it says which. */
    const char *s4[] = {table, "speculative.steps=4"};
    load_ok(s4, 2, &sc);
    eval(&sc, &a);
    cr_assert_eq(a.source, CFG_ACCEPT_CHAIN);
    cr_assert_float_eq(a.tokens, 1.0 + 0.75 + 0.45 + 0.27 + 0.162, 1e-12);
    cfg_scenario_free(&sc);

    /* accept_length wins over a matching row. */
    const char *both[] = {table, "speculative.accept_length=2.1"};
    load_ok(both, 2, &sc);
    cr_assert_float_eq(eval(&sc, &a), 2.1, 1e-12);
    cr_assert_eq(a.source, CFG_ACCEPT_MEASURED);
    cfg_scenario_free(&sc);
}

Test(accept_measured, per_depth_rank_rates)
{
    /* steps 2, topk 2, ndt 4: candidates 0.75, 0.2 (row 0), then 0.75 x 0.6 = 0.45, 0.75 x 0.3 = 0.225 (row 1),
     * 0.2 x 0.6, 0.2 x 0.3. The three best: 0.75, 0.45, 0.225 (with row 0 at depth 2 it would be 0.2). */
    const char *sets[] = {"speculative.topk=2", "speculative.num_draft_tokens=4",
                          "speculative.rank_acceptance=[[0.2], [0.3]]"};
    cfg_scenario sc;
    load_ok(sets, 3, &sc);
    cfg_accept a;
    cr_assert_float_eq(eval(&sc, &a), 1.0 + 0.75 + 0.45 + 0.225, 1e-12);
    cr_assert_eq(sc.speculative.rank_acceptance.n_rows, 2);
    cr_assert(sc.speculative.rank_acceptance.per_depth);
    cr_assert_float_eq(cfg_accept_rate(&sc, 2, 1, NULL), 0.3, 1e-12);
    cr_assert_float_eq(cfg_accept_rate(&sc, 2, 2, NULL), 0.0, 1e-12, "unlisted ranks are never accepted");
    bool ex = false;
    cr_assert_float_eq(cfg_accept_rate(&sc, 3, 1, &ex), 0.3, 1e-12);
    cr_assert(ex, "depth 3 reuses the last row");
    cfg_scenario_free(&sc);
}

Test(accept_measured, num_draft_tokens_is_derived_for_a_chain)
{
    const char *sets[] = {"speculative.steps=4"};
    cfg_scenario sc;
    load_ok(sets, 1, &sc);
    cr_assert_eq(sc.speculative.num_draft_tokens, 5);
    cfg_scenario_free(&sc);
}

/* ---------------- errors ---------------- */

Test(accept_errors, rates_of_one_depth_must_sum_to_at_most_1)
{
    const char *dflt = th_path("configs/default.yaml");
    const char *flat[] = {"speculative.topk=4", "speculative.num_draft_tokens=8", "speculative.rank_acceptance=[0.2, 0.1]"};
    load_fails(dflt, flat, 3, "--set 'speculative.rank_acceptance=[0.2, 0.1]': ", "sum to 1.05");
    /* The same rates at topk=2 count rank 1 only: 0.75 + 0.2. */
    flat[0] = "speculative.topk=2";
    flat[1] = "speculative.num_draft_tokens=4";
    cfg_scenario sc;
    load_ok(flat, 3, &sc);
    cfg_scenario_free(&sc);

    /* In a file, the message points at the offending depth's row. */
    char *text = util_xasprintf("name: t\nmodel: %s\ndraft: %s\nsystem: %s\nspeculative:\n  steps: 2\n  topk: 3\n"
                                "  num_draft_tokens: 5\n  acceptance: [0.7, 0.6]\n"
                                "  rank_acceptance:\n    - [0.1]\n    - [0.3, 0.2]\n",
                                th_path("models/tiny-moe.yaml"), th_path("models/tiny-eagle3.yaml"),
                                th_path("configs/systems/h200-1x.yaml"));
    char *path = th_write_temp(text, strlen(text), ".yaml");
    char *where = util_xasprintf("%s:12:7: ", path);
    load_fails(path, NULL, 0, where, "at depth 2");
    unlink(path);
    free(where);
    free(path);
    free(text);
}

Test(accept_errors, bad_rank_rates_accept_lengths_and_shapes)
{
    const char *dflt = th_path("configs/default.yaml");
    const char *mixed[] = {"speculative.rank_acceptance=[0.1, [0.2]]"};
    load_fails(dflt, mixed, 1, "rank_acceptance[1]: expected a number", NULL);
    const char *big[] = {"speculative.rank_acceptance=[1.5]"};
    load_fails(dflt, big, 1, "rank_acceptance[0]: 1.5 is out of range", NULL);
    const char *low[] = {"speculative.accept_length=0.5"};
    load_fails(dflt, low, 1, "--set 'speculative.accept_length=0.5': ", "[1, 3]");
    /* A tree of steps 2 accepts at most 2 drafted tokens + the bonus, however many it verifies. */
    const char *high[] = {"speculative.topk=4", "speculative.num_draft_tokens=8", "speculative.accept_length=3.5"};
    load_fails(dflt, high, 3, "accept_length=3.5", "[1, 3]");
    const char *shape[] = {"speculative.topk=4", "speculative.num_draft_tokens=22"};
    load_fails(dflt, shape, 2, "num_draft_tokens=22", "[2, 21]");
    const char *no_ndt[] = {"speculative.topk=4"};
    load_fails(dflt, no_ndt, 1, "--set 'speculative.topk=4': ", "set speculative.num_draft_tokens");
    const char *explicit_bad[] = {"speculative.steps=3", "speculative.num_draft_tokens=3"};
    load_fails(dflt, explicit_bad, 2, "inconsistent", "steps + 1 = 4");
    const char *row_shape[] = {"speculative.accept_table=[{steps: 2, num_draft_tokens: 4, accept_length: 2}]"};
    load_fails(dflt, row_shape, 1, "accept_table[0]: num_draft_tokens=4 with topk=1", NULL);
    const char *row_len[] = {"speculative.accept_table=[{steps: 2, accept_length: 3.2}]"};
    load_fails(dflt, row_len, 1, "accept_table[0]: accept_length=3.2", "at most 3");
    const char *dup[] = {"speculative.accept_table=[{steps: 2, accept_length: 2}, {steps: 2, accept_length: 2.1}]"};
    load_fails(dflt, dup, 1, "accept_table[1]: the same", "row 0");
    const char *typo[] = {"speculative.accept_table=[{step: 2, accept_length: 2}]"};
    load_fails(dflt, typo, 1, "unknown key 'speculative.accept_table[0].step'", NULL);
}

/* ---------------- the binary ---------------- */

Test(accept_cli, model_prints_the_tree_source_and_the_warning)
{
    th_result r = th_run("model configs/default.yaml --set speculative.topk=4 --set speculative.num_draft_tokens=8 "
                         "--set speculative.steps=3 --backend nccl");
    cr_assert_eq(r.status, 0, "%s", r.err);
    /* 1 + depth 1 (0.75 + 0.1 + 0.05) + depth 2 (0.45 + 0.075 + 0.06) + depth 3 (0.27) = 2.755 */
    cr_assert_not_null(strstr(r.out, "tokens per cycle: tree model (topk=4, 7 of 36 drafted nodes verified): "
                                     "1 + 0.9 + 0.585 + 0.27 = 2.755 by depth"),
                       "%s", r.out);
    cr_assert_not_null(strstr(r.out, "! steps=3 but speculative.acceptance has 2 rates; position 3 reuses 0.6"),
                       "%s", r.out);
    /* host: cycle_overhead_us 800 + tree_overhead_us 30 (the default) = 0.83 ms. */
    cr_assert_not_null(strstr(r.out, "    0.83 "), "%s", r.out);
    th_free(&r);

    r = th_run("model configs/default.yaml --backend nccl");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_not_null(strstr(r.out, "tokens per cycle: chain formula: 1 + 0.75 + 0.75x0.6 = 2.200 ("), "%s", r.out);
    cr_assert_null(strstr(r.out, "warning: steps"), "rates as given: nothing extrapolated: %s", r.out);
    cr_assert_not_null(strstr(r.out, "    0.80 "), "a chain pays no tree overhead: %s", r.out);
    th_free(&r);
}
