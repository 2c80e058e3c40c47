/* What `vpsim probe` concludes from its measurements (probe_text.h): the p2p mode and the peer modes it
 * infers, and the findings in plain words. probe_text.c writes the file from them. */
#include "probe_text.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

bool probe_measured(double v)
{
    return isfinite(v) && v > 0;
}

/* Median of a list's off-diagonal cells (dims 2) or all cells (dims 1) that were measured; 0 if none. */
double probe_list_median(const cfg_paths_list *l, int n, int dims)
{
    double v[CFG_PATHS_CELLS];
    int m = 0;
    for (int c = 0; c < l->n && c < CFG_PATHS_CELLS; c++)
        if ((dims == 1 || c / n != c % n) && probe_measured(l->v[c]))
            v[m++] = l->v[c];
    return m ? util_percentile(v, m, 0.5) : 0.0;
}

/* Every cell a list must have is measured (the schema refuses a zero off the diagonal). */
bool probe_list_complete(const cfg_paths_list *l, int n, int dims)
{
    const int want = dims == 2 ? n * n : n;
    if (n < 1 || l->n != want)
        return false;
    for (int c = 0; c < want; c++)
        if (!(dims == 2 && c / n == c % n) && !probe_measured(l->v[c]))
            return false;
    return true;
}

void probe_infer_p2p(const exec_links_result *r, probe_p2p *o)
{
    memset(o, 0, sizeof(*o));
    o->mode = CFG_P2P_DIRECT;
    o->worst_i = o->worst_j = -1;
    const int n = r->paths.gpus;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (i != j && r->peer_access[i][j] == 0) {
                o->mode = CFG_P2P_OFF;
                o->peer_loads = o->peer_stores = CFG_PEER_OFF;
                snprintf(o->why, sizeof(o->why), "GPU %d cannot access GPU %d's memory (cudaDeviceCanAccessPeer: "
                                                 "0): no peer traffic; the custom kernels cannot run and NCCL "
                                                 "stages through host memory",
                         i, j);
                return;
            }
    o->host_median_us = probe_list_median(&r->paths.host_visible_us, n, 2);
    /* Loads and stores apart: PCIe reads are non-posted, writes posted, and a platform may stage one and
     * not the other. */
    o->load_median_us = probe_list_median(&r->paths.load_rtt_us, n, 2);
    o->host_load_median_us = probe_list_median(&r->paths.host_load_rtt_us, n, 1);
    o->judged = n >= 2 && o->load_median_us > 0 && o->host_load_median_us > 0;
    if (o->judged && o->load_median_us > fmax(PROBE_NATIVE_LOAD_US, PROBE_HOST_FACTOR * o->host_load_median_us))
        o->peer_loads = CFG_PEER_STAGED;
    o->threshold_us = fmax(PROBE_NATIVE_VISIBLE_US, PROBE_HOST_FACTOR * o->host_median_us);
    const cfg_paths_list *v = &r->paths.visible_us;
    for (int c = 0; c < v->n && c < n * n; c++)
        if (c / n != c % n && probe_measured(v->v[c]) && v->v[c] > o->worst_us) {
            o->worst_us = v->v[c];
            o->worst_i = c / n;
            o->worst_j = c % n;
        }
    if (n < 2) {
        snprintf(o->why, sizeof(o->why), "one GPU: no pair to judge");
    } else if (o->worst_i < 0) {
        snprintf(o->why, sizeof(o->why), "no peer flag was timed: peer access taken as direct");
    } else if (o->worst_us > o->threshold_us) {
        o->bounced = true; /* the software still takes the peer path: mode stays direct */
        o->peer_stores = CFG_PEER_STAGED;
        char host[80] = "";
        if (o->host_median_us > 0)
            snprintf(host, sizeof(host), "; a flag through pinned host memory: %.3g us", o->host_median_us);
        snprintf(o->why, sizeof(o->why),
                 "peer access reported, but a peer store from GPU %d takes %.3g us to be seen by GPU %d (native: "
                 "under %.0f us%s): peer traffic goes through system memory here; NCCL's P2P steps, one-shot and "
                 "two-shot will be slow (the model prices them from these paths; staging through host memory on "
                 "purpose is the what-if --set system.topology.p2p=sysmem)",
                 o->worst_i, o->worst_us, o->worst_j, PROBE_NATIVE_VISIBLE_US, host);
    } else {
        snprintf(o->why, sizeof(o->why), "the slowest peer flag (GPU %d -> GPU %d) is seen in %.3g us, within "
                                         "max(%.0f us, %.0f x a host-memory flag %.3g us): direct peer access",
                 o->worst_i, o->worst_j, o->worst_us, PROBE_NATIVE_VISIBLE_US, PROBE_HOST_FACTOR, o->host_median_us);
    }
}

bool probe_self_test(const probe_input *in)
{
    return in->device == CFG_DEVICE_CPU || in->links->virtual_ranks;
}

/* The NVML topology is the machine's own (not a self-test) and was read. */
bool probe_have_topo(const probe_input *in)
{
    return in->topo && in->topo->read && !probe_self_test(in);
}

void probe_findings(const probe_input *in, const probe_p2p *p2p, util_buf *out)
{
    const exec_links_result *r = in->links;
    const int n = r->paths.gpus;
    if (in->device == CFG_DEVICE_CPU)
        util_buf_printf(out, "Self-test on the CPU device: processes through shared host memory; these figures are "
                             "not any interconnect's.\n");
    else if (r->virtual_ranks)
        util_buf_printf(out, "Self-test: %d ranks share one GPU (virtual ranks); the paths are the protocol on one "
                             "GPU, not an interconnect's figures.\n",
                        r->ranks);
    util_buf_printf(out, "topology.p2p %s: %s.\n", cfg_p2p_names[p2p->mode], p2p->why);
    if (p2p->peer_loads == CFG_PEER_STAGED)
        util_buf_printf(out, "Peer loads go through system memory: a peer load's round trip is %.3g us against %.3g us "
                             "from pinned host memory (native: under %.0f us). The driver's P2P override "
                             "(NVreg_RegistryDwords ForceP2P / RMPcieP2PType) is off or not honoured here; custom "
                             "allreduce kernels that load from peers (one-shot, two-shot) will be slow, NCCL (which "
                             "stores) is not affected (topology.peer_loads: staged).\n",
                        p2p->load_median_us, p2p->host_load_median_us, PROBE_NATIVE_LOAD_US);
    else if (p2p->judged && p2p->mode == CFG_P2P_DIRECT)
        util_buf_printf(out, "Peer loads are native: a round trip of %.3g us (from pinned host memory %.3g us).\n",
                        p2p->load_median_us, p2p->host_load_median_us);
    const comm_nccl_log *nl = in->nccl_log;
    if (nl) {
        util_buf_printf(out, "NCCL's own log (rank 0): version %s, %d channel(s), rank 0's ring connections %d P2P, %d SHM, "
                             "%d NET", nl->version[0] ? nl->version : "?", nl->channels, nl->p2p, nl->shm, nl->net);
        if (nl->searched)
            util_buf_printf(out, "; its search: pattern %d, %d channel(s) at %.3g/%.3g GB/s, type %s/%s", nl->pattern,
                            nl->search_channels, nl->bw_intra, nl->bw_inter, nl->type_intra, nl->type_inter);
        util_buf_printf(out, "%s.\n", nl->fallback ? " (it fell back: 'falling back to simple order')" : "");
    }
    if (p2p->peer_stores == CFG_PEER_STAGED)
        util_buf_printf(out, "Peer stores go through system memory too (topology.peer_stores: staged): flags and "
                             "push-style kernels pay a trip through host memory.\n");
#define INCOMPLETE(name, dims, unit, help)                                                                         \
    if (r->paths.name.n > 0 && !probe_list_complete(&r->paths.name, n, dims))                                            \
        util_buf_printf(out, "paths." #name ": some cells were not measured (a pair failed its P2P check?); the "  \
                             "list is left out and the model derives it from links.\n");
    CFG_PATHS_LIST(INCOMPLETE)
#undef INCOMPLETE
    /* Contention: what a pair keeps of its bandwidth when every pair stores at once (the one-shot pattern). */
    const double alone = probe_list_median(&r->paths.store_gbs, n, 2), all = probe_list_median(&r->paths.all_store_gbs, n, 2);
    if (alone > 0 && all > 0 && all < 0.5 * alone)
        util_buf_printf(out, "With every pair storing at once each pair gets %.3g GB/s, %.0f%% of the %.3g GB/s it "
                             "gets alone: the peers share a link or a root complex.\n",
                        all, 100 * all / alone, alone);
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            const double a = r->paths.visible_us.v[i * n + j], b = r->paths.visible_us.v[j * n + i];
            if (r->paths.visible_us.n == n * n && probe_measured(a) && probe_measured(b) && fmax(a, b) > 2 * fmin(a, b))
                util_buf_printf(out, "GPU %d -> %d and back are asymmetric: a flag is seen in %.3g us one way, %.3g "
                                     "us the other.\n",
                                i, j, a, b);
        }
    if (probe_have_topo(in)) {
        bool mixed = false;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                mixed = mixed || (i != j && in->topo->path[i][j] == DEV_PATH_SYS);
        if (mixed)
            util_buf_printf(out, "Some GPU pairs cross the socket interconnect (NVML path SYS).\n");
    } else if (in->topo && !in->topo->read && in->device == CFG_DEVICE_CUDA) {
        util_buf_printf(out, "Topology not read (%s): the base's topology keys other than p2p stay.\n", in->topo->why);
    }
}

