/* vpsim compare: model named variants of one scenario and rank them by tok/s against a baseline (the
 * engine: sim/sweep/compare_run.c). */
#include "cli.h"

#include "../sweep/compare.h"

#include "../util/util.h"


typedef enum { CMP_FMT_TABLE, CMP_FMT_JSON, CMP_FMT_MD } cmp_format;
static const char *const cmp_format_names[] = {"table", "json", "md", NULL};

static void render(const compare_doc *d, int fmt, util_buf *out)
{
    if (fmt == CMP_FMT_JSON)
        compare_json(out, d);
    else if (fmt == CMP_FMT_MD)
        compare_markdown(out, d);
    else
        compare_table(out, d);
}

typedef struct compare_args {
    cli_common c;
    const char *variants;
    cli_backends bes; /* n 0: each variant's own run.backend */
    int format;       /* cmp_format */
} compare_args;

static const cli_opt compare_opts[] = {
    {.name = "variants", .kind = CLI_STRING, .offset = offsetof(compare_args, variants), .meta = "FILE",
     .help = "the variants", .required = "--variants FILE is required (a YAML list of variants; see --help)"},
    {.name = "backend", .kind = CLI_CUSTOM, .offset = offsetof(compare_args, bes), .set = cli_set_backends,
     .meta = "LIST", .help = "model every variant with each of these backends (default: each variant's run.backend):\n",
     .help_tail = cli_model_backend_names},
    CLI_OPT_SET(compare_args, "override a field for every variant"),
    CLI_OPT_SYSTEM(compare_args, CLI_HELP_SYSTEM),
    {.name = "format", .kind = CLI_ENUM, .offset = offsetof(compare_args, format), .choices = cmp_format_names,
     .dflt = "table", .meta = "FMT", .help = "table, json (schema " COMPARE_SCHEMA ") or md (Markdown)"},
    CLI_OPT_OUT(compare_args, "write there (atomically) instead of stdout"),
    CLI_OPT_REFUSED("plan", "--plan: each variant builds its own plan; give a SCENARIO"),
};

static int compare_main(cli_ctx *x)
{
    const compare_args *a = x->args;
    const cli_common *c = x->c;
    compare_file f;
    cfg_error err;
    if (compare_load(a->variants, &f, &err)) {
        fprintf(stderr, "vpsim compare: %s\n", err.msg);
        return VP_EXIT_USAGE;
    }
    /* The scenario and the variants are read now: --out must be neither (util_input_of). */
    if (c->out_path && cli_check_out("compare", "--out", c->out_path)) {
        compare_file_free(&f);
        return VP_EXIT_USAGE;
    }
    const compare_in in = {.scenario_path = c->scenario_path, .system_path = c->system_path, .sets = c->sets,
                           .n_sets = c->n_sets, .bes = a->bes.v, .n_bes = a->bes.n};
    compare_doc d = {.scenario_path = c->scenario_path, .variants_path = a->variants};
    compare_rank(&in, &x->sc, &f, &d);
    render(&d, a->format, &x->out);
    x->emit = true;
    compare_doc_free(&d);
    compare_file_free(&f);
    return VP_EXIT_OK;
}

static const cli_cmd compare_cmd = {
    .spec = {.name = "compare", .synopsis = "vpsim compare", .pos_usage = "[SCENARIO]", .pos = CLI_POS_SCENARIO,
             .common_offset = offsetof(compare_args, c), .opts = compare_opts, .n_opts = CLI_N(compare_opts),
             .about = "Model every variant of SCENARIO (default configs/default.yaml) listed in FILE and rank them best\n"
                      "first by tok/s: cycle, verify and verify-comm ms, tok/s, gain over the baseline variant, whether\n"
                      "it fits the GPU's memory, where the figures come from (probed laws, measured tables or formulas)\n"
                      "and what the serving engine would need to run it. FILE is a YAML list of variants:\n"
                      "\n"
                      "  - name: baseline NCCL\n"
                      "    baseline: true             # gains are against this one (at most one; default: the first)\n"
                      "  - name: oneshot\n"
                      "    set: [run.backend=oneshot]  # --set overrides, applied after the command line's --set\n"
                      "    note: custom one-shot allreduce\n"
                      "\n"
                      "A typo in a field or in a key of `set` is an error at FILE:line:col (exit 2); a variant whose\n"
                      "values do not load (out of range, TP not dividing the heads, ...) or that does not fit the GPU's\n"
                      "memory is ranked last with the reason, and the command still exits 0. When the scenario\n"
                      "speculates and no variant sets speculative.algorithm=none, a \"speculation off\" row (the baseline\n"
                      "with speculative.algorithm=none) is added, and the output says so.\n",
             .examples = "vpsim compare configs/default.yaml --variants configs/plans/verify-faster.yaml\n"
                         "vpsim compare configs/default.yaml --variants configs/plans/verify-faster.yaml --format md\n"},
    .args_size = sizeof(compare_args),
    /* The scenario itself must load: a broken base is no ranking at all, unlike one broken variant. */
    .flags = CLI_LOAD_SCENARIO,
    .run = compare_main,
};

int cmd_compare(int argc, char **argv) { return cli_command_main(&compare_cmd, argc, argv); }
