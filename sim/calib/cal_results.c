/* cal_results (cal_results.h): the checks a results file passes before calibrate turns its times into
 * a GPU's tables. Each check names the value that differs and where it stands in the file, because a
 * results file is edited and copied by hand (issue 26: a TP=2 run's times once became TP=4 tables). */
#include "cal_results.h"

#include "../config/cfg_schema.h"
#include "../util/util.h"

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

/* An integer field of the top level equal to the plan's `want`. */
static int check_int(const cfg_node *root, const char *key, long long want, const char *what, char *why, size_t len)
{
    const cfg_node *n = cfg_map_get(root, key);
    long long v;
    if (!scalar(n) || !cfg_parse_int(n->scalar, &v))
        return refuse(why, len, n ? n : root, "no integer \"%s\": the run's %s cannot be checked against the plan's",
                      key, what);
    if (v != want)
        return refuse(why, len, n, "\"%s\": %lld here but the scenario's plan has %lld (%s): run and calibrate with "
                                  "the same scenario and --set options", key, v, want, what);
    return 0;
}

/* One op row against the plan's op: phase, index, name, kind, layer and (sized) bytes, in that order. */
static int check_op(const cfg_node *row, int flat, const plan_phase *ph, int i, bool sized, char *why, size_t len)
{
    const plan_op *op = &ph->ops[i];
    char want_idx[24], want_layer[24], want_bytes[32];
    snprintf(want_idx, sizeof(want_idx), "%d", i);
    snprintf(want_layer, sizeof(want_layer), "%d", op->layer);
    snprintf(want_bytes, sizeof(want_bytes), "%lld", llround(op->bytes_read + op->bytes_written));
    const struct {
        const char *key, *want;
    } f[] = {{"phase", ph->name},
             {"index", want_idx},
             {"name", op->name},
             {"kind", plan_op_kind_names[op->kind]},
             {"layer", want_layer},
             {"bytes", sized ? want_bytes : NULL}};
    if (row->kind != CFG_NODE_MAP)
        return refuse(why, len, row, "op %d: an op is a mapping (phase, index, name, kind, layer, bytes, us)", flat);
    for (size_t k = 0; k < sizeof(f) / sizeof(f[0]); k++) {
        if (!f[k].want)
            continue;
        const cfg_node *n = cfg_map_get(row, f[k].key);
        const char *v = scalar(n);
        if (!v)
            return refuse(why, len, row, "op %d (%s %d, %s): no \"%s\"", flat, ph->name, i, op->name, f[k].key);
        /* Numbers compare as numbers ("5" and "5.0" are one size). */
        long long a, b;
        const bool num = k == 1 || k == 4 || k == 5;
        const bool same = num ? cfg_parse_int(v, &a) && cfg_parse_int(f[k].want, &b) && a == b : strcmp(v, f[k].want) == 0;
        if (!same)
            return refuse(why, len, n, "op %d: \"%s\": \"%s\" here but the scenario's plan has \"%s\" (%s %d, %s): not "
                                       "a run of this plan", flat, f[k].key, v, f[k].want, ph->name, i, op->name);
    }
    const cfg_node *us = cfg_map_get(row, "us");
    double t;
    if (!scalar(us) || !cfg_parse_double(us->scalar, &t) || !(t >= 0))
        return refuse(why, len, us ? us : row, "op %d (%s): expected a duration \"us\" >= 0", flat, op->name);
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
    const cfg_node *mode = cfg_map_get(root, "mode"), *ops = ops_of(root);
    if (!scalar(mode) || strcmp(mode->scalar, "run") != 0 || !ops || ops->kind != CFG_NODE_SEQ)
        return refuse(why, len, mode ? mode : root, "not the results of a `vpsim run` with per-op times (mode \"run\", "
                                                    "backends[0].ops)");
    const cfg_node *env = cfg_map_get(root, "environment"), *dev = cfg_map_get(env, "device");
    if (!scalar(dev))
        return refuse(why, len, env ? env : root, "no \"environment\": {\"device\": ...}: which device ran is not said, "
                                                  "and only a GPU's times make GPU tables");
    if (strcmp(dev->scalar, cfg_device_names[CFG_DEVICE_CUDA]) != 0)
        return refuse(why, len, dev, "\"device\": \"%s\": a run on the %s device times %s, not a GPU; calibrate makes "
                                     "GPU tables from a run with --device %s", dev->scalar, dev->scalar,
                      strcmp(dev->scalar, "cpu") == 0 ? "the host CPU" : "something else",
                      cfg_device_names[CFG_DEVICE_CUDA]);
    if (check_int(root, "tp", p->ranks, "TP degree: the per-rank shapes", why, len) ||
        check_int(root, "batch", p->batch, "batch", why, len) ||
        check_int(root, "context", p->context, "context: the KV lengths", why, len))
        return -1;
    int n_ops = 0;
    for (int ph = 0; ph < p->n_phases; ph++)
        n_ops += p->phases[ph].n_ops;
    if ((int)ops->n != n_ops)
        return refuse(why, len, ops, "%zu ops here but the scenario's plan has %d: run and calibrate with the same "
                                     "scenario and --set options", ops->n, n_ops);
    *sized = n_ops > 0 && cfg_map_get(ops->items[0], "bytes") != NULL;
    int flat = 0;
    for (int ph = 0; ph < p->n_phases; ph++)
        for (int i = 0; i < p->phases[ph].n_ops; i++, flat++)
            if (check_op(ops->items[flat], flat, &p->phases[ph], i, *sized, why, len))
                return -1;
    return 0;
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
