/* Sweeps that answer: the summary, tied keys, skipped combinations, and the like-for-like
 * warnings and serving columns of `vpsim model` that the summary collects. Through the binary. */
#include "../../sim/config/cfg_tree.h"
#include "../../sim/util/util.h"
#include "test_helpers.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a small CSV reader (fields may be quoted: allreduce_method holds commas) ---- */

#define MAX_F 48
typedef struct rec {
    char *f[MAX_F];
    int n;
} rec;

/* Records of `csv` (header included) into recs; returns the count. */
static int read_csv(const char *csv, rec *recs, int max)
{
    int n = 0;
    const char *p = csv;
    while (*p && n < max) {
        rec *r = &recs[n++];
        r->n = 0;
        for (;;) {
            util_buf b = {0};
            util_buf_printf(&b, "%s", "");
            if (*p == '"') {
                for (p++; *p && !(*p == '"' && p[1] != '"'); p++) {
                    util_buf_printf(&b, "%c", *p);
                    if (*p == '"')
                        p++;
                }
                p++;
            } else {
                for (; *p && *p != ',' && *p != '\n'; p++)
                    util_buf_printf(&b, "%c", *p);
            }
            cr_assert_lt(r->n, MAX_F);
            r->f[r->n++] = b.s;
            if (*p == ',') {
                p++;
                continue;
            }
            if (*p == '\n')
                p++;
            break;
        }
    }
    return n;
}

static void free_recs(rec *recs, int n)
{
    for (int i = 0; i < n; i++)
        for (int k = 0; k < recs[i].n; k++)
            free(recs[i].f[k]);
}

static int col(const rec *head, const char *name)
{
    for (int k = 0; k < head->n; k++)
        if (!strcmp(head->f[k], name))
            return k;
    cr_assert_fail("no column %s", name);
    return -1;
}

typedef struct sweep_out {
    char *dir, *csv;
    th_result r;
} sweep_out;

/* Run `vpsim sweep configs/default.yaml ARGS --out DIR/s.csv`; the CSV is read when it exists. */
static sweep_out run_sweep(const char *args)
{
    sweep_out s;
    char tmpl[] = "/tmp/vpsim-summary-XXXXXX";
    cr_assert_not_null(mkdtemp(tmpl));
    s.dir = util_xstrdup(tmpl);
    s.r = th_run("sweep configs/default.yaml %s --out '%s/s.csv'", args, s.dir);
    char *path = util_xasprintf("%s/s.csv", s.dir);
    s.csv = s.r.status == 0 ? th_slurp(path) : NULL;
    free(path);
    return s;
}

static void sweep_done(sweep_out *s)
{
    th_result rm = th_sh("rm -rf '%s'", s->dir);
    th_free(&rm);
    th_free(&s->r);
    free(s->dir);
    free(s->csv);
}

/* The stdout line of the per-point table that starts with the point's values. */
static char *point_line(const char *out, const char *values)
{
    char *needle = util_xasprintf("\n  %s ", values);
    const char *at = strstr(out, needle);
    free(needle);
    cr_assert_not_null(at, "no summary line for %s:\n%s", values, out);
    at += 3;
    return util_xstrndup(at, strcspn(at, "\n"));
}

/* ---------------- the summary ---------------- */

Test(sweep_summary, names_the_fastest_backend_and_its_gap_per_point, .timeout = 60)
{
    sweep_out s = run_sweep("--vary workload.context=1024,65536 --backend nccl,oneshot,mpi");
    cr_assert_eq(s.r.status, 0, "%s", s.r.err);
    rec recs[16];
    const int n = read_csv(s.csv, recs, 16);
    cr_assert_eq(n, 1 + 2 * 3);
    const int c_be = col(&recs[0], "backend"), c_tok = col(&recs[0], "tok_per_s"), c_tpot = col(&recs[0], "tpot_ms");
    for (int pt = 0; pt < 2; pt++) {
        /* the best and the runner-up by tok/s, from the CSV itself */
        int best = -1, second = -1;
        for (int i = 1 + pt * 3; i < 1 + pt * 3 + 3; i++) {
            const double t = atof(recs[i].f[c_tok]);
            if (best < 0 || t > atof(recs[best].f[c_tok]))
                second = best, best = i;
            else if (second < 0 || t > atof(recs[second].f[c_tok]))
                second = i;
        }
        char *line = point_line(s.r.out, recs[best].f[0]);
        char want[160];
        snprintf(want, sizeof(want), "%s %.1f %.2f %s %+.1f%%", recs[best].f[c_be], atof(recs[best].f[c_tok]),
                 atof(recs[best].f[c_tpot]), recs[second].f[c_be],
                 100.0 * (atof(recs[best].f[c_tok]) / atof(recs[second].f[c_tok]) - 1.0));
        /* the line with runs of blanks squeezed */
        util_buf sq = {0};
        for (const char *p = line; *p; p++)
            if (!(*p == ' ' && (p[1] == ' ' || p == line)))
                util_buf_printf(&sq, "%c", *p);
        cr_assert(strstr(sq.s, want), "want '%s' in '%s'", want, sq.s);
        util_buf_free(&sq);
        free(line);
    }
    cr_assert(strstr(s.r.out, "best point per backend"), "%s", s.r.out);
    free_recs(recs, n);
    sweep_done(&s);
}

Test(sweep_summary, the_break_even_is_the_same_point_without_speculation, .timeout = 60)
{
    sweep_out s = run_sweep("--vary workload.batch=1,4 --backend oneshot");
    cr_assert_eq(s.r.status, 0, "%s", s.r.err);
    rec recs[8];
    const int n = read_csv(s.csv, recs, 8);
    const int c_ns = col(&recs[0], "nospec_tok_per_s");
    th_result m = th_run("model configs/default.yaml --backend oneshot --set workload.batch=4 "
                         "--set speculative.algorithm=none --format csv");
    cr_assert_eq(m.status, 0, "%s", m.err);
    rec mr[3];
    const int mn = read_csv(m.out, mr, 3);
    const double want = atof(mr[1].f[col(&mr[0], "tok_per_s")]);
    cr_assert_float_eq(atof(recs[2].f[c_ns]), want, want * 1e-5, "batch 4: %s vs %f", recs[2].f[c_ns], want);
    cr_assert(strstr(s.r.out, "without speculation there"), "%s", s.r.out);
    free_recs(mr, mn);
    th_free(&m);
    free_recs(recs, n);
    sweep_done(&s);
}

Test(sweep_summary, large_sweeps_list_the_top_points_and_say_how_many_are_left_out, .timeout = 60)
{
    sweep_out s = run_sweep("--vary workload.context=1024..1029 --backend none --top 2");
    cr_assert_eq(s.r.status, 0, "%s", s.r.err);
    cr_assert(strstr(s.r.out, "4 more points left out"), "%s", s.r.out);
    sweep_done(&s);
}

/* ---------------- tied keys and skipped combinations ---------------- */

Test(sweep_summary, steps_alone_ties_num_draft_tokens_for_topk_1, .timeout = 60)
{
    sweep_out s = run_sweep("--vary speculative.steps=1..3 --backend nccl");
    cr_assert_eq(s.r.status, 0, "%s", s.r.err);
    cr_assert(strstr(s.r.err, "speculative.num_draft_tokens follows speculative.steps"), "%s", s.r.err);
    cr_assert(!strncmp(s.csv, "speculative.steps,speculative.num_draft_tokens,backend,", 55), "%s", s.csv);
    rec recs[8];
    const int n = read_csv(s.csv, recs, 8);
    cr_assert_eq(n, 4);
    const int c_tok = col(&recs[0], "tokens_per_cycle"), c_ok = col(&recs[0], "available");
    /* acceptance [0.75, 0.6], the last rate reused: 1 + .75 (+ .45 (+ .27)) */
    const double tokens[] = {1.75, 2.2, 2.47};
    for (int i = 1; i < n; i++) {
        cr_assert_eq(atoi(recs[i].f[1]), atoi(recs[i].f[0]) + 1, "ndt = steps + 1 on row %d", i);
        cr_assert_str_eq(recs[i].f[c_ok], "true");
        cr_assert_float_eq(atof(recs[i].f[c_tok]), tokens[i - 1], 1e-9);
    }
    free_recs(recs, n);
    sweep_done(&s);
}

Test(sweep_summary, num_draft_tokens_alone_ties_steps, .timeout = 60)
{
    sweep_out s = run_sweep("--vary speculative.num_draft_tokens=2,4,6 --backend nccl");
    cr_assert_eq(s.r.status, 0, "%s", s.r.err);
    cr_assert(strstr(s.csv, "\n2,1,nccl,true,") && strstr(s.csv, "\n4,3,nccl,true,") &&
                  strstr(s.csv, "\n6,5,nccl,true,"),
              "%s", s.csv);
    sweep_done(&s);
}

Test(sweep_summary, a_draft_shape_search_counts_rejected_combinations_once_per_reason, .timeout = 60)
{
    sweep_out s = run_sweep("--vary speculative.steps=1..3 --vary speculative.num_draft_tokens=2,3,4 --backend nccl");
    cr_assert_eq(s.r.status, 0, "%s", s.r.err);
    /* 9 combinations, only ndt = steps + 1 is valid with topk=1: 6 skipped, one reason */
    cr_assert(strstr(s.r.out, "skipped 6 combinations"), "%s", s.r.out);
    cr_assert(strstr(s.r.out, "at 6 points:"), "%s", s.r.out);
    const char *first = strstr(s.r.out, "is inconsistent with");
    cr_assert(first && !strstr(first + 1, "is inconsistent with"), "the reason once:\n%s", s.r.out);
    sweep_done(&s);
    sweep_out bad = run_sweep("--vary speculative.steps=1,x --vary speculative.num_draft_tokens=2,3");
    cr_assert_eq(bad.r.status, 2, "a value that is not an integer is still a typo: %s", bad.r.err);
    sweep_done(&bad);
}

Test(sweep_summary, ranges_must_go_up)
{
    sweep_out s = run_sweep("--vary workload.batch=3..1");
    cr_assert_eq(s.r.status, 2, "%s", s.r.err);
    cr_assert(strstr(s.r.err, "A > B"), "%s", s.r.err);
    sweep_done(&s);
}

/* ---------------- warnings ---------------- */

Test(sweep_summary, extrapolated_acceptance_is_flagged_at_the_points_it_hits, .timeout = 60)
{
    sweep_out s = run_sweep("--vary speculative.steps=1..3 --backend nccl");
    cr_assert_eq(s.r.status, 0, "%s", s.r.err);
    cr_assert(strstr(s.r.out, "steps=3 but speculative.acceptance has 2 rates"), "%s", s.r.out);
    cr_assert(strstr(s.r.out, "at 1 point: steps=3 num_draft_tokens=4"), "%s", s.r.out);
    rec recs[8];
    const int n = read_csv(s.csv, recs, 8);
    const int c_w = col(&recs[0], "warnings");
    cr_assert_null(strstr(recs[2].f[c_w], "acceptance-extrapolated"), "steps 2 has its 2 rates");
    cr_assert_not_null(strstr(recs[3].f[c_w], "acceptance-extrapolated:"), "%s", recs[3].f[c_w]);
    free_recs(recs, n);
    sweep_done(&s);
}

Test(sweep_summary, a_collective_measured_at_some_points_and_a_formula_at_others_is_flagged, .timeout = 60)
{
    sweep_out s = run_sweep("--vary system.topology.p2p=direct,off --backend nccl,none");
    cr_assert_eq(s.r.status, 0, "%s", s.r.err);
    cr_assert(strstr(s.r.out, "nccl: the allreduce figure is a measurement at 1 point and the formula at 1"), "%s",
              s.r.out);
    cr_assert(strstr(s.r.out, "measured at: p2p=direct\n"), "%s", s.r.out);
    /* and each off row says why its figure is the formula */
    cr_assert(strstr(s.csv, "table-not-applied: nccl: a measured table exists but is not used here (measured under "
                            "another topology.p2p)"),
              "%s", s.csv);
    sweep_done(&s);
    /* one source all along: nothing to flag */
    sweep_out same = run_sweep("--vary workload.batch=1,2 --backend nccl");
    cr_assert_eq(same.r.status, 0, "%s", same.r.err);
    cr_assert_null(strstr(same.r.out, "is a measurement at"), "%s", same.r.out);
    sweep_done(&same);
}

static cfg_node *backend_json(cfg_doc **doc, th_result *r, int index)
{
    cfg_error err;
    *doc = cfg_doc_load_text(r->out, strlen(r->out), "results.json", false, &err);
    cr_assert_not_null(*doc, "%s", err.msg);
    cfg_node *bes = cfg_map_get(cfg_doc_root(*doc), "backends");
    cr_assert(bes && bes->n > (size_t)index);
    return bes->items[index];
}

static bool has_warning(cfg_node *be, const char *code)
{
    cfg_node *ws = cfg_map_get(be, "warnings");
    cr_assert(ws && ws->kind == CFG_NODE_SEQ);
    for (size_t i = 0; i < ws->n; i++)
        if (!strcmp(cfg_map_get(ws->items[i], "code")->scalar, code))
            return true;
    return false;
}

Test(model_warnings, an_eager_measurement_in_a_graph_scenario_is_flagged)
{
    /* the shipped table says launch: any (the seed leaves the mode open); tagged eager, a graph scenario
     * is flagged */
    const char *cases[][2] = {{"", "no"},
                              {"--set system.measured.allreduce.nccl.launch=eager", "yes"},
                              {"--set system.measured.allreduce.nccl.launch=eager --set run.graph=false", "no"},
                              {"--set system.measured.allreduce.nccl.launch=graph", "no"},
                              {"--set system.measured.allreduce.nccl.launch=any", "no"}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        th_result r = th_run("model configs/default.yaml --backend nccl --format json %s", cases[i][0]);
        cr_assert_eq(r.status, 0, "%s", r.err);
        cfg_doc *doc;
        cfg_node *nccl = backend_json(&doc, &r, 0);
        cr_assert_eq(has_warning(nccl, "launch-mismatch"), !strcmp(cases[i][1], "yes"), "%s", cases[i][0]);
        cfg_doc_free(doc);
        th_free(&r);
    }
    th_result t = th_run("model configs/default.yaml --backend nccl --set system.measured.allreduce.nccl.launch=eager");
    cr_assert(strstr(t.out, "warnings (figures that are not like for like):\n  ! nccl: the measured allreduce table "
                            "was taken with eager launches"),
              "%s", t.out);
    th_free(&t);
    th_result bad = th_run("model configs/default.yaml --set system.measured.allreduce.nccl.launch=sometimes");
    cr_assert_eq(bad.status, 2);
    cr_assert(strstr(bad.err, "eager") && strstr(bad.err, "graph"), "the valid choices: %s", bad.err);
    th_free(&bad);
}

/* ---------------- serving columns ---------------- */

Test(model_serving, tpot_is_the_cycle_per_token_of_one_request)
{
    for (const char *const *batch = (const char *const[]){"1", "8", NULL}; *batch; batch++) {
        th_result r = th_run("model configs/default.yaml --backend oneshot --format json --set workload.batch=%s",
                             *batch);
        cr_assert_eq(r.status, 0, "%s", r.err);
        cfg_doc *doc;
        cfg_node *be = backend_json(&doc, &r, 0);
        const double cycle = strtod(cfg_map_get(be, "cycle_ms")->scalar, NULL);
        const double tokens = strtod(cfg_map_get(be, "tokens_per_cycle")->scalar, NULL);
        const double tpot = strtod(cfg_map_get(be, "tpot_ms")->scalar, NULL);
        cr_assert_float_eq(tpot, cycle / tokens, tpot * 1e-5, "batch %s", *batch);
        /* 1 + 0.75 + 0.75 x 0.6 = 2.2 tokens, of which 1.2 accepted draft tokens */
        cr_assert_float_eq(strtod(cfg_map_get(be, "accepted_per_cycle")->scalar, NULL), 1.2, 1e-9);
        cfg_doc_free(doc);
        th_free(&r);
    }
}

/* The engine column for gates read off vLLM's / SGLang's code (sim/model/model_engine.c). */
static void expect_engine(const char *args, int index, const char *want_prefix)
{
    th_result r = th_run("model configs/default.yaml --format json %s", args);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cfg_doc *doc;
    cfg_node *be = backend_json(&doc, &r, index);
    cfg_node *eng = cfg_map_get(be, "engine");
    for (const char *const *e = (const char *const[]){"vllm", "sglang", NULL}; *e; e++) {
        const char *got = cfg_map_get(eng, *e)->scalar;
        cr_assert(!strncmp(got, want_prefix, strlen(want_prefix)), "%s %s: got '%s', want '%s...'", args, *e, got,
                  want_prefix);
    }
    cfg_doc_free(doc);
    th_free(&r);
}

Test(model_serving, engine_column_follows_the_custom_allreduce_gates)
{
    /* 8 GPUs over PCIe: custom allreduce is off for more than 2 PCIe GPUs, NCCL it is */
    expect_engine("--backend oneshot", 0, "no: custom allreduce off on PCIe with more than 2 GPUs");
    expect_engine("--backend nccl", 0, "yes");
    /* 2 GPUs over PCIe with P2P: the one-stage kernel */
    expect_engine("--backend oneshot --set parallel.tp=2", 0, "yes");
    expect_engine("--backend oneshot --set parallel.tp=2 --set system.topology.p2p=sysmem", 0,
                  "no: custom allreduce off without GPU P2P");
    /* 8 GPUs on NVLink: 3 x 7168 x 2 = 43,008 B < 256 KiB is one-stage; batch 32 (1,376,256 B) two-stage */
    const char *nv = "--system configs/systems/h200-8x-nvlink.yaml";
    char *a = util_xasprintf("%s --backend nccl,oneshot,twoshot", nv);
    expect_engine(a, 0, "no: custom allreduce (one-stage) takes this payload");
    expect_engine(a, 1, "yes");
    expect_engine(a, 2, "no: its one-stage kernel");
    char *b = util_xasprintf("%s --backend twoshot --set workload.batch=32", nv);
    expect_engine(b, 0, "yes");
    free(a);
    free(b);
}

/* The best point of a backend is the row of that backend with the most tok/s in the CSV: steps 1..3 on
 * the default acceptance give 1.75, 2.2 and 2.47 tokens per cycle; with NCCL on P2P (NCCL_P2P_LEVEL=SYS)
 * its allreduce is latency-bound, so the cycle grows little and the best is not the first point. */
Test(sweep_summary, best_point_per_backend_is_the_csv_maximum, .timeout = 60)
{
    sweep_out s = run_sweep("--vary speculative.steps=1..3 --backend nccl --set system.nccl.p2p_level=SYS "
                            "--set system.measured.use=false");
    cr_assert_eq(s.r.status, 0, "%s", s.r.err);
    rec recs[8];
    const int n = read_csv(s.csv, recs, 8);
    const int c_tok = col(&recs[0], "tok_per_s"), c_steps = col(&recs[0], "speculative.steps");
    int best = 1;
    for (int i = 2; i < n; i++)
        if (atof(recs[i].f[c_tok]) > atof(recs[best].f[c_tok]))
            best = i;
    cr_assert_str_neq(recs[best].f[c_steps], "1", "the sweep should not peak at its first point");
    char want[96];
    snprintf(want, sizeof(want), "%.1f tok/s", atof(recs[best].f[c_tok]));
    const char *sec = strstr(s.r.out, "best point per backend");
    cr_assert_not_null(sec);
    const char *line = strstr(sec, "\n  nccl ");
    cr_assert_not_null(line, "%s", sec);
    char at[32];
    snprintf(at, sizeof(at), "at steps=%s ", recs[best].f[c_steps]);
    const char *eol = strchr(line + 1, '\n');
    char *l = strndup(line + 1, (size_t)(eol - line - 1));
    cr_assert(strstr(l, want) && strstr(l, at), "want '%s' and '%s' in '%s'", want, at, l);
    free(l);
    free_recs(recs, n);
    sweep_done(&s);
}
