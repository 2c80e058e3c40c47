/* The link quantities (model_links.c): a probe's measured paths replace what the model derives from the
 * links, in barriers, peer and host stages, and NCCL's steps. Values by hand beside each assertion;
 * th_pcie_system's links give 1.3 us for a store within a socket and 2.9 us for a load round trip. */
#include "../../sim/model/model.h"
#include "test_helpers.h"
#include "th_model.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#define S42K 43008.0
#define EPS 1e-3

static void fill(cfg_paths_list *l, int n, double off_diagonal)
{
    l->n = n * n;
    for (int i = 0; i < n * n; i++)
        l->v[i] = i / n == i % n ? 0.0 : off_diagonal;
}

static void fill_per_gpu(cfg_paths_list *l, int n, double v)
{
    l->n = n;
    for (int i = 0; i < n; i++)
        l->v[i] = v;
}


Test(model_links, measured_visibility_sets_barriers_and_nccl_steps)
{
    cfg_system s = th_pcie_system(4, 1, 0);
    /* Derived: oneshot = floor 1.2 + 2 barriers x (fence 1 + 1.3) + round trip 2.9 + 12 x 43,008 B through
     * the root complex at 100 GB/s (5.16096) = 13.86096. */
    cr_assert_float_eq(th_coll(&s, CFG_BACKEND_ONESHOT, PLAN_OP_ALLREDUCE, S42K, 4, NULL), 13.86096, EPS);
    s.paths.gpus = 4;
    fill(&s.paths.visible_us, 4, 5.0);
    /* A store seen after 5 us: each barrier 1 + 5 = 6, the rest as derived: 13.86096 + 2 x 3.7. */
    model_terms t = {.n = 0};
    cr_assert_float_eq(th_coll(&s, CFG_BACKEND_ONESHOT, PLAN_OP_ALLREDUCE, S42K, 4, &t), 21.26096, EPS);
    cr_assert_float_eq(model_term_get(&t, "barrier"), 6.0, EPS);
    /* NCCL, 4 ranks, its choice ring/LL (its own numbers, 4 ranks on a 40 GB/s two-channel graph: 6.6 + 6 x
     * 1.0 + 43,008 / (20 x 4 / 6 x 1000) = 15.8256 against ring/Simple 8.4 + 6 x 5.7 + 1.6128 = 44.2128).
     * Priced: each LL step is the store's 5 us: 6.6 + 6 x 5 + 43,008 / (24 x 4 / 6 GB/s) = 36.6 + 2.688 =
     * 39.288. */
    t.n = 0;
    cr_assert_float_eq(th_coll(&s, CFG_BACKEND_NCCL, PLAN_OP_ALLREDUCE, S42K, 4, &t), 39.288, EPS);
    cr_assert_float_eq(model_term_get(&t, "tuning ring/Simple"), 44.2128, EPS);
    cr_assert_float_eq(model_term_get(&t, "tuning ring/LL"), 15.8256, EPS);
    cr_assert_float_eq(model_term_get(&t, "ring_link_latency"), 5.0, EPS);
    /* Faster than NCCL's hwLat: on PCIe the link's own latency is the step (6.6 + 6 x 0.5 + 2.688). */
    fill(&s.paths.visible_us, 4, 0.5);
    cr_assert_float_eq(th_coll(&s, CFG_BACKEND_NCCL, PLAN_OP_ALLREDUCE, S42K, 4, NULL), 12.288, EPS);
}

Test(model_links, measured_all_pairs_bandwidth_and_round_trip_set_the_load_stage)
{
    cfg_system s = th_pcie_system(4, 1, 0);
    s.paths.gpus = 4;
    fill(&s.paths.visible_us, 4, 5.0);
    fill(&s.paths.load_rtt_us, 4, 4.0);
    fill(&s.paths.all_load_gbs, 4, 20.0);
    model_terms t = {.n = 0};
    /* peer loads: round trip 4 + 43,008 B at 20 GB/s per pair (2.1504) = 6.1504;
     * oneshot = 1.2 + 2 x 6 + 6.1504 = 19.3504 */
    cr_assert_float_eq(th_coll(&s, CFG_BACKEND_ONESHOT, PLAN_OP_ALLREDUCE, S42K, 4, &t), 19.3504, EPS);
    cr_assert_float_eq(model_term_get(&t, "peer_loads"), 6.1504, EPS);
}

Test(model_links, many_writers_cap_the_push_stores)
{
    cfg_system s = th_pcie_system(4, 1, 0);
    s.paths.gpus = 4;
    fill(&s.paths.visible_us, 4, 5.0);
    fill(&s.paths.all_store_gbs, 4, 30.0);
    fill_per_gpu(&s.paths.many_writer_gbs, 4, 40.0);
    /* push: 43,008 x 2 (push_expansion) = 86,016 B per peer; per pair at 30 GB/s 2.8672 us, but into one
     * GPU 3 x 86,016 = 258,048 B at 40 GB/s = 6.4512 us: push = 1.2 + visible 5 + 6.4512 = 12.6512 */
    cr_assert_float_eq(th_coll(&s, CFG_BACKEND_PUSH, PLAN_OP_ALLREDUCE, S42K, 4, NULL), 12.6512, EPS);
}

Test(model_links, host_lists_set_the_staged_path)
{
    cfg_system s = th_pcie_system(4, 1, 0);
    s.topology.p2p = CFG_P2P_SYSMEM;
    s.paths.gpus = 4;
    fill(&s.paths.host_visible_us, 4, 4.0);
    fill_per_gpu(&s.paths.host_store_gbs, 4, 10.0);
    fill_per_gpu(&s.paths.host_load_gbs, 4, 8.0);
    fill_per_gpu(&s.paths.host_load_rtt_us, 4, 2.0);
    model_terms t = {.n = 0};
    /* stage to host: half a round trip 1 + 43,008 B at 10 GB/s = 5.3008; barriers 2 x (1 + 4);
     * loads from host: round trip 2 + 3 peers x 43,008 B at 8 GB/s = 18.128;
     * oneshot = 1.2 + 5.3008 + 10 + 18.128 = 34.6288 */
    cr_assert_float_eq(th_coll(&s, CFG_BACKEND_ONESHOT, PLAN_OP_ALLREDUCE, S42K, 4, &t), 34.6288, EPS);
    cr_assert_float_eq(model_term_get(&t, "loads_from_host"), 18.128, EPS);
    /* NCCL through host memory (SHM), its choice ring/LL (15.8256 on its own numbers): each LL step waits for
     * a line through host memory, host_visible 4, and the ring carries min(stores 10, loads 8) = 8 GB/s:
     * LL bw 4, algbw 4 x 4 / 6 = 2.6667 -> 16.128; 6.6 + 6 x 4 + 16.128 = 46.728. */
    t.n = 0;
    cr_assert_float_eq(th_coll(&s, CFG_BACKEND_NCCL, PLAN_OP_ALLREDUCE, S42K, 4, &t), 46.728, EPS);
    cr_assert_float_eq(model_term_get(&t, "ring_link_latency"), 4.0, EPS);
    /* Simple pays the fence and the dependent load from host memory too: 4 + 1 + 2 = 7 per step. */
    s.nccl_tuning.protocol = CFG_NCCL_PROTO_SIMPLE;
    t.n = 0;
    th_coll(&s, CFG_BACKEND_NCCL, PLAN_OP_ALLREDUCE, S42K, 4, &t);
    cr_assert_float_eq(model_term_get(&t, "ring_link_latency"), 7.0, EPS);
}

Test(model_links, a_probe_covering_fewer_gpus_leaves_the_rest_derived)
{
    cfg_system s = th_pcie_system(4, 1, 0);
    s.paths.gpus = 2; /* measured between GPUs 0 and 1 only */
    fill(&s.paths.visible_us, 2, 5.0);
    model_terms t = {.n = 0};
    /* 4 ranks: the pairs outside the probe's 2 GPUs take 1.3; the slowest flag is the measured 5 */
    th_coll(&s, CFG_BACKEND_ONESHOT, PLAN_OP_ALLREDUCE, S42K, 4, &t);
    cr_assert_float_eq(model_term_get(&t, "barrier"), 6.0, EPS);
    /* ring links 0->1 and 1->0 measured only when both ends are covered: 0->1 5, 1->2 1.3, 2->3 1.3,
     * 3->0 1.3: mean 2.225 */
    t.n = 0;
    th_coll(&s, CFG_BACKEND_NCCL, PLAN_OP_ALLREDUCE, S42K, 4, &t);
    cr_assert_float_eq(model_term_get(&t, "ring_link_latency"), 2.225, EPS);
}

/* A paths list of the wrong length, or a zero off the diagonal, is refused where it stands. */
Test(model_links, unsound_paths_are_refused_at_the_key)
{
    const char *bad_len = "name: t\ngpus: 2\ngpu:\n  name: g\npaths:\n  gpus: 2\n  visible_us: [0, 1.5, 1.5]\n";
    char *f = th_write_temp(bad_len, strlen(bad_len), ".yaml");
    th_expect_bad(th_run("model configs/tiny.yaml --system %s", f), ":7:",
                  "paths.visible_us: 3 values, expected 4 (gpus x gpus for paths.gpus=2)");
    free(f);
    const char *zero = "name: t\ngpus: 2\ngpu:\n  name: g\npaths:\n  gpus: 2\n  load_rtt_us: [0, 2.0, 0, 0]\n";
    f = th_write_temp(zero, strlen(zero), ".yaml");
    th_expect_bad(th_run("model configs/tiny.yaml --system %s", f), ":7:",
                  "paths.load_rtt_us[2] (GPU 1 -> GPU 0) is 0: a measured value must be positive");
    free(f);
}

/* NCCL without P2P (SHM): each byte goes into host memory and out again, which caps the ring. */
Test(model_links, shm_rings_are_capped_by_the_host_path)
{
    cfg_system s = th_pcie_system(4, 1, 0);
    s.topology.p2p = CFG_P2P_OFF;
    model_terms t = {.n = 0};
    /* Derived host path: stores 63 x 0.85 = 53.55 GB/s, loads x read_efficiency 0.75 = 40.1625: busBw
     * min(48, 40.1625). 1 MiB: NCCL's choice ring/Simple (its numbers: 8.4 + 6 x 5.7 + 1,048,576 / 26,667 =
     * 81.92 against ring/LL 91.24, tree/Simple 89.39). Priced: algbw 40.1625 x 4 / 6 = 26.775 -> 39.1625;
     * a Simple step over SHM = fence 1 + host_visible (1.1 + 2 x 1.1 = 3.3) + a load from host memory 2.2
     * = 6.5: lat 8.4 + 6 x 6.5 = 47.4 -> 86.5625 */
    cr_assert_float_eq(th_coll(&s, CFG_BACKEND_NCCL, PLAN_OP_ALLREDUCE, 1048576.0, 4, &t), 86.5625, EPS);
    cr_assert_float_eq(model_term_get(&t, "shm_bw"), 40.1625, EPS);
    /* Measured host lists take over: loads from host at 10 GB/s: algbw 10 x 4 / 6 -> 157.2864 + 47.4 */
    s.paths.gpus = 4;
    fill_per_gpu(&s.paths.host_store_gbs, 4, 30.0);
    fill_per_gpu(&s.paths.host_load_gbs, 4, 10.0);
    cr_assert_float_eq(th_coll(&s, CFG_BACKEND_NCCL, PLAN_OP_ALLREDUCE, 1048576.0, 4, NULL),
                       47.4 + 1048576.0 / (10000.0 * 4 / 6), EPS);
    /* Every GPU loading from system memory at once at 0.5 GB/s (links.sysmem_load_gbs) caps it lower:
     * 1,048,576 / (500 x 4 / 6) = 3145.728 + 47.4 */
    s.links.sysmem_load_gbs = 0.5;
    cr_assert_float_eq(th_coll(&s, CFG_BACKEND_NCCL, PLAN_OP_ALLREDUCE, 1048576.0, 4, NULL),
                       47.4 + 1048576.0 / (500.0 * 4 / 6), EPS);
}
