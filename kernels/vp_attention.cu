// Decode attention, the first kernel: the partial scores and the softmax go through shared memory
// (vp_attention_tiles.cuh describes the work decomposition, the mma layout and the shared memory; the
// MLA kernel, vp_attention_mla.cu, keeps them in registers and three tiles in flight).
//
// Per tile of TN keys, NWARPS = 8 warps, 4 barriers, every warp busy in the two mma phases:
//   1. S^T: warp w computes key tile w % (TN/16) over its share w / (TN/16) of qk_dim, for all rows,
//      and stores the fp32 partial sums (ksplit = 8 / (TN/16) shares) in sS.
//   2. softmax: warp w owns rows w, w + 8, w + 16, w + 24 (all at once, so their shuffle trees
//      interleave): adds the shares, takes the tile max, updates its running (m, l) in registers,
//      writes P^T (bf16) and alpha = 2^(m_old - m_new).
//   3. O^T = O^T * alpha + V^T P^T: warp w owns value tiles w, w + 8, ... for every row, in registers
//      for the whole split; warps meet only at the epilogue (through shared memory, once).
// Tiles stream through `stages` shared-memory buffers with cp.async; all of them are in flight while
// the block waits for the oldest, so a short split (MLA 8K: two tiles per block) pays one DRAM latency.
#include "vp_attention_tiles.cuh"

namespace {

// 1. S^T partial sums of this warp's key tile over its share of qk_dim (score_frags), into sS.
template <int NT, int MT>
__device__ __forceinline__ void tile_scores(const Block &k, const Warp &w, const bf16 *sKs)
{
    const int lds = k.lds;
    float v[NT][4];
    score_frags<NT, MT>(k, w, sKs, v);
#pragma unroll
    for (int n = 0; n < NT; n++) {
        float *o = w.s_mine + n * 8;
        o[0] = v[n][0];
        o[1] = v[n][1];
        o[8 * lds] = v[n][2];
        o[8 * lds + 1] = v[n][3];
    }
}

// 2. Online softmax of this warp's rows warp + 8 i, all NT at once so that their shuffle trees
// interleave (one lane per key, two keys per lane): adds the shares, takes the tile max, updates the
// running (m, l), writes P^T (bf16) and alpha = 2^(m_old - m_new). A padding row (r >= nrows) gets
// the finite max 0 and probabilities 0 (no inf - inf), and writes nothing. `valid`: real keys of the tile.
template <int NT>
__device__ __forceinline__ void tile_softmax(const AttnParams &p, const Block &k, const Warp &w, int valid,
                                             float (&m_run)[NT], float (&l_run)[NT])
{
    const int tn = k.tn, lds = k.lds, ldp = k.ldp, warp = k.warp, lane = k.lane;
    float s[NT][2], mx[NT], psum[NT], alpha[NT];
#pragma unroll
    for (int i = 0; i < NT; i++) {
        const int r = warp + NWARPS * i;
        mx[i] = r < k.nrows ? -INFINITY : 0.0f;
#pragma unroll
        for (int j = 0; j < 2; j++) {
            const int key = lane + 32 * j;
            // The ksplit >= 2 shares of a key lie tn rows apart in sS. Rows key and tn + key exist for
            // every key < 64 (tn >= 16) and hold finite values, so the first two loads need no guard;
            // keys past the tile are masked below.
            const float *sk = k.sS + key * lds + r;
            float dot = sk[0] + sk[tn * lds];
#pragma unroll 1
            for (int part = 2; part < w.ksplit; part++) // 16- and 32-key tiles only
                if (key < tn)
                    dot += sk[part * tn * lds];
            s[i][j] = key < valid && r < k.nrows ? dot * p.scale_log2 : -INFINITY;
            mx[i] = fmaxf(mx[i], s[i][j]);
        }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
#pragma unroll
        for (int i = 0; i < NT; i++)
            mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], o));
#pragma unroll
    for (int i = 0; i < NT; i++) {
        const int r = warp + NWARPS * i;
        const float m_new = fmaxf(m_run[i], mx[i]); // finite: the tile has a valid key
        alpha[i] = exp2f(m_run[i] - m_new);         // 0 on the first tile (m_run = -inf)
        m_run[i] = m_new;
        psum[i] = 0.0f;
#pragma unroll
        for (int j = 0; j < 2; j++) {
            const int key = lane + 32 * j;
            // p is rounded to bf16 before summing, so numerator (P.V on bf16 P) and denominator agree;
            // padded keys (s = -inf) get 0, and P^T of padded keys must be 0 too.
            const bf16 pb = __float2bfloat16(exp2f(s[i][j] - m_new));
            if (key < tn && r < k.nrows)
                k.sP[key * ldp + r] = pb;
            psum[i] += __bfloat162float(pb);
        }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
#pragma unroll
        for (int i = 0; i < NT; i++)
            psum[i] += __shfl_xor_sync(0xffffffffu, psum[i], o);
#pragma unroll
    for (int i = 0; i < NT; i++) {
        const int r = warp + NWARPS * i;
        l_run[i] = l_run[i] * alpha[i] + psum[i];
        if (lane == 0 && r < k.nrows)
            k.sAlpha[r] = alpha[i];
    }
}

// ---------------------------------------------------------------------------------- main kernel
// grid = (row_chunks * dv_chunks, splits, batch * kv_heads), block = NTHREADS, dynamic smem = pl.smem.
// NT: n8 row tiles (rows_blk = 8 * NT); MT: value tiles of 16 columns per warp (dv_w <= 128 * MT).
template <int NT, int MT>
__global__ void __launch_bounds__(NTHREADS, MT >= 4 ? 1 : 2) attn_decode_kernel(const AttnParams p)
{
    extern __shared__ __align__(16) unsigned char smem[];
    const Block k = block_of(p, smem);
    const int tn = k.tn, stages = k.stages;
    vp_attn_trace_mark(p, 0, vp_globaltimer());
    vp_attn_trace_mark(p, 1, clock64());

    // Pipeline: group s holds tile s (group 0 also Q); all stages are filled up front. At the top of
    // iteration `tile`, stages + tile groups are committed, so waiting until stages - 1 remain means
    // tile `tile` has landed; its stage is refilled (tile + stages) once every warp is done with it.
    load_q(p, k);
    for (int s = 0; s < stages; s++) {
        if (s < k.ntiles)
            load_tile(p, k, s, s);
        vp_cp_async_commit();
    }
    vp_grid_dep_launch_dependents(); // the combine kernel may launch now; it waits for this grid to end
    zero_padding(p, k);
    vp_attn_trace_mark(p, 2, clock64());

    const Warp w = warp_of(p.pl, k);
    float acc[MT][NT][4];       // O^T: value tile warp + 8 i, row tile n; (dim g | g + 8, rows 2t, 2t + 1)
    float m_run[NT], l_run[NT]; // rows warp + 8 i: running max (log2 units) and sum
    zero_tiles(acc);
#pragma unroll
    for (int i = 0; i < NT; i++) {
        m_run[i] = -INFINITY;
        l_run[i] = 0.0f;
    }

#pragma unroll 1
    for (int tile = 0, stage = 0; tile < k.ntiles; tile++, stage = stage + 1 == stages ? 0 : stage + 1) {
        vp_cp_async_wait_dyn(stages - 1);
        __syncthreads(); // the tile (and, first time, Q and the zeroed padding) is visible to all
        if (tile == 0)
            vp_attn_trace_mark(p, 3, clock64());
        const bf16 *sKs = k.sK + stage * tn * k.ldk;
        const bf16 *sVs = p.v_in_k ? sKs + k.dv_col0 : k.sV + stage * tn * k.ldv;
        const int valid = min(tn, k.key_hi - (k.key_lo + tile * tn));
        tile_scores<NT, MT>(k, w, sKs);
        __syncthreads();
        if (tile == 0)
            vp_attn_trace_mark(p, 4, clock64());
        tile_softmax<NT>(p, k, w, valid, m_run, l_run);
        __syncthreads();
        if (tile == 0)
            vp_attn_trace_mark(p, 5, clock64());
        float2 al[NT]; // alpha of rows 2t, 2t + 1 of each row tile (tile_softmax wrote them)
#pragma unroll
        for (int n = 0; n < NT; n++)
            al[n] = *reinterpret_cast<const float2 *>(k.sAlpha + n * 8 + 2 * k.t);
        tile_pv<NT, MT>(k, w, sVs, al, acc);
        __syncthreads(); // every warp is done with this stage, sS, sP and sAlpha
        if (tile < 7)
            vp_attn_trace_mark(p, 6 + tile, clock64());
        if (tile + stages < k.ntiles)
            load_tile(p, k, tile + stages, stage);
        vp_cp_async_commit(); // possibly empty: keeps the group count in step
    }
    vp_cp_async_wait<0>(); // only empty groups can remain; nothing may land on sO
    write_output<NT, MT>(p, k, acc, m_run, l_run);
    vp_attn_trace_mark(p, 13, clock64());
    vp_attn_trace_mark(p, 14, vp_globaltimer());
    vp_attn_trace_mark(p, 15, (unsigned long long)k.ntiles);
}

// ----------------------------------------------------------------------------------- host side

template <int NT>
AttnKernel kernel_mt(int mt)
{
    return mt == 1 ? attn_decode_kernel<NT, 1> : mt == 2 ? attn_decode_kernel<NT, 2> : attn_decode_kernel<NT, 4>;
}

AttnKernel kernel_for(const AttnPlan &pl)
{
    if (pl.kernel == 2)
        return vp_attention_mla_kernel(pl.nt);
    const int nt = pl.nt, mt = pl.mt;
    return nt == 1 ? kernel_mt<1>(mt) : nt == 2 ? kernel_mt<2>(mt) : nt == 3 ? kernel_mt<3>(mt) : kernel_mt<4>(mt);
}

// The plan's kernel as the runtime's attribute and occupancy calls take it.
const void *kernel_func(const AttnPlan &pl)
{
    if (pl.kernel == 3)
        return reinterpret_cast<const void *>(vp_attention_wgmma_kernel(pl.nt, pl.wgs));
    return reinterpret_cast<const void *>(kernel_for(pl));
}

} // namespace

int vp_attention_threads(const AttnPlan *pl)
{
    return pl->kernel == 3 ? 128 * pl->wgs : NTHREADS;
}

// The opt-in only ever grows: a kernel keeps the largest size any shape asked for (setting a smaller
// one would break a shape planned earlier). Occupancy is cached per (device, kernel, size).
int vp_attention_kernel_setup(int dev, const AttnPlan *pl, int *blocks)
{
    // [device][kernel - 1][nt - 1][variant: mt = 1, 2, 4 for kernels 1-2; wgs - 1 for kernel 3]
    static size_t opted[64][3][VP_ATTN_MAX_NT][3];
    static struct {
        int dev, kernel, nt, variant, blocks;
        size_t smem;
    } occ[256];
    static int nocc;
    const void *k = kernel_func(*pl);
    const int variant = pl->kernel == 3 ? pl->wgs - 1 : pl->mt == 1 ? 0 : pl->mt == 2 ? 1 : 2;
    const size_t smem = pl->smem;
    size_t *done = dev < 64 ? &opted[dev][pl->kernel - 1][pl->nt - 1][variant] : nullptr;
    if (smem > 48 * 1024 && (!done || *done < smem)) {
        VP_TRY(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        if (done)
            *done = smem;
    }
    for (int i = 0; i < nocc; i++) {
        if (occ[i].dev == dev && occ[i].kernel == pl->kernel && occ[i].nt == pl->nt && occ[i].variant == variant &&
            occ[i].smem == smem) {
            *blocks = occ[i].blocks;
            return 0;
        }
    }
    int n = 0;
    VP_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, k, vp_attention_threads(pl), smem));
    *blocks = n > 0 ? n : 1;
    if (nocc < 256)
        occ[nocc++] = {dev, pl->kernel, pl->nt, variant, *blocks, smem};
    return 0;
}

int vp_attention_launch(const AttnParams &p, int batch, cudaStream_t stream)
{
    if (p.pl.kernel == 3)
        return vp_attention_wgmma_launch(p, batch, stream);
    const dim3 grid(p.pl.row_chunks * p.pl.dv_chunks, p.pl.splits, batch * p.kv_heads);
    kernel_for(p.pl)<<<grid, NTHREADS, p.pl.smem, stream>>>(p);
    VP_TRY(cudaGetLastError());
    return 0;
}
