/* model_topo: where each rank's GPU sits (socket, PCIe switch), the path between two endpoints (GPU or a
 * socket's host memory), and the time a set of flows takes when they share links. Internal to sim/model. */
#ifndef VPSIM_MODEL_TOPO_H
#define VPSIM_MODEL_TOPO_H

#include "../config/cfg.h"
#include "model.h"

#include <stdbool.h>

#define MODEL_MAX_RANKS 16
/* An endpoint: a GPU index >= 0, or the host memory of socket s as MODEL_HOST(s). */
#define MODEL_HOST(s) (-1 - (s))

/* NCCL's path types (src/graph/topo.h), in increasing distance. */
typedef enum { MODEL_PATH_NVL, MODEL_PATH_PIX, MODEL_PATH_PHB, MODEL_PATH_SYS } model_path_type;
extern const char *const model_path_type_names[];

int model_topo_socket(const cfg_system *s, int gpu);
int model_topo_switch(const cfg_system *s, int gpu); /* -1: direct attach */
model_path_type model_topo_path_type(const cfg_system *s, int a, int b);
/* One-way latency of a posted write from endpoint a to endpoint b. */
double model_topo_latency(const cfg_system *s, int a, int b);

typedef struct model_flows {
    int n;
    int src[MODEL_MAX_RANKS * MODEL_MAX_RANKS * 2];
    int dst[MODEL_MAX_RANKS * MODEL_MAX_RANKS * 2];
    double bytes[MODEL_MAX_RANKS * MODEL_MAX_RANKS * 2];
} model_flows;

typedef struct model_flow_time {
    double bw_us;        /* the busiest resource's bytes over its capacity */
    double lat_us;       /* slowest flow's latency: one way (writes) or round trip (reads) */
    char bottleneck[48]; /* the busiest resource */
    double bottleneck_bytes;
    double bottleneck_gbs;
} model_flow_time;

void model_flows_add(model_flows *f, int src, int dst, double bytes);
/* Time for all flows at once. `reads`: the destination pulls (non-posted loads, round-trip latency, read
 * efficiency on the GPU's link); otherwise posted writes (many-writer efficiency when several write into
 * one GPU). */
void model_flows_time(const cfg_system *s, const model_flows *f, bool reads, model_flow_time *out);

/* ---- link quantities (model_links.c): measured (system `paths:`) where present, else derived ---- */
/* `src`, when not NULL, names where the value came from (for --explain). */
double model_link_visible_us(const cfg_system *s, int a, int b, const char **src);
double model_link_load_rtt_us(const cfg_system *s, int a, int b, const char **src);
double model_link_host_visible_us(const cfg_system *s, int a, int b, const char **src);
/* The slowest pair's latency of a stage among n ranks: loads' round trip or stores' visibility. */
double model_links_pair_latency(const cfg_system *s, int n, bool reads);
/* GB/s of a link through host memory a -> b: min(a's stores there, b's loads from there). */
double model_link_host_path_gbs(const cfg_system *s, int a, int b, const char **src);
/* Per GPU: what its kernels load from system memory per second while every GPU does (staged peer loads
 * and NCCL's SHM receives). */
double model_link_sysmem_load_gbs(const cfg_system *s, const char **src);
/* One load's round trip from pinned host memory by GPU g (its own socket). */
double model_link_host_load_rtt_us(const cfg_system *s, int g, const char **src);

/* ---- NCCL's rules (model_nccl.c): transport per link, topology search, tuning choice ---- */
typedef enum { MODEL_NCCL_P2P, MODEL_NCCL_SHM, MODEL_NCCL_NET } model_nccl_transport;
extern const char *const model_nccl_transport_names[];
enum { MODEL_NCCL_LL, MODEL_NCCL_LL128, MODEL_NCCL_SIMPLE, MODEL_NCCL_PROTOS };
enum { MODEL_NCCL_TREE, MODEL_NCCL_RING, MODEL_NCCL_ALGOS };
extern const char *const model_nccl_proto_names[];
extern const char *const model_nccl_algo_names[];
/* The farthest model path type NCCL uses P2P over for a communicator of ngpus on this host (-1: none);
 * `why` names the rule that decided it. */
int model_nccl_p2p_level(const cfg_system *s, int ngpus, const char **why);
/* The transport NCCL connects ring link a -> b with. */
model_nccl_transport model_nccl_link(const cfg_system *s, int a, int b, int ngpus);
/* What NCCL's topology search builds for a ring over n GPUs. */
typedef struct model_nccl_graph {
    double bottleneck_gbs; /* slowest ring link in NCCL's own figures */
    double bw_gbs;         /* the graph's speed per channel (0.1 when it fell back) */
    int search_channels;   /* channels the search found (the tuning model's) */
    int channels;          /* after ncclTopoPostset's doubling */
    bool fallback;         /* no speed of the array fits: NCCL's simple-order fallback */
    const char *speeds;    /* which speed array (or the graph file) */
} model_nccl_graph;
void model_nccl_search(const cfg_system *s, int n, model_nccl_graph *g);
/* The algorithm and protocol NCCL's tuning model picks for nbytes (its own numbers). */
void model_nccl_choose(const cfg_system *s, const model_nccl_graph *g, bool allreduce, double nbytes, int n,
                       int *algo, int *proto, model_terms *terms);
/* NCCL's tuning constants and the scenario's NCCL_ALGO / NCCL_PROTO (model_comm.c). */
double model_nccl_base_lat(int algo, int proto);
double model_nccl_hw_lat(const cfg_system *s, int algo, int proto);
/* The ring's links for one protocol (model_nccl_steps.c): the mean step (a small message visits every link
 * in turn), the transports in use, and where the latencies came from (for --explain). */
typedef struct model_ring_links {
    int n, counts[3];
    double mean, lo, hi;
    const char *src[3];
} model_ring_links;
void model_ring_links_read(const cfg_system *s, int n, int p, model_ring_links *l);
bool model_nccl_proto_allowed(const cfg_nccl_tuning *t, int p, bool nvlink);
bool model_nccl_algo_allowed(const cfg_nccl_tuning *t, int a, bool allreduce);
/* Whether NCCL connects a -> b (of an n-rank communicator) through host memory or the network. */
bool model_nccl_pair_shm(const cfg_system *s, int a, int b, int n);
/* One NCCL peer step a -> b over its transport, LL or Simple (the all-to-all's messages). */
double model_nccl_p2p_step_us(const cfg_system *s, int a, int b, int n, bool ll);

/* A stage of a custom collective in which each rank moves `chunk` bytes to or from each peer (or its
 * host staging area). */
typedef enum {
    MODEL_ST_READ_PEERS,
    MODEL_ST_WRITE_PEERS,
    MODEL_ST_WRITE_HOST,
    MODEL_ST_READ_HOST,
    MODEL_ST_WRITE_PEER_HOSTS
} model_stage_kind;
/* The stage from measured bandwidths when the system's paths cover it (true), else false. */
bool model_links_stage(const cfg_system *s, int n, model_stage_kind k, double chunk, model_flow_time *out);

/* The IPC kernels' time without their kernel floor (oneshot, twoshot, push by `be`; all-gathers and
 * reduce-scatters by `kind`), NCCL's symmetric kernels, and the host-staged MPI path (model_ipc.c). */
double model_ipc_us(const cfg_system *s, cfg_backend be, plan_op_kind kind, double S, int n, model_terms *terms);
double model_nccl_symm_us(const cfg_system *s, plan_op_kind kind, double S, int n, model_terms *terms);
double model_mpi_us(const cfg_system *s, plan_op_kind kind, double S, int n, model_terms *terms);

/* The all-to-all of S bytes per rank over n ranks with backend `be` (model_alltoall.c); `method` says
 * which formula, terms go to --explain. */
double model_alltoall_us(const cfg_system *s, cfg_backend be, double S, int n, model_terms *terms, char *method,
                         size_t mlen);

/* Topology checks that need more than one field (called by model_prepare): "" when consistent. */
const char *model_topo_check(const cfg_system *s);

#endif
