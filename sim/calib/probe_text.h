/* probe_text: what `vpsim probe` concludes and writes, as plain functions of what it measured (so the
 * tests reach them with hand-made measurements, without MPI or a GPU): the p2p mode it infers, the
 * findings in plain words, the fresh YAML with a provenance comment per value, the whole system file
 * (through cal_system_write) and the short report for stdout. */
#ifndef VPSIM_PROBE_TEXT_H
#define VPSIM_PROBE_TEXT_H

#include "../config/cfg.h"
#include "../comm/comm_nccl_log.h"
#include "../config/cfg_system.h"
#include "../exec/dev_nvml_topo.h"
#include "../exec/exec.h"
#include "../exec/exec_links.h"
#include "../exec/exec_mpi_costs.h"
#include "../util/util.h"

#include <stdbool.h>

/* The p2p rule (docs: README "vpsim probe"). topology.p2p says what the software will do on this box,
 * which is what the model must price: per ordered pair i != j of the probed GPUs,
 *   off    when cudaDeviceCanAccessPeer said no (peer_access 0) for any pair: the custom kernels need
 *          every pair, and NCCL then stages through host memory;
 *   direct otherwise (and when nothing says otherwise: one GPU, nothing measured).
 * Peer access reported but a peer flag slower than max(PROBE_NATIVE_VISIBLE_US, PROBE_HOST_FACTOR x the
 * median host_visible_us) is `bounced`: the platform routes peer traffic through system memory. It stays
 * `direct` — NCCL and the custom kernels still take the peer path, and pay the measured paths — and the
 * findings say so in plain words ("sysmem" is the what-if of staging through host memory on purpose,
 * --p2p sysmem / --set system.topology.p2p=sysmem).
 * PROBE_NATIVE_VISIBLE_US (assumed): a native PCIe or NVLink peer store is seen within 1-2 us (a
 * posted write across at most two GPU links and a switch or root complex: links.pcie_lat_us 0.5,
 * switch 0.15, root complex 0.3 in the shipped files); 3 us leaves room for timer and polling noise.
 * PROBE_HOST_FACTOR (assumed): a flag staged explicitly through pinned host memory crosses both GPU
 * links and DRAM; a "peer" store slower than twice that is not crossing a direct path, it is being
 * bounced through system memory (or worse) by the platform. */
#define PROBE_NATIVE_VISIBLE_US 3.0
#define PROBE_HOST_FACTOR 2.0
/* Loads apart from stores (topology.peer_loads / peer_stores): a peer load's round trip (load_rtt_us,
 * the median pair) slower than max(PROBE_NATIVE_LOAD_US, PROBE_HOST_FACTOR x the median load from pinned
 * host memory) is staged through system memory; a peer store is staged when `bounced` holds.
 * PROBE_NATIVE_LOAD_US (assumed): a native 128 B peer read across a root complex takes 1.1-1.4 us on
 * dual-EPYC PCIe Gen5 boxes (public p2pmark figures, docs/model.md), twice the store's path; 4 us leaves
 * room for noise. */
#define PROBE_NATIVE_LOAD_US 4.0
typedef struct probe_p2p {
    int mode;            /* cfg_p2p: what the software does here (direct or off) */
    bool bounced;        /* peer access reported, but peer traffic goes through system memory */
    int peer_loads, peer_stores; /* cfg_peer_mode as measured (native when nothing says otherwise) */
    bool judged;         /* two or more GPUs with their loads and host loads measured */
    double load_median_us, host_load_median_us;
    int worst_i, worst_j; /* the slowest pair (visible_us), -1 when none measured */
    double worst_us, host_median_us, threshold_us; /* host_median_us 0 when not measured */
    char why[480];       /* the reason, in plain words */
} probe_p2p;
void probe_infer_p2p(const exec_links_result *r, probe_p2p *out);

/* One measured collective curve (graph mode where the device has graphs). */
#define PROBE_MAX_CURVES 8
typedef struct probe_curve {
    char key[40];   /* under measured.: "allreduce.nccl", "allgather_nccl" */
    char label[40]; /* for people: "nccl allreduce" */
    bool ran;
    char why[320]; /* not run: why */
    bool graph;
    int iters;
    int n;
    double bytes[CFG_SYS_TABLE_MAX], us[CFG_SYS_TABLE_MAX];
} probe_curve;

typedef struct probe_input {
    const exec_links_result *links;
    const dev_topo *topo;  /* NULL or !read: no topology keys from NVML */
    int device;            /* cfg_device */
    const char *date, *host;
    const char *base;      /* the base system file (for the header) */
    const probe_curve *curves;
    int n_curves;
    bool curves_skipped;   /* --no-curves: the base's collective tables stay */
    const char *cpu_vendor; /* cfg_cpu_vendor_names entry, or NULL when unknown */
    const exec_mpi_costs *host_mpi; /* host.mpi_lat_us, mpi_bw_gbs, convert_gbs; NULL = not measured */
    const comm_nccl_log *nccl_log;  /* what NCCL's INFO log said (rank 0's), NULL = not read */
    const exec_facts *facts;        /* the device rank 0 ran on (its gpu section); NULL = not known */
    const char *mismatch;           /* the device against the base's, written on purpose (--base); NULL/"" none */
} probe_input;

/* Whether the figures are a self-test (CPU device or virtual ranks), not an interconnect's. */
bool probe_self_test(const probe_input *in);
/* The NVML topology is the machine's own (not a self-test) and was read. */
bool probe_have_topo(const probe_input *in);
/* A measured value (finite, positive); a list's median over its measured cells (the off-diagonal of a
 * matrix, dims 2), 0 if none; whether every cell a list must have is measured. */
bool probe_measured(double v);
double probe_list_median(const cfg_paths_list *l, int n, int dims);
bool probe_list_complete(const cfg_paths_list *l, int n, int dims);

/* The findings in plain words, one sentence per finding ('\n' between them). */
void probe_findings(const probe_input *in, const probe_p2p *p2p, util_buf *out);

/* The whole system file: the base with the probe's keys put in, every measured value commented with
 * "measured: probe, DATE, HOST, GPU, median of N (spread X%)". 0, or VP_EXIT_USAGE after saying why
 * (nothing to write then). */
int probe_system_text(const probe_input *in, util_buf *out);

/* The report for people: where it ran, the visible_us matrix, the p2p mode, the findings, the file. */
void probe_report(const probe_input *in, const char *out_path, util_buf *out);

#endif
