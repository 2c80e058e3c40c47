/* vpsim calibrate --measure: the compute probe. It replays the probe plan (plan_probe.h) on
 * this device with the replay's own executor, so its points are the per-op times `vpsim run` would
 * attribute to ops of those shapes, and writes a whole system file with one measured.compute.<class>
 * law table per op class and the graph gap launch.graph_node_us it measured. Which class an op belongs
 * to and its rows coordinate come from plan_op_law_class alone, the function model mode prices ops by. */
#include "../calib/cal_facts.h"
#include "../calib/cal_system.h"
#include "cli.h"

#include "../config/cfg_system.h"
#include "../config/cfg_tree.h"
#include "../exec/exec.h"
#include "../exec/exec_watch.h"
#include "../model/model.h"
#include "../plan/plan_probe.h"
#include "../util/util.h"
#include "../util/util_env.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PROBE_WARMUP 5 /* eager passes before anything is timed (cuBLAS heuristics, first touches) */

typedef struct meas_args {
    cli_common c;
    const char *base;
    int device; /* cfg_device, -1: the scenario's */
    bool quick;
    int passes;
    int max_host_gib; /* CPU device: the host-memory budget per rank (--max-host-memory) */
    double part_gib;  /* --part-gib: the most private weights one probe part may take; 0: the default */
    bool measure;     /* --measure itself (how cmd_calibrate handed over) */
} meas_args;

static void meas_init(void *args) { ((meas_args *)args)->device = -1; }

#define MEAS_REFUSED(nm)                                                                                               \
    CLI_OPT_REFUSED(nm, "--measure measures this GPU itself; --" nm " belongs to calibrating from a run's results "    \
                        "(without --measure)")
static const cli_opt meas_opts[] = {
    {.name = "measure", .kind = CLI_FLAG, .offset = offsetof(meas_args, measure), .hidden = true},
    {.name = "base", .kind = CLI_STRING, .offset = offsetof(meas_args, base), .meta = "FILE",
     .help = "the system file to start from (default: the scenario's system, after --system); its values, comments "
             "and other measured tables stay. The gpu section (name, SMs, memory, cc) and the CPU vendor are this "
             "device's own; a base naming another GPU is refused (exit 2, before measuring) unless --base names it, "
             "and the mismatch then goes into the file's header"},
    {.name = "device", .kind = CLI_ENUM, .offset = offsetof(meas_args, device), .choices = cfg_device_names, .meta = "D",
     .dflt_text = "the scenario's run.device",
     .help = "cpu times eager launches and is for tests (with --quick): its laws are CPU timings, not a GPU's, and "
             "every value it writes is tagged SELF-TEST (a GPU base needs --base)"},
    {.name = "quick", .kind = CLI_FLAG, .offset = offsetof(meas_args, quick),
     .help = "a small grid (2 rows values, the 2 smallest sizes, KV 256 and 1024): seconds on the CPU device"},
    {.name = "passes", .kind = CLI_INT, .offset = offsetof(meas_args, passes), .lo = 1, .hi = 10000, .dflt = "20",
     .meta = "N", .help = "timed pairs of launches per point (CUDA graphs where the device has them, else eager "
                          "launches)"},
    {.name = "part-gib", .kind = CLI_DOUBLE, .offset = offsetof(meas_args, part_gib), .dlo = 0.001, .dhi = 1e6,
     .meta = "GIB", .dflt_text = "80 % of the GPU's memory; the CPU device: one part",
     .help = "run the probe in parts whose private weights and KV caches take at most GIB each, one after the "
             "other (the full grid needs 156 GiB at the default scenario; the rest of the GPU's memory holds the "
             "CUDA context, cuBLAS and attention workspaces and the L2 flush)"},
    {.name = "max-host-memory", .kind = CLI_INT, .offset = offsetof(meas_args, max_host_gib), .lo = 1, .hi = 1 << 20,
     .dflt = CLI_STR(EXEC_MAX_HOST_GIB_DEFAULT), .meta = "GIB",
     .help = "cpu device: refuse a probe needing more host memory per rank (as `vpsim run`)"},
    CLI_OPT_SET(meas_args, CLI_HELP_SET),
    CLI_OPT_SYSTEM(meas_args, CLI_HELP_SYSTEM),
    CLI_OPT_OUT(meas_args, "write the system file there (atomically); default: standard output"),
    {.name = "format", .kind = CLI_ENUM, .offset = offsetof(meas_args, c.format), .choices = cli_format_names,
     .meta = "FMT", .hidden = true}, /* a system file is YAML: anything but the default is refused */
    MEAS_REFUSED("results"),
    MEAS_REFUSED("ops"),
    CLI_OPT_REFUSED("plan", "--plan: --measure builds its own probe plan from the scenario"),
};
#undef MEAS_REFUSED

static int meas_check(cli_ctx *x) { return cli_system_file_only(x->c, "calibrate"); }

typedef struct law_point {
    double width, rows, bytes, us; /* width: the grouped classes' third coordinate, else 0 */
} law_point;

static int cmp3(double a, double b) { return a < b ? -1 : a > b; }

static int cmp_law(const void *a, const void *b)
{
    const law_point *x = a, *y = b;
    int c = cmp3(x->width, y->width);
    if (!c)
        c = cmp3(x->rows, y->rows);
    return c ? c : cmp3(x->bytes, y->bytes);
}

typedef struct law_set {
    law_point *pts[CFG_LAW_COUNT];
    int n[CFG_LAW_COUNT];
    double gap_us;     /* what one more empty op adds, floored at 0 (the first part's) */
    double gap_raw_us; /* as measured: a difference of two noisy medians can come out below 0 */
} law_set;

/* The classes whose tables carry the width coordinate (plan_op_law_width). */
static bool has_width(int c) { return c == CFG_LAW_GROUPED_WIDE || c == CFG_LAW_GROUPED_NARROW; }

/* The probe's groups for exec_time_groups (plan_probe.h): the empty ops, then each grid point's
 * PLAN_PROBE_REPEAT ops; the last op is the L2 flush. Returns the number of groups. */
static int make_groups(const plan *p, int *first, int *count)
{
    const int n_ops = p->phases[0].n_ops;
    int g = 0;
    first[g] = 0;
    count[g++] = PLAN_PROBE_EMPTY;
    for (int i = PLAN_PROBE_EMPTY; i + PLAN_PROBE_REPEAT <= n_ops - 1; i += PLAN_PROBE_REPEAT) {
        first[g] = i;
        count[g++] = PLAN_PROBE_REPEAT;
    }
    return g;
}

/* The points of one probe part's per-group times, added to `ls`: the gap (what one more empty op adds
 * to a graph, floored at 0 like every point: a gap under the timer's noise is no gap, and a negative one
 * would make the file unloadable; the file keeps the first part's), then per grid point its time less
 * this part's gap, floored at 0, filed under plan_op_law_class's class, rows and (grouped classes)
 * width. 0, or VP_EXIT_FAIL when the plan is not laid out as plan_probe.h says. */
static int collect(const plan *p, const int *first, int n_groups, const double *group_us, bool first_part,
                   law_set *ls)
{
    const plan_phase *ph = &p->phases[0];
    const double gap = group_us[0] > 0.0 ? group_us[0] : 0.0;
    if (first_part) {
        ls->gap_raw_us = group_us[0];
        ls->gap_us = gap;
    }
    for (int c = 0; c < CFG_LAW_COUNT; c++)
        ls->pts[c] = util_xrealloc(ls->pts[c], ((size_t)ls->n[c] + (size_t)n_groups + 1) * sizeof(law_point));
    for (int g = 1; g < n_groups; g++) {
        const plan_op *op = &ph->ops[first[g]];
        double rows = 0.0;
        const int c = plan_op_law_class(op, &rows);
        for (int j = 0; j < PLAN_PROBE_REPEAT; j++) {
            double r2;
            if (plan_op_law_class(&ph->ops[first[g] + j], &r2) != c || r2 != rows || c < 0) {
                fprintf(stderr, "vpsim calibrate: internal: probe op %s does not match its point\n",
                        ph->ops[first[g] + j].name);
                return VP_EXIT_FAIL;
            }
        }
        const double us = group_us[g] - gap;
        ls->pts[c][ls->n[c]++] = (law_point){has_width(c) ? plan_op_law_width(op) : 0.0, rows,
                                             op->bytes_read + op->bytes_written, us > 0.0 ? us : 0.0};
    }
    for (int c = 0; c < CFG_LAW_COUNT; c++)
        qsort(ls->pts[c], (size_t)ls->n[c], sizeof(law_point), cmp_law);
    return 0;
}

/* Where and on what the probe ran, as "DATE, HOST, DEVICE" (the device's own facts; quotes dropped: it
 * goes into YAML strings and comments). */
static void where_text(char *buf, size_t len, const exec_facts *f)
{
    char date[32];
    util_utc_now(date, sizeof(date));
    snprintf(buf, len, "%s, %s, %s", date, f->host, f->label);
    for (char *s = buf; *s; s++)
        if (*s == '"' || *s == '\\' || *s == '#')
            *s = '\'';
}

/* The fresh keys as YAML (measured.use, measured.compute.<class>, launch.graph_node_us). `tag` opens
 * each table's source: "" or a self-test's "SELF-TEST (...); ". */
static void fresh_text(util_buf *out, const law_set *ls, const char *where, int passes, bool graph, const char *tag)
{
    util_buf_printf(out, "measured:\n  use: true\n  compute:\n");
    for (int c = 0; c < CFG_LAW_COUNT; c++) {
        if (!ls->n[c])
            continue;
        const law_point *pt = ls->pts[c];
        util_buf_printf(out, "    %s:\n", cfg_law_names[c]);
        if (has_width(c)) {
            util_buf_printf(out, "      width: [");
            for (int i = 0; i < ls->n[c]; i++)
                util_buf_printf(out, "%s%.0f", i ? ", " : "", pt[i].width);
            util_buf_printf(out, "]\n");
        }
        util_buf_printf(out, "      rows: [");
        for (int i = 0; i < ls->n[c]; i++)
            util_buf_printf(out, "%s%.0f", i ? ", " : "", pt[i].rows);
        util_buf_printf(out, "]\n      bytes: [");
        for (int i = 0; i < ls->n[c]; i++)
            util_buf_printf(out, "%s%.0f", i ? ", " : "", pt[i].bytes);
        util_buf_printf(out, "]\n      us: [");
        for (int i = 0; i < ls->n[c]; i++)
            util_buf_printf(out, "%s%.4g", i ? ", " : "", pt[i].us);
        util_buf_printf(out, "]\n      source: \"%smeasured: vpsim calibrate --measure, %s, (t(%d ops) - t(1)) / %d, "
                             "median of %d passes (%s, L2 flushed)\"\n",
                        tag, where, PLAN_PROBE_REPEAT, PLAN_PROBE_REPEAT - 1, passes, graph ? "graph" : "eager");
    }
    util_buf_printf(out, "launch:\n  graph_node_us: %.4g\n", ls->gap_us);
}

/* class, points, rows and us range of each table, for the user (standard error). */
static void summary(const law_set *ls, bool graph)
{
    fprintf(stderr, "vpsim calibrate: launch.graph_node_us %.3f us (what one more of %d empty ops adds, %s)", ls->gap_us,
            PLAN_PROBE_EMPTY, graph ? "CUDA graph" : "eager: no graph on this device");
    if (ls->gap_raw_us < 0.0)
        fprintf(stderr, " (measured %.3f us, under the timer's noise: taken as 0)", ls->gap_raw_us);
    fprintf(stderr, "\n");
    fprintf(stderr, "  %-15s %6s %13s %21s\n", "class", "points", "rows", "us (gap taken out)");
    for (int c = 0; c < CFG_LAW_COUNT; c++) {
        if (!ls->n[c]) {
            fprintf(stderr, "  %-15s %6d   (not measured: the scenario has no such op)\n", cfg_law_names[c], 0);
            continue;
        }
        double lo = ls->pts[c][0].us, hi = lo, r_lo = ls->pts[c][0].rows, r_hi = r_lo;
        for (int i = 1; i < ls->n[c]; i++) {
            const law_point *pt = &ls->pts[c][i];
            lo = pt->us < lo ? pt->us : lo;
            hi = pt->us > hi ? pt->us : hi;
            r_lo = pt->rows < r_lo ? pt->rows : r_lo;
            r_hi = pt->rows > r_hi ? pt->rows : r_hi;
        }
        char rows[32], us[48];
        snprintf(rows, sizeof(rows), "%.0f-%.0f", r_lo, r_hi);
        snprintf(us, sizeof(us), "%.3g-%.4g", lo, hi);
        fprintf(stderr, "  %-15s %6d %13s %21s\n", cfg_law_names[c], ls->n[c], rows, us);
    }
}

/* The whole system file: the base with the device's own gpu section (cal_facts), the host's CPU vendor,
 * the law tables and the graph gap put in, each with its provenance; a self-test's every value tagged.
 * 0, or VP_EXIT_USAGE (cal_system_write said why). */
static int file_text(const meas_args *a, const cfg_scenario *sc, const exec_facts *f, const char *mismatch,
                     const law_set *ls, bool graph, util_buf *out)
{
    const char *base = a->base ? a->base : sc->system_path;
    const char *tag = f->self_test ? CAL_SELF_TEST_CPU : NULL;
    char where[320], prov[400], note[560], tag_src[96];
    where_text(where, sizeof(where), f);
    snprintf(prov, sizeof(prov), "vpsim calibrate --measure, %s", where);
    snprintf(tag_src, sizeof(tag_src), "%s%s", tag ? tag : "", tag ? "; " : "");
    util_buf fresh = {0}, header = {0};
    cal_note notes[8];
    int n = cal_facts_gpu_text(f, prov, &fresh, notes, 6);
    if (f->cpu_vendor[0]) {
        util_buf_printf(&fresh, "topology:\n  cpu_vendor: %s\n", f->cpu_vendor);
        snprintf(note, sizeof(note), "measured: %s: /proc/cpuinfo of the host the probe ran on", prov);
        notes[n].key = util_xstrdup("topology.cpu_vendor");
        notes[n++].comment = util_xstrdup(note);
    }
    fresh_text(&fresh, ls, where, a->passes, graph, tag_src);
    snprintf(note, sizeof(note), "measured: %s, (t(%d empty ops) - t(1)) / %d, median of %d %s passes", prov,
             PLAN_PROBE_EMPTY, PLAN_PROBE_EMPTY - 1, a->passes, graph ? "graph" : "eager");
    notes[n].key = util_xstrdup("launch.graph_node_us");
    notes[n++].comment = util_xstrdup(note);
    util_buf_printf(&header, "# System file written by `vpsim calibrate --measure`\n"
                             "#   base:   %s (its values with the comments beside them, and its header below)\n"
                             "#   device: %s (gpu section: the device's own%s%s)\n"
                             "#   tables: measured.compute from the compute probe (%s); scenario %s\n",
                    base, f->label, f->clocks[0] ? "; NVML: " : "", f->clocks, where, sc->name ? sc->name : "?");
    if (f->uuid[0])
        util_buf_printf(&header, "#   card:   %s (cudaDeviceProp.uuid, as nvidia-smi names it)\n", f->uuid);
    if (tag)
        util_buf_printf(&header, "#   %s: every value this command wrote is tagged so; CPU timings describe no GPU\n",
                        tag);
    cal_facts_header(mismatch, base, &header);
    const cal_system_spec spec = {.cmd = "calibrate", .base_opt = "--base", .what = "the calibrated system file",
                                  .base = base, .fresh_text = fresh.s, .header = header.s, .notes = notes,
                                  .n_notes = n, .self_test = tag};
    const int rc = cal_system_write(&spec, out);
    for (int i = 0; i < n; i++) {
        free((char *)notes[i].key);
        free((char *)notes[i].comment);
    }
    util_buf_free(&fresh);
    util_buf_free(&header);
    return rc;
}

/* Time one probe part's groups into `ls`. Returns an exit status. */
static int measure_part(const meas_args *a, dist_job *d, const exec_options *opt, const plan *p, int part,
                        law_set *ls, bool *graph)
{
    exec_result res;
    const int n_ops = p->phases[0].n_ops;
    int *first = util_xcalloc((size_t)n_ops, sizeof(int)), *count = util_xcalloc((size_t)n_ops, sizeof(int));
    double *group_us = util_xcalloc((size_t)n_ops, sizeof(double));
    const int n_groups = make_groups(p, first, count);
    const exec_groups g = {.first = first, .count = count, .n_groups = n_groups, .k_few = 1,
                           .passes = a->passes, .warmup = PROBE_WARMUP, .flush_op = n_ops - 1};
    exec_watch_start(d, "calibrate", EXEC_WATCH_DEFAULT_S);
    int rc = exec_time_groups(d, opt, p, &g, group_us, &res);
    exec_watch_stop();
    if (rc == VP_EXIT_USAGE && opt->device == CFG_DEVICE_CPU && !a->quick)
        fprintf(stderr, "vpsim calibrate: the CPU device runs the --quick grid (the full one is sized for a GPU)\n");
    if (rc == 0) { /* else 2: exec_time_groups said why */
        rc = collect(p, first, n_groups, group_us, part == 0, ls);
        *graph = res.graph;
    }
    free(first);
    free(count);
    free(group_us);
    exec_result_free(&res);
    return rc;
}

/* The most private weights and KV caches one probe part may take: --part-gib, else 80 % of a GPU's
 * memory (the rest holds the CUDA context, cuBLAS and attention workspaces, scratch and the L2 flush;
 * an assumed margin: the device refuses a part that does not fit, saying so), else (the CPU device, whose
 * --max-host-memory decides) one part. */
static double part_budget(const meas_args *a, const exec_facts *f)
{
    if (a->part_gib > 0)
        return a->part_gib * 1073741824.0;
    return f->memory_gib > 0 && !f->self_test ? 0.8 * f->memory_gib * 1073741824.0 : 0.0;
}

/* Cut the grid into parts that fit this device, time each in turn (each its own arena: plan_probe.h), then
 * write the system file. Returns an exit status. */
static int measure(const meas_args *a, dist_job *d, const cfg_scenario *sc, const plan *grid, util_buf *out)
{
    char why[256];
    exec_options opt = {
        .device = a->device >= 0 ? a->device : sc->run.device,
        .backend = CFG_BACKEND_NONE,
        .debug_corrupt_rank = -1,
        .seed = sc->run.seed,
        .progress = isatty(2),
        .max_host_bytes = (size_t)a->max_host_gib << 30,
    };
    int rc = cli_device_ready("calibrate", d, opt.device);
    if (rc)
        return rc;
    /* The file describes the device it measured: a base naming another is refused before minutes of
     * measuring, unless --base chose it. */
    exec_facts facts;
    char mismatch[400];
    exec_device_facts(d, opt.device, &facts);
    rc = cal_facts_check("calibrate", &facts, a->base ? a->base : sc->system_path, a->base != NULL, mismatch,
                         sizeof(mismatch));
    if (rc)
        return rc;
    const exec_device *dev = exec_find_device(opt.device, why, sizeof(why));
    /* The laws price ops inside the cycle as model mode replays it: a graph where the device has one. */
    opt.graph = dev && dev->has_graphs;
    law_set ls;
    memset(&ls, 0, sizeof(ls));
    bool graph = false;
    const double budget = part_budget(a, &facts);
    const int parts = plan_probe_parts(grid, budget, why, sizeof(why));
    if (parts < 0) {
        fprintf(stderr, "vpsim calibrate: %s\n", why);
        rc = VP_EXIT_USAGE;
    }
    for (int part = 0; part < parts && rc == 0; part++) {
        plan p;
        if (plan_probe_part(grid, budget, part, &p, why, sizeof(why))) {
            fprintf(stderr, "vpsim calibrate: %s\n", why);
            rc = VP_EXIT_USAGE;
            break;
        }
        char b[32];
        fprintf(stderr, "vpsim calibrate: probe part %d of %d: %d ops (%s grid), %s of private weights and KV "
                        "caches on the device\n",
                part + 1, parts, p.phases[0].n_ops, a->quick ? "quick" : "full",
                util_fmt_bytes(plan_probe_arena_bytes(&p), b, sizeof(b)));
        rc = measure_part(a, d, &opt, &p, part, &ls, &graph);
        plan_free(&p);
    }
    if (rc == 0)
        rc = file_text(a, sc, &facts, mismatch, &ls, graph, out);
    if (rc == 0)
        summary(&ls, graph);
    for (int c = 0; c < CFG_LAW_COUNT; c++)
        free(ls.pts[c]);
    return rc;
}

/* The probe measures one GPU: a job of more ranks is refused before the scenario is read. */
static int meas_load(cli_ctx *x)
{
    if (x->d.size > 1) {
        if (x->d.rank == 0)
            fprintf(stderr, "vpsim calibrate: the probe measures one GPU; run it without mpirun or with -np 1\n");
        return VP_EXIT_USAGE;
    }
    return cli_ctx_load(x);
}

static int meas_run(cli_ctx *x)
{
    const meas_args *a = x->args;
    const cfg_scenario *sc = &x->sc;
    /* A base that cannot be read, or a grid that cannot be built, is said before minutes of measuring. */
    cfg_error err;
    cfg_doc *base = cfg_doc_load_file(a->base ? a->base : sc->system_path, &err);
    char why[256];
    int rc = 0;
    if (!base) {
        fprintf(stderr, "vpsim calibrate: --base: %s\n", err.msg);
        rc = VP_EXIT_USAGE;
    }
    /* The grid, built once; its parts are cut once the device's memory is known (--part-gib is checked now). */
    plan grid;
    const bool have_grid = rc == 0 && plan_probe_build(sc, a->quick, &grid, why, sizeof(why)) == 0;
    if (rc == 0 && (!have_grid || plan_probe_parts(&grid, a->part_gib * 1073741824.0, why, sizeof(why)) < 0)) {
        fprintf(stderr, "vpsim calibrate: %s\n", why);
        rc = VP_EXIT_USAGE;
    }
    if (rc == 0) {
        rc = measure(a, &x->d, sc, &grid, &x->out);
        x->emit = true;
    }
    if (have_grid)
        plan_free(&grid);
    cfg_doc_free(base);
    return rc;
}

static const cli_cmd meas_cmd = {
    .spec = {.name = "calibrate", .synopsis = "vpsim calibrate --measure", .pos_usage = "[SCENARIO]",
             .pos = CLI_POS_SCENARIO, .common_offset = offsetof(meas_args, c), .opts = meas_opts,
             .n_opts = CLI_N(meas_opts),
             .about = "Measure this GPU's compute laws: replay a plan of microbenchmark ops (GEMMs of 1-256 MB weights at\n"
                      "1-128 rows and their transposes, batched and grouped GEMMs, MLA and GQA decode attention at KV\n"
                      "lengths 1k-512k, norms, element-wise ops, SiLU-and-multiply, embedding lookups; 16 empty ops first)\n"
                      "with the replay's kernels, and write a whole system file: the base with measured.compute.<class>\n"
                      "(rows, bytes, us). Each point is 4 like ops with private weights, captured as a CUDA graph of the\n"
                      "first op and one of all 4, each launched alone after an L2 flush: (t(4) - t(1)) / 3 is what one\n"
                      "more such op adds to a graph (median of N passes), less launch.graph_node_us, which is the same\n"
                      "for the empty ops; measured.use: true. Attention uses SCENARIO's shapes (MLA dims of the target, GQA\n"
                      "heads per rank of the draft at its TP), embedding its vocab shard. A second plan times the grouped\n"
                      "GEMMs at 2-8x wider experts (the grouped tables' width coordinate). One GPU: run it without mpirun.\n",
             .after = "A summary (class, points, rows, us range) goes to standard error.\n",
             .examples = "vpsim calibrate --measure configs/default.yaml --system configs/systems/h200-1x.yaml --out h200.yaml\n"
                         "vpsim model configs/default.yaml --system h200.yaml --backend none --explain\n"},
    .args_size = sizeof(meas_args),
    .flags = CLI_MPI | CLI_LOAD,
    .init = meas_init,
    .check = meas_check,
    .load = meas_load,
    .run = meas_run,
};

int cmd_calibrate_measure(int argc, char **argv) { return cli_command_main(&meas_cmd, argc, argv); }
