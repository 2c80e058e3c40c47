// Decode attention, the MLA kernel: latent MLA (qk_dim 576, values the first v_dim <= 512 columns of
// the same rows), row chunks of up to 24 query rows. The work decomposition and the epilogue are the
// general kernel's (vp_attention_tiles.cuh). What differs is how the keys stream through the block.
//
// Why (docs/attention-kernel.md, measured on an H200 on 2026-12-02):
// - At long context the general kernel's block waits for data: a 64-key tile takes 6,749 cycles where
//   its compute takes ~4,700. Its two 74 KB stages are all that fit beside the 28 KB of query rows, so
//   only one tile is in flight while the block computes, and one tile's latency plus transfer is 3.7 us.
// - This kernel keeps three tiles of 64 keys in flight:
//   - The query rows are read once into the mma B fragments, 18 k-steps per warp: 108 registers.
//   - They are staged at first in the third stage's buffer, which the third tile fills once every warp
//     has its fragments.
//   - The stage rows are unpadded (3 x 72 KB fit beside the softmax's 10 KB), and their 16-byte chunks
//     are XOR-swizzled by row (chunk c of row r at c ^ (r % 8)), so that the 8 row addresses of an
//     ldmatrix phase still hit distinct banks.
// - The scores and the softmax stay in registers:
//   - The owner of each key tile (share 0) adds its partner's share (lane-contiguous 16-byte slots).
//   - It takes the row maxima over its 16 keys with a 3-level shuffle, and the warps exchange only
//     those.
//   - Each thread keeps (m, alpha) of the rows its fragments hold; the row sums stay with the owners
//     until the epilogue.
//
// Per 64-key tile (4 key tiles of 16 x 2 shares of qk_dim over 8 warps), 4 block barriers:
//   wait for the tile -> S^T (registers) -> shares exchanged -> maxima exchanged -> P^T and alpha ->
//   P.V -> the stage refilled with tile + 3.
// cp.async groups: G0 = {Q, tile 0}, G1 = {tile 1}, then G2 = {tile 2} once Q is in registers, then one
// group per refill; tile t waits until at most 1 (t = 0) or 2 groups remain in flight.
#include "vp_attention_tiles.cuh"

namespace {

constexpr int DIM = VP_ATTN_MLA_DIM;
constexpr int CHUNKS = DIM / 8; // 16-byte chunks per latent row
constexpr int STAGES = VP_ATTN_MLA_STAGES;
constexpr int TN = 64;
constexpr int KTILES = TN / 16;         // key tiles per tile
constexpr int KSTEPS = DIM / 16 / 2;    // k-steps per share (2 shares of qk_dim)
static_assert(CHUNKS % 8 == 0, "the swizzle permutes chunks within groups of 8");
static_assert(NWARPS == 2 * KTILES, "one warp per (key tile, share of qk_dim)");

// Element offset of chunk c of stage row r (the swizzle above).
__device__ __forceinline__ int swz(int r, int c)
{
    return r * DIM + ((c ^ (r & 7)) << 3);
}

// Keys [key0, key0 + 64) of this split into stage buffer dst (rows past the split's end zero-filled).
__device__ __forceinline__ void load_tile_swz(const Block &k, bf16 *dst, int tile)
{
    const int key0 = k.key_lo + tile * TN, valid = min(TN, k.key_hi - key0);
    const bf16 *src = k.gK + key0 * k.kstride;
#pragma unroll 1
    for (int r = k.warp; r < TN; r += NWARPS) {
        const bool ok = r < valid;
        const bf16 *s = ok ? src + r * k.kstride : src;
#pragma unroll
        for (int c = k.lane; c < CHUNKS; c += 32)
            vp_cp_async16(dst + swz(r, c), s + c * 8, ok ? 16 : 0);
    }
}

// This warp's B fragments of the query rows for its share of qk_dim (from sQ, padded rows).
template <int NT>
__device__ __forceinline__ void load_q_frags(const Block &k, const Warp &w, uint32_t (&qf)[KSTEPS][NT][2])
{
    const int ldk = k.ldk;
#pragma unroll
    for (int i = 0; i < KSTEPS; i++) {
        const int ks = w.ks_lo + i;
#pragma unroll
        for (int n = 0; n + 1 < NT; n += 2) {
            uint32_t r4[4];
            vp_ldmatrix_x4(r4, w.q_frag + n * 8 * ldk + ks * 16);
            qf[i][n][0] = r4[0], qf[i][n][1] = r4[1], qf[i][n + 1][0] = r4[2], qf[i][n + 1][1] = r4[3];
        }
        if (NT % 2)
            vp_ldmatrix_x2(qf[i][NT - 1], w.q_frag + (NT - 1) * 8 * ldk + ks * 16);
    }
}

// S^T partial sums of this warp's key tile over its share (C fragments: keys g | g + 8, rows 2t, 2t + 1).
template <int NT>
__device__ __forceinline__ void scores(const Block &k, const Warp &w, const bf16 *sKs, const uint32_t (&qf)[KSTEPS][NT][2],
                                       float (&out)[NT][4])
{
    const int row = w.my_kt * 16 + (k.lane & 15), half = k.lane >> 4;
    float c[2][NT][4]; // two accumulator sets: the dependent chain is half the k-steps
    zero_tiles(c);
#pragma unroll
    for (int i = 0; i < KSTEPS; i++) {
        uint32_t a[4];
        vp_ldmatrix_x4(a, sKs + swz(row, 2 * (w.ks_lo + i) + half));
#pragma unroll
        for (int n = 0; n < NT; n++)
            vp_mma_16816(c[i & 1][n], a, qf[i][n][0], qf[i][n][1]);
    }
#pragma unroll
    for (int n = 0; n < NT; n++)
#pragma unroll
        for (int j = 0; j < 4; j++)
            out[n][j] = c[0][n][j] + c[1][n][j];
}

__device__ __forceinline__ float4 *share_slot(const Block &k, int kt, int n, int nt)
{
    return reinterpret_cast<float4 *>(k.sS) + (kt * nt + n) * 32 + k.lane;
}

// The shares added, the maxima exchanged, P^T written and the owners' row sums updated (three block
// barriers, the last before P.V). m_run: running max of rows (2t, 2t + 1) of each row tile (log2 units);
// l_run: the owner's row sums over its keys; al: alpha of those rows for P.V.
template <int NT>
__device__ __forceinline__ void softmax(const AttnParams &p, const Block &k, const Warp &w, int valid,
                                        float (&s)[NT][4], float (&m_run)[NT][2], float (&l_run)[NT][2],
                                        float2 (&al)[NT])
{
    const int kt = w.my_kt, owner = k.warp < KTILES, ldp = k.ldp;
    if (!owner) {
#pragma unroll
        for (int n = 0; n < NT; n++)
            *share_slot(k, kt, n, NT) = make_float4(s[n][0], s[n][1], s[n][2], s[n][3]);
    }
    __syncthreads();
    if (owner) {
#pragma unroll
        for (int n = 0; n < NT; n++) {
            const float4 v = *share_slot(k, kt, n, NT);
            s[n][0] += v.x, s[n][1] += v.y, s[n][2] += v.z, s[n][3] += v.w;
        }
        // A key past the split gets -inf, so P = 0 (the tile's first key is valid: every max is finite).
        const bool ok0 = kt * 16 + k.g < valid, ok1 = kt * 16 + k.g + 8 < valid;
        float mx[NT][2];
#pragma unroll
        for (int n = 0; n < NT; n++) {
            s[n][0] = ok0 ? s[n][0] * p.scale_log2 : -INFINITY;
            s[n][1] = ok0 ? s[n][1] * p.scale_log2 : -INFINITY;
            s[n][2] = ok1 ? s[n][2] * p.scale_log2 : -INFINITY;
            s[n][3] = ok1 ? s[n][3] * p.scale_log2 : -INFINITY;
            mx[n][0] = fmaxf(s[n][0], s[n][2]);
            mx[n][1] = fmaxf(s[n][1], s[n][3]);
        }
#pragma unroll
        for (int o = 4; o < 32; o <<= 1) // over g: lanes t, t + 4, ..., t + 28 hold the same rows
#pragma unroll
            for (int n = 0; n < NT; n++) {
                mx[n][0] = fmaxf(mx[n][0], __shfl_xor_sync(0xffffffffu, mx[n][0], o));
                mx[n][1] = fmaxf(mx[n][1], __shfl_xor_sync(0xffffffffu, mx[n][1], o));
            }
        if (k.g == 0) {
#pragma unroll
            for (int n = 0; n < NT; n++)
                *reinterpret_cast<float2 *>(k.sMax + kt * 32 + n * 8 + 2 * k.t) = make_float2(mx[n][0], mx[n][1]);
        }
    }
    __syncthreads();
    float m_new[NT][2];
#pragma unroll
    for (int n = 0; n < NT; n++) {
        float2 t = *reinterpret_cast<const float2 *>(k.sMax + n * 8 + 2 * k.t);
#pragma unroll
        for (int q = 1; q < KTILES; q++) {
            const float2 u = *reinterpret_cast<const float2 *>(k.sMax + q * 32 + n * 8 + 2 * k.t);
            t.x = fmaxf(t.x, u.x), t.y = fmaxf(t.y, u.y);
        }
        m_new[n][0] = fmaxf(m_run[n][0], t.x);
        m_new[n][1] = fmaxf(m_run[n][1], t.y);
        al[n] = make_float2(exp2f(m_run[n][0] - m_new[n][0]), exp2f(m_run[n][1] - m_new[n][1])); // 0 at first
        m_run[n][0] = m_new[n][0];
        m_run[n][1] = m_new[n][1];
    }
    if (owner) {
        float ps[NT][2];
#pragma unroll
        for (int n = 0; n < NT; n++) {
            // P rounded to bf16 before summing, so numerator (P.V on bf16 P) and denominator agree.
            const __nv_bfloat162 lo = __floats2bfloat162_rn(exp2f(s[n][0] - m_new[n][0]), exp2f(s[n][1] - m_new[n][1]));
            const __nv_bfloat162 hi = __floats2bfloat162_rn(exp2f(s[n][2] - m_new[n][0]), exp2f(s[n][3] - m_new[n][1]));
            *reinterpret_cast<__nv_bfloat162 *>(k.sP + (kt * 16 + k.g) * ldp + n * 8 + 2 * k.t) = lo;
            *reinterpret_cast<__nv_bfloat162 *>(k.sP + (kt * 16 + k.g + 8) * ldp + n * 8 + 2 * k.t) = hi;
            ps[n][0] = __low2float(lo) + __low2float(hi);
            ps[n][1] = __high2float(lo) + __high2float(hi);
        }
#pragma unroll
        for (int o = 4; o < 32; o <<= 1)
#pragma unroll
            for (int n = 0; n < NT; n++) {
                ps[n][0] += __shfl_xor_sync(0xffffffffu, ps[n][0], o);
                ps[n][1] += __shfl_xor_sync(0xffffffffu, ps[n][1], o);
            }
#pragma unroll
        for (int n = 0; n < NT; n++) {
            l_run[n][0] = l_run[n][0] * al[n].x + ps[n][0];
            l_run[n][1] = l_run[n][1] * al[n].y + ps[n][1];
        }
    }
    __syncthreads();
}

// O^T = O^T * alpha + V^T P^T over this warp's value tiles warp + 8 i, the values read from the
// swizzled stage (the first v_dim columns of its latent rows).
template <int NT>
__device__ __forceinline__ void pv(const Block &k, const Warp &w, const bf16 *sKs, const float2 (&al)[NT],
                                   float (&acc)[4][NT][4])
{
    const int ldp = k.ldp, lane = k.lane;
    rescale_rows<NT, 4>(acc, al);
    // ldmatrix.x4.trans lanes: keys (lane & 7) + 8 * ((lane >> 4) & 1), dims + 8 * ((lane >> 3) & 1).
    const int key_l = (lane & 7) + ((lane >> 4) & 1) * 8, chunk_l = (lane >> 3) & 1;
#pragma unroll
    for (int kk = 0; kk < KTILES; kk++) {
        uint32_t bp[NT][2];
        load_p_frags<NT>(w, ldp, kk, bp);
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int j = k.warp + NWARPS * i;
            if (j < k.dv_tiles) {
                uint32_t a[4];
                vp_ldmatrix_x4_trans(a, sKs + swz(kk * 16 + key_l, 2 * j + chunk_l));
#pragma unroll
                for (int n = 0; n < NT; n++)
                    vp_mma_16816(acc[i][n], a, bp[n][0], bp[n][1]);
            }
        }
    }
}

// grid = (row_chunks, splits, batch), block = NTHREADS, dynamic smem = pl.smem (vp_attention_plan.cu's
// fit_mla: the stages from 0, the shares, P^T, then the row maxima and sums).
template <int NT>
__global__ void __launch_bounds__(NTHREADS, 1) attn_mla_kernel(const AttnParams p)
{
    extern __shared__ __align__(16) unsigned char smem[];
    Block k = block_of(p, smem);
    bf16 *const sK = reinterpret_cast<bf16 *>(smem);
    k.sQ = sK + (STAGES - 1) * TN * DIM; // the query rows wait in the last stage's buffer
    vp_attn_trace_mark(p, 0, vp_globaltimer());
    vp_attn_trace_mark(p, 1, clock64());

    load_q(p, k);
    load_tile_swz(k, sK, 0);
    vp_cp_async_commit(); // G0
    if (k.ntiles > 1)
        load_tile_swz(k, sK + TN * DIM, 1);
    vp_cp_async_commit(); // G1
    vp_grid_dep_launch_dependents();
    vp_attn_trace_mark(p, 2, clock64());

    const Warp w = warp_of(p.pl, k);
    uint32_t qf[KSTEPS][NT][2];
    float acc[4][NT][4];
    float m_run[NT][2], l_run[NT][2];
    zero_tiles(acc);
#pragma unroll
    for (int n = 0; n < NT; n++)
        m_run[n][0] = m_run[n][1] = -INFINITY, l_run[n][0] = l_run[n][1] = 0.0f;

#pragma unroll 1
    for (int tile = 0, stage = 0; tile < k.ntiles; tile++, stage = stage + 1 == STAGES ? 0 : stage + 1) {
        const bf16 *sKs = sK + stage * TN * DIM;
        if (tile == 0) {
            vp_cp_async_wait<1>();
            __syncthreads(); // Q and tile 0
            vp_attn_trace_mark(p, 3, clock64());
            load_q_frags<NT>(k, w, qf);
            __syncthreads(); // every warp has its fragments: the last stage is free
            if (k.ntiles > 2)
                load_tile_swz(k, sK + (STAGES - 1) * TN * DIM, 2);
            vp_cp_async_commit(); // G2
        } else {
            vp_cp_async_wait<2>();
            __syncthreads();
        }
        const int valid = min(TN, k.key_hi - (k.key_lo + tile * TN));
        float s[NT][4];
        scores<NT>(k, w, sKs, qf, s);
        if (tile == 0)
            vp_attn_trace_mark(p, 4, clock64());
        float2 al[NT];
        softmax<NT>(p, k, w, valid, s, m_run, l_run, al);
        if (tile == 0)
            vp_attn_trace_mark(p, 5, clock64());
        pv<NT>(k, w, sKs, al, acc);
        __syncthreads(); // every warp is done with this stage, the shares, the maxima and P^T
        if (tile < 7)
            vp_attn_trace_mark(p, 6 + tile, clock64());
        if (tile + STAGES < k.ntiles)
            load_tile_swz(k, sK + stage * TN * DIM, tile + STAGES);
        vp_cp_async_commit();
    }
    vp_cp_async_wait<0>(); // only empty groups can remain; nothing may land on sO

    // Row r's (m, l) for the epilogue: m is the same in every warp; l is the sum of the owners' shares.
    if (k.warp < KTILES && k.g == 0) {
#pragma unroll
        for (int n = 0; n < NT; n++) {
            *reinterpret_cast<float2 *>(k.sL + w.my_kt * 32 + n * 8 + 2 * k.t) = make_float2(l_run[n][0], l_run[n][1]);
            if (k.warp == 0)
                *reinterpret_cast<float2 *>(k.sMax + n * 8 + 2 * k.t) = make_float2(m_run[n][0], m_run[n][1]);
        }
    }
    __syncthreads();
    float m_row[NT], l_row[NT]; // rows warp + 8 i, as write_output takes them
#pragma unroll
    for (int i = 0; i < NT; i++) {
        const int r = k.warp + NWARPS * i;
        m_row[i] = k.sMax[r];
        l_row[i] = k.sL[r] + k.sL[32 + r] + k.sL[64 + r] + k.sL[96 + r];
    }
    write_output<NT, 4>(p, k, acc, m_row, l_row);
    vp_attn_trace_mark(p, 13, clock64());
    vp_attn_trace_mark(p, 14, vp_globaltimer());
    vp_attn_trace_mark(p, 15, (unsigned long long)k.ntiles);
}

} // namespace

AttnKernel vp_attention_mla_kernel(int nt)
{
    return nt == 1 ? attn_mla_kernel<1> : nt == 2 ? attn_mla_kernel<2> : attn_mla_kernel<3>;
}
