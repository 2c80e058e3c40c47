/* vpsim calibrate: turn the per-op times of a `vpsim run` into the measured op tables of a system
 * file (measured.ops.<kind>: bytes -> us), so model mode interpolates measurements instead of its
 * roofline for that GPU. The tables carry their provenance (the results file, GPU, date of the run). */
#include "cal_points.h"
#include "cli.h"

#include "../config/cfg_tree.h"
#include "../util/util.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>


static void calibrate_help(void)
{
    printf("usage: vpsim calibrate [SCENARIO] --results RESULTS.json [--set K=V]... [--out FILE]\n"
           "\n"
           "Read the per-op times of a `vpsim run --out RESULTS.json` of SCENARIO (same --set options, so the\n"
           "plan matches op by op) and print the `measured: ops:` block of a system file: for each compute op\n"
           "kind, duration against bytes read + written, ops of similar size merged (median), at most %d\n"
           "points. Paste it into the system file of the GPU that ran (model mode then interpolates it,\n"
           "and --explain says so), or compare with `vpsim model --system`.\n"
           "\n"
           "example:\n"
           "  vpsim run configs/default.yaml --backend none --system configs/systems/h200-1x.yaml --out r.json\n"
           "  vpsim calibrate configs/default.yaml --results r.json >> my-h200.yaml\n",
           CAL_MAX_POINTS);
}

static int cmp_point(const void *a, const void *b)
{
    double x = ((const cal_point *)a)->bytes, y = ((const cal_point *)b)->bytes;
    return x < y ? -1 : x > y;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int cal_merge_points(const cal_point *in, int n, cal_point *out, int max)
{
    double *us = util_xmalloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    int m = 0;
    for (double ratio = 1.1;; ratio *= 1.5) {
        /* A pass stops as soon as its groups would not fit `out` (a plan of 100 GEMM sizes once wrote
         * 100 points into a 33-entry stack array here), then the ratio widens. Past any ratio two
         * byte counts can have, the last group takes everything left, so the loop ends for any input. */
        const bool last = !(ratio < 1e300);
        int i = 0;
        m = 0;
        while (i < n && m < max) {
            int j = i + 1;
            double logsum = log(in[i].bytes > 0 ? in[i].bytes : 1);
            us[0] = in[i].us;
            while (j < n && (last || in[j].bytes <= in[i].bytes * ratio)) {
                us[j - i] = in[j].us;
                logsum += log(in[j].bytes > 0 ? in[j].bytes : 1);
                j++;
            }
            qsort(us, (size_t)(j - i), sizeof(double), cmp_double);
            out[m].bytes = exp(logsum / (j - i));
            out[m].us = us[(j - i) / 2];
            m++;
            i = j;
        }
        if (i == n)
            break;
    }
    free(us);
    return m;
}

static const char *env_value(cfg_node *root, const char *key)
{
    cfg_node *env = cfg_map_get(root, "environment");
    cfg_node *v = cfg_map_get(env, key);
    return v && v->kind == CFG_NODE_SCALAR ? v->scalar : "?";
}

int cmd_calibrate(int argc, char **argv)
{
    static const struct option longopts[] = {CLI_COMMON_LONGOPTS, {"results", required_argument, NULL, 'r'},
                                             {0, 0, 0, 0}};
    cli_common c = {0};
    const char *results = NULL;
    optind = 1;
    opterr = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (opt == 'h') {
            calibrate_help();
            return VP_EXIT_OK;
        }
        if (opt == 'r') {
            results = optarg;
            continue;
        }
        int rc = cli_take_common("calibrate", &c, opt, optarg, argv);
        if (rc)
            return rc;
    }
    if (cli_positional(&c, argc, argv, optind, "calibrate"))
        return VP_EXIT_USAGE;
    if (!results)
        return cli_usage_error("calibrate", "--results RESULTS.json is required (the --out of a `vpsim run`)");

    cfg_scenario sc;
    bool have_sc = false;
    plan p;
    int rc = cli_load(&c, &sc, &have_sc, &p);
    if (rc)
        return rc;
    cfg_error err;
    cfg_doc *doc = cfg_doc_load_file(results, &err);
    rc = VP_EXIT_USAGE;
    if (!doc) {
        fprintf(stderr, "%s\n", err.msg);
        goto done;
    }
    cfg_node *root = cfg_doc_root(doc);
    cfg_node *mode = cfg_map_get(root, "mode");
    cfg_node *bes = cfg_map_get(root, "backends");
    cfg_node *ops = bes && bes->kind == CFG_NODE_SEQ && bes->n > 0 ? cfg_map_get(bes->items[0], "ops") : NULL;
    if (!mode || mode->kind != CFG_NODE_SCALAR || strcmp(mode->scalar, "run") != 0 || !ops ||
        ops->kind != CFG_NODE_SEQ) {
        cfg_errorf(&err, mode ? mode : root, "not the results of a `vpsim run` with per-op times (mode \"run\", "
                                             "backends[0].ops)");
        fprintf(stderr, "%s\n", err.msg);
        goto done;
    }
    int n_ops = 0;
    for (int ph = 0; ph < p.n_phases; ph++)
        n_ops += p.phases[ph].n_ops;
    if ((int)ops->n != n_ops) {
        cfg_errorf(&err, ops, "%zu ops here but the scenario's plan has %d: run and calibrate with the same "
                              "scenario and --set options",
                   ops->n, n_ops);
        fprintf(stderr, "%s\n", err.msg);
        goto done;
    }
    cal_point *pts[PLAN_OP_KIND_COUNT];
    int npts[PLAN_OP_KIND_COUNT] = {0};
    for (int k = 0; k < PLAN_OP_KIND_COUNT; k++)
        pts[k] = util_xcalloc((size_t)n_ops, sizeof(cal_point));
    int flat = 0;
    for (int ph = 0; ph < p.n_phases; ph++)
        for (int i = 0; i < p.phases[ph].n_ops; i++, flat++) {
            const plan_op *op = &p.phases[ph].ops[i];
            cfg_node *row = ops->items[flat];
            cfg_node *name = cfg_map_get(row, "name"), *us = cfg_map_get(row, "us");
            double v;
            if (!name || name->kind != CFG_NODE_SCALAR || strcmp(name->scalar, op->name) != 0 || !us ||
                us->kind != CFG_NODE_SCALAR || !cfg_parse_double(us->scalar, &v) || v < 0) {
                cfg_errorf(&err, row, "op %d: expected \"name\": \"%s\" and a duration \"us\" >= 0", flat, op->name);
                fprintf(stderr, "%s\n", err.msg);
                for (int k = 0; k < PLAN_OP_KIND_COUNT; k++)
                    free(pts[k]);
                goto done;
            }
            if (!plan_op_is_compute(op->kind) || op->stream != PLAN_STREAM_MAIN)
                continue; /* collectives are not compute; side-stream ops overlap */
            pts[op->kind][npts[op->kind]++] = (cal_point){op->bytes_read + op->bytes_written, v};
        }
    util_buf out = {0};
    util_buf_printf(&out, "# measured op tables written by `vpsim calibrate` from %s\n", results);
    util_buf_printf(&out, "# run on %s, %s; scenario %s\n", env_value(root, "gpu"), env_value(root, "cuda_driver"),
                    p.scenario);
    util_buf_printf(&out, "measured:\n  use: true\n  ops:\n");
    for (int k = 0; k < PLAN_OP_KIND_COUNT; k++) {
        if (npts[k] == 0)
            continue;
        qsort(pts[k], (size_t)npts[k], sizeof(cal_point), cmp_point);
        cal_point merged[CAL_MAX_POINTS];
        int m = cal_merge_points(pts[k], npts[k], merged, CAL_MAX_POINTS);
        util_buf_printf(&out, "    %s:\n      bytes: [", plan_op_kind_names[k]);
        for (int i = 0; i < m; i++)
            util_buf_printf(&out, "%s%.0f", i ? ", " : "", merged[i].bytes);
        util_buf_printf(&out, "]\n      us: [");
        for (int i = 0; i < m; i++)
            util_buf_printf(&out, "%s%.3g", i ? ", " : "", merged[i].us);
        util_buf_printf(&out, "]\n      source: \"measured: vpsim run (%s), %d ops merged into %d points\"\n",
                        env_value(root, "gpu"), npts[k], m);
        free(pts[k]);
    }
    for (int k = 0; k < PLAN_OP_KIND_COUNT; k++)
        if (npts[k] == 0)
            free(pts[k]);
    rc = cli_emit(&c, out.s, out.len);
    util_buf_free(&out);
done:
    cfg_doc_free(doc);
    plan_free(&p);
    if (have_sc)
        cfg_scenario_free(&sc);
    return rc;
}
