/* vpsim calibrate: turn the per-op times of a `vpsim run` into the measured op tables of a system
 * file (measured.ops.<kind>: bytes -> us), so model mode interpolates measurements instead of its
 * roofline for that GPU. It writes a whole system file (a base system file with those tables put in),
 * never a fragment to paste; the tables carry their provenance (the results file, GPU of the run). */
#include "../calib/cal_facts.h"
#include "../calib/cal_results.h"
#include "../calib/cal_system.h"
#include "cli.h"

#include "../config/cfg_emit.h"
#include "../config/cfg_provenance.h"
#include "../config/cfg_schema.h"
#include "../config/cfg_system.h"
#include "../config/cfg_tree.h"
#include "../util/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>


static int cmp_point(const void *a, const void *b)
{
    double x = ((const cal_point *)a)->bytes, y = ((const cal_point *)b)->bytes;
    return x < y ? -1 : x > y;
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

static bool is_compute(int k) { return plan_op_is_compute((plan_op_kind)k); }

/* The compute op kinds, comma-separated: what --ops takes (built once from cfg_lists.h). */
static const char *compute_kinds(void)
{
    static char list[160];
    return list[0] ? list : cli_names_where(plan_op_kind_names, PLAN_OP_KIND_COUNT, is_compute, list, sizeof(list));
}

static int set_ops(void *dest, const char *arg, const cli_opt *o, cli_parse *ps)
{
    (void)o;
    bool *want = dest;
    char **items;
    const int n = util_split_list(ps->cmd, "--ops", arg, &items);
    if (n < 0)
        return VP_EXIT_USAGE;
    int rc = 0;
    memset(want, 0, PLAN_OP_KIND_COUNT * sizeof(bool));
    for (int i = 0; i < n && !rc; i++) {
        int k = cfg_enum_index(plan_op_kind_names, items[i]);
        if (k < 0 || !plan_op_is_compute(k))
            rc = util_usage_error(ps->cmd, "--ops '%s': valid choices: %s", items[i], compute_kinds());
        else
            want[k] = true;
    }
    util_list_free(items, n);
    return rc;
}

/* The per-op times of the results, matched to the plan op by op (cal_results_check first: a run of this
 * plan on a GPU), as points per compute kind (main stream only: side-stream ops overlap). 0, or
 * VP_EXIT_USAGE after naming the first mismatch. */
static int collect_points(const plan *p, cfg_node *root, cal_point **pts, int *npts, bool *sized)
{
    char why[1024];
    if (cal_results_check(p, root, sized, why, sizeof(why))) {
        fprintf(stderr, "vpsim calibrate: %s (nothing written)\n", why);
        return VP_EXIT_USAGE;
    }
    int n_ops = 0;
    for (int ph = 0; ph < p->n_phases; ph++)
        n_ops += p->phases[ph].n_ops;
    for (int k = 0; k < PLAN_OP_KIND_COUNT; k++)
        pts[k] = util_xcalloc((size_t)(n_ops > 0 ? n_ops : 1), sizeof(cal_point));
    int flat = 0;
    for (int ph = 0; ph < p->n_phases; ph++)
        for (int i = 0; i < p->phases[ph].n_ops; i++, flat++) {
            const plan_op *op = &p->phases[ph].ops[i];
            if (plan_op_is_compute(op->kind) && op->stream == PLAN_STREAM_MAIN)
                pts[op->kind][npts[op->kind]++] =
                    (cal_point){op->bytes_read + op->bytes_written, cal_results_us(root, flat)};
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
        rc = util_usage_error("calibrate", "the run timed no op of the kinds asked for (--ops)");
    return rc;
}

static int calibrate(const cal_args *a, const plan *p, const char *base, util_buf *out)
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
    util_buf tables = {0}, header = {0};
    bool sized = false;
    int rc = collect_points(p, root, pts, npts, &sized);
    /* The tables describe the GPU the run ran on: a base naming another is refused unless --base chose it. */
    exec_facts facts;
    char mismatch[400] = "";
    if (rc == 0) {
        cal_results_facts(root, &facts);
        rc = cal_facts_check("calibrate", &facts, base, a->base != NULL, mismatch, sizeof(mismatch));
    }
    if (rc == 0)
        rc = tables_text(a, root, pts, npts, &tables);
    if (rc == 0) {
        util_buf_printf(&header, "# System file written by `vpsim calibrate`\n"
                                 "#   base:   %s (its values with the comments beside them, and its header below)\n"
                                 "#   tables: measured.ops from %s\n"
                                 "#           (vpsim run on %s, CUDA driver %s; scenario %s)\n"
                                 "#   checked: schema, device, TP, batch, context, and per op phase, index, name, kind,"
                                 " layer%s\n",
                        base, a->results, env_value(root, "gpu"), env_value(root, "cuda_driver"), p->scenario,
                        sized ? ", bytes" : " (the run predates per-op sizes: shapes checked by TP, batch, context)");
        cal_facts_header(mismatch, base, &header);
        rc = cal_system_text(base, tables.s, header.s, NULL, NULL, out);
    }
    for (int k = 0; k < PLAN_OP_KIND_COUNT; k++)
        free(pts[k]);
    util_buf_free(&tables);
    util_buf_free(&header);
    cfg_doc_free(doc);
    return rc;
}

static void cal_init(void *args)
{
    cal_args *a = args;
    for (int k = 0; k < PLAN_OP_KIND_COUNT; k++)
        a->want[k] = plan_op_is_compute(k);
}

static const cli_opt cal_opts[] = {
    {.name = "results", .kind = CLI_STRING, .offset = offsetof(cal_args, results), .meta = "FILE",
     .required = "--results RESULTS.json is required (the --out of a `vpsim run`)",
     .help = "the --out of a `vpsim run` of this scenario"},
    {.name = "base", .kind = CLI_STRING, .offset = offsetof(cal_args, base), .meta = "FILE",
     .help = "the system file to start from (default: the scenario's system, after --system); its values and the "
             "comments beside them are kept (--set system.* overrides are not written). A base naming another GPU "
             "than the run's is refused unless --base names it (the mismatch then goes into the header)"},
    {.name = "ops", .kind = CLI_CUSTOM, .offset = offsetof(cal_args, want), .set = set_ops, .meta = "LIST",
     .dflt_text = "every kind the run timed", .help = "only these op kinds, comma-separated, of: ",
     .help_tail = compute_kinds},
    CLI_OPT_SET(cal_args, "the --set options of the run (so the plan matches op by op)"),
    CLI_OPT_SYSTEM(cal_args, CLI_HELP_SYSTEM),
    CLI_OPT_PLAN(cal_args, "the run's saved plan instead of the scenario's (then --base is needed)"),
    CLI_OPT_OUT(cal_args, "write the system file there (atomically); default: standard output"),
    {.name = "format", .kind = CLI_ENUM, .offset = offsetof(cal_args, c.format), .choices = cli_format_names,
     .meta = "FMT", .hidden = true}, /* a system file is YAML: anything but the default is refused */
};

static int cal_check(cli_ctx *x) { return cli_system_file_only(x->c, "calibrate"); }

static int cal_run(cli_ctx *x)
{
    const cal_args *a = x->args;
    const char *base = a->base ? a->base : x->have_sc ? x->sc.system_path : NULL;
    if (!base)
        return util_usage_error("calibrate", "--base SYSTEM.yaml is needed with --plan (no scenario names a system)");
    const int rc = calibrate(a, &x->p, base, &x->out);
    x->emit = true;
    return rc;
}

static void cal_about(util_buf *out)
{
    util_buf_printf(out,
                    "Read the per-op times of a `vpsim run --out RESULTS.json` of SCENARIO (same --set options, so the\n"
                    "plan matches op by op) and write a whole system file: the base system file with the\n"
                    "`measured.ops` table of each compute op kind put in (duration against bytes read + written,\n"
                    "ops of similar size merged (median), at most %d points) and measured.use set to true. Model\n"
                    "mode then interpolates the tables (--explain says so). Other measured tables of the base stay.\n"
                    "\n"
                    "RESULTS is accepted only as a run of this plan on a GPU: schema %s, mode run, device cuda,\n"
                    "the plan's TP, batch and context, and per op its phase, index, name, kind, layer and bytes; the\n"
                    "first mismatch is named with its file:line:col (exit 2, nothing written).\n"
                    "A table is refused (exit 2, nothing written, the op kind and size named) when a point is 0 us or\n"
                    "less, or lies below the slowest point at a smaller size by more than %.0f %% or %.1f us (the\n"
                    "noise of a per-op time: sim/calib/cal_system.h says why); --ops then keeps the sound kinds.\n",
                    CAL_MAX_POINTS, CAL_RESULTS_SCHEMA, CAL_FALL_REL * 100, CAL_FALL_ABS_US);
}

static const cli_cmd cal_cmd = {
    .spec = {.name = "calibrate", .synopsis = "vpsim calibrate", .pos_usage = "[SCENARIO]", .pos = CLI_POS_SCENARIO,
             .usage_more = "       vpsim calibrate --measure [SCENARIO] [--device cuda|cpu] [--quick] [--passes N] "
                           "[--out FILE]\n"
                           "       (the compute probe of this GPU: `vpsim calibrate --measure --help`)\n",
             .common_offset = offsetof(cal_args, c), .opts = cal_opts, .n_opts = CLI_N(cal_opts),
             .about_fn = cal_about,
             .examples = "vpsim run configs/default.yaml --backend none --system configs/systems/h200-1x.yaml --out r.json\n"
                         "vpsim calibrate configs/default.yaml --system configs/systems/h200-1x.yaml --results r.json \\\n"
                         "    --out my-h200.yaml\n"
                         "vpsim model configs/default.yaml --system my-h200.yaml --backend none --explain\n"},
    .args_size = sizeof(cal_args),
    .flags = CLI_LOAD,
    .init = cal_init,
    .check = cal_check,
    .run = cal_run,
};

int cmd_calibrate(int argc, char **argv)
{
    /* The probe takes other options (and refuses --results): it parses its own command line. */
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--measure") == 0)
            return cmd_calibrate_measure(argc, argv);
    return cli_command_main(&cal_cmd, argc, argv);
}
