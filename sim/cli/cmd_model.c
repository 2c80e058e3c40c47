/* vpsim model: analytic cycle time and tok/s per collective backend on a described system. */
#include "cli.h"

#include "../config/cfg_accept.h"
#include "cli_model.h"

#include "../model/model.h"
#include "../report/report_results.h"
#include "../util/util.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void model_help(void)
{
    printf("usage: vpsim model [SCENARIO] [--backend LIST] [--format table|json|csv] [--explain] [--ops]\n"
           "                   [--set KEY=VALUE]... [--system FILE] [--plan FILE] [--out FILE]\n"
           "\n"
           "Model one decode cycle of SCENARIO (default configs/default.yaml) on its system file: every op's\n"
           "cost from a roofline with kernel floors, every collective from the backend's formula (or a measured\n"
           "table in the system file), the launch costs of CUDA graphs or eager launches. One row per backend:\n"
           "allreduce us, verify ms split into comm / GEMM / attention / other, draft ms, cycle ms, tokens per\n"
           "cycle and tok/s. Formulas: docs/model.md.\n"
           "\n"
           "options:\n"
           "  --backend LIST    comma-separated backends (default: all but 'model'):\n"
           "                    %s\n"
           "  --explain         print every term of the formulas for one allreduce and one layer\n"
           "  --ops             JSON: add each op's modelled duration (plan order), to compare with `vpsim run`\n"
           "  --bench N         time N evaluations of the cycle and print microseconds per cycle (make bench);\n"
           "                    N in [1, 1000000]\n"
           "  --set KEY=VALUE   override a field (repeatable), e.g. --set system.topology.p2p=sysmem\n"
           "  --system FILE     use this system file instead of the scenario's\n"
           "  --plan FILE       model a saved plan (the scenario still supplies system and acceptance)\n"
           "  --format FMT      table (default), json (schema vpsim.results/1) or csv\n"
           "  --out FILE        write there (atomically) instead of stdout: a regular file or a new name in\n"
           "                    an existing directory; a symbolic link is followed and the file it leads\n"
           "                    to replaced; anything else is refused before any work\n"
           "  -h, --help        this text\n"
           "\n"
           "examples:\n"
           "  vpsim model configs/default.yaml --backend nccl --explain\n"
           "  vpsim model configs/default.yaml --set system.measured.use=false\n"
           "  vpsim model configs/default.yaml --backend nccl --set nccl.channels=1 --set nccl.protocol=LL\n"
           "  vpsim model configs/default.yaml --system configs/systems/rtx-pro-6000-8x-pcie-switch.yaml\n"
           "  vpsim model configs/default.yaml --set system.topology.p2p=sysmem --format json --out model.json\n",
           cli_model_backend_names());
}

enum { OPT_BACKEND = CLI_OPT_FIRST_PRIVATE, OPT_EXPLAIN, OPT_OPS, OPT_BENCH };

/* --bench's bound: an iteration models the cycle once per backend (~0.2 ms for the default scenario
 * with every backend), so a million is minutes of work; more is a typo, not a measurement. */
#define MODEL_BENCH_MAX 1000000LL

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

/* The speed goal: one full cycle (prepare every op's cost, walk the plan for one backend) in <= 25 us on a
 * 2-core VM (issue #28; bench/NOTES.md has the A/B). */
static void model_bench(const cfg_scenario *sc, const plan *p, const cfg_backend *bes, int n_bes, long long iters)
{
    char why[256];
    results_cycle r;
    double t0 = now_us();
    for (long long i = 0; i < iters; i++) {
        model_ctx *ctx = model_prepare(sc, p, why, sizeof(why));
        model_eval(ctx, bes[0], false, &r);
        model_free(ctx);
    }
    double one = (now_us() - t0) / (double)iters;
    t0 = now_us();
    for (long long i = 0; i < iters; i++) {
        model_ctx *ctx = model_prepare(sc, p, why, sizeof(why));
        for (int b = 0; b < n_bes; b++)
            model_eval(ctx, bes[b], false, &r);
        model_free(ctx);
    }
    double all = (now_us() - t0) / (double)iters;
    int ops = 0;
    for (int i = 0; i < p->n_phases; i++)
        ops += p->phases[i].n_ops;
    printf("model bench: %d ops per cycle, %lld iterations\n"
           "  one cycle, backend %s: %.2f us (%.0f cycles/s)\n"
           "  one cycle, all %d backends: %.2f us\n",
           ops, iters, cfg_backend_names[bes[0]], one, 1e6 / one, n_bes, all);
}

/* Each backend's gain over NCCL (what the engines run by default) and whether its sign rests on an
 * unmeasured input of the box (model_rests.c): one line per backend, table output only. */
static void rests_text(util_buf *out, const cli_common *c, const cfg_scenario *sc, const plan *p, const cfg_backend *bes,
                       int n, const results_cycle *rs)
{
    const char *sets[CFG_MAX_SETS + 1];
    for (int i = 0; i < c->n_sets; i++)
        sets[i] = c->sets[i];
    const char *path = c->scenario_path ? c->scenario_path : sc->path;
    double base = NAN;
    for (int i = 0; i < n; i++)
        if (bes[i] == CFG_BACKEND_NCCL && rs[i].available)
            base = rs[i].tok_per_s;
    if (isnan(base))
        base = model_rest_tok_per_s(path, c->system_path, sets, c->n_sets, p, CFG_BACKEND_NCCL);
    if (!(base > 0))
        return;
    /* Each input once: NCCL with it, then every backend that has no line yet. */
    model_rest_alt alts[MODEL_MAX_RESTS];
    const int n_alts = model_rests_for(sc, alts, MODEL_MAX_RESTS);
    char lines[CFG_BACKEND_COUNT][640] = {{0}};
    double gain[CFG_BACKEND_COUNT];
    bool shown[CFG_BACKEND_COUNT] = {false};
    for (int i = 0; i < n; i++) {
        shown[i] = bes[i] != CFG_BACKEND_NCCL && rs[i].available && rs[i].tok_per_s > 0 && cfg_backend_reduces(bes[i]);
        gain[i] = shown[i] ? 100.0 * (rs[i].tok_per_s / base - 1.0) : 0.0;
    }
    for (int k = 0; k < n_alts; k++) {
        sets[c->n_sets] = alts[k].set;
        const double tb = model_rest_tok_per_s(path, c->system_path, sets, c->n_sets + 1, p, CFG_BACKEND_NCCL);
        for (int i = 0; i < n && tb > 0; i++) {
            if (!shown[i] || lines[i][0] || fabs(gain[i]) < 0.5)
                continue;
            const double tr = model_rest_tok_per_s(path, c->system_path, sets, c->n_sets + 1, p, bes[i]);
            const double g = tr > 0 ? 100.0 * (tr / tb - 1.0) : 0.0;
            if (tr > 0 && fabs(g) >= 0.5 && (g > 0) != (gain[i] > 0))
                model_rest_line(lines[i], sizeof(lines[i]), gain[i], alts[k].set, g, alts[k].rest);
        }
    }
    bool header = false;
    for (int i = 0; i < n; i++) {
        if (!shown[i])
            continue;
        if (!header)
            util_buf_printf(out, "\nagainst nccl, and what the sign rests on (each unmeasured input of the box at its "
                                 "other value; docs/model.md \"What an answer rests on\"):\n");
        header = true;
        if (lines[i][0])
            util_buf_printf(out, "  %-10s %s\n", cfg_backend_names[bes[i]], lines[i]);
        else
            util_buf_printf(out, "  %-10s %+.1f%% holds at every other value\n", cfg_backend_names[bes[i]], gain[i]);
    }
}

int cmd_model(int argc, char **argv)
{
    static const struct option longopts[] = {CLI_COMMON_LONGOPTS,
                                             {"backend", required_argument, NULL, OPT_BACKEND},
                                             {"explain", no_argument, NULL, OPT_EXPLAIN},
                                             {"ops", no_argument, NULL, OPT_OPS},
                                             {"bench", required_argument, NULL, OPT_BENCH},
                                             {0, 0, 0, 0}};
    cli_common c = {0};
    const char *backend_list = NULL;
    bool explain = false, ops = false;
    long long bench = 0;
    optind = 1;
    opterr = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (opt == 'h') {
            model_help();
            return VP_EXIT_OK;
        }
        if (opt == OPT_BACKEND) {
            backend_list = optarg;
            continue;
        }
        if (opt == OPT_BENCH) {
            if (cli_parse_ll("model", "--bench", optarg, 1, MODEL_BENCH_MAX, &bench))
                return VP_EXIT_USAGE;
            continue;
        }
        if (opt == OPT_EXPLAIN || opt == OPT_OPS) {
            *(opt == OPT_EXPLAIN ? &explain : &ops) = true;
            continue;
        }
        int rc = cli_take_common("model", &c, opt, optarg, argv);
        if (rc)
            return rc;
    }
    if (cli_positional(&c, argc, argv, optind, "model"))
        return VP_EXIT_USAGE;
    /* --bench times the model and prints its timing line; it writes no results, so an option that shapes
     * the results would be taken and ignored. */
    if (bench > 0 && (c.out_path || c.format != CLI_FMT_TABLE || explain || ops))
        return cli_usage_error("model", "%s does not apply with --bench (it prints one timing line on stdout)",
                               c.out_path ? "--out" : c.format != CLI_FMT_TABLE ? "--format" : explain ? "--explain"
                                                                                                     : "--ops");
    if (c.plan_path && !c.scenario_path)
        return cli_usage_error("model", "--plan needs a SCENARIO too (it supplies the system and the acceptance rates)");
    cfg_backend bes[CFG_BACKEND_COUNT];
    const int n_bes = cli_parse_backends(backend_list, bes, CFG_BACKEND_COUNT, "model");
    if (n_bes < 0)
        return VP_EXIT_USAGE;

    cfg_scenario sc;
    bool have_sc = false;
    plan p;
    int rc = cli_load(&c, &sc, &have_sc, &p);
    if (rc)
        return rc;
    char why[512];
    model_ctx *ctx = model_prepare(&sc, &p, why, sizeof(why));
    if (!ctx) {
        fprintf(stderr, "vpsim model: %s: %s\n", sc.system_path, why);
        plan_free(&p);
        cfg_scenario_free(&sc);
        return VP_EXIT_USAGE;
    }
    if (bench > 0) {
        model_bench(&sc, &p, bes, n_bes, bench);
        model_free(ctx);
        plan_free(&p);
        cfg_scenario_free(&sc);
        return VP_EXIT_OK;
    }
    results_cycle rs[CFG_BACKEND_COUNT];
    for (int i = 0; i < n_bes; i++)
        model_eval(ctx, bes[i], ops && c.format == CLI_FMT_JSON, &rs[i]);

    char tok[400];
    report_results_meta meta;
    cli_model_meta(&sc, &p, c.scenario_path, tok, sizeof(tok), &meta);
    util_buf out = {0};
    if (c.format == CLI_FMT_JSON) {
        util_json j;
        util_json_init(&j, true);
        report_results_json(&j, &meta, rs, n_bes, &p);
        out = j.out;
    } else if (c.format == CLI_FMT_CSV) {
        report_results_csv_header(&out, NULL, 0);
        for (int i = 0; i < n_bes; i++)
            report_results_csv_row(&out, NULL, 0, &rs[i]);
    } else {
        if (explain)
            model_explain(&out, ctx, bes, n_bes);
        report_results_table(&out, &meta, rs, n_bes);
        rests_text(&out, &c, &sc, &p, bes, n_bes, rs);
    }
    if (explain && c.format != CLI_FMT_TABLE) {
        /* Keep the machine-readable output clean: the explanation goes to the terminal. */
        util_buf ex = {0};
        model_explain(&ex, ctx, bes, n_bes);
        fputs(ex.s ? ex.s : "", stderr);
        util_buf_free(&ex);
    }
    rc = cli_emit(&c, out.s ? out.s : "", out.len);
    util_buf_free(&out);
    for (int i = 0; i < n_bes; i++)
        results_cycle_free(&rs[i]);
    model_free(ctx);
    plan_free(&p);
    cfg_scenario_free(&sc);
    return rc;
}
