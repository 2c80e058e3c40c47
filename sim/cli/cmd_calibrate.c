/* vpsim calibrate: turn the per-op times of a `vpsim run` into the measured op tables of a system
 * file (measured.ops.<kind>: bytes -> us), so model mode interpolates measurements instead of its
 * roofline for that GPU. It writes a whole system file (a base system file with those tables put in),
 * never a fragment to paste; the tables carry their provenance (the results file, GPU of the run). */
#include "cal_points.h"
#include "cli.h"

#include "../config/cfg_emit.h"
#include "../config/cfg_provenance.h"
#include "../config/cfg_schema.h"
#include "../config/cfg_system.h"
#include "../config/cfg_tree.h"
#include "../util/util.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>


int cal_args_tail(cli_common *c, int argc, char **argv)
{
    if (cli_positional(c, argc, argv, optind, "calibrate"))
        return VP_EXIT_USAGE;
    if (c->format != CLI_FMT_TABLE)
        return cli_usage_error("calibrate", "--format: calibrate writes a YAML system file, no other format");
    return 0;
}

static void calibrate_help(void)
{
    printf("usage: vpsim calibrate [SCENARIO] --results RESULTS.json [--set K=V]... [--out FILE]\n"
           "                       [--base SYSTEM.yaml] [--ops KIND,...]\n"
           "       vpsim calibrate --measure [SCENARIO] [--device cuda|cpu] [--quick] [--passes N] [--out FILE]\n"
           "                       (the compute probe of this GPU: `vpsim calibrate --measure --help`)\n"
           "\n"
           "Read the per-op times of a `vpsim run --out RESULTS.json` of SCENARIO (same --set options, so the\n"
           "plan matches op by op) and write a whole system file: the base system file with the\n"
           "`measured.ops` table of each compute op kind put in (duration against bytes read + written,\n"
           "ops of similar size merged (median), at most %d points) and measured.use set to true. Model\n"
           "mode then interpolates the tables (--explain says so). Other measured tables of the base stay.\n"
           "\n"
           "A table is refused (exit 2, nothing written, the op kind and size named) when a point is 0 us or\n"
           "less, or lies below the slowest point at a smaller size by more than %.0f %% or %.1f us (the\n"
           "noise of a per-op time: sim/cli/cal_points.h says why); --ops then keeps the sound kinds.\n"
           "\n"
           "options:\n"
           "  --results FILE  the --out of a `vpsim run` of this scenario (required)\n"
           "  --base FILE     the system file to start from (default: the scenario's system, after\n"
           "                  --system); its values and the comments beside them are kept (--set system.*\n"
           "                  overrides are not written)\n"
           "  --ops LIST      only these op kinds (comma-separated: gemm, grouped_gemm, attention, norm,\n"
           "                  elementwise, embedding); default: every kind the run timed\n"
           "  --out FILE      write the system file there (atomically); default: standard output\n"
           "\n"
           "example:\n"
           "  vpsim run configs/default.yaml --backend none --system configs/systems/h200-1x.yaml --out r.json\n"
           "  vpsim calibrate configs/default.yaml --system configs/systems/h200-1x.yaml --results r.json \\\n"
           "      --out my-h200.yaml\n"
           "  vpsim model configs/default.yaml --system my-h200.yaml --backend none --explain\n",
           CAL_MAX_POINTS, CAL_FALL_REL * 100, CAL_FALL_ABS_US);
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


int cal_check_points(const char *kind, const cal_point *pts, int n, char *why, size_t len)
{
    int slowest = -1;
    for (int i = 0; i < n; i++) {
        if (!(pts[i].us > 0)) {
            snprintf(why, len, "%s at %.0f B: %.3g us; a measured time must be > 0 (timer overhead subtracted "
                               "from an op shorter than the timer resolves?)",
                     kind, pts[i].bytes, pts[i].us);
            return i;
        }
        if (slowest >= 0) {
            const double top = pts[slowest].us, drop = top - pts[i].us;
            if (drop > CAL_FALL_REL * top && drop > CAL_FALL_ABS_US) {
                snprintf(why, len, "%s at %.0f B: %.3g us, below %.3g us at %.0f B by %.0f %% (%.2f us): the time "
                                   "falls as the size grows by more than the noise (%.0f %% or %.1f us)",
                         kind, pts[i].bytes, pts[i].us, top, pts[slowest].bytes, 100 * drop / top, drop,
                         CAL_FALL_REL * 100, CAL_FALL_ABS_US);
                return i;
            }
        }
        if (slowest < 0 || pts[i].us > pts[slowest].us)
            slowest = i;
    }
    return -1;
}

static const char *env_value(cfg_node *root, const char *key)
{
    cfg_node *env = cfg_map_get(root, "environment");
    cfg_node *v = cfg_map_get(env, key);
    return v && v->kind == CFG_NODE_SCALAR ? v->scalar : "?";
}

typedef struct cal_args {
    cli_common c;
    const char *results, *base;
    bool want[PLAN_OP_KIND_COUNT]; /* --ops (all compute kinds by default) */
} cal_args;

static int parse_ops(const char *arg, cal_args *a)
{
    char **items;
    const int n = cli_split_list("calibrate", "--ops", arg, &items);
    if (n < 0)
        return VP_EXIT_USAGE;
    int rc = 0;
    memset(a->want, 0, sizeof(a->want));
    for (int i = 0; i < n && !rc; i++) {
        int k = cfg_enum_index(plan_op_kind_names, items[i]);
        if (k < 0 || !plan_op_is_compute(k)) {
            char list[160] = "";
            for (int j = 0; j < PLAN_OP_KIND_COUNT; j++)
                if (plan_op_is_compute(j))
                    snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", list[0] ? ", " : "",
                             plan_op_kind_names[j]);
            rc = cli_usage_error("calibrate", "--ops '%s': valid choices: %s", items[i], list);
        } else {
            a->want[k] = true;
        }
    }
    cli_list_free(items, n);
    return rc;
}

/* 0, -1 after --help, or VP_EXIT_USAGE. */
static int parse_args(int argc, char **argv, cal_args *a)
{
    enum { OPT_RESULTS = CLI_OPT_FIRST_PRIVATE, OPT_BASE, OPT_OPS };
    static const struct option longopts[] = {CLI_COMMON_LONGOPTS,
                                             {"results", required_argument, NULL, OPT_RESULTS},
                                             {"base", required_argument, NULL, OPT_BASE},
                                             {"ops", required_argument, NULL, OPT_OPS},
                                             {0, 0, 0, 0}};
    memset(a, 0, sizeof(*a));
    for (int k = 0; k < PLAN_OP_KIND_COUNT; k++)
        a->want[k] = plan_op_is_compute(k);
    optind = 1;
    opterr = 0;
    int opt, rc = 0;
    while (!rc && (opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (opt == 'h') {
            calibrate_help();
            return -1;
        }
        if (opt == OPT_RESULTS)
            a->results = optarg;
        else if (opt == OPT_BASE)
            a->base = optarg;
        else if (opt == OPT_OPS)
            rc = parse_ops(optarg, a);
        else
            rc = cli_take_common("calibrate", &a->c, opt, optarg, argv);
    }
    if (rc || (rc = cal_args_tail(&a->c, argc, argv)))
        return rc;
    if (!a->results)
        return cli_usage_error("calibrate", "--results RESULTS.json is required (the --out of a `vpsim run`)");
    return 0;
}

/* The per-op times of the results, matched to the plan op by op, as points per compute kind (main
 * stream only: side-stream ops overlap). 0, or VP_EXIT_USAGE after saying why. */
static int collect_points(const plan *p, cfg_node *root, const char *results, cal_point **pts, int *npts)
{
    cfg_error err;
    cfg_node *mode = cfg_map_get(root, "mode");
    cfg_node *bes = cfg_map_get(root, "backends");
    cfg_node *ops = bes && bes->kind == CFG_NODE_SEQ && bes->n > 0 ? cfg_map_get(bes->items[0], "ops") : NULL;
    if (!mode || mode->kind != CFG_NODE_SCALAR || strcmp(mode->scalar, "run") != 0 || !ops ||
        ops->kind != CFG_NODE_SEQ) {
        cfg_errorf(&err, mode ? mode : root, "not the results of a `vpsim run` with per-op times (mode \"run\", "
                                             "backends[0].ops)");
        fprintf(stderr, "vpsim calibrate: %s\n", err.msg);
        return VP_EXIT_USAGE;
    }
    int n_ops = 0;
    for (int ph = 0; ph < p->n_phases; ph++)
        n_ops += p->phases[ph].n_ops;
    if ((int)ops->n != n_ops) {
        cfg_errorf(&err, ops, "%zu ops here but the scenario's plan has %d: run and calibrate with the same "
                              "scenario and --set options",
                   ops->n, n_ops);
        fprintf(stderr, "vpsim calibrate: %s\n", err.msg);
        return VP_EXIT_USAGE;
    }
    for (int k = 0; k < PLAN_OP_KIND_COUNT; k++)
        pts[k] = util_xcalloc((size_t)(n_ops > 0 ? n_ops : 1), sizeof(cal_point));
    int flat = 0;
    for (int ph = 0; ph < p->n_phases; ph++)
        for (int i = 0; i < p->phases[ph].n_ops; i++, flat++) {
            const plan_op *op = &p->phases[ph].ops[i];
            cfg_node *row = ops->items[flat];
            cfg_node *name = cfg_map_get(row, "name"), *us = cfg_map_get(row, "us");
            double v;
            if (!name || name->kind != CFG_NODE_SCALAR || strcmp(name->scalar, op->name) != 0 || !us ||
                us->kind != CFG_NODE_SCALAR || !cfg_parse_double(us->scalar, &v) || v < 0) {
                cfg_errorf(&err, row, "op %d: expected \"name\": \"%s\" and a duration \"us\" >= 0", flat, op->name);
                fprintf(stderr, "vpsim calibrate: %s (%s)\n", err.msg, results);
                return VP_EXIT_USAGE;
            }
            if (plan_op_is_compute(op->kind) && op->stream == PLAN_STREAM_MAIN)
                pts[op->kind][npts[op->kind]++] = (cal_point){op->bytes_read + op->bytes_written, v};
        }
    return 0;
}

/* The new measured.ops tables as YAML text (measured: {use: true, ops: ...}): 0, or VP_EXIT_USAGE
 * after naming every refused table. */
static int tables_text(const cal_args *a, cfg_node *root, cal_point **pts, const int *npts, util_buf *out)
{
    int rc = 0, written = 0;
    util_buf_printf(out, "measured:\n  use: true\n  ops:\n");
    for (int k = 0; k < PLAN_OP_KIND_COUNT; k++) {
        if (npts[k] == 0 || !a->want[k])
            continue;
        qsort(pts[k], (size_t)npts[k], sizeof(cal_point), cmp_point);
        cal_point merged[CAL_MAX_POINTS];
        const int m = cal_merge_points(pts[k], npts[k], merged, CAL_MAX_POINTS);
        char why[400];
        if (cal_check_points(plan_op_kind_names[k], merged, m, why, sizeof(why)) >= 0) {
            fprintf(stderr, "vpsim calibrate: %s\n", why);
            rc = VP_EXIT_USAGE;
            continue;
        }
        util_buf_printf(out, "    %s:\n      bytes: [", plan_op_kind_names[k]);
        for (int i = 0; i < m; i++)
            util_buf_printf(out, "%s%.0f", i ? ", " : "", merged[i].bytes);
        util_buf_printf(out, "]\n      us: [");
        for (int i = 0; i < m; i++)
            util_buf_printf(out, "%s%.3g", i ? ", " : "", merged[i].us);
        util_buf_printf(out, "]\n      source: \"measured: vpsim calibrate from %s (vpsim run on %s), %d ops merged "
                             "into %d points\"\n",
                        a->results, env_value(root, "gpu"), npts[k], m);
        written++;
    }
    if (rc)
        fprintf(stderr, "vpsim calibrate: nothing written; --ops KIND,... keeps the sound tables, or measure again "
                        "(more --iters)\n");
    else if (!written)
        rc = cli_usage_error("calibrate", "the run timed no op of the kinds asked for (--ops)");
    return rc;
}

/* Put `fresh` into `dst`: a key both hold as maps is merged `depth` levels down, any other key of
 * `fresh` replaces dst's (so a measured table is replaced whole, and tables not measured stay). */
static void merge_maps(cfg_doc *doc, cfg_node *dst, cfg_node *fresh, int depth)
{
    for (size_t i = 0; i < fresh->n; i++) {
        const char *key = fresh->keys[i]->scalar;
        cfg_node *have = cfg_map_get(dst, key), *v = fresh->items[i];
        if (depth > 0 && have && have->kind == CFG_NODE_MAP && v->kind == CFG_NODE_MAP)
            merge_maps(doc, have, v, depth - 1);
        else
            cfg_map_put(doc, dst, key, v);
    }
}

typedef struct note_ctx {
    cfg_prov *prov;
    const cfg_node **nodes; /* per note: its value and its key (a block's comment sits on the key's line) */
    const cal_note *notes;
    int n_notes;
} note_ctx;

static const char *note_comment(const cfg_node *n, const char **more, void *ctx)
{
    const note_ctx *c = ctx;
    for (int i = 0; n && i < c->n_notes; i++)
        if (n == c->nodes[2 * i] || n == c->nodes[2 * i + 1]) {
            if (more)
                *more = NULL;
            return c->notes[i].comment;
        }
    return cfg_prov_node_comment(n, more, c->prov);
}

/* The key node of dotted `key` in `root` (NULL when absent). */
static const cfg_node *key_node_at(const cfg_node *root, const char *key)
{
    char parent[128];
    snprintf(parent, sizeof(parent), "%s", key);
    char *dot = strrchr(parent, '.');
    const cfg_node *map = root;
    const char *leaf = key;
    if (dot) {
        *dot = '\0';
        map = cfg_node_at(root, parent);
        leaf = key + (dot - parent) + 1;
    }
    for (size_t i = 0; map && map->kind == CFG_NODE_MAP && i < map->n; i++)
        if (strcmp(map->keys[i]->scalar, leaf) == 0)
            return map->keys[i];
    return NULL;
}

/* Empty the base's map at dotted `key` (when the base has one), so the fresh map replaces it whole. */
static void clear_key(cfg_doc *doc, cfg_node *root, const char *key)
{
    char parent[128];
    snprintf(parent, sizeof(parent), "%s", key);
    char *dot = strrchr(parent, '.');
    cfg_node *map = root;
    const char *leaf = key;
    if (dot) {
        *dot = '\0';
        map = cfg_node_at(root, parent);
        leaf = dot + 1;
    }
    if (map && map->kind == CFG_NODE_MAP && cfg_map_get(map, leaf))
        cfg_map_put(doc, map, leaf, cfg_node_new_map(doc, map));
}

int cal_system_write(const cal_system_spec *s, util_buf *out)
{
    cfg_error err;
    cfg_doc *doc = cfg_doc_load_file(s->base, &err), *tdoc = NULL, *check = NULL;
    int rc = VP_EXIT_USAGE;
    if (!doc) {
        fprintf(stderr, "vpsim %s: %s: %s\n", s->cmd, s->base_opt, err.msg);
        return rc;
    }
    cfg_node *root = cfg_doc_root(doc);
    const cfg_node **nodes = util_xcalloc((size_t)(s->n_notes > 0 ? 2 * s->n_notes : 1), sizeof(*nodes));
    if (root->kind != CFG_NODE_MAP) {
        cfg_errorf(&err, root, "a system file is a mapping of keys");
        fprintf(stderr, "vpsim %s: %s: %s\n", s->cmd, s->base_opt, err.msg);
        goto done;
    }
    tdoc = cfg_doc_load_text(s->fresh_text, strlen(s->fresh_text), "fresh tables", false, &err);
    if (!tdoc) {
        fprintf(stderr, "vpsim %s: internal: %s\n", s->cmd, err.msg);
        goto done;
    }
    cfg_node *fresh = cfg_doc_root(tdoc);
    cfg_doc_adopt(doc, tdoc);
    tdoc = NULL;
    for (int i = 0; i < s->n_clear; i++)
        clear_key(doc, root, s->clear[i]);
    /* measured -> ops / compute -> one table: two levels merged, the tables replaced whole. */
    merge_maps(doc, root, fresh, 2);
    util_buf_printf(out, "%s", s->header);
    /* The base's own header and the provenance comment beside each of its values travel with them. */
    for (int i = 0; i < s->n_notes; i++) {
        nodes[2 * i] = cfg_node_at(root, s->notes[i].key);
        nodes[2 * i + 1] = key_node_at(root, s->notes[i].key);
    }
    note_ctx nc = {.prov = cfg_prov_open(s->base), .nodes = nodes, .notes = s->notes, .n_notes = s->n_notes};
    cfg_prov_header(nc.prov, out);
    cfg_emit_yaml_commented(out, root, note_comment, &nc);
    cfg_prov_close(nc.prov);
    /* What is written must load: bind it as a system file before anything is written. */
    check = cfg_doc_load_text(out->s, out->len, s->what, false, &err);
    cfg_system sys;
    memset(&sys, 0, sizeof(sys));
    if (!check || cfg_schema_bind(cfg_system_fields, cfg_doc_root(check), &sys, "", &err)) {
        fprintf(stderr, "vpsim %s: %s %s: the result would not load: %s\n", s->cmd, s->base_opt, s->base, err.msg);
        cfg_schema_free(cfg_system_fields, &sys); /* what the failed bind took before it stopped */
        goto done;
    }
    cfg_schema_free(cfg_system_fields, &sys);
    rc = 0;
done:
    free(nodes);
    cfg_doc_free(check);
    cfg_doc_free(tdoc);
    cfg_doc_free(doc);
    return rc;
}

int cal_system_text(const char *base, const char *fresh_text, const char *header, const char *note_key,
                    const char *note, util_buf *out)
{
    const cal_note one = {note_key, note};
    const cal_system_spec s = {.cmd = "calibrate", .base_opt = "--base", .what = "the calibrated system file",
                               .base = base, .fresh_text = fresh_text, .header = header,
                               .notes = note_key ? &one : NULL, .n_notes = note_key ? 1 : 0};
    return cal_system_write(&s, out);
}

static int calibrate(const cal_args *a, const plan *p, const char *base)
{
    cfg_error err;
    cfg_doc *doc = cfg_doc_load_file(a->results, &err);
    if (!doc) {
        fprintf(stderr, "vpsim calibrate: %s\n", err.msg);
        return VP_EXIT_USAGE;
    }
    cfg_node *root = cfg_doc_root(doc);
    cal_point *pts[PLAN_OP_KIND_COUNT] = {0};
    int npts[PLAN_OP_KIND_COUNT] = {0};
    util_buf tables = {0}, out = {0}, header = {0};
    int rc = collect_points(p, root, a->results, pts, npts);
    if (rc == 0)
        rc = tables_text(a, root, pts, npts, &tables);
    if (rc == 0) {
        util_buf_printf(&header, "# System file written by `vpsim calibrate`\n"
                                 "#   base:   %s (its values with the comments beside them, and its header below)\n"
                                 "#   tables: measured.ops from %s\n"
                                 "#           (vpsim run on %s, CUDA driver %s; scenario %s)\n",
                        base, a->results, env_value(root, "gpu"), env_value(root, "cuda_driver"), p->scenario);
        rc = cal_system_text(base, tables.s, header.s, NULL, NULL, &out);
    }
    if (rc == 0)
        rc = cli_emit(&a->c, out.s, out.len);
    for (int k = 0; k < PLAN_OP_KIND_COUNT; k++)
        free(pts[k]);
    util_buf_free(&tables);
    util_buf_free(&header);
    util_buf_free(&out);
    cfg_doc_free(doc);
    return rc;
}

int cmd_calibrate(int argc, char **argv)
{
    /* The probe takes other options (and refuses --results): it parses its own command line. */
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--measure") == 0)
            return cmd_calibrate_measure(argc, argv);
    cal_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc < 0 ? VP_EXIT_OK : rc;
    cfg_scenario sc;
    bool have_sc = false;
    plan p;
    rc = cli_load(&a.c, &sc, &have_sc, &p);
    if (rc)
        return rc;
    const char *base = a.base ? a.base : have_sc ? sc.system_path : NULL;
    if (!base)
        rc = cli_usage_error("calibrate", "--base SYSTEM.yaml is needed with --plan (no scenario names a system)");
    else
        rc = calibrate(&a, &p, base);
    plan_free(&p);
    if (have_sc)
        cfg_scenario_free(&sc);
    return rc;
}
