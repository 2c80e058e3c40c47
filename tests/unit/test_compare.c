/* vpsim compare and the memory fit of model / plan results, through the binary. */
#include "../../sim/config/cfg_tree.h"
#include "../../sim/util/util.h"
#include "test_helpers.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static cfg_doc *parse_json(const char *text)
{
    cfg_error err;
    cfg_doc *doc = cfg_doc_load_text(text, strlen(text), "compare.json", false, &err);
    cr_assert_not_null(doc, "%s", err.msg);
    return doc;
}

/* A number, or NAN for null. */
static double num(const cfg_node *map, const char *key)
{
    const cfg_node *n = cfg_map_get(map, key);
    cr_assert_not_null(n, "key %s missing", key);
    if (!strcmp(n->scalar, "null"))
        return NAN;
    return strtod(n->scalar, NULL);
}

static const char *str(const cfg_node *map, const char *key)
{
    const cfg_node *n = cfg_map_get(map, key);
    cr_assert_not_null(n, "key %s missing", key);
    return n->scalar;
}

static th_result compare_json(const char *variants_yaml, const char *extra)
{
    char *path = th_write_temp(variants_yaml, strlen(variants_yaml), ".yaml");
    th_result r = th_run("compare configs/default.yaml --variants %s --format json %s", path, extra);
    unlink(path);
    free(path);
    return r;
}

static const cfg_node *row_named(const cfg_node *rows, const char *name)
{
    for (size_t i = 0; i < rows->n; i++)
        if (!strcmp(str(rows->items[i], "variant"), name))
            return rows->items[i];
    return NULL;
}

/* The shipped plan: rows by tok/s, best first, then the rows that could not be modelled; each gain is
 * tok/s over the baseline row's, as a percentage. */
Test(compare, ranking_follows_tok_per_s_and_gains_the_baseline)
{
    th_result r = th_run("compare configs/default.yaml --variants configs/plans/verify-faster.yaml --format json");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cfg_doc *doc = parse_json(r.out);
    const cfg_node *root = cfg_doc_root(doc);
    cr_assert_str_eq(str(root, "schema"), "vpsim.compare/1");
    const cfg_node *rows = cfg_map_get(root, "rows");
    cr_assert(rows->n >= 16);
    const cfg_node *base = row_named(rows, "baseline NCCL");
    cr_assert_not_null(base);
    cr_assert_str_eq(str(base, "baseline"), "true");
    const double base_tok = num(base, "tok_per_s");
    cr_assert_float_eq(num(base, "gain_pct"), 0.0, 1e-9);
    double prev = INFINITY;
    bool seen_unavailable = false, seen_apart = false;
    for (size_t i = 0; i < rows->n; i++) {
        const cfg_node *row = rows->items[i];
        cr_assert_eq((int)num(row, "rank"), (int)i + 1);
        if (!strcmp(str(row, "available"), "false")) {
            seen_unavailable = true;
            cr_assert(isnan(num(row, "tok_per_s")) && isnan(num(row, "gain_pct")));
            continue;
        }
        cr_assert(!seen_unavailable, "an available row after an unavailable one at rank %zu", i + 1);
        /* Rows whose figure is a formula standing in for an inapplicable measurement come after the
         * others, ranked among themselves. */
        const bool apart = !strcmp(str(row, "ranked_apart"), "true");
        cr_assert(apart || !seen_apart, "rank %zu: a comparable row after a row ranked apart", i + 1);
        if (apart && !seen_apart)
            prev = INFINITY;
        seen_apart |= apart;
        const double tok = num(row, "tok_per_s");
        cr_assert(tok <= prev, "rank %zu: %g tok/s after %g", i + 1, tok, prev);
        prev = tok;
        /* Six significant digits each way: a relative tolerance. */
        cr_assert_float_eq(num(row, "gain_pct"), 100.0 * (tok / base_tok - 1.0), 1e-3 * fabs(tok / base_tok) * 100,
                           "%s", str(row, "variant"));
    }
    /* TP=4 of Kimi-K2.5 needs more than the 95.6 GiB of a card: unranked, with the figures. */
    const cfg_node *tp4 = row_named(rows, "TP=4");
    cr_assert_str_eq(str(tp4, "available"), "false");
    cr_assert_str_eq(str(tp4, "fits"), "false");
    cr_assert(num(tp4, "memory_gib") > num(tp4, "memory_capacity_gib"));
    cr_assert(strstr(str(tp4, "reason"), "does not fit: needs"));
    /* The custom allreduce on 8 PCIe GPUs: SGLang gates it off. */
    const cfg_node *one = row_named(rows, "custom oneshot");
    cr_assert(strstr(str(cfg_map_get(one, "engine"), "needs"), "needs a patch"));
    cr_assert_str_eq(str(one, "source"), "formula");
    /* NCCL with an explicit channel count: the measured 200 us (NCCL's defaults) does not apply, the
     * formula stands in (the file's mechanism: ~227 us with one channel's 16 GB/s), and the row is
     * ranked apart whatever the formula makes of it. */
    const cfg_node *ch = row_named(rows, "NCCL 1 channel");
    cr_assert_not_null(ch);
    cr_assert_str_eq(str(ch, "ranked_apart"), "true");
    cr_assert(num(ch, "tok_per_s") < base_tok, "the formula (~227 us) is slower than the measured 200 us");
    cr_assert_str_eq(str(base, "ranked_apart"), "false");
    /* The file has its own speculation-off row: none added. */
    cr_assert_str_eq(str(root, "auto_nospec"), "null");
    cfg_doc_free(doc);
    th_free(&r);
}

/* Hand-checkable gain: the same variant twice (one with an explicit no-op override) gains 0 %, and a
 * baseline chosen by `baseline: true` (not the first) is the one gains are against. */
Test(compare, explicit_baseline_and_zero_gain)
{
    th_result r = compare_json("- name: oneshot\n  set: [run.backend=oneshot]\n"
                               "- name: nccl\n  baseline: true\n"
                               "- name: nccl again\n  set: [run.backend=nccl]\n",
                               "");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cfg_doc *doc = parse_json(r.out);
    const cfg_node *root = cfg_doc_root(doc);
    const cfg_node *rows = cfg_map_get(root, "rows");
    cr_assert_str_eq(str(root, "baseline"), "nccl");
    const cfg_node *again = row_named(rows, "nccl again"), *one = row_named(rows, "oneshot");
    cr_assert_float_eq(num(again, "gain_pct"), 0.0, 1e-9);
    cr_assert_float_eq(num(one, "gain_pct"), 100.0 * (num(one, "tok_per_s") / num(again, "tok_per_s") - 1.0), 0.01);
    /* The scenario speculates and no variant turns it off: a row is added, and the output says so. */
    const cfg_node *off = row_named(rows, "speculation off");
    cr_assert_not_null(off);
    cr_assert_str_eq(str(off, "added"), "true");
    cr_assert_float_eq(num(off, "tokens_per_cycle"), 1.0, 1e-9);
    cr_assert(strstr(str(root, "auto_nospec"), "speculation off"));
    cfg_doc_free(doc);
    th_free(&r);
}

/* A value that does not load costs its variant a row with the reason (ranked last), not the ranking:
 * exit 0. */
Test(compare, bad_value_gets_a_row_with_the_reason)
{
    th_result r = compare_json("- name: base\n- name: three GPUs\n  set: [parallel.tp=3]\n"
                               "- name: off\n  set: [speculative.algorithm=none]\n",
                               "");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cfg_doc *doc = parse_json(r.out);
    const cfg_node *rows = cfg_map_get(cfg_doc_root(doc), "rows");
    cr_assert_eq(rows->n, 3, "no row added: 'off' turns speculation off already");
    const cfg_node *last = rows->items[2];
    cr_assert_str_eq(str(last, "variant"), "three GPUs");
    cr_assert_str_eq(str(last, "available"), "false");
    cr_assert(strstr(str(last, "reason"), "parallel.tp"), "%s", str(last, "reason"));
    cr_assert_str_eq(str(last, "fits"), "null");
    cfg_doc_free(doc);
    th_free(&r);
}

/* Typos in the file are errors at file:line:col (exit 2), like a scenario's. */
Test(compare, typo_in_field_is_file_line_col)
{
    const char *text = "- name: a\n  sett: [run.backend=oneshot]\n";
    char *path = th_write_temp(text, strlen(text), ".yaml");
    char where[600];
    snprintf(where, sizeof(where), "%s:2:3", path);
    th_expect_bad(th_run("compare configs/default.yaml --variants %s", path), where, "unknown key '[0].sett'");
    unlink(path);
    free(path);
}

Test(compare, typo_in_set_key_is_file_line_col)
{
    const char *text = "- name: a\n- name: b\n  set: [run.bakend=oneshot]\n";
    char *path = th_write_temp(text, strlen(text), ".yaml");
    char where[600];
    snprintf(where, sizeof(where), "%s:3:9", path);
    th_expect_bad(th_run("compare configs/default.yaml --variants %s", path), where, "unknown key 'run.bakend'");
    unlink(path);
    free(path);
}

Test(compare, two_baselines_and_missing_variants)
{
    const char *text = "- name: a\n  baseline: true\n- name: b\n  baseline: true\n";
    char *path = th_write_temp(text, strlen(text), ".yaml");
    th_expect_bad(th_run("compare configs/default.yaml --variants %s", path), ":3:3", "a second baseline");
    unlink(path);
    free(path);
    th_expect_bad(th_run("compare configs/default.yaml"), "--variants", "required");
    th_expect_bad(th_run("compare configs/default.yaml --variants configs/plans/verify-faster.yaml --format csv"),
                  "--format", "table, json, md");
}

Test(compare, table_and_markdown)
{
    th_result t = th_run("compare configs/default.yaml --variants configs/plans/verify-faster.yaml");
    cr_assert_eq(t.status, 0, "%s", t.err);
    cr_assert(strstr(t.out, "baseline NCCL *"));
    cr_assert(strstr(t.out, "not ranked:"));
    th_free(&t);
    th_result m = th_run("compare configs/default.yaml --variants configs/plans/verify-faster.yaml --format md");
    cr_assert_eq(m.status, 0, "%s", m.err);
    cr_assert(strstr(m.out, "| # | variant | backend |"));
    cr_assert(strstr(m.out, "| no: needs "));
    th_free(&m);
}

/* Kimi-K2.5 at TP=1 on one 96 GB card does not fit (it got 58 tok/s before). */
Test(memory_fit, plan_and_model_at_tp1)
{
    th_result p = th_run("plan configs/default.yaml --set parallel.tp=1");
    cr_assert_eq(p.status, 0, "%s", p.err);
    cr_assert(strstr(p.out, "does not fit: needs"), "%s", p.out);
    th_free(&p);
    th_result r = th_run("model configs/default.yaml --set parallel.tp=1 --backend none --format json");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cfg_doc *doc = parse_json(r.out);
    const cfg_node *be = cfg_map_get(cfg_doc_root(doc), "backends")->items[0];
    cr_assert_str_eq(str(be, "available"), "false");
    cr_assert(strstr(str(be, "reason"), "does not fit: needs"));
    cr_assert(isnan(num(be, "tok_per_s")));
    cr_assert_str_eq(str(be, "fits"), "false");
    /* The weights alone: ~1T parameters mostly INT4 is > 500 GB on one rank. */
    cr_assert(num(be, "memory_gib") > 500.0 && num(be, "memory_capacity_gib") < 100.0);
    cfg_doc_free(doc);
    th_free(&r);
    th_result t = th_run("model configs/default.yaml --set parallel.tp=1 --backend none");
    cr_assert(strstr(t.out, "does not fit") && !strstr(t.out, "tok/s = tokens per cycle / cycle time\n\nnone "));
    th_free(&t);
}

/* At TP=8 it fits, and the CSV carries the memory columns at the end. */
Test(memory_fit, model_at_tp8_csv_columns)
{
    th_result r = th_run("model configs/default.yaml --backend nccl --format csv");
    cr_assert_eq(r.status, 0, "%s", r.err);
    const char *nl = strchr(r.out, '\n');
    cr_assert_not_null(nl);
    cr_assert(!strncmp(nl - strlen(",mem_gib,mem_capacity_gib,fits"), ",mem_gib,mem_capacity_gib,fits", 30),
              "%.*s", (int)(nl - r.out), r.out);
    const char *row_end = strchr(nl + 1, '\n');
    cr_assert(!strncmp(row_end - 5, ",true", 5));
    th_free(&r);
}
