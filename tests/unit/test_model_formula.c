/* model: each formula against values computed by hand (the arithmetic is written out beside each). */
#include "../../sim/model/model.h"
#include "th_model.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#define S42K 43008.0 /* 3 tokens x 7168 x 2 B */
#define EPS 1e-3


Test(model_nccl, ring_ll_across_two_sockets_is_nccls_own_prediction)
{
    cfg_system s = th_pcie_system(8, 2, 0);
    model_terms t = {.n = 0};
    char ap[16];
    double us = model_nccl_formula_us(&s, PLAN_OP_ALLREDUCE, S42K, 8, &t, ap);
    /* busBw = min(2 channels x 16 (SYS), 48) = 32; ring/LL bw = min(141, 32 x 0.5) = 16;
     * algbw = 16 x 8 / 14 = 9.142857; 43008 / 9142.857 = 4.704. A step waits max(hwLat 1.0, the link's
     * store visibility): 1.3 us within a socket (PCIe 0.5 + root complex 0.3 + PCIe 0.5), 2.2 across
     * (+ socket 0.6 + root complex 0.3); 6 + 2 of the 8 ring links: mean 1.525. lat = 6.6 + 14 x 1.525
     * = 27.95 -> 32.654 (NCCL's own formula, with hwLat alone, says 25.304) */
    cr_assert_float_eq(us, 32.654, EPS, "got %f", us);
    cr_assert_str_eq(ap, "ring/LL");
    cr_assert_float_eq(model_term_get(&t, "busBw"), 32.0, 1e-9);
    /* NCCL's choice, with its own numbers: the search's ring (bottleneck SYS 16 GB/s, sm90 speeds: 15, one
     * channel) gives busBw 15. ring/LL: min(141, 7.5) x 8 / 14 = 4.285714 -> 10.0352 + 6.6 + 14 x 1.0 =
     * 30.6352; tree/LL: 15 x 0.92 / 3.8 x 0.5 = 1.815789, x NCCL's treeCorrectionFactor for LL at
     * 43,008 B (log2(43008 / 64) = 9: 0.7) = 1.271053 -> 33.8368 + 6.8 + 14 x 1.0 = 54.6368;
     * ring/Simple: 15 x 8 / 14 -> 5.0176 + 8.4 + 14 x 5.7 = 93.2176. ring/LL is the fastest. */
    cr_assert_float_eq(model_term_get(&t, "tuning ring/LL"), 30.6352, EPS);
    cr_assert_float_eq(model_term_get(&t, "tuning tree/LL"), 54.6368, EPS);
    cr_assert_float_eq(model_term_get(&t, "tuning ring/Simple"), 93.2176, EPS);
    cr_assert_float_eq(model_term_get(&t, "search"), 15.0, 1e-9);
    /* LL128 is never considered on PCIe. */
    cr_assert(isnan(model_term_get(&t, "tuning ring/LL128")));
}

Test(model_nccl, one_socket_uses_the_pcie_figure)
{
    cfg_system s = th_pcie_system(8, 1, 0);
    /* busBw = min(2 x 48, 48) = 48; LL 24; algbw 24 x 8 / 14 = 13.714 -> 3.136; every ring link 1.3 us:
     * 6.6 + 14 x 1.3 = 24.8 -> 27.936 */
    cr_assert_float_eq(model_nccl_formula_us(&s, PLAN_OP_ALLREDUCE, S42K, 8, NULL, NULL), 27.936, EPS);
}

Test(model_nccl, nvlink_allows_ll128_and_uses_nvlink_latencies)
{
    cfg_system s = th_pcie_system(8, 2, 0);
    s.topology.interconnect = CFG_IC_NVLINK;
    model_terms t = {.n = 0};
    char ap[16];
    double us = model_nccl_formula_us(&s, PLAN_OP_ALLREDUCE, S42K, 8, &t, ap);
    /* busBw 370; ring/LL bw = min(141, 185) = 141, algbw = 141 x 8 / 14 = 80.571 -> 0.5338;
     * a step max(hwLat 0.6, nvlink_lat_us 0.7) = 0.7: lat = 6.6 + 14 x 0.7 = 16.4 -> 16.9338 */
    cr_assert_float_eq(us, 16.9338, EPS, "got %f", us);
    cr_assert_str_eq(ap, "ring/LL");
    /* NCCL's own estimate for ring/LL128: lat 14.0 + 14 x 1.9 = 40.6; algbw = 370 x 0.92 x 8 / 14 = 194.51
     * -> 0.2211 -> 40.8211 (ring/LL: 6.6 + 14 x 0.6 + 0.5338 = 15.534 is its choice) */
    cr_assert_float_eq(model_term_get(&t, "tuning ring/LL128"), 40.8211, EPS);
    cr_assert_float_eq(model_term_get(&t, "tuning ring/LL"), 15.5338, EPS);
}

Test(model_nccl, allgather_is_a_ring_over_the_whole_buffer)
{
    cfg_system s = th_pcie_system(8, 1, 0);
    model_terms t = {.n = 0};
    /* 15360 B per rank, nBytes = 8 x 15360 = 122880; nsteps = 7; LL: bw 24, algbw 24 x 8 / 7 = 27.4286;
     * 6.6 + 7 x 1.3 + 122880 / 27428.6 = 15.7 + 4.48 = 20.18 */
    double us = model_nccl_formula_us(&s, PLAN_OP_ALLGATHER, 15360, 8, &t, NULL);
    cr_assert_float_eq(us, 20.18, EPS, "got %f", us);
    cr_assert(isnan(model_term_get(&t, "tree/LL")), "all-gather has no tree");
}

Test(model_nccl, intel_host_sends_cross_switch_ring_links_through_host_memory)
{
    cfg_system s = th_pcie_system(8, 1, 4);
    s.topology.cpu_vendor = CFG_CPU_INTEL;
    model_coll c;
    model_collective(&s, CFG_BACKEND_NCCL, PLAN_OP_ALLREDUCE, S42K, 8, NULL, &c);
    /* Ring neighbours (3,4) and (7,0) cross the root complex (PHB > PXB on Intel): 2 of 8 links through
     * SHM. Within a switch a store takes PCIe 0.5 + switch 0.15 + PCIe 0.5 = 1.15 us; through host memory
     * the store up (0.5 + 0.15 + root complex 0.3 + DRAM 0.3 = 1.25) and the poll's round trip (2 x 1.25):
     * 3.75. Mean step (6 x 1.15 + 2 x 3.75) / 8 = 1.8: 6.6 + 14 x 1.8 = 31.8. The SHM links carry what a
     * GPU stores in host memory and the next loads back: min(63 x 0.85, 53.55 x read_efficiency 0.75) =
     * 40.1625 GB/s caps busBw 48: ring/LL algbw 0.5 x 40.1625 x 8 / 14 = 11.4750 -> 3.748; 35.548 */
    cr_assert_float_eq(c.us, 35.548, EPS, "got %f", c.us);
    cr_assert(strstr(c.method, "P2P + SHM"), "%s", c.method);
    s.topology.cpu_vendor = CFG_CPU_AMD;
    model_collective(&s, CFG_BACKEND_NCCL, PLAN_OP_ALLREDUCE, S42K, 8, NULL, &c);
    /* AMD: P2P everywhere; the two cross-switch links 0.5 + 0.15 + 0.3 + 0.15 + 0.5 = 1.6 us: mean
     * (6 x 1.15 + 2 x 1.6) / 8 = 1.2625 -> 6.6 + 17.675 + 3.136 = 27.411 */
    cr_assert_float_eq(c.us, 27.411, EPS, "AMD: P2P everywhere, got %f", c.us);
}

/* Four GPUs on one socket, direct attach: one-way latency 0.5 + 0.3 + 0.5 = 1.3 us; barrier = fence 1.0 +
 * 1.3 = 2.3; a load's round trip = 2 x 1.3 + 0.3 (the peer's memory, mem_latency_us) = 2.9. */
Test(model_ipc, oneshot_loads_bottleneck_on_the_root_complex)
{
    cfg_system s = th_pcie_system(4, 1, 0);
    model_terms t = {.n = 0};
    double us = th_coll(&s, CFG_BACKEND_ONESHOT, PLAN_OP_ALLREDUCE, S42K, 4, &t);
    /* Loads: 12 flows x 43008 = 516096 B through the root complex at 100 GB/s = 5.16096 us (each GPU's
     * inbound link: 3 x 43008 = 129024 B at 63 x 0.85 x 0.75 = 40.1625 GB/s = 3.2125 us, less).
     * t = kernel floor 1.2 + 2 barriers x 2.3 + round trip 2.9 + 5.16096 = 13.86096 */
    cr_assert_float_eq(us, 13.86096, EPS, "got %f", us);
    cr_assert_float_eq(model_term_get(&t, "kernel_floor"), 1.2, 1e-9);
    cr_assert_float_eq(model_term_get(&t, "barrier"), 2.3, 1e-9);
}

Test(model_ipc, twoshot_moves_a_quarter_per_stage_with_three_barriers)
{
    cfg_system s = th_pcie_system(4, 1, 0);
    /* chunk 10752; per stage: 12 x 10752 = 129024 B / 100 GB/s = 1.29024 + round trip 2.9 = 4.19024;
     * t = kernel floor 1.2 + 3 x 2.3 + 2 x 4.19024 = 16.48048 */
    cr_assert_float_eq(th_coll(&s, CFG_BACKEND_TWOSHOT, PLAN_OP_ALLREDUCE, S42K, 4, NULL), 16.48048, EPS);
}

Test(model_ipc, push_writes_twice_the_payload_with_no_barrier)
{
    cfg_system s = th_pcie_system(4, 1, 0);
    /* wire 2 x 43008 = 86016 per peer; root complex: 12 x 86016 = 1032192 B / 100 GB/s = 10.32192 (each GPU's
     * inbound: 258048 B at 63 x 0.85 x 0.8 = 42.84 GB/s = 6.0235, less); + one-way latency 1.3 + kernel floor 1.2
     * = 12.82192 */
    cr_assert_float_eq(th_coll(&s, CFG_BACKEND_PUSH, PLAN_OP_ALLREDUCE, S42K, 4, NULL), 12.82192, EPS);
}

Test(model_ipc, sysmem_oneshot_stages_through_host_memory)
{
    cfg_system s = th_pcie_system(2, 1, 0);
    s.topology.p2p = CFG_P2P_SYSMEM;
    /* Stage to host: GPU out 0.5 + RC 0.3 + host 0.3 = 1.1 us; root complex 2 x 43008 / 100 GB/s = 0.86016
     * -> 1.96016. Barrier: fence 1.0 + 1.1 + polling round trip 2 x 1.1 = 4.3 (two of them). Loads from host:
     * round trip 2 x 1.1 = 2.2, GPU inbound 43008 B at 40.1625 GB/s = 1.07085 -> 3.27085.
     * t = kernel floor 1.2 + 1.96016 + 8.6 + 3.27085 = 15.03101 */
    cr_assert_float_eq(th_coll(&s, CFG_BACKEND_ONESHOT, PLAN_OP_ALLREDUCE, S42K, 2, NULL), 15.03101, EPS);
}

Test(model_ipc, crossing_sockets_makes_the_socket_link_the_bottleneck)
{
    cfg_system s = th_pcie_system(8, 2, 0);
    model_terms t = {.n = 0};
    double us = th_coll(&s, CFG_BACKEND_ONESHOT, PLAN_OP_ALLREDUCE, S42K, 8, &t);
    /* 4 x 4 flows x 43008 = 688128 B each way across the socket link at 30 GB/s = 22.9376 us;
     * one-way SYS latency 0.5 + 0.3 + 0.6 + 0.3 + 0.5 = 2.2 -> barrier 3.2, round trip 4.4 + 0.3 = 4.7;
     * t = kernel floor 1.2 + 6.4 + 4.7 + 22.9376 = 35.2376 */
    cr_assert_float_eq(us, 35.2376, EPS, "got %f", us);
    bool named = false;
    for (int i = 0; i < t.n; i++)
        named |= strstr(t.t[i].note, "socket link") != NULL;
    cr_assert(named, "the explanation names the socket link as the bottleneck");
}

Test(model_mpi, host_staged_copy_mpi_copy)
{
    cfg_system s = th_pcie_system(4, 1, 0);
    /* PCIe 63 x 0.85 = 53.55 GB/s: copies 2 x (10 + 43008 / 53550) = 21.60628; MPI on fp32 (86,016 B):
     * log2 4 = 2 steps x (1.5 + 86016 / 8000) = 24.504; the host converts 43008 B in and 43008 B out at
     * convert_gbs 3: 28.672 -> 74.78228 */
    cr_assert_float_eq(th_coll(&s, CFG_BACKEND_MPI, PLAN_OP_ALLREDUCE, S42K, 4, NULL), 74.78228, EPS);
}

Test(model_availability, every_refusal_says_why)
{
    cfg_system s = th_pcie_system(8, 2, 0);
    char why[256];
    cr_assert_not(model_backend_available(&s, CFG_BACKEND_NCCL_SYMM, 8, why, sizeof(why)));
    cr_assert(strstr(why, "NVLink"), "%s", why);
    cr_assert_not(model_backend_available(&s, CFG_BACKEND_MODEL, 8, why, sizeof(why)));
    cr_assert(strstr(why, "replay-only"), "%s", why);
    cr_assert_not(model_backend_available(&s, CFG_BACKEND_NCCL, 16, why, sizeof(why)));
    cr_assert(strstr(why, "needs 16 GPUs"), "%s", why);
    cr_assert(model_backend_available(&s, CFG_BACKEND_NONE, 16, why, sizeof(why)));
    s.topology.p2p = CFG_P2P_OFF;
    cr_assert_not(model_backend_available(&s, CFG_BACKEND_PUSH, 8, why, sizeof(why)));
    cr_assert(strstr(why, "p2p=off"), "%s", why);
    cr_assert(model_backend_available(&s, CFG_BACKEND_NCCL, 8, why, sizeof(why)), "NCCL falls back to SHM");
    cr_assert(model_backend_available(&s, CFG_BACKEND_MPI, 8, why, sizeof(why)));
    s.topology.interconnect = CFG_IC_NVLINK;
    s.topology.p2p = CFG_P2P_DIRECT;
    cr_assert(model_backend_available(&s, CFG_BACKEND_NCCL_SYMM, 8, why, sizeof(why)));
}

/* ---------------- measured tables ---------------- */

static double linear_formula(void *ctx, double bytes)
{
    (void)ctx;
    return bytes / 1000.0;
}

Test(model_table, single_point_keeps_the_formulas_shape_away_from_it)
{
    cfg_sys_table t = {.n_bytes = 1, .n_us = 1, .bytes = {43008}, .us = {200}};
    cr_assert_float_eq(model_table_eval(&t, 43008, linear_formula, NULL), 200.0, 1e-9);
    /* 200 + 86.016 - 43.008 = 243.008; below: 200 + 21.504 - 43.008 = 178.496 */
    cr_assert_float_eq(model_table_eval(&t, 86016, linear_formula, NULL), 243.008, 1e-9);
    cr_assert_float_eq(model_table_eval(&t, 21504, linear_formula, NULL), 178.496, 1e-9);
    /* Without a formula: scale with size above, hold below. */
    cr_assert_float_eq(model_table_eval(&t, 86016, NULL, NULL), 400.0, 1e-9);
    cr_assert_float_eq(model_table_eval(&t, 1000, NULL, NULL), 200.0, 1e-9);
}

Test(model_table, interpolates_in_log_bytes)
{
    cfg_sys_table t = {.n_bytes = 3, .n_us = 3, .bytes = {1e4, 1e6, 1e8}, .us = {10, 20, 220}};
    /* 1e7 is halfway between 1e6 and 1e8 in log: 20 + 0.5 x 200 = 120; 1e5 halfway: 15 */
    cr_assert_float_eq(model_table_eval(&t, 1e7, NULL, NULL), 120.0, 1e-9);
    cr_assert_float_eq(model_table_eval(&t, 1e5, NULL, NULL), 15.0, 1e-9);
    cr_assert_float_eq(model_table_eval(&t, 1e8, NULL, NULL), 220.0, 1e-9);
}

Test(model_table, inconsistent_tables_are_reported)
{
    cfg_sys_table t = {.n_bytes = 2, .n_us = 1, .bytes = {1, 2}, .us = {1}};
    cr_assert(strstr(model_table_check(&t), "2 value(s) but us has 1"));
    cfg_sys_table u = {.n_bytes = 2, .n_us = 2, .bytes = {5, 5}, .us = {1, 2}};
    cr_assert(strstr(model_table_check(&u), "strictly increasing"));
    cfg_sys_table ok = {.n_bytes = 2, .n_us = 2, .bytes = {5, 6}, .us = {1, 2}};
    cr_assert_str_eq(model_table_check(&ok), "");
}

Test(model_table, measured_allreduce_overrides_only_where_it_was_measured)
{
    cfg_system s = th_pcie_system(8, 2, 0);
    cfg_sys_table *t = &s.measured.allreduce[CFG_BACKEND_NCCL];
    *t = (cfg_sys_table){.ranks = 8, .p2p = 1 + CFG_P2P_DIRECT, .n_bytes = 1, .n_us = 1, .bytes = {S42K}, .us = {200}};
    cr_assert_float_eq(th_coll(&s, CFG_BACKEND_NCCL, PLAN_OP_ALLREDUCE, S42K, 8, NULL), 200.0, 1e-9);
    s.topology.p2p = CFG_P2P_SYSMEM;
    cr_assert(th_coll(&s, CFG_BACKEND_NCCL, PLAN_OP_ALLREDUCE, S42K, 8, NULL) < 100.0, "measured under p2p=direct only");
    s.topology.p2p = CFG_P2P_DIRECT;
    s.measured.use = false;
    cr_assert_float_eq(th_coll(&s, CFG_BACKEND_NCCL, PLAN_OP_ALLREDUCE, S42K, 8, NULL), 32.654, EPS);
}

/* ---------------- compute ops ---------------- */

static plan_op gemm_op(long long m, long long k, long long n)
{
    plan_op op;
    memset(&op, 0, sizeof(op));
    op.kind = PLAN_OP_GEMM;
    op.m = m;
    op.k = k;
    op.n = n;
    op.batch = 1;
    op.wdtype = op.adtype = CFG_DT_BF16;
    plan_op_finalize(&op);
    return op;
}

Test(model_compute, decode_gemm_is_memory_bound)
{
    cfg_system s = th_pcie_system(8, 2, 0);
    plan_op op = gemm_op(3, 1024, 7168); /* o_proj at TP=8, 3 tokens */
    model_terms t = {.n = 0};
    const char *src = NULL;
    double us = model_op_us(&s, &op, false, &t, &src);
    /* bytes: 1024 x 7168 x 2 + 3 x 1024 x 2 + 3 x 7168 x 2 = 14729216; bandwidth 1792 x 0.95 = 1702.4 GB/s;
     * t_mem = 0.3 + 14729216 / 1702400 = 8.95203. t_compute = 2 x 3 x 1024 x 7168 / (500e6 x 0.7 x 3/64)
     * = 2.6844. max(1.2, 8.95203, 2.6844) = 8.95203 */
    cr_assert_float_eq(us, 8.95203, EPS, "got %f", us);
    cr_assert_float_eq(model_term_get(&t, "t_compute"), 2.6844, EPS);
    cr_assert_str_eq(src, "formula");
    cr_assert(strstr(t.t[t.n - 1].note, "memory-bound"));
}

Test(model_compute, big_gemm_is_compute_bound_and_tiny_ops_hit_the_floor)
{
    cfg_system s = th_pcie_system(8, 2, 0);
    plan_op big = gemm_op(4096, 4096, 4096);
    /* 2 x 4096^3 = 1.37439e11 flops / (500e6 flop/us x 0.7) = 392.68 us; memory 0.3 + 100663296 / 1702400 =
     * 59.43 us */
    cr_assert_float_eq(model_op_us(&s, &big, false, NULL, NULL), 392.6827, EPS);
    plan_op norm;
    memset(&norm, 0, sizeof(norm));
    norm.kind = PLAN_OP_NORM;
    norm.m = 3;
    norm.n = 512;
    norm.batch = 1;
    norm.adtype = CFG_DT_BF16;
    plan_op_finalize(&norm);
    cr_assert_float_eq(model_op_us(&s, &norm, false, NULL, NULL), 1.2, 1e-12, "kernel floor");
    /* A cycle that fits in L2 streams from L2: 14729216 / 5e6 + 0.3 = 3.24584 */
    plan_op o = gemm_op(3, 1024, 7168);
    cr_assert_float_eq(model_op_us(&s, &o, true, NULL, NULL), 3.24584, EPS);
}

Test(model_compute, measured_op_table_replaces_the_formula)
{
    cfg_system s = th_pcie_system(8, 2, 0);
    s.measured.ops[PLAN_OP_GEMM] =
        (cfg_sys_table){.n_bytes = 2, .n_us = 2, .bytes = {1e6, 1e8}, .us = {5, 105}, .source = "test"};
    plan_op op = gemm_op(3, 1024, 7168); /* 14729216 B: log position (log(1.4729e7) - log(1e6)) / log(100) */
    const char *src = NULL;
    double us = model_op_us(&s, &op, false, NULL, &src);
    double f = (log(14729216.0) - log(1e6)) / (log(1e8) - log(1e6));
    cr_assert_float_eq(us, 5 + 100 * f, 1e-9);
    cr_assert_str_eq(src, "measured");
    s.measured.use = false;
    cr_assert_float_eq(model_op_us(&s, &op, false, NULL, &src), 8.95203, EPS);
}

/* bench-allreduce's per-call model: the collective plus the launch terms of the cycle's timeline. */
Test(model_bench, graph_adds_a_node_gap_eager_runs_ahead_or_waits_for_the_host)
{
    cfg_system s = th_pcie_system(4, 1, 0);
    s.launch.graph_node_us = 0.5;
    s.launch.eager_gap_us = 1.0;
    s.launch.eager_us = 6.0;
    s.launch.eager_collective_us = 12.0;
    model_coll c;
    const double push = th_coll(&s, CFG_BACKEND_PUSH, PLAN_OP_ALLREDUCE, S42K, 4, NULL); /* 12.82192 */
    model_bench_call(&s, CFG_BACKEND_PUSH, PLAN_OP_ALLREDUCE, S42K, 4, true, &c);
    cr_assert_float_eq(c.us, push + 0.5, EPS, "graph: collective + graph_node_us, got %f", c.us);
    /* Eager: a custom kernel is launched like any kernel (eager_us 6 < 12.82 + 1): GPU-bound. */
    model_bench_call(&s, CFG_BACKEND_PUSH, PLAN_OP_ALLREDUCE, S42K, 4, false, &c);
    cr_assert_float_eq(c.us, push + 1.0, EPS, "eager, GPU-bound: + eager_gap_us, got %f", c.us);
    cr_assert(strstr(c.method, "eager_gap") != NULL, "%s", c.method);
    /* A tiny payload: the host's launch is the longer: NCCL pays eager_collective_us, a custom kernel
     * eager_us. */
    const double nccl16 = th_coll(&s, CFG_BACKEND_NCCL, PLAN_OP_ALLREDUCE, 16, 4, NULL);
    model_bench_call(&s, CFG_BACKEND_NCCL, PLAN_OP_ALLREDUCE, 16, 4, false, &c);
    cr_assert_float_eq(c.us, fmax(nccl16 + 1.0, 12.0), EPS, "got %f for NCCL's %f", c.us, nccl16);
    cr_assert_float_eq(model_collective_launch_us(&s, CFG_BACKEND_NCCL), 12.0, EPS);
    cr_assert_float_eq(model_collective_launch_us(&s, CFG_BACKEND_ONESHOT), 6.0, EPS);
    s.links.pcie_lat_us = 0.01;
    s.links.root_complex_lat_us = 0.01;
    s.links.fence_us = 0.01;
    s.gpu.kernel_floor_us = 0.1;
    model_bench_call(&s, CFG_BACKEND_PUSH, PLAN_OP_ALLREDUCE, 16, 4, false, &c);
    cr_assert_float_eq(c.us, 6.0, EPS, "host-bound custom kernel: eager_us, got %f", c.us);
    cr_assert(strstr(c.method, "host-bound") != NULL, "%s", c.method);
    /* Host-staged MPI cannot be captured: its own time, graph or not. */
    model_coll g, e;
    model_bench_call(&s, CFG_BACKEND_MPI, PLAN_OP_ALLREDUCE, S42K, 4, true, &g);
    model_bench_call(&s, CFG_BACKEND_MPI, PLAN_OP_ALLREDUCE, S42K, 4, false, &e);
    cr_assert_float_eq(g.us, e.us, EPS);
    cr_assert_float_eq(g.us, th_coll(&s, CFG_BACKEND_MPI, PLAN_OP_ALLREDUCE, S42K, 4, NULL), EPS);
}

/* ---------------- reduce-scatter (collectives.allreduce_split) ---------------- */

Test(model_reduce_scatter, nccl_is_a_ring_of_n_minus_1_steps_over_the_payload)
{
    cfg_system s = th_pcie_system(8, 1, 0);
    model_terms t = {.n = 0};
    /* Whole buffer 43008 B (the payload each rank sends); ring only, nsteps 7; busBw min(2 x 48, 48) = 48.
     * LL: bw 24, algbw 24 x 8 / 7 = 27.428571; a step max(1.0, 1.3 us per link): 6.6 + 7 x 1.3 +
     * 43008 / 27428.571 = 15.7 + 1.568 = 17.268. NCCL's own choice: the search's ring (48 GB/s links, sm90
     * speeds: 40, one channel, duplicated to 2 x 20) gives busBw 40; Simple: 8.4 + 7 x 5.7 = 48.3 + 43008 /
     * (40 x 8 / 7 x 1000) = 49.2408 against LL's 6.6 + 7 + 43008 / 22857 = 15.4816: LL. */
    const double us = th_coll(&s, CFG_BACKEND_NCCL, PLAN_OP_REDUCE_SCATTER, S42K, 8, &t);
    cr_assert_float_eq(us, 17.268, EPS, "got %f", us);
    cr_assert_float_eq(model_term_get(&t, "tuning ring/Simple"), 49.2408, EPS);
    cr_assert_float_eq(model_term_get(&t, "tuning ring/LL"), 15.4816, EPS);
    cr_assert(isnan(model_term_get(&t, "tuning tree/LL")), "NCCL's reduce-scatter has no tree");
    /* NCCL times a reduce-scatter of S like an all-gather of S / n per rank: the same ring over the
     * same buffer. */
    cr_assert_float_eq(us, th_coll(&s, CFG_BACKEND_NCCL, PLAN_OP_ALLGATHER, S42K / 8, 8, NULL), EPS);
}

Test(model_reduce_scatter, ipc_is_two_barriers_and_block_loads_for_every_custom_backend)
{
    cfg_system s = th_pcie_system(4, 1, 0);
    /* Block 43008 / 4 = 10752; loads: 12 flows x 10752 = 129024 B / root complex 100 GB/s = 1.29024 +
     * round trip 2.9 = 4.19024; t = kernel floor 1.2 + 2 barriers x 2.3 + 4.19024 = 9.99024. */
    model_terms t = {.n = 0};
    cr_assert_float_eq(th_coll(&s, CFG_BACKEND_ONESHOT, PLAN_OP_REDUCE_SCATTER, S42K, 4, &t), 9.99024, EPS);
    cr_assert_float_eq(model_term_get(&t, "block_loads"), 4.19024, EPS);
    cr_assert_float_eq(th_coll(&s, CFG_BACKEND_TWOSHOT, PLAN_OP_REDUCE_SCATTER, S42K, 4, NULL), 9.99024, EPS);
    cr_assert_float_eq(th_coll(&s, CFG_BACKEND_PUSH, PLAN_OP_REDUCE_SCATTER, S42K, 4, NULL), 9.99024, EPS);
}

Test(model_reduce_scatter, mpi_stages_the_payload_down_and_the_block_up)
{
    cfg_system s = th_pcie_system(4, 1, 0);
    /* PCIe 53.55 GB/s: down 10 + 43008 / 53550 = 10.803137, up 10 + 10752 / 53550 = 10.200784; MPI: 2 steps
     * moving 43008 x 3/4 / 2 = 16128 B of bf16, 32256 B as fp32, each: 2 x (1.5 + 32256 / 8000) = 11.064
     * ; conversions (43008 in + 10752 out) / 3000 = 17.92 -> 49.987921 */
    cr_assert_float_eq(th_coll(&s, CFG_BACKEND_MPI, PLAN_OP_REDUCE_SCATTER, S42K, 4, NULL), 49.987921, EPS);
}

Test(model_reduce_scatter, an_allreduce_table_does_not_apply)
{
    cfg_system s = th_pcie_system(8, 1, 0);
    cfg_sys_table *t = &s.measured.allreduce[CFG_BACKEND_NCCL];
    t->n_bytes = t->n_us = 1;
    t->bytes[0] = S42K;
    t->us[0] = 500.0;
    cr_assert_float_eq(th_coll(&s, CFG_BACKEND_NCCL, PLAN_OP_ALLREDUCE, S42K, 8, NULL), 500.0, EPS);
    cr_assert_float_eq(th_coll(&s, CFG_BACKEND_NCCL, PLAN_OP_REDUCE_SCATTER, S42K, 8, NULL), 17.268, EPS);
}
