/* vpsim plan: print the cycle schedule of a scenario (or of a saved plan). */
#include "cli.h"

#include "../plan/plan_json.h"
#include "../plan/plan_memory.h"
#include "../report/report.h"
#include "../util/util.h"

typedef struct plan_args {
    cli_common c;
} plan_args;

static const char *const plan_format_help[] = {"one row per phase", "the full plan, loadable with --plan",
                                               "one row per op", NULL};

static const cli_opt plan_opts[] = {
    CLI_OPT_SET(plan_args, CLI_HELP_SET),
    CLI_OPT_SYSTEM(plan_args, CLI_HELP_SYSTEM),
    {.name = "format", .kind = CLI_ENUM, .offset = offsetof(plan_args, c.format), .choices = cli_format_names,
     .choice_help = plan_format_help, .dflt = "table", .meta = "FMT", .help = "what to print"},
    CLI_OPT_OUT(plan_args, CLI_HELP_OUT),
    CLI_OPT_PLAN(plan_args, "show a saved plan instead of building one"),
};

static int plan_run(cli_ctx *x)
{
    const plan *p = &x->p;
    const cfg_scenario *sc = x->have_sc ? &x->sc : NULL;
    util_buf *out = &x->out;
    if (x->c->format == CLI_FMT_JSON) {
        util_json j;
        util_json_init(&j, true);
        plan_json_write(&j, p);
        *out = j.out;
    } else if (x->c->format == CLI_FMT_CSV) {
        report_plan_csv(out, p);
    } else {
        report_plan_table(out, p, sc);
        if (sc) {
            plan_memory mem;
            plan_memory_account(sc, p, sc->run.backend, &mem);
            report_plan_memory(out, &mem);
        }
        if (sc && sc->speculative.algorithm != CFG_SPEC_NONE && sc->speculative.n_acceptance < sc->speculative.steps)
            util_buf_printf(out, "note: speculative.acceptance has %d rate(s) for %d steps; later positions reuse "
                                 "the last rate\n",
                            sc->speculative.n_acceptance, sc->speculative.steps);
    }
    x->emit = true;
    return VP_EXIT_OK;
}

static const cli_cmd plan_cmd = {
    .spec = {.name = "plan", .synopsis = "vpsim plan", .pos_usage = "[SCENARIO]", .pos = CLI_POS_SCENARIO,
             .common_offset = offsetof(plan_args, c), .opts = plan_opts, .n_opts = CLI_N(plan_opts),
             .about = "Print the ops and collectives of one decode cycle on each tensor-parallel rank: each draft step,\n"
                      "the verify pass and the draft-extend. SCENARIO defaults to configs/default.yaml.\n",
             .examples = "vpsim plan configs/default.yaml\n"
                         "vpsim plan configs/default.yaml --set speculative.steps=3 --set speculative.num_draft_tokens=4\n"
                         "vpsim plan configs/default.yaml --set nccl.channels=1 --set nccl.buffsize=1M   # NCCL buffers in memory\n"
                         "vpsim plan configs/default.yaml --format json --out traces/default.plan.json\n"
                         "vpsim plan --plan traces/default.plan.json --format csv\n"},
    .args_size = sizeof(plan_args),
    .flags = CLI_LOAD,
    .run = plan_run,
};

int cmd_plan(int argc, char **argv) { return cli_command_main(&plan_cmd, argc, argv); }
