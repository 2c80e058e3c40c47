/* Model fixture shared by the model tests (th_model.h). */
#include "th_model.h"

#include "../../sim/model/model.h"
#include "th_plan.h"

#include <criterion/criterion.h>
#include <string.h>

results_cycle th_model_cycle(const char *const *sets, int n_sets, cfg_backend be, cfg_scenario *sc, plan *p)
{
    cfg_scenario own_sc;
    plan own_p;
    const bool keep = sc && p;
    if (!keep) {
        sc = &own_sc;
        p = &own_p;
    }
    th_plan_build("configs/default.yaml", sets, n_sets, sc, p);
    char why[256];
    model_ctx *ctx = model_prepare(sc, p, why, sizeof(why));
    cr_assert_not_null(ctx, "%s", why);
    results_cycle r;
    model_eval(ctx, be, false, &r);
    cr_assert(r.available, "%s", r.reason);
    results_cycle_free(&r);
    model_free(ctx);
    if (!keep)
        th_plan_done(sc, p);
    return r;
}

/* A system with every figure the formulas read set explicitly here, not taken from a file. */
cfg_system th_pcie_system(int gpus, int sockets, int gpus_per_switch)
{
    cfg_system s;
    memset(&s, 0, sizeof(s));
    s.name = "test-pcie";
    s.gpus = gpus;
    s.gpu.mem_bw_gbs = 1792;
    s.gpu.mem_efficiency = 0.95;
    s.gpu.mem_latency_us = 0.3;
    s.gpu.l2_mb = 128;
    s.gpu.l2_bw_gbs = 5000;
    s.gpu.tflops.bf16 = 500;
    s.gpu.tflops.fp8 = 1000;
    s.gpu.tflops.fp32 = 120;
    s.gpu.gemm_efficiency = 0.7;
    s.gpu.gemm_tile_m = 64;
    s.gpu.kernel_floor_us = 1.2;
    s.topology.interconnect = CFG_IC_PCIE;
    s.topology.p2p = CFG_P2P_DIRECT;
    s.topology.sockets = sockets;
    s.topology.gpus_per_switch = gpus_per_switch;
    s.topology.cpu_vendor = CFG_CPU_AMD;
    s.links.pcie_gbs = 63;
    s.links.pcie_efficiency = 0.85;
    s.links.pcie_lat_us = 0.5;
    s.links.switch_lat_us = 0.15;
    s.links.uplink_gbs = 63;
    s.links.root_complex_gbs = 100;
    s.links.root_complex_lat_us = 0.3;
    s.links.socket_gbs = 30;
    s.links.socket_lat_us = 0.6;
    s.links.nvlink_gbs = 450;
    s.links.nvlink_lat_us = 0.7;
    s.links.read_efficiency = 0.75;
    s.links.many_writer_efficiency = 0.8;
    s.links.fence_us = 1.0;
    s.links.host_mem_gbs = 200;
    s.links.host_mem_lat_us = 0.3;
    s.host.memcpy_lat_us = 10;
    s.host.mpi_lat_us = 1.5;
    s.host.mpi_bw_gbs = 8;
    s.host.convert_gbs = 3;
    /* NCCL 2.22.3 on a Hopper-class GPU: the P2P rule before 2.23.4 (P2P through the root complex and
     * across sockets on AMD), so these boxes' rings are P2P; tests of the newer rules set the version. */
    s.nccl.version = "2.22.3";
    s.nccl.version_code = 22203;
    s.gpu.cc = 90;
    s.nccl.channels = 2;
    s.nccl.pci_bw_gbs = 48;
    s.nccl.sys_bw_gbs = 16;
    s.nccl.nvlink_bw_gbs = 370;
    s.nccl.ll_max_bw_gbs = 141;
    s.nccl.symm_base_us = 5.0;
    s.custom.push_expansion = 2.0;
    s.measured.use = true;
    s.measured.collectives = true;
    return s;
}

double th_coll(const cfg_system *s, cfg_backend be, plan_op_kind kind, double bytes, int n, model_terms *t)
{
    model_coll c;
    model_collective(s, be, kind, bytes, n, t, &c);
    cr_assert(c.available, "%s unavailable: %s", cfg_backend_names[be], c.reason);
    return c.us;
}
