// Decode attention, the wgmma MLA kernel (sm_90a): latent MLA (qk_dim 576, values the first 512
// columns of the same rows: DeepSeek-V3's and Kimi-K2.5's shapes), up to 48 query rows per block in one or two
// warpgroups of up to 24 rows each. Design and predicted stage times: docs/attention-kernel.md,
// "The wgmma kernel".
//
// Why: the mma.sync kernels are issue-bound on the tensor cores at ~4,700-5,500 cycles per 64-key tile
// (measured, H200), above the ~4,400 cycles in which one SM's share of DRAM brings the tile. wgmma
// reads both operands from shared memory without register fragments, so per tile and warpgroup:
//   S^T [64 keys][N rows] = K [64][576] . Q^T     36 x m64nNk16, A = key panel (K-major), B = query rows
//   O^T [v_dim][N rows] += V^T [v_dim][64] . P^T   4 x (v_dim / 64) x m64nNk16, A = the same key panels
//                                                   read MN-major (transposed), B = P rows (K-major)
// Each warpgroup owns its rows end to end (scores, softmax, P.V, epilogue): the warpgroups share only
// the key tiles, and meet at one block barrier per tile (before a stage is refilled).
//
// Shared memory (every panel 128B-swizzled, 1,024-byte aligned; see vp_wgmma.cuh):
//   stages [2][9 panels][64 keys][128 B]      73,728 B each; panel p holds columns 64p .. 64p + 63
//   sQ     [9 panels][rows_blk][128 B]        rows past the block's rows are zero
//   sP     [warpgroups][8 NT rows][128 B]     P (bf16) of a warpgroup's rows over the tile's 64 keys
//   sRed   [warpgroups][4 warps][24] fp32     row maxima of each warp's 16 keys (then the row sums)
// 48 rows: 147,456 + 55,296 + 6,144 + 768 B (+ 1,024 of alignment slack) = 210,688 of 232,448.
// Two stages, not three: with the compute under the tile's transfer time, one tile in flight while
// the other is computed keeps DRAM busy (docs/attention-kernel.md).
//
// Per tile: wait for it (cp.async group) -> fence.proxy.async + __syncthreads -> per warpgroup: scores
// (wgmma) -> row maxima (shuffles + sRed, warpgroup barrier) -> P to sP, O^T rescaled -> fence +
// warpgroup barrier -> P.V (wgmma) -> __syncthreads -> the stage refilled with tile + 2.
#include "vp_attention_tiles.cuh"
#include "vp_wgmma.cuh"

namespace {

constexpr int DIM = VP_ATTN_MLA_DIM;
constexpr int PANELS = DIM / 64;
constexpr int TN = 64;
constexpr int STAGE_BYTES = PANELS * TN * 128;
static_assert(DIM % 64 == 0, "the latent row splits into 128-byte panels");
static_assert(STAGE_BYTES == VP_ATTN_WG_STAGE_BYTES, "the planner's stage size");

#if VP_WGMMA_ARCH // the helpers too: the other architectures' passes compile an empty kernel
constexpr int CHUNKS = DIM / 8; // 16-byte chunks per latent row
// Byte offset of 16-byte chunk c of row r in a panel-major array of `rows` rows (panel c / 8).
__device__ __forceinline__ uint32_t sw128(int rows, int r, int c)
{
    return (uint32_t)((c >> 3) * rows * 128 + r * 128 + (((c & 7) ^ (r & 7)) << 4));
}

// Keys [key0, key0 + 64) of this split into a stage (rows past the split's end zero-filled).
__device__ __forceinline__ void load_tile_panels(const Block &k, unsigned char *dst, int tile, int nthreads)
{
    const int key0 = k.key_lo + tile * TN, valid = min(TN, k.key_hi - key0);
    const bf16 *src = k.gK + key0 * k.kstride;
#pragma unroll 4
    for (int i = threadIdx.x; i < TN * CHUNKS; i += nthreads) {
        const int r = i / CHUNKS, c = i - r * CHUNKS;
        const bool ok = r < valid;
        vp_cp_async16(reinterpret_cast<bf16 *>(dst + sw128(TN, r, c)), (ok ? src + r * k.kstride : src) + c * 8,
                      ok ? 16 : 0);
    }
}

// The block's query rows into sQ (rows past nrows zero-filled).
__device__ __forceinline__ void load_q_panels(const AttnParams &p, const Block &k, unsigned char *sq, int rows_blk,
                                              int nthreads)
{
#pragma unroll 1
    for (int i = threadIdx.x; i < rows_blk * CHUNKS; i += nthreads) {
        const int r = i / CHUNKS, c = i - r * CHUNKS;
        const bool ok = r < k.nrows;
        const bf16 *src = ok ? p.q + global_row(p, k, r) * p.qk_dim : p.q;
        vp_cp_async16(reinterpret_cast<bf16 *>(sq + sw128(rows_blk, r, c)), src + c * 8, ok ? 16 : 0);
    }
}

#endif

template <int NT, int WGS>
__global__ void __launch_bounds__(128 * WGS, 1) attn_wgmma_kernel(const AttnParams p)
{
#if VP_WGMMA_ARCH
    constexpr int N = 8 * NT, NTHR = 128 * WGS, RB = WGS * N, VP_MAX = VP_ATTN_WG_VDIM / 64;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    unsigned char *const smem = smem_raw + ((1024 - (vp_smem_addr(smem_raw) & 1023)) & 1023);
    Block k = block_of(p, smem);
    unsigned char *const sQ = smem + 2 * STAGE_BYTES;
    unsigned char *const sP_all = sQ + PANELS * RB * 128;
    float *const sRed = reinterpret_cast<float *>(sP_all + RB * 128);
    const int wg = threadIdx.x >> 7, warp = (threadIdx.x >> 5) & 3, lane = threadIdx.x & 31, g = lane >> 2,
              t = lane & 3;
    unsigned char *const sP = sP_all + wg * N * 128;
    float *const red = sRed + wg * 4 * 24;
    vp_attn_trace_mark(p, 0, vp_globaltimer());
    vp_attn_trace_mark(p, 1, clock64());

    load_q_panels(p, k, sQ, RB, NTHR);
    load_tile_panels(k, smem, 0, NTHR);
    vp_cp_async_commit(); // G0 = {Q, tile 0}
    if (k.ntiles > 1)
        load_tile_panels(k, smem + STAGE_BYTES, 1, NTHR);
    vp_cp_async_commit(); // G1
    vp_grid_dep_launch_dependents();
    vp_attn_trace_mark(p, 2, clock64());

    float acc[VP_MAX][4 * NT];
#pragma unroll
    for (int i = 0; i < VP_MAX; i++)
#pragma unroll
        for (int j = 0; j < 4 * NT; j++)
            acc[i][j] = 0.0f;
    float m_run[NT][2], l_run[NT][2]; // rows 8j + 2t + e; l over this thread's keys only
#pragma unroll
    for (int j = 0; j < NT; j++)
        m_run[j][0] = m_run[j][1] = -INFINITY, l_run[j][0] = l_run[j][1] = 0.0f;
    const uint32_t q_addr = vp_smem_addr(sQ) + wg * N * 128, p_addr = vp_smem_addr(sP);

#pragma unroll 1
    for (int tile = 0; tile < k.ntiles; tile++) {
        unsigned char *const st = smem + (tile & 1) * STAGE_BYTES;
        const uint32_t st_addr = vp_smem_addr(st);
        vp_cp_async_wait<1>(); // this tile's group (and Q's) complete; at most the next one in flight
        vp_fence_async_smem();
        __syncthreads();
        if (tile == 0)
            vp_attn_trace_mark(p, 3, clock64());

        // S^T for this warpgroup's rows: keys 16 warp + g (+ 8), rows 8j + 2t (+ 1).
        float s[4 * NT];
        vp_wg_fence();
#pragma unroll
        for (int ks = 0; ks < DIM / 16; ks++) {
            const uint32_t kin = (ks & 3) * 32; // k16 step within the 64-column panel ks / 4
            const uint64_t da = vp_wg_desc(st_addr + (ks >> 2) * TN * 128 + kin, 16, 1024);
            const uint64_t db = vp_wg_desc(q_addr + (ks >> 2) * RB * 128 + kin, 16, 1024);
            VpWgmma<N, 0>::run(s, da, db, ks > 0);
        }
        vp_wg_commit();
        vp_wg_wait0();
        vp_wg_hold(s);
        if (tile == 0)
            vp_attn_trace_mark(p, 4, clock64());

        // Row maxima over the tile: this thread's two keys, the warp's 16 (lanes with the same t), then
        // the warpgroup's 64 through sRed. A key past the split gets -inf (the tile's first key is valid).
        const int valid = min(TN, k.key_hi - (k.key_lo + tile * TN));
        const bool ok0 = warp * 16 + g < valid, ok1 = warp * 16 + g + 8 < valid;
        float mx[NT][2];
#pragma unroll
        for (int j = 0; j < NT; j++) {
            s[4 * j + 0] = ok0 ? s[4 * j + 0] * p.scale_log2 : -INFINITY;
            s[4 * j + 1] = ok0 ? s[4 * j + 1] * p.scale_log2 : -INFINITY;
            s[4 * j + 2] = ok1 ? s[4 * j + 2] * p.scale_log2 : -INFINITY;
            s[4 * j + 3] = ok1 ? s[4 * j + 3] * p.scale_log2 : -INFINITY;
            mx[j][0] = fmaxf(s[4 * j + 0], s[4 * j + 2]);
            mx[j][1] = fmaxf(s[4 * j + 1], s[4 * j + 3]);
        }
#pragma unroll
        for (int o = 4; o < 32; o <<= 1)
#pragma unroll
            for (int j = 0; j < NT; j++) {
                mx[j][0] = fmaxf(mx[j][0], __shfl_xor_sync(0xffffffffu, mx[j][0], o));
                mx[j][1] = fmaxf(mx[j][1], __shfl_xor_sync(0xffffffffu, mx[j][1], o));
            }
        if (g == 0) {
#pragma unroll
            for (int j = 0; j < NT; j++)
                *reinterpret_cast<float2 *>(red + warp * 24 + 8 * j + 2 * t) = make_float2(mx[j][0], mx[j][1]);
        }
        vp_wg_bar(1 + wg);
        float2 al[NT];
#pragma unroll
        for (int j = 0; j < NT; j++) {
            float2 u = *reinterpret_cast<const float2 *>(red + 8 * j + 2 * t);
#pragma unroll
            for (int w = 1; w < 4; w++) {
                const float2 v = *reinterpret_cast<const float2 *>(red + w * 24 + 8 * j + 2 * t);
                u.x = fmaxf(u.x, v.x), u.y = fmaxf(u.y, v.y);
            }
            const float m0 = fmaxf(m_run[j][0], u.x), m1 = fmaxf(m_run[j][1], u.y);
            al[j] = make_float2(exp2f(m_run[j][0] - m0), exp2f(m_run[j][1] - m1)); // 0 on the first tile
            m_run[j][0] = m0, m_run[j][1] = m1;
            // P rounded to bf16 before summing, so numerator (P.V on bf16 P) and denominator agree.
            const bf16 p00 = __float2bfloat16(exp2f(s[4 * j + 0] - m0)), p01 = __float2bfloat16(exp2f(s[4 * j + 1] - m1));
            const bf16 p10 = __float2bfloat16(exp2f(s[4 * j + 2] - m0)), p11 = __float2bfloat16(exp2f(s[4 * j + 3] - m1));
            l_run[j][0] = l_run[j][0] * al[j].x + __bfloat162float(p00) + __bfloat162float(p10);
            l_run[j][1] = l_run[j][1] * al[j].y + __bfloat162float(p01) + __bfloat162float(p11);
            // P [row][key] K-major for the P.V B operand: key chunk (16 warp + g) / 8 = 2 warp (+ 1).
            const int r0 = 8 * j + 2 * t, r1 = r0 + 1, kc = 2 * warp, ke = g * 2;
            *reinterpret_cast<bf16 *>(sP + r0 * 128 + ((kc ^ (r0 & 7)) << 4) + ke) = p00;
            *reinterpret_cast<bf16 *>(sP + r1 * 128 + ((kc ^ (r1 & 7)) << 4) + ke) = p01;
            *reinterpret_cast<bf16 *>(sP + r0 * 128 + (((kc + 1) ^ (r0 & 7)) << 4) + ke) = p10;
            *reinterpret_cast<bf16 *>(sP + r1 * 128 + (((kc + 1) ^ (r1 & 7)) << 4) + ke) = p11;
        }
#pragma unroll
        for (int i = 0; i < VP_MAX; i++)
#pragma unroll
            for (int j = 0; j < NT; j++) {
                acc[i][4 * j + 0] *= al[j].x, acc[i][4 * j + 1] *= al[j].y;
                acc[i][4 * j + 2] *= al[j].x, acc[i][4 * j + 3] *= al[j].y;
            }
        vp_fence_async_smem();
        vp_wg_bar(1 + wg);
        if (tile == 0)
            vp_attn_trace_mark(p, 5, clock64());

        // O^T += V^T P^T: value panel i (dims 64 i + 16 warp + g (+ 8)), 16 keys per step.
#pragma unroll
        for (int i = 0; i < VP_MAX; i++)
            vp_wg_hold(acc[i]);
        vp_wg_fence();
#pragma unroll
        for (int i = 0; i < VP_MAX; i++) {
#pragma unroll
            for (int kk = 0; kk < TN / 16; kk++) {
                const uint64_t da = vp_wg_desc(st_addr + i * TN * 128 + kk * 16 * 128, TN * 128, 1024);
                const uint64_t db = vp_wg_desc(p_addr + kk * 32, 16, 1024);
                VpWgmma<N, 1>::run(acc[i], da, db, 1);
            }
        }
        vp_wg_commit();
        vp_wg_wait0();
#pragma unroll
        for (int i = 0; i < VP_MAX; i++)
            vp_wg_hold(acc[i]);
        __syncthreads(); // every warpgroup is done with this stage and its sP
        if (tile < 7)
            vp_attn_trace_mark(p, 6 + tile, clock64());
        if (tile + 2 < k.ntiles)
            load_tile_panels(k, st, tile + 2, NTHR);
        vp_cp_async_commit();
    }
    vp_cp_async_wait<0>();

    // Row sums: this thread's keys, the warp's (lanes with the same t), then the 4 warps through sRed.
#pragma unroll
    for (int o = 4; o < 32; o <<= 1)
#pragma unroll
        for (int j = 0; j < NT; j++) {
            l_run[j][0] += __shfl_xor_sync(0xffffffffu, l_run[j][0], o);
            l_run[j][1] += __shfl_xor_sync(0xffffffffu, l_run[j][1], o);
        }
    if (g == 0) {
#pragma unroll
        for (int j = 0; j < NT; j++)
            *reinterpret_cast<float2 *>(red + warp * 24 + 8 * j + 2 * t) = make_float2(l_run[j][0], l_run[j][1]);
    }
    vp_wg_bar(1 + wg);
    const bool direct = p.pl.splits == 1;
#pragma unroll
    for (int j = 0; j < NT; j++)
#pragma unroll
        for (int e = 0; e < 2; e++) {
            const int r = 8 * j + 2 * t + e, br = wg * N + r;
            if (br >= k.nrows)
                continue;
            const float l = red[r] + red[24 + r] + red[48 + r] + red[72 + r];
            const long long grow = global_row(p, k, br);
            if (direct) {
                const float inv_l = 1.0f / l;
                bf16 *dst = p.out + grow * p.v_dim;
#pragma unroll
                for (int i = 0; i < VP_MAX; i++) {
                    dst[64 * i + 16 * warp + g] = __float2bfloat16(acc[i][4 * j + e] * inv_l);
                    dst[64 * i + 16 * warp + g + 8] = __float2bfloat16(acc[i][4 * j + 2 + e] * inv_l);
                }
            } else {
                float *dst = p.part_o + ((long long)k.split * p.total_rows + grow) * p.v_dim;
#pragma unroll
                for (int i = 0; i < VP_MAX; i++) {
                    dst[64 * i + 16 * warp + g] = acc[i][4 * j + e];
                    dst[64 * i + 16 * warp + g + 8] = acc[i][4 * j + 2 + e];
                }
                if (warp == 0 && g == 0) {
                    float *ml = p.part_ml + ((long long)k.split * p.total_rows + grow) * 2;
                    ml[0] = m_run[j][e];
                    ml[1] = l;
                }
            }
        }
    vp_attn_trace_mark(p, 13, clock64());
    vp_attn_trace_mark(p, 14, vp_globaltimer());
    vp_attn_trace_mark(p, 15, (unsigned long long)k.ntiles);
#else
    (void)p;
    __trap(); // the planner chooses this kernel only where sm_90a code was built (VP_ATTN_HAVE_WGMMA)
#endif
}

} // namespace

AttnKernel vp_attention_wgmma_kernel(int nt, int wgs)
{
    if (wgs == 2)
        return nt == 1 ? attn_wgmma_kernel<1, 2> : nt == 2 ? attn_wgmma_kernel<2, 2> : attn_wgmma_kernel<3, 2>;
    return nt == 1 ? attn_wgmma_kernel<1, 1> : nt == 2 ? attn_wgmma_kernel<2, 1> : attn_wgmma_kernel<3, 1>;
}
