/* The scenario's NCCL tuning (nccl.channels / protocol / algorithm / buffsize): the NCCL_* variables the
 * replay sets, the NCCL formula restricted to what the scenario allows (values computed by hand from the
 * formula's terms, written out beside each), the measured table that no longer applies, the memory
 * account and the CLI's errors. */
#include "../../sim/config/cfg_nccl.h"
#include "../../sim/model/model.h"
#include "../../sim/plan/plan_memory.h"
#include "test_helpers.h"
#include "th_model.h"
#include "th_plan.h"

#include <criterion/criterion.h>
#include <string.h>

#define S42K 43008.0 /* 3 tokens x 7168 x 2 B */
#define EPS 1e-3

/* 8 GPUs on two AMD sockets, no switches: every ring crosses the socket link (PATH_SYS), so NCCL's
 * per-channel bandwidth is sys_bw_gbs 16; pci_bw_gbs 48 caps the sum; ll_max_bw_gbs 141 never binds. */
/* Eight GPUs on two sockets, direct attach, NCCL 2.22.3 (P2P on every ring link; th_model.c): a peer
 * store is seen after 1.3 us within a socket and 2.2 us across, so a ring step over its 8 links takes
 * 1.525 us on average for LL and 2.525 for Simple (+ fence_us 1.0). NCCL's own search gives a 15 GB/s
 * ring of one channel (SYS link at 16, sm90 speeds), from which its tuning model chooses. */
static cfg_system two_socket_pcie(void)
{
    cfg_system s = th_pcie_system(8, 2, 0);
    s.nccl.buffsize = 4194304;
    return s;
}

static double term(const model_terms *t, const char *name)
{
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->t[i].name, name) == 0)
            return t->t[i].value;
    cr_assert_fail("no term %s", name);
    return -1;
}

/* ---------------- environment variables ---------------- */

Test(nccl_env, every_setting_becomes_its_variable)
{
    cfg_nccl_tuning t = {.channels = 1, .protocol = CFG_NCCL_PROTO_LL128, .algorithm = CFG_NCCL_ALGO_TREE,
                         .buffsize = 1048576};
    cfg_nccl_env_pair e[CFG_NCCL_ENV_MAX];
    char why[256] = "";
    cr_assert_eq(cfg_nccl_env(&t, 22703, e, why, sizeof(why)), 5);
    const char *want[5][2] = {{"NCCL_MIN_NCHANNELS", "1"}, {"NCCL_MAX_NCHANNELS", "1"}, {"NCCL_PROTO", "LL128"},
                              {"NCCL_ALGO", "allreduce:tree"}, {"NCCL_BUFFSIZE", "1048576"}};
    for (int i = 0; i < 5; i++) {
        cr_assert_str_eq(e[i].name, want[i][0]);
        cr_assert_str_eq(e[i].value, want[i][1]);
    }
    cr_assert(cfg_nccl_tuned(&t));
}

Test(nccl_env, auto_sets_nothing_and_each_key_alone_sets_only_its_own)
{
    cfg_nccl_tuning t = {0};
    cfg_nccl_env_pair e[CFG_NCCL_ENV_MAX];
    char why[256] = "";
    cr_assert_not(cfg_nccl_tuned(&t));
    cr_assert_eq(cfg_nccl_env(&t, 22703, e, why, sizeof(why)), 0);
    t.protocol = CFG_NCCL_PROTO_SIMPLE;
    cr_assert_eq(cfg_nccl_env(&t, 22703, e, why, sizeof(why)), 1);
    cr_assert_str_eq(e[0].name, "NCCL_PROTO");
    cr_assert_str_eq(e[0].value, "Simple");
    t = (cfg_nccl_tuning){.buffsize = 524288};
    cr_assert_eq(cfg_nccl_env(&t, 22703, e, why, sizeof(why)), 1);
    cr_assert_str_eq(e[0].name, "NCCL_BUFFSIZE");
    cr_assert_str_eq(e[0].value, "524288");
}

Test(nccl_env, algorithm_before_nccl_2_24)
{
    cfg_nccl_env_pair e[CFG_NCCL_ENV_MAX];
    char why[256] = "";
    /* Ring is every collective's algorithm: a bare NCCL_ALGO=Ring is safe on an older NCCL. */
    cfg_nccl_tuning ring = {.algorithm = CFG_NCCL_ALGO_RING};
    cr_assert_eq(cfg_nccl_env(&ring, 22103, e, why, sizeof(why)), 1);
    cr_assert_str_eq(e[0].value, "Ring");
    cr_assert_eq(cfg_nccl_env(&ring, 22400, e, why, sizeof(why)), 1);
    cr_assert_str_eq(e[0].value, "allreduce:ring");
    /* Tree would leave all-gathers without an algorithm: refused with the version. */
    cfg_nccl_tuning tree = {.algorithm = CFG_NCCL_ALGO_TREE};
    cr_assert_eq(cfg_nccl_env(&tree, 22103, e, why, sizeof(why)), -1);
    cr_assert(strstr(why, "2.24") && strstr(why, "2.21.3"), "%s", why);
}

/* ---------------- the model ---------------- */

Test(nccl_model, channels_scale_bus_bandwidth)
{
    cfg_system s = two_socket_pcie();
    s.nccl_tuning.protocol = CFG_NCCL_PROTO_LL;
    s.nccl_tuning.algorithm = CFG_NCCL_ALGO_RING;
    char ap[16];
    /* ring/LL at 8 ranks: lat = 6.6 + 14 x 1.525 = 27.95; bw = min(141, busBw / 2); algbw = bw x 8 / 14.
     * channels 1: busBw = min(1 x 16, 48) = 16 -> bw 8, algbw 4.571429 -> 27.95 + 43008 / 4571.429 = 37.358
     * channels 2: busBw 32 -> bw 16, algbw 9.142857 -> 27.95 + 4.704 = 32.654
     * channels 4: busBw = min(64, 48) = 48 -> bw 24, algbw 13.714286 -> 27.95 + 3.136 = 31.086 */
    const int ch[3] = {1, 2, 4};
    const double want[3] = {37.358, 32.654, 31.086}, bus[3] = {16, 32, 48};
    for (int i = 0; i < 3; i++) {
        s.nccl_tuning.channels = ch[i];
        model_terms t = {.n = 0};
        cr_assert_float_eq(model_nccl_formula_us(&s, PLAN_OP_ALLREDUCE, S42K, 8, &t, ap), want[i], EPS, "channels %d",
                           ch[i]);
        cr_assert_float_eq(term(&t, "busBw"), bus[i], 1e-9);
        cr_assert_str_eq(ap, "ring/LL");
    }
}

Test(nccl_model, protocol_and_algorithm_restrict_the_choice)
{
    cfg_system s = two_socket_pcie();
    char ap[16];
    /* channels 1, ring/Simple only: lat = 8.4 + 14 x 2.525 = 43.75; algbw = 16 x 8 / 14 = 9.142857;
     * 43.75 + 43008 / 9142.857 = 43.75 + 4.704 = 48.454 (NCCL left alone picks ring/LL, 37.358). */
    s.nccl_tuning = (cfg_nccl_tuning){.channels = 1, .protocol = CFG_NCCL_PROTO_SIMPLE, .algorithm = CFG_NCCL_ALGO_RING};
    cr_assert_float_eq(model_nccl_formula_us(&s, PLAN_OP_ALLREDUCE, S42K, 8, NULL, ap), 48.454, EPS);
    cr_assert_str_eq(ap, "ring/Simple");
    /* tree only. NCCL's choice with its own numbers (busBw 15, treeCorrectionFactor at 43,008 B: LL 0.7,
     * Simple 0.6): tree/LL 6.8 + 14 x 1.0 + 43008 / (15 x 0.92 / 3.8 x 0.5 x 0.7 x 1000) = 54.64 against
     * tree/Simple 8.4 + 14 x 4.0 + 43008 / (6900 x 0.6) = 74.79: tree/LL.
     * Priced over the links (channels 2, busBw 32): bw = 32 x 0.92 / 3.8 = 7.747368, algbw = half =
     * 3.873684; lat = 6.8 + 2 x 7 x 1.525 = 28.15; 28.15 + 43008 / 3873.684 = 28.15 + 11.10274 = 39.25274 */
    s.nccl_tuning = (cfg_nccl_tuning){.algorithm = CFG_NCCL_ALGO_TREE};
    cr_assert_float_eq(model_nccl_formula_us(&s, PLAN_OP_ALLREDUCE, S42K, 8, NULL, ap), 39.25274, EPS);
    cr_assert_str_eq(ap, "tree/LL");
    /* LL128 named on PCIe is used (NCCL enables it when NCCL_PROTO names it). NCCL's choice (busBw 15):
     * ring/LL128 14.0 + 14 x 2.5 + 43008 / (15 x 0.92 x 8 / 14 x 1000) = 54.454, tree/LL128 14.0 + 14 x 1.9
     * + 43008 / (15 x 0.92 x 7 / 9 x 0.5 x 0.7 x 1000) = 52.05: tree. Priced (channels 2): bw = 29.44 x 7/9 =
     * 22.897778, algbw 11.448889; lat = 14.0 + 14 x 1.525 = 35.35 -> 35.35 + 3.75653 = 39.10653 */
    s.nccl_tuning = (cfg_nccl_tuning){.protocol = CFG_NCCL_PROTO_LL128};
    cr_assert_float_eq(model_nccl_formula_us(&s, PLAN_OP_ALLREDUCE, S42K, 8, NULL, ap), 39.10653, EPS);
    cr_assert_str_eq(ap, "tree/LL128");
}

Test(nccl_model, allgather_stays_a_ring_under_algorithm_tree)
{
    cfg_system s = two_socket_pcie();
    s.nccl_tuning = (cfg_nccl_tuning){.channels = 1, .protocol = CFG_NCCL_PROTO_LL, .algorithm = CFG_NCCL_ALGO_TREE};
    char ap[16];
    /* All-gather of 43008 B per rank: NCCL's buffer 8 x 43008 = 344064 B, 7 ring steps; bw 8,
     * algbw = 8 x 8 / 7 = 9.142857; lat = 6.6 + 7 x 1.525 = 17.275; 17.275 + 344064 / 9142.857 = 17.275 +
     * 37.632 = 54.907 */
    cr_assert_float_eq(model_nccl_formula_us(&s, PLAN_OP_ALLGATHER, S42K, 8, NULL, ap), 54.907, EPS);
    cr_assert_str_eq(ap, "ring/LL");
}

Test(nccl_model, nvlink_channels_take_their_share_of_the_link)
{
    cfg_system s = two_socket_pcie();
    s.topology.interconnect = CFG_IC_NVLINK;
    s.nccl.channels = 16;
    model_terms t = {.n = 0};
    char ap[16];
    model_nccl_formula_us(&s, PLAN_OP_ALLREDUCE, S42K, 8, &t, ap);
    cr_assert_float_eq(term(&t, "busBw"), 370.0, 1e-9, "untuned: the per-GPU NVLink figure");
    s.nccl_tuning.channels = 4;
    t.n = 0;
    model_nccl_formula_us(&s, PLAN_OP_ALLREDUCE, S42K, 8, &t, ap);
    cr_assert_float_eq(term(&t, "busBw"), 4 * 370.0 / 16, 1e-9); /* 92.5 */
}

Test(nccl_model, measured_table_is_not_applied_with_any_tuning)
{
    cfg_system s = two_socket_pcie();
    s.measured.allreduce[CFG_BACKEND_NCCL] =
        (cfg_sys_table){.ranks = 8, .p2p = 1 + CFG_P2P_DIRECT, .n_bytes = 1, .n_us = 1, .bytes = {S42K}, .us = {200}};
    model_coll c;
    model_collective(&s, CFG_BACKEND_NCCL, PLAN_OP_ALLREDUCE, S42K, 8, NULL, &c);
    cr_assert_float_eq(c.us, 200.0, 1e-9, "NCCL's defaults: the measurement applies");
    cr_assert_null(c.table_skip);
    /* buffsize alone: not in NCCL's latency model, so the formula is the untuned one (32.654, ring/LL at 2
     * channels), but the measurement was taken with the default buffer and no longer applies. */
    s.nccl_tuning.buffsize = 1048576;
    model_collective(&s, CFG_BACKEND_NCCL, PLAN_OP_ALLREDUCE, S42K, 8, NULL, &c);
    cr_assert_float_eq(c.us, 32.654, EPS);
    cr_assert_null(c.table);
    cr_assert(c.table_skip && strstr(c.table_skip, "NCCL's defaults"), "%s", c.table_skip ? c.table_skip : "-");
    s.nccl_tuning = (cfg_nccl_tuning){.channels = 1};
    model_collective(&s, CFG_BACKEND_NCCL, PLAN_OP_ALLREDUCE, S42K, 8, NULL, &c);
    cr_assert_float_eq(c.us, 37.358, EPS);
    cr_assert(strstr(c.method, "scenario nccl: tuning"), "%s", c.method);
}

Test(nccl_model, cli_warns_table_not_applied_and_explains_the_variables)
{
    /* The default system (rtx-pro-6000-8x-pcie) carries a measured NCCL table. */
    th_result r = th_run("model configs/default.yaml --backend nccl --format json --set nccl.channels=1");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "table-not-applied") && strstr(r.out, "measured with NCCL's defaults"), "%s", r.out);
    th_free(&r);
    r = th_run("model configs/default.yaml --backend nccl --format json");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_null(strstr(r.out, "measured with NCCL's defaults"), "untuned: the table applies");
    th_free(&r);
    r = th_run("model configs/default.yaml --backend nccl --explain --set nccl.channels=1 --set nccl.protocol=LL");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "NCCL_MIN/MAX_NCHANNELS=1 NCCL_PROTO=LL"), "%s", r.out);
    th_free(&r);
}

/* ---------------- memory and the plan ---------------- */

static double item(const plan_memory *m, const char *name)
{
    for (int i = 0; i < m->n; i++)
        if (strcmp(m->items[i].name, name) == 0)
            return m->items[i].bytes;
    return -1.0;
}

Test(nccl_memory, channels_and_buffsize_from_the_scenario)
{
    const char *sets[] = {"nccl.channels=1", "nccl.buffsize=1M"};
    cfg_scenario sc;
    plan p;
    th_plan_build("configs/tiny.yaml", sets, 2, &sc, &p);
    cr_assert_eq(sc.system.nccl_tuning.channels, 1, "the loader hands the tuning to the system's models");
    plan_memory m;
    plan_memory_account(&sc, &p, CFG_BACKEND_NCCL, &m);
    /* 1 channel x 3 connections x (1,048,576 + LL 524,288 + LL128 4,915,200) = 3 x 6,488,064 */
    cr_assert_float_eq(item(&m, "NCCL buffers"), 19464192.0, 1e-6);
    th_plan_done(&sc, &p);
}

Test(nccl_plan, plan_shows_the_tuning_only_when_set)
{
    th_result r = th_run("plan configs/tiny.yaml --set nccl.channels=1 --set nccl.algorithm=tree");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "NCCL tuning (scenario nccl:): channels 1, protocol auto, algorithm tree"), "%s", r.out);
    cr_assert(strstr(r.out, "NCCL_MIN_NCHANNELS=1 NCCL_MAX_NCHANNELS=1 NCCL_ALGO=allreduce:tree"), "%s", r.out);
    cr_assert(strstr(r.out, "scenario nccl.channels 1 x 3 connections"), "%s", r.out);
    th_free(&r);
    r = th_run("plan configs/tiny.yaml");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_null(strstr(r.out, "NCCL tuning"));
    th_free(&r);
}

Test(nccl_cli, bad_values_name_the_choices)
{
    th_expect_bad(th_run("plan configs/tiny.yaml --set nccl.protocol=LL256"), "nccl.protocol",
                  "auto, LL, LL128, Simple");
    th_expect_bad(th_run("model configs/tiny.yaml --set nccl.algorithm=butterfly"), "nccl.algorithm",
                  "auto, ring, tree");
    th_expect_bad(th_run("plan configs/tiny.yaml --set nccl.channels=65"), "nccl.channels", "65");
    th_expect_bad(th_run("plan configs/tiny.yaml --set nccl.buffsize=3M"), "nccl.buffsize", "power of 2");
    th_expect_bad(th_run("plan configs/tiny.yaml --set nccl.buffsize=lots"), "nccl.buffsize", "1M");
    th_expect_bad(th_run("plan configs/tiny.yaml --set nccl.threads=4"), "nccl.threads", "");
}
