/* C interface of the custom allreduce kernels (kernels/vp_allreduce.cu): one-shot, two-shot and push
 * over buffers that every rank has mapped from every peer (CUDA IPC), bf16 sum with fp32 accumulation.
 *
 * The host side (sim/exec/comm_custom*.c) allocates, registers and maps the buffers; these launchers
 * only enqueue kernels, never synchronise, and take no host-side state that changes between calls, so
 * a call can be captured in a CUDA graph and replayed: the call counter (epoch) lives in the signal
 * block in device memory and is advanced by the kernels themselves.
 *
 * Sizing facts borrowed from vLLM/SGLang's custom allreduce (csrc/custom_all_reduce.cuh, public):
 * 512 threads per block, at most 36 blocks. Unlike there, any element count is accepted (not only
 * multiples of 16 bytes) and any pointer alignment (misaligned buffers take a scalar path). */
#ifndef VPSIM_VP_ALLREDUCE_H
#define VPSIM_VP_ALLREDUCE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VP_AR_MAX_RANKS 8
#define VP_AR_MAX_BLOCKS 36
#define VP_AR_THREADS 512

/* Which flag a wait was for (vp_ar_error.phase). */
enum { VP_AR_WAIT_START = 0, VP_AR_WAIT_MID = 1, VP_AR_WAIT_END = 2, VP_AR_WAIT_DATA = 3 };

/* Per rank and backend instance, zeroed before first use, mapped into every peer: in device memory
 * (CUDA IPC), or in pinned host memory with --p2p sysmem (then the local-only fields below are read
 * from vp_ar_args.self instead).
 * Barrier flags: peer p's block b stores the epoch it reached into flag[b][p] of this rank's block;
 * each slot has exactly one writer, so no atomics cross the interconnect (PCIe has no peer atomics
 * that every platform supports). */
typedef struct vp_ar_signal {
    unsigned int start[VP_AR_MAX_BLOCKS][VP_AR_MAX_RANKS];
    unsigned int mid[VP_AR_MAX_BLOCKS][VP_AR_MAX_RANKS];
    unsigned int end[VP_AR_MAX_BLOCKS][VP_AR_MAX_RANKS];
    /* Local only (never touched by peers). */
    unsigned int epoch;       /* calls this rank completed; the kernels advance it */
    unsigned int done;        /* blocks finished in the current call; the last one advances epoch */
    unsigned int error_claim; /* 0, or 1 once a wait of this rank timed out (later calls do nothing) */
    /* P2P check at registration: peers write probe_in[their rank] through their mapping; this rank's
     * probe kernel reads every peer's probe_src through its mapping into probe_seen[peer]. */
    unsigned int probe_src;
    unsigned int probe_in[VP_AR_MAX_RANKS];
    unsigned int probe_seen[VP_AR_MAX_RANKS];
} vp_ar_signal;

/* Written by the first wait that times out (in host-mapped memory, so the host can read it without
 * synchronising with a stream that may be stuck behind it). code != 0 means the record is complete. */
typedef struct vp_ar_error {
    volatile unsigned int code; /* 0 none, VP_AR_ERR_TIMEOUT */
    int rank, peer, block, phase;
    unsigned int expected, seen; /* flag value waited for, last value read */
    long long index;             /* push: the 16-byte line waited on; -1 for barrier flags */
    unsigned long long waited_ns;
} vp_ar_error;
enum { VP_AR_ERR_TIMEOUT = 1 };

/* One call. Pointers are as mapped in this process; in[rank], scratch[rank], signal[rank] are the
 * local ones. All ranks must pass the same count (the host side guarantees the same grid). */
typedef struct vp_ar_args {
    int rank, world;
    long long count;                         /* bf16 elements */
    const void *in[VP_AR_MAX_RANKS];         /* every rank's input (one-shot, two-shot) */
    void *out;                               /* this rank's output (may equal in[rank] for two-shot, push) */
    void *scratch[VP_AR_MAX_RANKS];          /* two-shot: reduced slices; push: landing buffers */
    vp_ar_signal *signal[VP_AR_MAX_RANKS];
    /* This rank's local state (epoch, done, error_claim; the fields peers never touch), in device
     * memory: signal[rank] itself when that is device memory; a separate block when the signal blocks
     * live in pinned host memory (--p2p sysmem), so that the per-call epoch read, the `done` atomic and
     * the failure polls stay on the GPU instead of crossing PCIe (and no atomic targets host memory). */
    vp_ar_signal *self;
    vp_ar_error *error;                      /* host-mapped, device pointer */
    unsigned long long timeout_ns;           /* every spin gives up after this long */
    long long push_lines;                    /* push: 16-byte lines per (parity, source) landing region */
} vp_ar_args;

/* Bytes of the scratch buffer each backend needs per rank for `max_count` elements. */
size_t vp_ar_twoshot_scratch_bytes(long long max_count);
/* Push: 2 parities x world sources x lines; a line carries 4 bf16 and two 32-bit flags (16 bytes). */
long long vp_ar_push_lines(long long max_count);
size_t vp_ar_push_scratch_bytes(long long max_count, int world);

/* Grid of a call: identical on every rank for the same (algorithm, count, world). */
int vp_ar_blocks_oneshot(long long count, int world);
int vp_ar_blocks_twoshot(long long count, int world);
int vp_ar_blocks_push(long long count, int world);

/* Launchers: return a cudaError_t as int (0 = success). count == 0 launches nothing. */
int vp_allreduce_oneshot(const vp_ar_args *a, void *stream);
int vp_allreduce_twoshot(const vp_ar_args *a, void *stream);
int vp_allreduce_push(const vp_ar_args *a, void *stream);
/* All-gather of `count` elements per rank into out[world * count] (rank-major), one-shot style over
 * the same inputs and barriers: the custom backends use it for the plan's all-gathers. */
int vp_allgather_oneshot(const vp_ar_args *a, void *stream);
/* Reduce-scatter: `count` elements per rank in (world blocks of count / world; count % world == 0), block
 * `rank` of the sum out (count / world elements). The one-shot kernel over every input shifted to this
 * rank's block: each rank loads only its block from every peer (two-shot's first half), start and end
 * barriers. */
int vp_reduce_scatter_oneshot(const vp_ar_args *a, void *stream);

/* Registration check: write probe_in[rank] = vp_ar_probe_value(rank, peer) in every peer's signal and
 * read every peer's probe_src into the local probe_seen[peer], through the mappings. */
int vp_ar_probe(const vp_ar_args *a, void *stream);

/* The probe words: distinct per (writer, reader) pair, never 0 (a zeroed signal block). probe_src of
 * rank r holds vp_ar_probe_value(r, VP_AR_MAX_RANKS). */
#ifdef __CUDACC__
__host__ __device__
#endif
static inline unsigned int vp_ar_probe_value(int from_rank, int to_rank)
{
    return 0x5eed0000u ^ ((unsigned int)from_rank * 0x9e3779b1u) ^ ((unsigned int)to_rank * 0x85ebca6bu) ^ 1u;
}

#ifdef __cplusplus
}
#endif

#endif
