// Fused allreduce + residual add + RMSNorm (vp_allreduce_norm.h): the one-shot and push allreduces with
// the norm as their epilogue, so the reduced rows never go back to memory before being normalised.
// The cross-rank protocol (barriers, epochs, push lines, timeouts) is vp_allreduce.cu's, from
// vp_ar_device.cuh; only the walk over the data differs: a cluster of blocks owns a row (below).
#include "vp_allreduce_norm.h"
#include "vp_ar_device.cuh"

#include <cooperative_groups.h>

namespace cg = cooperative_groups;

namespace {

// Load `n` (<= 8) bf16 of local memory at e0 as floats (VEC: one 16-byte load; pointer aligned).
template <bool VEC>
__device__ __forceinline__ void load_local(float v[8], const void *buf, long long e0, int n)
{
    const bf16 *p = (const bf16 *)buf + e0;
    if (VEC && n == 8) {
        const bf16x8 x = *reinterpret_cast<const bf16x8 *>(p);
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const float2 f = __bfloat1622float2(x.h[j]);
            v[2 * j] = f.x;
            v[2 * j + 1] = f.y;
        }
    } else {
#pragma unroll
        for (int j = 0; j < 8; j++)
            v[j] = j < n ? __bfloat162float(p[j]) : 0.f;
    }
}

// acc (this unit's sum over ranks) + residual -> residual (bf16); returns the unit's sum of squares of
// the stored values.
template <bool VEC>
__device__ __forceinline__ float add_residual(float acc[8], const vp_ar_norm &nm, long long e0, int n)
{
    float r[8];
    load_local<VEC>(r, nm.residual, e0, n);
    float ss = 0.f;
#pragma unroll
    for (int j = 0; j < 8; j++) {
        acc[j] = __bfloat162float(__float2bfloat16(acc[j] + r[j]));
        ss += j < n ? acc[j] * acc[j] : 0.f;
    }
    store_unit<VEC>(nm.residual, e0, n, acc);
    return ss;
}

// out = residual x rstd x weight for one unit (the thread re-reads what it stored in the first pass).
template <bool VEC>
__device__ __forceinline__ void normalise(const vp_ar_norm &nm, void *out, long long e0, int c, int n, float rstd)
{
    float r[8], w[8];
    load_local<VEC>(r, nm.residual, e0, n);
    load_local<VEC>(w, nm.weight, c, n);
#pragma unroll
    for (int j = 0; j < 8; j++)
        r[j] *= rstd * w[j];
    store_unit<VEC>(out, e0, n, r);
}

// ------------------------------------------------------------------------------- cluster row walk
//
// A row is shared by a thread-block cluster of k blocks (vp_ar_norm_cluster): block rank b of the cluster
// takes the row's units b x 512 + t, stride k x 512, so 3 rows of 7168 run on as many blocks as the plain
// kernels give the same payload. Cluster c (= blockIdx.x / k, blocks of a 1-D cluster are consecutive)
// walks rows c, c + clusters, ... ; every block of a cluster makes the same number of row steps, so the
// cluster barriers below are reached by all of them. The row's sum of squares meets in distributed shared
// memory: each block's partial in its own slot, one cluster barrier, every thread adds the k partials in
// block-rank order (the same float in every block, and on every rank: same grid everywhere).
// Co-residency: the cross-GPU block barriers already need every block of the grid resident at once
// (grid <= VP_AR_MAX_BLOCKS <= the SM count, an assumption, as for the plain kernels); the grid stays
// under that cap, and a cluster of at most the portable size (8 blocks, VP_AR_NORM_MAX_CLUSTER) of 512
// threads always fits in one GPC, so the clustered grid is resident at once under the same assumption.
// Failure: a block whose call_start failed or whose push wait timed out keeps stepping through the rows
// without work (a cluster barrier has no timeout: every block must reach it), and its flag in the slot
// stops the whole cluster's normalisation. Each spin before a cluster barrier is a flag or line wait
// bounded by a.timeout_ns, so a dead peer ends in the error record, not a hang.

struct row_slot {
    float ss;  // the block's partial sum of squares of the row
    int bad;   // the block could not reduce its part (timeout or failed rank)
};

struct row_walk {
    int k, b;                // cluster size, this block's rank in it
    int first_row, row_step; // cluster index, clusters in the grid
};

__device__ __forceinline__ row_walk make_walk()
{
    cg::cluster_group cl = cg::this_cluster();
    row_walk w;
    w.k = (int)cl.num_blocks();
    w.b = (int)cl.block_rank();
    w.first_row = (int)blockIdx.x / w.k;
    w.row_step = (int)gridDim.x / w.k;
    return w;
}

// Total sum of squares of the row of step `it` over the cluster; ok becomes false (everywhere in the
// cluster) if any block's part failed. Slots alternate by step parity: a block writes slot (it & 1)
// again at step it + 2 only after the barrier of step it + 1, which every block reaches after its reads
// of step it. The kernel ends with one more cluster barrier so no block exits while a peer block may
// still read its slot.
__device__ float row_total(float ss, bool *ok, int it, float *scratch, row_slot slot[2])
{
    cg::cluster_group cl = cg::this_cluster();
    const float mine = vp_block_sum(ss, scratch);
    const int bad = __syncthreads_or(!*ok);
    if (threadIdx.x == 0)
        slot[it & 1] = row_slot{mine, bad};
    cl.sync();
    float total = 0.f;
    int any_bad = 0;
    for (unsigned r = 0; r < cl.num_blocks(); r++) { // block-rank order: the same sum in every block
        const row_slot *s = cl.map_shared_rank(&slot[it & 1], r);
        total += s->ss;
        any_bad |= s->bad;
    }
    *ok = any_bad == 0;
    return total;
}

template <bool VEC>
__global__ void __launch_bounds__(VP_AR_THREADS) oneshot_norm_kernel(const vp_ar_args a, const vp_ar_norm nm)
{
    __shared__ float scratch[32];
    __shared__ row_slot slot[2];
    unsigned epoch = 0;
    const bool live = call_start(a, &epoch); // block-uniform; a dead block still steps (see above)
    const row_walk w = make_walk();
    const int unit = VEC ? 8 : 1;
    const int first = (w.b * (int)blockDim.x + (int)threadIdx.x) * unit, stride = w.k * (int)blockDim.x * unit;
    int it = 0;
    for (int row = w.first_row; row < nm.rows; row += w.row_step, it++) {
        const long long base = (long long)row * nm.width;
        float ss = 0.f;
        for (int c = first; live && c < nm.width; c += stride) {
            const int n = nm.width - c < unit ? nm.width - c : unit;
            float acc[8];
            sum_inputs<VEC>(acc, a, base + c, n);
            ss += add_residual<VEC>(acc, nm, base + c, n);
        }
        bool ok = live;
        const float rstd = rsqrtf(row_total(ss, &ok, it, scratch, slot) / (float)nm.width + nm.eps);
        for (int c = first; ok && c < nm.width; c += stride)
            normalise<VEC>(nm, a.out, base + c, c, nm.width - c < unit ? nm.width - c : unit, rstd);
    }
    cg::this_cluster().sync();
    if (live)
        call_finish(a, epoch);
}

// Push with rows: line j of the call is elements [4j, 4j + 4), as in push_kernel, so the landing
// buffers and parities are shared with the plain push; a row holds width / 4 whole lines, split over
// the row's cluster like the one-shot units.
__global__ void __launch_bounds__(VP_AR_THREADS) push_norm_kernel(const vp_ar_args a, const vp_ar_norm nm)
{
    __shared__ float scratch[32];
    __shared__ row_slot slot[2];
    unsigned epoch = 0;
    const bool live = call_begin(a, &epoch);
    const row_walk w = make_walk();
    const int parity = (int)(epoch & 1u);
    const int per_row = nm.width / 4;
    const int first = w.b * (int)blockDim.x + (int)threadIdx.x, stride = w.k * (int)blockDim.x;
    bool ok = live;
    int it = 0;
    for (int row = w.first_row; row < nm.rows; row += w.row_step, it++) {
        float ss = 0.f;
        for (int q = first; ok && q < per_row; q += stride) {
            const long long j = (long long)row * per_row + q, e0 = 4 * j;
            const unsigned short *src = (const unsigned short *)a.in[a.rank] + e0;
            const unsigned d0 = (unsigned)src[0] | (unsigned)src[1] << 16;
            const unsigned d1 = (unsigned)src[2] | (unsigned)src[3] << 16;
            float acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
            ok = push_line(a, parity, epoch, j, d0, d1, acc);
            if (ok)
                ss += add_residual<false>(acc, nm, e0, 4);
        }
        // Every thread of every block of the cluster reaches the row total (it synchronises); once a
        // wait failed anywhere in the cluster, ok stays false there and the remaining rows do no work.
        const float rstd = rsqrtf(row_total(ss, &ok, it, scratch, slot) / (float)nm.width + nm.eps);
        for (int q = first; ok && q < per_row; q += stride) {
            const long long e0 = 4 * ((long long)row * per_row + q);
            normalise<false>(nm, a.out, e0, 4 * q, 4, rstd);
        }
    }
    cg::this_cluster().sync();
    if (live)
        call_end(a, epoch);
}

bool norm_valid(const vp_ar_args *a, const vp_ar_norm *nm)
{
    if (!a || !nm || a->world < 1 || a->world > VP_AR_MAX_RANKS || a->rank < 0 || a->rank >= a->world ||
        !a->error || !a->self || !a->out || !nm->residual || !nm->weight || nm->rows < 1 || nm->width < 1 ||
        (long long)nm->rows * nm->width != a->count)
        return false;
    for (int r = 0; r < a->world; r++)
        if (!a->signal[r])
            return false;
    return a->in[a->rank] != NULL;
}

} // namespace

// Units of a row a cluster block covers in one pass: one per thread, as the plain kernels' grids give
// (vp_ar_blocks_oneshot: 8-element units; vp_ar_blocks_push: 4-element lines). Counted from the width
// alone (8-element units on the one-shot's scalar path too, as vp_ar_blocks_oneshot does), so the grid
// is the same on every rank whatever path a rank takes.
static int row_units(int width, int push) { return push ? (width + 3) / 4 : (width + 7) / 8; }

extern "C" int vp_ar_norm_cluster(int width, int push)
{
    const int k = (row_units(width < 1 ? 1 : width, push) + VP_AR_THREADS - 1) / VP_AR_THREADS;
    return k < 1 ? 1 : k > VP_AR_NORM_MAX_CLUSTER ? VP_AR_NORM_MAX_CLUSTER : k;
}

extern "C" int vp_ar_blocks_norm(int rows, int width, int push)
{
    const int k = vp_ar_norm_cluster(width, push), max_clusters = VP_AR_MAX_BLOCKS / k;
    return k * (rows < 1 ? 1 : rows > max_clusters ? max_clusters : rows);
}

typedef void (*norm_kernel_fn)(const vp_ar_args, const vp_ar_norm);

// Cluster launch through cudaLaunchKernelEx (capturable in a CUDA graph like a <<<>>> launch).
static int launch_norm(norm_kernel_fn kernel, const vp_ar_args *a, const vp_ar_norm *nm, int push, void *stream)
{
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = (unsigned)vp_ar_norm_cluster(nm->width, push);
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)vp_ar_blocks_norm(nm->rows, nm->width, push));
    cfg.blockDim = dim3(VP_AR_THREADS);
    cfg.dynamicSmemBytes = 0;
    cfg.stream = (cudaStream_t)stream;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    const cudaError_t e = cudaLaunchKernelEx(&cfg, kernel, *a, *nm);
    const cudaError_t last = cudaGetLastError(); // clears a launch error so it does not stick to a later call
    return (int)(e != cudaSuccess ? e : last);
}

extern "C" int vp_allreduce_norm_oneshot(const vp_ar_args *a, const vp_ar_norm *nm, void *stream)
{
    if (!norm_valid(a, nm))
        return (int)cudaErrorInvalidValue;
    // The vector path needs 8-element units inside a row and every 16-byte load aligned; the inputs are
    // the same registered buffers on every rank, so every rank takes the same path.
    bool vec = nm->width % 8 == 0 && vp_aligned16(nm->residual) && vp_aligned16(nm->weight);
    for (int r = 0; r < a->world; r++) {
        if (!a->in[r])
            return (int)cudaErrorInvalidValue;
        vec = vec && vp_aligned16(a->in[r]);
    }
    return launch_norm(vec ? oneshot_norm_kernel<true> : oneshot_norm_kernel<false>, a, nm, 0, stream);
}

extern "C" int vp_allreduce_norm_push(const vp_ar_args *a, const vp_ar_norm *nm, void *stream)
{
    if (!norm_valid(a, nm) || nm->width % 4 != 0 || a->push_lines < (a->count + 3) / 4)
        return (int)cudaErrorInvalidValue;
    return launch_norm(push_norm_kernel, a, nm, 1, stream);
}
