/* vpsim run: replay one decode cycle per rank under MPI and report the measured breakdown. */
#include "cli.h"

#include "../config/cfg_policy.h"
#include "../exec/exec.h"
#include "../exec/exec_watch.h"
#include "../model/model_replay.h"
#include "../report/report.h"
#include "../report/report_meta.h"
#include "../report/report_results.h"
#include "../report/report_run.h"
#include "../util/util.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct run_args {
    cli_common c;
    int backend, device, iters, warmup, instrumented, model_backend, corrupt_rank;
    int graph;   /* -1: scenario default */
    int p2p;     /* comm_p2p (--p2p) */
    int attn_kernel; /* --attn-kernel: cfg_attn_kernel_names index */
    int timeout; /* -1: scenario default */
    exec_fault fault;
    bool check, class_cost;
    bool model_backend_given; /* --model-backend was on the command line */
    int max_host_gib;
    const char *target_system;
    const char *trace;
    const char *policy; /* --allreduce-policy */
} run_args;

/* The same file under two spellings (out.json, ./out.json, a link to it): same directory, same name. */
static bool run_same_target(const char *a, const char *b)
{
    char why[512];
    char *ta = util_out_target(a, why, sizeof(why)), *tb = util_out_target(b, why, sizeof(why));
    bool same = false;
    if (ta && tb) {
        char *da = util_dirname(ta), *db = util_dirname(tb);
        const char *na = strrchr(ta, '/') ? strrchr(ta, '/') + 1 : ta, *nb = strrchr(tb, '/') ? strrchr(tb, '/') + 1 : tb;
        struct stat sa, sb;
        same = !strcmp(na, nb) && stat(da, &sa) == 0 && stat(db, &sb) == 0 && sa.st_dev == sb.st_dev &&
               sa.st_ino == sb.st_ino;
        free(da);
        free(db);
    }
    free(ta);
    free(tb);
    return same;
}

static void run_init(void *args)
{
    run_args *a = args;
    a->backend = a->device = a->iters = a->warmup = a->graph = a->timeout = -1;
    a->model_backend = -1; /* nccl, unless given */
    a->corrupt_rank = -1;
}

static int set_policy(void *dest, const char *arg, const cli_opt *o, cli_parse *ps)
{
    (void)o;
    cfg_policy pol;
    char why[400];
    if (cfg_policy_parse(arg, &pol, why, sizeof(why)))
        return util_usage_error(ps->cmd, "--allreduce-policy '%s': %s", arg, why);
    *(const char **)dest = arg;
    return VP_EXIT_OK;
}

static int set_fault(void *dest, const char *arg, const cli_opt *o, cli_parse *ps)
{
    (void)o;
    return cli_parse_fault(ps->cmd, arg, dest);
}

#define RUN_OPT(nm, k, field) .name = (nm), .kind = (k), .offset = offsetof(run_args, field)
static const cli_opt run_opts[] = {
    {RUN_OPT("backend", CLI_ENUM, backend), .choices = cfg_backend_names, .choice_help = cfg_backend_help, .meta = "B",
     .dflt_text = "the scenario's run.backend", .help = "collective backend"},
    {RUN_OPT("device", CLI_ENUM, device), .choices = cfg_device_names, .choice_help = cfg_device_help, .meta = "D",
     .dflt_text = "the scenario's run.device", .help = "where the ops run"},
    {RUN_OPT("p2p", CLI_ENUM, p2p), .choices = comm_p2p_names, .meta = "MODE",
     .help = "how oneshot, twoshot and push reach their peers: direct (default; GPU memory mapped with CUDA IPC) or "
             "sysmem (every buffer a peer touches in pinned host memory mapped into every rank; needs no P2P); sysmem "
             "when no custom backend is in use, or on cpu, is an error (exit 2)"},
    {RUN_OPT("attn-kernel", CLI_ENUM, attn_kernel), .choices = cfg_attn_kernel_names, .meta = "K",
     .dflt_text = "auto",
     .help = "decode attention's split kernel on cuda (for an A/B of the kernels): auto (the wgmma MLA kernel where it "
             "applies -- sm_90a, qk_dim 576, v_dim 512 -- else the mma.sync MLA kernel where that fits, else the general "
             "one), general, mla (mma.sync) or wgmma, each where it applies and the next one down elsewhere; on cpu, "
             "anything but auto is an error (exit 2)"},
    {RUN_OPT("eager", CLI_SETINT, graph), .ival = 0, .help = "time eager launches instead of one CUDA graph per cycle"},
    {RUN_OPT("graph", CLI_SETINT, graph), .ival = 1, .help = "time the cycle as a CUDA graph (the default on cuda)"},
    {RUN_OPT("check", CLI_FLAG, check),
     .help = "poison every collective's output, compare with a reference; exit 1 on a mismatch, naming the op, rank "
             "and first bad index"},
    {RUN_OPT("iters", CLI_INT, iters), .lo = 1, .hi = 1000000, .meta = "N",
     .dflt_text = "the scenario's run.iters", .help = "timed cycles (median, p10, p90 reported)"},
    {RUN_OPT("warmup", CLI_INT, warmup), .lo = 0, .hi = 1000000, .meta = "N",
     .dflt_text = "the scenario's run.warmup", .help = "untimed cycles first"},
    {RUN_OPT("instrumented", CLI_INT, instrumented), .lo = 1, .hi = 1000, .dflt = "3", .meta = "N",
     .help = "eager passes with events around every op, for the breakdown"},
    {RUN_OPT("class-cost", CLI_FLAG, class_cost),
     .help = "also time the cycle without each compute class (gemm, attention, other): what the class costs in "
             "context, with no per-op timer attributed"},
    {RUN_OPT("target-system", CLI_STRING, target_system), .meta = "FILE",
     .help = "system whose collectives backend `model` replays"},
    {RUN_OPT("model-backend", CLI_ENUM, model_backend), .choices = cfg_backend_names, .meta = "B",
     .dflt_text = "nccl", .help = "the backend whose modelled collectives `model` replays"},
    {RUN_OPT("allreduce-policy", CLI_CUSTOM, policy), .set = set_policy, .meta = "P",
     .help = "per-size backends, first match wins, e.g. 'oneshot<=256K,twoshot<=8M,nccl' (default: the scenario's "
             "run.allreduce_policy, else --backend for all)"},
    {RUN_OPT("trace", CLI_OUT, trace), .meta = "FILE",
     .help = "Chrome trace (chrome://tracing, Perfetto): a track per rank and stream"},
    CLI_OPT_OUT(run_args, "results JSON (vpsim.results/1 with the environment), written atomically; --out and --trace "
                          "take a regular file or a new name in an existing directory (a symbolic link: the file it "
                          "leads to is replaced)"),
    CLI_OPT_FORMAT(run_args, "table, or json: the results JSON (what --out holds) on stdout instead of the table"),
    {RUN_OPT("max-host-memory", CLI_INT, max_host_gib), .lo = 1, .hi = 1 << 20, .dflt = CLI_STR(EXEC_MAX_HOST_GIB_DEFAULT),
     .meta = "GIB", .help = "CPU device: refuse plans needing more per rank"},
    {RUN_OPT("timeout", CLI_INT, timeout), .lo = 0, .hi = 86400, .meta = "S",
     .help = "watchdog: when a rank makes no progress for S seconds, every rank exits 1 naming its backend, phase, "
             "op and last completed step; 0 = none", .dflt_text = "the scenario's run.timeout, 60"},
    {RUN_OPT("debug-corrupt-rank", CLI_INT, corrupt_rank), .lo = 0, .hi = 1 << 20, .meta = "R",
     .help = "with --check: rank R corrupts each result (to test the check itself)"},
    {RUN_OPT("inject-fault", CLI_CUSTOM, fault), .set = set_fault, .meta = "MODE:RANK:CALL[:SECONDS]",
     .help = "testing: rank RANK kills itself (kill), exits (exit) or sleeps SECONDS (stall, default 10) before its "
             "collective call number CALL"},
    CLI_OPT_SET(run_args, CLI_HELP_SET),
    CLI_OPT_SYSTEM(run_args, CLI_HELP_SYSTEM),
    CLI_OPT_PLAN(run_args, "replay a saved plan instead of building one"),
};
#undef RUN_OPT

static int run_check(cli_ctx *x)
{
    run_args *a = x->args;
    a->model_backend_given = a->model_backend >= 0;
    if (!a->model_backend_given)
        a->model_backend = CFG_BACKEND_NCCL;
    /* A run writes its table, or with --format json the results JSON that --out holds; it has no CSV
     * form, and taking --format csv while writing something else would pass one format for another. */
    if (a->c.format == CLI_FMT_CSV)
        return util_usage_error("run", "--format csv: a run writes a table or, with --format json, the results "
                                      "JSON (also what --out holds); for a CSV use `vpsim model --format csv`");
    if (a->trace && a->c.out_path && run_same_target(a->trace, a->c.out_path))
        return util_usage_error("run", "--trace '%s' and --out '%s' are the same file; the trace would replace the "
                                      "results",
                               a->trace, a->c.out_path);
    return VP_EXIT_OK;
}

/* Load the scenario (or plan) for this job: a job of N > 1 ranks replays the scenario at TP = N
 * (-np 1 replays one rank's compute). Then refuse test hooks that name no rank of the job. */
static int run_load(cli_ctx *x)
{
    run_args *a = x->args;
    const dist_job *d = &x->d;
    const cfg_scenario *sc = &x->sc;
    int rc = cli_ctx_load(x);
    const bool *have_sc = &x->have_sc;
    if (rc == 0 && *have_sc && d->size > 1 && sc->parallel.tp != d->size && !a->c.plan_path) {
        if (a->c.n_sets >= CFG_MAX_SETS) {
            rc = VP_EXIT_USAGE;
        } else {
            static char tp_set[32];
            const int sc_tp_before = sc->parallel.tp;
            snprintf(tp_set, sizeof(tp_set), "parallel.tp=%d", d->size);
            if (d->rank == 0)
                fprintf(stderr, "vpsim run: note: the job has %d ranks: replaying with %s (the scenario says %d)\n",
                        d->size, tp_set, sc->parallel.tp);
            a->c.sets[a->c.n_sets++] = tp_set;
            char *path = util_xstrdup(sc->path);
            cli_ctx_unload(x);
            /* The TP comes from mpirun -np, not from the user's --set: a scenario that cannot take it is
             * said in those words (cli_load would cite a --set nobody gave). */
            const bool quiet = a->c.quiet;
            a->c.quiet = true;
            rc = cli_ctx_load(x);
            a->c.quiet = quiet;
            if (rc && d->rank == 0) {
                cfg_scenario tmp;
                cfg_error err;
                const char *why = "the scenario does not load at that TP";
                if (cfg_scenario_load(path, a->c.sets, a->c.n_sets, a->c.system_path, &tmp, &err) == 0)
                    cfg_scenario_free(&tmp);
                else
                    why = strstr(err.msg, "': ") && !strncmp(err.msg, "--set '", 7) ? strstr(err.msg, "': ") + 3
                                                                                    : err.msg;
                fprintf(stderr, "vpsim run: the job has %d ranks, and a job of N > 1 ranks replays the scenario at "
                                "TP = N (mpirun -np, not a --set), which %s cannot take: %s; run with -np %d (its "
                                "parallel.tp) or a rank count it allows\n",
                        d->size, path, why, sc_tp_before);
            }
            free(path);
        }
    }
    if (rc)
        return rc;
    rc = cli_check_fault_rank("run", &a->fault, d);
    if (rc == 0 && a->corrupt_rank >= 0 && (!a->check || a->corrupt_rank >= d->size)) {
        if (d->rank == 0)
            util_usage_error("run", "--debug-corrupt-rank %d: %s", a->corrupt_rank,
                            !a->check ? "needs --check (it corrupts checked results)" : "no such rank in this job");
        rc = VP_EXIT_USAGE;
    }
    return rc;
}

/* The command line over the scenario's run: section over the built-in defaults. */
static exec_options run_options(const run_args *a, const dist_job *d, const cfg_scenario *sc)
{
    return (exec_options){
        .device = a->device >= 0 ? a->device : (sc ? sc->run.device : CFG_DEVICE_CUDA),
        .backend = a->backend >= 0 ? a->backend : (sc ? sc->run.backend : CFG_BACKEND_NCCL),
        .graph = a->graph >= 0 ? a->graph == 1 : (sc ? sc->run.graph : true),
        .iters = a->iters >= 0 ? a->iters : (sc ? sc->run.iters : 20),
        .warmup = a->warmup >= 0 ? a->warmup : (sc ? sc->run.warmup : 3),
        .instrumented_iters = a->instrumented,
        .check = a->check,
        .class_cost = a->class_cost,
        .debug_corrupt_rank = a->corrupt_rank,
        .seed = sc ? sc->run.seed : 1234,
        .progress = d->rank == 0 && isatty(2),
        .max_host_bytes = (size_t)a->max_host_gib << 30,
        .fault = a->fault,
        .nccl_tuning = sc ? &sc->nccl : NULL,
        .p2p = a->p2p,
        .attn_kernel = a->attn_kernel > 0 ? a->attn_kernel : 0,
    };
}

/* Rank 0: the table on stdout, then --out and --trace. Returns rc, or VP_EXIT_FAIL on a failed write. */
static int report_run(const run_args *a, const cfg_scenario *sc, const plan *p, const exec_options *opt,
                      const char *policy_text, const exec_result *res, int rc, int argc, char **argv)
{
    results_cycle rr;
    report_run_results(&rr, p, res, policy_text ? policy_text : cfg_backend_names[opt->backend]);
    report_results_meta meta = report_meta_measured(a->c.scenario_path, sc, p, "run", res->graph);
    /* A measurement describes the machine it ran on, not the scenario's system file. */
    char measured_on[200];
    const char *gpu = util_env_get(res->env, res->n_env, "gpu");
    snprintf(measured_on, sizeof(measured_on), "%s (measured here)", gpu ? gpu : "host CPU");
    meta.system = measured_on;
    util_buf out = {0};
    /* Wrong collectives make every timing beside them meaningless: the verdict alone, no table. */
    if (res->checked && res->check_failures)
        report_run_check_verdict(&out, p, res);
    else {
        report_results_table(&out, &meta, &rr, 1);
        report_run_summary(&out, p, res, &rr);
    }
    report_run_cmp cmp = {0};
    if (sc && opt->device == CFG_DEVICE_CUDA)
        report_run_compare(&cmp, sc, p, res, opt->allreduce_policy ? -1 : opt->backend, &rr);
    report_run_compare_table(&out, &cmp);
    util_json j;
    util_json_init(&j, true);
    if (a->c.out_path || a->c.format == CLI_FMT_JSON)
        report_run_json(&j, &meta, &rr, p, res, &cmp, argc, argv);
    /* --format json: stdout carries the results JSON that --out would hold, instead of the table. */
    const util_buf *shown = a->c.format == CLI_FMT_JSON ? &j.out : &out;
    if (cli_write_stdout(shown->s ? shown->s : "", shown->len))
        rc = VP_EXIT_FAIL;
    util_buf_free(&out);
    int w = a->c.out_path ? cli_write_file("run", NULL, a->c.out_path, &j.out) : 0;
    rc = w ? w : rc;
    util_buf_free(&j.out);
    if (a->trace) {
        util_buf t = {0};
        report_trace_json(&t, p, res->ranks, res->op_start_us, res->op_dur_us);
        w = cli_write_file("run", NULL, a->trace, &t);
        rc = w ? w : rc;
        util_buf_free(&t);
    }
    results_cycle_free(&rr);
    return rc;
}

static int run_main(cli_ctx *x)
{
    run_args *a = x->args;
    dist_job *d = &x->d;
    const cfg_scenario *scp = x->have_sc ? &x->sc : NULL;
    exec_options opt = run_options(a, d, scp);
    /* Which collectives go where: --allreduce-policy, else an explicit --backend, else the scenario's
     * run.allreduce_policy, else its run.backend. */
    const char *policy_text = a->policy;
    if (!policy_text && a->backend < 0 && scp && scp->run.allreduce_policy && scp->run.allreduce_policy[0])
        policy_text = scp->run.allreduce_policy;
    cfg_policy policy;
    if (policy_text) {
        char why[400];
        if (cfg_policy_parse(policy_text, &policy, why, sizeof(why)) == 0)
            opt.allreduce_policy = &policy;
    }
    /* --p2p sysmem must reach a custom backend (the policy's, else the one backend); then the device. */
    int rc = 0;
    if (opt.attn_kernel != 0 && opt.device != CFG_DEVICE_CUDA) {
        if (d->rank == 0)
            util_usage_error("run", "--attn-kernel %s chooses a CUDA attention kernel; the %s device runs none "
                             "(leave it at auto)", cfg_attn_kernel_names[opt.attn_kernel], cfg_device_names[opt.device]);
        return VP_EXIT_USAGE;
    }
    if ((rc = cli_p2p_check("run", opt.p2p, opt.device, &opt.backend, opt.allreduce_policy ? 0 : 1,
                            opt.allreduce_policy, d->rank == 0)) != 0 ||
        (rc = cli_device_ready("run", d, opt.device)) != 0)
        return rc;
    exec_watch_start(d, "run", a->timeout >= 0 ? a->timeout : (scp ? scp->run.timeout : EXEC_WATCH_DEFAULT_S));
    double *modelled = NULL;
    /* --target-system and --model-backend only steer the `model` backend: given to any other they would
     * be ignored, and the run taken for one on the target box. */
    if (opt.backend != CFG_BACKEND_MODEL && (a->target_system || a->model_backend_given)) {
        if (d->rank == 0)
            util_usage_error("run", "%s applies to --backend model only (this run's backend is %s)",
                            a->target_system ? "--target-system" : "--model-backend",
                            opt.allreduce_policy ? "a per-size policy" : cfg_backend_names[opt.backend]);
        rc = VP_EXIT_USAGE;
    }
    if (rc == 0 && opt.backend == CFG_BACKEND_MODEL) {
        rc = model_replay_delays(scp, a->c.sets, a->c.n_sets, &x->p, a->target_system, a->model_backend, a->c.quiet,
                                 &modelled);
        opt.collective_us = modelled;
    }
    if (rc == 0) {
        exec_result res;
        rc = exec_run(d, &opt, &x->p, &res);
        exec_watch_step("reporting the results");
        if (rc == 0 || rc == 1) {
            if (d->rank == 0)
                rc = report_run(a, scp, &x->p, &opt, policy_text, &res, rc, x->argc, x->argv);
            exec_result_free(&res);
        }
    }
    free(modelled);
    return rc;
}

static void run_about(util_buf *out)
{
    util_buf_printf(out, "Replay one decode cycle (draft steps, verify, draft-extend) with real GEMMs at the per-rank shapes\n"
                         "and real collectives, one MPI rank per GPU, and report the measured breakdown and projected\n"
                         "tok/s. N > 1 ranks replay the scenario at TP = N (a note says so when parallel.tp differs); -np 1\n"
                         "replays one rank's compute at the scenario's TP. SCENARIO defaults to\n"
                         "configs/default.yaml.\n");
}

static const cli_cmd run_cmd = {
    .spec = {.name = "run", .synopsis = "mpirun -np N vpsim run", .pos_usage = "[SCENARIO]", .pos = CLI_POS_SCENARIO,
             .common_offset = offsetof(run_args, c), .opts = run_opts, .n_opts = CLI_N(run_opts),
             .about_fn = run_about, .options_title = "options (defaults from the scenario's run: section):",
             .examples = "mpirun -np 8 vpsim run configs/default.yaml --backend nccl --out results.json\n"
                         "mpirun -np 8 vpsim run configs/default.yaml --backend nccl --set nccl.channels=1   # NCCL_* set\n"
                         "vpsim run configs/default.yaml --backend none --set parallel.tp=8        # one rank's compute\n"
                         "vpsim run configs/default.yaml --backend model \\\n"
                         "      --target-system configs/systems/rtx-pro-6000-8x-pcie.yaml\n"
                         "mpirun -np 4 --oversubscribe vpsim run configs/tiny.yaml --device cpu --backend mpi --check\n"},
    .args_size = sizeof(run_args),
    .flags = CLI_MPI | CLI_LOAD,
    .init = run_init,
    .check = run_check,
    .load = run_load,
    .run = run_main,
};

int cmd_run(int argc, char **argv) { return cli_command_main(&run_cmd, argc, argv); }
