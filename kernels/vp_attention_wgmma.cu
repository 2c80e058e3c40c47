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
//   bars   [3] mbarriers                       the two stages' and the query rows' arrivals
// 48 rows: 147,456 + 55,296 + 6,144 + 768 + 24 B (+ 1,024 of alignment slack) = 210,712 of 232,448.
// The tensor memory accelerator (TMA) fills the panels: one thread issues 9 box copies (64 columns x
// 64 keys, 128B swizzle) per tile. With cp.async the four warps of a warpgroup spent ~6,100 cycles
// issuing the first two tiles and the query rows (measured, session 20 call 1), in the issue slots the
// tensor-core work needs.
// Two stages, not three: with the compute under the tile's transfer time, one tile in flight while
// the other is computed keeps DRAM busy (docs/attention-kernel.md).
//
// Per tile: wait for it (its stage's mbarrier) -> per warpgroup: scores
// (wgmma) -> row maxima (shuffles + sRed, warpgroup barrier) -> P to sP, O^T rescaled -> fence +
// warpgroup barrier -> P.V (wgmma) -> __syncthreads -> the stage refilled with tile + 2.
#include "vp_attention_wg.cuh"

#include <cudaTypedefs.h> // PFN_cuTensorMapEncodeTiled

namespace {

template <int NT, int WGS>
__global__ void __launch_bounds__(128 * WGS, 1) attn_wgmma_kernel(const AttnParams p, const __grid_constant__ AttnTma tma)
{
#if VP_WGMMA_ARCH
    constexpr int N = 8 * NT, RB = WGS * N, VP_MAX = VP_ATTN_WG_VDIM / 64;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    unsigned char *const smem = smem_raw + ((1024 - (vp_smem_addr(smem_raw) & 1023)) & 1023);
    Block k = block_of(p, smem);
    unsigned char *const sQ = smem + 2 * STAGE_BYTES;
    unsigned char *const sP_all = sQ + PANELS * RB * 128;
    float *const sRed = reinterpret_cast<float *>(sP_all + RB * 128);
    uint64_t *const bars = reinterpret_cast<uint64_t *>(sRed + WGS * 4 * 24); // [0..1] stages, [2] sQ
    const int wg = threadIdx.x >> 7, warp = (threadIdx.x >> 5) & 3, lane = threadIdx.x & 31, g = lane >> 2,
              t = lane & 3;
    unsigned char *const sP = sP_all + wg * N * 128;
    float *const red = sRed + wg * 4 * 24;
    vp_attn_trace_mark(p, 0, vp_globaltimer());
    vp_attn_trace_mark(p, 1, clock64());

    // Key row of tile t: the batch's first key row plus the split's keys (kv_heads = 1: one row per key).
    const int key_row0 = k.b * p.kv_len + k.key_lo;
    if (threadIdx.x == 0) {
        for (int i = 0; i < 3; i++)
            vp_mbar_init(&bars[i], 1);
        vp_mbar_init_fence();
        // The block's query rows are contiguous (kv_heads = 1): rows past nrows belong to other rows'
        // blocks or lie past the tensor (zeros), and their outputs are never written.
        tma_panels(sQ, &tma.q, (k.b * p.q_len) * p.heads + k.row0, RB, &bars[2]);
        tma_panels(smem, &tma.k, key_row0, TN, &bars[0]);
        if (k.ntiles > 1)
            tma_panels(smem + STAGE_BYTES, &tma.k, key_row0 + TN, TN, &bars[1]);
    }
    __syncthreads(); // the barriers initialised before anyone waits on them
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
        if (tile == 0)
            vp_mbar_wait(&bars[2], 0);
        vp_mbar_wait(&bars[tile & 1], (tile >> 1) & 1); // the stage's (tile / 2)-th fill
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
        if (threadIdx.x == 0 && tile + 2 < k.ntiles)
            tma_panels(st, &tma.k, key_row0 + (tile + 2) * TN, TN, &bars[tile & 1]);
    }

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
    // O^T fragments -> sO rows over the stages (free since the loop's last barrier) and each row's (m, l)
    // -> sML over sP, then whole rows out by one warp each, 16 bytes a lane: the fragments' own stores
    // would write 32 bytes per row at a time (the epilogue took ~4,100 cycles so at 8K, call 1).
    float *const sO = reinterpret_cast<float *>(smem);
    float2 *const sML = reinterpret_cast<float2 *>(sP_all);
#pragma unroll
    for (int j = 0; j < NT; j++)
#pragma unroll
        for (int e = 0; e < 2; e++) {
            const int r = 8 * j + 2 * t + e, br = wg * N + r;
            float *o = sO + br * LDO + 16 * warp + g;
#pragma unroll
            for (int i = 0; i < VP_MAX; i++) {
                o[64 * i] = acc[i][4 * j + e];
                o[64 * i + 8] = acc[i][4 * j + 2 + e];
            }
            if (warp == 0 && g == 0)
                sML[br] = make_float2(m_run[j][e], red[r] + red[24 + r] + red[48 + r] + red[72 + r]);
        }
    __syncthreads();
    wg_store_rows(p, k, sO, sML, 4 * WGS);
    vp_attn_trace_mark(p, 13, clock64());
    vp_attn_trace_mark(p, 14, vp_globaltimer());
    vp_attn_trace_mark(p, 15, (unsigned long long)k.ntiles);
#else
    (void)p;
    (void)tma;
    __trap(); // the planner chooses this kernel only where sm_90a code was built (VP_ATTN_HAVE_WGMMA)
#endif
}

} // namespace

AttnWgKernel vp_attention_wgmma_kernel(int nt, int wgs)
{
    if (wgs == 2) // the planner gives two warpgroups 25-48 rows: 2 or 3 row tiles each
        return nt == 3 ? attn_wgmma_kernel<3, 2> : attn_wgmma_kernel<2, 2>;
    return nt == 1 ? attn_wgmma_kernel<1, 1> : nt == 2 ? attn_wgmma_kernel<2, 1> : attn_wgmma_kernel<3, 1>;
}

namespace {

PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder()
{
    static PFN_cuTensorMapEncodeTiled_v12000 fn;
    if (!fn) {
        void *f = nullptr;
        cudaDriverEntryPointQueryResult q;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q) ==
                cudaSuccess &&
            q == cudaDriverEntryPointSuccess)
            fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
    }
    return fn;
}

// A 2-D bf16 tensor of `rows` rows of DIM columns (row stride DIM * 2 bytes), read in boxes of 64
// columns x box_rows rows that land 128B-swizzled.
int encode_rows(CUtensorMap *map, const void *base, long long rows, int box_rows)
{
    PFN_cuTensorMapEncodeTiled_v12000 enc = tensor_map_encoder();
    if (!enc)
        return (int)cudaErrorNotSupported;
    const cuuint64_t dims[2] = {(cuuint64_t)DIM, (cuuint64_t)rows};
    const cuuint64_t strides[1] = {(cuuint64_t)DIM * 2};
    const cuuint32_t box[2] = {64, (cuuint32_t)box_rows}, estride[2] = {1, 1};
    const CUresult r = enc(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void *>(base), dims, strides, box,
                           estride, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                           CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return r == CUDA_SUCCESS ? 0 : (int)cudaErrorInvalidValue;
}

} // namespace

int vp_attention_wgmma_launch(const AttnParams &p, int batch, cudaStream_t stream)
{
    AttnTma tma;
    VP_TRY((cudaError_t)encode_rows(&tma.k, p.k, (long long)batch * p.kv_len, TN));
    VP_TRY((cudaError_t)encode_rows(&tma.q, p.q, (long long)p.total_rows, p.pl.rows_blk));
    const dim3 grid(p.pl.row_chunks, p.pl.splits, batch);
    vp_attention_wgmma_kernel(p.pl.nt, p.pl.wgs)<<<grid, vp_attention_threads(&p.pl), p.pl.smem, stream>>>(p, tma);
    VP_TRY(cudaGetLastError());
    return 0;
}
