/* cfg_accept: tokens per verify pass — the chain formula (topk = 1), the draft tree SGLang's EAGLE worker
 * verifies (topk > 1), or a measured accept length — behind one function every caller uses.
 *
 * The tree follows python/sglang/srt/speculative/eagle_utils.py (select_top_k_tokens,
 * organize_draft_results): step 1 drafts the root's topk children; each later step expands each of the
 * topk frontier nodes into topk children and keeps the topk best by cumulative score as the next
 * frontier; the verify pass checks the root plus the num_draft_tokens - 1 best-scoring drafted nodes.
 * vpsim has no draft logits, so a node's score is its path acceptance probability (a calibrated draft;
 * docs/model.md "Acceptance"). Under greedy verification at most one child of a node matches the
 * target, so the expected accepted length is 1 (the bonus token) + the sum of the kept nodes' scores. */
#ifndef VPSIM_CFG_ACCEPT_H
#define VPSIM_CFG_ACCEPT_H

#include "cfg.h"

#include <stdbool.h>
#include <stddef.h>

typedef enum {
    CFG_ACCEPT_NONE,     /* no speculation: one token per cycle */
    CFG_ACCEPT_CHAIN,    /* topk = 1: 1 + sum_i prod_{j<=i} a_j */
    CFG_ACCEPT_TREE,     /* topk > 1: the draft tree */
    CFG_ACCEPT_MEASURED, /* speculative.accept_length */
    CFG_ACCEPT_TABLE,    /* a row of speculative.accept_table */
    CFG_ACCEPT_SOURCE_COUNT
} cfg_accept_source;
/* Stable keys for results: none, chain, tree, accept_length, accept_table. */
extern const char *const cfg_accept_source_names[];

typedef struct cfg_accept {
    double tokens;       /* mean tokens per verify per request, the bonus token included */
    double model_tokens; /* what the chain or tree model gives, also when a measurement overrides it */
    int source;          /* cfg_accept_source */
    int table_row;       /* source CFG_ACCEPT_TABLE: the row's index; else -1 */
    bool extrapolated;   /* the model used depths past the given rates (they reuse the last ones) */
    int kept_nodes;      /* drafted nodes the verify pass checks (chain: steps) */
    int candidates;      /* drafted nodes in all (chain: steps) */
    char explain[200];   /* one line: source, formula, value */
    char warning[160];   /* "" or what was extrapolated */
} cfg_accept;

/* Tokens per verify for the scenario as loaded (shapes already checked by the loader). */
void cfg_accept_eval(const cfg_scenario *sc, cfg_accept *out);

/* The conditional acceptance the model uses for depth d >= 1 and rank r >= 0; *extrapolated (may be
 * NULL) is set when d is past the rates given for that rank. */
double cfg_accept_rate(const cfg_scenario *sc, int depth, int rank, bool *extrapolated);

/* ---- the draft tree ---- */

typedef struct cfg_draft_node {
    int parent;   /* index of the parent node; -1 = the root (the last verified token) */
    int depth;    /* 1 .. steps */
    int rank;     /* 0 .. topk-1 among the parent's drafted children */
    double score; /* product of the conditional rates along the path */
} cfg_draft_node;

typedef struct cfg_draft_tree {
    cfg_draft_node *nodes; /* every drafted candidate, in SGLang's score_list order */
    int n_nodes;
    int *kept; /* the num_draft_tokens - 1 verified candidates, best score first */
    int n_kept;
    double expected;                     /* 1 + sum of the kept scores */
    double depth_sum[CFG_MAX_ACCEPT + 1]; /* [d]: kept scores at depth d (d = 1 .. steps) */
} cfg_draft_tree;

/* Most tokens a verify can hold for (steps, topk): the root + topk + (steps - 1) * topk^2 candidates. */
long long cfg_draft_tree_cap(int steps, int topk);

/* Build the tree for `steps` (1..CFG_MAX_ACCEPT), `topk` >= 1 and `ndt` in [2, cap] from the conditional
 * rates rate[(d - 1) * topk + r]. Ties keep the earlier candidate, so a kept node's parent is always
 * kept (a child never scores above its parent). Returns 0, or -1 with `why` naming the limit. */
int cfg_draft_tree_build(int steps, int topk, int ndt, const double *rate, cfg_draft_tree *out, char *why,
                         size_t why_len);
void cfg_draft_tree_free(cfg_draft_tree *t);

/* ---- loading (cfg_scenario.c) ---- */

/* Schema binders of speculative.rank_acceptance and speculative.accept_table. */
int cfg_bind_rank_rates(const cfg_field *f, const cfg_node *n, void *slot, const char *path, cfg_error *err);
int cfg_bind_accept_table(const cfg_field *f, const cfg_node *n, void *slot, const char *path, cfg_error *err);

/* Checks across the acceptance keys once the shape is known: a depth's candidate rates sum to at most 1,
 * accept_length fits the shape. `scen` is the scenario's root node (for file:line:col). */
int cfg_accept_check(const cfg_scenario *sc, cfg_node *scen, cfg_error *err);

#endif
