// Merge of the flash-decoding splits (see vp_attention.cu): every split wrote, per query row, an
// unnormalised partial output O_s (fp32) and its running max m_s (log2 units) and sum l_s. Then
//   out[r][d] = sum_s w_s O_s[r][d] / sum_s w_s l_s,   w_s = 2^(m_s - max_s m_s).
// The partials were written just before by the attention kernel, so they are read back from L2; what
// costs here is latency, so the kernel is launched as a programmatic dependent (its blocks are resident
// and waiting when the attention kernel ends) and, once released, makes one round of loads: each warp
// merges its own splits online (running max, rescaled sums: no pass for the global max first), all of
// its loads issued before the first use, and the warps meet once, through shared memory.
// (The previous version made two dependent rounds of loads and three block barriers; at 128 splits it
// took 6.6 us after its release, bench/NOTES.md 2026-11-30 #13.)
#include "vp_attention.cuh"
#include "vp_mma.cuh"

#include <math.h>

namespace {

constexpr int COMBINE_WARPS = 16; // at most; the launch picks 1..16 (combine_warps)
constexpr int COMBINE_THREADS = COMBINE_WARPS * 32;
// Warps resident on the whole GPU at this kernel's ~91-95 registers per thread (nvcc -Xptxas -v, sm_90
// and sm_120): 65536 / (95 * 32) = 21 per SM, times an H200's 132 SMs (derived). On other GPUs only the
// choice of block size, not the result, depends on it.
constexpr int COMBINE_RESIDENT_WARPS = 2772;
constexpr int COMBINE_COLS = 128; // output columns per block: four per lane, 16-byte loads
constexpr int COMBINE_UNROLL = 8; // splits per warp with loads in flight together

// Four consecutive columns c..c+3 of one split's row: one 16-byte load when allowed, else bounded
// scalar loads (zeros past v_dim).
__device__ __forceinline__ float4 load_cols(const float *row, int c, int v_dim, bool vec)
{
    if (vec)
        return c < v_dim ? *reinterpret_cast<const float4 *>(row + c) : make_float4(0.f, 0.f, 0.f, 0.f);
    float4 v;
    v.x = c < v_dim ? row[c] : 0.f;
    v.y = c + 1 < v_dim ? row[c + 1] : 0.f;
    v.z = c + 2 < v_dim ? row[c + 2] : 0.f;
    v.w = c + 3 < v_dim ? row[c + 3] : 0.f;
    return v;
}

// grid = (total_rows, ceil(v_dim / 128)), block = 32 * nw (nw <= 16 warps). Warp w merges splits w,
// w + nw, ... for the block's 128 columns into (M_w, L_w, acc_w); then out = sum_w 2^(M_w - M) acc_w /
// (the same sum over L_w).
__global__ void __launch_bounds__(COMBINE_THREADS)
    attn_combine_kernel(bf16 *__restrict__ out, const float *__restrict__ part_o, const float *__restrict__ part_ml,
                        int splits, int total_rows, int v_dim, unsigned long long *trace)
{
    __shared__ float s_acc[COMBINE_WARPS][COMBINE_COLS];
    __shared__ float s_ml[COMBINE_WARPS][2];
    unsigned long long *tr = trace && threadIdx.x == 0 ? trace + 3 * (blockIdx.y * gridDim.x + blockIdx.x) : nullptr;
    if (tr)
        tr[0] = vp_globaltimer();
    const int row = blockIdx.x, warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nw = blockDim.x >> 5;
    const int c = blockIdx.y * COMBINE_COLS + lane * 4;
    const long long o_stride = (long long)total_rows * v_dim, ml_stride = (long long)total_rows * 2;
    const float *o = part_o + (long long)row * v_dim;
    const float *ml = part_ml + (long long)row * 2;
    // 16-byte loads: v_dim a multiple of 4 and the workspace 16-byte aligned (then every row is).
    const bool vec = v_dim % 4 == 0 && (reinterpret_cast<uintptr_t>(part_o) & 15) == 0;

    vp_grid_dep_wait(); // the attention kernel has completed: its partials are visible
    if (tr)
        tr[1] = vp_globaltimer();

    float m_run = -INFINITY, l_run = 0.f;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 1
    for (int s0 = warp; s0 < splits; s0 += nw * COMBINE_UNROLL) {
        float4 ov[COMBINE_UNROLL];
        float2 mlv[COMBINE_UNROLL];
#pragma unroll
        for (int u = 0; u < COMBINE_UNROLL; u++) {
            const int s = s0 + u * nw;
            if (s < splits) {
                ov[u] = load_cols(o + s * o_stride, c, v_dim, vec);
                mlv[u] = make_float2(ml[s * ml_stride], ml[s * ml_stride + 1]); // 4-byte aligned only
            } else {
                ov[u] = make_float4(0.f, 0.f, 0.f, 0.f);
                mlv[u] = make_float2(-INFINITY, 0.f);
            }
        }
#pragma unroll
        for (int u = 0; u < COMBINE_UNROLL; u++) {
            // Every split saw at least one key, so a real m_s is finite; a missing split has -inf and
            // weight 0. m_new is finite once one real split is in.
            const float m_new = fmaxf(m_run, mlv[u].x);
            if (m_new == -INFINITY)
                continue;
            const float a = exp2f(m_run - m_new), b = exp2f(mlv[u].x - m_new);
            acc.x = acc.x * a + ov[u].x * b;
            acc.y = acc.y * a + ov[u].y * b;
            acc.z = acc.z * a + ov[u].z * b;
            acc.w = acc.w * a + ov[u].w * b;
            l_run = l_run * a + mlv[u].y * b;
            m_run = m_new;
        }
    }
    *reinterpret_cast<float4 *>(&s_acc[warp][lane * 4]) = acc;
    if (lane == 0) {
        s_ml[warp][0] = m_run;
        s_ml[warp][1] = l_run;
    }
    __syncthreads();
    // Columns 0..127 of the block: with fewer than 4 warps, threads take several columns each.
    for (int j = threadIdx.x; j < COMBINE_COLS; j += blockDim.x) {
        const int col = blockIdx.y * COMBINE_COLS + j;
        float m = -INFINITY;
        for (int w = 0; w < nw; w++)
            m = fmaxf(m, s_ml[w][0]);
        float num = 0.f, den = 0.f;
        for (int w = 0; w < nw; w++) {
            const float wt = s_ml[w][0] == -INFINITY ? 0.f : exp2f(s_ml[w][0] - m); // warps without splits
            num += wt * s_acc[w][j];
            den += wt * s_ml[w][1];
        }
        if (col < v_dim)
            out[(long long)row * v_dim + col] = __float2bfloat16(num / den);
    }
    if (tr)
        tr[2] = vp_globaltimer();
}

// Warps per block: one split per warp (the shortest chain) while the grid stays resident in one wave;
// with many rows (batch, many heads) fewer warps, each merging more splits, so that no block waits for
// another to finish. A power of two.
int combine_warps(int splits, long long blocks)
{
    long long fit = COMBINE_RESIDENT_WARPS / (blocks > 0 ? blocks : 1);
    int nw = 1;
    while (nw * 2 <= COMBINE_WARPS && nw * 2 <= fit && nw < splits)
        nw *= 2;
    return nw;
}

} // namespace

int vp_attention_combine(bf16 *out, const float *part_o, const float *part_ml, int splits, int total_rows, int v_dim,
                         bool pdl, unsigned long long *trace, cudaStream_t stream)
{
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)total_rows, (unsigned)((v_dim + COMBINE_COLS - 1) / COMBINE_COLS));
    cfg.blockDim = dim3(32u * (unsigned)combine_warps(splits, (long long)cfg.gridDim.x * cfg.gridDim.y));
    cfg.dynamicSmemBytes = 0;
    cfg.stream = stream;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = pdl ? 1 : 0;
    if (cudaLaunchKernelEx(&cfg, attn_combine_kernel, out, part_o, part_ml, splits, total_rows, v_dim, trace) ==
        cudaSuccess)
        return 0;
    // Programmatic launch refused (an old driver): clear the launch error, launch in stream order.
    (void)cudaGetLastError();
    cfg.numAttrs = 0;
    VP_TRY(cudaLaunchKernelEx(&cfg, attn_combine_kernel, out, part_o, part_ml, splits, total_rows, v_dim, trace));
    return 0;
}
