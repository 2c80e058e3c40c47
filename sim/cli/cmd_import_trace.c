/* vpsim import-trace: a serving engine's PyTorch profiler traces (one per rank) as measured input — the
 * server's cycle broken down as `vpsim run` breaks down a replay, the collectives split into wire time
 * and waiting for peers, and a system file of the box's measured figures for model mode. */
#include "cli.h"
#include "../import/import.h"

#include "../util/util.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define IMPORT_MAX_RANKS 64

typedef struct import_args {
    cli_common c;
    const char *kernels, *breakdown, *trace;
    const char *files[IMPORT_MAX_RANKS];
    int n_files;
} import_args;

static const char *const import_format_names[] = {"table", "json", NULL};

static const cli_opt import_opts[] = {
    {.name = "scenario", .kind = CLI_STRING, .offset = offsetof(import_args, c.scenario_path), .meta = "FILE",
     .dflt_text = "configs/default.yaml",
     .help = "the scenario the server runs: its plan names the phases and prices the system file"},
    CLI_OPT_SET(import_args, CLI_HELP_SET),
    CLI_OPT_SYSTEM(import_args, "the scenario's system file, and the base of the written system file"),
    {.name = "kernels", .kind = CLI_STRING, .offset = offsetof(import_args, kernels), .meta = "FILE",
     .help = "more kernel-name patterns (same layout), read before the shipped ones"},
    CLI_OPT_OUT(import_args, "write a whole system file: the base with the trace's measured figures (measured.ops, "
                             "measured.allreduce, launch gaps, host), each tagged `measured: server trace, FILE, DATE`; "
                             "`vpsim model --system FILE` then reproduces the trace's cycle (the last line says by how "
                             "much)"),
    {.name = "breakdown", .kind = CLI_OUT, .offset = offsetof(import_args, breakdown), .meta = "FILE",
     .help = "the results JSON (vpsim.results/1 with an \"import\" block)"},
    {.name = "trace", .kind = CLI_OUT, .offset = offsetof(import_args, trace), .meta = "FILE",
     .help = "one cycle of every rank as a Chrome trace, laid out as `vpsim run --trace`"},
    /* cli_format's indices: csv, the third, is not offered */
    {.name = "format", .kind = CLI_ENUM, .offset = offsetof(import_args, c.format), .choices = import_format_names,
     .dflt = "table", .meta = "FMT", .help = "table, or json (the results JSON) on standard output"},
    CLI_OPT_REFUSED("plan", "--plan: the import needs a scenario (--scenario FILE): its plan names the phases and its "
                            "system is the base of --out"),
};

/* The traces: every argument no option took, one per rank. */
static int import_check(cli_ctx *x)
{
    import_args *a = x->args;
    for (int i = x->optind; i < x->argc; i++) {
        if (a->n_files == IMPORT_MAX_RANKS)
            return util_usage_error("import-trace", "more than %d traces; one per rank", IMPORT_MAX_RANKS);
        a->files[a->n_files++] = x->argv[i];
    }
    if (a->n_files == 0)
        return util_usage_error("import-trace", "no trace given: vpsim import-trace TRACE... (one per rank)");
    return 0;
}

/* The system file, written to a scratch file for the model check and to --out when asked. */
static int system_file(import_ctx *x, import_fit *fit)
{
    util_buf text = {0};
    int rc = import_system_text(x, &text, fit);
    if (rc == 0) {
        char tmp[] = "/tmp/vpsim-import-XXXXXX";
        const int fd = mkstemp(tmp);
        if (fd < 0 || write(fd, text.s, text.len) != (ssize_t)text.len) {
            fprintf(stderr, "vpsim import-trace: cannot write a scratch file in /tmp\n");
            rc = VP_EXIT_FAIL;
        } else
            rc = import_round_trip(x, tmp, fit);
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        fit->checked = rc == 0;
    }
    if (rc == 0 && x->out_path)
        rc = cli_write_file("import-trace", "--out", x->out_path, &text);
    util_buf_free(&text);
    return rc;
}

static int import(const import_args *a, const cfg_scenario *sc, const plan *p)
{
    char *dir = cli_install_dir();
    char *shipped = util_xasprintf("%s/configs/trace-kernels.yaml", dir);
    free(dir);
    import_ctx x = {.scenario_path = a->c.scenario_path, .out_path = a->c.out_path, .sets = a->c.sets,
                    .n_sets = a->c.n_sets, .sc = sc, .plan = p};
    int rc = import_read(&x, shipped, a->kernels, a->files, a->n_files);
    free(shipped);
    import_fit fit;
    memset(&fit, 0, sizeof(fit));
    results_cycle res;
    memset(&res, 0, sizeof(res));
    if (rc == 0)
        rc = system_file(&x, &fit);
    if (rc == 0) {
        import_fill_results(&x, &res);
        util_buf out = {0};
        if (a->c.format == CLI_FMT_JSON)
            import_report_json(&out, &x, &res, &fit);
        else
            import_report_table(&out, &x, &res, &fit);
        rc = cli_write_stdout(out.s, out.len);
        util_buf_free(&out);
    }
    if (rc == 0 && a->breakdown) {
        util_buf out = {0};
        import_report_json(&out, &x, &res, &fit);
        rc = cli_write_file("import-trace", "--breakdown", a->breakdown, &out);
        util_buf_free(&out);
    }
    if (rc == 0 && a->trace) {
        util_buf out = {0};
        import_report_chrome(&out, &x);
        rc = cli_write_file("import-trace", "--trace", a->trace, &out);
        util_buf_free(&out);
    }
    results_cycle_free(&res);
    import_free(&x);
    return rc;
}

static int import_run(cli_ctx *x) { return import(x->args, &x->sc, &x->p); }

static const cli_cmd import_cmd = {
    .spec = {.name = "import-trace", .synopsis = "vpsim import-trace", .pos_usage = "TRACE...", .pos = CLI_POS_ANY,
             .common_offset = offsetof(import_args, c), .opts = import_opts, .n_opts = CLI_N(import_opts),
             .about = "Read one PyTorch profiler trace per rank (Chrome trace JSON, .gz accepted: what SGLang writes under\n"
                      "SGLANG_TORCH_PROFILER_DIR, vLLM under VLLM_TORCH_PROFILER_DIR), map every GPU kernel to a plan op\n"
                      "kind by the patterns of configs/trace-kernels.yaml, find the decode cycles (draft steps, verify,\n"
                      "draft-extend: by the engine's markers, else by the collective pattern), and print the server's\n"
                      "cycle in `vpsim run`'s table, then per phase the kernel time by kind and the idle, per collective\n"
                      "the call split into wire time and waiting for peers with the arrival skew across ranks, and the\n"
                      "kernels no pattern names. Files must hold the same steps of one job.\n",
             .after = "Bad input (not JSON, cut short, no kernel events, no complete cycle, files from different steps)\n"
                      "exits 2 naming the file and the byte offset or the rule.\n",
             .examples = "vpsim import-trace rank0.json.gz rank1.json.gz --scenario configs/default.yaml --out box.yaml\n"
                         "vpsim model configs/default.yaml --system box.yaml --backend nccl\n"},
    .args_size = sizeof(import_args),
    .flags = CLI_LOAD,
    .check = import_check,
    .run = import_run,
};

int cmd_import_trace(int argc, char **argv) { return cli_command_main(&import_cmd, argc, argv); }
