/* cfg_system: the hardware a scenario runs on (or is modelled on): GPU, launch costs, topology, links,
 * host, NCCL's own view of the box, and optional measured tables that override the analytic model.
 *
 * Every number in a shipped system file carries its provenance (spec, measured, assumed or calibrated)
 * and source in a comment beside it; measured tables also carry a `source` string that model mode
 * prints wherever it uses them. Every field has a default so a minimal system file still loads; the
 * defaults are generic PCIe Gen5 figures documented in `vpsim config-reference`. */
#ifndef VPSIM_CFG_SYSTEM_H
#define VPSIM_CFG_SYSTEM_H

#include "cfg_lists.h"
#include "cfg_schema.h"

#include <stdbool.h>

typedef enum { CFG_P2P_DIRECT, CFG_P2P_SYSMEM, CFG_P2P_OFF } cfg_p2p;
extern const char *const cfg_p2p_names[];
/* How the platform (chipset + the NVIDIA driver's PCIe P2P type) carries a kernel's peer loads or peer
 * stores when the software takes the peer path: natively (BAR1 P2P), staged through system memory (the
 * driver's default "mailbox" P2P on direct-attach boxes without the ForceP2P / RMPcieP2PType override), or
 * not at all. Loads and stores are separate: PCIe reads are non-posted, writes posted, and the two are
 * known to be handled differently (docs/model.md "How the platform moves peer traffic"). */
typedef enum { CFG_PEER_NATIVE, CFG_PEER_STAGED, CFG_PEER_OFF } cfg_peer_mode;
extern const char *const cfg_peer_mode_names[];
/* NCCL_P2P_LEVEL as NCCL reads it (src/graph/paths.cc ncclGetUserP2pLevel): auto = unset. The names are
 * NCCL's path types, nearest first; the model's path types map onto them (model_nccl.c). */
typedef enum {
    CFG_NCCL_LEVEL_AUTO,
    CFG_NCCL_LEVEL_LOC,
    CFG_NCCL_LEVEL_NVL,
    CFG_NCCL_LEVEL_NVB,
    CFG_NCCL_LEVEL_PIX,
    CFG_NCCL_LEVEL_PXB,
    CFG_NCCL_LEVEL_PHB,
    CFG_NCCL_LEVEL_SYS
} cfg_nccl_level;
extern const char *const cfg_nccl_level_names[];
/* "2.28.3" -> 22803; -1 when the text is not major.minor.patch with minor and patch below 100. */
int cfg_nccl_version_code(const char *text);
/* "any" followed by cfg_p2p_names: the p2p setting a measured table holds for. */
extern const char *const cfg_table_p2p_names[];
/* How the calls of a measured table were launched: the table still applies under the other mode, but a
 * result that uses it says so (a per-call figure from eager serving includes host launch gaps that a CUDA
 * graph removes, and the reverse). */
typedef enum { CFG_TABLE_LAUNCH_ANY, CFG_TABLE_LAUNCH_EAGER, CFG_TABLE_LAUNCH_GRAPH } cfg_table_launch;
extern const char *const cfg_table_launch_names[];

typedef enum { CFG_IC_PCIE, CFG_IC_NVLINK } cfg_interconnect;
extern const char *const cfg_interconnect_names[];

/* NCCL's P2P level depends on the CPU (src/graph/paths.cc, ncclTopoCheckP2p). */
typedef enum { CFG_CPU_AMD, CFG_CPU_INTEL, CFG_CPU_ARM } cfg_cpu_vendor;
extern const char *const cfg_cpu_vendor_names[];

#define CFG_SYS_TABLE_MAX 32

/* NCCL tuning a scenario asks for (its `nccl:` section): 0 / auto everywhere = NCCL decides, as on a
 * box where nobody set NCCL_* variables. Replay sets the matching NCCL_* variables (cfg_nccl.h); the
 * model honours them. */
typedef enum { CFG_NCCL_PROTO_AUTO, CFG_NCCL_PROTO_LL, CFG_NCCL_PROTO_LL128, CFG_NCCL_PROTO_SIMPLE } cfg_nccl_proto;
typedef enum { CFG_NCCL_ALGO_AUTO, CFG_NCCL_ALGO_RING, CFG_NCCL_ALGO_TREE } cfg_nccl_algo;
extern const char *const cfg_nccl_proto_names[];
extern const char *const cfg_nccl_algo_names[];
typedef struct cfg_nccl_tuning {
    int channels;       /* 0 = NCCL's own choice (system.nccl.channels in the model) */
    int protocol;       /* cfg_nccl_proto */
    int algorithm;      /* cfg_nccl_algo */
    long long buffsize; /* bytes; 0 = NCCL's default (system.nccl.buffsize in the model) */
} cfg_nccl_tuning;

/* A measured curve: duration `us[i]` at size `bytes[i]` (bytes strictly increasing). For collectives
 * `bytes` is the payload per rank and `ranks` the group size it was measured at (0 = any); for compute
 * ops `bytes` is what the op reads plus writes. Empty (no points) = not measured. */
typedef struct cfg_sys_table {
    int ranks;
    int p2p; /* collectives: 0 = measured with any setting, else 1 + the cfg_p2p it was measured with */
    int launch; /* cfg_table_launch: eager launches or a CUDA graph when measured (any = not recorded) */
    double bytes[CFG_SYS_TABLE_MAX];
    int n_bytes;
    double us[CFG_SYS_TABLE_MAX];
    int n_us;
    char *source;
} cfg_sys_table;

/* Measured tables are indexed by cfg_backend and by plan_op_kind (both from cfg_lists.h); only the
 * entries the lists mark (table = 1, compute = 1) appear in the schema. */
enum { CFG_SYS_AR_COUNT = 0 CFG_BACKEND_LIST(CFG_LIST_COUNT_ONE), CFG_SYS_OPS_COUNT = 0 CFG_OP_LIST(CFG_LIST_COUNT_ONE) };

/* Probed compute laws (`vpsim calibrate --measure`): per op class, the per-op time of a replay of
 * microbenchmark ops measured on this GPU at points (rows, bytes), the launch.graph_node_us gap taken
 * out. rows is what fills a tile (GEMM: m; grouped GEMM: rows per expert; attention: query rows per
 * sequence sharing one KV head; norm, elementwise, embedding: m); bytes is read + written. Points are
 * grouped by rows (ascending), bytes strictly increasing within a rows value. A grouped class's table
 * may carry a third coordinate, the per-expert width (plan_op_law_width): then the points are grouped
 * by width (ascending) first, and the rows/bytes rule holds within each width. Model mode evaluates
 * them as docs/model.md "Probed compute laws" states (model_law_eval).
 *   X(ID, name, help) */
#define CFG_LAW_LIST(X)                                                                                                 \
    X(GEMM_WIDE, "gemm_wide", "one weight matrix, output width n (stand-in width for quantised) >= k")               \
    X(GEMM_NARROW, "gemm_narrow", "one weight matrix, n < k")                                                         \
    X(GEMM_BATCHED, "gemm_batched", "a batch of weight matrices sharing the rows (MLA's absorbed w_kc / w_vc)")      \
    X(GROUPED_WIDE, "grouped_wide", "grouped MoE GEMMs, per-expert n >= k")                                           \
    X(GROUPED_NARROW, "grouped_narrow", "grouped MoE GEMMs, per-expert n < k")                                        \
    X(ATTENTION_MLA, "attention_mla", "MLA decode attention (heads share one latent)")                              \
    X(ATTENTION_GQA, "attention_gqa", "GQA decode attention")                                                        \
    X(NORM, "norm", "RMSNorm")                                                                                         \
    X(ELEMENTWISE, "elementwise", "element-wise kernels other than silu_mul")                                        \
    X(SILU_MUL, "silu_mul", "the SiLU-and-multiply of an MLP")                                                        \
    X(EMBEDDING, "embedding", "embedding lookups")
#define CFG_LAW_ENUM(ID, name, help) CFG_LAW_##ID,
typedef enum { CFG_LAW_LIST(CFG_LAW_ENUM) CFG_LAW_COUNT } cfg_law_class;
#undef CFG_LAW_ENUM
extern const char *const cfg_law_names[];
#define CFG_LAW_MAX 128
typedef struct cfg_law_table {
    double width[CFG_LAW_MAX]; /* grouped classes: per-expert width of each point (plan_op_law_width); or none */
    int n_width;
    double rows[CFG_LAW_MAX];
    int n_rows;
    double bytes[CFG_LAW_MAX];
    int n_bytes;
    double us[CFG_LAW_MAX];
    int n_us;
    char *source;
} cfg_law_table;

/* Link quantities a probe measured (`vpsim probe`, docs/model.md "Collectives from link quantities").
 * Matrices are row-major over the probe's `gpus` GPUs: row = the GPU that issues the store or load,
 * column = the GPU whose memory it touches (diagonal unused). An empty list = not measured: the model
 * then derives that quantity from `links` and `topology`. */
#define CFG_PATHS_MAX 16
#define CFG_PATHS_CELLS (CFG_PATHS_MAX * CFG_PATHS_MAX)
typedef struct cfg_paths_list {
    double v[CFG_PATHS_CELLS];
    int n;
} cfg_paths_list;
#define CFG_PATHS_LIST(X)                                                                                              \
    X(visible_us, 2, "us", "one-way visibility of a flag the row GPU stores into the column GPU's memory (ping-pong / 2)") \
    X(load_rtt_us, 2, "us", "one dependent load by the row GPU from the column GPU's memory (pointer chase)")        \
    X(store_gbs, 2, "GB/s", "stores from row into column, that pair alone")                                          \
    X(load_gbs, 2, "GB/s", "loads by row from column, that pair alone")                                               \
    X(all_store_gbs, 2, "GB/s", "stores from row into column while every ordered pair stores at once (per pair)")    \
    X(all_load_gbs, 2, "GB/s", "loads by row from column while every ordered pair loads at once (per pair)")         \
    X(many_writer_gbs, 1, "GB/s", "per GPU: all the others store into it at once (aggregate)")                      \
    X(host_visible_us, 2, "us", "a flag the row GPU stores into pinned host memory near it, seen by the column GPU polling it") \
    X(host_load_rtt_us, 1, "us", "per GPU: one load from pinned host memory on its own socket")                      \
    X(host_store_gbs, 1, "GB/s", "per GPU: stores into pinned host memory on its own socket")                       \
    X(host_load_gbs, 1, "GB/s", "per GPU: loads from pinned host memory on its own socket")                         \
    X(host_far_load_rtt_us, 1, "us", "per GPU: one load from pinned host memory on another socket")                  \
    X(host_far_store_gbs, 1, "GB/s", "per GPU: stores into pinned host memory on another socket")                    \
    X(host_far_load_gbs, 1, "GB/s", "per GPU: loads from pinned host memory on another socket")                     \
    X(host_all_load_gbs, 1, "GB/s", "per GPU: loads from pinned host memory near it while every GPU loads at once")
#define CFG_PATHS_MEMBER(name, dims, unit, help) cfg_paths_list name;
typedef struct cfg_paths {
    int gpus; /* N: the GPUs the lists cover (0 = nothing measured) */
    CFG_PATHS_LIST(CFG_PATHS_MEMBER)
    char *source;   /* provenance of every list: command, date, host, GPU, repetitions */
    char *findings; /* what the probe concluded, in plain words (e.g. peer traffic through system memory) */
} cfg_paths;
#undef CFG_PATHS_MEMBER

typedef struct cfg_system {
    char *name;
    char *description;
    int gpus; /* GPUs in the box */
    struct {
        char *name;
        int sms;
        double mem_bw_gbs;     /* DRAM peak, GB/s */
        double mem_efficiency; /* fraction of the peak a streaming kernel sustains */
        double mem_latency_us; /* ramp of a memory-bound kernel: t = latency + bytes / bandwidth */
        double l2_mb;
        double l2_bw_gbs;
        struct {
            double bf16, fp8, fp32; /* dense TFLOP/s: tensor cores for bf16/fp8, CUDA cores for fp32 */
        } tflops;
        double gemm_efficiency; /* fraction of the tensor peak at full tiles */
        int gemm_tile_m;        /* rows per tensor-core tile: efficiency scales with min(1, rows / tile) */
        double kernel_floor_us; /* shortest kernel, however little it does */
        double memory_gib;      /* device memory a process can use */
        int cc;                 /* compute capability x 10 (90 Hopper, 120 RTX PRO 6000): NCCL's search reads it */
        int smem_sm_kib;        /* shared memory per SM, KiB (0 = not known) */
        int smem_block_kib;     /* shared memory one block may opt in to, KiB (0 = not known) */
    } gpu;
    struct {
        double eager_us;            /* host time to launch one kernel eagerly (framework + driver) */
        double eager_collective_us; /* host time to launch one collective eagerly */
        double eager_gap_us;        /* GPU idle between back-to-back kernels of an eager stream */
        double graph_node_us;       /* GPU idle between kernels inside a CUDA graph */
        double graph_launch_us;     /* host time to launch one graph (one per phase) */
        double eager_jitter_us;     /* spread (std dev) of one eager launch's host time between ranks */
    } launch;
    struct {
        int interconnect; /* cfg_interconnect: how GPUs reach each other */
        int p2p;          /* cfg_p2p */
        int sockets;
        int gpus_per_switch; /* 0 = each GPU attaches directly to its socket's root complex */
        int cpu_vendor;      /* cfg_cpu_vendor */
        int peer_loads;      /* cfg_peer_mode: how the platform carries a kernel's peer loads */
        int peer_stores;     /* cfg_peer_mode: ... and its peer stores */
    } topology;
    struct {
        double pcie_gbs, pcie_efficiency, pcie_lat_us; /* each GPU's link, per direction */
        double switch_lat_us, uplink_gbs;              /* PCIe switch hop and its uplink */
        double root_complex_gbs, root_complex_lat_us;  /* peer traffic a socket's root complex forwards */
        double socket_gbs, socket_lat_us;              /* the socket interconnect, per direction */
        double nvlink_gbs, nvlink_lat_us;              /* per GPU, per direction, through NVSwitch */
        double read_efficiency;                        /* remote loads against posted writes */
        double many_writer_efficiency;                 /* posted writes into one GPU from many writers */
        double fence_us;                               /* a system-scope fence */
        double host_mem_gbs, host_mem_lat_us;          /* pinned host memory seen from a GPU */
        double staged_rtt_us;  /* one staged peer access's round trip (0 = derived through host memory) */
        double sysmem_load_gbs; /* per GPU: kernel loads from system memory while every GPU loads (0 = no limit) */
    } links;
    struct {
        double cycle_overhead_us; /* scheduler, sampling, bookkeeping per decode cycle */
        double tree_overhead_us;  /* extra per cycle when the draft is a tree (topk > 1) */
        double memcpy_lat_us;     /* one small synchronous cudaMemcpy */
        double mpi_lat_us;        /* one step of a host MPI allreduce */
        double mpi_bw_gbs;
        double convert_gbs;       /* bf16 bytes the host converts to fp32 (or back) per second */
    } host;
    struct {
        char *version;        /* NCCL's version as "major.minor.patch": its transport and search rules */
        int version_code;     /* derived on load: cfg_nccl_version_code(version) */
        int p2p_level;        /* cfg_nccl_level: NCCL_P2P_LEVEL */
        bool p2p_disable;     /* NCCL_P2P_DISABLE=1 */
        bool shm_disable;     /* NCCL_SHM_DISABLE=1 */
        double graph_bw_gbs;  /* a graph file's (NCCL_GRAPH_FILE) per-channel speed; 0 = NCCL's own search */
        int channels;         /* channels NCCL runs (what its search built on the box) */
        double pci_bw_gbs;    /* NCCL's figure for the GPU's PCIe link (topo.h) */
        double sys_bw_gbs;    /* NCCL's figure for the inter-socket link */
        double nvlink_bw_gbs; /* NCCL's per-GPU NVLink figure */
        double ll_max_bw_gbs;
        double symm_base_us;
        double buffsize; /* NCCL_BUFFSIZE: Simple-protocol buffer per connection, bytes */
    } nccl;
    struct {
        double push_expansion; /* bytes on the wire per payload byte when the flag travels in the data */
    } custom;
    cfg_paths paths;
    struct {
        double runtime_mib;          /* CUDA context, library workspaces, allocator slack */
        double graph_pool_mib;       /* the serving engine's captured CUDA graphs */
        double custom_workspace_mib; /* a custom allreduce's exchange buffers and flags */
    } memory;
    struct {
        bool use;
        bool collectives; /* the allreduce / all-gather tables (false: their formulas, the op tables kept) */
        cfg_sys_table allreduce[CFG_SYS_AR_COUNT];
        cfg_sys_table allgather_nccl;
        cfg_sys_table ops[CFG_SYS_OPS_COUNT];
        cfg_law_table compute[CFG_LAW_COUNT]; /* probed laws; before ops when both apply */
    } measured;
    /* Not a system-file key: the scenario's `nccl:` section, copied here by cfg_scenario_load so that
     * every model of a collective on this system sees it. */
    cfg_nccl_tuning nccl_tuning;
} cfg_system;

extern const cfg_field cfg_system_fields[];

#endif
