/* cal_results (cal_results.h): the checks a results file passes before calibrate turns its times into
 * a GPU's tables. Each check names the value that differs and where it stands in the file, because a
 * results file is edited and copied by hand (a TP=2 run's times once became TP=4 tables). */
#include "cal_results.h"

#include "../config/cfg_schema.h"
#include "../results/results_doc.h"
#include "../util/util.h"
#include "../util/util_env.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const cfg_node *ops_of(const cfg_node *root)
{
    const cfg_node *bes = cfg_map_get(root, "backends");
    return bes && bes->kind == CFG_NODE_SEQ && bes->n > 0 ? cfg_map_get(bes->items[0], "ops") : NULL;
}

static const char *scalar(const cfg_node *n) { return n && n->kind == CFG_NODE_SCALAR ? n->scalar : NULL; }

/* "file:line:col: msg" at node `at` (the root when the value is missing). Returns -1. */
static int refuse(char *why, size_t len, const cfg_node *at, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int refuse(char *why, size_t len, const cfg_node *at, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    cfg_error err;
    cfg_errorf(&err, at, "%s", msg);
    snprintf(why, len, "%s", err.msg);
    return -1;
}

/* An integer of the top level (bound as `got`) equal to the plan's `want`. */
static int check_int(const cfg_node *root, const char *key, long long got, long long want, const char *what, char *why,
                     size_t len)
{
    if (got == want)
        return 0;
    return refuse(why, len, cfg_map_get(root, key), "\"%s\": %lld here but the scenario's plan has %lld (%s): run and "
                                                     "calibrate with the same scenario and --set options",
                  key, got, want, what);
}

/* One op row (bound as `row`, from node `node`) against the plan's op: phase, index, name, kind, layer and
 * (sized) bytes, in that order; the value that differs is quoted as the file has it. */
static int check_op(const results_op *row, const cfg_node *node, int flat, const plan_phase *ph, int i, bool sized,
                    char *why, size_t len)
{
    const plan_op *op = &ph->ops[i];
    char want_idx[24], want_layer[24], want_bytes[32];
    snprintf(want_idx, sizeof(want_idx), "%d", i);
    snprintf(want_layer, sizeof(want_layer), "%d", op->layer);
    const long long bytes = llround(op->bytes_read + op->bytes_written);
    snprintf(want_bytes, sizeof(want_bytes), "%lld", bytes);
    const struct {
        const char *key, *want;
        bool same;
    } f[] = {{"phase", ph->name, strcmp(row->phase, ph->name) == 0},
             {"index", want_idx, row->index == i},
             {"name", op->name, strcmp(row->name, op->name) == 0},
             {"kind", plan_op_kind_names[op->kind], row->kind == op->kind},
             {"layer", want_layer, row->layer == op->layer},
             {"bytes", want_bytes, !sized || row->bytes == bytes}};
    for (size_t k = 0; k < sizeof(f) / sizeof(f[0]); k++) {
        if (f[k].same)
            continue;
        const cfg_node *n = cfg_map_get(node, f[k].key);
        if (!n) /* only bytes can be absent (the schema requires the others): a run's rows carry all or none */
            return refuse(why, len, node, "op %d (%s %d, %s): no \"%s\"", flat, ph->name, i, op->name, f[k].key);
        return refuse(why, len, n, "op %d: \"%s\": \"%s\" here but the scenario's plan has \"%s\" (%s %d, %s): not "
                                   "a run of this plan", flat, f[k].key, scalar(n), f[k].want, ph->name, i, op->name);
    }
    return 0;
}

/* The checks on the document bound by its schema (results_json_bind): which run it is and whose plan. */
static int check_doc(const plan *p, const cfg_node *root, const results_doc *d, bool *sized, char *why, size_t len)
{
    const cfg_node *mode = cfg_map_get(root, "mode");
    const results_cycle *row = d->n_backends > 0 ? &d->backends[0] : NULL;
    if (d->mode != RESULTS_MODE_RUN || !row || !row->ops)
        return refuse(why, len, mode ? mode : root, "not the results of a `vpsim run` with per-op times (mode \"run\", "
                                                    "backends[0].ops)");
    const cfg_node *env = cfg_map_get(root, "environment");
    const char *dev = util_env_get(d->run.env, d->run.n_env, "device");
    if (!dev)
        return refuse(why, len, env ? env : root,
                      "no \"environment\": {\"device\": ...}: which device ran is not said, and only a GPU's times make "
                      "GPU tables");
    if (strcmp(dev, cfg_device_names[CFG_DEVICE_CUDA]) != 0)
        return refuse(why, len, cfg_map_get(env, "device"),
                      "\"device\": \"%s\": a run on the %s device times %s, not a GPU; calibrate makes GPU tables from a "
                      "run with --device %s",
                      dev, dev, strcmp(dev, "cpu") == 0 ? "the host CPU" : "something else",
                      cfg_device_names[CFG_DEVICE_CUDA]);
    if (check_int(root, "tp", d->tp, p->ranks, "TP degree: the per-rank shapes", why, len) ||
        check_int(root, "batch", d->batch, p->batch, "batch", why, len) ||
        check_int(root, "context", d->context, p->context, "context: the KV lengths", why, len))
        return -1;
    int n_ops = 0;
    for (int ph = 0; ph < p->n_phases; ph++)
        n_ops += p->phases[ph].n_ops;
    const cfg_node *ops = ops_of(root);
    if (row->n_ops != n_ops)
        return refuse(why, len, ops, "%d ops here but the scenario's plan has %d: run and calibrate with the same "
                                     "scenario and --set options", row->n_ops, n_ops);
    *sized = n_ops > 0 && row->ops[0].bytes >= 0;
    int flat = 0;
    for (int ph = 0; ph < p->n_phases; ph++)
        for (int i = 0; i < p->phases[ph].n_ops; i++, flat++)
            if (check_op(&row->ops[flat], ops->items[flat], flat, &p->phases[ph], i, *sized, why, len))
                return -1;
    return 0;
}

int cal_results_check(const plan *p, const cfg_node *root, bool *sized, char *why, size_t len)
{
    *sized = false;
    if (!root || root->kind != CFG_NODE_MAP)
        return refuse(why, len, root, "not a vpsim results file (a JSON object with \"schema\": \"%s\")",
                      CAL_RESULTS_SCHEMA);
    const cfg_node *schema = cfg_map_get(root, "schema");
    if (!scalar(schema))
        return refuse(why, len, schema ? schema : root, "no \"schema\": not a vpsim results file (the --out of "
                                                        "`vpsim run` says \"schema\": \"%s\")", CAL_RESULTS_SCHEMA);
    if (strcmp(schema->scalar, CAL_RESULTS_SCHEMA) != 0)
        return refuse(why, len, schema, "\"schema\": \"%s\": calibrate reads \"%s\" (the --out of `vpsim run`)",
                      schema->scalar, CAL_RESULTS_SCHEMA);
    /* Every key as the record's schema has it (docs/schemas/results.schema.json), before what is this plan's. */
    results_doc d;
    cfg_error err;
    int rc = results_json_bind(root, &d, &err);
    if (rc)
        snprintf(why, len, "%s", err.msg);
    else
        rc = check_doc(p, root, &d, sized, why, len);
    results_doc_free(&d);
    return rc;
}

double cal_results_us(const cfg_node *root, int flat)
{
    double v = 0.0;
    const cfg_node *ops = ops_of(root);
    const char *s = ops && flat < (int)ops->n ? scalar(cfg_map_get(ops->items[flat], "us")) : NULL;
    if (s)
        cfg_parse_double(s, &v);
    return v;
}

void cal_results_facts(const cfg_node *root, exec_facts *f)
{
    memset(f, 0, sizeof(*f));
    const cfg_node *env = cfg_map_get(root, "environment");
    const char *gpu = scalar(cfg_map_get(env, "gpu")), *dev = scalar(cfg_map_get(env, "device"));
    snprintf(f->device, sizeof(f->device), "%s", dev ? dev : "?");
    snprintf(f->label, sizeof(f->label), "%s", gpu ? gpu : "");
    /* dev_cuda.c's form: "NVIDIA H200 (sm_90, 132 SMs, 139.8 GiB)". */
    const char *paren = gpu ? strstr(gpu, " (sm_") : NULL;
    snprintf(f->gpu_name, sizeof(f->gpu_name), "%.*s", gpu ? (int)(paren ? (size_t)(paren - gpu) : strlen(gpu)) : 0,
             gpu ? gpu : "");
    const char *sms = paren ? strstr(paren, " SMs") : NULL;
    if (sms) {
        const char *d = sms;
        while (d > paren && (d[-1] >= '0' && d[-1] <= '9'))
            d--;
        f->sms = atoi(d);
    }
}
