/* exec_links: the link probe's measurements (`vpsim probe`): what the collective and launch
 * models consume, measured on the box the job runs on, one MPI rank per GPU.
 *
 * On CUDA, between every ordered pair of ranks' GPUs through the CUDA IPC mapping: the one-way
 * visibility of a stored flag (ping-pong / 2), one dependent load's round trip (pointer chase), store and
 * load bandwidth with that pair alone, with every ordered pair at once, and with all the others writing
 * into one GPU; per GPU, pinned host memory mapped into the GPU (near and far socket); a flag through
 * host memory between two GPUs; the launch costs. On the CPU device the same quantities between
 * processes through shared host memory: a self-test of the pipeline, not any interconnect's figures.
 * Several ranks on one GPU (virtual ranks) measure the protocol, not an interconnect; the result says so. */
#ifndef VPSIM_EXEC_LINKS_H
#define VPSIM_EXEC_LINKS_H

#include "../config/cfg_system.h"
#include "../dist/dist.h"

#include <stdbool.h>
#include <stddef.h>

#define EXEC_LINKS_ENUM(name, dims, unit, help) EXEC_LINKS_##name,
typedef enum { CFG_PATHS_LIST(EXEC_LINKS_ENUM) EXEC_LINKS_COUNT } exec_links_list;
#undef EXEC_LINKS_ENUM

typedef struct exec_links_opts {
    int device;         /* cfg_device: CFG_DEVICE_CUDA or CFG_DEVICE_CPU */
    bool quick;         /* fewer repetitions and smaller transfers (CI, self-tests) */
    int reps;           /* repetitions per quantity, the median is kept; 0 = default (quick: fewer) */
    long long bw_bytes; /* bytes per bandwidth transfer and pair; 0 = default */
} exec_links_opts;

typedef struct exec_links_result {
    int ranks;
    bool virtual_ranks;                 /* several ranks share one GPU */
    char device_name[96];               /* GPU (or CPU) name of rank 0 */
    char bus_id[CFG_PATHS_MAX][32];     /* each rank's GPU, PCI bus id ("" on the CPU device) */
    int numa[CFG_PATHS_MAX];            /* NUMA node of each rank's GPU, -1 unknown */
    int peer_access[CFG_PATHS_MAX][CFG_PATHS_MAX]; /* cudaDeviceCanAccessPeer: 1, 0, -1 unknown */
    /* Measured lists (paths.<name>.n set for those measured; paths.gpus = ranks); source/findings NULL. */
    cfg_paths paths;
    /* Per list: the largest (max - min) / median over its cells across the repetitions, in percent. */
    double spread_pct[EXEC_LINKS_COUNT];
    /* Launch costs, us (< 0 = not measured): host time of one eager kernel launch, GPU idle between two
     * back-to-back eager kernels, GPU idle between two kernels in a CUDA graph, host time of one
     * cudaGraphLaunch (of a graph of `graph_nodes` kernels). */
    double eager_launch_us, eager_gap_us, graph_node_us, graph_launch_us;
    int graph_nodes;
    /* The spread between the ranks of one eager launch's host time, us (< 0 = not measured): every rank
     * launches jitter_launches empty kernels at once, jitter_iters times; per time the standard deviation
     * of the ranks' host times over sqrt(jitter_launches), the median kept (launch.eager_jitter_us). */
    double eager_jitter_us;
    int jitter_launches, jitter_iters;
    /* Host time of one small copy from pinned host memory to the GPU and back, each followed by a stream
     * synchronise, as the mpi backend stages (host.memcpy_lat_us is one of them), us; < 0 = not measured. */
    double memcpy_lat_us;
    int reps; /* repetitions each median is over */
    char note[256]; /* e.g. the virtual-rank or CPU self-test caveat */
} exec_links_result;

/* Collective: every rank calls it. 0 with `out` complete on rank 0 (every rank on success), or -1 with a
 * reason that every rank shares (dist_agree). A pair that fails its P2P check is not fatal: its cells
 * stay unmeasured, peer_access says why, and the caller reports it. */
int exec_links_measure(dist_job *d, const exec_links_opts *o, exec_links_result *out, char *why, size_t len);

#endif
