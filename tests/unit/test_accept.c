/* Acceptance: the draft tree (against hand-built small trees and a Monte-Carlo run of greedy
 * verification), the chain as its topk = 1 case, measured accept lengths, the load-time checks, and what
 * `vpsim model` prints. */
#include "../../sim/config/cfg.h"
#include "../../sim/config/cfg_accept.h"
#include "../../sim/util/util.h"
#include "test_helpers.h"
#include "th_plan.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void build_ok(int steps, int topk, int ndt, const double *rate, cfg_draft_tree *t)
{
    char why[300] = "";
    cr_assert_eq(cfg_draft_tree_build(steps, topk, ndt, rate, t, why, sizeof(why)), 0, "%s", why);
}

/* ---------------- hand-computed small trees ---------------- */

/* depth 1: ranks 0.6, 0.3; depth 2: ranks 0.4, 0.2. Candidates (SGLang order): A = 0.6, B = 0.3, then
 * A's children 0.24, 0.12 and B's 0.12, 0.06. */
static const double two_by_two[] = {0.6, 0.3, 0.4, 0.2};

Test(accept_tree, depth_2_topk_2_ndt_3_keeps_both_first_candidates)
{
    cfg_draft_tree t;
    build_ok(2, 2, 3, two_by_two, &t);
    cr_assert_eq(t.n_nodes, 6, "2 at step 1 + 2 x 2 at step 2");
    cr_assert_eq(t.n_kept, 2);
    cr_assert_eq(t.kept[0], 0);
    cr_assert_eq(t.kept[1], 1);
    cr_assert_float_eq(t.expected, 1.0 + 0.6 + 0.3, 1e-12);
    cr_assert_float_eq(t.depth_sum[1], 0.9, 1e-12);
    cr_assert_float_eq(t.depth_sum[2], 0.0, 1e-12);
    cfg_draft_tree_free(&t);
}

Test(accept_tree, depth_2_topk_2_ndt_4_adds_the_best_grandchild)
{
    cfg_draft_tree t;
    build_ok(2, 2, 4, two_by_two, &t);
    cr_assert_eq(t.n_kept, 3);
    const cfg_draft_node *g = &t.nodes[t.kept[2]];
    cr_assert_eq(g->depth, 2);
    cr_assert_eq(g->rank, 0);
    cr_assert_eq(g->parent, 0, "the 0.24 node hangs under A (0.6)");
    cr_assert_float_eq(g->score, 0.24, 1e-12);
    cr_assert_float_eq(t.expected, 1.0 + 0.6 + 0.3 + 0.24, 1e-12);
    cfg_draft_tree_free(&t);

    /* The whole tree (ndt = cap = 1 + 2 + 1 x 4 = 7): every candidate. */
    build_ok(2, 2, 7, two_by_two, &t);
    cr_assert_float_eq(t.expected, 1.0 + 0.6 + 0.3 + 0.24 + 0.12 + 0.12 + 0.06, 1e-12);
    cfg_draft_tree_free(&t);
}

Test(accept_tree, ties_keep_the_parent_first)
{
    /* depth 2 rank 0 = 0.5: A's first child scores 0.3, equal to B; B comes first in SGLang's order. */
    const double r[] = {0.6, 0.3, 0.5, 0.2};
    cfg_draft_tree t;
    build_ok(2, 2, 3, r, &t);
    cr_assert_eq(t.kept[1], 1, "B (depth 1) before A's child of equal score");
    cfg_draft_tree_free(&t);
    /* Zero rates tie everything at 0; still no kept node without its parent. */
    const double z[] = {0.5, 0.0, 0.0, 0.0, 0.0, 0.0};
    build_ok(3, 2, 9, z, &t);
    bool kept[16] = {false};
    for (int k = 0; k < t.n_kept; k++)
        kept[t.kept[k]] = true;
    for (int k = 0; k < t.n_kept; k++) {
        int par = t.nodes[t.kept[k]].parent;
        cr_assert(par < 0 || kept[par], "node %d kept without its parent %d", t.kept[k], par);
    }
    cr_assert_float_eq(t.expected, 1.5, 1e-12);
    cfg_draft_tree_free(&t);
}

Test(accept_tree, only_the_frontier_expands)
{
    /* steps 3, topk 2; depth 3 ranks 0.5, 0.25. Depth-2 candidates 0.24 (A0), 0.12 (A1), 0.12 (B0), 0.06 (B1):
     * the frontier is A0 and A1 (A1 ties B0 and comes first), so no depth-3 node descends from B. */
    const double r[] = {0.6, 0.3, 0.4, 0.2, 0.5, 0.25};
    cfg_draft_tree t;
    build_ok(3, 2, 11, r, &t);
    cr_assert_eq(t.n_nodes, 10, "2 + 4 + 4");
    for (int i = 6; i < 10; i++) {
        int par = t.nodes[i].parent;
        cr_assert_eq(t.nodes[i].depth, 3);
        cr_assert(par == 2 || par == 3, "depth-3 node %d under %d, not under the frontier (A0, A1)", i, par);
    }
    /* All 10 kept: 1 + 0.9 + (0.24 + 0.12 + 0.12 + 0.06) + (0.12 + 0.06 + 0.06 + 0.03). */
    cr_assert_float_eq(t.expected, 1.0 + 0.9 + 0.54 + 0.27, 1e-12);
    cfg_draft_tree_free(&t);
}

Test(accept_tree, impossible_shapes_name_the_limit)
{
    cfg_draft_tree t;
    char why[300];
    cr_assert_eq(cfg_draft_tree_build(2, 2, 8, two_by_two, &t, why, sizeof(why)), -1);
    cr_assert_not_null(strstr(why, "[2, 7]"), "%s", why);
    cr_assert_eq(cfg_draft_tree_build(2, 2, 1, two_by_two, &t, why, sizeof(why)), -1);
    cr_assert_eq(cfg_draft_tree_cap(3, 4), 1 + 4 + 2 * 16);
}

/* ---------------- the chain is the topk = 1 tree ---------------- */

/* The formula vpsim used before trees: 1 + sum_i prod_{j<=i} a_j, positions past the vector reuse the
 * last rate. */
static double old_chain(const double *a, int n, int steps)
{
    double e = 1.0, c = 1.0;
    for (int i = 0; i < steps; i++) {
        c *= a[i < n ? i : n - 1];
        e += c;
    }
    return e;
}

Test(accept_chain, equals_the_old_formula_and_the_topk_1_tree)
{
    const double v1[] = {0.75, 0.6}, v2[] = {0.9, 0.8, 0.5}, v3[] = {0.3}, v4[] = {1.0, 0.0, 0.7};
    const struct {
        const double *a;
        int n, steps;
    } cases[] = {{v1, 2, 2}, {v1, 2, 3}, {v1, 2, 7}, {v2, 3, 3}, {v2, 3, 1}, {v3, 1, 5}, {v4, 3, 3}};
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        cfg_scenario sc = th_chain_scenario(cases[c].steps, cases[c].a, cases[c].n);
        cfg_accept acc;
        cfg_accept_eval(&sc, &acc);
        const double want = old_chain(cases[c].a, cases[c].n, cases[c].steps);
        cr_assert_eq(acc.tokens, want, "case %zu: %.17g vs %.17g", c, acc.tokens, want);
        cr_assert_eq(acc.source, CFG_ACCEPT_CHAIN);
        cr_assert_eq(acc.extrapolated, cases[c].steps > cases[c].n, "case %zu", c);
        double rate[32];
        for (int d = 0; d < cases[c].steps; d++)
            rate[d] = cases[c].a[d < cases[c].n ? d : cases[c].n - 1];
        cfg_draft_tree t;
        build_ok(cases[c].steps, 1, cases[c].steps + 1, rate, &t);
        cr_assert_float_eq(t.expected, want, 1e-12, "case %zu", c);
        cfg_draft_tree_free(&t);
    }
    cfg_scenario sc = th_chain_scenario(2, v1, 2);
    cfg_accept acc;
    cfg_accept_eval(&sc, &acc);
    cr_assert_str_eq(acc.explain, "chain formula: 1 + 0.75 + 0.75x0.6 = 2.200");
    cr_assert_str_eq(acc.warning, "");
    sc = th_chain_scenario(5, v1, 2);
    cfg_accept_eval(&sc, &acc);
    cr_assert_str_eq(acc.warning, "steps=5 but speculative.acceptance has 2 rates; positions 3-5 reuse 0.6");
}

Test(accept_chain, default_tree_beats_the_chain_and_the_chain_is_unchanged)
{
    cfg_scenario sc;
    plan p;
    const char *chain[] = {"speculative.steps=3"};
    th_plan_build("configs/default.yaml", chain, 1, &sc, &p);
    cfg_accept c;
    cfg_accept_eval(&sc, &c);
    /* acceptance [0.75, 0.6]; position 3 reuses 0.6 (as before trees). */
    cr_assert_float_eq(c.tokens, 1.0 + 0.75 + 0.45 + 0.27, 1e-12);
    cr_assert_float_eq(p.expected_tokens, c.tokens, 1e-12);
    th_plan_done(&sc, &p);

    const char *tree[] = {"speculative.steps=3", "speculative.topk=4", "speculative.num_draft_tokens=8"};
    th_plan_build("configs/default.yaml", tree, 3, &sc, &p);
    cfg_accept t;
    cfg_accept_eval(&sc, &t);
    cr_assert_eq(t.source, CFG_ACCEPT_TREE);
    cr_assert_gt(t.tokens, c.tokens);
    /* Default rank rates [0.1, 0.05, 0.03]: the 7 best of 36 candidates are 0.75, 0.45, 0.27 (the chain),
     * 0.1, 0.075 (0.75 x 0.1), 0.06 (0.1 x 0.6) and 0.05. */
    cr_assert_float_eq(t.tokens, 1.0 + 0.75 + 0.45 + 0.27 + 0.1 + 0.075 + 0.06 + 0.05, 1e-12);
    cr_assert_eq(t.kept_nodes, 7);
    cr_assert_eq(t.candidates, 4 + 2 * 16);
    cr_assert_float_eq(p.expected_tokens, t.tokens, 1e-12);
    /* The verify checks 8 tokens; the draft-extend runs over the longest acceptable path, steps + 1. */
    cr_assert_eq(th_phase(&p, "verify")->tokens, 8);
    cr_assert_eq(th_phase(&p, "draft_extend")->tokens, 4);
    cr_assert_eq(th_phase(&p, "draft_2")->tokens, 4);
    th_plan_done(&sc, &p);
}

/* ---------------- Monte Carlo: greedy verification of the tree ---------------- */

static uint64_t mc_state;
static double mc_uniform(void)
{
    /* splitmix64 */
    uint64_t z = (mc_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

Test(accept_tree, monte_carlo_agrees_with_the_exact_expectation)
{
    enum { STEPS = 3, TOPK = 3, NDT = 9, SAMPLES = 200000 };
    /* Per depth, the probability that the target's token is the draft's rank-r candidate (disjoint). */
    const double rate[STEPS * TOPK] = {0.55, 0.2, 0.1, 0.6, 0.15, 0.05, 0.5, 0.2, 0.1};
    cfg_draft_tree t;
    build_ok(STEPS, TOPK, NDT, rate, &t);
    bool *kept = util_xcalloc((size_t)t.n_nodes, sizeof(bool));
    for (int k = 0; k < t.n_kept; k++)
        kept[t.kept[k]] = true;
    mc_state = 20240917;
    double sum = 0.0, sum2 = 0.0;
    for (int s = 0; s < SAMPLES; s++) {
        int node = -1, accepted = 1; /* the bonus token always comes */
        for (int d = 1; d <= STEPS; d++) {
            /* The target's next token: the rank-r candidate with its rate, else none of the drafted ones. */
            double u = mc_uniform(), acc = 0.0;
            int rank = -1;
            for (int r = 0; r < TOPK && rank < 0; r++) {
                acc += rate[(d - 1) * TOPK + r];
                if (u < acc)
                    rank = r;
            }
            int child = -1;
            for (int i = 0; i < t.n_nodes && rank >= 0; i++)
                if (t.nodes[i].parent == node && t.nodes[i].depth == d && t.nodes[i].rank == rank)
                    child = i;
            if (child < 0 || !kept[child])
                break; /* not drafted, or drafted but not verified: the walk stops */
            accepted++;
            node = child;
        }
        sum += accepted;
        sum2 += (double)accepted * accepted;
    }
    const double mean = sum / SAMPLES, var = sum2 / SAMPLES - mean * mean;
    const double se = sqrt(var / SAMPLES);
    cr_assert_lt(fabs(mean - t.expected), 4.0 * se, "Monte Carlo %.5f vs exact %.5f (standard error %.5f)", mean,
                 t.expected, se);
    cr_assert_gt(t.expected, 1.0 + 0.55 + 0.55 * 0.6, "the tree is worth more than its top-1 chain");
    free(kept);
    cfg_draft_tree_free(&t);
}
