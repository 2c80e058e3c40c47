/* vpsim probe: the p2p rule and the system file it writes, from hand-made measurements (no MPI, no GPU);
 * its bad inputs; and the CPU self-test end to end (mpirun). */
#include "test_helpers.h"

#include "../../sim/calib/probe_text.h"
#include "../../sim/config/cfg_schema.h"
#include "../../sim/config/cfg_tree.h"
#include "../../sim/plan/plan.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Two GPUs with peer access both ways, every list measured with `visible` (row-major 2x2) and a
 * host-memory flag of `host_vis` us each way (0: that list not measured). */
static void two_gpus(exec_links_result *r, double v01, double v10, double host_vis)
{
    memset(r, 0, sizeof(*r));
    r->ranks = 2;
    snprintf(r->device_name, sizeof(r->device_name), "Test GPU");
    snprintf(r->bus_id[0], sizeof(r->bus_id[0]), "00000000:01:00.0");
    snprintf(r->bus_id[1], sizeof(r->bus_id[1]), "00000000:02:00.0");
    r->numa[0] = r->numa[1] = 0;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            r->peer_access[i][j] = 1;
    r->paths.gpus = 2;
#define FILL(name, dims, unit, help)                                                                               \
    r->paths.name.n = dims == 2 ? 4 : 2;                                                                           \
    for (int c = 0; c < r->paths.name.n; c++)                                                                      \
        r->paths.name.v[c] = dims == 2 && c % 3 == 0 ? 0 : 10 + c;                                                 \
    r->spread_pct[EXEC_LINKS_##name] = 4;
    CFG_PATHS_LIST(FILL)
#undef FILL
    r->paths.visible_us.v[1] = v01;
    r->paths.visible_us.v[2] = v10;
    r->paths.host_visible_us.n = host_vis > 0 ? 4 : 0;
    r->paths.host_visible_us.v[1] = r->paths.host_visible_us.v[2] = host_vis;
    r->spread_pct[EXEC_LINKS_visible_us] = 12.4;
    r->eager_launch_us = 3.25;
    r->eager_gap_us = 1.5;
    r->graph_node_us = 0.75;
    r->graph_launch_us = 8.5;
    r->graph_nodes = 10;
    r->reps = 7;
}

static probe_p2p infer(const exec_links_result *r)
{
    probe_p2p p;
    probe_infer_p2p(r, &p);
    return p;
}

/* Native flags (1.2, 1.4 us) under max(3, 2 x 2 us) = 4 us: direct. */
Test(probe, p2p_direct_when_peer_flags_are_native)
{
    exec_links_result r;
    two_gpus(&r, 1.2, 1.4, 2.0);
    probe_p2p p = infer(&r);
    cr_assert_eq(p.mode, CFG_P2P_DIRECT, "%s", p.why);
    cr_assert_float_eq(p.threshold_us, 4.0, 1e-12);
    cr_assert_eq(p.worst_i, 1);
    cr_assert_eq(p.worst_j, 0);
    cr_assert_float_eq(p.worst_us, 1.4, 1e-12);
}

/* A peer flag seen after 14 us against a host-memory flag of 2.5 us (threshold max(3, 5) = 5 us):
 * peer traffic goes through system memory, said in plain words naming the pair. The mode stays direct:
 * NCCL and the custom kernels still take the peer path, and the model prices it from the paths. */
Test(probe, p2p_bounced_when_a_peer_flag_is_slower_than_twice_host_memory)
{
    exec_links_result r;
    two_gpus(&r, 1.5, 14, 2.5);
    probe_p2p p = infer(&r);
    cr_assert_eq(p.mode, CFG_P2P_DIRECT, "%s", p.why);
    cr_assert(p.bounced, "%s", p.why);
    cr_assert_float_eq(p.threshold_us, 5.0, 1e-12);
    cr_assert_not_null(strstr(p.why, "a peer store from GPU 1 takes 14 us to be seen by GPU 0"), "%s", p.why);
    cr_assert_not_null(strstr(p.why, "through system memory"), "%s", p.why);
    /* 4.5 us is slow for a native path but under twice the host path (5 us): still direct. */
    two_gpus(&r, 1.5, 4.5, 2.5);
    cr_assert(!infer(&r).bounced);
}

/* Without a host-memory figure the floor alone decides: 3.1 us is bounced, 2.95 us native. */
Test(probe, p2p_floor_without_host_figures)
{
    exec_links_result r;
    two_gpus(&r, 2.9, 3.1, 0);
    probe_p2p p = infer(&r);
    cr_assert(p.bounced, "%s", p.why);
    cr_assert_eq(p.mode, CFG_P2P_DIRECT);
    cr_assert_float_eq(p.threshold_us, PROBE_NATIVE_VISIBLE_US, 1e-12);
    two_gpus(&r, 2.9, 2.95, 0);
    cr_assert(!infer(&r).bounced);
}

/* Peer loads staged while stores are native (the driver's default mailbox P2P on direct-attach boxes): a
 * load's round trip of 30 us against 1.2 us from host memory (threshold max(4, 2.4) = 4 us). */
Test(probe, staged_peer_loads_are_told_apart_from_stores)
{
    exec_links_result r;
    two_gpus(&r, 1.0, 1.2, 2.0);
    r.paths.load_rtt_us.v[1] = r.paths.load_rtt_us.v[2] = 30.0;
    r.paths.host_load_rtt_us.v[0] = r.paths.host_load_rtt_us.v[1] = 1.2;
    probe_p2p p = infer(&r);
    cr_assert_eq(p.mode, CFG_P2P_DIRECT);
    cr_assert(!p.bounced, "stores are native: %s", p.why);
    cr_assert_eq(p.peer_loads, CFG_PEER_STAGED);
    cr_assert_eq(p.peer_stores, CFG_PEER_NATIVE);
    const probe_input in = {.links = &r, .device = CFG_DEVICE_CUDA, .date = "d", .host = "h"};
    util_buf f = {0};
    probe_findings(&in, &p, &f);
    cr_assert_not_null(strstr(f.s, "Peer loads go through system memory: a peer load's round trip is 30 us against "
                                   "1.2 us"), "%s", f.s);
    cr_assert_not_null(strstr(f.s, "one-shot, two-shot) will be slow"), "%s", f.s);
    util_buf_free(&f);
    /* 3.9 us is under the floor: native. */
    r.paths.load_rtt_us.v[1] = r.paths.load_rtt_us.v[2] = 3.9;
    cr_assert_eq(infer(&r).peer_loads, CFG_PEER_NATIVE);
    /* No peer access at all: both off. */
    r.peer_access[1][0] = 0;
    p = infer(&r);
    cr_assert_eq(p.peer_loads, CFG_PEER_OFF);
    cr_assert_eq(p.peer_stores, CFG_PEER_OFF);
}

/* One pair without peer access makes the box off, however fast the flags of the others are. */
Test(probe, p2p_off_when_a_pair_has_no_peer_access)
{
    exec_links_result r;
    two_gpus(&r, 1.0, 1.0, 2.0);
    r.peer_access[0][1] = 0;
    probe_p2p p = infer(&r);
    cr_assert_eq(p.mode, CFG_P2P_OFF);
    cr_assert_not_null(strstr(p.why, "GPU 0 cannot access GPU 1"), "%s", p.why);
}

static dev_topo pix_topo(void)
{
    dev_topo t;
    memset(&t, 0, sizeof(t));
    t.read = true;
    t.n = 2;
    t.box_gpus = 2;
    t.path[0][1] = t.path[1][0] = DEV_PATH_PIX;
    for (int i = 0; i < 2; i++) {
        t.pcie_gen[i] = 1; /* idle: trained down */
        t.pcie_width[i] = 16;
        t.pcie_max_gen[i] = 4;
        t.pcie_max_width[i] = 16;
    }
    return t;
}

static probe_curve nccl_curve(void)
{
    probe_curve c;
    memset(&c, 0, sizeof(c));
    snprintf(c.key, sizeof(c.key), "allreduce.nccl");
    snprintf(c.label, sizeof(c.label), "nccl allreduce");
    c.ran = c.graph = true;
    c.iters = 20;
    c.n = 2;
    c.bytes[0] = 4096, c.bytes[1] = 65536;
    c.us[0] = 20.5, c.us[1] = 31.25;
    return c;
}

static probe_input input(const exec_links_result *r, const dev_topo *t, const probe_curve *c, int n_curves,
                         const char *base)
{
    return (probe_input){.links = r, .topo = t, .device = CFG_DEVICE_CUDA, .date = "2026-01-02 03:04 UTC",
                         .host = "testhost", .base = base, .curves = c, .n_curves = n_curves, .cpu_vendor = "amd"};
}

static void bind_system(const char *text, cfg_system *sys)
{
    cfg_error err = {{0}};
    cfg_doc *doc = cfg_doc_load_text(text, strlen(text), "probe test", false, &err);
    cr_assert_not_null(doc, "%s", err.msg);
    memset(sys, 0, sizeof(*sys));
    cr_assert_eq(cfg_schema_bind(cfg_system_fields, cfg_doc_root(doc), sys, "", &err), 0, "%s\n%s", err.msg, text);
    cfg_doc_free(doc);
}

/* The whole file from hand-made figures: every key with its value, the provenance comment beside
 * each, the topology from NVML, the curve as a measured table; and it binds as a system file. */
Test(probe, writes_every_measured_key_with_its_provenance)
{
    exec_links_result r;
    two_gpus(&r, 1.5, 14, 2.5);
    const dev_topo t = pix_topo();
    const probe_curve c = nccl_curve();
    const probe_input in = input(&r, &t, &c, 1, th_path("configs/systems/h200-1x.yaml"));
    util_buf out = {0};
    cr_assert_eq(probe_system_text(&in, &out), 0);
    const char *prov = "measured: probe, 2026-01-02 03:04 UTC, testhost, Test GPU";
    char want[512];
    snprintf(want, sizeof(want), "  visible_us: [0, 1.5, 14, 0]  # %s, median of 7 (spread 12%%)\n", prov);
    cr_assert_not_null(strstr(out.s, want), "%s", out.s);
    /* FILL: cell c holds 10 + c off the diagonal; one value per GPU for per-GPU lists. */
    snprintf(want, sizeof(want), "  store_gbs: [0, 11, 12, 0]  # %s, median of 7 (spread 4%%)\n", prov);
    cr_assert_not_null(strstr(out.s, want), "%s", out.s);
    cr_assert_not_null(strstr(out.s, "  host_load_gbs: [10, 11]  # measured: probe"), "%s", out.s);
    snprintf(want, sizeof(want),
             "  eager_us: 3.25  # %s, median of 7 (host time of one bare cudaLaunchKernel: a framework's "
             "dispatch comes on top)\n",
             prov);
    cr_assert_not_null(strstr(out.s, want), "%s", out.s);
    cr_assert_not_null(strstr(out.s, "  graph_launch_us: 8.5  # measured: probe"), "%s", out.s);
    cr_assert_not_null(strstr(out.s, "of a graph of 10 nodes)"), "%s", out.s);
    cr_assert_not_null(strstr(out.s, "  p2p: direct  # measured: probe"), "%s", out.s);
    cr_assert_not_null(strstr(out.s, "GPU 1 takes 14 us to be seen by GPU 0"), "findings: %s", out.s);
    cr_assert_not_null(strstr(out.s, "    nccl:  # measured: probe"), "%s", out.s);
    /* The base's values and their comments stay; its header follows the probe's. */
    cr_assert_not_null(strstr(out.s, "  mem_bw_gbs: 4800  # spec: HBM3e\n"), "%s", out.s);
    cr_assert_eq(strncmp(out.s, "# System file written by `vpsim probe` (2026-01-02 03:04 UTC, testhost, Test GPU; 2 ranks)",
                         90), 0, "%s", out.s);
    cr_assert_not_null(strstr(out.s, "GPU 0 00000000:01:00.0: NUMA 0, PCIe gen 1 x16 now (max gen 4 x16), NVLink none; "
                                     "paths: 1:PIX"), "%s", out.s);
    cfg_system s;
    bind_system(out.s, &s);
    cr_assert_eq(s.paths.gpus, 2);
    cr_assert_eq(s.paths.visible_us.n, 4);
    cr_assert_float_eq(s.paths.visible_us.v[2], 14.0, 1e-12);
    cr_assert_float_eq(s.paths.many_writer_gbs.v[1], 11.0, 1e-12);
    cr_assert_not_null(strstr(s.paths.source, "median of 7"), "%s", s.paths.source);
    cr_assert_not_null(strstr(s.paths.findings, "through system memory"), "%s", s.paths.findings);
    cr_assert_float_eq(s.launch.eager_us, 3.25, 1e-12);
    cr_assert_float_eq(s.launch.eager_gap_us, 1.5, 1e-12);
    cr_assert_float_eq(s.launch.graph_node_us, 0.75, 1e-12);
    cr_assert_float_eq(s.launch.graph_launch_us, 8.5, 1e-12);
    cr_assert_eq(s.topology.p2p, CFG_P2P_DIRECT); /* bounced, but still the peer path */
    /* Loads apart from stores: a load's round trip 11.5 us (median) against 10.5 us from host memory (under
     * max(4, 2 x 10.5)): native; the bounced stores: staged. */
    cr_assert_eq(s.topology.peer_loads, CFG_PEER_NATIVE);
    cr_assert_eq(s.topology.peer_stores, CFG_PEER_STAGED);
    cr_assert_not_null(strstr(out.s, "  peer_loads: native  # measured: probe"), "%s", out.s);
    /* NVML: one PCIe switch between the two (PIX), both on NUMA node 0, the box's 2 GPUs all probed. */
    cr_assert_eq(s.gpus, 2);
    cr_assert_eq(s.topology.interconnect, CFG_IC_PCIE);
    cr_assert_eq(s.topology.sockets, 1);
    cr_assert_eq(s.topology.gpus_per_switch, 2);
    cr_assert_eq(s.topology.cpu_vendor, CFG_CPU_AMD);
    /* Gen 4 x16 at the spec rate: 16 GT/s x 128/130 / 8 bits x 16 lanes = 31.51 GB/s. */
    cr_assert_float_eq(s.links.pcie_gbs, 16.0 * 128 / 130 / 8 * 16, 0.01);
    const cfg_sys_table *tb = &s.measured.allreduce[CFG_BACKEND_NCCL];
    cr_assert(s.measured.use);
    cr_assert_eq(tb->ranks, 2);
    cr_assert_eq(tb->p2p, 1 + CFG_P2P_DIRECT); /* the curves ran on the peer path */
    cr_assert_eq(tb->launch, CFG_TABLE_LAUNCH_GRAPH);
    cr_assert_eq(tb->n_bytes, 2);
    cr_assert_float_eq(tb->bytes[1], 65536, 1e-9);
    cr_assert_float_eq(tb->us[1], 31.25, 1e-9);
    cr_assert_not_null(strstr(tb->source, "20 calls per size in one CUDA graph"), "%s", tb->source);
    cfg_schema_free(cfg_system_fields, &s);
    util_buf_free(&out);
}

/* A cell a pair could not measure leaves its whole list out (the schema wants every cell), and the
 * findings say which. */
Test(probe, an_incomplete_list_is_left_out_and_named)
{
    exec_links_result r;
    two_gpus(&r, 1.5, 1.6, 2.5);
    r.paths.load_gbs.v[1] = 0; /* GPU 0 -> GPU 1 not measured */
    const probe_input in = input(&r, NULL, NULL, 0, th_path("configs/systems/h200-1x.yaml"));
    util_buf out = {0};
    cr_assert_eq(probe_system_text(&in, &out), 0);
    cr_assert_null(strstr(out.s, "  load_gbs:"), "%s", out.s);
    cr_assert_not_null(strstr(out.s, "  store_gbs: [0, 11, 12, 0]"), "%s", out.s);
    cr_assert_not_null(strstr(out.s, "paths.load_gbs: some cells were not measured"), "%s", out.s);
    cfg_system s;
    bind_system(out.s, &s);
    cr_assert_eq(s.paths.load_gbs.n, 0);
    cr_assert_eq(s.topology.p2p, CFG_P2P_DIRECT);
    cr_assert_eq(s.gpus, 1, "no NVML topology: the base's gpus stays");
    cfg_schema_free(cfg_system_fields, &s);
    util_buf_free(&out);
}

/* The base's collective tables (another box's) give way to the probe's curves, its compute tables stay;
 * with --no-curves they stay too. */
Test(probe, replaces_the_bases_collective_tables_keeps_its_compute_tables)
{
    char *base_text = th_slurp(th_path("configs/systems/h200-1x.yaml"));
    cr_assert_not_null(base_text);
    const char *extra = "\n  allreduce:\n    mpi:\n      bytes: [1024]\n      us: [99]\n"
                        "  ops:\n    gemm:\n      bytes: [1000, 2000]\n      us: [5, 6]\n";
    const size_t len = strlen(base_text);
    char *text = malloc(len + strlen(extra) + 1);
    memcpy(text, base_text, len);
    char *use = strstr(text, "  use: true");
    cr_assert_not_null(use, "h200-1x.yaml has measured.use");
    char *eol = strchr(use, '\n');
    snprintf(eol, strlen(extra) + len - (size_t)(eol - text) + 1, "%s", extra);
    char *base = th_write_temp(text, strlen(text), ".yaml");
    exec_links_result r;
    two_gpus(&r, 1.5, 1.6, 2.5);
    const probe_curve c = nccl_curve();
    probe_input in = input(&r, NULL, &c, 1, base);
    util_buf out = {0};
    cr_assert_eq(probe_system_text(&in, &out), 0);
    cfg_system s;
    bind_system(out.s, &s);
    cr_assert_eq(s.measured.allreduce[CFG_BACKEND_MPI].n_bytes, 0, "%s", out.s);
    cr_assert_eq(s.measured.allreduce[CFG_BACKEND_NCCL].n_bytes, 2);
    cr_assert_eq(s.measured.ops[PLAN_OP_GEMM].n_bytes, 2);
    cfg_schema_free(cfg_system_fields, &s);
    util_buf_free(&out);
    in.curves_skipped = true;
    in.n_curves = 0;
    cr_assert_eq(probe_system_text(&in, &out), 0);
    bind_system(out.s, &s);
    cr_assert_eq(s.measured.allreduce[CFG_BACKEND_MPI].n_bytes, 1, "%s", out.s);
    cr_assert_not_null(strstr(out.s, "not measured (--no-curves)"), "%s", out.s);
    cfg_schema_free(cfg_system_fields, &s);
    util_buf_free(&out);
    unlink(base);
    free(base);
    free(text);
    free(base_text);
}

/* Virtual ranks: the file and its findings say it is a self-test, and NVML's answers (one GPU's) do not
 * become the box's topology. */
Test(probe, virtual_ranks_are_a_self_test)
{
    exec_links_result r;
    two_gpus(&r, 1.5, 1.6, 2.5);
    r.virtual_ranks = true;
    const dev_topo t = pix_topo();
    const probe_input in = input(&r, &t, NULL, 0, th_path("configs/systems/h200-1x.yaml"));
    util_buf out = {0};
    cr_assert_eq(probe_system_text(&in, &out), 0);
    cr_assert_not_null(strstr(out.s, "#   SELF-TEST: several ranks share one GPU"), "%s", out.s);
    cr_assert_not_null(strstr(out.s, "not an interconnect's figures"), "%s", out.s);
    cfg_system s;
    bind_system(out.s, &s);
    cr_assert_not_null(strstr(s.paths.findings, "virtual ranks"), "%s", s.paths.findings);
    cr_assert_not_null(strstr(s.paths.source, "SELF-TEST"), "%s", s.paths.source);
    cr_assert_eq(s.gpus, 1);
    cr_assert_eq(s.topology.gpus_per_switch, 0);
    cfg_schema_free(cfg_system_fields, &s);
    util_buf_free(&out);
}

/* Shared links and one-sided paths are named: every pair at once gets 4 GB/s against a median of 11.5
 * GB/s alone (11 and 12: 35%); 4 us one way against 1.5 us back is more than 2x. */
Test(probe, findings_name_contention_and_asymmetry)
{
    exec_links_result r;
    two_gpus(&r, 1.5, 4.0, 2.5);
    r.paths.all_store_gbs.v[1] = r.paths.all_store_gbs.v[2] = 4;
    const probe_input in = input(&r, NULL, NULL, 0, th_path("configs/systems/h200-1x.yaml"));
    probe_p2p p;
    probe_infer_p2p(&r, &p);
    util_buf out = {0};
    probe_findings(&in, &p, &out);
    cr_assert_not_null(strstr(out.s, "each pair gets 4 GB/s, 35% of the 11.5 GB/s it gets alone"), "%s", out.s);
    cr_assert_not_null(strstr(out.s, "a flag is seen in 1.5 us one way, 4 us the other"), "%s", out.s);
    cr_assert_null(strstr(out.s, "Self-test"), "%s", out.s);
    util_buf_free(&out);
    /* Equal within 2x and no contention: neither is said. */
    two_gpus(&r, 1.5, 2.9, 2.5);
    probe_infer_p2p(&r, &p);
    probe_findings(&in, &p, &out);
    cr_assert_null(strstr(out.s, "asymmetric"), "%s", out.s);
    cr_assert_null(strstr(out.s, "each pair gets"), "%s", out.s);
    util_buf_free(&out);
}

Test(probe, the_report_shows_the_matrix_and_where_the_file_went)
{
    exec_links_result r;
    two_gpus(&r, 1.5, 14, 2.5);
    const probe_input in = input(&r, NULL, NULL, 0, th_path("configs/systems/h200-1x.yaml"));
    util_buf out = {0};
    probe_report(&in, "box.yaml", &out);
    cr_assert_not_null(strstr(out.s, "  GPU0           -       1.5\n  GPU1          14         -\n"), "%s", out.s);
    cr_assert_not_null(strstr(out.s, "topology.p2p: direct"), "%s", out.s);
    cr_assert_not_null(strstr(out.s, "through system memory"), "%s", out.s);
    cr_assert_not_null(strstr(out.s, "wrote box.yaml"), "%s", out.s);
    util_buf_free(&out);
}

Test(probe, bad_inputs_exit_2_before_measuring)
{
    th_expect_bad(th_run("probe --device cpu --out /nonexistent/x.yaml"), "--out '/nonexistent/x.yaml'", "");
    th_expect_bad(th_run("probe --device bogus"), "--device 'bogus'", "cuda, cpu");
    th_expect_bad(th_run("probe --reps 0"), "--reps", "");
    th_expect_bad(th_run("probe --format json"), "--format", "YAML");
    /* A base that cannot be read: nothing is measured or written. */
    th_expect_bad(th_run("probe --device cpu --system /nonexistent.yaml --out /tmp/vpsim-probe-never.yaml"),
                  "/nonexistent.yaml", "");
    cr_assert_neq(access("/tmp/vpsim-probe-never.yaml", F_OK), 0);
}

/* NEEDS exec_links_measure (branch h-links): the CPU self-test end to end, then model mode loads it. */
Test(probe, cpu_self_test_end_to_end, .timeout = 150)
{
    th_need_mpirun();
    char dir[] = "/tmp/vpsim-probe-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof(path), "%s/box.yaml", dir);
    /* The default scenario's base names the RTX PRO 6000: without --base the CPU self-test is refused. */
    th_result r = th_mpirun(2, "probe --device cpu --quick --out %s", path);
    cr_assert_eq(r.status, 2, "%s\n%s", r.out, r.err);
    cr_assert_not_null(strstr(r.err, "but the base names NVIDIA RTX PRO 6000 Blackwell Server Edition"), "%s", r.err);
    cr_assert_eq(access(path, F_OK), -1, "nothing may be written on a refusal");
    th_free(&r);
    r = th_mpirun(2, "probe --device cpu --quick --base configs/systems/rtx-pro-6000-8x-pcie.yaml --out %s", path);
    cr_assert_eq(r.status, 0, "%s\n%s", r.out, r.err);
    cr_assert_not_null(strstr(r.out, "SELF-TEST"), "%s", r.out);
    cr_assert_not_null(strstr(r.out, "wrote "), "%s", r.out);
    th_free(&r);
    char *text = th_slurp(path);
    cr_assert_not_null(text);
    cr_assert_not_null(strstr(text, "\n  gpus: 2  # SELF-TEST (the CPU device: not a GPU's figures); measured: probe"),
                       "%s", text);
    /* The host's CPU vendor is a self-test's value too (it once moved the target's NCCL model). */
    const char *vendor = strstr(text, "\n  cpu_vendor: ");
    cr_assert_not_null(vendor, "%s", text);
    cr_assert_not_null(strstr(vendor, "  # SELF-TEST (the CPU device"), "%.160s", vendor);
    cr_assert(strstr(vendor, "  # SELF-TEST (the CPU device") < strchr(vendor + 1, '\n'), "%.160s", vendor);
    cr_assert_not_null(strstr(text, "#   MISMATCH, written because --base"), "%s", text);
    cr_assert_not_null(strstr(text, "\n  visible_us: ["), "%s", text);
    cr_assert_not_null(strstr(text, "\n    mpi:  # SELF-TEST (the CPU device: not a GPU's figures); measured: probe"), "%s",
                       text);
    cr_assert_not_null(strstr(text, "\n      us: ["), "%s", text);
    /* --quick's 4 KiB, 64 KiB, 1 MiB and the default scenario's verify allreduce: 7168 hidden x 3 tokens
     * = 21504 elements, in the CPU device's 4-byte floats 86016 B. */
    cr_assert_not_null(strstr(text, "\n      bytes: [4096, 65536, 86016, 1048576]  # SELF-TEST"), "%s", text);
    free(text);
    r = th_run("model configs/default.yaml --system %s", path);
    cr_assert_eq(r.status, 0, "%s\n%s", r.out, r.err);
    th_free(&r);
    r = th_sh("rm -rf '%s'", dir);
    th_free(&r);
}

/* The mpi backend's host figures, when measured, go to host.* with how they were read. */
Test(probe, writes_the_host_mpi_figures)
{
    exec_links_result r;
    two_gpus(&r, 1.5, 1.5, 2.5);
    const exec_mpi_costs m = {.lat_us = 2.5, .bw_gbs = 6.25, .convert_gbs = 3.5, .small_bytes = 4096,
                              .large_bytes = 4194304, .small_us = 3.1, .large_us = 672.0, .reps = 7};
    r.memcpy_lat_us = 9.5;
    probe_input in = input(&r, NULL, NULL, 0, th_path("configs/systems/h200-1x.yaml"));
    in.host_mpi = &m;
    util_buf out = {0};
    cr_assert_eq(probe_system_text(&in, &out), 0);
    cr_assert_not_null(strstr(out.s, "  mpi_lat_us: 2.5  # measured: probe, 2026-01-02 03:04 UTC, testhost, Test GPU: "
                                     "fp32 MPI_Allreduce, 4096 B in 3.10 us and 4194304 B in 672.00 us (median of 7)"),
                       "%s", out.s);
    cfg_system s;
    bind_system(out.s, &s);
    cr_assert_float_eq(s.host.mpi_lat_us, 2.5, 1e-12);
    cr_assert_float_eq(s.host.mpi_bw_gbs, 6.25, 1e-12);
    cr_assert_float_eq(s.host.convert_gbs, 3.5, 1e-12);
    cr_assert_float_eq(s.host.memcpy_lat_us, 9.5, 1e-12);
    /* The base's other host values stay. */
    cr_assert_float_eq(s.host.cycle_overhead_us, 800.0, 1e-12);
    cfg_schema_free(cfg_system_fields, &s);
    util_buf_free(&out);
}
