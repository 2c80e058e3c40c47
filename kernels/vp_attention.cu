// Decode attention over a KV cache: flash-decoding on bf16 tensor cores (mma.sync m16n8k16, fp32
// accumulation), for MLA (one latent per token read as both key and value) and GQA/MHA.
//
// Work decomposition (shapes as in vp_kernels.h; G = heads / kv_heads, R = q_len * G):
//   The R query rows that share one KV head form Q_g [R][qk_dim]; the group's attention is
//   softmax(Q_g K^T * scale) V. A block owns (batch b, kv head h, a slice of kv_len = one split, up to
//   rows_blk of the R rows, up to dv16_blk * 16 value columns). It streams its slice of K (and V)
//   through shared memory, tn keys per tile, STAGES tiles in flight (cp.async), and computes every
//   row of the group from the same tile: the cache is read from DRAM once per group, which is what
//   makes this a realistic memory-bound decode kernel (MLA at q_len 3: 24 rows share each 1152-byte
//   latent row). Online softmax per row (running max m and sum l, in log2 units); the output
//   accumulators live in mma fragments in registers. Each block writes an unnormalised fp32 partial
//   output and (m, l) to the workspace; attn_combine_kernel merges the splits. With one split the main
//   kernel normalises and writes bf16 itself.
//
// Shared memory per block (bf16 rows padded by 8 elements = 16 bytes, so that the 8 row addresses of
// an ldmatrix phase hit distinct banks):
//   sQ [rows_blk][dkp + 8]           dkp = qk_dim rounded up to 16, zero padded
//   sK [STAGES][tn][dkp + 8]
//   sV [STAGES][tn][dv_w + 8]        only without v_in_k (MLA reads its values from sK)
//   sP [rows_blk][tn + 8]            probabilities of the tile, bf16: the A operand of P.V
//   sS [ksplit][rows_blk][tn] fp32   scores (partial sums when two warps split qk_dim)
//   sM, sL, sAlpha [rows_blk] fp32   running max, running sum, this tile's rescale factor
// MLA (qk 576, q_len 3 -> rows_blk 32, tn 16): 37.4 KB + STAGES * 18.7 KB + 6 KB: 3 stages = 99.4 KB
// fit sm_120's 99 KB; an H200 (227 KB) takes 4 stages, or 64 rows (q_len 8) in one block.
// The configuration is the first of (fewest value-column blocks, most rows per block, largest tile,
// most stages up to 4) that fits the shared-memory budget.
#include "vp_kernels.h"
#include "vp_mma.cuh"

#include <math.h>
#include <stdio.h>

namespace {

constexpr int NWARPS = 16;
constexpr int NTHREADS = NWARPS * 32;
constexpr int PAIRS = 8;               // accumulators per warp: (16-row tile, 16-column value tile) pairs
constexpr int PAD = 8;                 // bf16 padding per shared-memory row (16 bytes)
constexpr int MIN_TILES_PER_SPLIT = 4; // shorter splits are dominated by their prologue and partial write
constexpr int MAX_SPLITS = 1024;       // bounds the combine kernel's shared weights (4 KB)
constexpr int COMBINE_THREADS = 128;

struct AttnPlan {
    int tn, stages;             // keys per tile (16 or 32), tiles in flight (2..4)
    int rt, rows_blk;           // 16-row tiles per block, rows per block
    int row_chunks;             // blocks along R
    int ct;                     // 16-column value tiles per warp
    int dv16_blk, dv_chunks;    // value tiles per block (NWARPS * ct), blocks along v_dim
    int dv_w;                   // value columns a block holds: min(dv16_blk, ceil(v_dim / 16)) * 16
    int dkp;                    // qk_dim rounded up to 16
    int ksplit;                 // warps sharing one score tile, each summing part of qk_dim (1 or 2)
    int splits, keys_per_split; // the split of kv_len
    size_t smem, workspace;
    size_t off_k, off_v, off_p, off_s, off_m; // byte offsets into dynamic shared memory
};

struct AttnParams {
    const bf16 *q, *k, *v;
    bf16 *out;
    float *part_o;  // [splits][batch * q_len * heads][v_dim]
    float *part_ml; // [splits][batch * q_len * heads][2] = (m, l), m in log2 units
    int q_len, kv_len, heads, kv_heads, qk_dim, v_dim, v_in_k, group, rows, total_rows;
    float scale_log2; // scale * log2(e): the softmax runs on exp2
    int vec;          // 16-byte global loads are legal (dims multiple of 8, pointers aligned)
    AttnPlan pl;
};

// ---------------------------------------------------------------------------------- main kernel
// grid = (row_chunks * dv_chunks, splits, batch * kv_heads), block = NTHREADS, dynamic smem = pl.smem.
template <int TN, int STAGES>
__global__ void __launch_bounds__(NTHREADS, 1) attn_decode_kernel(const AttnParams p)
{
    extern __shared__ __align__(16) unsigned char smem[];
    const AttnPlan &pl = p.pl;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int row_chunk = blockIdx.x % pl.row_chunks, dv_chunk = blockIdx.x / pl.row_chunks;
    const int split = blockIdx.y, b = blockIdx.z / p.kv_heads, kvh = blockIdx.z % p.kv_heads;

    const int ldq = pl.dkp + PAD, ldp = TN + PAD;
    const int dv16 = min(pl.dv16_blk, (p.v_dim + 15) / 16 - dv_chunk * pl.dv16_blk); // value tiles here
    const int dv_col0 = dv_chunk * pl.dv16_blk * 16;                                // first value column
    const int dv_cols = min(p.v_dim - dv_col0, pl.dv16_blk * 16);                   // real value columns
    const int ldv = p.v_in_k ? ldq : pl.dv_w + PAD;

    bf16 *sQ = reinterpret_cast<bf16 *>(smem);
    bf16 *sK = reinterpret_cast<bf16 *>(smem + pl.off_k);
    bf16 *sV = reinterpret_cast<bf16 *>(smem + pl.off_v);
    bf16 *sP = reinterpret_cast<bf16 *>(smem + pl.off_p);
    float *sS = reinterpret_cast<float *>(smem + pl.off_s);
    float *sM = reinterpret_cast<float *>(smem + pl.off_m), *sL = sM + pl.rows_blk, *sAlpha = sL + pl.rows_blk;

    // Block row rb is group row gr: query position gr / G, head kvh * G + gr % G.
    auto global_row = [&](int rb) {
        const int gr = row_chunk * pl.rows_blk + rb;
        return ((long long)b * p.q_len + gr / p.group) * p.heads + (long long)kvh * p.group + gr % p.group;
    };
    auto row_valid = [&](int rb) { return row_chunk * pl.rows_blk + rb < p.rows; };

    // ---- prologue: Q (asynchronously, in the first tile's group; rows past R are zero), zero padding
    // columns of sQ and of every K/V stage, row state.
    if (p.vec) {
        const int cpr = p.qk_dim / 8;
        for (int i = threadIdx.x; i < pl.rows_blk * cpr; i += NTHREADS) {
            const int rb = i / cpr, c = (i % cpr) * 8;
            const bool ok = row_valid(rb);
            vp_cp_async16(sQ + rb * ldq + c, ok ? p.q + global_row(rb) * p.qk_dim + c : p.q, ok ? 16 : 0);
        }
    } else {
        for (int i = threadIdx.x; i < pl.rows_blk * p.qk_dim; i += NTHREADS) {
            const int rb = i / p.qk_dim, c = i % p.qk_dim;
            sQ[rb * ldq + c] = row_valid(rb) ? p.q[global_row(rb) * p.qk_dim + c] : __float2bfloat16(0.0f);
        }
    }
    const int padk = pl.dkp - p.qk_dim;
    for (int i = threadIdx.x; i < (pl.rows_blk + STAGES * TN) * padk; i += NTHREADS) {
        const int r = i / padk, c = p.qk_dim + i % padk; // the rows of sQ, then those of every sK stage
        (r < pl.rows_blk ? sQ + r * ldq : sK + (r - pl.rows_blk) * ldq)[c] = __float2bfloat16(0.0f);
    }
    if (!p.v_in_k) {
        const int padv = pl.dv_w - dv_cols;
        for (int i = threadIdx.x; i < STAGES * TN * padv; i += NTHREADS)
            sV[(i / padv) * ldv + dv_cols + i % padv] = __float2bfloat16(0.0f);
    }
    for (int rb = threadIdx.x; rb < pl.rows_blk; rb += NTHREADS) {
        sM[rb] = -INFINITY;
        sL[rb] = 0.0f;
    }

    const int key_lo = split * pl.keys_per_split, key_hi = min(p.kv_len, key_lo + pl.keys_per_split);
    const int ntiles = (key_hi - key_lo + TN - 1) / TN;
    const long long kstride = (long long)p.kv_heads * p.qk_dim, vstride = (long long)p.kv_heads * p.v_dim;
    const bf16 *gK = p.k + ((long long)b * p.kv_len * p.kv_heads + kvh) * p.qk_dim;
    const bf16 *gV = p.v_in_k ? nullptr : p.v + ((long long)b * p.kv_len * p.kv_heads + kvh) * p.v_dim + dv_col0;
    auto load_tile = [&](int tile) {
        const int key0 = key_lo + tile * TN, stage = tile % STAGES, valid = min(TN, key_hi - key0);
        vp_load_rows<NTHREADS>(sK + stage * TN * ldq, ldq, gK + key0 * kstride, kstride, TN, valid, p.qk_dim, p.vec);
        if (!p.v_in_k)
            vp_load_rows<NTHREADS>(sV + stage * TN * ldv, ldv, gV + key0 * vstride, vstride, TN, valid, dv_cols, p.vec);
    };

    // Accumulator pair i: row tile i / ct, value tile warp + NWARPS * (i % ct); two n8 halves each.
    float acc[PAIRS][2][4];
#pragma unroll
    for (int i = 0; i < PAIRS; i++)
#pragma unroll
        for (int h = 0; h < 2; h++)
#pragma unroll
            for (int j = 0; j < 4; j++)
                acc[i][h][j] = 0.0f;
    const int npairs = pl.rt * pl.ct;

    // Pipeline: group s holds tile s (group 0 also Q). At the top of iteration `tile`, tile + STAGES - 1
    // groups are committed, so waiting until STAGES - 2 remain means tile `tile` has landed.
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < ntiles)
            load_tile(s);
        vp_cp_async_commit();
    }
    for (int tile = 0; tile < ntiles; tile++) {
        vp_cp_async_wait<STAGES - 2>();
        __syncthreads(); // tile visible to all; everyone is done with iteration tile - 1
        if (tile + STAGES - 1 < ntiles)
            load_tile(tile + STAGES - 1); // into the stage that iteration tile - 1 read
        vp_cp_async_commit();             // possibly empty: keeps the group count in step
        const bf16 *sKs = sK + (tile % STAGES) * TN * ldq;
        const bf16 *sVs = p.v_in_k ? sKs + dv_col0 : sV + (tile % STAGES) * TN * ldv;
        const int key0 = key_lo + tile * TN;

        // ---- S = Q K^T in 16x8 tiles; two accumulators halve the dependent mma chain.
        {
            const int ntile = pl.rt * (TN / 8), ksteps = pl.dkp / 16;
            for (int w = warp; w < ntile * pl.ksplit; w += NWARPS) {
                const int ts = w % ntile, part = w / ntile;
                const int r0 = (ts / (TN / 8)) * 16, n0 = (ts % (TN / 8)) * 8;
                const int k_lo = part * ksteps / pl.ksplit, k_hi = (part + 1) * ksteps / pl.ksplit;
                auto step = [&](float c[4], int ks) {
                    uint32_t a[4], bb[2];
                    vp_ldmatrix_x4(a, sQ + (r0 + (lane & 15)) * ldq + ks * 16 + (lane >> 4) * 8);
                    vp_ldmatrix_x2(bb, sKs + (n0 + (lane & 7)) * ldq + ks * 16 + ((lane >> 3) & 1) * 8);
                    vp_mma_16816(c, a, bb[0], bb[1]);
                };
                float c0[4] = {0.0f, 0.0f, 0.0f, 0.0f}, c1[4] = {0.0f, 0.0f, 0.0f, 0.0f};
                int ks = k_lo;
                for (; ks + 1 < k_hi; ks += 2) {
                    step(c0, ks);
                    step(c1, ks + 1);
                }
                if (ks < k_hi)
                    step(c0, ks);
                float *s = sS + part * pl.rows_blk * TN;
                *reinterpret_cast<float2 *>(s + (r0 + g) * TN + n0 + 2 * t) = make_float2(c0[0] + c1[0], c0[1] + c1[1]);
                *reinterpret_cast<float2 *>(s + (r0 + g + 8) * TN + n0 + 2 * t) = make_float2(c0[2] + c1[2], c0[3] + c1[3]);
            }
        }
        __syncthreads();

        // ---- online softmax: 32 / TN rows per warp pass, one lane per key.
        {
            constexpr int RPW = 32 / TN;
            const int sub = lane / TN, key = lane % TN;
            for (int base = warp * RPW; base < pl.rows_blk; base += NWARPS * RPW) {
                const int rb = base + sub; // rows_blk is a multiple of 16, so rb < rows_blk
                float s = -INFINITY;
                if (key0 + key < key_hi) {
                    float dot = sS[rb * TN + key];
                    if (pl.ksplit == 2)
                        dot += sS[(pl.rows_blk + rb) * TN + key];
                    s = dot * p.scale_log2;
                }
                const float m_old = sM[rb], m_new = fmaxf(m_old, vp_seg_max<TN>(s)); // finite: a key is valid
                // p is rounded to bf16 before summing, so numerator (P.V on bf16 P) and denominator agree.
                const bf16 pb = __float2bfloat16(s == -INFINITY ? 0.0f : exp2f(s - m_new));
                const float psum = vp_seg_sum<TN>(__bfloat162float(pb));
                sP[rb * ldp + key] = pb;
                if (key == 0) {
                    const float alpha = exp2f(m_old - m_new); // 0 on the first tile (m_old = -inf)
                    sAlpha[rb] = alpha;
                    sM[rb] = m_new;
                    sL[rb] = sL[rb] * alpha + psum;
                }
            }
        }
        __syncthreads();

        // ---- O = O * alpha + P V: each warp owns its value tiles, for every row tile.
#pragma unroll
        for (int i = 0; i < PAIRS; i++) {
            if (i < npairs) {
                const int r0 = (i / pl.ct) * 16;
                const float lo = sAlpha[r0 + g], hi = sAlpha[r0 + g + 8];
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    acc[i][h][0] *= lo;
                    acc[i][h][1] *= lo;
                    acc[i][h][2] *= hi;
                    acc[i][h][3] *= hi;
                }
            }
        }
#pragma unroll
        for (int kk = 0; kk < TN / 16; kk++) {
#pragma unroll
            for (int i = 0; i < PAIRS; i++) {
                const int r0 = (i / pl.ct) * 16, j = warp + NWARPS * (i % pl.ct);
                if (i < npairs && j < dv16) {
                    uint32_t a[4], bb[4];
                    vp_ldmatrix_x4(a, sP + (r0 + (lane & 15)) * ldp + kk * 16 + (lane >> 4) * 8);
                    vp_ldmatrix_x4_trans(bb, sVs + (kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * ldv + j * 16 +
                                                 (lane >> 4) * 8);
                    vp_mma_16816(acc[i][0], a, bb[0], bb[1]);
                    vp_mma_16816(acc[i][1], a, bb[2], bb[3]);
                }
            }
        }
        // No barrier here: the next iteration's first __syncthreads orders these reads of sP, sAlpha
        // and the stage before anything overwrites them.
    }
    __syncthreads(); // sL of the last tile, for every warp's epilogue

    // ---- epilogue: normalised bf16 output (single split) or fp32 partials for the combine kernel.
    const bool direct = pl.splits == 1, pairs_ok = p.v_dim % 2 == 0; // element pairs stay aligned
#pragma unroll
    for (int i = 0; i < PAIRS; i++) {
        const int r0 = (i / pl.ct) * 16, j = warp + NWARPS * (i % pl.ct);
        if (i >= npairs || j >= dv16)
            continue;
#pragma unroll
        for (int half = 0; half < 2; half++) {
            const int rb = r0 + g + half * 8;
            if (!row_valid(rb))
                continue;
            const long long grow = global_row(rb);
            const float inv_l = 1.0f / sL[rb];
            bf16 *out_row = p.out + grow * p.v_dim;
            float *part_row = p.part_o + ((long long)split * p.total_rows + grow) * p.v_dim;
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int col = dv_col0 + j * 16 + h * 8 + 2 * t;
                const float v0 = acc[i][h][half * 2], v1 = acc[i][h][half * 2 + 1];
                if (pairs_ok && col + 1 < p.v_dim) {
                    if (direct)
                        *reinterpret_cast<__nv_bfloat162 *>(out_row + col) = __floats2bfloat162_rn(v0 * inv_l, v1 * inv_l);
                    else
                        *reinterpret_cast<float2 *>(part_row + col) = make_float2(v0, v1);
                } else {
                    for (int e = 0; e < 2 && col + e < p.v_dim; e++) {
                        if (direct)
                            out_row[col + e] = __float2bfloat16((e ? v1 : v0) * inv_l);
                        else
                            part_row[col + e] = e ? v1 : v0;
                    }
                }
            }
        }
    }
    if (!direct && dv_chunk == 0) {
        for (int rb = threadIdx.x; rb < pl.rows_blk; rb += NTHREADS) {
            if (row_valid(rb)) {
                float *ml = p.part_ml + ((long long)split * p.total_rows + global_row(rb)) * 2;
                ml[0] = sM[rb];
                ml[1] = sL[rb];
            }
        }
    }
}

// ------------------------------------------------------------------------------- combine kernel
// out[row][d] = sum_s w_s O_s[row][d] / sum_s w_s l_s, with w_s = 2^(m_s - max_s m_s).
// grid = (batch * q_len * heads, ceil(v_dim / 128)), block = 128, dynamic smem = splits floats.
// The partials were written just before, so they are mostly read back from L2.
__global__ void __launch_bounds__(COMBINE_THREADS)
    attn_combine_kernel(bf16 *__restrict__ out, const float *__restrict__ part_o, const float *__restrict__ part_ml,
                        int splits, int total_rows, int v_dim)
{
    extern __shared__ float s_w[];
    __shared__ float scratch[32];
    const int row = blockIdx.x;
    float m = -INFINITY;
    for (int s = threadIdx.x; s < splits; s += blockDim.x)
        m = fmaxf(m, part_ml[((long long)s * total_rows + row) * 2]);
    m = vp_block_max(m, scratch);
    float l = 0.0f;
    for (int s = threadIdx.x; s < splits; s += blockDim.x) {
        const float *ml = part_ml + ((long long)s * total_rows + row) * 2;
        const float w = exp2f(ml[0] - m);
        s_w[s] = w;
        l += w * ml[1];
    }
    l = vp_block_sum(l, scratch); // its barriers also publish s_w
    const int d = blockIdx.y * blockDim.x + threadIdx.x;
    if (d >= v_dim)
        return;
    const float *o = part_o + (long long)row * v_dim + d;
    const long long split_stride = (long long)total_rows * v_dim;
    float acc = 0.0f;
#pragma unroll 4
    for (int s = 0; s < splits; s++)
        acc += s_w[s] * o[s * split_stride];
    out[(long long)row * v_dim + d] = __float2bfloat16(acc / l);
}


// ----------------------------------------------------------------------------------- host side

size_t g_smem_budget = 0;                // vp_attention_set_smem_budget(); 0 = the device's opt-in limit
int g_force_stages = 0, g_force_splits = 0; // vp_attention_set_tuning(); 0 = automatic

typedef void (*AttnKernel)(AttnParams);

AttnKernel kernel_for(int tn, int stages)
{
    if (tn == 16)
        return stages == 2 ? attn_decode_kernel<16, 2> : stages == 3 ? attn_decode_kernel<16, 3> : attn_decode_kernel<16, 4>;
    return stages == 2 ? attn_decode_kernel<32, 2> : stages == 3 ? attn_decode_kernel<32, 3> : attn_decode_kernel<32, 4>;
}

// Opt a kernel in to more than 48 KB of dynamic shared memory, once per device and size.
int ensure_smem(int tn, int stages, size_t bytes)
{
    static size_t set_for[2][3][64];
    int dev;
    VP_TRY(cudaGetDevice(&dev));
    size_t *done = dev < 64 ? &set_for[tn / 16 - 1][stages - 2][dev] : nullptr;
    if (bytes <= 48 * 1024 || (done && *done >= bytes))
        return 0;
    VP_TRY(cudaFuncSetAttribute(kernel_for(tn, stages), cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
    if (done)
        *done = bytes;
    return 0;
}

size_t align_up(size_t x, size_t a)
{
    return (x + a - 1) / a * a;
}

long long ceil_div(long long a, long long b)
{
    return (a + b - 1) / b;
}

// Shared-memory layout of a candidate (tn, stages, rt, ct); fills the offsets and pl->smem.
void layout(AttnPlan *pl, int v_in_k)
{
    const size_t ldq = (size_t)pl->dkp + PAD, ldv = (size_t)pl->dv_w + PAD;
    const int ntile = pl->rt * (pl->tn / 8);
    pl->ksplit = 2 * ntile <= NWARPS ? 2 : 1;
    size_t off = align_up((size_t)pl->rows_blk * ldq * 2, 128);
    pl->off_k = off;
    off = align_up(off + (size_t)pl->stages * pl->tn * ldq * 2, 128);
    pl->off_v = off;
    if (!v_in_k)
        off = align_up(off + (size_t)pl->stages * pl->tn * ldv * 2, 128);
    pl->off_p = off;
    off = align_up(off + (size_t)pl->rows_blk * (pl->tn + PAD) * 2, 128);
    pl->off_s = off;
    off = align_up(off + (size_t)pl->ksplit * pl->rows_blk * pl->tn * 4, 128);
    pl->off_m = off;
    pl->smem = off + 3 * (size_t)pl->rows_blk * 4;
}

int make_plan(const vp_attn_args *a, AttnPlan *pl)
{
    if (!a || a->batch < 1 || a->q_len < 1 || a->kv_len < 0 || a->heads < 1 || a->kv_heads < 1 ||
        a->heads % a->kv_heads != 0 || a->qk_dim < 1 || a->v_dim < 1 || (a->v_in_k && a->v_dim > a->qk_dim) ||
        (long long)a->batch * a->kv_heads > 65535 || (long long)a->q_len * a->heads > (1 << 24) ||
        (long long)a->batch * a->q_len * a->heads > 0x7fffffffLL || !isfinite(a->scale))
        return (int)cudaErrorInvalidValue;
    // Device limits, cached: after the first call (the workspace query) a launch makes no device
    // queries, which keeps it cheap and safe inside a stream capture.
    static int cached_sms[64], cached_optin[64];
    int dev, sms, optin;
    VP_TRY(cudaGetDevice(&dev));
    if (dev < 64 && cached_sms[dev]) {
        sms = cached_sms[dev];
        optin = cached_optin[dev];
    } else {
        VP_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
        VP_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
        if (dev < 64) {
            cached_sms[dev] = sms;
            cached_optin[dev] = optin;
        }
    }
    const size_t budget = g_smem_budget && g_smem_budget < (size_t)optin ? g_smem_budget : (size_t)optin;

    *pl = AttnPlan{};
    pl->dkp = (int)ceil_div(a->qk_dim, 16) * 16;
    const int dv16_total = (int)ceil_div(a->v_dim, 16);
    const int rows = a->q_len * (a->heads / a->kv_heads);
    const int ct_max = (int)(ceil_div(dv16_total, NWARPS) < PAIRS ? ceil_div(dv16_total, NWARPS) : PAIRS);
    const int st_hi = g_force_stages ? g_force_stages : 4, st_lo = g_force_stages ? g_force_stages : 2;
    bool fits = false;
    for (int ct = ct_max; ct >= 1 && !fits; ct--) {
        const int rt_want = (int)(ceil_div(rows, 16) < PAIRS / ct ? ceil_div(rows, 16) : PAIRS / ct);
        for (int rt = rt_want; rt >= 1 && !fits; rt--) {
            for (int tn = pl->dkp <= 256 ? 32 : 16; tn >= 16 && !fits; tn -= 16) {
                for (int st = st_hi; st >= st_lo && !fits; st--) {
                    pl->ct = ct;
                    pl->dv16_blk = NWARPS * ct;
                    pl->dv_w = 16 * (pl->dv16_blk < dv16_total ? pl->dv16_blk : dv16_total);
                    pl->rt = rt;
                    pl->rows_blk = 16 * rt;
                    pl->tn = tn;
                    pl->stages = st;
                    layout(pl, a->v_in_k);
                    fits = pl->smem <= budget;
                }
            }
        }
    }
    if (!fits)
        return (int)cudaErrorInvalidValue; // qk_dim (or v_dim) too large for this device's shared memory
    pl->dv_chunks = (int)ceil_div(dv16_total, pl->dv16_blk);
    pl->row_chunks = (int)ceil_div(rows, pl->rows_blk);
    VP_TRY((cudaError_t)ensure_smem(pl->tn, pl->stages, pl->smem));
    if (a->kv_len == 0)
        return 0; // splits = 0: nothing to launch

    // One block per SM in total (the partials cost traffic, so no more splits than fill the GPU once),
    // and a split reads at least MIN_TILES_PER_SPLIT tiles and at least as many cache bytes as it
    // writes partials.
    const long long other = (long long)a->batch * a->kv_heads * pl->row_chunks * pl->dv_chunks;
    const long long cache_per_key = 2LL * (a->qk_dim + (a->v_in_k ? 0 : a->v_dim));
    const long long partial = (long long)rows * (a->v_dim + 2) * 4;
    long long min_keys = ceil_div(partial, cache_per_key);
    min_keys = min_keys > (long long)pl->tn * MIN_TILES_PER_SPLIT ? min_keys : (long long)pl->tn * MIN_TILES_PER_SPLIT;
    long long splits = ceil_div(sms, other);
    splits = splits < ceil_div(a->kv_len, min_keys) ? splits : ceil_div(a->kv_len, min_keys);
    if (g_force_splits)
        splits = g_force_splits;
    splits = splits > MAX_SPLITS ? MAX_SPLITS : splits < 1 ? 1 : splits;
    pl->keys_per_split = (int)(ceil_div(ceil_div(a->kv_len, splits), pl->tn) * pl->tn);
    pl->splits = (int)ceil_div(a->kv_len, pl->keys_per_split);
    if (pl->splits > 1)
        pl->workspace = (size_t)pl->splits * a->batch * a->q_len * a->heads * ((size_t)a->v_dim + 2) * sizeof(float);
    return 0;
}

} // namespace

extern "C" size_t vp_attention_workspace_bytes(const vp_attn_args *a)
{
    // make_plan also opts the kernel in to its shared memory, so a graph capture that follows makes no
    // attribute calls.
    AttnPlan pl;
    if (make_plan(a, &pl) != 0)
        return 0;
    return pl.workspace;
}

extern "C" void vp_attention_set_smem_budget(size_t bytes)
{
    g_smem_budget = bytes;
}

extern "C" int vp_attention_set_tuning(int stages, int splits)
{
    if ((stages != 0 && (stages < 2 || stages > 4)) || splits < 0 || splits > MAX_SPLITS)
        return (int)cudaErrorInvalidValue;
    g_force_stages = stages;
    g_force_splits = splits;
    return 0;
}

extern "C" int vp_attention_describe(const vp_attn_args *a, char *buf, size_t len)
{
    AttnPlan pl;
    VP_TRY((cudaError_t)make_plan(a, &pl));
    if (buf && len)
        snprintf(buf, len, "splits=%d,keys_per_split=%d,tn=%d,stages=%d,rows_blk=%d,row_chunks=%d,dv_chunks=%d,smem=%zu,ws=%zu",
                 pl.splits, pl.keys_per_split, pl.tn, pl.stages, pl.rows_blk, pl.row_chunks, pl.dv_chunks, pl.smem,
                 pl.workspace);
    return 0;
}

extern "C" int vp_attention_decode(const vp_attn_args *a, void *stream)
{
    AttnPlan pl;
    VP_TRY((cudaError_t)make_plan(a, &pl));
    cudaStream_t s = (cudaStream_t)stream;
    const long long total_rows = (long long)a->batch * a->q_len * a->heads;
    if (!a->out || (a->kv_len > 0 && (!a->q || !a->k || (!a->v_in_k && !a->v) || (pl.splits > 1 && !a->workspace))))
        return (int)cudaErrorInvalidValue;
    if (a->kv_len == 0) // softmax over no keys: defined here as a zero output
        return (int)cudaMemsetAsync(a->out, 0, (size_t)total_rows * a->v_dim * 2, s);

    AttnParams p;
    p.q = (const bf16 *)a->q;
    p.k = (const bf16 *)a->k;
    p.v = (const bf16 *)a->v;
    p.out = (bf16 *)a->out;
    p.part_o = (float *)a->workspace;
    p.part_ml = p.part_o + (size_t)pl.splits * total_rows * a->v_dim;
    p.q_len = a->q_len;
    p.kv_len = a->kv_len;
    p.heads = a->heads;
    p.kv_heads = a->kv_heads;
    p.qk_dim = a->qk_dim;
    p.v_dim = a->v_dim;
    p.v_in_k = a->v_in_k != 0;
    p.group = a->heads / a->kv_heads;
    p.rows = a->q_len * p.group;
    p.total_rows = (int)total_rows;
    p.scale_log2 = a->scale * 1.4426950408889634f;
    p.vec = a->qk_dim % 8 == 0 && vp_aligned16(a->q) && vp_aligned16(a->k) &&
            (p.v_in_k || (a->v_dim % 8 == 0 && vp_aligned16(a->v)));
    p.pl = pl;

    const dim3 grid(pl.row_chunks * pl.dv_chunks, pl.splits, a->batch * a->kv_heads);
    kernel_for(pl.tn, pl.stages)<<<grid, NTHREADS, pl.smem, s>>>(p);
    VP_TRY(cudaGetLastError());
    if (pl.splits > 1) {
        const dim3 cgrid((unsigned)total_rows, (unsigned)ceil_div(a->v_dim, COMBINE_THREADS));
        attn_combine_kernel<<<cgrid, COMBINE_THREADS, pl.splits * sizeof(float), s>>>(p.out, p.part_o, p.part_ml,
                                                                                        pl.splits, p.total_rows, a->v_dim);
        VP_TRY(cudaGetLastError());
    }
    return 0;
}
