/* Tokens per verify pass: the chain formula, the draft tree, measured accept lengths (cfg_accept.h;
 * docs/model.md "Acceptance"). */
#include "cfg_accept.h"

#include "../util/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const cfg_accept_source_names[] = {"none", "chain", "tree", "accept_length", "accept_table", NULL};

double cfg_accept_rate(const cfg_scenario *sc, int depth, int rank, bool *extrapolated)
{
    if (rank == 0) {
        const int n = sc->speculative.n_acceptance;
        if (n == 0)
            return 0.0;
        int idx = depth - 1;
        if (idx >= n) {
            idx = n - 1;
            if (extrapolated)
                *extrapolated = true;
        }
        return sc->speculative.acceptance[idx];
    }
    const cfg_rank_rates *rr = &sc->speculative.rank_acceptance;
    if (rr->n_rows == 0)
        return 0.0;
    int row = depth - 1;
    if (row >= rr->n_rows) {
        row = rr->n_rows - 1;
        if (extrapolated && rr->per_depth)
            *extrapolated = true;
    }
    return rank - 1 < rr->n[row] ? rr->p[row][rank - 1] : 0.0;
}

/* ---------------- the draft tree ---------------- */

long long cfg_draft_tree_cap(int steps, int topk)
{
    return 1 + (long long)topk + (long long)(steps - 1) * topk * topk;
}

typedef struct ranked {
    double score;
    int idx;
} ranked;

/* Best score first; equal scores keep the earlier candidate (a parent precedes its children). */
static int by_score(const void *a, const void *b)
{
    const ranked *x = a, *y = b;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

static void rank_range(const cfg_draft_node *nodes, int first, int end, ranked *tmp)
{
    for (int i = first; i < end; i++)
        tmp[i - first] = (ranked){nodes[i].score, i};
    qsort(tmp, (size_t)(end - first), sizeof(*tmp), by_score);
}

int cfg_draft_tree_build(int steps, int topk, int ndt, const double *rate, cfg_draft_tree *out, char *why,
                         size_t why_len)
{
    memset(out, 0, sizeof(*out));
    if (steps < 1 || steps > CFG_MAX_ACCEPT || topk < 1 || topk > CFG_MAX_RANKS + 1) {
        snprintf(why, why_len, "steps=%d and topk=%d: steps must be in [1, %d] and topk in [1, %d]", steps, topk,
                 CFG_MAX_ACCEPT, CFG_MAX_RANKS + 1);
        return -1;
    }
    const long long cap = cfg_draft_tree_cap(steps, topk);
    if (ndt < 2 || ndt > cap) {
        snprintf(why, why_len,
                 "num_draft_tokens=%d: steps=%d, topk=%d draft 1 + %d + %d x %d^2 = %lld tokens to choose from "
                 "(SGLang: the root, topk at step 1, topk^2 at each later step), so it must be in [2, %lld]",
                 ndt, steps, topk, topk, steps - 1, topk, cap, cap);
        return -1;
    }
    const int total = (int)(cap - 1);
    out->nodes = util_xcalloc((size_t)total, sizeof(cfg_draft_node));
    ranked *tmp = util_xcalloc((size_t)total, sizeof(ranked));
    int *frontier = util_xcalloc((size_t)topk, sizeof(int));
    int n = 0;
    /* Step 1: the root's topk candidates; all of them are the first frontier. */
    for (int r = 0; r < topk; r++) {
        out->nodes[n] = (cfg_draft_node){.parent = -1, .depth = 1, .rank = r, .score = rate[r]};
        frontier[r] = n++;
    }
    /* Each later step: every frontier node drafts topk children (topk^2 candidates, all kept for the final
     * choice); the topk best by cumulative score are the next frontier (select_top_k_tokens). */
    for (int d = 2; d <= steps; d++) {
        const int first = n;
        for (int f = 0; f < topk; f++)
            for (int r = 0; r < topk; r++) {
                const int par = frontier[f];
                out->nodes[n++] = (cfg_draft_node){.parent = par, .depth = d, .rank = r,
                                                   .score = out->nodes[par].score * rate[(d - 1) * topk + r]};
            }
        rank_range(out->nodes, first, n, tmp);
        for (int f = 0; f < topk; f++)
            frontier[f] = tmp[f].idx;
    }
    out->n_nodes = n;
    /* The verify pass checks the root plus the ndt - 1 best candidates (organize_draft_results). */
    rank_range(out->nodes, 0, n, tmp);
    out->n_kept = ndt - 1;
    out->kept = util_xcalloc((size_t)out->n_kept, sizeof(int));
    out->expected = 1.0;
    for (int k = 0; k < out->n_kept; k++) {
        const cfg_draft_node *node = &out->nodes[tmp[k].idx];
        out->kept[k] = tmp[k].idx;
        out->expected += node->score;
        out->depth_sum[node->depth] += node->score;
    }
    free(frontier);
    free(tmp);
    return 0;
}

void cfg_draft_tree_free(cfg_draft_tree *t)
{
    free(t->nodes);
    free(t->kept);
    memset(t, 0, sizeof(*t));
}

/* ---------------- the explanation line ---------------- */

/* "1 + t1 + t2 + ... = v" into buf; terms past 8 are elided to "t1 + t2 + t3 + ... + tn". */
static void terms_text(char *buf, size_t len, const double *terms, int n, double value)
{
    size_t off = (size_t)snprintf(buf, len, "1");
    for (int i = 0; i < n && off < len; i++) {
        if (n > 8 && i == 3) {
            off += (size_t)snprintf(buf + off, len - off, " + ...");
            i = n - 2;
            continue;
        }
        off += (size_t)snprintf(buf + off, len - off, " + %.3g", terms[i]);
    }
    if (off < len)
        snprintf(buf + off, len - off, " = %.3f", value);
}

/* The chain with its factors ("1 + 0.75 + 0.75x0.6 = 2.200") while that stays short, else its terms. */
static void chain_text(const cfg_scenario *sc, char *buf, size_t len, double value)
{
    const int steps = sc->speculative.steps;
    char factors[160];
    size_t off = (size_t)snprintf(factors, sizeof(factors), "1");
    double terms[CFG_MAX_ACCEPT + 1], chain = 1.0;
    for (int i = 0; i < steps && i <= CFG_MAX_ACCEPT; i++) {
        chain *= cfg_accept_rate(sc, i + 1, 0, NULL);
        terms[i] = chain;
        if (off < sizeof(factors))
            off += (size_t)snprintf(factors + off, sizeof(factors) - off, " + ");
        for (int k = 0; k <= i && off < sizeof(factors); k++)
            off += (size_t)snprintf(factors + off, sizeof(factors) - off, "%s%g", k ? "x" : "",
                                    cfg_accept_rate(sc, k + 1, 0, NULL));
    }
    if (off < 100) {
        snprintf(buf, len, "%.100s = %.3f", factors, value);
        return;
    }
    terms_text(buf, len, terms, steps, value);
}

static void warn_text(const cfg_scenario *sc, bool tree, char *buf, size_t len)
{
    const int steps = sc->speculative.steps, n = sc->speculative.n_acceptance;
    size_t off = 0;
    buf[0] = '\0';
    if (steps > n && n > 0) {
        const double last = sc->speculative.acceptance[n - 1];
        if (steps == n + 1)
            off = (size_t)snprintf(buf, len, "steps=%d but speculative.acceptance has %d rate%s; position %d reuses %g",
                                   steps, n, n == 1 ? "" : "s", steps, last);
        else
            off = (size_t)snprintf(buf, len,
                                   "steps=%d but speculative.acceptance has %d rate%s; positions %d-%d reuse %g", steps,
                                   n, n == 1 ? "" : "s", n + 1, steps, last);
    }
    const cfg_rank_rates *rr = &sc->speculative.rank_acceptance;
    if (tree && rr->per_depth && steps > rr->n_rows && off < len)
        snprintf(buf + off, len - off, "%sspeculative.rank_acceptance has %d row%s; depths %d-%d reuse the last",
                 off ? "; " : "", rr->n_rows, rr->n_rows == 1 ? "" : "s", rr->n_rows + 1, steps);
}

/* ---------------- tokens per verify ---------------- */

static void model_value(const cfg_scenario *sc, cfg_accept *out)
{
    const int steps = sc->speculative.steps, topk = sc->speculative.topk;
    const int ndt = sc->speculative.num_draft_tokens;
    if (topk > 1) {
        double *rate = util_xcalloc((size_t)steps * (size_t)topk, sizeof(double));
        for (int d = 1; d <= steps; d++)
            for (int r = 0; r < topk; r++)
                rate[(d - 1) * topk + r] = cfg_accept_rate(sc, d, r, &out->extrapolated);
        cfg_draft_tree t;
        char why[300];
        int rc = cfg_draft_tree_build(steps, topk, ndt, rate, &t, why, sizeof(why));
        free(rate);
        if (rc == 0) {
            char formula[112];
            terms_text(formula, sizeof(formula), t.depth_sum + 1, steps, t.expected);
            snprintf(out->explain, sizeof(out->explain),
                     "tree model (topk=%d, %d of %d drafted nodes verified): %.111s by depth",
                     topk, t.n_kept, t.n_nodes, formula);
            out->source = CFG_ACCEPT_TREE;
            out->model_tokens = t.expected;
            out->kept_nodes = t.n_kept;
            out->candidates = t.n_nodes;
            cfg_draft_tree_free(&t);
            warn_text(sc, true, out->warning, sizeof(out->warning));
            return;
        }
        /* The loader rejects such shapes; a hand-built scenario falls back to the chain and says why. */
        snprintf(out->warning, sizeof(out->warning), "no tree: %.140s", why);
    }
    double expected = 1.0, chain = 1.0;
    for (int d = 1; d <= steps; d++) {
        chain *= cfg_accept_rate(sc, d, 0, &out->extrapolated);
        expected += chain;
    }
    char formula[160];
    chain_text(sc, formula, sizeof(formula), expected);
    snprintf(out->explain, sizeof(out->explain), "chain formula: %.159s", formula);
    out->source = CFG_ACCEPT_CHAIN;
    out->model_tokens = expected;
    out->kept_nodes = out->candidates = steps;
    if (!out->warning[0])
        warn_text(sc, false, out->warning, sizeof(out->warning));
}

void cfg_accept_eval(const cfg_scenario *sc, cfg_accept *out)
{
    memset(out, 0, sizeof(*out));
    out->table_row = -1;
    if (sc->speculative.algorithm == CFG_SPEC_NONE || sc->speculative.n_acceptance == 0) {
        out->tokens = out->model_tokens = 1.0;
        out->source = CFG_ACCEPT_NONE;
        snprintf(out->explain, sizeof(out->explain), "no speculation: 1 token per cycle");
        return;
    }
    model_value(sc, out);
    out->tokens = out->model_tokens;
    const char *model = out->source == CFG_ACCEPT_TREE ? "tree model" : "chain formula";
    const int steps = sc->speculative.steps, topk = sc->speculative.topk;
    const int ndt = sc->speculative.num_draft_tokens;
    int row = -1;
    const cfg_accept_table *tab = &sc->speculative.accept_table;
    for (int i = 0; i < tab->n && row < 0; i++)
        if (tab->rows[i].steps == steps && tab->rows[i].topk == topk && tab->rows[i].num_draft_tokens == ndt)
            row = i;
    if (sc->speculative.accept_length > 0) {
        out->tokens = sc->speculative.accept_length;
        out->source = CFG_ACCEPT_MEASURED;
        snprintf(out->explain, sizeof(out->explain),
                 "measured speculative.accept_length %.3f (overrides the %s, which gives %.3f)", out->tokens, model,
                 out->model_tokens);
    } else if (row >= 0) {
        out->tokens = tab->rows[row].accept_length;
        out->source = CFG_ACCEPT_TABLE;
        out->table_row = row;
        snprintf(out->explain, sizeof(out->explain),
                 "measured speculative.accept_table[%d] (steps=%d, topk=%d, num_draft_tokens=%d) %.3f (overrides the "
                 "%s, which gives %.3f)",
                 row, steps, topk, ndt, out->tokens, model, out->model_tokens);
    }
    if (out->source == CFG_ACCEPT_MEASURED || out->source == CFG_ACCEPT_TABLE) {
        /* A measurement does not depend on the rates, so nothing was extrapolated for it. */
        out->extrapolated = false;
        out->warning[0] = '\0';
    }
}

double cfg_expected_tokens(const cfg_scenario *sc)
{
    cfg_accept a;
    cfg_accept_eval(sc, &a);
    return a.tokens;
}
