/* vpsim run: replay one decode cycle per rank under MPI and report the measured breakdown. */
#include "cli.h"

#include "../config/cfg_policy.h"
#include "../exec/exec.h"
#include "../exec/exec_watch.h"
#include "../report/report.h"
#include "../report/report_results.h"
#include "../util/util.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void run_help(void)
{
    printf("usage: mpirun -np N vpsim run [SCENARIO] [--backend B] [--device cuda|cpu] [--eager] [--check]\n"
           "                            [--iters N] [--warmup N] [--instrumented N] [--target-system FILE]\n"
           "                            [--p2p direct|sysmem]\n"
           "                            [--trace FILE] [--out FILE] [--format table|json|csv] [--set K=V]...\n"
           "\n"
           "Replay one decode cycle (draft steps, verify, draft-extend) with real GEMMs at the per-rank shapes\n"
           "and real collectives, one MPI rank per GPU, and report the measured breakdown and projected\n"
           "tok/s. N > 1 ranks replay the scenario at TP = N (a note says so when parallel.tp differs); -np 1\n"
           "replays one rank's compute at the scenario's TP. SCENARIO defaults to\n"
           "configs/default.yaml.\n"
           "\n"
           "options (defaults from the scenario's run: section):\n"
           "  --backend B          collective backend, one of:\n");
    for (int b = 0; b < CFG_BACKEND_COUNT; b++)
        printf("                         %-10s %s\n", cfg_backend_names[b], cfg_backend_help[b]);
    printf("  --device D           where the ops run, one of:\n");
    for (int d = 0; d < CFG_DEVICE_COUNT; d++)
        printf("                         %-10s %s\n", cfg_device_names[d], cfg_device_help[d]);
    printf(
           "  --p2p MODE           how oneshot, twoshot and push reach their peers: direct (default; GPU\n"
           "                       memory mapped with CUDA IPC) or sysmem (every buffer a peer touches in\n"
           "                       pinned host memory mapped into every rank; needs no P2P); sysmem when no\n"
           "                       custom backend is in use, or on cpu, is an error (exit 2)\n"
           "  --eager              time eager launches instead of one CUDA graph per cycle\n"
           "  --graph              time the cycle as a CUDA graph (the default on cuda)\n"
           "  --check              poison every collective's output, compare with a reference; exit 1 on a\n"
           "                       mismatch, naming the op, rank and first bad index\n"
           "  --iters N            timed cycles (median, p10, p90 reported)\n"
           "  --warmup N           untimed cycles first\n"
           "  --instrumented N     eager passes with events around every op, for the breakdown (default 3)\n"
           "  --class-cost         also time the cycle without each compute class (gemm, attention, other):\n"
           "                       what the class costs in context, with no per-op timer attributed\n"
           "  --target-system FILE system whose collectives backend `model` replays\n"
           "  --model-backend B    the backend whose modelled collectives `model` replays (default nccl)\n"
           "  --allreduce-policy P per-size backends, first match wins, e.g. 'oneshot<=256K,twoshot<=8M,nccl'\n"
           "                       (default: the scenario's run.allreduce_policy, else --backend for all)\n"
           "  --trace FILE         Chrome trace (chrome://tracing, Perfetto): a track per rank and stream\n"
           "  --out FILE           results JSON (vpsim.results/1 with the environment), written atomically;\n"
           "                       --out and --trace take a regular file or a new name in an existing\n"
           "                       directory (a symbolic link: the file it leads to is replaced)\n"
           "  --max-host-memory GIB  CPU device: refuse plans needing more per rank (default 4)\n"
           "  --timeout S          watchdog: when a rank makes no progress for S seconds, every rank exits 1\n"
           "                       naming its backend, phase, op and last completed step (default: the\n"
           "                       scenario's run.timeout, 60; 0 = none)\n"
           "  --debug-corrupt-rank R with --check: rank R corrupts each result (to test the check itself)\n"
           "  --inject-fault MODE:RANK:CALL[:SECONDS]\n"
           "                       testing: rank RANK kills itself (kill), exits (exit) or sleeps SECONDS\n"
           "                       (stall, default 10) before its collective call number CALL\n"
           "  --plan FILE, --set K=V, --system FILE, --format F: as in `vpsim plan`\n"
           "\n"
           "examples:\n"
           "  mpirun -np 8 vpsim run configs/default.yaml --backend nccl --out results.json\n"
           "  mpirun -np 8 vpsim run configs/default.yaml --backend nccl --set nccl.channels=1   # NCCL_* set\n"
           "  vpsim run configs/default.yaml --backend none --set parallel.tp=8        # one rank's compute\n"
           "  vpsim run configs/default.yaml --backend model \\\n"
           "        --target-system configs/systems/rtx-pro-6000-8x-pcie.yaml\n"
           "  mpirun -np 4 --oversubscribe vpsim run configs/tiny.yaml --device cpu --backend mpi --check\n");
}

enum {
    OPT_BACKEND = CLI_OPT_FIRST_PRIVATE,
    OPT_DEVICE,
    OPT_EAGER,
    OPT_GRAPH,
    OPT_CHECK,
    OPT_ITERS,
    OPT_WARMUP,
    OPT_INSTRUMENTED,
    OPT_TARGET,
    OPT_TRACE,
    OPT_MAX_HOST,
    OPT_MODEL_BACKEND,
    OPT_DEBUG_CORRUPT,
    OPT_POLICY,
    OPT_TIMEOUT,
    OPT_FAULT,
    OPT_CLASS_COST,
    OPT_P2P,
};

typedef struct run_args {
    cli_common c;
    int backend, device, iters, warmup, instrumented, model_backend, corrupt_rank;
    int graph;   /* -1: scenario default */
    int p2p;     /* comm_p2p (--p2p) */
    int timeout; /* -1: scenario default */
    exec_fault fault;
    bool check, class_cost;
    bool model_backend_given; /* --model-backend was on the command line */
    double max_host_gib;
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

static int parse_run_args(int argc, char **argv, run_args *a)
{
    static const struct option longopts[] = {
        CLI_COMMON_LONGOPTS,
        {"backend", required_argument, NULL, OPT_BACKEND},
        {"device", required_argument, NULL, OPT_DEVICE},
        {"eager", no_argument, NULL, OPT_EAGER},
        {"graph", no_argument, NULL, OPT_GRAPH},
        {"check", no_argument, NULL, OPT_CHECK},
        {"iters", required_argument, NULL, OPT_ITERS},
        {"warmup", required_argument, NULL, OPT_WARMUP},
        {"instrumented", required_argument, NULL, OPT_INSTRUMENTED},
        {"target-system", required_argument, NULL, OPT_TARGET},
        {"trace", required_argument, NULL, OPT_TRACE},
        {"max-host-memory", required_argument, NULL, OPT_MAX_HOST},
        {"model-backend", required_argument, NULL, OPT_MODEL_BACKEND},
        {"debug-corrupt-rank", required_argument, NULL, OPT_DEBUG_CORRUPT},
        {"allreduce-policy", required_argument, NULL, OPT_POLICY},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"inject-fault", required_argument, NULL, OPT_FAULT},
        {"class-cost", no_argument, NULL, OPT_CLASS_COST},
        {"p2p", required_argument, NULL, OPT_P2P},
        {0, 0, 0, 0},
    };
    memset(a, 0, sizeof(*a));
    a->backend = a->device = a->iters = a->warmup = a->graph = a->timeout = -1;
    a->instrumented = 3;
    a->model_backend = CFG_BACKEND_NCCL;
    a->corrupt_rank = -1;
    a->max_host_gib = EXEC_MAX_HOST_GIB_DEFAULT;
    optind = 1;
    opterr = 0;
    int opt, v;
    while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'h': run_help(); return -1;
        case OPT_BACKEND:
            if (cli_parse_enum("run", "--backend", optarg, cfg_backend_names, &a->backend))
                return VP_EXIT_USAGE;
            break;
        case OPT_DEVICE:
            if (cli_parse_enum("run", "--device", optarg, cfg_device_names, &a->device))
                return VP_EXIT_USAGE;
            break;
        case OPT_EAGER: a->graph = 0; break;
        case OPT_GRAPH: a->graph = 1; break;
        case OPT_CHECK: a->check = true; break;
        case OPT_ITERS:
            if (cli_parse_int("run", "--iters", optarg, 1, 1000000, &a->iters))
                return VP_EXIT_USAGE;
            break;
        case OPT_WARMUP:
            if (cli_parse_int("run", "--warmup", optarg, 0, 1000000, &a->warmup))
                return VP_EXIT_USAGE;
            break;
        case OPT_INSTRUMENTED:
            if (cli_parse_int("run", "--instrumented", optarg, 1, 1000, &a->instrumented))
                return VP_EXIT_USAGE;
            break;
        case OPT_TARGET: a->target_system = optarg; break;
        case OPT_CLASS_COST: a->class_cost = true; break;
        case OPT_P2P:
            if (cli_parse_enum("run", "--p2p", optarg, comm_p2p_names, &a->p2p))
                return VP_EXIT_USAGE;
            break;
        case OPT_DEBUG_CORRUPT:
            if (cli_parse_int("run", "--debug-corrupt-rank", optarg, 0, 1 << 20, &a->corrupt_rank))
                return VP_EXIT_USAGE;
            break;
        case OPT_MODEL_BACKEND:
            if (cli_parse_enum("run", "--model-backend", optarg, cfg_backend_names, &a->model_backend))
                return VP_EXIT_USAGE;
            a->model_backend_given = true;
            break;
        case OPT_TRACE:
            if (cli_check_out("run", "--trace", optarg))
                return VP_EXIT_USAGE;
            a->trace = optarg;
            break;
        case OPT_TIMEOUT:
            if (cli_parse_int("run", "--timeout", optarg, 0, 86400, &a->timeout))
                return VP_EXIT_USAGE;
            break;
        case OPT_FAULT:
            if (cli_parse_fault("run", optarg, &a->fault))
                return VP_EXIT_USAGE;
            break;
        case OPT_POLICY: {
            cfg_policy pol;
            char why[400];
            if (cfg_policy_parse(optarg, &pol, why, sizeof(why)))
                return cli_usage_error("run", "--allreduce-policy '%s': %s", optarg, why);
            a->policy = optarg;
            break;
        }
        case OPT_MAX_HOST:
            if (cli_parse_int("run", "--max-host-memory", optarg, 1, 1 << 20, &v))
                return VP_EXIT_USAGE;
            a->max_host_gib = v;
            break;
        default: {
            int rc = cli_take_common("run", &a->c, opt, optarg, argv);
            if (rc)
                return rc;
            break;
        }
        }
    }
    if (cli_positional(&a->c, argc, argv, optind, "run"))
        return VP_EXIT_USAGE;
    /* A run writes its table, or with --format json the results JSON that --out holds; it has no CSV
     * form, and taking --format csv while writing something else would pass one format for another. */
    if (a->c.format == CLI_FMT_CSV)
        return cli_usage_error("run", "--format csv: a run writes a table or, with --format json, the results "
                                      "JSON (also what --out holds); for a CSV use `vpsim model --format csv`");
    if (a->trace && a->c.out_path && run_same_target(a->trace, a->c.out_path))
        return cli_usage_error("run", "--trace '%s' and --out '%s' are the same file; the trace would replace the "
                                      "results",
                               a->trace, a->c.out_path);
    return VP_EXIT_OK;
}

static void write_text(const char *path, const util_buf *b, int *rc)
{
    char err[512];
    const int w = util_write_file_atomic(path, b->s ? b->s : "", b->len, err, sizeof(err));
    if (w) {
        fprintf(stderr, "vpsim run: %s\n", err);
        *rc = w == -2 ? VP_EXIT_USAGE : VP_EXIT_FAIL;
    }
}

/* Load the scenario (or plan) for this job: a job of N > 1 ranks replays the scenario at TP = N
 * (-np 1 replays one rank's compute). Then refuse test hooks that name no rank of the job. */
static int load_for_job(run_args *a, const dist_job *d, cfg_scenario *sc, bool *have_sc, plan *p)
{
    int rc = cli_load(&a->c, sc, have_sc, p);
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
            plan_free(p);
            cfg_scenario_free(sc);
            /* The TP comes from mpirun -np, not from the user's --set: a scenario that cannot take it is
             * said in those words (cli_load would cite a --set nobody gave). */
            const bool quiet = a->c.quiet;
            a->c.quiet = true;
            rc = cli_load(&a->c, sc, have_sc, p);
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
            cli_usage_error("run", "--debug-corrupt-rank %d: %s", a->corrupt_rank,
                            !a->check ? "needs --check (it corrupts checked results)" : "no such rank in this job");
        rc = VP_EXIT_USAGE;
    }
    if (rc) {
        plan_free(p);
        if (*have_sc)
            cfg_scenario_free(sc);
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
        .max_host_bytes = (size_t)(a->max_host_gib * 1073741824.0),
        .fault = a->fault,
        .nccl_tuning = sc ? &sc->nccl : NULL,
        .p2p = a->p2p,
    };
}

/* Rank 0: the table on stdout, then --out and --trace. Returns rc, or VP_EXIT_FAIL on a failed write. */
static int report_run(const run_args *a, const cfg_scenario *sc, const plan *p, const exec_options *opt,
                      const char *policy_text, const exec_result *res, int rc, int argc, char **argv)
{
    results_cycle rr;
    cli_fill_measured(&rr, p, res, policy_text ? policy_text : cfg_backend_names[opt->backend]);
    report_results_meta meta = cli_results_meta(&a->c, sc, p, "run", res->graph);
    /* A measurement describes the machine it ran on, not the scenario's system file. */
    char measured_on[200];
    const char *gpu = util_env_get(res->env, res->n_env, "gpu");
    snprintf(measured_on, sizeof(measured_on), "%s (measured here)", gpu ? gpu : "host CPU");
    meta.system = measured_on;
    util_buf out = {0};
    /* Wrong collectives make every timing beside them meaningless: the verdict alone, no table. */
    if (res->checked && res->check_failures)
        cli_run_check_verdict(&out, p, res);
    else {
        report_results_table(&out, &meta, &rr, 1);
        cli_run_summary(&out, p, res, &rr);
    }
    cli_compare cmp = {0};
    if (sc && opt->device == CFG_DEVICE_CUDA)
        cli_run_compare(&cmp, sc, p, res, opt->allreduce_policy ? -1 : opt->backend, &rr);
    cli_run_compare_table(&out, &cmp);
    util_json j;
    util_json_init(&j, true);
    if (a->c.out_path || a->c.format == CLI_FMT_JSON)
        cli_run_json(&j, &meta, &rr, p, res, &cmp, argc, argv);
    /* --format json: stdout carries the results JSON that --out would hold, instead of the table. */
    const util_buf *shown = a->c.format == CLI_FMT_JSON ? &j.out : &out;
    if (cli_write_stdout(shown->s ? shown->s : "", shown->len))
        rc = VP_EXIT_FAIL;
    util_buf_free(&out);
    if (a->c.out_path)
        write_text(a->c.out_path, &j.out, &rc);
    util_buf_free(&j.out);
    if (a->trace) {
        util_buf t = {0};
        report_trace_json(&t, p, res->ranks, res->op_start_us, res->op_dur_us);
        write_text(a->trace, &t, &rc);
        util_buf_free(&t);
    }
    results_cycle_free(&rr);
    return rc;
}

int cmd_run(int argc, char **argv)
{
    run_args a;
    int rc = parse_run_args(argc, argv, &a);
    if (rc < 0)
        return VP_EXIT_OK; /* --help */
    if (rc)
        return rc;

    dist_job d;
    dist_init(&d, &argc, &argv);
    a.c.quiet = d.rank != 0;
    cfg_scenario sc;
    bool have_sc = false;
    plan p;
    rc = load_for_job(&a, &d, &sc, &have_sc, &p);
    if (rc) {
        dist_finalize(&d);
        return rc;
    }
    const cfg_scenario *scp = have_sc ? &sc : NULL;
    exec_options opt = run_options(&a, &d, scp);
    /* Which collectives go where: --allreduce-policy, else an explicit --backend, else the scenario's
     * run.allreduce_policy, else its run.backend. */
    const char *policy_text = a.policy;
    if (!policy_text && a.backend < 0 && scp && sc.run.allreduce_policy && sc.run.allreduce_policy[0])
        policy_text = sc.run.allreduce_policy;
    cfg_policy policy;
    if (policy_text) {
        char why[400];
        if (cfg_policy_parse(policy_text, &policy, why, sizeof(why)) == 0)
            opt.allreduce_policy = &policy;
    }
    /* --p2p sysmem must reach a custom backend (the policy's, else the one backend); then the device. */
    if ((rc = cli_p2p_check("run", opt.p2p, opt.device, &opt.backend, opt.allreduce_policy ? 0 : 1,
                            opt.allreduce_policy, d.rank == 0)) != 0 ||
        (rc = cli_device_ready("run", &d, opt.device)) != 0) {
        plan_free(&p);
        if (have_sc)
            cfg_scenario_free(&sc);
        dist_finalize(&d);
        return rc;
    }
    exec_watch_start(&d, "run", a.timeout >= 0 ? a.timeout : (scp ? sc.run.timeout : EXEC_WATCH_DEFAULT_S));
    double *modelled = NULL;
    /* --target-system and --model-backend only steer the `model` backend: given to any other they would
     * be ignored, and the run taken for one on the target box. */
    if (rc == 0 && opt.backend != CFG_BACKEND_MODEL && (a.target_system || a.model_backend_given)) {
        if (d.rank == 0)
            cli_usage_error("run", "%s applies to --backend model only (this run's backend is %s)",
                            a.target_system ? "--target-system" : "--model-backend",
                            opt.allreduce_policy ? "a per-size policy" : cfg_backend_names[opt.backend]);
        rc = VP_EXIT_USAGE;
    }
    if (rc == 0 && opt.backend == CFG_BACKEND_MODEL) {
        rc = cli_model_collective_us(&a.c, scp, &p, a.target_system, a.model_backend, &modelled);
        opt.collective_us = modelled;
    }
    if (rc == 0) {
        exec_result res;
        rc = exec_run(&d, &opt, &p, &res);
        exec_watch_step("reporting the results");
        if (rc == 0 || rc == 1) {
            if (d.rank == 0)
                rc = report_run(&a, scp, &p, &opt, policy_text, &res, rc, argc, argv);
            exec_result_free(&res);
        }
    }
    free(modelled);
    plan_free(&p);
    if (have_sc)
        cfg_scenario_free(&sc);
    exec_watch_step("MPI_Finalize (waiting for every rank)");
    dist_finalize(&d);
    exec_watch_stop();
    return rc;
}
