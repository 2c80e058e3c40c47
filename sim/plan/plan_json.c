/* The plan as JSON ("vpsim.plan/1"): written by `vpsim plan --format json`, read back by `--plan FILE`.
 * Reading goes through cfg_tree (libyaml reads JSON), so a hand-edited plan gets file:line:col errors.
 * Derived terms (flops, bytes) are written for readers but recomputed on load from the shapes, so an
 * edited shape cannot disagree with its cost. */
#include "plan_json.h"

#include "../config/cfg_schema.h"
#include "../util/util.h"

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
    case PLAN_OP_ALLREDUCE:
    case PLAN_OP_ALLGATHER:
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

static int get_int(const cfg_node *n, const char *what, long long lo, long long hi, long long *out, cfg_error *err)
{
    long long v;
    if (n->kind != CFG_NODE_SCALAR || n->quoted || !cfg_parse_int(n->scalar, &v)) {
        cfg_errorf(err, n, "%s: expected an integer", what);
        return -1;
    }
    if (v < lo || v > hi) {
        cfg_errorf(err, n, "%s: %lld is out of range [%lld, %lld]", what, v, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

static int get_enum(const cfg_node *n, const char *what, const char *const *choices, int *out, cfg_error *err)
{
    int idx = n->kind == CFG_NODE_SCALAR ? cfg_enum_index(choices, n->scalar) : -1;
    if (idx < 0) {
        char list[256];
        cfg_errorf(err, n, "%s: expected one of: %s", what, cfg_enum_list(choices, list, sizeof(list)));
        return -1;
    }
    *out = idx;
    return 0;
}

static int get_name(const cfg_node *n, const char *what, char *dst, size_t len, cfg_error *err)
{
    if (n->kind != CFG_NODE_SCALAR || strlen(n->scalar) >= len) {
        cfg_errorf(err, n, "%s: expected a string of at most %zu characters", what, len - 1);
        return -1;
    }
    snprintf(dst, len, "%s", n->scalar);
    return 0;
}

#define BIGN 1000000000000LL

static int load_op(const cfg_node *node, plan_op *op, cfg_error *err)
{
    if (node->kind != CFG_NODE_MAP) {
        cfg_errorf(err, node, "op: expected an object");
        return -1;
    }
    const cfg_node *kind = cfg_map_get(node, "kind");
    if (!kind) {
        cfg_errorf(err, node, "op: missing \"kind\"");
        return -1;
    }
    int ikind;
    if (get_enum(kind, "op.kind", plan_op_kind_names, &ikind, err))
        return -1;
    op->kind = (plan_op_kind)ikind;
    for (size_t i = 0; i < node->n; i++) {
        const char *key = node->keys[i]->scalar;
        const cfg_node *v = node->items[i];
        long long x = 0;
        int e = 0, rc = 0;
        if (!strcmp(key, "kind") || !strcmp(key, "flops") || !strcmp(key, "weight_bytes") ||
            !strcmp(key, "bytes_read") || !strcmp(key, "bytes_written"))
            continue; /* derived: recomputed below */
        else if (!strcmp(key, "name"))
            rc = get_name(v, "op.name", op->name, sizeof(op->name), err);
        else if (!strcmp(key, "stream")) {
            rc = get_enum(v, "op.stream", plan_stream_names, &e, err);
            op->stream = (plan_stream)e;
        } else if (!strcmp(key, "adtype") || !strcmp(key, "wdtype")) {
            rc = get_enum(v, key, cfg_dtype_names, &e, err);
            if (key[0] == 'a')
                op->adtype = (cfg_dtype)e;
            else
                op->wdtype = (cfg_dtype)e;
        } else if (!strcmp(key, "kv_shared")) {
            if (v->kind != CFG_NODE_SCALAR || (strcmp(v->scalar, "true") && strcmp(v->scalar, "false"))) {
                cfg_errorf(err, v, "op.kv_shared: expected true or false");
                rc = -1;
            }
            op->kv_shared = v->kind == CFG_NODE_SCALAR && !strcmp(v->scalar, "true");
        } else if (!strcmp(key, "ranks")) {
            if (v->kind != CFG_NODE_SEQ || v->n < 2 || v->n > 4096) {
                cfg_errorf(err, v, "op.ranks: expected a list of 2 or more rank numbers");
                rc = -1;
            }
            for (size_t r = 0; !rc && r < v->n; r++) {
                rc = get_int(v->items[r], "op.ranks[]", 0, 4095, &x, err);
                if (!rc && x != (long long)r) {
                    cfg_errorf(err, v->items[r], "op.ranks: collectives span ranks 0..N-1 of the TP group in order");
                    rc = -1;
                }
            }
            op->ranks = (int)v->n;
        } else {
            struct {
                const char *key;
                long long lo, hi;
            } ints[] = {{"layer", -1, 1 << 20},   {"m", 0, BIGN},         {"n", 0, BIGN},        {"k", 0, BIGN},
                        {"batch", 0, 1 << 24},     {"wgroup", 0, 1 << 20}, {"q_len", 0, BIGN},    {"kv_len", 0, BIGN},
                        {"heads", 0, 1 << 20},     {"kv_heads", 0, 1 << 20}, {"qk_dim", 0, 1 << 20}, {"v_dim", 0, 1 << 20},
                        {"count", 0, BIGN},        {"payload_bytes", 0, BIGN}};
            size_t f = 0;
            while (f < sizeof(ints) / sizeof(ints[0]) && strcmp(ints[f].key, key))
                f++;
            if (f == sizeof(ints) / sizeof(ints[0])) {
                cfg_errorf(err, node->keys[i], "op: unknown key \"%s\"", key);
                return -1;
            }
            char what[48];
            snprintf(what, sizeof(what), "op.%s", key);
            rc = get_int(v, what, ints[f].lo, ints[f].hi, &x, err);
            switch (f) {
            case 0: op->layer = (int)x; break;
            case 1: op->m = x; break;
            case 2: op->n = x; break;
            case 3: op->k = x; break;
            case 4: op->batch = (int)x; break;
            case 5: op->wgroup = (int)x; break;
            case 6: op->q_len = x; break;
            case 7: op->kv_len = x; break;
            case 8: op->heads = (int)x; break;
            case 9: op->kv_heads = (int)x; break;
            case 10: op->qk_dim = (int)x; break;
            case 11: op->v_dim = (int)x; break;
            case 12: op->count = x; break;
            case 13: op->payload_bytes = x; break;
            }
        }
        if (rc)
            return -1;
    }
    if (!op->name[0]) {
        cfg_errorf(err, node, "op: missing \"name\"");
        return -1;
    }
    if (plan_op_is_collective(op->kind) && op->ranks < 2) {
        cfg_errorf(err, node, "op %s: a collective needs \"ranks\"", op->name);
        return -1;
    }
    return 0;
}

static int load_phase(const cfg_node *node, plan *p, cfg_error *err)
{
    if (node->kind != CFG_NODE_MAP) {
        cfg_errorf(err, node, "phase: expected an object");
        return -1;
    }
    p->phases = util_xrealloc(p->phases, (size_t)(p->n_phases + 1) * sizeof(plan_phase));
    plan_phase *ph = &p->phases[p->n_phases++];
    memset(ph, 0, sizeof(*ph));
    const cfg_node *ops = NULL;
    for (size_t i = 0; i < node->n; i++) {
        const char *key = node->keys[i]->scalar;
        const cfg_node *v = node->items[i];
        long long x;
        int e, rc = 0;
        if (!strcmp(key, "name"))
            rc = get_name(v, "phase.name", ph->name, sizeof(ph->name), err);
        else if (!strcmp(key, "model"))
            rc = get_name(v, "phase.model", ph->model, sizeof(ph->model), err);
        else if (!strcmp(key, "kind")) {
            rc = get_enum(v, "phase.kind", plan_phase_kind_names, &e, err);
            ph->kind = (plan_phase_kind)e;
        } else if (!strcmp(key, "tokens")) {
            rc = get_int(v, "phase.tokens", 1, 1 << 20, &x, err);
            ph->tokens = (int)x;
        } else if (!strcmp(key, "batch")) {
            rc = get_int(v, "phase.batch", 1, 1 << 20, &x, err);
            ph->batch = (int)x;
        } else if (!strcmp(key, "summary"))
            continue; /* derived */
        else if (!strcmp(key, "ops"))
            ops = v;
        else {
            cfg_errorf(err, node->keys[i], "phase: unknown key \"%s\"", key);
            return -1;
        }
        if (rc)
            return -1;
    }
    if (!ph->name[0] || !ops || ops->kind != CFG_NODE_SEQ) {
        cfg_errorf(err, node, "phase: needs \"name\" and an \"ops\" list");
        return -1;
    }
    for (size_t i = 0; i < ops->n; i++)
        if (load_op(ops->items[i], plan_phase_add_op(ph), err))
            return -1;
    return 0;
}

int plan_json_load(const char *path, plan *out, cfg_error *err)
{
    memset(out, 0, sizeof(*out));
    cfg_doc *doc = cfg_doc_load_file(path, err);
    if (!doc)
        return -1;
    const cfg_node *root = cfg_doc_root(doc);
    int rc = -1;
    const cfg_node *schema = cfg_map_get(root, "schema");
    if (!schema || schema->kind != CFG_NODE_SCALAR || strcmp(schema->scalar, PLAN_SCHEMA)) {
        cfg_errorf(err, schema ? schema : root, "not a vpsim plan: expected \"schema\": \"%s\"", PLAN_SCHEMA);
        goto done;
    }
    for (size_t i = 0; i < root->n; i++) {
        const char *key = root->keys[i]->scalar;
        const cfg_node *v = root->items[i];
        long long x;
        int r = 0;
        if (!strcmp(key, "schema"))
            continue;
        else if (!strcmp(key, "scenario"))
            r = get_name(v, "scenario", out->scenario, sizeof(out->scenario), err);
        else if (!strcmp(key, "ranks")) {
            r = get_int(v, "ranks", 1, 4096, &x, err);
            out->ranks = (int)x;
        } else if (!strcmp(key, "batch")) {
            r = get_int(v, "batch", 1, 1 << 20, &x, err);
            out->batch = (int)x;
        } else if (!strcmp(key, "context")) {
            r = get_int(v, "context", 0, 2147483647LL, &x, err); /* stored in an int */
            out->context = (int)x;
        } else if (!strcmp(key, "active_experts")) {
            r = get_int(v, "active_experts", 0, 1 << 20, &x, err);
            out->active_experts = (int)x;
        } else if (!strcmp(key, "expected_tokens")) {
            if (v->kind != CFG_NODE_SCALAR || !cfg_parse_double(v->scalar, &out->expected_tokens) ||
                out->expected_tokens < 1.0) {
                cfg_errorf(err, v, "expected_tokens: expected a number >= 1");
                r = -1;
            }
        } else if (!strcmp(key, "phases")) {
            if (v->kind != CFG_NODE_SEQ || v->n == 0) {
                cfg_errorf(err, v, "phases: expected a non-empty list");
                r = -1;
            }
            for (size_t k = 0; !r && k < v->n; k++)
                r = load_phase(v->items[k], out, err);
        } else {
            cfg_errorf(err, root->keys[i], "unknown key \"%s\"", key);
            r = -1;
        }
        if (r)
            goto done;
    }
    if (out->n_phases == 0 || out->ranks < 1) {
        cfg_errorf(err, root, "a plan needs \"ranks\" and \"phases\"");
        goto done;
    }
    for (int i = 0; i < out->n_phases; i++)
        for (int k = 0; k < out->phases[i].n_ops; k++) {
            plan_op *op = &out->phases[i].ops[k];
            bool coll = plan_op_is_collective(op->kind);
            if (!coll)
                op->ranks = out->ranks; /* compute ops run on every rank of the plan */
            plan_op_finalize(op);
            if (coll && op->ranks != out->ranks) {
                /* Phases and ops were loaded one for one from these nodes: point at the op's ranks. */
                const cfg_node *ph_node = cfg_map_get(root, "phases")->items[i];
                const cfg_node *op_node = cfg_map_get(ph_node, "ops")->items[k];
                const cfg_node *at = cfg_map_get(op_node, "ranks");
                cfg_errorf(err, at ? at : op_node, "op %s in phase %s spans %d ranks but the plan has %d", op->name,
                           out->phases[i].name, op->ranks, out->ranks);
                goto done;
            }
        }
    plan_summarize(out);
    rc = 0;
done:
    cfg_doc_free(doc);
    if (rc)
        plan_free(out);
    return rc;
}
