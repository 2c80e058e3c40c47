// Decode attention, the second kernel: the same work decomposition, tiles, P.V and epilogue as the
// first (vp_attention_tiles.cuh), but the scores and the softmax stay in registers.
//
// Why: the first kernel's per-tile chain was measured at 4,400-4,800 cycles whatever the tile size
// (MLA on an H200, bench/NOTES.md 2026-12-02: scores 1,000-2,000, softmax 1,300-3,000, P.V 600-1,500),
// so a 16-key tile cost as much as a 64-key one and the split kernel ran on latency, not bandwidth. Its
// softmax re-read every share of every score from shared memory, one key per lane, and ran two 5-level
// shuffle trees over them. Here the warp that owns a key tile adds its partners' shares (three 16-byte
// loads per share and lane), takes the row maxima over its 16 keys with a 3-level shuffle, and the
// warps exchange only those maxima (ktiles floats per row). Every thread tracks (m, alpha) of the rows
// its fragments hold (2t, 2t + 1 of each row tile), so P.V rescales without reading alpha back, and the
// row sums stay with the key-tile owners until the epilogue.
//
// Per tile of TN keys (ktiles = TN / 16 key tiles, ksplit = 8 / ktiles shares of qk_dim), 4 barriers:
//   1. S^T: warp w computes key tile w % ktiles over share w / ktiles (score_frags); the warps of shares
//      1.. store their fragments to sS (16-byte stores, lane-contiguous).
//   2. the owners (share 0) add the shares, mask keys past the tile, scale, take each row's max over
//      their 16 keys and store it in sMax[key tile][row].
//   3. every warp reads the ktiles maxima of its rows: m_new, alpha. The owners write P^T (bf16 pairs)
//      and add the rounded P of their keys into their running row sums.
//   4. P.V as in the first kernel (tile_pv), alpha from registers.
#include "vp_attention_tiles.cuh"

namespace {

// The fragment of row tile n, share `part` of key tile kt, in sS: lane-contiguous float4, so a warp's
// stores and loads are conflict-free.
__device__ __forceinline__ float4 *share_slot(const Block &k, int ktiles, int part, int kt, int n, int nt)
{
    return reinterpret_cast<float4 *>(k.sS) + (((part - 1) * ktiles + kt) * nt + n) * 32 + k.lane;
}

// Steps 1-3 of the tile (the barriers between them included). s: this warp's partial scores on entry;
// m_run: running max of rows (2t, 2t + 1) of each row tile, in log2 units; l_run: the row sums over
// this warp's keys (owners only); al: alpha of those rows for tile_pv.
template <int NT>
__device__ __forceinline__ void tile_softmax_reg(const AttnParams &p, const Block &k, const Warp &w, int valid,
                                                 float (&s)[NT][4], float (&m_run)[NT][2], float (&l_run)[NT][2],
                                                 float2 (&al)[NT])
{
    const int kt = w.my_kt, part = k.warp / w.ktiles, ldp = k.ldp;
    if (part > 0) {
#pragma unroll
        for (int n = 0; n < NT; n++)
            *share_slot(k, w.ktiles, part, kt, n, NT) = make_float4(s[n][0], s[n][1], s[n][2], s[n][3]);
    }
    __syncthreads();
    if (part == 0) {
#pragma unroll 1
        for (int q = 1; q < w.ksplit; q++) {
#pragma unroll
            for (int n = 0; n < NT; n++) {
                const float4 v = *share_slot(k, w.ktiles, q, kt, n, NT);
                s[n][0] += v.x, s[n][1] += v.y, s[n][2] += v.z, s[n][3] += v.w;
            }
        }
        // Keys g and g + 8 of this key tile; a key past the tile gets -inf, so P = 0 (the tile's first
        // key is valid, so every row's max is finite).
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
#pragma unroll 1
        for (int q = 1; q < w.ktiles; q++) {
            const float2 u = *reinterpret_cast<const float2 *>(k.sMax + q * 32 + n * 8 + 2 * k.t);
            t.x = fmaxf(t.x, u.x), t.y = fmaxf(t.y, u.y);
        }
        m_new[n][0] = fmaxf(m_run[n][0], t.x);
        m_new[n][1] = fmaxf(m_run[n][1], t.y);
        al[n] = make_float2(exp2f(m_run[n][0] - m_new[n][0]), exp2f(m_run[n][1] - m_new[n][1])); // 0 at first
        m_run[n][0] = m_new[n][0];
        m_run[n][1] = m_new[n][1];
    }
    if (part == 0) {
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

// grid = (row_chunks * dv_chunks, splits, batch * kv_heads), block = NTHREADS, dynamic smem = pl.smem.
template <int NT, int MT>
__global__ void __launch_bounds__(NTHREADS, MT >= 4 ? 1 : 2) attn_decode_v2_kernel(const AttnParams p)
{
    extern __shared__ __align__(16) unsigned char smem[];
    const Block k = block_of(p, smem);
    const int tn = k.tn, stages = k.stages;
    vp_attn_trace_mark(p, 0, vp_globaltimer());
    vp_attn_trace_mark(p, 1, clock64());

    // The pipeline of the first kernel: group s holds tile s (group 0 also Q), all stages filled first.
    load_q(p, k);
    for (int s = 0; s < stages; s++) {
        if (s < k.ntiles)
            load_tile(p, k, s, s);
        vp_cp_async_commit();
    }
    vp_grid_dep_launch_dependents();
    zero_padding(p, k);
    vp_attn_trace_mark(p, 2, clock64());

    const Warp w = warp_of(p.pl, k);
    float acc[MT][NT][4];
    float m_run[NT][2], l_run[NT][2];
    zero_tiles(acc);
#pragma unroll
    for (int n = 0; n < NT; n++)
        m_run[n][0] = m_run[n][1] = -INFINITY, l_run[n][0] = l_run[n][1] = 0.0f;

#pragma unroll 1
    for (int tile = 0, stage = 0; tile < k.ntiles; tile++, stage = stage + 1 == stages ? 0 : stage + 1) {
        vp_cp_async_wait_dyn(stages - 1);
        __syncthreads();
        if (tile == 0)
            vp_attn_trace_mark(p, 3, clock64());
        const bf16 *sKs = k.sK + stage * tn * k.ldk;
        const bf16 *sVs = p.v_in_k ? sKs + k.dv_col0 : k.sV + stage * tn * k.ldv;
        const int valid = min(tn, k.key_hi - (k.key_lo + tile * tn));
        float s[NT][4];
        score_frags<NT, MT>(k, w, sKs, s);
        if (tile == 0)
            vp_attn_trace_mark(p, 4, clock64());
        float2 al[NT];
        tile_softmax_reg<NT>(p, k, w, valid, s, m_run, l_run, al);
        if (tile == 0)
            vp_attn_trace_mark(p, 5, clock64());
        tile_pv<NT, MT>(k, w, sVs, al, acc);
        __syncthreads(); // every warp is done with this stage, sS, sMax and sP
        if (tile < 7)
            vp_attn_trace_mark(p, 6 + tile, clock64());
        if (tile + stages < k.ntiles)
            load_tile(p, k, tile + stages, stage);
        vp_cp_async_commit();
    }
    vp_cp_async_wait<0>();

    // Row r's (m, l) for the epilogue: m is the same in every warp; l is the sum of the owners' shares.
    const int part = k.warp / w.ktiles;
    if (part == 0 && k.g == 0) {
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
        l_row[i] = 0.0f;
        for (int q = 0; q < w.ktiles; q++)
            l_row[i] += k.sL[q * 32 + r];
    }
    write_output<NT, MT>(p, k, acc, m_row, l_row);
    vp_attn_trace_mark(p, 13, clock64());
    vp_attn_trace_mark(p, 14, vp_globaltimer());
    vp_attn_trace_mark(p, 15, (unsigned long long)k.ntiles);
}

template <int NT>
AttnKernel kernel_mt(int mt)
{
    return mt == 1 ? attn_decode_v2_kernel<NT, 1> : mt == 2 ? attn_decode_v2_kernel<NT, 2> : attn_decode_v2_kernel<NT, 4>;
}

} // namespace

AttnKernel vp_attention_v2_kernel(int nt, int mt)
{
    return nt == 1 ? kernel_mt<1>(mt) : nt == 2 ? kernel_mt<2>(mt) : nt == 3 ? kernel_mt<3>(mt) : kernel_mt<4>(mt);
}
