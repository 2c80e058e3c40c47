/* Loading the acceptance keys that plain schema types cannot describe: speculative.rank_acceptance
 * (one list, or one list per depth), speculative.accept_table (measured rows), and the checks that need
 * the scenario's shape. */
#include "cfg_accept.h"

#include "../util/util.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Rates are probabilities: a sum a hair above 1 from decimal rounding (0.7 + 0.2 + 0.1) is still 1. */
#define SUM_SLACK 1e-9

static int bind_rate(const cfg_node *n, const char *path, double *out, cfg_error *err)
{
    double v;
    if (n->kind != CFG_NODE_SCALAR || n->quoted || !cfg_parse_double(n->scalar, &v)) {
        cfg_errorf(err, n, "%s: expected a number, got %s", path,
                   n->kind == CFG_NODE_SCALAR ? n->scalar : n->kind == CFG_NODE_SEQ ? "a list" : "a mapping");
        return -1;
    }
    if (!(v >= 0.0 && v <= 1.0)) {
        cfg_errorf(err, n, "%s: %g is out of range (must be in [0, 1])", path, v);
        return -1;
    }
    *out = v;
    return 0;
}

static int bind_rank_row(const cfg_node *row, const char *path, cfg_rank_rates *rr, int r, cfg_error *err)
{
    if ((int)row->n > CFG_MAX_RANKS) {
        cfg_errorf(err, row, "%s: %zu rates; at most %d (ranks 1..%d) are allowed", path, row->n, CFG_MAX_RANKS,
                   CFG_MAX_RANKS);
        return -1;
    }
    for (size_t i = 0; i < row->n; i++) {
        char *ipath = util_xasprintf("%s[%zu]", path, i);
        int rc = bind_rate(row->items[i], ipath, &rr->p[r][i], err);
        free(ipath);
        if (rc)
            return -1;
    }
    rr->n[r] = (int)row->n;
    return 0;
}

int cfg_bind_rank_rates(const cfg_field *f, const cfg_node *n, void *slot, const char *path, cfg_error *err)
{
    (void)f;
    cfg_rank_rates *rr = slot;
    memset(rr, 0, sizeof(*rr));
    if (n->kind != CFG_NODE_SEQ) {
        cfg_errorf(err, n,
                   "%s: expected the rates of ranks 1, 2, ... like [0.1, 0.05], or one such list per draft depth "
                   "like [[0.1, 0.05], [0.12, 0.06]]",
                   path);
        return -1;
    }
    if (n->n == 0)
        return 0;
    rr->per_depth = n->items[0]->kind == CFG_NODE_SEQ;
    if (!rr->per_depth) {
        rr->n_rows = 1;
        return bind_rank_row(n, path, rr, 0, err);
    }
    if ((int)n->n > CFG_MAX_RANK_ROWS) {
        cfg_errorf(err, n, "%s: %zu depths; at most %d are allowed", path, n->n, CFG_MAX_RANK_ROWS);
        return -1;
    }
    for (size_t i = 0; i < n->n; i++) {
        char *ipath = util_xasprintf("%s[%zu]", path, i);
        int rc = 0;
        if (n->items[i]->kind != CFG_NODE_SEQ) {
            cfg_errorf(err, n->items[i], "%s: expected a list of rates (one per depth), as the first item is", ipath);
            rc = -1;
        } else {
            rc = bind_rank_row(n->items[i], ipath, rr, (int)i, err);
        }
        free(ipath);
        if (rc)
            return -1;
    }
    rr->n_rows = (int)n->n;
    return 0;
}

/* ---------------- speculative.accept_table ---------------- */

#define AR(f) offsetof(cfg_accept_row, f)
static const cfg_field accept_row_fields[] = {
    {.key = "steps", .type = CFG_T_INT, .offset = AR(steps), CFG_RANGE(1, 31), .doc = "speculative.steps"},
    {.key = "topk", .type = CFG_T_INT, .offset = AR(topk), .def = "1", CFG_RANGE(1, 64), .doc = "speculative.topk"},
    {.key = "num_draft_tokens", .type = CFG_T_INT, .offset = AR(num_draft_tokens), .def = "0", CFG_RANGE(0, 1024),
     .doc = "speculative.num_draft_tokens (0 = steps + 1, topk = 1 only)"},
    {.key = "accept_length", .type = CFG_T_DOUBLE, .offset = AR(accept_length), CFG_RANGE(1, 1025),
     .doc = "measured mean tokens per verify, bonus token included"},
    {0},
};

/* Most tokens one verify can yield per request: the deepest kept path (at most steps drafted tokens,
 * and at most ndt - 1) plus the bonus token. */
static int max_accept(int steps, int ndt)
{
    return ndt < steps + 1 ? ndt : steps + 1;
}

/* The shape rules of the scenario (cfg_scenario.c check_speculative), for one table row. */
static int check_row(cfg_accept_row *row, const cfg_node *at, const char *path, cfg_error *err)
{
    if (row->num_draft_tokens == 0 && row->topk == 1)
        row->num_draft_tokens = row->steps + 1;
    const long long cap = cfg_draft_tree_cap(row->steps, row->topk);
    if (row->topk == 1 && row->num_draft_tokens != row->steps + 1) {
        cfg_errorf(err, at, "%s: num_draft_tokens=%d with topk=1 must be steps + 1 = %d", path, row->num_draft_tokens,
                   row->steps + 1);
        return -1;
    }
    if (row->topk > 1 && (row->num_draft_tokens < 2 || row->num_draft_tokens > cap)) {
        cfg_errorf(err, at, "%s: num_draft_tokens=%d: with steps=%d and topk=%d it must be in [2, %lld]", path,
                   row->num_draft_tokens, row->steps, row->topk, cap);
        return -1;
    }
    const int most = max_accept(row->steps, row->num_draft_tokens);
    if (row->accept_length > most) {
        cfg_errorf(err, at,
                   "%s: accept_length=%g: a verify of steps=%d, num_draft_tokens=%d yields at most %d tokens per "
                   "request (the deepest path plus the bonus token)",
                   path, row->accept_length, row->steps, row->num_draft_tokens, most);
        return -1;
    }
    return 0;
}

int cfg_bind_accept_table(const cfg_field *f, const cfg_node *n, void *slot, const char *path, cfg_error *err)
{
    (void)f;
    cfg_accept_table *tab = slot;
    memset(tab, 0, sizeof(*tab));
    if (n->kind != CFG_NODE_SEQ) {
        cfg_errorf(err, n, "%s: expected a list of rows like [{steps: 3, topk: 1, accept_length: 2.8}]", path);
        return -1;
    }
    if ((int)n->n > CFG_MAX_ACCEPT_ROWS) {
        cfg_errorf(err, n, "%s: %zu rows; at most %d are allowed", path, n->n, CFG_MAX_ACCEPT_ROWS);
        return -1;
    }
    for (size_t i = 0; i < n->n; i++) {
        char *ipath = util_xasprintf("%s[%zu]", path, i);
        cfg_accept_row *row = &tab->rows[i];
        /* The binder only reads the node; its signature is shared with the mutable tree's users. */
        int rc = cfg_schema_bind(accept_row_fields, (cfg_node *)n->items[i], row, ipath, err);
        if (!rc)
            rc = check_row(row, n->items[i], ipath, err);
        for (size_t j = 0; !rc && j < i; j++) {
            const cfg_accept_row *o = &tab->rows[j];
            if (o->steps == row->steps && o->topk == row->topk && o->num_draft_tokens == row->num_draft_tokens) {
                cfg_errorf(err, n->items[i], "%s: the same (steps=%d, topk=%d, num_draft_tokens=%d) as row %zu", ipath,
                           row->steps, row->topk, row->num_draft_tokens, j);
                rc = -1;
            }
        }
        free(ipath);
        if (rc)
            return -1;
        tab->n = (int)i + 1;
    }
    return 0;
}

/* ---------------- checks against the shape ---------------- */

/* Where a depth's rank rates were written: its row, the whole list, or (defaults) the acceptance. */
static cfg_node *rank_node(const cfg_scenario *sc, cfg_node *scen, int depth)
{
    cfg_node *n = cfg_node_at(scen, "speculative.rank_acceptance");
    if (n && n->kind == CFG_NODE_SEQ && sc->speculative.rank_acceptance.per_depth && n->n > 0) {
        size_t row = (size_t)depth - 1 < n->n ? (size_t)depth - 1 : n->n - 1;
        return n->items[row];
    }
    if (n)
        return n;
    n = cfg_node_at(scen, "speculative.acceptance");
    if (n)
        return n;
    n = cfg_node_at(scen, "speculative");
    return n ? n : scen;
}

static int check_rank_sums(const cfg_scenario *sc, cfg_node *scen, cfg_error *err)
{
    const int steps = sc->speculative.steps, topk = sc->speculative.topk;
    for (int d = 1; d <= steps; d++) {
        const double top1 = cfg_accept_rate(sc, d, 0, NULL);
        double others = 0.0;
        for (int r = 1; r < topk; r++)
            others += cfg_accept_rate(sc, d, r, NULL);
        if (top1 + others > 1.0 + SUM_SLACK) {
            cfg_errorf(err, rank_node(sc, scen, d),
                       "speculative.rank_acceptance: at depth %d the topk=%d candidates' rates sum to %.4g (rank 0 from "
                       "speculative.acceptance: %g, ranks 1-%d: %.4g) > 1; only one candidate can match the target's "
                       "token, so a depth's rates must sum to at most 1",
                       d, topk, top1 + others, top1, topk - 1, others);
            return -1;
        }
    }
    return 0;
}

int cfg_accept_check(const cfg_scenario *sc, cfg_node *scen, cfg_error *err)
{
    if (sc->speculative.algorithm == CFG_SPEC_NONE)
        return 0;
    if (sc->speculative.topk > 1 && check_rank_sums(sc, scen, err))
        return -1;
    const double al = sc->speculative.accept_length;
    const int steps = sc->speculative.steps, ndt = sc->speculative.num_draft_tokens;
    const int most = max_accept(steps, ndt);
    if (al > 0 && (al < 1.0 || al > most)) {
        cfg_node *at = cfg_node_at(scen, "speculative.accept_length");
        cfg_errorf(err, at ? at : scen,
                   "speculative.accept_length=%g: a verify of steps=%d, topk=%d, num_draft_tokens=%d yields 1 to %d "
                   "tokens per request (the bonus token included), so it must be 0 (use the model) or in [1, %d]",
                   al, steps, sc->speculative.topk, ndt, most, most);
        return -1;
    }
    return 0;
}
