/* vpsim plan: print the cycle schedule of a scenario (or of a saved plan). */
#include "cli.h"

#include "../plan/plan_json.h"
#include "../plan/plan_memory.h"
#include "../report/report.h"
#include "../util/util.h"

#include <getopt.h>
#include <stdlib.h>

static void plan_help(void)
{
    printf("usage: vpsim plan [SCENARIO] [--set KEY=VALUE]... [--system FILE] [--format table|json|csv]\n"
           "                  [--out FILE] [--plan FILE]\n"
           "\n"
           "Print the ops and collectives of one decode cycle on each tensor-parallel rank: each draft step,\n"
           "the verify pass and the draft-extend. SCENARIO defaults to configs/default.yaml.\n"
           "\n"
           "options:\n"
           "  --set KEY=VALUE   override a field (repeatable); model.*, draft.*, system.* reach into the\n"
           "                    files the scenario names, e.g. --set speculative.steps=3\n"
           "  --system FILE     use this system file instead of the scenario's\n"
           "  --format FMT      table (default: one row per phase), json (the full plan, loadable with\n"
           "                    --plan) or csv (one row per op)\n"
           "  --out FILE        write there (atomically) instead of stdout: a regular file or a new name in\n"
           "                    an existing directory; a symbolic link is followed and the file it leads\n"
           "                    to replaced; anything else is refused before any work\n"
           "  --plan FILE       show a saved plan instead of building one\n"
           "  -h, --help        this text\n"
           "\n"
           "examples:\n"
           "  vpsim plan configs/default.yaml\n"
           "  vpsim plan configs/default.yaml --set speculative.steps=3 --set speculative.num_draft_tokens=4\n"
           "  vpsim plan configs/default.yaml --set nccl.channels=1 --set nccl.buffsize=1M   # NCCL buffers in memory\n"
           "  vpsim plan configs/default.yaml --format json --out traces/default.plan.json\n"
           "  vpsim plan --plan traces/default.plan.json --format csv\n");
}

int cmd_plan(int argc, char **argv)
{
    static const struct option longopts[] = {CLI_COMMON_LONGOPTS, {0, 0, 0, 0}};
    cli_common c = {0};
    optind = 1;
    opterr = 0;
    int opt;
    /* The leading ':' makes a missing option value ':' rather than '?' (cli_take_common). */
    while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (opt == 'h') {
            plan_help();
            return VP_EXIT_OK;
        }
        int rc = cli_take_common("plan", &c, opt, optarg, argv);
        if (rc)
            return rc;
    }
    if (cli_positional(&c, argc, argv, optind, "plan"))
        return VP_EXIT_USAGE;

    cfg_scenario sc;
    bool have_sc = false;
    plan p;
    int rc = cli_load(&c, &sc, &have_sc, &p);
    if (rc)
        return rc;

    util_buf out = {0};
    if (c.format == CLI_FMT_JSON) {
        util_json j;
        util_json_init(&j, true);
        plan_json_write(&j, &p);
        out = j.out;
    } else if (c.format == CLI_FMT_CSV) {
        report_plan_csv(&out, &p);
    } else {
        report_plan_table(&out, &p, have_sc ? &sc : NULL);
        if (have_sc) {
            plan_memory mem;
            plan_memory_account(&sc, &p, sc.run.backend, &mem);
            report_plan_memory(&out, &mem);
        }
        if (have_sc && sc.speculative.algorithm != CFG_SPEC_NONE &&
            sc.speculative.n_acceptance < sc.speculative.steps)
            util_buf_printf(&out, "note: speculative.acceptance has %d rate(s) for %d steps; later positions reuse "
                                  "the last rate\n",
                            sc.speculative.n_acceptance, sc.speculative.steps);
    }
    rc = cli_emit(&c, out.s ? out.s : "", out.len);
    util_buf_free(&out);
    plan_free(&p);
    if (have_sc)
        cfg_scenario_free(&sc);
    return rc;
}
