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

static void write_op(util_json *j, const plan_op *op)
{
    util_json_obj_begin(j);
    util_json_kstr(j, "kind", plan_op_kind_names[op->kind]);
    util_json_kstr(j, "name", op->name);
    util_json_kint(j, "layer", op->layer);
    util_json_kstr(j, "stream", plan_stream_names[op->stream]);
    if (op->micro_batch) /* written only for two-batch overlap: other plans read as before */
        util_json_kint(j, "micro_batch", op->micro_batch);
    util_json_kstr(j, "adtype", cfg_dtype_names[op->adtype]);
    switch (op->kind) {
    case PLAN_OP_GEMM:
    case PLAN_OP_GROUPED_GEMM:
    case PLAN_OP_EMBEDDING:
        util_json_kint(j, "m", op->m);
        util_json_kint(j, "n", op->n);
        util_json_kint(j, "k", op->k);
        util_json_kint(j, "batch", op->batch);
        util_json_kstr(j, "wdtype", cfg_dtype_names[op->wdtype]);
        util_json_kint(j, "wgroup", op->wgroup);
        break;
    case PLAN_OP_NORM:
    case PLAN_OP_ELEMENTWISE:
        util_json_kint(j, "m", op->m);
        util_json_kint(j, "n", op->n);
        break;
    case PLAN_OP_ATTENTION:
        util_json_kint(j, "batch", op->batch);
        util_json_kint(j, "q_len", op->q_len);
        util_json_kint(j, "kv_len", op->kv_len);
        util_json_kint(j, "heads", op->heads);
        util_json_kint(j, "kv_heads", op->kv_heads);
        util_json_kint(j, "qk_dim", op->qk_dim);
        util_json_kint(j, "v_dim", op->v_dim);
        util_json_kbool(j, "kv_shared", op->kv_shared);
        break;
    case PLAN_OP_ALLREDUCE_NORM:
        util_json_kint(j, "m", op->m);
        util_json_kint(j, "n", op->n);
        /* fall through */
    case PLAN_OP_ALLREDUCE:
    case PLAN_OP_ALLGATHER:
    case PLAN_OP_REDUCE_SCATTER:
    case PLAN_OP_ALLTOALL:
        util_json_kint(j, "count", op->count);
        util_json_kint(j, "payload_bytes", op->payload_bytes);
        util_json_key(j, "ranks");
        util_json_arr_begin(j);
        for (int r = 0; r < op->ranks; r++)
            util_json_int(j, r);
        util_json_arr_end(j);
        break;
    default:
        break;
    }
    util_json_knum(j, "flops", op->flops);
    util_json_knum(j, "weight_bytes", op->weight_bytes);
    util_json_knum(j, "bytes_read", op->bytes_read);
    util_json_knum(j, "bytes_written", op->bytes_written);
    util_json_obj_end(j);
}

void plan_json_write(util_json *j, const plan *p)
{
    util_json_obj_begin(j);
    util_json_kstr(j, "schema", PLAN_SCHEMA);
    util_json_kstr(j, "scenario", p->scenario);
    util_json_kint(j, "ranks", p->ranks);
    util_json_kint(j, "batch", p->batch);
    util_json_kint(j, "context", p->context);
    util_json_kint(j, "active_experts", p->active_experts);
    util_json_knum(j, "expected_tokens", p->expected_tokens);
    util_json_key(j, "phases");
    util_json_arr_begin(j);
    for (int i = 0; i < p->n_phases; i++) {
        const plan_phase *ph = &p->phases[i];
        const plan_phase_summary *s = &ph->summary;
        util_json_obj_begin(j);
        util_json_kstr(j, "name", ph->name);
        util_json_kstr(j, "kind", plan_phase_kind_names[ph->kind]);
        util_json_kstr(j, "model", ph->model);
        util_json_kint(j, "tokens", ph->tokens);
        util_json_kint(j, "batch", ph->batch);
        util_json_key(j, "summary");
        util_json_obj_begin(j);
        util_json_kint(j, "allreduce_count", s->allreduce_count);
        util_json_key(j, "allreduce_bytes");
        util_json_arr_begin(j);
        for (int k = 0; k < s->allreduce_count; k++)
            util_json_int(j, s->allreduce_bytes[k]);
        util_json_arr_end(j);
        util_json_kint(j, "allgather_count", s->allgather_count);
        util_json_kint(j, "allgather_bytes", s->allgather_bytes_total);
        util_json_kint(j, "gemm_count", s->gemm_count);
        util_json_knum(j, "flops", s->flops);
        util_json_knum(j, "weight_bytes", s->weight_bytes);
        util_json_knum(j, "bytes_read", s->bytes_read);
        util_json_knum(j, "bytes_written", s->bytes_written);
        util_json_obj_end(j);
        util_json_key(j, "ops");
        util_json_arr_begin(j);
        for (int k = 0; k < ph->n_ops; k++)
            write_op(j, &ph->ops[k]);
        util_json_arr_end(j);
        util_json_obj_end(j);
    }
    util_json_arr_end(j);
    util_json_obj_end(j);
}

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

static int check_op(void *obj, const cfg_node *node, const char *path, cfg_error *err)
{
    const plan_op *op = obj;
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

#define OP(f) offsetof(plan_op, f)
static const cfg_field op_fields[] = {
    {.key = "kind", .type = CFG_T_ENUM, .offset = OP(kind), .choices = plan_op_kind_names, .doc = "op kind"},
    {.key = "name", .type = CFG_T_CHARS, .offset = OP(name), .max_items = PLAN_NAME_MAX, .doc = "op name"},
    {.key = "layer", .type = CFG_T_INT, .offset = OP(layer), .def = "-1", CFG_RANGE(-1, 1 << 20)},
    {.key = "stream", .type = CFG_T_ENUM, .offset = OP(stream), .def = "main", .choices = plan_stream_names},
    {.key = "micro_batch", .type = CFG_T_INT, .offset = OP(micro_batch), .def = "0", CFG_RANGE(0, 2),
     .doc = "two-batch overlap: 0 = the whole batch, 1 = micro-batch a, 2 = micro-batch b"},
    {.key = "adtype", .type = CFG_T_ENUM, .offset = OP(adtype), .def = "bf16", .choices = cfg_dtype_names},
    {.key = "wdtype", .type = CFG_T_ENUM, .offset = OP(wdtype), .def = "bf16", .choices = cfg_dtype_names},
    {.key = "wgroup", .type = CFG_T_INT, .offset = OP(wgroup), .def = "0", CFG_RANGE(0, 1 << 20)},
    {.key = "m", .type = CFG_T_INT64, .offset = OP(m), .def = "0", CFG_RANGE(0, BIGN)},
    {.key = "n", .type = CFG_T_INT64, .offset = OP(n), .def = "0", CFG_RANGE(0, BIGN)},
    {.key = "k", .type = CFG_T_INT64, .offset = OP(k), .def = "0", CFG_RANGE(0, BIGN)},
    /* A grouped GEMM divides its rows among `batch` groups: 0 would divide by zero. */
    {.key = "batch", .type = CFG_T_INT, .offset = OP(batch), .def = "1", CFG_RANGE(1, 1 << 24)},
    {.key = "q_len", .type = CFG_T_INT64, .offset = OP(q_len), .def = "0", CFG_RANGE(0, BIGN)},
    {.key = "kv_len", .type = CFG_T_INT64, .offset = OP(kv_len), .def = "0", CFG_RANGE(0, BIGN)},
    {.key = "heads", .type = CFG_T_INT, .offset = OP(heads), .def = "0", CFG_RANGE(0, 1 << 20)},
    {.key = "kv_heads", .type = CFG_T_INT, .offset = OP(kv_heads), .def = "0", CFG_RANGE(0, 1 << 20)},
    {.key = "qk_dim", .type = CFG_T_INT, .offset = OP(qk_dim), .def = "0", CFG_RANGE(0, 1 << 20)},
    {.key = "v_dim", .type = CFG_T_INT, .offset = OP(v_dim), .def = "0", CFG_RANGE(0, 1 << 20)},
    {.key = "kv_shared", .type = CFG_T_BOOL, .offset = OP(kv_shared), .def = "false"},
    {.key = "count", .type = CFG_T_INT64, .offset = OP(count), .def = "0", CFG_RANGE(0, BIGN)},
    {.key = "payload_bytes", .type = CFG_T_INT64, .offset = OP(payload_bytes), .def = "0", CFG_RANGE(0, BIGN)},
    {.key = "ranks", .type = CFG_T_CUSTOM, .offset = OP(ranks), .def = "[]", .bind = bind_ranks},
    {.key = "flops", .type = CFG_T_DERIVED},
    {.key = "weight_bytes", .type = CFG_T_DERIVED},
    {.key = "bytes_read", .type = CFG_T_DERIVED},
    {.key = "bytes_written", .type = CFG_T_DERIVED},
    {0},
};

#define PH(f) offsetof(plan_phase, f)
static const cfg_field phase_fields[] = {
    {.key = "name", .type = CFG_T_CHARS, .offset = PH(name), .max_items = PLAN_NAME_MAX},
    {.key = "kind", .type = CFG_T_ENUM, .offset = PH(kind), .choices = plan_phase_kind_names},
    {.key = "model", .type = CFG_T_CHARS, .offset = PH(model), .max_items = PLAN_NAME_MAX, .def = "''"},
    {.key = "tokens", .type = CFG_T_INT, .offset = PH(tokens), .def = "1", CFG_RANGE(1, 1 << 20)},
    {.key = "batch", .type = CFG_T_INT, .offset = PH(batch), .def = "1", CFG_RANGE(1, 1 << 20)},
    {.key = "summary", .type = CFG_T_DERIVED},
    {.key = "ops", .type = CFG_T_MAP_LIST, .offset = PH(ops), .count_offset = PH(n_ops), .max_items = 1 << 20,
     .elem_size = sizeof(plan_op), .fields = op_fields, .post = check_op},
    {0},
};

#define PL(f) offsetof(plan, f)
static const cfg_field plan_fields[] = {
    {.key = "schema", .type = CFG_T_DERIVED}, /* checked before binding */
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

/* Across the whole plan: every collective spans the plan's ranks; compute ops run on all of them. */
static int check_plan(plan *p, const cfg_node *root, cfg_error *err)
{
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
    if (cfg_schema_bind(plan_fields, root, out, "", err) || check_plan(out, root, err))
        goto done;
    plan_summarize(out);
    rc = 0;
done:
    cfg_doc_free(doc);
    if (rc)
        plan_free(out);
    return rc;
}
