/* NCCL's own rules, as its source states them, for the model: which transport each ring link gets, what
 * its topology search builds, and which algorithm and protocol its tuning model then picks. These decide
 * *what* NCCL runs on a box; model_comm.c prices what it runs from the link quantities. docs/model.md
 * "NCCL's rules" cites every line. */
#include "model_topo.h"

#include <math.h>
#include <stdio.h>

const char *const model_nccl_proto_names[] = {"LL", "LL128", "Simple", NULL};
const char *const model_nccl_algo_names[] = {"tree", "ring", NULL};

/* NCCL versions that changed a rule (major*10000 + minor*100 + patch). */
#define V_P2P_PXB 22304       /* 2.23.4: P2P level PXB by default; AMD keeps SYS only with <= 2 GPUs */
#define V_SM100_SPEEDS 22500  /* 2.25: sm100SpeedArrayIntra for cc >= 100 (min 19) */
#define V_SM100_18 22700      /* 2.27: ... with 18 appended */

const char *const model_nccl_transport_names[] = {"P2P", "SHM", "NET", NULL};

/* NCCL_P2P_LEVEL names onto the model's path types: PIX and PXB are both "behind a switch" here (the model
 * has one switch level), NVB has no PCIe meaning. Returns the farthest model path P2P may use, or -1 for
 * no P2P at all (LOC). */
static int level_as_path(int level)
{
    switch (level) {
    case CFG_NCCL_LEVEL_LOC: return -1;
    case CFG_NCCL_LEVEL_NVL:
    case CFG_NCCL_LEVEL_NVB: return MODEL_PATH_NVL;
    case CFG_NCCL_LEVEL_PIX:
    case CFG_NCCL_LEVEL_PXB: return MODEL_PATH_PIX;
    case CFG_NCCL_LEVEL_PHB: return MODEL_PATH_PHB;
    default: return MODEL_PATH_SYS;
    }
}

/* The level NCCL's ncclTopoCheckP2p compares a path with (src/graph/paths.cc):
 *   <= 2.22: PATH_SYS by default, PATH_PXB on Intel and ARM CPUs;
 *   >= 2.23.4: PATH_PXB by default, PATH_SYS on AMD x86 with at most 2 GPUs
 *             ("Set P2P level to PXB on AMD CPUs when using more than 2 GPUs per node");
 * then NCCL_P2P_LEVEL replaces it and NCCL_P2P_DISABLE=1 makes it LOC (ncclGetUserP2pLevel). */
int model_nccl_p2p_level(const cfg_system *s, int ngpus, const char **why)
{
    const char *w;
    int level;
    const bool amd = s->topology.cpu_vendor == CFG_CPU_AMD;
    if (s->nccl.version_code < V_P2P_PXB) {
        level = amd ? MODEL_PATH_SYS : MODEL_PATH_PIX;
        w = amd ? "NCCL < 2.23.4 on AMD: SYS" : "NCCL < 2.23.4 on Intel/ARM: PXB";
    } else if (amd && ngpus <= 2) {
        level = MODEL_PATH_SYS;
        w = "NCCL >= 2.23.4, AMD with <= 2 GPUs: SYS";
    } else {
        level = MODEL_PATH_PIX;
        w = amd ? "NCCL >= 2.23.4, AMD with > 2 GPUs: PXB" : "NCCL >= 2.23.4: PXB";
    }
    if (s->nccl.p2p_level != CFG_NCCL_LEVEL_AUTO) {
        level = level_as_path(s->nccl.p2p_level);
        w = "NCCL_P2P_LEVEL (system.nccl.p2p_level)";
    }
    if (s->nccl.p2p_disable) {
        level = -1;
        w = "NCCL_P2P_DISABLE=1 (system.nccl.p2p_disable)";
    }
    if (why)
        *why = w;
    return level;
}

/* P2P if the path is within the level and the GPUs can reach each other's memory at all; else SHM
 * (shmCanConnect) unless NCCL_SHM_DISABLE, else the network transport (sockets on one host). */
model_nccl_transport model_nccl_link(const cfg_system *s, int a, int b, int ngpus)
{
    /* (An NVLink pair's path is NVL, within every level but LOC.) */
    const bool peer_ok = s->topology.p2p == CFG_P2P_DIRECT && s->topology.peer_stores != CFG_PEER_OFF;
    if (peer_ok && (int)model_topo_path_type(s, a, b) <= model_nccl_p2p_level(s, ngpus, NULL))
        return MODEL_NCCL_P2P;
    return s->nccl.shm_disable ? MODEL_NCCL_NET : MODEL_NCCL_SHM;
}

/* NCCL's per-link bandwidth for its search (src/graph/topo.h, paths.cc): a path through a PCIe switch runs
 * at the PCI figure; through the CPU it is the slower of the GPUs' PCI links and, across sockets, the
 * inter-CPU figure (AMD_BW 16, Intel by generation). */
static double search_link_bw(const cfg_system *s, int a, int b)
{
    const model_path_type t = model_topo_path_type(s, a, b);
    if (t == MODEL_PATH_NVL)
        return s->nccl.nvlink_bw_gbs;
    if (t == MODEL_PATH_SYS)
        return fmin(s->nccl.pci_bw_gbs, s->nccl.sys_bw_gbs);
    return s->nccl.pci_bw_gbs;
}

/* The intra-node speeds NCCL tries, fastest first (src/graph/search.cc, by version and compute
 * capability): a ring is searched at the first speed its links carry; none: the fallback. */
static const double speeds_old[] = {40, 30, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3};
static const double speeds_sm90[] = {60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3};
static const double speeds_sm100_19[] = {90, 80, 70, 60, 50, 40, 30, 24, 20, 19};
static const double speeds_sm100_18[] = {90, 80, 70, 60, 50, 40, 30, 24, 20, 19, 18};

static const double *speed_array(const cfg_system *s, int *n, const char **name)
{
#define PICK(arr, nm)                                                                                              \
    do {                                                                                                           \
        *n = (int)(sizeof(arr) / sizeof(arr[0]));                                                                  \
        *name = nm;                                                                                                \
        return arr;                                                                                                \
    } while (0)
    const int v = s->nccl.version_code, cc = s->gpu.cc;
    if (cc >= 100 && v >= V_SM100_18)
        PICK(speeds_sm100_18, "sm100 speeds (2.27+, down to 18)");
    if (cc >= 100 && v >= V_SM100_SPEEDS)
        PICK(speeds_sm100_19, "sm100 speeds (2.25-2.26, down to 19)");
    if (cc >= 90)
        PICK(speeds_sm90, "sm90 speeds (down to 3)");
    PICK(speeds_old, "pre-sm90 speeds (down to 3)");
#undef PICK
}

/* The ring NCCL's search builds over GPUs 0..n-1 in order (its fallback order too): the speed per
 * channel, the channels, whether it fell back ("Could not find a path ... falling back to simple order":
 * bw 0.1, one channel, then doubled by ncclTopoPostset). A graph file (nccl.graph_bw_gbs) replaces it. */
void model_nccl_search(const cfg_system *s, int n, model_nccl_graph *g)
{
    g->bottleneck_gbs = INFINITY;
    for (int r = 0; r < n && n > 1; r++)
        g->bottleneck_gbs = fmin(g->bottleneck_gbs, search_link_bw(s, r, (r + 1) % n));
    if (n < 2)
        g->bottleneck_gbs = s->nccl.pci_bw_gbs;
    g->fallback = false;
    if (s->nccl.graph_bw_gbs > 0) {
        g->bw_gbs = s->nccl.graph_bw_gbs;
        g->search_channels = s->nccl.channels;
        g->channels = s->nccl.channels;
        g->speeds = "graph file (nccl.graph_bw_gbs)";
        return;
    }
    int ns;
    const double *sp = speed_array(s, &ns, &g->speeds);
    int i = 0;
    while (i < ns && sp[i] > g->bottleneck_gbs + 1e-9)
        i++;
    if (i == ns) {
        g->fallback = true;
        g->bw_gbs = 0.1;
        g->search_channels = 1;
    } else {
        g->bw_gbs = sp[i];
        g->search_channels = (int)floor(g->bottleneck_gbs / sp[i] + 1e-9);
        if (g->search_channels < 1)
            g->search_channels = 1;
        if (g->search_channels > 16)
            g->search_channels = 16;
        /* ncclTopoDupChannels: doubles channels at half the speed when the speed is >= 25 (not for cc > 80
         * below 50 GB/s with more than 4 channels). */
        if (g->bw_gbs >= 25 && !(s->gpu.cc > 80 && g->bw_gbs < 50 && g->search_channels > 4)) {
            g->search_channels *= 2;
            g->bw_gbs /= 2;
        }
    }
    /* ncclTopoPostset (connect.cc) doubles the channels once more for the run. */
    g->channels = g->search_channels * 2 > 32 ? 32 : g->search_channels * 2;
}

/* tuning.cc treeCorrectionFactor[proto][log2(bytes / 64)]: NCCL's own correction of its tree estimate
 * at medium sizes (LL, LL128, Simple; 64 B to 256 MB). */
static const double tree_correction[MODEL_NCCL_PROTOS][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9},
};

static int log2i(long long v)
{
    int l = -1;
    while (v > 0) {
        v >>= 1;
        l++;
    }
    return l;
}

/* NCCL's tuning model with NCCL's own numbers (src/graph/tuning.cc): busBw = graph channels x graph speed,
 * LL at half of it (capped by llMaxBw), tree at 0.92 (LL /3.8, LL128 7/9), LL128 only over NVLink; time
 * = baseLat + steps x hwLat + bytes / (1000 x algbw). It decides the algorithm and protocol NCCL runs;
 * the model then prices that choice from the box's links (model_comm.c). */
void model_nccl_choose(const cfg_system *s, const model_nccl_graph *g, bool allreduce, double nbytes, int n,
                       int *algo, int *proto, model_terms *terms)
{
    const bool nvlink = s->topology.interconnect == CFG_IC_NVLINK;
    const cfg_nccl_tuning *tune = &s->nccl_tuning;
    const double bus = nvlink ? s->nccl.nvlink_bw_gbs : g->search_channels * g->bw_gbs;
    double best = INFINITY;
    *algo = MODEL_NCCL_RING;
    *proto = MODEL_NCCL_SIMPLE;
    for (int a = 0; a < MODEL_NCCL_ALGOS; a++) {
        if (!model_nccl_algo_allowed(tune, a, allreduce))
            continue;
        for (int p = 0; p < MODEL_NCCL_PROTOS; p++) {
            if (!model_nccl_proto_allowed(tune, p, nvlink))
                continue;
            double bw, lat;
            const double hw = model_nccl_hw_lat(s, a, p);
            if (a == MODEL_NCCL_RING) {
                const int nsteps = allreduce ? 2 * (n - 1) : n - 1;
                bw = p == MODEL_NCCL_LL ? fmin(s->nccl.ll_max_bw_gbs, bus * 0.5) : p == MODEL_NCCL_LL128 ? bus * 0.92 : bus;
                bw *= (double)n / nsteps;
                lat = model_nccl_base_lat(a, p) + nsteps * hw;
            } else {
                bw = bus * 0.92;
                bw = p == MODEL_NCCL_LL ? fmin(bw / 3.8, s->nccl.ll_max_bw_gbs) : p == MODEL_NCCL_LL128 ? bw * 7.0 / 9.0 : bw;
                bw *= 0.5;
                lat = model_nccl_base_lat(a, p) + 2.0 * (n - 1) * hw;
                const int ls = log2i((long long)nbytes >> 6);
                if (allreduce && ls >= 0 && ls < 23)
                    bw *= tree_correction[p][ls]; /* ncclTopoGetAlgoTime */
            }
            const double t = lat + nbytes / (1000.0 * bw);
            if (terms) { /* the name is formatted only for --explain: a model evaluation passes NULL */
                char name[40];
                snprintf(name, sizeof(name), "tuning %s/%s", model_nccl_algo_names[a], model_nccl_proto_names[p]);
                model_term_add(terms, name, t, "us", "NCCL's own estimate: lat %.2f + %.0f B / (1000 x %.3g GB/s)", lat,
                               nbytes, bw);
            }
            if (t < best) {
                best = t;
                *algo = a;
                *proto = p;
            }
        }
    }
}

/* ---------------- NCCL's latency tables ----------------
 * NCCL src/graph/tuning.cc (v2.2x-2.30): baseLat[algo][proto] and hwLat[hw][algo][proto] in us, protocols
 * LL, LL128, Simple. On PCIe NCCL never picks LL128 (only when the path is NVLink, <= PATH_NVB). */

static const double nccl_base_lat[MODEL_NCCL_ALGOS][MODEL_NCCL_PROTOS] = {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}};
static const double nccl_hw_lat_nvlink[MODEL_NCCL_ALGOS][MODEL_NCCL_PROTOS] = {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}};
static const double nccl_hw_lat_pci[MODEL_NCCL_ALGOS][MODEL_NCCL_PROTOS] = {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}};

double model_nccl_base_lat(int algo, int proto) { return nccl_base_lat[algo][proto]; }

/* tuning.cc: intraHw is NVLINK only when the graph's typeIntra is NVL; PHB, SYS and SHM use the PCI row. */
double model_nccl_hw_lat(const cfg_system *s, int algo, int proto)
{
    return (s->topology.interconnect == CFG_IC_NVLINK ? nccl_hw_lat_nvlink : nccl_hw_lat_pci)[algo][proto];
}

bool model_nccl_pair_shm(const cfg_system *s, int a, int b, int n)
{
    return model_nccl_link(s, a, b, n) != MODEL_NCCL_P2P;
}

/* Which protocols and algorithms NCCL may choose under the scenario's nccl: tuning. */
bool model_nccl_proto_allowed(const cfg_nccl_tuning *t, int p, bool nvlink)
{
    static const int as_cfg[MODEL_NCCL_PROTOS] = {CFG_NCCL_PROTO_LL, CFG_NCCL_PROTO_LL128, CFG_NCCL_PROTO_SIMPLE};
    if (t->protocol != CFG_NCCL_PROTO_AUTO)
        return t->protocol == as_cfg[p]; /* NCCL enables LL128 off NVLink too when NCCL_PROTO names it */
    return p != MODEL_NCCL_LL128 || nvlink;
}

bool model_nccl_algo_allowed(const cfg_nccl_tuning *t, int a, bool allreduce)
{
    if (!allreduce)
        return a == MODEL_NCCL_RING; /* NCCL runs all-gather as a ring only; nccl.algorithm applies to allreduces */
    return t->algorithm == CFG_NCCL_ALGO_AUTO || (t->algorithm == CFG_NCCL_ALGO_RING) == (a == MODEL_NCCL_RING);
}
