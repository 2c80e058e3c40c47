// Decode attention over a KV cache: flash-decoding on bf16 tensor cores (mma.sync m16n8k16, fp32
// accumulation), for MLA (one latent per token read as both key and value) and GQA/MHA.
//
// Work decomposition (shapes as in vp_kernels.h; G = heads / kv_heads, R = q_len * G):
//   The R query rows that share one KV head read the same keys, so one block computes all of them (up
//   to 32 rows) from every tile of keys it stages in shared memory: the cache is read from DRAM once
//   (MLA at q_len 3: 24 rows share each 1152-byte latent). A block owns (batch b, kv head h, a range
//   of keys = one split, a chunk of up to 32 rows, a chunk of up to 512 value columns). It writes an
//   unnormalised fp32 partial output and (m, l) per row; attn_combine_kernel (vp_attention_combine.cu)
//   merges the splits. With a single split the block normalises and writes bf16 itself.
//
// Decode has few rows and many keys, so the mma tiles are transposed with respect to prefill flash
// attention: keys and value dimensions are the M side (16 per tile), query rows the N side (8 per
// tile). MLA's 24 rows fill three n8 tiles instead of padding to two m16 tiles, and the accumulators
// of a warp that owns 64 value columns are 48 registers, not 64.
//   S^T [key][row] = K Q^T          A = K tile (ldmatrix),        B = Q rows (ldmatrix)
//   O^T [dim][row] += V^T P^T       A = V tile (ldmatrix.trans),  B = P^T [key][row] (ldmatrix.trans)
//
//
//
// Shared memory (bf16 rows padded by 8 elements = 16 bytes, so the 8 row addresses of an ldmatrix
// phase hit distinct banks; dkp = qk_dim rounded up to 16, dv_w = value columns of the block):
//   sQ [rows_blk][dkp + 8]                 rows past R and columns past qk_dim are zero
//   sK [stages][TN][dkp + 8]
//   sV [stages][TN][dv_w + 8]              only without v_in_k (MLA reads its values from sK)
//   sO [rows_blk][dv_w + 4] fp32           the epilogue's output rows, over sK / sV once they are free
//   sS [ksplit * TN = 128][8 * NT + 1] fp32   partial scores (odd stride: the softmax reads columns)
//   sP [TN][8 * (NT | 1)] bf16             P^T (odd multiple of 16 bytes per row: conflict-free ldmatrix)
//   sAlpha [rows_blk] fp32
// MLA q_len 3 (24 rows, NT = 3): 28 KB Q + 75 KB per 64-key stage + 16 KB: two stages = 194 KB on an
// H200; sm_120's 99 KB takes three 16-key stages (98 KB). The planner is vp_attention_plan.cu.
#include "vp_attention.cuh"
//
// This header holds what the kernels share (vp_attention.cu: the first kernel, whose softmax goes
// through shared memory; vp_attention_mla.cu: the MLA kernel): the tile copies, the block's
// and the warp's coordinates, the P.V phase and the epilogue.
#pragma once

#include "vp_attention.cuh"
#include "vp_mma.cuh"

namespace {

constexpr int NWARPS = VP_ATTN_WARPS;
constexpr int NTHREADS = VP_ATTN_THREADS;

// ------------------------------------------------------------------------------------ tile copies
// Asynchronous copy of rows [0, nrows) of cpr 16-byte chunks (global row stride gld) into shared rows
// of stride sld: warp w copies rows w, w + 8, ..., its lanes the chunks of a row (contiguous in global
// memory: coalesced, and no index arithmetic per chunk). Rows at or past `valid` are zero-filled: a
// padded key must contribute exactly 0, and stale data could be NaN.
__device__ __forceinline__ void copy_rows_async(bf16 *dst, int sld, const bf16 *src, long long gld, int nrows,
                                                int valid, int cpr)
{
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
#pragma unroll 1
    for (int r = warp; r < nrows; r += NWARPS) {
        const bool ok = r < valid;
        const bf16 *s = ok ? src + r * gld : src; // a zero fill reads nothing but needs a valid address
        bf16 *d = dst + r * sld;
#pragma unroll 1
        for (int c = lane; c < cpr; c += 32)
            vp_cp_async16(d + c * 8, s + c * 8, ok ? 16 : 0);
    }
}

// The same with plain loads, for dims that are not a multiple of 8 or unaligned pointers. Out of line:
// the cold path stays out of the tile loop's code.
__device__ __noinline__ void copy_rows_scalar(bf16 *dst, int sld, const bf16 *src, long long gld, int nrows,
                                              int valid, int ncols)
{
    for (int i = threadIdx.x; i < nrows * ncols; i += NTHREADS) {
        const int r = i / ncols, c = i % ncols;
        dst[r * sld + c] = r < valid ? src[r * gld + c] : __float2bfloat16(0.0f);
    }
}

// ----------------------------------------------------------------------------------- block setup
// What one block owns and where its shared arrays start (layout at the top of the file). Built once per
// block; every stage below is force-inlined, so the fields stay in registers as the locals they were.
struct Block {
    int tn, stages;             // the plan's tile size and depth, and its shared row strides: copied
    int ldk, ldv, ldp, lds, ldo; // once, since nvcc reloads them after shared stores otherwise
    int warp, lane, g, t;       // g = lane / 4, t = lane % 4: mma fragment coordinates
    int row0, nrows;            // first group row of the block, real rows here (<= rows_blk)
    int dv_chunk, dv_col0, dv_cols, dv_tiles; // real value columns [dv_col0, + dv_cols), 16-wide tiles
    int split, b, kvh;
    int key_lo, key_hi, ntiles; // this split's keys, in tiles of tn
    long long kstride, vstride; // global row strides of K and V (elements)
    const bf16 *gK, *gV;        // key / value row 0 of (b, kvh); gV = nullptr with v_in_k
    bf16 *sQ, *sK, *sV, *sP;
    float *sO, *sS, *sAlpha;
    float *sMax, *sL; // kernel 2: [ktiles][32] row maxima of each key tile, then [ktiles][32] row sums
};

// grid = (row_chunks * dv_chunks, splits, batch * kv_heads).
__device__ __forceinline__ Block block_of(const AttnParams &p, unsigned char *smem)
{
    const AttnPlan &pl = p.pl;
    Block k;
    k.warp = threadIdx.x >> 5, k.lane = threadIdx.x & 31, k.g = k.lane >> 2, k.t = k.lane & 3;
    k.tn = pl.tn, k.stages = pl.stages;
    k.ldk = pl.ldk, k.ldv = pl.ldv, k.ldp = pl.ldp, k.lds = pl.lds, k.ldo = pl.ldo;
    const int row_chunk = blockIdx.x % pl.row_chunks;
    k.dv_chunk = blockIdx.x / pl.row_chunks;
    k.split = blockIdx.y, k.b = blockIdx.z / p.kv_heads, k.kvh = blockIdx.z % p.kv_heads;
    k.row0 = row_chunk * pl.rows_blk, k.nrows = min(pl.rows_blk, p.rows - k.row0);
    k.dv_col0 = k.dv_chunk * pl.dv_w, k.dv_cols = min(p.v_dim - k.dv_col0, pl.dv_w);
    k.dv_tiles = (k.dv_cols + 15) / 16;

    k.sQ = reinterpret_cast<bf16 *>(smem);
    k.sK = reinterpret_cast<bf16 *>(smem + pl.off_k);
    k.sV = reinterpret_cast<bf16 *>(smem + pl.off_v);
    k.sO = reinterpret_cast<float *>(smem + pl.off_k);
    k.sS = reinterpret_cast<float *>(smem + pl.off_s);
    k.sP = reinterpret_cast<bf16 *>(smem + pl.off_p);
    k.sAlpha = reinterpret_cast<float *>(smem + pl.off_a);
    k.sMax = reinterpret_cast<float *>(smem + pl.off_r);
    k.sL = k.sMax + 4 * 32;

    k.key_lo = k.split * pl.keys_per_split, k.key_hi = min(p.kv_len, k.key_lo + pl.keys_per_split);
    k.ntiles = (k.key_hi - k.key_lo + k.tn - 1) / k.tn;
    k.kstride = (long long)p.kv_heads * p.qk_dim, k.vstride = (long long)p.kv_heads * p.v_dim;
    k.gK = p.k + ((long long)k.b * p.kv_len * p.kv_heads + k.kvh) * p.qk_dim;
    k.gV = p.v_in_k ? nullptr : p.v + ((long long)k.b * p.kv_len * p.kv_heads + k.kvh) * p.v_dim + k.dv_col0;
    return k;
}

// Block row r is group row gr = row0 + r: query position gr / G, head kvh * G + gr % G.
__device__ __forceinline__ long long global_row(const AttnParams &p, const Block &k, int r)
{
    const int gr = k.row0 + r;
    return ((long long)k.b * p.q_len + gr / p.group) * p.heads + (long long)k.kvh * p.group + gr % p.group;
}

// Keys [key0, key0 + tn) of this split into `stage` (and their values, unless MLA reads them from sK).
__device__ __forceinline__ void load_tile(const AttnParams &p, const Block &k, int tile, int stage)
{
    const int tn = k.tn, ldk = k.ldk, ldv = k.ldv;
    const int key0 = k.key_lo + tile * tn, valid = min(tn, k.key_hi - key0);
    bf16 *dk = k.sK + stage * tn * ldk;
    if (p.vec)
        copy_rows_async(dk, ldk, k.gK + key0 * k.kstride, k.kstride, tn, valid, p.qk_dim / 8);
    else
        copy_rows_scalar(dk, ldk, k.gK + key0 * k.kstride, k.kstride, tn, valid, p.qk_dim);
    if (!p.v_in_k) {
        bf16 *dv = k.sV + stage * tn * ldv;
        if (p.vec)
            copy_rows_async(dv, ldv, k.gV + key0 * k.vstride, k.vstride, tn, valid, k.dv_cols / 8);
        else
            copy_rows_scalar(dv, ldv, k.gV + key0 * k.vstride, k.vstride, tn, valid, k.dv_cols);
    }
}

// sQ [rows_blk][dkp + 8] <- the block's query rows; rows past R are zero-filled. Asynchronous on the
// vector path: it joins the first tile's cp.async group.
__device__ __forceinline__ void load_q(const AttnParams &p, const Block &k)
{
    const AttnPlan &pl = p.pl;
    const int ldk = k.ldk;
    if (p.vec) {
#pragma unroll 1
        for (int r = k.warp; r < pl.rows_blk; r += NWARPS) {
            const bool ok = r < k.nrows;
            const bf16 *src = ok ? p.q + global_row(p, k, r) * p.qk_dim : p.q;
#pragma unroll 1
            for (int c = k.lane; c < p.qk_dim / 8; c += 32)
                vp_cp_async16(k.sQ + r * ldk + c * 8, src + c * 8, ok ? 16 : 0);
        }
    } else {
#pragma unroll 1
        for (int i = threadIdx.x; i < pl.rows_blk * p.qk_dim; i += NTHREADS) {
            const int r = i / p.qk_dim, c = i % p.qk_dim;
            k.sQ[r * ldk + c] = r < k.nrows ? p.q[global_row(p, k, r) * p.qk_dim + c] : __float2bfloat16(0.0f);
        }
    }
}

// Zeros in every padding column the copies never write (columns qk_dim..dkp of sQ and of every sK
// stage, dv_cols..dv_w of every sV stage), in P^T (rows past R stay 0) and in alpha. Runs while the
// first tiles are in flight; none of these bytes is a cp.async destination.
__device__ __forceinline__ void zero_padding(const AttnParams &p, const Block &k)
{
    const AttnPlan &pl = p.pl;
    const int tn = k.tn, stages = k.stages, ldk = k.ldk, ldv = k.ldv, ldp = k.ldp;
    const int padk = pl.dkp - p.qk_dim;
#pragma unroll 1
    for (int i = threadIdx.x; i < (pl.rows_blk + stages * tn) * padk; i += NTHREADS) {
        const int r = i / padk, c = p.qk_dim + i % padk; // the rows of sQ, then those of every sK stage
        (r < pl.rows_blk ? k.sQ + r * ldk : k.sK + (r - pl.rows_blk) * ldk)[c] = __float2bfloat16(0.0f);
    }
    if (!p.v_in_k) {
        const int padv = pl.dv_w - k.dv_cols;
#pragma unroll 1
        for (int i = threadIdx.x; i < stages * tn * padv; i += NTHREADS)
            k.sV[(i / padv) * ldv + k.dv_cols + i % padv] = __float2bfloat16(0.0f);
    }
#pragma unroll 1
    for (int i = threadIdx.x; i < tn * ldp; i += NTHREADS)
        k.sP[i] = __float2bfloat16(0.0f);
    for (int i = threadIdx.x; i < pl.rows_blk; i += NTHREADS)
        k.sAlpha[i] = 0.0f;
}

// ------------------------------------------------------------------------------ this warp's parts
struct Warp {
    int ktiles, ksplit;      // key tiles of 16 per tile; shares of qk_dim in phase 1 (8 / ktiles)
    int my_kt, ks_lo, ks_hi; // phase 1: key tile, k-steps [ks_lo, ks_hi) of 16 dims
    // ldmatrix lane addresses. K (A, x4): rows = keys 0..15, k halves by lane / 16. Q (B, x4 = two row
    // tiles): rows (lane & 7) + 8 * (lane / 16), k half (lane / 8) & 1 (x2 uses lanes 0..15 of it).
    int k_frag;
    const bf16 *q_frag;
    float *s_mine; // C (key g, rows 2t, 2t + 1)
    // V^T (A, x4.trans): matrices (dims 0-7 | 8-15) x (keys 0-7 | 8-15) in a0..a3 order. P^T (B, x4.trans
    // = two row tiles): keys (lane & 7) + 8 * ((lane / 8) & 1), row tile by lane / 16.
    int v_frag;
    const bf16 *p_frag;
};

__device__ __forceinline__ Warp warp_of(const AttnPlan &pl, const Block &k)
{
    Warp w;
    const int lane = k.lane, ldk = k.ldk;
    w.ktiles = k.tn / 16, w.ksplit = NWARPS / w.ktiles;
    const int dk16 = pl.dkp / 16;
    w.my_kt = k.warp % w.ktiles;
    const int my_part = k.warp / w.ktiles; // share of qk_dim
    w.ks_lo = my_part * dk16 / w.ksplit, w.ks_hi = (my_part + 1) * dk16 / w.ksplit;
    w.k_frag = (w.my_kt * 16 + (lane & 15)) * ldk + (lane >> 4) * 8;
    w.q_frag = k.sQ + ((lane & 7) + (lane >> 4) * 8) * ldk + ((lane >> 3) & 1) * 8;
    w.s_mine = k.sS + (my_part * k.tn + w.my_kt * 16 + k.g) * k.lds + 2 * k.t;
    w.v_frag = ((lane & 7) + ((lane >> 4) & 1) * 8) * k.ldv + ((lane >> 3) & 1) * 8;
    w.p_frag = k.sP + ((lane & 7) + ((lane >> 3) & 1) * 8) * k.ldp + (lane >> 4) * 8;
    return w;
}

// ------------------------------------------------------------------------------ the three phases
// Zero a set of mma C fragments [sets][row tiles][4]; fully unrolled, so they stay in registers.
template <int A, int B>
__device__ __forceinline__ void zero_tiles(float (&c)[A][B][4])
{
#pragma unroll
    for (int i = 0; i < A; i++)
#pragma unroll
        for (int n = 0; n < B; n++)
#pragma unroll
            for (int j = 0; j < 4; j++)
                c[i][n][j] = 0.0f;
}


// S^T partial sums of this warp's key tile over its share of qk_dim, for all NT row tiles: out[n] is
// the C fragment of row tile n (keys g | g + 8, rows 2t, 2t + 1). Two accumulator sets halve the dependent mma chain (MLA: 18 k-steps per warp) where registers allow:
// small NT, or MT = 4 (one block per SM, up to 255 registers).
template <int NT, int MT>
__device__ __forceinline__ void score_frags(const Block &k, const Warp &w, const bf16 *sKs, float (&out)[NT][4])
{
    const int ldk = k.ldk;
    constexpr int CH = NT <= 2 || MT >= 4 ? 2 : 1;
    float c[CH][NT][4];
    zero_tiles(c);
    auto step = [&](float(&cc)[NT][4], int ks) {
        uint32_t a[4], bq[4];
        vp_ldmatrix_x4(a, sKs + w.k_frag + ks * 16);
#pragma unroll
        for (int n = 0; n + 1 < NT; n += 2) {
            vp_ldmatrix_x4(bq, w.q_frag + n * 8 * ldk + ks * 16);
            vp_mma_16816(cc[n], a, bq[0], bq[1]);
            vp_mma_16816(cc[n + 1], a, bq[2], bq[3]);
        }
        if (NT % 2) {
            vp_ldmatrix_x2(bq, w.q_frag + (NT - 1) * 8 * ldk + ks * 16);
            vp_mma_16816(cc[NT - 1], a, bq[0], bq[1]);
        }
    };
    int ks = w.ks_lo;
#pragma unroll 2
    for (; ks + CH <= w.ks_hi; ks += CH)
#pragma unroll
        for (int h = 0; h < CH; h++)
            step(c[h], ks + h);
    if (CH == 2 && ks < w.ks_hi)
        step(c[0], ks);
#pragma unroll
    for (int n = 0; n < NT; n++)
#pragma unroll
        for (int j = 0; j < 4; j++)
            out[n][j] = CH == 2 ? c[0][n][j] + c[CH - 1][n][j] : c[0][n][j];
}

// O^T rows rescaled by alpha (acc: value tile i, row tile n; rows 2t, 2t + 1 of each row tile).
template <int NT, int MT>
__device__ __forceinline__ void rescale_rows(float (&acc)[MT][NT][4], const float2 (&al)[NT])
{
#pragma unroll
    for (int i = 0; i < MT; i++)
#pragma unroll
        for (int n = 0; n < NT; n++) {
            acc[i][n][0] *= al[n].x;
            acc[i][n][1] *= al[n].y;
            acc[i][n][2] *= al[n].x;
            acc[i][n][3] *= al[n].y;
        }
}

// The B fragments of P^T for key step kk (16 keys), every row tile.
template <int NT>
__device__ __forceinline__ void load_p_frags(const Warp &w, int ldp, int kk, uint32_t (&bp)[NT][2])
{
#pragma unroll
    for (int n = 0; n + 1 < NT; n += 2) {
        uint32_t r4[4];
        vp_ldmatrix_x4_trans(r4, w.p_frag + kk * 16 * ldp + n * 8);
        bp[n][0] = r4[0];
        bp[n][1] = r4[1];
        bp[n + 1][0] = r4[2];
        bp[n + 1][1] = r4[3];
    }
    if (NT % 2)
        vp_ldmatrix_x2_trans(bp[NT - 1], w.p_frag + kk * 16 * ldp + (NT - 1) * 8);
}

// 3. O^T = O^T * alpha + V^T P^T over this warp's value tiles warp + 8 i (acc: value tile i, row tile
// n; dims g | g + 8, rows 2t, 2t + 1). sVs: this stage's values (MLA: the latent columns of sK); al:
// alpha of rows 2t, 2t + 1 of each row tile.
template <int NT, int MT>
__device__ __forceinline__ void tile_pv(const Block &k, const Warp &w, const bf16 *sVs, const float2 (&al)[NT],
                                        float (&acc)[MT][NT][4])
{
    const int ldv = k.ldv, ldp = k.ldp;
    rescale_rows<NT, MT>(acc, al);
#pragma unroll 1
    for (int kk = 0; kk < w.ktiles; kk++) {
        uint32_t bp[NT][2];
        load_p_frags<NT>(w, ldp, kk, bp);
#pragma unroll
        for (int i = 0; i < MT; i++) {
            const int j = k.warp + NWARPS * i;
            if (j < k.dv_tiles) {
                uint32_t a[4];
                vp_ldmatrix_x4_trans(a, sVs + w.v_frag + kk * 16 * ldv + j * 16);
#pragma unroll
                for (int n = 0; n < NT; n++)
                    vp_mma_16816(acc[i][n], a, bp[n][0], bp[n][1]);
            }
        }
    }
}

// One row of `cols` fp32 values out by one warp (lane: this thread's), as bf16 scaled by inv_l or as fp32:
// 16-byte accesses where vec allows them, unrolled (one at a time the epilogue took ~4,000 cycles). Every
// split kernel's epilogue stores its rows with these.
__device__ __forceinline__ void store_row_bf16(bf16 *dst, const float *src, int cols, float inv_l, bool vec, int lane)
{
    if (vec) {
#pragma unroll 2
        for (int c = lane * 8; c < cols; c += 256) {
            const float4 a = *reinterpret_cast<const float4 *>(src + c);
            const float4 b = *reinterpret_cast<const float4 *>(src + c + 4);
            bf16x8 v;
            v.h[0] = __floats2bfloat162_rn(a.x * inv_l, a.y * inv_l);
            v.h[1] = __floats2bfloat162_rn(a.z * inv_l, a.w * inv_l);
            v.h[2] = __floats2bfloat162_rn(b.x * inv_l, b.y * inv_l);
            v.h[3] = __floats2bfloat162_rn(b.z * inv_l, b.w * inv_l);
            *reinterpret_cast<bf16x8 *>(dst + c) = v;
        }
    } else {
#pragma unroll 1
        for (int c = lane; c < cols; c += 32)
            dst[c] = __float2bfloat16(src[c] * inv_l);
    }
}
__device__ __forceinline__ void store_row_f32(float *dst, const float *src, int cols, bool vec, int lane)
{
    if (vec) {
#pragma unroll 4
        for (int c = lane * 4; c < cols; c += 128)
            *reinterpret_cast<float4 *>(dst + c) = *reinterpret_cast<const float4 *>(src + c);
    } else {
#pragma unroll 1
        for (int c = lane; c < cols; c += 32)
            dst[c] = src[c];
    }
}

// ----------------------------------------------------------------------------------- epilogue
// O^T fragments -> sO rows (over the free stages), then whole rows out, coalesced: normalised bf16
// (single split) or fp32 partials and (m, l) for the combine kernel. The softmax owner of row r
// (warp r % 8) holds its (m, l), so it writes that row.
template <int NT, int MT>
__device__ __forceinline__ void write_output(const AttnParams &p, const Block &k, const float (&acc)[MT][NT][4],
                                             const float (&m_run)[NT], const float (&l_run)[NT])
{
    const int ldo = k.ldo, warp = k.warp, lane = k.lane;
#pragma unroll
    for (int i = 0; i < MT; i++) {
        const int j = warp + NWARPS * i;
        if (j < k.dv_tiles) {
#pragma unroll
            for (int n = 0; n < NT; n++) {
                float *o = k.sO + (n * 8 + 2 * k.t) * ldo + j * 16 + k.g; // ldo = 4 mod 8: 32 distinct banks
                o[0] = acc[i][n][0];
                o[ldo] = acc[i][n][1];
                o[8] = acc[i][n][2];
                o[ldo + 8] = acc[i][n][3];
            }
        }
    }
    __syncthreads();
    const bool direct = p.pl.splits == 1;
#pragma unroll
    for (int i = 0; i < NT; i++) {
        const int r = warp + NWARPS * i;
        if (r >= k.nrows)
            break;
        const long long grow = global_row(p, k, r);
        const float *src = k.sO + r * ldo;
        if (direct) {
            store_row_bf16(p.out + grow * p.v_dim + k.dv_col0, src, k.dv_cols, 1.0f / l_run[i],
                           p.vec_out && p.v_dim % 8 == 0, lane);
        } else {
            store_row_f32(p.part_o + ((long long)k.split * p.total_rows + grow) * p.v_dim + k.dv_col0, src, k.dv_cols,
                          p.vec_out && p.v_dim % 4 == 0, lane);
            if (k.dv_chunk == 0 && lane == 0) {
                float *ml = p.part_ml + ((long long)k.split * p.total_rows + grow) * 2;
                ml[0] = m_run[i];
                ml[1] = l_run[i];
            }
        }
    }
}

} // namespace
