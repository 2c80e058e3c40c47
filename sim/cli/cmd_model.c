/* vpsim model: analytic cycle time and tok/s per collective backend on a described system. */
#include "cli.h"

#include "../config/cfg_accept.h"

#include "../model/model.h"
#include "../report/report_meta.h"
#include "../report/report_results.h"
#include "../util/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
 * 2-core VM (bench/NOTES.md has the A/B). */
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

typedef struct model_args {
    cli_common c;
    cli_backends bes;
    bool explain, ops;
    long long bench;
} model_args;

static void model_init(void *args) { cli_backends_all(&((model_args *)args)->bes); }

static const cli_opt model_opts[] = {
    {.name = "backend", .kind = CLI_CUSTOM, .offset = offsetof(model_args, bes), .set = cli_set_backends,
     .meta = "LIST", .help = "comma-separated backends (default: all but 'model'):\n", .help_tail = cli_model_backend_names},
    {.name = "explain", .kind = CLI_FLAG, .offset = offsetof(model_args, explain),
     .help = "print every term of the formulas for one allreduce and one layer"},
    {.name = "ops", .kind = CLI_FLAG, .offset = offsetof(model_args, ops),
     .help = "JSON: add each op's modelled duration (plan order), to compare with `vpsim run`"},
    {.name = "bench", .kind = CLI_LL, .offset = offsetof(model_args, bench), .lo = 1, .hi = MODEL_BENCH_MAX,
     .meta = "N", .help = "time N evaluations of the cycle and print microseconds per cycle (make bench)"},
    CLI_OPT_SET(model_args, "override a field, e.g. --set system.topology.p2p=sysmem"),
    CLI_OPT_SYSTEM(model_args, CLI_HELP_SYSTEM),
    CLI_OPT_PLAN(model_args, "model a saved plan (the scenario still supplies system and acceptance)"),
    CLI_OPT_FORMAT(model_args, "table, json (schema vpsim.results/1) or csv"),
    CLI_OPT_OUT(model_args, CLI_HELP_OUT),
};

static int model_check(cli_ctx *x)
{
    const model_args *a = x->args;
    const cli_common *c = &a->c;
    /* --bench times the model and prints its timing line; it writes no results, so an option that shapes
     * the results would be taken and ignored. */
    if (a->bench > 0 && (c->out_path || c->format != CLI_FMT_TABLE || a->explain || a->ops))
        return util_usage_error("model", "%s does not apply with --bench (it prints one timing line on stdout)",
                               c->out_path                   ? "--out"
                               : c->format != CLI_FMT_TABLE ? "--format"
                               : a->explain                  ? "--explain"
                                                             : "--ops");
    if (c->plan_path && !c->scenario_path)
        return util_usage_error("model", "--plan needs a SCENARIO too (it supplies the system and the acceptance rates)");
    return VP_EXIT_OK;
}

static int model_run(cli_ctx *x)
{
    const model_args *a = x->args;
    const cli_common *c = &a->c;
    const cfg_backend *bes = a->bes.v;
    const int n_bes = a->bes.n;
    char why[512];
    model_ctx *ctx = model_prepare(&x->sc, &x->p, why, sizeof(why));
    if (!ctx) {
        fprintf(stderr, "vpsim model: %s: %s\n", x->sc.system_path, why);
        return VP_EXIT_USAGE;
    }
    if (a->bench > 0) {
        model_bench(&x->sc, &x->p, bes, n_bes, a->bench);
        model_free(ctx);
        return VP_EXIT_OK;
    }
    results_cycle rs[CFG_BACKEND_COUNT];
    for (int i = 0; i < n_bes; i++)
        model_eval(ctx, bes[i], a->ops && c->format == CLI_FMT_JSON, &rs[i]);

    char tok[400];
    report_results_meta meta;
    report_meta_modelled(&x->sc, &x->p, c->scenario_path, tok, sizeof(tok), &meta);
    util_buf *out = &x->out;
    if (c->format == CLI_FMT_JSON) {
        util_json j;
        util_json_init(&j, true);
        report_results_json(&j, &meta, rs, n_bes, &x->p);
        *out = j.out;
    } else if (c->format == CLI_FMT_CSV) {
        report_results_csv_header(out, NULL, 0);
        for (int i = 0; i < n_bes; i++)
            report_results_csv_row(out, NULL, 0, &rs[i]);
    } else {
        if (a->explain)
            model_explain(out, ctx, bes, n_bes);
        report_results_table(out, &meta, rs, n_bes);
        rests_text(out, c, &x->sc, &x->p, bes, n_bes, rs);
    }
    if (a->explain && c->format != CLI_FMT_TABLE) {
        /* Keep the machine-readable output clean: the explanation goes to the terminal. */
        util_buf ex = {0};
        model_explain(&ex, ctx, bes, n_bes);
        fputs(ex.s ? ex.s : "", stderr);
        util_buf_free(&ex);
    }
    for (int i = 0; i < n_bes; i++)
        results_cycle_free(&rs[i]);
    model_free(ctx);
    x->emit = true;
    return VP_EXIT_OK;
}

static const cli_cmd model_cmd = {
    .spec = {.name = "model", .synopsis = "vpsim model", .pos_usage = "[SCENARIO]", .pos = CLI_POS_SCENARIO,
             .common_offset = offsetof(model_args, c), .opts = model_opts, .n_opts = CLI_N(model_opts),
             .about = "Model one decode cycle of SCENARIO (default configs/default.yaml) on its system file: every op's\n"
                      "cost from a roofline with kernel floors, every collective from the backend's formula (or a measured\n"
                      "table in the system file), the launch costs of CUDA graphs or eager launches. One row per backend:\n"
                      "allreduce us, verify ms split into comm / GEMM / attention / other, draft ms, cycle ms, tokens per\n"
                      "cycle and tok/s. Formulas: docs/model.md.\n",
             .examples = "vpsim model configs/default.yaml --backend nccl --explain\n"
                         "vpsim model configs/default.yaml --set system.measured.use=false\n"
                         "vpsim model configs/default.yaml --backend nccl --set nccl.channels=1 --set nccl.protocol=LL\n"
                         "vpsim model configs/default.yaml --system configs/systems/rtx-pro-6000-8x-pcie-switch.yaml\n"
                         "vpsim model configs/default.yaml --set system.topology.p2p=sysmem --format json --out model.json\n"},
    .args_size = sizeof(model_args),
    .flags = CLI_LOAD,
    .init = model_init,
    .check = model_check,
    .run = model_run,
};

int cmd_model(int argc, char **argv) { return cli_command_main(&model_cmd, argc, argv); }
