// Merge of the flash-decoding splits (see vp_attention.cu): every split wrote, per query row, an
// unnormalised partial output O_s (fp32) and its running max m_s (log2 units) and sum l_s. Then
//   out[r][d] = sum_s w_s O_s[r][d] / sum_s w_s l_s,   w_s = 2^(m_s - max_s m_s).
// The partials were written just before by the attention kernel, so they are read back from L2; what
// costs here is latency (launch, then two dependent rounds of loads), which is why the kernel is
// launched as a programmatic dependent (its blocks are resident and waiting when the attention kernel
// ends) and why every block loads many splits at once.
#include "vp_attention.cuh"
#include "vp_mma.cuh"

#include <math.h>

namespace {

constexpr int COMBINE_WARPS = 8;
constexpr int COMBINE_THREADS = COMBINE_WARPS * 32;
constexpr int COMBINE_COLS = 64; // output columns per block: two per lane, coalesced

// grid = (total_rows, ceil(v_dim / 64)), block = 256.
// Dynamic shared memory: s_w [splits] | s_sum [8][64] | s_red [2][8] floats.
// Warp w accumulates splits w, w + 8, ... for the block's 64 columns; the 8 per-warp sums are then
// added through shared memory (once per block, not per split).
__global__ void __launch_bounds__(COMBINE_THREADS)
    attn_combine_kernel(bf16 *__restrict__ out, const float *__restrict__ part_o, const float *__restrict__ part_ml,
                        int splits, int total_rows, int v_dim, unsigned long long *trace)
{
    unsigned long long *tr = trace && threadIdx.x == 0 ? trace + 3 * (blockIdx.y * gridDim.x + blockIdx.x) : nullptr;
    if (tr)
        tr[0] = vp_globaltimer();
    extern __shared__ __align__(16) unsigned char smem[];
    float *s_w = reinterpret_cast<float *>(smem);
    float *s_sum = s_w + splits;
    float *s_red = s_sum + COMBINE_WARPS * COMBINE_COLS;
    const int row = blockIdx.x, col0 = blockIdx.y * COMBINE_COLS;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;

    vp_grid_dep_wait(); // the attention kernel has completed: its partials are visible
    if (tr)
        tr[1] = vp_globaltimer();

    // Global max of the splits' m, then the weights and the total sum l.
    const float *ml = part_ml + (long long)row * 2;
    const long long ml_stride = (long long)total_rows * 2;
    float m = -INFINITY;
    for (int s = threadIdx.x; s < splits; s += COMBINE_THREADS)
        m = fmaxf(m, ml[s * ml_stride]);
    m = vp_warp_max(m);
    if (lane == 0)
        s_red[warp] = m;
    __syncthreads();
    m = s_red[0];
    for (int w = 1; w < COMBINE_WARPS; w++)
        m = fmaxf(m, s_red[w]);
    float l = 0.0f;
    for (int s = threadIdx.x; s < splits; s += COMBINE_THREADS) {
        const float w = exp2f(ml[s * ml_stride] - m); // every split saw at least one key: m_s is finite
        s_w[s] = w;
        l += w * ml[s * ml_stride + 1];
    }
    l = vp_warp_sum(l);
    if (lane == 0)
        s_red[COMBINE_WARPS + warp] = l;
    __syncthreads(); // also publishes s_w
    l = 0.0f;
    for (int w = 0; w < COMBINE_WARPS; w++)
        l += s_red[COMBINE_WARPS + w];

    // Weighted sum over this warp's splits: columns col0 + lane and col0 + 32 + lane.
    const int c0 = col0 + lane, c1 = c0 + 32;
    const float *o = part_o + (long long)row * v_dim;
    const long long o_stride = (long long)total_rows * v_dim;
    float a0 = 0.0f, a1 = 0.0f;
#pragma unroll 8
    for (int s = warp; s < splits; s += COMBINE_WARPS) {
        const float w = s_w[s];
        const float *os = o + s * o_stride;
        if (c0 < v_dim)
            a0 += w * os[c0];
        if (c1 < v_dim)
            a1 += w * os[c1];
    }
    s_sum[warp * COMBINE_COLS + lane] = a0;
    s_sum[warp * COMBINE_COLS + 32 + lane] = a1;
    __syncthreads();
    const int c = col0 + threadIdx.x;
    if (threadIdx.x < COMBINE_COLS && c < v_dim) {
        float acc = 0.0f;
        for (int w = 0; w < COMBINE_WARPS; w++)
            acc += s_sum[w * COMBINE_COLS + threadIdx.x];
        out[(long long)row * v_dim + c] = __float2bfloat16(acc / l);
    }
    if (tr)
        tr[2] = vp_globaltimer();
}

} // namespace

int vp_attention_combine(bf16 *out, const float *part_o, const float *part_ml, int splits, int total_rows, int v_dim,
                         bool pdl, unsigned long long *trace, cudaStream_t stream)
{
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)total_rows, (unsigned)((v_dim + COMBINE_COLS - 1) / COMBINE_COLS));
    cfg.blockDim = dim3(COMBINE_THREADS);
    cfg.dynamicSmemBytes = ((size_t)splits + COMBINE_WARPS * COMBINE_COLS + 2 * COMBINE_WARPS) * sizeof(float);
    cfg.stream = stream;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = pdl ? 1 : 0;
    if (cudaLaunchKernelEx(&cfg, attn_combine_kernel, out, part_o, part_ml, splits, total_rows, v_dim, trace) == cudaSuccess)
        return 0;
    // Programmatic launch refused (an old driver): clear the launch error, launch in stream order.
    (void)cudaGetLastError();
    cfg.numAttrs = 0;
    VP_TRY(cudaLaunchKernelEx(&cfg, attn_combine_kernel, out, part_o, part_ml, splits, total_rows, v_dim, trace));
    return 0;
}
