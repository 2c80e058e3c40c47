/* vpsim bench-allreduce: every allreduce backend (or another collective's, --collective) over a size sweep, as an nccl-tests-style table or
 * JSON (sim/exec/comm_bench.c runs it). Works on the CPU device with the MPI backend, so CI tests the
 * harness under mpirun. */
#include "cli.h"

#include "../config/cfg_schema.h"
#include "../exec/exec_bench.h"
#include "bench_collective.h"
#include "bench_model.h"
#include "../config/cfg_policy.h"
#include "../exec/exec.h"
#include "../exec/exec_watch.h"
#include "../util/util.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static void bench_help(void)
{
    printf("usage: mpirun -np N vpsim bench-allreduce [SCENARIO] [--backend LIST] [-b MIN] [-e MAX] [-f FACTOR]\n"
           "                 [--collective KIND] [--sizes LIST] [-n|--iters N] [-w|--warmup N] [--graph|-G N]\n"
           "                 [--check|-c 0|1] [--p2p direct|sysmem]\n"
           "                 [-d TYPE] [--device cuda|cpu] [--format table|json|csv] [--out FILE] [--set K=V]...\n"
           "\n"
           "Time allreduce (bf16 sum on cuda, float on cpu) for each backend over a size sweep, like\n"
           "nccl-tests: time per call (max over ranks), algbw = size / time, busbw = algbw x 2(n-1)/n,\n"
           "#wrong. Every size's last timed result is checked against an exact pattern sum. Sizes\n"
           "accept K/M/G suffixes (KiB/MiB/GiB). With SCENARIO, the payloads its verify pass reduces\n"
           "are added to the sweep and marked (the table's 'verify pass' column, verify_pass in JSON and\n"
           "CSV). nccl-tests' spellings -c, -G, -d, --warmup_iters, --cudagraph, --datatype also work.\n"
           "\n"
           "options:\n");
    /* The backends as the list has them (cfg_lists.h), so a new list line shows here by itself. */
    char all[256], gpu[160], host[160];
    bench_reducing_backends(all, sizeof(all));
    bench_default_backends(CFG_DEVICE_CUDA, gpu, sizeof(gpu));
    bench_default_backends(CFG_DEVICE_CPU, host, sizeof(host));
    printf("  --backend LIST    comma-separated, of: %s, or all\n"
           "                    default on cuda: %s\n"
           "                    default on cpu: %s\n"
           "                    all: every backend the device can run (the others named in a note). A\n"
           "                    backend that cannot run here gets an 'unsupported' row with the reason;\n"
           "                    one named explicitly makes the exit status 1.\n",
           all, gpu, host);
    printf(""
           "  --collective K    what to time: allreduce (default), allgather, reduce_scatter or alltoall;\n"
           "                    a size is what each rank sends (reduce_scatter, alltoall: rounded down to\n"
           "                    a multiple of the ranks); busbw, the checks and --model follow the kind.\n"
           "                    A backend named in --backend that lacks it: error, exit 2; the default\n"
           "                    list and 'all' leave such backends out with a note\n"
           "  -b, --minbytes S  smallest size (default 16)\n"
           "  -e, --maxbytes S  largest size (default 8M)\n"
           "  -f, --stepfactor F  multiply the size by F each step (default 2)\n"
           "  --sizes LIST      explicit sizes instead of -b/-e/-f, e.g. 16,18,1000,43008,8M (at most 112\n"
           "                    distinct sizes; every item must be a size)\n"
           "  --policy SPEC     also run a per-size selection as a server would, e.g.\n"
           "                    \"oneshot<=256K,twoshot<=8M,nccl\" (first rule whose bound covers the size)\n"
           "  -n, --iters N     timed back-to-back calls per size (default 20)\n"
           "  -w, --warmup N    untimed calls per size first (default 5)\n"
           "  --graph           capture the N calls as one CUDA graph and time its launch (cuda; ignored\n"
           "                    on cpu, which has no graphs)\n"
           "  -G, --cudagraph N nccl-tests' spelling: N > 0 is --graph, 0 is eager (vpsim launches its\n"
           "                    graph of -n calls once per size; N is not a launch count here)\n"
           "  --check, -c 1     also check random data (within bf16/fp32 tolerance of an fp64 reference\n"
           "                    and bit-identical on every rank) and an in-place call, per size;\n"
           "                    reduce_scatter: random data on each rank's block, no in-place call;\n"
           "                    allgather, alltoall: a second pattern check; --check 0 / -c 0: only the\n"
           "                    pattern check of every size\n"
           "  --p2p MODE        how oneshot, twoshot and push reach their peers: direct (default; GPU memory\n"
           "                    mapped with CUDA IPC) or sysmem (every buffer a peer touches in pinned host\n"
           "                    memory mapped into every rank; needs no P2P). Other backends run as usual;\n"
           "                    sysmem with none of the three, or on cpu, is an error (exit 2)\n"
           "  -d, --datatype T  the type the device reduces, checked (each device has one): bfloat16\n"
           "                    (bf16) on cuda, float (float32) on cpu\n"
           "  --device D        cuda or cpu (default cuda in CUDA builds)\n");
    printf(
           "  --format F        table (default), json (schema vpsim.bench_allreduce/1) or csv (one line\n"
           "                    per size and backend, a header line first)\n"
           "  --out FILE        write the output there (atomically) instead of stdout: a regular file or a\n"
           "                    new name in an existing directory; a symbolic link is followed and the\n"
           "                    file it leads to replaced; anything else is refused before any work\n"
           "  --model           compare every row with the model of the scenario's system (after --system\n"
           "                    and --set; default scenario when none is given): adds model (us) and error\n"
           "                    columns; use --set system.measured.use=false for the formulas alone\n"
           "  --from FILE       no measurement: load a saved --format json result and compare it with the\n"
           "                    model (implies --model), e.g. after editing the system file\n"
           "  --max-host-memory GIB  cpu device: refuse sizes whose buffers need more host memory per\n"
           "                    rank (default 4, as `vpsim run`); exit 2 before anything is allocated\n"
           "  --timeout S       watchdog: when a rank makes no progress for S seconds, every rank exits 1\n"
           "                    naming its backend, size and last completed step (default: the\n"
           "                    scenario's run.timeout, else 60; 0 = none)\n"
           "  --inject-fault MODE:RANK:CALL[:SECONDS]\n"
           "                    testing: rank RANK kills itself (kill), exits (exit) or sleeps SECONDS\n"
           "                    (stall, default 10) before its allreduce call number CALL\n"
           "\n"
           "environment: VPSIM_COMM_TIMEOUT_MS bounds every wait of the custom kernels (default 5000).\n"
           "\n"
           "examples:\n"
           "  mpirun -np 8 vpsim bench-allreduce configs/default.yaml -b 1K -e 1M --graph --check\n"
           "  mpirun -np 4 --oversubscribe vpsim bench-allreduce --device cpu --backend mpi --check\n"
           "  mpirun -np 2 vpsim bench-allreduce --collective reduce_scatter --backend nccl,oneshot --check\n"
           "  mpirun -np 2 vpsim bench-allreduce --system configs/systems/h200-2x-nvlink.yaml --model --graph\n"
           "  vpsim bench-allreduce --from ar.json --system configs/systems/h200-2x-nvlink.yaml\n"
           "  mpirun -np 2 vpsim bench-allreduce --backend nccl --set nccl.channels=1 --model\n"
           "                    (nccl.* settings become NCCL_* variables: nccl_tuning in --format json)\n");
}

enum {
    OPT_BACKEND = CLI_OPT_FIRST_PRIVATE,
    OPT_SIZES,
    OPT_GRAPH,
    OPT_DEVICE,
    OPT_FAULT,
    OPT_POLICY,
    OPT_TIMEOUT,
    OPT_MODEL,
    OPT_FROM,
    OPT_COLLECTIVE,
    OPT_P2P,
    OPT_MAX_HOST,
};

typedef struct bench_args {
    cli_common c;
    exec_bench_opts o;
    bool explicit_backends;
    long long min, max, factor;
    int timeout; /* -1: the scenario's run.timeout, else the default */
    bool model;  /* compare with the model */
    bool p2p_set; /* --p2p given */
    const char *from; /* a saved result to compare instead of measuring */
    const char *sizes;
    const char *measure_opt; /* the first option given that shapes a measurement (none applies to --from) */
    const char *range_opt;   /* the first of -b/-e/-f given (--sizes replaces them) */
    const char *backends; /* --backend as given (NULL: the device's default list) */
    const char *datatype; /* -d/--datatype as given */
    char skipped[160];    /* backends "all" left out on this device, for one note */
    char lacking[160];    /* backends of the default list or "all" without the --collective */
} bench_args;

static int parse_size_arg(const char *opt, const char *arg, long long *out)
{
    if (cfg_parse_bytes(arg, out) || *out < 1)
        return cli_usage_error("bench-allreduce", "%s '%s': expected a size in bytes, optionally with K, M or G", opt,
                               arg);
    return 0;
}


/* --check [0|1], -c 0|1 (nccl-tests spells it `-c 1`): `--check` alone is 1; a following "0" or "1" is
 * its value (getopt gives an optional argument only as --check=1). */
static int take_check(const char *arg, int argc, char **argv, bench_args *a)
{
    if (!arg && optind < argc && (!strcmp(argv[optind], "0") || !strcmp(argv[optind], "1")))
        arg = argv[optind++];
    int v = 1;
    if (arg && cli_parse_int("bench-allreduce", "-c/--check", arg, 0, 1, &v))
        return VP_EXIT_USAGE;
    a->o.check = v == 1;
    return 0;
}

static int take_device(const char *arg, bench_args *a)
{
    a->o.device = cfg_enum_index(cfg_device_names, arg);
    if (a->o.device >= 0)
        return 0;
    char list[64];
    return cli_usage_error("bench-allreduce", "--device '%s': valid choices: %s", arg,
                           cfg_enum_list(cfg_device_names, list, sizeof(list)));
}

/* -d/--datatype names the type the device reduces (nccl-tests' names and vpsim's): it is checked, not
 * chosen, since each device reduces one type (bf16 on cuda, float on cpu). */
static int check_datatype(const bench_args *a)
{
    static const char *const bf16_names[] = {"bfloat16", "bf16", NULL}, *const f32_names[] = {"float", "float32", NULL};
    const char *const *ok = a->o.device == CFG_DEVICE_CUDA ? bf16_names : f32_names;
    if (!a->datatype || cfg_enum_index(ok, a->datatype) >= 0)
        return 0;
    return cli_usage_error("bench-allreduce", "-d/--datatype '%s': the %s device reduces %s (valid: %s, %s)",
                           a->datatype, cfg_device_names[a->o.device], ok[0], ok[0], ok[1]);
}

/* The name of an option that only shapes a measurement (NULL for the others): --from loads a saved
 * result, so each of these would be taken and ignored there; said once, in one place. */
static const char *measure_option_name(int opt)
{
    switch (opt) {
    case OPT_BACKEND: return "--backend";
    case 'b': return "-b/--minbytes";
    case 'e': return "-e/--maxbytes";
    case 'f': return "-f/--stepfactor";
    case OPT_SIZES: return "--sizes";
    case 'n': return "-n/--iters";
    case 'w': return "-w/--warmup";
    case OPT_GRAPH: return "--graph";
    case 'G': return "-G/--cudagraph";
    case 'c': return "--check";
    case 'd': return "-d/--datatype";
    case OPT_DEVICE: return "--device";
    case OPT_FAULT: return "--inject-fault";
    case OPT_POLICY: return "--policy";
    case OPT_COLLECTIVE: return "--collective";
    case OPT_TIMEOUT: return "--timeout";
    case OPT_P2P: return "--p2p";
    case OPT_MAX_HOST: return "--max-host-memory";
    default: return NULL;
    }
}

/* One option of the getopt loop: 0, -1 after --help, or VP_EXIT_USAGE. */
static int take_option(int opt, int argc, char **argv, bench_args *a)
{
    if (!a->measure_opt)
        a->measure_opt = measure_option_name(opt);
    if (!a->range_opt && (opt == 'b' || opt == 'e' || opt == 'f'))
        a->range_opt = measure_option_name(opt);
    switch (opt) {
    case 'h': bench_help(); return -1;
    case OPT_BACKEND: a->backends = optarg; return 0;
    case 'b': return parse_size_arg("-b/--minbytes", optarg, &a->min);
    case 'e': return parse_size_arg("-e/--maxbytes", optarg, &a->max);
    case 'f': {
        int f;
        if (cli_parse_int("bench-allreduce", "-f/--stepfactor", optarg, 2, 1 << 20, &f))
            return VP_EXIT_USAGE;
        a->factor = f;
        return 0;
    }
    case OPT_SIZES: a->sizes = optarg; return 0;
    case 'n': return cli_parse_int("bench-allreduce", "-n/--iters", optarg, 1, 1000000, &a->o.iters);
    case 'w': return cli_parse_int("bench-allreduce", "-w/--warmup", optarg, 0, 1000000, &a->o.warmup);
    case OPT_GRAPH: a->o.graph = true; return 0;
    case 'G': {
        int n; /* nccl-tests' graph launch count: vpsim captures -n calls per graph and launches it once */
        if (cli_parse_int("bench-allreduce", "-G/--cudagraph", optarg, 0, 1000000, &n))
            return VP_EXIT_USAGE;
        a->o.graph = n > 0;
        return 0;
    }
    case 'c': return take_check(optarg, argc, argv, a);
    case 'd': a->datatype = optarg; return 0;
    case OPT_DEVICE: return take_device(optarg, a);
    case OPT_POLICY: {
        char why[256];
        if (cfg_policy_parse(optarg, &a->o.policy, why, sizeof(why)))
            return cli_usage_error("bench-allreduce", "--policy: %s", why);
        a->o.with_policy = true;
        return 0;
    }
    case OPT_FAULT: return cli_parse_fault("bench-allreduce", optarg, &a->o.fault);
    case OPT_MODEL: a->model = true; return 0;
    case OPT_COLLECTIVE: return bench_collective_parse(optarg, &a->o);
    case OPT_P2P: a->p2p_set = true; return cli_parse_enum("bench-allreduce", "--p2p", optarg, comm_p2p_names, &a->o.p2p);
    case OPT_FROM:
        a->from = optarg;
        a->model = true;
        return 0;
    case OPT_TIMEOUT: return cli_parse_int("bench-allreduce", "--timeout", optarg, 0, 86400, &a->timeout);
    case OPT_MAX_HOST: {
        int gib;
        if (cli_parse_int("bench-allreduce", "--max-host-memory", optarg, 1, 1 << 20, &gib))
            return VP_EXIT_USAGE;
        a->o.max_host_bytes = (size_t)gib << 30;
        return 0;
    }
    default: return cli_take_common("bench-allreduce", &a->c, opt, optarg, argv);
    }
}

/* After the options: the backends and sizes, which depend on the device. */
static int finish_args(bench_args *a)
{
    char why[256];
    const exec_device *dev = exec_find_device(a->o.device, why, sizeof(why));
    if (!dev)
        return cli_usage_error("bench-allreduce", "%s", why);
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
        return cli_usage_error("bench-allreduce", "%s", why);
    a->o.n_sizes = n;
    return 0;
}

/* Returns 0, -1 after --help, or VP_EXIT_USAGE. */
static int parse_args(int argc, char **argv, bench_args *a)
{
    static const struct option longopts[] = {
        CLI_COMMON_LONGOPTS,
        {"backend", required_argument, NULL, OPT_BACKEND},
        {"minbytes", required_argument, NULL, 'b'},
        {"maxbytes", required_argument, NULL, 'e'},
        {"stepfactor", required_argument, NULL, 'f'},
        {"sizes", required_argument, NULL, OPT_SIZES},
        {"iters", required_argument, NULL, 'n'},
        {"warmup", required_argument, NULL, 'w'},
        {"warmup_iters", required_argument, NULL, 'w'},
        {"graph", no_argument, NULL, OPT_GRAPH},
        {"cudagraph", required_argument, NULL, 'G'},
        {"check", optional_argument, NULL, 'c'},
        {"datatype", required_argument, NULL, 'd'},
        {"device", required_argument, NULL, OPT_DEVICE},
        {"inject-fault", required_argument, NULL, OPT_FAULT},
        {"policy", required_argument, NULL, OPT_POLICY},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"model", no_argument, NULL, OPT_MODEL},
        {"from", required_argument, NULL, OPT_FROM},
        {"collective", required_argument, NULL, OPT_COLLECTIVE},
        {"p2p", required_argument, NULL, OPT_P2P},
        {"max-host-memory", required_argument, NULL, OPT_MAX_HOST},
        {0, 0, 0, 0},
    };
    memset(a, 0, sizeof(*a));
    a->o.device = VPSIM_HAVE_CUDA ? CFG_DEVICE_CUDA : CFG_DEVICE_CPU;
    a->o.iters = 20;
    a->o.warmup = 5;
    a->o.seed = 1234;
    a->o.collective = PLAN_OP_ALLREDUCE;
    a->o.max_host_bytes = (size_t)EXEC_MAX_HOST_GIB_DEFAULT << 30;
    a->timeout = -1;
    a->min = 16;
    a->max = 8LL << 20;
    a->factor = 2;
    optind = 1;
    opterr = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, ":hb:e:f:n:w:G:c:d:", longopts, NULL)) != -1) {
        int rc = take_option(opt, argc, argv, a);
        if (rc)
            return rc;
    }
    if (cli_positional(&a->c, argc, argv, optind, "bench-allreduce"))
        return VP_EXIT_USAGE;
    /* The saved result says what it measured (backends, sizes, device, collective, path): an option that
     * would shape a measurement has nothing to act on. */
    if (a->from && a->measure_opt)
        return cli_usage_error("bench-allreduce", "%s applies to a measurement, not to --from (the saved result "
                                                  "says what it measured; --system, --set and SCENARIO steer the model)",
                               a->measure_opt);
    if (a->sizes && a->range_opt)
        return cli_usage_error("bench-allreduce", "%s and --sizes both choose the sizes; give one of them",
                               a->range_opt);
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
static int compare_saved(bench_args *a, int argc, char **argv)
{
    exec_bench_result res;
    char err[1024];
    if (exec_bench_load(a->from, &res, err, sizeof(err))) {
        fprintf(stderr, "vpsim bench-allreduce: --from: %s\n", err);
        return VP_EXIT_USAGE;
    }
    cfg_scenario sc;
    bool have_sc = false;
    plan p;
    int rc = cli_load(&a->c, &sc, &have_sc, &p);
    if (rc == 0) {
        plan_free(&p);
        if (have_sc) {
            bench_attach_model(&res, &sc);
            cfg_scenario_free(&sc);
            rc = emit(a, &res, argc, argv);
        } else {
            rc = cli_usage_error("bench-allreduce", "--from needs a scenario or the default one (not --plan alone)");
        }
    }
    exec_bench_result_free(&res);
    return rc;
}

int cmd_bench_allreduce(int argc, char **argv)
{
    bench_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc < 0)
        return VP_EXIT_OK; /* --help */
    if (rc)
        return rc;
    if (a.from)
        return compare_saved(&a, argc, argv);
    dist_job d;
    dist_init(&d, &argc, &argv);
    a.c.quiet = d.rank != 0;
    if (a.skipped[0] && d.rank == 0)
        fprintf(stderr, "vpsim bench-allreduce: note: --backend all on the %s device: skipping %s (they need the cuda "
                        "device)\n",
                cfg_device_names[a.o.device], a.skipped);
    if (a.lacking[0] && d.rank == 0)
        fprintf(stderr, "vpsim bench-allreduce: note: --collective %s: leaving out %s (no %s)\n",
                plan_op_kind_names[a.o.collective], a.lacking, plan_op_kind_names[a.o.collective]);
    if ((rc = cli_p2p_check("bench-allreduce", a.o.p2p, a.o.device, a.o.backends, a.o.n_backends,
                             a.o.with_policy ? &a.o.policy : NULL, d.rank == 0)) != 0 ||
        (rc = cli_device_ready("bench-allreduce", &d, a.o.device)) != 0 ||
        (rc = cli_check_fault_rank("bench-allreduce", &a.o.fault, &d)) != 0 ||
        (rc = bench_fit_split_sizes(&a.o, a.sizes != NULL, &d)) != 0) {
        dist_finalize(&d);
        return rc;
    }
    int timeout = a.timeout >= 0 ? a.timeout : EXEC_WATCH_DEFAULT_S;
    cfg_scenario sc;
    bool have_sc = false;
    /* A scenario is loaded when one is named, or when --set, --system or --model need one (the default). */
    if (a.c.scenario_path || a.c.plan_path || a.c.n_sets || a.c.system_path || a.model) {
        plan p;
        rc = cli_load(&a.c, &sc, &have_sc, &p);
        if (rc) {
            dist_finalize(&d);
            return rc;
        }
        /* Only a scenario the user named adds its verify payloads to the sweep. */
        char why[256];
        if (a.c.scenario_path || a.c.plan_path)
            verify_counts(&p, &a.o, exec_find_device(a.o.device, why, sizeof(why))->elem_bytes, d.rank == 0);
        else if (!a.model && d.rank == 0)
            fprintf(stderr, "vpsim bench-allreduce: note: without a SCENARIO, --set and --system reach only "
                            "run.timeout and nccl.* here (and the model, with --model); name a scenario to add its verify-pass "
                            "payloads to the sweep\n");
        plan_free(&p);
        if (have_sc && a.timeout < 0)
            timeout = sc.run.timeout;
        if (have_sc)
            a.o.nccl_tuning = sc.nccl;
    }
    exec_watch_start(&d, "bench-allreduce", timeout);
    exec_bench_result res;
    rc = exec_bench_run(&d, &a.o, &res);
    exec_watch_step("reporting the results");
    if (rc == 0) {
        int unsupported = 0;
        for (int k = 0; k < res.n_backends; k++)
            unsupported += !res.backends[k].ran;
        if (d.rank == 0) {
            if (a.model && have_sc)
                bench_attach_model(&res, &sc);
            rc = emit(&a, &res, argc, argv);
            if (res.wrong_total)
                fprintf(stderr, "vpsim bench-allreduce: %lld wrong elements (see #wrong)\n", res.wrong_total);
            if (unsupported && a.explicit_backends)
                fprintf(stderr, "vpsim bench-allreduce: %d requested backend(s) could not run here (see the "
                                "'unsupported' rows)\n",
                        unsupported);
        }
        if (rc == 0 && (res.wrong_total || (unsupported && a.explicit_backends)))
            rc = VP_EXIT_FAIL;
        exec_bench_result_free(&res);
    }
    if (have_sc)
        cfg_scenario_free(&sc);
    exec_watch_step("MPI_Finalize (waiting for every rank)");
    dist_finalize(&d);
    exec_watch_stop();
    return rc;
}
