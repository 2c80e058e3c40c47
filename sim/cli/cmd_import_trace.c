/* vpsim import-trace: a serving engine's PyTorch profiler traces (one per rank) as measured input — the
 * server's cycle broken down as `vpsim run` breaks down a replay, the collectives split into wire time
 * and waiting for peers, and a system file of the box's measured figures for model mode. */
#include "cli.h"
#include "import_trace.h"

#include "../util/util.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
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
            return cli_usage_error("import-trace", "more than %d traces; one per rank", IMPORT_MAX_RANKS);
        a->files[a->n_files++] = x->argv[i];
    }
    if (a->n_files == 0)
        return cli_usage_error("import-trace", "no trace given: vpsim import-trace TRACE... (one per rank)");
    return 0;
}

/* "measured: server trace, FILES, DATE": the date the profile was taken (on its base time's clock), else the
 * file's. */
static void make_tag(import_ctx *x, char *files, size_t len)
{
    const trace_rank *r0 = &x->ranks[0];
    time_t t = 0;
    struct stat st;
    if (r0->have_base) {
        /* kineto's ts count from its base time, which is not the profile's start (a real trace's base
         * lay two months before its first kernel): the date is the base plus the first kernel's ts */
        const trace_kernel *k0 = r0->kernels.data;
        t = (time_t)(r0->base_ns / 1000000000LL + (long long)(k0[0].ts / 1e6));
    }
    else if (stat(r0->path, &st) == 0)
        t = st.st_mtime;
    char date[32];
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(date, sizeof(date), "%Y-%m-%d", &tm);
    if (x->n_ranks <= 2)
        snprintf(files, len, "%s%s%s", x->ranks[0].path, x->n_ranks > 1 ? ", " : "",
                 x->n_ranks > 1 ? x->ranks[1].path : "");
    else
        snprintf(files, len, "%s ... %s (%d files)", x->ranks[0].path, x->ranks[x->n_ranks - 1].path, x->n_ranks);
    snprintf(x->tag, sizeof(x->tag), "measured: server trace, %s, %s", files, date);
}

static int cmp_rank(const void *a, const void *b)
{
    const trace_rank *x = a, *y = b;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* Ranks in the order their files name (distributedInfo.rank) when every file names a distinct one. */
static int order_ranks(trace_rank *R, int n)
{
    for (int i = 0; i < n; i++) {
        if (R[i].rank < 0)
            return 0;
        for (int j = 0; j < i; j++)
            if (R[j].rank == R[i].rank) {
                fprintf(stderr, "vpsim import-trace: %s and %s are both rank %d (distributedInfo.rank): one trace per "
                                "rank\n",
                        R[j].path, R[i].path, R[i].rank);
                return VP_EXIT_USAGE;
            }
    }
    qsort(R, (size_t)n, sizeof(trace_rank), cmp_rank);
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
    if (rc == 0 && x->c->out_path)
        rc = cli_write_file("import-trace", "--out", x->c->out_path, &text);
    util_buf_free(&text);
    return rc;
}

static int import(const import_args *a, const cfg_scenario *sc, const plan *p)
{
    char *dir = cli_install_dir();
    char *shipped = util_xasprintf("%s/configs/trace-kernels.yaml", dir);
    free(dir);
    trace_error err;
    trace_map *map = trace_map_load(shipped, a->kernels, &err);
    free(shipped);
    if (!map) {
        fprintf(stderr, "vpsim import-trace: %s\n", err.msg);
        return VP_EXIT_USAGE;
    }
    trace_rank *R = util_xcalloc((size_t)a->n_files, sizeof(trace_rank));
    int rc = 0, n = 0;
    for (; n < a->n_files && rc == 0; n++) {
        if (trace_read(a->files[n], trace_map_keep, map, &R[n], &err) == 0) {
            trace_map_apply(map, &R[n]);
            if (trace_find_cycles(map, &R[n], &err) == 0)
                continue;
        }
        fprintf(stderr, "vpsim import-trace: %s\n", err.msg);
        rc = VP_EXIT_USAGE;
    }
    if (rc == 0)
        rc = order_ranks(R, n);
    trace_summary sum;
    memset(&sum, 0, sizeof(sum));
    if (rc == 0 && trace_summarize(R, n, &sum, &err)) {
        fprintf(stderr, "vpsim import-trace: %s\n", err.msg);
        rc = VP_EXIT_USAGE;
    }
    import_ctx x = {.c = &a->c, .sc = sc, .plan = p, .ranks = R, .n_ranks = n, .sum = &sum, .map = map};
    char files[400];
    import_fit fit;
    memset(&fit, 0, sizeof(fit));
    results_cycle res;
    memset(&res, 0, sizeof(res));
    if (rc == 0) {
        make_tag(&x, files, sizeof(files));
        x.files = files;
        const trace_kernel *k = R[0].kernels.data;
        for (size_t i = 0; i < R[0].kernels.count && !x.custom_ar; i++)
            if (k[i].kind == PLAN_OP_ALLREDUCE) {
                const char *lib = "";
                trace_map_kind(map, trace_name(&R[0], k[i].name), &lib);
                x.custom_ar = strstr(lib, "custom") != NULL;
                break;
            }
        rc = system_file(&x, &fit);
    }
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
    trace_summary_free(&sum);
    for (int i = 0; i < a->n_files; i++)
        if (R[i].path)
            trace_rank_free(&R[i]);
    free(R);
    trace_map_free(map);
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
