/* vpsim bench-allreduce: every allreduce backend (or another collective's, --collective) over a size sweep, as an nccl-tests-style table or
 * JSON (sim/exec/comm_bench.c runs it). Works on the CPU device with the MPI backend, so CI tests the
 * harness under mpirun. */
#include "cli.h"

#include "../config/cfg_schema.h"
#include "../exec/exec_bench.h"
#include "../bench/bench_collective.h"
#include "../bench/bench_model.h"
#include "../config/cfg_policy.h"
#include "../exec/exec.h"
#include "../exec/exec_watch.h"
#include "../util/util.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct bench_args {
    cli_common c;
    exec_bench_opts o;
    bool explicit_backends;
    long long min, max;
    int factor;
    int timeout; /* -1: the scenario's run.timeout, else the default */
    bool model;  /* compare with the model */
    int collective;   /* index into bench_kinds (--collective) */
    int max_host_gib; /* --max-host-memory */
    const char *from; /* a saved result to compare instead of measuring */
    const char *sizes;
    const char *backends; /* --backend as given (NULL: the device's default list) */
    const char *datatype; /* -d/--datatype as given */
    char skipped[160];    /* backends "all" left out on this device, for one note */
    char lacking[160];    /* backends of the default list or "all" without the --collective */
} bench_args;

/* Option groups (cli_first_given): what shapes a measurement (none applies to --from), and the range
 * options that --sizes replaces. */
enum { BENCH_MEASURE = 1, BENCH_RANGE = 2 };

/* What --collective times; allreduce_norm is left out: it needs the residual and weight buffers a
 * benchmark does not have. */
static const char *const bench_kinds[] = {"allreduce", "allgather", "reduce_scatter", "alltoall", NULL};

/* --check [0|1], -c 0|1 (nccl-tests spells it `-c 1`): `--check` alone is 1; a following "0" or "1" is
 * its value (getopt gives an optional argument only as --check=1). */
static int set_check(void *dest, const char *arg, const cli_opt *o, cli_parse *ps)
{
    (void)o;
    if (!arg && optind < ps->argc && (!strcmp(ps->argv[optind], "0") || !strcmp(ps->argv[optind], "1")))
        arg = ps->argv[optind++];
    int v = 1;
    if (arg && cli_parse_int(ps->cmd, "-c/--check", arg, 0, 1, &v))
        return VP_EXIT_USAGE;
    *(bool *)dest = v == 1;
    return VP_EXIT_OK;
}

/* -G N, nccl-tests' graph launch count: vpsim captures -n calls per graph and launches it once. */
static int set_cudagraph(void *dest, const char *arg, const cli_opt *o, cli_parse *ps)
{
    (void)o;
    int n;
    if (cli_parse_int(ps->cmd, "-G/--cudagraph", arg, 0, 1000000, &n))
        return VP_EXIT_USAGE;
    *(bool *)dest = n > 0;
    return VP_EXIT_OK;
}

static int set_policy(void *dest, const char *arg, const cli_opt *o, cli_parse *ps)
{
    (void)o;
    exec_bench_opts *eo = dest;
    char why[256];
    if (cfg_policy_parse(arg, &eo->policy, why, sizeof(why)))
        return util_usage_error(ps->cmd, "--policy: %s", why);
    eo->with_policy = true;
    return VP_EXIT_OK;
}

static int set_fault(void *dest, const char *arg, const cli_opt *o, cli_parse *ps)
{
    (void)o;
    return cli_parse_fault(ps->cmd, arg, dest);
}

/* --from FILE: a saved result, compared with the model (so --model too). */
static int set_from(void *dest, const char *arg, const cli_opt *o, cli_parse *ps)
{
    (void)o;
    (void)ps;
    bench_args *a = dest;
    a->from = arg;
    a->model = true;
    return VP_EXIT_OK;
}

/* -d/--datatype names the type the device reduces (nccl-tests' names and vpsim's): it is checked, not
 * chosen, since each device reduces one type (bf16 on cuda, float on cpu). */
static int check_datatype(const bench_args *a)
{
    static const char *const bf16_names[] = {"bfloat16", "bf16", NULL}, *const f32_names[] = {"float", "float32", NULL};
    const char *const *ok = a->o.device == CFG_DEVICE_CUDA ? bf16_names : f32_names;
    if (!a->datatype || cfg_enum_index(ok, a->datatype) >= 0)
        return 0;
    return util_usage_error("bench-allreduce", "-d/--datatype '%s': the %s device reduces %s (valid: %s, %s)",
                           a->datatype, cfg_device_names[a->o.device], ok[0], ok[0], ok[1]);
}

/* After the options: the backends and sizes, which depend on the device. */
static int finish_args(bench_args *a)
{
    char why[256];
    const exec_device *dev = exec_find_device(a->o.device, why, sizeof(why));
    if (!dev)
        return util_usage_error("bench-allreduce", "%s", why);
    if (check_datatype(a))
        return VP_EXIT_USAGE;
    /* With --policy alone, only the policy runs; a policy counts as explicitly requested. */
    bool named = false;
    if (a->backends || !a->o.with_policy) {
        char dflt[160];
        bench_default_backends(a->o.device, dflt, sizeof(dflt));
        if (bench_parse_backends(a->backends ? a->backends : dflt,
                           &a->o, &named, a->skipped, sizeof(a->skipped)))
            return VP_EXIT_USAGE;
    }
    a->explicit_backends = (a->backends && named) || a->o.with_policy;
    if (bench_collective_backends(&a->o, a->backends && named, a->lacking, sizeof(a->lacking)))
        return VP_EXIT_USAGE;
    if (a->sizes)
        return bench_parse_sizes(a->sizes, dev->elem_bytes, &a->o);
    int n = exec_bench_sizes(a->min, a->max, a->factor, dev->elem_bytes, a->o.sizes, BENCH_MAX_USER_SIZES, why,
                             sizeof(why));
    if (n < 0)
        return util_usage_error("bench-allreduce", "%s", why);
    a->o.n_sizes = n;
    return 0;
}

static void bench_init(void *args)
{
    bench_args *a = args;
    a->o.seed = 1234;
    a->timeout = -1;
}

/* The backends as the list has them (cfg_lists.h), so a new list line shows in the help by itself. */
static const char *backend_help(void)
{
    static char text[1024];
    if (!text[0]) {
        char all[256], gpu[160], host[160];
        bench_reducing_backends(all, sizeof(all));
        bench_default_backends(CFG_DEVICE_CUDA, gpu, sizeof(gpu));
        bench_default_backends(CFG_DEVICE_CPU, host, sizeof(host));
        snprintf(text, sizeof(text), "%s, or all\ndefault on cuda: %s\ndefault on cpu: %s\nall: every backend the "
                                     "device can run (the others named in a note). A backend that cannot run here gets "
                                     "an 'unsupported' row with the reason; one named explicitly makes the exit status 1.",
                 all, gpu, host);
    }
    return text;
}

static const char *sizes_help(void)
{
    static char text[96];
    snprintf(text, sizeof(text), " (at most %d distinct sizes; every item must be a size)", BENCH_MAX_USER_SIZES);
    return text;
}

#define BENCH_OPT(nm, k, field) .name = (nm), .kind = (k), .offset = offsetof(bench_args, field)
static const cli_opt bench_opts[] = {
    {BENCH_OPT("backend", CLI_STRING, backends), .meta = "LIST", .group = BENCH_MEASURE,
     .help = "comma-separated, of: ", .help_tail = backend_help},
    {BENCH_OPT("collective", CLI_ENUM, collective), .choices = bench_kinds, .meta = "K", .dflt = "allreduce",
     .group = BENCH_MEASURE,
     .help = "what to time; a size is what each rank sends (reduce_scatter, alltoall: rounded down to a multiple of "
             "the ranks); busbw, the checks and --model follow the kind. A backend named in --backend that lacks it: "
             "error, exit 2; the default list and 'all' leave such backends out with a note"},
    {BENCH_OPT("minbytes", CLI_BYTES, min), .short_name = 'b', .lo = 1, .dflt = "16", .meta = "S",
     .group = BENCH_MEASURE | BENCH_RANGE, .help = "smallest size"},
    {BENCH_OPT("maxbytes", CLI_BYTES, max), .short_name = 'e', .lo = 1, .dflt = "8M", .meta = "S",
     .group = BENCH_MEASURE | BENCH_RANGE, .help = "largest size"},
    {BENCH_OPT("stepfactor", CLI_INT, factor), .short_name = 'f', .lo = 2, .hi = 1 << 20, .dflt = "2", .meta = "F",
     .group = BENCH_MEASURE | BENCH_RANGE, .help = "multiply the size by F each step"},
    {BENCH_OPT("sizes", CLI_STRING, sizes), .meta = "LIST", .group = BENCH_MEASURE,
     .help = "explicit sizes instead of -b/-e/-f, e.g. 16,18,1000,43008,8M", .help_tail = sizes_help},
    {BENCH_OPT("policy", CLI_CUSTOM, o), .set = set_policy, .meta = "SPEC", .group = BENCH_MEASURE,
     .help = "also run a per-size selection as a server would, e.g. \"oneshot<=256K,twoshot<=8M,nccl\" (first rule "
             "whose bound covers the size)"},
    {BENCH_OPT("iters", CLI_INT, o.iters), .short_name = 'n', .lo = 1, .hi = 1000000, .dflt = "20", .meta = "N",
     .group = BENCH_MEASURE, .help = "timed back-to-back calls per size"},
    {BENCH_OPT("warmup", CLI_INT, o.warmup), .short_name = 'w', .lo = 0, .hi = 1000000, .dflt = "5", .meta = "N",
     .group = BENCH_MEASURE, .help = "untimed calls per size first"},
    {BENCH_OPT("warmup_iters", CLI_INT, o.warmup), .lo = 0, .hi = 1000000, .meta = "N", .label = "-w/--warmup",
     .group = BENCH_MEASURE, .hidden = true},
    {BENCH_OPT("graph", CLI_FLAG, o.graph), .group = BENCH_MEASURE,
     .help = "capture the N calls as one CUDA graph and time its launch (cuda; ignored on cpu, which has no graphs)"},
    {BENCH_OPT("cudagraph", CLI_CUSTOM, o.graph), .short_name = 'G', .set = set_cudagraph, .meta = "N",
     .group = BENCH_MEASURE,
     .help = "nccl-tests' spelling: N > 0 is --graph, 0 is eager (vpsim launches its graph of -n calls once per size; "
             "N is not a launch count here)"},
    {BENCH_OPT("check", CLI_CUSTOM, o.check), .short_name = 'c', .set = set_check, .meta = "0|1", .optional = true,
     .label = "--check", .group = BENCH_MEASURE,
     .help = "--check or -c 1: also check random data (within bf16/fp32 tolerance of an fp64 reference and "
             "bit-identical on every rank) and an in-place call, per size; reduce_scatter: random data on each rank's "
             "block, no in-place call; allgather, alltoall: a second pattern check; --check 0 / -c 0: only the pattern "
             "check of every size"},
    {BENCH_OPT("p2p", CLI_ENUM, o.p2p), .choices = comm_p2p_names, .meta = "MODE", .group = BENCH_MEASURE,
     .help = "how oneshot, twoshot and push reach their peers: direct (default; GPU memory mapped with CUDA IPC) or "
             "sysmem (every buffer a peer touches in pinned host memory mapped into every rank; needs no P2P). Other "
             "backends run as usual; sysmem with none of the three, or on cpu, is an error (exit 2)"},
    {BENCH_OPT("datatype", CLI_STRING, datatype), .short_name = 'd', .meta = "T", .group = BENCH_MEASURE,
     .help = "the type the device reduces, checked (each device has one): bfloat16 (bf16) on cuda, float (float32) "
             "on cpu"},
    {BENCH_OPT("device", CLI_ENUM, o.device), .choices = cfg_device_names, .meta = "D", .group = BENCH_MEASURE,
     .dflt = VPSIM_HAVE_CUDA ? "cuda" : "cpu", .help = "where to run"},
    CLI_OPT_FORMAT(bench_args, "table, json (schema vpsim.bench_allreduce/1) or csv (one line per size and backend, a "
                               "header line first)"),
    CLI_OPT_OUT(bench_args, CLI_HELP_OUT),
    {BENCH_OPT("model", CLI_FLAG, model),
     .help = "compare every row with the model of the scenario's system (after --system and --set; default scenario "
             "when none is given): adds model (us) and error columns; use --set system.measured.use=false for the "
             "formulas alone"},
    {.name = "from", .kind = CLI_CUSTOM, .offset = 0, .set = set_from, .meta = "FILE", /* the whole struct */
     .help = "no measurement: load a saved --format json result and compare it with the model (implies --model), "
             "e.g. after editing the system file"},
    {BENCH_OPT("max-host-memory", CLI_INT, max_host_gib), .lo = 1, .hi = 1 << 20,
     .dflt = CLI_STR(EXEC_MAX_HOST_GIB_DEFAULT), .meta = "GIB", .group = BENCH_MEASURE,
     .help = "cpu device: refuse sizes whose buffers need more host memory per rank (as `vpsim run`); exit 2 before "
             "anything is allocated"},
    {BENCH_OPT("timeout", CLI_INT, timeout), .lo = 0, .hi = 86400, .meta = "S", .group = BENCH_MEASURE,
     .dflt_text = "the scenario's run.timeout, else 60",
     .help = "watchdog: when a rank makes no progress for S seconds, every rank exits 1 naming its backend, size and "
             "last completed step; 0 = none"},
    {BENCH_OPT("inject-fault", CLI_CUSTOM, o.fault), .set = set_fault, .meta = "MODE:RANK:CALL[:SECONDS]",
     .group = BENCH_MEASURE,
     .help = "testing: rank RANK kills itself (kill), exits (exit) or sleeps SECONDS (stall, default 10) before its "
             "allreduce call number CALL"},
    CLI_OPT_SET(bench_args, "override a field (nccl.* settings become NCCL_* variables: nccl_tuning in --format json)"),
    CLI_OPT_SYSTEM(bench_args, CLI_HELP_SYSTEM),
    CLI_OPT_PLAN(bench_args, "a saved plan whose verify-pass payloads join the sweep"),
};
#undef BENCH_OPT

static int bench_check(cli_ctx *x)
{
    bench_args *a = x->args;
    a->o.collective = cfg_enum_index(plan_op_kind_names, bench_kinds[a->collective]);
    a->o.max_host_bytes = (size_t)a->max_host_gib << 30;
    /* The saved result says what it measured (backends, sizes, device, collective, path): an option that
     * would shape a measurement has nothing to act on. */
    char lb[64];
    const cli_opt *measure = cli_first_given(&x->parse, BENCH_MEASURE), *range = cli_first_given(&x->parse, BENCH_RANGE);
    if (a->from && measure)
        return util_usage_error("bench-allreduce", "%s applies to a measurement, not to --from (the saved result "
                                                  "says what it measured; --system, --set and SCENARIO steer the model)",
                               cli_opt_label(measure, lb, sizeof(lb)));
    if (a->sizes && range)
        return util_usage_error("bench-allreduce", "%s and --sizes both choose the sizes; give one of them",
                               cli_opt_label(range, lb, sizeof(lb)));
    return finish_args(a);
}

/* The verify pass's payloads of the timed collective (element counts each rank sends; the decode phase
 * without speculation). */
static void verify_counts(const plan *p, exec_bench_opts *o, size_t elem, bool say)
{
    const int cap = (int)(sizeof(o->verify_counts) / sizeof(o->verify_counts[0]));
    int left_out = 0;
    for (int ph = 0; ph < p->n_phases; ph++) {
        if (p->phases[ph].kind != PLAN_PHASE_VERIFY && p->phases[ph].kind != PLAN_PHASE_DECODE)
            continue;
        for (int i = 0; i < p->phases[ph].n_ops; i++) {
            const plan_op *op = &p->phases[ph].ops[i];
            if ((int)op->kind != o->collective)
                continue;
            bool dup = false;
            for (int v = 0; v < o->n_verify; v++)
                dup = dup || o->verify_counts[v] == op->count;
            if (dup)
                continue;
            if (o->n_verify == cap) {
                left_out++;
                continue;
            }
            o->verify_counts[o->n_verify++] = op->count;
            o->n_sizes = exec_bench_add_size(o->sizes, o->n_sizes, EXEC_BENCH_MAX_SIZES, op->count * (long long)elem);
        }
    }
    if (left_out && say)
        fprintf(stderr, "vpsim bench-allreduce: note: the verify pass reduces more than %d distinct payloads; the "
                        "first %d join the sweep\n",
                cap, cap);
}

static int emit(const bench_args *a, const exec_bench_result *res, int argc, char **argv)
{
    /* Written here, not by the skeleton: a run with wrong elements still writes its table, then exits 1. */
    util_buf text = {0};
    util_json j;
    if (a->c.format == CLI_FMT_JSON) {
        util_json_init(&j, true);
        exec_bench_json(&j, res, argc, argv);
        util_buf_printf(&j.out, "\n");
        text = j.out;
    } else if (a->c.format == CLI_FMT_CSV) {
        exec_bench_csv(&text, res);
    } else {
        exec_bench_table(&text, res);
    }
    int rc = cli_emit(&a->c, text.s ? text.s : "", text.len);
    util_buf_free(&text);
    return rc;
}

/* --from: no MPI, no device; the saved result compared with the model. */
static int compare_saved(cli_ctx *x)
{
    const bench_args *a = x->args;
    exec_bench_result res;
    char err[1024];
    if (exec_bench_load(a->from, &res, err, sizeof(err))) {
        fprintf(stderr, "vpsim bench-allreduce: --from: %s\n", err);
        return VP_EXIT_USAGE;
    }
    int rc = cli_ctx_load(x);
    if (rc == 0) {
        if (x->have_sc) {
            bench_attach_model(&res, &x->sc);
            rc = emit(a, &res, x->argc, x->argv);
        } else {
            rc = util_usage_error("bench-allreduce", "--from needs a scenario or the default one (not --plan alone)");
        }
    }
    exec_bench_result_free(&res);
    return rc;
}

static int bench_run(cli_ctx *x)
{
    bench_args *a = x->args;
    if (a->from)
        return compare_saved(x);
    dist_job *d = &x->d;
    int rc;
    if (a->skipped[0] && d->rank == 0)
        fprintf(stderr, "vpsim bench-allreduce: note: --backend all on the %s device: skipping %s (they need the cuda "
                        "device)\n",
                cfg_device_names[a->o.device], a->skipped);
    if (a->lacking[0] && d->rank == 0)
        fprintf(stderr, "vpsim bench-allreduce: note: --collective %s: leaving out %s (no %s)\n",
                plan_op_kind_names[a->o.collective], a->lacking, plan_op_kind_names[a->o.collective]);
    if ((rc = cli_p2p_check("bench-allreduce", a->o.p2p, a->o.device, a->o.backends, a->o.n_backends,
                            a->o.with_policy ? &a->o.policy : NULL, d->rank == 0)) != 0 ||
        (rc = cli_device_ready("bench-allreduce", d, a->o.device)) != 0 ||
        (rc = cli_check_fault_rank("bench-allreduce", &a->o.fault, d)) != 0 ||
        (rc = bench_fit_split_sizes(&a->o, a->sizes != NULL, d)) != 0)
        return rc;
    int timeout = a->timeout >= 0 ? a->timeout : EXEC_WATCH_DEFAULT_S;
    /* A scenario is loaded when one is named, or when --set, --system or --model need one (the default). */
    const cli_common *c = &a->c;
    if (c->scenario_path || c->plan_path || c->n_sets || c->system_path || a->model) {
        if ((rc = cli_ctx_load(x)) != 0)
            return rc;
        /* Only a scenario the user named adds its verify payloads to the sweep. */
        char why[256];
        if (c->scenario_path || c->plan_path)
            verify_counts(&x->p, &a->o, exec_find_device(a->o.device, why, sizeof(why))->elem_bytes, d->rank == 0);
        else if (!a->model && d->rank == 0)
            fprintf(stderr, "vpsim bench-allreduce: note: without a SCENARIO, --set and --system reach only "
                            "run.timeout and nccl.* here (and the model, with --model); name a scenario to add its verify-pass "
                            "payloads to the sweep\n");
        if (x->have_sc && a->timeout < 0)
            timeout = x->sc.run.timeout;
        if (x->have_sc)
            a->o.nccl_tuning = x->sc.nccl;
    }
    exec_watch_start(d, "bench-allreduce", timeout);
    exec_bench_result res;
    rc = exec_bench_run(d, &a->o, &res);
    exec_watch_step("reporting the results");
    if (rc == 0) {
        int unsupported = 0;
        for (int k = 0; k < res.n_backends; k++)
            unsupported += !res.backends[k].ran;
        if (d->rank == 0) {
            if (a->model && x->have_sc)
                bench_attach_model(&res, &x->sc);
            rc = emit(a, &res, x->argc, x->argv);
            if (res.wrong_total)
                fprintf(stderr, "vpsim bench-allreduce: %lld wrong elements (see #wrong)\n", res.wrong_total);
            if (unsupported && a->explicit_backends)
                fprintf(stderr, "vpsim bench-allreduce: %d requested backend(s) could not run here (see the "
                                "'unsupported' rows)\n",
                        unsupported);
        }
        if (rc == 0 && (res.wrong_total || (unsupported && a->explicit_backends)))
            rc = VP_EXIT_FAIL;
        exec_bench_result_free(&res);
    }
    return rc;
}

/* --from compares a saved result: no MPI job. */
static bool bench_mpi(const void *args) { return ((const bench_args *)args)->from == NULL; }

static const cli_cmd bench_cmd = {
    .spec = {.name = "bench-allreduce", .synopsis = "mpirun -np N vpsim bench-allreduce", .pos_usage = "[SCENARIO]",
             .pos = CLI_POS_SCENARIO, .common_offset = offsetof(bench_args, c), .opts = bench_opts,
             .n_opts = CLI_N(bench_opts),
             .about = "Time allreduce (bf16 sum on cuda, float on cpu) for each backend over a size sweep, like\n"
                      "nccl-tests: time per call (max over ranks), algbw = size / time, busbw = algbw x 2(n-1)/n,\n"
                      "#wrong. Every size's last timed result is checked against an exact pattern sum. Sizes\n"
                      "accept K/M/G suffixes (KiB/MiB/GiB). With SCENARIO, the payloads its verify pass reduces\n"
                      "are added to the sweep and marked (the table's 'verify pass' column, verify_pass in JSON and\n"
                      "CSV). nccl-tests' spellings -c, -G, -d, --warmup_iters, --cudagraph, --datatype also work.\n",
             .after = "environment: VPSIM_COMM_TIMEOUT_MS bounds every wait of the custom kernels (default 5000).\n",
             .examples = "mpirun -np 8 vpsim bench-allreduce configs/default.yaml -b 1K -e 1M --graph --check\n"
                         "mpirun -np 4 --oversubscribe vpsim bench-allreduce --device cpu --backend mpi --check\n"
                         "mpirun -np 2 vpsim bench-allreduce --collective reduce_scatter --backend nccl,oneshot --check\n"
                         "mpirun -np 2 vpsim bench-allreduce --system configs/systems/h200-2x-nvlink.yaml --model --graph\n"
                         "vpsim bench-allreduce --from ar.json --system configs/systems/h200-2x-nvlink.yaml\n"
                         "mpirun -np 2 vpsim bench-allreduce --backend nccl --set nccl.channels=1 --model\n"
                         "                  (nccl.* settings become NCCL_* variables: nccl_tuning in --format json)\n"},
    .args_size = sizeof(bench_args),
    .init = bench_init,
    .check = bench_check,
    .mpi = bench_mpi,
    .run = bench_run,
};

int cmd_bench_allreduce(int argc, char **argv) { return cli_command_main(&bench_cmd, argc, argv); }
