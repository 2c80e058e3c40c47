/* Link quantities: what one store, one load and one stream of bytes cost between two endpoints, taken
 * from a probe's measurements (system `paths:`) where the system file has them, otherwise derived from
 * the link latencies and bandwidths of `links` along the topology's route. The collective formulas
 * (model_comm.c, model_alltoall.c) see only these quantities. docs/model.md "Collectives from link
 * quantities" states every formula. */
#include "model_topo.h"

#include <math.h>
#include <stdio.h>

/* A measured cell of `l` for GPUs a -> b (b < 0: a per-GPU list at a), or NAN. Ranks are GPUs 0..n-1 in
 * order, as in model_topo. */
static double cell(const cfg_system *s, const cfg_paths_list *l, int a, int b)
{
    const int n = s->paths.gpus;
    if (l->n == 0 || a >= n || b >= n)
        return NAN;
    return b < 0 ? l->v[a] : l->v[a * n + b];
}

/* A staged peer access (the platform bounces it through system memory): stated, or the native access
 * plus one trip through host memory (the peer side's copy there, seen by the other). */
static double staged_us(const cfg_system *s, double native, int writer, int reader, const char **src, const char *what)
{
    if (s->links.staged_rtt_us > 0) {
        if (src)
            *src = "links.staged_rtt_us";
        return s->links.staged_rtt_us;
    }
    if (src)
        *src = what;
    return native + model_link_host_visible_us(s, writer, reader, NULL);
}

double model_link_visible_us(const cfg_system *s, int a, int b, const char **src)
{
    const double m = cell(s, &s->paths.visible_us, a, b);
    if (!isnan(m)) {
        if (src)
            *src = "paths.visible_us";
        return m;
    }
    const double native = model_topo_latency(s, a, b);
    if (s->topology.peer_stores == CFG_PEER_STAGED)
        return staged_us(s, native, a, b, src, "staged store: route + a flag through host memory");
    if (src)
        *src = "links along the route";
    return native;
}

double model_link_load_rtt_us(const cfg_system *s, int a, int b, const char **src)
{
    const double m = cell(s, &s->paths.load_rtt_us, a, b);
    if (!isnan(m)) {
        if (src)
            *src = "paths.load_rtt_us";
        return m;
    }
    const double native = 2.0 * model_topo_latency(s, a, b) + s->gpu.mem_latency_us;
    if (s->topology.peer_loads == CFG_PEER_STAGED)
        return staged_us(s, native, b, a, src, "staged load: native round trip + the peer's copy through host memory");
    if (src)
        *src = "2 x route latency + gpu.mem_latency_us";
    return native;
}

double model_link_host_load_rtt_us(const cfg_system *s, int g, const char **src)
{
    const double m = cell(s, &s->paths.host_load_rtt_us, g, -1);
    if (!isnan(m)) {
        if (src)
            *src = "paths.host_load_rtt_us";
        return m;
    }
    if (src)
        *src = "2 x route to host memory";
    return 2.0 * model_topo_latency(s, g, MODEL_HOST(model_topo_socket(s, g)));
}

double model_link_sysmem_load_gbs(const cfg_system *s, const char **src)
{
    /* A probe's figure wins: the slowest GPU's loads while every GPU loads at once. */
    const cfg_paths_list *all = &s->paths.host_all_load_gbs;
    if (all->n > 0) {
        double m = INFINITY;
        for (int g = 0; g < all->n; g++)
            m = fmin(m, all->v[g]);
        if (src)
            *src = "paths.host_all_load_gbs";
        return m;
    }
    if (s->links.sysmem_load_gbs > 0) {
        if (src)
            *src = "links.sysmem_load_gbs";
        return s->links.sysmem_load_gbs;
    }
    if (src)
        *src = "pcie_gbs x pcie_efficiency x read_efficiency";
    return fmin(s->links.pcie_gbs * s->links.pcie_efficiency * s->links.read_efficiency, s->links.host_mem_gbs);
}

/* A flag a stores into host memory on its own socket, seen by b polling it: the store's way there and
 * one round trip of b's loads (the poll that finds it). */
double model_link_host_visible_us(const cfg_system *s, int a, int b, const char **src)
{
    const double m = cell(s, &s->paths.host_visible_us, a, b);
    if (!isnan(m)) {
        if (src)
            *src = "paths.host_visible_us";
        return m;
    }
    if (src)
        *src = "route to host memory + the poller's round trip";
    const int h = MODEL_HOST(model_topo_socket(s, a));
    return model_topo_latency(s, a, h) + 2.0 * model_topo_latency(s, h, b);
}

/* GB/s an SHM link a -> b carries: a stores into host memory, b loads them back, so
 * the slower of a's stores there and b's loads from there (each GPU alone). */
double model_link_host_path_gbs(const cfg_system *s, int a, int b, const char **src)
{
    const int sa = model_topo_socket(s, a);
    const bool far = model_topo_socket(s, b) != sa;
    const double st = cell(s, &s->paths.host_store_gbs, a, -1);
    const double ld = cell(s, far ? &s->paths.host_far_load_gbs : &s->paths.host_load_gbs, b, -1);
    const double pcie = s->links.pcie_gbs * s->links.pcie_efficiency;
    const double d_st = fmin(pcie, s->links.host_mem_gbs), d_ld = fmin(pcie * s->links.read_efficiency, s->links.host_mem_gbs);
    if (src)
        *src = !isnan(st) && !isnan(ld) ? "paths.host_store_gbs / host_load_gbs"
               : !isnan(st) || !isnan(ld) ? "paths and links"
                                           : "pcie_gbs x pcie_efficiency (x read_efficiency for the loads)";
    double g = fmin(isnan(st) ? d_st : st, isnan(ld) ? d_ld : ld);
    /* Every GPU of the ring loads from host memory at once: the shared figure caps each one. */
    if (s->links.sysmem_load_gbs > 0 || s->paths.host_all_load_gbs.n > 0) {
        const char *asrc = "";
        const double all = model_link_sysmem_load_gbs(s, &asrc);
        if (all < g) {
            g = all;
            if (src)
                *src = asrc;
        }
    }
    return g;
}

/* The slowest pair's latency of a peer stage: a load's round trip, or a store's visibility. */
double model_links_pair_latency(const cfg_system *s, int n, bool reads)
{
    double m = 0.0;
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++)
            if (a != b)
                m = fmax(m, reads ? model_link_load_rtt_us(s, a, b, NULL) : model_link_visible_us(s, a, b, NULL));
    return m;
}

/* ---------------- stages from measured bandwidths ---------------- */

static bool covers(const cfg_system *s, const cfg_paths_list *l, int n)
{
    return l->n > 0 && s->paths.gpus >= n;
}

static bool host_far(const cfg_system *s, int gpu, int socket)
{
    return model_topo_socket(s, gpu) != socket;
}

/* Pair stages (every rank loads from / stores into every peer) and host stages from the measured lists,
 * when the system has the ones the stage needs for n ranks; false otherwise (the caller takes the
 * route-and-flows model). All transfers run at once; each takes the rate the probe saw under the same
 * pattern (every ordered pair active), so contention is inside the figure. */
bool model_links_stage(const cfg_system *s, int n, model_stage_kind k, double chunk, model_flow_time *out)
{
    const cfg_paths *p = &s->paths;
    out->lat_us = out->bw_us = out->bottleneck_bytes = out->bottleneck_gbs = 0.0;
    snprintf(out->bottleneck, sizeof(out->bottleneck), "none");
    if (k == MODEL_ST_READ_PEERS || k == MODEL_ST_WRITE_PEERS) {
        const bool reads = k == MODEL_ST_READ_PEERS;
        const cfg_paths_list *bw = reads ? &p->all_load_gbs : &p->all_store_gbs;
        if (!covers(s, bw, n))
            return false;
        out->lat_us = model_links_pair_latency(s, n, reads);
        for (int a = 0; a < n; a++)
            for (int b = 0; b < n; b++) {
                if (a == b)
                    continue;
                const double g = cell(s, bw, a, b);
                if (chunk / (g * 1e3) > out->bw_us) {
                    out->bw_us = chunk / (g * 1e3);
                    out->bottleneck_bytes = chunk;
                    out->bottleneck_gbs = g;
                    snprintf(out->bottleneck, sizeof(out->bottleneck), "GPU %d %s GPU %d (%s)", a % 100, reads ? "<-" : "->",
                             b % 100, reads ? "all_load_gbs" : "all_store_gbs");
                }
            }
        /* Writes into one GPU from all the others: the probe's many-writer figure caps their sum. */
        if (!reads && covers(s, &p->many_writer_gbs, n))
            for (int b = 0; b < n; b++) {
                const double g = cell(s, &p->many_writer_gbs, b, -1), in = chunk * (n - 1);
                if (in / (g * 1e3) > out->bw_us) {
                    out->bw_us = in / (g * 1e3);
                    out->bottleneck_bytes = in;
                    out->bottleneck_gbs = g;
                    snprintf(out->bottleneck, sizeof(out->bottleneck), "into GPU %d (many_writer_gbs)", b % 100);
                }
            }
        return true;
    }
    /* Host stages: each GPU alone at the rate the probe saw (near or far socket). */
    const bool reads = k == MODEL_ST_READ_HOST;
    const cfg_paths_list *near = reads ? &p->host_load_gbs : &p->host_store_gbs;
    const cfg_paths_list *far = reads ? &p->host_far_load_gbs : &p->host_far_store_gbs;
    if (!covers(s, near, n) || !covers(s, &p->host_load_rtt_us, n))
        return false;
    for (int g = 0; g < n; g++) {
        double bytes = 0.0, t = 0.0, lat = 0.0;
        for (int peer = 0; peer < n; peer++) {
            int socket;
            if (k == MODEL_ST_WRITE_HOST) {
                if (peer != g)
                    continue;
                socket = model_topo_socket(s, g);
                bytes = chunk;
            } else if (peer == g) {
                continue;
            } else {
                socket = model_topo_socket(s, peer); /* a peer's staging area lives near the peer */
                bytes = chunk;
            }
            const bool is_far = host_far(s, g, socket);
            if (is_far && !covers(s, far, n))
                return false;
            const double rate = cell(s, is_far ? far : near, g, -1);
            const double rtt = cell(s, is_far && covers(s, &p->host_far_load_rtt_us, n) ? &p->host_far_load_rtt_us
                                                                                          : &p->host_load_rtt_us,
                                    g, -1);
            t += bytes / (rate * 1e3);
            /* A load waits a round trip; a posted store is on its way after half of one. */
            lat = fmax(lat, reads ? rtt : rtt / 2.0);
        }
        if (lat > out->lat_us)
            out->lat_us = lat;
        if (t > out->bw_us) {
            out->bw_us = t;
            out->bottleneck_bytes = k == MODEL_ST_WRITE_HOST ? chunk : chunk * (n - 1);
            out->bottleneck_gbs = out->bottleneck_bytes / (t * 1e3);
            snprintf(out->bottleneck, sizeof(out->bottleneck), "GPU %d %s host (host_*%s_gbs)", g % 100,
                     reads ? "<-" : "->", reads ? "load" : "store");
        }
    }
    return true;
}
