/* The all-to-all of expert parallelism (parallel.ep) per family of backends: every rank sends block j
 * (S / n bytes) of its S bytes to rank j, n - 1 blocks leave it, all ranks at once. Formulas in
 * docs/model.md ("All-to-all cost"); every term is recorded for --explain. */
#include "model_topo.h"

#include <stdio.h>

/* NCCL_P2P_LL_THRESHOLD's default (NCCL src/enqueue.cc): peer messages up to 16 KiB go by LL. */
#define NCCL_P2P_LL_BYTES 16384.0

/* NCCL's all-to-all is grouped ncclSend/ncclRecv: one kernel (NCCL's base latency), one peer step per
 * message (hwLat, the peers taken in turn), and every block on the links at once (all ranks send
 * together: the link model finds the shared bottleneck). LL lines carry a flag with each 8 B of data
 * (2x on the wire); each message's step is max(hwLat, its pair's transport latency), through the
 * receiver's host memory for SHM pairs. */
static double alltoall_nccl_us(const cfg_system *s, double S, int n, model_terms *terms)
{
    const bool nvlink = s->topology.interconnect == CFG_IC_NVLINK;
    const double block = S / n;
    const bool ll = block <= NCCL_P2P_LL_BYTES;
    const double wire = ll ? 2.0 * block : block;
    const int proto = ll ? MODEL_NCCL_LL : MODEL_NCCL_SIMPLE;
    const double base = model_nccl_base_lat(MODEL_NCCL_RING, proto);
    /* A rank's n-1 messages in turn; the slowest rank's sum sets the step. */
    double steps = 0.0;
    for (int a = 0; a < n; a++) {
        double sum = 0.0;
        for (int b = 0; b < n; b++)
            if (a != b)
                sum += model_nccl_p2p_step_us(s, a, b, n, ll);
        if (sum > steps)
            steps = sum;
    }
    const double lat = base + steps;
    model_term_add(terms, "p2p_latency", lat, "us",
                   "%s: base %.1f + the slowest rank's (n-1) %d steps over each pair's transport (%s) = %.2f",
                   ll ? "LL" : "Simple", base, n - 1, nvlink ? "NVLink, floored at NCCL's hwLat" : "P2P, SHM or NET",
                   steps);
    model_flows f;
    f.n = 0;
    int shm = 0;
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) {
            if (a == b)
                continue;
            if (model_nccl_pair_shm(s, a, b, n)) {
                shm++;
                model_flows_add(&f, a, MODEL_HOST(model_topo_socket(s, b)), wire);
                model_flows_add(&f, MODEL_HOST(model_topo_socket(s, b)), b, wire);
            } else {
                model_flows_add(&f, a, b, wire);
            }
        }
    model_flow_time ft;
    model_flows_time(s, &f, false, &ft);
    /* An SHM message is loaded back from host memory by its receiver, every GPU at once: each GPU's
     * inbound SHM bytes at the shared system-memory rate (links.sysmem_load_gbs) when that is slower. */
    const double sysmem = s->links.sysmem_load_gbs > 0 || s->paths.host_all_load_gbs.n > 0
                              ? model_link_sysmem_load_gbs(s, NULL)
                              : 0.0;
    if (sysmem > 0)
        for (int b = 0; b < n; b++) {
            double in = 0.0;
            for (int a = 0; a < n; a++)
                if (a != b && model_nccl_pair_shm(s, a, b, n))
                    in += wire;
            if (in / (sysmem * 1e3) > ft.bw_us) {
                ft.bw_us = in / (sysmem * 1e3);
                ft.bottleneck_bytes = in;
                ft.bottleneck_gbs = sysmem;
                snprintf(ft.bottleneck, sizeof(ft.bottleneck), "host -> GPU %d (sysmem_load_gbs)", b % 100);
            }
        }
    model_term_add(terms, "p2p_transfer", ft.bw_us, "us", "%d x %d blocks of %.0f B%s at once: %.0f B on %s at %.1f GB/s",
                   n, n - 1, block, ll ? " (x2 LL)" : "", ft.bottleneck_bytes, ft.bottleneck,
                   ft.bottleneck_gbs);
    if (shm > 0)
        model_term_add(terms, "shm_transport", shm, "pairs", "%d of %d peer pairs through host memory (their step: "
                       "paths.host_visible_us or derived)", shm, n * (n - 1));
    return lat + ft.bw_us;
}

/* Host-staged MPI_Alltoall: the whole buffer down, n-1 exchanges of S/n with the peers, the whole
 * buffer up. */
static double alltoall_mpi_us(const cfg_system *s, double S, int n, model_terms *terms)
{
    const double pcie = s->links.pcie_gbs * s->links.pcie_efficiency * 1e3;
    const double copy = s->host.memcpy_lat_us + S / pcie;
    /* fp32 on the host (comm_mpi.c): twice the bf16 block's bytes per exchange. */
    const double host = (n - 1) * (s->host.mpi_lat_us + 2.0 * S / n / (s->host.mpi_bw_gbs * 1e3));
    model_term_add(terms, "d2h_copy", copy, "us", "memcpy_lat_us %.1f + %.0f B / PCIe", s->host.memcpy_lat_us, S);
    model_term_add(terms, "host_mpi", host, "us", "(n-1) %d x (mpi_lat_us %.2f + %.0f B as fp32 / mpi_bw %.1f GB/s)",
                   n - 1, s->host.mpi_lat_us, 2.0 * S / n, s->host.mpi_bw_gbs);
    model_term_add(terms, "h2d_copy", copy, "us", "memcpy_lat_us %.1f + %.0f B / PCIe", s->host.memcpy_lat_us, S);
    const double conv = 2.0 * S / (s->host.convert_gbs * 1e3); /* bf16 -> fp32 and back (dev_bf16.c) */
    model_term_add(terms, "host_convert", conv, "us", "2 x %.0f B of bf16 / convert_gbs %.2f GB/s", S,
                   s->host.convert_gbs);
    return 2.0 * copy + host + conv;
}

/* Families without an all-to-all of their own (vpsim's IPC kernels, NCCL's symmetric kernels) are costed
 * with NCCL's: SGLang's custom allreduce only replaces allreduces, the MoE all-to-all stays NCCL's (or
 * DeepEP's). The method says so; `vpsim run` with such a backend refuses the plan (no member). */
double model_alltoall_us(const cfg_system *s, cfg_backend be, double S, int n, model_terms *terms, char *method,
                         size_t mlen)
{
    if (cfg_backend_launch(be) == CFG_LAUNCH_HOST) { /* the list's trait: model_comm.c's family agrees */
        snprintf(method, mlen, "formula: host-staged MPI_Alltoall");
        return alltoall_mpi_us(s, S, n, terms);
    }
    if (be == CFG_BACKEND_NCCL)
        snprintf(method, mlen, "formula: NCCL grouped send/recv all-to-all");
    else
        snprintf(method, mlen, "formula: NCCL grouped send/recv all-to-all (%s has none; SGLang keeps NCCL's)",
                 cfg_backend_names[be]);
    return alltoall_nccl_us(s, S, n, terms);
}
