/* comm_custom: the custom allreduce backends (oneshot, twoshot, push; comm_custom.c, CUDA builds only)
 * and the plain-C pieces they rest on, which build and unit-test everywhere (comm_records.c):
 *
 *   - the registration record every rank contributes to the MPI_Allgather at init: its host, GPU (PCI
 *     bus id), process, and one handle per registered buffer (a CUDA IPC handle, or with --p2p sysmem
 *     the name of the rank's POSIX shared-memory segment), packed into a fixed-size,
 *     versioned, checksummed little-endian message so that mismatched binaries or plans are caught
 *     before any peer pointer is dereferenced;
 *   - the topology those records describe (ranks per GPU, P2P access between GPUs) and its one-line
 *     summary for the results' environment block. */
#ifndef VPSIM_COMM_CUSTOM_H
#define VPSIM_COMM_CUSTOM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define COMM_MAX_RANKS 8          /* = VP_AR_MAX_RANKS (kernels/vp_allreduce.h) */
#define COMM_REG_MAGIC 0x52535056u /* "VPSR" */
#define COMM_REG_VERSION 2u       /* 2: per-region handle kind */
#define COMM_REG_HANDLE_BYTES 64  /* sizeof(cudaIpcMemHandle_t); also the longest shm name + 1 */

/* The buffers a rank registers. SEND and RECV are the device's collective buffers (fixed addresses,
 * so calls on them need no copy and can be captured in graphs); the others are the backend's own. */
typedef enum {
    COMM_REG_SIGNAL,  /* vp_ar_signal: barrier flags, epoch, probe words */
    COMM_REG_SCRATCH, /* two-shot reduced slices / push landing buffers */
    COMM_REG_STAGE,   /* input copy for calls on unregistered or aliased buffers */
    COMM_REG_SEND,
    COMM_REG_RECV,
    COMM_REG_REGIONS
} comm_reg_kind;
extern const char *const comm_reg_kind_names[];

/* What a region's handle bytes hold: a cudaIpcMemHandle_t, or the NUL-terminated name of a POSIX
 * shared-memory segment ("/name", no other '/') that the peer maps and registers as pinned host memory. */
typedef enum { COMM_REG_HANDLE_IPC, COMM_REG_HANDLE_SHM, COMM_REG_HANDLE_KINDS } comm_reg_handle_kind;
extern const char *const comm_reg_handle_names[]; /* "cuda-ipc", "shm" */

typedef struct comm_reg_region {
    bool present;
    int handle_kind; /* comm_reg_handle_kind */
    unsigned char handle[COMM_REG_HANDLE_BYTES];
    uint64_t offset; /* of the registered pointer inside the allocation (or segment) the handle opens */
    uint64_t bytes;  /* usable bytes from the registered pointer */
} comm_reg_region;

typedef struct comm_reg_record {
    int32_t rank, world;
    int32_t device; /* CUDA ordinal in the rank's process (informational) */
    int32_t pid;
    char host[64];
    char bus_id[32]; /* PCI bus id of the rank's GPU: identifies the GPU across processes */
    comm_reg_region region[COMM_REG_REGIONS];
} comm_reg_record;

/* Size of a packed record: header, host, bus id, regions, checksum. */
size_t comm_reg_packed_bytes(void);
/* Pack into buf (at least comm_reg_packed_bytes()); returns the bytes written, 0 if len is short. */
size_t comm_reg_pack(const comm_reg_record *r, unsigned char *buf, size_t len);
/* Unpack and validate magic, version, checksum, ranges. 0, or -1 with a reason. */
int comm_reg_unpack(const unsigned char *buf, size_t len, comm_reg_record *r, char *why, size_t why_len);
/* Check a gathered set (index = rank): same world, one host, same regions present with the same
 * sizes and handle kinds on every rank. 0, or -1 with a reason naming the first offending rank. */
int comm_reg_check_set(const comm_reg_record *recs, int world, char *why, size_t why_len);
/* Bytes a peer must map of the shm segment that region `k` of `r` lives in: the end of the furthest
 * present shm region with the same segment name (regions of one rank may share a segment). 0 when
 * region k is absent or not shm. */
uint64_t comm_reg_segment_bytes(const comm_reg_record *r, int k);

/* What the records and the P2P queries say about the machine. */
typedef struct comm_topo {
    int world;
    int n_gpus;                 /* distinct GPUs (by bus id) */
    int gpu[COMM_MAX_RANKS];    /* rank -> GPU index 0..n_gpus-1, in order of first appearance */
    int ranks_on_gpu[COMM_MAX_RANKS];
    /* Between GPU i and GPU j (i != j), as rank-of-i's process sees it: cudaDeviceCanAccessPeer
     * (1/0, -1 unknown), and the P2P attributes performance rank and native atomics (-1 unknown). */
    signed char access[COMM_MAX_RANKS][COMM_MAX_RANKS];
    signed char perf_rank[COMM_MAX_RANKS][COMM_MAX_RANKS];
    signed char atomics[COMM_MAX_RANKS][COMM_MAX_RANKS];
} comm_topo;

/* GPUs and ranks per GPU from the records; P2P fields set to unknown (-1). */
void comm_topo_from_records(comm_topo *t, const comm_reg_record *recs, int world);
/* Several ranks share one GPU: the kernels' protocol is tested, the interconnect is not. */
bool comm_topo_virtual(const comm_topo *t);
/* Every pair of distinct GPUs reports P2P access (true when there is only one GPU). */
bool comm_topo_all_p2p(const comm_topo *t);
/* One line: "8 ranks on 1 GPU (virtual ranks: ...)" or "4 ranks on 4 GPUs; P2P access all pairs;
 * native atomics none; perf rank 0" or naming the first pair without access. Returns buf. */
const char *comm_topo_summary(const comm_topo *t, char *buf, size_t len);

/* CUDA builds only (comm_peers.c). Collective: every rank calls them. */
struct comm_ctx;
/* Several ranks on one GPU (by PCI bus id), with the device choice of the CUDA device: -1 with a
 * reason for backends that need a GPU per rank (NCCL rejects duplicate GPUs), else 0. Local verdict:
 * pass it to dist_agree. */
int comm_ranks_share_gpu(const struct comm_ctx *x, char *why, size_t len);
/* The custom backends' supported(): refuses only what cannot work (not the cuda device, more than
 * COMM_MAX_RANKS ranks, ranks on several hosts, and in direct mode a GPU pair without P2P access).
 * Agreed across ranks. */
int comm_custom_supported(struct comm_ctx *x, char *why, size_t len);
/* The topology of the gathered records plus every GPU pair's P2P attributes as `device` (this rank's
 * CUDA ordinal) sees them, gathered so that every rank holds the whole matrix. */
void comm_custom_topology(comm_topo *t, int device, int rank, int world, const comm_reg_record *recs);

/* The environment note every custom backend and the bench print for virtual ranks. */
#define COMM_VIRTUAL_NOTE                                                                                               \
    "several ranks share one GPU (virtual ranks, CUDA IPC between processes): the protocol is tested, "                \
    "but these timings say nothing about any interconnect"

#endif
