/* The target box as it really runs (docs/model.md "The target box as it runs"): NCCL's own rules for
 * transport, search and protocol, cited to NCCL's source; the platform's peer-load and peer-store modes;
 * the eager arrival skew; and the seed's two outcomes from the one shipped file. Hand values beside each. */
#include "../../sim/model/model.h"
#include "../../sim/model/model_internal.h"
#include "../../sim/model/model_topo.h"
#include "../../sim/util/util.h"
#include "test_helpers.h"
#include "th_model.h"
#include "th_plan.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define S42K 43008.0
#define EPS 1e-3

static void set_version(cfg_system *s, const char *v)
{
    s->nccl.version = (char *)v;
    s->nccl.version_code = cfg_nccl_version_code(v);
    cr_assert_geq(s->nccl.version_code, 0, "%s", v);
}

/* ---------------- NCCL's transport (src/graph/paths.cc ncclTopoCheckP2p, src/transport/shm.cc) -------- */

typedef struct transport_case {
    const char *version;
    int vendor, gpus, sockets, per_switch;
    int level;             /* NCCL_P2P_LEVEL (cfg_nccl_level) */
    bool p2p_disable, shm_disable;
    int a, b;              /* the pair asked about */
    model_nccl_transport want;
    const char *why;
} transport_case;

Test(nccl_rules, transport_per_pair_follows_paths_cc)
{
    const transport_case cases[] = {
        /* 2.23.4+: PXB by default; AMD keeps SYS only with <= 2 GPUs ("Set P2P level to PXB on AMD CPUs
         * when using more than 2 GPUs per node", paths.cc:282 in v2.23.4-1). */
        {"2.28.3", CFG_CPU_AMD, 8, 2, 0, CFG_NCCL_LEVEL_AUTO, false, false, 0, 1, MODEL_NCCL_SHM, "AMD, 8 GPUs, PHB"},
        {"2.28.3", CFG_CPU_AMD, 8, 2, 0, CFG_NCCL_LEVEL_AUTO, false, false, 3, 4, MODEL_NCCL_SHM, "AMD, 8 GPUs, SYS"},
        {"2.28.3", CFG_CPU_AMD, 2, 2, 0, CFG_NCCL_LEVEL_AUTO, false, false, 0, 1, MODEL_NCCL_P2P, "AMD, 2 GPUs: SYS"},
        {"2.28.3", CFG_CPU_AMD, 8, 1, 2, CFG_NCCL_LEVEL_AUTO, false, false, 0, 1, MODEL_NCCL_P2P, "one switch: PIX"},
        {"2.28.3", CFG_CPU_AMD, 8, 1, 2, CFG_NCCL_LEVEL_AUTO, false, false, 1, 2, MODEL_NCCL_SHM, "across switches"},
        {"2.28.3", CFG_CPU_INTEL, 8, 2, 0, CFG_NCCL_LEVEL_AUTO, false, false, 0, 1, MODEL_NCCL_SHM, "Intel: PXB"},
        {"2.28.3", CFG_CPU_INTEL, 2, 1, 0, CFG_NCCL_LEVEL_AUTO, false, false, 0, 1, MODEL_NCCL_SHM, "Intel, 2 GPUs"},
        /* <= 2.22: SYS by default, PXB on Intel/ARM. */
        {"2.22.3", CFG_CPU_AMD, 8, 2, 0, CFG_NCCL_LEVEL_AUTO, false, false, 3, 4, MODEL_NCCL_P2P, "old AMD: SYS"},
        {"2.21.5", CFG_CPU_INTEL, 8, 1, 0, CFG_NCCL_LEVEL_AUTO, false, false, 0, 1, MODEL_NCCL_SHM, "old Intel: PXB"},
        {"2.21.5", CFG_CPU_ARM, 8, 1, 0, CFG_NCCL_LEVEL_AUTO, false, false, 0, 1, MODEL_NCCL_SHM, "old ARM: PXB"},
        /* NCCL_P2P_LEVEL replaces the default (ncclGetUserP2pLevel); NCCL_P2P_DISABLE wins over it. */
        {"2.28.3", CFG_CPU_AMD, 8, 2, 0, CFG_NCCL_LEVEL_SYS, false, false, 3, 4, MODEL_NCCL_P2P, "P2P_LEVEL=SYS"},
        {"2.28.3", CFG_CPU_AMD, 8, 2, 0, CFG_NCCL_LEVEL_PHB, false, false, 0, 1, MODEL_NCCL_P2P, "PHB allows PHB"},
        {"2.28.3", CFG_CPU_AMD, 8, 2, 0, CFG_NCCL_LEVEL_PHB, false, false, 3, 4, MODEL_NCCL_SHM, "... not SYS"},
        {"2.22.3", CFG_CPU_AMD, 8, 2, 0, CFG_NCCL_LEVEL_PXB, false, false, 0, 1, MODEL_NCCL_SHM, "PXB on old AMD"},
        {"2.28.3", CFG_CPU_AMD, 8, 2, 0, CFG_NCCL_LEVEL_SYS, true, false, 0, 1, MODEL_NCCL_SHM, "P2P_DISABLE wins"},
        {"2.28.3", CFG_CPU_AMD, 8, 1, 2, CFG_NCCL_LEVEL_LOC, false, false, 0, 1, MODEL_NCCL_SHM, "LOC: none"},
        /* Without SHM (NCCL_SHM_DISABLE) a pair without P2P goes through the network transport. */
        {"2.28.3", CFG_CPU_AMD, 8, 2, 0, CFG_NCCL_LEVEL_AUTO, false, true, 0, 1, MODEL_NCCL_NET, "SHM_DISABLE"},
        {"2.28.3", CFG_CPU_AMD, 8, 2, 0, CFG_NCCL_LEVEL_SYS, false, true, 0, 1, MODEL_NCCL_P2P, "P2P unaffected"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const transport_case *c = &cases[i];
        cfg_system s = th_pcie_system(c->gpus, c->sockets, c->per_switch);
        set_version(&s, c->version);
        s.topology.cpu_vendor = c->vendor;
        s.nccl.p2p_level = c->level;
        s.nccl.p2p_disable = c->p2p_disable;
        s.nccl.shm_disable = c->shm_disable;
        const model_nccl_transport got = model_nccl_link(&s, c->a, c->b, c->gpus);
        cr_assert_eq(got, c->want, "case %zu (%s): got %s, want %s", i, c->why, model_nccl_transport_names[got],
                     model_nccl_transport_names[c->want]);
    }
}

/* The platform has to carry peer traffic at all: without peer access or peer stores NCCL cannot use P2P. */
Test(nccl_rules, no_peer_path_means_no_p2p)
{
    cfg_system s = th_pcie_system(8, 1, 2);
    set_version(&s, "2.28.3");
    cr_assert_eq(model_nccl_link(&s, 0, 1, 8), MODEL_NCCL_P2P);
    s.topology.peer_stores = CFG_PEER_OFF;
    cr_assert_eq(model_nccl_link(&s, 0, 1, 8), MODEL_NCCL_SHM);
    s.topology.peer_stores = CFG_PEER_NATIVE;
    s.topology.p2p = CFG_P2P_SYSMEM;
    cr_assert_eq(model_nccl_link(&s, 0, 1, 8), MODEL_NCCL_SHM);
}

/* ---------------- NCCL's search (src/graph/search.cc) ---------------- */

Test(nccl_rules, search_falls_back_on_blackwell_across_amd_sockets)
{
    cfg_system s = th_pcie_system(8, 2, 0);
    model_nccl_graph g;
    /* Blackwell (cc 120) with NCCL 2.27+: speeds 90 .. 18; the ring crosses the sockets at AMD_BW 16: no
     * speed fits -> "falling back to simple order": bw 0.1, 1 channel, 2 after ncclTopoPostset. */
    s.gpu.cc = 120;
    set_version(&s, "2.28.3");
    model_nccl_search(&s, 8, &g);
    cr_assert(g.fallback);
    cr_assert_float_eq(g.bottleneck_gbs, 16.0, 1e-9);
    cr_assert_float_eq(g.bw_gbs, 0.1, 1e-9);
    cr_assert_eq(g.search_channels, 1);
    cr_assert_eq(g.channels, 2);
    /* 2.25-2.26 stop at 19: still no fit. 2.24 used the sm90 speeds for cc >= 90: 15 fits, one channel. */
    set_version(&s, "2.25.1");
    model_nccl_search(&s, 8, &g);
    cr_assert(g.fallback);
    set_version(&s, "2.24.3");
    model_nccl_search(&s, 8, &g);
    cr_assert(!g.fallback);
    cr_assert_float_eq(g.bw_gbs, 15.0, 1e-9);
    cr_assert_eq(g.search_channels, 1);
    /* One socket: the PCI figure 48 -> sm100 speed 40, one channel, duplicated (>= 25) into 2 x 20, then
     * doubled for the run: 4 channels. */
    cfg_system one = th_pcie_system(8, 1, 0);
    one.gpu.cc = 120;
    set_version(&one, "2.28.3");
    model_nccl_search(&one, 8, &g);
    cr_assert(!g.fallback);
    cr_assert_float_eq(g.bw_gbs, 20.0, 1e-9);
    cr_assert_eq(g.search_channels, 2);
    cr_assert_eq(g.channels, 4);
    /* A graph file (NCCL_GRAPH_FILE) replaces the search: its speed, the stated channels. */
    s.nccl.graph_bw_gbs = 24;
    s.nccl.channels = 8;
    model_nccl_search(&s, 8, &g);
    cr_assert(!g.fallback);
    cr_assert_float_eq(g.bw_gbs, 24.0, 1e-9);
    cr_assert_eq(g.channels, 8);
}

/* With the fallback's 0.1 GB/s NCCL's tuning sees bandwidth as nearly free of choice: LL costs 6.6 + 14 x
 * 1.0 + b / (0.05 x 8 / 14 x 1000) and Simple 8.4 + 14 x 5.7 + b / (0.1 x 8 / 14 x 1000): Simple from
 * b = 67.6 / (1/28.571 - 1/57.143) = 3862.9 B up. */
Test(nccl_rules, the_fallback_graph_runs_simple_above_4_kb)
{
    cfg_system s = th_pcie_system(8, 2, 0);
    s.gpu.cc = 120;
    set_version(&s, "2.28.3");
    model_nccl_graph g;
    model_nccl_search(&s, 8, &g);
    int a, p;
    model_nccl_choose(&s, &g, true, 3800, 8, &a, &p, NULL);
    cr_assert_eq(a, MODEL_NCCL_RING);
    cr_assert_eq(p, MODEL_NCCL_LL, "3,800 B: LL");
    model_nccl_choose(&s, &g, true, 3950, 8, &a, &p, NULL);
    cr_assert_eq(p, MODEL_NCCL_SIMPLE, "3,950 B: Simple");
    model_nccl_choose(&s, &g, true, S42K, 8, &a, &p, NULL);
    cr_assert_eq(a, MODEL_NCCL_RING);
    cr_assert_eq(p, MODEL_NCCL_SIMPLE);
    /* A searched 15 GB/s graph (NCCL 2.24) keeps LL at 43,008 B: 6.6 + 14 + 10.035 = 30.64 against
     * 88.2 + 5.018 = 93.22. */
    set_version(&s, "2.24.3");
    model_nccl_search(&s, 8, &g);
    model_nccl_choose(&s, &g, true, S42K, 8, &a, &p, NULL);
    cr_assert_eq(p, MODEL_NCCL_LL);
}

/* ---------------- the platform's peer modes ---------------- */

/* Four GPUs on one socket (th_pcie_system): a native peer load's round trip 2.9 us, a flag through host
 * memory 1.1 + 2 x 1.1 = 3.3 us. */
Test(peer_modes, staged_loads_slow_the_loading_kernels_only)
{
    cfg_system s = th_pcie_system(4, 1, 0);
    const double native = th_coll(&s, CFG_BACKEND_ONESHOT, PLAN_OP_ALLREDUCE, S42K, 4, NULL);
    cr_assert_float_eq(native, 13.86096, EPS, "test_model_formula.c's hand value");
    const double push = th_coll(&s, CFG_BACKEND_PUSH, PLAN_OP_ALLREDUCE, S42K, 4, NULL);
    s.topology.peer_loads = CFG_PEER_STAGED;
    s.links.sysmem_load_gbs = 1.0;
    model_terms t = {.n = 0};
    /* Staged: round trip 2.9 + 3.3 = 6.2; each GPU's 3 x 43,008 B at 1 GB/s = 129.024 us (the root
     * complex's 5.16 is no longer the bottleneck): 1.2 + 2 x 2.3 + 6.2 + 129.024 = 141.024 */
    const double staged = th_coll(&s, CFG_BACKEND_ONESHOT, PLAN_OP_ALLREDUCE, S42K, 4, &t);
    cr_assert_float_eq(staged, 141.024, EPS, "got %f", staged);
    cr_assert_float_eq(model_term_get(&t, "barrier"), 2.3, 1e-9, "barriers are stores: native");
    /* Push only stores: unchanged. */
    cr_assert_float_eq(th_coll(&s, CFG_BACKEND_PUSH, PLAN_OP_ALLREDUCE, S42K, 4, NULL), push, 1e-9);
    /* A stated staged round trip replaces the derived one. */
    s.links.staged_rtt_us = 20.0;
    cr_assert_float_eq(th_coll(&s, CFG_BACKEND_ONESHOT, PLAN_OP_ALLREDUCE, S42K, 4, NULL), 141.024 - 6.2 + 20.0, EPS);
    /* Staged stores slow the flags: a barrier = fence 1 + (1.3 + 3.3 -> the stated 20) = 21. */
    s.topology.peer_stores = CFG_PEER_STAGED;
    t.n = 0;
    th_coll(&s, CFG_BACKEND_ONESHOT, PLAN_OP_ALLREDUCE, S42K, 4, &t);
    cr_assert_float_eq(model_term_get(&t, "barrier"), 21.0, 1e-9);
}

Test(peer_modes, a_platform_without_peer_loads_refuses_the_loading_kernels)
{
    cfg_system s = th_pcie_system(4, 1, 0);
    s.topology.peer_loads = CFG_PEER_OFF;
    model_coll c;
    model_collective(&s, CFG_BACKEND_ONESHOT, PLAN_OP_ALLREDUCE, S42K, 4, NULL, &c);
    cr_assert(!c.available);
    cr_assert(strstr(c.reason, "peer_loads=off"), "%s", c.reason);
    model_collective(&s, CFG_BACKEND_PUSH, PLAN_OP_ALLREDUCE, S42K, 4, NULL, &c);
    cr_assert(c.available, "push only stores: %s", c.reason);
    s.topology.peer_stores = CFG_PEER_OFF;
    model_collective(&s, CFG_BACKEND_PUSH, PLAN_OP_ALLREDUCE, S42K, 4, NULL, &c);
    cr_assert(!c.available);
    cr_assert(strstr(c.reason, "peer_stores=off"), "%s", c.reason);
}

/* ---------------- arrival skew ---------------- */

Test(arrival_skew, expected_max_of_n_normals)
{
    /* Tabulated: E[max of 2] = 1/sqrt(pi) = 0.5642, of 4 1.0294, of 8 1.4236, of 16 1.7660. */
    cr_assert_float_eq(model_expected_max_normal(1), 0.0, 1e-12);
    cr_assert_float_eq(model_expected_max_normal(2), 1.0 / sqrt(M_PI), 1e-4);
    cr_assert_float_eq(model_expected_max_normal(4), 1.0294, 1e-4);
    cr_assert_float_eq(model_expected_max_normal(8), 1.4236, 1e-4);
    cr_assert_float_eq(model_expected_max_normal(16), 1.7660, 1e-4);
    cfg_system s = th_pcie_system(8, 2, 0);
    s.launch.eager_jitter_us = 2.0;
    cr_assert_float_eq(model_launch_costs(&s, CFG_BACKEND_NCCL, 8, false).skew_coeff, 2.0 * 1.4236, 1e-3);
    cr_assert_float_eq(model_launch_costs(&s, CFG_BACKEND_NCCL, 8, true).skew_coeff, 0.0, 0.0, "graphs: no skew");
}

static double cycle_comm_ms(const char *const *sets, int n, cfg_backend be)
{
    cfg_scenario sc;
    plan p;
    th_plan_build("configs/default.yaml", sets, n, &sc, &p);
    char why[256];
    model_ctx *ctx = model_prepare(&sc, &p, why, sizeof(why));
    cr_assert_not_null(ctx, "%s", why);
    results_cycle r;
    model_eval(ctx, be, false, &r);
    const double v = r.cycle_ms;
    results_cycle_free(&r);
    model_free(ctx);
    th_plan_done(&sc, &p);
    return v;
}

/* Eager launches pay the skew (its size grows with the spread); a CUDA graph pays none. */
Test(arrival_skew, eager_cycles_wait_for_the_slowest_rank)
{
    /* A host-bound eager cycle (40 us per launch, NCCL on P2P at ~30 us per allreduce): the ranks' hosts
     * set the pace, and each collective waits for the slowest. */
    const char *g0[] = {"run.graph=true", "system.launch.eager_jitter_us=0", "system.nccl.p2p_level=SYS",
                        "system.measured.use=false", "system.launch.eager_us=40"};
    const char *g5[] = {"run.graph=true", "system.launch.eager_jitter_us=5", "system.nccl.p2p_level=SYS",
                        "system.measured.use=false", "system.launch.eager_us=40"};
    const char *e0[] = {"run.graph=false", "system.launch.eager_jitter_us=0", "system.nccl.p2p_level=SYS",
                        "system.measured.use=false", "system.launch.eager_us=40"};
    const char *e5[] = {"run.graph=false", "system.launch.eager_jitter_us=5", "system.nccl.p2p_level=SYS",
                        "system.measured.use=false", "system.launch.eager_us=40"};
    const char *e10[] = {"run.graph=false", "system.launch.eager_jitter_us=10", "system.nccl.p2p_level=SYS",
                         "system.measured.use=false", "system.launch.eager_us=40"};
    cr_assert_float_eq(cycle_comm_ms(g0, 5, CFG_BACKEND_NCCL), cycle_comm_ms(g5, 5, CFG_BACKEND_NCCL), 1e-9);
    const double a = cycle_comm_ms(e0, 5, CFG_BACKEND_NCCL), b = cycle_comm_ms(e5, 5, CFG_BACKEND_NCCL),
                 c = cycle_comm_ms(e10, 5, CFG_BACKEND_NCCL);
    /* The hosts drift apart by sqrt(k) spreads: the verify pass's ~1,500 launches end ~1.42 x 5 x sqrt(1500)
     * = 0.28 ms apart, the draft phases' fewer; twice the spread, twice the wait. */
    cr_assert_gt(b, a + 0.2, "eager skew: %f -> %f ms", a, b);
    cr_assert_lt(b, a + 1.0, "eager skew: %f -> %f ms", a, b);
    cr_assert(c - b > 0.8 * (b - a) && c - b < 1.5 * (b - a), "about linear in the spread: %f, %f, %f", a, b, c);
}

/* ---------------- the seed's two outcomes (issue: the target box as it really runs) ---------------- */

static double json_num(const char *from, const char *key)
{
    const char *p = strstr(from, key);
    cr_assert_not_null(p, "%s not in %.200s", key, from);
    return atof(p + strlen(key));
}

Test(target_box, reproduces_both_seed_outcomes_from_one_file)
{
    th_result r = th_run("model configs/default.yaml --set system.measured.use=false --backend nccl,oneshot --format json");
    cr_assert_eq(r.status, 0, "%s", r.err);
    const char *nccl = strstr(r.out, "\"backend\": \"nccl\"");
    const char *one = strstr(r.out, "\"backend\": \"oneshot\"");
    cr_assert(nccl && one, "%s", r.out);
    const double ar = json_num(nccl, "\"allreduce_us\": ");
    cr_assert(ar >= 160.0 && ar <= 240.0, "NCCL %.1f us per 43,008 B allreduce, not within 160-240", ar);
    const double tn = json_num(nccl, "\"tok_per_s\": "), to = json_num(one, "\"tok_per_s\": ");
    cr_assert_geq(tn / to, 1.8, "NCCL %.1f tok/s, forced one-shot %.1f: the seed lost more than 2x", tn, to);
    cr_assert(strstr(nccl, "ring/Simple over SHM"), "%.300s", nccl);
    th_free(&r);
    /* --explain names the terms that make each: NCCL's rule, the search's fallback, the shared system-memory
     * rate; one-shot's staged loads. */
    r = th_run("model configs/default.yaml --set system.measured.use=false --backend nccl,oneshot --explain");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "NCCL >= 2.23.4, AMD with > 2 GPUs: PXB"), "%s", r.out);
    cr_assert(strstr(r.out, "falling back to simple order"), "%s", r.out);
    cr_assert(strstr(r.out, "links.sysmem_load_gbs"), "%s", r.out);
    cr_assert(strstr(r.out, "staged via sysmem"), "%s", r.out);
    th_free(&r);
}

/* The fixes, each alone: NCCL_P2P_LEVEL=SYS puts NCCL on P2P (stores are native), the driver's P2P override
 * makes one-shot's loads native. */
Test(target_box, the_fixes_move_the_right_backends)
{
    th_result r = th_run("model configs/default.yaml --set system.measured.use=false --backend nccl,oneshot,push "
                         "--set system.nccl.p2p_level=SYS --format json");
    cr_assert_eq(r.status, 0, "%s", r.err);
    const double nccl_sys = json_num(strstr(r.out, "\"backend\": \"nccl\""), "\"allreduce_us\": ");
    cr_assert_lt(nccl_sys, 60.0, "NCCL on P2P: %.1f us", nccl_sys);
    th_free(&r);
    r = th_run("model configs/default.yaml --set system.measured.use=false --backend oneshot "
               "--set system.topology.peer_loads=native --format json");
    cr_assert_eq(r.status, 0, "%s", r.err);
    const double one_native = json_num(strstr(r.out, "\"backend\": \"oneshot\""), "\"allreduce_us\": ");
    cr_assert_lt(one_native, 40.0, "one-shot with the P2P override: %.1f us", one_native);
    th_free(&r);
}

/* ---------------- bad input ---------------- */

Test(target_box, bad_platform_keys_are_refused_where_they_stand)
{
    const char *mode = "name: t\ngpus: 2\ngpu:\n  name: g\ntopology:\n  peer_loads: mailbox\n";
    char *f = th_write_temp(mode, strlen(mode), ".yaml");
    th_expect_bad(th_run("model configs/tiny.yaml --system %s", f), ":6:", "native, staged, off");
    free(f);
    const char *ver = "name: t\ngpus: 2\ngpu:\n  name: g\nnccl:\n  version: 2.28\n";
    f = th_write_temp(ver, strlen(ver), ".yaml");
    th_expect_bad(th_run("model configs/tiny.yaml --system %s", f), ":6:", "not an NCCL version");
    free(f);
    const char *nv = "name: t\ngpus: 2\ngpu:\n  name: g\ntopology:\n  interconnect: nvlink\n  peer_loads: staged\n";
    f = th_write_temp(nv, strlen(nv), ".yaml");
    th_expect_bad(th_run("model configs/tiny.yaml --system %s", f), ":6:", "'staged' is a PCIe platform's mode");
    free(f);
    th_expect_bad(th_run("model configs/default.yaml --set system.nccl.p2p_level=NODE"), "system.nccl.p2p_level",
                  "auto, LOC, NVL, NVB, PIX, PXB, PHB, SYS");
}

/* ---------------- what an answer rests on ---------------- */

/* The line of the rests section for `variant` (its text up to the newline), or NULL. */
static const char *rests_line(const char *out, const char *variant, char *buf, size_t len)
{
    const char *sec = strstr(out, "what each gain's sign rests on");
    if (!sec)
        return NULL;
    const char *end = strstr(sec, "\n\n");
    for (const char *l = strchr(sec, '\n'); l && (!end || l < end); l = strchr(l + 1, '\n')) {
        char name[80];
        int rank;
        if (sscanf(l + 1, "%d %79[^\n]", &rank, name) == 2 && !strncmp(name, variant, strlen(variant)) &&
            name[strlen(variant)] == ' ') {
            const char *e = strchr(l + 1, '\n');
            snprintf(buf, len, "%.*s", (int)(e ? e - l - 1 : (long)strlen(l + 1)), l + 1);
            return buf;
        }
    }
    return NULL;
}

Test(rests, compare_names_the_input_each_sign_rests_on)
{
    th_result r = th_run("compare configs/default.yaml --variants configs/plans/verify-faster.yaml");
    cr_assert_eq(r.status, 0, "%s", r.err);
    char buf[800];
    /* forced one-shot loses as the box runs and wins with the driver's P2P override: its sign rests on the
     * peer-load mode, and the probe reading that decides it is named */
    const char *l = rests_line(r.out, "custom oneshot", buf, sizeof(buf));
    cr_assert_not_null(l, "%s", r.out);
    cr_assert(strstr(l, "flips to +") && strstr(l, "system.topology.peer_loads=native") && strstr(l, "paths.load_rtt_us"),
              "%s", l);
    /* the fixes the box needs keep their sign at every other value */
    const char *fixes[] = {"NCCL_P2P_LEVEL=SYS", "oneshot, P2P override", "NCCL_P2P_LEVEL=SYS + graph file"};
    for (int i = 0; i < 3; i++) {
        l = rests_line(r.out, fixes[i], buf, sizeof(buf));
        cr_assert_not_null(l, "%s: %s", fixes[i], r.out);
        cr_assert(strstr(l, "holds at every other value"), "%s", l);
    }
    th_free(&r);
    r = th_run("compare configs/default.yaml --variants configs/plans/verify-faster.yaml --format json");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "\"sign_rests_on\": \"-55.3% flips to"), "%s", r.out);
    cr_assert(strstr(r.out, "\"sign_inputs_tried\": \"system.topology.peer_loads=native"), "%s", r.out);
    th_free(&r);
}

Test(rests, model_and_sweep_say_it_too, .timeout = 60)
{
    th_result r = th_run("model configs/default.yaml --backend nccl,oneshot,mpi");
    cr_assert_eq(r.status, 0, "%s", r.err);
    const char *sec = strstr(r.out, "against nccl, and what the sign rests on");
    cr_assert_not_null(sec, "%s", r.out);
    const char *one = strstr(sec, "\n  oneshot ");
    cr_assert(one && strstr(one, "system.topology.peer_loads=native"), "%s", sec);
    cr_assert(strstr(sec, "\n  mpi ") , "%s", sec);
    th_free(&r);
    /* the sweep summary: the best point's winner against its runner-up */
    char tmpl[] = "/tmp/vpsim-rests-XXXXXX";
    cr_assert_not_null(mkdtemp(tmpl));
    r = th_run("sweep configs/default.yaml --vary speculative.steps=1..2 --backend nccl,oneshot,twoshot --out %s/s.csv",
               tmpl);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "the best point (") && strstr(r.out, "twoshot over nccl"), "%s", r.out);
    th_free(&r);
    char *csv = util_xasprintf("%s/s.csv", tmpl);
    remove(csv);
    free(csv);
    rmdir(tmpl);
}
