/* vpsim sweep: model the cartesian product of --vary settings into one CSV, resumably (the engine:
 * sim/sweep/sweep_run.c). */
#include "cli.h"
#include "../sweep/sweep.h"

#include "../util/util.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct sweep_args {
    cli_common c;
    const char *vary[SWEEP_MAX_VARY];
    int n_vary;
    cli_backends bes;
    long long limit; /* -1: none */
    int top, jobs;
    bool restart;
} sweep_args;

static void sweep_init(void *args)
{
    sweep_args *a = args;
    a->limit = -1;
    cli_backends_all(&a->bes);
}

static int set_vary(void *dest, const char *arg, const cli_opt *o, cli_parse *ps)
{
    (void)o;
    sweep_args *a = dest;
    if (a->n_vary == SWEEP_MAX_VARY)
        return util_usage_error(ps->cmd, "at most %d --vary options", SWEEP_MAX_VARY);
    a->vary[a->n_vary++] = arg;
    return VP_EXIT_OK;
}

static int set_limit(void *dest, const char *arg, const cli_opt *o, cli_parse *ps)
{
    (void)o;
    long long v;
    if (!cfg_parse_int(arg, &v) || v < 0)
        return util_usage_error(ps->cmd, "--limit '%s': expected a count >= 0", arg);
    *(long long *)dest = v;
    return VP_EXIT_OK;
}

static const cli_opt sweep_opts[] = {
    /* set_vary gathers into the whole struct (offset 0) */
    {.name = "vary", .kind = CLI_CUSTOM, .offset = 0, .set = set_vary, .meta = "KEY=V1,V2", .repeat = true,
     .required = "nothing to vary: give at least one --vary KEY=V1,V2,...",
     .help = "a key and its values; A..B is every integer from A to B; commas inside [...] stay in one value"},
    {.name = "out", .kind = CLI_OUT, .offset = offsetof(sweep_args, c.out_path), .meta = "FILE",
     .required = "--out FILE.csv is required (the sweep resumes from FILE.csv.partial)", .help = "the CSV to write"},
    {.name = "backend", .kind = CLI_CUSTOM, .offset = offsetof(sweep_args, bes), .set = cli_set_backends,
     .meta = "LIST", .help = "backends per scenario (default: all but 'model'):\n", .help_tail = cli_model_backend_names},
    CLI_OPT_SET(sweep_args, "fixed overrides for every scenario"),
    CLI_OPT_SYSTEM(sweep_args, CLI_HELP_SYSTEM),
    {.name = "limit", .kind = CLI_CUSTOM, .offset = offsetof(sweep_args, limit), .set = set_limit, .meta = "N",
     .help = "model at most N more scenarios, then stop (exit 1; run again to go on)"},
    {.name = "restart", .kind = CLI_FLAG, .offset = offsetof(sweep_args, restart),
     .help = "ignore FILE.partial and start over"},
    {.name = "top", .kind = CLI_INT, .offset = offsetof(sweep_args, top), .lo = 1, .hi = 100000, .dflt = "50",
     .meta = "N", .help = "summary: list every point up to N points, else the N best"},
    {.name = "jobs", .kind = CLI_INT, .offset = offsetof(sweep_args, jobs), .lo = 1, .hi = SWEEP_MAX_JOBS,
     .meta = "N", .help = "worker processes modelling the points (default: the cores this process may use); the CSV, "
                          "the summary and a resume are the same for every N"},
    {.name = "format", .kind = CLI_ENUM, .offset = offsetof(sweep_args, c.format), .choices = cli_format_names,
     .meta = "FMT", .hidden = true}, /* csv, what it writes anyway; else refused below */
    CLI_OPT_REFUSED("plan", "--plan is not supported: a sweep rebuilds the plan for each scenario"),
};

static int sweep_main(cli_ctx *x)
{
    const sweep_args *a = x->args;
    sweep sw;
    memset(&sw, 0, sizeof(sw));
    sw.scenario_path = cli_ctx_scenario_path(x);
    sw.system_path = a->c.system_path;
    sw.out_path = a->c.out_path;
    sw.sets = a->c.sets;
    sw.n_sets = a->c.n_sets;
    sw.limit = a->limit;
    sw.top = a->top;
    sw.jobs = a->jobs;
    sw.restart = a->restart;
    sw.n_bes = a->bes.n;
    memcpy(sw.bes, a->bes.v, sizeof(sw.bes));
    int rc = VP_EXIT_USAGE;
    if (a->c.format != CLI_FMT_TABLE && a->c.format != CLI_FMT_CSV) {
        util_usage_error("sweep", "--format: a sweep writes CSV only");
        goto out;
    }
    if (sweep_check_out(sw.out_path))
        goto out;
    for (int i = 0; i < a->n_vary; i++)
        if (sweep_add_vary(&sw, a->vary[i]))
            goto out;
    sweep_setup_tie(&sw);
    sw.total = 1;
    for (int k = 0; k < sw.n_vary; k++) {
        sw.total *= sw.v[k].n;
        if (sw.total > SWEEP_MAX_SCENARIOS) {
            util_usage_error("sweep", "more than %lld scenarios; split the sweep", SWEEP_MAX_SCENARIOS);
            goto out;
        }
    }
    if (sweep_check_values(&sw))
        goto out;
    /* The scenario and the files it names are read now: --out must be none of them (util_input_of). */
    if (cli_check_out("sweep", "--out", sw.out_path))
        goto out;
    sw.rows = util_xcalloc((size_t)sw.total, sizeof(char *));
    sw.partial_path = util_xasprintf("%s.partial", sw.out_path);
    sweep_make_header(&sw);
    util_buf csv = {0};
    rc = sweep_run(&sw, &csv);
    if (rc == VP_EXIT_OK)
        rc = cli_emit(x->c, csv.s, csv.len);
    if (rc == VP_EXIT_OK)
        sweep_done(&sw);
    util_buf_free(&csv);
out:
    sweep_free(&sw);
    return rc;
}

static const cli_cmd sweep_cmd = {
    .spec = {.name = "sweep", .synopsis = "vpsim sweep", .pos_usage = "[SCENARIO]", .pos = CLI_POS_SCENARIO,
             .common_offset = offsetof(sweep_args, c), .opts = sweep_opts, .n_opts = CLI_N(sweep_opts),
             .about = "Model every combination of the --vary values (their cartesian product, the last --vary changing\n"
                      "fastest) with `vpsim model`'s formulas and write one CSV row per scenario and backend: the varied\n"
                      "values, then the columns of `vpsim model --format csv`. Keys and values are checked like --set\n"
                      "before anything runs. Finished scenarios are kept in FILE.partial, so an interrupted sweep (Ctrl-C,\n"
                      "--limit) resumes when the same command runs again; FILE is written atomically at the end.\n"
                      "A progress bar is drawn on stderr when it is a terminal.\n"
                      "\n"
                      "Tied keys: with speculative.topk=1 SGLang verifies steps + 1 tokens, so varying speculative.steps\n"
                      "alone sets speculative.num_draft_tokens = steps + 1 at each point (and varying num_draft_tokens\n"
                      "alone sets steps = num_draft_tokens - 1); the tied key gets its own CSV column. Vary both to choose\n"
                      "them yourself: combinations SGLang would reject become rows with available=false, counted once per\n"
                      "reason in the summary. With speculation on, each point is also modelled with\n"
                      "speculative.algorithm=none (column nospec_tok_per_s): the break-even of speculation.\n"
                      "\n"
                      "When the sweep is done, a summary goes to stdout: per point the best backend, its tok/s and TPOT and\n"
                      "how much faster it is than the runner-up; per backend its best point and the gain over no\n"
                      "speculation; skipped combinations; warnings (figures that are not like for like) with the points\n"
                      "they hit, including a collective figure that is measured at some points and a formula at others.\n",
             .examples = "vpsim sweep configs/default.yaml --vary speculative.steps=1..5 --backend nccl,oneshot --out steps.csv\n"
                         "vpsim sweep configs/default.yaml --vary system.topology.p2p=direct,sysmem \\\n"
                         "    --vary speculative.acceptance=[0.8,0.6],[0.6,0.4] --backend nccl,oneshot --out p2p.csv\n"
                         "vpsim sweep configs/default.yaml --vary workload.context=1024,8192,65536 --vary workload.batch=1,4,16 \\\n"
                         "    --out context.csv\n"},
    .args_size = sizeof(sweep_args),
    .init = sweep_init,
    .run = sweep_main,
};

int cmd_sweep(int argc, char **argv) { return cli_command_main(&sweep_cmd, argc, argv); }
