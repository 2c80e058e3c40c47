/* The plan as JSON ("vpsim.plan/1"): written by `vpsim plan --format json`, read back by `--plan FILE`.
 * Reading goes through cfg_tree (libyaml reads JSON), so a hand-edited plan gets file:line:col errors.
 * Derived terms (flops, bytes) are written for readers but recomputed on load from the shapes, so an
 * edited shape cannot disagree with its cost. */
#include "plan_json.h"

#include "../config/cfg_schema.h"
#include "../util/util.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define PLAN_SCHEMA "vpsim.plan/1"

/* ---------------- loading ---------------- */

/* A plan file is untrusted input: every field is range-checked by the schema (file:line:col), and no op
 * may move more than PLAN_MAX_OP_BYTES or cost more than PLAN_MAX_OP_FLOPS. Both are far past any
 * device (a 1 PiB operand, a million seconds of a PFLOP/s GPU), and PLAN_MAX_OP_BYTES keeps every
 * element and byte count a device derives from the shapes 2^13 short of wrapping a 64-bit size. */
#define PLAN_MAX_OP_BYTES 1125899906842624.0 /* 2^50 */
#define PLAN_MAX_OP_FLOPS 1e18
#define BIGN 1e12 /* any single dimension */

_Static_assert(sizeof(plan_op_kind) == sizeof(int) && sizeof(plan_stream) == sizeof(int) &&
                   sizeof(cfg_dtype) == sizeof(int) && sizeof(plan_phase_kind) == sizeof(int),
               "the schema binds enums as int");

/* Collectives span ranks 0..N-1 of the TP group, written out as a list; the op keeps N. */
static int bind_ranks(const cfg_field *f, const cfg_node *n, void *slot, const char *path, cfg_error *err)
{
    (void)f;
    if (n->kind != CFG_NODE_SEQ || n->n > 4096) {
        cfg_errorf(err, n, "%s: expected a list of rank numbers [0, 1, ..., N-1] (N <= 4096)", path);
        return -1;
    }
    for (size_t r = 0; r < n->n; r++) {
        long long x;
        const cfg_node *it = n->items[r];
        if (it->kind != CFG_NODE_SCALAR || it->quoted || !cfg_parse_int(it->scalar, &x) || x != (long long)r) {
            cfg_errorf(err, it, "%s: collectives span ranks 0..N-1 of the TP group in order (item %zu is not %zu)",
                       path, r, r);
            return -1;
        }
    }
    *(int *)slot = (int)n->n;
    return 0;
}

/* Which op kinds carry a field (cfg_field.kinds), in the order the writer puts them: the GEMM kinds
 * write m, n, k, batch, wdtype, wgroup; attention batch .. kv_shared; the norms m, n; the collectives
 * count, payload_bytes, ranks (an allreduce_norm after its m, n). */
#define K(kind) (1u << PLAN_OP_##kind)
#define K_GEMMS (K(GEMM) | K(GROUPED_GEMM) | K(EMBEDDING))
#define K_ROWS (K_GEMMS | K(NORM) | K(ELEMENTWISE) | K(ALLREDUCE_NORM))
#define K_COLLS (K(ALLREDUCE) | K(ALLGATHER) | K(REDUCE_SCATTER) | K(ALLTOALL) | K(ALLREDUCE_NORM))

/* Collectives span ranks 0..N-1 of the TP group, written out as a list; the op keeps N. */
static void write_ranks(util_json *j, const void *slot, const cfg_wctx *w)
{
    (void)w;
    util_json_arr_begin(j);
    for (int r = 0; r < *(const int *)slot; r++)
        util_json_int(j, r);
    util_json_arr_end(j);
}

#define OP(f) offsetof(plan_op, f)
static const cfg_field op_fields[] = {
    {.key = "kind", .type = CFG_T_ENUM, .offset = OP(kind), .choices = plan_op_kind_names, .doc = "op kind"},
    {.key = "name", .type = CFG_T_CHARS, .offset = OP(name), .max_items = PLAN_NAME_MAX, .doc = "op name"},
    {.key = "layer", .type = CFG_T_INT, .offset = OP(layer), .def = "-1", CFG_RANGE(-1, 1 << 20),
     .doc = "decoder layer, -1 outside the layers"},
    {.key = "stream", .type = CFG_T_ENUM, .offset = OP(stream), .def = "main", .choices = plan_stream_names},
    {.key = "micro_batch", .type = CFG_T_INT, .offset = OP(micro_batch), .def = "0", CFG_RANGE(0, 2),
     .omit_zero = true, /* written only for two-batch overlap: other plans read as before */
     .doc = "two-batch overlap: 0 = the whole batch, 1 = micro-batch a, 2 = micro-batch b"},
    {.key = "adtype", .type = CFG_T_ENUM, .offset = OP(adtype), .def = "bf16", .choices = cfg_dtype_names,
     .doc = "activations' dtype"},
    {.key = "m", .type = CFG_T_INT64, .offset = OP(m), .def = "0", CFG_RANGE(0, BIGN), .kinds = K_ROWS,
     .positive = true, .doc = "rows (tokens)"},
    {.key = "n", .type = CFG_T_INT64, .offset = OP(n), .def = "0", CFG_RANGE(0, BIGN), .kinds = K_ROWS,
     .positive = true, .doc = "columns (output width)"},
    {.key = "k", .type = CFG_T_INT64, .offset = OP(k), .def = "0", CFG_RANGE(0, BIGN), .kinds = K_GEMMS,
     .positive = true, .doc = "reduction width"},
    /* A grouped GEMM divides its rows among `batch` groups: 0 would divide by zero. */
    {.key = "batch", .type = CFG_T_INT, .offset = OP(batch), .def = "1", CFG_RANGE(1, 1 << 24),
     .kinds = K_GEMMS | K(ATTENTION), .doc = "weights (grouped GEMM) or sequences (attention)"},
    {.key = "q_len", .type = CFG_T_INT64, .offset = OP(q_len), .def = "0", CFG_RANGE(0, BIGN), .kinds = K(ATTENTION),
     .positive = true, .doc = "query tokens per sequence"},
    {.key = "kv_len", .type = CFG_T_INT64, .offset = OP(kv_len), .def = "0", CFG_RANGE(0, BIGN),
     .kinds = K(ATTENTION), .positive = true, .doc = "cached tokens per sequence"},
    {.key = "heads", .type = CFG_T_INT, .offset = OP(heads), .def = "0", CFG_RANGE(0, 1 << 20), .kinds = K(ATTENTION),
     .positive = true, .doc = "query heads on this rank"},
    {.key = "kv_heads", .type = CFG_T_INT, .offset = OP(kv_heads), .def = "0", CFG_RANGE(0, 1 << 20),
     .kinds = K(ATTENTION), .positive = true, .doc = "key/value heads on this rank"},
    {.key = "qk_dim", .type = CFG_T_INT, .offset = OP(qk_dim), .def = "0", CFG_RANGE(0, 1 << 20),
     .kinds = K(ATTENTION), .positive = true, .doc = "query/key width per head"},
    {.key = "v_dim", .type = CFG_T_INT, .offset = OP(v_dim), .def = "0", CFG_RANGE(0, 1 << 20),
     .kinds = K(ATTENTION), .positive = true, .doc = "value width per head"},
    {.key = "kv_shared", .type = CFG_T_BOOL, .offset = OP(kv_shared), .def = "false", .kinds = K(ATTENTION),
     .doc = "MLA: one latent per token shared by all heads"},
    {.key = "wdtype", .type = CFG_T_ENUM, .offset = OP(wdtype), .def = "bf16", .choices = cfg_dtype_names,
     .kinds = K_GEMMS, .doc = "weights' storage dtype"},
    {.key = "wgroup", .type = CFG_T_INT, .offset = OP(wgroup), .def = "0", CFG_RANGE(0, 1 << 20), .kinds = K_GEMMS,
     .doc = "quantisation group"},
    {.key = "count", .type = CFG_T_INT64, .offset = OP(count), .def = "0", CFG_RANGE(0, BIGN), .kinds = K_COLLS,
     .positive = true, .doc = "elements each rank contributes"},
    {.key = "payload_bytes", .type = CFG_T_INT64, .offset = OP(payload_bytes), .def = "0", CFG_RANGE(0, BIGN),
     .kinds = K_COLLS, .doc = "bytes each rank contributes"},
    {.key = "ranks", .type = CFG_T_CUSTOM, .offset = OP(ranks), .def = "[]", .bind = bind_ranks, .write = write_ranks,
     .kinds = K_COLLS, .json_schema = "{\"description\": \"the TP group's ranks 0..N-1, in order\", "
                                      "\"type\": \"array\", \"items\": {\"type\": \"integer\", \"minimum\": 0}, "
                                      "\"maxItems\": 4096}",
     .doc = "the TP group's ranks 0..N-1"},
    /* Derived cost terms: written for readers, recomputed from the shapes on load. */
    {.key = "flops", .type = CFG_T_DOUBLE, .offset = OP(flops), .derived = true, .doc = "derived: floating-point operations"},
    {.key = "weight_bytes", .type = CFG_T_DOUBLE, .offset = OP(weight_bytes), .derived = true,
     .doc = "derived: weight bytes this rank reads"},
    {.key = "bytes_read", .type = CFG_T_DOUBLE, .offset = OP(bytes_read), .derived = true,
     .doc = "derived: weights + activations + cache read"},
    {.key = "bytes_written", .type = CFG_T_DOUBLE, .offset = OP(bytes_written), .derived = true,
     .doc = "derived: bytes written"},
    {0},
};

/* The shape fields an op kind computes with (`positive` in op_fields): each must be at least 1. A field
 * left out reads as its default 0, and a gemm of n = 0 or an attention of 0 heads would load, run and
 * cost nothing. */
static int check_shape(const plan_op *op, const cfg_node *node, const char *path, cfg_error *err)
{
    /* A key of another kind (heads on a gemm) would be read and never used: the schema refuses it too. */
    const cfg_field *other = cfg_schema_check_carried(op_fields, op, node);
    if (other) {
        cfg_errorf(err, cfg_map_get(node, other->key), "%s (%s %s): %s ops have no \"%s\" (%s)", path,
                   plan_op_kind_names[op->kind], op->name, plan_op_kind_names[op->kind], other->key,
                   other->doc ? other->doc : "another kind's field");
        return -1;
    }
    const cfg_field *f = cfg_schema_check_positive(op_fields, op);
    if (!f)
        return 0;
    const cfg_node *at = cfg_map_get(node, f->key);
    cfg_errorf(err, at ? at : node, "%s (%s %s): \"%s\" %s; %s ops need it at least 1", path,
               plan_op_kind_names[op->kind], op->name, f->key, at ? "is 0" : "is missing", plan_op_kind_names[op->kind]);
    return -1;
}

static int check_op(void *obj, const cfg_node *node, const char *path, cfg_error *err)
{
    const plan_op *op = obj;
    if (check_shape(op, node, path, err))
        return -1;
    if (plan_op_is_collective(op->kind) && op->ranks < 2) {
        const cfg_node *ranks = cfg_map_get(node, "ranks");
        cfg_errorf(err, ranks ? ranks : node, "%s (%s): a collective needs \"ranks\": [0, 1, ...] with 2 or more ranks", path,
                   op->name);
        return -1;
    }
    /* A compute op's ranks are set from the plan afterwards; at 0 the bound assumes one rank, the most
     * bytes any rank could move. check_plan finalises the op itself once the ranks are known. */
    plan_op cost = *op;
    plan_op_finalize(&cost);
    const double bytes = cost.bytes_read + cost.bytes_written;
    if (!(bytes <= PLAN_MAX_OP_BYTES) || !(cost.flops <= PLAN_MAX_OP_FLOPS)) {
        cfg_errorf(err, node, "%s (%s): its shapes move %.3g bytes and cost %.3g flops; an op may move at most %.3g "
                              "bytes (1 PiB) and cost at most %.0e flops",
                   path, op->name, bytes, cost.flops, PLAN_MAX_OP_BYTES, PLAN_MAX_OP_FLOPS);
        return -1;
    }
    return 0;
}

/* The phase summary: derived (written for readers, recomputed on load by plan_summarize). */
static void write_allreduce_bytes(util_json *j, const void *slot, const cfg_wctx *w)
{
    const plan_phase_summary *s = w->base;
    (void)slot;
    util_json_arr_begin(j);
    for (int k = 0; k < s->allreduce_count; k++)
        util_json_int(j, s->allreduce_bytes[k]);
    util_json_arr_end(j);
}

#define SU(f) offsetof(plan_phase_summary, f)
static const cfg_field summary_fields[] = {
    {.key = "allreduce_count", .type = CFG_T_INT, .offset = SU(allreduce_count), .derived = true},
    {.key = "allreduce_bytes", .type = CFG_T_CUSTOM, .offset = SU(allreduce_bytes), .derived = true,
     .write = write_allreduce_bytes, .json_schema = "{\"type\": \"array\", \"items\": {\"type\": \"integer\"}}",
     .doc = "payload of each allreduce, in order"},
    {.key = "allgather_count", .type = CFG_T_INT, .offset = SU(allgather_count), .derived = true},
    {.key = "allgather_bytes", .type = CFG_T_INT64, .offset = SU(allgather_bytes_total), .derived = true},
    {.key = "gemm_count", .type = CFG_T_INT, .offset = SU(gemm_count), .derived = true},
    {.key = "flops", .type = CFG_T_DOUBLE, .offset = SU(flops), .derived = true},
    {.key = "weight_bytes", .type = CFG_T_DOUBLE, .offset = SU(weight_bytes), .derived = true},
    {.key = "bytes_read", .type = CFG_T_DOUBLE, .offset = SU(bytes_read), .derived = true},
    {.key = "bytes_written", .type = CFG_T_DOUBLE, .offset = SU(bytes_written), .derived = true},
    {0},
};

#define PH(f) offsetof(plan_phase, f)
static const cfg_field phase_fields[] = {
    {.key = "name", .type = CFG_T_CHARS, .offset = PH(name), .max_items = PLAN_NAME_MAX},
    {.key = "kind", .type = CFG_T_ENUM, .offset = PH(kind), .choices = plan_phase_kind_names},
    {.key = "model", .type = CFG_T_CHARS, .offset = PH(model), .max_items = PLAN_NAME_MAX, .def = "''"},
    {.key = "tokens", .type = CFG_T_INT, .offset = PH(tokens), .def = "1", CFG_RANGE(1, 1 << 20)},
    {.key = "batch", .type = CFG_T_INT, .offset = PH(batch), .def = "1", CFG_RANGE(1, 1 << 20)},
    {.key = "summary", .type = CFG_T_MAP, .offset = PH(summary), .fields = summary_fields, .derived = true,
     .doc = "derived: the phase's totals"},
    {.key = "ops", .type = CFG_T_MAP_LIST, .offset = PH(ops), .count_offset = PH(n_ops), .max_items = 1 << 20,
     .elem_size = sizeof(plan_op), .fields = op_fields, .post = check_op},
    {0},
};

/* The tag is checked before binding (plan_json_load: "not a vpsim plan"); bound here as a required key. */
static int bind_schema_tag(const cfg_field *f, const cfg_node *n, void *slot, const char *path, cfg_error *err)
{
    (void)f, (void)n, (void)slot, (void)path, (void)err;
    return 0;
}

static void write_schema_tag(util_json *j, const void *slot, const cfg_wctx *w)
{
    (void)slot, (void)w;
    util_json_str(j, PLAN_SCHEMA);
}

#define PL(f) offsetof(plan, f)
static const cfg_field plan_fields[] = {
    {.key = "schema", .type = CFG_T_CUSTOM, .bind = bind_schema_tag, .write = write_schema_tag,
     .json_schema = "{\"const\": \"" PLAN_SCHEMA "\"}"},
    {.key = "scenario", .type = CFG_T_CHARS, .offset = PL(scenario), .max_items = (int)sizeof(((plan *)0)->scenario),
     .def = "''"},
    {.key = "ranks", .type = CFG_T_INT, .offset = PL(ranks), CFG_RANGE(1, 4096)},
    {.key = "batch", .type = CFG_T_INT, .offset = PL(batch), .def = "1", CFG_RANGE(1, 1 << 20)},
    {.key = "context", .type = CFG_T_INT, .offset = PL(context), .def = "0", CFG_RANGE(0, 2147483647.0)},
    {.key = "active_experts", .type = CFG_T_INT, .offset = PL(active_experts), .def = "0", CFG_RANGE(0, 1 << 20)},
    {.key = "expected_tokens", .type = CFG_T_DOUBLE, .offset = PL(expected_tokens), .def = "1", CFG_RANGE(1, 1e6)},
    {.key = "phases", .type = CFG_T_MAP_LIST, .offset = PL(phases), .count_offset = PL(n_phases), .max_items = 4096,
     .elem_size = sizeof(plan_phase), .fields = phase_fields},
    {0},
};

void plan_json_write(util_json *j, const plan *p)
{
    util_json_obj_begin(j);
    cfg_schema_write(j, plan_fields, p);
    util_json_obj_end(j);
}

void plan_json_schema(util_json *j)
{
    cfg_schema_json_schema(j, plan_fields, "vpsim plan (" PLAN_SCHEMA ")", "urn:vpsim:schema:" PLAN_SCHEMA);
}

/* The phases of a cycle, as plan_build makes them and as the model and the replay read them: one
 * `decode` phase alone (no speculation), or draft_1 .. draft_D, then one `verify`, then one
 * `draft_extend` over D + 2 tokens (steps + 1). A plan of another shape would be modelled as something
 * it is not: a verify pass without drafting is "free" speculation, twenty verify phases twenty passes
 * per cycle. The tokens a cycle yields cannot exceed the tokens its target phase processes. */
static int check_phases(const plan *p, const cfg_node *root, cfg_error *err)
{
    const cfg_node *phases = cfg_map_get(root, "phases");
    if (p->n_phases == 0) {
        cfg_errorf(err, phases ? phases : root, "a plan needs its phases: one \"decode\", or draft_1 .. draft_D, "
                                                "\"verify\", \"draft_extend\"");
        return -1;
    }
    const plan_phase *target = NULL;
    int want = 0; /* 0: draft or verify next, 1: draft_extend next, 2: nothing more */
    int n_draft = 0;
    for (int i = 0; i < p->n_phases; i++) {
        const plan_phase *ph = &p->phases[i];
        const cfg_node *at = phases->items[i];
        char expect[PLAN_NAME_MAX] = "";
        const char *what = NULL;
        if (ph->kind == PLAN_PHASE_DECODE) {
            if (p->n_phases != 1)
                what = "a \"decode\" phase is a whole cycle without speculation: it must be the plan's only phase";
            snprintf(expect, sizeof(expect), "decode");
            target = ph;
        } else if (want == 2) {
            what = "nothing follows draft_extend: a plan holds one cycle";
        } else if (ph->kind == PLAN_PHASE_DRAFT) {
            if (want != 0)
                what = "draft phases come before verify";
            snprintf(expect, sizeof(expect), "draft_%d", ++n_draft);
            if (!what && n_draft > 1 && ph->tokens != p->phases[0].tokens)
                what = "every draft step processes the same tokens per request (speculative.topk)";
        } else if (ph->kind == PLAN_PHASE_VERIFY) {
            if (want != 0)
                what = "a cycle has one verify phase";
            snprintf(expect, sizeof(expect), "verify");
            target = ph;
            want = 1;
        } else { /* draft_extend */
            if (want != 1)
                what = "draft_extend follows the verify phase";
            else if (ph->tokens != n_draft + 2)
                what = "draft_extend processes steps + 1 tokens per request: the number of draft phases + 2";
            snprintf(expect, sizeof(expect), "draft_extend");
            want = 2;
        }
        if (!what && strcmp(ph->name, expect))
            what = "phases are named by their place in the cycle";
        if (!what && ph->batch != p->batch)
            what = "every phase runs the plan's batch";
        if (what) {
            cfg_errorf(err, at, "phase %d ('%s', kind %s, %d tokens): %s (expected '%s' here)", i + 1, ph->name,
                       plan_phase_kind_names[ph->kind], ph->tokens, what, expect[0] ? expect : "the end");
            return -1;
        }
    }
    if (!target || (target->kind == PLAN_PHASE_VERIFY && want != 2)) {
        cfg_errorf(err, phases, "a speculative cycle needs draft_1 .. draft_D, \"verify\" and \"draft_extend\" "
                                "(this plan has %s): a verify pass without its draft phases would model free "
                                "speculation",
                   target ? "no draft_extend" : "no verify phase");
        return -1;
    }
    if (p->expected_tokens > target->tokens) {
        const cfg_node *at = cfg_map_get(root, "expected_tokens");
        cfg_errorf(err, at ? at : root, "expected_tokens %g is more than the %d tokens per request the %s phase "
                                        "processes",
                   p->expected_tokens, target->tokens, target->name);
        return -1;
    }
    return 0;
}

/* Across the whole plan: every collective spans the plan's ranks; compute ops run on all of them. */
static int check_plan(plan *p, const cfg_node *root, cfg_error *err)
{
    if (check_phases(p, root, err))
        return -1;
    for (int i = 0; i < p->n_phases; i++) {
        plan_phase *ph = &p->phases[i];
        ph->cap_ops = ph->n_ops;
        for (int k = 0; k < ph->n_ops; k++) {
            plan_op *op = &ph->ops[k];
            const bool coll = plan_op_is_collective(op->kind);
            if (!coll)
                op->ranks = p->ranks;
            plan_op_finalize(op);
            if (coll && op->ranks != p->ranks) {
                /* Phases and ops were bound one for one from these nodes: point at the op's ranks. */
                const cfg_node *ph_node = cfg_map_get(root, "phases")->items[i];
                const cfg_node *op_node = cfg_map_get(ph_node, "ops")->items[k];
                const cfg_node *at = cfg_map_get(op_node, "ranks");
                cfg_errorf(err, at ? at : op_node, "op %s in phase %s spans %d ranks but the plan has %d", op->name,
                           ph->name, op->ranks, p->ranks);
                return -1;
            }
        }
    }
    return 0;
}

int plan_json_matches(const plan *p, const cfg_scenario *sc, char *why, size_t len)
{
    int n_draft = 0, max_layer = -1;
    const plan_phase *verify = NULL, *draft = NULL;
    bool decode = false;
    for (int i = 0; i < p->n_phases; i++) {
        const plan_phase *ph = &p->phases[i];
        n_draft += ph->kind == PLAN_PHASE_DRAFT;
        if (ph->kind == PLAN_PHASE_DRAFT && !draft)
            draft = ph;
        if (ph->kind == PLAN_PHASE_VERIFY)
            verify = ph;
        decode = decode || ph->kind == PLAN_PHASE_DECODE;
        if (ph->kind == PLAN_PHASE_VERIFY || ph->kind == PLAN_PHASE_DECODE)
            for (int k = 0; k < ph->n_ops; k++)
                if (ph->ops[k].layer > max_layer)
                    max_layer = ph->ops[k].layer;
    }
    const bool spec = sc->speculative.algorithm != CFG_SPEC_NONE;
    if (spec == decode)
        snprintf(why, len, "the plan is a cycle %s speculation but the scenario sets speculative.algorithm=%s",
                 decode ? "without" : "with", spec ? "eagle3" : "none");
    else if (spec && n_draft + 1 != sc->speculative.steps)
        snprintf(why, len, "the plan has %d draft phase(s) (speculative.steps=%d) but the scenario sets "
                           "speculative.steps=%d",
                 n_draft, n_draft + 1, sc->speculative.steps);
    else if (spec && draft && draft->tokens != sc->speculative.topk)
        snprintf(why, len, "the plan's draft steps process %d token(s) per request (speculative.topk=%d) but the "
                           "scenario sets speculative.topk=%d",
                 draft->tokens, draft->tokens, sc->speculative.topk);
    else if (spec && verify && verify->tokens != sc->speculative.num_draft_tokens)
        snprintf(why, len, "the plan verifies %d token(s) per request but the scenario sets "
                           "speculative.num_draft_tokens=%d",
                 verify->tokens, sc->speculative.num_draft_tokens);
    else if (p->batch != sc->workload.batch)
        snprintf(why, len, "the plan has batch %d but the scenario sets workload.batch=%d", p->batch,
                 sc->workload.batch);
    else if (max_layer >= 0 && max_layer + 1 != sc->target.layers)
        snprintf(why, len, "the plan's target model has %d layers but the scenario's model (%s) has %d", max_layer + 1,
                 sc->target.name ? sc->target.name : "model", sc->target.layers);
    else
        return 0;
    return -1;
}

int plan_json_load(const char *path, plan *out, cfg_error *err)
{
    memset(out, 0, sizeof(*out));
    cfg_doc *doc = cfg_doc_load_file(path, err);
    if (!doc)
        return -1;
    cfg_node *root = cfg_doc_root(doc);
    int rc = -1;
    const cfg_node *schema = root->kind == CFG_NODE_MAP ? cfg_map_get(root, "schema") : NULL;
    if (!schema || schema->kind != CFG_NODE_SCALAR || strcmp(schema->scalar, PLAN_SCHEMA)) {
        cfg_errorf(err, schema ? schema : root, "not a vpsim plan: expected \"schema\": \"%s\"", PLAN_SCHEMA);
        goto done;
    }
    if (cfg_schema_bind_json(plan_fields, root, out, "", err) || check_plan(out, root, err))
        goto done;
    plan_summarize(out);
    rc = 0;
done:
    cfg_doc_free(doc);
    if (rc)
        plan_free(out);
    return rc;
}
