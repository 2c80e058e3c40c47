/* Reading a saved `vpsim.bench_allreduce/1` document back (comm_bench.h), so that a measurement can be
 * compared with the model again after the model or the system file changed, without the machine. The
 * document is what exec_bench_json writes; anything else is refused with file:line:col. */
#include "exec_bench.h"

#include "../config/cfg_schema.h"
#include "../config/cfg_tree.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef struct loader {
    cfg_error err;
    bool failed;
} loader;

static void fail(loader *l, const cfg_node *at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail(loader *l, const cfg_node *at, const char *fmt, ...)
{
    if (l->failed)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    cfg_errorf(&l->err, at, "%s", msg);
    l->failed = true;
}

static const cfg_node *need(loader *l, const cfg_node *map, const char *key, cfg_node_kind kind)
{
    const cfg_node *n = cfg_map_get(map, key);
    static const char *const kinds[] = {"a scalar", "a list", "an object"};
    if (!n)
        fail(l, map, "missing key '%s'", key);
    else if (n->kind != kind)
        fail(l, n, "'%s' must be %s", key, kinds[kind]);
    return l->failed ? NULL : n;
}

static double num(loader *l, const cfg_node *map, const char *key, bool null_ok)
{
    const cfg_node *n = need(l, map, key, CFG_NODE_SCALAR);
    if (!n)
        return NAN;
    if (null_ok && !n->quoted && strcmp(n->scalar, "null") == 0)
        return NAN;
    double v = NAN;
    if (n->quoted || !cfg_parse_double(n->scalar, &v))
        fail(l, n, "'%s' must be a number (got '%s')", key, n->scalar);
    return v;
}

static void str(loader *l, const cfg_node *map, const char *key, char *dst, size_t len);

/* A number read from the file and bounded where it is read: a hand-edited result must not carry a
 * figure that prints as -inf%, nan or 300 digits, nor a count no run could have. */
static double bounded(loader *l, const cfg_node *map, const char *key, double lo, double hi, bool null_ok)
{
    const double v = num(l, map, key, null_ok);
    if (!l->failed && null_ok && isnan(v))
        return v; /* null: the caller says what that means */
    if (!l->failed && !(v >= lo && v <= hi))
        fail(l, cfg_map_get(map, key), "'%s' is %g; it must be in [%g, %g]", key, v, lo, hi);
    /* After a failure the value is never used, but callers convert it to an integer type: a number
     * they can hold, never NaN (converting NaN is undefined). */
    return l->failed ? 0 : v;
}

/* One of `choices` (a NULL-terminated list), naming them on a mismatch. */
static int choice(loader *l, const cfg_node *map, const char *key, const char *const *choices, char *dst, size_t len)
{
    str(l, map, key, dst, len);
    if (l->failed)
        return -1;
    const int k = cfg_enum_index(choices, dst);
    if (k < 0) {
        char list[256];
        fail(l, cfg_map_get(map, key), "'%s' is '%s'; valid choices: %s", key, dst,
             cfg_enum_list(choices, list, sizeof(list)));
    }
    return k;
}

/* The bounds of what a run can have written (exec_bench.c): 1 PiB per call at most, a time of up to
 * 1e9 us (17 minutes) per call, and the job sizes and counts the options allow. */
#define LOAD_MAX_BYTES 1125899906842624.0
#define LOAD_MAX_US 1e9
#define LOAD_MAX_GBPS 1e9
#define LOAD_MAX_RANKS 4096

static bool boolean(loader *l, const cfg_node *map, const char *key)
{
    const cfg_node *n = need(l, map, key, CFG_NODE_SCALAR);
    if (n && strcmp(n->scalar, "true") != 0 && strcmp(n->scalar, "false") != 0)
        fail(l, n, "'%s' must be true or false", key);
    return n && strcmp(n->scalar, "true") == 0;
}

static void str(loader *l, const cfg_node *map, const char *key, char *dst, size_t len)
{
    const cfg_node *n = need(l, map, key, CFG_NODE_SCALAR);
    if (n)
        snprintf(dst, len, "%s", n->scalar);
}

/* "p2p" (optional: results written before --p2p ran the direct path). */
static int load_p2p(loader *l, const cfg_node *map)
{
    const cfg_node *n = cfg_map_get(map, "p2p");
    if (!n)
        return COMM_P2P_DIRECT;
    const int m = n->kind == CFG_NODE_SCALAR ? cfg_enum_index(comm_p2p_names, n->scalar) : -1;
    if (m < 0)
        fail(l, n, "'p2p' must be direct or sysmem");
    return m < 0 ? COMM_P2P_DIRECT : m;
}

/* "collective" (optional: results written before --collective timed allreduces). */
static int load_collective(loader *l, const cfg_node *map)
{
    const cfg_node *n = cfg_map_get(map, "collective");
    if (!n)
        return PLAN_OP_ALLREDUCE;
    int k = n->kind == CFG_NODE_SCALAR ? cfg_enum_index(plan_op_kind_names, n->scalar) : -1;
    if (k < 0 || !plan_op_is_collective((plan_op_kind)k)) {
        fail(l, n, "'collective' must name a collective (allreduce, allgather, reduce_scatter, alltoall, ...)");
        return PLAN_OP_ALLREDUCE;
    }
    return k;
}

static int env(loader *l, const cfg_node *map, util_env_item *items)
{
    const cfg_node *e = need(l, map, "environment", CFG_NODE_MAP);
    int n = 0;
    for (size_t i = 0; e && i < e->n && n < UTIL_ENV_MAX; i++) {
        if (e->items[i]->kind != CFG_NODE_SCALAR)
            continue;
        snprintf(items[n].key, sizeof(items[n].key), "%s", e->keys[i]->scalar);
        snprintf(items[n].value, sizeof(items[n].value), "%s", e->items[i]->scalar);
        n++;
    }
    return n;
}

static void backend(loader *l, const cfg_node *bn, exec_bench_backend *b)
{
    str(l, bn, "name", b->name, sizeof(b->name));
    b->backend = cfg_enum_index(cfg_backend_names, b->name); /* -1: a per-size policy */
    if (!l->failed && b->backend < 0 && strncmp(b->name, "policy(", 7) != 0) {
        char list[256];
        fail(l, cfg_map_get(bn, "name"), "backend '%s' is none vpsim has; valid: %s, or policy(RULES)", b->name,
             cfg_enum_list(cfg_backend_names, list, sizeof(list)));
    }
    b->ran = boolean(l, bn, "supported");
    if (!b->ran)
        str(l, bn, "reason", b->why, sizeof(b->why));
    b->graph = boolean(l, bn, "graph");
    b->n_env = env(l, bn, b->env);
    const cfg_node *rows = need(l, bn, "rows", CFG_NODE_SEQ);
    if (rows && rows->n > EXEC_BENCH_MAX_SIZES)
        fail(l, rows, "%zu rows (at most %d)", rows->n, EXEC_BENCH_MAX_SIZES);
    for (size_t i = 0; rows && !l->failed && i < rows->n; i++) {
        const cfg_node *rn = rows->items[i];
        if (rn->kind != CFG_NODE_MAP) {
            fail(l, rn, "a row must be an object");
            break;
        }
        exec_bench_row *w = &b->rows[b->n_rows++];
        w->bytes = (long long)bounded(l, rn, "bytes", 1, LOAD_MAX_BYTES, false);
        w->count = (long long)bounded(l, rn, "count", 1, LOAD_MAX_BYTES, false);
        w->time_us = bounded(l, rn, "time_us", 0, LOAD_MAX_US, false);
        w->algbw = bounded(l, rn, "algbw_gbps", 0, LOAD_MAX_GBPS, false);
        w->busbw = bounded(l, rn, "busbw_gbps", 0, LOAD_MAX_GBPS, false);
        double wrong = bounded(l, rn, "wrong", 0, LOAD_MAX_BYTES, true);
        w->wrong = isnan(wrong) ? -1 : (long long)wrong;
        w->verify_size = boolean(l, rn, "verify_pass");
        w->model_us = NAN;
    }
}

int exec_bench_load(const char *path, exec_bench_result *r, char *err, size_t len)
{
    memset(r, 0, sizeof(*r));
    loader l = {0};
    cfg_doc *doc = cfg_doc_load_file(path, &l.err);
    if (!doc) {
        snprintf(err, len, "%s", l.err.msg);
        return -1;
    }
    const cfg_node *root = cfg_doc_root(doc);
    const cfg_node *schema = root && root->kind == CFG_NODE_MAP ? cfg_map_get(root, "schema") : NULL;
    if (!schema || schema->kind != CFG_NODE_SCALAR || strcmp(schema->scalar, "vpsim.bench_allreduce/1") != 0) {
        fail(&l, schema ? schema : root, "not a vpsim bench-allreduce result (schema vpsim.bench_allreduce/1)");
    } else {
        str(&l, root, "command", r->command, sizeof(r->command));
        r->ranks = (int)bounded(&l, root, "ranks", 1, LOAD_MAX_RANKS, false);
        choice(&l, root, "device", cfg_device_names, r->device, sizeof(r->device));
        str(&l, root, "type", r->type, sizeof(r->type));
        r->collective = load_collective(&l, root);
        /* bf16 on cuda, float on cpu today; 1 to 16 bytes covers every type a device could reduce. */
        r->elem_bytes = (size_t)bounded(&l, root, "elem_bytes", 1, 16, false);
        r->iters = (int)bounded(&l, root, "iters", 1, 1000000, false);
        r->warmup = (int)bounded(&l, root, "warmup", 0, 1000000, false);
        r->graph_requested = boolean(&l, root, "graph_requested");
        r->check = boolean(&l, root, "check");
        r->virtual_ranks = boolean(&l, root, "virtual_ranks");
        r->p2p = load_p2p(&l, root);
        r->n_env = env(&l, root, r->env);
        r->wrong_total = (long long)bounded(&l, root, "wrong_total", 0, 1e18, false);
        const cfg_node *bes = need(&l, root, "backends", CFG_NODE_SEQ);
        if (bes && bes->n > CFG_BACKEND_COUNT + 1)
            fail(&l, bes, "%zu backends (at most %d)", bes->n, CFG_BACKEND_COUNT + 1);
        if (!l.failed) {
            r->backends = calloc(bes->n ? bes->n : 1, sizeof(*r->backends));
            for (size_t k = 0; r->backends && !l.failed && k < bes->n; k++) {
                if (bes->items[k]->kind != CFG_NODE_MAP)
                    fail(&l, bes->items[k], "a backend must be an object");
                else
                    backend(&l, bes->items[k], &r->backends[r->n_backends++]);
            }
        }
    }
    cfg_doc_free(doc);
    if (l.failed) {
        snprintf(err, len, "%s", l.err.msg);
        exec_bench_result_free(r);
        return -1;
    }
    return 0;
}
