/* Loading a scenario: the scenario file, its --set overrides, the three files it names, and the checks
 * that need more than one field (consistency of the speculative settings, TP divisibility). */
#include "cfg.h"

#include "cfg_accept.h"
#include "../util/util.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

double cfg_dtype_bytes(cfg_dtype dt)
{
    switch (dt) {
    case CFG_DT_BF16:
    case CFG_DT_FP16: return 2.0;
    case CFG_DT_FP8: return 1.0;
    case CFG_DT_INT4: return 0.5;
    case CFG_DT_FP32: return 4.0;
    default: return 2.0;
    }
}

double cfg_dtype_weight_bytes(cfg_dtype dt, int group)
{
    double b = cfg_dtype_bytes(dt);
    if (group > 0) {
        /* INT4 W4A16 (e.g. compressed-tensors pack-quantized) keeps a bf16 scale per group;
         * block-FP8 (DeepSeek-V3) keeps an fp32 scale per 128x128 block. */
        double scale_bytes = dt == CFG_DT_FP8 ? 4.0 : 2.0;
        b += scale_bytes / group;
    }
    return b;
}

/* ---------------- --set ---------------- */

typedef struct set_arg {
    const char *text; /* as given */
    char *key;        /* dotted key */
    char *value;
} set_arg;

static int split_set(const char *text, set_arg *out, cfg_error *err)
{
    const char *eq = strchr(text, '=');
    if (!eq || eq == text) {
        cfg_error_plain(err, "--set '%s': expected KEY=VALUE, e.g. --set speculative.steps=3", text);
        return -1;
    }
    for (const char *p = text; p < eq; p++) {
        if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '_' || *p == '.')) {
            cfg_error_plain(err, "--set '%s': key '%.*s' may hold only a-z, 0-9, '_' and '.'", text,
                            (int)(eq - text), text);
            return -1;
        }
    }
    const char *dots = strstr(text, "..");
    if (eq[-1] == '.' || text[0] == '.' || (dots && dots < eq)) {
        cfg_error_plain(err, "--set '%s': malformed dotted key", text);
        return -1;
    }
    out->text = text;
    out->key = util_xstrndup(text, (size_t)(eq - text));
    out->value = util_xstrdup(eq + 1);
    /* Short forms users reach for first (README "Configuration"). */
    static const char *const aliases[][2] = {{"system.p2p", "system.topology.p2p"}};
    for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
        if (strcmp(out->key, aliases[i][0]) == 0) {
            free(out->key);
            out->key = util_xstrdup(aliases[i][1]);
        }
    return 0;
}

int cfg_check_set_key(const char *set, cfg_error *err)
{
    set_arg a;
    if (split_set(set, &a, err))
        return -1;
    const cfg_field *table = cfg_scenario_fields;
    const char *rest = a.key;
    if (strncmp(a.key, "model.", 6) == 0 || strncmp(a.key, "draft.", 6) == 0) {
        table = cfg_model_fields;
        rest = a.key + 6;
    } else if (strncmp(a.key, "system.", 7) == 0) {
        table = cfg_system_fields;
        rest = a.key + 7;
    }
    const cfg_field *f = cfg_schema_find(table, rest);
    int rc = 0;
    if (!f || f->type == CFG_T_MAP) {
        cfg_error_plain(err, "--set '%s': unknown key '%s' (see `vpsim config-reference`)", set, a.key);
        rc = -1;
    }
    free(a.key);
    free(a.value);
    return rc;
}

/* Graft the value of `a` at dotted path `key` under `root` (a map in `doc`). */
static int graft(cfg_doc *doc, cfg_node *root, const char *key, const set_arg *a, cfg_error *err)
{
    char *src = util_xasprintf("--set '%s'", a->text);
    cfg_doc *vdoc = cfg_doc_load_text(a->value, strlen(a->value), src, true, err);
    free(src);
    if (!vdoc)
        return -1;
    cfg_node *value = cfg_doc_root(vdoc);
    cfg_doc_adopt(doc, vdoc);

    char *copy = util_xstrdup(key);
    cfg_node *cur = root;
    char *save = NULL;
    char *part = strtok_r(copy, ".", &save);
    int rc = 0;
    while (part) {
        char *next = strtok_r(NULL, ".", &save);
        if (!next) {
            cfg_map_put(doc, cur, part, value);
            break;
        }
        cfg_node *child = cfg_map_get(cur, part);
        if (!child) {
            child = cfg_node_new_map(doc, value);
            cfg_map_put(doc, cur, part, child);
        } else if (child->kind != CFG_NODE_MAP) {
            cfg_errorf(err, value, "'%s' is not a section, so '%s' cannot be set", part, key);
            rc = -1;
            break;
        }
        cur = child;
        part = next;
    }
    free(copy);
    return rc;
}

/* ---------------- cross-field checks ---------------- */

static cfg_node *node_or(cfg_node *root, const char *dotted)
{
    cfg_node *n = cfg_node_at(root, dotted);
    return n ? n : root;
}

static int check_divides(cfg_node *tp_node, int tp, int value, const char *what, cfg_node *where, cfg_error *err)
{
    if (value % tp == 0)
        return 0;
    char at[1100];
    if (where->from_set)
        snprintf(at, sizeof(at), "%s", where->src); /* "--set '...'": no line or column */
    else
        snprintf(at, sizeof(at), "%s:%d:%d", where->src, where->line, where->col);
    cfg_errorf(err, tp_node, "parallel.tp=%d does not divide %s=%d (%s); choose a TP that divides it", tp, what, value,
               at);
    return -1;
}

static int check_model(const cfg_model *m, cfg_node *root, const char *label, cfg_error *err)
{
    if (m->arch == CFG_ARCH_DEEPSEEK_V3) {
        if (m->attention.kind != CFG_ATTN_MLA) {
            cfg_errorf(err, node_or(root, "attention.kind"), "%s: arch deepseek_v3 needs attention.kind: mla", label);
            return -1;
        }
        if (!m->attention.q_lora_rank || !m->attention.kv_lora_rank || !m->attention.qk_nope_head_dim ||
            !m->attention.qk_rope_head_dim || !m->attention.v_head_dim) {
            cfg_errorf(err, node_or(root, "attention"),
                       "%s: mla attention needs q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim and "
                       "v_head_dim",
                       label);
            return -1;
        }
        if (m->first_k_dense > m->layers) {
            cfg_errorf(err, node_or(root, "first_k_dense"), "%s: first_k_dense=%d exceeds layers=%d", label,
                       m->first_k_dense, m->layers);
            return -1;
        }
        if (m->first_k_dense < m->layers) {
            if (m->moe.experts < 1 || m->moe.top_k < 1 || m->moe.intermediate < 1) {
                cfg_errorf(err, node_or(root, "moe"), "%s: MoE layers need moe.experts, moe.top_k and moe.intermediate",
                           label);
                return -1;
            }
            if (m->moe.top_k > m->moe.experts) {
                cfg_errorf(err, node_or(root, "moe.top_k"), "%s: moe.top_k=%d exceeds moe.experts=%d", label,
                           m->moe.top_k, m->moe.experts);
                return -1;
            }
        }
    } else {
        if (m->attention.kind != CFG_ATTN_GQA) {
            cfg_errorf(err, node_or(root, "attention.kind"), "%s: arch eagle3 needs attention.kind: gqa", label);
            return -1;
        }
        int kv = m->attention.kv_heads ? m->attention.kv_heads : m->attention.heads;
        if (m->attention.heads % kv) {
            cfg_errorf(err, node_or(root, "attention.kv_heads"), "%s: attention.kv_heads=%d does not divide heads=%d",
                       label, kv, m->attention.heads);
            return -1;
        }
    }
    return 0;
}

static int check_tp(const cfg_scenario *sc, cfg_node *scen, cfg_node *troot, cfg_node *droot, cfg_error *err)
{
    int tp = sc->parallel.tp;
    cfg_node *tpn = node_or(scen, "parallel.tp");
    if (tp & (tp - 1)) {
        cfg_errorf(err, tpn, "parallel.tp=%d: must be 1, 2, 4, 8 or 16", tp);
        return -1;
    }
    const cfg_model *t = &sc->target;
    if (check_divides(tpn, tp, t->attention.heads, "model attention.heads", node_or(troot, "attention.heads"), err) ||
        check_divides(tpn, tp, t->vocab, "model vocab", node_or(troot, "vocab"), err))
        return -1;
    if (t->first_k_dense > 0 &&
        check_divides(tpn, tp, t->mlp.intermediate, "model mlp.intermediate", node_or(troot, "mlp.intermediate"), err))
        return -1;
    if (t->first_k_dense < t->layers && check_divides(tpn, tp, t->moe.intermediate, "model moe.intermediate",
                                                      node_or(troot, "moe.intermediate"), err))
        return -1;
    if (sc->speculative.algorithm == CFG_SPEC_NONE)
        return 0;
    const cfg_model *d = &sc->draft;
    int kv = d->attention.kv_heads ? d->attention.kv_heads : d->attention.heads;
    int dvocab = d->eagle3.draft_vocab ? d->eagle3.draft_vocab : d->vocab;
    if (check_divides(tpn, tp, d->attention.heads, "draft attention.heads", node_or(droot, "attention.heads"), err) ||
        check_divides(tpn, tp, d->mlp.intermediate, "draft mlp.intermediate", node_or(droot, "mlp.intermediate"), err) ||
        check_divides(tpn, tp, dvocab, "draft eagle3.draft_vocab", node_or(droot, "eagle3.draft_vocab"), err) ||
        check_divides(tpn, tp, d->vocab, "draft vocab", node_or(droot, "vocab"), err))
        return -1;
    /* Fewer KV heads than ranks: SGLang replicates them, which needs tp to be a multiple. */
    if (kv < tp ? tp % kv : kv % tp) {
        cfg_errorf(err, tpn, "parallel.tp=%d and draft attention.kv_heads=%d: one must divide the other", tp, kv);
        return -1;
    }
    return 0;
}

/* Expert parallelism reuses the TP group's GPUs (SGLang: --ep-size equals --tp-size), so ep is 1 or tp. */
static int check_ep(const cfg_scenario *sc, cfg_node *scen, cfg_node *troot, cfg_error *err)
{
    const int ep = sc->parallel.ep, tp = sc->parallel.tp;
    const cfg_model *t = &sc->target;
    cfg_node *epn = node_or(scen, "parallel.ep");
    if (ep != 1 && ep != tp) {
        cfg_errorf(err, epn, "parallel.ep=%d: must be 1 or parallel.tp=%d (the expert-parallel group is the "
                   "tensor-parallel group's GPUs, as SGLang's --ep-size = --tp-size)", ep, tp);
        return -1;
    }
    if (ep > 1 && t->first_k_dense < t->layers && t->moe.experts % ep) {
        cfg_node *at = node_or(troot, "moe.experts");
        char where[1100];
        if (at->from_set)
            snprintf(where, sizeof(where), "%s", at->src);
        else
            snprintf(where, sizeof(where), "%s:%d:%d", at->src, at->line, at->col);
        cfg_errorf(err, epn, "parallel.ep=%d does not divide model moe.experts=%d (%s): each rank holds experts / "
                   "ep whole experts", ep, t->moe.experts, where);
        return -1;
    }
    if (!sc->parallel.dp_attention)
        return 0;
    cfg_node *dpn = node_or(scen, "parallel.dp_attention");
    if (ep < 2) {
        cfg_errorf(err, dpn, "parallel.dp_attention needs parallel.ep > 1 (it is %d): attention is data-parallel "
                   "over the expert-parallel ranks", ep);
        return -1;
    }
    if (sc->workload.batch % ep) {
        cfg_errorf(err, dpn, "parallel.dp_attention: workload.batch=%d is not a multiple of parallel.ep=%d (each "
                   "rank attends for batch / ep requests of its own)", sc->workload.batch, ep);
        return -1;
    }
    return 0;
}

/* Two-batch overlap splits the batch's requests into two micro-batches: one request cannot be split. */
static int check_overlap(const cfg_scenario *sc, cfg_node *scen, cfg_error *err)
{
    if (!sc->overlap.two_batch)
        return 0;
    cfg_node *at = node_or(scen, "overlap.two_batch");
    /* The micro-batch split scales whole-pass ops; the other rewrites of the layer collectives look for an
     * allreduce next to its norm, which the interleaved micro-batches no longer have. Not modelled together. */
    const char *other = sc->parallel.ep > 1                   ? "parallel.ep > 1"
                        : sc->collectives.allreduce_split     ? "collectives.allreduce_split"
                        : sc->fusion.allreduce_residual_norm ? "fusion.allreduce_residual_norm"
                                                              : NULL;
    if (other) {
        cfg_errorf(err, at, "overlap.two_batch=true together with %s is not modelled yet: set one of them", other);
        return -1;
    }
    if (sc->workload.batch >= 2)
        return 0;
    cfg_errorf(err, at,
               "overlap.two_batch=true needs workload.batch >= 2 (it splits the batch's requests into two "
               "micro-batches; an odd batch gives the first the extra request), but workload.batch=%d",
               sc->workload.batch);
    return -1;
}

static int check_speculative(cfg_scenario *sc, cfg_node *scen, cfg_node *droot, cfg_error *err)
{
    if (sc->speculative.algorithm == CFG_SPEC_NONE)
        return 0;
    int steps = sc->speculative.steps, topk = sc->speculative.topk, ndt = sc->speculative.num_draft_tokens;
    cfg_node *ndt_node = cfg_node_at(scen, "speculative.num_draft_tokens");
    cfg_node *at = ndt_node ? ndt_node : node_or(scen, "speculative.steps");
    long long cap = cfg_draft_tree_cap(steps, topk);
    if (ndt == 0) {
        /* Not given: SGLang's server_args derives steps + 1 for a chain; a tree's node budget is a choice. */
        if (topk > 1) {
            cfg_errorf(err, node_or(scen, "speculative.topk"),
                       "speculative.topk=%d drafts a tree: set speculative.num_draft_tokens, the tokens it verifies "
                       "per request (in [2, %lld] for steps=%d)",
                       topk, cap, steps);
            return -1;
        }
        ndt = sc->speculative.num_draft_tokens = steps + 1;
    }
    if (topk == 1 && ndt != steps + 1) {
        cfg_errorf(err, at,
                   "speculative.num_draft_tokens=%d is inconsistent with speculative.steps=%d: with topk=1 the verify "
                   "pass checks steps + 1 = %d tokens per request (as in SGLang); set both, or leave "
                   "num_draft_tokens out",
                   ndt, steps, steps + 1);
        return -1;
    }
    /* SGLang's tree has 1 + topk + (steps-1) * topk^2 candidates to choose from (cfg_accept.h). */
    if (topk > 1 && (ndt < 2 || ndt > cap)) {
        cfg_errorf(err, at,
                   "speculative.num_draft_tokens=%d: with steps=%d and topk=%d it must be in [2, %lld] (the root, "
                   "topk drafted at step 1 and topk^2 at each later step)",
                   ndt, steps, topk, cap);
        return -1;
    }
    if (sc->speculative.n_acceptance == 0) {
        cfg_errorf(err, node_or(scen, "speculative.acceptance"), "speculative.acceptance: needs at least one rate");
        return -1;
    }
    if (cfg_accept_check(sc, scen, err))
        return -1;
    const cfg_model *t = &sc->target;
    for (int i = 0; i < sc->draft.eagle3.n_aux_layers; i++) {
        if (sc->draft.eagle3.aux_layers[i] >= t->layers) {
            cfg_errorf(err, node_or(droot, "eagle3.aux_layers"),
                       "draft eagle3.aux_layers[%d]=%d: the target has only %d layers", i,
                       sc->draft.eagle3.aux_layers[i], t->layers);
            return -1;
        }
    }
    if (sc->draft.arch != CFG_ARCH_EAGLE3) {
        cfg_errorf(err, node_or(droot, "arch"), "draft model: arch must be eagle3 for speculative.algorithm eagle3");
        return -1;
    }
    if (sc->draft.hidden != t->hidden) {
        cfg_errorf(err, node_or(droot, "hidden"), "draft hidden=%d differs from the target's hidden=%d",
                   sc->draft.hidden, t->hidden);
        return -1;
    }
    return 0;
}

/* ---------------- loading ---------------- */

/* Load one referenced file, apply the --set arguments that start with `prefix.`, bind to `table`. */
static cfg_doc *load_sub(const char *path, const char *prefix, set_arg *sets, int n_sets, const cfg_field *table,
                         void *out, cfg_error *err)
{
    cfg_doc *doc = cfg_doc_load_file_cached(path, err);
    if (!doc)
        return NULL;
    cfg_node *root = cfg_doc_root(doc);
    size_t plen = strlen(prefix);
    for (int i = 0; i < n_sets; i++) {
        if (strncmp(sets[i].key, prefix, plen) == 0 && sets[i].key[plen] == '.') {
            if (root->kind != CFG_NODE_MAP || graft(doc, root, sets[i].key + plen + 1, &sets[i], err)) {
                if (root->kind != CFG_NODE_MAP)
                    cfg_errorf(err, root, "expected a mapping of keys");
                cfg_doc_free(doc);
                return NULL;
            }
        }
    }
    if (cfg_schema_bind(table, root, out, "", err)) {
        cfg_doc_free(doc);
        return NULL;
    }
    return doc;
}

static bool is_file_prefix(const char *key)
{
    return (strncmp(key, "model.", 6) == 0 || strncmp(key, "draft.", 6) == 0 || strncmp(key, "system.", 7) == 0);
}

int cfg_scenario_load(const char *path, const char *const *sets_text, int n_sets, const char *system_override,
                      cfg_scenario *out, cfg_error *err)
{
    memset(out, 0, sizeof(*out));
    if (n_sets > CFG_MAX_SETS) {
        cfg_error_plain(err, "too many --set arguments (%d; at most %d)", n_sets, CFG_MAX_SETS);
        return -1;
    }
    set_arg *sets = util_xcalloc((size_t)n_sets + 1, sizeof(*sets));
    cfg_doc *scen = NULL, *tdoc = NULL, *ddoc = NULL, *sdoc = NULL;
    int rc = -1;
    for (int i = 0; i < n_sets; i++)
        if (split_set(sets_text[i], &sets[i], err))
            goto done;

    scen = cfg_doc_load_file_cached(path, err);
    if (!scen)
        goto done;
    cfg_node *root = cfg_doc_root(scen);
    if (root->kind != CFG_NODE_MAP) {
        cfg_errorf(err, root, "a scenario must be a mapping of keys (see configs/default.yaml)");
        goto done;
    }
    for (int i = 0; i < n_sets; i++)
        if (!is_file_prefix(sets[i].key) && graft(scen, root, sets[i].key, &sets[i], err))
            goto done;
    if (system_override) {
        char *src = util_xasprintf("--system '%s'", system_override);
        cfg_doc *vdoc = cfg_doc_load_text("x", 1, src, true, err);
        free(src);
        cfg_node *v = cfg_doc_root(vdoc);
        free(v->scalar);
        v->scalar = util_xstrdup(system_override);
        v->quoted = true;
        cfg_doc_adopt(scen, vdoc);
        cfg_map_put(scen, root, "system", v);
    }
    if (cfg_schema_bind(cfg_scenario_fields, root, out, "", err))
        goto done;
    out->path = util_xstrdup(path);

    if (!(tdoc = load_sub(out->model_path, "model", sets, n_sets, cfg_model_fields, &out->target, err)) ||
        !(ddoc = load_sub(out->draft_path, "draft", sets, n_sets, cfg_model_fields, &out->draft, err)) ||
        !(sdoc = load_sub(out->system_path, "system", sets, n_sets, cfg_system_fields, &out->system, err)))
        goto done;

    if (check_model(&out->target, cfg_doc_root(tdoc), "model", err) ||
        check_model(&out->draft, cfg_doc_root(ddoc), "draft", err) ||
        check_speculative(out, root, cfg_doc_root(ddoc), err) ||
        check_tp(out, root, cfg_doc_root(tdoc), cfg_doc_root(ddoc), err) ||
        check_ep(out, root, cfg_doc_root(tdoc), err) || check_overlap(out, root, err))
        goto done;
    /* Both rewrite the same layer allreduce (plan_split.c and the fusion's allreduce_norm). */
    if (out->collectives.allreduce_split && out->fusion.allreduce_residual_norm) {
        cfg_errorf(err, node_or(root, "collectives.allreduce_split"),
                   "collectives.allreduce_split and fusion.allreduce_residual_norm both replace the layer allreduce "
                   "and its norm: set at most one of them to true");
        goto done;
    }
    /* More distinct experts than the model has cannot be touched; clamping it would model another input
     * than the one given. */
    if (out->workload.active_experts > 0 && out->target.first_k_dense < out->target.layers &&
        out->workload.active_experts > out->target.moe.experts) {
        cfg_errorf(err, node_or(root, "workload.active_experts"),
                   "workload.active_experts=%d is more than the %d routed experts of the model (%s)",
                   out->workload.active_experts, out->target.moe.experts,
                   out->target.name ? out->target.name : "model");
        goto done;
    }
    /* The models of a collective take only the system: the scenario's NCCL tuning travels with it. */
    out->system.nccl_tuning = out->nccl;
    if (out->target.arch != CFG_ARCH_DEEPSEEK_V3) {
        cfg_errorf(err, node_or(cfg_doc_root(tdoc), "arch"), "model: the target must have arch deepseek_v3");
        goto done;
    }
    rc = 0;
done:
    for (int i = 0; i < n_sets; i++) {
        free(sets[i].key);
        free(sets[i].value);
    }
    free(sets);
    cfg_doc_free(scen);
    cfg_doc_free(tdoc);
    cfg_doc_free(ddoc);
    cfg_doc_free(sdoc);
    if (rc)
        cfg_scenario_free(out);
    return rc;
}

void cfg_scenario_free(cfg_scenario *sc)
{
    cfg_schema_free(cfg_scenario_fields, sc);
    free(sc->path);
    sc->path = NULL;
    cfg_schema_free(cfg_model_fields, &sc->target);
    cfg_schema_free(cfg_model_fields, &sc->draft);
    cfg_schema_free(cfg_system_fields, &sc->system);
}
