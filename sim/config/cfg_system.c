/* Schema of system files. The defaults describe a generic PCIe Gen5 GPU box so that a minimal system file
 * loads; shipped system files set every value with its provenance (configs/systems/ *.yaml). */
#include "cfg.h"
#include "cfg_system.h"

#include <float.h>
#include <stddef.h>
#include <stdio.h>

const char *const cfg_p2p_names[] = {"direct", "sysmem", "off", NULL};
const char *const cfg_table_p2p_names[] = {"any", "direct", "sysmem", "off", NULL};
const char *const cfg_table_launch_names[] = {"any", "eager", "graph", NULL};
const char *const cfg_interconnect_names[] = {"pcie", "nvlink", NULL};
const char *const cfg_cpu_vendor_names[] = {"amd", "intel", "arm", NULL};
const char *const cfg_peer_mode_names[] = {"native", "staged", "off", NULL};
const char *const cfg_nccl_level_names[] = {"auto", "LOC", "NVL", "NVB", "PIX", "PXB", "PHB", "SYS", NULL};

int cfg_nccl_version_code(const char *text)
{
    int major, minor, patch, used = 0;
    if (!text || sscanf(text, "%d.%d.%d%n", &major, &minor, &patch, &used) != 3 || text[used] != '\0' || major < 1 ||
        major > 9 || minor < 0 || minor > 99 || patch < 0 || patch > 99)
        return -1;
    return major * 10000 + minor * 100 + patch;
}

static int nccl_version_check(const char *value, char *why, size_t why_len)
{
    if (cfg_nccl_version_code(value) >= 0)
        return 0;
    snprintf(why, why_len, "'%s' is not an NCCL version (major.minor.patch, e.g. 2.28.3)", value);
    return -1;
}
#define LAW_NAME(ID, name, help) name,
const char *const cfg_law_names[] = {CFG_LAW_LIST(LAW_NAME) NULL};
#undef LAW_NAME

/* Measured values are read from files that are edited by hand: each is bounded here, where it is read,
 * so that no table can carry a figure that prints as -nan, inf or 300 digits (seen once: us = 1e300 gave
 * `cycle_ms: null` with `available: true`). The bounds are far past any real measurement: a collective or
 * op of 1e9 us is 17 minutes per call, 1 PiB the plan's own bound on an op's bytes, and 1e9 us or GB/s
 * for a link path. */
#define MEASURED_MAX_US 1e9
#define MEASURED_MAX_BYTES 1125899906842624.0 /* 2^50, as plan_json.c's PLAN_MAX_OP_BYTES */
#define MEASURED_MAX_ROWS 1e12
#define PATHS_MAX 1e9
#define IN(member, field) (offsetof(cfg_system, member.field) - offsetof(cfg_system, member))
#define NUM(k, member, field, dflt, lo, hi, u, text)                                                               \
    {.key = k, .type = CFG_T_DOUBLE, .offset = IN(member, field), .def = dflt, CFG_RANGE(lo, hi), .unit = u,       \
     .doc = text}
#define INT(k, member, field, dflt, lo, hi, u, text)                                                               \
    {.key = k, .type = CFG_T_INT, .offset = IN(member, field), .def = dflt, CFG_RANGE(lo, hi), .unit = u,          \
     .doc = text}

static const cfg_field tflops_fields[] = {
    {.key = "bf16", .type = CFG_T_DOUBLE, .offset = offsetof(cfg_system, gpu.tflops.bf16) - offsetof(cfg_system, gpu.tflops),
     .def = "500", CFG_RANGE(0.001, 1e6), .unit = "TFLOP/s", .doc = "dense bf16/fp16 tensor rate (also W4A16 GEMMs)"},
    {.key = "fp8", .type = CFG_T_DOUBLE, .offset = offsetof(cfg_system, gpu.tflops.fp8) - offsetof(cfg_system, gpu.tflops),
     .def = "1000", CFG_RANGE(0.001, 1e6), .unit = "TFLOP/s", .doc = "dense fp8 tensor rate"},
    {.key = "fp32", .type = CFG_T_DOUBLE, .offset = offsetof(cfg_system, gpu.tflops.fp32) - offsetof(cfg_system, gpu.tflops),
     .def = "60", CFG_RANGE(0.001, 1e6), .unit = "TFLOP/s", .doc = "CUDA-core fp32 rate (norms, elementwise)"},
    {0},
};

static const cfg_field gpu_fields[] = {
    {.key = "name", .type = CFG_T_STRING, .offset = IN(gpu, name), .doc = "GPU model name"},
    INT("sms", gpu, sms, "132", 1, 4096, "", "streaming multiprocessors"),
    NUM("mem_bw_gbs", gpu, mem_bw_gbs, "1792", 1, 1e6, "GB/s", "DRAM bandwidth, peak"),
    NUM("mem_efficiency", gpu, mem_efficiency, "0.85", 0.01, 1, "fraction",
        "share of the DRAM peak a streaming kernel sustains"),
    NUM("mem_latency_us", gpu, mem_latency_us, "0.6", 0, 100, "us",
        "ramp of a memory-bound kernel: time = latency + bytes / (bandwidth x efficiency)"),
    NUM("l2_mb", gpu, l2_mb, "64", 0, 1e6, "MiB", "L2 cache; a cycle whose weights and cache fit is served from it"),
    NUM("l2_bw_gbs", gpu, l2_bw_gbs, "5000", 1, 1e7, "GB/s", "L2 bandwidth (used only when the cycle fits in L2)"),
    {.key = "tflops", .type = CFG_T_MAP, .offset = IN(gpu, tflops), .fields = tflops_fields,
     .doc = "dense arithmetic rates"},
    NUM("gemm_efficiency", gpu, gemm_efficiency, "0.7", 0.01, 1, "fraction", "share of the tensor peak at full tiles"),
    INT("gemm_tile_m", gpu, gemm_tile_m, "64", 1, 4096, "rows",
        "rows per tensor-core tile: GEMM efficiency scales with min(1, rows / tile)"),
    NUM("kernel_floor_us", gpu, kernel_floor_us, "2.0", 0, 1000, "us", "shortest kernel, however little it does"),
    NUM("memory_gib", gpu, memory_gib, "80", 0.001, 1e6, "GiB",
        "device memory a process can use (nvidia-smi's total); the memory account is held against it"),
    INT("cc", gpu, cc, "90", 10, 200, "x10",
        "compute capability x 10 (90 Hopper, 100 B200, 120 RTX PRO 6000): NCCL picks its search speeds by it"),
    INT("smem_sm_kib", gpu, smem_sm_kib, "0", 0, 1 << 20, "KiB",
        "shared memory per SM (228 on sm_90, 100 on sm_120): with smem_block_kib and sms, the probed attention law "
        "computes the decode kernel's launch (splits, blocks per SM; docs/model.md \"Probed compute laws\"); "
        "0 = not known: the law reads a batch as one long sequence"),
    INT("smem_block_kib", gpu, smem_block_kib, "0", 0, 1 << 20, "KiB",
        "shared memory one block may opt in to (cudaDevAttrMaxSharedMemoryPerBlockOptin: 227 on sm_90, 99 on "
        "sm_120); 0 = not known"),
    {0},
};

static const cfg_field launch_fields[] = {
    NUM("eager_us", launch, eager_us, "6.0", 0, 1e4, "us", "host time to launch one kernel eagerly"),
    NUM("eager_collective_us", launch, eager_collective_us, "10.0", 0, 1e4, "us",
        "host time to launch one collective eagerly"),
    NUM("eager_gap_us", launch, eager_gap_us, "1.0", 0, 1e4, "us", "GPU idle between kernels of an eager stream"),
    NUM("graph_node_us", launch, graph_node_us, "0.5", 0, 1e4, "us", "GPU idle between kernels inside a CUDA graph"),
    NUM("graph_launch_us", launch, graph_launch_us, "20", 0, 1e6, "us",
        "host time to launch one CUDA graph (one graph per phase)"),
    NUM("eager_jitter_us", launch, eager_jitter_us, "0", 0, 1e5, "us",
        "spread (standard deviation) of one eager launch's host time between the ranks: in eager launches each "
        "collective waits for the slowest rank (docs/model.md \"Arrival skew\"); 0 = none"),
    {0},
};

static const cfg_field topology_fields[] = {
    {.key = "interconnect", .type = CFG_T_ENUM, .offset = IN(topology, interconnect), .def = "pcie",
     .choices = cfg_interconnect_names, .doc = "pcie (peer traffic over PCIe) or nvlink (through NVSwitch)"},
    {.key = "p2p", .type = CFG_T_ENUM, .offset = IN(topology, p2p), .def = "direct", .choices = cfg_p2p_names,
     .doc = "how GPU-to-GPU loads and stores travel: direct peer access, staged through pinned host memory "
            "(sysmem), or not at all (off)"},
    INT("sockets", topology, sockets, "1", 1, 8, "", "CPU sockets; GPUs are split evenly, GPU i on socket i / (gpus/sockets)"),
    INT("gpus_per_switch", topology, gpus_per_switch, "0", 0, 64, "GPUs",
        "GPUs behind each PCIe switch (0 = attached directly to the root complex)"),
    {.key = "cpu_vendor", .type = CFG_T_ENUM, .offset = IN(topology, cpu_vendor), .def = "amd",
     .choices = cfg_cpu_vendor_names, .doc = "decides NCCL's default P2P level (paths.cc)"},
    {.key = "peer_loads", .type = CFG_T_ENUM, .offset = IN(topology, peer_loads), .def = "native",
     .choices = cfg_peer_mode_names,
     .doc = "how the platform carries a kernel's loads from a peer GPU: native (BAR1 P2P), staged through system "
            "memory (the driver's default on direct-attach PCIe without its P2P override), or off"},
    {.key = "peer_stores", .type = CFG_T_ENUM, .offset = IN(topology, peer_stores), .def = "native",
     .choices = cfg_peer_mode_names, .doc = "the same for a kernel's stores into a peer GPU"},
    {0},
};

static const cfg_field links_fields[] = {
    NUM("pcie_gbs", links, pcie_gbs, "63", 0.001, 1e6, "GB/s", "each GPU's PCIe link, per direction, theoretical"),
    NUM("pcie_efficiency", links, pcie_efficiency, "0.85", 0.01, 1, "fraction",
        "payload share of the PCIe link after packet overheads"),
    NUM("pcie_lat_us", links, pcie_lat_us, "0.5", 0, 1000, "us", "one-way latency through a GPU's PCIe link"),
    NUM("switch_lat_us", links, switch_lat_us, "0.15", 0, 1000, "us", "one PCIe switch hop"),
    NUM("uplink_gbs", links, uplink_gbs, "63", 0.001, 1e6, "GB/s", "PCIe switch uplink to the root complex, per direction"),
    NUM("root_complex_gbs", links, root_complex_gbs, "100", 0.001, 1e6, "GB/s",
        "peer-to-peer bytes a socket's root complex forwards per second"),
    NUM("root_complex_lat_us", links, root_complex_lat_us, "0.3", 0, 1000, "us", "forwarding through a root complex"),
    NUM("socket_gbs", links, socket_gbs, "30", 0.001, 1e6, "GB/s", "peer traffic across the socket interconnect, per direction"),
    NUM("socket_lat_us", links, socket_lat_us, "0.6", 0, 1000, "us", "crossing the socket interconnect"),
    NUM("nvlink_gbs", links, nvlink_gbs, "450", 0.001, 1e6, "GB/s", "NVLink per GPU, per direction"),
    NUM("nvlink_lat_us", links, nvlink_lat_us, "0.7", 0, 1000, "us", "one-way NVLink + NVSwitch latency"),
    NUM("read_efficiency", links, read_efficiency, "0.75", 0.01, 1, "fraction",
        "throughput of remote loads against posted writes (non-posted reads need tags and completions)"),
    NUM("many_writer_efficiency", links, many_writer_efficiency, "0.8", 0.01, 1, "fraction",
        "posted-write throughput into one GPU when many peers write at once"),
    NUM("fence_us", links, fence_us, "1.0", 0, 1000, "us", "a system-scope fence before a flag write"),
    NUM("host_mem_gbs", links, host_mem_gbs, "100", 0.001, 1e6, "GB/s", "host DRAM bandwidth per socket"),
    NUM("host_mem_lat_us", links, host_mem_lat_us, "0.3", 0, 1000, "us", "host DRAM access behind the root complex"),
    NUM("staged_rtt_us", links, staged_rtt_us, "0", 0, 1e5, "us",
        "one peer load's round trip (or a peer store's visibility) when the platform stages it through system "
        "memory; 0 = derived: the native round trip plus a flag through host memory"),
    NUM("sysmem_load_gbs", links, sysmem_load_gbs, "0", 0, 1e6, "GB/s",
        "per GPU: bytes its kernels load from system memory per second while every GPU does (NCCL's SHM receives, "
        "peer loads the platform stages); 0 = no shared limit beyond pcie_gbs x pcie_efficiency x read_efficiency"),
    {0},
};

static const cfg_field host_fields[] = {
    NUM("cycle_overhead_us", host, cycle_overhead_us, "500", 0, 1e7, "us",
        "host work per decode cycle outside the GPU phases (scheduling, sampling)"),
    NUM("tree_overhead_us", host, tree_overhead_us, "30", 0, 1e7, "us",
        "extra host work per cycle when speculative.topk > 1: the eager kernels SGLang adds for a tree (KV slots of "
        "the accepted branch moved, the rejected branches freed); assumed, docs/model.md \"Acceptance\""),
    NUM("memcpy_lat_us", host, memcpy_lat_us, "10", 0, 1e6, "us", "one small synchronous cudaMemcpy"),
    NUM("mpi_lat_us", host, mpi_lat_us, "1.5", 0, 1e6, "us", "one step of a host MPI allreduce (shared memory)"),
    NUM("mpi_bw_gbs", host, mpi_bw_gbs, "8", 0.001, 1e6, "GB/s", "bandwidth of one host MPI step"),
    NUM("convert_gbs", host, convert_gbs, "3", 0.001, 1e6, "GB/s",
        "bf16 bytes per second the host converts to fp32 or back (host-staged MPI has no bf16 sum)"),
    {0},
};

static const cfg_field nccl_fields[] = {
    {.key = "version", .type = CFG_T_STRING, .offset = IN(nccl, version), .def = "2.28.3", .check = nccl_version_check,
     .doc = "NCCL's version (major.minor.patch): which transport and topology-search rules apply (model_nccl.c)"},
    {.key = "p2p_level", .type = CFG_T_ENUM, .offset = IN(nccl, p2p_level), .def = "auto", .choices = cfg_nccl_level_names,
     .doc = "NCCL_P2P_LEVEL: the farthest path NCCL uses P2P over (auto = NCCL's default for the CPU and GPU count)"},
    {.key = "p2p_disable", .type = CFG_T_BOOL, .offset = IN(nccl, p2p_disable), .def = "false",
     .doc = "NCCL_P2P_DISABLE=1: no P2P transport between GPUs (it wins over p2p_level)"},
    {.key = "shm_disable", .type = CFG_T_BOOL, .offset = IN(nccl, shm_disable), .def = "false",
     .doc = "NCCL_SHM_DISABLE=1: no host-memory transport; pairs without P2P then go through the network (sockets)"},
    NUM("graph_bw_gbs", nccl, graph_bw_gbs, "0", 0, 1e4, "GB/s",
        "a graph file's per-channel speed (NCCL_GRAPH_FILE speedintra); 0 = NCCL's own topology search"),
    INT("channels", nccl, channels, "2", 1, 64, "",
        "channels NCCL runs its collectives on (its topology search decides them on a box: `vpsim probe` reads "
        "them from NCCL's log; `--explain` shows what the search rules give)"),
    NUM("pci_bw_gbs", nccl, pci_bw_gbs, "48", 0.001, 1e6, "GB/s",
        "NCCL's figure for the GPU's PCIe link (topo.h: width x speed / 80)"),
    NUM("sys_bw_gbs", nccl, sys_bw_gbs, "16", 0.001, 1e6, "GB/s", "NCCL's figure for the inter-socket link"),
    NUM("nvlink_bw_gbs", nccl, nvlink_bw_gbs, "370", 0.001, 1e6, "GB/s", "NCCL's NVLink figure per GPU"),
    NUM("ll_max_bw_gbs", nccl, ll_max_bw_gbs, "141", 0.001, 1e6, "GB/s", "cap on LL bus bandwidth (tuning.cc llMaxBws)"),
    NUM("symm_base_us", nccl, symm_base_us, "5.0", 0, 1e4, "us", "fixed cost of a symmetric-memory kernel"),
    NUM("buffsize", nccl, buffsize, "4194304", 65536, 1073741824, "bytes",
        "NCCL_BUFFSIZE: Simple-protocol buffer per connection (NCCL's default 4 MiB); for the memory account"),
    {0},
};

static const cfg_field custom_fields[] = {
    NUM("push_expansion", custom, push_expansion, "2.0", 1, 16, "x",
        "wire bytes per payload byte of the push kernel (flag carried in each line, LL-style)"),
    {0},
};

static const cfg_field memory_fields[] = {
    NUM("runtime_mib", memory, runtime_mib, "2048", 0, 1e7, "MiB",
        "per rank: CUDA context, cuBLAS workspaces and allocator slack outside weights and KV cache"),
    NUM("graph_pool_mib", memory, graph_pool_mib, "1024", 0, 1e7, "MiB",
        "per rank: memory pools of the serving engine's captured CUDA graphs"),
    NUM("custom_workspace_mib", memory, custom_workspace_mib, "16", 0, 1e7, "MiB",
        "per rank: a custom allreduce's IPC exchange buffers and flags (counted for those backends)"),
    {0},
};

#define TB(f) offsetof(cfg_sys_table, f)
static const cfg_field table_fields[] = {
    {.key = "ranks", .type = CFG_T_INT, .offset = TB(ranks), .def = "0", CFG_RANGE(0, 1024),
     .doc = "group size the collective was measured at (0 = any)"},
    {.key = "p2p", .type = CFG_T_ENUM, .offset = TB(p2p), .def = "any", .choices = cfg_table_p2p_names,
     .doc = "collectives: the topology.p2p setting it was measured with (the table is ignored under another)"},
    {.key = "launch", .type = CFG_T_ENUM, .offset = TB(launch), .def = "any", .choices = cfg_table_launch_names,
     .doc = "how the measured calls were launched: eager, graph (CUDA graph) or any (not recorded); collectives: "
            "a scenario in the other mode (run.graph) still uses the table, and its results carry a warning"},
    {.key = "bytes", .type = CFG_T_DOUBLE_LIST, .offset = TB(bytes), .count_offset = TB(n_bytes),
     .max_items = CFG_SYS_TABLE_MAX, .def = "[]", CFG_RANGE(1, MEASURED_MAX_BYTES), .unit = "bytes",
     .doc = "sizes, strictly increasing (collectives: payload per rank; ops: bytes read + written)"},
    {.key = "us", .type = CFG_T_DOUBLE_LIST, .offset = TB(us), .count_offset = TB(n_us), .max_items = CFG_SYS_TABLE_MAX,
     .def = "[]", CFG_RANGE(0, MEASURED_MAX_US), .unit = "us", .doc = "duration at each size"},
    {.key = "source", .type = CFG_T_STRING, .offset = TB(source), .def = "''",
     .doc = "provenance: where, when, how it was measured"},
    {0},
};

/* One table per backend that can carry one and per compute op kind, generated from cfg_lists.h
 * (AR_TAB_0 / OP_TAB_0 leave the others out). */
#define AR_TAB_0(ID, k, help)
#define AR_TAB_1(ID, k, help)                                                                                      \
    {.key = #k, .type = CFG_T_MAP, .offset = sizeof(cfg_sys_table) * CFG_BACKEND_##ID, .fields = table_fields,      \
     .doc = help},
#define AR_TAB(ID, name, k, where, policy, table, family, peer, fuse, launch, workspace, inplace, probe, help) AR_TAB_##table(ID, k, help)
static const cfg_field measured_allreduce_fields[] = {CFG_BACKEND_LIST(AR_TAB){0}};
#define OP_INDEX(ID, ...) CFG_OP_##ID,
enum { CFG_OP_LIST(OP_INDEX) };
#define OP_TAB_0(ID, name, help)
#define OP_TAB_1(ID, name, help)                                                                                     \
    {.key = name, .type = CFG_T_MAP, .offset = sizeof(cfg_sys_table) * CFG_OP_##ID, .fields = table_fields, .doc = help},
#define OP_TAB(ID, name, cls, compute, help) OP_TAB_##compute(ID, name, help)
static const cfg_field measured_ops_fields[] = {CFG_OP_LIST(OP_TAB){0}};

#define LB(f) offsetof(cfg_law_table, f)
static const cfg_field law_fields[] = {
    {.key = "width", .type = CFG_T_DOUBLE_LIST, .offset = LB(width), .count_offset = LB(n_width),
     .max_items = CFG_LAW_MAX, .def = "[]", CFG_RANGE(1, MEASURED_MAX_ROWS),
     .doc = "grouped classes only, optional: the per-expert width of each point, min(stand-in n, k) (the "
            "dimension tensor parallelism splits), ascending; the rows and bytes rules hold within one width"},
    {.key = "rows", .type = CFG_T_DOUBLE_LIST, .offset = LB(rows), .count_offset = LB(n_rows), .max_items = CFG_LAW_MAX,
     .def = "[]", CFG_RANGE(1, MEASURED_MAX_ROWS), .doc = "rows of each point (GEMM m, rows per expert, query rows per KV head, norm m), "
                                            "ascending"},
    {.key = "bytes", .type = CFG_T_DOUBLE_LIST, .offset = LB(bytes), .count_offset = LB(n_bytes),
     .max_items = CFG_LAW_MAX, .def = "[]", CFG_RANGE(1, MEASURED_MAX_BYTES), .unit = "bytes",
     .doc = "bytes read + written of each point, strictly increasing within one rows value"},
    {.key = "us", .type = CFG_T_DOUBLE_LIST, .offset = LB(us), .count_offset = LB(n_us), .max_items = CFG_LAW_MAX,
     .def = "[]", CFG_RANGE(0, MEASURED_MAX_US), .unit = "us", .doc = "per-op time of each point, launch.graph_node_us taken out"},
    {.key = "source", .type = CFG_T_STRING, .offset = LB(source), .def = "''",
     .doc = "provenance: command, date, host, GPU, how many passes"},
    {0},
};
#define LAW_TAB(ID, name, help) {.key = name, .type = CFG_T_MAP, .offset = sizeof(cfg_law_table) * CFG_LAW_##ID, \
                                .fields = law_fields, .doc = help},
static const cfg_field measured_compute_fields[] = {CFG_LAW_LIST(LAW_TAB){0}};
#undef LAW_TAB

#define MS(f) (offsetof(cfg_system, measured.f) - offsetof(cfg_system, measured))
static const cfg_field measured_fields[] = {
    {.key = "use", .type = CFG_T_BOOL, .offset = MS(use), .def = "true",
     .doc = "use the measured tables below where they apply (false = always the formulas)"},
    {.key = "collectives", .type = CFG_T_BOOL, .offset = MS(collectives), .def = "true",
     .doc = "use the measured collective tables (allreduce, allgather_nccl) where they apply; false = the "
            "collectives' formulas with the compute tables kept (a variant that changes NCCL's transports)"},
    {.key = "allreduce", .type = CFG_T_MAP, .offset = MS(allreduce), .fields = measured_allreduce_fields,
     .doc = "measured allreduce latency per backend; overrides the backend's formula"},
    {.key = "allgather_nccl", .type = CFG_T_MAP, .offset = MS(allgather_nccl), .fields = table_fields,
     .doc = "measured NCCL all-gather latency (bytes: each rank's contribution)"},
    {.key = "ops", .type = CFG_T_MAP, .offset = MS(ops), .fields = measured_ops_fields,
     .doc = "measured op durations per kind (written by `vpsim run` / `vpsim calibrate`)"},
    {.key = "compute", .type = CFG_T_MAP, .offset = MS(compute), .fields = measured_compute_fields,
     .doc = "probed compute laws per op class (written by `vpsim calibrate --measure`); used before `ops`"},
    {0},
};

/* ---- paths: what `vpsim probe` measured ---- */
#define PB(f) offsetof(cfg_paths, f)
#define PATHS_FIELD(name, dims, u, help)                                                                           \
    {.key = #name, .type = CFG_T_DOUBLE_LIST, .offset = PB(name.v), .count_offset = PB(name.n),                     \
     .max_items = CFG_PATHS_CELLS, .def = "[]", CFG_RANGE(0, PATHS_MAX), .unit = u,                                      \
     .doc = dims == 2 ? help " (gpus x gpus, row-major; [] = derived from links)" : help " (one per GPU; [] = derived from links)"},
static const cfg_field paths_fields[] = {
    INT("gpus", paths, gpus, "0", 0, CFG_PATHS_MAX, "GPUs", "GPUs the lists below cover (0 = nothing measured)"),
    CFG_PATHS_LIST(PATHS_FIELD)
    {.key = "source", .type = CFG_T_STRING, .offset = PB(source), .def = "''",
     .doc = "provenance of the lists: command, date, host, GPU, repetitions"},
    {.key = "findings", .type = CFG_T_STRING, .offset = PB(findings), .def = "''",
     .doc = "what the probe concluded about the paths, in plain words"},
    {0},
};
#undef PATHS_FIELD

static int paths_check_list(const cfg_paths_list *l, const char *key, int dims, int n, const cfg_node *node,
                            const char *path, cfg_error *err)
{
    if (l->n == 0)
        return 0;
    const cfg_node *at = cfg_map_get(node, key);
    if (at)
        node = at; /* point at the list, not at the section */
    const int want = dims == 2 ? n * n : n;
    if (l->n != want) {
        cfg_errorf(err, node, "%s.%s: %d values, expected %d (%s for paths.gpus=%d)", path, key, l->n, want,
                     dims == 2 ? "gpus x gpus" : "one per GPU", n);
        return -1;
    }
    for (int i = 0; i < l->n; i++) {
        const bool diagonal = dims == 2 && i / n == i % n;
        if (!diagonal && !(l->v[i] > 0)) {
            char where[48];
            if (dims == 2)
                snprintf(where, sizeof(where), "GPU %d -> GPU %d", i / n, i % n);
            else
                snprintf(where, sizeof(where), "GPU %d", i);
            cfg_errorf(err, node, "%s.%s[%d] (%s) is %g: a measured value must be positive", path, key, i, where, l->v[i]);
            return -1;
        }
    }
    return 0;
}

/* Every list is empty or has one value per GPU (per GPU pair for matrices), and what is measured is
 * positive off the diagonal: a zero latency or bandwidth would make the model divide by it or claim a
 * free transfer. */
static int paths_post(void *obj, const cfg_node *node, const char *path, cfg_error *err)
{
    const cfg_paths *p = obj;
    const int n = p->gpus;
#define PATHS_CHECK(name, dims, u, help)                                                                           \
    if (paths_check_list(&p->name, #name, dims, n, node, path, err))                                               \
        return -1;
    CFG_PATHS_LIST(PATHS_CHECK)
#undef PATHS_CHECK
    return 0;
}

/* The peer modes are a PCIe platform's: NVLink has no staged path. */
static int topology_post(void *obj, const cfg_node *node, const char *path, cfg_error *err)
{
    const char *base = (const char *)obj - offsetof(cfg_system, topology);
    const cfg_system *s = (const cfg_system *)(const void *)base;
    if (s->topology.interconnect == CFG_IC_NVLINK &&
        (s->topology.peer_loads == CFG_PEER_STAGED || s->topology.peer_stores == CFG_PEER_STAGED)) {
        cfg_errorf(err, node, "%s: peer_loads/peer_stores 'staged' is a PCIe platform's mode; interconnect nvlink "
                              "carries peer traffic natively (choices: native, off)", path);
        return -1;
    }
    return 0;
}

static int nccl_post(void *obj, const cfg_node *node, const char *path, cfg_error *err)
{
    char *base = (char *)obj - offsetof(cfg_system, nccl);
    cfg_system *s = (cfg_system *)(void *)base;
    s->nccl.version_code = cfg_nccl_version_code(s->nccl.version);
    if (s->nccl.version_code < 0) {
        cfg_errorf(err, node, "%s.version: '%s' is not an NCCL version (major.minor.patch)", path,
                   s->nccl.version ? s->nccl.version : "");
        return -1;
    }
    return 0;
}

#define S(f) offsetof(cfg_system, f)
const cfg_field cfg_system_fields[] = {
    {.key = "name", .type = CFG_T_STRING, .offset = S(name), .doc = "system name"},
    {.key = "description", .type = CFG_T_STRING, .offset = S(description), .def = "''", .doc = "free text"},
    {.key = "gpus", .type = CFG_T_INT, .offset = S(gpus), CFG_RANGE(1, 1024), .doc = "GPUs in the system"},
    {.key = "gpu", .type = CFG_T_MAP, .offset = S(gpu), .fields = gpu_fields, .doc = "the GPU"},
    {.key = "launch", .type = CFG_T_MAP, .offset = S(launch), .fields = launch_fields, .doc = "kernel launch costs"},
    {.key = "topology", .type = CFG_T_MAP, .offset = S(topology), .fields = topology_fields, .post = topology_post, .doc = "interconnect layout"},
    {.key = "links", .type = CFG_T_MAP, .offset = S(links), .fields = links_fields, .doc = "link bandwidths and latencies"},
    {.key = "host", .type = CFG_T_MAP, .offset = S(host), .fields = host_fields, .doc = "host costs"},
    {.key = "nccl", .type = CFG_T_MAP, .offset = S(nccl), .fields = nccl_fields, .post = nccl_post,
     .doc = "NCCL's tuning-model inputs for this box"},
    {.key = "custom", .type = CFG_T_MAP, .offset = S(custom), .fields = custom_fields,
     .doc = "vpsim's IPC allreduce kernels"},
    {.key = "paths", .type = CFG_T_MAP, .offset = S(paths), .fields = paths_fields, .post = paths_post,
     .doc = "link quantities measured by `vpsim probe`; the model prefers them to what it derives from links"},
    {.key = "memory", .type = CFG_T_MAP, .offset = S(memory), .fields = memory_fields,
     .doc = "per-rank memory outside weights and KV cache, for the memory account"},
    {.key = "measured", .type = CFG_T_MAP, .offset = S(measured), .fields = measured_fields,
     .doc = "measured overrides, each with its provenance"},
    {0},
};
