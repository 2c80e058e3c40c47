/* vpsim's IPC kernels (one-shot, two-shot, push, their reduce-scatter), directly or staged through
 * host memory, NCCL's symmetric kernels on top of them, and the host-staged MPI path: each a function of
 * the link quantities (model_links.c). docs/model.md "Collectives" states every formula; every term is
 * recorded for --explain. */
#include "model_topo.h"

#include <math.h>
#include <stdio.h>

/* The slowest flag between two ranks: a peer store's visibility, or through host memory a store there
 * and the poller's round trip. */
static double slowest_flag(const cfg_system *s, int n, bool sysmem, const char **src)
{
    double m = 0.0;
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) {
            if (a == b)
                continue;
            const double l = sysmem ? model_link_host_visible_us(s, a, b, src) : model_link_visible_us(s, a, b, src);
            if (l > m)
                m = l;
        }
    return m;
}

/* Every rank writes a flag to every peer after a system-scope fence and waits for theirs. */
static double barrier_us(const cfg_system *s, int n, bool sysmem, model_terms *terms)
{
    const char *src = "";
    const double flag = slowest_flag(s, n, sysmem, &src);
    const double b = s->links.fence_us + flag;
    model_term_add(terms, "barrier", b, "us", "fence_us %.2f + slowest flag%s %.2f (%s)", s->links.fence_us,
                   sysmem ? " through host memory" : "", flag, src);
    return b;
}

/* A stage in which each rank moves `chunk` bytes to or from each peer: from the probe's bandwidths
 * where the system has them, else every flow on its route with shared links (model_topo). */
static double stage_us(const cfg_system *s, int n, model_stage_kind k, double chunk, const char *label,
                       model_terms *terms)
{
    const bool reads = k == MODEL_ST_READ_PEERS || k == MODEL_ST_READ_HOST;
    model_flow_time ft;
    const bool measured = model_links_stage(s, n, k, chunk, &ft);
    if (!measured) {
        model_flows f;
        f.n = 0;
        for (int i = 0; i < n; i++) {
            if (k == MODEL_ST_WRITE_HOST) {
                model_flows_add(&f, i, MODEL_HOST(model_topo_socket(s, i)), chunk);
                continue;
            }
            for (int j = 0; j < n; j++) {
                if (i == j)
                    continue;
                switch (k) {
                case MODEL_ST_READ_PEERS: model_flows_add(&f, j, i, chunk); break;  /* i loads j's buffer */
                case MODEL_ST_WRITE_PEERS: model_flows_add(&f, i, j, chunk); break; /* i stores into j's buffer */
                case MODEL_ST_READ_HOST: model_flows_add(&f, MODEL_HOST(model_topo_socket(s, j)), i, chunk); break;
                case MODEL_ST_WRITE_PEER_HOSTS:
                    model_flows_add(&f, i, MODEL_HOST(model_topo_socket(s, j)), chunk);
                    break;
                default: break;
                }
            }
        }
        model_flows_time(s, &f, reads, &ft);
        /* Peer stages wait for their slowest pair's store or load, which a probe may have measured. */
        if (k == MODEL_ST_READ_PEERS || k == MODEL_ST_WRITE_PEERS)
            ft.lat_us = model_links_pair_latency(s, n, reads);
        /* Accesses the platform stages through system memory end as loads from there, every GPU at once:
         * each GPU's (n-1) chunks at the shared system-memory rate. */
        const bool staged = (k == MODEL_ST_READ_PEERS && s->topology.peer_loads == CFG_PEER_STAGED) ||
                            (k == MODEL_ST_WRITE_PEERS && s->topology.peer_stores == CFG_PEER_STAGED);
        if (staged) {
            const char *src = "";
            const double g = model_link_sysmem_load_gbs(s, &src), bytes = chunk * (n - 1);
            if (bytes / (g * 1e3) > ft.bw_us) {
                ft.bw_us = bytes / (g * 1e3);
                ft.bottleneck_bytes = bytes;
                ft.bottleneck_gbs = g;
                snprintf(ft.bottleneck, sizeof(ft.bottleneck), "staged via sysmem (%.20s)", src);
            }
        }
    }
    const double t = ft.lat_us + ft.bw_us;
    model_term_add(terms, label, t, "us", "%s %.2f + %.0f B on %s at %.3g GB/s = %.2f (%s)",
                   reads ? "round trip" : "latency", ft.lat_us, ft.bottleneck_bytes, ft.bottleneck, ft.bottleneck_gbs,
                   ft.bw_us, measured ? "bandwidth: paths" : "bandwidth: links along the routes");
    return t;
}

/* Reduce-scatter, every custom backend alike (vp_reduce_scatter_oneshot): barrier, each rank loads its
 * S/n block from every peer (two-shot's first half), barrier (the inputs are reused). Through host
 * memory every rank first stages its whole input there. */
static double ipc_reduce_scatter_us(const cfg_system *s, double S, int n, double barrier, model_terms *terms)
{
    const bool sysmem = s->topology.p2p == CFG_P2P_SYSMEM;
    (void)barrier_us(s, n, sysmem, terms); /* for --explain */
    double t = 2.0 * barrier;
    if (sysmem)
        t += stage_us(s, n, MODEL_ST_WRITE_HOST, S, "stage_to_host", terms);
    t += stage_us(s, n, sysmem ? MODEL_ST_READ_HOST : MODEL_ST_READ_PEERS, S / n, sysmem ? "block_loads_from_host" : "block_loads",
                  terms);
    model_term_add(terms, "barriers", 2.0, "", "one before the block loads, one after (buffer reuse)");
    return t;
}

/* One-shot (vLLM/SGLang cross_device_reduce_1stage): barrier, every rank loads the whole payload from
 * every peer and reduces, barrier. Two-shot (2stage): barrier, reduce-scatter (load 1/n from each peer),
 * barrier, all-gather (load the reduced 1/n from each peer), barrier. Push: every rank stores its payload
 * into every peer (flag in each line, so no barrier), then reduces locally. All-gathers: the gather half. */
double model_ipc_us(const cfg_system *s, cfg_backend be, plan_op_kind kind, double S, int n, model_terms *terms)
{
    const bool sysmem = s->topology.p2p == CFG_P2P_SYSMEM;
    const bool gather = kind == PLAN_OP_ALLGATHER;
    const double barrier = barrier_us(s, n, sysmem, NULL);
    double t = 0.0;
    if (kind == PLAN_OP_REDUCE_SCATTER)
        return ipc_reduce_scatter_us(s, S, n, barrier, terms);
    if (be == CFG_BACKEND_PUSH) {
        const double wire = S * s->custom.push_expansion;
        model_term_add(terms, "wire_bytes", wire, "B", "payload %.0f x push_expansion %.2f per peer", S,
                       s->custom.push_expansion);
        if (!sysmem)
            return stage_us(s, n, MODEL_ST_WRITE_PEERS, wire, "push_stores", terms);
        t = stage_us(s, n, MODEL_ST_WRITE_PEER_HOSTS, wire, "stores_to_host", terms);
        return t + stage_us(s, n, MODEL_ST_READ_HOST, wire, "loads_from_host", terms);
    }
    (void)barrier_us(s, n, sysmem, terms); /* for --explain */
    if (be == CFG_BACKEND_ONESHOT || gather) {
        if (sysmem)
            t += stage_us(s, n, MODEL_ST_WRITE_HOST, S, "stage_to_host", terms);
        t += 2.0 * barrier;
        t += stage_us(s, n, sysmem ? MODEL_ST_READ_HOST : MODEL_ST_READ_PEERS, S, sysmem ? "loads_from_host" : "peer_loads",
                      terms);
        model_term_add(terms, "barriers", 2.0, "", "one before the loads, one after (buffer reuse)");
        return t;
    }
    /* Two-shot. */
    const double chunk = S / n;
    if (sysmem)
        t += stage_us(s, n, MODEL_ST_WRITE_HOST, S, "stage_to_host", terms);
    t += 3.0 * barrier;
    t += stage_us(s, n, sysmem ? MODEL_ST_READ_HOST : MODEL_ST_READ_PEERS, chunk, "reduce_scatter", terms);
    if (sysmem)
        t += stage_us(s, n, MODEL_ST_WRITE_HOST, chunk, "reduced_to_host", terms);
    t += stage_us(s, n, sysmem ? MODEL_ST_READ_HOST : MODEL_ST_READ_PEERS, chunk, "all_gather", terms);
    model_term_add(terms, "barriers", 3.0, "", "start, between the halves, end");
    return t;
}

/* Host staged: copy down, MPI on the host (recursive doubling: ceil(log2 n) steps), copy up. */
double model_mpi_us(const cfg_system *s, plan_op_kind kind, double S, int n, model_terms *terms)
{
    const double pcie = s->links.pcie_gbs * s->links.pcie_efficiency * 1e3;
    const int steps = (int)ceil(log2((double)n));
    const bool gather = kind == PLAN_OP_ALLGATHER, scatter = kind == PLAN_OP_REDUCE_SCATTER;
    const double d2h = s->host.memcpy_lat_us + S / pcie;
    const double h2d = s->host.memcpy_lat_us + (gather ? S * n : scatter ? S / n : S) / pcie;
    /* All-gather moves (n-1) contributions in total, reduce-scatter (recursive halving) (n-1)/n of the
     * payload; allreduce moves the payload each step. */
    const double step_bytes = gather ? S * (n - 1) / steps : scatter ? S * (n - 1) / n / steps : S;
    /* MPI has no bf16 sum: the host holds fp32 (comm_mpi.c), twice the payload's bytes. */
    const double host = steps * (s->host.mpi_lat_us + 2.0 * step_bytes / (s->host.mpi_bw_gbs * 1e3));
    model_term_add(terms, "d2h_copy", d2h, "us", "memcpy_lat_us %.1f + bytes / PCIe", s->host.memcpy_lat_us);
    model_term_add(terms, "host_mpi", host, "us", "%d steps x (mpi_lat_us %.2f + %.0f B as fp32 / mpi_bw %.1f GB/s)",
                   steps, s->host.mpi_lat_us, 2.0 * step_bytes, s->host.mpi_bw_gbs);
    model_term_add(terms, "h2d_copy", h2d, "us", "memcpy_lat_us %.1f + bytes / PCIe", s->host.memcpy_lat_us);
    /* bf16 -> fp32 before MPI and back after it, on the host (dev_bf16.c). */
    const double out_bytes = gather ? S * n : scatter ? S / n : S;
    const double conv = (S + out_bytes) / (s->host.convert_gbs * 1e3);
    model_term_add(terms, "host_convert", conv, "us", "(%.0f B in + %.0f B out) of bf16 / convert_gbs %.2f GB/s", S,
                   out_bytes, s->host.convert_gbs);
    return d2h + host + h2d + conv;
}

/* NCCL symmetric-memory kernels (NCCL 2.27+): one-shot loads across the NVLink domain. */
double model_nccl_symm_us(const cfg_system *s, plan_op_kind kind, double S, int n, model_terms *terms)
{
    model_term_add(terms, "symm_base", s->nccl.symm_base_us, "us", "nccl.symm_base_us");
    return s->nccl.symm_base_us + model_ipc_us(s, CFG_BACKEND_ONESHOT, kind, S, n, terms);
}

