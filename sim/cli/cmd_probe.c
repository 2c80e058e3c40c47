/* vpsim probe: measure the box the job runs on once — the link quantities between every
 * pair of GPUs and to host memory, the launch costs (exec_links_measure), the collective curves in
 * CUDA graphs (exec_bench_run) and the topology as NVML reports it — and write a whole system file
 * from them, each value with its provenance, the p2p mode inferred and anomalies named (probe_text.c). */
#include "../calib/cal_facts.h"
#include "cli.h"
#include "../calib/probe_text.h"

#include "../comm/comm_nccl_log.h"
#include "../config/cfg_tree.h"
#include "../exec/dev_nvml_topo.h"
#include "../exec/exec.h"
#include "../exec/exec_bench.h"
#include "../exec/exec_links.h"
#include "../exec/exec_mpi_costs.h"
#include "../exec/exec_watch.h"
#include "../util/util.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PROBE_WATCH_S 300 /* seconds a rank may go without progress before the watchdog ends the job */

#define PROBE_SCENARIO_SIZES 4 /* verify-pass payloads of the scenario added to a curve, at most */

typedef struct probe_args {
    cli_common c;
    const char *base; /* --base: the base chosen explicitly (a device mismatch is then written, not refused) */
    int device;       /* cfg_device, -1: the scenario's */
    bool quick, virtual_ok, no_curves;
    int reps;
    /* The scenario's verify-pass payloads per rank in bytes, [0] allreduce, [1] all-gather: the sizes the
     * model is asked about most (43,008 B at the default) join the curves, so it need not interpolate. */
    long long verify[2][PROBE_SCENARIO_SIZES];
    int n_verify[2];
} probe_args;

static void probe_init(void *args) { ((probe_args *)args)->device = -1; }

static const cli_opt probe_opts[] = {
    CLI_OPT_OUT(probe_args, "write the system file there (atomically); default: standard output"),
    {.name = "quick", .kind = CLI_FLAG, .offset = offsetof(probe_args, quick),
     .help = "fewer repetitions, smaller transfers, 3 curve sizes (CI, self-tests)"},
    {.name = "device", .kind = CLI_ENUM, .offset = offsetof(probe_args, device), .choices = cfg_device_names,
     .meta = "D", .dflt_text = "the scenario's run.device", .help = "where to measure"},
    CLI_OPT_SYSTEM(probe_args, "the scenario's system file, the base by default"),
    {.name = "base", .kind = CLI_STRING, .offset = offsetof(probe_args, base), .meta = "FILE",
     .help = "the base system file, chosen explicitly: a base naming another GPU than this one's is refused without "
             "it, written with the mismatch in the header with it"},
    CLI_OPT_SET(probe_args, CLI_HELP_SET),
    {.name = "virtual", .kind = CLI_FLAG, .offset = offsetof(probe_args, virtual_ok),
     .help = "allow more ranks than GPUs on a host (a self-test)"},
    {.name = "no-curves", .kind = CLI_FLAG, .offset = offsetof(probe_args, no_curves),
     .help = "skip the collective curves (the base's collective tables stay)"},
    {.name = "reps", .kind = CLI_INT, .offset = offsetof(probe_args, reps), .lo = 1, .hi = 10000, .meta = "N",
     .dflt_text = "exec_links' own", .help = "repetitions per link quantity, the median kept"},
    {.name = "format", .kind = CLI_ENUM, .offset = offsetof(probe_args, c.format), .choices = cli_format_names,
     .meta = "FMT", .hidden = true}, /* a system file is YAML: anything but the default is refused */
    CLI_OPT_REFUSED("plan", "--plan: probe measures the box, not a plan"),
};

static int probe_check(cli_ctx *x)
{
    if (x->c->format != CLI_FMT_TABLE)
        return util_usage_error("probe", "--format: probe writes a YAML system file, no other format");
    return VP_EXIT_OK;
}

/* The checks before anything is measured (every rank): 0, or VP_EXIT_USAGE after rank 0 said why. */
static int check_job(const probe_args *a, const dist_job *d, int device)
{
    if (d->size > CFG_PATHS_MAX) {
        if (d->rank == 0)
            fprintf(stderr, "vpsim probe: %d ranks: a probe covers at most %d GPUs (paths.gpus)\n", d->size,
                    CFG_PATHS_MAX);
        return VP_EXIT_USAGE;
    }
    int rc = cli_device_ready("probe", d, device);
    if (rc || device != CFG_DEVICE_CUDA || a->virtual_ok)
        return rc;
    /* Ranks per host against the GPUs there; NVML unknown: the measurement's virtual_ranks decides later. */
    char why[160] = "";
    const int gpus = dev_nvml_gpu_count(why, sizeof(why));
    const bool bad = gpus >= 0 && d->local_size > gpus;
    if (dist_all(!bad))
        return 0;
    if (d->rank == 0)
        fprintf(stderr, "vpsim probe: %d ranks on %s but %d GPU(s) visible: the probe measures one GPU per rank; "
                        "--virtual runs several ranks per GPU as a self-test of the pipeline\n",
                d->local_size, d->host, gpus);
    return VP_EXIT_USAGE;
}

/* The file describes the box it measured (cal_facts.h): every rank on one GPU model, and that model the
 * one the base names, unless --base chose the base. 0, or VP_EXIT_USAGE on every rank after rank 0 (or
 * the odd rank) said why. `mismatch` (rank 0): the difference written into the header. */
static int facts_check(const probe_args *a, const dist_job *d, int device, const char *base, exec_facts *f,
                       char *mismatch, size_t len)
{
    exec_device_facts(d, device, f);
    char first[sizeof(f->gpu_name)];
    memcpy(first, f->gpu_name, sizeof(first));
    dist_bcast(first, sizeof(first), 0);
    const bool same = strcmp(first, f->gpu_name) == 0;
    if (!same)
        fprintf(stderr, "vpsim probe: rank %d runs on %s, rank 0 on %s: a system file describes one GPU model\n",
                d->rank, f->gpu_name, first);
    if (!dist_all(same))
        return VP_EXIT_USAGE;
    int rc = d->rank == 0 ? cal_facts_check("probe", f, base, a->base != NULL, mismatch, len) : 0;
    dist_bcast(&rc, sizeof(rc), 0);
    return rc;
}

/* Payload sizes of a curve: 4 KiB to 1 MiB by factors of 2 (--quick: 4 KiB, 64 KiB, 1 MiB), where the
 * verify pass's allreduces of the shipped scenarios lie, and the scenario's own payloads of that kind. */
static int curve_sizes(const probe_args *a, int which, long long *sizes)
{
    int n = 0;
    for (long long s = 4096; s <= (1 << 20); s *= a->quick ? 16 : 2)
        sizes[n++] = s;
    for (int i = 0; i < a->n_verify[which]; i++)
        n = exec_bench_add_size(sizes, n, EXEC_BENCH_MAX_SIZES, a->verify[which][i]);
    return n;
}

/* The verify (or plain decode) pass's distinct payloads of collective `kind`, in bytes of `elem`-byte
 * elements, the first PROBE_SCENARIO_SIZES of them within the curves' 4 KiB - 1 MiB. */
static int scenario_sizes(const plan *p, int kind, size_t elem, long long *out)
{
    int n = 0;
    for (int ph = 0; ph < p->n_phases; ph++) {
        if (p->phases[ph].kind != PLAN_PHASE_VERIFY && p->phases[ph].kind != PLAN_PHASE_DECODE)
            continue;
        for (int i = 0; i < p->phases[ph].n_ops && n < PROBE_SCENARIO_SIZES; i++) {
            const plan_op *op = &p->phases[ph].ops[i];
            const long long bytes = op->count * (long long)elem;
            bool dup = false;
            for (int k = 0; k < n; k++)
                dup = dup || out[k] == bytes;
            if ((int)op->kind == kind && !dup && bytes >= 4096 && bytes <= (1 << 20))
                out[n++] = bytes;
        }
    }
    return n;
}

/* One exec_bench_run of `collective` over `backends`, its rows copied into curves (rank 0's). Returns
 * the count added. */
static int run_curves(dist_job *d, const probe_args *a, int device, int collective, const int *backends, int nb,
                      const char *key_prefix, probe_curve *out)
{
    exec_bench_opts o;
    memset(&o, 0, sizeof(o));
    o.device = device;
    o.collective = collective;
    memcpy(o.backends, backends, (size_t)nb * sizeof(int));
    o.n_backends = nb;
    o.n_sizes = curve_sizes(a, collective == PLAN_OP_ALLREDUCE ? 0 : 1, o.sizes);
    o.iters = a->quick ? 5 : 20;
    o.warmup = a->quick ? 2 : 5;
    o.graph = true; /* ignored by a device without graphs (cpu) */
    o.seed = 1234;
    exec_bench_result res;
    memset(&res, 0, sizeof(res));
    if (exec_bench_run(d, &o, &res) != 0)
        return 0;
    for (int k = 0; k < res.n_backends && k < nb; k++) {
        const exec_bench_backend *b = &res.backends[k];
        probe_curve *c = &out[k];
        memset(c, 0, sizeof(*c));
        snprintf(c->key, sizeof(c->key), "%s%s", key_prefix, cfg_backend_keys[backends[k]]);
        snprintf(c->label, sizeof(c->label), "%s %s", cfg_backend_names[backends[k]], plan_op_kind_names[collective]);
        c->ran = b->ran;
        snprintf(c->why, sizeof(c->why), "%s", b->ran ? "" : b->why);
        c->graph = b->graph;
        c->iters = o.iters;
        for (int i = 0; i < b->n_rows && c->n < CFG_SYS_TABLE_MAX; i++) {
            c->bytes[c->n] = (double)b->rows[i].bytes;
            c->us[c->n++] = b->rows[i].time_us;
        }
        if (c->ran && res.wrong_total) {
            c->ran = false;
            snprintf(c->why, sizeof(c->why), "%lld wrong elements: a curve of wrong results is not written",
                     res.wrong_total);
        }
    }
    exec_bench_result_free(&res);
    return nb;
}

/* The collective curves: the allreduce backends and NCCL's all-gather (cpu: mpi's allreduce, the one
 * backend it has, as a self-test of the pipeline). NCCL refuses virtual ranks: left out with a note. */
static int measure_curves(dist_job *d, const probe_args *a, int device, bool virtual_ranks, probe_curve *curves)
{
    int n = 0;
    if (device == CFG_DEVICE_CPU) {
        const int mpi[] = {CFG_BACKEND_MPI};
        return run_curves(d, a, device, PLAN_OP_ALLREDUCE, mpi, 1, "allreduce.", curves);
    }
    if (virtual_ranks) {
        for (int k = 0; k < 2; k++) {
            snprintf(curves[n].key, sizeof(curves[n].key), k ? "allgather_nccl" : "allreduce.nccl");
            snprintf(curves[n].label, sizeof(curves[n].label), k ? "nccl allgather" : "nccl allreduce");
            snprintf(curves[n].why, sizeof(curves[n].why), "NCCL refuses several ranks on one GPU (virtual ranks)");
            n++;
        }
    }
    /* The backends the list marks `probe`; NCCL not on virtual ranks (it refuses them: noted above). */
    int ar[CFG_BACKEND_COUNT], nar = 0;
    for (int be = 0; be < CFG_BACKEND_COUNT; be++)
        if (cfg_backend_probed(be) && !(virtual_ranks && be == CFG_BACKEND_NCCL))
            ar[nar++] = be;
    if (d->rank == 0) {
        fprintf(stderr, "vpsim probe: allreduce curves (");
        for (int i = 0; i < nar; i++)
            fprintf(stderr, "%s%s", i ? ", " : "", cfg_backend_names[ar[i]]);
        fprintf(stderr, ") ...\n");
    }
    n += run_curves(d, a, device, PLAN_OP_ALLREDUCE, ar, nar, "allreduce.", curves + n);
    if (!virtual_ranks) {
        const int nccl[] = {CFG_BACKEND_NCCL};
        if (d->rank == 0)
            fprintf(stderr, "vpsim probe: NCCL all-gather curve ...\n");
        n += run_curves(d, a, device, PLAN_OP_ALLGATHER, nccl, 1, "allgather_", curves + n);
    }
    return n;
}


/* Rank 0: the topology, the file and the report. Returns an exit status. */
static int write_out(const probe_args *a, const dist_job *d, int device, const char *base,
                     const exec_links_result *links, const probe_curve *curves, int n_curves,
                     const exec_mpi_costs *host_mpi, const comm_nccl_log *nccl_log, const exec_facts *facts,
                     const char *mismatch)
{
    dev_topo topo;
    memset(&topo, 0, sizeof(topo));
    if (device == CFG_DEVICE_CUDA)
        dev_nvml_topology(links->bus_id, links->ranks, &topo);
    char date[32];
    util_utc_now(date, sizeof(date));
    const probe_input in = {.links = links, .topo = device == CFG_DEVICE_CUDA ? &topo : NULL, .device = device,
                            .date = date, .host = d->host, .base = base, .curves = curves, .n_curves = n_curves,
                            .curves_skipped = a->no_curves,
                            .cpu_vendor = facts->cpu_vendor[0] ? facts->cpu_vendor : NULL, .host_mpi = host_mpi,
                            .nccl_log = nccl_log, .facts = facts, .mismatch = mismatch};
    util_buf text = {0}, report = {0};
    int rc = probe_system_text(&in, &text);
    if (rc == 0)
        rc = cli_emit(&a->c, text.s, text.len);
    if (rc == 0 && a->c.out_path) {
        probe_report(&in, a->c.out_path, &report);
        rc = cli_write_stdout(report.s, report.len);
    }
    util_buf_free(&text);
    util_buf_free(&report);
    return rc;
}

/* Measure (every rank) and write (rank 0). Returns an exit status, the same on every rank. */
static int probe(const probe_args *a, dist_job *d, int device, const char *base, const exec_facts *facts,
                 const char *mismatch)
{
    exec_links_result *links = util_xcalloc(1, sizeof(*links));
    probe_curve *curves = util_xcalloc(PROBE_MAX_CURVES, sizeof(*curves));
    const exec_links_opts lo = {.device = device, .quick = a->quick, .reps = a->reps};
    char why[512] = "";
    int rc = 0, n_curves = 0;
    if (d->rank == 0)
        fprintf(stderr, "vpsim probe: %d ranks, %s device: paths, launch costs ...\n", d->size,
                cfg_device_names[device]);
    exec_watch_step("measuring the paths");
    if (exec_links_measure(d, &lo, links, why, sizeof(why)) != 0) {
        if (d->rank == 0)
            fprintf(stderr, "vpsim probe: %s\n", why);
        rc = VP_EXIT_FAIL;
    } else if (device == CFG_DEVICE_CUDA && links->virtual_ranks && !a->virtual_ok) {
        /* NVML could not count the GPUs before: the measurement found ranks sharing one. */
        if (d->rank == 0)
            fprintf(stderr, "vpsim probe: several ranks share a GPU here: the probe measures one GPU per rank; "
                            "--virtual runs them as a self-test (nothing written)\n");
        rc = VP_EXIT_USAGE;
    }
    /* The mpi backend's host figures: MPI between the ranks and the host's bf16 conversions. */
    exec_mpi_costs host_mpi;
    bool have_host_mpi = false;
    if (rc == 0 && d->size >= 2) {
        exec_watch_step("measuring host MPI and conversions");
        char hwhy[256] = "";
        have_host_mpi = exec_mpi_costs_measure(d, a->quick, &host_mpi, hwhy, sizeof(hwhy)) == 0;
        if (!have_host_mpi && d->rank == 0)
            fprintf(stderr, "vpsim probe: host MPI figures not measured: %s\n", hwhy);
    }
    /* NCCL's own account of what it built (its INFO log), unless the user asked NCCL for a log already. */
    comm_nccl_log nlog;
    char log_path[64] = "";
    const bool nccl_runs = rc == 0 && !a->no_curves && device == CFG_DEVICE_CUDA && !links->virtual_ranks;
    if (nccl_runs && !getenv("NCCL_DEBUG") && !getenv("NCCL_DEBUG_FILE")) {
        setenv("NCCL_DEBUG", "INFO", 0);
        setenv("NCCL_DEBUG_SUBSYS", "INIT,GRAPH", 0);
        setenv("NCCL_DEBUG_FILE", "/tmp/vpsim-nccl-%p.log", 0); /* NCCL puts this process's pid for %p */
        snprintf(log_path, sizeof(log_path), "/tmp/vpsim-nccl-%ld.log", (long)getpid());
    }
    if (rc == 0 && !a->no_curves) {
        exec_watch_step("measuring the collective curves");
        n_curves = measure_curves(d, a, device, links->virtual_ranks, curves);
    }
    bool have_log = false;
    if (log_path[0]) {
        char *text = util_read_file(log_path);
        have_log = text && comm_nccl_log_parse(text, &nlog);
        free(text);
        unlink(log_path);
    }
    if (rc == 0 && d->rank == 0) {
        exec_watch_step("writing the system file");
        rc = write_out(a, d, device, base, links, curves, n_curves, have_host_mpi ? &host_mpi : NULL,
                       have_log ? &nlog : NULL, facts, mismatch);
    }
    dist_bcast(&rc, sizeof(rc), 0);
    free(links);
    free(curves);
    return rc;
}

static int probe_run(cli_ctx *x)
{
    probe_args *a = x->args;
    dist_job *d = &x->d;
    const cfg_scenario *sc = &x->sc;
    const int device = a->device >= 0 ? a->device : sc->run.device;
    char why[256];
    const exec_device *dev = exec_find_device(device, why, sizeof(why));
    for (int k = 0; k < 2 && dev; k++)
        a->n_verify[k] = scenario_sizes(&x->p, k ? PLAN_OP_ALLGATHER : PLAN_OP_ALLREDUCE, dev->elem_bytes, a->verify[k]);
    /* A base that cannot be read is said before the measuring, not after. */
    const char *base_path = a->base ? a->base : sc->system_path;
    cfg_error err;
    cfg_doc *base = cfg_doc_load_file(base_path, &err);
    int rc = 0;
    if (!base) {
        if (d->rank == 0)
            fprintf(stderr, "vpsim probe: base system file: %s\n", err.msg);
        rc = VP_EXIT_USAGE;
    }
    cfg_doc_free(base);
    if (rc == 0)
        rc = check_job(a, d, device);
    exec_facts facts;
    char mismatch[400] = "";
    if (rc == 0)
        rc = facts_check(a, d, device, base_path, &facts, mismatch, sizeof(mismatch));
    if (rc == 0) {
        /* A link measurement at 8 GPUs may go longer than run.timeout between two progress steps: the
         * watchdog here catches a hang, not a slow phase (run.timeout 0 still turns it off). */
        const int watch = sc->run.timeout == 0 ? 0 : PROBE_WATCH_S > sc->run.timeout ? PROBE_WATCH_S : sc->run.timeout;
        exec_watch_start(d, "probe", watch);
        rc = probe(a, d, device, base_path, &facts, mismatch);
    }
    return rc;
}

static void probe_about(util_buf *out)
{
    util_buf_printf(out, "Measure this box once, one MPI rank per GPU, and write a whole system file: the base (the\n"
                    "scenario's system file, or --system) with what was measured put in, each value commented\n"
                    "\"measured: probe, DATE, HOST, GPU, median of N (spread X%%)\":\n"
                    "  paths.*      per ordered GPU pair: a peer flag's one-way visibility, a dependent load's round\n"
                    "               trip, store and load bandwidth alone, with every pair at once and with all writers\n"
                    "               into one GPU; per GPU: pinned host memory near and far (paths.gpus = N)\n"
                    "  launch.*     eager launch, eager gap, graph node gap, graph launch\n"
                    "  topology.p2p direct | off: off when a pair has no peer access, else direct (what NCCL and the\n"
                    "               custom kernels will use); a peer flag slower than max(%.0f us, %.0f x a flag\n"
                    "               through host memory) is named a finding: peer traffic through system memory\n"
                    "  topology.*, gpus, links.pcie_gbs  from NVML (path type per pair, NVLink, PCIe gen x width,\n"
                    "               NUMA nodes): only on the cuda device with one GPU per rank; sockets and\n"
                    "               gpus_per_switch only when the probe covers every GPU of the box\n"
                    "  measured.allreduce.{nccl,oneshot,twoshot,push}, measured.allgather_nccl  curves in CUDA graphs\n"
                    "               over 4 KiB - 1 MiB (9 sizes; --quick: 3) and SCENARIO's verify-pass payloads in\n"
                    "               that range; the base's collective tables are replaced (its compute tables stay)\n"
                    "and paths.findings: the anomalies in plain words. Compute is not probed: run `vpsim calibrate\n"
                    "--measure` (one GPU) with the file as --system/--base. The file is checked to load before it is\n"
                    "written. With --out, a report (the visibility matrix, the findings) goes to standard output.\n"
                    "\n"
                    "The gpu section (name, SMs, memory, cc) is the device's own; a base naming another GPU is refused\n"
                    "(exit 2, before measuring) unless --base names it, the mismatch then in the header.\n"
                    "Self-tests: --device cpu (processes through shared memory: the CPU device has no GPUs, so any\n"
                    "rank count runs) and --virtual (several ranks per GPU) measure the pipeline, not an interconnect;\n"
                    "every value they write is tagged SELF-TEST, the CPU vendor included. On cpu the curve is the mpi\n"
                    "backend's (eager), the others need CUDA.\n",
                    PROBE_NATIVE_VISIBLE_US, PROBE_HOST_FACTOR);
}

static const cli_cmd probe_cmd = {
    .spec = {.name = "probe", .synopsis = "mpirun -np N vpsim probe", .pos_usage = "[SCENARIO]",
             .pos = CLI_POS_SCENARIO, .common_offset = offsetof(probe_args, c), .opts = probe_opts,
             .n_opts = CLI_N(probe_opts), .about_fn = probe_about,
             .after = "Duration: the curves are 4 allreduce backends and the NCCL all-gather x 9 sizes x 25 calls in graphs;\n"
                      "budgeted at 2 minutes at 8 GPUs (not yet timed on a multi-GPU box); --quick on the CPU device\n"
                      "takes seconds. A rank without progress for 300 s (or the scenario's run.timeout when longer; 0 = no\n"
                      "watchdog) ends the job, every rank naming what it was doing.\n",
             .examples = "mpirun -np 8 vpsim probe configs/default.yaml --out my-box.yaml\n"
                         "vpsim model configs/default.yaml --system my-box.yaml --explain\n"
                         "mpirun -np 2 --oversubscribe vpsim probe --device cpu --quick --base configs/systems/h200-1x.yaml \\\n"
                         "    --out selftest.yaml\n"},
    .args_size = sizeof(probe_args),
    .flags = CLI_MPI | CLI_LOAD,
    .init = probe_init,
    .check = probe_check,
    .run = probe_run,
};

int cmd_probe(int argc, char **argv) { return cli_command_main(&probe_cmd, argc, argv); }
