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
/* Whether NCCL connects a -> b through host memory (SHM) rather than P2P (paths.cc's rule). */
bool model_nccl_pair_shm(const cfg_system *s, int a, int b);
/* One NCCL step a -> b: max(NCCL's hwLat, the transport's latency). */
double model_nccl_step_us(const cfg_system *s, int a, int b, double hw_lat);

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

/* NCCL's ring base latency and per-step hardware latency (us) for LL or Simple on this interconnect
 * (model_comm.c's tuning tables). */
void model_nccl_ring_latency(const cfg_system *s, bool ll, double *base, double *hw);
/* The all-to-all of S bytes per rank over n ranks with backend `be` (model_alltoall.c); `method` says
 * which formula, terms go to --explain. */
double model_alltoall_us(const cfg_system *s, cfg_backend be, double S, int n, model_terms *terms, char *method,
                         size_t mlen);

/* Topology checks that need more than one field (called by model_prepare): "" when consistent. */
const char *model_topo_check(const cfg_system *s);

#endif
